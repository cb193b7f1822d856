"""`oriflamme play`: a game against bots at once, with a server inside the program.

The program starts a server in this process (`oriflamme.server.app.serve`
on 127.0.0.1, a free port, its data in the user's state directory), seats
the player at a new table with N server bots, and starts the game; the
terminal shows it. Everything goes through the protocol over a real socket,
as with a server elsewhere: the player's seed, hand and face-down cards are
kept by this client alone (in the state directory, mode 0600), and the
bots hold their own.

The server's data directory outlives the program: quit in the middle of a
game and run `oriflamme play` again, and the same table comes back where
it was (the session token is kept for the server named ``play``).

`drive` is the part any game screen shares (the commands of the keys, the
record saved at the end): `oriflamme join` uses it too.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import trio

from oriflamme.protocol import messages as m
from oriflamme.protocol.record import RecordError
from oriflamme.protocol.verify import verify_record_bytes

from ..bots import Behaviour
from ..secret_store import SecretStore, default_state_dir, write_private
from ..session import Backoff, ConnectionLost, RequestRefused, Session, SessionEnded, tcp
from .app import Bridge
from .controller import Answer, Command, Download, PlayAgain, Quit, Request, Say

log = logging.getLogger("oriflamme.client.play")

LEVELS = {"easy": "random", "normal": "heuristic"}
SERVER_KEY = "play"


@dataclass
class PlayOptions:
    bots: int = 2
    name: str = "You"
    level: str = "normal"
    turn_timer: int | None = None
    state_dir: Path = field(default_factory=default_state_dir)


def records_dir(state_dir: Path) -> Path:
    return state_dir / "records"


async def play_program(bridge: Bridge, options: PlayOptions) -> None:
    """The trio side of `oriflamme play` (see the module docstring)."""
    from oriflamme.server.app import ServeOptions, serve

    commands = bridge.enter_trio()
    stop = trio.Event()
    server_options = ServeOptions(
        host="127.0.0.1",
        port=0,
        data_dir=options.state_dir / "play-server",
        stop=stop,
        shutdown_grace=2.0,
    )
    async with trio.open_nursery() as nursery:
        port = await nursery.start(serve, server_options)
        session = Session(
            tcp("127.0.0.1", port),
            options.name,
            server=SERVER_KEY,
            store=SecretStore(options.state_dir),
            behaviour=Behaviour(None),
            backoff=Backoff(first=0.1, most=2.0),
        )
        bridge.controller.state = session.state
        session.on_change = lambda: bridge.changed(banner=banner(session))
        bridge.controller.game.title = "Oriflamme · you against bots"
        await nursery.start(session.run)
        await seat_at_table(session, options)
        await drive(session, bridge, commands, records_dir(options.state_dir), start=True)
        session.close()
        stop.set()


def banner(session: Session) -> str:
    if session.ended is not None:
        return f"The session is over: {session.ended}. Press q to quit."
    if not session.connected:
        return "Connection to the server lost: reconnecting…"
    return ""


async def seat_at_table(session: Session, options: PlayOptions) -> None:
    """Sit at a table of 1 + `options.bots` seats with server bots, and start
    the game; a table kept from the last run is taken back as it is."""
    state = session.state
    room = state.room
    players = options.bots + 1
    if room is not None and (room.state == "playing" or len(room.seats) == players):
        if room.state != "playing":
            await _start(session)
        return
    if room is not None:
        await session.request(m.LeaveRoom())
    settings = m.RoomSettings.for_players(
        players, turn_timer=options.turn_timer, first_player="random"
    )
    await session.request(
        m.CreateRoom(
            settings=settings,
            name=f"{options.name}'s table"[:40],
        )
    )
    strategy = LEVELS.get(options.level, options.level)
    for _ in range(options.bots):
        await session.request(m.AddBot(strategy=strategy))
    await _start(session)


async def _start(session: Session) -> None:
    await session.request(m.Ready(ready=True))
    room = session.state.room
    if room is not None and room.host == session.state.player:
        # the bots connect right after they are seated: wait for them
        await session.wait_until(
            lambda: (
                session.state.room is not None
                and all(s.name is not None and s.ready for s in session.state.room.seats)
            ),
            timeout=30,
        )
        await session.request(m.StartGame())


async def drive(
    session: Session,
    bridge: Bridge,
    commands: trio.MemoryReceiveChannel[Command],
    records: Path,
    *,
    start: bool = False,
) -> None:
    """Carry out the keys' commands until Quit; save each game's record at its
    end. `start`: [a] after a game also starts the next one (we are the host
    of a table of bots)."""
    screens = bridge.controller
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_keep_records, session, bridge, records)
        async for command in commands:
            if isinstance(command, Quit):
                nursery.cancel_scope.cancel()
                return
            try:
                await _carry_out(session, bridge, command, records, start)
            except RequestRefused as exc:
                if isinstance(command, Answer):
                    screens.game.refused(command.turn, exc.error.message)
                elif isinstance(command, Request):
                    screens.answered(command.message, exc.error)
                else:
                    screens.game.status = screens.lobby.status = f"Refused: {exc.error.message}"
            except (ConnectionLost, trio.TooSlowError):
                if isinstance(command, Answer):
                    screens.game.refused(command.turn, "the connection dropped: choose again")
                else:
                    screens.game.status = screens.lobby.status = "No answer: try again"
            except SessionEnded as exc:
                screens.banner = str(exc)
            bridge.changed()


async def _carry_out(
    session: Session, bridge: Bridge, command: Command, records: Path, start: bool
) -> None:
    if isinstance(command, Answer):
        await _answer(session, bridge, command)
    elif isinstance(command, Say):
        await session.request(m.Chat(text=command.text))
    elif isinstance(command, PlayAgain):
        if start:
            await _start(session)
        else:
            await session.request(m.Ready(ready=True))
    elif isinstance(command, Request):
        answer = await session.request(command.message)
        bridge.controller.answered(command.message, answer)
    elif isinstance(command, Download):
        lobby = bridge.controller.lobby
        lobby.status = await _download(session, command.record_id, records)


async def _fetch_record(session: Session, record_id: str, records: Path) -> tuple[Path, bool, str]:
    """Download record `record_id`, check it, keep it: where, whether it
    verifies, and why not. Raises what the request raises, `RecordError`
    for an unreadable record, `OSError` when it cannot be written."""
    answer = await session.request(m.GetRecord(record_id=record_id), timeout=30)
    assert isinstance(answer, m.RecordData)
    verdict = verify_record_bytes(answer.data)
    path = records / f"{record_id}.oriflamme"
    await trio.to_thread.run_sync(write_private, path, answer.data)
    return path, verdict.ok, "; ".join(verdict.reasons())


async def _download(session: Session, record_id: str, records: Path) -> str:
    """`_fetch_record`, said in words for the status line."""
    try:
        path, ok, why = await _fetch_record(session, record_id, records)
    except RecordError as exc:
        return f"The server sent a record that cannot be read: {exc}"
    except OSError as exc:
        return f"Cannot save the record: {exc.strerror}"
    checked = "it verifies" if ok else f"it does NOT verify: {why}"
    return f"Saved {path.name} in {path.parent.name}/: {checked}"


async def _answer(session: Session, bridge: Bridge, command: Answer) -> None:
    game = session.state.game
    if game is None or game.decision is None or game.decision.turn != command.turn:
        bridge.controller.game.refused(command.turn, "too late: the game moved on")
        return
    message = game.answer(command.action)
    await session.request(message)


async def _keep_records(session: Session, bridge: Bridge, records: Path) -> None:
    """At the end of each game: download its record, check it, keep it."""
    saved: set[str] = set()
    while True:
        await session.wait_until(
            lambda: (
                session.state.game is not None
                and session.state.game.end is not None
                and session.state.game.end.record_id not in saved
            )
        )
        game = session.state.game
        assert game is not None and game.end is not None
        record_id = game.end.record_id
        saved.add(record_id)
        controller = bridge.controller.game
        try:
            path, ok, why = await _fetch_record(session, record_id, records)
        except (RequestRefused, ConnectionLost, trio.TooSlowError, RecordError, OSError) as exc:
            controller.saved = f"The record could not be saved: {exc}"
        else:
            controller.saved = f"Record: {path.name}"
            controller.log.note(f"The game's record is saved in {path}")
            if not ok:
                controller.verified = f"The record does NOT verify: {why}"[:200]
        bridge.changed()

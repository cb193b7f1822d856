"""The network commands of `oriflamme`: a bot at a table, the room list, the server.

Each is a trio function the command line runs; tests call them too.
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import trio

from oriflamme.protocol import messages as m
from oriflamme.protocol.record import RecordError, decode_record
from oriflamme.protocol.verify import GameVerdict, verify_record

from .bots import Behaviour, Bot, Think
from .secret_store import SecretStore, write_private
from .session import Backoff, RequestRefused, Session, SessionError, open_session
from .state import ClientState
from .tls import Trust, connector

log = logging.getLogger("oriflamme.client")

DEFAULT_PORT = 7531
# A bot gives up if it cannot reach the server at all in about 15 seconds of
# tries (a wrong address, more likely than a restart); once in, it keeps
# trying for ever.
FIRST_ATTEMPTS = 6


def parse_address(text: str, default_port: int = DEFAULT_PORT) -> tuple[str, int]:
    """``host``, ``host:port`` or ``[v6 address]:port`` as (host, port).

    >>> parse_address("example.org"), parse_address("10.0.0.2:9000"), parse_address("[::1]:7")
    (('example.org', 7531), ('10.0.0.2', 9000), ('::1', 7))
    """
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    elif text.count(":") == 1:
        host, _, port = text.partition(":")
    else:
        host, port = text, ""
    if not host:
        raise ValueError(f"no host in {text!r}")
    if not port:
        return host, default_port
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{port!r} is not a port number (1-65535)")
    return host, int(port)


async def list_rooms(
    host: str, port: int, *, timeout: float = 10.0, trust: Trust | None = None
) -> m.RoomList:
    """The server's room list."""
    connect = connector(host, port, trust)
    with trio.fail_after(timeout):
        async with open_session(connect, "rooms", backoff=Backoff(attempts=2)) as session:
            answer = await session.request(m.ListRooms())
    assert isinstance(answer, m.RoomList)
    return answer


async def download_record(
    host: str, port: int, record_id: str, *, timeout: float = 30.0, trust: Trust | None = None
) -> bytes:
    """The record of game `record_id`, as the server keeps it."""
    connect = connector(host, port, trust)
    with trio.fail_after(timeout):
        async with open_session(connect, "records", backoff=Backoff(attempts=2)) as session:
            answer = await session.request(m.GetRecord(record_id=record_id))
    assert isinstance(answer, m.RecordData)
    return answer.data


def format_rooms(rooms: m.RoomList) -> str:
    """The room list as a table."""
    if not rooms.rooms:
        return "no rooms"
    lines = [
        f"{'room':>5}  {'name':<24} {'seats':>5}  {'variant':<10} {'timer':>6}  {'state':<9} host"
    ]
    for r in rooms.rooms:
        s = r.settings
        timer = "-" if s.turn_timer is None else f"{s.turn_timer}s"
        lines.append(
            f"{r.room:>5}  {r.name[:24]:<24} {r.seated}/{s.players:<3}  {s.variant:<10}"
            f" {timer:>6}  {r.state:<9} {r.host}"
        )
    return "\n".join(lines)


async def run_bot(
    host: str,
    port: int,
    *,
    room: str,
    strategy: str = "heuristic",
    think: Think | None = None,
    games: int = 1,
    name: str | None = None,
    players: int = 3,
    turn_timer: int | None = None,
    state_dir: Path | None = None,
    seed: int | None = None,
    trust: Trust | None = None,
    on_game: Callable[[GameResult], object] | None = None,
) -> int:
    """A bot that joins the room named `room` (or creates it, as its host),
    plays `games` games there and returns how many it finished. As host it
    starts a game once every seat is taken and everyone is ready. After each
    game it fetches the game's record and verifies it, and gives `on_game`
    the result."""
    store = SecretStore(state_dir) if state_dir is not None else None
    think = think or Think()
    bot = Bot(strategy, rng=random.Random(seed), seconds=think.seconds, iterations=think.iterations)
    session = Session(
        connector(host, port, trust),
        name or f"{strategy} bot",
        server=f"{host}:{port}",
        store=store,
        behaviour=Behaviour(bot),
        backoff=Backoff(first_attempts=FIRST_ATTEMPTS),
    )
    tally = _Tally(state_dir, f"{host}:{port}", room)
    async with trio.open_nursery() as nursery:
        await nursery.start(session.run)
        await _sit(session, room, players, turn_timer)
        # A bot stopped and started again goes on with the games it had to play.
        played = tally.played()
        game = session.state.game
        if game is not None and game.end is None:
            # Back in a game this bot was playing when it stopped: finish it.
            log.info("%s: back in the game, playing on", session.name)
            await session.wait_until(
                lambda: session.state.game is not None and session.state.game.end is not None
            )
            played = tally.note(played + 1)
            log.info("%s: %d game(s) played", session.name, played)
            await _report(session, played, on_game)
        while played < games:
            # The game before this one: the next may start as soon as we are ready.
            previous = None if session.state.game is None else session.state.game.game_id
            await session.request(m.Ready(ready=True))
            await _play_one(session, previous)
            played = tally.note(played + 1)
            log.info("%s: %d game(s) played", session.name, played)
            await _report(session, played, on_game)
        tally.done()
        session.close()
    return played


@dataclass(frozen=True, slots=True)
class GameResult:
    """A game a bot played, as `oriflamme bot` reports it: the `number`-th of
    its games, its seat, the seats' names, scores and winners, the record's
    id, and the record's verdict (`verify_record`, what `oriflamme verify`
    says of it), or why it could not be checked (`unchecked`); then the
    server's own verdicts (`game_end.verification`) are all there is."""

    number: int
    seat: int | None
    names: tuple[str, ...]
    scores: tuple[int, ...]
    winners: tuple[int, ...]
    record_id: str
    verdict: GameVerdict | None
    unchecked: str | None
    server_ok: tuple[bool, ...]


async def game_result(session: Session, number: int) -> GameResult | None:
    """The result of the game `session` has just seen end (None if none has):
    its record fetched from the server (`get_record`) and verified."""
    game = session.state.game
    end = None if game is None else game.end
    if game is None or end is None:
        return None
    verdict = None
    unchecked = None
    names: tuple[str, ...] = ()
    try:
        answer = await session.request(m.GetRecord(record_id=end.record_id))
        assert isinstance(answer, m.RecordData)
        record = decode_record(answer.data)
        if record.game_id != game.game_id:
            raise RecordError("it is the record of another game")
        verdict = verify_record(record)
        names = tuple(seat.name for seat in record.seats)
    except RequestRefused as exc:
        unchecked = f"the server did not send the record: {exc.error.message}"
    except (SessionError, trio.TooSlowError) as exc:
        unchecked = f"the record did not come: {exc or 'no answer in time'}"
    except RecordError as exc:
        unchecked = f"the record is unreadable: {exc}"
    if not names:
        room = session.state.room
        seats = {} if room is None else {s.seat: s.name for s in room.seats}
        names = tuple(seats.get(i) or f"seat {i}" for i in range(len(end.scores)))
    return GameResult(
        number=number,
        seat=game.seat,
        names=names,
        scores=end.scores,
        winners=end.winners,
        record_id=end.record_id,
        verdict=verdict,
        unchecked=unchecked,
        server_ok=tuple(v.ok for v in end.verification),
    )


def format_result(result: GameResult) -> str:
    """A game's result as `oriflamme bot` prints it.

    >>> from oriflamme.protocol.verify import GameVerdict
    >>> print(format_result(GameResult(2, 1, ("ann", "robot"), (7, 12), (1,), "ab" * 16,
    ...     GameVerdict((), ()), None, (True, True))))
    game 2: record abababababababababababababababab
      seat 0  ann     7 points
      seat 1  robot  12 points  winner  (this bot)
      verified: VALID (every seat verified, the replay reproduces the record)
    """
    names = [_printable(n) for n in result.names]
    width = max(len(n) for n in names)
    points = max(len(str(s)) for s in result.scores)
    lines = [f"game {result.number}: record {result.record_id}"]
    for seat, (name, score) in enumerate(zip(names, result.scores, strict=True)):
        notes = []
        if seat in result.winners:
            notes.append("winner" if len(result.winners) == 1 else "shared win")
        if seat == result.seat:
            notes.append("(this bot)")
        lines.append(
            f"  seat {seat}  {name:<{width}}  {score:>{points}} points  {'  '.join(notes)}".rstrip()
        )
    verdict = result.verdict
    if verdict is None:
        failed = [str(seat) for seat, ok in enumerate(result.server_ok) if not ok]
        server = f"seat(s) {', '.join(failed)} failed" if failed else "every seat ok"
        lines.append(f"  verified: not checked ({result.unchecked}); the server says {server}")
    elif verdict.ok:
        lines.append("  verified: VALID (every seat verified, the replay reproduces the record)")
    else:
        reasons = "; ".join(_printable(r) for r in verdict.reasons())
        lines.append(f"  verified: NOT VALID: {reasons}")
    return "\n".join(lines)


def _printable(text: str) -> str:
    """Names and reasons come from others: never let them drive the terminal."""
    return "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in text)


async def _report(
    session: Session, number: int, on_game: Callable[[GameResult], object] | None
) -> None:
    if on_game is None:
        return
    result = await game_result(session, number)
    if result is not None:
        on_game(result)


class _Tally:
    """How many games a bot with a state directory has played of those it
    was asked for, kept there until it has played them all: a bot killed and
    started again with the same command plays only what is left."""

    def __init__(self, state_dir: Path | None, server: str, room: str) -> None:
        self.path = None if state_dir is None else state_dir / "bot-games.json"
        self.key = {"server": server, "room": room}

    def played(self) -> int:
        if self.path is None:
            return 0
        try:
            kept = json.loads(self.path.read_text())
            if {k: kept[k] for k in self.key} == self.key and type(kept["played"]) is int:
                return max(0, kept["played"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
        return 0

    def note(self, played: int) -> int:
        if self.path is not None:
            write_private(self.path, json.dumps({**self.key, "played": played}).encode())
        return played

    def done(self) -> None:
        if self.path is not None:
            self.path.unlink(missing_ok=True)


async def _sit(session: Session, room: str, players: int, turn_timer: int | None) -> None:
    listed = await session.request(m.ListRooms())
    assert isinstance(listed, m.RoomList)
    # The answer comes after the snapshot of a resumed session: a bot that
    # was stopped while seated (its token kept in its state directory) is
    # back in its room, and stays there.
    seated = session.state.room
    if seated is not None:
        log.info("%s: back in room %d (%s)", session.name, seated.room, seated.name)
        return
    for summary in listed.rooms:
        if (
            summary.name == room
            and summary.state != "playing"
            and summary.seated < summary.settings.players
        ):
            try:
                await session.request(m.JoinRoom(room=summary.room))
                return
            except RequestRefused as exc:
                log.info("cannot join room %d: %s", summary.room, exc)
    settings = m.RoomSettings.for_players(players, turn_timer=turn_timer)
    await session.request(m.CreateRoom(settings=settings, name=room))
    # Bots started together may each have made a room of that name: the
    # oldest one (the lowest id) is the table, and the others move to it.
    mine = session.state.room
    assert mine is not None
    listed = await session.request(m.ListRooms())
    assert isinstance(listed, m.RoomList)
    older = [
        r.room
        for r in listed.rooms
        if r.name == room
        and r.room < mine.room
        and r.state == "waiting"
        and r.seated < r.settings.players
    ]
    if older:
        await session.request(m.LeaveRoom())
        await session.request(m.JoinRoom(room=min(older)))


def _moved(started: Callable[[], bool], state: ClientState, seen: m.RoomState | None) -> bool:
    """A game started, or the room is not as it was when last looked at."""
    return started() or state.room is not seen


async def _play_one(session: Session, previous: bytes | None) -> None:
    """Wait for a game after `previous` to start (starting it as host when all
    are ready) and end."""
    state = session.state

    def started() -> bool:
        return state.game is not None and state.game.game_id != previous

    while not started():
        table = state.room
        if (
            table is not None
            and table.host == state.player
            and all(s.name is not None and s.ready for s in table.seats)
            and table.state in ("waiting", "finished")
        ):
            try:
                await session.request(m.StartGame())
            except RequestRefused as exc:
                log.info("cannot start yet: %s", exc)
        await session.wait_until(partial(_moved, started, state, table))
    await session.wait_until(lambda: state.game is not None and state.game.end is not None)

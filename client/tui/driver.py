"""The trio side every game screen's program shares (`join`, and `oriflamme.launcher.play`).

`drive` carries out the commands the keys give (`controller.Command`): an
answer to the pending decision, a chat line, a request of the lobby, a
record to download, play again, quit; a refusal goes back to the screen in
the server's words. Beside it, at the end of every game, the game's record
is downloaded, checked with `oriflamme verify`'s code, and kept in the
state directory's `records/`; once it verifies, the seat's secrets of that
game are deleted from the state directory's `games/`.
"""

from __future__ import annotations

from pathlib import Path

import trio

from oriflamme.protocol import messages as m
from oriflamme.protocol.errors import BAD_OPENING, NO_SUCH_RECORD, STALE_TURN
from oriflamme.protocol.record import RecordError
from oriflamme.protocol.verify import verify_record_bytes

from ..i18n import _
from ..secret_store import write_private
from ..session import ConnectionLost, RequestRefused, Session, SessionEnded
from ..state import GameMirror
from .app import Bridge
from .controller import (
    Answer,
    Command,
    Download,
    PlayAgain,
    Quit,
    Request,
    Resign,
    Say,
    refusal,
    refused_text,
)


def records_dir(state_dir: Path) -> Path:
    return state_dir / "records"


def banner(session: Session) -> str:
    if session.ended is not None:
        return _("The session is over: {why}. Press q to quit.").format(why=session.ended)
    if not session.connected:
        return _("Connection to the server lost: reconnecting…")
    if session.key_change is not None:
        return session.key_change.short()
    return ""


async def ready_and_start(session: Session) -> None:
    """Say we are ready; as the host, start the game once every seat is
    taken and ready (server bots are ready as soon as they connect)."""
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
        nursery.start_soon(_keep_records_away, session, bridge, records)
        async for command in commands:
            if isinstance(command, Quit):
                nursery.cancel_scope.cancel()
                return
            try:
                if isinstance(command, Resign):
                    if await _resign(session, bridge, command) and not screens.with_lobby:
                        nursery.cancel_scope.cancel()  # `play`: the program ends, saying so
                        return
                    bridge.changed()
                    continue
                await _carry_out(session, bridge, command, records, start)
            except RequestRefused as exc:
                if isinstance(command, Answer):
                    said = refusal(exc.error.code, exc.error.message)
                    screens.game.refused(command.turn, said)
                elif isinstance(command, Request):
                    screens.answered(command.message, exc.error)
                else:
                    said = refused_text(exc.error.code, exc.error.message)
                    screens.game.status = screens.lobby.status = said
            except (ConnectionLost, trio.TooSlowError):
                if isinstance(command, Answer):
                    screens.game.refused(command.turn, _("the connection dropped: choose again"))
                else:
                    screens.game.status = screens.lobby.status = _("No answer: try again")
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
            await ready_and_start(session)
        else:
            await session.request(m.Ready(ready=True))
    elif isinstance(command, Request):
        answer = await session.request(command.message)
        bridge.controller.answered(command.message, answer)
    elif isinstance(command, Download):
        lobby = bridge.controller.lobby
        lobby.status = await _download(session, command.record_id, records)


async def _resign(session: Session, bridge: Bridge, command: Resign) -> bool:
    """Leave our game for good (`hand_over` to a bot, or `leave_room`); True
    once we have. Its secrets are then forgotten: the game is not ours to
    take back any more. Raises what the request raises, but a refusal."""
    screens = bridge.controller
    game = session.state.game
    if game is None or game.seat is None or game.end is not None:
        screens.game.status = _("No game of yours to resign from")
        return False
    game_id, seat = game.game_id, game.seat
    try:
        message = game.hand_over() if command.bot else m.LeaveRoom()
    except ValueError:
        screens.game.status = _("The cards are not dealt yet: no bot can play them")
        return False
    try:
        await _dated_request(session, message)
    except RequestRefused as exc:
        if exc.error.code != BAD_OPENING:  # (with bad_opening we are out all the same)
            screens.game.status = refused_text(exc.error.code, exc.error.message)
            return False
        said = _("Your secrets did not check out: your seat forfeits, and the server plays it.")
        screens.game.resigned = said
    else:
        said = screens.game.resigned_from(command.bot)
    if session.store is not None:
        await trio.to_thread.run_sync(session.store.forget, game_id, seat)
    screens.lobby.status = said
    return True


async def _dated_request(session: Session, message: m.Message, tries: int = 3) -> None:
    """`session.request(message)`; a hand-over refused as `stale_turn` (play
    moved on while it was on its way: a player with a key dates it with the
    pending turn) is sent again, dated anew, a few times."""
    for attempt in range(tries):
        try:
            await session.request(message)
            return
        except RequestRefused as exc:
            if exc.error.code != STALE_TURN or attempt == tries - 1:
                raise


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
        return _("The server sent a record that cannot be read: {why}").format(why=exc)
    except OSError as exc:
        return _("Cannot save the record: {why}").format(why=exc.strerror)
    if ok:
        said = _("Saved {file} in {folder}/: it verifies")
    else:
        said = _("Saved {file} in {folder}/: it does NOT verify: {why}")
    return said.format(file=path.name, folder=path.parent.name, why=why)


async def _answer(session: Session, bridge: Bridge, command: Answer) -> None:
    game = session.state.game
    if game is None or game.decision is None or game.decision.turn != command.turn:
        bridge.controller.game.refused(command.turn, _("too late: the game moved on"))
        return
    message = game.answer(command.action)
    await session.request(message)


async def _keep_records_away(session: Session, bridge: Bridge, records: Path) -> None:
    """The games we stepped out of that ended while we were out (`game_list`
    no longer lists them: `ClientState.ended_away`): their records are saved
    and checked as at the end of a game, and the secrets of one that
    verifies, or was cancelled before it began (no record), are let go."""
    ended = session.state.ended_away
    while True:
        await session.wait_until(lambda: bool(ended))
        game = ended.pop(0)
        try:
            await _keep_record(session, game, game.game_id.hex(), records)
        except RequestRefused as exc:
            if exc.error.code == NO_SUCH_RECORD:  # (cancelled before it began)
                await session.forget_secrets(game)
        except (ConnectionLost, trio.TooSlowError, RecordError, OSError):
            pass  # (its secrets kept: looked at again by no one, but not lost)
        bridge.changed()


async def _keep_record(
    session: Session, game: GameMirror, record_id: str, records: Path
) -> tuple[Path, bool, str]:
    """`_fetch_record`, and the seat's secrets of `game` deleted if its record
    verifies (nothing is left to open or check); kept otherwise (what our
    seat really held, should anyone ask)."""
    path, ok, why = await _fetch_record(session, record_id, records)
    if ok:
        await session.forget_secrets(game)
    return path, ok, why


async def _keep_records(session: Session, bridge: Bridge, records: Path) -> None:
    """At the end of each game: download its record, check it, keep it; once
    it verifies, delete our seat's secrets of that game (kept otherwise)."""
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
            path, ok, why = await _keep_record(session, game, record_id, records)
        except (RequestRefused, ConnectionLost, trio.TooSlowError, RecordError, OSError) as exc:
            controller.saved = _("The record could not be saved: {why}").format(why=exc)
        else:
            controller.saved = _("Record: {file}").format(file=path.name)
            controller.log.note(_("The game's record is saved in {path}").format(path=path))
            if not ok:
                controller.verified = _("The record does NOT verify: {why}").format(why=why)[:200]
        bridge.changed()

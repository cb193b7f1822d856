"""The network commands of `oriflamme`: a bot at a table, the room list, the server.

Each is a trio function the command line runs; tests call them too.
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import trio
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from oriflamme.protocol import messages as m
from oriflamme.protocol.identity import fingerprint
from oriflamme.protocol.record import RecordError, decode_record
from oriflamme.protocol.verify import GameVerdict, verify_record

from .bots import Behaviour, Bot, Think
from .i18n import _
from .secret_store import SecretStore, write_private
from .session import Backoff, RequestRefused, Session, SessionError, open_session
from .state import ClientState, GameMirror
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
        host, __, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    elif text.count(":") == 1:
        host, __, port = text.partition(":")
    else:
        host, port = text, ""
    if not host:
        raise ValueError(_("no host in {address}").format(address=repr(text)))
    if not port:
        return host, default_port
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(_("{port} is not a port number (1-65535)").format(port=repr(port)))
    return host, int(port)


async def _asked(
    host: str, port: int, request: m.Message, name: str, timeout: float, trust: Trust | None
) -> m.Message:
    """The answer to one `request`, from a session of its own named `name`."""
    connect = connector(host, port, trust)
    with trio.fail_after(timeout):
        async with open_session(connect, name, backoff=Backoff(attempts=2)) as session:
            return await session.request(request)


async def list_rooms(
    host: str, port: int, *, timeout: float = 10.0, trust: Trust | None = None
) -> m.RoomList:
    """The server's room list."""
    answer = await _asked(host, port, m.ListRooms(), "rooms", timeout, trust)
    assert isinstance(answer, m.RoomList)
    return answer


async def leaderboard(
    host: str, port: int, *, timeout: float = 10.0, trust: Trust | None = None
) -> m.Ratings:
    """The server's highest rated players."""
    answer = await _asked(host, port, m.Leaderboard(), "ratings", timeout, trust)
    assert isinstance(answer, m.Ratings)
    return answer


def format_ratings(ratings: m.Ratings) -> str:
    """The leaderboard as a table: rank, rating (to a tenth), games, name, key."""
    if not ratings.players:
        return "no rated players yet (a game is rated when players with keys play it out)"
    lines = [f"{'#':>3}  {'rating':>7}  {'games':>5}  {'name':<32}  key"]
    for rank, p in enumerate(ratings.players, 1):
        lines.append(
            f"{rank:>3}  {p.rating / 100:>7.1f}  {p.games:>5}  {p.name[:32]:<32}  {fingerprint(p.key)}"
        )
    return "\n".join(lines)


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
    key: Ed25519PrivateKey | None = None,
) -> int:
    """A bot that joins the room named `room` (or creates it, as its host),
    plays `games` games there and returns how many it finished. As host it
    starts a game once every seat is taken and everyone is ready. After each
    game it fetches the game's record and verifies it, and gives `on_game`
    the result; a record that verifies has the game's secrets deleted from
    `state_dir`.

    With a `state_dir`, a bot stopped and started again goes on where it
    was (`_Tally`): back in a game, it plays it on; back to a game that
    ended while it was away, it counts it (once: by its id) and reports it
    like any other; then it plays the games it has left."""
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
        key=key,  # (None: it plays without one)
    )
    tally = _Tally(state_dir, f"{host}:{port}", room)
    async with trio.open_nursery() as nursery:
        await nursery.start(session.run)
        await _sit(session, room, players, turn_timer)
        tally.begin(session.state.game)
        game = session.state.game
        if game is not None and game.end is None:
            # Back in a game this bot was playing when it stopped: finish it.
            log.info("%s: back in the game, playing on", session.name)
            game = await _over(session, game)
        elif game is not None and tally.owes(game.game_id):
            log.info("%s: the game ended while this bot was away: counting it", session.name)
        if game is not None and game.end is not None and tally.owes(game.game_id):
            await _count(session, tally, game, on_game)
        while tally.played < games:
            # The game before this one: the next may start as soon as we are ready.
            previous = None if session.state.game is None else session.state.game.game_id
            game = await _play_one(
                session, previous, partial(_sit, session, room, players, turn_timer)
            )
            if game is None:
                log.info("%s: the game was cancelled before it began", session.name)
                continue
            await _count(session, tally, game, on_game)
        tally.done()
        session.close()
    return tally.played


async def _count(
    session: Session,
    tally: _Tally,
    game: GameMirror,
    on_game: Callable[[GameResult], object] | None,
) -> None:
    """Count `game`, over: its record fetched and verified (when there is
    someone to tell, or secrets to delete), its secrets deleted once it
    verifies, its result told, and the tally kept. A bot killed before the
    tally is written tells it again when started again, and counts it once."""
    number = tally.played + 1
    result = None
    if on_game is not None or session.store is not None:
        result = await game_result(session, number, game)
    if result is not None and result.verdict is not None and result.verdict.ok:
        await session.forget_secrets(game)
    elif result is not None and session.store is not None:
        why = result.unchecked or "its record does NOT verify"
        log.warning("%s: the secrets of game %d are kept: %s", session.name, number, why)
    if on_game is not None and result is not None:
        on_game(result)
    played = tally.count(game.game_id)
    log.info("%s: %d game(s) played", session.name, played)


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


async def game_result(
    session: Session, number: int, game: GameMirror | None = None
) -> GameResult | None:
    """The result of `game`, or of the game `session` has just seen end (None
    if it has not ended): its record fetched from the server (`get_record`)
    and verified."""
    if game is None:
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


TALLY_IDS = 64  # the ids of the games counted last, kept in the tally


class _Tally:
    """How many games a bot with a state directory has played of those it
    was asked for, and which (the ids of the last ones), kept there
    (`bot-games.json`) from the start of its run until it has played them
    all: a bot killed and started again with the same command plays only
    what is left, and counts no game twice. A game already over when a run
    begins (the last one of a run before) is none of its games."""

    def __init__(self, state_dir: Path | None, server: str, room: str) -> None:
        self.path = None if state_dir is None else state_dir / "bot-games.json"
        self.key = {"server": server, "room": room}
        self.played = 0
        self.counted: list[str] = []  # game ids, in hex

    def begin(self, game: GameMirror | None) -> None:
        """Take up the tally of a run stopped before its end, or begin one
        (`game`: the game the bot's session shows as it starts, if any)."""
        if self._load():
            return
        self.played = 0
        self.counted = [] if game is None or game.end is None else [game.game_id.hex()]
        self._write()

    def owes(self, game_id: bytes) -> bool:
        """Whether game `game_id` is still to be counted."""
        return game_id.hex() not in self.counted

    def count(self, game_id: bytes) -> int:
        """Count game `game_id` (once), and keep the tally: how many are played."""
        if self.owes(game_id):
            self.played += 1
            self.counted = [*self.counted, game_id.hex()][-TALLY_IDS:]
            self._write()
        return self.played

    def _load(self) -> bool:
        if self.path is None:
            return False
        try:
            kept = json.loads(self.path.read_text())
            if {k: kept[k] for k in self.key} != self.key or type(kept["played"]) is not int:
                return False
            counted = kept.get("counted", [])
            if not isinstance(counted, list) or not all(isinstance(c, str) for c in counted):
                return False
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return False
        self.played, self.counted = max(0, kept["played"]), counted[-TALLY_IDS:]
        return True

    def _write(self) -> None:
        if self.path is not None:
            kept = {**self.key, "played": self.played, "counted": self.counted}
            write_private(self.path, json.dumps(kept).encode())

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
    # (its `room_state` follows the `ok`, maybe in a later read)
    await session.wait_until(lambda: session.state.room is not None)
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


async def _play_one(
    session: Session, previous: bytes | None, sit: Callable[[], Awaitable[None]]
) -> GameMirror | None:
    """Play a game after `previous`: say we are ready (again, whenever the
    room shows us not ready: after a game, or one cancelled before it
    began), start it as host once all are ready, and play it to its end.
    In no room (the session is a new one: the server no longer knew ours,
    restored from before it), `sit` down again first.
    The game, over; None if it was cancelled before it began."""
    state = session.state

    def started() -> bool:
        return state.game is not None and state.game.game_id != previous

    while not started():
        table = state.room
        if table is None:
            await sit()
            continue
        if table is not None and table.state in ("waiting", "finished"):
            mine = None if table.seat is None else table.seats[table.seat]
            if mine is not None and not mine.ready:
                await session.request(m.Ready(ready=True))
            elif table.host == state.player and all(
                s.name is not None and s.ready for s in table.seats
            ):
                try:
                    await session.request(m.StartGame())
                except RequestRefused as exc:
                    log.info("cannot start yet: %s", exc)
        await session.wait_until(partial(_moved, started, state, table))
    game = state.game
    assert game is not None
    return await _over(session, game)


async def _over(session: Session, game: GameMirror) -> GameMirror | None:
    """`game` once it is over; None if the mirror let go of it first (it was
    cancelled before it began)."""
    await session.wait_until(lambda: game.end is not None or session.state.game is not game)
    return game if game.end is not None else None

"""Cheating and misuse over real TCP, against a real `NetServer` on 127.0.0.1.

Every misuse is refused with the code docs/PROTOCOL.md's error catalog gives
it, and changes nothing: no push follows the refusal (a ping round trip on
every connection shows it), the refused move is not in the game record, and
the game goes on to its end with every seat verified. One refusal has an
effect, as the catalog says: a forged opening is ``bad_opening``, its seat
forfeits (the record keeps the forged opening as evidence) and the server
answers in its place; the game goes on all the same and the record is valid.

The players are client sessions (`Session`) over TCP, playing by themselves
with bots; a `Held` behaviour leaves one decision to the test, which misuses
the protocol while the game waits for it, then answers. Raw misuse (bad
tokens, broken frames, floods) goes through `Raw`, a client that frames
messages by hand and checks nothing. Each test has a deadline, which only a
hang reaches: no test counts on the machine's speed. Ports are chosen by the
system (port 0).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from functools import partial
from typing import Any

import pytest
import trio
import trio.testing

from oriflamme.client.bots import Behaviour, Bot, Seated
from oriflamme.client.seat_secrets import SeatSecrets, _Committed
from oriflamme.client.session import Backoff, Connector, RequestRefused, Session, tcp
from oriflamme.client.state import GameMirror
from oriflamme.engine import (
    FAMILY_NAMES,
    KEEP,
    KINDS,
    REVEAL,
    Action,
    Card,
    Keep,
    Open,
    Place,
    Reveal,
    Rules,
    Step,
    Target,
    card,
)
from oriflamme.launcher.house_bots import HouseBots
from oriflamme.protocol import messages as m
from oriflamme.protocol.codec import FrameDecoder, encode_frame
from oriflamme.protocol.commitments import Opening, card_commitment
from oriflamme.protocol.errors import RemoteProtocolError
from oriflamme.protocol.record import FAILED, OK, LogEntry, Record
from oriflamme.protocol.verify import verify_record
from oriflamme.server.core import FixedEntropy, GameFinished, Gateway, Lobby, ServerConfig
from oriflamme.server.net import READ_PAUSE, NetServer, _Connection
from tests.deadlines import HANG, until

pytestmark = pytest.mark.network

HOST = "127.0.0.1"
FAST = Backoff(first=0.05, most=0.5)  # a session cut off comes back at once
SMALL_BUFFER = 4096  # bytes: a socket buffer that an unread flood of answers fills at once


# ---------------------------------------------------------------- the server


@asynccontextmanager
async def running_server(
    *,
    entropy: FixedEntropy | None = None,
    config: ServerConfig | None = None,
    max_unread: int | None = None,
    **net_options: Any,
) -> AsyncIterator[tuple[int, list[GameFinished], NetServer]]:
    """A `NetServer` on 127.0.0.1, on a port the system chose (`max_unread`:
    its gateway's, if not the default)."""
    records: list[GameFinished] = []
    lobby = Lobby(config or ServerConfig(), entropy)
    gateway = Gateway(lobby) if max_unread is None else Gateway(lobby, max_unread=max_unread)
    server = NetServer(gateway, bots=HouseBots(), on_record=records.append, **net_options)
    listeners = await trio.open_tcp_listeners(0, host=HOST)
    port = listeners[0].socket.getsockname()[1]
    async with trio.open_nursery() as nursery:
        await nursery.start(server.run, listeners)
        yield port, records, server
        nursery.cancel_scope.cancel()


def settings(players: int) -> m.RoomSettings:
    return m.RoomSettings(
        players=players, variant="standard", edition="revised", turn_timer=None, first_player="host"
    )


# ---------------------------------------------------------------- a raw client


class Raw:
    """A client that frames messages by hand (4-byte length, one msgpack map)
    and checks nothing: it sends whatever a test wants, and reads what comes."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.pushes: list[m.Message] = []
        self.unmatched: list[m.Message] = []  # replies without the id waited for
        self.closed = False
        self._decoder = FrameDecoder()
        self._ids = itertools.count(1)

    @classmethod
    async def connect(cls, port: int, *, buffer: int | None = None) -> Raw:
        """Connected to the server on `port`; `buffer`: the size of its
        socket's receive buffer, if not the system's."""
        if buffer is None:
            return cls(await trio.open_tcp_stream(HOST, port))
        sock = trio.socket.socket()
        sock.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_RCVBUF, buffer)
        await sock.connect((HOST, port))
        return cls(trio.SocketStream(sock))

    def on(self, server: NetServer) -> _Connection:
        """This connection as `server` sees it."""
        assert isinstance(self.stream, trio.SocketStream)
        host, port = self.stream.socket.getsockname()[:2]
        (connection,) = [c for c in server._connections.values() if c.peer == f"{host}:{port}"]
        return connection

    async def send(self, message: m.Message | dict[str, Any]) -> int:
        """Send `message` (or plain data, unchecked) with a fresh request id (its id)."""
        data = message if isinstance(message, dict) else m.to_data(message)
        request_id = next(self._ids)
        await self.stream.send_all(encode_frame({**data, "id": request_id}))
        return request_id

    async def receive(self) -> m.Message | None:
        """The next message, or None once the server closed the connection."""
        while True:
            frame = self._decoder.next_frame()
            if frame is not None:
                return m.from_data(frame, "server")
            if self.closed:
                return None
            try:
                data = await self.stream.receive_some(65536)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            self._decoder.feed(data)
            self.closed = not data

    async def answer(self, request_id: int) -> m.Message:
        """The reply to request `request_id` (pushes on the way are kept)."""
        while True:
            message = await self.receive()
            assert message is not None, f"the connection closed before answer {request_id}"
            if message.ROLE == "push":
                self.pushes.append(message)
            elif getattr(message, "id", None) == request_id:
                return message
            else:
                self.unmatched.append(message)

    async def request(self, message: m.Message) -> m.Message:
        return await self.answer(await self.send(message))

    async def quiet(self) -> int:
        """How many pushes came, once a ping round trip has brought them all in."""
        assert isinstance(await self.request(m.Ping()), m.Pong)
        return len(self.pushes)

    async def hello(
        self, name: str, token: bytes | None = None, seq: int | None = None
    ) -> m.Message:
        hello = m.Hello(versions=(1,), client="misuse-test/1", name=name, token=token, seq=seq)
        return await self.request(hello)

    async def rest(self) -> list[m.Message]:
        """Everything until the server closes the connection."""
        out = []
        while (message := await self.receive()) is not None:
            out.append(message)
        return out

    async def aclose(self) -> None:
        await self.stream.aclose()


def refused_fatally(answer: m.Message | None, code: str, request_id: int) -> None:
    assert isinstance(answer, m.Error), answer
    assert (answer.code, answer.fatal, answer.id) == (code, True, request_id)


# ---------------------------------------------------------------- players


class Scripted(Bot):
    """A random bot with standing orders: at a `reveal` decision, reveal
    (`reveal=True`) or keep (`False`) whenever it may; at an `eliminate`
    decision, aim at a face-down card of seat `prey` if there is one.
    Reproducible (`Bot(seed=...)`)."""

    def __init__(self, seed: str, *, reveal: bool | None = None, prey: int | None = None) -> None:
        super().__init__("random", seed=seed)
        self.reveal = reveal
        self.prey = prey

    def choose(self, game: GameMirror) -> Action:
        options = game.options()
        decision = game.decision
        assert decision is not None
        if decision.kind == Step.REVEAL_OR_KEEP and self.reveal is not None:
            wanted = REVEAL if self.reveal else KEEP
            if wanted in options:
                return wanted
        if decision.kind == Step.ELIMINATE and self.prey is not None:
            view = game.view()
            assert view is not None
            hidden = {
                c["pid"]
                for slot in view["queue"]
                for c in slot
                if c["owner"] == self.prey and not c["face_up"]
            }
            for action in options:
                if isinstance(action, Target) and action.pid in hidden:
                    return action
        return super().choose(game)


class Held(Behaviour):
    """Plays with its bot, but leaves to the test the first decision of its
    seat that `hold` picks (an opening demanded of it included): `held` is that
    decision. The test misuses, then answers it itself and calls `release`."""

    def __init__(self, bot: Bot, hold: Callable[[GameMirror], bool] | None = None) -> None:
        super().__init__(bot)
        self.hold = hold
        self.held: m.PendingDecision | m.Pending | None = None

    def messages(self, client: Seated) -> list[m.Message]:
        game = client.state.game
        if game is None:
            return []
        d = game.decision
        if (
            self.held is None
            and self.hold is not None
            and d is not None
            and d.seat == game.seat
            and (game.game_id, d.turn) != client.answered
            and self.hold(game)
        ):
            self.held = d
            self.hold = None
        if self.held is not None and d is not None and d.turn == self.held.turn:
            # What is automatic goes on (never the held opening): the rest waits.
            return [x for x in game.automatic() if not isinstance(x, m.OpenCard)]
        return super().messages(client)

    def release(self, hold: Callable[[GameMirror], bool] | None = None) -> None:
        """The held decision is answered; `hold` picks the next one to hold."""
        self.held = None
        self.hold = hold


def seat_of(session: Session) -> int:
    seat = session.state.seat
    assert seat is not None
    return seat


def mirror(session: Session) -> GameMirror:
    game = session.state.game
    assert game is not None
    return game


def pending(session: Session) -> m.PendingDecision | m.Pending:
    decision = mirror(session).decision
    assert decision is not None
    return decision


def game_over(session: Session) -> bool:
    game = session.state.game
    return game is not None and game.end is not None


def seed_of(name: str) -> bytes:
    return hashlib.sha256(name.encode()).digest()


def fixed_secrets(name: str) -> Callable[[Rules, bytes, int], SeatSecrets]:
    """A seat's secrets with a client seed of its own name: a reproducible deal."""

    def make(rules: Rules, game_id: bytes, seat: int) -> SeatSecrets:
        return SeatSecrets(rules, game_id, seat, seed=seed_of(name))

    return make


def with_bo_and_cy(ann: Behaviour) -> list[tuple[str, Behaviour | None]]:
    """Ann, then Bo and Cy playing random moves, reproducibly."""
    return [
        ("Ann", ann),
        ("Bo", Behaviour(Bot("random", seed="bo"))),
        ("Cy", Behaviour(Bot("random", seed="cy"))),
    ]


async def wait_held(session: Session, held: Held) -> m.PendingDecision | m.Pending:
    """The decision `held` holds, once it comes (the game must not end first)."""
    await session.wait_until(lambda: held.held is not None or game_over(session))
    assert held.held is not None, "the game ended before the decision to hold came"
    return held.held


async def answer_held(session: Session, held: Held) -> m.Message:
    """Answer the held decision as the bot chooses (an opening with the real
    one); the message sent."""
    decision = held.held
    assert decision is not None and held.bot is not None
    game = mirror(session)
    if decision.kind == Step.OPEN:
        assert game.secrets is not None and decision.pid is not None
        o = game.secrets.opening(decision.pid)
        message: m.Message = m.OpenCard(pid=o.pid, card=o.card, nonce=o.nonce)
    else:
        message = game.answer(held.bot.choose(game))
    session.answered = (game.game_id, decision.turn)
    held.release()
    await session.request(message)
    return message


async def quiet(*sessions: Session) -> list[int | None]:
    """Each session's last push number, once a ping round trip on each has
    brought in every push caused by what came before."""
    for s in sessions:
        await s.request(m.Ping())
    return [s.seq for s in sessions]


async def refused(session: Session, message: m.Message) -> str:
    """The error code `session`'s request is refused with."""
    with pytest.raises(RequestRefused) as caught:
        await session.request(message)
    assert not caught.value.error.fatal
    return caught.value.error.code


async def start(
    nursery: trio.Nursery,
    port: int,
    players: list[tuple[str, Behaviour | None]],
    *,
    server_bots: int = 0,
    fixed: bool = False,
    secrets: dict[str, Callable[[Rules, bytes, int], SeatSecrets]] | None = None,
) -> list[Session]:
    """Sessions for `players` (the first is the host, in seat 0), seated in a
    new room with `server_bots` server bots after them, and the game started.
    `fixed`: each seat's seed is fixed (`fixed_secrets`); `secrets`: a player's
    own way to make its seat's secrets."""
    sessions = [
        Session(
            tcp(HOST, port),
            name,
            behaviour=behaviour,
            make_secrets=(secrets or {}).get(name) or (fixed_secrets(name) if fixed else None),
            backoff=FAST,
        )
        for name, behaviour in players
    ]
    for s in sessions:
        await nursery.start(s.run)
    host = sessions[0]
    await host.request(m.CreateRoom(settings=settings(len(players) + server_bots)))
    for s in sessions[1:]:
        await s.request(m.JoinRoom(room=host.state.room.room))
    for _ in range(server_bots):
        await host.request(m.AddBot(strategy="random"))
    for s in sessions:
        await s.request(m.Ready(ready=True))
    await host.request(m.StartGame())
    return sessions


async def finish(sessions: list[Session], records: list[GameFinished]) -> Record:
    """Wait for the end; every session sees it; the one record."""
    for s in sessions:
        await s.wait_until(partial(game_over, s))
    assert len(records) == 1
    return records[0].record


def all_verified(record: Record, sessions: list[Session]) -> None:
    """The record verifies, every seat ok, and every client agrees."""
    verdict = verify_record(record)
    assert verdict.ok, verdict.reasons()
    for s in sessions:
        assert [v.status for v in mirror(s).check_end()] == [OK] * record.settings.players
        assert s.state.problems == []


def turn_index(record: Record, turn: int) -> int:
    """Where in the record's log decision `turn` was settled: one entry per
    decision, but a reveal and its opening count as one (the opening settles it)."""
    return [i for i, e in enumerate(record.log) if not isinstance(e.action, Reveal)][turn]


def by_turn(record: Record, turn: int) -> LogEntry:
    """The log entry that settled decision `turn`."""
    return record.log[turn_index(record, turn)]


def flipped(nonce: bytes) -> bytes:
    return bytes([nonce[0] ^ 1]) + nonce[1:]


def owned_openings(game: GameMirror) -> list[Opening]:
    """The openings of this seat's cards made public so far."""
    return [o for pid, o in game.openings.items() if game.commitments[pid].seat == game.seat]


# ---------------------------------------------------------------- 1. forged openings: reveal


@pytest.mark.trio
@pytest.mark.parametrize("forgery", ["nonce", "card", "replayed"])
async def test_a_forged_reveal_is_bad_opening_the_server_keeps_the_card_and_play_goes_on(
    forgery: str, caplog: pytest.LogCaptureFixture
) -> None:
    """`reveal` with an opening that does not open the card's commitment: a
    forged nonce, another card of the family with the real nonce, or the real
    opening of another card of the seat, already revealed. `bad_opening`; the
    card stays face down (the server keeps it in the seat's place); the
    forged identity is nowhere in the log; the seat is `failed` with the
    forged opening as evidence; everyone else is ok and the record valid."""

    def hold(game: GameMirror) -> bool:
        d = game.decision
        assert d is not None
        return d.kind == Step.REVEAL_OR_KEEP and (
            forgery != "replayed" or bool(owned_openings(game))
        )

    held = Held(Scripted("ann", reveal=True), hold)
    caplog.set_level(logging.INFO, logger="oriflamme.server")
    with trio.fail_after(HANG):
        async with (
            running_server(entropy=FixedEntropy(f"reveal {forgery}")) as (port, records, _),
            trio.open_nursery() as nursery,
        ):
            ann, bo, cy = await start(nursery, port, with_bo_and_cy(held), fixed=True)
            decision = await wait_held(ann, held)
            assert decision.pid is not None
            game = mirror(ann)
            assert game.secrets is not None
            real = game.secrets.opening(decision.pid)
            if forgery == "nonce":
                forged = Opening(real.pid, real.card, flipped(real.nonce))
            elif forgery == "card":
                other = next(k for k in KINDS if k != real.card.kind)
                forged = Opening(real.pid, card(real.card.family, other), real.nonce)
            else:
                before = owned_openings(game)[0]
                forged = Opening(real.pid, before.card, before.nonce)
            forge = m.RevealCard(turn=decision.turn, card=forged.card, nonce=forged.nonce)
            ann.answered = (game.game_id, decision.turn)  # the forgery answers it: not the bot
            held.release()  # from here on, the bot plays the seat again
            assert await refused(ann, forge) == "bad_opening"
            # The server kept the card face down in Ann's place: the next decision.
            await ann.wait_until(lambda: pending(ann).turn > decision.turn or game_over(ann))
            record = await finish([ann, bo, cy], records)
            for s in (ann, bo, cy):
                s.close()

    me = seat_of(ann)
    entry = by_turn(record, decision.turn)
    assert replace(entry, sig=None) == LogEntry(me, Keep(), by_server=True)
    assert not any(
        isinstance(e.action, Open)
        and (e.pid, e.action.card, e.nonce) == (forged.pid, forged.card, forged.nonce)
        for e in record.log
    )
    evidence = [f for f in record.forfeits if f.opening is not None]
    assert [(f.seat, f.opening) for f in evidence] == [(me, forged)]
    assert evidence[0].log_index == turn_index(record, decision.turn)
    verdict = verify_record(record)
    assert verdict.problems == ()
    assert [v.status for v in verdict.seats] == [FAILED if s == me else OK for s in range(3)]
    assert mirror(ann).end is not None and me in mirror(ann).end.forfeits
    # The server's log says who failed, and not what card they claimed.
    server_log = [r.getMessage() for r in caplog.records if r.name == "oriflamme.server"]
    assert any(f"in seat {me} failed an opening, and forfeits" in line for line in server_log)
    assert any(f"seats that failed their checks: [{me}]" in line for line in server_log)
    assert not any(str(forged.card) in line for line in server_log)


# ---------------------------------------------------------------- 1. forged openings: open

# A game that plays the same every time: the server's randomness, every seat's
# seed and every bot's choices are fixed. Ann keeps all her cards face down;
# Bo and Cy reveal theirs and aim their eliminations at Ann's hidden cards.
OPEN_GAME = "misuse-open"


def is_open(game: GameMirror) -> bool:
    d = game.decision
    return d is not None and d.kind == Step.OPEN


@pytest.mark.trio
async def test_a_forged_open_is_bad_opening_the_card_is_settled_and_play_goes_on() -> None:
    """One of Ann's face-down cards is eliminated and its opening demanded.
    Before she answers: Bo sends that card's real opening (`wrong_state`:
    nothing is asked of him), Ann sends it for another pid (`wrong_state`); no
    push follows. Then Ann sends the opening with a forged nonce: `bad_opening`, the
    server settles the card in her place (an identity it picks, logged
    `settled` and `by_server`), her real opening is now `wrong_state`, and the
    forged one is the record's evidence: Ann `failed`, Bo and Cy ok, the
    record valid."""
    held = Held(Scripted("ann", reveal=False), is_open)
    with trio.fail_after(HANG):
        async with (
            running_server(entropy=FixedEntropy(OPEN_GAME)) as (port, records, _),
            trio.open_nursery() as nursery,
        ):
            ann, bo, cy = await start(
                nursery,
                port,
                [
                    ("Ann", held),
                    ("Bo", Behaviour(Scripted("bo", reveal=True, prey=0))),
                    ("Cy", Behaviour(Scripted("cy", reveal=True, prey=0))),
                ],
                fixed=True,
            )
            decision = await wait_held(ann, held)  # (if not: change OPEN_GAME)
            assert decision.pid is not None
            game = mirror(ann)
            assert game.secrets is not None and game.open_request is not None
            real = game.secrets.opening(decision.pid)
            seqs = await quiet(ann, bo, cy)
            stolen = m.OpenCard(pid=real.pid, card=real.card, nonce=real.nonce)
            assert await refused(bo, stolen) == "wrong_state"
            elsewhere = m.OpenCard(pid=real.pid + 1, card=real.card, nonce=real.nonce)
            assert await refused(ann, elsewhere) == "wrong_state"
            assert await quiet(ann, bo, cy) == seqs
            assert pending(ann) == decision

            forged = Opening(real.pid, real.card, flipped(real.nonce))
            held.release()
            assert (
                await refused(ann, m.OpenCard(pid=real.pid, card=real.card, nonce=forged.nonce))
                == "bad_opening"
            )
            await ann.wait_until(lambda: real.pid in mirror(ann).settled)
            assert await refused(ann, stolen) == "wrong_state"
            record = await finish([ann, bo, cy], records)
            for s in (ann, bo, cy):
                s.close()

    me = seat_of(ann)
    entry = by_turn(record, decision.turn)
    assert (entry.seat, entry.pid, entry.settled, entry.by_server, entry.nonce) == (
        me,
        real.pid,
        True,
        True,
        None,
    )
    assert isinstance(entry.action, Open)
    assert not any(e.nonce == forged.nonce for e in record.log)
    evidence = [f for f in record.forfeits if f.opening is not None]
    assert (evidence[0].seat, evidence[0].opening) == (me, forged)
    assert evidence[0].log_index == turn_index(record, decision.turn)
    # (Should Ann's card whose identity the settlement took be opened later,
    # that opening clashes and is settled too: documented, and Ann's alone.)
    assert {f.seat for f in evidence} == {me}
    verdict = verify_record(record)
    assert verdict.problems == ()
    assert [v.status for v in verdict.seats] == [FAILED, OK, OK]


# ---------------------------------------------------------------- 2. a card opened twice


class CheatingSecrets(SeatSecrets):
    """A seat's secrets that can also commit to any card, with any nonce (a
    cheat: the server cannot tell, since it never sees the card)."""

    def commit_any(self, pid: int, card: Card, nonce: bytes) -> bytes:
        self._committed[pid] = _Committed(card, nonce)
        return card_commitment(self.game_id, self.seat, pid, card, nonce)


@pytest.mark.trio
@pytest.mark.parametrize("reused", ["card", "nonce"])
async def test_a_card_opened_twice_is_bad_opening_even_with_a_matching_commitment(
    reused: str,
) -> None:
    """A cheat places a card under a commitment to a card it has already
    revealed (`card`: the same identity, a fresh nonce), or to a card of its
    hand with the nonce of a card already revealed (`nonce`). The server cannot
    see it at the placement; the opening matches its commitment, yet it opens
    a card (or a nonce) a second time: `bad_opening`, the server keeps the card
    or settles it in the seat's place, and the duplicate is nowhere in the log."""
    cheat: list[CheatingSecrets] = []

    def make(rules: Rules, game_id: bytes, seat: int) -> SeatSecrets:
        cheat.append(CheatingSecrets(rules, game_id, seat, seed=seed_of("Ann")))
        return cheat[-1]

    def hold(game: GameMirror) -> bool:
        d = game.decision
        assert d is not None
        return d.kind == Step.PLACE and bool(owned_openings(game))

    held = Held(Scripted("ann", reveal=True), hold)
    with trio.fail_after(HANG):
        async with (
            running_server(entropy=FixedEntropy(f"twice {reused}")) as (port, records, _),
            trio.open_nursery() as nursery,
        ):
            players = with_bo_and_cy(held)
            ann, bo, cy = await start(nursery, port, players, fixed=True, secrets={"Ann": make})
            place = await wait_held(ann, held)
            game = mirror(ann)
            opened = owned_openings(game)[0]
            pid = game.state.view["next_pid"]
            if reused == "card":
                duplicate = Opening(pid, opened.card, flipped(opened.nonce))
            else:
                duplicate = Opening(pid, cheat[0].hand[0], opened.nonce)
            at = next(
                a.at for a in game.options() if isinstance(a, Place) and a.at in ("first", "last")
            )
            commitment = cheat[0].commit_any(pid, duplicate.card, duplicate.nonce)
            ann.answered = (mirror(ann).game_id, place.turn)
            # Ann's turn to be held next: her duplicate card's opening, whichever comes.
            held.release(lambda g: g.decision is not None and g.decision.pid == pid)
            await ann.request(
                m.PlaceCard(
                    turn=place.turn,
                    at=at,
                    family=FAMILY_NAMES[duplicate.card.family],
                    commitment=commitment,
                )
            )
            due = await wait_held(ann, held)
            assert due.kind in (Step.REVEAL_OR_KEEP, Step.OPEN)
            opening: m.Message
            if due.kind == Step.OPEN:
                opening = m.OpenCard(pid=pid, card=duplicate.card, nonce=duplicate.nonce)
            else:
                opening = m.RevealCard(turn=due.turn, card=duplicate.card, nonce=duplicate.nonce)
            ann.answered = (mirror(ann).game_id, due.turn)
            held.release()
            assert await refused(ann, opening) == "bad_opening"
            record = await finish([ann, bo, cy], records)
            for s in (ann, bo, cy):
                s.close()

    me = seat_of(ann)
    entry = by_turn(record, due.turn)
    assert entry.seat == me and entry.by_server
    assert (entry.action == Keep()) if due.kind == Step.REVEAL_OR_KEEP else entry.settled
    assert not any(e.nonce == duplicate.nonce and e.pid == pid for e in record.log), (
        "the duplicate opening is in the log"
    )
    evidence = [f for f in record.forfeits if f.opening is not None]
    # Her bot sends the same opening whenever the card is to be opened again: refused each time.
    assert evidence and {(f.seat, f.opening) for f in evidence} == {(me, duplicate)}
    assert evidence[0].log_index == turn_index(record, due.turn)
    assert ("already played as card" if reused == "card" else "reuses the nonce") in evidence[
        0
    ].reason
    verdict = verify_record(record)
    assert verdict.problems == ()
    assert [v.status for v in verdict.seats] == [FAILED if s == me else OK for s in range(3)]


@pytest.mark.trio
async def test_a_card_sent_open_again_is_refused_and_changes_nothing() -> None:
    """An honest client's duplicates: its `reveal` sent again once accepted
    (`stale_turn`), an `open` of that card, face up already (`wrong_state`),
    and its `final_reveal` sent again after the game's end (`wrong_state`).
    No push follows them, no forfeit: the seat stays ok and the record valid."""

    def hold(game: GameMirror) -> bool:
        d = game.decision
        assert d is not None
        return d.kind == Step.REVEAL_OR_KEEP

    held = Held(Scripted("ann", reveal=True), hold)
    with trio.fail_after(HANG):
        async with (
            running_server(entropy=FixedEntropy("again")) as (port, records, _),
            trio.open_nursery() as nursery,
        ):
            ann, bo, cy = await start(nursery, port, with_bo_and_cy(held), fixed=True)
            decision = await wait_held(ann, held)
            assert decision.pid is not None
            game = mirror(ann)
            assert game.secrets is not None
            real = game.secrets.opening(decision.pid)
            reveal = m.RevealCard(turn=decision.turn, card=real.card, nonce=real.nonce)
            ann.answered = (game.game_id, decision.turn)
            held.release(lambda g: True)  # and hold Ann's next decision, whatever it is
            await ann.request(reveal)
            await wait_held(ann, held)
            assert real.pid in mirror(ann).openings

            seqs = await quiet(ann, bo, cy)
            assert await refused(ann, reveal) == "stale_turn"
            again = m.OpenCard(pid=real.pid, card=real.card, nonce=real.nonce)
            assert await refused(ann, again) == "wrong_state"
            assert await quiet(ann, bo, cy) == seqs

            await answer_held(ann, held)
            record = await finish([ann, bo, cy], records)
            final = mirror(ann).end
            assert final is not None
            seqs = await quiet(ann, bo, cy)
            reveal_again = m.FinalReveal(seed=game.secrets.seed, openings=final.openings)
            assert await refused(ann, reveal_again) == "wrong_state"
            assert await quiet(ann, bo, cy) == seqs
            assert len(records) == 1
            for s in (ann, bo, cy):
                s.close()

    all_verified(record, [ann, bo, cy])
    assert record.forfeits == ()
    opened = [e for e in record.log if isinstance(e.action, Open) and e.pid == real.pid]
    assert [(e.action.card, e.nonce) for e in opened] == [(real.card, real.nonce)]
    assert by_turn(record, decision.turn) == LogEntry(
        seat_of(ann), Open(real.card), pid=real.pid, nonce=real.nonce
    )


# ---------------------------------------------------------------- 3. out of turn, for another seat


def in_round_two_place(game: GameMirror) -> bool:
    d = game.decision
    assert d is not None and game.state is not None
    return d.kind == Step.PLACE and game.state.view["round"] >= 2


def family_of(game: GameMirror, seat: int) -> str:
    return game.started.families[seat][0]


@pytest.mark.trio
async def test_acting_out_of_turn_or_for_another_seat_is_refused_and_changes_nothing() -> None:
    """While Ann's placement is pending: Bo answers it, with every kind of
    decision message and Ann's `turn` (`not_your_turn`: a seat cannot act for
    another, not even placing a card of Ann's family or sending an opening,
    which is not even checked); Bo and Ann answer another turn, before or
    after (`stale_turn`); Ann answers with the wrong kind of action or places
    Bo's family (`illegal_action`); Bo sends an opening or a final reveal
    nobody asked for, or a second seed commitment (`wrong_state`). No push
    follows any of them; then Ann places, and the record has her placement
    for that turn, and no forfeit."""
    held = Held(Bot("random", seed="ann"), in_round_two_place)
    with trio.fail_after(HANG):
        async with running_server() as (port, records, _), trio.open_nursery() as nursery:
            ann, bo = await start(
                nursery, port, [("Ann", held), ("Bo", Behaviour(Bot("random")))], server_bots=1
            )
            decision = await wait_held(ann, held)
            turn = decision.turn
            game = mirror(ann)
            ann_family, bo_family = family_of(game, seat_of(ann)), family_of(game, seat_of(bo))
            seqs = await quiet(ann, bo)

            for_ann = [
                m.Direction(turn=turn, direction="left-to-right"),
                m.PlaceCard(turn=turn, at="last", family=bo_family, commitment=bytes(32)),
                m.PlaceCard(turn=turn, at="first", family=ann_family, commitment=bytes(32)),
                m.KeepCard(turn=turn),
                m.RevealCard(turn=turn, card=card(bo_family, "lord"), nonce=bytes(32)),
                m.Choose(turn=turn, target=0),
                m.Move(turn=turn, index=0),
            ]
            assert [await refused(bo, msg) for msg in for_ann] == ["not_your_turn"] * 7
            other_turns = [
                m.PlaceCard(turn=turn + 1, at="last", family=bo_family, commitment=bytes(32)),
                m.KeepCard(turn=turn - 1),
                m.Choose(turn=turn + 5, target=0),
            ]
            assert [await refused(bo, msg) for msg in other_turns] == ["stale_turn"] * 3
            ann_other_turns = [
                m.PlaceCard(turn=turn + 1, at="last", family=ann_family, commitment=bytes(32)),
                m.PlaceCard(turn=turn - 1, at="last", family=ann_family, commitment=bytes(32)),
            ]
            assert [await refused(ann, msg) for msg in ann_other_turns] == ["stale_turn"] * 2
            ann_illegal = [
                m.KeepCard(turn=turn),
                m.Direction(turn=turn, direction="right-to-left"),
                m.PlaceCard(turn=turn, at="last", family=bo_family, commitment=bytes(32)),
            ]
            assert [await refused(ann, msg) for msg in ann_illegal] == ["illegal_action"] * 3
            unasked = [
                m.OpenCard(pid=0, card=card(bo_family, "lord"), nonce=bytes(32)),
                m.FinalReveal(seed=bytes(32), openings=()),
                m.SeedCommit(commitment=bytes(32)),
            ]
            assert [await refused(bo, msg) for msg in unasked] == ["wrong_state"] * 3
            assert await quiet(ann, bo) == seqs
            assert pending(ann) == decision  # still Ann's, same turn

            next_pid = game.state.view["next_pid"]
            placed = await answer_held(ann, held)
            record = await finish([ann, bo], records)
            assert await refused(bo, m.KeepCard(turn=turn)) == "wrong_state"  # no game now
            bo.close()
            ann.close()

    all_verified(record, [ann, bo])
    assert record.forfeits == ()
    entry = by_turn(record, turn)
    assert isinstance(placed, m.PlaceCard) and isinstance(entry.action, Place)
    assert (entry.seat, entry.pid, entry.commitment, entry.by_server) == (
        seat_of(ann),
        next_pid,
        placed.commitment,
        False,
    )
    assert bytes(32) not in {e.commitment for e in record.log}


@pytest.mark.trio
async def test_game_actions_with_no_game_are_wrong_state() -> None:
    """In the lobby, and seated in a room that waits for its players: no
    decision is pending (`wrong_state`), and nothing is pushed."""
    with trio.fail_after(HANG):
        async with running_server() as (port, _, _), trio.open_nursery() as nursery:
            ann = Session(tcp(HOST, port), "Ann")
            bo = Session(tcp(HOST, port), "Bo")
            for s in (ann, bo):
                await nursery.start(s.run)
            actions = [
                m.Direction(turn=0, direction="left-to-right"),
                m.PlaceCard(turn=0, at="first", family="red", commitment=bytes(32)),
                m.SeedCommit(commitment=bytes(32)),
                m.OpenCard(pid=0, card=card("red", "lord"), nonce=bytes(32)),
                m.FinalReveal(seed=bytes(32), openings=()),
            ]
            assert [await refused(bo, a) for a in actions] == ["wrong_state"] * 5
            await ann.request(m.CreateRoom(settings=settings(3)))
            await bo.request(m.JoinRoom(room=ann.state.room.room))
            seqs = await quiet(ann, bo)
            assert [await refused(bo, a) for a in actions] == ["wrong_state"] * 5
            assert await quiet(ann, bo) == seqs
            assert ann.state.room is not None and ann.state.room.state == "waiting"
            ann.close()
            bo.close()


# ---------------------------------------------------------------- 4. tokens


@pytest.mark.trio
async def test_a_wrong_token_in_hello_is_bad_token_and_changes_nothing() -> None:
    """A `hello` with a token the server never gave (`bad_token`), or one that
    is not a token (`invalid_field`): fatal, the connection is closed after
    the error; the session whose seat it aimed at keeps its connection, its
    room and its seat, and nobody gets a push."""
    with trio.fail_after(HANG):
        async with running_server() as (port, _, _), trio.open_nursery() as nursery:
            bo = Session(tcp(HOST, port), "Bo")
            await nursery.start(bo.run)
            await bo.request(m.CreateRoom(settings=settings(3)))
            ann = await Raw.connect(port)
            welcome = await ann.hello("Ann")
            assert isinstance(welcome, m.Welcome) and not welcome.resumed
            assert isinstance(await ann.request(m.JoinRoom(room=bo.state.room.room)), m.Ok)
            seqs = await quiet(bo)
            pushes = await ann.quiet()
            room = bo.state.room

            for token, code in [
                (bytes(32), "bad_token"),
                (hashlib.sha256(welcome.token).digest(), "bad_token"),
                (bytes(reversed(welcome.token)), "bad_token"),
                (welcome.token[:31], "invalid_field"),
            ]:
                intruder = await Raw.connect(port)
                hello = {"type": "hello", "versions": [1], "client": "x/1", "name": "Eve"}
                request_id = await intruder.send({**hello, "token": token})
                refused_fatally(await intruder.receive(), code, request_id)
                assert await intruder.rest() == []  # closed right after the error
                await intruder.aclose()

            assert await ann.quiet() == pushes and ann.unmatched == []  # Ann's connection lives
            assert await quiet(bo) == seqs and bo.state.room is room
            assert [s.player for s in room.seats][:2] == [bo.state.player, welcome.player]
            await ann.aclose()
            bo.close()


@pytest.mark.trio
async def test_a_token_rotated_away_by_two_resumes_is_bad_token() -> None:
    """Each resume gives a new token, and the one resumed with stays good
    until the new one is used: t0 resumes (giving t1), t1 resumes (giving t2),
    and then t0 is `bad_token`; once t2 is used, t1 is too; a token whose
    successor was never used still resumes, and that successor is then
    `bad_token`. A refused token closes only its own connection: the live
    one goes on, its session and seat are untouched; the latest token still
    resumes."""
    with trio.fail_after(HANG):
        async with running_server() as (port, _, _), trio.open_nursery() as nursery:
            bo = Session(tcp(HOST, port), "Bo")
            await nursery.start(bo.run)
            await bo.request(m.CreateRoom(settings=settings(3)))
            room_id = bo.state.room.room

            first = await Raw.connect(port)
            welcome = await first.hello("Ann")
            assert isinstance(welcome, m.Welcome)
            player, tokens = welcome.player, [welcome.token]
            assert isinstance(await first.request(m.JoinRoom(room=room_id)), m.Ok)
            live = first

            async def resume(token: bytes) -> Raw:
                nonlocal live
                raw = await Raw.connect(port)
                answer = await raw.hello("Ann", token=token)
                assert isinstance(answer, m.Welcome), answer
                assert (answer.resumed, answer.player) == (True, player)
                assert answer.token not in tokens
                tokens.append(answer.token)
                replaced = await live.rest()
                assert [(e.code, e.fatal) for e in replaced if isinstance(e, m.Error)] == [
                    ("session_replaced", True)
                ]
                await live.aclose()
                live = raw
                return raw

            async def refused_token(token: bytes) -> None:
                before = (await quiet(bo), await live.quiet())
                raw = await Raw.connect(port)
                request_id = await raw.send(
                    m.Hello(versions=(1,), client="x/1", name="Ann", token=token)
                )
                refused_fatally(await raw.receive(), "bad_token", request_id)
                assert await raw.rest() == []
                await raw.aclose()
                # The live connection goes on, and nobody heard of it.
                assert (await quiet(bo), await live.quiet()) == before

            await resume(tokens[0])  # t0 -> t1
            await resume(tokens[1])  # t1 -> t2: t0, rotated away twice, is gone
            await refused_token(tokens[0])
            await resume(tokens[2])  # t2 -> t3: t1 is gone
            await refused_token(tokens[1])
            # t3 never used (its welcome "lost"): t2 still resumes, and t3 is dropped.
            await resume(tokens[2])  # t2 -> t4
            await refused_token(tokens[3])
            await resume(tokens[4])  # t4 -> t5: t2 is gone
            await refused_token(tokens[2])
            await refused_token(tokens[0])

            # The session is whole: in its room, in its seat, with the newest token.
            last = await resume(tokens[5])
            assert isinstance(await last.request(m.Sync()), m.Ok)
            await last.quiet()
            room = [p for p in last.pushes if isinstance(p, m.RoomState)][-1]
            assert (room.room, room.seat, room.seats[1].player) == (room_id, 1, player)
            await last.aclose()
            bo.close()


# ---------------------------------------------------------------- 5. spectators


@pytest.mark.trio
async def test_a_spectator_s_game_actions_are_not_permitted_and_change_nothing() -> None:
    """A spectator sends every game message, each for the pending turn: every
    one is `not_permitted`; nothing is pushed; the game ends with the seated
    players' decisions only, every seat verified."""
    held = Held(Bot("random", seed="ann"), in_round_two_place)
    with trio.fail_after(HANG):
        async with running_server() as (port, records, _), trio.open_nursery() as nursery:
            ann, bo = await start(
                nursery, port, [("Ann", held), ("Bo", Behaviour(Bot("random")))], server_bots=1
            )
            decision = await wait_held(ann, held)
            turn = decision.turn
            cy = Session(tcp(HOST, port), "Cy")
            await nursery.start(cy.run)
            await cy.request(m.Spectate(room=ann.state.room.room))
            await cy.wait_until(
                lambda: cy.state.game is not None and mirror(cy).decision is not None
            )
            assert mirror(cy).seat is None and pending(cy).turn == turn
            seqs = await quiet(ann, bo, cy)

            ann_family = family_of(mirror(ann), seat_of(ann))
            lord = card(ann_family, "lord")
            opening = Opening(0, lord, bytes(32))
            actions = [
                m.SeedCommit(commitment=bytes(32)),
                m.Direction(turn=turn, direction="left-to-right"),
                m.PlaceCard(turn=turn, at="last", family=ann_family, commitment=bytes(32)),
                m.KeepCard(turn=turn),
                m.RevealCard(turn=turn, card=lord, nonce=bytes(32)),
                m.Choose(turn=turn, target=0),
                m.Move(turn=turn, index=0),
                m.OpenCard(pid=0, card=lord, nonce=bytes(32)),
                m.FinalReveal(seed=bytes(32), openings=(opening,)),
                m.HandOver(seed=bytes(32), openings=(opening,)),
            ]
            assert [await refused(cy, a) for a in actions] == ["not_permitted"] * len(actions)
            assert await quiet(ann, bo, cy) == seqs
            assert cy.state.room is not None and cy.state.room.seat is None

            await answer_held(ann, held)
            record = await finish([ann, bo, cy], records)
            for s in (ann, bo, cy):
                s.close()

    all_verified(record, [ann, bo])
    assert record.forfeits == () and record.seat_changes == ()
    assert [s.name for s in record.seats] == ["Ann", "Bo", "Bot 2"]
    assert by_turn(record, turn).seat == seat_of(ann) and not by_turn(record, turn).by_server
    assert bytes(32) not in {e.commitment for e in record.log}


# ---------------------------------------------------------------- 6. bad frames


class Tap(trio.abc.Stream):
    """A TCP stream that keeps what it received, to read it again."""

    def __init__(self, inner: trio.SocketStream) -> None:
        self.inner = inner
        self.received = bytearray()

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self.inner.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.inner.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        data = await self.inner.receive_some(max_bytes)
        self.received += data
        return data

    async def aclose(self) -> None:
        await self.inner.aclose()

    def messages(self) -> list[m.Message]:
        decoder = FrameDecoder()
        decoder.feed(bytes(self.received))
        out = []
        while (frame := decoder.next_frame()) is not None:
            out.append(m.from_data(frame, "server"))
        return out


def tapped(port: int, taps: list[Tap]) -> Connector:
    async def connect() -> trio.abc.Stream:
        tap = Tap(await trio.open_tcp_stream(HOST, port))
        taps.append(tap)
        return tap

    return connect


BAD_FRAMES = {
    "not msgpack": (b"\x00\x00\x00\x03\xc1\xc1\xc1", "malformed_frame"),
    "not a map": (b"\x00\x00\x00\x01\x07", "malformed_frame"),
    "empty": (b"\x00\x00\x00\x00", "malformed_frame"),
    "too large": (b"\x00\x01\x00\x01", "frame_too_large"),
}


@pytest.mark.trio
@pytest.mark.parametrize("bad", sorted(BAD_FRAMES))
async def test_a_bad_frame_from_a_seated_player_closes_its_connection_and_it_resumes(
    bad: str,
) -> None:
    """In the middle of a game, while its decision is pending, a seated
    player's own connection sends a broken frame: the server answers with the
    documented fatal error and closes that connection only. The player's
    session comes back with its token: the same player, seat and pending
    decision (nothing changed); it answers, and the game ends with every seat
    verified, no stand-in, no forfeit."""
    garbage, code = BAD_FRAMES[bad]
    taps: list[Tap] = []
    held = Held(Bot("random", seed="ann"), in_round_two_place)
    with trio.fail_after(HANG):
        async with running_server() as (port, records, _), trio.open_nursery() as nursery:
            ann = Session(tapped(port, taps), "Ann", behaviour=held, backoff=FAST)
            bo = Session(tcp(HOST, port), "Bo", behaviour=Behaviour(Bot("random")))
            for s in (ann, bo):
                await nursery.start(s.run)
            await ann.request(m.CreateRoom(settings=settings(3)))
            await bo.request(m.JoinRoom(room=ann.state.room.room))
            await ann.request(m.AddBot(strategy="random"))
            for s in (ann, bo):
                await s.request(m.Ready(ready=True))
            await ann.request(m.StartGame())
            decision = await wait_held(ann, held)
            player, seat = ann.state.player, seat_of(ann)
            await quiet(ann, bo)

            await taps[0].send_all(garbage)  # nothing else is being sent: Ann's decision waits
            await ann.wait_until(lambda: len(taps) == 2 and ann.connected)
            last = taps[0].messages()[-1]
            assert isinstance(last, m.Error)
            assert (last.code, last.fatal, last.id) == (code, True, None)
            welcome = taps[1].messages()[0]
            assert isinstance(welcome, m.Welcome)
            assert (welcome.resumed, welcome.player) == (True, player)
            await quiet(ann, bo)
            assert pending(ann) == pending(bo) == decision  # the game waited for Ann
            assert ann.state.room is not None and ann.state.room.seat == seat
            assert ann.state.room.seats[seat].player == player
            assert ann.state.room.seats[seat].bot is None and ann.state.room.seats[seat].connected

            await answer_held(ann, held)
            record = await finish([ann, bo], records)
            bo.close()
            ann.close()

    all_verified(record, [ann, bo])
    assert record.forfeits == () and record.seat_changes == ()
    assert by_turn(record, decision.turn).seat == seat
    assert len(taps) == 2


# ---------------------------------------------------------------- 7. floods


def pings(first: int, count: int) -> bytes:
    """`count` ping frames, ids from `first` on, in one piece."""
    return b"".join(encode_frame({"type": "ping", "id": i}) for i in range(first, first + count))


class Pace:
    """A player's ping round trips to the server, one after another, counted
    while something else goes on."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.answered = 0
        self._answer = trio.Event()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            await self.session.request(m.Ping())
            self.answered += 1
            self._answer.set()
            self._answer = trio.Event()
            await trio.sleep(0.01)

    async def more(self, count: int) -> None:
        """Wait for `count` more round trips."""
        enough = self.answered + count
        while self.answered < enough:
            await self._answer.wait()


def small_send_buffer(connection: _Connection) -> None:
    """The server's socket for `connection` takes little at once."""
    assert isinstance(connection.stream, trio.SocketStream)
    connection.stream.socket.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_SNDBUF, SMALL_BUFFER)


def unread_paused(connection: _Connection) -> bool:
    """Whether the server has stopped reading `connection`, whose answers
    wait unread."""
    return connection.drained is not None and not connection.drained.is_set()


def gone(server: NetServer, connection: _Connection) -> bool:
    """Whether `server` has ended `connection`."""
    return all(c is not connection for c in server._connections.values())


async def flooder(port: int, room: int, *, buffer: int | None = None) -> tuple[Raw, m.Welcome]:
    """A raw client watching `room`, with every push so far read (`buffer`:
    its socket's receive buffer, as for `Raw.connect`)."""
    raw = await Raw.connect(port, buffer=buffer)
    welcome = await raw.hello("Flood")
    assert isinstance(welcome, m.Welcome)
    assert isinstance(await raw.request(m.Spectate(room=room)), m.Ok)
    await raw.quiet()
    return raw, welcome


FLOOD = 5000  # requests in one burst: 95 kB, far beyond 256 answers in one read


@pytest.mark.trio
async def test_a_burst_of_requests_is_taken_at_the_message_rate_and_the_game_goes_on() -> None:
    """A spectator sends 5000 pings at once, without reading: the server takes
    them at its message rate, a few at a time (the rest wait unread, in the
    socket), answers every one, in order, none refused, and keeps the
    connection. Meanwhile, while those answers wait unread, the
    players' round trips go on, and once Ann answers the game goes on to its
    end, every seat verified.

    (Small socket buffers for the flooder: its answers wait in the server
    whatever the system's buffers. However long the game takes here, the
    server does not give up on the flooder meanwhile: `send_timeout`. The
    rate is raised so that the flood is taken in a few seconds.)"""
    held = Held(Bot("random", seed="ann"), in_round_two_place)
    quick = ServerConfig(message_rate=2000)
    with trio.fail_after(HANG):
        async with (
            running_server(config=quick, send_timeout=100 * HANG) as (port, records, server),
            trio.open_nursery() as nursery,
        ):
            ann, bo = await start(
                nursery, port, [("Ann", held), ("Bo", Behaviour(Bot("random")))], server_bots=1
            )
            await wait_held(ann, held)
            raw, _ = await flooder(port, ann.state.room.room, buffer=SMALL_BUFFER)
            flood = raw.on(server)
            small_send_buffer(flood)
            pace = Pace(ann)
            await nursery.start(pace.run)
            await raw.stream.send_all(pings(1000, FLOOD))
            await until(lambda: flood.writing)  # the flood is handled: its answers wait, unread
            await pace.more(10)  # while Ann's round trips go on
            await answer_held(ann, held)
            record = await finish([ann, bo], records)
            assert flood.writing  # the game went on to its end: the flood's answers still wait

            answers: list[m.Message] = []
            while len(answers) < FLOOD:
                message = await raw.receive()
                assert message is not None, "the flooder was dropped"
                if message.ROLE == "reply":
                    answers.append(message)
            assert all(isinstance(a, m.Pong) for a in answers)
            assert [getattr(a, "id", None) for a in answers] == list(range(1000, 1000 + FLOOD))
            nursery.cancel_scope.cancel()

    all_verified(record, [ann, bo])
    assert record.forfeits == () and record.seat_changes == ()


@pytest.mark.trio
async def test_a_flood_never_read_gets_the_connection_dropped_and_it_may_resume() -> None:
    """A spectator floods (60000 pings, 1.1 MB) and reads nothing: the server
    takes the pings at its message rate and drops the connection of a client
    that does not read (here after `send_timeout`, 1 s, with small socket
    buffers, so that the test is quick). The flooder comes back with its
    token; after the drop the players are still served: their round trips
    go on, and the game is played to its end, verified."""
    held = Held(Bot("random", seed="ann"), in_round_two_place)
    quick = ServerConfig(message_rate=2000)
    with trio.fail_after(HANG):
        async with (
            running_server(config=quick, send_timeout=1.0) as (port, records, server),
            trio.open_nursery() as nursery,
        ):
            ann, bo = await start(
                nursery, port, [("Ann", held), ("Bo", Behaviour(Bot("random")))], server_bots=1
            )
            await wait_held(ann, held)
            raw, welcome = await flooder(port, ann.state.room.room, buffer=SMALL_BUFFER)
            flood = raw.on(server)
            small_send_buffer(flood)
            pace = Pace(ann)
            await nursery.start(pace.run)
            # It may be cut off before it has even sent it all.
            with contextlib.suppress(trio.BrokenResourceError):
                await raw.stream.send_all(pings(1000, 60000))
            # The server's writer waits 1 s for it to read, then gives up
            # (or more than a MiB waits for it first).
            await until(lambda: gone(server, flood))
            assert flood.why == "dropped: it did not read"
            answers = 0
            with contextlib.suppress(RemoteProtocolError):  # cut in the middle of a frame
                while await raw.receive() is not None:
                    answers += 1
            assert answers < 60000  # dropped: most answers never came
            await pace.more(10)  # Ann is served after the drop

            back = await Raw.connect(port)
            resumed = await back.hello("Flood", token=welcome.token)
            assert isinstance(resumed, m.Welcome) and resumed.resumed
            assert resumed.player == welcome.player
            assert isinstance(await back.request(m.Ping()), m.Pong)

            await answer_held(ann, held)
            record = await finish([ann, bo], records)
            nursery.cancel_scope.cancel()

    all_verified(record, [ann, bo])
    assert record.forfeits == () and record.seat_changes == ()


@pytest.mark.trio
async def test_a_client_that_flooded_is_served_again_once_it_has_read_its_answers() -> None:
    """A client that flooded, then read every answer, is served at once: the
    flood was taken at the message rate and answered, nothing refused, and
    the connection stays. (The rate is raised so that the flood is taken in
    a few seconds.)"""
    with trio.fail_after(HANG):
        async with running_server(config=ServerConfig(message_rate=2000)) as (port, _, _):
            raw = await Raw.connect(port)
            assert isinstance(await raw.hello("Flood"), m.Welcome)
            await raw.stream.send_all(pings(1000, FLOOD))
            answers = [await raw.receive() for _ in range(FLOOD)]
            assert all(isinstance(a, m.Pong) for a in answers)
            request_id = await raw.send(m.Ping())
            answer = await raw.receive()
            assert answer == m.Pong(id=request_id), answer
            await raw.aclose()


@pytest.mark.trio
async def test_what_a_socket_cannot_take_at_once_comes_later_and_in_order() -> None:
    """The server writes its answers straight to a TCP socket, as much as
    the socket takes at once, and leaves the rest to the connection's writer
    task. A client sends 3,000 pings (in rounds of 100) and reads nothing for
    a while; both ends' buffers are made small, so the socket fills up, a
    write is taken in part and the rest waits in the outbox. Once the client
    reads, every answer comes, whole and in order; then nothing waits, and
    the next answers go straight out again. (The message rate limit is
    lifted, and so is the limit on answers left unread: rounds that come
    together are handled as one batch.)"""
    rounds, size = 30, 100
    unlimited = ServerConfig(message_rate=1e9, message_burst=10**9)
    with trio.fail_after(HANG):
        async with running_server(config=unlimited, max_unread=10**9) as (port, _, server):
            raw = await Raw.connect(port, buffer=SMALL_BUFFER)
            assert isinstance(await raw.hello("Slow"), m.Welcome)
            connection = raw.on(server)
            small_send_buffer(connection)
            for r in range(rounds):
                await raw.stream.send_all(pings(1 + r * size, size))
                await trio.sleep(0.02)
            await until(lambda: connection.writing)  # what the socket did not take waits
            answers = [await raw.receive() for _ in range(rounds * size)]
            assert [getattr(a, "id", None) for a in answers] == list(range(1, rounds * size + 1))
            assert all(isinstance(a, m.Pong) for a in answers)
            await until(lambda: not connection.writing)  # the writer ends once all is sent
            assert connection.queued == 0
            await raw.stream.send_all(pings(rounds * size + 1, size))
            more = [await raw.receive() for _ in range(size)]
            assert [a.id for a in more] == list(range(rounds * size + 1, (rounds + 1) * size + 1))
            assert not connection.writing and connection.queued == 0  # all went straight out


@pytest.mark.trio
async def test_a_client_that_sends_without_reading_is_not_read_either() -> None:
    """docs/PROTOCOL.md: the server stops reading from a connection while
    more than 64 KiB wait to be written to it. A client sends 4000 `sync`
    requests (each answered with an `ok` and a `room_state`: about a
    megabyte to come) and reads nothing: its sending stalls long before it
    is done, another player is answered while it stalls, and once it reads,
    every answer comes, none refused.

    The flooder is connected by a lockstep stream (no buffer at all: a
    write waits for the reader), since on loopback TCP the kernel's buffers
    would hold megabytes before anything stalled. (The message rate limit
    is lifted here: it would refuse the flood first.)"""
    unlimited = ServerConfig(message_rate=1e9, message_burst=10**9)
    with trio.fail_after(HANG):
        async with (
            # (never dropped for not reading while the test looks: on a loaded
            # machine Bo's pings may take longer than the 10 s default)
            running_server(config=unlimited, send_timeout=100 * HANG) as (port, _, server),
            trio.open_nursery() as nursery,
        ):
            bo = Session(tcp(HOST, port), "Bo")
            await nursery.start(bo.run)
            near, far = trio.testing.lockstep_stream_pair()
            nursery.start_soon(server.serve_stream, far, "flooder")
            raw = Raw(near)  # type: ignore[arg-type]
            assert isinstance(await raw.hello("Flood"), m.Welcome)
            (flooder,) = [c for c in server._connections.values() if c.peer == "flooder"]
            assert isinstance(await raw.request(m.CreateRoom(settings=settings(3))), m.Ok)
            await raw.quiet()
            chunks = [
                b"".join(encode_frame({"type": "sync", "id": 1000 + 50 * c + i}) for i in range(50))
                for c in range(80)
            ]
            sent = 0

            async def flood() -> None:
                nonlocal sent
                for chunk in chunks:
                    await raw.stream.send_all(chunk)
                    sent += 1

            nursery.start_soon(flood)
            # Paused for its unread answers, for good (not only while the core,
            # busy on a loaded machine, does not take its requests: that pause
            # ends by itself).
            await until(
                lambda: (
                    (unread_paused(flooder) and flooder.queued > READ_PAUSE) or sent == len(chunks)
                )
            )
            assert sent < len(chunks), "the server read everything without being read"
            assert flooder.queued < 2 * READ_PAUSE  # what waits for it is bounded
            for _ in range(10):
                await bo.request(m.Ping())
            assert unread_paused(flooder)  # Bo was answered while the flooder stalled
            # Now it reads: every request is answered, and its sending resumes.
            answered = refused = 0
            while answered < 50 * len(chunks):
                message = await raw.receive()
                assert message is not None, "the server closed the connection"
                if message.ROLE == "reply":
                    answered += 1
                    refused += isinstance(message, m.Error)
            assert sent == len(chunks) and refused == 0
            bo.close()
            await near.aclose()  # and the server's side of it ends


@pytest.mark.trio
async def test_connections_past_the_limit_of_one_address_are_refused_over_tcp() -> None:
    """docs/SERVER.md, abuse limits: the fourth connection from 127.0.0.1
    (the limit set to 3 here) gets a fatal `server_busy` and is closed; the
    first three are served, and a slot freed is taken again."""
    # (new connections a second lifted: they are `test_abuse`'s)
    limited = ServerConfig(connections_per_address=3, connection_rate=1e6)
    with trio.fail_after(HANG):
        async with running_server(config=limited) as (port, _, server):
            streams = [await trio.open_tcp_stream(HOST, port) for _ in range(3)]
            extra = await trio.open_tcp_stream(HOST, port)
            decoder = FrameDecoder()
            while (frame := decoder.next_frame()) is None:
                data = await extra.receive_some(4096)
                assert data, "closed without a word"
                decoder.feed(data)
            assert (frame["code"], frame["fatal"]) == ("server_busy", True)
            assert await extra.receive_some(4096) == b""  # and closed
            await extra.aclose()
            first = Raw(streams[0])
            assert isinstance(await first.hello("Ann"), m.Welcome)
            await streams[1].aclose()
            await until(lambda: server.gateway._per_address.get(HOST, 0) < 3)  # a slot is free
            again = Raw(await trio.open_tcp_stream(HOST, port))
            assert isinstance(await again.hello("Bo"), m.Welcome)
            for stream in (streams[0], streams[2], again.stream):
                await stream.aclose()


# ---------------------------------------------------------------- the log of a connection's end


@pytest.mark.trio
async def test_the_log_says_why_each_connection_ended(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="oriflamme.server")
    with trio.fail_after(HANG):
        async with running_server() as (port, _, _):
            leaving = await Raw.connect(port)
            await leaving.hello("Ann")
            await leaving.aclose()  # the client goes
            broken = await Raw.connect(port)
            await broken.hello("Bob")
            await broken.stream.send_all(b"\x00\x00\x00\x02\xc1\xc1")  # not msgpack
            assert [e.code for e in await broken.rest() if isinstance(e, m.Error)] == [
                "malformed_frame"
            ]
            await broken.aclose()
            while sum("closed (" in r.getMessage() for r in caplog.records) < 2:
                await trio.sleep(0.01)
    ends = [r.getMessage() for r in caplog.records if "closed (" in r.getMessage()]
    assert ends[0].endswith("closed (by the client)"), ends
    assert ends[1].endswith("closed (by the server, after a fatal malformed_frame)"), ends

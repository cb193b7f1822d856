"""The worked example of docs/PROTOCOL.md: one real session, frame by frame.

How this works
--------------
Ann's client talks to a scripted server through a real `ClientConnection`
and `ServerConnection`: every frame is encoded by one and decoded (and
checked) by the other. The server side is a `Referee` (the engine on card
backs, the commitments, the turn counter, the final check), fed with the
game messages of Ann and of its two bots; each of the three holds its own
secrets: seeds, deals derived with `deal.derive_deal`, and a nonce per
placed card, with commitments from `commitments`. A random player with a
fixed seed makes every choice, so the transcript is the same on every run.

`session()` returns every frame of the whole game; `excerpt()` keeps the
start (through Ann's first reveal), her first opening after an
elimination, and the end; `render()` writes the document's block.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from oriflamme.engine import (
    FAMILY_NAMES,
    Card,
    Event,
    Place,
    RandomPlayer,
    Reveal,
    Rules,
    action_to_data,
    event_to_data,
    mask_event,
    new_game,
    view,
)

from . import messages as m
from .commitments import card_commitment, seed_commitment
from .connection import ClientConnection, ServerConnection
from .deal import derive_deal
from .examples import example_bytes
from .referee import Referee

GAME = example_bytes("worked example game", 16)
SERVER_SEED = example_bytes("worked example server seed")
SEEDS = tuple(example_bytes(f"worked example client seed {seat}") for seat in range(3))
ROOM = 3
ANN = 1
ANN_SEAT = 0
TIMER_MS = 60_000
SETTINGS = m.Settings(
    players=3, variant="standard", edition="revised", turn_timer=60, first_player="host"
)
CHOICES_SEED = 0


@dataclass(frozen=True, slots=True)
class Frame:
    sender: m.Sender
    message: m.Message
    data: bytes


class _Session:
    """The scripted server and Ann's client; `frames` collects what they exchanged."""

    def __init__(self) -> None:
        self.client = ClientConnection()
        self.server = ServerConnection()
        self.frames: list[Frame] = []
        self.seq = 0
        self.next_id = 1

    def request(self, message: m.Message) -> m.Message:
        data = self.client.send(message)
        self.server.receive_data(data)
        received = self.server.next_message()
        assert received == message, (received, message)
        self.frames.append(Frame("client", message, data))
        return message

    def answer(self, message: m.Message) -> None:
        data = self.server.send(message)
        self.client.receive_data(data)
        received = self.client.next_message()
        assert received == message, (received, message)
        self.frames.append(Frame("server", message, data))

    def ok(self, request: m.Message) -> None:
        self.answer(m.Ok(id=getattr(request, "id", None)))

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id - 1

    def push_seq(self) -> int:
        self.seq += 1
        return self.seq


class _Secrets:
    """What one seat keeps to itself."""

    def __init__(self, seat: int, rules: Rules) -> None:
        self.seat = seat
        self.seed = SEEDS[seat]
        self.deal = derive_deal(rules, GAME, seat, self.seed, SERVER_SEED)
        self.cards: dict[int, tuple[Card, bytes]] = {}  # pid -> (card, nonce)
        self.opened: set[int] = set()

    def commit(self, pid: int, card: Card) -> bytes:
        nonce = example_bytes(f"worked example nonce {self.seat} {pid}")
        self.cards[pid] = (card, nonce)
        return card_commitment(GAME, self.seat, pid, card, nonce)

    def opening(self, pid: int) -> m.CardOpening:
        card, nonce = self.cards[pid]
        self.opened.add(pid)
        return m.CardOpening(pid=pid, card=card, nonce=nonce)


def session() -> list[Frame]:
    """Every frame of Ann's session: lobby, a whole game, and its end."""
    s = _Session()
    hello = s.request(m.Hello(versions=(1,), client="oriflamme-cli/0.1", name="Ann", id=s.new_id()))
    s.answer(
        m.Welcome(
            version=1,
            token=example_bytes("worked example token"),
            player=ANN,
            server="oriflamme/0.1",
            resumed=False,
            idle_timeout=120,
            id=getattr(hello, "id", None),
        )
    )
    seats = [m.SeatInfo(seat=0, name="Ann", player=ANN, ready=False, connected=True)]

    def room_state(state: str = "waiting") -> None:
        padded = seats + [
            m.SeatInfo(seat=i, ready=False, connected=False) for i in range(len(seats), 3)
        ]
        s.answer(
            m.RoomState(
                seq=s.push_seq(),
                room=ROOM,
                name="Ann's table",
                settings=SETTINGS,
                host=ANN,
                state=state,
                seats=tuple(padded),
                spectators=0,
                seat=ANN_SEAT,
            )
        )

    s.ok(s.request(m.CreateRoom(settings=SETTINGS, name="Ann's table", id=s.new_id())))
    room_state()
    for seat, strategy in ((1, "heuristic"), (2, "random")):
        s.ok(s.request(m.AddBot(strategy=strategy, id=s.new_id())))
        seats.append(
            m.SeatInfo(seat=seat, name=f"Bot {seat}", bot=strategy, ready=True, connected=True)
        )
        room_state()
    s.ok(s.request(m.Ready(ready=True, id=s.new_id())))
    seats[0] = m.SeatInfo(seat=0, name="Ann", player=ANN, ready=True, connected=True)
    room_state()
    s.ok(s.request(m.StartGame(first_player=0, id=s.new_id())))
    room_state("playing")
    _play(s)
    return s.frames


def _play(s: _Session) -> None:
    rules = Rules(3)
    secrets = [_Secrets(seat, rules) for seat in range(3)]
    truth = new_game(3, deal=[x.deal for x in secrets])  # what the three seats know, together
    referee = Referee(rules, game_id=GAME, server_seed=SERVER_SEED)  # the server's game core
    chooser = RandomPlayer(rng=random.Random(CHOICES_SEED))
    commitments = tuple(seed_commitment(GAME, seat, seed) for seat, seed in enumerate(SEEDS))
    s.answer(
        m.GameStarted(
            seq=s.push_seq(),
            room=ROOM,
            game=GAME,
            settings=SETTINGS,
            first_player=0,
            families=(("red",), ("blue",), ("green",)),
            server_commitment=referee.server_seed_commitment,
            time_left=30_000,
            seat=ANN_SEAT,
        )
    )
    for seat, commitment in enumerate(commitments):
        if seat == ANN_SEAT:
            seed_commit = m.SeedCommit(commitment=commitment, id=s.new_id())
            referee.receive(seat, s.request(seed_commit))
            s.ok(seed_commit)
        else:
            referee.receive(seat, m.SeedCommit(commitment=commitment))
    s.answer(
        m.ServerSeed(seq=s.push_seq(), game=GAME, seed=referee.server_seed, commitments=commitments)
    )
    events: list[Event] = []
    new_commitments: list[m.PlacementCommitment] = []
    new_openings: list[m.CardOpening] = []

    def push() -> None:
        decision = referee.decision
        s.answer(
            m.GameState(
                seq=s.push_seq(),
                game=GAME,
                view=view(referee.game, ANN_SEAT),
                events=[event_to_data(mask_event(e, ANN_SEAT)) for e in events],
                commitments=tuple(new_commitments),
                openings=tuple(new_openings),
                snapshot=False,
                decision=None
                if decision is None
                else m.Decision(
                    seat=decision.seat,
                    kind=decision.kind,
                    pid=decision.pid,
                    turn=referee.turn,
                    options=[action_to_data(a) for a in decision.options],
                    time_left=TIMER_MS,
                ),
            )
        )
        events.clear()
        new_commitments.clear()
        new_openings.clear()

    def send(seat: int, message: m.Message) -> list[Event]:
        """`seat`'s answer: Ann's over the wire, the bots' inside the server."""
        if seat != ANN_SEAT:
            return referee.receive(seat, message)
        message = dataclasses.replace(message, id=s.new_id())  # type: ignore[type-var]
        s.request(message)
        applied = referee.receive(seat, message)
        s.ok(message)
        return applied

    push()
    while referee.decision is not None:
        decision = referee.decision
        seat = decision.seat
        turn = referee.turn
        if decision.kind == "open":
            assert decision.pid is not None
            opening = secrets[seat].opening(decision.pid)
            if seat == ANN_SEAT:
                s.answer(
                    m.OpenRequest(seq=s.push_seq(), game=GAME, pid=decision.pid, time_left=TIMER_MS)
                )
            events.extend(
                send(seat, m.Open(pid=opening.pid, card=opening.card, nonce=opening.nonce))
            )
            new_openings.append(opening)
            push()
            continue
        assert truth.decision is not None and truth.decision.kind == decision.kind
        action = chooser.choose(truth)
        truth_events = truth.apply(action, seat)
        message: m.Message
        if isinstance(action, Place):
            pid = referee.next_pid
            commitment = secrets[seat].commit(pid, action.card)
            message = m.Place(
                turn=turn, at=action.at, family=_family(action.card), commitment=commitment
            )
            new_commitments.append(m.PlacementCommitment(pid=pid, seat=seat, commitment=commitment))
        elif isinstance(action, Reveal):
            assert decision.pid is not None
            opening = secrets[seat].opening(decision.pid)
            message = m.Reveal(turn=turn, card=opening.card, nonce=opening.nonce)
            new_openings.append(opening)
        else:
            message = m.decision_message(action, turn)
        events.extend(send(seat, message))
        _check_same(truth_events, events, referee.game)
        push()
    assert truth.over and truth.scores == referee.game.scores
    _end(s, secrets, referee)


def _family(card: Card) -> str:
    return FAMILY_NAMES[card.family]


def _check_same(truth_events: list[Event], referee_events: list[Event], referee: Any) -> None:
    """The referee, knowing no hidden card, saw the same game (once opened)."""
    if referee.step == "open":
        return  # the truth went on; the referee waits for an opening
    public = [mask_event(e, None) for e in truth_events]
    tail = [mask_event(e, None) for e in referee_events[-len(public) :]] if public else []
    assert tail == public, (tail, public)


def _end(s: _Session, secrets: list[_Secrets], referee: Referee) -> None:
    """The final reveal: Ann's over the wire, the bots' inside the server; then the check."""
    final_openings: list[m.CardOpening] = []
    for seat in referee.awaited():
        x = secrets[seat]
        hidden = tuple(referee.hidden(seat))
        assert hidden == tuple(sorted(pid for pid in x.cards if pid not in x.opened))
        reveal = m.FinalReveal(seed=x.seed, openings=tuple(x.opening(pid) for pid in hidden))
        if seat == ANN_SEAT:
            s.answer(
                m.FinalRevealRequest(seq=s.push_seq(), game=GAME, pids=hidden, time_left=TIMER_MS)
            )
            reveal = dataclasses.replace(reveal, id=s.new_id())
            s.request(reveal)
            referee.receive(seat, reveal)
            s.ok(reveal)
        else:
            referee.receive(seat, reveal)
        final_openings += reveal.openings
    record = referee.record()
    s.answer(
        m.GameEnd(
            seq=s.push_seq(),
            game=GAME,
            complete=record.results.complete,
            scores=record.results.scores,
            winners=record.results.winners,
            forfeits=tuple(v.seat for v in record.verdicts if not v.ok),
            verification=tuple(
                m.Verdict(seat=v.seat, status=v.status, reason=v.reason) for v in record.verdicts
            ),
            seeds=tuple(
                m.SeatSeed(seat=seat, seed=seed)
                for seat, seed in enumerate(record.seeds)
                if seed is not None
            ),
            openings=tuple(final_openings),
            record_id=GAME.hex(),
        )
    )


# ------------------------------------------------------------------ the document's block


def _first(frames: list[Frame], start: int, test: Any) -> int:
    return next(i for i in range(start, len(frames)) if test(frames[i]))


def excerpt(frames: list[Frame]) -> Iterator[tuple[int, int]]:
    """Ranges of frames worth showing: the start through Ann's first reveal and
    the push after it, her first opening on demand, and the end."""
    first_reveal = _first(frames, 0, lambda f: f.message.TYPE == "reveal")
    after = _first(frames, first_reveal, lambda f: f.message.TYPE == "game_state")
    yield 0, after + 1
    shown = after + 1
    request = next(
        (i for i in range(shown, len(frames)) if frames[i].message.TYPE == "open_request"), None
    )
    if request is not None:
        begin = max(shown, request - 1)
        end = _first(frames, request, lambda f: f.message.TYPE == "game_state") + 1
        yield begin, end
        shown = end
    last_state = max(i for i, f in enumerate(frames) if f.message.TYPE == "game_state")
    yield max(shown, last_state), len(frames)


_VIEW_KEYS = ("round", "step", "next_pid", "scores", "queue")


def _shown(frame: Frame) -> dict[str, Any]:
    data = m.to_data(frame.message)
    if "view" in data:
        v = data["view"]
        data["view"] = {k: v[k] for k in _VIEW_KEYS} | {"…": "…"}
    return data


def render() -> str:
    """The worked example block of docs/PROTOCOL.md."""
    from .catalog import hex_dump, notation

    frames = session()
    out = [
        "Ann connects, creates a 3-player room, seats two server bots, and plays seat 0",
        "(red) to the end. Every frame Ann's connection carries is listed, in order, except",
        "where a line says how many are left out; `game_state` views are cut down to a few",
        'keys (`"…": "…"` stands for the rest, see [Game views](#game-views)). The',
        "commitments, seeds and openings are real: you can check them with your own code.",
        "C→S is Ann's client to the server, S→C the server to Ann.",
        "",
    ]
    shown_until = 0
    for begin, end in excerpt(frames):
        if begin > shown_until:
            skipped = frames[shown_until:begin]
            kinds = sorted({f.message.TYPE for f in skipped})
            out.append(
                f"*… {len(skipped)} frames left out ({', '.join(f'`{k}`' for k in kinds)}) …*\n"
            )
        for number in range(begin, end):
            frame = frames[number]
            arrow = "C→S" if frame.sender == "client" else "S→C"
            out.append(
                f"**{number + 1}.** {arrow} `{frame.message.TYPE}` ({len(frame.data)} bytes)\n"
            )
            out.append("```\n" + notation(_shown(frame), width=100) + "\n```\n")
            if number == 0:
                out.append("On the wire (4-byte length, then the msgpack map):\n")
                out.append("```\n" + hex_dump(frame.data) + "\n```\n")
        shown_until = end
    return "\n".join(out)

"""Whole games against the referee alone, with seats that may misbehave.

The referee tests and the verification tests play games straight against a
`Referee` (no room, no sessions, no bytes): each `LocalSeat` keeps its own
secrets (`LocalSecrets`, the client's `SeatSecrets` with a placement
confirmed as soon as it is made) and answers the referee's decisions with
the message a remote client would send. Tests subclass `LocalSeat` (a seat
that does not answer, that lies...) or `LocalSecrets` (commitments for
another game, forged openings...).

>>> from oriflamme.protocol.verify import verify_record_bytes
>>> verify_record_bytes(play_local_game(2, seed=5)).ok
True
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Sequence

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from oriflamme.client.seat_secrets import SeatSecrets
from oriflamme.engine import (
    CARDS,
    FAMILY_NAMES,
    REVISED,
    STANDARD,
    TWO_PLAYER,
    Card,
    Decision,
    Event,
    Place,
    Reveal,
    Rules,
)
from oriflamme.engine.events import Drew
from oriflamme.protocol import identity, signatures
from oriflamme.protocol import messages as m
from oriflamme.protocol.commitments import Opening, new_nonce
from oriflamme.protocol.record import Record, SeatRecord, encode_record
from oriflamme.server.core import FixedEntropy, Phase, Referee, Refusal, Ruling


class LocalSecrets(SeatSecrets):
    """A seat's secrets, in memory; `place` commits and confirms at once."""

    def __init__(self, rules: Rules, game_id: bytes, seat: int) -> None:
        super().__init__(rules, game_id, seat, nonces=self.new_nonce)

    def new_nonce(self) -> bytes:
        return new_nonce()

    def place(self, pid: int, card: Card) -> bytes:
        """Play `card` as placement `pid`; the commitment to send."""
        commitment = self.commit(pid, card)
        self.confirm(pid)
        return commitment

    @property
    def placed(self) -> dict[int, Opening]:
        """The opening of every placed card, by pid."""
        return {pid: SeatSecrets.opening(self, pid) for pid in self.placed_cards()}

    def final_openings(self, pids: Sequence[int]) -> list[Opening]:
        """The openings of the cards the referee still holds hidden."""
        return [self.opening(pid) for pid in pids]


class LocalSeat:
    """A seat that plays uniformly random legal decisions with its own secrets.

    `answers` says whether the seat answers a decision at all; when it does
    not, `run_local_game` lets its time run out and the referee plays the
    safe default (`Referee.time_out`). Tests subclass it.
    """

    def __init__(
        self, secrets: LocalSecrets, rng: random.Random, key: Ed25519PrivateKey | None = None
    ) -> None:
        self.secrets = secrets
        self.seat = secrets.seat
        self.rng = rng
        self.key = key  # a seat with a key signs what it sends (`signed`)

    def signed(self, message: m.Message) -> m.Message:
        """`message` as this seat sends it: signed if the seat has a key."""
        if self.key is None:
            return message
        return signatures.signed(self.key, self.secrets.game_id, self.seat, message)

    def answers(self, decision: Decision) -> bool:
        """Whether this seat answers `decision` before its time runs out."""
        return True

    def choose_placement(self, options: list[tuple[Card, object]]) -> tuple[Card, object]:
        """Pick (card, at) among the seat's real cards and the public places."""
        return options[int(self.rng.random() * len(options))]

    def play(self, referee: Referee) -> list[Event]:
        """Answer the referee's pending decision (this seat's) as a client would."""
        return list(referee.receive(self.seat, self.signed(self.answer(referee))).events)

    def answer(self, referee: Referee) -> m.Message:
        """The message that answers the referee's pending decision."""
        decision = referee.decision
        assert decision is not None and decision.seat == self.seat
        secrets = self.secrets
        turn = referee.turn
        if decision.kind == "place":
            places = [o for o in decision.options if isinstance(o, Place)]
            options: list[tuple[Card, object]] = [
                (c, p.at)
                for c in dict.fromkeys(secrets.hand)
                for p in places
                if p.card.family == c.family
            ]
            card, at = self.choose_placement(options)
            assert isinstance(at, str | int)
            commitment = secrets.place(referee.next_pid, card)
            return m.PlaceCard(
                turn=turn, at=at, family=FAMILY_NAMES[card.family], commitment=commitment
            )
        if decision.kind == "open":
            assert decision.pid is not None
            o = secrets.opening(decision.pid)
            return m.OpenCard(pid=o.pid, card=o.card, nonce=o.nonce)
        action = decision.options[int(self.rng.random() * len(decision.options))]
        if isinstance(action, Reveal):
            assert decision.pid is not None
            o = secrets.opening(decision.pid)
            return m.RevealCard(turn=turn, card=o.card, nonce=o.nonce)
        return m.decision_message(action, turn)

    def final_reveal(self, pids: Sequence[int]) -> m.FinalReveal:
        """The answer to `final_reveal_request {pids}`."""
        return m.FinalReveal(
            seed=self.secrets.seed, openings=tuple(self.secrets.final_openings(pids))
        )


def phase_of(referee: Referee) -> Phase:
    """`referee.phase`, read afresh. After `assert referee.phase is X`, mypy
    takes `referee.phase` for X until it is assigned, through the calls that
    change it; asserting the next phase through this function keeps it honest."""
    return referee.phase


def start(referee: Referee, seats: Sequence[LocalSeat]) -> None:
    """Every seat commits to its seed and learns the server seed."""
    for s in seats:
        referee.receive(s.seat, s.signed(m.SeedCommit(commitment=s.secrets.seed_commitment)))
    server_seed = referee.server_seed
    assert server_seed is not None
    for s in seats:
        s.secrets.learn_server_seed(server_seed)


def step(referee: Referee, seats: Sequence[LocalSeat]) -> list[Event]:
    """One decision: the seat that owes it answers, or its time runs out."""
    decision = referee.decision
    assert decision is not None
    seat = seats[decision.seat]
    events = seat.play(referee) if seat.answers(decision) else list(referee.time_out().events)
    for event in events:
        if type(event) is Drew:
            seats[event.seat].secrets.draw(len(event.cards))
    return events


def finish(referee: Referee, seats: Sequence[LocalSeat]) -> Record:
    """Play on to the end, then every seat still awaited sends its final reveal."""
    while referee.phase is Phase.PLAYING:
        step(referee, seats)
    for seat in referee.awaited_reveals():
        s = seats[seat]
        with contextlib.suppress(Refusal):
            referee.receive(seat, s.signed(s.final_reveal(referee.hidden(seat))))
    return referee.record()


def forge_first_reveal(referee: Referee, seats: Sequence[LocalSeat]) -> tuple[Ruling, Opening]:
    """Play on to the first reveal, and reveal that card as another of its
    family (signed, if the seat has a key): the ruling, and the seat's real
    opening of that card."""
    while referee.decision is not None and referee.decision.kind != "reveal":
        step(referee, seats)
    d = referee.decision
    assert d is not None and d.pid is not None
    real = seats[d.seat].secrets.opening(d.pid)
    forged = next(c for c in CARDS[real.card.family] if c != real.card)
    lie = m.RevealCard(turn=referee.turn, card=forged, nonce=real.nonce)
    return referee.receive(d.seat, seats[d.seat].signed(lie)), real


def run_local_game(referee: Referee, seats: Sequence[LocalSeat]) -> Record:
    """Play `referee`'s game to its end with `seats` (one per seat, in order)."""
    start(referee, seats)
    return finish(referee, seats)


def new_local_table(
    players: int = 3,
    *,
    variant: str | None = None,
    edition: str = REVISED,
    first_player: int = 0,
    seed: int | None = None,
    names: Sequence[str] | None = None,
    seat_class: type[LocalSeat] = LocalSeat,
    secrets_class: type[LocalSecrets] = LocalSecrets,
    turn_timer: int | None = 60,
    keys: Sequence[Ed25519PrivateKey | None] | None = None,
) -> tuple[Referee, list[LocalSeat]]:
    """A referee and its seats, ready for `run_local_game`. `seed` drives the
    seats' choices and the referee's time-out choices (and with it, its game
    id and server seed); seeds and nonces come from the OS. `keys`: a seat
    with a key signs its decisions; without `keys`, no seat has one (each a
    player without a key: the server signs only what it decides for them)."""
    if variant is None:
        variant = TWO_PLAYER if players == 2 else STANDARD
    rules = Rules(players, variant, edition)
    if names is None:
        names = [f"seat {i}" for i in range(players)]
    referee = Referee(
        rules,
        first_player=first_player,
        seats=[SeatRecord(name) for name in names],
        turn_timer=turn_timer,
        entropy=FixedEntropy(f"local table {seed}") if seed is not None else None,
        keys=None
        if keys is None
        else [None if k is None else identity.public_bytes(k) for k in keys],
    )
    rng = random.Random(seed)
    seats = [
        seat_class(
            secrets_class(rules, referee.game_id, i),
            random.Random(rng.random()),
            None if keys is None else keys[i],
        )
        for i in range(players)
    ]
    return referee, seats


def play_local_game(
    players: int = 3,
    *,
    variant: str | None = None,
    edition: str = REVISED,
    first_player: int = 0,
    seed: int | None = None,
    names: Sequence[str] | None = None,
) -> bytes:
    """Play a whole game against the referee and return its encoded record."""
    referee, seats = new_local_table(
        players, variant=variant, edition=edition, first_player=first_player, seed=seed, names=names
    )
    return encode_record(run_local_game(referee, seats))

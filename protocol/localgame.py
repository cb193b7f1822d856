"""A complete, verifiable game in one process: a referee and its seats, no sockets.

Each `LocalSeat` knows only its own secrets (`SeatSecrets`: its seed, its
deal, the card and nonce behind each of its commitments) and answers the
referee's public decisions with random legal choices, exactly as a remote
client would through the protocol: seed commitment, placements with
commitments, reveals and openings, the final reveal. The result is a game
record that `oriflamme.protocol.verify` accepts.

>>> from oriflamme.protocol.verify import verify_record_bytes
>>> verify_record_bytes(play_local_game(2, seed=5)).ok
True

Tests build dishonest seats by subclassing `SeatSecrets` or `LocalSeat`.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Sequence

from oriflamme.engine import (
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
    SeatDeal,
)
from oriflamme.engine.events import Drew

from . import messages as m
from .commitments import Opening, card_commitment, new_nonce, new_seed, seed_commitment
from .deal import derive_deal
from .record import Record, SeatInfo, encode_record
from .referee import PLAYING, Referee, SeatForfeited


class SeatSecrets:
    """Everything one seat keeps to itself (in memory)."""

    def __init__(self, rules: Rules, game_id: bytes, seat: int) -> None:
        self.rules = rules
        self.game_id = game_id
        self.seat = seat
        self.seed = new_seed()
        self.seed_commitment = seed_commitment(game_id, seat, self.seed)
        self.deal: SeatDeal | None = None
        self.hand: list[Card] = []
        self.draw_pile: list[Card] = []
        self.placed: dict[int, Opening] = {}

    @classmethod
    def resume(
        cls,
        rules: Rules,
        game_id: bytes,
        seat: int,
        seed: bytes,
        server_seed: bytes,
        openings: Sequence[Opening],
        drawn: int = 0,
    ) -> SeatSecrets:
        """Rebuild a seat's secrets in the middle of a game: from its seed, the
        openings of every card it has placed, and how many cards it has drawn
        (`Referee.drawn`). For a server bot taking over a seat (`hand_over`),
        or a client that lost its state but kept its seed and nonces."""
        secrets = cls(rules, game_id, seat)
        secrets.seed = seed
        secrets.seed_commitment = seed_commitment(game_id, seat, seed)
        secrets.learn_server_seed(server_seed)
        secrets.draw(drawn)
        for o in openings:
            secrets.hand.remove(o.card)  # ValueError: not a card this seat could have placed
            secrets.placed[o.pid] = o
        return secrets

    def new_nonce(self) -> bytes:
        return new_nonce()

    def learn_server_seed(self, server_seed: bytes) -> SeatDeal:
        """Derive this seat's deal now that the server seed is public."""
        self.deal = derive_deal(self.rules, self.game_id, self.seat, self.seed, server_seed)
        self.hand = list(self.deal.hand)
        self.draw_pile = list(self.deal.draw_pile)
        return self.deal

    def draw(self, count: int) -> None:
        """The referee says this seat drew `count` cards: the top of its pile."""
        self.hand.extend(self.draw_pile[:count])
        del self.draw_pile[:count]

    def place(self, pid: int, card: Card) -> bytes:
        """Play `card` as placement `pid`; the commitment to send."""
        self.hand.remove(card)
        opening = Opening(pid, card, self.new_nonce())
        self.placed[pid] = opening
        return card_commitment(self.game_id, self.seat, pid, card, opening.nonce)

    def opening(self, pid: int) -> Opening:
        return self.placed[pid]

    def final_openings(self, pids: Sequence[int]) -> list[Opening]:
        """The openings of the cards the referee still holds hidden."""
        return [self.placed[pid] for pid in pids]


class LocalSeat:
    """A seat that plays uniformly random legal decisions with its own secrets.

    `answers` says whether the seat answers a decision at all; when it does
    not, `run_local_game` lets its time run out and the referee plays the
    safe default (`Referee.time_out`: a placement is skipped, a face-down
    card kept...). Tests subclass it to play slow or absent players.
    """

    def __init__(self, secrets: SeatSecrets, rng: random.Random) -> None:
        self.secrets = secrets
        self.seat = secrets.seat
        self.rng = rng

    def answers(self, decision: Decision) -> bool:
        """Whether this seat answers `decision` before its time runs out."""
        return True

    def choose_placement(self, options: list[tuple[Card, object]]) -> tuple[Card, object]:
        """Pick (card, at) among the seat's real cards and the public places."""
        return options[int(self.rng.random() * len(options))]

    def play(self, referee: Referee) -> list[Event]:
        """Answer the referee's pending decision, which is this seat's, with
        the wire message a remote client would send (`Referee.receive`)."""
        return referee.receive(self.seat, self.answer(referee))

    def answer(self, referee: Referee) -> m.Message:
        """The message that answers the referee's pending decision."""
        decision = referee.decision
        assert decision is not None and decision.seat == self.seat
        secrets = self.secrets
        turn = referee.turn
        if decision.kind == "place":
            # The referee offers card backs; each of our cards of that family may go there.
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
            family = FAMILY_NAMES[card.family]
            return m.Place(turn=turn, at=at, family=family, commitment=commitment)
        if decision.kind == "open":
            assert decision.pid is not None
            o = secrets.opening(decision.pid)
            return m.Open(pid=o.pid, card=o.card, nonce=o.nonce)
        action = decision.options[int(self.rng.random() * len(decision.options))]
        if isinstance(action, Reveal):
            assert decision.pid is not None
            o = secrets.opening(decision.pid)
            return m.Reveal(turn=turn, card=o.card, nonce=o.nonce)
        return m.decision_message(action, turn)

    def final_reveal(self, pids: Sequence[int]) -> m.FinalReveal:
        """The answer to `final_reveal_request {pids}`."""
        openings = self.secrets.final_openings(pids)
        return m.FinalReveal(
            seed=self.secrets.seed,
            openings=tuple(m.CardOpening(pid=o.pid, card=o.card, nonce=o.nonce) for o in openings),
        )


def run_local_game(referee: Referee, seats: Sequence[LocalSeat]) -> Record:
    """Play `referee`'s game to its end with `seats` (one per seat, in order)."""
    for s in seats:
        referee.commit_seed(s.seat, s.secrets.seed_commitment)
    server_seed = referee.server_seed
    for s in seats:
        s.secrets.learn_server_seed(server_seed)
    while referee.phase == PLAYING:
        decision = referee.decision
        assert decision is not None
        seat = seats[decision.seat]
        try:
            events = seat.play(referee) if seat.answers(decision) else referee.time_out()
        except SeatForfeited as forfeited:
            # A failed opening: the server answered in the seat's place, play goes on.
            events = forfeited.events
        for event in events:
            if type(event) is Drew:
                seats[event.seat].secrets.draw(len(event.cards))
    for s in seats:
        # A failed check is recorded by the referee, and the game goes on to its record.
        with contextlib.suppress(SeatForfeited):
            referee.receive(s.seat, s.final_reveal(referee.hidden(s.seat)))
    return referee.record()


def new_local_table(
    players: int = 3,
    *,
    variant: str | None = None,
    edition: str = REVISED,
    first_player: int = 0,
    seed: int | None = None,
    names: Sequence[str] | None = None,
    seat_class: type[LocalSeat] = LocalSeat,
    secrets_class: type[SeatSecrets] = SeatSecrets,
) -> tuple[Referee, list[LocalSeat]]:
    """A referee and its seats, ready for `run_local_game`. `seed` drives the
    seats' choices (and the referee's time-out defaults) only: seeds and
    nonces always come from `secrets`."""
    if variant is None:
        variant = TWO_PLAYER if players == 2 else STANDARD
    rules = Rules(players, variant, edition)
    if names is None:
        names = [f"seat {i}" for i in range(players)]
    seat_infos = [SeatInfo(name, bot=True) for name in names]
    referee = Referee(rules, first_player=first_player, seats=seat_infos)
    rng = random.Random(seed)
    seats = [
        seat_class(secrets_class(rules, referee.game_id, i), random.Random(rng.random()))
        for i in range(players)
    ]
    referee.rng = random.Random(rng.random())
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
    """Play a whole game in-process and return its encoded record.

    `variant` defaults to the 2-player variant for 2 players, else standard.
    """
    referee, seats = new_local_table(
        players, variant=variant, edition=edition, first_player=first_player, seed=seed, names=names
    )
    return encode_record(run_local_game(referee, seats))

"""Shared helpers for the fairness tests: games against the referee, honest or
with one dishonest seat, and record tampering."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import msgpack

from oriflamme.client.seat_secrets import SeatSecrets
from oriflamme.engine import STANDARD, TWO_PLAYER, Card, Rules
from oriflamme.protocol import messages as m
from oriflamme.protocol.commitments import Opening
from oriflamme.protocol.record import Record, SeatRecord, decode_record, record_to_data
from oriflamme.server.core import FixedEntropy, Referee
from tests.server.local_referee import LocalSeat, LocalSecrets, new_local_table, run_local_game

# Honest games the suite plays: every table size and variant, both editions.
TABLES = [
    (2, "first"),
    (2, "revised"),
    (3, "revised"),
    (3, "first"),
    (4, "revised"),
    (5, "first"),
    (5, "revised"),
]


def play(
    players: int = 3,
    *,
    seed: int = 0,
    edition: str = "revised",
    cheater: int | None = None,
    seat_class: type[LocalSeat] = LocalSeat,
    secrets_class: type[LocalSecrets] = LocalSecrets,
) -> Record:
    """A whole game; seat `cheater` (if any) uses the given classes."""
    referee, seats = new_local_table(players, edition=edition, seed=seed)
    if cheater is not None:
        secrets = secrets_class(referee.rules, referee.game_id, cheater)
        seats[cheater] = seat_class(secrets, random.Random(seed))
    return run_local_game(referee, seats)


class FixedSecrets(LocalSecrets):
    """A seat's secrets drawn from a generator seeded by the game id and the
    seat, not from the OS: with `fixed_table`, a whole game (deals included)
    is the same on every run, so a test can rely on what happens in it."""

    def __init__(self, rules: Rules, game_id: bytes, seat: int) -> None:
        self._rng = random.Random(game_id + bytes([seat]))
        SeatSecrets.__init__(
            self, rules, game_id, seat, seed=self._rng.randbytes(32), nonces=self.new_nonce
        )

    def new_nonce(self) -> bytes:
        return self._rng.randbytes(32)


def fixed_table(
    players: int = 3,
    *,
    seed: int = 0,
    seat_class: type[LocalSeat] = LocalSeat,
    special: int | None = None,
    turn_timer: int | None = 60,
) -> tuple[Referee, list[LocalSeat]]:
    """A table that plays the same game on every run for a given `seed`: the
    referee's game id, server seed and time-out choices from a `FixedEntropy`,
    `FixedSecrets`, seeded choices. Seat `special` (every seat if None) is a
    `seat_class`, the others `LocalSeat`s."""
    rng = random.Random(seed)
    rules = Rules(players, TWO_PLAYER if players == 2 else STANDARD)
    referee = Referee(
        rules,
        seats=[SeatRecord(f"seat {i}") for i in range(players)],
        turn_timer=turn_timer,
        entropy=FixedEntropy(f"fixed table {seed}"),
    )
    seats = [
        (seat_class if special in (None, i) else LocalSeat)(
            FixedSecrets(rules, referee.game_id, i), random.Random(rng.random())
        )
        for i in range(players)
    ]
    return referee, seats


class PreferringSeat(LocalSeat):
    """Places the cards in `secrets.preferred` first, whenever it can."""

    secrets: Any

    def choose_placement(self, options: list[tuple[Card, object]]) -> tuple[Card, object]:
        preferred = [o for o in options if o[0] in self.secrets.preferred]
        return super().choose_placement(preferred or options)


class CheatingSecrets(LocalSecrets):
    """Secrets whose hand a cheat may rig: `rig` changes `cards` (the hand, a
    list that may hold a card twice) and `pile` (the draw pile still to draw)
    once the deal is known; placing a card takes it from `cards`, drawing
    moves the top of `pile` to `cards`. `preferred`: the cards a
    `PreferringSeat` places first."""

    preferred: list[Card]

    def learn_server_seed(self, server_seed: bytes) -> None:
        super().learn_server_seed(server_seed)
        assert self.deal is not None
        self.cards = list(self.deal.hand)
        self.pile = list(self.deal.draw_pile)
        self.preferred = []
        self.rig()

    def rig(self) -> None:
        """Change `cards`, `pile` and `preferred` (the honest deal by default)."""

    @property
    def hand(self) -> list[Card]:
        return list(self.cards)

    def draw(self, count: int) -> None:
        super().draw(count)
        self.cards.extend(self.pile[:count])
        del self.pile[:count]

    def place(self, pid: int, card: Card) -> bytes:
        commitment = super().place(pid, card)
        self.cards.remove(card)
        return commitment


def tamper(data: bytes, change: Callable[[dict[str, Any]], object]) -> bytes:
    """The record with `change` applied to its plain map."""
    plain = record_to_data(decode_record(data))
    change(plain)
    return msgpack.packb(plain, use_bin_type=True)


def flip(b: bytes) -> bytes:
    """`b` with its first bit flipped."""
    return bytes([b[0] ^ 1]) + b[1:]


def all_openings(record: Record) -> list[tuple[int, Opening]]:
    """(seat, opening) for every opening in the record, mid-game and final."""
    out = [
        (e.seat, Opening(e.pid, e.action.card, e.nonce))  # type: ignore[arg-type]
        for e in record.log
        if e.nonce is not None
    ]
    for seat, finals in enumerate(record.final_openings):
        out.extend((seat, o) for o in finals or ())
    return out


class BotSecrets(LocalSecrets):
    """`LocalSecrets` that `SeatSecrets.resume` can rebuild: the secrets of a
    server bot that took a seat over (`hand_over`)."""

    def __init__(
        self, rules: Rules, game_id: bytes, seat: int, *, seed: bytes | None = None
    ) -> None:
        SeatSecrets.__init__(self, rules, game_id, seat, seed=seed, nonces=self.new_nonce)


def bot_for(referee: Referee, seat: int, message: m.HandOver, rng: random.Random) -> LocalSeat:
    """The server bot that plays `seat` after its honest `hand_over` `message`."""
    server_seed = referee.server_seed
    assert server_seed is not None
    secrets = BotSecrets.resume(
        referee.rules,
        referee.game_id,
        seat,
        seed=message.seed,
        server_seed=server_seed,
        openings=[*referee.opened_by(seat), *message.openings],
        drawn=referee.drawn(seat),
    )
    assert isinstance(secrets, BotSecrets)
    return LocalSeat(secrets, rng)

"""Shared helpers for the fairness tests: in-process games, honest or with one
dishonest seat, and record tampering."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import msgpack

from oriflamme.engine import STANDARD, TWO_PLAYER, Card, Rules
from oriflamme.protocol.commitments import Opening, seed_commitment
from oriflamme.protocol.localgame import LocalSeat, SeatSecrets, new_local_table, run_local_game
from oriflamme.protocol.record import Record, SeatInfo, decode_record, record_to_data
from oriflamme.protocol.referee import Referee

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
    secrets_class: type[SeatSecrets] = SeatSecrets,
) -> Record:
    """A whole game; seat `cheater` (if any) uses the given classes."""
    referee, seats = new_local_table(players, edition=edition, seed=seed)
    if cheater is not None:
        secrets = secrets_class(referee.rules, referee.game_id, cheater)
        seats[cheater] = seat_class(secrets, random.Random(seed))
    return run_local_game(referee, seats)


class FixedSecrets(SeatSecrets):
    """A seat's secrets drawn from a generator seeded by the game id and the
    seat, not from the OS: with `fixed_table`, a whole game (deals included)
    is the same on every run, so a test can rely on what happens in it."""

    def __init__(self, rules: Rules, game_id: bytes, seat: int) -> None:
        super().__init__(rules, game_id, seat)
        self._rng = random.Random(game_id + bytes([seat]))
        self.seed = self._rng.randbytes(32)
        self.seed_commitment = seed_commitment(game_id, seat, self.seed)

    def new_nonce(self) -> bytes:
        return self._rng.randbytes(32)


def fixed_table(
    players: int = 3,
    *,
    seed: int = 0,
    seat_class: type[LocalSeat] = LocalSeat,
    special: int | None = None,
) -> tuple[Referee, list[LocalSeat]]:
    """A table that plays the same game on every run for a given `seed`: fixed
    game id and server seed, `FixedSecrets`, seeded choices. Seat `special`
    (every seat if None) is a `seat_class`, the others `LocalSeat`s."""
    rng = random.Random(seed)
    rules = Rules(players, TWO_PLAYER if players == 2 else STANDARD)
    referee = Referee(
        rules,
        seats=[SeatInfo(f"seat {i}", bot=True) for i in range(players)],
        game_id=rng.randbytes(16),
        server_seed=rng.randbytes(32),
        rng=random.Random(rng.random()),
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


class CheatingSecrets(SeatSecrets):
    preferred: list[Card] = []


def tamper(data: bytes, change: Callable[[dict[str, Any]], object]) -> bytes:
    """The record with `change` applied to its plain map."""
    plain = record_to_data(decode_record(data))
    change(plain)
    return msgpack.packb(plain, use_bin_type=True)  # type: ignore[no-any-return]


def flip(b: bytes) -> bytes:
    """`b` with its first bit flipped."""
    return bytes([b[0] ^ 1]) + b[1:]


def all_openings(record: Record) -> list[tuple[int, Opening]]:
    """(seat, opening) for every opening in the record, mid-game and final."""
    out = [
        (e.seat, Opening(e.pid, e.action.card, e.nonce))  # type: ignore[union-attr, arg-type]
        for e in record.log
        if e.nonce is not None
    ]
    for seat, finals in enumerate(record.final_openings):
        out.extend((seat, o) for o in finals or ())
    return out

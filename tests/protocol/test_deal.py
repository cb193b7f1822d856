"""The fair deal: the HMAC stream, rejection sampling, Fisher-Yates, the layout."""

from __future__ import annotations

import hashlib
import hmac
import struct

import pytest

from oriflamme.engine import KINDS, Kind, Rules
from oriflamme.protocol.deal import (
    DealStream,
    derive_deal,
    derive_orders,
    shuffle_kinds,
    stream_block,
    stream_message,
)

GAME = bytes(range(16))
CLIENT = hashlib.sha256(b"client").digest()
SERVER = hashlib.sha256(b"server").digest()


def lp(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


class FixedStream(DealStream):
    """A stream that yields given bytes, to test the sampling on its own."""

    def __init__(self, data: bytes) -> None:
        super().__init__(CLIENT, GAME, 0, SERVER)
        self._data = iter(data)

    def next_byte(self) -> int:
        self.consumed += 1
        return next(self._data)


def test_stream_block_is_hmac_keyed_by_the_client_seed() -> None:
    message = (
        lp(b"oriflamme/v1/deal-stream")
        + lp(b"\x00\x01")
        + lp(GAME)
        + lp(b"\x03")
        + lp(SERVER)
        + lp(struct.pack(">I", 5))
    )
    assert stream_message(GAME, 3, SERVER, 5) == message
    assert (
        stream_block(CLIENT, GAME, 3, SERVER, 5)
        == hmac.new(CLIENT, message, hashlib.sha256).digest()
    )


def test_the_stream_is_the_blocks_in_counter_order() -> None:
    stream = DealStream(CLIENT, GAME, 1, SERVER)
    read = bytes(stream.next_byte() for _ in range(70))
    blocks = b"".join(stream_block(CLIENT, GAME, 1, SERVER, i) for i in range(3))
    assert read == blocks[:70]
    assert stream.consumed == 70


@pytest.mark.parametrize(
    "n, data, expected, rejected",
    [
        (10, bytes([3]), 3, 0),
        (10, bytes([249]), 9, 0),  # 249 = 24 * 10 + 9: the last accepted byte
        (10, bytes([250, 255, 17]), 7, 2),  # 250..255 would favour 0..5
        (9, bytes([252, 251]), 8, 1),  # 252 = 256 - 256 % 9 is the first rejected
        (8, bytes([255]), 7, 0),  # 8 divides 256: nothing is rejected
        (2, bytes([255]), 1, 0),
        (256, bytes([200]), 200, 0),
    ],
)
def test_rejection_sampling(n: int, data: bytes, expected: int, rejected: int) -> None:
    stream = FixedStream(data)
    assert stream.below(n) == expected
    assert stream.rejected == rejected
    assert stream.consumed == len(data)


def test_below_refuses_impossible_ranges() -> None:
    with pytest.raises(ValueError):
        FixedStream(b"").below(0)
    with pytest.raises(ValueError):
        FixedStream(b"").below(257)


def test_fisher_yates_swaps_from_the_end() -> None:
    # Every draw 0: i=9 swaps with 0, then i=8 with 0, ... : a rotation.
    order = shuffle_kinds(FixedStream(bytes(9)))
    assert [k.value for k in order] == [1, 2, 3, 4, 5, 6, 7, 8, 9, 0]
    # Every draw j = i: nothing moves.
    identity = bytes(range(9, 0, -1))
    assert shuffle_kinds(FixedStream(identity)) == tuple(KINDS)


def test_orders_are_permutations_one_per_family() -> None:
    standard = derive_orders(Rules(4), GAME, 2, CLIENT, SERVER)
    two = derive_orders(Rules(2, "two-player"), GAME, 1, CLIENT, SERVER)
    assert len(standard) == 1 and len(two) == 2
    for order in standard + two:
        assert sorted(order) == list(Kind)


def test_the_second_family_continues_the_stream() -> None:
    orders = derive_orders(Rules(2, "two-player"), GAME, 0, CLIENT, SERVER)
    stream = DealStream(CLIENT, GAME, 0, SERVER)
    assert orders == (shuffle_kinds(stream), shuffle_kinds(stream))
    # The standard game's only family is the first order of the same stream.
    assert derive_orders(Rules(3), GAME, 0, CLIENT, SERVER)[0] == orders[0]


@pytest.mark.parametrize(
    "args",
    [
        (bytes(range(1, 17)), 0, CLIENT, SERVER),  # another game
        (GAME, 1, CLIENT, SERVER),  # another seat
        (GAME, 0, SERVER, CLIENT),  # seeds swapped
        (GAME, 0, CLIENT, hashlib.sha256(b"other").digest()),  # another server seed
    ],
)
def test_every_input_changes_the_deal(args: tuple[bytes, int, bytes, bytes]) -> None:
    base = derive_orders(Rules(3), GAME, 0, CLIENT, SERVER)
    game_id, seat, client, server = args
    assert derive_orders(Rules(3), game_id, seat, client, server) != base


def test_seeds_are_not_xor_combined() -> None:
    # With XOR, (a ^ m, b ^ m) would give the same stream as (a, b): the last
    # seed chosen could cancel the others.
    mask = bytes([0x5A] * 32)
    client = bytes(x ^ y for x, y in zip(CLIENT, mask, strict=True))
    server = bytes(x ^ y for x, y in zip(SERVER, mask, strict=True))
    assert stream_block(client, GAME, 0, server, 0) != stream_block(CLIENT, GAME, 0, SERVER, 0)


def test_standard_layout() -> None:
    rules = Rules(3)
    order = derive_orders(rules, GAME, 1, CLIENT, SERVER)[0]
    deal = derive_deal(rules, GAME, 1, CLIENT, SERVER)
    assert [c.kind for c in deal.set_aside] == list(order[:3])
    assert [c.kind for c in deal.hand] == list(order[3:])
    assert {c.family for c in deal.hand + deal.set_aside} == {1}
    assert deal.draw_pile == ()


def test_two_player_layout() -> None:
    rules = Rules(2, "two-player")
    a, b = derive_orders(rules, GAME, 1, CLIENT, SERVER)
    deal = derive_deal(rules, GAME, 1, CLIENT, SERVER)
    fa, fb = rules.families[1]
    assert [(c.family, c.kind) for c in deal.set_aside] == [(fa, k) for k in a[:3]] + [
        (fb, k) for k in b[:3]
    ]
    assert [(c.family, c.kind) for c in deal.hand] == [(fa, k) for k in a[3:6]] + [
        (fb, k) for k in b[3:6]
    ]
    pile = [(c.family, c.kind) for c in deal.draw_pile]
    assert pile == [
        x
        for pair in zip([(fa, k) for k in a[6:]], [(fb, k) for k in b[6:]], strict=True)
        for x in pair
    ]


def test_bad_inputs_raise() -> None:
    rules = Rules(3)
    for args in [
        (rules, GAME, 3, CLIENT, SERVER),  # no seat 3 at a 3-player table
        (rules, GAME, 0, CLIENT[:31], SERVER),
        (rules, GAME, 0, CLIENT, SERVER + b"x"),
        (rules, GAME[:8], 0, CLIENT, SERVER),
    ]:
        with pytest.raises(ValueError):
            derive_deal(*args)


def test_shuffles_are_uniform_enough() -> None:
    """Chi-square over (position, kind) for 20,000 shuffles from fixed seeds.

    Deterministic (no flake). Under uniformity the statistic has 81 degrees
    of freedom (mean 81, sd 12.7); 150 is about 5 sd above. The same test
    on the rejected bytes counts them: about 7.8% of shuffles reject one.
    """
    n = 20_000
    counts = [[0] * 10 for _ in range(10)]
    first_draws = [0] * 10
    rejecting = 0
    for i in range(n):
        client = hashlib.sha256(b"uniformity %d" % i).digest()
        stream = DealStream(client, GAME, i % 5, SERVER)
        order = shuffle_kinds(stream)
        rejecting += stream.rejected > 0
        for position, kind in enumerate(order):
            counts[position][kind] += 1
        first_draws[order[9]] += 1
    expected = n / 10
    chi2 = sum((c - expected) ** 2 / expected for row in counts for c in row)
    assert chi2 < 150, chi2
    # The last position is decided by the first draw alone (n=10, the most rejected).
    chi2_first = sum((c - expected) ** 2 / expected for c in first_draws)
    assert chi2_first < 35, chi2_first  # 9 degrees of freedom: p < 1e-4 above 35
    # 1 - (250/256)(252/256)(252/256)(255/256)(255/256)(252/256)... ~ 7.6%
    assert 0.06 < rejecting / n < 0.095

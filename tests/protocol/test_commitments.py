"""Card and seed commitments: the exact bytes hashed, context binding, openings, the ledger."""

from __future__ import annotations

import hashlib
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oriflamme.engine import CARDS, card
from oriflamme.protocol import commitments
from oriflamme.protocol.commitments import (
    SERVER_SEAT,
    CommitmentLedger,
    OpeningError,
    card_commitment,
    card_preimage,
    encode_fields,
    opening_matches,
    seed_commitment,
    seed_matches,
    seed_preimage,
)

GAME = bytes(range(16))
OTHER_GAME = bytes(range(1, 17))
NONCE = bytes(range(100, 132))
SEED = bytes(range(50, 82))
RED_SPY = card("red", "spy")


def lp(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def test_card_preimage_is_the_documented_layout() -> None:
    expected = (
        lp(b"oriflamme/v1/card-commitment")
        + lp(b"\x00\x01")  # version 1, 2 bytes
        + lp(GAME)
        + lp(b"\x02")  # seat 2, 1 byte
        + lp(b"\x00\x00\x01\x2c")  # pid 300, 4 bytes
        + lp(b"green")
        + lp(b"royal_decree")
        + lp(NONCE)
    )
    c = card("green", "royal_decree")
    assert card_preimage(GAME, 2, 300, c, NONCE) == expected
    assert card_commitment(GAME, 2, 300, c, NONCE) == hashlib.sha256(expected).digest()


def test_seed_preimage_is_the_documented_layout() -> None:
    expected = (
        lp(b"oriflamme/v1/seed-commitment") + lp(b"\x00\x01") + lp(GAME) + lp(b"\x04") + lp(SEED)
    )
    assert seed_preimage(GAME, 4, SEED) == expected
    assert seed_commitment(GAME, 4, SEED) == hashlib.sha256(expected).digest()


def test_server_seed_uses_seat_255() -> None:
    server = seed_commitment(GAME, SERVER_SEAT, SEED)
    assert SERVER_SEAT == 255
    assert (
        server
        == hashlib.sha256(
            lp(b"oriflamme/v1/seed-commitment")
            + lp(b"\x00\x01")
            + lp(GAME)
            + lp(b"\xff")
            + lp(SEED)
        ).digest()
    )
    assert seed_matches(server, GAME, SERVER_SEAT, SEED)
    assert not seed_matches(server, GAME, 0, SEED)


@pytest.mark.parametrize(
    "change",
    [
        {"game_id": OTHER_GAME},
        {"seat": 1},
        {"pid": 8},
        {"card": card("red", "soldier")},
        {"card": card("blue", "spy")},
        {"nonce": bytes(32)},
    ],
    ids=["game", "seat", "pid", "kind", "family", "nonce"],
)
def test_every_context_field_changes_the_commitment(change: dict[str, object]) -> None:
    base: dict[str, object] = {
        "game_id": GAME,
        "seat": 0,
        "pid": 7,
        "card": RED_SPY,
        "nonce": NONCE,
    }
    c = card_commitment(**base)  # type: ignore[arg-type]
    other = {**base, **change}
    assert card_commitment(**other) != c  # type: ignore[arg-type]
    assert not opening_matches(c, **other)  # type: ignore[arg-type]
    assert opening_matches(c, **base)  # type: ignore[arg-type]


def test_the_card_tag_separates_card_and_seed_commitments() -> None:
    # Same trailing bytes, different tags: a seed commitment never opens as a card.
    assert card_preimage(GAME, 0, 0, RED_SPY, NONCE)[:32] != seed_preimage(GAME, 0, SEED)[:32]


def test_seed_commitment_binds_game_and_seat() -> None:
    c = seed_commitment(GAME, 1, SEED)
    assert seed_matches(c, GAME, 1, SEED)
    assert not seed_matches(c, OTHER_GAME, 1, SEED)
    assert not seed_matches(c, GAME, 2, SEED)
    assert not seed_matches(c, GAME, 1, bytes(32))


@pytest.mark.parametrize(
    "args",
    [
        (bytes(15), 0, 0, RED_SPY, NONCE),  # short game id
        (GAME, 5, 0, RED_SPY, NONCE),  # no seat 5
        (GAME, 255, 0, RED_SPY, NONCE),  # the server places no card
        (GAME, 0, -1, RED_SPY, NONCE),
        (GAME, 0, 2**32, RED_SPY, NONCE),
        (GAME, 0, 0, card("red", None), NONCE),  # a card back
        (GAME, 0, 0, RED_SPY, bytes(31)),
    ],
)
def test_bad_card_commitment_inputs_raise(args: tuple) -> None:
    with pytest.raises(ValueError):
        card_commitment(*args)
    # ... and an opening built from them never matches.
    assert not opening_matches(bytes(32), *args)


def test_bad_seed_inputs_raise() -> None:
    for args in [(GAME, 0, bytes(31)), (bytes(17), 0, SEED), (GAME, 7, SEED)]:
        with pytest.raises(ValueError):
            seed_commitment(*args)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=40), max_size=6), st.lists(st.binary(max_size=40), max_size=6))
def test_the_encoding_is_injective(a: list[bytes], b: list[bytes]) -> None:
    if a != b:
        assert encode_fields(*a) != encode_fields(*b)


def test_randomness_comes_from_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    def token_bytes(n: int) -> bytes:
        calls.append(n)
        return bytes(n)

    monkeypatch.setattr(commitments.secrets, "token_bytes", token_bytes)
    assert commitments.new_nonce() == bytes(32)
    assert commitments.new_seed() == bytes(32)
    assert commitments.new_game_id() == bytes(16)
    assert calls == [32, 32, 16]


def test_comparison_is_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[bytes, bytes]] = []
    real = commitments.hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        seen.append((a, b))
        return real(a, b)

    monkeypatch.setattr(commitments.hmac, "compare_digest", spy)
    c = card_commitment(GAME, 0, 0, RED_SPY, NONCE)
    assert opening_matches(c, GAME, 0, 0, RED_SPY, NONCE)
    assert seen == [(c, c)]


# ---------------------------------------------------------------- the ledger


def ledger_with(*cards: tuple[int, int, object, bytes]) -> CommitmentLedger:
    """A ledger with placements (seat, pid, card, nonce) committed honestly."""
    book = CommitmentLedger(GAME)
    for seat, pid, c, nonce in cards:
        book.commit(seat, pid, c.family, card_commitment(GAME, seat, pid, c, nonce))  # type: ignore[attr-defined, arg-type]
    return book


def test_ledger_accepts_honest_openings() -> None:
    book = ledger_with((0, 0, RED_SPY, NONCE), (1, 1, card("blue", "lord"), SEED))
    assert book.hidden(0) == [0] and book.hidden(1) == [1]
    book.open(0, 0, RED_SPY, NONCE)
    assert book.hidden(0) == [] and book.hidden(1) == [1]
    assert [o.card for o in book.openings(0)] == [RED_SPY]


@pytest.mark.parametrize(
    "seat, pid, c, nonce, reason",
    [
        (0, 5, RED_SPY, NONCE, "card 5 was never placed"),
        (1, 0, RED_SPY, NONCE, "card 0 is seat 0's, not seat 1's"),
        (
            0,
            0,
            card("blue", "spy"),
            NONCE,
            "card 0 was placed as a red card, but was opened as blue spy",
        ),
        (0, 0, card("red", "lord"), NONCE, "opening of card 0 does not match its commitment"),
        (0, 0, RED_SPY, bytes(32), "opening of card 0 does not match its commitment"),
        (0, 0, card("red", None), NONCE, "the opening of card 0 does not name a card"),
        (0, 0, RED_SPY, b"short", "the nonce of card 0 is not 32 bytes"),
    ],
)
def test_ledger_refuses_bad_openings(
    seat: int, pid: int, c: object, nonce: bytes, reason: str
) -> None:
    book = ledger_with((0, 0, RED_SPY, NONCE))
    with pytest.raises(OpeningError) as err:
        book.open(seat, pid, c, nonce)  # type: ignore[arg-type]
    assert str(err.value) == reason
    assert err.value.seat == seat and err.value.pid == pid
    assert book.hidden(0) == [0]  # nothing recorded


def test_ledger_refuses_a_second_opening_of_a_card() -> None:
    book = ledger_with((0, 0, RED_SPY, NONCE))
    book.open(0, 0, RED_SPY, NONCE)
    with pytest.raises(OpeningError, match="card 0 is already open"):
        book.open(0, 0, RED_SPY, NONCE)


def test_ledger_detects_a_card_played_twice() -> None:
    # Two commitments to the same card: each opens, but the second is a duplicate.
    book = ledger_with((0, 0, RED_SPY, NONCE), (0, 3, RED_SPY, SEED))
    book.open(0, 0, RED_SPY, NONCE)
    with pytest.raises(OpeningError, match="card 3 is red spy, already played as card 0"):
        book.open(0, 3, RED_SPY, SEED)


def test_ledger_detects_a_reused_nonce() -> None:
    book = ledger_with((2, 0, card("green", "heir"), NONCE), (2, 1, card("green", "lord"), NONCE))
    book.open(2, 0, card("green", "heir"), NONCE)
    with pytest.raises(OpeningError, match="card 1 reuses the nonce of card 0"):
        book.open(2, 1, card("green", "lord"), NONCE)


def test_ledger_refuses_bad_commitments() -> None:
    book = CommitmentLedger(GAME)
    with pytest.raises(ValueError):
        book.commit(0, 0, 0, bytes(31))
    with pytest.raises(ValueError):
        book.commit(9, 0, 0, bytes(32))
    book.commit(0, 0, 0, bytes(32))
    with pytest.raises(ValueError, match="already committed"):
        book.commit(1, 0, 1, bytes(32))


def test_every_card_opens_only_itself() -> None:
    commitments_by_card = {c: card_commitment(GAME, 0, 4, c, NONCE) for fam in CARDS for c in fam}
    assert len(set(commitments_by_card.values())) == 50
    c = commitments_by_card[RED_SPY]
    assert [x for x in commitments_by_card if opening_matches(c, GAME, 0, 4, x, NONCE)] == [RED_SPY]

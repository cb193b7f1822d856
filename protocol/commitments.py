"""Commitments: the canonical encoding that is hashed, card and seed commitments, openings.

How this works
--------------
Everything this module hashes is a sequence of *fields*. Each field is written
as a 4-byte big-endian length followed by exactly that many bytes, so no two
different field sequences can encode to the same bytes. Integers are written
big-endian at a fixed width (version 2 bytes, seat 1 byte, placement id 4
bytes) and still carry their length prefix: every field looks the same.

A card commitment is SHA-256 over the fields

    b"oriflamme/v1/card-commitment", version, game id (16 bytes), seat,
    placement id (the engine's pid), family name, kind name (ASCII, as in
    the plain data ``["red", "soldier"]``), nonce (32 random bytes)

and a seed commitment is SHA-256 over

    b"oriflamme/v1/seed-commitment", version, game id, seat, seed (32 bytes)

with seat 255 (`SERVER_SEAT`) for the server's own seed. The domain tag and
the context (game, seat, placement) make a commitment worthless anywhere else:
it cannot be replayed in another game, by another seat or for another slot.
The random nonce hides the card (there are only 50 cards to try).

Openings are checked in constant time (`hmac.compare_digest`), and a
`CommitmentLedger` keeps the referee's book of one game: who committed what
for which placement, which cards each seat has opened, and which nonces.

>>> from oriflamme.engine import card
>>> game_id = bytes(16)
>>> nonce = bytes(range(32))
>>> c = card_commitment(game_id, 0, 3, card("red", "soldier"), nonce)
>>> len(c), opening_matches(c, game_id, 0, 3, card("red", "soldier"), nonce)
(32, True)
>>> opening_matches(c, game_id, 1, 3, card("red", "soldier"), nonce)  # another seat
False
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from oriflamme.engine import FAMILY_NAMES, Card

# The protocol version, defined here once: the handshake speaks it
# (`messages.SUPPORTED_VERSIONS`), every hash preimage and deal stream carries
# it, and game records are stamped with it.
PROTOCOL_VERSION = 1
# Sizes shared by the hashes and the wire (`messages` imports them from here).
GAME_ID_SIZE = 16
NONCE_SIZE = 32
SEED_SIZE = 32
COMMITMENT_SIZE = 32
MAX_SEATS = 5
# The seat number under which the server commits to its own seed. Player
# seats are 0-4, so the two can never be confused.
SERVER_SEAT = 255
MAX_PID = 2**32 - 1

CARD_TAG = b"oriflamme/v1/card-commitment"
SEED_TAG = b"oriflamme/v1/seed-commitment"


# ---------------------------------------------------------------- encoding


def field(data: bytes) -> bytes:
    """One field of the canonical encoding: 4-byte big-endian length, then the bytes.

    >>> field(b"red").hex()
    '00000003726564'
    """
    return len(data).to_bytes(4, "big") + data


def encode_fields(*fields: bytes) -> bytes:
    """The canonical encoding of a sequence of fields."""
    return b"".join(field(f) for f in fields)


def uint(value: int, width: int) -> bytes:
    """An unsigned integer, big-endian, exactly `width` bytes."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"an integer is needed, not {value!r}")
    if not 0 <= value < 1 << (8 * width):
        raise ValueError(f"{value} does not fit in {width} byte(s)")
    return value.to_bytes(width, "big")


def require_bytes(name: str, value: object, size: int) -> bytes:
    if not isinstance(value, bytes) or len(value) != size:
        got = f"{len(value)} bytes" if isinstance(value, bytes) else type(value).__name__
        raise ValueError(f"{name} is {size} bytes, not {got}")
    return value


def require_seat(seat: int, *, server: bool = False) -> int:
    if isinstance(seat, bool) or not isinstance(seat, int):
        raise ValueError(f"a seat is an integer, not {seat!r}")
    if not (0 <= seat < MAX_SEATS or (server and seat == SERVER_SEAT)):
        raise ValueError(f"no seat {seat}")
    return seat


def card_preimage(game_id: bytes, seat: int, pid: int, card: Card, nonce: bytes) -> bytes:
    """The exact bytes hashed for a card commitment (see the module docstring)."""
    require_bytes("a game id", game_id, GAME_ID_SIZE)
    require_seat(seat)
    if card.kind is None:
        raise ValueError("a commitment is to a known card, not a card back")
    require_bytes("a nonce", nonce, NONCE_SIZE)
    return encode_fields(
        CARD_TAG,
        uint(PROTOCOL_VERSION, 2),
        game_id,
        uint(seat, 1),
        uint(pid, 4),
        FAMILY_NAMES[card.family].encode("ascii"),
        card.kind.label.encode("ascii"),
        nonce,
    )


def card_commitment(game_id: bytes, seat: int, pid: int, card: Card, nonce: bytes) -> bytes:
    """SHA-256 of `card_preimage`: what a seat sends when it places `card`."""
    return hashlib.sha256(card_preimage(game_id, seat, pid, card, nonce)).digest()


def seed_preimage(game_id: bytes, seat: int, seed: bytes) -> bytes:
    """The exact bytes hashed for a seed commitment; `seat` is `SERVER_SEAT`
    for the server's seed."""
    require_bytes("a game id", game_id, GAME_ID_SIZE)
    require_seat(seat, server=True)
    require_bytes("a seed", seed, SEED_SIZE)
    return encode_fields(SEED_TAG, uint(PROTOCOL_VERSION, 2), game_id, uint(seat, 1), seed)


def seed_commitment(game_id: bytes, seat: int, seed: bytes) -> bytes:
    """SHA-256 of `seed_preimage`: a seat's (or the server's) commitment to its seed."""
    return hashlib.sha256(seed_preimage(game_id, seat, seed)).digest()


# ---------------------------------------------------------------- randomness


def new_nonce() -> bytes:
    """32 bytes from the operating system's CSPRNG, for one card commitment."""
    return secrets.token_bytes(NONCE_SIZE)


def new_seed() -> bytes:
    """32 bytes from the operating system's CSPRNG: a client or server seed."""
    return secrets.token_bytes(SEED_SIZE)


def new_game_id() -> bytes:
    """16 random bytes naming a game."""
    return secrets.token_bytes(GAME_ID_SIZE)


# ---------------------------------------------------------------- checking


def digests_equal(a: bytes, b: bytes) -> bool:
    """Constant-time comparison of two digests."""
    return hmac.compare_digest(a, b)


def opening_matches(
    commitment: bytes, game_id: bytes, seat: int, pid: int, card: Card, nonce: bytes
) -> bool:
    """True if (card, nonce) opens `commitment` for this game, seat and placement.

    Malformed inputs (a card back, a short nonce) simply do not match.
    """
    try:
        expected = card_commitment(game_id, seat, pid, card, nonce)
    except (ValueError, TypeError):
        return False
    return isinstance(commitment, bytes) and digests_equal(expected, commitment)


def seed_matches(commitment: bytes, game_id: bytes, seat: int, seed: bytes) -> bool:
    """True if `seed` opens the seed `commitment` of `seat` (or `SERVER_SEAT`) in this game."""
    try:
        expected = seed_commitment(game_id, seat, seed)
    except (ValueError, TypeError):
        return False
    return isinstance(commitment, bytes) and digests_equal(expected, commitment)


@dataclass(frozen=True, slots=True)
class Opening:
    """The secret behind one card commitment: placement `pid` was `card`, hidden with `nonce`."""

    pid: int
    card: Card
    nonce: bytes


@dataclass(frozen=True, slots=True)
class Committed:
    """A placement as the referee saw it: public family, secret identity behind
    `commitment`. `drawn`: how many cards the seat had drawn from its draw
    pile when it placed this one (2-player variant; 0 in the standard game)."""

    pid: int
    seat: int
    family: int
    commitment: bytes
    drawn: int = 0


class OpeningError(ValueError):
    """An opening that does not hold: the opening seat's fault."""

    def __init__(self, seat: int, pid: int, reason: str) -> None:
        super().__init__(reason)
        self.seat = seat
        self.pid = pid
        self.reason = reason


class CommitmentLedger:
    """The referee's book of one game's card commitments and their openings.

    `commit` records a placement; `open` checks an opening and records it.
    A failed check raises `OpeningError` and records nothing.

    >>> from oriflamme.engine import card
    >>> book = CommitmentLedger(bytes(16))
    >>> nonce = bytes(32)
    >>> red_spy = card("red", "spy")
    >>> book.commit(0, 0, 0, card_commitment(bytes(16), 0, 0, red_spy, nonce))
    >>> book.open(0, 0, card("red", "lord"), nonce)
    Traceback (most recent call last):
    ...
    oriflamme.protocol.commitments.OpeningError: opening of card 0 does not match its commitment
    >>> book.open(0, 0, red_spy, nonce).card == red_spy, book.hidden(0)
    (True, [])
    """

    def __init__(self, game_id: bytes) -> None:
        self.game_id = require_bytes("a game id", game_id, GAME_ID_SIZE)
        self.committed: dict[int, Committed] = {}
        self.opened: dict[int, Opening] = {}
        # Per seat: the card each opened card was, and each nonce, to the pid that used it.
        self._cards: dict[int, dict[Card, int]] = {}
        self._nonces: dict[int, dict[bytes, int]] = {}

    def commit(self, seat: int, pid: int, family: int, commitment: bytes, drawn: int = 0) -> None:
        """Record that `seat` placed a `family` card as placement `pid` under `commitment`."""
        require_seat(seat)
        uint(pid, 4)
        require_bytes("a commitment", commitment, COMMITMENT_SIZE)
        if not 0 <= family < len(FAMILY_NAMES):
            raise ValueError(f"no family {family!r}")
        if pid in self.committed:
            raise ValueError(f"card {pid} is already committed")
        self.committed[pid] = Committed(pid, seat, family, commitment, drawn)

    def check(self, seat: int, pid: int, card: Card, nonce: bytes) -> None:
        """Raise `OpeningError` unless (card, nonce) is a valid first opening of
        `seat`'s placement `pid`. Changes nothing."""
        placed = self.committed.get(pid)
        if placed is None:
            raise OpeningError(seat, pid, f"card {pid} was never placed")
        if placed.seat != seat:
            raise OpeningError(seat, pid, f"card {pid} is seat {placed.seat}'s, not seat {seat}'s")
        if pid in self.opened:
            raise OpeningError(seat, pid, f"card {pid} is already open")
        if not isinstance(card, Card) or card.kind is None:
            raise OpeningError(seat, pid, f"the opening of card {pid} does not name a card")
        if not isinstance(nonce, bytes) or len(nonce) != NONCE_SIZE:
            raise OpeningError(seat, pid, f"the nonce of card {pid} is not {NONCE_SIZE} bytes")
        if card.family != placed.family:
            raise OpeningError(
                seat,
                pid,
                f"card {pid} was placed as a {FAMILY_NAMES[placed.family]} card,"
                f" but was opened as {card}",
            )
        if not opening_matches(placed.commitment, self.game_id, seat, pid, card, nonce):
            raise OpeningError(seat, pid, f"opening of card {pid} does not match its commitment")
        earlier = self._cards.get(seat, {}).get(card)
        if earlier is not None:
            raise OpeningError(seat, pid, f"card {pid} is {card}, already played as card {earlier}")
        earlier = self._nonces.get(seat, {}).get(nonce)
        if earlier is not None:
            raise OpeningError(seat, pid, f"card {pid} reuses the nonce of card {earlier}")

    def open(self, seat: int, pid: int, card: Card, nonce: bytes) -> Opening:
        """Check an opening (see `check`) and record it."""
        self.check(seat, pid, card, nonce)
        opening = Opening(pid, card, nonce)
        self.opened[pid] = opening
        self._cards.setdefault(seat, {})[card] = pid
        self._nonces.setdefault(seat, {})[nonce] = pid
        return opening

    def hidden(self, seat: int) -> list[int]:
        """The pids `seat` committed and has not opened yet, in placement order."""
        return sorted(
            pid for pid, c in self.committed.items() if c.seat == seat and pid not in self.opened
        )

    def openings(self, seat: int) -> list[Opening]:
        """The openings `seat` has made, in the order they were made."""
        return [o for pid, o in self.opened.items() if self.committed[pid].seat == seat]

    def placements(self, seat: int) -> list[Committed]:
        """Everything `seat` committed, in placement order."""
        return sorted((c for c in self.committed.values() if c.seat == seat), key=_pid)


def _pid(c: Committed) -> int:
    return c.pid

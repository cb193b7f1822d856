"""The fair deal: each seat's shuffle from its client seed and the server seed.

How this works
--------------
A seat's randomness is a byte stream: block after block of

    HMAC-SHA256(key = client seed (32 bytes),
                message = fields(b"oriflamme/v1/deal-stream", version (2 bytes),
                                 game id (16 bytes), seat (1 byte),
                                 server seed (32 bytes), counter (4 bytes)))

for counter = 0, 1, 2, ... (fields as in `commitments`: each a 4-byte
big-endian length, then the bytes). The client seed is the key because it is
the secret: the server cannot compute the stream until the client reveals
its seed at the end. The server seed enters the message, chosen after the
client committed to its seed, so the client cannot steer its shuffle either.
The seeds are never XORed or otherwise merged: both enter HMAC whole.

The stream drives a Fisher-Yates shuffle of the ten kinds in `Kind` order
(archer .. conspiracy): for i = 9 down to 1, draw j uniform in 0..i and swap
positions i and j. A draw for n = i + 1 choices takes the next stream byte b;
b >= 256 - (256 mod n) is rejected and the next byte taken, otherwise
j = b mod n (no modulo bias). A seat with two families (2-player variant)
shuffles them in the seat's family order from the same continuing stream.
`oriflamme.engine.layout_deal` then lays the orders out (set aside, hand,
draw pile).

>>> from oriflamme.engine import Rules
>>> deal = derive_deal(Rules(3), bytes(16), 0, bytes(32), bytes(range(32)))
>>> len(deal.hand), len(deal.set_aside), len(deal.draw_pile)
(7, 3, 0)
"""

from __future__ import annotations

import hashlib
import hmac

from oriflamme.engine import KINDS, Kind, Rules, SeatDeal, layout_deal

from .commitments import (
    GAME_ID_SIZE,
    PROTOCOL_VERSION,
    SEED_SIZE,
    encode_fields,
    require_bytes,
    require_seat,
    uint,
)

DEAL_TAG = b"oriflamme/v1/deal-stream"
BLOCK_SIZE = 32


def stream_message(game_id: bytes, seat: int, server_seed: bytes, counter: int) -> bytes:
    """The HMAC message for block `counter` of `seat`'s stream."""
    require_bytes("a game id", game_id, GAME_ID_SIZE)
    require_seat(seat)
    require_bytes("the server seed", server_seed, SEED_SIZE)
    return encode_fields(
        DEAL_TAG,
        uint(PROTOCOL_VERSION, 2),
        game_id,
        uint(seat, 1),
        server_seed,
        uint(counter, 4),
    )


def stream_block(
    client_seed: bytes, game_id: bytes, seat: int, server_seed: bytes, counter: int
) -> bytes:
    """Block `counter` (32 bytes) of `seat`'s deal stream."""
    require_bytes("a client seed", client_seed, SEED_SIZE)
    message = stream_message(game_id, seat, server_seed, counter)
    return hmac.new(client_seed, message, hashlib.sha256).digest()


class DealStream:
    """The byte stream of one seat's deal, read one byte at a time.

    `consumed` counts the bytes read, `rejected` the bytes rejection
    sampling threw away (both appear in the test vectors).
    """

    def __init__(self, client_seed: bytes, game_id: bytes, seat: int, server_seed: bytes) -> None:
        # Validate everything now, so a bad input fails here and not mid-shuffle.
        stream_block(client_seed, game_id, seat, server_seed, 0)
        self._args = (client_seed, game_id, seat, server_seed)
        self._block = b""
        self._counter = 0
        self._offset = 0
        self.consumed = 0
        self.rejected = 0

    def next_byte(self) -> int:
        if self._offset == len(self._block):
            self._block = stream_block(*self._args, self._counter)
            self._counter += 1
            self._offset = 0
        b = self._block[self._offset]
        self._offset += 1
        self.consumed += 1
        return b

    def below(self, n: int) -> int:
        """A uniform integer in 0..n-1 (1 <= n <= 256), by rejection sampling."""
        if not 1 <= n <= 256:
            raise ValueError(f"cannot draw among {n} choices from single bytes")
        limit = 256 - 256 % n
        while True:
            b = self.next_byte()
            if b < limit:
                return b % n
            self.rejected += 1


def shuffle_kinds(stream: DealStream) -> tuple[Kind, ...]:
    """One Fisher-Yates shuffle of the ten kinds, starting from `Kind` order."""
    order = list(KINDS)
    for i in range(len(order) - 1, 0, -1):
        j = stream.below(i + 1)
        order[i], order[j] = order[j], order[i]
    return tuple(order)


def derive_orders(
    rules: Rules, game_id: bytes, seat: int, client_seed: bytes, server_seed: bytes
) -> tuple[tuple[Kind, ...], ...]:
    """One shuffled order of the ten kinds per family of `seat`, in the seat's
    family order (the 2-player variant's second family continues the stream)."""
    if not 0 <= seat < rules.players:
        raise ValueError(f"no seat {seat} at a {rules.players}-player table")
    stream = DealStream(client_seed, game_id, seat, server_seed)
    return tuple(shuffle_kinds(stream) for _ in rules.families[seat])


def derive_deal(
    rules: Rules, game_id: bytes, seat: int, client_seed: bytes, server_seed: bytes
) -> SeatDeal:
    """`seat`'s hand, set-aside cards and draw pile, derived from both seeds."""
    orders = derive_orders(rules, game_id, seat, client_seed, server_seed)
    return layout_deal(rules, seat, orders)

"""Where the server's randomness comes from.

Everything random the server makes (session tokens, game ids, server seeds,
invite codes, and the choices it makes for a seat whose time ran out) comes
from one `Entropy`. A real server uses `SystemEntropy`, the operating
system's CSPRNG through `secrets`: a token or a seed must not be guessable,
and a time-out choice must not be predictable from earlier ones.

A server that keeps its state across restarts uses `KeyedEntropy`: bytes
from HMAC-SHA256 under a secret key (32 bytes from the operating system,
kept in a file of the server's own), in counter mode. They are as
unpredictable as `secrets`' to anyone without the key, and the same again
when the server replays its journal after a restart, so no token or seed
ever needs to be written down. The facts a server keeps hold a stream's
`position`, never its key nor its bytes (an earlier version's pickle held
no key either: it is given back with `rekey`).

Each also gives the server's identity (`server_id`), the public id a
`welcome` carries so that a client can tell the same server reached by
another address: without drawing from the stream (no token or seed moves).
`SystemEntropy` makes a fresh one for each instance (a server with no data
directory is a new server each time); `KeyedEntropy` derives it from its key
(HMAC under another message than any block's), so a server keeps the same id
across restarts for as long as its data directory keeps its key, and no file
holds it. It says nothing of the key. The server's signing key (Ed25519:
`server_key_seed`, its private bytes) is derived the same way, under
another label: copying the data directory's key moves both.

`FixedEntropy` gives the same bytes on every run, for the documentation's
worked example and for tests that need a game to come out the same way.
It is SHA-256 in counter mode over a label: never use it in a server that
strangers connect to.

>>> FixedEntropy("doc").token_bytes(4).hex()
'0ec52fd2'
>>> FixedEntropy("doc").choice(["a", "b", "c"]) == FixedEntropy("doc").choice(["a", "b", "c"])
True
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Sequence
from typing import Protocol, TypeVar

from oriflamme.protocol.messages import SERVER_ID_SIZE

T = TypeVar("T")


class Entropy(Protocol):
    def token_bytes(self, size: int) -> bytes:
        """`size` unpredictable bytes."""
        ...

    def choice(self, options: Sequence[T]) -> T:
        """One of `options`, uniformly."""
        ...

    def server_id(self) -> bytes:
        """The server's public identity, `SERVER_ID_SIZE` bytes, the same at every call."""
        ...

    def server_key_seed(self) -> bytes:
        """The 32 bytes of the server's private signing key (Ed25519), the
        same at every call: made as `server_id` is, under another label."""
        ...


_SERVER_ID_LABEL = b"oriflamme server id"  # not 8 bytes long: no block's message
_SERVER_KEY_LABEL = b"oriflamme server signing key"


class SystemEntropy:
    """The operating system's CSPRNG (`secrets`): what a server uses."""

    _server_id: bytes | None = None
    _server_key_seed: bytes | None = None

    def server_id(self) -> bytes:
        if self._server_id is None:  # made at first use: a referee's never is
            self._server_id = secrets.token_bytes(SERVER_ID_SIZE)
        return self._server_id

    def server_key_seed(self) -> bytes:
        if self._server_key_seed is None:
            self._server_key_seed = secrets.token_bytes(32)
        return self._server_key_seed

    def token_bytes(self, size: int) -> bytes:
        return secrets.token_bytes(size)

    def choice(self, options: Sequence[T]) -> T:
        return secrets.choice(options)


BLOCK_SIZE = 32  # bytes of one block of the counter-mode streams (SHA-256)


class _CounterMode:
    """Blocks of 32 bytes in counter mode, and uniform choices from them.
    A stream's `position` says how far it went, and `seek` goes back there
    (the facts a server keeps hold its position, never its bytes)."""

    def __init__(self) -> None:
        self._counter = 0
        self._buffer = b""

    def _block(self, counter: int) -> bytes:
        raise NotImplementedError

    def token_bytes(self, size: int) -> bytes:
        while len(self._buffer) < size:
            self._buffer += self._block(self._counter)
            self._counter += 1
        out, self._buffer = self._buffer[:size], self._buffer[size:]
        return out

    @property
    def position(self) -> int:
        """How many bytes of the stream were used: where the next come from.

        >>> e = FixedEntropy("doc"); _ = e.token_bytes(5); e.position
        5
        """
        return self._counter * BLOCK_SIZE - len(self._buffer)

    def seek(self, position: int) -> None:
        """Go on from `position` (a `position` this stream had): the bytes
        after it come again, and none before it is kept."""
        if position < 0:
            raise ValueError("a position is not negative")
        self._counter, self._buffer = position // BLOCK_SIZE, b""
        self.token_bytes(position % BLOCK_SIZE)

    def skip(self, blocks: int) -> None:
        """Go on `blocks` blocks further, none of them used. A server
        started again skips a great random number of them (`Lobby.restarted`):
        if its state went back in time (a backup restored), the tokens and
        seeds it drew after that point, which clients may hold, are not drawn
        again.

        >>> e = FixedEntropy("doc"); e.skip(2); e.position
        64
        """
        if blocks < 0:
            raise ValueError("a stream goes on, not back")
        self.seek((self._counter + blocks) * BLOCK_SIZE)

    def bytes_at(self, position: int, size: int) -> bytes:
        """The `size` bytes the stream gave (or will give) from `position`,
        without moving it."""
        first, skip = divmod(position, BLOCK_SIZE)
        blocks = b"".join(
            self._block(c) for c in range(first, first + (skip + size) // BLOCK_SIZE + 1)
        )
        return blocks[skip : skip + size]

    def choice(self, options: Sequence[T]) -> T:
        if not options:
            raise IndexError("no option to choose from")
        n = len(options)
        limit = (1 << 32) - (1 << 32) % n  # rejection sampling: no modulo bias
        while True:
            value = int.from_bytes(self.token_bytes(4), "big")
            if value < limit:
                return options[value % n]


class KeyedEntropy(_CounterMode):
    """HMAC-SHA256 under a secret `key`, in counter mode (see the module docstring).

    >>> a, b = KeyedEntropy(bytes(32)), KeyedEntropy(bytes(32))
    >>> a.token_bytes(8) == b.token_bytes(8), len(KeyedEntropy.new_key())
    (True, 32)
    """

    def __init__(self, key: bytes) -> None:
        super().__init__()
        if len(key) != 32:
            raise ValueError("the key is 32 bytes")
        self._key: bytes | None = key

    @staticmethod
    def new_key() -> bytes:
        return secrets.token_bytes(32)

    def rekey(self, key: bytes) -> None:
        """Give the key back to an instance loaded from a pickle."""
        self._key = key

    def server_id(self) -> bytes:
        if self._key is None:
            raise RuntimeError("this entropy was loaded without its key: rekey it")
        return hmac.new(self._key, _SERVER_ID_LABEL, hashlib.sha256).digest()[:SERVER_ID_SIZE]

    def server_key_seed(self) -> bytes:
        if self._key is None:
            raise RuntimeError("this entropy was loaded without its key: rekey it")
        return hmac.new(self._key, _SERVER_KEY_LABEL, hashlib.sha256).digest()

    def _block(self, counter: int) -> bytes:
        if self._key is None:
            raise RuntimeError("this entropy was loaded without its key: rekey it")
        return hmac.new(self._key, counter.to_bytes(8, "big"), hashlib.sha256).digest()

    def __getstate__(self) -> dict[str, object]:
        return {"_counter": self._counter, "_buffer": self._buffer, "_key": None}


class FixedEntropy(_CounterMode):
    """The same bytes on every run, from `label` (docs and tests only)."""

    def __init__(self, label: str) -> None:
        super().__init__()
        self._label = label.encode()

    def _block(self, counter: int) -> bytes:
        return hashlib.sha256(self._label + counter.to_bytes(8, "big")).digest()

    def server_id(self) -> bytes:
        return hashlib.sha256(_SERVER_ID_LABEL + self._label).digest()[:SERVER_ID_SIZE]

    def server_key_seed(self) -> bytes:
        return hashlib.sha256(_SERVER_KEY_LABEL + self._label).digest()

"""Where the server's randomness comes from.

Everything random the server makes (session tokens, game ids, server seeds,
invite codes, and the choices it makes for a seat whose time ran out) comes
from one `Entropy`. A real server uses `SystemEntropy`, the operating
system's CSPRNG through `secrets`: a token or a seed must not be guessable,
and a time-out choice must not be predictable from earlier ones.

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
import secrets
from collections.abc import Sequence
from typing import Protocol, TypeVar

T = TypeVar("T")


class Entropy(Protocol):
    def token_bytes(self, size: int) -> bytes:
        """`size` unpredictable bytes."""
        ...

    def choice(self, options: Sequence[T]) -> T:
        """One of `options`, uniformly."""
        ...


class SystemEntropy:
    """The operating system's CSPRNG (`secrets`): what a server uses."""

    def token_bytes(self, size: int) -> bytes:
        return secrets.token_bytes(size)

    def choice(self, options: Sequence[T]) -> T:
        return secrets.choice(options)


class FixedEntropy:
    """The same bytes on every run, from `label` (docs and tests only)."""

    def __init__(self, label: str) -> None:
        self._label = label.encode()
        self._counter = 0
        self._buffer = b""

    def token_bytes(self, size: int) -> bytes:
        while len(self._buffer) < size:
            block = hashlib.sha256(self._label + self._counter.to_bytes(8, "big")).digest()
            self._buffer += block
            self._counter += 1
        out, self._buffer = self._buffer[:size], self._buffer[size:]
        return out

    def choice(self, options: Sequence[T]) -> T:
        if not options:
            raise IndexError("no option to choose from")
        n = len(options)
        limit = (1 << 32) - (1 << 32) % n  # rejection sampling: no modulo bias
        while True:
            value = int.from_bytes(self.token_bytes(4), "big")
            if value < limit:
                return options[value % n]

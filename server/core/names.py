"""Which key holds which name on this server.

A name belongs to the first key that used it here, for good (the key may
change it: `claim` again): no other player takes it, with a key or
without. Names are compared folded: NFKC, then case-folded, so ``Ann``,
``ANN`` and ``Ａｎｎ`` are one name.

>>> names = Names()
>>> names.claim(b"k1", "Ann")
>>> names.owner("ANN") == b"k1", names.name_of(b"k1")
(True, 'Ann')
>>> names.claim(b"k2", "ann")
Traceback (most recent call last):
...
ValueError: the name 'ann' is another key's
>>> names.claim(b"k1", "Anne"); names.owner("Ann") is None
True
"""

from __future__ import annotations

import unicodedata


def folded(name: str) -> str:
    """`name` as names are compared."""
    return unicodedata.normalize("NFKC", name).casefold()


class Names:
    """The names keys hold (see the module docstring)."""

    def __init__(self) -> None:
        self.by_key: dict[bytes, str] = {}
        self._owners: dict[str, bytes] = {}  # folded name -> key

    def owner(self, name: str) -> bytes | None:
        """The key that holds `name` (None: no key does)."""
        return self._owners.get(folded(name))

    def name_of(self, key: bytes) -> str | None:
        return self.by_key.get(key)

    def claim(self, key: bytes, name: str) -> None:
        """`name` is `key`'s from now on (its name before, if any, is free
        again). `ValueError` if another key holds it."""
        owner = self.owner(name)
        if owner is not None and owner != key:
            raise ValueError(f"the name {name!r} is another key's")
        before = self.by_key.get(key)
        if before is not None:
            del self._owners[folded(before)]
        self.by_key[key] = name
        self._owners[folded(name)] = key

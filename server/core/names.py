"""Which key holds which name on this server.

A name belongs to the first key that used it here, for good (the key may
change it: `claim` again): no other player takes it, with a key or
without. Names are compared folded (`folded`): NFKC, case-folded, without
what shows as nothing, spaces collapsed, so ``Ann``, ``ANN``, `` Ann`` and
``Ａｎｎ`` are one name. (Look-alikes from other scripts, a Cyrillic ``А``
for a Latin ``A``, are not folded: Unicode's confusables are a table of
their own.)

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

# What shows as nothing: the Hangul fillers (letters), the combining
# grapheme joiner and the variation selectors (marks): a name with them
# looks like one without. (Other marks stay: in Thai or Devanagari they
# make another name.)
_BLANK = dict.fromkeys(
    [
        *map(ord, "\u115f\u1160\u3164\uffa0\u034f"),
        *range(0xFE00, 0xFE10),
        *range(0xE0100, 0xE01F0),
    ]
)


def folded(name: str) -> str:
    """`name` as names are compared: NFKC, case-folded, without what shows
    as nothing (`_BLANK`), its runs of spaces made one and stripped.

    >>> folded(" AnN ") == folded("ann") == folded("A\u034fnn") == folded("Ann\u3164")
    True
    >>> folded("Anné") == folded("Anne"), folded("มิน") == folded("มน")
    (False, False)
    """
    text = unicodedata.normalize("NFKC", name).casefold().translate(_BLANK)
    return " ".join(text.split())


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

    def restore(self, key: bytes, name: str) -> None:
        """`name` is `key`'s, as facts kept it; if an earlier key of those
        facts holds a name folded alike (compared otherwise when they were
        taken), the first keeps it, and this key holds none: it takes the
        name of its next hello."""
        if self._owners.setdefault(folded(name), key) == key:
            self.by_key[key] = name  # (else: it chooses a name at its next hello)

    def release(self, key: bytes) -> None:
        """`key` holds no name any more (it never played here)."""
        name = self.by_key.pop(key, None)
        if name is not None and self._owners.get(folded(name)) == key:
            del self._owners[folded(name)]

    def claim(self, key: bytes, name: str) -> None:
        """`name` is `key`'s from now on (its name before, if any, is free
        again). `ValueError` if another key holds it."""
        owner = self.owner(name)
        if owner is not None and owner != key:
            raise ValueError(f"the name {name!r} is another key's")
        before = self.by_key.get(key)
        if before is not None and self._owners.get(folded(before)) == key:
            del self._owners[folded(before)]
        self.by_key[key] = name
        self._owners[folded(name)] = key

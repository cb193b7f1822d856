"""Cards, families and their plain-data names.

A card is a `Card(family, kind)`. The box has five families (colours) of the
same ten cards. A `Card` whose `kind` is None is a card *back*: its family is
public (card backs show the colour) but its identity is not known to whoever
holds this value.

Cards are interned, so `is` and `==` agree and they cost nothing to pass
around:

>>> card("red", "soldier")
Card(family=0, kind=<Kind.SOLDIER: 1>)
>>> card("red", "soldier") is CARDS[0][Kind.SOLDIER]
True
>>> card_to_data(card("blue", None))
['blue', None]
"""

from __future__ import annotations

import reprlib
from enum import IntEnum
from typing import NamedTuple

_SHORT = reprlib.Repr()
_SHORT.maxlevel = 2
_SHORT.maxstring = 24
_SHORT.maxother = 24
_SHORT.maxlong = 24
_SHORT.maxlist = _SHORT.maxtuple = _SHORT.maxset = _SHORT.maxdict = 4
SHOWN_MAX = 120  # characters at most, whatever the value


def shown(value: object) -> str:
    """A value from outside (plain data, the wire) as an error message may quote
    it: cut short and never deep, since such values may be huge or nested
    thousands of levels down.

    >>> shown([[[[["deep"]]]]])
    '[[[...]]]'
    """
    text = _SHORT.repr(value)
    return text if len(text) <= SHOWN_MAX else text[: SHOWN_MAX - 3] + "..."


class Kind(IntEnum):
    """The ten cards of a family. The first six are Characters."""

    ARCHER = 0
    SOLDIER = 1
    SPY = 2
    HEIR = 3
    LORD = 4
    SHAPESHIFTER = 5
    ASSASSINATION = 6
    ROYAL_DECREE = 7
    AMBUSH = 8
    CONSPIRACY = 9

    # Enum hashes by name in Python code; cards are hashed on the hot path,
    # and hashing as the int is consistent with IntEnum's int equality.
    __hash__ = int.__hash__

    @property
    def is_character(self) -> bool:
        """Characters stay in the queue face up; Intrigues are discarded."""
        return self <= Kind.SHAPESHIFTER

    @property
    def label(self) -> str:
        """The plain-data name: ``Kind.ROYAL_DECREE.label == "royal_decree"``."""
        return KIND_NAMES[self]


KINDS: tuple[Kind, ...] = tuple(Kind)
KIND_NAMES: tuple[str, ...] = tuple(k.name.lower() for k in Kind)
KIND_BY_NAME: dict[str, Kind] = {name: Kind(i) for i, name in enumerate(KIND_NAMES)}
# Characters a Shapeshifter may copy (ruling 12): a Shapeshifter itself is not
# an ability to copy, so it is never offered.
COPYABLE: frozenset[Kind] = frozenset({Kind.ARCHER, Kind.SOLDIER, Kind.SPY, Kind.HEIR, Kind.LORD})

FAMILY_NAMES: tuple[str, ...] = ("red", "blue", "green", "yellow", "black")
FAMILY_BY_NAME: dict[str, int] = {name: i for i, name in enumerate(FAMILY_NAMES)}
NUM_FAMILIES = len(FAMILY_NAMES)
CARDS_PER_FAMILY = len(KINDS)


class Card(NamedTuple):
    """One card: a family index (0-4) and a kind, or kind None for a card back."""

    family: int
    kind: Kind | None

    def __repr__(self) -> str:
        return f"Card(family={self.family}, kind={self.kind!r})"

    def __str__(self) -> str:
        kind = "?" if self.kind is None else self.kind.label
        return f"{FAMILY_NAMES[self.family]} {kind}"

    @property
    def is_known(self) -> bool:
        return self.kind is not None


# CARDS[family][kind] is the interned card; BACKS[family] the interned back.
CARDS: tuple[tuple[Card, ...], ...] = tuple(
    tuple(Card(f, k) for k in KINDS) for f in range(NUM_FAMILIES)
)
BACKS: tuple[Card, ...] = tuple(Card(f, None) for f in range(NUM_FAMILIES))


def family_cards(family: int) -> tuple[Card, ...]:
    """The ten cards of one family, in `Kind` order."""
    return CARDS[family]


def card(family: int | str, kind: Kind | str | int | None) -> Card:
    """The interned card for a family and a kind (names or numbers).

    >>> str(card(2, Kind.LORD))
    'green lord'
    """
    f = FAMILY_BY_NAME[family] if isinstance(family, str) else family
    if not 0 <= f < NUM_FAMILIES:
        raise ValueError(f"no family {shown(family)}")
    if kind is None:
        return BACKS[f]
    k = KIND_BY_NAME[kind] if isinstance(kind, str) else Kind(kind)
    return CARDS[f][k]


def card_to_data(c: Card) -> list[str | None]:
    """Plain data for a card: ``[family name, kind name or None]``."""
    return [FAMILY_NAMES[c.family], None if c.kind is None else KIND_NAMES[c.kind]]


def card_from_data(data: object) -> Card:
    """The inverse of `card_to_data`; raises ValueError on anything else."""
    if not isinstance(data, list | tuple) or len(data) != 2:
        raise ValueError(f"a card is [family, kind], not {shown(data)}")
    family, kind = data
    if not isinstance(family, str) or family not in FAMILY_BY_NAME:
        raise ValueError(f"unknown family {shown(family)}")
    if kind is not None and (not isinstance(kind, str) or kind not in KIND_BY_NAME):
        raise ValueError(f"unknown card kind {shown(kind)}")
    return card(family, kind)

"""Actions: the answers a seat gives to the engine's decisions.

Every action is a small frozen value. The engine's legal-option lists hand out
interned instances (see `place`, `target`, `move_to`), so building them costs
no allocation on the hot path; constructing your own equal value works the
same.

>>> from oriflamme.engine.cards import card
>>> Place(card("red", "archer"), FIRST) == place(card("red", "archer"), "first")
True
>>> action_to_data(Target(4))
{'type': 'target', 'pid': 4}
>>> action_from_data({'type': 'keep'}) is KEEP
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .cards import Card, card_from_data, card_to_data, shown

FIRST: Literal["first"] = "first"
LAST: Literal["last"] = "last"
LEFT_TO_RIGHT: Literal["left-to-right"] = "left-to-right"
RIGHT_TO_LEFT: Literal["right-to-left"] = "right-to-left"
DIRECTIONS = (LEFT_TO_RIGHT, RIGHT_TO_LEFT)

# Where a card is placed: an end of the queue ("first" resolves first), or the
# placement id (pid) of one of your own top cards, to cover it.
At = Literal["first", "last"] | int


class IllegalAction(ValueError):
    """An action that is not legal now; the game state is unchanged."""


@dataclass(frozen=True, slots=True)
class ChooseDirection:
    """The first player picks the resolution direction (ruling 20)."""

    direction: str


@dataclass(frozen=True, slots=True)
class Place:
    """Place `card` from your hand at an end of the queue or on your slot `at`.

    When the engine does not know the seat's hand, `card` is a card back
    (`Card(family, None)`): only the family is public.
    """

    card: Card
    at: At


@dataclass(frozen=True, slots=True)
class Keep:
    """Keep the face-down top card hidden; it gains 1 token."""


@dataclass(frozen=True, slots=True)
class Reveal:
    """Reveal the face-down top card: take its tokens, then apply it."""


@dataclass(frozen=True, slots=True)
class Open:
    """Tell the engine the identity of one of your face-down cards.

    Asked only when the engine runs without that identity (server side) and a
    rule needs it: you revealed the card, or it was eliminated.
    """

    card: Card


@dataclass(frozen=True, slots=True)
class Target:
    """Choose the top card with placement id `pid` (to eliminate, steal from,
    copy or move, as the decision's kind says)."""

    pid: int


@dataclass(frozen=True, slots=True)
class MoveTo:
    """Royal Decree: the moved card ends at `index` of the queue (resolution order)."""

    index: int


Action = ChooseDirection | Place | Keep | Reveal | Open | Target | MoveTo

KEEP = Keep()
REVEAL = Reveal()
DIRECTION_CHOICES = tuple(ChooseDirection(d) for d in DIRECTIONS)

# _places[family][kind or 10 for a back] maps `at` to the interned Place.
_places: list[list[dict[At, Place]]] = [[{} for _ in range(11)] for _ in range(5)]
_targets: list[Target] = [Target(i) for i in range(64)]
_moves: list[MoveTo] = [MoveTo(i) for i in range(64)]


def place(c: Card, at: At) -> Place:
    """The interned `Place(c, at)` (a pid past 63 is not interned: the table
    stays small whatever data comes in)."""
    if not isinstance(at, str) and not 0 <= at < 64:
        return Place(c, at)
    table = _places[c.family][10 if c.kind is None else c.kind]
    p = table.get(at)
    if p is None:
        p = table[at] = Place(c, at)
    return p


def target(pid: int) -> Target:
    """The interned `Target(pid)`."""
    return _targets[pid] if 0 <= pid < 64 else Target(pid)


def move_to(index: int) -> MoveTo:
    """The interned `MoveTo(index)`."""
    return _moves[index] if 0 <= index < 64 else MoveTo(index)


def action_to_data(action: Action) -> dict[str, object]:
    """Plain data for an action (see docs/ENGINE.md, "Actions")."""
    if isinstance(action, Place):
        return {"type": "place", "card": card_to_data(action.card), "at": action.at}
    if isinstance(action, Keep):
        return {"type": "keep"}
    if isinstance(action, Reveal):
        return {"type": "reveal"}
    if isinstance(action, Target):
        return {"type": "target", "pid": action.pid}
    if isinstance(action, MoveTo):
        return {"type": "move_to", "index": action.index}
    if isinstance(action, Open):
        return {"type": "open", "card": card_to_data(action.card)}
    if isinstance(action, ChooseDirection):
        return {"type": "direction", "direction": action.direction}
    raise TypeError(f"not an action: {action!r}")


def _int_field(data: dict[str, object], name: str) -> int:
    value = data.get(name)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{shown(data.get('type'))} needs an integer {name!r}, got {shown(value)}")
    return value


def action_from_data(data: object) -> Action:
    """The inverse of `action_to_data`; raises ValueError on malformed data."""
    if not isinstance(data, dict):
        raise ValueError(f"an action is a map, not {type(data).__name__}")
    kind = data.get("type")
    if kind == "keep":
        return KEEP
    if kind == "reveal":
        return REVEAL
    if kind == "target":
        return target(_int_field(data, "pid"))
    if kind == "move_to":
        return move_to(_int_field(data, "index"))
    if kind == "place":
        at = data.get("at")
        if at not in (FIRST, LAST) and (not isinstance(at, int) or isinstance(at, bool)):
            raise ValueError(f"'at' is 'first', 'last' or a placement id, not {shown(at)}")
        return place(card_from_data(data.get("card")), at)
    if kind == "open":
        return Open(card_from_data(data.get("card")))
    if kind == "direction":
        direction = data.get("direction")
        if direction not in DIRECTIONS:
            raise ValueError(f"direction is one of {DIRECTIONS}, not {shown(direction)}")
        return ChooseDirection(str(direction))
    raise ValueError(f"unknown action type {shown(kind)}")

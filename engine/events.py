"""Events: what happened when a decision was applied.

`Game.apply` returns a list of these, in order. They are NamedTuples (cheap,
immutable); `event_to_data` gives plain data with a ``type`` field. Only
`Placed` and `Drew` can name a card that is not public yet: `mask_event`
hides it from every seat but its owner, so the same event list can be sent to
each seat and to spectators.

>>> event_to_data(Kept(seat=1, pid=3, tokens=2))
{'type': 'kept', 'seat': 1, 'pid': 3, 'tokens': 2}
"""

from __future__ import annotations

from typing import Any, ForwardRef, NamedTuple

from .cards import BACKS, Card, card_from_data, card_to_data, shown


class DirectionChosen(NamedTuple):
    seat: int
    direction: str


class Placed(NamedTuple):
    """`card` is a card back in a masked event or when the engine does not
    know it. `at` is as in the `Place` action; `slot` is the index of the slot
    the card went to (resolution order)."""

    seat: int
    pid: int
    card: Card
    at: str | int
    slot: int


class PlacementSkipped(NamedTuple):
    """The referee skipped `seat`'s placement (a player who timed out or left:
    the server cannot place a card it does not know)."""

    seat: int


class Kept(NamedTuple):
    seat: int
    pid: int
    tokens: int


class Revealed(NamedTuple):
    """The owner revealed `card`. `tokens` were on it (Ambush: to the supply)."""

    seat: int
    pid: int
    card: Card
    tokens: int


class AbilityUsed(NamedTuple):
    """The card `pid` applies `ability` (a Shapeshifter's copy shows the copied
    ability); `target` is the chosen card's pid, if any."""

    seat: int
    pid: int
    ability: str
    target: int | None


class NoEffect(NamedTuple):
    """The card `pid` had no legal option for `ability`."""

    seat: int
    pid: int
    ability: str


class Eliminated(NamedTuple):
    """`card` (pid) of `owner` was eliminated by the card `by` of seat `by_seat`.
    `tokens` on it went back to the supply."""

    pid: int
    card: Card
    owner: int
    by: int
    by_seat: int
    tokens: int


class Discarded(NamedTuple):
    """`card` left the queue without anyone scoring for it: an Intrigue after
    use (`reason` "used"), an Ambush or its attacker ("ambush")."""

    pid: int
    card: Card
    owner: int
    reason: str
    tokens: int


class Moved(NamedTuple):
    """A Royal Decree moved the card `pid` to queue index `to`."""

    pid: int
    to: int


class Uncovered(NamedTuple):
    """The card `pid` is the top of its slot again."""

    pid: int
    face_up: bool


class Scored(NamedTuple):
    """`seat` gained `points` (`reason`: tokens, conspiracy, eliminate, ambush,
    heir, lord)."""

    seat: int
    points: int
    reason: str


class Stolen(NamedTuple):
    """A Spy of `seat` stole `points` (0 or 1) from `victim`."""

    seat: int
    victim: int
    points: int


class Drew(NamedTuple):
    """2-player variant: `seat` drew `cards` (backs for everyone else)."""

    seat: int
    cards: tuple[Card, ...]


class RoundEnded(NamedTuple):
    round: int


class RoundStarted(NamedTuple):
    round: int
    first_player: int


class GameEnded(NamedTuple):
    scores: tuple[int, ...]
    winners: tuple[int, ...]


Event = (
    DirectionChosen
    | Placed
    | PlacementSkipped
    | Kept
    | Revealed
    | AbilityUsed
    | NoEffect
    | Eliminated
    | Discarded
    | Moved
    | Uncovered
    | Scored
    | Stolen
    | Drew
    | RoundEnded
    | RoundStarted
    | GameEnded
)

EVENT_TYPES: dict[str, type[Any]] = {
    "direction_chosen": DirectionChosen,
    "placed": Placed,
    "placement_skipped": PlacementSkipped,
    "kept": Kept,
    "revealed": Revealed,
    "ability_used": AbilityUsed,
    "no_effect": NoEffect,
    "eliminated": Eliminated,
    "discarded": Discarded,
    "moved": Moved,
    "uncovered": Uncovered,
    "scored": Scored,
    "stolen": Stolen,
    "drew": Drew,
    "round_ended": RoundEnded,
    "round_started": RoundStarted,
    "game_ended": GameEnded,
}
EVENT_NAMES: dict[type[Any], str] = {cls: name for name, cls in EVENT_TYPES.items()}
# Each field's annotation as text ("int", "Card", "int | None", ...), to check
# plain data against (NamedTuple keeps string annotations as ForwardRefs).
_FIELD_TYPES: dict[type[Any], dict[str, str]] = {
    cls: {
        field: a.__forward_arg__ if isinstance(a, ForwardRef) else str(a)
        for field, a in cls.__annotations__.items()
    }
    for cls in EVENT_TYPES.values()
}


def mask_event(event: Event, seat: int | None) -> Event:
    """The event as `seat` may see it (None: a spectator)."""
    if type(event) is Placed and event.seat != seat and event.card.kind is not None:
        return event._replace(card=BACKS[event.card.family])
    if type(event) is Drew and event.seat != seat:
        return event._replace(cards=tuple(BACKS[c.family] for c in event.cards))
    return event


def event_to_data(event: Event) -> dict[str, Any]:
    """Plain data: ``{"type": name, field: value, ...}``; cards as [family, kind]."""
    data: dict[str, Any] = {"type": EVENT_NAMES[type(event)]}
    for name, value in zip(event._fields, event, strict=True):
        out: Any = value
        if isinstance(value, Card):
            out = card_to_data(value)
        elif name == "cards":
            out = [card_to_data(c) for c in value]  # type: ignore[union-attr, arg-type]
        elif isinstance(value, tuple):
            out = list(value)
        data[name] = out
    return data


def _field_from_data(kind: str, name: str, value: Any) -> Any:
    """Check and convert one field by its annotation; ValueError if it does not fit."""
    if kind == "Card":
        return card_from_data(value)
    if kind == "tuple[Card, ...]":
        if not isinstance(value, list | tuple):
            raise ValueError(f"{name!r} must be a list of cards")
        return tuple(card_from_data(c) for c in value)
    if kind == "tuple[int, ...]":
        if not isinstance(value, list | tuple) or not all(_is_int(v) for v in value):
            raise ValueError(f"{name!r} must be a list of integers")
        return tuple(value)
    allowed = kind.split(" | ")
    if (
        ("int" in allowed and _is_int(value))
        or ("str" in allowed and isinstance(value, str))
        or ("bool" in allowed and isinstance(value, bool))
        or ("None" in allowed and value is None)
    ):
        return value
    raise ValueError(f"{name!r} must be {kind}, not {shown(value)}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def event_from_data(data: Any) -> Event:
    """The inverse of `event_to_data`; raises ValueError on malformed data."""
    if not isinstance(data, dict):
        raise ValueError(f"an event is a map, not {type(data).__name__}")
    name = data.get("type")
    cls = EVENT_TYPES.get(name) if isinstance(name, str) else None
    if cls is None:
        raise ValueError(f"unknown event type {shown(name)}")
    values = []
    for field in cls._fields:
        if field not in data:
            raise ValueError(f"event {name!r} lacks {field!r}")
        values.append(_field_from_data(_FIELD_TYPES[cls][field], field, data[field]))
    event: Event = cls(*values)
    return event

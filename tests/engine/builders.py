"""Compact positions for engine tests.

A card in the queue is written as one string of words:

    "red soldier"          face down, no tokens
    "blue spy up"          face up
    "green lord 2t"        face down with 2 tokens
    "#7 red ?"             pid 7, identity unknown to the engine (a card back)

Its owner is the seat playing that family. A slot is one such string, or a list
of them for a stack (bottom first). The queue is a list of slots in
resolution order (index 0 resolves first). Cards without "#pid" get the
lowest free pids in reading order (slot by slot, bottom to top): with no
"#pid" anywhere, pids are 0, 1, 2, ... as you read.

>>> g = position(["red soldier up", ["blue lord", "blue spy"]], step="reveal", index=1)
>>> describe(g)
['#0 red soldier up', ['#1 blue lord', '#2 blue spy']]
>>> g.decision.seat, g.decision.kind, g.decision.pid
(1, 'reveal', 2)

`describe` writes the queue back in the same words, with every pid, so a test
can assert the whole queue at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pytest

from oriflamme.engine import (
    FAMILY_NAMES,
    Card,
    Game,
    IllegalAction,
    Kind,
    card,
    event_to_data,
    from_data,
    to_data,
)
from oriflamme.engine.actions import Action
from oriflamme.engine.events import Event

Slot = str | Sequence[str]


def default_families(players: int, variant: str) -> list[list[str]]:
    """Seat s plays family s (standard) or families 2s and 2s+1 (2-player)."""
    per = 2 if variant == "two-player" else 1
    return [[FAMILY_NAMES[s * per + i] for i in range(per)] for s in range(players)]


def parse_card(spec: str) -> dict[str, Any]:
    """One card in play from its words (see the module docstring)."""
    pid = None
    face_up = False
    tokens = 0
    rest = []
    for word in spec.split():
        if word.startswith("#"):
            pid = int(word[1:])
        elif word == "up":
            face_up = True
        elif word == "down":
            face_up = False
        elif word.endswith("t") and word[:-1].isdigit():
            tokens = int(word[:-1])
        else:
            rest.append(word)
    if len(rest) != 2:
        raise ValueError(f"a card in play is 'family kind [up] [Nt] [#pid]', not {spec!r}")
    family, kind = rest
    return {
        "pid": pid,
        "card": [family, None if kind == "?" else kind],
        "face_up": face_up,
        "tokens": tokens,
    }


def cards_data(specs: Iterable[str]) -> list[list[str | None]]:
    """Cards out of play ("red archer", "blue ?") as plain data."""
    out: list[list[str | None]] = []
    for spec in specs:
        family, kind = spec.split()
        out.append([family, None if kind == "?" else kind])
    return out


def position(
    queue: Sequence[Slot] = (),
    *,
    players: int = 3,
    variant: str = "standard",
    edition: str = "revised",
    families: list[list[str]] | None = None,
    round: int = 2,
    first_player: int = 0,
    direction: str | None = "left-to-right",
    scores: Sequence[int] | None = None,
    hands: Sequence[Sequence[str]] | None = None,
    set_aside: Sequence[Sequence[str]] | None = None,
    draw_piles: Sequence[Sequence[str]] | None = None,
    fronts: Sequence[Sequence[str]] | None = None,
    step: str = "place",
    placed: int = 0,
    index: int | None = None,
    ability: str | None = None,
    chosen: int | None = None,
    opening: int | None = None,
    open_for: str | None = None,
    next_pid: int | None = None,
) -> Game:
    """A `Game` built with `from_data` from a compact description.

    Defaults: 3 players, standard, revised edition, round 2, left-to-right,
    everyone at 1 point, empty fronts, and (without `hands`) one unused card
    in each hand so that play stops at the next round's placement. `step` "place" waits for the
    placement number `placed` of the round; a resolution step ("reveal",
    "eliminate", ..., "open") resolves the slot at `index`, with `ability`,
    `chosen`, `opening` and `open_for` as in `to_data`'s "resolving".
    """
    fams = families or default_families(players, variant)
    owner_of = {f: seat for seat, fs in enumerate(fams) for f in fs}
    slots: list[list[dict[str, Any]]] = []
    for slot in queue:
        specs = [slot] if isinstance(slot, str) else list(slot)
        slots.append([parse_card(s) for s in specs])
    taken = {c["pid"] for s in slots for c in s if c["pid"] is not None}
    counter = 0
    for s in slots:
        for c in s:
            if c["pid"] is None:
                while counter in taken:
                    counter += 1
                c["pid"] = counter
                taken.add(counter)
            c["owner"] = owner_of[c["card"][0]]
    if next_pid is None:
        next_pid = max(taken, default=-1) + 1

    def per_seat(rows: Sequence[Sequence[str]] | None) -> list[list[list[str | None]]]:
        if rows is None:
            return [[] for _ in range(players)]
        return [cards_data(row) for row in rows]

    if hands is None:
        in_play = [[c["card"] for s in slots for c in s]]
        hands = filler_hands(fams, in_play, set_aside, draw_piles, fronts)

    data: dict[str, Any] = {
        "players": players,
        "variant": variant,
        "edition": edition,
        "families": fams,
        "round": round,
        "first_player": first_player,
        "direction": direction,
        "scores": list(scores) if scores is not None else [1] * players,
        "hands": per_seat(hands),
        "set_aside": per_seat(set_aside),
        "draw_piles": per_seat(draw_piles),
        "fronts": per_seat(fronts),
        "queue": slots,
        "next_pid": next_pid,
        "step": step,
        "placed": placed,
    }
    if step not in ("place", "direction", "over"):
        data["resolving"] = {
            "index": index,
            "ability": ability,
            "chosen": chosen,
            "opening": opening,
            "open_for": open_for,
        }
    return from_data(data)


def filler_hands(fams: list[list[str]], *used_rows: Any) -> list[list[str]]:
    """One card per seat, of its first family and not used elsewhere, so that
    a position without explicit hands stops at the next round's placement
    instead of playing its remaining rounds with empty hands. A family with a
    card unknown to the engine gets a back, which rules out nothing when that
    card is opened."""
    used: set[tuple[str, str | None]] = set()
    for rows in used_rows:
        for row in rows or ():
            for c in row:
                family, kind = c if isinstance(c, list) else c.split()
                used.add((family, None if kind == "?" else kind))
    out = []
    for fs in fams:
        if (fs[0], None) in used:
            out.append([f"{fs[0]} ?"])
            continue
        free = [k.label for k in Kind if (fs[0], k.label) not in used]
        out.append([f"{fs[0]} {free[0]}"] if free else [])
    return out


def card_words(c: Card) -> str:
    return f"{FAMILY_NAMES[c.family]} {'?' if c.kind is None else c.kind.label}"


def describe(game: Game) -> list[Slot]:
    """The queue in `position`'s words, with every pid (stacks as lists)."""
    out: list[Slot] = []
    for slot in game.queue:
        words = []
        for c in slot:
            w = f"#{c.pid} {card_words(c.card)}"
            if c.face_up:
                w += " up"
            if c.tokens:
                w += f" {c.tokens}t"
            words.append(w)
        out.append(words[0] if len(words) == 1 else words)
    return out


def fronts(game: Game) -> list[list[str]]:
    """The cards in front of each seat (eliminated or discarded), as words."""
    return [[card_words(c) for c in row] for row in game.fronts]


def hand(game: Game, seat: int) -> list[str]:
    return [card_words(c) for c in game.hands[seat]]


def pid(game: Game, words: str) -> int:
    """The pid of the card in play named by `words` ("red soldier"), covered or not."""
    family, kind = words.split()
    wanted = card(family, kind)
    found = [c.pid for s in game.queue for c in s if c.card == wanted]
    if len(found) != 1:
        raise LookupError(f"{words!r} is not in the queue exactly once")
    return found[0]


def C(words: str) -> Card:
    """The card named by `words`: ``C("red spy")``; ``C("red ?")`` is a back."""
    family, kind = words.split()
    return card(family, None if kind == "?" else kind)


def assert_events(actual: Sequence[Event], expected: Sequence[Event]) -> None:
    """Events equal in type and fields (NamedTuples alone compare as tuples)."""
    assert [event_to_data(e) for e in actual] == [event_to_data(e) for e in expected]


def assert_illegal(game: Game, action: Action, match: str, seat: int | None = None) -> None:
    """`action` raises IllegalAction with a message matching `match`, and
    neither `check` nor `apply` changes the state or the pending decision."""
    before = to_data(game)
    decision = game.decision
    with pytest.raises(IllegalAction, match=match):
        game.check(action, seat)
    with pytest.raises(IllegalAction, match=match):
        game.apply(action, seat)
    assert to_data(game) == before
    assert game.decision == decision

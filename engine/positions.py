"""Positions: a game's state as plain data, per-seat views, and loading.

One format serves three purposes (docs/ENGINE.md, "Positions"):

* `to_data(game)`: the whole state, for storage and exact replay;
* `view(game, seat)`: what `seat` may know (ruling 21), the same shape with
  every other identity replaced by a card back; `view(game, None)` is the
  spectators' view;
* `from_data(data)`: builds a playable `Game` from any of these, so tests and
  bots can set up any position. Unknown identities (kind None) stay unknown
  and the engine asks their owner to open them when a rule needs them.

>>> from oriflamme.engine import new_game
>>> g = new_game(3, seed=1)
>>> from_data(to_data(g)).legal_actions() == g.legal_actions()
True
>>> view(g, 1)["hands"][0][0]
['red', None]
"""

from __future__ import annotations

from typing import Any

from .actions import DIRECTIONS
from .cards import (
    BACKS,
    COPYABLE,
    FAMILY_BY_NAME,
    FAMILY_NAMES,
    KIND_BY_NAME,
    Card,
    Kind,
    card_from_data,
    card_to_data,
    shown,
)
from .game import (
    CHOICE_STEP,
    COPY,
    DIRECTION,
    ELIMINATE,
    MOVE_CARD,
    MOVE_TO,
    OPEN,
    OVER,
    PLACE,
    REVEAL_OR_KEEP,
    ROUNDS,
    STEAL,
    Cursor,
    Game,
    InPlay,
    Rules,
    Step,
)

FORMAT = 1
_ABILITY_STEPS = (ELIMINATE, STEAL, COPY, MOVE_CARD, MOVE_TO)


def to_data(game: Game) -> dict[str, Any]:
    """The complete state as plain data (every identity the engine knows)."""
    return _dump(game, None, full=True)


def view(game: Game, seat: int | None) -> dict[str, Any]:
    """What `seat` may know; None gives the public (spectator) view.

    Hidden from a seat: other seats' hands and set-aside cards, every draw
    pile, and the identity of other seats' face-down cards in the queue.
    """
    data = _dump(game, seat, full=False)
    data["viewer"] = seat
    return data


def _mask(cards: list[Card], visible: bool, ordered: bool = False) -> list[list[str | None]]:
    """Cards as plain data, as backs unless `visible`. Hidden cards of an
    unordered pile are sorted by family: their order would tell which one
    left (in the 2-player variant, whether the card just drawn was played).
    A draw pile is `ordered`: the order of its families is public."""
    if visible:
        return [card_to_data(c) for c in cards]
    families = [c.family for c in cards] if ordered else sorted(c.family for c in cards)
    return [card_to_data(BACKS[f]) for f in families]


def _dump(game: Game, seat: int | None, full: bool) -> dict[str, Any]:
    g = game

    def sees(owner: int) -> bool:
        return full or owner == seat

    queue = []
    for slot in g.queue:
        stack = []
        for c in slot:
            shown = c.card if (c.face_up or sees(c.owner)) else BACKS[c.family]
            stack.append(
                {
                    "pid": c.pid,
                    "owner": c.owner,
                    "card": card_to_data(shown),
                    "face_up": c.face_up,
                    "tokens": c.tokens,
                }
            )
        queue.append(stack)
    cursor = g.cursor
    step = cursor.step
    resolving = None
    if step not in (PLACE, DIRECTION, OVER):
        resolving = {
            "index": cursor.index,
            "ability": None if cursor.ability is None else cursor.ability.label,
            "chosen": None if cursor.chosen is None else cursor.chosen.pid,
            "opening": None if cursor.opening is None else cursor.opening.pid,
            "open_for": None if cursor.open_for is None else cursor.open_for.value,
        }
    return {
        "format": FORMAT,
        "variant": g.rules.variant,
        "edition": g.rules.edition,
        "players": g.n,
        "families": [[FAMILY_NAMES[f] for f in fs] for fs in g.rules.families],
        "round": g.round,
        "first_player": g.first_player,
        "direction": g.direction,
        "scores": list(g.scores),
        "hands": [_mask(h, sees(s)) for s, h in enumerate(g.hands)],
        "set_aside": [_mask(h, sees(s)) for s, h in enumerate(g.set_aside)],
        "draw_piles": [_mask(h, full, ordered=True) for h in g.draw_piles],
        "fronts": [_mask(h, True) for h in g.fronts],
        "queue": queue,
        "next_pid": g.next_pid,
        "step": step.value,
        "placed": cursor.placed if step == PLACE else None,
        "resolving": resolving,
        "winners": list(g.winners),
    }


# ---------------------------------------------------------------------- loading


class PositionError(ValueError):
    """Plain data that does not describe a legal position; says what is wrong."""


def _need(cond: bool, message: str) -> None:
    if not cond:
        raise PositionError(message)


def _int(data: dict[str, Any], key: str, lo: int, hi: int, default: int | None = None) -> int:
    v = data.get(key, default)
    _need(
        isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi,
        f"{key!r} must be an integer in {lo}..{hi}, got {shown(v)}",
    )
    return v  # type: ignore[return-value]


def _cards(value: Any, what: str) -> list[Card]:
    _need(isinstance(value, list), f"{what} must be a list of cards")
    try:
        return [card_from_data(c) for c in value]
    except ValueError as e:
        raise PositionError(f"{what}: {e}") from None


def from_data(data: dict[str, Any]) -> Game:
    """A playable game from plain data (a state, a view, or a hand-built
    position). Raises `PositionError` naming the first problem found."""
    _need(isinstance(data, dict), "a position is a map")
    try:
        fams = tuple(tuple(FAMILY_BY_NAME[f] for f in fs) for fs in data.get("families") or ())
        rules = Rules(
            _int(data, "players", 2, 5),
            data.get("variant", "standard"),
            data.get("edition", "revised"),
            fams,
        )
    except (KeyError, TypeError) as e:
        raise PositionError(f"bad families: {e}") from None
    except ValueError as e:
        raise PositionError(str(e)) from None
    n = rules.players
    g = Game(rules, _int(data, "first_player", 0, n - 1, 0))
    g.round = _int(data, "round", 1, ROUNDS, 1)
    direction = data.get("direction")
    _need(direction is None or direction in DIRECTIONS, f"direction is one of {DIRECTIONS} or None")
    g.direction = direction
    family_seat = {f: s for s, fs in enumerate(rules.families) for f in fs}

    def seat_cards(key: str) -> list[list[Card]]:
        rows = data.get(key, [[] for _ in range(n)])
        _need(isinstance(rows, list) and len(rows) == n, f"{key!r} needs one list per seat")
        out = []
        for seat, row in enumerate(rows):
            cards = _cards(row, f"{key}[{seat}]")
            _need(
                all(family_seat.get(c.family) == seat for c in cards),
                f"{key}[{seat}] holds a card of another seat's family",
            )
            out.append(cards)
        return out

    g.hands = seat_cards("hands")
    g.set_aside = seat_cards("set_aside")
    g.draw_piles = seat_cards("draw_piles")
    g.fronts = seat_cards("fronts")
    scores = data.get("scores", [1] * n)
    _need(
        isinstance(scores, list)
        and len(scores) == n
        and all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in scores),
        "scores: one non-negative integer per seat",
    )
    g.scores = list(scores)

    queue_data = data.get("queue", [])
    _need(isinstance(queue_data, list), "queue must be a list of slots")
    pids: set[int] = set()
    for i, slot_data in enumerate(queue_data):
        _need(
            isinstance(slot_data, list) and bool(slot_data),
            f"slot {i} must be a non-empty list (bottom first)",
        )
        slot = []
        for cd in slot_data:
            _need(isinstance(cd, dict), f"slot {i}: a card in play is a map")
            pid = _int(cd, "pid", 0, 1 << 20)
            _need(pid not in pids, f"pid {pid} appears twice")
            pids.add(pid)
            (c,) = _cards([cd.get("card")], f"card {pid}")
            owner = _int(cd, "owner", 0, n - 1)
            _need(
                family_seat.get(c.family) == owner, f"card {pid} is not of a family of seat {owner}"
            )
            face_up = cd.get("face_up", False)
            _need(isinstance(face_up, bool), f"card {pid}: face_up must be a boolean")
            _need(
                not (face_up and c.kind is None),
                f"card {pid} is face up, so its identity is public",
            )
            tokens = _int(cd, "tokens", 0, 1 << 16)
            slot.append(InPlay(pid, owner, c.family, c.kind, face_up, tokens))
        _need(len({c.owner for c in slot}) == 1, f"slot {i} mixes owners")
        if rules.variant == "two-player":
            _need(len({c.family for c in slot}) == 1, f"slot {i} mixes families")
        g.queue.append(slot)
    g.next_pid = _int(data, "next_pid", 0, 1 << 20, max(pids, default=-1) + 1)
    _need(all(p < g.next_pid for p in pids), "next_pid must exceed every pid in play")

    known: list[Card] = [
        c
        for rows in (g.hands, g.set_aside, g.draw_piles, g.fronts)
        for row in rows
        for c in row
        if c.kind is not None
    ]
    known += [c.card for s in g.queue for c in s if c.kind is not None]
    _need(len(known) == len(set(known)), "a card is in two places")
    per_family = [0] * len(FAMILY_NAMES)
    for rows in (g.hands, g.set_aside, g.draw_piles, g.fronts):
        for row in rows:
            for c in row:
                per_family[c.family] += 1
    for s in g.queue:
        for ip in s:
            per_family[ip.family] += 1
    for f, count in enumerate(per_family):
        _need(count <= 10, f"family {FAMILY_NAMES[f]} has {count} cards; a family has 10")

    step = data.get("step", PLACE)
    _need(
        step in (DIRECTION, PLACE, REVEAL_OR_KEEP, OPEN, *_ABILITY_STEPS, OVER),
        f"unknown step {shown(step)}",
    )
    g.cursor = _load_cursor(g, Step(step), data)
    g.over = step == OVER
    g._legal = None
    return g


def _load_cursor(g: Game, step: Step, data: dict[str, Any]) -> Cursor:
    """The cursor (where the game stands) that `data` describes, checked."""
    if step == DIRECTION:
        _need(g.direction is None, "the direction is already chosen")
    else:
        _need(g.direction is not None, f"the direction must be chosen before step '{step}'")
    # With no card left to place, every placement still to come would be skipped
    # without a decision and the rest of the game would play itself: refused.
    if step == DIRECTION or (step not in (PLACE, OVER) and g.round < ROUNDS):
        # 2-player variant: cards are drawn at the round's end.
        refill = step != DIRECTION and g.two_player and any(g.draw_piles)
        _need(
            any(g.hands) or refill,
            "every hand is empty: no placement could be made in the rounds to come, so the"
            " rest of the game would play itself; give the seats their cards",
        )
    if step == PLACE:
        order = g.placement_order()
        _need(
            data.get("placed") != len(order),
            f"'placed' is {len(order)}: every placement of the round is made, so its"
            " resolution has begun; give the position at the resolution's first decision"
            " (its step and 'resolving')",
        )
        placed = _int(data, "placed", 0, len(order) - 1, 0)
        _need(bool(g.hands[order[placed]]), "the seat to place has no card")
        # (Round 1 may have fewer slots than placements: a seat whose player
        # timed out is skipped, `Game.skip_placement`.)
        return Cursor(PLACE, placed)
    if step == OVER:
        winners = data.get("winners")
        _need(
            isinstance(winners, list) and all(isinstance(w, int) and 0 <= w < g.n for w in winners),
            "winners: a list of seats",
        )
        g.winners = tuple(winners)  # type: ignore[arg-type]
        return Cursor(OVER)
    if step == DIRECTION:
        return Cursor(DIRECTION)
    return _load_resolution(g, step, data.get("resolving"))


def _load_resolution(g: Game, step: Step, r: Any) -> Cursor:
    _need(isinstance(r, dict), "a resolution step needs 'resolving'")
    index = _int(r, "index", 0, len(g.queue) - 1) if g.queue else -1
    _need(index >= 0, "the slot being resolved does not exist")
    c = Cursor(step)
    c.index = index
    c.slot = g.queue[index]
    actor = c.actor = c.slot[-1]
    ability = r.get("ability")
    if step == REVEAL_OR_KEEP:
        _need(not actor.face_up, "keep or reveal is asked only of a face-down top card")
    elif step in _ABILITY_STEPS or (step == OPEN and r.get("open_for") == ELIMINATE):
        _need(
            isinstance(ability, str) and ability in KIND_BY_NAME,
            f"resolving.ability must name the ability in use, got {shown(ability)}",
        )
        used = c.ability = KIND_BY_NAME[ability]
        _need(actor.face_up, "the acting card must be face up")
        actor_kind = actor.kind
        _need(
            used == actor_kind or (actor_kind == Kind.SHAPESHIFTER and used in COPYABLE),
            f"a {actor_kind.label if actor_kind is not None else '?'} cannot apply the "
            f"{used.label} ability (only a Shapeshifter copies another card's)",
        )
        wanted = CHOICE_STEP.get(used)
        expected_step = ELIMINATE if step == OPEN else step
        if expected_step == MOVE_TO:
            expected_step = MOVE_CARD
        _need(
            wanted == expected_step,
            f"the {used.label} ability does not wait in step '{step}'",
        )
    if step == MOVE_TO:
        chosen = r.get("chosen")
        found = g.find(chosen) if isinstance(chosen, int) else None
        _need(
            found is not None and found[1] is not actor,
            "resolving.chosen must be another top card",
        )
        c.chosen = found[1]  # type: ignore[index]
    if step == OPEN:
        open_for = r.get("open_for")
        _need(
            open_for in (REVEAL_OR_KEEP, ELIMINATE), "resolving.open_for is 'reveal' or 'eliminate'"
        )
        pid = r.get("opening")
        found = g.find(pid) if isinstance(pid, int) else None
        _need(
            found is not None and found[1].kind is None,
            "resolving.opening must be a top card of unknown identity",
        )
        c.opening = found[1]  # type: ignore[index]
        c.open_for = Step(open_for)
        if open_for == REVEAL_OR_KEEP:
            _need(c.opening is actor, "a revealed card to open is the card being resolved")
    if step in _ABILITY_STEPS and step != MOVE_TO:
        g.cursor = c
        _need(bool(g.ability_choices(c.ability)), "the ability has no legal choice here")  # type: ignore[arg-type]
    return c

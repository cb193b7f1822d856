"""The rules of Oriflamme as one synchronous state machine.

How this works
--------------
`Game` holds the whole table. At every moment exactly one seat owes one
decision (`Game.decision`), whose `kind` is the `step` the game is waiting in:

    direction -> place (each seat in turn) -> resolution -> place ... -> over

Where the game stands is one value, `Game.cursor` (a `Cursor`): the step and
what it is about. Each step has one method per concern (who decides, the
legal actions, the check, the application: `_seat_*`, `_legal_*`,
`_check_*`, `_apply_*`), and the tables after the class (`_SEAT`, `_LEGAL`,
`_CHECK`, `_APPLY`) map every `Step` to them.

Resolution walks the queue by index in resolution order (the queue is kept in
that order; `direction` only says how to draw it). `cursor.index` is the slot
being resolved; every structural change goes through `_remove_top`,
`_drop_slot` and `_move`, which shift it when a slot before it appears or
vanishes, so the walk follows slots by identity even as cards move and
disappear. When the slot being resolved loses its top card (an Intrigue
discarded, an Archer that shot itself, an attacker discarded by an Ambush),
the card under it is handled at once (ruling 6); a slot already passed is not
revisited.

Abilities run as a chain of small methods returning True when they stopped
to wait for a decision (a target, a move, an opening) and False when the
acting card is done; `_continue` then moves on to the next top card. A
decision with a single legal option is applied at once, except openings and
keep/reveal, which always belong to a player.

Identities may be unknown (kind None): the server's engine never sees a
face-down card. When a rule needs one (its owner reveals it, or it is
eliminated) the game stops in the `open` step and the owner answers with
`Open(card)`.

`apply` checks an action completely before changing anything, so an illegal
action raises `IllegalAction` and leaves the state as it was. The legal
actions of a decision are computed once, as a tuple (`_legal`); resolution
steps fill it as they stop, placements when first asked. This module is the
engine's hot path (`bench/engine.py`): it prefers plain loops, local names
and interned values where that is measurably faster.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NamedTuple

from .actions import (
    DIRECTION_CHOICES,
    DIRECTIONS,
    FIRST,
    KEEP,
    LAST,
    REVEAL,
    Action,
    ChooseDirection,
    IllegalAction,
    Keep,
    MoveTo,
    Open,
    Place,
    Reveal,
    Target,
    move_to,
    place,
    target,
)
from .cards import BACKS, CARDS, COPYABLE, FAMILY_NAMES, KIND_NAMES, KINDS, Card, Kind
from .events import (
    AbilityUsed,
    DirectionChosen,
    Discarded,
    Drew,
    Eliminated,
    Event,
    GameEnded,
    Kept,
    Moved,
    NoEffect,
    Placed,
    PlacementSkipped,
    Revealed,
    RoundEnded,
    RoundStarted,
    Scored,
    Stolen,
    Uncovered,
)

# Events (and deals) are NamedTuples; building them with tuple.__new__ skips the
# Python __new__ each NamedTuple class has (the hot path makes ~2 per decision).
_ev = tuple.__new__

STANDARD = "standard"
TWO_PLAYER = "two-player"
VARIANTS = (STANDARD, TWO_PLAYER)
REVISED = "revised"
FIRST_EDITION = "first"
EDITIONS = (REVISED, FIRST_EDITION)
ROUNDS = 6


class Step(StrEnum):
    """The step a game is in: the kind of decision it waits for (a
    `Decision`'s `kind`), or OVER. A str, so its plain data is its value."""

    DIRECTION = "direction"
    PLACE = "place"
    REVEAL_OR_KEEP = "reveal"
    OPEN = "open"
    ELIMINATE = "eliminate"
    STEAL = "steal"
    COPY = "copy"
    MOVE_CARD = "move_card"
    MOVE_TO = "move_to"
    OVER = "over"


DIRECTION = Step.DIRECTION
PLACE = Step.PLACE
REVEAL_OR_KEEP = Step.REVEAL_OR_KEEP
OPEN = Step.OPEN
ELIMINATE = Step.ELIMINATE
STEAL = Step.STEAL
COPY = Step.COPY
MOVE_CARD = Step.MOVE_CARD
MOVE_TO = Step.MOVE_TO
OVER = Step.OVER
STEPS: tuple[Step, ...] = tuple(Step)

ARCHER = Kind.ARCHER
SOLDIER = Kind.SOLDIER
SPY = Kind.SPY
HEIR = Kind.HEIR
LORD = Kind.LORD
SHAPESHIFTER = Kind.SHAPESHIFTER
ASSASSINATION = Kind.ASSASSINATION
ROYAL_DECREE = Kind.ROYAL_DECREE
AMBUSH = Kind.AMBUSH
CONSPIRACY = Kind.CONSPIRACY

# The step an ability waits in when it has a choice to make; the others
# (Heir, Lord, Ambush, Conspiracy) never ask anything.
CHOICE_STEP = {
    ARCHER: ELIMINATE,
    SOLDIER: ELIMINATE,
    ASSASSINATION: ELIMINATE,
    SPY: STEAL,
    SHAPESHIFTER: COPY,
    ROYAL_DECREE: MOVE_CARD,
}


@dataclass(frozen=True, slots=True)
class Rules:
    """The table's settings. `families[seat]` are the families that seat plays."""

    players: int
    variant: str = STANDARD
    edition: str = REVISED
    families: tuple[tuple[int, ...], ...] = ()

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise ValueError(f"variant is one of {VARIANTS}, not {self.variant!r}")
        if self.edition not in EDITIONS:
            raise ValueError(f"edition is one of {EDITIONS}, not {self.edition!r}")
        wanted = (2, 2) if self.variant == TWO_PLAYER else (3, 5)
        if not wanted[0] <= self.players <= wanted[1]:
            raise ValueError(
                f"the {self.variant} game seats {wanted[0]}-{wanted[1]} players, not {self.players}"
            )
        if not self.families:
            per = 2 if self.variant == TWO_PLAYER else 1
            fams = tuple(tuple(range(s * per, s * per + per)) for s in range(self.players))
            object.__setattr__(self, "families", fams)
        per = 2 if self.variant == TWO_PLAYER else 1
        flat = [f for fs in self.families for f in fs]
        if (
            len(self.families) != self.players
            or any(len(fs) != per for fs in self.families)
            or len(set(flat)) != len(flat)
            or not all(0 <= f < len(FAMILY_NAMES) for f in flat)
        ):
            raise ValueError(f"each seat plays {per} distinct families, not {self.families!r}")

    @property
    def hand_left_at_end(self) -> int:
        return 2 if self.variant == TWO_PLAYER else 1


class SeatDeal(NamedTuple):
    """One seat's cards at the start: hand, set aside, draw pile (top first)."""

    hand: tuple[Card, ...]
    set_aside: tuple[Card, ...]
    draw_pile: tuple[Card, ...] = ()


def layout_deal(rules: Rules, seat: int, orders: Sequence[Sequence[Kind]]) -> SeatDeal:
    """Lay out one seat's deal from a shuffled order of each of its families.

    Standard game: the first 3 cards of the order are set aside, the other 7
    are the hand. Two-player variant (per family): the first 3 are set aside,
    the next 3 go to the hand, the last 4 go to the draw pile, which alternates
    families starting with the seat's first family.

    >>> rules = Rules(3)
    >>> deal = layout_deal(rules, 0, [list(Kind)])
    >>> [c.kind.label for c in deal.set_aside]
    ['archer', 'soldier', 'spy']
    """
    fams = rules.families[seat]
    if len(orders) != len(fams) or any(sorted(o) != list(KINDS) for o in orders):
        raise ValueError("one complete order of the ten kinds is needed per family")
    return _layout(rules.variant, fams, orders)


def _layout(variant: str, fams: tuple[int, ...], orders: Sequence[Sequence[Kind]]) -> SeatDeal:
    """`layout_deal` without its checks."""
    if variant == STANDARD:
        cards = tuple(map(CARDS[fams[0]].__getitem__, orders[0]))
        return _ev(SeatDeal, (cards[3:], cards[:3], ()))
    a, b = ([CARDS[f][k] for k in order] for f, order in zip(fams, orders, strict=True))
    pile = tuple(c for pair in zip(a[6:], b[6:], strict=True) for c in pair)
    return SeatDeal(tuple(a[3:6] + b[3:6]), tuple(a[:3] + b[:3]), pile)


def random_deal(rules: Rules, rng: random.Random) -> list[SeatDeal]:
    """A deal for every seat from `rng` (self-play and tests; the protocol has
    its own fair, verifiable derivation)."""
    deals = []
    shuffle = rng.shuffle
    variant = rules.variant
    for fams in rules.families:
        orders = []
        for _ in fams:
            order = list(KINDS)
            shuffle(order)
            orders.append(order)
        deals.append(_layout(variant, fams, orders))  # complete orders: no checks needed
    return deals


def hidden_deal(rules: Rules) -> list[SeatDeal]:
    """Every seat's deal as card backs: what a referee that never sees a hand
    knows (the families of hands, set-aside cards and draw piles are public)."""
    orders = [list(KINDS)] * (2 if rules.variant == TWO_PLAYER else 1)
    deals = []
    for seat in range(rules.players):
        d = layout_deal(rules, seat, orders)
        deals.append(SeatDeal(*(tuple(BACKS[c.family] for c in part) for part in d)))
    return deals


class InPlay:
    """A card in the queue. `kind` is None when this engine does not know it."""

    __slots__ = ("pid", "owner", "family", "kind", "face_up", "tokens")

    def __init__(
        self, pid: int, owner: int, family: int, kind: Kind | None, face_up: bool, tokens: int
    ) -> None:
        self.pid = pid
        self.owner = owner
        self.family = family
        self.kind = kind
        self.face_up = face_up
        self.tokens = tokens

    @property
    def card(self) -> Card:
        return BACKS[self.family] if self.kind is None else CARDS[self.family][self.kind]

    def clone(self) -> InPlay:
        """An independent copy of this card in play."""
        c = _new_inplay(InPlay)
        c.pid = self.pid
        c.owner = self.owner
        c.family = self.family
        c.kind = self.kind
        c.face_up = self.face_up
        c.tokens = self.tokens
        return c

    def __repr__(self) -> str:
        state = "up" if self.face_up else "down"
        return f"<#{self.pid} seat {self.owner} {self.card} {state} {self.tokens}t>"


_new_inplay = object.__new__


def _card(c: InPlay) -> Card:
    """`c.card` for a card whose identity is known, without the property."""
    return CARDS[c.family][c.kind]  # type: ignore[index]


class Cursor:
    """Where a game stands: the step it waits in and what that step is about,
    as one value (`Game.cursor`).

    `placed` counts the placements made this round (step PLACE). During
    resolution, `index` is the slot being resolved, `slot` that slot (a list,
    bottom first) and `actor` its acting top card; `ability` is the ability
    being applied (a Shapeshifter's copy differs from its kind), `chosen` the
    card a Royal Decree moves (step MOVE_TO), `opening` the card whose
    identity is asked and `open_for` why (step OPEN: REVEAL_OR_KEEP or
    ELIMINATE). Outside resolution `index` is -1 and the rest is empty.
    """

    __slots__ = (
        "step",
        "placed",
        "index",
        "slot",
        "actor",
        "ability",
        "chosen",
        "opening",
        "open_for",
    )

    def __init__(self, step: Step = DIRECTION, placed: int = 0) -> None:
        self.step = step
        self.placed = placed
        self.index = -1
        self.slot: list[InPlay] = []
        self.actor: InPlay | None = None
        self.ability: Kind | None = None
        self.chosen: InPlay | None = None
        self.opening: InPlay | None = None
        self.open_for: Step | None = None

    def __repr__(self) -> str:
        fields = " ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"<Cursor {fields}>"


class Decision(NamedTuple):
    """Who must decide what now. `pid` is the card concerned (the acting card,
    or the card to open); `options` is the complete tuple of legal actions."""

    seat: int
    kind: Step
    options: tuple[Action, ...]
    pid: int | None


_KEEP_OR_REVEAL: tuple[Action, ...] = (KEEP, REVEAL)
_NO_ACTIONS: tuple[Action, ...] = ()
# The interned placements of each card (and back), as a row: [0] its
# placements at the ends of an empty queue (only "first"), [1] at the ends of
# a queue with cards ("first", "last"), [2 + pid] on top card pid (pid < 64;
# None until first needed, which keeps the import quick).
_PLACES: dict[Card, list[Any]] = {}  # Any: a row mixes tuples and actions
for _c in (*(c for row in CARDS for c in row), *BACKS):
    _PLACES[_c] = [(place(_c, FIRST),), (place(_c, FIRST), place(_c, LAST))] + [None] * 64
del _c


def _cover(row: list[Any], c: Card, pid: int) -> Action:
    """The interned placement of `c` (whose `_PLACES` row is `row`) on `pid`."""
    if pid >= 64:
        return place(c, pid)
    p = row[2 + pid]
    if p is None:
        p = row[2 + pid] = place(c, pid)
    return p


class Game:
    """A game of Oriflamme. Build one with `new_game` or `positions.from_data`.

    >>> g = new_game(3, seed=7)
    >>> g.decision.kind == Step.DIRECTION, g.decision.seat
    (True, 0)
    >>> events = g.apply(g.legal_actions()[0])
    >>> g.decision.kind
    <Step.PLACE: 'place'>
    """

    def __init__(self, rules: Rules, first_player: int = 0) -> None:
        n = rules.players
        self.rules = rules
        self.n = n
        self.two_player = rules.variant == TWO_PLAYER
        self.round = 1
        self.first_player = first_player
        self.direction: str | None = None
        self.scores = [1] * n
        self.hands: list[list[Card]] = [[] for _ in range(n)]
        self.set_aside: list[list[Card]] = [[] for _ in range(n)]
        self.draw_piles: list[list[Card]] = [[] for _ in range(n)]
        self.fronts: list[list[Card]] = [[] for _ in range(n)]
        self.queue: list[list[InPlay]] = []
        self.next_pid = 0
        self.order = self.placement_order()
        self.cursor = Cursor(DIRECTION)
        # True once the game is over: the same as `cursor.step is Step.OVER`,
        # kept as a plain attribute since every game loop asks it.
        self.over = False
        self.winners: tuple[int, ...] = ()
        # The pending decision's legal actions, once asked (None: not yet).
        self._legal: tuple[Action, ...] | None = None

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Unpickling: a game pickled by an older version (a server's saved
        lobby, before where the game stands was one `Cursor`) is brought up
        to date from its loose attributes."""
        if "cursor" not in state:
            cursor = Cursor(state.pop("step"), state.pop("place_turn", 0))
            cursor.index = state.pop("cur", -1)
            cursor.slot = state.pop("cur_slot", [])
            for name in ("actor", "ability", "chosen", "opening", "open_for"):
                setattr(cursor, name, state.pop(name, None))
            state["cursor"] = cursor
            state["over"] = cursor.step is Step.OVER
            state["_legal"] = None
        self.__dict__.update(state)

    def copy(self) -> Game:
        """An independent copy of the game, for search: playing on either
        leaves the other as it was. Much cheaper than `to_data`/`from_data`.

        >>> g = new_game(3, seed=2)
        >>> h = g.copy()
        >>> _ = h.apply(h.legal_actions()[0])
        >>> g.step, h.step
        (<Step.DIRECTION: 'direction'>, <Step.PLACE: 'place'>)
        """
        g = _new_game(Game)
        g.rules = self.rules
        g.n = self.n
        g.two_player = self.two_player
        g.round = self.round
        g.first_player = self.first_player
        g.direction = self.direction
        g.scores = self.scores[:]
        g.hands = list(map(list.copy, self.hands))  # cards are immutable: shared
        g.set_aside = list(map(list.copy, self.set_aside))
        g.draw_piles = list(map(list.copy, self.draw_piles))
        g.fronts = list(map(list.copy, self.fronts))
        old_queue = self.queue
        clone = InPlay.clone
        g.queue = queue = [list(map(clone, s)) for s in old_queue]
        g.next_pid = self.next_pid
        g.order = self.order[:]
        g.winners = self.winners
        g.over = self.over
        g._legal = self._legal  # a tuple of immutable actions: shared
        c = self.cursor
        k = g.cursor = Cursor(c.step, c.placed)
        k.index = c.index
        k.ability = c.ability
        k.open_for = c.open_for
        if c.actor is not None:
            k.actor = _twin(c.actor, old_queue, queue)
        if c.chosen is not None:
            k.chosen = _twin(c.chosen, old_queue, queue)
        if c.opening is not None:
            k.opening = _twin(c.opening, old_queue, queue)
        if c.slot:
            slot = c.slot
            k.slot = next((queue[i] for i, s in enumerate(old_queue) if s is slot), [])
        return g

    # ------------------------------------------------------------------ queries

    @property
    def step(self) -> Step:
        """The step the game waits in (`cursor.step`)."""
        return self.cursor.step

    def placement_order(self) -> list[int]:
        """Seats in placement order this round (2-player: first, second, first, second).

        `self.order` caches it for the current round."""
        fp = self.first_player
        if self.two_player:
            return [fp, 1 - fp, fp, 1 - fp]
        n = self.n
        return [*range(fp, n), *range(fp)]

    def current_seat(self) -> int | None:
        """The seat that owes the pending decision (None when the game is over)."""
        return _SEAT[self.cursor.step](self, self.cursor)

    @property
    def decision(self) -> Decision | None:
        """The pending decision, or None once the game is over."""
        c = self.cursor
        step = c.step
        seat = _SEAT[step](self, c)
        if seat is None:
            return None
        if step is OPEN:
            assert c.opening is not None
            pid: int | None = c.opening.pid
        elif step is PLACE or c.actor is None:
            pid = None
        else:
            pid = c.actor.pid
        return _ev(Decision, (seat, step, self.legal_actions(), pid))

    def legal_actions(self) -> tuple[Action, ...]:
        """Every legal action for the pending decision (empty when over), as a
        tuple of immutable actions: computed once per decision."""
        legal = self._legal
        if legal is None:
            legal = self._legal = _LEGAL[self.cursor.step](self)
        return legal

    def tops(self) -> list[InPlay]:
        """The top card of every slot, in resolution order."""
        return [s[-1] for s in self.queue]

    def find(self, pid: int) -> tuple[int, InPlay] | None:
        """(slot index, card) of the *top* card `pid`, or None."""
        for i, s in enumerate(self.queue):
            top = s[-1]
            if top.pid == pid:
                return i, top
        return None

    def _legal_place(self) -> tuple[Action, ...]:
        # Plain loops: on this hot path they beat comprehensions and map (3.11).
        seat = self.order[self.cursor.placed]
        hand = self.hands[seat]
        q = self.queue
        ends = 1 if q else 0  # an empty queue has one end: "first"
        options: list[Action] = []
        seen: list[Card] = []  # backs of one family are one choice
        own: list[InPlay] = []
        if self.round > 1:  # a card may cover one of the seat's own top cards
            for s in q:
                top = s[-1]
                if top.owner == seat:
                    own.append(top)
        if not own:
            for c in hand:
                if c.kind is None:
                    if c in seen:
                        continue
                    seen.append(c)
                options += _PLACES[c][ends]
            return tuple(options)
        if self.two_player:
            for c in hand:
                if c.kind is None:
                    if c in seen:
                        continue
                    seen.append(c)
                row = _PLACES[c]
                options += row[ends]
                for top in own:
                    if top.family == c.family:  # a stack never mixes families
                        options.append(_cover(row, c, top.pid))
            return tuple(options)
        pids = []  # where _PLACES rows hold the covers
        for top in own:
            p = top.pid
            if p >= 64:
                return self._place_options_past_63(hand, ends, own)
            pids.append(p + 2)
        for c in hand:
            if c.kind is None:
                if c in seen:
                    continue
                seen.append(c)
            row = _PLACES[c]
            options += row[ends]
            for i in pids:
                p = row[i]
                options.append(p if p is not None else _cover(row, c, i - 2))
        return tuple(options)

    def _place_options_past_63(
        self, hand: list[Card], ends: int, own: list[InPlay]
    ) -> tuple[Action, ...]:
        """`_legal_place` when a pid to cover is past the interned ones."""
        options: list[Action] = []
        seen: list[Card] = []
        for c in hand:
            if c.kind is None:
                if c in seen:
                    continue
                seen.append(c)
            row = _PLACES[c]
            options += row[ends]
            for top in own:
                options.append(_cover(row, c, top.pid))
        return tuple(options)

    def ability_choices(self, ability: Kind) -> list[InPlay]:
        """The top cards the acting card could choose if it applied `ability`
        now, from its slot (a player may ask this before revealing)."""
        q = self.queue
        c = self.cursor
        cur = c.index
        actor = c.actor
        assert actor is not None
        if ability in (SOLDIER, SPY, SHAPESHIFTER):
            adj = []
            if cur > 0:
                adj.append(q[cur - 1][-1])
            if cur + 1 < len(q):
                adj.append(q[cur + 1][-1])
            if ability == SOLDIER:
                return adj
            if ability == SPY:
                fam = actor.family
                rivals = []
                for t in adj:
                    if t.family != fam:
                        rivals.append(t)
                return rivals or adj
            return [t for t in adj if t.face_up and t.kind in COPYABLE]
        if ability == ARCHER:
            if len(q) == 1:
                return [q[0][-1]]
            return [q[0][-1], q[-1][-1]]
        if ability == ASSASSINATION:
            return [s[-1] for s in q]
        if ability == ROYAL_DECREE:
            return [s[-1] for s in q if s[-1] is not actor]
        return []

    def _move_indices(self) -> list[int]:
        """Royal Decree: the queue indices the chosen card may end at. Putting a
        lone card back where it was is not a move, so it is not offered."""
        chosen = self.cursor.chosen
        assert chosen is not None
        found = self.find(chosen.pid)
        assert found is not None
        j = found[0]
        if len(self.queue[j]) > 1:
            return list(range(len(self.queue) + 1))
        return [i for i in range(len(self.queue)) if i != j]

    def _open_candidates(self, card: InPlay) -> list[Kind]:
        """Identities `card` could have, from what this engine knows."""
        fam = card.family
        known: set[Kind] = set()
        for s in self.queue:
            for ip in s:
                if ip.family == fam and ip.kind is not None and ip is not card:
                    known.add(ip.kind)
        seat = card.owner
        for pile in (
            self.fronts[seat],
            self.hands[seat],
            self.set_aside[seat],
            self.draw_piles[seat],
        ):
            for c in pile:
                if c.family == fam and c.kind is not None:
                    known.add(c.kind)
        return [k for k in KINDS if k not in known]

    # ------------------------------------------------------------------ checking

    def check(self, action: Action, seat: int | None = None) -> None:
        """Raise `IllegalAction` naming what is wrong if `action` is not legal
        now (for `seat`, when given). Never changes the state."""
        step = self.cursor.step
        if step is OVER:
            raise IllegalAction("the game is over")
        if seat is not None:
            self._check_seat(seat)
        _CHECK[step](self, action)

    def _check_seat(self, seat: int) -> None:
        c = self.cursor
        step = c.step
        if step is OVER:
            raise IllegalAction("the game is over")
        owner = _SEAT[step](self, c)
        if seat != owner:
            raise IllegalAction(f"not your turn: seat {owner} must decide ({step})")

    def check_opening(self, pid: int, card: object) -> None:
        """Raise `IllegalAction` unless `card` may be the identity of the
        face-down card `pid` in the queue (covered or not), as far as this
        engine knows. Changes nothing.

        The referee asks this before it applies a reveal and its opening, so
        that a refused opening leaves the game as it was.
        """
        found = next((c for s in self.queue for c in s if c.pid == pid), None)
        if found is None or found.face_up:
            raise IllegalAction(f"there is no face-down card {pid} in the queue")
        if not isinstance(card, Card):
            raise IllegalAction(f"open with a card, not {card!r}")
        if card.family != found.family or card.kind is None:
            raise IllegalAction(f"card {pid} is a {FAMILY_NAMES[found.family]} card")
        if found.kind is not None:
            if card.kind != found.kind:
                raise IllegalAction(f"card {pid} is not {card}")
        elif card.kind not in self._open_candidates(found):
            raise IllegalAction(f"{card} is accounted for elsewhere; it cannot be card {pid}")

    # One method per step for who decides, the legal actions, the check and
    # the application; the tables after the class map each step to them.

    def _seat_direction(self, c: Cursor) -> int | None:
        return self.first_player

    def _seat_place(self, c: Cursor) -> int | None:
        return self.order[c.placed]

    def _seat_open(self, c: Cursor) -> int | None:
        assert c.opening is not None
        return c.opening.owner

    def _seat_actor(self, c: Cursor) -> int | None:
        assert c.actor is not None
        return c.actor.owner

    def _seat_over(self, c: Cursor) -> int | None:
        return None

    def _legal_direction(self) -> tuple[Action, ...]:
        return DIRECTION_CHOICES

    def _legal_reveal(self) -> tuple[Action, ...]:
        return _KEEP_OR_REVEAL

    def _legal_open(self) -> tuple[Action, ...]:
        opening = self.cursor.opening
        assert opening is not None
        row = CARDS[opening.family]
        return tuple(Open(row[k]) for k in self._open_candidates(opening))

    def _legal_target(self) -> tuple[Action, ...]:
        ability = self.cursor.ability
        assert ability is not None
        return _targets(self.ability_choices(ability))

    def _legal_move_to(self) -> tuple[Action, ...]:
        return tuple(move_to(i) for i in self._move_indices())

    def _legal_over(self) -> tuple[Action, ...]:
        return _NO_ACTIONS

    def _check_direction(self, action: Action) -> None:
        if type(action) is not ChooseDirection or action.direction not in DIRECTIONS:
            shown = " or ".join(repr(d) for d in DIRECTIONS)
            if type(action) is ChooseDirection:
                raise IllegalAction(f"choose the direction: {shown}, not {action.direction!r}")
            raise IllegalAction(
                f"choose the direction ({shown}): the pending decision is not a"
                f" {type(action).__name__}"
            )

    def _check_place(self, action: Action) -> None:
        if type(action) is not Place:
            raise IllegalAction(f"expected a placement, got {type(action).__name__}")
        seat = self.order[self.cursor.placed]
        c = action.card
        if not isinstance(c, Card):
            raise IllegalAction(f"place a card, not {c!r}")
        if c not in self.hands[seat]:
            families = sorted({held.family for held in self.hands[seat]})
            if families and c.family not in families:
                held = " or ".join(FAMILY_NAMES[f] for f in families)
                raise IllegalAction(
                    f"seat {seat} places {held} cards, not {FAMILY_NAMES[c.family]}"
                )
            raise IllegalAction(f"{c} is not in seat {seat}'s hand")
        at = action.at
        if at == FIRST:
            return
        if at == LAST:
            if not self.queue:
                raise IllegalAction("the queue is empty: the first card goes 'first' (the middle)")
            return
        if type(at) is not int:
            raise IllegalAction(f"place at 'first', 'last' or on a pid, not {at!r}")
        if self.round == 1:
            raise IllegalAction("no stacking in round 1: place at 'first' or 'last'")
        found = self.find(at)
        if found is None:
            raise IllegalAction(f"no top card {at} to cover")
        top = found[1]
        if top.owner != seat:
            raise IllegalAction(f"card {at} is not yours: you may only cover your own cards")
        if self.two_player and top.family != c.family:
            raise IllegalAction("a stack never mixes families (2-player variant)")

    def _check_reveal(self, action: Action) -> None:
        if action is not KEEP and action is not REVEAL:
            t = type(action)
            if t is not Keep and t is not Reveal:
                raise IllegalAction(f"keep or reveal the face-down card, not {t.__name__}")

    def _check_open(self, action: Action) -> None:
        if type(action) is not Open:
            raise IllegalAction("open the card: its identity is needed")
        opening = self.cursor.opening
        assert opening is not None
        self.check_opening(opening.pid, action.card)

    def _check_target(self, action: Action) -> None:
        step = self.cursor.step
        if type(action) is not Target or type(action.pid) is not int:
            raise IllegalAction(f"choose a card to {step.replace('_', ' ')} with a target")
        pid = action.pid
        for a in self.legal_actions():
            if a.pid == pid:  # type: ignore[union-attr]
                return
        ability = self.cursor.ability
        assert ability is not None
        raise IllegalAction(
            f"card {pid} is not a legal choice to {step.replace('_card', '')}"
            f" for this {ability.label}"
        )

    def _check_move_to(self, action: Action) -> None:
        if type(action) is not MoveTo or type(action.index) is not int:
            raise IllegalAction("choose where the card goes with move_to")
        index = action.index
        for a in self.legal_actions():
            if a.index == index:  # type: ignore[union-attr]
                return
        raise IllegalAction(f"the card cannot be moved to index {index}")

    def _check_over(self, action: Action) -> None:
        raise IllegalAction("the game is over")

    # ------------------------------------------------------------------ applying

    def apply(self, action: Action, seat: int | None = None) -> list[Event]:
        """Check `action`, apply it and play on until the next decision.

        Returns the events that happened. Raises `IllegalAction` (state
        untouched) when the action is not legal.
        """
        if seat is not None:
            self._check_seat(seat)
        events: list[Event] = []
        # Each step's method checks the action before it changes anything.
        _APPLY[self.cursor.step](self, action, events)
        return events

    def _apply_direction(self, action: Action, events: list[Event]) -> None:
        self._check_direction(action)
        assert type(action) is ChooseDirection
        self._legal = None
        self.direction = action.direction
        events.append(_ev(DirectionChosen, (self.first_player, self.direction)))
        self._start_round(events)

    def _apply_place(self, action: Action, events: list[Event]) -> None:
        if type(action) is not Place:
            self._check_place(action)  # raises
        assert type(action) is Place
        cursor = self.cursor
        seat = self.order[cursor.placed]
        hand = self.hands[seat]
        c = action.card
        at = action.at
        q = self.queue
        # The usual cases are checked here; anything else goes through the whole
        # check, which raises unless the action is legal after all.
        if type(c) is not Card or c not in hand:
            self._check_place(action)
        index = -1  # the slot covered, if any
        if at is not FIRST and at != FIRST:
            if at is LAST or at == LAST:
                if not q:
                    self._check_place(action)
            else:
                found = self.find(at) if type(at) is int and self.round > 1 else None
                if (
                    found is None
                    or found[1].owner != seat
                    or (self.two_player and found[1].family != c.family)
                ):
                    self._check_place(action)
                assert found is not None
                index = found[0]
        self._legal = None
        hand.remove(c)
        kind = c.kind
        pid = self.next_pid
        self.next_pid = pid + 1
        card = _new_inplay(InPlay)  # InPlay(pid, seat, ...) without the call
        card.pid = pid
        card.owner = seat
        card.family = c.family
        card.kind = None if kind is None else KINDS[kind]
        card.face_up = False
        card.tokens = 0
        if index >= 0:
            q[index].append(card)
        elif at == FIRST:
            q.insert(0, [card])
            index = 0
        else:
            q.append([card])
            index = len(q) - 1
        events.append(_ev(Placed, (seat, pid, c, at, index)))
        placed = cursor.placed = cursor.placed + 1
        order = self.order
        if placed == len(order) or not self.hands[order[placed]]:
            self._skip_empty_hands(events)

    def _apply_reveal(self, action: Action, events: list[Event]) -> None:
        if action is not KEEP and action is not REVEAL:
            self._check_reveal(action)
        self._legal = None
        actor = self.cursor.actor
        assert actor is not None
        if type(action) is Keep:
            actor.tokens += 1
            events.append(_ev(Kept, (actor.owner, actor.pid, actor.tokens)))
            self._continue(events)
        elif actor.kind is None:
            self._await_opening(actor, REVEAL_OR_KEEP)
        elif not self._reveal(events):
            self._continue(events)

    def _apply_open(self, action: Action, events: list[Event]) -> None:
        self._check_open(action)
        self._legal = None
        cursor = self.cursor
        opening = cursor.opening
        assert opening is not None and type(action) is Open
        opening.kind = KINDS[action.card.kind]  # type: ignore[index]
        reason = cursor.open_for
        cursor.opening = cursor.open_for = None
        waiting = (
            self._reveal(events) if reason is REVEAL_OR_KEEP else self._eliminate(opening, events)
        )
        if not waiting:
            self._continue(events)

    def _apply_target(self, action: Action, events: list[Event]) -> None:
        self._check_target(action)
        assert type(action) is Target
        self._legal = None
        found = self.find(action.pid)
        assert found is not None
        if not self._choose(found[1], events, found[0]):
            self._continue(events)

    def _apply_move_to(self, action: Action, events: list[Event]) -> None:
        self._check_move_to(action)
        assert type(action) is MoveTo
        self._legal = None
        self._move(action.index, events)
        if not self._done(events):
            self._continue(events)

    def _apply_over(self, action: Action, events: list[Event]) -> None:
        raise IllegalAction("the game is over")

    def skip_placement(self) -> list[Event]:
        """The referee skips the pending placement: its seat places nothing this
        round and keeps the card in hand. Not a player's choice (placing is
        mandatory), so it is never among the legal actions; the server uses it
        for a seat whose player timed out or left.

        Raises `IllegalAction` unless a placement is pending.
        """
        cursor = self.cursor
        if cursor.step is not PLACE:
            raise IllegalAction(f"no placement to skip: the game waits for {cursor.step}")
        self._legal = None
        events: list[Event] = [PlacementSkipped(self.order[cursor.placed])]
        cursor.placed += 1
        self._skip_empty_hands(events)
        return events

    def _await_opening(self, card: InPlay, reason: Step) -> bool:
        cursor = self.cursor
        cursor.opening = card
        cursor.open_for = reason
        cursor.step = OPEN
        return True

    def _start_round(self, events: list[Event]) -> None:
        cursor = self.cursor
        cursor.step = PLACE
        cursor.placed = 0
        self.order = self.placement_order()
        events.append(_ev(RoundStarted, (self.round, self.first_player)))
        self._skip_empty_hands(events)

    def _skip_empty_hands(self, events: list[Event]) -> None:
        cursor = self.cursor
        order = self.order
        hands = self.hands
        placed = cursor.placed
        while placed < len(order) and not hands[order[placed]]:
            placed += 1
        cursor.placed = placed
        if placed == len(order):
            cursor.step = REVEAL_OR_KEEP  # placeholder until _continue picks a card
            cursor.index = -1
            cursor.slot = []
            cursor.actor = None
            self._continue(events)

    def _continue(self, events: list[Event]) -> None:
        """The acting card is done: handle the next top card until a decision
        is needed or the round ends."""
        q = self.queue
        c = self.cursor
        while True:
            slot = c.slot
            if slot and slot[-1] is not c.actor:
                top = slot[-1]  # uncovered in the slot being resolved: handled at once
            else:
                i = c.index = c.index + 1
                if i >= len(q):
                    self._end_round(events)
                    return
                slot = c.slot = q[i]
                top = slot[-1]
            c.actor = top
            if not top.face_up:
                c.step = REVEAL_OR_KEEP
                self._legal = _KEEP_OR_REVEAL
                return
            assert top.kind is not None
            if self._act(top.kind, events):
                return

    def _reveal(self, events: list[Event]) -> bool:
        actor = self.cursor.actor
        assert actor is not None and actor.kind is not None
        kind = actor.kind
        actor.face_up = True
        tokens = actor.tokens
        actor.tokens = 0
        owner = actor.owner
        events.append(_ev(Revealed, (owner, actor.pid, CARDS[actor.family][kind], tokens)))
        if tokens and kind is not AMBUSH:
            if kind is CONSPIRACY:
                self.scores[owner] += tokens * 2
                events.append(_ev(Scored, (owner, tokens * 2, "conspiracy")))
            else:
                self.scores[owner] += tokens
                events.append(_ev(Scored, (owner, tokens, "tokens")))
        return self._act(kind, events)

    def _score(self, seat: int, points: int, reason: str, events: list[Event]) -> None:
        self.scores[seat] += points
        events.append(_ev(Scored, (seat, points, reason)))

    def _act(self, ability: Kind, events: list[Event]) -> bool:
        """Apply `ability` for the acting card; True if it waits for a decision."""
        c = self.cursor
        actor = c.actor
        assert actor is not None
        c.ability = ability
        step = CHOICE_STEP.get(ability)
        if step is None:
            owner = actor.owner
            if ability is LORD:
                q = self.queue
                cur = c.index
                fam = actor.family
                points = 1
                if cur > 0 and q[cur - 1][-1].family == fam:
                    points += 1
                if cur + 1 < len(q) and q[cur + 1][-1].family == fam:
                    points += 1
                events.append(_ev(AbilityUsed, (owner, actor.pid, "lord", None)))
                self.scores[owner] += points
                events.append(_ev(Scored, (owner, points, "lord")))
                c.ability = None  # done: a Character stays
                return False
            if ability is HEIR:
                name = actor.kind
                events.append(_ev(AbilityUsed, (owner, actor.pid, "heir", None)))
                for s in self.queue:
                    top = s[-1]
                    if top.face_up and top.kind == name and top is not actor:
                        break
                else:
                    self.scores[owner] += 2
                    events.append(_ev(Scored, (owner, 2, "heir")))
                c.ability = None
                return False
            if ability is AMBUSH:
                events.append(_ev(AbilityUsed, (owner, actor.pid, "ambush", None)))
                self.scores[owner] += 1
                events.append(_ev(Scored, (owner, 1, "ambush")))
            else:  # Conspiracy: it paid when revealed
                events.append(_ev(AbilityUsed, (owner, actor.pid, KIND_NAMES[ability], None)))
            return self._done(events)
        choices = self.ability_choices(ability)
        if not choices:
            events.append(_ev(NoEffect, (actor.owner, actor.pid, KIND_NAMES[ability])))
            return self._done(events)
        if len(choices) == 1:
            return self._choose(choices[0], events)
        c.step = step
        self._legal = _targets(choices)
        return True

    def _choose(self, chosen: InPlay, events: list[Event], at: int = -1) -> bool:
        """The acting card's ability applies to `chosen` (top of slot `at`, if known)."""
        c = self.cursor
        actor = c.actor
        ability = c.ability
        assert actor is not None and ability is not None
        if ability is SHAPESHIFTER:
            assert chosen.kind is not None
            events.append(_ev(AbilityUsed, (actor.owner, actor.pid, "shapeshifter", chosen.pid)))
            return self._act(chosen.kind, events)
        if ability is ROYAL_DECREE:
            c.chosen = chosen
            indices = self._move_indices()
            if len(indices) == 1:
                self._move(indices[0], events)
                return self._done(events)
            c.step = MOVE_TO
            self._legal = tuple([move_to(i) for i in indices])
            return True
        events.append(_ev(AbilityUsed, (actor.owner, actor.pid, KIND_NAMES[ability], chosen.pid)))
        if ability is SPY:
            victim = chosen.owner
            stolen = 0
            if victim != actor.owner and self.scores[victim] > 0:
                self.scores[victim] -= 1
                self.scores[actor.owner] += 1
                stolen = 1
            events.append(_ev(Stolen, (actor.owner, victim, stolen)))
            return self._done(events)
        return self._eliminate(chosen, events, at)

    def _eliminate(self, victim: InPlay, events: list[Event], at: int = -1) -> bool:
        kind = victim.kind
        if kind is None:
            return self._await_opening(victim, ELIMINATE)
        c = self.cursor
        actor = c.actor
        assert actor is not None
        attacker = actor.owner
        tokens = victim.tokens
        victim.tokens = 0
        victim.face_up = True
        q = self.queue
        if not 0 <= at < len(q) or q[at][-1] is not victim:
            found = self.find(victim.pid)
            assert found is not None
            at = found[0]
        self._remove_top(
            at,
            events,
            _ev(
                Eliminated,
                (victim.pid, CARDS[victim.family][kind], victim.owner, actor.pid, attacker, tokens),
            ),
        )
        self.scores[attacker] += 1
        events.append(_ev(Scored, (attacker, 1, "eliminate")))
        if victim.kind is AMBUSH:
            if victim.owner != attacker:
                self._score(victim.owner, 4, "ambush", events)
                # The attacker is the acting card, on top of the slot being resolved.
                self._remove_top(
                    c.index,
                    events,
                    _ev(Discarded, (actor.pid, _card(actor), attacker, "ambush", 0)),
                )
            elif self.rules.edition == FIRST_EDITION:
                self._score(attacker, 1, "ambush", events)
        return self._done(events)

    def _done(self, events: list[Event]) -> bool:
        """The ability is over: an Intrigue still in the queue is discarded."""
        c = self.cursor
        actor = c.actor
        assert actor is not None and actor.kind is not None
        if actor.kind >= ASSASSINATION:
            slot = c.slot
            if slot and slot[-1] is actor:
                self._remove_top(
                    c.index,
                    events,
                    _ev(Discarded, (actor.pid, _card(actor), actor.owner, "used", 0)),
                )
        c.ability = None
        c.chosen = None
        return False

    def _move(self, index: int, events: list[Event]) -> None:
        c = self.cursor
        chosen = c.chosen
        actor = c.actor
        assert chosen is not None and actor is not None
        events.append(_ev(AbilityUsed, (actor.owner, actor.pid, "royal_decree", chosen.pid)))
        found = self.find(chosen.pid)
        assert found is not None
        j = found[0]
        left = self.queue[j]
        left.pop()
        if not left:
            self._drop_slot(j)
        self.queue.insert(index, [chosen])
        if index <= c.index:
            c.index += 1
        events.append(_ev(Moved, (chosen.pid, index)))
        if left:
            events.append(_ev(Uncovered, (left[-1].pid, left[-1].face_up)))

    def _remove_top(self, i: int, events: list[Event], why: Event) -> None:
        """Take the top card of slot `i` out of the queue, face up, to its
        owner's front; `why` (the elimination or discard) is told first, then
        the card it uncovers, if any."""
        slot = self.queue[i]
        card = slot.pop()
        card.face_up = True
        card.tokens = 0
        kind = card.kind
        self.fronts[card.owner].append(
            BACKS[card.family] if kind is None else CARDS[card.family][kind]
        )
        events.append(why)
        if slot:
            top = slot[-1]
            events.append(_ev(Uncovered, (top.pid, top.face_up)))
        else:
            self._drop_slot(i)

    def _drop_slot(self, i: int) -> None:
        del self.queue[i]
        c = self.cursor
        if i <= c.index:
            c.index -= 1

    def _end_round(self, events: list[Event]) -> None:
        c = self.cursor
        c.actor = None
        c.slot = []
        c.index = -1
        events.append(_ev(RoundEnded, (self.round,)))
        if self.round >= ROUNDS:
            self._end_game(events)
            return
        if self.two_player:
            for seat in range(self.n):
                pile = self.draw_piles[seat]
                drawn = tuple(pile[:2])
                if drawn:
                    del pile[:2]
                    self.hands[seat].extend(drawn)
                    events.append(Drew(seat, drawn))
        self.first_player = (self.first_player + 1) % self.n
        self.round += 1
        self._start_round(events)

    def _end_game(self, events: list[Event]) -> None:
        self.cursor.step = OVER
        self.over = True
        in_queue = [0] * self.n
        for s in self.queue:
            for c in s:
                in_queue[c.owner] += 1
        ranks = [(self.scores[seat], in_queue[seat]) for seat in range(self.n)]
        best = max(ranks)
        self.winners = tuple(seat for seat in range(self.n) if ranks[seat] == best)
        events.append(GameEnded(tuple(self.scores), self.winners))


_new_game = object.__new__


def _targets(cards: list[InPlay]) -> tuple[Action, ...]:
    """The interned `Target` of each card, in order."""
    out: list[Action] = []
    for card in cards:
        p = card.pid
        out.append(_TARGETS[p] if p < 64 else target(p))
    return tuple(out)


_TARGETS = [target(p) for p in range(64)]


def _twin(card: InPlay, old_queue: list[list[InPlay]], new_queue: list[list[InPlay]]) -> InPlay:
    """The copy in `new_queue` of `card` in `old_queue` (a clone if it is not there)."""
    for i, s in enumerate(old_queue):
        for j, old in enumerate(s):
            if old is card:
                return new_queue[i][j]
    return card.clone()


# The step table: who decides, the legal actions, the check and the
# application of an action, per step.
_SEAT: dict[Step, Callable[[Game, Cursor], int | None]] = {
    DIRECTION: Game._seat_direction,
    PLACE: Game._seat_place,
    REVEAL_OR_KEEP: Game._seat_actor,
    OPEN: Game._seat_open,
    ELIMINATE: Game._seat_actor,
    STEAL: Game._seat_actor,
    COPY: Game._seat_actor,
    MOVE_CARD: Game._seat_actor,
    MOVE_TO: Game._seat_actor,
    OVER: Game._seat_over,
}
_LEGAL: dict[Step, Callable[[Game], tuple[Action, ...]]] = {
    DIRECTION: Game._legal_direction,
    PLACE: Game._legal_place,
    REVEAL_OR_KEEP: Game._legal_reveal,
    OPEN: Game._legal_open,
    ELIMINATE: Game._legal_target,
    STEAL: Game._legal_target,
    COPY: Game._legal_target,
    MOVE_CARD: Game._legal_target,
    MOVE_TO: Game._legal_move_to,
    OVER: Game._legal_over,
}
_CHECK: dict[Step, Callable[[Game, Action], None]] = {
    DIRECTION: Game._check_direction,
    PLACE: Game._check_place,
    REVEAL_OR_KEEP: Game._check_reveal,
    OPEN: Game._check_open,
    ELIMINATE: Game._check_target,
    STEAL: Game._check_target,
    COPY: Game._check_target,
    MOVE_CARD: Game._check_target,
    MOVE_TO: Game._check_move_to,
    OVER: Game._check_over,
}
_APPLY: dict[Step, Callable[[Game, Action, list[Event]], None]] = {
    DIRECTION: Game._apply_direction,
    PLACE: Game._apply_place,
    REVEAL_OR_KEEP: Game._apply_reveal,
    OPEN: Game._apply_open,
    ELIMINATE: Game._apply_target,
    STEAL: Game._apply_target,
    COPY: Game._apply_target,
    MOVE_CARD: Game._apply_target,
    MOVE_TO: Game._apply_move_to,
    OVER: Game._apply_over,
}
assert all(set(table) == set(STEPS) for table in (_SEAT, _LEGAL, _CHECK, _APPLY))


def new_game(
    players: int,
    *,
    variant: str = STANDARD,
    edition: str = REVISED,
    first_player: int = 0,
    deal: Sequence[SeatDeal] | None = None,
    families: Sequence[Sequence[int]] | None = None,
    seed: int | None = None,
    rng: random.Random | None = None,
) -> Game:
    """A game at its start, waiting for the first player's direction.

    `families[seat]` are the family indices each seat plays (default: seat 0
    red, seat 1 blue, ...; 2-player: red and blue against green and yellow).
    Without `deal`, cards are dealt from `rng` (or a Random seeded with `seed`).
    """
    fams = () if families is None else tuple(tuple(fs) for fs in families)
    try:
        rules = _rules(players, variant, edition, fams)  # made once per setting
    except TypeError:  # an unhashable setting: Rules says what is wrong
        rules = Rules(players, variant, edition, fams)
    if not 0 <= first_player < players:
        raise ValueError(f"no seat {first_player}")
    if deal is None:
        deal = random_deal(rules, rng or random.Random(seed))
    if len(deal) != players:
        raise ValueError("one deal per seat is needed")
    game = Game(rules, first_player)
    game.hands = [list(d.hand) for d in deal]
    game.set_aside = [list(d.set_aside) for d in deal]
    game.draw_piles = [list(d.draw_pile) for d in deal]
    return game


_rules = functools.lru_cache(maxsize=64)(Rules)

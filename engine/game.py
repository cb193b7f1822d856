"""The rules of Oriflamme as one synchronous state machine.

How this works
--------------
`Game` holds the whole table. At every moment exactly one seat owes one
decision (`Game.decision`), whose `kind` is the `step` the game is waiting in:

    direction -> place (each seat in turn) -> resolution -> place ... -> over

Resolution walks the queue by index in resolution order (the queue is kept in
that order; `direction` only says how to draw it). `cur` is the index of the
slot being resolved; every structural change goes through `_remove_top` and
`_insert_slot`, which shift `cur` when a slot before it appears or vanishes,
so the walk follows slots by identity even as cards move and disappear.
When the slot being resolved loses its top card (an Intrigue discarded, an
Archer that shot itself, an attacker discarded by an Ambush), the card under
it is handled at once (ruling 6); a slot already passed is not revisited.

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
action raises `IllegalAction` and leaves the state as it was.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple

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
from .cards import BACKS, CARDS, COPYABLE, FAMILY_NAMES, KINDS, Card, Kind
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
    cards = [[CARDS[f][k] for k in order] for f, order in zip(fams, orders, strict=True)]
    if rules.variant == STANDARD:
        return SeatDeal(tuple(cards[0][3:]), tuple(cards[0][:3]), ())
    a, b = cards
    pile = tuple(c for pair in zip(a[6:], b[6:], strict=True) for c in pair)
    return SeatDeal(tuple(a[3:6] + b[3:6]), tuple(a[:3] + b[:3]), pile)


def random_deal(rules: Rules, rng: random.Random) -> list[SeatDeal]:
    """A deal for every seat from `rng` (self-play and tests; the protocol has
    its own fair, verifiable derivation)."""
    deals = []
    for seat, fams in enumerate(rules.families):
        orders = []
        for _ in fams:
            order = list(KINDS)
            rng.shuffle(order)
            orders.append(order)
        deals.append(layout_deal(rules, seat, orders))
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

    def __repr__(self) -> str:
        state = "up" if self.face_up else "down"
        return f"<#{self.pid} seat {self.owner} {self.card} {state} {self.tokens}t>"


class Decision(NamedTuple):
    """Who must decide what now. `pid` is the card concerned (the acting card,
    or the card to open); `options` is the complete list of legal actions."""

    seat: int
    kind: Step
    options: list[Action]
    pid: int | None


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
        self.step = DIRECTION
        self.place_turn = 0  # placements made this round
        self.order = self.placement_order()
        # Resolution: the slot being resolved, its acting top card, the
        # ability being applied (a Shapeshifter's copy differs from its kind),
        # the Royal Decree's chosen card, and the card awaiting an opening.
        self.cur = -1
        self.cur_slot: list[InPlay] = []
        self.actor: InPlay | None = None
        self.ability: Kind | None = None
        self.chosen: InPlay | None = None
        self.opening: InPlay | None = None
        self.open_for: Step | None = None
        self.winners: tuple[int, ...] = ()
        self._legal: list[Action] | None = None

    # ------------------------------------------------------------------ queries

    @property
    def over(self) -> bool:
        return self.step == OVER

    def placement_order(self) -> list[int]:
        """Seats in placement order this round (2-player: first, second, first, second).

        `self.order` caches it for the current round."""
        fp = self.first_player
        if self.two_player:
            return [fp, 1 - fp, fp, 1 - fp]
        return [(fp + i) % self.n for i in range(self.n)]

    def current_seat(self) -> int | None:
        """The seat that owes the pending decision (None when the game is over)."""
        step = self.step
        if step == PLACE:
            return self.order[self.place_turn]
        if step == OPEN:
            assert self.opening is not None
            return self.opening.owner
        if step == DIRECTION:
            return self.first_player
        if step == OVER:
            return None
        assert self.actor is not None
        return self.actor.owner

    @property
    def decision(self) -> Decision | None:
        """The pending decision, or None once the game is over."""
        seat = self.current_seat()
        if seat is None:
            return None
        pid = None
        if self.step == OPEN:
            assert self.opening is not None
            pid = self.opening.pid
        elif self.actor is not None and self.step != PLACE:
            pid = self.actor.pid
        return Decision(seat, self.step, self.legal_actions(), pid)

    def legal_actions(self) -> list[Action]:
        """Every legal action for the pending decision (empty when over)."""
        legal = self._legal
        if legal is None:
            legal = self._legal = self._compute_legal()
        return legal

    def tops(self) -> list[InPlay]:
        """The top card of every slot, in resolution order."""
        return [s[-1] for s in self.queue]

    def find(self, pid: int) -> tuple[int, InPlay] | None:
        """(slot index, card) of the *top* card `pid`, or None."""
        for i, s in enumerate(self.queue):
            if s[-1].pid == pid:
                return i, s[-1]
        return None

    def _compute_legal(self) -> list[Action]:
        step = self.step
        if step == REVEAL_OR_KEEP:
            return [KEEP, REVEAL]
        if step == PLACE:
            return self._place_options(self.order[self.place_turn])
        if step in (ELIMINATE, STEAL, COPY, MOVE_CARD):
            assert self.ability is not None
            return [target(c.pid) for c in self.ability_choices(self.ability)]
        if step == MOVE_TO:
            return [move_to(i) for i in self._move_indices()]
        if step == OPEN:
            assert self.opening is not None
            fam = self.opening.family
            return [Open(CARDS[fam][k]) for k in self._open_candidates(self.opening)]
        if step == DIRECTION:
            return list(DIRECTION_CHOICES)
        return []

    def _place_options(self, seat: int) -> list[Action]:
        hand = self.hands[seat]
        q = self.queue
        own = [s[-1] for s in q if s[-1].owner == seat] if self.round > 1 else []
        two_player = self.two_player
        options: list[Action] = []
        for i, c in enumerate(hand):
            if c.kind is None and c in hand[:i]:
                continue  # backs of one family are one choice
            options.append(place(c, FIRST))
            if q:
                options.append(place(c, LAST))
            for top in own:
                if not two_player or top.family == c.family:
                    options.append(place(c, top.pid))
        return options

    def ability_choices(self, ability: Kind) -> list[InPlay]:
        """The top cards the acting card could choose if it applied `ability`
        now, from its slot (a player may ask this before revealing)."""
        q = self.queue
        cur = self.cur
        actor = self.actor
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
                rivals = [c for c in adj if c.family != fam]
                return rivals or adj
            return [c for c in adj if c.face_up and c.kind in COPYABLE]
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
        chosen = self.chosen
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
        step = self.step
        if step == OVER:
            raise IllegalAction("the game is over")
        owner = self.current_seat()
        if seat is not None and seat != owner:
            raise IllegalAction(f"not your turn: seat {owner} must decide ({step})")
        if step == PLACE:
            if type(action) is not Place:
                raise IllegalAction(f"expected a placement, got {type(action).__name__}")
            assert owner is not None
            self._check_place(owner, action)
            return
        if step == REVEAL_OR_KEEP:
            if type(action) is not Keep and type(action) is not Reveal:
                raise IllegalAction(
                    f"keep or reveal the face-down card, not {type(action).__name__}"
                )
            return
        if step in (ELIMINATE, STEAL, COPY, MOVE_CARD):
            if type(action) is not Target or type(action.pid) is not int:
                raise IllegalAction(f"choose a card to {step.replace('_', ' ')} with a target")
            assert self.ability is not None
            if not any(c.pid == action.pid for c in self.ability_choices(self.ability)):
                raise IllegalAction(
                    f"card {action.pid} is not a legal choice to {step.replace('_card', '')}"
                    f" for this {self.ability.label}"
                )
            return
        if step == MOVE_TO:
            if type(action) is not MoveTo or type(action.index) is not int:
                raise IllegalAction("choose where the card goes with move_to")
            if action.index not in self._move_indices():
                raise IllegalAction(f"the card cannot be moved to index {action.index}")
            return
        if step == OPEN:
            if type(action) is not Open:
                raise IllegalAction("open the card: its identity is needed")
            assert self.opening is not None
            self.check_opening(self.opening.pid, action.card)
            return
        if step == DIRECTION:
            if type(action) is not ChooseDirection or action.direction not in DIRECTIONS:
                raise IllegalAction(f"choose the direction: one of {DIRECTIONS}")
            return
        raise AssertionError(f"unknown step {step!r}")

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

    def _check_place(self, seat: int, action: Place) -> None:
        c = action.card
        if not isinstance(c, Card):
            raise IllegalAction(f"place a card, not {c!r}")
        if c not in self.hands[seat]:
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

    # ------------------------------------------------------------------ applying

    def apply(self, action: Action, seat: int | None = None) -> list[Event]:
        """Check `action`, apply it and play on until the next decision.

        Returns the events that happened. Raises `IllegalAction` (state
        untouched) when the action is not legal.
        """
        self.check(action, seat)
        self._legal = None
        events: list[Event] = []
        step = self.step
        if step == PLACE:
            self._place(action, events)  # type: ignore[arg-type]
        elif step == REVEAL_OR_KEEP:
            actor = self.actor
            assert actor is not None
            if type(action) is Keep:
                actor.tokens += 1
                events.append(Kept(actor.owner, actor.pid, actor.tokens))
                self._continue(events)
            elif actor.kind is None:
                self._await_opening(actor, REVEAL_OR_KEEP)
            elif not self._reveal(events):
                self._continue(events)
        elif step == OPEN:
            opening = self.opening
            assert opening is not None and isinstance(action, Open)
            opening.kind = action.card.kind
            reason = self.open_for
            self.opening = self.open_for = None
            waiting = (
                self._reveal(events)
                if reason == REVEAL_OR_KEEP
                else self._eliminate(opening, events)
            )
            if not waiting:
                self._continue(events)
        elif step == MOVE_TO:
            self._move(action.index, events)  # type: ignore[union-attr]
            if not self._done(events):
                self._continue(events)
        elif step == DIRECTION:
            self.direction = action.direction  # type: ignore[union-attr]
            events.append(DirectionChosen(self.first_player, self.direction))
            self._start_round(events)
        else:
            found = self.find(action.pid)  # type: ignore[union-attr]
            assert found is not None
            if not self._choose(found[1], events):
                self._continue(events)
        return events

    def skip_placement(self) -> list[Event]:
        """The referee skips the pending placement: its seat places nothing this
        round and keeps the card in hand. Not a player's choice (placing is
        mandatory), so it is never among the legal actions; the server uses it
        for a seat whose player timed out or left.

        Raises `IllegalAction` unless a placement is pending.
        """
        if self.step != PLACE:
            raise IllegalAction(f"no placement to skip: the game waits for {self.step}")
        self._legal = None
        events: list[Event] = [PlacementSkipped(self.order[self.place_turn])]
        self.place_turn += 1
        self._skip_empty_hands(events)
        return events

    def _await_opening(self, card: InPlay, reason: Step) -> bool:
        self.opening = card
        self.open_for = reason
        self.step = OPEN
        return True

    def _start_round(self, events: list[Event]) -> None:
        self.step = PLACE
        self.place_turn = 0
        self.order = self.placement_order()
        events.append(RoundStarted(self.round, self.first_player))
        self._skip_empty_hands(events)

    def _skip_empty_hands(self, events: list[Event]) -> None:
        order = self.order
        while self.place_turn < len(order) and not self.hands[order[self.place_turn]]:
            self.place_turn += 1
        if self.place_turn == len(order):
            self.step = REVEAL_OR_KEEP  # placeholder until _continue picks a card
            self.cur = -1
            self.cur_slot = []
            self.actor = None
            self._continue(events)

    def _place(self, action: Place, events: list[Event]) -> None:
        seat = self.order[self.place_turn]
        c = action.card
        self.hands[seat].remove(c)
        pid = self.next_pid
        self.next_pid = pid + 1
        card = InPlay(pid, seat, c.family, c.kind, False, 0)
        at = action.at
        q = self.queue
        if at == FIRST:
            q.insert(0, [card])
            index = 0
        elif at == LAST:
            q.append([card])
            index = len(q) - 1
        else:
            found = self.find(at)
            assert found is not None
            index = found[0]
            q[index].append(card)
        events.append(Placed(seat, pid, c, at, index))
        self.place_turn += 1
        self._skip_empty_hands(events)

    def _continue(self, events: list[Event]) -> None:
        """The acting card is done: handle the next top card until a decision
        is needed or the round ends."""
        q = self.queue
        while True:
            slot = self.cur_slot
            if slot and slot[-1] is not self.actor:
                top = slot[-1]  # uncovered in the slot being resolved: handled at once
            else:
                self.cur += 1
                if self.cur >= len(q):
                    self._end_round(events)
                    return
                slot = self.cur_slot = q[self.cur]
                top = slot[-1]
            self.actor = top
            if not top.face_up:
                self.step = REVEAL_OR_KEEP
                return
            assert top.kind is not None
            if self._act(top.kind, events):
                return

    def _reveal(self, events: list[Event]) -> bool:
        actor = self.actor
        assert actor is not None and actor.kind is not None
        kind = actor.kind
        actor.face_up = True
        tokens = actor.tokens
        actor.tokens = 0
        events.append(Revealed(actor.owner, actor.pid, CARDS[actor.family][kind], tokens))
        if tokens and kind != AMBUSH:
            self._score(
                actor.owner,
                tokens * 2 if kind == CONSPIRACY else tokens,
                "conspiracy" if kind == CONSPIRACY else "tokens",
                events,
            )
        return self._act(kind, events)

    def _score(self, seat: int, points: int, reason: str, events: list[Event]) -> None:
        self.scores[seat] += points
        events.append(Scored(seat, points, reason))

    def _act(self, ability: Kind, events: list[Event]) -> bool:
        """Apply `ability` for the acting card; True if it waits for a decision."""
        actor = self.actor
        assert actor is not None
        self.ability = ability
        step = CHOICE_STEP.get(ability)
        if step is None:
            q = self.queue
            if ability == LORD:
                cur = self.cur
                fam = actor.family
                points = 1
                if cur > 0 and q[cur - 1][-1].family == fam:
                    points += 1
                if cur + 1 < len(q) and q[cur + 1][-1].family == fam:
                    points += 1
                events.append(AbilityUsed(actor.owner, actor.pid, "lord", None))
                self._score(actor.owner, points, "lord", events)
            elif ability == HEIR:
                name = actor.kind
                events.append(AbilityUsed(actor.owner, actor.pid, "heir", None))
                if not any(s[-1].face_up and s[-1].kind == name and s[-1] is not actor for s in q):
                    self._score(actor.owner, 2, "heir", events)
            elif ability == AMBUSH:
                events.append(AbilityUsed(actor.owner, actor.pid, "ambush", None))
                self._score(actor.owner, 1, "ambush", events)
            else:  # Conspiracy: it paid when revealed
                events.append(AbilityUsed(actor.owner, actor.pid, ability.label, None))
            return self._done(events)
        choices = self.ability_choices(ability)
        if not choices:
            events.append(NoEffect(actor.owner, actor.pid, ability.label))
            return self._done(events)
        if len(choices) == 1:
            return self._choose(choices[0], events)
        self.step = step
        return True

    def _choose(self, chosen: InPlay, events: list[Event]) -> bool:
        """The acting card's ability applies to `chosen`."""
        actor = self.actor
        ability = self.ability
        assert actor is not None and ability is not None
        if ability == SHAPESHIFTER:
            assert chosen.kind is not None
            events.append(AbilityUsed(actor.owner, actor.pid, "shapeshifter", chosen.pid))
            return self._act(chosen.kind, events)
        if ability == ROYAL_DECREE:
            self.chosen = chosen
            indices = self._move_indices()
            if len(indices) == 1:
                self._move(indices[0], events)
                return self._done(events)
            self.step = MOVE_TO
            return True
        events.append(AbilityUsed(actor.owner, actor.pid, ability.label, chosen.pid))
        if ability == SPY:
            victim = chosen.owner
            stolen = 0
            if victim != actor.owner and self.scores[victim] > 0:
                self.scores[victim] -= 1
                self.scores[actor.owner] += 1
                stolen = 1
            events.append(Stolen(actor.owner, victim, stolen))
            return self._done(events)
        return self._eliminate(chosen, events)

    def _eliminate(self, victim: InPlay, events: list[Event]) -> bool:
        if victim.kind is None:
            return self._await_opening(victim, ELIMINATE)
        actor = self.actor
        assert actor is not None
        attacker = actor.owner
        tokens = victim.tokens
        victim.tokens = 0
        victim.face_up = True
        found = self.find(victim.pid)
        assert found is not None
        self._remove_top(
            found[0],
            events,
            Eliminated(victim.pid, victim.card, victim.owner, actor.pid, attacker, tokens),
        )
        self._score(attacker, 1, "eliminate", events)
        if victim.kind == AMBUSH:
            if victim.owner != attacker:
                self._score(victim.owner, 4, "ambush", events)
                # The attacker is the acting card, on top of the slot being resolved.
                self._remove_top(
                    self.cur, events, Discarded(actor.pid, actor.card, attacker, "ambush", 0)
                )
            elif self.rules.edition == FIRST_EDITION:
                self._score(attacker, 1, "ambush", events)
        return self._done(events)

    def _done(self, events: list[Event]) -> bool:
        """The ability is over: an Intrigue still in the queue is discarded."""
        actor = self.actor
        assert actor is not None and actor.kind is not None
        slot = self.cur_slot
        if actor.kind >= ASSASSINATION and slot and slot[-1] is actor:
            self._remove_top(
                self.cur, events, Discarded(actor.pid, actor.card, actor.owner, "used", 0)
            )
        self.ability = None
        self.chosen = None
        return False

    def _move(self, index: int, events: list[Event]) -> None:
        chosen = self.chosen
        actor = self.actor
        assert chosen is not None and actor is not None
        events.append(AbilityUsed(actor.owner, actor.pid, "royal_decree", chosen.pid))
        found = self.find(chosen.pid)
        assert found is not None
        j = found[0]
        left = self.queue[j]
        left.pop()
        if not left:
            self._drop_slot(j)
        self.queue.insert(index, [chosen])
        if index <= self.cur:
            self.cur += 1
        events.append(Moved(chosen.pid, index))
        if left:
            events.append(Uncovered(left[-1].pid, left[-1].face_up))

    def _remove_top(self, i: int, events: list[Event], why: Event) -> None:
        """Take the top card of slot `i` out of the queue, face up, to its
        owner's front; `why` (the elimination or discard) is told first, then
        the card it uncovers, if any."""
        slot = self.queue[i]
        card = slot.pop()
        card.face_up = True
        card.tokens = 0
        self.fronts[card.owner].append(card.card)
        events.append(why)
        if slot:
            events.append(Uncovered(slot[-1].pid, slot[-1].face_up))
        else:
            self._drop_slot(i)

    def _drop_slot(self, i: int) -> None:
        del self.queue[i]
        if i <= self.cur:
            self.cur -= 1

    def _end_round(self, events: list[Event]) -> None:
        self.actor = None
        self.cur_slot = []
        self.cur = -1
        events.append(RoundEnded(self.round))
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
        self.step = OVER
        in_queue = [0] * self.n
        for s in self.queue:
            for c in s:
                in_queue[c.owner] += 1
        best = max(zip(self.scores, in_queue, strict=True))
        self.winners = tuple(
            seat for seat in range(self.n) if (self.scores[seat], in_queue[seat]) == best
        )
        events.append(GameEnded(tuple(self.scores), self.winners))


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
    fams = tuple(tuple(fs) for fs in families) if families is not None else ()
    rules = Rules(players, variant, edition, fams)
    if not 0 <= first_player < players:
        raise ValueError(f"no seat {first_player}")
    if deal is None:
        deal = random_deal(rules, rng or random.Random(seed))
    if len(deal) != players:
        raise ValueError("one deal per seat is needed")
    game = Game(rules, first_player)
    for seat, d in enumerate(deal):
        game.hands[seat] = list(d.hand)
        game.set_aside[seat] = list(d.set_aside)
        game.draw_piles[seat] = list(d.draw_pile)
    return game

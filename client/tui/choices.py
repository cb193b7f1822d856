"""Keys to decisions: the legal options of a pending decision, offered with
their keys, and the key presses that pick one.

How this works
--------------
A `Chooser` is made for one pending decision from the options the mirror
gives (`GameMirror.options()`: legal answers only) and the position. It
lists what can be pressed now (`offers`), takes keys (`press`), and gives
the chosen action once a choice is complete. A key that picks nothing
leaves the choice as it was and says why in `status`, in plain words
("Card 3 is not yours"). Placing a card takes two steps (the card, then
where); Esc goes back one step.

Numbers name queue positions (1 resolves first) and stay the same while
you choose; a position above 9 takes two digits (``1`` then ``2``; Enter
after ``1`` picks 1 when there is also a 12...). The arrows name the ends of
the queue as it is drawn: the direction chosen at the start says which
physical end resolves first.

>>> from dataclasses import replace
>>> from oriflamme.engine import CARDS, Keep, Kind, Reveal, new_game
>>> from oriflamme.client.view import QueueCard, TableView
>>> spy = QueueCard(pid=0, owner=0, card=CARDS[0][Kind.SPY], face_up=False, tokens=1)
>>> view = replace(TableView.of(new_game(3, seed=1), 0), queue=((spy,),))
>>> c = Chooser("reveal", [Keep(), Reveal()], view, seat=0, who=str, pid=0)
>>> [o.key for o in c.offers()]
['r', 'k']
>>> c.press("x"), c.status
(None, 'x does nothing now: press one of the keys listed above')
>>> c.press("k")
Keep()
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from oriflamme.engine import (
    FAMILY_NAMES,
    Action,
    Card,
    ChooseDirection,
    Keep,
    Kind,
    MoveTo,
    Place,
    Reveal,
    Target,
)

from ..i18n import N_, _, elide, lookup, ngettext, pgettext
from ..narrator import a_kind, card_name, family_name
from ..view import QueueCard, TableView

# The keys, by the names the terminal app gives them (one place for every screen).
LEFT, RIGHT, ENTER, ESCAPE, BACKSPACE = "left", "right", "enter", "escape", "backspace"
QUIT_NOW = "c-c"  # Ctrl-C: quit without asking (no character is this key)
UP, DOWN, HOME, END, PAGE_UP, PAGE_DOWN = "up", "down", "home", "end", "pageup", "pagedown"
KEY_SYMBOLS = {LEFT: "←", RIGHT: "→", ENTER: "Enter"}

TITLES = {
    "direction": N_("you play first: choose the direction of resolution"),
    "place": N_("place a card"),
    "reveal": N_("your face-down card comes up: reveal it or keep it"),
    "eliminate": N_("choose the card to eliminate"),
    "steal": N_("choose whose card to steal from"),
    "copy": N_("choose the card to copy"),
    "move_card": N_("choose the card to move"),
    "move_to": N_("choose where to move it"),
}
# What the acting card's ability asks for, in the heading of a target choice
# ("Your Archer: eliminate the first or the last card of the queue").
TARGET_PHRASES = {
    "archer": N_("eliminate the first or the last card of the queue"),
    "soldier": N_("eliminate a card next to it"),
    "spy": N_("steal 1 from the owner of a card next to it"),
    "shapeshifter": N_("copy a face-up Character next to it"),
    "assassination": N_("eliminate any card of the queue"),
    "royal_decree": N_("move another card of the queue"),
}
TARGET_KINDS = ("eliminate", "steal", "copy", "move_card", "move_to")


@dataclass(frozen=True, slots=True)
class Offer:
    """One thing that can be pressed now."""

    key: str  # a character, or LEFT, RIGHT, ENTER
    label: str
    short: str = ""  # where the choices are too many: the key and this ("[5] 3|6")

    @property
    def shown(self) -> str:
        return f"[{KEY_SYMBOLS.get(self.key, self.key)}] {self.label}"


class Chooser:
    """One pending decision of ours; see the module docstring."""

    def __init__(
        self,
        kind: str,
        options: list[Action],
        view: TableView,
        *,
        seat: int,
        who: Callable[[int], str],
        pid: int | None = None,
    ) -> None:
        self.kind = kind
        self.options = options
        self.view = view
        self.seat = seat
        self.who = who
        self.pid = pid
        self.status = ""
        self.digits = ""
        self.card: Card | None = None  # the hand card picked (place, step 2)
        self.tops = [slot[-1] for slot in view.queue if slot]
        self.position_of = {top.pid: i + 1 for i, top in enumerate(self.tops)}
        self.top_of = {top.pid: top for top in self.tops}
        self.resolving = view.resolving
        self.reversed = view.direction == "right-to-left"

    # ------------------------------------------------------------ what is offered

    @property
    def title(self) -> str:
        if self.kind == "place" and self.card is not None:
            label = hand_labels(self.hand())[self.hand().index(self.card)]
            return _("place your {card}: where?").format(card=label)
        if self.kind == "reveal" and self.pid in self.position_of:
            top = self.top_of[self.pid]
            name = card_name(top.card) or _("card")
            if top.tokens:
                text = _("card {position} (your {card}, {tokens} ◆) comes up: reveal or keep?")
            else:
                text = _("card {position} (your {card}) comes up: reveal or keep?")
            return text.format(position=self.position_of[self.pid], card=name, tokens=top.tokens)
        return lookup(TITLES, self.kind, self.kind)

    @property
    def heading(self) -> str:
        """The heading of the choice: the acting card and what it asks for
        ("Your Archer: eliminate the first or the last card of the queue"),
        else "Your turn: " and the title."""
        actor = self._actor()
        if self.kind in TARGET_KINDS and actor is not None:
            name = card_name(actor.card) or _("card")
            ability = None if self.resolving is None else self.resolving.ability
            if ability and actor.card.kind is not None and ability != actor.card.kind.label:
                # a Shapeshifter's copy
                name = _("{card}, as {other}").format(card=name, other=a_kind(ability))
            if self.kind == "move_to":
                chosen = None if self.resolving is None else self.resolving.chosen
                moved = self.describe(chosen) if chosen is not None else _("the card")
                return _("Your {card}: where does {moved} go?").format(card=name, moved=moved)
            phrase = TARGET_PHRASES.get(str(ability), TITLES[self.kind])
            return _("Your {card}: {doing}").format(card=name, doing=_(phrase))
        return _("Your turn: {title}").format(title=self.title)

    def _actor(self) -> QueueCard | None:
        """The top card of the slot being resolved (the card acting)."""
        index = None if self.resolving is None else self.resolving.index
        queue = self.view.queue
        if index is None or not 0 <= index < len(queue) or not queue[index]:
            return None
        return queue[index][-1]

    def hand(self) -> list[Card]:
        """The hand cards that can be placed, in hand order."""
        cards: list[Card] = []
        for a in self.options:
            if isinstance(a, Place) and a.card not in cards:
                cards.append(a.card)
        # two families (the two-player variant): one family after the other,
        # as the hand is drawn
        return sorted(cards, key=lambda c: FAMILY_NAMES[c.family])

    def offers(self) -> list[Offer]:
        """What can be pressed now, in the order shown."""
        if self.kind == "direction":
            by = {a.direction: a for a in self.options if isinstance(a, ChooseDirection)}
            out = []
            if "left-to-right" in by:
                out.append(Offer("l", _("left to right")))
            if "right-to-left" in by:
                out.append(Offer("r", _("right to left")))
            return out
        if self.kind == "place":
            if self.card is None:
                return [
                    Offer(str(i + 1), label) for i, label in enumerate(hand_labels(self.hand()))
                ]
            return self._places()
        if self.kind == "reveal":
            return [
                Offer("r", self._reveal_label()),
                Offer("k", _("keep it face down (+1 ◆)")),
            ]
        if self.kind == "move_to":
            return [
                Offer(str(a.index + 1), *self._destination(a.index))
                for a in self.options
                if isinstance(a, MoveTo)
            ]
        return [
            Offer(str(self.position_of.get(a.pid, "?")), self._target_label(a.pid))
            for a in self.options
            if isinstance(a, Target)
        ]

    def _target_label(self, pid: int) -> str:
        """A target as the choice line names it; for a Spy, what it steals."""
        label = self.describe(pid)
        top = self.top_of.get(pid)
        if self.kind != "steal" or top is None:
            return label
        owner = top.owner
        if owner == self.seat:
            return _("{card}: steals nothing (yours)").format(card=label)
        scores = self.view.scores
        points = scores[owner] if owner < len(scores) else 0
        name = self.who(owner)
        if points <= 0:
            return _("{card}: nothing to steal, {player} has 0").format(card=label, player=name)
        text = ngettext(
            "{card}: steal 1 of {player}'s {points} point",
            "{card}: steal 1 of {player}'s {points} points",
            points,
        )
        return text.format(card=label, player=name, points=points)

    def _reveal_label(self) -> str:
        """What revealing the card about to come up does, with the points it
        gains where they are known ("reveal: gain 4 points, then discard it")."""
        top = None if self.pid is None else self.top_of.get(self.pid)
        kind = None if top is None or top.card.kind is None else top.card.kind.label
        if top is None or kind is None:
            return _("reveal it")
        tokens = top.tokens
        on_it = _("{tokens} ◆ on it").format(tokens=tokens) if tokens else ""
        if kind == "ambush":
            if tokens:
                return _("reveal: gain 1, then discard it (its {tokens} ◆ go back)").format(
                    tokens=tokens
                )
            return _("reveal: gain 1, then discard it")
        if kind == "conspiracy":
            if not tokens:
                return _("reveal: gain nothing (no ◆ on it), then discard it")
            text = ngettext(
                "reveal: gain {points} point, then discard it",
                "reveal: gain {points} points, then discard it",
                2 * tokens,
            )
            return text.format(points=2 * tokens)
        if kind in ("lord", "heir"):
            gain, why = self._own_gain(kind, top)
            total = tokens + gain
            parts = ", ".join(p for p in (on_it, why) if p)
            text = ngettext(
                "reveal: gain {points} point ({why})", "reveal: gain {points} points ({why})", total
            )
            return text.format(points=total, why=parts)
        then = lookup(TARGET_PHRASES, kind, "")  # (the others are above)
        if kind == "shapeshifter":
            then = _("copy a face-up Character next to it, if any")
        if tokens:
            return _("reveal: gain {tokens} (the ◆ on it), then {doing}").format(
                tokens=tokens, doing=then
            )
        return _("reveal, then {doing}").format(doing=then)

    def _own_gain(self, kind: str, top: QueueCard) -> tuple[int, str]:
        """What a Lord or an Heir at the card coming up gains by its ability
        (rulings 10 and 11), and why."""
        i = self.position_of[top.pid] - 1
        if kind == "lord":
            family = top.card.family
            sides = [self.tops[j] for j in (i - 1, i + 1) if 0 <= j < len(self.tops)]
            near = len([t for t in sides if t.card.family == family])
            if self.view.two_player:
                why = [
                    _("Lord 1"),
                    _("Lord 2: a card of its family next to it"),
                    _("Lord 3: cards of its family on both sides"),
                ]
            else:
                why = [
                    _("Lord 1"),
                    _("Lord 2: a card of yours next to it"),
                    _("Lord 3: cards of yours on both sides"),
                ]
            return 1 + near, why[near]
        blocked = any(t.face_up and t.card.kind is Kind.HEIR for t in self.tops if t.pid != top.pid)
        if blocked:
            return 0, _("Heir 0: another Heir is face up")
        return 2, _("Heir 2: no other Heir face up")

    def _places(self) -> list[Offer]:
        ats = [a.at for a in self.options if isinstance(a, Place) and a.card == self.card]
        out = []
        first_key, last_key = (RIGHT, LEFT) if self.reversed else (LEFT, RIGHT)
        if not self.tops and "first" in ats:
            return [Offer(ENTER, _("the middle (the queue is empty)"))]
        ends = [
            ("first", first_key, _("left end (resolves first)"), _("right end (resolves first)")),
            ("last", last_key, _("left end (resolves last)"), _("right end (resolves last)")),
        ]
        if self.reversed:
            ends.reverse()
        for end, key, left, right in ends:
            if end in ats:
                out.append(Offer(key, left if key == LEFT else right))
        for at in ats:
            if isinstance(at, int):
                top = self.top_of.get(at)
                name = card_name(top.card) if top is not None else None
                label = _("on your {card}").format(card=name) if name else _("on your card")
                out.append(Offer(str(self.position_of.get(at, "?")), label))
        return out

    def _destination(self, index: int) -> tuple[str, str]:
        """Where a Royal Decree's move to queue index `index` puts the card,
        said with the positions the queue shows now; and in short, the
        numbers of the cards it goes between (``3|6``, ``start|1``)."""
        chosen = None if self.resolving is None else self.resolving.chosen
        queue = [slot for slot in self.view.queue if slot]
        # the positions that stay when the card leaves (its slot, if it was alone)
        staying = [
            i + 1 for i, slot in enumerate(queue) if not (len(slot) == 1 and slot[0].pid == chosen)
        ]
        start, end = _("start"), _("end")
        if not staying:
            return _("the first end"), start
        if index <= 0:
            first = staying[0]
            return _("the first end (before {position})").format(position=first), f"{start}|{first}"
        if index >= len(staying):
            last = staying[-1]
            return _("the last end (after {position})").format(position=last), f"{last}|{end}"
        before, after = staying[index - 1], staying[index]
        text = _("between {before} and {after}").format(before=before, after=after)
        return text, f"{before}|{after}"

    @property
    def highlighted(self) -> set[int]:
        """Queue positions (1-based) that the current step can choose."""
        return (
            {int(o.key) for o in self.offers() if o.key.isdigit()} if self._by_number() else set()
        )

    def _by_number(self) -> bool:
        return not (self.kind == "place" and self.card is None) and self.kind != "move_to"

    def describe(self, pid: int) -> str:
        """The card at `pid` as the choice line names it."""
        top = self.top_of.get(pid)
        if top is None:
            return _("card {pid}").format(pid=pid)
        mine = top.owner == self.seat
        name = card_name(top.card)
        if top.face_up:
            text = (
                pgettext("choice", "your {card}")
                if mine
                else pgettext("choice", "{player}'s {card}")
            )
        elif mine and name:
            text = pgettext("choice", "your face-down {card}")
        elif mine:
            text = pgettext("choice", "your face-down card")
        else:
            text = pgettext("choice", "{player}'s face-down card")
        return elide(text.format(card=name, player=self.who(top.owner)))

    # ------------------------------------------------------------ keys

    def press(self, key: str) -> Action | None:
        """Take one key: the chosen action once the choice is complete, else
        None (with `status` saying why when the key did nothing)."""
        self.status = ""
        if key == ESCAPE:
            if self.digits:
                self.digits = ""
            elif self.card is not None:
                self.card = None
            else:
                self.status = _("nothing to undo")
            return None
        if key == BACKSPACE:
            self.digits = self.digits[:-1]
            return None
        offers = self.offers()
        if key.isdigit() and any(o.key.isdigit() for o in offers):
            return self._digit(key, offers)
        if key == ENTER:
            if self.digits:
                typed, self.digits = self.digits, ""
                if typed in [o.key for o in offers]:
                    return self._pick(typed, offers)
                self.status = self._refusal(typed)
                return None
            if len(offers) == 1:
                return self._pick(offers[0].key, offers)
        for o in offers:
            if o.key == key:
                return self._pick(key, offers)
        self.digits = ""
        self.status = self._refusal(key)
        return None

    def _digit(self, key: str, offers: list[Offer]) -> Action | None:
        typed = self.digits + key
        numbers = [o.key for o in offers if o.key.isdigit()]
        longer = [n for n in numbers if n.startswith(typed) and n != typed]
        if typed in numbers and not longer:
            self.digits = ""
            return self._pick(typed, offers)
        if longer:
            self.digits = typed
            if typed in numbers:
                text = _("{typed}: press Enter to choose {typed}, or type the next digit")
            else:
                text = _("{typed}…: type the next digit")
            self.status = text.format(typed=typed)
            return None
        self.digits = ""
        self.status = self._refusal(typed)
        return None

    def _pick(self, key: str, offers: list[Offer]) -> Action | None:
        i = [o.key for o in offers].index(key)
        if self.kind == "place" and self.card is None:
            self.card = self.hand()[i]
            return None
        if self.kind == "place":
            places = [a for a in self.options if isinstance(a, Place) and a.card == self.card]
            wanted = self._at(key)
            chosen = next(a for a in places if a.at == wanted)
            return chosen
        if self.kind == "direction":
            return ChooseDirection("left-to-right" if key == "l" else "right-to-left")
        if self.kind == "reveal":
            return Reveal() if key == "r" else Keep()
        if self.kind == "move_to":
            return MoveTo(int(key) - 1)
        return Target(self.tops[int(key) - 1].pid)

    def _at(self, key: str) -> str | int:
        if key == ENTER:
            return "first"
        if key in (LEFT, RIGHT):
            first_key = RIGHT if self.reversed else LEFT
            return "first" if key == first_key else "last"
        return self.tops[int(key) - 1].pid

    def _refusal(self, key: str) -> str:
        """Why `key` picks nothing, in plain words."""
        shown = KEY_SYMBOLS.get(key, key)
        if not key.isdigit() or self.kind in ("direction", "reveal"):
            return _("{key} does nothing now: press one of the keys listed above").format(key=shown)
        n = int(key)
        if self.kind == "place" and self.card is None:
            return _("You have no card {number} in hand: press 1-{last}").format(
                number=n, last=len(self.hand())
            )
        if self.kind == "move_to":
            return _("The card cannot go to position {number}").format(number=n)
        if not 1 <= n <= len(self.tops):
            return _("There is no card {number} in the queue").format(number=n)
        top = self.tops[n - 1]
        if self.kind == "place":
            if top.owner != self.seat:
                text = _("Card {number} is not yours: you can cover only your own cards")
            elif self.view.round == 1:
                text = _("In round 1 cards go at either end, not on top of others")
            else:
                text = _("Card {number} cannot be covered with your {family} card")
            assert self.card is not None
            return text.format(number=n, family=family_name(self.card.family))
        said = lookup(NOT_A_TARGET, self.kind, _("Card {number} cannot be chosen now"))
        return said.format(number=n)


# Why a card of the queue is not a target now, by the choice's kind.
NOT_A_TARGET = {
    "eliminate": N_("Card {number} cannot be eliminated now"),
    "steal": N_("Card {number} cannot be stolen from now"),
    "copy": N_("Card {number} cannot be copied now"),
}


def hand_labels(cards: list[Card]) -> list[str]:
    """Each card's name, with its family when the hand holds two families
    (the two-player variant, where family decides a Lord's neighbours, a
    Spy's victims and which stacks a card may cover).

    >>> from oriflamme.engine import card
    >>> hand_labels([card("red", "spy"), card("blue", "spy"), card("red", "lord")])
    ['Spy (red)', 'Spy (blue)', 'Lord (red)']
    >>> hand_labels([card("red", "spy"), card("red", "lord")])
    ['Spy', 'Lord']
    """
    names = [card_name(c) or "?" for c in cards]
    if len({c.family for c in cards}) < 2:
        return names
    return [
        _("{card} ({family})").format(card=name, family=family_name(c.family))
        for name, c in zip(names, cards, strict=True)
    ]

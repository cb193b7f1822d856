"""The one narrator: a game's events and decisions in plain words.

The game's log speaks of players and cards by name, one event a line, a
cause before its effects: ``Bo's Soldier eliminated Ann's Lord (2 ◆
lost)``. `EventLog` reads the engine's events as they come and keeps the
lines; it learns which card each pid is (and whose) from the events
themselves, so that a card revealed later is named from then on. The
terminal client's game log and `oriflamme replay`'s log are both its lines.

A replay says too, for each step, what decision made it (`decision_line`:
``seat 0 placed a red Lord in the empty queue``) and what the deal was
(`deal_line`); what the decision then caused is the log's, not repeated.

>>> from oriflamme.engine import BACKS, CARDS, Kind
>>> log = EventLog(lambda seat: ["Ann", "Bo"][seat])
>>> log.add([Placed(seat=1, pid=0, card=BACKS[1], at="first", slot=0),
...          Revealed(seat=1, pid=0, card=CARDS[1][Kind.SPY], tokens=1)])
>>> log.lines
['Bo placed a card face down, the first in the queue', 'Bo revealed a Spy (1 ◆ on it)']
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from oriflamme.engine import (
    FAMILY_NAMES,
    Card,
    ChooseDirection,
    Decision,
    Event,
    Keep,
    Kind,
    MoveTo,
    Open,
    Place,
    Reveal,
    Step,
    Target,
)
from oriflamme.engine.events import (
    AbilityUsed,
    DirectionChosen,
    Discarded,
    Drew,
    Eliminated,
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
)
from oriflamme.protocol.record import GameSettings, LogEntry

from .i18n import N_, NP_, _, elide, lookup, ngettext, pgettext
from .view import TableView

# A kind's name in each place a sentence puts it, each a `pgettext` context,
# so that each language says it its own way: the name alone (the hand, the
# queue, the help); with the indefinite article, as an object ("revealed an
# Archer"); as the card of someone ("Ann's Archer": French "l'Archer d'Ann").
KIND_NAMES = {
    "archer": NP_("card", "Archer"),
    "soldier": NP_("card", "Soldier"),
    "spy": NP_("card", "Spy"),
    "heir": NP_("card", "Heir"),
    "lord": NP_("card", "Lord"),
    "shapeshifter": NP_("card", "Shapeshifter"),
    "assassination": NP_("card", "Assassination"),
    "royal_decree": NP_("card", "Royal Decree"),
    "ambush": NP_("card", "Ambush"),
    "conspiracy": NP_("card", "Conspiracy"),
}
A_KIND = {
    "archer": NP_("a card", "an Archer"),
    "soldier": NP_("a card", "a Soldier"),
    "spy": NP_("a card", "a Spy"),
    "heir": NP_("a card", "an Heir"),
    "lord": NP_("a card", "a Lord"),
    "shapeshifter": NP_("a card", "a Shapeshifter"),
    "assassination": NP_("a card", "an Assassination"),
    "royal_decree": NP_("a card", "a Royal Decree"),
    "ambush": NP_("a card", "an Ambush"),
    "conspiracy": NP_("a card", "a Conspiracy"),
}
THE_KIND = {
    # TRANSLATORS: the card of someone, put into "{owner}'s {card}"
    "archer": NP_("someone's card", "Archer"),
    "soldier": NP_("someone's card", "Soldier"),
    "spy": NP_("someone's card", "Spy"),
    "heir": NP_("someone's card", "Heir"),
    "lord": NP_("someone's card", "Lord"),
    "shapeshifter": NP_("someone's card", "Shapeshifter"),
    "assassination": NP_("someone's card", "Assassination"),
    "royal_decree": NP_("someone's card", "Royal Decree"),
    "ambush": NP_("someone's card", "Ambush"),
    "conspiracy": NP_("someone's card", "Conspiracy"),
}

# Why points were scored, as a `scored` event's reason says it.
REASONS = {
    "tokens": N_("Influence on the card"),
    "conspiracy": N_("Conspiracy"),
    "eliminate": N_("elimination"),
    "ambush": N_("Ambush"),
    "heir": N_("Heir"),
    "lord": N_("Lord"),
}


def kind_name(label: str) -> str:
    """A kind's name (``royal_decree``: ``Royal Decree``) in the player's language."""
    return lookup(KIND_NAMES, label, label)


def card_name(card: Card | None) -> str | None:
    """The card's name, or None for a card back (or no card).

    >>> from oriflamme.engine import BACKS, CARDS, Kind
    >>> card_name(CARDS[0][Kind.ROYAL_DECREE]), card_name(BACKS[0])
    ('Royal Decree', None)
    """
    if card is None or card.kind is None:
        return None
    return kind_name(card.kind.label)


def a_card(card: Card | None) -> str:
    """``an Archer``, ``a Spy``; ``a card`` for a back."""
    if card is None or card.kind is None:
        return _("a card")
    return a_kind(card.kind.label)


def a_kind(label: str) -> str:
    """``a Spy`` for ``spy`` (a kind's plain-data name; an ability's)."""
    return lookup(A_KIND, label, label)


def _the(card: Card | None) -> str | None:
    if card is None or card.kind is None:
        return None
    return pgettext(*THE_KIND[card.kind.label])


YOU = N_("You")  # how `who` names our own seat, in the player's language


class EventLog:
    """The game's events in plain words; see the module docstring.
    `who(seat)` names a seat (``_(YOU)``, "You", for our own: `me`)."""

    def __init__(
        self,
        who: Callable[[int], str],
        *,
        known: Callable[[int], Card | None] | None = None,
        kept: int = 500,
        me: Callable[[], int | None] = lambda: None,
    ) -> None:
        """`known(pid)`: the identity of a card of ours that the events show
        as a back (the server never knows our face-down cards); `me()`: our
        seat (None: a spectator's log, or a replay's), whose sentences say
        "you" (`who` names it "You" too, but a player may be named so)."""
        self.who = who
        self.known = known
        self.me = me
        self.kept = kept
        self.lines: list[str] = []
        self.dropped = 0  # the oldest lines forgotten (`kept` are kept)
        self.cards: dict[int, tuple[int | None, Card | None]] = {}  # pid -> (owner, card)
        self.acting: int | None = None  # the card whose ability is being applied

    def learn(self, pid: int, owner: int | None, card: Card | None) -> None:
        """What we know of card `pid`: its owner and identity (a back: unknown)."""
        old_owner, old_card = self.cards.get(pid, (None, None))
        known = card if card_name(card) else old_card
        self.cards[pid] = (owner if owner is not None else old_owner, known)

    def learn_view(self, view: TableView) -> None:
        """Everything a position shows (after a snapshot, events do not say it)."""
        for slot in view.queue:
            for c in slot:
                self.learn(c.pid, c.owner, c.card)

    def mine(self, seat: int) -> bool:
        return seat == self.me()

    def card(self, pid: int, *, subject: bool = True) -> str:
        """``Ann's Spy``, or ``Ann's face-down card`` while it is not known;
        ``your Spy``; as the subject of a sentence or (`subject` false) as
        its object, which some languages say apart."""
        owner, card = self.cards.get(pid, (None, None))
        name, the = card_name(card), _the(card)

        def placed(as_subject: str, as_object: str) -> str:
            return as_subject if subject else as_object

        if owner is None and name is None:
            return placed(pgettext("subject", "a face-down card"), _("a face-down card"))
        if owner is None:
            said = placed(pgettext("subject", "card {card}"), _("card {card}"))
        elif self.mine(owner) and name is None:
            said = placed(pgettext("subject", "your face-down card"), _("your face-down card"))
        elif self.mine(owner):
            said = placed(pgettext("subject", "your {card}"), _("your {card}"))
        elif the is None:
            said = placed(
                pgettext("subject", "{player}'s face-down card"), _("{player}'s face-down card")
            )
        else:
            said = placed(pgettext("subject", "{player}'s {card}"), _("{player}'s {card}"))
            name = the  # (the card of someone, with its article where a language has one)
        player = None if owner is None else self.who(owner)
        return elide(said.format(card=name, player=player))

    def name(self, pid: int) -> str:
        """The card's name alone, while it is known (``face-down card``)."""
        return card_name(self.cards.get(pid, (None, None))[1]) or _("face-down card")

    def note(self, line: str) -> None:
        """A line that is not an event (a chat line, a notice)."""
        self.lines.append(line)

    def add(self, events: Iterable[Event]) -> None:
        for event in events:
            line = self.describe(event)
            if line:
                self.lines.append(line[0].upper() + line[1:])
        if len(self.lines) > self.kept:
            self.dropped += len(self.lines) - self.kept
            del self.lines[: len(self.lines) - self.kept]

    def _said(self, seat: int, yours: str, theirs: str, **fields: object) -> str:
        """A sentence whose subject is `seat`: `yours` ("You revealed...")
        for our own seat, else `theirs` ("{player} revealed..."), filled in."""
        return (yours if self.mine(seat) else theirs).format(player=self.who(seat), **fields)

    def describe(self, e: Event) -> str | None:
        """One event as a line (and what it teaches about the cards), or
        None for an event that says nothing a player needs."""
        if isinstance(e, DirectionChosen):
            if e.direction == "right-to-left":
                return self._said(
                    e.seat,
                    _("You chose to resolve right to left"),
                    _("{player} chose to resolve right to left"),
                )
            return self._said(
                e.seat,
                _("You chose to resolve left to right"),
                _("{player} chose to resolve left to right"),
            )
        if isinstance(e, RoundStarted):
            return self._said(
                e.first_player,
                _("── Round {round} · You play first"),
                _("── Round {round} · {player} plays first"),
                round=e.round,
            )
        if isinstance(e, Placed):
            return self._placed(e)
        if isinstance(e, PlacementSkipped):
            return self._said(
                e.seat, _("You placed nothing this round"), _("{player} placed nothing this round")
            )
        if isinstance(e, Kept):
            name = card_name(self.cards.get(e.pid, (None, None))[1])
            if name:  # (not "Bo kept Bo's")
                yours = _("You kept your {card} face down ({tokens} ◆ on it)")
                theirs = _("{player} kept their {card} face down ({tokens} ◆ on it)")
            else:
                yours = _("You kept a card face down ({tokens} ◆ on it)")
                theirs = _("{player} kept a card face down ({tokens} ◆ on it)")
            return self._said(e.seat, yours, theirs, card=name, tokens=e.tokens)
        if isinstance(e, Revealed):
            self.learn(e.pid, e.seat, e.card)
            if e.tokens:
                yours = _("You revealed {card} ({tokens} ◆ on it)")
                theirs = _("{player} revealed {card} ({tokens} ◆ on it)")
            else:
                yours, theirs = _("You revealed {card}"), _("{player} revealed {card}")
            return self._said(e.seat, yours, theirs, card=a_card(e.card), tokens=e.tokens)
        if isinstance(e, AbilityUsed):
            self.acting = e.pid
            ability = e.ability
            if ability and ability != "shapeshifter" and self._kind(e.pid) is Kind.SHAPESHIFTER:
                said = _("{card} copied {other}")
                return said.format(card=self.card(e.pid), other=a_kind(ability))
            return None
        if isinstance(e, NoEffect):
            return _("{card} had no effect").format(card=self.card(e.pid))
        if isinstance(e, Eliminated):
            self.learn(e.pid, e.owner, e.card)
            if e.by == e.pid:
                if e.tokens:
                    said = _("{card} eliminated itself ({tokens} ◆ lost)")
                else:
                    said = _("{card} eliminated itself")
            elif e.tokens:
                said = _("{card} eliminated {victim} ({tokens} ◆ lost)")
            else:
                said = _("{card} eliminated {victim}")
            victim = self.card(e.pid, subject=False)
            return said.format(card=self.card(e.by), victim=victim, tokens=e.tokens)
        if isinstance(e, Discarded):
            self.learn(e.pid, e.owner, e.card)
            if e.reason == "ambush":
                said = _("{card} was discarded by the Ambush")
            else:
                said = _("{card} was discarded")
            return said.format(card=self.card(e.pid))
        if isinstance(e, Moved):
            said = _("{card} was moved to position {position}")
            return said.format(card=self.card(e.pid), position=e.to + 1)
        if isinstance(e, Scored):
            return self._scored(e)
        if isinstance(e, Stolen):
            return self._stolen(e)
        if isinstance(e, Drew):
            n = len(e.cards)
            return self._said(
                e.seat,
                ngettext("You drew {count} card", "You drew {count} cards", n),
                ngettext("{player} drew {count} card", "{player} drew {count} cards", n),
                count=n,
            )
        if isinstance(e, RoundEnded):
            return _("── Round {round} is over").format(round=e.round)
        if isinstance(e, GameEnded):
            return _("── The game is over")
        return None

    def _placed(self, e: Placed) -> str:
        card: Card | None = e.card
        if not card_name(card) and self.known is not None:
            card = self.known(e.pid) or card
        self.learn(e.pid, e.seat, card)
        name = card_name(card)
        # (another's card is named only when it is known: a game over, a replay)
        if e.at == "first" and name:
            yours = _("You placed your {card} face down, the first in the queue")
            theirs = _("{player} placed {a_card} face down, the first in the queue")
        elif e.at == "first":
            yours = _("You placed a card face down, the first in the queue")
            theirs = _("{player} placed a card face down, the first in the queue")
        elif e.at == "last" and name:
            yours = _("You placed your {card} face down, the last in the queue")
            theirs = _("{player} placed {a_card} face down, the last in the queue")
        elif e.at == "last":
            yours = _("You placed a card face down, the last in the queue")
            theirs = _("{player} placed a card face down, the last in the queue")
        elif name:
            yours = _("You placed your {card} face down, on top of {other}")
            theirs = _("{player} placed {a_card} face down, on top of {other}")
        else:
            yours = _("You placed a card face down, on top of {other}")
            theirs = _("{player} placed a card face down, on top of {other}")
        other = self.card(int(e.at), subject=False) if e.at not in ("first", "last") else ""
        return self._said(e.seat, yours, theirs, card=name, a_card=a_card(card), other=other)

    def _scored(self, e: Scored) -> str:
        points = f"{'+' if e.points >= 0 else ''}{e.points}"
        if e.reason in ("heir", "lord") and self.acting is not None:
            # a card's own ability scoring: the card says it
            return _("{card}: {points}").format(card=self.card(self.acting), points=points)
        return self._said(
            e.seat,
            _("  You {points} ({reason})"),
            _("  {player} {points} ({reason})"),
            points=points,
            reason=lookup(REASONS, e.reason, e.reason),
        )

    def _stolen(self, e: Stolen) -> str:
        thief = self.card(self.acting) if self.acting is not None else self.who(e.seat)
        if e.victim == e.seat:  # its own owner's cards alone were next to it
            if self.mine(e.seat):
                text = _("{thief} had only your cards next to it: nothing stolen")
            else:
                text = _("{thief} had only {player}'s cards next to it: nothing stolen")
        elif not e.points:
            if self.mine(e.victim):
                text = _("{thief} found nothing to steal: you had no point")
            else:
                text = _("{thief} found nothing to steal: {victim} had no point")
        elif self.mine(e.victim):
            text = ngettext(
                "{thief} stole {points} point from you",
                "{thief} stole {points} points from you",
                e.points,
            )
        else:
            text = ngettext(
                "{thief} stole {points} point from {victim}",
                "{thief} stole {points} points from {victim}",
                e.points,
            )
        return elide(
            text.format(
                thief=thief, player=self.who(e.seat), victim=self.who(e.victim), points=e.points
            )
        )

    def _kind(self, pid: int) -> Kind | None:
        card = self.cards.get(pid, (None, None))[1]
        return None if card is None else card.kind


# ------------------------------------------------------------ a replay's steps


def _name(card: Card) -> str:
    """``red Lord``, ``a red card`` for a back."""
    family = family_name(card.family)
    if card.kind is None:
        return _("a {family} card").format(family=family)
    return _("{family} {card}").format(family=family, card=kind_name(card.kind.label))


FAMILIES = (N_("red"), N_("blue"), N_("green"), N_("yellow"), N_("black"))


# A family's colour where room is short (the two-player variant's tags).
FAMILIES_SHORT = (
    # TRANSLATORS: a colour in 3 or 4 letters (red, blue, green, yellow, black)
    NP_("short colour", "red"),
    NP_("short colour", "blu"),
    NP_("short colour", "gre"),
    NP_("short colour", "yel"),
    NP_("short colour", "bla"),
)


def _family_index(family: int | str) -> int | None:
    """A family's index, from its index or its plain-data name (``red``)."""
    index = FAMILY_NAMES.index(family) if family in FAMILY_NAMES else family
    return index if isinstance(index, int) and 0 <= index < len(FAMILY_NAMES) else None


def family_short(family: int | str) -> str:
    """A family's colour in a few letters (``blu``), from its index or name."""
    index = _family_index(family)
    return str(family)[:3] if index is None else pgettext(*FAMILIES_SHORT[index])


def family_name(family: int | str) -> str:
    """A family's colour in the player's language, from its index or its
    plain-data name (``red``)."""
    index = _family_index(family)
    return str(family) if index is None else _(FAMILIES[index])


def seat_name(seat: int) -> str:
    """``seat 0``: a seat in a replay's sentences (the replay screen puts the
    players' names in its place: `seat_pattern`)."""
    return _("seat {number}").format(number=seat)


def seat_pattern() -> str:
    """A regular expression that finds `seat_name`'s words, the seat's number
    its group: ``\\bseat (\\d+)\\b`` in English."""
    before, _sep, after = re.escape(_("seat {number}")).partition(re.escape("{number}"))
    return rf"(?<!\w){before}(\d+){after}(?!\w)"


def deal_line(settings: GameSettings, hidden: dict[int, str]) -> str:
    """Step 0's sentence: the game dealt, and the seats whose cards stay
    backs (`hidden`: why, by seat)."""
    s = settings
    text = _(
        "the deal: {players} players, {variant} game, {edition} edition;"
        " {seat} chooses the direction"
    ).format(
        players=s.players,
        variant=variant_name(s.variant),
        edition=edition_name(s.edition),
        seat=seat_name(s.first_player),
    )
    for seat in sorted(hidden):
        text += _("; {seat}'s cards are backs until opened ({why})").format(
            seat=seat_name(seat), why=hidden[seat]
        )
    return text


# The variants and the editions (the protocol's identifiers), as said.
VARIANT_NAMES = {"standard": N_("standard"), "two-player": N_("two-player")}
EDITION_NAMES = {"revised": N_("revised"), "first": N_("first")}


def variant_name(variant: str) -> str:
    """``standard``, ``two-player``: a variant in the player's language."""
    return lookup(VARIANT_NAMES, variant, variant)


def edition_name(edition: str) -> str:
    """``revised``, ``first``: an edition in the player's language."""
    return lookup(EDITION_NAMES, edition, edition)


def names_and(names: list[str]) -> str:
    """Names in a sentence.

    >>> names_and(["Ann"]), names_and(["You", "Ann", "Bob"])
    ('Ann', 'You, Ann and Bob')
    """
    if len(names) < 2:
        return "".join(names)
    return _("{names} and {last}").format(names=", ".join(names[:-1]), last=names[-1])


_TARGET = {
    Step.ELIMINATE: N_("{seat} chose {card} to eliminate"),
    Step.STEAL: N_("{seat} chose {card} to spy on"),
    Step.COPY: N_("{seat} chose {card} to copy"),
    Step.MOVE_CARD: N_("{seat} chose {card} to move"),
}


def decision_line(
    entry: LogEntry,
    decision: Decision | None,
    events: Sequence[Event],
    card: Card | None,
    queue_was_empty: bool,
    places: dict[int, int],
) -> str:
    """A step's sentence: the decision of log `entry` (the pending
    `decision` it answered; the `events` it made; `card`: the card it
    placed; `places`: each pid's place in the queue before it)."""

    def at(pid: int | None) -> str:
        """``the card at place 3`` (``the card`` where it is no longer in the queue)."""
        if pid is None or pid not in places:
            return _("the card")
        return _("the card at place {place}").format(place=places[pid])

    seat = entry.seat
    action = entry.action
    pid = None if decision is None else decision.pid
    by_server = _(" (the server decided for the seat)") if entry.by_server else ""
    if isinstance(action, Keep):
        kept = next((e for e in events if type(e) is Kept), None)
        if kept is None:
            text = _("{seat} kept {card} face down")
        else:
            text = ngettext(
                "{seat} kept {card} face down ({tokens} token on it)",
                "{seat} kept {card} face down ({tokens} tokens on it)",
                kept.tokens,
            )
        text = text.format(
            seat=seat_name(seat), card=at(pid), tokens=0 if kept is None else kept.tokens
        )
        text += by_server
    elif isinstance(action, Reveal):
        shown = next((e for e in events if type(e) is Revealed), None)
        if shown is None:
            text = _("{seat} reveals {card}").format(seat=seat_name(seat), card=at(pid))
        else:
            text = _("{seat} revealed {card}: {name}").format(
                seat=seat_name(seat), card=at(shown.pid), name=_name(shown.card)
            )
    elif isinstance(action, Target):
        aim = None if decision is None else _TARGET.get(Step(decision.kind))
        text = _(aim) if aim else _("{seat} chose {card}")
        text = text.format(seat=seat_name(seat), card=at(action.pid)) + by_server
    elif isinstance(action, MoveTo):
        moved = next((e for e in events if type(e) is Moved), None)
        what = _("the card") if moved is None else at(moved.pid)
        text = _("{seat} moved {card} to place {place} of the queue").format(
            seat=seat_name(seat), card=what, place=action.index
        )
        text += by_server
    else:
        text = _decision_text(entry, events, card, queue_was_empty)
        if isinstance(action, ChooseDirection):
            text += by_server
    return text


def _decision_text(
    entry: LogEntry,
    events: Sequence[Event],
    card: Card | None,
    queue_was_empty: bool,
) -> str:
    """`decision_line` for the decisions that name no card of the queue."""
    seat = entry.seat
    action = entry.action
    if action is None:
        return _("{seat}'s placement was skipped by the server").format(seat=seat_name(seat))
    if isinstance(action, ChooseDirection):
        if action.direction == "right-to-left":
            return _("{seat} chose the direction: right to left").format(seat=seat_name(seat))
        return _("{seat} chose the direction: left to right").format(seat=seat_name(seat))
    if isinstance(action, Place):
        assert card is not None
        if queue_was_empty:
            text = _("{seat} placed {card} in the empty queue")
        elif action.at == "first":
            text = _("{seat} placed {card} first in the queue")
        elif action.at == "last":
            text = _("{seat} placed {card} last in the queue")
        else:  # (`at`: a slot)
            text = _("{seat} placed {card} on its card at place {place}")
        place = 0 if action.at in ("first", "last") else int(action.at) + 1
        return text.format(seat=seat_name(seat), card=_name(card), place=place)
    if isinstance(action, Open):
        if entry.settled:
            text = _(
                "the server settled {seat}'s eliminated card as {card} (the seat had forfeited)"
            )
        else:
            text = _("{seat} opened its eliminated card: {card}")
        if not events:  # this engine knew the card and did not wait for it
            text += _(" (shown already)")
        return text.format(seat=seat_name(seat), card=_name(action.card))
    # (the others are `decision_line`'s; an unknown one is named by its type)
    return _("{seat} played {action}").format(seat=seat_name(seat), action=type(action).__name__)

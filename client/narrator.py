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

from .view import TableView

KIND_NAMES = {
    "archer": "Archer",
    "soldier": "Soldier",
    "spy": "Spy",
    "heir": "Heir",
    "lord": "Lord",
    "shapeshifter": "Shapeshifter",
    "assassination": "Assassination",
    "royal_decree": "Royal Decree",
    "ambush": "Ambush",
    "conspiracy": "Conspiracy",
}

# Why points were scored, as a `scored` event's reason says it.
REASONS = {
    "tokens": "Influence on the card",
    "conspiracy": "Conspiracy",
    "eliminate": "elimination",
    "ambush": "Ambush",
    "heir": "Heir",
    "lord": "Lord",
}


def card_name(card: Card | None) -> str | None:
    """The card's name, or None for a card back (or no card).

    >>> from oriflamme.engine import BACKS, CARDS, Kind
    >>> card_name(CARDS[0][Kind.ROYAL_DECREE]), card_name(BACKS[0])
    ('Royal Decree', None)
    """
    if card is None or card.kind is None:
        return None
    return KIND_NAMES[card.kind.label]


def a_card(card: Card | None) -> str:
    """``an Archer``, ``a Spy``; ``a card`` for a back."""
    name = card_name(card)
    return "a card" if name is None else _a(name)


def a_kind(label: str) -> str:
    """``a Spy`` for ``spy`` (a kind's plain-data name; an ability's)."""
    return _a(KIND_NAMES.get(label, label))


def _a(name: str) -> str:
    return f"an {name}" if name[0] in "AEIOU" or name == "Heir" else f"a {name}"


class EventLog:
    """The game's events in plain words; see the module docstring.
    `who(seat)` names a seat ("You" for our own)."""

    def __init__(
        self,
        who: Callable[[int], str],
        *,
        known: Callable[[int], Card | None] | None = None,
        kept: int = 500,
    ) -> None:
        """`known(pid)`: the identity of a card of ours that the events show
        as a back (the server never knows our face-down cards)."""
        self.who = who
        self.known = known
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

    def card(self, pid: int, *, possessive: bool = True) -> str:
        """``Ann's Spy``, or ``Ann's face-down card`` while it is not known."""
        owner, card = self.cards.get(pid, (None, None))
        name = card_name(card) or "face-down card"
        if owner is None:
            return f"card {name}" if card_name(card) else "a face-down card"
        return f"{self._owner(owner)} {name}" if possessive else name

    def note(self, line: str) -> None:
        """A line that is not an event (a chat line, a notice)."""
        self.lines.append(line)

    def _owner(self, seat: int) -> str:
        who = self.who(seat)
        return "your" if who == "You" else f"{who}'s"

    def add(self, events: Iterable[Event]) -> None:
        for event in events:
            line = self.describe(event)
            if line:
                self.lines.append(line[0].upper() + line[1:])
        if len(self.lines) > self.kept:
            self.dropped += len(self.lines) - self.kept
            del self.lines[: len(self.lines) - self.kept]

    def describe(self, e: Event) -> str | None:
        """One event as a line (and what it teaches about the cards), or
        None for an event that says nothing a player needs."""
        who = self.who
        if isinstance(e, DirectionChosen):
            return f"{who(e.seat)} chose to resolve {e.direction.replace('-', ' ')}"
        if isinstance(e, RoundStarted):
            first = who(e.first_player)
            return f"── Round {e.round} · {first} {'play' if first == 'You' else 'plays'} first"
        if isinstance(e, Placed):
            card: Card | None = e.card
            if not card_name(card) and self.known is not None:
                card = self.known(e.pid) or card
            self.learn(e.pid, e.seat, card)
            name = card_name(card)
            if not name:
                what = "a card face down"
            elif who(e.seat) == "You":
                what = f"your {name} face down"
            else:
                what = f"{a_card(card)} face down"
            if e.at == "first":
                where = "the first in the queue"
            elif e.at == "last":
                where = "the last in the queue"
            else:
                where = f"on top of {self.card(int(e.at))}"
            return f"{who(e.seat)} placed {what}, {where}"
        if isinstance(e, PlacementSkipped):
            return f"{who(e.seat)} placed nothing this round"
        if isinstance(e, Kept):
            name = card_name(self.cards.get(e.pid, (None, None))[1])
            their = "your" if who(e.seat) == "You" else "their"  # (not "Bo kept Bo's")
            what = f"{their} {name}" if name else "a card"
            return f"{who(e.seat)} kept {what} face down ({e.tokens} ◆ on it)"
        if isinstance(e, Revealed):
            self.learn(e.pid, e.seat, e.card)
            tokens = f" ({e.tokens} ◆ on it)" if e.tokens else ""
            return f"{who(e.seat)} revealed {a_card(e.card)}{tokens}"
        if isinstance(e, AbilityUsed):
            self.acting = e.pid
            ability = e.ability
            if ability and ability != "shapeshifter" and self._kind(e.pid) is Kind.SHAPESHIFTER:
                return f"{self.card(e.pid)} copied {a_kind(ability)}"
            return None
        if isinstance(e, NoEffect):
            return f"{self.card(e.pid)} had no effect"
        if isinstance(e, Eliminated):
            self.learn(e.pid, e.owner, e.card)
            lost = f" ({e.tokens} ◆ lost)" if e.tokens else ""
            victim = "itself" if e.by == e.pid else self.card(e.pid)
            return f"{self.card(e.by)} eliminated {victim}{lost}"
        if isinstance(e, Discarded):
            self.learn(e.pid, e.owner, e.card)
            why = " by the Ambush" if e.reason == "ambush" else ""
            return f"{self.card(e.pid)} was discarded{why}"
        if isinstance(e, Moved):
            return f"{self.card(e.pid)} was moved to position {e.to + 1}"
        if isinstance(e, Scored):
            sign = "+" if e.points >= 0 else ""
            if e.reason in ("heir", "lord") and self.acting is not None:
                # a card's own ability scoring: the card says it
                return f"{self.card(self.acting)}: {sign}{e.points}"
            return f"  {who(e.seat)} {sign}{e.points} ({REASONS.get(e.reason, e.reason)})"
        if isinstance(e, Stolen):
            victim = who(e.victim)
            victim = "you" if victim == "You" else victim
            thief = self.card(self.acting) if self.acting is not None else who(e.seat)
            if e.victim == e.seat:  # its own owner's cards alone were next to it
                return f"{thief} had only {self._owner(e.seat)} cards next to it: nothing stolen"
            if not e.points:
                return f"{thief} found nothing to steal: {victim} had no point"
            return f"{thief} stole {e.points} from {victim}"
        if isinstance(e, Drew):
            return f"{who(e.seat)} drew {len(e.cards)} cards"
        if isinstance(e, RoundEnded):
            return f"── Round {e.round} is over"
        if isinstance(e, GameEnded):
            return "── The game is over"
        return None

    def _kind(self, pid: int) -> Kind | None:
        card = self.cards.get(pid, (None, None))[1]
        return None if card is None else card.kind


# ------------------------------------------------------------ a replay's steps


def _name(card: Card) -> str:
    """``red Lord``, ``a red card`` for a back."""
    if card.kind is None:
        return f"a {FAMILY_NAMES[card.family]} card"
    return f"{FAMILY_NAMES[card.family]} {KIND_NAMES[card.kind.label]}"


def _tokens(n: int) -> str:
    return f"{n} token{'' if n == 1 else 's'}"


def deal_line(settings: GameSettings, hidden: dict[int, str]) -> str:
    """Step 0's sentence: the game dealt, and the seats whose cards stay
    backs (`hidden`: why, by seat)."""
    s = settings
    text = (
        f"the deal: {s.players} players, {s.variant} game, {s.edition} edition;"
        f" seat {s.first_player} chooses the direction"
    )
    for seat in sorted(hidden):
        text += f"; seat {seat}'s cards are backs until opened ({hidden[seat]})"
    return text


_TARGET = {
    Step.ELIMINATE: "to eliminate",
    Step.STEAL: "to spy on",
    Step.COPY: "to copy",
    Step.MOVE_CARD: "to move",
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

    def at(pid: int | None, *, article: str = "the") -> str:
        """``the card at place 3`` (``its card``... where it is no longer in the queue)."""
        if pid is None or pid not in places:
            return f"{article} card"
        return f"{article} card at place {places[pid]}"

    seat = entry.seat
    action = entry.action
    who = f"seat {seat}"
    pid = None if decision is None else decision.pid
    by_server = " (the server decided for the seat)" if entry.by_server else ""
    if action is None:
        text = f"{who}'s placement was skipped by the server"
    elif isinstance(action, ChooseDirection):
        text = f"{who} chose the direction: {action.direction.replace('-', ' ')}{by_server}"
    elif isinstance(action, Place):
        assert card is not None
        if queue_was_empty:
            where = "in the empty queue"
        elif action.at == "first":
            where = "first in the queue"
        elif action.at == "last":
            where = "last in the queue"
        else:
            where = f"on its card at place {int(action.at) + 1}"  # (`at`: a slot)
        text = f"{who} placed {_name(card)} {where}"
    elif isinstance(action, Keep):
        kept = next((e for e in events if type(e) is Kept), None)
        detail = "" if kept is None else f" ({_tokens(kept.tokens)} on it)"
        text = f"{who} kept {at(pid)} face down{detail}{by_server}"
    elif isinstance(action, Reveal):
        shown = next((e for e in events if type(e) is Revealed), None)
        if shown is None:
            text = f"{who} reveals {at(pid)}"
        else:
            text = f"{who} revealed {at(shown.pid)}: {_name(shown.card)}"
    elif isinstance(action, Open):
        if entry.settled:
            text = (
                f"the server settled {who}'s eliminated card as {_name(action.card)}"
                " (the seat had forfeited)"
            )
        else:
            text = f"{who} opened its eliminated card: {_name(action.card)}"
        if not events:  # this engine knew the card and did not wait for it
            text += " (shown already)"
    elif isinstance(action, Target):
        aim = "" if decision is None else _TARGET.get(Step(decision.kind), "")
        text = f"{who} chose {at(action.pid)} {aim}".rstrip() + by_server
    elif isinstance(action, MoveTo):
        moved = next((e for e in events if type(e) is Moved), None)
        what = "the card" if moved is None else at(moved.pid)
        text = f"{who} moved {what} to place {action.index} of the queue{by_server}"
    else:  # pragma: no cover - every logged action is one of the above
        text = f"{who} played {type(action).__name__}{by_server}"
    return text

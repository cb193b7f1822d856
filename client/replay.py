"""The replay of a finished game: every position, forwards and backwards, every card shown.

The model behind ``oriflamme replay RECORD``; pure, no I/O.

How this works
--------------
Once a game is over its record knows every card: each seat's seed gives,
with the server seed, the seat's deal (`oriflamme.protocol.deal.derive_deal`),
and the openings in the log and each seat's final openings give the
identity of every card it placed (an opening counts only if it opens the
placement's commitment). `replay_steps` deals those real cards to an engine
(`new_game(deal=...)`) and applies the record's log to it, entry by entry: a
placement with the real card behind its logged card back, a skipped
placement as a skip, everything else as logged (the server's decisions for
a seat, `by_server`, included). Step 0 is the position after the deal,
before the first decision; each log entry then gives one step: the position
after it (`oriflamme.engine.to_data`), the events it caused (the
engine's, unmasked), the seat it was for, and a sentence.

The referee's engine knew no card, so its log has an opening after every
reveal and every elimination of a face-down card, where it waited for the
owner. An engine that knows the cards does not wait: the reveal (or the
elimination) happens at once, its events come with that step, and the
opening that follows in the log is a step of its own that changes nothing
(its description says what was opened). Across all the steps the events
are the record's (`mask_event(e, None)` of each is the recorded event), and
the last position is the game over with the recorded scores (or, for a game
its players ended by vote, the position where they did); a replay that
does not reproduce them is not shown.

Seats whose cards cannot all be known
-------------------------------------
A seat whose seed was never revealed (it left, or forfeited before the
end), whose seed does not open its seed commitment, that placed a card
nobody opened, or whose eliminated card the server settled as a card other
than the real one, is replayed with card backs, the way `verify` replays
every seat: its hand, set-aside cards and draw pile are backs, it places
backs, and the log's openings give its cards their identities when the game
needed them. A card of such a seat whose identity the record does know (an
opening later in the log) is shown in the queue, and in its `placed` event,
from the moment it is placed. Step 0's description names these seats and
why. The same happens to a seat whose revealed cards do not fit the game as
played; and if the log does not replay even with every seat as backs (a
record that is not valid: `oriflamme verify` says why), `replay_steps`
raises `ReplayError`. The replay checks no verdict: a record's cards are
shown as far as the record's commitments vouch for them.

Example
-------
A viewer steps back and forth through the list::

    from oriflamme.client.replay import ReplayError, replay_steps
    from oriflamme.protocol.record import decode_record

    steps = replay_steps(decode_record(data))   # ReplayError: cannot be replayed
    at = 0
    show(steps[at].position)                    # the deal, every hand shown
    at += 1                                      # forwards: what happened, who did it
    print(steps[at].description, steps[at].events)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from oriflamme.engine import (
    Card,
    Decision,
    Event,
    Game,
    IllegalAction,
    Open,
    Place,
    SeatDeal,
    Step,
    card_to_data,
    event_to_data,
    hidden_deal,
    mask_event,
    new_game,
    to_data,
)
from oriflamme.engine.events import (
    Placed,
)
from oriflamme.protocol.commitments import SERVER_SEAT, opening_matches, seed_matches
from oriflamme.protocol.deal import derive_deal
from oriflamme.protocol.record import LogEntry, Record

from .i18n import _
from .narrator import deal_line, decision_line
from .view import TableView

__all__ = ["ReplayError", "ReplayStep", "replay_steps"]


class ReplayError(ValueError):
    """The record cannot be replayed; the message says why, for a person."""


@dataclass(frozen=True)
class ReplayStep:
    """One position of the replay and how the game got there.

    `position`: engine position data (`oriflamme.engine.to_data`), every
    identity the replay knows shown. `events`: the engine's events of what
    happened since the previous step, `()` for step 0. `actor`: the
    seat whose decision (or the server's decision for it) led here, None for
    step 0. `description`: a short sentence in plain words.
    """

    position: dict[str, Any]
    events: tuple[Event, ...]
    actor: int | None
    description: str

    @property
    def view(self) -> TableView:
        """The position as the screens read it."""
        return TableView.from_data(self.position)


def replay_steps(record: Record) -> list[ReplayStep]:
    """Every step of `record`'s game: the deal, then one step per log entry.

    Seats whose cards cannot all be known are replayed with card backs (see
    the module docstring); raises `ReplayError` if the log cannot be replayed
    at all.
    """
    known, placements = _known_cards(record)
    hidden = _hidden_seats(record, known, placements)
    while True:
        full = {s for s in range(record.settings.players) if s not in hidden}
        try:
            return _replay(record, full, known, hidden)
        except _Diverged as d:
            if not full:
                said = _(
                    "the record cannot be replayed: {why}"
                    " (`oriflamme verify` tells what is wrong with it)"
                )
                raise ReplayError(said.format(why=d.message)) from None
            blamed = [d.seat] if d.seat in full else sorted(full)
            for seat in blamed:
                hidden[seat] = _("its revealed cards do not fit the game as played")


# ---------------------------------------------------------------- what is known


@dataclass(frozen=True, slots=True)
class _Placement:
    seat: int
    commitment: bytes


def _known_cards(record: Record) -> tuple[dict[int, Card], dict[int, _Placement]]:
    """The identity of every placed card that an opening in the record vouches
    for (it opens the placement's commitment), by pid; and the placements."""
    gid = record.game_id
    placements: dict[int, _Placement] = {}
    for entry in record.log:
        if isinstance(entry.action, Place) and entry.pid is not None:
            assert entry.commitment is not None  # decode_record requires it
            placements.setdefault(entry.pid, _Placement(entry.seat, entry.commitment))
    known: dict[int, Card] = {}

    def learn(seat: int, pid: int, card: Card, nonce: bytes) -> None:
        placed = placements.get(pid)
        if (
            placed is not None
            and placed.seat == seat
            and pid not in known
            and opening_matches(placed.commitment, gid, seat, pid, card, nonce)
        ):
            known[pid] = card

    for entry in record.log:
        if isinstance(entry.action, Open) and entry.pid is not None and entry.nonce is not None:
            learn(entry.seat, entry.pid, entry.action.card, entry.nonce)
    for seat, openings in enumerate(record.final_openings):
        for o in openings or ():
            learn(seat, o.pid, o.card, o.nonce)
    return known, placements


def _hidden_seats(
    record: Record, known: dict[int, Card], placements: dict[int, _Placement]
) -> dict[int, str]:
    """The seats to replay with card backs, each with the reason."""
    gid = record.game_id
    server_ok = seed_matches(record.server_seed_commitment, gid, SERVER_SEAT, record.server_seed)
    hidden: dict[int, str] = {}
    for seat in range(record.settings.players):
        seed = record.seeds[seat]
        unopened = sorted(p for p, c in placements.items() if c.seat == seat and p not in known)
        miscast = [
            e.pid
            for e in record.log
            if e.settled
            and e.seat == seat
            and isinstance(e.action, Open)
            and e.pid is not None
            and known.get(e.pid) != e.action.card
        ]
        if seed is None:
            hidden[seat] = _("its seed was never revealed")
        elif not server_ok:
            hidden[seat] = _("the server seed does not open its commitment")
        elif not seed_matches(record.seed_commitments[seat], gid, seat, seed):
            hidden[seat] = _("its seed does not open its commitment")
        elif unopened:
            hidden[seat] = _("card {card} was never opened").format(card=unopened[0])
        elif miscast:
            hidden[seat] = _("the server settled its card {card} as another card").format(
                card=miscast[0]
            )
    return hidden


# ---------------------------------------------------------------- the replay


class _Diverged(Exception):
    """The replay does not follow the record; `seat`: whose cards are to blame
    (None: nobody's in particular)."""

    def __init__(self, message: str, seat: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.seat = seat


def _same(a: Event, b: Event) -> bool:
    # NamedTuples compare as plain tuples: Moved(3, 1) == Uncovered(3, True).
    return type(a) is type(b) and a == b


def _replay(
    record: Record, full: set[int], known: dict[int, Card], hidden: dict[int, str]
) -> list[ReplayStep]:
    settings = record.settings
    rules = settings.rules
    backs = hidden_deal(rules)
    deal: list[SeatDeal] = []
    for seat in range(rules.players):
        seed = record.seeds[seat]
        if seat in full and seed is not None:
            deal.append(derive_deal(rules, record.game_id, seat, seed, record.server_seed))
        else:
            deal.append(backs[seat])
    game = new_game(
        rules.players,
        variant=rules.variant,
        edition=rules.edition,
        first_player=settings.first_player,
        families=rules.families,
        deal=deal,
    )
    steps = [ReplayStep(_position(game, known), (), None, deal_line(record.settings, hidden))]
    recorded = record.events
    cursor = 0
    for i, entry in enumerate(record.log):
        where = f"log entry {i}"
        decision = game.decision
        queue_was_empty = not game.queue
        # Where each card was when the step began: captions name places in the
        # queue, as a player sees it, not card ids (which say nothing to them).
        places = {c.pid: i + 1 for i, slot in enumerate(game.queue) for c in slot}
        blame = entry.seat if entry.seat in full else None
        try:
            events, card = _apply(game, entry, decision, full, known, where)
        except IllegalAction as exc:
            raise _Diverged(f"{where}: {exc}", blame) from None
        for event in events:
            if cursor >= len(recorded) or not _same(mask_event(event, None), recorded[cursor]):
                raise _Diverged(
                    f"{where}: its event {event_to_data(mask_event(event, None))} is not"
                    f" the record's event {cursor}",
                    blame,
                )
            cursor += 1
        steps.append(
            ReplayStep(
                _position(game, known),
                tuple(_shown_event(e, known) for e in events),
                entry.seat,
                decision_line(entry, decision, events, card, queue_was_empty, places),
            )
        )
    if cursor != len(recorded):
        raise _Diverged(f"the replay has {cursor} events, the record {len(recorded)}")
    if not game.over and record.results.complete:  # (a game ended by vote stops early)
        raise _Diverged("the log stops before the end of the game")
    if tuple(game.scores) != record.results.scores:
        raise _Diverged(
            f"the replay's scores {game.scores} are not the record's {list(record.results.scores)}"
        )
    return steps


def _apply(
    game: Game,
    entry: LogEntry,
    decision: Decision | None,
    full: set[int],
    known: dict[int, Card],
    where: str,
) -> tuple[list[Event], Card | None]:
    """Apply one log entry; its events, and the card it placed or opened."""
    seat = entry.seat
    action = entry.action
    if isinstance(action, Open) and (
        decision is None or decision.kind != Step.OPEN or decision.pid != entry.pid
    ):
        # This engine knew the card, so it did not wait for the opening (and
        # the reveal before it may have ended the game).
        if seat in full and entry.pid is not None and known.get(entry.pid) == action.card:
            return [], action.card
        raise _Diverged(f"{where}: opens card {entry.pid} as {action.card}, out of turn")
    if decision is None:
        raise _Diverged(f"{where}: the game was already over")
    if action is None:
        if decision.kind != Step.PLACE or decision.seat != seat:
            raise _Diverged(f"{where}: skips seat {seat}'s placement, but none was pending")
        return game.skip_placement(), None
    if isinstance(action, Place):
        if entry.pid != game.next_pid:
            raise _Diverged(f"{where}: the placement is numbered {entry.pid}, not {game.next_pid}")
        real = known.get(entry.pid) if seat in full else None
        placed = action.card if real is None else real
        return game.apply(Place(placed, action.at), seat), placed
    if isinstance(action, Open):
        return game.apply(action, seat), action.card
    return game.apply(action, seat), None


def _position(game: Game, known: dict[int, Card]) -> dict[str, Any]:
    """`to_data(game)`, with the identities the record knows of face-down
    cards the engine plays as backs."""
    data = to_data(game)
    for slot in data["queue"]:
        for c in slot:
            if c["card"][1] is None and c["pid"] in known:
                c["card"] = card_to_data(known[c["pid"]])
    return data


def _shown_event(event: Event, known: dict[int, Card]) -> Event:
    if type(event) is Placed and event.card.kind is None and event.pid in known:
        return event._replace(card=known[event.pid])
    return event

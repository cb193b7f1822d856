"""One game at one table: the referee, its timers, the stand-in, and the pushes.

How this works
--------------
A `Table` wraps a `Referee` and gives it what a room needs:

* inputs: a game message from a seat (`receive`), a seat's player leaving
  (`leave`), going away and coming back (`connection`), and time passing
  (`tick`, with the current time; the table reads no clock);
* outputs: a `TableUpdate`: the pushes for each seat and for spectators
  (`TablePush`, numbered later per session by the room), the refusal or
  failure to tell the sender, and the record once the game is over. A
  refused input changes nothing; a failed opening is answered
  ``bad_opening`` and still changes what the server played in its place.

Timers. Each wait has one deadline (`next_deadline`): seeding and the final
reveal always have the server's `reply_timer`, and so has an opening
demanded after an elimination (a client answers those by itself); a
decision has the room's `turn_timer`, if the room has one. When a deadline
passes, the referee plays the safe default (`Referee.time_out`). The time
left is in every push that waits for an answer (`time_left`).

Stand-in. A seated player disconnected for longer than `grace` (the
server's, or the room's turn timer if longer: `Table.grace`) is played by
the stand-in (`Referee.stand_in`) until they come back: it skips their
placements, keeps their face-down cards, chooses at random for their face-up
cards, and forfeits what needs their secrets. A player who leaves the game
is played by the stand-in to the end. Both are noted in the record. In a
game of days (the grace is the turn timer), an away player's grace starts
again with each wait of theirs: the stand-in comes when that wait's timer
runs out, not a timer after they went away.

Ending a game by vote. A seat is *gone* while the stand-in plays it for its
player (away past the grace period, or left; not a server bot's seat). Then
the players still at the table (seated, not gone, not server bots) may vote
to end the game (`vote_abort`); once each of them has, play stops and the
final reveal begins (`Referee.abort`). A vote stands until the game ends,
or until a gone player comes back, which clears every vote. Who may vote
changes with the seats, so the votes are counted again whenever a seat
goes or comes back: a game whose last player yet to vote leaves ends then.

Pushes of both protocol versions. A change of the game is pushed as
version 1's `game_state` (the view, to each seat its copy) and as version
2's `game_update` (the log entries since the last one, one frame for all):
the table makes both `TablePush`es, each marked with its version, and the
room gives each session those of its version. Their fields are made when
first asked for (`Once`): a version no session at the table speaks costs
nothing.

No path sends a hidden identity: the referee's engine knows none, every
view is its view, and openings are pushed only once made.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from oriflamme.engine import FAMILY_NAMES, Rules, Step, action_to_data, event_to_data
from oriflamme.protocol import messages as m
from oriflamme.protocol.errors import (
    BAD_OPENING,
    NOT_PERMITTED,
    WRONG_STATE,
    ProtocolError,
    RemoteProtocolError,
)
from oriflamme.protocol.fanout import SharedEncoding
from oriflamme.protocol.record import BACK, LEFT, STAND_IN, Record, SeatRecord

from .config import ServerConfig
from .effects import HandedSeat
from .entropy import Entropy
from .referee import Phase, Referee, Refusal, Ruling


class Once:
    """A push's fields, made when first asked for and then kept: pushes are
    made for both protocol versions, and those no session speaks cost
    nothing (a `game_state`'s view is most of a version 1 push's cost)."""

    __slots__ = ("_make", "_made")

    def __init__(self, make: Callable[[], dict[str, Any]]) -> None:
        self._make: Callable[[], dict[str, Any]] | None = make
        self._made: dict[str, Any] = {}

    def __call__(self) -> dict[str, Any]:
        make = self._make
        if make is not None:
            self._made, self._make = make(), None
        return self._made


@dataclass(frozen=True, slots=True)
class TablePush:
    """A push for `seat` (None: for every spectator), before its `seq`.
    `shared`: the encoding of the pushes that are copies of this one;
    `version`: the protocol version whose sessions get it (None: all)."""

    seat: int | None
    kind: type[m.Message]
    fields: dict[str, Any] | Once
    shared: SharedEncoding | None = None
    version: int | None = None

    def made(self) -> dict[str, Any]:
        """Its fields."""
        fields = self.fields
        return fields if type(fields) is dict else fields()  # type: ignore[operator]


def _for_seat(fields: Once, seat: int | None, shared: SharedEncoding | None = None) -> TablePush:
    """Version 1's `game_state` of `seat` (None: spectators), from `fields`:
    its view names its viewer; all else is shared (and encoded once, with
    `shared`)."""

    def made() -> dict[str, Any]:
        common = fields()
        return {**common, "view": {**common["view"], "viewer": seat}}

    return TablePush(seat, m.GameState, Once(made), shared, version=1)


def _for_all(fields: Once, seat: int | None, shared: SharedEncoding) -> TablePush:
    """Version 2's `game_update`, one frame for every seat and spectator."""
    return TablePush(seat, m.GameUpdate, fields, shared, version=2)


@dataclass(slots=True)
class TableUpdate:
    """What one input to a table did. `error`: for the sender (a refusal, or
    ``bad_opening``); `record`: the game just ended; `cancelled`: the game
    will not be played (a seed commitment was missing); `seats_changed`: a
    seat's player went away, came back or left (the room shows it);
    `handed`: a seat was handed to a bot, with what the bot needs."""

    pushes: list[TablePush] = field(default_factory=list)
    error: ProtocolError | None = None
    record: Record | None = None
    cancelled: bool = False
    seats_changed: bool = False
    handed: tuple[int, HandedSeat] | None = None


def _millis(deadline: float | None, now: float) -> int | None:
    return None if deadline is None else max(0, int((deadline - now) * 1000))


def with_time_left(message: m.Message, millis: int | None) -> m.Message:
    """`message` as it would be sent now, its wait having `millis` left (0: it
    is over). Only pushes that wait for an answer carry a `time_left`."""
    if isinstance(message, m.GameState):
        decision = message.decision
        if decision is None or decision.time_left is None:
            return message
        return replace(message, decision=replace(decision, time_left=millis or 0))
    if isinstance(message, m.GameUpdate):
        pending = message.decision
        if pending is None or pending.time_left is None:
            return message
        return replace(message, decision=replace(pending, time_left=millis or 0))
    if isinstance(message, m.GameStarted | m.OpenRequest | m.FinalRevealRequest):
        return replace(message, time_left=millis or 0)
    return message


class Table:
    """One game; see the module docstring."""

    # The seats whose players voted to end the game (a class default: a
    # table saved before votes existed has none).
    votes: frozenset[int] = frozenset()
    # (and none of version 2's pushes: its next `game_update` is a snapshot)
    _pushed_log = 0
    _pushed_events = 0

    def __init__(
        self,
        *,
        room: int,
        settings: m.RoomSettings,
        seats: list[SeatRecord],
        first_player: int,
        config: ServerConfig,
        entropy: Entropy,
        referee: Referee | None = None,
        keys: Sequence[bytes | None] | None = None,
    ) -> None:
        """A table for a new game; `referee`: the game's, rebuilt from its log
        (`server.core.facts`), rather than a new one."""
        self.room = room
        self.settings = settings
        self.config = config
        rules = Rules(settings.players, settings.variant, settings.edition)
        self.rules = rules
        self.referee = referee or Referee(
            rules,
            first_player=first_player,
            seats=seats,
            turn_timer=settings.turn_timer,
            entropy=entropy,
            keys=keys,
        )
        self.record_id = self.referee.game_id.hex()
        self.families = tuple(tuple(FAMILY_NAMES[f] for f in fams) for fams in rules.families)
        self.record: Record | None = None
        n = rules.players
        self._away_since: list[float | None] = [None] * n  # disconnected, within the grace
        self._stood_in = [False] * n  # away past the grace: the stand-in plays
        self._left = [False] * n  # left for good: the stand-in plays to the end
        self._deadline: float | None = None
        self._deadline_for: tuple[Phase, int] | None = None  # the wait the deadline is for
        self._asked_open: int | None = None  # the pid of the last open_request sent
        self._asked_final = False  # the final_reveal_requests are sent
        self._pushed_turn = 0  # the decision the last game_state showed
        # How many log entries and events the last `game_update` had shown
        # (version 2: the next one carries those that follow).
        self._pushed_log = 0
        self._pushed_events = 0

    # ------------------------------------------------------------ queries

    @property
    def phase(self) -> Phase:
        return self.referee.phase

    @property
    def over(self) -> bool:
        return self.phase in (Phase.DONE, Phase.CANCELLED)

    def stood_in(self, seat: int) -> bool:
        """The stand-in plays `seat` now (its player is away or left)."""
        return self._stood_in[seat] or self._left[seat]

    def gone(self, seat: int) -> bool:
        """The stand-in plays `seat` for its player (away past the grace
        period, or left): not a server bot's seat, which the host added or
        its player handed over."""
        info = self.referee.seats[seat]
        return self.stood_in(seat) and not info.bot and not info.handed_to_bot

    def at_the_table(self, seat: int) -> bool:
        """`seat`'s own player plays it: they have a say in ending the game."""
        info = self.referee.seats[seat]
        return not self.stood_in(seat) and not info.bot and not info.handed_to_bot

    def abort_votes(self) -> tuple[int, ...] | None:
        """The seats that voted to end the game, while it can be ended by
        vote (a game in play with a seat gone); else None."""
        if self.phase is not Phase.PLAYING or not any(map(self.gone, range(self.rules.players))):
            return None
        return tuple(sorted(self.votes))

    def waiting_for(self) -> tuple[int, ...]:
        """The seats the game waits for now, in seat order: a seed
        commitment, the pending decision (not the stand-in's to play), an
        opening, a final reveal; none once it is over."""
        referee = self.referee
        phase = referee.phase
        if phase is Phase.SEEDING:
            return tuple(referee.awaited_seeds())
        if phase is Phase.REVEALING:
            return tuple(s for s in referee.awaited_reveals() if not self.stood_in(s))
        decision = referee.decision
        if decision is None or self.stood_in(decision.seat):
            return ()
        return (decision.seat,)

    def time_left(self, now: float) -> int | None:
        """Milliseconds before the server acts for the seats it waits for
        (None: no timer runs)."""
        return _millis(self._deadline, now)

    @property
    def grace(self) -> float:
        """How long a seated player may be away before the stand-in plays
        their seat: the server's `grace`, or the room's turn timer if longer
        (a game of days waits for its players as long as a decision may
        take; then the timer's rule applies)."""
        return max(self.config.grace, self.settings.turn_timer or 0)

    def next_deadline(self) -> float | None:
        times = [t + self.grace for t in self._away_since if t is not None]
        if self._deadline is not None:
            times.append(self._deadline)
        return min(times, default=None)

    # ------------------------------------------------------------ inputs

    def start(self, now: float) -> TableUpdate:
        """The game begins: `game_started` for everyone, the seeding timer."""
        self._deadline = now + self.config.reply_timer
        self._deadline_for = (Phase.SEEDING, 0)
        update = TableUpdate()
        for seat in (*range(self.rules.players), None):
            update.pushes.append(self._game_started(seat, now))
        self._autoplay(update, now)
        return update

    def receive(self, seat: int, message: m.Message, now: float) -> TableUpdate:
        """A game message from `seat`'s player (or its bot)."""
        update = TableUpdate()
        if self._left[seat]:
            update.error = RemoteProtocolError(NOT_PERMITTED, f"seat {seat} has left this game")
            return update
        try:
            ruling = self.referee.receive(seat, message)
        except Refusal as refusal:
            update.error = RemoteProtocolError(refusal.code, refusal.message)
            return update
        if ruling.failure is not None:
            update.error = RemoteProtocolError(BAD_OPENING, ruling.failure.reason)
        if isinstance(message, m.HandOver):
            self._handed_over(seat, message, ruling, update)
        self._after([ruling], update, now)
        if isinstance(message, m.HandOver) and self.phase is Phase.PLAYING:
            self._count_votes(update, now)  # the seat is no longer its player's
        return update

    def vote_abort(self, seat: int, game: bytes, now: float) -> TableUpdate:
        """`seat`'s player votes to end the game (`vote_abort`; see the module
        docstring). Refused (``wrong_state``) when no game is in play, it is
        another game, or no seat is gone; (``not_permitted``) from a seat
        that is not its own player's. A second vote changes nothing."""
        update = TableUpdate()
        if game != self.referee.game_id or self.phase is not Phase.PLAYING:
            what = "that game is not the one" if game != self.referee.game_id else "no game is"
            update.error = RemoteProtocolError(WRONG_STATE, f"{what} being played here")
        elif not self.at_the_table(seat):
            update.error = RemoteProtocolError(
                NOT_PERMITTED, f"seat {seat} is not played by its own player: it has no vote"
            )
        elif self.abort_votes() is None:
            update.error = RemoteProtocolError(
                WRONG_STATE,
                "no seat's player is gone: a game is ended by vote only when one is"
                " (it left, or has been away past the grace period)",
            )
        elif seat not in self.votes:
            self.votes = self.votes | {seat}
            update.seats_changed = True
            self._count_votes(update, now)
        return update

    def _count_votes(self, update: TableUpdate, now: float) -> None:
        """The votes, counted again after a change: only those of the seats at
        the table stand (none once no seat is gone); when every seat at the
        table has voted, play stops (`Referee.abort`)."""
        if not self.votes:
            return
        if self.abort_votes() is None:
            self.votes = frozenset()
            update.seats_changed = True
            return
        standing = frozenset(s for s in self.votes if self.at_the_table(s))
        if standing != self.votes:
            self.votes = standing
            update.seats_changed = True
        voters = [s for s in range(self.rules.players) if self.at_the_table(s)]
        if standing and all(s in standing for s in voters):
            self.votes = frozenset()
            update.seats_changed = True
            _as_they_are(update)
            self._after([self.referee.abort(tuple(sorted(standing)))], update, now, stopped=True)

    def leave(self, seat: int, now: float) -> TableUpdate:
        """`seat`'s player leaves the game: the stand-in plays it to the end.
        A seat left before the seeds are in cancels the game."""
        update = TableUpdate(seats_changed=True)
        if self._left[seat] or self.over:
            return update
        self._left[seat] = True
        self._away_since[seat] = None
        if self.phase is Phase.SEEDING:
            self.referee.time_out()
            update.cancelled = True
            self._deadline = None
            return update
        self.referee.mark_seat(seat, LEFT)
        self._after([self.referee.forfeit(seat, "left the game")], update, now)
        if self.phase is Phase.PLAYING:
            self._count_votes(update, now)
        return update

    def connection(self, seat: int, connected: bool, now: float) -> TableUpdate:
        """`seat`'s player lost its connection, or is back."""
        update = TableUpdate()
        if self._left[seat] or self.over:
            return update
        if not connected:
            if self._away_since[seat] is None and not self._stood_in[seat]:
                self._away_since[seat] = now
            return update
        self._away_since[seat] = None
        if self._stood_in[seat]:
            self._stood_in[seat] = False
            self.referee.mark_seat(seat, BACK)
            update.seats_changed = True
            if self.votes:  # the table changed: the votes are held again
                self.votes = frozenset()
        return update

    def tick(self, now: float) -> TableUpdate:
        """Time passed: the grace periods and the deadline that ran out."""
        update = TableUpdate()
        if self.over:
            return update
        gone = False
        for seat, since in enumerate(self._away_since):
            if since is not None and since + self.grace <= now:
                self._away_since[seat] = None
                self._stood_in[seat] = True
                self.referee.mark_seat(seat, STAND_IN)
                update.seats_changed = gone = True
        if gone and self.phase is Phase.PLAYING:
            self._count_votes(update, now)
            if self.over:
                return update
        # The stand-in answers first for a seat whose grace just ended.
        _as_they_are(update)
        rulings = self._autoplay(update, now)
        if not rulings and self._deadline is not None and self._deadline <= now:
            away = [
                since + self.grace
                for seat in self._reply_waiters()
                if (since := self._away_since[seat]) is not None
            ]
            if away:
                # A seat that owes what its client sends by itself, and is
                # disconnected: its player may come back within the grace
                # period and answer; then the stand-in answers for it.
                self._deadline = min(away)
            else:
                self._deadline = None
                rulings.append(self.referee.time_out())
                if rulings[-1].cancelled:
                    update.cancelled = True
                    return update
        self._after(rulings, update, now)
        return update

    def _reply_waiters(self) -> list[int]:
        """The seats the pending wait is for, when it is the reply timer's (a
        seed commitment, an opening, the final reveal)."""
        referee = self.referee
        if referee.phase is Phase.SEEDING:
            return referee.awaited_seeds()
        if referee.phase is Phase.REVEALING:
            return referee.awaited_reveals()
        decision = referee.decision
        return [decision.seat] if decision is not None and decision.kind == Step.OPEN else []

    # ------------------------------------------------------------ what follows an input

    def _handed_over(
        self, seat: int, message: m.HandOver, ruling: Ruling, update: TableUpdate
    ) -> None:
        """A hand-over: on success a bot plays the seat with its secrets; on a
        failure the seat is left to the stand-in. The player leaves either way."""
        update.seats_changed = True
        self._away_since[seat] = None
        if ruling.failure is not None:
            self._left[seat] = True
            self.referee.mark_seat(seat, LEFT)
            return
        server_seed = self.referee.server_seed
        assert server_seed is not None
        update.handed = (
            seat,
            HandedSeat(
                seed=message.seed,
                openings=(*self.referee.opened_by(seat), *message.openings),
                server_seed=server_seed,
                drawn=self.referee.drawn(seat),
                game=self.referee.game_id,
            ),
        )

    def _autoplay(self, update: TableUpdate, now: float) -> list[Ruling]:
        """The stand-in answers for every seat it plays, as long as one is due."""
        rulings: list[Ruling] = []
        referee = self.referee
        while True:
            if referee.phase is Phase.PLAYING:
                decision = referee.decision
                assert decision is not None
                if not self.stood_in(decision.seat):
                    break
                rulings.append(referee.stand_in(decision.seat))
            elif referee.phase is Phase.REVEALING:
                absent = [s for s in referee.awaited_reveals() if self.stood_in(s)]
                if not absent:
                    break
                rulings.append(referee.stand_in(absent[0]))
            else:
                break
        return rulings

    def _after(
        self, rulings: list[Ruling], update: TableUpdate, now: float, *, stopped: bool = False
    ) -> None:
        """Play the stand-in's turns, then push what all of it changed
        (`stopped`: play stopped by vote, which changes the decision only)."""
        was_seeding = (
            bool(rulings)
            and self._deadline_for is not None
            and (self._deadline_for[0] is Phase.SEEDING)
        )
        rulings = [*rulings, *self._autoplay(update, now)]
        merged = _merge(rulings)
        self._rearm(now)
        phase = self.phase
        if phase is Phase.CANCELLED:
            update.cancelled = True
            return
        started = was_seeding and phase is not Phase.SEEDING
        if started:
            for seat in (*range(self.rules.players), None):
                update.pushes.append(self._server_seed(seat))
        # Every change of the position or of the pending decision is pushed (a
        # Royal Decree's choice of a card changes only the decision).
        if (
            started
            or stopped
            or merged.events
            or merged.settled
            or self.referee.turn != self._pushed_turn
        ):
            self._pushed_turn = self.referee.turn
            shared = Once(partial(self._game_state_fields, merged, now))  # every seat's
            encoding = SharedEncoding()
            for seat in (*range(self.rules.players), None):
                update.pushes.append(_for_seat(shared, seat, encoding))
            referee = self.referee
            logged = (self._pushed_log, len(referee.log), self._pushed_events, len(referee.events))
            self._pushed_log, self._pushed_events = logged[1], logged[3]
            decided = self._pending_v2(now)
            v2 = Once(partial(self._game_update_fields, *logged, decided, snapshot=False))
            encoding = SharedEncoding()
            for seat in (*range(self.rules.players), None):
                update.pushes.append(_for_all(v2, seat, encoding))
        decision = self.referee.decision
        if decision is not None and decision.kind == Step.OPEN and decision.pid != self._asked_open:
            self._asked_open = decision.pid
            update.pushes.append(self._open_request(decision.seat, now))
        if phase in (Phase.REVEALING, Phase.DONE) and not self._asked_final:
            self._asked_final = True
            for seat in self.referee.awaited_reveals():
                update.pushes.append(self._final_reveal_request(seat, now))
        if phase is Phase.DONE and self.record is None:
            self.record = self.referee.record()
            update.record = self.record
            for seat in (*range(self.rules.players), None):
                update.pushes.append(self._game_end(seat))

    def _rearm(self, now: float) -> None:
        """The deadline of the pending wait, set when a new wait begins."""
        referee = self.referee
        phase = referee.phase
        wait = (phase, referee.turn)
        if wait == self._deadline_for:
            return
        self._deadline_for = wait
        if phase is Phase.PLAYING:
            decision = referee.decision
            assert decision is not None
            if decision.kind == Step.OPEN:
                self._deadline = now + self.config.reply_timer
            elif self.settings.turn_timer is not None:
                self._deadline = now + self.settings.turn_timer
            else:
                self._deadline = None
        elif phase is Phase.REVEALING:
            self._deadline = now + self.config.reply_timer
        else:
            self._deadline = None
        if self.grace > self.config.grace:
            # A game of days: a seat whose player is away has, for each wait
            # of its own, as long as the turn timer before the stand-in
            # plays it, not what is left of it since the player went away.
            for seat in self.waiting_for():
                if self._away_since[seat] is not None:
                    self._away_since[seat] = now

    # ------------------------------------------------------------ the pushes

    def refreshed(self, message: m.Message, seat: int | None, now: float) -> m.Message:
        """A push made earlier for `seat`, sent again now (to a client that
        resumed): its `time_left` counts from now, or is 0 if its wait is over."""
        referee = self.referee
        left = _millis(self._deadline, now)
        still = getattr(message, "game", None) == referee.game_id
        decision = referee.decision
        if isinstance(message, m.GameState | m.GameUpdate):
            pending = message.decision
            still = (
                still
                and pending is not None
                and pending.turn == referee.turn
                and decision is not None
            )
        elif isinstance(message, m.GameStarted):
            still = still and referee.phase is Phase.SEEDING
        elif isinstance(message, m.OpenRequest):
            still = (
                still
                and decision is not None
                and decision.kind == Step.OPEN
                and decision.pid == message.pid
            )
        elif isinstance(message, m.FinalRevealRequest):
            still = still and seat in referee.awaited_reveals()
        return with_time_left(message, left if still else 0)

    def snapshot(self, seat: int | None, now: float) -> list[TablePush]:
        """What a client needs to pick the game up (after a resume or `sync`)."""
        referee = self.referee
        pushes = [self._game_started(seat, now)]
        if referee.server_seed is None:
            return pushes
        pushes.append(self._server_seed(seat))
        pushes.append(_for_seat(Once(partial(self._game_state_fields, None, now)), seat))
        log, events = len(referee.log), len(referee.events)
        decided = self._pending_v2(now)
        v2 = Once(partial(self._game_update_fields, 0, log, 0, events, decided, snapshot=True))
        pushes.append(_for_all(v2, seat, SharedEncoding()))
        decision = referee.decision
        if (
            seat is not None
            and decision is not None
            and decision.kind == Step.OPEN
            and decision.seat == seat
        ):
            pushes.append(self._open_request(seat, now))
        if seat is not None and seat in referee.awaited_reveals():
            pushes.append(self._final_reveal_request(seat, now))
        if self.record is not None:
            pushes.append(self._game_end(seat))
        return pushes

    def _game_started(self, seat: int | None, now: float) -> TablePush:
        referee = self.referee
        seeding = referee.phase is Phase.SEEDING
        return TablePush(
            seat,
            m.GameStarted,
            dict(
                room=self.room,
                game=referee.game_id,
                settings=self.settings,
                first_player=referee.first_player,
                families=self.families,
                server_commitment=referee.server_seed_commitment,
                time_left=(_millis(self._deadline, now) or 0) if seeding else 0,
                seat=seat,
            ),
        )

    def _server_seed(self, seat: int | None) -> TablePush:
        referee = self.referee
        assert referee.server_seed is not None
        return TablePush(
            seat,
            m.ServerSeed,
            dict(
                game=referee.game_id,
                seed=referee.server_seed,
                commitments=tuple(c for c in referee.seed_commitments if c is not None),
                sealed_seed=None if seat is None else referee.sealed_seeds[seat],
            ),
        )

    def _pending(self, now: float) -> dict[str, Any] | None:
        """What every version says of the pending decision (None: none)."""
        referee = self.referee
        decision = referee.decision
        if decision is None:
            return None
        return dict(
            seat=decision.seat,
            kind=decision.kind,
            pid=decision.pid,
            turn=referee.turn,
            time_left=_millis(self._deadline, now),
        )

    def _pending_v1(self, now: float) -> m.PendingDecision | None:
        """The pending decision, as version 1's pushes give it (with options)."""
        fields, decision = self._pending(now), self.referee.decision
        if fields is None or decision is None:
            return None
        options = [action_to_data(a) for a in decision.options]
        return m.PendingDecision.trusted(**fields, options=options)

    def _pending_v2(self, now: float) -> m.Pending | None:
        """The pending decision, as version 2's pushes give it (no options)."""
        fields = self._pending(now)
        return None if fields is None else m.Pending.trusted(**fields)

    def _game_update_fields(
        self,
        first: int,
        last: int,
        first_event: int,
        last_event: int,
        decision: m.Pending | None,
        *,
        snapshot: bool,
    ) -> dict[str, Any]:
        """A `game_update`'s fields, the same for every seat and spectator:
        the log's entries `first` to `last`, and the digest of the events
        they made (the referee's events `first_event` to `last_event`)."""
        referee = self.referee
        return dict(
            game=referee.game_id,
            at=first,
            log=tuple(referee.log[first:last]),
            snapshot=snapshot,
            digest=referee.digest_of(first_event, last_event),
            decision=decision,
        )

    def _game_state_fields(self, ruling: Ruling | None, now: float) -> dict[str, Any]:
        """A `game_state`'s fields (`_for_seat` makes it a seat's): what
        `ruling` changed, or a snapshot (None). The referee knows no hidden
        card, so what any seat may see of the position is the public view:
        all of it is made once for every seat."""
        referee = self.referee
        if ruling is None:
            events: list[dict[str, Any]] = []
            placements = referee.placements
            openings = referee.openings
            settled = referee.settled
        else:
            events = [event_to_data(e) for e in ruling.events]
            placements = list(ruling.placements)
            openings = list(ruling.openings)
            settled = list(ruling.settled)
        return dict(
            game=referee.game_id,
            view=referee.view(None),
            events=events,
            commitments=tuple(
                m.PlacementCommitment.trusted(pid=c.pid, seat=c.seat, commitment=c.commitment)
                for c in placements
            ),
            openings=tuple(openings),
            snapshot=ruling is None,
            decision=self._pending_v1(now),
            settled=tuple(settled) or None,
            # A snapshot tells the game so far too: a client back after a
            # restart shows its log from the start (events are public).
            past=[event_to_data(e) for e in referee.events] if ruling is None else None,
        )

    def _open_request(self, seat: int, now: float) -> TablePush:
        decision = self.referee.decision
        assert decision is not None and decision.pid is not None
        return TablePush(
            seat,
            m.OpenRequest,
            dict(
                game=self.referee.game_id,
                pid=decision.pid,
                time_left=_millis(self._deadline, now) or 0,
            ),
        )

    def _final_reveal_request(self, seat: int, now: float) -> TablePush:
        return TablePush(
            seat,
            m.FinalRevealRequest,
            dict(
                game=self.referee.game_id,
                pids=tuple(self.referee.hidden(seat)),
                time_left=_millis(self._deadline, now) or 0,
            ),
        )

    def _game_end(self, seat: int | None) -> TablePush:
        record = self.record
        assert record is not None
        return TablePush(
            seat,
            m.GameEnd,
            dict(
                game=record.game_id,
                complete=record.results.complete,
                scores=record.results.scores,
                winners=record.results.winners,
                forfeits=tuple(v.seat for v in record.verdicts if not v.ok),
                verification=record.verdicts,
                seeds=tuple(
                    m.SeatSeed(seat=s, seed=seed)
                    for s, seed in enumerate(record.seeds)
                    if seed is not None
                ),
                openings=tuple(o for fo in record.final_openings if fo for o in fo),
                record_id=self.record_id,
            ),
        )


def _as_they_are(update: TableUpdate) -> None:
    """Make the fields of the pushes `update` holds now: the game is about to
    change again, and each push shows the change it tells of (they are made
    lazily, when delivered: `Once`)."""
    for push in update.pushes:
        push.made()


def _merge(rulings: list[Ruling]) -> Ruling:
    """Several rulings as one, in order."""
    if len(rulings) == 1:
        return rulings[0]
    return Ruling(
        events=tuple(e for r in rulings for e in r.events),
        placements=tuple(p for r in rulings for p in r.placements),
        openings=tuple(o for r in rulings for o in r.openings),
        settled=tuple(s for r in rulings for s in r.settled),
        forfeits=tuple(f for r in rulings for f in r.forfeits),
        failure=next((r.failure for r in rulings if r.failure is not None), None),
        cancelled=any(r.cancelled for r in rulings),
    )

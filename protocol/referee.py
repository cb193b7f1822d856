"""The referee of one game: an engine that knows no hidden card, plus commitments.

How this works
--------------
`Referee` is the sans-I/O core of a server's game: a plain synchronous
object, driven by the requests that the protocol's messages carry, in the
game's order:

    seeding    every seat `commit_seed`s; then `server_seed` may be published
    playing    `place` (a card back and a commitment), `reveal` and `open`
               (an opening: card and nonce), `act` for everything else
               (direction, keep, targets, moves); `skip_placement`,
               `time_out` and `forfeit` when a seat does not answer;
               `hand_over` when a player leaves its secrets to a server bot
    revealing  every seat sends `final_reveal` (its seed and the openings of
               its still-hidden cards) or is `forfeit`ed
    done       `record()` gives the game record

The server publishes `server_seed_commitment` when the game is created and
`server_seed` once every seat has committed to its own seed.

Each game message of the wire catalog (`messages`) maps onto one method,
with the same fields; `receive(seat, message)` does the mapping:

    seed_commit {commitment}             commit_seed(seat, commitment)
    direction {turn, direction}          act(seat, ChooseDirection(direction), turn=turn)
    place {turn, at, family, commitment} place(seat, at, family, commitment, turn=turn)
    keep {turn}                          act(seat, KEEP, turn=turn)
    reveal {turn, card, nonce}           reveal(seat, card, nonce, turn=turn)
    choose {turn, target}                act(seat, Target(target), turn=turn)
    move {turn, index}                   act(seat, MoveTo(index), turn=turn)
    open {pid, card, nonce}              open(seat, pid, card, nonce)
    final_reveal {seed, openings}        final_reveal(seat, seed, openings)
    hand_over {seed, openings}           hand_over(seat, seed, openings)

`turn` is the number of decisions settled so far (`Referee.turn`, sent as
`decision.turn`): every answer, skip, time-out default and settled opening
counts one; a reveal and its opening count one together.

Errors: a malformed or untimely request raises `RefereeError`, an action for
a settled decision `StaleTurn`, one from a seat that does not owe the
decision `NotYourTurn`, an illegal decision the engine's `IllegalAction`;
none of them changes anything. `error_code` gives the wire error code of
each.

An opening that fails its check is different: it is evidence that the seat
cheated or is broken. It is checked before anything changes, against the
commitments and against the engine (`verify.opening_refused`); if it fails,
the seat forfeits (recorded with the failed opening as evidence), the
server answers the decision in its place the safe way (a revealed card is
kept face down instead, an eliminated card is settled as after a time-out),
and play goes on. `SeatForfeited` is raised (`bad_opening` to the sender),
carrying the events of the server's answer: the caller must broadcast them
like any other change. A seat that forfeited may still act (its player came
back); its decisions are checked as usual. A final reveal or a hand-over
that fails its check is recorded the same way (play goes on, if it was
going): `final_reveal` returns the failed verdict, `receive` raises
`SeatForfeited` with no events.

Every decision the server makes for a seat (time-out defaults, the
stand-in's answers, skipped placements, settled openings) is logged with
`by_server`, and every forfeit with its place in the log (`log_index`), so
that `verify` can re-check it.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace
from typing import NoReturn

from oriflamme.engine import (
    BACKS,
    FAMILY_NAMES,
    FIRST,
    KEEP,
    LAST,
    REVEAL,
    Action,
    Card,
    ChooseDirection,
    Decision,
    Event,
    IllegalAction,
    Keep,
    MoveTo,
    Open,
    Place,
    Rules,
    Target,
    mask_event,
)
from oriflamme.engine.actions import At
from oriflamme.engine.events import Drew

from . import messages as m
from .commitments import (
    COMMITMENT_SIZE,
    GAME_ID_SIZE,
    NONCE_SIZE,
    SEED_SIZE,
    SERVER_SEAT,
    CommitmentLedger,
    Opening,
    OpeningError,
    new_game_id,
    new_seed,
    require_bytes,
    seed_commitment,
)
from .errors import BAD_OPENING, ILLEGAL_ACTION, INTERNAL, NOT_YOUR_TURN, STALE_TURN, WRONG_STATE
from .record import (
    FAILED,
    FORFEITED,
    OK,
    Forfeit,
    LogEntry,
    Record,
    Results,
    SeatInfo,
    SeatVerdict,
    Settings,
)
from .verify import check_seat, hidden_game, opening_refused, settled_card

SEEDING = "seeding"
PLAYING = "playing"
REVEALING = "revealing"
DONE = "done"

# The client messages a game's referee takes (`Referee.receive`); the other
# client messages are the connection's and the lobby's.
GAME_MESSAGES: tuple[type[m.Message], ...] = (
    m.SeedCommit,
    m.Direction,
    m.Place,
    m.Keep,
    m.Reveal,
    m.Choose,
    m.Move,
    m.Open,
    m.FinalReveal,
    m.HandOver,
)


class RefereeError(ValueError):
    """A request that is malformed or comes at the wrong time: the sender's
    fault. Nothing changed."""

    code = WRONG_STATE


class NotYourTurn(RefereeError):
    """An action from a seat that does not owe the pending decision."""

    code = NOT_YOUR_TURN


class StaleTurn(RefereeError):
    """An action for a decision that is already settled (its `turn` is over)."""

    code = STALE_TURN


class SeatForfeited(Exception):
    """`seat` failed a check and has forfeited (already recorded): the request
    is refused with `bad_opening`, yet something changed. `events` are those
    of the server's answer in the seat's place (a keep, a settled opening),
    to broadcast as after any decision; empty for a final reveal or a
    hand-over. `opening` is the failed opening, when there was one."""

    code = BAD_OPENING

    def __init__(
        self,
        seat: int,
        reason: str,
        events: Sequence[Event] = (),
        opening: Opening | None = None,
    ) -> None:
        super().__init__(f"seat {seat} forfeits: {reason}")
        self.seat = seat
        self.reason = reason
        self.events = list(events)
        self.opening = opening


def error_code(exc: BaseException) -> str:
    """The wire error code that refuses a request a `Referee` method raised `exc` for.
    (For `SeatForfeited`, also broadcast `exc.events`: play went on.)

    >>> error_code(StaleTurn("turn 3 is over")), error_code(IllegalAction("no"))
    ('stale_turn', 'illegal_action')
    """
    if isinstance(exc, RefereeError | SeatForfeited):
        return exc.code
    if isinstance(exc, IllegalAction):
        return ILLEGAL_ACTION
    return INTERNAL


def _bytes(name: str, value: object, size: int) -> bytes:
    try:
        return require_bytes(name, value, size)
    except ValueError as exc:
        raise RefereeError(str(exc)) from None


class Referee:
    """The referee of one game; see the module docstring.

    >>> from oriflamme.engine import Rules
    >>> ref = Referee(Rules(3))
    >>> ref.phase, len(ref.server_seed_commitment), ref.turn
    ('seeding', 32, 0)
    """

    def __init__(
        self,
        rules: Rules,
        *,
        first_player: int = 0,
        seats: Sequence[SeatInfo] | None = None,
        game_id: bytes | None = None,
        server_seed: bytes | None = None,
        rng: random.Random | None = None,
    ) -> None:
        n = rules.players
        self.rules = rules
        self.first_player = first_player
        self.game_id = (
            new_game_id() if game_id is None else _bytes("a game id", game_id, GAME_ID_SIZE)
        )
        self._server_seed = (
            new_seed() if server_seed is None else _bytes("the server seed", server_seed, SEED_SIZE)
        )
        self.server_seed_commitment = seed_commitment(self.game_id, SERVER_SEAT, self._server_seed)
        self.seats = list(seats) if seats is not None else [SeatInfo(f"seat {i}") for i in range(n)]
        if len(self.seats) != n:
            raise ValueError(f"{n} seats are needed, not {len(self.seats)}")
        self.game = hidden_game(rules, first_player)
        self.ledger = CommitmentLedger(self.game_id)
        self.seed_commitments: list[bytes | None] = [None] * n
        self.seeds: list[bytes | None] = [None] * n
        self.final_openings: list[tuple[Opening, ...] | None] = [None] * n
        self.log: list[LogEntry] = []
        self.events: list[Event] = []  # public (masked) events, in order
        self.forfeits: list[Forfeit] = []
        self.failures: dict[int, str] = {}
        self.phase = SEEDING
        # The time-out defaults' random choices (a direction, a target) need no secrecy.
        self.rng = rng if rng is not None else random.Random()
        self._turn = 0
        self._drawn = [0] * n
        self._answered: set[int] = set()

    # ------------------------------------------------------------ queries

    @property
    def server_seed(self) -> bytes:
        """The server seed, public once every seat has committed to its own."""
        if self.phase == SEEDING:
            raise RefereeError("the server seed is published once every seat has committed")
        return self._server_seed

    @property
    def decision(self) -> Decision | None:
        """The pending engine decision while playing, else None."""
        return self.game.decision if self.phase == PLAYING else None

    @property
    def turn(self) -> int:
        """How many decisions are settled: the pending decision's `turn`
        (`decision.turn` on the wire), which an action must echo."""
        return self._turn

    @property
    def next_pid(self) -> int:
        """The placement id the next placed card gets (part of its commitment)."""
        return self.game.next_pid

    def drawn(self, seat: int) -> int:
        """How many cards `seat` has drawn from its draw pile (2-player variant)."""
        return self._drawn[self._seat(seat)]

    def openings(self, seat: int) -> list[Opening]:
        """The openings `seat` has made so far, in order."""
        return self.ledger.openings(seat)

    def hidden(self, seat: int) -> list[int]:
        """`seat`'s placed cards that nobody has opened yet (`final_reveal_request.pids`)."""
        return self.ledger.hidden(seat)

    def awaited(self) -> list[int]:
        """The seats whose final reveal is still awaited (`final_reveal_request`),
        in seat order; empty before the revealing phase."""
        if self.phase != REVEALING:
            return []
        return [seat for seat in range(self.rules.players) if seat not in self._answered]

    def verdict(self, seat: int) -> SeatVerdict:
        if seat in self.failures:
            return SeatVerdict(seat, FAILED, self.failures[seat])
        for f in self.forfeits:
            if f.seat == seat:
                return SeatVerdict(seat, FORFEITED, f.reason)
        return SeatVerdict(seat, OK)

    # ------------------------------------------------------------ seeding

    def _seat(self, seat: object) -> int:
        if (
            isinstance(seat, bool)
            or not isinstance(seat, int)
            or not 0 <= seat < self.rules.players
        ):
            raise RefereeError(f"no seat {seat!r}")
        return seat

    def commit_seed(self, seat: int, commitment: bytes) -> None:
        """`seat` commits to its client seed (message `seed_commit`)."""
        seat = self._seat(seat)
        if self.phase != SEEDING:
            raise RefereeError("seed commitments are over")
        if self.seed_commitments[seat] is not None:
            raise RefereeError(f"seat {seat} has already committed to its seed")
        self.seed_commitments[seat] = _bytes("a seed commitment", commitment, COMMITMENT_SIZE)
        if all(c is not None for c in self.seed_commitments):
            self.phase = PLAYING

    # ------------------------------------------------------------ playing

    def _playing(self, seat: object) -> int:
        seat = self._seat(seat)
        if self.phase != PLAYING:
            raise RefereeError(f"no decision is due: the game is {self.phase}")
        return seat

    def _due(self, seat: object, turn: int | None) -> tuple[int, Decision]:
        """The pending decision, which `seat` must owe; `turn`, when given,
        must be the pending decision's. The checks of every decision."""
        seat = self._playing(seat)
        decision = self.game.decision
        assert decision is not None
        if turn is not None and turn != self._turn:
            raise StaleTurn(f"turn {turn!r} is not the pending decision's (turn {self._turn})")
        if decision.seat != seat:
            raise NotYourTurn(
                f"seat {decision.seat} must decide ({decision.kind}), not seat {seat}"
            )
        return seat, decision

    def place(
        self,
        seat: int,
        at: object,
        family: int | str,
        commitment: bytes,
        *,
        turn: int | None = None,
    ) -> list[Event]:
        """`seat` places a `family` card (a number, or a name as on the wire)
        `at` ("first", "last" or a pid to cover), committed to by `commitment`
        for placement `next_pid`."""
        seat, _ = self._due(seat, turn)
        if isinstance(family, str) and family in FAMILY_NAMES:
            family = FAMILY_NAMES.index(family)
        if (
            isinstance(family, bool)
            or not isinstance(family, int)
            or not 0 <= family < len(FAMILY_NAMES)
        ):
            raise RefereeError(f"a family is one of {FAMILY_NAMES} or 0-4, not {family!r}")
        commitment = _bytes("a card commitment", commitment, COMMITMENT_SIZE)
        where: At
        if at == FIRST:
            where = FIRST
        elif at == LAST:
            where = LAST
        elif isinstance(at, int) and not isinstance(at, bool):
            where = at
        else:
            raise RefereeError(f"place at 'first', 'last' or a pid, not {at!r}")
        action = Place(BACKS[family], where)
        self.game.check(action, seat)
        pid = self.game.next_pid
        events = self.game.apply(action, seat)
        self.ledger.commit(seat, pid, family, commitment, self._drawn[seat])
        self.log.append(LogEntry(seat, action, pid, commitment))
        return self._settled(events)

    def act(self, seat: int, action: Action, *, turn: int | None = None) -> list[Event]:
        """A decision that needs no secret: direction, keep, target, move."""
        seat, _ = self._due(seat, turn)
        if type(action) not in (ChooseDirection, Keep, Target, MoveTo):
            raise RefereeError(
                f"{type(action).__name__} goes through place, reveal or open, with its proof"
            )
        events = self.game.apply(action, seat)
        self.log.append(LogEntry(seat, action))
        return self._settled(events)

    def _decide_for(self, seat: int, action: Action) -> list[Event]:
        """The server's own decision for `seat` (logged `by_server`)."""
        events = self.game.apply(action, seat)
        self.log.append(LogEntry(seat, action, by_server=True))
        return self._settled(events)

    def reveal(
        self, seat: int, card: Card, nonce: bytes, *, turn: int | None = None
    ) -> list[Event]:
        """`seat` reveals its face-down acting card, opening it with (card, nonce).
        An opening that fails its check raises `SeatForfeited`, after the
        server kept the card face down in the seat's place."""
        seat, decision = self._due(seat, turn)
        self.game.check(REVEAL, seat)
        assert decision.pid is not None
        opening = self._opening(decision.pid, card, nonce)
        self._vet_opening(seat, opening)
        self.log.append(LogEntry(seat, REVEAL))
        events = self._after(self.game.apply(REVEAL, seat))
        return events + self._settled(self._apply_opening(seat, opening))

    def open(self, seat: int, pid: int, card: Card, nonce: bytes) -> list[Event]:
        """`seat` opens its card `pid` when the game asks (after an elimination).
        An opening that fails its check raises `SeatForfeited`, after the
        server settled the card as for a time-out (see `forfeit`)."""
        seat = self._playing(seat)
        decision = self.game.decision
        assert decision is not None
        if decision.kind != "open" or decision.seat != seat:
            raise RefereeError(f"no opening is asked of seat {seat} now")
        if pid != decision.pid:
            raise RefereeError(f"the opening asked for is card {decision.pid}, not {pid!r}")
        opening = self._opening(pid, card, nonce)
        self._vet_opening(seat, opening)
        return self._settled(self._apply_opening(seat, opening))

    def skip_placement(self, seat: int, *, turn: int | None = None) -> list[Event]:
        """Skip `seat`'s pending placement: it places nothing this round and
        keeps its cards (its time ran out, or the stand-in plays it; the
        server cannot place a card it does not know). `IllegalAction` unless
        the pending decision is a placement."""
        seat, _ = self._due(seat, turn)
        events = self.game.skip_placement()
        self.log.append(LogEntry.skip(seat))  # `by_server`, as every skip
        return self._settled(events)

    def time_out(self, *, turn: int | None = None) -> list[Event]:
        """The safe default for the pending decision, whose time ran out
        (docs/PROTOCOL.md, Timers); the stand-in of an abandoned seat plays
        the same. A direction, a target or a move is chosen at random
        (`rng`), a placement is skipped, a face-down card kept, and a
        demanded opening forfeited (the card is settled, see `forfeit`);
        each is logged `by_server`. In the revealing phase, every seat that
        has not sent its final reveal forfeits. `turn`, when given, must
        still be pending: a timer that fires after its decision was answered
        raises `StaleTurn`."""
        if self.phase == SEEDING:
            raise RefereeError("a seed commitment is missing: the game is cancelled, not played")
        if self.phase == REVEALING:
            for seat in self.awaited():
                self.forfeit(seat, "did not send its final reveal in time")
            return []
        if self.phase != PLAYING:
            raise RefereeError(f"no decision is due: the game is {self.phase}")
        decision = self.game.decision
        assert decision is not None
        seat = decision.seat
        if turn is not None and turn != self._turn:
            raise StaleTurn(f"turn {turn!r} is settled already (the pending one is {self._turn})")
        if decision.kind == "place":
            return self.skip_placement(seat)
        if decision.kind == "reveal":
            return self._decide_for(seat, KEEP)
        if decision.kind == "open":
            return self.forfeit(seat, f"did not open card {decision.pid} in time")
        return self._decide_for(seat, self.rng.choice(decision.options))

    def _opening(self, pid: int, card: object, nonce: object) -> Opening:
        if not isinstance(card, Card) or card.kind is None:
            raise RefereeError(f"an opening names a card, not {card!r}")
        return Opening(pid, card, _bytes("a nonce", nonce, NONCE_SIZE))

    def _vet_opening(self, seat: int, opening: Opening) -> None:
        """Check `opening` for the pending `reveal` or `open` of `seat`, changing
        nothing if it holds. If not, `seat` forfeits with the opening as
        evidence, the server answers in its place and `SeatForfeited` is raised.

        The commitments decide first; then the engine, which refuses only an
        identity it has seen elsewhere. With openings that passed the ledger,
        that is an identity a settled card took: the seat forfeited before
        and came back, and is not at fault. (Were it not so, the seat would
        be at fault all the same: the engine cannot be wrong about its own
        cards.)"""
        try:
            self.ledger.check(seat, opening.pid, opening.card, opening.nonce)
        except OpeningError as exc:
            self.failures.setdefault(seat, exc.reason)
            self._forfeit_opening(seat, exc.reason, opening)
        refused = opening_refused(self.game, opening.card)
        if refused is not None:
            if not self._forfeited(seat):
                self.failures.setdefault(seat, refused)
            self._forfeit_opening(seat, refused, opening)

    def _forfeit_opening(self, seat: int, reason: str, opening: Opening) -> NoReturn:
        """`seat` forfeits for a failed `opening`, and the server answers the
        pending decision in its place: a reveal is a keep, an eliminated
        card is settled. Play goes on; raises `SeatForfeited` with the events."""
        decision = self.game.decision
        assert decision is not None and decision.seat == seat
        self.forfeits.append(Forfeit(seat, reason, len(self.log), opening))
        events = self._decide_for(seat, KEEP) if decision.kind == "reveal" else self._settle(seat)
        raise SeatForfeited(seat, reason, events, opening)

    def _apply_opening(self, seat: int, opening: Opening) -> list[Event]:
        """Apply an opening that `_vet_opening` passed."""
        action = Open(opening.card)
        events = self.game.apply(action, seat)
        self.ledger.open(seat, opening.pid, opening.card, opening.nonce)
        self.log.append(LogEntry(seat, action, opening.pid, nonce=opening.nonce))
        return events

    def _settle(self, seat: int) -> list[Event]:
        """Settle the eliminated card that `seat` did not open (see `forfeit`)."""
        decision = self.game.decision
        assert decision is not None and decision.kind == "open" and decision.pid is not None
        # A reveal and its opening are applied together, so an opening the
        # game waits for between two calls is always an eliminated card's.
        assert self.game.open_for == "eliminate"
        action = Open(settled_card(decision.options))
        self.log.append(LogEntry(seat, action, decision.pid, settled=True, by_server=True))
        return self._settled(self.game.apply(action, seat))

    def _after(self, events: list[Event]) -> list[Event]:
        for event in events:
            if type(event) is Drew:
                self._drawn[event.seat] += len(event.cards)
        self.events.extend(mask_event(e, None) for e in events)
        if self.game.over:
            self.phase = REVEALING
        return events

    def _settled(self, events: list[Event]) -> list[Event]:
        """`_after` for the events that settle the pending decision: the next turn is due."""
        self._turn += 1
        return self._after(events)

    # ------------------------------------------------------------ forfeits and the end

    def _forfeited(self, seat: int) -> bool:
        return any(f.seat == seat for f in self.forfeits)

    def forfeit(self, seat: int, reason: str) -> list[Event]:
        """`seat` forfeits (left, timed out, did not open in time...).

        If the game waits for this seat to open an eliminated card, the card
        is *settled* so that play goes on: the engine takes the first identity
        still possible, in kind order, that is not an Ambush (`settled_card`),
        and the log marks the entry as settled (and `by_server`). Any other
        decision of the seat is still pending: the caller plays it as the
        stand-in would (`time_out`). In the revealing phase, the seat is no
        longer waited for. Returns the events of a settlement.
        """
        seat = self._seat(seat)
        if self.phase == DONE:
            raise RefereeError("the game is over and recorded")
        if self.phase == SEEDING:
            raise RefereeError("a game that never started has nothing to forfeit: cancel it")
        if not self._forfeited(seat):
            self.forfeits.append(Forfeit(seat, reason, len(self.log)))
        if self.phase == REVEALING:
            self._answered.add(seat)
            self._maybe_done()
            return []
        decision = self.game.decision
        if decision is None or decision.seat != seat or decision.kind != "open":
            return []
        return self._settle(seat)

    def _check_secrets(
        self, seat: int, seed: object, openings: Sequence[Opening]
    ) -> tuple[bytes, tuple[Opening, ...], str | None]:
        """`seat`'s seed and the openings of its hidden cards, checked as at the
        end of the game (`verify.check_seat`): (seed, openings, failure or None)."""
        seed = _bytes("a seed", seed, SEED_SIZE)
        checked = tuple(self._opening(o.pid, o.card, o.nonce) for o in openings)
        commitment = self.seed_commitments[seat]
        assert commitment is not None
        reason = check_seat(
            self.rules,
            self.game_id,
            seat,
            seed_commitment=commitment,
            seed=seed,
            server_seed=self._server_seed,
            placed=self.ledger.placements(seat),
            openings=[*self.ledger.openings(seat), *checked],
        )
        return seed, checked, reason

    def hand_over(self, seat: int, seed: bytes, openings: Sequence[Opening]) -> None:
        """`seat`'s player leaves and lets a server bot finish the game with its
        secrets (message `hand_over`): its client seed and the openings of its
        still-hidden cards, checked as at the end of the game. If they hold, the
        seat is marked `handed_to_bot`, and the caller gives the secrets to its
        bot (`localgame.SeatSecrets.resume`). If not, they are kept as the
        seat's final reveal (so the record shows why), the seat fails and
        forfeits, and `SeatForfeited` is raised; play goes on with the seat's
        decisions left to the caller (`time_out`)."""
        seat = self._seat(seat)
        if self.phase != PLAYING:
            raise RefereeError(f"a hand-over is for a game being played; the game is {self.phase}")
        if self.seats[seat].handed_to_bot:
            raise RefereeError(f"seat {seat} is already handed over to a bot")
        seed, checked, reason = self._check_secrets(seat, seed, openings)
        if reason is None:
            self.mark_seat(seat, handed_to_bot=True)
            return
        self.seeds[seat] = seed
        self.final_openings[seat] = checked
        self._answered.add(seat)
        self.failures.setdefault(seat, reason)
        self.forfeits.append(Forfeit(seat, reason, len(self.log)))
        raise SeatForfeited(seat, reason)

    def final_reveal(self, seat: int, seed: bytes, openings: Sequence[Opening]) -> SeatVerdict:
        """`seat`'s seed and the openings of its still-hidden cards. Returns the
        seat's verdict; a failed check also records a forfeit."""
        self._final_reveal(seat, seed, openings)
        return self.verdict(seat)

    def _final_reveal(self, seat: object, seed: bytes, openings: Sequence[Opening]) -> str | None:
        """`final_reveal`, returning why this reveal failed its check (or None)."""
        seat = self._seat(seat)
        if self.phase != REVEALING:
            raise RefereeError(f"final reveals come at the end, the game is {self.phase}")
        if seat in self._answered:
            raise RefereeError(f"seat {seat} has already sent its final reveal or forfeited")
        seed, checked, reason = self._check_secrets(seat, seed, openings)
        self.seeds[seat] = seed
        self.final_openings[seat] = checked
        self._answered.add(seat)
        if reason is not None:
            self.failures.setdefault(seat, reason)
            self.forfeits.append(Forfeit(seat, reason, len(self.log)))
        self._maybe_done()
        return reason

    # ------------------------------------------------------------ wire messages

    def receive(self, seat: int, message: m.Message) -> list[Event]:
        """Apply a game message (one of `GAME_MESSAGES`) sent by `seat`; the
        events it caused. Raises as the method it maps onto (see the module
        docstring), and `SeatForfeited` for a final reveal that fails its
        check. After `SeatForfeited` for a `reveal` or an `open`, play went
        on: answer `bad_opening` (`error_code`) and broadcast its `events`.

        >>> from oriflamme.engine import Rules
        >>> ref = Referee(Rules(3))
        >>> for seat in range(3):
        ...     ref.receive(seat, m.SeedCommit(commitment=bytes(32)))
        []
        []
        []
        >>> events = ref.receive(0, m.Direction(turn=0, direction="left-to-right"))
        >>> ref.turn, ref.decision.kind
        (1, 'place')
        >>> ref.receive(0, m.Keep(turn=0))
        Traceback (most recent call last):
        ...
        oriflamme.protocol.referee.StaleTurn: turn 0 is not the pending decision's (turn 1)
        """
        if isinstance(message, m.SeedCommit):
            self.commit_seed(seat, message.commitment)
            return []
        if isinstance(message, m.Direction):
            return self.act(seat, ChooseDirection(message.direction), turn=message.turn)
        if isinstance(message, m.Place):
            return self.place(
                seat, message.at, message.family, message.commitment, turn=message.turn
            )
        if isinstance(message, m.Keep):
            return self.act(seat, KEEP, turn=message.turn)
        if isinstance(message, m.Reveal):
            return self.reveal(seat, message.card, message.nonce, turn=message.turn)
        if isinstance(message, m.Choose):
            return self.act(seat, Target(message.target), turn=message.turn)
        if isinstance(message, m.Move):
            return self.act(seat, MoveTo(message.index), turn=message.turn)
        if isinstance(message, m.Open):
            return self.open(seat, message.pid, message.card, message.nonce)
        if isinstance(message, m.FinalReveal):
            reason = self._final_reveal(seat, message.seed, _openings(message.openings))
            if reason is not None:
                raise SeatForfeited(self._seat(seat), reason)
            return []
        if isinstance(message, m.HandOver):
            self.hand_over(seat, message.seed, _openings(message.openings))
            return []
        raise TypeError(f"{message.TYPE!r} is not a game message")

    def _maybe_done(self) -> None:
        if len(self._answered) == self.rules.players:
            self.phase = DONE

    def mark_seat(
        self,
        seat: int,
        *,
        left: bool | None = None,
        stand_in: bool | None = None,
        handed_to_bot: bool | None = None,
    ) -> None:
        """Set a seat's flags for the record (None: leave as it is)."""
        seat = self._seat(seat)
        info = self.seats[seat]
        self.seats[seat] = replace(
            info,
            left=info.left if left is None else left,
            stand_in=info.stand_in if stand_in is None else stand_in,
            handed_to_bot=info.handed_to_bot if handed_to_bot is None else handed_to_bot,
        )

    def record(self) -> Record:
        """The game record (once every seat has revealed or forfeited)."""
        if self.phase != DONE:
            raise RefereeError(f"the record is made at the end, the game is {self.phase}")
        g = self.game
        rules = self.rules
        return Record(
            game_id=self.game_id,
            settings=Settings(
                rules.players, rules.variant, rules.edition, rules.families, self.first_player
            ),
            seats=tuple(self.seats),
            server_seed_commitment=self.server_seed_commitment,
            server_seed=self._server_seed,
            seed_commitments=tuple(c for c in self.seed_commitments if c is not None),
            seeds=tuple(self.seeds),
            log=tuple(self.log),
            final_openings=tuple(self.final_openings),
            events=tuple(self.events),
            results=Results(g.over, tuple(g.scores), tuple(g.winners) if g.over else ()),
            forfeits=tuple(self.forfeits),
            verdicts=tuple(self.verdict(s) for s in range(rules.players)),
        )


def _openings(openings: Sequence[m.CardOpening]) -> list[Opening]:
    return [Opening(o.pid, o.card, o.nonce) for o in openings]

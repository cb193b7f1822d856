"""The referee of one game: an engine that knows no hidden card, plus commitments.

How this works
--------------
`Referee` is a plain synchronous object. Its inputs are the game messages of
the protocol, each from a seat (`receive`), and what the server decides
when a seat does not answer (`time_out`, `stand_in`, `forfeit`). Each input
either is refused, raising `Refusal` with the wire error code and changing
nothing, or returns a `Ruling`: what changed (engine events, the placement
commitments and openings they involve, settled cards, forfeits). A failed
opening is not a refusal: it changes things (the seat forfeits, the server
answers in its place, play goes on), so it is a `Ruling` too, whose
`failure` says why; the sender is told ``bad_opening``.

The game goes through these phases:

    seeding    each seat sends `seed_commit`; a time-out cancels the game
    playing    decisions: `direction`, `place` (a commitment), `keep`,
               `reveal` (an opening), `choose`, `move`, and `open` (an
               opening) when a face-down card is eliminated
    revealing  each seat sends `final_reveal` (its seed and the openings of
               its hidden cards), or forfeits at the time-out; a seat whose
               `hand_over` failed has sent its own already (with every seat
               so, the game goes straight on to done). Play ends here after
               round 6, or earlier when the players end the game by vote
               (`abort`): the record then says it is not complete
    done       `record()` gives the game record; or `cancelled`

The referee never learns a face-down card before its owner opens it: its
engine plays on card backs (`verify.hidden_game`), and the commitments are
kept in a `CommitmentLedger`. `turn` counts the decisions settled so far
(each answer, time-out, skipped placement, settled opening; a reveal and its
opening count one together): the pending decision's `turn`, which an action
must echo.

The game's log: every input taken is noted, in order, in `inputs` (a
message received, a time-out, the stand-in, a forfeit, the end by vote, a
seat marked; each the msgpack of its kind and arguments), and each choice the server made at random in `choices` (the
index among the options). `rebuild` gives them to a new referee, which
comes to the same state: that is how a server started again gets its games
back (`server.core.facts`), rather than from a pickle of this object. A
refused input is not noted (it changed nothing).

Every decision the server makes for a seat is logged with `by_server`, and
every forfeit with its place in the log, so that `oriflamme verify` can
re-check them. The seats' verdicts in the record come from what the
referee checked as the game went on (the first failed opening of each
seat, the end-of-game check of its secrets, its first forfeit), through
`verify.seat_verdicts`, the verifier's own last step: the referee needs
no replay of the game at its end. The whole record is verified on the
store's side, off the task that runs the rooms (`server.records`), and a
record the verifier finds otherwise is logged as a fault of ours.

>>> from oriflamme.engine import Rules
>>> from oriflamme.protocol import messages as m
>>> referee = Referee(Rules(3))
>>> for seat in range(3):
...     _ = referee.receive(seat, m.SeedCommit(commitment=bytes(32)))
>>> str(referee.phase), referee.turn, str(referee.decision.kind)
('playing', 0, 'direction')
>>> ruling = referee.receive(0, m.Direction(turn=0, direction="left-to-right"))
>>> [type(e).__name__ for e in ruling.events]
['DirectionChosen', 'RoundStarted']
>>> referee.receive(0, m.KeepCard(turn=0))
Traceback (most recent call last):
...
oriflamme.server.core.referee.Refusal: stale_turn: turn 0 is over (the pending decision is turn 1)
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import msgpack

from oriflamme.engine import (
    BACKS,
    FAMILY_NAMES,
    KEEP,
    REVEAL,
    Action,
    ChooseDirection,
    Decision,
    Event,
    IllegalAction,
    MoveTo,
    Open,
    Place,
    Rules,
    Step,
    Target,
    view,
)
from oriflamme.engine.actions import At
from oriflamme.engine.events import Drew
from oriflamme.protocol import identity, signatures
from oriflamme.protocol import messages as m
from oriflamme.protocol.commitments import (
    SERVER_SEAT,
    CommitmentLedger,
    Committed,
    Opening,
    OpeningError,
    seed_commitment,
)
from oriflamme.protocol.errors import (
    BAD_DECISION_SIGNATURE,
    ILLEGAL_ACTION,
    INVALID_FIELD,
    NOT_YOUR_TURN,
    STALE_TURN,
    WRONG_STATE,
)
from oriflamme.protocol.record import (
    BACK,
    FINAL_REVEAL,
    HAND_OVER,
    HANDED_TO_BOT,
    LEFT,
    STAND_IN,
    FinalSignature,
    Forfeit,
    GameSettings,
    Handed,
    LogEntry,
    Record,
    Results,
    SeatChange,
    SeatRecord,
)
from oriflamme.protocol.updates import events_digest
from oriflamme.protocol.verify import (
    check_seat,
    hidden_game,
    opening_refused,
    seat_verdicts,
    settled_card,
)

from .entropy import Entropy, SystemEntropy

# The inputs of a game's log (`Referee.inputs`), as the data directory's
# facts keep them (docs/STORAGE.md): each a list, its kind then its arguments.
RECEIVE = "receive"  # [seat, the message's data]
TIME_OUT = "time_out"  # [turn or None]
STAND_IN_INPUT = "stand_in"  # [seat, turn or None]
FORFEIT = "forfeit"  # [seat, reason]
ABORT = "abort"  # [[seats that voted]]
MARK_SEAT = "mark_seat"  # [seat, change]
INPUT_KINDS = (RECEIVE, TIME_OUT, STAND_IN_INPUT, FORFEIT, ABORT, MARK_SEAT)


class RebuildFailed(Exception):
    """A game's log could not be replayed by this version (`Referee.rebuild`)."""


class Phase(enum.StrEnum):
    SEEDING = "seeding"
    PLAYING = "playing"
    REVEALING = "revealing"
    DONE = "done"
    CANCELLED = "cancelled"


class Refusal(Exception):
    """A request refused with the wire error `code`; nothing changed."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


@dataclass(frozen=True, slots=True)
class Ruling:
    """What one input changed, in order.

    `events` are the engine's (the referee's engine knows no hidden card, so
    they show only card backs for what is hidden); `placements` the
    commitments of the cards placed among them; `openings` the openings made
    public (revealed and eliminated cards, and the final reveals); `settled`
    the cards whose identity the server settled; `forfeits` the forfeits
    recorded. `failure` is set when the input itself failed its check (the
    sender is told ``bad_opening``): it is among `forfeits`. `cancelled`:
    a seed commitment was missing in time and the game will not be played.
    """

    events: tuple[Event, ...] = ()
    placements: tuple[Committed, ...] = ()
    openings: tuple[Opening, ...] = ()
    settled: tuple[int, ...] = ()
    forfeits: tuple[Forfeit, ...] = ()
    failure: Forfeit | None = None
    cancelled: bool = False


# What the seats' own decisions map onto: the message's fields give the
# engine action (placements, reveals and openings carry their proof and have
# their own handlers).
_DECISION_ACTIONS: dict[type[m.Message], Callable[[Any], Action]] = {
    m.Direction: lambda msg: ChooseDirection(msg.direction),
    m.KeepCard: lambda msg: KEEP,
    m.Choose: lambda msg: Target(msg.target),
    m.Move: lambda msg: MoveTo(msg.index),
}


class Referee:
    """The referee of one game; see the module docstring."""

    # The seats that voted to end the game, once it was ended by vote (a
    # class default: a referee saved before votes existed was not).
    votes: tuple[int, ...] | None = None
    # How far the journal has digested the game (`take_digest`): the events
    # and the turn then (class defaults: a referee saved before digests
    # were kept has had none digested).
    digested: int = 0
    digested_turn: int = 0
    # The game's log, what `rebuild` replays (see "The game's log" in the
    # module docstring); the seats as the game began; where in the server's
    # keyed stream the server seed was drawn from (None: not keyed). A
    # referee an earlier version pickled has none (`__setstate__`).
    inputs: list[bytes]
    choices: list[int]
    first_seats: tuple[SeatRecord, ...] = ()
    seed_at: int | None = None

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Unpickling an earlier version's referee (a data directory being
        converted): it kept no log, and notes its inputs from here on, in vain
        (it has no `first_seats`: the conversion takes up no such game)."""
        self.__dict__.update(state)
        self.__dict__.setdefault("inputs", [])
        self.__dict__.setdefault("choices", [])
        self.__dict__.setdefault("_failures", {})
        self.__dict__.setdefault("_secrets_held", set())

    _replaying: list[int] | None = None

    def __init__(
        self,
        rules: Rules,
        *,
        first_player: int = 0,
        seats: Sequence[SeatRecord] | None = None,
        turn_timer: int | None = None,
        entropy: Entropy | None = None,
        keys: Sequence[bytes | None] | None = None,
    ) -> None:
        n = rules.players
        if not 0 <= first_player < n:
            raise ValueError(f"no seat {first_player} at a {n}-player table")
        self.rules = rules
        self.first_player = first_player
        self.turn_timer = turn_timer
        self._entropy = entropy if entropy is not None else SystemEntropy()
        self.game_id = self._entropy.token_bytes(16)
        self.seed_at = getattr(self._entropy, "position", None)
        self._server_seed = self._entropy.token_bytes(32)
        self.server_seed_commitment = seed_commitment(self.game_id, SERVER_SEAT, self._server_seed)
        self.seats = (
            list(seats) if seats is not None else [SeatRecord(f"seat {i}") for i in range(n)]
        )
        if len(self.seats) != n:
            raise ValueError(f"{n} seats are needed, not {len(self.seats)}")
        self.first_seats = tuple(self.seats)
        # Each seat's public key (None: the seat has none). A seat with a key
        # signs its decisions (`protocol.signatures`): `receive` refuses one
        # without its signature, and the signatures go into the record.
        self.keys = tuple(keys) if keys is not None else (None,) * n
        if len(self.keys) != n:
            raise ValueError(f"{n} keys (or None) are needed, not {len(self.keys)}")
        self.seed_signatures: list[bytes | None] = [None] * n
        # Each seat's seed as it sealed it with its key, to give back to it
        # (docs/PROTOCOL.md, "Sealed seeds"; None: it sent none).
        self.sealed_seeds: list[bytes | None] = [None] * n
        self.final_signatures: list[FinalSignature | None] = [None] * n
        self.inputs = []
        self.choices = []
        self._game = hidden_game(rules, first_player)
        self._ledger = CommitmentLedger(self.game_id)
        self.seed_commitments: list[bytes | None] = [None] * n
        self.seeds: list[bytes | None] = [None] * n
        self.final_openings: list[tuple[Opening, ...] | None] = [None] * n
        self.phase = Phase.SEEDING
        self._turn = 0
        self._drawn = [0] * n
        self._answered: set[int] = set()
        # Everything so far, in order; a `Ruling` is what one input added.
        self.log: list[LogEntry] = []
        self.events: list[Event] = []
        self.placements: list[Committed] = []
        self.openings: list[Opening] = []
        self.settled: list[int] = []
        self.forfeits: list[Forfeit] = []
        # The first failed opening of each seat that sent one: the reason its
        # verdict gives (as `verify_record` finds it on the record).
        self._failures: dict[int, str] = {}
        # The seats whose final reveal passed the end-of-game check (its
        # verdict needs no second one).
        self._secrets_held: set[int] = set()
        self.seat_changes: list[SeatChange] = []

    @classmethod
    def rebuild(
        cls,
        rules: Rules,
        *,
        first_player: int,
        seats: Sequence[SeatRecord],
        turn_timer: int | None,
        game_id: bytes,
        server_seed: bytes,
        inputs: Sequence[bytes | Sequence[Any]],
        choices: Sequence[int],
        entropy: Entropy,
        keys: Sequence[bytes | None] | None = None,
    ) -> Referee:
        """The referee of a game as its log left it: a new one given `inputs`
        again, in order, making the time-out `choices` noted (see "The game's
        log"); then it draws from `entropy`. `RebuildFailed` if an input is
        refused or the choices do not come out the same (another version of
        the engine)."""
        referee = cls(
            rules,
            first_player=first_player,
            seats=seats,
            turn_timer=turn_timer,
            entropy=_Given(game_id, server_seed),
            keys=keys,
        )
        referee._replaying = list(reversed(choices))
        try:
            for index, packed in enumerate(inputs):
                kind = "?"
                try:
                    # (facts of version 1 held each input as an array)
                    entry = packed if isinstance(packed, list | tuple) else msgpack.unpackb(packed)
                    kind, *args = entry
                    referee._again(kind, args)
                except Exception as exc:  # (another version's input, whatever it is)
                    raise RebuildFailed(
                        f"game {game_id.hex()}: input {index} of its log ({kind}) was refused"
                        f" by this version: {exc}"
                    ) from None
            if referee.choices != list(choices):
                raise RebuildFailed(
                    f"game {game_id.hex()}: its log's time-outs chose otherwise in this version"
                )
        finally:
            referee._replaying = None
        referee._entropy = entropy
        return referee

    def _again(self, kind: str, args: list[Any]) -> None:
        """One input of a game's log, taken again."""
        if kind == RECEIVE:
            seat, data = args
            self.receive(seat, m.from_data(data, "client"))
        elif kind == TIME_OUT:
            (turn,) = args
            self.time_out(turn=turn)
        elif kind == STAND_IN_INPUT:
            seat, turn = args
            self.stand_in(seat, turn=turn)
        elif kind == FORFEIT:
            seat, reason = args
            self.forfeit(seat, reason)
        elif kind == ABORT:
            (votes,) = args
            self.abort(votes)
        elif kind == MARK_SEAT:
            seat, change = args
            self.mark_seat(seat, change)
        else:
            raise ValueError(f"no input of kind {kind!r}")

    # ------------------------------------------------------------ queries

    @property
    def server_seed(self) -> bytes | None:
        """The server seed, once every seat has committed to its own (else None)."""
        return None if self.phase in (Phase.SEEDING, Phase.CANCELLED) else self._server_seed

    @property
    def decision(self) -> Decision | None:
        """The pending engine decision while playing, else None."""
        return self._game.decision if self.phase is Phase.PLAYING else None

    @property
    def turn(self) -> int:
        """How many decisions are settled: the pending decision's `turn`."""
        return self._turn

    @property
    def round(self) -> int:
        """The round being played (1 to 6)."""
        return self._game.round

    @property
    def next_pid(self) -> int:
        """The pid the next placed card gets (part of its commitment)."""
        return self._game.next_pid

    @property
    def scores(self) -> tuple[int, ...]:
        return tuple(self._game.scores)

    @property
    def winners(self) -> tuple[int, ...]:
        return tuple(self._game.winners)

    def view(self, seat: int | None) -> dict[str, Any]:
        """The engine's view for `seat` (None: spectators). The referee knows no
        hidden card, so every view shows backs for them, even the owner's."""
        return view(self._game, seat)

    def drawn(self, seat: int) -> int:
        """How many cards `seat` has drawn from its draw pile (2-player variant)."""
        return self._drawn[seat]

    def hidden(self, seat: int) -> list[int]:
        """`seat`'s placed cards never opened (`final_reveal_request.pids`)."""
        return self._ledger.hidden(seat)

    def opened_by(self, seat: int) -> list[Opening]:
        """The openings `seat` made, in order."""
        return self._ledger.openings(seat)

    def awaited_seeds(self) -> list[int]:
        """The seats whose seed commitment is still awaited."""
        if self.phase is not Phase.SEEDING:
            return []
        return [s for s, c in enumerate(self.seed_commitments) if c is None]

    def awaited_reveals(self) -> list[int]:
        """The seats whose final reveal is still awaited, in seat order."""
        if self.phase is not Phase.REVEALING:
            return []
        return [s for s in range(self.rules.players) if s not in self._answered]

    def forfeited(self, seat: int) -> bool:
        return any(f.seat == seat for f in self.forfeits)

    def take_digest(self) -> tuple[int, bytes] | None:
        """The turn and the digest (`events_digest`) of the events since the
        last call, made by the inputs between: None if there are none."""
        first, last = self.digested, len(self.events)
        turn = self.digested_turn
        self.digested, self.digested_turn = last, self._turn
        return (turn, self.digest_of(first, last)) if last > first else None

    # The last digest made, ((first, last), digest): the journal's of an
    # input's events is most often the version 2 push's of the same events.
    _digest: tuple[tuple[int, int], bytes] = ((0, 0), b"")

    def digest_of(self, first: int, last: int) -> bytes:
        """`events_digest` of events `first` to `last` (kept, made once)."""
        span, digest = self._digest
        if span != (first, last) or not digest:
            digest = events_digest(self.events[first:last])
            self._digest = ((first, last), digest)
        return digest

    # ------------------------------------------------------------ inputs

    def receive(self, seat: int, message: m.Message) -> Ruling:
        """Apply a game message from `seat`. Raises `Refusal` (nothing changed),
        or returns what changed."""
        self._check_seat(seat)
        mark = self._mark()
        handler = self._HANDLERS.get(type(message))
        if handler is None:
            raise TypeError(f"{message.TYPE!r} is not a game message")
        message = self._signature_checked(seat, message)
        handler(self, seat, message)
        self._logged(RECEIVE, seat, m.to_data(message))
        ruling = self._since(mark)
        # A forfeit caused by a message is the sender's failed check.
        return replace(ruling, failure=ruling.forfeits[0]) if ruling.forfeits else ruling

    def time_out(self, *, turn: int | None = None) -> Ruling:
        """The time for the pending wait ran out: the server plays the safe
        default (docs/PROTOCOL.md, Timers). Seeding: the game is cancelled.
        A decision: a direction, a target or a move at random, a placement
        skipped, a face-down card kept; an opening demanded is forfeited (the
        card is settled). Revealing: every silent seat forfeits. `turn`, when
        given, must be the pending decision's (`Refusal` ``stale_turn``
        otherwise: that decision was settled before the timer fired)."""
        mark = self._mark()
        if self.phase is Phase.SEEDING:
            self.phase = Phase.CANCELLED
            self._logged(TIME_OUT, turn)
            return replace(self._since(mark), cancelled=True)
        if self.phase is Phase.REVEALING:
            for seat in self.awaited_reveals():
                self._forfeit(seat, "did not send its final reveal in time")
            self._logged(TIME_OUT, turn)
            return self._since(mark)
        decision = self._pending(turn)
        if decision.kind == Step.OPEN:
            self._forfeit(decision.seat, f"did not open card {decision.pid} in time")
        else:
            self._default(decision)
        self._logged(TIME_OUT, turn)
        return self._since(mark)

    def stand_in(self, seat: int, *, turn: int | None = None) -> Ruling:
        """The stand-in's answer for `seat`, whose player is away: the safe
        default of `time_out`, except that an opening demanded of it is
        forfeited at once ("was away"), and so is the final reveal."""
        self._check_seat(seat)
        mark = self._mark()
        if self.phase is Phase.REVEALING and seat in self.awaited_reveals():
            self._forfeit(seat, "was away at the final reveal")
            self._logged(STAND_IN_INPUT, seat, turn)
            return self._since(mark)
        decision = self._pending(turn)
        if decision.seat != seat:
            raise Refusal(NOT_YOUR_TURN, f"seat {decision.seat} must decide, not seat {seat}")
        if decision.kind == Step.OPEN:
            self._forfeit(seat, f"was away when card {decision.pid} had to be opened")
        else:
            self._default(decision)
        self._logged(STAND_IN_INPUT, seat, turn)
        return self._since(mark)

    def forfeit(self, seat: int, reason: str) -> Ruling:
        """`seat` forfeits (its player left the game...): recorded once, and the
        seat's pending decision, if any, is played the safe way at once, so
        that nothing of this seat is left waiting. In the revealing phase the
        seat is no longer waited for; a seat that has already sent its final
        reveal has nothing left to forfeit. In a room without a turn timer,
        mark the seat first (`mark_seat`, LEFT): a decision the server makes
        for a seat needs that reason in the record, or it does not verify."""
        self._check_seat(seat)
        mark = self._mark()
        if self.phase not in (Phase.PLAYING, Phase.REVEALING):
            raise Refusal(WRONG_STATE, f"nothing to forfeit: the game is {self.phase}")
        if self.phase is Phase.REVEALING and seat in self._answered:
            return self._since(mark)
        self._logged(FORFEIT, seat, reason)
        # The decision pending now, and only it: settling an opening (which
        # `_forfeit` does) may hand the seat its next decision, which is not
        # played here (the stand-in or the timer does, as for any seat).
        decision = self._game.decision if self.phase is Phase.PLAYING else None
        self._forfeit(seat, reason)
        if decision is not None and decision.seat == seat and decision.kind != Step.OPEN:
            self._default(decision)
        return self._since(mark)

    def abort(self, votes: Sequence[int]) -> Ruling:
        """The players end the game by vote (`votes`: the seats that voted;
        the table knows who may vote and when): play stops where it is, and
        the final reveal begins, as at the end of a game. The record says
        the game is not complete, with the scores as they stand, no winners,
        and the votes. Seat changes after this are not noted: the record
        shows who played each seat when the game was ended."""
        if self.phase is not Phase.PLAYING:
            raise Refusal(WRONG_STATE, f"only a game in play can be ended; it is {self.phase}")
        if not votes or any(not 0 <= s < self.rules.players for s in votes):
            raise ValueError(f"the votes of seats {list(votes)} cannot end the game")
        mark = self._mark()
        self._logged(ABORT, list(votes))
        self.votes = tuple(sorted(set(votes)))
        self.phase = Phase.REVEALING
        self._maybe_done()
        return self._since(mark)

    def mark_seat(self, seat: int, change: str) -> None:
        """Note in the record that `seat`'s player went away (the stand-in
        plays), came back, left the game, or handed its seat to a bot (not
        once the game was ended by vote: see `abort`)."""
        self._check_seat(seat)
        if change not in (STAND_IN, LEFT, HANDED_TO_BOT, BACK):
            raise ValueError(f"no seat change {change!r}")
        if self.phase not in (Phase.PLAYING, Phase.REVEALING, Phase.SEEDING):
            raise Refusal(WRONG_STATE, f"the game is {self.phase}")
        if self.votes is not None:
            return
        self._logged(MARK_SEAT, seat, change)
        self._mark_seat(seat, change)

    def _mark_seat(self, seat: int, change: str, handed: Handed | None = None) -> None:
        self.seat_changes.append(SeatChange(seat, len(self.log), change, handed))
        info = self.seats[seat]
        self.seats[seat] = replace(  # the flags say what ever happened to the seat
            info,
            stand_in=info.stand_in or change == STAND_IN,
            left=info.left or change == LEFT,
            handed_to_bot=info.handed_to_bot or change == HANDED_TO_BOT,
        )

    def record(self) -> Record:
        """The game record, once every seat has revealed or forfeited, the
        server's decisions signed with its key. The verdicts are those
        `verify.verify_record` finds on the record itself."""
        if self.phase is not Phase.DONE:
            raise Refusal(WRONG_STATE, f"the record is made at the end; the game is {self.phase}")
        rules = self.rules
        record = Record(
            game_id=self.game_id,
            settings=GameSettings(
                rules.players,
                rules.variant,
                rules.edition,
                rules.families,
                self.first_player,
                self.turn_timer,
            ),
            seats=tuple(self.seats),
            server_seed_commitment=self.server_seed_commitment,
            server_seed=self._server_seed,
            seed_commitments=tuple(c for c in self.seed_commitments if c is not None),
            seeds=tuple(self.seeds),
            log=tuple(self.log),
            final_openings=tuple(self.final_openings),
            events=tuple(self.events),
            results=Results(True, self.scores, self.winners)
            if self.votes is None
            else Results(False, self.scores, (), self.votes),
            forfeits=tuple(self.forfeits),
            verdicts=(),
            seat_changes=tuple(self.seat_changes),
            keys=self.keys,
            seed_signatures=tuple(self.seed_signatures),
            final_signatures=tuple(self.final_signatures),
        )
        # The verdicts from what this referee checked as the game went on:
        # no replay of the game here (the store's side verifies the whole
        # record, off the task that runs the rooms: `server.records`).
        ledger = self._ledger
        seats = range(rules.players)
        verdicts = seat_verdicts(
            record,
            [ledger.placements(s) for s in seats],
            [ledger.openings(s) for s in seats],
            self._failures,
            held=self._secrets_held,
        )
        # The server signs the decisions it made (docs/PROTOCOL.md, "Signed
        # decisions"): deterministic, so a record made again is the same.
        server_key = identity.private_key(self._entropy.server_key_seed())
        return signatures.sign_server_decisions(replace(record, verdicts=verdicts), server_key)

    def signs(self, seat: int) -> bool:
        """Whether `seat`'s decisions must carry its key's signature: it has a
        key, and its player plays it (not a bot it handed the seat to)."""
        return self.keys[seat] is not None and not self.seats[seat].handed_to_bot

    def _signature_checked(self, seat: int, message: m.Message) -> m.Message:
        """`message`, whose signature holds if `seat` signs (`Refusal`
        ``bad_decision_signature`` if not); without its `sig` if the seat
        does not sign (no unchecked signature goes into the record). A
        referee being rebuilt checks nothing again: its inputs were checked."""
        key = self.keys[seat]
        if not self.signs(seat):
            return replace(message, sig=None) if getattr(message, "sig", None) else message  # type: ignore[type-var]
        assert key is not None
        if self._replaying is None and not signatures.signature_ok(
            key, self.game_id, seat, message
        ):
            what = (
                "has no signature"
                if getattr(message, "sig", None) is None
                else "has a signature that is not its key's"
            )
            raise Refusal(
                BAD_DECISION_SIGNATURE,
                f"seat {seat} signs its decisions: this {message.TYPE} {what}"
                " (see Signed decisions)",
            )
        return message

    # ------------------------------------------------------------ bookkeeping

    def _check_seat(self, seat: int) -> None:
        if not 0 <= seat < self.rules.players:
            raise ValueError(f"no seat {seat}")

    def _mark(self) -> tuple[int, int, int, int, int]:
        return (
            len(self.events),
            len(self.placements),
            len(self.openings),
            len(self.settled),
            len(self.forfeits),
        )

    def _since(self, mark: tuple[int, int, int, int, int]) -> Ruling:
        e, p, o, s, f = mark
        return Ruling(
            tuple(self.events[e:]),
            tuple(self.placements[p:]),
            tuple(self.openings[o:]),
            tuple(self.settled[s:]),
            tuple(self.forfeits[f:]),
        )

    def _pending(self, turn: int | None) -> Decision:
        if self.phase is not Phase.PLAYING:
            raise Refusal(WRONG_STATE, f"no decision is pending: the game is {self.phase}")
        if turn is not None and turn != self._turn:
            when = "is over" if turn < self._turn else "has not come yet"
            raise Refusal(
                STALE_TURN, f"turn {turn} {when} (the pending decision is turn {self._turn})"
            )
        decision = self._game.decision
        assert decision is not None
        return decision

    def _due(self, seat: int, turn: int) -> Decision:
        """The pending decision, which `seat` must owe, for `turn`."""
        decision = self._pending(turn)
        if decision.seat != seat:
            raise Refusal(
                NOT_YOUR_TURN,
                f"seat {decision.seat} must decide ({decision.kind}), not seat {seat}",
            )
        return decision

    def _apply(self, seat: int, action: Action, **entry: Any) -> None:
        """Apply a checked action and log it; the decision is settled."""
        events = self._game.apply(action, seat)
        self.log.append(LogEntry(seat, action, **entry))
        self._settle_turn(events)

    def _check(self, seat: int, action: Action) -> None:
        try:
            self._game.check(action, seat)
        except IllegalAction as exc:
            raise Refusal(ILLEGAL_ACTION, str(exc)) from None

    def _settle_turn(self, events: list[Event]) -> None:
        self._turn += 1
        self._after(events)

    def _after(self, events: list[Event]) -> None:
        for event in events:
            if type(event) is Drew:
                self._drawn[event.seat] += len(event.cards)
        self.events.extend(events)
        if self._game.over:
            self.phase = Phase.REVEALING
            # A seat whose hand-over failed has given its final reveal
            # already: with every seat so, nobody is left to reveal.
            self._maybe_done()

    def _default(self, decision: Decision) -> None:
        """The server's safe answer to `decision` (not an opening), logged `by_server`."""
        seat = decision.seat
        if decision.kind == Step.PLACE:
            events = self._game.skip_placement()
            self.log.append(LogEntry.skip(seat))
            self._settle_turn(events)
        elif decision.kind == Step.REVEAL_OR_KEEP:
            self._apply(seat, KEEP, by_server=True)
        else:
            self._apply(seat, self._choose(decision.options), by_server=True)

    def _choose(self, options: Sequence[Action]) -> Action:
        """One of `options` at random, noted in `choices` (a rebuild makes
        the choices noted again, in order)."""
        if self._replaying is not None:
            index = self._replaying.pop()
        else:
            index = self._entropy.choice(range(len(options)))
        self.choices.append(index)
        return options[index]

    def _logged(self, kind: str, *args: Any) -> None:
        """Note an input taken in the game's log (`inputs`), as the msgpack of
        [kind, arguments...]: a third of the memory of the values."""
        self.inputs.append(msgpack.packb([kind, *args], use_bin_type=True))

    def _forfeit(
        self, seat: int, reason: str, opening: Opening | None = None, sig: bytes | None = None
    ) -> Forfeit:
        """Record a forfeit (once per seat, except one per failed opening, which
        is evidence). A demanded opening of this seat is settled; in the
        revealing phase, the seat is no longer awaited."""
        forfeit = Forfeit(seat, reason, len(self.log), opening, sig)
        if opening is not None or not self.forfeited(seat):
            self.forfeits.append(forfeit)
        if self.phase is Phase.REVEALING:
            self._answered.add(seat)
            self._maybe_done()
            return forfeit
        decision = self._game.decision
        if decision is not None and decision.seat == seat and decision.kind == Step.OPEN:
            self._settle_open(decision)
        return forfeit

    def _settle_open(self, decision: Decision) -> None:
        """Settle the eliminated card its owner did not open: it takes the first
        identity still possible that is not an Ambush (`settled_card`)."""
        assert decision.pid is not None
        self._apply(
            decision.seat,
            Open(settled_card(decision.options)),
            pid=decision.pid,
            settled=True,
            by_server=True,
        )
        self.settled.append(decision.pid)

    def _maybe_done(self) -> None:
        """The game is over once no seat is left to reveal (a game always ends)."""
        if self.phase is Phase.REVEALING and len(self._answered) == self.rules.players:
            self.phase = Phase.DONE

    # ------------------------------------------------------------ seeds

    def _seed_commit(self, seat: int, msg: m.SeedCommit) -> None:
        if self.phase is not Phase.SEEDING:
            raise Refusal(WRONG_STATE, "the seed commitments are over")
        if self.seed_commitments[seat] is not None:
            raise Refusal(WRONG_STATE, f"seat {seat} has already committed to its seed")
        self.seed_commitments[seat] = msg.commitment
        self.seed_signatures[seat] = msg.sig
        self.sealed_seeds[seat] = msg.sealed_seed
        if all(c is not None for c in self.seed_commitments):
            self.phase = Phase.PLAYING

    # ------------------------------------------------------------ decisions

    def _decide(self, seat: int, msg: Any) -> None:
        """`direction`, `keep`, `choose`, `move`: a decision without a secret."""
        self._due(seat, msg.turn)
        action = _DECISION_ACTIONS[type(msg)](msg)
        self._check(seat, action)
        self._apply(seat, action, sig=msg.sig)

    def _place(self, seat: int, msg: m.PlaceCard) -> None:
        self._due(seat, msg.turn)
        at: At = msg.at  # type: ignore[assignment]  # "first", "last" or a pid: checked on the wire
        action = Place(BACKS[FAMILY_NAMES.index(msg.family)], at)
        self._check(seat, action)
        pid = self._game.next_pid
        committed = Committed(pid, seat, action.card.family, msg.commitment, self._drawn[seat])
        self._ledger.commit(seat, pid, committed.family, msg.commitment, committed.drawn)
        self.placements.append(committed)
        self._apply(seat, action, pid=pid, commitment=msg.commitment, sig=msg.sig)

    def _reveal(self, seat: int, msg: m.RevealCard) -> None:
        decision = self._due(seat, msg.turn)
        self._check(seat, REVEAL)
        assert decision.pid is not None
        opening = Opening(decision.pid, msg.card, msg.nonce)
        if self._failed_opening(seat, opening, msg.sig):
            # The server keeps the card face down in the seat's place.
            self._apply(seat, KEEP, by_server=True)
            return
        self.log.append(LogEntry(seat, REVEAL, sig=msg.sig))
        self._after(self._game.apply(REVEAL, seat))
        self._open_with(seat, opening)

    def _open(self, seat: int, msg: m.OpenCard) -> None:
        if self.phase is not Phase.PLAYING:
            raise Refusal(WRONG_STATE, f"no opening is asked for: the game is {self.phase}")
        decision = self._game.decision
        assert decision is not None
        if decision.kind != Step.OPEN or decision.seat != seat:
            raise Refusal(WRONG_STATE, f"no opening is asked of seat {seat} now")
        if msg.pid != decision.pid:
            raise Refusal(
                WRONG_STATE, f"the opening asked for is card {decision.pid}, not card {msg.pid}"
            )
        opening = Opening(msg.pid, msg.card, msg.nonce)
        if not self._failed_opening(seat, opening, msg.sig):  # (settled by the forfeit if so)
            self._open_with(seat, opening, msg.sig)

    def _open_with(self, seat: int, opening: Opening, sig: bytes | None = None) -> None:
        """Apply an opening that `_failed_opening` passed (`sig`: its own, for
        an `open`; a reveal's opening has none, the reveal's covers it)."""
        self._ledger.open(seat, opening.pid, opening.card, opening.nonce)
        self.openings.append(opening)
        self._apply(seat, Open(opening.card), pid=opening.pid, nonce=opening.nonce, sig=sig)

    def _failed_opening(self, seat: int, opening: Opening, sig: bytes | None) -> bool:
        """Check `opening` for the pending `reveal` or `open` of `seat`; change
        nothing if it holds. If it does not, the seat forfeits with the
        opening as evidence (the caller then answers in its place).

        The commitments decide first; then the engine, which refuses only an
        identity it has seen elsewhere: with openings that passed the ledger,
        an identity a settled card took, when the seat forfeited before and
        came back (verify says whether that is the seat's fault)."""
        try:
            self._ledger.check(seat, opening.pid, opening.card, opening.nonce)
        except OpeningError as exc:
            self._failures.setdefault(seat, exc.reason)
            self._forfeit(seat, exc.reason, opening, sig)
            return True
        refused = opening_refused(self._game, opening.card)
        if refused is not None:
            if not self.forfeited(seat):  # (one that forfeited before is not at fault)
                self._failures.setdefault(seat, refused)
            self._forfeit(seat, refused, opening, sig)
            return True
        return False

    # ------------------------------------------------------------ the end, hand-over

    def _secrets_failure(self, seat: int, seed: bytes, openings: Sequence[Opening]) -> str | None:
        """`seat`'s seed and the openings of its hidden cards, checked as at the
        end of the game (`verify.check_seat`): why they fail, or None."""
        commitment = self.seed_commitments[seat]
        assert commitment is not None
        return check_seat(
            self.rules,
            self.game_id,
            seat,
            seed_commitment=commitment,
            seed=seed,
            server_seed=self._server_seed,
            placed=self._ledger.placements(seat),
            openings=[*self._ledger.openings(seat), *openings],
        )

    def _final_reveal(self, seat: int, msg: m.FinalReveal) -> None:
        if self.phase is not Phase.REVEALING:
            raise Refusal(
                WRONG_STATE, f"the final reveal comes at the end; the game is {self.phase}"
            )
        if seat in self._answered:
            raise Refusal(
                WRONG_STATE, f"seat {seat} has already sent its final reveal or forfeited"
            )
        reason = self._secrets_failure(seat, msg.seed, msg.openings)
        self.seeds[seat] = msg.seed
        self.final_openings[seat] = msg.openings
        if msg.sig is not None:
            self.final_signatures[seat] = FinalSignature(FINAL_REVEAL, msg.sig)
        if reason is not None:
            self._record_failure(seat, reason)
        else:
            self._secrets_held.add(seat)
        self._answered.add(seat)
        self._maybe_done()

    def _hand_over(self, seat: int, msg: m.HandOver) -> None:
        if self.phase is not Phase.PLAYING:
            raise Refusal(
                WRONG_STATE, f"a hand-over is for a game being played; it is {self.phase}"
            )
        if self.signs(seat) and self._replaying is None:
            # Its signature dates it: the record shows where it happened. (A log
            # being rebuilt was taken as it is, by a version before this.)
            if msg.turn is None:
                raise Refusal(
                    INVALID_FIELD,
                    "hand_over.turn: required of a seat with a key (it dates the hand-over)",
                )
            if msg.turn != self._turn:
                raise Refusal(
                    STALE_TURN,
                    f"a hand-over of a seat with a key gives the pending decision's turn"
                    f" ({self._turn}), not {msg.turn}",
                )
        if self.seats[seat].handed_to_bot:
            raise Refusal(WRONG_STATE, f"seat {seat} is already played by a bot")
        if seat in self._answered:  # a failed hand-over: its secrets are the evidence
            raise Refusal(WRONG_STATE, f"seat {seat} has already handed over its secrets")
        reason = self._secrets_failure(seat, msg.seed, msg.openings)
        if reason is None:  # (part of the hand-over: not an input)
            # A seat with a key signed it: the record keeps it and its signature.
            signed = Handed(msg.seed, msg.openings, msg.sig) if self.signs(seat) else None
            self._mark_seat(seat, HANDED_TO_BOT, signed)
            return
        # The secrets stay in the record as the seat's final reveal, so anyone
        # can see why it failed; the stand-in plays the seat from now on.
        self.seeds[seat] = msg.seed
        self.final_openings[seat] = msg.openings
        if msg.sig is not None:
            self.final_signatures[seat] = FinalSignature(HAND_OVER, msg.sig, msg.turn)
        self._answered.add(seat)
        self._record_failure(seat, reason)

    def _record_failure(self, seat: int, reason: str) -> None:
        """A final reveal or a hand-over that fails its check: a forfeit whose
        reason the sender is told. It is recorded even when the seat forfeited
        before (a time-out, say): it is the evidence of a failed check, and the
        verdict says `failed` with it."""
        self.forfeits.append(Forfeit(seat, reason, len(self.log)))

    _HANDLERS: dict[type[m.Message], Callable[[Referee, int, Any], None]] = {
        m.SeedCommit: _seed_commit,
        m.Direction: _decide,
        m.KeepCard: _decide,
        m.Choose: _decide,
        m.Move: _decide,
        m.PlaceCard: _place,
        m.RevealCard: _reveal,
        m.OpenCard: _open,
        m.FinalReveal: _final_reveal,
        m.HandOver: _hand_over,
    }


class _Given:
    """The entropy of a referee being rebuilt: its game id and server seed,
    as they were drawn; its choices come from its log (`Referee.rebuild`)."""

    def __init__(self, game_id: bytes, server_seed: bytes) -> None:
        self._drawn = [server_seed, game_id]

    def token_bytes(self, size: int) -> bytes:
        value = self._drawn.pop()
        assert len(value) == size
        return value

    def choice(self, options: Sequence[Any]) -> Any:
        raise AssertionError("a referee being rebuilt makes the choices of its log")

    def server_id(self) -> bytes:
        raise AssertionError("a referee has no server id")

    def server_key_seed(self) -> bytes:
        raise AssertionError("a referee has no server key")


# The client messages a game's referee takes; the others are the lobby's and the room's.
GAME_MESSAGES: tuple[type[m.Message], ...] = tuple(Referee._HANDLERS)

"""What the terminal shows and what its keys do, between the session and the screen.

How this works
--------------
A `GameController` reads the session's mirror (`ClientState`) whenever it
changes (`changed`), keeps the log in plain words, what changed in the
queue since our last decision (`Changes`, from the same events) and the
`Chooser` of our pending decision, and answers keys (`key`). It never talks to the network
itself: a complete choice becomes a `Command` handed to `send`, which the
app carries to the trio side (`client.tui.app`), where the session sends
it. It does no I/O and reads no clock: the time is given to it, so that the
tests drive it with keys and positions alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from oriflamme.engine import Action, Card, Event
from oriflamme.engine.events import (
    AbilityUsed,
    DirectionChosen,
    Discarded,
    Eliminated,
    GameEnded,
    Kept,
    Moved,
    Placed,
    PlacementSkipped,
    Revealed,
    RoundEnded,
    RoundStarted,
    Scored,
    Stolen,
    Uncovered,
)
from oriflamme.protocol import messages as m

from ..i18n import N_, _, language, ngettext
from ..narrator import YOU, EventLog, names_and
from ..state import ClientState, GameMirror
from ..view import TableView
from .choices import DOWN, END, ENTER, ESCAPE, HOME, PAGE_DOWN, PAGE_UP, QUIT_NOW, UP, Chooser
from .screen import (
    WARN_AT,
    EndSummary,
    Line,
    Row,
    Scene,
    initials,
    log_box,
    log_entry_lines,
    log_start,
    render,
    rule,
    wrap,
)
from .text import cells, edited, fit, safe

CHAT_LIMIT = 200
QUIT_QUESTION = N_("Quit? Your seat is kept for you: [y] quit, any other key goes on")
SCROLL_KEYS = (PAGE_UP, PAGE_DOWN, UP, DOWN, HOME, END)


@dataclass(frozen=True, slots=True)
class RoundSummary:
    """A round just over: the scores after it and before it, and the cards
    each seat lost in it (eliminated), by name."""

    round: int
    scores: tuple[int, ...]
    before: tuple[int, ...]
    lost: dict[int, list[str]]


# Events by which a seat acts (its decision, or its card's turn): what
# follows, up to the next of them, is that seat's doing.
ACTING = (DirectionChosen, Placed, PlacementSkipped, Kept, Revealed, AbilityUsed)
# Events that change a card of the queue (its pid), and those that take one out.
CHANGING = (Placed, Kept, Revealed, Moved, Uncovered)
LEAVING = (Eliminated, Discarded)


class Changes:
    """What changed in the queue since our last decision, from the events:
    the cards changed (`pids`: placed, revealed, Influence gained, moved,
    uncovered) and those gone (`gone`, named by `name(pid)`). What our own
    decisions did is left out: we know it. A spectator's are what the seat
    that acted last did (they start again when another seat acts).

    >>> changes = Changes(lambda pid: f"card {pid}")
    >>> from oriflamme.engine import BACKS
    >>> back = BACKS[0]
    >>> for e in [Placed(1, 4, back, "first", 0), Placed(0, 5, back, "last", 1)]:
    ...     changes.see(e, own=0, spectator=False)
    >>> changes.pids
    {4}
    """

    def __init__(self, name: Callable[[int], str]) -> None:
        self.name = name
        self.pids: set[int] = set()
        self.gone: list[str] = []
        self.acting: int | None = None  # the seat whose doing the events are

    def clear(self) -> None:
        """We decided: what changed before is seen."""
        self.pids.clear()
        self.gone.clear()

    def see(self, event: Event, *, own: int | None, spectator: bool) -> None:
        """One event, in order; `own`: our seat, whose doings are not marked
        (None: mark them too, as when the server decided for us)."""
        if isinstance(event, ACTING):
            if spectator and event.seat != self.acting:
                self.clear()  # another seat's turn
            self.acting = event.seat
        elif isinstance(event, RoundStarted):
            self.acting = None
        ours = own is not None and self.acting == own
        if isinstance(event, Placed) and isinstance(event.at, int):
            self.pids.discard(event.at)  # covered: the mark is the top card's
        if isinstance(event, CHANGING) and not ours:
            self.pids.add(event.pid)
        elif isinstance(event, LEAVING):
            self.pids.discard(event.pid)  # (gone, whoever did it)
            if not ours:
                self.gone.append(self.name(event.pid))


@dataclass(frozen=True, slots=True)
class Answer:
    """Send `action` as our answer to decision `turn`."""

    turn: int
    action: Action


@dataclass(frozen=True, slots=True)
class Say:
    """Say `text` in the room's chat."""

    text: str


@dataclass(frozen=True, slots=True)
class PlayAgain:
    """Ready for another game at the same table (the host starts it)."""


@dataclass(frozen=True, slots=True)
class Quit:
    """Leave the program (the seat is kept: the session can come back)."""


@dataclass(frozen=True, slots=True)
class Request:
    """Send `message` to the server; its answer comes back to `answered`."""

    message: m.Message


@dataclass(frozen=True, slots=True)
class Download:
    """Download, check and keep the record `record_id`."""

    record_id: str


@dataclass(frozen=True, slots=True)
class Question:
    """Something the program asks the player before it goes on: a
    `heading`, the `text` of the question, and each key's answer (`Chose`)
    with what it does, said to the player (``{"r": ("resume", "resume
    it")}``: "[r] resume it")."""

    heading: str
    text: str
    answers: dict[str, tuple[str, str]]

    def keys(self) -> str:
        """The keys, as the status line says them ([q] quits too)."""
        said = [f"[{key}] {what}" for key, (__, what) in self.answers.items()]
        return "  ".join([*said, _("[q] quit")])


@dataclass(frozen=True, slots=True)
class Chose:
    """The player's answer to the program's `Question`."""

    answer: str


@dataclass(frozen=True, slots=True)
class Resign:
    """Leave our game for good: with `bot`, a server bot plays our cards to
    the end (`hand_over`); else our seat forfeits, and the server's stand-in
    plays it (`leave_room`)."""

    bot: bool


Command = Answer | Say | PlayAgain | Quit | Request | Download | Chose | Resign


class GameController:
    """The game screen's state and keys; see the module docstring."""

    def __init__(
        self,
        state: ClientState,
        send: Callable[[Command], None],
        *,
        title: str = "",
        leave_key: bool = False,
    ) -> None:
        """`leave_key`: [l] at the end of a game goes back to the lobby."""
        self.leave_key = leave_key
        self.state = state
        self.send = send
        self.title = title
        self.status = ""
        # The status speaks of the decision then pending (its turn, or None
        # for none): said again when that decision is over, it would be stale.
        self._status_about: tuple[int | None] | None = None
        self.banner = ""
        self.chat_input: str | None = None
        self.help = False
        self.outs = False  # every player's cards out, in full
        self.chooser: Chooser | None = None
        # The log scrolled back: shown up to this line, counted from the first
        # line ever logged (the log forgets its oldest lines); None: the newest.
        self.log_end: int | None = None
        self._size: tuple[int, int] | None = None  # the screen's, when last drawn
        self._log_box = (33, 10)  # the log's width and height, when last shown
        self.log = EventLog(self.who, known=self._known, me=self._seat)
        self.end: EndSummary | None = None
        self.verified = ""
        self.saved = ""
        self._game: bytes | None = None
        self._notices = 0  # how many of the mirror's notices were said
        self._seen_events = 0
        self._announced = False
        self._catching_up = 0  # events of the game that happened before we came
        self._last_chat: m.ChatMessage | None = None
        self._chooser_turn: int | None = None
        self._answered: int | None = None
        self._offered: int | None = None  # the turn of the last decision offered to us
        self.question: Question | None = None  # the program's, until answered
        self.quitting = False  # [q] was pressed mid-game: the next key says
        self.resigning = False  # [R] was pressed mid-game: the next key says how
        self.resigned = ""  # we resigned from a game: what became of our seat
        self.score_history: list[tuple[int, list[int]]] = []  # (round, scores after it)
        self.round_summary: RoundSummary | None = None  # shown until the next key
        # The queue's changes since our last decision, marked on the board.
        self.changes = Changes(lambda pid: self.log.card(pid))
        self.history = False  # the score history is shown (`s`)
        self._round_lost: dict[int, list[str]] = {}  # the cards each seat lost this round
        # The seats' names in the game shown (its id): `names`.
        self._names_of: tuple[bytes | None, dict[int, str]] = (None, {})
        self._deadline: tuple[int, float] | None = None  # (turn, time it runs out)
        self._now = 0.0
        # The decisions of ours rung for, and those whose time nearly ran out,
        # by game and turn (a player may go from game to game: My games).
        self.turns_rung: set[tuple[bytes, int]] = set()
        self.turns_warned: set[tuple[bytes, int]] = set()
        self._shown: set[bytes] = set()  # the games shown so far
        self.again_for: bytes | None = None  # the game after which [a] was pressed

    # ------------------------------------------------------------ names

    def names(self) -> list[str]:
        """Each seat's name. In a game, the name each seat had when the game
        first showed it, for the whole game and its end: a player who leaves
        after it, or another who takes the seat, does not rename it."""
        room = self.state.room
        game = self.state.game
        n = game.rules.players if game is not None else (len(room.seats) if room else 0)
        named = {}
        if room is not None:
            named = {s.seat: safe(s.name, 16) for s in room.seats if s.seat < n and s.name}
        if game is not None:
            if self._names_of[0] != game.game_id:
                self._names_of = (game.game_id, {})
            kept = self._names_of[1]
            for seat, name in named.items():
                kept.setdefault(seat, name)
            named = kept
        return [named.get(s, _("seat {number}").format(number=s + 1)) for s in range(n)]

    def _seat(self) -> int | None:
        """Our seat in the game shown (None: watching, or no game)."""
        game = self.state.game
        return None if game is None else game.seat

    def who(self, seat: int) -> str:
        game = self.state.game
        if game is not None and seat == game.seat:
            return _(YOU)
        names = self.names()
        return names[seat] if seat < len(names) else _("seat {number}").format(number=seat + 1)

    def _known(self, pid: int) -> Card | None:
        """Our own placed card `pid`, from our secrets (the server never knew it)."""
        game = self.state.game
        if game is None or game.secrets is None:
            return None
        return game.secrets.card(pid)

    def _announce(self, game: GameMirror, view: TableView) -> int:
        """The log's first line for a game we start showing; how many of its
        events happened before we came (0 for a game seen from its start)."""
        players = len(self.names())
        under_way = bool(view.queue) or view.round > 1
        if game.told_from_start and under_way:
            # A resume or a watcher arriving: the game so far, from its start
            # (`past`); "back" only for a seat that had played in it.
            ours = any(type(e) is Placed and e.seat == game.seat for e in game.events)
            over = game.end is not None or any(type(e) is GameEnded for e in game.events)
            if game.seat is None:
                said = _("── Watching a game of {players} under way: the game so far")
            elif over:  # (not one to be back in: `play` starts the next)
                said = _("── Your last game ({players} players) is over: how it went")
            elif ours:
                said = _("── Back in the game ({players} players): the game so far")
            else:
                said = _("── A new game: {players} players")
            self.log.note(said.format(players=players))
            return 0 if over else len(game.events)  # (a game over: no "Now")
        if not game.events and under_way:  # a server that sends no `past`
            if game.seat is None:
                said = _("── Watching a game of {players} under way (earlier moves not shown)")
            else:
                said = _("── Back in the game (what happened before is not shown)")
        elif game.seat is None:
            said = _("── Watching a new game: {players} players")
        else:
            said = _("── A new game: {players} players")
        self.log.note(said.format(players=players))
        return 0

    # ------------------------------------------------------------ input from the session

    def changed(self, now: float) -> bool:
        """The mirror changed. True when a decision of ours is newly pending
        (the app rings the bell then)."""
        self._now = now
        game = self.state.game
        notices = self.state.notices[self._notices :]
        self._notices = len(self.state.notices)
        if notices:
            # The server went back (a restore): the game is shown again from
            # what it says, as a game we come back to.
            self._game = None
        if game is None:
            self.chooser = None
            self._chooser_turn = None  # (a game we step out of offers it again when back)
            self._take_chat()
            self._say(notices)
            return False
        if game.game_id != self._game:
            if game.game_id in self._shown:
                # Back to a game shown before (My games): its log is told
                # again from its start, not after the other game's.
                self.log = EventLog(self.who, known=self._known, me=self._seat)
                self.log_end = None
            self._shown.add(game.game_id)
            self._game = game.game_id
            self._deadline = self._chooser_turn = None  # (by turn: another game's)
            self._seen_events = 0
            self.status = ""  # about the game before ("ready for another game", say)
            self.log.cards.clear()  # pids start again at 0 in every game
            self._offered = None
            self.score_history = []
            self.round_summary = None
            self.history = False
            self._round_lost = {}
            self.changes = Changes(lambda pid: self.log.card(pid))
            self.end = None
            self._announced = False
            self._catching_up = 0
            self._answered = None
        view = game.table()
        if view is not None and not self._announced:
            self._announced = True
            self.log.learn_view(view)
            self._catching_up = self._announce(game, view)
        self._say(notices)
        first = self._seen_events
        new = game.events[first:]
        self._seen_events = len(game.events)
        d = game.decision
        own = game.seat  # whose doings are not marked as changes
        if new and self._offered is not None and (d is None or d.turn != self._offered):
            # A decision we were offered is settled: by us, or by the server
            # (its timer, or its stand-in while we were away), said before how.
            if self._offered != self._answered:
                # A timer ran for it and the stand-in does not hold our seat:
                # the timer decided. (Not "past our own clock": a client
                # late to hear of the decision counts its time late too.)
                due = self._deadline
                room = self.state.room
                away = room is not None and any(
                    s.seat == game.seat and s.bot == "stand_in" for s in room.seats
                )
                timed_out = due is not None and due[0] == self._offered and not away
                self.log.note(
                    _("⏱ Time ran out: the server decided for you")
                    if timed_out
                    else _("The server decided for you while you were away")
                )
                own = None  # what it decided for us: news to us
            self._offered = None
        for i, event in enumerate(new):
            self.log.add([event])
            if first + i >= self._catching_up:  # (not the game before we came)
                self.changes.see(event, own=own, spectator=game.seat is None)
            if isinstance(event, RoundStarted):
                self._round_lost = {}
            elif isinstance(event, Eliminated):
                card = self.log.name(event.pid)
                self._round_lost.setdefault(event.owner, []).append(card)
            elif isinstance(event, RoundEnded) and view is not None:
                at_end = scores_before(list(view.scores), new[i + 1 :])
                if game.end is None:
                    scores = ", ".join(f"{self.who(s)} {p}" for s, p in enumerate(at_end))
                    said = _("── Scores after round {round}: {scores}")
                    self.log.note(said.format(round=event.round, scores=scores))
                # (a round over before we came goes in the history alone)
                self._round_over(event.round, at_end, first + i >= self._catching_up)
        if first < self._catching_up <= self._seen_events:
            self.log.note(_("── Now"))
        self._take_chat()
        d = game.decision
        if d is not None and d.time_left is not None:
            if self._deadline is None or self._deadline[0] != d.turn:
                self._deadline = (d.turn, now + d.time_left / 1000)
        elif d is None:
            self._deadline = None
        if self._status_about is not None and self._status_about != (
            d.turn if d is not None else None,
        ):
            self.status = ""  # about a decision that is over: stale
            self._status_about = None
        if game.end is not None and self.end is None:
            self.end = self._summary(game)
            if self.end.ended_in is not None:
                said = _("── The game was ended by vote in round {round}")
                self.log.note(said.format(round=self.end.ended_in))
            self.round_summary = None  # (the end says it all)
            self.status = ""
        # (no view: the server's could not be read, and the mirror says so)
        mine = game.my_turn and d is not None and d.turn != self._answered and view is not None
        if not mine:
            self.chooser = None
            self._chooser_turn = None
            return False
        assert d is not None and view is not None and game.seat is not None
        if self._chooser_turn != d.turn:
            self.chooser = Chooser(
                str(d.kind), game.options(), view, seat=game.seat, who=self.who, pid=d.pid
            )
            self._chooser_turn = d.turn
            self._offered = d.turn
            self.status = ""
            if (game.game_id, d.turn) not in self.turns_rung:
                self.turns_rung.add((game.game_id, d.turn))
                return True
        return False

    def _say(self, notices: list[str]) -> None:
        """What the mirror tells the user (the server went back), in the log
        and the status line."""
        for notice in notices:
            said = _(notice)
            self.log.note(f"── {said[0].upper()}{said[1:]}")
            self.status = said[0].upper() + said[1:]

    def revealed_view(self) -> TableView | None:
        """The view, and once the game is over every face-down card shown as
        its opening (all were opened and checked at the end)."""
        game = self.state.game
        if game is None:
            return None
        view = game.table()
        if view is None or game.end is None:
            return view
        openings = {**game.openings, **{o.pid: o for o in game.end.openings}}
        queue = tuple(
            tuple(
                replace(c, card=openings[c.pid].card) if not c.face_up and c.pid in openings else c
                for c in slot
            )
            for slot in view.queue
        )
        return replace(view, queue=queue)

    def _take_chat(self) -> None:
        chat = self.state.chat
        new = []
        for line in reversed(chat):  # the newest lines, back to the last one shown
            if line is self._last_chat:
                break
            new.append(line)
        self._last_chat = chat[-1] if chat else None
        room = self.state.room
        here = room.room if room is not None else None
        for line in reversed(new):
            name = safe(line.name, 16)
            # The log is the table's: a line said in the lobby, or in
            # another room, says where.
            if line.room is None:
                where = _("[lobby]") + " " if line.player is not None else ""
            else:
                where = "" if here in (None, line.room) else _("[another room]") + " "
            self.log.note(f"» {where}{name}: {safe(line.text, CHAT_LIMIT)}")

    def _summary(self, game: GameMirror) -> EndSummary:
        end = game.end
        assert end is not None
        ours = game.check_end()
        failed = [v for v in end.verification if not v.ok]
        if failed or game.problems:
            reasons = [f"{self.who(v.seat)}: {v.reason or v.status}" for v in failed]
            reasons += game.problems
            verified = _("Verification FAILED: {reasons}").format(
                reasons="; ".join(safe(r) for r in reasons)
            )
        else:
            checked = bool([v for v in ours if v.ok])
            n = len(end.scores)
            if checked and n == 2:
                verified = _(
                    "Verified (here too): fair deal for both seats, every hidden card checked."
                )
            elif checked:
                verified = _(
                    "Verified (here too): fair deal for all {seats} seats, every hidden card checked."
                )
            elif n == 2:
                verified = _("Verified: fair deal for both seats, every hidden card checked.")
            else:
                verified = _(
                    "Verified: fair deal for all {seats} seats, every hidden card checked."
                )
            verified = verified.format(seats=n)
        if game.seat is None:  # spectators do not play
            keys = _("[l] lobby  [q] quit") if self.leave_key else _("[q] quit")
        elif self.leave_key:
            keys = _("[a] play again  [l] lobby  [q] quit")
        else:
            keys = _("[a] play again  [q] quit")
        view = game.table()
        return EndSummary(
            scores=end.scores,
            winners=end.winners,
            verified=verified,
            keys=keys,
            # (a game ended by vote: the round it stopped in)
            ended_in=None if end.complete else 1 if view is None else view.round,
        )

    def tick(self, now: float) -> bool:
        """Time passed. True once per decision of ours when its time left
        reaches `WARN_AT` seconds: the app rings the bell (the screen marks it)."""
        self._now = now
        left = self.seconds_left()
        game = self.state.game
        d = game.decision if game is not None else None
        if not (self.my_turn and d is not None and left is not None and left <= WARN_AT):
            return False
        assert game is not None
        if (game.game_id, d.turn) in self.turns_warned:
            return False
        self.turns_warned.add((game.game_id, d.turn))
        return True

    def seconds_left(self) -> int | None:
        """The seconds left to the pending decision, where a timer runs."""
        game = self.state.game
        d = game.decision if game is not None else None
        if self._deadline is None or d is None or self._deadline[0] != d.turn:
            return None
        return max(0, int(self._deadline[1] - self._now + 0.999))

    @property
    def my_turn(self) -> bool:
        return self.chooser is not None

    def lines(self, width: int, height: int) -> list[Line]:
        self._size = (width, height)
        return render(self.scene(), width, height)

    @property
    def _log_end_kept(self) -> int | None:
        """`log_end` counted in the lines the log still keeps."""
        return None if self.log_end is None else max(0, self.log_end - self.log.dropped)

    # ------------------------------------------------------------ what is drawn

    def scene(self) -> Scene:
        game = self.state.game
        view = self.revealed_view()
        d = game.decision if game is not None else None
        seconds = self.seconds_left()
        end = self.end
        width = self._size[0] if self._size is not None else 80
        footer: list[Line] = []
        if self.question is not None:
            footer = self._question_lines(width)
        elif self.resigning:
            footer = self._resign_lines(width)
        elif self.history:
            footer = self._history_lines(width)
        elif self.round_summary is not None and end is None:
            footer = self._summary_lines(width)
        if end is not None:
            end = replace(end, verified=self.verified or end.verified, saved=self.saved)
        room = self.state.room
        stand_ins = frozenset(
            s.seat for s in (room.seats if room is not None else ()) if s.bot == "stand_in"
        )
        return Scene(
            view=view,
            names=self.names(),
            seat=game.seat if game is not None else None,
            title=self.title
            or (
                _('Oriflamme · room "{room}"').format(room=safe(room.name, 24))
                if room
                else "Oriflamme"
            ),
            log=self.log.lines,
            decision_seat=d.seat if d is not None else None,
            decision_kind=str(d.kind) if d is not None else None,
            seconds_left=seconds,
            chooser=self.chooser,
            status=self.question.keys()
            if self.question is not None
            else QUIT_QUESTION  # (until answered, whatever else comes)
            if self.quitting
            else self.chooser.status
            if self.chooser is not None and self.chooser.status
            else self.status or self._elsewhere(),
            banner=self.banner,
            end=end,
            chat_input=self.chat_input,
            help=self.help,
            stand_ins=stand_ins,
            reveal_all=game is not None and game.end is not None,
            log_end=self._log_end_kept,
            outs=self.outs,
            footer=footer,
            hint=self.question is None and not self.quitting,
            vote=self.vote_text(),
            changed=frozenset(self.changes.pids),
            gone=tuple(self.changes.gone),
        )

    # ------------------------------------------------------------ keys

    def key(self, key: str) -> None:
        """One key press (a character, or ``left``, ``right``, ``enter``,
        ``escape``, ``backspace``; `QUIT_NOW` for Ctrl-C)."""
        self.status = ""
        self._status_about = None
        if self.question is not None and key != QUIT_NOW:
            self._answer_question(key)
            return
        if key == QUIT_NOW or (self.quitting and key in ("y", "q")):
            self.quitting = False
            self.send(Quit())
            return
        if self.quitting:  # any other key: the game goes on
            self.quitting = False
            self.status = _("Still in the game")
            return
        if self.resigning:
            self._resign_key(key)
            return
        if self.chooser is not None:
            self.chooser.status = ""
        if self.help or self.outs or self.history:
            self.help = self.outs = self.history = False
            return
        if self.round_summary is not None:  # seen: the game goes on
            self.round_summary = None
            if self.end is None:
                return
        if key == "s" and self.chat_input is None:
            self.history = True
            return
        if self.chat_input is not None:
            self._chat_key(key)
            return
        if key == "?":
            self.help = True
            return
        if key in SCROLL_KEYS:
            self._scroll(key)
            return
        if key == "o":
            if self.state.game is not None and self.state.game.table() is not None:
                self.outs = True
            else:
                self.status = _("No game yet: no cards out")
            return
        if key == "/":
            self.chat_input = ""
            return
        if key == "q":
            if self._playing():
                self.quitting = True
                self.status = _(QUIT_QUESTION)
            else:
                self.send(Quit())
            return
        if key == "R":
            self._resign()
            return
        if key == "A":
            self._vote()
            return
        if key == "L":
            self._step_out()
            return
        if self.end is not None:
            game = self.state.game
            if key == "a" and game is not None and game.seat is None:
                self.status = _("Spectators do not play: {keys}").format(keys=self.end.keys)
            elif key == "a":
                self.again_for = self._game
                self.status = _("Ready for another game: waiting for the others…")
                self.send(PlayAgain())
            elif key == "l" and self.leave_key:
                self.send(Request(m.LeaveRoom()))
            else:
                self.status = _("The game is over: {keys}").format(keys=self.end.keys)
            return
        chooser = self.chooser
        if chooser is None:
            game = self.state.game
            d = game.decision if game is not None else None
            if game is not None and d is not None and d.seat == game.seat:
                self.status = _("Your answer is on its way…")
            elif d is not None:
                said = _("It is {player}'s turn, not yours: wait a moment")
                self.status = said.format(player=self.who(d.seat))
            else:
                self.status = _("Nothing to choose now")
            self._status_about = (d.turn if d is not None else None,)
            return
        action = chooser.press(key)
        if action is not None:
            game = self.state.game
            assert game is not None and game.decision is not None
            self._answered = game.decision.turn
            self.changes.clear()  # marks last until our next decision (as on BGA)
            self.send(Answer(game.decision.turn, action))
            self.chooser = None
            self.status = _("Sent…")
            self._status_about = (game.decision.turn,)

    def _answer_question(self, key: str) -> None:
        """A key while the program asks: its answer, `q` to quit, or nothing."""
        assert self.question is not None
        answer = self.question.answers.get(key)
        if answer is not None:
            self.question = None
            self.send(Chose(answer[0]))
        elif key == "q":
            self.question = None
            self.send(Quit())

    # ------------------------------------------------------------ resigning, ending by vote

    def _resign(self) -> None:
        """[R]: ask how to resign (`_resign_lines`), if there is a game of ours to leave."""
        game = self.state.game
        d = game.decision if game is not None else None
        if not self._playing():
            self.status = _("No game of yours to resign from")
        elif d is not None and d.turn == self._answered:
            self.status = _("Your answer is on its way: press R again in a moment")
        else:
            self.resigning = True

    def _resign_key(self, key: str) -> None:
        """The key after [R]: b (a bot plays on), l (leave), anything else goes on."""
        self.resigning = False
        game = self.state.game
        if key == "b" and (game is None or game.server_seed is None):
            self.status = _("The cards are not dealt yet: no bot can play them (R, then l leaves)")
        elif key in ("b", "l") and self._playing():
            self.send(Resign(bot=key == "b"))
            self.status = _("Resigning…")
        else:
            self.status = _("Still in the game")

    def resigned_from(self, bot: bool) -> str:
        """We left our game for good (`Resign`): what the player is told."""
        self.resigned = (
            _("You resigned: a bot plays your cards to the end of the game.")
            if bot
            else _("You left the game: your seat forfeits it (the server plays it to the end).")
        )
        return self.resigned

    def _step_out(self) -> None:
        """[L]: back to the lobby, keeping our seat (`leave_room.keep_seat`)."""
        if not self.leave_key:
            self.status = _("No lobby here: q quits (your seat is kept until you are back)")
        elif not self._playing():
            self.status = _("No game of yours is being played: l leaves the room")
        else:
            self.send(Request(m.LeaveRoom(keep_seat=True)))
            self.status = _("To the lobby: your seat is kept (my games [m] brings you back)…")

    def _elsewhere(self) -> str:
        """The games whose seats we kept that wait for us, said on the status
        line while it has nothing else to say."""
        n = len(self.state.games_waiting)
        if not n or not self.leave_key:
            return ""
        if not self._playing():
            text = ngettext(
                "Your turn in another game: l to the lobby",
                "Your turn in {count} other games: l to the lobby",
                n,
            )
        else:
            text = ngettext(
                "Your turn in another game: L to the lobby, your seat here kept",
                "Your turn in {count} other games: L to the lobby, your seat here kept",
                n,
            )
        return text.format(count=n)

    def _vote(self) -> None:
        """[A]: vote to end the game, when a seat's player is gone."""
        game = self.state.game
        room = self.state.room
        if not self._playing() or game is None:
            self.status = _("Only a player in a game being played votes to end it")
        elif room is None or room.abort_votes is None:
            self.status = _("Every player is here: a game is ended by vote only when one is gone")
        elif game.seat in room.abort_votes:
            self.status = _("You voted to end the game: waiting for the others")
        else:
            self.send(Request(m.VoteAbort(game=game.game_id)))
            self.status = _("Your vote to end the game is on its way…")

    def vote_text(self) -> str:
        """A vote to end the game, while one can be held: who is gone, who
        voted, and the key (empty otherwise)."""
        room = self.state.room
        game = self.state.game
        if room is None or room.abort_votes is None or game is None or game.end is not None:
            return ""
        gone = [s.seat for s in room.seats if s.bot == "stand_in"]
        votes = list(room.abort_votes)
        us = game.seat
        if not votes:
            names = names_and([self.who(s) for s in gone]) or _("A player")
            if us is None:
                text = ngettext(
                    "{players} is gone: the players may vote to end the game",
                    "{players} are gone: the players may vote to end the game",
                    max(1, len(gone)),
                )
            else:
                text = ngettext(
                    "{players} is gone: [A] vote to end the game (all present players must agree)",
                    "{players} are gone: [A] vote to end the game (all present players must agree)",
                    max(1, len(gone)),
                )
            return text.format(players=names)
        voters = [self.who(s) for s in votes]
        if votes == [us]:
            said = _("You want to end the game")
        else:
            said = ngettext(
                "{players} wants to end the game", "{players} want to end the game", len(voters)
            ).format(players=names_and(voters))
        waiting = [
            self.who(s.seat)
            for s in room.seats
            if s.bot is None and s.name is not None and s.seat not in votes
        ]
        if us is not None and us not in votes:
            return _("{said} ([A] to agree)").format(said=said)
        if waiting:
            return _("{said}: waiting for {players}").format(said=said, players=names_and(waiting))
        return said

    def _resign_lines(self, width: int) -> list[Line]:
        """The question [R] asks, in place of the decision."""
        lines = [rule(width, _("Resign? You leave this game for good"), "class:rule.turn")]
        for key, said in (
            ("b", _("a bot plays your cards to the end")),
            ("l", _("leave: your seat forfeits (the server plays it, without your cards)")),
            ("Esc", _("keep playing")),
        ):
            lines.append(Row(width).add(f" [{key}]", "class:key").add(" " + said).line())
        return lines

    def _scroll(self, key: str) -> None:
        """Scroll the log: a page, a line, or to either end."""
        if self._size is not None:  # (laid out here, not at every frame: only scrolling needs it)
            box = log_box(self.scene(), *self._size)
            if box[1] > 0:
                self._log_box = box
        lines = self.log.lines
        width, height = self._log_box
        total = len(lines)
        first = log_start(lines, width, height)  # the least end: the start of the log
        kept_end = self._log_end_kept
        end = total if kept_end is None else kept_end
        end = max(first, min(end, total))

        def size(i: int) -> int:
            return len(log_entry_lines(lines[i], width))

        if key == HOME:
            new = first
        elif key == END:
            new = total
        elif key == UP:
            new = end - 1
        elif key == DOWN:
            new = end + 1
        elif key == PAGE_UP:  # the line at the top comes down to the bottom
            top, used = end, 0
            while top > 0 and used < height:
                top -= 1
                used += size(top)
            new = min(top + 1, end - 1)
        else:  # PAGE_DOWN: the line at the bottom goes up to the top
            new, used = max(end - 1, 0), 0
            while new < total and used + size(new) <= height:
                used += size(new)
                new += 1
            new = max(new, end + 1)
        new = max(first, min(new, total))
        if new == end:
            back = key in (PAGE_UP, UP, HOME)
            self.status = (
                _("This is the start of the log")
                if back
                else _("These are the newest lines of the log")
            )
        if new <= first:
            # The start: kept as such (0), not as the end that shows it at
            # this height: the box may be shorter when it is drawn (another
            # footer, a line more in the players' panel), and the log's first
            # line must still be at its top.
            new = 0
        self.log_end = None if new >= total else new + self.log.dropped

    def _round_over(self, round_: int, scores: list[int], show: bool = True) -> None:
        """A round ended with `scores`: kept in the history (`s`), and (`show`)
        what it gave and cost each player shown until the next key."""
        before = self.score_history[-1][1] if self.score_history else [0] * len(scores)
        self.score_history.append((round_, list(scores)))
        lost, self._round_lost = self._round_lost, {}
        if show:
            self.round_summary = RoundSummary(round_, tuple(scores), tuple(before), lost)

    def _summary_lines(self, width: int) -> list[Line]:
        """The round just over: each player's score, what the round gave
        them, the cards they lost in it."""
        summary = self.round_summary
        assert summary is not None
        marks = initials(self.names())
        heading = _("Round {round} is over · any key goes on").format(round=summary.round)
        lines = [rule(width, heading, "class:rule.turn")]
        for seat, score in enumerate(summary.scores):
            gained = score - summary.before[seat]
            row = Row(width).add(f" {marks[seat]} {fit(self.who(seat), 10)} {score:>3}  ")
            gain = _("{points} this round").format(points=f"{gained:+d}")
            row.add(fit(gain, max(15, cells(gain) + 1)), "class:tokens" if gained else "")
            cards = summary.lost.get(seat)
            if cards:
                row.add(_("lost: {cards}").format(cards=", ".join(cards)))
            lines.append(row.line())
        return lines

    def _question_lines(self, width: int) -> list[Line]:
        """The program's question, in place of the decision."""
        question = self.question
        assert question is not None
        lines = [rule(width, question.heading, "class:rule.turn")]
        lines += [Row(width).add(" " + line).line() for line in wrap(question.text, width - 2)]
        return lines

    def _history_lines(self, width: int) -> list[Line]:
        """The scores after each round, one line a round (`s`)."""
        names = self.names()
        marks = initials(names)
        legend = "  ".join(f"{m} {fit(self.who(s), 8)}" for s, m in enumerate(marks))
        lines = [rule(width, _("Scores after each round · any key closes this"))]
        label = max(cells(_("round {round}").format(round=99)), 8)
        lines.append(Row(width).add(" " * (label + 2) + legend).line())
        for round_, scores in self.score_history or [(0, [0] * len(names))]:
            row = "  ".join(f"{m} {p:<8}" for m, p in zip(marks, scores, strict=False))
            said = fit(_("round {round}").format(round=round_), label)
            lines.append(Row(width).add(f" {said} {row}").line())
        return lines

    def _playing(self) -> bool:
        """Whether we hold a seat in a game not over (quitting it asks first)."""
        game = self.state.game
        return game is not None and game.seat is not None and game.end is None

    def refused(self, turn: int, message: str) -> None:
        """The server refused our answer to `turn` (`message`: why, in the
        player's words): offer the choice again."""
        if self._answered == turn:
            self._answered = None
            self._chooser_turn = None
            self.changed(self._now)
        self.status = _("Refused: {reason}").format(reason=plain(message))
        self._status_about = None

    def _chat_key(self, key: str) -> None:
        assert self.chat_input is not None
        if key == ESCAPE:
            self.chat_input = None
        elif key == ENTER:
            text = self.chat_input.strip()
            self.chat_input = None
            if text:
                self.send(Say(text))
        else:
            self.chat_input = edited(self.chat_input, key, CHAT_LIMIT)


def scores_before(scores: list[int], later: Sequence[Event]) -> list[int]:
    """The scores before the events `later`, from the scores after them.

    >>> from oriflamme.engine.events import Scored, Stolen
    >>> scores_before([5, 2], [Scored(seat=0, points=2, reason="tokens"),
    ...                        Stolen(seat=1, victim=0, points=1)])
    [4, 1]
    """
    before = list(scores)
    for e in later:
        if isinstance(e, Scored):
            before[e.seat] -= e.points
        elif isinstance(e, Stolen):
            before[e.seat] -= e.points
            before[e.victim] += e.points
    return before


# What a refusal says, by its code, in the player's language. The server's
# own message is English, meant for client authors, and often more precise
# ("room 3 has no free seat"): an English client shows it as it is, another
# language says the code's sentence (and the server's message where the
# code is not one a player meets).
SERVER_REFUSALS = {
    "room_full": N_("the room has no free seat"),
    "no_such_room": N_("there is no such room (any more)"),
    "no_such_record": N_("there is no such record on this server"),
    "not_permitted": N_("you may not do that"),
    "wrong_state": N_("not now: the room or the game is not ready for it"),
    "rate_limited": N_("too many requests: wait a moment"),
    "too_many_rooms": N_("the server has too many rooms: try again later"),
    "name_taken": N_("that name is taken on this server"),
    "key_required": N_("this server takes only players with a key"),
    "server_busy": N_("the server is busy: try again later"),
    "shutting_down": N_("the server is shutting down"),
    "not_your_turn": N_("it is not your turn"),
    "stale_turn": N_("too late: the game moved on"),
    "illegal_action": N_("that move is not legal now"),
}


def refusal(code: str, message: str) -> str:
    """A server's refusal (its `error`'s code and message) as the player reads it.

    >>> refusal("room_full", "room 3 has no free seat (see docs/PROTOCOL.md, Errors)")
    'room 3 has no free seat'
    """
    said = SERVER_REFUSALS.get(code)
    if said is None or language() == "en":
        return plain(message)
    return _(said)


def refused_text(code: str, message: str) -> str:
    """The status line's "Refused: ..." for a server's refusal (`refusal`)."""
    return _("Refused: {reason}").format(reason=refusal(code, message))


def plain(message: str) -> str:
    """A server's refusal for a player: without the pointer into the protocol's
    documentation (meant for client authors).

    >>> plain("room 1 has no free seat (see docs/PROTOCOL.md, Errors)")
    'room 1 has no free seat'
    """
    return safe(message).split(" (see docs/")[0]

"""A room: its seats, its host, its spectators, its chat, and its games.

How this works
--------------
A `Room` is a plain object driven by its lobby: members enter (`seat`,
`watch`) and leave (`remove`), their requests come in (`handle`), their
connections come and go (`connection_changed`), time passes (`tick`). Each
call returns the effects to carry out: pushes to the members' sessions
(numbered by `Session.push`) and, for the shell, bots to start or stop and
records to keep. `handle` returns an `Outcome`: the error for the sender, if
any, and the effects, which go out after the sender's answer. A refused
request changes nothing and has no effects; the one error that comes with
changes is ``bad_opening`` (the server answered in the seat's place).

The room's life: ``waiting`` for players; the host adds bots and starts the
game once every seat is taken and every player is ready; ``playing``; then
``finished`` (ready flags cleared: play again when everyone is ready), or
back to ``waiting`` if the game was cancelled before it began. When the
host leaves, the next player in seat order becomes host; a room with no
human player left closes once no game is being played, and everyone still
in it gets a last `room_state` with state ``closed``.

A player who leaves during a game keeps their seat until the game ends, as
a name played by the stand-in; the seat is free again afterwards. A player
may also step out of a game and keep their seat (`step_out`, for
`leave_room.keep_seat`): their session goes back to the lobby, the table
sees them away (the stand-in plays their seat once the grace period is
over, as for a player whose connection dropped), and `come_back` seats
them again. Only the members here get the room's pushes: a seat whose
player stepped out shows away, and its session hears nothing of the room
until it comes back (then a snapshot). A game that ends, or is cancelled,
lets the seats kept in it go. While a
seat is so, or its player is away past the grace period, the players still
at the table may end the game by vote (`vote_abort`, counted by the table);
`room_state.abort_votes` shows the votes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from oriflamme.protocol import messages as m
from oriflamme.protocol.errors import (
    BAD_OPENING,
    INVALID_FIELD,
    NOT_PERMITTED,
    ROOM_FULL,
    WRONG_STATE,
    ProtocolError,
    RemoteProtocolError,
)
from oriflamme.protocol.fanout import SharedEncoding
from oriflamme.protocol.record import SeatRecord

from .config import ServerConfig
from .effects import Effect, GameFinished, GameOver, HandedSeat, LogLine, StartBot, StopBot
from .entropy import Entropy
from .referee import GAME_MESSAGES, RebuildFailed
from .sessions import Session
from .table import Table, TablePush, TableUpdate, with_time_left

WAITING, PLAYING, FINISHED, CLOSED = "waiting", "playing", "finished", "closed"
STAND_IN_BOT = "stand_in"  # `seat.bot` while the stand-in plays a player's seat


@dataclass(slots=True)
class Seat:
    """One seat. `session` sits here (a player, or a server bot's session);
    `bot` is the server bot's strategy. `ghost` keeps the name of a player
    who left during a game, until the game ends. `handed`: what a player
    handed over with their seat to the bot now playing it (kept, so that the
    bot can be started again after a restart)."""

    session: Session | None = None
    bot: str | None = None
    ready: bool = False
    ghost: str | None = None
    handed: HandedSeat | None = None

    @property
    def free(self) -> bool:
        return self.session is None and self.ghost is None

    @property
    def human(self) -> bool:
        return self.session is not None and self.bot is None


@dataclass(slots=True)
class Outcome:
    """What a request did: the `error` its sender gets (None: ``ok``), and the
    `effects` to carry out after the answer."""

    error: ProtocolError | None = None
    effects: list[Effect] = field(default_factory=list)


# What a room whose game is kept out of play still takes (`Room.suspend`).
_WHILE_SUSPENDED = (m.LeaveRoom, m.Sync, m.Chat)

# Opens a session for a server bot: (strategy, name) -> (session, token).
BotSessions = Callable[[str, str], tuple[Session, bytes]]


def _refuse(code: str, message: str) -> RemoteProtocolError:
    return RemoteProtocolError(code, message)


class Room:
    """One room; see the module docstring."""

    # The player id of the session in each seat when the last game ended
    # (None: nobody, or a seat taken again since): whose snapshot shows that
    # game as theirs. (A class default: a room saved before it was kept
    # shows its last game to spectators only.)
    finished_by: tuple[int | None, ...] = ()
    # The spectators away when the room closed: nothing is left for them to
    # resume, and they keep no pushes that would tell them so; the lobby
    # lets them go (a class default: set only while a room closes).
    left_away: tuple[Session, ...] = ()
    # Why the room's game is kept out of play (None: it is not): a replay
    # of the journal by this server's version disagreed with what the game
    # did when it was played (`suspend`). A class default: a room saved
    # before suspensions existed is not suspended.
    suspended: str | None = None
    # The facts of a game this version could not rebuild from its log
    # (`server.core.facts`): kept as they were read, and written again.
    unread_game: dict[str, Any] | None = None
    # A game known by its facts, not rebuilt yet (`UnbuiltGame`): `table`
    # rebuilds it at its first use. (A class default: a room pickled by an
    # earlier version has none.)
    _unbuilt: UnbuiltGame | None = None

    def __init__(
        self,
        room_id: int,
        name: str,
        settings: m.RoomSettings,
        *,
        config: ServerConfig,
        entropy: Entropy,
        bot_sessions: BotSessions,
        invite: str | None = None,
    ) -> None:
        self.id = room_id
        self.name = name
        self.settings = settings
        self.invite = invite
        self.config = config
        self._entropy = entropy
        self._bot_sessions = bot_sessions
        self.seats = [Seat() for _ in range(settings.players)]
        self.spectators: list[Session] = []
        self.host: int = 0  # the host's player id, set by the first player seated
        self.state = WAITING
        self._table: Table | None = None
        self.table_players: tuple[int | None, ...] = ()  # who played each seat of the game
        # and their keys, as the game began (None: a bot, or a player without one)
        self.table_keys: tuple[bytes | None, ...] = ()

    def __repr__(self) -> str:
        return f"<Room {self.id} {self.name!r} {self.state}>"

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Unpickling an earlier version's room (a data directory being
        converted): its game was `table`."""
        if "table" in state:
            state["_table"] = state.pop("table")
        self.__dict__.update(state)
        # (before keys: no player had one)
        self.__dict__.setdefault("table_keys", (None,) * len(state.get("table_players", ())))

    # ------------------------------------------------------------ the game

    @property
    def table(self) -> Table | None:
        """The room's game (the one being played, or the last one); a game
        known by its facts only is rebuilt here, at its first use."""
        if self._unbuilt is not None:
            self.build()
        return self._table

    @table.setter
    def table(self, table: Table | None) -> None:
        self._unbuilt = None
        self._table = table

    @property
    def built(self) -> bool:
        """Whether the room's game, if any, is rebuilt (see `UnbuiltGame`)."""
        return self._unbuilt is None

    def keep_unbuilt(self, game: UnbuiltGame) -> None:
        """The room's game is `game`, rebuilt at its first use (`table`)."""
        self._table = None
        self._unbuilt = game

    def build(self) -> None:
        """Rebuild the room's game from its facts, if it is not yet. A game
        whose log this version refuses is kept out of play as at a start
        (`suspended`, its facts kept in `unread_game`), and named in the
        lobby's `build_failures`."""
        game = self._unbuilt
        if game is None:
            return
        self._unbuilt = None
        try:
            self._table = game.build(game.facts)
        except RebuildFailed as exc:
            self._table = None
            self.unread_game = game.facts  # (kept as it is: another version may read it)
            self.suspended = f"this server version cannot take its game up again ({exc})"
            game.failures.append((self.id, self.suspended))

    def game_id(self) -> bytes | None:
        """The id of the room's game (None: it has none), rebuilt or not."""
        if self._unbuilt is not None:
            return bytes(self._unbuilt.facts["game_id"])
        return None if self._table is None else self._table.referee.game_id

    # ------------------------------------------------------------ queries

    @property
    def seated(self) -> int:
        return sum(not s.free for s in self.seats)

    def here(self, index: int) -> Session | None:
        """The session in seat `index`, if it is in the room now (not one
        that stepped out keeping the seat)."""
        session = self.seats[index].session
        if session is None or session.room != self.id or session.seat != index:
            return None
        return session

    def members(self) -> list[Session]:
        """Who is in the room now: its seated members, then its spectators."""
        seated = [s for i in range(len(self.seats)) if (s := self.here(i)) is not None]
        return [*seated, *self.spectators]

    def humans(self) -> list[Session]:
        """The players seated here now (no bot, none who stepped out)."""
        here = (self.here(i) for i, seat in enumerate(self.seats) if seat.human)
        return [s for s in here if s is not None]

    def kept(self) -> list[tuple[int, Session]]:
        """The seats whose players stepped out keeping them, with their sessions."""
        return [
            (index, seat.session)
            for index, seat in enumerate(self.seats)
            if seat.human and seat.session is not None and self.here(index) is None
        ]

    def host_name(self) -> str:
        for s in self.seats:
            if s.session is not None and s.session.player == self.host:
                return s.session.name
        return "nobody"

    def summary(self) -> m.RoomSummary:
        return m.RoomSummary(
            room=self.id,
            name=self.name,
            host=self.host_name(),
            state=self.state if self.state != CLOSED else FINISHED,
            settings=self.settings,
            seated=self.seated,
            spectators=len(self.spectators),
        )

    def my_game(self, index: int, now: float) -> m.MyGame | None:
        """The game in play here as `game_list` shows it to the player of
        seat `index` (None: no game is in play)."""
        table = self.table
        if table is None or not self.in_play() or table.over:
            return None
        referee = table.referee
        return m.MyGame(
            room=self.id,
            name=self.name,
            game=referee.game_id,
            seat=index,
            names=tuple(seat.name[:32] or "?" for seat in referee.seats),
            round=referee.round,
            waiting_for=table.waiting_for(),
            here=self.here(index) is not None,
            time_left=table.time_left(now),
        )

    def waits_for(self, index: int) -> bool:
        """The game in play here waits for seat `index` now (as its facts
        say, for a game not rebuilt yet: asking does not rebuild it)."""
        if not self.in_play():
            return False
        if self._unbuilt is not None:
            waiting = self._unbuilt.waiting_for
            if waiting is not None:
                return index in waiting
        table = self.table
        return table is not None and index in table.waiting_for()

    def next_deadline(self) -> float | None:
        if self.suspended is not None:
            return None
        if self._unbuilt is not None:
            return self._unbuilt.next_deadline()
        if self._table is None:
            return None
        return self._table.next_deadline()

    # ------------------------------------------------------------ members

    def seat(self, session: Session, wanted: int | None, now: float) -> list[Effect]:
        """`session` takes a seat (`join_room`; the creator at the room's birth)."""
        if self.state == PLAYING:
            raise _refuse(WRONG_STATE, f"room {self.id} is playing a game: spectate, or wait")
        if wanted is not None:
            if wanted >= len(self.seats):
                raise _refuse(
                    INVALID_FIELD, f"join_room.seat: room {self.id} has {len(self.seats)} seats"
                )
            if not self.seats[wanted].free:
                raise _refuse(ROOM_FULL, f"seat {wanted} of room {self.id} is taken")
            index = wanted
        else:
            free = [i for i, s in enumerate(self.seats) if s.free]
            if not free:
                raise _refuse(ROOM_FULL, f"room {self.id} has no free seat")
            index = free[0]
        self.seats[index] = Seat(session=session)
        session.room, session.seat = self.id, index
        if index < len(self.finished_by):  # the last game, if any, was not theirs
            self.finished_by = tuple(
                None if i == index else p for i, p in enumerate(self.finished_by)
            )
        if not self.host:
            self.host = session.player
        return [self.event(f"{session.logged_as} took seat {index}"), *self._room_state()]

    def watch(self, session: Session, now: float) -> list[Effect]:
        """`session` watches the room (`spectate`): the room, and the game if one runs."""
        self.build()  # (its game is shown)
        self.spectators.append(session)
        session.room, session.seat = self.id, None
        effects = [self.event(f"{session.logged_as} watches"), *self._room_state()]
        if self.table is not None:
            effects += self._deliver(self.table.snapshot(None, now), only=session)
        return effects

    def remove(self, session: Session, now: float) -> list[Effect]:
        """`session` leaves the room (`leave_room`, or its session expired)."""
        self.build()  # (a seat left during a game changes it)
        effects: list[Effect] = []
        if session in self.spectators:
            self.spectators.remove(session)
            effects.append(self.event(f"{session.logged_as} stopped watching"))
        elif session.seat is not None:
            index = session.seat
            seat = self.seats[index]
            if self.in_play() and self.table is not None and not self.table.over:
                self.seats[index] = Seat(ghost=session.name)
                effects.append(self.event(f"{session.logged_as} left seat {index} during a game"))
                left = f"{session.name} left before every seed was in"
                effects += self._table_update(self.table.leave(index, now), now, cancelled=left)
            else:
                self.seats[index] = Seat()
                effects.append(self.event(f"{session.logged_as} left seat {index}"))
            if seat.bot is not None:
                effects.append(StopBot(session.player))
        session.room, session.seat = None, None
        if session.player == self.host:
            effects += self._pass_host()
        return effects + self._room_state() + self._close_if_empty()

    def step_out(self, session: Session, now: float) -> list[Effect]:
        """`session`, seated here in a game being played, goes back to the
        lobby keeping its seat (`leave_room.keep_seat`): away, as the table
        sees it, until it comes back."""
        self.check_step_out(session)
        index, table = session.seat, self.table
        assert index is not None and table is not None
        session.room, session.seat = None, None
        session.kept_seats[self.id] = index
        effects: list[Effect] = [self.event(f"{session.logged_as} stepped out of seat {index}")]
        update = table.connection(index, False, now)
        return effects + self._room_state() + self._table_update(update, now)

    def check_step_out(self, session: Session) -> None:
        """Raise unless `session` may step out of the game here keeping its
        seat: it has one, in a game being played."""
        if session.seat is None:
            raise _refuse(WRONG_STATE, "spectators have no seat to keep: leave_room")
        if not self.in_play() or self.table is None or self.table.over:
            raise _refuse(
                WRONG_STATE, "no game is being played here: leave_room, without keep_seat"
            )

    def come_back(self, session: Session, now: float) -> list[Effect]:
        """`session` takes back the seat it kept here (`join_room`): a
        snapshot of the room and its game, as at a resume."""
        self.build()  # (its game is shown)
        index = session.kept_seats.pop(self.id)
        session.room, session.seat = self.id, index
        effects: list[Effect] = [self.event(f"{session.logged_as} came back to seat {index}")]
        players = [seat.session.player for seat in self.seats if seat.human and seat.session]
        if self.host not in players:
            effects += self._pass_host()  # (the host left while every player was out)
        effects += self.snapshot(session, now)
        return effects + self.connection_changed(session, now)

    def let_go_kept(self, session: Session, now: float) -> list[Effect]:
        """`session`, which kept a seat here, is gone for good (its session
        expired): as if it had come back and left."""
        index = session.kept_seats.pop(self.id)
        session.room, session.seat = self.id, index
        return self.remove(session, now)

    def _let_kept_go(self) -> list[Effect]:
        """The game is over or gone: the seats kept in it are free (their
        players are in the lobby, or in other rooms), and a host who kept
        one is host no more."""
        kept = self.kept()
        for index, session in kept:
            del session.kept_seats[self.id]
            self.seats[index] = Seat()
        if any(session.player == self.host for _, session in kept):
            return self._pass_host()
        return []

    def _pass_host(self) -> list[Effect]:
        """The first player here in seat order is host, or else, while a
        game is played, the first who stepped out keeping a seat."""
        humans = self.humans()
        if not humans and self.in_play():
            humans = [session for _, session in self.kept()]
        if not humans:
            return []
        self.host = humans[0].player
        return [self.event(f"{humans[0].logged_as} is the host now")]

    def _game_over(self) -> GameOver:
        assert self.table is not None
        bots = tuple(i for i, seat in enumerate(self.seats) if seat.bot is not None)
        return GameOver(self.table.referee.game_id, bots)

    def event(self, text: str) -> LogLine:
        """A log line about this room."""
        return LogLine(f"room {self.id}: {text}")

    def _close_if_empty(self) -> list[Effect]:
        """Close the room when no human is seated and no game is being played."""
        if self.humans() or self.in_play() or self.state == CLOSED:
            return []
        self.state = CLOSED
        effects: list[Effect] = [self.event("closed: no player is left in it")]
        self.left_away = tuple(s for s in self.spectators if not s.connected)
        for session in self.members():
            effects += session.push(m.RoomState, **self._room_fields(session))
            if session.bot is not None:
                effects.append(StopBot(session.player))
            session.room, session.seat = None, None
        self._let_kept_go()  # (no human is here to be host)
        self.seats = [Seat() for _ in self.seats]
        self.spectators = []
        return effects

    def connection_changed(self, session: Session, now: float) -> list[Effect]:
        """`session`'s connection came or went: the room shows it (a
        seat's; a spectator's shows nowhere); a seated player away during a
        game may be stood in for."""
        if session.seat is None:
            return []
        if not session.connected:  # (a game not rebuilt notes it in its facts)
            return self.connections_gone([session], now)
        self.build()
        effects = self._room_state()
        if self.table is not None and session.seat is not None and self.in_play():
            update = self.table.connection(session.seat, session.connected, now)
            effects += self._table_update(update, now)
        return effects

    def connections_gone(self, sessions: list[Session], now: float) -> list[Effect]:
        """The connections of `sessions`, members here, are all gone at once
        (the server started again): as `connection_changed` for each, with
        one `room_state` for all."""
        seats = [s.seat for s in sessions if s.seat is not None]
        if not seats:
            return []
        effects: list[Effect] = []
        for seat in seats if self.in_play() else ():
            if self._unbuilt is not None:  # (noted in its facts, as the table would)
                self._unbuilt.went_away(seat, now)
            elif self._table is not None:
                effects += self._table_update(self._table.connection(seat, False, now), now)
        return self._room_state() + effects

    def refreshed(self, session: Session, message: m.Message, now: float) -> m.Message:
        """A push `session` missed, as it is sent again now (see `Table.refreshed`)."""
        self.build()
        if self.table is None:
            return with_time_left(message, 0)
        return self.table.refreshed(message, session.seat, now)

    def snapshot(self, session: Session, now: float) -> list[Effect]:
        """Everything `session` needs to pick up the room and its game."""
        self.build()
        effects = session.push(m.RoomState, **self._room_fields(session))
        if self.table is not None and self._shows_game(session):
            effects += self._deliver(self.table.snapshot(session.seat, now), only=session)
        if self.suspended is not None:  # (the notice again: a snapshot has no chat)
            text = (self.suspended + ".")[:500]
            effects += session.push(m.ChatMessage, room=self.id, name="server", text=text)
        return effects

    def _shows_game(self, session: Session) -> bool:
        """Whether `session`'s snapshot shows the room's game: while it is
        played, to everyone in the room; once it ended, to spectators and to
        whoever played it in the seat they still hold. Who took a seat after
        it ended gets the room alone, as in a room waiting for players: the
        game's `game_started`, with their seat, would not be theirs."""
        seat = session.seat
        if self.state == PLAYING or seat is None:
            return True
        return seat < len(self.finished_by) and self.finished_by[seat] == session.player

    # ------------------------------------------------------------ requests

    def handle(self, session: Session, message: m.Message, now: float) -> Outcome:
        """A request from a member (see the module docstring)."""
        self.build()
        try:
            if self.suspended is not None and not isinstance(message, _WHILE_SUSPENDED):
                raise _refuse(WRONG_STATE, self.suspended)
            if isinstance(message, GAME_MESSAGES):
                return self._game_message(session, message, now)
            if isinstance(message, m.Chat):
                return Outcome(effects=self._chat(session, message.text))
            handler = self._HANDLERS.get(type(message))
            if handler is None:
                raise _refuse(WRONG_STATE, f"{message.TYPE} is not a request for a room")
            return Outcome(effects=handler(self, session, message, now))
        except RemoteProtocolError as refusal:
            return Outcome(refusal)

    def _host_only(self, session: Session, what: str) -> None:
        if session.player != self.host:
            raise _refuse(NOT_PERMITTED, f"only the host may {what}")
        if self.state == PLAYING:
            raise _refuse(WRONG_STATE, f"a game is being played: you cannot {what} now")

    def _ready(self, session: Session, message: m.Ready, now: float) -> list[Effect]:
        if session.seat is None:
            raise _refuse(WRONG_STATE, "spectators are not ready or not: take a seat first")
        if self.state == PLAYING:
            raise _refuse(WRONG_STATE, "a game is being played")
        self.seats[session.seat].ready = message.ready
        return self._room_state()

    def _add_bot(self, session: Session, message: m.AddBot, now: float) -> list[Effect]:
        self._host_only(session, "add a bot")
        if message.strategy not in self.config.strategies:
            raise _refuse(
                INVALID_FIELD,
                f"add_bot.strategy: this server has {', '.join(self.config.strategies)},"
                f" not {message.strategy!r}",
            )
        if message.seat is not None:
            if message.seat >= len(self.seats):
                raise _refuse(
                    INVALID_FIELD, f"add_bot.seat: room {self.id} has {len(self.seats)} seats"
                )
            if not self.seats[message.seat].free:
                raise _refuse(ROOM_FULL, f"seat {message.seat} is taken")
            index = message.seat
        else:
            free = [i for i, s in enumerate(self.seats) if s.free]
            if not free:
                raise _refuse(ROOM_FULL, f"room {self.id} has no free seat")
            index = free[0]
        return self._seat_bot(index, message.strategy, f"Bot {index}")

    def _seat_bot(
        self, index: int, strategy: str, name: str, handed: HandedSeat | None = None
    ) -> list[Effect]:
        bot, token = self._bot_sessions(strategy, name)
        bot.room, bot.seat = self.id, index
        self.seats[index] = Seat(session=bot, bot=strategy, ready=True, handed=handed)
        return [
            self.event(f"a {strategy} bot, {bot.logged_as}, took seat {index}"),
            StartBot(bot.player, self.id, index, strategy, token, handed),
            *self._room_state(),
        ]

    def restart_bots(self, new_token: Callable[[Session], bytes]) -> list[Effect]:
        """The server started again: its bots, run anew, each with a new token
        (none for a game kept out of play: it has nothing for them to do)."""
        if any(seat.bot is not None for seat in self.seats):
            self.build()  # (a game this version refuses starts none)
        if self.suspended is not None:
            return []
        return [
            StartBot(
                seat.session.player, self.id, index, seat.bot, new_token(seat.session), seat.handed
            )
            for index, seat in enumerate(self.seats)
            if seat.session is not None and seat.bot is not None
        ]

    def _remove_bot(self, session: Session, message: m.RemoveBot, now: float) -> list[Effect]:
        self._host_only(session, "remove a bot")
        if message.seat >= len(self.seats) or self.seats[message.seat].bot is None:
            raise _refuse(WRONG_STATE, f"no bot sits in seat {message.seat}")
        bot = self.seats[message.seat].session
        assert bot is not None
        return self.remove(bot, now)

    def _start(self, session: Session, message: m.StartGame, now: float) -> list[Effect]:
        self._host_only(session, "start the game")
        if any(s.free or s.ghost is not None for s in self.seats):
            raise _refuse(WRONG_STATE, "every seat must be taken before the game starts")
        waiting = [s.session.name for s in self.seats if s.human and not s.ready and s.session]
        if waiting:
            raise _refuse(WRONG_STATE, f"not everyone is ready: {', '.join(waiting)}")
        n = len(self.seats)
        if self.settings.first_player == "random":
            if message.first_player is not None:
                raise _refuse(
                    INVALID_FIELD,
                    "start_game.first_player: this room draws the first player at random",
                )
            first = self._entropy.choice(range(n))
        elif message.first_player is not None:
            if message.first_player >= n:
                raise _refuse(INVALID_FIELD, f"start_game.first_player: the table has {n} seats")
            first = message.first_player
        else:
            assert session.seat is not None
            first = session.seat
        records = [
            SeatRecord(s.session.name if s.session else "?", bot=s.bot is not None)
            for s in self.seats
        ]
        self.table_keys = tuple(
            None if s.bot is not None or s.session is None else s.session.key for s in self.seats
        )
        self.table = Table(
            room=self.id,
            settings=self.settings,
            seats=records,
            first_player=first,
            config=self.config,
            entropy=self._entropy,
            keys=self.table_keys,  # (a seat with a key signs its decisions)
        )
        self.state = PLAYING
        self.table_players = tuple(
            None if s.bot is not None or s.session is None else s.session.player for s in self.seats
        )
        started = f"game {self.table.record_id} started: {n} seats, seat {first} plays first"
        effects = [self.event(started), *self._room_state()]
        effects += self._table_update(self.table.start(now), now)
        for index, seat in enumerate(self.seats):
            if seat.session is not None and not seat.session.connected:
                effects += self._table_update(self.table.connection(index, False, now), now)
        return effects

    def _sync(self, session: Session, message: m.Sync, now: float) -> list[Effect]:
        return self.snapshot(session, now)

    def _leave(self, session: Session, message: m.LeaveRoom, now: float) -> list[Effect]:
        return self.remove(session, now)

    def _vote_abort(self, session: Session, message: m.VoteAbort, now: float) -> list[Effect]:
        if session.seat is None or self.seats[session.seat].bot is not None:
            raise _refuse(NOT_PERMITTED, "only the players at the table vote to end a game")
        if self.table is None or self.state != PLAYING:
            raise _refuse(WRONG_STATE, "no game is being played in this room")
        update = self.table.vote_abort(session.seat, message.game, now)
        if update.error is not None:
            raise update.error
        effects: list[Effect] = []
        if update.seats_changed:  # (not a vote again)
            voted = f"{session.logged_as} in seat {session.seat} votes to end the game"
            effects.append(self.event(voted))
        return effects + self._table_update(update, now)

    def _chat(self, session: Session, text: str) -> list[Effect]:
        effects: list[Effect] = []
        shared = SharedEncoding()
        for member in self.members():
            effects += member.push(
                m.ChatMessage,
                shared,
                room=self.id,
                name=session.name,
                text=text,
                player=session.player,
            )
        return effects

    def notice(self, text: str) -> list[Effect]:
        """A chat line from the server itself (no player)."""
        effects: list[Effect] = []
        shared = SharedEncoding()
        text = text[:500]
        for member in self.members():
            effects += member.push(m.ChatMessage, shared, room=self.id, name="server", text=text)
        return effects

    _HANDLERS: dict[type[m.Message], Callable[[Room, Session, Any, float], list[Effect]]] = {
        m.Ready: _ready,
        m.AddBot: _add_bot,
        m.RemoveBot: _remove_bot,
        m.StartGame: _start,
        m.Sync: _sync,
        m.LeaveRoom: _leave,
        m.VoteAbort: _vote_abort,
    }

    # ------------------------------------------------------------ the game

    def _game_message(self, session: Session, message: m.Message, now: float) -> Outcome:
        if session.seat is None:
            raise _refuse(NOT_PERMITTED, "spectators do not play")
        if self.table is None or self.state != PLAYING:
            raise _refuse(WRONG_STATE, "no game is being played in this room")
        update = self.table.receive(session.seat, message, now)
        effects: list[Effect] = []
        if update.error is not None and update.error.code == BAD_OPENING:
            # (not why: the reason names the card it claimed, which others may not know)
            failed = f"{session.logged_as} in seat {session.seat} failed an opening, and forfeits"
            effects.append(self.event(failed))
        if isinstance(message, m.HandOver) and update.seats_changed:
            effects += self._hand_over(session, update, now)
        effects += self._table_update(update, now)
        return Outcome(update.error, effects)

    def _hand_over(self, session: Session, update: TableUpdate, now: float) -> list[Effect]:
        """The player leaves; a server bot takes the seat with its secrets (or,
        if they failed their check, the stand-in plays it)."""
        index = session.seat
        assert index is not None
        session.room, session.seat = None, None
        effects: list[Effect] = []
        if update.handed is not None:
            effects.append(self.event(f"{session.logged_as} handed seat {index} to a bot"))
            _, handed = update.handed
            name = f"{session.name[:26]} (bot)"  # names are at most 32 characters
            effects += self._seat_bot(index, "heuristic", name, handed)
            assert self.table is not None
            effects += self._table_update(self.table.connection(index, False, now), now)
        else:
            self.seats[index] = Seat(ghost=session.name)
            effects.append(self.event(f"{session.logged_as} left seat {index} to a stand-in"))
        if session.player == self.host:
            effects += self._pass_host()
        return effects

    def tick(self, now: float) -> list[Effect]:
        if self._unbuilt is not None:
            due = self._unbuilt.next_deadline()
            if not self.in_play() or due is None or due > now:
                return []  # (nothing is due: a game at rest does nothing at a tick)
        if self.table is None or not self.in_play():
            return []
        return self._table_update(self.table.tick(now), now)

    def _table_update(
        self,
        update: TableUpdate,
        now: float,
        *,
        cancelled: str = "a seat did not commit to its seed in time",
    ) -> list[Effect]:
        """What a change at the table makes of the room; `cancelled`: why, if
        it cancels the game."""
        effects = self._deliver(update.pushes)
        if update.seats_changed:
            effects += self._room_state()
        if update.cancelled:
            assert self.table is not None
            logged = f"game {self.table.record_id} cancelled before it began: {cancelled}"
            effects += [self.event(logged), self._game_over()]
            self.state = WAITING
            self.table = None  # a game that never began: nothing to show of it
            for seat in self.seats:
                seat.ready = seat.bot is not None
                if seat.ghost is not None:
                    seat.ghost = None
            effects += self._let_kept_go()
            effects += self._room_state()
            effects += self.notice(f"The game was cancelled before it began: {cancelled}.")
            effects += self._close_if_empty()
        if update.record is not None:
            assert self.table is not None
            effects.append(
                GameFinished(
                    self.id,
                    self.table.record_id,
                    update.record,
                    self.name,
                    self.table_players,
                    self.table_keys,
                )
            )
            failed = [seat for seat, v in enumerate(update.record.verdicts) if not v.ok]
            said = f"; seats that failed their checks: {failed}" if failed else ""
            results = update.record.results
            if not results.complete:
                said = f", ended by the vote of seats {list(results.votes)}{said}"
            effects += [
                self.event(f"game {self.table.record_id} finished{said}"),
                self._game_over(),
            ]
            self.state = FINISHED
            effects += self._let_kept_go()
            self.finished_by = tuple(
                None if seat.session is None else seat.session.player for seat in self.seats
            )
            for index, seat in enumerate(self.seats):
                if seat.ghost is not None:
                    self.seats[index] = Seat()
                seat.ready = seat.bot is not None
            effects += self._room_state()
            effects += self._close_if_empty()
        return effects

    def in_play(self) -> bool:
        """A game is being played here, and not kept out of play."""
        return self.state == PLAYING and self.suspended is None

    def suspend(self, why: str) -> list[Effect]:
        """Keep this room's game out of play: a replay of the journal by this
        server's version came out otherwise than the game did when it was
        played (`why` says where). Its timers stop, the stand-in plays no
        seat, its server bots are not run again, and every request but
        `leave_room`, `sync` and `chat` is refused ``wrong_state`` with
        `suspended`; its members are told in a notice. Its players may leave
        (their seats are then free, and the room closes with its last one);
        their sessions are not held by the game."""
        assert self.table is not None
        self.suspended = (
            f"this game could not be restored by this server version: {why}."
            " It is kept out of play (the server's operator is told); leave the room"
        )
        logged = f"game {self.table.record_id} kept out of play: {why}"
        return [self.event(logged), *self._room_state(), *self.notice(self.suspended + ".")]

    # ------------------------------------------------------------ pushes

    def _deliver(self, pushes: list[TablePush], only: Session | None = None) -> list[Effect]:
        effects: list[Effect] = []
        for push in pushes:
            if push.seat is None:
                targets = self.spectators
            else:
                occupant = self.here(push.seat)
                targets = [occupant] if occupant is not None else []
            shared = push.shared
            if shared is None and len(targets) > 1:
                shared = SharedEncoding()  # the spectators' copies
            version = push.version
            for session in targets:
                if (only is None or session is only) and (
                    version is None or version == session.version
                ):
                    effects += session.push(push.kind, shared, **push.made())
        return effects

    def _room_fields(
        self, session: Session, seats: tuple[m.RoomSeat, ...] | None = None
    ) -> dict[str, Any]:
        """The fields of `session`'s `room_state` (`seats`: the room's, if
        made already for another member)."""
        return dict(
            room=self.id,
            name=self.name,
            settings=self.settings,
            host=self.host,
            state=self.state,
            seats=self._room_seats() if seats is None else seats,
            spectators=len(self.spectators),
            seat=session.seat if session.room == self.id else None,
            invite=self.invite,
            abort_votes=self._abort_votes(),
        )

    def _abort_votes(self) -> tuple[int, ...] | None:
        """`room_state.abort_votes`, from the table or, not rebuilt yet, its facts."""
        if self.state != PLAYING:
            return None
        if self._unbuilt is not None:
            return self._unbuilt.abort_votes
        return None if self._table is None else self._table.abort_votes()

    def _stood_in(self, seat: int) -> bool:
        """The stand-in plays `seat`, as the table or, not rebuilt yet, its facts say."""
        if self.state != PLAYING:
            return False
        if self._unbuilt is not None:
            return self._unbuilt.stood_in(seat)
        return self._table is not None and self._table.stood_in(seat)

    def _room_seats(self) -> tuple[m.RoomSeat, ...]:
        """The room's seats as `room_state` shows them."""
        seats = []
        for index, seat in enumerate(self.seats):
            stood_in = self._stood_in(index)
            if seat.session is not None:
                who = seat.session
                seats.append(
                    m.RoomSeat(
                        seat=index,
                        name=who.name,
                        player=None if seat.bot is not None else who.player,
                        bot=STAND_IN_BOT if stood_in else seat.bot,
                        ready=seat.ready,
                        connected=who.connected and self.here(index) is who,
                        rating=who.rating,
                        key=None if seat.bot is not None else who.key,
                    )
                )
            elif seat.ghost is not None:
                seats.append(
                    m.RoomSeat(
                        seat=index, name=seat.ghost, bot=STAND_IN_BOT, ready=False, connected=False
                    )
                )
            else:
                seats.append(m.RoomSeat(seat=index, ready=False, connected=False))
        return tuple(seats)

    def members_changed(self) -> list[Effect]:
        """A member took another name, or another rating: every member is
        told (`room_state`)."""
        return self._room_state()

    def _room_state(self) -> list[Effect]:
        """`room_state` to every member: each seat its own, the spectators
        connected one they share (encoded once; away, they get none)."""
        effects: list[Effect] = []
        seats = self._room_seats()  # (the same for every member)
        for index in range(len(self.seats)):
            if (session := self.here(index)) is not None:
                effects += session.push(m.RoomState, **self._room_fields(session, seats))
        watching = [s for s in self.spectators if s.connected]
        if watching:
            fields = self._room_fields(watching[0], seats)
            shared = SharedEncoding() if len(watching) > 1 else None
            for session in watching:
                effects += session.push(m.RoomState, shared, **fields)
        return effects


@dataclass
class UnbuiltGame:
    """A room's game known by its facts (`server.core.facts`), not rebuilt
    yet: a start rebuilds each game at its first use, or when the server
    has nothing else to do (`Lobby.build_some`), not all before it serves.
    Until then the room reads in its facts what it needs of the game when
    nothing happens in it: when its next deadline is (`next_deadline`),
    which seats the stand-in plays and the votes to end it (`stood_in`,
    `abort_votes`: as the table said when the facts were taken), and a
    player who goes away is noted there (`went_away`), as at a start, when
    every player has. Anything else rebuilds it (`build`, which raises
    `RebuildFailed`); failures go to `failures` (the lobby's)."""

    facts: dict[str, Any]
    build: Callable[[dict[str, Any]], Table]
    grace: float
    failures: list[tuple[int, str]]

    @property
    def _timers(self) -> dict[str, Any]:
        timers: dict[str, Any] = self.facts["timers"]
        return timers

    def next_deadline(self) -> float | None:
        """As `Table.next_deadline`."""
        timers = self._timers
        times = [t + self.grace for t in timers["away_since"] if t is not None]
        if timers["deadline"] is not None:
            times.append(timers["deadline"])
        return min(times, default=None)

    def stood_in(self, seat: int) -> bool:
        timers = self._timers
        return bool(timers["stood_in"][seat] or timers["left"][seat])

    @property
    def waiting_for(self) -> tuple[int, ...] | None:
        """As `Table.waiting_for` (None: facts of before it was kept)."""
        waiting = self.facts["view"].get("waiting_for")
        return None if waiting is None else tuple(waiting)

    @property
    def abort_votes(self) -> tuple[int, ...] | None:
        votes = self.facts["view"]["abort_votes"]
        return None if votes is None else tuple(votes)

    def went_away(self, seat: int, now: float) -> None:
        """As `Table.connection(seat, False, now)`."""
        timers = self._timers
        if timers["left"][seat] or self.facts["view"]["over"]:
            return
        if timers["away_since"][seat] is None and not timers["stood_in"][seat]:
            timers["away_since"][seat] = now

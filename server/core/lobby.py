"""The lobby: every session and every room of a server, and what routes between them.

How this works
--------------
`Lobby` is the server's whole state without any I/O. Its inputs are named
by connection ids the shell chooses: a `hello` (`hello`), any later request
(`request`), a connection gone (`closed`), and time passing (`tick`, with
the current time). Each returns the effects to carry out (`effects`):
frames to send on connections, connections to close, bots to start or stop,
records to keep. Messages arrive already decoded and checked by the
protocol's `ServerConnection` (see `gateway`, which puts the two together);
what the lobby refuses it answers with an `error`, and a refused request
changes nothing.

Requests answered here: `hello` (a new session, or a resumed one, with the
pushes it missed or a snapshot), `ping`, `list_rooms`, `create_room`,
`join_room` and `spectate` (by room id, or by invite code for a private
room), `list_records` (from the index of finished games the lobby keeps)
and `get_record` (the shell reads the record: a `FetchRecord` effect, whose
answer `Gateway.record_loaded` sends). Everything else comes from a member
of a room and goes to the room.

A session whose connection is gone keeps its place: seated in a game being
played, until the game ends; otherwise for `session_ttl` seconds (or
`lobby_ttl`, if it never sat or watched in a room), after which it leaves
its room and is forgotten. What one client can hold is bounded: sessions
from one address (`sessions_per_address`) and in all (`max_sessions`),
spectators in a room (`spectators_per_room`). Past a bound, the session
away longest that no game holds is let go first (`_spare`): a player
seated in a game always keeps their place.
"""

from __future__ import annotations

import heapq
import re
import traceback
from collections import deque
from collections.abc import Hashable, Iterable
from dataclasses import replace
from typing import Any

from oriflamme.protocol import identity
from oriflamme.protocol import messages as m
from oriflamme.protocol.errors import (
    BAD_TOKEN,
    INVALID_FIELD,
    NAME_TAKEN,
    NO_SUCH_RECORD,
    NO_SUCH_ROOM,
    NOT_PERMITTED,
    RATE_LIMITED,
    ROOM_FULL,
    SERVER_BUSY,
    SESSION_REPLACED,
    TOO_MANY_ROOMS,
    UNSUPPORTED_VERSION,
    WRONG_STATE,
    RemoteProtocolError,
)
from oriflamme.protocol.fanout import SharedEncoding
from oriflamme.protocol.record import FAILED

from .config import ServerConfig
from .effects import Close, Effect, Fault, FetchRecord, GameFinished, LogLine, Send
from .entropy import Entropy, KeyedEntropy, SystemEntropy
from .names import Names
from .ratings import Ratings
from .room import CLOSED, FINISHED, PLAYING, WAITING, Outcome, Room
from .sessions import UNCHOSEN, Session, Sessions
from .table import with_time_left

# Invite codes: 8 symbols of Crockford's base 32 (no I, L, O, U), shown
# "KQ7M-P2XD"; read without regard to case, dashes, or O/I/L for 0/1/1.
INVITE_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_READ_AS = str.maketrans({"O": "0", "I": "1", "L": "1"})
ROOM_LIST_MAX = 200
RECORDS_LISTED = 200  # the finished games a player's `list_records` shows, at most
# The keys with no session now whose finished games are kept for their next
# one (the oldest go first past this: each keeps up to `RECORDS_LISTED`).
KEYS_REMEMBERED = 10_000
# This server's record ids: the game id in lowercase hex (and nothing that
# could be a path).
RECORD_ID = re.compile(r"[0-9a-f]{32}")
_LIST_ORDER = {WAITING: 0, PLAYING: 1, FINISHED: 2, CLOSED: 3}


def normalize_invite(code: str) -> str:
    """The canonical form of an invite code as a person may type it.

    >>> normalize_invite("kq7m-p2xo")
    'KQ7MP2X0'
    """
    return code.upper().replace("-", "").translate(_READ_AS)


def _highest_shared(hello: m.Hello) -> int:
    """The version a new session takes: the highest both sides speak (the
    gateway refused a hello that shares none)."""
    return max(set(hello.versions) & set(m.SUPPORTED_VERSIONS))


def _error(code: str, message: str, request: m.Message) -> m.Error:
    error = RemoteProtocolError(code, message, id=getattr(request, "id", None))
    return m.error_message(error)


class Lobby:
    """The server's state; see the module docstring."""

    def __init__(self, config: ServerConfig | None = None, entropy: Entropy | None = None) -> None:
        self.config = config if config is not None else ServerConfig()
        self._entropy = entropy if entropy is not None else SystemEntropy()
        self.sessions = Sessions(
            self._entropy, history=self.config.history, history_bytes=self.config.history_bytes
        )
        self.rooms: dict[int, Room] = {}
        self._invites: dict[str, int] = {}
        self._next_room = 1
        self._conns: dict[Hashable, Session | None] = {}
        self.conns_version = 0  # (one more at each change to `_conns`: `facts._lobby_row`)
        # Finished games, newest last, and who played in them: each summary
        # is kept while a session that played it is (its `list_records`).
        self.finished: dict[str, m.RecordSummary] = {}
        self._played: dict[int, list[tuple[str, int]]] = {}  # player -> (record id, seat)
        self._listed_by: dict[str, int] = {}  # record id -> how many `_played` name it
        # Rooms whose game is not rebuilt yet (`room.UnbuiltGame`: a start
        # rebuilds them lazily), and the games that could not be (room id,
        # why), until the shell logs them (`take_build_failures`).
        self.unbuilt: list[int] = []
        self.build_failures: list[tuple[int, str]] = []
        # The names keys hold here (docs/PROTOCOL.md, "Keys and the handshake").
        self.names = Names()
        self.ratings = Ratings()  # (`ratings`: which games are rated)
        # The finished games of keys with no session now, oldest key first:
        # a key's next session lists them (`_played` again).
        self._played_by_key: dict[bytes, list[tuple[str, int]]] = {}
        self._server_key: bytes | None = None
        self._derived_anew()

    # Deadlines are kept, not looked up at every input in every room and
    # every session away. `next_deadline` asks again only the rooms an input
    # may have changed (`_touched`: the room of the session it came from,
    # before and after; at a tick, the rooms whose deadline came; every room
    # at a restart), and keeps the others' in a heap. The sessions away are
    # in a heap of their expiries, pushed when they leave; one found held by
    # the game its player is seated at waits apart (`_held_away`) until its
    # room is touched again. None of it is pickled: a lobby restored from a
    # snapshot starts anew.
    #
    # The same rooms touched are those whose facts may have changed: they
    # are gathered for the next taking of the facts (`changes_since`), with
    # the sessions that marked themselves changed (`Sessions.changed`), so
    # that a taking makes rows of those only, not of every room and session.

    _KEPT = (
        "_touched",
        "_facts_rooms",
        "_changes_taker",
        "_room_deadlines",
        "_deadline_heap",
        "_expiry_heap",
        "_held_away",
        "_told_waiting",
    )

    def _derived_anew(self) -> None:
        """What the lobby keeps that is read from the rest, made anew (at
        its birth, and when it is rebuilt from facts or a pickle): the
        deadlines kept, the seats kept in games, who was told of which."""
        self._touched: set[int] = set(self.rooms)
        self._facts_rooms: set[int] = set(self.rooms)  # (touched since the facts' taking)
        self._changes_taker: object | None = None  # (who took them last: `changes_since`)
        self._room_deadlines: dict[int, float] = {}
        self._deadline_heap: list[tuple[float, int]] = []
        self._expiry_heap: list[tuple[float, int]] | None = None  # made at first use
        self._held_away: dict[int, set[int]] = {}  # room id -> players away, held there
        # The seats kept in games (`Session.kept_seats`) are the rooms'
        # seats whose players stepped out: read there again. And which
        # sessions the last `games_waiting` told of each room (room id ->
        # players), so that a room's change reaches those it let go too.
        self._told_waiting: dict[int, set[int]] = {}
        for session in self.sessions:
            session.kept_seats.clear()
            for room_id in session.waiting:
                self._told_waiting.setdefault(room_id, set()).add(session.player)
        for room_id in sorted(self.rooms):
            for index, session in self.rooms[room_id].kept():
                session.kept_seats[room_id] = index

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        for name in self._KEPT:
            state.pop(name, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.__dict__.setdefault("unbuilt", [])
        self.__dict__.setdefault("build_failures", [])
        for summary in self.finished.values():  # (pickled before ratings: a slot unset)
            if not hasattr(summary, "rating"):
                object.__setattr__(summary, "rating", None)
        self.__dict__.setdefault("names", Names())
        self.__dict__.setdefault("ratings", Ratings())
        self.__dict__.setdefault("_played_by_key", {})
        self.__dict__.setdefault("_server_key", None)
        self.__dict__.setdefault("conns_version", 0)
        self._derived_anew()
        if "_listed_by" not in state:  # saved before the index was bounded
            self._played = {p: g for p, g in self._played.items() if p in self.sessions.by_player}
            self._listed_by = {}
            for games in self._played.values():
                for record_id, _ in games:
                    self._listed_by[record_id] = self._listed_by.get(record_id, 0) + 1
            self.finished = {r: s for r, s in self.finished.items() if r in self._listed_by}

    @property
    def server_id(self) -> bytes:
        """This server's public identity, sent in every `welcome`: from its
        entropy (derived from a data directory's key, so it outlives a
        restart; never from the journal)."""
        return self._entropy.server_id()

    def server_key_seed(self) -> bytes:
        """The private bytes of this server's signing key (Ed25519): from
        its entropy, as `server_id` (the gateway signs its challenges)."""
        return self._entropy.server_key_seed()

    @property
    def server_key(self) -> bytes:
        """This server's public key, sent in every `welcome`."""
        if self._server_key is None:
            self._server_key = identity.public_bytes(identity.private_key(self.server_key_seed()))
        return self._server_key

    def _touch(self, session: Session | None) -> None:
        """An input from `session` may have changed its room's deadline."""
        if session is not None and session.room is not None:
            self._touched.add(session.room)

    # ------------------------------------------------------------ connections

    def hello(
        self,
        conn: Hashable,
        hello: m.Hello,
        now: float,
        *,
        address: str | None = None,
        version: int | None = None,
    ) -> list[Effect]:
        """The first message of connection `conn`, from `address` (None: not
        counted): welcome, with a new session or the one `hello.token` names
        (and what it missed); or a fatal error. A hello with a `key` has
        proved it (the gateway checked its `prove`): with no token, it
        resumes the session of its key, if there is one."""
        key = hello.key
        if hello.token is None:
            kept = None if key is None else self.sessions.by_key.get(key)
            if kept is not None:
                return self.resume(conn, kept.player, True, hello, now, version=version)
            name = hello.name if key is None else (self.names.name_of(key) or hello.name)
            refusal = self._name_refused("hello.name", name, key)
            if refusal is not None:
                refusal.id, refusal.fatal = hello.id, True  # (no session: the connection ends)
                return [Close(conn, m.error_message(refusal))]
            effects, full = self._make_room(address, now)
            if full is not None:
                return [*effects, Close(conn, _error(SERVER_BUSY, full, hello))]
            if version is None:  # (a replay gives the version chosen then)
                version = _highest_shared(hello)
            session, token = self.sessions.open(name, address=address, key=key, version=version)
            if key is not None:
                self.names.claim(key, name)
                session.rating = self.ratings.shown(key)
                played = self._played_by_key.pop(key, None)
                if played is not None:  # (its games of before: listed again)
                    self._played[session.player] = played
            return effects + self._attach(conn, session, token, hello, resumed=False, now=now)
        found = self.sessions.find(hello.token)
        if found is not None and found.key != key:
            found = None  # (a key's session resumes only with that key proved)
        if found is None:
            return [
                Close(
                    conn,
                    _error(
                        BAD_TOKEN,
                        "this session token is unknown or expired: connect without one"
                        " for a new session",
                        hello,
                    ),
                )
            ]
        current_one = self.sessions.presented_current(found, hello.token)
        return self.resume(conn, found.player, current_one, hello, now)

    # Whether the last resume sent the pushes missed (True) or a snapshot
    # (False): the journal notes it, so that a replay does the same even
    # where it keeps fewer pushes (a lobby rebuilt from facts keeps the
    # newest few): the pushes are numbered alike, then.
    resumed_with_missed: bool = False

    def resume(
        self,
        conn: Hashable,
        player: int,
        current_one: bool,
        hello: m.Hello,
        now: float,
        *,
        missed: bool | None = None,
        version: int | None = None,
    ) -> list[Effect]:
        """Resume the session of `player` on `conn` (its token was checked, and
        was its current one or the previous): the connection it had is closed,
        a new token is made, and it gets what it missed. `missed`, in a
        replay: whether the pushes missed were sent (rather than a snapshot)
        when it was taken (None: as the pushes kept allow); `version`, in a
        replay: the version a server bot's session took then."""
        found = self.sessions.by_player[player]
        if found.version == UNCHOSEN:  # (a server bot's session, at its first hello)
            found.version = _highest_shared(hello) if version is None else version
        if found.version not in hello.versions:
            refusal = RemoteProtocolError(
                UNSUPPORTED_VERSION,
                f"this session speaks protocol version {found.version}: offer it to resume",
                id=hello.id,
                fatal=True,
                versions=(found.version,),
            )
            return [Close(conn, m.error_message(refusal))]
        effects: list[Effect] = []
        if found.conn is not None:
            old = found.conn
            replaced = RemoteProtocolError(
                SESSION_REPLACED, "another connection resumed this session"
            )
            effects.append(Close(old, m.error_message(replaced)))
            self._conns[old] = None
            self.conns_version += 1
        token = self.sessions.rotate_from(found, current_one)
        return effects + self._attach(
            conn, found, token, hello, resumed=True, now=now, missed_noted=missed
        )

    def _attach(
        self,
        conn: Hashable,
        session: Session,
        token: bytes,
        hello: m.Hello,
        *,
        resumed: bool,
        now: float,
        missed_noted: bool | None = None,
    ) -> list[Effect]:
        self.sessions.connected(session, conn)
        self._conns[conn] = session
        self.conns_version += 1
        self._touch(session)
        effects: list[Effect] = [
            Send(
                conn,
                m.Welcome(
                    version=session.version,
                    token=token,
                    player=session.player,
                    server=self.config.server_name,
                    resumed=resumed,
                    idle_timeout=self.config.idle_timeout,
                    server_id=self.server_id,
                    server_key=self.server_key,
                    name=session.name,
                    id=hello.id,
                ),
            ),
            LogLine(f"connection {conn}: {session.logged_as}, {_began(session, resumed)}"),
        ]
        if not resumed:
            return effects
        room = self._room_of(session)
        # (a game kept out of play is not what its players last saw, nor
        # are their pushes since: a snapshot says where it stands, and why)
        suspended = room is not None and room.suspended is not None
        missed = None if hello.seq is None or suspended else session.missed_since(hello.seq)
        if missed_noted is not None and (missed is not None) != missed_noted:
            # (a replay keeping fewer pushes than the live lobby did: those it
            # sent were sent then, and numbered none; a snapshot, as then)
            missed = [] if missed_noted else None
        self.resumed_with_missed = missed is not None
        if missed is not None:
            # Sent again as they were made, but for the time left to answer.
            effects += [
                Send(
                    conn,
                    room.refreshed(session, message, now) if room else with_time_left(message, 0),
                )
                for message in missed
            ]
        if room is not None:
            if missed is None:
                effects += room.snapshot(session, now)
            effects += room.connection_changed(session, now)
        if missed is None:  # (the games waiting are part of the snapshot)
            effects += self._tell_waiting(session, again=True)
        rooms = () if room is None else (room.id,)  # (a player back from the stand-in)
        return effects + self._waiting_changed(rooms)

    def _make_room(self, address: str | None, now: float) -> tuple[list[Effect], str | None]:
        """Room for one more session from `address`: the effects of the
        sessions let go for it, and why there is none (None: there is)."""
        effects: list[Effect] = []
        config = self.config
        if address is not None:
            mine = self.sessions.from_address(address)
            if len(mine) >= config.sessions_per_address:
                spare = self._spare(sorted(mine.values(), key=_away_since))
                if spare is None:
                    return effects, (
                        f"too many sessions from your address ({config.sessions_per_address}"
                        " at most), all of them connected or in a game: close some, or try later"
                    )
                effects += self._let_go(spare, "to make room for its address", now)
        if len(self.sessions) >= config.max_sessions:
            spare = self._spare(self.sessions.away.values())
            if spare is None:
                return effects, "too many sessions; try later"
            effects += self._let_go(spare, "to make room", now)
        return effects, None

    def _spare(self, sessions: Iterable[Session]) -> Session | None:
        """The first of `sessions` that may be let go: away, no bot, and held
        by no game (`away` is in the order they left: the first has been
        away longest)."""
        for session in sessions:
            if session.conn is None and session.bot is None and not self._held(session):
                return session
        return None

    def _let_go(self, session: Session, why: str, now: float) -> list[Effect]:
        """Forget `session` before its time (a bound was reached)."""
        line = LogLine(f"{session.logged_as}, away, let go {why}")
        return [line, *self._expire(session, now)]

    def closed(self, conn: Hashable, now: float) -> list[Effect]:
        """Connection `conn` is gone (closed by either side, or dropped)."""
        session = self._gone(conn, now)
        room = None if session is None else self._room_of(session)
        if session is None or room is None:
            return []
        return self._noted(room.connection_changed(session, now))

    def _gone(self, conn: Hashable, now: float) -> Session | None:
        """The session of connection `conn`, away from `now` (None: it had none)."""
        if conn in self._conns:
            self.conns_version += 1
        session = self._conns.pop(conn, None)
        if session is None or session.conn != conn:
            return None
        self.sessions.disconnected(session, now)
        self._touch(session)
        self._watch_expiry(session.player)
        return session

    def restarted(self, now: float, skip: int = 0) -> list[Effect]:
        """The server started again with this lobby (rebuilt from its
        journal): every connection it knew is gone, and its bots are started
        anew, each with a new token. Each room is told once of all its
        members gone (one `room_state` each), not once a member.

        `skip`: blocks of the keyed random stream left unused from here
        (`KeyedEntropy.skip`; the shell draws a great random number). The
        lobby may be older than the one that went down (a backup restored,
        or its last transactions lost): the tokens, invite codes and seeds
        the lost one drew after this point are not drawn again, so that a
        client holding one cannot take another player's session."""
        entropy = self._entropy
        if skip and isinstance(entropy, KeyedEntropy):
            entropy.skip(skip)
        effects: list[Effect] = []
        gone: dict[int, list[Session]] = {}
        for conn in list(self._conns):
            session = self._gone(conn, now)
            room = None if session is None else self._room_of(session)
            if session is not None and room is not None:
                gone.setdefault(room.id, []).append(session)
        for room_id, sessions in gone.items():
            effects += self._noted(self.rooms[room_id].connections_gone(sessions, now))
        for room in self.rooms.values():
            effects += room.restart_bots(self.sessions.renew)
        self._touched.update(self.rooms)
        return effects

    # ------------------------------------------------------------ requests

    def request(self, conn: Hashable, message: m.Message, now: float) -> list[Effect]:
        """A request after the `hello`, from connection `conn`: its answer, then
        what it caused."""
        session = self._conns.get(conn)
        if session is None:
            return []  # the connection was replaced or is closing: nothing more for it
        request_id = getattr(message, "id", None)
        if isinstance(message, m.Ping):
            return [Send(conn, m.Pong(id=request_id))]
        if isinstance(message, m.ListRooms):
            return [Send(conn, m.RoomList(rooms=self._room_list(), id=request_id))]
        if isinstance(message, m.ListRecords):
            return [Send(conn, m.RecordList(records=self._records_of(session), id=request_id))]
        if isinstance(message, m.Leaderboard):
            return [Send(conn, m.Ratings(players=self._leaders(), id=request_id))]
        if isinstance(message, m.ListGames):
            games = self._games_of(session, now)
            return [Send(conn, m.GameList(games=games, id=request_id))]
        if isinstance(message, m.GetRecord):
            record_id = message.record_id.lower()  # hex, in either case
            if not RECORD_ID.fullmatch(record_id):
                error = RemoteProtocolError(
                    NO_SUCH_RECORD, f"no record {message.record_id!r} here", id=request_id
                )
                return [Send(conn, m.error_message(error))]
            return [FetchRecord(conn, request_id, record_id)]
        self._touch(session)
        before, kept = session.room, tuple(session.kept_seats)
        outcome = self._route(session, message, now)
        self._touch(session)
        if session.room is not None:
            session.joined = True
        answer: m.Message
        if outcome.error is None:
            answer = m.Ok(id=request_id)
        else:
            outcome.error.id = request_id
            answer = m.error_message(outcome.error)
        effects = self._noted(outcome.effects)
        if outcome.error is not None and not effects:
            # (refused, it changed nothing: no game waits otherwise, and a
            # player away is not counted one more push for nothing)
            return [Send(conn, answer)]
        rooms = {r for r in (before, session.room) if r is not None}
        mine = (session,) if tuple(session.kept_seats) != kept else ()
        return [Send(conn, answer), *effects, *self._waiting_changed(rooms, *mine)]

    def _route(self, session: Session, message: m.Message, now: float) -> Outcome:
        room = self._room_of(session)
        if isinstance(message, m.JoinRoom | m.Spectate):
            named = message.room
            if message.invite is not None:
                named = self._invites.get(normalize_invite(message.invite))
            if named in session.kept_seats:
                return self._come_back(session, message, named, room, now)
        if isinstance(message, m.LeaveRoom) and message.keep_seat and room is not None:
            try:
                room.check_step_out(session)
                self._may_keep(session)
                return Outcome(effects=room.step_out(session, now))
            except RemoteProtocolError as refusal:
                return Outcome(refusal)
        if isinstance(message, m.CreateRoom | m.JoinRoom | m.Spectate):
            if room is not None:
                return Outcome(
                    RemoteProtocolError(
                        WRONG_STATE, f"you are in room {room.id} already: leave it first"
                    )
                )
            try:
                if isinstance(message, m.CreateRoom):
                    return Outcome(effects=self._create(session, message, now))
                target = self._find_room(message.room, message.invite)
                if isinstance(message, m.JoinRoom):
                    return Outcome(effects=target.seat(session, message.seat, now))
                return Outcome(effects=self._watch(session, target, now))
            except RemoteProtocolError as refusal:
                return Outcome(refusal)
        if isinstance(message, m.Rename):
            return self._rename(session, message.name, room)
        if isinstance(message, m.Chat):
            too_much = self._chat_refused(session, message.text, now)
            if too_much is not None:
                return Outcome(too_much)
            if room is None:
                return self._lobby_chat(session, message.text)
        if room is None:
            return Outcome(RemoteProtocolError(WRONG_STATE, f"{message.TYPE}: you are in no room"))
        outcome = room.handle(session, message, now)
        outcome.effects += self._forget_closed(room, now)
        return outcome

    def _come_back(
        self,
        session: Session,
        message: m.JoinRoom | m.Spectate,
        kept: int,
        room: Room | None,
        now: float,
    ) -> Outcome:
        """`join_room` with room `kept`, whose seat `session` kept: back to it."""
        seat = session.kept_seats[kept]
        if isinstance(message, m.Spectate):
            why = f"you kept seat {seat} in room {kept}: join_room takes you back to it"
            return Outcome(RemoteProtocolError(WRONG_STATE, why))
        if room is not None:
            why = f"you are in room {room.id}: leave it first (keep_seat keeps your seat there)"
            return Outcome(RemoteProtocolError(WRONG_STATE, why))
        if message.seat not in (None, seat):
            why = f"join_room.seat: your seat in room {kept} is {seat}"
            return Outcome(RemoteProtocolError(INVALID_FIELD, why))
        return Outcome(effects=self.rooms[kept].come_back(session, now))

    def _may_keep(self, session: Session) -> None:
        """Raise if `session` may keep no more seats: it keeps `kept_games`
        already, or the sessions of its address keep `kept_games_per_address`
        (each holds a room open for as long as its game is played)."""
        config = self.config
        if len(session.kept_seats) >= config.kept_games:
            raise RemoteProtocolError(
                NOT_PERMITTED,
                f"you keep seats in {config.kept_games} games already, the most this server"
                " keeps: play one to its end first",
            )
        address = session.address
        if address is None:
            return
        kept = sum(len(s.kept_seats) for s in self.sessions.from_address(address).values())
        if kept >= config.kept_games_per_address:
            raise RemoteProtocolError(
                NOT_PERMITTED,
                f"the players of your address keep seats in {kept} games already, the most"
                " this server keeps: play one to its end first",
            )

    # ------------------------------------------------------------ my games

    def _games_of(self, session: Session, now: float) -> tuple[m.MyGame, ...]:
        """`game_list`: the game of `session`'s room, then those whose seats
        it kept, in room order."""
        seats = [] if session.seat is None else [(session.room, session.seat)]
        seats += sorted(session.kept_seats.items())
        games = []
        for room_id, seat in seats:
            room = self.rooms.get(room_id or 0)
            game = None if room is None else room.my_game(seat, now)
            if game is not None:
                games.append(game)
        return tuple(games)

    def _waiting(self, session: Session) -> tuple[int, ...]:
        """The rooms whose games, their seats kept by `session`, wait for it now."""
        return tuple(
            room_id
            for room_id, seat in sorted(session.kept_seats.items())
            if (room := self.rooms.get(room_id)) is not None and room.waits_for(seat)
        )

    def _waiting_changed(self, rooms: Iterable[int], *sessions: Session) -> list[Effect]:
        """`games_waiting` to each player concerned by a change in `rooms`
        (who kept a seat there, or was told it waits for them), and to
        `sessions`, whose games waiting for them changed since they were told."""
        concerned = {s.player: s for s in sessions}
        for room_id in rooms:
            room = self.rooms.get(room_id)
            for _, session in room.kept() if room is not None else ():
                concerned[session.player] = session
            for player in self._told_waiting.get(room_id, ()):
                concerned[player] = self.sessions.by_player[player]
        effects: list[Effect] = []
        for player in sorted(concerned):
            effects += self._tell_waiting(concerned[player])
        return effects

    def _tell_waiting(self, session: Session, *, again: bool = False) -> list[Effect]:
        """`games_waiting` to `session` if the games waiting for it changed
        (`again`: if any wait, changed or not: a snapshot)."""
        waiting = self._waiting(session)
        if waiting == session.waiting and not (again and waiting):
            return []
        # A push to a session away without a seat is only counted: its
        # client is not told, and will be at its resume (a snapshot, then).
        told = session.connected or session.seat is not None
        effects = session.push(m.GamesWaiting, rooms=waiting)
        if told:
            self._told(session, waiting)
        return effects

    def _told(self, session: Session, waiting: tuple[int, ...]) -> None:
        told = self._told_waiting
        for room_id in session.waiting:
            players = told.get(room_id)
            if players is not None:
                players.discard(session.player)
                if not players:
                    del told[room_id]
        session.waiting = waiting
        for room_id in waiting:
            told.setdefault(room_id, set()).add(session.player)

    def _name_refused(self, field: str, name: str, key: bytes | None) -> RemoteProtocolError | None:
        """Why the player of `key` (None: without one) may not be called
        `name` here, given in `field`: too long for this server, or another
        key's; None if they may."""
        if len(name) > self.config.name_length:
            return RemoteProtocolError(
                INVALID_FIELD,
                f"{field}: at most {self.config.name_length} characters on this server,"
                f" not {len(name)}",
            )
        owner = self.names.owner(name)
        if owner is not None and owner != key:
            return RemoteProtocolError(
                NAME_TAKEN, f"{field}: {name!r} is another player's name here: choose another"
            )
        return None

    def _rename(self, session: Session, name: str, room: Room | None) -> Outcome:
        """`session`'s player is called `name` from now on (its key's name,
        if it has one): its room is told."""
        refusal = self._name_refused("rename.name", name, session.key)
        if refusal is not None:
            return Outcome(refusal)
        if session.key is not None:
            self.names.claim(session.key, name)
        session.name = name
        rooms = [] if room is None else [room]
        rooms += [r for room_id in session.kept_seats if (r := self.rooms.get(room_id))]
        return Outcome(effects=[e for r in rooms for e in r.members_changed()])

    def _watch(self, session: Session, room: Room, now: float) -> list[Effect]:
        """`session` spectates `room`, if the room has room for one more."""
        effects: list[Effect] = []
        most = self.config.spectators_per_room
        if len(room.spectators) >= most:
            spare = self._spare(room.spectators)
            if spare is None:
                raise RemoteProtocolError(
                    ROOM_FULL, f"room {room.id} has all the spectators it takes ({most})"
                )
            effects += self._let_go(spare, f"to make room in room {room.id}", now)
        return effects + room.watch(session, now)

    def _chat_refused(self, session: Session, text: str, now: float) -> RemoteProtocolError | None:
        """Each chat line reaches many: a player may say `chat_lines` lines
        of at most `chat_length` characters in any `chat_window` seconds, in
        a room or in the lobby (the server's `ServerConfig`)."""
        config = self.config
        if len(text) > config.chat_length:
            return RemoteProtocolError(
                INVALID_FIELD,
                f"chat.text: at most {config.chat_length} characters on this server,"
                f" not {len(text)}",
            )
        said = session.chat_times if session.chat_times is not None else deque()
        while said and said[0] <= now - config.chat_window:
            said.popleft()
        refused = len(said) >= config.chat_lines
        if not refused:
            said.append(now)
        session.chat_times = said  # (set again if the same: marks the session changed)
        if refused:
            return RemoteProtocolError(
                RATE_LIMITED,
                f"chat: at most {config.chat_lines} lines in {config.chat_window:g} seconds",
                section="`chat`",
            )
        return None

    def _lobby_chat(self, session: Session, text: str) -> Outcome:
        """A line said in the lobby: to every player connected and in no room."""
        effects: list[Effect] = []
        shared = SharedEncoding()
        for listener in self.sessions:
            if listener.room is None and listener.connected:
                effects += listener.push(
                    m.ChatMessage, shared, name=session.name, text=text, player=session.player
                )
        return Outcome(effects=effects)

    def _noted(self, effects: list[Effect]) -> list[Effect]:
        """Index the games these effects finish, for `list_records`, and
        rate them (their rooms are told the new ratings)."""
        rated: list[Effect] = []
        for effect in effects:
            if isinstance(effect, GameFinished):
                record = effect.record
                self.finished[effect.record_id] = m.RecordSummary(
                    record_id=effect.record_id,
                    room=effect.room,
                    room_name=effect.room_name or f"room {effect.room}",
                    names=tuple(s.name[:32] or "?" for s in record.seats),
                    seat=0,
                    scores=record.results.scores,
                    winners=record.results.winners,
                    valid=record.results.complete and all(v.ok for v in record.verdicts),
                )
                for seat, player in enumerate(effect.players):
                    if player is not None and player in self.sessions.by_player:
                        played = self._played.setdefault(player, [])
                        played.append((effect.record_id, seat))
                        self._listed(effect.record_id, +1)
                        for record_id, _ in played[:-RECORDS_LISTED]:
                            self._listed(record_id, -1)
                        del played[:-RECORDS_LISTED]
                self._listed(effect.record_id, 0)  # (kept only if someone can list it)
                rated += self._rate(effect)
        return effects + rated if rated else effects

    def _rate(self, finished: GameFinished) -> list[Effect]:
        """Rate the game `finished` if it was played out, each seat begun by
        a player with a key of its own (`ratings`)."""
        record = finished.record
        if not record.results.complete or any(s.bot or s.handed_to_bot for s in record.seats):
            return []
        keys = [key for key in finished.keys if key is not None]
        if len(keys) != len(record.seats) or len(set(keys)) != len(keys):
            return []
        # A seat whose checks failed ranks last, whatever its score: cheating
        # never pays. A seat that left, or that the stand-in played, is rated
        # on its score (leaving a game one is losing does not void it).
        scores = [
            -1 if verdict.status == FAILED else score
            for score, verdict in zip(record.results.scores, record.verdicts, strict=True)
        ]
        self.ratings.rate(finished.record_id, list(zip(keys, scores, strict=True)))
        for key in keys:
            session = self.sessions.by_key.get(key)
            if session is not None:
                session.rating = self.ratings.shown(key)
        room = self.rooms.get(finished.room)
        return [] if room is None else room.members_changed()

    def _listed(self, record_id: str, change: int) -> None:
        """One more (or one fewer) player lists `record_id`: its summary goes
        when no one does (player ids are never reused, so a session gone
        never lists it again)."""
        listed = self._listed_by.get(record_id, 0) + change
        if listed > 0:
            self._listed_by[record_id] = listed
        else:
            self._listed_by.pop(record_id, None)
            self.finished.pop(record_id, None)

    def _forget_played(self, player: int) -> None:
        for record_id, _ in self._played.pop(player, ()):
            self._listed(record_id, -1)

    def _records_of(self, session: Session) -> tuple[m.RecordSummary, ...]:
        """`session`'s finished games, with its rating after each it had rated."""
        history = {} if session.key is None else dict(self.ratings.history.get(session.key, ()))
        return tuple(
            replace(self.finished[record_id], seat=seat, rating=history.get(record_id))
            for record_id, seat in reversed(self._played.get(session.player, []))
            if record_id in self.finished
        )

    def _leaders(self) -> tuple[m.RatingEntry, ...]:
        """The highest rated keys, with the names they hold here."""
        return tuple(
            m.RatingEntry(
                name=self.names.name_of(key) or "?", key=key, rating=r.shown, games=r.games
            )
            for key, r in self.ratings.leaders(100)
        )

    def _create(self, session: Session, message: m.CreateRoom, now: float) -> list[Effect]:
        if len(self.rooms) >= self.config.max_rooms:
            raise RemoteProtocolError(
                TOO_MANY_ROOMS, "this server holds all the rooms it can: join one, or try later"
            )
        most = self.config.room_name_length
        if message.name is not None and len(message.name) > most:
            raise RemoteProtocolError(
                INVALID_FIELD,
                f"create_room.name: at most {most} characters on this server,"
                f" not {len(message.name)}",
            )
        room_id = self._next_room
        self._next_room += 1
        invite = self._new_invite() if message.private else None
        name = message.name or f"{session.name}'s table"[:most]
        room = Room(
            room_id,
            name,
            message.settings,
            config=self.config,
            entropy=self._entropy,
            bot_sessions=self._bot_session,
            invite=invite,
        )
        self.rooms[room_id] = room
        if invite is not None:
            self._invites[normalize_invite(invite)] = room_id
        s = message.settings
        made = room.event(
            f"made, {name!r}, {s.players} seats, {s.variant}"
            f"{', private' if invite else ''}, by player {session.player}"
        )
        return [made, *room.seat(session, 0, now)]

    def _bot_session(self, strategy: str, name: str) -> tuple[Session, bytes]:
        # (its version is its bot's first hello's: `UNCHOSEN` until then, and
        # the bot's first connection asks for a snapshot)
        return self.sessions.open(name, bot=strategy, version=UNCHOSEN)

    def _new_invite(self) -> str:
        while True:
            raw = self._entropy.token_bytes(5)
            value = int.from_bytes(raw, "big")
            code = "".join(INVITE_ALPHABET[(value >> (5 * i)) & 31] for i in range(8))
            if code not in self._invites:
                return f"{code[:4]}-{code[4:]}"

    def _find_room(self, room_id: int | None, invite: str | None) -> Room:
        if invite is not None:
            found = self._invites.get(normalize_invite(invite))
            if found is None or found not in self.rooms:
                raise RemoteProtocolError(NO_SUCH_ROOM, f"no room has the invite code {invite}")
            return self.rooms[found]
        room = self.rooms.get(room_id or 0)
        if room is None or room.invite is not None:
            raise RemoteProtocolError(NO_SUCH_ROOM, f"no room {room_id} (it may have closed)")
        return room

    def _room_list(self) -> tuple[m.RoomSummary, ...]:
        public = [r for r in self.rooms.values() if r.invite is None and r.state != CLOSED]
        public.sort(key=lambda r: (_LIST_ORDER[r.state], r.id))
        return tuple(r.summary() for r in public[:ROOM_LIST_MAX])

    def _room_of(self, session: Session) -> Room | None:
        return None if session.room is None else self.rooms.get(session.room)

    def _forget_closed(self, room: Room, now: float) -> list[Effect]:
        """Forget `room` if it closed; what that does (a spectator let go
        leaves the seats it kept elsewhere)."""
        effects: list[Effect] = []
        if room.state == CLOSED:
            self.rooms.pop(room.id, None)
            self._touched.add(room.id)  # (its rows go)
            if room.invite is not None:
                self._invites.pop(normalize_invite(room.invite), None)
            # Its spectators away have nothing left to come back to (and
            # keep no pushes that would tell them so): they are let go (and
            # the seats they kept elsewhere), but those their kept seats hold.
            left, room.left_away = room.left_away, ()
            for session in left:
                if self.sessions.by_player.get(session.player) is session and not self._held(
                    session
                ):
                    effects += self._expire(session, now)
        return effects

    # ------------------------------------------------------------ rebuilding

    def build_some(self, most: int) -> int:
        """Rebuild the games of up to `most` rooms not rebuilt yet (see
        `room.UnbuiltGame`; the shell calls it when no input waits); how
        many rooms are left. It changes nothing the players see: a game is
        the same rebuilt or not."""
        unbuilt = self.unbuilt
        while most > 0 and unbuilt:
            room = self.rooms.get(unbuilt.pop())
            if room is not None and not room.built:
                room.build()
                self._touched.add(room.id)
                most -= 1
        return len(unbuilt)

    def changes_since(self, taker: object) -> tuple[set[int], set[int]] | None:
        """Which sessions (by player) and rooms (by id) may have changed, or
        gone, since `taker` last asked: any other is as it was then. None if
        `taker` never asked, or another asked since: then any may have. For
        taking the facts (`facts.take_some`)."""
        rooms = self._facts_rooms | self._touched
        self._facts_rooms = set()
        marked = self.sessions.changed  # (the sessions hold this set: emptied, not replaced)
        players = set(marked)
        marked.clear()
        asked, self._changes_taker = self._changes_taker, taker
        return None if asked is not taker else (players, rooms)

    def take_build_failures(self) -> list[tuple[int, str]]:
        """The games found since that this version cannot rebuild (room id,
        why): kept out of play, for the shell to log."""
        failures = list(self.build_failures)
        self.build_failures.clear()  # (the same list: the rooms' games hold it)
        return failures

    # ------------------------------------------------------------ time

    def next_deadline(self) -> float | None:
        """When `tick` has something to do next (None: nothing is waiting)."""
        self._refresh()
        heap = self._deadline_heap
        times = [heap[0][0]] if heap else []
        expiry = self._next_expiry()
        if expiry is not None:
            times.append(expiry)
        return min(times, default=None)

    def _refresh(self) -> None:
        """Ask the touched rooms for their deadlines, and look again at the
        sessions away that they held."""
        expiries = self._expiries()
        kept, heap = self._room_deadlines, self._deadline_heap
        self._facts_rooms |= self._touched
        for room_id in self._touched:
            room = self.rooms.get(room_id)
            due = None if room is None else room.next_deadline()
            if due is None:
                kept.pop(room_id, None)
            elif kept.get(room_id) != due:
                kept[room_id] = due
                heapq.heappush(heap, (due, room_id))
            for player in self._held_away.pop(room_id, ()):
                session = self.sessions.away.get(player)
                expiry = None if session is None else self._expiry(session)
                if expiry is not None:
                    heapq.heappush(expiries, (expiry, player))
        self._touched.clear()
        while heap and kept.get(heap[0][1]) != heap[0][0]:
            heapq.heappop(heap)  # a deadline since moved, or gone
        if len(heap) > 2 * len(kept) + 64:  # too many such: start the heap anew
            heap[:] = [(due, room_id) for room_id, due in kept.items()]
            heapq.heapify(heap)

    def _expiries(self) -> list[tuple[float, int]]:
        """The heap of the expiries of the sessions away, made anew if there
        is none yet or it holds too many that no longer count."""
        heap = self._expiry_heap
        away = self.sessions.away
        if heap is None or len(heap) > 2 * len(away) + 64:
            heap = [
                (expiry, s.player) for s in away.values() if (expiry := self._expiry(s)) is not None
            ]
            heapq.heapify(heap)
            self._expiry_heap = heap
            self._held_away.clear()
        return heap

    def _watch_expiry(self, player: int) -> None:
        """Player `player`'s session may have gone away: its expiry goes into
        the heap (if there is one yet; an entry no longer true is dropped when
        it comes to the top)."""
        session = self.sessions.away.get(player)
        expiry = None if session is None else self._expiry(session)
        if self._expiry_heap is not None and expiry is not None:
            heapq.heappush(self._expiry_heap, (expiry, player))

    def _expiry(self, session: Session) -> float | None:
        """When `session`, away, expires (None: it is not away). One that
        never sat or watched in a room has nothing to come back to: it
        expires sooner."""
        if session.disconnected_at is None:
            return None
        config = self.config
        return session.disconnected_at + (
            config.session_ttl if session.joined else config.lobby_ttl
        )

    def _next_expiry(self) -> float | None:
        """When the first session away that is not held expires (its entry
        at the top of the heap)."""
        heap = self._expiries()
        away = self.sessions.away
        while heap:
            due, player = heap[0]
            session = away.get(player)
            if session is None or self._expiry(session) != due:
                heapq.heappop(heap)  # back since, gone, or away again since
            elif self._held(session):
                heapq.heappop(heap)
                rooms = [*session.kept_seats, *([] if session.room is None else [session.room])]
                for room_id in rooms:
                    self._held_away.setdefault(room_id, set()).add(player)
            else:
                return due
        return None

    def _held(self, session: Session) -> bool:
        """A seated player's session lasts as long as the game being played
        (not one kept out of play: `Room.suspend`), and as the games whose
        seats it kept."""
        room = self._room_of(session)
        if room is not None and room.in_play() and session.seat is not None:
            return True
        return any(
            (kept := self.rooms.get(room_id)) is not None and kept.in_play()
            for room_id in session.kept_seats
        )

    def _due(self, now: float) -> list[Room]:
        """The rooms whose deadline came by `now`, in the order of their ids
        (out of the deadlines kept: the touched rooms ask again for theirs)."""
        self._refresh()
        kept, heap = self._room_deadlines, self._deadline_heap
        due = []
        while heap and heap[0][0] <= now:
            when, room_id = heapq.heappop(heap)
            if kept.get(room_id) == when:  # (else it moved since, or went)
                del kept[room_id]
                self._touched.add(room_id)  # (asked again at the next `_refresh`)
                due.append(room_id)
        return [self.rooms[room_id] for room_id in sorted(due) if room_id in self.rooms]

    def tick(self, now: float) -> list[Effect]:
        """Time passed: the timers of the rooms whose deadline came (only
        those: a room's tick does nothing before its deadline, and asking
        thousands at each tick made the tick take a tenth of a second), and
        sessions away too long."""
        effects: list[Effect] = []
        changed = []
        for room in self._due(now):
            try:
                ticked = room.tick(now)
            except Exception:  # a bug of ours in one room: report it, go on with the others
                effects.append(Fault(None, f"room {room.id}: {traceback.format_exc()}"))
            else:
                if ticked:
                    changed.append(room.id)
                    effects += self._noted(ticked)
            effects += self._forget_closed(room, now)
        effects += self._waiting_changed(changed)
        self._refresh()  # (a game that just ended holds its players no longer)
        expired = set()
        while (due := self._next_expiry()) is not None and due <= now:
            assert self._expiry_heap is not None
            expired.add(heapq.heappop(self._expiry_heap)[1])
        pending = sorted(expired, reverse=True)
        try:
            while pending:
                session = self.sessions.away.get(pending[-1])
                if session is not None:  # (else closed with its room, by one before it)
                    effects += self._expire(session, now)
                pending.pop()
        finally:  # a bug of ours stopped the loop: the next tick tries those left again
            for player in pending:
                self._watch_expiry(player)
        return effects

    def _expire(self, session: Session, now: float) -> list[Effect]:
        """`session` has been away too long: out of its room and of the
        seats it kept, and forgotten."""
        effects: list[Effect] = []
        home = [] if session.room is None else [session.room]
        for room_id in dict.fromkeys([*home, *session.kept_seats]):
            room = self.rooms.get(room_id)
            if room is None:
                continue
            self._touched.add(room_id)
            try:
                if room_id in session.kept_seats:
                    effects += self._noted(room.let_go_kept(session, now))
                else:
                    effects += self._noted(room.remove(session, now))
            except Exception:  # a bug of ours in that room: the session expires all the same
                effects.append(Fault(None, f"room {room_id}: {traceback.format_exc()}"))
            effects += self._forget_closed(room, now)
        self._forget(session)
        return effects

    def _forget(self, session: Session) -> None:
        """`session` is gone for good, and what it could list with it, but
        a key's finished games, kept for its next session. A key that never
        sat or watched in a room here, and has no game or rating, lets its
        name go: keys cost nothing to make, and names are not hoarded."""
        self._told(session, ())
        self.sessions.close(session)
        key = session.key
        played = self._played.pop(session.player, None) if key is not None else None
        if (
            key is not None
            and not session.joined
            and not played
            and key not in self.ratings.by_key
            and key not in self._played_by_key
        ):
            self.names.release(key)
        if not played:
            self._forget_played(session.player)
            return
        assert session.key is not None
        self._played_by_key[session.key] = played
        while len(self._played_by_key) > KEYS_REMEMBERED:
            oldest = next(iter(self._played_by_key))
            for record_id, _ in self._played_by_key.pop(oldest):
                self._listed(record_id, -1)


def _away_since(session: Session) -> float:
    """Sorting sessions by how long they have been away (connected last)."""
    at = session.disconnected_at
    return at if at is not None else float("inf")


def _began(session: Session, resumed: bool) -> str:
    """How a session began on a connection, for the log."""
    if session.bot is not None:
        return f"the server's {session.bot} bot"
    return "resumed" if resumed else "a new session"

"""Sessions: who is connected as whom, their secret tokens, and their pushes.

How this works
--------------
A session is a player as the server knows them: a player id (public), a
name, a secret token (to resume), and where they are (a room, a seat). It
outlives its connection: a player who reconnects with the token takes the
session back, with its room and seat.

Tokens are 32 random bytes, shown once in `welcome` and never stored: the
server keeps only their SHA-256 digests, so neither a log nor a dump of the
server's state can give one away. Each resume rotates the token; the
previous one still works until the new one has been used once, so a client
whose connection dropped before it read the `welcome` can still come back.

Every push to a session is numbered (`seq`, one more each time) and kept in
a bounded history (as the frame it was sent as), so a client that resumes
with the `seq` it last saw gets exactly the pushes it missed, or a full
snapshot if they are no longer all kept.

What a session keeps is bounded by what it can still resume with: at most
`history` pushes and `history_bytes` bytes of them (past that, a snapshot
is smaller than what was missed), and nothing at all while it is away
without a seat (a spectator, or in the lobby): its pushes are not even
built, only counted, and it comes back to a snapshot. A seated player away
keeps its pushes, so that it comes back to exactly what it missed.

Sessions are counted by the address they were opened from, so that the
lobby can bound what one address holds (`from_address`).

Every change to a session marks its player in `Sessions.changed` (any of
its attributes set; a change inside its deques sets one too), so that
taking the lobby's facts makes rows only of the sessions marked since the
last taking (`facts.take_some`), not of thousands that did not change.

>>> from oriflamme.server.core.entropy import FixedEntropy
>>> sessions = Sessions(FixedEntropy("doc"), history=4)
>>> ann, token = sessions.open("Ann")
>>> sessions.find(token) is ann, ann.player
(True, 1)
>>> new_token = sessions.rotate(ann, token)
>>> sessions.find(token) is ann, sessions.find(new_token) is ann
(True, True)
>>> _ = sessions.rotate(ann, new_token)
>>> sessions.find(token) is None
True
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Hashable
from typing import Any

from oriflamme.protocol import messages as m
from oriflamme.protocol.codec import HEADER_SIZE, decode_payload, encode_frame
from oriflamme.protocol.errors import LocalProtocolError
from oriflamme.protocol.fanout import SharedEncoding

from .effects import Effect, Fault, Send
from .entropy import Entropy

TOKEN_SIZE = 32
HISTORY_BYTES = 256 * 1024  # the bytes of pushes a session keeps, at most


def _digest(token: bytes) -> bytes:
    return hashlib.sha256(token).digest()


# The version of a session opened for a server bot, until its bot's first
# hello chooses one (it gets no game push before: it begins with a snapshot).
UNCHOSEN = 0


class Session:
    """One player's session; see the module docstring."""

    # Slots, not a __dict__: a server holds thousands of sessions, and the
    # snapshot's pickling would give each a dict for good (Python keeps an
    # instance's attributes inline until its __dict__ is asked for).
    __slots__ = (
        "player",
        "name",
        "bot",
        "conn",
        "room",
        "seat",
        "disconnected_at",
        "last_seq",
        "_history_size",
        "_history_bytes",
        "_kept_bytes",
        "history",
        "_digests",
        "chat_times",
        "address",
        "joined",
        "key",
        "rating",
        "kept_seats",
        "waiting",
        "version",
        "_changed",
    )
    _changed: set[int] | None  # (`Sessions.changed`, which this session marks)

    def __init__(
        self,
        player: int,
        name: str,
        *,
        history: int,
        history_bytes: int = HISTORY_BYTES,
        bot: str | None = None,
        address: str | None = None,
        key: bytes | None = None,
        version: int = 1,
    ) -> None:
        # (first: `__setattr__` reads it; marked nowhere until `Sessions.adopt`)
        object.__setattr__(self, "_changed", None)
        self.player = player
        self.name = name
        self.bot = bot
        # The protocol version of its first `welcome`, which it keeps: its
        # pushes are kept as frames of that version, for a resume.
        self.version = version
        # The player's public key, proved at the handshake (None: anonymous),
        # and its rating here as shown (None: not rated yet; the lobby's
        # `ratings` say it: not a fact of its own).
        self.key = key
        self.rating: int | None = None
        self.address = address  # where it was opened from (None: not counted)
        self.joined = False  # it sat or watched in a room at least once
        self.conn: Hashable | None = None
        self.room: int | None = None
        self.seat: int | None = None
        # The seats it kept in games it stepped out of (`leave_room.keep_seat`),
        # room id -> seat, oldest first (not facts of its own: the rooms'
        # seats say it), and the rooms of those the last `games_waiting`
        # push said wait for it.
        self.kept_seats: dict[int, int] = {}
        self.waiting: tuple[int, ...] = ()
        self.disconnected_at: float | None = None
        self.last_seq = 0
        # Made at the first push and the first chat line: an empty deque
        # costs some 700 bytes, and a server holds thousands of sessions
        # that never get either (idle connections).
        self._history_size = history
        self._history_bytes = history_bytes
        self._kept_bytes = 0  # the bytes of the frames in `history`
        self.history: deque[bytes] | None = None  # the frames of the last pushes
        self._digests: tuple[bytes, bytes | None] = (b"", None)
        self.chat_times: deque[float] | None = None

    def __setattr__(self, name: str, value: Any) -> None:
        """Set, and mark the session changed (see the module docstring)."""
        object.__setattr__(self, name, value)
        changed = self._changed
        if changed is not None:
            changed.add(self.player)

    def __getstate__(self) -> tuple[None, dict[str, Any]]:
        """Pickling: its slots, but where changes are marked (`Sessions`'s)."""
        return None, {
            name: getattr(self, name)
            for name in self.__slots__
            if name != "_changed" and hasattr(self, name)
        }

    def __setstate__(self, state: Any) -> None:
        """Unpickling: slots (`(None, {...})`), or the dict of a session
        saved before they were. (`Sessions` marks it, once unpickled.)"""
        object.__setattr__(self, "_changed", None)
        values = state[1] if isinstance(state, tuple) else state
        for name, value in values.items():
            setattr(self, name, value)
        for name in ("history", "chat_times", "address", "key", "rating"):  # (older: before)
            if not hasattr(self, name):
                setattr(self, name, None)
        if not hasattr(self, "kept_seats"):
            self.kept_seats, self.waiting = {}, ()
        if not hasattr(self, "version"):  # (saved before version 2)
            self.version = 1
        if not hasattr(self, "joined"):  # saved before it was kept: assume it did
            self.joined = True
        if not hasattr(self, "_history_bytes"):
            self._history_bytes = HISTORY_BYTES
        history = self.history
        if history and not isinstance(history[0], bytes):  # saved when messages were kept
            frames = (encode_frame(m.to_data(push)) for push in history)
            self.history = deque(frames, maxlen=history.maxlen)
        self._kept_bytes = sum(map(len, self.history or ()))

    def __repr__(self) -> str:
        where = "lobby" if self.room is None else f"room {self.room} seat {self.seat}"
        return f"<Session {self.player} {self.name!r} {where}>"

    @property
    def connected(self) -> bool:
        return self.conn is not None

    @property
    def logged_as(self) -> str:
        """The player as the server's log names them (the name is the
        player's own text: quoted)."""
        return f"player {self.player} ({self.name!r})"

    def push(
        self, kind: type[m.Message], shared: SharedEncoding | None = None, /, **fields: Any
    ) -> list[Effect]:
        """Number, encode and keep a push of `kind`; sent at once if connected.
        `shared`: given when the same push goes to several sessions, so that
        it is encoded once for all (`protocol.fanout`).

        What is kept is the push's frame, not the message: a message holds
        what it was made of (a `game_state`, a whole view: a few hundred
        objects), which Python's garbage collector would walk at every
        collection as long as it is kept (20 to 30 ms a collection, a few
        times a second, on a busy server); bytes it never walks. A resume
        decodes the few it sends again.

        A session away without a seat in its room gets nothing built or
        kept: the push is only counted, so that a resume finds it missing
        and sends a snapshot instead."""
        if self.conn is None and self.seat is None:
            self.last_seq += 1
            self.forget_pushes()
            return []
        seq = self.last_seq + 1
        message = kind.trusted(seq=seq, **fields)  # (made from the server's own state)
        try:
            frame = (
                shared.frame(message) if shared is not None else encode_frame(m.to_data(message))
            )
        except LocalProtocolError as error:  # a bug of ours: not pushed, nor numbered
            return [Fault(self.conn, f"could not push {kind.TYPE} to {self.logged_as}: {error}")]
        self.last_seq = seq
        self._keep(frame)
        return [Send(self.conn, message, frame)] if self.conn is not None else []

    def _keep(self, frame: bytes) -> None:
        """Keep `frame`, dropping the oldest past `history` pushes or
        `history_bytes` bytes (the newest is always kept)."""
        history = self.history
        if history is None:
            history = self.history = deque(maxlen=self._history_size)
        if len(history) == history.maxlen:
            self._kept_bytes -= len(history[0])  # (append drops it)
        history.append(frame)
        self._kept_bytes += len(frame)  # (and marked changed with it)
        while self._kept_bytes > self._history_bytes and len(history) > 1:
            self._kept_bytes -= len(history.popleft())

    def forget_pushes(self) -> None:
        """Let the kept pushes go: a resume gets a snapshot."""
        self.history = None
        self._kept_bytes = 0

    def kept(self) -> list[m.Message]:
        """The pushes kept, oldest first."""
        return [_pushed(frame) for frame in self.history or ()]

    def missed_since(self, seq: int) -> list[m.Message] | None:
        """The pushes after `seq`, if all are still kept (else None)."""
        if seq > self.last_seq:
            return None
        missed = self.last_seq - seq
        kept = self.history if self.history is not None else ()
        if missed > len(kept):
            return None
        return [_pushed(frame) for frame in list(kept)[len(kept) - missed :]]


def _pushed(frame: bytes) -> m.Message:
    """A push, from the frame it was sent as."""
    return m.from_data(decode_payload(frame[HEADER_SIZE:]), "server")


class Sessions:
    """Every session, by player id and by token digest."""

    def __init__(
        self, entropy: Entropy, *, history: int = 512, history_bytes: int = HISTORY_BYTES
    ) -> None:
        self._entropy = entropy
        self._history = history
        self._history_bytes = history_bytes
        self._next_player = 1
        self.by_player: dict[int, Session] = {}
        self._by_digest: dict[bytes, Session] = {}
        # The sessions of players with a key, by their key: one a key.
        self.by_key: dict[bytes, Session] = {}
        # The disconnected ones, whose time may run out: what the lobby's
        # timers look at, rather than every session (most are connected).
        # In the order they left (a dict keeps it): the first is away longest.
        self.away: dict[int, Session] = {}
        # The sessions opened from each address, oldest first.
        self._by_address: dict[str, dict[int, Session]] = {}
        # The players whose sessions changed, or closed, since the facts were
        # last taken (each session marks itself; `facts.take_some` empties it).
        self.changed: set[int] = set()

    def adopt(self, session: Session) -> None:
        """Mark `session`'s changes here, from now on (one made or rebuilt)."""
        object.__setattr__(session, "_changed", self.changed)
        self.changed.add(session.player)

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if "away" not in state:  # a lobby saved before `away` was kept
            self.away = {p: s for p, s in self.by_player.items() if s.disconnected_at is not None}
        if "_history_bytes" not in state:
            self._history_bytes = HISTORY_BYTES
        if "by_key" not in state:
            self.by_key = {}
        if "_by_address" not in state:
            self._by_address = {}
            for session in self.by_player.values():
                if session.address is not None:
                    self._by_address.setdefault(session.address, {})[session.player] = session
        self.changed = set()
        for session in self.by_player.values():
            self.adopt(session)

    def __len__(self) -> int:
        return len(self.by_player)

    def __iter__(self) -> Any:
        return iter(list(self.by_player.values()))

    def open(
        self,
        name: str,
        *,
        bot: str | None = None,
        address: str | None = None,
        key: bytes | None = None,
        version: int = 1,
    ) -> tuple[Session, bytes]:
        """A new session and its token; `address`: where it comes from (None:
        not counted); `key`: its player's public key (none has a session);
        `version`: the protocol version it speaks."""
        session = Session(
            self._next_player,
            name,
            history=self._history,
            history_bytes=self._history_bytes,
            bot=bot,
            address=address,
            key=key,
            version=version,
        )
        self._next_player += 1
        self.by_player[session.player] = session
        self.adopt(session)
        self.keyed(session)
        if address is not None:
            self._by_address.setdefault(address, {})[session.player] = session
        token = self._new_token(session)
        return session, token

    def from_address(self, address: str) -> dict[int, Session]:
        """The sessions opened from `address`, oldest first (do not change it)."""
        return self._by_address.get(address, {})

    def connected(self, session: Session, conn: Hashable) -> None:
        """`session` is on connection `conn`."""
        session.conn = conn
        session.disconnected_at = None
        self.away.pop(session.player, None)

    def disconnected(self, session: Session, now: float) -> None:
        """`session` lost its connection at `now`. Without a seat, it keeps
        no pushes (see `Session.push`)."""
        session.conn = None
        session.disconnected_at = now
        self.away[session.player] = session
        if session.seat is None:
            session.forget_pushes()

    def find(self, token: bytes) -> Session | None:
        return self._by_digest.get(_digest(token))

    def presented_current(self, session: Session, token: bytes) -> bool:
        """Whether `token` is `session`'s current token (else its previous)."""
        return _digest(token) == session._digests[0]

    def rotate(self, session: Session, presented: bytes) -> bytes:
        """A new token for `session`, which was resumed with `presented`. The
        presented token stays valid until the new one is used."""
        return self.rotate_from(session, _digest(presented) == session._digests[0])

    def rotate_from(self, session: Session, current_one: bool) -> bytes:
        """`rotate`, told whether the token presented was the current one (or
        the previous): a replay of the journal knows no token, only that."""
        current, previous = session._digests
        if current_one and previous is not None:
            self._by_digest.pop(previous, None)
            previous = None
        if previous is None:
            previous = current
        else:  # the client came back with the previous token: the current one never reached it
            self._by_digest.pop(current, None)
        token = self._entropy.token_bytes(TOKEN_SIZE)
        digest = _digest(token)
        session._digests = (digest, previous)
        self._by_digest[digest] = session
        return token

    def renew(self, session: Session) -> bytes:
        """A new token for `session`, in place of every token it had (a
        server bot's, when the server starts again)."""
        for digest in session._digests:
            if digest is not None:
                self._by_digest.pop(digest, None)
        return self._new_token(session)

    def keyed(self, session: Session) -> None:
        """Index `session` by its key, if it has one (a session made or
        rebuilt)."""
        if session.key is not None:
            if self.by_key.get(session.key, session) is not session:
                raise ValueError(f"a second session for key {session.key.hex()}")
            self.by_key[session.key] = session

    def close(self, session: Session) -> None:
        """Forget `session` and its tokens."""
        self.changed.add(session.player)  # (its row goes)
        self.by_player.pop(session.player, None)
        if session.key is not None and self.by_key.get(session.key) is session:
            del self.by_key[session.key]
        self.away.pop(session.player, None)
        if session.address is not None:
            mine = self._by_address.get(session.address)
            if mine is not None:
                mine.pop(session.player, None)
                if not mine:
                    del self._by_address[session.address]
        for digest in session._digests:
            if digest is not None:
                self._by_digest.pop(digest, None)

    def _new_token(self, session: Session) -> bytes:
        token = self._entropy.token_bytes(TOKEN_SIZE)
        digest = _digest(token)
        session._digests = (digest, None)
        self._by_digest[digest] = session
        return token

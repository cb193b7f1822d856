"""The whole server without I/O: bytes in from each connection, bytes out to each.

How this works
--------------
`Gateway` puts a protocol `ServerConnection` in front of the `Lobby` for
each connection the shell accepts. The shell (the trio server) only moves
bytes and time:

    gateway.open(conn, now)                  a connection was accepted
    gateway.receive_data(conn, data, now)    bytes arrived (b"" at end of file)
    gateway.data_to_send(conn) -> bytes      what to write now
    gateway.must_close(conn) -> bool         close once those bytes are written
    gateway.wants_data(conn) -> bool         read more from it now (else wait)
    gateway.closed(conn, now)                the connection is gone
    gateway.tick(now); gateway.next_deadline()
    gateway.take_effects()                   bots to start or stop, records to keep, faults to log

Everything a client can get wrong is answered here or in the lobby with an
error of the catalog: a broken frame or handshake closes the connection,
anything else is refused and the connection goes on. The protocol's own
checks (request ids, the cap on requests awaiting their answer) are the
`ServerConnection`'s; the cap of 256 requests awaiting their answer is
counted here, as answers the client has not read: the core answers each
request at once, so what waits is the answer in the outbox, until the
shell takes it (`data_to_send`). A client that sends no `hello` within
`handshake_timeout`, or nothing at all for `idle_timeout` seconds, is told
``timeout`` and closed; so is a client that does not read what it is sent
(more than `max_outbox` bytes waiting): a slow client is dropped, never
waited for, and may reconnect and resume.

A connection is paced by not reading it, never by refusing what it sent:
its messages are taken at the rate of its token bucket (`message_burst` at
once, then `message_rate` a second), `SLICE` in a row before the other
connections' inputs come first (its next turn is a tick due at once: see
`_take`), and one at a time while the record it
asked for is being read (`get_record`: its answer may be large, and the
next request waits for it to be written). Meanwhile its bytes stay where
they are: the gateway holds what it was given, and the shell reads no more
from the socket while `wants_data` is false, so TCP slows the client down
and a flood costs the server no more than the rate it allows.

If the core fails on an input (a bug), the request is answered
``internal`` and a `Fault` effect tells the shell to log it; the server
goes on.
"""

from __future__ import annotations

import math
import secrets
import traceback
from collections.abc import Hashable
from dataclasses import dataclass, field, replace

from oriflamme.protocol import identity
from oriflamme.protocol import messages as m
from oriflamme.protocol.codec import FrameLimits
from oriflamme.protocol.connection import CLOSED, NEED_DATA, ConnectionState, ServerConnection
from oriflamme.protocol.errors import (
    BAD_SIGNATURE,
    INTERNAL,
    INVALID_FIELD,
    KEY_REQUIRED,
    NO_SUCH_RECORD,
    RATE_LIMITED,
    SERVER_BUSY,
    SHUTTING_DOWN,
    TIMEOUT,
    UNEXPECTED_MESSAGE,
    LocalProtocolError,
    RemoteProtocolError,
)

from .admission import Buckets
from .effects import Close, Effect, ErrorSent, Fault, FetchRecord, Send
from .lobby import Lobby


@dataclass(slots=True)
class _Link:
    """One accepted connection."""

    connection: ServerConnection
    opened: float
    last_heard: float
    outbox: bytearray = field(default_factory=bytearray)
    closing: bool = False
    welcomed: bool = False
    unread: int = 0  # answers written since the shell last took the outbox
    # The ids of those answers: the client awaits them still (made at first use)
    answered: set[int] | None = None
    address: str | None = None  # the peer's address (None: not counted)
    limited: bool = True  # its messages are rate limited (not a server bot's)
    tokens: float = 0.0  # the token bucket of its messages
    refilled: float = 0.0  # when the bucket was last refilled
    fetching: bool = False  # a record it asked for is being read: take nothing more
    resume_at: float | None = None  # its bucket is empty until then: take nothing more
    challenge: bytes | None = None  # the nonce of the challenge sent to its hello with a key


PACE = 0.1  # seconds: a connection past its message rate is taken again this often
SLICE = 8  # messages of one connection taken in a row, before the others' turn
# What a message costs of its connection's bucket, where it sets going much
# more than its answer: a room, a game (its deal, its record, its bots).
# The others cost one. A host may still start a game every quarter second.
# These also come out of their address's budget (`work_rate` a second,
# `work_burst` at once): by default 20 games at once, then one every 2.5 s.
COSTS: dict[type[m.Message], int] = {m.CreateRoom: 20, m.StartGame: 50, m.AddBot: 10}


class Gateway:
    """The server's connections and its lobby; see the module docstring."""

    def __init__(
        self,
        lobby: Lobby,
        *,
        handshake_timeout: float = 10.0,
        max_outbox: int = 1 << 20,
        max_unread: int = 256,
        allow_anonymous: bool = True,
    ) -> None:
        self.lobby = lobby
        # A hello without a key is refused (`key_required`) unless allowed.
        # Not the lobby's: a hello refused here never reaches the journal.
        self.allow_anonymous = allow_anonymous
        self._signing = identity.private_key(lobby.server_key_seed())
        self.handshake_timeout = handshake_timeout
        self.max_unread = max_unread
        self.idle_timeout = float(lobby.config.idle_timeout)
        self.max_outbox = max_outbox
        config = lobby.config
        self._frame_limits = FrameLimits(config.max_frame, config.max_depth, config.max_items)
        self._links: dict[Hashable, _Link] = {}
        self._effects: list[Effect] = []
        self._dirty: set[Hashable] = set()
        self._per_address: dict[str, int] = {}
        self._sweep_at = math.inf  # never later than the connections' earliest deadline
        self._paused: set[Hashable] = set()  # links whose bucket is empty
        # The rooms and games each address sets going (see `COSTS`).
        self._work = Buckets(rate=config.work_rate, burst=config.work_burst)

    # ------------------------------------------------------------ the shell's calls

    def open(
        self, conn: Hashable, now: float, *, address: str | None = None, limited: bool = True
    ) -> None:
        """A connection was accepted, from `address` (its host: connections
        from one address are counted; None: not counted). `limited`: its
        messages are rate limited (a server bot's are not)."""
        if conn in self._links:
            raise ValueError(f"connection {conn!r} is open already")
        config = self.lobby.config
        link = _Link(
            ServerConnection(receive=self._frame_limits),
            now,
            now,
            address=address,
            limited=limited,
            tokens=float(config.message_burst),
            refilled=now,
        )
        self._links[conn] = link
        self._sweep_at = min(self._sweep_at, now + self.handshake_timeout)
        if address is not None:
            count = self._per_address.get(address, 0) + 1
            self._per_address[address] = count
            if count > config.connections_per_address:
                error = RemoteProtocolError(
                    SERVER_BUSY,
                    f"too many connections from your address ({config.connections_per_address}"
                    " at most): close some, or try later",
                    fatal=True,
                )
                self._refuse(conn, link, error)

    def receive_data(self, conn: Hashable, data: bytes, now: float) -> None:
        link = self._links.get(conn)
        if link is None or link.closing:
            return
        link.connection.receive_data(data)
        self._take(conn, link, now)

    def _take(self, conn: Hashable, link: _Link, now: float) -> None:
        """Handle the messages `conn` sent, while it may send them (see the
        module docstring); the others wait in the connection's buffer."""
        connection = link.connection
        taken = 0
        while not link.closing and not link.fetching and link.resume_at is None:
            if taken == SLICE and connection.buffered:
                # Its turn is over: the others' inputs come first (a tick at
                # once takes it again), so that a burst cannot hold the core.
                self._pause(conn, link, now, until=now)
                break
            taken += 1
            counted = link.limited and connection.buffered > 0
            if counted and not self._take_token(link, now):
                self._pause(conn, link, now)
                break
            try:
                message = connection.next_message()
            except RemoteProtocolError as error:
                # (the connection keeps it, and raises it again at every call:
                # without the frames it came through, which hold the
                # connection, nor what it was raised from, it is in no garbage
                # cycle, which the collector would free only hourly: `tuning`)
                error.__traceback__ = error.__context__ = None
                link.last_heard = now  # a whole frame, though a bad one
                if error.id is not None and link.answered and error.id in link.answered:
                    # (a second hello, say) Its id is one whose answer is on
                    # its way: to the client that id is pending still, so the
                    # refusal goes without it, as for any request reusing it.
                    connection.dropped(error.id)
                    error.id = None
                self._refuse(conn, link, error)
                continue
            if (message is NEED_DATA or message is CLOSED) and counted:
                link.tokens += 1  # no message: its token back
            if message is NEED_DATA:
                break
            if message is CLOSED:
                link.closing = True
                self._dirty.add(conn)
                break
            assert isinstance(message, m.Message)
            # Only whole frames count as heard: a client that trickles the
            # bytes of a frame it never finishes (slowloris) is idle.
            link.last_heard = now
            cost = COSTS.get(type(message), 1) if counted else 1
            if cost > 1:
                # What it sets going costs more, of the connection's bucket
                # (it may go below 0: a longer wait) and of its address's.
                link.tokens -= cost - 1
                wait = 0.0 if link.address is None else self._work.take(link.address, now, cost)
                if wait:
                    self._carry_out(self._too_much_work(conn, message, wait))
                    continue
            self._carry_out(self._handle(conn, link, message, now))

    def _too_much_work(self, conn: Hashable, message: m.Message, wait: float) -> list[Effect]:
        """Refuse `message`: its address set going all the rooms and games it
        may for a while."""
        error = RemoteProtocolError(
            RATE_LIMITED,
            f"{message.TYPE}: your address made too many rooms and games lately;"
            f" try again in {math.ceil(wait):d} s",
            id=getattr(message, "id", None),
        )
        return [Send(conn, m.error_message(error))]

    def _pause(self, conn: Hashable, link: _Link, now: float, until: float | None = None) -> None:
        """Take nothing from `conn` until `until`, or, by default, until its
        bucket has tokens again."""
        if until is None:
            config = self.lobby.config
            # Taken again once it has a tenth of a second's worth of tokens
            # (one at least): each wake-up of the core costs more than a message.
            enough = min(float(config.message_burst), max(1.0, config.message_rate * PACE))
            wait = (enough - link.tokens) / config.message_rate
            until = max(now + wait, math.nextafter(now, math.inf))  # (always later)
        link.resume_at = until
        self._paused.add(conn)
        self._dirty.add(conn)  # (the shell stops reading it)

    def wants_data(self, conn: Hashable) -> bool:
        """Whether the shell should read more from `conn` now: not while it
        may send nothing more (its bucket empty, a record of its on the way)."""
        link = self._links.get(conn)
        return link is not None and not (link.closing or link.fetching or link.resume_at)

    def data_to_send(self, conn: Hashable) -> bytes:
        """Everything waiting for `conn`; what is handed over counts as read."""
        link = self._links.get(conn)
        if link is None or not link.outbox:
            return b""
        data = bytes(link.outbox)
        link.outbox.clear()
        link.unread = 0
        link.answered = None
        return data

    def must_close(self, conn: Hashable) -> bool:
        link = self._links.get(conn)
        return link is None or link.closing

    def closed(self, conn: Hashable, now: float) -> None:
        link = self._links.pop(conn, None)
        self._paused.discard(conn)
        if link is not None and link.address is not None:
            left = self._per_address.get(link.address, 1) - 1
            if left > 0:
                self._per_address[link.address] = left
            else:
                self._per_address.pop(link.address, None)
        if link is not None:
            try:
                effects = self.lobby.closed(conn, now)
            except Exception:  # a bug of ours: report it, go on
                effects = [Fault(conn, traceback.format_exc())]
            self._carry_out(effects)

    def tick(self, now: float) -> None:
        """Time passed: connections paused and their deadlines, then the lobby's timers."""
        for conn in [c for c in self._paused if self._links[c].resume_at <= now]:  # type: ignore[operator]
            self._paused.discard(conn)
            link = self._links[conn]
            link.resume_at = None
            self._dirty.add(conn)  # (the shell reads it again)
            self._take(conn, link, now)
        if now >= self._sweep_at:
            self._sweep(now)
        try:
            effects = self.lobby.tick(now)
        except Exception:  # a bug of ours: report it; the next tick tries again
            effects = [Fault(None, traceback.format_exc())]
        self._carry_out(effects)

    def next_deadline(self) -> float | None:
        """When `tick` may have something to do next: never later than the
        next deadline, maybe earlier (None: nothing waits)."""
        lobby = self.lobby.next_deadline()
        times = [t for t in (lobby, self._sweep_at) if t is not None and t != math.inf]
        times += [self._links[c].resume_at for c in self._paused]  # type: ignore[misc]
        return min(times, default=None)

    # The connections' deadlines (a hello within the handshake timeout, then
    # something within the idle timeout) are swept together, not looked up
    # at every input: `_sweep_at` is never later than the earliest of them
    # (a deadline only moves later when a connection is heard), so each one
    # fires on time, and a server holding thousands of idle connections
    # scans them once in a long while rather than at every message.

    def _sweep(self, now: float) -> None:
        """Close the connections past their deadline; find the next one."""
        earliest = math.inf
        for conn, link in list(self._links.items()):
            if link.closing:
                continue
            # The deadline compared is the one returned by `next_deadline`
            # (not `now - last_heard >= timeout`, which float rounding can
            # make disagree with it): a deadline returned is a deadline
            # consumed, or a virtual clock would come back to it for ever.
            if not link.welcomed:
                deadline = link.opened + self.handshake_timeout
                if now >= deadline:
                    self._close(conn, link, TIMEOUT, "no hello came in time")
                    continue
            else:
                deadline = link.last_heard + self.idle_timeout
                if now >= deadline:
                    self._close(
                        conn, link, TIMEOUT, f"nothing received for {self.idle_timeout:g} s"
                    )
                    continue
            earliest = min(earliest, deadline)
        self._sweep_at = earliest

    def shut_down(self) -> None:
        """Tell every client the server is shutting down (they may resume later)."""
        for conn, link in list(self._links.items()):
            if not link.closing:
                self._close(
                    conn, link, SHUTTING_DOWN, "the server is shutting down; come back later"
                )

    def record_loaded(
        self,
        conn: Hashable,
        request_id: int | None,
        record_id: str,
        data: bytes | None,
        now: float,
    ) -> None:
        """The answer to a `FetchRecord`: the record's bytes, or None if there
        is no such record. The connection's next messages are taken."""
        link = self._links.get(conn)
        if link is None or link.closing:
            return
        link.fetching = False
        self._dirty.add(conn)  # (the shell reads it again)
        if data is None:
            error = RemoteProtocolError(
                NO_SUCH_RECORD, f"no record {record_id} here", id=request_id
            )
            self._write(conn, link, m.error_message(error))
        elif len(data) > m.RECORD_BYTES.most:
            # (one frame carries it: this version's games write 5 to 30 KB,
            # but a game's seat changes are not bounded)
            error = RemoteProtocolError(
                INTERNAL,
                f"record {record_id} is {len(data)} bytes, more than one answer carries"
                f" ({m.RECORD_BYTES.most}): the server's operator can export it",
                id=request_id,
            )
            self._write(conn, link, m.error_message(error))
            self._effects.append(Fault(conn, f"record {record_id}: {len(data)} bytes, too large"))
        else:
            self._write(conn, link, m.RecordData(record_id=record_id, data=data, id=request_id))
        self._take(conn, link, now)

    def take_dirty(self) -> set[Hashable]:
        """The connections with bytes to send, or to close, since the last call:
        the ones to look at (`data_to_send`, `must_close`) after an input."""
        dirty, self._dirty = self._dirty, set()
        return dirty

    def take_effects(self) -> list[Effect]:
        """The effects for the shell itself (bots, records to keep and to read,
        faults), in order."""
        effects, self._effects = self._effects, []
        return effects

    # ------------------------------------------------------------ inside

    def _handle(self, conn: Hashable, link: _Link, message: m.Message, now: float) -> list[Effect]:
        request_id = getattr(message, "id", None)
        if link.answered is not None and request_id in link.answered:
            # Its answer is not on its way yet: to the client, that id is pending.
            link.connection.dropped(request_id)
            error = RemoteProtocolError(
                UNEXPECTED_MESSAGE,
                f"request id {request_id} is still awaiting its answer: requests sent before"
                " their answers arrive need ids of their own",
            )
            return [Send(conn, m.error_message(error))]
        if link.unread >= self.max_unread:
            # The client asks without reading the answers: refuse, without its id.
            error = RemoteProtocolError(
                RATE_LIMITED, f"more than {self.max_unread} answers wait for you to read them"
            )
            link.connection.dropped(request_id)
            return [Send(conn, m.error_message(error))]
        try:
            if isinstance(message, m.Hello):
                if message.key is not None:
                    return self._challenge(conn, link, message)
                if not self.allow_anonymous and link.limited:
                    # (a server bot's link is not limited: the server's own, admitted)
                    return _refused_hello(
                        conn,
                        KEY_REQUIRED,
                        "this server admits only players with a key (hello.key): see Keys"
                        " and the handshake",
                        message.id,
                    )
                return self._welcome(conn, link, message, now)
            if isinstance(message, m.Prove):
                return self._proved(conn, link, message, now)
            return self.lobby.request(conn, message, now)
        except Exception:  # a bug of ours: answer, report, go on
            # Without a session (a failed hello or prove) the connection cannot go on.
            hello = isinstance(message, m.Hello | m.Prove)
            error = RemoteProtocolError(
                INTERNAL, "the server failed on this request", id=request_id, fatal=hello
            )
            fault = Fault(conn, traceback.format_exc())
            if hello:
                return [Close(conn, m.error_message(error)), fault]
            return [Send(conn, m.error_message(error)), fault]

    def _welcome(self, conn: Hashable, link: _Link, hello: m.Hello, now: float) -> list[Effect]:
        """The lobby opens (or resumes) the session of `hello`, whose key, if
        any, is proved."""
        link.welcomed = True
        self._sweep_at = min(self._sweep_at, now + self.idle_timeout)
        return self.lobby.hello(conn, hello, now, address=link.address)

    def _challenge(self, conn: Hashable, link: _Link, hello: m.Hello) -> list[Effect]:
        """A hello with a key: the server's key, proved (docs/PROTOCOL.md,
        "Keys and the handshake"); the client's `prove` comes next. The
        nonce is fresh randomness, not the lobby's stream: it is no input,
        and a replay of the journal never sees it."""
        assert hello.key is not None and hello.nonce is not None  # (the connection checked)
        if not identity.usable_key(hello.key):
            return _refused_hello(
                conn,
                INVALID_FIELD,
                "hello.key: not an Ed25519 public key a player may have (a point of small"
                " order, or not canonically encoded)",
                hello.id,
            )
        nonce = secrets.token_bytes(identity.NONCE_SIZE)
        link.challenge = nonce
        proof = identity.server_proof(hello.nonce, nonce, hello.key)
        challenge = m.Challenge(
            server_key=self.lobby.server_key,
            nonce=nonce,
            signature=identity.sign(self._signing, proof),
            id=hello.id,
        )
        return [Send(conn, challenge)]

    def _proved(self, conn: Hashable, link: _Link, prove: m.Prove, now: float) -> list[Effect]:
        """The client's proof: if its signature holds, the hello goes on as
        the player of its key; if not, nothing is opened (fatal)."""
        hello = link.connection.hello
        nonce = link.challenge
        assert hello is not None and hello.key is not None and hello.nonce is not None
        assert nonce is not None  # (the connection takes a prove only after the challenge)
        proof = identity.client_proof(self.lobby.server_key, nonce, hello.nonce, hello.key)
        if not identity.verify(hello.key, prove.signature, proof):
            return _refused_hello(
                conn,
                BAD_SIGNATURE,
                "prove.signature: not your key's signature of your proof (see Keys and"
                " the handshake)",
                prove.id,
            )
        link.challenge = None
        # (the welcome answers the prove: the hello's own id was answered)
        return self._welcome(conn, link, replace(hello, id=prove.id), now)

    def _take_token(self, link: _Link, now: float) -> bool:
        """One message's worth of the link's token bucket, if there is one."""
        config = self.lobby.config
        link.tokens = min(
            float(config.message_burst), link.tokens + (now - link.refilled) * config.message_rate
        )
        link.refilled = now
        if (
            link.tokens < 1 - 1e-9
        ):  # (a bucket refilled to its resume time is not short by a rounding)
            return False
        link.tokens = max(0.0, link.tokens - 1)
        return True

    def _refuse(self, conn: Hashable, link: _Link, error: RemoteProtocolError) -> None:
        """A message the protocol refuses: tell the client; close if fatal."""
        self._write(conn, link, m.error_message(error))
        if error.fatal or link.connection.state is ConnectionState.ERROR:
            link.closing = True

    def _carry_out(self, effects: list[Effect]) -> None:
        for effect in effects:
            if isinstance(effect, Send):
                link = self._links.get(effect.conn)
                if link is not None and not link.closing:
                    self._write(effect.conn, link, effect.message, effect.frame)
            elif isinstance(effect, Close):
                link = self._links.get(effect.conn)
                if link is not None and not link.closing:
                    self._write(effect.conn, link, effect.error)
                    link.closing = True
            else:
                if isinstance(effect, FetchRecord):
                    link = self._links.get(effect.conn)
                    if link is not None:
                        link.fetching = True  # its next request waits for the record
                self._effects.append(effect)

    def _write(
        self, conn: Hashable, link: _Link, message: m.Message, frame: bytes | None = None
    ) -> None:
        try:
            data = link.connection.send(message, frame)
        except LocalProtocolError as error:
            self._effects.append(Fault(conn, f"could not send {message.TYPE}: {error}"))
            return
        link.outbox += data
        self._dirty.add(conn)
        if isinstance(message, m.Error):
            self._effects.append(ErrorSent(conn, message))
        if message.ROLE == "reply":
            link.unread += 1
            request_id = getattr(message, "id", None)
            if request_id is not None:
                if link.answered is None:
                    link.answered = set()
                link.answered.add(request_id)
        if len(link.outbox) > self.max_outbox and not link.closing:
            # The client does not read: drop it (it can resume), never wait for it.
            link.outbox.clear()
            self._close(conn, link, TIMEOUT, f"more than {self.max_outbox} bytes left unread")

    def _close(self, conn: Hashable, link: _Link, code: str, why: str) -> None:
        self._write(conn, link, m.error_message(RemoteProtocolError(code, why)))
        link.closing = True


def _refused_hello(conn: Hashable, code: str, why: str, request_id: int | None) -> list[Effect]:
    """A handshake refused (a `hello`, or its `prove`): said, and closed, as
    no session was opened."""
    error = RemoteProtocolError(code, why, id=request_id, fatal=True)
    return [Close(conn, m.error_message(error))]

"""A client's session with a server, over trio: a connection kept up, requests
and their answers, the pushes mirrored, reconnection and resume.

How this works
--------------
`Session.run` connects (through a `Connector`: a TCP connection, or an
in-memory stream for a bot inside the server), sends `hello`, and reads:
every message goes through a `ClientEndpoint` into the session's
`ClientState`, which outlives the connection. When the connection drops,
`run` connects again, with backoff, and resumes the session with its token
and the `seq` of the last push it got, so the server sends what was missed;
it stops for good only when the server says the session is over
(``bad_token``, ``session_replaced``...) or the session is closed.

`request(message)` sends a request on the current connection and waits for
its answer: the reply, or `RequestRefused` with the server's error, or
`ConnectionLost` if the connection went down first (the request may or may
not have been carried out: look at the state). A lobby request whose answer
was lost with its connection is asked again once the session has resumed,
where that is safe (`RETRIED`): a request that only reads (`list_rooms`,
`list_records`, `get_record`, `ping`, `sync`) is sent again as it is; one
that changes something (`ready`, `create_room`, `join_room`, `spectate`,
`leave_room`, `start_game`, `add_bot`, `remove_bot`) is checked first
against the resumed mirror (after a `ping` round trip, so that the resume's
pushes are in it): done already, it is answered ``ok`` without being sent
again; not done, it is sent again. Chat lines and game messages are never
sent again by `request` (a line said twice is worse than one lost; a
session's `Behaviour` answers a decision again by itself).
`wait_until(test)` waits for the mirror to change until `test()` holds.

A `Behaviour` (`oriflamme.client.bots`) makes the session play by itself:
after every batch of pushes it sends what the behaviour says (the seed
commitment, openings, the final reveal, and a bot's decisions). A bot that
searches (`Bot.slow`) gets the clock for its time budget from here, and
decides off the event loop (`thinking`: in worker processes inside a
server, else in a worker thread), so that its 200 ms of thought do not stop
the event loop serving everything else (a server's other rooms). The reader waits for the
answer before it reads on, so the mirror does not change under the bot.

Secrets: with a `SecretStore`, a seat's secrets are read from it when a game
starts (a client that was killed takes its seat back), and written to it
before anything that binds them is sent (not before: a client that comes
back to a game already over, whose secrets it deleted, writes none again);
a game the mirror drops before its end (cancelled before it began, left,
handed over) has its secrets deleted, and a game that ended has them
deleted by whoever checks its record (`forget_secrets`: `oriflamme bot`,
the terminal client), once it verifies. The session token is kept there
too, per server: by the server's id (`welcome.server_id`), whatever address
reached it. The token goes in `hello`, before the server's id is known, so
the store keeps the id last learnt at each address, and a `Session` sends
the token of that server. At an address it has never used, it connects
without a token; if the `welcome` then names a server it keeps a session
with (reached before by another address), it closes that connection and
connects again with the kept token: one connection more, and a session
the server lets go a minute later (one that never sat in a room), the
first time an address is used. A kept token the server refuses
(``bad_token``: the session expired, or another server now answers at
the address) is not the end of it: the session goes on without it, as a
new one (a token given to the `Session` itself still ends it); so does a
token the server gave this session and no longer knows (it was restored
from a backup taken before, or the session expired while away).

A server restored from a backup, or that lost its last transactions, may
be behind what the session saw (a placement it never accepted, a game we
saw end still in play): it is authoritative. The mirror reconciles
(`state`: the placement is forgotten and decided again, the game goes on),
says so in `state.notices`, which the session logs, and a game we saw end
that goes on has its secrets written again (`SecretStore.keep_again`).

    async with open_session(tcp("example.org", 7531), "Ann") as session:
        rooms = await session.request(messages.ListRooms())
"""

from __future__ import annotations

import contextlib
import logging
import math
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial

import trio
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from oriflamme.engine import Rules
from oriflamme.protocol import messages as m
from oriflamme.protocol.errors import (
    BAD_SIGNATURE,
    BAD_TOKEN,
    HANDSHAKE_REQUIRED,
    INVALID_FIELD,
    KEY_REQUIRED,
    NAME_TAKEN,
    SESSION_REPLACED,
    UNSUPPORTED_VERSION,
    WRONG_STATE,
    LocalProtocolError,
    ProtocolError,
)

from .bots import Behaviour, seen_position
from .endpoint import CLIENT_NAME, ClientEndpoint
from .i18n import _
from .identity import KeyChange, ServerKeys
from .seat_secrets import SeatSecrets
from .secret_store import SecretStore
from .state import ClientState, GameMirror
from .thinking import think

log = logging.getLogger("oriflamme.client")

Connector = Callable[[], Awaitable[trio.abc.Stream]]

# A fatal error that ends the session: reconnecting would not help.
ENDING = frozenset(
    {
        BAD_TOKEN,
        SESSION_REPLACED,
        UNSUPPORTED_VERSION,
        HANDSHAKE_REQUIRED,
        KEY_REQUIRED,
        BAD_SIGNATURE,
        NAME_TAKEN,
    }
)
READ_SIZE = 65536


def _ends(error: m.Error, endpoint: ClientEndpoint) -> bool:
    """Whether a fatal `error` ends the session: connecting again would not
    help (a bad token, a version the server does not speak, a hello it
    refuses, such as a name too long for it)."""
    return error.code in ENDING or (endpoint.welcome is None and error.code == INVALID_FIELD)


async def _behave(behaviour: Behaviour, client: Session) -> list[m.Message]:
    """What `behaviour` sends now. A searching bot thinks off the event loop
    (`thinking.think`), on a position and options made here: the thread or
    process touches nothing the session touches (the mirror, the secrets);
    what to send is made here."""
    bot, game = behaviour.bot, client.state.game
    turn = behaviour.owed_turn(client)
    if bot is not None and bot.slow and game is not None and turn is not None and game.options():
        position, options = seen_position(game), game.options()
        bot.ready(turn, await think(bot, position, options, turn))
    return behaviour.messages(client)


def _kept_or_new(store: SecretStore, rules: Rules, game_id: bytes, seat: int) -> SeatSecrets:
    """A seat's secrets: those `store` keeps, or new ones, written only when
    something that binds them is sent (`Session._send`)."""
    kept = store.load(game_id, seat)
    return kept if kept is not None else SeatSecrets(rules, game_id, seat)


def tcp(host: str, port: int) -> Connector:
    """A connector that opens a TCP connection to `host`:`port`."""

    async def connect() -> trio.abc.Stream:
        return await trio.open_tcp_stream(host, port)

    return connect


class SessionError(Exception):
    """The session could not do what was asked."""


class RequestRefused(SessionError):
    """The server answered a request with an error (`error`)."""

    def __init__(self, error: m.Error) -> None:
        super().__init__(f"{error.code}: {error.message}")
        self.error = error


class ConnectionLost(SessionError):
    """The connection went down before the answer came."""


class SessionEnded(SessionError):
    """The session is over: the server ended it (`error`, its fatal error),
    or it could not be reached."""

    def __init__(self, why: str, error: m.Error | None = None) -> None:
        super().__init__(why)
        self.error = error


@dataclass(frozen=True, slots=True)
class Backoff:
    """Waits between attempts to connect: `first`, times `factor` each time,
    at most `most` seconds, each randomised by +-`jitter` (so that clients
    cut off together do not all come back at the same instant)."""

    first: float = 0.25
    factor: float = 2.0
    most: float = 10.0
    jitter: float = 0.2
    attempts: int | None = None  # None: for ever
    # Before the first `welcome`: a server never reached is more likely a
    # wrong address than a restart, so a command may give up sooner.
    first_attempts: int | None = None  # None: as `attempts`

    def delay(self, attempt: int, rng: random.Random) -> float:
        base = min(self.most, self.first * self.factor**attempt)
        return base * (1 + self.jitter * (2 * rng.random() - 1))


def _lost() -> contextlib.suppress:
    """The connection went down (or the server broke the protocol): what was
    being done on it stops, and the session connects again."""
    return contextlib.suppress(
        trio.BrokenResourceError, trio.ClosedResourceError, ProtocolError, OSError
    )


class _Link:
    """One connection of the session."""

    def __init__(self, stream: trio.abc.Stream, endpoint: ClientEndpoint) -> None:
        self.stream = stream
        self.endpoint = endpoint
        self.send_lock = trio.StrictFIFOLock()
        self.waiting: dict[int, trio.Event] = {}
        self.lost = False
        self.last_sent = trio.current_time()

    async def send(self, data: bytes) -> None:
        async with self.send_lock:
            await self.stream.send_all(data)
            self.last_sent = trio.current_time()


class Session:
    """One session with one server; see the module docstring."""

    def __init__(
        self,
        connect: Connector,
        name: str,
        *,
        server: str = "",
        store: SecretStore | None = None,
        behaviour: Behaviour | None = None,
        token: bytes | None = None,
        make_secrets: Callable[[Rules, bytes, int], SeatSecrets] | None = None,
        backoff: Backoff | None = None,
        connect_timeout: float = 10.0,
        client: str = CLIENT_NAME,
        rng: random.Random | None = None,
        key: Ed25519PrivateKey | None = None,
        server_keys: ServerKeys | None = None,
        versions: tuple[int, ...] = m.SUPPORTED_VERSIONS,
    ) -> None:
        self._connect = connect
        self.name = name
        self.versions = versions  # the protocol versions offered
        # The player's key (None: anonymous), and the server keys pinned
        # (None: none are; `key_change` says if this server's changed).
        self.key = key
        self.server_keys = server_keys
        self.key_change: KeyChange | None = None
        self.server = server
        self.store = store
        self.behaviour = behaviour
        if behaviour is not None and behaviour.bot is not None:
            behaviour.bot.use_clock(time.perf_counter)
        self.backoff = backoff if backoff is not None else Backoff()
        self.connect_timeout = connect_timeout
        self.client = client
        self._rng = rng if rng is not None else random.Random()
        if make_secrets is None and store is not None:
            make_secrets = partial(_kept_or_new, store)
        self.state = ClientState(make_secrets=make_secrets)
        self.answered: tuple[bytes, int] | None = None  # (game id, turn)
        self.token = token
        self._given = token  # a token the caller gave: refused, it ends the session
        self._notices = 0  # how many of `state.notices` are logged
        self.seq: int | None = None
        # The server's id, from its last `welcome` (None: not known, or it sends none).
        self.server_id: bytes | None = None
        # A kept token sent before any `welcome` of this run took it: the
        # server may refuse it, and the session then goes on without it.
        self._kept: bytes | None = None
        self._refused: set[bytes] = set()  # kept tokens the server refused
        self._spare: bytes | None = None  # the session opened before switching to a kept one
        self._at_once = False  # connect again without waiting
        if token is None and store is not None and server:
            kept = store.load_session(server)
            if kept is not None:
                self.token = self._kept = kept[0]
        self.ended: SessionError | None = None
        self._link: _Link | None = None
        self._connected = trio.Event()
        self._changed = trio.Event()
        self._cancel: trio.CancelScope | None = None
        # Called (in the session's task) after every change of the mirror or
        # of the connection: a UI redraws from it.
        self.on_change: Callable[[], None] | None = None

    # ------------------------------------------------------------ queries

    @property
    def connected(self) -> bool:
        return self._link is not None and not self._link.lost

    # ------------------------------------------------------------ running

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Keep the session connected until it ends or is cancelled; started
        (for `nursery.start`) at the first `welcome`. Raises `SessionEnded`."""
        attempt = 0
        started = False
        with trio.CancelScope() as self._cancel:
            while True:
                try:
                    with trio.fail_after(self.connect_timeout):
                        stream = await self._connect()
                except (OSError, trio.TooSlowError) as exc:
                    reason = str(exc) or "no answer in time"
                    limit = self.backoff.attempts
                    if not started and self.backoff.first_attempts is not None:
                        limit = self.backoff.first_attempts
                    if limit is not None and attempt >= limit:
                        said = _("cannot reach the server: {why}").format(why=reason)
                        self.ended = SessionEnded(said)
                        self._notify()  # (what waits for a connection learns there is none)
                        raise self.ended from None
                    delay = self.backoff.delay(attempt, self._rng)
                    log.log(
                        logging.INFO if started else logging.WARNING,
                        "cannot reach the server (%s): trying again in %.1f s",
                        reason,
                        delay,
                    )
                    await trio.sleep(delay)
                    attempt += 1
                    continue

                def on_welcome() -> None:
                    nonlocal started, attempt
                    attempt = 0
                    if not started:
                        started = True
                        task_status.started()

                await self._connection(stream, on_welcome)
                if self.ended is not None:
                    raise self.ended
                if self._at_once:  # (to resume a kept session, or go on without it)
                    self._at_once = False
                    continue
                await trio.sleep(self.backoff.delay(attempt, self._rng))
                attempt += 1

    def close(self) -> None:
        """Stop the session (its `run` returns)."""
        if self._cancel is not None:
            self._cancel.cancel()

    async def _connection(self, stream: trio.abc.Stream, on_welcome: Callable[[], None]) -> None:
        endpoint = ClientEndpoint(
            self.name,
            token=self.token,
            seq=self.seq,
            state=self.state,
            client=self.client,
            key=self.key,
            versions=self.versions,
        )
        # What was sent on the last connection may never have arrived: answer again
        # whatever is still pending (a late duplicate is refused as stale, harmlessly).
        self.answered = None
        try:
            hello = endpoint.hello()
        except LocalProtocolError as exc:  # (a name the protocol refuses): no retry helps
            self.ended = SessionEnded(f"{exc.code}: {exc.message}")
            with trio.CancelScope(shield=True), trio.move_on_after(1):
                await stream.aclose()
            return
        link = _Link(stream, endpoint)
        self._link = link
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._pinger, link)
                with _lost():
                    await link.send(hello)
                    await self._reader(link, on_welcome)
                nursery.cancel_scope.cancel()
        finally:
            link.lost = True
            for event in link.waiting.values():
                event.set()
            self._connected = trio.Event()
            self._notify()
            with trio.CancelScope(shield=True), trio.move_on_after(1):
                await stream.aclose()

    async def _reader(self, link: _Link, on_welcome: Callable[[], None]) -> None:
        endpoint = link.endpoint
        while not endpoint.closed:
            data = await link.stream.receive_some(READ_SIZE)
            before = self.state.game
            received = endpoint.receive_data(bytes(data))
            prove = endpoint.take_outgoing()
            if prove:
                await link.send(prove)
            if before is not None and self.state.game is not before:
                self._dropped(before)
            self._went_back()
            if not data:
                return
            for message in received:
                if isinstance(message, m.Welcome):
                    if self._switch(message):
                        return
                    self.token = message.token
                    self.server_id = message.server_id
                    if message.name is not None:
                        self.name = message.name  # (the name our key holds there)
                    self._check_server_key(message.server_key)
                    self._kept = self._spare = None
                    if self.store is not None and self.server:
                        self.store.save_session(
                            self.server, message.token, None, server_id=message.server_id
                        )
                    self._connected.set()
                    on_welcome()
                elif isinstance(message, m.Error) and message.fatal and _ends(message, endpoint):
                    if self._without_kept(message, endpoint):
                        return
                    self.ended = SessionEnded(f"{message.code}: {message.message}", message)
                if message.ROLE == "reply":
                    request_id = getattr(message, "id", None)
                    event = link.waiting.pop(request_id, None) if request_id is not None else None
                    if event is not None:
                        event.set()
            self.seq = endpoint.seq
            if self.state.out_of_step and self._connected.is_set():
                # (a restored server's pushes that do not follow from ours)
                self.state.out_of_step = False
                log.warning(
                    "%s: the server's pushes do not fit our game: asking for a snapshot", self.name
                )
                await self._send(link, m.Sync())
            if received:
                self._notify()
                if self.behaviour is not None and self._connected.is_set():
                    for message in await _behave(self.behaviour, self):
                        await self._send(link, message)

    def _dropped(self, game: GameMirror) -> None:
        """The mirror let go of `game`: if before its end, and not to come
        back to it (`ClientState.kept`), it was cancelled before it began,
        or our seat left it (`leave_room`, `hand_over`). It is not ours to
        take back: its secrets are of no more use."""
        if game.end is not None or game.game_id in self.state.kept:
            return
        if self.store is not None and game.seat is not None:
            log.info(
                "%s: game %s is not ours any more: its secrets are deleted",
                self.name,
                game.game_id.hex(),
            )
            self.store.forget(game.game_id, game.seat)

    def _went_back(self) -> None:
        """Log what the mirror says (`state.notices`: the server went back to
        an earlier state); the secrets of a game that goes on again are
        written again, even if its record had verified."""
        notices = self.state.notices
        while self._notices < len(notices):
            log.warning("%s: %s", self.name, notices[self._notices])
            self._notices += 1
            game = self.state.game
            if self.store is not None and game is not None and game.seat is not None:
                self.store.keep_again(game.game_id, game.seat)

    async def forget_secrets(self, game: GameMirror) -> None:
        """Delete the secrets our store keeps for our seat in `game`, a game
        over whose record verified: nothing is left to open or check."""
        if self.store is not None and game.seat is not None:
            await trio.to_thread.run_sync(self.store.forget, game.game_id, game.seat)

    def _check_server_key(self, key: bytes | None) -> None:
        """Pin the server's key at its address on first use; say so loudly
        if it shows another (it is not refused: see `client.identity`)."""
        if key is None or self.server_keys is None or not self.server:
            return
        change = self.server_keys.check(self.server, key)
        if change is not None and change != self.key_change:
            self.key_change = change
            log.warning("%s", change.warning())

    def _switch(self, welcome: m.Welcome) -> bool:
        """Whether to leave the new session `welcome` opened for the one kept
        for its server, reached before by another address (see the module
        docstring): then this connection ends, and the next sends the kept
        token (its own is the spare, should the kept one be refused)."""
        if welcome.resumed or welcome.server_id is None or self.store is None or not self.server:
            return False
        kept = self.store.load_session(self.server, server_id=welcome.server_id)
        if kept is None or kept[0] in self._refused or kept[0] == welcome.token:
            return False
        log.info("%s is a server we have a session with: resuming it", self.server)
        self._spare = welcome.token
        self.token = self._kept = kept[0]
        self._at_once = True
        return True

    def _without_kept(self, error: m.Error, endpoint: ClientEndpoint) -> bool:
        """Whether the server refused a kept token (`bad_token` before the
        first `welcome` of this token), or one it gave this session (it went
        back to before it, or the session expired): then the session goes on
        without it, as the spare one or a new one, and this connection ends.
        A token given to the `Session` itself ends it."""
        token = endpoint.token
        if error.code != BAD_TOKEN or token is None or token == self._given:
            return False
        if token == self._kept:
            log.info("the session kept for %s is over: going on with a new one", self.server)
        else:
            log.warning(
                "%s: the server no longer knows our session (restored from before it,"
                " or it expired): going on with a new one",
                self.name,
            )
        self._refused.add(token)
        self.token, self._spare, self._kept = self._spare, None, None
        self._at_once = True
        return True

    async def _pinger(self, link: _Link) -> None:
        await self._connected.wait()
        welcome = link.endpoint.welcome
        assert welcome is not None
        every = welcome.idle_timeout / 3
        with _lost():
            while True:
                await trio.sleep_until(link.last_sent + every)
                if trio.current_time() >= link.last_sent + every:
                    await self._send(link, m.Ping())

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()
        if self.on_change is not None:
            self.on_change()

    async def _send(self, link: _Link, message: m.Message) -> int:
        """Send `message` on `link` with a fresh id (its id). The seat's secrets
        are written first: what the message commits to is never lost."""
        game = self.state.game
        if (
            self.store is not None
            and game is not None
            and game.secrets is not None
            and game.end is None
        ):
            self.store.save(game.secrets)  # (only when they changed: a few times a game)
        data = link.endpoint.request(message)
        request_id = link.endpoint.last_id()
        link.waiting[request_id] = trio.Event()
        await link.send(data)
        return request_id

    # ------------------------------------------------------------ requests

    async def request(self, message: m.Message, *, timeout: float = 30.0) -> m.Message:
        """Send `message` and wait for its answer (see the module docstring):
        each try, waiting for a connection included, within `timeout`
        seconds (`trio.TooSlowError`). A request `RETRIED` is asked again
        whenever its connection goes down before its answer."""
        retry = _Retry.of(message, self.state)
        lost: _Link | None = None  # the connection the last try went down with
        while True:
            with trio.fail_after(timeout):
                link = await self._live_link(other_than=lost)
                try:
                    if lost is not None:
                        assert retry is not None
                        # The pushes that resumed the session come before this
                        # answer: after it, the mirror shows where things stand.
                        await self._ask(link, m.Ping())
                        if retry.done(self.state):
                            log.info(
                                "%s: %s was done before the connection went down",
                                self.name,
                                message.TYPE,
                            )
                            return m.Ok()
                    answer = await self._ask(link, message)
                except ConnectionLost as exc:
                    if retry is None:
                        raise
                    log.info("%s: %s: asking again once the session resumes", self.name, exc)
                    lost = link
                    continue
            break
        if isinstance(answer, m.Error):
            if lost is not None and retry is not None and retry.refusal_means_done(answer):
                before = self.state.game
                self.state.answered(message, m.Ok())
                if before is not None and self.state.game is None:
                    self._dropped(before)
                self._notify()
                return m.Ok()
            raise RequestRefused(answer)
        return answer

    async def _live_link(self, *, other_than: _Link | None = None) -> _Link:
        """The session's connection once it is up (welcomed), and not
        `other_than` (one that went down); `SessionEnded` if the session is
        over."""
        while True:
            if self.ended is not None:
                raise self.ended
            link = self._link
            if (
                link is not None
                and link is not other_than
                and not link.lost
                and not link.endpoint.closed
                and self._connected.is_set()
            ):
                return link
            await self._changed.wait()

    async def _ask(self, link: _Link, message: m.Message) -> m.Message:
        """Send `message` on `link` and wait for its answer; `ConnectionLost`
        if the connection goes down first."""
        if link.lost:  # (the answers it was waiting for were let go of)
            raise ConnectionLost(f"the connection went down before {message.TYPE}")
        try:
            request_id = await self._send(link, message)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            raise ConnectionLost(f"the connection went down while sending {message.TYPE}") from None
        except LocalProtocolError as exc:
            if exc.code != WRONG_STATE:  # a message we may not send: our bug
                raise
            # the server closed the connection just before: it is going down
            raise ConnectionLost(f"the connection closed before {message.TYPE}") from None
        event = link.waiting.get(request_id)
        if event is not None:
            await event.wait()
        answer = link.endpoint.answers.get(request_id)
        if answer is None:
            raise ConnectionLost(f"the connection went down before the answer to {message.TYPE}")
        return answer

    async def wait_until(self, test: Callable[[], bool], *, timeout: float = math.inf) -> None:
        """Wait until `test()` holds (checked at every change of the mirror)."""
        with trio.fail_after(timeout):
            while not test():
                if self.ended is not None:
                    raise self.ended
                await self._changed.wait()


# Requests that only read: asked again as they are.
READS: tuple[type[m.Message], ...] = (
    m.ListRooms,
    m.ListRecords,
    m.ListGames,
    m.GetRecord,
    m.Ping,
    m.Sync,
)
# Requests that change the room, asked again unless the resumed mirror shows
# them done (`_Retry.done`); entering a room only from no room, the others
# only from a room.
ENTERING: tuple[type[m.Message], ...] = (m.CreateRoom, m.JoinRoom, m.Spectate)
IN_A_ROOM: tuple[type[m.Message], ...] = (
    m.Ready,
    m.StartGame,
    m.AddBot,
    m.RemoveBot,
    m.LeaveRoom,
)
RETRIED = READS + ENTERING + IN_A_ROOM


def _bots(room: m.RoomState | None) -> int:
    """How many server bots sit in `room` (the stand-in is none)."""
    if room is None:
        return 0
    return sum(1 for s in room.seats if s.bot is not None and s.bot != "stand_in")


class _Retry:
    """How a request whose answer was lost with its connection is asked again
    (see the module docstring): where things stood when it was sent, and
    what the resumed mirror must show for it to be done already."""

    def __init__(self, message: m.Message, state: ClientState) -> None:
        self.message = message
        room = state.room
        self.room = None if room is None else room.room
        self.game = None if state.game is None else state.game.game_id
        self.bots = _bots(room)
        seat = getattr(message, "seat", None)
        self.seat_bot = (
            None
            if room is None or seat is None or seat >= len(room.seats)
            else room.seats[seat].bot
        )

    @classmethod
    def of(cls, message: m.Message, state: ClientState) -> _Retry | None:
        """How `message` is asked again, or None: it is not."""
        if isinstance(message, READS):
            return cls(message, state)
        if isinstance(message, ENTERING) and state.room is None:
            return cls(message, state)
        if isinstance(message, IN_A_ROOM) and state.room is not None:
            return cls(message, state)
        return None

    def done(self, state: ClientState) -> bool:
        """Whether the resumed mirror `state` shows the request carried out
        (else it is sent again)."""
        message, room = self.message, state.room
        if isinstance(message, READS):
            return False
        if isinstance(message, ENTERING):
            if room is None:
                return False
            wanted = getattr(message, "room", None)
            seated = room.seat is not None
            return (wanted is None or room.room == wanted) and seated != isinstance(
                message, m.Spectate
            )
        if room is None or room.room != self.room:
            # (left: `leave_room` is sent again, and its refusal says it was done)
            return False
        game = None if state.game is None else state.game.game_id
        started = room.state == "playing" or game != self.game
        if isinstance(message, m.Ready):
            if message.ready and started:  # the game began: we had said ready
                return True
            return room.seat is not None and room.seats[room.seat].ready == message.ready
        if isinstance(message, m.StartGame):
            return started
        seat = getattr(message, "seat", None)
        bot = None if seat is None or seat >= len(room.seats) else room.seats[seat].bot
        if isinstance(message, m.AddBot):
            if seat is not None:
                return self.seat_bot is None and bot is not None
            return _bots(room) > self.bots
        if isinstance(message, m.RemoveBot):
            return self.seat_bot is not None and bot is None
        return False

    def refusal_means_done(self, answer: m.Error) -> bool:
        """Whether the server's refusal of the request sent again says the
        first one was done: `leave_room` refused as we are in no room. (A
        `keep_seat` one is refused `wrong_state` too when the game is over:
        only "in no room" says it was done.)"""
        if not isinstance(self.message, m.LeaveRoom) or answer.code != WRONG_STATE:
            return False
        return not self.message.keep_seat or "in no room" in answer.message


@asynccontextmanager
async def open_session(connect: Connector, name: str, **options: object) -> AsyncIterator[Session]:
    """A `Session` running in the background, welcomed, closed on exit."""
    session = Session(connect, name, **options)  # type: ignore[arg-type]
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(session.run)
            try:
                yield session
            finally:
                session.close()
    except BaseExceptionGroup as group:
        # One failure (a refused request, the session ended): raise it as itself.
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise

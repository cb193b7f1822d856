"""Sans-I/O connections: bytes in, messages out; messages in, bytes out.

How this works
--------------
A `ServerConnection` or `ClientConnection` holds everything one side must
enforce about one TCP connection, and does no I/O (as h11 and wsproto):

* `receive_data(bytes)` buffers what the socket gave (``b""`` at end of
  file); `next_message()` returns the next `Message`, `NEED_DATA` when more
  bytes are needed, or `CLOSED` once the connection is over;
* `send(message)` checks that `message` may be sent now and returns the
  bytes to write.

What is enforced here, in one place: framing and the frame limit; the
handshake (the client's first message is ``hello``; the server answers
``welcome`` with a version both speak, or a fatal ``error``); request ids
(a reply echoes the id of a request still awaiting its answer, with the
reply type that request expects; ids awaiting an answer are distinct); push
numbering (``seq`` goes up by exactly one per push on a connection).

The server's checks of a request, in order (one place, `_received`):

    1. the handshake: the first message is `hello`, with a version we speak
       (else a fatal error);
    2. the request id: not the id of a request still awaiting its answer
       (``unexpected_message``, sent without an id, since that id is the
       other request's), and at most `max_pending` awaiting (``rate_limited``,
       without an id);
    3. a second `hello`: ``unexpected_message``, with its id.

Errors follow h11. Something wrong from the peer raises
`RemoteProtocolError`. If it is fatal (a broken frame, anything wrong in the
handshake) the connection enters `ConnectionState.ERROR` for good: every
later `next_message` raises the same error, and the server may still
`send` one ``error`` message to tell the client before closing. A non-fatal
one (an unknown message type, a bad field, a reused id) refused only that
message; the server answers it with ``messages.error_message(error)`` and goes on.
Something wrong that *we* try to send raises `LocalProtocolError` and sends
nothing.

A server loop looks like this:

>>> from oriflamme.protocol import messages as m
>>> from oriflamme.protocol.messages import error_message
>>> server, client = ServerConnection(), ClientConnection()
>>> server.receive_data(client.send(m.Hello(versions=(1,), client="doc", name="Ann", id=1)))
>>> hello = server.next_message()
>>> hello.name, server.version
('Ann', 1)
>>> reply = server.send(m.Welcome(version=1, token=bytes(32), player=7, server="doc",
...                               resumed=False, idle_timeout=60, id=hello.id))
>>> client.receive_data(reply)
>>> client.next_message().player, client.state
(7, <ConnectionState.OPEN: 'open'>)
>>> server.receive_data(b"\\x00\\x00\\x00\\x07\\x81\\xa4type\\xc0")   # {"type": nil}
>>> try:
...     server.next_message()
... except RemoteProtocolError as error:
...     answer = server.send(error_message(error))
...     print(error.code, error.fatal, server.state)
unknown_message False ConnectionState.OPEN
"""

from __future__ import annotations

import enum
from typing import Final, NoReturn

from .codec import (
    DEFAULT_MAX_FRAME,
    HEADER_SIZE,
    FrameDecoder,
    FrameLimits,
    check_size,
    encode_frame,
)
from .errors import (
    HANDSHAKE_REQUIRED,
    INVALID_FIELD,
    RATE_LIMITED,
    UNEXPECTED_MESSAGE,
    UNKNOWN_MESSAGE,
    UNSUPPORTED_VERSION,
    WRONG_STATE,
    LocalProtocolError,
    ProtocolError,
    RemoteProtocolError,
)
from .messages import (
    SUPPORTED_VERSIONS,
    Challenge,
    Error,
    Hello,
    Message,
    Prove,
    Sender,
    Welcome,
    from_data,
    to_data,
)


def _seq(push: Message) -> int:
    seq = getattr(push, "seq", None)
    assert isinstance(seq, int), f"{push.TYPE} is a push without seq"
    return seq


class NeedData:
    """`next_message` has no complete message yet: feed more bytes."""

    def __repr__(self) -> str:
        return "NEED_DATA"


class Closed:
    """The connection is over: the peer closed it, or a fatal error was exchanged."""

    def __repr__(self) -> str:
        return "CLOSED"


NEED_DATA: Final = NeedData()
CLOSED: Final = Closed()


class ConnectionState(enum.Enum):
    HANDSHAKE = "handshake"  # until the server's welcome
    OPEN = "open"
    CLOSED = "closed"  # end of file, or a fatal error sent or received
    ERROR = "error"  # the peer broke the protocol; sticky


class _Connection:
    """What both sides share: decoding, id bookkeeping, sticky errors."""

    _peer: Sender
    _us: Sender

    def __init__(
        self, max_frame: int = DEFAULT_MAX_FRAME, receive: FrameLimits | None = None
    ) -> None:
        self.max_frame = max_frame
        limits = receive or FrameLimits(max_frame)
        self._decoder = FrameDecoder(
            limits.max_frame, max_depth=limits.max_depth, max_items=limits.max_items
        )
        self.state = ConnectionState.HANDSHAKE
        self._error: RemoteProtocolError | None = None
        # Request ids awaiting their answer -> the reply type that answers them.
        self._pending: dict[int, str] = {}
        self._last_seq: int | None = None

    @property
    def buffered(self) -> int:
        """Bytes received but not yet handed out: never more than one incomplete
        frame once `next_message` has returned `NEED_DATA`."""
        return self._decoder.buffered

    @property
    def pending_ids(self) -> frozenset[int]:
        """Ids of requests that have not had their answer yet."""
        return frozenset(self._pending)

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        """Bytes from the socket; ``b""`` when the peer closed it."""
        if self.state in (ConnectionState.CLOSED, ConnectionState.ERROR):
            return
        self._decoder.feed(data)

    def next_message(self) -> Message | NeedData | Closed:
        """The next message from the peer, `NEED_DATA` or `CLOSED`.

        Raises `RemoteProtocolError` (see the module docstring).
        """
        if self._error is not None:
            raise self._error
        if self.state is ConnectionState.CLOSED:
            return CLOSED
        try:
            data = self._decoder.next_frame()
        except RemoteProtocolError as e:
            self._fail(e)
        if data is None:
            if self._decoder.at_eof:
                self.state = ConnectionState.CLOSED
                return CLOSED
            return NEED_DATA
        try:
            message = from_data(data, self._peer)
        except RemoteProtocolError as e:
            self._refused(e, data.get("type"))
            raise
        return self._received(message)

    def fail(self, error: RemoteProtocolError) -> NoReturn:
        """The peer sent something the layer above cannot make sense of (a
        view that contradicts itself, say): fail for good, as after a protocol
        error, and raise `error`."""
        self._fail(error)

    def _fail(self, error: RemoteProtocolError) -> NoReturn:
        error.fatal = True
        self._error = error
        self._decoder.fail(error)
        self.state = ConnectionState.ERROR
        raise error

    def _refused(self, error: RemoteProtocolError, type_: object) -> None:
        """A message (of wire type `type_`) that failed to decode: fatal in the
        handshake, else only refused."""
        raise NotImplementedError

    def _received(self, message: Message) -> Message:
        raise NotImplementedError

    def _encode(self, message: Message, frame: bytes | None = None) -> bytes:
        if self._us != message.SENDER:
            raise LocalProtocolError(
                UNKNOWN_MESSAGE, f"the {self._peer} sends {message.TYPE!r}, not the {self._us}"
            )
        if frame is None:
            return encode_frame(to_data(message), self.max_frame)
        check_size(message.TYPE, len(frame) - HEADER_SIZE, self.max_frame)
        return frame

    def _check_seq(self, seq: int, error: type[ProtocolError]) -> None:
        last = self._last_seq
        if last is not None and seq != last + 1:
            raise error(INVALID_FIELD, f"push seq {seq} does not follow {last}", fatal=True)


class ServerConnection(_Connection):
    """The server's side of one connection. See the module docstring.

    `hello` is the client's hello once received, until the welcome is sent
    (then None again: it may hold a session token, which the server keeps
    only as a digest, and a connection needs nothing of it any more; a
    server holding thousands of connections saves its memory too);
    `version` the version both speak (None before the hello).
    """

    _peer = "client"
    _us = "server"

    def __init__(
        self,
        max_frame: int = DEFAULT_MAX_FRAME,
        versions: tuple[int, ...] = SUPPORTED_VERSIONS,
        max_pending: int = 256,
        receive: FrameLimits | None = None,
    ) -> None:
        """`max_frame`: the largest frame sent or received; `receive`: what
        a received frame may hold, where the server is stricter."""
        super().__init__(max_frame, receive)
        self.versions = versions
        self.max_pending = max_pending
        self.hello: Hello | None = None
        self.version: int | None = None
        self._greeted = False  # a hello came
        self._error_sent = False
        # A hello with a key: `challenge` sent (then `prove` must come), and
        # the `prove` received (then `welcome` may be sent).
        self.challenged = False
        self.proof: Prove | None = None

    def _refused(self, error: RemoteProtocolError, type_: object) -> None:
        if not self._greeted:
            # A hello with a bad field is told which; anything else, that a hello comes first.
            if type_ != Hello.TYPE:
                error = RemoteProtocolError(
                    HANDSHAKE_REQUIRED, "the first message must be hello", id=error.id
                )
            self._fail(error)
        if self._proving:  # (between a hello with a key and its prove, nothing else)
            self._fail(error)
        if error.id is not None:
            if error.id in self._pending:
                error.id = None  # ambiguous: that id belongs to another request
            else:
                self._pending[error.id] = Error.TYPE

    def _received(self, message: Message) -> Message:
        request_id = getattr(message, "id", None)
        first = not self._greeted
        proving = not first and self._proving
        if first:
            self._handshake(message)
        elif proving:
            self._proved(message)
        elif request_id is not None:
            self._check_id(request_id)
        if not first and not proving and type(message) is Prove:
            if request_id is not None:
                self._pending[request_id] = Error.TYPE
            raise RemoteProtocolError(
                UNEXPECTED_MESSAGE, "prove answers a challenge, and none awaits it", id=request_id
            )
        if not first and type(message) is Hello:
            if request_id is not None:
                self._pending[request_id] = Error.TYPE
            raise RemoteProtocolError(
                UNEXPECTED_MESSAGE, "hello was already received", id=request_id
            )
        if request_id is not None:
            assert message.REPLY is not None
            keyed = first and isinstance(message, Hello) and message.key is not None
            self._pending[request_id] = Challenge.TYPE if keyed else message.REPLY
        return message

    @property
    def _proving(self) -> bool:
        """A hello with a key came, and its `prove` has not yet."""
        hello = self.hello
        return hello is not None and hello.key is not None and self.proof is None

    def _proved(self, message: Message) -> None:
        """What comes after a hello with a key: its `prove`, once the
        `challenge` is out, and nothing else (fatal otherwise)."""
        if type(message) is not Prove or not self.challenged:
            what = "prove" if self.challenged else "nothing, until the challenge"
            self._fail(
                RemoteProtocolError(
                    HANDSHAKE_REQUIRED,
                    f"after a hello with a key comes {what}, not {message.TYPE}",
                    id=getattr(message, "id", None),
                )
            )
        assert isinstance(message, Prove)
        self.proof = message

    def _handshake(self, message: Message) -> None:
        """The first message: a `hello` with a version both sides speak (fatal otherwise)."""
        if type(message) is not Hello:
            self._fail(
                RemoteProtocolError(
                    HANDSHAKE_REQUIRED,
                    f"the first message must be hello, not {message.TYPE}",
                    id=getattr(message, "id", None),
                )
            )
        assert isinstance(message, Hello)
        common = set(message.versions) & set(self.versions)
        if not common:
            self._fail(
                RemoteProtocolError(
                    UNSUPPORTED_VERSION,
                    f"this server speaks protocol versions {list(self.versions)}",
                    id=message.id,
                    versions=self.versions,
                )
            )
        if (message.key is None) != (message.nonce is None):
            self._fail(
                RemoteProtocolError(
                    INVALID_FIELD,
                    "hello.nonce: comes with hello.key, and only with it",
                    id=message.id,
                )
            )
        self.hello = message
        self._greeted = True
        self.version = max(common)

    def _check_id(self, request_id: int) -> None:
        """A request id must not be one awaiting its answer, and the requests
        awaiting their answer are at most `max_pending`. The error carries no
        id: the id in question belongs to another request, or to none."""
        if request_id in self._pending:
            raise RemoteProtocolError(
                UNEXPECTED_MESSAGE, f"request id {request_id} is still awaiting its answer"
            )
        if len(self._pending) >= self.max_pending:
            raise RemoteProtocolError(
                RATE_LIMITED, f"more than {self.max_pending} requests await their answer"
            )

    def dropped(self, request_id: int | None) -> None:
        """Request `request_id` was refused without its id (``rate_limited``
        by the server's own limits): it gets no other answer, so it no longer
        awaits one, and its id is free again."""
        if request_id is not None:
            self._pending.pop(request_id, None)

    def send(self, message: Message, frame: bytes | None = None) -> bytes:
        """The bytes to write for `message`. Raises `LocalProtocolError` if it
        may not be sent now (nothing is sent then). `frame`: the bytes of
        `message`, made already (a push the server keeps), written as they are."""
        state = self.state
        if state is ConnectionState.ERROR:
            if type(message) is not Error or self._error_sent:
                raise LocalProtocolError(
                    WRONG_STATE, "after a protocol error, only one error message may be sent"
                )
            data = self._encode(message, frame)
            self._error_sent = True
            return data
        if state is ConnectionState.CLOSED:
            raise LocalProtocolError(WRONG_STATE, "the connection is closed")
        data = self._encode(message, frame)
        kind = type(message)
        if state is ConnectionState.HANDSHAKE and kind is Challenge:
            hello = self.hello
            if hello is None or hello.key is None or self.challenged:
                raise LocalProtocolError(
                    UNEXPECTED_MESSAGE, "a challenge answers a hello with a key, once"
                )
            self.challenged = True
        elif state is ConnectionState.HANDSHAKE and kind is not Error:
            if kind is not Welcome:
                raise LocalProtocolError(
                    HANDSHAKE_REQUIRED, f"answer the hello with welcome before {message.TYPE}"
                )
            assert isinstance(message, Welcome)
            if self.hello is None:
                raise LocalProtocolError(HANDSHAKE_REQUIRED, "no hello to welcome yet")
            if self._proving:
                raise LocalProtocolError(
                    HANDSHAKE_REQUIRED, "a hello with a key is welcomed once it is proved"
                )
            if message.version not in self.hello.versions or message.version not in self.versions:
                raise LocalProtocolError(
                    INVALID_FIELD,
                    f"welcome.version {message.version} is not a version both speak"
                    f" ({sorted(set(self.hello.versions) & set(self.versions))})",
                )
            # (a session resumed keeps the version it began with: not always the highest)
            self.version = message.version
        elif kind is Welcome or kind is Challenge:
            raise LocalProtocolError(UNEXPECTED_MESSAGE, f"{message.TYPE} was already sent")
        elif self.version is not None and self.version not in kind.VERSIONS:
            raise LocalProtocolError(
                UNEXPECTED_MESSAGE, f"{message.TYPE} is not in protocol version {self.version}"
            )
        if message.ROLE == "reply":
            reply_id = getattr(message, "id", None)
            if reply_id is not None:
                expected = self._pending.get(reply_id)
                if expected is None:
                    raise LocalProtocolError(
                        UNEXPECTED_MESSAGE, f"no request {reply_id} awaits an answer"
                    )
                if kind is not Error and expected != message.TYPE:
                    raise LocalProtocolError(
                        UNEXPECTED_MESSAGE,
                        f"request {reply_id} is answered by {expected}, not {message.TYPE}",
                    )
                del self._pending[reply_id]
        else:
            seq = _seq(message)
            self._check_seq(seq, LocalProtocolError)
            self._last_seq = seq
        if kind is Welcome:
            self.state = ConnectionState.OPEN
            self.hello = None
            self.proof = None
        elif kind is Error and getattr(message, "fatal", False):
            self.state = ConnectionState.CLOSED
        return data


class ClientConnection(_Connection):
    """The client's side of one connection. See the module docstring.

    Anything wrong from the server is fatal here: a client has no way to
    report it, so it closes. `version`, `token` and `player` come from the
    welcome.
    """

    _peer = "server"
    _us = "client"

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        super().__init__(max_frame)
        self.hello: Hello | None = None
        self.welcome: Welcome | None = None
        # The answer to a hello with a key, once received; then our `prove`, sent.
        self.challenge: Challenge | None = None
        self.proved = False

    @property
    def version(self) -> int | None:
        return None if self.welcome is None else self.welcome.version

    def _refused(self, error: RemoteProtocolError, type_: object) -> None:
        self._fail(error)

    def _unexpected(self, why: str) -> NoReturn:
        self._fail(RemoteProtocolError(UNEXPECTED_MESSAGE, why))

    def _received(self, message: Message) -> Message:
        kind = type(message)
        keyed = self.hello is not None and self.hello.key is not None
        if self.state is ConnectionState.HANDSHAKE and kind is Challenge:
            if not keyed or self.challenge is not None:
                self._unexpected("a challenge answers a hello with a key, once")
            assert isinstance(message, Challenge)
            self.challenge = message
        elif self.state is ConnectionState.HANDSHAKE and kind is not Error:
            if kind is not Welcome or self.hello is None:
                self._unexpected(f"{message.TYPE} before the welcome")
            if keyed and not self.proved:
                self._unexpected("a welcome before our prove: a hello with a key is proved first")
            assert isinstance(message, Welcome)
            if message.version not in self.hello.versions:
                self._unexpected(
                    f"welcome chose version {message.version}, which the hello did not offer"
                )
        elif kind is Welcome or kind is Challenge:
            self._unexpected(f"a second {message.TYPE}")
        elif self.version is not None and self.version not in kind.VERSIONS:
            self._unexpected(f"{message.TYPE} is not in protocol version {self.version}")
        if message.ROLE == "reply":
            reply_id = getattr(message, "id", None)
            if reply_id is not None:
                expected = self._pending.get(reply_id)
                if expected is None:
                    self._unexpected(
                        f"{message.TYPE} answers request {reply_id}, which awaits no answer"
                    )
                if kind is not Error and expected != message.TYPE:
                    self._unexpected(f"request {reply_id} expects {expected}, not {message.TYPE}")
                del self._pending[reply_id]
        else:
            seq = _seq(message)
            try:
                self._check_seq(seq, RemoteProtocolError)
            except RemoteProtocolError as e:
                self._fail(e)
            self._last_seq = seq
        if kind is Welcome:
            assert isinstance(message, Welcome)
            self.welcome = message
            self.state = ConnectionState.OPEN
        elif kind is Error and getattr(message, "fatal", False):
            self.state = ConnectionState.CLOSED
        return message

    def send(self, message: Message) -> bytes:
        """The bytes to write for `message` (a client message). Raises
        `LocalProtocolError` if it may not be sent now (nothing is sent then)."""
        if self.state in (ConnectionState.CLOSED, ConnectionState.ERROR):
            raise LocalProtocolError(WRONG_STATE, f"the connection is {self.state.value}")
        data = self._encode(message)
        kind = type(message)
        if self.hello is None:
            if kind is not Hello:
                raise LocalProtocolError(HANDSHAKE_REQUIRED, f"send hello before {message.TYPE}")
        elif kind is Hello:
            raise LocalProtocolError(UNEXPECTED_MESSAGE, "hello was already sent")
        elif self.hello.key is not None and not self.proved:
            # (nothing may ride behind a hello with a key: the server reads prove next)
            if kind is not Prove or self.challenge is None:
                raise LocalProtocolError(
                    HANDSHAKE_REQUIRED,
                    f"after a hello with a key, send prove once challenged, not {message.TYPE}",
                )
            self.proved = True
        elif kind is Prove:
            raise LocalProtocolError(UNEXPECTED_MESSAGE, "prove answers a challenge, once")
        request_id = getattr(message, "id", None)
        if request_id is not None:
            if request_id in self._pending:
                raise LocalProtocolError(
                    UNEXPECTED_MESSAGE, f"request id {request_id} is still awaiting its answer"
                )
            assert message.REPLY is not None
            keyed = kind is Hello and getattr(message, "key", None) is not None
            self._pending[request_id] = Challenge.TYPE if keyed else message.REPLY
        if type(message) is Hello:
            assert isinstance(message, Hello)
            self.hello = message
        return data

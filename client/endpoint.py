"""One client without I/O: requests out as bytes, bytes in to a `ClientState`.

How this works
--------------
`ClientEndpoint` puts the protocol's `ClientConnection` (framing, the
handshake, request ids, push numbers) together with a `ClientState`. The
caller moves the bytes: `hello()` and `request(message)` return bytes to
write, `receive_data(bytes)` takes what was read and returns the messages
it decoded, after the state has taken them. Every request gets a fresh id;
`answers` keeps the answer of each id, so a caller can tell an ``ok`` from
an ``error``. A server that breaks the protocol makes `receive_data` raise
`RemoteProtocolError` (so does a message that contradicts the game or
itself: a view that is not a view, a seat the table does not have): close,
and resume on a new endpoint with the token.

The trio session, the bots and the tests all build on it.

>>> from oriflamme.protocol import ServerConnection
>>> endpoint, server = ClientEndpoint("Ann"), ServerConnection()
>>> server.receive_data(endpoint.hello())
>>> hello = server.next_message()
>>> hello.name, hello.id
('Ann', 1)
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import replace

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from oriflamme.engine import Rules
from oriflamme.engine.cards import shown
from oriflamme.protocol import identity, signatures
from oriflamme.protocol import messages as m
from oriflamme.protocol.commitments import seed_commitment
from oriflamme.protocol.connection import CLOSED, NEED_DATA, ClientConnection
from oriflamme.protocol.errors import INVALID_FIELD, RemoteProtocolError

from .seat_secrets import SeatSecrets
from .state import ClientState

CLIENT_NAME = "oriflamme-py/0.1"


class ClientEndpoint:
    """One connection's client side; see the module docstring."""

    def __init__(
        self,
        name: str,
        *,
        token: bytes | None = None,
        seq: int | None = None,
        state: ClientState | None = None,
        make_secrets: Callable[[Rules, bytes, int], SeatSecrets] | None = None,
        client: str = CLIENT_NAME,
        key: Ed25519PrivateKey | None = None,
        versions: tuple[int, ...] = m.SUPPORTED_VERSIONS,
    ) -> None:
        """`versions`: the protocol versions offered (the server chooses the
        highest it speaks too: 2, where it can)."""
        self.name = name
        self.versions = versions
        # The player's key (None: anonymous): the hello proves it (docs/PROTOCOL.md,
        # "Keys and the handshake"), answering the server's `challenge` with `prove`.
        self.key = key
        self._nonce: bytes | None = None
        self._outgoing = bytearray()
        self.client = client
        self.connection = ClientConnection()
        self.state = state if state is not None else ClientState(make_secrets)
        if key is not None:
            self.state.seal = identity.seal_key(key)
        self.token = token
        self._seq = seq
        self._next_id = 1
        self.answers: dict[int, m.Message] = {}
        self._asked: dict[int, m.Message] = {}  # requests awaiting their answer, by id
        self.closed = False

    @property
    def welcome(self) -> m.Welcome | None:
        return self.connection.welcome

    def hello(self) -> bytes:
        """The first frame: a new session, or the resumed one of `token`."""
        if self.state.game is not None:
            self.state.game.reconnected()
        key = None
        if self.key is not None:
            key, self._nonce = identity.public_bytes(self.key), secrets.token_bytes(32)
        return self.request(
            m.Hello(
                versions=self.versions,
                client=self.client,
                name=self.name,
                token=self.token,
                seq=self._seq if self.token is not None else None,
                key=key,
                nonce=self._nonce,
            )
        )

    def take_outgoing(self) -> bytes:
        """What the endpoint must send by itself, after `receive_data` (the
        `prove` that answers a `challenge`): write it at once."""
        data = bytes(self._outgoing)
        self._outgoing.clear()
        return data

    def _prove(self, challenge: m.Challenge) -> None:
        """Check the server's proof, and answer with ours."""
        assert self.key is not None and self._nonce is not None  # (the connection checked)
        ours = identity.public_bytes(self.key)
        theirs = identity.server_proof(self._nonce, challenge.nonce, ours)
        if not identity.verify(challenge.server_key, challenge.signature, theirs):
            self.closed = True
            self.connection.fail(
                RemoteProtocolError(
                    INVALID_FIELD,
                    "challenge.signature: not the server key's signature of its proof",
                )
            )
        proof = identity.client_proof(challenge.server_key, challenge.nonce, self._nonce, ours)
        self._outgoing += self.request(m.Prove(signature=identity.sign(self.key, proof)))

    def request(self, message: m.Message) -> bytes:
        """The bytes that send `message`, with a fresh request id."""
        request_id = self._next_id
        self._next_id += 1
        if hasattr(message, "id"):
            message = type(message)(**{**_fields(message), "id": request_id})
        message = self._keyed(message)
        data = self.connection.send(message)
        self._asked[request_id] = message
        return data

    def _keyed(self, message: m.Message) -> m.Message:
        """`message` as a player with a key sends it, if it is a decision of
        a seat this key plays: signed (docs/PROTOCOL.md, "Signed decisions"),
        a seed commitment with the seed sealed ("Sealed seeds"), a hand-over
        dated with the pending turn."""
        game = self.state.game
        if (
            self.key is None
            or type(message) not in signatures.SIGNED
            or game is None
            or game.seat is None
        ):
            return message
        if isinstance(message, m.SeedCommit) and game.secrets is not None and self.state.seal:
            seed = game.secrets.seed
            if message.commitment == seed_commitment(game.game_id, game.seat, seed):
                game.secrets.seed_sent = True  # (ours: no other is unsealed in its place)
                closed = identity.sealed_seed(
                    self.state.seal, game.game_id, game.seat, message.commitment, seed
                )
                message = replace(message, sealed_seed=closed)
        if isinstance(message, m.HandOver) and message.turn is None and game.decision is not None:
            message = replace(message, turn=game.decision.turn)  # (a signed hand-over is dated)
        return signatures.signed(self.key, game.game_id, game.seat, message)

    def last_id(self) -> int:
        """The id of the request sent last."""
        return self._next_id - 1

    def receive_data(self, data: bytes) -> list[m.Message]:
        """Bytes from the server (b"" at end of file): the messages they held."""
        self.connection.receive_data(data)
        received = []
        while True:
            message = self.connection.next_message()
            if message is NEED_DATA:
                break
            if message is CLOSED:
                self.closed = True
                break
            assert isinstance(message, m.Message)
            received.append(message)
            self._take(message)
        return received

    def _take(self, message: m.Message) -> None:
        if isinstance(message, m.Challenge):
            self._prove(message)
        elif isinstance(message, m.Welcome):
            challenge = self.connection.challenge
            if challenge is not None and message.server_key != challenge.server_key:
                self.closed = True
                self.connection.fail(
                    RemoteProtocolError(
                        INVALID_FIELD, "welcome.server_key: not the key the challenge proved"
                    )
                )
            self.token = message.token
        if message.ROLE == "reply":
            request_id = getattr(message, "id", None)
            if request_id is not None:
                self.answers[request_id] = message
                self.state.answered(self._asked.pop(request_id, None), message)
        else:
            self._seq = getattr(message, "seq", self._seq)
        if isinstance(message, m.Error) and message.fatal:
            self.closed = True
        try:
            self.state.receive(message)
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            # Well formed, but it contradicts the game or itself: the server is
            # broken (or hostile). Close, as for any protocol error.
            self.closed = True
            self.connection.fail(
                RemoteProtocolError(
                    INVALID_FIELD, f"the server's {message.TYPE} makes no sense: {shown(exc)}"
                )
            )

    @property
    def seq(self) -> int | None:
        """The `seq` of the last push received (to resume with)."""
        return self._seq


def _fields(message: m.Message) -> dict[str, object]:
    return {spec.name: getattr(message, spec.name) for spec in message.FIELDS}

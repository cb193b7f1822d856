"""Keys and the handshake (docs/PROTOCOL.md, "Keys and the handshake"):
the proofs' bytes and the vectors of docs/test-vectors.json, and the
connections' state machine around `challenge` and `prove`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oriflamme.protocol import identity
from oriflamme.protocol import messages as m
from oriflamme.protocol.codec import encode_frame
from oriflamme.protocol.connection import ClientConnection, ConnectionState, ServerConnection
from oriflamme.protocol.errors import (
    HANDSHAKE_REQUIRED,
    INVALID_FIELD,
    LocalProtocolError,
    RemoteProtocolError,
)
from tests.protocol.test_connection import hello, pipe, welcome

VECTORS = json.loads(
    (Path(__file__).resolve().parents[2] / "docs" / "test-vectors.json").read_text()
)
CLIENT = identity.private_key(bytes(range(32)))
SERVER = identity.private_key(bytes(range(1, 33)))
NONCE, OTHER_NONCE = bytes(32), bytes([7]) * 32


def keyed_hello(**changes: object) -> m.Hello:
    return hello(key=identity.public_bytes(CLIENT), nonce=NONCE, **changes)


def challenge(**changes: object) -> m.Challenge:
    proof = identity.server_proof(NONCE, OTHER_NONCE, identity.public_bytes(CLIENT))
    fields: dict[str, object] = {
        "server_key": identity.public_bytes(SERVER),
        "nonce": OTHER_NONCE,
        "signature": identity.sign(SERVER, proof),
        "id": 1,
    }
    fields.update(changes)
    return m.Challenge(**fields)  # type: ignore[arg-type]


def prove() -> m.Prove:
    proof = identity.client_proof(
        identity.public_bytes(SERVER), OTHER_NONCE, NONCE, identity.public_bytes(CLIENT)
    )
    return m.Prove(signature=identity.sign(CLIENT, proof), id=2)


# ------------------------------------------------------------------ the proofs


@pytest.mark.parametrize("vector", VECTORS["handshakes"])
def test_the_handshake_vectors_hold(vector: dict[str, str]) -> None:
    client = identity.private_key(bytes.fromhex(vector["client_private_key"]))
    server = identity.private_key(bytes.fromhex(vector["server_private_key"]))
    client_key, server_key = identity.public_bytes(client), identity.public_bytes(server)
    assert client_key.hex() == vector["client_key"]
    assert server_key.hex() == vector["server_key"]
    assert identity.fingerprint(client_key) == vector["client_fingerprint"]
    client_nonce = bytes.fromhex(vector["client_nonce"])
    server_nonce = bytes.fromhex(vector["server_nonce"])
    server_proof = identity.server_proof(client_nonce, server_nonce, client_key)
    client_proof = identity.client_proof(server_key, server_nonce, client_nonce, client_key)
    assert server_proof.hex() == vector["server_proof"]
    assert client_proof.hex() == vector["client_proof"]
    # Exactly the layout the document gives: the context, then the values.
    assert client_proof == b"oriflamme client proof v1\x00" + server_key + server_nonce + (
        client_nonce + client_key
    )
    assert server_proof == b"oriflamme server proof v1\x00" + client_nonce + server_nonce + (
        client_key
    )
    # (Ed25519 signs deterministically: the vector's signatures are these.)
    assert identity.sign(server, server_proof).hex() == vector["server_signature"]
    assert identity.sign(client, client_proof).hex() == vector["client_signature"]
    assert identity.verify(server_key, bytes.fromhex(vector["server_signature"]), server_proof)
    assert identity.verify(client_key, bytes.fromhex(vector["client_signature"]), client_proof)


@given(st.binary(min_size=32, max_size=32), st.integers(0, 32 * 4 + 25))
def test_a_signature_is_refused_once_any_byte_of_the_proof_changes(
    nonce: bytes, flipped: int
) -> None:
    proof = identity.client_proof(identity.public_bytes(SERVER), nonce, NONCE, bytes(32))
    signature = identity.sign(CLIENT, proof)
    changed = bytearray(proof)
    changed[flipped] ^= 1
    assert identity.verify(identity.public_bytes(CLIENT), signature, proof)
    assert not identity.verify(identity.public_bytes(CLIENT), signature, bytes(changed))
    # Nor does a signature of one kind of proof pass for the other kind.
    other = identity.server_proof(identity.public_bytes(SERVER), nonce, NONCE)
    assert not identity.verify(identity.public_bytes(CLIENT), signature, other)


def test_a_key_that_is_no_ed25519_key_verifies_nothing() -> None:
    assert not identity.verify(b"\xff" * 32, bytes(64), b"anything")


# ------------------------------------------------------------------ the state machine


def test_a_hello_with_a_key_is_answered_by_a_challenge_then_prove_then_welcome() -> None:
    server, client = ServerConnection(), ClientConnection()
    pipe(client, server, keyed_hello())
    with pytest.raises(LocalProtocolError, match="proved"):
        server.send(welcome())  # (not before its prove)
    got = pipe(server, client, challenge())
    assert client.challenge == got
    assert server.state is client.state is ConnectionState.HANDSHAKE
    proved = pipe(client, server, prove())
    assert server.proof == proved
    pipe(server, client, welcome(id=2))
    assert (server.state, client.state) == (ConnectionState.OPEN, ConnectionState.OPEN)


def test_nothing_rides_behind_a_hello_with_a_key() -> None:
    client = ClientConnection()
    client.send(keyed_hello())
    with pytest.raises(LocalProtocolError, match="prove once challenged"):
        client.send(m.Ping(id=2))
    with pytest.raises(LocalProtocolError, match="prove once challenged"):
        client.send(prove())  # (not before the challenge came)


@pytest.mark.parametrize("after", ["hello", "challenge"])
def test_a_server_refuses_anything_but_prove_after_a_hello_with_a_key(after: str) -> None:
    server, client = ServerConnection(), ClientConnection()
    pipe(client, server, keyed_hello())
    if after == "challenge":
        server.send(challenge())
    server.receive_data(_client_frame(m.Ping(id=9)))
    with pytest.raises(RemoteProtocolError) as refused:
        server.next_message()
    assert refused.value.code == HANDSHAKE_REQUIRED and refused.value.fatal
    assert server.state is ConnectionState.ERROR


def _client_frame(message: m.Message) -> bytes:
    return encode_frame(m.to_data(message))


@pytest.mark.parametrize("fields", [{"nonce": NONCE}, {"key": bytes(32)}])
def test_a_key_comes_with_a_nonce_and_a_nonce_with_a_key(fields: dict[str, bytes]) -> None:
    server = ServerConnection()
    server.receive_data(_client_frame(hello(**fields)))
    with pytest.raises(RemoteProtocolError) as refused:
        server.next_message()
    assert refused.value.code == INVALID_FIELD and refused.value.fatal


def test_a_client_refuses_a_challenge_it_did_not_ask_for() -> None:
    server, client = ServerConnection(), ClientConnection()
    pipe(client, server, hello())
    server_side = ServerConnection()
    server_side.receive_data(_client_frame(keyed_hello()))
    server_side.next_message()
    client.receive_data(server_side.send(challenge()))
    with pytest.raises(RemoteProtocolError, match="challenge"):
        client.next_message()


def test_a_client_refuses_a_welcome_before_its_prove() -> None:
    server, client = ServerConnection(), ClientConnection()
    pipe(client, server, keyed_hello())
    pipe(server, client, challenge())
    plain = ServerConnection()
    plain.receive_data(_client_frame(hello()))
    plain.next_message()
    client.receive_data(plain.send(welcome()))
    with pytest.raises(RemoteProtocolError, match="before our prove"):
        client.next_message()


def test_a_prove_no_challenge_awaits_is_unexpected_and_the_connection_stays() -> None:
    server, client = ServerConnection(), ClientConnection()
    pipe(client, server, hello())
    server.send(welcome())
    server.receive_data(_client_frame(prove()))
    with pytest.raises(RemoteProtocolError) as refused:
        server.next_message()
    assert refused.value.code == "unexpected_message" and not refused.value.fatal
    assert server.state is ConnectionState.OPEN

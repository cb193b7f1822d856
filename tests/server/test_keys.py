"""Players with keys, through the gateway and the lobby (docs/PROTOCOL.md,
"Keys and the handshake"): the handshake both ways with the real client
endpoint, a session found again by its key from another connection, the
names keys hold, the anonymous refused where the host says so; and all of
it the same after the journal's replay and after the facts.
"""

from __future__ import annotations

from collections.abc import Hashable

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from oriflamme.client.endpoint import ClientEndpoint
from oriflamme.protocol import identity
from oriflamme.protocol import messages as m
from oriflamme.protocol.codec import encode_frame
from oriflamme.protocol.errors import (
    BAD_SIGNATURE,
    BAD_TOKEN,
    HANDSHAKE_REQUIRED,
    KEY_REQUIRED,
    NAME_TAKEN,
    SESSION_REPLACED,
    RemoteProtocolError,
)
from oriflamme.server.core import FixedEntropy, Gateway, ServerConfig
from oriflamme.server.core.facts import facts_of, lobby_from
from oriflamme.server.core.journal import JournaledLobby, replay

ANN = identity.private_key(bytes(range(32)))
BOB = identity.private_key(bytes(range(1, 33)))
CONFIG = ServerConfig(idle_timeout=60)


def gateway(**options: object) -> Gateway:
    return Gateway(JournaledLobby(FixedEntropy("keys"), CONFIG), **options)  # type: ignore[arg-type]


def connect(
    gw: Gateway,
    conn: Hashable,
    name: str,
    key: Ed25519PrivateKey | None,
    *,
    token: bytes | None = None,
) -> tuple[ClientEndpoint, list[m.Message]]:
    """A client endpoint's handshake on `conn`: every message it received."""
    endpoint = ClientEndpoint(name, key=key, token=token)
    gw.open(conn, 0.0)
    gw.receive_data(conn, endpoint.hello(), 0.0)
    received: list[m.Message] = []
    while True:
        data = gw.data_to_send(conn)
        if not data:
            return endpoint, received
        received += endpoint.receive_data(data)
        prove = endpoint.take_outgoing()
        if prove:
            gw.receive_data(conn, prove, 0.0)


def welcomed(received: list[m.Message]) -> m.Welcome:
    found = [x for x in received if isinstance(x, m.Welcome)]
    assert len(found) == 1, received
    return found[0]


def refused(received: list[m.Message]) -> m.Error:
    errors = [x for x in received if isinstance(x, m.Error)]
    assert errors and errors[-1].fatal, received
    return errors[-1]


def test_a_player_with_a_key_proves_it_and_gets_a_session_of_that_key() -> None:
    gw = gateway()
    endpoint, received = connect(gw, "a", "Ann", ANN)
    assert isinstance(received[0], m.Challenge)
    assert received[0].server_key == gw.lobby.server_key
    welcome = welcomed(received)
    assert welcome.server_key == gw.lobby.server_key and welcome.name == "Ann"
    session = gw.lobby.sessions.by_player[welcome.player]
    assert session.key == identity.public_bytes(ANN)
    assert gw.lobby.names.name_of(session.key) == "Ann"


def test_a_proof_by_another_key_opens_nothing() -> None:
    gw = gateway()
    endpoint = ClientEndpoint("Ann", key=ANN)
    gw.open("a", 0.0)
    gw.receive_data("a", endpoint.hello(), 0.0)
    endpoint.receive_data(gw.data_to_send("a"))
    endpoint.take_outgoing()  # (the client's own proof, not sent)
    challenge = endpoint.connection.challenge
    assert challenge is not None and endpoint._nonce is not None
    forged = identity.client_proof(
        challenge.server_key, challenge.nonce, endpoint._nonce, identity.public_bytes(ANN)
    )
    gw.receive_data("a", encode_frame(m.to_data(m.Prove(signature=BOB.sign(forged), id=2))), 0.0)
    error = refused(endpoint.receive_data(gw.data_to_send("a")))
    assert error.code == BAD_SIGNATURE and error.id == 2
    assert gw.must_close("a") and not gw.lobby.sessions.by_player


def test_a_request_riding_behind_a_hello_with_a_key_is_refused() -> None:
    gw = gateway()
    gw.open("a", 0.0)
    hello = m.Hello(
        versions=(1,), client="raw", name="Ann", key=identity.public_bytes(ANN), nonce=bytes(32)
    )
    gw.receive_data("a", encode_frame(m.to_data(hello)) + encode_frame({"type": "ping"}), 0.0)
    data = gw.data_to_send("a")
    assert gw.must_close("a") and not gw.lobby.sessions.by_player
    assert HANDSHAKE_REQUIRED.encode() in data


def test_a_server_for_keys_alone_refuses_the_anonymous() -> None:
    gw = gateway(allow_anonymous=False)
    _, received = connect(gw, "a", "Ann", None)
    assert refused(received).code == KEY_REQUIRED
    _, received = connect(gw, "b", "Bob", BOB)
    welcomed(received)


def test_the_key_finds_its_session_from_another_connection_without_a_token() -> None:
    gw = gateway()
    endpoint, received = connect(gw, "a", "Ann", ANN)
    first = welcomed(received)
    create = m.CreateRoom(settings=m.RoomSettings.for_players(3), name="r")
    gw.receive_data("a", endpoint.request(create), 0.0)
    endpoint.receive_data(gw.data_to_send("a"))
    # Another machine: no token, another name typed, the same key.
    _, received = connect(gw, "b", "Someone", ANN)
    again = welcomed(received)
    assert again.resumed and again.player == first.player and again.name == "Ann"
    assert any(isinstance(x, m.RoomState) for x in received)  # (the snapshot of its room)
    assert gw.must_close("a")
    assert SESSION_REPLACED.encode() in gw.data_to_send("a")


def test_a_name_is_its_first_keys_for_good() -> None:
    gw = gateway()
    welcomed(connect(gw, "a", "Ann", ANN)[1])
    for conn, key, name in [("b", BOB, "ANN"), ("c", None, "ａｎｎ")]:
        error = refused(connect(gw, conn, name, key)[1])
        assert error.code == NAME_TAKEN, error
    # Bob keeps the name he took first, whatever he types later.
    welcomed(connect(gw, "d", "Bob", BOB)[1])
    gw.closed("d", 1.0)
    gw.lobby.sessions.close(gw.lobby.sessions.by_key[identity.public_bytes(BOB)])
    assert welcomed(connect(gw, "e", "Robert", BOB)[1]).name == "Bob"


def test_a_keys_token_resumes_only_with_that_key() -> None:
    gw = gateway()
    endpoint, received = connect(gw, "a", "Ann", ANN)
    token = welcomed(received).token
    gw.closed("a", 1.0)
    assert refused(connect(gw, "b", "Ann", None, token=token)[1]).code == BAD_TOKEN
    assert refused(connect(gw, "c", "Ann", BOB, token=token)[1]).code == BAD_TOKEN
    assert welcomed(connect(gw, "d", "Ann", ANN, token=token)[1]).resumed


@pytest.mark.parametrize("through", ["journal", "facts"])
def test_keys_and_names_outlive_a_restart(through: str) -> None:
    gw = gateway()
    lobby = gw.lobby
    assert isinstance(lobby, JournaledLobby)
    welcomed(connect(gw, "a", "Ann", ANN)[1])
    welcomed(connect(gw, "b", "Bob", BOB)[1])
    welcomed(connect(gw, "c", "Zed", ANN)[1])  # (Ann again, from elsewhere)
    if through == "journal":
        again = JournaledLobby(FixedEntropy("keys"), CONFIG)
        replay(again, lobby.take())
    else:
        again = lobby_from(facts_of(lobby), FixedEntropy("keys"))
    assert again.names.by_key == lobby.names.by_key
    assert {k: s.player for k, s in again.sessions.by_key.items()} == {
        k: s.player for k, s in lobby.sessions.by_key.items()
    }
    moved = Gateway(again)
    assert welcomed(connect(moved, "d", "Ann?", ANN)[1]).resumed
    assert refused(connect(moved, "e", "bob", None)[1]).code == NAME_TAKEN


def test_a_key_renames_itself_and_frees_its_old_name() -> None:
    gw = gateway()
    endpoint, received = connect(gw, "a", "Ann", ANN)
    welcomed(received)
    welcomed(connect(gw, "b", "Bob", BOB)[1])
    lobby = gw.lobby
    gw.receive_data("a", endpoint.request(m.Rename(name="bob")), 1.0)
    [answer] = endpoint.receive_data(gw.data_to_send("a"))
    assert isinstance(answer, m.Error) and answer.code == NAME_TAKEN and not answer.fatal
    create = m.CreateRoom(settings=m.RoomSettings.for_players(3), name="r")
    gw.receive_data("a", endpoint.request(create), 1.0)
    endpoint.receive_data(gw.data_to_send("a"))
    gw.receive_data("a", endpoint.request(m.Rename(name="Annie")), 2.0)
    answers = endpoint.receive_data(gw.data_to_send("a"))
    assert isinstance(answers[0], m.Ok)
    [state] = [x for x in answers if isinstance(x, m.RoomState)]
    assert state.seats[0].name == "Annie"
    assert state.seats[0].key == identity.public_bytes(ANN)
    assert lobby.names.name_of(identity.public_bytes(ANN)) == "Annie"
    assert lobby.names.owner("ann") is None  # (free again: anyone may take it)
    welcomed(connect(gw, "c", "Ann", None)[1])


@pytest.mark.parametrize(
    "key",
    [
        b"\x01" + bytes(31),  # the identity point: `key + bytes(32)` signs anything
        bytes(32),  # of order 4
        bytes.fromhex("ed" + "ff" * 30 + "7f"),  # p itself: not canonical
        b"\x01" + bytes(30) + b"\x80",  # the identity again, the sign bit set
    ],
)
def test_a_key_of_small_order_or_not_canonical_is_refused_at_the_hello(key: bytes) -> None:
    gw = gateway()
    gw.open("a", 0.0)
    hello = m.Hello(versions=(1,), client="raw", name="Ann", key=key, nonce=bytes(32), id=1)
    gw.receive_data("a", encode_frame(m.to_data(hello)), 0.0)
    data = gw.data_to_send("a")
    assert b"invalid_field" in data and b"hello.key" in data
    assert gw.must_close("a") and not gw.lobby.sessions.by_player
    # (and were a server to let one through, its "signature" proves nothing)
    assert not identity.verify(key, key + bytes(32), b"anything")


def test_a_server_for_keys_alone_still_admits_its_own_bots() -> None:
    gw = gateway(allow_anonymous=False)
    endpoint = ClientEndpoint("Bot 1")
    gw.open("bot", 0.0, limited=False)  # (a server bot's link, as the shell opens it)
    gw.receive_data("bot", endpoint.hello(), 0.0)
    welcomed(endpoint.receive_data(gw.data_to_send("bot")))


def test_a_client_refuses_a_welcome_whose_key_is_not_the_challenges() -> None:
    gw = gateway()
    endpoint = ClientEndpoint("Ann", key=ANN)
    gw.open("a", 0.0)
    gw.receive_data("a", endpoint.hello(), 0.0)
    endpoint.receive_data(gw.data_to_send("a"))
    gw.receive_data("a", endpoint.take_outgoing(), 0.0)
    data = gw.data_to_send("a")
    # (a server that proved one key and welcomes with another)
    other = identity.public_bytes(BOB)
    forged = data.replace(gw.lobby.server_key, other)
    assert forged != data
    with pytest.raises(RemoteProtocolError, match="server_key"):
        endpoint.receive_data(forged)


def test_names_that_look_alike_are_one_name() -> None:
    gw = gateway()
    welcomed(connect(gw, "a", "Ann", ANN)[1])
    for conn, name in [("b", " ann "), ("c", "A\u034fnn"), ("d", "Ann\u3164")]:
        error = refused(connect(gw, conn, name, BOB)[1])
        assert error.code == NAME_TAKEN, name
    assert welcomed(connect(gw, "e", "Anné", BOB)[1]).name == "Anné"


def test_a_key_that_never_played_lets_its_name_go_with_its_session() -> None:
    gw = gateway()
    welcomed(connect(gw, "a", "Ann", ANN)[1])
    gw.closed("a", 0.0)
    lobby = gw.lobby
    lobby.tick(CONFIG.lobby_ttl + CONFIG.session_ttl + 1)  # (its session expires)
    assert not lobby.sessions.by_key and lobby.names.owner("Ann") is None
    welcomed(connect(gw, "b", "Ann", BOB)[1])  # (free for anyone, then)


def test_facts_whose_names_fold_alike_load_and_the_second_key_names_itself_anew() -> None:
    from oriflamme.server.core.names import Names

    names = Names()
    names.restore(identity.public_bytes(ANN), "Ann")
    names.restore(identity.public_bytes(BOB), "Ann\u3164")  # (taken when folded otherwise)
    assert names.owner("Ann") == identity.public_bytes(ANN)
    assert names.name_of(identity.public_bytes(BOB)) is None
    gw = gateway()
    gw.lobby.names = names
    assert welcomed(connect(gw, "b", "Bobby", BOB)[1]).name == "Bobby"

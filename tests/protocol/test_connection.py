"""Sans-I/O connections: handshake, versions, ids, seq, sticky errors, frame limit."""

from __future__ import annotations

import msgpack
import pytest

from oriflamme.protocol import messages as m
from oriflamme.protocol.codec import encode_frame
from oriflamme.protocol.connection import (
    CLOSED,
    NEED_DATA,
    ClientConnection,
    ConnectionState,
    ServerConnection,
)
from oriflamme.protocol.errors import (
    FRAME_TOO_LARGE,
    HANDSHAKE_REQUIRED,
    INVALID_FIELD,
    MALFORMED_FRAME,
    RATE_LIMITED,
    UNEXPECTED_MESSAGE,
    UNKNOWN_MESSAGE,
    UNSUPPORTED_VERSION,
    LocalProtocolError,
    RemoteProtocolError,
)
from oriflamme.protocol.transcript import session

TOKEN = bytes(range(32))


def hello(**changes: object) -> m.Hello:
    fields: dict[str, object] = {"versions": (1,), "client": "test", "name": "Ann", "id": 1}
    fields.update(changes)
    return m.Hello(**fields)  # type: ignore[arg-type]


def welcome(**changes: object) -> m.Welcome:
    fields: dict[str, object] = {
        "version": 1,
        "token": TOKEN,
        "player": 5,
        "server": "test",
        "resumed": False,
        "idle_timeout": 60,
        "id": 1,
    }
    fields.update(changes)
    return m.Welcome(**fields)  # type: ignore[arg-type]


def room_state(seq: int) -> m.RoomState:
    settings = m.Settings(
        players=3, variant="standard", edition="revised", turn_timer=60, first_player="host"
    )
    seats = tuple(m.SeatInfo(seat=i, ready=False, connected=False) for i in range(3))
    return m.RoomState(
        seq=seq,
        room=1,
        name="r",
        settings=settings,
        host=5,
        state="waiting",
        seats=seats,
        spectators=0,
    )


def pipe(
    sender: ServerConnection | ClientConnection,
    receiver: ServerConnection | ClientConnection,
    message: m.Message,
) -> m.Message:
    receiver.receive_data(sender.send(message))
    got = receiver.next_message()
    assert isinstance(got, m.Message)
    return got


def connected() -> tuple[ServerConnection, ClientConnection]:
    server, client = ServerConnection(), ClientConnection()
    pipe(client, server, hello())
    pipe(server, client, welcome())
    assert server.state is client.state is ConnectionState.OPEN
    return server, client


def raw(data: dict) -> bytes:
    return encode_frame(data)


# ------------------------------------------------------------------ handshake


def test_handshake() -> None:
    server, client = ServerConnection(), ClientConnection()
    assert server.state is ConnectionState.HANDSHAKE and server.next_message() is NEED_DATA
    got = pipe(client, server, hello())
    assert got == hello() and server.hello == hello() and server.version == 1
    assert server.state is ConnectionState.HANDSHAKE  # until the welcome is sent
    got = pipe(server, client, welcome())
    assert client.welcome == got and client.version == 1
    assert server.state is client.state is ConnectionState.OPEN
    assert server.pending_ids == client.pending_ids == frozenset()


def test_version_negotiation_picks_the_highest_common_version() -> None:
    server = ServerConnection(versions=(1, 2, 3))
    server.receive_data(ClientConnection().send(hello(versions=(4, 2, 1))))
    server.next_message()
    assert server.version == 2
    with pytest.raises(LocalProtocolError, match="welcome.version must be 2"):
        server.send(welcome(version=1))
    server.send(welcome(version=2))


def test_no_common_version_is_fatal_and_lists_the_servers_versions() -> None:
    server, client = ServerConnection(), ClientConnection()
    server.receive_data(client.send(hello(versions=(2, 3), id=9)))
    with pytest.raises(RemoteProtocolError) as caught:
        server.next_message()
    error = caught.value
    assert (
        error.code == UNSUPPORTED_VERSION
        and error.fatal
        and error.versions == (1,)
        and error.id == 9
    )
    assert server.state is ConnectionState.ERROR
    answer = error.to_message()
    client.receive_data(server.send(answer))
    got = client.next_message()
    assert got == answer and got.versions == (1,)  # type: ignore[attr-defined]
    assert client.state is ConnectionState.CLOSED and client.next_message() is CLOSED


@pytest.mark.parametrize(
    "first",
    [
        {"type": "ping", "id": 4},
        {"type": "list_rooms"},
        {"type": "teleport"},
        {"type": "welcome", "version": 1},
    ],
)
def test_the_first_message_must_be_hello(first: dict) -> None:
    server = ServerConnection()
    server.receive_data(raw(first) + ClientConnection().send(hello()))
    with pytest.raises(RemoteProtocolError) as caught:
        server.next_message()
    assert caught.value.code == HANDSHAKE_REQUIRED and caught.value.fatal
    assert caught.value.id == first.get("id")
    # Sticky: the valid hello behind it is never read.
    with pytest.raises(RemoteProtocolError) as again:
        server.next_message()
    assert again.value is caught.value and server.state is ConnectionState.ERROR


def test_a_hello_with_a_bad_field_is_fatal() -> None:
    server = ServerConnection()
    server.receive_data(
        raw({"type": "hello", "versions": [], "client": "x", "name": "Ann", "id": 2})
    )
    with pytest.raises(RemoteProtocolError) as caught:
        server.next_message()
    assert caught.value.code == INVALID_FIELD and caught.value.fatal and caught.value.id == 2
    assert server.state is ConnectionState.ERROR


def test_after_a_fatal_error_the_server_may_send_one_error_then_nothing() -> None:
    server = ServerConnection()
    server.receive_data(raw({"type": "ping"}))
    with pytest.raises(RemoteProtocolError) as caught:
        server.next_message()
    with pytest.raises(LocalProtocolError):
        server.send(welcome())
    data = server.send(caught.value.to_message())
    assert msgpack.unpackb(data[4:])["code"] == HANDSHAKE_REQUIRED
    with pytest.raises(LocalProtocolError):
        server.send(caught.value.to_message())
    server.receive_data(ClientConnection().send(hello()))  # ignored
    with pytest.raises(RemoteProtocolError):
        server.next_message()


def test_a_second_hello_is_refused_but_the_connection_goes_on() -> None:
    server, client = connected()
    server.receive_data(raw(m.to_data(hello(id=2))))
    with pytest.raises(RemoteProtocolError) as caught:
        server.next_message()
    assert (
        caught.value.code == UNEXPECTED_MESSAGE and not caught.value.fatal and caught.value.id == 2
    )
    assert server.state is ConnectionState.OPEN
    server.send(caught.value.to_message())
    assert pipe(client, server, m.Ping(id=3)) == m.Ping(id=3)
    with pytest.raises(LocalProtocolError, match="hello was already sent"):
        client.send(hello(id=4))


def test_the_server_sends_welcome_before_anything_else() -> None:
    server = ServerConnection()
    with pytest.raises(LocalProtocolError):
        server.send(welcome())  # no hello yet
    server.receive_data(ClientConnection().send(hello()))
    server.next_message()
    with pytest.raises(LocalProtocolError, match="welcome"):
        server.send(m.Ok(id=1))
    with pytest.raises(LocalProtocolError, match="welcome"):
        server.send(room_state(1))
    server.send(welcome())
    with pytest.raises(LocalProtocolError, match="already sent"):
        server.send(welcome(id=None))


def test_a_server_may_refuse_before_any_hello() -> None:
    server, client = ServerConnection(), ClientConnection()
    busy = m.Error(code="server_busy", message="full", fatal=True)
    client.receive_data(server.send(busy))
    assert client.next_message() == busy
    assert server.state is client.state is ConnectionState.CLOSED
    with pytest.raises(LocalProtocolError):
        server.send(m.Ok())
    with pytest.raises(LocalProtocolError):
        client.send(hello())


def test_the_client_sends_hello_first_and_may_pipeline() -> None:
    server, client = ServerConnection(), ClientConnection()
    with pytest.raises(LocalProtocolError) as caught:
        client.send(m.Ping(id=1))
    assert caught.value.code == HANDSHAKE_REQUIRED
    server.receive_data(client.send(hello()) + client.send(m.ListRooms(id=2)))
    assert isinstance(server.next_message(), m.Hello)
    assert server.next_message() == m.ListRooms(id=2)  # pipelined behind the hello
    client.receive_data(server.send(welcome()))
    client.next_message()
    client.receive_data(server.send(m.RoomList(rooms=(), id=2)))
    assert client.next_message() == m.RoomList(rooms=(), id=2)


@pytest.mark.parametrize(
    "early",
    [m.Ok(id=1), m.Pong(), room_state(1)],
)
def test_the_client_accepts_only_welcome_or_error_first(early: m.Message) -> None:
    client = ClientConnection()
    client.send(hello())
    client.receive_data(encode_frame(m.to_data(early)))
    with pytest.raises(RemoteProtocolError) as caught:
        client.next_message()
    assert caught.value.code == UNEXPECTED_MESSAGE and caught.value.fatal
    assert client.state is ConnectionState.ERROR
    with pytest.raises(LocalProtocolError):
        client.send(m.Ping())


def test_the_client_checks_the_chosen_version() -> None:
    client = ClientConnection()
    client.send(hello(versions=(1,)))
    client.receive_data(encode_frame(m.to_data(welcome(version=2))))
    with pytest.raises(RemoteProtocolError, match="did not offer"):
        client.next_message()


def test_a_second_welcome_is_fatal_for_the_client() -> None:
    _, client = connected()
    client.receive_data(encode_frame(m.to_data(welcome(id=None))))
    with pytest.raises(RemoteProtocolError, match="second welcome"):
        client.next_message()


# ------------------------------------------------------------------ ids


def test_replies_echo_pending_ids() -> None:
    server, client = connected()
    pipe(client, server, m.Ping(id=7))
    pipe(client, server, m.ListRooms(id=8))
    assert server.pending_ids == client.pending_ids == {7, 8}
    with pytest.raises(LocalProtocolError, match="no request 9"):
        server.send(m.Ok(id=9))
    with pytest.raises(LocalProtocolError, match="answered by pong"):
        server.send(m.Ok(id=7))
    pipe(server, client, m.RoomList(rooms=(), id=8))
    pipe(server, client, m.Error(code="rate_limited", message="slow down", fatal=False, id=7))
    assert server.pending_ids == client.pending_ids == frozenset()
    pipe(client, server, m.Ping(id=7))  # an answered id may be used again
    pipe(server, client, m.Pong(id=7))


def test_the_client_refuses_a_reply_to_nothing_or_of_the_wrong_type() -> None:
    server, client = connected()
    client.receive_data(encode_frame(m.to_data(m.Ok(id=99))))
    with pytest.raises(RemoteProtocolError, match="awaits no answer"):
        client.next_message()
    server, client = connected()
    client.send(m.Ping(id=3))
    client.receive_data(encode_frame(m.to_data(m.Ok(id=3))))
    with pytest.raises(RemoteProtocolError, match="expects pong"):
        client.next_message()


def test_a_reused_pending_id_is_refused_without_echo() -> None:
    server, client = connected()
    pipe(client, server, m.Ping(id=1))
    with pytest.raises(LocalProtocolError, match="still awaiting"):
        client.send(m.Ping(id=1))
    server.receive_data(encode_frame(m.to_data(m.ListRooms(id=1))))
    with pytest.raises(RemoteProtocolError) as caught:
        server.next_message()
    assert (
        caught.value.code == UNEXPECTED_MESSAGE
        and caught.value.id is None
        and not caught.value.fatal
    )
    server.send(caught.value.to_message())
    server.send(m.Pong(id=1))  # the first request still gets its answer
    assert server.pending_ids == frozenset()


def test_a_refused_request_keeps_its_id_for_the_error() -> None:
    server, client = connected()
    bad = {"type": "join_room", "room": 0, "id": 12}
    client._pending[12] = "ok"  # as if the client had sent it
    server.receive_data(encode_frame(bad))
    with pytest.raises(RemoteProtocolError) as caught:
        server.next_message()
    assert caught.value.code == INVALID_FIELD and caught.value.id == 12
    assert server.pending_ids == {12}
    got = pipe(server, client, caught.value.to_message())
    assert got.id == 12 and server.pending_ids == client.pending_ids == frozenset()  # type: ignore[attr-defined]
    assert server.state is ConnectionState.OPEN


def test_unknown_message_types_are_refused_and_the_connection_goes_on() -> None:
    server, client = connected()
    server.receive_data(encode_frame({"type": "teleport", "id": 5}) + client.send(m.Ping(id=6)))
    with pytest.raises(RemoteProtocolError) as caught:
        server.next_message()
    assert caught.value.code == UNKNOWN_MESSAGE and caught.value.id == 5
    assert server.next_message() == m.Ping(id=6)


def test_too_many_pending_requests_are_rate_limited() -> None:
    server = ServerConnection(max_pending=3)
    client = ClientConnection()
    pipe(client, server, hello(id=None))
    pipe(server, client, welcome(id=None))
    for i in range(3):
        pipe(client, server, m.Ping(id=i))
    server.receive_data(client.send(m.Ping(id=3)))
    with pytest.raises(RemoteProtocolError) as caught:
        server.next_message()
    assert caught.value.code == RATE_LIMITED and caught.value.id is None and not caught.value.fatal
    server.send(m.Pong(id=0))
    server.receive_data(encode_frame(m.to_data(m.Ping(id=4))))
    assert server.next_message() == m.Ping(id=4)


def test_requests_without_id_are_fine() -> None:
    server, client = connected()
    pipe(client, server, m.Ping())
    assert server.pending_ids == frozenset()
    pipe(server, client, m.Pong())


# ------------------------------------------------------------------ pushes and seq


def test_push_seq_goes_up_by_one() -> None:
    server, client = connected()
    pipe(server, client, room_state(41))  # a resumed session may start anywhere
    pipe(server, client, room_state(42))
    with pytest.raises(LocalProtocolError, match="does not follow 42"):
        server.send(room_state(44))
    with pytest.raises(LocalProtocolError):
        server.send(room_state(42))
    pipe(server, client, room_state(43))


@pytest.mark.parametrize("seq", [3, 4, 6, 100])
def test_the_client_refuses_a_seq_out_of_order(seq: int) -> None:
    server, client = connected()
    pipe(server, client, room_state(4))
    client.receive_data(encode_frame(m.to_data(room_state(seq))))
    with pytest.raises(RemoteProtocolError) as caught:
        client.next_message()
    assert caught.value.fatal and client.state is ConnectionState.ERROR


def test_the_server_cannot_send_client_messages() -> None:
    server, client = connected()
    with pytest.raises(LocalProtocolError):
        server.send(m.Ping())
    with pytest.raises(LocalProtocolError):
        client.send(m.Pong())


# ------------------------------------------------------------------ closing, limits


def test_eof_closes() -> None:
    server, client = connected()
    server.receive_data(b"")
    assert server.next_message() is CLOSED and server.state is ConnectionState.CLOSED
    assert server.next_message() is CLOSED
    with pytest.raises(LocalProtocolError):
        server.send(m.Ok())


def test_eof_inside_a_frame_is_an_error() -> None:
    server, client = connected()
    server.receive_data(client.send(m.Ping(id=1))[:-2])
    assert server.next_message() is NEED_DATA
    server.receive_data(b"")
    with pytest.raises(RemoteProtocolError) as caught:
        server.next_message()
    assert caught.value.code == MALFORMED_FRAME and server.state is ConnectionState.ERROR


def test_a_fatal_error_sent_closes_the_connection() -> None:
    server, client = connected()
    pipe(server, client, m.Error(code="shutting_down", message="bye", fatal=True))
    assert server.state is client.state is ConnectionState.CLOSED
    assert client.next_message() is CLOSED and server.next_message() is CLOSED
    with pytest.raises(LocalProtocolError):
        client.send(m.Ping())


def test_a_malformed_frame_is_fatal_and_sticky() -> None:
    server, client = connected()
    server.receive_data(b"\x00\x00\x00\x01\xc1" + client.send(m.Ping(id=1)))
    with pytest.raises(RemoteProtocolError) as caught:
        server.next_message()
    assert caught.value.code == MALFORMED_FRAME and caught.value.fatal
    for _ in range(3):
        with pytest.raises(RemoteProtocolError) as again:
            server.next_message()
        assert again.value is caught.value


def test_frame_limit_in_both_directions() -> None:
    server = ServerConnection(max_frame=200)
    client = ClientConnection(max_frame=200)
    pipe(client, server, hello())
    pipe(server, client, welcome())
    with pytest.raises(LocalProtocolError) as caught:
        client.send(m.Chat(text="x" * 300, id=2))
    assert caught.value.code == FRAME_TOO_LARGE
    assert client.pending_ids == frozenset()  # nothing was sent, nothing is pending
    big = encode_frame({"type": "chat", "text": "y" * 300, "id": 3})
    server.receive_data(big[:4])
    with pytest.raises(RemoteProtocolError) as refused:
        server.next_message()
    assert refused.value.code == FRAME_TOO_LARGE and server.state is ConnectionState.ERROR


def test_a_whole_game_goes_through_both_connections() -> None:
    frames = session()
    types = [f.message.TYPE for f in frames]
    assert types[:2] == ["hello", "welcome"]
    assert types[-4:] == ["final_reveal_request", "final_reveal", "ok", "game_end"]
    end = frames[-1].message
    assert isinstance(end, m.GameEnd)
    assert [v.status for v in end.verification] == ["ok"] * 3 and end.complete
    pushes = [f.message for f in frames if f.message.ROLE == "push"]
    assert [p.seq for p in pushes] == list(range(1, len(pushes) + 1))  # type: ignore[attr-defined]
    assert "open_request" in types and "reveal" in types

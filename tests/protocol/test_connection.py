"""Sans-I/O connections: handshake, versions, ids, seq, sticky errors, frame limit."""

from __future__ import annotations

import copy

import msgpack
import pytest

from oriflamme.protocol import messages as m
from oriflamme.protocol.codec import MAX_DEPTH, encode_frame
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
from oriflamme.protocol.messages import error_message
from tests.protocol.wire_data import (
    MARKER,
    frame_of,
    map_of,
    map_with_pairs,
    nested_arrays,
    nested_maps,
    packed,
    positions,
    spliced,
)
from tools.docgen.examples import examples
from tools.docgen.worked_example import session

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
    settings = m.RoomSettings(
        players=3, variant="standard", edition="revised", turn_timer=60, first_player="host"
    )
    seats = tuple(m.RoomSeat(seat=i, ready=False, connected=False) for i in range(3))
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
    assert server.hello is None  # let go once welcomed: it may hold a session token
    assert server.pending_ids == client.pending_ids == frozenset()


def test_version_negotiation_picks_the_highest_common_version() -> None:
    server = ServerConnection(versions=(1, 2, 3))
    server.receive_data(ClientConnection().send(hello(versions=(4, 2, 1))))
    server.next_message()
    assert server.version == 2
    for unshared in (3, 4):  # (one the hello did not offer, one the server does not speak)
        with pytest.raises(LocalProtocolError, match=f"welcome.version {unshared} is not"):
            server.send(welcome(version=unshared))
    server.send(welcome(version=2))
    assert server.version == 2


def test_a_resumed_session_keeps_its_older_version() -> None:
    # A session begun in version 1 resumes in it, though both speak 2 now.
    server, client = ServerConnection(), ClientConnection()
    server.receive_data(client.send(hello(versions=(2, 1))))
    server.next_message()
    assert server.version == 2
    client.receive_data(server.send(welcome(version=1)))
    assert client.next_message() == welcome(version=1)
    assert server.version == client.version == 1


GAME_STATE = examples()["game_state"]
GAME_UPDATE = examples()["game_update"]


@pytest.mark.parametrize(("version", "other"), [(1, GAME_UPDATE), (2, GAME_STATE)])
def test_a_push_of_another_version_is_neither_sent_nor_taken(
    version: int, other: m.Message
) -> None:
    """`game_state` is version 1's, `game_update` version 2's: the server
    cannot send the other, and a client closes on it."""
    server, client = ServerConnection(), ClientConnection()
    server.receive_data(client.send(hello(versions=(version,))))
    server.next_message()
    client.receive_data(server.send(welcome(version=version)))
    client.next_message()
    with pytest.raises(LocalProtocolError, match=f"not in protocol version {version}"):
        server.send(other)
    mine = GAME_UPDATE if version == 2 else GAME_STATE
    client.receive_data(server.send(mine))
    assert client.next_message() == mine
    client.receive_data(encode_frame({**m.to_data(other), "seq": 100}))  # (after 9)
    with pytest.raises(RemoteProtocolError, match=f"not in protocol version {version}"):
        client.next_message()
    assert client.state is ConnectionState.ERROR


def test_no_common_version_is_fatal_and_lists_the_servers_versions() -> None:
    server, client = ServerConnection(), ClientConnection()
    server.receive_data(client.send(hello(versions=(3, 4), id=9)))
    with pytest.raises(RemoteProtocolError) as caught:
        server.next_message()
    error = caught.value
    assert (
        error.code == UNSUPPORTED_VERSION
        and error.fatal
        and error.versions == (1, 2)
        and error.id == 9
    )
    assert server.state is ConnectionState.ERROR
    answer = error_message(error)
    client.receive_data(server.send(answer))
    got = client.next_message()
    assert got == answer and got.versions == (1, 2)
    assert client.state is ConnectionState.CLOSED and client.next_message() is CLOSED


@pytest.mark.parametrize(
    "first",
    [
        {"type": "ping", "id": 4},
        {"type": "list_rooms"},
        {"type": "teleport"},
        {"type": "welcome", "version": 1},
        {"type": "ping", "id": "x"},  # not a hello, and a bad field too
        {"type": "join_room", "room": 1, "invite": "ABCD-EFGH", "id": 2},
    ],
)
def test_the_first_message_must_be_hello(first: dict) -> None:
    server = ServerConnection()
    server.receive_data(raw(first) + ClientConnection().send(hello()))
    with pytest.raises(RemoteProtocolError) as caught:
        server.next_message()
    assert caught.value.code == HANDSHAKE_REQUIRED and caught.value.fatal
    readable = first.get("id")
    assert caught.value.id == (readable if isinstance(readable, int) else None)
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
    data = server.send(error_message(caught.value))
    assert msgpack.unpackb(data[4:])["code"] == HANDSHAKE_REQUIRED
    with pytest.raises(LocalProtocolError):
        server.send(error_message(caught.value))
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
    server.send(error_message(caught.value))
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
    server.send(error_message(caught.value))
    server.send(m.Pong(id=1))  # the first request still gets its answer
    assert server.pending_ids == frozenset()


def test_a_second_hello_reusing_a_pending_id_is_refused_without_that_id() -> None:
    """The refusal must not answer the other request: it carries no id, and
    that request still gets its own answer, which the client accepts."""
    server, client = connected()
    pipe(client, server, m.Ping(id=5))
    server.receive_data(raw(m.to_data(hello(id=5))))
    with pytest.raises(RemoteProtocolError) as caught:
        server.next_message()
    error = caught.value
    assert error.code == UNEXPECTED_MESSAGE and not error.fatal
    assert error.id is None
    assert server.pending_ids == {5} and server.state is ConnectionState.OPEN
    refusal = pipe(server, client, error_message(error))
    assert isinstance(refusal, m.Error) and refusal.id is None
    assert client.pending_ids == {5}  # the refusal answered nothing
    assert pipe(server, client, m.Pong(id=5)) == m.Pong(id=5)
    assert server.pending_ids == client.pending_ids == frozenset()
    # A second hello with a fresh id is refused with its own id, as before.
    server.receive_data(raw(m.to_data(hello(id=6))))
    with pytest.raises(RemoteProtocolError) as again:
        server.next_message()
    assert again.value.code == UNEXPECTED_MESSAGE and again.value.id == 6
    server.send(error_message(again.value))
    assert pipe(client, server, m.Ping(id=6)) == m.Ping(id=6)


def test_a_refused_request_keeps_its_id_for_the_error() -> None:
    server, client = connected()
    bad = {"type": "join_room", "room": 0, "id": 12}
    client._pending[12] = "ok"  # as if the client had sent it
    server.receive_data(encode_frame(bad))
    with pytest.raises(RemoteProtocolError) as caught:
        server.next_message()
    assert caught.value.code == INVALID_FIELD and caught.value.id == 12
    assert server.pending_ids == {12}
    got = pipe(server, client, error_message(caught.value))
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
    """The worked example's session (a real server core, a whole game), frame
    by frame through a fresh pair of connections: every frame is accepted,
    decodes to the message sent, and has the same bytes."""
    frames = session()
    types = [f.message.TYPE for f in frames]
    assert types[:2] == ["hello", "welcome"]
    end = types.index("game_end")
    assert types[end - 3 : end + 1] == ["final_reveal_request", "final_reveal", "ok", "game_end"]
    assert "reveal" in types and "place" in types and "choose" in types
    game_end = frames[end].message
    assert isinstance(game_end, m.GameEnd)
    assert [v.status for v in game_end.verification] == ["ok"] * 3 and game_end.complete
    pushes = [f.message for f in frames if f.message.ROLE == "push"]
    assert [p.seq for p in pushes] == list(range(1, len(pushes) + 1))  # type: ignore[attr-defined]

    server, client = ServerConnection(), ClientConnection()
    for frame in frames:
        sender, receiver = (client, server) if frame.sender == "client" else (server, client)
        data = sender.send(frame.message)
        assert data == frame.data
        receiver.receive_data(data)
        assert receiver.next_message() == frame.message
        assert receiver.next_message() is NEED_DATA
    assert server.state is client.state is ConnectionState.OPEN
    assert server.pending_ids == client.pending_ids == frozenset()


# ------------------------------------------------------------------ strict decoding, both sides

EXAMPLES = examples()


def refused_for_good(conn: ServerConnection | ClientConnection, data: bytes) -> None:
    """`data` makes `conn` fail with a fatal ``malformed_frame``, for good; a
    server may still tell its client once."""
    conn.receive_data(data)
    with pytest.raises(RemoteProtocolError) as caught:
        conn.next_message()
    error = caught.value
    assert error.code == MALFORMED_FRAME and error.fatal, error
    assert len(error.message) < 300
    assert conn.state is ConnectionState.ERROR and conn.buffered == 0
    with pytest.raises(RemoteProtocolError) as again:
        conn.next_message()
    assert again.value is error
    if isinstance(conn, ServerConnection):
        ClientConnection().receive_data(conn.send(error_message(error)))
        with pytest.raises(LocalProtocolError):
            conn.send(error_message(error))


def open_client() -> ClientConnection:
    return connected()[1]


def open_server() -> ServerConnection:
    return connected()[0]


def test_a_deeply_nested_card_before_hello_is_a_protocol_error() -> None:
    # 1000 arrays deep: msgpack decodes it (its own limit is 1024), so without
    # a depth limit every parser would walk it (and quote it in its error).
    data = {"type": "reveal", "turn": 1, "card": MARKER, "nonce": bytes(32), "id": 3}
    payload = spliced(data, ("card",), nested_arrays(1000, "red"))
    server = ServerConnection()
    refused_for_good(server, frame_of(payload) + ClientConnection().send(hello()))
    assert server.hello is None


@pytest.mark.parametrize("shape", ["arrays", "maps"])
@pytest.mark.parametrize(
    "path", [p for p in positions(m.to_data(hello())) if p != ("type",)], ids=str
)
def test_deep_nesting_inside_hello_is_a_protocol_error(path: tuple, shape: str) -> None:
    deep = nested_arrays(1000) if shape == "arrays" else nested_maps(1000)
    refused_for_good(ServerConnection(), frame_of(spliced(m.to_data(hello()), path, deep)))


def deep_cases(sender: m.Sender) -> list[tuple[str, tuple]]:
    return [
        (type_, path)
        for type_, msg in sorted(EXAMPLES.items())
        if sender == msg.SENDER
        for path in positions(m.to_data(msg))
        if path != ("type",)
    ]


@pytest.mark.slow  # (every field of every message: `make test` runs it)
@pytest.mark.parametrize("sender", ["client", "server"])
def test_deep_nesting_anywhere_in_any_message_is_a_protocol_error(sender: m.Sender) -> None:
    """Arrays or maps `MAX_DEPTH` deep (so one past the limit with the
    message's map), 1000 (under msgpack's own limit) or 5000 deep, at every
    position of every message a side may send:
    the other side fails with ``malformed_frame`` (the server before and after
    the handshake)."""
    cases = deep_cases(sender)
    assert len(cases) > (40 if sender == "client" else 150)
    for type_, path in cases:
        for deep in (
            nested_arrays(MAX_DEPTH),
            nested_arrays(1000),
            nested_maps(1000),
            nested_maps(5000),
        ):
            data = copy.deepcopy(m.to_data(EXAMPLES[type_]))  # views are shared
            frame = frame_of(spliced(data, path, deep))
            receivers = [open_client] if sender == "server" else [ServerConnection, open_server]
            for make in receivers:
                refused_for_good(make(), frame)


def test_nesting_up_to_the_limit_is_accepted_in_pass_through_maps() -> None:
    """A `game_state` view may hold anything plain, `MAX_DEPTH` deep in all
    (the message, the view, then ten more), but no deeper."""
    data = m.to_data(EXAMPLES["game_state"])
    client = open_client()
    at_limit = spliced(copy.deepcopy(data), ("view", "future"), nested_arrays(MAX_DEPTH - 2))
    client.receive_data(frame_of(at_limit))
    got = client.next_message()
    assert isinstance(got, m.GameState)
    assert got.view["future"] == nested_value(MAX_DEPTH - 2)
    too_deep = spliced(copy.deepcopy(data), ("view", "future"), nested_arrays(MAX_DEPTH - 1))
    refused_for_good(open_client(), frame_of(too_deep))


def nested_value(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


# Encoded values that no frame may hold anywhere: (label, bytes).
FORBIDDEN = [
    ("float 64", b"\xcb" + bytes(8)),
    ("float 32", b"\xca" + bytes(4)),
    ("integral float", packed(1.0)),
    ("binary key", b"\x81\xc4\x01k\x01"),
    ("integer key", b"\x81\x01\x01"),
    ("nil key", b"\x81\xc0\x01"),
    ("repeated key", map_with_pairs([("a", 1), ("a", 1)])),
    ("repeated key, other values", map_with_pairs([("type", "x"), ("b", 1), ("type", "y")])),
    ("binary key, deeper", b"\x91\x91\x81\xa1a\x81\xc4\x01k\x01"),
    ("repeated key, deeper", b"\x91\x81\xa1a" + map_with_pairs([("k", 1), ("k", 2)])),
    ("float, deeper", b"\x92\x01\x81\xa1a\x91" + packed(0.25)),
    ("ext", b"\xd4\x05\x00"),
    ("timestamp", b"\xd6\xff" + bytes(4)),
]


@pytest.mark.parametrize(("label", "value"), FORBIDDEN, ids=[f[0] for f in FORBIDDEN])
@pytest.mark.parametrize(
    ("type_", "path"),
    [
        ("game_state", ("seq",)),  # an integer field
        ("game_state", ("view", "round")),  # an integer inside the pass-through view
        ("game_state", ("view", "queue", 0)),
        ("game_state", ("view", "future")),  # a field no one knows yet
        ("game_state", ("events", 0, "seat")),
        ("game_state", ("decision", "options", 0, "at")),
        ("game_state", ("decision", "time_left")),
        ("game_end", ("verification", 0, "seat")),
        ("room_state", ("seats", 1, "future")),
        ("pong", ("id",)),
    ],
    ids=str,
)
def test_the_client_refuses_what_no_frame_may_hold(
    type_: str, path: tuple, label: str, value: bytes
) -> None:
    data = copy.deepcopy(m.to_data(EXAMPLES[type_]))  # views are shared
    client = open_client()
    if type_ == "pong":
        client.send(m.Ping(id=data["id"]))
    refused_for_good(client, frame_of(spliced(data, path, value)))


@pytest.mark.parametrize(("label", "value"), FORBIDDEN, ids=[f[0] for f in FORBIDDEN])
@pytest.mark.parametrize(
    ("type_", "path"),
    [
        ("hello", ("versions", 0)),
        ("hello", ("future",)),
        ("place", ("turn",)),
        ("place", ("at",)),
        ("reveal", ("card", 1)),
        ("final_reveal", ("openings", 0, "pid")),
        ("chat", ("id",)),
    ],
    ids=str,
)
def test_the_server_refuses_what_no_frame_may_hold(
    type_: str, path: tuple, label: str, value: bytes
) -> None:
    frame = frame_of(spliced(m.to_data(EXAMPLES[type_]), path, value))
    refused_for_good(ServerConnection(), frame)
    if type_ != "hello":
        refused_for_good(open_server(), frame)


def test_a_key_twice_in_the_message_map_is_refused_by_both_sides() -> None:
    # The last value would win in a plain dict: a ping that turns into a hello.
    refused_for_good(
        ServerConnection(),
        frame_of(
            map_of(
                [
                    (packed("type"), packed("ping")),
                    *[(packed(k), packed(v)) for k, v in m.to_data(hello()).items()],
                ]
            )
        ),
    )
    server = open_server()
    refused_for_good(server, frame_of(map_with_pairs([("type", "ping"), ("id", 1), ("id", 2)])))
    # Seq twice in a push: which one would count?
    state = m.to_data(room_state(1))
    pairs = [*state.items(), ("seq", 2)]
    refused_for_good(open_client(), frame_of(map_with_pairs(pairs)))
    # The same key with the same value is refused too.
    refused_for_good(
        open_client(),
        frame_of(map_with_pairs([*m.to_data(m.Pong()).items(), ("type", "pong")])),
    )

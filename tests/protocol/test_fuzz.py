"""Hypothesis: whatever arrives, in whatever chunks, gives messages or a
ProtocolError, never another exception, and never buffers past the limit."""

from __future__ import annotations

from typing import Any

import msgpack
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oriflamme.protocol import messages as m
from oriflamme.protocol.codec import HEADER_SIZE, FrameDecoder, encode_frame
from oriflamme.protocol.connection import CLOSED, NEED_DATA, ClientConnection, ServerConnection
from oriflamme.protocol.errors import ProtocolError, RemoteProtocolError
from oriflamme.protocol.examples import examples

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LIMIT = 512  # a small frame limit, so that the limit is actually reached

EXAMPLE_FRAMES = [encode_frame(m.to_data(msg)) for msg in examples().values()]
CLIENT_FRAMES = [
    encode_frame(m.to_data(msg)) for msg in examples().values() if msg.SENDER == "client"
]
SERVER_FRAMES = [
    encode_frame(m.to_data(msg)) for msg in examples().values() if msg.SENDER == "server"
]

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=True)
    | st.text(max_size=20)
    | st.binary(max_size=40)
)
msgpack_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.dictionaries(
            st.text(max_size=12) | st.binary(max_size=4) | st.integers(0, 9), inner, max_size=5
        )
    ),
    max_leaves=25,
)
field_names = st.sampled_from(
    sorted(
        {
            f.name
            for cls in [*m.CLIENT_MESSAGES.values(), *m.SERVER_MESSAGES.values()]
            for f in cls.FIELDS
        }
    )
)
type_names = st.sampled_from(sorted({*m.CLIENT_MESSAGES, *m.SERVER_MESSAGES})) | st.text(
    max_size=12
)
message_like = st.fixed_dictionaries({"type": type_names}, optional={"id": msgpack_values}).flatmap(
    lambda base: st.dictionaries(field_names, msgpack_values, max_size=6).map(
        lambda extra: {**extra, **base}
    )
)


def chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    edges = [0, *points, len(data)]
    return [data[a:b] for a, b in zip(edges, edges[1:], strict=False) if b > a]


def feed_all(
    conn: ServerConnection | ClientConnection, chunks: list[bytes], eof: bool, limit: int = LIMIT
) -> list[object]:
    """Feed every chunk, draining after each (and answering requests, as a
    server does); stop at a fatal error. Returns what came out."""
    out: list[object] = []
    for chunk in [*chunks, *([b""] if eof else [])]:
        conn.receive_data(chunk)
        while True:
            try:
                event = conn.next_message()
            except RemoteProtocolError as e:
                out.append(e)
                if e.fatal:
                    assert conn.buffered == 0  # a failed decoder drops its buffer
                    return out
                continue
            if event is NEED_DATA or event is CLOSED:
                break
            out.append(event)
            if (
                isinstance(conn, ServerConnection)
                and isinstance(event, m.Message)
                and getattr(event, "id", None) is not None
            ):
                # Answer requests, as a server does, so ids do not pile up.
                reply = m.Error(code="internal", message="fuzz", fatal=False, id=event.id)  # type: ignore[attr-defined]
                conn.send(reply)
        # Whatever is still buffered is part of one incomplete frame.
        assert conn.buffered < HEADER_SIZE + limit
    return out


def open_server() -> ServerConnection:
    server = ServerConnection(max_frame=LIMIT)
    client = ClientConnection()
    server.receive_data(client.send(m.Hello(versions=(1,), client="fuzz", name="F")))
    server.next_message()
    server.send(
        m.Welcome(version=1, token=bytes(32), player=1, server="s", resumed=False, idle_timeout=9)
    )
    return server


def open_client() -> ClientConnection:
    client = ClientConnection(max_frame=LIMIT)
    client.send(m.Hello(versions=(1,), client="fuzz", name="F"))
    client.receive_data(
        encode_frame(
            m.to_data(
                m.Welcome(
                    version=1, token=bytes(32), player=1, server="s", resumed=False, idle_timeout=9
                )
            )
        )
    )
    client.next_message()
    return client


@SETTINGS
@given(
    data=st.binary(max_size=3000),
    cuts=st.lists(st.integers(0, 3000), max_size=8),
    eof=st.booleans(),
)
def test_arbitrary_bytes(data: bytes, cuts: list[int], eof: bool) -> None:
    for conn in (ServerConnection(max_frame=LIMIT), open_server(), open_client()):
        feed_all(conn, chunked(data, cuts), eof)
    decoder = FrameDecoder(max_frame=LIMIT)
    for chunk in chunked(data, cuts):
        decoder.feed(chunk)
        try:
            while decoder.next_frame() is not None:
                pass
        except RemoteProtocolError:
            assert decoder.buffered == 0
            break
        assert decoder.buffered < HEADER_SIZE + LIMIT


@SETTINGS
@given(value=msgpack_values, cuts=st.lists(st.integers(0, 600), max_size=4))
def test_arbitrary_msgpack_values(value: Any, cuts: list[int]) -> None:
    payload = msgpack.packb(value)
    frame = len(payload).to_bytes(4, "big") + payload
    for conn in (open_server(), open_client()):
        out = feed_all(conn, chunked(frame, cuts), eof=False)
        assert len(out) <= 1
        assert all(isinstance(o, m.Message | ProtocolError) for o in out)


@SETTINGS
@given(data=message_like, side=st.sampled_from(["client", "server"]))
def test_arbitrary_message_shaped_maps(data: dict[str, Any], side: m.Sender) -> None:
    try:
        message = m.from_data(data, side)
    except RemoteProtocolError as e:
        assert e.code in {"unknown_message", "invalid_field"}
        return
    # Whatever was accepted is a valid message, and encodes back to the same one.
    assert m.from_data(m.to_data(message), side) == message


@SETTINGS
@given(
    index=st.integers(0, len(EXAMPLE_FRAMES) - 1),
    name=field_names,
    value=msgpack_values,
)
def test_valid_messages_with_one_field_replaced(index: int, name: str, value: Any) -> None:
    message = list(examples().values())[index]
    data = m.to_data(message) | {name: value}
    try:
        decoded = m.from_data(data, message.SENDER)
    except RemoteProtocolError as e:
        assert e.code == "invalid_field" or (name == "type" and e.code == "unknown_message")
        return
    assert m.from_data(m.to_data(decoded), message.SENDER) == decoded


mutation = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 10**6), st.integers(1, 255)),
    st.tuples(st.just("insert"), st.integers(0, 10**6), st.integers(0, 255)),
    st.tuples(st.just("delete"), st.integers(0, 10**6), st.just(0)),
    st.tuples(st.just("truncate"), st.integers(0, 10**6), st.just(0)),
)


def mutate(frame: bytes, edits: list[tuple[str, int, int]]) -> bytes:
    data = bytearray(frame)
    for op, position, byte in edits:
        if not data:
            break
        i = position % len(data)
        if op == "flip":
            data[i] ^= byte
        elif op == "insert":
            data.insert(i, byte)
        elif op == "delete":
            del data[i]
        else:
            del data[i:]
    return bytes(data)


@SETTINGS
@given(
    picks=st.lists(st.integers(0, 10**6), min_size=1, max_size=4),
    edits=st.lists(mutation, min_size=1, max_size=4),
    cuts=st.lists(st.integers(0, 20000), max_size=6),
    eof=st.booleans(),
)
def test_mutated_valid_frames(
    picks: list[int], edits: list[tuple[str, int, int]], cuts: list[int], eof: bool
) -> None:
    to_server = b"".join(CLIENT_FRAMES[p % len(CLIENT_FRAMES)] for p in picks)
    to_client = b"".join(SERVER_FRAMES[p % len(SERVER_FRAMES)] for p in picks)
    server = ServerConnection(max_frame=LIMIT * 8)
    out = feed_all(server, chunked(mutate(to_server, edits), cuts), eof, LIMIT * 8)
    assert all(isinstance(o, m.Message | ProtocolError) for o in out)
    client = ClientConnection(max_frame=LIMIT * 8)
    client.send(m.Hello(versions=(1,), client="fuzz", name="F"))
    out = feed_all(client, chunked(mutate(to_client, edits), cuts), eof, LIMIT * 8)
    assert all(isinstance(o, m.Message | ProtocolError) for o in out)


@SETTINGS
@given(
    picks=st.lists(st.integers(0, 10**6), max_size=12),
    cuts=st.lists(st.integers(0, 20000), max_size=10),
)
def test_valid_frames_in_any_chunking_give_exactly_the_messages(
    picks: list[int], cuts: list[int]
) -> None:
    requests = [m for m in examples().values() if m.SENDER == "client" and m.TYPE != "hello"]
    sent = [requests[p % len(requests)] for p in picks]
    server = ServerConnection()
    stream = ClientConnection().send(m.Hello(versions=(1,), client="fuzz", name="F"))
    stream += b"".join(encode_frame(m.to_data(msg)) for msg in sent)
    out = feed_all(server, chunked(stream, cuts), eof=True, limit=65536)
    # feed_all answers every request at once, so no id is ever reused while pending.
    assert out[0] == m.Hello(versions=(1,), client="fuzz", name="F")
    assert out[1:] == sent

"""Hypothesis: whatever arrives, in whatever chunks, gives messages or a
RemoteProtocolError, never another exception, never buffers past the limit,
and every refusal can be told to the peer."""

from __future__ import annotations

import contextlib
import copy
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oriflamme.engine import action_from_data, card_from_data, event_from_data
from oriflamme.protocol import messages as m
from oriflamme.protocol.codec import HEADER_SIZE, FrameDecoder, encode_frame
from oriflamme.protocol.connection import (
    CLOSED,
    NEED_DATA,
    ClientConnection,
    ConnectionState,
    ServerConnection,
)
from oriflamme.protocol.errors import RemoteProtocolError
from tests.protocol.wire_data import frame_of, map_of, packed, positions, spliced
from tools.docgen.examples import examples

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
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


# Encoded msgpack built by hand, for what msgpack.packb will not make: a key
# twice in a map, nesting deeper than its own limit, floats as keys, ext types.
raw_scalars = scalars.map(packed) | st.sampled_from(
    [
        b"\xca" + bytes(4),  # float 32
        b"\xd4\x05\x00",  # ext 5
        b"\xd6\xff" + bytes(4),  # timestamp
        b"\xc1",  # never used
    ]
)
raw_keys = (
    st.text(max_size=8).map(packed)
    | st.sampled_from(["type", "id", "seq", "card", "view", "a"]).map(packed)
    | st.binary(max_size=4).map(packed)
    | st.integers(-1, 9).map(packed)
    | st.just(b"\xcb" + bytes(8))
)


def array_header(n: int) -> bytes:
    return bytes([0x90 | n]) if n < 16 else b"\xdc" + n.to_bytes(2, "big")


@st.composite
def raw_maps(draw: st.DrawFn, values: st.SearchStrategy[bytes]) -> bytes:
    pairs = draw(st.lists(st.tuples(raw_keys, values), max_size=5))
    if len(pairs) > 0 and draw(st.booleans()):
        key = draw(st.sampled_from(pairs))[0]
        pairs.insert(draw(st.integers(0, len(pairs))), (key, draw(values)))  # a key twice
    return map_of(pairs)


raw_values = st.recursive(
    raw_scalars,
    lambda inner: (
        st.lists(inner, max_size=5).map(lambda items: array_header(len(items)) + b"".join(items))
        | raw_maps(inner)
    ),
    max_leaves=20,
)


@st.composite
def deep_raw_values(draw: st.DrawFn) -> bytes:
    """`raw_values`, often wrapped in arrays or maps: up to the depth limit,
    just past it, deep enough for any recursion to fail (under msgpack's own
    limit of 1024), and past msgpack's limit."""
    depth = draw(st.sampled_from([0, 1, 11, 12, 13, 900, 1000, 1010]) | st.integers(0, 1100))
    wrapper = draw(st.sampled_from([b"\x91", b"\x81\xa1a", b"\x92\xc0", b"\x82\xa1b\x01\xa1a"]))
    return wrapper * depth + draw(st.just(b"\x01") | raw_values)


@st.composite
def raw_messages(draw: st.DrawFn) -> bytes:
    """A map with a message type and fields of any encoded values (keys twice included)."""
    type_ = packed(draw(type_names))
    fields = draw(st.lists(st.tuples(field_names.map(packed), deep_raw_values()), max_size=6))
    pairs = [(packed("type"), type_), *fields]
    if draw(st.booleans()):
        pairs.insert(draw(st.integers(0, len(pairs))), (packed("type"), type_))
    return map_of(draw(st.permutations(pairs)))


def chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    edges = [0, *points, len(data)]
    return [data[a:b] for a, b in zip(edges, edges[1:], strict=False) if b > a]


FATAL_ON_SERVER = {
    "malformed_frame",
    "frame_too_large",
    "handshake_required",
    "unsupported_version",
    "invalid_field",  # a bad hello
}
REFUSALS_ON_SERVER = {"unknown_message", "invalid_field", "unexpected_message", "rate_limited"}


@contextlib.contextmanager
def default_recursion_limit() -> Iterator[None]:
    """Python's default recursion limit, as a server runs with (Hypothesis
    raises it while it runs a test, which would hide a recursion too deep)."""
    raised = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        yield
    finally:
        sys.setrecursionlimit(raised)


def feed_all(
    conn: ServerConnection | ClientConnection, chunks: list[bytes], eof: bool, limit: int = LIMIT
) -> list[object]:
    """Feed every chunk, draining after each, as a server or client loop does:
    a server answers every request and tells the client of every refusal.
    Stop at a fatal error. Returns what came out. Anything but a message or a
    `RemoteProtocolError` escapes and fails the test."""
    out: list[object] = []
    server = isinstance(conn, ServerConnection)
    for chunk in [*chunks, *([b""] if eof else [])]:
        conn.receive_data(chunk)
        while True:
            try:
                with default_recursion_limit():
                    event = conn.next_message()
            except RemoteProtocolError as e:
                out.append(e)
                assert len(e.message) < 300, "an error never quotes a value whole"
                if server:
                    assert e.code in (FATAL_ON_SERVER if e.fatal else REFUSALS_ON_SERVER), e
                    conn.send(m.error_message(e))  # the refusal can always be told
                if e.fatal:
                    assert conn.state in (ConnectionState.ERROR, ConnectionState.CLOSED)
                    assert conn.buffered == 0  # a failed decoder drops its buffer
                    with pytest.raises(RemoteProtocolError):
                        conn.next_message()  # sticky
                    return out
                assert server, "every error is fatal for a client"
                continue
            if event is NEED_DATA or event is CLOSED:
                break
            assert isinstance(event, m.Message)
            out.append(event)
            if server and getattr(event, "id", None) is not None:
                # Answer requests, as a server does, so ids do not pile up.
                reply = m.Error(code="internal", message="fuzz", fatal=False, id=event.id)  # type: ignore[attr-defined]
                conn.send(reply)
        # Whatever is still buffered is part of one incomplete frame.
        assert conn.buffered < HEADER_SIZE + limit
    return out


def open_server(limit: int = LIMIT) -> ServerConnection:
    server = ServerConnection(max_frame=limit)
    client = ClientConnection()
    server.receive_data(client.send(m.Hello(versions=(1,), client="fuzz", name="F")))
    server.next_message()
    server.send(
        m.Welcome(version=1, token=bytes(32), player=1, server="s", resumed=False, idle_timeout=9)
    )
    return server


def open_client(limit: int = LIMIT) -> ClientConnection:
    client = ClientConnection(max_frame=limit)
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
    # Requests awaiting their answer, so that replies may match one.
    for request_id in range(4):
        client.send(m.Ping(id=request_id))
    return client


def every_side(limit: int = LIMIT) -> list[ServerConnection | ClientConnection]:
    """A server before any hello, a server and a client after the handshake."""
    return [ServerConnection(max_frame=limit), open_server(limit), open_client(limit)]


@SETTINGS
@given(
    data=st.binary(max_size=3000),
    cuts=st.lists(st.integers(0, 3000), max_size=8),
    eof=st.booleans(),
)
def test_arbitrary_bytes(data: bytes, cuts: list[int], eof: bool) -> None:
    for conn in every_side():
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
    frame = frame_of(packed(value))
    for conn in every_side():
        assert len(feed_all(conn, chunked(frame, cuts), eof=False)) <= 1


@pytest.mark.slow  # (many examples: `make test` runs it, not `make test-fast`)
@SETTINGS
@given(payload=deep_raw_values(), cuts=st.lists(st.integers(0, 1200), max_size=4))
def test_arbitrary_encoded_values_deep_floats_and_keys_twice(
    payload: bytes, cuts: list[int]
) -> None:
    frame = frame_of(payload)
    for conn in every_side(limit=4096):
        assert len(feed_all(conn, chunked(frame, cuts), eof=False, limit=4096)) <= 1


@pytest.mark.slow  # (many examples: `make test` runs it, not `make test-fast`)
@SETTINGS
@given(
    payloads=st.lists(raw_messages(), min_size=1, max_size=3),
    cuts=st.lists(st.integers(0, 5000), max_size=6),
)
def test_arbitrary_message_maps_encoded_by_hand(payloads: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(frame_of(p) for p in payloads)
    for conn in every_side(limit=4096):
        feed_all(conn, chunked(stream, cuts), eof=True, limit=4096)


EXAMPLES = examples()


@pytest.mark.parametrize("type_", sorted(EXAMPLES))
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_valid_messages_with_any_inner_value_replaced(type_: str, data: st.DataObject) -> None:
    """Any encoded value (deep, float, keys twice...) at any position of a
    valid message, sent to the side that receives that message."""
    message = EXAMPLES[type_]
    path = data.draw(st.sampled_from(list(positions(m.to_data(message)))))
    value = data.draw(deep_raw_values())
    frame = frame_of(spliced(copy.deepcopy(m.to_data(message)), path, value))
    if message.SENDER == "client":
        receivers: list[ServerConnection | ClientConnection] = [
            ServerConnection(),
            open_server(65536),
        ]
    else:
        receivers = [open_client(65536)]
    for conn in receivers:
        out = feed_all(conn, [frame], eof=False, limit=65536)
        assert len(out) == 1
        if isinstance(out[0], m.Message):
            # Whatever was accepted encodes back to the same message.
            assert m.from_data(m.to_data(out[0]), message.SENDER) == out[0]


@pytest.mark.slow  # (many examples: `make test` runs it, not `make test-fast`)
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
    assert all(isinstance(o, m.Message | RemoteProtocolError) for o in out)
    client = ClientConnection(max_frame=LIMIT * 8)
    client.send(m.Hello(versions=(1,), client="fuzz", name="F"))
    out = feed_all(client, chunked(mutate(to_client, edits), cuts), eof, LIMIT * 8)
    assert all(isinstance(o, m.Message | RemoteProtocolError) for o in out)


@SETTINGS
@given(
    picks=st.lists(st.integers(0, 10**6), max_size=12),
    cuts=st.lists(st.integers(0, 20000), max_size=10),
)
def test_valid_frames_in_any_chunking_give_exactly_the_messages(
    picks: list[int], cuts: list[int]
) -> None:
    # (a hello comes once; a prove only after a hello with a key: test_identity)
    requests = [
        m for m in examples().values() if m.SENDER == "client" and m.TYPE not in ("hello", "prove")
    ]
    sent = [requests[p % len(requests)] for p in picks]
    server = ServerConnection()
    stream = ClientConnection().send(m.Hello(versions=(1,), client="fuzz", name="F"))
    stream += b"".join(encode_frame(m.to_data(msg)) for msg in sent)
    out = feed_all(server, chunked(stream, cuts), eof=True, limit=65536)
    # feed_all answers every request at once, so no id is ever reused while pending.
    assert out[0] == m.Hello(versions=(1,), client="fuzz", name="F")
    assert out[1:] == sent


def deepened(value: Any, depth: int, shape: str) -> Any:
    for _ in range(depth):
        value = [value] if shape == "array" else {"type": "placed", "card": value}
    return value


plain_data = st.builds(
    deepened,
    msgpack_values,
    st.sampled_from([0, 1, 3, 2000]) | st.integers(0, 3000),
    st.sampled_from(["array", "map"]),
)


@pytest.mark.slow  # (many examples: `make test` runs it, not `make test-fast`)
@SETTINGS
@given(
    value=plain_data
    | st.text(min_size=1000, max_size=5000)
    | st.lists(st.just("red"), max_size=3000),
    wrap=st.sampled_from(["bare", "card", "family", "kind", "action", "event"]),
)
def test_the_engines_parsers_of_wire_data_never_quote_a_value_whole(value: Any, wrap: str) -> None:
    """The engine's parsers read what the protocol passes through (views'
    cards, events, decision options): anything else fails with a short
    ValueError, never another exception."""
    data = {
        "bare": value,
        "card": [value, "spy"],
        "family": [value, "spy"],
        "kind": ["red", value],
        "action": {"type": "place", "card": ["red", None], "at": value},
        "event": {"type": "placed", "seat": 0, "pid": 1, "card": value, "at": "first", "slot": 0},
    }[wrap]
    for parse in (card_from_data, action_from_data, event_from_data):
        try:
            with default_recursion_limit():
                parse(data)
        except ValueError as e:
            assert len(str(e)) < 300

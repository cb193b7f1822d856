"""Framing and safe decoding (oriflamme.protocol.codec)."""

from __future__ import annotations

import re

import msgpack
import pytest

from oriflamme.protocol.codec import (
    DEFAULT_MAX_FRAME,
    MAX_DEPTH,
    FrameDecoder,
    check_plain,
    decode_payload,
    encode_frame,
    unpack_untrusted,
)
from oriflamme.protocol.errors import (
    FRAME_TOO_LARGE,
    MALFORMED_FRAME,
    LocalProtocolError,
    RemoteProtocolError,
)


def frame_of(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + payload


def drain(decoder: FrameDecoder) -> list[dict]:
    out = []
    while (frame := decoder.next_frame()) is not None:
        out.append(frame)
    return out


def test_a_frame_is_a_big_endian_length_and_a_msgpack_map() -> None:
    frame = encode_frame({"type": "ping", "id": 1})
    assert frame[:4] == (len(frame) - 4).to_bytes(4, "big")
    assert msgpack.unpackb(frame[4:]) == {"type": "ping", "id": 1}
    assert frame.hex() == "0000000f82a474797065a470696e67a2696401"


def test_bytes_and_str_stay_apart() -> None:
    data = {
        "type": "x",
        "text": "é",
        "blob": b"\x00\xff",
        "none": None,
        "flag": True,
        "list": [1, [2]],
    }
    decoder = FrameDecoder()
    decoder.feed(encode_frame(data))
    assert decoder.next_frame() == data


@pytest.mark.parametrize("cut", range(1, 40))
def test_any_split_gives_the_same_frames(cut: int) -> None:
    frames = [{"type": "a", "n": i, "pad": "x" * i} for i in range(3)]
    stream = b"".join(encode_frame(f) for f in frames)
    decoder = FrameDecoder()
    got = []
    for start in range(0, len(stream), cut):
        decoder.feed(stream[start : start + cut])
        got += drain(decoder)
    assert got == frames
    assert decoder.buffered == 0


def test_one_byte_at_a_time_then_clean_eof() -> None:
    stream = encode_frame({"type": "a"}) + encode_frame({"type": "b"})
    decoder = FrameDecoder()
    got = []
    for i in range(len(stream)):
        decoder.feed(stream[i : i + 1])
        got += drain(decoder)
    decoder.feed(b"")
    assert decoder.next_frame() is None and decoder.at_eof
    assert [f["type"] for f in got] == ["a", "b"]


def test_an_oversized_frame_is_refused_from_its_header_alone() -> None:
    decoder = FrameDecoder()
    decoder.feed((DEFAULT_MAX_FRAME + 1).to_bytes(4, "big"))
    with pytest.raises(RemoteProtocolError) as caught:
        decoder.next_frame()
    assert caught.value.code == FRAME_TOO_LARGE and caught.value.fatal
    assert decoder.buffered == 0


def test_an_oversized_frame_is_dropped_as_soon_as_fed() -> None:
    decoder = FrameDecoder(max_frame=100)
    decoder.feed((101).to_bytes(4, "big") + b"\x00" * 5000)
    assert decoder.buffered == 0
    decoder.feed(b"\x00" * 5000)  # ignored: the decoder has failed
    assert decoder.buffered == 0
    with pytest.raises(RemoteProtocolError, match="frame_too_large"):
        decoder.next_frame()


def test_a_frame_exactly_at_the_limit_is_fine() -> None:
    payload = msgpack.packb({"type": "x", "pad": b"\x00" * 80})
    limit = len(payload)
    decoder = FrameDecoder(max_frame=limit)
    decoder.feed(frame_of(payload))
    assert decoder.next_frame() == {"type": "x", "pad": b"\x00" * 80}
    with pytest.raises(LocalProtocolError) as caught:
        encode_frame({"type": "x", "pad": b"\x00" * 81}, max_frame=limit)
    assert caught.value.code == FRAME_TOO_LARGE


BAD_PAYLOADS = {
    "empty frame": b"",
    "not msgpack": b"\xc1",
    "truncated value": b"\x82\xa4type",
    "trailing bytes": msgpack.packb({"type": "a"}) + b"\x01",
    "two values": msgpack.packb({"type": "a"}) * 2,
    "an array": msgpack.packb(["type", "a"]),
    "an integer": msgpack.packb(7),
    "nil": msgpack.packb(None),
    "integer key": msgpack.packb({1: "a"}),
    "bytes key": msgpack.packb({b"type": "a"}),
    "map key": b"\x81\x81\xa1a\x01\x01",
    "ext type": msgpack.packb({"type": msgpack.ExtType(5, b"xy")}),
    "zero-length ext": b"\x81\xa4type\xc7\x00\x05",
    "timestamp ext": msgpack.packb({"type": msgpack.Timestamp(1, 0)}),
    "bad utf-8": b"\x81\xa4type\xa2\xff\xfe",
    "huge declared array": b"\x81\xa4type\xdd\xff\xff\xff\xff",
    "huge declared string": b"\x81\xa4type\xdb\xff\xff\xff\xff",
    "deep nesting": b"\x81\xa4type" + b"\x91" * 5000 + b"\x01",
    # Under msgpack's own nesting limit (1024): refused by the depth check.
    "nesting 1000 deep": b"\x81\xa4type" + b"\x91" * 1000 + b"\x01",
    "maps 1000 deep": b"\x81\xa4type" + b"\x81\xa1a" * 1000 + b"\x01",
    "nesting one past the limit": b"\x81\xa4type" + b"\x91" * MAX_DEPTH + b"\x01",
    "float 64": b"\x81\xa4type\xcb" + bytes(8),
    "float 32": b"\x81\xa4type\xca" + bytes(4),
    "float deep inside": b"\x81\xa4type\x92\x01\x81\xa1a\x91\xcb" + bytes(8),
    "float as a key": b"\x81\xca" + bytes(4) + b"\x01",
    "bytes key deep inside": b"\x81\xa4type\x91\x91\x81\xc4\x01k\x01",
    "integer key deep inside": b"\x81\xa4type\x91\x81\x01\x01",
    "a key twice": b"\x82\xa4type\xa1a\xa4type\xa1b",
    "a key twice, same value": b"\x82\xa4type\xa1a\xa4type\xa1a",
    "a key twice deep inside": b"\x81\xa4type\x91\x91\x83\xa1k\x01\xa1j\x02\xa1k\x03",
    "ext deep inside": b"\x81\xa4type\x91\x91\xd4\x05\x00",
}


@pytest.mark.parametrize("payload", BAD_PAYLOADS.values(), ids=BAD_PAYLOADS.keys())
def test_malformed_payloads_are_refused(payload: bytes) -> None:
    decoder = FrameDecoder()
    decoder.feed(frame_of(payload))
    with pytest.raises(RemoteProtocolError) as caught:
        decoder.next_frame()
    assert caught.value.code == MALFORMED_FRAME and caught.value.fatal


def test_decode_payload_checks_keys_at_every_depth() -> None:
    assert decode_payload(msgpack.packb({"type": "a", "x": {"y": 1}})) == {
        "type": "a",
        "x": {"y": 1},
    }
    with pytest.raises(RemoteProtocolError, match="keys must be strings"):
        decode_payload(msgpack.packb({"type": "a", b"bin key": 1}))
    with pytest.raises(RemoteProtocolError, match="keys must be strings"):
        decode_payload(msgpack.packb({"type": "a", "x": [[{"y": {b"bin key": 1}}]]}))


def nested(depth: int) -> bytes:
    """A map holding `depth` containers in all, the map included."""
    return (
        b"\x81\xa4type"
        + b"\x91\x81\xa1a" * ((depth - 1) // 2)
        + b"\x91" * ((depth - 1) % 2)
        + b"\x01"
    )


def test_nesting_up_to_max_depth_is_fine() -> None:
    at_limit = decode_payload(nested(MAX_DEPTH))
    containers = 0
    value: object = at_limit
    while isinstance(value, dict | list):
        containers += 1
        value = value["type" if containers == 1 else "a"] if isinstance(value, dict) else value[0]
    assert containers == MAX_DEPTH
    with pytest.raises(RemoteProtocolError, match=f"nest more than {MAX_DEPTH} deep"):
        decode_payload(nested(MAX_DEPTH + 1))
    # Many containers side by side are not depth.
    wide = {
        "type": "a",
        "x": [[[1]] for _ in range(500)],
        "y": {str(i): {"z": []} for i in range(500)},
    }
    assert decode_payload(msgpack.packb(wide)) == wide


def test_the_error_names_the_problem() -> None:
    problems = {
        b"\x82\xa1a\x01\xa1a\x02": "a map has the same key twice",
        b"\x81\xa1a\xcb" + bytes(8): "float values are not used in this protocol",
        b"\x81\xa1a\x91\x81\xc4\x01k\x01": "map keys must be strings",
        nested(MAX_DEPTH + 1): f"arrays and maps nest more than {MAX_DEPTH} deep",
        # In the protocol's words, not msgpack's or Python's:
        b"\x93\x01\x02\x03": "a frame must hold one map, not an array",
        b"\xc0": "a frame must hold one map, not nil",
        b"\x81\x01\xa1a": "a map key is not a str",
        b"\x81\xa1x\xd4\x01\x00": "msgpack extension types are not used in this protocol",
        b"\x81\xa4type\xa2\xff\xfe": "a str is not valid UTF-8",
        b"\x81\xa1a\x01\x00": "bytes follow the map",
        b"\x82\xa1a": "the payload ends inside a value",
        b"\xc1": "not valid msgpack",
    }
    for payload, problem in problems.items():
        with pytest.raises(RemoteProtocolError) as caught:
            decode_payload(payload)
        assert caught.value.code == MALFORMED_FRAME and problem in caught.value.message


LIMITS = {"max_str_len": 8, "max_bin_len": 4, "max_array_len": 3, "max_map_len": 2}


def test_unpack_untrusted_bounds_every_length() -> None:
    fine = {"s": "x" * 8, "b": b"x" * 4}
    assert unpack_untrusted(msgpack.packb(fine), **LIMITS) == fine
    assert unpack_untrusted(msgpack.packb([1, 2, 3]), **LIMITS) == [1, 2, 3]
    for too_long in ("x" * 9, b"x" * 5, [1, 2, 3, 4], {"a": 1, "b": 2, "c": 3}):
        with pytest.raises(ValueError):
            unpack_untrusted(msgpack.packb(too_long), **LIMITS)
    with pytest.raises(ValueError, match="nest more than 2 deep"):
        unpack_untrusted(msgpack.packb([[[]]]), **LIMITS, max_depth=2)
    assert unpack_untrusted(msgpack.packb([[]]), **LIMITS, max_depth=2) == [[]]


@pytest.mark.parametrize(
    "value",
    [
        1.5,
        {"a": [1, (2,)]},
        {"a": {1: "x"}},
        [{"k": {b"k": 1}}],
        [set()],
        {"a": bytearray(b"x")},
        [True, None, "s", b"b", {"x": [object()]}],
    ],
    # An object's repr has its address, which differs from one collection to the
    # next: without it the ids are the same in every pytest-xdist worker.
    ids=lambda value: re.sub(r" at 0x[0-9a-f]+", "", repr(value)),
)
def test_check_plain_refuses_what_msgpack_data_cannot_be(value: object) -> None:
    with pytest.raises(ValueError):
        check_plain(value)


def test_check_plain_walks_without_recursing() -> None:
    deep: object = 1
    for _ in range(200_000):
        deep = [deep, {"k": None}]
    with pytest.raises(ValueError, match="nest more than"):
        check_plain(deep)
    check_plain(deep, max_depth=10**6)  # deeper than any recursion limit, walked level by level
    check_plain({"a": [None, True, 1, "s", b"b", {"k": []}]}, max_depth=4)


def test_a_failed_decoder_stays_failed() -> None:
    decoder = FrameDecoder()
    decoder.feed(frame_of(b"\xc1") + encode_frame({"type": "fine"}))
    with pytest.raises(RemoteProtocolError) as first:
        decoder.next_frame()
    with pytest.raises(RemoteProtocolError) as second:
        decoder.next_frame()
    assert first.value is second.value
    assert decoder.error is first.value and decoder.buffered == 0
    decoder.feed(encode_frame({"type": "also fine"}))
    with pytest.raises(RemoteProtocolError):
        decoder.next_frame()


def test_eof_inside_a_frame_is_malformed() -> None:
    decoder = FrameDecoder()
    decoder.feed(encode_frame({"type": "a"})[:-1])
    assert decoder.next_frame() is None
    decoder.feed(b"")
    with pytest.raises(RemoteProtocolError, match="closed inside a frame"):
        decoder.next_frame()


def test_bytes_after_eof_are_a_caller_bug() -> None:
    decoder = FrameDecoder()
    decoder.feed(b"")
    with pytest.raises(RuntimeError):
        decoder.feed(b"\x00")


def test_frames_before_a_broken_one_are_delivered() -> None:
    decoder = FrameDecoder()
    decoder.feed(encode_frame({"type": "a"}) + frame_of(b"\xc1"))
    assert decoder.next_frame() == {"type": "a"}
    with pytest.raises(RemoteProtocolError):
        decoder.next_frame()


def test_the_buffer_stays_small_over_a_long_stream() -> None:
    decoder = FrameDecoder()
    frame = encode_frame({"type": "a", "pad": "x" * 1000})
    for _ in range(300):
        decoder.feed(frame + frame[:500])
        drain(decoder)
        decoder.feed(frame[500:])
        drain(decoder)
        assert decoder.buffered == 0
    assert len(decoder._buf) < 4 * len(frame)


def test_encoding_refuses_what_msgpack_cannot_carry() -> None:
    with pytest.raises(LocalProtocolError):
        encode_frame({"type": "a", "x": object()})
    with pytest.raises(LocalProtocolError):
        encode_frame({"type": "a", "x": 2**70})


def test_the_limit_is_configurable() -> None:
    with pytest.raises(ValueError):
        FrameDecoder(max_frame=0)
    decoder = FrameDecoder(max_frame=10)
    decoder.feed(encode_frame({"type": "abcdefghij"}))
    with pytest.raises(RemoteProtocolError, match="frame_too_large"):
        decoder.next_frame()

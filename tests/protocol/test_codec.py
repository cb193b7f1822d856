"""Framing and safe decoding (oriflamme.protocol.codec)."""

from __future__ import annotations

import msgpack
import pytest

from oriflamme.protocol.codec import DEFAULT_MAX_FRAME, FrameDecoder, decode_payload, encode_frame
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
}


@pytest.mark.parametrize("payload", BAD_PAYLOADS.values(), ids=BAD_PAYLOADS.keys())
def test_malformed_payloads_are_refused(payload: bytes) -> None:
    decoder = FrameDecoder()
    decoder.feed(frame_of(payload))
    with pytest.raises(RemoteProtocolError) as caught:
        decoder.next_frame()
    assert caught.value.code == MALFORMED_FRAME and caught.value.fatal


def test_decode_payload_checks_keys_at_the_top() -> None:
    assert decode_payload(msgpack.packb({"type": "a", "x": {"y": 1}})) == {
        "type": "a",
        "x": {"y": 1},
    }
    with pytest.raises(RemoteProtocolError, match="keys must be strings"):
        decode_payload(msgpack.packb({"type": "a", b"bin key": 1}))


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

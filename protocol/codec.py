"""Framing and safe msgpack decoding.

How this works
--------------
A frame is a 4-byte big-endian unsigned payload length ``n`` followed by ``n``
bytes that hold exactly one msgpack map with string keys; ``1 <= n <=
max_frame`` (65536 by default). `FrameDecoder` takes bytes in any chunking
and hands out the decoded maps one by one:

* the length is checked as soon as the 4 header bytes are in, so a peer
  cannot make us wait for (or buffer) a frame over the limit: an incomplete
  frame never holds more than ``4 + max_frame - 1`` bytes;
* each payload is decoded on its own by `unpack_untrusted`, the one strict
  msgpack decoder of the project (frames and game records alike): text is
  UTF-8 str and bin is bytes, every length is bounded, and the value holds
  only nil, booleans, integers, str, bin, arrays and maps whose keys are
  str and appear once, nested at most `MAX_DEPTH` deep; no float, no ext
  type (the timestamp type included);
* any failure is a `RemoteProtocolError` (``malformed_frame`` or
  ``frame_too_large``) and is sticky: the decoder drops its buffer, ignores
  further bytes and raises the same error on every later call. A decoder
  that failed is never reused.

>>> frame = encode_frame({"type": "ping", "id": 1})
>>> frame.hex()
'0000000f82a474797065a470696e67a2696401'
>>> decoder = FrameDecoder()
>>> decoder.feed(frame[:3]); decoder.next_frame() is None
True
>>> decoder.feed(frame[3:]); decoder.next_frame()
{'type': 'ping', 'id': 1}
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

import msgpack

from .errors import (
    FRAME_TOO_LARGE,
    INVALID_FIELD,
    MALFORMED_FRAME,
    LocalProtocolError,
    RemoteProtocolError,
)

DEFAULT_MAX_FRAME = 65536
# Arrays and maps inside arrays and maps, counting the outermost map: a
# `game_state` needs 6 (view, queue, slot, card in play, card). Deeper input
# is refused before any code walks it.
MAX_DEPTH = 12
HEADER = struct.Struct(">I")
HEADER_SIZE = HEADER.size
# Compact the buffer once this many consumed bytes sit at its front.
_COMPACT_AT = 1 << 16


@dataclass(frozen=True, slots=True)
class FrameLimits:
    """What a received frame may hold: at most `max_frame` bytes, arrays and
    maps nested at most `max_depth` deep, at most `max_items` elements in any
    one of them (None: `max_frame`). A server may be stricter than the
    protocol (its `ServerConfig`).

    >>> FrameLimits(4096, max_items=64).max_depth
    12
    """

    max_frame: int = DEFAULT_MAX_FRAME
    max_depth: int = MAX_DEPTH
    max_items: int | None = None


def _refuse_ext(code: int, data: bytes) -> NoReturn:
    raise ValueError(f"ext type {code} is not allowed")


def pack(data: Mapping[str, Any]) -> bytes:
    """The msgpack payload for one map (str as str, bytes as bin)."""
    try:
        return msgpack.packb(data, use_bin_type=True)
    except (TypeError, ValueError, OverflowError) as e:
        raise LocalProtocolError(INVALID_FIELD, f"cannot encode: {e}") from None


def encode_frame(data: Mapping[str, Any], max_frame: int = DEFAULT_MAX_FRAME) -> bytes:
    """Header and payload for one map. Raises `LocalProtocolError`
    (``frame_too_large``) rather than produce a frame the peer must refuse."""
    payload = pack(data)
    check_size(data.get("type"), len(payload), max_frame)
    return HEADER.pack(len(payload)) + payload


def check_size(type_: object, size: int, max_frame: int) -> None:
    """Raise `LocalProtocolError` (``frame_too_large``) if the payload of a
    `type_` frame, `size` bytes, exceeds `max_frame`."""
    if size > max_frame:
        raise LocalProtocolError(
            FRAME_TOO_LARGE, f"a {type_!r} frame of {size} bytes exceeds {max_frame}"
        )


def _strict_map(pairs: list[tuple[Any, Any]]) -> dict[Any, Any]:
    mapping = dict(pairs)
    if len(mapping) != len(pairs):
        raise ValueError("a map has the same key twice")
    return mapping


_SCALARS = frozenset({type(None), bool, int, str, bytes})


def _not_used(kind: type) -> ValueError:
    return ValueError(f"{kind.__name__} values are not used in this protocol (no floats, no ext)")


def check_plain(value: object, max_depth: int = MAX_DEPTH) -> None:
    """Raise ``ValueError`` unless `value` is plain decoded data: nil, bool,
    int, str, bytes, lists and maps with str keys, at most `max_depth`
    containers deep. Walks level by level, never recursing."""
    level = [value]
    depth = 0
    while level:
        below: list[object] = []
        add = below.append
        for item in level:
            kind = type(item)
            if kind is dict:
                children: Any = item.values()  # type: ignore[attr-defined]
                for key in item:  # type: ignore[attr-defined]
                    if type(key) is not str:
                        raise ValueError("map keys must be strings")
            elif kind is list:
                children = item
            elif kind in _SCALARS:
                continue
            else:
                raise _not_used(kind)
            for child in children:
                child_kind = type(child)
                if child_kind is dict or child_kind is list:
                    add(child)
                elif child_kind not in _SCALARS:
                    raise _not_used(child_kind)
        if below:
            depth += 1
            if depth >= max_depth:
                raise ValueError(f"arrays and maps nest more than {max_depth} deep")
        level = below


def unpack_untrusted(
    data: bytes | bytearray | memoryview,
    *,
    max_str_len: int,
    max_bin_len: int,
    max_array_len: int,
    max_map_len: int,
    max_depth: int = MAX_DEPTH,
) -> Any:
    """Decode one msgpack value from someone we do not trust (frames and game
    records): text as str (``raw=False``), every length bounded, ext types
    refused (``max_ext_len=0`` also stops the timestamp type, which msgpack
    decodes without asking ``ext_hook``), a key twice in a map refused, then
    `check_plain`. Raises ``ValueError`` or ``msgpack.UnpackException``
    (nothing else); callers turn them into their own error.

    >>> unpack_untrusted(b"\\x82\\xa1a\\x01\\xa1a\\x02", max_str_len=9, max_bin_len=9,
    ...                  max_array_len=9, max_map_len=9)
    Traceback (most recent call last):
    ...
    ValueError: a map has the same key twice
    """
    value = msgpack.unpackb(
        data,
        raw=False,
        strict_map_key=True,
        use_list=True,
        ext_hook=_refuse_ext,
        object_pairs_hook=_strict_map,
        max_str_len=max_str_len,
        max_bin_len=max_bin_len,
        max_array_len=max_array_len,
        max_map_len=max_map_len,
        max_ext_len=0,
    )
    check_plain(value, max_depth)
    return value


def decode_payload(
    payload: bytes | bytearray,
    max_frame: int = DEFAULT_MAX_FRAME,
    *,
    max_depth: int = MAX_DEPTH,
    max_items: int | None = None,
) -> dict[str, Any]:
    """Decode one frame's payload into a map with string keys.

    Raises `RemoteProtocolError` with code ``malformed_frame`` for anything
    else: bad msgpack, trailing bytes, ext types, floats, invalid UTF-8, a
    value that is not a map, a key that is not a string or appears twice,
    nesting deeper than `max_depth`, or an array or map of more than
    `max_items` elements (default: `max_frame`).
    """
    items = max_frame if max_items is None else max_items
    try:
        value = unpack_untrusted(
            payload,
            max_str_len=max_frame,
            max_bin_len=max_frame,
            max_array_len=items,
            max_map_len=items,
            max_depth=max_depth,
        )
    except (ValueError, msgpack.UnpackException) as e:
        raise RemoteProtocolError(MALFORMED_FRAME, _why_undecodable(e)[:300]) from None
    if type(value) is not dict:
        raise RemoteProtocolError(
            MALFORMED_FRAME, f"a frame must hold one map, not {_msgpack_kind(value)}"
        )
    return value


_KINDS = {type(None): "nil", bool: "a bool", int: "an int", str: "a str", bytes: "a bin"}
_KINDS |= {list: "an array", dict: "a map", float: "a float"}


def _msgpack_kind(value: object) -> str:
    """`value`'s msgpack type, as docs/PROTOCOL.md names them."""
    return _KINDS.get(type(value), type(value).__name__)


def _why_undecodable(error: Exception) -> str:
    """What is wrong with a payload, in the protocol's words (not msgpack's)."""
    text = str(error)
    if isinstance(error, msgpack.ExtraData):
        return "bytes follow the map: a frame's payload is exactly one msgpack map"
    if isinstance(error, UnicodeDecodeError):
        return f"a str is not valid UTF-8 ({error.reason} at byte {error.start} of it)"
    if "strict_map_key" in text:
        return "a map key is not a str: every map key is a str"
    if "max_ext_len" in text or text.startswith("ext type"):
        return "an ext value: msgpack extension types are not used in this protocol"
    if "incomplete input" in text:
        return "not valid msgpack: the payload ends inside a value"
    if isinstance(error, ValueError) and not isinstance(error, msgpack.UnpackException):
        return text  # ours (`check_plain`, `_strict_map`): already in the protocol's words
    return f"not valid msgpack: {text}" if text else "not valid msgpack"


class FrameDecoder:
    """Bytes in, decoded frames out; see the module docstring.

    `feed` never fails; `next_frame` returns the next map, None when it needs
    more bytes, or raises `RemoteProtocolError` (and keeps raising it).
    """

    def __init__(
        self,
        max_frame: int = DEFAULT_MAX_FRAME,
        *,
        max_depth: int = MAX_DEPTH,
        max_items: int | None = None,
    ) -> None:
        if not 1 <= max_frame <= 2**32 - 1:
            raise ValueError(f"max_frame must be 1..{2**32 - 1}, not {max_frame}")
        self.max_frame = max_frame
        self.max_depth = max_depth
        self.max_items = max_items
        self._buf = bytearray()
        self._pos = 0
        self._eof = False
        self._error: RemoteProtocolError | None = None

    @property
    def buffered(self) -> int:
        """Bytes received and not yet handed out as frames."""
        return len(self._buf) - self._pos

    @property
    def at_eof(self) -> bool:
        """The peer closed and every complete frame has been handed out."""
        return self._eof and self.buffered == 0 and self._error is None

    @property
    def error(self) -> RemoteProtocolError | None:
        """The error this decoder failed with, if it did."""
        return self._error

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Add received bytes; ``b""`` means the peer closed the connection."""
        if self._error is not None:
            return
        if not data:
            self._eof = True
            return
        if self._eof:
            raise RuntimeError("bytes fed after end of file")
        self._buf += data
        if self.buffered >= HEADER_SIZE:
            # Refuse an oversized frame now, rather than hold its bytes.
            (length,) = HEADER.unpack_from(self._buf, self._pos)
            if length > self.max_frame:
                self._record(RemoteProtocolError(FRAME_TOO_LARGE, self._too_large(length)))

    def next_frame(self) -> dict[str, Any] | None:
        """The next decoded frame, or None until more bytes arrive."""
        if self._error is not None:
            raise self._error
        buf = self._buf
        pos = self._pos
        available = len(buf) - pos
        if available >= HEADER_SIZE:
            (length,) = HEADER.unpack_from(buf, pos)
            if length > self.max_frame:
                self._fail(RemoteProtocolError(FRAME_TOO_LARGE, self._too_large(length)))
            if length == 0:
                self._fail(
                    RemoteProtocolError(
                        MALFORMED_FRAME,
                        "a frame's payload length is 0 (it is at least 1)",
                        section="Transport and framing",
                    )
                )
            end = pos + HEADER_SIZE + length
            if end <= len(buf):
                payload = buf[pos + HEADER_SIZE : end]
                if end == len(buf):
                    buf.clear()
                    self._pos = 0
                elif end >= _COMPACT_AT:
                    del buf[:end]
                    self._pos = 0
                else:
                    self._pos = end
                try:
                    return decode_payload(
                        payload, self.max_frame, max_depth=self.max_depth, max_items=self.max_items
                    )
                except RemoteProtocolError as e:
                    self._fail(e)
        if self._eof and available:
            self._fail(RemoteProtocolError(MALFORMED_FRAME, "the connection closed inside a frame"))
        return None

    def _too_large(self, length: int) -> str:
        return f"a frame of {length} bytes exceeds the limit of {self.max_frame}"

    def fail(self, error: RemoteProtocolError) -> None:
        """Fail for good with `error` (a connection that gave up on its peer):
        drop the buffer, ignore further bytes, raise `error` from now on."""
        if self._error is None:
            self._record(error)

    def _record(self, error: RemoteProtocolError) -> None:
        self._error = error
        self._buf = bytearray()
        self._pos = 0

    def _fail(self, error: RemoteProtocolError) -> NoReturn:
        self._record(error)
        raise error

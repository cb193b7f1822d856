"""One push to many recipients, encoded once.

How this works
--------------
A change at a table goes to every seat and spectator, and a chat line to
every member of a room or the lobby, as copies of one push that differ only
in ``seq`` (each session numbers its own pushes) and, in a ``game_state``,
the view's ``viewer``. A msgpack map is a count of pairs and then its
key-value pairs, so the frame of the first copy is cut where those two
values go, and every copy's frame is the pieces between, encoded once, with
its own two values put back in:

    <map(9) "type" "game_state" "seq"> 17 <"game" bin(..) "view" map(24)
    ... "viewer"> 2 <"format" 1 ... "events" [..] ...>

A copy is recognised, not assumed: a message whose other fields (and view
entries) are not the very objects of the first message's is encoded on its
own. So a `SharedEncoding` may be handed any messages; it is only faster
for copies, and every frame it makes is, byte for byte, the one
`encode_frame` makes.

>>> from oriflamme.protocol import messages as m
>>> shared = SharedEncoding()
>>> line = dict(room=3, name="Ann", text="hello")
>>> copy = m.ChatMessage(seq=8, **line)
>>> shared.frame(m.ChatMessage(seq=7, **line)) != shared.frame(copy)
True
>>> shared.frame(copy) == encode_frame(m.to_data(copy))
True
"""

from __future__ import annotations

from typing import Any

import msgpack

from .codec import DEFAULT_MAX_FRAME, HEADER, encode_frame, pack
from .errors import FRAME_TOO_LARGE, LocalProtocolError
from .messages import Message, to_data

_ABSENT = object()


def _map_header(pairs: int) -> bytes:
    """The msgpack head of a map of `pairs` pairs (fixmap, map 16, map 32)."""
    if pairs < 16:
        return bytes((0x80 | pairs,))
    if pairs < 1 << 16:
        return b"\xde" + pairs.to_bytes(2, "big")
    return b"\xdf" + pairs.to_bytes(4, "big")


def _pairs(data: dict[str, Any]) -> bytes:
    """`data`'s pairs, encoded as in a map of them, without the map's head."""
    return pack(data)[len(_map_header(len(data))) :] if data else b""


class _Cutter:
    """The pieces of one encoded map, cut before each varying value."""

    def __init__(self) -> None:
        self.pieces: list[bytes] = []
        self._done: list[bytes] = []
        self._run: dict[str, Any] = {}

    def add(self, raw: bytes) -> None:
        """Bytes as they are, after the pairs so far."""
        self._flush()
        self._done.append(raw)

    def pair(self, key: str, value: Any) -> None:
        self._run[key] = value

    def cut(self, key: str) -> None:
        """`key` here; its value is each copy's own."""
        self._flush()
        self._done.append(msgpack.packb(key))
        self.pieces.append(b"".join(self._done))
        self._done = []

    def end(self) -> list[bytes]:
        self._flush()
        self.pieces.append(b"".join(self._done))
        return self.pieces

    def _flush(self) -> None:
        if self._run:
            self._done.append(_pairs(self._run))
            self._run = {}


class SharedEncoding:
    """The frames of copies of one push; see the module docstring."""

    __slots__ = ("_first", "_fields", "_view", "_pieces")

    def __init__(self) -> None:
        self._first: Message | None = None

    def frame(self, message: Message, max_frame: int = DEFAULT_MAX_FRAME) -> bytes:
        """The frame of `message` (header and payload), as `encode_frame`
        makes it; raises `LocalProtocolError` (``frame_too_large``) alike."""
        if getattr(message, "seq", None) is None:  # not a push: nothing varies
            return encode_frame(to_data(message), max_frame)
        if self._first is None:
            self._split(message)
        elif not self._copy(message):
            return encode_frame(to_data(message), max_frame)
        pieces = self._pieces
        parts = [pieces[0], msgpack.packb(message.seq), pieces[1]]  # type: ignore[attr-defined]
        if self._view is not None:
            parts += [msgpack.packb(message.view["viewer"]), pieces[2]]  # type: ignore[attr-defined]
        payload = b"".join(parts)
        if len(payload) > max_frame:
            raise LocalProtocolError(
                FRAME_TOO_LARGE,
                f"a {message.TYPE!r} frame of {len(payload)} bytes exceeds {max_frame}",
            )
        return HEADER.pack(len(payload)) + payload

    def _split(self, message: Message) -> None:
        """Encode what copies of `message` share, once."""
        self._first = message
        view = getattr(message, "view", None)
        self._view = view if type(view) is dict and "viewer" in view else None
        cutter = _Cutter()
        data = to_data(message)
        cutter.add(_map_header(len(data)))
        for key, value in data.items():
            if key == "seq":
                cutter.cut(key)
            elif key == "view" and self._view is not None:
                cutter.add(msgpack.packb(key) + _map_header(len(value)))
                for view_key, view_value in value.items():
                    if view_key == "viewer":
                        cutter.cut(view_key)
                    else:
                        cutter.pair(view_key, view_value)
            else:
                cutter.pair(key, value)
        self._pieces = cutter.end()
        if len(self._pieces) != 3:  # (a view without a viewer after all)
            self._view = None
        varying = ("seq", "view") if self._view is not None else ("seq",)
        self._fields = [
            (spec.name, getattr(message, spec.name))
            for spec in message.FIELDS
            if spec.name not in varying
        ]

    def _copy(self, message: Message) -> bool:
        """Whether `message` differs from the first only where copies may."""
        if type(message) is not type(self._first):
            return False
        for name, value in self._fields:
            if getattr(message, name) is not value:
                return False
        first_view = self._view
        if first_view is None:
            return True
        view = message.view  # type: ignore[attr-defined]
        if type(view) is not dict or len(view) != len(first_view) or "viewer" not in view:
            return False
        for key, value in first_view.items():
            if key != "viewer" and view.get(key, _ABSENT) is not value:
                return False
        return True

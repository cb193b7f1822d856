"""One push to many recipients, encoded once.

How this works
--------------
A change at a table goes to every seat and spectator, and a chat line to
every member of a room or the lobby, as copies of one push that differ only
in ``seq`` (each session numbers its own pushes) and, in a ``game_state``,
the view's ``viewer``. A msgpack map is a count of pairs and then its
key-value pairs, so the first copy is encoded with markers (two 64-bit
integers) in place of those two values and cut where the markers are; every
copy's frame is then the pieces between, encoded once, with its own two
values put back in:

    <map(9) "type" "game_state" "seq"> 17 <"game" bin(..) "view" map(24)
    ... "viewer"> 2 <"format" 1 ... "events" [..] ...>

A copy is recognised, not assumed: a message whose other fields (and view
entries) are not the very objects of the first message's is encoded on its
own, and so is every copy if the markers' bytes turn up among the data
(in a hash, say). So a `SharedEncoding` may be handed any messages; it is
only faster for copies, and every frame it makes is, byte for byte, the one
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

import msgpack

from .codec import DEFAULT_MAX_FRAME, HEADER, check_size, encode_frame, pack
from .messages import Message, to_data

_ABSENT = object()


# Stand-ins for the varying values while the first copy is encoded: 64-bit
# integers (msgpack uint 64: 0xcf and 8 bytes), where the frame is then cut.
_MARKERS = (0x0F1F_1A33_E5E9_0001, 0x0F1F_1A33_E5E9_0002)
_MARKED = tuple(msgpack.packb(marker) for marker in _MARKERS)


class SharedEncoding:
    """The frames of copies of one push; see the module docstring."""

    __slots__ = ("_first", "_fields", "_view", "_pieces")

    def __init__(self) -> None:
        self._first: Message | None = None
        self._pieces: list[bytes] | None = None

    def frame(self, message: Message, max_frame: int = DEFAULT_MAX_FRAME) -> bytes:
        """The frame of `message` (header and payload), as `encode_frame`
        makes it; raises `LocalProtocolError` (``frame_too_large``) alike."""
        if getattr(message, "seq", None) is None:  # not a push: nothing varies
            return encode_frame(to_data(message), max_frame)
        if self._first is None:
            self._split(message)
        pieces = self._pieces
        if pieces is None or not self._copy(message):
            return encode_frame(to_data(message), max_frame)
        parts = [pieces[0], msgpack.packb(message.seq), pieces[1]]  # type: ignore[attr-defined]
        if self._view is not None:
            parts += [msgpack.packb(message.view["viewer"]), pieces[2]]  # type: ignore[attr-defined]
        payload = b"".join(parts)
        check_size(message.TYPE, len(payload), max_frame)
        return HEADER.pack(len(payload)) + payload

    def _split(self, message: Message) -> None:
        """Encode what copies of `message` share, once: encoded with markers
        in place of its varying values, and cut where they are."""
        self._first = message
        view = getattr(message, "view", None)
        self._view = view if type(view) is dict and "viewer" in view else None
        data = to_data(message)
        data["seq"] = _MARKERS[0]
        if self._view is not None:
            data["view"] = {**data["view"], "viewer": _MARKERS[1]}
        payload = pack(data)
        pieces: list[bytes] = []
        start = 0
        for marked in _MARKED[: 1 if self._view is None else 2]:
            at = payload.find(marked, start)
            if at < 0 or payload.find(marked, at + 1) >= 0:  # (a marker's bytes among the data)
                return  # no pieces: every copy is encoded on its own
            pieces.append(payload[start:at])
            start = at + len(marked)
        pieces.append(payload[start:])
        self._pieces = pieces
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

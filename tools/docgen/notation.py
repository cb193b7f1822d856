"""The document's notation of msgpack data, and hex dumps of frames."""

from __future__ import annotations

import json
from typing import Any


def notation(value: Any, width: int = 96, _indent: int = 0, _start: int = 0) -> str:
    """msgpack data in the document's JSON-like notation: bin as ``bin(hex)``,
    nil as ``nil``; a map or array longer than `width` gets one item a line.

    >>> notation({"type": "ping", "id": 1, "x": b"\\x01\\xff", "y": None})
    '{"type": "ping", "id": 1, "x": bin(01ff), "y": nil}'
    """
    flat = _flat(value)
    fits = max(_indent, _start) + len(flat) <= width
    if fits or not isinstance(value, dict | list | tuple) or not value:
        return flat
    pad = " " * (_indent + 2)
    if isinstance(value, dict):
        items = []
        for key, item in value.items():
            head = f"{pad}{json.dumps(key, ensure_ascii=False)}: "
            items.append(head + notation(item, width, _indent + 2, len(head)))
        body = ",\n".join(items)
    else:
        body = ",\n".join(pad + notation(item, width, _indent + 2) for item in value)
    opening, closing = ("{", "}") if isinstance(value, dict) else ("[", "]")
    return opening + "\n" + body + "\n" + " " * _indent + closing


def _flat(value: Any) -> str:
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes):
        return f"bin({value.hex()})"
    if isinstance(value, dict):
        return (
            "{"
            + ", ".join(
                f"{json.dumps(k, ensure_ascii=False)}: {_flat(v)}" for k, v in value.items()
            )
            + "}"
        )
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_flat(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def hex_dump(data: bytes) -> str:
    """Sixteen bytes a line, offset first, ASCII on the right.

    >>> print(hex_dump(b"\\x00\\x00\\x00\\x02\\x80\\xc0"))
    0000  00 00 00 02 80 c0                                ......
    """
    lines = []
    for offset in range(0, len(data), 16):
        chunk = data[offset : offset + 16]
        hexes = " ".join(f"{b:02x}" for b in chunk)
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{offset:04x}  {hexes:<47}  {text}")
    return "\n".join(lines)

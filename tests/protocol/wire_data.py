"""Building msgpack bytes by hand, for what `msgpack.packb` will not make:
a key twice in a map, nesting past its own recursion limit, a value spliced
anywhere inside a message; and walking the positions of plain data."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgpack

MARKER = "\u2603 splice here \u2603"


def packed(value: Any) -> bytes:
    """`value` as the reference encoder sends it (str as str, bytes as bin)."""
    return msgpack.packb(value, use_bin_type=True)


def frame_of(payload: bytes) -> bytes:
    """A frame around `payload`, whatever it holds."""
    return len(payload).to_bytes(4, "big") + payload


def map_header(n: int) -> bytes:
    if n < 16:
        return bytes([0x80 | n])
    if n < 2**16:
        return b"\xde" + n.to_bytes(2, "big")
    return b"\xdf" + n.to_bytes(4, "big")


def map_of(pairs: list[tuple[bytes, bytes]]) -> bytes:
    """A msgpack map of already encoded keys and values, in this order,
    repeats included."""
    return map_header(len(pairs)) + b"".join(k + v for k, v in pairs)


def map_with_pairs(pairs: list[tuple[Any, Any]]) -> bytes:
    """A msgpack map of these (key, value) pairs, repeats included."""
    return map_of([(packed(k), packed(v)) for k, v in pairs])


def nested_arrays(depth: int, leaf: Any = 1) -> bytes:
    """`depth` arrays, each holding the next, around `leaf`."""
    return b"\x91" * depth + packed(leaf)


def nested_maps(depth: int, leaf: Any = 1) -> bytes:
    """`depth` maps ``{"a": ...}``, each holding the next, around `leaf`."""
    return b"\x81\xa1a" * depth + packed(leaf)


def positions(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The path (keys and indexes) of every value inside `value`, `value` excluded."""
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, item in items:
        yield (*path, key)
        if isinstance(item, dict | list) and item:
            yield from positions(item, (*path, key))


def replaced(data: Any, path: tuple[Any, ...], value: Any) -> None:
    """Put `value` at `path` inside `data` (in place)."""
    for key in path[:-1]:
        data = data[key]
    data[path[-1]] = value


def spliced(data: Any, path: tuple[Any, ...], raw: bytes) -> bytes:
    """The msgpack encoding of `data` (which this changes) with the encoded
    value `raw` at `path`, whatever `raw` holds."""
    replaced(data, path, MARKER)
    payload = packed(data)
    marker = packed(MARKER)
    assert payload.count(marker) == 1
    return payload.replace(marker, raw)

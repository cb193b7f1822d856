"""The machine-readable catalog of protocol v1, and the generated parts of the document.

How this works
--------------
Everything here is derived from the code: the message and structure classes
of `messages` (their field specs and docstrings), the error catalog of
`errors`, one example per message from `examples`, and the engine's event
types. From that one source it builds:

* `build_catalog()`: the JSON catalog, committed as docs/protocol-v1.json;
* `blocks()`: the generated parts of docs/PROTOCOL.md (a field table per
  message and structure, the error code table, the event table), each
  between ``<!-- generated: NAME -->`` and ``<!-- end generated -->``.

Everything outside the markers is written by hand and left alone.

    python -m oriflamme.protocol.catalog            # write docs/protocol-v1.json, update the doc's blocks
    python -m oriflamme.protocol.catalog --check    # exit 1 if either is out of date

Run it from the repository root (or pass ``--json`` and ``--doc``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from oriflamme.engine.events import EVENT_TYPES

from . import messages as m
from . import transcript
from .codec import DEFAULT_MAX_FRAME, HEADER_SIZE, encode_frame
from .errors import CODES
from .examples import examples
from .fields import FieldSpec, WireValue

BEGIN = "<!-- generated: {} -->"
END = "<!-- end generated -->"
_BLOCK = re.compile(
    r"<!-- generated: (?P<name>[a-z0-9_:]+) -->\n(?P<body>.*?)<!-- end generated -->", re.S
)

ARROW = {"client": "client → server", "server": "server → client"}

# What each engine event and its fields mean (docs/ENGINE.md has the same in
# prose). A test checks these cover exactly the engine's event fields.
EVENT_DOCS: dict[str, tuple[str, dict[str, str]]] = {
    "direction_chosen": (
        "The first player chose the resolution direction.",
        {"seat": "who chose", "direction": "`left-to-right` or `right-to-left`"},
    ),
    "round_started": (
        "A round begins (before its first placement).",
        {"round": "1..6", "first_player": "the seat that places first this round"},
    ),
    "placed": (
        "A card was placed face down. `card` is a back (`[family, null]`) unless you may know it.",
        {
            "seat": "who placed it",
            "pid": "its placement id",
            "card": "the card, or its back",
            "at": "as in the action: `first`, `last`, or the pid covered",
            "slot": "the index of the slot it went to (resolution order)",
        },
    ),
    "placement_skipped": (
        "The server skipped a seat's placement (its player timed out or left): that placement is not made, and the seat keeps its cards.",
        {"seat": "the seat whose placement was skipped"},
    ),
    "kept": (
        "A face-down card was kept hidden and gained a token.",
        {"seat": "its owner", "pid": "the card", "tokens": "tokens now on it"},
    ),
    "revealed": (
        "A card was revealed by its owner.",
        {
            "seat": "its owner",
            "pid": "the card",
            "card": "its identity",
            "tokens": "tokens that were on it",
        },
    ),
    "ability_used": (
        "A card applied its ability (a Shapeshifter's copy names the copied ability).",
        {
            "seat": "the card's owner",
            "pid": "the card",
            "ability": "the ability applied (a kind name)",
            "target": "the pid chosen, or null",
        },
    ),
    "no_effect": (
        "A card's ability had no legal option and did nothing.",
        {"seat": "the card's owner", "pid": "the card", "ability": "the ability (a kind name)"},
    ),
    "eliminated": (
        "A card was eliminated: face up in front of its owner, its tokens to the supply.",
        {
            "pid": "the card",
            "card": "its identity",
            "owner": "its owner",
            "by": "the pid of the eliminating card",
            "by_seat": "that card's owner",
            "tokens": "tokens that were on it",
        },
    ),
    "discarded": (
        "A card left the queue without scoring: an Intrigue after use, or an Ambush's attacker.",
        {
            "pid": "the card",
            "card": "its identity",
            "owner": "its owner",
            "reason": "`used` or `ambush`",
            "tokens": "tokens that were on it",
        },
    ),
    "moved": (
        "A Royal Decree moved a card.",
        {"pid": "the moved card", "to": "its new queue index (resolution order)"},
    ),
    "uncovered": (
        "A covered card is the top of its slot again.",
        {"pid": "the card", "face_up": "whether it is face up"},
    ),
    "scored": (
        "A seat gained points.",
        {
            "seat": "who",
            "points": "how many",
            "reason": "`tokens`, `conspiracy`, `eliminate`, `ambush`, `heir` or `lord`",
        },
    ),
    "stolen": (
        "A Spy stole a point.",
        {"seat": "the Spy's owner", "victim": "the seat stolen from", "points": "0 or 1"},
    ),
    "drew": (
        "Two-player variant: a seat drew cards (backs for the other seat).",
        {"seat": "who drew", "cards": "the cards drawn, or their backs"},
    ),
    "round_ended": ("A round's resolution is over.", {"round": "the round that ended"}),
    "game_ended": (
        "The game is over (before the final reveal).",
        {"scores": "per seat", "winners": "the winning seats"},
    ),
}


# ------------------------------------------------------------------ catalog

# The field types of the JSON catalog ("type" of a field), as msgpack sees them.
TYPE_DOCS: dict[str, str] = {
    "uint": "a msgpack integer, never negative, within min..max (never a float, never a boolean)",
    "bool": "msgpack true or false",
    "text": "a msgpack str of min_length..max_length Unicode code points, without control characters (U+0000-U+001F, U+007F-U+009F)",
    "token": "a msgpack str matching the pattern, at most max_length characters",
    "enum": "a msgpack str, one of values",
    "bin": "msgpack bin (never str) of exactly length bytes",
    "card": 'an array [family, kind] of two str: a family name and a kind name (never nil here), e.g. ["red", "soldier"]',
    "at": 'the str "first" or "last", or a uint (a pid)',
    "list": "a msgpack array of min_items..max_items items, each as described by items",
    "struct": "a msgpack map described by the structure of that name (see structures)",
    "map": "a msgpack map with str keys, plain data described in docs/PROTOCOL.md (engine views, events, actions)",
}


def _fields_json(specs: Sequence[FieldSpec]) -> list[dict[str, Any]]:
    return [
        {"name": s.name, "required": s.required, **s.kind.describe(), "doc": s.doc} for s in specs
    ]


def _doc(cls: type) -> str:
    """A class docstring as one paragraph."""
    return " ".join((cls.__doc__ or "").split())


def all_messages() -> list[type[m.Message]]:
    """Every message class: client messages, then server messages, in declaration order."""
    return [*m.CLIENT_MESSAGES.values(), *m.SERVER_MESSAGES.values()]


def check_event_docs() -> None:
    """Fail clearly when the engine's events and `EVENT_DOCS` disagree."""
    for name, cls in EVENT_TYPES.items():
        if name not in EVENT_DOCS or set(EVENT_DOCS[name][1]) != set(cls._fields):
            raise ValueError(
                f"engine event {name!r} {cls._fields} needs its entry in catalog.EVENT_DOCS"
            )


def build_catalog() -> dict[str, Any]:
    """The JSON catalog (docs/protocol-v1.json)."""
    check_event_docs()
    ex = examples()
    return {
        "protocol": "oriflamme",
        "version": m.PROTOCOL_VERSION,
        "framing": {
            "transport": "TCP, optionally TLS",
            "header": f"{HEADER_SIZE}-byte big-endian unsigned payload length",
            "payload": "one msgpack map with string keys",
            "max_payload": DEFAULT_MAX_FRAME,
            "ext_types": "refused",
        },
        "types": TYPE_DOCS,
        "messages": [
            {
                "type": cls.TYPE,
                "sender": cls.SENDER,
                "role": cls.ROLE,
                **({"reply": cls.REPLY} if cls.REPLY else {}),
                "doc": _doc(cls),
                "fields": _fields_json(cls.FIELDS),
                "example_frame": encode_frame(m.to_data(ex[cls.TYPE])).hex(),
            }
            for cls in all_messages()
        ],
        "structures": [
            {"name": cls.WIRE_NAME, "doc": _doc(cls), "fields": _fields_json(cls.FIELDS)}
            for cls in m.STRUCTS
        ],
        "errors": [
            {"code": e.code, "keeps_open": e.keeps_open, "fault": e.fault, "meaning": e.meaning}
            for e in CODES.values()
        ],
        "events": [
            {"type": name, "doc": EVENT_DOCS[name][0], "fields": list(cls._fields)}
            for name, cls in EVENT_TYPES.items()
        ],
    }


def catalog_json() -> str:
    return json.dumps(build_catalog(), indent=2, ensure_ascii=False) + "\n"


# ------------------------------------------------------------------ notation


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


# ------------------------------------------------------------------ document blocks


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _table(specs: Sequence[FieldSpec]) -> str:
    rows = ["| field | type | presence | meaning |", "| --- | --- | --- | --- |"]
    for s in specs:
        presence = "required" if s.required else "optional"
        rows.append(f"| `{s.name}` | {s.kind.notation()} | {presence} | {_cell(s.doc)} |")
    return "\n".join(rows)


def message_block(cls: type[m.Message]) -> str:
    role = {"request": "request", "reply": "reply", "push": "push"}[cls.ROLE]
    answered = f", answered by `{cls.REPLY}` or `error`" if cls.REPLY else ""
    example = notation(m.to_data(examples()[cls.TYPE]))
    fields = _table(cls.FIELDS) if cls.FIELDS else "No fields besides `type`."
    return (
        f"#### `{cls.TYPE}`\n\n"
        f"*{ARROW[cls.SENDER]}, {role}{answered}.* {_doc(cls)}\n\n"
        f"{fields}\n\n"
        f"```\n{example}\n```\n"
    )


def struct_block(cls: type[WireValue]) -> str:
    return f"#### Structure `{cls.WIRE_NAME}`\n\n{_doc(cls)} A map:\n\n{_table(cls.FIELDS)}\n"


def errors_block() -> str:
    rows = ["| code | connection | fault | when |", "| --- | --- | --- | --- |"]
    for e in CODES.values():
        conn = "stays open" if e.keeps_open else "**closed**"
        rows.append(f"| `{e.code}` | {conn} | {e.fault} | {_cell(e.meaning)} |")
    return "\n".join(rows) + "\n"


def events_block() -> str:
    rows = ["| `type` | fields | meaning |", "| --- | --- | --- |"]
    for name, cls in EVENT_TYPES.items():
        if name not in EVENT_DOCS or set(EVENT_DOCS[name][1]) != set(cls._fields):
            raise ValueError(
                f"engine event {name!r} {cls._fields} needs its entry in catalog.EVENT_DOCS"
            )
        doc, fields = EVENT_DOCS[name]
        listed = "; ".join(f"`{f}`: {fields[f]}" for f in cls._fields)
        rows.append(f"| `{name}` | {_cell(listed)} | {_cell(doc)} |")
    return "\n".join(rows) + "\n"


def frame_example_block() -> str:
    ping = examples()["ping"]
    frame = encode_frame(m.to_data(ping))
    return (
        f"```\n{notation(m.to_data(ping))}\n```\n\n"
        f"is sent as these {len(frame)} bytes (the 4-byte length {len(frame) - HEADER_SIZE}, then the map):\n\n"
        f"```\n{hex_dump(frame)}\n```\n"
    )


def blocks() -> dict[str, str]:
    """Every generated block of docs/PROTOCOL.md, by name."""
    out = {f"message:{cls.TYPE}": message_block(cls) for cls in all_messages()}
    out.update({f"struct:{cls.WIRE_NAME}": struct_block(cls) for cls in m.STRUCTS})
    out["errors"] = errors_block()
    out["events"] = events_block()
    out["frame_example"] = frame_example_block()
    out["worked_example"] = transcript.render()
    return out


def update_doc(text: str) -> tuple[str, list[str]]:
    """`text` with every generated block brought up to date, and the names of
    blocks the code has but the document lacks (to be placed by hand)."""
    wanted = blocks()
    seen: set[str] = set()

    def replace(match: re.Match[str]) -> str:
        name = match.group("name")
        seen.add(name)
        body = wanted.get(name)
        if body is None:
            return match.group(0)  # reported by check_doc
        return BEGIN.format(name) + "\n" + body + END

    return _BLOCK.sub(replace, text), [name for name in wanted if name not in seen]


def check_doc(text: str) -> list[str]:
    """Problems with the document's generated blocks: missing, stale, unknown, repeated."""
    wanted = blocks()
    problems = []
    counts: dict[str, int] = {}
    for match in _BLOCK.finditer(text):
        name = match.group("name")
        counts[name] = counts.get(name, 0) + 1
        if name not in wanted:
            problems.append(f"block {name!r} names nothing in the code")
        elif match.group("body") != wanted[name]:
            problems.append(f"block {name!r} is out of date")
    problems += [f"block {name!r} appears {n} times" for name, n in counts.items() if n > 1]
    problems += [f"block {name!r} is missing" for name in wanted if name not in counts]
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m oriflamme.protocol.catalog", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--json", default="docs/protocol-v1.json", help="the JSON catalog to write or check"
    )
    parser.add_argument(
        "--doc",
        default="docs/PROTOCOL.md",
        help="the document whose generated blocks to update or check",
    )
    parser.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 if anything is out of date"
    )
    args = parser.parse_args(argv)
    json_path, doc_path = Path(args.json), Path(args.doc)
    text = doc_path.read_text(encoding="utf-8")
    if args.check:
        problems = check_doc(text)
        if not json_path.exists() or json_path.read_text(encoding="utf-8") != catalog_json():
            problems.append(f"{json_path} is out of date")
        for problem in problems:
            print(problem, file=sys.stderr)
        if problems:
            print("run: python -m oriflamme.protocol.catalog", file=sys.stderr)
        return 1 if problems else 0
    json_path.write_text(catalog_json(), encoding="utf-8")
    updated, missing = update_doc(text)
    if updated != text:
        doc_path.write_text(updated, encoding="utf-8")
    print(f"wrote {json_path}; {doc_path}: {'updated' if updated != text else 'up to date'}")
    for name in missing:
        print(
            f"{doc_path} has no block {name!r}: add '{BEGIN.format(name)}' + '{END}' where it belongs",
            file=sys.stderr,
        )
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())

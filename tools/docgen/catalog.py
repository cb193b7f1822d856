"""The machine-readable catalogs of the protocol's versions, and the generated parts of docs/PROTOCOL.md.

How this works
--------------
Everything here is derived from the code: the message and structure classes
of `messages` (their field specs and docstrings), the error catalog of
`errors`, one example per message from `examples`, and the engine's event
types. From that one source it builds:

* `build_catalog(version)`: the JSON catalog of a version, committed as
  docs/protocol-v1.json and docs/protocol-v2.json;
* `blocks()`: the generated parts of docs/PROTOCOL.md (a field table per
  message and structure, the error code table, the event table), each
  between ``<!-- generated: NAME -->`` and ``<!-- end generated -->``.

Everything outside the markers is written by hand and left alone.
``python -m tools.docgen`` writes them (see `tools.docgen`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from oriflamme.engine.events import EVENT_TYPES
from oriflamme.protocol import messages as m
from oriflamme.protocol.codec import DEFAULT_MAX_FRAME, HEADER_SIZE, MAX_DEPTH, encode_frame
from oriflamme.protocol.errors import CODES
from oriflamme.protocol.schema import FieldSpec, StructSpec

from . import worked_example
from .examples import examples
from .markers import check_blocks, update_blocks
from .notation import hex_dump, notation

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
        "A card was placed face down. `card` is its back (`[family, null]`): the server knows no hidden card, not even yours.",
        {
            "seat": "who placed it",
            "pid": "its placement id",
            "card": "its back",
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
        "Two-player variant: a seat drew cards from its draw pile into its hand (at the end of rounds 1 to 4).",
        {
            "seat": "who drew",
            "cards": "their backs: the server knows no hidden card (only their number and families matter)",
        },
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
    "int": "a msgpack integer, which may be negative, within min..max (never a float, never a boolean)",
    "bool": "msgpack true or false",
    "text": "a msgpack str of min_length..max_length Unicode code points, without control characters (U+0000-U+001F, U+007F-U+009F)",
    "token": "a msgpack str matching the pattern, at most max_length characters",
    "enum": "a msgpack str, one of values",
    "bin": "msgpack bin (never str) of exactly length bytes",
    "card": 'an array [family, kind] of two str: a family name and a kind name (never nil here), e.g. ["red", "soldier"]',
    "at": 'the str "first" or "last", or a uint (a pid)',
    "list": "a msgpack array of min_items..max_items items, each as described by items",
    "struct": "a msgpack map described by the structure named by `structure` (see structures)",
    "map": "a msgpack map with str keys, plain data described in docs/PROTOCOL.md (engine views, events, actions)",
}


# What the catalog's own keys mean (for a program that reads it).
KEY_DOCS: dict[str, str] = {
    "protocol": "the protocol's name: oriflamme",
    "version": "the protocol version this catalog describes",
    "framing": "how a frame is made: transport, header, payload, limits (max_payload in"
    " bytes, max_depth of nested arrays and maps), what is refused",
    "keys": "this table: what each key of the catalog means",
    "types": "the field types, by the name fields give in their `type`",
    "messages": "every message type, client messages first",
    "messages[].type": "the message's `type` string on the wire",
    "messages[].sender": "who sends it: `client` or `server`",
    "messages[].role": "`request` (a client message; exactly one answer comes back),"
    " `reply` (a server's answer to a request, echoing its `id`), or `push` (a server"
    " message nobody asked for, numbered by `seq`)",
    "messages[].reply": "for a request: the message type that answers it when it succeeds"
    " (an `error` answers it otherwise)",
    "messages[].doc": "what the message is for",
    "messages[].fields": "its fields, in the order the reference implementation writes them",
    "messages[].example_frame": "one complete frame of the message (4-byte length, then the"
    " msgpack map), in hex: the example of docs/PROTOCOL.md",
    "fields[].name": "the key in the msgpack map",
    "fields[].required": "true: present and not nil; false: may be left out (nil means the same)",
    "fields[].type": "the field's type, described under `types`, with that type's own bounds"
    " (min, max, length, min_length, max_length, values, items, structure...)",
    "fields[].doc": "what the field means",
    "structures": "the maps nested in messages",
    "structures[].name": "the structure's name, which a field's `structure` gives",
    "structures[].doc": "what it is",
    "structures[].fields": "its fields, described as a message's",
    "errors": "the error code catalog",
    "errors[].code": "the `code` of the `error` message",
    "errors[].keeps_open": "false: the server closes the connection right after sending it",
    "errors[].fault": "`remote`: the receiver (the client) caused it; `local`: the sender (the"
    " server) did",
    "errors[].meaning": "when it is sent",
    "errors[].section": "the heading of docs/PROTOCOL.md that says more (every error's"
    " message ends with it; an `invalid_field` points to its message's own heading)",
    "events": "the engine's event types that `game_state.events` carries",
    "events[].type": "the event's `type` string",
    "events[].doc": "what happened",
    "events[].fields": "the event's other keys (docs/PROTOCOL.md, Events, says what each means)",
}


def _fields_json(specs: Sequence[FieldSpec]) -> list[dict[str, Any]]:
    return [
        {"name": s.name, "required": s.required, **s.wire_type.describe(), "doc": s.doc}
        for s in specs
    ]


def _doc(cls: type) -> str:
    """A class docstring as one paragraph."""
    return " ".join((cls.__doc__ or "").split())


def all_messages(version: int | None = None) -> list[type[m.Message]]:
    """Every message class (of `version`; None: of any): client messages,
    then server messages, in declaration order."""
    return [
        cls
        for cls in (*m.CLIENT_MESSAGES.values(), *m.SERVER_MESSAGES.values())
        if version is None or version in cls.VERSIONS
    ]


def check_event_docs() -> None:
    """Fail clearly when the engine's events and `EVENT_DOCS` disagree."""
    for name, cls in EVENT_TYPES.items():
        if name not in EVENT_DOCS or set(EVENT_DOCS[name][1]) != set(cls._fields):
            raise ValueError(
                f"engine event {name!r} {cls._fields} needs its entry in catalog.EVENT_DOCS"
            )


def build_catalog(version: int) -> dict[str, Any]:
    """The JSON catalog of protocol `version` (docs/protocol-v1.json, -v2.json)."""
    check_event_docs()
    ex = examples()
    return {
        "protocol": "oriflamme",
        "version": version,
        "framing": {
            "transport": "TCP, optionally TLS",
            "header": f"{HEADER_SIZE}-byte big-endian unsigned payload length",
            "payload": "one msgpack map with string keys",
            "max_payload": DEFAULT_MAX_FRAME,
            "max_depth": MAX_DEPTH,
            "ext_types": "refused",
            "floats": "refused",
            "map_keys": "str, each at most once per map",
        },
        "keys": KEY_DOCS,
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
            for cls in all_messages(version)
        ],
        "structures": [
            {"name": spec.name, "doc": spec.doc, "fields": _fields_json(spec.fields)}
            for spec in m.STRUCTS
            if version in m.STRUCT_VERSIONS.get(spec.name, m.SUPPORTED_VERSIONS)
        ],
        "errors": [
            {
                "code": e.code,
                "keeps_open": e.keeps_open,
                "fault": e.fault,
                "meaning": e.meaning,
                "section": e.section,
            }
            for e in CODES.values()
        ],
        "events": [
            {"type": name, "doc": EVENT_DOCS[name][0], "fields": list(cls._fields)}
            for name, cls in EVENT_TYPES.items()
        ],
    }


def catalog_json(version: int) -> str:
    return json.dumps(build_catalog(version), indent=2, ensure_ascii=False) + "\n"


# ------------------------------------------------------------------ document blocks


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _table(specs: Sequence[FieldSpec]) -> str:
    rows = ["| field | type | presence | meaning |", "| --- | --- | --- | --- |"]
    for s in specs:
        presence = "required" if s.required else "optional"
        rows.append(f"| `{s.name}` | {s.wire_type.notation()} | {presence} | {_cell(s.doc)} |")
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


def struct_block(spec: StructSpec) -> str:
    return f"#### Structure `{spec.name}`\n\n{spec.doc} A map:\n\n{_table(spec.fields)}\n"


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
    out.update({f"struct:{spec.name}": struct_block(spec) for spec in m.STRUCTS})
    out["errors"] = errors_block()
    out["events"] = events_block()
    out["frame_example"] = frame_example_block()
    out["worked_example"] = worked_example.render()
    out["worked_example_v2"] = worked_example.render_v2()
    return out


def update_doc(text: str) -> tuple[str, list[str]]:
    """`text` with every generated block brought up to date, and the names of
    blocks the code has but the document lacks (to be placed by hand)."""
    return update_blocks(text, blocks())


def check_doc(text: str) -> list[str]:
    """Problems with the document's generated blocks: missing, stale, unknown, repeated."""
    return check_blocks(text, blocks())

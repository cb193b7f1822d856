"""Messages: every one round-trips; every kind of bad field is refused with its code."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from oriflamme.engine import card
from oriflamme.protocol import messages as m
from oriflamme.protocol.codec import FrameDecoder, encode_frame
from oriflamme.protocol.commitments import Opening
from oriflamme.protocol.errors import (
    CODES,
    INVALID_FIELD,
    UNKNOWN_MESSAGE,
    LocalProtocolError,
    ProtocolError,
    RemoteProtocolError,
)
from oriflamme.protocol.record import SeatVerdict
from oriflamme.protocol.schema import (
    Bin,
    Bool,
    FieldSpec,
    KnownCard,
    ListOf,
    OneOf,
    PlaceAt,
    PlainMap,
    StructOf,
    Text,
    Token,
    UInt,
)
from tests.protocol.wire_data import positions, replaced
from tools.docgen.examples import examples

EXAMPLES = examples()
ALL = {**m.CLIENT_MESSAGES, **m.SERVER_MESSAGES}


def test_every_message_has_an_example_and_the_two_sides_do_not_overlap() -> None:
    assert set(EXAMPLES) == set(ALL)
    assert not set(m.CLIENT_MESSAGES) & set(m.SERVER_MESSAGES)
    for cls in m.CLIENT_MESSAGES.values():
        assert cls.ROLE == "request" and cls.REPLY in m.SERVER_MESSAGES
        assert "id" in {f.name for f in cls.FIELDS}
    for cls in m.SERVER_MESSAGES.values():
        names = {f.name for f in cls.FIELDS}
        assert ("seq" in names) == (cls.ROLE == "push")
        assert ("id" in names) == (cls.ROLE == "reply")


@pytest.mark.parametrize("type_", sorted(ALL))
def test_every_message_round_trips(type_: str) -> None:
    message = EXAMPLES[type_]
    decoder = FrameDecoder()
    decoder.feed(encode_frame(m.to_data(message)))
    data = decoder.next_frame()
    assert data is not None
    again = m.from_data(data, message.SENDER)
    assert again == message and type(again) is type(message)
    assert m.to_data(again) == m.to_data(message)


INVITE = "KQ7M-P2XD"
# Optional fields of which exactly one must be present, with a value for each.
ONE_OF: dict[str, dict[str, Any]] = {
    "join_room": {"room": 12, "invite": INVITE},
    "spectate": {"room": 12, "invite": INVITE},
}


def one_of_cases() -> Iterator[Any]:
    for type_ in sorted(ALL):
        for kept in ONE_OF.get(type_, {None: None}):
            yield pytest.param(type_, kept, id=f"{type_}-{kept}" if kept else type_)


@pytest.mark.parametrize(("type_", "kept"), list(one_of_cases()))
def test_optional_fields_may_be_absent_or_nil(type_: str, kept: str | None) -> None:
    cls = ALL[type_]
    data = m.to_data(EXAMPLES[type_])
    optional = [f.name for f in cls.FIELDS if not f.required]
    bare = {k: v for k, v in data.items() if k not in optional}
    if kept is not None:
        bare[kept] = ONE_OF[type_][kept]
        optional.remove(kept)
    nil = bare | dict.fromkeys(optional)
    assert m.from_data(bare, cls.SENDER) == m.from_data(nil, cls.SENDER)
    for name in optional:
        assert getattr(m.from_data(bare, cls.SENDER), name) is None
        assert name not in m.to_data(m.from_data(bare, cls.SENDER))


@pytest.mark.parametrize("type_", sorted(ONE_OF))
def test_a_room_is_named_by_exactly_one_of_room_and_invite(type_: str) -> None:
    cls = ALL[type_]
    both = {"type": type_, "id": 4, **ONE_OF[type_]}
    for data in (both, {"type": type_, "id": 4}, {"type": type_, "room": None, "invite": None}):
        with pytest.raises(RemoteProtocolError) as caught:
            m.from_data(data, "client")
        assert caught.value.code == INVALID_FIELD
        assert (
            caught.value.message == f"{type_}.room: name the room by exactly one of room and invite"
        )
    for kept, value in ONE_OF[type_].items():
        assert getattr(m.from_data({"type": type_, kept: value}, "client"), kept) == value
    with pytest.raises(LocalProtocolError, match="exactly one of room and invite"):
        cls(room=12, invite=INVITE)  # type: ignore[call-arg]
    with pytest.raises(LocalProtocolError, match="exactly one of room and invite"):
        cls()


def test_the_new_optional_fields() -> None:
    hello = m.from_data(
        {
            "type": "hello",
            "versions": [1],
            "client": "c",
            "name": "Ann",
            "token": bytes(32),
            "seq": 0,
        },
        "client",
    )
    assert hello.seq == 0  # type: ignore[attr-defined]
    create = m.from_data(
        {
            "type": "create_room",
            "settings": m.to_data(EXAMPLES["create_room"])["settings"],
            "private": True,
        },
        "client",
    )
    assert create.private is True  # type: ignore[attr-defined]
    state = m.to_data(EXAMPLES["room_state"]) | {"invite": INVITE}
    assert m.from_data(state, "server").invite == INVITE  # type: ignore[attr-defined]
    for bad in ("KQ7M", "KQ7M-P2XD-1", 12345678):
        with pytest.raises(RemoteProtocolError, match="room_state.invite"):
            m.from_data(state | {"invite": bad}, "server")
    settings = m.RoomSettings(players=3, variant="standard", edition="revised", first_player="host")
    assert (
        settings.turn_timer is None
        and "turn_timer" not in m.to_data(m.CreateRoom(settings=settings))["settings"]
    )
    decision = m.to_data(EXAMPLES["game_state"])["decision"]
    del decision["time_left"]
    game_state = m.to_data(EXAMPLES["game_state"]) | {"decision": decision}
    assert m.from_data(game_state, "server").decision.time_left is None  # type: ignore[attr-defined]


@pytest.mark.parametrize("type_", sorted(ALL))
def test_unknown_fields_are_ignored(type_: str) -> None:
    message = EXAMPLES[type_]
    data = m.to_data(message) | {"zz_future_field": [1, {"a": b"x"}], "another": None}
    assert m.from_data(data, message.SENDER) == message


# ------------------------------------------------------------------ bad fields


def bad_values(spec: FieldSpec, example: Any) -> Iterator[tuple[str, Any]]:
    """Values that `spec` must refuse, with a label."""
    wire_type = spec.wire_type
    yield "float", 1.5
    if isinstance(wire_type, UInt):
        yield "too big", wire_type.hi + 1
        if wire_type.lo > -(2**63):
            yield "too small", wire_type.lo - 1
        yield "boolean", True
        yield "string", "1"
    elif isinstance(wire_type, Bool):
        yield "integer", 1
        yield "nil-like string", "false"
    elif isinstance(wire_type, Text):
        yield "too long", "x" * (wire_type.hi + 1)
        if wire_type.lo > 0:
            yield "empty", ""
        yield "control character", "a\x1b[2Jb"
        yield "binary", b"abc"
    elif isinstance(wire_type, Token):
        yield "uppercase", "Random"
        yield "too long", "a" * (wire_type.hi + 1)
        yield "empty", ""
    elif isinstance(wire_type, OneOf):
        yield "not a value", "nope"
        yield "value as binary", wire_type.values[0].encode()
    elif isinstance(wire_type, Bin):
        yield "short", b"\x00" * (wire_type.size - 1)
        yield "long", b"\x00" * (wire_type.size + 1)
        yield "hex string", "00" * wire_type.size
    elif isinstance(wire_type, KnownCard):
        yield "card back", ["red", None]
        yield "unknown wire_type", ["red", "joker"]
        yield "unknown family", ["pink", "spy"]
        yield "one element", ["red"]
        yield "string", "red soldier"
    elif isinstance(wire_type, PlaceAt):
        yield "middle", "middle"
        yield "negative", -1
        yield "boolean", False
    elif isinstance(wire_type, StructOf):
        yield "empty map", {}
        yield "array", []
    elif isinstance(wire_type, PlainMap):
        yield "array", []
        yield "non-string key", {1: 2}
    elif isinstance(wire_type, ListOf):
        yield "map", {}
        yield "bad item", [1.5]
        if wire_type.lo > 0:
            yield "too few", []
        items = example if isinstance(example, list) and example else None
        if items:
            yield "too many", [items[0]] * (wire_type.hi + 1)


def bad_field_cases() -> Iterator[Any]:
    for type_, cls in sorted(ALL.items()):
        data = m.to_data(EXAMPLES[type_])
        for spec in cls.FIELDS:
            for label, value in bad_values(spec, data.get(spec.name)):
                yield pytest.param(type_, spec.name, value, id=f"{type_}.{spec.name}-{label}")


@pytest.mark.parametrize(("type_", "name", "value"), list(bad_field_cases()))
def test_bad_fields_are_refused_with_invalid_field(type_: str, name: str, value: Any) -> None:
    cls = ALL[type_]
    data = m.to_data(EXAMPLES[type_]) | {name: value}
    with pytest.raises(RemoteProtocolError) as caught:
        m.from_data(data, cls.SENDER)
    error = caught.value
    assert error.code == INVALID_FIELD and not error.fatal
    assert error.message.startswith(f"{type_}.{name}"), error.message
    expected_id = data.get("id") if name != "id" else None
    assert error.id == expected_id


@pytest.mark.parametrize(
    ("type_", "name"),
    [(t, f.name) for t, cls in sorted(ALL.items()) for f in cls.FIELDS if f.required],
)
def test_missing_required_fields_are_refused(type_: str, name: str) -> None:
    cls = ALL[type_]
    data = m.to_data(EXAMPLES[type_])
    del data[name]
    with pytest.raises(RemoteProtocolError) as caught:
        m.from_data(data, cls.SENDER)
    assert caught.value.code == INVALID_FIELD
    assert caught.value.message == f"{type_}.{name}: required field is missing"
    data[name] = None
    with pytest.raises(RemoteProtocolError, match="required field is missing"):
        m.from_data(data, cls.SENDER)


def test_nested_paths_name_the_culprit() -> None:
    data = m.to_data(EXAMPLES["final_reveal"])
    data["openings"][0]["nonce"] = b"short"
    with pytest.raises(RemoteProtocolError) as caught:
        m.from_data(data, "client")
    assert caught.value.message == "final_reveal.openings[0].nonce: expected 32 bytes, got 5"
    assert caught.value.id == 21
    data = m.to_data(EXAMPLES["room_list"])
    data["rooms"][0]["settings"]["variant"] = "two-player"
    with pytest.raises(
        RemoteProtocolError, match=r"room_list.rooms\[0\].settings.players: the two-player"
    ):
        m.from_data(data, "server")


def nested_list(depth: int, leaf: Any = "x") -> Any:
    """A value `depth` arrays deep, built without recursion."""
    for _ in range(depth):
        leaf = [leaf]
    return leaf


def nested_map(depth: int, leaf: Any = "x") -> Any:
    for _ in range(depth):
        leaf = {"type": "x", "a": leaf}
    return leaf


# Values no parser may quote whole: deep (far past any recursion limit) or big.
NASTY = {
    "deep array": nested_list(100_000),
    "deep pair": [nested_list(100_000), nested_list(100_000)],
    "deep map": nested_map(100_000),
    "long string": "é" * 60_000,
    "long token-like string": "a" * 60_000,
    "long binary": b"\xff" * 60_000,
    "long array": ["red", "soldier"] * 30_000,
    "wide map": {f"k{i}": [i] for i in range(20_000)},
    "big integer": 2**64 - 1,
}


@pytest.mark.parametrize("type_", sorted(ALL))
def test_no_error_quotes_a_deep_or_huge_value(type_: str) -> None:
    """Any value anywhere in a message, however deep or big, is accepted or
    refused with a short ``invalid_field`` (never a RecursionError, never a
    message that quotes the value whole)."""
    cls = ALL[type_]
    paths = [p for p in positions(m.to_data(EXAMPLES[type_])) if p != ("type",)]
    assert paths
    for path in paths:
        for label, value in NASTY.items():
            data = copy.deepcopy(m.to_data(EXAMPLES[type_]))  # views are shared
            replaced(data, path, value)
            try:
                m.from_data(data, cls.SENDER)
            except RemoteProtocolError as e:
                assert e.code == INVALID_FIELD, (path, label, e.code)
                assert len(e.message) < 300, (path, label, e.message[:500])
                told = m.error_message(e).message
                assert told.startswith(e.message) and told.endswith(
                    f"(see docs/PROTOCOL.md, `{type_}`)"
                )


def test_settings_must_fit_the_variant() -> None:
    base = {"variant": "standard", "edition": "revised", "turn_timer": 60, "first_player": "host"}
    for players, variant in ((2, "standard"), (3, "two-player"), (5, "two-player")):
        data = {"type": "create_room", "settings": base | {"players": players, "variant": variant}}
        with pytest.raises(RemoteProtocolError, match="create_room.settings.players"):
            m.from_data(data, "client")
    for players, variant in ((2, "two-player"), (3, "standard"), (5, "standard")):
        data = {"type": "create_room", "settings": base | {"players": players, "variant": variant}}
        assert m.from_data(data, "client").settings.players == players  # type: ignore[attr-defined]


# ------------------------------------------------------------------ message types


@pytest.mark.parametrize(
    ("data", "sender"),
    [
        ({"id": 3}, "client"),
        ({"type": None, "id": 3}, "client"),
        ({"type": 7, "id": 3}, "client"),
        ({"type": b"ping", "id": 3}, "client"),
        ({"type": "teleport", "id": 3}, "client"),
        ({"type": "welcome", "id": 3}, "client"),  # a server message, from a client
        ({"type": "hello", "id": 3}, "server"),  # a client message, from the server
        ({"type": "PING", "id": 3}, "client"),
    ],
)
def test_unknown_message_types_are_refused(data: dict[str, Any], sender: m.Sender) -> None:
    with pytest.raises(RemoteProtocolError) as caught:
        m.from_data(data, sender)
    assert caught.value.code == UNKNOWN_MESSAGE and not caught.value.fatal
    assert caught.value.id == 3


def test_an_unreadable_id_is_not_echoed() -> None:
    for bad_id in (-1, 2**32, "7", 1.0, True):
        with pytest.raises(RemoteProtocolError) as caught:
            m.from_data({"type": "teleport", "id": bad_id}, "client")
        assert caught.value.id is None


# ------------------------------------------------------------------ constructing


def test_constructors_check_their_fields() -> None:
    with pytest.raises(LocalProtocolError) as caught:
        m.PlaceCard(turn=1, at="middle", family="red", commitment=bytes(32))
    assert caught.value.code == INVALID_FIELD and caught.value.message.startswith("place.at:")
    with pytest.raises(LocalProtocolError, match="reveal.card"):
        m.RevealCard(turn=1, card=card("red", None), nonce=bytes(32))
    with pytest.raises(LocalProtocolError, match="error.fatal: required field is missing"):
        m.Error(code="internal", message="x", fatal=None)  # type: ignore[arg-type]
    with pytest.raises(LocalProtocolError, match="final_reveal.openings: expected a tuple"):
        m.FinalReveal(seed=bytes(32), openings=[])  # type: ignore[arg-type]
    with pytest.raises(LocalProtocolError, match="settings.players: the two-player variant"):
        m.RoomSettings(
            players=3, variant="two-player", edition="revised", turn_timer=60, first_player="host"
        )
    with pytest.raises(LocalProtocolError, match="create_room.settings: expected RoomSettings"):
        m.CreateRoom(settings={"players": 3})  # type: ignore[arg-type]
    # Openings and verdicts are the fairness layer's own values, checked too.
    spy = card("red", "spy")
    with pytest.raises(
        LocalProtocolError, match=r"final_reveal.openings\[0\].nonce: expected 32 bytes, got 5"
    ):
        m.FinalReveal(seed=bytes(32), openings=(Opening(3, spy, b"short"),))
    with pytest.raises(LocalProtocolError, match=r"hand_over.openings\[0\]: expected Opening"):
        m.HandOver(seed=bytes(32), openings=({"pid": 3},))  # type: ignore[arg-type]
    end = m.to_data(EXAMPLES["game_end"])
    with pytest.raises(LocalProtocolError, match=r"game_end.verification\[1\].status"):
        m.GameEnd(
            **{k: v for k, v in vars_of(EXAMPLES["game_end"]).items() if k != "verification"},
            verification=(SeatVerdict(0, "ok"), SeatVerdict(1, "cheated", "x")),
        )
    assert m.from_data(end, "server") == EXAMPLES["game_end"]


def vars_of(message: m.Message) -> dict[str, Any]:
    return {f.name: getattr(message, f.name) for f in message.FIELDS}


def test_messages_are_frozen_values() -> None:
    a = m.Choose(turn=3, target=7, id=1)
    assert a == m.Choose(turn=3, target=7, id=1) and hash(a) == hash(
        m.Choose(turn=3, target=7, id=1)
    )
    with pytest.raises(AttributeError):
        a.target = 8  # type: ignore[misc]
    assert not hasattr(a, "__dict__")


def test_cards_are_engine_cards() -> None:
    reveal = m.from_data(
        {"type": "reveal", "turn": 2, "card": ["blue", "royal_decree"], "nonce": bytes(32)},
        "client",
    )
    assert reveal.card is card("blue", "royal_decree")  # type: ignore[attr-defined]
    assert m.to_data(reveal)["card"] == ["blue", "royal_decree"]


def test_place_at_takes_ends_and_pids() -> None:
    for at in ("first", "last", 0, 17):
        data = {"type": "place", "turn": 1, "at": at, "family": "green", "commitment": bytes(32)}
        assert m.from_data(data, "client").at == at  # type: ignore[attr-defined]


def test_error_messages_carry_catalog_codes() -> None:
    for code, entry in CODES.items():
        error = RemoteProtocolError(code, "x", id=4)
        message = m.error_message(error)
        assert message.code == code and message.fatal is (not entry.keeps_open) and message.id == 4
    with pytest.raises(ValueError):
        ProtocolError("no_such_code", "x")


def test_error_text_is_made_safe() -> None:
    message = m.error_message(RemoteProtocolError(INVALID_FIELD, "bad\nthing\x1b[31m" + "x" * 900))
    assert "\n" not in message.message and "\x1b" not in message.message
    assert len(message.message) == 500
    assert m.clean_text("a\tb", 10) == "a b"


def test_trusted_values_are_checked_in_the_tests_and_taken_as_given_in_a_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`WireValue.trusted`: what the server makes from its own state. The
    tests check it as any value (tests/conftest.py), so that one made wrong
    fails them; a server takes it as given, as a constructor would make it."""
    from oriflamme.protocol import schema

    assert schema.CHECK_TRUSTED
    with pytest.raises(LocalProtocolError, match="chat_message.seq"):
        m.ChatMessage.trusted(seq=0, name="Ann", text="hi")
    monkeypatch.setattr(schema, "CHECK_TRUSTED", False)
    made = m.ChatMessage.trusted(seq=1, name="Ann", text="hi")
    assert made == m.ChatMessage(seq=1, name="Ann", text="hi") and made.room is None
    assert m.to_data(made) == m.to_data(m.ChatMessage(seq=1, name="Ann", text="hi"))
    assert m.ChatMessage.trusted(seq=0, name="Ann", text="hi").seq == 0  # (not checked)
    with pytest.raises(TypeError, match="no field 'nope'"):
        m.Ok.trusted(nope=1)

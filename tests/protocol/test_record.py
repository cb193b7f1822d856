"""The game record: round trips, and hostile bytes give RecordError and nothing else."""

from __future__ import annotations

import contextlib
import dataclasses
import re
from pathlib import Path
from typing import Any

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oriflamme import protocol
from oriflamme.protocol import messages as m
from oriflamme.protocol.commitments import PROTOCOL_VERSION
from oriflamme.protocol.record import (
    BACK,
    HANDED_TO_BOT,
    LEFT,
    MAX_RECORD_SIZE,
    RECORD_FORMAT,
    STAND_IN,
    Record,
    RecordError,
    SeatChange,
    decode_record,
    encode_record,
    record_to_data,
)
from tests.protocol.fairness_helpers import TABLES, play, tamper
from tests.server.local_referee import play_local_game

DATA = play_local_game(3, seed=11)
PROTOCOL_DIR = Path(__file__).resolve().parents[2] / "protocol"


def test_the_protocol_version_is_defined_once() -> None:
    """One constant: the messages, the commitments, the deal and the record
    all take it from `commitments`."""
    defining = [
        path.name
        for path in sorted(PROTOCOL_DIR.glob("*.py"))
        if re.search(r"^PROTOCOL_VERSION\b.*=", path.read_text(encoding="utf-8"), re.M)
    ]
    assert defining == ["commitments.py"]
    assert protocol.PROTOCOL_VERSION == PROTOCOL_VERSION == min(m.SUPPORTED_VERSIONS)
    assert Record.__dataclass_fields__["version"].default == PROTOCOL_VERSION
    assert set(protocol.__all__) <= set(dir(protocol))


def test_round_trip() -> None:
    record = decode_record(DATA)
    assert encode_record(record) == DATA
    assert decode_record(encode_record(record)) == record


@pytest.mark.parametrize("players, edition", TABLES)
def test_round_trip_every_table(players: int, edition: str) -> None:
    record = play(players, edition=edition, seed=players)
    assert decode_record(encode_record(record)) == record


def test_the_record_is_a_plain_msgpack_map() -> None:
    plain = msgpack.unpackb(DATA, raw=False)
    assert plain["format"] == RECORD_FORMAT and plain["version"] == 1
    assert isinstance(plain["game_id"], bytes) and len(plain["game_id"]) == 16
    assert isinstance(plain["server_seed"], bytes)
    place = next(e for e in plain["log"] if e["action"]["type"] == "place")
    assert place["action"]["card"][1] is None  # only the back
    assert isinstance(place["commitment"], bytes) and len(place["commitment"]) == 32
    assert set(plain) == {
        "format", "version", "game_id", "settings", "seats", "server_seed_commitment",
        "server_seed", "seed_commitments", "seeds", "log", "final_openings", "events",
        "results", "forfeits", "seat_changes", "verdicts",
        "server_key",  # (it signs its decisions: here, none but a time-out's, if any)
    }  # fmt: skip
    assert plain["settings"]["turn_timer"] == 60 and plain["seat_changes"] == []


def test_unknown_fields_are_ignored() -> None:
    def add(plain: dict[str, Any]) -> None:
        plain["comment"] = "added by a newer server"
        plain["settings"]["timer"] = 30
        plain["log"][0]["extra"] = True

    assert decode_record(tamper(DATA, add)) == decode_record(DATA)


def delete(path: str) -> Any:
    def change(plain: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target: Any = plain
        for p in parents:
            target = target[int(p)] if p.isdigit() else target[p]
        del target[int(last) if last.isdigit() else last]

    return change


def setter(path: str, value: object) -> Any:
    def change(plain: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target: Any = plain
        for p in parents:
            target = target[int(p)] if p.isdigit() else target[p]
        target[int(last) if last.isdigit() else last] = value

    return change


TOP_FIELDS = [
    "format", "version", "game_id", "settings", "seats", "server_seed_commitment", "server_seed",
    "seed_commitments", "seeds", "log", "final_openings", "events", "results", "forfeits",
    "verdicts",
]  # fmt: skip


@pytest.mark.parametrize("name", TOP_FIELDS)
def test_every_field_is_required(name: str) -> None:
    with pytest.raises(RecordError):
        decode_record(tamper(DATA, delete(name)))


def test_the_optional_fields_may_be_absent() -> None:
    """`seat_changes` (no seat changed) and `settings.turn_timer` (no timer)."""
    record = decode_record(tamper(DATA, delete("seat_changes")))
    assert record.seat_changes == ()
    assert record == decode_record(DATA)
    record = decode_record(tamper(DATA, delete("settings.turn_timer")))
    assert record.settings.turn_timer is None
    assert "turn_timer" not in record_to_data(record)["settings"]
    assert decode_record(tamper(DATA, setter("settings.turn_timer", None))) == record


def test_seat_changes_and_the_turn_timer_round_trip() -> None:
    record = decode_record(DATA)
    changes = (
        SeatChange(1, 0, STAND_IN),
        SeatChange(1, 5, BACK),
        SeatChange(2, 5, LEFT),
        SeatChange(0, len(record.log), HANDED_TO_BOT),
    )
    changed = dataclasses.replace(
        record,
        seat_changes=changes,
        settings=dataclasses.replace(record.settings, turn_timer=3600),
    )
    back = decode_record(encode_record(changed))
    assert back == changed and back.seat_changes == changes
    assert back.settings.turn_timer == 3600
    assert msgpack.unpackb(encode_record(changed), raw=False)["seat_changes"][1] == {
        "seat": 1,
        "log_index": 5,
        "change": "back",
    }


@pytest.mark.parametrize(
    "path, value",
    [
        ("format", "something-else"),
        ("version", 2),
        ("version", True),
        ("game_id", bytes(15)),
        ("game_id", "00" * 16),
        ("settings.players", 6),
        ("settings.players", 2),  # the standard game needs 3 (families no longer fit either)
        ("settings.variant", "three-player"),
        ("settings.edition", "second"),
        ("settings.families", [["red"], ["red"], ["blue"]]),
        ("settings.families", [["red"], ["blue"], ["purple"]]),
        ("settings.families", [["red"], ["blue"], [2]]),
        ("settings.families", [["red"], ["blue"], "green"]),
        ("settings.first_player", 3),
        ("seats", []),
        ("seats.0.name", 7),
        ("seats.0.bot", "yes"),
        ("server_seed", bytes(31)),
        ("server_seed_commitment", None),
        ("seed_commitments.1", bytes(33)),
        ("seeds.2", "seed"),
        ("seeds", [None, None]),
        ("log.0.seat", 3),
        ("log.0.seat", -1),
        ("log.0.action", {"type": "fly"}),
        ("log.0.action", "direction"),
        ("final_openings.0", "none"),
        ("final_openings.0", [{"pid": 1, "card": ["red", None], "nonce": bytes(32)}]),
        ("final_openings.0", [{"pid": 1, "card": ["red", "spy"], "nonce": bytes(8)}]),
        ("final_openings.0", [{"pid": -1, "card": ["red", "spy"], "nonce": bytes(32)}]),
        ("events.0", {"type": "teleported"}),
        ("events.0", {"type": "placed"}),
        ("events.0", [1, 2]),
        ("results.complete", 1),
        ("results.scores", [1, 2]),
        ("results.winners", [5]),
        ("forfeits", [{"seat": 9, "reason": "x"}]),
        ("forfeits", [{"seat": 0}]),
        ("settings.turn_timer", 9),
        ("settings.turn_timer", 604801),  # (a week at most)
        ("settings.turn_timer", "60"),
        ("settings.turn_timer", True),
        ("seat_changes", "none"),
        ("seat_changes", [{"seat": 0, "log_index": 0, "change": "vanished"}]),
        ("seat_changes", [{"seat": 3, "log_index": 0, "change": "left"}]),
        ("seat_changes", [{"seat": 0, "log_index": -1, "change": "left"}]),
        ("seat_changes", [{"seat": 0, "log_index": 100_000, "change": "left"}]),
        ("seat_changes", [{"seat": 0, "change": "left"}]),
        ("seat_changes", [{"log_index": 0, "change": "left"}]),
        ("seat_changes", [{"seat": 0, "log_index": 0}]),
        (
            "seat_changes",
            [
                {"seat": 0, "log_index": 5, "change": "stand_in"},
                {"seat": 0, "log_index": 4, "change": "back"},
            ],
        ),  # out of order
        ("verdicts.0.status", "great"),
        ("verdicts.0.seat", 1),
        ("verdicts.1.reason", 5),
    ],
)
def test_malformed_fields_are_refused(path: str, value: object) -> None:
    with pytest.raises(RecordError):
        decode_record(tamper(DATA, setter(path, value)))


def log_entry_of(kind: str) -> int:
    plain = msgpack.unpackb(DATA, raw=False)
    return next(i for i, e in enumerate(plain["log"]) if e["action"]["type"] == kind)


def test_a_logged_placement_shows_only_the_back() -> None:
    i = log_entry_of("place")
    with pytest.raises(RecordError, match="only the card back"):
        decode_record(tamper(DATA, setter(f"log.{i}.action.card", ["red", "spy"])))
    with pytest.raises(RecordError):
        decode_record(tamper(DATA, delete(f"log.{i}.commitment")))


def test_a_logged_opening_needs_its_nonce() -> None:
    i = log_entry_of("open")
    with pytest.raises(RecordError):
        decode_record(tamper(DATA, delete(f"log.{i}.nonce")))
    with pytest.raises(RecordError):
        decode_record(tamper(DATA, setter(f"log.{i}.action.card", ["red", None])))


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\xc1",  # never used in msgpack
        DATA[:-1],  # truncated
        DATA + b"\x00",  # trailing bytes
        msgpack.packb([1, 2, 3]),
        msgpack.packb({1: 2}),  # integer map keys
        msgpack.packb({"format": RECORD_FORMAT, "x": msgpack.ExtType(3, b"zz")}),
        msgpack.packb({"format": RECORD_FORMAT, "x": msgpack.Timestamp(0, 0)}),
        msgpack.packb({"format": RECORD_FORMAT, "x": 1.5}),
        msgpack.packb({"format": RECORD_FORMAT, "x": "y" * 5000}),  # over the text limit
        b"\x91" * 5000 + b"\xc0",  # nested deeper than msgpack allows
    ],
)
def test_hostile_bytes_are_refused(data: bytes) -> None:
    with pytest.raises(RecordError):
        decode_record(data)


def test_size_limit() -> None:
    big = msgpack.packb({"format": RECORD_FORMAT, "pad": [b"x" * 60] * (MAX_RECORD_SIZE // 60)})
    assert len(big) > MAX_RECORD_SIZE
    with pytest.raises(RecordError, match="at most"):
        decode_record(big)


def test_not_bytes() -> None:
    with pytest.raises(RecordError):
        decode_record("a string")  # type: ignore[arg-type]


def _decode_or_error(data: bytes) -> None:
    with contextlib.suppress(RecordError):
        assert isinstance(decode_record(data), Record)


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_give_a_record_or_record_error(data: bytes) -> None:
    _decode_or_error(data)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_records_give_a_record_or_record_error(data: st.DataObject) -> None:
    raw = bytearray(DATA)
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
    _decode_or_error(bytes(raw))


PLAIN = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.text(max_size=8)
    | st.binary(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@pytest.mark.slow  # (many examples: `make test` runs it, not `make test-fast`)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([*TOP_FIELDS, "seat_changes"]), PLAIN)
def test_any_value_in_any_field_gives_a_record_or_record_error(name: str, value: object) -> None:
    plain = record_to_data(decode_record(DATA))
    plain[name] = value
    _decode_or_error(msgpack.packb(plain, use_bin_type=True))

"""protocol.updates: a game replayed from its log, as a version 2 client keeps it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import msgpack
import pytest

from oriflamme.engine import (
    BACKS,
    FIRST,
    LEFT_TO_RIGHT,
    ChooseDirection,
    Place,
    Rules,
    card,
    to_data,
    view,
)
from oriflamme.protocol.record import LogEntry, entry_from_data
from oriflamme.protocol.updates import PublicGame, ReplayError, data_digest, events_digest

VECTORS = Path(__file__).resolve().parents[2] / "docs" / "test-vectors.json"


def _bytes_back(value: Any) -> Any:
    """A vector's entry as the wire carries it: its hex strings as bytes."""
    if isinstance(value, dict):
        return {
            k: bytes.fromhex(v) if k in ("commitment", "nonce", "sig") else _bytes_back(v)
            for k, v in value.items()
        }
    return value


def replays() -> list[dict[str, Any]]:
    return list(json.loads(VECTORS.read_text(encoding="utf-8"))["replays"])


@pytest.mark.parametrize("replay", replays(), ids=lambda r: r["sample"])
def test_the_replay_vectors_replay_as_they_say(replay: dict[str, Any]) -> None:
    """As an outside client reads them: each entry makes the events listed,
    whose msgpack's digest is the one listed; the position at the end too."""
    families = tuple(
        tuple(["red", "blue", "green", "yellow", "black"].index(f) for f in fams)
        for fams in replay["families"]
    )
    rules = Rules(replay["players"], replay["variant"], replay["edition"], families)
    public = PublicGame(rules, replay["first_player"])
    for i, step in enumerate(replay["log"]):
        entry = entry_from_data(_bytes_back(step["entry"]), rules.players, f"entry {i}")
        events = public.apply(entry)
        assert events_digest(events).hex() == step["digest"]
        # (JSON's arrays are msgpack's arrays: the events as listed give the digest)
        assert data_digest(step["events"]).hex() == step["digest"]
    assert {k: v for k, v in view(public.game, None).items() if k != "viewer"} == replay["view"]
    assert public.entries == len(replay["log"]) and public.game.over
    kinds = {
        "skip" if "skip" in s["entry"] else s["entry"]["action"]["type"] for s in replay["log"]
    }
    assert kinds <= {"direction", "place", "keep", "reveal", "open", "target", "move_to", "skip"}


def test_the_vectors_hold_every_kind_of_entry() -> None:
    entries = [s["entry"] for r in replays() for s in r["log"]]
    assert any(e.get("skip") for e in entries)
    assert any(e.get("settled") for e in entries)
    assert any(e.get("by_server") and not e.get("skip") for e in entries)
    assert any(ev["type"] == "drew" for r in replays() for s in r["log"] for ev in s["events"])


def test_the_digest_is_of_the_msgpack_array_of_the_events() -> None:
    events = [{"type": "kept", "seat": 1, "pid": 3, "tokens": 2}]
    packed = msgpack.packb(events, use_bin_type=True)
    assert data_digest(events) == hashlib.sha256(packed).digest()[:16]


def started() -> PublicGame:
    public = PublicGame(Rules(3))
    public.apply(LogEntry(0, ChooseDirection(LEFT_TO_RIGHT)))
    return public


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        (LogEntry(1, Place(BACKS[1], FIRST), pid=0, commitment=bytes(32)), "seat 1 acted"),
        (LogEntry(0, Place(BACKS[0], FIRST), pid=5, commitment=bytes(32)), "numbered 5, not 0"),
        (LogEntry(0, ChooseDirection(LEFT_TO_RIGHT)), "expected a placement"),
        (LogEntry(0, Place(BACKS[1], FIRST), pid=0, commitment=bytes(32)), "not blue"),
        # (a card that is not a back: the replayed game knows no card of any hand)
        (
            LogEntry(0, Place(card("red", "archer"), FIRST), pid=0, commitment=bytes(32)),
            "not in seat 0's hand",
        ),
    ],
)
def test_an_entry_that_does_not_follow_is_refused_and_changes_nothing(
    entry: LogEntry, why: str
) -> None:
    public = started()
    before = to_data(public.game)
    with pytest.raises(ReplayError, match=why):
        public.apply(entry)
    assert to_data(public.game) == before and public.entries == 1


def test_a_skip_is_only_of_a_placement() -> None:
    public = PublicGame(Rules(3))
    with pytest.raises(ReplayError, match="skips a placement, but the decision is direction"):
        public.apply(LogEntry.skip(0))
    public = started()
    public.apply(LogEntry.skip(0))
    assert public.entries == 2 and public.game.decision is not None
    assert public.game.decision.seat == 1

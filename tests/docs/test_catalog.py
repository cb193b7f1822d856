"""The code, docs/protocol-v1.json and docs/PROTOCOL.md must agree."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from oriflamme.engine import RandomPlayer, new_game, view
from oriflamme.engine.events import EVENT_TYPES
from oriflamme.protocol import messages as m
from oriflamme.protocol.codec import MAX_DEPTH, FrameDecoder
from oriflamme.protocol.errors import CODES
from tools.docgen import CATALOGS, PROTOCOL_DOC, catalog
from tools.docgen.examples import examples
from tools.docgen.markers import BEGIN, END

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / PROTOCOL_DOC
HOW_TO_FIX = "run `python -m tools.docgen` from the repository root"


@pytest.fixture(scope="module")
def doc() -> str:
    return DOC.read_text(encoding="utf-8")


def section(text: str, heading: str) -> str:
    """The body of the section with this exact heading line, up to the next heading of its level or higher."""
    level = len(heading) - len(heading.lstrip("#"))
    start = text.index(heading + "\n")
    stop = re.compile(rf"^#{{1,{level}}} ", re.M)
    match = stop.search(text, start + len(heading) + 1)
    return text[start : match.start() if match else len(text)]


@pytest.mark.parametrize("version", sorted(CATALOGS))
def test_the_committed_json_catalogs_are_generated_from_the_code(version: int) -> None:
    text = (ROOT / CATALOGS[version]).read_text(encoding="utf-8")
    assert text == catalog.catalog_json(version), HOW_TO_FIX


def test_the_documents_generated_blocks_are_up_to_date(doc: str) -> None:
    assert catalog.check_doc(doc) == [], HOW_TO_FIX


def test_check_doc_notices_drift(doc: str) -> None:
    stale = doc.replace(
        "| `commitment` | bin, 32 bytes | required |",
        "| `commitment` | bin, 31 bytes | required |",
        1,
    )
    assert stale != doc and any("out of date" in p for p in catalog.check_doc(stale))
    name = "message:keep"
    start = doc.index(BEGIN.format(name))
    end = doc.index(END, start) + len(END)
    assert f"block {name!r} is missing" in catalog.check_doc(doc[:start] + doc[end:])
    updated, missing = catalog.update_doc(stale)
    assert updated == doc and missing == []


def test_every_message_and_error_code_is_in_the_document(doc: str) -> None:
    for type_ in [*m.CLIENT_MESSAGES, *m.SERVER_MESSAGES]:
        assert f"#### `{type_}`" in doc, type_
    for code in CODES:
        assert f"| `{code}` |" in doc, code
    for struct in m.STRUCTS:
        assert f"#### Structure `{struct.name}`" in doc


@pytest.mark.parametrize("version", sorted(CATALOGS))
def test_each_json_catalog_lists_everything_of_its_version(version: int) -> None:
    data = json.loads((ROOT / CATALOGS[version]).read_text(encoding="utf-8"))
    assert data["version"] == version
    theirs = {
        t
        for t, cls in {**m.CLIENT_MESSAGES, **m.SERVER_MESSAGES}.items()
        if version in cls.VERSIONS
    }
    assert {x["type"] for x in data["messages"]} == theirs
    assert ("game_state" in theirs, "game_update" in theirs) == (version == 1, version == 2)
    assert {x["code"] for x in data["errors"]} == set(CODES)
    assert {x["type"] for x in data["events"]} == set(EVENT_TYPES)
    assert {x["name"] for x in data["structures"]} == {
        s.name for s in m.STRUCTS if version in m.STRUCT_VERSIONS.get(s.name, m.SUPPORTED_VERSIONS)
    }
    assert ("pending" in {x["name"] for x in data["structures"]}) == (version == 2)
    assert data["framing"]["max_depth"] == MAX_DEPTH
    for entry in data["messages"]:
        frame = bytes.fromhex(entry["example_frame"])
        decoder = FrameDecoder()
        decoder.feed(frame)
        decoded = decoder.next_frame()
        assert decoded is not None
        assert m.from_data(decoded, entry["sender"]) == examples()[entry["type"]]


def test_event_docs_cover_exactly_the_engines_events() -> None:
    assert set(catalog.EVENT_DOCS) == set(EVENT_TYPES)
    for name, cls in EVENT_TYPES.items():
        assert set(catalog.EVENT_DOCS[name][1]) == set(cls._fields), name


def test_the_view_table_lists_every_key_of_a_view(doc: str) -> None:
    body = section(doc, "### Game views")
    keys = set(re.findall(r"^\| `([a-z_]+)` \|", body, re.M))
    for players, variant in ((4, "standard"), (2, "two-player")):
        game = new_game(players, variant=variant, seed=1)
        player = RandomPlayer(seed=1)
        while game.round < 3:
            game.apply(player.choose(game))
        for seat in (0, None):
            assert set(view(game, seat)) == keys
            for slot in view(game, seat)["queue"]:
                for in_play in slot:
                    assert all(f"`{k}`" in body for k in in_play)
    for key in ("index", "ability", "chosen", "opening", "open_for"):
        assert f"`{key}`" in body


def test_every_decision_kind_has_a_row(doc: str) -> None:
    body = section(doc, "### Decisions and actions")
    decision = next(f for f in m.PendingDecision.FIELDS if f.name == "kind")
    for kind in decision.wire_type.values:  # type: ignore[attr-defined]
        assert f"| `{kind}` |" in body, kind


def test_the_fairness_sections_are_there_once(doc: str) -> None:
    for heading in ("## Commit-reveal and the fair deal", "## The game record"):
        assert doc.count(f"\n{heading}\n") == 1


def test_the_worked_example_is_a_real_session(doc: str) -> None:
    body = section(doc, "## Worked example")
    assert "C→S `hello`" in body and "S→C `game_end`" in body and "C→S `final_reveal`" in body
    assert "C→S `place`" in body and "C→S `reveal`" in body and "C→S `seed_commit`" in body
    assert "S→C `server_seed`" in body and "S→C `final_reveal_request`" in body

"""tools.docgen: the generated documents agree with the code, the tool notices
and repairs drift, docs/COMMANDS.md follows the command's parser, and every
sample record verifies as its index says."""

from __future__ import annotations

import argparse
import doctest
import importlib
import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

import tools.docgen
from oriflamme.launcher.cli import build_parser
from oriflamme.protocol.record import decode_record
from oriflamme.protocol.verify import verify_record
from tools.docgen import CATALOGS, COMMANDS_DOC, PROTOCOL_DOC, RECORDS, VECTORS, check, commands
from tools.docgen.__main__ import main
from tools.docgen.sample_records import RECORD_SUFFIX, SAMPLES

ROOT = Path(__file__).resolve().parents[2]
INDEX = ROOT / RECORDS / "index.json"


def test_the_generated_documents_agree_with_the_code() -> None:
    """docs/PROTOCOL.md's and docs/COMMANDS.md's blocks, docs/protocol-v1.json,
    docs/test-vectors.json and docs/records/ are exactly what the code makes."""
    assert check(ROOT) == [], "run `python -m tools.docgen` from the repository root"


def run_main(monkeypatch: pytest.MonkeyPatch, root: Path, *argv: str) -> int:
    monkeypatch.chdir(root)
    monkeypatch.setattr(sys, "argv", ["python -m tools.docgen", *argv])
    return main()


@pytest.mark.slow  # (the documents made again, twice: `make test` runs it)
def test_the_tool_notices_drift_and_repairs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    doc = tmp_path / PROTOCOL_DOC
    text = doc.read_text(encoding="utf-8")
    stale = text.replace(
        "| `commitment` | bin, 32 bytes | required |", "| `commitment` | bin | x |", 1
    )
    assert stale != text
    doc.write_text(stale, encoding="utf-8")
    (tmp_path / CATALOGS[2]).write_text("{}\n", encoding="utf-8")
    vectors = json.loads((tmp_path / VECTORS).read_text(encoding="utf-8"))
    vectors["shuffles"][0]["bytes_read"] += 1
    (tmp_path / VECTORS).write_text(json.dumps(vectors, indent=2) + "\n", encoding="utf-8")
    record = tmp_path / RECORDS / (SAMPLES[0].name + RECORD_SUFFIX)
    record.write_bytes(record.read_bytes()[:-1])
    (tmp_path / RECORDS / "index.json").unlink()
    commands_doc = tmp_path / COMMANDS_DOC
    commands_text = commands_doc.read_text(encoding="utf-8")
    stale_commands = commands_text.replace(
        "| `--port PORT` | `7531` |", "| `--port PORT` | `7532` |"
    )
    assert stale_commands != commands_text
    commands_doc.write_text(stale_commands, encoding="utf-8")

    assert run_main(monkeypatch, tmp_path, "--check") == 1
    err = capsys.readouterr().err
    assert "docs/PROTOCOL.md: block 'message:seed_commit' is out of date" in err
    assert "docs/COMMANDS.md: block 'command:serve' is out of date" in err
    for path in (CATALOGS[2], VECTORS, record.relative_to(tmp_path), RECORDS / "index.json"):
        assert f"{path} is out of date" in err
    assert "run: python -m tools.docgen" in err
    assert doc.read_text(encoding="utf-8") == stale  # --check changes nothing

    assert run_main(monkeypatch, tmp_path) == 0
    assert "up to date" in capsys.readouterr().out
    for path in tools.docgen.generated_files():
        assert (tmp_path / path).read_bytes() == (ROOT / path).read_bytes(), path
    assert doc.read_text(encoding="utf-8") == text
    assert commands_doc.read_text(encoding="utf-8") == commands_text


# ------------------------------------------------------------------ docs/COMMANDS.md


@pytest.mark.slow  # (the documents made again, twice: `make test` runs it)
def test_a_new_option_of_the_command_is_drift(monkeypatch: pytest.MonkeyPatch) -> None:
    """An option added to (or changed in) `oriflamme`'s parser and not
    written into docs/COMMANDS.md fails the check, as a stale document does."""

    def changed() -> argparse.ArgumentParser:
        parser = build_parser()
        serve = commands.subcommands(parser)["serve"][1]
        serve.add_argument("--shiny", action="store_true", help="a new option")
        return parser

    monkeypatch.setattr(commands, "_build_parser", changed)
    assert "docs/COMMANDS.md: block 'command:serve' is out of date" in check(ROOT)


def test_the_blocks_do_not_depend_on_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """argparse's --help wraps at $COLUMNS; the blocks are made from the
    parser's actions at a fixed width, so any terminal makes the same."""
    wide = commands.blocks()
    monkeypatch.setenv("COLUMNS", "40")
    assert commands.blocks() == wide
    monkeypatch.setenv("COLUMNS", "200")
    assert commands.blocks() == wide
    assert all(
        len(line) <= commands.WIDTH
        for line in "".join(wide.values()).splitlines()
        if line.startswith("oriflamme ") or line.startswith(" ")
    )


def test_every_subcommand_and_option_is_in_the_commands_document() -> None:
    """Each subcommand has its section of prose and its block, and the
    document names every option the parser has."""
    text = (ROOT / COMMANDS_DOC).read_text(encoding="utf-8")
    parser = build_parser()
    for name, (_, sub) in commands.subcommands(parser).items():
        assert f"### `oriflamme {name}`" in text, f"no section for `oriflamme {name}`"
        assert f"<!-- generated: command:{name} -->" in text
        for action in sub._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert re.search(rf"`{re.escape(option)}[ `]", text), option


# ------------------------------------------------------------------ sample records


def index() -> list[dict[str, Any]]:
    return json.loads(INDEX.read_text(encoding="utf-8"))


def test_the_index_lists_every_sample_record() -> None:
    entries = index()
    files = {p.name for p in (ROOT / RECORDS).iterdir()} - {"index.json"}
    assert [e["file"] for e in entries] == [s.name + RECORD_SUFFIX for s in SAMPLES]
    assert {e["file"] for e in entries} == files
    # The samples cover every verdict a seat can get, valid games and not.
    assert {e["valid"] for e in entries} == {True, False}
    assert {v["status"] for e in entries for v in e["verdicts"]} == {"ok", "failed", "forfeited"}


@pytest.mark.parametrize("entry", index(), ids=lambda e: e["file"])
def test_every_sample_record_verifies_to_exactly_its_listed_verdicts(entry: dict[str, Any]) -> None:
    record = decode_record((ROOT / RECORDS / entry["file"]).read_bytes())
    verdict = verify_record(record)
    assert verdict.ok is entry["valid"]
    assert list(verdict.problems) == entry["problems"]
    assert [
        {"seat": v.seat, "status": v.status, "reason": v.reason} for v in verdict.seats
    ] == entry["verdicts"]
    assert [v["seat"] for v in entry["verdicts"]] == list(range(record.settings.players))
    # The server's verdicts in the record are the verifier's, word for word.
    assert tuple(record.verdicts) == tuple(verdict.seats)
    # Valid: every seat ok, and no problem with the record as a whole (a
    # forged signature, in the forged samples).
    ok = all(v["status"] == "ok" for v in entry["verdicts"])
    assert entry["valid"] is (ok and not entry["problems"])


# ------------------------------------------------------------------ docstring examples

MODULES = sorted(
    f"tools.docgen.{p.stem}"
    for p in Path(tools.docgen.__file__).parent.glob("*.py")
    if p.stem not in ("__init__", "__main__")
)


@pytest.mark.parametrize("name", ["tools.docgen", *MODULES])
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"

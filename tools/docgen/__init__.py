"""The generated documentation: what is written from the code, and checked against it.

    python -m tools.docgen            # write every generated file and block
    python -m tools.docgen --check    # change nothing; exit 1 if anything is out of date

Run from the repository root. What it makes:

* docs/PROTOCOL.md, the blocks between ``<!-- generated: NAME -->`` and
  ``<!-- end generated -->`` (field tables, examples, the error codes, the
  events, the worked example): `catalog`, `examples`, `worked_example`;
* docs/COMMANDS.md, the blocks of the same kind that give every
  `oriflamme` subcommand's synopsis and options, from the command's own
  parser: `commands`;
* docs/protocol-v1.json and docs/protocol-v2.json, the machine-readable
  catalogs of the protocol's versions: `catalog`;
* docs/test-vectors.json, commitments, streams, shuffles and deals: `vectors`;
* docs/records/, sample game records with their verdicts: `sample_records`.

Nothing at run time imports this package: it is a tool, and the tests use
it to check that the documents and the code agree.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

PROTOCOL_DOC = Path("docs/PROTOCOL.md")
COMMANDS_DOC = Path("docs/COMMANDS.md")
CATALOGS = {version: Path(f"docs/protocol-v{version}.json") for version in (1, 2)}
VECTORS = Path("docs/test-vectors.json")
RECORDS = Path("docs/records")


def generated_files() -> dict[Path, Callable[[], bytes]]:
    """Every generated file (not the document's blocks), by path, with its maker."""
    from . import catalog, sample_records, vectors

    files: dict[Path, Callable[[], bytes]] = {
        path: partial(lambda v: catalog.catalog_json(v).encode(), version)
        for version, path in CATALOGS.items()
    }
    files[VECTORS] = lambda: vectors.vectors_json().encode()
    samples: dict[str, bytes] | None = None

    def sample(name: str) -> Callable[[], bytes]:
        def make() -> bytes:
            nonlocal samples
            if samples is None:
                samples = sample_records.samples()
            return samples[name]

        return make

    for s in sample_records.SAMPLES:
        name = s.name + sample_records.RECORD_SUFFIX
        files[RECORDS / name] = sample(name)
    files[RECORDS / "index.json"] = sample("index.json")
    return files


def documents() -> dict[Path, Callable[[], dict[str, str]]]:
    """Every document with generated blocks, with the maker of its blocks."""
    from . import catalog, commands

    return {PROTOCOL_DOC: catalog.blocks, COMMANDS_DOC: commands.blocks}


def check(root: Path = Path(".")) -> list[str]:
    """What is out of date, one line each (empty: everything agrees)."""
    from .markers import check_blocks

    problems = []
    for doc, make_blocks in documents().items():
        text = (root / doc).read_text(encoding="utf-8")
        problems += [f"{doc}: {p}" for p in check_blocks(text, make_blocks())]
    for path, make in generated_files().items():
        target = root / path
        if not target.exists() or target.read_bytes() != make():
            problems.append(f"{path} is out of date")
    return problems


def write(root: Path = Path(".")) -> list[tuple[Path, str]]:
    """Write every generated file and block; the blocks the documents lack,
    each as its document and its name."""
    from .markers import update_blocks

    missing = []
    for doc, make_blocks in documents().items():
        target = root / doc
        text = target.read_text(encoding="utf-8")
        updated, lacking = update_blocks(text, make_blocks())
        if updated != text:
            target.write_text(updated, encoding="utf-8")
        missing += [(doc, name) for name in lacking]
    for path, make in generated_files().items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        data = make()
        if not target.exists() or target.read_bytes() != data:
            target.write_bytes(data)
    return missing

"""The repository stands on its own: nothing in it sends the reader to files
outside it (nor names a path of somebody's machine), and the files it names
by their path in the repository exist.

The rules as played are docs/RULES.md and the architecture docs/DESIGN.md,
both in the repository. Notes kept beside a working copy (a sibling folder
with the rulings, the design and the rulebook texts) are not there for
someone who clones it, so no file may point at them.

The files looked at are the repository's: every file under its root but
version control and what its `.gitignore` leaves out (the virtual
environment, caches, build outputs), which is git's own list of tracked and
new files for this repository, found without starting git (the fast test
loop starts no process). A tree without a `.gitignore` skips the usual
virtual environment, cache and build folders.
"""

from __future__ import annotations

import fnmatch
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Built from parts, so that this file does not name what it forbids.
_SIBLING = "shared"
OUTSIDE = re.compile(
    "|".join(
        [
            re.escape("../" + _SIBLING),
            *(
                re.escape(f"{_SIBLING}/{name}")
                for name in ("RULINGS.md", "DESIGN.md", "UX.md", "rules/")
            ),
            # The rulebook texts' file names (three digits, an underscore,
            # sixteen hex digits): cite a rulebook by its name and section.
            r"\b\d{3}_[0-9a-f]{16}\.txt\b",
            # A path of somebody's machine (a home or work folder): name
            # files by their path in the repository.
            *(rf"(?<![\w.~-])/{folder}/" for folder in ("home", "Users", "root", "work")),
        ]
    )
)

# Skipped even without a .gitignore saying so.
SKIPPED_DIRS = {
    ".git",
    ".venv",
    "venv",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".hypothesis",
    "build",
    "dist",
}


def _ignore_rules(root: Path) -> list[tuple[str, bool]]:
    """The root `.gitignore`'s patterns, each with whether it names folders
    only. (Negations, which this repository does not use, are left out.)"""
    path = root / ".gitignore"
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    rules = []
    for line in (raw.strip() for raw in lines):
        if line and not line.startswith(("#", "!")):
            rules.append((line.rstrip("/"), line.endswith("/")))
    return rules


def _ignored(relative: str, is_dir: bool, rules: list[tuple[str, bool]]) -> bool:
    name = relative.rsplit("/", 1)[-1]
    if is_dir and (name in SKIPPED_DIRS or name.endswith(".egg-info")):
        return True
    for pattern, folders_only in rules:
        if folders_only and not is_dir:
            continue
        if "/" in pattern:  # anchored at the root
            if fnmatch.fnmatchcase(relative, pattern.lstrip("/")):
                return True
        elif fnmatch.fnmatchcase(name, pattern):
            return True
    return False


def repository_files(root: Path = ROOT) -> list[Path]:
    """Every file of the repository under `root` (see the module docstring)."""
    rules = _ignore_rules(root)
    found = []
    for folder, dirs, files in os.walk(root):
        base = Path(folder).relative_to(root).as_posix()
        prefix = "" if base == "." else base + "/"
        dirs[:] = sorted(d for d in dirs if not _ignored(prefix + d, True, rules))
        found += [Path(folder) / f for f in files if not _ignored(prefix + f, False, rules)]
    return sorted(p for p in found if p.is_file())


def outside_references(files: list[Path], root: Path = ROOT) -> list[str]:
    """`path:line: text` for every line that points outside the repository."""
    found = []
    for path in files:
        text = path.read_bytes().decode("utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            if OUTSIDE.search(line):
                found.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    return found


def test_no_file_points_outside_the_repository() -> None:
    found = outside_references(repository_files())
    assert not found, (
        "files that send the reader outside the repository (point at docs/RULES.md, "
        "docs/DESIGN.md, or a rulebook by its name and section instead):\n" + "\n".join(found)
    )


# A file named by its path from the root (`docs/SERVER.md`,
# `launcher/play.py`, `deploy/oriflamme.service`), or a Markdown link to a
# .md file, relative to the file that holds it.
TOP_FOLDERS = "docs|bench|deploy|examples|tools|tests|engine|protocol|server|client|launcher"
FILE_KINDS = "md|py|json|toml|oriflamme|yml|yaml|service|txt"
NAMED_DOC = re.compile(rf"(?<![\w./-])(?:{TOP_FOLDERS})/[\w./-]*\.(?:{FILE_KINDS})\b")
MARKDOWN_LINK = re.compile(r"\]\(([^)\s#]+\.md)(?:#[^)]*)?\)")


def missing_documents(files: list[Path], root: Path = ROOT) -> list[str]:
    """`path:line: name` for every document named that does not exist."""
    missing = []
    for path in files:
        if path.suffix not in {".md", ".py", ".toml", ".txt", ".cfg", ".yml", ".yaml"}:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            named = {m: root / m for m in NAMED_DOC.findall(line)}
            if path.suffix == ".md":
                for m in MARKDOWN_LINK.findall(line):
                    if "://" not in m:
                        named.setdefault(m, path.parent / m)
            where = path.relative_to(root).as_posix()
            missing += [
                f"{where}:{number}: {m}" for m, target in named.items() if not target.exists()
            ]
    return missing


def test_every_file_named_exists() -> None:
    missing = missing_documents(repository_files())
    assert not missing, "files named but missing:\n" + "\n".join(missing)


# A test named by its pytest id (`tests/engine/test_rulings.py::test_...`),
# as docs/RULES.md names the tests that hold each ruling.
NAMED_TEST = re.compile(r"\b(tests/[\w/]+\.py)::(\w+)")


def missing_tests(files: list[Path], root: Path = ROOT) -> list[str]:
    """`path:line: id` for every test a document names that is not defined."""
    missing = []
    for path in files:
        if path.suffix != ".md":
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            for module, name in NAMED_TEST.findall(line):
                source = root / module
                defined = source.is_file() and re.search(
                    rf"^\s*(?:async\s+)?def {name}\(",
                    source.read_text(encoding="utf-8"),
                    re.MULTILINE,
                )
                if not defined:
                    missing.append(
                        f"{path.relative_to(root).as_posix()}:{number}: {module}::{name}"
                    )
    return missing


def test_every_test_a_document_names_exists() -> None:
    missing = missing_tests(repository_files())
    assert not missing, "tests named in documents but not defined:\n" + "\n".join(missing)


def test_the_checks_can_fail(tmp_path: Path) -> None:
    """A made-up tree with a reference outside it and missing documents is
    caught, and the same tree without them passes."""
    d = "docs"  # the made-up names are built, so that this file names none
    (tmp_path / d).mkdir()
    (tmp_path / d / "GOOD.md").write_text("# Good\n", encoding="utf-8")
    bad = tmp_path / "NOTES.md"
    fine = f"See {d}/GOOD.md and [this]({d}/GOOD.md#part), [there](GOOD.md) from {d}/.\n"
    (tmp_path / d / "MORE.md").write_text(fine.replace(f"{d}/GOOD", "GOOD"), encoding="utf-8")
    bad.write_text(
        fine + f"The rulings: ../{_SIBLING}/RULINGS.md.\n"
        f"Missing: {d}/GONE.md, and [that]({d}/ALSO_GONE.md).\n"
        "A rulebook text: rules/003_" + "0123456789abcdef" + ".txt\n"
        f"Where it was made: /{'home'}/ann/oriflamme/{d}/GOOD.md, and {d}/gone.py.\n",
        encoding="utf-8",
    )
    # Ignored, and so not looked at: what .gitignore names, and a virtual
    # environment even without it.
    (tmp_path / ".gitignore").write_text("# made up\njunk/\n*.log\n", encoding="utf-8")
    for ignored in ("junk/a.md", "b.log", f"{d}/c.log", ".venv/lib/d.md"):
        (tmp_path / ignored).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / ignored).write_text(f"../{_SIBLING}/UX.md {d}/GONE.md\n", encoding="utf-8")
    files = repository_files(tmp_path)
    assert [p.relative_to(tmp_path).as_posix() for p in files] == [
        ".gitignore",
        "NOTES.md",
        f"{d}/GOOD.md",
        f"{d}/MORE.md",
    ]
    assert [line.split(":")[1] for line in outside_references(files, tmp_path)] == [
        "2",
        "4",
        "5",
    ]
    assert missing_documents(files, tmp_path) == [
        "NOTES.md:1: GOOD.md",
        f"NOTES.md:3: {d}/GONE.md",
        f"NOTES.md:3: {d}/ALSO_GONE.md",
        f"NOTES.md:5: {d}/gone.py",
    ]
    bad.write_text(fine.replace("](GOOD.md)", f"]({d}/MORE.md)"), encoding="utf-8")
    assert outside_references(files, tmp_path) == []
    assert missing_documents(files, tmp_path) == []

    tests = "tests"  # the made-up tests' paths are built too
    (tmp_path / tests).mkdir()
    (tmp_path / tests / "test_a.py").write_text("def test_here() -> None:\n", encoding="utf-8")
    a, b = f"{tests}/test_a.py::test_", f"{tests}/test_b.py::test_"
    bad.write_text(f"Held by `{a}here`, `{a}gone` and `{b}here`.\n", encoding="utf-8")
    assert missing_tests(files, tmp_path) == [f"NOTES.md:1: {a}gone", f"NOTES.md:1: {b}here"]

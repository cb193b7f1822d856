"""The catalogs' tool: extract the marked strings, merge them into each
language's ``.po``, compile, and list what is not translated.

    python -m tools.catalogs update    # `make locale`: extract, merge, compile
    python -m tools.catalogs compile   # .po -> .mo (the build does it too)
    python -m tools.catalogs missing   # what each catalog lacks

Babel does the work (a development and build requirement, not a run-time
one): it reads Python's syntax tree for ``_``, ``N_``, ``ngettext``,
``pgettext`` and ``npgettext``, knows each language's plural forms (Polish
has three) and writes and reads the ``.po`` format. The standard library's
``pygettext`` and ``msgfmt`` are scripts in CPython's source, not installed
with Python, and ``pygettext`` knows neither contexts nor plurals.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from babel.messages.catalog import Catalog, Message
from babel.messages.extract import DEFAULT_KEYWORDS, extract_from_dir
from babel.messages.pofile import read_po, write_po

from oriflamme.client import i18n
from tools.build_catalogs import DOMAIN, SOURCE, compile_catalogs

ROOT = Path(__file__).resolve().parents[1]
# What a player reads: the terminal client and the command line.
FOLDERS = ("client", "launcher")
# The languages with a catalog: every one the client speaks but its own English.
LANGUAGES = tuple(lang for lang in i18n.LANGUAGES if lang != i18n.DEFAULT)
COMMENTS = ("TRANSLATORS:",)
FIXED_DATE = datetime(2026, 11, 28, tzinfo=UTC)
# gettext's own names, and `NP_` (`oriflamme.client.i18n`): a context and a
# message, marked and translated later.
KEYWORDS = {**DEFAULT_KEYWORDS, "NP_": ((1, "c"), 2)}


def po_path(language: str) -> Path:
    return SOURCE / language / "LC_MESSAGES" / f"{DOMAIN}.po"


def extract() -> Catalog:
    """Every string marked in the code, with where it is and the comments
    for translators above it."""
    template = Catalog(project="oriflamme", fuzzy=False)
    for folder in FOLDERS:
        found = extract_from_dir(
            ROOT / folder,
            method_map=[("**.py", "python")],
            keywords=KEYWORDS,
            comment_tags=COMMENTS,
            strip_comment_tags=True,
        )
        for filename, lineno, message, comments, context in found:
            where = f"{folder}/{filename}"
            template.add(message, None, [(where, lineno)], auto_comments=comments, context=context)
    return template


def read(language: str) -> Catalog:
    with po_path(language).open("rb") as f:
        return read_po(f, locale=language)


HEADER = """\
# The {name} words of Oriflamme online's terminal client.
# Card names and game terms are the {name} rulebook's (docs/LANGUAGES.md).
# `make locale` merges the code's new strings in; tests/client/tui/test_languages.py
# checks that every one is translated, with the same placeholders."""
NAMES = {"fr": "French", "pl": "Polish"}


def write(language: str, catalog: Catalog) -> None:
    """Write `catalog` as `language`'s .po, with a header that says what it is
    (and no date that changes at every merge: git says when it changed)."""
    catalog.header_comment = HEADER.format(name=NAMES.get(language, language))
    catalog.project, catalog.version = "oriflamme", "1"
    catalog.msgid_bugs_address = "the project's issues"
    catalog.last_translator = catalog.language_team = "Oriflamme online"
    catalog.creation_date = catalog.revision_date = FIXED_DATE
    path = po_path(language)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        write_po(f, catalog, width=100, sort_output=False, ignore_obsolete=True)


def update() -> None:
    """Merge the code's strings into each catalog (a new one is started
    empty), then compile them."""
    template = extract()
    for language in LANGUAGES:
        if po_path(language).exists():
            catalog = read(language)
        else:
            catalog = Catalog(locale=language, project="oriflamme", fuzzy=False)
        catalog.update(template, no_fuzzy_matching=True)
        write(language, catalog)
    compile_catalogs()


def untranslated(catalog: Catalog) -> Iterator[Message]:
    """The messages of `catalog` with no translation (or a fuzzy one)."""
    for message in catalog:
        if not message.id:
            continue
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        if message.fuzzy or not all(strings):
            yield message


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "update"
    if command == "update":
        update()
    elif command == "compile":
        for path in compile_catalogs():
            print(path.relative_to(ROOT))
    elif command == "missing":
        missing = 0
        for language in LANGUAGES:
            for message in untranslated(read(language)):
                missing += 1
                print(f"{language}: {message.id!r} ({message.locations[0][0]})")
        return 1 if missing else 0
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The package build's step that compiles the catalogs (``.po`` to ``.mo``).

pyproject.toml names `BuildPy` as setuptools' ``build_py``: a wheel gets
``oriflamme/client/locale/<lang>/LC_MESSAGES/oriflamme.mo`` compiled from
the sources, and an editable install (``make setup``) compiles them beside
their sources, where the working copy reads them (git ignores them). Babel
is a build requirement, not a run-time one: at run time the standard
library's `gettext` reads the ``.mo`` files.

This file imports nothing of the project: setuptools loads it by its path.
"""

from __future__ import annotations

from pathlib import Path

from setuptools.command.build_py import build_py

DOMAIN = "oriflamme"
SOURCE = Path(__file__).resolve().parents[1] / "client" / "locale"


def compile_catalogs(source: Path = SOURCE, target: Path | None = None) -> list[Path]:
    """Compile every ``<lang>/LC_MESSAGES/oriflamme.po`` under `source` into
    the same place under `target` (`source` itself by default); the files
    written. A fuzzy translation is left out (English is shown for it)."""
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    written = []
    sources = sorted(source.glob(f"*/LC_MESSAGES/{DOMAIN}.po"))
    if not sources:  # (an sdist made without MANIFEST.in: a build with no languages)
        raise FileNotFoundError(f"no catalog to compile in {source}")
    for po in sources:
        with po.open("rb") as f:
            catalog = read_po(f, locale=po.parents[1].name)
        mo = (target or source) / po.relative_to(source).with_suffix(".mo")
        mo.parent.mkdir(parents=True, exist_ok=True)
        with mo.open("wb") as f:
            write_mo(f, catalog, use_fuzzy=False)
        written.append(mo)
    return written


class BuildPy(build_py):
    """setuptools' build_py, then the catalogs compiled."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            compile_catalogs()
        else:
            compile_catalogs(target=Path(self.build_lib) / "oriflamme" / "client" / "locale")

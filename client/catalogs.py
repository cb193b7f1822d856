"""The compiled catalogs: the player's language loaded from its ``.mo`` file.

The catalogs' sources are ``client/locale/<lang>/LC_MESSAGES/oriflamme.po``;
the ``.mo`` files beside them are compiled by the package's build (and by
``make setup`` for a working copy), never committed (docs/LANGUAGES.md).
"""

from __future__ import annotations

import gettext
from pathlib import Path

from . import i18n

DOMAIN = "oriflamme"
LOCALE_DIR = Path(__file__).resolve().parent / "locale"


class CatalogMissing(Exception):
    """A language whose compiled catalog is not there (a working copy not
    set up: ``make setup`` compiles them)."""


def load(language: str) -> i18n.Catalog:
    """The catalog of `language` (English: the code's own words). Raises
    `CatalogMissing` when its ``.mo`` file is not there."""
    if language == i18n.DEFAULT:
        return i18n.English()
    try:
        return gettext.translation(DOMAIN, localedir=LOCALE_DIR, languages=[language])
    except OSError as e:
        raise CatalogMissing(
            f"the {i18n.LANGUAGES.get(language, language)} catalog is not built"
            f" ({LOCALE_DIR / language / 'LC_MESSAGES' / (DOMAIN + '.mo')});"
            " `make setup` or `pip install .` builds it"
        ) from e


def install(language: str) -> str | None:
    """Speak `language` from now on; where its catalog is missing, English,
    and the reason why (for the player's terminal), else None."""
    try:
        i18n.use(load(language), language)
    except CatalogMissing as e:
        i18n.use(i18n.English(), i18n.DEFAULT)
        return f"English, since {e}"
    return None

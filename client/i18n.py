"""The player's language: which one, and the words in it.

How this works
--------------
Every string a player reads is marked in the code for gettext: ``_("...")``
where it is said, ``N_("...")`` where it is only named (a table built at
import, translated where it is shown), ``ngettext`` where a count chooses
the form (Polish has three), ``pgettext`` where one English word is two
words elsewhere (a card's name as a subject or as an object). Placeholders
are named, ``{player}``, and filled with `str.format` after translation, so
that a translation may put them in any order.

This module does no I/O: `use` installs a catalog that the shell loaded
(`oriflamme.client.catalogs`, from the compiled ``.mo`` files under
``client/locale/``), and until then, and for any string a catalog lacks,
the words are the English of the code. `choose` picks the language from
the command line, the config and the environment, as gettext does.

>>> choose(None, None, {"LANG": "pl_PL.UTF-8"})
('pl', 'LANG=pl_PL.UTF-8')
>>> choose("fr", "pl", {})
('fr', '--lang fr')
>>> choose(None, None, {"LANGUAGE": "de:fr", "LANG": "en_GB.UTF-8"})
('fr', 'LANGUAGE=de:fr')
>>> choose(None, None, {"LC_ALL": "C"})
('en', 'LC_ALL=C')
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Protocol

# The languages there are catalogs for, each named in itself.
LANGUAGES = {"en": "English", "fr": "Français", "pl": "Polski"}
DEFAULT = "en"
# gettext's order: the first of these that is set says the language.
ENVIRONMENT = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")


class Catalog(Protocol):
    """What `use` takes: `gettext.GNUTranslations` is one."""

    def gettext(self, message: str, /) -> str: ...
    def ngettext(self, singular: str, plural: str, n: int, /) -> str: ...
    def pgettext(self, context: str, message: str, /) -> str: ...


class English:
    """The code's own words: the catalog of English, and of no catalog."""

    def gettext(self, message: str, /) -> str:
        return message

    def ngettext(self, singular: str, plural: str, n: int, /) -> str:
        return singular if n == 1 else plural

    def pgettext(self, context: str, message: str, /) -> str:
        return message


_catalog: Catalog = English()
_language = DEFAULT


def use(catalog: Catalog, language: str) -> None:
    """Speak `language` from now on, in the words of `catalog`."""
    global _catalog, _language
    _catalog, _language = catalog, language


def language() -> str:
    """The language in use: ``en``, ``fr`` or ``pl``."""
    return _language


@contextmanager
def using(catalog: Catalog, lang: str) -> Iterator[None]:
    """`use` for a while (a test's screen in French), then back."""
    before = _catalog, _language
    use(catalog, lang)
    try:
        yield
    finally:
        use(*before)


def _(message: str) -> str:
    """`message` in the player's language."""
    return _catalog.gettext(message)


def N_(message: str) -> str:
    """`message` marked for translation, left as it is: it is translated
    with `_` where it is shown (the tables built at import)."""
    return message


def NP_(context: str, message: str) -> tuple[str, str]:
    """`message` in the sense `context` gives it, marked for translation and
    left as it is: ``pgettext(*NP_(...))`` translates it where it is shown."""
    return context, message


def ngettext(singular: str, plural: str, n: int) -> str:
    """The form of `singular`/`plural` that the count `n` takes."""
    return _catalog.ngettext(singular, plural, n)


def pgettext(context: str, message: str) -> str:
    """`message` in the sense `context` gives it."""
    return _catalog.pgettext(context, message)


def lookup(table: Mapping[str, str | tuple[str, str]], key: str, default: str) -> str:
    """`table`'s entry for `key` (marked with `N_` or `NP_`) in the player's
    language; `default` where there is none.

    >>> lookup({"spy": NP_("card", "Spy")}, "spy", "?"), lookup({}, "spy", "?")
    ('Spy', '?')
    """
    marked = table.get(key)
    if marked is None:
        return default
    return _catalog.pgettext(*marked) if isinstance(marked, tuple) else _catalog.gettext(marked)


# French elides "de" before a vowel: a translation's "{card} de {player}"
# says "l'Espion d'Ann" (a name's "h" is left alone: muet or aspiré).
_ELISION = re.compile(r"\bde (?=[AEIOUYÀÂÄÉÈÊËÎÏÔÖÙÛÜŒaeiouyàâäéèêëîïôöùûüœ])")


def elide(text: str) -> str:
    """`text` as the player's language writes the names put into it
    (French: "de Ann" is "d'Ann"); as it is in the others.

    >>> with using(English(), "fr"):
    ...     elide("l'Espion de Ann, le Soldat de Bo")
    "l'Espion d'Ann, le Soldat de Bo"
    """
    return _ELISION.sub("d'", text) if _language == "fr" else text


def language_of(value: str) -> str | None:
    """The language a locale name or a `--lang` names, if there is a catalog
    for it: ``fr`` for ``fr_CA.UTF-8@euro``, None for ``de`` or ``C``.

    >>> language_of("pl_PL.UTF-8"), language_of("FR"), language_of("C.UTF-8")
    ('pl', 'fr', None)
    """
    code = value.split(".")[0].split("@")[0].split("_")[0].split("-")[0].lower()
    return code if code in LANGUAGES else None


def choose(flag: str | None, setting: str | None, environ: Mapping[str, str]) -> tuple[str, str]:
    """The language to speak, and what chose it: `flag` (``--lang``), then
    the config's `setting`, then the environment as gettext reads it (the
    first of `ENVIRONMENT` set; ``LANGUAGE`` may list several, the first
    known wins). Anything unknown means English."""
    if flag and (found := language_of(flag)):
        return found, f"--lang {flag}"
    if setting and (found := language_of(setting)):
        return found, N_("the config's lang setting")
    for name in ENVIRONMENT:
        value = environ.get(name, "")
        if not value:
            continue
        for entry in value.split(":"):
            found = language_of(entry)
            if found:
                return found, f"{name}={value}"
        return DEFAULT, f"{name}={value}"
    return DEFAULT, N_("nothing set")

"""Text from others made safe to print, and fitted to a width.

Nothing the server or another player sends is printed raw: a name or a
chat line could carry escape sequences that move the cursor, change the
window title or worse. `safe` keeps printable characters only.

>>> safe("Ann\\x1b[2J\\x07 the\\tgreat")
'Ann[2J the great'
>>> fit("Shapeshifter", 8), fit("Spy", 6) + "|"
('Shapesh…', 'Spy   |')

Widths are counted in terminal cells, not characters: an East Asian wide
character takes two, a combining mark none.

>>> cells("山田"), fit("山田太郎", 5) + "|"
(4, '山田…|')

Glyphs: the lines, marks and arrows the screens draw (``─ │ ▶ ◆ ▒ …``...)
are Unicode. A terminal that cannot show them gets `ascii_glyphs` of each
line, as the app draws it: every glyph has a stand-in of one ASCII
character (`ASCII_GLYPHS`), so a line keeps its width to the cell. Names
and chat are text, not glyphs: only the characters in the table change.

>>> ascii_glyphs("─ Queue · ▶ Spy ◆×3 Shapesh…")
'- Queue - > Spy $x3 Shapesh.'
"""

from __future__ import annotations

import unicodedata

from ..i18n import ngettext

# Each glyph the screens draw, and the one ASCII character that stands for it.
ASCII_GLYPHS = {
    "─": "-",  # rules
    "│": "|",  # between the players and the log
    "▶": ">",  # the card being resolved
    "▸": ">",  # whose turn; the line chosen
    "◆": "$",  # Influence (not "*": that marks a card changed)
    "×": "x",  # a stack: ×2
    "▒": "#",  # a card face down
    "⏱": "@",  # the clock
    "…": ".",  # cut short
    "·": "-",
    "»": ">",  # a chat line
    "▏": "_",  # the cursor of a line being typed
    "←": "<",
    "→": ">",
    "↑": "^",
    "↓": "v",
}
_ASCII_TABLE = str.maketrans(ASCII_GLYPHS)


def ascii_glyphs(text: str) -> str:
    """`text` with each glyph of `ASCII_GLYPHS` in ASCII, in as many cells."""
    return text if text.isascii() else text.translate(_ASCII_TABLE)


def timer_words(seconds: int) -> str:
    """A turn timer as people say it.

    >>> timer_words(30), timer_words(300), timer_words(3600), timer_words(172800)
    ('30 s', '5 min', '1 h', '2 days')
    """
    if seconds >= 86400 and seconds % 86400 == 0:
        days = seconds // 86400
        return ngettext("{count} day", "{count} days", days).format(count=days)
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{seconds // 3600} h"
    if seconds >= 120 and seconds % 60 == 0:
        return f"{seconds // 60} min"
    return f"{seconds} s"


def safe(text: str, limit: int = 200) -> str:
    """`text` without control or format characters (tabs and newlines
    become spaces), at most `limit` characters."""
    out = []
    for ch in text[: limit * 2]:
        if ch in "\t\n\r":
            out.append(" ")
        elif unicodedata.category(ch)[0] != "C":
            out.append(ch)
    return "".join(out)[:limit]


def char_cells(ch: str) -> int:
    """The cells one character takes in a terminal (an unassigned one: 1)."""
    category = unicodedata.category(ch)
    if category == "Cn":
        return 1
    if unicodedata.combining(ch) or category in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def cells(text: str) -> int:
    """The cells `text` takes in a terminal."""
    if text.isascii():
        return len(text)
    return sum(char_cells(ch) for ch in text)


def cut(text: str, width: int) -> str:
    """The longest start of `text` that fits in `width` cells."""
    if cells(text) <= width:
        return text
    out, used = [], 0
    for ch in text:
        w = char_cells(ch)
        if used + w > width:
            break
        out.append(ch)
        used += w
    return "".join(out)


def fit(text: str, width: int) -> str:
    """`text` cut (with an ellipsis) or padded to exactly `width` cells."""
    if width <= 0:
        return ""
    if cells(text) > width:
        text = cut(text, width - 1) + "…"
    return text + " " * (width - cells(text))


def edited(line: str, key: str, limit: int) -> str:
    """`line` after one key of a line being typed: ``backspace`` takes the
    last character back, a printable character is added (up to `limit`),
    anything else changes nothing.

    >>> edited("hell", "o", 200), edited("hello", "backspace", 200), edited("abc", "d", 3)
    ('hello', 'hell', 'abc')
    """
    if key == "backspace":
        return line[:-1]
    if len(key) == 1 and key.isprintable() and len(line) < limit:
        return line + key
    return line

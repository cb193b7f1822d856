"""Text from others made safe to print, and fitted to a width.

Nothing the server or another player sends is printed raw: a name or a
chat line could carry escape sequences that move the cursor, change the
window title or worse. `safe` keeps printable characters only.

>>> safe("Ann\\x1b[2J\\x07 the\\tgreat")
'Ann[2J the great'
>>> fit("Shapeshifter", 8), fit("Spy", 6) + "|"
('Shapesh…', 'Spy   |')
"""

from __future__ import annotations

import unicodedata


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


def fit(text: str, width: int) -> str:
    """`text` cut (with an ellipsis) or padded to exactly `width` characters."""
    if width <= 0:
        return ""
    if len(text) > width:
        return text[: width - 1] + "…"
    return text.ljust(width)

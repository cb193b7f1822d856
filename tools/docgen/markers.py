"""The generated blocks of a hand-written document, and how they are kept up to date.

A block is everything between ``<!-- generated: NAME -->`` (and its line's
end) and ``<!-- end generated -->``; the rest of the document is written by
hand and left alone. docs/PROTOCOL.md (`catalog`) and docs/COMMANDS.md
(`commands`) have such blocks.

>>> doc = "Hand-written.\\n<!-- generated: x -->\\nold\\n<!-- end generated -->\\nMore.\\n"
>>> check_blocks(doc, {"x": "new\\n", "y": "why\\n"})
["block 'x' is out of date", "block 'y' is missing"]
>>> update_blocks(doc, {"x": "new\\n", "y": "why\\n"})
('Hand-written.\\n<!-- generated: x -->\\nnew\\n<!-- end generated -->\\nMore.\\n', ['y'])
"""

from __future__ import annotations

import re

BEGIN = "<!-- generated: {} -->"
END = "<!-- end generated -->"
_BLOCK = re.compile(
    r"<!-- generated: (?P<name>[a-z0-9_:-]+) -->\n(?P<body>.*?)<!-- end generated -->", re.S
)


def update_blocks(text: str, wanted: dict[str, str]) -> tuple[str, list[str]]:
    """`text` with every block of `wanted` brought up to date, and the names of
    blocks `wanted` has but the document lacks (to be placed by hand)."""
    seen: set[str] = set()

    def replace(match: re.Match[str]) -> str:
        name = match.group("name")
        seen.add(name)
        body = wanted.get(name)
        if body is None:
            return match.group(0)  # reported by check_blocks
        return BEGIN.format(name) + "\n" + body + END

    return _BLOCK.sub(replace, text), [name for name in wanted if name not in seen]


def check_blocks(text: str, wanted: dict[str, str]) -> list[str]:
    """Problems with the document's blocks: missing, stale, unknown, repeated."""
    problems = []
    counts: dict[str, int] = {}
    for match in _BLOCK.finditer(text):
        name = match.group("name")
        counts[name] = counts.get(name, 0) + 1
        if name not in wanted:
            problems.append(f"block {name!r} names nothing in the code")
        elif match.group("body") != wanted[name]:
            problems.append(f"block {name!r} is out of date")
    problems += [f"block {name!r} appears {n} times" for name, n in counts.items() if n > 1]
    problems += [f"block {name!r} is missing" for name in wanted if name not in counts]
    return problems

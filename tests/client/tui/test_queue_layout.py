"""The Influence Queue's layout (issue 25, item 9): the width there is, card
names in full or in a documented short form, never an ellipsis running into
the next card's mark, owners' names in full or their letter alone, and a
queue on several rows that reads on as one line (a "snake": each row goes on
under the end of the one above, back the other way), in both directions.

Checked at 80x24 (the minimum) and 120x40, with 2 to 5 players, on real
games and on hand-built queues up to 30 cards (5 players, 6 rounds).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from oriflamme.client.narrator import KIND_NAMES, kind_name
from oriflamme.client.tui.screen import Line, render
from tests.engine.builders import position

from .helpers import NAMES, scene_of, screen_text, text, walk

DOCS = Path(__file__).resolve().parents[3] / "docs" / "CLIENT.md"
SIZES = [(80, 24), (120, 40)]
TABLES = [(2, 21), (3, 22), (4, 23), (5, 24)]  # (players, seed)
KINDS = list(KIND_NAMES)
FAMILIES = ["red", "blue", "green", "yellow", "black"]


def documented_forms() -> dict[str, list[str]]:
    """Each card's names in the queue, from docs/CLIENT.md's table of short
    forms: the full name first."""
    forms = {kind: [name] for kind, name in ((k, kind_name(k)) for k in KIND_NAMES)}
    by_name = {name: kind for kind, name in ((k, kind_name(k)) for k in KIND_NAMES)}
    for line in DOCS.read_text(encoding="utf-8").splitlines():
        row = re.match(r"\s*\| ([A-Z][a-z]+(?: [A-Z][a-z]+)?) \| (`.*`) \|\s*$", line)
        if row and row.group(1) in by_name:
            forms[by_name[row.group(1)]] += re.findall(r"`([^`]+)`", row.group(2))
    return forms


def queue_rows(lines: list[Line]) -> list[Line]:
    """The lines between the queue's rule and the next rule."""
    shown = [text(line) for line in lines]
    start = next(i for i, t in enumerate(shown) if t.startswith("─ Influence Queue")) + 1
    end = next(i for i in range(start, len(shown)) if shown[i].startswith("─"))
    return lines[start:end]


def cards(lines: list[Line]) -> list[dict[str, Any]]:
    """Every card of the queue as drawn: its number, the row of cards it is
    on, the columns of its mark and of its label, its label and style, and
    its owner's line (the owner's fragment and what follows)."""
    rows = [line for line in queue_rows(lines) if not text(line).startswith("  gone")]
    out = []
    for r in range(0, len(rows) - 1, 2):
        top, below = rows[r], rows[r + 1]
        column = 0
        for i, (style, piece) in enumerate(top):
            if "class:card." in style:
                mark_column = column - sum(len(t) for _, t in top[i - 3 : i])
                out.append(
                    {
                        "number": int(top[i - 2][1]),
                        "row": r // 2,
                        "column": mark_column,
                        "label_column": column,
                        "label": piece,
                        "style": style,
                        "line": text(top),
                        "owner": owner_at(below, column - 3),
                    }
                )
            column += len(piece)
    return out


def owner_at(line: Line, start: int) -> str:
    """The owner's text (name, Influence, stack) of the cell starting at
    column `start` of an owner line."""
    column = 0
    said: list[str] = []
    for style, piece in line:
        if column >= start and (style.startswith("class:owner.") or style == "class:tokens"):
            if style.startswith("class:owner.") and said:
                break
            said.append(piece)
        column += len(piece)
    return "".join(said).strip()


def long_queue(n: int, players: int, direction: str = "left-to-right") -> Any:
    """A queue of `n` cards (at most what 6 rounds place: 6 a player, 12 in
    the 2-player variant), the families in turn, some face up, some with
    Influence; every hand holds a Royal Decree (none is in the queue)."""
    two = players == 2
    families = FAMILIES[: 4 if two else players]
    assert n <= 6 * len(families)
    kinds = [kind for kind in KINDS if kind != "royal_decree"]
    specs = []
    for i in range(n):
        f, nth = i % len(families), i // len(families)
        kind = kinds[(nth * 2 + f) % len(kinds)]  # each family's kinds all different
        specs.append(
            f"{families[f]} {kind}{' up' if i % 3 == 0 else ''}{' 2t' if i % 4 == 1 else ''}"
        )
    hands = [[f"{FAMILIES[2 * s if two else s]} royal_decree"] for s in range(players)]
    return position(
        specs,
        players=players,
        variant="two-player" if two else "standard",
        round=6,
        direction=direction,
        hands=hands,
    )


def most(players: int) -> int:
    """The most cards 6 rounds can put in the queue."""
    return 6 * (4 if players == 2 else players)


# ---------------------------------------------------------------- the width there is


def test_an_eleven_card_queue_takes_one_row_at_120_columns() -> None:
    """Issue 25: "At 120 columns an 11-card queue still takes two rows"."""
    g = long_queue(11, 4)
    drawn = cards(render(scene_of(g, names=["You", "Bot 1", "Bot 2", "Bot 3"]), 120, 40))
    assert sorted(c["number"] for c in drawn) == list(range(1, 12))
    assert {c["row"] for c in drawn} == {0}


@pytest.mark.parametrize(("width", "height"), SIZES)
@pytest.mark.parametrize("players", [2, 3, 4, 5])
@pytest.mark.parametrize("n", [1, 5, 9, 11, 15, 20, 30])
def test_long_queues_keep_every_card_and_the_screen_its_shape(
    width: int, height: int, players: int, n: int
) -> None:
    n = min(n, most(players))
    g = long_queue(n, players)
    lines = render(scene_of(g, names=NAMES[:players]), width, height)
    assert len(lines) == height
    assert all(sum(len(t) for _, t in line) == width for line in lines)
    drawn = cards(lines)
    assert sorted(c["number"] for c in drawn) == list(range(1, n + 1))
    rows = len({c["row"] for c in drawn})
    at_least = 11 if width >= 120 else 7  # cards a row: as many as fit
    assert rows == -(-n // at_least)


# ---------------------------------------------------------------- names


def check_names(lines: list[Line], names: list[str], seat: int = 0) -> None:
    """Every label is a card back, a card's full name or one of its
    documented short forms (in parentheses for our own face-down card); no
    ellipsis; a space before every cell's mark; every owner's line names
    the owner in full, or by the letter alone."""
    forms = {form for kind_forms in documented_forms().values() for form in kind_forms}
    rows = "\n".join(text(line) for line in queue_rows(lines))
    assert "…" not in rows
    for card in cards(lines):
        label = card["label"].strip()
        if card["style"].startswith("class:card.mine"):
            assert label.startswith("(") and label.endswith(")"), label
            label = label[1:-1]
        if "class:card.back" in card["style"]:
            assert label and set(label) == {"▒"}, label
        else:
            assert label in forms, label
        if card["column"] > 0:  # a gap before the mark: nothing runs into ▶ or *
            assert card["line"][card["column"] - 1] == " ", card["line"]
        owner = re.sub(r" ?(◆+|◆×\d+)? ?(×\d+)?$", "", card["owner"])
        letter, _, name = owner.partition(" ")
        assert len(letter) == 1 and letter.isalpha(), card["owner"]
        allowed = {"", "You", *names, *FAMILIES, *(f[:3] for f in FAMILIES)}
        assert name in allowed, card["owner"]


@pytest.mark.parametrize(("width", "height"), SIZES)
@pytest.mark.parametrize(("players", "seed"), TABLES)
def test_names_in_full_or_documented_in_real_games(
    width: int, height: int, players: int, seed: int
) -> None:
    names = ["You", "Bot 1", "Bot 2", "Bot 3", "Bot 4"][:players]
    for g, log in walk(players, seed):
        check_names(render(scene_of(g, log, names=names), width, height), names)


@pytest.mark.parametrize(("width", "height"), SIZES)
@pytest.mark.parametrize("n", [4, 11, 15, 30])
def test_names_in_full_or_documented_in_long_queues(width: int, height: int, n: int) -> None:
    names = ["Ann", "Bolivar Bartholomew", "Cy", "Dimitri", "Ed"]
    for direction in ("left-to-right", "right-to-left"):
        g = long_queue(n, 5, direction)
        check_names(render(scene_of(g, names=names), width, height), names)


def test_full_names_where_they_fit() -> None:
    """Issue 25: `Shapeshift`, `(Conspirac…` at 120 columns with room to spare."""
    g = position(
        [
            "red conspiracy 3t",
            ["blue lord", "blue shapeshifter up 3t"],
            "green assassination up",
            "red royal_decree",
            "blue soldier",
        ],
        step="reveal",
        index=3,
    )
    drawn = cards(render(scene_of(g, names=["Ann", "Bolivar", "Cy"]), 120, 40))
    assert [c["label"].strip() for c in drawn] == [
        "(Conspiracy)",
        "Shapeshifter",
        "Assassination",
        "(Royal Decree)",
        "▒▒▒▒▒▒▒",
    ]
    assert [c["owner"] for c in drawn] == [
        "A You ◆◆◆",
        "B Bolivar ◆◆◆ ×2",
        "C Cy",
        "A You",
        "B Bolivar",
    ]


def test_an_owner_too_long_for_the_cell_is_named_by_letter() -> None:
    """Issue 25: `T Bot… ◆◆◆`: a cut name says nothing (Bot 1? Bot 3?)."""
    g = long_queue(11, 4)
    names = ["You", "Bot 1", "Bot 2", "Tobias the Third"]
    drawn = cards(render(scene_of(g, names=names), 120, 40))
    theirs = [c["owner"] for c in drawn if c["owner"].startswith("T")]
    assert theirs and all(not o.startswith("T Tob") for o in theirs), theirs


# ---------------------------------------------------------------- reading order


def grid(drawn: list[dict[str, Any]]) -> dict[int, tuple[int, int]]:
    """Each card's (row, column of the grid)."""
    columns = sorted({c["label_column"] for c in drawn})
    return {c["number"]: (c["row"], columns.index(c["label_column"])) for c in drawn}


@pytest.mark.parametrize(("width", "height"), SIZES)
@pytest.mark.parametrize("direction", ["left-to-right", "right-to-left"])
@pytest.mark.parametrize("n", [9, 11, 15, 23, 30])
def test_a_wrapped_queue_reads_on_as_one_line(
    width: int, height: int, direction: str, n: int
) -> None:
    """Issue 25: right to left on two rows put card 4 at the left of row 1
    and card 5 at the right of row 2. Now each row goes on under the end of
    the one above: consecutive cards (neighbours in the queue) are always
    side by side, or one above the other where the queue turns."""
    g = long_queue(n, 5, direction)
    at = grid(cards(render(scene_of(g), width, height)))
    assert sorted(at) == list(range(1, n + 1))
    first_step = 1 if direction == "left-to-right" else -1
    for number in range(1, n):
        (row, column), (next_row, next_column) = at[number], at[number + 1]
        step = first_step if row % 2 == 0 else -first_step
        if next_row == row:
            assert next_column == column + step, (number, at)
        else:  # the turn: straight below
            assert (next_row, next_column) == (row + 1, column), (number, at)


def test_the_right_to_left_queue_of_the_issue() -> None:
    """9 cards right to left at 80 columns: 1 at the right end of the first
    row; the second row starts under the first row's last card, at the left."""
    g = long_queue(9, 3, "right-to-left")
    lines = render(scene_of(g), 80, 24)
    at = grid(cards(lines))
    rows = [[n for n in sorted(at, key=lambda n: at[n][1]) if at[n][0] == r] for r in range(2)]
    assert rows == [[5, 4, 3, 2, 1], [6, 7, 8, 9]], screen_text(queue_rows(lines))

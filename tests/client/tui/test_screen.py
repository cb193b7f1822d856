"""`screen.render`: the game screen as lines of styled text, from positions
of real games (2 to 5 players) and hand-built ones.

What is checked: the shape (exactly `height` lines of exactly `width`
cells, at every size), the queue (stacks, Influence, our own face-down
cards, other seats' card backs, the card being resolved, the numbering in
the direction chosen), what never shows (another seat's hidden card), the
"too small" message, the help screen, the end of the game, and the
monochrome and colour style sheets.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prompt_toolkit.utils import get_cwidth

from oriflamme.client.narrator import KIND_NAMES, card_name, kind_name
from oriflamme.client.tui import app
from oriflamme.client.tui.screen import (
    BACK,
    HELP_KEYS,
    MIN_HEIGHT,
    MIN_WIDTH,
    EndSummary,
    Scene,
    _panels,
    _players,
    label_of,
    log_entry_lines,
    out_lines,
    queue_names,
    render,
    set_aside_text,
    short_name,
    tiny_name,
)
from oriflamme.client.tui.text import cells
from oriflamme.client.tui.words import ABILITIES
from oriflamme.client.view import TableView
from oriflamme.engine import FAMILY_NAMES, card
from tests.engine.builders import position

from .helpers import NAMES, chooser_of, queue_cells, scene_of, screen_text, text, walk

SIZES = [(80, 24), (100, 30), (120, 40), (200, 50)]
TABLES = [(2, 11), (3, 12), (4, 13), (5, 14)]  # (players, seed)


def assert_shape(lines: list, width: int, height: int) -> None:
    assert len(lines) == height
    for i, line in enumerate(lines):
        assert sum(cells(t) for _, t in line) == width, (i, text(line))
        assert all(isinstance(s, str) and isinstance(t, str) for s, t in line)
        assert "\n" not in text(line) and "\x1b" not in text(line)


# ---------------------------------------------------------------- shape


@pytest.mark.parametrize(("players", "seed"), TABLES)
def test_every_position_of_a_game_fills_the_screen_exactly(players: int, seed: int) -> None:
    renders = 0
    for g, log in walk(players, seed):
        scene = scene_of(g, log)
        for width, height in SIZES:
            lines = render(scene, width, height)
            assert_shape(lines, width, height)
            renders += 1
        if g.over:
            end = EndSummary(scores=g.scores, winners=g.winners, verified="Verified: yes")
            for width, height in SIZES:
                assert_shape(render(scene_of(g, log, end=end), width, height), width, height)
    assert renders > 4 * 30


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
@given(
    players=st.integers(2, 5),
    seed=st.integers(0, 10_000),
    steps=st.integers(0, 150),
    width=st.integers(MIN_WIDTH, 240),
    height=st.integers(MIN_HEIGHT, 80),
    seat=st.integers(0, 4),
    status=st.text(max_size=120),
)
def test_any_position_at_any_size_fills_the_screen_exactly(
    players: int, seed: int, steps: int, width: int, height: int, seat: int, status: str
) -> None:
    seat %= players
    for i, (g, log) in enumerate(walk(players, seed, seat=seat)):  # noqa: B007 -- used below
        if i == steps or g.over:
            break
    scene = scene_of(g, log, seat=seat, status=status.replace("\n", " "), seconds_left=75)
    assert_shape(render(scene, width, height), width, height)


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_before_the_game_and_for_a_spectator(width: int, height: int) -> None:
    waiting = render(Scene(view=None, names=["Ann", "Bo"]), width, height)
    assert_shape(waiting, width, height)
    assert "Waiting for the game to begin" in screen_text(waiting)
    for g, log in walk(3, 5):  # noqa: B007 -- used below
        if g.round == 3:
            break
    spectator = render(
        Scene(view=TableView.of(g, None), names=NAMES[:3], seat=None, log=log.lines), width, height
    )
    assert_shape(spectator, width, height)
    assert "Spectating: every hand is hidden" in screen_text(spectator)
    assert all(
        c["label"].strip() == BACK or c["style"] == "class:card.up" for c in queue_cells(spectator)
    )


def test_the_decision_and_status_lines_stay_on_screen_at_80x24() -> None:
    """However long the queue and the log, the bottom of the screen (our
    choice, and the status line) is never pushed off."""
    for players, seed in TABLES:
        for g, log in walk(players, seed):
            d = g.decision
            if d is None or d.seat != 0 or d.kind == "open":
                continue
            scene = scene_of(g, log, status="Card 9 is not yours")
            lines = [text(line) for line in render(scene, 80, 24)]
            assert scene.chooser is not None
            heading = scene.chooser.heading
            assert heading.startswith(("Your turn: ", "Your "))
            assert any(line.startswith(f"─ {heading} ─") for line in lines), heading
            assert lines[-1].startswith(" Card 9 is not yours")


def test_our_own_decision_not_offered_is_not_waiting_for_you() -> None:
    """Issue 25: disconnected on our own turn, the screen said "Waiting for
    You to place a card…"."""
    g, log = next(
        (g, log)
        for g, log in walk(3, 12)
        if g.decision is not None and g.decision.seat == 0 and g.decision.kind == "place"
    )
    shown = screen_text(render(scene_of(g, log, chooser=None), 80, 24))
    assert "Waiting for You" not in shown
    assert "Your turn to place a card: waiting for the server…" in shown
    theirs = next(
        (g, log) for g, log in walk(3, 12) if g.decision is not None and g.decision.seat == 1
    )
    assert "Waiting for Bo " in screen_text(render(scene_of(*theirs), 80, 24))


def test_every_offer_is_visible_at_80x24_in_real_games() -> None:
    for players, seed in TABLES:
        for g, log in walk(players, seed):
            d = g.decision
            if d is None or d.seat != 0 or d.kind == "open":
                continue
            chooser = chooser_of(g)
            bottom = screen_text(render(scene_of(g, log, chooser=chooser), 80, 24)).split(
                chooser.heading
            )[1]
            for offer in chooser.offers():
                assert offer.shown[:40] in bottom  # its key, and its label (a long one is cut)


def test_every_offer_is_visible_with_many_cards_of_ours_to_cover() -> None:
    # 2-player, round 5: 16 cards placed so far, 7 of them red cards of seat 0.
    ours = ["red lord", "red spy", "red heir", "red archer", "red soldier", "red ambush"]
    ours += ["red shapeshifter", "blue lord"]
    theirs = ["green lord", "green spy", "green heir", "green archer", "green soldier"]
    theirs += ["yellow lord", "yellow spy", "yellow heir"]
    g = position(
        [card for pair in zip(ours, theirs, strict=True) for card in pair],
        players=2,
        variant="two-player",
        round=5,
        hands=[["red conspiracy", "blue spy"], ["green ambush"]],
    )
    chooser = chooser_of(g)
    chooser.press("2")  # the Conspiracy (the hand by family: blue, then red)
    assert len(chooser.offers()) == 9
    lines = render(scene_of(g, chooser=chooser), 80, 24)
    bottom = screen_text(lines).split("Your turn")[1]
    missing = [o.shown for o in chooser.offers() if o.shown[:40] not in bottom]
    assert missing == []


# ---------------------------------------------------------------- the queue


@pytest.mark.parametrize(("players", "seed"), TABLES)
def test_the_queue_shows_each_card_as_its_owner_may_see_it(players: int, seed: int) -> None:
    for g, log in walk(players, seed):
        lines = render(scene_of(g, log), 120, 40)
        cells = {c["number"]: c for c in queue_cells(lines)}
        assert sorted(cells) == list(range(1, len(g.queue) + 1))
        for i, slot in enumerate(g.queue):
            top, cell = slot[-1], cells[i + 1]
            kind = top.kind.label if top.kind is not None else None
            if top.face_up:
                assert cell["style"].split()[0] == "class:card.up" and kind is not None
                assert cell["label"].strip() in queue_names(kind)
            elif top.owner == 0:
                assert cell["style"].split()[0] == "class:card.mine" and kind is not None
                assert cell["label"].strip()[1:-1] in queue_names(kind)
            else:  # another seat's face-down card: its back in its colour, never its name
                family = FAMILY_NAMES[top.card.family]
                assert cell["style"].split()[:2] == [f"class:owner.{family}", "class:card.back"]
                assert set(cell["label"].strip()) == set(BACK)  # (as wide as the cell allows)
            # the owner's initial (the name after it is cut to make room for ◆ and ×N)
            assert cell["below"][0] == NAMES[top.owner][0]  # (the same on every screen)
            if len(slot) > 1:
                assert cell["below"].endswith(f" ×{len(slot)}")
            else:
                assert "×" not in cell["below"] or top.tokens > 3
            diamonds = cell["below"].count("◆")
            assert diamonds == (top.tokens if top.tokens <= 3 else 1)


@pytest.mark.parametrize(("players", "seed"), TABLES)
def test_the_screen_never_depends_on_another_seats_hidden_cards(players: int, seed: int) -> None:
    """Given every identity (the full state), the screen for seat 0 is the
    same as from seat 0's view: nothing seat 0 may not know is drawn."""
    for g, log in walk(players, seed):
        seen = scene_of(g, log)
        everything = scene_of(g, log, view=TableView.of(g, 0, everything=True))
        assert render(everything, 100, 30) == render(seen, 100, 30)


def test_no_name_of_another_seats_face_down_card_is_in_the_queue_rows() -> None:
    g = position(
        ["red spy", "blue lord", ["green heir", "green archer"], "blue soldier up", "green ambush"],
        round=3,
    )
    lines = render(scene_of(g), 100, 30)
    rows = screen_text(lines).split("Influence Queue")[1].split("─ Players")[0]
    assert "(Spy)" in rows and "Soldier" in rows
    for hidden in ("Lord", "Heir", "Archer", "Ambush"):
        assert hidden not in rows
    assert rows.count(BACK) == 3


def test_stacks_and_influence() -> None:
    g = position(
        [
            "red spy",
            "blue lord 1t",
            ["green heir", "green archer 3t"],
            "blue soldier up",
            ["red lord", "red heir", "red archer 4t"],
            "green ambush 12t",
        ],
        round=4,
    )
    cells = queue_cells(render(scene_of(g), 100, 30))
    below = {c["number"]: c["below"] for c in cells}
    assert "◆" not in below[1] and "×" not in below[1]
    assert below[2].endswith(" ◆")
    assert below[3].endswith(" ◆◆◆ ×2")
    assert "◆" not in below[4]
    assert below[5].endswith(" ◆×4 ×3")
    assert below[6].endswith(" ◆×12")
    assert below[5].startswith("A") and below[6].startswith("C ")


def test_the_resolving_card_has_the_arrow() -> None:
    arrows = 0
    for players, seed in TABLES:
        for g, log in walk(players, seed):
            cells = queue_cells(render(scene_of(g, log), 100, 30))
            marked = [c["number"] for c in cells if c["mark"] == "▶"]
            assert all(c["mark"] in ("▶", " ") for c in cells)
            if g.step in ("place", "direction", "over"):
                assert marked == []
            else:
                assert marked == [g.cursor.index + 1]
                assert "class:resolving" in next(
                    c["number_style"] for c in cells if c["number"] == g.cursor.index + 1
                )
                arrows += 1
    assert arrows > 20


@pytest.mark.parametrize("direction", ["left-to-right", "right-to-left"])
def test_positions_are_numbered_in_the_direction_of_resolution(direction: str) -> None:
    g = position(
        ["red spy", "blue lord", "green heir", "red soldier up", "blue ambush", "green archer"],
        direction=direction,
        step="reveal",
        index=2,
    )
    lines = render(scene_of(g), 80, 24)
    numbers = [c["number"] for c in queue_cells(lines)]
    expected = [1, 2, 3, 4, 5, 6]
    assert numbers == (expected if direction == "left-to-right" else expected[::-1])
    how = "left to right" if direction == "left-to-right" else "right to left"
    assert f"1 resolves first, {how}" in screen_text(lines)


def test_the_positions_a_choice_can_take_are_highlighted() -> None:
    g = position(
        ["red spy", "blue lord", "red soldier up", "green heir", "blue ambush"],
        step="eliminate",
        index=2,
        ability="soldier",
    )
    chooser = chooser_of(g)
    cells = queue_cells(render(scene_of(g, chooser=chooser), 100, 30))
    lit = {c["number"] for c in cells if c["number_style"].startswith("class:highlight")}
    assert lit == {2, 4} == chooser.highlighted
    assert all(("class:highlight" in c["style"]) == (c["number"] in lit) for c in cells)


def test_a_long_queue_wraps_and_keeps_every_card() -> None:
    kinds = ["lord", "spy", "heir", "archer", "soldier", "ambush", "conspiracy", "assassination"]
    queue = [f"{family} {kind}" for kind in kinds for family in ("red", "blue", "green")]
    g = position(queue, round=6, hands=[["red royal_decree"], ["blue royal_decree"], []])
    for width, height in SIZES:
        lines = render(scene_of(g), width, height)
        assert_shape(lines, width, height)
        assert sorted(c["number"] for c in queue_cells(lines)) == list(range(1, 25))


def card_columns(lines: list) -> dict[int, tuple[int, int]]:
    """Each card's (row, column) in the queue: the row of cards, and the
    column where its number ends."""
    shown = [text(line) for line in lines]
    start = next(i for i, t in enumerate(shown) if t.startswith("─ Influence Queue")) + 1
    end = next(i for i in range(start, len(shown)) if shown[i].startswith("─"))
    at = {}
    for row in range(start, end, 2):
        for match in re.finditer(r"[ ▶] ?(\d+) ", shown[row]):
            at[int(match.group(1))] = ((row - start) // 2, match.end(1))
    return at


@pytest.mark.parametrize("direction", ["left-to-right", "right-to-left"])
def test_a_wrapped_queue_reads_on_from_row_to_row_in_its_direction(direction: str) -> None:
    """Each row holds consecutive positions. The first is drawn in the
    direction of resolution, and the next goes on under its end, back the
    other way (issue 25: right to left, card 4 was at the left of row 1 and
    card 5 at the right of row 2), so that a card's neighbours are always
    beside it, or below it where the queue turns."""
    kinds = ["spy", "lord", "heir", "archer", "soldier", "ambush", "conspiracy", "assassination"]
    g = position(
        [f"{family} {kind}" for kind in kinds[:3] for family in ("red", "blue", "green")],
        direction=direction,
        round=4,
        hands=[["red royal_decree"], ["blue royal_decree"], []],
    )
    lines = render(scene_of(g), 80, 24)
    at = card_columns(lines)
    assert sorted(at) == list(range(1, 10))
    rows = [[n for n in sorted(at) if at[n][0] == r] for r in range(2)]
    assert rows == [[1, 2, 3, 4, 5], [6, 7, 8, 9]]  # consecutive, shared out evenly
    step = 1 if direction == "left-to-right" else -1
    for row in rows:
        columns = [at[n][1] for n in row]
        assert columns == sorted(columns)[::step]
        step = -step  # the next row: back the other way
    assert at[6][1] == at[5][1]  # the turn: 6 under 5
    if direction == "right-to-left":
        assert at[1][1] > at[5][1]


def test_a_wider_terminal_gives_the_queue_wider_cells() -> None:
    """Names are not cut when the row has room: at 100 columns, as at 80
    with few cards, the cells grow to share the width."""
    g = position(
        [
            "red conspiracy 3t",
            ["blue lord", "blue shapeshifter up 3t"],
            "green heir",
            "red soldier",
        ],
        step="reveal",
        index=2,
    )
    for width, height in ((80, 24), (100, 30)):
        cells = queue_cells(render(scene_of(g, names=["Ann", "Bolivar", "Cy"]), width, height))
        assert [c["label"].strip() for c in cells] == [
            "(Conspiracy)",
            "Shapeshifter",  # (issue 25: "Shapeshift", cut without a word)
            BACK,
            "(Soldier)",
        ]
        assert [c["below"].strip() for c in cells] == [
            "A You ◆◆◆",
            "B Bolivar ◆◆◆ ×2",
            "C Cy",
            "A You",
        ]


# ---------------------------------------------------------------- other screens


@pytest.mark.parametrize("width", [0, 1, 10, 30, 31, 79, 200])
@pytest.mark.parametrize("height", [0, 1, 3, 4, 23, 60])
def test_a_window_too_small_asks_to_be_made_larger(width: int, height: int) -> None:
    if width >= MIN_WIDTH and height >= MIN_HEIGHT:
        return
    g = next(g for g, _ in walk(3, 1) if g.round == 2)
    message = [
        f"This terminal is {width}x{height}.",
        f"Oriflamme needs at least {MIN_WIDTH}x{MIN_HEIGHT}:",
        "make the window larger.",
        "(q quits)",
    ]
    for scene in (scene_of(g), Scene(view=None, names=[]), scene_of(g, help=True)):
        lines = render(scene, width, height)
        assert_shape(lines, width, height)
        shown = [text(line) for line in lines]
        for i, line in enumerate(shown):
            if i < len(message):
                # the message, cut to the width, never anything else
                assert line == message[i][:width].ljust(width)
            else:
                assert line.strip() == ""
        if width >= 31 and height >= 4:
            assert [line.rstrip() for line in shown[:4]] == message


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_the_help_screen(width: int, height: int) -> None:
    g = next(g for g, _ in walk(4, 2) if g.round == 3)
    lines = render(scene_of(g, help=True), width, height)
    assert_shape(lines, width, height)
    shown = screen_text(lines)
    assert "Help" in shown and "any key closes" in shown
    for name in map(kind_name, KIND_NAMES):
        assert re.search(rf"^ {name} +\w", shown, re.M), name
    for key in ("1-9", "← →", "l / r", "r / k", "Enter", "Esc", "/", "q"):
        assert re.search(rf"^ {re.escape(key)} +\w", shown, re.M), key
    assert "Influence Queue" not in shown  # the help covers the game


def test_the_help_screen_shows_every_card_text_in_full_at_80x24() -> None:
    shown = screen_text(render(Scene(view=None, names=[], help=True), 80, 24))
    flat = " ".join(shown.split())
    missing = [
        kind for kind, (_, words) in ABILITIES.items() if " ".join(words.split()) not in flat
    ]
    assert missing == []
    # and every key, the direction's included, with nothing cut at the bottom
    for key, words in HELP_KEYS:
        assert f" {key:<8}{words}" in shown, key
    assert "l / r" in shown and "×2 a stack" in shown
    # Issue 25: "(Heir)" was "your own, hidden", but the end shows everyone's so.
    assert shown.rstrip().endswith("(Heir) face down, known: yours, or any once the game is over")


def end_scene(**extra: Any) -> Scene:
    g = next(g for g, _ in walk(3, 4) if g.over)
    end = EndSummary(
        scores=[5, 9, 7],
        winners=[1],
        verified="Verified: fair deal for all 3 seats, every face-down card opened and checked.",
        saved="Record: 0123abcd.oriflamme",
    )
    return scene_of(g, end=end, **extra)


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_the_end_of_the_game(width: int, height: int) -> None:
    lines = render(end_scene(), width, height)
    assert_shape(lines, width, height)
    shown = [text(line) for line in lines]
    at = next(i for i, line in enumerate(shown) if line.startswith("─ Game over · round 6 of 6"))
    assert " ".join(shown[at + 1].split()) == "1. Bo 9 (winner) 2. Cy 7 3. You 5"
    assert shown[at + 2].strip().startswith("Verified: fair deal for all 3 seats")
    assert "Record: 0123abcd.oriflamme" in shown[at + 3]
    assert "[a] play again" in shown[-1] and "[q] quit" in shown[-1]
    assert "▸" not in screen_text(lines)  # nobody's turn any more
    winner = [s for line in lines for s, t in line if "Bo 9 (winner)" in t]
    assert winner and "class:winner" in winner[0]


def test_the_end_of_a_tie_names_every_winner() -> None:
    g = next(g for g, _ in walk(2, 4) if g.over)
    end = EndSummary(scores=[8, 8], winners=[0, 1], verified="Verification FAILED: Bo: bad deal")
    shown = screen_text(render(scene_of(g, end=end), 80, 24))
    assert "1. You 8 (winner)   2. Bo 8 (winner)" in shown
    assert "Verification FAILED: Bo: bad deal" in shown


def test_a_tie_on_points_says_how_it_was_broken() -> None:
    """Ruling 17: 9 to 9, You ranked ahead: the line says it is the cards in
    the queue (counted from the queue, covered and face-down ones included)."""
    g = position(
        [
            "red lord up",
            ["red spy", "red heir"],
            "blue soldier up",
            "green archer up",
            "red ambush",
        ],
        scores=[9, 9, 4],
        step="place",
    )
    end = EndSummary(scores=[9, 9, 4], winners=[0], verified="Verified: yes")
    shown = [text(line) for line in render(scene_of(g, end=end), 80, 24)]
    at = next(i for i, line in enumerate(shown) if line.startswith("─ Game over"))
    assert " ".join(shown[at + 1].split()) == "1. You 9 (winner) 2. Bo 9 3. Cy 4"
    assert shown[at + 2].strip() == (
        "Tie on 9 points: You win with more cards in the queue (You 4, Bo 1)"
    )
    shared = EndSummary(scores=[9, 9, 4], winners=[0, 1], verified="Verified: yes")
    flat = screen_text(render(scene_of(g, end=shared), 80, 24))
    assert "Tie on 9 points and on cards in the queue (You 4, Bo 1): You and Bo share the win" in (
        " ".join(flat.split())
    )
    assert "Tie on" not in screen_text(render(end_scene(), 80, 24))  # no tie, nothing said


def test_the_scores_at_the_end_go_on_the_next_line_rather_than_be_cut() -> None:
    g = position(["red lord up", "blue spy up"], players=5, scores=[9, 9, 9, 4, 2], step="place")
    names = ["You", "Maximiliana Long", "Bartholomew Xyz", "Constantinople", "Wilhelmina Q"]
    end = EndSummary(scores=[9, 9, 9, 4, 2], winners=[1, 2], verified="Verified: yes")
    lines = render(scene_of(g, end=end, names=names), 80, 24)
    assert_shape(lines, 80, 24)
    flat = " ".join(screen_text(lines).split())
    for place, name in enumerate(["Maximiliana Long", "Bartholomew Xyz", "You"], 1):
        assert f"{place}. {name} 9" in flat
    assert "4. Constantinople 4" in flat and "5. Wilhelmina Q 2" in flat


def test_the_two_player_set_aside_says_each_cards_family() -> None:
    g = position(
        ["red spy", "green lord"],
        players=2,
        variant="two-player",
        hands=[["red archer", "blue spy"], ["green spy"]],
        set_aside=[
            ["red heir", "red lord", "red soldier", "blue archer", "blue heir", "blue ambush"],
            ["green heir"],
        ],
    )
    shown = screen_text(render(scene_of(g), 80, 24))
    rule_line = next(line for line in shown.splitlines() if line.startswith("─ Your hand"))
    assert "set aside red: Heir, Lord, Soldier; blue: Archer, Heir, Ambush" in rule_line
    long = [card("red", k) for k in ("shapeshifter", "assassination", "conspiracy")]
    long += [card("blue", k) for k in ("royal_decree", "shapeshifter", "assassination")]
    for width in (80, 100):
        said = set_aside_text(long, width - len("Your hand") - 7)
        assert said.startswith("set aside red: ") and "; blue: " in said
        assert cells(said) <= width - len("Your hand") - 7  # shortened, not cut
        assert len(re.findall(r"\w+", said.split("red: ")[1])) == 7  # 6 names and "blue"


# ---------------------------------------------------------------- names, cells, variants


def test_lines_are_exactly_width_cells_with_wide_characters_in_names() -> None:
    g = next(g for g, _ in walk(3, 2) if g.round == 3)
    scene = scene_of(g, names=["Ann", "山田太郎", "Cy"], log=["» 山田太郎: こんにちは"])
    for line in render(scene, 80, 24):
        assert get_cwidth(text(line)) == 80, text(line)


def test_the_two_player_variant_shows_the_draw_piles_at_80x24() -> None:
    g = next(g for g, _ in walk(2, 3) if g.round == 2)
    shown = screen_text(render(scene_of(g), 80, 24))
    piles = [len(p) for p in g.draw_piles]
    assert re.search(rf"You .* pile {piles[0]}\b", shown)
    assert re.search(rf"Bo .* pile {piles[1]}\b", shown)


def test_the_players_panel_and_title() -> None:
    g = next(g for g, _ in walk(4, 6) if g.round == 4 and g.step == "place")
    lines = render(scene_of(g, title="Oriflamme · tests", seconds_left=83), 120, 40)
    shown = [text(line) for line in lines]
    players = shown[next(i for i, t in enumerate(shown) if t.startswith("─ Players")) + 1 :]
    assert shown[0].startswith(f"Oriflamme · tests · round 4 of 6 · first: {NAMES[g.first_player]}")
    assert shown[0].rstrip().endswith("⏱ 1:23  ? help")
    for seat in range(4):
        row = next(line for line in players if re.match(rf"^ [▸ ] {NAMES[seat][0]} ", line))
        assert ("You" if seat == 0 else NAMES[seat]) in row
        assert re.search(rf"\b{g.scores[seat]} +hand {len(g.hands[seat])}\b", row)
        assert ("▸" in row) == (g.decision.seat == seat)


# ---------------------------------------------------------------- cards out, the log

OUT_KINDS = ["royal_decree", "conspiracy", "shapeshifter", "assassination", "ambush", "soldier"]


def five_players_with_cards_out() -> Scene:
    """Round 6 of a 5-player game, our turn to place, and many cards out:
    6 for us, 5 for the next seat... 2 for the last (the longest names)."""
    g = next(
        g
        for g, _ in walk(5, 3)
        if g.round == 6 and g.decision is not None and g.decision.seat == 0 and g.step == "place"
    )
    scene = scene_of(g, [f"event {i}" for i in range(40)])
    assert scene.view is not None
    families = scene.view.families
    fronts = tuple(
        tuple(card(fams[0], kind) for kind in OUT_KINDS[: 6 - s]) for s, fams in enumerate(families)
    )
    scene.view = replace(scene.view, fronts=fronts)
    return scene


def players_panel(lines: list) -> list[str]:
    """The players panel's lines (its left column) below its rule."""
    shown = [text(line) for line in lines]
    start = next(i for i, t in enumerate(shown) if t.startswith("─ Players"))
    end = next(i for i in range(start + 1, len(shown)) if shown[i].startswith("─"))
    return [t[:46] for t in shown[start:end]]


def test_every_players_cards_out_are_named_at_80x24_with_five_players() -> None:
    """Ruling 21: everybody sees each player's cards out. With five players
    and little room, they are named shortly, one line a player; no player's
    line is left out."""
    scene = five_players_with_cards_out()
    lines = render(scene, 80, 24)
    assert_shape(lines, 80, 24)
    panel = players_panel(lines)
    assert panel[0].startswith("─ Players ─")  # nothing is hidden: no key to see it
    assert scene.view is not None
    fronts = scene.view.fronts
    for seat, mark in enumerate("ABCDE"):
        row = next(t for t in panel if t.startswith(f"   {mark} out: "))
        names = row.split(": ", 1)[1].split()
        assert names == [tiny_name(label_of(c) or "") for c in fronts[seat]], row


def test_cards_out_that_do_not_fit_are_counted_never_dropped() -> None:
    def named(texts: list[str], kind: str) -> int:
        words = re.findall(r"[A-Za-z]+", " ".join(texts))
        short = short_name(kind)
        return sum(w in (short, tiny_name(kind)) for w in words)

    for cards in (6, 2):
        entries = [(mark, [card("red", kind) for kind in OUT_KINDS[:cards]]) for mark in "YBCDE"]
        for room in range(12):
            texts, complete = out_lines(entries, 43, room)
            assert len(texts) <= room and all(cells(t) <= 43 for t in texts)
            if complete:  # every card of every player is named
                assert all(named(texts, kind) == 5 for kind in OUT_KINDS[:cards]), texts
            else:  # the last line says what is left out, and the key that shows it
                assert room == 0 or texts[-1].endswith("[o] shows all"), (room, texts)
    entries = [(mark, [card("red", kind) for kind in OUT_KINDS[:2]]) for mark in "ABCDE"]
    assert out_lines(entries, 43, 3) == (  # several players a line
        ["out A Decr Consp · B Decr Consp", "out C Decr Consp · D Decr Consp", "out E Decr Consp"],
        True,
    )
    assert out_lines(entries, 43, 2) == (
        ["out A Decr Consp · B Decr Consp", "+3 more players' cards out: [o] shows all"],
        False,
    )
    entries = [(mark, [card("red", kind) for kind in OUT_KINDS]) for mark in "YBCDE"]
    assert out_lines(entries, 43, 5)[1]  # one line a player: all six named
    cut, complete = out_lines(entries, 43, 2)
    assert not complete and cut[-1] == "+4 more players' cards out: [o] shows all"
    assert out_lines([], 43, 0) == ([], True)


def test_a_squeezed_players_panel_says_which_key_shows_the_cards_out() -> None:
    scene = five_players_with_cards_out()
    assert scene.view is not None
    queue = scene.view.queue
    scene.view = replace(scene.view, queue=(queue * 4)[:22])  # four rows
    lines = render(scene, 80, 24)
    assert_shape(lines, 80, 24)
    panel = players_panel(lines)
    assert len(panel) == 1 + 5 + 3  # the rule, the players' rows, 3 lines for 5 players
    assert panel[0].startswith("─ Players · [o] every card out")
    assert panel[-1].strip() == "+3 more players' cards out: [o] shows all"


def crowded_queue_and_a_long_choice() -> Scene:
    """5 players, 30 cards in the queue (five rows at 80 columns), and an
    Assassination to aim: the choice takes five lines."""
    families = ["red", "blue", "green", "yellow", "black"]
    kinds = ["lord", "spy", "heir", "archer", "soldier", "ambush"]
    queue = [f"{families[i % 5]} {kinds[i // 5]}" for i in range(30)]
    queue[2] = "red assassination up"
    g = position(
        queue,
        players=5,
        step="eliminate",
        index=2,
        ability="assassination",
        scores=[12, 3, 45, 7, 100],
    )
    return scene_of(g, [f"event {i}" for i in range(40)], stand_ins=frozenset({3}))


def test_a_players_panel_too_short_for_a_row_a_player_compacts_them_never_drops_one() -> None:
    scene = crowded_queue_and_a_long_choice()
    lines = render(scene, 80, 24)
    assert_shape(lines, 80, 24)
    panel = players_panel(lines)
    assert len(panel) < 1 + 5  # no room for a row a player
    assert panel[0].startswith("─ Players · [o] in full")
    shown = " ".join(panel[1:])
    for mark, name, score in zip("ABCDE", ["You", *NAMES[1:5]], [12, 3, 45, 7, 100], strict=True):
        assert re.search(rf"{mark} {name} +{score}\b", shown), (mark, shown)
    assert re.search(r"▸A You", shown)  # whose turn it is, still
    # Each height the panel may get: every player is there, in fewer details.
    assert scene.view is not None
    for height in range(1, 7):
        rows = [text(line) for line in _players(scene, scene.view, 46, height)[0]]
        assert len(rows) <= height
        assert all(cells(row) == 46 for row in rows)
        joined = " ".join(rows)
        for mark, score in zip("ABCDE", [12, 3, 45, 7, 100], strict=True):
            assert re.search(rf"{mark}\b.*?\b{score}\b", joined), (height, rows)
    # the panel given one line: the players alone, across the screen
    one = [text(line) for line in _panels(scene, scene.view, 80, 1)]
    assert len(one) == 1 and all(m in one[0] for m in ("A", "B", "C", "D", "E"))


def test_choices_too_many_for_their_lines_are_shown_by_their_keys_never_dropped() -> None:
    scene = crowded_queue_and_a_long_choice()
    assert scene.chooser is not None
    keys = [offer.shown.partition("] ")[0] + "]" for offer in scene.chooser.offers()]
    assert len(keys) >= 20  # an Assassination may aim at any other card of the queue
    lines = render(scene, 80, 24)
    assert_shape(lines, 80, 24)
    shown = screen_text(lines)
    offers = shown[shown.index("the cards highlighted in the queue:") :]
    assert re.findall(r"\[\d+\]", offers) == keys  # every one, in order


def test_places_too_many_for_their_lines_say_which_cards_they_lie_between() -> None:
    families = ["red", "blue", "green", "yellow", "black"]
    kinds = ["lord", "spy", "heir", "archer", "soldier"]
    queue = [f"{families[i % 5]} {kinds[i // 5]}" for i in range(20)]
    queue[2] = "red royal_decree up"
    g = position(queue, players=5, step="move_to", index=2, ability="royal_decree", chosen=7)
    scene = scene_of(g, [])
    assert scene.chooser is not None
    offers = scene.chooser.offers()
    lines = render(scene, 80, 24)
    assert_shape(lines, 80, 24)
    shown = screen_text(lines)
    said = shown[shown.index("it goes between the cards:") :]
    assert "highlighted" not in shown  # no card is: places lie between them
    pairs = re.findall(r"\[(\d+)\] (start\|\d+|\d+\|end|\d+\|\d+)", said)
    assert [key for key, _ in pairs] == [o.key for o in offers]  # every one, in order
    for (_, short), offer in zip(pairs, offers, strict=True):
        assert re.findall(r"\d+", short) == re.findall(r"\d+", offer.label)


def test_a_player_away_is_said_in_the_players_row() -> None:
    scene = crowded_queue_and_a_long_choice()
    assert scene.view is not None
    rows = [text(line) for line in _players(scene, scene.view, 46, 10)[0]]
    assert rows[3].rstrip().endswith("away"), rows[3]  # Di: a stand-in plays the seat


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_o_shows_every_players_cards_out_in_full(width: int, height: int) -> None:
    scene = five_players_with_cards_out()
    scene.outs = True
    lines = render(scene, width, height)
    assert_shape(lines, width, height)
    shown = [text(line) for line in lines]
    assert shown[0].startswith("─ Cards out: eliminated and discarded · any key closes this")
    flat = " ".join(" ".join(shown).split())
    assert scene.view is not None
    fronts = scene.view.fronts
    for seat, name in enumerate(["You", *NAMES[1:5]]):
        names = ", ".join(card_name(c) or "?" for c in fronts[seat])
        assert re.search(rf"\b{name} +{re.escape(names)}", flat), name
    # and every player's row in full (what a squeezed panel leaves out)
    if height > 5 + 5 * 2 + 2:
        rows = shown[shown.index(next(t for t in shown if t.startswith("─ Players"))) + 1 :]
        for name in ["You", *NAMES[1:5]]:
            assert any(name in row and " hand " in row and " out " in row for row in rows), name


def test_the_log_scrolled_back_shows_earlier_lines_and_says_so() -> None:
    scene = five_players_with_cards_out()
    newest = screen_text(render(scene, 80, 24))
    assert "Log · PgUp earlier" in newest and "event 39" in newest and "event 20" not in newest
    scene.log_end = 21
    shown = screen_text(render(scene, 80, 24))
    assert "Log · 19 newer: PgDn End" in shown
    assert "event 20" in shown and "event 21" not in shown and "event 39" not in shown
    scene.log_end = 0  # back to the start: the first lines fill the log
    shown = screen_text(render(scene, 80, 24))
    assert "event 0 " in shown and "event 1 " in shown
    assert "Log · PgUp earlier" not in shown  # nothing before the start
    # A log that fits offers nothing earlier either.
    scene.log_end = None
    scene.log = ["── A new game: 5 players"]
    shown = screen_text(render(scene, 80, 24))
    assert "─ Log ─" in shown and "PgUp" not in shown


def test_a_path_in_the_log_wraps_after_a_slash_never_inside_a_name() -> None:
    path = "/var/lib/oriflamme-state/oriflamme/records/friday-2026-11-23-1.oriflamme"
    entry = f"The game's record is saved in {path}"
    lines = log_entry_lines(entry, 33)
    assert all(cells(line) <= 33 for line in lines)
    assert lines == [
        " The game's record is saved in",
        "   /var/lib/oriflamme-state/",
        "   oriflamme/records/",
        "   friday-2026-11-23-1.oriflamme",
    ]
    # a name longer than a line is cut, as a last resort, and nothing is lost
    long = f"saved in /var/{'a' * 40}.oriflamme and checked"
    lines = log_entry_lines(long, 33)
    assert all(cells(line) <= 33 for line in lines)
    assert "".join(lines).replace(" ", "") == long.replace(" ", "")


# ---------------------------------------------------------------- styles


def test_monochrome_has_no_colours_and_colour_has_them() -> None:
    mono, colour = app.style(colour=False), app.style(colour=True)
    for cls in app.COLOURS:
        attrs = mono.get_attrs_for_style_str(f"class:{cls}")
        assert not attrs.color and not attrs.bgcolor, cls
    for family in ("red", "blue", "green", "yellow", "black"):
        assert colour.get_attrs_for_style_str(f"class:owner.{family}").color
    assert colour.get_attrs_for_style_str("class:banner").bgcolor
    # Emphasis that needs no colour stays in monochrome.
    assert mono.get_attrs_for_style_str("class:highlight").reverse
    assert mono.get_attrs_for_style_str("class:title").reverse
    assert mono.get_attrs_for_style_str("class:resolving").bold
    assert colour.get_attrs_for_style_str("class:highlight").reverse


def test_the_screen_is_the_same_in_colour_and_in_monochrome() -> None:
    """Styles are class names only: meaning never rests on colour."""
    g = next(g for g, _ in walk(3, 8) if g.round == 2)
    for line in render(scene_of(g), 80, 24):
        for style, _ in line:
            assert all(part.startswith("class:") for part in style.split()), style


@pytest.mark.parametrize(
    ("environ", "wanted"),
    [
        ({}, True),
        ({"TERM": "xterm-256color"}, True),
        ({"NO_COLOR": "1"}, False),
        ({"NO_COLOR": "1", "TERM": "xterm"}, False),
        ({"TERM": "dumb"}, False),
        ({"NO_COLOR": ""}, True),  # https://no-color.org: set and not empty
    ],
)
def test_colour_is_wanted_unless_no_color_or_a_dumb_terminal(
    environ: dict[str, str], wanted: bool
) -> None:
    assert app.colour_wanted(environ) is wanted

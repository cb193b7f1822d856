"""What the terminal can show (issue 25, item 11): colour only where TERM
(or COLORTERM, FORCE_COLOR) says the terminal has it, and ASCII glyphs
where the terminal is a vt100-like one or the locale is not UTF-8; a
screen drawn in ASCII still fits its size exactly."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from prompt_toolkit.application import Application
from prompt_toolkit.data_structures import Size
from prompt_toolkit.input import PipeInput
from prompt_toolkit.output import ColorDepth
from prompt_toolkit.output.vt100 import Vt100_Output

from oriflamme.client.replay import replay_steps
from oriflamme.client.tui import app, text
from oriflamme.client.tui.replay_screen import ReplayController
from oriflamme.client.tui.screen import EndSummary, render
from oriflamme.protocol.record import decode_record
from oriflamme.protocol.verify import verify_record

from .helpers import scene_of, walk
from .helpers import text as line_text
from .test_app import Keys, run_app, sgr_codes, until
from .test_lobby import lobby_in_a_room

SAMPLE = Path(__file__).parents[3] / "docs" / "records" / "honest-3-players.oriflamme"
COLOURS = {str(n) for n in [*range(30, 38), *range(40, 48), *range(90, 98), 38, 48]}


# ---------------------------------------------------------------- colour


@pytest.mark.parametrize(
    ("environ", "wanted"),
    [
        ({"TERM": "vt100"}, False),
        ({"TERM": "vt102"}, False),
        ({"TERM": "vt220"}, False),
        ({"TERM": "ansi-mono"}, False),
        ({"TERM": "xterm-mono"}, False),
        ({"TERM": "sun"}, False),  # not a colour terminal's name
        ({"TERM": "xterm"}, True),
        ({"TERM": "xterm-256color"}, True),
        ({"TERM": "screen"}, True),
        ({"TERM": "tmux-256color"}, True),
        ({"TERM": "linux"}, True),
        ({"TERM": "rxvt-unicode"}, True),
        ({"TERM": "vt100", "COLORTERM": "truecolor"}, True),
        ({"TERM": "vt100", "FORCE_COLOR": "1"}, True),
        ({"TERM": "xterm", "FORCE_COLOR": "1", "NO_COLOR": "1"}, False),
        ({"TERM": "dumb", "COLORTERM": ""}, False),
    ],
)
def test_colour_follows_the_terminal_type(environ: dict[str, str], wanted: bool) -> None:
    assert app.colour_wanted(environ) is wanted


# ---------------------------------------------------------------- glyphs


@pytest.mark.parametrize(
    ("environ", "utf8_mode", "wanted"),
    [
        ({"TERM": "xterm-256color", "LANG": "en_GB.UTF-8"}, False, False),
        ({"TERM": "xterm", "LANG": "C.utf8"}, False, False),
        ({"TERM": "xterm", "LC_CTYPE": "C.UTF-8", "LANG": "C"}, False, False),
        ({"TERM": "vt100", "LANG": "en_GB.UTF-8"}, False, True),
        ({"TERM": "vt220", "LANG": "en_GB.UTF-8"}, False, True),
        ({"TERM": "dumb", "LANG": "en_GB.UTF-8"}, False, True),
        ({"TERM": "xterm", "LANG": "C"}, False, True),
        ({"TERM": "xterm", "LANG": "POSIX"}, False, True),
        ({"TERM": "xterm"}, False, True),  # no locale: C
        ({"TERM": "xterm", "LANG": "fr_FR.ISO-8859-1"}, False, True),
        ({"TERM": "xterm", "LC_ALL": "C", "LANG": "en_GB.UTF-8"}, False, True),
        ({"TERM": "xterm", "LC_ALL": "en_GB.UTF-8", "LANG": "C"}, False, False),
        # LANG=C, as Python changes it at its start (PEP 538): the locale was C
        ({"TERM": "xterm", "LC_CTYPE": "C.UTF-8", "LANG": "C"}, True, True),
        # ... unless UTF-8 mode was asked for
        ({"TERM": "xterm", "LC_CTYPE": "C.UTF-8", "PYTHONUTF8": "1"}, True, False),
    ],
)
def test_ascii_where_the_terminal_or_the_locale_cannot_show_glyphs(
    environ: dict[str, str], utf8_mode: bool, wanted: bool
) -> None:
    assert app.ascii_wanted(environ, utf8_mode=utf8_mode) is wanted


def test_each_glyph_has_an_ascii_stand_in_as_wide_and_text_is_left_alone() -> None:
    for glyph, stand_in in text.ASCII_GLYPHS.items():
        assert stand_in.isascii() and text.cells(stand_in) == text.cells(glyph) == 1, glyph
    assert text.ascii_glyphs("─ Ann · 2 ◆×3 ▶ ▒▒ …") == "- Ann - 2 $x3 > ## ."
    assert text.ascii_glyphs("山田 Zoë") == "山田 Zoë"  # names are text, not glyphs
    assert text.ascii_glyphs(text.fit("Shapeshifter", 8)) == "Shapesh."


def _screens_of_a_whole_game() -> Iterator[list[str]]:
    for players, seed in ((2, 3), (3, 8), (5, 2)):
        for g, log in walk(players, seed):
            scene = scene_of(g, log, seconds_left=42)
            if g.over:
                scene.end = EndSummary(g.scores, g.winners, "Verified: fair deal", "saved")
            yield [line_text(line) for line in render(scene, 80, 24)]
            scene.help = True
            yield [line_text(line) for line in render(scene, 80, 24)]


def test_a_whole_game_drawn_in_ascii_is_ascii_and_fits_80x24() -> None:
    drawn = 0
    for shown in _screens_of_a_whole_game():
        assert len(shown) == 24
        for line in map(text.ascii_glyphs, shown):
            assert line.isascii(), line
            assert len(line) == 80, line
        drawn += 1
    assert drawn > 50


def test_the_same_game_in_unicode_draws_the_glyphs() -> None:
    shown = "\n".join(line for screen in _screens_of_a_whole_game() for line in screen)
    assert all(glyph in shown for glyph in "─│▶◆▒⏱")


def test_the_lobby_and_a_replay_drawn_in_ascii_are_ascii_and_fit_80x24() -> None:
    lobby, _, _ = lobby_in_a_room()
    screens = [lobby.lines(80, 24)]
    record = decode_record(SAMPLE.read_bytes())
    steps = replay_steps(record)
    replay = ReplayController(record, steps, verify_record(record), SAMPLE.name)
    for at in range(0, len(steps), 7):
        replay.at = at
        screens.append(replay.lines(80, 24))
    replay.at = len(steps) - 1
    screens.append(replay.lines(80, 24))
    for lines in screens:
        shown = [text.ascii_glyphs(line_text(line)) for line in lines]
        assert len(shown) == 24
        assert all(line.isascii() and len(line) == 80 for line in shown), "\n".join(shown)


# ---------------------------------------------------------------- the app on a vt100


def test_on_a_vt100_in_the_c_locale_the_app_writes_ascii_without_colour(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("NO_COLOR", "FORCE_COLOR", "COLORTERM", "LC_ALL", "LC_CTYPE", "PYTHONUTF8"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "vt100")
    monkeypatch.setenv("LANG", "C")
    colour, ascii_only = app.colour_wanted(), app.ascii_wanted()
    buffer = io.StringIO()
    output = Vt100_Output(buffer, lambda: Size(rows=24, columns=80), term="vt100")
    screen = Keys()
    built: list[Application[int]] = []

    async def steps(pipe: PipeInput, application: Application[int]) -> None:
        built.append(application)
        await until(lambda: screen.drawn > 0 and "Influence" in buffer.getvalue(), "a drawing")
        await asyncio.sleep(0)

    run_app(screen, steps, colour=colour, ascii_only=ascii_only, output=output)
    written = buffer.getvalue()
    assert built[0].color_depth == ColorDepth.DEPTH_1_BIT
    assert "Influence Queue" in written
    assert written.isascii(), [ch for ch in written if not ch.isascii()][:10]
    assert sgr_codes(written) & COLOURS == set(), sgr_codes(written)

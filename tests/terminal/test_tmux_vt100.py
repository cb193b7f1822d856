"""The terminal client on a vt100 in the C locale (issue 25, item 11), in a
real terminal: tmux runs `oriflamme play --bots 2` with TERM=vt100 and
LANG=C; the screen it draws is ASCII only, lines of ``-`` and ``|``, and
no colour (capture-pane -e keeps the escape sequences of each cell's
style: bold and reverse, never a colour)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from .test_tmux import KEPT, Terminal, pytestmark  # noqa: F401 -- the same marks

# What ``capture-pane -e`` writes for a colour: SGR 30-37, 38, 40-47, 48, 90-97, 100-107.
COLOURS = {str(n) for n in [*range(30, 39), *range(40, 49), *range(90, 98), *range(100, 108)]}


def sgr_codes(screen: str) -> set[str]:
    return {p for codes in re.findall(r"\x1b\[([0-9;]*)m", screen) for p in codes.split(";")}


def test_a_vt100_in_the_c_locale_gets_ascii_and_no_colour(tmp_path: Path) -> None:
    state = tmp_path / "state"
    unset = " ".join(
        f"-u {name}"
        for name in ("LC_ALL", "LC_CTYPE", "COLORTERM", "FORCE_COLOR", "NO_COLOR", "PYTHONUTF8")
    )
    command = (
        f"env {unset} TERM=vt100 LANG=C {sys.executable} -m oriflamme.launcher.cli play"
        f" --bots 2 --no-bell --state-dir {state}; echo EXITED $?; {KEPT}"
    )
    term = Terminal(tmp_path / "tmux.sock", command, state=state)
    try:
        term.wait_for(r"(?m)^- Influence Queue")
        screen = term.wait_for(r"(?m)^- Your (?!hand)")  # a decision of ours
        assert screen.isascii(), screen
        assert "|" in screen, screen  # between the players and the log
        styled = term.tmux("capture-pane", "-p", "-e", "-t", "game")
        assert styled.isascii(), styled
        codes = sgr_codes(styled)
        assert codes & {"1", "7"}, codes  # bold and reverse stay
        assert codes & COLOURS == set(), codes
        term.keys("q")
        term.wait_for(r"Quit\?")
        term.keys("y")
        term.wait_for(r"EXITED 0")
    finally:
        term.close()

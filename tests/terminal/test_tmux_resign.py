"""Issue 25, item 4, in a real terminal: a player in `oriflamme play --bots 2`
resigns ([R], then [b]): a bot plays their cards to the end, the program
ends saying so, and the game is not theirs to take back (its secrets are
forgotten: the next `oriflamme play` starts a new game).

tmux runs the program at 80x24 (`test_tmux.Terminal`); every wait ends
once the screen shows what it waits for."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.terminal import test_tmux
from tests.terminal.test_tmux import DEALT, KEPT, Terminal

pytestmark = test_tmux.pytestmark  # (tmux, a process)


def test_resigning_hands_the_seat_to_a_bot_and_the_program_ends_saying_so(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    play = (
        f"{sys.executable} -m oriflamme.launcher.cli play --bots 2 --no-bell --name Ann"
        f" --state-dir {state}"
    )
    # A shell that stays, so that the program can be run again in it.
    term = Terminal(tmp_path / "tmux.sock", f"sh -i; {KEPT}", state=state)
    try:
        term.keys(f"{play}; echo EXITED $?", "Enter")
        term.wait_for(DEALT)
        games = state / "games"
        assert [p for p in games.iterdir() if p.suffix == ".secrets"]  # this game's, kept
        term.keys("R")
        term.wait_for(r"Resign\? You leave this game for good")
        term.wait_for(r"\[b\] a bot plays your cards to the end")
        term.keys("b")
        term.wait_for(r"EXITED 0")
        said = term.joined()
        assert "You resigned: a bot plays your cards to the end of the game." in said
        assert "Your seat is kept" not in said and "Traceback" not in said
        assert [p for p in games.iterdir() if p.suffix == ".secrets"] == []  # forgotten
        # Run again: a new game, not the one resigned.
        term.keys("clear", "Enter")
        term.keys(f"{play}; echo EXITED $?", "Enter")
        screen = term.wait_for(DEALT)
        assert "A new game" in screen and "Back in the game" not in screen
        term.keys("q", "y")
        term.wait_for(r"Your seat is kept: run")
    finally:
        term.close()

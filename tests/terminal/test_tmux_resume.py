"""Coming back to a game, in a real terminal (issue 25, items 3, 5 and 6):

* a game quit in round 2 and taken up again by a new program shows its log
  from the start ("Back in the game ... the game so far");
* `play` asked for another table while a game is kept asks first: resume
  it, or abandon it for the new one;
* the name is asked once and kept in the user's config;
* a turn timer rings and says so at 10 s left, and the log says when the
  timer decided."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from tests.deadlines import GAME_HANG

from .test_tmux import KEPT, Terminal, play_until_over, pytestmark  # noqa: F401 -- the same marks

PLAY = f"{sys.executable} -m oriflamme.launcher.cli play --no-bell"


def _quit(term: Terminal) -> None:
    term.keys("q")
    term.wait_for(r"Quit\? Your seat is kept for you")
    term.keys("y")
    term.wait_for(r"Your seat is kept: run")


def test_a_kept_game_comes_back_with_its_log_or_gives_way_to_a_new_one(tmp_path: Path) -> None:
    state = tmp_path / "state"
    term = Terminal(tmp_path / "tmux.sock", f"sh -i; {KEPT}")
    try:
        term.keys(f"{PLAY} --bots 2 --state-dir {state}", "Enter")
        play_until_over([term], GAME_HANG, until=r"Round 1 is over · any key goes on")
        term.keys("Space")
        term.wait_for(r"Round 2 ·")
        _quit(term)

        # Another table asked for: the kept game is offered first.
        term.keys("clear", "Enter")
        term.keys(f"{PLAY} --bots 1 --level easy --state-dir {state}", "Enter")
        asked = term.wait_for(r"Your last game is not over")
        assert "Resume your game (round 2, 3 players, normal bots)" in asked, asked
        assert "[r] resume it" in asked and "[n] abandon it, start a new game" in asked
        term.keys("r")
        term.wait_for(r"Influence Queue")
        term.keys("Home")  # the log from its start: the game so far, as it went
        start = term.wait_for(r"Back in the game \(3 players\)")
        assert re.search(r"── Round 1 · \w+", start), start  # round 1, told again
        assert "Your last game is not over" not in start
        _quit(term)

        term.keys("clear", "Enter")
        term.keys(f"{PLAY} --bots 1 --level easy --state-dir {state}", "Enter")
        term.wait_for(r"Your last game is not over")
        term.keys("n")
        new = term.wait_for(r"A new game: 2 players")
        assert "You abandoned that game" in new, new
        _quit(term)
        # And that one, asked for again as it is, comes back without a question.
        term.keys("clear", "Enter")
        term.keys(f"{PLAY} --bots 1 --level easy --state-dir {state}", "Enter")
        back = term.wait_for(r"Influence Queue")
        assert "Your last game is not over" not in back
        assert "Traceback" not in term.joined()
    finally:
        term.close()


def test_the_name_is_asked_once_and_kept(tmp_path: Path) -> None:
    config = tmp_path / "config"
    state = tmp_path / "state"
    run = f"env XDG_CONFIG_HOME={config} {PLAY} --bots 1 --state-dir {state}"
    term = Terminal(tmp_path / "tmux.sock", f"sh -i; {KEPT}")
    try:
        term.keys(run, "Enter")
        term.wait_for(r"Your name at the table, as the other players see it \[")
        term.keys("Zoë", "Enter")
        term.wait_for(r"Influence Queue")
        kept = config / "oriflamme" / "config.toml"
        assert kept.read_text(encoding="utf-8") == 'name = "Zoë"\n'
        _quit(term)
        term.keys("clear", "Enter")
        term.keys(run, "Enter")  # asked once: not again
        screen = term.wait_for(r"Influence Queue")
        assert "Your name at the table" not in screen
    finally:
        term.close()


def test_a_turn_timer_warns_at_10_seconds_and_says_when_it_decided(tmp_path: Path) -> None:
    state = tmp_path / "state"
    command = f"{PLAY} --bots 1 --turn-timer 15 --state-dir {state}; echo EXITED $?; {KEPT}"
    term = Terminal(tmp_path / "tmux.sock", command, state=state)
    try:
        term.wait_for(r"(?m)^─ Your (?!hand)")  # a decision of ours: left unanswered
        warned = term.wait_for(r"(?m)^─ Your .* · \d+ s left!", timeout=GAME_HANG)
        assert "⏱" in warned
        term.wait_for(r"Time ran out: the server", timeout=GAME_HANG)  # (the log wraps it)
    finally:
        term.close()

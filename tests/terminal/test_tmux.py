"""`oriflamme play` in a real terminal, as a person would use it: tmux runs
it at 80x24, the test reads the screen (capture-pane) and answers every
decision with the first key the screen offers (send-keys), to the end of
the game; the final scores and the verification must be on the screen, and
the record saved must pass `oriflamme verify`."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

TMUX = shutil.which("tmux")
pytestmark = pytest.mark.skipif(
    TMUX is None, reason="tmux is not installed (.ci/run installs it): no real terminal to test in"
)

KEYS = {"←": "Left", "→": "Right", "Enter": "Enter"}
GAME_DEADLINE = 180.0


class Terminal:
    """A tmux server of our own (its own socket), one window of 80x24."""

    def __init__(self, socket: Path, command: str, width: int = 80, height: int = 24) -> None:
        self.base = [str(TMUX), "-S", str(socket)]
        self.tmux("new-session", "-d", "-s", "game", "-x", str(width), "-y", str(height), command)

    def tmux(self, *args: str) -> str:
        done = subprocess.run(
            [*self.base, *args], capture_output=True, text=True, timeout=10, check=True
        )
        return done.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "game")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "game", *keys)

    def wait_for(self, pattern: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if re.search(pattern, screen):
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{pattern!r} never appeared; the screen:\n{self.screen()}")

    def close(self) -> None:
        subprocess.run([*self.base, "kill-server"], capture_output=True, timeout=10)


def first_offer(screen: str) -> str | None:
    """The key of the first choice the screen offers, when a decision is ours."""
    lines = screen.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("─ Your turn") and i + 1 < len(lines):
            found = re.search(r"\[([^\]]+)\]", lines[i + 1])
            if found:
                return KEYS.get(found.group(1), found.group(1))
    return None


@pytest.fixture
def terminal(tmp_path: Path):  # type: ignore[no-untyped-def]
    state = tmp_path / "state"
    command = (
        f"{sys.executable} -m oriflamme.client.cli play --bots 2 --no-bell"
        f" --state-dir {state}; echo EXITED $?; sleep 60"
    )
    term = Terminal(tmp_path / "tmux.sock", command)
    term.state = state  # type: ignore[attr-defined]
    yield term
    term.close()


def test_a_complete_game_at_80x24(terminal: Terminal) -> None:
    terminal.wait_for(r"Influence Queue", timeout=30)
    deadline = time.monotonic() + GAME_DEADLINE
    answered = 0
    last = ""
    while time.monotonic() < deadline:
        screen = terminal.screen()
        if "Game over" in screen:
            break
        key = first_offer(screen)
        if key is not None and screen != last:
            terminal.keys(key)
            answered += 1
            last = screen
        time.sleep(0.1)
    else:
        raise AssertionError(f"the game did not end in time; the screen:\n{terminal.screen()}")
    screen = terminal.wait_for(r"Record: .*oriflamme", timeout=30)
    assert answered >= 6, screen  # at least our placements of a game
    assert "Traceback" not in screen
    lines = screen.splitlines()
    assert all(len(line) <= 80 for line in lines)
    scores = re.search(r"1\. (You|Bot \d) (\d+)", screen)
    assert scores is not None, screen
    assert "(winner)" in screen
    assert re.search(r"Verified( \(here too\))?: fair deal for all 3 seats", screen), screen
    record = re.search(r"Record: (\S+\.oriflamme)", screen)
    assert record is not None
    path = terminal.state / "records" / record.group(1)  # type: ignore[attr-defined]
    assert "[a] play again" in screen
    verified = subprocess.run(
        [sys.executable, "-m", "oriflamme.client.cli", "verify", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
    terminal.keys("q")
    terminal.wait_for(r"EXITED 0", timeout=20)

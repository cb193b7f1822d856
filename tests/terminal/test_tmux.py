"""The terminal client in a real terminal, as a person would use it: tmux
runs it at 80x24, the tests read the screen (capture-pane) and answer every
decision with the first key the screen offers (send-keys), to the end of
the game; the final scores and the verification must be on the screen, and
the record saved must pass `oriflamme verify`.

* `oriflamme play --bots 2`: a whole game against bots;
* `oriflamme join`: two players in two terminals find each other's room on
  a server process, play, and the server is killed (SIGKILL) in the middle
  and started again: both screens say the connection is lost, come back by
  themselves, and the game ends verified; then `oriflamme replay` steps
  through its record."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from oriflamme.client.tui.screen import OFFER_ROWS

TMUX = shutil.which("tmux")
pytestmark = [
    pytest.mark.terminal,
    pytest.mark.process,
    pytest.mark.skipif(
        TMUX is None,
        reason="tmux is not installed (.ci/run installs it): no real terminal to test in",
    ),
]

KEYS = {"←": "Left", "→": "Right", "Enter": "Enter"}
# Seconds, each only a hang reaches, even on a loaded machine: nothing waits
# for them to pass (each wait ends once the screen shows what it waits for).
GAME_DEADLINE = 600.0  # a whole game
START = 120.0  # a program to start (Python, the package) and draw its screen
STEP = 60.0  # a screen to answer a key, or the server's coming and going
TMUX_HANG = 60.0  # one tmux command
# The status line when the connection is down: an answer now would be refused.
DISCONNECTED = "Connection to the server lost"
# The status line once the first digits of a choice are typed: the choice
# waits for Enter or the next digit.
TYPING = re.compile(r" (\d+)…?: (press Enter to choose|type the next digit)")


class Terminal:
    """A tmux server of our own (its own socket), one window of 80x24."""

    def __init__(self, socket: Path, command: str, width: int = 80, height: int = 24) -> None:
        self.base = [str(TMUX), "-S", str(socket)]
        self.tmux("new-session", "-d", "-s", "game", "-x", str(width), "-y", str(height), command)
        self.last = ""  # the decision last answered (`decision_block`)
        self.status_sent = ""  # the status line then (`status_lines`)
        self.pending = False  # the answer's keys may not have been read yet
        self.sent: list[str] = []  # those keys

    def tmux(self, *args: str) -> str:
        done = subprocess.run(
            [*self.base, *args], capture_output=True, text=True, timeout=TMUX_HANG, check=True
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
        subprocess.run([*self.base, "kill-server"], capture_output=True, timeout=TMUX_HANG)


def decision_block(screen: str) -> str:
    """The screen but its last two lines (the status line and the keys):
    what says which decision is pending, and in what position."""
    return "\n".join(screen.splitlines()[:-2])


def status_lines(screen: str) -> str:
    """The screen's last two lines (`decision_block` is the rest)."""
    return "\n".join(screen.splitlines()[-2:])


def first_offer(screen: str) -> list[str] | None:
    """The keys that pick the first choice the screen offers, when a decision
    is ours: a position of two digits is typed digit by digit, and one that
    begins another (1, when there is a 10) is confirmed with Enter."""
    lines = screen.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("─ Your ") and not line.startswith("─ Your hand"):
            rows = lines[i + 1 : len(lines) - 1][:OFFER_ROWS]  # (not the status line)
            offers = re.findall(r"\[([^\]]+)\]", " ".join(rows))
            offers = [o for o in offers if o not in ("/", "?", "Esc")]
            if not offers:
                return None
            first = offers[0]
            if not first.isdigit():
                return [KEYS.get(first, first)]
            longer = any(o.isdigit() and o != first and o.startswith(first) for o in offers)
            return [*first, "Enter"] if longer else [*first]
    return None


def play_until_over(
    terminals: list[Terminal], timeout: float, midway: Callable[[], None] | None = None
) -> int:
    """Answer every decision on every screen with its first offer until every
    screen says the game is over; `midway()` is called once, after 10
    answers. The number of answers."""
    deadline = time.monotonic() + timeout
    answered = 0
    while time.monotonic() < deadline:
        over = 0
        for term in terminals:
            screen = term.screen()
            if "Game over" in screen:
                over += 1
                continue
            keys = first_offer(screen)
            if keys is None:
                term.pending = False  # no choice shown: the last answer was read
                continue
            if DISCONNECTED in screen:
                continue  # an answer now would be refused: wait for the reconnection
            block, status = decision_block(screen), status_lines(screen)
            typing = TYPING.search(status)
            if typing is not None:
                typed = list(typing.group(1))
                if term.sent != typed:
                    continue  # the rest of our keys is on its way
                # All our keys were read and the choice wants more (a screen
                # read as it was drawn showed too few offers): finish it, or
                # start it again.
                keys = keys[len(typed) :] if keys[: len(typed)] == typed else ["Escape"]
            # Answer a decision once: while our keys travel, the screen
            # still shows it as it was (on a slow machine answering again
            # typed "1" twice, and "11" is no card). The same decision is
            # answered again only once the screen shows our keys were read
            # and the choice is still offered (refused, or the connection
            # dropped meanwhile: the status line says so).
            elif term.pending and block == term.last and status == term.status_sent:
                continue
            term.keys(*keys)
            answered += 1
            term.last, term.status_sent, term.pending, term.sent = block, status, True, keys
            if answered == 10 and midway is not None:
                midway()
        if over == len(terminals):
            return answered
        time.sleep(0.1)
    screens = "\n\n".join(t.screen() for t in terminals)
    raise AssertionError(f"the game did not end in time; the screens:\n{screens}")


def check_verified(path: Path) -> None:
    verified = subprocess.run(
        [sys.executable, "-m", "oriflamme.client.cli", "verify", str(path)],
        capture_output=True,
        text=True,
        timeout=START,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr


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
    terminal.wait_for(r"Influence Queue", timeout=START)
    answered = play_until_over([terminal], GAME_DEADLINE)
    screen = terminal.wait_for(r"Record: .*oriflamme", timeout=STEP)
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
    check_verified(path)
    terminal.keys("q")
    terminal.wait_for(r"EXITED 0", timeout=STEP)


def test_two_players_join_play_through_a_server_crash_and_replay(tmp_path: Path) -> None:
    from tests.network.server_process import ServerProcess

    server = ServerProcess(tmp_path / "server")
    port = server.start()
    terminals: list[Terminal] = []
    try:
        for name in ("Ann", "Bob"):
            state = tmp_path / name
            command = (
                f"{sys.executable} -m oriflamme.client.cli join 127.0.0.1:{port}"
                f" --name {name} --no-bell --state-dir {state}; echo EXITED $?; sleep 60"
            )
            terminals.append(Terminal(tmp_path / f"{name}.sock", command))
        ann, bob = terminals
        ann.wait_for(r"Rooms \(0\)", timeout=START)
        ann.keys("n")
        ann.wait_for(r"New room", timeout=STEP)
        ann.keys("Down", "Left")  # 3 players
        ann.wait_for(r"players\s+3", timeout=STEP)
        ann.keys("Enter")
        ann.wait_for(r"\[b/e/h\] bot", timeout=STEP)
        ann.keys("b")
        ann.wait_for(r"Bot 1", timeout=STEP)
        ann.keys("r")
        bob.wait_for(r"Ann's room", timeout=START)
        bob.keys("j")
        bob.wait_for(r"Room \"Ann's room\"", timeout=STEP)
        bob.keys("r")
        ann.wait_for(r"3 Bob\s+ready", timeout=STEP)
        ann.keys("g")
        ann.wait_for(r"Influence Queue", timeout=STEP)

        def crash() -> None:
            server.kill()
            for term in terminals:
                term.wait_for(DISCONNECTED, timeout=STEP)
            server.start()

        play_until_over(terminals, GAME_DEADLINE, midway=crash)
        screens = [t.wait_for(r"Record: \S+\.oriflamme", timeout=STEP) for t in terminals]
        for screen in screens:
            assert re.search(r"Verified( \(here too\))?: fair deal for all 3 seats", screen)
            assert "Traceback" not in screen
        record = re.search(r"Record: (\S+\.oriflamme)", screens[0])
        assert record is not None
        path = tmp_path / "Ann" / "records" / record.group(1)
        check_verified(path)
        for term in terminals:
            term.keys("q")
            term.wait_for(r"EXITED 0", timeout=STEP)

        replay = Terminal(
            tmp_path / "replay.sock",
            f"{sys.executable} -m oriflamme.client.cli replay {path}; echo EXITED $?; sleep 60",
        )
        terminals.append(replay)
        replay.wait_for(r"step 0 of \d+", timeout=START)
        replay.keys("Right", "Right", "Right")
        replay.wait_for(r"step 3 of", timeout=STEP)
        replay.keys("End")
        screen = replay.wait_for(r"Verified: fair deal", timeout=STEP)
        assert "(winner)" in screen
        replay.keys("Left")
        replay.wait_for(r"step \d+ of", timeout=STEP)
        replay.keys("q")
        replay.wait_for(r"EXITED 0", timeout=STEP)
    finally:
        for term in terminals:
            term.close()
        server.stop()

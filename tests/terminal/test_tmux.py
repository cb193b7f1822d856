"""The terminal client in a real terminal, as a person would use it: tmux
runs it at 80x24, the tests read the screen (capture-pane) and answer every
decision with the first key the screen offers (send-keys), to the end of
the game; the final scores and the verification must be on the screen, and
the record saved must pass `oriflamme verify`.

* `oriflamme play --bots 2`: a whole game against bots;
* `.venv/bin/oriflamme play` quit mid-game, from a shell: the command it says
  brings the table back, typed as it is;
* `oriflamme join`: two players in two terminals find each other's room on
  a server process, play, and the server is killed (SIGKILL) in the middle
  and started again: both screens say the connection is lost, come back by
  themselves, and the game ends verified; then `oriflamme replay` steps
  through its record."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from oriflamme.client.tui.screen import OFFER_ROWS
from tests.deadlines import GAME_HANG, HANG

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
# Each wait ends once the screen shows what it waits for: a program started
# and its screen drawn, a key answered, the server gone or back (`HANG`), a
# whole game (`GAME_HANG`). After its program, a window stays (`sleep`) for
# longer than any of them, so that its last screen can be read.
KEPT = f"sleep {GAME_HANG:.0f}"
# The status line when the connection is down: an answer now would be refused.
DISCONNECTED = "Connection to the server lost"
# The status line once the first digits of a choice are typed: the choice
# waits for Enter or the next digit.
TYPING = re.compile(r" (\d+)…?: (press Enter to choose|type the next digit)")


@dataclass(frozen=True)
class Words:
    """What the screen says, in one language, that the game's driver reads."""

    turn: str  # a decision of ours: its heading (a pattern, at a line's start)
    summary: str  # a round's summary, which any key closes
    over: str  # the game is over
    typing: re.Pattern[str]  # `TYPING`
    disconnected: str  # `DISCONNECTED`


ENGLISH = Words(
    turn=r"─ Your (?!hand)",
    summary="is over · any key goes on",
    over="Game over",
    typing=TYPING,
    disconnected=DISCONNECTED,
)
FRENCH = Words(
    turn=r"─ (À vous|Votre (?!main))",
    summary="une touche pour continuer",
    over="Partie terminée",
    typing=re.compile(r" (\d+)…? : (Entrée pour choisir|tapez le chiffre suivant)"),
    disconnected="Connexion au serveur perdue",
)


class Terminal:
    """A tmux server of our own (its own socket), one window of 80x24."""

    def __init__(
        self,
        socket: Path,
        command: str,
        width: int = 80,
        height: int = 24,
        state: Path | None = None,
    ) -> None:
        self.base = [str(TMUX), "-S", str(socket)]
        self.state = state  # the client's state directory, where the test chose it
        self.tmux("new-session", "-d", "-s", "game", "-x", str(width), "-y", str(height), command)
        self.last = ""  # the decision last answered (`decision_block`)
        self.status_sent = ""  # the status line then (`status_lines`)
        self.pending = False  # the answer's keys may not have been read yet
        self.sent: list[str] = []  # those keys

    def tmux(self, *args: str) -> str:
        done = subprocess.run(
            [*self.base, *args], capture_output=True, text=True, timeout=HANG, check=True
        )
        return done.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "game")

    def joined(self) -> str:
        """The window's text with the lines it wrapped joined again."""
        return self.tmux("capture-pane", "-p", "-J", "-t", "game")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "game", *keys)

    def wait_for(self, pattern: str, timeout: float = HANG) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if re.search(pattern, screen):
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{pattern!r} never appeared; the screen:\n{self.screen()}")

    def title(self) -> str:
        """The pane's title, as the program set it (OSC 2)."""
        return self.tmux("display-message", "-p", "-t", "game", "#{pane_title}").strip()

    def wait_for_title(self, title: str, timeout: float = HANG) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.title() == title:
                return
            time.sleep(0.1)
        raise AssertionError(f"the title never became {title!r}: it is {self.title()!r}")

    def close(self) -> None:
        subprocess.run([*self.base, "kill-server"], capture_output=True, timeout=HANG)


def decision_block(screen: str) -> str:
    """The screen but its last two lines (the status line and the keys):
    what says which decision is pending, and in what position."""
    return "\n".join(screen.splitlines()[:-2])


def status_lines(screen: str) -> str:
    """The screen's last two lines (`decision_block` is the rest)."""
    return "\n".join(screen.splitlines()[-2:])


def first_offer(screen: str, words: Words = ENGLISH) -> list[str] | None:
    """The keys that pick the first choice the screen offers, when a decision
    is ours: a position of two digits is typed digit by digit, and one that
    begins another (1, when there is a 10) is confirmed with Enter."""
    lines = screen.splitlines()
    for i, line in enumerate(lines):
        if re.match(words.turn, line):
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
    terminals: list[Terminal],
    timeout: float,
    midway: Callable[[], None] | None = None,
    *,
    until: str | None = None,
    words: Words = ENGLISH,
) -> int:
    """Answer every decision on every screen with its first offer until every
    screen says the game is over (or shows `until`, a pattern); `midway()`
    is called once, after 10 answers. The number of answers. `words`: what
    the screens say, in their language."""
    until = words.over if until is None else until
    deadline = time.monotonic() + timeout
    answered = 0
    while time.monotonic() < deadline:
        over = 0
        for term in terminals:
            screen = term.screen()
            if re.search(until, screen):
                over += 1
                continue
            if words.summary in screen:  # a round's summary: read it
                term.keys("Space")
                continue
            keys = first_offer(screen, words)
            if keys is None:
                term.pending = False  # no choice shown: the last answer was read
                continue
            if words.disconnected in screen:
                continue  # an answer now would be refused: wait for the reconnection
            block, status = decision_block(screen), status_lines(screen)
            typing = words.typing.search(status)
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


def check_verified(path: Path) -> str:
    """`oriflamme verify`'s report of the record at `path`, which must be valid."""
    verified = subprocess.run(
        [sys.executable, "-m", "oriflamme.launcher.cli", "verify", str(path)],
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
    return verified.stdout


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    state = tmp_path / "state"
    command = (
        f"{sys.executable} -m oriflamme.launcher.cli play --bots 2 --no-bell"
        f" --state-dir {state}; echo EXITED $?; {KEPT}"
    )
    term = Terminal(tmp_path / "tmux.sock", command, state=state)
    yield term
    term.close()


def test_a_complete_game_at_80x24(terminal: Terminal) -> None:
    terminal.wait_for(r"Influence Queue")
    terminal.wait_for(r"(?m)^─ Your (?!hand)")  # a decision of ours: the title says so
    terminal.wait_for_title("Your turn · Oriflamme")
    answered = play_until_over([terminal], GAME_HANG)
    screen = terminal.wait_for(r"Record: .*oriflamme")
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
    assert terminal.state is not None
    path = terminal.state / "records" / record.group(1)
    assert "[a] play again" in screen
    check_verified(path)
    terminal.keys("q")
    terminal.wait_for(r"EXITED 0")


def test_a_second_play_at_the_same_table_verifies(tmp_path: Path) -> None:
    """`oriflamme play` run again after a game over, with the same state
    directory: the new game at the same table verifies. (The snapshot of
    the game before, whose secrets were let go once its record was kept,
    said the server held another seed commitment, and the next game's end
    said "Verification FAILED".)"""
    state = tmp_path / "state"
    for run in range(2):
        command = (
            f"{sys.executable} -m oriflamme.launcher.cli play --bots 2 --no-bell --name Ann"
            f" --state-dir {state}; echo EXITED $?; {KEPT}"
        )
        term = Terminal(tmp_path / f"tmux{run}.sock", command, state=state)
        try:
            term.wait_for(r"(?m)^─ Your (?!hand)")
            play_until_over([term], GAME_HANG)
            screen = term.wait_for(r"Record: .*oriflamme")
            assert re.search(r"Verified( \(here too\))?: fair deal", screen), screen
            assert "FAILED" not in screen, screen
            term.keys("q")
            term.wait_for(r"EXITED 0")
        finally:
            term.close()


def test_a_complete_game_in_french(tmp_path: Path) -> None:
    """A player whose locale is French (`LANG=fr_FR.UTF-8`, nothing else
    set) plays a whole game: the screen, the help and the end in French,
    with the rulebook's card names."""
    state = tmp_path / "state"
    # (LC_CTYPE: the encoding, whether or not this machine has the French
    # locale installed; the language is LANG's)
    command = (
        f"env -u LANGUAGE -u LC_ALL -u LC_MESSAGES LANG=fr_FR.UTF-8 LC_CTYPE=C.UTF-8"
        f" XDG_CONFIG_HOME={tmp_path / 'config'}"
        f" {sys.executable} -m oriflamme.launcher.cli play --bots 2 --no-bell --name Anne"
        f" --state-dir {state}; echo EXITED $?; {KEPT}"
    )
    term = Terminal(tmp_path / "tmux.sock", command, state=state)
    try:
        screen = term.wait_for(r"File d'Influence")
        term.wait_for(FRENCH.turn, timeout=HANG)
        term.wait_for_title("À vous · Oriflamme")
        term.keys("?")
        shown = term.wait_for(r"Aide · les cartes")
        for name in ("Espion", "Héritier", "Seigneur", "Changeforme", "Décret royal", "Complot"):
            assert name in shown, shown
        term.keys("Space")
        screen = term.wait_for(r"(?m)^─ Joueurs")
        answered = play_until_over([term], GAME_HANG, words=FRENCH)
        screen = term.wait_for(r"Enregistrement : .*oriflamme")
        assert answered >= 6, screen
        assert "Traceback" not in screen
        assert all(len(line) <= 80 for line in screen.splitlines())
        assert re.search(r"1\. (Vous|Bot \d) (\d+) \(vainqueur\)", screen), screen
        assert re.search(r"Vérifié( \(ici aussi\))? : donne équitable pour les 3 sièges", screen)
        assert "[a] rejouer" in screen and "Partie terminée · tour 6 sur 6" in screen
        for english in ("Your hand", "Influence Queue", "placed", "revealed"):
            assert english not in screen
        record = re.search(r"Enregistrement : (\S+\.oriflamme)", screen)
        assert record is not None
        check_verified(state / "records" / record.group(1))
        term.keys("q")
        term.wait_for(r"EXITED 0")
    finally:
        term.close()


def test_quitting_mid_game_says_a_command_that_brings_the_table_back(tmp_path: Path) -> None:
    """Run as `make play` runs it (the environment's own program, by its path
    from the checkout, not on the PATH), quit mid-game: the command said at
    the end, typed as it is in the same shell, brings the same table back."""
    script = Path(sys.executable).parent / "oriflamme"
    checkout = script.parent.parent.parent  # (where `.venv` is)
    program = str(script.relative_to(checkout))
    state = tmp_path / "state"
    # A shell that stays, so that the command said can be typed in it.
    term = Terminal(tmp_path / "tmux.sock", f"sh -i; {KEPT}")
    try:
        term.keys(f"cd {checkout} && export PATH=/usr/bin:/bin", "Enter")
        term.keys(f"{program} play --bots 2 --no-bell --state-dir {state}", "Enter")
        first = term.wait_for(DEALT)
        term.keys("q")  # mid-game: it asks first
        term.wait_for(r"Quit\? Your seat is kept for you: \[y\] quit")
        term.keys("y")
        term.wait_for(r"Your seat is kept: run")
        # (the line is longer than the terminal: read as printed, unwrapped)
        said = re.search(r"run `([^`]+)` again to finish the game", term.joined())
        assert said is not None, term.joined()
        assert said.group(1) == f"{program} play --state-dir {state}"
        term.keys(said.group(1), "Enter")
        # The same deal: the same table. (The log says "Back in the game" only
        # once a card is down: a quit before that looks like a new game.)
        back = term.wait_for(DEALT)
        assert hand(back) == hand(first), (first, back)
        term.keys("q", "y")
        term.wait_for(r"Your seat is kept: run")
        assert "Traceback" not in term.joined()
    finally:
        term.close()


# The game screen once the player's cards are dealt: a card under "Your hand".
DEALT = r"─ Your hand[^\n]*\n +[A-Z]"


def hand(screen: str) -> list[str]:
    """The player's hand and the cards set aside, as the game screen shows them."""
    lines = screen.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("─ Your hand"))
    return lines[at : at + 2]


def test_two_players_join_play_through_a_server_crash_and_replay(tmp_path: Path) -> None:
    from tests.network.server_process import ServerProcess

    server = ServerProcess(tmp_path / "server")
    port = server.start()
    terminals: list[Terminal] = []
    try:
        for name in ("Ann", "Bob"):
            state = tmp_path / name
            # (two people: each with a config of their own, so a key of their own)
            command = (
                f"env XDG_CONFIG_HOME={tmp_path / name / 'config'}"
                f" {sys.executable} -m oriflamme.launcher.cli join 127.0.0.1:{port}"
                f" --name {name} --no-bell --state-dir {state}; echo EXITED $?; {KEPT}"
            )
            terminals.append(Terminal(tmp_path / f"{name}.sock", command))
        ann, bob = terminals
        ann.wait_for(r"Rooms \(0\)")
        ann.keys("n")
        ann.wait_for(r"New room")
        ann.keys("Down", "Left")  # 3 players
        ann.wait_for(r"players\s+3")
        ann.keys("Enter")
        ann.wait_for(r"\[b/e/h\] bot")
        ann.keys("b")
        ann.wait_for(r"Bot 1")
        ann.keys("r")
        bob.wait_for(r"Ann's room")
        bob.keys("j")
        bob.wait_for(r"Room \"Ann's room\"")
        bob.keys("r")
        ann.wait_for(r"3 Bob\s+ready")
        ann.keys("g")
        ann.wait_for(r"Influence Queue")

        def crash() -> None:
            server.kill()
            for term in terminals:
                term.wait_for(DISCONNECTED)
            server.start()

        play_until_over(terminals, GAME_HANG, midway=crash)
        screens = [t.wait_for(r"Record: \S+\.oriflamme") for t in terminals]
        for screen in screens:
            assert re.search(r"Verified( \(here too\))?: fair deal for all 3 seats", screen)
            assert "Traceback" not in screen
        record = re.search(r"Record: (\S+\.oriflamme)", screens[0])
        assert record is not None
        path = tmp_path / "Ann" / "records" / record.group(1)
        report = check_verified(path)
        # Ann and Bob have keys (each a config of their own): each signed every
        # decision of theirs; the server signed its bot's.
        seats = {
            int(n): key
            for n, key in re.findall(
                r"signatures: seat (\d)'s key (\S+) signs its \d+ decisions", report
            )
        }
        assert len(seats) == 2 and re.search(
            r"the server's key \S+ signs its \d+ decisions", report
        )
        for name in ("Ann", "Bob"):
            shown = subprocess.run(
                [sys.executable, "-m", "oriflamme.launcher.cli", "identity"],
                capture_output=True,
                text=True,
                timeout=HANG,
                env={**os.environ, "XDG_CONFIG_HOME": str(tmp_path / name / "config")},
            )
            assert any(key in shown.stdout for key in seats.values()), shown.stdout
        for term in terminals:
            term.keys("q")
            term.wait_for(r"EXITED 0")

        replay = Terminal(
            tmp_path / "replay.sock",
            f"{sys.executable} -m oriflamme.launcher.cli replay {path}; echo EXITED $?; {KEPT}",
        )
        terminals.append(replay)
        replay.wait_for(r"step 0 of \d+")
        replay.keys("Right", "Right", "Right")
        replay.wait_for(r"step 3 of")
        replay.keys("End")
        screen = replay.wait_for(r"Verified: fair deal")
        assert "(winner)" in screen
        replay.keys("Left")
        replay.wait_for(r"step \d+ of")
        replay.keys("q")
        replay.wait_for(r"EXITED 0")
    finally:
        for term in terminals:
            term.close()
        server.stop()

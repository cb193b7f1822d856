"""My games in a real terminal: a player in `oriflamme join` makes a game of
days against two bots, steps out of it with [L] (the seat kept), is told in
the lobby when it waits for them ("Your turn in 1 game"), lists it with [m],
goes back with Enter, and plays it to its verified end, while the state
directory kept the game's secrets all along.

tmux runs the program at 80x24 (`test_tmux.Terminal`) against a server
process; every wait ends once the screen shows what it waits for."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.deadlines import GAME_HANG
from tests.terminal import test_tmux
from tests.terminal.test_tmux import DEALT, KEPT, Terminal, play_until_over

pytestmark = test_tmux.pytestmark  # (tmux, a process)


def test_a_player_steps_out_of_a_game_of_days_and_comes_back_to_it(tmp_path: Path) -> None:
    from tests.network.server_process import ServerProcess

    server = ServerProcess(tmp_path / "server")
    port = server.start()
    state = tmp_path / "Ann"
    command = (
        f"env XDG_CONFIG_HOME={state / 'config'}"
        f" {sys.executable} -m oriflamme.launcher.cli join 127.0.0.1:{port}"
        f" --name Ann --no-bell --state-dir {state}; echo EXITED $?; {KEPT}"
    )
    term = Terminal(tmp_path / "Ann.sock", command, state=state)
    try:
        term.wait_for(r"Rooms \(0\)")
        term.keys("n")
        term.wait_for(r"New room")
        term.keys("Down", "Left")  # 3 players
        term.wait_for(r"players\s+3")
        term.keys("Down", "Down", "Left")  # the turn timer: 2 days
        term.wait_for(r"turn timer\s+2 days a decision")
        term.keys("Enter")
        term.wait_for(r"\[b/e/h\] bot")
        term.keys("b")
        term.wait_for(r"Bot 1")
        term.keys("b")
        term.wait_for(r"Bot 2")
        term.keys("r")
        term.wait_for(r"1 You\s+ready")
        term.keys("g")
        term.wait_for(DEALT)
        term.keys("L")
        term.wait_for(r"Your seat is kept: \[m\] my games takes you back to it")
        assert [p for p in (state / "games").iterdir() if p.suffix == ".secrets"]  # kept
        # The bots play until the game waits for Ann: the lobby says so.
        term.wait_for(r"Your turn in 1 game: \[m\]")
        term.wait_for_title("Your turn · Oriflamme")  # (while a game waits)
        term.keys("m")
        screen = term.wait_for(r"(?m)^ ▸ Ann's room .* · round \d · your turn  ⏱ [12]d")
        assert "My games (1)" in screen
        term.keys("Enter")
        term.wait_for(r"(?m)^─ Your (?!hand)")  # back at the table: our decision
        play_until_over([term], GAME_HANG)
        screen = term.wait_for(r"Record: \S+\.oriflamme")
        assert "Verified" in screen and "Traceback" not in screen
        term.keys("q")
        term.wait_for(r"EXITED 0")
    finally:
        term.close()
        server.stop()

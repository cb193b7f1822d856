"""examples/minimal_bot.py, the third-party starting point, against a real server:
it must finish its games with verdict ok, and the server's records must verify."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.deadlines import GAME_HANG, HANG
from tests.network.server_process import COMMAND, ServerProcess

pytestmark = [pytest.mark.network, pytest.mark.process]

ROOT = Path(__file__).resolve().parents[2]
BOT = ROOT / "examples" / "minimal_bot.py"


def test_the_vectors_check_out() -> None:
    result = subprocess.run(
        [sys.executable, str(BOT), "--self-test"], capture_output=True, text=True, timeout=HANG
    )
    assert result.returncode == 0, result.stderr
    assert "every test vector checks out" in result.stdout


def test_minimal_bot_plays_games_whose_records_verify(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "data")
    data = server.data_dir
    try:
        port = server.start()

        for players, bots in [(3, 2), (2, 1)]:
            args = [f"127.0.0.1:{port}", "--create", str(players), "--bots", str(bots)]
            played = subprocess.run(
                [sys.executable, str(BOT), *args], capture_output=True, text=True, timeout=GAME_HANG
            )
            assert played.returncode == 0, played.stdout + played.stderr
            record_id = re.search(r"^record: (\w+)$", played.stdout, re.M)
            assert record_id, played.stdout
            # Stored with the game's end, before game_end was sent: there already.
            exported = tmp_path / f"exported-{players}"
            subprocess.run(
                [*COMMAND, "export-records", str(data), str(exported)], check=True, timeout=HANG
            )
            record = exported / f"{record_id.group(1)}.oriflamme"
            verified = subprocess.run(
                [*COMMAND, "verify", str(record)], capture_output=True, text=True, timeout=HANG
            )
            assert verified.returncode == 0, verified.stdout + verified.stderr
            assert "verdict: VALID" in verified.stdout
    finally:
        server.stop()


if os.name != "posix":
    pytestmark.append(pytest.mark.skip(reason="these tests need a POSIX system"))

"""examples/minimal_bot.py, the third-party starting point, against a real server:
it must finish its games with verdict ok, and the server's records must verify."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BOT = ROOT / "examples" / "minimal_bot.py"
COMMAND = [sys.executable, "-m", "oriflamme.client.cli"]


def test_the_vectors_check_out() -> None:
    result = subprocess.run(
        [sys.executable, str(BOT), "--self-test"], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0, result.stderr
    assert "every test vector checks out" in result.stdout


def test_minimal_bot_plays_games_whose_records_verify(tmp_path: Path) -> None:
    data = tmp_path / "data"
    server = subprocess.Popen(
        [*COMMAND, "serve", "--port", "0", "--data-dir", str(data), "--log-level", "info"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stderr is not None
        port = None
        deadline = time.monotonic() + 20
        while port is None and time.monotonic() < deadline:
            found = re.search(r"serving on \S+ port (\d+)", server.stderr.readline())
            if found:
                port = int(found.group(1))
        assert port is not None, "the server did not say where it listens"

        for players, bots in [(3, 2), (2, 1)]:
            args = [f"127.0.0.1:{port}", "--create", str(players), "--bots", str(bots)]
            played = subprocess.run(
                [sys.executable, str(BOT), *args], capture_output=True, text=True, timeout=30
            )
            assert played.returncode == 0, played.stdout + played.stderr
            record_id = re.search(r"^record: (\w+)$", played.stdout, re.M)
            assert record_id, played.stdout
            record = data / "records" / f"{record_id.group(1)}.oriflamme"
            deadline = time.monotonic() + 10  # the server writes it just after game_end
            while not record.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            verified = subprocess.run(
                [*COMMAND, "verify", str(record)], capture_output=True, text=True, timeout=30
            )
            assert verified.returncode == 0, verified.stdout + verified.stderr
            assert "verdict: VALID" in verified.stdout
    finally:
        if server.poll() is None:
            server.kill()
        server.wait(timeout=10)


if os.name != "posix":
    pytestmark = pytest.mark.skip(reason="these tests need a POSIX system")

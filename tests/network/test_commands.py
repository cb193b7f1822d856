"""`oriflamme serve`, `bot`, `rooms` and `verify` as a person runs them: real
processes, real sockets on 127.0.0.1, every wait with a deadline."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.network.server_process import COMMAND, ServerProcess


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[int, Path, subprocess.Popen[bytes]]]:
    process = ServerProcess(tmp_path / "data")
    port = process.start()
    assert process.process is not None
    try:
        yield port, process.data_dir, process.process
    finally:
        process.stop()


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*COMMAND, *args], capture_output=True, text=True, timeout=timeout)


def test_three_bot_processes_play_a_game_whose_record_verifies(
    server: tuple[int, Path, subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    port, data, _ = server
    bots = [
        subprocess.Popen(
            [
                *COMMAND,
                "bot",
                f"127.0.0.1:{port}",
                "--room",
                "friday",
                "--players",
                "3",
                "--games",
                "2",
                "--name",
                f"bot{i}",
                "--state-dir",
                str(tmp_path / f"bot{i}"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(3)
    ]
    try:
        for bot in bots:
            out, err = bot.communicate(timeout=120)
            assert bot.returncode == 0, err
            assert "2 game(s) played" in out
    finally:  # a failure leaves no bot behind, reconnecting for ever
        for bot in bots:
            if bot.poll() is None:
                bot.kill()
                bot.wait(timeout=10)
    records = sorted((data / "records").glob("*.oriflamme"))
    assert len(records) == 2
    for record in records:
        # Downloaded from the server, as a player would, then checked offline.
        out = tmp_path / "downloaded.oriflamme"
        got = run("record", f"127.0.0.1:{port}", record.stem, "-o", str(out))
        assert got.returncode == 0, got.stderr
        assert out.read_bytes() == record.read_bytes()
        verified = run("verify", str(out))
        assert verified.returncode == 0, verified.stdout
        assert "verdict: VALID" in verified.stdout
    missing = run("record", f"127.0.0.1:{port}", "0" * 32)
    assert missing.returncode == 1 and "no record" in missing.stderr


def test_rooms_lists_the_rooms(server: tuple[int, Path, subprocess.Popen[bytes]]) -> None:
    port, _, _ = server
    listed = run("rooms", f"127.0.0.1:{port}")
    assert listed.returncode == 0 and listed.stdout.strip() == "no rooms"
    bad = run("rooms", "127.0.0.1:notaport")
    assert bad.returncode == 2 and "not a port number" in bad.stderr


def test_sigterm_tells_the_clients_and_exits(
    server: tuple[int, Path, subprocess.Popen[bytes]],
) -> None:
    import socket

    port, _, process = server
    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        client.settimeout(10)
        process.send_signal(signal.SIGTERM)
        received = b""
        while b"shutting_down" not in received:
            chunk = client.recv(4096)
            if not chunk:
                break
            received += chunk
        assert b"shutting_down" in received
    assert process.wait(timeout=15) == 0


def test_rooms_of_a_server_that_is_not_there_says_so_plainly() -> None:
    with socketserver_port() as port:
        pass  # closed again: nothing listens there now
    result = run("rooms", f"127.0.0.1:{port}", timeout=60)
    assert result.returncode == 1
    assert "cannot get the rooms" in result.stderr and "Traceback" not in result.stderr


class socketserver_port:
    """A free port on 127.0.0.1 (bound, then released)."""

    def __enter__(self) -> int:
        import socket

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        port: int = self.sock.getsockname()[1]
        return port

    def __exit__(self, *exc: object) -> None:
        self.sock.close()


if os.name != "posix":  # signals and process groups as on Linux
    pytestmark = pytest.mark.skip(reason="these tests need a POSIX system")

"""A server that announces itself on the local network (`oriflamme serve
--host 0.0.0.0`, discovery on) stops on SIGTERM and on Ctrl-C as one without
its beacon does: it says it stopped, exits 0, and leaves nothing behind.

(Issue 25: the beacon, which runs until cancelled, was never cancelled; the
server hung after "shutting down", and a second SIGTERM killed it halfway,
multiprocessing's resource tracker then reporting leaked semaphores.)
Whether its datagrams reach anyone does not matter here: with no broadcast
route the beacon runs all the same, logging its failed sends at debug level.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.deadlines import HANG
from tests.network.server_process import COMMAND

pytestmark = [pytest.mark.network, pytest.mark.process]

NAME = "oriflamme test suite"


class LanServer:
    """`oriflamme serve --host 0.0.0.0`, its output read from a pipe until
    the pipe's end: until every process that writes to it has exited, the
    server and its helpers (multiprocessing's resource tracker, which says
    what a server killed halfway leaked, and any worker) alike."""

    def __init__(self, data_dir: Path) -> None:
        self.process = subprocess.Popen(
            [
                *COMMAND,
                "serve",
                "--host",
                "0.0.0.0",
                "--port",
                "0",
                "--name",
                NAME,
                "--data-dir",
                str(data_dir),
                "--log-level",
                "info",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        self.output = bytearray()
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        while chunk := os.read(self.process.stdout.fileno(), 65536):
            with self.lock:
                self.output += chunk

    def log(self) -> str:
        with self.lock:
            return self.output.decode(errors="replace")

    def wait_for_log(self, pattern: str) -> None:
        """Once the server has logged `pattern`; AssertionError if it exits
        first, or never does."""
        deadline = time.monotonic() + HANG
        while not re.search(pattern, self.log()):
            assert self.process.poll() is None, f"the server exited:\n{self.log()}"
            assert time.monotonic() < deadline, (
                f"the server never logged {pattern!r}:\n{self.log()}"
            )
            time.sleep(0.02)

    def wait_for_the_end_of_its_output(self) -> str:
        """All it and its helpers wrote, once the last of them has exited."""
        self.reader.join(timeout=HANG)
        assert not self.reader.is_alive(), f"its output never ended:\n{self.log()}"
        return self.log()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=HANG)
        self.reader.join(timeout=HANG)
        assert self.process.stdout is not None
        self.process.stdout.close()


@pytest.fixture
def lan_server(tmp_path: Path) -> Iterator[LanServer]:
    served = LanServer(tmp_path / "data")
    try:
        # Logged once SIGTERM and Ctrl-C are the server's, its beacon started.
        served.wait_for_log(r"serving on 0\.0\.0\.0 port \d+")
        yield served
    finally:
        served.stop()  # a test that failed leaves no server behind


def send_together(pid: int, signals: tuple[signal.Signals, ...]) -> None:
    """Send `signals`, all of them pending before the server handles any: sent
    while it is stopped (one after the other, a fast stop could be over
    before the second came, and the second would find no server)."""
    if len(signals) == 1:
        os.kill(pid, signals[0])
        return
    os.kill(pid, signal.SIGSTOP)
    try:
        for signum in signals:
            os.kill(pid, signum)
    finally:
        os.kill(pid, signal.SIGCONT)


@pytest.mark.parametrize(
    "signals",
    [
        (signal.SIGTERM,),
        (signal.SIGINT,),
        # A second signal while it stops is said, and the stop goes on. (Two
        # different ones: trio would merge two of the same. Both pending at
        # once, they are handled in the order of their numbers, SIGINT first.)
        (signal.SIGTERM, signal.SIGINT),
    ],
    ids=["SIGTERM", "SIGINT", "SIGTERM-and-SIGINT"],
)
def test_a_server_announcing_itself_on_the_lan_stops(
    lan_server: LanServer, signals: tuple[signal.Signals, ...]
) -> None:
    process = lan_server.process
    send_together(process.pid, signals)
    # The deadline catches a hang (the bug: it never exited); a clean stop
    # takes a fraction of a second.
    assert process.wait(timeout=HANG) == 0, lan_server.log()
    log = lan_server.wait_for_the_end_of_its_output()
    # It did announce itself: its beacon was running when it was told to stop.
    assert f"announcing itself on the local network as '{NAME}'" in log, log
    said = re.findall(r"(SIG[A-Z]+): (already )?shutting down", log)
    assert sorted(name for name, _ in said) == sorted(s.name for s in signals), log
    assert [again for _, again in said] == [""] + ["already "] * (len(signals) - 1), log
    assert log.rstrip().splitlines()[-1].endswith("INFO oriflamme.server: stopped"), log
    assert "leaked semaphore" not in log and "resource_tracker" not in log, log
    assert "Traceback" not in log and "KeyboardInterrupt" not in log, log

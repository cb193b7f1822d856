"""`oriflamme serve` as a real process, for tests that stop it, kill it and
start it again over the same data directory."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.deadlines import HANG

COMMAND = [sys.executable, "-m", "oriflamme.launcher.cli"]


class ServerProcess:
    """A server process; its log goes to `log_path` (by default next to the
    data directory; read, never piped: a pipe nobody reads would stall the
    server)."""

    def __init__(
        self,
        data_dir: Path,
        port: int = 0,
        log_path: Path | None = None,
        options: tuple[str, ...] = (),
        command: list[str] | None = None,
    ) -> None:
        self.command = command or COMMAND  # (a test may run the server's main its own way)
        self.data_dir = data_dir
        self.options = options  # more `oriflamme serve` options
        self.port = port
        self.log_path = log_path or data_dir.parent / f"{data_dir.name}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.offset = 0  # where the log of its last start begins

    def start(self, timeout: float = HANG) -> int:
        """Start the server (on the port it had, after the first start) and
        return its port once it listens."""
        assert self.process is None or self.process.poll() is not None
        self.starts += 1
        self.offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [
                    *self.command,
                    "serve",
                    "--port",
                    str(self.port),
                    "--data-dir",
                    str(self.data_dir),
                    "--log-level",
                    "info",
                    *self.options,
                ],
                stdout=log,
                stderr=log,
            )
        found = self.wait_for_log(rb"serving on \S+ port (\d+)", timeout)
        self.port = int(found.group(1))
        return self.port

    def wait_for_log(self, pattern: bytes, timeout: float = HANG) -> re.Match[bytes]:
        """The first match of `pattern` in what the server logged since its
        last start, once it is there. AssertionError if the server exits
        without logging it."""
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.search(pattern, self.log_path.read_bytes()[self.offset :])
            if found:
                return found
            if self.process.poll() is not None:
                raise AssertionError(f"the server exited:\n{self.log()}")
            time.sleep(0.02)
        raise AssertionError(f"the server never logged {pattern!r}:\n{self.log()}")

    def kill(self) -> None:
        """SIGKILL: no goodbye, no last write."""
        assert self.process is not None
        self.process.kill()
        self.process.wait(timeout=HANG)

    def terminate(self, timeout: float = HANG) -> int:
        """SIGTERM, and its exit status."""
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=timeout)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=HANG)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

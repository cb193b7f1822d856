"""`oriflamme serve` as a real process, for tests that stop it, kill it and
start it again over the same data directory."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

COMMAND = [sys.executable, "-m", "oriflamme.client.cli"]


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
    ) -> None:
        self.data_dir = data_dir
        self.options = options  # more `oriflamme serve` options
        self.port = port
        self.log_path = log_path or data_dir.parent / f"{data_dir.name}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self, timeout: float = 20.0) -> int:
        """Start the server (on the port it had, after the first start) and
        return its port once it listens."""
        assert self.process is None or self.process.poll() is not None
        self.starts += 1
        offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [
                    *COMMAND,
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
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.search(rb"serving on \S+ port (\d+)", self.log_path.read_bytes()[offset:])
            if found:
                self.port = int(found.group(1))
                return self.port
            if self.process.poll() is not None:
                raise AssertionError(f"the server exited at start:\n{self.log()}")
            time.sleep(0.02)
        raise AssertionError(f"the server did not say where it listens:\n{self.log()}")

    def kill(self) -> None:
        """SIGKILL: no goodbye, no last write."""
        assert self.process is not None
        self.process.kill()
        self.process.wait(timeout=10)

    def terminate(self, timeout: float = 20.0) -> int:
        """SIGTERM, and its exit status."""
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=timeout)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

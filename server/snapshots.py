"""Snapshots of the lobby, pickled by a forked child while the server goes on.

How this works
--------------
A snapshot is the whole lobby pickled: at 19,000 sessions and 200 games,
some 40 MB and a second of CPU, and while it is made as many MB again of
short-lived objects (the pickler's memo keeps every state tuple it made
until the end). Pickled in the server's own process, that stalled every
room for the second, and the allocator did not give all of that memory back.

So where there is `os.fork` (Linux, the BSDs, macOS), `start_snapshot`
forks: the child has the lobby exactly as it is at that instant (its pages
shared, copied only where touched), pickles it into a file, reports over a
pipe, and exits. The server goes on at once; `SnapshotJob.wait` waits for
the child without blocking the event loop and gives the file back, ready to
be stored. The memory the pickling takes is the child's, for as long as it
runs (it touches most of the heap's pages: at most about the server's RSS
again, for about a second), and all of it goes when it exits.

The child does nothing else: no trio, no log, no store. It closes the
server's sockets and files (a connection the server closes meanwhile must
close at once), ignores the terminal's Ctrl-C and SIGTERM (the server
decides when to stop; they are held back from the fork until then), dies
with the server (Linux), yields the CPU to it (niceness 10), offers itself
first to the out-of-memory killer, and ends with `os._exit` whatever
happens. One that takes more than `SNAPSHOT_DEADLINE` is killed. Where
there is no fork, or the fork fails (out of memory, out of processes), the
lobby is pickled in the server's process into the same file, as before.

>>> import tempfile, trio
>>> async def demo():
...     with tempfile.TemporaryFile() as file:
...         job = start_snapshot({"rooms": 3}, file)
...         saved = await job.wait()
...         saved.seek(0)
...         return pickle.load(saved)
>>> trio.run(demo)
{'rooms': 3}
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import logging
import os
import pickle
import signal
import threading
import time
import warnings
from collections.abc import Callable
from typing import BinaryIO

import trio

from .tuning import collector_paused

log = logging.getLogger(__name__)

SNAPSHOT_DEADLINE = 600.0  # seconds a child may take before it is killed
CHILD_NICENESS = 10  # as the bots' search workers: the players first
_PR_SET_PDEATHSIG = 1
_REPORT_LIMIT = 2000  # bytes of a child's error message read back


def _find_prctl() -> Callable[..., int] | None:
    # Looked up here, in the server: in the child, dlsym would take the
    # loader's lock, which another thread may have held at the fork.
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # (not Linux)
        return None


_prctl = _find_prctl()


class SnapshotFailed(Exception):
    """The snapshot could not be made (the message says why, for a person)."""


class SnapshotJob:
    """A snapshot on its way into `file`; see the module docstring. Its
    owner calls `close` once done with it, whatever happened."""

    def __init__(
        self,
        file: BinaryIO,
        pid: int | None = None,
        report: int | None = None,
        *,
        failed: str | None = None,
    ) -> None:
        self.file = file
        self.pid = pid  # the child's (None: none, or reaped)
        self._report = report  # the read end of the child's pipe
        self._failed = failed  # why it could not be started or pickled in process
        self._started = time.monotonic()

    async def wait(self, deadline: float = SNAPSHOT_DEADLINE) -> BinaryIO:
        """The file, once the child has written it; raises `SnapshotFailed`
        if it could not, or took more than `deadline` seconds (it is killed).
        Cancelled, the child is killed."""
        if self._failed is not None:
            raise SnapshotFailed(self._failed)
        if self.pid is None:
            return self.file
        assert self._report is not None
        said = bytearray()
        try:
            with trio.move_on_after(deadline) as late:
                async with trio.lowlevel.FdStream(self._report) as report:
                    self._report = None  # the stream closes it
                    while chunk := await report.receive_some(_REPORT_LIMIT):
                        said += chunk[: _REPORT_LIMIT - len(said)]
            if late.cancelled_caught:
                raise SnapshotFailed(f"the process pickling the lobby took over {deadline:g} s")
            # The pipe's end: the child has exited, or is exiting (brief).
            _, status, usage = os.wait4(self.pid, 0)
        except BaseException:
            self.close()
            raise
        self.pid = None
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            why = said.decode("utf-8", "replace").strip() or (
                f"killed by signal {-code}" if code < 0 else f"exit status {code}"
            )
            if code == -signal.SIGKILL:
                why += " (out of memory?)"
            raise SnapshotFailed(f"the process pickling the lobby failed: {why}")
        log.debug(
            "snapshot pickled by a child process in %.2f s"
            " (its peak RSS %.0f MB, shared pages included)",
            time.monotonic() - self._started,
            usage.ru_maxrss / 1024,
        )
        return self.file

    def close(self) -> None:
        """Kill the child if it still runs, and close the file. Waits 50 ms
        at most: a child that does not go by then is reaped by a thread."""
        if self._report is not None:
            os.close(self._report)
            self._report = None
        pid, self.pid = self.pid, None
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            if not _reaped(pid, within=0.05):  # (in the middle of a disk write, say)
                threading.Thread(
                    target=_reap, args=(pid,), name="snapshot reaper", daemon=True
                ).start()
        self.file.close()


def _reaped(pid: int, within: float) -> bool:
    """Whether child `pid` was reaped within `within` seconds (it was killed:
    it goes at once unless the kernel holds it in a disk write)."""
    until = time.monotonic() + within
    while True:
        try:
            if os.waitpid(pid, os.WNOHANG)[0] != 0:
                return True
        except ChildProcessError:
            return True
        if time.monotonic() >= until:
            return False
        time.sleep(0.001)


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def start_snapshot(lobby: object, file: BinaryIO) -> SnapshotJob:
    """Start pickling `lobby` into `file` (empty, open for reading and
    writing); see the module docstring. Never raises: a job that could not
    be started fails when waited for."""
    if hasattr(os, "fork"):
        try:
            report, told = os.pipe()
        except OSError as exc:  # out of files
            return SnapshotJob(file, failed=f"no pipe for the pickling process: {exc.strerror}")
        server = os.getpid()
        # Ctrl-C and SIGTERM wait until the child has its own handlers (the
        # server's are trio's): pending meanwhile, then delivered to the server.
        blocked = _block_stop_signals()
        try:
            with warnings.catch_warnings():
                # Python 3.12 warns of fork() in a process with threads (the
                # store's, trio's): the child calls nothing that takes their locks.
                warnings.simplefilter("ignore", DeprecationWarning)
                pid = os.fork()
        except OSError as exc:
            _unblock(blocked)
            os.close(report)
            os.close(told)
            log.warning("cannot fork to pickle the lobby (%s): pickling it here", exc)
        else:
            if pid == 0:  # the child
                _pickle_and_exit(lobby, file, report, told, server, blocked)
            _unblock(blocked)
            os.close(told)
            return SnapshotJob(file, pid, report)
    try:
        with collector_paused():
            _pickle_into(lobby, file)
    except Exception as exc:
        return SnapshotJob(file, failed=f"the lobby could not be pickled: {exc!r}")
    return SnapshotJob(file)


_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def _block_stop_signals() -> bool:
    try:
        signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    except (AttributeError, ValueError, OSError):  # (no such call here)
        return False
    return True


def _unblock(blocked: bool) -> None:
    if blocked:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)


def _pickle_into(lobby: object, file: BinaryIO) -> None:
    # A buffered writer of its own on the descriptor: it retries short writes
    # and raises on a full disk (pickle alone would not notice either).
    with open(file.fileno(), "wb", closefd=False) as out:
        pickle.dump(lobby, out, protocol=pickle.HIGHEST_PROTOCOL)


def _close_all_but(*kept: int) -> None:
    """Close every inherited descriptor but stdin, stdout, stderr and `kept`:
    the server's sockets (a connection it closes must close now, not when
    this child exits), its listener, its database."""
    low = 3
    for fd in sorted(kept):
        if fd >= low:
            os.closerange(low, fd)
            low = fd + 1
    os.closerange(low, max(low, os.sysconf("SC_OPEN_MAX")))


def _pickle_and_exit(
    lobby: object, file: BinaryIO, report: int, told: int, server: int, blocked: bool
) -> None:
    code = 1
    try:
        for number in _STOP_SIGNALS:  # the server decides when to stop
            with contextlib.suppress(ValueError, OSError):
                signal.signal(number, signal.SIG_IGN)
        with contextlib.suppress(ValueError):  # (a fork from a thread other than the main one)
            signal.set_wakeup_fd(-1)  # trio's, shared with the server
        _unblock(blocked)
        if _prctl is not None:  # die with the server; it may be gone already
            _prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != server:
            return
        os.close(report)
        _close_all_but(file.fileno(), told)
        gc.disable()  # a collection would touch (and so copy) every page
        # The out-of-memory killer: this one first, not the server.
        with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w") as oom:
            oom.write("1000")
        with contextlib.suppress(OSError, AttributeError):  # the rooms have the CPU first
            os.nice(CHILD_NICENESS)
        _pickle_into(lobby, file)
        code = 0
    except BaseException as exc:  # told to the server, which logs it
        with contextlib.suppress(BaseException):
            os.write(told, f"{type(exc).__name__}: {exc}".encode()[:_REPORT_LIMIT])
    finally:
        os._exit(code)

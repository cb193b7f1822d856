"""The server under load: thousands of idle connections, and games played among them.

Against ONE server process (`oriflamme serve --port P --data-dir TMP`, with
its SQLite journal on, the abuse limits raised out of the way: every
connection comes from 127.0.0.1), in one run:

1. **Games, no idle connection** (the baseline): `--tables` tables of 3
   sessions, from 2 driver processes, the lean load of `bench/server.py`
   (its own code: `QuickBot`, `CountingBehaviour`, trio `Session`s; each
   seat picks a random option, frames are decoded without the strict
   checks), play games one after the other for a window: decisions/s and
   the latency from a decision answered to the next `game_state` push
   (p50, p99). After the window the tables finish the game they are in,
   stay connected and wait, ready.
2. **Idle connections**, opened by steps up to `--steps` (1,000, 5,000,
   10,000, 19,000) from driver processes (`bench/_load_client.py`: raw
   sockets under one `selectors` loop, at most `--per-driver` connections
   each, every process with its open-file soft limit raised to the hard
   one). Each says `hello`, reads its `welcome`, then sends nothing but a
   `ping` every `--ping-interval` seconds (the server closes a connection
   silent for 120 s). The steps add to what is held (the server keeps a
   closed connection's session for 10 minutes and has room for 20,000
   sessions: closing and opening again would run out of sessions, not of
   connections). For each step: connections held (welcomed and still
   open), the accept+hello rate while opening, the hello's latency, the
   server's RSS (VmRSS) before and after and so RSS per idle connection,
   against the target of 8 KB, and the server's open files. The
   baseline's games are played first so that no idle session is left in
   the server when they are measured; the memory they leave behind is in
   the RSS "before". Every 50,000 journal entries the server takes its
   lobby's facts (read here from its SQLite file), in its own process,
   between two inputs (the rooms wait meanwhile). A step or a window in
   which that happened says so.
3. **The same games while the idle connections are held**: the same
   tables, the same window.
4. **The echo baseline** (`bench/server.py`'s trio echo server, its own
   process, afterwards): one connection per table, each with one typical
   decision frame in flight, answered with a typical `game_state` push.

The server process may hold 20,000 open files (the machine's hard limit):
19,000 idle connections and 600 game connections leave it about 380 for
its listener, journal, log, and trio's own.

    python bench/load.py            # the full set (about 3 minutes)
    python bench/load.py --quick    # smoke run: 1,000 and 2,000 idle, 20 tables (< 1 minute)
    python bench/load.py --steps 1000,19000 --tables 200 --seconds 15
    python bench/load.py --profile-server   # cProfile of the server, window with idle connections
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import math
import multiprocessing
import multiprocessing.connection
import os
import random
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import trio

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from _load_client import (  # noqa: E402
    idle_driver,
    one_address_limits,
    raise_fd_limit,
    rss_kb,
    set_death_signal,
)


def _import_bench_server() -> Any:
    """bench/server.py as the module `bench_server` (its drivers, its echo
    server, its /proc helpers), without a name that could mean the
    project's `server` package."""
    name = "bench_server"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, HERE / "server.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # the drivers' pickled stats name it
    spec.loader.exec_module(module)
    return module


bs = _import_bench_server()

from oriflamme.protocol import codec  # noqa: E402

HOST = "127.0.0.1"
TARGET_KB = 8.0  # RSS per idle connection
STOP_TIMEOUT = 90.0  # SIGTERM to exit, at most (it stores a snapshot of its lobby first)
FD_HEADROOM = 100  # open files the server keeps for itself (listener, journal, log, trio)
SERVER_COMMAND = [sys.executable, "-m", "oriflamme.launcher.cli", "serve"]


# ---------------------------------------------------------------- /proc


def open_files(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


def fd_limit_of(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/limits") as f:
            for line in f:
                if line.startswith("Max open files"):
                    soft, hard = line.split()[3:5]
                    return f"{soft}/{hard}"
    except OSError:
        pass
    return "?"


def journal_state(database: Path) -> tuple[int, int]:
    """(the size of the server's last facts of its lobby, its tables' rows, the entries
    journaled since), read from its SQLite file (WAL: a reader does not stop
    the server's writes). The facts, every 50,000 entries, are taken by the
    server's core task between two inputs, then stored (a few tenths of a
    second in which nothing is appended)."""
    import sqlite3

    try:
        db = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=2)
        try:
            row = db.execute(
                "SELECT (SELECT total(length(data)) FROM lobby)"
                " + (SELECT total(length(data)) FROM sessions)"
                " + (SELECT total(length(data)) FROM rooms)"
                " + (SELECT total(length(data)) FROM games)"
            ).fetchone()
            count = db.execute("SELECT count(*) FROM journal").fetchone()
        finally:
            db.close()
    except sqlite3.Error:
        return -1, -1
    return (int(row[0]) if row else 0), int(count[0])


def sysctl(name: str) -> str:
    try:
        return Path("/proc/sys", *name.split(".")).read_text().split("\n")[0].replace("\t", "-")
    except OSError:
        return "?"


def ceilings(peak_fds: int, server_limit: str, held: int, game_connections: int) -> str:
    """What bounds the number of connections here, and how near the run came to it."""
    low, _, high = sysctl("net.ipv4.ip_local_port_range").partition("-")
    ports = int(high) - int(low) + 1 if low.isdigit() and high.isdigit() else 0
    return "\n".join(
        [
            f"  the server's open files: {peak_fds:,} at the peak, its limit {server_limit}"
            f" ({held:,} idle + {game_connections} game connections + its own);",
            f"  the server's sessions: {held + game_connections:,} at the peak, of 20,000"
            " (ServerConfig.max_sessions; a closed connection's session is kept 10 minutes);",
            f"  ephemeral ports: {ports:,} ({sysctl('net.ipv4.ip_local_port_range')}) for each"
            " (client address, server address and port);",
            f"  listen backlog: somaxconn {sysctl('net.core.somaxconn')}, SYN backlog"
            f" {sysctl('net.ipv4.tcp_max_syn_backlog')}; connections opening at once"
            " = drivers x --concurrency",
        ]
    )


def mb(kb: float) -> str:
    return f"{kb / 1024:,.1f}"


# ---------------------------------------------------------------- the server


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _server_preexec() -> None:
    raise_fd_limit()
    set_death_signal()


def start_server(
    children: Any, args: argparse.Namespace, workdir: Path
) -> tuple[subprocess.Popen[bytes], int, Path]:
    """The server, on a port chosen here (so that it can log at warning
    level: no line per connection), once it accepts connections."""
    port = free_port()
    log_path = workdir / "server.log"
    command = [
        *SERVER_COMMAND,
        "--port",
        str(port),
        "--data-dir",
        str(workdir / "data"),
        "--log-level",
        args.server_log_level,
        *one_address_limits(SERVER_COMMAND, 30000),
    ]
    if args.profile_server:
        boot = [sys.executable, "-c", bs.PROFILE_BOOT, str(workdir / "server.prof"), "cpu"]
        command = [*boot, *command[3:]]  # `serve` and its options
    with open(log_path, "wb") as log:
        popen = subprocess.Popen(
            command,
            stdout=log,
            stderr=log,
            stdin=subprocess.DEVNULL,
            preexec_fn=_server_preexec,
        )
    children.popens.append(popen)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if popen.poll() is not None:
            break
        with contextlib.suppress(OSError), socket.create_connection((HOST, port), timeout=1):
            return popen, port, log_path
        time.sleep(0.05)
    raise RuntimeError(
        f"the server did not listen on port {port}:\n"
        + log_path.read_text(errors="replace")[-3000:]
    )


class ServerDied(RuntimeError):
    pass


class Watch:
    """Waits with deadlines that also end when the server dies."""

    def __init__(self, server: subprocess.Popen[bytes]) -> None:
        self.server = server

    def check(self) -> None:
        if self.server.poll() is not None:
            raise ServerDied(f"the server exited (status {self.server.returncode})")

    def sleep_until(self, t: float) -> None:
        while (left := t - time.monotonic()) > 0:
            self.check()
            time.sleep(min(left, 0.2))
        self.check()

    def receive(
        self, link: multiprocessing.connection.Connection, deadline: float, what: str
    ) -> Any:
        while True:
            self.check()
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{what}: no answer in time")
            if link.poll(min(left, 0.2)):
                try:
                    message = link.recv()
                except EOFError:
                    raise RuntimeError(f"{what}: the driver exited without a word") from None
                if isinstance(message, dict) and "error" in message:
                    raise RuntimeError(f"{what} failed:\n{message['error']}")
                if isinstance(message, tuple) and message[0] == "error":
                    raise RuntimeError(f"{what} failed:\n{message[1]}")
                return message


# ---------------------------------------------------------------- the game drivers


async def _receive_command(
    pipe: multiprocessing.connection.Connection, timeout: float
) -> tuple[Any, ...]:
    if not await trio.to_thread.run_sync(pipe.poll, timeout):
        raise TimeoutError(f"no word from the parent in {timeout:g} s")
    command: tuple[Any, ...] = pipe.recv()
    return command


async def _tables_driver(pipe: multiprocessing.connection.Connection, spec: dict[str, Any]) -> None:
    """Set up the tables once; then, for each ("go", t0, t1), play a window
    and answer what it counted; ("stop",) ends it."""
    setup = bs.DriverStats()
    tables: list[Any] = []
    last_game: dict[int, bytes | None] = {}
    async with trio.open_nursery() as sessions:
        started = time.monotonic()
        limiter = trio.CapacityLimiter(spec["setup_concurrency"])
        with trio.fail_after(spec["setup_timeout"]):
            async with trio.open_nursery() as nursery:
                for index in spec["tables"]:
                    nursery.start_soon(
                        bs._setup_table, sessions, spec, index, setup, limiter, tables
                    )
        pipe.send(("ready", len(tables), setup.sessions, time.monotonic() - started))
        stagger = random.Random(spec["seed"])
        while True:
            command = await _receive_command(pipe, spec["command_timeout"])
            if command[0] == "stop":
                break
            _, t0, t1 = command
            stats = bs.DriverStats()
            stats.t0, stats.t1 = t0, t1
            stats.tables, stats.sessions = len(tables), setup.sessions
            for table in tables:
                for behaviour in table.behaviours:
                    behaviour.stats = stats
            until = bs.trio_at(t1 + spec["tail"])
            async with trio.open_nursery() as play:
                for table in tables:
                    delay = stagger.uniform(0, spec["stagger"])
                    play.start_soon(
                        partial(
                            bs._play_table,
                            table,
                            stats,
                            spec["game_timeout"],
                            delay,
                            until=until,
                            last_game=last_game,
                        )
                    )
            # what went wrong with a session (reconnections, ends) since the start
            stats.connects = setup.connects
            for error in setup.errors:
                stats.error(f"(since the start) {error}")
            pipe.send(("result", stats))
        sessions.cancel_scope.cancel()


def _tables_entry(pipe: multiprocessing.connection.Connection, spec: dict[str, Any]) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    set_death_signal()
    raise_fd_limit()
    codec.unpack_untrusted = bs._trusting  # the lean load
    try:
        trio.run(_tables_driver, pipe, spec)
    except BaseException:
        with contextlib.suppress(Exception):
            pipe.send(("error", traceback.format_exc()))
    finally:
        pipe.close()


# ---------------------------------------------------------------- the run


@dataclass
class Step:
    target: int
    asked: int
    welcomed: int  # in this step
    held: int
    failed: int
    seconds: float
    latencies: list[float]
    rss_before: int  # KiB, before the first idle connection
    rss_after: int
    rss_step_before: int
    fds: int
    failures: dict[str, int]
    server_cpu: float  # seconds, while opening
    other_cpu: float  # seconds of CPU of neither the server nor the drivers (nor this process)
    snapshot: bool  # the server snapshotted its lobby meanwhile (its RSS is not the connections')
    journal: tuple[int, int]  # after the step: snapshot bytes, entries since

    @property
    def rate(self) -> float:
        return self.welcomed / self.seconds if self.seconds else math.nan

    @property
    def kb_per_connection(self) -> float:
        return (self.rss_after - self.rss_before) / self.held if self.held else math.nan

    @property
    def step_kb(self) -> float:
        return (self.rss_after - self.rss_step_before) / self.asked if self.asked else math.nan


@dataclass
class Window:
    name: str
    idle_held: int
    seconds: float
    stats: list[Any]
    server_cpu: float
    server_main_cpu: float
    game_driver_cpu: list[float]
    idle_driver_cpu: float
    machine_busy: float
    other_cpu: float  # seconds of CPU of neither the server nor the drivers (nor this process)
    pings: int
    rss_before: int
    rss_after: int
    fds: int
    snapshot: bool = False  # the server snapshotted its lobby during the window or its tail

    def total(self, name: str) -> int:
        return sum(getattr(s, name) for s in self.stats)

    def latencies(self) -> list[float]:
        return sorted(x for s in self.stats for x in s.latencies)

    @property
    def decisions_per_second(self) -> float:
        return self.total("decisions") / self.seconds

    def p(self, q: float) -> float:
        return 1000 * bs.percentile(self.latencies(), q)


class Run:
    def __init__(self, children: Any, args: argparse.Namespace, workdir: Path) -> None:
        self.children = children
        self.args = args
        self.workdir = workdir
        self.context = multiprocessing.get_context("fork")
        self.server, self.port, self.log_path = start_server(children, args, workdir)
        self.watch = Watch(self.server)
        self.pid = self.server.pid
        self.game_links: list[multiprocessing.connection.Connection] = []
        self.game_pids: list[int] = []
        self.idle_links: list[multiprocessing.connection.Connection] = []
        self.idle_pids: list[int] = []
        self.held = 0
        self.database = workdir / "data" / "server.sqlite3"
        self.journal = journal_state(self.database)

    # ------------------------------------------------------------ processes

    def start_tables(self) -> tuple[int, int, float]:
        args = self.args
        drivers = max(1, min(args.game_drivers, args.tables))
        for d in range(drivers):
            ours, theirs = self.context.Pipe()
            spec = {
                "port": self.port,
                "tables": list(range(d, args.tables, drivers)),
                "players": 3,
                "load": "lean",
                "seed": args.seed + d,
                "setup_timeout": args.setup_timeout,
                "setup_concurrency": 16,
                "command_timeout": 900.0,
                "game_timeout": args.game_timeout,
                "stagger": min(args.warmup, 1.0),
                "tail": args.tail,
            }
            process = self.context.Process(target=_tables_entry, args=(theirs, spec), daemon=True)
            process.start()
            self.children.processes.append(process)
            theirs.close()
            self.game_links.append(ours)
            assert process.pid is not None
            self.game_pids.append(process.pid)
        deadline = time.monotonic() + args.setup_timeout + 15
        tables = sessions = 0
        setup = 0.0
        for link in self.game_links:
            _, t, s, seconds = self.watch.receive(link, deadline, "table driver setup")
            tables, sessions, setup = tables + t, sessions + s, max(setup, seconds)
        return tables, sessions, setup

    def start_idle_drivers(self, count: int) -> list[int]:
        limits = []
        for d in range(count):
            ours, theirs = self.context.Pipe()
            spec = {
                "host": HOST,
                "port": self.port,
                "ping_interval": self.args.ping_interval,
                "concurrency": self.args.concurrency,
                "name": "idle",
            }
            process = self.context.Process(target=idle_driver, args=(theirs, spec), daemon=True)
            process.start()
            self.children.processes.append(process)
            theirs.close()
            self.idle_links.append(ours)
            hello = self.watch.receive(ours, time.monotonic() + 15, f"idle driver {d}")
            self.idle_pids.append(hello["pid"])
            limits.append(hello["fd_limit"])
        return limits

    def idle_status(self) -> list[dict[str, Any]]:
        for link in self.idle_links:
            link.send(("status",))
        deadline = time.monotonic() + 15
        return [
            self.watch.receive(link, deadline, "idle driver status") for link in self.idle_links
        ]

    # ------------------------------------------------------------ idle connections

    def open_idle(self, target: int, rss_base: int) -> Step:
        """Open connections until `target` are held (or as many as can be)."""
        asked = max(0, target - self.held)
        drivers = len(self.idle_links)
        shares = [asked // drivers + (1 if d < asked % drivers else 0) for d in range(drivers)]
        timeout = 30 + asked / 200
        rss_step_before = rss_kb(self.pid)
        before = self.cpu()
        started = time.monotonic()
        for link, share in zip(self.idle_links, shares, strict=True):
            link.send(("open", share, timeout))
        deadline = started + timeout + 15
        answers = [self.watch.receive(link, deadline, "opening") for link in self.idle_links]
        seconds = time.monotonic() - started
        after = self.cpu()
        time.sleep(self.args.settle)  # the server's journal, its last writes
        self.watch.check()
        rss_after = rss_kb(self.pid)
        journal, snapshot = self.journal_moved()
        held = sum(a["held"] for a in answers)
        failures: dict[str, int] = {}
        for a in answers:
            for why, n in {**a["failures"], **a["closed_after_welcome"]}.items():
                failures[why] = failures.get(why, 0) + n
        self.held = held
        return Step(
            target=target,
            asked=asked,
            welcomed=sum(a["welcomed"] for a in answers),
            held=held,
            failed=sum(a["failed"] for a in answers),
            seconds=seconds,
            latencies=sorted(x for a in answers for x in a["latencies"]),
            rss_before=rss_base,
            rss_after=rss_after,
            rss_step_before=rss_step_before,
            fds=open_files(self.pid),
            failures=failures,
            server_cpu=after["server"] - before["server"],
            other_cpu=_other(before, after),
            snapshot=snapshot,
            journal=journal,
        )

    def journal_moved(self) -> tuple[tuple[int, int], bool]:
        """The journal's state now, and whether a snapshot was taken since the last call."""
        journal = journal_state(self.database)
        snapshot = journal[0] != self.journal[0] or journal[1] < self.journal[1]
        self.journal = journal
        return journal, snapshot

    # ------------------------------------------------------------ a window of games

    def window(self, name: str, profile: bool = False) -> Window:
        args = self.args
        self.journal_moved()
        t0 = time.monotonic() + args.warmup
        t1 = t0 + args.seconds
        for link in self.game_links:
            link.send(("go", t0, t1))
        self.watch.sleep_until(t0)
        pings0 = sum(s["pings"] for s in self.idle_status()) if self.idle_links else 0
        if profile:
            self.server.send_signal(signal.SIGUSR1)
        started = time.monotonic()
        before = self.cpu()
        rss0 = rss_kb(self.pid)
        self.watch.sleep_until(t1)
        after = self.cpu()
        ended = time.monotonic()
        if profile:
            self.server.send_signal(signal.SIGUSR2)
        rss1 = rss_kb(self.pid)
        fds = open_files(self.pid)
        pings1 = sum(s["pings"] for s in self.idle_status()) if self.idle_links else 0
        deadline = t1 + args.tail + args.game_timeout + 30
        stats = [self.watch.receive(link, deadline, name)[1] for link in self.game_links]
        _, snapshot = self.journal_moved()
        busy, _, total = (a - b for a, b in zip(after["machine"], before["machine"], strict=True))
        return Window(
            name=name,
            idle_held=self.held,
            seconds=ended - started,
            stats=stats,
            server_cpu=after["server"] - before["server"],
            server_main_cpu=after["server_main"] - before["server_main"],
            game_driver_cpu=[a - b for a, b in zip(after["games"], before["games"], strict=True)],
            idle_driver_cpu=after["idle"] - before["idle"],
            machine_busy=busy / total if total else 0.0,
            other_cpu=_other(before, after),
            pings=pings1 - pings0,
            rss_before=rss0,
            rss_after=rss1,
            fds=fds,
            snapshot=snapshot,
        )

    def cpu(self) -> dict[str, Any]:
        """CPU seconds so far: the server's, the drivers', this process's, the machine's."""
        return {
            "server": bs.cpu_seconds(self.pid, children=True),  # (its snapshots' too)
            "server_main": bs.cpu_seconds(self.pid, self.pid),
            "games": [bs.cpu_seconds(p) for p in self.game_pids],
            "idle": sum(bs.cpu_seconds(p) for p in self.idle_pids),
            "parent": time.process_time(),
            "machine": bs.machine_ticks(),
        }

    def stop_drivers(self) -> None:
        for link in self.game_links:
            with contextlib.suppress(OSError):
                link.send(("stop",))
        for link in self.idle_links:
            with contextlib.suppress(OSError):
                link.send(("close",))
        deadline = time.monotonic() + 20
        for process in self.children.processes:
            process.join(max(0.1, deadline - time.monotonic()))


def _other(before: dict[str, Any], after: dict[str, Any]) -> float:
    """Busy CPU seconds of the machine that are none of this benchmark's."""
    busy = (after["machine"][0] - before["machine"][0]) / bs.CLOCK_TICK
    ours = sum(after[k] - before[k] for k in ("server", "idle", "parent")) + sum(
        a - b for a, b in zip(after["games"], before["games"], strict=True)
    )
    return max(0.0, busy - ours)


def disturbed(other: float, seconds: float) -> str:
    """A warning if other processes took much of the machine meanwhile."""
    if seconds > 0 and other / seconds >= bs.DISTURBED:
        return (
            f"  ! {100 * other / seconds:.0f}% of a core went to other processes meanwhile:"
            " these figures are low"
        )
    return ""


# ---------------------------------------------------------------- report


def report_step(step: Step) -> str:
    lat = step.latencies
    kb = step.kb_per_connection
    verdict = "within target" if kb <= TARGET_KB else "OVER TARGET"
    step_kb = step.step_kb
    line = (
        f"  N={step.target:>6,}: held {step.held:>6,}  opened {step.asked:>6,} in"
        f" {step.seconds:5.1f} s = {step.rate:>6,.0f} conn/s  (hello p50"
        f" {1000 * bs.percentile(lat, 0.5):6.1f} ms, p99 {1000 * bs.percentile(lat, 0.99):7.1f} ms)"
        f"  RSS {mb(step.rss_after):>7} MB  {kb:5.2f} KB/conn"
        f" (this step {step_kb:5.2f}) vs target {TARGET_KB:g} KB: {verdict}"
        f"  server fds {step.fds:,}; server CPU {100 * step.server_cpu / step.seconds:.0f}%"
        f" ({1e6 * step.server_cpu / step.welcomed if step.welcomed else math.nan:,.0f} us/hello)"
    )
    warning = disturbed(step.other_cpu, step.seconds)
    if warning:
        line += "\n    " + warning.strip()
    if step.snapshot:
        line += (
            f"\n      (the server took its lobby's facts in this step: {step.journal[0] / 1e6:.1f} MB,"
            " in its own process, then stored)"
        )
    if step.failures:
        line += "\n      failures: " + ", ".join(f"{n} x {why}" for why, n in step.failures.items())
    return line


def report_window(w: Window) -> str:
    decisions = w.total("decisions")
    games = w.total("games")
    lat = w.latencies()
    lines = [
        f"  {w.name}: {w.idle_held:,} idle connections held; window {w.seconds:.1f} s",
        f"    decisions      {decisions:>8,}  {w.decisions_per_second:>8.1f}/s"
        f"   games {games} ({games / w.seconds:.2f}/s,"
        f" {w.total('games_failed')} with a verdict not ok)",
        f"    latency        p50 {w.p(0.5):7.2f} ms  p99 {w.p(0.99):7.2f} ms"
        f"  max {1000 * (lat[-1] if lat else math.nan):.1f} ms  (n={len(lat):,})",
        f"    server CPU     {100 * w.server_cpu / w.seconds:>7.0f}%"
        f"  ({1e6 * w.server_cpu / decisions if decisions else math.nan:,.0f} us/decision;"
        f" main thread {100 * w.server_main_cpu / w.seconds:.0f}%)",
        f"    drivers CPU    games {'+'.join(f'{100 * c / w.seconds:.0f}%' for c in w.game_driver_cpu)},"
        f" idle {100 * w.idle_driver_cpu / w.seconds:.0f}%; machine {100 * w.machine_busy:.0f}%"
        f" busy of {os.cpu_count()} cores, other processes"
        f" {100 * w.other_cpu / w.seconds:.0f}% of a core",
        f"    idle pings     {w.pings:,} in the window ({w.pings / w.seconds:.0f}/s)"
        f"   server RSS {mb(w.rss_before)} -> {mb(w.rss_after)} MB, fds {w.fds:,}",
    ]
    warning = disturbed(w.other_cpu, w.seconds)
    if warning:
        lines.append("  " + warning)
    if w.snapshot:
        lines.append(
            "    (the server took its lobby's facts during the window or the games' end, in its"
            " own process, then stored them)"
        )
    errors = [e for s in w.stats for e in s.errors]
    for error in errors[:8]:
        lines.append(f"    ERROR {error}")
    more = w.total("error_count") - min(8, len(errors))
    if more > 0:
        lines.append(f"    ERROR ... and {more} more")
    refused = w.total("refused")
    if refused:
        lines.append(f"    note: {refused} start_game refused")
    return "\n".join(lines)


def report_echo(echo: Any) -> str:
    lat = echo.latencies()
    n = echo.total("messages")
    return (
        f"  echo: {echo.k} connections, {echo.drivers} driver process(es), window"
        f" {echo.window:.1f} s: {n:,} round trips = {n / echo.window:,.0f} msgs/s"
        f"  (p50 {1000 * bs.percentile(lat, 0.5):.2f} ms, p99 {1000 * bs.percentile(lat, 0.99):.2f} ms;"
        f" echo server CPU {100 * echo.server_cpu / echo.window:.0f}%)"
        + "".join(f"\n    ERROR {e}" for e in echo.errors()[:5])
    )


# ---------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--steps", default=None, help="idle connections held, by steps (1000,5000,10000,19000)"
    )
    parser.add_argument("--tables", type=int, default=None, help="3-seat tables (200)")
    parser.add_argument("--seconds", type=float, default=None, help="games' window (15)")
    parser.add_argument("--warmup", type=float, default=None, help="before the window (2)")
    parser.add_argument("--echo-seconds", type=float, default=None, help="echo window (3)")
    parser.add_argument("--game-drivers", type=int, default=2, help="table driver processes (2)")
    parser.add_argument(
        "--per-driver", type=int, default=9000, help="idle connections per driver process (9000)"
    )
    parser.add_argument(
        "--concurrency", type=int, default=200, help="connections opening at once, per driver"
    )
    parser.add_argument(
        "--ping-interval", type=float, default=39.0, help="an idle connection's pings (39 s)"
    )
    parser.add_argument("--settle", type=float, default=None, help="before RSS is read (2 s)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--setup-timeout", type=float, default=120.0)
    parser.add_argument("--game-timeout", type=float, default=60.0)
    parser.add_argument(
        "--server-log-level",
        default="warning",
        choices=["debug", "info", "warning", "error"],
        help="warning (default): no log line per connection",
    )
    parser.add_argument(
        "--profile-server",
        action="store_true",
        help="cProfile the server (its main thread's CPU time) in the window with idle connections",
    )
    parser.add_argument("--profile-top", type=int, default=30, help="functions listed (30)")
    parser.add_argument("--quick", action="store_true", help="smoke run (< 1 minute)")
    args = parser.parse_args(argv)
    quick = args.quick
    if args.steps is None:
        args.steps = "1000,2000" if quick else "1000,5000,10000,19000"
    args.step_values = sorted({int(x) for x in args.steps.split(",") if x.strip()})
    if args.tables is None:
        args.tables = 20 if quick else 200
    if args.seconds is None:
        args.seconds = 2.0 if quick else 15.0
    if args.warmup is None:
        args.warmup = 0.5 if quick else 2.0
    if args.echo_seconds is None:
        args.echo_seconds = 1.0 if quick else 3.0
    if args.settle is None:
        args.settle = 1.0 if quick else 2.0
    args.tail = 0.5 if quick else 2.0
    if args.game_drivers < 1 or args.tables < 1 or not args.step_values:
        parser.error("at least one table, one game driver and one step")
    return args


def command_line(args: argparse.Namespace) -> str:
    return shlex.join(
        [
            "python",
            "bench/load.py",
            "--steps",
            ",".join(map(str, args.step_values)),
            "--tables",
            str(args.tables),
            "--seconds",
            f"{args.seconds:g}",
            "--warmup",
            f"{args.warmup:g}",
            "--echo-seconds",
            f"{args.echo_seconds:g}",
            "--per-driver",
            str(args.per_driver),
            "--ping-interval",
            f"{args.ping_interval:g}",
            "--seed",
            str(args.seed),
        ]
        + (["--profile-server"] if args.profile_server else [])
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    limit = raise_fd_limit()
    started = time.monotonic()
    decision_frame, push_frame, info = bs.typical_frames(3)
    top = args.step_values[-1]
    idle_drivers = math.ceil(top / args.per_driver)
    game_connections = 3 * args.tables
    print(
        f"load: one server process; idle connections up to {top:,} from {idle_drivers} driver"
        f" process(es), {args.tables} tables of 3 seats ({game_connections} connections) from"
        f" {args.game_drivers}; {os.cpu_count()} cores, Python {sys.version.split()[0]},"
        f" open files limit {limit:,} (every process)",
        flush=True,
    )
    if top + game_connections + FD_HEADROOM > limit:
        print(
            f"  ! {top:,} idle + {game_connections} game connections + {FD_HEADROOM} for the"
            f" server itself > its {limit:,} open files: expect accept failures"
        )
    steps: list[Step] = []
    windows: list[Window] = []
    echo = None
    notes: list[str] = []
    stop_note = "not stopped"
    status: list[dict[str, Any]] = []
    peak_fds = 0
    server_limit = "?"
    with tempfile.TemporaryDirectory(prefix="oriflamme-load-") as tmp:
        children = bs.Children()
        try:
            run = Run(children, args, Path(tmp))
            rss_fresh = rss_kb(run.pid)
            print(
                f"server pid {run.pid} on {HOST} port {run.port}, open files limit"
                f" {fd_limit_of(run.pid)}; RSS fresh {mb(rss_fresh)} MB,"
                f" {open_files(run.pid)} fds",
                flush=True,
            )

            tables, sessions, setup = run.start_tables()
            print(
                f"\n{tables} tables, {sessions} sessions set up in {setup:.1f} s;"
                f" server RSS {mb(rss_kb(run.pid))} MB",
                flush=True,
            )
            print("\n1. games, no idle connection (the baseline)", flush=True)
            windows.append(run.window("baseline"))
            print(report_window(windows[-1]), flush=True)

            limits = run.start_idle_drivers(idle_drivers)
            time.sleep(args.settle)
            run.journal_moved()
            rss_base = rss_kb(run.pid)
            print(
                f"\n2. idle connections (hello, welcome, a ping every {args.ping_interval:g} s),"
                f" {idle_drivers} driver process(es) (open files limit {limits[0]:,} each);"
                f" server RSS before: {mb(rss_base)} MB, {open_files(run.pid)} fds",
                flush=True,
            )
            for target in args.step_values:
                step = run.open_idle(target, rss_base)
                steps.append(step)
                print(report_step(step), flush=True)

            print("\n3. the same games while the idle connections are held", flush=True)
            windows.append(run.window("with idle", profile=args.profile_server))
            print(report_window(windows[-1]), flush=True)

            status = run.idle_status()
            peak_fds = max([s.fds for s in steps] + [w.fds for w in windows])
            server_limit = fd_limit_of(run.pid)
            run.stop_drivers()
            stopping = time.monotonic()
            exit_status = bs.stop(run.server, timeout=STOP_TIMEOUT)
            stopped = time.monotonic() - stopping
            if exit_status is None:
                stop_note = f"not stopped {STOP_TIMEOUT:g} s after SIGTERM: killed"
            else:
                stop_note = f"stopped {stopped:.1f} s after SIGTERM, exit status {exit_status}"
            notes += bs._log_notes(run.log_path)
            profile = Path(tmp) / "server.prof"
            if args.profile_server and profile.exists():
                print("\ncProfile of the server's main thread in the window with idle connections:")
                print(bs._profile_report(profile, args.profile_top), flush=True)

            print(f"\n4. echo baseline ({args.tables} connections, one frame in flight each)")
            echo_args = argparse.Namespace(
                players=3,
                load="lean",
                seed=args.seed,
                setup_timeout=args.setup_timeout,
                game_timeout=args.game_timeout,
                warmup=args.warmup,
                tail=args.tail,
                echo_seconds=args.echo_seconds,
                pace=0.0,  # (the echo server answers at once)
                profile_drivers=False,
                profile_top=0,
                tmp=tmp,
            )
            echo = bs.echo_phase(
                children,
                args.tables,
                args.game_drivers,
                (decision_frame, push_frame),
                echo_args,
            )
            print(report_echo(echo), flush=True)
        except (ServerDied, TimeoutError, RuntimeError) as exc:
            print(f"\nload: stopped: {exc}", flush=True)
            log = Path(tmp) / "server.log"
            if log.exists():
                tail = log.read_text(errors="replace").splitlines()[-20:]
                print("the server's log, its end:" if tail else "the server's log is empty")
                for line in tail:
                    print(f"  {line}")
            return 1
        finally:
            children.kill_all()

    print("\nidle connections at the end:")
    held = sum(s["held"] for s in status)
    print(
        f"  held {held:,}; pings {sum(s['pings'] for s in status):,},"
        f" pongs {sum(s['pongs'] for s in status):,}; received"
        f" {_merge([s['received'] for s in status])}; closed after welcome"
        f" {_merge([s['closed_after_welcome'] for s in status]) or 'none'};"
        f" drivers' RSS {'+'.join(mb(s['rss_kb']) for s in status)} MB"
    )
    print(f"  the server (games over, idle connections closed): {stop_note}")
    for note in notes[:15]:
        print(f"  server log: {note}")
    print("\nceilings:")
    print(ceilings(peak_fds, server_limit, held, game_connections))

    print("\nsummary")
    print(summary(steps, windows, echo))
    print(f"({time.monotonic() - started:.0f} s in all) to reproduce: {command_line(args)}")
    return 0


def _merge(counters: list[dict[str, int]]) -> dict[str, int]:
    merged: dict[str, int] = {}
    for counter in counters:
        for key, n in counter.items():
            merged[key] = merged.get(key, 0) + n
    return merged


def summary(steps: list[Step], windows: list[Window], echo: Any) -> str:
    head = f"{'idle N':>8} {'held':>7} {'conn/s':>7} {'RSS MB':>8} {'KB/conn':>8} {'target':>14}"
    lines = [head, "-" * len(head)]
    for s in steps:
        kb = s.kb_per_connection
        lines.append(
            f"{s.target:>8,} {s.held:>7,} {s.rate:>7,.0f} {mb(s.rss_after):>8}"
            f" {kb:>8.2f} {'<= 8 KB: ' + ('ok' if kb <= TARGET_KB else 'OVER'):>14}"
        )
    clean = []
    for s in steps:
        if s.snapshot:
            break
        clean.append(s)
    if clean and len(clean) < len(steps):
        opened = sum(s.asked for s in clean)
        kb = sum(s.rss_after - s.rss_step_before for s in clean) / opened
        lines.append(
            f"  before the server's snapshot (up to {clean[-1].target:,} held): {kb:.2f} KB per"
            " idle connection"
        )
    head = f"{'games':>22} {'idle held':>10} {'decisions/s':>12} {'p50 ms':>8} {'p99 ms':>8} {'srv CPU':>8}"
    lines += ["", head, "-" * len(head)]
    for w in windows:
        lines.append(
            f"{w.name:>22} {w.idle_held:>10,} {w.decisions_per_second:>12,.0f}"
            f" {w.p(0.5):>8.2f} {w.p(0.99):>8.2f} {100 * w.server_cpu / w.seconds:>7.0f}%"
        )
    if echo is not None:
        lat = echo.latencies()
        lines.append(
            f"{'echo (msgs/s)':>22} {'-':>10} {echo.total('messages') / echo.window:>12,.0f}"
            f" {1000 * bs.percentile(lat, 0.5):>8.2f} {1000 * bs.percentile(lat, 0.99):>8.2f}"
            f" {100 * echo.server_cpu / echo.window:>7.0f}%"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)

"""The server on the network: concurrent bot games over loopback, against a trio echo server.

Starts a real server process (`oriflamme serve --port 0` over a fresh data
directory, so with its SQLite journal on; its log, at info level, goes to a
file where the port is read: one line per connection and game, none per
decision), then, from separate driver processes, plays K tables at once:
each table is 3 (or `--players`) seats over TCP on 127.0.0.1. With the raw
load (the default, `bench/raw_load.py`), each seat is written as
`examples/minimal_bot.py` is: plain dicts, that example's commit-reveal and
deal, a random option for each decision, so that the drivers cost the
machine less than the server they measure. `--load lean` plays client
sessions (`oriflamme.client.session.Session`) that pick a random option and
decode without the strict checks; `--load bots` real `Bot("random")`
players. One seat creates the room, the others join, all say ready, the
host starts; at the end of a game every seat says ready again and the
host starts the next one at the same table (play again), until the measured
window closes. Setup (connections, rooms) and a warm-up are left out of the
window; the tables' first games start spread over the first second.

Counted in the window, for each K:

* games completed (seen ended by every seat of the table) per second;
* decisions per second: the answers the bots choose (`direction`, `place`,
  `keep`, `reveal`, `choose`, `move`), counted where `Behaviour` makes them.
  What a client sends by itself (`seed_commit`, `open`, `final_reveal`) is
  counted apart;
* the server process's CPU time (user + sys from /proc/PID/stat, all its
  threads; the main thread apart) per decision;
* latency: from a decision answered to the next `game_state` push that
  session receives (the server's verdict on it, its journal commit and the
  pushes), p50 and p99;
* the bytes on the wire a decision, from the server and to it (whole
  frames, as the seats read and write them): what protocol version 2 cuts;
* the drivers' CPU and the machine's (the figures move with the number of
  cores: on 2 cores the server and the drivers share them);
* a lone client's `ping` round trip: one more connection, seated nowhere,
  pings every 25 ms whatever the answers do (an open loop, where the tables
  are a closed one: their latency is K over the decisions/s, whatever the
  server does). What a player at a table of people, who sends a message
  now and then, waits for on a server this busy.

In the same run, the baseline: a plain trio echo server (another process;
the protocol's framing, a 4-byte big-endian length and the payload, not
decoded) answers each frame it gets with a typical `game_state` push, and K
client connections from the same number of driver processes each keep one
typical decision frame in flight (as a table has one decision pending at a
time). Both frames are real, taken from a game played in-process first; their
sizes are printed. The ratio is decisions/s over echo round trips/s.

Targets at K=200: decisions/s >= 20% of echo messages/s, p99 latency < 20 ms.

`--pace SECONDS` makes each seat take about that long (uniformly half to one
and a half times) before it answers a decision, as players do: the tables
then offer about K / SECONDS decisions a second, and the latency is what a
table waits for at that pace, not at the server's limit (without it, every
table always has a decision on its way: a closed loop, where the latency is
K over the decisions/s whatever the server does).

    python bench/server.py                          # K = 1, 50, 200; 15 s windows
    python bench/server.py --quick                  # K = 1, 10; short windows (smoke run)
    python bench/server.py --ks 200 --drivers 2 --seconds 20 --players 4
    python bench/server.py --profile-server         # cProfile of the server in the window
    python bench/server.py --ks 50,200 --seconds 8 --against HEAD~1
                                                    # this tree against a commit, in rotation
    python bench/server.py --ks 200,1000 --pace 2   # tables that take 2 s a decision
    python bench/server.py --ks 50,200 --load bots --protocols 2,1
                                                    # protocol 2 against 1, in rotation

The seats speak protocol version 2 (`--protocols 1`: version 1). With two
versions, the runs alternate and the summary gives version 2's server CPU,
drivers' CPU and bytes from the server a decision over version 1's, against
issue 28's targets (a half, a fifth, a third). The echo baseline's frames
are version 1's `game_state`.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import itertools
import math
import multiprocessing
import multiprocessing.connection
import os
import pstats
import random
import re
import secrets
import shlex
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import msgpack
import raw_load  # noqa: E402  (bench/, this script's folder)
import trio
from _load_client import (
    one_address_limits,  # (bench/, this script's folder)
    rss_kb,  # (bench/ too: the idle connections' driver)
)

from oriflamme.client.bots import Behaviour, Bot, Seated
from oriflamme.client.session import Backoff, RequestRefused, Session, tcp
from oriflamme.client.state import GameMirror
from oriflamme.engine import Action
from oriflamme.launcher.inprocess import InProcess
from oriflamme.protocol import codec, identity
from oriflamme.protocol import messages as m
from oriflamme.protocol.codec import encode_frame

HOST = "127.0.0.1"
LOADS = {
    "raw": "each seat as examples/minimal_bot.py is",
    "lean": "each seat a client Session, decoding leniently",
    "bots": "each seat a client Session with a Bot",
}
CLOCK_TICK = os.sysconf("SC_CLK_TCK")
TARGET_RATIO = 0.20  # decisions/s over echo messages/s, at K=200
TARGET_P99_MS = 20.0
TARGET_K = 200
PROBE_EVERY = 0.025  # seconds between two pings of the lone client
DISTURBED = 0.15  # CPU of neither the server nor the drivers, in cores: other load
SERVER_COMMAND = [sys.executable, "-m", "oriflamme.launcher.cli", "serve"]
CLI_MODULE = "ORIFLAMME_BENCH_CLI"  # (in `env`: another version's `oriflamme` module)


def server_command(env: dict[str, str] | None) -> list[str]:
    """`oriflamme serve`, of this version or of `env`'s (`against_env`)."""
    if env is None or CLI_MODULE not in env:
        return SERVER_COMMAND
    return [sys.executable, "-m", env[CLI_MODULE], "serve"]


# The server under cProfile, on only while the window is open: SIGUSR1 turns
# it on, SIGUSR2 off and writes the stats (a server that stopped cleanly
# leaves with os._exit, past any `finally`). Arguments: the stats file, the
# clock ("cpu": the main thread's CPU time; "wall": time waited counts too),
# then `oriflamme`'s.
PROFILE_BOOT = """
import cProfile, signal, sys, time
from oriflamme.launcher.cli import main
clock = time.thread_time if sys.argv[2] == "cpu" else time.perf_counter
profiler = cProfile.Profile(clock)
def stop(*_):
    profiler.disable()
    profiler.dump_stats(sys.argv[1])
signal.signal(signal.SIGUSR1, lambda *_: profiler.enable())
signal.signal(signal.SIGUSR2, stop)
sys.exit(main(sys.argv[3:]))
"""


# ---------------------------------------------------------------- /proc


def cpu_seconds(pid: int, tid: int | None = None, *, children: bool = False) -> float:
    """User + system CPU seconds of process `pid` (all its threads), or of its
    thread `tid`; with `children`, and of its children that have exited and
    been waited for (the server's snapshot processes)."""
    path = f"/proc/{pid}/stat" if tid is None else f"/proc/{pid}/task/{tid}/stat"
    with open(path) as f:
        fields = f.read().rpartition(")")[2].split()
    # after the command: state is field 3, utime 14, stime 15, cutime 16 and cstime 17 (1-based)
    ticks = int(fields[11]) + int(fields[12])
    if children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / CLOCK_TICK


def machine_ticks() -> tuple[int, int, int]:
    """(busy, stolen, total) clock ticks of all cores, from /proc/stat: busy is
    user, nice, system, irq and softirq; stolen, what a hypervisor gave others."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    v += [0] * (8 - len(v))
    return v[0] + v[1] + v[2] + v[5] + v[6], v[7], sum(v)  # guest time is in user already


@dataclass
class CpuSample:
    at: float
    server: float
    server_main: float
    drivers: list[float]
    parent: float
    machine: tuple[int, int, int]


def sample_cpu(server_pid: int, driver_pids: list[int]) -> CpuSample:
    return CpuSample(
        at=time.monotonic(),
        server=cpu_seconds(server_pid, children=True),
        server_main=cpu_seconds(server_pid, server_pid),
        drivers=[cpu_seconds(pid) for pid in driver_pids],
        parent=time.process_time(),
        machine=machine_ticks(),
    )


# ---------------------------------------------------------------- real frames


class _Recording(Behaviour):
    def __init__(self, bot: Bot) -> None:
        super().__init__(bot)
        self.decisions: list[m.Message] = []

    def messages(self, client: Seated) -> list[m.Message]:
        before = client.answered
        out = super().messages(client)
        if client.answered != before:
            self.decisions.append(out[-1])
        return out


def typical_frames(players: int, seed: int = 7) -> tuple[bytes, bytes, dict[str, Any]]:
    """A typical decision frame (client to server) and a typical `game_state`
    push (server to client), the medians by size of one game played through the
    server's core in this process (one client, the other seats server bots)."""
    world = InProcess(seed=seed, versions=(1,))  # (the echo baseline's push: version 1's)
    behaviour = _Recording(Bot("random", rng=random.Random(seed)))
    host = world.connect("host", behaviour=behaviour)
    host.send(m.CreateRoom(settings=m.RoomSettings.for_players(players)))
    for _ in range(players - 1):
        host.send(m.AddBot(strategy="random"))
    host.send(m.Ready(ready=True))
    host.send(m.StartGame())
    world.run(lambda: bool(world.records))
    decisions = sorted(
        (encode_frame(m.to_data(_with_id(d, 17))) for d in behaviour.decisions), key=len
    )
    pushes = sorted(
        (
            encode_frame(m.to_data(x))
            for x in host.received
            if isinstance(x, m.GameState) and x.decision is not None
        ),
        key=len,
    )
    decision, push = decisions[len(decisions) // 2], pushes[len(pushes) // 2]
    info = {
        "decision_type": m.from_data(_payload(decision), "client").TYPE,
        "decision_sizes": (len(decisions[0]), len(decisions[-1])),
        "push_sizes": (len(pushes[0]), len(pushes[-1])),
    }
    return decision, push, info


def _with_id(message: m.Message, request_id: int) -> m.Message:
    fields = {spec.name: getattr(message, spec.name) for spec in message.FIELDS}
    return type(message)(**{**fields, "id": request_id})


def _payload(frame: bytes) -> Any:
    import msgpack

    return msgpack.unpackb(frame[4:], raw=False)


# ---------------------------------------------------------------- processes


class Children:
    """Every child process started, killed at exit whatever happens."""

    def __init__(self) -> None:
        self.popens: list[subprocess.Popen[bytes]] = []
        self.processes: list[multiprocessing.process.BaseProcess] = []

    def kill_all(self) -> None:
        for p in self.processes:
            if p.is_alive():
                p.kill()
            p.join(5)
        for popen in self.popens:
            if popen.poll() is None:
                popen.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    popen.wait(5)


def start_logged(
    children: Children,
    command: list[str],
    log_path: Path,
    pattern: bytes,
    timeout: float = 30.0,
    env: dict[str, str] | None = None,
) -> tuple[subprocess.Popen[bytes], int]:
    """Start `command` with its output in `log_path` (a file, never a pipe) and
    return it with the port its log names (`pattern`, one group), once it does."""
    with open(log_path, "wb") as log:
        popen = subprocess.Popen(command, stdout=log, stderr=log, stdin=subprocess.DEVNULL, env=env)
    children.popens.append(popen)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(pattern, log_path.read_bytes())
        if found:
            return popen, int(found.group(1))
        if popen.poll() is not None:
            break
        time.sleep(0.02)
    raise RuntimeError(
        f"{shlex.join(command)} did not say where it listens:\n"
        + log_path.read_text(errors="replace")[-3000:]
    )


def stop(popen: subprocess.Popen[bytes], timeout: float = 30.0) -> int | None:
    """SIGTERM, and its exit status (None: it had to be killed)."""
    if popen.poll() is not None:
        return popen.returncode
    popen.send_signal(signal.SIGTERM)
    try:
        return popen.wait(timeout)
    except subprocess.TimeoutExpired:
        popen.kill()
        popen.wait(5)
        return None


# ---------------------------------------------------------------- the drivers


@dataclass
class DriverStats:
    """What one driver process counted; sent to the parent at the end."""

    t0: float = math.inf
    t1: float = -math.inf
    tables: int = 0
    sessions: int = 0
    connects: int = 0
    setup_seconds: float = 0.0
    decisions: int = 0  # in the window
    decisions_all: int = 0  # from go to the end
    automatic: int = 0  # seed_commit, open, final_reveal, in the window
    games: int = 0  # ended in the window
    games_all: int = 0
    games_failed: int = 0  # a seat's verdict not ok
    game_seconds: list[float] = field(default_factory=list)  # games ended in the window
    game_decisions: list[int] = field(default_factory=list)  # every game ended
    latencies: list[float] = field(default_factory=list)
    refused: int = 0
    errors: list[str] = field(default_factory=list)  # the first few
    error_count: int = 0
    messages: int = 0  # echo round trips in the window
    # Frames' bytes on the wire in the window, from the server and to it
    # (counted by the raw load's seats: 0 for the other loads).
    bytes_in: int = 0
    bytes_out: int = 0
    probe: list[float] = field(default_factory=list)  # the lone client's pings, in the window
    # How late the lone client's process woke from each of its sleeps between
    # pings: what the machine's scheduler adds to any latency measured here.
    woke_late: list[float] = field(default_factory=list)
    profile: str = ""

    def inside(self, t: float) -> bool:
        return self.t0 <= t <= self.t1

    def error(self, text: str) -> None:
        self.error_count += 1
        if len(self.errors) < 10:
            self.errors.append(text)


class QuickBot(Bot):
    """A bot that picks among the decision's options at random, without the
    engine position a strategy needs (the lean load: what a client costs is
    not what this measures)."""

    def choose(self, game: GameMirror) -> Action:
        options = game.options()
        return options[int(self._rng.random() * len(options))]


def _trusting(data: bytes | bytearray | memoryview, **limits: int) -> Any:
    """The lean load's decoder: the server is ours, its frames are decoded
    without the strict checks a client owes a stranger."""
    return msgpack.unpackb(data, raw=False)


class CountingBehaviour(Behaviour):
    """`Behaviour` that counts and timestamps each decision it answers, and
    the `game_state` push that comes next (`pushed`)."""

    def __init__(self, bot: Bot, stats: DriverStats) -> None:
        super().__init__(bot)
        self.stats = stats
        self.answered = 0
        self.answered_at: float | None = None

    def messages(self, client: Seated) -> list[m.Message]:
        before = client.answered
        out = super().messages(client)
        if not out:
            return out
        now = time.monotonic()
        stats = self.stats
        automatic = len(out)
        if client.answered != before:  # a decision of ours, the last of `out`
            automatic -= 1
            self.answered_at = now
            self.answered += 1
            stats.decisions_all += 1
            if stats.inside(now):
                stats.decisions += 1
        if automatic and stats.inside(now):
            stats.automatic += automatic
        return out

    def pushed(self, message: m.Message) -> None:
        if self.answered_at is not None and isinstance(message, m.GameState | m.GameUpdate):
            if self.stats.inside(self.answered_at):
                self.stats.latencies.append(time.monotonic() - self.answered_at)
            self.answered_at = None


class CountedStream(trio.abc.Stream):
    """A session's stream, its bytes counted in the window (the raw load
    counts its own frames): what each protocol version costs on the wire."""

    def __init__(self, stream: trio.abc.Stream, stats: DriverStats) -> None:
        self.stream, self.stats = stream, stats

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        if self.stats.inside(time.monotonic()):
            self.stats.bytes_out += len(data)
        await self.stream.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.stream.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        data = await self.stream.receive_some(max_bytes)
        if self.stats.inside(time.monotonic()):
            self.stats.bytes_in += len(data)
        return data

    async def aclose(self) -> None:
        await self.stream.aclose()


def _watch(session: Session, behaviour: CountingBehaviour) -> None:
    """Every message the session's mirror takes goes by `behaviour.pushed` too."""
    receive = session.state.receive

    def receive_and_note(message: m.Message) -> None:
        receive(message)
        behaviour.pushed(message)

    session.state.receive = receive_and_note  # type: ignore[method-assign]


def trio_at(t: float) -> float:
    """trio's clock at monotonic time `t`."""
    return trio.current_time() + (t - time.monotonic())


async def _wait_go(
    conn: multiprocessing.connection.Connection, timeout: float
) -> tuple[float, float]:
    if not await trio.to_thread.run_sync(conn.poll, timeout):
        raise TimeoutError(f"no word from the parent in {timeout:g} s")
    kind, t0, t1 = conn.recv()
    assert kind == "go"
    return t0, t1


@dataclass
class Table:
    index: int
    sessions: list[Session]
    behaviours: list[CountingBehaviour]

    def answered(self) -> int:
        return sum(b.answered for b in self.behaviours)


async def _run_session(
    session: Session, stats: DriverStats, *, task_status: trio.TaskStatus[None]
) -> None:
    try:
        await session.run(task_status=task_status)
    except Exception as exc:  # counted and reported; the others play on
        stats.error(f"session {session.name} ended: {exc!r}")


async def _setup_table(
    nursery: trio.Nursery,
    spec: dict[str, Any],
    index: int,
    stats: DriverStats,
    limiter: trio.CapacityLimiter,
    tables: list[Table],
) -> None:
    players = spec["players"]

    async def connect() -> trio.abc.Stream:
        stats.connects += 1
        return CountedStream(await tcp(HOST, spec["port"])(), stats)

    async with limiter:
        sessions = []
        behaviours = []
        for seat in range(players):
            rng = random.Random(spec["seed"] * 1_000_003 + index * 8 + seat)
            bot = QuickBot("random", rng=rng) if spec["load"] == "lean" else Bot("random", rng=rng)
            behaviour = CountingBehaviour(bot, stats)
            # With --keys, a player of a key of its own: it signs every decision.
            key = identity.private_key(rng.randbytes(32)) if spec["keys"] else None
            session = Session(
                connect,
                f"t{index}s{seat}",
                behaviour=behaviour,
                backoff=Backoff(first=0.2, attempts=5),
                rng=rng,
                key=key,
                versions=(spec["protocol"],),
            )
            _watch(session, behaviour)
            await nursery.start(partial(_run_session, session, stats))
            stats.sessions += 1
            sessions.append(session)
            behaviours.append(behaviour)
        host = sessions[0]
        settings = m.RoomSettings.for_players(players)
        await host.request(m.CreateRoom(settings=settings, name=f"bench {index}"))
        await host.wait_until(lambda: host.state.room is not None, timeout=30)
        room = host.state.room
        assert room is not None
        for session in sessions[1:]:
            await session.request(m.JoinRoom(room=room.room))
        for session in sessions:
            await session.request(m.Ready(ready=True))
        tables.append(Table(index, sessions, behaviours))


def _started(host: Session, previous: bytes | None) -> bool:
    """A game after `previous` started at `host`'s table."""
    game = host.state.game
    return game is not None and game.game_id != previous


def _startable(host: Session, previous: bytes | None) -> bool:
    """Every seat is taken and ready, and `host` may start (or a game started)."""
    room = host.state.room
    return _started(host, previous) or (
        room is not None
        and room.host == host.state.player
        and room.state in ("waiting", "finished")
        and all(s.name is not None and s.ready for s in room.seats)
    )


def _moved(host: Session, previous: bytes | None, seen: m.RoomState | None) -> bool:
    return _started(host, previous) or host.state.room is not seen


def _ended(session: Session, game_id: bytes) -> bool:
    game = session.state.game
    return game is not None and game.game_id == game_id and game.end is not None


async def _play_table(
    table: Table,
    stats: DriverStats,
    game_timeout: float,
    delay: float,
    *,
    until: float = math.inf,
    last_game: dict[int, bytes | None] | None = None,
) -> None:
    """Games at one table, one after the other, until cancelled or trio's
    clock passes `until` (the game under way is played to its end, and every
    seat says ready again); the first after `delay` seconds (so that the
    tables do not all start at once). `last_game` keeps each table's last
    game across calls (`bench/load.py` plays the same tables in several
    windows)."""
    host = table.sessions[0]
    last = last_game if last_game is not None else {}
    phase = "starting"
    await trio.sleep(delay)
    try:
        while trio.current_time() < until:
            previous = last.get(table.index)
            phase = "starting"
            with trio.fail_after(game_timeout):
                while not _started(host, previous):
                    await host.wait_until(partial(_startable, host, previous))
                    if _started(host, previous):
                        break
                    seen = host.state.room
                    try:
                        await host.request(m.StartGame())
                    except RequestRefused:
                        stats.refused += 1
                        await host.wait_until(partial(_moved, host, previous, seen))
                    else:
                        await host.wait_until(partial(_started, host, previous))
            began = time.monotonic()
            answered = table.answered()
            phase = "playing"
            assert host.state.game is not None
            game_id = host.state.game.game_id
            with trio.fail_after(game_timeout):
                for session in table.sessions:
                    await session.wait_until(partial(_ended, session, game_id))
            now = time.monotonic()
            stats.games_all += 1
            stats.game_decisions.append(table.answered() - answered)
            end = host.state.game.end if host.state.game is not None else None
            if end is not None and any(v.status != "ok" for v in end.verification):
                stats.games_failed += 1
            if stats.inside(now):
                stats.games += 1
                stats.game_seconds.append(now - began)
            last[table.index] = game_id
            phase = "ready again"
            with trio.fail_after(game_timeout):
                async with trio.open_nursery() as nursery:
                    for session in table.sessions:
                        nursery.start_soon(session.request, m.Ready(ready=True))
    except trio.TooSlowError:
        stats.error(f"table {table.index}: stalled for {game_timeout:g} s ({phase})")
    except Exception as exc:  # one table's failure is reported, not fatal
        stats.error(f"table {table.index}: {phase}: {exc!r}")


async def _game_driver(conn: multiprocessing.connection.Connection, spec: dict[str, Any]) -> None:
    stats = DriverStats()
    tables: list[Any] = []
    setup_table: Callable[..., Any] = _setup_table
    play_table: Callable[..., Any] = _play_table
    if spec["load"] == "raw":
        setup_table, play_table = raw_load.setup_table, raw_load.play_table
    async with trio.open_nursery() as sessions:
        started = time.monotonic()
        limiter = trio.CapacityLimiter(spec["setup_concurrency"])
        with trio.fail_after(spec["setup_timeout"]):
            async with trio.open_nursery() as setup:
                for index in spec["tables"]:
                    setup.start_soon(setup_table, sessions, spec, index, stats, limiter, tables)
        stats.tables = len(tables)
        stats.setup_seconds = time.monotonic() - started
        conn.send(("ready", stats.tables, stats.sessions))
        stats.t0, stats.t1 = await _wait_go(conn, spec["go_timeout"])
        stagger = random.Random(spec["seed"])
        # Play on a little after the window, so that the pushes answering the
        # window's last decisions arrive and count (nothing else does).
        with trio.move_on_at(trio_at(stats.t1 + spec["tail"])):
            async with trio.open_nursery() as play:
                if spec["profile"]:
                    play.start_soon(_profile_window, stats, spec["profile"])
                for table in tables:
                    delay = stagger.uniform(0, spec["stagger"])
                    play.start_soon(play_table, table, stats, spec["game_timeout"], delay)
        sessions.cancel_scope.cancel()
    conn.send(("result", stats))


async def _probe_connection(spec: dict[str, Any]) -> trio.SocketStream:
    """The lone client: connected and welcomed, seated nowhere."""
    stream = await trio.open_tcp_stream(spec["host"], spec["port"])
    hello = {"type": "hello", "versions": [1], "client": "bench-probe/1", "name": "probe"}
    await stream.send_all(raw_load.frame(hello))
    welcome = msgpack.unpackb(await raw_load.FrameReader(stream, "the probe").next())
    if welcome.get("type") != "welcome":
        raise RuntimeError(f"the probe was not welcomed: {welcome}")
    return stream


async def _probe_driver(conn: multiprocessing.connection.Connection, spec: dict[str, Any]) -> None:
    """The lone client, in a process of its own: the drivers' processes are
    busy, and would be slow to read its answers."""
    stats = DriverStats()
    with trio.fail_after(spec["setup_timeout"]):
        stream = await _probe_connection(spec)
    conn.send(("ready", 0, 0))
    stats.t0, stats.t1 = await _wait_go(conn, spec["go_timeout"])
    with trio.move_on_at(trio_at(stats.t1 + spec["tail"])):
        await _probe(stream, stats)
    await stream.aclose()
    conn.send(("result", stats))


async def _probe(stream: trio.SocketStream, stats: DriverStats) -> None:
    """An open loop: a `ping` every PROBE_EVERY seconds whatever the answers
    do, each timed to its `pong`: what a player at a table of people (who
    sends now and then) waits for while the other tables play."""
    sent: dict[int, float] = {}

    async def answers() -> None:
        frames = raw_load.FrameReader(stream, "the probe")
        while True:
            message = msgpack.unpackb(await frames.next())
            at = sent.pop(message.get("id", -1), None)
            if message.get("type") == "pong" and at is not None and stats.inside(at):
                stats.probe.append(time.monotonic() - at)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(answers)
        for request_id in itertools.count(1):
            sent[request_id] = time.monotonic()
            await stream.send_all(raw_load.frame({"type": "ping", "id": request_id % 2**32}))
            asleep = time.monotonic()
            await trio.sleep(PROBE_EVERY)
            if stats.inside(asleep):
                stats.woke_late.append(time.monotonic() - asleep - PROBE_EVERY)


async def _profile_window(stats: DriverStats, top: int) -> None:
    """cProfile of this driver (its CPU time) while the window is open."""
    profiler = cProfile.Profile(time.thread_time)
    await trio.sleep_until(trio_at(stats.t0))
    profiler.enable()
    try:
        await trio.sleep_until(trio_at(stats.t1) - 0.01)
    finally:
        profiler.disable()
        out = io.StringIO()
        out.write(f"--- by tottime (top {top})\n")
        pstats.Stats(profiler, stream=out).strip_dirs().sort_stats("tottime").print_stats(top)
        stats.profile = out.getvalue()


async def _echo_driver(conn: multiprocessing.connection.Connection, spec: dict[str, Any]) -> None:
    stats = DriverStats()
    frame: bytes = spec["frame"]
    streams = []
    with trio.fail_after(spec["setup_timeout"]):
        for _ in spec["tables"]:
            streams.append(await trio.open_tcp_stream(HOST, spec["port"]))
            stats.connects += 1
    stats.tables = len(streams)
    conn.send(("ready", stats.tables, stats.tables))
    stats.t0, stats.t1 = await _wait_go(conn, spec["go_timeout"])

    async def loop(stream: trio.SocketStream) -> None:
        frames = raw_load.FrameReader(stream, "the echo client")
        while True:
            sent = time.monotonic()
            await stream.send_all(frame)
            await frames.next()
            now = time.monotonic()
            if stats.inside(sent):
                stats.messages += 1
                stats.latencies.append(now - sent)

    try:
        with trio.move_on_at(trio_at(stats.t1 + spec["tail"])):
            async with trio.open_nursery() as nursery:
                for stream in streams:
                    nursery.start_soon(loop, stream)
    except Exception as exc:
        stats.error(f"echo client: {exc!r}")
    for stream in streams:
        await stream.aclose()
    conn.send(("result", stats))


def _driver_entry(conn: multiprocessing.connection.Connection, spec: dict[str, Any]) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the parent's
    if spec.get("load") == "lean":
        codec.unpack_untrusted = _trusting
    try:
        driver = {"game": _game_driver, "echo": _echo_driver, "probe": _probe_driver}
        trio.run(driver[spec["kind"]], conn, spec)
    except BaseException:  # the parent reports it
        with contextlib.suppress(Exception):
            conn.send(("error", traceback.format_exc()))
    finally:
        conn.close()


# ---------------------------------------------------------------- the echo server


async def _echo_server(response_path: str) -> None:
    response = Path(response_path).read_bytes()

    async def handle(stream: trio.SocketStream) -> None:
        buffer = bytearray()
        try:
            while True:
                data = await stream.receive_some(65536)
                if not data:
                    return
                buffer += data
                frames = 0
                while len(buffer) >= 4:
                    size = 4 + int.from_bytes(buffer[:4], "big")
                    if len(buffer) < size:
                        break
                    del buffer[:size]
                    frames += 1
                if frames:
                    await stream.send_all(response * frames)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    listeners = await trio.open_tcp_listeners(0, host=HOST)
    port = listeners[0].socket.getsockname()[1]
    print(f"echo serving on {HOST} port {port}", file=sys.stderr, flush=True)
    await trio.serve_listeners(handle, listeners)


# ---------------------------------------------------------------- one phase


@dataclass
class Phase:
    """One measured window: K tables (or echo connections), its CPU figures."""

    k: int
    drivers: int
    window: float
    stats: list[DriverStats]
    server_cpu: float
    server_main_cpu: float
    driver_cpu: list[float]
    machine_busy: float  # fraction of all cores
    machine_stolen: float  # fraction of all cores
    unattributed: float  # busy CPU seconds not of the server, the drivers or this process
    setup_seconds: float
    profile: str = ""
    log_notes: list[str] = field(default_factory=list)
    exit_status: int | None = 0
    server_died: bool = False
    # The server's VmRSS as the window opened, at its middle, and as it closed.
    rss_kb: tuple[int, int, int] = (0, 0, 0)

    def total(self, name: str) -> int:
        return sum(getattr(s, name) for s in self.stats)

    @property
    def disturbed(self) -> bool:
        """Much of the machine went to something else than this benchmark."""
        return self.unattributed / self.window >= DISTURBED

    def latencies(self) -> list[float]:
        return sorted(x for s in self.stats for x in s.latencies)

    def probe(self) -> list[float]:
        return sorted(x for s in self.stats for x in s.probe)

    def woke_late(self) -> list[float]:
        return sorted(x for s in self.stats for x in s.woke_late)

    def errors(self) -> list[str]:
        return [e for s in self.stats for e in s.errors]


def run_phase(
    children: Children,
    kind: str,
    *,
    k: int,
    drivers: int,
    server_pid: int,
    port: int,
    args: argparse.Namespace,
    seconds: float,
    frame: bytes = b"",
    on_window: tuple[Callable[[], None], Callable[[], None]] | None = None,
    protocol: int = 2,
) -> Phase:
    """Start the driver processes, wait for their setup, open the window for
    everyone at once, and gather what they counted."""
    context = multiprocessing.get_context("fork")
    drivers = max(1, min(drivers, k))
    links: list[multiprocessing.connection.Connection] = []
    pids: list[int] = []  # the drivers' (not the probe's: its CPU is not the load's)
    processes: list[multiprocessing.process.BaseProcess] = []
    started = time.monotonic()
    probes = 1 if kind == "game" else 0
    for d in range(drivers + probes):
        ours, theirs = context.Pipe()
        spec = {
            "kind": kind if d < drivers else "probe",
            "host": HOST,
            "port": port,
            "tables": list(range(d, k, drivers)),
            "players": args.players,
            "load": args.load,
            "protocol": protocol,
            "keys": args.keys,
            "seed": args.seed,
            "frame": frame,
            "setup_timeout": args.setup_timeout,
            "setup_concurrency": 16,
            "go_timeout": args.setup_timeout + 30,
            # (a game is about 50 decisions: at a pace, it takes that much longer)
            "game_timeout": args.game_timeout + 100 * args.pace,
            "pace": args.pace,
            "stagger": min(args.warmup, 1.0),
            "tail": args.tail,
            "profile": args.profile_top if args.profile_drivers and d == 0 else 0,
        }
        process = context.Process(target=_driver_entry, args=(theirs, spec), daemon=True)
        process.start()
        children.processes.append(process)
        processes.append(process)
        theirs.close()
        links.append(ours)
        assert process.pid is not None
        if d < drivers:
            pids.append(process.pid)

    def receive(link: multiprocessing.connection.Connection, deadline: float) -> Any:
        if not link.poll(max(0.0, deadline - time.monotonic())):
            raise RuntimeError(f"{kind} driver: no answer in time")
        try:
            message = link.recv()
        except EOFError:
            raise RuntimeError(f"{kind} driver exited without a word") from None
        if message[0] == "error":
            raise RuntimeError(f"{kind} driver failed:\n{message[1]}")
        return message

    deadline = time.monotonic() + args.setup_timeout + 10
    for link in links:
        receive(link, deadline)
    setup_seconds = time.monotonic() - started
    t0 = time.monotonic() + args.warmup
    t1 = t0 + seconds
    for link in links:
        link.send(("go", t0, t1))
    time.sleep(max(0.0, t0 - time.monotonic()))
    before = sample_cpu(server_pid, pids)
    rss_before = rss_kb(server_pid)
    if on_window:
        on_window[0]()
    time.sleep(max(0.0, (t0 + t1) / 2 - time.monotonic()))
    rss_middle = rss_kb(server_pid)
    time.sleep(max(0.0, t1 - time.monotonic()))
    after = sample_cpu(server_pid, pids)
    rss_after = rss_kb(server_pid)
    if on_window:
        on_window[1]()
    window = after.at - before.at
    stats = []
    deadline = time.monotonic() + 60
    for link in links:
        stats.append(receive(link, deadline)[1])
    for driver in processes:
        driver.join(10)
        if driver.is_alive():
            driver.kill()
    busy, stolen, total = (a - b for a, b in zip(after.machine, before.machine, strict=True))
    driver_cpu = [a - b for a, b in zip(after.drivers, before.drivers, strict=True)]
    server_cpu = after.server - before.server
    accounted = server_cpu + sum(driver_cpu) + after.parent - before.parent
    return Phase(
        rss_kb=(rss_before, rss_middle, rss_after),
        k=k,
        drivers=drivers,
        window=window,
        stats=stats,
        server_cpu=server_cpu,
        server_main_cpu=after.server_main - before.server_main,
        driver_cpu=driver_cpu,
        machine_busy=busy / total if total else 0.0,
        machine_stolen=stolen / total if total else 0.0,
        unattributed=max(0.0, busy / CLOCK_TICK - accounted),
        setup_seconds=setup_seconds,
    )


def game_phase(
    children: Children,
    k: int,
    drivers: int,
    args: argparse.Namespace,
    env: dict[str, str] | None = None,
    protocol: int | None = None,
) -> Phase:
    """K tables against a fresh server over a fresh data directory (`env`:
    the server's environment, another version's with `--against`), whose
    seats speak `protocol` (None: the first of `--protocols`)."""
    workdir = Path(tempfile.mkdtemp(prefix=f"k{k}-", dir=args.tmp))
    options = ["--port", "0", "--data-dir", str(workdir / "data"), "--log-level", "info"]
    protocol = args.protocols[0] if protocol is None else protocol
    if args.snapshot_every is not None:
        options += ["--snapshot-every", str(args.snapshot_every)]
    with _database(args.database) as database:
        if database is not None:
            options += ["--database", database]
        return _game_phase(children, k, drivers, args, env, workdir, options, protocol)


@contextlib.contextmanager
def _database(url: str | None) -> Iterator[str | None]:
    """With `--database URL` (PostgreSQL, a role that may create databases):
    a database of its own for one run, made and then dropped; else None."""
    if url is None:
        yield None
        return
    import psycopg

    name = f"oriflamme_bench_{secrets.token_hex(6)}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield urlsplit(url)._replace(path=f"/{name}").geturl()
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _game_phase(
    children: Children,
    k: int,
    drivers: int,
    args: argparse.Namespace,
    env: dict[str, str] | None,
    workdir: Path,
    options: list[str],
    protocol: int,
) -> Phase:
    # Every table connects from 127.0.0.1: lift the limit of one address.
    # Bots answer at once: a seat of a lone table sends more than the 200
    # messages a second the server allows a connection by default.
    options += one_address_limits(server_command(env), 10 * k * args.players + 100, env)
    profile_path = workdir / "server.prof"
    if args.profile_server:
        boot = [sys.executable, "-c", PROFILE_BOOT, str(profile_path), args.profile_clock]
        command = [*boot, "serve", *options]
    else:
        command = [*server_command(env), *options]
    log_path = workdir / "server.log"
    server, port = start_logged(children, command, log_path, rb"serving on \S+ port (\d+)", env=env)
    try:
        window = None
        if args.profile_server:
            window = (
                partial(server.send_signal, signal.SIGUSR1),
                partial(server.send_signal, signal.SIGUSR2),
            )
        phase = run_phase(
            children,
            "game",
            k=k,
            drivers=drivers,
            server_pid=server.pid,
            port=port,
            args=args,
            seconds=args.seconds,
            on_window=window,
            protocol=protocol,
        )
        phase.server_died = server.poll() is not None
    finally:
        status = stop(server)
    phase.exit_status = status
    phase.log_notes = _log_notes(log_path)
    if args.profile_server and profile_path.exists():
        phase.profile = _profile_report(profile_path, args.profile_top)
    return phase


def echo_phase(
    children: Children, k: int, drivers: int, frames: tuple[bytes, bytes], args: argparse.Namespace
) -> Phase:
    workdir = Path(tempfile.mkdtemp(prefix=f"echo{k}-", dir=args.tmp))
    response = workdir / "push.frame"
    response.write_bytes(frames[1])
    command = [sys.executable, str(Path(__file__).resolve()), "--echo-server", str(response)]
    echo, port = start_logged(
        children, command, workdir / "echo.log", rb"echo serving on \S+ port (\d+)"
    )
    try:
        return run_phase(
            children,
            "echo",
            k=k,
            drivers=drivers,
            server_pid=echo.pid,
            port=port,
            args=args,
            seconds=args.echo_seconds,
            frame=frames[0],
        )
    finally:
        stop(echo, timeout=10)


def _log_notes(log_path: Path) -> list[str]:
    """What in the server's log is not routine."""
    routine = re.compile(
        r" INFO oriflamme\.server: (connection [^ :]+( from| closed|: player)|room \d+: |serving on"
        r"|SIGTERM: shutting down|stopped|bot \d+ |record \S+ written)"
    )
    notes: dict[str, int] = {}
    for line in log_path.read_text(errors="replace").splitlines():
        if routine.search(line):
            continue
        key = re.sub(r"^\S+ \S+ ", "", line)  # without the time
        key = re.sub(r"\d+", "N", key)[:160]
        notes[key] = notes.get(key, 0) + 1
    return [f"{count} x {line}" for line, count in sorted(notes.items(), key=lambda x: -x[1])]


def _profile_report(path: Path, top: int) -> str:
    out = io.StringIO()
    stats = pstats.Stats(str(path), stream=out)
    stats.strip_dirs()
    out.write(f"--- by tottime (top {top})\n")
    stats.sort_stats("tottime").print_stats(top)
    out.write(f"--- by cumulative (top {top})\n")
    stats.sort_stats("cumulative").print_stats(top)
    return out.getvalue()


# ---------------------------------------------------------------- report


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of an already sorted list (nan if empty)."""
    if not sorted_values:
        return math.nan
    return sorted_values[max(0, math.ceil(q * len(sorted_values)) - 1)]


@dataclass
class Result:
    k: int
    game: Phase
    echo: Phase

    @property
    def decisions_per_second(self) -> float:
        return self.game.total("decisions") / self.game.window

    @property
    def echo_per_second(self) -> float:
        return self.echo.total("messages") / self.echo.window

    @property
    def decisions_per_game(self) -> float:
        counts = [x for s in self.game.stats for x in s.game_decisions]
        return statistics.fmean(counts) if counts else math.nan

    @property
    def ratio(self) -> float:
        return self.decisions_per_second / self.echo_per_second if self.echo_per_second else 0

    @property
    def p50_ms(self) -> float:
        return 1000 * percentile(self.game.latencies(), 0.50)

    @property
    def p99_ms(self) -> float:
        return 1000 * percentile(self.game.latencies(), 0.99)


def report_k(r: Result, args: argparse.Namespace) -> str:
    g, e = r.game, r.echo
    w = g.window
    decisions = g.total("decisions")
    games = g.total("games")
    lat = g.latencies()
    probe, late = g.probe(), g.woke_late()
    elat = e.latencies()
    per_game = r.decisions_per_game
    game_seconds = [x for s in g.stats for x in s.game_seconds]
    cores = os.cpu_count() or 1

    def pct(cpu: float, window: float = w) -> str:
        return f"{100 * cpu / window:.0f}%"

    def us(cpu: float, count: int) -> str:
        return f"{cpu / count * 1e6:,.0f}" if count else "-"

    lines = [
        f"K={r.k}: {r.k} table{'s' if r.k > 1 else ''} of {args.players} sessions"
        f" ({g.total('sessions')} connections), "
        f"{g.drivers} driver process(es); window {w:.1f} s after {args.warmup:g} s warm-up "
        f"(setup {g.setup_seconds:.1f} s)"
        + (
            f"; paced: each seat takes about {args.pace:g} s before a decision, so the"
            f" tables offer about {r.k / args.pace:,.0f} decisions/s"
            if args.pace
            else ""
        ),
        f"  games completed        {games:>9,}  {games / w:>10.2f}/s   ("
        + (f"{statistics.fmean(game_seconds):.2f} s a game; " if game_seconds else "")
        + (
            f"{per_game:.1f} decisions a game, so decisions/s make"
            f" {r.decisions_per_second / per_game:.2f} games/s; "
            if per_game == per_game
            else ""
        )
        + f"{g.total('games_failed')} with a seat's verdict not ok)",
        f"  server RSS             {g.rss_kb[0] / 1024:>8.1f}M, {g.rss_kb[1] / 1024:.1f}M at the"
        f" window's middle, {g.rss_kb[2] / 1024:.1f}M at its end: in its second half"
        f" {(g.rss_kb[2] - g.rss_kb[1]) / max(1, games / 2):+.2f} KB a game completed (the first"
        f" fills what is bounded: each session's pushes, the allocator's arenas)",
        f"  decisions              {decisions:>9,}  {decisions / w:>10.1f}/s"
        f"   (+ {g.total('automatic'):,} seed_commit/open/final_reveal)",
        f"  server CPU             {pct(g.server_cpu):>9}  {us(g.server_cpu, decisions):>10}"
        f" us/decision   (main thread {pct(g.server_main_cpu)},"
        f" other threads {pct(g.server_cpu - g.server_main_cpu)})",
        f"  latency to next push   p50 {1000 * percentile(lat, 0.5):7.2f} ms   "
        f"p99 {1000 * percentile(lat, 0.99):7.2f} ms   max {1000 * (lat[-1] if lat else math.nan):.1f}"
        f" ms   (n={len(lat):,})",
        f"  a lone client's ping   p50 {1000 * percentile(probe, 0.5):7.2f} ms   "
        f"p99 {1000 * percentile(probe, 0.99):7.2f} ms   (n={len(probe):,}, one every"
        f" {1000 * PROBE_EVERY:.0f} ms, answered after the tables' inputs before it)",
        f"  the machine's delay    p50 {1000 * percentile(late, 0.5):7.2f} ms   "
        f"p99 {1000 * percentile(late, 0.99):7.2f} ms   (how late the lone client's process"
        " woke from its sleeps: the scheduler's share of any latency here)",
        f"  driver CPU             {'+'.join(pct(c) for c in g.driver_cpu):>9}"
        f"  {us(sum(g.driver_cpu), decisions):>10} us/decision   (the load generator)",
        *(
            [
                f"  bytes on the wire      {g.total('bytes_in') / decisions:>9,.0f}"
                f" from the server, {g.total('bytes_out') / decisions:,.0f} to it, a decision"
                " (frames: length and msgpack)"
            ]
            if decisions and g.total("bytes_in")
            else []
        ),
        f"  machine                {100 * g.machine_busy:>8.0f}%  busy of {cores} cores"
        f"   (unattributed: {pct(g.unattributed)} of a core, the kernel or other processes"
        + (f"; stolen {100 * g.machine_stolen:.0f}%" if g.machine_stolen >= 0.01 else "")
        + ")",
        f"  echo baseline          {e.total('messages'):>9,}  {r.echo_per_second:>10,.0f} msgs/s"
        f"   (p50 {1000 * percentile(elat, 0.5):.2f} ms, p99 {1000 * percentile(elat, 0.99):.2f} ms;"
        f" echo server CPU {pct(e.server_cpu, e.window)}, {us(e.server_cpu, e.total('messages'))}"
        f" us/msg; drivers {'+'.join(pct(c, e.window) for c in e.driver_cpu)},"
        f" machine {100 * e.machine_busy:.0f}% busy)",
        f"  ratio                  {r.ratio:>9.3f}   decisions/s over echo msgs/s",
    ]
    saturated = [i for i, c in enumerate(g.driver_cpu) if c / w >= 0.9]
    if saturated:
        lines.append(
            f"  ! driver process(es) {', '.join(map(str, saturated))} at >= 90% of a core:"
            " the load generator may be the bottleneck"
        )
    if g.machine_busy >= 0.9:
        lines.append(
            f"  ! the machine is {100 * g.machine_busy:.0f}% busy: the server shares"
            f" {cores} cores with the drivers"
        )
    for phase, what in ((g, "the server"), (e, "the echo server")):
        if phase.disturbed:
            lines.append(
                f"  ! {pct(phase.unattributed, phase.window)} of a core went to neither {what}"
                " nor the drivers (other processes on the machine?): its figures may be low"
            )
    refused = g.total("refused")
    reconnects = g.total("connects") - g.total("sessions")
    if refused or reconnects:
        lines.append(f"  note: {refused} start_game refused, {reconnects} reconnection(s)")
    errors = g.errors() + e.errors()
    for error in errors[:10]:
        lines.append(f"  ERROR {error}")
    more = g.total("error_count") + e.total("error_count") - min(10, len(errors))
    if more > 0:
        lines.append(f"  ERROR ... and {more} more")
    if g.server_died:
        lines.append("  ! the server exited before the end of the window")
    if g.exit_status != 0:
        lines.append(f"  ! the server's exit status: {g.exit_status}")
    for note in g.log_notes[:15]:
        lines.append(f"  server log: {note}")
    return "\n".join(lines)


def summary(results: list[Result]) -> str:
    head = (
        f"{'K':>5} {'games/s':>8} {'decisions/s':>12} {'srv CPU':>8} {'us/dec':>7}"
        f" {'p50 ms':>7} {'p99 ms':>7} {'drivers CPU':>12} {'busy':>5} {'echo msg/s':>11}"
        f" {'ratio':>6}"
    )
    lines = [head, "-" * len(head)]
    for r in results:
        g = r.game
        decisions = g.total("decisions")
        lines.append(
            f"{r.k:>5} {g.total('games') / g.window:>8.2f} {r.decisions_per_second:>12,.0f}"
            f" {100 * g.server_cpu / g.window:>7.0f}%"
            f" {g.server_cpu / decisions * 1e6 if decisions else math.nan:>7.0f}"
            f" {r.p50_ms:>7.2f} {r.p99_ms:>7.2f}"
            f" {'/'.join(f'{100 * c / g.window:.0f}' for c in g.driver_cpu) + '%':>12}"
            f" {100 * g.machine_busy:>4.0f}% {r.echo_per_second:>11,.0f} {r.ratio:>6.3f}"
        )
    return "\n".join(lines)


def targets(results: list[Result], pace: float = 0.0) -> str:
    at = [r for r in results if r.k == TARGET_K]
    if not at:
        return f"targets (at K={TARGET_K}): not measured in this run"
    if pace:
        r = at[0]
        return (
            f"at K={TARGET_K}, paced ({pace:g} s a decision): p99 {r.p99_ms:.1f} ms, at"
            f" {r.decisions_per_second:,.0f} decisions/s (the targets are for tables that"
            " answer at once: run without --pace)"
        )
    r = at[0]
    ratio_ok = r.ratio >= TARGET_RATIO
    p99_ok = r.p99_ms < TARGET_P99_MS
    caveat = ""
    if r.game.disturbed or r.echo.disturbed:
        caveat = " (other load on the machine during the measure: run again)"
    return (
        f"targets at K={TARGET_K}: decisions/s >= {TARGET_RATIO:.0%} of echo msgs/s:"
        f" {r.ratio:.1%}, {'met' if ratio_ok else 'NOT met'};"
        f" p99 < {TARGET_P99_MS:g} ms: {r.p99_ms:.1f} ms, {'met' if p99_ok else 'NOT met'}" + caveat
    )


# ---------------------------------------------------------------- --against

PACKAGES = ("engine", "protocol", "server", "client")  # what `oriflamme` is made of
# (and `launcher`, where the commit has it: before it, the client held the CLI)


def against_env(rev: str, tmp: str) -> dict[str, str]:
    """The environment of a server of version `rev`: its packages, taken from
    git into `tmp`, first on the server's path (`oriflamme` is a namespace
    package: a folder earlier on the path holds its subpackages)."""
    root = Path(__file__).resolve().parent.parent
    launcher = subprocess.run(
        ["git", "-C", str(root), "cat-file", "-e", f"{rev}:launcher/cli.py"],
        capture_output=True,
        check=False,
    )
    packages = [*PACKAGES, "launcher"] if launcher.returncode == 0 else list(PACKAGES)
    archive = subprocess.run(
        ["git", "-C", str(root), "archive", "--prefix=oriflamme/", rev, *packages],
        capture_output=True,
        check=False,
    )
    if archive.returncode != 0:
        raise SystemExit(f"bench: cannot take {rev!r} from git: {archive.stderr.decode().strip()}")
    dest = Path(tmp) / "against"
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(dest, filter="data")
    path = [str(dest), *filter(None, [os.environ.get("PYTHONPATH")])]
    cli = "oriflamme.launcher.cli" if launcher.returncode == 0 else "oriflamme.client.cli"
    return dict(os.environ, PYTHONPATH=os.pathsep.join(path), **{CLI_MODULE: cli})


def compare_head() -> str:
    head = (
        f"{'K':>5} {'version':>12} {'decisions/s':>12} {'us/dec':>7} {'main':>6} {'p50 ms':>7}"
        f" {'p99 ms':>7} {'ping p50':>9} {'ping p99':>9} {'late p99':>9} {'busy':>5}"
        f" {'drv us/dec':>10}"
        f" {'B in/dec':>9}"
    )
    return head + "\n" + "-" * len(head)


def compare_line(k: int, version: str, g: Phase) -> str:
    decisions = g.total("decisions")
    lat, probe, late = g.latencies(), g.probe(), g.woke_late()
    per = (lambda x: x / decisions) if decisions else (lambda x: math.nan)
    return (
        f"{k:>5} {version[:12]:>12} {decisions / g.window:>12,.0f}"
        f" {per(g.server_cpu) * 1e6:>7.0f} {per(g.server_main_cpu) * 1e6:>6.0f}"
        f" {1000 * percentile(lat, 0.5):>7.2f} {1000 * percentile(lat, 0.99):>7.2f}"
        f" {1000 * percentile(probe, 0.5):>9.2f} {1000 * percentile(probe, 0.99):>9.2f}"
        f" {1000 * percentile(late, 0.99):>9.2f}"
        f" {100 * g.machine_busy:>4.0f}% {per(sum(g.driver_cpu)) * 1e6:>10.0f}"
        f" {per(g.total('bytes_in')):>9,.0f}"
    )


def compare_summary(k: int, runs: dict[str, list[Phase]]) -> str:
    """The median of each version's runs, and this one's over the other's."""

    def medians(phases: list[Phase]) -> dict[str, float]:
        def median(f: Callable[[Phase], float]) -> float:
            return statistics.median(f(g) for g in phases)

        return {
            "decisions/s": median(lambda g: g.total("decisions") / g.window),
            "us/dec": median(lambda g: g.server_cpu / max(1, g.total("decisions")) * 1e6),
            "main thread us/dec": median(
                lambda g: g.server_main_cpu / max(1, g.total("decisions")) * 1e6
            ),
            "p50 ms": median(lambda g: 1000 * percentile(g.latencies(), 0.5)),
            "p99 ms": median(lambda g: 1000 * percentile(g.latencies(), 0.99)),
            "ping p50 ms": median(lambda g: 1000 * percentile(g.probe(), 0.5)),
            "ping p99 ms": median(lambda g: 1000 * percentile(g.probe(), 0.99)),
            "machine's delay p99 ms": median(lambda g: 1000 * percentile(g.woke_late(), 0.99)),
            "driver us/dec": median(
                lambda g: sum(g.driver_cpu) / max(1, g.total("decisions")) * 1e6
            ),
            "bytes in/dec": median(lambda g: g.total("bytes_in") / max(1, g.total("decisions"))),
            "bytes out/dec": median(lambda g: g.total("bytes_out") / max(1, g.total("decisions"))),
        }

    (this, ours), (other, theirs) = ((v, medians(p)) for v, p in runs.items())
    parts = [
        f"{name} {ours[name]:,.1f} vs {theirs[name]:,.1f} ({ours[name] / theirs[name]:.2f}x)"
        for name in ours
        if theirs[name]
    ]
    line = f"K={k}, medians of {len(runs[this])} runs, {this} vs {other}: " + "; ".join(parts)
    if {this, other} == {"protocol 2", "protocol 1"}:  # issue 28's targets, v2 over v1
        v2, v1 = (ours, theirs) if this == "protocol 2" else (theirs, ours)
        checks = []
        for name, most in (("us/dec", 0.5), ("driver us/dec", 0.2), ("bytes in/dec", 1 / 3)):
            if v1[name]:
                ratio = v2[name] / v1[name]
                met = "met" if ratio <= most else "NOT met"
                checks.append(f"{name} {ratio:.2f}x of v1 (at most {most:.2f}x: {met})")
        line += "\n  targets, version 2 over version 1: " + "; ".join(checks)
    return line


def compare(children: Children, args: argparse.Namespace) -> None:
    """This version against `--against`, or protocol version 2 against
    version 1 (`--protocols 2,1`), in rotation: the machine's speed moves
    between runs more than most changes move it."""
    if args.against:
        env = against_env(args.against, args.tmp)
        protocol = args.protocols[0]
        versions = [("this", None, protocol), (args.against, env, protocol)]
        what = f"this tree against {args.against}"
    else:
        versions = [(f"protocol {p}", None, p) for p in args.protocols]
        what = "protocol " + " against ".join(map(str, args.protocols))
    print(
        f"{what}: {args.rounds} runs of each at every K,"
        " alternated (first one, then the other); no echo baseline"
    )
    for k in args.k_values:
        drivers = args.drivers if args.drivers is not None else (1 if k < 50 else 2)
        runs: dict[str, list[Phase]] = {name: [] for name, _, _ in versions}
        print()
        print(compare_head(), flush=True)
        for round_ in range(args.rounds):
            for name, version_env, protocol in versions if round_ % 2 == 0 else versions[::-1]:
                game = game_phase(children, k, drivers, args, env=version_env, protocol=protocol)
                runs[name].append(game)
                trouble = game.errors() or game.server_died or game.exit_status != 0
                note = (
                    "  ! errors or a server that failed: see a run without --against"
                    if trouble
                    else ""
                )
                print(compare_line(k, name, game) + note, flush=True)
        print(compare_summary(k, runs), flush=True)


# ---------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ks", default=None, help="table counts K, comma-separated (1,50,200)")
    parser.add_argument("--players", type=int, default=3, choices=range(2, 6), help="seats (3)")
    parser.add_argument("--seconds", type=float, default=None, help="measured window (15)")
    parser.add_argument("--warmup", type=float, default=None, help="before the window (2)")
    parser.add_argument("--echo-seconds", type=float, default=None, help="echo window (3)")
    parser.add_argument(
        "--drivers",
        type=int,
        default=None,
        help="driver processes (default: 1 below K=50, else 2)",
    )
    parser.add_argument(
        "--load",
        choices=["raw", "lean", "bots"],
        default="raw",
        help="raw (default): seats written as examples/minimal_bot.py is (bench/raw_load.py),"
        " so that the drivers cost less than the server; lean: client sessions"
        " (oriflamme.client.session) that pick a random option and decode frames without the"
        " strict checks; bots: real random bots, strictly decoding (the drivers are then the"
        " bottleneck)",
    )
    parser.add_argument(
        "--pace",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="the raw load only: each seat waits about this long (uniformly half to one and a"
        " half times) before it answers a decision, as players at a table take their time; the"
        " tables then offer K over SECONDS decisions a second, and the latency is the server's"
        " answer at that pace (0, the default: at once, the server's limit)",
    )
    parser.add_argument(
        "--keys",
        action="store_true",
        help="the lean and bots loads only: each seat is a player with a key of its own,"
        " who signs every decision (docs/PROTOCOL.md, Signed decisions), and the server"
        " checks each signature",
    )
    parser.add_argument("--seed", type=int, default=1, help="the bots' randomness (1)")
    parser.add_argument(
        "--setup-timeout", type=float, default=120.0, help="connections and rooms (120)"
    )
    parser.add_argument(
        "--game-timeout", type=float, default=60.0, help="a game that takes longer is a stall (60)"
    )
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: K=1,10, short windows (< 60 s in all)"
    )
    parser.add_argument(
        "--profile-server",
        action="store_true",
        help="run the server under cProfile, on in the window only (figures inflated)",
    )
    parser.add_argument(
        "--profile-drivers",
        action="store_true",
        help="cProfile the first driver process in the window (its CPU time)",
    )
    parser.add_argument("--profile-top", type=int, default=25, help="functions listed (25)")
    parser.add_argument(
        "--profile-clock",
        choices=["cpu", "wall"],
        default="cpu",
        help="cpu: the main thread's CPU time (default); wall: time blocked counts too",
    )
    parser.add_argument(
        "--against",
        metavar="REV",
        help="compare with the server of git revision REV instead: runs of both in rotation,"
        " medians and their ratio (no echo baseline)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="with --against or two --protocols: runs of each (3)",
    )
    parser.add_argument(
        "--protocols",
        default="2",
        metavar="VERSIONS",
        help="the protocol version the seats speak (2); two, as 2,1: both side by side, in"
        " rotation, with their figures' ratios against issue 28's targets (no echo baseline)",
    )
    parser.add_argument(
        "--database",
        metavar="URL",
        help="keep the server's state in PostgreSQL (`serve --database`): URL's role must"
        " create databases, and each run gets one of its own (this version only: not with"
        " --against)",
    )
    parser.add_argument(
        "--snapshot-every",
        type=int,
        metavar="N",
        help="the server's `serve --snapshot-every`: how often it takes the lobby's facts"
        " (a very large N: never, for a measurement of what they cost; its journal then"
        " grows without end)",
    )
    parser.add_argument("--echo-server", metavar="FRAME", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    quick = args.quick
    if args.ks is None:
        args.ks = "1,10" if quick else "1,50,200"
    args.k_values = [int(k) for k in args.ks.split(",") if k.strip()]
    args.protocols = [int(p) for p in args.protocols.split(",") if p.strip()]
    if not 1 <= len(args.protocols) <= 2 or not set(args.protocols) <= set(m.SUPPORTED_VERSIONS):
        parser.error(f"--protocols: one or two of {m.SUPPORTED_VERSIONS}")
    if len(args.protocols) == 2 and args.against:
        parser.error("--against compares one protocol version: give one to --protocols")
    if args.database is not None and args.against is not None:
        parser.error("--database is for this version only: leave out --against")
    if args.seconds is None:
        args.seconds = 2.5 if quick else 15.0
    if args.warmup is None:
        args.warmup = 0.5 if quick else 2.0
    if args.echo_seconds is None:
        args.echo_seconds = 1.0 if quick else 3.0
    args.tail = 0.5 if quick else 2.0  # play on after the window, for the last pushes
    if any(k < 1 for k in args.k_values) or args.seconds <= 0 or args.echo_seconds <= 0:
        parser.error("K values must be >= 1 and windows positive")
    if args.keys and args.load == "raw":
        parser.error("--keys is for the lean and bots loads (the raw load has no keys)")
    if args.pace < 0 or (args.pace and args.load != "raw"):
        parser.error("--pace takes seconds >= 0, and goes with the raw load only")
    return args


def command_line(args: argparse.Namespace) -> str:
    parts = [
        "python",
        "bench/server.py",
        "--ks",
        ",".join(map(str, args.k_values)),
        "--players",
        str(args.players),
        "--seconds",
        f"{args.seconds:g}",
        "--warmup",
        f"{args.warmup:g}",
        "--echo-seconds",
        f"{args.echo_seconds:g}",
        "--seed",
        str(args.seed),
    ]
    if args.drivers is not None:
        parts += ["--drivers", str(args.drivers)]
    if args.pace:
        parts += ["--pace", f"{args.pace:g}"]
    if args.load != "raw":
        parts += ["--load", args.load]
    if args.keys:
        parts.append("--keys")
    if args.profile_server:
        parts += ["--profile-server", "--profile-clock", args.profile_clock]
    if args.profile_drivers:
        parts.append("--profile-drivers")
    if args.protocols != [2]:
        parts += ["--protocols", ",".join(map(str, args.protocols))]
    if args.snapshot_every is not None:
        parts += ["--snapshot-every", str(args.snapshot_every)]
    if args.against or len(args.protocols) == 2:
        parts += [
            *(["--against", args.against] if args.against else []),
            "--rounds",
            str(args.rounds),
        ]
    return shlex.join(parts)


@contextlib.contextmanager
def children_killed_at_exit() -> Iterator[Children]:
    children = Children()
    try:
        yield children
    finally:
        children.kill_all()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.echo_server:
        with contextlib.suppress(KeyboardInterrupt):
            trio.run(_echo_server, args.echo_server)
        return 0
    # SIGTERM as Ctrl-C: unwind, so that every child process is stopped
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    started = time.monotonic()
    decision_frame, push_frame, info = typical_frames(args.players)
    print(
        f"server: K concurrent {args.players}-player games of random bots over loopback,"
        f" the {args.load} load ({LOADS[args.load]}), protocol"
        f" {' and '.join(map(str, args.protocols))}; {os.cpu_count()} cores,"
        f" Python {sys.version.split()[0]}"
    )
    print(
        f"echo frames: a {info['decision_type']} decision of {len(decision_frame)} bytes in"
        f" (decisions {info['decision_sizes'][0]}-{info['decision_sizes'][1]}),"
        f" a game_state push of {len(push_frame)} bytes out"
        f" (pushes {info['push_sizes'][0]}-{info['push_sizes'][1]})"
    )
    if args.profile_server:
        print("cProfile on in the server: its CPU figures are inflated by profiling")
    results: list[Result] = []
    with (
        tempfile.TemporaryDirectory(prefix="oriflamme-bench-") as tmp,
        children_killed_at_exit() as children,
    ):
        args.tmp = tmp
        if args.against or len(args.protocols) == 2:
            compare(children, args)
            print(f"({time.monotonic() - started:.0f} s in all) to reproduce: {command_line(args)}")
            return 0
        for k in args.k_values:
            drivers = args.drivers if args.drivers is not None else (1 if k < 50 else 2)
            game = game_phase(children, k, drivers, args)
            echo = echo_phase(children, k, drivers, (decision_frame, push_frame), args)
            result = Result(k, game, echo)
            results.append(result)
            print()
            print(report_k(result, args), flush=True)
            if game.stats and game.stats[0].profile:
                print(f"\ncProfile of the first driver process in the window, K={k} (cpu time):")
                print(game.stats[0].profile, flush=True)
            if game.profile:
                print(
                    f"\ncProfile of the server's main thread in the window, K={k}"
                    f" ({args.profile_clock} time):"
                )
                print(game.profile, flush=True)
    print()
    print(summary(results))
    print(targets(results, args.pace))
    print(f"({time.monotonic() - started:.0f} s in all) to reproduce: {command_line(args)}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # the child processes are stopped already
        print("interrupted", file=sys.stderr)
        sys.exit(130)

"""Abuse: what one client with no skill can do to the server, seen by a well-behaved client.

Each phase starts a fresh server process (`oriflamme serve --port 0` over a
new data directory, its log at info level in a file, where the port is
read), so that what one attack leaves behind does not count against the
next. In every phase a well-behaved client (its own process, its own
connection, from the source address 127.0.0.2, so that the attacker's
connections from 127.0.0.1 do not count against it) sends a `ping` every
20 ms whatever the answers do (an open loop) and times each round trip from
the moment the ping was due, so a ping held up on its way out counts its
wait too; a ping never answered counts as the time it waited (at least 2 s,
the grace after the window). The parent samples the server process's RSS
(VmRSS, /proc/PID/status) every 0.1 s, and its CPU. The attack runs in a
process of its own, at a lower priority (`--attack-nice`, 10): on a machine
of two cores it shares them with the server, and the ping should measure
the server, not the scheduler. Every connection of an attack comes from
127.0.0.1, one address.

The phases (the issue's five attacks, after a baseline with none):

* `baseline`: the ping alone.
* `stuck-rooms`: rooms whose every seat hands over false secrets. Tables of
  3 attacker sessions (`--stuck-seats`; `--stuck-bots` server bots beside
  them, 0 by default: with a bot seated the game ends already) create a
  room, join it, start the game, commit to a seed, and each sends
  `hand_over` with another seed (answered `bad_opening`); then the same
  sessions make the next room, in a loop. A server that cannot end such a
  game keeps every room (up to `--max-rooms`, 2,000).
* `spectate-and-drop`: a 5-seat room, the attacker's host seat (a raw
  client as `examples/minimal_bot.py` is, `bench/raw_load.py`'s, answering
  each decision after `--host-pace` seconds) and 4 server bots, playing
  game after game; meanwhile new sessions, `--spectators-per-second` of
  them, each send `hello` and `spectate` in one write and close the
  connection `--spectator-hold` seconds later without reading a byte. A
  closed session is kept (10 minutes) with the pushes it missed.
* `session-flood`: `--flood-tasks` loops of connect, `hello`, read the
  `welcome`, close, as fast as they go: sessions pile up (20,000 at most).
* `non-readers`: `--non-readers` connections that send `ping` and
  `list_rooms` without pause and never read; the server drops them (as
  designed) and they connect again; one whose write waits
  `--non-reader-patience` seconds (the server reads no more of it) is
  closed by the attacker, and connects again too.
* `answer-burst`: one game is played first (the attacker's seat and 4
  bots: `--record-seats`, 5, the largest records), its record found with
  `list_records`; then a connection writes `--burst` `get_record` requests
  in one write and reads the answers (how many came, and whether the
  connection was dropped), in a loop.

For each phase one line: the ping's p50, p95 and max, the RSS at the start,
peak and end of the window, the server's CPU, and against the baseline the
ping's p95 ratio and the RSS peak's difference; then what the attack did
and what the server's log says of the window. The target: during every
attack the ping's p95 stays within 3x the baseline's and the RSS peak within
50 MB of the baseline's. The server runs with its default limits (more with
`--serve-args`); each wait has a deadline, and a phase that cannot go on
says so and the next one runs.

    python bench/abuse.py                               # every phase, 20 s windows (2 to 3 minutes)
    python bench/abuse.py --seconds 60                  # longer windows
    python bench/abuse.py --only spectate-and-drop,answer-burst
    python bench/abuse.py --serve-args='--connections-per-address 1000'
    python bench/abuse.py --server-rev HEAD             # the last commit's server
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import multiprocessing
import multiprocessing.connection
import os
import random
import re
import shlex
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import msgpack
import raw_load  # (bench/, this script's folder)
import trio
from _load_client import frame, rss_kb, set_death_signal

HOST = "127.0.0.1"  # the server's address, and every attacker's
PINGER_ADDRESS = "127.0.0.2"  # the well-behaved client's: another address
SERVER_COMMAND = [sys.executable, "-m", "oriflamme.launcher.cli", "serve"]
CLOCK_TICK = os.sysconf("SC_CLK_TCK")
TARGET_P95_RATIO = 3.0
TARGET_RSS_MB = 50.0
PING_GRACE = 2.0  # seconds after the window for the last pongs
STEP = 10.0  # seconds any one step of an attack may take
START_TIMEOUT = 30.0  # for the server to say where it listens
GAME_TIMEOUT = 60.0  # a game of bots, from start to end
RESULT_GRACE = 15.0  # after the window, for a child's report
SAMPLE_EVERY = 0.1  # seconds between two RSS samples
BROKEN = (OSError, ConnectionError, trio.BrokenResourceError, trio.ClosedResourceError)

TUNABLES = (  # the options the command line to reproduce a run names when not their default
    "attack_nice",
    "ping_every",
    "setup_timeout",
    "serve_args",
    "stuck_tables",
    "stuck_seats",
    "stuck_bots",
    "spectators_per_second",
    "spectator_hold",
    "host_pace",
    "flood_tasks",
    "non_readers",
    "non_reader_patience",
    "burst",
    "record_seats",
)


class PhaseFailed(Exception):
    """A phase that cannot go on (a server that does not start, an attack
    that cannot set up, a child that does not report in time)."""


class Refused(Exception):
    def __init__(self, message: dict[str, Any]) -> None:
        super().__init__(f"{message.get('code')}: {message.get('message')}")
        self.code = str(message.get("code"))


def settings(players: int) -> dict[str, Any]:
    return {
        "players": players,
        "variant": "two-player" if players == 2 else "standard",
        "edition": "revised",
        "first_player": "host",
    }


def trio_at(t: float) -> float:
    """trio's clock at monotonic time `t` (the same clock in every process)."""
    return trio.current_time() + (t - time.monotonic())


def percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


# ---------------------------------------------------------------- a raw connection


class Link:
    """A raw connection to the server: frames out, msgpack maps in. It waits
    without a deadline of its own: callers wrap it in one."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.buffer = bytearray()
        self.next_id = 0

    @classmethod
    async def open(cls, port: int, name: str | None, local: str | None = None) -> Link:
        """Connect; with a `name`, say hello and wait for the welcome."""
        link = cls(await trio.open_tcp_stream(HOST, port, local_address=local))
        if name is not None:
            try:
                await link.request("hello", versions=[1], client="bench-abuse/1", name=name)
            except BaseException:
                await link.aclose()
                raise
        return link

    async def send(self, type_: str, **fields: Any) -> int:
        self.next_id += 1
        await self.stream.send_all(frame({"type": type_, **fields, "id": self.next_id}))
        return self.next_id

    async def receive(self) -> dict[str, Any]:
        buffer = self.buffer
        while len(buffer) < 4 or len(buffer) < 4 + int.from_bytes(buffer[:4], "big"):
            data = await self.stream.receive_some(65536)
            if not data:
                raise ConnectionError("the server closed the connection")
            buffer += data
        end = 4 + int.from_bytes(buffer[:4], "big")
        message: dict[str, Any] = msgpack.unpackb(bytes(buffer[4:end]), raw=False)
        del buffer[:end]
        return message

    async def until(self, test: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The next message that passes `test` (the others are dropped)."""
        while not test(message := await self.receive()):
            pass
        return message

    async def answer(self, request_id: int) -> dict[str, Any]:
        """The answer to request `request_id` (Refused if an error); a fatal
        error without an id ends the wait too."""
        message = await self.until(
            lambda m: "seq" not in m and (m.get("id") == request_id or bool(m.get("fatal")))
        )
        if message["type"] == "error":
            raise Refused(message)
        return message

    async def request(self, type_: str, **fields: Any) -> dict[str, Any]:
        return await self.answer(await self.send(type_, **fields))

    async def aclose(self) -> None:
        with trio.CancelScope(shield=True), trio.move_on_after(1):
            await self.stream.aclose()


# ---------------------------------------------------------------- the attacks


@dataclass
class SeatStats:
    """What `raw_load.RawSeat` counts as it plays (only its errors matter here)."""

    decisions: int = 0
    decisions_all: int = 0
    automatic: int = 0
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    error_count: int = 0

    def inside(self, t: float) -> bool:
        return False

    def error(self, text: str) -> None:
        self.error_count += 1
        if len(self.errors) < 5:
            self.errors.append(text)


class Seat(raw_load.RawSeat):
    """`bench/raw_load.py`'s seat (`examples/minimal_bot.py` made
    asynchronous: an honest player of random moves), which also keeps the
    last answer of each type and the record id of the games it ended."""

    def __init__(self, stream: trio.abc.Stream, name: str, pace: float) -> None:
        super().__init__(stream, name, random.Random(name), SeatStats(), pace)
        self.answers: dict[str, dict[str, Any]] = {}
        self.record_ids: list[str] = []
        self.reader = trio.CancelScope()  # its reading task's

    async def close(self) -> None:
        self.reader.cancel()
        with trio.CancelScope(shield=True), trio.move_on_after(1):
            await self.stream.aclose()

    async def receive(self, m: dict[str, Any]) -> None:
        if "seq" not in m:
            self.answers[m["type"]] = m
        elif m["type"] == "game_end" and m.get("record_id"):
            self.record_ids.append(m["record_id"])
        await super().receive(m)


def _started_or_startable(host: Seat, started: int) -> bool:
    return host.games_started > started or raw_load.startable(host)


def _started_or_refused(host: Seat, started: int, refused: int) -> bool:
    return host.games_started > started or host.start_refused > refused


def _ended(host: Seat, ended: int) -> bool:
    return host.games_ended > ended


class Attack:
    """One attack: `setup` (before the window; may start tasks that go on in
    `nursery`), then `run` until the window's end cancels it; `summary` says
    what it did."""

    name = ""

    def __init__(self, port: int, args: argparse.Namespace) -> None:
        self.port, self.args = port, args
        self.counts: collections.Counter[str] = collections.Counter()
        self.notes: list[str] = []

    def note(self, text: str) -> None:
        if len(self.notes) < 5 and text not in self.notes:
            self.notes.append(text)

    async def setup(self, nursery: trio.Nursery) -> None:
        pass

    async def run(self, nursery: trio.Nursery) -> None:
        raise NotImplementedError

    def summary(self) -> str:
        raise NotImplementedError

    def counted(self, *names: str) -> str:
        return ", ".join(f"{self.counts[n]} {n}" for n in names)

    async def seat(self, nursery: trio.Nursery, name: str, pace: float = 0.0) -> Seat:
        """A raw seat, connected and reading (its reader's failure is noted)."""
        with trio.fail_after(STEP):
            stream = await trio.open_tcp_stream(HOST, self.port)
        seat = Seat(stream, name, pace)

        async def read(*, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
            with seat.reader:
                try:
                    await seat.run(task_status=task_status)
                except Exception as exc:
                    self.note(f"{name}: {exc!r}")

        await nursery.start(read)
        with trio.fail_after(STEP):
            await seat.wait_until(lambda: seat.player is not None)
        return seat

    async def table(self, host: Seat, bots: int) -> None:
        """`host` makes a room of itself and `bots` random server bots, and
        says ready (`games` starts them)."""
        await host.send("create_room", settings=settings(bots + 1), name=f"{self.name} table")
        for _ in range(bots):
            await host.send("add_bot", strategy="random")
        await host.send("ready", ready=True)
        with trio.fail_after(STEP):
            await host.wait_until(partial(raw_load.startable, host))

    async def games(self, host: Seat, count: float = float("inf")) -> None:
        """Games at `host`'s table, one after the other (`count` of them)."""
        played = 0
        while played < count:
            started = host.games_started
            with trio.fail_after(GAME_TIMEOUT):
                while host.games_started == started:
                    await host.wait_until(partial(_started_or_startable, host, started))
                    if host.games_started > started:
                        break
                    refused = host.start_refused
                    await host.send("start_game")
                    await host.wait_until(partial(_started_or_refused, host, started, refused))
            ended = host.games_ended
            with trio.fail_after(GAME_TIMEOUT):
                await host.wait_until(partial(_ended, host, ended))
            played += 1
            self.counts["games"] += 1
            await host.send("ready", ready=True)


class StuckRooms(Attack):
    name = "stuck-rooms"

    async def run(self, nursery: trio.Nursery) -> None:
        for index in range(self.args.stuck_tables):
            nursery.start_soon(self._table_loop, index)
        await trio.sleep_forever()

    async def _table_loop(self, index: int) -> None:
        while True:
            links: list[Link] = []
            try:
                with trio.fail_after(STEP):
                    for k in range(self.args.stuck_seats):
                        links.append(await Link.open(self.port, f"stuck {index}.{k}"))
                while True:
                    with trio.fail_after(STEP):
                        if not await self._stuck_room(links):
                            await trio.sleep(1)  # no room to be had: try again later
            except trio.TooSlowError:
                self.counts["steps timed out"] += 1
            except Refused as exc:
                self.counts[f"refused {exc.code}"] += 1
                self.note(f"table {index}: {exc}")
            except BROKEN as exc:
                self.counts["connections lost"] += 1
                self.note(f"table {index}: {exc!r}")
            finally:
                for link in links:
                    await link.aclose()
            await trio.sleep(0.2)

    async def _stuck_room(self, links: list[Link]) -> bool:
        """One room, its game started, every seat handed over with a false
        seed; False if the server has no room to give."""
        host, others = links[0], links[1:]
        players = len(links) + self.args.stuck_bots
        try:
            await host.request("create_room", settings=settings(players), name="stuck")
        except Refused as exc:
            if exc.code != "too_many_rooms":
                raise
            self.counts["too_many_rooms"] += 1
            return False
        state = await host.until(lambda m: m["type"] == "room_state")
        for link in others:
            await link.request("join_room", room=state["room"])
        for _ in range(self.args.stuck_bots):
            await host.request("add_bot", strategy="random")
        for link in links:
            await link.request("ready", ready=True)
        await host.request("start_game")
        self.counts["rooms made"] += 1
        for link in links:
            await link.until(lambda m: m["type"] == "game_started")
            await link.send("seed_commit", commitment=os.urandom(32))
        for link in links:
            await link.until(lambda m: m["type"] == "server_seed")
        for link in links:
            try:
                await link.request("hand_over", seed=os.urandom(32), openings=[])
                self.counts["hand-overs accepted"] += 1
            except Refused as exc:
                key = "hand-overs refused bad_opening" if exc.code == "bad_opening" else exc.code
                self.counts[key] += 1
        return True

    def summary(self) -> str:
        names = ["rooms made", "hand-overs refused bad_opening", "hand-overs accepted"]
        names += sorted(set(self.counts) - set(names))
        seats = f"{self.args.stuck_seats} attacker seats, {self.args.stuck_bots} bots"
        return f"{self.args.stuck_tables} tables of {seats}: {self.counted(*names)}"


class SpectateAndDrop(Attack):
    name = "spectate-and-drop"

    async def setup(self, nursery: trio.Nursery) -> None:
        self.host = await self.seat(nursery, "spectated host", self.args.host_pace)
        await self.table(self.host, bots=4)
        nursery.start_soon(self._games)
        with trio.fail_after(STEP):
            await self.host.wait_until(lambda: self.host.games_started > 0)

    async def _games(self) -> None:
        try:
            await self.games(self.host)
        except Exception as exc:
            self.note(f"the room's games stopped: {exc!r}")

    async def run(self, nursery: trio.Nursery) -> None:
        assert self.host.room is not None
        room = self.host.room["room"]
        hello = frame({"type": "hello", "versions": [1], "client": "bench-abuse/1", "name": "w"})
        payload = hello + frame({"type": "spectate", "room": room, "id": 1})
        rate = self.args.spectators_per_second
        at = trio.current_time()
        while True:
            if rate > 0:
                at += 1 / rate
                await trio.sleep_until(at)
            else:
                await trio.sleep(0)
            nursery.start_soon(self._spectator, payload)

    async def _spectator(self, payload: bytes) -> None:
        try:
            with trio.fail_after(STEP):
                stream = await trio.open_tcp_stream(HOST, self.port)
            try:
                with trio.fail_after(STEP):
                    await stream.send_all(payload)
                self.counts["spectator sessions"] += 1
                await trio.sleep(self.args.spectator_hold)
            finally:
                with trio.CancelScope(shield=True), trio.move_on_after(1):
                    await stream.aclose()
        except trio.TooSlowError:
            self.counts["spectators timed out"] += 1
        except BROKEN as exc:
            self.counts["spectators failed"] += 1
            self.note(f"spectator: {exc!r}")

    def summary(self) -> str:
        room = self.host.room or {}
        watching = room.get("spectators", "?")
        rate = f"{self.args.spectators_per_second:g}" if self.args.spectators_per_second else "max"
        return (
            f"{self.counted('spectator sessions')} opened ({rate} a second, each closed"
            f" {self.args.spectator_hold:g} s later unread; "
            f"{self.counts['spectators failed']} failed, "
            f"{self.counts['spectators timed out']} timed out); the room played"
            f" {self.counts['games']} games (host pace {self.args.host_pace:g} s); the host's"
            f" last room_state counted {watching} spectators"
        )


class SessionFlood(Attack):
    name = "session-flood"

    async def run(self, nursery: trio.Nursery) -> None:
        for _ in range(self.args.flood_tasks):
            nursery.start_soon(self._flood)
        await trio.sleep_forever()

    async def _flood(self) -> None:
        while True:
            try:
                with trio.fail_after(STEP):
                    link = await Link.open(self.port, "flood")
                await link.aclose()
                self.counts["sessions"] += 1
            except Refused as exc:
                self.counts[f"refused {exc.code}"] += 1
            except trio.TooSlowError:
                self.counts["timed out"] += 1
            except BROKEN as exc:
                self.counts["connections failed"] += 1
                self.note(repr(exc))
                await trio.sleep(0.05)

    def summary(self) -> str:
        names = ["sessions", *sorted(set(self.counts) - {"sessions"})]
        return f"{self.args.flood_tasks} loops: {self.counted(*names)}"


class NonReaders(Attack):
    name = "non-readers"

    async def run(self, nursery: trio.Nursery) -> None:
        for _ in range(self.args.non_readers):
            nursery.start_soon(self._non_reader)
        await trio.sleep_forever()

    async def _non_reader(self) -> None:
        while True:
            try:
                with trio.fail_after(STEP):
                    stream = await trio.open_tcp_stream(HOST, self.port)
                self.counts["connections"] += 1
                try:
                    hello = {"type": "hello", "versions": [1], "client": "bench-abuse/1"}
                    with trio.fail_after(STEP):
                        await stream.send_all(frame({**hello, "name": "deaf", "id": 0}))
                    request_id = 0
                    while True:  # until the server drops it (or it stops reading)
                        batch = []
                        for _ in range(25):
                            request_id += 1
                            batch.append(frame({"type": "ping", "id": request_id}))
                            request_id += 1
                            batch.append(frame({"type": "list_rooms", "id": request_id}))
                        with trio.move_on_after(self.args.non_reader_patience) as waited:
                            await stream.send_all(b"".join(batch))
                        if waited.cancelled_caught:  # the server reads no more of it
                            self.counts["stalled"] += 1
                            break
                        self.counts["requests sent"] += len(batch)
                finally:
                    with trio.CancelScope(shield=True), trio.move_on_after(1):
                        await stream.aclose()
            except trio.TooSlowError:
                self.counts["connects timed out"] += 1
            except BROKEN:
                self.counts["dropped"] += 1
                await trio.sleep(0.05)

    def summary(self) -> str:
        return (
            f"{self.args.non_readers} at once: {self.counts['connections']} connections,"
            f" {self.counts['requests sent']} requests written, {self.counts['dropped']} seen"
            f" dropped by the server, {self.counts['stalled']} closed by the attacker when the"
            f" server had read nothing of them for {self.args.non_reader_patience:g} s,"
            f" {self.counts['connects timed out']} connects timed out"
        )


class AnswerBurst(Attack):
    name = "answer-burst"

    async def setup(self, nursery: trio.Nursery) -> None:
        host = await self.seat(nursery, "recorded host")
        await self.table(host, bots=self.args.record_seats - 1)
        await self.games(host, count=1)
        await host.send("list_records")
        with trio.fail_after(STEP):
            await host.wait_until(lambda: "record_list" in host.answers)
        records = host.answers["record_list"]["records"]
        if not records:
            raise PhaseFailed(f"list_records is empty after a game that ended {host.record_ids}")
        self.record_id: str = records[0]["record_id"]
        await host.close()
        self.answered: list[int] = []
        self.record_bytes = 0

    async def run(self, nursery: trio.Nursery) -> None:
        count = self.args.burst
        burst = b"".join(
            frame({"type": "get_record", "record_id": self.record_id, "id": i})
            for i in range(1, count + 1)
        )
        while True:
            try:
                with trio.fail_after(STEP):
                    link = await Link.open(self.port, "burst")
            except (trio.TooSlowError, Refused, *BROKEN) as exc:
                self.counts["connects failed"] += 1
                self.note(repr(exc))
                await trio.sleep(0.1)
                continue
            answered: set[int] = set()
            try:
                with trio.fail_after(STEP):
                    await link.stream.send_all(burst)
                    while len(answered) < count:
                        message = await link.receive()
                        if "seq" in message:
                            continue
                        if message.get("id") in range(1, count + 1):
                            answered.add(message["id"])
                        if message["type"] == "record":
                            self.counts["records"] += 1
                            self.record_bytes = len(message.get("data", b""))
                        elif message["type"] == "error":
                            self.counts[f"error {message.get('code')}"] += 1
            except trio.TooSlowError:
                self.counts["bursts timed out"] += 1
            except BROKEN:
                self.counts["bursts dropped"] += 1
            finally:
                await link.aclose()
            # (not reached by a burst the window's end cut short)
            self.counts["bursts"] += 1
            self.answered.append(len(answered))

    def summary(self) -> str:
        done = sorted(self.answered) or [0]
        others = sorted(set(self.counts) - {"bursts", "bursts dropped", "bursts timed out"})
        return (
            f"{self.counts['bursts']} bursts of {self.args.burst} get_record (a record of"
            f" {self.record_bytes or '?'} bytes): answers a burst min {done[0]},"
            f" median {done[len(done) // 2]}, max {done[-1]};"
            f" {self.counts['bursts dropped']} dropped, {self.counts['bursts timed out']}"
            f" timed out; {self.counted(*others)}"
        )


ATTACKS: dict[str, type[Attack]] = {
    a.name: a for a in (StuckRooms, SpectateAndDrop, SessionFlood, NonReaders, AnswerBurst)
}


# ---------------------------------------------------------------- the child processes


def _wait_go(conn: multiprocessing.connection.Connection, timeout: float) -> tuple[float, float]:
    if not conn.poll(timeout):
        raise PhaseFailed(f"no word from the parent in {timeout:g} s")
    message = conn.recv()
    if message[0] != "go":
        raise PhaseFailed("the parent called the phase off")
    return message[1], message[2]


async def _attack_main(
    conn: multiprocessing.connection.Connection, name: str, port: int, args: argparse.Namespace
) -> None:
    attack = ATTACKS[name](port, args)
    async with trio.open_nursery() as nursery:
        try:
            with trio.fail_after(args.setup_timeout):
                await attack.setup(nursery)
        except Exception as exc:
            conn.send(("failed", f"its setup failed: {exc!r}"))
            nursery.cancel_scope.cancel()
            return
        conn.send(("ready", ""))
        _, t1 = await trio.to_thread.run_sync(_wait_go, conn, args.setup_timeout + 60)
        with trio.move_on_at(trio_at(t1)):
            await attack.run(nursery)
        nursery.cancel_scope.cancel()
    summary = attack.summary()
    if attack.notes:
        summary += "\n      first problems: " + "; ".join(attack.notes)
    conn.send(("done", summary))


def attack_process(
    conn: multiprocessing.connection.Connection, name: str, port: int, args: argparse.Namespace
) -> None:
    set_death_signal()
    if args.attack_nice:
        os.nice(args.attack_nice)
    try:
        trio.run(_attack_main, conn, name, port, args)
    except BaseException as exc:
        with contextlib.suppress(Exception):
            conn.send(("failed", "".join(traceback.format_exception_only(exc)).strip()))


@dataclass
class PingResult:
    rtts: list[float] = field(default_factory=list)  # seconds, the unanswered included
    sent: int = 0
    lost: int = 0
    reconnects: int = 0
    errors: collections.Counter[str] = field(default_factory=collections.Counter)
    source: str = PINGER_ADDRESS


async def _ping_main(
    conn: multiprocessing.connection.Connection, port: int, args: argparse.Namespace
) -> None:
    result = PingResult()
    try:
        with socket.socket() as probe:
            probe.bind((PINGER_ADDRESS, 0))
    except OSError:
        result.source = HOST  # no second loopback address here: the attackers'

    async def connect() -> Link:
        with trio.fail_after(STEP):
            return await Link.open(port, "pinger", local=result.source)

    link: Link | None = await connect()
    conn.send(("ready", result.source))
    t0, t1 = await trio.to_thread.run_sync(_wait_go, conn, args.setup_timeout + 60)
    due: dict[int, float] = {}  # ping id -> when it was due
    broken: list[str] = []

    async def read(link: Link, scope: trio.CancelScope) -> None:
        try:
            while True:
                message = await link.receive()
                if message["type"] == "pong":
                    sent_at = due.pop(message.get("id", -1), None)
                    if sent_at is not None:
                        result.rtts.append(time.monotonic() - sent_at)
                elif message["type"] == "error":
                    result.errors[str(message.get("code"))] += 1
        except BROKEN as exc:
            broken.append(repr(exc))
            scope.cancel()

    k = 0
    while time.monotonic() < t1:
        if link is None:
            try:
                link = await connect()
            except (trio.TooSlowError, Refused, *BROKEN) as exc:
                result.errors[f"could not connect again: {exc!r}"] += 1
                await trio.sleep(0.5)
                continue
            k = max(k, int((time.monotonic() - t0) / args.ping_every))  # (not a burst)
        broken.clear()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(read, link, nursery.cancel_scope)
            try:
                with trio.move_on_at(trio_at(t1 + PING_GRACE)):
                    while (at := t0 + (k + 1) * args.ping_every) < t1:
                        k += 1
                        await trio.sleep_until(trio_at(at))
                        due[k] = at
                        result.sent += 1
                        await link.stream.send_all(frame({"type": "ping", "id": k}))
                    while due and not broken:  # the last pongs
                        await trio.sleep(0.01)
            except BROKEN as exc:
                broken.append(repr(exc))
            nursery.cancel_scope.cancel()
        now = time.monotonic()
        result.lost += len(due)
        result.rtts += [now - at for at in due.values()]
        due.clear()
        await link.aclose()
        if broken and now < t1:
            result.reconnects += 1
            result.errors[f"lost its connection: {broken[0]}"] += 1
            link = None
    conn.send(("done", result))


def ping_process(
    conn: multiprocessing.connection.Connection, port: int, args: argparse.Namespace
) -> None:
    set_death_signal()
    try:
        trio.run(_ping_main, conn, port, args)
    except BaseException as exc:
        with contextlib.suppress(Exception):
            conn.send(("failed", "".join(traceback.format_exception_only(exc)).strip()))


# ---------------------------------------------------------------- the server


PACKAGES = ("engine", "protocol", "server", "client")  # what `oriflamme` is made of


def revision_env(rev: str, tmp: Path) -> dict[str, str]:
    """The environment of a server of git revision `rev` (as `bench/server.py
    --against` makes it): its packages taken from git into `tmp`, first on
    the server's path (`oriflamme` is a namespace package)."""
    root = Path(__file__).resolve().parent.parent
    archive = subprocess.run(
        ["git", "-C", str(root), "archive", "--prefix=oriflamme/", rev, *PACKAGES],
        capture_output=True,
        check=False,
    )
    if archive.returncode != 0:
        raise SystemExit(f"abuse: cannot take {rev!r} from git: {archive.stderr.decode().strip()}")
    dest = tmp / "revision"
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(dest, filter="data")
    path = [str(dest), *filter(None, [os.environ.get("PYTHONPATH")])]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(path))


def start_server(
    workdir: Path, args: argparse.Namespace
) -> tuple[subprocess.Popen[bytes], int, Path]:
    log_path = workdir / "server.log"
    command = [
        *SERVER_COMMAND,
        "--host",
        HOST,
        "--port",
        "0",
        "--data-dir",
        str(workdir / "data"),
        "--log-level",
        "info",
        *shlex.split(args.serve_args),
    ]
    with open(log_path, "wb") as log:
        popen = subprocess.Popen(
            command, stdout=log, stderr=log, stdin=subprocess.DEVNULL, env=args.server_env
        )
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        found = re.search(rb"serving on \S+ port (\d+)", log_path.read_bytes())
        if found:
            return popen, int(found.group(1)), log_path
        if popen.poll() is not None:
            break
        time.sleep(0.02)
    stop_server(popen)
    tail = log_path.read_text(errors="replace")[-2000:]
    raise PhaseFailed(f"the server did not say where it listens:\n{tail}")


def stop_server(popen: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    """SIGTERM, then SIGKILL after `timeout` seconds."""
    if popen.poll() is not None:
        return
    popen.send_signal(signal.SIGTERM)
    try:
        popen.wait(timeout)
    except subprocess.TimeoutExpired:
        popen.kill()
        popen.wait(5)


def cpu_seconds(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICK  # utime + stime


LOG_COUNTS = {  # what the server's log says of a window (its info lines)
    "connections": rb"connection \S+ from \d",
    "new sessions": rb"a new session",
    "rooms made": rb"room \d+: made",
    "rooms closed": rb"room \d+: closed",
    "games started": rb"game \w+ started",
    "games finished": rb"game \w+ finished",
    "games cancelled": rb"game \w+ cancelled",
    "spectators": rb"\) watches",
    "dropped unread": rb"connection \S+ dropped:",
    "lost": rb"closed \(lost \(",
}


def log_summary(log: bytes) -> str:
    counts = {name: len(re.findall(pattern, log)) for name, pattern in LOG_COUNTS.items()}
    playing = counts["games started"] - counts["games finished"] - counts["games cancelled"]
    parts = [f"{n} {name}" for name, n in counts.items() if n]
    fatal = collections.Counter(re.findall(rb"after a fatal (\w+)", log))
    parts += [f"{n} closed after {code.decode()}" for code, n in sorted(fatal.items())]
    return ", ".join(parts) + f"; games still on at the window's end: {playing}"


# ---------------------------------------------------------------- a phase


@dataclass
class Phase:
    name: str
    ping: PingResult | None = None
    rss_mb: list[float] = field(default_factory=list)
    cpu: float = float("nan")  # the server's, cores
    attack: str = ""
    log: str = ""
    failure: str = ""
    exited: int | None = None  # the server's status, if it stopped in the window

    def rtts_ms(self) -> list[float]:
        return sorted(x * 1000 for x in self.ping.rtts) if self.ping else []


def _expect(
    conn: multiprocessing.connection.Connection, kind: str, timeout: float, who: str
) -> Any:
    if not conn.poll(timeout):
        raise PhaseFailed(f"{who}: no word in {timeout:g} s")
    message = conn.recv()
    if message[0] == "failed":
        raise PhaseFailed(f"{who}: {message[1]}")
    if message[0] != kind:
        raise PhaseFailed(f"{who}: {message[0]!r} where {kind!r} was expected")
    return message[1]


def run_phase(name: str, args: argparse.Namespace, tmp: Path) -> Phase:
    phase = Phase(name)
    workdir = tmp / name
    workdir.mkdir()
    context = multiprocessing.get_context("fork")
    processes: list[multiprocessing.process.BaseProcess] = []
    links: list[multiprocessing.connection.Connection] = []
    popen: subprocess.Popen[bytes] | None = None
    try:
        popen, port, log_path = start_server(workdir, args)
        pinger, theirs = context.Pipe()
        processes.append(context.Process(target=ping_process, args=(theirs, port, args)))
        processes[-1].start()
        links.append(pinger)
        _expect(pinger, "ready", START_TIMEOUT, "the pinging client")
        attacker = None
        if name in ATTACKS:
            attacker, theirs = context.Pipe()
            target = attack_process
            processes.append(context.Process(target=target, args=(theirs, name, port, args)))
            processes[-1].start()
            links.append(attacker)
            _expect(attacker, "ready", args.setup_timeout + 10, "the attack")
        t0 = time.monotonic() + 0.2
        t1 = t0 + args.seconds
        for link in links:
            link.send(("go", t0, t1))
        time.sleep(max(0.0, t0 - time.monotonic()))
        cpu0 = cpu_seconds(popen.pid)
        while (now := time.monotonic()) < t1:
            if popen.poll() is not None:  # the children go on to the window's end
                phase.exited = popen.returncode
                time.sleep(t1 - now)
                break
            phase.rss_mb.append(rss_kb(popen.pid) / 1024)
            time.sleep(min(SAMPLE_EVERY, max(0.0, t1 - now)))
        if phase.exited is None:
            phase.rss_mb.append(rss_kb(popen.pid) / 1024)
            phase.cpu = (cpu_seconds(popen.pid) - cpu0) / (time.monotonic() - t0)
        phase.log = log_summary(log_path.read_bytes())
        if attacker is not None:
            phase.attack = _expect(attacker, "done", RESULT_GRACE, "the attack")
        phase.ping = _expect(pinger, "done", PING_GRACE + RESULT_GRACE, "the pinging client")
    except PhaseFailed as exc:
        phase.failure = str(exc)
    finally:
        for link in links:
            with contextlib.suppress(OSError):
                link.send(("stop", 0.0, 0.0))
        for process in processes:
            process.join(5)
            if process.is_alive():
                process.kill()
                process.join(5)
        if popen is not None:
            stop_server(popen)
    return phase


# ---------------------------------------------------------------- the report


HEADER = (
    f"{'phase':<18} {'ping ms: p50':>12} {'p95':>7} {'max':>8} {'lost':>5}"
    f"  {'RSS MB: start':>13} {'peak':>6} {'end':>6} {'CPU':>5}"
    f"  {'p95/base':>8} {'peak-base':>10}  target"
)


def report_line(phase: Phase, base: Phase | None) -> tuple[str, bool | None]:
    """The phase's line, and whether it meets the target (None: not judged)."""
    if phase.failure:
        exited = "" if phase.exited is None else f" (the server exited: {phase.exited})"
        return f"{phase.name:<18} could not run{exited}: {phase.failure}", None
    rtts = phase.rtts_ms()
    rss = phase.rss_mb or [float("nan")]
    peak = max(rss)
    lost = phase.ping.lost if phase.ping else 0
    line = (
        f"{phase.name:<18} {percentile(rtts, 0.5):>12.2f} {percentile(rtts, 0.95):>7.2f}"
        f" {max(rtts, default=float('nan')):>8.1f} {lost:>5}"
        f"  {rss[0]:>13.1f} {peak:>6.1f} {rss[-1]:>6.1f} {phase.cpu:>5.0%}"
    )
    if base is None or base.failure or phase is base:
        return line + f"  {'':>8} {'':>10}  (the reference)", None
    base_p95 = percentile(base.rtts_ms(), 0.95)
    ratio = percentile(rtts, 0.95) / base_p95
    grown = peak - max(base.rss_mb or [float("nan")])
    missed = []
    if not ratio <= TARGET_P95_RATIO:
        missed.append("p95")
    if not grown <= TARGET_RSS_MB:
        missed.append("RSS")
    if phase.exited is not None:
        missed.append(f"the server exited ({phase.exited})")
    verdict = "met" if not missed else f"MISSED ({', '.join(missed)})"
    return line + f"  {ratio:>7.1f}x {grown:>+7.1f} MB  {verdict}", not missed


def details(phase: Phase) -> list[str]:
    out = []
    if phase.attack:
        out.append(f"    attack: {phase.attack}")
    if phase.log:
        out.append(f"    server log: {phase.log}")
    if phase.ping:
        ping = phase.ping
        extra = ""
        if ping.source != PINGER_ADDRESS:
            extra = f", from {ping.source} (the attackers' address: {PINGER_ADDRESS} refused)"
        if ping.reconnects or ping.errors:
            extra += f", {ping.reconnects} reconnects, errors: {dict(ping.errors)}"
        out.append(f"    ping: {ping.sent} sent, {ping.lost} never answered{extra}")
    return out


def command_line(args: argparse.Namespace) -> str:
    parts = ["python", "bench/abuse.py", "--seconds", f"{args.seconds:g}"]
    if args.only:
        parts += ["--only", args.only]
    if args.server_rev:
        parts += ["--server-rev", args.server_rev]
    defaults = vars(parse_args([]))
    for name in TUNABLES:
        value = getattr(args, name)
        if value != defaults[name]:
            parts.append(f"--{name.replace('_', '-')}={value}")
    return shlex.join(parts)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="each phase's window (20)")
    parser.add_argument(
        "--only", default="", help=f"attacks to run, comma-separated (all): {', '.join(ATTACKS)}"
    )
    parser.add_argument(
        "--attack-nice", type=int, default=10, help="the attack processes' niceness (10)"
    )
    parser.add_argument(
        "--ping-every", type=float, default=0.02, help="seconds between two pings (0.02)"
    )
    parser.add_argument(
        "--setup-timeout", type=float, default=60.0, help="an attack's setup, at most (60 s)"
    )
    parser.add_argument(
        "--serve-args", default="", help="more `oriflamme serve` options, for every phase"
    )
    parser.add_argument(
        "--server-rev",
        metavar="REV",
        help="run git revision REV's server (HEAD: the last commit), not this tree's",
    )
    group = parser.add_argument_group("the attacks")
    group.add_argument("--stuck-tables", type=int, default=2, help="stuck-rooms' tables (2)")
    group.add_argument(
        "--stuck-seats", type=int, default=3, help="attacker seats at each (3), 2-5 in all"
    )
    group.add_argument("--stuck-bots", type=int, default=0, help="server bots at each (0)")
    group.add_argument(
        "--spectators-per-second",
        type=float,
        default=30.0,
        help="spectate-and-drop's new sessions a second (30; 0: as fast as it goes)",
    )
    group.add_argument(
        "--spectator-hold", type=float, default=0.2, help="seconds each stays connected (0.2)"
    )
    group.add_argument(
        "--host-pace",
        type=float,
        default=0.2,
        help="seconds the spectated room's host takes a decision (0.2)",
    )
    group.add_argument(
        "--flood-tasks", type=int, default=16, help="session-flood's loops at once (16)"
    )
    group.add_argument(
        "--non-readers", type=int, default=20, help="non-readers' connections at once (20)"
    )
    group.add_argument(
        "--non-reader-patience",
        type=float,
        default=5.0,
        help="seconds a non-reader waits on a write before it closes and connects again (5)",
    )
    group.add_argument("--burst", type=int, default=80, help="answer-burst's requests (80)")
    group.add_argument(
        "--record-seats",
        type=int,
        default=5,
        choices=range(2, 6),
        help="seats of the game whose record it asks for (5: the largest records)",
    )
    args = parser.parse_args(argv)
    only = [n for n in args.only.split(",") if n]
    unknown = set(only) - set(ATTACKS)
    if unknown:
        parser.error(f"no attack {', '.join(sorted(unknown))}: {', '.join(ATTACKS)}")
    args.attacks = [n for n in ATTACKS if not only or n in only]
    if not 2 <= args.stuck_seats + args.stuck_bots <= 5 or args.stuck_seats < 1:
        parser.error("--stuck-seats (1 or more) and --stuck-bots: 2 to 5 seats in all")
    if args.seconds <= 0 or args.ping_every <= 0:
        parser.error("--seconds and --ping-every take a positive number")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # SIGTERM as Ctrl-C: unwind, so that the server and the children are stopped
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    started = time.monotonic()
    limits = f"with {args.serve_args!r}" if args.serve_args else "with its default limits"
    if args.server_rev:
        limits = f"git revision {args.server_rev}'s server, {limits}"
    print(
        f"abuse: a fresh server for each phase ({limits}), a {args.seconds:g} s window, a ping"
        f" every {args.ping_every * 1000:g} ms from {PINGER_ADDRESS}; the attacks from {HOST}"
        f" at nice {args.attack_nice}; {os.cpu_count()} cores, Python {sys.version.split()[0]}"
    )
    print(
        f"target: during every attack the ping's p95 within {TARGET_P95_RATIO:g}x the"
        f" baseline's and the RSS peak within {TARGET_RSS_MB:g} MB of the baseline's"
    )
    print()
    print(HEADER, flush=True)
    phases: list[Phase] = []
    verdicts: list[bool | None] = []
    with tempfile.TemporaryDirectory(prefix="oriflamme-abuse-") as tmp:
        args.server_env = revision_env(args.server_rev, Path(tmp)) if args.server_rev else None
        base: Phase | None = None
        for name in ["baseline", *args.attacks]:
            phase = run_phase(name, args, Path(tmp))
            phases.append(phase)
            if name == "baseline":
                base = phase
            line, verdict = report_line(phase, base)
            if name != "baseline":
                verdicts.append(verdict)
            print("\n".join([line, *details(phase)]), flush=True)
    print()
    judged = [v for v in verdicts if v is not None]
    print(
        f"target met in {sum(judged)} of {len(verdicts)} attacks"
        + (f" ({len(verdicts) - len(judged)} not judged)" if len(judged) < len(verdicts) else "")
    )
    print(f"({time.monotonic() - started:.0f} s in all) to reproduce: {command_line(args)}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)

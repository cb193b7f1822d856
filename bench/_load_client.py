"""Idle connections for `bench/load.py`: one process holds thousands of them.

A driver process (`idle_driver`, started by `bench/load.py`) opens TCP
connections to the server on command, says `hello` on each (a valid frame:
4-byte big-endian length, then a msgpack map), reads the `welcome`, and
then stays idle: it reads what comes (it counts it, and keeps the last
`error` a connection was told before being closed) and sends nothing but a
`ping` every `ping_interval` seconds, so that the server's idle timeout
(120 s) never closes it. No trio here: one `selectors` loop (epoll) over
raw non-blocking sockets and the pipe to the parent, a small object per
connection, so a driver holds ~9,000 connections in a few tens of MB.

Commands, over a `multiprocessing` pipe (every answer is a dict):

    ("open", count, timeout)   open `count` more; answered once all are
                               welcomed or failed, or at the deadline (the
                               ones still on their way are closed, counted failed)
    ("status",)                what it holds, what was closed and why
    ("close",)                 close everything, answer, exit

The driver exits by itself when its parent goes away (the pipe's end).
"""

from __future__ import annotations

import collections
import contextlib
import errno
import functools
import multiprocessing.connection
import os
import resource
import selectors
import socket
import subprocess
import time
from typing import Any

import msgpack

CONNECTING, HELLO_SENT, IDLE, CLOSED = range(4)


def raise_fd_limit() -> int:
    """Soft limit of open files = the hard limit; returns it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def set_death_signal() -> None:
    """Be killed when the parent dies (Linux), whatever it died of."""
    with contextlib.suppress(Exception):
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG


def one_address_limits(
    serve: list[str], connections: int, env: dict[str, str] | None = None
) -> list[str]:
    """`oriflamme serve` options that let every table of a benchmark connect
    from 127.0.0.1 at once: the limits of one address lifted, and the rate
    of messages (bots answer at once). `serve`: the command that starts the
    server (with `env`, another version's, which may not know the newer
    limits: those it does not list in its `--help` are left out)."""
    options = ["--connections-per-address", str(connections)]
    options += ["--message-rate", "1000000", "--message-burst", "1000000"]
    newer = [
        ("--connection-rate", "1000000"),  # new connections a second from one address
        ("--sessions-per-address", str(connections)),
        ("--work-rate", "1000000"),  # rooms and games set going a second
        ("--work-burst", "1000000000"),
    ]
    known = _serve_help(tuple(serve), tuple(sorted((env or {}).items())))
    for flag, value in newer:
        if flag in known:
            options += [flag, value]
    return options


@functools.cache
def _serve_help(serve: tuple[str, ...], env: tuple[tuple[str, str], ...]) -> str:
    done = subprocess.run(
        [*serve, "--help"], capture_output=True, text=True, env=dict(env) or None, timeout=60
    )
    return done.stdout


def frame(message: dict[str, Any]) -> bytes:
    payload = msgpack.packb(message, use_bin_type=True)
    return len(payload).to_bytes(4, "big") + payload


def rss_kb(pid: int | str = "self") -> int:
    """VmRSS of a process, in KiB (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class _Conn:
    __slots__ = ("sock", "state", "buf", "out", "started", "next_ping", "pings", "last_error")

    def __init__(self, sock: socket.socket, now: float) -> None:
        self.sock = sock
        self.state = CONNECTING
        self.buf: bytearray | None = None
        self.out = b""
        self.started = now
        self.next_ping = 0.0
        self.pings = 0
        self.last_error: str | None = None


class IdleDriver:
    def __init__(self, pipe: multiprocessing.connection.Connection, spec: dict[str, Any]) -> None:
        self.pipe = pipe
        self.address = (spec["host"], spec["port"])
        self.ping_interval: float = spec["ping_interval"]
        self.concurrency: int = spec["concurrency"]
        self.hello = frame(
            {"type": "hello", "versions": [1], "client": "load/1", "name": spec["name"]}
        )
        self.selector = selectors.DefaultSelector()
        self.selector.register(pipe.fileno(), selectors.EVENT_READ, None)
        self.conns: set[_Conn] = set()  # every connection not closed
        self.idle = 0  # welcomed and still open
        self.in_flight = 0  # connecting, or waiting for the welcome
        self.ping_queue: collections.deque[_Conn] = collections.deque()  # by next_ping
        # the "open" command under way
        self.to_open = 0
        self.batch: dict[str, Any] | None = None
        self.open_deadline = 0.0
        # counts
        self.pings_sent = 0
        self.pongs = 0
        self.received: collections.Counter[str] = collections.Counter()
        self.closed_after_welcome: collections.Counter[str] = collections.Counter()
        self.failures: collections.Counter[str] = collections.Counter()

    # ------------------------------------------------------------ the loop

    def run(self) -> None:
        running = True
        while running:
            now = time.monotonic()
            timeout = 0.2
            if self.ping_queue:
                timeout = max(0.0, min(timeout, self.ping_queue[0].next_ping - now))
            for key, mask in self.selector.select(timeout):
                if key.data is None:
                    running = self._command()
                    if not running:
                        break
                else:
                    self._event(key.data, mask)
            now = time.monotonic()
            self._start_connects(now)
            self._ping(now)
            self._check_batch(now)
        self._close_all()

    def _command(self) -> bool:
        try:
            command = self.pipe.recv()
        except (EOFError, OSError):  # the parent is gone
            return False
        kind = command[0]
        if kind == "open":
            _, count, timeout = command
            now = time.monotonic()
            self.to_open += count
            self.open_deadline = now + timeout
            self.batch = {
                "asked": count,
                "welcomed": 0,
                "failed": 0,
                "started": now,
                "latencies": [],
            }
            self._start_connects(now)
            self._check_batch(now)
        elif kind == "status":
            self.pipe.send(self._status())
        elif kind == "close":
            self._close_all()
            self.pipe.send(self._status())
            return False
        return True

    # ------------------------------------------------------------ opening

    def _start_connects(self, now: float) -> None:
        while self.to_open > 0 and self.in_flight < self.concurrency:
            self.to_open -= 1
            try:
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            except OSError as exc:  # EMFILE: this process's open files
                self._failed(None, f"socket(): {errno.errorcode.get(exc.errno or 0, exc)}")
                continue
            sock.setblocking(False)
            conn = _Conn(sock, now)
            code = sock.connect_ex(self.address)
            if code not in (0, errno.EINPROGRESS):
                # EADDRNOTAVAIL: out of ephemeral ports
                sock.close()
                self._failed(None, f"connect: {errno.errorcode.get(code, code)}")
                continue
            self.in_flight += 1
            self.conns.add(conn)
            self.selector.register(sock, selectors.EVENT_WRITE, conn)

    def _connected(self, conn: _Conn) -> None:
        code = conn.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if code:
            self._drop(conn, f"connect: {errno.errorcode.get(code, code)}")
            return
        conn.state = HELLO_SENT
        self.selector.modify(conn.sock, selectors.EVENT_READ, conn)
        self._send(conn, self.hello)

    def _failed(self, conn: _Conn | None, why: str) -> None:
        self.failures[why] += 1
        if self.batch is not None:
            self.batch["failed"] += 1

    def _check_batch(self, now: float) -> None:
        batch = self.batch
        if batch is None:
            return
        if self.to_open and now < self.open_deadline:
            return
        if self.in_flight and now < self.open_deadline:
            return
        if self.to_open or self.in_flight:  # the deadline passed
            if self.to_open:
                self.failures["not started in time"] += self.to_open
                batch["failed"] += self.to_open
                self.to_open = 0
            for conn in [c for c in self.conns if c.state in (CONNECTING, HELLO_SENT)]:
                self._drop(conn, "no welcome in time")
        batch["seconds"] = now - batch.pop("started")
        self.batch = None
        self.pipe.send({**batch, **self._status()})

    # ------------------------------------------------------------ events

    def _event(self, conn: _Conn, mask: int) -> None:
        if conn.state == CLOSED:
            return
        if conn.state == CONNECTING:
            if mask & selectors.EVENT_WRITE:
                self._connected(conn)
            return
        if mask & selectors.EVENT_WRITE and conn.out:
            self._send(conn, b"")
            if conn.state == CLOSED:
                return
        if mask & selectors.EVENT_READ:
            self._read(conn)

    def _read(self, conn: _Conn) -> None:
        try:
            data = conn.sock.recv(65536)
        except BlockingIOError:
            return
        except OSError as exc:
            self._drop(conn, f"recv: {errno.errorcode.get(exc.errno or 0, exc)}")
            return
        if not data:
            self._drop(conn, f"closed by the server ({conn.last_error or 'no error said'})")
            return
        buf = conn.buf
        if buf is None:
            buf = conn.buf = bytearray(data)
        else:
            buf += data
        while len(buf) >= 4:
            size = int.from_bytes(buf[:4], "big")
            if len(buf) < 4 + size:
                break
            try:
                message = msgpack.unpackb(bytes(buf[4 : 4 + size]), raw=False)
                kind = str(message.get("type"))
            except Exception:
                kind = "(undecodable)"
                message = {}
            del buf[: 4 + size]
            self.received[kind] += 1
            if kind == "welcome" and conn.state == HELLO_SENT:
                now = time.monotonic()
                conn.state = IDLE
                self.in_flight -= 1
                self.idle += 1
                conn.next_ping = now + self.ping_interval
                self.ping_queue.append(conn)
                if self.batch is not None:
                    self.batch["welcomed"] += 1
                    self.batch["latencies"].append(now - conn.started)
            elif kind == "pong":
                self.pongs += 1
            elif kind == "error":
                conn.last_error = f"{message.get('code')}: {message.get('message')}"
        if not buf:
            conn.buf = None

    def _send(self, conn: _Conn, data: bytes) -> None:
        out = conn.out + data
        try:
            sent = conn.sock.send(out)
        except BlockingIOError:
            sent = 0
        except OSError as exc:
            self._drop(conn, f"send: {errno.errorcode.get(exc.errno or 0, exc)}")
            return
        conn.out = out[sent:]
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if conn.out else 0)
        self.selector.modify(conn.sock, events, conn)

    def _drop(self, conn: _Conn, why: str) -> None:
        if conn.state == CLOSED:
            return
        if conn.state == IDLE:
            self.idle -= 1
            self.closed_after_welcome[why] += 1
        else:
            self.in_flight -= 1
            self._failed(conn, why)
        conn.state = CLOSED
        self.conns.discard(conn)
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(conn.sock)
        conn.sock.close()

    # ------------------------------------------------------------ pings

    def _ping(self, now: float) -> None:
        queue = self.ping_queue
        while queue and queue[0].next_ping <= now:
            conn = queue.popleft()
            if conn.state != IDLE:
                continue
            conn.pings = (conn.pings + 1) & 0xFFFFFFFF
            self._send(conn, frame({"type": "ping", "id": conn.pings}))
            self.pings_sent += 1
            conn.next_ping = now + self.ping_interval
            queue.append(conn)

    # ------------------------------------------------------------ the end

    def _status(self) -> dict[str, Any]:
        return {
            "held": self.idle,
            "in_flight": self.in_flight,
            "pings": self.pings_sent,
            "pongs": self.pongs,
            "received": dict(self.received),
            "closed_after_welcome": dict(self.closed_after_welcome),
            "failures": dict(self.failures),
            "rss_kb": rss_kb(),
            "cpu": sum(os.times()[:2]),
        }

    def _close_all(self) -> None:
        for conn in list(self.conns):
            with contextlib.suppress(KeyError, ValueError):
                self.selector.unregister(conn.sock)
            conn.sock.close()
            conn.state = CLOSED
        self.conns.clear()
        self.idle = self.in_flight = 0


def idle_driver(pipe: multiprocessing.connection.Connection, spec: dict[str, Any]) -> None:
    """A driver process's entry point (see the module docstring)."""
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops it
    set_death_signal()
    limit = raise_fd_limit()
    try:
        pipe.send({"ready": True, "fd_limit": limit, "pid": os.getpid()})
        IdleDriver(pipe, spec).run()
    except Exception:
        import traceback

        with contextlib.suppress(Exception):
            pipe.send({"error": traceback.format_exc()})
    finally:
        pipe.close()

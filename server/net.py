"""The server on the network: trio tasks that move bytes to and from the core.

How this works
--------------
One task, the **core task**, owns the `Gateway` (and through it the lobby,
the rooms and the games): nothing else touches it. Each connection has two
tasks: a **reader**, which sends what the socket gives to the core task over
one bounded channel (the inbox), and a **writer**, which sends to the socket
what the core task puts in the connection's own bounded channel (its
outbox). The core task handles one input at a time, then hands each
connection it touched its bytes:

    reader ──(conn, bytes)──▶ inbox ──▶ core task ──bytes──▶ outbox ──▶ writer

A client that does not read is never waited for: when its outbox is full,
or its socket takes longer than `send_timeout` to take a write, its
connection is closed (it can reconnect and resume). The core task wakes up
for the core's next deadline (`Gateway.next_deadline`), with trio's clock as
the core's time, so tests run it on `autojump_clock`.

Server bots (`StartBot`) are clients like any other, run inside the server
over an in-memory stream pair, so they speak the protocol and keep their own
secrets. Records of finished games go to `on_record`; faults of the core are
logged.
"""

from __future__ import annotations

import itertools
import logging
import math
import random
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from functools import partial

import trio
import trio.testing

from oriflamme.client.bots import Behaviour, Bot
from oriflamme.client.seat_secrets import SeatSecrets
from oriflamme.client.session import Backoff, Session
from oriflamme.engine import Rules
from oriflamme.server.core import (
    ErrorSent,
    Fault,
    FetchRecord,
    GameFinished,
    Gateway,
    HandedSeat,
    StartBot,
    StopBot,
)

log = logging.getLogger("oriflamme.server")

INBOX = 4096  # inputs waiting for the core task
OUTBOX = 256  # chunks of bytes waiting for one connection's socket
READ_SIZE = 65536


@dataclass(frozen=True, slots=True)
class FetchedRecord:
    request_id: int | None
    record_id: str
    data: bytes | None


@dataclass(slots=True)
class _Connection:
    outbox: trio.MemorySendChannel[bytes | None]
    cancel: trio.CancelScope
    peer: str


class NetServer:
    """The core on the network; see the module docstring."""

    def __init__(
        self,
        gateway: Gateway,
        *,
        send_timeout: float = 10.0,
        on_record: Callable[[GameFinished], None] | None = None,
        load_record: Callable[[str], Awaitable[bytes | None]] | None = None,
    ) -> None:
        self.gateway = gateway
        self.send_timeout = send_timeout
        self.on_record = on_record
        self.load_record = load_record
        self._inbox_send, self._inbox = trio.open_memory_channel[tuple[str, Hashable, object]](
            INBOX
        )
        self._connections: dict[Hashable, _Connection] = {}
        self._bots: dict[int, trio.CancelScope] = {}
        self._ids = itertools.count(1)
        self._nursery: trio.Nursery | None = None
        self._shutting_down = False

    # ------------------------------------------------------------ running

    async def run(
        self,
        listeners: list[trio.SocketListener] | None = None,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve `listeners` (and in-memory streams given to `serve_stream`)
        until cancelled."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            nursery.start_soon(self._core)
            for listener in listeners or []:
                nursery.start_soon(self._accept, listener)
            task_status.started()

    async def _accept(self, listener: trio.SocketListener) -> None:
        async with listener:
            while not self._shutting_down:
                try:
                    stream = await listener.accept()
                except OSError as exc:  # out of file descriptors, say: wait, do not spin
                    log.warning("accept failed: %s", exc)
                    await trio.sleep(0.1)
                    continue
                assert self._nursery is not None
                self._nursery.start_soon(self.serve_stream, stream)

    async def serve_stream(self, stream: trio.abc.Stream, peer: str | None = None) -> None:
        """Serve one connection until it ends."""
        conn = f"c{next(self._ids)}"
        if peer is None:
            peer = _peer(stream)
        outbox_send, outbox = trio.open_memory_channel[bytes | None](OUTBOX)
        try:
            async with trio.open_nursery() as nursery:
                self._connections[conn] = _Connection(outbox_send, nursery.cancel_scope, peer)
                log.info("connection %s from %s", conn, peer)
                await self._inbox_send.send(("open", conn, b""))
                nursery.start_soon(self._writer, conn, stream, outbox, nursery.cancel_scope)
                await self._reader(conn, stream)
        finally:
            self._connections.pop(conn, None)
            with trio.CancelScope(shield=True):
                await self._inbox_send.send(("closed", conn, b""))
                with trio.move_on_after(1):
                    await stream.aclose()
            log.info("connection %s closed", conn)

    async def _reader(self, conn: Hashable, stream: trio.abc.Stream) -> None:
        try:
            while True:
                data = await stream.receive_some(READ_SIZE)
                await self._inbox_send.send(("data", conn, bytes(data)))
                if not data:
                    await trio.sleep_forever()  # the writer ends the connection
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass

    async def _writer(
        self,
        conn: Hashable,
        stream: trio.abc.Stream,
        outbox: trio.MemoryReceiveChannel[bytes | None],
        cancel: trio.CancelScope,
    ) -> None:
        try:
            async for data in outbox:
                if data is None:
                    break
                with trio.fail_after(self.send_timeout):
                    await stream.send_all(data)
        except trio.TooSlowError:
            log.info("connection %s dropped: it does not read", conn)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        cancel.cancel()

    # ------------------------------------------------------------ the core task

    async def _core(self) -> None:
        gateway = self.gateway
        while True:
            deadline = gateway.next_deadline()
            with trio.move_on_at(deadline if deadline is not None else math.inf) as timer:
                kind, conn, data = await self._inbox.receive()
            now = trio.current_time()
            if timer.cancelled_caught:
                gateway.tick(now)
            elif kind == "data":
                assert isinstance(data, bytes)
                gateway.receive_data(conn, data, now)
            elif kind == "record":
                assert isinstance(data, FetchedRecord)
                gateway.record_loaded(conn, data.request_id, data.record_id, data.data)
            elif kind == "open":
                gateway.open(conn, now)
                if self._shutting_down:
                    gateway.shut_down()
            else:
                gateway.closed(conn, now)
            self._flush()
            self._effects()

    def _flush(self) -> None:
        gateway = self.gateway
        for conn in gateway.take_dirty():
            connection = self._connections.get(conn)
            data = gateway.data_to_send(conn)
            if connection is None:
                continue
            try:
                if data:
                    connection.outbox.send_nowait(data)
                if gateway.must_close(conn):
                    connection.outbox.send_nowait(None)
            except trio.WouldBlock:
                log.info("connection %s dropped: its outbox is full", conn)
                connection.cancel.cancel()

    def _effects(self) -> None:
        for effect in self.gateway.take_effects():
            if isinstance(effect, StartBot):
                self._start_bot(effect)
            elif isinstance(effect, StopBot):
                scope = self._bots.pop(effect.player, None)
                if scope is not None:
                    scope.cancel()
            elif isinstance(effect, GameFinished):
                log.info("game %s finished in room %d", effect.record_id, effect.room)
                if self.on_record is not None:
                    self.on_record(effect)
            elif isinstance(effect, FetchRecord):
                assert self._nursery is not None
                self._nursery.start_soon(self._fetch, effect)
            elif isinstance(effect, ErrorSent):
                error = effect.error
                log.debug("connection %s told %s: %s", effect.conn, error.code, error.message)
            elif isinstance(effect, Fault):
                log.error("the core failed (%s): %s", effect.conn, effect.what)

    async def _fetch(self, effect: FetchRecord) -> None:
        """Read a record off the core task, and give it to the core task."""
        data = None
        if self.load_record is not None:
            try:
                data = await self.load_record(effect.record_id)
            except OSError as exc:
                log.error("record %s could not be read: %s", effect.record_id, exc)
        fetched = FetchedRecord(effect.request_id, effect.record_id, data)
        await self._inbox_send.send(("record", effect.conn, fetched))

    # ------------------------------------------------------------ bots

    def _start_bot(self, effect: StartBot) -> None:
        assert self._nursery is not None
        scope = trio.CancelScope()
        self._bots[effect.player] = scope
        self._nursery.start_soon(self._bot, effect, scope)
        log.info(
            "bot %d (%s) for room %d seat %d",
            effect.player,
            effect.strategy,
            effect.room,
            effect.seat,
        )

    async def _bot(self, effect: StartBot, scope: trio.CancelScope) -> None:
        """A server bot: a client session over an in-memory stream."""
        server = self

        async def connect() -> trio.abc.Stream:
            near, far = trio.testing.memory_stream_pair()
            assert server._nursery is not None
            server._nursery.start_soon(server.serve_stream, far, f"bot {effect.player}")
            return near

        handed = effect.handed
        session = Session(
            connect,
            f"bot {effect.player}",
            token=effect.token,
            behaviour=Behaviour(Bot(effect.strategy, rng=random.Random())),
            make_secrets=None if handed is None else partial(_handed, handed=handed),
            backoff=Backoff(first=0.5, attempts=None),
        )
        with scope:
            try:
                await session.run()
            except Exception as exc:  # a bot's failure must not take the server down
                log.error("bot %d stopped: %s", effect.player, exc)

    # ------------------------------------------------------------ shutting down

    async def shut_down(self, grace: float = 5.0) -> None:
        """Stop accepting, tell every client, let the writers finish (within
        `grace` seconds), then stop."""
        self._shutting_down = True
        self.gateway.shut_down()
        self._flush()
        with trio.move_on_after(grace):
            while self._connections:
                await trio.sleep(0.05)
        if self._nursery is not None:
            self._nursery.cancel_scope.cancel()


def _handed(rules: Rules, game_id: bytes, seat: int, *, handed: HandedSeat) -> SeatSecrets:
    """The secrets of a seat handed over to a bot, rebuilt from what it handed."""
    return SeatSecrets.resume(
        rules,
        game_id,
        seat,
        seed=handed.seed,
        server_seed=handed.server_seed,
        openings=handed.openings,
        drawn=handed.drawn,
    )


def _peer(stream: trio.abc.Stream) -> str:
    socket = getattr(stream, "socket", None)
    try:
        host, port = socket.getpeername()[:2]  # type: ignore[union-attr]
        return f"{host}:{port}"
    except (AttributeError, OSError, ValueError, TypeError):
        return "?"

"""The server on the network: trio tasks that move bytes to and from the core.

How this works
--------------
One task, the **core task**, owns the `Gateway` (and through it the lobby,
the rooms and the games): nothing else touches it. Each connection has a
**reader** task, which sends what the socket gives to the core task over
one bounded channel (the inbox). The core task handles the inputs waiting
(a batch), then hands what they did to the **committer**, which writes each
connection's bytes straight to its TCP socket (without blocking: what the
socket takes at once), and puts what is left in the connection's outbox (a
queue) and starts its **writer** task, which sends them to the socket and
ends when the outbox is empty:

    reader ──(conn, bytes)──▶ inbox ──▶ core task ──batch──▶ committer ──bytes──▶ socket
                                                                └──the rest──▶ outbox ──▶ writer

A writer lives only while bytes wait, so an idle connection costs one task
(its reader) and no channel: thousands of idle connections stay cheap. A
socket usually takes a push whole, so most writes need no task at all: a
writer started (and scheduled, and sent through `SocketStream.send_all`)
for each push cost more than the write itself. A stream that is not a plain
TCP socket (TLS, a server bot's memory stream) always goes by its writer.

With a `Store`, the lobby keeps a journal (`JournaledLobby`): a batch
carries the journal entries its inputs made, and the committer appends the
entries of every batch waiting to the store in one transaction (in a worker
thread), with the records of the games they ended (`server.records`),
before it sends anything they caused. Every accepted decision is
stored before anything about it is sent. The core task gives that commit a
head start (`HEAD_START`) before it takes the next inputs, and goes on with
them while a slow disk finishes it. Now and then the core task takes the
lobby's facts (`server.core.facts`: plain data, each game as its log,
taken between two inputs, in this process); a task of its own stores them,
while the committer goes on storing later batches (the facts replace the
journal entries they cover, and only those).

A client that does not read is never waited for: when more than
`MAX_QUEUED` bytes (1 MiB) wait in its outbox, or its socket takes longer
than `send_timeout` to take a write, its connection is closed (it can
reconnect and resume), after a fatal `timeout` error if the socket still
takes one. While more than `READ_PAUSE` bytes (64 KiB) wait for it, its own
socket is not read: a client that sends requests without reading the
answers is slowed down by TCP itself. Nor is it read while the core takes
none of its messages (`Gateway.wants_data`: past its message rate, or while
a record it asked for is read), and a record is read only once the bytes
waiting for the client are under `READ_PAUSE`: a client asking for many
large answers at once gets them at the pace it reads them. The core task wakes up
for the core's next deadline (`Gateway.next_deadline`), with trio's clock as
the core's time, so tests run it on `autojump_clock`.

Server bots (`StartBot`) are clients like any other, played by the
`BotHost` the server is given (`bot_host`: the launcher's house bots, or
None) over an in-memory stream pair, so they speak the protocol and keep
their own secrets; the shell runs each in a task, and cancels it for
`StopBot`. Records of finished games go to `on_record`; faults of the core
are logged.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import math
import os
import secrets
import time
from collections import deque
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from functools import partial

import trio
import trio.testing

from oriflamme.protocol import messages as m
from oriflamme.protocol.codec import encode_frame
from oriflamme.protocol.errors import TIMEOUT, RemoteProtocolError
from oriflamme.server.core import (
    Effect,
    ErrorSent,
    Fault,
    FetchRecord,
    GameFinished,
    GameOver,
    Gateway,
    LogLine,
    StartBot,
    StopBot,
)
from oriflamme.server.core.admission import REFUSAL, Admission
from oriflamme.server.core.facts import FactsRows, TakenRows, take_some
from oriflamme.server.core.journal import Entry, JournaledLobby

from .bot_host import BotHost
from .persistence import log_build_failures
from .records import record_problems, stored_record
from .store import Store, StoreError
from .tls import PLAIN_REFUSAL, begins_tls
from .tuning import collect_frozen, collector_paused, freeze_young

log = logging.getLogger("oriflamme.server")

INBOX = 4096  # inputs waiting for the core task
BATCH = 256  # inputs handled together, and stored in one transaction
# The journal's weight at which the facts are taken again (by default): its
# entries since the last taking, plus `ROOM_WEIGHT` for each room they
# touched (a request, a resume, a decision there). A start after a kill
# replays those entries and first rebuilds each game they touch: the
# weight is what that costs, in entries (0.2 to 0.4 ms each; bench/start.py),
# so a start after a kill replays and rebuilds for about 2 s at the worst,
# as with a taking every 2,000 entries or 500 rooms touched (before). A
# taking makes only the rows that changed, but a game's row is its whole
# log: at 200 busy tables, a taking every 2,000 entries wrote each table's
# row every ten of its decisions, and cost some 15 % of the decisions a
# second (bench/RESULTS.md); it now comes every 3,600 entries there.
SNAPSHOT_EVERY = 6_000
ROOM_WEIGHT = 12  # rebuilding a game (about 3 ms at round 6) costs about this many entries
# A taking makes the rows of the rooms and sessions changed since the last
# (in steps, between batches: `TAKE_STEP`), and its save writes them in a
# transaction the commits wait for (some 0.5 MB at 60 busy rooms; on a
# disk, its fsync). It comes sooner than the weight says once the journal
# touched `TAKE_ROOMS` rooms, so that each save stays short. On the 2-core
# machine's disk, at 200 tables and a decision a second: p99 70 to 100 ms
# with takings by the weight alone (every 200 rooms), 7.4 to 8.4 at 120
# rooms, 6.0 to 7.1 at 60; at 2,000 tables and 5 s: 27 to 31 ms at 250
# rooms, 17 to 21 at 120, 13 to 16 at 60. Each room's rows are then
# written about once a decision: 8 % more server CPU a decision at 200
# tables that answer at once (bench/RESULTS.md).
TAKE_ROOMS = 60
# A taking is made a step after each batch, and while no input waits
# (`facts.take_some`): about this many units of work a step (some 3 us
# each: a step of about 2 ms, where 250 rooms at once stopped the core for
# 10 to 20 ms), so that the decisions that come meanwhile wait for a step,
# not the whole taking. The bound grows by as much every eighth step, so
# that a taking ends however busy the rooms are.
TAKE_STEP = 600
BUILD_AT_ONCE = 4  # games rebuilt at a time while no input waits (a few ms each)
# Blocks of the keyed random stream a start skips: between this and twice
# this, at random. No state lost to a restore drew 2**40 blocks (32 TiB),
# and the stream's 64-bit counter allows some 8 million starts.
RESTART_SKIP = 1 << 40
MAINTAIN_EVERY = 3600.0  # seconds between two tidyings of the store (`NetServer._maintain`)
COLLECT_EVERY = 3600.0  # seconds between two collections of what was frozen (`tuning`)
COMMIT_QUEUE = 16  # batches handled by the core task, waiting for their commit
HEAD_START = 0.02  # seconds the core task waits for the batches before it to be sent
MAX_QUEUED = 1 << 20  # bytes waiting for one connection's socket: more, and it is dropped
READ_PAUSE = 1 << 16  # bytes waiting for one connection's socket: more, and it is not read
READ_SIZE = 65536


@dataclass(frozen=True, slots=True)
class FetchedRecord:
    request_id: int | None
    record_id: str
    data: bytes | None


@dataclass(slots=True)
class _Batch:
    """What one batch of inputs did, on its way to the committer."""

    entries: list[Entry]
    # (connection, bytes, close after, read it): see `Gateway.wants_data`
    outputs: list[tuple[Hashable, bytes, bool, bool]]
    effects: list[Effect]
    snapshot: FactsRows | None = None  # the lobby's facts, after these inputs
    done: list[trio.Event] = field(default_factory=list)  # set once it is all stored


@dataclass(slots=True)
class _Connection:
    """A connection as the shell sees it. Cancelling `cancel` ends it."""

    stream: trio.abc.Stream
    cancel: trio.CancelScope
    peer: str
    # Bytes for the socket, in order (None: close after them); made at first use.
    outbox: deque[bytes | None] | None = None
    queued: int = 0  # bytes in the outbox, not yet taken by the socket
    writing: bool = False  # a writer task is emptying the outbox
    drained: trio.Event | None = None  # set when it may be read again (see `_until_readable`)
    held: bool = False  # the core takes none of its messages now: do not read it
    dropping: bool = False  # it did not read: nothing more but the error and the close
    writing_since: float | None = None  # when the write under way began
    fd: int | None = None  # the TCP socket's, to write to straight away (else None)
    why: str | None = None  # why it ended, for the log (None: not known yet)


class NetServer:
    """The core on the network; see the module docstring."""

    def __init__(
        self,
        gateway: Gateway,
        *,
        bots: BotHost | None,
        send_timeout: float = 10.0,
        on_record: Callable[[GameFinished], None] | None = None,
        load_record: Callable[[str], Awaitable[bytes | None]] | None = None,
        store: Store | None = None,
        generation: int = 0,
        time_offset: float = 0.0,
        restarted: bool = False,
        entries_since_snapshot: int = 0,
        snapshot_every: int = SNAPSHOT_EVERY,
        room_weight: int = ROOM_WEIGHT,
        take_rooms: int = TAKE_ROOMS,
        keep_records: float | None = None,
        maintain_every: float = MAINTAIN_EVERY,
    ) -> None:
        self.gateway = gateway
        self.send_timeout = send_timeout
        self.on_record = on_record
        self.load_record = load_record
        self.store = store
        self.bots = bots  # who plays the server's bots (None: nobody, see `bot_host`)
        self.generation = generation
        self.time_offset = time_offset
        self.restarted = restarted
        # Seconds a finished game's record is kept (None: for ever), and
        # how often the store is tidied (old records deleted, WAL truncated).
        self.keep_records = keep_records
        self.maintain_every = maintain_every
        self._since_snapshot = entries_since_snapshot
        self.snapshot_every = snapshot_every
        self.room_weight = room_weight  # (what a room the journal touched counts, in entries)
        self.take_rooms = take_rooms
        self._snapshots_wanted: list[trio.Event] = []
        self._batches_send, self._batches = trio.open_memory_channel[_Batch](COMMIT_QUEUE)
        self._unsent = 0  # batches handed to the committer, their bytes not yet sent
        self._sent = trio.Event()  # set (and made anew) when the committer sends a group
        self._store_lock = trio.Lock()  # one store call at a time (one SQLite connection)
        self._stored_up_to = 0  # the store's position of the last entry appended
        self._last_snapshot: trio.Event | None = None  # set once the last one is saved (or not)
        self._snapshots_saving = 0  # taken, not yet stored
        # The rows the facts taken last were made of: a taking makes again
        # only those that changed (the store keeps the others).
        self._taken = TakenRows()
        self._taking = 0  # steps of the taking under way (0: none)
        self._inbox_send, self._inbox = trio.open_memory_channel[tuple[str, Hashable, object]](
            INBOX
        )
        self._connections: dict[Hashable, _Connection] = {}
        config = gateway.lobby.config
        self.admission = Admission(
            rate=config.connection_rate, burst=config.connections_per_address
        )
        self._bots: dict[int, trio.CancelScope] = {}
        self._ids = itertools.count(1)
        self._nursery: trio.Nursery | None = None
        self._shutting_down = False

    # ------------------------------------------------------------ running

    async def run(
        self,
        listeners: list[trio.abc.Listener[trio.abc.Stream]] | None = None,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve `listeners` (and in-memory streams given to `serve_stream`)
        until cancelled."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            nursery.start_soon(self._core)
            nursery.start_soon(self._committer)
            nursery.start_soon(self._watchdog)
            nursery.start_soon(self._collect)
            if self.store is not None:
                nursery.start_soon(self._maintain)
            for listener in listeners or []:
                nursery.start_soon(self._accept, listener)
            task_status.started()

    async def _accept(self, listener: trio.abc.Listener[trio.abc.Stream]) -> None:
        async with listener:
            while not self._shutting_down:
                try:
                    stream = await listener.accept()
                except OSError as exc:  # out of file descriptors, say: wait, do not spin
                    log.warning("accept failed: %s", exc)
                    await trio.sleep(0.1)
                    continue
                address = _peer_host(stream)
                if address is not None and not self.admission.admit(address, trio.current_time()):
                    _refuse_at_once(stream)
                    continue
                assert self._nursery is not None
                self._nursery.start_soon(self.serve_stream, stream)

    async def serve_stream(
        self, stream: trio.abc.Stream, peer: str | None = None, *, ours: bool = False
    ) -> None:
        """Serve one connection until it ends. `ours`: a server bot's, which
        no abuse limit counts."""
        conn = f"{self.generation}.{next(self._ids)}"
        address = None if ours else _peer_host(stream)
        if peer is None:
            peer = _peer(stream)
        connection = _Connection(stream, trio.CancelScope(), peer)
        if (
            type(stream) is trio.SocketStream and os.name == "posix"
        ):  # (os.write takes sockets there)
            connection.fd = stream.socket.fileno()
        self._connections[conn] = connection
        try:
            with connection.cancel:
                log.info("connection %s from %s", conn, peer)
                await self._inbox_send.send(("open", conn, Opened(address, limited=not ours)))
                await self._reader(conn, stream, connection)
        finally:
            self._connections.pop(conn, None)
            connection.fd = None  # (closed below, its number free for another socket)
            # The core task must hear of it, unless the server is going down
            # (this task is cancelled from outside its connection): then
            # nothing drains the inbox, and thousands of connections closing
            # at once would wait on it for ever.
            going_down = trio.current_effective_deadline() == -math.inf
            with trio.CancelScope(shield=True):
                if not going_down:
                    await self._inbox_send.send(("closed", conn, b""))
                with trio.move_on_after(1):
                    await stream.aclose()
            why = connection.why or ("the server stopped" if going_down else "by the server")
            log.info("connection %s closed (%s)", conn, why)

    async def _reader(
        self, conn: Hashable, stream: trio.abc.Stream, connection: _Connection
    ) -> None:
        try:
            if isinstance(stream, trio.SSLStream) and not await _begins_tls(stream):
                connection.why = "by the server: plain TCP on the TLS port"
                await _refuse_plain(stream)
                return
            while True:
                # A client that does not read its answers is not read either:
                # TCP makes it wait, and it costs the server READ_PAUSE at most.
                # Nor is one whose messages the core does not take now.
                await _until_readable(connection, held=True)
                data = await stream.receive_some(READ_SIZE)
                await self._inbox_send.send(("data", conn, bytes(data)))
                if not data:
                    connection.why = connection.why or "by the client"
                    await trio.sleep_forever()  # the writer ends the connection
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            connection.why = connection.why or f"lost ({exc or type(exc).__name__})"

    def _queue(self, connection: _Connection, data: bytes | None) -> None:
        """Write `data` to the connection's socket if no writer is running;
        put what it does not take in the connection's outbox, and start its
        writer if none is running."""
        if connection.cancel.cancel_called:  # dropped: nothing more goes out
            return
        if data is not None and not connection.writing and connection.fd is not None:
            try:
                # (a socket of trio's never blocks: it takes what it can)
                sent = os.write(connection.fd, data)
            except BlockingIOError:
                sent = 0
            except OSError:  # the peer is gone: the reader will see it too
                connection.cancel.cancel()
                return
            connection.queued -= sent
            _wake(connection)
            if sent == len(data):
                return
            data = data[sent:]
        if connection.outbox is None:
            connection.outbox = deque()
        connection.outbox.append(data)
        if not connection.writing:
            connection.writing = True
            assert self._nursery is not None
            self._nursery.start_soon(self._writer, connection)

    async def _writer(self, connection: _Connection) -> None:
        """Send the outbox to the socket; end when it is empty (the next bytes
        start a new writer), or end the connection at a None or a failure."""
        outbox = connection.outbox
        assert outbox is not None
        try:
            while outbox:
                data = outbox.popleft()
                if data is None:
                    break
                # (`_watchdog` drops a write that takes too long: a cancel
                # scope per write would cost more than the write itself)
                connection.writing_since = trio.current_time()
                await connection.stream.send_all(data)
                connection.writing_since = None
                connection.queued -= len(data)
                _wake(connection)
            else:
                connection.writing = False
                connection.outbox = None  # an idle connection holds no queue
                return
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        connection.cancel.cancel()

    async def _watchdog(self) -> None:
        """Drop the connections whose socket has not taken a write for
        `send_timeout` seconds: their client does not read."""
        every = min(1.0, self.send_timeout / 4)
        while True:
            await trio.sleep(every)
            late = trio.current_time() - self.send_timeout
            for conn, connection in list(self._connections.items()):
                since = connection.writing_since
                if since is not None and since < late:
                    _drop_unread(conn, connection, "it does not read")
            for address, count in self.admission.take_refused().items():
                log.info(
                    "%d connections from %s refused: too many new ones a second", count, address
                )

    # ------------------------------------------------------------ the core task

    def now(self) -> float:
        """The core's time: trio's clock, carried on from the journal's last time."""
        return trio.current_time() + self.time_offset

    async def _core(self) -> None:
        gateway = self.gateway
        if self.restarted:  # every connection it knew is gone; its bots start anew
            # (a random stretch of the keyed stream skipped: see `Lobby.restarted`)
            skip = RESTART_SKIP + secrets.randbelow(RESTART_SKIP)
            await self._hand_over(gateway.lobby.restarted(self.now(), skip))
        while True:
            if self._unsent:
                # The committer's head start. The end of its commit is seen
                # only between two batches of this task (trio runs one task at
                # a time), and its worker thread needs the interpreter lock,
                # which a batch holds: the bytes waited for a whole batch more.
                # A slow disk is waited for no longer than this.
                with trio.move_on_after(HEAD_START):
                    while self._unsent:
                        await self._sent.wait()
            lobby = gateway.lobby
            if lobby.unbuilt and not self._inbox.statistics().current_buffer_used:
                # A start rebuilds the games lazily (`room.UnbuiltGame`): the
                # rest, a few at a time, while no input waits.
                lobby.build_some(BUILD_AT_ONCE)
                log_build_failures(lobby.take_build_failures())
                await trio.lowlevel.checkpoint()
                continue
            if self._taking and not self._inbox.statistics().current_buffer_used:
                # A taking under way goes on while no input waits (else a
                # server gone quiet would leave it, and its journal, as is).
                await self._hand_over([])
                await trio.lowlevel.checkpoint()
                continue
            deadline = gateway.next_deadline()
            at = math.inf if deadline is None else deadline - self.time_offset
            if at <= trio.current_time():
                # Due already (a connection whose turn came again, say): the
                # tick, and what waits in the inbox, so that inputs due at
                # every turn cannot keep the others waiting.
                await trio.lowlevel.checkpoint()
                now = self.now()
                gateway.tick(now)
                self._apply_waiting(BATCH, now)
            else:
                with trio.move_on_at(at) as timer:
                    item = await self._inbox.receive()
                now = self.now()
                if timer.cancelled_caught:
                    gateway.tick(now)
                else:
                    self._apply(item, now)
                    self._apply_waiting(BATCH - 1, now)  # one batch for all
            await self._hand_over(gateway.take_effects())

    def _apply_waiting(self, most: int, now: float) -> None:
        """Apply up to `most` inputs that wait in the inbox already."""
        for _ in range(most):
            try:
                self._apply(self._inbox.receive_nowait(), now)
            except trio.WouldBlock:
                break

    def _apply(self, item: tuple[str, Hashable, object], now: float) -> None:
        gateway = self.gateway
        kind, conn, data = item
        if kind == "data":
            assert isinstance(data, bytes)
            gateway.receive_data(conn, data, now)
        elif kind == "record":
            assert isinstance(data, FetchedRecord)
            gateway.record_loaded(conn, data.request_id, data.record_id, data.data, now)
        elif kind == "open":
            assert isinstance(data, Opened)
            gateway.open(conn, now, address=data.address, limited=data.limited)
            if self._shutting_down:
                gateway.shut_down()
        elif kind == "shut_down":
            self._shutting_down = True
            gateway.shut_down()
        elif kind == "snapshot":
            assert isinstance(data, trio.Event)
            self._snapshots_wanted.append(data)
        else:
            gateway.closed(conn, now)

    async def _hand_over(self, effects: list[Effect]) -> None:
        """Hand what the inputs just handled did to the committer: the
        journal's new entries, the bytes for each connection, the effects; and
        now and then a snapshot of the whole lobby. The core task goes on
        with the next inputs while they are stored (if the committer falls
        behind by `COMMIT_QUEUE` batches, it waits)."""
        gateway = self.gateway
        lobby = gateway.lobby
        if lobby.build_failures:  # (games an input rebuilt; an empty list at every batch else)
            log_build_failures(lobby.take_build_failures())
        journal = lobby if self.store is not None and isinstance(lobby, JournaledLobby) else None
        entries = journal.take() if journal is not None else []
        outputs = [
            (conn, gateway.data_to_send(conn), gateway.must_close(conn), gateway.wants_data(conn))
            for conn in gateway.take_dirty()
        ]
        batch = _Batch(entries, outputs, effects)
        self._since_snapshot += len(entries)
        rooms = 0 if journal is None else len(journal.rooms_noted)
        # (one periodic snapshot at a time: a slow one is not joined by more)
        due = (
            self._since_snapshot + self.room_weight * rooms >= self.snapshot_every
            or rooms >= self.take_rooms
        ) and not self._snapshots_saving
        if journal is not None and (self._snapshots_wanted or due or self._taking):
            # A taking is spread over batches, `TAKE_STEP` units of work
            # after each (more as it goes on, so that it ends however busy
            # the rooms are); one wanted now is ended at once. The facts
            # cover every entry taken so far (the committer tells the store
            # up to which position) and none after.
            self._taking += 1
            most = None if self._snapshots_wanted else TAKE_STEP * (1 + self._taking // 8)
            try:
                with collector_paused():
                    batch.snapshot = take_some(journal, self._taken, most)
            except Exception:  # (a bug of ours; the journal keeps every input)
                log.exception("the lobby's facts were not taken (the journal keeps every input)")
                # (what changed since was taken from the lobby, and not all
                # of it made rows: the next taking makes every row again)
                self._taken = TakenRows()
                self._taking = 0
            if batch.snapshot is not None:
                self._taking = 0
                self._since_snapshot = 0
                journal.rooms_noted.clear()
                self._snapshots_saving += 1
        batch.done, self._snapshots_wanted = self._snapshots_wanted, []
        freeze_young()  # (between two batches: see `tuning`)
        if entries or outputs or effects or batch.snapshot is not None or batch.done:
            self._unsent += 1
            await self._batches_send.send(batch)

    # ------------------------------------------------------------ the committer

    async def _committer(self) -> None:
        """Store each batch's journal entries (the batches waiting are stored
        together, in one transaction, in a worker thread), then send what the
        batch caused: every accepted decision is stored before anything
        about it is sent. A store that fails stops the server (`StoreError`):
        going on would send what a restart could not give back."""
        if self.store is not None:
            async with self._store_lock:  # (a snapshot covers what was replayed, too)
                self._stored_up_to = await trio.to_thread.run_sync(self.store.append, [])
        while True:
            group = [await self._batches.receive()]
            while group[-1].snapshot is None:  # a snapshot covers no later entry
                try:
                    group.append(self._batches.receive_nowait())
                except trio.WouldBlock:
                    break
            entries = [entry for batch in group for entry in batch.entries]
            # The records of the games these inputs ended: in the same transaction.
            ended = [
                effect
                for batch in group
                for effect in batch.effects
                if isinstance(effect, GameFinished)
            ]
            if self.store is not None and (entries or ended):
                async with self._store_lock:
                    self._stored_up_to = await trio.to_thread.run_sync(
                        _append, self.store, entries, ended
                    )
            if ended and self.store is not None:  # (the store's side verifies what it keeps)
                assert self._nursery is not None
                self._nursery.start_soon(self._check_records, ended)
            for batch in group:
                self._flush(batch.outputs)
                self._effects(batch.effects)
                if batch.snapshot is None:
                    for done in batch.done:
                        done.set()
            self._unsent -= len(group)
            self._sent.set()
            self._sent = trio.Event()
            last = group[-1]
            if last.snapshot is None:
                continue
            saved, previous = trio.Event(), self._last_snapshot
            self._last_snapshot = saved
            assert self._nursery is not None
            self._nursery.start_soon(
                self._save_snapshot, last.snapshot, self._stored_up_to, previous, saved, last.done
            )

    async def _check_records(self, ended: list[GameFinished]) -> None:
        """Verify the records of the games `ended`, stored already, as
        `oriflamme verify` does, in a worker thread (`records.record_problems`):
        one the verifier finds otherwise is logged as a fault of ours."""
        for finished in ended:
            with trio.CancelScope(shield=True):  # (a stop waits for it: a few ms)
                problems = await trio.to_thread.run_sync(record_problems, finished)
            if problems:
                log.error(
                    "the record of game %s (%s) does not verify, a fault of this server: %s",
                    finished.record.game_id.hex(),
                    finished.record_id,
                    "; ".join(problems),
                )
            else:
                log.debug("record %s verified", finished.record_id)

    async def _save_snapshot(
        self,
        facts: FactsRows,
        covers: int,
        previous: trio.Event | None,
        saved: trio.Event,
        done: list[trio.Event],
    ) -> None:
        """Store the lobby's facts (after the ones before, if they are still
        on their way), in place of the journal entries they cover. A store
        that fails stops the server, as for the journal."""
        assert self.store is not None
        try:
            if previous is not None:
                await previous.wait()
            # (in steps, each alone on the store: the commits go on between)
            steps = await trio.to_thread.run_sync(self.store.facts_steps, facts, covers)
            for step in steps:
                async with self._store_lock:
                    await trio.to_thread.run_sync(step)
        finally:
            self._snapshots_saving -= 1
            saved.set()
            for event in done:
                event.set()

    async def _collect(self) -> None:
        """Every `COLLECT_EVERY` seconds, the garbage cycles among the
        objects `tuning.freeze_young` froze (between two batches: trio runs
        this task alone)."""
        while True:
            await trio.sleep(COLLECT_EVERY)
            collected = collect_frozen()
            if collected:
                log.info("the hourly collection freed %d objects in garbage cycles", collected)

    async def _maintain(self) -> None:
        """Every `maintain_every` seconds: delete the records older than
        `keep_records`, and truncate the WAL. (Neither is needed to store
        what is sent: one that fails is logged, and tried again later.)"""
        while True:
            await trio.sleep(self.maintain_every)
            async with self._store_lock:
                try:
                    await trio.to_thread.run_sync(self._tidy)
                except StoreError as exc:
                    log.error("the store could not be tidied (tried again later): %s", exc)

    def _tidy(self) -> None:
        assert self.store is not None
        if self.keep_records is not None:
            deleted = self.store.forget_records(time.time() - self.keep_records)
            if deleted:
                log.info("%d records older than --keep-records deleted", deleted)
        self.store.checkpoint()

    def _flush(self, outputs: list[tuple[Hashable, bytes, bool, bool]]) -> None:
        for conn, data, must_close, wanted in outputs:
            connection = self._connections.get(conn)
            if connection is None:
                continue
            if connection.dropping:
                continue
            connection.held = not wanted
            _wake(connection)
            if data:
                if connection.queued + len(data) > MAX_QUEUED:
                    self._give_up(conn, connection)
                    continue
                connection.queued += len(data)
                self._queue(connection, data)
            if must_close:
                self._queue(connection, None)

    def _give_up(self, conn: Hashable, connection: _Connection) -> None:
        """Drop a client that lets more than `MAX_QUEUED` bytes wait: nothing
        more is read from it or queued for it but a fatal `timeout`, after
        the whole frames already queued, and the close (the watchdog ends it
        if its socket takes none of it in `send_timeout`)."""
        log.info("connection %s dropped: it does not read what it is sent", conn)
        connection.why = "dropped: it did not read"
        connection.dropping = connection.held = True
        connection.queued += len(_UNREAD)
        self._queue(connection, _UNREAD)
        self._queue(connection, None)

    def _effects(self, effects: list[Effect]) -> None:
        for effect in effects:
            if isinstance(effect, StartBot):
                self._start_bot(effect)
            elif isinstance(effect, StopBot):
                scope = self._bots.pop(effect.player, None)
                if scope is not None:
                    scope.cancel()
            elif isinstance(effect, GameFinished):
                if self.on_record is not None:
                    self.on_record(effect)
            elif isinstance(effect, GameOver):
                if self.bots is not None and self._nursery is not None:
                    self._nursery.start_soon(self.bots.game_over, effect)
            elif isinstance(effect, LogLine):
                log.info("%s", effect.text)
            elif isinstance(effect, FetchRecord):
                assert self._nursery is not None
                self._nursery.start_soon(self._fetch, effect)
            elif isinstance(effect, ErrorSent):
                error = effect.error
                log.debug("connection %s told %s: %s", effect.conn, error.code, error.message)
                told = self._connections.get(effect.conn) if error.fatal else None
                if told is not None and told.why is None:
                    told.why = f"by the server, after a fatal {error.code}"
            elif isinstance(effect, Fault):
                log.error("the core failed (%s): %s", effect.conn, effect.what)

    async def _fetch(self, effect: FetchRecord) -> None:
        """Read a record off the core task, and give it to the core task."""
        data = None
        connection = self._connections.get(effect.conn)
        if connection is not None:  # read it once the client has read what waits for it
            await _until_readable(connection, held=False)
        if self.load_record is not None:
            try:
                data = await self.load_record(effect.record_id)
            except (OSError, StoreError) as exc:
                log.error("record %s could not be read: %s", effect.record_id, exc)
        fetched = FetchedRecord(effect.request_id, effect.record_id, data)
        await self._inbox_send.send(("record", effect.conn, fetched))

    # ------------------------------------------------------------ bots

    def _start_bot(self, effect: StartBot) -> None:
        if self.bots is None:
            log.warning(
                "bot %d (%s) for room %d seat %d not started: this server was given no"
                " bot host, so nobody plays the seat (a game it is in is cancelled before"
                " it begins: no seed is committed for it)",
                effect.player,
                effect.strategy,
                effect.room,
                effect.seat,
            )
            return
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
        """A server bot, played by the bot host until `scope` is cancelled."""
        assert self.bots is not None
        with scope:
            try:
                await self.bots.play(effect, partial(self._connect_bot, effect.player))
            except Exception as exc:  # a bot's failure must not take the server down
                log.exception("bot %d stopped: %s", effect.player, exc)

    async def _connect_bot(self, player: int) -> trio.abc.Stream:
        """A new connection for the bot of `player`: an in-memory stream pair,
        its far end served as any connection (but counted by no abuse limit)."""
        near, far = trio.testing.memory_stream_pair()
        assert self._nursery is not None
        self._nursery.start_soon(partial(self.serve_stream, far, f"bot {player}", ours=True))
        return near

    # ------------------------------------------------------------ shutting down

    async def shut_down(self, grace: float = 5.0) -> None:
        """Stop accepting, tell every client, let the writers finish (within
        `grace` seconds), then stop."""
        self._shutting_down = True
        with trio.move_on_after(grace):
            await self._inbox_send.send(("shut_down", None, None))
            while self._connections:
                await trio.sleep(0.05)
        saved = trio.Event()  # the core task saves the lobby: a start replays nothing
        with trio.move_on_after(grace):
            await self._inbox_send.send(("snapshot", None, saved))
            await saved.wait()
        if self._nursery is not None:
            self._nursery.cancel_scope.cancel()


async def _until_readable(connection: _Connection, *, held: bool) -> None:
    """Wait until fewer than `READ_PAUSE` bytes wait for `connection`'s
    socket (and, with `held`, until the core takes its messages again)."""
    while connection.queued > READ_PAUSE or (held and connection.held):
        if connection.drained is None or connection.drained.is_set():
            connection.drained = trio.Event()
        await connection.drained.wait()


def _append(store: Store, entries: list[Entry], ended: list[GameFinished]) -> int:
    """Store `entries` and the records of the games `ended` (in a worker thread)."""
    if not ended:
        return store.append(entries)
    return store.append(entries, [stored_record(finished) for finished in ended])


def _wake(connection: _Connection) -> None:
    """Wake whoever waits for `connection` to be readable, if it may be now."""
    if connection.drained is not None and connection.queued <= READ_PAUSE:
        connection.drained.set()


# What a client that does not read is told before its connection is dropped
# (its socket may not take it: then it is dropped without).
_UNREAD = encode_frame(
    m.to_data(
        m.error_message(
            RemoteProtocolError(
                TIMEOUT, "you did not read what the server sent you: come back and resume"
            )
        )
    )
)


def _drop_unread(conn: Hashable, connection: _Connection, seen: str) -> None:
    """End a connection whose client does not read what it is sent (`seen`:
    how that showed, for the log), at once: its socket takes nothing."""
    log.info("connection %s dropped: %s", conn, seen)
    connection.why = "dropped: it did not read"
    connection.cancel.cancel()


@dataclass(frozen=True, slots=True)
class Opened:
    """A connection accepted: its peer's host (None: not counted) and
    whether its messages are rate limited."""

    address: str | None
    limited: bool


def _refuse_at_once(stream: trio.abc.Stream) -> None:
    """Close a connection not admitted, with the fatal `server_busy` if its
    socket takes it at once (not over TLS: no handshake was made), and
    nothing more: no task, no log line."""
    transport = getattr(stream, "transport_stream", stream)
    sock = getattr(transport, "socket", None)
    if sock is None:
        return
    if transport is stream and os.name == "posix":
        with contextlib.suppress(OSError):
            os.write(sock.fileno(), REFUSAL)
    sock.close()


async def _begins_tls(stream: trio.SSLStream[trio.abc.Stream]) -> bool:
    """Whether a connection to the TLS port begins with a TLS handshake
    (`tls.begins_tls`): its first byte, peeked before the handshake reads
    it (and left for the handshake)."""
    transport = stream.transport_stream
    if not isinstance(transport, trio.SocketStream):
        return True
    try:
        first = await transport.socket.recv(1, trio.socket.MSG_PEEK)
    except OSError:
        return True  # (the handshake fails, and says why)
    return begins_tls(first)


async def _refuse_plain(stream: trio.SSLStream[trio.abc.Stream]) -> None:
    """Tell a client that speaks plain TCP to the TLS port that it speaks
    TLS, in plain TCP (`tls.PLAIN_REFUSAL`), then close its connection."""
    transport = stream.transport_stream
    with (
        contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError),
        trio.move_on_after(1),
    ):
        # What it sent is read first: a socket closed with bytes unread
        # resets the connection, and the refusal could be lost with it.
        await transport.receive_some(READ_SIZE)
        await transport.send_all(PLAIN_REFUSAL)
    await trio.aclose_forcefully(stream)  # (no handshake: none was begun)


def _peer_host(stream: trio.abc.Stream) -> str | None:
    """The host of the peer of a TCP (or TLS) stream; None for another stream."""
    transport = getattr(stream, "transport_stream", stream)
    socket = getattr(transport, "socket", None)
    try:
        return str(socket.getpeername()[0])  # type: ignore[union-attr]
    except (AttributeError, OSError, ValueError, TypeError, IndexError):
        return None


def _peer(stream: trio.abc.Stream) -> str:
    # a TLS stream wraps the socket's stream
    transport = getattr(stream, "transport_stream", stream)
    socket = getattr(transport, "socket", None)
    try:
        host, port = socket.getpeername()[:2]  # type: ignore[union-attr]
        return f"{host}:{port}"
    except (AttributeError, OSError, ValueError, TypeError):
        return "?"

"""`oriflamme serve`: the server, on the network, until SIGTERM or Ctrl-C.

It logs one line per connection, room and game event (never a token, never
a hidden card: the core holds neither), keeps finished games' records in
its database (`records`), and on SIGTERM or SIGINT stops accepting, tells
every client (``shutting_down``: they may come back), finishes writing, and
exits within a grace period.

Its state outlives it: every input that changes the lobby is stored (in
``server.sqlite3``, before anything it caused is sent), so a server killed
at any moment and started again over the same data directory has every
room, seat, session and game as it was (`persistence`).

Its bots are played by the `BotHost` it is given (`bot_host`): the
launcher's house bots, or None (a room's bots are then played by nobody).
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import signal
import socket
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import trio

from oriflamme.server.core import GameFinished, Gateway, ServerConfig

from .bot_host import BotHost
from .discovery import BEACON_PORT, run_beacon
from .net import SNAPSHOT_EVERY, NetServer
from .persistence import restore
from .records import import_record_files, stored_record
from .store import Store, StoreError, StoreUnreachable
from .tls import certificate_fingerprint, self_signed, server_context
from .tuning import pin_malloc_thresholds, tune_gc

log = logging.getLogger("oriflamme.server")

DEFAULT_PORT = 7531
DAY = 86400.0  # seconds


def default_data_dir() -> Path:
    """The server's data directory, by the XDG convention."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "oriflamme" / "server"


@dataclass
class ServeOptions:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    data_dir: Path = field(default_factory=default_data_dir)
    config: ServerConfig = field(default_factory=ServerConfig)
    shutdown_grace: float = 5.0
    # Embedded in another program (`oriflamme play`): it stops when this is
    # set rather than on a signal, and leaves that program's GC alone.
    stop: trio.Event | None = None
    # Announce the server on the local network (`discovery`): the name shown.
    discovery: bool = True
    name: str = field(default_factory=socket.gethostname)
    # TLS: a certificate and key of your own, or one made and kept in the
    # data directory (`tls`).
    tls_cert: Path | None = None
    tls_key: Path | None = None
    tls_self_signed: bool = False
    # Journal entries between two snapshots of the lobby: fewer, a shorter
    # start after a crash; more, fewer takings of the lobby's facts (the rooms
    # wait while the core task takes them: docs/SERVER.md).
    snapshot_every: int = SNAPSHOT_EVERY
    # Days a finished game's record is kept (None: for ever).
    keep_records: float | None = None
    # Do not start when the journal's replay disagrees with a game in
    # progress (`persistence.ReplayDisagreed`), rather than keep that game
    # out of play and serve the others.
    strict_replay: bool = False
    # The store: None, the data directory's SQLite file; else a PostgreSQL
    # URL (`server.pg_store`).
    database: str | None = None
    # Players without a key are admitted (docs/PROTOCOL.md, "Keys and the handshake").
    allow_anonymous: bool = True

    @property
    def tls(self) -> bool:
        return self.tls_self_signed or self.tls_cert is not None


async def serve(
    options: ServeOptions,
    bots: BotHost | None,
    *,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run the server until SIGTERM or SIGINT, its bots played by `bots`
    (None: by nobody, `bot_host`); started with the port it listens on.
    `StoreError` (with a message for a person) if its data directory cannot
    be used."""
    if options.stop is None:  # a process of its own: before the snapshot is read
        pin_malloc_thresholds()
    # A host name that does not resolve is said before the data directory is made.
    await trio.socket.getaddrinfo(
        options.host, options.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )
    restored = await trio.to_thread.run_sync(
        partial(restore, strict=options.strict_replay, database=options.database),
        options.data_dir,
        options.config,
    )
    store, lobby = restored.store, restored.lobby
    try:
        # A game whose end is in the journal has its record in the store,
        # unless a server before schema 3 wrote the journal: then it is made
        # again (left as it is if it is kept), and the record files such a
        # server wrote are imported.
        ended = [stored_record(e) for e in restored.replayed if isinstance(e, GameFinished)]
        if ended:
            await trio.to_thread.run_sync(store.append, [], ended)
        await trio.to_thread.run_sync(import_record_files, store, options.data_dir)
        if options.keep_records is not None:  # (and every hour, by the server)
            await trio.to_thread.run_sync(
                store.forget_records, time.time() - options.keep_records * DAY
            )
        if options.database is not None:
            log.info("state kept in the PostgreSQL database %s", store.path)
        if not restored.new:
            log.info(
                "state restored: %d rooms, %d sessions (%d inputs replayed)",
                len(lobby.rooms),
                len(lobby.sessions),
                restored.entries,
            )
        generation = await trio.to_thread.run_sync(store.next_generation)
        server = NetServer(
            Gateway(lobby, allow_anonymous=options.allow_anonymous),
            load_record=partial(_read_record, store),
            store=store,
            bots=bots,
            generation=generation,
            # the core's time goes on from the last input stored: time the
            # server was down does not count against anyone's timer
            time_offset=lobby.last_time - trio.current_time(),
            restarted=not restored.new,
            entries_since_snapshot=restored.entries,
            snapshot_every=options.snapshot_every,
            keep_records=None if options.keep_records is None else options.keep_records * DAY,
        )
        context = tls_context(options)
        listeners: list[trio.abc.Listener[trio.abc.Stream]]
        if context is None:
            tcp = await trio.open_tcp_listeners(options.port, host=options.host)
            port = tcp[0].socket.getsockname()[1]
            listeners = list(tcp)
        else:
            ssl_listeners = await trio.open_ssl_over_tcp_listeners(
                options.port, context, host=options.host
            )
            transport = ssl_listeners[0].transport_listener
            assert isinstance(transport, trio.SocketListener)
            port = transport.socket.getsockname()[1]
            listeners = list(ssl_listeners)
        if options.stop is None:
            tune_gc()
        try:
            # SIGTERM and Ctrl-C are ours from here until the server has
            # stopped, its worker processes included: a second one while it
            # stops is said, and the stop goes on (the default action, a kill
            # halfway through its last writes, is never taken).
            with _stop_signals(options) as signals:
                async with trio.open_nursery() as stopping:
                    # (what the bots need while it serves: the house bots' search
                    # processes, say)
                    serving: contextlib.AbstractAsyncContextManager[object] = (
                        bots.serving() if bots is not None else contextlib.nullcontext()
                    )
                    async with serving, trio.open_nursery() as nursery:
                        await nursery.start(server.run, listeners)
                        # The beacon runs until cancelled: it is, as soon as
                        # the server stops accepting (nothing is to be
                        # announced then, and this nursery waits for it).
                        beacon = trio.CancelScope()
                        if announced(options):
                            await nursery.start(
                                _cancelled_by,
                                beacon,
                                partial(run_beacon, port, options.name, tls=context is not None),
                            )
                            log.info(
                                "announcing itself on the local network as %r (UDP port %d)",
                                options.name,
                                BEACON_PORT,
                            )
                        # Said once SIGTERM and Ctrl-C are ours: whoever reads it
                        # (a supervisor, a test) may stop the server at once, cleanly.
                        log.info(
                            "serving on %s port %d; data in %s",
                            options.host,
                            port,
                            options.data_dir,
                        )
                        task_status.started(port)
                        await _until_stopped(options, signals)
                        if signals is not None:
                            stopping.start_soon(_while_stopping, signals, options)
                        beacon.cancel()
                        await server.shut_down(options.shutdown_grace)
                    stopping.cancel_scope.cancel()  # stopped: no signal is to be said now
        except* StoreError as failed:
            # The state can no longer be stored: stop, rather than send
            # what a restart could not give back. What was stored is safe.
            # (`failed` holds only StoreErrors, maybe in nested groups)
            error: BaseException = failed
            while isinstance(error, BaseExceptionGroup):
                error = error.exceptions[0]
            if isinstance(error, StoreUnreachable):
                raise StoreUnreachable(
                    f"{error}. The server stopped; what it had stored is intact. Start it"
                    " again once the database answers: the games go on."
                ) from None
            raise StoreError(
                f"{error}. The server stopped; what it had stored is intact. Make room"
                " (or mend the data directory) and start it again: the games go on."
            ) from None
    finally:
        store.close()
    log.info("stopped")


async def _read_record(store: Store, record_id: str) -> bytes | None:
    """A record kept in the store, read off the core task."""
    return await trio.to_thread.run_sync(store.record, record_id)


def announced(options: ServeOptions) -> bool:
    """Whether the server announces itself on the LAN: not with discovery
    off, and not when it listens on loopback alone (nobody else could reach
    the port it would announce)."""
    if not options.discovery or options.stop is not None:
        return False
    try:
        return not ipaddress.ip_address(options.host).is_loopback
    except ValueError:  # a host name
        return options.host != "localhost"


def tls_context(options: ServeOptions) -> ssl.SSLContext | None:
    """The server's TLS context, or None without TLS; its certificate's
    fingerprint is logged, for players to pin or compare."""
    if options.tls_self_signed:
        cert, key = self_signed(options.data_dir / "tls", options.name)
    elif options.tls_cert is not None:
        cert, key = options.tls_cert, options.tls_key or options.tls_cert
    else:
        return None
    context = server_context(cert, key)
    log.info("TLS certificate %s, SHA-256 fingerprint %s", cert, certificate_fingerprint(cert))
    return context


def _stop_signals(
    options: ServeOptions,
) -> contextlib.AbstractContextManager[AsyncIterator[int] | None]:
    """SIGTERM and SIGINT, received from now until the server has stopped;
    None when embedded in another program (signals are its business then)."""
    if options.stop is not None:
        return contextlib.nullcontext()
    return trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT)


async def _until_stopped(options: ServeOptions, signals: AsyncIterator[int] | None) -> None:
    """Until SIGTERM or SIGINT, or, embedded in another program, until it
    sets `options.stop`."""
    if signals is None:
        assert options.stop is not None
        await options.stop.wait()
        log.info("stopped by its program: shutting down")
        return
    async for signum in signals:
        log.info("%s: shutting down", signal.Signals(signum).name)
        return


async def _while_stopping(signals: AsyncIterator[int], options: ServeOptions) -> None:
    """Signals that come while the server stops (until cancelled, once it has
    stopped): it is stopping already, and says so (SIGKILL stops it at once,
    if that is what is wanted)."""
    async for signum in signals:
        log.warning(
            "%s: already shutting down (within %g s; SIGKILL stops at once, safely)",
            signal.Signals(signum).name,
            options.shutdown_grace,
        )


async def _cancelled_by(
    scope: trio.CancelScope,
    run: Callable[..., Awaitable[object]],
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """`run(task_status=...)` (started when it says so) until `scope` is cancelled."""
    with scope:
        await run(task_status=task_status)

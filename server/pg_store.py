"""The store in PostgreSQL: the same tables and promises as `SqliteStore`, for hosts that grow.

How this works
--------------
`oriflamme serve --database postgresql://USER@HOST/DB` keeps the lobby's
journal, its facts and the finished games' records in PostgreSQL rather
than in the data directory's SQLite file (the data directory still holds
the server's key, `secret.key`, and its bots' secrets). The password is
never on the command line: libpq reads it from ``PGPASSWORD`` or
``~/.pgpass``, as every PostgreSQL program does.

trio has no PostgreSQL driver of its own, so this is psycopg 3, used
synchronously: the shell already calls the store from a worker thread
(`trio.to_thread.run_sync`), one call at a time, and waits for each commit
before it sends what the stored inputs caused. Records are read by other
threads, on a connection of their own (under a lock).

Durability is PostgreSQL's: a transaction is on the disk once its COMMIT
returns (``synchronous_commit`` on, the default; a host who turns it off
gives that up). One server at a time: the writing connection holds an
advisory lock (`LOCK_KEY`) for as long as it is open, and a second server
on the same database is refused (after `LOCK_WAIT` seconds); once the first stops, or dies (its
connection goes, and the lock with it), another server, on this machine or
another, can take the database over, and the games go on. It needs the
first server's key (`secret.key`): the database holds no secret, and a
server started with another key is refused (`persistence.check_key`).

The schema is `SqliteStore`'s (docs/STORAGE.md), in PostgreSQL's types.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import Any

from oriflamme.server.core.facts import FactsRows
from oriflamme.server.core.journal import Entry

from .store import (
    SCHEMA_VERSION,
    KeptRows,
    StoredRecord,
    StoreError,
    StoreUnreachable,
    each_record,
)

# Asked of the database server for this connection: a client machine that
# vanished is noticed within about a minute (rather than TCP's two hours),
# and its lock let go, so that another server can take over.
_KEEPALIVES = "-c tcp_keepalives_idle=30 -c tcp_keepalives_interval=10 -c tcp_keepalives_count=3"

# The advisory lock a server holds on its database (any constant: the
# bytes of "oriflame" as a big-endian signed 64-bit integer).
LOCK_KEY = int.from_bytes(b"oriflame", "big", signed=True)
LOCK_WAIT = 5  # seconds a server waits for the lock before it says who holds it

_TABLES = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS journal (
    seq BIGINT PRIMARY KEY, kind TEXT NOT NULL, conn TEXT,
    at DOUBLE PRECISION NOT NULL, data BYTEA, digest BYTEA);
CREATE TABLE IF NOT EXISTS snapshot (
    id INTEGER PRIMARY KEY CHECK (id = 1), data BYTEA NOT NULL);
CREATE TABLE IF NOT EXISTS records (
    id TEXT PRIMARY KEY, data BYTEA NOT NULL, room INTEGER NOT NULL,
    room_name TEXT NOT NULL, names TEXT NOT NULL, scores TEXT NOT NULL,
    winners TEXT NOT NULL, valid INTEGER NOT NULL, finished DOUBLE PRECISION NOT NULL);
CREATE INDEX IF NOT EXISTS records_by_time ON records (finished);
CREATE TABLE IF NOT EXISTS lobby (id INTEGER PRIMARY KEY CHECK (id = 1), data BYTEA NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    player BIGINT PRIMARY KEY, name TEXT NOT NULL, data BYTEA NOT NULL);
CREATE TABLE IF NOT EXISTS rooms (
    room BIGINT PRIMARY KEY, name TEXT NOT NULL, state TEXT NOT NULL, data BYTEA NOT NULL);
CREATE TABLE IF NOT EXISTS games (room BIGINT PRIMARY KEY, game_id BYTEA, data BYTEA NOT NULL);
"""
_INSERT = "INSERT INTO journal (seq, kind, conn, at, data, digest) VALUES (%s, %s, %s, %s, %s, %s)"
_INSERT_RECORD = (
    "INSERT INTO records (id, data, room, room_name, names, scores, winners, valid, finished)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING"
)


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise StoreError(
            "--database postgresql://... needs psycopg, which is not installed: install"
            " the server with `pip install 'oriflamme[postgresql]'` (or leave out --database"
            " for the SQLite file in the data directory)"
        ) from None
    return psycopg


def shown(url: str) -> str:
    """`url` as the log may show it: without a password."""
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest.split("/", 1)[0]:
        return url
    user, _, host = rest.partition("@")
    return f"{scheme}://{user.split(':', 1)[0]}@{host}"


class PostgresStore:
    """The store in a PostgreSQL database; see the module docstring."""

    def __init__(self, url: str) -> None:
        psycopg = _psycopg()
        self.path = shown(url)  # (what messages name)
        self._error = psycopg.Error
        self._unreachable = psycopg.OperationalError  # (a connection failed, or was lost)
        try:
            self._db = _connect(psycopg, url)
        except psycopg.Error as exc:
            raise self._failed(f"cannot connect to the database {self.path}", exc) from None
        try:
            # Waited for a little: a server that just stopped lets go of its
            # lock once PostgreSQL has ended its connection, a moment later.
            self._db.execute(f"SET lock_timeout = '{LOCK_WAIT}s'")
            try:
                self._db.execute("SELECT pg_advisory_lock(%s)", (LOCK_KEY,))
            except psycopg.errors.LockNotAvailable:
                raise StoreError(
                    f"another server is using the database {self.path}: stop it, or give"
                    " this one another database"
                ) from None
            self._db.execute("RESET lock_timeout")
            with self._db.transaction():
                self._db.execute(_TABLES)
            self._reader = _connect(psycopg, url)
            self._reading = threading.Lock()
            (last,) = self._db.execute("SELECT max(seq) FROM journal").fetchone()
            self._last_position = last or 0
            self._kept = KeptRows()
            version = self.meta("schema_version")
        except psycopg.Error as exc:
            self.close()
            raise self._failed(f"cannot use the database {self.path}", exc) from None
        except StoreError:
            self.close()
            raise
        self.found_schema = version
        if version is None:
            self.set_meta("schema_version", SCHEMA_VERSION)
        elif version > SCHEMA_VERSION:
            self.close()
            raise StoreError(
                f"the database {self.path} was written by a newer version of the server"
                f" (schema {version}); this one reads schema {SCHEMA_VERSION}. Upgrade the"
                " server, or give it another database."
            )

    # ------------------------------------------------------------ meta

    def meta(self, key: str) -> int | None:
        """A value of the table ``meta`` (None: none)."""
        try:
            row = self._db.execute("SELECT value FROM meta WHERE key = %s", (key,)).fetchone()
        except self._error as exc:
            raise self._failed(f"cannot read the database {self.path}", exc) from None
        return None if row is None else int(row[0])

    def set_meta(self, key: str, value: int) -> None:
        with self._transaction():
            self._set_meta(key, value)

    def _set_meta(self, key: str, value: int) -> None:
        self._db.execute(
            "INSERT INTO meta (key, value) VALUES (%s, %s)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def set_schema(self) -> None:
        self.set_meta("schema_version", SCHEMA_VERSION)
        self.found_schema = SCHEMA_VERSION

    # ------------------------------------------------------------ the journal

    def load(self) -> tuple[FactsRows | bytes | None, list[Entry]]:
        try:
            # (no other server writes meanwhile: this one holds the lock)
            facts: FactsRows | bytes | None = self._kept.read(self._db.execute, "%s")
            if facts is None:  # (an earlier schema's snapshot, or none)
                row = self._db.execute("SELECT data FROM snapshot WHERE id = 1").fetchone()
                facts = None if row is None else bytes(row[0])
            rows = self._db.execute(
                "SELECT kind, conn, at, data, digest FROM journal ORDER BY seq"
            ).fetchall()
        except self._error as exc:
            raise self._failed(f"cannot read the database {self.path}", exc) from None
        entries = [
            Entry(kind, conn, at, _bytes(data), _bytes(digest))
            for kind, conn, at, data, digest in rows
        ]
        return facts, entries

    def append(self, entries: list[Entry], records: Iterable[StoredRecord] = ()) -> int:
        rows = [r.row() for r in records]
        if not entries and not rows:
            return self._last_position
        first = self._last_position + 1
        with self._transaction(), self._db.cursor() as cursor:
            if entries:
                cursor.executemany(
                    _INSERT,
                    [
                        (seq, e.kind, e.conn, e.now, e.data, e.digest)
                        for seq, e in enumerate(entries, first)
                    ],
                )
            if rows:
                cursor.executemany(_INSERT_RECORD, rows)
        self._last_position += len(entries)  # (counted once committed)
        return self._last_position

    def save_facts(self, facts: FactsRows, covers: int | None = None) -> None:
        for step in self.facts_steps(facts, covers):
            step()

    def facts_steps(self, facts: FactsRows, covers: int | None = None) -> list[Callable[[], None]]:
        """One step: the save, in one transaction."""
        return [partial(self._save_facts, facts, covers)]

    def _save_facts(self, facts: FactsRows, covers: int | None) -> None:
        covered = self._last_position if covers is None else covers
        changes = self._kept.changes(facts)
        with self._transaction(), self._db.cursor() as cursor:
            for statement, rows in changes.statements("%s"):
                cursor.executemany(statement, rows)
            cursor.execute("DELETE FROM snapshot")  # (an earlier schema's, now rows)
            cursor.execute("DELETE FROM journal WHERE seq <= %s", (covered,))
        self._kept.keep(changes)  # (once committed)

    def checkpoint(self) -> int:
        """Nothing to do: PostgreSQL bounds its own log (`max_wal_size`)."""
        return 0

    def next_generation(self) -> int:
        with self._transaction():
            row = self._db.execute(
                "SELECT value FROM meta WHERE key = 'generation' FOR UPDATE"
            ).fetchone()
            generation = (0 if row is None else int(row[0])) + 1
            self._set_meta("generation", generation)
        return generation

    # ------------------------------------------------------------ records

    def record(self, record_id: str) -> bytes | None:
        try:
            with self._reading:
                row = self._reader.execute(
                    "SELECT data FROM records WHERE id = %s", (record_id,)
                ).fetchone()
        except self._error as exc:
            raise self._failed(f"cannot read the record {record_id}", exc) from None
        return None if row is None else bytes(row[0])

    def files_imported(self) -> bool:
        return bool(self.meta("records_imported"))

    def mark_files_imported(self) -> None:
        self.set_meta("records_imported", 1)

    def record_ids(self) -> set[str]:
        try:
            with self._reading:
                return {row[0] for row in self._reader.execute("SELECT id FROM records")}
        except self._error as exc:
            raise self._failed(f"cannot read the records of {self.path}", exc) from None

    def forget_records(self, before: float) -> int:
        with self._transaction():
            deleted = self._db.execute("DELETE FROM records WHERE finished < %s", (before,))
        return int(deleted.rowcount)

    # ------------------------------------------------------------ the rest

    def _transaction(self) -> _Transaction:
        return _Transaction(self)

    def _failed(self, what: str, exc: Exception) -> StoreError:
        """The StoreError for a database error: `StoreUnreachable` for a
        connection that failed or was lost (it may pass by itself)."""
        kind = StoreUnreachable if isinstance(exc, self._unreachable) else StoreError
        return kind(f"{what}: {exc}".rstrip())

    def close(self) -> None:
        reader = getattr(self, "_reader", None)
        if reader is not None:
            reader.close()
        self._db.close()  # (and with it the lock)


def _connect(psycopg: Any, url: str) -> Any:
    return psycopg.connect(url, autocommit=True, connect_timeout=30, options=_KEEPALIVES)


def read_records(url: str) -> Iterator[tuple[str, bytes, float]]:
    """Each record kept in the database of `url` (id, bytes, Unix time it
    finished), oldest first, read without writing anything nor taking the
    server's lock: a server may be running on it."""
    psycopg = _psycopg()
    try:
        db = _connect(psycopg, url)
    except psycopg.Error as exc:
        raise StoreError(f"cannot connect to the database {shown(url)}: {exc}") from None
    try:
        yield from each_record(db.execute, "%s")
    except psycopg.Error as exc:
        raise StoreError(f"cannot read the records of {shown(url)}: {exc}") from None
    finally:
        db.close()


def _bytes(value: Any) -> bytes | None:
    return None if value is None else bytes(value)


class _Transaction:
    """A transaction on the writing connection; a database error is a
    `StoreError` with the message a person reads."""

    def __init__(self, store: PostgresStore) -> None:
        self._store = store
        self._inner: Any = None

    def __enter__(self) -> None:
        store = self._store
        try:
            self._inner = store._db.transaction()
            self._inner.__enter__()
        except store._error as exc:
            raise store._failed("the database could not be written", exc) from None

    def __exit__(self, kind: Any, value: Any, tb: Any) -> None:
        store = self._store
        try:
            self._inner.__exit__(kind, value, tb)
        except store._error as exc:
            raise store._failed("the database could not be written", exc) from None
        if isinstance(value, store._error):
            raise store._failed("the database could not be written", value) from None

"""Where the server keeps its state across restarts: the lobby's journal, in SQLite.

How this works
--------------
The core's state is a function of its inputs (`server.core.journal`), so the
store keeps the inputs: each batch of journal entries is appended in one
transaction, and the shell sends nothing a batch caused before the
transaction is committed. At start, the entries are read back and replayed.
Now and then (and at a clean shutdown) the lobby's facts are saved
(`server.core.facts`; docs/STORAGE.md), in tables: the lobby's own row
(``lobby``), and a row each session, room and game (``sessions``,
``rooms``, ``games``); only the rows that changed since the last save are
written (`KeptRows`). The entries they cover are dropped, so a start
replays only what came after. They are stored while
the server goes on: entries appended meanwhile are not covered, so `append`
tells the position of the last entry it stored, and a snapshot drops the
entries up to the position it covers and keeps the later ones.
Positions are never reused while the store is open (the store numbers the
entries itself: SQLite would start again at 1 after the journal emptied).

Finished games' records are kept here too (table ``records``: the
record's bytes, as `oriflamme verify` reads them, and the summary the lobby
lists), written in the same transaction as the journal entries of the
input that ended the game: a record exists exactly when its game has ended.
`oriflamme export-records` writes them out as files.

SQLite in WAL mode with ``synchronous=FULL``: a commit is on the disk
(fsync'd) once ``commit`` returns, so neither a killed process nor a power
cut loses what was acknowledged; the shell commits every batch of inputs
waiting in one transaction, so that is one fsync a batch, not one an input.
The WAL is checkpointed and truncated every hour (`checkpoint`, from
`NetServer`), by SQLite itself as it grows (every 1,000 pages), and its
file kept under `WAL_LIMIT` bytes at rest. The
database holds no secret: no token, no seed (they come from the server's
key, kept in a file of its own, `secret.key`).

`Store` is the narrow interface the shell uses, so that another database
(PostgreSQL: `server.pg_store`) takes its place.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import IO, Any, Protocol

from oriflamme.server.core.facts import FACT_TABLES, FactsRows, Row
from oriflamme.server.core.journal import Entry


@dataclass(frozen=True)
class Migration:
    """What a database of schema `version - 1` needs to become `version`:
    `sql`, run in one transaction with the version it makes (statements a
    database may hold already are skipped: `IF NOT EXISTS`, a column
    looked for first); `converts`: the snapshot's format changes, and
    `persistence.restore` converts it before the migration is marked."""

    version: int
    what: str
    sql: tuple[str, ...] = ()
    converts: bool = False


# The facts' tables (`FACT_TABLES`: the key and plain columns of each), as
# migration 5 makes them; SQLite's types (PostgreSQL's: `server.pg_store`).
_FACT_TABLES_SQL = (
    "CREATE TABLE IF NOT EXISTS lobby (id INTEGER PRIMARY KEY CHECK (id = 1), data BLOB NOT NULL)",
    "CREATE TABLE IF NOT EXISTS sessions (player INTEGER PRIMARY KEY, name TEXT NOT NULL,"
    " data BLOB NOT NULL)",
    "CREATE TABLE IF NOT EXISTS rooms (room INTEGER PRIMARY KEY, name TEXT NOT NULL,"
    " state TEXT NOT NULL, data BLOB NOT NULL)",
    "CREATE TABLE IF NOT EXISTS games (room INTEGER PRIMARY KEY, game_id BLOB, data BLOB NOT NULL)",
)


# The schema's history, in order; docs/STORAGE.md says what each changed.
MIGRATIONS = (
    Migration(
        1,
        "the journal of inputs, and the lobby's snapshot",
        (
            "CREATE TABLE IF NOT EXISTS journal (seq INTEGER PRIMARY KEY, kind TEXT NOT NULL,"
            " conn TEXT, at REAL NOT NULL, data BLOB)",
            "CREATE TABLE IF NOT EXISTS snapshot (id INTEGER PRIMARY KEY CHECK (id = 1),"
            " data BLOB NOT NULL)",
        ),
    ),
    # (a server of schema 1 would load such a snapshot, then fail on a resume)
    Migration(2, "a snapshot's sessions keep their pushes as frames"),
    # (a server of schema 2 would write records as files again, beside the others)
    Migration(
        3,
        "finished games' records in the database, and each journal entry's digest",
        (
            "CREATE TABLE IF NOT EXISTS records (id TEXT PRIMARY KEY, data BLOB NOT NULL,"
            " room INTEGER NOT NULL, room_name TEXT NOT NULL, names TEXT NOT NULL,"
            " scores TEXT NOT NULL, winners TEXT NOT NULL, valid INTEGER NOT NULL,"
            " finished REAL NOT NULL)",
            "CREATE INDEX IF NOT EXISTS records_by_time ON records (finished)",
            # (NULL in the rows of a journal written before: replayed unchecked)
            "ALTER TABLE journal ADD COLUMN digest BLOB",
        ),
    ),
    Migration(4, "the snapshot is the lobby's facts, not a pickle", converts=True),
    # (the earlier snapshot, one document, is read once more, and written as rows)
    Migration(
        5,
        "the facts in tables: the lobby's row, and a row each session, room and game",
        _FACT_TABLES_SQL,
        converts=True,
    ),
)
SCHEMA_VERSION = MIGRATIONS[-1].version
ROWS_A_STATEMENT = 500  # journal entries inserted by one statement

WAL_LIMIT = 4 << 20  # bytes the WAL file keeps at rest, once checkpointed
STAGE_ROWS = 200  # rows of the facts staged a step (`SqliteStore.facts_steps`): a ms or so
STAGE_BYTES = 8 << 20  # facts larger than this are not staged, but written at once

_INSERT = "INSERT INTO journal (seq, kind, conn, at, data, digest) VALUES "
_ROW = "(?, ?, ?, ?, ?, ?)"
_INSERT_RECORD = (
    "INSERT OR IGNORE INTO records (id, data, room, room_name, names, scores, winners,"
    " valid, finished) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


@dataclass(frozen=True)
class StoredRecord:
    """A finished game's record as the store keeps it: its bytes and the
    summary a list of finished games shows; `finished`: Unix time."""

    id: str
    data: bytes
    room: int
    room_name: str
    names: tuple[str, ...]
    scores: tuple[int, ...]
    winners: tuple[int, ...]
    valid: bool
    finished: float

    def row(self) -> tuple[object, ...]:
        return (
            self.id,
            self.data,
            self.room,
            self.room_name,
            json.dumps(self.names),
            json.dumps(self.scores),
            json.dumps(self.winners),
            int(self.valid),
            self.finished,
        )


class StoreError(Exception):
    """The store cannot be used (a clear message for a person)."""


class StoreUnreachable(StoreError):
    """The database server cannot be reached (PostgreSQL down, restarting,
    or the network to it gone): unlike a full disk, it may pass by itself,
    so a supervisor may start the server again (`serve` exits with 4)."""


class Store(Protocol):
    """What the shell needs of a store: `SqliteStore` (the data directory's
    file), `PostgresStore` (`server.pg_store`). `path`: what messages name;
    `found_schema`: the schema version the database had when opened (None:
    a new one)."""

    found_schema: int | None

    @property
    def path(self) -> object: ...

    def meta(self, key: str) -> int | None:
        """A value of the table ``meta`` (None: none)."""
        ...

    def set_meta(self, key: str, value: int) -> None: ...

    def set_schema(self) -> None:
        """Mark the database as this version's."""
        ...

    def files_imported(self) -> bool: ...

    def mark_files_imported(self) -> None: ...

    def record_ids(self) -> set[str]: ...

    def load(self) -> tuple[FactsRows | bytes | None, list[Entry]]:
        """The facts kept (None: none yet), and the entries after them, in
        order. Bytes: an earlier schema's snapshot (one document of facts,
        or a pickle), which `persistence.restore` converts."""
        ...

    def append(self, entries: list[Entry], records: Iterable[StoredRecord] = ()) -> int:
        """Add entries, and the records of the games they ended, durably, in
        one transaction; the position of the last entry stored (of any, if
        `entries` is empty). A record already kept is left as it is."""
        ...

    def record(self, record_id: str) -> bytes | None:
        """The bytes of a record kept, or None (from any thread)."""
        ...

    def forget_records(self, before: float) -> int:
        """Delete the records of games that finished before `before`."""
        ...

    def checkpoint(self) -> int:
        """Bound the database's log (SQLite: the WAL truncated); its size."""
        ...

    def save_facts(self, facts: FactsRows, covers: int | None = None) -> None:
        """Keep `facts` (the lobby's, as rows: those that changed since the
        last save are written), which cover the entries up to position
        `covers` (None: every entry stored so far); drop those, keep the
        later ones: `facts_steps`, each in turn."""
        ...

    def facts_steps(self, facts: FactsRows, covers: int | None = None) -> list[Callable[[], None]]:
        """`save_facts` in steps, to run in order, one at a time on the
        store: other calls may come between two, and until the last
        nothing a start reads has changed (it does all that shows, in one
        transaction). For a shell whose commits should not wait for a
        whole save."""
        ...

    def next_generation(self) -> int:
        """A number one more than at the last start (to name connections)."""
        ...

    def close(self) -> None: ...


class SqliteStore:
    """The store in one SQLite file; see the module docstring."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = _lock(path.with_name(path.name + ".lock"))
        try:
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute(f"PRAGMA journal_size_limit={WAL_LIMIT}")
            # The staged rows (`facts_steps`): in memory (a temporary file
            # made staging seven times slower), in tables of this connection.
            self._db.execute("PRAGMA temp_store=MEMORY")
            for table, (key, plain) in FACT_TABLES.items():
                columns = ", ".join((f"{key} INTEGER PRIMARY KEY", *plain, "data"))
                self._db.execute(f"CREATE TEMP TABLE staged_{table} ({columns})")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)"
            )
            version = self._meta("schema_version")
            if version is not None and version > SCHEMA_VERSION:
                self._db.close()
                self._lock.close()
                raise StoreError(
                    f"the database {path} was written by a newer version of the server"
                    f" (schema {version}); this one reads schema {SCHEMA_VERSION}. Upgrade the"
                    " server, or start it with another data directory."
                )
            self.found_schema = version
            # A new database is made by every migration. An earlier one gets
            # none until its snapshot is converted (`set_schema` runs them
            # then): until then, the version that wrote it can still read it,
            # and `load` reads it as it is.
            if version is None:
                self._migrate(stop_at_conversion=False)
            # Records are read by other threads than the committer's, on a
            # connection of their own (WAL: readers never wait for the writer).
            self._reader = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self._reading = threading.Lock()
        except sqlite3.Error as exc:
            self._lock.close()
            raise StoreError(f"cannot open the database {path}: {exc}") from None
        except StoreError:  # (a migration that could not be written)
            self._db.close()
            self._lock.close()
            raise
        try:
            (last,) = self._db.execute("SELECT max(seq) FROM journal").fetchone()
        except sqlite3.Error as exc:
            self.close()
            raise StoreError(f"cannot read the database {path}: {exc}") from None
        self._last_position = last or 0
        self._kept = KeptRows()
        # (SQLite before 3.32 takes 999 parameters to a statement, six a row)
        limit = self._db.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
        self._rows_a_statement = max(1, min(ROWS_A_STATEMENT, limit // 6))

    def _migrate(self, *, stop_at_conversion: bool) -> None:
        """Run the migrations the database lacks, in order, each in a
        transaction with the version it makes; up to the first that
        converts the snapshot, if `stop_at_conversion`."""
        for migration in MIGRATIONS:
            version = self._meta("schema_version") or 0
            if migration.version <= version:
                continue
            if migration.converts and stop_at_conversion:
                return
            with self._transaction():
                for statement in migration.sql:
                    if statement.startswith("ALTER TABLE journal ADD COLUMN digest"):
                        columns = [r[1] for r in self._db.execute("PRAGMA table_info(journal)")]
                        if "digest" in columns:
                            continue  # (see above)
                    self._db.execute(statement)
                self._set_meta("schema_version", migration.version)

    def set_schema(self) -> None:
        """Run the migrations left (the snapshot is converted: facts now)."""
        self._migrate(stop_at_conversion=False)
        self.found_schema = SCHEMA_VERSION

    def meta(self, key: str) -> int | None:
        return self._meta(key)

    def set_meta(self, key: str, value: int) -> None:
        with self._transaction():
            self._set_meta(key, value)

    def _meta(self, key: str) -> int | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else int(row[0])

    def _set_meta(self, key: str, value: int) -> None:
        self._db.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def load(self) -> tuple[FactsRows | bytes | None, list[Entry]]:
        try:
            # (a journal written before the digests has none: NULL, replayed
            # unchecked; migration 3 adds the column)
            columns = [row[1] for row in self._db.execute("PRAGMA table_info(journal)")]
            digest = "digest" if "digest" in columns else "NULL"
            facts: FactsRows | bytes | None = None
            tables = {row[0] for row in self._db.execute("SELECT name FROM sqlite_master")}
            if "lobby" in tables:  # (schema 5 on: the facts in tables)
                facts = self._kept.read(self._db.execute, "?")
            if facts is None:  # (an earlier schema's snapshot, or none)
                row = self._db.execute("SELECT data FROM snapshot WHERE id = 1").fetchone()
                facts = None if row is None else bytes(row[0])
            entries = [
                Entry(kind, conn, at, data, made)
                for kind, conn, at, data, made in self._db.execute(
                    f"SELECT kind, conn, at, data, {digest} FROM journal ORDER BY seq"
                )
            ]
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read the database {self.path}: {exc}") from None
        return facts, entries

    def append(self, entries: list[Entry], records: Iterable[StoredRecord] = ()) -> int:
        rows = [r.row() for r in records]
        if not entries and not rows:
            return self._last_position
        with self._transaction():
            self._append(entries)
            if rows:
                self._db.executemany(_INSERT_RECORD, rows)
        # (counted once committed: a transaction that failed stored nothing)
        self._last_position += len(entries)
        return self._last_position

    def _append(self, entries: list[Entry]) -> None:
        if not entries:
            return
        first = self._last_position + 1
        # Many rows to a statement, not `executemany`: sqlite3 lets go of the
        # interpreter lock around each statement it steps, and this runs in a
        # worker thread beside the busy core task, which then holds the lock
        # for up to the switch interval (5 ms) before the worker gets it back:
        # a row a step made a batch of 50 entries take 25 to 150 ms.
        rows = self._rows_a_statement
        for start in range(0, len(entries), rows):
            chunk = entries[start : start + rows]
            values: list[object] = []
            for seq, e in enumerate(chunk, first + start):
                values += (seq, e.kind, e.conn, e.now, e.data, e.digest)
            self._db.execute(_INSERT + ",".join([_ROW] * len(chunk)), values)

    def record(self, record_id: str) -> bytes | None:
        try:
            with self._reading:
                row = self._reader.execute(
                    "SELECT data FROM records WHERE id = ?", (record_id,)
                ).fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read the record {record_id}: {exc}") from None
        return None if row is None else bytes(row[0])

    def files_imported(self) -> bool:
        """Whether the record files of a server before schema 3 were imported."""
        return bool(self._meta("records_imported"))

    def mark_files_imported(self) -> None:
        with self._transaction():
            self._set_meta("records_imported", 1)

    def record_ids(self) -> set[str]:
        """The ids of every record kept."""
        with self._reading:
            return {row[0] for row in self._reader.execute("SELECT id FROM records")}

    def forget_records(self, before: float) -> int:
        """Delete the records of games finished before `before` (Unix time):
        the retention setting, `--keep-records`; how many were deleted."""
        with self._transaction():
            deleted = self._db.execute("DELETE FROM records WHERE finished < ?", (before,))
        return deleted.rowcount

    def checkpoint(self) -> int:
        """Copy the WAL into the database and truncate it (if no reader holds
        it: then it is left for the next time); the WAL's size after."""
        try:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"the database could not be written: {exc}") from None
        wal = self.path.with_name(self.path.name + "-wal")
        try:
            return wal.stat().st_size
        except FileNotFoundError:
            return 0

    def save_facts(self, facts: FactsRows, covers: int | None = None) -> None:
        for step in self.facts_steps(facts, covers):
            step()

    def facts_steps(self, facts: FactsRows, covers: int | None = None) -> list[Callable[[], None]]:
        """The rows to write are first staged, `STAGE_ROWS` a step, in
        temporary tables of this connection, in memory (not the database,
        whose commits go on meanwhile); the last step moves them into their
        tables, within SQLite, with the rest of the save, in one
        transaction. Writing a taking's rows from Python held the database
        for 15 to 35 ms, and every commit waited (bench/RESULTS.md).

        Rows to write of more than `STAGE_BYTES` in all (most rows, at a
        first taking after a start) are written at once: the memory SQLite
        would take to stage them would stay the process's."""
        changes = self._kept.changes(facts)
        if changes.size > STAGE_BYTES:
            return [partial(self._write, changes, covers, staged=False)]
        steps: list[Callable[[], None]] = [self._unstage]
        for table, rows in changes.writes.items():
            for start in range(0, len(rows), STAGE_ROWS):
                steps.append(partial(self._stage, table, rows[start : start + STAGE_ROWS]))
        steps.append(partial(self._write, changes, covers, staged=True))
        return steps

    def _unstage(self) -> None:
        """Empty the staging tables: what a save that failed left there is
        not written."""
        try:
            for table in FACT_TABLES:
                self._db.execute(f"DELETE FROM temp.staged_{table}")
        except sqlite3.Error as exc:
            raise StoreError(f"the database could not be written: {exc}") from None

    def _stage(self, table: str, rows: list[tuple[object, ...]]) -> None:
        key, plain = FACT_TABLES[table]
        try:
            # (a transaction of the temporary tables only: the database is
            # not locked)
            self._db.execute("BEGIN")
            self._db.executemany(
                f"INSERT INTO temp.staged_{table} VALUES ({', '.join('?' * (2 + len(plain)))})",
                rows,
            )
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise StoreError(f"the database could not be written: {exc}") from None

    def _write(self, changes: RowChanges, covers: int | None, *, staged: bool) -> None:
        """The save, in one transaction: the rows to write given, or staged."""
        with self._transaction():
            source = "temp.staged_{}" if staged else None
            for statement, rows in changes.statements("?", staged=source):
                self._db.executemany(statement, rows)
            self._db.execute("DELETE FROM snapshot")  # (an earlier schema's, now rows)
            covered = self._last_position if covers is None else covers
            self._db.execute("DELETE FROM journal WHERE seq <= ?", (covered,))
        self._kept.keep(changes)  # (once committed: a transaction that failed wrote nothing)
        # (No checkpoint here: facts are taken every second or so on a busy
        # server, and a checkpoint holds the committer back. SQLite's own,
        # `journal_size_limit` and the hourly one bound the WAL.)
        if staged:
            self._unstage()  # (their memory, for the next save's)

    def next_generation(self) -> int:
        with self._transaction():
            generation = (self._meta("generation") or 0) + 1
            self._set_meta("generation", generation)
        return generation

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)

    def close(self) -> None:
        self._reader.close()
        self._db.close()
        self._lock.close()  # and with it the lock


@dataclass(frozen=True)
class RowChanges:
    """What a save of the facts writes: the lobby's row, and for each table
    the rows to write (key, plain columns, facts) and the keys to delete;
    `digests`: the digest of each row written (None: not known), and
    `whole`: whether they are every row's."""

    lobby: bytes
    writes: dict[str, list[tuple[object, ...]]]
    deletes: dict[str, list[int]]
    digests: dict[str, dict[int, bytes | None]]
    whole: bool
    size: int  # (bytes of facts to write)

    def statements(
        self, placeholder: str, staged: str | None = None
    ) -> Iterator[tuple[str, list[tuple[object, ...]]]]:
        """Each statement to run (`executemany`), with its rows, in the SQL
        of a store whose parameters are `placeholder`; the rows to write
        taken from the tables `staged` names (a format of the table's name),
        where they were put already, if given."""
        yield (
            f"INSERT INTO lobby (id, data) VALUES (1, {placeholder})"
            " ON CONFLICT (id) DO UPDATE SET data = excluded.data",
            [(self.lobby,)],
        )
        for table, (key, plain) in FACT_TABLES.items():
            columns = (key, *plain, "data")
            if self.writes[table]:
                # (SQLite reads an upsert's SELECT right only with a WHERE)
                values = (
                    f"VALUES ({', '.join([placeholder] * len(columns))})"
                    if staged is None
                    else f"SELECT {', '.join(columns)} FROM {staged.format(table)} WHERE true"
                )
                yield (
                    f"INSERT INTO {table} ({', '.join(columns)}) {values}"
                    f" ON CONFLICT ({key}) DO UPDATE SET "
                    + ", ".join(f"{c} = excluded.{c}" for c in columns[1:]),
                    self.writes[table] if staged is None else [()],
                )
            if self.deletes[table]:
                yield (
                    f"DELETE FROM {table} WHERE {key} = {placeholder}",
                    [(k,) for k in self.deletes[table]],
                )


class KeptRows:
    """The digest of each row of the facts a store holds, so that a save of
    every row (`FactsRows.gone` None: the first taking after a start, when
    most rows are as they were read, or after a taking that failed) writes
    only those that changed. A save of the rows that changed (`take_some`'s,
    with the keys gone) writes every row it is given, unhashed: they
    changed, and hashing them was half of such a save's time, in a thread
    that shares the interpreter with the core (bench/RESULTS.md); its cost
    follows what changed, not how many rows the store holds. Kept in
    memory, filled when the facts are read (`read`) and after each save
    (`keep`); a store that was written by no one else meanwhile (it holds
    its lock) agrees."""

    def __init__(self) -> None:
        # (None: a row written unhashed, whose digest is not known)
        self._digests: dict[str, dict[int, bytes | None]] = {table: {} for table in FACT_TABLES}

    def changes(self, facts: FactsRows) -> RowChanges:
        """What saving `facts` writes: the rows given (of every row: those
        whose digest differs from the one kept), and the deletion of the
        rows kept that are gone (`facts.gone`; of every row: those not
        given)."""
        writes: dict[str, list[tuple[object, ...]]] = {}
        deletes: dict[str, list[int]] = {}
        digests: dict[str, dict[int, bytes | None]] = {}
        size = 0
        for table in FACT_TABLES:
            rows, kept = facts.tables[table], self._digests[table]
            if facts.gone is None:
                deletes[table] = sorted(kept.keys() - rows.keys())
                now = digests[table] = {key: _digest(data) for key, (_, data) in rows.items()}
                changed = [(key, row) for key, row in rows.items() if kept.get(key) != now[key]]
            else:
                deletes[table] = sorted(key for key in facts.gone[table] if key in kept)
                digests[table] = dict.fromkeys(rows)
                changed = list(rows.items())
            writes[table] = [(key, *plain, data) for key, (plain, data) in changed]
            size += sum(len(data) for _, (_, data) in changed)
        return RowChanges(facts.lobby, writes, deletes, digests, facts.gone is None, size)

    def keep(self, changes: RowChanges) -> None:
        if changes.whole:
            self._digests = changes.digests
            return
        for table, kept in self._digests.items():
            for key in changes.deletes[table]:
                del kept[key]
            kept.update(changes.digests[table])

    def read(
        self, execute: Callable[[str, tuple[object, ...]], Any], placeholder: str
    ) -> FactsRows | None:
        """The facts in the tables, through `execute` (a connection's), or
        None if there is no lobby's row (facts never saved as rows)."""
        row = execute("SELECT data FROM lobby WHERE id = 1", ()).fetchone()
        if row is None:
            return None
        tables: dict[str, dict[int, Row]] = {}
        for table, (key, plain) in FACT_TABLES.items():
            found = tables[table] = {}
            for key_value, *values, data in execute(
                f"SELECT {key}, {', '.join(plain)}, data FROM {table}", ()
            ):
                found[int(key_value)] = (
                    tuple(bytes(v) if isinstance(v, memoryview) else v for v in values),
                    bytes(data),
                )
            self._digests[table] = {k: _digest(data) for k, (_, data) in found.items()}
        return FactsRows(bytes(row[0]), tables)


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def each_record(
    execute: Callable[[str, tuple[object, ...]], Any], placeholder: str
) -> Iterator[tuple[str, bytes, float]]:
    """Each record kept (id, bytes, Unix time it finished), oldest first,
    read one at a time (records may be many) through `execute`, a
    connection's (SQLite's or PostgreSQL's: `placeholder`, its parameter)."""
    ids = [row[0] for row in execute("SELECT id FROM records ORDER BY finished, id", ())]
    for record_id in ids:
        row = execute(
            f"SELECT data, finished FROM records WHERE id = {placeholder}", (record_id,)
        ).fetchone()
        if row is not None:
            yield record_id, bytes(row[0]), float(row[1])


def read_records(database: Path) -> Iterator[tuple[str, bytes, float]]:
    """Each record kept in `database` (id, bytes, Unix time it finished),
    read without writing anything: a server may be running on it."""
    try:
        db = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open the database {database}: {exc}") from None
    try:
        yield from each_record(db.execute, "?")
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read the records of {database}: {exc}") from None
    finally:
        db.close()


def _lock(path: Path) -> IO[bytes]:
    """Hold `path` locked while the store is open: two servers writing one
    journal would each replay the other's inputs wrongly."""
    try:
        handle = open(path, "ab")  # noqa: SIM115  (held open: it is the lock)
    except OSError as exc:
        raise StoreError(
            f"cannot use the data directory {path.parent}: {exc.strerror} ({path.name})"
        ) from None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        raise StoreError(
            f"another server is using the data directory {path.parent}: stop it, or"
            " start this one with --data-dir set to another directory"
        ) from None
    return handle


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StoreError(f"the database could not be written: {exc}") from None

    def __exit__(self, kind: object, value: object, tb: object) -> None:
        try:
            self._db.execute("COMMIT" if kind is None else "ROLLBACK")
        except sqlite3.Error as exc:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise StoreError(f"the database could not be written: {exc}") from None
        if isinstance(value, sqlite3.Error):
            raise StoreError(f"the database could not be written: {value}") from None

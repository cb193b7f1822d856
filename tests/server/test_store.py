"""The SQLite store and the start of a server over its data directory."""

from __future__ import annotations

import contextlib
import sqlite3
import stat
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

import oriflamme.server.store as store_module
from oriflamme.protocol import messages as m
from oriflamme.server.core import ServerConfig
from oriflamme.server.core.journal import CLOSED, TICK, Entry
from oriflamme.server.persistence import DATABASE_FILE, KEY_FILE, restore, with_limits
from oriflamme.server.store import (
    MIGRATIONS,
    SCHEMA_VERSION,
    WAL_LIMIT,
    KeptRows,
    SqliteStore,
    StoreError,
    read_records,
)
from tests.deadlines import HANG
from tests.server.test_stores import record
from tests.stores import rows


def entries(n: int, start: int = 0) -> list[Entry]:
    return [Entry(TICK if i % 2 else CLOSED, f"1.{i}", float(i), None) for i in range(start, n)]


@pytest.mark.parametrize("rows", [1, 3, 500])
def test_a_batch_longer_than_a_statement_is_stored_whole_and_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rows: int
) -> None:
    monkeypatch.setattr("oriflamme.server.store.ROWS_A_STATEMENT", rows)
    path = tmp_path / "s.sqlite3"
    store = SqliteStore(path)
    batch = [Entry("data", f"1.{i}", i / 2, bytes([i % 256]) * i) for i in range(1001)]
    assert store.append(batch[:7]) == 7
    assert store.append(batch[7:]) == 1001
    store.close()
    store = SqliteStore(path)
    assert store.load() == (None, batch)
    store.close()


def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    path.write_bytes(b"this is not a database, but it is long enough to look like one" * 100)
    with pytest.raises(StoreError, match="cannot open the database"):
        SqliteStore(path)


def test_a_new_data_directory_gets_a_private_key_and_a_lobby_that_comes_back(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    config = ServerConfig(grace=30)
    first = restore(data, config)
    assert first.new and first.entries == 0
    assert stat.S_IMODE((data / KEY_FILE).stat().st_mode) == 0o600
    lobby = first.lobby
    hello = m.Hello(versions=(1,), client="test", name="Ann")
    lobby.hello("1.1", hello, 5.0)
    create = m.CreateRoom(
        id=1,
        settings=m.RoomSettings(
            players=3, variant="standard", edition="revised", first_player="random"
        ),
    )
    lobby.request("1.1", create, 6.0)
    first.store.append(lobby.take())
    first.store.close()

    second = restore(data, ServerConfig())  # other settings: those of the directory are kept
    assert not second.new and second.entries == 2
    assert second.lobby.config == config
    assert [r.name for r in second.lobby.rooms.values()] == [r.name for r in lobby.rooms.values()]
    assert second.lobby.last_time == 6.0
    second.store.close()


def test_a_damaged_key_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    restore(data, ServerConfig()).store.close()
    (data / KEY_FILE).write_bytes(b"short")
    with pytest.raises(StoreError, match="not 32 bytes"):
        restore(data, ServerConfig())


@pytest.mark.process
def test_serve_says_why_it_cannot_use_a_data_directory(tmp_path: Path) -> None:
    data = tmp_path / "data"
    restore(data, ServerConfig()).store.close()
    with sqlite3.connect(data / DATABASE_FILE) as db:
        db.execute("UPDATE meta SET value = 99 WHERE key = 'schema_version'")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "oriflamme.launcher.cli",
            "serve",
            "--port",
            "0",
            "--data-dir",
            str(data),
        ],
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    assert done.returncode == 2
    assert "written by a newer version of the server (schema 99)" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_abuse_limits_given_at_start_apply_to_a_kept_data_directory(tmp_path: Path) -> None:
    """The settings of a data directory are kept (they are part of its games),
    except the abuse limits, which are part of none: those given now apply,
    also to a directory written before they existed."""
    data = tmp_path / "data"
    first = restore(data, ServerConfig(grace=30, connections_per_address=64))
    first.store.close()
    second = restore(data, ServerConfig(connections_per_address=3, message_rate=5.0))
    assert second.lobby.config.grace == 30  # kept
    assert second.lobby.config.connections_per_address == 3  # given now
    assert second.lobby.config.message_rate == 5.0
    second.store.close()
    # A config pickled before the limits existed: its state lacks them.
    old = ServerConfig(grace=45)
    object.__delattr__(old, "message_rate")
    merged = with_limits(old, ServerConfig(message_rate=7.0))
    assert merged.grace == 45 and merged.message_rate == 7.0


def test_a_data_directory_that_cannot_be_made_is_said_plainly(tmp_path: Path) -> None:
    (tmp_path / "a file").write_text("x")
    with pytest.raises(StoreError, match="cannot use the data directory .*Not a directory"):
        restore(tmp_path / "a file" / "data", ServerConfig())


def test_the_journal_is_replayed_under_the_limits_it_was_taken_under(tmp_path: Path) -> None:
    """A server started again with stricter limits (shorter names) must not
    refuse, in its replay, what it accepted before: the journal's inputs
    are replayed under the settings they were taken under, and the new
    ones apply from then on (a snapshot says so at once)."""
    data = tmp_path / "data"
    first = restore(data, ServerConfig())
    lobby = first.lobby
    for conn, name in ((1, "A name of thirty characters ok"), (2, "Bob")):
        hello = m.Hello(versions=(1,), client="t/1", name=name, id=1)
        lobby.hello(conn, hello, 1.0)
    first.store.append(lobby.take())
    first.store.close()  # (killed: no snapshot after the hellos)
    second = restore(data, ServerConfig(name_length=20, strategies=("random", "ismcts")))
    assert sorted(s.name for s in second.lobby.sessions) == [
        "A name of thirty characters ok",
        "Bob",
    ]
    assert second.lobby.config.name_length == 20
    assert second.lobby.config.strategies == ("random", "ismcts")  # given now, like the limits
    second.store.close()
    third = restore(data, ServerConfig(name_length=20))  # the new snapshot holds both
    assert len(third.lobby.sessions) == 2 and third.entries == 0
    third.store.close()


def test_a_record_is_stored_with_the_entries_of_its_game_s_end_or_not_at_all(
    tmp_path: Path,
) -> None:
    store = SqliteStore(tmp_path / "s.sqlite3")
    try:
        store.append([Entry("hello", "c1", 1.0, b"a")], [record("ab", 10.0)])
        assert store.record("ab") == b"record ab"
        assert store.record("cd") is None
        # Kept once: the same record again (a replay) changes nothing.
        store.append([], [replace(record("ab", 99.0), data=b"other")])
        assert store.record("ab") == b"record ab"
        assert [r[0] for r in read_records(tmp_path / "s.sqlite3")] == ["ab"]
    finally:
        store.close()


def test_a_checkpoint_truncates_the_wal(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    wal = tmp_path / "s.sqlite3-wal"
    store = SqliteStore(path)
    try:
        for i in range(200):
            store.append([Entry("hello", f"c{i}", float(i), bytes(1000))])
        assert wal.stat().st_size > 100_000
        assert store.checkpoint() == 0
        assert wal.stat().st_size == 0
        store.append([Entry("hello", "c", 1.0, bytes(1000))])
        assert 0 < wal.stat().st_size < 100_000
        store.save_facts(rows(b"lobby"))
        assert store.load() == (rows(b"lobby"), [])
    finally:
        store.close()


def test_the_wal_stays_bounded_with_no_checkpoint_asked(tmp_path: Path) -> None:
    # Facts are stored every 1,000 entries without a checkpoint: SQLite's
    # own checkpoints and the size limit keep the WAL file bounded.
    wal = tmp_path / "s.sqlite3-wal"
    store = SqliteStore(tmp_path / "s.sqlite3")
    try:
        for i in range(300):
            store.append([Entry("hello", f"c{i}.{j}", float(i), bytes(4000)) for j in range(10)])
            if i % 30 == 0:
                store.save_facts(rows(b"lobby", sessions={i: (("Ann",), bytes(20_000))}))
        assert wal.stat().st_size <= WAL_LIMIT + (1 << 20)  # (12 MB went through it)
    finally:
        store.close()


def _database_of_schema(path: Path, version: int) -> None:
    """A database as a server of schema `version` left it: the migrations up
    to it, and no more."""
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("PRAGMA journal_mode=WAL")  # (as every server of them had it)
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)")
        for migration in MIGRATIONS[:version]:
            for statement in migration.sql:
                db.execute(statement)
        db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (version,))
        db.execute("INSERT INTO journal (seq, kind, conn, at) VALUES (1, 'tick', NULL, 1.0)")


def _tables_and_columns(path: Path) -> dict[str, list[str]]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {t: [r[1] for r in db.execute(f"PRAGMA table_info({t})")] for t in tables}


def test_the_migrations_are_numbered_one_after_another_from_1() -> None:
    assert [m.version for m in MIGRATIONS] == list(range(1, SCHEMA_VERSION + 1))
    assert [m.version for m in MIGRATIONS if m.converts] == [4, 5]


def test_migration_1_makes_the_journal_and_the_snapshot(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.sqlite3")  # (a new database: every migration)
    store.close()
    tables = _tables_and_columns(tmp_path / "s.sqlite3")
    assert tables["journal"][:5] == ["seq", "kind", "conn", "at", "data"]
    assert tables["snapshot"] == ["id", "data"]


def test_an_earlier_database_is_read_as_it_is_and_migrated_only_once_converted(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.sqlite3"
    _database_of_schema(path, 1)
    before = path.read_bytes()
    store = SqliteStore(path)
    try:  # (its journal has no digests: read as NULL)
        assert store.found_schema == 1 and store.meta("schema_version") == 1
        assert store.load() == (None, [Entry("tick", None, 1.0, None, None)])
    finally:
        store.close()
    assert path.read_bytes() == before  # (the version that wrote it can still read it)


def test_migration_2_changes_the_snapshot_s_format_only(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    _database_of_schema(path, 1)
    before = _tables_and_columns(path)
    store = SqliteStore(path)
    try:
        store.set_schema()  # (its snapshot converted)
        assert store.meta("schema_version") == SCHEMA_VERSION
        assert store.load()[1][0].kind == "tick"
    finally:
        store.close()
    assert set(before) <= set(_tables_and_columns(path))


def test_migration_3_adds_the_records_and_the_journal_s_digests(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    _database_of_schema(path, 2)
    assert "records" not in _tables_and_columns(path)
    store = SqliteStore(path)
    try:
        store.set_schema()
        assert store.meta("schema_version") == SCHEMA_VERSION
        assert store.load() == (None, [Entry("tick", None, 1.0, None, None)])  # digest: NULL
        assert store.record("ab") is None
    finally:
        store.close()
    tables = _tables_and_columns(path)
    assert "digest" in tables["journal"] and "finished" in tables["records"]


def test_migration_4_is_marked_once_the_snapshot_is_converted(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    _database_of_schema(path, 3)
    before = path.read_bytes()
    store = SqliteStore(path)
    assert store.found_schema == 3 and store.meta("schema_version") == 3
    store.close()
    assert path.read_bytes() == before  # (the earlier version can still read it, unchanged)
    store = SqliteStore(path)
    store.set_schema()  # (what `persistence.restore` does once it has converted it)
    assert store.meta("schema_version") == SCHEMA_VERSION
    store.close()


def test_migration_5_keeps_the_facts_in_tables_once_the_document_was_read(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.sqlite3"
    _database_of_schema(path, 4)
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("INSERT INTO snapshot (id, data) VALUES (1, ?)", (b"facts, one document",))
    before = path.read_bytes()
    store = SqliteStore(path)
    try:  # read as it is: the document, which `persistence.restore` reads
        assert store.load()[0] == b"facts, one document"
    finally:
        store.close()
    assert path.read_bytes() == before  # (the version that wrote it can still read it)
    assert "lobby" not in _tables_and_columns(path)
    store = SqliteStore(path)
    try:
        store.set_schema()  # (once the document was read)
        assert store.meta("schema_version") == SCHEMA_VERSION == 5
        assert store.load()[0] == b"facts, one document"  # (until rows are written)
        facts = rows(b"lobby", sessions={7: (("Ann",), b"ann")})
        store.save_facts(facts)
        assert store.load() == (facts, [])  # (the document is gone, and its journal)
    finally:
        store.close()
    tables = _tables_and_columns(path)
    assert tables["lobby"] == ["id", "data"]
    assert tables["sessions"] == ["player", "name", "data"]
    assert tables["rooms"] == ["room", "name", "state", "data"]
    assert tables["games"] == ["room", "game_id", "data"]
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT count(*) FROM snapshot").fetchone() == (0,)
        assert db.execute("SELECT player, name FROM sessions").fetchall() == [(7, "Ann")]


def test_a_save_writes_only_the_rows_that_changed() -> None:
    kept = KeptRows()
    first = rows(b"1", sessions={1: (("Ann",), b"a"), 2: (("Bob",), b"b")})
    changes = kept.changes(first)
    assert changes.writes["sessions"] == [(1, "Ann", b"a"), (2, "Bob", b"b")]
    kept.keep(changes)
    second = rows(b"2", sessions={2: (("Bob",), b"b2"), 3: (("Cy",), b"c")})
    changes = kept.changes(second)
    assert changes.writes["sessions"] == [(2, "Bob", b"b2"), (3, "Cy", b"c")]
    assert changes.deletes["sessions"] == [1]
    kept.keep(changes)
    assert kept.changes(second).writes == {"sessions": [], "rooms": [], "games": []}


def test_a_save_of_the_rows_that_changed_writes_them_all_unhashed() -> None:
    kept = KeptRows()
    kept.keep(kept.changes(rows(b"1", sessions={1: (("Ann",), b"a"), 2: (("Bob",), b"b")})))
    # (take_some's: the rows it gives changed, and the keys gone; one never
    # stored, made and gone between two takings, is no statement)
    since = replace(
        rows(b"2", sessions={2: (("Bob",), b"b")}),
        gone={"sessions": {1, 3}, "rooms": set(), "games": set()},
    )
    changes = kept.changes(since)
    assert changes.writes["sessions"] == [(2, "Bob", b"b")]  # (unchanged, yet written)
    assert changes.deletes["sessions"] == [1]
    kept.keep(changes)
    # A save of every row writes the one whose digest it does not know.
    changes = kept.changes(rows(b"3", sessions={2: (("Bob",), b"b")}))
    assert changes.writes["sessions"] == [(2, "Bob", b"b")]
    kept.keep(changes)
    assert kept.changes(rows(b"3", sessions={2: (("Bob",), b"b")})).writes["sessions"] == []


def test_a_migration_that_fails_leaves_the_database_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.sqlite3"
    _database_of_schema(path, 2)
    broken = replace(MIGRATIONS[2], sql=(*MIGRATIONS[2].sql, "CREATE TABLE records (x)"))
    monkeypatch.setattr(store_module, "MIGRATIONS", (*MIGRATIONS[:2], broken, MIGRATIONS[3]))
    store = SqliteStore(path)
    with pytest.raises(StoreError, match="could not be written"):
        store.set_schema()
    store.close()
    tables = _tables_and_columns(path)
    assert "records" not in tables and "digest" not in tables["journal"]
    monkeypatch.undo()
    store = SqliteStore(path)  # (and it goes, once the version that can migrate it runs)
    store.set_schema()
    assert store.meta("schema_version") == SCHEMA_VERSION
    store.close()

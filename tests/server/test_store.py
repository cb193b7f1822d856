"""The SQLite store and the start of a server over its data directory."""

from __future__ import annotations

import sqlite3
import stat
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from oriflamme.protocol import messages as m
from oriflamme.server.core import ServerConfig
from oriflamme.server.core.journal import CLOSED, TICK, Entry
from oriflamme.server.persistence import DATABASE_FILE, KEY_FILE, restore, with_limits
from oriflamme.server.store import (
    SCHEMA_VERSION,
    SqliteStore,
    StoredRecord,
    StoreError,
    read_records,
)
from tests.deadlines import HANG


def entries(n: int, start: int = 0) -> list[Entry]:
    return [Entry(TICK if i % 2 else CLOSED, f"1.{i}", float(i), None) for i in range(start, n)]


def test_entries_come_back_in_order_and_a_snapshot_drops_those_before_it(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    store = SqliteStore(path)
    store.append(entries(3))
    store.append(entries(5, start=3))
    store.close()
    store = SqliteStore(path)
    assert store.load() == (None, entries(5))
    store.save_snapshot(b"lobby")
    store.append(entries(7, start=5))
    store.close()
    store = SqliteStore(path)
    assert store.load() == (b"lobby", entries(7, start=5))
    assert [store.next_generation(), store.next_generation()] == [1, 2]
    store.close()


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


def test_a_database_from_a_newer_server_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    SqliteStore(path).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (SCHEMA_VERSION + 1,))
    with pytest.raises(StoreError, match="newer version of the server"):
        SqliteStore(path)


def test_a_database_from_an_older_server_is_read_and_marked_as_this_one_s_once_converted(
    tmp_path: Path,
) -> None:
    """Schema 1's journal reads the same; the database says it is this
    version's only once its snapshot was converted (`set_schema`): until
    then, the version that wrote it can still read it."""
    path = tmp_path / "s.sqlite3"
    store = SqliteStore(path)
    batch = entries(3)
    store.append(batch)
    store.close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = 1 WHERE key = 'schema_version'")
    store = SqliteStore(path)
    assert store.load() == (None, batch)
    assert store.found_schema == 1
    store.close()
    with sqlite3.connect(path) as db:
        (version,) = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    assert version == 1
    store = SqliteStore(path)
    store.set_schema()
    store.close()
    with sqlite3.connect(path) as db:
        (version,) = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    assert version == SCHEMA_VERSION == 4


def test_two_servers_cannot_share_a_data_directory(tmp_path: Path) -> None:
    first = SqliteStore(tmp_path / "s.sqlite3")
    with pytest.raises(StoreError, match="another server is using"):
        SqliteStore(tmp_path / "s.sqlite3")
    first.close()
    SqliteStore(tmp_path / "s.sqlite3").close()  # free again


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


def test_a_snapshot_drops_the_entries_it_covers_and_keeps_the_later_ones(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.sqlite3")
    try:
        first = [Entry("hello", "c1", 1.0, b"a"), Entry("request", "c1", 2.0, b"b")]
        assert store.append(first) == 2
        covered = store.append([])  # (nothing appended: the position stays)
        assert covered == 2
        later = [Entry("request", "c1", 3.0, b"c")]
        assert store.append(later) == 3  # stored while the snapshot was being made
        store.save_snapshot(b"lobby after 2", covers=covered)
        assert store.load() == (b"lobby after 2", later)
    finally:
        store.close()


def test_positions_are_not_reused_once_the_journal_is_empty(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.sqlite3")
    try:
        a = store.append([Entry("hello", "c1", 1.0, b"a")])
        store.save_snapshot(b"lobby 1", covers=a)  # the journal is empty now
        b = store.append([Entry("hello", "c2", 2.0, b"b")])
        # A snapshot started before that entry (covering up to `a`) keeps it.
        store.save_snapshot(b"lobby 1 again", covers=a)
        assert b > a and store.load() == (b"lobby 1 again", [Entry("hello", "c2", 2.0, b"b")])
    finally:
        store.close()
    again = SqliteStore(tmp_path / "s.sqlite3")
    try:  # a start goes on after the last position kept
        assert again.append([Entry("hello", "c3", 3.0, b"c")]) == b + 1
    finally:
        again.close()


def _record(record_id: str, finished: float) -> StoredRecord:
    return StoredRecord(
        id=record_id,
        data=b"record " + record_id.encode(),
        room=1,
        room_name="a table",
        names=("Ann", "Bob"),
        scores=(3, 4),
        winners=(1,),
        valid=True,
        finished=finished,
    )


def test_a_record_is_stored_with_the_entries_of_its_game_s_end_or_not_at_all(
    tmp_path: Path,
) -> None:
    store = SqliteStore(tmp_path / "s.sqlite3")
    try:
        store.append([Entry("hello", "c1", 1.0, b"a")], [_record("ab", 10.0)])
        assert store.record("ab") == b"record ab"
        assert store.record("cd") is None
        # Kept once: the same record again (a replay) changes nothing.
        store.append([], [replace(_record("ab", 99.0), data=b"other")])
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
        store.save_snapshot(b"snapshot")  # a snapshot truncates it too
        assert wal.stat().st_size == 0
        assert store.load() == (b"snapshot", [])
    finally:
        store.close()


def test_retention_deletes_only_the_records_older_than_it(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.sqlite3")
    try:
        store.append([], [_record("01", 100.0), _record("02", 200.0), _record("03", 300.0)])
        assert store.forget_records(before=200.0) == 1
        assert store.record("01") is None
        assert store.record("02") == b"record 02" and store.record("03") == b"record 03"
        assert store.forget_records(before=150.0) == 0
    finally:
        store.close()

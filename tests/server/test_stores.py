"""The same store tests against both stores: the data directory's SQLite
file and PostgreSQL (skipped, with the reason, where none is reachable)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

import oriflamme.server.store as store_module
from oriflamme.protocol import messages as m
from oriflamme.server.core import ServerConfig
from oriflamme.server.core.facts import FactsRows
from oriflamme.server.core.journal import CLOSED, TICK, Entry
from oriflamme.server.persistence import KEY_FILE, restore
from oriflamme.server.store import SCHEMA_VERSION, StoredRecord, StoreError
from tests.stores import Place, place, rows

__all__ = ["place"]  # (the fixture, for pytest)


def entries(n: int, start: int = 0) -> list[Entry]:
    return [
        Entry(TICK if i % 2 else CLOSED, f"1.{i}", float(i), None, bytes([i % 7]) * (i % 3))
        for i in range(start, n)
    ]


def record(record_id: str, finished: float) -> StoredRecord:
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


def test_entries_come_back_in_order_and_facts_drop_those_they_cover(place: Place) -> None:
    store = place.open()
    store.append(entries(3))
    store.append(entries(5, start=3))
    store.close()
    store = place.open()
    assert store.load() == (None, entries(5))
    store.save_facts(rows(b"lobby"))
    store.append(entries(7, start=5))
    store.close()
    store = place.open()
    assert store.load() == (rows(b"lobby"), entries(7, start=5))
    assert [store.next_generation(), store.next_generation()] == [1, 2]
    store.close()
    store = place.open()
    assert store.next_generation() == 3
    store.close()


def test_the_facts_rows_come_back_as_last_saved_and_gone_ones_are_deleted(
    place: Place,
) -> None:
    first = rows(
        b"lobby 1",
        sessions={1: (("Ann",), b"ann"), 2: (("Bob",), b"bob")},
        rooms={1: (("a table", "playing"), b"room 1")},
        games={1: ((b"game-1",), b"log of game 1")},
    )
    second = rows(
        b"lobby 2",
        sessions={1: (("Ann",), b"ann"), 2: (("Bob",), b"bob, later"), 3: (("Cy",), b"cy")},
        rooms={2: (("another", "waiting"), b"room 2")},
    )
    store = place.open()
    try:
        store.save_facts(first)
        assert store.load()[0] == first
        store.save_facts(second)
        assert store.load()[0] == second
    finally:
        store.close()
    again = place.open()
    try:  # (what the tables hold, not what the store kept in memory)
        assert again.load()[0] == second
        again.save_facts(first)  # (a start knows what the tables held: rows come back)
    finally:
        again.close()
    third = place.open()
    try:
        assert third.load()[0] == first
    finally:
        third.close()


def test_a_save_in_steps_shows_at_its_last_and_commits_go_on_between(place: Place) -> None:
    first = rows(b"lobby 1", sessions={1: (("Ann",), b"ann")})
    many = {p: (("p",), bytes([p % 256]) * 100) for p in range(1, 501)}
    second = rows(b"lobby 2", sessions=many, rooms={1: (("a table", "playing"), b"room 1")})
    store = place.open()
    try:
        store.save_facts(first)
        store.append([Entry("hello", "1.1", 1.0, b"a")])
        steps = store.facts_steps(second)
        for step in steps[:-1]:
            step()
            # (a commit between two steps; what a start reads: as it was)
            store.append([Entry("hello", "1.2", 2.0, b"b")])
            assert store.load()[0] == first
        steps[-1]()
        facts, entries = store.load()
        assert facts == second and entries == []  # (it covers what was stored)
        # A save left half-way wrote nothing. (The server stops then, as
        # for any store that fails: a save of the rows that changed since
        # would miss those; a start's first save has every row.)
        for step in store.facts_steps(first)[:-1]:
            step()
        assert store.load()[0] == second
        store.save_facts(rows(b"lobby 3", sessions={2: (("Bo",), b"bo")}))
        assert store.load()[0] == rows(b"lobby 3", sessions={2: (("Bo",), b"bo")})
    finally:
        store.close()


def test_facts_too_big_to_stage_are_written_at_once(
    place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "STAGE_BYTES", 10)
    first = rows(b"lobby 1", sessions={1: (("Ann",), b"ann")})
    big = rows(b"lobby 2", sessions={1: (("Ann",), b"ann"), 2: (("Bob",), b"b" * 11)})
    store = place.open()
    try:
        store.save_facts(first)
        small, steps = store.facts_steps(first), store.facts_steps(big)
        if place.kind == "sqlite":  # (PostgreSQL saves in one step, always)
            assert len(small) == 2  # (the staging emptied, then the lobby's row)
        assert len(steps) == 1  # (Bob's 11 bytes, at once)
        steps[0]()
        assert store.load()[0] == big
    finally:
        store.close()


def test_facts_of_the_rows_that_changed_keep_the_others_and_delete_the_gone(
    place: Place,
) -> None:
    whole = rows(
        b"lobby 1",
        sessions={1: (("Ann",), b"ann"), 2: (("Bob",), b"bob"), 3: (("Cy",), b"cy")},
        rooms={1: (("a table", "playing"), b"room 1")},
        games={1: ((b"game-1",), b"log of game 1")},
    )
    # Bob's row changed, Ann's did not (not given), Cy is gone; the room's
    # game changed.
    changed = replace(
        rows(
            b"lobby 2",
            sessions={2: (("Bob",), b"bob, later")},
            games={1: ((b"game-1",), b"log of game 1, longer")},
        ),
        gone={"sessions": {3}, "rooms": set(), "games": set()},
    )
    store = place.open()
    try:
        store.save_facts(whole)
        store.save_facts(changed)
    finally:
        store.close()
    again = place.open()
    try:
        assert again.load()[0] == rows(
            b"lobby 2",
            sessions={1: (("Ann",), b"ann"), 2: (("Bob",), b"bob, later")},
            rooms={1: (("a table", "playing"), b"room 1")},
            games={1: ((b"game-1",), b"log of game 1, longer")},
        )
        # A row gone that the store never held (made and gone between two
        # takings) deletes nothing else.
        unknown = replace(rows(b"lobby 3"), gone={"sessions": {9}, "rooms": set(), "games": set()})
        again.save_facts(unknown)
        facts = again.load()[0]
        assert isinstance(facts, FactsRows) and facts.lobby == b"lobby 3"
        assert facts.tables["sessions"].keys() == {1, 2}
    finally:
        again.close()


def test_a_batch_of_many_entries_is_stored_whole_and_in_order(place: Place) -> None:
    store = place.open()
    batch = [Entry("request", f"1.{i}", i / 2, bytes([i % 256]) * i) for i in range(1001)]
    assert store.append(batch[:7]) == 7
    assert store.append(batch[7:]) == 1001
    store.close()
    store = place.open()
    assert store.load() == (None, batch)
    store.close()


def test_facts_keep_the_entries_stored_after_the_position_they_cover(place: Place) -> None:
    store = place.open()
    try:
        a = store.append([Entry("hello", "c1", 1.0, b"a")])
        store.save_facts(rows(b"lobby 1"), covers=a)  # the journal is empty now
        b = store.append([Entry("hello", "c2", 2.0, b"b")])
        store.save_facts(rows(b"lobby 1 again"), covers=a)  # (taken before b was stored)
        loaded = store.load()
        assert b > a and loaded == (rows(b"lobby 1 again"), [Entry("hello", "c2", 2.0, b"b")])
    finally:
        store.close()
    again = place.open()
    try:  # a start goes on after the last position kept
        assert again.append([Entry("hello", "c3", 3.0, b"c")]) == b + 1
    finally:
        again.close()


def test_a_record_is_kept_once_and_read_from_another_thread(place: Place) -> None:
    import threading

    store = place.open()
    try:
        store.append([Entry("hello", "c1", 1.0, b"a")], [record("ab", 10.0)])
        got: list[bytes | None] = []
        reader = threading.Thread(target=lambda: got.append(store.record("ab")))
        reader.start()
        reader.join()
        assert got == [b"record ab"] and store.record("cd") is None
        store.append([], [replace(record("ab", 99.0), data=b"other")])  # (a replay's)
        assert store.record("ab") == b"record ab"
        assert store.record_ids() == {"ab"}
    finally:
        store.close()


def test_retention_deletes_only_the_records_older_than_it(place: Place) -> None:
    store = place.open()
    try:
        store.append([], [record("01", 100.0), record("02", 200.0), record("03", 300.0)])
        assert store.forget_records(before=200.0) == 1
        assert store.record("01") is None
        assert store.record("02") == b"record 02" and store.record("03") == b"record 03"
        assert store.forget_records(before=150.0) == 0
        assert store.checkpoint() >= 0
    finally:
        store.close()


def test_two_servers_cannot_share_a_store(place: Place) -> None:
    first = place.open()
    with pytest.raises(StoreError, match="another server is using"):
        place.open()
    first.close()
    place.open().close()  # free again


def test_a_store_of_a_newer_server_is_refused_with_a_clear_message(place: Place) -> None:
    place.open().close()
    place.execute("UPDATE meta SET value = %s WHERE key = 'schema_version'", SCHEMA_VERSION + 1)
    with pytest.raises(StoreError, match="newer version of the server"):
        place.open()


def test_a_store_of_an_earlier_schema_is_marked_as_this_one_s_only_once_converted(
    place: Place,
) -> None:
    store = place.open()
    assert store.found_schema is None  # (a new one)
    store.close()
    place.execute("UPDATE meta SET value = 3 WHERE key = 'schema_version'")
    store = place.open()
    assert store.found_schema == 3
    store.close()
    store = place.open()
    assert store.found_schema == 3
    store.set_schema()
    store.close()
    store = place.open()
    assert store.found_schema == SCHEMA_VERSION
    store.close()


def test_a_lobby_comes_back_from_the_store_and_another_key_is_refused(
    place: Place, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    first = restore(data, ServerConfig(grace=30), database=place.database)
    lobby = first.lobby
    lobby.hello("1.1", m.Hello(versions=(1,), client="test", name="Ann"), 5.0)
    settings = m.RoomSettings(
        players=3, variant="standard", edition="revised", first_player="random"
    )
    lobby.request("1.1", m.CreateRoom(id=1, settings=settings), 6.0)
    first.store.append(lobby.take())
    first.store.close()
    second = restore(data, ServerConfig(), database=place.database)
    try:
        assert not second.new and second.entries == 2
        assert [s.name for s in second.lobby.sessions] == ["Ann"]
        assert len(second.lobby.rooms) == 1 and second.lobby.config.grace == 30
    finally:
        second.store.close()
    # Another data directory with another key, on the same store: refused.
    other = tmp_path / "other"
    if place.database is None:
        other.mkdir()
        (other / "server.sqlite3").write_bytes((data / "server.sqlite3").read_bytes())
    with pytest.raises(StoreError, match="another key"):
        restore(other, ServerConfig(), database=place.database)
    # With the first one's key, it is the same server.
    (other / KEY_FILE).write_bytes((data / KEY_FILE).read_bytes())
    third = restore(other, ServerConfig(), database=place.database)
    try:
        assert [s.name for s in third.lobby.sessions] == ["Ann"]
    finally:
        third.store.close()

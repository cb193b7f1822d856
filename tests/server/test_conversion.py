"""A data directory of an earlier version (schema 3: a pickle of the lobby)
is converted to facts at the first start, or refused, unchanged, while a
game it began is in progress.

The earlier version's pickle is made here from a lobby whose referees kept
no log, as that version's did not (their `inputs` and `first_seats` are
the class defaults a pickle of then lacks); the upgrade from the real
earlier commit is tested in tests/network/test_upgrade.py."""

from __future__ import annotations

import pickle
import sqlite3
from pathlib import Path

import pytest

from oriflamme.protocol.verify import verify_record
from oriflamme.server.core.entropy import KeyedEntropy
from oriflamme.server.core.journal import JournaledLobby
from oriflamme.server.persistence import (
    DATABASE_FILE,
    KEY_FILE,
    EarlierGamesInProgress,
    is_pickle,
    restore,
)
from oriflamme.server.store import SCHEMA_VERSION, SqliteStore
from tests.server.test_facts import Kept
from tests.server.test_journal import CONFIG, KEY, players, round_of


def earlier_data_dir(data: Path, lobby: JournaledLobby, journal: list[object]) -> None:
    """`data` as the earlier version left it: its key, a pickle of `lobby`
    whose referees kept no log, the journal since, schema 3."""
    data.mkdir()
    (data / KEY_FILE).write_bytes(KEY)
    for room in lobby.rooms.values():
        if room.table is not None:
            referee = room.table.referee
            for name in ("inputs", "choices", "first_seats", "seed_at"):
                referee.__dict__.pop(name, None)
    store = SqliteStore(data / DATABASE_FILE)
    store.append(journal)  # type: ignore[arg-type]
    store.close()
    pickled = pickle.dumps(lobby, protocol=pickle.HIGHEST_PROTOCOL)
    with sqlite3.connect(data / DATABASE_FILE) as db:
        db.execute("INSERT INTO snapshot (id, data) VALUES (1, ?)", (pickled,))
        for table in ("lobby", "sessions", "rooms", "games"):  # (schema 5's)
            db.execute(f"DROP TABLE {table}")
        db.execute("UPDATE meta SET value = 3 WHERE key = 'schema_version'")


def schema(data: Path) -> tuple[int, bytes | None, int]:
    """The schema version, the snapshot of schemas 4 and before (None: no
    snapshot), and the rows of the facts' lobby table (schema 5)."""
    with sqlite3.connect(data / DATABASE_FILE) as db:
        (version,) = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        row = db.execute("SELECT data FROM snapshot").fetchone()
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master")}
        (lobbies,) = (
            db.execute("SELECT count(*) FROM lobby").fetchone() if "lobby" in tables else (0,)
        )
    return version, None if row is None else bytes(row[0]), lobbies


def test_with_a_game_in_progress_the_start_is_refused_and_nothing_changes(
    tmp_path: Path,
) -> None:
    world = Kept(seed=1)
    clients = players(world, 3, seed=1)
    world.run(lambda: round_of(clients[0]) >= 2)
    lobby = world.gateway.lobby
    assert isinstance(lobby, JournaledLobby)
    earlier_data_dir(tmp_path / "data", lobby, [])
    before = schema(tmp_path / "data")
    with pytest.raises(EarlierGamesInProgress) as refused:
        restore(tmp_path / "data", CONFIG)
    message = str(refused.value)
    assert "earlier version of the server (schema 3)" in message
    assert "1 game(s)" in message and "room 1" in message
    assert "Start the earlier version on this directory again" in message
    assert "Nothing was changed" in message
    assert schema(tmp_path / "data") == before  # (the earlier version can still read it)
    assert before[1] is not None and is_pickle(before[1]) and before[2] == 0


def test_with_no_game_in_progress_it_is_converted_once_and_play_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A game played to its end, then the same players at the same table,
    # ready for the next: the earlier version's directory, then this one's.
    world = Kept(seed=2)
    clients = players(world, 3, seed=2)
    world.run(lambda: bool(world.records))
    world.settle()
    lobby = world.gateway.lobby
    assert isinstance(lobby, JournaledLobby)
    players_before = {s.player: s.name for s in lobby.sessions}
    earlier_data_dir(tmp_path / "data", lobby, [])
    restored = restore(tmp_path / "data", CONFIG)
    try:
        assert "was converted" in caplog.text
        assert {s.player: s.name for s in restored.lobby.sessions} == players_before
        room = next(iter(restored.lobby.rooms.values()))
        assert room.table is None  # (the game over, begun without a log: its record is kept)
        assert [s.session.player for s in room.seats if s.session] == [
            c.state.player for c in clients
        ]
    finally:
        restored.store.close()
    version, snapshot, lobbies = schema(tmp_path / "data")
    assert version == SCHEMA_VERSION and snapshot is None and lobbies == 1  # (facts in rows)
    again = restore(tmp_path / "data", CONFIG)  # (facts now: nothing to convert)
    again.store.close()
    assert caplog.text.count("was converted") == 1
    assert verify_record(world.records[0].record).ok
    assert KeyedEntropy(KEY)  # (the directory's key is the world's)

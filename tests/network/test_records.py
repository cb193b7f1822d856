"""Finished games' records are kept in the server's database, in the same
transaction as the game's end: a record exists exactly when its game has
ended, whatever happens to the process or to the record files of old.
Record files of a data directory of before are imported at start;
`oriflamme export-records` writes them out again; `oriflamme backup`
copies them with the database; `--keep-records` deletes old ones. Every
test has a deadline."""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

from oriflamme.client.bots import Behaviour, Bot
from oriflamme.client.commands import download_record
from oriflamme.client.session import RequestRefused, Session, open_session, tcp
from oriflamme.launcher import cli
from oriflamme.protocol import messages as m
from oriflamme.protocol.record import decode_record
from oriflamme.protocol.verify import verify_record
from oriflamme.server.app import ServeOptions, serve
from oriflamme.server.backup import backup
from oriflamme.server.persistence import DATABASE_FILE
from tests.deadlines import GAME_HANG, HANG
from tests.network.server_process import ServerProcess
from tests.network.test_server_restart import game_over

pytestmark = pytest.mark.network

SAMPLES = Path(__file__).resolve().parents[2] / "docs" / "records"


def kept_records(data_dir: Path) -> dict[str, bytes]:
    """The records in the database of `data_dir`, read as an outsider would."""
    uri = f"file:{data_dir / DATABASE_FILE}?mode=ro"
    with sqlite3.connect(uri, uri=True) as db:
        return {i: bytes(d) for i, d in db.execute("SELECT id, data FROM records")}


def as_of_before(data_dir: Path) -> None:
    """Make the database of `data_dir` one of a server before records were
    kept in it (schema 2: its records were files)."""
    with sqlite3.connect(data_dir / DATABASE_FILE) as db:
        db.execute("UPDATE meta SET value = 2 WHERE key = 'schema_version'")
        db.execute("DELETE FROM meta WHERE key = 'records_imported'")
    db.close()


@asynccontextmanager
async def server(data_dir: Path, keep_records: float | None = None) -> AsyncIterator[int]:
    stop = trio.Event()
    options = ServeOptions(
        host="127.0.0.1",
        port=0,
        data_dir=data_dir,
        stop=stop,
        discovery=False,
        keep_records=keep_records,
    )
    async with trio.open_nursery() as nursery:
        yield await nursery.start(serve, options, None)  # (no bot host: no server bots)
        stop.set()


@pytest.mark.trio
async def test_a_record_is_stored_before_the_game_s_end_is_sent(tmp_path: Path) -> None:
    """Killed the moment a seat sees the game's end: the record is in the
    database already, and the server started again serves it."""
    server_process = ServerProcess(tmp_path / "data")
    with trio.fail_after(GAME_HANG):
        port = server_process.start()
        try:
            sessions = [
                Session(tcp("127.0.0.1", port), name, behaviour=Behaviour(Bot("random")))
                for name in ("Ann", "Bob", "Cid")
            ]
            ann = sessions[0]
            async with trio.open_nursery() as nursery:
                for s in sessions:
                    await nursery.start(s.run)
                await ann.request(m.CreateRoom(settings=m.RoomSettings.for_players(3)))
                assert ann.state.room is not None
                for s in sessions[1:]:
                    await s.request(m.JoinRoom(room=ann.state.room.room))
                for s in sessions:
                    await s.request(m.Ready(ready=True))
                await ann.request(m.StartGame())
                await ann.wait_until(lambda: game_over(ann), timeout=GAME_HANG)
                server_process.kill()  # no goodbye, no last write
                assert ann.state.game is not None and ann.state.game.end is not None
                record_id = ann.state.game.end.record_id
                for s in sessions:
                    s.close()
            kept = kept_records(server_process.data_dir)
            assert list(kept) == [record_id]
            assert verify_record(decode_record(kept[record_id])).ok
            assert not (server_process.data_dir / "records").exists()  # no file of its own
            port = server_process.start()
            served = await download_record("127.0.0.1", port, record_id)
            assert served == kept[record_id]
        finally:
            server_process.stop()


@pytest.mark.trio
async def test_record_files_of_before_are_imported_once_and_exported_again(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    with trio.fail_after(HANG):
        async with server(data):
            pass
        as_of_before(data)
        # Record files as a server before this one wrote them, a broken one among them
        files = data / "records"
        files.mkdir()
        names = ("honest-3-players", "honest-two-player", "ended-by-vote")
        samples = [SAMPLES / f"{name}.oriflamme" for name in names]
        ids = [format(i, "032x") for i in range(1, 4)]
        for record_id, sample in zip(ids, samples, strict=True):
            shutil.copyfile(sample, files / f"{record_id}.oriflamme")
        (files / f"{'f' * 32}.oriflamme").write_bytes(b"")  # (a power cut's 0-byte file)
        async with server(data) as port:
            served = await download_record("127.0.0.1", port, ids[0])
            assert served == samples[0].read_bytes()
        assert sorted(kept_records(data)) == ids
        # Imported: the files are no longer needed (and a second start imports nothing more)
        shutil.rmtree(files)
        async with server(data) as port:
            assert await download_record("127.0.0.1", port, ids[2]) == samples[2].read_bytes()
            async with open_session(tcp("127.0.0.1", port), "Ann") as ann:
                with pytest.raises(RequestRefused, match="no record"):
                    await ann.request(m.GetRecord(record_id="f" * 32))
            # Exported while the server runs: files `oriflamme verify` reads.
            out = tmp_path / "exported"
            code = await trio.to_thread.run_sync(cli.main, ["export-records", str(data), str(out)])
            assert code == 0
        assert sorted(p.name for p in out.iterdir()) == [f"{i}.oriflamme" for i in ids]
        for record_id, sample in zip(ids, samples, strict=True):
            exported = out / f"{record_id}.oriflamme"
            assert exported.read_bytes() == sample.read_bytes()
        assert cli.main(["verify", str(out / f"{ids[0]}.oriflamme")]) == 0
        # The backup has them: they are in the database.
        copied = backup(data, tmp_path / "copy")
        assert "records/" not in copied
        assert sorted(kept_records(tmp_path / "copy")) == ids
        assert cli.main(["export-records", str(tmp_path / "nothing"), str(out)]) == 2


@pytest.mark.trio
async def test_keep_records_deletes_only_the_records_older_than_it(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with trio.fail_after(HANG):
        async with server(data):
            pass
        as_of_before(data)
        files = data / "records"
        files.mkdir()
        sample = SAMPLES / "honest-3-players.oriflamme"
        for record_id, age_days in [("a1", 40), ("a2", 2), ("a3", 0)]:
            path = files / f"{record_id}.oriflamme"
            shutil.copyfile(sample, path)
            when = time.time() - age_days * 86400
            os.utime(path, (when, when))
        async with server(data, keep_records=30):  # imported (with their files' times), then kept
            pass
        assert sorted(kept_records(data)) == ["a2", "a3"]
        async with server(data, keep_records=1):
            pass
        assert sorted(kept_records(data)) == ["a3"]
        async with server(data):  # the default: all are kept
            pass
        assert sorted(kept_records(data)) == ["a3"]

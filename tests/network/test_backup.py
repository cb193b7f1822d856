"""`oriflamme backup`: a running server's data directory copied (SQLite's
online backup and the files), and a server started on the copy has the
state of the moment of the backup. Every test has a deadline."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

from oriflamme.client.commands import list_rooms
from oriflamme.client.session import open_session, tcp
from oriflamme.launcher import cli
from oriflamme.protocol import messages as m
from oriflamme.server.app import ServeOptions, serve
from oriflamme.server.backup import backup
from oriflamme.server.store import StoreError
from tests.deadlines import HANG

pytestmark = pytest.mark.network


@asynccontextmanager
async def server(data_dir: Path) -> AsyncIterator[int]:
    stop = trio.Event()
    options = ServeOptions(host="127.0.0.1", port=0, data_dir=data_dir, stop=stop, discovery=False)
    async with trio.open_nursery() as nursery:
        yield await nursery.start(serve, options, None)  # (no bot host: no server bots)
        stop.set()


@pytest.mark.trio
async def test_a_backup_taken_while_the_server_runs_starts_a_server_as_it_was(
    tmp_path: Path,
) -> None:
    data, copy = tmp_path / "data", tmp_path / "copy"
    with trio.fail_after(HANG):
        async with server(data) as port, open_session(tcp("127.0.0.1", port), "Ann") as ann:
            settings = m.RoomSettings.for_players(3)
            await ann.request(m.CreateRoom(settings=settings, name="before the backup"))
            # A record readable by all (as an admin may have left it to share it)
            records = data / "records"
            records.mkdir(exist_ok=True)
            (records / "shared.oriflamme").write_bytes(b"a record")
            (records / "shared.oriflamme").chmod(0o644)
            records.chmod(0o755)
            copied = await trio.to_thread.run_sync(backup, data, copy)
            await ann.request(m.LeaveRoom())
            await ann.request(m.CreateRoom(settings=settings, name="after the backup"))
        assert copied[:2] == ["server.sqlite3", "secret.key"]
        # Everything in the copy is its owner's alone, whatever the source's modes.
        assert (copy / "records" / "shared.oriflamme").read_bytes() == b"a record"
        for path in [copy, *copy.rglob("*")]:
            assert path.stat().st_mode & 0o077 == 0, path
        async with server(copy) as port:
            rooms = await list_rooms("127.0.0.1", port)
        assert [r.name for r in rooms.rooms] == ["before the backup"]


def test_a_backup_refuses_what_it_cannot_do(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="holds no server data"):
        backup(tmp_path / "nothing", tmp_path / "copy")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "server.sqlite3").write_bytes(b"")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "something").write_text("x")
    with pytest.raises(StoreError, match="not empty"):
        backup(tmp_path / "data", tmp_path / "full")
    assert cli.main(["backup", str(tmp_path / "nothing"), str(tmp_path / "c")]) == 2

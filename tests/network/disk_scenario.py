"""A server whose disk fills up, or whose data directory is read-only: run
inside a private mount namespace by `test_disk.py`, over a real filesystem
of its own (a small tmpfs mounted at MOUNT), and prints what it saw as JSON.

    python -m tests.network.disk_scenario full|read-only|inodes MOUNT LOG

`full`: a game is played until round 2; the filesystem is then filled to
the last byte. The server must stop with a clear message, and nothing it
stored may be damaged: once space is freed, the same data directory starts
again and the game goes on to its end, verified by every seat.

`read-only`: a server that stored a room is stopped; the filesystem is
remounted read-only. The server must refuse to start, with a clear message,
and change nothing; remounted read-write, it starts with the room.

`inodes`: the filesystem runs out of inodes (files) while the server runs,
with room left for bytes: SQLite goes on, no new file can be made. A game
is played to its end meanwhile; room is made, the server is stopped cleanly
and started again: the game's record is served, and verifies. (A server
that kept records as files lost them so: never written, and the clean
stop's snapshot dropped the journal that could have made them again.)
"""

from __future__ import annotations

import errno
import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import trio

from oriflamme.client.bots import Behaviour, Bot
from oriflamme.client.commands import download_record, list_rooms
from oriflamme.client.session import Session, tcp
from oriflamme.protocol import messages as m
from oriflamme.protocol.record import decode_record
from oriflamme.protocol.verify import verify_record
from oriflamme.server.persistence import DATABASE_FILE
from tests.deadlines import GAME_HANG, HANG
from tests.network.server_process import ServerProcess
from tests.network.test_server_restart import game_over, round_of

PLAYERS = 3


def integrity(data_dir: Path, *, immutable: bool = False) -> str:
    """SQLite's own check of the database, read without writing anything
    (`immutable`: on a read-only filesystem, where not even its shared
    memory file can be made; the server stopped cleanly, so the WAL is empty)."""
    uri = f"file:{data_dir / DATABASE_FILE}?mode=ro" + ("&immutable=1" if immutable else "")
    with sqlite3.connect(uri, uri=True) as db:
        return str(db.execute("PRAGMA integrity_check").fetchone()[0])


def fill(mount: Path) -> int:
    """Write to `mount` until no byte more fits; the bytes written."""
    written = 0
    chunk = bytes(16384)
    with open(mount / "filler", "wb", buffering=0) as filler:
        try:
            while True:
                written += filler.write(chunk)
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
    return written


async def wait_for_exit(server: ServerProcess) -> int | None:
    """The server's exit status once it exits (None if it hangs)."""
    assert server.process is not None
    with trio.move_on_after(HANG):
        while server.process.poll() is None:
            await trio.sleep(0.05)
    return server.process.poll()


async def full(mount: Path, log: Path) -> dict[str, Any]:
    server = ServerProcess(mount / "data", log_path=log)
    port = server.start()
    ann = Session(tcp("127.0.0.1", port), "Ann", behaviour=Behaviour(Bot("heuristic")))
    seen: dict[str, Any] = {}
    async with trio.open_nursery() as nursery:
        await nursery.start(ann.run)
        settings = m.RoomSettings(
            players=PLAYERS, variant="standard", edition="revised", first_player="host"
        )
        await ann.request(m.CreateRoom(settings=settings))
        for strategy in ("heuristic", "random"):
            await ann.request(m.AddBot(strategy=strategy))
        await ann.request(m.Ready(ready=True))
        await ann.request(m.StartGame())
        await ann.wait_until(lambda: round_of(ann) >= 2)
        seen["filled_bytes"] = fill(mount)
        seen["exit_status"] = await wait_for_exit(server)
        seen["round_when_stopped"] = round_of(ann)
        seen["over_when_stopped"] = game_over(ann)
        seen["log"] = server.log()
        (mount / "filler").unlink()
        seen["integrity"] = integrity(server.data_dir)
        server.start()
        await ann.wait_until(lambda: game_over(ann), timeout=HANG)
        seen["checks"] = [v.status for v in ann.state.game.check_end()]
        seen["problems"] = list(ann.state.problems)
        ann.close()
    server.stop()
    seen["restarted_log"] = server.log()
    return seen


async def read_only(mount: Path, log: Path) -> dict[str, Any]:
    server = ServerProcess(mount / "data", log_path=log)
    port = server.start()
    ann = Session(tcp("127.0.0.1", port), "Ann")
    async with trio.open_nursery() as nursery:
        await nursery.start(ann.run)
        settings = m.RoomSettings(
            players=PLAYERS, variant="standard", edition="revised", first_player="host"
        )
        await ann.request(m.CreateRoom(settings=settings, name="kept"))
        ann.close()
    seen: dict[str, Any] = {"stopped": server.terminate()}
    before = {p.name: p.read_bytes() for p in server.data_dir.iterdir() if p.is_file()}
    subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
    try:
        server.start()
        seen["started"] = True
    except AssertionError:
        seen["started"] = False
    seen["exit_status"] = await wait_for_exit(server)
    seen["log"] = server.log()
    after = {p.name: p.read_bytes() for p in server.data_dir.iterdir() if p.is_file()}
    seen["unchanged"] = before == after
    seen["integrity"] = integrity(server.data_dir, immutable=True)
    subprocess.run(["mount", "-o", "remount,rw", str(mount)], check=True)
    port = server.start()
    rooms = await list_rooms("127.0.0.1", port)
    seen["rooms"] = [room.name for room in rooms.rooms]
    server.stop()
    return seen


def use_every_inode(mount: Path) -> int:
    """Make empty files in `mount` until no file more can be made; how many."""
    filler = mount / "inodes"
    filler.mkdir()
    made = 0
    try:
        while True:
            (filler / str(made)).touch()
            made += 1
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            raise
    return made


async def inodes(mount: Path, log: Path) -> dict[str, Any]:
    server = ServerProcess(mount / "data", log_path=log)
    port = server.start()
    seen: dict[str, Any] = {"files_made": use_every_inode(mount)}
    sessions = [
        Session(tcp("127.0.0.1", port), name, behaviour=Behaviour(Bot("random")))
        for name in ("Ann", "Bob", "Cid")
    ]
    ann = sessions[0]
    async with trio.open_nursery() as nursery:
        for s in sessions:
            await nursery.start(s.run)
        settings = m.RoomSettings(
            players=PLAYERS, variant="standard", edition="revised", first_player="host"
        )
        await ann.request(m.CreateRoom(settings=settings))
        assert ann.state.room is not None
        for s in sessions[1:]:
            await s.request(m.JoinRoom(room=ann.state.room.room))
        for s in sessions:
            await s.request(m.Ready(ready=True))
        await ann.request(m.StartGame())
        await ann.wait_until(lambda: game_over(ann), timeout=HANG)
        assert ann.state.game is not None and ann.state.game.end is not None
        record_id = ann.state.game.end.record_id
        for s in sessions:
            s.close()
    seen["still_full"] = _no_inode_left(mount)
    for path in (mount / "inodes").iterdir():
        path.unlink()
    seen["stopped"] = server.terminate()
    server.start()
    data = await download_record("127.0.0.1", server.port, record_id)
    seen["verified"] = verify_record(decode_record(data)).ok
    server.stop()
    seen["log"] = server.log()
    return seen


def _no_inode_left(mount: Path) -> bool:
    try:
        (mount / "probe").touch()
    except OSError as exc:
        return exc.errno == errno.ENOSPC
    (mount / "probe").unlink()
    return False


def main() -> None:
    scenario, mount, log = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    run = {"full": full, "read-only": read_only, "inodes": inodes}[scenario]

    async def within_deadline() -> dict[str, Any]:
        # (a hang only: a scenario starts servers several times, waiting for each)
        with trio.fail_after(GAME_HANG):
            return await run(mount, log)

    print(json.dumps(trio.run(within_deadline)))


if __name__ == "__main__":
    main()

"""Snapshots of the lobby pickled by a forked child (`server.snapshots`), and
a server that takes them while its games go on: whatever is restored from
its data directory is the lobby as it was.
"""

from __future__ import annotations

import logging
import os
import pickle
import signal
import socket
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest
import trio
import trio.testing

import oriflamme.server.net as net_module
from oriflamme.protocol import messages as m
from oriflamme.protocol.verify import verify_record
from oriflamme.server import snapshots
from oriflamme.server.core import GameFinished, Gateway, Lobby, ServerConfig
from oriflamme.server.core.journal import Entry, JournaledLobby
from oriflamme.server.net import NetServer
from oriflamme.server.persistence import restore
from oriflamme.server.snapshots import SnapshotFailed, SnapshotJob, start_snapshot
from oriflamme.server.store import SqliteStore, StoreError
from tests.deadlines import GAME_HANG, HANG, until
from tests.network.test_sessions import gated, memory_connector, player, seat_three

pytestmark = [
    pytest.mark.network,
    pytest.mark.process,
    pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here"),
]

HELD = 10 * HANG  # seconds a `Held` waits at most: past any test's end


class Held:
    """Pickled, says so and waits to be let go: the process that pickles it
    (a snapshot's child, which by then has set its signals, its death with
    the server and its priority) makes the file `pickling` in `where`, then
    waits until the test makes `go` there (`HELD` seconds at most). It is
    pickled as the string "let go" if it was, else "never let go"."""

    def __init__(self, where: Path) -> None:
        self.where = where

    @property
    def pickling(self) -> bool:
        """Whether a process is pickling it (or has)."""
        return (self.where / "pickling").exists()

    def let_go(self) -> None:
        (self.where / "go").touch()

    def __reduce__(self) -> tuple[object, ...]:
        (self.where / "pickling").touch()
        given_up = time.monotonic() + HELD
        while not (let_go := (self.where / "go").exists()) and time.monotonic() < given_up:
            time.sleep(0.01)
        return (str, ("let go" if let_go else "never let go",))


def alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie, dead but not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:  # (gone meanwhile; or no /proc here)
        return not Path("/proc/self").exists()


def reaped(pid: int) -> bool:
    """Whether process `pid` is gone, zombie and all."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def unpickled(file: object) -> object:
    file.seek(0)  # type: ignore[attr-defined]
    return pickle.load(file)  # type: ignore[arg-type]


@pytest.mark.trio
async def test_a_child_pickles_the_lobby_and_the_server_makes_none_of_it() -> None:
    lobby = {"sessions": [{"player": i, "name": f"p{i}", "seq": i * 3} for i in range(50_000)]}
    with trio.fail_after(HANG), tempfile.TemporaryFile() as file:
        tracemalloc.start()
        try:
            job = start_snapshot(lobby, file)
            assert job.pid is not None
            pid = job.pid
            saved = await job.wait()
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        size = saved.seek(0, os.SEEK_END)
        assert unpickled(saved) == lobby
        # Pickled here, the output alone would be `size` bytes, and the memo as much again.
        assert size > 1_000_000 and peak < size / 10
        with pytest.raises(ChildProcessError):  # reaped already: no zombie left
            os.waitpid(pid, os.WNOHANG)


@pytest.mark.trio
async def test_a_lobby_that_cannot_be_pickled_fails_the_snapshot_with_why() -> None:
    with trio.fail_after(HANG), tempfile.TemporaryFile() as file:
        job = start_snapshot({"bad": lambda: None}, file)
        with pytest.raises(SnapshotFailed, match="could not be pickled|failed: .*lambda"):
            await job.wait()


@pytest.mark.trio
async def test_cancelled_the_child_is_killed_and_reaped(tmp_path: Path) -> None:
    with trio.fail_after(HANG), tempfile.TemporaryFile() as file:
        held = Held(tmp_path)  # (never let go: only the kill ends the child)
        job = start_snapshot(held, file)
        pid = job.pid
        assert pid is not None
        await until(lambda: held.pickling)
        with trio.move_on_after(0.3):
            await job.wait()
        assert job.pid is None
        # Killed at once, but on a busy machine it may take its time to go:
        # then a thread of the server's reaps it.
        await until(partial(reaped, pid))
        with pytest.raises(ChildProcessError):  # no zombie left
            os.waitpid(pid, os.WNOHANG)


@pytest.mark.trio
async def test_ctrl_c_and_sigterm_do_not_stop_the_child_the_server_decides(
    tmp_path: Path,
) -> None:
    with trio.fail_after(HANG), tempfile.TemporaryFile() as file:
        held = Held(tmp_path)
        job = start_snapshot([held, "rest"], file)
        assert job.pid is not None
        await until(lambda: held.pickling)  # (its signals set: it is pickling)
        os.kill(job.pid, signal.SIGINT)
        os.kill(job.pid, signal.SIGTERM)
        held.let_go()
        saved = await job.wait()
        # Let go after both signals, and the rest pickled after that.
        assert unpickled(saved) == ["let go", "rest"]


@pytest.mark.trio
async def test_a_connection_the_server_closes_closes_while_a_child_pickles(
    tmp_path: Path,
) -> None:
    ours, theirs = socket.socketpair()
    with tempfile.TemporaryFile() as file, theirs:
        job = start_snapshot(Held(tmp_path), file)  # (never let go)
        try:
            ours.close()  # the child had it too: it closed its copy at once
            theirs.settimeout(HANG)
            assert theirs.recv(1) == b""  # (a child holding it would time out)
            assert job.pid is not None and alive(job.pid)  # (and it closed it long before its end)
        finally:
            job.close()


KILLED_MID_SNAPSHOT = """
import os, signal, sys, tempfile, time
from pathlib import Path
from tests.network.test_snapshots import Held
from oriflamme.server.snapshots import start_snapshot
held = Held(Path(sys.argv[1]))  # (never let go)
job = start_snapshot(held, tempfile.TemporaryFile())
print(job.pid, flush=True)
while not held.pickling:  # (then it has set itself to die with its parent)
    time.sleep(0.01)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_server_killed_while_a_child_pickles_leaves_no_child(tmp_path: Path) -> None:
    if not Path("/proc/self").exists():
        pytest.skip("the child's death with its parent is Linux's (prctl)")
    server = subprocess.run(
        [sys.executable, "-c", KILLED_MID_SNAPSHOT, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=HANG,
        cwd=Path(__file__).parents[2],
    )
    assert server.returncode == -signal.SIGKILL, server.stderr
    child = int(server.stdout.split()[0])
    # It dies with its parent (left alone, it would wait `HELD` seconds to be let go).
    deadline = time.monotonic() + HANG
    try:
        while alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(child)
    finally:
        if alive(child):
            os.kill(child, signal.SIGKILL)


@pytest.mark.trio
async def test_a_child_killed_fails_the_snapshot(tmp_path: Path) -> None:
    with trio.fail_after(HANG), tempfile.TemporaryFile() as file:
        job = start_snapshot(Held(tmp_path), file)  # (never let go)
        assert job.pid is not None
        os.kill(job.pid, signal.SIGKILL)
        with pytest.raises(SnapshotFailed, match="killed by signal 9"):
            await job.wait()


@pytest.mark.trio
async def test_no_fork_to_be_had_pickles_in_process(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def no_fork() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", no_fork)
    with trio.fail_after(HANG), tempfile.TemporaryFile() as file:
        job = start_snapshot({"rooms": 2}, file)
        assert job.pid is None
        assert unpickled(await job.wait()) == {"rooms": 2}
    assert "cannot fork to pickle the lobby" in caplog.text


# ---------------------------------------------------------------- in a server


def seen(lobby: Lobby) -> dict[int, object]:
    """What each session was told (every push kept), and where it sits."""
    return {
        player: (
            session.last_seq,
            session.room,
            session.seat,
            [m.to_data(push) for push in session.kept()],
        )
        for player, session in lobby.sessions.by_player.items()
    }


# Timers no test here reaches: the players may be held back while a child,
# at a lower priority than whatever loads the machine, pickles a snapshot;
# the server must not answer for a seat, nor drop a connection, meanwhile.
CONFIG = ServerConfig(reply_timer=HANG, grace=2 * HANG, idle_timeout=int(2 * HANG))


async def a_game_then_a_chat_line(
    data_dir: Path, hold: Callable[[NetServer], bool] | None = None
) -> tuple[JournaledLobby, int, list[GameFinished]]:
    """Three random bots play a game on a server of `data_dir`, a snapshot due
    every 7 inputs; once every snapshot started meanwhile is saved (or has
    failed), one more input (a chat line) follows; then the server stops,
    as if killed: nothing more is saved. The lobby as it was, the position
    of its last journal entry, the records. `hold`: the players send nothing
    while it says so of the server."""
    restored = restore(data_dir, CONFIG)
    records: list[GameFinished] = []
    net = NetServer(
        Gateway(restored.lobby), store=restored.store, on_record=records.append, snapshot_every=7
    )
    try:
        with trio.fail_after(GAME_HANG):  # (a game, children forked every few inputs)
            async with trio.open_nursery() as nursery:
                await nursery.start(net.run)
                connect = memory_connector(net, nursery)
                if hold is not None:
                    connect = gated(connect, partial(hold, net))
                sessions = [player(connect, f"p{i}", i) for i in range(3)]
                await seat_three(nursery, sessions, timer=None)
                await sessions[0].wait_until(lambda: bool(records))
                while net._snapshot_jobs:  # (saved, or failed and logged)
                    await trio.sleep(0.05)
                await sessions[0].request(m.Chat(text="after the last snapshot"))
                nursery.cancel_scope.cancel()
        return restored.lobby, restored.store.append([]), records
    finally:
        restored.store.close()


def slow_children(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    """Children that take `seconds` more to pickle: the game goes on meanwhile."""
    server = os.getpid()
    pickle_into = snapshots._pickle_into

    def slowly(lobby: object, file: object) -> None:
        if os.getpid() != server:
            time.sleep(seconds)
        pickle_into(lobby, file)  # type: ignore[arg-type]

    monkeypatch.setattr(snapshots, "_pickle_into", slowly)


@pytest.mark.trio
async def test_snapshots_taken_while_a_game_goes_on_restore_the_lobby_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # A snapshot every few inputs, each pickled by a slow child while later
    # inputs are stored: a snapshot that dropped them, or kept one it covers,
    # would restore another lobby.
    slow_children(monkeypatch, 0.05)
    caplog.set_level(logging.DEBUG, logger="oriflamme")
    # Each snapshot must cover exactly the entries the core had taken when it
    # forked: what the store is told, against what the core did.
    taken = [0]
    take = JournaledLobby.take

    def counted_take(lobby: JournaledLobby) -> list[Entry]:
        entries = take(lobby)
        taken[0] += len(entries)
        return entries

    forked_after: list[int] = []

    def counted_start(lobby: object, file: object) -> SnapshotJob:
        forked_after.append(taken[0])
        return start_snapshot(lobby, file)  # type: ignore[arg-type]

    covered: list[int | None] = []
    save = SqliteStore.save_snapshot

    def recorded_save(store: SqliteStore, snapshot: object, covers: int | None = None) -> None:
        covered.append(covers)
        save(store, snapshot, covers)  # type: ignore[arg-type]

    def held(net: NetServer) -> bool:
        # Once the server has taken an input since a child forked, the players
        # wait for that snapshot to be saved: every snapshot has later inputs
        # stored while its child pickles, and the game cannot end before it
        # has had a snapshot every few inputs, however slow the children are.
        return bool(net._snapshot_jobs) and taken[0] > forked_after[-1]

    monkeypatch.setattr(JournaledLobby, "take", counted_take)
    monkeypatch.setattr(net_module, "start_snapshot", counted_start)
    monkeypatch.setattr(SqliteStore, "save_snapshot", recorded_save)
    live, journaled, records = await a_game_then_a_chat_line(tmp_path / "data", held)
    covered = covered[1:]  # (the first: the new data directory's lobby)
    children = caplog.text.count("pickled by a child process")
    assert children >= 2 and "snapshot not saved" not in caplog.text
    # (the last one may have been on its way when the server stopped)
    assert covered == forked_after[: len(covered)] and len(forked_after) - len(covered) <= 1
    assert verify_record(records[0].record).ok

    again = restore(tmp_path / "data", CONFIG)
    try:
        # The last snapshot, and what came after it (the chat line at least).
        assert 0 < again.entries < journaled
        assert seen(again.lobby) == seen(live)
        assert list(again.lobby.finished) == list(live.finished)
    finally:
        again.store.close()


@pytest.mark.trio
async def test_a_snapshot_that_fails_is_skipped_and_a_start_replays_every_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def killed_at_once(lobby: object, file: object) -> SnapshotJob:
        job = start_snapshot(lobby, file)  # type: ignore[arg-type]
        assert job.pid is not None
        os.kill(job.pid, signal.SIGKILL)  # (the out-of-memory killer, say)
        return job

    # Children that would take `HELD` seconds: the kill always comes first (a
    # small lobby is pickled and saved in less time than the parent takes to
    # kill it).
    slow_children(monkeypatch, HELD)
    monkeypatch.setattr(net_module, "start_snapshot", killed_at_once)
    live, journaled, records = await a_game_then_a_chat_line(tmp_path / "data")
    assert journaled > 7 * 3  # (snapshots were due several times)
    assert "snapshot not saved (the journal keeps every input)" in caplog.text
    assert "killed by signal 9 (out of memory?)" in caplog.text
    assert verify_record(records[0].record).ok
    again = restore(tmp_path / "data", CONFIG)
    try:
        assert again.entries == journaled  # every input: no snapshot was saved
        assert seen(again.lobby) == seen(live)
    finally:
        again.store.close()


class NoRoomForSnapshots:
    """A store whose disk has room for the journal, not for a snapshot file."""

    def __init__(self, store: object) -> None:
        self.store = store

    def __getattr__(self, name: str) -> object:
        return getattr(self.store, name)

    def snapshot_file(self) -> object:
        raise StoreError("cannot make a file for a snapshot in /data: No space left on device")


@pytest.mark.trio
async def test_a_snapshot_file_that_cannot_be_made_does_not_hold_up_a_stop(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    restored = restore(tmp_path / "data", CONFIG)
    net = NetServer(Gateway(restored.lobby), store=NoRoomForSnapshots(restored.store))  # type: ignore[arg-type]
    try:
        # Told at once: a stop that waited for its grace period would not end in time.
        with trio.fail_after(HANG):
            async with trio.open_nursery() as nursery:
                await nursery.start(net.run)
                await net.shut_down(grace=100 * HANG)
        assert "snapshot not made" in caplog.text and "No space left" in caplog.text
    finally:
        restored.store.close()


@pytest.mark.trio
async def test_no_pipe_to_be_had_fails_the_snapshot_and_nothing_else(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_pipe() -> tuple[int, int]:
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(os, "pipe", no_pipe)
    with trio.fail_after(HANG), tempfile.TemporaryFile() as file:
        job = start_snapshot({"rooms": 1}, file)
        with pytest.raises(SnapshotFailed, match="no pipe .*Too many open files"):
            await job.wait()
        job.close()

"""A power cut, for real: nothing the players were told before it is lost.

The server claims that every accepted decision is on the disk (SQLite
``synchronous=FULL``: fsync'd) before anything about it is sent, and that
a finished game's record is written in the same transaction as its end. A
killed process (`test_server_restart.py`) cannot test that: what it wrote
is in the kernel's page cache, which outlives the process. A power cut
loses the page cache; this test makes one.

How it works (`loop_disk.py` does the disk's part; it needs root,
`losetup`, `mkfs.ext4`, `e2fsck` and `mount`, and the test is skipped,
saying why, where any is missing or a loop device cannot be attached and
mounted):

1. An ext4 filesystem is made in a small image file, attached to a loop
   device and mounted; `oriflamme serve` runs as a process with its data
   directory there. The loop device writes what the filesystem sends it
   into the image file, so the image file is the disk: it holds what was
   written back or fsync'd, and not what is only in the page cache of the
   mounted filesystem (the kernel writes that back after 30 s or so).
2. Twelve players (bots, client sessions over TCP on 127.0.0.1) play in
   four rooms. Room A plays a game to its end, and its record is
   downloaded. Room B plays a game; halfway through, rooms C and D start
   theirs. The moment B's host sees its game end, the server is stopped
   (SIGSTOP: it is the only writer), so that the decisions checked are
   the last ones before the cut: B's end, and C's and D's latest moves,
   which no writeback can have reached.
3. Once the players have read what the server had sent them, what each
   had been told is noted: its game, the events of it it had seen, the
   pending decision's number, whether it saw the end. The image is then
   copied, without any sync, freeze or unmount first: what is only in the
   page cache must stay out of the copy, as a power cut loses it. The
   kernel may still be writing to the disk meanwhile (its writeback, the
   ext4 journal's commits), and a copy taken across a write would be a
   disk that never was. So the image is copied twice in a row, until two
   consecutive copies are the same byte for byte: no write landed while
   the first of them was made, and it is the disk as it was at one moment,
   as a power cut at that moment leaves it. Then the server is killed,
   and the disk unmounted and detached.
4. The copy gets `e2fsck` (as a machine does when it starts again: the
   ext4 journal is replayed), is mounted in place of the disk on a new
   loop device, and the server is started on it, on the same port. Before
   any player is back (they are held), the server is asked: A's and B's
   records must be served, and C's and D's games, seen by a spectator,
   must be at or past the point each of their players had been told of.
   (The players alone could not tell: a server behind them may resume
   them with pushes of its own under the numbers they last saw, and the
   game would then wait for ever.) Then the players come back by
   themselves and resume; from the cut on, every message their mirrors
   take is checked against what they had been told (their game gone,
   fewer events, an earlier decision, an end undone, a notice that the
   server went back). C and D must finish, and every record verify, A's
   the same bytes as downloaded before the cut.

It runs twice: with the default interval between takings of the lobby's
facts (none is taken in the scenario's some 250 inputs: a start replays
the journal), and with facts taken every 40 inputs (a start reads the last
facts, then replays the journal after them).

With ``synchronous=NORMAL`` in `server/store.py` instead (the WAL is then
fsync'd only at a checkpoint, which follows each taking of the facts), this
test fails: the server comes back behind what its players were told, by
seconds with the journal alone (sessions, rooms and records lost), or to
its last facts (B's record, C's and D's last moves lost).
"""

from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest
import trio
import trio.testing

from oriflamme.client.bots import Behaviour, Bot
from oriflamme.client.commands import download_record
from oriflamme.client.session import (
    Backoff,
    Connector,
    RequestRefused,
    Session,
    SessionEnded,
    open_session,
    tcp,
)
from oriflamme.client.state import ClientState, GameMirror
from oriflamme.protocol import messages as m
from oriflamme.protocol.record import decode_record
from oriflamme.protocol.verify import verify_record
from tests.deadlines import GAME_HANG, HANG
from tests.network.loop_disk import LoopDisk, crash_copy, fsck, make_ext4, why_not
from tests.network.server_process import ServerProcess
from tests.network.test_server_restart import game_over, round_of, start_a_game
from tests.network.test_sessions import gated

pytestmark = [pytest.mark.network, pytest.mark.process]

IMAGE_SIZE = 48 << 20  # bytes: the server, four games, and room to spare
PLAYERS = 3
ROOMS = ("A", "B", "C", "D")  # A ends first, B at the cut; C and D play on


@dataclass(frozen=True)
class Told:
    """What a player had been told of its game when the power went."""

    game: bytes
    events: int  # the game's events it had seen
    turn: int | None  # the number of the pending decision (None: none)
    end: m.GameEnd | None


def told(session: Session) -> Told:
    game = session.state.game
    assert game is not None, f"{session.name} had no game at the cut"
    turn = None if game.decision is None else game.decision.turn
    return Told(game.game_id, len(game.events), turn, game.end)


def behind(name: str, game: GameMirror | None, was: Told) -> list[str]:
    """How `game`, as `name` sees it now, is behind what it was told (nothing: [])."""
    name = f"{name} (game {was.game.hex()[:8]})"
    if game is None or game.game_id != was.game:
        now = "no game" if game is None else f"game {game.game_id.hex()[:8]}"
        return [f"{name}: its game is gone ({now} instead)"]
    lost = []
    if len(game.events) < was.events:
        lost.append(f"{name}: back to {len(game.events)} events from {was.events}")
    if was.turn is not None and game.decision is not None and game.decision.turn < was.turn:
        lost.append(f"{name}: back to decision {game.decision.turn} from {was.turn}")
    if was.end is not None and game.end is None:
        lost.append(f"{name}: the end it saw is undone")
    return lost


def players(connect: Connector, room: str) -> list[Session]:
    return [
        Session(
            connect,
            f"{room}{i}",
            behaviour=Behaviour(Bot(["random", "heuristic"][i % 2], seed=f"power cut {room}{i}")),
            backoff=Backoff(first=0.1, most=1.0),
        )
        for i in range(PLAYERS)
    ]


async def record_of(port: int, record_id: str) -> bytes | None:
    """The record the server keeps (None: it has none)."""
    try:
        return await download_record("127.0.0.1", port, record_id, timeout=HANG)
    except RequestRefused:
        return None


async def as_spectated(port: int, room: int) -> GameMirror | None:
    """The game in `room` as the server has it now, seen by a spectator."""
    async with open_session(tcp("127.0.0.1", port), "watcher") as watcher:
        try:
            await watcher.request(m.Spectate(room=room), timeout=HANG)
        except RequestRefused:  # (no such room)
            return None
        await watcher.request(m.Ping(), timeout=HANG)  # (after the room's pushes)
        return watcher.state.game


@pytest.fixture
def loop_devices(tmp_path: Path) -> None:
    """Skips the test, saying why, unless an ext4 image can be attached and
    mounted here. (A fixture: a skip inside a trio test loses its reason.)"""
    why = why_not(tmp_path)
    if why is not None:
        pytest.skip(why)


@pytest.mark.trio
@pytest.mark.usefixtures("loop_devices")
@pytest.mark.parametrize(
    "options",
    [(), ("--snapshot-every", "40")],
    # (the whole scenario is some 250 inputs: by default, no facts are taken
    # during it; every 40, they are taken and stored as it goes on)
    ids=["journal", "facts every 40 inputs"],
)
async def test_a_power_cut_loses_nothing_the_players_were_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: tuple[str, ...]
) -> None:
    image, mount = tmp_path / "disk.img", tmp_path / "disk"
    make_ext4(image, IMAGE_SIZE)
    disk = LoopDisk(image, mount)
    server = ServerProcess(mount / "data", log_path=tmp_path / "server.log", options=options)

    # From the cut on, every message a player's mirror takes is checked
    # against what it had been told (each way of being behind said once).
    lost: list[str] = []
    watched: dict[ClientState, tuple[Session, Told]] = {}
    receive = ClientState.receive

    def watched_receive(state: ClientState, message: m.Message) -> None:
        receive(state, message)
        if state in watched:
            session, was = watched[state]
            found = behind(session.name, state.game, was)
            if state.notices:
                found.append(f"{session.name}: {state.notices[0]}")
            lost.extend(why for why in found if why not in lost)

    monkeypatch.setattr(ClientState, "receive", watched_receive)

    async def play(session: Session, *, task_status: trio.TaskStatus[None]) -> None:
        try:
            await session.run(task_status=task_status)
        except SessionEnded as exc:  # (the server refused it: it is behind)
            lost.append(f"{session.name}: its session ended: {exc}")

    async def resumed(session: Session) -> None:
        """Once `session` is back, with what resumed it (an end: said by `play`)."""
        with contextlib.suppress(SessionEnded):
            await session.request(m.Ping(), timeout=HANG)  # (its answer comes after)

    held = False  # the players send nothing (while the server is checked)
    try:
        disk.attach()
        with trio.fail_after(GAME_HANG):  # (four games, the server started twice)
            port = server.start()
            connect = gated(tcp("127.0.0.1", port), lambda: held)
            rooms = {room: players(connect, room) for room in ROOMS}
            everyone = [s for room in ROOMS for s in rooms[room]]
            async with trio.open_nursery() as nursery:
                for s in everyone:
                    await nursery.start(play, s)
                a, b, c, d = (rooms[room][0] for room in ROOMS)  # the hosts

                await start_a_game(rooms["A"])
                await a.wait_until(partial(game_over, a))
                downloaded = await record_of(port, a.state.game.end.record_id)
                assert downloaded is not None
                await start_a_game(rooms["B"])
                await b.wait_until(lambda: round_of(b) >= 3 or game_over(b))
                await start_a_game(rooms["C"])
                await start_a_game(rooms["D"])
                await b.wait_until(partial(game_over, b))

                # The power cut.
                assert server.process is not None
                os.kill(server.process.pid, signal.SIGSTOP)
                # (what the server sent before is read: it was acknowledged too)
                await trio.testing.wait_all_tasks_blocked()
                held = True
                was = {s: told(s) for s in everyone}
                watched.update({s.state: (s, was[s]) for s in everyone})
                assert was[a].end is not None and was[b].end is not None
                assert all(was[s].end is None for s in rooms["C"] + rooms["D"]), was
                copy = tmp_path / "after.img"
                crash_copy(image, copy)
                server.kill()  # (SIGKILL ends a stopped process)
                disk.release()

                # The machine starts again.
                fsck(copy)
                disk = LoopDisk(copy, mount)
                disk.attach()
                server.start()  # on the same port: the players will come back by themselves
                # The server as it starts, before any player is back: a game
                # behind its players is not always told them (a restored
                # server numbers its pushes again, and a resume may get
                # others than those the player had under the same numbers).
                for room in ("A", "B"):
                    end = was[rooms[room][0]].end
                    assert end is not None
                    if await record_of(port, end.record_id) is None:
                        lost.append(f"room {room}: the record of its game is gone")
                for room in ("C", "D"):
                    number = rooms[room][0].state.room
                    assert number is not None
                    game = await as_spectated(port, number.room)
                    for s in rooms[room]:
                        lost += behind(f"the server, to {s.name}", game, was[s])
                held = False
                for s in everyone:
                    await resumed(s)
                assert not lost, "\n".join(lost)  # (now: a game behind may never end)

                for s in everyone:
                    await s.wait_until(partial(game_over, s))
                    assert [v.status for v in s.state.game.check_end()] == ["ok"] * PLAYERS
                    assert s.state.problems == []
                for host in (a, b, c, d):
                    data = await record_of(port, host.state.game.end.record_id)
                    assert data is not None
                    assert verify_record(decode_record(data)).ok
                    if host is a:
                        assert data == downloaded
                for s in everyone:
                    s.close()
        assert not lost, "\n".join(lost)
        assert "state restored" in server.log()
    finally:
        server.stop()
        disk.release()

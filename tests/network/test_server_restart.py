"""A server killed with SIGKILL, mid-game, and started again over the same
data directory: its clients come back by themselves and the game ends as it
would have without the kills.

The server is a real process (`oriflamme serve`); the players are client
sessions in this process, over TCP on 127.0.0.1. Two servers are given the
same key (`secret.key`), so their randomness is the same; the players' seat
secrets and bots are reproducible (`fixed_secrets`, `Bot(seed=...)`). One
server runs the game calmly, the other is killed at several points of it:
the records must agree.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest
import trio
import trio.testing

from oriflamme.client.bots import Behaviour, Bot
from oriflamme.client.commands import download_record
from oriflamme.client.endpoint import ClientEndpoint
from oriflamme.client.secret_store import SecretStore
from oriflamme.client.session import Session, tcp
from oriflamme.protocol import messages as m
from oriflamme.protocol.record import Record, decode_record
from oriflamme.protocol.verify import verify_record
from oriflamme.server.core import Gateway, ServerConfig
from oriflamme.server.core.entropy import KeyedEntropy
from oriflamme.server.core.journal import JournaledLobby
from oriflamme.server.net import NetServer
from oriflamme.server.persistence import DATABASE_FILE, KEY_FILE
from oriflamme.server.store import StoreError
from tests.deadlines import GAME_HANG, HANG, until
from tests.network.server_process import ServerProcess
from tests.network.test_sessions import gated
from tools.docgen.worked_example import fixed_secrets

pytestmark = [pytest.mark.network, pytest.mark.process]

KEY = bytes(range(32))
PLAYERS = 3


def new_server(tmp_path: Path, name: str, options: tuple[str, ...] = ()) -> ServerProcess:
    data = tmp_path / name
    data.mkdir()
    (data / KEY_FILE).write_bytes(KEY)
    (data / KEY_FILE).chmod(0o600)
    return ServerProcess(data, options=options)


async def start_a_game(sessions: list[Session]) -> None:
    """The first of `sessions` makes a standard room, the others join it,
    all are ready, and the first starts the game (it plays first)."""
    host = sessions[0]
    settings = m.RoomSettings(
        players=len(sessions), variant="standard", edition="revised", first_player="host"
    )
    await host.request(m.CreateRoom(settings=settings))
    assert host.state.room is not None
    for s in sessions[1:]:
        await s.request(m.JoinRoom(room=host.state.room.room))
    for s in sessions:
        await s.request(m.Ready(ready=True))
    await host.request(m.StartGame())


def round_of(session: Session) -> int:
    game = session.state.game
    return 0 if game is None or game.state is None else int(game.state.view["round"])


def game_over(session: Session) -> bool:
    game = session.state.game
    return game is not None and game.end is not None


def stored(data_dir: Path) -> tuple[bytes | None, list[int]]:
    """The lobby's row of the facts in the store of `data_dir` (a save
    always writes it), and the positions of the journal entries after the
    facts (what a start replays); read beside the server."""
    db = sqlite3.connect(
        f"file:{data_dir / DATABASE_FILE}?mode=ro", uri=True, isolation_level=None, timeout=HANG
    )
    try:
        db.execute("BEGIN")  # (both as of one commit)
        row = db.execute("SELECT data FROM lobby WHERE id = 1").fetchone()
        positions = [seq for (seq,) in db.execute("SELECT seq FROM journal ORDER BY seq")]
    finally:
        db.close()
    return (None if row is None else bytes(row[0])), positions


async def a_snapshot_other_than(data_dir: Path, snapshot: bytes | None) -> None:
    """Wait until the store of `data_dir` holds another snapshot than `snapshot`."""
    await until(lambda: stored(data_dir)[0] != snapshot)


async def play(
    server: ServerProcess,
    kill_when: list[Callable[[Session], bool]],
    *,
    snapshot_first: bool = False,
) -> tuple[Record, list[Session], list[list[int]]]:
    """One game of reproducible players on `server`; the server is killed and
    started again each time the host's view passes a point of `kill_when`
    (`snapshot_first`: the players wait, before each kill, for a snapshot
    made since the server's last start to be saved). Also the journal that
    each start found: the positions of its entries."""
    port = server.start()
    held = False

    def holding() -> bool:
        return held

    # (a fresh store: the snapshot of an empty lobby, and no journal)
    restored_from, _ = stored(server.data_dir)
    journals: list[list[int]] = []
    sessions = [
        Session(
            # the port stays the same across restarts
            gated(tcp("127.0.0.1", port), holding),
            f"p{i}",
            behaviour=Behaviour(Bot(["random", "heuristic"][i % 2], seed=f"player {i}")),
            make_secrets=fixed_secrets(f"restart player {i}"),
        )
        for i in range(PLAYERS)
    ]
    async with trio.open_nursery() as nursery:
        for s in sessions:  # one after another: the same players in the same order
            await nursery.start(s.run)
        host = sessions[0]
        await start_a_game(sessions)
        for point in kill_when:

            def reached(point: Callable[[Session], bool] = point) -> bool:
                return point(host) or game_over(host)

            await host.wait_until(reached)
            assert not game_over(host), "the game ended before the server could be killed"
            if snapshot_first:
                # However slow the children that pickle the lobby are here,
                # the game waits for one of them (a snapshot may be on its
                # way still when the server is killed, as ever).
                held = True
                await a_snapshot_other_than(server.data_dir, restored_from)
            server.kill()
            restored_from, journal = stored(server.data_dir)
            journals.append(journal)
            server.start()
            held = False
        for s in sessions:
            await s.wait_until(partial(game_over, s))
            assert [v.status for v in s.state.game.check_end()] == ["ok"] * PLAYERS
            assert s.state.problems == []
            s.close()
    record_id = host.state.game.end.record_id
    data = await download_record("127.0.0.1", port, record_id)
    return decode_record(data), sessions, journals


@pytest.mark.trio
@pytest.mark.parametrize(
    "snapshots",
    [(), ("--snapshot-every", "3")],
    ids=["journal", "snapshot every 3 inputs"],  # (killed while children pickle the lobby)
)
async def test_a_server_killed_at_several_points_of_a_game_finishes_it_as_if_not(
    tmp_path: Path, snapshots: tuple[str, ...]
) -> None:
    calm = new_server(tmp_path, "calm")
    killed = new_server(tmp_path, "killed", snapshots)
    try:
        with trio.fail_after(GAME_HANG):  # (two games, servers started five times)
            calm_record, calm_players, _ = await play(calm, [])
            killed_record, killed_players, journals = await play(
                killed,
                [
                    lambda host: host.state.game is not None and host.state.game.state is not None,
                    lambda host: round_of(host) >= 2,
                    lambda host: round_of(host) >= 4,
                ],
                snapshot_first=bool(snapshots),
            )
    finally:
        calm.stop()
        killed.stop()
    assert killed.starts == 4
    assert verify_record(killed_record).ok
    assert killed_record.game_id == calm_record.game_id
    assert [e.action for e in killed_record.log] == [e.action for e in calm_record.log]
    assert killed_record.results == calm_record.results
    assert killed_record.seat_changes == ()  # everyone was back within the grace period
    assert [p.state.game.end.scores for p in killed_players] == [
        p.state.game.end.scores for p in calm_players
    ]
    assert killed.log().count("state restored") == 3
    replayed = [int(n) for n in re.findall(r"\((\d+) inputs replayed\)", killed.log())]
    # Each start replayed the journal as the kill left it: what came after the last snapshot.
    assert replayed == [len(journal) for journal in journals]
    if snapshots:
        # Not one input a start replayed was replayed again by the next: a
        # snapshot made since covered them (without snapshots, each start
        # replays the whole journal: 13, 27 and 55 inputs). How many more
        # inputs came before the kill moves with the machine's load.
        since = 0  # the last position in the store at a start (none in a fresh one)
        for journal in journals:
            assert all(position > since for position in journal), journals
            since = max(journal, default=0)


@pytest.mark.trio
async def test_server_bots_come_back_after_a_clean_stop_and_after_a_kill(tmp_path: Path) -> None:
    server = new_server(tmp_path, "bots")
    try:
        with trio.fail_after(GAME_HANG):  # (a game, the server started three times)
            port = server.start()
            ann = Session(
                tcp("127.0.0.1", port),
                "Ann",
                behaviour=Behaviour(Bot("heuristic")),
                store=SecretStore(tmp_path / "ann"),
            )
            async with trio.open_nursery() as nursery:
                await nursery.start(ann.run)
                settings = m.RoomSettings(
                    players=3, variant="standard", edition="revised", first_player="host"
                )
                await ann.request(m.CreateRoom(settings=settings))
                await ann.request(m.AddBot(strategy="heuristic"))
                await ann.request(m.AddBot(strategy="random"))
                await ann.request(m.Ready(ready=True))
                await ann.request(m.StartGame())
                await ann.wait_until(lambda: round_of(ann) >= 2)
                assert server.terminate() == 0  # SIGTERM: a clean stop, with a snapshot
                server.start()
                await ann.wait_until(lambda: round_of(ann) >= 3 or game_over(ann))
                server.kill()
                server.start()
                await ann.wait_until(lambda: game_over(ann))
                assert [v.status for v in ann.state.game.check_end()] == ["ok"] * 3
                ann.close()
            record = decode_record(
                await download_record("127.0.0.1", port, ann.state.game.end.record_id)
            )
    finally:
        server.stop()
    assert verify_record(record).ok
    assert [s.bot for s in record.seats] == [False, True, True]
    assert record.seat_changes == ()  # the bots were back within the grace period
    # The game is over: the server's bots forgot the secrets they kept.
    with trio.fail_after(HANG):
        while any((server.data_dir / "bots" / "games").glob("*.secrets")):
            await trio.sleep(0.05)
    log = server.log()
    assert "(0 inputs replayed)" in log  # the clean stop saved everything in its snapshot
    # One line for each thing that happened in the room (before the restarts).
    assert "room 1: made, " in log and "room 1: player 1 ('Ann') took seat 0" in log
    assert re.search(r"room 1: game [0-9a-f]{32} started: 3 seats", log)
    assert f"room 1: game {record.game_id.hex()} finished" in log
    assert log.count("bot 2 (heuristic) for room 1 seat 1") == 3  # started, and again twice


class FailingStore:
    """A store whose disk is full."""

    def __init__(self) -> None:
        self.appended: list[object] = []

    def load(self) -> tuple[bytes | None, list[object]]:
        return None, []

    def append(self, entries: list[object]) -> int:
        raise StoreError("the database could not be written: database or disk is full")

    def save_facts(self, facts: object, covers: int | None = None) -> None:
        raise StoreError("the database could not be written: database or disk is full")

    def facts_steps(self, facts: object, covers: int | None = None) -> list[Callable[[], None]]:
        return [partial(self.save_facts, facts, covers)]

    def next_generation(self) -> int:
        return 1

    def close(self) -> None:
        pass


@pytest.mark.trio
async def test_a_store_that_fails_stops_the_server_before_anything_unstored_is_sent() -> None:
    lobby = JournaledLobby(KeyedEntropy(KEY), ServerConfig())
    server = NetServer(Gateway(lobby), bots=None, store=FailingStore())  # type: ignore[arg-type]
    near, far = trio.testing.memory_stream_pair()
    with trio.fail_after(HANG), pytest.raises(BaseExceptionGroup) as stopped:
        async with trio.open_nursery() as nursery:
            await nursery.start(server.run)
            nursery.start_soon(server.serve_stream, far, "test")
            endpoint = ClientEndpoint("Ann")
            await near.send_all(endpoint.hello())
            while True:  # the welcome is never sent: the session was not stored
                data = await near.receive_some(65536)
                assert not endpoint.receive_data(bytes(data)), "something unstored was sent"
    assert stopped.group_contains(StoreError)


class SlowStore(FailingStore):
    """A store whose disk stalls: an append waits until `go` is set (the
    test sets it whatever happens, or its worker thread would hold it up)."""

    def __init__(self) -> None:
        super().__init__()
        self.go = threading.Event()

    def append(self, entries: list[object]) -> int:
        if entries:
            self.go.wait()
            self.appended += entries
        return len(self.appended)


@pytest.mark.trio
async def test_a_stalled_store_holds_back_what_it_stores_but_not_the_next_inputs() -> None:
    """The core task gives the committer a head start, but no more: a disk
    that stalls does not stop it handling what comes next."""
    lobby = JournaledLobby(KeyedEntropy(KEY), ServerConfig())
    store = SlowStore()
    server = NetServer(Gateway(lobby), bots=None, store=store)  # type: ignore[arg-type]
    with trio.fail_after(HANG):
        async with trio.open_nursery() as nursery:
            await nursery.start(server.run)
            streams = []
            try:
                for name in ("Ann", "Bo"):
                    near, far = trio.testing.memory_stream_pair()
                    nursery.start_soon(server.serve_stream, far, name)
                    await near.send_all(ClientEndpoint(name).hello())
                    streams.append(near)
                    while len(lobby.sessions) < len(streams):  # (Bo's hello while Ann's is stored)
                        await trio.sleep(0.005)
                assert not store.appended  # nothing stored yet: nothing sent either
                with trio.move_on_after(0.1):
                    assert not await streams[0].receive_some(65536)
            finally:
                store.go.set()
            for near, name in zip(streams, ("Ann", "Bo"), strict=True):
                endpoint = ClientEndpoint(name)
                endpoint.hello()
                received: list[object] = []
                while not received:
                    received += endpoint.receive_data(bytes(await near.receive_some(65536)))
                assert type(received[0]) is m.Welcome
            nursery.cancel_scope.cancel()

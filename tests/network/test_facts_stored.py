"""A server that keeps its lobby's facts while its games go on: whatever is
restored from its data directory is the lobby as it was."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest
import trio

from oriflamme.protocol import messages as m
from oriflamme.protocol.verify import verify_record
from oriflamme.server import net as net_module
from oriflamme.server.core import GameFinished, Gateway, Lobby, ServerConfig
from oriflamme.server.core.facts import (
    FACTS_PUSHES,
    FactsRows,
    TakenRows,
    encode,
    facts_of,
    rows_of,
)
from oriflamme.server.core.journal import Entry, JournaledLobby
from oriflamme.server.net import NetServer
from oriflamme.server.persistence import restore
from oriflamme.server.store import SqliteStore
from tests.deadlines import GAME_HANG, HANG, until
from tests.network.test_sessions import gated, memory_connector, player, seat_three

pytestmark = [pytest.mark.network]


def seen(lobby: Lobby) -> dict[int, object]:
    """What each session was told (its newest pushes kept: as many as the
    facts keep), and where it sits."""
    return {
        player: (
            session.last_seq,
            session.room,
            session.seat,
            [m.to_data(push) for push in session.kept()[-FACTS_PUSHES:]],
        )
        for player, session in lobby.sessions.by_player.items()
    }


# Timers no test here reaches: the players may be held back while facts are
# stored; the server must not answer for a seat, nor drop a connection.
CONFIG = ServerConfig(reply_timer=HANG, grace=2 * HANG, idle_timeout=int(2 * HANG))


async def a_game_then_a_chat_line(
    data_dir: Path,
    hold: Callable[[NetServer], bool] | None = None,
    *,
    snapshot_every: int = 7,
    room_weight: int = 0,
    idle: int = 0,
) -> tuple[JournaledLobby, int, list[GameFinished]]:
    """Three random bots play a game on a server of `data_dir`, facts due
    every 7 inputs (a room touched weighs `room_weight` entries); once every facts taken meanwhile are stored, one more
    input (a chat line) follows; then the server stops, as if killed:
    nothing more is saved. The lobby as it was, the position of its last
    journal entry, the records. `hold`: the players send nothing while it
    says so of the server. `idle`: players more, in the lobby all along."""
    restored = restore(data_dir, CONFIG)
    records: list[GameFinished] = []
    net = NetServer(
        Gateway(restored.lobby),
        bots=None,
        store=restored.store,
        on_record=records.append,
        snapshot_every=snapshot_every,
        room_weight=room_weight,
    )
    try:
        with trio.fail_after(GAME_HANG):
            async with trio.open_nursery() as nursery:
                await nursery.start(net.run)
                connect = memory_connector(net, nursery)
                if hold is not None:
                    connect = gated(connect, partial(hold, net))
                sessions = [player(connect, f"p{i}", i) for i in range(3)]
                for loner in [player(connect, f"idle{i}", 10 + i) for i in range(idle)]:
                    await nursery.start(loner.run)
                await seat_three(nursery, sessions, timer=None)
                await sessions[0].wait_until(lambda: bool(records))
                await until(lambda: not net._snapshots_saving)  # (every facts taken, stored)
                net.snapshot_every, net.room_weight = 1 << 40, 0  # (no facts cover the chat)
                await sessions[0].request(m.Chat(text="after the last facts"))
                nursery.cancel_scope.cancel()
        return restored.lobby, restored.store.append([]), records
    finally:
        restored.store.close()


@pytest.mark.trio
async def test_facts_stored_while_a_game_goes_on_restore_the_lobby_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Facts every few inputs, each stored while later inputs may be: facts
    # that dropped them, or kept an entry they cover, would restore another
    # lobby.
    taken = [0]
    take = JournaledLobby.take

    def counted_take(lobby: JournaledLobby) -> list[Entry]:
        entries = take(lobby)
        taken[0] += len(entries)
        return entries

    covered: list[tuple[int | None, int]] = []
    steps = SqliteStore.facts_steps

    def recorded_save(
        store: SqliteStore, facts: FactsRows, covers: int | None = None
    ) -> list[Callable[[], None]]:
        covered.append((covers, taken[0]))
        return steps(store, facts, covers)

    monkeypatch.setattr(JournaledLobby, "take", counted_take)
    monkeypatch.setattr(SqliteStore, "facts_steps", recorded_save)
    live, journaled, records = await a_game_then_a_chat_line(tmp_path / "data")
    assert len(covered) >= 3  # (the new directory's, then some every 7 inputs)
    # Each covers no more than the inputs the core had taken when it stored them.
    assert all(covers is None or covers <= count for covers, count in covered)
    assert verify_record(records[0].record).ok
    again = restore(tmp_path / "data", CONFIG)
    try:
        # The last facts, and what came after them (the chat line at least).
        assert 0 < again.entries < journaled
        assert seen(again.lobby) == seen(live)
        assert list(again.lobby.finished) == list(live.finished)
    finally:
        again.store.close()


@pytest.mark.trio
async def test_facts_taken_a_unit_a_step_restore_the_lobby_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each taking spread over many steps (a unit of work each, after each
    # batch and while no input waits), as the shell makes them: the facts
    # it stores restore the lobby. (That rows made at a step are made again
    # if their session or room changes before the last: the stateful room
    # test, whose traffic comes between the steps.)
    steps: list[bool] = []  # (whether each step ended its taking)
    take = net_module.take_some

    def counted(lobby: Lobby, taken: TakenRows, most: int | None) -> FactsRows | None:
        rows = take(lobby, taken, most)
        steps.append(rows is not None)
        return rows

    monkeypatch.setattr(net_module, "TAKE_STEP", 1)
    monkeypatch.setattr(net_module, "take_some", counted)
    live, journaled, _ = await a_game_then_a_chat_line(tmp_path / "data", idle=2)
    ended = steps.count(True)
    assert ended >= 2 and len(steps) > 3 * ended  # (several steps a taking)
    again = restore(tmp_path / "data", CONFIG)
    try:
        assert 0 < again.entries < journaled
        assert seen(again.lobby) == seen(live)
        assert encode(facts_of(again.lobby)) == encode(facts_of(live))
    finally:
        again.store.close()


@pytest.mark.trio
async def test_a_started_server_rebuilds_its_games_while_no_input_waits(tmp_path: Path) -> None:
    # A start rebuilds each game lazily (at its first use): the server
    # rebuilds the others by itself, a few at a time, with no input at all.
    await a_game_then_a_chat_line(tmp_path / "data")
    stopped = restore(tmp_path / "data", CONFIG)  # (facts with no journal after: a clean stop)
    stopped.store.save_facts(rows_of(facts_of(stopped.lobby)))
    stopped.store.close()
    restored = restore(tmp_path / "data", CONFIG)
    lobby = restored.lobby
    try:
        assert lobby.unbuilt and not all(room.built for room in lobby.rooms.values())
        net = NetServer(Gateway(lobby), bots=None, store=restored.store, restarted=True)
        with trio.fail_after(HANG):
            async with trio.open_nursery() as nursery:
                await nursery.start(net.run)
                await until(lambda: not lobby.unbuilt)
                nursery.cancel_scope.cancel()
        assert all(room.built for room in lobby.rooms.values())
        assert all(room.table is not None for room in lobby.rooms.values())
    finally:
        restored.store.close()


@pytest.mark.trio
@pytest.mark.parametrize("weight, taken", [(1 << 40, True), (0, False)])
async def test_a_room_the_journal_touches_weighs_as_many_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, weight: int, taken: bool
) -> None:
    # However few entries: a start after a kill rebuilds each game the
    # journal touches, so each room touched weighs as many entries.
    saved: list[int | None] = []
    steps = SqliteStore.facts_steps

    def counted(
        store: SqliteStore, facts: FactsRows, covers: int | None = None
    ) -> list[Callable[[], None]]:
        saved.append(covers)
        return steps(store, facts, covers)

    monkeypatch.setattr(SqliteStore, "facts_steps", counted)
    await a_game_then_a_chat_line(tmp_path / "data", snapshot_every=1 << 40, room_weight=weight)
    assert saved[0] is None  # (the new data directory's)
    assert (len(saved) > 1) == taken


@pytest.mark.trio
async def test_facts_that_could_not_be_taken_once_are_all_taken_again_at_the_next_taking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # A taking that fails (a bug of ours) after it took what changed from the
    # lobby: the rows it made are lost, so the next taking makes every row
    # again (else a room or session that changed before it, and not since,
    # would stay stored as it was before, for good).
    takings: list[tuple[int, int, int]] = []  # (rows of sessions, of rooms; sessions there are)
    take = net_module.take_some

    def failing_once(lobby: Lobby, taken: TakenRows, most: int | None) -> FactsRows | None:
        rows = take(lobby, taken, None)  # (at once: one step a taking)
        assert rows is not None
        takings.append(
            (len(rows.tables["sessions"]), len(rows.tables["rooms"]), len(lobby.sessions))
        )
        if len(takings) == 3:
            raise RuntimeError("a bug of ours, once")
        return rows

    monkeypatch.setattr(net_module, "take_some", failing_once)
    live, _, _ = await a_game_then_a_chat_line(tmp_path / "data", idle=1)
    assert len(takings) > 3 and "facts were not taken" in caplog.text
    assert takings[2][0] < takings[2][2]  # (the idle player's row: not made again)
    sessions, rooms, there = takings[3]
    assert sessions == there == 4 and rooms == 1  # (every row: the idle player's too)
    again = restore(tmp_path / "data", CONFIG)
    try:
        assert seen(again.lobby) == seen(live)
        assert encode(facts_of(again.lobby)) == encode(facts_of(live))
    finally:
        again.store.close()

"""A replay that disagrees is caught: each decision the journal keeps has
the digest of the events it produced, and a replay by an engine that comes
out otherwise keeps that game out of play, names it, and lets the others go
on (server.core.journal, `Room.suspend`)."""

from __future__ import annotations

import random
from dataclasses import replace

import msgpack
import pytest

import oriflamme.engine.game as engine_game
from oriflamme.client.bots import Behaviour, Bot
from oriflamme.engine.events import Scored
from oriflamme.launcher.inprocess import Client
from oriflamme.protocol import messages as m
from oriflamme.protocol.errors import WRONG_STATE
from oriflamme.protocol.verify import verify_record
from oriflamme.server.core import LogLine
from oriflamme.server.core.entropy import KeyedEntropy
from oriflamme.server.core.journal import Disagreement, Entry, JournaledLobby, replay
from oriflamme.server.core.lobby import Lobby
from oriflamme.server.core.room import Room
from tests.server.test_journal import CONFIG, KEY, Journaled, players
from tests.server.test_room_stateful import fingerprint

NOT_RESTORED = "this game could not be restored by this server version"


def one_more_point(monkeypatch: pytest.MonkeyPatch) -> None:
    """A new version of the engine: every ability that scores gives one more
    Influence (the engine makes its events with `game._ev`)."""

    def made(kind: type, fields: tuple[object, ...]) -> tuple[object, ...]:
        if kind is Scored:
            seat, points, reason = fields
            fields = (seat, points + 1, reason)  # type: ignore[operator]
        return tuple.__new__(kind, fields)

    monkeypatch.setattr(engine_game, "_ev", made)


def scored(room: Room) -> bool:
    return room.table is not None and any(isinstance(e, Scored) for e in room.table.referee.events)


def two_games() -> tuple[Journaled, list[Client], list[Client]]:
    """Room 1's game has scored; room 2's has begun, and scored nothing yet."""
    world = Journaled(seed=5)
    first = players(world, 3, seed=5)  # (room 1's host sends start_game last)
    lobby = world.gateway.lobby
    world.run(lambda: scored(lobby.rooms[1]))
    rng = random.Random(6)
    second = [
        world.connect(f"q{i}", behaviour=Behaviour(Bot("random", rng=random.Random(rng.random()))))
        for i in range(3)
    ]
    world.run(lambda: all(c.state.player is not None for c in second))
    settings = m.RoomSettings(players=3, variant="standard", edition="revised", first_player="host")
    second[0].send(m.CreateRoom(settings=settings))
    world.run(lambda: second[0].state.room is not None)
    for c in second[1:]:
        c.send(m.JoinRoom(room=2))
    for c in second:
        c.send(m.Ready(ready=True))
    world.run(lambda: all(s.ready for s in lobby.rooms[2].seats))
    second[0].send(m.StartGame())

    def begun() -> bool:
        table = lobby.rooms[2].table
        return table is not None and table.referee.turn >= 2

    world.run(begun)
    assert not scored(lobby.rooms[2]) and not world.records
    return world, first, second


def decisions(entry: Entry) -> list[tuple[bytes, int, bytes]]:
    assert entry.digest is not None
    return [(game, turn, made) for game, turn, made in msgpack.unpackb(entry.digest)]


def test_every_decision_is_noted_with_the_digest_of_what_it_produced() -> None:
    world, _, _ = two_games()
    games = {world.gateway.lobby.rooms[r].table.referee.game_id for r in (1, 2)}
    noted = [d for entry in world.journal for d in decisions(entry)]
    assert {d[0] for d in noted} == games
    # One digest per ruling: 16 bytes, with the turn it began at, in order.
    assert all(len(d[2]) == 16 for d in noted)
    for game in games:
        turns = [d[1] for d in noted if d[0] == game]
        assert turns == sorted(turns) and len(turns) > 1
    # A replay by the same engine makes every digest again, and agrees.
    rebuilt = JournaledLobby(KeyedEntropy(KEY), CONFIG)
    found: list[Disagreement] = []
    replay(rebuilt, world.journal, found)
    assert found == []
    assert [e.digest for e in rebuilt.take()] == [e.digest for e in world.journal]
    assert fingerprint(rebuilt) == fingerprint(world.gateway.lobby)


def test_a_replay_that_disagrees_keeps_that_game_out_of_play_and_the_others_go_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world, first, second = two_games()
    live = world.gateway.lobby
    changed, unchanged = (live.rooms[r].table.referee.game_id for r in (1, 2))
    one_more_point(monkeypatch)

    rebuilt = JournaledLobby(KeyedEntropy(KEY), CONFIG)
    found: list[Disagreement] = []
    effects = replay(rebuilt, world.journal, found)
    # Exactly the game that scored, named once, at the decision that scored.
    assert [(d.room, d.game) for d in found] == [(1, changed)]
    (disagreement,) = found
    assert disagreement.entry.kind in ("request", "tick")
    made = [d for d in decisions(disagreement.entry) if d[0] == changed]
    assert [d[1] for d in made] == [disagreement.turn]
    described = disagreement.describe()
    assert described.startswith(f"room 1: game {changed.hex()}: the decision at turn")
    assert f"turn {disagreement.turn} (" in described and "came out otherwise" in described
    assert rebuilt.rooms[1].suspended is not None and NOT_RESTORED in rebuilt.rooms[1].suspended
    assert rebuilt.rooms[2].suspended is None
    logged = [e.text for e in effects if isinstance(e, LogLine)]
    assert f"room 1: game {changed.hex()} kept out of play: its decision at turn" in "\n".join(
        logged
    )
    # The server goes on with the new version: the players come back.
    world.crash_and_restore()
    lobby = world.gateway.lobby
    assert lobby.rooms[1].suspended is not None and lobby.rooms[1].next_deadline() is None
    world.run(lambda: bool(world.records))
    world.settle()
    # The other game went on to its end, verified.
    (record,) = world.records
    assert record.record.game_id == unchanged and verify_record(record.record).ok
    # The game kept out of play moved no further, and its players were told.
    for client in first:
        assert any(NOT_RESTORED in c.text and c.player is None for c in client.state.chat)
    assert all(not any(NOT_RESTORED in c.text for c in s.state.chat) for s in second)
    now = {c.endpoint.name: c for c in world.clients.values()}  # (connected again)
    p0 = now["p0"]
    asked = p0.send(m.KeepCard(turn=lobby.rooms[1].table.referee.turn))
    world.settle()
    answer = p0.answer(asked)
    assert isinstance(answer, m.Error) and answer.code == WRONG_STATE
    assert NOT_RESTORED in answer.message
    # They may leave it; the room closes with the last of them.
    for name in ("p0", "p1", "p2"):
        now[name].send(m.LeaveRoom())
    world.settle()
    assert 1 not in lobby.rooms


def test_a_journal_without_digests_replays_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    world, _, _ = two_games()
    older = [replace(entry, digest=None) for entry in world.journal]
    # As it was played, by the same engine:
    rebuilt = JournaledLobby(KeyedEntropy(KEY), CONFIG)
    found: list[Disagreement] = []
    replay(rebuilt, older, found)
    assert found == [] and fingerprint(rebuilt) == fingerprint(world.gateway.lobby)
    # By another: nothing to compare with, so nothing is caught.
    one_more_point(monkeypatch)
    rebuilt = JournaledLobby(KeyedEntropy(KEY), CONFIG)
    replay(rebuilt, older, found)
    assert found == [] and all(r.suspended is None for r in rebuilt.rooms.values())
    # Nor by a lobby that keeps no journal (the notes it makes are the digests).
    plain = Lobby(CONFIG, KeyedEntropy(KEY))
    replay(plain, world.journal, found)
    assert found == []

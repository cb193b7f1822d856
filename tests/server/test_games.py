"""Complete games through the server's core alone, for every table size.

Each seat is a client (`ClientEndpoint`: the protocol's `ClientConnection`,
`ClientState` and its own `SeatSecrets`) talking to the real core
(`Gateway`, `Lobby`, rooms, tables) through bytes, in one process. At the
end every seat checks every other seat itself, and the game record passes
`verify`. No frame sent to anyone holds a hidden identity.
"""

from __future__ import annotations

import random

import pytest

from oriflamme.client.bots import Bot
from oriflamme.launcher.inprocess import Client, InProcess
from oriflamme.protocol import messages as m
from oriflamme.protocol.record import decode_record, encode_record
from oriflamme.protocol.verify import verify_record, verify_record_bytes
from tests.server.scenario import hidden_cards_shown

TABLES = [(2, "two-player"), (3, "standard"), (4, "standard"), (5, "standard")]


def seat_players(
    world: InProcess,
    players: int,
    variant: str,
    *,
    bots: int = 0,
    seed: int = 0,
    turn_timer: int | None = None,
    edition: str = "revised",
) -> list[Client]:
    """`players - bots` clients take the seats (the first creates the room),
    the host adds `bots` server bots, everyone is ready, the host starts."""
    rng = random.Random(seed)
    humans = [
        world.connect(
            f"player {i}", bot=Bot(["random", "heuristic"][i % 2], rng=random.Random(rng.random()))
        )
        for i in range(players - bots)
    ]
    world.settle()
    settings = m.RoomSettings(
        players=players,
        variant=variant,
        edition=edition,
        turn_timer=turn_timer,
        first_player="host",
    )
    humans[0].send(m.CreateRoom(settings=settings))
    world.settle()
    room = humans[0].state.room
    assert room is not None
    for client in humans[1:]:
        client.send(m.JoinRoom(room=room.room))
    for _ in range(bots):
        humans[0].send(m.AddBot(strategy="heuristic"))
    for client in humans:
        client.send(m.Ready(ready=True))
    world.settle()
    humans[0].send(m.StartGame())
    return humans


@pytest.mark.parametrize(("players", "variant"), TABLES)
def test_a_complete_game_every_seat_verified(players: int, variant: str) -> None:
    world = InProcess(seed=players)
    clients = seat_players(world, players, variant, seed=players)
    world.run(lambda: bool(world.records))
    world.settle()
    record = world.records[0].record
    verdict = verify_record(record)
    assert verdict.ok, verdict.reasons()
    assert verify_record_bytes(encode_record(record)).ok
    assert [v.status for v in record.verdicts] == ["ok"] * players
    for client in clients:
        game = client.state.game
        assert game is not None and game.end is not None
        assert game.end.record_id == world.records[0].record_id
        assert game.end.verification == record.verdicts
        assert game.end.scores == record.results.scores
        # Each seat checks every seat itself, from what it was shown.
        mine = game.check_end()
        assert [v.status for v in mine] == ["ok"] * players
        assert client.state.problems == []
        assert not client.errors()
    assert world.faults == []


@pytest.mark.parametrize(("players", "variant"), TABLES)
def test_server_bots_and_players_together(players: int, variant: str) -> None:
    world = InProcess(seed=10 + players)
    bots = players - 1 if players > 2 else 1
    clients = seat_players(world, players, variant, bots=bots, seed=players, turn_timer=60)
    world.run(lambda: bool(world.records))
    record = world.records[0].record
    assert verify_record(record).ok
    assert [s.bot for s in record.seats] == [False] * (players - bots) + [True] * bots
    assert record.settings.turn_timer == 60
    assert all(not c.errors() and not c.state.problems for c in clients)


def test_no_frame_to_anyone_shows_a_hidden_card() -> None:
    world = InProcess(seed=3, versions=(1,))  # (version 2's: tests/client/test_updates.py)
    clients = seat_players(world, 4, "standard", seed=3)
    watcher = world.connect("watcher")
    world.settle()
    watcher.send(m.Spectate(room=1))
    world.run(lambda: bool(world.records))
    world.settle()
    for client in [*clients, watcher]:
        for message in client.received:
            assert hidden_cards_shown(message) == [], (client.endpoint.name, message.TYPE)
    # The spectator saw the whole game, with the public view.
    states = [x for x in watcher.received if isinstance(x, m.GameState)]
    assert states and all(s.view["viewer"] is None for s in states)
    assert watcher.state.game.end is not None


def test_the_first_edition_and_play_again_with_a_first_player_named() -> None:
    world = InProcess(seed=4)
    clients = seat_players(world, 3, "standard", edition="first", seed=4)
    world.run(lambda: bool(world.records))
    record = world.records[0].record
    assert record.settings.edition == "first" and verify_record(record).ok
    assert record.settings.first_player == 0  # the host's seat by default
    # Play again, the host naming the first player.
    host = clients[0]
    world.settle()
    assert host.state.room is not None and host.state.room.state == "finished"
    for client in clients:
        client.send(m.Ready(ready=True))
    world.settle()
    request = host.send(m.StartGame(first_player=2))
    world.run(lambda: len(world.records) == 2)
    assert isinstance(host.answer(request), m.Ok)
    second = world.records[1].record
    assert second.settings.first_player == 2 and verify_record(second).ok
    assert second.game_id != record.game_id


def test_a_record_round_trips_through_its_bytes() -> None:
    world = InProcess(seed=5)
    seat_players(world, 3, "standard", seed=5)
    world.run(lambda: bool(world.records))
    data = encode_record(world.records[0].record)
    assert encode_record(decode_record(data)) == data

"""A game of days (docs/PROTOCOL.md, "Timers"): with a 2-day turn timer,
a game goes on with nobody connected, across a restart of the server, and
its players come back and finish it with no seat played by the stand-in;
a player away past the timer is then played by the stand-in, as the timer
rule says. Time is the in-process world's own (a fake clock)."""

from __future__ import annotations

import random

from oriflamme.client.bots import Behaviour, Bot
from oriflamme.launcher.inprocess import Client
from oriflamme.protocol import messages as m
from tests.server.test_facts import Kept
from tests.server.test_journal import round_of

DAY = 86400.0
TIMER = 2 * 86400


def a_game_of_days(world: Kept) -> list[Client]:
    """Three random players at a table with a 2-day turn timer, in round 2."""
    rng = random.Random(5)
    clients = [
        world.connect(f"p{i}", behaviour=Behaviour(Bot("random", rng=random.Random(rng.random()))))
        for i in range(3)
    ]
    settings = m.RoomSettings.for_players(3, turn_timer=TIMER, first_player="host")
    world.start_table(clients, settings)
    world.run(lambda: round_of(clients[0]) >= 2)
    return clients


def stood_in(world: Kept) -> list[bool]:
    [room] = world.gateway.lobby.rooms.values()
    return [room._stood_in(seat) for seat in range(3)]


def test_a_game_of_days_waits_for_its_players_across_a_restart() -> None:
    world = Kept(seed=5)
    clients = a_game_of_days(world)
    for client in clients:
        world.disconnect(client)
    world.advance(DAY)  # (nobody there for a day: the game waits)
    assert stood_in(world) == [False] * 3 and not world.records
    world.keep_facts()
    world.crash_and_restore()  # (with nobody connected)
    assert not world.clients
    world.advance(0.9 * DAY)
    assert stood_in(world) == [False] * 3 and not world.records
    clients = [world.reconnect(client) for client in clients]
    world.run(lambda: bool(world.records))
    record = world.records[0].record
    assert record.results.complete and all(v.ok for v in record.verdicts)
    assert not any(seat.stand_in for seat in record.seats)
    assert not any(entry.by_server for entry in record.log)


def test_a_player_away_past_the_timer_is_played_by_the_stand_in() -> None:
    world = Kept(seed=5)
    clients = a_game_of_days(world)
    for client in clients:
        world.disconnect(client)
    world.advance(TIMER - 60)
    assert stood_in(world) == [False] * 3 and not world.records
    world.advance(120)
    # Every seat away past the timer: the stand-in plays them all, to the end.
    [finished] = world.records
    assert all(seat.stand_in for seat in finished.record.seats)

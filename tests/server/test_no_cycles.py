"""The core leaves no garbage cycles: what `server.tuning.freeze_young` relies on.

A serving process freezes its young objects rather than let the collector
walk them, so a garbage cycle made as it serves would never be freed. Here
whole games are played, their rooms left and their sessions expired, with
the collector off: reference counting alone must have freed all of it.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from oriflamme.protocol import messages as m
from tests.server.test_journal import Journaled, players


@pytest.fixture
def collector_off() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def test_games_rooms_and_sessions_leave_no_garbage_cycle(collector_off: None) -> None:
    world = Journaled(seed=3)
    for game in range(2):
        clients = players(world, 3, seed=game)
        clients[1] = world.reconnect(clients[1])  # (a resume: tokens rotated, pushes sent again)
        played = len(world.records)
        world.run(lambda: len(world.records) > played)  # noqa: B023 (run here, at once)
        world.settle()
        assert gc.collect() == 0, "a game played"
        for client in clients:
            client.send(m.LeaveRoom())
        world.settle()
        assert not world.gateway.lobby.rooms
        assert gc.collect() == 0, "a room left, and closed"
        for client in clients:
            world.disconnect(client)
        world.advance(10**6)
        assert not world.gateway.lobby.sessions
        assert gc.collect() == 0, "sessions expired"

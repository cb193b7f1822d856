"""Garbage cycles, and the collector as a serving process sets it (`server.tuning`).

A serving process freezes its young objects rather than let the collector
walk them (`freeze_young`), so a garbage cycle made as it serves is freed
only by the hourly collection of what was frozen (`collect_frozen`). The
core makes none: whole games are played here, their rooms left and their
sessions expired, with the collector off, and reference counting alone
must have freed all of it.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from oriflamme.protocol import messages as m
from oriflamme.server import tuning
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


class Node:
    """Something that can be in a cycle."""

    other: Node | None = None


def test_what_freezing_hid_from_the_collector_the_hourly_collection_frees(
    monkeypatch: pytest.MonkeyPatch, collector_off: None
) -> None:
    monkeypatch.setattr(tuning, "_tuned", True)  # (as `oriflamme serve` sets it)
    monkeypatch.setattr(tuning, "FREEZE_AT", 0)
    node = Node()
    node.other = node
    gone = weakref.ref(node)
    del node
    try:
        tuning.freeze_young()  # (young: the cycle is frozen with the rest)
        assert gc.get_freeze_count() > 0
        gc.collect()
        assert gone() is not None  # out of the collector's sight
        assert tuning.collect_frozen() >= 1
        assert gone() is None
    finally:
        gc.unfreeze()

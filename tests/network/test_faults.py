"""Faults: connections that come and go by the thousand, clients that
vanish at any step of a game, frames cut short. (Garbage frames, floods,
never reading, forged openings: test_misuse.py; a server killed and
started again: test_server_restart.py; a failing store: the same; any
message at all: tests/fuzz.) Every test has a deadline, which only a hang
reaches."""

from __future__ import annotations

import gc
import tracemalloc

import pytest
import trio

from oriflamme.client.bots import Bot
from oriflamme.launcher.inprocess import InProcess
from oriflamme.protocol import messages as m
from oriflamme.protocol.codec import encode_frame
from oriflamme.protocol.verify import verify_record
from oriflamme.server import net
from oriflamme.server.core import FixedEntropy, ServerConfig
from tests.deadlines import GAME_HANG, HANG

from .test_misuse import HOST, running_server

pytestmark = pytest.mark.network

HELLO = encode_frame({"type": "hello", "versions": [1], "client": "churn/1", "name": "Churn"})


@pytest.mark.trio
async def test_thousands_of_connects_and_disconnects_leave_the_memory_flat() -> None:
    """2,000 connections opened and dropped (some say nothing, some half a
    frame, some a hello and go): afterwards the server holds no connection,
    and its memory is what it was after the first few hundred (sessions of
    the hellos are kept for their time to live, a few hundred bytes each)."""
    with trio.fail_after(GAME_HANG):  # (thousands of connections, one after another)
        async with running_server() as (port, _, server):

            async def churn(n: int) -> None:
                for i in range(n):
                    stream = await trio.open_tcp_stream(HOST, port)
                    if i % 3 == 1:
                        await stream.send_all(HELLO[:7])  # half a frame, then gone
                    elif i % 3 == 2:
                        await stream.send_all(HELLO)
                        await stream.receive_some(4096)
                    await stream.aclose()

            async def settle() -> None:
                # The shell forgets a connection before the core task has
                # handled its "closed" input (the core may be giving a commit
                # its head start): wait for both, or the assertions say which.
                with trio.move_on_after(HANG):
                    while server._connections or server.gateway._links:
                        await trio.sleep(0.01)

            await churn(300)
            await settle()
            gc.collect()
            tracemalloc.start()
            before = tracemalloc.take_snapshot()
            await churn(1700)
            await settle()
            gc.collect()
            after = tracemalloc.take_snapshot()
            tracemalloc.stop()
            assert not server._connections
            assert not server.gateway._links
            grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
            hellos = 1700 // 3
            # what stays: a session per hello (until its time to live), nothing per connection
            assert grown < hellos * 4000, f"{grown} bytes more after 1,700 connections"


def game_with_a_vanishing_player(after_pushes: int) -> tuple[InProcess, int]:
    """Ann plays with two server bots and vanishes for good after her
    `after_pushes`-th push; the game is played to its end."""
    world = InProcess(
        entropy=FixedEntropy(f"vanish {after_pushes}"),
        config=ServerConfig(idle_timeout=600, grace=30, reply_timer=20),
    )
    ann = world.connect("Ann", bot=Bot("random", seed="ann"))
    world.settle()
    settings = m.RoomSettings.for_players(3, turn_timer=30)
    for request in (
        m.CreateRoom(settings=settings),
        m.AddBot(strategy="random"),
        m.AddBot(strategy="heuristic"),
        m.Ready(ready=True),
        m.StartGame(),
    ):
        ann.send(request)
        world.settle()
    pushes = lambda: sum(1 for r in ann.received if r.ROLE == "push")  # noqa: E731
    world.run(lambda: pushes() >= after_pushes or bool(world.records))
    world.disconnect(ann)
    world.run(lambda: bool(world.records), max_seconds=24 * 3600)
    return world, pushes()


@pytest.mark.parametrize("after_pushes", [1, 2, 3, 4, 6, 10, 20, 35, 50, 80, 120])
def test_a_player_vanishing_at_any_step_of_a_game_does_not_stop_it(after_pushes: int) -> None:
    """From the seed commitment to the final reveal: the server's timers
    and the stand-in play the seat, the game ends, and its record verifies
    (the seat forfeits when its secrets were needed and never came)."""
    world, seen = game_with_a_vanishing_player(after_pushes)
    assert not world.faults, world.faults[0]
    (finished,) = world.records
    verdict = verify_record(finished.record)
    assert verdict.ok, verdict.reasons()
    assert seen >= min(after_pushes, 1)


@pytest.mark.trio
async def test_a_server_with_more_connections_than_its_inbox_holds_stops_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every connection tells the core task it closed; when the server goes
    down nothing reads those notes, so they must not be waited on (with
    19,000 connections, more than the inbox holds, a stop hung for ever)."""
    monkeypatch.setattr(net, "INBOX", 8)
    with trio.fail_after(GAME_HANG):
        async with running_server() as (port, _, server):
            streams = []
            for _ in range(40):
                stream = await trio.open_tcp_stream(HOST, port)
                await stream.send_all(HELLO)
                streams.append(stream)
            while len(server.gateway._links) < 40:
                await trio.sleep(0.01)
            with trio.fail_after(HANG):
                # No grace: every connection is still open when the tasks are
                # cancelled, as many are after a grace period with 19,000.
                await server.shut_down(grace=0)
            for stream in streams:
                await stream.aclose()

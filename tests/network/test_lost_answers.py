"""A lobby request whose connection goes down before its answer is asked
again once the session has resumed, where that is safe (client/session.py,
`RETRIED`; docs/CLIENT.md): three `run_bot` bots play a game, one of them
through a proxy (tests/network/proxy.py) that drops its connection at the
request chosen, either before the request reaches the server or after the
server did it, before its answer reaches the bot. The bot goes on as if
nothing happened: no second room, a ready said once, a game started once, a
record fetched and verified. And a client of its own: a bot added, a room
left, each answer lost, is done once.

A real `NetServer` on 127.0.0.1 in this process; every wait has a deadline
and waits for what it means."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import pytest
import trio

from oriflamme.client.commands import GameResult, run_bot
from oriflamme.client.session import Session, tcp
from oriflamme.launcher.house_bots import HouseBots
from oriflamme.protocol import messages as m
from oriflamme.protocol.record import encode_record
from oriflamme.server.core import GameFinished, Gateway, Lobby, ServerConfig
from oriflamme.server.net import NetServer
from tests.deadlines import GAME_HANG, HANG, until

from .proxy import ANSWER, DROP, Proxy, Watch
from .test_misuse import FAST

pytestmark = pytest.mark.network


def once(kind: str, action: str) -> Watch:
    """The first request of type `kind` gets `action`; every other frame goes by."""
    done = False

    def watch(frame: dict[str, Any]) -> str | None:
        nonlocal done
        if done or frame.get("type") != kind:
            return None
        done = True
        return action

    return watch


@asynccontextmanager
async def serving(config: ServerConfig | None = None) -> AsyncIterator[tuple[int, NetServer]]:
    """A `NetServer` on 127.0.0.1 that serves its records (`get_record`)."""
    records: dict[str, bytes] = {}

    def keep(finished: GameFinished) -> None:
        records[finished.record_id] = encode_record(finished.record)

    async def load(record_id: str) -> bytes | None:
        return records.get(record_id)

    server = NetServer(
        Gateway(Lobby(config or ServerConfig())),
        bots=HouseBots(),
        on_record=keep,
        load_record=load,
    )
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    async with trio.open_nursery() as nursery:
        await nursery.start(server.run, listeners)
        yield listeners[0].socket.getsockname()[1], server
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def proxied(port: int, watch: Watch) -> AsyncIterator[tuple[int, Proxy]]:
    proxy = Proxy(port, watch)
    async with trio.open_nursery() as nursery:
        yield await nursery.start(proxy.serve), proxy
        nursery.cancel_scope.cancel()


def rooms_made(server: NetServer) -> int:
    return server.gateway.lobby._next_room - 1


def bots_seen(session: Session, count: int) -> bool:
    room = session.state.room
    return room is not None and sum(1 for s in room.seats if s.bot) == count


def seated(server: NetServer) -> int:
    return sum(not s.free for r in server.gateway.lobby.rooms.values() for s in r.seats)


# The request, and whether the bot that makes it is the room's first (its
# host: it lists the rooms, creates the room, says ready first, starts the
# game) or the second (it joins).
REQUESTS = [
    ("list_rooms", True),
    ("create_room", True),
    ("join_room", False),
    ("ready", True),
    ("start_game", True),
    ("get_record", False),
]


@pytest.mark.trio
@pytest.mark.parametrize("where", [DROP, ANSWER])
@pytest.mark.parametrize(("kind", "first"), REQUESTS)
async def test_a_bot_asks_again_a_lobby_request_whose_connection_went_down(
    kind: str, first: bool, where: str
) -> None:
    results: dict[str, list[GameResult]] = {"ann": [], "bob": [], "cy": []}
    played: dict[str, int] = {}
    with trio.fail_after(GAME_HANG):  # (a whole game)
        async with (
            serving() as (port, server),
            proxied(port, once(kind, where)) as (proxy_port, proxy),
            trio.open_nursery() as nursery,
        ):

            async def bot(name: str, through: int) -> None:
                played[name] = await run_bot(
                    "127.0.0.1",
                    through,
                    room="lost",
                    strategy="random",
                    name=name,
                    seed=len(name),
                    on_game=results[name].append,
                )

            # Ann is the first, and makes the room; then Bob, then Cy.
            nursery.start_soon(bot, "ann", proxy_port if first else port)
            await until(lambda: rooms_made(server) == 1, HANG)
            nursery.start_soon(bot, "bob", port if first else proxy_port)
            await until(lambda: seated(server) == 2, HANG)
            nursery.start_soon(bot, "cy", port)
    assert proxy.dropped == 1 and proxy.connections >= 2  # dropped once, and came back
    assert played == {"ann": 1, "bob": 1, "cy": 1}
    assert rooms_made(server) == 1  # a room made again would be a second one
    (record_id,) = {r.record_id for got in results.values() for r in got}
    for got in results.values():
        (result,) = got
        assert result.verdict is not None and result.verdict.ok, result.unchecked
        assert result.record_id == record_id


@pytest.mark.trio
@pytest.mark.parametrize("where", [DROP, ANSWER])
async def test_a_bot_added_and_a_room_left_whose_answers_were_lost_are_done_once(
    where: str,
) -> None:
    with trio.fail_after(HANG):
        async with serving() as (port, server):
            for kind in ("add_bot", "leave_room"):
                async with proxied(port, once(kind, where)) as (proxy_port, proxy):
                    session = Session(tcp("127.0.0.1", proxy_port), "Ann", backoff=FAST)
                    async with trio.open_nursery() as nursery:
                        await nursery.start(session.run)
                        settings = m.RoomSettings.for_players(3)
                        await session.request(m.CreateRoom(settings=settings, name=kind))
                        room = session.state.room
                        assert room is not None
                        answer = await session.request(m.AddBot(strategy="random"))
                        assert isinstance(answer, m.Ok)
                        if kind == "leave_room":
                            answer = await session.request(m.LeaveRoom())
                            assert isinstance(answer, m.Ok) and session.state.room is None
                            assert not server.gateway.lobby.rooms.get(room.room)  # (closed)
                        else:
                            bots = [s for s in server.gateway.lobby.rooms[room.room].seats if s.bot]
                            assert len(bots) == 1  # not two
                            await session.wait_until(partial(bots_seen, session, 1))
                        session.close()
                    assert proxy.dropped == 1 and proxy.connections == 2

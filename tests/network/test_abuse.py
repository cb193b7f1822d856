"""One client against everyone, over real TCP: what bounds each attack of
docs/SERVER.md's "Abuse limits" (how long each takes is `bench/abuse.py`'s
to measure, never a test's).

- connect, hello, close, again and again: the sessions of one address stay
  at its bound, and a newcomer is still welcome;
- spectate a busy room and drop, again and again: the spectators away keep
  no pushes (their history is empty while the game goes on), and the room
  and the address keep no more of them than their bounds;
- 80 large answers asked for in one write: every one comes, in order, at
  the pace the client reads, and the connection is never dropped;
- connections that send without reading: the server stops reading them, so
  what it holds for each is bounded in bytes, and a player is still served.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import trio

from oriflamme.client.bots import Bot
from oriflamme.protocol import messages as m
from oriflamme.protocol.codec import encode_frame
from oriflamme.server.core import ServerConfig
from oriflamme.server.net import READ_PAUSE, READ_SIZE, NetServer, _Connection
from tests.deadlines import HANG, until

from .test_misuse import (
    HOST,
    SMALL_BUFFER,
    Held,
    Raw,
    answer_held,
    finish,
    in_round_two_place,
    pings,
    running_server,
    small_send_buffer,
    start,
    wait_held,
)

pytestmark = pytest.mark.network


def sessions_from(server: NetServer, address: str = HOST) -> int:
    return len(server.gateway.lobby.sessions.from_address(address))


@pytest.mark.trio
async def test_sessions_opened_and_dropped_by_one_address_stay_at_its_bound() -> None:
    bounded = ServerConfig(sessions_per_address=5)
    with trio.fail_after(HANG):
        async with running_server(config=bounded) as (port, _, server):
            for i in range(30):
                raw = await Raw.connect(port)
                assert isinstance(await raw.hello(f"Churn {i}"), m.Welcome)
                await raw.aclose()
                assert sessions_from(server) <= 5
            held = [await Raw.connect(port) for _ in range(5)]
            for raw in held:  # five connected: each new one lets go of one away
                assert isinstance(await raw.hello("Here"), m.Welcome)
            await until(lambda: not server.gateway.lobby.sessions.away)
            refused = await Raw.connect(port)  # all five connected: no room
            answer = await refused.hello("Late")
            assert isinstance(answer, m.Error) and (answer.code, answer.fatal) == (
                "server_busy",
                True,
            )
            assert "from your address (5 at most)" in answer.message
            await held[0].aclose()
            await until(lambda: len(server.gateway.lobby.sessions.away) == 1)
            again = await Raw.connect(port)
            assert isinstance(await again.hello("Next"), m.Welcome)  # the one away went
            for raw in (*held[1:], again, refused):
                await raw.aclose()


@pytest.mark.trio
async def test_spectators_who_drop_keep_no_pushes_and_stay_within_their_bounds() -> None:
    bounded = ServerConfig(sessions_per_address=12, spectators_per_room=5)
    held = Held(Bot("random", seed="ann"), in_round_two_place)
    with trio.fail_after(HANG):
        async with (
            running_server(config=bounded) as (port, records, server),
            trio.open_nursery() as nursery,
        ):
            (ann,) = await start(nursery, port, [("Ann", held)], server_bots=4)
            await wait_held(ann, held)
            room_id = ann.state.room.room
            watcher = await Raw.connect(port)
            stays = await watcher.hello("Stays")
            assert isinstance(stays, m.Welcome)
            assert isinstance(await watcher.request(m.Spectate(room=room_id)), m.Ok)
            dropped: list[int] = []
            for i in range(30):
                raw = await Raw.connect(port)
                welcome = await raw.hello(f"Drop {i}")
                assert isinstance(welcome, m.Welcome)
                assert isinstance(await raw.request(m.Spectate(room=room_id)), m.Ok)
                await raw.aclose()  # without reading what the room sends
                dropped.append(welcome.player)
            lobby = server.gateway.lobby
            room = lobby.rooms[room_id]
            # The last four dropped are away in the room (the others were let go).
            await until(
                lambda: {s.player for s in room.spectators if not s.connected} == set(dropped[-4:])
            )
            assert len(room.spectators) <= 5 and sessions_from(server) <= 12
            away = [s for s in room.spectators if not s.connected]
            seqs = [s.last_seq for s in away]

            await answer_held(ann, held)
            await finish([ann], records)

            assert away and all(s.history is None for s in away)  # nothing kept for them
            assert all(s.last_seq > seq for s, seq in zip(away, seqs, strict=True))  # counted
            # The one connected keeps what it may need to resume.
            assert lobby.sessions.by_player[stays.player].history
            await watcher.aclose()
            nursery.cancel_scope.cancel()


@pytest.mark.trio
async def test_eighty_large_answers_asked_for_at_once_all_come_at_the_client_s_pace() -> None:
    """80 `get_record` in one write, 18 KB each (1.4 MB in all, past the 1 MiB
    a client may leave unread): the records are read one at a time, once
    what waits for the client is small, so every answer comes, in order, and
    the connection stays open. (Small socket buffers: the answers wait in
    the server, not in the kernel.)"""
    record = bytes(range(256)) * 72  # 18 KB

    async def load(record_id: str) -> bytes:
        return record

    with trio.fail_after(HANG):
        async with running_server(load_record=load) as (port, _, server):
            raw = await Raw.connect(port, buffer=SMALL_BUFFER)
            assert isinstance(await raw.hello("Reader"), m.Welcome)
            small_send_buffer(raw.on(server))
            first = 100
            burst = b"".join(
                encode_frame({"type": "get_record", "record_id": f"{i:032x}", "id": first + i})
                for i in range(80)
            )
            await raw.stream.send_all(burst)
            most = 0
            answers: list[m.Message] = []
            connection = raw.on(server)
            while len(answers) < 80:
                most = max(most, connection.queued)
                message = await raw.receive()
                assert message is not None, "the server dropped a client that reads"
                answers.append(message)
                await trio.sleep(0)  # (a client that reads, not at once)
            assert [getattr(a, "id", None) for a in answers] == list(range(first, first + 80))
            assert all(isinstance(a, m.RecordData) and a.data == record for a in answers)
            assert most <= READ_PAUSE + 2 * len(record)  # it never waited for more
            assert isinstance(await raw.request(m.Ping()), m.Pong)
            await raw.aclose()


@pytest.mark.trio
async def test_clients_that_send_without_reading_are_held_to_what_the_server_read() -> None:
    """Twenty connections send pings without reading an answer: each is
    taken at the message rate, then no longer read, so what the server
    holds of what they sent is at most a read's worth each; meanwhile a
    player's round trips are answered."""
    with trio.fail_after(HANG):
        async with (
            running_server() as (port, _, server),
            trio.open_nursery() as nursery,
        ):
            floods = [await Raw.connect(port, buffer=SMALL_BUFFER) for _ in range(20)]
            for raw in floods:
                assert isinstance(await raw.hello("Flood"), m.Welcome)
                small_send_buffer(raw.on(server))

            async def flood(raw: Raw) -> None:
                with trio.move_on_after(HANG):  # (it blocks: the server reads no more)
                    for round_ in range(200):
                        await raw.stream.send_all(pings(1000 + 1000 * round_, 1000))

            for raw in floods:
                nursery.start_soon(flood, raw)
            connections = [raw.on(server) for raw in floods]
            await until(held_all(connections))
            player = await Raw.connect(port)
            assert isinstance(await player.hello("Player"), m.Welcome)
            for _ in range(10):
                assert isinstance(await player.request(m.Ping()), m.Pong)
            links = server.gateway._links
            buffered = [link.connection.buffered for link in links.values()]
            assert max(buffered) <= 2 * READ_SIZE  # what it read and did not take, at most
            nursery.cancel_scope.cancel()


def held_all(connections: list[_Connection]) -> Callable[[], bool]:
    """Whether the server reads none of `connections` any more (held back by
    the message rate, or dropped for not reading)."""
    return lambda: all(c.held or c.cancel.cancel_called for c in connections)


@pytest.mark.trio
async def test_connections_opened_faster_than_the_rate_are_refused_before_anything() -> None:
    """Past `connections_per_address` new connections at once from one
    address, and `connection_rate` a second after, a connection gets the
    fatal `server_busy` and is closed at once: the server starts nothing
    for it (no connection task, no session)."""
    limited = ServerConfig(connections_per_address=3, connection_rate=0.01)
    with trio.fail_after(HANG):
        async with running_server(config=limited) as (port, _, server):
            for i in range(3):
                raw = await Raw.connect(port)
                assert isinstance(await raw.hello(f"Quick {i}"), m.Welcome)
                await raw.aclose()
            await until(lambda: not server._connections)
            refused = await Raw.connect(port)
            answer = await refused.receive()
            assert isinstance(answer, m.Error) and (answer.code, answer.fatal) == (
                "server_busy",
                True,
            )
            assert "too many new connections" in answer.message
            assert await refused.receive() is None  # closed
            assert not server._connections and len(server.gateway.lobby.sessions) == 3
            assert server.admission.refused == {HOST: 1}
            await refused.aclose()

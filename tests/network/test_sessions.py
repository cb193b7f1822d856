"""The trio server and client sessions on trio's autojump clock: timers, grace
periods, a client killed and started again, the stand-in, reconnection.

The clients reach the server through in-memory streams (as the server's own
bots do), so a minute of turn timer costs no real time, and no test here
opens a socket: none is marked `network`. Their deadlines are the clock's
virtual seconds too: they bound the server's own timers, not the machine.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio
import trio.testing

from oriflamme.client.bots import Behaviour, Bot, Seated
from oriflamme.client.secret_store import SecretStore
from oriflamme.client.session import Backoff, Connector, Session
from oriflamme.protocol import messages as m
from oriflamme.protocol.record import BACK, STAND_IN
from oriflamme.protocol.verify import verify_record
from oriflamme.server.core import GameFinished, Gateway, Lobby, ServerConfig
from oriflamme.server.net import NetServer
from tests.deadlines import until

CONFIG = ServerConfig(reply_timer=30, grace=60, idle_timeout=120)


class Undecided(Behaviour):
    """Answers what is automatic, never a decision."""

    def messages(self, client: Seated) -> list[m.Message]:
        game = client.state.game
        return [] if game is None else game.automatic()


def memory_connector(net: NetServer, nursery: trio.Nursery) -> Connector:
    """Connections to `net` over in-memory streams, served in `nursery`."""

    async def connect() -> trio.abc.Stream:
        near, far = trio.testing.memory_stream_pair()
        nursery.start_soon(net.serve_stream, far, "test")
        return near

    return connect


class Gated(trio.abc.Stream):
    """A client's stream whose writes wait while `hold()` says so."""

    def __init__(self, inner: trio.abc.Stream, hold: Callable[[], bool]) -> None:
        self.inner = inner
        self.hold = hold

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await until(lambda: not self.hold())  # (the server's doing, or another process's)
        await self.inner.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.inner.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        return await self.inner.receive_some(max_bytes)

    async def aclose(self) -> None:
        await self.inner.aclose()


def gated(connect: Connector, hold: Callable[[], bool]) -> Connector:
    """`connect`, its streams `Gated` by `hold`: the test holds its players back."""

    async def connect_gated() -> trio.abc.Stream:
        return Gated(await connect(), hold)

    return connect_gated


@asynccontextmanager
async def server() -> AsyncIterator[tuple[Connector, list[GameFinished]]]:
    records: list[GameFinished] = []
    net = NetServer(Gateway(Lobby(CONFIG)), bots=None, on_record=records.append)
    async with trio.open_nursery() as nursery:
        await nursery.start(net.run)
        yield memory_connector(net, nursery), records
        nursery.cancel_scope.cancel()


def player(connect: Connector, name: str, seed: int, **options: object) -> Session:
    options.setdefault("behaviour", Behaviour(Bot("random", rng=random.Random(seed))))
    return Session(connect, name, backoff=Backoff(first=0.5, most=2), **options)  # type: ignore[arg-type]


async def seat_three(nursery: trio.Nursery, sessions: list[Session], timer: int | None) -> None:
    for s in sessions:
        await nursery.start(s.run)
    settings = m.RoomSettings(
        players=3, variant="standard", edition="revised", turn_timer=timer, first_player="host"
    )
    await sessions[0].request(m.CreateRoom(settings=settings))
    for s in sessions[1:]:
        await s.request(m.JoinRoom(room=sessions[0].state.room.room))
    for s in sessions:
        await s.request(m.Ready(ready=True))
    await sessions[0].request(m.StartGame())


def round_of(session: Session) -> int:
    game = session.state.game
    return 0 if game is None or game.state is None else int(game.state.view["round"])


@pytest.mark.trio
async def test_a_hello_the_server_refuses_ends_the_session_with_its_reason(
    autojump_clock: trio.abc.Clock,
) -> None:
    from oriflamme.client.session import SessionEnded

    name = "Maximilian-Alexander the Third"  # the protocol's 32 characters at most...
    config = ServerConfig(name_length=16)  # ...but this server's 16
    net = NetServer(Gateway(Lobby(config)), bots=None)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            await nursery.start(net.run)
            session = player(memory_connector(net, nursery), name, 0)
            # Connecting again would be refused again: it is said, not retried for ever.
            with pytest.raises(SessionEnded, match="hello.name: at most 16 characters"):
                await session.run()
            # A name the protocol itself refuses is not even sent.
            session = player(memory_connector(net, nursery), "x" * 33, 0)
            with pytest.raises(SessionEnded, match="hello.name: expected 1..32 characters"):
                await session.run()
            nursery.cancel_scope.cancel()


@pytest.mark.trio
async def test_a_turn_timer_decides_for_a_silent_player(autojump_clock: trio.abc.Clock) -> None:
    with trio.fail_after(10_000):
        async with server() as (connect, records):
            sessions = [
                player(connect, "p0", 0),
                player(connect, "p1", 1, behaviour=Undecided(None)),
                player(connect, "p2", 2),
            ]
            async with trio.open_nursery() as nursery:
                start = trio.current_time()
                await seat_three(nursery, sessions, timer=30)
                await sessions[0].wait_until(lambda: bool(records))
                nursery.cancel_scope.cancel()
            record = records[0].record
            decided = [e for e in record.log if e.by_server]
            assert decided and all(e.seat == 1 for e in decided)
            assert trio.current_time() - start >= 30 * len(decided)
            assert verify_record(record).ok


@pytest.mark.trio
async def test_a_client_killed_mid_game_takes_its_seat_back(
    autojump_clock: trio.abc.Clock, tmp_path: Path
) -> None:
    with trio.fail_after(10_000):
        async with server() as (connect, records):
            store = SecretStore(tmp_path / "p1")
            first = player(connect, "p1", 1, store=store, server="test")
            sessions = [player(connect, "p0", 0), first, player(connect, "p2", 2)]
            async with trio.open_nursery() as nursery:
                await seat_three(nursery, sessions, timer=None)
                await first.wait_until(lambda: round_of(first) >= 3)
                first.close()  # the process dies: nothing of it is left but its directory
                await trio.sleep(5)
                again = player(connect, "p1", 1, store=SecretStore(tmp_path / "p1"), server="test")
                await nursery.start(again.run)
                await again.wait_until(
                    lambda: again.state.game is not None and again.state.game.end is not None
                )
                nursery.cancel_scope.cancel()
            record = records[0].record
            assert record.seat_changes == ()  # back within the grace period
            assert verify_record(record).ok and [v.status for v in record.verdicts] == ["ok"] * 3
            assert (store.secrets_path(record.game_id, 1).stat().st_mode & 0o777) == 0o600


@pytest.mark.trio
async def test_a_seat_away_is_stood_in_for_and_taken_back(
    autojump_clock: trio.abc.Clock, tmp_path: Path
) -> None:
    with trio.fail_after(10_000):
        async with server() as (connect, records):
            store = SecretStore(tmp_path / "p2")
            away = player(connect, "p2", 2, store=store, server="test")
            sessions = [player(connect, "p0", 0), player(connect, "p1", 1), away]
            async with trio.open_nursery() as nursery:
                await seat_three(nursery, sessions, timer=None)
                await away.wait_until(lambda: round_of(away) >= 2)
                away.close()
                watcher = sessions[0]
                await watcher.wait_until(lambda: watcher.state.room.seats[2].bot == "stand_in")
                back = player(connect, "p2", 2, store=SecretStore(tmp_path / "p2"), server="test")
                await nursery.start(back.run)
                await watcher.wait_until(
                    lambda: (
                        watcher.state.room.seats[2].bot is None
                        or watcher.state.room.state == "finished"
                    )
                )
                await back.wait_until(
                    lambda: back.state.game is not None and back.state.game.end is not None
                )
                nursery.cancel_scope.cancel()
            record = records[0].record
            changes = [(c.seat, c.change) for c in record.seat_changes]
            assert changes[0] == (2, STAND_IN)
            assert changes == [(2, STAND_IN), (2, BACK)] or record.verdicts[2].status == "forfeited"
            assert verify_record(record).problems == ()


@pytest.mark.trio
async def test_a_dropped_connection_is_resumed_with_the_pushes_missed(
    autojump_clock: trio.abc.Clock,
) -> None:
    with trio.fail_after(10_000):
        async with server() as (connect, records):
            drops = 0
            streams: list[trio.abc.Stream] = []

            async def flaky() -> trio.abc.Stream:
                stream = await connect()
                streams.append(stream)
                return stream

            ann = player(flaky, "Ann", 0)
            sessions = [ann, player(connect, "Bo", 1), player(connect, "Cy", 2)]
            async with trio.open_nursery() as nursery:
                await seat_three(nursery, sessions, timer=None)
                for _ in range(3):

                    def reached(at: int = 2 + drops) -> bool:
                        return round_of(ann) >= at

                    await ann.wait_until(reached)
                    await streams[-1].aclose()  # the line goes down
                    drops += 1
                    await ann.wait_until(lambda: ann.connected)
                await ann.wait_until(
                    lambda: ann.state.game is not None and ann.state.game.end is not None
                )
                nursery.cancel_scope.cancel()
            assert len(streams) >= 4 and verify_record(records[0].record).ok
            assert ann.state.problems == []

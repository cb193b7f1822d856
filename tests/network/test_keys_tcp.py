"""Players with keys over TCP (docs/PROTOCOL.md, "Keys and the handshake"):
two keyed players seat themselves at a table; one goes away and comes
back by another loopback address, from another state directory, with
nothing but its key: its session, room and seat are found again, the game
is played to its end and both seats' checks hold, and its record verifies
with every decision's signature checked. Each client pins the server's key
at each address it reached.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest
import trio

from oriflamme.client.bots import Behaviour, Bot
from oriflamme.client.identity import ServerKeys
from oriflamme.client.secret_store import SecretStore
from oriflamme.client.session import Backoff, Session, tcp
from oriflamme.client.state import UNSEALED
from oriflamme.engine import Card
from oriflamme.protocol import identity
from oriflamme.protocol import messages as m
from oriflamme.protocol.record import decode_record, encode_record
from oriflamme.protocol.signatures import SEAT, SERVER, decisions
from oriflamme.protocol.verify import verify_record
from oriflamme.server.core import GameFinished, Gateway, Lobby, ServerConfig
from oriflamme.server.net import NetServer
from tests.deadlines import GAME_HANG
from tests.network.test_rejoin import serve_twice

pytestmark = pytest.mark.network

ANN = identity.private_key(bytes(range(32)))
BOB = identity.private_key(bytes(range(1, 33)))


def keyed(host: str, port: int, name: str, key: object, folder: Path, seed: int) -> Session:
    return Session(
        tcp(host, port),
        name,
        server=f"{host}:{port}",
        store=SecretStore(folder / "state"),
        behaviour=Behaviour(Bot("random", rng=random.Random(seed))),
        backoff=Backoff(first=0.01, most=0.05),
        key=key,  # type: ignore[arg-type]
        server_keys=ServerKeys(folder / "known_keys"),
    )


async def at_one_table(
    nursery: trio.Nursery, port: int, folder: Path
) -> tuple[Session, Session, m.RoomState]:
    """Ann (her room's host) and Bob, keyed, at a 2-seat table."""
    ann = keyed("127.0.0.1", port, "Ann", ANN, folder / "here", 1)
    bob = keyed("127.0.0.1", port, "Bob", BOB, folder / "bob", 2)
    for session in (ann, bob):
        await nursery.start(session.run)
    await ann.request(m.CreateRoom(settings=m.RoomSettings.for_players(2)))
    room = ann.state.room
    assert room is not None
    await bob.request(m.JoinRoom(room=room.room))
    return ann, bob, room


@pytest.mark.trio
async def test_a_key_alone_brings_its_player_back_by_another_address(tmp_path: Path) -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("127.0.0.2 is a loopback address on Linux only")
    finished: list[GameFinished] = []
    net = NetServer(
        Gateway(Lobby(ServerConfig()), allow_anonymous=False),
        bots=None,
        on_record=finished.append,
    )
    lobby = net.gateway.lobby
    with trio.fail_after(GAME_HANG):
        async with trio.open_nursery() as nursery:
            port = await serve_twice(nursery, net)
            ann, bob, room = await at_one_table(nursery, port, tmp_path)
            player, seat = ann.state.player, room.seats[0]
            ann.close()
            # Elsewhere: another address, another state directory (no
            # token, no secrets), another name typed; the same key.
            back = keyed("127.0.0.2", port, "Someone", ANN, tmp_path / "there", 3)
            await nursery.start(back.run)
            assert back.state.player == player and back.name == "Ann"
            assert back.state.room is not None and back.state.room.room == room.room
            assert back.state.room.seats[0].player == seat.player == player
            for session in (back, bob):
                await session.request(m.Ready(ready=True))
            await back.request(m.StartGame())
            await back.wait_until(
                lambda: back.state.game is not None and back.state.game.end is not None
            )
            assert [v.status for v in back.state.game.check_end()] == ["ok", "ok"]
            # The record: every decision signed by the seat that made it (or
            # by the server, for one it made), each signature checked.
            (game,) = finished
            record = decode_record(encode_record(game.record))
            assert record.keys == (identity.public_bytes(ANN), identity.public_bytes(BOB))
            assert record.server_key == lobby.server_key
            verdict = verify_record(record)
            assert verdict.ok, verdict.reasons()
            signed = decisions(record)
            assert all(d.signer in (SEAT, SERVER) and d.ok(record) for d in signed)
            assert {d.seat for d in signed if d.signer == SEAT} == {0, 1}
            # Two players, keyed; the server's key pinned at both addresses.
            assert set(lobby.sessions.by_key) == {
                identity.public_bytes(ANN),
                identity.public_bytes(BOB),
            }
            for folder, host in [("here", "127.0.0.1"), ("there", "127.0.0.2")]:
                pinned = ServerKeys(tmp_path / folder / "known_keys")
                assert pinned.check(f"{host}:{port}", lobby.server_key) is None
            assert back.key_change is None
            nursery.cancel_scope.cancel()


@pytest.mark.trio
async def test_a_key_alone_brings_its_seat_back_in_mid_game_on_another_machine(
    tmp_path: Path,
) -> None:
    """Ann goes in the middle of the game, cards of hers face down on the
    table, and comes back from another address and another state directory
    (no token, no secrets) with her key alone: the sealed seed the server
    gives back brings her seed back, and her seed her placements; she plays
    on, opens her cards, and both seats' checks hold."""
    if not sys.platform.startswith("linux"):
        pytest.skip("127.0.0.2 is a loopback address on Linux only")
    finished: list[GameFinished] = []
    net = NetServer(Gateway(Lobby(ServerConfig())), bots=None, on_record=finished.append)
    with trio.fail_after(GAME_HANG):
        async with trio.open_nursery() as nursery:
            port = await serve_twice(nursery, net)
            ann, bob, room = await at_one_table(nursery, port, tmp_path)
            for session in (ann, bob):
                await session.request(m.Ready(ready=True))
            await ann.request(m.StartGame())

            def placed(session: Session) -> dict[int, Card]:
                game = session.state.game
                secrets = None if game is None else game.secrets
                return {} if secrets is None or secrets.deal is None else secrets.placed_cards()

            await ann.wait_until(lambda: len(placed(ann)) >= 3)
            ann.close()
            had = placed(ann)
            back = keyed("127.0.0.2", port, "Ann", ANN, tmp_path / "there", 3)
            await nursery.start(back.run)
            await back.wait_until(lambda: placed(back).items() >= had.items())
            game = back.state.game
            assert game is not None and UNSEALED in back.state.notices
            await back.wait_until(lambda: game.end is not None)
            assert [v.status for v in game.check_end()] == ["ok", "ok"]
            assert back.state.problems == [] and game.problems == []
            (ended,) = finished
            assert [v.status for v in ended.record.verdicts] == ["ok", "ok"]
            assert verify_record(ended.record).ok
            nursery.cancel_scope.cancel()


@pytest.mark.trio
async def test_join_with_a_name_given_takes_it_for_its_key_if_it_is_free(tmp_path: Path) -> None:
    """`join --name` with a key that holds another name here: the key takes
    the name given (`rename`), unless another key holds it."""
    from types import SimpleNamespace

    from oriflamme.client.tui.join import _take_name
    from tests.network.test_sessions import memory_connector

    net = NetServer(Gateway(Lobby(ServerConfig())), bots=None)
    with trio.fail_after(GAME_HANG):
        async with trio.open_nursery() as nursery:
            await nursery.start(net.run)
            connect = memory_connector(net, nursery)
            for name, key in [("Ann", ANN), ("Bob", BOB)]:
                first = Session(connect, name, key=key)
                await nursery.start(first.run)
                first.close()
            ann = Session(connect, "Robert", key=ANN)
            await nursery.start(ann.run)
            assert ann.name == "Ann"  # (the name her key holds)
            bridge = SimpleNamespace(controller=SimpleNamespace(lobby=SimpleNamespace()))
            await _take_name(ann, "Bob", bridge)  # type: ignore[arg-type]
            assert ann.name == "Ann" and "not free" in bridge.controller.lobby.status
            await _take_name(ann, "Annie", bridge)  # type: ignore[arg-type]
            assert ann.name == bridge.controller.lobby.name == "Annie"
            assert net.gateway.lobby.names.name_of(identity.public_bytes(ANN)) == "Annie"
            nursery.cancel_scope.cancel()


@pytest.mark.trio
async def test_a_key_alone_takes_its_player_back_to_a_game_it_stepped_out_of(
    tmp_path: Path,
) -> None:
    """My games (docs/PROTOCOL.md): Ann steps out of a game of days keeping
    her seat, is told when it waits for her, and from another address and
    another state directory, with her key alone, lists her games, goes back
    to it and plays it to its end; the record verifies, every signature
    checked."""
    if not sys.platform.startswith("linux"):
        pytest.skip("127.0.0.2 is a loopback address on Linux only")
    finished: list[GameFinished] = []
    net = NetServer(Gateway(Lobby(ServerConfig())), bots=None, on_record=finished.append)
    days = m.RoomSettings.for_players(2, turn_timer=2 * 86400)
    with trio.fail_after(GAME_HANG):
        async with trio.open_nursery() as nursery:
            port = await serve_twice(nursery, net)
            ann = keyed("127.0.0.1", port, "Ann", ANN, tmp_path / "here", 1)
            bob = keyed("127.0.0.1", port, "Bob", BOB, tmp_path / "bob", 2)
            for session in (ann, bob):
                await nursery.start(session.run)
            await ann.request(m.CreateRoom(settings=days))
            room = ann.state.room
            assert room is not None
            await bob.request(m.JoinRoom(room=room.room))
            for session in (ann, bob):
                await session.request(m.Ready(ready=True))
            await ann.request(m.StartGame())
            await ann.wait_until(
                lambda: ann.state.game is not None and ann.state.game.server_seed is not None
            )
            await ann.request(m.LeaveRoom(keep_seat=True))
            await ann.wait_until(lambda: ann.state.games_waiting == (room.room,))
            ann.close()
            back = keyed("127.0.0.2", port, "Ann", ANN, tmp_path / "there", 3)
            await nursery.start(back.run)
            await back.wait_until(lambda: back.state.games_waiting == (room.room,))
            listed = await back.request(m.ListGames())
            assert isinstance(listed, m.GameList)
            [mine] = listed.games
            assert (mine.room, mine.seat, mine.here, mine.names) == (
                room.room,
                0,
                False,
                ("Ann", "Bob"),
            )
            assert 0 in mine.waiting_for
            await back.request(m.JoinRoom(room=room.room))
            await back.wait_until(lambda: bool(finished))
            game = back.state.game
            assert game is not None and UNSEALED in back.state.notices
            await back.wait_until(lambda: game.end is not None)
            assert [v.status for v in game.check_end()] == ["ok", "ok"]
            (ended,) = finished
            assert not ended.record.seats[0].stand_in  # (the game waited for Ann)
            verdict = verify_record(decode_record(encode_record(ended.record)))
            assert verdict.ok, verdict.reasons()
            nursery.cancel_scope.cancel()

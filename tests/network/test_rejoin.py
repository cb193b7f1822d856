"""Coming back to a server by another address (issue 25, item 7): the server
has an identity (`welcome.server_id`, kept with its data directory), and a
client keeps its session by that identity, not by the address typed.

Most tests here reach the server through in-memory streams (the address a
`Session` is given is then only the name it keeps the session under): they
open no socket. The one marked `network` does it over TCP, by two loopback
addresses of one server.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import trio

from oriflamme.client.bots import Behaviour, Bot
from oriflamme.client.secret_store import SecretStore
from oriflamme.client.session import Backoff, Connector, Session, SessionEnded, tcp
from oriflamme.client.tui.join import JoinOptions
from oriflamme.launcher import cli
from oriflamme.protocol import messages as m
from oriflamme.server.core import Gateway, Lobby, ServerConfig
from oriflamme.server.core.effects import Send
from oriflamme.server.core.entropy import FixedEntropy, KeyedEntropy, SystemEntropy
from oriflamme.server.net import NetServer
from oriflamme.server.persistence import restore
from tests.deadlines import GAME_HANG, HANG
from tests.network.test_sessions import memory_connector

CONFIG = ServerConfig()
HERE, THERE = "127.0.0.1:7531", "192.0.2.20:7531"  # two addresses of one server


def welcome_of(lobby: Lobby) -> m.Welcome:
    hello = m.Hello(versions=(1,), client="test", name="Ann", id=1)
    [sent] = [e for e in lobby.hello("c1", hello, 0.0) if isinstance(e, Send)]
    assert isinstance(sent.message, m.Welcome)
    return sent.message


def test_the_server_id_outlives_a_restart_of_its_data_directory(tmp_path: Path) -> None:
    """The id is the data directory's (derived from its key), not the
    journal's: the same after a restart, another for another directory; a
    server without one has a fresh id, the same in every `welcome`."""
    ids = []
    for directory in ("a", "a", "b"):
        restored = restore(tmp_path / directory, CONFIG)
        try:
            ids.append(welcome_of(restored.lobby).server_id)
            assert welcome_of(restored.lobby).server_id == ids[-1]
        finally:
            restored.store.close()
    assert ids[0] is not None and len(ids[0]) == 16
    assert ids[0] == ids[1] != ids[2]
    # (a key's id is none of its tokens, and says nothing of the key)
    assert KeyedEntropy(bytes(32)).server_id() not in KeyedEntropy(bytes(32)).token_bytes(64)
    fresh, other = Lobby(CONFIG), Lobby(CONFIG)
    assert welcome_of(fresh).server_id == welcome_of(fresh).server_id != welcome_of(other).server_id
    assert isinstance(fresh._entropy, SystemEntropy)
    assert FixedEntropy("x").server_id() == FixedEntropy("x").server_id()


def player(connect: Connector, address: str, store: SecretStore, seed: int = 1) -> Session:
    return Session(
        connect,
        "Ann",
        server=address,
        store=store,
        behaviour=Behaviour(Bot("random", rng=random.Random(seed))),
        backoff=Backoff(first=0.01, most=0.05),
    )


async def seated_game(nursery: trio.Nursery, ann: Session, bob: Session) -> None:
    """Ann and Bob at a 2-player table, the game started."""
    for session in (ann, bob):
        await nursery.start(session.run)
    settings = m.RoomSettings.for_players(2, first_player="host")
    await ann.request(m.CreateRoom(settings=settings))
    await bob.request(m.JoinRoom(room=ann.state.room.room))
    for session in (ann, bob):
        await session.request(m.Ready(ready=True))
    await ann.request(m.StartGame())
    await ann.wait_until(lambda: ann.state.game is not None)


async def comes_back(
    nursery: trio.Nursery, first: Session, again: Session, bob: Session, net: NetServer
) -> None:
    """`first` leaves mid-game; `again`, the same player by another address,
    takes the same seat back and the game ends."""
    await seated_game(nursery, first, bob)
    player_id, seat, room = first.state.player, first.state.game.seat, first.state.room.room
    first.close()
    await nursery.start(again.run)
    assert (again.state.player, again.state.room.room) == (player_id, room)
    await again.wait_until(
        lambda: again.state.game is not None and again.state.game.end is not None
    )
    assert again.state.game.seat == seat
    assert [v.status for v in again.state.game.check_end()] == ["ok", "ok"]
    # The server knows two players (and the session the new address cost,
    # which never sat anywhere), not a third one at the table.
    seats = net.gateway.lobby.rooms[room].seats
    assert [s.session.player for s in seats] == [player_id, bob.state.player]


@pytest.mark.trio
async def test_a_session_kept_by_one_address_is_found_by_another(tmp_path: Path) -> None:
    net = NetServer(Gateway(Lobby(CONFIG)), bots=None)
    store = SecretStore(tmp_path)
    with trio.fail_after(GAME_HANG):
        async with trio.open_nursery() as nursery:
            await nursery.start(net.run)
            connect = memory_connector(net, nursery)
            bob = player(connect, "", SecretStore(tmp_path / "bob"), seed=2)
            first, again = player(connect, HERE, store), player(connect, THERE, store)
            await comes_back(nursery, first, again, bob, net)
            assert again.server_id == first.server_id == net.gateway.lobby.server_id
            # The second address now leads there at once: no session more.
            players = len(net.gateway.lobby.sessions)
            third = player(connect, THERE, store)
            await nursery.start(third.run)
            assert third.state.player == first.state.player
            assert len(net.gateway.lobby.sessions) == players
            nursery.cancel_scope.cancel()


async def serve_twice(nursery: trio.Nursery, net: NetServer) -> int:
    """`net` serving on 127.0.0.1 and 127.0.0.2 (two addresses of this
    machine, on Linux), on one port: that port."""
    [first_listener] = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port: int = first_listener.socket.getsockname()[1]
    [second_listener] = await trio.open_tcp_listeners(port, host="127.0.0.2")
    await nursery.start(net.run, [first_listener, second_listener])
    return port


@pytest.mark.network
@pytest.mark.trio
async def test_a_player_back_by_another_loopback_address_takes_their_seat_back(
    tmp_path: Path,
) -> None:
    """Over TCP: one server listening on 127.0.0.1 and 127.0.0.2 (the same
    port), joined by one, left mid-game, joined again by the other."""
    if not sys.platform.startswith("linux"):
        pytest.skip("127.0.0.2 is a loopback address on Linux only")
    net = NetServer(Gateway(Lobby(CONFIG)), bots=None)
    store = SecretStore(tmp_path)
    with trio.fail_after(GAME_HANG):
        async with trio.open_nursery() as nursery:
            port = await serve_twice(nursery, net)
            bob = player(tcp("127.0.0.1", port), "", SecretStore(tmp_path / "bob"), seed=2)
            first = player(tcp("127.0.0.1", port), f"127.0.0.1:{port}", store)
            again = player(tcp("127.0.0.2", port), f"127.0.0.2:{port}", store)
            await comes_back(nursery, first, again, bob, net)
            nursery.cancel_scope.cancel()


@pytest.mark.trio
async def test_a_kept_session_the_server_no_longer_has_gives_way_to_a_new_one(
    tmp_path: Path,
) -> None:
    """A kept token the server refuses (`bad_token`: the session expired)
    does not stop the client for good: it goes on with a new session, and
    keeps that one. A token given to the session itself still ends it."""
    net = NetServer(Gateway(Lobby(CONFIG)), bots=None)
    store = SecretStore(tmp_path)
    store.save_session(HERE, bytes(32), None, server_id=net.gateway.lobby.server_id)
    with trio.fail_after(HANG):
        async with trio.open_nursery() as nursery:
            await nursery.start(net.run)
            connect = memory_connector(net, nursery)
            ann = player(connect, HERE, store)
            await nursery.start(ann.run)
            assert ann.state.player is not None and ann.token != bytes(32)
            assert store.load_session(HERE) == (ann.token, None)
            # By another address: the kept token of this server is refused,
            # and the session that address opened goes on (none more).
            store.save_session(HERE, bytes(32), None, server_id=net.gateway.lobby.server_id)
            players = len(net.gateway.lobby.sessions)
            bea = player(connect, THERE, store)
            await nursery.start(bea.run)
            assert len(net.gateway.lobby.sessions) == players + 1
            assert store.load_session(HERE) == store.load_session(THERE) == (bea.token, None)
            given = Session(connect, "Cy", token=bytes(32), backoff=Backoff(first=0.01))
            with pytest.raises(SessionEnded, match="bad_token"):
                await given.run()
            nursery.cancel_scope.cancel()


@pytest.mark.trio
async def test_a_session_kept_by_address_before_servers_had_ids_is_resumed(
    tmp_path: Path,
) -> None:
    """A state directory of an older client keeps the token by address: it
    is resumed, and kept by the server's id from then on."""
    net = NetServer(Gateway(Lobby(CONFIG)), bots=None)
    with trio.fail_after(HANG):
        async with trio.open_nursery() as nursery:
            await nursery.start(net.run)
            connect = memory_connector(net, nursery)
            old = Session(connect, "Ann", backoff=Backoff(first=0.01))
            await nursery.start(old.run)
            (tmp_path / "sessions").mkdir()
            (tmp_path / "sessions" / "127.0.0.1_7531.session").write_text(
                f'{{"token": "{old.token.hex()}", "seq": null}}'
            )
            old.close()
            ann = player(connect, HERE, SecretStore(tmp_path))
            await nursery.start(ann.run)
            assert ann.state.player == old.state.player
            assert not (tmp_path / "sessions" / "127.0.0.1_7531.session").exists()
            assert SecretStore(tmp_path).server_id_at(HERE) == net.gateway.lobby.server_id
            nursery.cancel_scope.cancel()


def test_the_command_to_come_back_to_a_server_names_it_as_typed() -> None:
    options = JoinOptions(host="192.0.2.7", port=7531, name="Ann", state_dir=Path("s"))
    assert options.again() == "oriflamme join 192.0.2.7:7531"
    parser = cli.build_parser()
    args = parser.parse_args(["join", "lan-box", "--state-dir", "my games", "--tls"])
    typed = cli._join_again(args, "lan-box", 7531)
    assert typed == ("lan-box", "--state-dir", "my games", "--tls")
    # found on the network (no address typed): the address it was found at
    args = parser.parse_args(["join"])
    assert cli._join_again(args, "fe80::1", 7531) == ("[fe80::1]:7531",)


@pytest.mark.parametrize("in_game", [True, False])
def test_quitting_join_mid_game_says_how_to_come_back(
    in_game: bool, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import oriflamme.client.tui.app as app

    def run(program: object, screens: SimpleNamespace, bell: bool) -> int:
        game = SimpleNamespace(end=None if in_game else object())
        screens.state = SimpleNamespace(game=game)
        return 0

    monkeypatch.setattr(cli, "_need_terminal", lambda command: True)
    monkeypatch.setattr(cli, "_terminal_logging", lambda command, state_dir: True)
    monkeypatch.setattr(cli, "invoked_as", lambda: ("oriflamme",))
    monkeypatch.setattr(app, "run", run)
    assert cli.main(["join", "192.0.2.7:7600", "--state-dir", "st"]) == 0
    said = capsys.readouterr().out
    if in_game:
        expected = "run `oriflamme join 192.0.2.7:7600 --state-dir st` again to finish the game"
        assert f"Your seat is kept: {expected}." in said
    else:
        assert "Your seat is kept" not in said

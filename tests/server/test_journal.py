"""The lobby's journal: replaying it rebuilds the lobby, and a server that
crashes and is rebuilt from it lets its games finish as if nothing happened."""

from __future__ import annotations

import random

import msgpack
import pytest

from oriflamme.client.bots import Behaviour, Bot
from oriflamme.launcher.inprocess import Client, InProcess
from oriflamme.protocol import messages as m
from oriflamme.protocol.record import encode_record
from oriflamme.protocol.verify import verify_record
from oriflamme.server.core import ServerConfig
from oriflamme.server.core.entropy import KeyedEntropy
from oriflamme.server.core.facts import decode, encode, facts_of, lobby_from
from oriflamme.server.core.journal import Entry, JournaledLobby, replay
from oriflamme.server.core.lobby import Lobby
from tests.server.test_room_stateful import fingerprint
from tools.docgen.worked_example import fixed_secrets

KEY = bytes(range(32))
CONFIG = ServerConfig(idle_timeout=86400, reply_timer=30, grace=60)


class Journaled(InProcess):
    """An in-process world whose lobby keeps a journal, kept whole here."""

    def __init__(self, seed: int) -> None:
        lobby = JournaledLobby(KeyedEntropy(KEY), CONFIG)
        super().__init__(
            config=CONFIG, seed=seed, make_secrets=fixed_secrets(f"journal {seed}"), lobby=lobby
        )
        self.journal: list[Entry] = []

    def step(self) -> bool:
        moved = super().step()
        lobby = self.gateway.lobby
        assert isinstance(lobby, JournaledLobby)
        self.journal += lobby.take()
        return moved

    def _tick(self, now: float) -> None:
        super()._tick(now)
        lobby = self.gateway.lobby
        assert isinstance(lobby, JournaledLobby)
        self.journal += lobby.take()

    def crash_and_restore(self) -> None:
        """The server dies: a new lobby is rebuilt from the journal, told it
        restarted (noted too: every connection it had is closed, its bots get
        new tokens), and the clients come back."""
        lobby = JournaledLobby(KeyedEntropy(KEY), CONFIG)
        replayed = replay(lobby, self.journal)
        lobby.take()  # the replay noted the journal again
        restarted = lobby.restarted(self.now)
        self.journal += lobby.take()
        self.restart(lobby, replayed, restarted)


def players(world: InProcess, count: int, seed: int) -> list[Client]:
    rng = random.Random(seed)
    clients = [
        world.connect(f"p{i}", behaviour=Behaviour(Bot("random", rng=random.Random(rng.random()))))
        for i in range(count)
    ]
    world.settle()
    settings = m.RoomSettings(
        players=count, variant="standard", edition="revised", first_player="host"
    )
    clients[0].send(m.CreateRoom(settings=settings, private=True))
    world.settle()
    invite = clients[0].state.room.invite
    for c in clients[1:]:
        c.send(m.JoinRoom(invite=invite))
    for c in clients:
        c.send(m.Chat(text=f"hello from {c.endpoint.name}"))
        c.send(m.Ready(ready=True))
    world.settle()
    clients[0].send(m.StartGame())
    return clients


def round_of(client: Client) -> int:
    game = client.state.game
    return 0 if game is None or game.state is None else int(game.state.view["round"])


def test_a_replayed_journal_rebuilds_the_lobby_exactly() -> None:
    world = Journaled(seed=1)
    clients = players(world, 3, seed=1)
    world.run(lambda: round_of(clients[0]) >= 3)
    clients[1] = world.reconnect(clients[1])  # a resume, with its seq
    clients[2].send(m.Sync())
    world.run(lambda: bool(world.records))
    world.settle()
    clients[0].send(m.AddBot(strategy="heuristic"))  # after the game: a bot for the next one
    world.settle()
    rebuilt = Lobby(CONFIG, KeyedEntropy(KEY))
    effects = replay(rebuilt, world.journal)
    assert fingerprint(rebuilt) == fingerprint(world.gateway.lobby)
    finished = [e for e in effects if type(e).__name__ == "GameFinished"]
    assert [encode_record(f.record) for f in finished] == [encode_record(world.records[0].record)]
    # Nothing secret is in the journal: no session token, no server seed.
    tokens = [c.endpoint.token for c in clients]
    seed = world.records[0].record.server_seed
    for entry in world.journal:
        for secret in (*tokens, seed):
            assert secret is not None and secret not in (entry.data or b"")


@pytest.mark.parametrize("crash_in_round", [1, 3, 6])
def test_a_server_rebuilt_from_its_journal_finishes_the_game_as_if_nothing_happened(
    crash_in_round: int,
) -> None:
    # The same game, from the same seeds, without and with a crash.
    calm = Journaled(seed=2)
    calm_players = players(calm, 3, seed=2)
    calm.run(lambda: bool(calm.records))
    calm.settle()
    crashed = Journaled(seed=2)
    crashed_players = players(crashed, 3, seed=2)
    crashed.run(lambda: round_of(crashed_players[0]) >= crash_in_round)
    crashed.crash_and_restore()
    finishes_as_calm(calm, crashed, crashed_players)
    assert crashed.records[0].record.seat_changes == ()  # everyone was back within the grace
    assert calm_players[0].state.game.end.scores == crashed_players[0].state.game.end.scores


def finishes_as_calm(calm: InProcess, crashed: InProcess, crashed_players: list[Client]) -> None:
    """`crashed`, restored, plays its game to the end, which is `calm`'s."""
    crashed.run(lambda: bool(crashed.records))
    crashed.settle()
    calm_record, crashed_record = calm.records[0].record, crashed.records[0].record
    assert verify_record(crashed_record).ok
    assert crashed_record.results == calm_record.results
    assert [e.action for e in crashed_record.log] == [e.action for e in calm_record.log]
    assert crashed_record.game_id == calm_record.game_id  # the same randomness, again
    assert all(c.state.problems == [] for c in crashed_players)


def test_the_server_s_bots_are_started_again_after_a_crash() -> None:
    world = Journaled(seed=3)
    host = world.connect("host", behaviour=Behaviour(Bot("random", rng=random.Random(3))))
    world.settle()
    host.send(
        m.CreateRoom(
            settings=m.RoomSettings(
                players=3, variant="standard", edition="revised", first_player="host"
            )
        )
    )
    host.send(m.AddBot(strategy="heuristic"))
    host.send(m.AddBot(strategy="random"))
    host.send(m.Ready(ready=True))
    world.settle()
    host.send(m.StartGame())
    world.run(lambda: round_of(host) >= 2)
    world.crash_and_restore()
    assert len(world.bots) == 2
    world.run(lambda: bool(world.records))
    assert verify_record(world.records[0].record).ok


def test_a_replayed_journal_counts_sessions_by_the_address_they_came_from() -> None:
    """A new session's address is noted (the lobby bounds the sessions of one
    address), and a note made before addresses were is replayed as none."""
    import msgpack

    from oriflamme.server.core.journal import HELLO

    live = JournaledLobby(KeyedEntropy(KEY), CONFIG)
    hello = m.Hello(versions=(1,), client="test/1", name="Ann")
    live.hello("c1", hello, 1.0, address="192.0.2.7")
    live.hello("c2", hello, 2.0)
    notes = live.take()
    older = Entry(HELLO, "c3", 3.0, msgpack.packb(m.to_data(hello)))
    rebuilt = Lobby(CONFIG, KeyedEntropy(KEY))
    replay(rebuilt, [*notes, older])
    assert list(rebuilt.sessions.from_address("192.0.2.7")) == [1]
    assert [s.address for s in rebuilt.sessions] == ["192.0.2.7", None, None]


def test_a_server_gone_back_in_time_draws_no_token_it_drew_before() -> None:
    # A server keeps its facts (a backup, say), goes on, and a new player
    # gets a token. Then the backup is started again: its state went back.
    # The next new player must not get the token the first one holds, or the
    # first, coming back with it, would take the second's session. A start
    # skips a random stretch of the keyed stream (the shell draws it), noted
    # in the journal, so a replay draws the same.
    world = Journaled(seed=9)
    players(world, 3, seed=9)
    world.settle()
    lobby = world.gateway.lobby
    assert isinstance(lobby, JournaledLobby)
    lobby.take()
    backup = facts_of(lobby)
    late = m.Hello(versions=(1,), client="test", name="Late")

    def newcomer(skip: int) -> tuple[bytes, JournaledLobby, list[Entry]]:
        """The token digest of a player new after a start with `skip`."""
        started = lobby_from(decode(encode(backup)), KeyedEntropy(KEY))
        started.restarted(world.now + 1, skip)
        started.hello("late", late, world.now + 2)
        (session,) = [s for s in started.sessions if s.name == "Late"]
        return session._digests[0], started, started.take()

    lost, _, _ = newcomer(0)
    again, _, _ = newcomer(0)
    assert again == lost  # (without a skip, the same token is drawn again)
    first, _, journal = newcomer(1 << 40)
    second, _, _ = newcomer((1 << 40) + 12345)
    assert len({lost, first, second}) == 3
    # The skip is in the journal: a replay of it draws the same token.
    replayed = lobby_from(decode(encode(backup)), KeyedEntropy(KEY))
    replay(replayed, journal)
    (session,) = [s for s in replayed.sessions if s.name == "Late"]
    assert session._digests[0] == first
    assert [e.data for e in journal if e.kind == "restarted"] == [msgpack.packb(1 << 40)]


def test_a_replayed_journal_keeps_each_session_s_version_as_it_was_chosen() -> None:
    """A hello offering 1 and 2 took version 2 here; the same hello noted by
    a server before version 2 (no `version` in its note) took 1, and a
    replay by this version must not choose otherwise: the clients resume
    in the version they began with. A server bot's session takes its
    version at its bot's first hello: noted with the resume."""
    from oriflamme.server.core.journal import HELLO, RESUME

    live = JournaledLobby(KeyedEntropy(KEY), CONFIG)
    both = m.Hello(versions=(1, 2), client="test/1", name="Ann")
    live.hello("c1", both, 1.0)
    (now,) = live.take()
    assert msgpack.unpackb(now.data)["version"] == 2
    before = msgpack.unpackb(now.data)
    del before["version"]
    older = Entry(
        HELLO, "c2", 2.0, msgpack.packb({**before, "hello": {**before["hello"], "name": "Bo"}})
    )
    rebuilt = Lobby(CONFIG, KeyedEntropy(KEY))
    replay(rebuilt, [now, older])
    assert [(s.name, s.version) for s in rebuilt.sessions] == [("Ann", 2), ("Bo", 1)]
    # A resume's note says the version its session has (a bot's, chosen there).
    bot, token = live._bot_session("random", "Bot 1")
    live.hello("c3", m.Hello(versions=(1, 2), client="bot/1", name="Bot 1", token=token), 3.0)
    (resumed,) = [e for e in live.take() if e.kind == RESUME]
    assert bot.version == 2 and msgpack.unpackb(resumed.data)["version"] == 2


def test_a_journal_with_a_version_this_server_does_not_speak_is_refused() -> None:
    from oriflamme.server.core.journal import HELLO

    hello = m.to_data(m.Hello(versions=(3,), client="newer/1", name="Ann"))
    newer = Entry(HELLO, "c1", 1.0, msgpack.packb({"hello": hello, "address": None, "version": 3}))
    with pytest.raises(ValueError, match="protocol version 3, which this server does not speak"):
        replay(Lobby(CONFIG, KeyedEntropy(KEY)), [newer])

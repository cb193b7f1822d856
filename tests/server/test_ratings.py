"""Ratings (docs/PROTOCOL.md, "Ratings"): players with keys who play each
other out are rated (OpenSkill, Plackett-Luce); a game with a bot, or a
player without a key, is not. The ratings are the same after the journal's
replay and after the facts; `leaderboard` lists them, `record_list` gives
each player's rating after each rated game."""

from __future__ import annotations

import random

from oriflamme.client.bots import Behaviour, Bot
from oriflamme.client.endpoint import ClientEndpoint
from oriflamme.launcher.inprocess import Client, InProcess
from oriflamme.protocol import identity
from oriflamme.protocol import messages as m
from oriflamme.server.core import FixedEntropy, ServerConfig
from oriflamme.server.core.facts import facts_of, lobby_from
from oriflamme.server.core.journal import JournaledLobby, replay
from oriflamme.server.core.ratings import HISTORY, NEW, Ratings

KEYS = [identity.private_key(bytes([i]) * 32) for i in range(1, 4)]
CONFIG = ServerConfig(idle_timeout=86400)


def started(bots: int = 0, keyed: bool = True) -> tuple[InProcess, JournaledLobby, list[Client]]:
    """A 3-seat game begun, at a table of random players with keys (or
    without: `keyed`), and `bots` server bots in the seats left."""
    lobby = JournaledLobby(FixedEntropy("ratings"), CONFIG)
    world = InProcess(lobby=lobby, seed=1)
    names = ["Ann", "Bob", "Cy"][: 3 - bots]
    clients = [
        world.connect(
            name,
            bot=Bot("random", rng=random.Random(i)),
            endpoint=ClientEndpoint(name, key=KEYS[i] if keyed else None),
        )
        for i, name in enumerate(names)
    ]
    world.start_table(clients, m.RoomSettings.for_players(3), bots=bots)
    return world, lobby, clients


def played(bots: int = 0, keyed: bool = True) -> tuple[InProcess, JournaledLobby, list[Client]]:
    """`started`, the game played out."""
    world, lobby, clients = started(bots, keyed)
    world.run(lambda: bool(world.records))
    return world, lobby, clients


def test_players_with_keys_who_play_each_other_out_are_rated() -> None:
    world, lobby, clients = played()
    record = world.records[0].record
    keys = [identity.public_bytes(k) for k in KEYS]
    assert all(lobby.ratings.get(k).games == 1 for k in keys)
    # The best score rates highest; every sigma shrank from a new key's.
    best = max(range(3), key=lambda s: record.results.scores[s])
    ratings = [lobby.ratings.get(k) for k in keys]
    assert ratings[best].shown == max(r.shown for r in ratings)
    assert all(r.sigma < NEW.sigma for r in ratings)
    # `leaderboard` and each one's history.
    ann = clients[0]
    asked = ann.send(m.Leaderboard())
    world.run(lambda: ann.answer(asked) is not None)
    board = ann.answer(asked)
    assert isinstance(board, m.Ratings)
    assert [p.rating for p in board.players] == sorted((r.shown for r in ratings), reverse=True)
    assert {p.name for p in board.players} == {"Ann", "Bob", "Cy"}
    asked = ann.send(m.ListRecords())
    world.run(lambda: ann.answer(asked) is not None)
    listed = ann.answer(asked)
    assert isinstance(listed, m.RecordList)
    assert listed.records[0].rating == ratings[0].shown
    # The room shows each seat's new rating.
    room = ann.state.room
    assert room is not None
    assert [s.rating for s in room.seats] == [r.shown for r in ratings]


def test_a_game_with_a_bot_or_a_player_without_a_key_is_not_rated() -> None:
    _, lobby, _ = played(bots=1)
    assert not lobby.ratings.by_key
    _, lobby, _ = played(keyed=False)
    assert not lobby.ratings.by_key


def test_ratings_are_the_same_after_the_journal_and_after_the_facts() -> None:
    _, lobby, _ = played()
    again = JournaledLobby(FixedEntropy("ratings"), CONFIG)
    replay(again, lobby.take())
    from_facts = lobby_from(facts_of(lobby), FixedEntropy("ratings"))
    for other in (again, from_facts):
        assert other.ratings.by_key == lobby.ratings.by_key
        assert other.ratings.history == lobby.ratings.history
        shown = {s.key: s.rating for s in other.sessions.by_key.values()}
        assert shown == {s.key: s.rating for s in lobby.sessions.by_key.values()}
        assert None not in shown.values()


def test_a_keys_history_keeps_its_newest_games() -> None:
    ratings = Ratings()
    for game in range(HISTORY + 5):
        ratings.rate(f"g{game}", [(b"a", 1), (b"b", 0)])
    history = ratings.history[b"a"]
    assert len(history) == HISTORY and history[-1][0] == f"g{HISTORY + 4}"
    assert ratings.get(b"a").games == HISTORY + 5


def test_a_keys_finished_games_outlive_its_session() -> None:
    world, lobby, clients = played()
    ann = clients[0]
    record_id = world.records[0].record_id
    player = ann.state.player
    world.disconnect(ann)
    world.advance(CONFIG.session_ttl + CONFIG.lobby_ttl + 60)  # (its session expires)
    assert player not in lobby.sessions.by_player
    # (kept through the facts, as a restart would)
    again = lobby_from(facts_of(lobby), FixedEntropy("ratings"))
    assert again._played_by_key == lobby._played_by_key != {}
    back = world.connect("Ann", endpoint=ClientEndpoint("Ann", key=KEYS[0]))
    world.run(lambda: back.endpoint.welcome is not None)
    assert back.endpoint.welcome is not None and not back.endpoint.welcome.resumed
    asked = back.send(m.ListRecords())
    world.run(lambda: back.answer(asked) is not None)
    listed = back.answer(asked)
    assert isinstance(listed, m.RecordList)
    assert [r.record_id for r in listed.records] == [record_id]
    assert listed.records[0].rating == lobby.ratings.shown(identity.public_bytes(KEYS[0]))


def test_a_player_who_leaves_a_game_and_goes_away_does_not_void_its_rating() -> None:
    world, lobby, clients = started()
    cy = clients[2]
    world.run(lambda: cy.state.game is not None and cy.state.game.state is not None)
    # The others wait for their players (no bots now): the game stays in play.
    for client in clients[:2]:
        client.behaviour = None
    cy.send(m.LeaveRoom())  # (losing, say: the stand-in plays the seat to the end)
    world.settle()
    world.disconnect(cy)
    world.advance(CONFIG.session_ttl + CONFIG.lobby_ttl + 60)  # (its session is gone)
    assert not world.records and identity.public_bytes(KEYS[2]) not in lobby.sessions.by_key
    for i, client in enumerate(clients[:2]):
        client.behaviour = Behaviour(Bot("random", rng=random.Random(i)))
        client.send(m.Sync())  # (a push to act on)
    world.run(lambda: bool(world.records))
    record = world.records[0].record
    assert record.seats[2].left and record.verdicts[2].status == "forfeited"
    # Rated on its score, as a seat played to the end: leaving is no escape.
    keys = [identity.public_bytes(k) for k in KEYS]
    expected = Ratings()
    expected.rate("g", list(zip(keys, record.results.scores, strict=True)))
    assert [lobby.ratings.get(k) for k in keys] == [expected.get(k) for k in keys]


def test_a_key_with_games_listed_keeps_its_name_whatever_it_does_next() -> None:
    world, lobby, clients = played(bots=1)  # (against a bot: not rated, but listed)
    ann = clients[0]
    key = identity.public_bytes(KEYS[0])
    for _ in range(2):  # (its session ends; the next one sits nowhere, and ends)
        world.disconnect(ann)
        world.advance(CONFIG.session_ttl + CONFIG.lobby_ttl + 60)
        assert key not in lobby.sessions.by_key and lobby.names.owner("Ann") == key
        ann = world.connect("Ann", endpoint=ClientEndpoint("Ann", key=KEYS[0]))
        world.run(lambda: ann.endpoint.welcome is not None)  # noqa: B023
    player = ann.state.player
    assert player is not None and lobby._played.get(player)  # (listed again, in this session)

"""The lobby kept as facts: taken at any point of a game, they give a lobby
that goes on exactly as the first one would have, and a server restarted
from them and the journal since finishes its games as if nothing happened."""

from __future__ import annotations

import random
from collections.abc import Sequence

import msgpack
import pytest

from oriflamme.client.bots import Behaviour, Bot
from oriflamme.client.endpoint import ClientEndpoint
from oriflamme.protocol import identity
from oriflamme.protocol import messages as m
from oriflamme.protocol.verify import verify_record
from oriflamme.server.core.entropy import KeyedEntropy
from oriflamme.server.core.facts import (
    FACTS_PUSHES,
    FACTS_VERSION,
    FactsError,
    decode,
    encode,
    facts_from_rows,
    facts_of,
    lobby_from,
    rows_of,
)
from oriflamme.server.core.journal import JournaledLobby, replay
from oriflamme.server.core.referee import RebuildFailed, Referee
from tests.server.test_journal import KEY, Journaled, finishes_as_calm, players, round_of
from tests.server.test_room_stateful import RowsStored, fingerprint


class Kept(Journaled):
    """A world whose server keeps facts now and then, and is restarted from
    the last facts and the journal since."""

    def __init__(self, seed: int, lazily: bool = False) -> None:
        super().__init__(seed)
        self.facts: bytes | None = None
        self.covered = 0  # the journal entries the facts cover
        self.lazily = lazily  # (each game rebuilt at its first use, as a server starts)

    def keep_facts(self) -> None:
        lobby = self.gateway.lobby
        assert isinstance(lobby, JournaledLobby)
        self.facts = encode(facts_of(lobby))
        self.covered = len(self.journal)

    def crash_and_restore(self) -> None:
        assert self.facts is not None
        # (as the store keeps them: as rows)
        facts = facts_from_rows(rows_of(decode(self.facts)))
        lobby = lobby_from(facts, KeyedEntropy(KEY), lazily=self.lazily)
        replayed = replay(lobby, self.journal[self.covered :])
        lobby.take()
        restarted = lobby.restarted(self.now)
        self.journal += lobby.take()
        self.restart(lobby, replayed, restarted)


def test_facts_rebuild_the_lobby_and_taking_them_again_gives_the_same_facts() -> None:
    world = Kept(seed=1)
    clients = players(world, 3, seed=1)
    world.run(lambda: round_of(clients[0]) >= 3)
    lobby = world.gateway.lobby
    facts = facts_of(lobby)
    again = lobby_from(decode(encode(facts)), KeyedEntropy(KEY))
    assert fingerprint(again) == fingerprint(lobby)
    assert decode(encode(facts_of(again))) == decode(encode(facts))
    table, rebuilt = next(iter(lobby.rooms.values())).table, next(iter(again.rooms.values())).table
    assert table is not None and rebuilt is not None
    assert rebuilt.referee.events == table.referee.events
    assert rebuilt.referee.view(None) == table.referee.view(None)
    assert rebuilt.referee._server_seed == table.referee._server_seed
    assert rebuilt.next_deadline() == table.next_deadline()


def test_no_token_nor_unpublished_server_seed_is_in_the_facts() -> None:
    world = Kept(seed=4)
    clients = players(world, 3, seed=4)
    lobby = world.gateway.lobby
    world.run(lambda: any(room.table is not None for room in lobby.rooms.values()))
    table = next(iter(lobby.rooms.values())).table
    assert table is not None and table.referee.server_seed is None  # (not yet published)
    seed = table.referee._server_seed
    assert seed not in encode(facts_of(lobby))
    world.run(lambda: round_of(clients[0]) >= 2)
    data = encode(facts_of(lobby))
    for token in (c.endpoint.token for c in clients):
        assert token is not None and token not in data


@pytest.mark.slow  # (whole games, twice each)
@pytest.mark.parametrize("lazily", [False, True], ids=["rebuilt at once", "rebuilt lazily"])
@pytest.mark.parametrize("kept_in_round, crash_in_round", [(1, 1), (2, 4), (6, 6)])
def test_a_server_restarted_from_facts_finishes_the_game_as_if_nothing_happened(
    kept_in_round: int, crash_in_round: int, lazily: bool
) -> None:
    calm = Kept(seed=2)
    players(calm, 3, seed=2)
    calm.run(lambda: bool(calm.records))
    calm.settle()
    crashed = Kept(seed=2, lazily=lazily)
    crashed_players = players(crashed, 3, seed=2)
    crashed.run(lambda: round_of(crashed_players[0]) >= kept_in_round)
    crashed.keep_facts()
    crashed.run(lambda: round_of(crashed_players[0]) >= crash_in_round)
    crashed.crash_and_restore()
    finishes_as_calm(calm, crashed, crashed_players)


@pytest.mark.slow  # (whole games, with facts taken and read along the way)
@pytest.mark.parametrize("seed", range(3))
def test_facts_taken_at_random_points_go_on_like_the_lobby_they_were_taken_from(
    seed: int,
) -> None:
    # A player goes away for good: the stand-in plays their seat, choosing
    # at random where a decision has options.
    rng = random.Random(seed)
    world = Kept(seed=10 + seed)
    clients = players(world, 3 + seed % 2, seed=10 + seed)
    lobby = world.gateway.lobby

    def check() -> bool:
        if rng.random() < 0.05:
            world.keep_facts()
            again = lobby_from(decode(world.facts or b""), KeyedEntropy(KEY))
            assert fingerprint(again) == fingerprint(lobby)
            assert encode(facts_of(again)) == world.facts
            for room, other in zip(lobby.rooms.values(), again.rooms.values(), strict=True):
                if room.table is not None:
                    assert other.table is not None
                    assert other.table.referee.events == room.table.referee.events
                    assert other.table.next_deadline() == room.table.next_deadline()
        return bool(world.records)

    world.run(lambda: round_of(clients[0]) >= 2)
    world.disconnect(clients[1])
    world.run(check)
    record = world.records[0].record
    assert any(entry.by_server for entry in record.log)  # the stand-in did play
    assert verify_record(record).problems == ()  # (the seat away forfeits, and that checks)


def test_a_start_rebuilds_a_game_at_its_first_use_and_not_before() -> None:
    # A server keeps facts with a game in round 2, and is killed: the start
    # makes the lobby with the game not rebuilt (its facts only), and the
    # start's closing of every connection, and ticks before any deadline,
    # leave it so; they do what they do with the game rebuilt at once.
    world = Kept(seed=7)
    clients = players(world, 3, seed=7)
    world.run(lambda: round_of(clients[0]) >= 2)
    world.keep_facts()
    eager = lobby_from(decode(world.facts or b""), KeyedEntropy(KEY))
    lazy = lobby_from(decode(world.facts or b""), KeyedEntropy(KEY), lazily=True)
    (room,) = lazy.rooms.values()
    assert not room.built and lazy.unbuilt == [room.id]
    rows = RowsStored()  # (taken as the server takes them, a step at a time)
    rows.take_and_check(lazy)
    now = world.now + 1
    said = [lobby.restarted(now) for lobby in (eager, lazy)]  # (every player gone)
    assert [repr(e) for e in said[0]] == [repr(e) for e in said[1]]
    assert not room.built
    assert room.id in rows.take_and_check(lazy).tables["games"]  # (the players gone)
    assert lazy.next_deadline() == eager.next_deadline() is not None
    before = eager.next_deadline()
    assert before is not None and before > now
    assert lazy.tick(before - 0.5) == eager.tick(before - 0.5) == []
    assert not room.built
    assert rows.take_and_check(lazy).tables["games"] == {}  # (nothing changed)
    assert encode(facts_of(lazy)) == encode(facts_of(eager))  # (the players gone, noted)
    # The deadline (the grace of the players gone): rebuilt, and the same.
    said = [lobby.tick(before) for lobby in (eager, lazy)]
    assert room.built and [repr(e) for e in said[0]] == [repr(e) for e in said[1]]
    rows.take_and_check(lazy)
    assert fingerprint(lazy) == fingerprint(eager)
    assert encode(facts_of(lazy)) == encode(facts_of(eager))


def test_a_taking_makes_the_rows_of_what_changed_and_another_taker_means_all_again() -> None:
    # A lone player in the lobby beside a room whose game ended: a rename
    # changes their session only; the room's are not made again.
    world = Kept(seed=9)
    players(world, 3, seed=9)
    loner = world.connect("loner", behaviour=Behaviour(Bot("random")))
    world.run(lambda: bool(world.records))
    world.settle()
    lobby = world.gateway.lobby
    rows = RowsStored()
    first = rows.take_and_check(lobby)
    assert len(first.tables["sessions"]) == 4 and len(first.tables["games"]) == 1
    assert rows.take_and_check(lobby).tables == {"sessions": {}, "rooms": {}, "games": {}}
    loner.send(m.Rename(name="lonely"))
    world.settle()
    renamed = rows.take_and_check(lobby)
    assert set(renamed.tables["sessions"]) == {loner.state.player} and not renamed.tables["rooms"]
    # Another taker in between (another store): the first cannot know what
    # it took, and makes every row again.
    RowsStored().take_and_check(lobby)
    assert len(rows.take_and_check(lobby).tables["sessions"]) == 4


def test_the_games_left_are_rebuilt_a_few_at_a_time_and_a_refused_one_is_named() -> None:
    world = Kept(seed=8)
    clients = players(world, 3, seed=8)
    world.run(lambda: round_of(clients[0]) >= 2)
    facts = decode(encode(facts_of(world.gateway.lobby)))
    (game,) = [room["game"] for room in facts["rooms"]]
    kind, seat, data = msgpack.unpackb(game["inputs"][3])  # (as another version would refuse)
    game["inputs"][3] = msgpack.packb([kind, seat, {**data, "turn": 999}])
    lazy = lobby_from(facts, KeyedEntropy(KEY), lazily=True)
    (room,) = lazy.rooms.values()
    assert lazy.take_build_failures() == [] and not room.built  # (its log not read yet)
    assert lazy.build_some(4) == 0
    assert room.built and room.table is None and room.unread_game == game
    assert lazy.take_build_failures() == [(room.id, room.suspended)]
    assert room.suspended is not None and "input 3" in room.suspended
    assert lazy.take_build_failures() == []  # (named once)


def test_a_game_whose_log_this_version_refuses_is_kept_out_of_play() -> None:
    world = Kept(seed=3)
    clients = players(world, 3, seed=3)
    world.run(lambda: round_of(clients[0]) >= 2)
    facts = decode(encode(facts_of(world.gateway.lobby)))  # (as a start reads them)
    game = facts["rooms"][0]["game"]
    # Another version's engine would refuse the first decision: here, it is
    # one that names a turn long past.
    kind, seat, data = msgpack.unpackb(game["inputs"][3])
    game["inputs"][3] = msgpack.packb([kind, seat, {**data, "turn": 999}])
    broken: list[tuple[int, str]] = []
    lobby = lobby_from(facts, KeyedEntropy(KEY), broken=broken)
    room = lobby.rooms[facts["rooms"][0]["id"]]
    assert broken == [(room.id, room.suspended)]
    assert room.suspended is not None and "input 3" in room.suspended
    # The others (sessions, the room itself) are as they were, and the game's
    # facts are kept as they were read: written again, not dropped.
    assert {s.player for s in lobby.sessions} == {c.state.player for c in clients}
    again = decode(encode(facts_of(lobby)))
    assert again["rooms"][0]["game"] == game
    # A version that can rebuild it takes it up: it is not kept suspended.
    assert again["rooms"][0]["suspended"] is None
    again["rooms"][0]["game"]["inputs"][3] = msgpack.packb([kind, seat, data])
    mended = lobby_from(again, KeyedEntropy(KEY))
    assert mended.rooms[room.id].suspended is None
    assert mended.rooms[room.id].table is not None


def test_facts_of_version_1_with_each_input_as_an_array_are_read() -> None:
    world = Kept(seed=8)
    clients = players(world, 3, seed=8)
    world.run(lambda: round_of(clients[0]) >= 2)
    lobby = world.gateway.lobby
    facts = decode(encode(facts_of(lobby)))
    facts["version"] = 1
    for room in facts["rooms"]:
        if room["game"] is not None:
            room["game"]["inputs"] = [msgpack.unpackb(i) for i in room["game"]["inputs"]]
    again = lobby_from(facts, KeyedEntropy(KEY))
    assert fingerprint(again) == fingerprint(lobby)
    assert encode(facts_of(again)) == encode(facts_of(lobby))  # (written as version 2)


def test_facts_of_a_newer_version_or_of_nothing_are_refused_plainly() -> None:
    newer = msgpack.packb({"version": FACTS_VERSION + 1})
    with pytest.raises(FactsError, match="newer server"):
        decode(newer)
    with pytest.raises(FactsError, match="not facts"):
        decode(b"\x93\x01")
    with pytest.raises(FactsError, match="not facts"):
        decode(b"\xc1")


def test_a_referee_rebuilt_from_its_log_makes_the_same_time_out_choices_again() -> None:
    world = Kept(seed=5)
    clients = players(world, 3, seed=5)
    world.run(lambda: round_of(clients[0]) >= 1)
    referee = next(iter(world.gateway.lobby.rooms.values())).table.referee
    # A time-out on every decision: the server chooses.
    for _ in range(12):
        if referee.decision is None:
            break
        referee.time_out()

    def rebuilt(choices: Sequence[int]) -> Referee:
        return Referee.rebuild(
            referee.rules,
            first_player=referee.first_player,
            seats=referee.first_seats,
            turn_timer=referee.turn_timer,
            game_id=referee.game_id,
            server_seed=referee._server_seed,
            inputs=referee.inputs,
            choices=choices,
            entropy=KeyedEntropy(KEY),
        )

    assert any(entry.by_server for entry in referee.log)  # (the server chose)
    again = rebuilt(referee.choices)
    assert again.events == referee.events and again.log == referee.log
    with pytest.raises(RebuildFailed, match="chose otherwise"):
        rebuilt((*referee.choices, 0))


def test_a_seat_record_is_kept_whole() -> None:
    from dataclasses import fields

    from oriflamme.protocol.record import SeatRecord
    from oriflamme.server.core.facts import _seat_record_data

    seat = SeatRecord("Ann", bot=True, left=True, stand_in=True, handed_to_bot=True)
    assert set(_seat_record_data(seat)) == {f.name for f in fields(SeatRecord)}
    assert SeatRecord(**_seat_record_data(seat)) == seat


def test_a_resume_after_the_facts_numbers_the_pushes_as_the_live_server_did() -> None:
    # A seated player misses more pushes than the facts keep, the facts are
    # taken, and the player resumes: the live server sends what was missed
    # (numbering nothing new). A lobby rebuilt from the facts and the journal
    # keeps fewer pushes, but must do the same, or it numbers the pushes
    # otherwise than the clients saw them.
    world = Kept(seed=6)
    clients = players(world, 3, seed=6)
    world.run(lambda: round_of(clients[0]) >= 2)
    away = clients[2]
    seen_before, player = away.endpoint.seq, away.state.player
    assert seen_before is not None and player is not None
    world.disconnect(away)
    lobby = world.gateway.lobby
    session = lobby.sessions.by_player[player]
    world.run(lambda: session.last_seq >= seen_before + FACTS_PUSHES + 4)
    world.keep_facts()
    back = world.reconnect(away)
    world.settle()
    assert lobby.resumed_with_missed and back.state.problems == []  # (all were kept live)
    rebuilt = lobby_from(decode(world.facts or b""), KeyedEntropy(KEY))
    replay(rebuilt, world.journal[world.covered :])
    assert rebuilt.sessions.by_player[session.player].last_seq == session.last_seq
    assert fingerprint(rebuilt) == fingerprint(lobby)


@pytest.mark.parametrize("signed", [False, True])
def test_a_game_begun_before_signed_decisions_goes_on_unsigned_after_the_upgrade(
    signed: bool,
) -> None:
    """Its facts have no `signed` (docs/STORAGE.md): the version that reads
    them checks no signature of it, and its record, which holds none,
    verifies; a game of this version is signed, and so is its record."""
    world = Kept(seed=16)
    keys = [identity.private_key(bytes([i]) * 32) for i in (1, 2)]
    clients = [
        world.connect(
            name,
            endpoint=ClientEndpoint(name, key=key),  # (its own secrets, nonces from its key)
            behaviour=Behaviour(Bot("random", rng=random.Random(i))),
        )
        for i, (name, key) in enumerate(zip(("Ann", "Bo"), keys, strict=True))
    ]
    world.start_table(clients, m.RoomSettings.for_players(2, turn_timer=86400))
    world.run(lambda: round_of(clients[0]) >= 2)
    world.keep_facts()
    assert world.facts is not None
    facts = decode(world.facts)
    [room] = facts["rooms"]
    assert room["game"]["signed"] is True
    if not signed:
        del room["game"]["signed"]  # (as the version before signed decisions kept them)
    world.facts = encode(facts)
    world.crash_and_restore()
    world.run(lambda: bool(world.records))
    [finished] = world.records
    assert bool(finished.record.keys) == signed and verify_record(finished.record).ok

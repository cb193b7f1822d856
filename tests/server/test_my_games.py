"""My games (docs/PROTOCOL.md, "My games"): a player steps out of a game
keeping their seat (`leave_room.keep_seat`), plays in several rooms at once,
is told in the lobby when a game waits for them (`games_waiting`), lists
them (`list_games`) and comes back (`join_room`), across a restart of the
server with nobody connected. Time is the in-process world's (a fake clock)."""

from __future__ import annotations

import random
from dataclasses import replace

from oriflamme.client.bots import Behaviour, Bot
from oriflamme.launcher.inprocess import Client
from oriflamme.protocol import messages as m
from oriflamme.protocol.errors import INVALID_FIELD, NOT_PERMITTED, WRONG_STATE
from tests.server.scenario import ask, ok, received, refused, resume
from tests.server.test_facts import Kept

TIMER = 2 * 86400
SETTINGS = m.RoomSettings.for_players(3, turn_timer=TIMER, first_player="host")


def playing(world: Kept, name: str = "Ann", seed: int = 3) -> Client:
    """A client that plays whatever game it is in by itself."""
    client = world.connect(name, behaviour=Behaviour(Bot("random", rng=random.Random(seed))))
    world.settle()
    return client


def dealt(client: Client) -> bool:
    game = client.state.game
    return game is not None and game.server_seed is not None


def a_table_of_bots(world: Kept, client: Client) -> int:
    """`client` hosts a game of days with two server bots, dealt: its room."""
    world.start_table([client], SETTINGS, bots=2)
    world.run(lambda: dealt(client))
    assert client.state.room is not None
    return client.state.room.room


def a_table_waiting_for(world: Kept, client: Client) -> int:
    """`client` hosts a game of days with two server bots, its own client
    paused: the game waits for its seed commitment. Its room."""
    client.behaviour = None
    world.start_table([client], SETTINGS, bots=2)
    world.settle()
    assert client.state.room is not None
    return client.state.room.room


def games(world: Kept, client: Client) -> tuple[m.MyGame, ...]:
    answer = ask(world, client, m.ListGames())
    assert isinstance(answer, m.GameList), answer
    return answer.games


def waiting(client: Client) -> tuple[int, ...]:
    return client.state.games_waiting


def test_a_player_keeps_seats_in_two_games_and_comes_back_to_each() -> None:
    world = Kept(seed=7)
    ann = playing(world)
    first = a_table_of_bots(world, ann)
    ok(world, ann, m.LeaveRoom(keep_seat=True))
    assert ann.state.room is None and ann.state.game is None
    [kept] = ann.state.kept.values()  # (with its secrets, to come back to)
    # The bots play on until the game waits for Ann: she is told in the lobby.
    world.run(lambda: waiting(ann) == (first,))
    [game] = games(world, ann)
    assert (game.room, game.seat, game.here, game.waiting_for) == (first, 0, False, (0,))
    assert game.game == world.gateway.lobby.rooms[first].game_id()
    assert game.time_left is not None and 0 < game.time_left <= TIMER * 1000

    # A second game, Ann's client paused: it waits for her seed commitment.
    behaviour = ann.behaviour
    second = a_table_waiting_for(world, ann)
    [here, there] = games(world, ann)
    assert (here.room, here.here, here.waiting_for) == (second, True, (0,))
    assert (there.room, there.here) == (first, False)
    refused(world, ann, m.JoinRoom(room=first), WRONG_STATE)  # (in a room: step out first)
    ok(world, ann, m.LeaveRoom(keep_seat=True))
    assert waiting(ann) == (first, second)

    # Back to the first game: a snapshot, and Ann's client plays it to its
    # end with the secrets it kept.
    ann.behaviour = behaviour
    ok(world, ann, m.JoinRoom(room=first))
    world.run(lambda: bool(world.records))
    assert ann.state.game is kept and kept.end is not None
    [finished] = world.records
    assert all(v.ok for v in finished.record.verdicts) and not finished.record.seats[0].stand_in
    assert waiting(ann) == (second,)
    assert [g.room for g in games(world, ann)] == [second]


def test_kept_seats_and_the_games_waiting_outlive_a_restart_with_nobody_connected() -> None:
    world = Kept(seed=8)
    ann = playing(world)
    first = a_table_of_bots(world, ann)
    ok(world, ann, m.LeaveRoom(keep_seat=True))
    second = a_table_of_bots(world, ann)
    ok(world, ann, m.LeaveRoom(keep_seat=True))
    world.run(lambda: waiting(ann) == (first, second))
    world.keep_facts()
    world.disconnect(ann)
    world.crash_and_restore()
    world.advance(3600)
    ann.state.games_waiting = ()
    ann = resume(world, ann)  # (a snapshot: the games that wait are in it)
    [told] = received(ann, m.GamesWaiting)
    assert told.rooms == (first, second)
    assert [g.room for g in games(world, ann)] == [first, second]
    for played, room in enumerate((first, second), start=1):
        ok(world, ann, m.JoinRoom(room=room))
        world.run(lambda: len(world.records) == played)  # noqa: B023 (run at once)
        ok(world, ann, m.LeaveRoom())
    for finished in world.records:
        record = finished.record
        assert record.results.complete and all(v.ok for v in record.verdicts)
        assert not record.seats[0].stand_in  # (the game waited for Ann: no stand-in)
        assert not any(entry.by_server and entry.seat == 0 for entry in record.log)
    assert games(world, ann) == () and waiting(ann) == ()


def test_stepping_out_and_back_are_refused_where_they_mean_nothing() -> None:
    world = Kept(seed=9)
    ann, bob = playing(world), playing(world, "Bob", seed=4)
    ann.send(m.CreateRoom(settings=SETTINGS))
    world.settle()
    refused(world, ann, m.LeaveRoom(keep_seat=True), WRONG_STATE)  # (no game yet)
    ok(world, ann, m.LeaveRoom())
    first = a_table_waiting_for(world, ann)  # (it stays in play)
    ok(world, bob, m.Spectate(room=first))
    refused(world, bob, m.LeaveRoom(keep_seat=True), WRONG_STATE)  # (no seat to keep)
    ok(world, bob, m.LeaveRoom())
    ok(world, ann, m.LeaveRoom(keep_seat=True))
    refused(world, ann, m.Spectate(room=first), WRONG_STATE)  # (her seat waits for her)
    refused(world, ann, m.JoinRoom(room=first, seat=1), INVALID_FIELD)
    refused(world, bob, m.JoinRoom(room=first), WRONG_STATE)  # (a game is played there)
    ok(world, ann, m.JoinRoom(room=first, seat=0))
    assert ann.state.room is not None and ann.state.room.seat == 0


def test_a_server_keeps_a_bounded_number_of_seats_per_player() -> None:
    world = Kept(seed=10)
    world.gateway.lobby.config = replace(world.gateway.lobby.config, kept_games=1)
    ann = playing(world)
    a_table_of_bots(world, ann)
    ok(world, ann, m.LeaveRoom(keep_seat=True))
    a_table_waiting_for(world, ann)
    refused(world, ann, m.LeaveRoom(keep_seat=True), NOT_PERMITTED)


def test_a_kept_seat_holds_its_session_until_its_game_ends_then_lets_it_go() -> None:
    world = Kept(seed=11)
    ann = playing(world)
    a_table_of_bots(world, ann)
    ok(world, ann, m.LeaveRoom(keep_seat=True))
    lobby = world.gateway.lobby
    player = ann.state.player
    world.disconnect(ann)
    world.advance(3 * lobby.config.session_ttl)
    assert player in lobby.sessions.by_player and not world.records  # (held by its game)
    # Away past the turn timer: the stand-in plays the seat, the game ends,
    # the seat is let go, the room, with no player left, closes, and the
    # session, away longer than it lasts, goes.
    world.advance(TIMER + 60)
    [finished] = world.records
    assert finished.record.seats[0].stand_in and not lobby.rooms
    assert player not in lobby.sessions.by_player


def test_the_players_of_one_address_keep_a_bounded_number_of_seats() -> None:
    world = Kept(seed=12)
    world.gateway.lobby.config = replace(world.gateway.lobby.config, kept_games_per_address=1)
    ann = world.connect("Ann", address="10.0.0.1")
    bob = world.connect("Bob", address="10.0.0.1")
    cy = world.connect("Cy", address="10.0.0.2")
    world.settle()
    for client in (ann, bob, cy):
        a_table_waiting_for(world, client)
    ok(world, ann, m.LeaveRoom(keep_seat=True))
    refused(world, bob, m.LeaveRoom(keep_seat=True), NOT_PERMITTED)
    ok(world, cy, m.LeaveRoom(keep_seat=True))  # (another address)


def test_a_private_room_is_come_back_to_by_its_invite_code_not_watched() -> None:
    world = Kept(seed=13)
    ann = world.connect("Ann")
    world.settle()
    world.start_table([ann], SETTINGS, private=True, bots=2)
    world.settle()
    room = ann.state.room
    assert room is not None and room.invite is not None
    ok(world, ann, m.LeaveRoom(keep_seat=True))
    refused(world, ann, m.Spectate(invite=room.invite.lower()), WRONG_STATE)
    refused(world, ann, m.Spectate(room=room.room), WRONG_STATE)
    ok(world, ann, m.JoinRoom(invite=room.invite))
    assert ann.state.room is not None and ann.state.room.seat == 0


def test_the_host_passes_to_a_player_who_stepped_out_when_the_host_leaves() -> None:
    world = Kept(seed=14)
    # (their clients send what is automatic, no decision: the game waits for Ann's)
    ann, bob = (
        world.connect("Ann", behaviour=Behaviour(None)),
        world.connect("Bob", behaviour=Behaviour(None)),
    )
    world.settle()
    ann.send(m.CreateRoom(settings=SETTINGS))
    world.settle()
    assert ann.state.room is not None
    room_id = ann.state.room.room
    ok(world, bob, m.JoinRoom(room=room_id))
    ok(world, ann, m.AddBot(strategy="random"))
    for client in (ann, bob):
        ok(world, client, m.Ready(ready=True))
    ok(world, ann, m.StartGame())
    world.run(lambda: dealt(ann) and dealt(bob))
    ok(world, bob, m.LeaveRoom(keep_seat=True))
    ok(world, ann, m.LeaveRoom())  # (for good: the stand-in plays her seat)
    room = world.gateway.lobby.rooms[room_id]
    assert room.host == bob.state.player
    ok(world, bob, m.JoinRoom(room=room_id))
    assert bob.state.room is not None and bob.state.room.host == bob.state.player


def test_a_game_that_ended_while_its_player_was_away_is_no_longer_said_to_wait() -> None:
    world = Kept(seed=15)
    ann = playing(world)
    world.start_table([ann], m.RoomSettings.for_players(3, first_player="host"), bots=2)
    world.run(lambda: dealt(ann))
    assert ann.state.room is not None
    first = ann.state.room.room
    ok(world, ann, m.LeaveRoom(keep_seat=True))
    world.run(lambda: waiting(ann) == (first,))
    world.disconnect(ann)
    # No turn timer: the server's grace period, then the stand-in plays her
    # seat to the end; the games waiting change while she is away.
    world.advance(world.gateway.lobby.config.grace + 1)
    assert world.records
    ann = resume(world, ann)  # (a snapshot: it says no game waits now)
    assert [p.rooms for p in received(ann, m.GamesWaiting)] == [()]
    assert waiting(ann) == ()


def test_a_player_out_of_a_game_of_days_has_a_whole_timer_for_each_decision() -> None:
    """Ann steps out on Bo's turn; Bo answers near the end of his timer: Ann
    has her own whole timer for her decision then, and only past it does
    the timer's rule apply (the stand-in plays her seat)."""
    world = Kept(seed=17)
    ann = world.connect("Ann", behaviour=Behaviour(None))  # (what is automatic, no decision)
    bob = world.connect("Bob", behaviour=Behaviour(None))
    world.settle()
    ok(
        world,
        ann,
        m.CreateRoom(settings=m.RoomSettings.for_players(2, turn_timer=TIMER, first_player="host")),
    )
    assert ann.state.room is not None
    room_id = ann.state.room.room
    ok(world, bob, m.JoinRoom(room=room_id))
    for client in (ann, bob):
        ok(world, client, m.Ready(ready=True))
    ok(world, ann, m.StartGame(first_player=1))
    world.run(lambda: bob.state.game is not None and bob.state.game.my_turn)
    ok(world, ann, m.LeaveRoom(keep_seat=True))
    room = world.gateway.lobby.rooms[room_id]
    world.advance(0.95 * TIMER)
    while (game := bob.state.game) is not None and game.my_turn:  # Bob answers, late
        ok(world, bob, game.answer(game.options()[0]))
    assert waiting(ann) == (room_id,)
    world.advance(0.1 * TIMER)  # (past a whole timer since Ann stepped out)
    assert not room._stood_in(0) and waiting(ann) == (room_id,)
    world.advance(0.9 * TIMER + 60)  # (past her own decision's timer)
    assert room._stood_in(0)

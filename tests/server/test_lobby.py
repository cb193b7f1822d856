"""The lobby as docs/PROTOCOL.md "Lobby" describes it, through the server's core.

`list_rooms` (public rooms only, waiting then playing then finished, at
most 200), `create_room` (seat 0, host, a name made up when absent),
`join_room` (the lowest free seat or the one asked for; `room_full`,
`no_such_room`, `wrong_state`), `spectate` (during a game too: the public
pushes, no hidden identity), private rooms and their invite codes, and
`leave_room`. Every refusal carries its request's id and changes nothing.
"""

from __future__ import annotations

import re

from oriflamme.launcher.inprocess import Client, InProcess
from oriflamme.protocol import messages as m
from oriflamme.server.core import FixedEntropy, Lobby, Send, ServerConfig

from .scenario import (
    after,
    game_round,
    hidden_cards_shown,
    last_room,
    new_world,
    ok,
    player,
    received,
    refused,
    room_list,
    settings,
    table,
    types,
)


def finished_room(world: InProcess, name: str) -> int:
    """A room whose game, between `name` (a bot client) and two server bots, is over."""
    host = player(world, name, bot="random", seed=1)
    for request in (
        m.CreateRoom(settings=settings(3), name=f"{name}'s game"),
        m.AddBot(strategy="heuristic"),
        m.AddBot(strategy="random"),
        m.Ready(ready=True),
    ):
        ok(world, host, request)
    host.send(m.StartGame())
    games = len(world.records)
    world.run(lambda: len(world.records) > games)
    world.settle()
    assert last_room(host).state == "finished"
    return last_room(host).room


def playing_host(world: InProcess, name: str) -> Client:
    """The host of a two-seat room whose game has started (it never commits:
    the game stays in seeding as long as no time passes)."""
    host = player(world, name)
    for request in (
        m.CreateRoom(settings=settings(2)),
        m.AddBot(strategy="random"),
        m.Ready(ready=True),
        m.StartGame(),
    ):
        ok(world, host, request)
    assert last_room(host).state == "playing"
    return host


def playing_room(world: InProcess, name: str) -> int:
    """A two-seat room whose game has started (see `playing_host`)."""
    return last_room(playing_host(world, name)).room


def waiting_room(world: InProcess, name: str, *, private: bool = False) -> int:
    host = player(world, name)
    ok(world, host, m.CreateRoom(settings=settings(3), private=private or None))
    assert last_room(host).state == "waiting"
    return last_room(host).room


# ------------------------------------------------------------ list_rooms


def test_list_rooms_shows_public_rooms_waiting_then_playing_then_finished() -> None:
    world = new_world("list order")
    finished = finished_room(world, "Fin")
    first_waiting = waiting_room(world, "Wendy")
    private = waiting_room(world, "Pat", private=True)
    playing = playing_room(world, "Paul")
    second_waiting = waiting_room(world, "Walt")
    observer = player(world, "Olga")

    rooms = room_list(world, observer)

    assert [r.room for r in rooms] == [first_waiting, second_waiting, playing, finished]
    assert private not in [r.room for r in rooms]
    assert [r.state for r in rooms] == ["waiting", "waiting", "playing", "finished"]
    wendy = rooms[0]
    assert (wendy.name, wendy.host, wendy.seated, wendy.spectators) == (
        "Wendy's table",
        "Wendy",
        1,
        0,
    )
    assert wendy.settings == settings(3)
    assert (rooms[2].host, rooms[2].seated, rooms[2].settings.players) == ("Paul", 2, 2)
    assert (rooms[3].name, rooms[3].seated) == ("Fin's game", 3)


def test_the_room_list_holds_at_most_200_rooms_the_open_ones_first() -> None:
    lobby = Lobby(ServerConfig(), FixedEntropy("many rooms"))

    def answer(effects: list) -> m.Message:
        return effects[0].message

    def new_session(i: int) -> str:
        conn = f"conn {i}"
        welcome = answer(lobby.hello(conn, m.Hello(versions=(1,), client="t", name=f"p{i}"), 0.0))
        assert isinstance(welcome, m.Welcome)
        return conn

    for i in range(5):  # rooms 1-5: a game is being played
        conn = new_session(i)
        for request in (
            m.CreateRoom(settings=settings(2)),
            m.AddBot(strategy="random"),
            m.Ready(ready=True),
            m.StartGame(),
        ):
            assert isinstance(answer(lobby.request(conn, request, 0.0)), m.Ok)
    for i in range(5, 210):  # rooms 6-210: waiting
        conn = new_session(i)
        assert isinstance(
            answer(lobby.request(conn, m.CreateRoom(settings=settings(3)), 0.0)), m.Ok
        )
    assert len(lobby.rooms) == 210

    listed = answer(lobby.request(new_session(999), m.ListRooms(id=4), 0.0))

    assert isinstance(listed, m.RoomList) and listed.id == 4
    assert len(listed.rooms) == 200
    assert [r.room for r in listed.rooms] == list(range(6, 206))
    assert {r.state for r in listed.rooms} == {"waiting"}


# ------------------------------------------------------------ create_room


def test_create_room_seats_its_creator_in_seat_0_as_host() -> None:
    world = new_world("create")
    ann = player(world, "Ann")
    mark = len(ann.received)

    ok(world, ann, m.CreateRoom(settings=settings(4), name="Ann's den"))

    assert types(after(ann, mark)) == ["ok", "room_state"]
    state = last_room(ann)
    assert (state.name, state.state, state.host, state.seat) == ("Ann's den", "waiting", 1, 0)
    assert ann.state.player == 1
    assert state.invite is None and state.spectators == 0
    assert state.settings == settings(4)
    assert [s.seat for s in state.seats] == [0, 1, 2, 3]
    first = state.seats[0]
    assert (first.name, first.player, first.bot, first.ready, first.connected) == (
        "Ann",
        1,
        None,
        False,
        True,
    )
    assert all(s.name is None and s.player is None for s in state.seats[1:])


def test_create_room_without_a_name_makes_one_up_from_the_creator_s_name() -> None:
    world = new_world("made-up names")
    ann = player(world, "Ann")
    ok(world, ann, m.CreateRoom(settings=settings(3)))
    assert "Ann" in last_room(ann).name

    # The longest display name still gives a valid room name (1..40 characters).
    long = player(world, "W" * 32)
    ok(world, long, m.CreateRoom(settings=settings(3)))
    name = last_room(long).name
    assert "W" * 20 in name and 1 <= len(name) <= 40


def test_create_room_with_settings_out_of_bounds_is_invalid_field_and_creates_nothing() -> None:
    from oriflamme.protocol import encode_frame

    from .test_gateway import Peer, frames, gateway

    gw = gateway()
    Peer(gw, "a")
    base = {"players": 3, "variant": "standard", "edition": "revised", "first_player": "host"}
    wrongs: list[dict[str, object]] = [
        {"players": 2},  # the standard game seats 3-5
        {"variant": "two-player"},  # which seats exactly 2
        {"players": 6},
        {"turn_timer": 5},
        {"first_player": "oldest"},
    ]
    for i, wrong in enumerate(wrongs):
        request = {"type": "create_room", "settings": base | wrong, "id": 100 + i}
        gw.receive_data("a", encode_frame(request), 1.0)
        (error,) = frames(gw.data_to_send("a"))
        assert (error["code"], error["id"], error["fatal"]) == ("invalid_field", 100 + i, False)
        assert "create_room.settings." in error["message"]
    assert gw.lobby.rooms == {} and not gw.must_close("a")


def test_create_room_is_refused_to_someone_already_in_a_room() -> None:
    world = new_world("create twice")
    ann, observer = player(world, "Ann"), player(world, "Olga")
    ok(world, ann, m.CreateRoom(settings=settings(3)))
    refused(world, ann, m.CreateRoom(settings=settings(4)), "wrong_state", observer=observer)
    assert [r.room for r in room_list(world, observer)] == [1]


# ------------------------------------------------------------ join_room


def test_join_room_takes_the_lowest_free_seat_or_the_seat_asked_for() -> None:
    world = new_world("join seats")
    ann, bob, cy, di = (player(world, n) for n in ("Ann", "Bob", "Cy", "Di"))
    ok(world, ann, m.CreateRoom(settings=settings(4)))

    mark = len(bob.received)
    ok(world, bob, m.JoinRoom(room=1, seat=2))
    assert types(after(bob, mark)) == ["ok", "room_state"]
    assert last_room(bob).seat == 2
    ok(world, cy, m.JoinRoom(room=1))
    assert last_room(cy).seat == 1
    ok(world, di, m.JoinRoom(room=1))
    assert last_room(di).seat == 3

    # Everyone in the room sees the same seats.
    seats = last_room(ann).seats
    assert [(s.seat, s.name) for s in seats] == [(0, "Ann"), (1, "Cy"), (2, "Bob"), (3, "Di")]
    assert [s.player for s in seats] == [ann.state.player, cy.state.player, bob.state.player, 4]
    for client in (bob, cy, di):
        assert last_room(client).seats == seats
    assert [last_room(c).seat for c in (ann, cy, bob, di)] == [0, 1, 2, 3]


def test_join_room_refusals_change_nothing() -> None:
    world = new_world("join refusals")
    ann, bob, cy, observer = (player(world, n) for n in ("Ann", "Bob", "Cy", "Olga"))
    ok(world, ann, m.CreateRoom(settings=settings(3)))
    ok(world, bob, m.JoinRoom(room=1, seat=2))

    refused(world, cy, m.JoinRoom(room=1, seat=2), "room_full", observer=observer)
    refused(world, cy, m.JoinRoom(room=1, seat=0), "room_full", observer=observer)
    refused(world, cy, m.JoinRoom(room=99), "no_such_room", observer=observer)
    refused(world, cy, m.JoinRoom(room=1, seat=3), "invalid_field", observer=observer)
    # Already in a room (its own, or another one).
    refused(world, bob, m.JoinRoom(room=1), "wrong_state", observer=observer)
    ok(world, cy, m.CreateRoom(settings=settings(3)))
    refused(world, bob, m.JoinRoom(room=2), "wrong_state", observer=observer)
    refused(world, bob, m.Spectate(room=2), "wrong_state", observer=observer)
    # No free seat left.
    di = player(world, "Di")
    ok(world, di, m.JoinRoom(room=1))
    assert last_room(di).seat == 1
    refused(world, player(world, "Ed"), m.JoinRoom(room=1), "room_full", observer=observer)


def test_join_room_is_refused_while_a_game_is_being_played() -> None:
    world = new_world("join while playing")
    observer = player(world, "Olga")
    room = playing_room(world, "Paul")
    eve = player(world, "Eve")
    refused(world, eve, m.JoinRoom(room=room), "wrong_state", observer=observer)
    refused(world, eve, m.JoinRoom(room=room, seat=1), "wrong_state", observer=observer)


# ------------------------------------------------------------ spectate


def test_spectate_shows_the_room_without_a_seat_to_everyone() -> None:
    world = new_world("spectate")
    ann, bob, wat = player(world, "Ann"), player(world, "Bob"), player(world, "Wat")
    ok(world, ann, m.CreateRoom(settings=settings(3)))
    ok(world, bob, m.JoinRoom(room=1))

    mark = len(wat.received)
    ok(world, wat, m.Spectate(room=1))

    assert types(after(wat, mark)) == ["ok", "room_state"]
    seen = last_room(wat)
    assert seen.seat is None and seen.spectators == 1
    assert last_room(ann).spectators == 1 and last_room(ann).seat == 0
    assert [s.name for s in seen.seats] == ["Ann", "Bob", None]
    assert room_list(world, player(world, "Olga"))[0].spectators == 1
    refused(world, wat, m.Ready(ready=True), "wrong_state")
    refused(world, wat, m.Spectate(room=1), "wrong_state")
    refused(world, wat, m.JoinRoom(room=1), "wrong_state")
    refused(world, player(world, "Xi"), m.Spectate(room=42), "no_such_room")


def test_a_spectator_of_a_game_gets_the_public_pushes_and_no_hidden_identity() -> None:
    world = new_world("spectate a game", seed=3, versions=(1,))
    watcher = player(world, "Wat")
    clients = table(world, 3, seed=3)
    world.run(lambda: game_round(clients[0]) >= 2)
    mark = len(watcher.received)

    request = watcher.send(m.Spectate(room=1))
    world.run(lambda: watcher.answer(request) is not None)  # the game goes on meanwhile

    first = after(watcher, mark)
    assert types(first[:5]) == ["ok", "room_state", "game_started", "server_seed", "game_state"]
    room_state, started, server_seed, snapshot = first[1:5]
    assert isinstance(room_state, m.RoomState) and room_state.seat is None
    assert room_state.state == "playing"
    assert isinstance(started, m.GameStarted) and started.seat is None
    assert started.game == clients[0].state.game.game_id
    assert isinstance(server_seed, m.ServerSeed)
    assert server_seed.seed == clients[0].state.game.server_seed
    assert isinstance(snapshot, m.GameState) and snapshot.snapshot
    assert snapshot.view["viewer"] is None and snapshot.events == []
    assert snapshot.view["round"] >= 2

    world.run(lambda: bool(world.records))
    world.settle()

    states = received(watcher, m.GameState)
    assert len(states) > 10
    assert all(s.view["viewer"] is None for s in states)
    for message in watcher.received:
        assert hidden_cards_shown(message) == [], message.TYPE
    assert received(watcher, m.OpenRequest) == []
    assert received(watcher, m.FinalRevealRequest) == []
    (end,) = received(watcher, m.GameEnd)
    assert end.scores == received(clients[0], m.GameEnd)[0].scores
    # A seated player's view is for its seat.
    assert all(s.view["viewer"] == 1 for s in received(clients[1], m.GameState))


# ------------------------------------------------------------ private rooms


INVITE = re.compile(r"^[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$")


def test_a_private_room_is_unlisted_and_joined_by_its_invite_code_only() -> None:
    world = new_world("private")
    hana, bob, cy, observer = (player(world, n) for n in ("Hana", "Bob", "Cy", "Olga"))
    ok(world, hana, m.CreateRoom(settings=settings(3), private=True))
    code = last_room(hana).invite
    assert code is not None and INVITE.match(code), code
    assert room_list(world, observer) == ()

    # Not by its id.
    refused(world, bob, m.JoinRoom(room=1), "no_such_room", observer=observer)
    refused(world, bob, m.Spectate(room=1), "no_such_room", observer=observer)
    # An unknown code.
    other = "ZZZZ-ZZZZ" if code != "ZZZZ-ZZZZ" else "YYYY-YYYY"
    refused(world, bob, m.JoinRoom(invite=other), "no_such_room", observer=observer)
    refused(world, bob, m.Spectate(invite=other), "no_such_room", observer=observer)

    # By its code, whatever the case and with or without the dash.
    ok(world, bob, m.JoinRoom(invite=code.replace("-", "").lower()))
    assert last_room(bob).seat == 1 and last_room(bob).room == 1
    assert last_room(bob).invite == code
    ok(world, cy, m.Spectate(invite=code.lower().replace("0", "o")))  # O read as zero
    assert last_room(cy).seat is None and last_room(cy).invite == code
    assert last_room(hana).spectators == 1
    assert room_list(world, observer) == ()

    # Once the room closes, its code leads nowhere.
    ok(world, bob, m.LeaveRoom())
    ok(world, hana, m.LeaveRoom())
    assert last_room(cy).state == "closed"
    refused(world, bob, m.JoinRoom(invite=code), "no_such_room", observer=observer)


def test_two_private_rooms_have_different_codes() -> None:
    world = new_world("two codes")
    a, b = player(world, "A"), player(world, "B")
    ok(world, a, m.CreateRoom(settings=settings(3), private=True))
    ok(world, b, m.CreateRoom(settings=settings(3), private=True))
    codes = {last_room(a).invite, last_room(b).invite}
    assert len(codes) == 2 and None not in codes
    c = player(world, "C")
    ok(world, c, m.JoinRoom(invite=last_room(b).invite))
    assert last_room(c).room == last_room(b).room == 2


# ------------------------------------------------------------ leave_room


def test_leave_room_frees_the_seat_and_is_refused_in_no_room() -> None:
    world = new_world("leave")
    ann, bob, observer = player(world, "Ann"), player(world, "Bob"), player(world, "Olga")
    refused(world, bob, m.LeaveRoom(), "wrong_state", observer=observer)
    ok(world, ann, m.CreateRoom(settings=settings(3)))
    ok(world, bob, m.JoinRoom(room=1))
    mark = len(bob.received)

    ok(world, bob, m.LeaveRoom())

    assert types(after(bob, mark)) == ["ok"]  # the leaver gets no push
    assert bob.state.room is None
    seats = last_room(ann).seats
    assert seats[1].name is None and seats[1].player is None
    assert room_list(world, observer)[0].seated == 1
    refused(world, bob, m.LeaveRoom(), "wrong_state", observer=observer)
    refused(world, bob, m.Sync(), "wrong_state", observer=observer)
    # Back in the lobby: free to join again.
    ok(world, bob, m.JoinRoom(room=1))
    assert last_room(bob).seat == 1


def test_the_lobby_sends_no_pushes() -> None:
    world = new_world("quiet lobby")
    ann, lurker = player(world, "Ann"), player(world, "Lurker")
    ok(world, ann, m.CreateRoom(settings=settings(3)))
    ok(world, ann, m.Chat(text="anyone?"))
    ok(world, ann, m.AddBot(strategy="random"))
    room_list(world, lurker)
    assert [x.TYPE for x in lurker.received if x.ROLE == "push"] == []


def test_a_lobby_request_answered_directly_carries_its_id() -> None:
    lobby = Lobby(ServerConfig(), FixedEntropy("ids"))
    lobby.hello("c", m.Hello(versions=(1,), client="t", name="Ann", id=9), 0.0)
    for request, reply in (
        (m.Ping(id=17), m.Pong),
        (m.ListRooms(id=18), m.RoomList),
        (m.CreateRoom(settings=settings(3), id=19), m.Ok),
        (m.JoinRoom(room=1, id=20), m.Error),
    ):
        effects = lobby.request("c", request, 0.0)
        assert isinstance(effects[0], Send) and effects[0].conn == "c"
        assert isinstance(effects[0].message, reply)
        assert effects[0].message.id == request.id


def test_lobby_chat_reaches_the_players_connected_in_the_lobby_and_no_room() -> None:
    world = new_world("lobby chat")
    ann, bob, cy, away = (player(world, n) for n in ("Ann", "Bob", "Cy", "Away"))
    ok(world, cy, m.CreateRoom(settings=settings(3)))
    world.disconnect(away)
    ok(world, ann, m.Chat(text="anyone for a game?"))
    said = m.ChatMessage
    for listener in (ann, bob):
        lines = received(listener, said)
        assert [(x.room, x.name, x.text, x.player) for x in lines] == [
            (None, "Ann", "anyone for a game?", ann.endpoint.welcome.player)
        ]
    assert received(cy, said) == [] and received(away, said) == []
    # In a room, chat stays in the room.
    ok(world, cy, m.Chat(text="in here"))
    assert [x.text for x in received(ann, said)] == ["anyone for a game?"]
    assert [x.room for x in received(cy, said)] == [last_room(cy).room]


def test_chat_is_limited_to_10_lines_in_10_seconds() -> None:
    world = new_world("lobby chat flood")
    ann, bob = player(world, "Ann"), player(world, "Bob")
    for i in range(10):
        ok(world, ann, m.Chat(text=f"line {i}"))
    refused(world, ann, m.Chat(text="one too many"), "rate_limited")
    world.advance(10)
    ok(world, ann, m.Chat(text="later"))
    assert [x.text for x in received(bob, m.ChatMessage)][-2:] == ["line 9", "later"]


# ------------------------------------------------------------ deadlines


def test_an_input_has_the_lobby_ask_only_its_own_room_for_its_deadline() -> None:
    """With many games going on, the lobby does not ask every room for its
    deadline after each input (tests/conftest.py checks at every call, in
    every test, that what it kept is what all the rooms would say)."""
    world = new_world("deadlines")
    hosts = [playing_host(world, f"host {i}") for i in range(20)]
    lobby = world.gateway.lobby
    assert lobby.next_deadline() is not None  # every game waits for its seeds
    assert not lobby._touched
    ok(world, hosts[7], m.Chat(text="hello"))
    assert lobby._touched == {last_room(hosts[7]).room}
    assert lobby.next_deadline() is not None
    assert not lobby._touched

"""A room as docs/PROTOCOL.md "Lobby" describes it, through the server's core.

`ready` (seated players only), `start_game` (the host, every seat taken and
every player ready; the first player named by the host or drawn by the
server), `add_bot` and `remove_bot` (the host, before the game), `chat`
(to everyone in the room, the sender and spectators included), the host
passing to the next seated human when the host leaves, the room closing
when no human is left, and playing again once a game is over. Every
refusal carries its request's id and changes nothing.
"""

from __future__ import annotations

import pytest

from oriflamme.launcher.inprocess import Client, InProcess
from oriflamme.protocol import messages as m

from .scenario import (
    after,
    last_room,
    new_world,
    ok,
    player,
    received,
    refused,
    room_list,
    settings,
    types,
)


def room_of(
    world: InProcess, players: int, *names: str, first_player: str = "host"
) -> list[Client]:
    """Clients named `names`: the first creates a room of `players` seats,
    the others join it in turn."""
    clients = [player(world, name) for name in names]
    ok(world, clients[0], m.CreateRoom(settings=settings(players, first_player=first_player)))
    for client in clients[1:]:
        ok(world, client, m.JoinRoom(room=last_room(clients[0]).room))
    return clients


# ------------------------------------------------------------ ready


def test_ready_is_shown_to_everyone_and_refused_to_spectators() -> None:
    world = new_world("ready")
    ann, bob = room_of(world, 3, "Ann", "Bob")
    wat = player(world, "Wat")
    ok(world, wat, m.Spectate(room=1))

    ok(world, bob, m.Ready(ready=True))
    for client in (ann, bob, wat):
        assert [s.ready for s in last_room(client).seats] == [False, True, False]
    ok(world, bob, m.Ready(ready=False))
    assert [s.ready for s in last_room(wat).seats] == [False, False, False]

    refused(world, wat, m.Ready(ready=True), "wrong_state")
    refused(world, player(world, "Lou"), m.Ready(ready=True), "wrong_state")


# ------------------------------------------------------------ start_game


def test_start_game_is_refused_until_every_seat_is_taken_and_every_player_ready() -> None:
    world = new_world("start refusals")
    observer = player(world, "Olga")
    ann, bob = room_of(world, 3, "Ann", "Bob")
    ok(world, ann, m.Ready(ready=True))
    ok(world, bob, m.Ready(ready=True))

    refused(world, bob, m.StartGame(), "not_permitted", observer=observer)
    refused(world, ann, m.StartGame(), "wrong_state", observer=observer)  # seat 2 is empty
    cy = player(world, "Cy")
    ok(world, cy, m.JoinRoom(room=1))
    refused(world, ann, m.StartGame(), "wrong_state", observer=observer)  # Cy is not ready
    ok(world, cy, m.Ready(ready=True))
    refused(world, cy, m.StartGame(), "not_permitted", observer=observer)
    refused(world, ann, m.StartGame(first_player=3), "invalid_field", observer=observer)
    ok(world, ann, m.Ready(ready=False))
    refused(world, ann, m.StartGame(), "wrong_state", observer=observer)  # the host is not ready
    ok(world, ann, m.Ready(ready=True))

    mark = len(bob.received)
    ok(world, ann, m.StartGame(first_player=2))

    assert types(after(bob, mark))[:2] == ["room_state", "game_started"]
    assert last_room(bob).state == "playing"
    started = received(bob, m.GameStarted)[0]
    assert (started.first_player, started.seat) == (2, 1)
    assert started.families == (("red",), ("blue",), ("green",))
    assert received(ann, m.GameStarted)[0].seat == 0
    # A game is being played now.
    refused(world, ann, m.StartGame(), "wrong_state", observer=observer)
    refused(world, bob, m.Ready(ready=False), "wrong_state", observer=observer)


def test_the_first_player_is_the_host_s_seat_by_default() -> None:
    world = new_world("host's seat")
    ann, bob, cy = room_of(world, 3, "Ann", "Bob", "Cy")
    ok(world, ann, m.LeaveRoom())  # Bob, in seat 1, becomes the host
    assert last_room(bob).host == bob.state.player
    di = player(world, "Di")
    ok(world, di, m.JoinRoom(room=1))
    assert last_room(di).seat == 0
    for client in (bob, cy, di):
        ok(world, client, m.Ready(ready=True))

    ok(world, bob, m.StartGame())

    assert received(di, m.GameStarted)[0].first_player == 1


def test_with_the_random_policy_the_server_draws_the_first_player() -> None:
    world = new_world("random first player")
    observer = player(world, "Olga")
    ann, bob = room_of(world, 2, "Ann", "Bob", first_player="random")
    ok(world, ann, m.Ready(ready=True))
    ok(world, bob, m.Ready(ready=True))

    refused(world, ann, m.StartGame(first_player=0), "invalid_field", observer=observer)
    refused(world, ann, m.StartGame(first_player=1), "invalid_field", observer=observer)
    ok(world, ann, m.StartGame())

    started = received(bob, m.GameStarted)[0]
    assert started.first_player in (0, 1)
    assert started.settings.first_player == "random"


# ------------------------------------------------------------ bots


def test_the_host_adds_bots_shown_with_their_strategy_ready_and_connected() -> None:
    world = new_world("add bots")
    observer = player(world, "Olga")
    ann, bob = room_of(world, 4, "Ann", "Bob")

    refused(world, bob, m.AddBot(strategy="random"), "not_permitted", observer=observer)
    refused(world, ann, m.AddBot(strategy="clairvoyant"), "invalid_field", observer=observer)
    refused(world, ann, m.AddBot(strategy="random", seat=1), "room_full", observer=observer)
    refused(world, ann, m.AddBot(strategy="random", seat=4), "invalid_field", observer=observer)

    mark = len(bob.received)
    ok(world, ann, m.AddBot(strategy="heuristic", seat=3))
    states = [x for x in after(bob, mark) if isinstance(x, m.RoomState)]
    assert states, "no room_state after add_bot"
    seat = states[-1].seats[3]
    assert (seat.bot, seat.ready, seat.player, seat.connected) == ("heuristic", True, None, True)
    assert seat.name
    assert len(world.bots) == 1  # the server started it, and it connected

    ok(world, ann, m.AddBot(strategy="random"))
    seats = last_room(bob).seats
    assert [s.bot for s in seats] == [None, None, "random", "heuristic"]
    assert all(s.connected for s in seats)
    assert room_list(world, observer)[0].seated == 4
    refused(world, ann, m.AddBot(strategy="random"), "room_full", observer=observer)


def test_the_host_removes_bots_before_the_game_only() -> None:
    world = new_world("remove bots")
    observer = player(world, "Olga")
    ann, bob = room_of(world, 4, "Ann", "Bob")
    ok(world, ann, m.AddBot(strategy="random"))
    ok(world, ann, m.AddBot(strategy="heuristic"))
    assert [s.bot for s in last_room(ann).seats] == [None, None, "random", "heuristic"]
    (bot_client,) = [world.bots[p] for p in world.bots if world.bots[p].state.seat == 2]

    refused(world, bob, m.RemoveBot(seat=2), "not_permitted", observer=observer)
    refused(world, ann, m.RemoveBot(seat=1), "wrong_state", observer=observer)  # Bob is no bot
    ok(world, ann, m.RemoveBot(seat=2))

    seats = last_room(bob).seats
    assert (seats[2].name, seats[2].bot, seats[2].ready) == (None, None, False)
    assert seats[3].bot == "heuristic"
    assert not bot_client.connected  # the server stopped it
    refused(world, ann, m.RemoveBot(seat=2), "wrong_state", observer=observer)  # an empty seat

    ok(world, ann, m.AddBot(strategy="random"))
    ok(world, ann, m.Ready(ready=True))
    ok(world, bob, m.Ready(ready=True))
    ok(world, ann, m.StartGame())
    refused(world, ann, m.RemoveBot(seat=3), "wrong_state", observer=observer)
    refused(world, ann, m.AddBot(strategy="random"), "wrong_state", observer=observer)


# ------------------------------------------------------------ chat


def test_chat_reaches_everyone_in_the_room_the_sender_and_spectators_included() -> None:
    world = new_world("chat")
    ann, bob = room_of(world, 3, "Ann", "Bob")
    wat, lurker = player(world, "Wat"), player(world, "Lurker")
    elsewhere = player(world, "Else")
    ok(world, wat, m.Spectate(room=1))
    ok(world, elsewhere, m.CreateRoom(settings=settings(3)))

    ok(world, bob, m.Chat(text="good luck, everyone"))
    ok(world, wat, m.Chat(text="go Ann!"))

    for client in (ann, bob, wat):
        lines = [(c.room, c.name, c.player, c.text) for c in received(client, m.ChatMessage)]
        assert lines == [
            (1, "Bob", bob.state.player, "good luck, everyone"),
            (1, "Wat", wat.state.player, "go Ann!"),
        ]
    assert received(lurker, m.ChatMessage) == []
    assert received(elsewhere, m.ChatMessage) == []


# ------------------------------------------------------------ the host leaves


def test_when_the_host_leaves_the_next_seated_human_becomes_host() -> None:
    world = new_world("succession")
    observer = player(world, "Olga")
    ann = player(world, "Ann")
    ok(world, ann, m.CreateRoom(settings=settings(5)))
    ok(world, ann, m.AddBot(strategy="random", seat=1))
    bob, cy, di = player(world, "Bob"), player(world, "Cy"), player(world, "Di")
    ok(world, cy, m.JoinRoom(room=1, seat=4))
    ok(world, bob, m.JoinRoom(room=1, seat=2))
    wat = player(world, "Wat")
    ok(world, wat, m.Spectate(room=1))
    assert last_room(bob).host == ann.state.player

    ok(world, ann, m.LeaveRoom())  # seat 1 is a bot: Bob, in seat 2, is next

    for client in (bob, cy, wat):
        assert last_room(client).host == bob.state.player
    assert room_list(world, observer)[0].host == "Bob"
    ok(world, di, m.JoinRoom(room=1, seat=3))
    assert last_room(di).host == bob.state.player
    ok(world, bob, m.AddBot(strategy="heuristic"))  # the new host may do what hosts do
    assert last_room(di).seats[0].bot == "heuristic"
    refused(world, cy, m.AddBot(strategy="random"), "not_permitted")

    ok(world, bob, m.LeaveRoom())  # seats 0 and 1 are bots: Di, in seat 3, is next
    assert last_room(cy).host == di.state.player
    assert room_list(world, observer)[0].host == "Di"


def test_a_room_with_no_human_left_closes_and_its_spectators_are_told() -> None:
    world = new_world("closing")
    observer = player(world, "Olga")
    ann, bob = room_of(world, 3, "Ann", "Bob")
    ok(world, ann, m.AddBot(strategy="random"))
    wat = player(world, "Wat")
    ok(world, wat, m.Spectate(room=1))
    (bot,) = world.bots.values()
    ok(world, bob, m.LeaveRoom())
    assert last_room(wat).state == "waiting"

    ok(world, ann, m.LeaveRoom())

    closed = last_room(wat)
    assert closed.state == "closed" and closed.room == 1
    assert wat.state.room is None
    assert last_room(bot).state == "closed"
    assert not bot.connected  # the server stopped its bot
    assert room_list(world, observer) == ()
    refused(world, bob, m.JoinRoom(room=1), "no_such_room", observer=observer)
    refused(world, bob, m.Spectate(room=1), "no_such_room", observer=observer)
    # The spectator is back in the lobby.
    refused(world, wat, m.LeaveRoom(), "wrong_state")
    ok(world, wat, m.CreateRoom(settings=settings(3)))
    assert last_room(wat).room == 2


def test_the_host_leaving_during_a_game_passes_the_host_and_the_game_goes_on() -> None:
    world = new_world("host leaves a game", seed=5, versions=(1,))
    ann = player(world, "Ann", bot="random", seed=1)
    bob = player(world, "Bob", bot="random", seed=2)
    cy = player(world, "Cy", bot="random", seed=3)
    ok(world, ann, m.CreateRoom(settings=settings(3)))
    for client in (bob, cy):
        ok(world, client, m.JoinRoom(room=1))
    for client in (ann, bob, cy):
        ok(world, client, m.Ready(ready=True))
    ann.send(m.StartGame())
    world.run(lambda: len(received(bob, m.GameState)) > 6)

    request = ann.send(m.LeaveRoom())
    world.run(lambda: ann.answer(request) is not None)

    assert isinstance(ann.answer(request), m.Ok)
    state = last_room(bob)
    assert state.host == bob.state.player and state.state == "playing"
    assert (state.seats[0].name, state.seats[0].bot) == ("Ann", "stand_in")  # kept until the end
    world.run(lambda: bool(world.records))
    world.settle()
    assert last_room(cy).state == "finished" and last_room(cy).seats[0].name is None
    # The new host starts the next game once the seat is taken and everyone is ready.
    ok(world, bob, m.AddBot(strategy="random", seat=0))
    ok(world, bob, m.Ready(ready=True))
    ok(world, cy, m.Ready(ready=True))
    request = bob.send(m.StartGame())
    world.run(lambda: bob.answer(request) is not None)
    assert isinstance(bob.answer(request), m.Ok) and last_room(cy).state == "playing"


def test_a_room_whose_last_human_left_during_a_game_closes_when_the_game_ends() -> None:
    world = new_world("last human leaves", seed=6, versions=(1,))
    ann = player(world, "Ann", bot="random", seed=1)
    wat = player(world, "Wat")
    ok(world, ann, m.CreateRoom(settings=settings(3)))
    ok(world, ann, m.AddBot(strategy="random"))
    ok(world, ann, m.AddBot(strategy="heuristic"))
    ok(world, wat, m.Spectate(room=1))
    ok(world, ann, m.Ready(ready=True))
    ann.send(m.StartGame())
    world.run(lambda: len(received(wat, m.GameState)) > 6)

    request = ann.send(m.LeaveRoom())
    world.run(lambda: ann.answer(request) is not None)
    assert last_room(wat).state == "playing"  # the bots and the stand-in play on

    world.run(lambda: bool(world.records))
    world.settle()

    assert received(wat, m.GameEnd)
    assert last_room(wat).state == "closed" and wat.state.room is None
    assert world.bots == {}  # both bots stopped
    assert room_list(world, player(world, "Olga")) == ()


def test_a_spectator_leaving_keeps_the_room() -> None:
    world = new_world("spectator leaves")
    (ann,) = room_of(world, 3, "Ann")
    wat = player(world, "Wat")
    ok(world, wat, m.Spectate(room=1))
    assert last_room(ann).spectators == 1
    ok(world, wat, m.LeaveRoom())
    assert last_room(ann).spectators == 0 and last_room(ann).state == "waiting"
    assert wat.state.room is None


# ------------------------------------------------------------ after a game


def test_after_a_game_the_room_is_finished_and_plays_again_once_everyone_is_ready() -> None:
    world = new_world("play again", seed=2)
    observer = player(world, "Olga")
    ann = player(world, "Ann", bot="random", seed=1)
    bob = player(world, "Bob", bot="heuristic", seed=2)
    ok(world, ann, m.CreateRoom(settings=settings(3)))
    ok(world, bob, m.JoinRoom(room=1))
    ok(world, ann, m.AddBot(strategy="random"))
    ok(world, ann, m.Ready(ready=True))
    ok(world, bob, m.Ready(ready=True))
    ann.send(m.StartGame())
    world.run(lambda: bool(world.records))
    world.settle()

    first_game = received(ann, m.GameEnd)[0].game
    for client in (ann, bob):
        state = last_room(client)
        assert state.state == "finished"
        assert [s.ready for s in state.seats] == [False, False, True]  # a bot is always ready
        assert isinstance(client.received[-1], m.RoomState)  # after game_end
    ends = [i for i, x in enumerate(ann.received) if isinstance(x, m.GameEnd)]
    assert any(isinstance(x, m.RoomState) for x in ann.received[ends[0] :])
    assert room_list(world, observer)[0].state == "finished"

    refused(world, ann, m.StartGame(), "wrong_state", observer=observer)
    ok(world, ann, m.Ready(ready=True))
    refused(world, ann, m.StartGame(), "wrong_state", observer=observer)  # Bob is not ready
    refused(world, bob, m.StartGame(), "not_permitted", observer=observer)
    # Players may leave a finished room, and others take their seats.
    ok(world, bob, m.LeaveRoom())
    cy = player(world, "Cy", bot="random", seed=3)
    ok(world, cy, m.JoinRoom(room=1))
    assert last_room(cy).seat == 1 and last_room(cy).state == "finished"
    ok(world, cy, m.Ready(ready=True))

    request = ann.send(m.StartGame(first_player=1))
    world.run(lambda: ann.answer(request) is not None)  # the new game has only begun

    assert isinstance(ann.answer(request), m.Ok)
    assert last_room(ann).state == "playing"
    second = received(cy, m.GameStarted)[-1]
    assert second.game != first_game and second.first_player == 1
    world.run(lambda: len(world.records) == 2)
    assert world.records[1].record.game_id == second.game


# ------------------------------------------------------------ refusals


REFUSALS = [
    ("guest", m.StartGame(), "not_permitted"),
    ("guest", m.AddBot(strategy="random"), "not_permitted"),
    ("guest", m.RemoveBot(seat=2), "not_permitted"),
    ("host", m.StartGame(), "wrong_state"),
    ("host", m.RemoveBot(seat=1), "wrong_state"),
    ("host", m.RemoveBot(seat=4), "wrong_state"),
    ("host", m.AddBot(strategy="nosuch"), "invalid_field"),
    ("host", m.AddBot(strategy="random", seat=0), "room_full"),
    ("host", m.CreateRoom(settings=settings(3)), "wrong_state"),
    ("host", m.JoinRoom(room=1), "wrong_state"),
    ("host", m.Spectate(room=1), "wrong_state"),
    ("spectator", m.Ready(ready=True), "wrong_state"),
    ("spectator", m.StartGame(), "not_permitted"),
    ("spectator", m.AddBot(strategy="random"), "not_permitted"),
    ("spectator", m.SeedCommit(commitment=bytes(32)), "not_permitted"),
    ("guest", m.SeedCommit(commitment=bytes(32)), "wrong_state"),
    ("guest", m.KeepCard(turn=1), "wrong_state"),
    ("outsider", m.Ready(ready=True), "wrong_state"),
    ("outsider", m.JoinRoom(room=1, seat=2), "room_full"),
    ("outsider", m.JoinRoom(room=7), "no_such_room"),
    ("outsider", m.RemoveBot(seat=2), "wrong_state"),
    ("outsider", m.KeepCard(turn=1), "wrong_state"),
]


@pytest.mark.parametrize(
    ("who", "request_", "code"), REFUSALS, ids=[f"{w}-{r.TYPE}-{c}" for w, r, c in REFUSALS]
)
def test_a_refusal_carries_its_request_id_and_changes_nothing(
    who: str, request_: m.Message, code: str
) -> None:
    world = new_world("refusals")
    observer = player(world, "Olga")
    host, guest = room_of(world, 5, "Host", "Guest")
    ok(world, host, m.AddBot(strategy="random", seat=2))
    spectator, outsider = player(world, "Spec"), player(world, "Out")
    ok(world, spectator, m.Spectate(room=1))
    ok(world, guest, m.Chat(text="hi"))
    client = {"host": host, "guest": guest, "spectator": spectator, "outsider": outsider}[who]

    refused(world, client, request_, code, observer=observer)

"""My games at the terminal, at 80x24: [L] in a game steps out of it with
the seat kept, the lobby says (and rings) when a game waits, [m] lists the
games with whose turn it is, and Enter goes back to one; a game elsewhere
that waits is said on the game screen's status line. A real server core
carries every request (`Table`'s in-process world)."""

from __future__ import annotations

import random

from oriflamme.client.bots import Behaviour, Bot
from oriflamme.client.tui.choices import ENTER
from oriflamme.client.tui.controller import Command, Request
from oriflamme.client.tui.screens import Screens
from oriflamme.protocol import messages as m

from .helpers import Table, screen_text

DAYS = m.RoomSettings.for_players(3, turn_timer=2 * 86400, first_player="host")


def deliver(t: Table, screens: Screens, sent: list[Command]) -> None:
    """Carry the requests the keys gave (and those their answers gave), as
    the app's program does."""
    while sent:
        command = sent.pop(0)
        assert isinstance(command, Request), command
        answer = t.ask(command.message)
        assert answer is not None
        screens.answered(command.message, answer)


def a_game_waiting_for_ann(t: Table, name: str) -> None:
    t.ask(m.CreateRoom(settings=DAYS, name=name))
    for _ in range(2):
        t.ask(m.AddBot(strategy="random"))
    t.start()
    t.world.run(lambda: t.game is not None and t.game.my_turn)


def shown(screens: Screens) -> list[str]:
    return screen_text(screens.lines(80, 24)).splitlines()


def test_a_player_steps_out_is_told_when_the_game_waits_and_goes_back() -> None:
    t = Table(3, label="my games")
    sent: list[Command] = []
    screens = Screens(t.me.state, sent.append, server="here", name="Ann")
    a_game_waiting_for_ann(t, "friday")
    screens.changed(t.world.now)
    assert not screens.in_lobby
    screens.key("L")
    deliver(t, screens, sent)
    assert screens.in_lobby
    # The game waits for Ann's decision: the lobby says so, and rings once.
    assert t.me.state.games_waiting and screens.changed(t.world.now)
    assert not screens.changed(t.world.now)
    assert screens.my_turn  # (the window's title says so while a game waits)
    lines = shown(screens)
    assert any("Your turn in 1 game: [m]" in line for line in lines), lines
    assert any("[m] my games" in line for line in lines)
    screens.key("m")
    deliver(t, screens, sent)
    lines = shown(screens)
    assert any(line.startswith("─ My games (1)") for line in lines), lines
    [row] = [line for line in lines if "friday" in line]
    assert row.startswith(" ▸ friday") and "round 1 · your turn  ⏱ 2d 0h" in row, row
    screens.key(ENTER)
    deliver(t, screens, sent)
    screens.changed(t.world.now)
    assert not screens.in_lobby and screens.game.chooser is not None
    assert t.me.state.room is not None and t.me.state.room.seat == 0


def test_a_game_elsewhere_that_waits_is_said_on_the_game_screen() -> None:
    t = Table(3, label="my games, two")
    sent: list[Command] = []
    screens = Screens(t.me.state, sent.append, server="here", name="Ann")
    a_game_waiting_for_ann(t, "first")
    screens.changed(t.world.now)
    screens.key("L")
    deliver(t, screens, sent)
    a_game_waiting_for_ann(t, "second")
    screens.changed(t.world.now)
    assert not screens.in_lobby
    status = shown(screens)[-1]
    assert "Your turn in another game: L to the lobby, your seat here kept" in status, status


def test_going_from_game_to_game_rings_for_each_and_tells_each_log_once() -> None:
    """Two games whose turns count alike: the second's first decision rings
    though the first's rang at that turn; back to the first, its log is
    told from its start once, not after the other game's."""
    t = Table(3, label="my games, back and forth")
    sent: list[Command] = []
    screens = Screens(t.me.state, sent.append, server="here", name="Ann")
    a_game_waiting_for_ann(t, "first")
    assert screens.changed(t.world.now)  # (rings)
    first = t.me.state.game
    assert first is not None
    shown_first = list(screens.game.log.lines)
    screens.key("L")
    deliver(t, screens, sent)
    a_game_waiting_for_ann(t, "second")
    second = t.me.state.game
    assert second is not None and second.decision is not None and first.decision is not None
    assert second.decision.turn == first.decision.turn  # (the same turn, another game)
    assert screens.changed(t.world.now)  # (rings again: another game's decision)
    screens.key("L")
    deliver(t, screens, sent)
    screens.changed(t.world.now)
    screens.key("m")
    deliver(t, screens, sent)
    games = screens.lobby.games or ()
    screens.lobby.selected = [g.name for g in games].index("first")
    screens.key(ENTER)
    deliver(t, screens, sent)
    screens.changed(t.world.now)
    assert t.me.state.game is first and not screens.in_lobby
    lines = screens.game.log.lines
    assert sum("A new game" in line or "Back in the game" in line for line in lines) == 1, lines
    assert len(lines) <= len(shown_first) + 2, lines


def test_a_game_over_by_the_time_it_is_chosen_is_left_at_once_saying_so() -> None:
    """The list was shown; the game ended meanwhile (Ann's seat, away past
    its timer, was played to its end by the stand-in), its room finished
    with Bo still in it: Enter would take a free seat there. The lobby
    leaves it at once and says why."""
    t = Table(3, label="my games, over")
    bo = t.world.connect("Bo", behaviour=Behaviour(Bot("random", rng=random.Random(2))))
    sent: list[Command] = []
    screens = Screens(t.me.state, sent.append, server="here", name="Ann")
    t.ask(m.CreateRoom(settings=DAYS, name="friday"))
    room = t.me.state.room
    assert room is not None
    bo.send(m.JoinRoom(room=room.room))
    bo.send(m.Ready(ready=True))
    t.ask(m.AddBot(strategy="random"))
    t.start()
    t.world.run(lambda: t.game is not None and t.game.my_turn)
    screens.changed(t.world.now)
    screens.key("L")
    deliver(t, screens, sent)
    screens.key("m")
    deliver(t, screens, sent)
    t.world.advance(8 * 86400)
    assert t.world.records and t.world.gateway.lobby.rooms[room.room].state == "finished"
    screens.key(ENTER)
    deliver(t, screens, sent)  # (join_room: a free seat in the finished room)
    screens.changed(t.world.now)
    deliver(t, screens, sent)  # (the lobby leaves it)
    assert t.me.state.room is None and screens.in_lobby
    assert screens.lobby.status == "That game is over: it is in your finished games ([h])"


def test_a_game_that_ends_while_its_player_is_out_is_found_over_and_said() -> None:
    """Ann steps out; the game ends (her seat, away past its timer, played to
    its end by the stand-in): the lobby, told the games waiting changed,
    asks for her games, finds that one no longer listed, and says it ended;
    its mirror goes to `ended_away`, for the program to save its record."""
    t = Table(3, label="my games, ended away")
    sent: list[Command] = []
    screens = Screens(t.me.state, sent.append, server="here", name="Ann")
    a_game_waiting_for_ann(t, "friday")
    game = t.me.state.game
    assert game is not None
    screens.changed(t.world.now)
    screens.key("L")
    deliver(t, screens, sent)
    screens.changed(t.world.now)  # (the game waits for Ann: told, and rung)
    deliver(t, screens, sent)
    assert list(t.me.state.kept) == [game.game_id] and t.me.state.ended_away == []
    t.world.advance(8 * 86400)
    assert t.world.records
    screens.changed(t.world.now)  # (no game waits now: her games are asked for)
    deliver(t, screens, sent)
    assert t.me.state.kept == {} and t.me.state.ended_away == [game]
    screens.changed(t.world.now)
    assert screens.lobby.status.startswith("A game of yours ended while you were out")
    assert screens.lobby.games is None  # (the list was not shown: it is not now)

"""My games at the terminal, at 80x24: [L] in a game steps out of it with
the seat kept, the lobby says (and rings) when a game waits, [m] lists the
games with whose turn it is, and Enter goes back to one; a game elsewhere
that waits is said on the game screen's status line. A real server core
carries every request (`Table`'s in-process world)."""

from __future__ import annotations

import random

from oriflamme.client.bots import Behaviour, Bot
from oriflamme.client.state import ClientState
from oriflamme.client.tui.choices import ENTER
from oriflamme.client.tui.controller import Answer, Command, Request
from oriflamme.client.tui.screens import Screens
from oriflamme.launcher.inprocess import Client
from oriflamme.protocol import messages as m

from .helpers import Table, screen_text

DAYS = m.RoomSettings.for_players(3, turn_timer=2 * 86400, first_player="host")


class Ann:
    """Ann at the terminal client's screens (`Screens`, with the lobby) over
    an in-process world (`Table`): each key's requests, and those their
    answers give, are carried as the app's program carries them."""

    def __init__(self, label: str) -> None:
        self.t = Table(3, label=label)
        self.sent: list[Command] = []
        self.screens = Screens(self.t.me.state, self.sent.append, server="here", name="Ann")

    @property
    def state(self) -> ClientState:
        return self.t.me.state

    def deliver(self) -> None:
        while self.sent:
            command = self.sent.pop(0)
            assert isinstance(command, Request), command
            answer = self.t.ask(command.message)
            assert answer is not None
            self.screens.answered(command.message, answer)

    def press(self, key: str) -> None:
        self.screens.key(key)
        self.deliver()

    def changed(self) -> bool:
        """The mirror changed (as the app is told): whether it rings."""
        return self.screens.changed(self.t.world.now)

    def hosts_a_game_of_days(self, name: str, joining: Client | None = None) -> None:
        """Ann hosts `name`, a game of days of three seats (`joining`, a
        client, takes one; bots the others), until her first decision."""
        t = self.t
        t.ask(m.CreateRoom(settings=DAYS, name=name))
        room = t.me.state.room
        assert room is not None
        if joining is not None:
            joining.send(m.JoinRoom(room=room.room))
            joining.send(m.Ready(ready=True))
        for _ in range(1 if joining is not None else 2):
            t.ask(m.AddBot(strategy="random"))
        t.start()
        t.world.run(lambda: t.game is not None and t.game.my_turn)
        self.changed()

    def shown(self) -> list[str]:
        return screen_text(self.screens.lines(80, 24)).splitlines()


def test_a_player_steps_out_is_told_when_the_game_waits_and_goes_back() -> None:
    ann = Ann("my games")
    ann.hosts_a_game_of_days("friday")
    assert not ann.screens.in_lobby
    ann.press("L")
    assert ann.screens.in_lobby
    # The game waits for Ann's decision: the lobby says so (no bell: she
    # knows, she stepped out of it at her turn).
    assert ann.state.games_waiting and not ann.changed()
    assert ann.screens.my_turn  # (the window's title says so while a game waits)
    lines = ann.shown()
    assert any("Your turn in 1 game: [m]" in line for line in lines), lines
    assert any("[m] my games" in line for line in lines)
    ann.press("m")
    lines = ann.shown()
    assert any(line.startswith("─ My games (1)") for line in lines), lines
    [row] = [line for line in lines if "friday" in line]
    assert row.startswith(" ▸ friday") and "round 1 · your turn  ⏱ 2d 0h" in row, row
    ann.press(ENTER)
    ann.changed()
    assert not ann.screens.in_lobby and ann.screens.game.chooser is not None
    assert ann.state.room is not None and ann.state.room.seat == 0


def test_a_game_elsewhere_that_waits_is_said_on_the_game_screen() -> None:
    ann = Ann("my games, two")
    ann.hosts_a_game_of_days("first")
    ann.press("L")
    ann.hosts_a_game_of_days("second")
    assert not ann.screens.in_lobby
    status = ann.shown()[-1]
    assert "Your turn in another game: L to the lobby, your seat here kept" in status, status


def test_going_from_game_to_game_rings_for_each_and_tells_each_log_once() -> None:
    """Two games whose turns count alike: the second's first decision rings
    though the first's rang at that turn; back to the first, its log is
    told from its start once, not after the other game's."""
    ann = Ann("my games, back and forth")
    ann.hosts_a_game_of_days("first")
    first = ann.state.game
    assert first is not None and first.decision is not None
    assert (first.game_id, first.decision.turn) in ann.screens.game.turns_rung
    shown_first = list(ann.screens.game.log.lines)
    ann.press("L")
    ann.hosts_a_game_of_days("second")
    second = ann.state.game
    assert second is not None and second.decision is not None
    assert second.decision.turn == first.decision.turn  # (the same turn, another game)
    assert (second.game_id, second.decision.turn) in ann.screens.game.turns_rung  # (rung)
    ann.press("L")
    ann.changed()
    ann.press("m")
    games = ann.screens.lobby.games or ()
    ann.screens.lobby.selected = [g.name for g in games].index("first")
    ann.press(ENTER)
    ann.changed()
    assert ann.state.game is first and not ann.screens.in_lobby
    lines = ann.screens.game.log.lines
    assert sum("A new game" in line or "Back in the game" in line for line in lines) == 1, lines
    assert len(lines) <= len(shown_first) + 2, lines


def test_a_game_over_by_the_time_it_is_chosen_is_left_at_once_saying_so() -> None:
    """The list was shown; the game ended meanwhile (Ann's seat, away past
    its timer, was played to its end by the stand-in), its room finished
    with Bo still in it: Enter would take a free seat there. The lobby
    leaves it at once and says why."""
    ann = Ann("my games, over")
    bo = ann.t.world.connect("Bo", behaviour=Behaviour(Bot("random", rng=random.Random(2))))
    ann.hosts_a_game_of_days("friday", joining=bo)
    room = ann.state.room
    assert room is not None
    ann.press("L")
    ann.press("m")
    ann.t.world.advance(8 * 86400)
    assert ann.t.world.records
    assert ann.t.world.gateway.lobby.rooms[room.room].state == "finished"
    ann.press(ENTER)  # (join_room: a free seat in the finished room)
    ann.changed()
    ann.deliver()  # (the lobby leaves it)
    assert ann.state.room is None and ann.screens.in_lobby
    assert ann.screens.lobby.status == "That game is over: it is in your finished games ([h])"


def test_a_game_that_ends_while_its_player_is_out_is_found_over_and_said() -> None:
    """Ann steps out; the game ends (her seat, away past its timer, played to
    its end by the stand-in): the lobby, told the games waiting changed,
    asks for her games, finds that one no longer listed, and says it ended;
    its mirror goes to `ended_away`, for the program to save its record."""
    ann = Ann("my games, ended away")
    ann.hosts_a_game_of_days("friday")
    game = ann.state.game
    assert game is not None
    ann.press("L")
    ann.changed()  # (the game waits for Ann: told, and rung)
    ann.deliver()
    assert list(ann.state.kept) == [game.game_id] and ann.state.ended_away == []
    ann.t.world.advance(8 * 86400)
    assert ann.t.world.records
    ann.changed()  # (no game waits now: her games are asked for)
    ann.deliver()
    assert ann.state.kept == {} and ann.state.ended_away == [game]
    ann.changed()
    assert ann.screens.lobby.status.startswith("A game of yours ended while you were out")
    assert ann.screens.lobby.games is None  # (the list was not shown: it is not now)


def test_a_game_that_comes_to_its_player_while_out_rings_once() -> None:
    """Ann steps out while it is Bo's turn: when the game comes to her, the
    lobby rings, once."""
    ann = Ann("my games, rings")
    bo = ann.t.world.connect("Bo", behaviour=Behaviour(None))  # (no decision of his own)
    ann.hosts_a_game_of_days("friday", joining=bo)
    while (game := ann.state.game) is not None and game.my_turn:  # (Ann plays her turns)
        assert game.decision is not None
        ann.t.deliver(Answer(game.decision.turn, game.options()[0]))
        ann.changed()  # (as the app is told after each)
    bo_game = bo.state.game
    assert bo_game is not None and bo_game.my_turn  # (Bo, next, decides)
    ann.press("L")
    assert not ann.state.games_waiting and not ann.changed()
    while not ann.state.games_waiting:  # (Bo plays his turns, the bot its own)
        bo_game = bo.state.game
        assert bo_game is not None and bo_game.my_turn
        bo.send(bo_game.answer(bo_game.options()[0]))
        ann.t.world.settle()
    assert ann.changed()  # (it came to her: rings)
    assert not ann.changed()

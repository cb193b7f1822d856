"""`lobby.LobbyController`: the lobby screen drawn at 80x24; and what
`oriflamme play` says to come back to its table."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from oriflamme.client.bots import Behaviour
from oriflamme.client.state import ClientState
from oriflamme.client.tui.controller import Command, Request
from oriflamme.client.tui.lobby import _HELP, LobbyController
from oriflamme.launcher.cli import invoked_as
from oriflamme.launcher.play import PlayOptions
from oriflamme.protocol import messages as m

from .helpers import Table, screen_text


def test_the_lobby_help_fits_at_80x24_with_nothing_cut() -> None:
    sent: list[Command] = []
    lobby = LobbyController(ClientState(), sent.append, server="192.0.2.2:7601", name="Ann")
    lobby.key("?")
    shown = screen_text(lobby.lines(80, 24)).splitlines()
    for line in _HELP:
        assert len(" " + line) <= 80, line
        assert any(row.rstrip() == (" " + line).rstrip() for row in shown), line


def test_the_command_to_come_back_names_the_state_directory_given() -> None:
    assert PlayOptions().again() == "oriflamme play"
    options = PlayOptions(state_dir=Path("games/friday night"))
    assert options.again() == "oriflamme play --state-dir 'games/friday night'"


def test_the_command_to_come_back_is_the_one_that_ran_the_program(tmp_path: Path) -> None:
    """`make play` runs `.venv/bin/oriflamme`, which is not on the PATH: the
    line said at the end names that path, and plain `oriflamme` only where the
    PATH finds this same program."""
    ours, other = tmp_path / "venv" / "bin", tmp_path / "elsewhere"
    for folder in (ours, other):
        folder.mkdir(parents=True)
        (folder / "oriflamme").write_text("#!/bin/sh\n")
        (folder / "oriflamme").chmod(0o755)
    script = str(ours / "oriflamme")
    assert invoked_as(script, path=str(ours)) == ("oriflamme",)
    assert invoked_as(script, path=str(other)) == (script,)
    assert invoked_as(".venv/bin/oriflamme", path="") == (".venv/bin/oriflamme",)
    assert invoked_as("launcher/cli.py", path=str(ours)) == (
        sys.executable,
        "-m",
        "oriflamme.launcher.cli",
    )
    options = PlayOptions(program=(".venv/bin/oriflamme",))
    assert options.again() == ".venv/bin/oriflamme play"


def lobby_in_a_room(
    players: int = 3, bots: int = 1
) -> tuple[LobbyController, list[Command], Table]:
    """Ann hosts a room of `players` seats with `bots` bots; nobody ready."""
    t = Table(players, label="lobby")
    t.ask(m.CreateRoom(settings=m.RoomSettings.for_players(players), name="friday"))
    for _ in range(bots):
        t.ask(m.AddBot(strategy="random"))
    sent: list[Command] = []
    return LobbyController(t.me.state, sent.append, server="here", name="Ann"), sent, t


def test_starting_when_you_are_not_ready_says_so_and_the_key() -> None:
    lobby, sent, t = lobby_in_a_room(players=2)
    lobby.key("g")
    assert sent == []  # the server would refuse it
    assert lobby.status == "You are not ready: press r, then g to start"
    assert "Ann" not in lobby.status
    # The server's refusal, when the room changed meanwhile, in the same words.
    lobby.answered(
        m.StartGame(),
        m.Error(code="wrong_state", message="not everyone is ready: Ann", fatal=False),
    )
    assert lobby.status == "Not started: you are not ready: press r, then g to start"
    t.ask(m.Ready(ready=True))
    lobby.key("g")
    assert sent == [Request(m.StartGame())]


def test_starting_with_others_not_ready_names_them_not_you() -> None:
    lobby, sent, t = lobby_in_a_room(players=3)
    bo = t.world.connect("Bo", behaviour=Behaviour(None))
    bo.send(m.JoinRoom(room=t.me.state.room.room))
    t.world.settle()
    lobby.key("g")
    assert lobby.status == "You are not ready (press r), nor Bo"
    t.ask(m.Ready(ready=True))
    lobby.key("g")
    assert lobby.status == "Not everyone is ready: Bo (waiting for them)"
    assert sent == []


def test_starting_with_an_open_seat_says_what_to_do() -> None:
    lobby, sent, t = lobby_in_a_room(players=3, bots=0)
    t.ask(m.Ready(ready=True))
    lobby.key("g")
    assert lobby.status == "Every seat must be taken first: [b] adds a bot" and sent == []


def chat_panel(lobby: LobbyController) -> list[str]:
    """The chat panel's lines (right of the room panel), without blanks."""
    shown = screen_text(lobby.lines(80, 24)).splitlines()
    return [
        line.split("│", 1)[1].strip()
        for line in shown
        if "│" in line and line.split("│", 1)[1].strip()
    ]


def test_room_chat_is_marked_once_you_have_left_the_room() -> None:
    lobby, _, t = lobby_in_a_room(players=3)
    bo = t.world.connect("Bo", behaviour=Behaviour(None))
    bo.send(m.JoinRoom(room=t.me.state.room.room))
    bo.send(m.Chat(text="hi room"))
    t.world.settle()
    assert "Bo: hi room" in chat_panel(lobby)
    assert "Chat · the room" in screen_text(lobby.lines(80, 24))
    t.ask(m.LeaveRoom())
    cy = t.world.connect("Cy", behaviour=Behaviour(None))
    cy.send(m.Chat(text="hello lobby"))
    t.world.settle()
    assert t.me.state.room is None
    panel = chat_panel(lobby)
    assert "[friday] Bo: hi room" in panel  # said in the room left: marked
    assert "Cy: hello lobby" in panel  # said here: as it is
    assert "Bo: hi room" not in panel
    assert "Chat · the lobby" in screen_text(lobby.lines(80, 24))


def test_the_room_list_is_asked_for_again_once_we_made_joined_or_left_a_room() -> None:
    """Issue 25: a room just created showed "Rooms (0) No room yet" until
    the next refresh."""
    sent: list[Command] = []
    lobby = LobbyController(ClientState(), sent.append, server="192.0.2.2:7601", name="Ann")
    made = m.CreateRoom(settings=m.RoomSettings.for_players(3), name="friday")
    lobby.answered(made, m.Ok(id=1))
    assert sent == [Request(m.ListRooms())]
    lobby.answered(m.LeaveRoom(), m.Ok(id=2))
    assert sent[-1] == Request(m.ListRooms()) and len(sent) == 2
    lobby.answered(made, m.Error(code="too_many_rooms", message="full", fatal=False, id=3))
    assert len(sent) == 2  # refused: nothing changed


def test_a_rated_players_rating_comes_first_in_their_seats_line() -> None:
    lobby, _, t = lobby_in_a_room(players=2, bots=0)
    room = t.me.state.room
    assert room is not None
    seats = (
        replace(room.seats[0], rating=1234),
        m.RoomSeat(seat=1, name="Bo", player=99, ready=True, connected=False, rating=-87),
    )
    t.me.state.room = replace(room, seats=seats)
    shown = screen_text(lobby.lines(80, 24)).splitlines()
    assert any("1 You            12.3, not ready, host" in line for line in shown), shown
    assert any("2 Bo             -0.9, ready, away" in line for line in shown), shown
    # Another without a key is marked (anyone could type that name); with a
    # key, not yet rated, is not.
    for key, said in [(None, "ready, no key"), (bytes(32), "ready")]:
        bo = m.RoomSeat(seat=1, name="Bo", player=99, ready=True, connected=True, key=key)
        t.me.state.room = replace(room, seats=(room.seats[0], bo))
        shown = screen_text(lobby.lines(80, 24)).splitlines()
        assert any(line.startswith(f"   2 Bo             {said} ") for line in shown), shown


def test_a_game_of_days_is_offered_and_its_clock_shows_days() -> None:
    from oriflamme.client.tui.screen import clock
    from oriflamme.client.tui.text import timer_words

    assert [timer_words(t) for t in (30, 300, 3600, 86400, 172800)] == [
        "30 s",
        "5 min",
        "1 h",
        "1 day",
        "2 days",
    ]
    assert (clock(75), clock(2 * 3600 + 5 * 60), clock(2 * 86400 + 5 * 3600)) == (
        "1:15",
        "2h 05m",
        "2d 5h",
    )


def test_a_long_name_and_a_private_room_s_invite_code_fit_at_80_columns() -> None:
    """Found by a review: a long player name ran into "? help", and a long
    room name cut its invite code short."""
    lobby, _, t = lobby_in_a_room(players=2, bots=0)
    room = t.me.state.room
    assert room is not None
    t.me.state.room = replace(room, name="a very long room name for friday", invite="KQ7M-P2XD")
    lobby.server, lobby.name = "oriflamme.example.org:7601 (found on your network)", "W" * 32
    shown = screen_text(lobby.lines(80, 24)).splitlines()
    assert shown[0].endswith("? help") and len(shown[0]) == 80, shown[0]
    assert any("invite KQ7M-P2XD" in line for line in shown), shown

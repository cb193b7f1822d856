"""`lobby.LobbyController`: the lobby screen drawn at 80x24; and what
`oriflamme play` says to come back to its table."""

from __future__ import annotations

from pathlib import Path

from oriflamme.client.state import ClientState
from oriflamme.client.tui.controller import Command
from oriflamme.client.tui.lobby import _HELP, LobbyController
from oriflamme.client.tui.play import PlayOptions

from .helpers import screen_text


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

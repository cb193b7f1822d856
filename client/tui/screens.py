"""The lobby or the game: whichever screen the player is at.

`Screens` holds one `LobbyController` and one `GameController` over the same
session mirror and shows the game while there is one to show (being played,
or just over), the lobby otherwise; after [a] at the end of a game, the
room's lobby screen shows until the next game starts (someone must start it).
For `oriflamme play` there is no lobby: the game screen shows from the start.
"""

from __future__ import annotations

from collections.abc import Callable

from oriflamme.protocol import messages as m

from ..state import ClientState
from .controller import Command, GameController, refused_text
from .lobby import LobbyController
from .screen import Line


class Screens:
    """See the module docstring."""

    def __init__(
        self,
        state: ClientState,
        send: Callable[[Command], None],
        *,
        server: str = "",
        name: str = "",
        lobby: bool = True,
    ) -> None:
        self.game = GameController(state, self._send, leave_key=lobby)
        self.lobby = LobbyController(state, self._send, server=server, name=name)
        self.with_lobby = lobby
        self.send = send

    def _send(self, command: Command) -> None:
        # Through `self.send` as it is when a key is pressed: the app's
        # bridge sets it once it is running, after the controllers are made.
        self.send(command)

    @property
    def state(self) -> ClientState:
        return self.game.state

    @state.setter
    def state(self, state: ClientState) -> None:
        self.game.state = state
        self.lobby.state = state

    @property
    def banner(self) -> str:
        return self.game.banner

    @banner.setter
    def banner(self, text: str) -> None:
        self.game.banner = text
        self.lobby.banner = text

    @property
    def current(self) -> GameController | LobbyController:
        if not self.with_lobby:
            return self.game
        game = self.state.game
        if game is None or self.game.again_for == game.game_id:
            return self.lobby
        return self.game

    @property
    def in_lobby(self) -> bool:
        return self.current is self.lobby

    @property
    def my_turn(self) -> bool:
        """A decision of ours waits here, or (in the lobby) a game of ours
        elsewhere: the window's title says "your turn" while it does."""
        return self.game.my_turn or (self.in_lobby and bool(self.state.games_waiting))

    def changed(self, now: float) -> bool:
        """The mirror changed: True when something of ours newly waits for
        us (a decision here, or a game elsewhere: the app rings)."""
        ours = self.game.changed(now)
        return self.lobby.changed() or ours

    def tick(self, now: float) -> bool:
        return self.game.tick(now)

    def key(self, key: str) -> None:
        self.current.key(key)

    def lines(self, width: int, height: int) -> list[Line]:
        return self.current.lines(width, height)

    def answered(self, request: m.Message, answer: m.Message) -> None:
        self.lobby.answered(request, answer)
        if isinstance(answer, m.Error) and not self.in_lobby:
            self.game.status = refused_text(answer.code, answer.message)

"""Who plays the server's own bots: the `BotHost` the shell is given.

A room asks for a server bot (`add_bot`, or a player's `hand_over`); the
core then says `StartBot`, and later `StopBot` and `GameOver`. The server
knows no bot: it imports nothing of the client. Whoever starts it gives it
a `BotHost` (`oriflamme serve` and `oriflamme play` give the launcher's
house bots, `oriflamme.launcher.house_bots`), and the shell (`net`) runs
each bot the core asks for in a task of its own, with a way to connect to
it (an in-memory stream, served as any connection but counted by no abuse
limit), and cancels that task for `StopBot` or when the server stops.

With no host (``bots=None``, which every caller must say: `NetServer` and
`app.serve` have no default for it), a room that asks for a bot gets its
seat all the same, and the server logs a warning for each: nobody plays the
seat, as if its player were away, and a game with it is cancelled before
it begins (nobody commits to the seat's seed). Bots are not done without by
accident: a caller that wants them gives a host, and a test that forgot one
fails (no game is played) and says why in its log, rather than passing on
moves the server made for an absent seat.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Protocol

import trio

from oriflamme.server.core import GameOver, StartBot

# Opens a new connection to the server (a bot connects again after a lost one).
Connect = Callable[[], Awaitable[trio.abc.Stream]]


class BotHost(Protocol):
    """What the server needs of whoever plays its bots."""

    async def play(self, bot: StartBot, connect: Connect) -> None:
        """Play `bot`'s seat as a client of the server, over the connections
        `connect` opens, until cancelled (`StopBot`, or the server stops).
        A bot that fails says so in the log and returns: it must never take
        the server down."""
        ...

    async def game_over(self, over: GameOver) -> None:
        """`over`'s game is over: what its bots kept for it (their seats'
        secrets) is of no more use."""
        ...

    def serving(self) -> AbstractAsyncContextManager[object]:
        """Entered around the server's run (`app.serve`), signals and all:
        what the bots need while it serves (the launcher's: the worker
        processes its searching bots think in)."""
        ...

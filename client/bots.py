"""Bots: a strategy that plays a seat from what that seat may know, and nothing else.

A bot reads only its session's `GameMirror`: the server's views with its
own seat's secrets overlaid. It builds an engine game of that position
(every other seat's hidden cards stay card backs) and asks one of the
engine's players for a move. It cannot peek, even by accident: nothing it
is given holds another seat's hidden card.

>>> sorted(STRATEGIES)
['heuristic', 'random']
"""

from __future__ import annotations

import random

from oriflamme.engine import Action, HeuristicPlayer, Player, PositionError, RandomPlayer

from .state import GameMirror

STRATEGIES: dict[str, type[RandomPlayer]] = {
    "random": RandomPlayer,
    "heuristic": HeuristicPlayer,
}


class Bot:
    """Chooses our answer to the pending decision with `strategy`."""

    def __init__(self, strategy: str, *, rng: random.Random | None = None) -> None:
        if strategy not in STRATEGIES:
            raise ValueError(f"no bot strategy {strategy!r}: {', '.join(sorted(STRATEGIES))}")
        self.strategy = strategy
        self._rng = rng if rng is not None else random.Random()
        self._player: Player = STRATEGIES[strategy](rng=self._rng)

    def choose(self, game: GameMirror) -> Action:
        """One of `game.options()`. The engine's player decides on the position
        as this seat sees it; should that position not load, or the player's
        choice not be among our options, the bot picks among them at random."""
        options = game.options()
        if not options:
            raise ValueError("no decision of ours is pending")
        try:
            action = self._player.choose(game.engine_game())
        except (PositionError, ValueError, AssertionError):
            action = None
        if action in options:
            assert action is not None
            return action
        return options[int(self._rng.random() * len(options))]

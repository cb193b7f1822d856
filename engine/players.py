"""Built-in players: uniformly random, and a greedy heuristic.

A player is anything with ``choose(game) -> Action`` for the pending decision.
"""

from __future__ import annotations

import random
from typing import Protocol

from .actions import Action
from .game import Game


class Player(Protocol):
    def choose(self, game: Game) -> Action: ...


class RandomPlayer:
    """Picks uniformly among the legal options."""

    name = "random"

    def __init__(self, seed: int | None = None, rng: random.Random | None = None) -> None:
        self.rng = rng or random.Random(seed)

    def choose(self, game: Game) -> Action:
        options = game.legal_actions()
        return options[int(self.rng.random() * len(options))]


class HeuristicPlayer(RandomPlayer):
    """Placeholder, replaced below."""

    name = "heuristic"

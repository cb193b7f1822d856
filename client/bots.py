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
from typing import Protocol

from oriflamme.engine import Action, HeuristicPlayer, Player, PositionError, RandomPlayer
from oriflamme.protocol import messages as m

from .state import ClientState, GameMirror

STRATEGIES: dict[str, type[RandomPlayer]] = {
    "random": RandomPlayer,
    "heuristic": HeuristicPlayer,
}


class Bot:
    """Chooses our answer to the pending decision with `strategy`."""

    def __init__(
        self, strategy: str, *, rng: random.Random | None = None, seed: str | None = None
    ) -> None:
        """`seed`: a reproducible bot. Each decision's randomness comes from
        the seed and the decision's number, so the same game gives the same
        moves, and a decision answered again (after a reconnection, or a
        server's restart) is answered the same way."""
        if strategy not in STRATEGIES:
            raise ValueError(f"no bot strategy {strategy!r}: {', '.join(sorted(STRATEGIES))}")
        self.strategy = strategy
        self.seed = seed
        self._rng = rng if rng is not None else random.Random()
        self._player: Player = STRATEGIES[strategy](rng=self._rng)

    def choose(self, game: GameMirror) -> Action:
        """One of `game.options()`. The engine's player decides on the position
        as this seat sees it; should that position not load, or the player's
        choice not be among our options, the bot picks among them at random."""
        options = game.options()
        if not options:
            raise ValueError("no decision of ours is pending")
        if self.seed is not None and game.decision is not None:
            self._rng.seed(f"{self.seed} {game.decision.turn}")
        try:
            action = self._player.choose(game.engine_game())
        except (PositionError, ValueError, AssertionError):
            action = None
        if action in options:
            assert action is not None
            return action
        return options[int(self._rng.random() * len(options))]


class Seated(Protocol):
    """A client that plays: its mirror, and the last turn it answered."""

    answered_turn: int | None

    @property
    def state(self) -> ClientState: ...


class Behaviour:
    """How a client plays by itself: every automatic answer (seed commitment,
    openings, final reveal) and, with a `Bot`, its decisions. Subclass it to
    play otherwise (tests, sample records)."""

    def __init__(self, bot: Bot | None) -> None:
        self.bot = bot

    def messages(self, client: Seated) -> list[m.Message]:
        """What `client` sends now, given what it knows."""
        game = client.state.game
        if game is None:
            return []
        out = list(game.automatic())
        decision = game.decision
        if (
            self.bot is not None
            and game.my_turn
            and decision is not None
            and decision.turn != client.answered_turn
        ):
            client.answered_turn = decision.turn
            out.append(game.answer(self.bot.choose(game)))
        return out

"""Built-in players: uniformly random, and a greedy rule-based heuristic.

A player is anything with ``choose(game) -> Action`` for the pending decision.
Both built-ins look only at what the deciding seat may know (its own cards and
the public table), so they play the same whether the engine knows every
identity (self-play) or only that seat's (a bot's own game view).

>>> from oriflamme.engine import new_game
>>> game = new_game(3, seed=5)
>>> players = [HeuristicPlayer(seed=s) for s in range(3)]
>>> while not game.over:
...     decision = game.decision
...     _ = game.apply(players[decision.seat].choose(game))
>>> game.round
6
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from .actions import FIRST, KEEP, LAST, REVEAL, Action, Open, Place, Target
from .cards import Kind
from .game import (
    COPY,
    DIRECTION,
    ELIMINATE,
    MOVE_CARD,
    MOVE_TO,
    OPEN,
    PLACE,
    REVEAL_OR_KEEP,
    ROUNDS,
    STEAL,
    Game,
    InPlay,
)


class Player(Protocol):
    name: str

    def choose(self, game: Game) -> Action: ...


class RandomPlayer:
    """Picks uniformly among the legal options."""

    name = "random"

    def __init__(self, seed: int | None = None, rng: random.Random | None = None) -> None:
        self.rng = rng or random.Random(seed)

    @property
    def rng(self) -> random.Random:
        return self._rng

    @rng.setter
    def rng(self, rng: random.Random) -> None:
        self._rng = rng
        self._random = rng.random  # bound once: choose is on the self-play hot path

    def choose(self, game: Game) -> Action:
        options = game.legal_actions()
        return options[int(self._random() * len(options))]


# How much a card threatens its neighbours or scores each round once face up:
# the heuristic prefers to eliminate these.
_THREAT = {
    Kind.SOLDIER: 3.0,
    Kind.ARCHER: 3.0,
    Kind.LORD: 2.5,
    Kind.HEIR: 2.5,
    Kind.SPY: 2.0,
    Kind.SHAPESHIFTER: 2.0,
}
# Order in which to play cards from hand when nothing better is found: cards
# that grow with time first, weak finishers last.
_PLAY_EARLY = {
    Kind.CONSPIRACY: 5.0,
    Kind.HEIR: 4.0,
    Kind.LORD: 3.5,
    Kind.AMBUSH: 3.0,
    Kind.SOLDIER: 2.5,
    Kind.ARCHER: 2.0,
    Kind.SPY: 2.0,
    Kind.ASSASSINATION: 1.5,
    Kind.SHAPESHIFTER: 1.0,
    Kind.ROYAL_DECREE: 0.5,
}


class HeuristicPlayer(RandomPlayer):
    """Greedy rules of thumb: hit the leader's face-up threats, keep an
    Ambush hidden as bait, let a Conspiracy grow, reveal Heirs and Lords when
    they pay. Random among equals."""

    name = "heuristic"

    def choose(self, game: Game) -> Action:
        decision = game.decision
        assert decision is not None, "the game is over"
        seat, step, options = decision.seat, decision.kind, decision.options
        if len(options) == 1 or step in (DIRECTION, MOVE_TO):
            return options[int(self._random() * len(options))]
        if step == PLACE:
            return self._best(options, lambda a: self._place_value(game, seat, a))
        if step == REVEAL_OR_KEEP:
            return REVEAL if self._should_reveal(game, seat) else KEEP
        if step in (ELIMINATE, STEAL, COPY, MOVE_CARD):
            return self._best(options, lambda a: self._target_value(game, seat, step, a))
        if step == OPEN:
            # Only an engine that lacks this seat's own identity asks; any
            # candidate is as good as another for the player.
            assert isinstance(options[0], Open)
        return options[int(self._random() * len(options))]

    def _best(self, options: Sequence[Action], value: Callable[[Any], float]) -> Action:
        scored = [(value(a) + self._random() * 0.01, i) for i, a in enumerate(options)]
        return options[max(scored)[1]]

    # ------------------------------------------------------------- knowledge

    @staticmethod
    def _known_kind(card: InPlay, seat: int) -> Kind | None:
        """The card's identity if `seat` may know it."""
        return card.kind if (card.face_up or card.owner == seat) else None

    @staticmethod
    def _leader_bonus(game: Game, seat: int, owner: int) -> float:
        """Hurting a rival counts more the better that rival is doing."""
        if owner == seat:
            return 0.0
        return 0.2 * game.scores[owner] / (1 + max(game.scores))

    # ------------------------------------------------------------- decisions

    def _should_reveal(self, game: Game, seat: int) -> bool:
        actor = game.cursor.actor
        assert actor is not None
        kind = actor.kind
        tokens = actor.tokens
        last_round = game.round >= ROUNDS
        if kind is None:  # our own identity unknown to this engine: reveal when rich
            return tokens >= 2
        if kind == Kind.CONSPIRACY:
            return tokens >= 3 or last_round
        if kind == Kind.AMBUSH:
            return last_round
        if kind == Kind.HEIR:
            return not any(
                s[-1].face_up and s[-1].kind == Kind.HEIR and s[-1] is not actor for s in game.queue
            )
        if kind in (Kind.LORD, Kind.ASSASSINATION):
            return True
        if kind in (Kind.SOLDIER, Kind.ARCHER, Kind.SPY):
            targets = game.ability_choices(kind)
            return any(t.owner != seat for t in targets) or tokens >= 3
        if kind == Kind.SHAPESHIFTER:
            return bool(game.ability_choices(Kind.SHAPESHIFTER)) or tokens >= 3
        return tokens >= 1 or last_round

    def _target_value(self, game: Game, seat: int, step: str, action: Target) -> float:
        found = game.find(action.pid)
        assert found is not None
        card = found[1]
        mine = card.owner == seat
        kind = self._known_kind(card, seat)
        bonus = self._leader_bonus(game, seat, card.owner)
        if step == STEAL:
            return (-1.0 if mine else game.scores[card.owner]) + bonus
        if step == COPY:
            assert kind is not None
            return _THREAT.get(kind, 0.0)
        if step == MOVE_CARD:
            # Move a rival's face-up threat (the move may skip it this round).
            return (-2.0 if mine else _THREAT.get(kind, 0.5) if kind else 0.5) + bonus
        # Eliminate: a rival's known threat first, then a rival's hidden card
        # (tokens denied, but it may be an Ambush), our own cards last.
        if mine:
            return -5.0 + (1.0 if kind == Kind.AMBUSH else 0.0)
        if kind is None:
            return 1.0 + 0.3 * card.tokens + bonus
        return 1.5 + _THREAT.get(kind, 0.0) + bonus

    def _place_value(self, game: Game, seat: int, action: Place) -> float:
        kind = action.card.kind
        value = _PLAY_EARLY.get(kind, 1.0) if kind is not None else 1.0
        at = action.at
        q = game.queue
        if at in (FIRST, LAST):
            end = (q[0][-1] if at == FIRST else q[-1][-1]) if q else None
            neighbour_mine = end is not None and end.owner == seat
            if kind in (Kind.SOLDIER, Kind.SPY):
                value += 1.0 if end is not None and not neighbour_mine else -0.5
            elif kind == Kind.LORD:
                value += 1.0 if neighbour_mine else 0.0
            elif kind == Kind.AMBUSH:
                value += 0.5  # ends are where Archers shoot
            elif kind == Kind.CONSPIRACY:
                value -= 0.3  # ends are exposed to Archers
            return value
        # Covering one of our cards: worth it to protect a hidden Conspiracy
        # or a face-up card from a threat, otherwise it wastes the covered card.
        assert isinstance(at, int)
        found = game.find(at)
        assert found is not None
        covered = found[1]
        if covered.kind == Kind.CONSPIRACY and not covered.face_up:
            return value - 2.0
        if kind == Kind.ASSASSINATION and covered.face_up:
            return value + 0.5  # act twice in a row
        return value - 1.5

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
    they pay. Random among equals.

    In the last round nothing is kept for later: tokens left on a card count
    for nobody, and no card acts after it. A face-down card is revealed
    whenever that scores (its tokens, which only a reveal collects, and what
    its ability gains now) and kept only when revealing gains nothing; an
    elimination that must hit our own card takes one that has acted already."""

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
        if game.round >= ROUNDS:
            return self._reveal_gain(game, seat, actor) > 0
        if kind is None:  # our own identity unknown to this engine: reveal when rich
            return tokens >= 2
        if kind == Kind.CONSPIRACY:
            return tokens >= 3
        if kind == Kind.AMBUSH:
            return False
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
        return tokens >= 1

    # ------------------------------------------------------- the last round

    def _reveal_gain(self, game: Game, seat: int, actor: InPlay) -> float:
        """Last round: the points revealing `actor` (ours, face down, acting
        now) gains over keeping it. Keeping gains nothing: the token it adds
        counts for nobody at the end. Revealing pays the tokens on it (twice
        for a Conspiracy, none for an Ambush), then its ability applies."""
        kind = actor.kind
        tokens = actor.tokens
        if kind is None:  # our own identity unknown to this engine: its tokens
            return tokens
        if kind == Kind.AMBUSH:
            return 1.0  # revealed, it scores 1; kept, only a rival's blow would pay
        paid = 2 * tokens if kind == Kind.CONSPIRACY else tokens
        return paid + self._ability_gain(game, seat, kind, actor)

    def _ability_gain(self, game: Game, seat: int, ability: Kind, actor: InPlay) -> float:
        """Last round: the points `actor`, acting now, gains us by applying
        `ability` (its own, or the one a Shapeshifter copies), less what it
        costs us later in this round. A little more for harm to a rival."""
        if ability == Kind.LORD:
            index = game.cursor.index
            q = game.queue
            return 1.0 + sum(
                1
                for i in (index - 1, index + 1)
                if 0 <= i < len(q) and q[i][-1].family == actor.family
            )
        if ability == Kind.HEIR:
            return self._heir_gain(game, seat, actor)
        if ability == Kind.SPY:
            return max(
                (
                    1.0
                    for t in game.ability_choices(Kind.SPY)
                    if t.owner != seat and game.scores[t.owner] > 0
                ),
                default=0.0,
            )
        if ability in (Kind.SOLDIER, Kind.ARCHER, Kind.ASSASSINATION):
            # Eliminating scores 1, whoever's card it hits; hitting our own
            # card forgoes what that card would still do this round.
            return max(
                (
                    1.0 - (self._still_to_score(game, t) if t.owner == seat else 0.0)
                    for t in game.ability_choices(ability)
                ),
                default=0.0,
            )
        if ability == Kind.SHAPESHIFTER:
            return max(
                (
                    self._ability_gain(game, seat, t.kind, actor)
                    for t in game.ability_choices(Kind.SHAPESHIFTER)
                    if t.kind is not None
                ),
                default=0.0,
            )
        return 0.0  # a Royal Decree moves a card; a Conspiracy paid when revealed

    def _heir_gain(self, game: Game, seat: int, actor: InPlay) -> float:
        """An Heir scores 2 unless another face-up top card bears its name; face
        up, it stops a later lone face-up Heir from scoring this round."""
        name = actor.kind
        others = [
            (i, s[-1])
            for i, s in enumerate(game.queue)
            if s[-1].face_up and s[-1].kind == name and s[-1] is not actor
        ]
        if not others:
            return 2.0
        if len(others) == 1 and others[0][0] > game.cursor.index:
            # That one would score when it acts; revealed, ours stops it.
            return -2.0 if others[0][1].owner == seat else 0.5
        return 0.0

    @staticmethod
    def _still_to_score(game: Game, card: InPlay) -> float:
        """Last round: about what `card` may still score this round, if it has
        not acted yet (it lies after the slot acting now)."""
        found = game.find(card.pid)
        if found is None or found[0] <= game.cursor.index:
            return 0.0
        if card.face_up:
            return 2.0 if card.kind in (Kind.HEIR, Kind.LORD) else 1.0
        if card.kind == Kind.CONSPIRACY:
            return 2.0 * card.tokens
        if card.kind == Kind.AMBUSH:
            return 1.0
        return card.tokens + 1.0

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
        # (tokens denied, but it may be an Ambush), our own cards last: the
        # acting Intrigue itself (discarded anyway) first, and in the last
        # round one that has acted already.
        if mine:
            value = -5.0 + (1.0 if kind == Kind.AMBUSH else 0.0)
            if (
                card is game.cursor.actor
                and card.kind is not None
                and card.kind >= Kind.ASSASSINATION
            ):
                value += 2.0
            if game.round >= ROUNDS:
                value -= self._still_to_score(game, card)
            return value
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

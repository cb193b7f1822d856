"""A bot that searches: information-set Monte Carlo tree search (ISMCTS).

How this works
--------------
`ISMCTSPlayer.choose(game)` is given the position as its seat sees it (a
`GameMirror.engine_game()`, or `engine.from_data(engine.view(game, seat))`):
every card it may not know is a card back. Given more (self-play hands
players the whole game), it first takes the view of the deciding seat
(`engine.view`), so it cannot peek even by accident.

For each iteration of the search it *determinizes* that position: the cards
it cannot see get identities drawn at random among those still possible.
A family has ten cards, each in one place; the possible identities of a
family's hidden cards are the kinds not seen anywhere else (in a hand, set
aside, in front of a player, face up in the queue, or known to us as our
own). Hidden are: other seats' hands, set-aside cards and face-down cards in
the queue, and every draw pile (2-player variant), our own included: a draw
pile is face down, so even its owner does not know its order (ruling 19,
21). One inference is made: a face-down card its owner kept (it holds
tokens) is likelier to be what gains by waiting, an Ambush or a Conspiracy
(`KEPT_PRIOR`). Each determinization is a complete game the engine plays to
the end.

The search is single-observer ISMCTS: one tree, seen from our seat, shared
by all determinizations. A node is what we have seen happen since the
decision: our own actions, and the other seats' actions as we would see
them (a placement names the family and where it goes, not the card). At
our decisions the tree picks among the actions available in this
determinization with UCB1, counting for each child how often it was
available (availability-aware UCB, Cowling, Powley & Whitehouse 2012). At
another seat's decision that seat plays as the built-in heuristic would,
with a little randomness (our model of the others); its observable action
selects the child. One new node is added per iteration; from there a
rollout plays every seat with the same noisy heuristic to the end of the
game. The result, from our side, is a share of the win (1/k for a win
shared by k) plus a little for the score margin over the best other seat.
The move played is the root's most visited action.

The budget of a decision is a number of iterations, or seconds read from a
`clock` the caller gives (this module reads none, so that it stays free of
I/O: the trio shells give it `time.perf_counter`). A decision with one legal
option is answered at once.

>>> from oriflamme.engine import new_game, view, from_data
>>> game = new_game(3, seed=2)
>>> bot = ISMCTSPlayer(seed=1, iterations=20)
>>> action = bot.choose(from_data(view(game, 0)))
>>> action in game.legal_actions()
True
"""

from __future__ import annotations

import copy
import math
import random
from collections.abc import Callable, Hashable

from oriflamme.engine import (
    CARDS,
    KINDS,
    Action,
    Game,
    HeuristicPlayer,
    Kind,
    Place,
    from_data,
    view,
)

DEFAULT_SECONDS = 0.2
# Without a clock a time budget cannot be kept: this many iterations instead
# (about what 200 ms buys on one core of a 2024 machine).
DEFAULT_ITERATIONS = 200
EXPLORATION = 0.7
EPSILON = 0.1  # how often a simulated player plays at random rather than by the heuristic
MARGIN_WEIGHT = 0.2  # share of the result that comes from the score margin
MARGIN_SCALE = 4.0


class _Node:
    """What we have seen happen, and how it went from there."""

    __slots__ = ("children", "visits", "total", "avail")

    def __init__(self) -> None:
        self.children: dict[Hashable, _Node] = {}
        self.visits = 0
        self.total = 0.0
        self.avail = 1


def _copy(game: Game) -> Game:
    """An independent copy of `game`: the engine's own copy when it has one."""
    own = getattr(game, "copy", None)
    if own is not None:
        result: Game = own()
        return result
    return copy.deepcopy(game)


# How much likelier a face-down card that its owner kept (it has tokens) is
# to be each kind, against one never kept: players keep what gains by
# waiting (an Ambush as bait, a Conspiracy growing) and reveal what pays now.
KEPT_PRIOR: dict[Kind, float] = {
    Kind.AMBUSH: 4.0,
    Kind.CONSPIRACY: 4.0,
    Kind.LORD: 0.4,
    Kind.ASSASSINATION: 0.5,
}


class Determinizer:
    """Fills the cards `seat` cannot see with identities still possible.

    `sample(rng)` gives a copy of `game` with every hidden card known, drawn
    among the identities consistent with what `seat` sees: uniformly, but for
    other seats' face-down cards that were kept (they hold tokens), which
    are drawn first, each with the weights of `prior` (`KEPT_PRIOR`; None:
    uniform). Raises ValueError when the position does not account for every
    card of a family (a hand-built position may not).
    """

    def __init__(self, game: Game, seat: int, prior: dict[Kind, float] | None = KEPT_PRIOR) -> None:
        self.game = game
        self.seat = seat
        families = {f for fs in game.rules.families for f in fs}
        known: dict[int, set[Kind]] = {f: set() for f in families}
        # holes: where a hidden card lies, by family
        hands: dict[int, list[tuple[int, int]]] = {f: [] for f in families}
        aside: dict[int, list[tuple[int, int]]] = {f: [] for f in families}
        piles: dict[int, list[tuple[int, int]]] = {f: [] for f in families}
        kept: dict[int, list[int]] = {f: [] for f in families}
        queued: dict[int, list[int]] = {f: [] for f in families}
        for s in range(game.n):
            for rows, holes in ((game.hands, hands), (game.set_aside, aside)):
                for i, c in enumerate(rows[s]):
                    if c.kind is None:
                        holes[c.family].append((s, i))
                    else:
                        known[c.family].add(c.kind)
            for i, c in enumerate(game.draw_piles[s]):
                piles[c.family].append((s, i))  # face down for everyone, even its owner
            for c in game.fronts[s]:
                if c.kind is not None:
                    known[c.family].add(c.kind)
        for slot in game.queue:
            for ip in slot:
                if ip.kind is None:
                    (kept if ip.tokens and prior else queued)[ip.family].append(ip.pid)
                else:
                    known[ip.family].add(ip.kind)
        self._plan = []
        for f in sorted(families):
            unknown = [k for k in KINDS if k not in known[f]]
            count = len(hands[f]) + len(aside[f]) + len(piles[f]) + len(kept[f]) + len(queued[f])
            if count != len(unknown):
                raise ValueError(
                    f"family {f}: {count} hidden cards for {len(unknown)} identities left"
                )
            if unknown:
                self._plan.append((f, unknown, kept[f], hands[f], aside[f], piles[f], queued[f]))
        self.hidden_in_queue = any(k or q for *_, k, _h, _a, _p, q in self._plan)
        self.prior = prior or {}

    def sample(self, rng: random.Random) -> Game:
        g = _copy(self.game)
        in_queue = (
            {ip.pid: ip for slot in g.queue for ip in slot if ip.kind is None}
            if self.hidden_in_queue
            else {}
        )
        prior = self.prior
        for f, unknown, kept, hands, aside, piles, queued in self._plan:
            kinds = unknown[:]
            for pid in kept:
                weights = [prior.get(k, 1.0) for k in kinds]
                pick = rng.random() * sum(weights)
                i = 0
                while i < len(kinds) - 1 and pick >= weights[i]:
                    pick -= weights[i]
                    i += 1
                in_queue[pid].kind = kinds.pop(i)
            rng.shuffle(kinds)
            cards = CARDS[f]
            it = iter(kinds)
            for s, i in hands:
                g.hands[s][i] = cards[next(it)]
            for s, i in aside:
                g.set_aside[s][i] = cards[next(it)]
            for s, i in piles:
                g.draw_piles[s][i] = cards[next(it)]
            for pid in queued:
                in_queue[pid].kind = next(it)
        g._legal = None  # the options copied were of the unknown cards: ask again
        return g


def _observed(seat: int, me: int, action: Action) -> Hashable:
    """The action as `me` sees it: another seat's placement shows only the
    card's family and where it goes."""
    if seat != me and isinstance(action, Place):
        return (seat, action.card.family, action.at)
    return (seat, action)


class ISMCTSPlayer:
    """Information-set MCTS from what the deciding seat may know; see the
    module docstring. `iterations` (a fixed budget) wins over `seconds`,
    which needs a `clock`; with neither, `DEFAULT_ITERATIONS`."""

    name = "ismcts"

    def __init__(
        self,
        seed: int | None = None,
        rng: random.Random | None = None,
        *,
        iterations: int | None = None,
        seconds: float = DEFAULT_SECONDS,
        clock: Callable[[], float] | None = None,
        exploration: float = EXPLORATION,
        epsilon: float = EPSILON,
        prior: dict[Kind, float] | None = KEPT_PRIOR,
    ) -> None:
        self.rng = rng or random.Random(seed)
        self.prior = prior
        self.iterations = iterations
        self.seconds = seconds
        self.clock = clock
        self.exploration = exploration
        self.epsilon = epsilon
        self._policy = HeuristicPlayer(rng=self.rng)
        self.last_iterations = 0  # how many the last search ran (benchmarks)

    # ------------------------------------------------------------ policy

    def _play(self, game: Game) -> Action:
        """How every seat plays in a simulation: the heuristic, with noise."""
        rng = self.rng
        if rng.random() < self.epsilon:
            options = game.legal_actions()
            return options[int(rng.random() * len(options))]
        return self._policy.choose(game)

    # ------------------------------------------------------------ search

    def choose(self, game: Game) -> Action:
        decision = game.decision
        assert decision is not None, "the game is over"
        options = decision.options
        self.last_iterations = 0
        if len(options) == 1:
            return options[0]
        me = decision.seat
        # Whatever we are given, we think only with what our seat may know
        # (self-play hands players the whole game).
        game = from_data(view(game, me))
        try:
            sampler = Determinizer(game, me, self.prior)
        except ValueError:
            return self._policy.choose(game)
        root = _Node()
        budget = self.iterations
        clock = self.clock
        deadline = None
        if budget is None:
            if clock is None:
                budget = DEFAULT_ITERATIONS
            else:
                deadline = clock() + self.seconds
        done = 0
        while True:
            self._iterate(sampler.sample(self.rng), root, me)
            done += 1
            if deadline is not None:
                assert clock is not None
                if clock() >= deadline and done >= 2:
                    break
            elif budget is not None and done >= budget:
                break
        self.last_iterations = done
        best = None
        best_key = (-1, -1.0)
        for a in options:
            child = root.children.get((me, a))
            if child is None:
                continue
            key = (child.visits, child.total / child.visits)
            if key > best_key:
                best, best_key = a, key
        return best if best is not None else self._policy.choose(game)

    def _iterate(self, g: Game, root: _Node, me: int) -> None:
        rng = self.rng
        c = self.exploration
        node = root
        path = [root]
        growing = True
        while not g.over and growing:
            decision = g.decision
            assert decision is not None
            options = decision.options
            seat = decision.seat
            if len(options) == 1:
                g.apply(options[0])
                continue
            children = node.children
            if seat == me:
                fresh = []
                chosen: _Node | None = None
                action = options[0]
                best = -math.inf
                for a in options:
                    child = children.get((me, a))
                    if child is None:
                        fresh.append(a)
                        continue
                    child.avail += 1
                    if not fresh:
                        value = child.total / child.visits + c * math.sqrt(
                            math.log(child.avail) / child.visits
                        )
                        if value > best:
                            best, chosen, action = value, child, a
                if fresh:
                    action = fresh[int(rng.random() * len(fresh))]
                    chosen = children[(me, action)] = _Node()
                    growing = False
                assert chosen is not None
                node = chosen
            else:
                action = self._play(g)
                key = _observed(seat, me, action)
                child = children.get(key)
                if child is None:
                    child = children[key] = _Node()
                    growing = False
                node = child
            path.append(node)
            g.apply(action)
        play = self._play
        while not g.over:
            g.apply(play(g))
        result = _result(g, me)
        for n in path:
            n.visits += 1
            n.total += result


def _result(game: Game, me: int) -> float:
    """How a finished game went for `me`, in [0, 1]: mostly the share of the
    win, a little the score margin over the best other seat."""
    winners = game.winners
    share = 1.0 / len(winners) if me in winners else 0.0
    scores = game.scores
    best_other = max(s for i, s in enumerate(scores) if i != me)
    margin = math.tanh((scores[me] - best_other) / MARGIN_SCALE)
    return (1.0 - MARGIN_WEIGHT) * share + MARGIN_WEIGHT * 0.5 * (1.0 + margin)

"""Bots: a strategy that plays a seat from what that seat may know, and nothing else.

A bot reads only its session's `GameMirror`: the server's views with its
own seat's secrets overlaid. It builds an engine game of that position
(every other seat's hidden cards stay card backs) and asks one of the
engine's players for a move. It cannot peek, even by accident: nothing it
is given holds another seat's hidden card.

Strategies: ``random`` (uniform among the legal options), ``heuristic``
(the engine's greedy rules of thumb) and ``ismcts`` (a search over the
cards it cannot see, `oriflamme.client.ismcts`: 200 ms a decision with a
clock, which the trio shells give it, or a number of iterations). A bot
that searches is `slow`: the shells run its decisions off their event loop
(`oriflamme.client.thinking`: in a worker process, or a worker thread).

>>> sorted(STRATEGIES)
['heuristic', 'ismcts', 'random']
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import NamedTuple, Protocol

from oriflamme.engine import (
    Action,
    Game,
    HeuristicPlayer,
    Player,
    PositionError,
    RandomPlayer,
)
from oriflamme.protocol import messages as m

from .ismcts import DEFAULT_SECONDS, ISMCTSPlayer
from .state import ClientState, GameMirror

STRATEGIES: dict[str, Callable[..., Player]] = {
    "random": RandomPlayer,
    "heuristic": HeuristicPlayer,
    "ismcts": ISMCTSPlayer,
}
# Strategies that think for a while: their decisions run off the event loop.
SEARCHING = frozenset({"ismcts"})


class Think(NamedTuple):
    """A searching bot's budget a decision: seconds, or a number of iterations."""

    seconds: float | None = None
    iterations: int | None = None


def parse_think(text: str | None) -> Think:
    """A budget as a person writes it: milliseconds, or iterations with an
    ``i``. Raises ValueError for anything else.

    >>> parse_think("300"), parse_think("500i"), parse_think(None)
    (Think(seconds=0.3, iterations=None), Think(seconds=None, iterations=500), Think(seconds=None, iterations=None))
    """
    if text is None:
        return Think()
    text = text.strip().lower()
    try:
        value = int(text[:-1] if text.endswith("i") else text)
    except ValueError:
        raise ValueError(f"milliseconds (200) or iterations (500i), not {text!r}") from None
    if not 1 <= value <= 1_000_000:
        raise ValueError(f"{text!r} is out of range (1-1000000)")
    return Think(iterations=value) if text.endswith("i") else Think(seconds=value / 1000)


class Bot:
    """Chooses our answer to the pending decision with `strategy`."""

    def __init__(
        self,
        strategy: str,
        *,
        rng: random.Random | None = None,
        seed: str | None = None,
        seconds: float | None = None,
        iterations: int | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        """`seed`: a reproducible bot. Each decision's randomness comes from
        the seed and the decision's number, so the same game gives the same
        moves, and a decision answered again (after a reconnection, or a
        server's restart) is answered the same way.

        A searching strategy's budget a decision: `iterations`, or `seconds`
        (default 0.2) by `clock`; without a clock (set it later with
        `use_clock`), a fixed number of iterations (the search's default)."""
        if strategy not in STRATEGIES:
            raise ValueError(f"no bot strategy {strategy!r}: {', '.join(sorted(STRATEGIES))}")
        self.strategy = strategy
        self.seed = seed
        self._rng = rng if rng is not None else random.Random()
        self._ready: tuple[int | None, Action] | None = None
        self._player: Player
        if strategy == "ismcts":
            self._player = ISMCTSPlayer(
                rng=self._rng,
                iterations=iterations,
                seconds=DEFAULT_SECONDS if seconds is None else seconds,
                clock=clock,
            )
        else:
            self._player = STRATEGIES[strategy](rng=self._rng)

    @property
    def slow(self) -> bool:
        """The bot thinks for a while (a search): run `choose` off the event loop."""
        return self.strategy in SEARCHING

    def use_clock(self, clock: Callable[[], float]) -> None:
        """Give a searching bot the clock its time budget is read from, unless
        it has one or counts iterations (a trio shell calls this)."""
        player = self._player
        if isinstance(player, ISMCTSPlayer) and player.clock is None:
            player.clock = clock

    def choose(self, game: GameMirror) -> Action:
        """One of `game.options()`: the one `ready` was given for this
        decision, or one `decide` chooses now."""
        options = game.options()
        if not options:
            raise ValueError("no decision of ours is pending")
        turn = None if game.decision is None else game.decision.turn
        ready, self._ready = self._ready, None
        if ready is not None and ready[0] == turn and ready[1] in options:
            return ready[1]
        return self.decide(seen_position(game), options, turn)

    def decide(self, position: Game | None, options: Sequence[Action], turn: int | None) -> Action:
        """One of `options`, for decision number `turn` of `position` (the
        game as this seat sees it). The engine's player decides; should the
        position not load, or its choice not be among the options, the bot
        picks among them at random. It touches nothing but its arguments and
        the bot: a searching bot's shell runs it in a worker process or thread."""
        if self.seed is not None and turn is not None:
            self._rng.seed(f"{self.seed} {turn}")
        try:
            action = None if position is None else self._player.choose(position)
        except (PositionError, ValueError, AssertionError):
            action = None
        if action in options:
            assert action is not None
            return action
        return options[int(self._rng.random() * len(options))]

    def rng_state(self) -> object:
        """Where the bot's randomness stands (`decide` elsewhere moves it on)."""
        return self._rng.getstate()

    def set_rng_state(self, state: object) -> None:
        self._rng.setstate(state)  # type: ignore[arg-type]  # what rng_state gave

    def ready(self, turn: int | None, action: Action) -> None:
        """`action` was decided (by `decide`, elsewhere) for decision number
        `turn`: `choose` gives it for that decision."""
        self._ready = (turn, action)


def seen_position(game: GameMirror) -> Game | None:
    """The game as this seat sees it, for a bot to decide on; None when the
    engine cannot load it (the bot then picks an option at random)."""
    try:
        return game.engine_game()
    except (PositionError, ValueError, AssertionError):
        return None


class Seated(Protocol):
    """A client that plays: its mirror, and the decision it answered last:
    (its game's id, its turn). The game's too: a turn number comes again
    in the next game, which may begin with this seat owing that turn."""

    answered: tuple[bytes, int] | None

    @property
    def state(self) -> ClientState: ...


class Behaviour:
    """How a client plays by itself: every automatic answer (seed commitment,
    openings, final reveal) and, with a `Bot`, its decisions. Subclass it to
    play otherwise (tests, sample records)."""

    def __init__(self, bot: Bot | None) -> None:
        self.bot = bot

    def owed_turn(self, client: Seated) -> int | None:
        """The number of the decision our bot owes now and has not answered
        (None: none)."""
        game = client.state.game
        if self.bot is None or game is None or not game.my_turn or game.decision is None:
            return None
        turn = game.decision.turn
        return None if (game.game_id, turn) == client.answered else turn

    def messages(self, client: Seated) -> list[m.Message]:
        """What `client` sends now, given what it knows."""
        game = client.state.game
        if game is None:
            return []
        out = list(game.automatic())
        turn = self.owed_turn(client)
        if turn is not None:
            assert self.bot is not None
            client.answered = (game.game_id, turn)
            out.append(game.answer(self.bot.choose(game)))
        return out

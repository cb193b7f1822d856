"""The heuristic player (`HeuristicPlayer`) in positions written by hand.

Positions are written with `builders.position` (see its docstring): the queue
is in resolution order, index 0 resolves first. Seats: red 0, blue 1, green 2
(standard game); in the two-player variant seat 0 plays red and blue.
"""

from __future__ import annotations

import pytest

from oriflamme.engine import KEEP, REVEAL, HeuristicPlayer, Target
from oriflamme.engine.game import Game
from tests.engine.builders import describe, pid, position


def choices(game: Game, tries: int = 20) -> set[object]:
    """What the heuristic chooses here, over several seeds (it is random
    only among options it values alike)."""
    return {HeuristicPlayer(seed=s).choose(game.copy()) for s in range(tries)}


# ------------------------------------------------------------- the last round


def test_in_the_last_round_an_heir_with_tokens_is_revealed_though_it_cannot_score() -> None:
    """Issue 25: a bot kept its Heir face down in round 6 with 6 tokens on it
    (another face-up Heir stopped its ability). Kept, the tokens count for
    nobody; revealed, they are 6 points."""
    g = position(
        ["blue heir up", "red heir 6t", "green lord"],
        round=6,
        step="reveal",
        index=1,
        scores=[5, 5, 5],
    )
    assert g.decision is not None and g.decision.seat == 0
    assert choices(g) == {REVEAL}
    g.apply(REVEAL)
    assert g.scores[0] == 5 + 6  # the tokens; the ability gains nothing


def test_before_the_last_round_the_same_heir_grows() -> None:
    g = position(["blue heir up", "red heir 6t", "green lord"], round=5, step="reveal", index=1)
    assert choices(g) == {KEEP}


@pytest.mark.parametrize(
    ("queue", "index", "gain"),
    [
        # A Spy with only our cards beside it steals nothing: its tokens pay.
        (["red lord up", "red spy 2t"], 1, 2),
        # A Soldier beside only our Lord, which has acted this round: it
        # scores the elimination and its token.
        (["red lord up", "red soldier 1t"], 1, 2),
        # A Shapeshifter with nothing face up beside it: its tokens.
        (["blue spy", "red shapeshifter 2t", "green lord"], 1, 2),
        # A Royal Decree: its token.
        (["blue spy", "red royal_decree 1t", "green lord"], 1, 1),
        # An Ambush scores 1, revealed; no later card can strike it.
        (["blue spy", "green lord", "red ambush 2t"], 2, 1),
    ],
    ids=["spy", "soldier", "shapeshifter", "royal-decree", "ambush-last"],
)
def test_in_the_last_round_a_card_is_revealed_whenever_that_scores(
    queue: list[str], index: int, gain: int
) -> None:
    g = position(queue, round=6, step="reveal", index=index, scores=[3, 3, 3])
    assert g.decision is not None and g.decision.seat == 0
    assert choices(g) == {REVEAL}
    before = g.scores[0]
    while g.decision is not None and g.decision.seat == 0:
        g.apply(HeuristicPlayer(seed=1).choose(g))
    assert g.scores[0] - before == gain


@pytest.mark.parametrize(
    "queue",
    [
        # A Conspiracy with no tokens pays nothing; kept, it stays in the
        # queue for the tie-break.
        ["blue spy", "red conspiracy", "green lord"],
        # A Royal Decree with no tokens scores nothing.
        ["blue spy", "red royal_decree", "green lord"],
    ],
    ids=["conspiracy", "royal-decree"],
)
def test_in_the_last_round_a_card_is_kept_when_revealing_gains_nothing(queue: list[str]) -> None:
    g = position(queue, round=6, step="reveal", index=1)
    assert choices(g) == {KEEP}


def test_in_the_last_round_an_heir_is_kept_if_revealed_it_would_stop_our_own_later_heir() -> None:
    # Seat 0 plays red and blue. Revealed, the red Heir (blocked by the blue
    # one) would gain its token and stop the blue Heir's 2 points.
    g = position(
        ["yellow spy", "red heir 1t", "blue heir up"],
        players=2,
        variant="two-player",
        round=6,
        step="reveal",
        index=1,
        scores=[3, 3],
    )
    assert g.decision is not None and g.decision.seat == 0
    assert choices(g) == {KEEP}
    g.apply(KEEP)
    assert g.over and g.scores[0] == 3 + 2


def test_in_the_last_round_an_heir_with_no_tokens_is_revealed_to_stop_a_rivals_later_heir() -> None:
    g = position(
        ["blue spy", "red heir", "green heir up"], round=6, step="reveal", index=1, scores=[3, 3, 3]
    )
    assert choices(g) == {REVEAL}
    g.apply(REVEAL)
    assert g.over and g.scores == [3, 3, 3]  # green's Heir scored nothing


def test_in_the_last_round_an_elimination_of_our_own_card_takes_one_that_has_acted() -> None:
    # The Soldier must strike one of our cards: the Lord has acted this
    # round, the Heir has not (its 3 tokens and its 2 points are to come).
    g = position(
        ["red lord up", "red soldier 1t", "red heir 3t", "blue spy"],
        round=6,
        step="reveal",
        index=1,
        scores=[3, 3, 3],
    )
    assert choices(g) == {REVEAL}
    g.apply(REVEAL)
    assert g.decision is not None and g.decision.kind == "eliminate"
    assert choices(g) == {Target(pid(g, "red lord"))}


def test_an_assassination_that_must_strike_our_own_card_strikes_itself() -> None:
    # Discarded anyway once it has acted: it costs nothing, and scores 1.
    g = position(
        ["red lord up", "red assassination", "red heir up"],
        round=4,
        step="reveal",
        index=1,
        scores=[3, 3, 3],
    )
    g.apply(REVEAL)
    assert g.decision is not None and g.decision.kind == "eliminate"
    assert choices(g) == {Target(pid(g, "red assassination"))}
    g.apply(Target(pid(g, "red assassination")))
    assert g.scores[0] == 4 + 2  # the elimination, then the Heir acts
    assert describe(g)[:2] == ["#0 red lord up", "#2 red heir up"]

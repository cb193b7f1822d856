"""The English rulebook's worked examples (first edition: the placement example
under "1/ Placement Phase" and the resolution example under "2/ Resolution
Phase"), reproduced move by move.

Red is seat 0, Blue seat 1, Green seat 2. The pictures are drawn left to
right in the resolution direction, so the queue's index 0 is the leftmost
card.
"""

from __future__ import annotations

from oriflamme.engine import (
    FIRST,
    KEEP,
    LAST,
    LEFT_TO_RIGHT,
    REVEAL,
    ChooseDirection,
    Decision,
    Kind,
    Place,
    Rules,
    Step,
    Target,
    layout_deal,
    new_game,
)
from oriflamme.engine.events import (
    AbilityUsed,
    DirectionChosen,
    Eliminated,
    Kept,
    Placed,
    Revealed,
    RoundEnded,
    RoundStarted,
    Scored,
)
from tests.engine.builders import C, assert_events, assert_illegal, describe, fronts, position

KEEP_OR_REVEAL = (KEEP, REVEAL)


def test_placement_phase_example() -> None:
    rules = Rules(3)
    # Each family shuffled to Kind order: Archer, Soldier, Spy set aside; the
    # other seven in hand.
    deal = [layout_deal(rules, seat, [list(Kind)]) for seat in range(3)]
    g = new_game(3, first_player=0, deal=deal)
    # Setup: the first player places the Resolution Direction tile.
    assert g.decision is not None and (g.decision.seat, g.decision.kind) == (0, "direction")
    events = g.apply(ChooseDirection(LEFT_TO_RIGHT))
    assert_events(events, [DirectionChosen(0, LEFT_TO_RIGHT), RoundStarted(1, 0)])

    # A: Red is the first player and places a card face down in the middle.
    assert g.decision == Decision(0, Step.PLACE, tuple(Place(c, FIRST) for c in g.hands[0]), None)
    events = g.apply(Place(C("red lord"), FIRST))
    assert_events(events, [Placed(0, 0, C("red lord"), FIRST, 0)])

    # B: Blue must play a card to the left or right of Red's card.
    assert g.decision is not None
    assert g.decision.seat == 1
    assert {p.at for p in g.decision.options} == {FIRST, LAST}
    assert len(g.decision.options) == 2 * 7
    events = g.apply(Place(C("blue heir"), FIRST))
    assert_events(events, [Placed(1, 1, C("blue heir"), FIRST, 0)])
    assert describe(g) == ["#1 blue heir", "#0 red lord"]

    # C: Green must play left of Blue's card or right of Red's, never between.
    assert g.decision is not None and g.decision.seat == 2
    assert {p.at for p in g.decision.options} == {FIRST, LAST}
    assert_illegal(g, Place(C("green lord"), 1), "no stacking in round 1")
    assert_illegal(g, Place(C("green lord"), 0), "no stacking in round 1")
    events = g.apply(Place(C("green lord"), LAST))
    assert_events(events, [Placed(2, 2, C("green lord"), LAST, 2)])
    assert describe(g) == ["#1 blue heir", "#0 red lord", "#2 green lord"]

    # Everyone has placed one card: resolution starts with the leftmost card.
    assert [len(h) for h in g.hands] == [6, 6, 6]
    assert g.decision == Decision(1, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 1)


def test_resolution_phase_example() -> None:
    # The picture: Red's first card, Blue's card (1 token), Red's second card
    # (2 tokens, says the Polish edition of the same example), Green's card.
    # Only these four cards are shown; we build exactly them in round 3.
    g = position(
        ["red heir", "blue soldier 1t", "red lord 2t", "green spy"],
        round=3,
        first_player=2,
        step="reveal",
        index=0,
        scores=[3, 2, 4],
    )

    # A: Red is first to choose whether to reveal their first card.
    assert g.decision == Decision(0, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 0)

    # B: Red does not reveal it and places 1 token from the supply on it.
    events = g.apply(KEEP)
    assert_events(events, [Kept(0, 0, 1)])
    assert describe(g)[0] == "#0 red heir 1t"

    # C: Blue reveals their card and immediately gains the token on it.
    assert g.decision == Decision(1, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 1)
    events = g.apply(REVEAL)
    assert_events(events, [Revealed(1, 1, C("blue soldier"), 1), Scored(1, 1, "tokens")])
    assert g.scores == [3, 3, 4]

    # D: a Soldier must eliminate an adjacent card: both are Red's. Blue
    # chooses Red's second card: it is turned face up, its tokens go back to
    # the supply, it goes in front of Red, and Blue gains 1.
    assert g.decision == Decision(1, Step.ELIMINATE, (Target(0), Target(2)), 1)
    events = g.apply(Target(2))
    assert_events(
        events,
        [
            AbilityUsed(1, 1, "soldier", 2),
            Eliminated(2, C("red lord"), 0, 1, 1, 2),
            Scored(1, 1, "eliminate"),
        ],
    )
    assert g.scores == [3, 4, 4]
    assert fronts(g) == [["red lord"], [], []]
    assert describe(g) == ["#0 red heir 1t", "#1 blue soldier up", "#3 green spy"]

    # E: with the red card gone, Green is next, keeps, and adds a token.
    assert g.decision == Decision(2, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 3)
    events = g.apply(KEEP)
    assert_events(events, [Kept(2, 3, 1), RoundEnded(3), RoundStarted(4, 0)])
    assert describe(g) == ["#0 red heir 1t", "#1 blue soldier up", "#3 green spy 1t"]
    assert g.scores == [3, 4, 4]

"""Each of the ten cards: its ability, its options list, and its no-option case.

Also the decisions the abilities ask (eliminate, steal, copy, move_card,
move_to): illegal answers raise IllegalAction, say what is wrong, and change
nothing. Positions are written with `builders.position`; seats: red 0,
blue 1, green 2, yellow 3, black 4.
"""

from __future__ import annotations

import pytest

from oriflamme.engine import KEEP, REVEAL, Decision, MoveTo, Open, Place, Step, Target
from oriflamme.engine.events import (
    AbilityUsed,
    Discarded,
    Eliminated,
    Event,
    Kept,
    Moved,
    NoEffect,
    Revealed,
    RoundEnded,
    RoundStarted,
    Scored,
    Stolen,
    Uncovered,
)
from tests.engine.builders import C, assert_events, assert_illegal, describe, fronts, position

KEEP_OR_REVEAL = (KEEP, REVEAL)
END_OF_ROUND_2: list[Event] = [RoundEnded(2), RoundStarted(3, 1)]


# ------------------------------------------------------------------- archer


def test_archer_eliminates_the_chosen_end_card_and_gains_one() -> None:
    g = position(
        ["yellow lord", "red archer up", "blue spy", "green heir 2t"],
        players=4,
        step="eliminate",
        index=1,
        ability="archer",
    )
    assert g.decision == Decision(0, Step.ELIMINATE, (Target(0), Target(3)), 1)
    events = g.apply(Target(3))
    assert_events(
        events,
        [
            AbilityUsed(0, 1, "archer", 3),
            Eliminated(3, C("green heir"), 2, 1, 0, 2),
            Scored(0, 1, "eliminate"),
        ],
    )
    assert g.scores == [2, 1, 1, 1]
    assert describe(g) == ["#0 yellow lord", "#1 red archer up", "#2 blue spy"]
    assert fronts(g) == [[], [], ["green heir"], []]
    assert g.decision == Decision(1, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 2)


def test_archer_at_an_end_is_offered_itself_and_the_other_end() -> None:
    g = position(["blue lord", "green spy", "red archer"], step="reveal", index=2)
    events = g.apply(REVEAL)
    assert_events(events, [Revealed(0, 2, C("red archer"), 0)])
    assert g.decision == Decision(0, Step.ELIMINATE, (Target(0), Target(2)), 2)
    assert_illegal(g, Target(1), "card 1 is not a legal choice to eliminate for this archer")


def test_archer_always_has_a_target_alone_it_is_itself() -> None:
    g = position(["blue archer up"], step="eliminate", index=0, ability="archer")
    assert g.decision == Decision(1, Step.ELIMINATE, (Target(0),), 0)
    g = position(["blue archer"], step="reveal", index=0)
    events = g.apply(REVEAL)
    assert_events(
        events,
        [
            Revealed(1, 0, C("blue archer"), 0),
            AbilityUsed(1, 0, "archer", 0),
            Eliminated(0, C("blue archer"), 1, 0, 1, 0),
            Scored(1, 1, "eliminate"),
            *END_OF_ROUND_2,
        ],
    )


# ------------------------------------------------------------------ soldier


def test_soldier_eliminates_the_chosen_neighbour_and_gains_one() -> None:
    g = position(
        ["green lord 1t", "red heir up", "blue soldier up", "green spy 3t", "red lord"],
        step="eliminate",
        index=2,
        ability="soldier",
    )
    assert g.decision == Decision(1, Step.ELIMINATE, (Target(1), Target(3)), 2)
    events = g.apply(Target(3))
    assert_events(
        events,
        [
            AbilityUsed(1, 2, "soldier", 3),
            Eliminated(3, C("green spy"), 2, 2, 1, 3),
            Scored(1, 1, "eliminate"),
        ],
    )
    assert g.scores == [1, 2, 1]
    # The Red Lord is now next to the Soldier; it resolves next.
    assert describe(g)[3] == "#4 red lord"
    assert g.decision == Decision(0, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 4)


def test_soldier_at_an_end_has_one_neighbour_applied_at_once() -> None:
    g = position(["blue soldier", "red lord 1t", "green spy"], step="reveal", index=0)
    events = g.apply(REVEAL)
    assert_events(
        events,
        [
            Revealed(1, 0, C("blue soldier"), 0),
            AbilityUsed(1, 0, "soldier", 1),
            Eliminated(1, C("red lord"), 0, 0, 1, 1),
            Scored(1, 1, "eliminate"),
        ],
    )
    assert g.decision == Decision(2, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 2)


def test_soldier_with_no_neighbour_does_nothing() -> None:
    # A face-up Soldier left alone when the Assassination on it eliminates itself.
    g = position([["green soldier up", "green assassination"]], step="reveal", index=0)
    events = g.apply(REVEAL)
    assert_events(
        events,
        [
            Revealed(2, 1, C("green assassination"), 0),
            AbilityUsed(2, 1, "assassination", 1),
            Eliminated(1, C("green assassination"), 2, 1, 2, 0),
            Uncovered(0, True),
            Scored(2, 1, "eliminate"),
            NoEffect(2, 0, "soldier"),
            *END_OF_ROUND_2,
        ],
    )
    assert g.scores == [1, 1, 2]
    assert describe(g) == ["#0 green soldier up"]


# ---------------------------------------------------------------------- spy


def test_spy_steals_one_from_the_chosen_adjacent_opponent() -> None:
    g = position(
        ["yellow heir 2t", "red spy up", "blue lord"],
        players=4,
        step="steal",
        index=1,
        ability="spy",
        scores=[1, 5, 1, 3],
    )
    assert g.decision == Decision(0, Step.STEAL, (Target(0), Target(2)), 1)
    events = g.apply(Target(0))
    assert_events(events, [AbilityUsed(0, 1, "spy", 0), Stolen(0, 3, 1)])
    assert g.scores == [2, 5, 1, 2]
    assert describe(g)[0] == "#0 yellow heir 2t"


def test_spy_next_to_an_opponent_and_an_own_card_takes_the_opponent_at_once() -> None:
    g = position(["green lord", "blue heir", "red spy", "red lord"], step="reveal", index=2)
    events = g.apply(REVEAL)
    assert_events(
        events, [Revealed(0, 2, C("red spy"), 0), AbilityUsed(0, 2, "spy", 1), Stolen(0, 1, 1)]
    )
    assert g.scores == [2, 0, 1]
    assert g.decision == Decision(0, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 3)


def test_spy_between_two_own_cards_is_offered_both_and_steals_nothing() -> None:
    g = position(
        ["red lord", "red spy up", "red heir"],
        step="steal",
        index=1,
        ability="spy",
        scores=[4, 4, 4],
    )
    assert g.decision == Decision(0, Step.STEAL, (Target(0), Target(2)), 1)
    events = g.apply(Target(2))
    assert_events(events, [AbilityUsed(0, 1, "spy", 2), Stolen(0, 0, 0)])
    assert g.scores == [4, 4, 4]


def test_spy_with_no_neighbour_does_nothing() -> None:
    g = position([["blue spy up", "blue assassination"]], step="reveal", index=0, scores=[3, 1, 3])
    events = g.apply(REVEAL)
    assert_events(
        events[2:],
        [
            Eliminated(1, C("blue assassination"), 1, 1, 1, 0),
            Uncovered(0, True),
            Scored(1, 1, "eliminate"),
            NoEffect(1, 0, "spy"),
            *END_OF_ROUND_2,
        ],
    )
    assert g.scores == [3, 2, 3]


# --------------------------------------------------------------------- heir


def test_heir_gains_two_asks_nothing_and_is_blocked_by_a_face_up_heir() -> None:
    g = position(["red heir 1t", "blue heir"], step="reveal", index=0)
    events = g.apply(REVEAL)
    assert_events(
        events,
        [
            Revealed(0, 0, C("red heir"), 1),
            Scored(0, 1, "tokens"),
            AbilityUsed(0, 0, "heir", None),
            Scored(0, 2, "heir"),
        ],
    )
    # No decision for the Heir: the next card is asked at once.
    assert g.decision == Decision(1, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 1)
    events = g.apply(REVEAL)
    assert_events(
        events,
        [Revealed(1, 1, C("blue heir"), 0), AbilityUsed(1, 1, "heir", None), *END_OF_ROUND_2],
    )
    assert g.scores == [4, 1, 1]


# --------------------------------------------------------------------- lord


def test_lord_gains_per_adjacent_own_slot_and_asks_nothing() -> None:
    g = position(
        ["black spy", "black lord", ["black heir", "black soldier up"], "red spy"],
        players=5,
        step="reveal",
        index=1,
    )
    events = g.apply(REVEAL)
    assert_events(
        events[:3],
        [Revealed(4, 1, C("black lord"), 0), AbilityUsed(4, 1, "lord", None), Scored(4, 3, "lord")],
    )
    # The face-up Black Soldier acts next.
    assert g.decision == Decision(4, Step.ELIMINATE, (Target(1), Target(4)), 3)


def test_lord_alone_gains_one() -> None:
    g = position(["red lord 2t"], step="reveal", index=0)
    events = g.apply(REVEAL)
    assert_events(
        events,
        [
            Revealed(0, 0, C("red lord"), 2),
            Scored(0, 2, "tokens"),
            AbilityUsed(0, 0, "lord", None),
            Scored(0, 1, "lord"),
            *END_OF_ROUND_2,
        ],
    )
    assert g.scores == [4, 1, 1]


# ------------------------------------------------------------- shapeshifter


def test_shapeshifter_copying_an_archer() -> None:
    g = position(
        ["green lord", "blue archer up", "red shapeshifter", "green heir"], step="reveal", index=2
    )
    events = g.apply(REVEAL)
    assert_events(
        events,
        [Revealed(0, 2, C("red shapeshifter"), 0), AbilityUsed(0, 2, "shapeshifter", 1)],
    )
    assert g.decision == Decision(0, Step.ELIMINATE, (Target(0), Target(3)), 2)
    events = g.apply(Target(0))
    assert_events(
        events[:3],
        [
            AbilityUsed(0, 2, "archer", 0),
            Eliminated(0, C("green lord"), 2, 2, 0, 0),
            Scored(0, 1, "eliminate"),
        ],
    )


def test_shapeshifter_copying_an_archer_may_eliminate_itself() -> None:
    g = position(
        [["red heir 1t", "red shapeshifter"], "blue archer up", "green lord"],
        step="reveal",
        index=0,
    )
    g.apply(REVEAL)
    assert g.decision == Decision(0, Step.ELIMINATE, (Target(1), Target(3)), 1)
    events = g.apply(Target(1))
    assert_events(
        events,
        [
            AbilityUsed(0, 1, "archer", 1),
            Eliminated(1, C("red shapeshifter"), 0, 1, 0, 0),
            Uncovered(0, False),
            Scored(0, 1, "eliminate"),
        ],
    )
    # The Heir under it is handled at once (ruling 6).
    assert g.decision == Decision(0, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 0)


def test_shapeshifter_copying_a_spy_prefers_an_opponent_of_its_own_owner() -> None:
    g = position(
        ["blue lord", "blue spy up", "red shapeshifter", "red heir"], step="reveal", index=2
    )
    events = g.apply(REVEAL)
    assert_events(
        events,
        [
            Revealed(0, 2, C("red shapeshifter"), 0),
            AbilityUsed(0, 2, "shapeshifter", 1),
            AbilityUsed(0, 2, "spy", 1),
            Stolen(0, 1, 1),
        ],
    )
    assert g.scores == [2, 0, 1]


def test_shapeshifter_copying_a_lord_counts_its_own_neighbours() -> None:
    g = position(
        ["red heir", "blue lord up", "red shapeshifter", "red spy"], step="reveal", index=2
    )
    events = g.apply(REVEAL)
    assert_events(
        events,
        [
            Revealed(0, 2, C("red shapeshifter"), 0),
            AbilityUsed(0, 2, "shapeshifter", 1),
            AbilityUsed(0, 2, "lord", None),
            Scored(0, 2, "lord"),
        ],
    )


def test_shapeshifter_with_two_face_up_characters_is_asked_which() -> None:
    g = position(["blue heir up", "red shapeshifter", "green soldier up"], step="reveal", index=1)
    events = g.apply(REVEAL)
    assert_events(events, [Revealed(0, 1, C("red shapeshifter"), 0)])
    assert g.decision == Decision(0, Step.COPY, (Target(0), Target(2)), 1)
    events = g.apply(Target(0))
    assert_events(
        events[:3],
        [
            AbilityUsed(0, 1, "shapeshifter", 0),
            AbilityUsed(0, 1, "heir", None),
            Scored(0, 2, "heir"),
        ],
    )


def test_shapeshifter_without_a_face_up_character_beside_it_does_nothing() -> None:
    g = position(["blue lord", "red shapeshifter 1t", "green heir"], step="reveal", index=1)
    events = g.apply(REVEAL)
    assert_events(
        events,
        [
            Revealed(0, 1, C("red shapeshifter"), 1),
            Scored(0, 1, "tokens"),
            NoEffect(0, 1, "shapeshifter"),
        ],
    )
    assert describe(g)[1] == "#1 red shapeshifter up"
    assert g.decision == Decision(2, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 2)


# ------------------------------------------------------------ assassination


def test_assassination_is_offered_every_top_card_and_is_discarded_after() -> None:
    g = position(
        [["yellow spy", "yellow lord"], "red heir up", "black assassination", ["blue soldier"]],
        players=5,
        step="reveal",
        index=2,
    )
    g.apply(REVEAL)
    assert g.decision == Decision(
        4, Step.ELIMINATE, (Target(1), Target(2), Target(3), Target(4)), 3
    )
    assert_illegal(g, Target(0), "card 0 is not a legal choice to eliminate for this assassination")
    events = g.apply(Target(1))
    assert_events(
        events[:5],
        [
            AbilityUsed(4, 3, "assassination", 1),
            Eliminated(1, C("yellow lord"), 3, 3, 4, 0),
            Uncovered(0, False),
            Scored(4, 1, "eliminate"),
            Discarded(3, C("black assassination"), 4, "used", 0),
        ],
    )
    assert fronts(g) == [[], [], [], ["yellow lord"], ["black assassination"]]
    assert describe(g) == ["#0 yellow spy", "#2 red heir up", "#4 blue soldier"]


def test_assassination_alone_eliminates_itself() -> None:
    g = position(["red assassination"], step="reveal", index=0)
    events = g.apply(REVEAL)
    assert_events(
        events,
        [
            Revealed(0, 0, C("red assassination"), 0),
            AbilityUsed(0, 0, "assassination", 0),
            Eliminated(0, C("red assassination"), 0, 0, 0, 0),
            Scored(0, 1, "eliminate"),
            *END_OF_ROUND_2,
        ],
    )
    assert fronts(g) == [["red assassination"], [], []]


# ------------------------------------------------------------- royal decree


def test_royal_decree_options_then_destination_then_discard() -> None:
    g = position(
        ["blue lord 1t", "green heir up", "red royal_decree", ["blue spy", "blue soldier"]],
        step="reveal",
        index=2,
    )
    g.apply(REVEAL)
    assert g.decision == Decision(0, Step.MOVE_CARD, (Target(0), Target(1), Target(4)), 2)
    g.apply(Target(0))
    assert g.decision == Decision(0, Step.MOVE_TO, (MoveTo(1), MoveTo(2), MoveTo(3)), 2)
    events = g.apply(MoveTo(3))
    assert_events(
        events[:3],
        [
            AbilityUsed(0, 2, "royal_decree", 0),
            Moved(0, 3),
            Discarded(2, C("red royal_decree"), 0, "used", 0),
        ],
    )
    assert describe(g) == [
        "#1 green heir up",
        ["#3 blue spy", "#4 blue soldier"],
        "#0 blue lord 1t",
    ]
    # The blue Soldier resolves next (it is after the Decree's old place).
    assert g.decision == Decision(1, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 4)


def test_royal_decree_with_a_single_possible_move_moves_at_once() -> None:
    g = position(["red royal_decree", "blue lord 2t"], step="reveal", index=0)
    events = g.apply(REVEAL)
    assert_events(
        events,
        [
            Revealed(0, 0, C("red royal_decree"), 0),
            AbilityUsed(0, 0, "royal_decree", 1),
            Moved(1, 0),
            Discarded(0, C("red royal_decree"), 0, "used", 0),
            *END_OF_ROUND_2,
        ],
    )
    # Moved ahead of the Decree: skipped this round, no token.
    assert describe(g) == ["#1 blue lord 2t"]


def test_royal_decree_with_one_card_to_move_asks_only_where() -> None:
    g = position([["blue spy", "blue lord 1t"], "red royal_decree"], step="reveal", index=1)
    events = g.apply(REVEAL)
    assert_events(events, [Revealed(0, 2, C("red royal_decree"), 0)])
    assert g.decision == Decision(0, Step.MOVE_TO, (MoveTo(0), MoveTo(1), MoveTo(2)), 2)
    events = g.apply(MoveTo(2))
    assert_events(
        events[:4],
        [
            AbilityUsed(0, 2, "royal_decree", 1),
            Moved(1, 2),
            Uncovered(0, False),
            Discarded(2, C("red royal_decree"), 0, "used", 0),
        ],
    )
    # Moved behind the Decree: it resolves this round.
    assert describe(g) == ["#0 blue spy", "#1 blue lord 1t"]
    assert g.decision == Decision(1, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 1)


def test_royal_decree_with_no_other_top_card_does_nothing() -> None:
    # The Lord under the Decree is covered, so it cannot be moved.
    g = position([["red lord", "red royal_decree"]], step="reveal", index=0)
    events = g.apply(REVEAL)
    assert_events(
        events,
        [
            Revealed(0, 1, C("red royal_decree"), 0),
            NoEffect(0, 1, "royal_decree"),
            Discarded(1, C("red royal_decree"), 0, "used", 0),
            Uncovered(0, False),
        ],
    )
    assert g.decision == Decision(0, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 0)


# ------------------------------------------------------------------- ambush


def test_ambush_kept_gains_tokens_like_any_card() -> None:
    g = position(["green ambush 2t", "blue lord"], step="reveal", index=0)
    assert_events(g.apply(KEEP), [Kept(2, 0, 3)])
    assert describe(g)[0] == "#0 green ambush 3t"


def test_ambush_revealed_by_its_owner_pays_one_and_asks_nothing() -> None:
    g = position(["blue lord", "green ambush 4t"], step="reveal", index=1, scores=[1, 1, 2])
    events = g.apply(REVEAL)
    assert_events(
        events,
        [
            Revealed(2, 1, C("green ambush"), 4),
            AbilityUsed(2, 1, "ambush", None),
            Scored(2, 1, "ambush"),
            Discarded(1, C("green ambush"), 2, "used", 0),
            *END_OF_ROUND_2,
        ],
    )
    assert g.scores == [1, 1, 3]
    assert describe(g) == ["#0 blue lord"]


def test_ambush_eliminated_by_an_opponents_archer() -> None:
    g = position(
        ["red ambush 1t", "blue archer up", "green lord"],
        step="eliminate",
        index=1,
        ability="archer",
    )
    events = g.apply(Target(0))
    assert_events(
        events,
        [
            AbilityUsed(1, 1, "archer", 0),
            Eliminated(0, C("red ambush"), 0, 1, 1, 1),
            Scored(1, 1, "eliminate"),
            Scored(0, 4, "ambush"),
            Discarded(1, C("blue archer"), 1, "ambush", 0),
        ],
    )
    assert g.scores == [5, 2, 1]
    assert fronts(g) == [["red ambush"], ["blue archer"], []]
    assert g.decision == Decision(2, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 2)


# --------------------------------------------------------------- conspiracy


def test_conspiracy_pays_twice_its_tokens_and_asks_nothing() -> None:
    g = position(["blue lord", "green conspiracy 5t"], step="reveal", index=1)
    events = g.apply(REVEAL)
    assert_events(
        events,
        [
            Revealed(2, 1, C("green conspiracy"), 5),
            Scored(2, 10, "conspiracy"),
            AbilityUsed(2, 1, "conspiracy", None),
            Discarded(1, C("green conspiracy"), 2, "used", 0),
            *END_OF_ROUND_2,
        ],
    )
    assert g.scores == [1, 1, 11]


def test_conspiracy_without_tokens_pays_nothing() -> None:
    g = position(["red conspiracy"], step="reveal", index=0)
    events = g.apply(REVEAL)
    assert_events(
        events,
        [
            Revealed(0, 0, C("red conspiracy"), 0),
            AbilityUsed(0, 0, "conspiracy", None),
            Discarded(0, C("red conspiracy"), 0, "used", 0),
            *END_OF_ROUND_2,
        ],
    )
    assert g.scores == [1, 1, 1]


# ------------------------------------------------- illegal ability answers


def test_illegal_answers_to_reveal() -> None:
    g = position(["red lord", "blue spy"], step="reveal", index=1)
    assert_illegal(g, Target(0), "keep or reveal the face-down card, not Target")
    assert_illegal(
        g, Place(C("blue heir"), "first"), "keep or reveal the face-down card, not Place"
    )
    assert_illegal(g, Open(C("blue spy")), "keep or reveal the face-down card, not Open")
    assert_illegal(g, KEEP, r"not your turn: seat 1 must decide \(reveal\)", seat=0)


def test_illegal_answers_to_eliminate() -> None:
    g = position(
        ["blue lord", "red soldier up", "green heir", "blue spy"],
        step="eliminate",
        index=1,
        ability="soldier",
    )
    assert_illegal(g, Target(3), "card 3 is not a legal choice to eliminate for this soldier")
    assert_illegal(g, Target(99), "card 99 is not a legal choice")
    assert_illegal(g, REVEAL, "choose a card to eliminate with a target")
    assert_illegal(g, MoveTo(0), "choose a card to eliminate with a target")
    assert_illegal(g, Target(0), r"not your turn: seat 0 must decide \(eliminate\)", seat=1)


def test_illegal_answers_to_steal() -> None:
    g = position(
        [["green lord", "green heir"], "blue spy up", "red lord"],
        step="steal",
        index=1,
        ability="spy",
    )
    assert g.decision == Decision(1, Step.STEAL, (Target(1), Target(3)), 2)
    assert_illegal(g, Target(0), "card 0 is not a legal choice to steal for this spy")
    assert_illegal(g, Target(2), "card 2 is not a legal choice to steal")
    assert_illegal(g, KEEP, "choose a card to steal with a target")
    assert_illegal(g, Target(1), "not your turn", seat=2)


def test_illegal_answers_to_copy() -> None:
    g = position(
        ["blue heir up", "red shapeshifter up", "green soldier up", "blue lord up", "green spy"],
        step="copy",
        index=1,
        ability="shapeshifter",
    )
    assert g.decision == Decision(0, Step.COPY, (Target(0), Target(2)), 1)
    assert_illegal(g, Target(3), "card 3 is not a legal choice to copy for this shapeshifter")
    assert_illegal(g, Target(1), "card 1 is not a legal choice to copy")
    assert_illegal(g, MoveTo(1), "choose a card to copy with a target")


def test_illegal_answers_to_move_card_and_move_to() -> None:
    g = position(
        [["blue lord", "blue spy"], "red royal_decree up", "green heir"],
        step="move_card",
        index=1,
        ability="royal_decree",
    )
    assert g.decision == Decision(0, Step.MOVE_CARD, (Target(1), Target(3)), 2)
    assert_illegal(g, Target(2), "card 2 is not a legal choice to move for this royal_decree")
    assert_illegal(g, Target(0), "card 0 is not a legal choice to move")
    assert_illegal(g, MoveTo(0), "choose a card to move card with a target")
    g.apply(Target(3))
    assert g.decision == Decision(0, Step.MOVE_TO, (MoveTo(0), MoveTo(1)), 2)
    assert_illegal(g, MoveTo(2), "the card cannot be moved to index 2")
    assert_illegal(g, MoveTo(-1), "the card cannot be moved to index -1")
    assert_illegal(g, MoveTo(9), "the card cannot be moved to index 9")
    assert_illegal(g, Target(3), "choose where the card goes with move_to")
    assert_illegal(g, MoveTo(0), "not your turn", seat=2)


@pytest.mark.parametrize("kind", ["archer", "soldier", "spy", "heir", "lord", "shapeshifter"])
def test_characters_stay_face_up_in_the_queue(kind: str) -> None:
    g = position(["blue heir", f"red {kind} 1t", "green lord"], step="reveal", index=1)
    g.apply(REVEAL)
    while g.decision is not None and g.decision.kind != "reveal":
        g.apply(g.legal_actions()[0])
    assert f"#1 red {kind} up" in describe(g)
    assert fronts(g)[0] == []
    assert g.decision == Decision(2, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 2)


@pytest.mark.parametrize("kind", ["assassination", "royal_decree", "ambush", "conspiracy"])
def test_intrigues_are_discarded_after_use(kind: str) -> None:
    g = position(["blue heir", f"red {kind} 1t", "green lord"], step="reveal", index=1)
    g.apply(REVEAL)
    while g.decision is not None and g.decision.kind != "reveal":
        g.apply(g.legal_actions()[0])
    assert not any(f"red {kind}" in str(slot) for slot in describe(g))
    assert fronts(g)[0] == [f"red {kind}"]
    assert g.decision is not None and g.decision.kind == "reveal"

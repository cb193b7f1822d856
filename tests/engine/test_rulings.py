"""One or more tests per ruling of docs/RULES.md, built from positions.

Positions are written with `builders.position` (see its docstring): the queue
is in resolution order, index 0 resolves first; pids are given in reading
order unless written "#pid". Seats: red 0, blue 1, green 2 (standard game).
"""

from __future__ import annotations

from oriflamme.engine import (
    FIRST,
    KEEP,
    LAST,
    LEFT_TO_RIGHT,
    REVEAL,
    RIGHT_TO_LEFT,
    ChooseDirection,
    Decision,
    MoveTo,
    Place,
    RandomPlayer,
    Rules,
    Step,
    Target,
    layout_deal,
    mask_event,
    new_game,
    to_data,
    view,
)
from oriflamme.engine.cards import Kind
from oriflamme.engine.events import (
    AbilityUsed,
    DirectionChosen,
    Discarded,
    Drew,
    Eliminated,
    GameEnded,
    Kept,
    Moved,
    NoEffect,
    Placed,
    Revealed,
    RoundEnded,
    RoundStarted,
    Scored,
    Stolen,
    Uncovered,
)
from tests.engine.builders import C, assert_events, assert_illegal, describe, fronts, hand, position

KEEP_OR_REVEAL = (KEEP, REVEAL)


def places(card: str, *ats: object) -> tuple[Place, ...]:
    return tuple(Place(C(card), at) for at in ats)  # type: ignore[arg-type]


# ---------------------------------------------------------------- 1. placement


def test_ruling_01_first_card_of_the_game_goes_in_the_middle() -> None:
    g = position([], round=1, hands=[["red archer", "red soldier"], ["blue spy"], ["green lord"]])
    # An empty queue has one place: "first" (the middle).
    assert g.decision == Decision(
        0, Step.PLACE, places("red archer", FIRST) + places("red soldier", FIRST), None
    )
    assert_illegal(g, Place(C("red archer"), LAST), "the queue is empty")
    events = g.apply(Place(C("red soldier"), FIRST))
    assert_events(events, [Placed(0, 0, C("red soldier"), FIRST, 0)])
    assert describe(g) == ["#0 red soldier"]
    assert hand(g, 0) == ["red archer"]


def test_ruling_01_round_one_cards_go_at_either_end_never_between_or_on_a_card() -> None:
    g = position(
        ["red archer"], round=1, placed=1, hands=[["red soldier"], ["blue spy"], ["green lord"]]
    )
    assert g.decision == Decision(1, Step.PLACE, places("blue spy", FIRST, LAST), None)
    assert_illegal(g, Place(C("blue spy"), 0), "no stacking in round 1")
    g.apply(Place(C("blue spy"), FIRST))
    assert describe(g) == ["#1 blue spy", "#0 red archer"]
    # Green may go left of Blue or right of Red, never between them.
    assert g.decision == Decision(2, Step.PLACE, places("green lord", FIRST, LAST), None)
    assert_illegal(g, Place(C("green lord"), 1), "no stacking in round 1")
    events = g.apply(Place(C("green lord"), LAST))
    assert events[0] == Placed(2, 2, C("green lord"), LAST, 2)
    assert describe(g) == ["#1 blue spy", "#0 red archer", "#2 green lord"]


def test_ruling_01_from_round_two_cover_any_own_top_card_face_up_or_down_any_depth() -> None:
    g = position(
        [
            "red soldier up",  # 0: own, face up
            "blue spy",  # 1: an opponent's
            ["red lord", "red heir"],  # 2 covered, 3 own top of a stack
            "green archer 1t",  # 4
            "red conspiracy 1t",  # 5: own, face down
        ],
        round=2,
        hands=[["red ambush"], ["blue lord"], ["green lord"]],
    )
    assert g.decision == Decision(0, Step.PLACE, places("red ambush", FIRST, LAST, 0, 3, 5), None)
    assert_illegal(g, Place(C("red ambush"), 1), "not yours")
    assert_illegal(g, Place(C("red ambush"), 2), "no top card 2")
    assert_illegal(g, Place(C("red spy"), FIRST), "not in seat 0's hand")
    events = g.apply(Place(C("red ambush"), 3))
    assert_events(events, [Placed(0, 6, C("red ambush"), 3, 2)])
    assert describe(g)[2] == ["#2 red lord", "#3 red heir", "#6 red ambush"]
    assert len(g.queue) == 5


# ---------------------------------------------------------- 2. resolution order


def test_ruling_02_the_first_end_resolves_first_whatever_the_direction() -> None:
    for direction in (LEFT_TO_RIGHT, RIGHT_TO_LEFT):
        g = position(
            ["#1 blue spy", "#0 red archer"],
            round=1,
            placed=2,
            direction=direction,
            hands=[["red spy"], ["blue lord"], ["green lord", "green spy"]],
        )
        g.apply(Place(C("green lord"), FIRST))
        assert describe(g) == ["#2 green lord", "#1 blue spy", "#0 red archer"]
        seen = []
        while g.decision is not None and g.decision.kind == "reveal":
            seen.append((g.decision.seat, g.decision.pid))
            g.apply(KEEP)
        assert seen == [(2, 2), (1, 1), (0, 0)]
        assert g.direction == direction


def test_ruling_02_the_slot_being_resolved_is_followed_when_an_earlier_slot_vanishes() -> None:
    g = position(["blue lord", "red soldier 1t", "green heir"], step="reveal", index=1)
    events = g.apply(REVEAL)
    assert_events(events, [Revealed(0, 1, C("red soldier"), 1), Scored(0, 1, "tokens")])
    assert g.decision == Decision(0, Step.ELIMINATE, (Target(0), Target(2)), 1)
    events = g.apply(Target(0))
    assert_events(
        events,
        [
            AbilityUsed(0, 1, "soldier", 0),
            Eliminated(0, C("blue lord"), 1, 1, 0, 0),
            Scored(0, 1, "eliminate"),
        ],
    )
    # The slot after the Soldier is next, although every index moved down.
    assert describe(g) == ["#1 red soldier up", "#2 green heir"]
    assert g.decision == Decision(2, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 2)


# ------------------------------------------------------- 3. face down / face up


def test_ruling_03_a_kept_card_gains_one_token() -> None:
    g = position(["red heir 2t", "blue spy"], step="reveal", index=0, scores=[3, 3, 3])
    assert g.decision == Decision(0, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 0)
    events = g.apply(KEEP)
    assert_events(events, [Kept(0, 0, 3)])
    assert describe(g) == ["#0 red heir 3t", "#1 blue spy"]
    assert g.scores == [3, 3, 3]
    assert g.decision == Decision(1, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 1)


def test_ruling_03_a_revealed_card_pays_its_tokens_then_its_ability_applies() -> None:
    g = position(["red heir 2t", "blue spy"], step="reveal", index=0)
    events = g.apply(REVEAL)
    assert_events(
        events,
        [
            Revealed(0, 0, C("red heir"), 2),
            Scored(0, 2, "tokens"),
            AbilityUsed(0, 0, "heir", None),
            Scored(0, 2, "heir"),
        ],
    )
    assert describe(g) == ["#0 red heir up", "#1 blue spy"]
    assert g.scores == [5, 1, 1]


def test_ruling_03_a_face_up_card_acts_again_every_round() -> None:
    g = position(
        ["red lord up", "blue heir"],
        placed=2,
        hands=[["red spy"], ["blue spy"], ["green spy", "green archer"]],
    )
    events = g.apply(Place(C("green archer"), LAST))
    assert_events(
        events,
        [
            Placed(2, 2, C("green archer"), LAST, 2),
            AbilityUsed(0, 0, "lord", None),
            Scored(0, 1, "lord"),
        ],
    )
    g.apply(KEEP)  # blue heir
    events = g.apply(KEEP)  # green archer
    assert_events(events, [Kept(2, 2, 1), RoundEnded(2), RoundStarted(3, 1)])
    g.apply(Place(C("blue spy"), LAST))
    g.apply(Place(C("green spy"), LAST))
    events = g.apply(Place(C("red spy"), LAST))
    assert_events(
        events,
        [
            Placed(0, 5, C("red spy"), LAST, 5),
            AbilityUsed(0, 0, "lord", None),
            Scored(0, 1, "lord"),
        ],
    )
    assert g.scores == [3, 1, 1]
    assert g.decision == Decision(1, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 1)


# ---------------------------------------------------------- 4. mandatory abilities


def test_ruling_04_an_ability_applies_even_against_your_own_card() -> None:
    g = position(["red lord 1t", "red soldier"], step="reveal", index=1)
    events = g.apply(REVEAL)
    assert_events(
        events[:4],
        [
            Revealed(0, 1, C("red soldier"), 0),
            AbilityUsed(0, 1, "soldier", 0),
            Eliminated(0, C("red lord"), 0, 1, 0, 1),
            Scored(0, 1, "eliminate"),
        ],
    )
    assert describe(g) == ["#1 red soldier up"]
    assert fronts(g) == [["red lord"], [], []]
    assert g.scores == [2, 1, 1]


def test_ruling_04_no_legal_option_means_no_effect_and_no_point() -> None:
    g = position(["red soldier"], step="reveal", index=0)
    events = g.apply(REVEAL)
    assert_events(
        events,
        [
            Revealed(0, 0, C("red soldier"), 0),
            NoEffect(0, 0, "soldier"),
            RoundEnded(2),
            RoundStarted(3, 1),
        ],
    )
    assert g.scores == [1, 1, 1]
    assert describe(g) == ["#0 red soldier up"]


def test_ruling_04_a_face_up_card_cannot_pass() -> None:
    g = position(
        ["blue lord", "red soldier up", "green heir"], step="eliminate", index=1, ability="soldier"
    )
    assert g.decision == Decision(0, Step.ELIMINATE, (Target(0), Target(2)), 1)
    assert_illegal(g, KEEP, "choose a card to eliminate with a target")
    assert_illegal(g, Target(1), "card 1 is not a legal choice to eliminate for this soldier")


# ------------------------------------------------------ 5. eliminate and discard


def test_ruling_05_eliminated_card_turns_face_up_loses_tokens_and_lies_before_its_owner() -> None:
    g = position(
        ["blue conspiracy 3t", "red soldier up", "green lord"],
        step="eliminate",
        index=1,
        ability="soldier",
    )
    events = g.apply(Target(0))
    assert_events(
        events,
        [
            AbilityUsed(0, 1, "soldier", 0),
            Eliminated(0, C("blue conspiracy"), 1, 1, 0, 3),
            Scored(0, 1, "eliminate"),
        ],
    )
    assert fronts(g) == [[], ["blue conspiracy"], []]
    assert g.scores == [2, 1, 1]  # the 3 tokens went to the supply, not to blue
    assert describe(g) == ["#1 red soldier up", "#2 green lord"]
    assert g.decision == Decision(2, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 2)


def test_ruling_05_discarded_card_lies_before_its_owner_and_scores_nothing() -> None:
    g = position(["red assassination 2t", "blue lord", "green spy"], step="reveal", index=0)
    g.apply(REVEAL)
    events = g.apply(Target(2))
    assert_events(
        events,
        [
            AbilityUsed(0, 0, "assassination", 2),
            Eliminated(2, C("green spy"), 2, 0, 0, 0),
            Scored(0, 1, "eliminate"),
            Discarded(0, C("red assassination"), 0, "used", 0),
        ],
    )
    assert fronts(g) == [["red assassination"], [], ["green spy"]]
    assert g.scores == [4, 1, 1]  # 2 tokens + 1 for the elimination, nothing for the discard
    assert describe(g) == ["#1 blue lord"]
    assert g.decision == Decision(1, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 1)


# ---------------------------------------------------- 6. uncovered in resolution


def test_ruling_06_card_uncovered_after_intrigue_is_handled_at_once() -> None:
    g = position(
        [["red heir 1t", "red assassination"], "blue lord", "green spy"], step="reveal", index=0
    )
    g.apply(REVEAL)
    assert g.decision == Decision(0, Step.ELIMINATE, (Target(1), Target(2), Target(3)), 1)
    events = g.apply(Target(3))
    assert_events(
        events,
        [
            AbilityUsed(0, 1, "assassination", 3),
            Eliminated(3, C("green spy"), 2, 1, 0, 0),
            Scored(0, 1, "eliminate"),
            Discarded(1, C("red assassination"), 0, "used", 0),
            Uncovered(0, False),
        ],
    )
    # The face-down Heir under it is next, before the Lord.
    assert g.decision == Decision(0, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 0)
    assert_events(g.apply(KEEP), [Kept(0, 0, 2)])
    assert g.decision == Decision(1, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 2)


def test_ruling_06_face_up_card_uncovered_after_intrigue_acts_at_once() -> None:
    # The Polish rulebook's example: an Assassination covering a revealed Spy.
    g = position(
        [["red spy up", "red assassination"], "blue lord", "green heir"], step="reveal", index=0
    )
    g.apply(REVEAL)
    events = g.apply(Target(3))
    assert_events(
        events,
        [
            AbilityUsed(0, 1, "assassination", 3),
            Eliminated(3, C("green heir"), 2, 1, 0, 0),
            Scored(0, 1, "eliminate"),
            Discarded(1, C("red assassination"), 0, "used", 0),
            Uncovered(0, True),
            AbilityUsed(0, 0, "spy", 2),
            Stolen(0, 1, 1),
        ],
    )
    assert g.scores == [3, 0, 1]
    assert g.decision == Decision(1, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 2)


def test_ruling_06_card_under_an_archer_that_shot_itself_is_handled_at_once() -> None:
    g = position(
        [["red lord 2t", "red archer up"], "blue spy"], step="eliminate", index=0, ability="archer"
    )
    assert g.decision == Decision(0, Step.ELIMINATE, (Target(1), Target(2)), 1)
    events = g.apply(Target(1))
    assert_events(
        events,
        [
            AbilityUsed(0, 1, "archer", 1),
            Eliminated(1, C("red archer"), 0, 1, 0, 0),
            Uncovered(0, False),
            Scored(0, 1, "eliminate"),
        ],
    )
    assert g.decision == Decision(0, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 0)
    events = g.apply(REVEAL)
    assert_events(
        events,
        [
            Revealed(0, 0, C("red lord"), 2),
            Scored(0, 2, "tokens"),
            AbilityUsed(0, 0, "lord", None),
            Scored(0, 1, "lord"),
        ],
    )
    assert g.decision == Decision(1, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 2)


def test_ruling_06_card_under_an_attacker_discarded_by_an_ambush_is_handled_at_once() -> None:
    g = position(
        [["red heir up", "red soldier"], "blue ambush 2t", "green lord"], step="reveal", index=0
    )
    events = g.apply(REVEAL)
    assert_events(
        events,
        [
            Revealed(0, 1, C("red soldier"), 0),
            AbilityUsed(0, 1, "soldier", 2),
            Eliminated(2, C("blue ambush"), 1, 1, 0, 2),
            Scored(0, 1, "eliminate"),
            Scored(1, 4, "ambush"),
            Discarded(1, C("red soldier"), 0, "ambush", 0),
            Uncovered(0, True),
            AbilityUsed(0, 0, "heir", None),
            Scored(0, 2, "heir"),
        ],
    )
    assert describe(g) == ["#0 red heir up", "#3 green lord"]
    assert g.decision == Decision(2, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 3)


def test_ruling_06_card_uncovered_in_a_passed_slot_does_nothing_this_round() -> None:
    g = position(
        [["blue lord", "blue spy 1t"], "red soldier", "green heir"], step="reveal", index=1
    )
    g.apply(REVEAL)
    events = g.apply(Target(1))
    assert_events(
        events,
        [
            AbilityUsed(0, 2, "soldier", 1),
            Eliminated(1, C("blue spy"), 1, 2, 0, 1),
            Uncovered(0, False),
            Scored(0, 1, "eliminate"),
        ],
    )
    assert g.decision == Decision(2, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 3)
    events = g.apply(KEEP)
    # No decision and no token for the uncovered Lord this round.
    assert_events(events, [Kept(2, 3, 1), RoundEnded(2), RoundStarted(3, 1)])
    assert describe(g) == ["#0 blue lord", "#2 red soldier up", "#3 green heir 1t"]
    # Next round it is handled when reached (it resolves first).
    g.apply(Place(C("blue archer"), LAST))
    g.apply(Place(C("green archer"), LAST))
    g.apply(Place(C("red archer"), LAST))
    assert g.decision == Decision(1, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 0)


def test_ruling_06_card_uncovered_in_a_slot_not_yet_reached_is_handled_when_reached() -> None:
    g = position(["red soldier", ["blue lord", "blue spy"], "green heir"], step="reveal", index=0)
    events = g.apply(REVEAL)
    assert_events(
        events,
        [
            Revealed(0, 0, C("red soldier"), 0),
            AbilityUsed(0, 0, "soldier", 2),
            Eliminated(2, C("blue spy"), 1, 0, 0, 0),
            Uncovered(1, False),
            Scored(0, 1, "eliminate"),
        ],
    )
    assert g.decision == Decision(1, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 1)
    assert_events(g.apply(KEEP), [Kept(1, 1, 1)])
    assert g.decision == Decision(2, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 3)


# ------------------------------------------------------------------- 7. archer


def test_ruling_07_archer_eliminates_the_first_or_the_last_top_card() -> None:
    g = position(
        [
            ["red spy", "red heir 1t"],  # 0, 1
            "blue lord",  # 2
            "green archer up",  # 3
            ["blue soldier", "blue conspiracy 2t"],  # 4, 5
        ],
        step="eliminate",
        index=2,
        ability="archer",
    )
    assert g.decision == Decision(2, Step.ELIMINATE, (Target(1), Target(5)), 3)
    assert_illegal(g, Target(2), "card 2 is not a legal choice")
    assert_illegal(g, Target(0), "card 0 is not a legal choice")
    events = g.apply(Target(5))
    assert_events(
        events,
        [
            AbilityUsed(2, 3, "archer", 5),
            Eliminated(5, C("blue conspiracy"), 1, 3, 2, 2),
            Uncovered(4, False),
            Scored(2, 1, "eliminate"),
        ],
    )
    assert g.decision == Decision(1, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 4)


def test_ruling_07_archer_may_eliminate_itself() -> None:
    g = position(
        ["green archer up", "blue lord", "red spy"], step="eliminate", index=0, ability="archer"
    )
    assert g.decision == Decision(2, Step.ELIMINATE, (Target(0), Target(2)), 0)
    events = g.apply(Target(0))
    assert_events(
        events,
        [
            AbilityUsed(2, 0, "archer", 0),
            Eliminated(0, C("green archer"), 2, 0, 2, 0),
            Scored(2, 1, "eliminate"),
        ],
    )
    assert fronts(g) == [[], [], ["green archer"]]
    assert g.decision == Decision(1, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 1)


def test_ruling_07_a_lone_archer_must_eliminate_itself_and_still_gains_one() -> None:
    g = position(["red archer 1t"], step="reveal", index=0)
    events = g.apply(REVEAL)
    assert_events(
        events,
        [
            Revealed(0, 0, C("red archer"), 1),
            Scored(0, 1, "tokens"),
            AbilityUsed(0, 0, "archer", 0),
            Eliminated(0, C("red archer"), 0, 0, 0, 0),
            Scored(0, 1, "eliminate"),
            RoundEnded(2),
            RoundStarted(3, 1),
        ],
    )
    assert g.queue == []
    assert g.scores == [3, 1, 1]
    assert fronts(g) == [["red archer"], [], []]


# ------------------------------------------------------------------ 8. soldier


def test_ruling_08_soldier_eliminates_an_adjacent_top_card_never_itself() -> None:
    g = position(
        [["red lord", "red heir"], "blue soldier up", "green spy"],
        step="eliminate",
        index=1,
        ability="soldier",
    )
    assert g.decision == Decision(1, Step.ELIMINATE, (Target(1), Target(3)), 2)
    assert_illegal(g, Target(2), "card 2 is not a legal choice")  # itself
    assert_illegal(g, Target(0), "card 0 is not a legal choice")  # covered
    events = g.apply(Target(1))
    assert_events(
        events,
        [
            AbilityUsed(1, 2, "soldier", 1),
            Eliminated(1, C("red heir"), 0, 2, 1, 0),
            Uncovered(0, False),
            Scored(1, 1, "eliminate"),
        ],
    )
    assert describe(g) == ["#0 red lord", "#2 blue soldier up", "#3 green spy"]


def test_ruling_08_soldier_without_a_neighbour_has_no_effect() -> None:
    g = position(["blue soldier 2t"], step="reveal", index=0)
    events = g.apply(REVEAL)
    assert_events(
        events[:3],
        [
            Revealed(1, 0, C("blue soldier"), 2),
            Scored(1, 2, "tokens"),
            NoEffect(1, 0, "soldier"),
        ],
    )
    assert g.scores == [1, 3, 1]
    assert describe(g) == ["#0 blue soldier up"]


# ---------------------------------------------------------------------- 9. spy


def test_ruling_09_spy_steals_from_the_owners_pile_not_from_the_card() -> None:
    g = position(
        ["red lord 3t", "blue spy up", "green heir 2t"],
        step="steal",
        index=1,
        ability="spy",
        scores=[2, 1, 4],
    )
    assert g.decision == Decision(1, Step.STEAL, (Target(0), Target(2)), 1)
    events = g.apply(Target(2))
    assert_events(events, [AbilityUsed(1, 1, "spy", 2), Stolen(1, 2, 1)])
    assert g.scores == [2, 2, 3]
    assert describe(g) == ["#0 red lord 3t", "#1 blue spy up", "#2 green heir 2t"]


def test_ruling_09_spy_must_choose_an_adjacent_opponent() -> None:
    g = position(["red lord", "red spy", "blue heir"], step="reveal", index=1)
    events = g.apply(REVEAL)
    # The only legal choice (Blue) is applied without asking.
    assert_events(
        events,
        [Revealed(0, 1, C("red spy"), 0), AbilityUsed(0, 1, "spy", 2), Stolen(0, 1, 1)],
    )
    assert g.scores == [2, 0, 1]
    assert g.decision == Decision(1, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 2)


def test_ruling_09_spy_next_only_to_your_own_cards_steals_nothing() -> None:
    g = position(["red lord", "red spy"], step="reveal", index=1, scores=[3, 3, 3])
    events = g.apply(REVEAL)
    assert_events(
        events[:3],
        [Revealed(0, 1, C("red spy"), 0), AbilityUsed(0, 1, "spy", 0), Stolen(0, 0, 0)],
    )
    assert g.scores == [3, 3, 3]


def test_ruling_09_a_player_at_zero_loses_nothing() -> None:
    g = position(["red spy", "blue lord"], step="reveal", index=0, scores=[1, 0, 1])
    events = g.apply(REVEAL)
    assert_events(
        events,
        [Revealed(0, 0, C("red spy"), 0), AbilityUsed(0, 0, "spy", 1), Stolen(0, 1, 0)],
    )
    assert g.scores == [1, 0, 1]


# --------------------------------------------------------------------- 10. heir


def test_ruling_10_heir_gains_two_when_no_other_face_up_heir_is_on_top() -> None:
    # A face-down Heir and a covered face-up Heir do not count.
    g = position(["blue heir", ["green heir up", "green lord"], "red heir"], step="reveal", index=2)
    events = g.apply(REVEAL)
    assert_events(
        events[:3],
        [Revealed(0, 3, C("red heir"), 0), AbilityUsed(0, 3, "heir", None), Scored(0, 2, "heir")],
    )
    assert g.scores == [3, 1, 1]


def test_ruling_10_two_face_up_heirs_block_each_other() -> None:
    g = position(["red heir", "blue heir up"], step="reveal", index=0)
    events = g.apply(REVEAL)
    assert_events(
        events[:3],
        [
            Revealed(0, 0, C("red heir"), 0),
            AbilityUsed(0, 0, "heir", None),
            AbilityUsed(1, 1, "heir", None),
        ],
    )
    assert type(events[3]) is RoundEnded
    assert g.scores == [1, 1, 1]


def test_ruling_10_shapeshifter_copying_an_heir_checks_for_other_shapeshifters() -> None:
    # A face-up Heir elsewhere does not block the Shapeshifter's copy...
    g = position(["red heir up", "blue shapeshifter", "green lord"], step="reveal", index=1)
    events = g.apply(REVEAL)
    assert_events(
        events,
        [
            Revealed(1, 1, C("blue shapeshifter"), 0),
            AbilityUsed(1, 1, "shapeshifter", 0),
            AbilityUsed(1, 1, "heir", None),
            Scored(1, 2, "heir"),
        ],
    )
    # ...but another face-up Shapeshifter does.
    g = position(
        ["green shapeshifter up", "red heir up", "blue shapeshifter"], step="reveal", index=2
    )
    events = g.apply(REVEAL)
    assert_events(
        events[:3],
        [
            Revealed(1, 2, C("blue shapeshifter"), 0),
            AbilityUsed(1, 2, "shapeshifter", 1),
            AbilityUsed(1, 2, "heir", None),
        ],
    )
    assert type(events[3]) is RoundEnded
    assert g.scores == [1, 1, 1]


# --------------------------------------------------------------------- 11. lord


def test_ruling_11_lord_gains_one_plus_one_per_adjacent_own_slot() -> None:
    # Left: an own stack (counts once); right: an own face-down card.
    g = position(
        [["red spy", "red heir up"], "red lord", "red conspiracy 1t", "blue lord"],
        step="reveal",
        index=1,
    )
    events = g.apply(REVEAL)
    assert_events(
        events[:3],
        [Revealed(0, 2, C("red lord"), 0), AbilityUsed(0, 2, "lord", None), Scored(0, 3, "lord")],
    )
    assert g.scores == [4, 1, 1]


def test_ruling_11_lord_counts_no_opponent_neighbour() -> None:
    g = position(["blue spy", "red lord", "green heir up", "red spy"], step="reveal", index=1)
    events = g.apply(REVEAL)
    assert_events(
        events[:3],
        [Revealed(0, 1, C("red lord"), 0), AbilityUsed(0, 1, "lord", None), Scored(0, 1, "lord")],
    )
    g = position(["blue spy", "red lord", "red heir"], step="reveal", index=1)
    events = g.apply(REVEAL)
    assert events[2] == Scored(0, 2, "lord")


# ------------------------------------------------------------- 12. shapeshifter


def test_ruling_12_shapeshifter_copies_only_adjacent_face_up_top_characters() -> None:
    g = position(
        [
            ["blue spy up", "blue soldier up"],  # 0 covered, 1 top
            "red shapeshifter up",  # 2
            "green lord up",  # 3
        ],
        step="copy",
        index=1,
        ability="shapeshifter",
    )
    assert g.decision == Decision(0, Step.COPY, (Target(1), Target(3)), 2)
    assert_illegal(g, Target(0), "card 0 is not a legal choice to copy")
    assert_illegal(g, Target(2), "card 2 is not a legal choice to copy")
    # A face-down neighbour and a Shapeshifter are not offered.
    g = position(
        ["blue soldier", "red shapeshifter", "green shapeshifter up"], step="reveal", index=1
    )
    events = g.apply(REVEAL)
    assert_events(
        events[:2], [Revealed(0, 1, C("red shapeshifter"), 0), NoEffect(0, 1, "shapeshifter")]
    )


def test_ruling_12_the_copy_acts_from_the_shapeshifters_slot_for_its_owner() -> None:
    g = position(
        ["green heir", "blue soldier up", "red shapeshifter", "green lord"],
        step="reveal",
        index=2,
    )
    events = g.apply(REVEAL)
    assert_events(
        events,
        [Revealed(0, 2, C("red shapeshifter"), 0), AbilityUsed(0, 2, "shapeshifter", 1)],
    )
    # Soldier targets around the Shapeshifter, not around the copied Soldier.
    assert g.decision == Decision(0, Step.ELIMINATE, (Target(1), Target(3)), 2)
    events = g.apply(Target(3))
    assert_events(
        events[:3],
        [
            AbilityUsed(0, 2, "soldier", 3),
            Eliminated(3, C("green lord"), 2, 2, 0, 0),
            Scored(0, 1, "eliminate"),
        ],
    )
    assert g.scores == [2, 1, 1]
    assert describe(g) == ["#0 green heir", "#1 blue soldier up", "#2 red shapeshifter up"]


def test_ruling_12_the_copy_lasts_for_one_resolution() -> None:
    g = position(
        ["red lord up", "blue shapeshifter", "green heir up"],
        step="reveal",
        index=1,
        hands=[["red spy"], ["blue spy"], ["green spy"]],
    )
    g.apply(REVEAL)
    assert g.decision == Decision(1, Step.COPY, (Target(0), Target(2)), 1)
    events = g.apply(Target(0))
    assert_events(
        events[:4],
        [
            AbilityUsed(1, 1, "shapeshifter", 0),
            AbilityUsed(1, 1, "lord", None),
            Scored(1, 1, "lord"),
            AbilityUsed(2, 2, "heir", None),
        ],
    )
    g.apply(Place(C("blue spy"), LAST))
    g.apply(Place(C("green spy"), LAST))
    g.apply(Place(C("red spy"), LAST))
    # Round 3: the Lord acts, then the Shapeshifter chooses again.
    assert g.decision == Decision(1, Step.COPY, (Target(0), Target(2)), 1)
    events = g.apply(Target(2))
    assert_events(
        events[:5],
        [
            AbilityUsed(1, 1, "shapeshifter", 2),
            AbilityUsed(1, 1, "heir", None),
            Scored(1, 2, "heir"),
            # The Shapeshifter kept its name: the Heir still earns.
            AbilityUsed(2, 2, "heir", None),
            Scored(2, 2, "heir"),
        ],
    )
    assert describe(g)[1] == "#1 blue shapeshifter up"


# ------------------------------------------------------------ 13. assassination


def test_ruling_13_assassination_eliminates_any_top_card_anywhere() -> None:
    g = position(
        [["red lord", "red spy"], "blue assassination", "green heir up", "red soldier 2t"],
        step="reveal",
        index=1,
    )
    g.apply(REVEAL)
    assert g.decision == Decision(
        1, Step.ELIMINATE, (Target(1), Target(2), Target(3), Target(4)), 2
    )
    events = g.apply(Target(4))
    assert_events(
        events,
        [
            AbilityUsed(1, 2, "assassination", 4),
            Eliminated(4, C("red soldier"), 0, 2, 1, 2),
            Scored(1, 1, "eliminate"),
            Discarded(2, C("blue assassination"), 1, "used", 0),
            AbilityUsed(2, 3, "heir", None),
            Scored(2, 2, "heir"),
            RoundEnded(2),
            RoundStarted(3, 1),
        ],
    )
    assert fronts(g) == [["red soldier"], ["blue assassination"], []]


def test_ruling_13_assassination_may_eliminate_itself_and_gains_one() -> None:
    g = position(["blue assassination 2t", "green heir"], step="reveal", index=0)
    g.apply(REVEAL)
    assert g.decision == Decision(1, Step.ELIMINATE, (Target(0), Target(1)), 0)
    events = g.apply(Target(0))
    assert_events(
        events,
        [
            AbilityUsed(1, 0, "assassination", 0),
            Eliminated(0, C("blue assassination"), 1, 0, 1, 0),
            Scored(1, 1, "eliminate"),
        ],
    )
    assert g.scores == [1, 4, 1]
    assert fronts(g) == [[], ["blue assassination"], []]
    assert g.decision == Decision(2, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 1)


# ------------------------------------------------------------- 14. royal decree


def test_ruling_14_decree_moves_any_other_top_card_to_any_gap_or_end() -> None:
    g = position(
        [["red spy", "red heir up"], "blue lord", "red royal_decree", "green soldier 2t"],
        step="reveal",
        index=2,
    )
    g.apply(REVEAL)
    # Any owner, face up or down; not itself, not a covered card.
    assert g.decision == Decision(0, Step.MOVE_CARD, (Target(1), Target(2), Target(4)), 3)
    assert_illegal(g, Target(3), "card 3 is not a legal choice to move")
    assert_illegal(g, Target(0), "card 0 is not a legal choice to move")
    events = g.apply(Target(4))
    assert events == []
    # A lone card is not offered its own place back.
    assert g.decision == Decision(0, Step.MOVE_TO, (MoveTo(0), MoveTo(1), MoveTo(2)), 3)
    events = g.apply(MoveTo(0))
    assert_events(
        events[:3],
        [
            AbilityUsed(0, 3, "royal_decree", 4),
            Moved(4, 0),
            Discarded(3, C("red royal_decree"), 0, "used", 0),
        ],
    )
    # Moved ahead of the Decree with its tokens: skipped, no token this round.
    assert events[3:] == [RoundEnded(2), RoundStarted(3, 1)]
    assert describe(g) == ["#4 green soldier 2t", ["#0 red spy", "#1 red heir up"], "#2 blue lord"]


def test_ruling_14_card_moved_behind_the_decree_resolves_again() -> None:
    g = position(["blue lord up", "red royal_decree", "green heir"], step="reveal", index=1)
    g.apply(REVEAL)
    assert g.decision == Decision(0, Step.MOVE_CARD, (Target(0), Target(2)), 1)
    g.apply(Target(0))
    assert g.decision == Decision(0, Step.MOVE_TO, (MoveTo(1), MoveTo(2)), 1)
    events = g.apply(MoveTo(2))
    assert_events(
        events,
        [
            AbilityUsed(0, 1, "royal_decree", 0),
            Moved(0, 2),
            Discarded(1, C("red royal_decree"), 0, "used", 0),
        ],
    )
    assert describe(g) == ["#2 green heir", "#0 blue lord up"]
    assert g.decision == Decision(2, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 2)
    events = g.apply(KEEP)
    assert_events(
        events[:3], [Kept(2, 2, 1), AbilityUsed(1, 0, "lord", None), Scored(1, 1, "lord")]
    )


def test_ruling_14_decree_continues_with_the_slot_after_its_old_place() -> None:
    g = position(
        ["blue lord", "red royal_decree", "green heir", "blue spy"], step="reveal", index=1
    )
    g.apply(REVEAL)
    g.apply(Target(3))
    assert g.decision == Decision(0, Step.MOVE_TO, (MoveTo(0), MoveTo(1), MoveTo(2)), 1)
    g.apply(MoveTo(0))
    assert describe(g) == ["#3 blue spy", "#0 blue lord", "#2 green heir"]
    assert g.decision == Decision(2, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 2)
    events = g.apply(KEEP)
    assert_events(events, [Kept(2, 2, 1), RoundEnded(2), RoundStarted(3, 1)])
    assert describe(g) == ["#3 blue spy", "#0 blue lord", "#2 green heir 1t"]


def test_ruling_14_moving_a_stack_top_uncovers_the_card_below() -> None:
    g = position(
        [["green lord", "green heir 1t"], "red royal_decree", "blue spy"], step="reveal", index=1
    )
    g.apply(REVEAL)
    g.apply(Target(1))
    # From a stack every gap and end is a move: 3 slots, 4 places.
    assert g.decision == Decision(0, Step.MOVE_TO, tuple(MoveTo(i) for i in range(4)), 2)
    events = g.apply(MoveTo(3))
    assert_events(
        events,
        [
            AbilityUsed(0, 2, "royal_decree", 1),
            Moved(1, 3),
            Uncovered(0, False),
            Discarded(2, C("red royal_decree"), 0, "used", 0),
        ],
    )
    assert describe(g) == ["#0 green lord", "#3 blue spy", "#1 green heir 1t"]
    assert g.decision == Decision(1, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 3)
    g.apply(KEEP)
    assert g.decision == Decision(2, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 1)


def test_ruling_14_decree_on_a_stack_uncovered_card_acts_before_a_card_moved_behind() -> None:
    g = position(
        [["red heir up", "red royal_decree"], "blue lord", "green spy"], step="reveal", index=0
    )
    g.apply(REVEAL)
    g.apply(Target(3))
    assert g.decision == Decision(0, Step.MOVE_TO, (MoveTo(0), MoveTo(1)), 1)
    events = g.apply(MoveTo(1))
    assert_events(
        events,
        [
            AbilityUsed(0, 1, "royal_decree", 3),
            Moved(3, 1),
            Discarded(1, C("red royal_decree"), 0, "used", 0),
            Uncovered(0, True),
            AbilityUsed(0, 0, "heir", None),
            Scored(0, 2, "heir"),
        ],
    )
    assert describe(g) == ["#0 red heir up", "#3 green spy", "#2 blue lord"]
    assert g.decision == Decision(2, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 3)


def test_ruling_14_decree_with_no_other_card_has_no_effect() -> None:
    g = position(["red royal_decree 1t"], step="reveal", index=0)
    events = g.apply(REVEAL)
    assert_events(
        events,
        [
            Revealed(0, 0, C("red royal_decree"), 1),
            Scored(0, 1, "tokens"),
            NoEffect(0, 0, "royal_decree"),
            Discarded(0, C("red royal_decree"), 0, "used", 0),
            RoundEnded(2),
            RoundStarted(3, 1),
        ],
    )
    assert g.queue == []
    assert fronts(g) == [["red royal_decree"], [], []]


# ------------------------------------------------------------------- 15. ambush


def test_ruling_15_ambush_revealed_by_its_owner() -> None:
    g = position(["red ambush 3t", "blue lord"], step="reveal", index=0)
    events = g.apply(REVEAL)
    assert_events(
        events,
        [
            Revealed(0, 0, C("red ambush"), 3),
            AbilityUsed(0, 0, "ambush", None),
            Scored(0, 1, "ambush"),
            Discarded(0, C("red ambush"), 0, "used", 0),
        ],
    )
    assert g.scores == [2, 1, 1]  # the 3 tokens went to the supply
    assert fronts(g) == [["red ambush"], [], []]
    assert g.decision == Decision(1, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 1)


def test_ruling_15_ambush_eliminated_by_an_opponent_discards_the_attacker() -> None:
    g = position(["red ambush 2t", "blue soldier", "green lord"], step="reveal", index=1)
    g.apply(REVEAL)
    events = g.apply(Target(0))
    assert_events(
        events,
        [
            AbilityUsed(1, 1, "soldier", 0),
            Eliminated(0, C("red ambush"), 0, 1, 1, 2),
            Scored(1, 1, "eliminate"),
            Scored(0, 4, "ambush"),
            Discarded(1, C("blue soldier"), 1, "ambush", 0),
        ],
    )
    assert g.scores == [5, 2, 1]
    assert fronts(g) == [["red ambush"], ["blue soldier"], []]
    assert describe(g) == ["#2 green lord"]
    assert g.decision == Decision(2, Step.REVEAL_OR_KEEP, KEEP_OR_REVEAL, 2)


def test_ruling_15_ambush_eliminated_by_a_shapeshifters_copy() -> None:
    g = position(["red ambush", "blue shapeshifter", "green soldier up"], step="reveal", index=1)
    g.apply(REVEAL)
    assert g.decision == Decision(1, Step.ELIMINATE, (Target(0), Target(2)), 1)
    events = g.apply(Target(0))
    assert_events(
        events,
        [
            AbilityUsed(1, 1, "soldier", 0),
            Eliminated(0, C("red ambush"), 0, 1, 1, 0),
            Scored(1, 1, "eliminate"),
            Scored(0, 4, "ambush"),
            Discarded(1, C("blue shapeshifter"), 1, "ambush", 0),
            NoEffect(2, 2, "soldier"),
            RoundEnded(2),
            RoundStarted(3, 1),
        ],
    )
    assert g.scores == [5, 2, 1]


def test_ruling_15_ambush_eliminated_by_its_owners_card_revised_edition() -> None:
    g = position(["red ambush 1t", "red soldier", "blue lord"], step="reveal", index=1)
    g.apply(REVEAL)
    assert g.decision == Decision(0, Step.ELIMINATE, (Target(0), Target(2)), 1)
    events = g.apply(Target(0))
    assert_events(
        events,
        [
            AbilityUsed(0, 1, "soldier", 0),
            Eliminated(0, C("red ambush"), 0, 1, 0, 1),
            Scored(0, 1, "eliminate"),
        ],
    )
    assert g.scores == [2, 1, 1]
    assert describe(g) == ["#1 red soldier up", "#2 blue lord"]  # the attacker stays
    assert fronts(g) == [["red ambush"], [], []]


def test_ruling_15_ambush_eliminated_by_its_owners_card_first_edition() -> None:
    g = position(
        ["red ambush 1t", "red soldier", "blue lord"], step="reveal", index=1, edition="first"
    )
    g.apply(REVEAL)
    events = g.apply(Target(0))
    assert_events(
        events,
        [
            AbilityUsed(0, 1, "soldier", 0),
            Eliminated(0, C("red ambush"), 0, 1, 0, 1),
            Scored(0, 1, "eliminate"),
            Scored(0, 1, "ambush"),
        ],
    )
    assert g.scores == [3, 1, 1]
    assert describe(g) == ["#1 red soldier up", "#2 blue lord"]


# --------------------------------------------------------------- 16. conspiracy


def test_ruling_16_conspiracy_pays_twice_its_tokens() -> None:
    g = position(["red conspiracy 3t", "blue lord"], step="reveal", index=0)
    events = g.apply(REVEAL)
    assert_events(
        events,
        [
            Revealed(0, 0, C("red conspiracy"), 3),
            Scored(0, 6, "conspiracy"),
            AbilityUsed(0, 0, "conspiracy", None),
            Discarded(0, C("red conspiracy"), 0, "used", 0),
        ],
    )
    assert g.scores == [7, 1, 1]
    assert fronts(g) == [["red conspiracy"], [], []]


# ---------------------------------------------------------------------- 17. end


def test_ruling_17_game_ends_after_round_six_tokens_on_cards_do_not_count() -> None:
    g = position(
        ["red conspiracy 4t", "green lord 1t"],
        round=6,
        first_player=2,
        placed=2,
        scores=[3, 5, 4],
        hands=[["red archer"], ["blue archer", "blue spy"], ["green archer"]],
    )
    assert g.placement_order() == [2, 0, 1]
    g.apply(Place(C("blue spy"), LAST))
    g.apply(KEEP)
    g.apply(KEEP)
    events = g.apply(KEEP)
    assert_events(events, [Kept(1, 2, 1), RoundEnded(6), GameEnded((3, 5, 4), (1,))])
    assert g.over and g.decision is None and g.legal_actions() == ()
    assert g.winners == (1,)
    # One card stays in each hand; it is never played.
    assert [hand(g, s) for s in range(3)] == [["red archer"], ["blue archer"], ["green archer"]]
    assert_illegal(g, KEEP, "the game is over")


def test_ruling_17_tie_goes_to_most_cards_in_the_queue_covered_and_face_down_included() -> None:
    g = position(
        [["red spy", "red lord"], "blue heir up", "green lord 1t"],
        round=6,
        step="reveal",
        index=2,
        scores=[4, 2, 4],
    )
    events = g.apply(KEEP)
    # Red and Green tie at 4; Red has two cards in the queue (one covered).
    assert_events(events, [Kept(2, 3, 2), RoundEnded(6), GameEnded((4, 2, 4), (0,))])
    assert g.winners == (0,)


def test_ruling_17_still_tied_is_a_shared_win() -> None:
    g = position(
        ["red spy", "blue heir", "green lord 1t"], round=6, step="reveal", index=2, scores=[4, 4, 3]
    )
    events = g.apply(KEEP)
    assert_events(events, [Kept(2, 2, 2), RoundEnded(6), GameEnded((4, 4, 3), (0, 1))])
    assert g.winners == (0, 1)


def test_ruling_17_more_points_beat_more_cards() -> None:
    g = position(
        [["red spy", "red lord", "red heir"], "blue heir 3t"],
        round=6,
        step="reveal",
        index=1,
        scores=[4, 5, 1],
    )
    events = g.apply(KEEP)
    assert events[-1] == GameEnded((4, 5, 1), (1,))


# ------------------------------------------------------- 18. first player, supply


def test_ruling_18_everyone_starts_with_one_point() -> None:
    for players in (3, 4, 5):
        assert new_game(players, seed=players).scores == [1] * players
    assert new_game(2, variant="two-player", seed=2).scores == [1, 1]


def test_ruling_18_first_player_passes_clockwise_each_round() -> None:
    g = position(["red lord"], step="reveal", index=0, first_player=2)
    events = g.apply(KEEP)
    assert_events(events, [Kept(0, 0, 1), RoundEnded(2), RoundStarted(3, 0)])
    assert g.first_player == 0
    assert g.placement_order() == [0, 1, 2]
    assert g.decision is not None and g.decision.seat == 0


def test_ruling_18_the_supply_never_runs_out() -> None:
    g = position(["red conspiracy 80t"], step="reveal", index=0, scores=[150, 1, 1])
    events = g.apply(REVEAL)
    assert events[1] == Scored(0, 160, "conspiracy")
    assert g.scores == [310, 1, 1]


# ------------------------------------------------------------ 19. 2-player rules


def test_ruling_19_two_player_deal_two_families_hand_three_and_three_pile_of_eight() -> None:
    rules = Rules(2, "two-player")
    assert rules.families == ((0, 1), (2, 3))
    kinds = list(Kind)
    deal = layout_deal(rules, 1, [kinds, kinds[::-1]])
    green = [C(f"green {k.label}") for k in kinds]
    yellow = [C(f"yellow {k.label}") for k in kinds[::-1]]
    assert deal.set_aside == tuple(green[:3] + yellow[:3])
    assert deal.hand == tuple(green[3:6] + yellow[3:6])
    # The pile alternates families, the seat's first family on top.
    assert deal.draw_pile == (
        green[6], yellow[6], green[7], yellow[7], green[8], yellow[8], green[9], yellow[9]
    )  # fmt: skip
    g = new_game(2, variant="two-player", seed=4)
    assert [len(h) for h in g.hands] == [6, 6]
    assert [len(p) for p in g.draw_piles] == [8, 8]
    assert [len(s) for s in g.set_aside] == [6, 6]


def test_ruling_19_two_player_places_twice_alternating_and_draws_two() -> None:
    g = position(
        ["red lord 1t"],
        players=2,
        variant="two-player",
        step="reveal",
        index=0,
        first_player=0,
        hands=[["red spy", "blue spy"], ["green spy", "yellow spy"]],
        draw_piles=[
            ["red heir", "blue heir", "red archer"],
            ["green heir", "yellow heir", "green archer"],
        ],
    )
    g.apply(KEEP)
    assert g.round == 3 and g.first_player == 1
    assert hand(g, 0) == ["red spy", "blue spy", "red heir", "blue heir"]
    assert hand(g, 1) == ["green spy", "yellow spy", "green heir", "yellow heir"]
    assert [len(p) for p in g.draw_piles] == [1, 1]
    seats = []
    for c in ("green spy", "red spy", "yellow spy", "blue spy"):
        seats.append(g.decision.seat if g.decision else None)
        g.apply(Place(C(c), LAST))
    assert seats == [1, 0, 1, 0]


def test_ruling_19_own_families_are_opponents_lord_and_spy() -> None:
    # Lord: no bonus for your other family; a bonus for the same family.
    g = position(
        ["blue spy", "red lord", "red heir"],
        players=2,
        variant="two-player",
        step="reveal",
        index=1,
    )
    events = g.apply(REVEAL)
    assert events[2] == Scored(0, 2, "lord")
    # Spy next to your other family and next to nobody else: it is an
    # "opponent", so it is chosen, and stealing from yourself changes nothing.
    g = position(
        ["blue spy", "red spy"],
        players=2,
        variant="two-player",
        step="reveal",
        index=1,
        scores=[3, 3],
    )
    events = g.apply(REVEAL)
    assert_events(events[1:3], [AbilityUsed(0, 1, "spy", 0), Stolen(0, 0, 0)])
    assert g.scores == [3, 3]


def test_ruling_19_own_families_are_opponents_heirs_block_each_other() -> None:
    g = position(
        ["red heir", "blue heir up"], players=2, variant="two-player", step="reveal", index=0
    )
    events = g.apply(REVEAL)
    assert [e for e in events if type(e) is Scored] == []
    assert g.scores == [1, 1]


def test_ruling_19_own_other_family_ambush_is_an_own_card_ambush() -> None:
    g = position(
        ["blue ambush 2t", "red soldier", "green lord"],
        players=2,
        variant="two-player",
        step="reveal",
        index=1,
    )
    g.apply(REVEAL)
    events = g.apply(Target(0))
    assert_events(
        events,
        [
            AbilityUsed(0, 1, "soldier", 0),
            Eliminated(0, C("blue ambush"), 0, 1, 0, 2),
            Scored(0, 1, "eliminate"),
        ],
    )
    assert g.scores == [2, 1]
    assert describe(g) == ["#1 red soldier up", "#2 green lord"]


# -------------------------------------------------------------------- 20. start


def test_ruling_20_the_rooms_first_player_chooses_the_direction_before_placing() -> None:
    g = new_game(4, first_player=2, seed=8)
    assert g.decision == Decision(
        2, Step.DIRECTION, (ChooseDirection(LEFT_TO_RIGHT), ChooseDirection(RIGHT_TO_LEFT)), None
    )
    assert_illegal(g, ChooseDirection(LEFT_TO_RIGHT), "not your turn: seat 2", seat=0)
    assert_illegal(g, Place(g.hands[2][0], FIRST), "choose the direction")
    assert_illegal(g, ChooseDirection("up-down"), "choose the direction")
    events = g.apply(ChooseDirection(RIGHT_TO_LEFT), seat=2)
    assert_events(events, [DirectionChosen(2, RIGHT_TO_LEFT), RoundStarted(1, 2)])
    assert g.decision is not None and (g.decision.seat, g.decision.kind) == (2, "place")
    assert g.placement_order() == [2, 3, 0, 1]


def test_ruling_20_the_direction_never_changes() -> None:
    g = new_game(3, first_player=1, seed=11)
    g.apply(ChooseDirection(RIGHT_TO_LEFT))
    assert_illegal(g, ChooseDirection(LEFT_TO_RIGHT), "expected a placement")
    player = RandomPlayer(seed=11)
    kinds = set()
    while not g.over:
        assert g.decision is not None
        kinds.add(g.decision.kind)
        g.apply(player.choose(g))
        assert to_data(g)["direction"] == RIGHT_TO_LEFT
    assert "direction" not in kinds
    assert g.round == 6


# ------------------------------------------------------------------ 21. viewing


def test_ruling_21_each_seat_sees_its_own_secrets_and_every_public_fact() -> None:
    g = position(
        [
            ["red spy", "red heir 1t"],  # 0, 1: red's, face down, one covered
            "blue lord up 0t",  # 2: face up
            ["blue soldier", "blue archer 2t"],  # 3, 4: blue's, face down
        ],
        hands=[["red lord"], ["blue spy"], ["green spy"]],
        set_aside=[["red ambush"], ["blue ambush"], ["green ambush"]],
        fronts=[["red conspiracy"], [], []],
        scores=[2, 3, 4],
    )
    for seat in (0, 1, 2, None):
        v = view(g, seat)
        for s, (family, in_hand) in enumerate([("red", "lord"), ("blue", "spy"), ("green", "spy")]):
            shown = seat == s
            assert v["hands"][s] == [[family, in_hand if shown else None]]
            assert v["set_aside"][s] == [[family, "ambush" if shown else None]]
        red = ["spy", "heir"] if seat == 0 else [None, None]
        blue = ["soldier", "archer"] if seat == 1 else [None, None]
        assert [[c["card"] for c in slot] for slot in v["queue"]] == [
            [["red", red[0]], ["red", red[1]]],
            [["blue", "lord"]],
            [["blue", blue[0]], ["blue", blue[1]]],
        ]
        # Public to all: owners, face, tokens, depths, scores, fronts.
        assert [
            [(c["pid"], c["owner"], c["face_up"], c["tokens"]) for c in s] for s in v["queue"]
        ] == [
            [(0, 0, False, 0), (1, 0, False, 1)],
            [(2, 1, True, 0)],
            [(3, 1, False, 0), (4, 1, False, 2)],
        ]
        assert v["scores"] == [2, 3, 4]
        assert v["fronts"] == [[["red", "conspiracy"]], [], []]
        assert v["viewer"] == seat
    assert to_data(g)["queue"][0][0]["card"] == ["red", "spy"]


def test_ruling_21_events_hide_a_placed_or_drawn_card_from_everyone_else() -> None:
    placed = Placed(0, 7, C("red ambush"), FIRST, 0)
    assert mask_event(placed, 0) == placed
    for seat in (1, 2, None):
        assert mask_event(placed, seat) == Placed(0, 7, C("red ?"), FIRST, 0)
    drew = Drew(1, (C("green heir"), C("yellow spy")))
    assert mask_event(drew, 1) == drew
    assert mask_event(drew, 0) == Drew(1, (C("green ?"), C("yellow ?")))
    # Cards turned face up are public: a reveal is the same for everyone.
    revealed = Revealed(0, 7, C("red ambush"), 2)
    assert all(mask_event(revealed, s) == revealed for s in (0, 1, None))

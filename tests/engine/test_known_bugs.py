"""Bugs found in public Oriflamme implementations (end of docs/RULES.md),
one test each, so that this engine never grows them."""

from __future__ import annotations

import pytest

from oriflamme.engine import KEEP, REVEAL, Decision, MoveTo, Step, Target
from oriflamme.engine.events import (
    AbilityUsed,
    Discarded,
    Eliminated,
    Revealed,
    Scored,
    Stolen,
)
from tests.engine.builders import C, assert_events, describe, fronts, position


def test_heir_does_not_count_face_down_heirs() -> None:
    # Two face-down Heirs do not stop the revealed Heir from earning.
    g = position(["blue heir 2t", "red heir", "green heir"], step="reveal", index=1)
    events = g.apply(REVEAL)
    assert_events(
        events,
        [Revealed(0, 1, C("red heir"), 0), AbilityUsed(0, 1, "heir", None), Scored(0, 2, "heir")],
    )
    assert g.scores == [3, 1, 1]


@pytest.mark.parametrize(
    ("intrigue", "answers"),
    [
        ("assassination", [Target(3)]),
        ("royal_decree", [Target(3), MoveTo(1)]),
        ("ambush", []),
        ("conspiracy", []),
    ],
)
def test_card_uncovered_after_an_intrigue_is_not_skipped(intrigue: str, answers: list) -> None:
    g = position(
        [["red spy 1t", f"red {intrigue}"], "blue lord", "green heir"], step="reveal", index=0
    )
    g.apply(REVEAL)
    for answer in answers:
        g.apply(answer)
    # The Spy under the Intrigue is asked now, before Blue's Lord.
    assert g.decision == Decision(0, Step.REVEAL_OR_KEEP, (KEEP, REVEAL), 0)
    assert describe(g)[0] == "#0 red spy 1t"
    assert fronts(g)[0][-1] == f"red {intrigue}"


def test_ambush_pays_four_when_the_attacker_is_an_assassination() -> None:
    g = position(["red ambush 3t", "blue lord", "green assassination"], step="reveal", index=2)
    g.apply(REVEAL)
    events = g.apply(Target(0))
    assert_events(
        events[:5],
        [
            AbilityUsed(2, 2, "assassination", 0),
            Eliminated(0, C("red ambush"), 0, 2, 2, 3),
            Scored(2, 1, "eliminate"),
            Scored(0, 4, "ambush"),
            Discarded(2, C("green assassination"), 2, "ambush", 0),
        ],
    )
    assert g.scores == [5, 1, 2]
    # Discarded once, by the Ambush; not a second time as a used Intrigue.
    assert fronts(g) == [["red ambush"], [], ["green assassination"]]
    assert describe(g) == ["#1 blue lord"]


def test_spy_never_takes_a_player_below_zero() -> None:
    for victim_pid, victim in ((0, 1), (2, 2)):
        h = position(
            ["blue lord", "red spy up", "green heir"],
            step="steal",
            index=1,
            ability="spy",
            scores=[1, 0, 0],
        )
        events = h.apply(Target(victim_pid))
        assert_events(events, [AbilityUsed(0, 1, "spy", victim_pid), Stolen(0, victim, 0)])
        assert h.scores == [1, 0, 0]


@pytest.mark.parametrize(
    ("index", "after"),
    [
        (0, ["#4 green soldier", ["#0 blue spy", "#1 blue lord"], "#3 green heir"]),
        (1, [["#0 blue spy", "#1 blue lord"], "#4 green soldier", "#3 green heir"]),
        (2, [["#0 blue spy", "#1 blue lord"], "#4 green soldier", "#3 green heir"]),
        (3, [["#0 blue spy", "#1 blue lord"], "#3 green heir", "#4 green soldier"]),
    ],
)
def test_royal_decree_never_drops_a_card_onto_a_stack(index: int, after: list) -> None:
    queue = [["blue spy", "blue lord"], "red royal_decree up", ["green heir", "green soldier"]]
    g = position(queue, step="move_to", index=1, ability="royal_decree", chosen=4)
    # Every gap and end (4 places around 3 slots), never "onto" a slot.
    assert g.legal_actions() == (MoveTo(0), MoveTo(1), MoveTo(2), MoveTo(3))
    g.apply(MoveTo(index))
    # The Decree is gone; the Soldier lies alone in a slot of its own.
    assert describe(g) == after

"""Table sizes and variants: the 2-player variant (ruling 19), the first
edition's own-card Ambush (ruling 15), 3, 4 and 5 players, the tie-break
(ruling 17) and the first player's rotation (ruling 18).

2-player seats: seat 0 plays red and blue, seat 1 green and yellow.
"""

from __future__ import annotations

from typing import TypedDict

import pytest

from oriflamme.engine import (
    FIRST,
    KEEP,
    LAST,
    LEFT_TO_RIGHT,
    REVEAL,
    ChooseDirection,
    Decision,
    Game,
    Kind,
    Place,
    RandomPlayer,
    Rules,
    Step,
    Target,
    layout_deal,
    new_game,
    view,
)
from oriflamme.engine.events import (
    AbilityUsed,
    Discarded,
    Drew,
    Eliminated,
    Event,
    GameEnded,
    Placed,
    RoundEnded,
    RoundStarted,
    Scored,
)
from tests.engine.builders import C, assert_events, assert_illegal, describe, fronts, hand, position


class TwoPlayer(TypedDict):
    players: int
    variant: str


TWO: TwoPlayer = {"players": 2, "variant": "two-player"}


def play_out(g: Game, seed: int) -> list[Event]:
    """Random legal moves to the end; every event, in order."""
    player = RandomPlayer(seed=seed)
    events: list[Event] = []
    while not g.over:
        events += g.apply(player.choose(g))
    return events


def two_player_deal(rules: Rules) -> list:
    kinds = list(Kind)
    return [layout_deal(rules, seat, [kinds, kinds[::-1]]) for seat in range(2)]


# ------------------------------------------------------------ 2-player variant


def test_two_player_deal_gives_each_seat_two_families() -> None:
    rules = Rules(2, "two-player")
    g = new_game(2, variant="two-player", deal=two_player_deal(rules))
    assert hand(g, 0) == [
        "red heir", "red lord", "red shapeshifter", "blue assassination", "blue shapeshifter", "blue lord"
    ]  # fmt: skip
    assert [str(c) for c in g.draw_piles[1]] == [
        "green assassination", "yellow heir", "green royal_decree", "yellow spy",
        "green ambush", "yellow soldier", "green conspiracy", "yellow archer",
    ]  # fmt: skip
    assert [len(s) for s in g.set_aside] == [6, 6]
    # Nobody sees a draw pile, not even its owner; a hand only by its owner.
    assert view(g, 0)["draw_piles"][0] == [["red", None], ["blue", None]] * 4
    assert view(g, 0)["hands"][1] == [["green", None]] * 3 + [["yellow", None]] * 3
    assert view(g, 1)["hands"][1][0] == ["green", "heir"]


def test_two_player_round_one_places_four_cards_alternating() -> None:
    rules = Rules(2, "two-player")
    g = new_game(2, variant="two-player", first_player=1, deal=two_player_deal(rules))
    assert g.decision is not None and g.decision.seat == 1
    g.apply(ChooseDirection(LEFT_TO_RIGHT))
    assert g.placement_order() == [1, 0, 1, 0]
    # The first card goes in the middle.
    assert {a.at for a in g.legal_actions()} == {FIRST}
    g.apply(Place(C("green heir"), FIRST))
    g.apply(Place(C("red heir"), LAST))
    assert g.decision is not None and g.decision.seat == 1
    # No stacking in round 1, not even on your own card.
    assert {a.at for a in g.legal_actions()} == {FIRST, LAST}
    assert_illegal(g, Place(C("green lord"), 0), "no stacking in round 1")
    g.apply(Place(C("green lord"), FIRST))
    events = g.apply(Place(C("blue lord"), FIRST))
    assert events[0] == Placed(0, 3, C("blue lord"), FIRST, 0)
    assert describe(g) == ["#3 blue lord", "#2 green lord", "#0 green heir", "#1 red heir"]
    assert g.decision == Decision(0, Step.REVEAL_OR_KEEP, (KEEP, REVEAL), 3)


def test_two_player_stacks_never_mix_families() -> None:
    g = position(
        ["red lord up", "green heir", "blue heir", ["yellow spy", "yellow lord"]],
        hands=[["red spy", "blue spy"], ["green spy", "yellow soldier"]],
        **TWO,
    )
    assert g.decision == Decision(
        0,
        Step.PLACE,
        (
            Place(C("red spy"), FIRST),
            Place(C("red spy"), LAST),
            Place(C("red spy"), 0),
            Place(C("blue spy"), FIRST),
            Place(C("blue spy"), LAST),
            Place(C("blue spy"), 2),
        ),
        None,
    )
    assert_illegal(g, Place(C("red spy"), 2), "a stack never mixes families")
    assert_illegal(g, Place(C("blue spy"), 0), "a stack never mixes families")
    assert_illegal(g, Place(C("red spy"), 4), "not yours")
    g.apply(Place(C("blue spy"), 2))
    # Seat 1 may cover its yellow stack with a yellow card only.
    assert g.decision is not None and g.decision.seat == 1
    assert Place(C("yellow soldier"), 4) in g.legal_actions()
    assert Place(C("green spy"), 4) not in g.legal_actions()
    assert Place(C("green spy"), 1) in g.legal_actions()


def test_two_player_game_flow_draws_alternates_and_ends_with_two_cards_each() -> None:
    g = new_game(2, variant="two-player", first_player=0, seed=21)
    events = play_out(g, seed=21)
    starts = [e for e in events if type(e) is RoundStarted]
    assert [(e.round, e.first_player) for e in starts] == [(r, (r - 1) % 2) for r in range(1, 7)]
    # Each round: four placements, first, second, first, second.
    placed = [e.seat for e in events if type(e) is Placed]
    assert placed == [s for r in range(6) for s in (r % 2, 1 - r % 2, r % 2, 1 - r % 2)]
    # Two cards drawn each after rounds 1-4; the piles (8 cards) are then empty.
    drew = [(e.seat, len(e.cards)) for e in events if type(e) is Drew]
    assert drew == [(0, 2), (1, 2)] * 4
    assert [len(p) for p in g.draw_piles] == [0, 0]
    assert [len(h) for h in g.hands] == [2, 2]
    assert g.next_pid == 24
    assert type(events[-1]) is GameEnded and events[-2] == RoundEnded(6)


def test_two_player_lord_earns_nothing_for_the_other_family() -> None:
    g = position(
        ["blue spy", "red lord", ["blue heir", "blue soldier"]], step="reveal", index=1, **TWO
    )
    events = g.apply(REVEAL)
    assert events[1:3] == [AbilityUsed(0, 1, "lord", None), Scored(0, 1, "lord")]


def test_two_player_spy_may_choose_your_other_family_for_nothing() -> None:
    # Both neighbours are "opponents" of the red Spy: Green's and your own blue.
    g = position(
        ["green lord", "red spy", "blue heir"], step="reveal", index=1, scores=[2, 2], **TWO
    )
    g.apply(REVEAL)
    assert g.decision == Decision(0, Step.STEAL, (Target(0), Target(2)), 1)
    g.apply(Target(2))
    assert g.scores == [2, 2]


def test_two_player_ambush_of_the_real_opponent_pays_four() -> None:
    g = position(["green ambush 2t", "blue soldier", "yellow lord"], step="reveal", index=1, **TWO)
    g.apply(REVEAL)
    events = g.apply(Target(0))
    assert_events(
        events,
        [
            AbilityUsed(0, 1, "soldier", 0),
            Eliminated(0, C("green ambush"), 1, 1, 0, 2),
            Scored(0, 1, "eliminate"),
            Scored(1, 4, "ambush"),
            Discarded(1, C("blue soldier"), 0, "ambush", 0),
        ],
    )
    assert g.scores == [2, 5]


def test_two_player_own_other_family_ambush_first_edition_pays_two() -> None:
    g = position(
        ["blue ambush", "red archer up", "green lord"],
        step="eliminate",
        index=1,
        ability="archer",
        edition="first",
        **TWO,
    )
    events = g.apply(Target(0))
    assert_events(
        events,
        [
            AbilityUsed(0, 1, "archer", 0),
            Eliminated(0, C("blue ambush"), 0, 1, 0, 0),
            Scored(0, 1, "eliminate"),
            Scored(0, 1, "ambush"),
        ],
    )
    assert g.scores == [3, 1]
    assert describe(g) == ["#1 red archer up", "#2 green lord"]


def test_two_player_tie_counts_the_cards_of_both_families() -> None:
    g = position(
        ["red spy", "blue heir", "green lord", "yellow heir"],
        round=6,
        step="reveal",
        index=3,
        scores=[5, 5],
        hands=[["red archer", "blue archer"], ["green archer", "yellow archer"]],
        **TWO,
    )
    events = g.apply(KEEP)
    # 2 cards each: still tied, a shared win.
    assert events[-1] == GameEnded((5, 5), (0, 1))
    g = position(
        ["red spy", "blue heir", "red lord", ["green lord", "green spy"]],
        round=6,
        step="reveal",
        index=3,
        scores=[5, 5],
        **TWO,
    )
    events = g.apply(KEEP)
    assert events[-1] == GameEnded((5, 5), (0,))


# ------------------------------------------------------- first edition Ambush


def test_first_edition_own_ambush_eliminated_by_an_archer_pays_two() -> None:
    g = position(
        ["red ambush 2t", "red archer up", "blue lord"],
        step="eliminate",
        index=1,
        ability="archer",
        edition="first",
    )
    events = g.apply(Target(0))
    assert_events(
        events,
        [
            AbilityUsed(0, 1, "archer", 0),
            Eliminated(0, C("red ambush"), 0, 1, 0, 2),
            Scored(0, 1, "eliminate"),
            Scored(0, 1, "ambush"),
        ],
    )
    assert g.scores == [3, 1, 1]
    assert describe(g) == ["#1 red archer up", "#2 blue lord"]
    assert fronts(g) == [["red ambush"], [], []]


def test_first_edition_own_ambush_eliminated_by_an_assassination() -> None:
    g = position(
        ["red ambush", "red assassination", "blue lord"], step="reveal", index=1, edition="first"
    )
    g.apply(REVEAL)
    events = g.apply(Target(0))
    assert_events(
        events,
        [
            AbilityUsed(0, 1, "assassination", 0),
            Eliminated(0, C("red ambush"), 0, 1, 0, 0),
            Scored(0, 1, "eliminate"),
            Scored(0, 1, "ambush"),
            Discarded(1, C("red assassination"), 0, "used", 0),
        ],
    )
    assert g.scores == [3, 1, 1]


@pytest.mark.parametrize("edition", ["revised", "first"])
def test_opponents_ambush_is_the_same_in_both_editions(edition: str) -> None:
    g = position(
        ["red ambush", "blue soldier up", "green lord"],
        step="eliminate",
        index=1,
        ability="soldier",
        edition=edition,
    )
    events = g.apply(Target(0))
    assert [e for e in events if type(e) is Scored] == [
        Scored(1, 1, "eliminate"),
        Scored(0, 4, "ambush"),
    ]
    assert fronts(g) == [["red ambush"], ["blue soldier"], []]


# --------------------------------------------------- 3, 4, 5 players; rotation


@pytest.mark.parametrize("players", [3, 4, 5])
def test_table_sizes_place_once_each_clockwise_and_rotate_the_first_player(players: int) -> None:
    first = players - 1
    g = new_game(players, first_player=first, seed=players)
    assert [len(h) for h in g.hands] == [7] * players
    assert [len(s) for s in g.set_aside] == [3] * players
    events = play_out(g, seed=players)
    starts = [(e.round, e.first_player) for e in events if type(e) is RoundStarted]
    assert starts == [(r, (first + r - 1) % players) for r in range(1, 7)]
    placed = [e.seat for e in events if type(e) is Placed]
    assert placed == [(first + r + i) % players for r in range(6) for i in range(players)]
    assert [len(h) for h in g.hands] == [1] * players
    assert g.next_pid == 6 * players


def test_five_players_round_one_builds_a_line_of_five() -> None:
    g = position(
        [],
        players=5,
        round=1,
        first_player=3,
        hands=[[f"{f} lord"] for f in ("red", "blue", "green", "yellow", "black")],
    )
    for seat, at in ((3, FIRST), (4, LAST), (0, FIRST), (1, LAST), (2, FIRST)):
        assert g.decision is not None and g.decision.seat == seat
        g.apply(Place(g.hands[seat][0], at))
    assert describe(g) == [
        "#4 green lord", "#2 red lord", "#0 yellow lord", "#1 black lord", "#3 blue lord"
    ]  # fmt: skip
    assert g.decision == Decision(2, Step.REVEAL_OR_KEEP, (KEEP, REVEAL), 4)


def test_four_players_tie_break_among_three() -> None:
    g = position(
        [
            ["red spy", "red heir"],
            "blue lord",
            ["yellow spy", "yellow heir", "yellow lord"],
            "green spy 2t",
        ],
        players=4,
        round=6,
        step="reveal",
        index=3,
        scores=[6, 6, 3, 6],
    )
    events = g.apply(KEEP)
    assert events[-1] == GameEnded((6, 6, 3, 6), (3,))


def test_first_player_rotation_wraps_around() -> None:
    g = position(["black lord"], players=5, first_player=4, step="reveal", index=0)
    events = g.apply(KEEP)
    assert events[-1] == RoundStarted(3, 0)
    assert g.placement_order() == [0, 1, 2, 3, 4]

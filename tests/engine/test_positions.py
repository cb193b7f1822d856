"""Positions at their edges (docs/ENGINE.md, "Positions"): the moment a
round's resolution starts, stacks written bottom first, what a move's index
means, and positions whose hands are all empty, which would otherwise play
the rest of the game by themselves.
"""

from __future__ import annotations

from typing import Any

import pytest

from oriflamme.engine import (
    STANDARD,
    TWO_PLAYER,
    Game,
    MoveTo,
    PositionError,
    RandomPlayer,
    Step,
    event_to_data,
    from_data,
    new_game,
    to_data,
)
from oriflamme.engine.events import GameEnded, Moved, Placed, RoundEnded, RoundStarted

from .builders import describe, pid, position


def resolution_starts(players: int, seed: int) -> list[Game]:
    """Copies of a seeded random game at the first decision of each round's
    resolution (the decision that follows the round's last placement)."""
    variant = TWO_PLAYER if players == 2 else STANDARD
    game = new_game(players, variant=variant, seed=seed)
    player = RandomPlayer(seed=seed)
    out = []
    while not game.over:
        events = game.apply(player.choose(game))
        if events and isinstance(events[0], Placed) and game.step not in (Step.PLACE, Step.OVER):
            out.append(game.copy())
    return out


@pytest.mark.parametrize(("players", "seed"), [(2, 1), (3, 2), (4, 3), (5, 4)])
def test_the_moment_resolution_starts_loads_and_plays_on_alike(players: int, seed: int) -> None:
    starts = resolution_starts(players, seed)
    assert len(starts) >= 5
    for game in starts:
        data = to_data(game)
        assert data["placed"] is None and data["resolving"]["index"] >= 0
        loaded = from_data(data)
        assert to_data(loaded) == data and loaded.decision == game.decision
        a, b = RandomPlayer(seed=seed), RandomPlayer(seed=seed)
        while not game.over:
            expected = [event_to_data(e) for e in game.apply(a.choose(game))]
            assert [event_to_data(e) for e in loaded.apply(b.choose(loaded))] == expected


def test_a_hand_built_queue_about_to_resolve_starts_at_its_first_slot() -> None:
    g = position(
        ["red soldier", ["blue heir up", "blue spy"], "green lord"], step="reveal", index=0
    )
    assert g.decision is not None and (g.decision.seat, g.decision.pid) == (0, 0)
    assert to_data(g)["resolving"]["index"] == 0


def test_placed_equal_to_the_round_s_placements_is_refused_with_advice() -> None:
    data = to_data(position(["red soldier", "blue spy"], step="place", placed=2))
    data["placed"] = 3
    with pytest.raises(PositionError, match="every placement of the round is made"):
        from_data(data)


def test_a_stack_is_written_bottom_first_and_its_last_card_acts() -> None:
    data = to_data(position([["red lord up", "red spy"], "blue heir"], step="reveal", index=0))
    assert [c["pid"] for c in data["queue"][0]] == [0, 1]  # bottom, then top
    g = from_data(data)
    assert g.queue[0][-1].pid == 1 and g.decision is not None and g.decision.pid == 1
    assert to_data(g) == data


def test_a_move_index_is_where_the_card_ends_once_it_has_left_its_place() -> None:
    g = position(
        ["red royal_decree up", "blue lord up", "green heir up", "red spy up"],
        step="move_to",
        index=0,
        ability="royal_decree",
        chosen=1,
    )
    # Without the blue lord the queue is [decree, heir, spy]: it may go before
    # any of them or last, but not back where it was (index 1).
    assert g.legal_actions() == (MoveTo(0), MoveTo(2), MoveTo(3))
    events = g.apply(MoveTo(2))
    assert Moved(pid(g, "blue lord"), 2) in events
    # The decree is then discarded (used), so the lord is now at index 1.
    assert describe(g)[:3] == ["#2 green heir up", "#1 blue lord up", "#3 red spy up"]


def test_the_top_of_a_stack_moved_leaves_its_stack_and_may_go_beside_it() -> None:
    g = position(
        ["red royal_decree up", ["blue lord up", "blue spy up"], "green heir up"],
        step="move_to",
        index=0,
        ability="royal_decree",
        chosen=2,
        round=3,
    )
    assert g.legal_actions() == tuple(MoveTo(i) for i in range(4))
    g.apply(MoveTo(2))
    assert describe(g)[:3] == ["#1 blue lord up", "#2 blue spy up", "#3 green heir up"]


# ------------------------------------------------------------- empty hands


def empty_handed(step: str, round: int) -> dict[str, Any]:
    data = to_data(position(["red lord up", "blue heir"], step=step, index=1, round=round))
    data["hands"] = [[], [], []]
    return data


def test_a_position_whose_hands_are_all_empty_is_refused() -> None:
    data = to_data(new_game(3, seed=1))
    data["hands"] = [[], [], []]
    with pytest.raises(PositionError, match="every hand is empty"):
        from_data(data)  # step direction: every round would play itself
    with pytest.raises(PositionError, match="every hand is empty"):
        from_data(empty_handed("reveal", 3))  # rounds 4-6 would play themselves
    data = empty_handed("reveal", 3)
    data["draw_piles"][0] = [["red", "spy"]]  # never drawn in the standard game
    with pytest.raises(PositionError, match="every hand is empty"):
        from_data(data)


def test_the_last_round_resolves_with_empty_hands_and_the_game_ends() -> None:
    g = from_data(empty_handed("reveal", 6))
    events = g.apply(g.legal_actions()[0])
    assert g.over
    assert not any(isinstance(e, RoundStarted) for e in events)
    assert isinstance(events[-2], RoundEnded) and isinstance(events[-1], GameEnded)


def test_empty_hands_with_cards_still_to_draw_are_a_position() -> None:
    data = to_data(
        position(
            ["red lord up", "green heir"],
            players=2,
            variant="two-player",
            step="reveal",
            index=1,
            round=3,
            hands=[[], []],
            draw_piles=[["red spy", "blue spy"], ["green spy", "yellow spy"]],
        )
    )
    g = from_data(data)
    g.apply(g.legal_actions()[0])
    assert g.round == 4 and g.step == Step.PLACE  # the cards drawn are placed


def test_one_empty_hand_only_skips_that_seat() -> None:
    data = to_data(position(["red lord up", "blue heir"], step="reveal", index=1, round=3))
    data["hands"][1] = []
    g = from_data(data)
    events = g.apply(g.legal_actions()[0])
    assert g.round == 4 and g.step == Step.PLACE
    assert g.decision is not None and g.decision.seat != 1
    assert isinstance(events[-1], RoundStarted)


def test_a_round_1_position_after_a_skipped_placement_loads() -> None:
    """A seat whose player timed out is skipped (`skip_placement`): round 1
    then has fewer slots than placements, and its position still loads (a
    bot on the next seat plays from it)."""
    from oriflamme.engine import from_data, new_game, to_data

    game = new_game(3, seed=4)
    game.apply(game.legal_actions()[0])  # the direction
    game.skip_placement()
    data = to_data(game)
    assert data["placed"] == 1 and data["queue"] == []
    assert to_data(from_data(data)) == data

"""Engine features the referee uses: chosen families and skipped placements."""

import pytest

from oriflamme.engine import (
    FIRST,
    IllegalAction,
    RandomPlayer,
    event_from_data,
    event_to_data,
    new_game,
    to_data,
)
from oriflamme.engine.events import PlacementSkipped


def test_seats_play_the_families_given() -> None:
    game = new_game(3, families=[[4], [2], [0]], seed=1)
    assert [{c.family for c in h} for h in game.hands] == [{4}, {2}, {0}]
    assert to_data(game)["families"] == [["black"], ["green"], ["red"]]


def test_families_must_be_distinct_and_one_per_seat() -> None:
    with pytest.raises(ValueError, match="distinct families"):
        new_game(3, families=[[1], [1], [2]], seed=1)
    with pytest.raises(ValueError, match="distinct families"):
        new_game(2, variant="two-player", families=[[0], [1]], seed=1)


def test_a_skipped_placement_keeps_the_card_and_moves_on() -> None:
    game = new_game(3, seed=2)
    game.apply(game.legal_actions()[0])  # direction
    hand_before = list(game.hands[0])
    events = game.skip_placement()
    assert events == [PlacementSkipped(0)]
    assert event_from_data(event_to_data(events[0])) == PlacementSkipped(0)
    assert game.hands[0] == hand_before
    assert game.queue == []
    decision = game.decision
    assert decision is not None and (decision.seat, decision.kind) == (1, "place")
    # The next seat places the first card of the queue (in the middle).
    assert {a.at for a in decision.options} == {FIRST}


def test_skipping_is_refused_outside_a_placement_and_changes_nothing() -> None:
    game = new_game(3, seed=3)
    before = to_data(game)
    with pytest.raises(IllegalAction, match="no placement to skip"):
        game.skip_placement()
    assert to_data(game) == before


def test_a_game_with_a_seat_that_never_places_still_ends() -> None:
    game = new_game(4, seed=4)
    player = RandomPlayer(seed=4)
    while not game.over:
        decision = game.decision
        assert decision is not None
        if decision.kind == "place" and decision.seat == 2:
            game.skip_placement()
        else:
            game.apply(player.choose(game))
    assert len(game.hands[2]) == 7
    assert all(len(h) == 1 for s, h in enumerate(game.hands) if s != 2)


def test_check_opening_says_which_identities_a_hidden_card_may_take() -> None:
    from oriflamme.engine import Rules, card, hidden_deal

    game = new_game(3, deal=hidden_deal(Rules(3)), seed=5)
    player = RandomPlayer(seed=5)
    while game.decision is not None and game.decision.kind != "reveal":
        game.apply(player.choose(game))
    decision = game.decision
    assert decision is not None and decision.pid is not None
    pid = decision.pid
    before = to_data(game)
    family = game.find(pid)[1].family  # type: ignore[index]
    game.check_opening(pid, card(family, "soldier"))  # nothing known yet: any kind
    with pytest.raises(IllegalAction, match=f"card {pid} is a"):
        game.check_opening(pid, card((family + 1) % 5, "soldier"))
    with pytest.raises(IllegalAction, match="open with a card"):
        game.check_opening(pid, "soldier")
    with pytest.raises(IllegalAction, match="no face-down card 99"):
        game.check_opening(99, card(family, "soldier"))
    assert to_data(game) == before


def test_check_opening_refuses_an_identity_seen_elsewhere() -> None:
    from oriflamme.engine import card, from_data

    game = from_data(
        {
            "players": 3,
            "round": 2,
            "direction": "left-to-right",
            "hands": [[["red", None]], [], []],
            "fronts": [[["red", "lord"]], [], []],
            "queue": [
                [{"pid": 0, "owner": 0, "card": ["red", None], "face_up": False, "tokens": 0}],
                [{"pid": 1, "owner": 0, "card": ["red", "spy"], "face_up": True, "tokens": 0}],
            ],
        }
    )
    game.check_opening(0, card("red", "heir"))
    with pytest.raises(IllegalAction, match="red lord is accounted for elsewhere"):
        game.check_opening(0, card("red", "lord"))
    with pytest.raises(IllegalAction, match="red spy is accounted for elsewhere"):
        game.check_opening(0, card("red", "spy"))


def test_check_opening_of_a_known_card_accepts_only_that_card() -> None:
    from oriflamme.engine import card, from_data

    game = from_data(
        {
            "players": 3,
            "round": 2,
            "direction": "left-to-right",
            "hands": [[["red", "heir"]], [], []],
            "queue": [
                [{"pid": 0, "owner": 0, "card": ["red", "spy"], "face_up": False, "tokens": 0}],
                [{"pid": 1, "owner": 1, "card": ["blue", "lord"], "face_up": True, "tokens": 0}],
            ],
        }
    )
    game.check_opening(0, card("red", "spy"))
    with pytest.raises(IllegalAction, match="card 0 is not red lord"):
        game.check_opening(0, card("red", "lord"))
    with pytest.raises(IllegalAction, match="no face-down card 1"):
        game.check_opening(1, card("blue", "lord"))

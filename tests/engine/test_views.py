"""What each seat sees (ruling 21): `view(game, seat)` and `mask_event`.

A seat sees its own hand, its own set-aside cards and the identity of its own
face-down cards in the queue, covered ones included. Everyone sees face-up
cards, the cards in front of each player, owners, tokens, scores and stack
depths. Nobody sees another seat's hand, set-aside or face-down cards, nor
any draw pile.
"""

from __future__ import annotations

from typing import Any

import pytest

from oriflamme.engine import (
    BACKS,
    FIRST,
    Place,
    card,
    from_data,
    mask_event,
    to_data,
    view,
)
from oriflamme.engine.events import Drew, Eliminated, Event, Placed, Revealed


def up(pid: int, owner: int, family: str, kind: str) -> dict[str, Any]:
    return {"pid": pid, "owner": owner, "card": [family, kind], "face_up": True, "tokens": 0}


def down(pid: int, owner: int, family: str, kind: str | None, tokens: int = 0) -> dict[str, Any]:
    return {"pid": pid, "owner": owner, "card": [family, kind], "face_up": False, "tokens": tokens}


def three_player_position() -> dict[str, Any]:
    """Round 3, seat 1 to place. Queue (resolution order):
    0: red soldier (down, 1 token) under red lord (up)
    1: blue spy (down, 2 tokens)
    2: green archer (up) under green ambush (down)
    3: red conspiracy (down, 1 token)
    """
    return {
        "players": 3,
        "round": 3,
        "first_player": 0,
        "direction": "left-to-right",
        "scores": [3, 2, 4],
        "hands": [
            [["red", "archer"], ["red", "heir"]],
            [["blue", "lord"], ["blue", "ambush"], ["blue", "heir"]],
            [["green", "spy"], ["green", "lord"]],
        ],
        "set_aside": [
            [["red", "spy"], ["red", "shapeshifter"], ["red", "assassination"]],
            [["blue", "archer"], ["blue", "conspiracy"], ["blue", "royal_decree"]],
            [["green", "soldier"], ["green", "heir"], ["green", "conspiracy"]],
        ],
        "fronts": [[], [["blue", "soldier"]], [["green", "royal_decree"]]],
        "queue": [
            [down(0, 0, "red", "soldier", 1), up(4, 0, "red", "lord")],
            [down(1, 1, "blue", "spy", 2)],
            [up(2, 2, "green", "archer"), down(5, 2, "green", "ambush")],
            [down(6, 0, "red", "conspiracy", 1)],
        ],
        "next_pid": 7,
        "step": "place",
        "placed": 1,
    }


def queue_cards(seen: dict[str, Any]) -> dict[int, list[Any]]:
    """pid -> card as shown, for every card in the queue (covered ones too)."""
    return {c["pid"]: c["card"] for slot in seen["queue"] for c in slot}


@pytest.fixture
def game() -> Any:
    return from_data(three_player_position())


def test_a_seat_sees_its_own_hand_and_set_aside_and_not_the_others(game: Any) -> None:
    seen = view(game, 1)
    assert seen["viewer"] == 1
    assert seen["hands"] == [
        [["red", None], ["red", None]],
        [["blue", "lord"], ["blue", "ambush"], ["blue", "heir"]],
        [["green", None], ["green", None]],
    ]
    assert seen["set_aside"] == [
        [["red", None]] * 3,
        [["blue", "archer"], ["blue", "conspiracy"], ["blue", "royal_decree"]],
        [["green", None]] * 3,
    ]


def test_a_seat_sees_its_own_face_down_cards_covered_ones_too(game: Any) -> None:
    assert queue_cards(view(game, 0)) == {
        0: ["red", "soldier"],  # own, covered, face down
        4: ["red", "lord"],
        1: ["blue", None],
        2: ["green", "archer"],  # face up, covered
        5: ["green", None],
        6: ["red", "conspiracy"],  # own, face down
    }
    assert queue_cards(view(game, 2)) == {
        0: ["red", None],  # another seat's covered face-down card
        4: ["red", "lord"],
        1: ["blue", None],
        2: ["green", "archer"],
        5: ["green", "ambush"],
        6: ["red", None],
    }


def test_spectators_see_only_public_identities(game: Any) -> None:
    seen = view(game, None)
    assert seen["viewer"] is None
    assert queue_cards(seen) == {
        0: ["red", None],
        4: ["red", "lord"],
        1: ["blue", None],
        2: ["green", "archer"],
        5: ["green", None],
        6: ["red", None],
    }
    for zone in ("hands", "set_aside", "draw_piles"):
        assert all(kind is None for row in seen[zone] for _, kind in row), zone
    assert seen["fronts"] == [[], [["blue", "soldier"]], [["green", "royal_decree"]]]


def test_public_facts_are_the_same_in_every_view(game: Any) -> None:
    truth = to_data(game)
    for seat in (None, 0, 1, 2):
        seen = view(game, seat)
        for key in ("scores", "fronts", "round", "step", "placed", "next_pid", "direction"):
            assert seen[key] == truth[key], key
        assert [len(h) for h in seen["hands"]] == [2, 3, 2]
        for true_slot, seen_slot in zip(truth["queue"], seen["queue"], strict=True):
            assert len(seen_slot) == len(true_slot)  # stack depths
            for t, s in zip(true_slot, seen_slot, strict=True):
                for key in ("pid", "owner", "face_up", "tokens"):
                    assert s[key] == t[key]
                assert s["card"][0] == t["card"][0]  # the family (colour) shows


def test_a_view_changes_nothing_and_loads_to_itself(game: Any) -> None:
    before = to_data(game)
    for seat in (None, 0, 1, 2):
        seen = view(game, seat)
        assert to_data(game) == before
        assert view(from_data(seen), seat) == seen
    assert "viewer" not in before


def test_the_next_seat_to_place_offers_backs_in_a_view_from_another_seat(game: Any) -> None:
    mine = from_data(view(game, 1))
    theirs = from_data(view(game, 0))
    assert Place(card("blue", "lord"), FIRST) in mine.legal_actions()
    options = theirs.legal_actions()
    assert options and all(isinstance(a, Place) and a.card == BACKS[1] for a in options)


def two_player_position() -> dict[str, Any]:
    return {
        "players": 2,
        "variant": "two-player",
        "round": 2,
        "direction": "right-to-left",
        "hands": [
            [["red", "spy"], ["blue", "spy"], ["red", "heir"]],
            [["green", "lord"], ["yellow", "lord"], ["green", "heir"]],
        ],
        "draw_piles": [
            [["red", "archer"], ["blue", "archer"], ["red", "lord"], ["blue", "lord"]],
            [["green", "archer"], ["yellow", "archer"], ["green", "spy"], ["yellow", "spy"]],
        ],
        "queue": [
            [down(0, 0, "red", "soldier")],
            [down(1, 1, "yellow", "soldier", 1)],
        ],
    }


def test_draw_piles_are_hidden_from_everyone_their_owner_included() -> None:
    game = from_data(two_player_position())
    for seat in (None, 0, 1):
        assert view(game, seat)["draw_piles"] == [
            [["red", None], ["blue", None], ["red", None], ["blue", None]],
            [["green", None], ["yellow", None], ["green", None], ["yellow", None]],
        ]
    seen = view(game, 1)
    assert seen["hands"][1] == [["green", "lord"], ["yellow", "lord"], ["green", "heir"]]
    assert queue_cards(seen) == {0: ["red", None], 1: ["yellow", "soldier"]}


def test_a_view_does_not_tell_which_card_of_a_family_was_played() -> None:
    views = []
    for played in ("spy", "heir"):  # first or last red card of the hand
        game = from_data(two_player_position())
        game.apply(Place(card("red", played), FIRST))
        views.append(view(game, 1))
    assert views[0] == views[1]


def test_placed_and_drew_events_show_the_card_to_its_owner_only() -> None:
    placed = Placed(0, 7, card("red", "ambush"), FIRST, 0)
    assert mask_event(placed, 0) == placed
    for seat in (1, 2, None):
        assert mask_event(placed, seat) == placed._replace(card=BACKS[0])
    drew = Drew(1, (card("green", "lord"), card("yellow", "spy")))
    assert mask_event(drew, 1) == drew
    for seat in (0, None):
        assert mask_event(drew, seat) == Drew(1, (BACKS[2], BACKS[3]))


def test_events_naming_public_cards_are_not_masked() -> None:
    events: list[Event] = [
        Revealed(0, 3, card("red", "conspiracy"), 2),
        Eliminated(4, card("blue", "heir"), 1, 3, 0, 1),
        Placed(2, 8, BACKS[2], "last", 4),  # already a back (the engine did not know it)
    ]
    for event in events:
        for seat in (None, 0, 1, 2):
            assert mask_event(event, seat) == event


def test_a_seat_that_played_sees_its_own_events_from_a_game() -> None:
    game = from_data(three_player_position())
    events = game.apply(Place(card("blue", "ambush"), "last"))
    placed = next(e for e in events if isinstance(e, Placed))
    assert mask_event(placed, 1).card == card("blue", "ambush")
    assert mask_event(placed, 0).card == BACKS[1]
    assert queue_cards(view(game, 1))[placed.pid] == ["blue", "ambush"]
    assert queue_cards(view(game, 0))[placed.pid] == ["blue", None]

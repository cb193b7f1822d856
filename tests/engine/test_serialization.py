"""Plain data: cards, actions, events and positions round trip, and bad data
is refused with the module's own error (ValueError, PositionError) that says
what is wrong, never another exception.

The positions used come from seeded random games at every table size, with
and without identities, as full states and as views, so every step kind is
covered (see `SAMPLE_POSITIONS`).
"""

from __future__ import annotations

import contextlib
import copy
import json
import random
import re
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oriflamme.engine import (
    BACKS,
    CARDS,
    DIRECTIONS,
    FAMILY_NAMES,
    FIRST,
    KEEP,
    KINDS,
    LAST,
    REVEAL,
    STANDARD,
    TWO_PLAYER,
    Action,
    ChooseDirection,
    Game,
    Kind,
    MoveTo,
    Open,
    Place,
    PositionError,
    RandomPlayer,
    Rules,
    Target,
    action_from_data,
    action_to_data,
    card,
    card_from_data,
    card_to_data,
    event_from_data,
    event_to_data,
    from_data,
    hidden_deal,
    new_game,
    to_data,
    view,
)
from oriflamme.engine.events import (
    EVENT_TYPES,
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
    PlacementSkipped,
    Revealed,
    RoundEnded,
    RoundStarted,
    Scored,
    Stolen,
    Uncovered,
)

ALL_CARDS = [c for family in CARDS for c in family] + list(BACKS)


def plain(value: Any) -> Any:
    """`value` through JSON and back: equal only if it was plain data."""
    return json.loads(json.dumps(value))


# Any JSON value: what a peer could send in place of a field.
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-2, 70)
    | st.floats(allow_nan=False)
    | st.sampled_from(
        [
            *FAMILY_NAMES,
            *(k.label for k in KINDS),
            "first",
            "last",
            "place",
            "reveal",
            "open",
            "eliminate",
            "steal",
            "copy",
            "move_card",
            "move_to",
            "over",
            "direction",
            "left-to-right",
            "two-player",
        ]
    )
    | st.text(max_size=4),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=6,
)

MUTATION_SETTINGS = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


# ---------------------------------------------------------------- cards


def test_every_card_and_back_round_trips() -> None:
    for c in ALL_CARDS:
        data = card_to_data(c)
        assert plain(data) == data
        assert card_from_data(data) is c
    assert card_to_data(card("black", "royal_decree")) == ["black", "royal_decree"]
    assert card_to_data(BACKS[1]) == ["blue", None]
    assert card_from_data(("green", "spy")) is CARDS[2][Kind.SPY]


@pytest.mark.parametrize(
    "data",
    [
        None,
        "red soldier",
        ["red"],
        ["red", "soldier", "up"],
        ["pink", "soldier"],
        ["red", "dragon"],
        [0, "soldier"],
        ["red", 1],
        ["red", ["soldier"]],
        [["red"], "soldier"],
        {"family": "red", "kind": "soldier"},
    ],
)
def test_a_malformed_card_is_a_value_error(data: Any) -> None:
    with pytest.raises(ValueError):
        card_from_data(data)


@given(json_values)
@settings(max_examples=200, deadline=None)
def test_card_from_data_takes_any_value_without_crashing(data: Any) -> None:
    try:
        c = card_from_data(data)
    except ValueError:
        return
    assert c in ALL_CARDS and card_to_data(c) == list(data)


# ---------------------------------------------------------------- actions

SAMPLE_ACTIONS: list[Action] = [
    *(ChooseDirection(d) for d in DIRECTIONS),
    *(Place(c, at) for c in (CARDS[0][0], CARDS[4][9], BACKS[3]) for at in (FIRST, LAST, 0, 17)),
    KEEP,
    REVEAL,
    *(Open(c) for c in (CARDS[1][Kind.AMBUSH], CARDS[3][Kind.HEIR])),
    *(Target(p) for p in (0, 5, 63, 64, 1000)),
    *(MoveTo(i) for i in (0, 3, 64)),
]


@pytest.mark.parametrize("action", SAMPLE_ACTIONS, ids=repr)
def test_an_action_round_trips(action: Action) -> None:
    data = action_to_data(action)
    assert plain(data) == data
    assert action_from_data(data) == action


def test_action_data_is_as_documented() -> None:
    assert action_to_data(Place(card("red", "soldier"), FIRST)) == {
        "type": "place",
        "card": ["red", "soldier"],
        "at": "first",
    }
    assert action_to_data(Place(BACKS[2], 7)) == {"type": "place", "card": ["green", None], "at": 7}
    assert action_to_data(KEEP) == {"type": "keep"}
    assert action_to_data(REVEAL) == {"type": "reveal"}
    assert action_to_data(Open(card("red", "ambush"))) == {
        "type": "open",
        "card": ["red", "ambush"],
    }
    assert action_to_data(Target(7)) == {"type": "target", "pid": 7}
    assert action_to_data(MoveTo(2)) == {"type": "move_to", "index": 2}
    assert action_to_data(ChooseDirection("right-to-left")) == {
        "type": "direction",
        "direction": "right-to-left",
    }


@pytest.mark.parametrize(
    "data",
    [
        None,
        [],
        "keep",
        {},
        {"type": "dance"},
        {"type": ["keep"]},
        {"type": "target"},
        {"type": "target", "pid": "3"},
        {"type": "target", "pid": True},
        {"type": "target", "pid": 1.0},
        {"type": "move_to", "index": None},
        {"type": "place", "card": ["red", "spy"]},
        {"type": "place", "card": ["red", "spy"], "at": "middle"},
        {"type": "place", "card": ["red", "spy"], "at": False},
        {"type": "place", "card": ["red", "spy"], "at": [1]},
        {"type": "place", "card": "red spy", "at": "first"},
        {"type": "open"},
        {"type": "open", "card": ["red", "dragon"]},
        {"type": "direction", "direction": "up"},
        {"type": "direction", "direction": ["left-to-right"]},
    ],
)
def test_a_malformed_action_is_a_value_error(data: Any) -> None:
    with pytest.raises(ValueError):
        action_from_data(data)


@given(st.one_of(json_values, st.dictionaries(st.just("type"), json_values)))
@settings(max_examples=200, deadline=None)
def test_action_from_data_takes_any_value_without_crashing(data: Any) -> None:
    try:
        action = action_from_data(data)
    except ValueError:
        return
    assert action_from_data(plain(action_to_data(action))) == action


@given(st.sampled_from(SAMPLE_ACTIONS), st.data())
@settings(max_examples=200, deadline=None)
def test_a_mutated_action_is_read_or_refused_with_a_value_error(
    action: Action, data: st.DataObject
) -> None:
    action_data = action_to_data(action)
    key = data.draw(st.sampled_from(sorted(action_data)))
    action_data[key] = data.draw(json_values)
    with contextlib.suppress(ValueError):
        action_from_data(action_data)


# ---------------------------------------------------------------- events

RED_SPY = card("red", "spy")
SAMPLE_EVENTS = [
    DirectionChosen(0, "right-to-left"),
    RoundStarted(2, 1),
    Placed(1, 4, card("blue", "heir"), FIRST, 0),
    Placed(1, 5, BACKS[1], 4, 2),
    PlacementSkipped(2),
    Kept(2, 3, 2),
    Revealed(0, 1, RED_SPY, 3),
    AbilityUsed(0, 1, "spy", 2),
    AbilityUsed(0, 1, "lord", None),
    NoEffect(0, 1, "soldier"),
    Eliminated(3, card("green", "ambush"), 2, 1, 0, 2),
    Discarded(1, RED_SPY, 0, "ambush", 0),
    Moved(6, 0),
    Uncovered(2, False),
    Scored(1, 4, "ambush"),
    Stolen(0, 1, 0),
    Drew(0, (card("red", "lord"), card("blue", "archer"))),
    Drew(1, (BACKS[2], BACKS[3])),
    RoundEnded(6),
    GameEnded((3, 7, 7), (1, 2)),
]


def test_the_samples_cover_every_event_type() -> None:
    assert {type(e) for e in SAMPLE_EVENTS} == set(EVENT_TYPES.values())


@pytest.mark.parametrize("event", SAMPLE_EVENTS, ids=repr)
def test_an_event_round_trips(event: Any) -> None:
    data = event_to_data(event)
    assert plain(data) == data
    assert data["type"] in EVENT_TYPES
    assert event_from_data(data) == event


def test_event_data_is_as_documented() -> None:
    assert event_to_data(Placed(1, 4, BACKS[1], "last", 3)) == {
        "type": "placed",
        "seat": 1,
        "pid": 4,
        "card": ["blue", None],
        "at": "last",
        "slot": 3,
    }
    assert event_to_data(Drew(0, (RED_SPY,))) == {
        "type": "drew",
        "seat": 0,
        "cards": [["red", "spy"]],
    }
    assert event_to_data(GameEnded((1, 2), (1,))) == {
        "type": "game_ended",
        "scores": [1, 2],
        "winners": [1],
    }


def test_events_of_played_games_round_trip() -> None:
    rng = random.Random(5)
    for players in (2, 3, 5):
        variant = TWO_PLAYER if players == 2 else STANDARD
        game = new_game(players, variant=variant, seed=rng.randrange(1000))
        player = RandomPlayer(rng=rng)
        while not game.over:
            for event in game.apply(player.choose(game)):
                assert event_from_data(plain(event_to_data(event))) == event


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"type": "exploded"},
        {"type": ["placed"]},
        {"type": "kept", "seat": 1, "pid": 3},
        {"type": "revealed", "seat": 0, "pid": 1, "card": ["red", "dragon"], "tokens": 0},
        {"type": "drew", "seat": 0, "cards": [["red"]]},
        {"type": "kept", "seat": "a", "pid": None, "tokens": []},
        {"type": "game_ended", "scores": 5, "winners": []},
        {"type": "ability_used", "seat": 0, "pid": 1, "ability": "spy", "target": "2"},
    ],
)
def test_a_malformed_event_is_a_value_error(data: Any) -> None:
    with pytest.raises(ValueError):
        event_from_data(data)


@pytest.mark.parametrize(
    "data",
    [None, [], "placed", {"type": "drew", "seat": 0, "cards": 5}],
)
def test_event_from_data_refuses_any_shape_with_a_value_error(data: Any) -> None:
    with pytest.raises(ValueError):
        event_from_data(data)


@given(st.sampled_from(SAMPLE_EVENTS), st.data())
@settings(max_examples=200, deadline=None)
def test_a_mutated_event_is_read_or_refused_with_a_value_error(
    event: Any, data: st.DataObject
) -> None:
    event_data = event_to_data(event)
    key = data.draw(st.sampled_from(sorted(event_data)))
    event_data[key] = data.draw(json_values)
    with contextlib.suppress(ValueError):
        event_from_data(event_data)


# ---------------------------------------------------------------- positions


def _sample_positions() -> list[dict[str, Any]]:
    """Full states and views of seeded random games: every step kind, both
    variants and editions, with and without identities."""
    positions: list[dict[str, Any]] = []
    rng = random.Random(11)
    tables = [(2, TWO_PLAYER), (3, STANDARD), (4, STANDARD), (5, STANDARD)]
    for players, variant in tables:
        for edition in ("revised", "first"):
            for hidden in (False, True):
                rules = Rules(players, variant, edition)
                game = new_game(
                    players,
                    variant=variant,
                    edition=edition,
                    deal=hidden_deal(rules) if hidden else None,
                    seed=rng.randrange(1000),
                )
                player = RandomPlayer(rng=rng)
                seen_steps: set[str] = set()
                while True:
                    if game.step not in seen_steps or rng.random() < 0.03:
                        seen_steps.add(game.step)
                        positions.append(to_data(game))
                        positions.append(view(game, rng.choice([None, *range(players)])))
                    if game.over:
                        break
                    game.apply(player.choose(game))
    return positions


SAMPLE_POSITIONS = _sample_positions()


def test_the_sample_positions_cover_every_step() -> None:
    steps = {p["step"] for p in SAMPLE_POSITIONS}
    assert steps == {
        "direction",
        "place",
        "reveal",
        "open",
        "eliminate",
        "steal",
        "copy",
        "move_card",
        "move_to",
        "over",
    }


@pytest.mark.parametrize("index", range(0, len(SAMPLE_POSITIONS), 3))
def test_a_position_round_trips(index: int) -> None:
    position = SAMPLE_POSITIONS[index]
    assert plain(position) == position
    game = from_data(position)
    expected = {k: v for k, v in position.items() if k != "viewer"}
    assert to_data(game) == expected
    assert to_data(from_data(to_data(game))) == expected


def test_a_game_loaded_midway_plays_on_like_the_original() -> None:
    rng = random.Random(3)
    for players in (2, 4):
        variant = TWO_PLAYER if players == 2 else STANDARD
        game = new_game(players, variant=variant, seed=8)
        player = RandomPlayer(rng=rng)
        for _ in range(23):
            game.apply(player.choose(game))
        copy_ = from_data(to_data(game))
        while not game.over:
            action = player.choose(game)
            assert copy_.apply(action) == game.apply(action)
        assert to_data(copy_) == to_data(game)


def base_position() -> dict[str, Any]:
    """A small valid hand-built position: round 2, seat 1 to place."""
    return {
        "format": 1,
        "variant": "standard",
        "edition": "revised",
        "players": 3,
        "families": [["red"], ["blue"], ["green"]],
        "round": 2,
        "first_player": 1,
        "direction": "left-to-right",
        "scores": [1, 2, 1],
        "hands": [[["red", "archer"], ["red", "lord"]], [["blue", None]], [["green", "spy"]]],
        "set_aside": [[["red", "heir"]], [], []],
        "draw_piles": [[], [], []],
        "fronts": [[], [["blue", "soldier"]], []],
        "queue": [
            [
                {"pid": 0, "owner": 0, "card": ["red", "soldier"], "face_up": False, "tokens": 1},
                {"pid": 3, "owner": 0, "card": ["red", "spy"], "face_up": True, "tokens": 0},
            ],
            [{"pid": 1, "owner": 1, "card": ["blue", None], "face_up": False, "tokens": 0}],
            [{"pid": 2, "owner": 2, "card": ["green", "ambush"], "face_up": False, "tokens": 2}],
        ],
        "next_pid": 5,
        "step": "place",
        "placed": 0,
        "resolving": None,
        "winners": [],
    }


def test_the_base_position_is_valid() -> None:
    game = from_data(base_position())
    assert to_data(game) == base_position()
    assert game.decision is not None and game.decision.seat == 1


def two_player_base() -> dict[str, Any]:
    return {
        "players": 2,
        "variant": "two-player",
        "round": 2,
        "direction": "right-to-left",
        "hands": [[["red", "spy"], ["blue", "spy"]], [["green", None], ["yellow", None]]],
        "queue": [
            [{"pid": 0, "owner": 0, "card": ["red", "lord"], "face_up": True, "tokens": 0}],
            [{"pid": 1, "owner": 1, "card": ["green", None], "face_up": False, "tokens": 1}],
        ],
    }


def resolving(step: str, actor: str | None = None, **fields: Any) -> Any:
    """A mutation putting the base position in resolution step `step`; `actor`
    replaces the kind of the acting card (slot 0's face-up top, a red spy)."""

    def mutate(p: dict[str, Any]) -> None:
        p["step"] = step
        p["placed"] = None
        p["resolving"] = {"index": 0, "ability": None, "chosen": None, "opening": None}
        p["resolving"].update(fields)
        if actor is not None:
            p["queue"][0][-1]["card"] = ["red", actor]

    return mutate


def setter(*path: Any, value: Any) -> Any:
    def mutate(p: dict[str, Any]) -> None:
        node: Any = p
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return mutate


def appender(*path: Any, value: Any) -> Any:
    def mutate(p: dict[str, Any]) -> None:
        node: Any = p
        for key in path:
            node = node[key]
        node.append(value)

    return mutate


def both(*mutations: Any) -> Any:
    def mutate(p: dict[str, Any]) -> None:
        for m in mutations:
            m(p)

    return mutate


def queue_card(pid: int, owner: int, c: list[Any], face_up: bool = False) -> dict[str, Any]:
    return {"pid": pid, "owner": owner, "card": c, "face_up": face_up, "tokens": 0}


def down_card(pid: int, owner: int, c: list[Any]) -> dict[str, Any]:
    return queue_card(pid, owner, c, face_up=False)


MALFORMED = {
    "players not an integer": (setter("players", value="three"), "'players'"),
    "players out of range": (setter("players", value=6), "'players'"),
    "players a boolean": (setter("players", value=True), "'players'"),
    "unknown variant": (setter("variant", value="chess"), "variant"),
    "unknown edition": (setter("edition", value="third"), "edition"),
    "2-player variant for 3": (setter("variant", value="two-player"), "seats 2-2"),
    "a family twice": (setter("families", value=[["red"], ["red"], ["green"]]), "families"),
    "unknown family name": (setter("families", 0, value=["pink"]), "families"),
    "families not lists": (setter("families", value=5), "families"),
    "round 0": (setter("round", value=0), "'round'"),
    "round 7": (setter("round", value=7), "'round'"),
    "round a string": (setter("round", value="2"), "'round'"),
    "first player out of range": (setter("first_player", value=3), "'first_player'"),
    "unknown direction": (setter("direction", value="up"), "direction"),
    "hands not a list": (setter("hands", value={"0": []}), "'hands'"),
    "hands for 2 seats": (setter("hands", value=[[], []]), "'hands'"),
    "a hand not a list": (setter("hands", 0, value="red archer"), "hands[0]"),
    "unknown card kind": (setter("hands", 0, 0, value=["red", "dragon"]), "unknown card kind"),
    "unknown card family": (setter("set_aside", 0, 0, value=["pink", "heir"]), "unknown family"),
    "a card not a pair": (setter("fronts", 1, 0, value=["blue"]), "[family, kind]"),
    "another seat's card in hand": (
        appender("hands", 0, value=["blue", "spy"]),
        "another seat's family",
    ),
    "a negative score": (setter("scores", 1, value=-1), "scores"),
    "a boolean score": (setter("scores", 1, value=True), "scores"),
    "scores for 2 seats": (setter("scores", value=[1, 1]), "scores"),
    "queue not a list": (setter("queue", value={}), "queue"),
    "an empty slot": (setter("queue", 1, value=[]), "slot 1"),
    "a card in play not a map": (setter("queue", 1, 0, value=["blue", None]), "slot 1"),
    "a pid twice": (setter("queue", 2, 0, "pid", value=1), "pid 1 appears twice"),
    "a negative pid": (setter("queue", 2, 0, "pid", value=-1), "'pid'"),
    "an owner out of range": (setter("queue", 1, 0, "owner", value=3), "'owner'"),
    "an owner not of the card's family": (
        setter("queue", 1, 0, "owner", value=2),
        "not of a family of seat 2",
    ),
    "face_up not a boolean": (setter("queue", 1, 0, "face_up", value="yes"), "face_up"),
    "a face-up card of unknown identity": (
        setter("queue", 1, 0, "face_up", value=True),
        "card 1 is face up",
    ),
    "negative tokens": (setter("queue", 2, 0, "tokens", value=-1), "'tokens'"),
    "a slot mixing owners": (
        appender("queue", 1, value=queue_card(4, 2, ["green", "heir"])),
        "slot 1 mixes owners",
    ),
    "next_pid not above every pid": (setter("next_pid", value=3), "next_pid"),
    "a card in two places": (appender("hands", 0, value=["red", "soldier"]), "two places"),
    "a card twice in one hand": (appender("hands", 0, value=["red", "lord"]), "two places"),
    "a card both in front and in play": (
        appender("fronts", 2, value=["green", "ambush"]),
        "two places",
    ),
    "an unknown step": (setter("step", value="dance"), "unknown step"),
    "a step not a string": (setter("step", value=["place"]), "unknown step"),
    "step direction once chosen": (setter("step", value="direction"), "already chosen"),
    "no direction past its step": (setter("direction", value=None), "direction"),
    "placed out of range": (setter("placed", value=3), "'placed'"),
    "the seat to place has no card": (setter("hands", 1, value=[]), "no card"),
    "resolution without resolving": (
        both(setter("step", value="reveal"), setter("resolving", value=None)),
        "resolving",
    ),
    "resolving a missing slot": (resolving("reveal", index=5), "'index'"),
    "keep or reveal a face-up card": (resolving("reveal", index=0), "face-down"),
    "an unknown ability": (resolving("eliminate", ability="dragon"), "resolving.ability"),
    "an ability step for a face-down card": (
        resolving("eliminate", index=2, ability="soldier"),
        "face up",
    ),
    "an ability without a choice": (
        resolving("copy", actor="shapeshifter", ability="shapeshifter"),
        "no legal choice",
    ),
    "a move of the acting card": (
        resolving("move_to", actor="royal_decree", ability="royal_decree", chosen=3),
        "resolving.chosen",
    ),
    "a move of a missing card": (
        resolving("move_to", actor="royal_decree", ability="royal_decree", chosen=9),
        "resolving.chosen",
    ),
    "an ability the acting card lacks": (
        resolving("eliminate", ability="archer"),
        "a spy cannot apply the archer ability",
    ),
    "an ability in the wrong step": (
        resolving("eliminate", ability="spy"),
        "the spy ability does not wait in step 'eliminate'",
    ),
    "an opening for a known card": (
        resolving("open", index=2, opening=2, open_for="reveal"),
        "resolving.opening",
    ),
    "an opening for an unknown reason": (
        resolving("open", index=1, opening=1, open_for="fun"),
        "open_for",
    ),
    "a revealed card to open that is not acting": (
        resolving("open", index=2, opening=1, open_for="reveal"),
        "card being resolved",
    ),
    "winners not seats": (
        both(setter("step", value="over"), setter("winners", value=[4])),
        "winners",
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_from_data_names_what_is_wrong(case: str) -> None:
    mutate, fragment = MALFORMED[case]
    position = base_position()
    mutate(position)
    before = copy.deepcopy(position)
    with pytest.raises(PositionError, match=re.escape(fragment)):
        from_data(position)
    assert position == before, "from_data changed its input"


def test_from_data_refuses_a_non_map() -> None:
    not_maps: list[Any] = [None, [], "position", 3]
    for data in not_maps:
        with pytest.raises(PositionError, match="a position is a map"):
            from_data(data)


def test_from_data_refuses_a_2_player_stack_of_two_families() -> None:
    position = two_player_base()
    from_data(position)
    position["queue"][0].append(queue_card(2, 0, ["blue", "heir"]))
    with pytest.raises(PositionError, match="slot 0 mixes families"):
        from_data(position)


@pytest.mark.parametrize("ability", [["soldier"], {"kind": "soldier"}])
def test_from_data_refuses_an_ability_that_is_not_a_name(ability: Any) -> None:
    position = base_position()
    resolving("eliminate", ability=ability)(position)
    with pytest.raises(PositionError, match=re.escape("resolving.ability")):
        from_data(position)


def test_from_data_refuses_more_than_ten_cards_of_a_family() -> None:
    position = base_position()
    position["hands"][1] = [["blue", None]] * 10  # with the soldier in front and card 1: 12
    with pytest.raises(PositionError, match="family blue has 12 cards"):
        from_data(position)
    # An eleventh card could never be opened: the game would wait for nothing.
    stalled = {
        "players": 3,
        "round": 2,
        "direction": "left-to-right",
        "fronts": [[], [["blue", k.label] for k in KINDS], []],
        "queue": [[down_card(0, 1, ["blue", None])]],
        "step": "reveal",
        "resolving": {"index": 0},
    }
    with pytest.raises(PositionError, match="family blue has 11 cards"):
        from_data(stalled)


def paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The path of every node below the root (containers and leaves)."""
    out: list[tuple[Any, ...]] = []
    if isinstance(node, dict):
        items: Any = node.items()
    elif isinstance(node, list):
        items = enumerate(node)
    else:
        return out
    for key, child in items:
        out.append((*prefix, key))
        out += paths(child, (*prefix, key))
    return out


@st.composite
def mutated_positions(draw: st.DrawFn) -> dict[str, Any]:
    """A sample position with one to three nodes replaced by any JSON value
    or (in a map) deleted."""
    position = copy.deepcopy(draw(st.sampled_from(SAMPLE_POSITIONS)))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(paths(position)))
        parent = position
        for key in path[:-1]:
            parent = parent[key]
        if isinstance(parent, dict) and draw(st.integers(0, 4)) == 0:
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(json_values)
    return position


@pytest.mark.slow  # (many examples: `make test` runs it, not `make test-fast`)
@MUTATION_SETTINGS
@given(mutated_positions())
def test_from_data_loads_or_refuses_a_mutated_position(position: dict[str, Any]) -> None:
    before = copy.deepcopy(position)
    with contextlib.suppress(PositionError):
        from_data(position)
    assert position == before, "from_data changed its input"


@settings(MUTATION_SETTINGS, max_examples=150)
@given(mutated_positions(), st.integers(0, 2**32 - 1))
def test_an_accepted_mutated_position_plays_to_the_end(position: dict[str, Any], seed: int) -> None:
    try:
        game = from_data(position)
    except PositionError:
        return
    assert all(n <= 10 for n in family_sizes(game).values()), "a family of more than 10 cards"
    player = RandomPlayer(seed=seed)
    for _ in range(2000):
        if game.over:
            break
        assert game.legal_actions(), f"no legal action in step {game.step!r}"
        game.apply(player.choose(game))
    assert game.over
    assert to_data(from_data(to_data(game))) == to_data(game)


def family_sizes(game: Game) -> Counter[int]:
    sizes: Counter[int] = Counter()
    for zone in (game.hands, game.set_aside, game.draw_piles, game.fronts):
        for row in zone:
            sizes.update(c.family for c in row)
    sizes.update(c.family for slot in game.queue for c in slot)
    return sizes

"""`Game.copy()`, made for search: an independent game that plays on exactly
as the original would, at any moment (mid-resolution and openings included),
and the immutable legal actions that copies may share.
"""

from __future__ import annotations

import dataclasses
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oriflamme.engine import (
    KEEP,
    STANDARD,
    TWO_PLAYER,
    Game,
    HeuristicPlayer,
    RandomPlayer,
    Rules,
    event_to_data,
    from_data,
    hidden_deal,
    new_game,
    to_data,
)

from .test_properties import GAME_SETTINGS, draw_action, draw_game


def games_at_every_step(
    players: int, seed: int, *, hidden: bool = False, edition: str = "revised"
) -> list[Game]:
    """A copy of a seeded random game at each of its decisions."""
    variant = TWO_PLAYER if players == 2 else STANDARD
    deal = hidden_deal(Rules(players, variant, edition)) if hidden else None
    game = new_game(players, variant=variant, edition=edition, seed=seed, deal=deal)
    player = RandomPlayer(seed=seed)
    out = []
    while not game.over:
        out.append(game.copy())
        game.apply(player.choose(game))
    out.append(game.copy())
    return out


def inplay_ids(game: Game) -> set[int]:
    return {id(c) for s in game.queue for c in s}


def mutable_ids(game: Game) -> set[int]:
    """Every mutable object a game is made of (but its rules and cards, which
    are immutable and may be shared)."""
    rows = (game.hands, game.set_aside, game.draw_piles, game.fronts, game.queue)
    ids = {id(game.scores), id(game.order), id(game.cursor), id(game.cursor.slot)}
    ids |= {id(r) for r in rows} | {id(x) for r in rows for x in r}
    return ids | inplay_ids(game)


SETTINGS = [
    (2, 1, False, "revised"),
    (3, 2, False, "first"),
    (4, 3, True, "revised"),
    (5, 4, False, "revised"),
    (5, 5, True, "first"),
]


@pytest.mark.parametrize(("players", "seed", "hidden", "edition"), SETTINGS)
def test_a_copy_equals_the_original_and_shares_nothing_mutable(
    players: int, seed: int, hidden: bool, edition: str
) -> None:
    steps = set()
    for game in games_at_every_step(players, seed, hidden=hidden, edition=edition):
        twin = game.copy()
        steps.add(game.step)
        assert to_data(twin) == to_data(game)
        assert twin.decision == game.decision
        assert not mutable_ids(twin) & mutable_ids(game)
        # The cursor points into the copy's own queue.
        for name in ("actor", "chosen", "opening"):
            card = getattr(twin.cursor, name)
            if card is not None:
                assert id(card) in inplay_ids(twin), name
        if twin.cursor.slot:
            assert any(s is twin.cursor.slot for s in twin.queue)
    assert {"place", "reveal", "eliminate", "over"} <= steps
    if hidden:
        assert "open" in steps


@pytest.mark.parametrize(("players", "seed", "hidden", "edition"), SETTINGS)
def test_playing_a_copy_leaves_the_original_as_it_was(
    players: int, seed: int, hidden: bool, edition: str
) -> None:
    for i, game in enumerate(games_at_every_step(players, seed, hidden=hidden, edition=edition)):
        before = to_data(game)
        legal = game.legal_actions()
        twin = game.copy()
        player = RandomPlayer(seed=i)
        while not twin.over:
            twin.apply(player.choose(twin))
        assert to_data(game) == before
        assert game.legal_actions() == legal


@pytest.mark.parametrize(("players", "seed", "hidden", "edition"), SETTINGS)
def test_a_copy_plays_on_exactly_as_the_original(
    players: int, seed: int, hidden: bool, edition: str
) -> None:
    for i, game in enumerate(games_at_every_step(players, seed, hidden=hidden, edition=edition)):
        if i % 3:
            continue  # every third decision keeps the test quick
        twin = game.copy()
        players_a = [HeuristicPlayer(seed=i + s) for s in range(game.n)]
        players_b = [HeuristicPlayer(seed=i + s) for s in range(game.n)]
        while not game.over:
            seat = game.current_seat()
            assert seat is not None and twin.current_seat() == seat
            a = players_a[seat].choose(game)
            assert players_b[seat].choose(twin) == a
            events_a = [event_to_data(e) for e in game.apply(a)]
            assert [event_to_data(e) for e in twin.apply(a)] == events_a
        assert twin.over and to_data(twin) == to_data(game)


@GAME_SETTINGS
@given(st.data())
def test_a_copy_at_any_moment_plays_on_like_the_original(data: st.DataObject) -> None:
    game = draw_game(data, hidden=data.draw(st.booleans(), label="hidden"))
    for _ in range(data.draw(st.integers(0, 120), label="decisions before the copy")):
        if game.over:
            break
        game.apply(draw_action(data, game))
    twin = game.copy()
    reloaded = from_data(to_data(game))
    while not game.over:
        action = draw_action(data, game)
        expected = [event_to_data(e) for e in game.apply(action)]
        assert [event_to_data(e) for e in twin.apply(action)] == expected
        assert [event_to_data(e) for e in reloaded.apply(action)] == expected
    assert to_data(twin) == to_data(game) == to_data(reloaded)


def test_legal_actions_are_an_immutable_tuple_computed_once_per_decision() -> None:
    game = new_game(4, seed=8)
    player = RandomPlayer(seed=8)
    while not game.over:
        legal = game.legal_actions()
        assert type(legal) is tuple and legal is game.legal_actions()
        assert game.decision is not None and game.decision.options is legal
        for action in legal:
            fields = dataclasses.fields(action)
            if fields:
                with pytest.raises(dataclasses.FrozenInstanceError):
                    setattr(action, fields[0].name, None)
        with pytest.raises(TypeError):
            legal[0] = KEEP  # type: ignore[index]
        game.apply(player.choose(game))
    assert game.legal_actions() == ()


def test_a_copy_and_its_original_may_share_the_legal_actions() -> None:
    game = new_game(3, seed=4)
    rng = random.Random(4)
    while not game.over:
        legal = game.legal_actions()
        twin = game.copy()
        assert twin.legal_actions() == legal
        twin.apply(legal[int(rng.random() * len(legal))])
        assert game.legal_actions() is legal  # untouched by the copy's move
        game.apply(legal[int(rng.random() * len(legal))])


def test_a_game_pickled_before_the_cursor_unpickles_and_plays_on_the_same() -> None:
    """A server's saved lobby holds its games pickled: one saved by the
    version whose game kept its step in loose attributes must load."""
    import pickle

    from oriflamme.engine import RandomPlayer, new_game, to_data

    game = new_game(4, seed=11)
    player = RandomPlayer(seed=3)
    while not (game.round == 2 and game.cursor.index >= 0):  # in mid-resolution
        game.apply(player.choose(game))
    cursor = game.cursor
    old_state = {k: v for k, v in game.__dict__.items() if k not in ("cursor", "over", "_legal")}
    old_state |= {
        "step": cursor.step,
        "place_turn": cursor.placed,
        "cur": cursor.index,
        "cur_slot": cursor.slot,
        "actor": cursor.actor,
        "ability": cursor.ability,
        "chosen": cursor.chosen,
        "opening": cursor.opening,
        "open_for": cursor.open_for,
        "_legal": None,
    }
    old = pickle.loads(pickle.dumps(game))  # (a real pickle of today's, then made old)
    old.__dict__.clear()
    old.__setstate__(pickle.loads(pickle.dumps(old_state)))
    assert to_data(old) == to_data(game)
    assert old.legal_actions() == game.legal_actions()
    rng_a, rng_b = RandomPlayer(seed=5), RandomPlayer(seed=5)
    while not game.over:
        assert old.apply(rng_a.choose(old)) == game.apply(rng_b.choose(game))
    assert old.over and old.winners == game.winners

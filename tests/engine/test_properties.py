"""Property tests: random legal games for every table size and both editions.

How this works: hypothesis draws the table (2-5 players, the 2-player variant
for two, either edition, the first player, the deal seed) and then, at every
decision, an index into `game.legal_actions()`. Indices shrink towards 0, so a
failing game shrinks to "take the first option" except where another choice
matters. Each test checks one family of properties at every step of such a
game; the checks are written from the rulings (docs/RULES.md), not
from the engine's code.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oriflamme.engine import (
    BACKS,
    CARDS,
    DIRECTIONS,
    EDITIONS,
    FAMILY_NAMES,
    FIRST,
    KEEP,
    KINDS,
    LAST,
    REVEAL,
    STANDARD,
    TWO_PLAYER,
    Action,
    Card,
    ChooseDirection,
    Event,
    Game,
    IllegalAction,
    MoveTo,
    Open,
    Place,
    RandomPlayer,
    Rules,
    Target,
    action_from_data,
    action_to_data,
    event_from_data,
    event_to_data,
    from_data,
    hidden_deal,
    mask_event,
    new_game,
    to_data,
    view,
)
from oriflamme.engine.events import Placed, RoundStarted

# A random game takes about 50 (3 players) to 90 (5 players) decisions; this
# bounds a runaway loop, not a real game.
MAX_DECISIONS = 2000
CARD_ZONES = ("hands", "set_aside", "draw_piles", "fronts")

GAME_SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# ---------------------------------------------------------------- drawing games


def draw_game(data: st.DataObject, *, hidden: bool = False) -> Game:
    """A new game at a table drawn by hypothesis (hidden: every card a back)."""
    players = data.draw(st.integers(2, 5), label="players")
    variant = TWO_PLAYER if players == 2 else STANDARD
    edition = data.draw(st.sampled_from(EDITIONS), label="edition")
    first_player = data.draw(st.integers(0, players - 1), label="first player")
    if hidden:
        deal = hidden_deal(Rules(players, variant, edition))
        return new_game(
            players, variant=variant, edition=edition, first_player=first_player, deal=deal
        )
    seed = data.draw(st.integers(0, 2**32 - 1), label="deal seed")
    return new_game(players, variant=variant, edition=edition, first_player=first_player, seed=seed)


def draw_action(data: st.DataObject, game: Game) -> Action:
    options = game.legal_actions()
    assert options, f"no legal action in step {game.step!r}"
    if len(options) == 1:
        return options[0]
    return options[data.draw(st.integers(0, len(options) - 1))]


def plain(value: Any) -> Any:
    """`value` through JSON and back: equal only if it was plain data."""
    return json.loads(json.dumps(value))


# ---------------------------------------------------------------- invariants


def assert_table_consistent(game: Game, identities_known: bool) -> None:
    """Every card is in exactly one place; the queue is well formed; scores >= 0."""
    rules = game.rules
    in_queue = [c for slot in game.queue for c in slot]
    for seat, families in enumerate(rules.families):
        held = [
            *game.hands[seat],
            *game.set_aside[seat],
            *game.draw_piles[seat],
            *game.fronts[seat],
            *(c.card for c in in_queue if c.owner == seat),
        ]
        assert all(c.family in families for c in held), f"seat {seat} holds another's card"
        for family in families:
            of_family = [c for c in held if c.family == family]
            assert len(of_family) == 10, f"family {family} has {len(of_family)} cards"
            kinds = [c.kind for c in of_family if c.kind is not None]
            assert len(kinds) == len(set(kinds)), f"a card of family {family} is twice"
            if identities_known:
                assert sorted(kinds) == list(KINDS)
    assert sum(map(len, game.fronts)) + len(in_queue) == game.next_pid
    pids = [c.pid for c in in_queue]
    assert len(pids) == len(set(pids)) and all(0 <= p < game.next_pid for p in pids)
    for slot in game.queue:
        assert slot, "an empty slot stays in the queue"
        assert len({c.owner for c in slot}) == 1, "a slot mixes owners"
        if rules.variant == TWO_PLAYER:
            assert len({c.family for c in slot}) == 1, "a 2-player stack mixes families"
        if game.round == 1:
            assert len(slot) == 1, "a stack in round 1"
        for c in slot:
            assert c.tokens >= 0
            if c.face_up:
                assert c.kind is not None and c.tokens == 0, f"face-up card {c} holds tokens"
    assert all(score >= 0 for score in game.scores), game.scores


def assert_decision_sane(game: Game) -> None:
    decision = game.decision
    assert decision is not None and not game.over
    assert 0 <= decision.seat < game.n
    assert decision.kind == game.step == game.cursor.step
    options = game.legal_actions()
    assert options and decision.options == options
    assert len(set(options)) == len(options), "a legal action is offered twice"
    if decision.kind == "place":
        assert decision.seat in game.placement_order()
        assert game.hands[decision.seat]
    if decision.kind == "reveal":
        top = game.queue[game.cursor.index][-1]
        assert not top.face_up and top.owner == decision.seat and top.pid == decision.pid


def assert_round_start(game: Game) -> None:
    """Hand sizes when a round starts: standard 7 then one fewer each round;
    2-player 6 (3 + 3, then 2 placed and 2 drawn) until the pile is empty."""
    for hand in game.hands:
        if game.rules.variant == TWO_PLAYER:
            assert len(hand) == (6 if game.round <= 5 else 4)
        else:
            assert len(hand) == 8 - game.round


def assert_game_ended(game: Game, events: list[Event]) -> None:
    assert game.over and game.step == "over"
    assert game.decision is None and game.legal_actions() == ()
    assert game.round == 6
    left = 2 if game.rules.variant == TWO_PLAYER else 1
    assert [len(h) for h in game.hands] == [left] * game.n
    assert all(not pile for pile in game.draw_piles)
    placements = 6 * (4 if game.rules.variant == TWO_PLAYER else game.n)
    assert game.next_pid == placements
    in_queue = [sum(c.owner == seat for s in game.queue for c in s) for seat in range(game.n)]
    best = max(zip(game.scores, in_queue, strict=True))
    expected = tuple(s for s in range(game.n) if (game.scores[s], in_queue[s]) == best)
    assert game.winners == expected
    if events:  # none when the game was loaded already over
        last = event_to_data(events[-1])
        assert last == {"type": "game_ended", "scores": game.scores, "winners": list(expected)}
    try:
        game.check(KEEP)
    except IllegalAction:
        pass
    else:
        raise AssertionError("an action was accepted after the end")


def play_checked(
    game: Game, choose: Any, identities_known: bool
) -> list[tuple[Action, list[Event]]]:
    """Play to the end with `choose(game)`, checking the invariants at every step."""
    log: list[tuple[Action, list[Event]]] = []
    all_events: list[Event] = []
    assert_table_consistent(game, identities_known)
    while not game.over:
        assert len(log) < MAX_DECISIONS
        assert_decision_sane(game)
        action = choose(game)
        events = game.apply(action)
        log.append((action, events))
        all_events += events
        assert_table_consistent(game, identities_known)
        if any(isinstance(e, RoundStarted) for e in events) and not game.over:
            assert_round_start(game)
    assert_game_ended(game, all_events)
    return log


# ---------------------------------------------------------------- the properties


@pytest.mark.slow  # (many examples: `make test` runs it, not `make test-fast`)
@GAME_SETTINGS
@given(st.data())
def test_random_games_keep_every_card_once_and_end_after_round_6(data: st.DataObject) -> None:
    game = draw_game(data)
    play_checked(game, lambda g: draw_action(data, g), identities_known=True)


@pytest.mark.slow
@GAME_SETTINGS
@given(st.data())
def test_a_game_replays_from_its_initial_state_and_decision_log(data: st.DataObject) -> None:
    game = draw_game(data)
    initial = plain(to_data(game))
    log: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    while not game.over:
        # Any position reloads to the same state, mid-resolution included.
        snapshot = to_data(game)
        reloaded = from_data(plain(snapshot))
        assert to_data(reloaded) == snapshot
        assert reloaded.legal_actions() == game.legal_actions()
        action = draw_action(data, game)
        log.append(plain(action_to_data(action)))
        for event in game.apply(action):
            event_data = plain(event_to_data(event))
            assert event_from_data(event_data) == event
            events.append(event_data)
    final = to_data(game)

    replay = from_data(initial)
    replayed_events = []
    for action_data in log:
        replayed_events += [event_to_data(e) for e in replay.apply(action_from_data(action_data))]
    assert to_data(replay) == final
    assert replayed_events == events


def assert_view_hides(truth: dict[str, Any], seen: dict[str, Any], seat: int | None) -> None:
    """`seen` is `truth` with exactly the identities `seat` may not know
    (ruling 21) replaced by card backs: other seats' hands and set-aside
    cards, every draw pile, other seats' face-down cards (covered ones too).
    Hidden hands and set-aside cards are listed by family, whatever their
    true order."""
    assert seen["viewer"] == seat
    assert set(seen) == set(truth) | {"viewer"}
    for key in truth:
        if key not in CARD_ZONES and key != "queue":
            assert seen[key] == truth[key], key
    for zone in CARD_ZONES:
        assert len(seen[zone]) == len(truth[zone])
        for owner, (true_row, seen_row) in enumerate(zip(truth[zone], seen[zone], strict=True)):
            if zone == "fronts" or (zone != "draw_piles" and owner == seat):
                expected = true_row
            elif zone == "draw_piles":  # the order of a pile's families is public
                expected = [[family, None] for family, _ in true_row]
            else:  # in a fixed order: the order of a hand would tell which card left
                families = sorted(FAMILY_NAMES.index(family) for family, _ in true_row)
                expected = [[FAMILY_NAMES[f], None] for f in families]
            assert seen_row == expected, f"{zone}[{owner}] as seen by {seat}"
    assert len(seen["queue"]) == len(truth["queue"])
    for true_slot, seen_slot in zip(truth["queue"], seen["queue"], strict=True):
        assert len(seen_slot) == len(true_slot)
        for true_card, seen_card in zip(true_slot, seen_slot, strict=True):
            visible = true_card["face_up"] or true_card["owner"] == seat
            family, _ = true_card["card"]
            expected = dict(true_card, card=true_card["card"] if visible else [family, None])
            assert seen_card == expected, f"card {true_card['pid']} as seen by {seat}"


def cards_named(event: Event) -> list[Card]:
    cards: list[Card] = []
    for value in event:
        if isinstance(value, Card):
            cards.append(value)
        elif isinstance(value, tuple):
            cards += [c for c in value if isinstance(c, Card)]
    return cards


def assert_events_hide(events: list[Event], game: Game, seat: int | None) -> None:
    """A masked event names no identity `seat` may not know once the events
    happened: only its own cards and cards now public (face up or in front)."""
    public = {c.card for s in game.queue for c in s if c.face_up}
    public.update(c for front in game.fronts for c in front)
    own = set() if seat is None else set(game.rules.families[seat])
    for event in events:
        masked = mask_event(event, seat)
        for c in cards_named(masked):
            if c.kind is not None:
                assert c.family in own or c in public, f"{masked} shows {c} to seat {seat}"
        if getattr(event, "seat", None) == seat:
            assert masked == event, "a seat's own event lost its card"
        assert event_from_data(plain(event_to_data(masked))) == masked


@pytest.mark.slow
@GAME_SETTINGS
@given(st.data())
def test_views_and_masked_events_hide_what_a_seat_may_not_know(data: st.DataObject) -> None:
    game = draw_game(data)
    seats: list[int | None] = [None, *range(game.n)]
    events: list[Event] = []
    while True:
        truth = to_data(game)
        for seat in seats:
            assert_view_hides(truth, view(game, seat), seat)
            assert_events_hide(events, game, seat)
        if game.over:
            break
        events = game.apply(draw_action(data, game))


def action_universe(game: Game) -> list[Action]:
    """Plausible actions for the pending decision, legal or not: every card of
    the deciding seat's families and their backs (plus another family's), at
    every end, on every card in play (covered ones too) and on pids that do
    not exist; targets and move indices in and out of range; every action type."""
    seat = game.current_seat()
    assert seat is not None
    families = game.rules.families[seat]
    other = next(f for f in range(5) if f not in families)
    cards = [CARDS[f][k] for f in families for k in KINDS]
    cards += [BACKS[f] for f in families] + [CARDS[other][0], BACKS[other]]
    pids = [c.pid for s in game.queue for c in s] + [-1, game.next_pid, 63, 64, 1 << 40]
    ats: list[Any] = [FIRST, LAST, "middle", None, *pids]
    actions: list[Action] = [Place(c, at) for c in cards for at in ats]
    actions += [Target(p) for p in pids]
    actions += [MoveTo(i) for i in range(-1, len(game.queue) + 2)] + [MoveTo(1 << 40)]
    actions += [Open(c) for c in cards]
    actions += [ChooseDirection(d) for d in DIRECTIONS] + [ChooseDirection("up")]
    actions += [KEEP, REVEAL]
    return actions


@pytest.mark.slow
@settings(GAME_SETTINGS, max_examples=25)
@given(st.data())
def test_actions_outside_the_legal_list_are_refused_and_change_nothing(
    data: st.DataObject,
) -> None:
    game = draw_game(data)
    while not game.over:
        before = to_data(game)
        legal = game.legal_actions()
        owner = game.current_seat()
        assert owner is not None
        others = [s for s in range(game.n) if s != owner]
        for action in legal:
            game.check(action)
            game.check(action, seat=owner)
            for seat in others:
                try:
                    game.apply(action, seat=seat)
                except IllegalAction:
                    pass
                else:
                    raise AssertionError(f"seat {seat} played {action} for seat {owner}")
        for action in action_universe(game):
            if action in legal:
                continue
            try:
                game.apply(action)
            except IllegalAction:
                pass
            else:
                raise AssertionError(f"{action} accepted in step {before['step']}; legal: {legal}")
        assert to_data(game) == before
        assert game.legal_actions() == legal
        game.apply(draw_action(data, game))


def mask_place(action: Action, visible_families: set[int]) -> Action:
    if isinstance(action, Place) and action.card.family not in visible_families:
        return Place(BACKS[action.card.family], action.at)
    return action


def play_to_the_end(game: Game, seed: int) -> None:
    """RandomPlayer to the end (it answers `open` with one of the candidates)."""
    play_checked(game, RandomPlayer(seed=seed).choose, identities_known=False)


@GAME_SETTINGS
@given(st.data())
def test_a_view_loads_as_a_playable_position(data: st.DataObject) -> None:
    game = draw_game(data)
    for _ in range(data.draw(st.integers(0, 120), label="decisions before the view")):
        if game.over:
            break
        game.apply(draw_action(data, game))
    seat = data.draw(st.sampled_from([None, *range(game.n)]), label="viewer")
    seen = plain(view(game, seat))
    loaded = from_data(seen)
    assert to_data(loaded) == {k: v for k, v in seen.items() if k != "viewer"}
    assert view(loaded, seat) == seen
    visible = set() if seat is None else set(game.rules.families[seat])
    expected = {mask_place(a, visible) for a in game.legal_actions()}
    assert set(loaded.legal_actions()) == expected
    play_to_the_end(loaded, data.draw(st.integers(0, 2**32 - 1), label="player seed"))


@pytest.mark.slow
@GAME_SETTINGS
@given(st.data())
def test_a_game_without_identities_plays_to_the_end(data: st.DataObject) -> None:
    game = draw_game(data, hidden=True)
    play_checked(game, lambda g: draw_action(data, g), identities_known=False)


def sorted_hands(position: dict[str, Any]) -> dict[str, Any]:
    # A hand of backs is a multiset of families; its order is not compared.
    return dict(position, hands=[sorted(h) for h in position["hands"]])


@pytest.mark.slow
@GAME_SETTINGS
@given(st.data())
def test_a_referee_without_identities_follows_the_full_game(data: st.DataObject) -> None:
    """The server's engine sees card backs only and is told an identity when
    its owner opens it. Fed the same decisions, it stays in step with the full
    game: its state is the spectators' view and its events are the
    spectators' events."""
    game = draw_game(data)
    rules = game.rules
    referee = new_game(
        rules.players,
        variant=rules.variant,
        edition=rules.edition,
        first_player=game.first_player,
        deal=hidden_deal(rules),
    )
    placed: dict[int, Card] = {}
    while True:
        public = {k: v for k, v in view(game, None).items() if k != "viewer"}
        assert sorted_hands(to_data(referee)) == sorted_hands(public)
        if game.over:
            break
        assert {mask_place(a, set()) for a in game.legal_actions()} == set(referee.legal_actions())
        action = draw_action(data, game)
        seat = game.current_seat()
        events = game.apply(action)
        placed.update((e.pid, e.card) for e in events if isinstance(e, Placed))
        seen = referee.apply(mask_place(action, set()), seat=seat)
        while referee.step == "open":
            decision = referee.decision
            assert decision is not None and decision.pid is not None
            seen += referee.apply(Open(placed[decision.pid]), seat=decision.seat)
        assert seen == [mask_event(e, None) for e in events]


def test_random_players_finish_many_games() -> None:
    """Broad coverage beyond hypothesis: seeded random games at every table,
    with every identity known and with none (a referee's game)."""
    rng = random.Random(2024)
    for players in (2, 3, 4, 5):
        variant = TWO_PLAYER if players == 2 else STANDARD
        for edition in EDITIONS:
            for _ in range(15):
                game = new_game(
                    players, variant=variant, edition=edition, seed=rng.randrange(2**32)
                )
                play_checked(game, RandomPlayer(rng=rng).choose, identities_known=True)
            for _ in range(5):
                deal = hidden_deal(Rules(players, variant, edition))
                game = new_game(players, variant=variant, edition=edition, deal=deal)
                play_checked(game, RandomPlayer(rng=rng).choose, identities_known=False)

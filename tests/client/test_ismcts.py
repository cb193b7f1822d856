"""The ISMCTS bot: legal whole games, a winning move found, blind to what it cannot see.

Small iteration budgets throughout, so that these stay fast.
"""

from __future__ import annotations

import random
import threading
from types import SimpleNamespace
from typing import Any

import pytest
import trio

from oriflamme.client.bots import STRATEGIES, Behaviour, Bot, Think, parse_think
from oriflamme.client.ismcts import Determinizer, ISMCTSPlayer
from oriflamme.client.session import _behave
from oriflamme.engine import (
    KINDS,
    Card,
    Game,
    HeuristicPlayer,
    Kind,
    Target,
    card_to_data,
    from_data,
    new_game,
    to_data,
    view,
)
from oriflamme.launcher.inprocess import play_recorded_game
from oriflamme.protocol import messages as m
from oriflamme.protocol.verify import verify_record_bytes


def seen(game: Game, seat: int) -> Game:
    """What the bot is given: its seat's view, nothing else."""
    return from_data(view(game, seat))


@pytest.mark.parametrize("players", [2, 3, 4, 5])
def test_it_plays_legal_complete_games_at_every_table_size(players: int) -> None:
    variant = "two-player" if players == 2 else "standard"
    game = new_game(players, variant=variant, seed=players)
    bot = ISMCTSPlayer(seed=players, iterations=6)
    others = HeuristicPlayer(seed=players)
    searched = 0
    while not game.over:
        decision = game.decision
        assert decision is not None
        if decision.seat in (0, 1):  # two searching seats, the others heuristic
            action = bot.choose(seen(game, decision.seat))
            searched += bot.last_iterations > 0
        else:
            action = others.choose(game)
        assert action in decision.options
        game.apply(action, seat=decision.seat)
    assert game.round == 6 and game.winners
    assert searched > 5


def test_a_decision_with_one_option_is_answered_at_once() -> None:
    game = new_game(3, seed=4)
    game.apply(game.legal_actions()[0])  # the direction
    # Round 1, first placement: the queue is empty, each card goes "first" only;
    # play until a seat has a single option.
    bot = ISMCTSPlayer(seed=1, iterations=50)
    data = to_data(game)
    data["hands"][0] = data["hands"][0][:1]
    data["set_aside"][0] = data["set_aside"][0] + [["red", k.label] for k in KINDS][:0]
    one = from_data(data)
    assert len(one.legal_actions()) == 1
    assert bot.choose(one) == one.legal_actions()[0]
    assert bot.last_iterations == 0


def _last_shot() -> dict[str, Any]:
    """Round 6, our face-up Soldier resolving (seat 0, 6 points) between seat
    2's face-up Soldier (already resolved) and seat 1's face-up Lord (6
    points), which resolves next: eliminating the Lord wins alone (7 to 6),
    eliminating the Soldier lets the Lord tie (7 all, one card each: a shared
    win). The heuristic prefers the Soldier (the bigger threat)."""
    fams = ["red", "blue", "green"]
    queue = [
        [{"pid": 0, "owner": 2, "card": ["green", "soldier"], "face_up": True, "tokens": 0}],
        [{"pid": 1, "owner": 0, "card": ["red", "soldier"], "face_up": True, "tokens": 0}],
        [{"pid": 2, "owner": 1, "card": ["blue", "lord"], "face_up": True, "tokens": 0}],
    ]
    in_queue = {(2, Kind.SOLDIER), (0, Kind.SOLDIER), (1, Kind.LORD)}
    hands, aside, fronts = [], [], []
    rng = random.Random(3)
    for seat, fam in enumerate(fams):
        rest = [k for k in KINDS if (seat, k) not in in_queue]
        rng.shuffle(rest)
        hands.append([[fam, rest[0].label]])
        aside.append([[fam, k.label] for k in rest[1:4]])
        fronts.append([[fam, k.label] for k in rest[4:]])
    return {
        "players": 3,
        "round": 6,
        "direction": "left-to-right",
        "scores": [6, 6, 1],
        "hands": hands,
        "set_aside": aside,
        "fronts": fronts,
        "queue": queue,
        "step": "eliminate",
        "resolving": {"index": 1, "ability": "soldier"},
    }


def test_it_finds_the_winning_shot_that_the_heuristic_misses() -> None:
    game = from_data(_last_shot())
    options = game.legal_actions()
    assert set(options) == {Target(0), Target(2)}
    assert HeuristicPlayer(seed=1).choose(game) == Target(0)
    for seed in range(3):
        assert ISMCTSPlayer(seed=seed, iterations=30).choose(seen(game, 0)) == Target(2)


def _shuffled_hidden(game: Game, me: int, rng: random.Random) -> Game:
    """The same game with other seats' hidden cards dealt otherwise: their
    hands, set-aside cards and face-down cards in the queue swap identities
    (per family), so that nothing `me` may see changes."""
    data = to_data(game)
    for seat in range(game.n):
        if seat == me:
            continue
        places: list[tuple[list[Any], int]] = []
        for key in ("hands", "set_aside"):
            row = data[key][seat]
            places += [(row, i) for i in range(len(row))]
        queued = [c for slot in data["queue"] for c in slot]
        cards = [row[i] for row, i in places]
        hidden = [c for c in queued if c["owner"] == seat and not c["face_up"]]
        cards += [c["card"] for c in hidden]
        by_family: dict[str, list[Any]] = {}
        for c in cards:
            by_family.setdefault(c[0], []).append(c)
        for fam_cards in by_family.values():
            rng.shuffle(fam_cards)
        it = {f: iter(cs) for f, cs in by_family.items()}
        for row, i in places:
            row[i] = next(it[row[i][0]])
        for c in hidden:
            c["card"] = next(it[c["card"][0]])
    return from_data(data)


@pytest.mark.parametrize(("players", "variant"), [(2, "two-player"), (4, "standard")])
def test_its_decisions_do_not_depend_on_what_it_cannot_see(players: int, variant: str) -> None:
    game = new_game(players, variant=variant, seed=11)
    others = HeuristicPlayer(seed=11)
    rng = random.Random(5)
    compared = 0
    while not game.over and compared < 8:
        decision = game.decision
        assert decision is not None
        if decision.seat == 0 and len(decision.options) > 1:
            other = _shuffled_hidden(game, 0, rng)
            assert view(other, 0) == view(game, 0)
            assert to_data(other) != to_data(game) or game.round == 1
            a = ISMCTSPlayer(seed=7, iterations=12).choose(seen(game, 0))
            b = ISMCTSPlayer(seed=7, iterations=12).choose(seen(other, 0))
            assert a == b
            compared += 1
            action = a
        else:
            action = others.choose(game)
        game.apply(action)
    assert compared == 8


def test_determinizations_respect_what_the_seat_knows() -> None:
    game = new_game(2, variant="two-player", seed=3)
    while game.round < 3:
        game.apply(HeuristicPlayer(seed=1).choose(game))
    mine = seen(game, 0)
    sampler = Determinizer(mine, 0)
    public = view(game, None)
    for seed in range(20):
        g = sampler.sample(random.Random(seed))
        data = to_data(g)
        # Everything the seat sees stays as it is: its hand and set-aside cards,
        # every face-up card, the fronts; only backs got identities.
        assert data["hands"][0] == view(game, 0)["hands"][0]
        assert data["set_aside"][0] == view(game, 0)["set_aside"][0]
        assert data["fronts"] == public["fronts"]
        # Each family's ten cards once each, none unknown.
        cards: list[Card] = [
            c
            for rows in (g.hands, g.set_aside, g.draw_piles, g.fronts)
            for row in rows
            for c in row
        ]
        cards += [ip.card for slot in g.queue for ip in slot]
        assert all(c.kind is not None for c in cards)
        assert len(cards) == len(set(cards)) == 40
        # The draw piles keep the order of their families.
        assert [[c[0] for c in p] for p in data["draw_piles"]] == [
            [c[0] for c in p] for p in public["draw_piles"]
        ]
    assert card_to_data(mine.hands[1][0])[1] is None


@pytest.mark.slow
def test_the_bot_plays_a_whole_game_through_the_protocol() -> None:
    # Seat 0, a client, searches; seats 1 and 2 are server bots. (It raises
    # if the server refused anything.)
    record = play_recorded_game(3, strategies=["ismcts", "heuristic", "random"], seed=3)
    assert verify_record_bytes(record).ok


def test_strategies_and_budgets() -> None:
    assert "ismcts" in STRATEGIES
    assert Bot("ismcts").slow and not Bot("heuristic").slow
    assert parse_think("250") == Think(seconds=0.25)
    assert parse_think("40i") == Think(iterations=40)
    for bad in ("fast", "0", "-3i"):
        with pytest.raises(ValueError):
            parse_think(bad)


def test_a_time_budget_is_kept_with_the_clock_it_is_given() -> None:
    ticks = iter(range(1000))
    bot = ISMCTSPlayer(seed=1, seconds=10, clock=lambda: float(next(ticks)))
    game = new_game(3, seed=2)
    bot.choose(seen(game, 0))
    assert bot.last_iterations == 10


class _Thinking(Bot):
    """Records the thread its decisions are made in."""

    def __init__(self, strategy: str) -> None:
        super().__init__(strategy, iterations=5)
        self.threads: list[int] = []

    def decide(self, position: Any, options: Any, turn: int | None) -> Any:
        self.threads.append(threading.get_ident())
        return super().decide(position, options, turn)


def _client_to_decide(game: Any) -> Any:
    """What `_behave` reads of a session: a mirror whose decision is ours."""
    mirror = SimpleNamespace(
        game_id=bytes(16),
        my_turn=True,
        decision=SimpleNamespace(turn=7),
        options=lambda: list(game.legal_actions()),
        engine_game=lambda: seen(game, game.decision.seat),
        automatic=lambda: [],
        answer=lambda action: m.Ping(id=1),  # (what is sent does not matter here)
    )
    return SimpleNamespace(state=SimpleNamespace(game=mirror), answered=None)


def test_a_searching_bot_thinks_off_the_event_loop_and_answers_on_it() -> None:
    game = new_game(3, seed=2)
    while len(game.legal_actions()) < 2:
        game.apply(game.legal_actions()[0])

    async def main() -> tuple[int, list[int], list[int], list[Any]]:
        slow, quick = _Thinking("ismcts"), _Thinking("heuristic")
        sent = await _behave(Behaviour(slow), _client_to_decide(game))
        await _behave(Behaviour(quick), _client_to_decide(game))
        return threading.get_ident(), slow.threads, quick.threads, sent

    loop, slow, quick, sent = trio.run(main)
    assert len(slow) == 1 and slow != [loop]  # the search, in a worker thread
    assert quick == [loop]  # a quick bot decides on the event loop
    assert sent == [m.Ping(id=1)]  # the answer made on the event loop, once


def test_a_kept_face_down_card_is_dealt_an_ambush_more_often() -> None:
    data = _last_shot()
    # Seat 1's Lord becomes a face-down card it kept twice; what can it be?
    data["queue"][2][0].update(face_up=False, tokens=2)
    fronts, aside = data["fronts"][1], data["set_aside"][1]
    if ["blue", "ambush"] in fronts:  # let the Ambush be hidden, set aside
        i = fronts.index(["blue", "ambush"])
        fronts[i], aside[0] = aside[0], fronts[i]
    game = from_data(data)
    mine = seen(game, 0)
    weighted, uniform = Determinizer(mine, 0), Determinizer(mine, 0, prior=None)
    rng = random.Random(1)

    def ambushes(sampler: Determinizer) -> int:
        count = 0
        for _ in range(400):
            found = sampler.sample(rng).find(2)
            assert found is not None and found[1].kind is not None
            count += found[1].kind == Kind.AMBUSH
        return count

    assert ambushes(weighted) > 2 * ambushes(uniform)


def test_the_command_line_offers_the_search() -> None:
    from oriflamme.launcher.cli import build_parser

    parser = build_parser()
    args = parser.parse_args(["bot", "example.org", "--room", "r", "--strategy", "ismcts"])
    assert args.strategy == "ismcts" and args.think is None
    args = parser.parse_args(["bot", "example.org", "--room", "r", "--think", "50i"])
    assert parse_think(args.think) == Think(iterations=50)
    assert parser.parse_args(["play", "--level", "hard"]).level == "hard"
    from oriflamme.client.tui.lobby import BOT_KEYS
    from oriflamme.launcher.play import LEVELS

    assert LEVELS["hard"] == BOT_KEYS["h"] == "ismcts"

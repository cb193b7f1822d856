"""Self-play: many games between built-in players, with the engine alone, and their statistics.

>>> report = run_selfplay(players=3, games=4, seed=1, strategies=["random"])
>>> report["games"], len(report["seats"])
(4, 3)
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from typing import Any

from oriflamme.engine import STANDARD, TWO_PLAYER, Player, new_game

from .bots import STRATEGIES


def run_selfplay(
    players: int,
    games: int,
    *,
    seed: int | None = None,
    strategies: Sequence[str] = ("random",),
    variant: str = STANDARD,
    edition: str = "revised",
) -> dict[str, Any]:
    """Play `games` games; seat i uses ``strategies[i % len(strategies)]``.

    The first player rotates game by game so no seat keeps the advantage. With
    a seed the whole run is reproducible. Returns plain data: per seat its
    strategy, wins (a shared win counts 1/k for each of k winners) and mean
    score; per strategy the same, pooled; games and decisions per second.
    """
    if variant == TWO_PLAYER and players != 2:
        raise ValueError("the two-player variant seats exactly 2 players")
    unknown = [s for s in strategies if s not in STRATEGIES]
    if unknown:
        raise ValueError(f"unknown strategy {unknown[0]!r}; choose from {sorted(STRATEGIES)}")
    master = random.Random(seed)
    seat_names = [strategies[i % len(strategies)] for i in range(players)]
    wins = [0.0] * players
    totals = [0] * players
    decisions = 0
    started = time.perf_counter()
    for number in range(games):
        game_rng = random.Random(master.getrandbits(64))
        table: list[Player] = [
            STRATEGIES[name](rng=random.Random(game_rng.getrandbits(64))) for name in seat_names
        ]
        game = new_game(
            players, variant=variant, edition=edition, first_player=number % players, rng=game_rng
        )
        while not game.over:
            seat = game.current_seat()
            assert seat is not None
            game.apply(table[seat].choose(game))
            decisions += 1
        for w in game.winners:
            wins[w] += 1 / len(game.winners)
        for s in range(players):
            totals[s] += game.scores[s]
    elapsed = max(time.perf_counter() - started, 1e-9)
    by_strategy: dict[str, dict[str, float]] = {}
    for s, name in enumerate(seat_names):
        entry = by_strategy.setdefault(name, {"seats": 0, "wins": 0.0, "score_sum": 0.0})
        entry["seats"] += 1
        entry["wins"] += wins[s]
        entry["score_sum"] += totals[s]
    return {
        "players": players,
        "variant": variant,
        "edition": edition,
        "games": games,
        "seed": seed,
        "seats": [
            {
                "seat": s,
                "strategy": seat_names[s],
                "wins": round(wins[s], 3),
                "win_rate": round(wins[s] / games, 4) if games else 0.0,
                "mean_score": round(totals[s] / games, 3) if games else 0.0,
            }
            for s in range(players)
        ],
        "strategies": {
            name: {
                "seats": int(e["seats"]),
                "win_rate_per_seat": round(e["wins"] / (games * e["seats"]), 4) if games else 0.0,
                "mean_score": round(e["score_sum"] / (games * e["seats"]), 3) if games else 0.0,
            }
            for name, e in by_strategy.items()
        },
        "decisions": decisions,
        "seconds": round(elapsed, 4),
        "games_per_second": round(games / elapsed, 1),
        "decisions_per_second": round(decisions / elapsed, 1),
    }


def format_report(report: dict[str, Any]) -> str:
    """A human-readable table of a `run_selfplay` report."""
    lines = [
        f"{report['games']} games, {report['players']} players, {report['variant']}, "
        f"{report['edition']} edition, seed {report['seed']}",
        "",
        "seat  strategy    win rate  mean score",
    ]
    for s in report["seats"]:
        lines.append(
            f"{s['seat']:>4}  {s['strategy']:<10}  {s['win_rate']:>8.1%}  {s['mean_score']:>10.2f}"
        )
    if len(report["strategies"]) > 1:
        lines += ["", "strategy    seats  win rate/seat  mean score"]
        for name, e in report["strategies"].items():
            lines.append(
                f"{name:<10}  {e['seats']:>5}  {e['win_rate_per_seat']:>13.1%}  {e['mean_score']:>10.2f}"
            )
    lines += [
        "",
        f"{report['games_per_second']:.0f} games/s, {report['decisions_per_second']:.0f} decisions/s "
        f"({report['decisions']} decisions in {report['seconds']:.2f} s)",
    ]
    return "\n".join(lines)

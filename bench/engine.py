"""Engine speed: complete random games with the engine alone, on one core.

Every identity is known (self-play) and a RandomPlayer picks uniformly among
`legal_actions()`. Each run plays whole games for a fixed time; games/s and
decisions/s are the medians over the runs. So that they compare across
machines, the same process also times a baseline: an engine-free loop doing,
per decision, what the random player itself does (one `random.random()`
call, one `len`, one list index). The baseline is timed right after each
quarter second of games, for as many iterations as those games had
decisions, so that both see the same load on a busy machine; the ratio
(baseline iterations per engine decision) and baseline iterations per game
are medians over these slices. They move only when the engine does.

    python bench/engine.py                      # 5 players, 5 runs of 2 s
    python bench/engine.py --seconds 1 --runs 3 --players 4 --json
    python bench/engine.py --profile            # cProfile of the game loop, top 25

Targets (issues): >= 1,500 complete 5-player games/s and >= 150,000
decisions/s; and, since those depend on the machine, a complete 5-player game
in 2,100 or fewer baseline iterations ("baseline iterations per game" =
baseline iterations/s / games/s, the same figure on any machine).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import random
import statistics
import sys
import time
from typing import Any

from oriflamme.engine import RandomPlayer, from_data, new_game, to_data

TARGET_GAMES_PER_SECOND = 1500
TARGET_DECISIONS_PER_SECOND = 150_000
TARGET_BASELINE_PER_GAME = 2100  # at most
SLICE = 0.25  # seconds of games between two baseline timings


def variant_for(players: int) -> str:
    return "two-player" if players == 2 else "standard"


def play_games(seconds: float, players: int, seed: int) -> tuple[int, int, float]:
    """Play whole random games until `seconds` have passed (the last game is
    finished). Returns (games, decisions, elapsed seconds)."""
    rng = random.Random(seed)
    player = RandomPlayer(rng=rng)
    choose = player.choose
    variant = variant_for(players)
    games = decisions = 0
    clock = time.perf_counter
    start = clock()
    deadline = start + seconds
    while True:
        game = new_game(players, variant=variant, rng=rng)
        apply = game.apply
        while not game.over:
            apply(choose(game))
            decisions += 1
        games += 1
        now = clock()
        if now >= deadline:
            return games, decisions, now - start


def baseline(iterations: int, seed: int) -> float:
    """Seconds for an engine-free loop of `iterations` random picks from a
    list, written like RandomPlayer.choose and the game loop around it."""
    rng = random.Random(seed)
    options = list(range(12))
    picked = 0
    clock = time.perf_counter
    start = clock()
    for _ in range(iterations):
        picked += options[int(rng.random() * len(options))]
    elapsed = clock() - start
    assert picked >= 0
    return elapsed


def copy_cost(players: int, seed: int, games: int = 5) -> tuple[float, float]:
    """Mean microseconds for `game.copy()` and for `from_data(to_data(game))`,
    over every decision of a few random games."""
    rng = random.Random(seed)
    player = RandomPlayer(rng=rng)
    positions = []
    for _ in range(games):
        game = new_game(players, variant=variant_for(players), rng=rng)
        while not game.over:
            positions.append(game.copy())
            game.apply(player.choose(game))
    clock = time.perf_counter
    start = clock()
    for game in positions:
        game.copy()
    copying = clock() - start
    start = clock()
    for game in positions:
        from_data(to_data(game))
    reloading = clock() - start
    return copying / len(positions) * 1e6, reloading / len(positions) * 1e6


def measure(seconds: float, runs: int, players: int) -> dict[str, Any]:
    play_games(min(0.2, seconds), players, seed=0)  # warm up caches and interning
    per_run = []
    slices = []  # each slice of games with the baseline timed right after it
    for run in range(runs):
        games = decisions = 0
        elapsed = base = 0.0
        k = 0
        while elapsed < seconds:
            g, d, e = play_games(min(SLICE, seconds), players, seed=(run + 1) * 1000 + k)
            b = baseline(d, seed=run + 1)
            slices.append({"ratio": e / b, "baseline_per_game": (d / b) / (g / e)})
            games, decisions, elapsed, base, k = (
                games + g,
                decisions + d,
                elapsed + e,
                base + b,
                k + 1,
            )
        per_run.append(
            {
                "games": games,
                "decisions": decisions,
                "seconds": elapsed,
                "games_per_second": games / elapsed,
                "decisions_per_second": decisions / elapsed,
                "baseline_per_second": decisions / base,
                "ratio": elapsed / base,
                "baseline_per_game": (decisions / base) / (games / elapsed),
            }
        )

    def median(key: str) -> float:
        return statistics.median(r[key] for r in per_run)

    games_per_second = median("games_per_second")
    decisions_per_second = median("decisions_per_second")
    copying, reloading = copy_cost(players, seed=0)
    return {
        "players": players,
        "variant": variant_for(players),
        "seconds_per_run": seconds,
        "runs": runs,
        "games_per_second": games_per_second,
        "decisions_per_second": decisions_per_second,
        "decisions_per_game": decisions_per_second / games_per_second,
        "baseline_iterations_per_second": median("baseline_per_second"),
        "decision_cost_in_baseline_iterations": statistics.median(r["ratio"] for r in slices),
        "baseline_iterations_per_game": statistics.median(r["baseline_per_game"] for r in slices),
        "slices": len(slices),
        "target_games_per_second": TARGET_GAMES_PER_SECOND,
        "target_decisions_per_second": TARGET_DECISIONS_PER_SECOND,
        "target_baseline_iterations_per_game": TARGET_BASELINE_PER_GAME,
        "copy_microseconds": copying,
        "to_data_from_data_microseconds": reloading,
        "python": sys.version.split()[0],
        "per_run": per_run,
    }


def report(result: dict[str, Any]) -> str:
    games_ok = result["games_per_second"] >= TARGET_GAMES_PER_SECOND
    decisions_ok = result["decisions_per_second"] >= TARGET_DECISIONS_PER_SECOND
    per_game_ok = result["baseline_iterations_per_game"] <= TARGET_BASELINE_PER_GAME
    five = result["players"] == 5
    lines = [
        f"engine: random {result['players']}-player games ({result['variant']}), "
        f"{result['runs']} runs of {result['seconds_per_run']:g} s, Python {result['python']}",
        f"  games/s       {result['games_per_second']:>12,.0f}"
        + (
            f"   target {TARGET_GAMES_PER_SECOND:,}: {'met' if games_ok else 'NOT met'}"
            if five
            else ""
        ),
        f"  decisions/s   {result['decisions_per_second']:>12,.0f}"
        + (
            f"   target {TARGET_DECISIONS_PER_SECOND:,}: {'met' if decisions_ok else 'NOT met'}"
            if five
            else ""
        ),
        f"  decisions/game{result['decisions_per_game']:>12,.1f}",
        f"  baseline/s    {result['baseline_iterations_per_second']:>12,.0f}"
        "   (engine-free loop: random pick from a list)",
        f"  ratio         {result['decision_cost_in_baseline_iterations']:>12,.1f}"
        "   baseline iterations per engine decision (lower is faster)",
        f"  baseline iterations per game {result['baseline_iterations_per_game']:>8,.0f}"
        + (
            f"   target {TARGET_BASELINE_PER_GAME:,} or fewer:"
            f" {'met' if per_game_ok else 'NOT met'}"
            if five
            else ""
        ),
        f"  copy()        {result['copy_microseconds']:>12,.1f} us"
        f"   (from_data(to_data(game)): {result['to_data_from_data_microseconds']:,.0f} us)",
    ]
    return "\n".join(lines)


def profile(seconds: float, players: int, top: int) -> str:
    profiler = cProfile.Profile()
    profiler.enable()
    games, decisions, _ = play_games(seconds, players, seed=1)
    profiler.disable()
    out = io.StringIO()
    out.write(f"cProfile: {games} games, {decisions} decisions (times inflated by profiling)\n")
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="length of one run (2)")
    parser.add_argument("--runs", type=int, default=5, help="number of runs; medians shown (5)")
    parser.add_argument("--players", type=int, default=5, choices=range(2, 6), help="2-5 (5)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--profile", action="store_true", help="profile one run instead (top 25 by tottime)"
    )
    args = parser.parse_args(argv)
    if args.seconds <= 0 or args.runs < 1:
        parser.error("--seconds must be positive and --runs at least 1")
    if args.profile:
        print(profile(args.seconds, args.players, 25))
        return 0
    result = measure(args.seconds, args.runs, args.players)
    print(json.dumps(result, indent=2) if args.json else report(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

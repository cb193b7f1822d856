"""Bot strength: the ISMCTS bot against the heuristic, engine only (no sockets);
or, with `--heuristic-against REV`, this tree's heuristic against git revision
REV's.

Each game is driven directly on an engine `Game` holding every identity.
The heuristic seats get that game (the heuristic reads only what its seat
may know: its own cards and the public table). The ISMCTS seat gets only
its seat's view, built as a client builds it:
`from_data(view(game, seat))`, where every card it may not see is a back
(draw piles included, its own too), so nothing hidden can leak into the
search. Its budget is a number of iterations, so the results do not depend
on the machine's speed.

Two configurations, N games each:

* two-player variant, ISMCTS against the heuristic, the ISMCTS seat (and so
  who plays first) alternating from game to game; target >= 65 %;
* 4 players, one ISMCTS against three heuristics, its seat rotating; target >= 45 %.

A win shared by k seats (tied after the tie-break) counts 1/k. The 95 %
interval is Wilson's score interval for the mean result over the N games.

Measured (`python bench/bots.py --jobs 2`, 200 iterations a decision,
1,000 games each, 2 shared cores, about 43 minutes):

    two-player    ISMCTS wins 90.9 %  95% CI [89.0, 92.5]  (target 65 %)  96 ms a search
    four-player   ISMCTS wins 59.9 %  95% CI [56.9, 62.9]  (target 45 %)  78 ms a search

With the default time budget (200 ms) a search runs some 250-350
iterations on the same machine, so the bot plays at least this well.

`--heuristic-against REV` puts this tree's heuristic (`HeuristicPlayer`,
engine/players.py) in the challenger's seat and git revision REV's heuristic
(that file as REV has it, run on this tree's engine) in every other: the way
to measure a change to the heuristic. The same two configurations; the mark
is an even share (50 % two-player, 25 % for one seat of four), and a change
helps when the interval lies above it. A heuristic game takes a few
milliseconds, so use many games. Issue 25's change (the last round's
reveals and eliminations) against the heuristic before it, fa246c9's
(`--heuristic-against fa246c9 --games 20000 --jobs 2`, about 45 s):

    two-player   this tree's heuristic wins 52.6 %  95% CI [51.9, 53.3]  (even: 50 %)
    four-player  this tree's heuristic wins 27.4 %  95% CI [26.8, 28.1]  (even: 25 %)

    python bench/bots.py --jobs 2                 # 1,000 games per configuration
    python bench/bots.py --games 100 --jobs 2     # a quick look
    python bench/bots.py --iterations 200 --only two-player --json
    python bench/bots.py --heuristic-against HEAD --games 20000 --jobs 2
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import multiprocessing
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from oriflamme.client.ismcts import EPSILON, EXPLORATION, KEPT_PRIOR, ISMCTSPlayer
from oriflamme.engine import HeuristicPlayer, Player, from_data, new_game, view

CONFIGS = {
    "two-player": {"players": 2, "variant": "two-player", "target": 0.65},
    "four-player": {"players": 4, "variant": "standard", "target": 0.45},
}
DEFAULT_ITERATIONS = 200
ROOT = Path(__file__).resolve().parent.parent
PLAYERS_FILE = "engine/players.py"
_OLD: dict[str, ModuleType] = {}


def commit_of(rev: str) -> str:
    """The commit git revision `rev` names in this repository (ValueError if none)."""
    found = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if found.returncode != 0:
        raise ValueError(f"no git revision {rev!r} here")
    return found.stdout.strip()


def heuristic_at(commit: str) -> ModuleType:
    """engine/players.py as `commit` has it, loaded as a module of this tree's
    engine (its relative imports are this tree's modules); once a process."""
    module = _OLD.get(commit)
    if module is None:
        source = subprocess.run(
            ["git", "show", f"{commit}:{PLAYERS_FILE}"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout
        name = f"oriflamme.engine._players_{commit[:12]}"
        spec = importlib.util.spec_from_loader(name, loader=None)
        assert spec is not None
        module = importlib.util.module_from_spec(spec)
        module.__package__ = "oriflamme.engine"
        sys.modules[name] = module
        exec(compile(source, f"{commit[:12]}:{PLAYERS_FILE}", "exec"), module.__dict__)
        _OLD[commit] = module
    return module


def play_one(task: tuple[str, int, int, float, float, bool, int, str | None]) -> dict[str, Any]:
    """One game: the challenger in seat `index % players` (ISMCTS, or with
    `against` a commit this tree's heuristic), the heuristic elsewhere
    (`against`'s, or this tree's)."""
    config, index, iterations, exploration, epsilon, prior, seed, against = task
    spec = CONFIGS[config]
    players = int(spec["players"])  # type: ignore[call-overload]
    rng = random.Random(f"{seed} {config} {index}")
    me = index % players
    game = new_game(players, variant=str(spec["variant"]), rng=rng, first_player=0)
    challenger: Player
    others: Player
    searcher: ISMCTSPlayer | None
    if against is None:
        challenger = searcher = ISMCTSPlayer(
            rng=random.Random(rng.random()),
            iterations=iterations,
            exploration=exploration,
            epsilon=epsilon,
            prior=KEPT_PRIOR if prior else None,
        )
        others = HeuristicPlayer(rng=random.Random(rng.random()))
    else:
        searcher = None
        challenger = HeuristicPlayer(rng=random.Random(rng.random()))
        others = heuristic_at(against).HeuristicPlayer(rng=random.Random(rng.random()))
    thinking = 0.0
    decisions = 0
    while not game.over:
        decision = game.decision
        assert decision is not None
        if decision.seat == me and searcher is not None:
            seen = from_data(view(game, me))  # only what this seat may know
            start = time.perf_counter()
            action = searcher.choose(seen)
            if searcher.last_iterations:
                thinking += time.perf_counter() - start
                decisions += 1
        elif decision.seat == me:
            action = challenger.choose(game)  # the heuristic reads only what its seat may know
        else:
            action = others.choose(game)
        game.apply(action, seat=decision.seat)
    share = 1.0 / len(game.winners) if me in game.winners else 0.0
    return {
        "config": config,
        "share": share,
        "score": game.scores[me],
        "best_other": max(s for i, s in enumerate(game.scores) if i != me),
        "first": me == 0,
        "thinking": thinking,
        "decisions": decisions,
    }


def wilson(mean: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson's 95 % score interval for a proportion `mean` over `n` trials."""
    if n == 0:
        return 0.0, 1.0
    denom = 1 + z * z / n
    centre = (mean + z * z / (2 * n)) / denom
    half = z * math.sqrt(mean * (1 - mean) / n + z * z / (4 * n * n)) / denom
    return centre - half, centre + half


def summary(config: str, results: list[dict[str, Any]], target: float) -> dict[str, Any]:
    n = len(results)
    mean = sum(r["share"] for r in results) / n
    lo, hi = wilson(mean, n)
    first = [r["share"] for r in results if r["first"]]
    thinking = sum(r["thinking"] for r in results)
    decisions = sum(r["decisions"] for r in results)
    return {
        "config": config,
        "games": n,
        "win_rate": mean,
        "ci95": [lo, hi],
        "target": target,
        "win_rate_when_first": statistics.fmean(first) if first else None,
        "mean_margin": statistics.fmean(r["score"] - r["best_other"] for r in results),
        "ms_per_search": 1000 * thinking / decisions if decisions else 0.0,
        "searches": decisions,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=1000, help="games per configuration")
    parser.add_argument("--iterations", type=int, default=DEFAULT_ITERATIONS)
    parser.add_argument("--exploration", type=float, default=EXPLORATION)
    parser.add_argument("--epsilon", type=float, default=EPSILON)
    parser.add_argument(
        "--no-prior", action="store_true", help="deal kept face-down cards uniformly"
    )
    parser.add_argument("--jobs", type=int, default=1, help="processes (one per core)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", choices=sorted(CONFIGS), help="one configuration")
    parser.add_argument(
        "--heuristic-against",
        metavar="REV",
        help="this tree's heuristic against git revision REV's (in place of ISMCTS)",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    configs = [args.only] if args.only else list(CONFIGS)
    against = None
    if args.heuristic_against is not None:
        try:
            against = commit_of(args.heuristic_against)
            heuristic_at(against)
        except (ValueError, subprocess.CalledProcessError, SyntaxError, ImportError) as exc:
            print(f"bots: --heuristic-against: {exc}", file=sys.stderr)
            return 2
        challenger = "this tree's heuristic"
        print(
            f"bots: this tree's heuristic against the heuristic of {args.heuristic_against}"
            f" ({against[:12]}), {args.games} games per configuration, {args.jobs} job(s); "
            "a win shared by k counts 1/k; the mark is an even share",
            file=sys.stderr,
        )
    else:
        challenger = "ISMCTS"
        print(
            f"bots: ISMCTS ({args.iterations} iterations a decision, exploration "
            f"{args.exploration:g}, epsilon {args.epsilon:g}"
            f"{', kept cards dealt uniformly' if args.no_prior else ''}) against the heuristic, "
            f"{args.games} games per configuration, {args.jobs} job(s); "
            "a win shared by k counts 1/k",
            file=sys.stderr,
        )
    out = []
    for config in configs:
        tasks = [
            (
                config,
                i,
                args.iterations,
                args.exploration,
                args.epsilon,
                not args.no_prior,
                args.seed,
                against,
            )
            for i in range(args.games)
        ]
        start = time.perf_counter()
        if args.jobs > 1:
            # Heuristic games are quick: hand them out in larger chunks.
            chunk = 1 if against is None else max(1, args.games // (20 * args.jobs))
            with multiprocessing.Pool(args.jobs) as pool:
                results = pool.map(play_one, tasks, chunksize=chunk)
        else:
            results = [play_one(t) for t in tasks]
        players = int(CONFIGS[config]["players"])  # type: ignore[call-overload]
        target = CONFIGS[config]["target"] if against is None else 1 / players
        s = summary(config, results, float(target))  # type: ignore[arg-type]
        s["seconds"] = time.perf_counter() - start
        if against is None:
            s["iterations"] = args.iterations
        else:
            s["against"] = against
        out.append(s)
        if not args.json:
            lo, hi = s["ci95"]
            met = (
                "met"
                if lo >= s["target"]
                else ("likely" if s["win_rate"] >= s["target"] else "NOT met")
            )
            if against is None:
                mark = f"target {100 * s['target']:.0f} %: {met}"
                search = f" {s['ms_per_search']:.0f} ms a search,"
            else:
                verdict = (
                    "better"
                    if lo > s["target"]
                    else "worse"
                    if hi < s["target"]
                    else "no clear difference"
                )
                mark = f"even share {100 * s['target']:.0f} %: {verdict}"
                search = ""
            print(
                f"{config:12} {s['games']:5} games  {challenger} wins"
                f" {100 * s['win_rate']:5.1f} %"
                f"  95% CI [{100 * lo:4.1f}, {100 * hi:4.1f}]  {mark}"
                f"  (first player: {100 * (s['win_rate_when_first'] or 0):.1f} %,"
                f" margin {s['mean_margin']:+.2f},{search} {s['seconds']:.0f} s)",
                flush=True,
            )
    if args.json:
        print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

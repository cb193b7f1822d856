"""What searching bots cost an event loop: in worker threads, or in worker processes.

One trio run plays the part of a server's event loop: a task sends one byte
over a socket pair and waits for its echo, again and again, for a window;
every send and receive is a socket call that lets go of the GIL, as a
server's are. Meanwhile `--searches` hard bots (ismcts, 200 ms a decision)
think one decision after another through `client.thinking.think`:

- **none**: no bot thinks (the baseline);
- **threads**: in worker threads (`think` outside `search_processes`);
- **processes**: in worker processes (inside `search_processes`, as in
  `oriflamme serve`).

Printed for each: round trips/s, p50 and p99 of a round trip, decisions the
bots made, and the ratio of round trips/s to the baseline's.

    python bench/thinking.py                 # 3 windows of 3 s (about 15 s)
    python bench/thinking.py --seconds 5 --searches 1
"""

from __future__ import annotations

import argparse
import contextlib
import random
import time

import trio

from oriflamme.client.bots import Bot
from oriflamme.client.thinking import search_processes, think
from oriflamme.engine import Game, new_game


def a_decision(seed: int) -> Game:
    game = new_game(3, seed=seed)
    while len(game.legal_actions()) < 2:
        game.apply(game.legal_actions()[0])
    return game


async def window(mode: str, seconds: float, searches: int) -> dict[str, float]:
    a, b = trio.socket.socketpair()
    trips: list[float] = []
    decisions = 0

    async def echo() -> None:
        while True:
            await b.send(await b.recv(16))

    async def bot(i: int) -> None:
        nonlocal decisions
        rng = random.Random(i)
        while True:
            game = a_decision(rng.randrange(1000))
            thinker = Bot("ismcts", rng=rng, seconds=0.2, clock=time.perf_counter)
            await think(thinker, game, game.legal_actions(), None)
            decisions += 1

    opened = search_processes() if mode == "processes" else contextlib.nullcontext()
    async with opened, trio.open_nursery() as nursery:
        nursery.start_soon(echo)
        for i in range(searches if mode != "none" else 0):
            nursery.start_soon(bot, i)
        await trio.sleep(1.0)  # workers started, searches under way
        decisions = 0
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            start = time.perf_counter()
            await a.send(b"x")
            await a.recv(16)
            trips.append(time.perf_counter() - start)
        nursery.cancel_scope.cancel()
    a.close()
    b.close()
    trips.sort()
    return {
        "per_second": len(trips) / seconds,
        "p50": 1e3 * trips[len(trips) // 2],
        "p99": 1e3 * trips[int(len(trips) * 0.99)],
        "decisions": decisions,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="each window (3)")
    parser.add_argument("--searches", type=int, default=2, help="hard bots thinking (2)")
    args = parser.parse_args()
    results = {}
    for mode in ("none", "threads", "processes"):
        results[mode] = trio.run(window, mode, args.seconds, args.searches)
    base = results["none"]["per_second"]
    print(f"event loop round trips while {args.searches} hard bot(s) think (ismcts, 200 ms)")
    print(
        f"{'bots think in':>14} {'trips/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'decisions':>9} ratio"
    )
    for mode, r in results.items():
        print(
            f"{mode:>14} {r['per_second']:9,.0f} {r['p50']:8.3f} {r['p99']:8.3f}"
            f" {r['decisions']:9,.0f} {r['per_second'] / base:5.2f}"
        )


if __name__ == "__main__":
    main()

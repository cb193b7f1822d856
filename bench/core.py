"""The server's core: complete games through it, against the engine alone.

Plays whole 4-player games the way the server referees them, in one process
(`oriflamme.launcher.inprocess`): one client creates the room and adds three
server bots (clients too, with their own secrets), every frame encoded,
decoded and checked on both sides, every commitment made and opened, every
push numbered and kept, the record written and verified at the end. In the
same run it measures the baseline: the same number of random 4-player games
with the engine alone (every identity known, no protocol).

Prints games per second for both, the ratio, decisions per second through
the core, and the frames and bytes a game takes.

    python bench/core.py [--games 20] [--runs 3]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from functools import partial

from oriflamme.client.bots import Bot
from oriflamme.engine import RandomPlayer, new_game
from oriflamme.launcher.inprocess import InProcess
from oriflamme.protocol import messages as m
from oriflamme.protocol.codec import encode_frame
from oriflamme.protocol.verify import verify_record


def finished(world: InProcess) -> bool:
    """`world`'s game is over (its record is out)."""
    return bool(world.records)


def core_games(games: int, seed: int) -> tuple[float, int, int, int]:
    """(seconds, decisions, frames, bytes) for `games` games through the core."""
    decisions = frames = size = 0
    started = time.perf_counter()
    for g in range(games):
        world = InProcess(seed=seed + g)
        host = world.connect("host", bot=Bot("random", rng=random.Random(seed + g)))
        settings = m.RoomSettings(
            players=4, variant="standard", edition="revised", first_player="host"
        )
        host.send(m.CreateRoom(settings=settings))
        for _ in range(3):
            host.send(m.AddBot(strategy="random"))
        host.send(m.Ready(ready=True))
        host.send(m.StartGame())
        world.run(partial(finished, world))
        record = world.records[0].record
        assert verify_record(record).ok
        decisions += len(record.log)
        for client in [host, *world.bots.values()]:
            frames += len(client.received)
            size += sum(len(encode_frame(m.to_data(x))) for x in client.received)
    return time.perf_counter() - started, decisions, frames, size


def engine_games(games: int, seed: int) -> float:
    started = time.perf_counter()
    for g in range(games):
        game = new_game(4, seed=seed + g)
        player = RandomPlayer(seed=seed + g)
        while not game.over:
            game.apply(player.choose(game))
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    core, engine = [], []
    decisions = frames = size = 0
    for run in range(args.runs):
        seconds, decisions, frames, size = core_games(args.games, seed=1000 * run)
        core.append(seconds)
        engine.append(engine_games(args.games, seed=1000 * run))
    core_s = statistics.median(core)
    engine_s = statistics.median(engine)
    print(
        f"core: {args.games} complete 4-player games through the server's core, "
        f"{args.runs} runs (median)"
    )
    print(f"  games/s through the core   {args.games / core_s:10.1f}")
    print(f"  decisions/s through it     {decisions / core_s:10.0f}   (log entries)")
    print(f"  frames a game              {frames / args.games:10.0f}   (received by the 4 clients)")
    print(f"  kilobytes a game           {size / args.games / 1000:10.0f}   (the same frames)")
    print(
        f"  baseline games/s           {args.games / engine_s:10.1f}   (engine alone, same games)"
    )
    print(
        f"  ratio                      {core_s / engine_s:10.1f}   "
        "engine-alone games per game through the core (lower is faster)"
    )


if __name__ == "__main__":
    main()

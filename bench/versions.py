"""Protocol version 2 against version 1, in one process: where a decision's time goes.

Plays whole 3-player games of random bots through the server's core and
real client endpoints (`oriflamme.launcher.inprocess`: every frame encoded,
decoded and checked on both sides), all of a game's clients speaking one
version, then the same games in the other, and times with a clock around
the server's parts (the gateway's handling of each input, the lobby's, the
referee's, the table's work after a ruling, the pushes) and the clients'
(decoding and their mirror, their bots). No sockets, no journal, no trio:
what `bench/server.py --protocols 2,1` measures over the network also has
those, the same in both versions.

The garbage collector is off while a version plays (its pauses fall on
whichever code allocates, and the server's process tunes it: see
`server/tuning.py`); each version plays twice, the first to warm up.

    python bench/versions.py [--games 20]
"""

from __future__ import annotations

import argparse
import gc
import random
import time
from collections.abc import Callable
from typing import Any

from oriflamme.client.bots import Behaviour, Bot
from oriflamme.client.endpoint import ClientEndpoint
from oriflamme.client.state import ClientState
from oriflamme.launcher.inprocess import InProcess
from oriflamme.protocol import messages as m
from oriflamme.server.core.gateway import Gateway
from oriflamme.server.core.lobby import Lobby
from oriflamme.server.core.referee import Referee
from oriflamme.server.core.room import Room
from oriflamme.server.core.table import Table

# (what is timed, the class, its method): a part's time includes the parts it calls
PARTS: list[tuple[str, type, str]] = [
    ("server: every input (gateway)", Gateway, "receive_data"),
    ("server: the lobby's handling", Lobby, "request"),
    ("server: the referee", Referee, "receive"),
    ("server: the table after a ruling", Table, "_after"),
    ("server: the pushes (room)", Room, "_deliver"),
    ("clients: frames in (decode, mirror)", ClientEndpoint, "receive_data"),
    ("clients: the mirror", ClientState, "receive"),
    ("clients: the bots", Behaviour, "messages"),
]


def timed(spent: dict[str, float]) -> Callable[[], None]:
    """Wrap each part's method to add its time to `spent`; the undo."""
    undo = []
    for name, cls, method in PARTS:
        original = getattr(cls, method)

        def wrapper(*args: Any, _f: Any = original, _n: str = name, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return _f(*args, **kwargs)
            finally:
                spent[_n] = spent.get(_n, 0.0) + time.perf_counter() - start

        setattr(cls, method, wrapper)
        undo.append((cls, method, original))

    def restore() -> None:
        for cls, method, original in undo:
            setattr(cls, method, original)

    return restore


def play(version: int, games: int) -> dict[str, float]:
    """Microseconds a decision for each part, over `games` games."""
    spent: dict[str, float] = {}
    decisions = 0
    restore = timed(spent)
    gc.disable()
    try:
        for g in range(games):
            world = InProcess(seed=g, versions=(version,))
            clients = [
                world.connect(f"p{i}", bot=Bot("random", rng=random.Random(g * 10 + i)))
                for i in range(3)
            ]
            world.start_table(clients, m.RoomSettings.for_players(3))
            world.run(lambda w=world: bool(w.records))  # type: ignore[misc]
            decisions += len(world.records[0].record.log)
    finally:
        gc.enable()
        restore()
    return {name: spent.get(name, 0.0) / decisions * 1e6 for name, _, _ in PARTS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=20, help="games per version and run (20)")
    args = parser.parse_args()
    runs: dict[int, dict[str, float]] = {}
    for _ in range(2):  # (the first run warms up)
        for version in (1, 2):
            runs[version] = play(version, args.games)
    print(f"{args.games} games of 3 random bots a version, in process, the collector off")
    print(f"{'us a decision':38} {'v2':>7} {'v1':>7} {'v2/v1':>6}")
    for name, _, _ in PARTS:
        one, two = runs[1][name], runs[2][name]
        print(f"{name:38} {two:>7.0f} {one:>7.0f} {two / one if one else 0:>6.2f}")
    # Issue 28's "a bot's decision without its thinking": what one client
    # spends a decision of its table (each of the three gets every push),
    # its frames in and its bot's answer, sockets and trio aside.
    one, two = (client_part(runs[v]) for v in (1, 2))
    print(f"{'one client, a decision (frames, bot)':38} {two:>7.0f} {one:>7.0f} {two / one:>6.2f}")


def client_part(spent: dict[str, float]) -> float:
    """One client's microseconds a decision: the three clients' frames in
    (their mirror included) and bots, over three."""
    return (spent["clients: frames in (decode, mirror)"] + spent["clients: the bots"]) / 3


if __name__ == "__main__":
    main()

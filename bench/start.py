"""What a server's start costs with many games in progress, kept as facts.

A start reads the lobby's facts (`server.core.facts`, rows in the store)
and makes the lobby, each game left as its facts, rebuilt at its first
use (`room.UnbuiltGame`); it replays the journal since (at most
`--snapshot-every` entries, 2,000 by default, or inputs in 500 rooms), which rebuilds the games
it touches; it tells the lobby it restarted (every connection gone), and
serves, rebuilding the other games while no input waits. This plays one
3-player game in-process to the middle of round `--round`, takes the
lobby's facts, and copies its room and its players `--games` times over
(new room and player ids), as a server with that many games in progress
would hold. It measures, on that lobby:

- taking the facts and encoding them as rows (what the core task does every
  `--snapshot-every` entries and at a clean stop: the rooms wait meanwhile);
- storing them in a new SQLite store (in the store's thread: the rooms go
  on), and storing them again unchanged (only the rows that changed are
  written: here, the lobby's);
- the start: reading the rows from the store, making the lobby (games not
  rebuilt), and the restart (every connection closed): then it serves;
- rebuilding every game (what the server does next, a few at a time,
  while no input waits; and what a start did before this version);
- the baseline, in the same run: pickling the same lobby and loading the
  pickle (what the server did before facts, in a forked child and at start);
- replaying journal entries (per entry, from the game's own journal), to
  give the start after a SIGKILL at the worst: the start, plus the
  heaviest journal the server keeps before it takes the facts
  (`--snapshot-every`: its entries, plus `ROOM_WEIGHT` for each game they
  touch, each rebuilt).

    python bench/start.py [--games 200,5000] [--round 3] [--snapshot-every 50000]
"""

from __future__ import annotations

import argparse
import copy
import gc
import pickle
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from oriflamme.client.bots import Behaviour, Bot
from oriflamme.client.endpoint import ClientEndpoint
from oriflamme.launcher.inprocess import InProcess
from oriflamme.protocol import messages as m
from oriflamme.server.core import ServerConfig
from oriflamme.server.core.entropy import KeyedEntropy
from oriflamme.server.core.facts import (
    FactsRows,
    TakenRows,
    facts_from_rows,
    facts_of,
    lobby_from,
    rows_of,
    rows_since,
)
from oriflamme.server.core.journal import Entry, JournaledLobby, replay
from oriflamme.server.net import ROOM_WEIGHT, SNAPSHOT_EVERY
from oriflamme.server.persistence import DATABASE_FILE, KEY_FILE, check_key
from oriflamme.server.store import SqliteStore
from oriflamme.server.tuning import collector_paused

KEY = bytes(range(32))
CONFIG = ServerConfig(idle_timeout=86400, reply_timer=30, grace=60)


def one_game(round_: int) -> tuple[dict[str, Any], list[Entry]]:
    """The facts of a lobby with one 3-player game in round `round_`, and
    the journal that made it."""
    lobby = JournaledLobby(KeyedEntropy(KEY), CONFIG)
    world = InProcess(config=CONFIG, seed=1, lobby=lobby)
    journal: list[Entry] = []
    clients = [
        world.connect(f"p{i}", behaviour=Behaviour(Bot("random", rng=random.Random(i))))
        for i in range(3)
    ]
    settings = m.RoomSettings(players=3, variant="standard", edition="revised", first_player="host")
    world.start_table(clients, settings, private=True)

    def in_round() -> bool:
        journal.extend(lobby.take())
        game = clients[0].state.game
        return game is not None and game.state is not None and game.state.view["round"] >= round_

    world.run(in_round)
    journal.extend(lobby.take())
    return facts_of(lobby), journal


def many(facts: dict[str, Any], games: int) -> dict[str, Any]:
    """`facts` with its one room and its players copied `games` times."""
    out = copy.deepcopy(facts)
    (room,) = facts["rooms"]
    sessions = facts["sessions"]
    step = facts["next_player"]
    out["rooms"], out["sessions"], out["conns"], out["away"] = [], [], [], []
    out["invites"] = {}
    for n in range(games):
        offset = n * step

        def moved(player: int | None, offset: int = offset) -> int | None:
            return None if player is None else player + offset

        for s in sessions:
            conn = None if s["conn"] is None else f"{n}.{s['conn']}"
            # (frames of their own, as each session has: a pickle would share them)
            pushes = None if s["pushes"] is None else [p[:1] + p[1:] for p in s["pushes"]]
            s2 = dict(s, player=s["player"] + offset, conn=conn, pushes=pushes)
            out["sessions"].append(s2)
            if s2["conn"] is not None:
                out["conns"].append([s2["conn"], s2["player"]])
        r2 = copy.deepcopy(room)
        r2["id"] = n + 1
        r2["invite"] = None
        r2["host"] = room["host"] + offset
        r2["seats"] = [dict(seat, player=moved(seat["player"])) for seat in room["seats"]]
        r2["spectators"] = [p + offset for p in room["spectators"]]
        r2["table_players"] = [moved(p) for p in room["table_players"]]
        for s2 in out["sessions"][-len(sessions) :]:
            if s2["room"] is not None:
                s2["room"] = n + 1
        out["rooms"].append(r2)
    out["next_room"] = games + 1
    out["next_player"] = games * step + 1
    return out


def taken(lobby: JournaledLobby) -> FactsRows:
    return rows_of(facts_of(lobby))


def started(rows: FactsRows) -> JournaledLobby:
    """The lobby a start makes of `rows`, each game left as its facts."""
    return lobby_from(facts_from_rows(rows), KeyedEntropy(KEY), lazily=True)


def served(rows: FactsRows, directory: Path) -> tuple[float, float]:
    """`oriflamme serve` on a data directory holding `rows`, stopped cleanly
    (SIGTERM) once it answered, then started again: seconds until that
    second start listens, and until it answers a client's `hello` (a real
    process, over TCP). (The first start stores the facts again under the
    settings given to `serve`, as a host's first start with other settings
    would.)"""
    data = directory / "data"
    data.mkdir(mode=0o700)
    (data / KEY_FILE).write_bytes(KEY)
    (data / KEY_FILE).chmod(0o600)
    store = SqliteStore(data / DATABASE_FILE)
    try:
        check_key(store, KEY)
        store.save_facts(rows)
    finally:
        store.close()
    _serve_once(data, directory / "first.log")
    return _serve_once(data, directory / "second.log")


def _serve_once(data: Path, log_path: Path) -> tuple[float, float]:
    """Start `oriflamme serve` on `data`, say hello, stop it with SIGTERM:
    the seconds until it listened, and until it answered."""
    began = time.perf_counter()
    with open(log_path, "wb") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "oriflamme.launcher.cli", "serve", "--port", "0"]
            + ["--data-dir", str(data), "--log-level", "info"],
            stdout=log,
            stderr=log,
        )
    try:
        found = None
        while found is None:
            if server.poll() is not None or time.perf_counter() - began > 300:
                raise RuntimeError(log_path.read_text()[-2000:])
            found = re.search(rb"serving on \S+ port (\d+)", log_path.read_bytes())
            time.sleep(0.01)
        listening = time.perf_counter() - began
        with socket.create_connection(("127.0.0.1", int(found.group(1))), timeout=300) as conn:
            conn.sendall(ClientEndpoint("bench").hello())
            conn.recv(1)  # (the welcome's first byte)
        answering = time.perf_counter() - began
        server.send_signal(signal.SIGTERM)
        if server.wait(timeout=300) != 0:
            raise RuntimeError(log_path.read_text()[-2000:])
        return listening, answering
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def size(rows: FactsRows) -> int:
    return len(rows.lobby) + sum(
        len(data) for table in rows.tables.values() for _, data in table.values()
    )


def timed(fn: Any, *args: Any) -> tuple[float, Any]:
    gc.collect()
    start = time.perf_counter()
    value = fn(*args)
    return time.perf_counter() - start, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", default="200,5000", help="games in progress, comma-separated")
    parser.add_argument("--round", type=int, default=3, help="the round the games are in")
    parser.add_argument(
        "--snapshot-every",
        type=int,
        default=SNAPSHOT_EVERY,
        help=f"journal entries between two takings of the facts ({SNAPSHOT_EVERY:,}, the server's)",
    )
    args = parser.parse_args()
    facts, journal = one_game(args.round)
    # The journal's replay, per entry (on a lobby as the first entry found it).
    with collector_paused():  # (as a start replays it)
        seconds, _ = timed(replay, JournaledLobby(KeyedEntropy(KEY), CONFIG), journal)
    per_entry = seconds / len(journal)
    print(
        f"one game to round {args.round}: {len(journal)} journal entries,"
        f" replayed at {per_entry * 1e6:.0f} us an entry"
    )
    for games in (int(g) for g in args.games.split(",")):
        big = many(facts, games)
        lobby = lobby_from(big, KeyedEntropy(KEY))
        with collector_paused():  # (as the server takes them)
            take, data = timed(taken, lobby)
            since = TakenRows()
            rows_since(lobby, since)
            take_again, _ = timed(rows_since, lobby, since)  # (nothing changed)
        with tempfile.TemporaryDirectory() as directory:
            path = Path(directory) / "server.sqlite3"
            store = SqliteStore(path)
            try:
                first, _ = timed(store.save_facts, data)
                unchanged, _ = timed(store.save_facts, taken(lobby))
            finally:
                store.close()
            store = SqliteStore(path)  # (a start)
            try:
                with collector_paused():
                    read, (rows, _) = timed(store.load)
            finally:
                store.close()
        assert isinstance(rows, FactsRows)
        with collector_paused():  # (as a start makes the lobby and replays)
            made, again = timed(started, rows)
            told, _ = timed(again.restarted, again.last_time + 1)
            rebuild, _ = timed(again.build_some, games)
        assert len(again.rooms) == games and not again.unbuilt
        with tempfile.TemporaryDirectory() as directory:
            listening, answering = served(data, Path(directory))
        serves = read + made + told
        per_game = rebuild / games
        pickling, pickled = timed(pickle.dumps, lobby, pickle.HIGHEST_PROTOCOL)
        loading, _ = timed(pickle.loads, pickled)
        # The journal at its heaviest before a taking: entries plus
        # ROOM_WEIGHT a room touched reach `--snapshot-every`. Its cost is
        # linear in both, so the worst is at a corner: every entry in a
        # room of its own (as many as there are games), or all in one.
        weight = args.snapshot_every
        touched = min(games, weight // (ROOM_WEIGHT + 1))
        corners = [
            (weight - ROOM_WEIGHT * touched, touched),
            (weight - ROOM_WEIGHT, 1),
        ]
        entries, touched = max(corners, key=lambda c: c[0] * per_entry + c[1] * per_game)
        journal_worst = entries * per_entry + touched * per_game
        print(
            f"{games:5d} games: facts {size(data) / 1e6:6.1f} MB, taken in {take:5.2f} s"
            f" (again, nothing changed: {take_again:5.2f} s),"
            f" stored in {first:5.2f} s (again, unchanged: {unchanged:5.2f} s) |"
            f" start: read {read:5.2f} s, lobby {made:5.2f} s, restart {told:5.2f} s:"
            f" serves after {serves:5.2f} s; every game rebuilt in {rebuild:5.2f} s"
            f" ({per_game * 1e3:.2f} ms a game) |"
            f" pickle (before) {len(pickled) / 1e6:6.1f} MB, {pickling:5.2f} s to dump,"
            f" {loading:5.2f} s to load |"
            f" after a kill, at worst ({entries} entries, {touched} games rebuilt):"
            f" serves after {serves + journal_worst:5.1f} s |"
            f" a real `oriflamme serve` stopped and started again: listens after {listening:5.2f} s,"
            f" answers a hello after {answering:5.2f} s"
        )


if __name__ == "__main__":
    main()

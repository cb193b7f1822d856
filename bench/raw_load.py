"""The raw load of `bench/server.py`: seats written as a third-party client
would write them, so that the drivers cost the machine less than the server
they measure.

Each seat is `examples/minimal_bot.py` made asynchronous (in protocol
version 2, it replays the game's log on the engine, as a version 2 client
must, and takes the options from there): plain dicts from
`msgpack.unpackb`, the example's own commit-reveal and deal functions (its
seed commitment, card commitments and openings are real, and every game ends
with every verdict `ok`), a random legal option for each decision, over a
trio TCP stream. No `Session`, no client state, no checks of what the server
sends but the ones the example makes. One task per seat reads its pushes and
answers them; a task per table starts its games one after the other (the
host starts, everyone says ready again after the end).

Counted as the other loads count: decisions answered (and the automatic
`seed_commit`, `open`, `final_reveal` apart), latency from a decision sent
to the next `game_state` the seat receives, games ended (seen by the host),
and games with a verdict not `ok`.
"""

from __future__ import annotations

import importlib.util
import math
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack
import trio
from _load_client import frame  # (bench/, this module's folder)

from oriflamme.engine import FAMILY_NAMES, Rules, action_to_data
from oriflamme.engine.events import Drew
from oriflamme.protocol.record import entry_from_data
from oriflamme.protocol.updates import PublicGame

_EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "minimal_bot.py"
_spec = importlib.util.spec_from_file_location("minimal_bot", _EXAMPLE)
assert _spec is not None and _spec.loader is not None
example = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(example)

SERVER_SEAT = example.SERVER_SEAT


class FrameReader:
    """The frames a stream gives: `take` the next whole one read already,
    `fill` to read more, `next` to wait for one."""

    def __init__(self, stream: trio.abc.Stream, who: str) -> None:
        self.stream, self.who, self.buffer = stream, who, bytearray()

    def take(self) -> bytes | None:
        buffer = self.buffer
        if len(buffer) < 4:
            return None
        end = 4 + int.from_bytes(buffer[:4], "big")
        if len(buffer) < end:
            return None
        payload = bytes(buffer[4:end])
        del buffer[:end]
        return payload

    async def fill(self) -> None:
        data = await self.stream.receive_some(65536)
        if not data:
            raise ConnectionError(f"{self.who}: the server closed the connection")
        self.buffer += data

    async def next(self) -> bytes:
        while (payload := self.take()) is None:
            await self.fill()
        return payload


class RawSeat:
    """One seat: its stream, what it knows of its game, and its counters."""

    def __init__(
        self,
        stream: trio.abc.Stream,
        name: str,
        rng: random.Random,
        stats: Any,
        pace: float = 0.0,
        protocol: int = 1,
    ) -> None:
        self.stream, self.name, self.rng, self.stats = stream, name, rng, stats
        self.protocol = protocol
        self.pace = pace  # seconds before answering a decision, on average
        self.pace_rng = random.Random(rng.random())  # (the choices stay those of no pace)
        self.next_id = 1
        self.pending: dict[int, str] = {}  # request id -> its type
        self.sending = trio.StrictFIFOLock()  # the reader's answers and the table's requests
        self.player: int | None = None
        self.room: dict[str, Any] | None = None  # the last room_state
        self.changed = trio.Event()  # set (and made anew) after every batch of frames
        self.start_refused = 0
        self.games_started = 0
        self.games_ended = 0
        self.answered = 0  # decisions answered, in all
        self.answered_at: float | None = None
        self.answered_turns: set[int] = set()
        self.game: bytes = b""
        self.started_at = 0.0

    # ------------------------------------------------------------ frames

    async def send(self, type_: str, **fields: Any) -> None:
        fields["type"], fields["id"] = type_, self.next_id
        self.pending[self.next_id] = type_
        self.next_id += 1
        data = frame(fields)
        if self.stats.inside(time.monotonic()):
            self.stats.bytes_out += len(data)
        async with self.sending:
            await self.stream.send_all(data)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Read and answer until the stream ends (or the task is cancelled)."""
        await self.send("hello", versions=[self.protocol], client="bench-raw/1", name=self.name)
        task_status.started()
        frames = FrameReader(self.stream, self.name)
        while True:
            await frames.fill()
            while (payload := frames.take()) is not None:
                if self.stats.inside(time.monotonic()):
                    self.stats.bytes_in += 4 + len(payload)
                await self.receive(msgpack.unpackb(payload, raw=False))
            self.changed.set()
            self.changed = trio.Event()

    async def wait_until(self, ready: Callable[[], bool]) -> None:
        while not ready():
            await self.changed.wait()

    # ------------------------------------------------------------ pushes

    async def receive(self, m: dict[str, Any]) -> None:
        kind = m["type"]
        if "seq" not in m:  # an answer
            request = self.pending.pop(m.get("id", -1), None)
            if kind == "error":
                if request == "start_game":
                    self.start_refused += 1  # someone not ready yet: the host tries again
                else:
                    self.stats.error(f"{self.name}: {request} refused: {m['code']}: {m['message']}")
            elif kind == "welcome":
                self.player = m["player"]
            return
        handler = getattr(self, "on_" + kind, None)
        if handler is not None:
            await handler(m)

    async def on_room_state(self, m: dict[str, Any]) -> None:
        self.room = m

    async def on_game_started(self, m: dict[str, Any]) -> None:
        self.games_started += 1
        self.started_at = time.monotonic()
        self.game, self.seat = m["game"], m["seat"]
        self.families = m["families"][self.seat]
        self.server_commitment = m["server_commitment"]
        self.seed = self.rng.randbytes(32)
        self.placed: dict[int, tuple[list[str], bytes]] = {}
        self.answered_turns.clear()
        settings = m["settings"]
        families = tuple(tuple(FAMILY_NAMES.index(f) for f in fams) for fams in m["families"])
        self.rules = Rules(settings["players"], settings["variant"], settings["edition"], families)
        self.first_player = m["first_player"]
        self.public: PublicGame | None = None
        self._automatic()
        await self.send(
            "seed_commit", commitment=example.seed_commitment(self.game, self.seat, self.seed)
        )

    async def on_server_seed(self, m: dict[str, Any]) -> None:
        if example.seed_commitment(self.game, SERVER_SEAT, m["seed"]) != self.server_commitment:
            raise ConnectionError("the server seed does not open its commitment")
        deal = example.derive_deal(self.families, self.seed, self.game, self.seat, m["seed"])
        self.set_aside, self.hand, self.pile = deal

    async def on_game_state(self, m: dict[str, Any]) -> None:
        for event in m["events"]:
            if event["type"] == "placed" and event["seat"] == self.seat:
                self.hand.remove(self.placed[event["pid"]][0])
            elif event["type"] == "drew" and event["seat"] == self.seat:
                n = len(event["cards"])
                self.hand, self.pile = self.hand + self.pile[:n], self.pile[n:]
        await self._pending(m, m["view"]["next_pid"])

    async def on_game_update(self, m: dict[str, Any]) -> None:
        """Version 2: no view, no events, no options: the seat replays the
        log on its copy of the game (`PublicGame`, as a version 2 client
        must), which gives the events (its own draws), the next pid and the
        decision's options."""
        public = self.public
        if m["snapshot"] or (public is None and m["at"] == 0):
            public = self.public = PublicGame(self.rules, self.first_player)
        assert public is not None and m["at"] == public.entries, "a game_update out of step"
        players = self.rules.players
        for i, data in enumerate(m["log"]):
            entry = entry_from_data(data, players, f"log entry {m['at'] + i}")
            for event in public.apply(entry):
                if type(event) is Drew and event.seat == self.seat:
                    n = len(event.cards)
                    self.hand, self.pile = self.hand + self.pile[:n], self.pile[n:]
            if entry.commitment is not None and entry.seat == self.seat:
                assert entry.pid is not None
                self.hand.remove(self.placed[entry.pid][0])
        d = m.get("decision")
        if d is not None and d["seat"] == self.seat:
            d = {**d, "options": [action_to_data(a) for a in public.game.legal_actions()]}
        await self._pending({**m, "decision": d}, public.game.next_pid)

    async def _pending(self, m: dict[str, Any], next_pid: int) -> None:
        """A push of the game: the latency to it, and our decision if one is due."""
        if self.answered_at is not None:
            if self.stats.inside(self.answered_at):
                self.stats.latencies.append(time.monotonic() - self.answered_at)
            self.answered_at = None
        d = m.get("decision")
        if d and d["seat"] == self.seat and d["turn"] not in self.answered_turns:
            self.answered_turns.add(d["turn"])
            await self.decide(d, next_pid)

    async def decide(self, d: dict[str, Any], next_pid: int) -> None:
        kind, turn = d["kind"], d["turn"]
        if kind == "open":
            return  # answered when its open_request comes
        if self.pace:
            await trio.sleep(self.pace_rng.uniform(0.5, 1.5) * self.pace)
        choice = self.rng.choice(d["options"])
        now = time.monotonic()
        self.answered_at = now
        self.answered += 1
        self.stats.decisions_all += 1
        if self.stats.inside(now):
            self.stats.decisions += 1
        send = self.send
        if kind == "direction":
            await send("direction", turn=turn, direction=choice["direction"])
        elif kind == "place":
            family = choice["card"][0]
            card = self.rng.choice([c for c in self.hand if c[0] == family])
            pid, nonce = next_pid, self.rng.randbytes(32)
            self.placed[pid] = (card, nonce)
            commitment = example.card_commitment(self.game, self.seat, pid, card, nonce)
            await send("place", turn=turn, at=choice["at"], family=family, commitment=commitment)
        elif kind == "reveal" and choice["type"] == "reveal":
            card, nonce = self.placed[d["pid"]]
            await send("reveal", turn=turn, card=card, nonce=nonce)
        elif kind == "reveal":
            await send("keep", turn=turn)
        elif kind in ("eliminate", "steal", "copy", "move_card"):
            await send("choose", turn=turn, target=choice["pid"])
        elif kind == "move_to":
            await send("move", turn=turn, index=choice["index"])
        else:
            raise ValueError(f"{self.name}: a decision of kind {kind!r}")

    def _opening(self, pid: int) -> dict[str, Any]:
        card, nonce = self.placed[pid]
        return {"pid": pid, "card": card, "nonce": nonce}

    def _automatic(self) -> None:
        if self.stats.inside(time.monotonic()):
            self.stats.automatic += 1

    async def on_open_request(self, m: dict[str, Any]) -> None:
        self._automatic()
        await self.send("open", **self._opening(m["pid"]))

    async def on_final_reveal_request(self, m: dict[str, Any]) -> None:
        self._automatic()
        openings = [self._opening(pid) for pid in m["pids"]]
        await self.send("final_reveal", seed=self.seed, openings=openings)

    async def on_game_end(self, m: dict[str, Any]) -> None:
        self.games_ended += 1
        self.verdicts_ok = all(v["status"] == "ok" for v in m["verification"])


class RawTable:
    def __init__(self, index: int, seats: list[RawSeat]) -> None:
        self.index, self.seats = index, seats

    def answered(self) -> int:
        return sum(s.answered for s in self.seats)


async def setup_table(
    nursery: trio.Nursery,
    spec: dict[str, Any],
    index: int,
    stats: Any,
    limiter: trio.CapacityLimiter,
    tables: list[RawTable],
) -> None:
    """Connect the table's seats; the host creates the room, the others
    join; everyone says ready (the game is started by `play_table`)."""
    players = spec["players"]
    async with limiter:
        seats = []
        for seat in range(players):
            rng = random.Random(spec["seed"] * 1_000_003 + index * 8 + seat)
            stream = await trio.open_tcp_stream(spec["host"], spec["port"])
            stats.connects += 1
            raw = RawSeat(stream, f"t{index}s{seat}", rng, stats, spec["pace"], spec["protocol"])
            await nursery.start(_run_seat, raw, stats)
            stats.sessions += 1
            seats.append(raw)
        host = seats[0]
        settings = {
            "players": players,
            "variant": "two-player" if players == 2 else "standard",
            "edition": "revised",
            "first_player": "host",
        }
        await host.send("create_room", settings=settings, name=f"bench {index}")
        await host.wait_until(lambda: host.room is not None)
        assert host.room is not None
        room = host.room["room"]
        for raw in seats[1:]:
            await raw.send("join_room", room=room)
        for raw in seats:
            await raw.send("ready", ready=True)
        tables.append(RawTable(index, seats))


async def _run_seat(
    raw: RawSeat, stats: Any, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    try:
        await raw.run(task_status=task_status)
    except Exception as exc:  # counted and reported; the others play on
        stats.error(f"seat {raw.name} ended: {exc!r}")


def startable(host: RawSeat) -> bool:
    """Whether `host` may start its room's next game (every seat taken and ready)."""
    room = host.room
    return (
        room is not None
        and room["host"] == host.player
        and room["state"] in ("waiting", "finished")
        and all("name" in s and s["ready"] for s in room["seats"])
    )


async def play_table(
    table: RawTable, stats: Any, game_timeout: float, delay: float, *, until: float = math.inf
) -> None:
    """Games at one table, one after the other, until cancelled (or trio's
    clock passes `until`); the first after `delay` seconds."""
    host = table.seats[0]
    phase = "starting"
    await trio.sleep(delay)
    try:
        while trio.current_time() < until:
            phase = "starting"
            started = host.games_started
            with trio.fail_after(game_timeout):
                while host.games_started == started:
                    await host.wait_until(
                        lambda s=started: host.games_started > s or startable(host)  # type: ignore[misc]
                    )
                    if host.games_started > started:
                        break
                    refused = host.start_refused
                    await host.send("start_game")
                    await host.wait_until(
                        lambda s=started, r=refused: (
                            host.games_started > s  # type: ignore[misc]
                            or host.start_refused > r
                        )
                    )
            answered = table.answered()
            phase = "playing"
            ended = [s.games_ended for s in table.seats]
            with trio.fail_after(game_timeout):
                for raw, before in zip(table.seats, ended, strict=True):
                    await raw.wait_until(lambda r=raw, b=before: r.games_ended > b)  # type: ignore[misc]
            now = time.monotonic()
            stats.games_all += 1
            stats.game_decisions.append(table.answered() - answered)
            if not all(s.verdicts_ok for s in table.seats):
                stats.games_failed += 1
            if stats.inside(now):
                stats.games += 1
                stats.game_seconds.append(now - host.started_at)
            phase = "ready again"
            for raw in table.seats:
                await raw.send("ready", ready=True)
    except trio.TooSlowError:
        stats.error(f"table {table.index}: stalled for {game_timeout:g} s ({phase})")
    except Exception as exc:  # one table's failure is reported, not fatal
        stats.error(f"table {table.index}: {phase}: {exc!r}")

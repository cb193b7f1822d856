"""The worked example of docs/PROTOCOL.md: one real session, frame by frame.

How this works
--------------
Ann's client (a `ClientEndpoint`, playing with a random bot) talks to the
real server core (`oriflamme.server.core`) in one process
(`oriflamme.launcher.inprocess`): she creates a room, seats two server bots
(clients too, which keep their own secrets), and plays the game to its end.
Every frame her connection carries is recorded as it goes. Nothing is
scripted: what the example shows is what the server sends. The server's
randomness, every seat's seed and nonces and every bot's choices come from
fixed sources, so the transcript is the same on every run.

`session()` returns every frame; `excerpt()` keeps the start (through Ann's
first reveal), her first opening after an elimination, and the end;
`render()` writes the document's block.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from oriflamme.client.bots import Bot
from oriflamme.client.endpoint import ClientEndpoint
from oriflamme.client.seat_secrets import SeatSecrets
from oriflamme.engine import Rules, card_to_data
from oriflamme.launcher.inprocess import InProcess
from oriflamme.protocol import messages as m
from oriflamme.protocol.codec import encode_frame
from oriflamme.server.core import FixedEntropy, ServerConfig

from .notation import hex_dump, notation

# The seed of every bot's choices: one whose game shows Ann a reveal early,
# and then an opening asked of her after an elimination.
CHOICES = 1
SETTINGS = m.RoomSettings(
    players=3, variant="standard", edition="revised", turn_timer=60, first_player="host"
)


@dataclass(frozen=True, slots=True)
class Frame:
    sender: m.Sender
    message: m.Message
    data: bytes


def fixed_secrets(label: str) -> Callable[[Rules, bytes, int], SeatSecrets]:
    """Seat secrets whose seed and nonces come from `label` (docs and tests only)."""

    def make(rules: Rules, game_id: bytes, seat: int) -> SeatSecrets:
        source = FixedEntropy(f"{label} seat {seat}")
        return SeatSecrets(
            rules, game_id, seat, seed=source.token_bytes(32), nonces=lambda: source.token_bytes(32)
        )

    return make


class _Recorded(ClientEndpoint):
    """A client endpoint that keeps every frame it sends and receives."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.frames: list[Frame] = []

    def request(self, message: m.Message) -> bytes:
        data = super().request(message)
        self.frames.append(Frame("client", _with_id(message, self.last_id()), data))
        return data

    def receive_data(self, data: bytes) -> list[m.Message]:
        received = super().receive_data(data)
        for message in received:
            self.frames.append(Frame("server", message, encode_frame(m.to_data(message))))
        return received


def _with_id(message: m.Message, request_id: int) -> m.Message:
    fields = {spec.name: getattr(message, spec.name) for spec in message.FIELDS}
    return type(message)(**{**fields, "id": request_id})


def session(version: int = 1) -> list[Frame]:
    """Every frame of Ann's session in protocol `version`: lobby, a whole
    game, and its end."""
    world = InProcess(
        config=ServerConfig(idle_timeout=120),
        entropy=FixedEntropy("worked example server"),
        seed=CHOICES,
        make_secrets=fixed_secrets("worked example"),
    )
    ann = _Recorded(
        "Ann",
        make_secrets=fixed_secrets("worked example"),
        client="oriflamme-cli/0.1",
        versions=(version,),
    )
    client = world.connect("Ann", bot=Bot("random", rng=random.Random(CHOICES)), endpoint=ann)
    world.settle()
    for request in (
        m.CreateRoom(settings=SETTINGS, name="Ann's table"),
        m.AddBot(strategy="heuristic"),
        m.AddBot(strategy="random"),
        m.Ready(ready=True),
    ):
        client.send(request)
        world.settle()
    client.send(m.StartGame(first_player=0))
    world.run(lambda: bool(world.records))
    world.settle()  # the game_end on its way to Ann
    assert not client.errors() and not client.state.problems, client.errors()
    assert any(f.message.TYPE == "open_request" for f in ann.frames), "choose another CHOICES"
    return ann.frames


# ------------------------------------------------------------------ the document's block


def _first(frames: list[Frame], start: int, test: Any) -> int:
    return next(i for i in range(start, len(frames)) if test(frames[i]))


def excerpt(frames: list[Frame]) -> Iterator[tuple[int, int]]:
    """Ranges of frames worth showing: the start through Ann's first reveal and
    the push after it, her first opening on demand, and the end."""
    first_reveal = _first(frames, 0, lambda f: f.message.TYPE == "reveal")
    after = _first(frames, first_reveal, lambda f: f.message.TYPE == "game_state")
    yield 0, after + 1
    shown = after + 1
    request = next(
        (i for i in range(shown, len(frames)) if frames[i].message.TYPE == "open_request"), None
    )
    if request is not None:
        begin = max(shown, request - 1)
        end = _first(frames, request, lambda f: f.message.TYPE == "game_state") + 1
        yield begin, end
        shown = end
    last_state = max(i for i, f in enumerate(frames) if f.message.TYPE == "game_state")
    yield max(shown, last_state), len(frames)


_VIEW_KEYS = ("round", "step", "next_pid", "scores", "queue")


def _shown(frame: Frame) -> dict[str, Any]:
    data = m.to_data(frame.message)
    if "view" in data:
        v = data["view"]
        data["view"] = {k: v[k] for k in _VIEW_KEYS} | {"…": "…"}
    return data


def render() -> str:
    """The worked example block of docs/PROTOCOL.md."""
    frames = session()
    out = [
        "Ann connects, creates a 3-player room with a 60-second turn timer, seats two server",
        "bots, and plays seat 0 (red) to the end. Every frame Ann's connection carries is",
        "listed, in order, except where a line says how many are left out; `game_state` views",
        'are cut down to a few keys (`"…": "…"` stands for the rest, see',
        "[Game views](#game-views)). The server is the real one, and the commitments, seeds",
        "and openings are real: you can check every one of them with your own code. The byte",
        "counts include the 4-byte length header. C→S is Ann's client to the server, S→C the",
        "server to Ann.",
        "",
    ]
    shown_until = 0
    for begin, end in excerpt(frames):
        if begin > shown_until:
            skipped = frames[shown_until:begin]
            kinds = sorted({f.message.TYPE for f in skipped})
            out.append(
                f"*… {len(skipped)} frames left out ({', '.join(f'`{k}`' for k in kinds)}) …*\n"
            )
        for number in range(begin, end):
            frame = frames[number]
            arrow = "C→S" if frame.sender == "client" else "S→C"
            out.append(
                f"**{number + 1}.** {arrow} `{frame.message.TYPE}` ({len(frame.data)} bytes)\n"
            )
            out.append("```\n" + notation(_shown(frame), width=100) + "\n```\n")
            if number == 0:
                out.append("On the wire (4-byte length, then the msgpack map):\n")
                out.append("```\n" + hex_dump(frame.data) + "\n```\n")
        shown_until = end
    out.append(_commitments_table(frames))
    return "\n".join(out)


def render_v2() -> str:
    """The worked example's version 2 block: the same session's game, from
    its start to the push after Ann's first reveal."""
    frames = session(2)
    begin = _first(frames, 0, lambda f: f.message.TYPE == "game_started")
    reveal = _first(frames, begin, lambda f: f.message.TYPE == "reveal")
    end = _first(frames, reveal, lambda f: f.message.TYPE == "game_update") + 1
    out = [
        "The same session in version 2 (`hello.versions` `[2]`): the lobby's frames are",
        "the same; from the game's start to the push after Ann's first reveal, every frame,",
        "with its number in the session. Each `game_update` carries the log entries since",
        "the one before (`at` counts those before), the pending decision without its",
        "options, and the digest of the events the entries make; replay them on a game",
        "dealt with card backs (see [Version 2: the game as its log](#version-2-the-game-as-its-log)).",
        "",
    ]
    for number in range(begin, end):
        frame = frames[number]
        arrow = "C→S" if frame.sender == "client" else "S→C"
        out.append(f"**{number + 1}.** {arrow} `{frame.message.TYPE}` ({len(frame.data)} bytes)\n")
        out.append("```\n" + notation(_shown(frame), width=100) + "\n```\n")
    return "\n".join(out)


def _commitments_table(frames: list[Frame]) -> str:
    """Every commitment Ann saw, with its opening, so a reader can check them
    all, the left-out frames' included."""
    commitments: dict[int, m.PlacementCommitment] = {}
    openings = {}
    seeds: dict[int, bytes] = {}
    seed_commitments: tuple[bytes, ...] = ()
    for frame in frames:
        message = frame.message
        if isinstance(message, m.GameState):
            commitments.update({c.pid: c for c in message.commitments})
            openings.update({o.pid: o for o in message.openings})
        elif isinstance(message, m.GameEnd):
            openings.update({o.pid: o for o in message.openings})
            seeds = {s.seat: s.seed for s in message.seeds}
        elif isinstance(message, m.ServerSeed):
            seed_commitments = message.commitments
    rows = [
        "Every commitment of the game, from all of Ann's frames (the left-out ones too),",
        "with its opening: the seed commitments of `server_seed` and the seeds of",
        "`game_end`, then each card's commitment (from the `game_state` that placed it) and",
        "its opening (from the `game_state` that revealed or eliminated it, or from",
        "`game_end`).",
        "",
        "| seat | seed commitment | seed |",
        "| --- | --- | --- |",
    ]
    rows += [
        f"| {seat} | `{c.hex()}` | `{seeds[seat].hex()}` |"
        for seat, c in enumerate(seed_commitments)
    ]
    rows += ["", "| pid | seat | commitment | card | nonce |", "| --- | --- | --- | --- | --- |"]
    for pid in sorted(commitments):
        c, o = commitments[pid], openings[pid]
        rows.append(
            f"| {pid} | {c.seat} | `{c.commitment.hex()}` | `{notation(card_to_data(o.card))}`"
            f" | `{o.nonce.hex()}` |"
        )
    return "\n".join(rows) + "\n"

"""Fuzz targets: the server's core taking whatever a client sends.

`serve(messages, cuts)` runs a game between three seats (two bots and
Ann, a bot too, in one room) through the server's core, in process, while a
hostile connection says hello and then sends `messages` (any maps: message
types of the catalog with any fields, or anything else), split into chunks
at `cuts`, interleaved with the game's traffic and with time passing. What
must hold, whatever it sends:

* the server never fails (no `Fault`: no exception inside the core);
* the hostile connection gets answers or errors, and is closed only after a
  fatal error;
* the game at the table goes on and ends, with a record that verifies.

The same targets run under hypothesis in CI (`test_fuzz_targets.py`,
briefly) and under atheris on demand (`python -m tests.fuzz.atheris_main`).
"""

from __future__ import annotations

from typing import Any

import msgpack

from oriflamme.client.bots import Bot
from oriflamme.launcher.inprocess import InProcess
from oriflamme.protocol import messages as m
from oriflamme.protocol.codec import FrameDecoder
from oriflamme.protocol.verify import verify_record
from oriflamme.server.core import FixedEntropy, ServerConfig

HOSTILE = "hostile"


def frame(value: Any) -> bytes:
    """One frame of any msgpack value (what msgpack cannot pack becomes a
    string: the target is the server, not msgpack)."""
    try:
        payload = msgpack.packb(value, use_bin_type=True)
    except (TypeError, ValueError, OverflowError):
        payload = msgpack.packb(repr(value))
    return len(payload).to_bytes(4, "big") + payload


def serve(messages: list[Any], cuts: list[int], *, ticks: list[float] | None = None) -> None:
    """See the module docstring; raises AssertionError when something fails."""
    world = InProcess(
        entropy=FixedEntropy("fuzz"), config=ServerConfig(idle_timeout=600, reply_timer=20)
    )
    ann = world.connect("Ann", bot=Bot("random", seed="ann"))
    world.settle()
    settings = m.RoomSettings.for_players(3, turn_timer=30)
    for request in (
        m.CreateRoom(settings=settings, name="table"),
        m.AddBot(strategy="random"),
        m.AddBot(strategy="heuristic"),
        m.Ready(ready=True),
    ):
        ann.send(request)
        world.settle()
    ann.send(m.StartGame())

    gateway = world.gateway
    gateway.open(HOSTILE, world.now)
    data = frame({"type": "hello", "versions": [1], "client": "fuzz/1", "name": "Mal", "id": 1})
    data += b"".join(frame(message) for message in messages)
    chunks, last = [], 0
    for cut in sorted({c % (len(data) + 1) for c in cuts}):
        chunks.append(data[last:cut])
        last = cut
    chunks.append(data[last:])
    chunks = [c for c in chunks if c]  # (empty bytes would say the client closed)
    received = FrameDecoder(max_frame=1 << 24)
    closed = False
    for i, chunk in enumerate(chunks):
        if closed:
            break
        gateway.receive_data(HOSTILE, chunk, world.now)
        world.settle()
        if ticks:
            world.advance(abs(ticks[i % len(ticks)]) % 5)
        out = gateway.data_to_send(HOSTILE)
        if out:  # (b"" would say the server closed)
            received.feed(out)
        if gateway.must_close(HOSTILE):
            gateway.closed(HOSTILE, world.now)
            closed = True
    answers = []
    while (answer := received.next_frame()) is not None:
        answers.append(answer)
    if closed:
        fatal = [a for a in answers if a.get("type") == "error" and a.get("fatal")]
        assert fatal, f"closed without a fatal error: {answers[-3:]}"
    else:
        gateway.closed(HOSTILE, world.now)
    assert not world.faults, world.faults[0]

    world.run(lambda: bool(world.records), max_seconds=24 * 3600)
    assert not world.faults, world.faults[0]
    (finished,) = world.records
    verdict = verify_record(finished.record)
    assert verdict.ok, verdict.reasons()

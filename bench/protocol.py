"""Protocol codec speed: a typical game-view push, encoded and decoded.

Plays a seeded 5-player game with random players to round 4, builds the
`game_state` push a seat would get after the last action (the engine's view
for that seat, the events masked for it, the pending decision, the placement
commitment), then measures in the same run:

* codec: message -> frame bytes (`to_data` + `encode_frame`) and frame bytes ->
  message (`FrameDecoder` + `from_data`, every field validated);
* connection: the same through `ServerConnection.send` and
  `ClientConnection.receive_data` + `next_message`;
* raw msgpack: `msgpack.packb` + `msgpack.unpackb` of the same dict, the baseline.

Prints round trips per second (median of several runs) and the overhead
ratios over raw msgpack (target: codec under 2x).

    python bench/protocol.py [--runs 7] [--seconds 0.3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import msgpack

from oriflamme.engine import (
    Event,
    RandomPlayer,
    action_to_data,
    event_to_data,
    mask_event,
    new_game,
    view,
)
from oriflamme.protocol import messages as m
from oriflamme.protocol.codec import FrameDecoder, encode_frame
from oriflamme.protocol.connection import ClientConnection, ServerConnection


def typical_push(seed: int = 4) -> m.GameState:
    """The game_state push seat 2 gets in round 4 of a seeded 5-player game."""
    game = new_game(5, seed=seed)
    player = RandomPlayer(seed=seed)
    events: list[Event] = []
    # Round 4, during the resolution: the push after an action that set off a
    # few events (a reveal, its ability, the points it scored...).
    while game.round < 4 or game.step == "place" or len(events) < 4:
        events = game.apply(player.choose(game))
    seat = 2
    decision = game.decision
    assert decision is not None
    last_pid = game.next_pid - 1
    return m.GameState(
        seq=812,
        game=bytes(range(16)),
        view=view(game, seat),
        events=[event_to_data(mask_event(e, seat)) for e in events],
        commitments=(
            m.PlacementCommitment(pid=last_pid, seat=game.queue[0][-1].owner, commitment=bytes(32)),
        ),
        openings=(),
        snapshot=False,
        decision=m.PendingDecision(
            seat=decision.seat,
            kind=decision.kind,
            pid=decision.pid,
            turn=97,
            options=[action_to_data(a) for a in decision.options],
            time_left=59_500,
        ),
    )


def rate(step: Callable[[], object], seconds: float) -> float:
    """Calls of `step` per second over about `seconds`."""
    n = 0
    batch = 200
    start = time.perf_counter()
    while True:
        for _ in range(batch):
            step()
        n += batch
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return n / elapsed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--seconds", type=float, default=0.3)
    args = parser.parse_args(argv)

    push = typical_push()
    data = m.to_data(push)
    frame = encode_frame(data)

    decoder = FrameDecoder()

    def codec_round_trip() -> object:
        decoder.feed(encode_frame(m.to_data(push)))
        frame_data = decoder.next_frame()
        assert frame_data is not None
        return m.from_data(frame_data, "server")

    def raw_round_trip() -> object:
        return msgpack.unpackb(msgpack.packb(data))

    server, client = handshake()

    def connection_round_trip() -> object:
        client.receive_data(server.send(push))
        message = client.next_message()
        # Rewind the push numbering so the same push can be sent again.
        server._last_seq = client._last_seq = push.seq - 1
        return message

    server._last_seq = client._last_seq = push.seq - 1
    assert codec_round_trip() == push
    assert connection_round_trip() == push

    results: dict[str, list[float]] = {"codec": [], "connection": [], "raw": []}
    for _ in range(args.runs):
        results["raw"].append(rate(raw_round_trip, args.seconds))
        results["codec"].append(rate(codec_round_trip, args.seconds))
        results["connection"].append(rate(connection_round_trip, args.seconds))
    median = {name: statistics.median(values) for name, values in results.items()}

    print(
        f"typical game_state push: {len(frame)} bytes on the wire, {len(data['view']['queue'])} slots in the queue,"
    )
    print(
        f"  {len(push.events)} events, {len(push.decision.options) if push.decision else 0} options"
    )
    print(f"median of {args.runs} runs of {args.seconds}s each:")
    print(f"  raw msgpack packb+unpackb   {median['raw']:>10,.0f} round trips/s (baseline)")
    print(f"  codec encode+decode         {median['codec']:>10,.0f} round trips/s")
    print(f"  connection send+receive     {median['connection']:>10,.0f} round trips/s")
    print(
        f"overhead over raw msgpack: codec {median['raw'] / median['codec']:.2f}x (target < 2x),"
        f" connection {median['raw'] / median['connection']:.2f}x"
    )


def handshake() -> tuple[ServerConnection, ClientConnection]:
    server, client = ServerConnection(), ClientConnection()
    server.receive_data(client.send(m.Hello(versions=(1,), client="bench", name="bench")))
    server.next_message()
    client.receive_data(
        server.send(
            m.Welcome(
                version=1, token=bytes(32), player=1, server="bench", resumed=False, idle_timeout=60
            )
        )
    )
    client.next_message()
    return server, client


if __name__ == "__main__":
    main()

"""What keys cost: Ed25519 signatures, and a handshake with a key.

Measures, in one process and one run:

* an Ed25519 signature and a verification of a 154-byte proof (what a
  handshake signs: docs/PROTOCOL.md, "Keys and the handshake"), and, as
  the baseline, a SHA-256 of the same bytes (what a card commitment costs);
* a whole handshake through the server's core (`Gateway`, a fresh lobby
  each time): a `hello` without a key and its `welcome`, against a `hello`
  with a key, its `challenge` (the server signs), the client's checks and
  `prove` (the client verifies and signs), and the server's check before
  its `welcome`; both with the real client endpoint.

Prints microseconds for each (medians of `--runs`) and the ratios.

    python bench/identity.py [--runs 5] [--count 2000]
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import time
from collections.abc import Callable

from oriflamme.client.endpoint import ClientEndpoint
from oriflamme.protocol import identity
from oriflamme.server.core import FixedEntropy, Gateway, Lobby, ServerConfig

KEY = identity.private_key(bytes(range(32)))
PROOF = identity.client_proof(bytes(32), bytes(32), bytes(32), identity.public_bytes(KEY))


def per_call(work: Callable[[], object], count: int, runs: int) -> float:
    """Median microseconds of one call of `work`."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        for _ in range(count):
            work()
        times.append((time.perf_counter() - started) / count * 1e6)
    return statistics.median(times)


def handshake(gateway: Gateway, conn: str, key: object) -> None:
    """One client's handshake, to its welcome."""
    endpoint = ClientEndpoint("Ann", key=key)  # type: ignore[arg-type]
    gateway.open(conn, 0.0)
    gateway.receive_data(conn, endpoint.hello(), 0.0)
    while endpoint.welcome is None:
        endpoint.receive_data(gateway.data_to_send(conn))
        gateway.receive_data(conn, endpoint.take_outgoing(), 0.0)


def handshakes(key: object, count: int) -> Callable[[], object]:
    """`count` handshakes (each connection of its own) on one gateway."""
    config = ServerConfig(
        idle_timeout=60, max_sessions=10**6, sessions_per_address=10**6, name_length=32
    )
    gateway = Gateway(Lobby(config, FixedEntropy("bench")))
    counter = iter(range(10**9))

    def one() -> None:
        handshake(gateway, f"c{next(counter)}", key)

    return one


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--count", type=int, default=2000)
    args = parser.parse_args()
    signature = identity.sign(KEY, PROOF)
    public = identity.public_bytes(KEY)
    sha = per_call(lambda: hashlib.sha256(PROOF).digest(), args.count, args.runs)
    sign = per_call(lambda: identity.sign(KEY, PROOF), args.count, args.runs)
    verify = per_call(lambda: identity.verify(public, signature, PROOF), args.count, args.runs)
    count = max(1, args.count // 4)
    plain = per_call(handshakes(None, count * args.runs), count, args.runs)
    keyed = per_call(handshakes(KEY, count * args.runs), count, args.runs)
    print(f"identity: medians of {args.runs} runs")
    print(f"  sha-256 of a proof (baseline)   {sha:8.1f} us")
    print(f"  ed25519 signature               {sign:8.1f} us   ({sign / sha:.0f}x the baseline)")
    print(
        f"  ed25519 verification            {verify:8.1f} us   ({verify / sha:.0f}x the baseline)"
    )
    print(f"  handshake without a key         {plain:8.1f} us   (hello, welcome)")
    print(
        f"  handshake with a key            {keyed:8.1f} us   (hello, challenge, prove, welcome:"
        f" {keyed / plain:.2f}x)"
    )


if __name__ == "__main__":
    main()

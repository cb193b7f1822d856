"""What keys cost: Ed25519 signatures, and a handshake with a key.

Measures, in one process and one run:

* an Ed25519 signature and a verification of a 154-byte proof (what a
  handshake signs: docs/PROTOCOL.md, "Keys and the handshake"), and, as
  the baseline, a SHA-256 of the same bytes (what a card commitment costs);
* a whole handshake through the server's core (`Gateway`, a fresh lobby
  each time): a `hello` without a key and its `welcome`, against a `hello`
  with a key, its `challenge` (the server signs), the client's checks and
  `prove` (the client verifies and signs), and the server's check before
  its `welcome`; both with the real client endpoint;
* a signed decision (docs/PROTOCOL.md, "Signed decisions"): what a client
  adds to a `place` it sends (its form, msgpack, the signature) and what
  the server adds to check it;
* whole games through the referee alone (3 seats, every seat answering at
  once), the same games with and without keys: the referee's time per
  decision, the record included (where the server signs its own
  decisions), the seats' own work left out.

Prints microseconds for each (medians of `--runs`) and the ratios.

    python bench/identity.py [--runs 5] [--count 2000]
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from oriflamme.client.endpoint import ClientEndpoint
from oriflamme.engine.events import Drew
from oriflamme.protocol import identity, signatures
from oriflamme.protocol import messages as m
from oriflamme.server.core import FixedEntropy, Gateway, Lobby, Phase, ServerConfig

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


PLACE = m.PlaceCard(turn=17, at="first", family="red", commitment=bytes(range(32)))


def referee_games(keyed: bool, games: int) -> float:
    """Microseconds of the referee's own time per decision over `games`
    whole games (the same games, with keys or without)."""
    # (the tests' games against the referee alone, from the repository)
    root = str(Path(__file__).resolve().parents[1])
    if root not in sys.path:
        sys.path.insert(0, root)
    from tests.protocol.fairness_helpers import FixedSecrets
    from tests.server.local_referee import new_local_table

    spent, decisions = 0.0, 0
    for game in range(games):
        keys = [identity.private_key(bytes([seat + 1]) * 32) for seat in range(3)]
        referee, seats = new_local_table(
            3, seed=game, keys=keys if keyed else None, secrets_class=FixedSecrets
        )
        for s in seats:
            message = s.signed(m.SeedCommit(commitment=s.secrets.seed_commitment))
            started = time.perf_counter()
            referee.receive(s.seat, message)
            spent += time.perf_counter() - started
        server_seed = referee.server_seed
        assert server_seed is not None
        for s in seats:
            s.secrets.learn_server_seed(server_seed)
        while referee.phase is Phase.PLAYING:
            decision = referee.decision
            assert decision is not None
            seat = seats[decision.seat]
            message = seat.signed(seat.answer(referee))
            started = time.perf_counter()
            ruling = referee.receive(seat.seat, message)
            spent += time.perf_counter() - started
            decisions += 1
            for event in ruling.events:
                if type(event) is Drew:
                    seats[event.seat].secrets.draw(len(event.cards))
        for index in referee.awaited_reveals():
            s = seats[index]
            message = s.signed(s.final_reveal(referee.hidden(index)))
            started = time.perf_counter()
            referee.receive(index, message)
            spent += time.perf_counter() - started
        started = time.perf_counter()
        referee.record()
        spent += time.perf_counter() - started
    return spent / decisions * 1e6


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
    game = bytes(16)
    signed = signatures.signed(KEY, game, 1, PLACE)
    sign_place = per_call(lambda: signatures.signed(KEY, game, 1, PLACE), args.count, args.runs)
    check_place = per_call(
        lambda: signatures.signature_ok(public, game, 1, signed), args.count, args.runs
    )
    print(f"  a place, signed (client)        {sign_place:8.1f} us   (form, msgpack, signature)")
    print(
        f"  a place, checked (server)       {check_place:8.1f} us   (form, msgpack, verification)"
    )
    games = max(2, args.count // 200)
    plain_games = statistics.median(referee_games(False, games) for _ in range(args.runs))
    keyed_games = statistics.median(referee_games(True, games) for _ in range(args.runs))
    print(f"  referee, seats without keys     {plain_games:8.1f} us a decision ({games} games)")
    print(
        f"  referee, seats with keys        {keyed_games:8.1f} us a decision"
        f" ({keyed_games / plain_games:.2f}x: each decision checked, the record signed)"
    )


if __name__ == "__main__":
    main()

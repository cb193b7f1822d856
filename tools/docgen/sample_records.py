"""Sample game records for client authors (docs/records/), each with its verdicts.

How this works
--------------
Each sample is a whole game played through the real server core in one
process (`oriflamme.launcher.inprocess`), with fixed randomness so it is the
same on every run, and with some seats misbehaving on purpose: a player who
never decides (the turn timer decides), one who never opens an eliminated
card (the card is settled), one whose reveal does not match its commitment,
one whose final reveal is false, one who goes away and comes back, one who
leaves, a game its players end by vote once one of them left, and a game
of players with keys, with two forgeries of it: a decision signed by the
server's key in place of its seat's, and one not signed at all. `docs/records/index.json` lists each file with what `oriflamme
verify` must say of it: whether the game is valid, and each seat's verdict.
A verifier written from docs/PROTOCOL.md should agree on every one.

The misbehaving seats are `Behaviour`s, also used by the tests.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from oriflamme.client.bots import Behaviour, Bot, Seated
from oriflamme.client.endpoint import ClientEndpoint
from oriflamme.launcher.inprocess import Client, InProcess
from oriflamme.protocol import identity
from oriflamme.protocol import messages as m
from oriflamme.protocol.record import Record, encode_record
from oriflamme.protocol.signatures import SEAT, Signed, decisions, with_signatures
from oriflamme.protocol.verify import verify_record
from oriflamme.server.core import FixedEntropy, ServerConfig

from .worked_example import fixed_secrets

RECORD_SUFFIX = ".oriflamme"


def fixed_bytes(label: str, size: int = 32) -> bytes:
    """Deterministic test input: the first `size` bytes of SHA-256("oriflamme test vector: " + label)."""
    return hashlib.sha256(b"oriflamme test vector: " + label.encode()).digest()[:size]


class Undecided(Behaviour):
    """Never answers a decision (the server's timer does); answers what is automatic."""

    def messages(self, client: Seated) -> list[m.Message]:
        game = client.state.game
        return [] if game is None else game.automatic()


class NeverOpens(Behaviour):
    """Plays, but never opens an eliminated card: the server settles it."""

    def messages(self, client: Seated) -> list[m.Message]:
        return [x for x in super().messages(client) if not isinstance(x, m.OpenCard)]


class FalseReveal(Behaviour):
    """Reveals its first card with a nonce that does not open the commitment."""

    def __init__(self, bot: Bot | None) -> None:
        super().__init__(bot)
        self.lied = False

    def messages(self, client: Seated) -> list[m.Message]:
        out = super().messages(client)
        game = client.state.game
        for i, x in enumerate(out):
            if isinstance(x, m.KeepCard) and not self.lied and game is not None:
                decision = game.decision
                assert decision is not None and decision.pid is not None
                assert game.secrets is not None
                opening = game.secrets.opening(decision.pid)
                out[i] = m.RevealCard(turn=x.turn, card=opening.card, nonce=bytes(32))
                self.lied = True
        return out


class FalseSeed(Behaviour):
    """Sends a seed at the end that is not the one it committed to."""

    def messages(self, client: Seated) -> list[m.Message]:
        return [
            m.FinalReveal(seed=bytes(32), openings=x.openings)
            if isinstance(x, m.FinalReveal)
            else x
            for x in super().messages(client)
        ]


@dataclass(frozen=True)
class Sample:
    name: str
    description: str
    players: int
    turn_timer: int | None
    behaviours: dict[int, Callable[[Bot], Behaviour]]
    script: Callable[[InProcess, list[Client]], None] | None = None
    keys: tuple[int, ...] = ()  # the seats whose players have keys (and sign)
    # What is done to the record after the game (a forgery), given the server's key.
    forge: Callable[[Record, Ed25519PrivateKey], Record] | None = None


def _away_and_back(world: InProcess, clients: list[Client]) -> None:
    """Seat 1 goes away in round 2, past the grace period, and comes back in
    round 3; seat 2 leaves the game in round 4."""
    world.run(lambda: _round(clients[0]) >= 2)
    world.disconnect(clients[1])
    world.run(lambda: _round(clients[0]) >= 3)
    clients[1] = world.reconnect(clients[1])
    world.run(lambda: _round(clients[0]) >= 4)
    clients[2].send(m.LeaveRoom())


def _ended_by_vote(world: InProcess, clients: list[Client]) -> None:
    """Seat 2 leaves the game in round 3; seats 0 and 1 at once vote to end it."""
    world.run(lambda: _round(clients[0]) >= 3)
    game = clients[0].state.game
    assert game is not None
    clients[2].send(m.LeaveRoom())
    for client in clients[:2]:
        client.send(m.VoteAbort(game=game.game_id))


def _first(record: Record, seat: int, what: str) -> Signed:
    """The first of `seat`'s own decisions whose description names `what`."""
    return next(
        d for d in decisions(record) if d.seat == seat and d.signer == SEAT and what in d.where
    )


def _re_signed(record: Record, server: Ed25519PrivateKey) -> Record:
    """Seat 0's first placement signed by the server's key, not seat 0's."""
    d = _first(record, 0, "place")
    return with_signatures(record, {d.place: identity.sign(server, d.data)})


def _unsigned(record: Record, server: Ed25519PrivateKey) -> Record:
    """Seat 1's seed commitment without its signature."""
    d = _first(record, 1, "seed commitment")
    return with_signatures(record, {d.place: None})


def _round(client: Client) -> int:
    game = client.state.game
    view = None if game is None else game.view()
    return 0 if view is None else int(view["round"])


SAMPLES = (
    Sample("honest-3-players", "Three honest seats: every seat ok.", 3, None, {}),
    Sample("honest-two-player", "The two-player variant, both seats honest.", 2, None, {}),
    Sample(
        "undecided-seat",
        "A 30-second turn timer; seat 1 never decides, so the server decides for it when its"
        " time runs out (by_server: here, every placement skipped). Not a forfeit: ok.",
        3,
        30,
        {1: Undecided},
    ),
    Sample(
        "settled-openings",
        "Seat 2 never opens its eliminated cards: each is settled after the reply timer;"
        " seat 2 forfeits.",
        4,
        None,
        {2: NeverOpens},
    ),
    Sample(
        "false-reveal",
        "Seat 1 reveals a card with a nonce that does not open its commitment: bad_opening,"
        " the server keeps the card face down; seat 1 failed.",
        3,
        None,
        {1: FalseReveal},
    ),
    Sample(
        "false-final-reveal",
        "Seat 0 sends a false seed in its final reveal: seat 0 failed.",
        3,
        None,
        {0: FalseSeed},
    ),
    Sample(
        "away-and-left",
        "Seat 1 is away past the grace period (the stand-in plays it), then comes back;"
        " seat 2 leaves the game (forfeited, the stand-in plays it to the end).",
        3,
        None,
        {},
        _away_and_back,
    ),
    Sample(
        "ended-by-vote",
        "Seat 2 leaves the game in round 3, and seats 0 and 1 end it by vote: the log stops"
        " there, results.complete is false, with results.votes [0, 1], the scores as they"
        " stood and no winners; seat 2 forfeited (the game counts for nothing anyway).",
        3,
        None,
        {},
        _ended_by_vote,
    ),
    Sample(
        "signed-game",
        "Seats 0 and 1 have keys and sign their decisions; seat 2 has none (its decisions are"
        " not signed), and never decides, so the server decides for it (signed by the"
        " server's key, as every decision the server makes). Every signature checks: valid.",
        3,
        30,
        {2: Undecided},
        keys=(0, 1),
    ),
    Sample(
        "forged-decision",
        "The signed game, with seat 0's first placement signed by the server's key in place of"
        " seat 0's: not valid, and the problem names that decision.",
        3,
        30,
        {2: Undecided},
        keys=(0, 1),
        forge=_re_signed,
    ),
    Sample(
        "unsigned-decision",
        "The signed game, with seat 1's seed commitment not signed: not valid, and the"
        " problem names it.",
        3,
        30,
        {2: Undecided},
        keys=(0, 1),
        forge=_unsigned,
    ),
)


def play(sample: Sample) -> Record:
    """Play `sample` and return its record."""
    # (the forged samples are the signed game's record, forged)
    label = f"sample record {'signed-game' if sample.forge else sample.name}"
    entropy = FixedEntropy(label)
    world = InProcess(
        config=ServerConfig(idle_timeout=86400, reply_timer=30, grace=60),
        entropy=entropy,
        seed=1,
        make_secrets=fixed_secrets(label),
    )
    rng = random.Random(label)
    clients = []
    for seat in range(sample.players):
        bot = Bot("heuristic" if seat % 2 else "random", rng=random.Random(rng.random()))
        behaviour = sample.behaviours.get(seat, Behaviour)(bot)
        key = identity.private_key(fixed_bytes(f"{label}: key {seat}"))
        endpoint = ClientEndpoint(
            f"player {seat}",
            key=key if seat in sample.keys else None,
            make_secrets=fixed_secrets(label),
        )
        clients.append(world.connect(f"player {seat}", behaviour=behaviour, endpoint=endpoint))
    settings = m.RoomSettings.for_players(sample.players, turn_timer=sample.turn_timer)
    world.start_table(clients, settings, name=sample.name[:40])
    if sample.script is not None:
        sample.script(world, clients)
    world.run(lambda: bool(world.records))
    record = world.records[0].record
    if sample.forge is not None:
        record = sample.forge(record, identity.private_key(entropy.server_key_seed()))
    return record


def samples() -> dict[str, bytes]:
    """Every sample record's file, and the index, by file name."""
    files: dict[str, bytes] = {}
    index: list[dict[str, Any]] = []
    for sample in SAMPLES:
        record = play(sample)
        verdict = verify_record(record)
        name = sample.name + RECORD_SUFFIX
        files[name] = encode_record(record)
        index.append(
            {
                "file": name,
                "description": sample.description,
                "valid": verdict.ok,
                "problems": list(verdict.problems),
                "verdicts": [
                    {"seat": v.seat, "status": v.status, "reason": v.reason} for v in verdict.seats
                ],
            }
        )
    files["index.json"] = (json.dumps(index, indent=2, ensure_ascii=False) + "\n").encode()
    return files

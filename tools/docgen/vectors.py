"""Test vectors for the commitments and the fair deal (docs/test-vectors.json).

Fixed inputs, and what our code computes from them, so that an implementation
in any language can be checked against ours. Bytes are lowercase hex; cards
are ``[family, kind]`` as in the protocol.

``python -m tools.docgen`` writes the file (see `tools.docgen`).
"""

from __future__ import annotations

import json
from typing import Any

from oriflamme.engine import (
    FAMILY_NAMES,
    STANDARD,
    TWO_PLAYER,
    Card,
    Rules,
    card,
    card_to_data,
    event_to_data,
    view,
)
from oriflamme.protocol import identity, signatures
from oriflamme.protocol import messages as m
from oriflamme.protocol.commitments import (
    CARD_TAG,
    PROTOCOL_VERSION,
    SEED_TAG,
    SERVER_SEAT,
    Opening,
    card_commitment,
    card_preimage,
    seed_commitment,
    seed_preimage,
)
from oriflamme.protocol.deal import (
    DEAL_TAG,
    DealStream,
    derive_deal,
    shuffle_kinds,
    stream_block,
    stream_message,
)
from oriflamme.protocol.record import entry_to_data
from oriflamme.protocol.updates import PublicGame, events_digest

from . import sample_records
from .sample_records import fixed_bytes

GAME_A = bytes(range(16))
GAME_B = fixed_bytes("game B", 16)
SERVER_SEED = fixed_bytes("server seed")


def client_seed(seat: int) -> bytes:
    return fixed_bytes(f"client seed {seat}")


def _card_vector(game_id: bytes, seat: int, pid: int, c: Card, nonce: bytes) -> dict[str, Any]:
    return {
        "game_id": game_id.hex(),
        "seat": seat,
        "pid": pid,
        "card": card_to_data(c),
        "nonce": nonce.hex(),
        "preimage": card_preimage(game_id, seat, pid, c, nonce).hex(),
        "commitment": card_commitment(game_id, seat, pid, c, nonce).hex(),
    }


def _seed_vector(game_id: bytes, seat: int, seed: bytes) -> dict[str, Any]:
    return {
        "game_id": game_id.hex(),
        "seat": seat,
        "seed": seed.hex(),
        "preimage": seed_preimage(game_id, seat, seed).hex(),
        "commitment": seed_commitment(game_id, seat, seed).hex(),
    }


def _shuffle_vector(game_id: bytes, seat: int, cseed: bytes, family_count: int) -> dict[str, Any]:
    stream = DealStream(cseed, game_id, seat, SERVER_SEED)
    orders = [[k.label for k in shuffle_kinds(stream)] for _ in range(family_count)]
    return {
        "game_id": game_id.hex(),
        "seat": seat,
        "client_seed": cseed.hex(),
        "server_seed": SERVER_SEED.hex(),
        "family_count": family_count,
        "orders": orders,
        "bytes_read": stream.consumed,
        "bytes_rejected": stream.rejected,
    }


def _deal_vector(rules: Rules, game_id: bytes, seat: int) -> dict[str, Any]:
    cseed = client_seed(seat)
    deal = derive_deal(rules, game_id, seat, cseed, SERVER_SEED)
    return {
        "players": rules.players,
        "variant": rules.variant,
        "seat": seat,
        "families": [FAMILY_NAMES[f] for f in rules.families[seat]],
        "game_id": game_id.hex(),
        "client_seed": cseed.hex(),
        "server_seed": SERVER_SEED.hex(),
        "set_aside": [card_to_data(c) for c in deal.set_aside],
        "hand": [card_to_data(c) for c in deal.hand],
        "draw_pile": [card_to_data(c) for c in deal.draw_pile],
    }


def _handshake_vector(label: str) -> dict[str, Any]:
    """Both proofs of one handshake, from fixed private keys and nonces."""
    client = identity.private_key(fixed_bytes(f"{label}: client key"))
    server = identity.private_key(fixed_bytes(f"{label}: server key"))
    client_key, server_key = identity.public_bytes(client), identity.public_bytes(server)
    client_nonce = fixed_bytes(f"{label}: client nonce")
    server_nonce = fixed_bytes(f"{label}: server nonce")
    server_proof = identity.server_proof(client_nonce, server_nonce, client_key)
    client_proof = identity.client_proof(server_key, server_nonce, client_nonce, client_key)
    return {
        "client_private_key": fixed_bytes(f"{label}: client key").hex(),
        "client_key": client_key.hex(),
        "client_fingerprint": identity.fingerprint(client_key),
        "server_private_key": fixed_bytes(f"{label}: server key").hex(),
        "server_key": server_key.hex(),
        "client_nonce": client_nonce.hex(),
        "server_nonce": server_nonce.hex(),
        "server_proof": server_proof.hex(),
        "server_signature": identity.sign(server, server_proof).hex(),
        "client_proof": client_proof.hex(),
        "client_signature": identity.sign(client, client_proof).hex(),
    }


def _json_value(value: object) -> object:
    """A value in JSON: bytes as hex, arrays as lists, maps as objects."""
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    return value


# Sample games whose logs make the replay vectors: every kind of log entry
# (a skipped placement, a settled opening, the server's decisions, draws).
REPLAYED = ("honest-3-players", "honest-two-player", "settled-openings", "undecided-seat")


def _replay_vector(name: str) -> dict[str, Any]:
    """A sample game's log replayed as a version 2 client replays it: each
    entry, the events it makes, their digest; and the position at the end."""
    sample = next(s for s in sample_records.SAMPLES if s.name == name)
    record = sample_records.play(sample)
    settings = record.settings
    public = PublicGame(settings.rules, settings.first_player)
    steps = []
    for entry in record.log:
        events = public.apply(entry)
        steps.append(
            {
                "entry": _json_value(entry_to_data(entry)),
                "events": [event_to_data(e) for e in events],
                "digest": events_digest(events).hex(),
            }
        )
    return {
        "sample": name,
        "players": settings.players,
        "variant": settings.variant,
        "edition": settings.edition,
        "families": [[FAMILY_NAMES[f] for f in fams] for fams in settings.families],
        "first_player": settings.first_player,
        "log": steps,
        "view": {k: v for k, v in view(public.game, None).items() if k != "viewer"},
    }


def _decision_forms() -> list[tuple[int, list[object]]]:
    """(seat, form) of every kind of signed decision, the server's two included."""
    opening_1 = Opening(4, card("red", "archer"), fixed_bytes("nonce 1"))
    opening_2 = Opening(9, card("red", "ambush"), fixed_bytes("nonce 2"))
    seed = client_seed(1)
    messages = [
        m.SeedCommit(commitment=fixed_bytes("a seed commitment")),
        m.Direction(turn=0, direction="left-to-right"),
        m.PlaceCard(turn=1, at="first", family="red", commitment=fixed_bytes("commitment 1")),
        m.PlaceCard(turn=17, at=4, family="blue", commitment=fixed_bytes("commitment 2")),
        m.KeepCard(turn=23),
        m.RevealCard(turn=24, card=card("red", "archer"), nonce=fixed_bytes("nonce 1")),
        m.Choose(turn=25, target=300),
        m.Move(turn=26, index=3),
        m.OpenCard(pid=9, card=card("red", "ambush"), nonce=fixed_bytes("nonce 2")),
        m.FinalReveal(seed=seed, openings=(opening_1, opening_2)),
        m.HandOver(seed=seed, openings=(), turn=31),
    ]
    forms = [(1, signatures.form(message)) for message in messages]
    forms.append((2, signatures.skip_form(40)))
    forms.append((2, signatures.settle_form(12, card("blue", "spy"))))
    return forms


def _decision_vectors() -> list[dict[str, Any]]:
    """Signed decisions: a seat's key's (every message) and the server's (its own two)."""
    vectors = []
    for i, (seat, form) in enumerate(_decision_forms()):
        signer = "server key" if form[0] in (signatures.SKIP, signatures.SETTLE) else "seat key"
        private = fixed_bytes(f"decisions: {signer}")
        key = identity.private_key(private)
        game = GAME_A if i % 2 == 0 else GAME_B
        signed = signatures.decision_bytes(game, seat, form)
        vectors.append(
            {
                "private_key": private.hex(),
                "key": identity.public_bytes(key).hex(),
                "game_id": game.hex(),
                "seat": seat,
                "form": _json_value(form),
                "signed": signed.hex(),
                "signature": identity.sign(key, signed).hex(),
            }
        )
    return vectors


def _rejecting_seed() -> bytes:
    """The first fixed client seed whose seat-0 shuffle rejects a byte, so the
    vectors exercise rejection sampling."""
    for i in range(1000):
        cseed = fixed_bytes(f"rejecting seed {i}")
        stream = DealStream(cseed, GAME_A, 0, SERVER_SEED)
        shuffle_kinds(stream)
        if stream.rejected:
            return cseed
    raise AssertionError("no rejecting seed among 1000")  # 8% chance each: never


FIELD_DOCS = {
    "card_commitments": "inputs (game_id, seat, pid, card, nonce), the exact bytes hashed"
    " (preimage) and their SHA-256 (commitment)",
    "seed_commitments": "inputs (game_id, seat: 255 for the server, seed), preimage and commitment",
    "stream_blocks": "block `counter` of a seat's deal stream: the HMAC message and the block",
    "shuffles": "family_count shuffles of the ten kinds from one seat's stream, in the seat's"
    " family order (2 for a two-player seat, the second continuing the stream): orders, as kind"
    " names; bytes_read: stream bytes read, the rejected ones included; bytes_rejected: of"
    " those, the ones rejection sampling threw away",
    "handshakes": "a handshake's two proofs (Keys and the handshake): the private keys are"
    " Ed25519 seeds (RFC 8032's 32-byte secret keys), the public keys and signatures as the"
    " wire carries them; server_proof is what `challenge.signature` signs (by server_key),"
    " client_proof what `prove.signature` signs (by client_key); client_fingerprint as"
    " clients show a key",
    "decisions": "a signed decision (Signed decisions): form is the decision's type and"
    " fields as signed (bytes in hex here, msgpack bin in the bytes signed); signed is the"
    " context string then the msgpack array [game_id, seat, ...form]; signature is the"
    " Ed25519 signature of signed by the key of private_key (a seat's for the messages,"
    " the server's for skip and settle)",
    "replays": "protocol version 2: the log of a sample game of docs/records/,"
    " replayed from the hidden deal (Version 2: the game as its log): each log entry as a"
    " `game_update` carries it, the events replaying it makes (event maps, cards as"
    " [family, kind], null for a back) and the digest of those events (the first 16 bytes"
    " of SHA-256 over the msgpack array of them); view: the public position at the end, as"
    " version 1's `view` gives it without `viewer`",
    "deals": "a seat's deal: families, the seat's family names in order; set_aside and hand in"
    " the order of the layout (first family's cards first); draw_pile top first",
}


def build_vectors() -> dict[str, Any]:
    """Every vector, as plain JSON data."""
    cards = [
        (GAME_A, 0, 0, card("red", "archer"), bytes(32)),
        (GAME_A, 2, 7, card("green", "royal_decree"), fixed_bytes("nonce 1")),
        (GAME_A, 1, 300, card("blue", "shapeshifter"), fixed_bytes("nonce 2")),
        (GAME_A, 3, 70000, card("yellow", "ambush"), fixed_bytes("nonce 3")),
        (GAME_B, 4, 29, card("black", "conspiracy"), fixed_bytes("nonce 4")),
        # The same card and nonce in another game, seat and placement:
        (GAME_B, 2, 7, card("green", "royal_decree"), fixed_bytes("nonce 1")),
        (GAME_A, 0, 8, card("green", "royal_decree"), fixed_bytes("nonce 1")),
    ]
    seeds = [
        (GAME_A, 0, client_seed(0)),
        (GAME_A, 1, client_seed(1)),
        (GAME_B, 4, client_seed(4)),
        (GAME_A, SERVER_SEAT, SERVER_SEED),
    ]
    blocks = []
    for seat, counter in [(0, 0), (0, 1), (0, 2), (1, 0), (4, 0)]:
        cseed = client_seed(seat)
        blocks.append(
            {
                "game_id": GAME_A.hex(),
                "seat": seat,
                "client_seed": cseed.hex(),
                "server_seed": SERVER_SEED.hex(),
                "counter": counter,
                "message": stream_message(GAME_A, seat, SERVER_SEED, counter).hex(),
                "block": stream_block(cseed, GAME_A, seat, SERVER_SEED, counter).hex(),
            }
        )
    shuffles = [_shuffle_vector(GAME_A, seat, client_seed(seat), 1) for seat in range(5)]
    shuffles.append(_shuffle_vector(GAME_B, 1, client_seed(1), 2))
    shuffles.append(_shuffle_vector(GAME_A, 0, _rejecting_seed(), 1))
    standard3 = Rules(3, STANDARD)
    standard5 = Rules(5, STANDARD)
    two = Rules(2, TWO_PLAYER)
    deals = [_deal_vector(standard3, GAME_A, seat) for seat in range(3)]
    deals.append(_deal_vector(standard5, GAME_A, 4))
    deals.extend(_deal_vector(two, GAME_A, seat) for seat in range(2))
    return {
        "description": (
            "Oriflamme protocol v1 test vectors: card and seed commitments, deal stream"
            " blocks, shuffles, deals, handshake proofs and signed decisions, from fixed inputs;"
            " and for protocol v2, games replayed from their logs."
            " See docs/PROTOCOL.md, 'Commit-reveal and the fair deal', 'Keys and the handshake',"
            " 'Signed decisions' and 'Version 2: the game as its log'. Bytes are lowercase hex."
        ),
        "protocol_version": PROTOCOL_VERSION,
        "tags": {
            "card_commitment": CARD_TAG.decode(),
            "seed_commitment": SEED_TAG.decode(),
            "deal_stream": DEAL_TAG.decode(),
            "client_proof": identity.CLIENT_PROOF.decode(),
            "server_proof": identity.SERVER_PROOF.decode(),
            "decision": signatures.DECISION_CONTEXT.decode(),
        },
        "server_seat": SERVER_SEAT,
        "fields": FIELD_DOCS,
        "card_commitments": [_card_vector(*args) for args in cards],
        "seed_commitments": [_seed_vector(*args) for args in seeds],
        "stream_blocks": blocks,
        "shuffles": shuffles,
        "deals": deals,
        "handshakes": [_handshake_vector("handshake 1"), _handshake_vector("handshake 2")],
        "decisions": _decision_vectors(),
        "replays": [_replay_vector(name) for name in REPLAYED],
    }


def vectors_json() -> str:
    """The file's exact text."""
    return json.dumps(build_vectors(), indent=2) + "\n"

"""docs/test-vectors.json: up to date with the code, and right by an independent
implementation written from docs/PROTOCOL.md alone (hashlib, hmac, struct)."""

from __future__ import annotations

import hashlib
import hmac
import json
import struct
from pathlib import Path
from typing import Any

import pytest

from tools.docgen import VECTORS
from tools.docgen.vectors import vectors_json

VECTORS_FILE = Path(__file__).resolve().parents[2] / VECTORS
SECTIONS = [
    "card_commitments", "seed_commitments", "stream_blocks", "shuffles", "deals", "handshakes",
    "decisions", "replays",
]  # fmt: skip
KINDS = [
    "archer", "soldier", "spy", "heir", "lord",
    "shapeshifter", "assassination", "royal_decree", "ambush", "conspiracy",
]  # fmt: skip
FAMILIES = ["red", "blue", "green", "yellow", "black"]


@pytest.fixture(scope="module")
def vectors() -> dict[str, Any]:
    return json.loads(VECTORS_FILE.read_text(encoding="utf-8"))


def test_the_file_is_up_to_date() -> None:
    assert VECTORS_FILE.read_text(encoding="utf-8") == vectors_json(), (
        "regenerate: python -m tools.docgen"
    )


def test_the_file_documents_its_fields(vectors: dict[str, Any]) -> None:
    assert set(vectors["fields"]) == set(SECTIONS)
    assert set(vectors) == {
        "description", "protocol_version", "tags", "server_seat", "fields", *SECTIONS
    }  # fmt: skip
    shuffle_doc = vectors["fields"]["shuffles"]
    for name in ("family_count", "bytes_read", "bytes_rejected"):
        assert name in shuffle_doc
        assert all(name in v for v in vectors["shuffles"])
    assert not any("families" in v or "bytes_consumed" in v for v in vectors["shuffles"])
    assert vectors["tags"] == {
        "card_commitment": "oriflamme/v1/card-commitment",
        "seed_commitment": "oriflamme/v1/seed-commitment",
        "deal_stream": "oriflamme/v1/deal-stream",
        # (the proofs' contexts end in a zero byte: docs/PROTOCOL.md)
        "client_proof": "oriflamme client proof v1\x00",
        "server_proof": "oriflamme server proof v1\x00",
        "decision": "oriflamme decision v1\x00",
    }


# ---------------------------------------------------------------- the independent implementation


def field(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def card_preimage(v: dict[str, Any]) -> bytes:
    family, kind = v["card"]
    return b"".join(
        field(x)
        for x in [
            b"oriflamme/v1/card-commitment",
            struct.pack(">H", 1),
            bytes.fromhex(v["game_id"]),
            struct.pack(">B", v["seat"]),
            struct.pack(">I", v["pid"]),
            family.encode("ascii"),
            kind.encode("ascii"),
            bytes.fromhex(v["nonce"]),
        ]
    )


def seed_preimage(v: dict[str, Any]) -> bytes:
    return b"".join(
        field(x)
        for x in [
            b"oriflamme/v1/seed-commitment",
            struct.pack(">H", 1),
            bytes.fromhex(v["game_id"]),
            struct.pack(">B", v["seat"]),
            bytes.fromhex(v["seed"]),
        ]
    )


def stream_message(game: bytes, seat: int, server: bytes, counter: int) -> bytes:
    return b"".join(
        field(x)
        for x in [
            b"oriflamme/v1/deal-stream",
            struct.pack(">H", 1),
            game,
            struct.pack(">B", seat),
            server,
            struct.pack(">I", counter),
        ]
    )


def block(client: bytes, game: bytes, seat: int, server: bytes, counter: int) -> bytes:
    return hmac.new(client, stream_message(game, seat, server, counter), hashlib.sha256).digest()


def shuffles(v: dict[str, Any], families: int) -> tuple[list[list[str]], int, int]:
    """(orders, bytes read, bytes rejected) for a seat's stream."""
    client, server = bytes.fromhex(v["client_seed"]), bytes.fromhex(v["server_seed"])
    game = bytes.fromhex(v["game_id"])
    buf = b""
    used = rejected = 0

    def next_byte() -> int:
        nonlocal buf, used
        if used == len(buf):
            buf += block(client, game, v["seat"], server, len(buf) // 32)
        used += 1
        return buf[used - 1]

    orders = []
    for _ in range(families):
        order = list(KINDS)
        for i in range(9, 0, -1):
            n = i + 1
            while True:
                b = next_byte()
                if b < 256 - 256 % n:
                    break
                rejected += 1
            j = b % n
            order[i], order[j] = order[j], order[i]
        orders.append(order)
    return orders, used, rejected


def test_card_commitments(vectors: dict[str, Any]) -> None:
    assert len(vectors["card_commitments"]) >= 5
    for v in vectors["card_commitments"]:
        preimage = card_preimage(v)
        assert preimage.hex() == v["preimage"]
        assert hashlib.sha256(preimage).hexdigest() == v["commitment"]
    # The same card and nonce in another context commits differently.
    assert len({v["commitment"] for v in vectors["card_commitments"]}) == len(
        vectors["card_commitments"]
    )


def test_seed_commitments(vectors: dict[str, Any]) -> None:
    assert vectors["server_seat"] == 255
    assert any(v["seat"] == 255 for v in vectors["seed_commitments"])
    for v in vectors["seed_commitments"]:
        preimage = seed_preimage(v)
        assert preimage.hex() == v["preimage"]
        assert hashlib.sha256(preimage).hexdigest() == v["commitment"]


def test_stream_blocks(vectors: dict[str, Any]) -> None:
    for v in vectors["stream_blocks"]:
        b = block(
            bytes.fromhex(v["client_seed"]),
            bytes.fromhex(v["game_id"]),
            v["seat"],
            bytes.fromhex(v["server_seed"]),
            v["counter"],
        )
        assert b.hex() == v["block"]
        message = stream_message(
            bytes.fromhex(v["game_id"]), v["seat"], bytes.fromhex(v["server_seed"]), v["counter"]
        )
        assert message.hex() == v["message"]


def test_shuffles(vectors: dict[str, Any]) -> None:
    assert any(v["bytes_rejected"] for v in vectors["shuffles"]), "rejection must be exercised"
    assert any(v["family_count"] == 2 for v in vectors["shuffles"])
    for v in vectors["shuffles"]:
        orders, used, rejected = shuffles(v, v["family_count"])
        assert orders == v["orders"]
        assert (used, rejected) == (v["bytes_read"], v["bytes_rejected"])


def test_deals(vectors: dict[str, Any]) -> None:
    variants = {v["variant"] for v in vectors["deals"]}
    assert variants == {"standard", "two-player"}
    for v in vectors["deals"]:
        fams = v["families"]
        orders, _, _ = shuffles(v, len(fams))
        cards = [[[f, k] for k in order] for f, order in zip(fams, orders, strict=True)]
        if v["variant"] == "standard":
            assert v["set_aside"] == cards[0][:3]
            assert v["hand"] == cards[0][3:]
            assert v["draw_pile"] == []
        else:
            a, b = cards
            assert v["set_aside"] == a[:3] + b[:3]
            assert v["hand"] == a[3:6] + b[3:6]
            assert v["draw_pile"] == [c for pair in zip(a[6:], b[6:], strict=True) for c in pair]
        # The default families: seat s plays family s (2-player: 2s and 2s+1).
        per = len(fams)
        assert fams == FAMILIES[v["seat"] * per : v["seat"] * per + per]


def _hex_bytes(value: object) -> object:
    """A value unpacked from the signed bytes, as the JSON of the vectors shows it."""
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, list):
        return [_hex_bytes(v) for v in value]
    return value


def test_decisions(vectors: dict[str, Any]) -> None:
    """What docs/PROTOCOL.md, "Signed decisions", says is signed, checked with
    msgpack and the cryptography package alone: the context string, then the
    msgpack array [game id, seat, type, fields...]; an Ed25519 signature of
    it by the key of the private key given."""
    import msgpack
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    context = b"oriflamme decision v1\x00"
    assert vectors["tags"]["decision"] == context.decode()
    types = set()
    for v in vectors["decisions"]:
        signed = bytes.fromhex(v["signed"])
        assert signed.startswith(context)
        unpacked = msgpack.unpackb(signed[len(context) :], raw=False)
        assert _hex_bytes(unpacked) == [v["game_id"], v["seat"], *v["form"]]
        # msgpack's shortest forms: packing the unpacked value again gives the same bytes
        assert msgpack.packb(unpacked, use_bin_type=True) == signed[len(context) :]
        private = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(v["private_key"]))
        public = private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        assert public.hex() == v["key"]
        assert private.sign(signed).hex() == v["signature"]  # (Ed25519 is deterministic)
        Ed25519PublicKey.from_public_bytes(public).verify(bytes.fromhex(v["signature"]), signed)
        types.add(v["form"][0])
    assert types == {
        "seed_commit", "direction", "place", "keep", "reveal", "choose", "move", "open",
        "final_reveal", "hand_over", "skip", "settle",
    }  # fmt: skip

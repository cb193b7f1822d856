"""Keys that name players and servers, and the handshake's two proofs.

How this works
--------------
A player (and a server) is an Ed25519 key pair. Its public key, 32 bytes,
is its identity on the wire; people see its `fingerprint`. The handshake
proves, both ways, that each side holds the private key of the public key
it shows (docs/PROTOCOL.md, "Keys and the handshake"):

1. the client's `hello` carries its public key and a fresh 32-byte nonce;
2. the server answers `challenge`: its own public key, a fresh nonce of its
   own, and its signature over `server_proof` (the client's nonce, the
   server's nonce, the client's key), which the client checks against the
   key it pinned for that server;
3. the client sends `prove`: its signature over `client_proof` (the
   server's key, both nonces, its own key). The server checks it and only
   then opens (or resumes) the session of that key: `welcome`.

What is signed is a fixed layout of bytes: a context string that names
the proof (so that no signature made for one thing passes for another),
then the 32-byte values, in the order given. No encoding is involved, so a
client in any language makes the same bytes; `tests/protocol` checks the
`handshakes` vectors of docs/test-vectors.json.

>>> key = private_key(bytes(32))
>>> fingerprint(public_bytes(key))
'copd-sqhg-jnkj-c4ra'
>>> proof = client_proof(bytes(32), bytes(32), bytes(32), public_bytes(key))
>>> verify(public_bytes(key), sign(key, proof), proof)
True
>>> verify(public_bytes(key), bytes(64), proof)
False
"""

from __future__ import annotations

import base64
import hashlib
import hmac

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
)

KEY_SIZE = 32  # an Ed25519 public key, raw
NONCE_SIZE = 32
SIGNATURE_SIZE = 64

CLIENT_PROOF = b"oriflamme client proof v1\x00"
SERVER_PROOF = b"oriflamme server proof v1\x00"


def private_key(seed: bytes) -> Ed25519PrivateKey:
    """The Ed25519 private key of a 32-byte `seed` (its raw private bytes)."""
    return Ed25519PrivateKey.from_private_bytes(seed)


def public_bytes(key: Ed25519PrivateKey) -> bytes:
    """`key`'s public key as the wire carries it: 32 raw bytes."""
    return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def fingerprint(public: bytes) -> str:
    """What a person reads of a public key: the first 10 bytes of its
    SHA-256 in base32, lower case, in four groups of four."""
    text = base64.b32encode(hashlib.sha256(public).digest()[:10]).decode("ascii").lower()
    return "-".join(text[i : i + 4] for i in range(0, 16, 4))


def _joined(context: bytes, *values: bytes) -> bytes:
    for value in values:
        if len(value) != 32:
            raise ValueError(f"a proof is made of 32-byte values, not {len(value)} bytes")
    return b"".join((context, *values))


def client_proof(server_key: bytes, server_nonce: bytes, client_nonce: bytes, key: bytes) -> bytes:
    """The bytes the client signs in `prove`."""
    return _joined(CLIENT_PROOF, server_key, server_nonce, client_nonce, key)


def server_proof(client_nonce: bytes, server_nonce: bytes, client_key: bytes) -> bytes:
    """The bytes the server signs in `challenge`."""
    return _joined(SERVER_PROOF, client_nonce, server_nonce, client_key)


# ---------------------------------------------------------------- sealed seeds

SEAL_KEY = b"oriflamme seal key v1\x00"
SEALED_SEED = b"oriflamme sealed seed v1\x00"


def seal_key(key: Ed25519PrivateKey) -> bytes:
    """The secret that seals a player's seeds: derived from its private key
    alone, so that the key brings back, on any machine, a seed it sealed."""
    private = key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
    return hmac.new(private, SEAL_KEY, hashlib.sha256).digest()


NONCE_KEY = b"oriflamme nonce key v1\x00"


def nonce_key(seal: bytes, game_id: bytes, seat: int) -> bytes:
    """The key of a seat's nonces in one game (`SeatSecrets`): derived from
    the seal, never revealed (the seed is, at the end), so that the key
    alone finds the seat's placements again, and nobody else ever can."""
    return hmac.new(seal, NONCE_KEY + game_id + bytes([seat]), hashlib.sha256).digest()


def sealed_seed(seal: bytes, game_id: bytes, seat: int, commitment: bytes, seed: bytes) -> bytes:
    """`seed` sealed (or, given the sealed seed, unsealed): XOR with the
    HMAC-SHA256, under the `seal` of the key, of the context, the game id, the
    seat (one byte) and the seed's commitment (docs/PROTOCOL.md, "Sealed
    seeds"). A pad is never used twice: a new seed has a new commitment.

    >>> seal = seal_key(private_key(bytes(32)))
    >>> closed = sealed_seed(seal, bytes(16), 1, bytes(32), b"s" * 32)
    >>> sealed_seed(seal, bytes(16), 1, bytes(32), closed) == b"s" * 32
    True
    """
    if len(seed) != 32 or len(commitment) != 32:
        raise ValueError("a seed and its commitment are 32 bytes each")
    pad = hmac.new(
        seal, SEALED_SEED + game_id + bytes([seat]) + commitment, hashlib.sha256
    ).digest()
    return bytes(a ^ b for a, b in zip(seed, pad, strict=True))


def sign(key: Ed25519PrivateKey, data: bytes) -> bytes:
    return key.sign(data)


# The encodings of the points of small order (libsodium's list), the sign
# bit cleared: a "key" among them signs anything (with the identity point,
# `key + bytes(32)` verifies for any message), so none is anyone's key.
_SMALL_ORDER = frozenset(
    bytes.fromhex(h)
    for h in (
        "00" * 32,
        "01" + "00" * 31,
        "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
        "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
        "ec" + "ff" * 30 + "7f",
    )
)
_P = 2**255 - 19


def usable_key(public: bytes) -> bool:
    """Whether `public` can be a player's key: 32 bytes, a canonical
    encoding (y below the field's prime), not a point of small order.

    >>> usable_key(public_bytes(private_key(bytes(32)))), usable_key(b"\\x01" + bytes(31))
    (True, False)
    """
    if len(public) != KEY_SIZE:
        return False
    cleared = public[:31] + bytes([public[31] & 0x7F])
    return int.from_bytes(cleared, "little") < _P and cleared not in _SMALL_ORDER


def verify(public: bytes, signature: bytes, data: bytes) -> bool:
    """Whether `signature` is `public`'s over `data` (False for a key that
    is not a usable Ed25519 public key, too: `usable_key`)."""
    if not usable_key(public):
        return False
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(signature, data)
    except (InvalidSignature, ValueError):
        return False
    return True

"""Certificate fingerprints, as the server logs them and clients pin them.

A TLS server's certificate is named by the SHA-256 of its DER bytes,
written as openssl writes it: 32 pairs of upper-case hexadecimal digits
joined by colons. People may type it with or without colons, in any case,
with a ``sha256:`` prefix.

>>> fingerprint(b"not really a certificate")[:23]
'D6:18:22:55:E5:73:9D:55'
>>> parse_fingerprint("sha256:ab" + "0" * 62)[:8]
'AB:00:00'
"""

from __future__ import annotations

import hashlib


def _colons(upper_hex: str) -> str:
    return ":".join(upper_hex[i : i + 2] for i in range(0, len(upper_hex), 2))


def fingerprint(der: bytes) -> str:
    """A certificate's SHA-256 fingerprint, ``AB:CD:...``."""
    return _colons(hashlib.sha256(der).hexdigest().upper())


def parse_fingerprint(text: str) -> str:
    """A fingerprint as a person gives it, written as `fingerprint` writes it;
    `ValueError` if it is not 64 hexadecimal digits."""
    cleaned = text.strip().lower().removeprefix("sha256:").replace(":", "").replace(" ", "")
    if len(cleaned) != 64 or any(c not in "0123456789abcdef" for c in cleaned):
        raise ValueError(
            f"{text!r} is not a SHA-256 fingerprint (64 hexadecimal digits, colons allowed)"
        )
    return _colons(cleaned.upper())

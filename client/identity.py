"""The player's key pair, kept between runs, and the server keys met.

A player is an Ed25519 key pair (docs/PROTOCOL.md, "Keys and the
handshake"). The private key is made at the first run that needs it and
kept in ``$XDG_CONFIG_HOME/oriflamme/identity.key`` (``~/.config/...``
without it): PKCS #8 in PEM, mode 0600, written whole or not at all. It
never leaves the machine but by `export`, which writes it encrypted
under a passphrase (PKCS #8's own encryption, as OpenSSL reads it), and
`import_key` reads such a file back.

The servers' keys are pinned on first use, as TLS certificates are
(`client.tls`): ``known_keys`` beside it holds one line per server
address, ``HOST:PORT KEY-IN-HEX``. A server that shows another key at an
address is not refused (a host may have moved its server), but the user
is told, loudly, with both fingerprints (`ServerKeys.check`).

>>> import tempfile
>>> folder = Path(tempfile.mkdtemp())
>>> key = load_or_make(folder / "identity.key")
>>> load_or_make(folder / "identity.key") is not None
True
>>> oct((folder / "identity.key").stat().st_mode & 0o777)
'0o600'
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    BestAvailableEncryption,
    Encoding,
    NoEncryption,
    PrivateFormat,
    load_pem_private_key,
)

from oriflamme.protocol.identity import fingerprint, public_bytes

from .config import config_dir
from .i18n import _
from .secret_store import write_private

MIN_PASSPHRASE = 8  # characters: an export's passphrase


class IdentityError(Exception):
    """A key file that cannot be used: the message says why, for the user."""


def default_identity_file() -> Path:
    return config_dir() / "identity.key"


def default_known_keys() -> Path:
    return config_dir() / "known_keys"


def _pem(key: Ed25519PrivateKey, passphrase: bytes | None = None) -> bytes:
    encryption = NoEncryption() if passphrase is None else BestAvailableEncryption(passphrase)
    return key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, encryption)


def _read(data: bytes, passphrase: bytes | None, where: Path) -> Ed25519PrivateKey:
    try:
        key = load_pem_private_key(data, passphrase)
    except TypeError as exc:  # encrypted without a passphrase, or the reverse
        raise IdentityError(f"{where}: {exc}") from None
    except ValueError:
        if passphrase is not None:
            raise IdentityError(
                f"{where}: the passphrase is wrong, or this is not an exported key"
            ) from None
        raise IdentityError(f"{where}: not a key file (PKCS #8 PEM)") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise IdentityError(f"{where}: not an Ed25519 key")
    return key


def load(path: Path) -> Ed25519PrivateKey | None:
    """The key kept in `path`; None if there is none. `IdentityError` if
    the file is there but cannot be used (it is never replaced then: it may
    be the only copy of someone's identity)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise IdentityError(f"{path}: {exc.strerror}") from None
    return _read(data, None, path)


def load_or_make(path: Path) -> Ed25519PrivateKey:
    """The key kept in `path`, made and kept there first if there is none."""
    key = load(path)
    if key is None:
        key = Ed25519PrivateKey.generate()
        write_private(path, _pem(key))
    return key


def export(key: Ed25519PrivateKey, path: Path, passphrase: str) -> None:
    """Write `key` to `path`, encrypted under `passphrase` (at least
    `MIN_PASSPHRASE` characters)."""
    if len(passphrase) < MIN_PASSPHRASE:
        raise IdentityError(f"a passphrase has at least {MIN_PASSPHRASE} characters")
    write_private(path, _pem(key, passphrase.encode("utf-8")))


def import_key(source: Path, passphrase: str, dest: Path) -> Ed25519PrivateKey:
    """The key that `export` wrote to `source`, kept in `dest` (in place of
    the one there, which the caller has made sure may go)."""
    try:
        data = source.read_bytes()
    except OSError as exc:
        raise IdentityError(f"{source}: {exc.strerror}") from None
    key = _read(data, passphrase.encode("utf-8"), source)
    write_private(dest, _pem(key))
    return key


def describe(key: Ed25519PrivateKey) -> str:
    """The key's fingerprint, as `oriflamme identity` shows it."""
    return fingerprint(public_bytes(key))


@dataclass(frozen=True)
class KeyChange:
    """A server that showed another key than the one pinned at its address."""

    address: str
    pinned: bytes
    shown: bytes

    def short(self) -> str:
        """One line of a screen (72 characters)."""
        said = _("This server's key changed: {shown}, was {pinned}")
        return said.format(shown=fingerprint(self.shown), pinned=fingerprint(self.pinned))

    def warning(self) -> str:
        return (
            f"WARNING: the server at {self.address} shows another key than before:"
            f" {fingerprint(self.shown)}, not {fingerprint(self.pinned)}. Its host may have"
            " moved it to a new data directory; or this is not the server you played on."
            f" If you trust it, delete its line in {default_known_keys()}."
        )


class ServerKeys:
    """The keys pinned per server address (see the module docstring)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else default_known_keys()

    def _read(self) -> dict[str, bytes]:
        try:
            text = self.path.read_text(encoding="ascii")
        except (OSError, UnicodeDecodeError):
            return {}
        kept: dict[str, bytes] = {}
        for line in text.splitlines():
            address, __, key = line.strip().rpartition(" ")
            try:
                kept[address] = bytes.fromhex(key)
            except ValueError:
                continue  # (a line a person broke: the others still count)
        return kept

    def check(self, address: str, key: bytes) -> KeyChange | None:
        """Pin `key` for `address` if none is; a `KeyChange` if another is
        (the pin stays)."""
        kept = self._read()
        pinned = kept.get(address)
        if pinned is None:
            kept[address] = key
            lines = "".join(f"{a} {k.hex()}\n" for a, k in sorted(kept.items()))
            with contextlib.suppress(OSError):  # (pinned next time, then)
                write_private(self.path, lines.encode("ascii"))
            return None
        return None if pinned == key else KeyChange(address, pinned, key)

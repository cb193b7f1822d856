"""TLS for `oriflamme serve`: a certificate of your own, or a self-signed one.

`--tls-cert FILE --tls-key FILE` serves with a certificate you have (from
a certificate authority, say). `--tls-self-signed` makes one the first time,
with `cryptography` (an ECDSA P-256 key, valid ten years, for the server's
name and ``localhost``), keeps it in ``DATA_DIR/tls/`` (the key readable by
the server's user alone), and uses it again at every start; the server logs
its SHA-256 fingerprint, for players to pin (``oriflamme join --tls
--tls-fingerprint ...``) or to compare with what their client shows on
first use.

A client that speaks the protocol in plain TCP to a TLS port would fail
the handshake and learn nothing. So the server looks at the first byte of
each connection before the handshake (`begins_tls`): a TLS connection
begins with a handshake record (0x16), a frame with its length's first
byte (0: a frame is at most 64 KiB). One that does not begin with 0x16 is
told, in plain TCP, the fatal `handshake_required` of `PLAIN_REFUSAL`
("this port speaks TLS"), and closed.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from oriflamme.protocol import messages as m
from oriflamme.protocol.codec import encode_frame
from oriflamme.protocol.errors import HANDSHAKE_REQUIRED, RemoteProtocolError
from oriflamme.protocol.fingerprints import fingerprint

from .store import StoreError

VALID_DAYS = 3650

# The first byte of a TLS connection: the content type of a handshake record.
HANDSHAKE_RECORD = 0x16

# What a connection to a TLS port that does not begin with a TLS handshake
# is told, in plain TCP, before it is closed.
PLAIN_REFUSAL = encode_frame(
    m.to_data(
        m.error_message(
            RemoteProtocolError(
                HANDSHAKE_REQUIRED, "this port speaks TLS: connect with TLS", fatal=True
            )
        )
    )
)


def begins_tls(first: bytes) -> bool:
    """Whether a connection whose first bytes are `first` begins with a TLS
    handshake (b"": it sent nothing; the handshake will say).

    >>> begins_tls(bytes([0x16, 3, 1])), begins_tls(bytes(4)), begins_tls(b"")
    (True, False, True)
    """
    return not first or first[0] == HANDSHAKE_RECORD


def certificate_fingerprint(cert_file: Path) -> str:
    """The fingerprint of the first certificate in a PEM file."""
    cert = x509.load_pem_x509_certificate(cert_file.read_bytes())
    return fingerprint(cert.public_bytes(serialization.Encoding.DER))


def server_context(cert_file: Path, key_file: Path) -> ssl.SSLContext:
    """A server-side TLS context (TLS 1.2 and later). `StoreError`, with a
    message for a person, when the files cannot be used."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert_file, key_file)
    except FileNotFoundError as exc:
        raise StoreError(f"TLS: no such file: {exc.filename}") from None
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise StoreError(
            f"TLS: cannot use the certificate {cert_file} with the key {key_file}: {exc}"
        ) from None
    return context


def self_signed(directory: Path, name: str) -> tuple[Path, Path]:
    """The certificate and key kept in `directory`, made the first time."""
    cert_file, key_file = directory / "cert.pem", directory / "key.pem"
    if cert_file.exists() and key_file.exists():
        return cert_file, key_file
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName("localhost")]
    if name and name != "localhost":
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            names.append(x509.DNSName(name))
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name or "oriflamme")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(key_pem)
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert_file, key_file

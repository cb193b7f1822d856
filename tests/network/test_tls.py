"""TLS over real sockets on 127.0.0.1: the server's certificate (self-signed
and kept, or one of our own signed by a private authority), and the three
ways a client checks it: a pinned fingerprint, an authority, trust on
first use with a loud refusal when the certificate changes. Every test has
a deadline."""

from __future__ import annotations

import datetime
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from oriflamme.client.commands import list_rooms, run_bot
from oriflamme.client.session import tcp
from oriflamme.client.tls import KnownServers, Trust, UntrustedServer, probe
from oriflamme.launcher import cli
from oriflamme.protocol.fingerprints import parse_fingerprint
from oriflamme.server.app import ServeOptions, serve, tls_context
from oriflamme.server.store import StoreError
from oriflamme.server.tls import certificate_fingerprint
from tests.deadlines import GAME_HANG, HANG

pytestmark = pytest.mark.network


@asynccontextmanager
async def tls_server(data_dir: Path, **tls: Any) -> AsyncIterator[int]:
    stop = trio.Event()
    options = ServeOptions(
        host="127.0.0.1", port=0, data_dir=data_dir, stop=stop, discovery=False, **tls
    )
    async with trio.open_nursery() as nursery:
        port = await nursery.start(serve, options, None)  # (no bot host: no server bots)
        yield port
        stop.set()


def write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


def private_authority(directory: Path) -> tuple[Path, Path, Path]:
    """A certificate authority, and a certificate it signed for localhost
    and 127.0.0.1: (authority, certificate, key)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Test authority")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    import ipaddress

    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    paths = (directory / "ca.pem", directory / "cert.pem", directory / "key.pem")
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    write_key(key, paths[2])
    return paths


@pytest.mark.trio
async def test_a_pinned_self_signed_server_is_reached_and_another_pin_refused(
    tmp_path: Path,
) -> None:
    with trio.fail_after(HANG):
        async with tls_server(tmp_path / "server", tls_self_signed=True) as port:
            cert = tmp_path / "server" / "tls" / "cert.pem"
            assert (cert.parent / "key.pem").stat().st_mode & 0o077 == 0
            pinned = certificate_fingerprint(cert)
            rooms = await list_rooms("127.0.0.1", port, trust=Trust(fingerprint=pinned))
            assert rooms.rooms == ()
            wrong = parse_fingerprint("00" * 32)
            with pytest.raises(UntrustedServer, match="not the one pinned"):
                await list_rooms("127.0.0.1", port, trust=Trust(fingerprint=wrong))


@pytest.mark.trio
async def test_the_self_signed_certificate_is_kept_across_starts(tmp_path: Path) -> None:
    with trio.fail_after(HANG):
        async with tls_server(tmp_path / "server", tls_self_signed=True):
            first = certificate_fingerprint(tmp_path / "server" / "tls" / "cert.pem")
        async with tls_server(tmp_path / "server", tls_self_signed=True) as port:
            assert certificate_fingerprint(tmp_path / "server" / "tls" / "cert.pem") == first
            await probe("127.0.0.1", port, Trust(fingerprint=first), timeout=HANG)


@pytest.mark.trio
async def test_trust_on_first_use_then_a_loud_refusal_when_the_certificate_changes(
    tmp_path: Path,
) -> None:
    known = tmp_path / "config" / "known_servers"
    seen: list[tuple[str, str]] = []
    trust = Trust(known_servers=known, on_first_use=lambda s, p: seen.append((s, p)))
    with trio.fail_after(HANG):
        async with tls_server(tmp_path / "one", tls_self_signed=True) as port:
            await probe("127.0.0.1", port, trust, timeout=HANG)
            await list_rooms("127.0.0.1", port, trust=trust)  # known now: no second notice
        first = certificate_fingerprint(tmp_path / "one" / "tls" / "cert.pem")
        assert seen == [(f"127.0.0.1:{port}", first)]
        assert KnownServers(known).read() == {f"127.0.0.1:{port}": first}
        assert known.stat().st_mode & 0o077 == 0
        # Another server (another certificate) on the same address.
        options = {"tls_self_signed": True}
        async with tls_server(tmp_path / "two", **options) as other:
            KnownServers(known).add(f"127.0.0.1:{other}", first)  # as if it had been that one
            with pytest.raises(UntrustedServer, match="HAS CHANGED"):
                await probe("127.0.0.1", other, trust, timeout=HANG)
            with pytest.raises(UntrustedServer, match="HAS CHANGED"):
                await list_rooms("127.0.0.1", other, trust=trust)
        assert len(seen) == 1


@pytest.mark.trio
async def test_a_certificate_from_an_authority_is_checked_with_the_host_name(
    tmp_path: Path,
) -> None:
    authority, cert, key = private_authority(tmp_path)
    with trio.fail_after(HANG):
        async with tls_server(tmp_path / "server", tls_cert=cert, tls_key=key) as port:
            for host in ("127.0.0.1", "localhost"):
                rooms = await list_rooms(host, port, trust=Trust(cafile=authority))
                assert rooms.rooms == ()
            # The system's authorities do not know ours; no trust on first use asked.
            with pytest.raises(UntrustedServer, match="not signed by an authority"):
                await probe("127.0.0.1", port, Trust(), timeout=HANG)


@pytest.mark.trio
async def test_plain_and_tls_do_not_mix_and_the_server_goes_on(tmp_path: Path) -> None:
    with trio.fail_after(HANG):
        async with tls_server(tmp_path / "server", tls_self_signed=True) as port:
            pinned = certificate_fingerprint(tmp_path / "server" / "tls" / "cert.pem")
            # A plain client speaks msgpack to a TLS server: it is told so in
            # plain TCP, and closed (tests/network/test_tls_mistakes.py).
            stream = await tcp("127.0.0.1", port)()
            await stream.send_all(b"\x00\x00\x00\x05hello")
            while await stream.receive_some(4096):
                pass
            await stream.aclose()
            # A client that never says anything is closed by the hello deadline
            # (not waited for); the server still serves TLS clients meanwhile.
            silent = await tcp("127.0.0.1", port)()
            await probe("127.0.0.1", port, Trust(fingerprint=pinned), timeout=HANG)
            await silent.aclose()
        async with tls_server(tmp_path / "plain") as plain:
            with pytest.raises(OSError, match="TLS with"):
                await probe("127.0.0.1", plain, Trust(fingerprint=pinned), timeout=HANG)


@pytest.mark.trio
async def test_bots_play_a_whole_game_over_tls(tmp_path: Path) -> None:
    with trio.fail_after(GAME_HANG):  # (a whole game)
        async with tls_server(tmp_path / "server", tls_self_signed=True) as port:
            pinned = certificate_fingerprint(tmp_path / "server" / "tls" / "cert.pem")
            trust = Trust(fingerprint=pinned)
            played: list[int] = []

            async def bot(seed: int) -> None:
                played.append(await run_bot("127.0.0.1", port, room="tls", seed=seed, trust=trust))

            async with trio.open_nursery() as nursery:
                for seed in range(3):
                    nursery.start_soon(bot, seed)
            assert played == [1, 1, 1]


def test_unusable_certificate_files_are_said_plainly(tmp_path: Path) -> None:
    (tmp_path / "cert.pem").write_text("not a certificate")
    with pytest.raises(StoreError, match="TLS: cannot use the certificate"):
        tls_context(ServeOptions(data_dir=tmp_path, tls_cert=tmp_path / "cert.pem"))
    with pytest.raises(StoreError, match="no such file"):
        tls_context(ServeOptions(data_dir=tmp_path, tls_cert=tmp_path / "missing.pem"))


def test_a_fingerprint_that_is_not_one_is_refused_by_the_command(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["rooms", "127.0.0.1:1", "--tls-fingerprint", "abc"]) == 2
    assert "not a SHA-256 fingerprint" in capsys.readouterr().err

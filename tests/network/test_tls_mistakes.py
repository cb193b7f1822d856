"""TLS that goes wrong, over real sockets on 127.0.0.1, and what each
command says about it.

* An authority given (`--tls-ca`) is the only one trusted: a certificate
  another authority signed, or one for another name, is refused, never
  trusted on first use; the right authority and name connect.
* A client that speaks plain TCP to a port that serves TLS is told so by
  the server, in plain TCP (the fatal `handshake_required`, "this port
  speaks TLS"), and each command says "this port speaks TLS: add --tls" at
  once: `rooms` (it waited 10 s for "TooSlowError"), `bot` (it tried again
  for ever, saying nothing), `serve --check` (it said "not ok" and no
  reason) and `join`.

Every test has a deadline (tests/deadlines.py) and waits for events."""

from __future__ import annotations

import datetime
import ipaddress
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from oriflamme.client.commands import list_rooms, run_bot
from oriflamme.client.endpoint import ClientEndpoint
from oriflamme.client.failures import leaves, said
from oriflamme.client.session import tcp
from oriflamme.client.state import ClientState
from oriflamme.client.tls import ADD_TLS, Trust, UntrustedServer, probe, speaks_tls
from oriflamme.client.tui.app import Bridge
from oriflamme.client.tui.join import CannotReach, JoinOptions, join_program
from oriflamme.client.tui.screens import Screens
from oriflamme.launcher import cli
from oriflamme.protocol.codec import FrameDecoder
from oriflamme.server.tls import certificate_fingerprint
from tests.deadlines import HANG
from tests.network.server_process import COMMAND, ServerProcess
from tests.network.test_tls import tls_server, write_key

pytestmark = pytest.mark.network


def authority(directory: Path, name: str) -> tuple[Path, x509.Name, ec.EllipticCurvePrivateKey]:
    """A certificate authority of our own: its certificate's file, its name, its key."""
    now = datetime.datetime.now(datetime.UTC)
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "ca.pem"
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path, subject, key


def signed(
    directory: Path,
    by: tuple[Path, x509.Name, ec.EllipticCurvePrivateKey],
    names: tuple[str, ...],
) -> tuple[Path, Path]:
    """A server certificate that authority `by` signed for `names` (host
    names or IP addresses): (certificate, key)."""
    now = datetime.datetime.now(datetime.UTC)
    key = ec.generate_private_key(ec.SECP256R1())
    alternatives: list[x509.GeneralName] = []
    for name in names:
        try:
            alternatives.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            alternatives.append(x509.DNSName(name))
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
        .issuer_name(by[1])
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.SubjectAlternativeName(alternatives), critical=False)
        .sign(by[2], hashes.SHA256())
    )
    directory.mkdir(parents=True, exist_ok=True)
    paths = (directory / "cert.pem", directory / "key.pem")
    paths[0].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    write_key(key, paths[1])
    return paths


def as_the_command_trusts(tmp_path: Path, cafile: Path, seen: list[str]) -> Trust:
    """The trust `oriflamme rooms --tls-ca FILE` asks for: with a
    known-servers file, so that trust on first use could be reached."""
    return Trust(
        cafile=cafile,
        known_servers=tmp_path / "config" / "known_servers",
        on_first_use=lambda server, shown: seen.append(shown),
    )


# ------------------------------------------------------------ --tls-ca


@pytest.mark.trio
async def test_a_certificate_another_authority_signed_is_refused_not_trusted_on_first_use(
    tmp_path: Path,
) -> None:
    ours = authority(tmp_path / "ours", "Our authority")
    theirs = authority(tmp_path / "theirs", "Another authority")
    cert, key = signed(tmp_path / "server-cert", theirs, ("localhost", "127.0.0.1"))
    seen: list[str] = []
    trust = as_the_command_trusts(tmp_path, ours[0], seen)
    with trio.fail_after(HANG):
        async with tls_server(tmp_path / "server", tls_cert=cert, tls_key=key) as port:
            with pytest.raises(UntrustedServer, match="not one the authority .* signed for"):
                await probe("127.0.0.1", port, trust, timeout=HANG)
            with pytest.raises(UntrustedServer, match="not connecting"):
                await list_rooms("127.0.0.1", port, trust=trust)
    assert seen == [] and not (tmp_path / "config" / "known_servers").exists()


@pytest.mark.trio
async def test_a_certificate_for_another_name_is_refused_even_from_the_authority(
    tmp_path: Path,
) -> None:
    ours = authority(tmp_path / "ours", "Our authority")
    cert, key = signed(tmp_path / "server-cert", ours, ("game.example.org",))
    seen: list[str] = []
    trust = as_the_command_trusts(tmp_path, ours[0], seen)
    with trio.fail_after(HANG):
        async with tls_server(tmp_path / "server", tls_cert=cert, tls_key=key) as port:
            for host in ("127.0.0.1", "localhost"):
                with pytest.raises(UntrustedServer, match=f"signed for {host} .*mismatch"):
                    await probe(host, port, trust, timeout=HANG)
    assert seen == [] and not (tmp_path / "config" / "known_servers").exists()


@pytest.mark.trio
async def test_the_right_authority_and_name_connect_with_nothing_kept(tmp_path: Path) -> None:
    ours = authority(tmp_path / "ours", "Our authority")
    cert, key = signed(tmp_path / "server-cert", ours, ("localhost", "127.0.0.1"))
    seen: list[str] = []
    trust = as_the_command_trusts(tmp_path, ours[0], seen)
    with trio.fail_after(HANG):
        async with tls_server(tmp_path / "server", tls_cert=cert, tls_key=key) as port:
            for host in ("127.0.0.1", "localhost"):
                assert (await list_rooms(host, port, trust=trust)).rooms == ()
    assert seen == [] and not (tmp_path / "config" / "known_servers").exists()


def test_an_authority_file_that_cannot_be_used_is_said_before_connecting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "garbage.pem").write_text("not a certificate")
    for name in ("missing.pem", "garbage.pem"):
        assert cli.main(["rooms", "127.0.0.1:1", "--tls-ca", str(tmp_path / name)]) == 2
        assert f"--tls-ca {tmp_path / name}: cannot use it" in capsys.readouterr().err


# ------------------------------------------------------------ plain TCP on a TLS port


@pytest.mark.trio
async def test_a_plain_client_on_the_tls_port_is_told_in_plain_tcp_and_the_server_goes_on(
    tmp_path: Path,
) -> None:
    with trio.fail_after(HANG):
        async with tls_server(tmp_path / "server", tls_self_signed=True) as port:
            stream = await tcp("127.0.0.1", port)()
            await stream.send_all(ClientEndpoint("Ann").hello())
            received = b""
            while data := await stream.receive_some(4096):
                received += data
            await stream.aclose()
            decoder = FrameDecoder()
            decoder.feed(received)
            told = decoder.next_frame()
            assert told is not None and decoder.next_frame() is None  # one frame, then closed
            assert (told["type"], told["code"], told["fatal"]) == (
                "error",
                "handshake_required",
                True,
            )
            assert told["message"].startswith("this port speaks TLS")
            # The same client through a session: ended at once, not tried again.
            with pytest.raises(BaseException) as raised:
                await list_rooms("127.0.0.1", port)
            assert speaks_tls(raised.value), said(raised.value)
            # TLS clients are served meanwhile.
            pinned = certificate_fingerprint(tmp_path / "server" / "tls" / "cert.pem")
            await probe("127.0.0.1", port, Trust(fingerprint=pinned), timeout=HANG)


@pytest.mark.trio
async def test_a_bot_and_join_in_plain_tcp_on_the_tls_port_stop_and_say_so(
    tmp_path: Path,
) -> None:
    with trio.fail_after(HANG):
        async with tls_server(tmp_path / "server", tls_self_signed=True) as port:
            # (before: it tried again for ever)
            with pytest.raises(BaseException) as raised:
                await run_bot("127.0.0.1", port, room="r", state_dir=tmp_path / "bot")
            assert speaks_tls(raised.value), said(raised.value)
            # `oriflamme join`'s program, without its screen
            options = JoinOptions("127.0.0.1", port, "Ann", tmp_path / "join")
            bridge = Bridge(Screens(ClientState(), lambda command: None, name="Ann"))
            with pytest.raises(BaseException) as joined:
                await join_program(bridge, options)
            assert said(joined.value) == f"127.0.0.1:{port}: {ADD_TLS}"
            assert any(isinstance(leaf, CannotReach) for leaf in leaves(joined.value))
    # Over TLS, or refused for another reason, no such words.
    assert not speaks_tls(UntrustedServer("the certificate of x:1 is not the one pinned"))


@pytest.fixture
def tls_served(tmp_path: Path) -> Iterator[ServerProcess]:
    process = ServerProcess(tmp_path / "data", options=("--tls-self-signed",))
    process.start()
    try:
        yield process
    finally:
        process.stop()


def run(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CONFIG_HOME": str(home / "config")}
    env["XDG_STATE_HOME"] = str(home / "state")
    return subprocess.run([*COMMAND, *args], capture_output=True, text=True, timeout=HANG, env=env)


@pytest.mark.process
def test_each_command_in_plain_tcp_on_the_tls_port_says_add_tls(
    tls_served: ServerProcess, tmp_path: Path
) -> None:
    address = f"127.0.0.1:{tls_served.port}"
    rooms = run("rooms", address, home=tmp_path)
    assert rooms.returncode == 1, rooms
    assert rooms.stderr.strip() == f"oriflamme rooms: cannot get the rooms of {address}: {ADD_TLS}"
    bot = run("bot", address, "--room", "r", home=tmp_path)
    assert bot.returncode == 1, bot
    assert bot.stderr.strip().endswith(f"oriflamme bot: stopped: {ADD_TLS}"), bot.stderr
    check = run(
        "serve", "--check", "--port", str(tls_served.port), "--data-dir", str(tmp_path / "elsewhere"),
        home=tmp_path,
    )  # fmt: skip
    assert check.returncode == 1, check
    assert "this port speaks TLS: give --check the server's TLS options" in check.stdout
    tls_served.wait_for_log(rb"closed \(by the server: plain TCP on the TLS port\)")
    # With the server's options, the same check passes.
    check = run(
        "serve", "--check", "--port", str(tls_served.port),
        "--data-dir", str(tls_served.data_dir), "--tls-self-signed",
        home=tmp_path,
    )  # fmt: skip
    assert check.returncode == 0 and check.stdout.startswith("ok:"), check


@pytest.mark.process
def test_rooms_with_another_authority_is_refused_by_the_command(tmp_path: Path) -> None:
    ours = authority(tmp_path / "ours", "Our authority")
    theirs = authority(tmp_path / "theirs", "Another authority")
    cert, key = signed(tmp_path / "server-cert", theirs, ("localhost", "127.0.0.1"))
    server = ServerProcess(
        tmp_path / "data", options=("--tls-cert", str(cert), "--tls-key", str(key))
    )
    server.start()
    try:
        refused = run("rooms", f"127.0.0.1:{server.port}", "--tls-ca", str(ours[0]), home=tmp_path)
        assert refused.returncode == 1, refused
        assert "not one the authority" in refused.stderr and "not connecting" in refused.stderr
        assert "first use" not in refused.stderr
        assert not (tmp_path / "config" / "oriflamme" / "known_servers").exists()
        listed = run("rooms", f"localhost:{server.port}", "--tls-ca", str(theirs[0]), home=tmp_path)
        assert listed.returncode == 0 and listed.stdout.strip() == "no rooms", listed
    finally:
        server.stop()

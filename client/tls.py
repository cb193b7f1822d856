"""TLS for clients: check who the server is, three ways.

How this works
--------------
`tls(host, port, trust)` is a `Connector` (see `client.session`) that opens
a TLS connection and checks the server's certificate:

* with a pinned fingerprint (``--tls-fingerprint``), the certificate's
  SHA-256 must be that one, whoever signed it;
* with an authority (``--tls-ca FILE``), the certificate must be signed by
  it, for the host name given: anything else is refused, never trusted on
  first use (whoever names an authority says what to trust);
* otherwise against the system's certificate authorities, with the host
  name checked; and a certificate no authority vouches for (a server's
  self-signed one) is trusted on first use, as ssh does: its fingerprint is
  written to the known-servers file (``~/.config/oriflamme/known_servers``,
  one ``host:port fingerprint`` a line) and must be the same every time
  after. A different one is refused loudly, and the connection is never
  used.

`UntrustedServer` is not an `OSError`: a session does not try again after
it, it stops with its message.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import trio

from oriflamme.protocol.errors import HANDSHAKE_REQUIRED
from oriflamme.protocol.fingerprints import fingerprint

from .config import config_dir
from .failures import leaves
from .i18n import N_
from .secret_store import write_private
from .session import Connector, SessionEnded, tcp

# What the commands say when the port they reached speaks TLS and they did not.
ADD_TLS = N_("this port speaks TLS: add --tls")  # (translated where it is said)


def default_known_servers() -> Path:
    return config_dir() / "known_servers"


class UntrustedServer(Exception):
    """The server's certificate is not the one we trust."""


def speaks_tls(exc: BaseException) -> bool:
    """Whether `exc` (or an error inside it) says that the port reached in
    plain TCP speaks TLS: a session ended by the fatal `handshake_required`
    that a server serving TLS answers, in plain TCP, to a connection that
    does not begin with a TLS handshake (docs/PROTOCOL.md, "Transport and
    framing"). Our `hello` is always a valid one: no server refuses it as a
    handshake for another reason."""
    return any(
        isinstance(leaf, SessionEnded)
        and leaf.error is not None
        and leaf.error.code == HANDSHAKE_REQUIRED
        for leaf in leaves(exc)
    )


@dataclass(frozen=True)
class Trust:
    """How to check the server (see the module docstring)."""

    fingerprint: str | None = None
    cafile: Path | None = None  # the only authority, and no trust on first use
    known_servers: Path | None = None  # None: no trust on first use
    # Told the fingerprint of a server trusted for the first time.
    on_first_use: Callable[[str, str], None] | None = None


class KnownServers:
    """The known-servers file: ``host:port fingerprint`` lines."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> dict[str, str]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        known = {}
        for line in text.splitlines():
            parts = line.split()
            if len(parts) == 2 and not line.startswith("#"):
                known[parts[0]] = parts[1]
        return known

    def add(self, server: str, print_: str) -> None:
        known = self.read()
        known[server] = print_
        lines = "".join(f"{s} {p}\n" for s, p in sorted(known.items()))
        write_private(self.path, lines.encode())


def _unverified() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


async def _open(host: str, port: int, context: ssl.SSLContext) -> trio.SSLStream[trio.SocketStream]:
    """A TLS connection, its handshake done (`trio.BrokenResourceError` if it fails)."""
    stream = await trio.open_ssl_over_tcp_stream(host, port, ssl_context=context)
    try:
        await stream.do_handshake()
    except BaseException:
        await trio.aclose_forcefully(stream)
        raise
    return stream


def _peer_print(stream: trio.SSLStream[trio.SocketStream]) -> str:
    der = stream.getpeercert(binary_form=True)
    if not der:
        raise OSError("the server sent no certificate")
    return fingerprint(der)


def tls(host: str, port: int, trust: Trust) -> Connector:
    """A connector that opens a TLS connection to `host`:`port` and checks
    the server's certificate by `trust`."""
    server = f"{host}:{port}"

    async def connect() -> trio.abc.Stream:
        if trust.fingerprint is not None:
            stream = await _handshake(host, port, _unverified())
            shown = _peer_print(stream)
            if shown != trust.fingerprint:
                await trio.aclose_forcefully(stream)
                raise UntrustedServer(
                    f"the certificate of {server} is not the one pinned: its SHA-256"
                    f" fingerprint is {shown}, not {trust.fingerprint}"
                )
            return stream
        context = ssl.create_default_context(cafile=trust.cafile)
        try:
            return await _open(host, port, context)
        except trio.BrokenResourceError as exc:
            if not isinstance(exc.__cause__, ssl.SSLCertVerificationError):
                raise OSError(f"TLS with {server} failed: {exc.__cause__ or exc}") from None
            if trust.cafile is not None:
                why = exc.__cause__.verify_message or str(exc.__cause__)
                raise UntrustedServer(
                    f"the certificate of {server} is not one the authority {trust.cafile}"
                    f" signed for {host} ({why}): not connecting"
                ) from None
            if trust.known_servers is None:
                raise UntrustedServer(
                    f"the certificate of {server} is not signed by an authority we trust"
                    f" ({exc.__cause__}); pin it with --tls-fingerprint"
                ) from None
        # trust on first use
        stream = await _handshake(host, port, _unverified())
        shown = _peer_print(stream)
        known_servers = KnownServers(trust.known_servers)
        known = known_servers.read().get(server)
        if known is None:
            known_servers.add(server, shown)
            if trust.on_first_use is not None:
                trust.on_first_use(server, shown)
        elif known != shown:
            await trio.aclose_forcefully(stream)
            raise UntrustedServer(
                f"WARNING: THE CERTIFICATE OF {server} HAS CHANGED. It may be someone"
                f" pretending to be that server. Its SHA-256 fingerprint is now {shown};"
                f" it was {known}. Not connecting. If you know why it changed (the"
                f" server was reinstalled), remove the line of {server} from"
                f" {trust.known_servers} and connect again."
            )
        return stream

    return connect


async def _handshake(
    host: str, port: int, context: ssl.SSLContext
) -> trio.SSLStream[trio.SocketStream]:
    try:
        return await _open(host, port, context)
    except trio.BrokenResourceError as exc:
        raise OSError(f"TLS with {host}:{port} failed: {exc.__cause__ or exc}") from None


def connector(host: str, port: int, trust: Trust | None) -> Connector:
    """A plain TCP connector without `trust`, a TLS one with it."""
    return tcp(host, port) if trust is None else tls(host, port, trust)


async def probe(host: str, port: int, trust: Trust, *, timeout: float = 10.0) -> None:
    """Connect once and check the server's certificate (trusting it on first
    use, where `trust` says so): `UntrustedServer`, `OSError` or
    `trio.TooSlowError` when that fails."""
    with trio.fail_after(timeout):
        stream = await tls(host, port, trust)()
    await trio.aclose_forcefully(stream)

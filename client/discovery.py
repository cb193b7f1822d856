"""Finding servers on the local network, so that `oriflamme join` with no host
can offer a list instead of asking for an address.

Servers announce themselves with a UDP beacon (see
`oriflamme.server.discovery`) sent every two seconds, by default to the
broadcast address at UDP port `BEACON_PORT` (7532). Each datagram is one
msgpack map:

    {"type": "oriflamme_server", "version": 1, "port": 7531, "name": "Friday game night"}

`port` is the server's TCP port (1..65535) and `name` its name (at most 64
characters); ``"tls": true`` says the port serves TLS; other keys are
ignored, for later versions to add. The host is
the datagram's source address, never something the datagram says.

Anyone on the network can send such a datagram, so `parse_beacon` treats it
as untrusted: a datagram over `MAX_DATAGRAM` bytes, not msgpack, or with a
field of the wrong type or range is dropped; control and format characters
(Unicode categories C*, and line or paragraph separators) are taken out of
the name, so a name cannot move the cursor or recolour the terminal.

This module must not import the server: `BEACON_PORT` is defined here again,
and a test keeps the two equal.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import unicodedata
from dataclasses import dataclass

import msgpack
import trio
import trio.socket

from oriflamme.protocol.codec import unpack_untrusted

log = logging.getLogger("oriflamme.client")

BEACON_PORT = 7532
BEACON_TYPE = "oriflamme_server"
BEACON_VERSION = 1
MAX_NAME = 64
# A real beacon is under 300 bytes (64 characters of at most 4 UTF-8 bytes,
# and the rest); anything larger is not one of ours.
MAX_DATAGRAM = 512


@dataclass(frozen=True, order=True)
class FoundServer:
    """A server that answered on the local network."""

    host: str
    port: int
    name: str
    tls: bool = False  # the port serves TLS (the beacon says "tls": true)


def parse_beacon(data: bytes, sender_host: str) -> FoundServer | None:
    """The server a datagram from `sender_host` announces, or None when it is
    not a well-formed beacon. Never raises: whatever arrives on the port is
    someone else's input."""
    if len(data) > MAX_DATAGRAM:
        return None
    try:
        value = unpack_untrusted(
            data,
            max_str_len=MAX_DATAGRAM,
            max_bin_len=MAX_DATAGRAM,
            max_array_len=MAX_DATAGRAM,
            max_map_len=MAX_DATAGRAM,
        )
    except (ValueError, msgpack.UnpackException):
        return None
    if type(value) is not dict:
        return None
    port = value.get("port")
    name = value.get("name")
    if (
        value.get("type") != BEACON_TYPE
        or type(value.get("version")) is not int  # True == 1, but is no version
        or value["version"] != BEACON_VERSION
        or type(port) is not int
        or not 1 <= port <= 65535
        or type(name) is not str
    ):
        return None
    tls = value.get("tls") is True
    return FoundServer(sender_host, port, _printable(name)[:MAX_NAME].strip(), tls)


def _printable(text: str) -> str:
    """`text` without what a terminal would act on rather than show."""
    return "".join(c for c in text if unicodedata.category(c)[0] != "C" and c not in "\u2028\u2029")


def _sort_key(server: FoundServer) -> tuple[int, int, str, int, str]:
    """Addresses in numeric order (10.0.0.2 before 10.0.0.10)."""
    try:
        address = ipaddress.ip_address(server.host)
        return (address.version, int(address), "", server.port, server.name)
    except ValueError:
        return (99, 0, server.host, server.port, server.name)


async def find_servers(*, wait: float = 2.5, beacon_port: int = BEACON_PORT) -> list[FoundServer]:
    """The servers whose beacons arrive within `wait` seconds, one per (host,
    port) with the name it last gave. Returns [] when the port cannot be
    listened on: no list is better than an error the player can do nothing
    about. The default wait is a little over the beacon's interval, so every
    server running has sent at least once."""
    try:
        sock = await _listening_socket(beacon_port)
    except OSError as e:
        log.debug("discovery: cannot listen on UDP port %d (%s)", beacon_port, e)
        return []
    found: dict[tuple[str, int], FoundServer] = {}
    with sock, trio.move_on_after(wait):
        while True:
            try:
                data, address = await sock.recvfrom(MAX_DATAGRAM + 1)
            except OSError as e:
                log.debug("discovery: stopped listening (%s)", e)
                break
            server = parse_beacon(data, str(address[0]))
            if server is not None:
                found[server.host, server.port] = server
    return sorted(found.values(), key=_sort_key)


async def _listening_socket(beacon_port: int) -> trio.socket.SocketType:
    """A UDP socket bound to the beacon port on every interface; shared with
    other listeners on this machine where the platform allows (SO_REUSEADDR,
    and SO_REUSEPORT where it exists), so two clients can look at once. Every
    listener gets a broadcast beacon; a beacon sent to one address (unicast)
    reaches only one of the listeners sharing the port on Linux."""
    sock = trio.socket.socket(trio.socket.AF_INET, trio.socket.SOCK_DGRAM)
    try:
        sock.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_REUSEADDR, 1)
        reuse_port = getattr(trio.socket, "SO_REUSEPORT", None)
        if reuse_port is not None:
            with contextlib.suppress(OSError):  # defined but refused (some kernels, WSL 1)
                sock.setsockopt(trio.socket.SOL_SOCKET, reuse_port, 1)
        await sock.bind(("", beacon_port))
    except BaseException:
        sock.close()
        raise
    return sock

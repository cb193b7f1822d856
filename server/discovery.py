"""The LAN discovery beacon: lets `oriflamme join` with no host list the servers
on the local network, without anyone typing an address.

While the server runs, `run_beacon` sends one UDP datagram every `interval`
seconds (2 by default) to each target address (the limited broadcast address
255.255.255.255 by default) at UDP port `BEACON_PORT` (7532; the game itself
is on TCP 7531). The datagram is one msgpack map, and nothing else:

    {"type": "oriflamme_server",  # always this string
     "version": 1,                 # of this datagram's format
     "port": 7531,                 # the server's TCP port, 1..65535
     "name": "Friday game night"}  # the server's name, text of at most 64 characters

The listener takes the server's host from the datagram's source address, not
from its contents. Unknown extra keys are left for later versions to add;
listeners ignore them. The beacon is only an announcement: it carries no
secret and asks for no answer, and a listener must treat it as untrusted
(`oriflamme.client.discovery.parse_beacon` does).

A failed send (no network, no broadcast route) is logged once at debug level
and the beacon goes on: discovery is a convenience and never stops the server.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence

import trio
import trio.socket

from oriflamme.protocol.codec import pack

log = logging.getLogger("oriflamme.server")

BEACON_PORT = 7532
BEACON_TYPE = "oriflamme_server"
BEACON_VERSION = 1
MAX_NAME = 64


def beacon_datagram(port: int, name: str, tls: bool = False) -> bytes:
    """The datagram announcing a server on TCP `port` as `name`; a name too long
    is cut to `MAX_NAME` characters and characters UTF-8 cannot carry (lone
    surrogates) are replaced, so a server's name never stops its beacon."""
    if type(port) is not int or not 1 <= port <= 65535:
        raise ValueError(f"port must be an int in 1..65535, not {port!r}")
    if not isinstance(name, str):
        raise TypeError(f"name must be str, not {type(name).__name__}")
    text = name[:MAX_NAME].encode("utf-8", "replace").decode("utf-8")
    beacon = {"type": BEACON_TYPE, "version": BEACON_VERSION, "port": port, "name": text}
    if tls:
        beacon["tls"] = True  # the port serves TLS
    return pack(beacon)


async def run_beacon(
    port: int,
    name: str,
    *,
    interval: float = 2.0,
    beacon_port: int = BEACON_PORT,
    targets: Sequence[str] = ("255.255.255.255",),
    tls: bool = False,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Announce the server until cancelled. Never raises for the network's
    sake: a send that fails is logged (once per target until one succeeds
    again) and tried again next round, so a laptop that loses and regains its
    network starts announcing again by itself."""
    if not (math.isfinite(interval) and interval > 0):
        raise ValueError(f"interval must be a positive number of seconds, not {interval!r}")
    if isinstance(targets, str):  # one address, not a sequence of one-letter ones
        targets = (targets,)
    datagram = beacon_datagram(port, name, tls)
    task_status.started()
    sock: trio.socket.SocketType | None = None
    socket_failed = False  # logged already
    failing: set[str] = set()  # targets whose failure has been logged
    try:
        while True:
            if sock is None:
                try:
                    sock = _open_socket()
                except OSError as e:
                    if not socket_failed:
                        socket_failed = True
                        log.debug("discovery beacon: no UDP socket (%s); will keep trying", e)
            if sock is not None:
                for target in targets:
                    try:
                        await sock.sendto(datagram, (target, beacon_port))
                    except OSError as e:
                        if target not in failing:
                            failing.add(target)
                            log.debug(
                                "discovery beacon: cannot send to %s:%d (%s); will keep trying",
                                target,
                                beacon_port,
                                e,
                            )
                    else:
                        failing.discard(target)
            await trio.sleep(interval)
    finally:
        if sock is not None:
            sock.close()


def _open_socket() -> trio.socket.SocketType:
    """A UDP socket allowed to broadcast (unicast targets work without)."""
    sock = trio.socket.socket(trio.socket.AF_INET, trio.socket.SOCK_DGRAM)
    try:
        sock.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_BROADCAST, 1)
    except OSError as e:
        log.debug("discovery beacon: cannot set SO_BROADCAST (%s)", e)
    return sock

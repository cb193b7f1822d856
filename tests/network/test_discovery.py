"""The LAN discovery beacon: the datagram, what a listener accepts from the
network (parsing only), and real round trips over UDP on 127.0.0.1 (each
with a deadline; only these are marked `network`)."""

from __future__ import annotations

import logging
import socket
import time
import unicodedata
from collections.abc import Callable
from functools import partial
from typing import Any

import msgpack
import pytest
import trio
import trio.testing
from hypothesis import given
from hypothesis import strategies as st

from oriflamme.client import discovery as client_discovery
from oriflamme.client.discovery import MAX_DATAGRAM, FoundServer, find_servers, parse_beacon
from oriflamme.server import discovery as server_discovery
from oriflamme.server.discovery import beacon_datagram, run_beacon
from tests.deadlines import HANG

HOST = "192.168.1.20"


def free_udp_port() -> int:
    """A UDP port nobody listens on just now."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("", 0))
        port: int = s.getsockname()[1]
        return port


def datagram(**fields: Any) -> bytes:
    """A beacon with some fields changed (a field given as ... is left out)."""
    beacon = {"type": "oriflamme_server", "version": 1, "port": 7531, "name": "Friday"}
    beacon.update(fields)
    return msgpack.packb({k: v for k, v in beacon.items() if v is not ...}, use_bin_type=True)


def has_no_control(text: str) -> bool:
    return all(unicodedata.category(c)[0] != "C" for c in text) and not set(text) & {
        "\u2028",
        "\u2029",
    }


# ---------------------------------------------------------------- the datagram


def test_the_client_and_the_server_agree_on_the_port_and_format() -> None:
    assert client_discovery.BEACON_PORT == server_discovery.BEACON_PORT == 7532
    assert client_discovery.BEACON_TYPE == server_discovery.BEACON_TYPE
    assert client_discovery.BEACON_VERSION == server_discovery.BEACON_VERSION
    assert client_discovery.MAX_NAME == server_discovery.MAX_NAME


def test_the_datagram_is_the_documented_msgpack_map() -> None:
    data = beacon_datagram(7531, "Friday game night")
    assert msgpack.unpackb(data, raw=False) == {
        "type": "oriflamme_server",
        "version": 1,
        "port": 7531,
        "name": "Friday game night",
    }
    assert parse_beacon(data, HOST) == FoundServer(HOST, 7531, "Friday game night")


def test_the_server_cuts_a_long_name_and_replaces_what_utf8_cannot_carry() -> None:
    assert parse_beacon(beacon_datagram(1, "x" * 200), HOST) == FoundServer(HOST, 1, "x" * 64)
    assert parse_beacon(beacon_datagram(1, "a\ud800b"), HOST) == FoundServer(HOST, 1, "a?b")
    widest = beacon_datagram(65535, "\U0001f0a1" * 100)  # 4 UTF-8 bytes a character
    assert len(widest) <= MAX_DATAGRAM
    found = parse_beacon(widest, HOST)
    assert found is not None and found.name == "\U0001f0a1" * 64


@pytest.mark.parametrize("port", [0, -1, 65536, True, 7531.0, "7531"])
def test_the_server_refuses_to_announce_a_port_that_is_none(port: Any) -> None:
    with pytest.raises(ValueError):
        beacon_datagram(port, "x")


@given(port=st.integers(1, 65535), name=st.text(max_size=100))
def test_every_beacon_the_server_sends_is_accepted(port: int, name: str) -> None:
    found = parse_beacon(beacon_datagram(port, name), HOST)
    assert found is not None
    assert (found.host, found.port) == (HOST, port)
    assert len(found.name) <= 64 and has_no_control(found.name)


# ---------------------------------------------------------------- what a listener accepts


def test_a_beacon_with_keys_from_a_later_version_is_accepted() -> None:
    assert parse_beacon(datagram(motd="hello", players=[1, 2]), HOST) == FoundServer(
        HOST, 7531, "Friday"
    )


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"\xc1", id="never-used-byte"),
        pytest.param(b"hello, is anybody there?", id="text"),
        pytest.param(msgpack.packb([1, 2, 3]), id="array"),
        pytest.param(msgpack.packb("oriflamme_server"), id="string"),
        pytest.param(msgpack.packb({1: 2}), id="int-keys"),
        pytest.param(datagram(type="oriflamme_client"), id="wrong-type"),
        pytest.param(datagram(type=b"oriflamme_server"), id="type-as-bytes"),
        pytest.param(datagram(type=...), id="no-type"),
        pytest.param(datagram(version=2), id="version-2"),
        pytest.param(datagram(version=True), id="version-true"),
        pytest.param(datagram(version="1"), id="version-text"),
        pytest.param(datagram(version=...), id="no-version"),
        pytest.param(datagram(port=0), id="port-0"),
        pytest.param(datagram(port=65536), id="port-65536"),
        pytest.param(datagram(port=-7531), id="port-negative"),
        pytest.param(datagram(port=2**64 - 1), id="port-huge"),
        pytest.param(datagram(port="7531"), id="port-text"),
        pytest.param(datagram(port=7531.0), id="port-float"),
        pytest.param(datagram(port=True), id="port-true"),
        pytest.param(datagram(port=None), id="port-nil"),
        pytest.param(datagram(port=...), id="no-port"),
        pytest.param(datagram(name=b"Friday"), id="name-bytes"),
        pytest.param(datagram(name=None), id="name-nil"),
        pytest.param(datagram(name=["Friday"]), id="name-array"),
        pytest.param(datagram(name=...), id="no-name"),
        pytest.param(datagram() + b"\x00", id="trailing-byte"),
        pytest.param(datagram(name="x" * (MAX_DATAGRAM + 1)), id="oversized"),
        pytest.param(datagram(name="é" * 300), id="oversized-utf8"),
        pytest.param(datagram(padding=b"\x00" * MAX_DATAGRAM), id="oversized-extra-key"),
        pytest.param(b"\x81\xa4type" + b"\x91" * 400 + b"\x00", id="deep-nesting"),
        pytest.param(b"\xdf\xff\xff\xff\xff", id="map-claiming-4g-entries"),
        pytest.param(b"\xdb\xff\xff\xff\xff" + b"x" * 10, id="str-claiming-4g-bytes"),
        pytest.param(msgpack.packb(msgpack.ExtType(1, b"x")), id="ext"),
        pytest.param(
            b"\x84\xa4type\xb0oriflamme_server\xa4type\xb0oriflamme_server"
            b"\xa7version\x01\xa4port\xcd\x1d\x6b",
            id="key-twice",
        ),
    ],
)
def test_anything_but_a_well_formed_beacon_is_dropped(data: bytes) -> None:
    assert parse_beacon(data, HOST) is None


def test_every_truncation_of_a_beacon_is_dropped() -> None:
    data = datagram()
    for cut in range(len(data)):
        assert parse_beacon(data[:cut], HOST) is None, cut


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("\x1b[2J\x1b[1;31mEvil\x1b[0m", "[2J[1;31mEvil[0m"),  # clear screen, colour
        ("\x1b]0;pwned\x07Friday", "]0;pwnedFriday"),  # set the terminal's title
        ("Fri\rday\n\tnight\x00\x7f\x9b", "Fridaynight"),  # C0, DEL, C1 (CSI)
        ("\u202eyadirF", "yadirF"),  # right-to-left override (Cf)
        ("line\u2028break\u2029here", "linebreakhere"),
        ("  spaced out  ", "spaced out"),
        ("\x1b\x1b\x1b", ""),
    ],
)
def test_control_characters_and_escape_sequences_are_taken_out_of_the_name(
    name: str, shown: str
) -> None:
    assert parse_beacon(datagram(name=name), HOST) == FoundServer(HOST, 7531, shown)


def test_a_long_name_from_someone_else_is_cut_to_64_characters() -> None:
    found = parse_beacon(datagram(name="y" * 300), HOST)
    assert found == FoundServer(HOST, 7531, "y" * 64)


def test_a_beacon_says_whether_the_port_serves_tls() -> None:
    plain = parse_beacon(beacon_datagram(7531, "plain"), "10.0.0.2")
    secure = parse_beacon(beacon_datagram(7531, "secure", tls=True), "10.0.0.3")
    assert plain == FoundServer("10.0.0.2", 7531, "plain", False)
    assert secure == FoundServer("10.0.0.3", 7531, "secure", True)
    # only true itself says TLS
    odd = msgpack.packb(
        {"type": "oriflamme_server", "version": 1, "port": 1, "name": "x", "tls": 1}
    )
    found = parse_beacon(odd, "10.0.0.4")
    assert found is not None and found.tls is False


@given(data=st.binary(max_size=2 * MAX_DATAGRAM))
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    found = parse_beacon(data, HOST)
    assert found is None or (1 <= found.port <= 65535 and has_no_control(found.name))


plain = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats()
    | st.text(max_size=80)
    | st.binary(max_size=80),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=10,
)


@given(
    fields=st.dictionaries(
        st.sampled_from(["type", "version", "port", "name", "extra"]),
        st.sampled_from(["oriflamme_server", 1, 7531]) | plain,
    ),
    cut=st.integers(0, 600),
)
def test_arbitrary_maps_and_their_truncations_never_raise(fields: dict[str, Any], cut: int) -> None:
    data = msgpack.packb(fields, use_bin_type=True)
    for piece in (data, data[:cut]):
        found = parse_beacon(piece, HOST)
        assert found is None or (
            fields.get("type") == "oriflamme_server"
            and type(found.port) is int
            and 1 <= found.port <= 65535
            and has_no_control(found.name)
        )


# ---------------------------------------------------------------- over UDP on 127.0.0.1
#
# On trio's MockClock: a listener's window, and the beacons' intervals, are
# virtual seconds, which pass only when the test moves the clock on
# (`listen_until`). What a listener hears therefore never depends on how
# fast the machine is: its window ends once it has heard what the test waits
# for, never while a datagram is still on its way.

WINDOW = 1e9  # a listener's window, in virtual seconds: ended by `listen_until`


@pytest.fixture
def heard(monkeypatch: pytest.MonkeyPatch) -> list[FoundServer | None]:
    """What the listener made of every datagram it received, in order (None:
    dropped)."""
    parsed: list[FoundServer | None] = []

    def parse(data: bytes, sender_host: str) -> FoundServer | None:
        parsed.append(parse_beacon(data, sender_host))
        return parsed[-1]

    monkeypatch.setattr(client_discovery, "parse_beacon", parse)
    return parsed


async def listen_until(
    clock: trio.testing.MockClock, beacon_port: int, enough: Callable[[], bool], step: float
) -> list[FoundServer]:
    """`find_servers` on `beacon_port`, its window ended as soon as `enough()`:
    until then the clock moves on `step` at a time (a beacon's interval: each
    step, every beacon sends once more), once every task is blocked, that is
    once the datagrams that arrived are read."""
    found: list[list[FoundServer]] = []

    async def listener() -> None:
        found.append(await find_servers(wait=WINDOW, beacon_port=beacon_port))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(listener)
        hang = time.monotonic() + HANG
        while not enough():
            assert time.monotonic() < hang, "the listener did not hear the beacons"
            await trio.testing.wait_all_tasks_blocked()
            clock.jump(step)
        clock.jump(WINDOW)
    return found[0]


def servers_heard(heard: list[FoundServer | None]) -> list[FoundServer]:
    return [server for server in heard if server is not None]


@pytest.mark.network
@pytest.mark.trio
async def test_a_listener_finds_a_beacon_on_loopback(
    mock_clock: trio.testing.MockClock, heard: list[FoundServer | None]
) -> None:
    beacon_port = free_udp_port()
    async with trio.open_nursery() as nursery:
        await nursery.start(
            partial(
                run_beacon,
                7531,
                "Friday game night",
                interval=0.05,
                beacon_port=beacon_port,
                targets=("127.0.0.1",),
            )
        )
        found = await listen_until(
            mock_clock, beacon_port, lambda: len(servers_heard(heard)) >= 3, 0.05
        )
        nursery.cancel_scope.cancel()
    # Many beacons arrived (one every 50 ms): one server in the list.
    assert found == [FoundServer("127.0.0.1", 7531, "Friday game night")]


@pytest.mark.network
@pytest.mark.trio
async def test_several_servers_are_listed_once_each_in_order(
    mock_clock: trio.testing.MockClock, heard: list[FoundServer | None]
) -> None:
    beacon_port = free_udp_port()

    def each_twice() -> bool:
        ports = [server.port for server in servers_heard(heard)]
        return all(ports.count(port) >= 2 for port in (9001, 9002, 9010))

    async with trio.open_nursery() as nursery:
        for port, name in [(9002, "b"), (9001, "a"), (9010, "c")]:
            nursery.start_soon(
                partial(
                    run_beacon,
                    port,
                    name,
                    interval=0.05,
                    beacon_port=beacon_port,
                    targets=("127.0.0.1",),
                )
            )
        found = await listen_until(mock_clock, beacon_port, each_twice, 0.05)
        nursery.cancel_scope.cancel()
    assert found == [
        FoundServer("127.0.0.1", 9001, "a"),
        FoundServer("127.0.0.1", 9002, "b"),
        FoundServer("127.0.0.1", 9010, "c"),
    ]


@pytest.mark.network
@pytest.mark.trio
async def test_junk_on_the_port_is_ignored(
    mock_clock: trio.testing.MockClock, heard: list[FoundServer | None]
) -> None:
    beacon_port = free_udp_port()
    junks = (b"\xc1", b"x" * 2000, datagram(port=0), datagram(port=4242))
    async with trio.open_nursery() as nursery:

        async def noise() -> None:
            with trio.socket.socket(trio.socket.AF_INET, trio.socket.SOCK_DGRAM) as s:
                while True:
                    for junk in junks:
                        await s.sendto(junk, ("127.0.0.1", beacon_port))
                    await trio.sleep(0.05)

        nursery.start_soon(noise)
        # two rounds of the noise at least, the beacon among it
        found = await listen_until(mock_clock, beacon_port, lambda: len(heard) >= 8, 0.05)
        nursery.cancel_scope.cancel()
    assert found == [FoundServer("127.0.0.1", 4242, "Friday")]


@pytest.mark.network
@pytest.mark.trio
async def test_a_target_that_cannot_be_reached_is_logged_once_and_the_beacon_goes_on(
    caplog: pytest.LogCaptureFixture,
    mock_clock: trio.testing.MockClock,
    heard: list[FoundServer | None],
) -> None:
    """An IPv6 address for an IPv4 socket fails on every send, at once and
    without asking the network; the beacon logs it once, keeps sending to the
    other target, and never raises."""
    caplog.set_level(logging.DEBUG, logger="oriflamme.server")
    beacon_port = free_udp_port()
    async with trio.open_nursery() as nursery:
        await nursery.start(
            partial(
                run_beacon,
                7531,
                "still here",
                interval=0.02,
                beacon_port=beacon_port,
                targets=("::1", "192.0.2.1", "127.0.0.1"),
            )
        )
        # three rounds heard: each tried ::1 first
        found = await listen_until(mock_clock, beacon_port, lambda: len(heard) >= 3, 0.02)
        nursery.cancel_scope.cancel()
    assert found == [FoundServer("127.0.0.1", 7531, "still here")]
    failures = [r for r in caplog.records if "::1" in r.getMessage()]
    assert len(failures) == 1 and failures[0].levelno == logging.DEBUG


@pytest.mark.network
@pytest.mark.trio
async def test_a_beacon_with_only_unreachable_targets_runs_until_cancelled(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with trio.move_on_after(0.3) as scope:  # (virtual seconds: 30 rounds)
        await run_beacon(7531, "x", interval=0.01, targets=("::1",))
    assert scope.cancelled_caught  # ran until cancelled, did not return or raise


@pytest.mark.network
@pytest.mark.trio
async def test_a_port_that_cannot_be_bound_gives_an_empty_list_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as blocker:  # no SO_REUSEADDR
        blocker.bind(("", 0))
        start = trio.current_time()
        found = await find_servers(wait=5, beacon_port=blocker.getsockname()[1])
        # (virtual time: it passes only while the listener waits, which it must not)
        assert trio.current_time() == start
    assert found == []


@pytest.mark.network
@pytest.mark.trio
@pytest.mark.skipif(not hasattr(socket, "SO_REUSEPORT"), reason="no SO_REUSEPORT")
async def test_two_listeners_on_one_machine_can_look_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    beacon_port = free_udp_port()
    took: list[float] = []

    async def look() -> None:
        start = trio.current_time()
        await find_servers(wait=0.3, beacon_port=beacon_port)
        took.append(trio.current_time() - start)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(look)
        nursery.start_soon(look)
    # (virtual time: a listener refused the port would have returned at once)
    assert took == [pytest.approx(0.3)] * 2  # neither was refused the port

"""Connections that end badly leave no garbage cycle in the server.

A serving process freezes its young objects rather than let the collector
walk them (`server.tuning.freeze_young`), and frees the garbage cycles
among them only once an hour: a cycle left by every bad connection would
pile up until then. Here connections said `hello` and left, sent a frame
that is not one, or left without a word, over real sockets, with the
collector off: reference counting alone must free what they left.
"""

from __future__ import annotations

import gc

import pytest
import trio

from oriflamme.protocol import messages as m
from oriflamme.protocol.codec import encode_frame
from tests.deadlines import HANG, until
from tests.network.test_misuse import HOST, running_server

pytestmark = pytest.mark.network

HELLO = encode_frame(m.to_data(m.Hello(versions=(1, 2), client="test", name="Ann")))
NOT_A_FRAME = b"\x00\x00\x00\x05hello"  # (five bytes that are no msgpack map)


@pytest.mark.trio
@pytest.mark.parametrize("sent", [HELLO, NOT_A_FRAME, b""], ids=["hello", "not_a_frame", "nothing"])
async def test_connections_that_end_badly_leave_no_garbage_cycle(sent: bytes) -> None:
    with trio.fail_after(HANG):
        async with running_server() as (port, _, server):
            gc.collect()
            gc.disable()
            try:
                for _ in range(5):
                    stream = await trio.open_tcp_stream(HOST, port)
                    if sent:
                        await stream.send_all(sent)
                        assert await stream.receive_some()  # (its welcome, or its error)
                    await stream.aclose()
                await until(lambda: not server._connections)
                assert gc.collect() == 0
            finally:
                gc.enable()

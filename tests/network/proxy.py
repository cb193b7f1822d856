"""A TCP proxy on 127.0.0.1 between clients and a server, which reads the
frames going by, so that a test acts at the very message it chooses: the
connection dropped before a request reaches the server, or before its answer
reaches the client, or cut right after a message of the client's (whose
process the test kills then).

For each frame a client sends, `watch(frame)` (the frame decoded, a dict)
says what to do:

- None: pass it on;
- ``DROP``: drop the connection (both ways) without passing it on;
- ``ANSWER``: pass it on, and drop the connection when its answer comes
  from the server (the answer, and whatever follows, never reach the
  client; what came before it does);
- ``LAST``: pass it on and then drop the connection, and from that moment
  pass nothing more to the client.
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Callable
from typing import Any

import msgpack
import trio

HOST = "127.0.0.1"
DROP, ANSWER, LAST = "drop", "answer", "last"

Watch = Callable[[dict[str, Any]], str | None]


class Frames:
    """Whole frames out of a byte stream: each as its bytes and decoded."""

    def __init__(self) -> None:
        self.buffer = bytearray()

    def feed(self, data: bytes) -> list[tuple[bytes, dict[str, Any]]]:
        self.buffer += data
        frames = []
        while len(self.buffer) >= 4:
            (size,) = struct.unpack(">I", self.buffer[:4])
            if len(self.buffer) < 4 + size:
                break
            raw = bytes(self.buffer[: 4 + size])
            del self.buffer[: 4 + size]
            frames.append((raw, msgpack.unpackb(raw[4:], raw=False)))
        return frames


class Proxy:
    """Connections to it go on to the server at `port` (see the module
    docstring); `connections` counts them."""

    def __init__(self, port: int, watch: Watch | None = None) -> None:
        self.upstream = port
        self.watch = watch
        self.connections = 0
        self.dropped = 0  # connections the watch dropped

    async def serve(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host=HOST)
        task_status.started(listeners[0].socket.getsockname()[1])
        await trio.serve_listeners(self._relay, listeners)

    async def _relay(self, client: trio.SocketStream) -> None:
        self.connections += 1
        try:
            server = await trio.open_tcp_stream(HOST, self.upstream)
        except OSError:
            await client.aclose()
            return
        link = _Link(client, server)
        try:
            async with trio.open_nursery() as nursery:
                link.scope = nursery.cancel_scope
                nursery.start_soon(self._up, link)
                nursery.start_soon(self._down, link)
        finally:
            with trio.CancelScope(shield=True):
                await client.aclose()
                await server.aclose()

    async def _up(self, link: _Link) -> None:
        frames = Frames()
        while True:
            try:
                data = await link.client.receive_some(65536)
            except trio.BrokenResourceError:
                data = b""
            if not data:
                await _quietly(link.server.send_eof)
                return
            batch = b""  # (what was read together goes on together)
            for raw, frame in frames.feed(bytes(data)):
                action = None if self.watch is None else self.watch(frame)
                if action == DROP:
                    await _quietly(link.server.send_all, batch)
                    return self._drop(link, watched=True)
                if action == LAST:
                    link.frozen = True  # (before anything else: nothing more goes back)
                    await _quietly(link.server.send_all, batch + raw)
                    return self._drop(link, watched=True)
                if action == ANSWER:
                    link.awaited = frame.get("id")
                batch += raw
            await _quietly(link.server.send_all, batch)

    async def _down(self, link: _Link) -> None:
        frames = Frames()
        while True:
            try:
                data = await link.server.receive_some(65536)
            except trio.BrokenResourceError:
                data = b""
            if not data or link.frozen:
                return self._drop(link)
            batch = b""
            for raw, frame in frames.feed(bytes(data)):
                if link.awaited is not None and frame.get("id") == link.awaited:
                    # the answer: it never reaches the client (what came before does)
                    await _quietly(link.client.send_all, batch)
                    return self._drop(link, watched=True)
                batch += raw
            if link.frozen:
                return self._drop(link)
            await _quietly(link.client.send_all, batch)

    def _drop(self, link: _Link, *, watched: bool = False) -> None:
        if watched:
            self.dropped += 1
        assert link.scope is not None
        link.scope.cancel()


class _Link:
    def __init__(self, client: trio.SocketStream, server: trio.SocketStream) -> None:
        self.client = client
        self.server = server
        self.scope: trio.CancelScope | None = None
        self.awaited: int | None = None  # the id of the request whose answer drops the link
        self.frozen = False  # nothing more goes to the client


async def _quietly(send: Callable[..., Any], *args: Any) -> None:
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        await send(*args)

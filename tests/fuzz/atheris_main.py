"""The fuzz targets under atheris (coverage-guided), on demand:

    pip install atheris
    python -m tests.fuzz.atheris_main decoder -max_total_time=600
    python -m tests.fuzz.atheris_main server -max_total_time=600 -max_len=4096

`decoder`: any bytes, in any chunks, into the server's side of a
connection: messages or a `RemoteProtocolError`, nothing else. `server`:
the bytes read as a stream of msgpack values, sent by a hostile client
while a game is played (`targets.serve`). A crash is an AssertionError or
any other exception, which atheris reports with the input that caused it.
"""

from __future__ import annotations

import sys
from typing import Any

import msgpack

from oriflamme.protocol.connection import CLOSED, NEED_DATA, ServerConnection
from oriflamme.protocol.errors import RemoteProtocolError

from .targets import serve


def decoder(data: bytes) -> None:
    connection = ServerConnection()
    cut = data[0] if data else 0
    for chunk in (data[1 : 1 + cut], data[1 + cut :]):
        if not chunk:
            continue
        connection.receive_data(chunk)
        while True:
            try:
                message = connection.next_message()
            except RemoteProtocolError:
                return  # refused, as it must be: told to the peer, then closed
            if message is NEED_DATA or message is CLOSED:
                break


def server(data: bytes) -> None:
    values: list[Any] = []
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False, max_buffer_size=1 << 16)
    unpacker.feed(data[4:])
    try:
        for value in unpacker:
            values.append(value)
            if len(values) >= 40:
                break
    except Exception:  # noqa: BLE001 -- the rest of the bytes are not values: stop there
        pass
    cuts = list(data[:4])
    serve(values, cuts)


def main() -> None:
    import atheris

    targets = {"decoder": decoder, "server": server}
    if len(sys.argv) < 2 or sys.argv[1] not in targets:
        sys.exit(f"usage: python -m tests.fuzz.atheris_main {'|'.join(targets)} [atheris options]")
    target = targets[sys.argv.pop(1)]
    atheris.instrument_all()  # coverage feedback from every module loaded (ours included)
    atheris.Setup(sys.argv, target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()

"""Finished games' records on disk, written off the core task.

Each record is one file, ``<record id>.oriflamme`` (its msgpack bytes, as
`oriflamme verify` reads them), in the data directory's ``records/``. The
core task only hands a finished game to `RecordWriter.submit`; a task of the
writer's own writes it in a worker thread, so a slow disk never holds a room.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import trio

from oriflamme.protocol.record import encode_record
from oriflamme.server.core import GameFinished

log = logging.getLogger("oriflamme.server")

RECORD_SUFFIX = ".oriflamme"
PENDING = 1024


class RecordWriter:
    """Writes finished games' records into `directory`."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._send, self._receive = trio.open_memory_channel[GameFinished](PENDING)
        # Records on their way to the disk, by id: `load` finds them already.
        self._writing: dict[str, bytes] = {}
        self._queued = 0  # records submitted and not yet tried
        self._idle = trio.Event()  # set whenever nothing is queued
        self._idle.set()

    def path(self, record_id: str) -> Path:
        return self.directory / f"{record_id}{RECORD_SUFFIX}"

    def submit(self, finished: GameFinished) -> None:
        """Queue a record to write (from the core task: never waits)."""
        try:
            self._send.send_nowait(finished)
            self._writing[finished.record_id] = encode_record(finished.record)
            if not self._queued:
                self._idle = trio.Event()
            self._queued += 1
        except trio.WouldBlock:
            log.error("record %s not written: %d records wait already", finished.record_id, PENDING)

    async def run(self) -> None:
        async for finished in self._receive:
            data = self._writing[finished.record_id]
            path = self.path(finished.record_id)
            try:
                await trio.to_thread.run_sync(_write, path, data)
                log.info("record %s written (%d bytes)", path.name, len(data))
                del self._writing[finished.record_id]
            except OSError as exc:
                log.error("record %s not written (kept in memory): %s", path.name, exc)
            finally:
                self._queued -= 1
                if not self._queued:
                    self._idle.set()

    async def load(self, record_id: str) -> bytes | None:
        """The bytes of record `record_id`, or None if there is none."""
        if not re.fullmatch(r"[0-9a-f]{1,64}", record_id):
            return None  # only names this server gives: never a path
        if record_id in self._writing:
            return self._writing[record_id]
        path = self.path(record_id)
        try:
            return await trio.to_thread.run_sync(path.read_bytes)
        except FileNotFoundError:
            return None

    async def settled(self) -> None:
        """Return when every record submitted so far is on disk (or failed to be)."""
        await self._idle.wait()

    async def drain(self) -> None:
        """Close the queue and return when what it held is written."""
        await self._send.aclose()


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_bytes(data)
    temporary.replace(path)

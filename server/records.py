"""Finished games' records: kept in the store, imported from files, exported as files.

A record is kept in the database (`server.store`, table ``records``), in
the same transaction as the journal entry of the input that ended its game
(`NetServer`'s committer hands the store the `GameFinished` effects of the
batches it commits): a record exists exactly when its game has ended, and
nothing about the end is sent before both are stored. `get_record` reads it
from there.

Its verdicts were made by the referee as the game went on, without a
replay; the whole record is verified as `oriflamme verify` does once it is
stored, in a worker thread, off the task that runs the rooms
(`record_problems`, called by `NetServer`). A record the verifier finds
otherwise is a fault of ours: it is logged, and kept (it is what was
played).

A data directory written by a server before this one kept its records as
files, ``records/<record id>.oriflamme``: they are imported at start
(`import_record_files`; once imported, a file is left as it was and never
read again). `oriflamme export-records` writes the records kept as files
of that form again (`export_records`), each one `oriflamme verify` reads.
"""

from __future__ import annotations

import logging
import os
import re
import time
from pathlib import Path

from oriflamme.protocol.record import (
    MAX_RECORD_SIZE,
    Record,
    RecordError,
    decode_record,
    encode_record,
)
from oriflamme.protocol.verify import verify_record
from oriflamme.server.core import GameFinished

from .store import Store, StoredRecord, StoreError, read_records

log = logging.getLogger("oriflamme.server")

RECORD_SUFFIX = ".oriflamme"
RECORDS_DIR = "records"  # where servers before schema 3 wrote them
_ID = re.compile(r"[0-9a-f]{1,64}")  # the record ids a server gives


def stored_record(finished: GameFinished, when: float | None = None) -> StoredRecord:
    """What the store keeps of a finished game (its record encoded)."""
    return _summary(
        finished.record_id,
        encode_record(finished.record),
        finished.record,
        finished.room,
        finished.room_name or f"room {finished.room}",
        time.time() if when is None else when,
    )


def _summary(
    record_id: str, data: bytes, record: Record, room: int, room_name: str, when: float
) -> StoredRecord:
    return StoredRecord(
        id=record_id,
        data=data,
        room=room,
        room_name=room_name,
        names=tuple(s.name for s in record.seats),
        scores=tuple(record.results.scores),
        winners=tuple(record.results.winners),
        valid=record.results.complete and all(v.ok for v in record.verdicts),
        finished=when,
    )


def record_problems(finished: GameFinished) -> list[str]:
    """What `oriflamme verify` finds wrong with the record of a game that
    ended here (nothing, but for a fault of ours): its problems, and any
    verdict other than the referee's. Slow (a replay of the whole game):
    called in a worker thread."""
    # (not the signatures again: the referee checked each as it came, and
    # the server signed its own: 130 us a decision, for nothing)
    verdict = verify_record(finished.record, signatures=False)
    return list(verdict.problems)


def import_record_files(store: Store, data_dir: Path) -> int:
    """Put the record files of `data_dir` (as a server before schema 3 wrote
    them) that the store lacks into it, once: at the first start of a server
    of schema 3 (the files are left as they were, and never read again);
    how many. A file that is not a readable record (a 0-byte file left by a
    power cut) is logged and left."""
    if store.files_imported():
        return 0
    directory = data_dir / RECORDS_DIR
    try:
        paths = sorted(directory.glob(f"*{RECORD_SUFFIX}"))
    except OSError as exc:
        raise StoreError(f"cannot read the records in {directory}: {exc.strerror}") from None
    if not paths:
        store.mark_files_imported()
        return 0
    kept = store.record_ids()
    found: list[StoredRecord] = []
    for path in paths:
        record_id = path.name[: -len(RECORD_SUFFIX)]
        if record_id in kept or not _ID.fullmatch(record_id):
            continue
        try:
            with open(path, "rb") as f:
                data = f.read(MAX_RECORD_SIZE + 1)
                when = os.fstat(f.fileno()).st_mtime
            record = decode_record(data)
        except OSError as exc:
            log.error("record file %s not imported: %s", path, exc.strerror)
            continue
        except RecordError as exc:
            log.error("record file %s not imported: not a readable record (%s)", path, exc)
            continue
        found.append(_summary(record_id, data, record, 0, "", when))
    if found:
        store.append([], found)
        log.info(
            "%d record files imported into the database from %s (the files are no longer"
            " read: `oriflamme export-records` writes them out)",
            len(found),
            directory,
        )
    store.mark_files_imported()
    return len(found)


def export_records(database: Path | str, destination: Path) -> int:
    """Write every record kept in `database` (the SQLite file, or a
    PostgreSQL URL) into `destination` as ``<record id>.oriflamme`` (each
    synced to the disk); how many. A file already there with the same bytes
    is left alone. Read only: a server may be running on the database."""
    if isinstance(database, str):
        from .pg_store import read_records as read_from_postgresql

        kept = read_from_postgresql(database)
    else:
        kept = read_records(database)
    destination.mkdir(parents=True, exist_ok=True)
    written = 0
    for record_id, data, when in kept:
        path = destination / f"{record_id}{RECORD_SUFFIX}"
        try:
            if path.read_bytes() == data:
                written += 1
                continue
        except FileNotFoundError:
            pass
        temporary = path.with_suffix(".tmp")
        with open(temporary, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        temporary.replace(path)
        os.utime(path, (when, when))
        written += 1
    _sync_directory(destination)
    return written


def _sync_directory(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

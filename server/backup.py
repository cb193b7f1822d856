"""`oriflamme backup`: a consistent copy of a server's data directory, taken
while the server runs.

The database is copied with SQLite's online backup (a file copy of a live
database in WAL mode could catch it half-written), and with it the
finished games' records (they are in it); the rest is copied as files:
`secret.key` (without it the journal cannot be replayed: the server's
randomness is derived from it), the TLS certificate and key, the server
bots' secrets, and the record files of a server before schema 3, if any. The copy is a data
directory: stop the server, put it in place of the old one (or start a
server on it), and it goes on from the moment of the backup.

Files are written readable by their owner alone, as the server writes them.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

from .persistence import DATABASE_FILE, KEY_FILE
from .store import StoreError

COPIED = (KEY_FILE, "records", "tls", "bots")


def backup(data_dir: Path, destination: Path) -> list[str]:
    """Copy `data_dir` to `destination` (a new or empty directory); what was
    copied. `StoreError`, with a message for a person, when it cannot be."""
    database = data_dir / DATABASE_FILE
    if not database.exists():
        raise StoreError(f"{data_dir} holds no server data ({DATABASE_FILE} is missing)")
    if destination.exists() and any(destination.iterdir()):
        raise StoreError(f"{destination} is not empty: a backup goes to a new directory")
    old_umask = os.umask(0o077)
    try:
        destination.mkdir(parents=True, exist_ok=True, mode=0o700)
        source = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30)
        target = sqlite3.connect(destination / DATABASE_FILE)
        try:
            with target:
                source.backup(target)  # online: the server may go on writing meanwhile
        except sqlite3.Error as exc:
            raise StoreError(f"the database of {data_dir} could not be copied: {exc}") from None
        finally:
            target.close()
            source.close()
        copied = [DATABASE_FILE]
        for name in COPIED:
            path = data_dir / name
            if path.is_dir():
                _copy_private(path, destination / name)
                copied.append(name + "/")
            elif path.exists():
                _copy_private(path, destination / name)
                copied.append(name)
        return copied
    except OSError as exc:
        raise StoreError(f"cannot back up {data_dir} to {destination}: {exc}") from None
    finally:
        os.umask(old_umask)


def _copy_private(source: Path, target: Path) -> None:
    """Copy a file or a tree, readable by its owner alone (0600 files, 0700
    folders) whatever the source's modes: a backup holds the server's key."""
    if source.is_dir():
        target.mkdir(mode=0o700)
        target.chmod(0o700)
        for child in sorted(source.iterdir()):
            _copy_private(child, target / child.name)
    else:
        shutil.copyfile(source, target)
        target.chmod(0o600)

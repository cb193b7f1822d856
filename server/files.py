"""Files of the server's own that must be whole and private: `write_private`.

(The client has the same function, `oriflamme.client.secret_store.write_private`:
client and server are siblings over the protocol and share no module, and
this is too small to be a layer of its own.)
"""

from __future__ import annotations

import os
from pathlib import Path


def write_private(path: Path, data: bytes) -> None:
    """Write `data` to `path` atomically and durably (synced, and its
    directory too), readable by its owner alone (mode 0600; a directory
    made for it, 0700): a crash leaves the old file or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)

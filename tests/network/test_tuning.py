"""Memory a server gives back after a snapshot: glibc's (`server.tuning`: what
was freed after a snapshot-sized block came and went) and SQLite's (the
store keeps no copy of a snapshot it wrote). Measured in fresh processes (a
process's malloc thresholds are its own for good)."""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import pytest

from tests.deadlines import HANG

pytestmark = [pytest.mark.network, pytest.mark.process]

# A snapshot-sized block is allocated and freed (with glibc's adapting
# threshold, blocks up to its size now come from the heap); then 40 MiB in
# smaller blocks (2 MiB: above the threshold the server sets), then a small
# object after them, then the blocks are freed.
# Prints how many KiB of the 40 MiB the process still holds.
SCRIPT = """
import os, sys
def rss_kib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024
if sys.argv[1] == "pinned":
    from oriflamme.server.tuning import pin_malloc_thresholds
    assert pin_malloc_thresholds()
snapshot = bytearray(24 << 20)
del snapshot
before = rss_kib()
blocks = [bytearray(2 << 20) for _ in range(20)]
after_them = bytearray(64)
del blocks
print(rss_kib() - before)
"""


def kept_kib(mode: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, timeout=HANG
    )
    assert done.returncode == 0, done.stderr
    return int(done.stdout)


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's mallopt only")
def test_freed_memory_goes_back_to_the_system_once_thresholds_are_pinned() -> None:
    assert kept_kib("adapting") > 30 * 1024  # what the server kept before
    assert kept_kib("pinned") < 4 * 1024


# 64 MiB of facts (2,048 rows of 32 KiB) saved by the store, in a worker
# thread as the server does, then freed. Prints how many KiB the process
# still holds.
SNAPSHOT_SCRIPT = """
import os, sys, threading
from pathlib import Path
from oriflamme.server.core.facts import FACT_TABLES, FactsRows
from oriflamme.server.store import SqliteStore
def rss_kib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024
def facts():
    sessions = {p: (("p",), bytes([p % 256]) * (32 << 10)) for p in range(2048)}
    return FactsRows(b"lobby", {t: {} for t in FACT_TABLES} | {"sessions": sessions})
store = SqliteStore(Path(sys.argv[1]))
before = rss_kib()
saved = facts()
saving = threading.Thread(target=store.save_facts, args=(saved,))
saving.start()
saving.join()
del saved
print(rss_kib() - before)
loaded, _ = store.load()
assert loaded == facts()
"""


def test_a_saved_snapshot_leaves_no_copy_of_itself_in_the_store(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SNAPSHOT_SCRIPT, str(tmp_path / "server.sqlite3")],
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    assert done.returncode == 0, done.stderr
    # (a snapshot bound as one parameter: SQLite's cached statement kept all 64 MiB)
    assert int(done.stdout) < 16 * 1024


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_paused_within_and_as_it_was_after(enabled: bool) -> None:
    import gc

    from oriflamme.server.tuning import collector_paused

    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        with pytest.raises(RuntimeError), collector_paused():
            assert not gc.isenabled()
            raise RuntimeError("a load that fails")
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()

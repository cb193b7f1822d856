"""`server.tuning`: glibc gives back what a server freed after a snapshot-sized
block came and went. Measured in fresh processes (a process's malloc
thresholds are its own for good), with and without the pinning."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

# A snapshot-sized block is allocated and freed (with glibc's adapting
# threshold, blocks up to its size now come from the heap); then 40 MiB in
# smaller blocks (2 MiB: above the threshold the server sets), then a small
# object after them, then the blocks are freed.
# Prints how many KiB of the 40 MiB the process still holds.
SCRIPT = """
import sys
def rss_kib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 // 1024
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
        [sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return int(done.stdout)


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's mallopt only")
def test_freed_memory_goes_back_to_the_system_once_thresholds_are_pinned() -> None:
    assert kept_kib("adapting") > 30 * 1024  # what the server kept before
    assert kept_kib("pinned") < 4 * 1024

"""How a long-running server process sets up Python's and the C library's memory.

Two settings, made once at start by `oriflamme serve` (not by a program that
embeds the server, such as `oriflamme play`: its process is its own):

- the cyclic garbage collector (`tune_gc`, then `freeze_young` as it serves);
- glibc's malloc thresholds (`pin_malloc_thresholds`).

Both were found with `bench/load.py`; bench/RESULTS.md gives the figures.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import sys
from collections.abc import Iterator

GC_THRESHOLDS = (100_000, 50, 100)
# The young objects frozen (`freeze_young`) well before a collection would
# walk them (a burst of connections between two batches makes thousands).
FREEZE_AT = 40_000
_tuned = False  # (whether `tune_gc` ran in this process)

# glibc's `mallopt` parameter numbers (malloc.h), and what the server sets.
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
# Above msgpack's buffer (256 KiB, allocated by every `packb`: a mapping made
# and unmade for each would cost 8 us a message), below a snapshot's blocks.
MMAP_THRESHOLD = 1 << 20
# Free memory kept at the top of the heap before it is given back: the
# default (128 KiB) would give back and take again that 256 KiB buffer at
# every message.
TRIM_THRESHOLD = 8 << 20


def tune_gc() -> None:
    """Make the cyclic garbage collector cheap for a long-running server.

    A server allocates a great many short-lived objects (a message, a view,
    a frame per push) while it holds a large, long-lived heap (the lobby,
    every session's push history). With Python's default thresholds, a
    collection runs every 700 allocations and keeps walking that heap: it
    took about 40% of the core's time in `bench/core.py`. So: what start-up
    made is frozen out of the collector's sight, and collections run a
    hundred times less often or more (the objects freed by reference counting, which
    are nearly all, are freed at once as before)."""
    global _tuned
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    _tuned = True


def freeze_young() -> None:
    """Once `FREEZE_AT` objects are young (made since the last collection,
    and alive), freeze them, as start-up's were, rather than let a
    collection walk them; in a process whose collector `tune_gc` set (the
    shell calls this between two batches).

    A young collection walks every young object, and at thousands of
    connections most are alive: the coroutines of connections waiting for
    their next message (a dozen or so a connection, made anew at each),
    and the games' new state. At 6,000 connections, walking 50,000 of them
    took 120 to 150 ms, every 14 s or so, while no input was handled: the
    p99 of a decision at 2,000 tables (bench/RESULTS.md). Freezing moves
    them out of the collector's sight without a walk; reference counting
    frees them as ever when they go. What it gives up is collecting at
    once the garbage cycles among them: the server makes none that its
    tests find (tests/server/test_no_cycles.py: a game, a room and a
    session; tests/network/test_no_cycles_tcp.py: connections that end
    badly), and every collection of a server at 6,000 steady connections
    found nothing; a cycle made elsewhere (trio's, say) waits for
    `collect_frozen`, once an hour."""
    if _tuned and gc.get_count()[0] >= FREEZE_AT:
        gc.freeze()


def collect_frozen() -> int:
    """Collect every object, the frozen ones included, then freeze what is
    left again (in a process whose collector `tune_gc` set); the number of
    objects collected. A pause of the whole process: with 2,000 games and
    6,000 sessions held (550,000 objects) 0.2 s in a quiet process. The
    shell does it once an hour (`net.COLLECT_EVERY`), so that the garbage
    cycles `freeze_young` hid are freed within the hour."""
    if not _tuned:
        return 0
    gc.unfreeze()
    collected = gc.collect()
    gc.freeze()
    return collected


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic garbage collection meanwhile (as it was after). Loading a
    lobby makes millions of objects that live on, and pickling one millions
    of temporaries: the collector, which runs every few hundred allocations,
    walked the whole heap again and again. With 19,600 sessions and 200
    games (a `bench/load.py` run's), pickling took 6.1 s with it and 3.0 s
    without; unpickling it 2.7 and 1.4 s; replaying 20,681 inputs 3.0 and 1.2 s."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        freeze_young()  # (before a collection would walk what was made meanwhile)
        if enabled:
            gc.enable()


def pin_malloc_thresholds() -> bool:
    """Keep glibc from holding on to memory the server has freed; whether it could.

    glibc serves a large allocation (128 KiB and up, by default) with its
    own mapping, given back to the system when freed. But it adapts: each
    time such a block is freed, the threshold rises to that block's size
    (up to 32 MiB), and the heap may keep twice that free before giving it
    back. The lobby's snapshot is one such block (megabytes of pickle,
    copied again by SQLite): after the first one, blocks of up to its size
    came from the heap, and once freed stayed there, behind whatever was
    allocated after them. At 10,000 idle connections this kept some 40 MB,
    4 KB per connection, for good (`bench/load.py`). Setting the thresholds
    turns the adapting off (as `MALLOC_MMAP_THRESHOLD_` in the environment
    would); they are set where the server's usual blocks stay on the heap.

    Elsewhere than glibc (macOS, musl) this does nothing and says False.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # no C library to ask, or not glibc's
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )

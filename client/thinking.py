"""Where a searching bot thinks: in worker processes, off the event loop and its GIL.

How this works
--------------
A searching bot (`Bot.slow`: ismcts) spends its whole budget, 200 ms a
decision, in pure Python. Run in a thread, it holds the GIL, and the event
loop must win it back after every socket call: with two searches running,
an event loop's socket round trips fell from 23,500/s to 89/s, with a p99
of 76 ms (`python bench/thinking.py`). A server with one room of hard bots
would serve every other room at that pace.

So a program that hosts bots for others (`oriflamme serve`, and the server
inside `oriflamme play`: their house bots, `oriflamme.launcher.house_bots`)
opens `search_processes()` around its run: each
search is then sent, with the bot, the position and the options, to a pool
of worker processes (`concurrent.futures`, spawned: never a fork of a
running trio process), and the loop waits for the answer without holding
the GIL. The workers run at a lower priority, so that the server has the
CPU when both want it; with them the same loop kept 74% of its round trips
(the searches share its two cores), p99 0.12 ms. At most one search per
worker runs at once; the others wait their turn in the pool's queue, and
one cancelled there is taken out. A search cancelled under way keeps its
worker, or its thread, and its place among `SEARCHES_AT_ONCE`, until it
ends (within its budget). A worker exits when its server is gone, even killed. Elsewhere
(a bot process of its own, tests), `think` runs the search in a worker
thread, as the GIL then costs nobody else.

The bot's randomness comes back from the worker with its answer, so an
unseeded bot does not repeat itself, and a seeded one is reproducible
either way (it reseeds at each decision).
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import pickle
import signal
import threading
import time
from collections.abc import AsyncIterator, Sequence
from concurrent.futures import CancelledError, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import asynccontextmanager

import trio

from oriflamme.engine import Action, Game

from .bots import Bot

log = logging.getLogger("oriflamme.bots")

# Searches running at once, in threads or in processes, per trio run: the
# machines we host on have 2 cores, and the event loop needs one of them.
SEARCHES_AT_ONCE = 2
# Workers yield the CPU to the event loop (and to whatever else the machine
# runs) when both want it: the bots wait, not the players.
WORKER_NICENESS = 10
PARENT_WATCH = 0.5  # seconds between a worker's looks at its parent


class _Searchers:
    """What a trio run thinks with: a limiter, and maybe a process pool."""

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers
        self.pool = None if workers is None else self._new_pool(workers)
        self.limiter = trio.CapacityLimiter(SEARCHES_AT_ONCE if workers is None else workers)
        # Bot classes that cannot be sent to a worker: they think in threads
        # from their first failure on (one warning, no more round trips).
        self.in_threads: set[type[Bot]] = set()

    @staticmethod
    def _new_pool(workers: int) -> ProcessPoolExecutor:
        # Spawned: a fork of a process running trio and threads could inherit
        # locks held by another thread; and a spawned worker is the server's
        # own child, which sees it go (`_start_worker`).
        context = multiprocessing.get_context("spawn")
        return ProcessPoolExecutor(
            max_workers=workers,
            mp_context=context,
            initializer=_start_worker,
            initargs=(os.getpid(),),
        )

    def renew(self, broken: ProcessPoolExecutor) -> None:
        """A worker of `broken` died (killed, out of memory): a pool broken
        for good is replaced, for the searches to come. Only once: the
        searches it broke all come here, and the new pool may be at work."""
        if self.pool is broken and self.workers is not None:
            broken.shutdown(wait=False, cancel_futures=True)
            self.pool = self._new_pool(self.workers)


_searchers: trio.lowlevel.RunVar[_Searchers] = trio.lowlevel.RunVar("searchers")


def _start_worker(parent: int) -> None:
    """In a worker, at its start: yield the CPU to the server when both want
    it (`WORKER_NICENESS`), leave Ctrl-C to the server (which shuts the pool
    down), and exit once `parent`, the process that started it, is gone
    (already, if it died while this one started). A server killed with
    SIGKILL cannot shut its pool down, and its workers, which hold both ends
    of their task queue, would wait for ever."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError, AttributeError):  # (no nice on Windows)
        os.nice(WORKER_NICENESS)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_WATCH)
        os._exit(0)

    threading.Thread(target=watch, name="parent watch", daemon=True).start()


@asynccontextmanager
async def search_processes(workers: int = SEARCHES_AT_ONCE) -> AsyncIterator[None]:
    """Within this, the run's searching bots think in `workers` processes
    (started at the first search; multiprocessing's resource tracker at
    once). On the way out, the pool is shut down:
    a search under way is let finish (it takes at most its budget)."""
    searchers = _Searchers(workers)
    token = _searchers.set(searchers)
    try:
        yield
    finally:
        _searchers.reset(token)  # what the run had before (threads, or an outer pool)
        pool = searchers.pool
        searchers.pool = None
        if pool is not None:
            with trio.CancelScope(shield=True), trio.move_on_after(5):
                await trio.to_thread.run_sync(
                    lambda: pool.shutdown(wait=True, cancel_futures=True),
                    abandon_on_cancel=True,
                )


def _searchers_of_this_run() -> _Searchers:
    try:
        return _searchers.get()
    except LookupError:
        searchers = _Searchers()
        _searchers.set(searchers)
        return searchers


class NotInAProcess(Exception):
    """This decision cannot be made in a worker process: the bot cannot be
    pickled (a subclass holding a lock, a lambda) or loaded there (a class
    only this process has), which `lasting` says, or no worker is to be had
    (no file or process left, the pool shutting down). It is made in a
    thread instead."""

    def __init__(self, why: str, *, lasting: bool = False) -> None:
        super().__init__(why)
        self.lasting = lasting

    def __reduce__(self) -> tuple[object, ...]:  # (raised in a worker, sent back)
        return (_not_in_a_process, (str(self), self.lasting))


def _not_in_a_process(why: str, lasting: bool) -> NotInAProcess:
    return NotInAProcess(why, lasting=lasting)


def decide_in_worker(sent: bytes) -> tuple[Action, object, int]:
    """In a worker process: `bot.decide` on the pickled (bot, position,
    options, turn), the bot's randomness after it, and the worker's process
    id (which the tests and the log look at). Sent pickled, so that what
    cannot be loaded fails this call alone (`NotInAProcess`), not the pool's
    task queue, which breaks the pool."""
    try:
        bot, position, options, turn = pickle.loads(sent)
    except Exception as exc:
        raise NotInAProcess(f"it cannot be loaded there: {exc!r}", lasting=True) from None
    action = bot.decide(position, options, turn)
    return action, bot.rng_state(), os.getpid()


async def think(
    bot: Bot, position: Game | None, options: Sequence[Action], turn: int | None
) -> Action:
    """`bot.decide(position, options, turn)`, off the event loop: in a worker
    process within `search_processes`, else in a worker thread. The
    arguments are the caller's own (a position and options made for this):
    neither a thread nor a process touches anything else."""
    searchers = _searchers_of_this_run()
    pool = searchers.pool
    if pool is not None and type(bot) not in searchers.in_threads:
        try:
            return await _in_a_process(pool, searchers.limiter, bot, position, options, turn)
        except BrokenProcessPool as exc:
            log.warning("a bot's worker process died (%s): this decision in a thread", exc)
            searchers.renew(pool)
        except NotInAProcess as exc:  # it thinks here, as it would without the pool
            if exc.lasting:
                searchers.in_threads.add(type(bot))
            log.warning(
                "a %s bot cannot think in a process (%s): %s in a thread",
                bot.strategy,
                exc,
                f"every {type(bot).__name__} thinks" if exc.lasting else "this decision",
            )
    # Abandoned if cancelled: its result is thrown away when it ends, and its
    # place (`limiter`) is given back only then, for the CPU is busy until then.
    return await trio.to_thread.run_sync(
        bot.decide, position, options, turn, abandon_on_cancel=True, limiter=searchers.limiter
    )


async def _in_a_process(
    pool: ProcessPoolExecutor,
    limiter: trio.CapacityLimiter,
    bot: Bot,
    position: Game | None,
    options: Sequence[Action],
    turn: int | None,
) -> Action:
    """`bot.decide` in a worker of `pool`. Raises `NotInAProcess` when it
    cannot be sent or loaded, or no worker is to be had; what `decide`
    raises is raised as it is."""
    try:
        # Pickled here, so that what cannot be sent is told apart from a
        # failure of `decide`, and what cannot be loaded fails this call
        # alone (see `decide_in_worker`).
        sent = pickle.dumps((bot, position, options, turn), pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # (whatever its __reduce__ may raise)
        raise NotInAProcess(f"it cannot be pickled: {exc!r}", lasting=True) from None
    try:
        future = pool.submit(decide_in_worker, sent)
    except BrokenProcessPool:
        raise  # (a RuntimeError too: the pool is renewed, not merely passed by)
    except (OSError, RuntimeError) as exc:  # none could be started, or the pool is closing
        raise NotInAProcess(f"no worker: {exc!r}") from None
    try:
        # (a search cancelled under way keeps its place in `limiter` until
        # its worker is done with it)
        action, rng_state, pid = await trio.to_thread.run_sync(
            future.result, abandon_on_cancel=True, limiter=limiter
        )
    except trio.Cancelled:
        future.cancel()  # if it has not started yet
        raise
    except CancelledError:
        raise NotInAProcess("the pool is shutting down") from None
    bot.set_rng_state(rng_state)
    log.debug("a %s bot decided in worker process %d", bot.strategy, pid)
    return action

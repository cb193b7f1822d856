"""`client.thinking`: searching bots think in worker processes inside a server
(off its event loop and its GIL), in a thread elsewhere; a worker that dies
costs one decision's process, not the game; nothing outlives the pool."""

from __future__ import annotations

import logging
import os
import random
import signal
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
import trio

from oriflamme.client import thinking
from oriflamme.client.bots import Behaviour, Bot
from oriflamme.client.commands import download_record
from oriflamme.client.session import Session, tcp
from oriflamme.client.thinking import search_processes, think
from oriflamme.engine import Action, Game, new_game
from oriflamme.protocol import messages as m
from oriflamme.protocol.record import decode_record
from oriflamme.protocol.verify import verify_record
from tests.deadlines import GAME_HANG, until
from tests.network.server_process import ServerProcess
from tests.network.test_server_restart import game_over

pytestmark = [pytest.mark.network, pytest.mark.process]

# These tests start worker processes (which run at a lower priority than
# whatever loads the machine) and servers: every deadline here is
# `GAME_HANG`, and nothing waits for it to pass (each test waits for what it
# means: a mark, a count, a state).


def a_decision(seed: int = 2) -> Game:
    """A 3-player game at a decision with a choice of several actions."""
    game = new_game(3, seed=seed)
    while len(game.legal_actions()) < 2:
        game.apply(game.legal_actions()[0])
    return game


@pytest.fixture(autouse=True)
def bots_log(caplog: pytest.LogCaptureFixture) -> None:
    """The bots' debug lines, which say in which process each decided."""
    caplog.set_level(logging.DEBUG, logger="oriflamme.bots")


class _Stalling(Bot):
    """A searching bot whose search, in a worker process, leaves a mark (a file
    named by the worker's process id, in `marks`) and goes on until `release`
    exists or the worker is killed: so that a test acts while a worker is
    searching, however fast or slow the machine is, rather than after a
    sleep that only makes it likely. Anywhere else (the thread a broken
    search falls back to) it searches at once, as any bot does."""

    def __init__(self, marks: Path, release: Path | None = None) -> None:
        super().__init__("ismcts", iterations=5)
        self.marks, self.release = marks, release
        self.home = os.getpid()

    def decide(self, position: Game | None, options: Sequence[Action], turn: int | None) -> Action:
        if os.getpid() != self.home:
            (self.marks / str(os.getpid())).touch()
            given_up = time.monotonic() + GAME_HANG  # (past the test's own deadline)
            while not (self.release is not None and self.release.exists()):
                if time.monotonic() > given_up:
                    break
                time.sleep(0.01)
        return super().decide(position, options, turn)


async def marked(marks: Path, count: int) -> list[int]:
    """The worker processes searching for a `_Stalling` bot, once `count` are."""
    await until(lambda: len(list(marks.iterdir())) >= count)
    return sorted(int(mark.name) for mark in marks.iterdir())


async def search(bot: Bot, game: Game, options: Sequence[Action], answers: list[Action]) -> None:
    """`bot`'s answer, into `answers`."""
    answers.append(await think(bot, game, options, 2))


def worker_pids(caplog: pytest.LogCaptureFixture) -> list[int]:
    return [
        int(r.getMessage().rsplit(" ", 1)[1])
        for r in caplog.records
        if "decided in worker process" in r.getMessage()
    ]


@pytest.mark.trio
async def test_inside_a_server_the_search_runs_in_another_process_and_answers_legally(
    caplog: pytest.LogCaptureFixture,
) -> None:
    game = a_decision()
    options = game.legal_actions()
    with trio.fail_after(GAME_HANG):
        async with search_processes():
            seeded = await think(Bot("ismcts", seed="s", iterations=40), game, options, 7)
            again = await think(Bot("ismcts", seed="s", iterations=40), game, options, 7)
        in_a_thread = await think(Bot("ismcts", seed="s", iterations=40), game, options, 7)
    assert seeded in options
    assert seeded == again == in_a_thread  # a seeded bot decides the same wherever it thinks
    pids = worker_pids(caplog)
    assert len(pids) == 2 and os.getpid() not in pids


@pytest.mark.trio
async def test_an_unseeded_bot_gets_its_randomness_back_moved_on() -> None:
    game = a_decision()
    bot = Bot("ismcts", rng=random.Random(5), iterations=20)
    before = bot.rng_state()
    with trio.fail_after(GAME_HANG):
        async with search_processes():
            await think(bot, game, game.legal_actions(), 7)
    assert bot.rng_state() != before  # else every decision would draw the same numbers


@pytest.mark.trio
async def test_a_killed_worker_costs_one_search_its_process_and_the_pool_is_renewed(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    game = a_decision()
    options = game.legal_actions()
    with trio.fail_after(GAME_HANG):
        async with search_processes(workers=1):
            await think(Bot("ismcts", iterations=5), game, options, 1)  # the worker starts
            (first,) = worker_pids(caplog)
            answers: list[Action] = []
            async with trio.open_nursery() as nursery:
                nursery.start_soon(search, _Stalling(tmp_path), game, options, answers)
                assert await marked(tmp_path, 1) == [first]  # it is thinking there
                os.kill(first, signal.SIGKILL)
            assert answers == [answers[0]] and answers[0] in options  # answered, in a thread
            assert "worker process died" in caplog.text
            await think(Bot("ismcts", iterations=5), game, options, 3)
            assert worker_pids(caplog)[-1] not in (first, os.getpid())  # a new pool's worker


@pytest.mark.trio
async def test_searches_broken_together_renew_the_pool_once(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pools_made: list[object] = []
    new_pool = thinking._Searchers._new_pool

    def counted(workers: int) -> object:
        pools_made.append(new_pool(workers))
        return pools_made[-1]

    monkeypatch.setattr(thinking._Searchers, "_new_pool", staticmethod(counted))
    game = a_decision()
    options = game.legal_actions()
    with trio.fail_after(GAME_HANG):
        async with search_processes(workers=2):
            searchers = thinking._searchers.get()
            broken = searchers.pool
            answers: list[Action] = []
            async with trio.open_nursery() as nursery:
                nursery.start_soon(search, _Stalling(tmp_path), game, options, answers)
                nursery.start_soon(search, _Stalling(tmp_path), game, options, answers)
                thinking_in = await marked(tmp_path, 2)
                assert broken is not None
                assert set(thinking_in) == set(broken._processes)  # one in each worker
                os.kill(thinking_in[0], signal.SIGKILL)
            assert len(answers) == 2 and all(a in options for a in answers)
            assert caplog.text.count("worker process died") == 2
            assert len(pools_made) == 2  # the first, and one new one
            renewed = searchers.pool
            assert renewed is not None and renewed is not broken
            await think(Bot("ismcts", iterations=5), game, options, 3)
            assert searchers.pool is renewed  # the second broken search left it alone
            assert worker_pids(caplog)[-1] in renewed._processes


@pytest.mark.trio
async def test_a_cancelled_search_leaves_at_once_and_no_worker_outlives_the_pool(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    game = a_decision()
    options = game.legal_actions()
    marks, release = tmp_path / "marks", tmp_path / "release"
    marks.mkdir()

    async def cancel_once_searching(scope: trio.CancelScope) -> None:
        await marked(marks, 1)
        scope.cancel()

    with trio.fail_after(GAME_HANG):
        async with search_processes():
            await think(Bot("ismcts", iterations=5), game, options, 1)
            async with trio.open_nursery() as nursery:
                with trio.CancelScope() as waited:
                    nursery.start_soon(cancel_once_searching, waited)
                    await think(_Stalling(marks, release), game, options, 2)
            # Left while its worker still searches: the search cannot end before this.
            assert waited.cancelled_caught
            release.touch()
            searchers = thinking._searchers.get()
            assert searchers.pool is not None
            workers = list(searchers.pool._processes.values())  # (the pool's own list)
        # The pool's shutdown waits for the search under way, a few seconds at
        # most, then lets it end by itself: either way no worker is left once it ends.
        await until(lambda: not any(worker.is_alive() for worker in workers))
    assert workers


def proc_stat(pid: int) -> list[str]:
    """The fields of /proc/PID/stat after the command: state, parent...
    ([] once the process is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return []


def descendants(pid: int) -> set[int]:
    """The processes below `pid` (children, theirs...), from /proc."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        fields = proc_stat(int(entry)) if entry.isdigit() else []
        if len(fields) > 1:  # (gone meanwhile: none)
            parents[int(entry)] = int(fields[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def alive(pid: int) -> bool:
    fields = proc_stat(pid)
    return bool(fields) and fields[0] != "Z"


@pytest.mark.trio
@pytest.mark.parametrize("stop", ["SIGTERM", "SIGKILL"])
async def test_a_server_bot_that_searches_plays_a_verified_game_from_worker_processes(
    tmp_path: Path, stop: str
) -> None:
    server = ServerProcess(tmp_path / "data")
    port = server.start()
    assert server.process is not None
    pid = server.process.pid
    ann = Session(tcp("127.0.0.1", port), "Ann", behaviour=Behaviour(Bot("heuristic")))
    workers: set[int] = set()
    try:
        with trio.fail_after(GAME_HANG):  # (a whole game, its bot thinking 0.2 s a decision)
            async with trio.open_nursery() as nursery:
                await nursery.start(ann.run)
                await ann.request(m.CreateRoom(settings=m.RoomSettings.for_players(2)))
                await ann.request(m.AddBot(strategy="ismcts"))
                await ann.request(m.Ready(ready=True))
                await ann.request(m.StartGame())
                while not game_over(ann):
                    workers |= descendants(pid)
                    await trio.sleep(0.1)
                # (the pool's workers live as long as the server: none is missed
                # however quickly the game went by)
                workers |= descendants(pid)
                assert [v.status for v in ann.state.game.check_end()] == ["ok"] * 2
                assert ann.state.problems == []
                ann.close()
            record_id = ann.state.game.end.record_id
            record = decode_record(await download_record("127.0.0.1", port, record_id))
            assert verify_record(record).ok
    finally:
        if stop == "SIGTERM":
            assert server.terminate() == 0
        else:
            server.kill()
    # the search ran in processes of the server's own (its workers and
    # multiprocessing's resource tracker), and none of them outlives the server, however it stops
    assert len(workers) >= 2, server.log()
    with trio.fail_after(GAME_HANG):
        while any(alive(worker) for worker in workers):
            await trio.sleep(0.1)


class _Unpicklable(Bot):
    """A bot that holds what cannot be sent to another process."""

    def __init__(self) -> None:
        super().__init__("ismcts", seed="u", iterations=20)
        self.lock = threading.Lock()


@pytest.mark.trio
async def test_a_bot_that_cannot_be_sent_thinks_in_a_thread(
    caplog: pytest.LogCaptureFixture,
) -> None:
    game = a_decision()
    options = game.legal_actions()
    with trio.fail_after(GAME_HANG):
        async with search_processes():
            action = await think(_Unpicklable(), game, options, 7)
    assert action == await think(Bot("ismcts", seed="u", iterations=20), game, options, 7)
    assert "cannot think in a process" in caplog.text


def _only_in(pid: int) -> Bot:
    """Unpickles in process `pid` only (elsewhere: as a class another process lacks)."""
    if os.getpid() != pid:
        raise ModuleNotFoundError("No module named 'only_here'")
    return _HereOnly()


class _HereOnly(Bot):
    """A bot that pickles but cannot be loaded in another process."""

    def __init__(self) -> None:
        super().__init__("ismcts", seed="h", iterations=20)

    def __reduce__(self) -> tuple[object, ...]:
        return (_only_in, (os.getpid(),))


class _Failing(Bot):
    """A bot whose `decide` fails (a bug): in a process as it would in a thread."""

    def __init__(self) -> None:
        super().__init__("ismcts", seed="f", iterations=20)

    def decide(self, *args: object) -> Action:
        raise RuntimeError("a bug in decide")


@pytest.mark.trio
async def test_a_bot_that_cannot_be_loaded_in_a_worker_thinks_in_a_thread_and_the_pool_lives(
    caplog: pytest.LogCaptureFixture,
) -> None:
    game = a_decision()
    options = game.legal_actions()
    with trio.fail_after(GAME_HANG):
        async with search_processes():
            for _ in range(3):
                action = await think(_HereOnly(), game, options, 7)
            answers: list[Action] = []
            # the same pool, not a broken one
            await search(Bot("ismcts", iterations=5), game, options, answers)
    assert action == await think(Bot("ismcts", seed="h", iterations=20), game, options, 7)
    assert "cannot be loaded there" in caplog.text and "only_here" in caplog.text
    # Told once: its next decisions went straight to a thread.
    assert caplog.text.count("every _HereOnly thinks in a thread") == 1
    assert "worker process died" not in caplog.text
    assert len(set(worker_pids(caplog))) == 1 and answers[0] in options


@pytest.mark.trio
async def test_a_failure_of_decide_in_a_worker_is_raised_not_tried_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    game = a_decision()
    with trio.fail_after(GAME_HANG):
        async with search_processes():
            with pytest.raises(RuntimeError, match="a bug in decide"):
                await think(_Failing(), game, game.legal_actions(), 7)
    assert "in a thread" not in caplog.text


class _Counting(Bot):
    """A bot whose decisions count how many run at once (`running`: now, at
    most), each lasting until `go` is set."""

    def __init__(self, running: list[int], go: threading.Event) -> None:
        super().__init__("ismcts", seed="c", iterations=20)
        self.running, self.go = running, go
        self.lock = threading.Lock()

    def decide(self, position: Game | None, options: object, turn: int | None) -> Action:
        with self.lock:
            self.running[0] += 1
            self.running[1] = max(self.running[1], self.running[0])
        self.go.wait(GAME_HANG)
        with self.lock:
            self.running[0] -= 1
        return position.legal_actions()[0]


@pytest.mark.trio
async def test_a_search_cancelled_in_a_thread_keeps_its_place_until_it_ends() -> None:
    game = a_decision()
    running = [0, 0]  # now, at most
    go = threading.Event()
    bot = _Counting(running, go)
    limiter = thinking._searchers_of_this_run().limiter

    async def abandon_once_deciding(scope: trio.CancelScope) -> None:
        await until(lambda: running[0] == 1)
        scope.cancel()

    try:
        with trio.fail_after(GAME_HANG):
            async with trio.open_nursery() as nursery:
                with trio.CancelScope() as abandoned:  # its thread goes on until `go`
                    nursery.start_soon(abandon_once_deciding, abandoned)
                    await think(bot, game, game.legal_actions(), 1)
                assert abandoned.cancelled_caught
                for turn in range(2, 2 + thinking.SEARCHES_AT_ONCE):
                    nursery.start_soon(think, bot, game, game.legal_actions(), turn)
                # Each new search decides, or waits for a place: the abandoned
                # one keeps its own, so one of them waits.
                await until(
                    lambda: (
                        running[0] + limiter.statistics().tasks_waiting
                        == 1 + thinking.SEARCHES_AT_ONCE
                    )
                )
                assert running[0] == thinking.SEARCHES_AT_ONCE
                go.set()
            await until(lambda: running[0] == 0)  # (the abandoned thread too)
    finally:
        go.set()  # (no thread left waiting, whatever failed)
    assert running[1] == thinking.SEARCHES_AT_ONCE

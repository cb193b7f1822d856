"""The suite's hang deadlines, in seconds, and `until`, the way a trio test
waits for what other tasks or processes bring about.

A test waits for the event it means (a log line, a file, a screen, a
count), never for time to pass. These deadlines only catch an event that
never comes: a hang. They are generous, so that a machine starved of CPU
(a loaded CI runner, the whole suite on every core) never reaches them;
nothing waits for one to pass, and a passing test never comes near one.
"""

from __future__ import annotations

from collections.abc import Callable

import trio

# One step: a process started (Python, the package), an answer, a file
# written, a tmux command, a screen drawn.
HANG = 120.0

# Something made of many steps: a whole game played through processes, or
# by bots searching in worker processes; a disk scenario; the suite collected.
GAME_HANG = 600.0


async def until(condition: Callable[[], bool], hang: float = GAME_HANG) -> None:
    """Wait until `condition()`, which another task or process makes true
    (polled, as nothing tells of it); `trio.TooSlowError` after `hang`
    seconds, a hang. (Within a test's own, shorter deadline, that one is
    reached first.)"""
    with trio.fail_after(hang):
        while not condition():
            await trio.sleep(0.01)

"""The suite's hang deadlines, in seconds.

A test waits for the event it means (a log line, a file, a screen, a
count), never for time to pass. These deadlines only catch an event that
never comes: a hang. They are generous, so that a machine starved of CPU
(a loaded CI runner, the whole suite on every core) never reaches them;
nothing waits for one to pass, and a passing test never comes near one.
"""

from __future__ import annotations

# One step: a process started (Python, the package), an answer, a file
# written, a tmux command, a screen drawn.
HANG = 120.0

# Something made of many steps: a whole game played through processes, or
# by bots searching in worker processes; a disk scenario; the suite collected.
GAME_HANG = 600.0

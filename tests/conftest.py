"""What every test gets:

- hypothesis without its clocks (no test may depend on the machine's speed);
- the lobby's kept deadlines checked against a scan of every room, at every
  call, so that an input that changes a room's deadline without the lobby
  looking at that room again fails whichever test makes it;
- no network socket and no process unless the test is marked for it (the
  markers `make test-fast` leaves out);
- every value the server makes as trusted (`WireValue.trusted`) checked as
  any other, so that one made wrong fails whichever test makes it;
- the client speaking English (`LANGUAGE=en`), whatever the machine's locale."""

from __future__ import annotations

import multiprocessing.process
import os
import pty
import socket
import subprocess
from collections.abc import Callable, Iterator
from typing import NoReturn

import pytest
from hypothesis import HealthCheck, settings

from oriflamme.protocol import schema
from oriflamme.server.core.lobby import Lobby

schema.CHECK_TRUSTED = True  # (see the module docstring)

# The suite reads the client in English, whatever the tester's locale says
# (LANGUAGE is the first thing `oriflamme.client.i18n.choose` reads, and the
# programs the tests start inherit it). The tests of the other languages say
# theirs: tests/client/tui/test_languages.py, the French game under tmux.
os.environ["LANGUAGE"] = "en"

# Hypothesis times each example (200 ms by default) and the generation of its
# data (HealthCheck.too_slow): on a loaded machine either would fail a test for
# the machine's speed alone, which no test here may depend on. Neither is
# checked, for every test (a test's own @settings start from this profile).
settings.register_profile("any speed", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("any speed")

_kept_deadline = Lobby.next_deadline


def scanned_deadline(lobby: Lobby) -> float | None:
    """`Lobby.next_deadline` as it was before it kept the rooms' deadlines:
    every room asked."""
    times = [t for r in lobby.rooms.values() if (t := r.next_deadline()) is not None]
    config = lobby.config
    times += [
        s.disconnected_at + (config.session_ttl if s.joined else config.lobby_ttl)
        for s in lobby.sessions.away.values()
        if s.disconnected_at is not None and not lobby._held(s)
    ]
    return min(times, default=None)


def _checked_deadline(lobby: Lobby) -> float | None:
    kept = _kept_deadline(lobby)
    scanned = scanned_deadline(lobby)
    assert kept == scanned, f"the lobby kept deadline {kept}, but its rooms say {scanned}"
    return kept


@pytest.fixture(autouse=True, scope="session")
def _a_user_config_of_our_own(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The user's config (client/config.py: the player's name, the servers
    trusted) is this run's, not the machine's: a program a test starts
    (under tmux too: its server takes this environment) finds a name kept,
    so it does not stop to ask for one; a test of the question gives its
    program a config home of its own."""
    home = tmp_path_factory.mktemp("config")
    (home / "oriflamme").mkdir()
    (home / "oriflamme" / "config.toml").write_text('name = "Tester"\n', encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CONFIG_HOME", str(home))
        yield


@pytest.fixture(autouse=True)
def _deadlines_checked(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(Lobby, "next_deadline", _checked_deadline)
    yield


# The markers of the tests that touch the system (`make test-fast` leaves them
# out, with `slow`): a test marked with none of them may not open a network
# socket or start a process, so that the fast loop stays fast and a test that
# needs the network says so.
_SYSTEM_MARKERS = ("network", "process", "terminal")


class UnmarkedTestTouchedTheSystem(AssertionError):
    pass


def _refuse(what: str) -> Callable[..., NoReturn]:
    def refuse(*args: object, **kwargs: object) -> NoReturn:
        raise UnmarkedTestTouchedTheSystem(
            f"this test {what} but is not marked {' or '.join(_SYSTEM_MARKERS)}"
            " (pytest.mark.network, ...): mark it, so that `make test-fast` leaves it out"
        )

    return refuse


# Every way to a new process (each where this platform has it): subprocess,
# fork, spawn, and multiprocessing's workers, whichever their start method.
_PROCESS_STARTS: tuple[tuple[object, str, str], ...] = (
    (subprocess.Popen, "_execute_child", "starts a process"),
    (os, "fork", "forks a process"),
    (os, "forkpty", "forks a process"),
    (pty, "fork", "forks a process"),
    (os, "posix_spawn", "starts a process"),
    (os, "posix_spawnp", "starts a process"),
    (multiprocessing.process.BaseProcess, "start", "starts a process"),
)


@pytest.fixture(autouse=True)
def _fast_tests_stay_in_process(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    if not any(request.node.get_closest_marker(name) for name in _SYSTEM_MARKERS):
        # Sockets as such stay allowed: trio wakes itself with a socket pair.
        for method in ("bind", "connect", "connect_ex"):
            monkeypatch.setattr(socket.socket, method, _refuse("opens a network socket"))
        for owner, name, what in _PROCESS_STARTS:
            if hasattr(owner, name):
                monkeypatch.setattr(owner, name, _refuse(what))
    yield

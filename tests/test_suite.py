"""The suite itself: the same test ids at every collection, which
pytest-xdist needs (each worker collects on its own, and the ids must agree);
and the markers that keep `make test-fast` fast are held to."""

from __future__ import annotations

import multiprocessing
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import UnmarkedTestTouchedTheSystem
from tests.deadlines import GAME_HANG

ROOT = Path(__file__).resolve().parents[1]


def collected_ids(hash_seed: str) -> list[str]:
    """The ids a fresh interpreter collects, with its string hashes seeded by
    `hash_seed` (a set of strings comes out in another order)."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-o",
            "addopts=",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "tests",
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONHASHSEED": hash_seed},
        capture_output=True,
        text=True,
        timeout=GAME_HANG,  # (it takes seconds)
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return [line for line in result.stdout.splitlines() if "::" in line]


@pytest.mark.process
def test_every_collection_gives_the_same_test_ids() -> None:
    first, second = collected_ids("1"), collected_ids("2")
    assert len(first) > 1000
    differ = sorted(set(first) ^ set(second))
    assert not differ, f"ids that change between collections: {differ[:10]}"
    assert first == second, "the same ids, in another order"


def test_an_unmarked_test_may_not_open_a_network_socket_or_start_a_process() -> None:
    """`make test-fast` runs the tests that are not marked network, process or
    terminal: tests/conftest.py holds them to it."""
    with socket.socket() as s, pytest.raises(UnmarkedTestTouchedTheSystem, match="mark it"):
        s.bind(("127.0.0.1", 0))
    with pytest.raises(UnmarkedTestTouchedTheSystem, match="starts a process"):
        subprocess.run(["true"], check=False)
    # Nor by the other ways to a process: os.posix_spawn, multiprocessing...
    if hasattr(os, "posix_spawn"):
        with pytest.raises(UnmarkedTestTouchedTheSystem, match="starts a process"):
            os.posix_spawn("/bin/true", ["true"], os.environ)
    with pytest.raises(UnmarkedTestTouchedTheSystem, match="starts a process"):
        multiprocessing.get_context("spawn").Process(target=print).start()


@pytest.mark.network
def test_a_test_marked_network_may_open_a_socket() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        assert s.getsockname()[1] > 0

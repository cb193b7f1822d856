"""A full disk and a read-only data directory, for real: the server runs
over a small tmpfs of its own, in a private mount namespace (`unshare`), so
the test needs no privilege on the machine. Where the kernel or a sandbox
forbids user namespaces, the tests say so and are skipped.

What the scenarios do is in `disk_scenario.py`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.deadlines import GAME_HANG, HANG

pytestmark = [pytest.mark.network, pytest.mark.process]

SIZE = "4m"  # the tmpfs: room for the server, a game, and little more


def namespaces_work(tmp_path: Path) -> str | None:
    """None if a private tmpfs can be mounted here, else why not."""
    if shutil.which("unshare") is None:
        return "unshare is not installed"
    (tmp_path / "probe").mkdir()
    probe = subprocess.run(
        ["unshare", "-rm", "sh", "-c", 'mount -t tmpfs -o size=64k probe "$0"', tmp_path / "probe"],
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    return None if probe.returncode == 0 else f"no private mount: {probe.stderr.strip()}"


def scenario(name: str, tmp_path: Path, inodes: int | None = None) -> dict[str, Any]:
    why_not = namespaces_work(tmp_path)
    if why_not is not None:
        pytest.skip(why_not)
    mount = tmp_path / "mount"
    mount.mkdir()
    options = f"size={SIZE},mode=0700" + ("" if inodes is None else f",nr_inodes={inodes}")
    script = f'mount -t tmpfs -o {options} oriflamme-test "$0" && exec "$@"'
    done = subprocess.run(
        [
            "unshare",
            "-rm",
            "sh",
            "-c",
            script,
            str(mount),
            sys.executable,
            "-m",
            "tests.network.disk_scenario",
            name,
            str(mount),
            str(tmp_path / "server.log"),
        ],
        capture_output=True,
        text=True,
        # past the scenario's own deadline (`disk_scenario.main`): it says why first
        timeout=GAME_HANG + HANG,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return seen


def test_a_full_disk_stops_the_server_clearly_and_the_game_resumes_once_there_is_room(
    tmp_path: Path,
) -> None:
    seen = scenario("full", tmp_path)
    assert seen["filled_bytes"] > 0
    assert seen["exit_status"] == 2, seen["log"][-2000:]
    assert "oriflamme serve: the database could not be written" in seen["log"]
    assert "database or disk is full" in seen["log"]
    assert "start it again: the games go on" in seen["log"]
    assert "Traceback" not in seen["log"]
    assert not seen["over_when_stopped"]
    assert seen["integrity"] == "ok"
    assert "state restored" in seen["restarted_log"]
    assert seen["checks"] == ["ok"] * 3 and seen["problems"] == []


def test_a_read_only_data_directory_is_refused_clearly_and_left_as_it_was(
    tmp_path: Path,
) -> None:
    seen = scenario("read-only", tmp_path)
    assert seen["stopped"] == 0
    assert not seen["started"] and seen["exit_status"] == 2, seen["log"][-2000:]
    assert "oriflamme serve: cannot use the data directory" in seen["log"]
    assert "Read-only file system" in seen["log"]
    assert "Traceback" not in seen["log"]
    assert seen["unchanged"] and seen["integrity"] == "ok"
    assert seen["rooms"] == ["kept"]


def test_a_disk_out_of_inodes_loses_no_record(tmp_path: Path) -> None:
    seen = scenario("inodes", tmp_path, inodes=64)
    assert seen["files_made"] > 0 and seen["still_full"], seen["log"][-2000:]
    assert seen["stopped"] == 0
    assert seen["verified"], seen["log"][-2000:]
    assert "not written" not in seen["log"]
    assert "Traceback" not in seen["log"]

"""An upgrade from the earlier version, as a host would do it: the server of
an earlier commit (from this repository's history, built with `git
worktree`) plays games part way on a data directory and is stopped (once
with SIGTERM, once with SIGKILL), then this version is started on the
same directory. Stopped by SIGTERM, the earlier version pickled its game in
progress: this version refuses the directory (exit status 2, unchanged),
the earlier version started again lets the game finish, and this version
then converts the directory. Killed, the earlier version left the game in
its journal: this version converts the directory at once, replaying the
journal, and the game goes on. Either way the players play on with this
version. Every record verifies, and the earlier version's records are
still served.

The earlier commit is `EARLIER`: the last whose data directory kept a
pickle of the lobby (schema 3). A clone without it (shallow) skips.

Then the upgrade from the version before this one, `FACTS_DOCUMENT`
(schema 4: the lobby's facts as one document): stopped or killed with a
game in progress, this version reads its facts (and its journal), writes
them as rows (schema 5), and the game goes on to its end."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
import trio

from oriflamme.client.bots import Behaviour, Bot
from oriflamme.client.commands import download_record
from oriflamme.client.session import Session, tcp
from oriflamme.protocol import messages as m
from oriflamme.protocol.record import decode_record
from oriflamme.protocol.verify import verify_record
from oriflamme.server.persistence import DATABASE_FILE, KEY_FILE
from tests.deadlines import GAME_HANG, HANG
from tests.network.server_process import COMMAND, ServerProcess
from tests.network.test_server_restart import KEY, game_over, round_of, start_a_game
from tools.docgen.worked_example import fixed_secrets

pytestmark = [pytest.mark.network, pytest.mark.process]

ROOT = Path(__file__).resolve().parents[2]
EARLIER = "3821d968eecdb4fd62020d1d2fd478da1de6db95"
FACTS_DOCUMENT = "37826043763f1213d82e8c4851cca5ed6a7087a5"  # (the last of schema 4)
PLAYERS = 3

# Runs the earlier version's `oriflamme`: its folders as the `oriflamme`
# namespace, first on the path, and the venv's libraries (without `site`,
# which would put this checkout's editable install before it).
RUN_EARLIER = (
    "import sys, importlib; packages, libraries, cli = sys.argv[1:4];"
    " sys.path[:0] = [packages, libraries];"
    " sys.argv = ['oriflamme', *sys.argv[4:]];"
    " sys.exit(importlib.import_module(cli).main())"
)


def git(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=HANG, check=False
    )


def built(commit: str, folders: tuple[str, ...], cli: str, where: Path) -> Iterator[list[str]]:
    """The command that runs the `oriflamme` of `commit` (its `folders` as
    the package, `cli` its command line's module), built in `where`."""
    if shutil.which("git") is None:
        pytest.skip("no git here: the earlier version is built from the repository's history")
    if git("cat-file", "-e", f"{commit}^{{commit}}").returncode != 0:
        pytest.skip(f"this clone lacks commit {commit[:10]} (shallow?): no earlier version")
    tree = where / f"tree-{os.getpid()}"  # (its own name: workers add theirs at once)
    added = git("worktree", "add", "--detach", str(tree), commit)
    assert added.returncode == 0, added.stderr
    try:
        namespace = where / "packages" / "oriflamme"
        namespace.mkdir(parents=True)
        for folder in folders:
            (namespace / folder).symlink_to(tree / folder)
        libraries = sysconfig.get_paths()["purelib"]
        yield [sys.executable, "-S", "-c", RUN_EARLIER, str(namespace.parent), libraries, cli]
    finally:
        git("worktree", "remove", "--force", str(tree))
        git("worktree", "prune")


@pytest.fixture(scope="module")
def earlier(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    """The command that runs the earlier version's `oriflamme` (schema 3)."""
    yield from built(
        EARLIER,
        ("engine", "protocol", "server", "client"),
        "oriflamme.client.cli",
        tmp_path_factory.mktemp("earlier"),
    )


@pytest.fixture(scope="module")
def facts_document(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    """The command that runs the `oriflamme` of schema 4 (facts, one document)."""
    yield from built(
        FACTS_DOCUMENT,
        ("engine", "protocol", "server", "client", "launcher"),
        "oriflamme.launcher.cli",
        tmp_path_factory.mktemp("facts-document"),
    )


def data_dir(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    (data / KEY_FILE).write_bytes(KEY)
    (data / KEY_FILE).chmod(0o600)
    return data


def servers(tmp_path: Path, earlier: list[str]) -> tuple[Path, ServerProcess, ServerProcess]:
    """A data directory, the server of `earlier` started on it, and this
    version's, not started, to listen on the same port."""
    data = data_dir(tmp_path)
    old = ServerProcess(data, command=earlier, log_path=tmp_path / "earlier.log")
    port = old.start(timeout=2 * HANG)
    return data, old, ServerProcess(data, port=port, log_path=tmp_path / "this.log")


def players(port: int, label: str) -> list[Session]:
    """The players, random and heuristic bots, each with its secrets from
    `label` (the port stays the same across the servers)."""
    return [
        Session(
            tcp("127.0.0.1", port),
            f"p{i}",
            behaviour=Behaviour(Bot(["random", "heuristic"][i % 2], seed=f"{label} {i}")),
            make_secrets=fixed_secrets(f"{label} player {i}"),
        )
        for i in range(PLAYERS)
    ]


def this_version_refuses(data: Path, port: int) -> str:
    """This version's `serve` on `data`: it must exit at once, with status 2;
    what it said."""
    done = subprocess.run(
        [*COMMAND, "serve", "--port", str(port), "--data-dir", str(data)],
        capture_output=True,
        text=True,
        timeout=HANG,
        check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    return done.stderr


@pytest.mark.trio
@pytest.mark.parametrize("stop", ["SIGTERM", "SIGKILL"])
async def test_an_upgrade_from_the_earlier_version_finishes_every_game(
    tmp_path: Path, earlier: list[str], stop: str
) -> None:
    data, old, new = servers(tmp_path, earlier)
    port = new.port

    def stopped(server: ServerProcess) -> None:
        if stop == "SIGTERM":
            assert server.terminate() == 0
        else:
            server.kill()

    sessions = players(port, "upgrade")
    host = sessions[0]
    records: list[str] = []
    try:
        with trio.fail_after(3 * GAME_HANG):  # (two games, four server starts)
            async with trio.open_nursery() as nursery:
                for s in sessions:
                    await nursery.start(s.run)
                await start_a_game(sessions)
                await host.wait_until(lambda: round_of(host) >= 2 or game_over(host))
                assert not game_over(host)
                stopped(old)
                if stop == "SIGTERM":
                    # The earlier version pickled the game as it stopped: this
                    # version cannot take it up (no log), and says so.
                    before = (data / DATABASE_FILE).read_bytes()
                    said = this_version_refuses(data, port)
                    assert "earlier version of the server (schema 3)" in said
                    assert "1 game(s)" in said and "Nothing was changed" in said
                    assert (data / DATABASE_FILE).read_bytes() == before
                    # The earlier version again: the game finishes there.
                    old.start(timeout=2 * HANG)
                    for s in sessions:
                        await s.wait_until(partial(game_over, s))
                        assert s.state.problems == []
                    records.append(host.state.game.end.record_id)
                    stopped(old)
                else:
                    # Killed, it left the game in its journal, not its pickle:
                    # this version replays the journal (each decision checked
                    # by its digest), and so has the game's log: it converts
                    # the directory, and the game goes on.
                    new.start(timeout=2 * HANG)
                    new.wait_for_log(rb"was converted")
                    for s in sessions:
                        await s.wait_until(partial(game_over, s))
                        assert s.state.problems == []
                    records.append(host.state.game.end.record_id)
                    new.kill()

                # This version (converting the directory, after SIGTERM); the
                # players go on with it.
                new.start(timeout=2 * HANG)
                if stop == "SIGTERM":
                    new.wait_for_log(rb"was converted")
                for s in sessions:
                    await s.request(m.Ready(ready=True))
                await host.request(m.StartGame())
                first = records[0]

                def next_game_over(s: Session) -> bool:
                    return game_over(s) and s.state.game.end.record_id != first

                for s in sessions:
                    await s.wait_until(partial(next_game_over, s))
                    assert s.state.problems == []
                records.append(host.state.game.end.record_id)
                for s in sessions:
                    s.close()
            for record_id in records:  # (the earlier version's too, from this one)
                record = decode_record(await download_record("127.0.0.1", port, record_id))
                assert verify_record(record).ok, record_id
    finally:
        old.stop()
        new.stop()
    assert "Traceback" not in new.log()


@pytest.mark.trio
@pytest.mark.parametrize("stop", ["SIGTERM", "SIGKILL"])
async def test_an_upgrade_from_facts_as_one_document_goes_on_with_the_game(
    tmp_path: Path, facts_document: list[str], stop: str
) -> None:
    data, old, new = servers(tmp_path, facts_document)
    port = new.port
    sessions = players(port, "rows")
    host = sessions[0]
    try:
        with trio.fail_after(2 * GAME_HANG):
            async with trio.open_nursery() as nursery:
                for s in sessions:
                    await nursery.start(s.run)
                await start_a_game(sessions)
                await host.wait_until(lambda: round_of(host) >= 2 or game_over(host))
                assert not game_over(host)
                if stop == "SIGTERM":
                    assert old.terminate() == 0  # (its facts, the game among them)
                else:
                    old.kill()  # (its facts, and the journal since)
                new.start(timeout=2 * HANG)
                new.wait_for_log(rb"were written as rows")
                for s in sessions:
                    await s.wait_until(partial(game_over, s))
                    assert s.state.problems == []
                record_id = host.state.game.end.record_id
                for s in sessions:
                    s.close()
            record = decode_record(await download_record("127.0.0.1", port, record_id))
            assert verify_record(record).ok
    finally:
        old.stop()
        new.stop()
    assert "Traceback" not in new.log()
    new.start(timeout=2 * HANG)  # (rows now: read as they are)
    try:
        assert b"were written as rows" not in new.log_path.read_bytes()[new.offset :]
    finally:
        new.stop()

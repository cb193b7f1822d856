"""Servers over one store, as a host runs them: killed mid-game and started
again, against either store; and two servers, one after the other, on one
PostgreSQL database (the second elsewhere: another data directory, with the
first one's key), the games going on."""

from __future__ import annotations

import subprocess
from functools import partial
from pathlib import Path

import pytest
import trio

from oriflamme.client.bots import Behaviour, Bot
from oriflamme.client.commands import download_record
from oriflamme.client.session import Session, tcp
from oriflamme.launcher import cli
from oriflamme.protocol.record import Record, decode_record
from oriflamme.protocol.verify import verify_record
from oriflamme.server.persistence import KEY_FILE
from tests.deadlines import GAME_HANG, HANG
from tests.network.server_process import COMMAND, ServerProcess
from tests.network.test_server_restart import KEY, PLAYERS, game_over, round_of, start_a_game
from tests.stores import Place, place, postgresql
from tools.docgen.worked_example import fixed_secrets

__all__ = ["place", "postgresql"]  # (the fixtures, for pytest)

pytestmark = [pytest.mark.network, pytest.mark.process]


def keyed(directory: Path) -> Path:
    directory.mkdir()
    (directory / KEY_FILE).write_bytes(KEY)
    (directory / KEY_FILE).chmod(0o600)
    return directory


async def one_game(servers: list[ServerProcess], kill_in_rounds: list[int]) -> Record:
    """One game of reproducible players on `servers[0]`; at each round of
    `kill_in_rounds` the server running is killed, and the next of `servers`
    (on the same port) takes over."""
    port = servers[0].start()
    sessions = [
        Session(
            tcp("127.0.0.1", port),
            f"p{i}",
            behaviour=Behaviour(Bot(["random", "heuristic"][i % 2], seed=f"player {i}")),
            make_secrets=fixed_secrets(f"restart player {i}"),
        )
        for i in range(PLAYERS)
    ]
    running = servers[0]
    async with trio.open_nursery() as nursery:
        for s in sessions:
            await nursery.start(s.run)
        host = sessions[0]
        await start_a_game(sessions)
        for n, round_ in enumerate(kill_in_rounds, 1):

            def reached(r: int = round_) -> bool:
                return round_of(host) >= r or game_over(host)

            await host.wait_until(reached)
            assert not game_over(host)
            running.kill()
            running = servers[n % len(servers)]
            running.port = port
            running.start()
        for s in sessions:
            await s.wait_until(partial(game_over, s))
            assert s.state.problems == []
            s.close()
    data = await download_record("127.0.0.1", port, host.state.game.end.record_id)
    return decode_record(data)


@pytest.mark.trio
async def test_a_server_killed_mid_game_finishes_it_as_if_not_on_either_store(
    tmp_path: Path, place: Place
) -> None:
    options = () if place.database is None else ("--database", place.database)
    calm = ServerProcess(keyed(tmp_path / "calm"))  # (SQLite: the same game, calmly)
    killed = ServerProcess(keyed(tmp_path / "killed"), options=options)
    try:
        with trio.fail_after(GAME_HANG):
            calm_record = await one_game([calm], [])
            killed_record = await one_game([killed], [1, 3])
    finally:
        calm.stop()
        killed.stop()
    assert verify_record(killed_record).ok
    assert killed_record.game_id == calm_record.game_id
    assert killed_record.results == calm_record.results
    assert [e.action for e in killed_record.log] == [e.action for e in calm_record.log]


@pytest.mark.trio
async def test_two_servers_one_after_the_other_on_one_postgresql_database(
    tmp_path: Path, postgresql: Place
) -> None:
    assert postgresql.database is not None
    options = ("--database", postgresql.database)
    first = ServerProcess(keyed(tmp_path / "here"), options=options)
    second = ServerProcess(keyed(tmp_path / "elsewhere"), options=options)
    try:
        with trio.fail_after(GAME_HANG):
            record = await one_game([first, second], [2, 4])
    finally:
        first.stop()
        second.stop()
    assert verify_record(record).ok
    assert first.starts == 2 and second.starts == 1
    assert "state restored" in second.log()
    # A second server while the first runs is refused: one at a time.
    first.start()
    try:
        refused = ServerProcess(keyed(tmp_path / "third"), options=options)
        with pytest.raises(AssertionError, match="another server is using the database"):
            refused.start()
    finally:
        first.stop()
    # Its records come out of the database as files (a server may be running).
    out = tmp_path / "records"
    export = ["export-records", str(tmp_path / "here"), str(out), *options]
    assert cli.main(export) == 0
    (exported,) = out.iterdir()
    assert exported.name == f"{record.game_id.hex()}.oriflamme"
    assert verify_record(decode_record(exported.read_bytes())).ok


def test_a_database_that_cannot_be_reached_exits_4_with_the_reason(tmp_path: Path) -> None:
    # (no PostgreSQL listens there: as when it is down, or restarting)
    url = f"postgresql://oriflamme@/postgres?host={tmp_path}&connect_timeout=5"
    done = subprocess.run(
        [*COMMAND, "serve", "--port", "0", "--data-dir", str(keyed(tmp_path / "data"))]
        + ["--database", url],
        capture_output=True,
        text=True,
        timeout=HANG,
        check=False,
    )
    assert done.returncode == 4, done.stderr
    assert "cannot connect to the database" in done.stderr
    assert "Traceback" not in done.stderr

"""deploy/README.md's restore procedure, end to end, with games in progress:
a server process, bots playing in two rooms over TCP (`run_bot`), `oriflamme
backup` taken mid-game, play going on until every game in progress at the
backup has finished, the server SIGKILLed, the backup put in place of the
data directory, the server started again. The restored server is behind
what the bots saw (games they saw end are in play again, placements they
made are unknown to it): every bot reconciles, plays on and finishes its
games, and every record of the restored server verifies (docs/CLIENT.md,
"Connections that drop, and bots started again").

Every wait is for an event (a log line, a count, a room's state), within a
deadline of tests/deadlines.py."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import trio

from oriflamme.client.bots import Think
from oriflamme.client.commands import GameResult, list_rooms, run_bot
from oriflamme.client.state import WENT_BACK
from oriflamme.launcher import cli
from oriflamme.protocol.verify import verify_record_bytes
from tests.deadlines import GAME_HANG, HANG, until
from tests.network.server_process import COMMAND, ServerProcess

pytestmark = pytest.mark.network

ROOMS = ("north", "south")
PLAYERS = 3
# Each bot's: the one in play at the backup, and more, so that every bot is
# still playing when the server is killed (a bot gone could not come back
# to its game).
GAMES = 4
# A searching bot thinks this long a decision: a game lasts seconds, so
# that the backup, taken as soon as every room plays, is taken mid-game.
THINK = Think(seconds=0.04)


def _counts(results: list[GameResult]) -> dict[str, int]:
    """How many games each bot reported."""
    counts: dict[str, int] = {}
    for r in results:
        if r.seat is not None:
            counts[r.names[r.seat]] = counts.get(r.names[r.seat], 0) + 1
    return counts


async def _cli(*args: str) -> None:
    """An `oriflamme` command, as an administrator runs it."""
    done = await trio.run_process([*COMMAND, *args], capture_stdout=True, capture_stderr=True)
    assert done.returncode == 0, done.stderr.decode(errors="replace")


@pytest.mark.trio
async def test_a_server_restored_from_a_backup_mid_game_has_every_game_finish(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="oriflamme.client")
    data, copy = tmp_path / "data", tmp_path / "backup"
    server = ServerProcess(data)
    results: list[GameResult] = []
    played: dict[str, int] = {}
    try:
        port = await trio.to_thread.run_sync(server.start)
        with trio.fail_after(GAME_HANG):
            async with trio.open_nursery() as nursery:

                async def bot(name: str, room: str) -> None:
                    played[name] = await run_bot(
                        "127.0.0.1",
                        port,
                        room=room,
                        strategy="ismcts",
                        think=THINK,
                        games=GAMES,
                        name=name,
                        players=PLAYERS,
                        state_dir=tmp_path / name,
                        seed=len(played),
                        on_game=results.append,
                    )

                for room in ROOMS:
                    for i in range(PLAYERS):
                        nursery.start_soon(bot, f"{room}-{i}", room)

                async def every_room_playing() -> bool:
                    listed = await list_rooms("127.0.0.1", port)
                    rooms = [r for r in listed.rooms if r.name in ROOMS]
                    return len(rooms) == len(ROOMS) and all(r.state == "playing" for r in rooms)

                with trio.fail_after(HANG):
                    while not await every_room_playing():
                        await trio.sleep(0.05)
                # Mid-game: the backup, as deploy/README.md takes it (the
                # command, run here: a process would take a second to start).
                at_backup = len(results)
                bots = {f"{r}-{i}" for r in ROOMS for i in range(PLAYERS)}

                def reported_since_backup() -> set[str]:
                    return {r.names[r.seat] for r in results[at_backup:] if r.seat is not None}

                argv = ["backup", str(data), str(copy)]
                assert await trio.to_thread.run_sync(cli.main, argv) == 0
                # Play goes on: every game in play at the backup finishes
                # (each bot reports one more), and the next ones begin.
                await until(lambda: reported_since_backup() == bots)
                assert all(n < GAMES for n in _counts(results).values()), _counts(results)
                await trio.to_thread.run_sync(server.kill)
                # The restore: the copy in place of the data directory.
                data.rename(tmp_path / "lost")
                copy.rename(data)
                await trio.to_thread.run_sync(server.start)
        # Every bot came back and finished its games, none with an error.
        assert played == {f"{r}-{i}": GAMES for r in ROOMS for i in range(PLAYERS)}
        assert all(r.verdict is not None and r.verdict.ok for r in results), [
            r.verdict.reasons() if r.verdict else r.unchecked for r in results
        ]
        # The bots saw the server go back, and said so.
        said = [r.getMessage() for r in caplog.records]
        assert any(WENT_BACK in line for line in said)
        assert not any("already placed" in line for line in said)
    finally:
        await trio.to_thread.run_sync(server.stop)
    # Every game the restored server finished has a record that verifies:
    # none with a seat forfeited for being away at its final reveal.
    await _cli("export-records", str(data), str(tmp_path / "records"))
    records = sorted((tmp_path / "records").iterdir())
    assert len(records) >= len(ROOMS) * GAMES
    for path in records:
        verdict = verify_record_bytes(path.read_bytes())
        assert verdict.ok, (path.name, verdict.reasons())
    assert "Traceback" not in server.log(), server.log()

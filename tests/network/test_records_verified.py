"""A finished game's record is verified off the task that runs the rooms.

The referee gives each seat's verdict from what it checked as the game went
on (`verify.seat_verdicts`), without replaying the game; the whole record is
verified as `oriflamme verify` does once it is stored, in a worker thread
(`NetServer._check_records`), and one the verifier finds otherwise is logged
as a fault of the server."""

from __future__ import annotations

import ast
import logging
import random
from dataclasses import replace
from pathlib import Path

import pytest
import trio

from oriflamme.client.bots import Bot
from oriflamme.launcher.inprocess import InProcess
from oriflamme.protocol import messages as m
from oriflamme.protocol.record import FORFEITED, SeatVerdict
from oriflamme.protocol.verify import verify_record
from oriflamme.server.core import GameFinished, Gateway, ServerConfig
from oriflamme.server.core.entropy import KeyedEntropy
from oriflamme.server.core.journal import JournaledLobby
from oriflamme.server.net import NetServer
from tests.deadlines import HANG
from tests.network.test_facts_stored import a_game_then_a_chat_line

pytestmark = [pytest.mark.network]

ROOT = Path(__file__).resolve().parents[2]


def finished_game(seed: int) -> GameFinished:
    """A 3-seat game played to its end through the server's core."""
    world = InProcess(seed=seed)
    host = world.connect("Ann", bot=Bot("random", rng=random.Random(seed)))
    settings = m.RoomSettings(players=3, variant="standard", edition="revised", first_player="host")
    for request in (
        m.CreateRoom(settings=settings),
        m.AddBot(strategy="heuristic"),
        m.AddBot(strategy="random"),
        m.Ready(ready=True),
        m.StartGame(),
    ):
        host.send(request)
    world.run(lambda: bool(world.records))
    return world.records[0]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_referees_verdicts_are_the_verifiers(seed: int) -> None:
    finished = finished_game(seed)
    found = verify_record(finished.record)
    assert found.ok, found.problems
    assert found.seats == finished.record.verdicts


@pytest.mark.trio
async def test_a_record_that_does_not_verify_is_logged_as_a_fault_of_the_server(
    caplog: pytest.LogCaptureFixture,
) -> None:
    good = finished_game(4)
    record = good.record
    # A verdict the referee got wrong (a bug of ours, made here by hand).
    wrong = (SeatVerdict(0, FORFEITED, "invented"), *record.verdicts[1:])
    bad = replace(good, record=replace(record, verdicts=wrong))
    lobby = JournaledLobby(KeyedEntropy(bytes(32)), ServerConfig())
    server = NetServer(Gateway(lobby), bots=None)
    caplog.set_level(logging.DEBUG, logger="oriflamme.server")
    with trio.fail_after(HANG):
        await server._check_records([good, bad])
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1, errors
    assert record.game_id.hex() in errors[0]
    assert bad.record_id in errors[0]
    assert "does not verify" in errors[0] and "invented" in errors[0]
    verified = [r.getMessage() for r in caplog.records if "verified" in r.getMessage()]
    assert verified == [f"record {good.record_id} verified"]


def test_the_core_never_replays_a_record() -> None:
    """`verify_record` replays a whole game: the task that runs the rooms
    does not call it (read from the source of `server.core`)."""
    callers = []
    for path in sorted((ROOT / "server" / "core").glob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.ImportFrom):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.Name | ast.Attribute):
                names = [node.id if isinstance(node, ast.Name) else node.attr]
            if {"verify_record", "verify_record_bytes"} & set(names):
                callers.append(f"{path.name}:{getattr(node, 'lineno', '?')}")
    assert callers == []


@pytest.mark.trio
async def test_a_server_with_a_store_verifies_each_record_it_keeps(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="oriflamme.server")
    _, _, records = await a_game_then_a_chat_line(tmp_path / "data")
    (finished,) = records
    # (the check runs once the record is stored, beside the game's end)
    assert f"record {finished.record_id} verified" in caplog.text
    assert "does not verify" not in caplog.text

"""`oriflamme bot` tells each game's result: the scores by seat and name, the
winner, the record's id and whether the record verifies. A real server on
127.0.0.1 (in this process), two bots of `run_bot` and one `oriflamme bot`
command (in a thread: it runs trio itself); every wait has a deadline."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

from oriflamme.client.commands import GameResult, run_bot
from oriflamme.launcher import cli
from oriflamme.protocol.record import decode_record
from oriflamme.server.app import ServeOptions, serve
from tests.deadlines import GAME_HANG

pytestmark = pytest.mark.network

GAMES = 2


@asynccontextmanager
async def server(data_dir: Path) -> AsyncIterator[int]:
    stop = trio.Event()
    options = ServeOptions(host="127.0.0.1", port=0, data_dir=data_dir, stop=stop, discovery=False)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(serve, options, None)  # (no bot host: no server bots)
        yield port
        stop.set()


@pytest.mark.trio
async def test_the_bot_command_prints_each_games_scores_winner_record_and_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results: dict[str, list[GameResult]] = {"ann": [], "bob": []}
    codes: list[int] = []
    with trio.fail_after(GAME_HANG):  # (whole games)
        async with server(tmp_path / "server") as port:

            async def bot(name: str, seed: int) -> None:
                await run_bot(
                    "127.0.0.1",
                    port,
                    room="results",
                    games=GAMES,
                    name=name,
                    seed=seed,
                    on_game=results[name].append,
                )

            def command() -> None:
                argv = ["bot", f"127.0.0.1:{port}", "--room", "results", "--name", "cli bot"]
                codes.append(cli.main([*argv, "--games", str(GAMES), "--strategy", "random"]))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(bot, "ann", 1)
                nursery.start_soon(bot, "bob", 2)
                await trio.to_thread.run_sync(command, abandon_on_cancel=True)
    out = capsys.readouterr().out
    assert codes == [0], out
    assert cli.main(["export-records", str(tmp_path / "server"), str(tmp_path / "exported")]) == 0
    records = {
        p.stem: decode_record(p.read_bytes()) for p in (tmp_path / "exported").glob("*.oriflamme")
    }
    assert len(records) == GAMES
    games = re.split(r"(?m)^(?=game \d+: )", out)
    assert games[0] == "" and games[-1].endswith(f"\n{GAMES} game(s) played\n"), out
    seen = []
    for number, text in enumerate(games[1:], 1):
        lines = text.splitlines()
        head = re.fullmatch(rf"game {number}: record ([0-9a-f]{{32}})", lines[0])
        assert head is not None, text
        record = records[head[1]]
        seen.append(head[1])
        names = [s.name for s in record.seats]
        assert sorted(names) == ["ann", "bob", "cli bot"]
        res = record.results
        for seat, (name, score) in enumerate(zip(names, res.scores, strict=True)):
            line = lines[1 + seat]
            assert re.match(rf"  seat {seat}  {name} +{score} points\b", line), line
            assert ("winner" in line or "shared win" in line) == (seat in res.winners), line
            assert line.endswith("(this bot)") == (name == "cli bot"), line
        assert lines[1 + len(names)] == (
            "  verified: VALID (every seat verified, the replay reproduces the record)"
        )
    assert sorted(seen) == sorted(records)
    # What `run_bot` hands over, game by game, is what the command prints.
    for name, got in results.items():
        assert [r.number for r in got] == list(range(1, GAMES + 1))
        assert [r.record_id for r in got] == seen
        for r in got:
            record = records[r.record_id]
            assert r.seat is not None and r.names[r.seat] == name
            assert r.names == tuple(s.name for s in record.seats)
            assert r.scores == record.results.scores and r.winners == record.results.winners
            assert r.verdict is not None and r.verdict.ok and r.unchecked is None

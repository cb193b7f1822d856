"""`oriflamme bot` always finishes: a bot process killed (SIGKILL) between
its last message of a game (its final reveal) and the game's end, and
started again with the same command, comes back to the game over: it counts
it once, prints its result like any other, deletes its secrets once the
record verifies, and goes on to the games it has left, or exits. A client
coming back to a game over whose secrets it deleted writes none again.

Real processes: `oriflamme serve` and three `oriflamme bot`s; the bot that
is killed reaches the server through a proxy in the test
(tests/network/proxy.py), which sees its final reveal go by, kills the bot
before it passes the message on, and passes nothing back to it: the game
ends (the server has the reveal) while the bot is gone. Every wait has a
deadline, and waits for the event it means."""

from __future__ import annotations

import re
import signal
from pathlib import Path
from typing import Any

import pytest
import trio

from oriflamme.client.bots import Behaviour, Bot
from oriflamme.client.secret_store import SecretStore
from oriflamme.client.session import Backoff, Session
from oriflamme.protocol import messages as m
from oriflamme.server.core import GameFinished, Gateway, Lobby, ServerConfig
from oriflamme.server.net import NetServer
from tests.deadlines import GAME_HANG, HANG, until
from tests.network.server_process import COMMAND, ServerProcess

from .proxy import LAST, Proxy
from .test_sessions import memory_connector

pytestmark = [pytest.mark.network, pytest.mark.process]


async def start_bot(port: int, name: str, games: int, tmp_path: Path) -> trio.Process:
    out = (tmp_path / f"{name}.out").open("ab")
    err = (tmp_path / f"{name}.err").open("ab")
    with out, err:
        return await trio.lowlevel.open_process(
            [
                *COMMAND,
                "bot",
                f"127.0.0.1:{port}",
                "--room",
                "finish",
                "--players",
                "3",
                "--games",
                str(games),
                "--strategy",
                "random",
                "--name",
                name,
                "--state-dir",
                str(tmp_path / name),
                "--log-level",
                "info",
            ],
            stdout=out,
            stderr=err,
        )


def said(tmp_path: Path, name: str, stream: str = "out") -> str:
    return (tmp_path / f"{name}.{stream}").read_text()


def secrets_of(state_dir: Path) -> list[Path]:
    return sorted((state_dir / "games").glob("*.secrets"))


@pytest.mark.trio
@pytest.mark.parametrize("games", [1, 2])
async def test_a_bot_killed_after_its_final_reveal_counts_the_game_when_started_again(
    served: ServerProcess, tmp_path: Path, games: int
) -> None:
    bots: list[trio.Process] = []
    killed: list[list[Path]] = []  # bot0's secrets files when it was killed

    def watch(frame: dict[str, Any]) -> str | None:
        if frame.get("type") != "final_reveal" or killed:
            return None
        killed.append(secrets_of(tmp_path / "bot0"))
        bots[0].send_signal(signal.SIGKILL)  # before its reveal reaches the server
        return LAST  # the reveal goes on; nothing more comes back to it

    proxy = Proxy(served.port, watch)
    try:
        with trio.fail_after(GAME_HANG):  # (games through processes)
            async with trio.open_nursery() as nursery:
                through = await nursery.start(proxy.serve)
                bots.append(await start_bot(through, "bot0", games, tmp_path))
                for name in ("bot1", "bot2"):
                    bots.append(await start_bot(served.port, name, games, tmp_path))
                assert await bots[0].wait() == -signal.SIGKILL
                assert len(killed[0]) == 1  # its secrets: the game was not over yet
                (tmp_path / "bot0.out").rename(tmp_path / "bot0-killed.out")
                # The others tell the game's result once it is over: it ended
                # while bot0 was away.
                await until(lambda: all("game 1: " in said(tmp_path, n) for n in ("bot1", "bot2")))
                bots.append(await start_bot(through, "bot0", games, tmp_path))
                for bot in bots[1:3]:
                    assert await bot.wait() == 0
                with trio.fail_after(HANG):  # (alone now: nobody plays another game with it)
                    code = await bots[3].wait()
                assert code == 0, said(tmp_path, "bot0", "err")
                nursery.cancel_scope.cancel()
    finally:
        for bot in bots:
            if bot.returncode is None:
                bot.kill()
                with trio.move_on_after(HANG):
                    await bot.wait()
    # Its first game was the others' first game, ended while it was away:
    # counted once, told like any other, verified.
    records = [
        re.findall(r"(?m)^game \d+: record (\w+)$", said(tmp_path, n)) for n in ("bot1", "bot2")
    ]
    assert len(records[0]) == games and records[0] == records[1]
    out = said(tmp_path, "bot0")
    assert re.findall(r"(?m)^game \d+: record (\w+)$", out) == records[0], out
    assert out.count("verified: VALID") == games and out.endswith(f"\n{games} game(s) played\n")
    assert "the game ended while this bot was away" in said(tmp_path, "bot0", "err")
    assert "game " not in said(tmp_path, "bot0-killed")  # (its game was not over when killed)
    # Every game verified: no secrets are left, nor the tally (all played).
    for name in ("bot0", "bot1", "bot2"):
        assert secrets_of(tmp_path / name) == [], name
        assert not (tmp_path / name / "bot-games.json").exists()


def dealt(session: Session) -> bool:
    game = session.state.game
    return game is not None and game.server_seed is not None


@pytest.mark.trio
async def test_a_client_back_to_a_game_over_whose_secrets_went_writes_none_again(
    autojump_clock: trio.abc.Clock, tmp_path: Path
) -> None:
    """Its secrets deleted once the record verified, a client started again
    (the same state directory) comes back to the game over: the snapshot's
    `game_started` gives it a seat of that game, whose secrets it neither
    has nor needs, and writes none."""
    records: list[GameFinished] = []
    server = NetServer(Gateway(Lobby(ServerConfig())), bots=None, on_record=records.append)
    with trio.fail_after(10_000):  # (seconds of the mock clock)
        async with trio.open_nursery() as nursery:
            await nursery.start(server.run)
            connect = memory_connector(server, nursery)

            def player(name: str, seed: int) -> Session:
                store = SecretStore(tmp_path / name)
                behaviour = Behaviour(Bot("random", seed=f"{name} {seed}"))
                return Session(
                    connect,
                    name,
                    server="test",
                    store=store,
                    behaviour=behaviour,
                    backoff=Backoff(first=0.5, most=2),
                )

            ann, bob = player("ann", 0), player("bob", 1)
            for session in (ann, bob):
                await nursery.start(session.run)
            await ann.request(m.CreateRoom(settings=m.RoomSettings.for_players(2)))
            assert ann.state.room is not None
            await bob.request(m.JoinRoom(room=ann.state.room.room))
            for session in (ann, bob):
                await session.request(m.Ready(ready=True))
            await ann.request(m.StartGame())
            await ann.wait_until(lambda: dealt(ann))
            game = ann.state.game
            assert game is not None and game.end is None
            assert secrets_of(tmp_path / "ann")  # kept while it is played
            await ann.wait_until(lambda: game.end is not None)
            assert game.seat is not None
            SecretStore(tmp_path / "ann").forget(game.game_id, game.seat)  # (its record verified)
            assert secrets_of(tmp_path / "ann") == []
            ann.close()
            again = player("ann", 0)
            await nursery.start(again.run)
            await again.request(m.Ping())  # (the snapshot is in)
            back = again.state.game
            assert back is not None and back.game_id == game.game_id and back.end is not None
            assert secrets_of(tmp_path / "ann") == []
            nursery.cancel_scope.cancel()
    assert len(records) == 1

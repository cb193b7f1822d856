"""A finished game's secrets are deleted from the state directory once its
record verifies, by the terminal client (`play`, `join`: `driver.drive`)
and by `oriflamme bot` (`run_bot`); they are kept while the game is played,
and when the record does not verify (what the seat really held stays on
record). A real `NetServer` on 127.0.0.1 in this process, serving its
records; every wait has a deadline and waits for what it means."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path

import pytest
import trio

from oriflamme.client import commands
from oriflamme.client.bots import Behaviour, Bot
from oriflamme.client.commands import GameResult, run_bot
from oriflamme.client.secret_store import SecretStore
from oriflamme.client.session import Session, tcp
from oriflamme.client.tui import driver
from oriflamme.client.tui.app import Bridge
from oriflamme.client.tui.screens import Screens
from oriflamme.protocol import messages as m
from oriflamme.protocol.verify import GameVerdict
from oriflamme.server.core import ServerConfig
from tests.deadlines import GAME_HANG, HANG, until

from .test_lost_answers import FAST, serving

pytestmark = pytest.mark.network

FORGED = GameVerdict((), ("made up for this test: the record does not verify",))


def secrets_of(state_dir: Path) -> list[Path]:
    return sorted((state_dir / "games").glob("*.secrets"))


def dealt(session: Session) -> bool:
    game = session.state.game
    return game is not None and game.server_seed is not None


@asynccontextmanager
async def dealt_at_a_table_of_bots(
    port: int, state_dir: Path, *, lobby: bool
) -> AsyncIterator[tuple[Session, Screens]]:
    """Ann's terminal client's program (`driver.drive`, without its screen)
    at a table of hers with two bots, once the cards are dealt."""
    ann = Session(
        tcp("127.0.0.1", port),
        "Ann",
        server="test",
        store=SecretStore(state_dir),
        behaviour=Behaviour(Bot("random", seed="ann")),
        backoff=FAST,
    )
    screens = Screens(ann.state, lambda command: None, lobby=lobby)
    bridge = Bridge(screens)
    async with trio.open_nursery() as nursery:
        await nursery.start(ann.run)
        commands_in = bridge.enter_trio()
        nursery.start_soon(driver.drive, ann, bridge, commands_in, state_dir / "records")
        await ann.request(m.CreateRoom(settings=m.RoomSettings.for_players(3)))
        for _ in range(2):
            await ann.request(m.AddBot(strategy="random"))
        await driver.ready_and_start(ann)
        await ann.wait_until(lambda: dealt(ann))
        yield ann, screens
        nursery.cancel_scope.cancel()


@pytest.mark.trio
@pytest.mark.parametrize("verifies", [True, False])
async def test_the_terminal_client_deletes_a_game_s_secrets_once_its_record_verifies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, verifies: bool
) -> None:
    if not verifies:
        monkeypatch.setattr(driver, "verify_record_bytes", lambda data: FORGED)
    state_dir = tmp_path / "ann"
    with trio.fail_after(GAME_HANG):  # (a whole game)
        async with (
            serving() as (port, _),
            dealt_at_a_table_of_bots(port, state_dir, lobby=False) as (ann, screens),
        ):
            game = ann.state.game
            assert game is not None and game.end is None
            assert len(secrets_of(state_dir)) == 1  # kept while it is played
            await ann.wait_until(lambda: game.end is not None)
            if verifies:
                await until(lambda: not secrets_of(state_dir), HANG)
            else:
                await until(lambda: "does NOT verify" in screens.game.verified, HANG)
                assert len(secrets_of(state_dir)) == 1  # kept: the record does not verify
            assert list((state_dir / "records").glob("*.oriflamme"))  # (kept, either way)


@pytest.mark.trio
async def test_a_game_over_while_its_player_was_out_has_its_record_saved(
    tmp_path: Path,
) -> None:
    """My games: Ann steps out of a game, keeping her seat; with no turn
    timer, the stand-in plays her seat once the server's grace is over (a
    second here) and the game ends. The list of her games no longer has it:
    the terminal client's program saves and checks its record. Her seat
    forfeited (away at the final reveal), so the record does not verify
    whole, and her secrets are kept, as for any such game."""
    state_dir = tmp_path / "ann"
    with trio.fail_after(GAME_HANG):  # (a whole game)
        async with (
            serving(ServerConfig(grace=1.0)) as (port, _),
            dealt_at_a_table_of_bots(port, state_dir, lobby=True) as (ann, _),
        ):
            game = ann.state.game
            assert game is not None and len(secrets_of(state_dir)) == 1
            await ann.request(m.LeaveRoom(keep_seat=True))
            assert list(ann.state.kept) == [game.game_id]
            assert len(secrets_of(state_dir)) == 1  # (kept: the seat is ours)

            async def over() -> bool:
                listed = await ann.request(m.ListGames())
                return isinstance(listed, m.GameList) and not listed.games

            while not await over():
                await trio.sleep(0.1)
            name = f"{game.game_id.hex()}.oriflamme"
            await until(lambda: (state_dir / "records" / name).exists(), HANG)
            assert ann.state.kept == {} and ann.state.ended_away == []
            assert len(secrets_of(state_dir)) == 1  # (kept: her seat forfeited)


@pytest.mark.trio
@pytest.mark.parametrize("verifies", [True, False])
async def test_the_bot_deletes_a_game_s_secrets_once_its_record_verifies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, verifies: bool
) -> None:
    if not verifies:
        monkeypatch.setattr(commands, "verify_record", lambda record: FORGED)
    results: list[GameResult] = []
    played: list[int] = []
    state_dir = tmp_path / "ann"
    with trio.fail_after(GAME_HANG):  # (whole games)
        async with serving() as (port, _), trio.open_nursery() as nursery:

            async def bot(name: str, **options: object) -> None:
                played.append(
                    await run_bot(
                        "127.0.0.1",
                        port,
                        room="secrets",
                        strategy="random",
                        games=2,
                        players=2,
                        name=name,
                        **options,  # type: ignore[arg-type]
                    )
                )

            nursery.start_soon(bot, "ann")  # (no state directory)
            nursery.start_soon(partial(bot, "bob", state_dir=state_dir, on_game=results.append))
            # Kept while a game is played; that game's gone (or kept) once it is over.
            await until(lambda: len(secrets_of(state_dir)) == 1, HANG)
            first = secrets_of(state_dir)[0]
            await until(lambda: bool(results), GAME_HANG)
            assert first.exists() != verifies
    assert played == [2, 2]
    assert [r.verdict is not None and r.verdict.ok for r in results] == [verifies] * 2
    assert len(secrets_of(state_dir)) == (0 if verifies else 2)

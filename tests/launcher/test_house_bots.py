"""The house bots (`oriflamme.launcher.house_bots`), the server's bots as
`oriflamme serve` and `oriflamme play` run them, and a server without them.

Which secrets a house bot plays a seat with (`HouseBots.seat_secrets`):
those it kept for that game (a bot started again after a restart), those a
player handed over with the seat, for the game they were handed for and no
other (the bot stays in the seat for the room's next games), or new ones:
the decision alone, no server runs.

Then a `NetServer` on trio's autojump clock, its clients over in-memory
streams (no socket is opened): with house bots, they play a whole game and
forget its secrets; given no bot host, a room that asks for a bot gets the
seat, the server's log says that nobody plays it, and the game is cancelled
before it begins.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from pathlib import Path

import pytest
import trio

from oriflamme.client.bots import Behaviour, Bot
from oriflamme.client.seat_secrets import SeatSecrets
from oriflamme.client.secret_store import SecretStore
from oriflamme.client.session import Backoff, Session
from oriflamme.engine import Rules
from oriflamme.launcher.house_bots import HouseBots
from oriflamme.protocol import messages as m
from oriflamme.protocol.commitments import Opening
from oriflamme.protocol.verify import verify_record
from oriflamme.server.bot_host import BotHost
from oriflamme.server.core import GameFinished, Gateway, HandedSeat, Lobby, ServerConfig
from oriflamme.server.net import NetServer
from tests.deadlines import GAME_HANG, until
from tests.network.test_sessions import memory_connector

RULES = Rules(3)
HANDED_GAME = bytes(range(16))
NEXT_GAME = bytes(range(1, 17))
SERVER_SEED = bytes(range(32))
SEAT = 1


def handed_seat() -> HandedSeat:
    """What the player of `SEAT` handed over in `HANDED_GAME`, two cards placed."""
    secrets = SeatSecrets(RULES, HANDED_GAME, SEAT)
    secrets.learn_server_seed(SERVER_SEED)
    for pid, card in enumerate(secrets.hand[:2]):
        secrets.commit(pid, card)
        secrets.confirm(pid)
    return HandedSeat(
        seed=secrets.seed,
        openings=tuple(secrets.openings([0, 1])),
        server_seed=SERVER_SEED,
        drawn=0,
        game=HANDED_GAME,
    )


def server(store: SecretStore | None = None) -> HouseBots:
    return HouseBots(store)


def placed(secrets: SeatSecrets) -> list[Opening]:
    return secrets.openings(sorted(secrets.placed_cards()))


def test_the_handed_secrets_are_for_the_game_they_were_handed_for() -> None:
    handed = handed_seat()
    secrets = server().seat_secrets(RULES, HANDED_GAME, SEAT, handed=handed)
    assert (secrets.game_id, secrets.seat, secrets.seed) == (HANDED_GAME, SEAT, handed.seed)
    assert placed(secrets) == list(handed.openings)


def test_the_next_game_of_the_room_gets_new_secrets() -> None:
    handed = handed_seat()
    secrets = server().seat_secrets(RULES, NEXT_GAME, SEAT, handed=handed)
    assert (secrets.game_id, secrets.seat) == (NEXT_GAME, SEAT)
    assert secrets.seed != handed.seed
    assert secrets.placed_cards() == {}  # card 0 is free to place again


def test_kept_secrets_come_first_and_the_next_game_s_are_kept_too(tmp_path: Path) -> None:
    store = SecretStore(tmp_path)
    handed = handed_seat()
    first = server(store).seat_secrets(RULES, HANDED_GAME, SEAT, handed=handed)
    after_restart = server(store).seat_secrets(RULES, HANDED_GAME, SEAT, handed=None)
    assert after_restart.to_bytes() == first.to_bytes()
    nxt = server(store).seat_secrets(RULES, NEXT_GAME, SEAT, handed=handed)
    again = server(store).seat_secrets(RULES, NEXT_GAME, SEAT, handed=handed)
    assert nxt.seed != handed.seed and again.to_bytes() == nxt.to_bytes()


def test_a_handed_seat_saved_before_its_game_was_kept_is_of_no_game() -> None:
    """A `HandedSeat` pickled by a server that did not keep its game: its
    secrets are taken for no game (a bot started again after a restart
    finds its own kept secrets first)."""
    old = HandedSeat.__new__(HandedSeat)
    handed = handed_seat()
    old.__setstate__([handed.seed, handed.openings, handed.server_seed, handed.drawn])
    assert old.game == b""
    secrets = server().seat_secrets(RULES, HANDED_GAME, SEAT, handed=old)
    assert secrets.seed != handed.seed and secrets.placed_cards() == {}


def test_the_house_bots_are_a_bot_host() -> None:
    host: BotHost = HouseBots()  # (mypy holds the methods to the protocol)
    assert host is not None


CONFIG = ServerConfig(reply_timer=30, grace=60, idle_timeout=120)


async def play_against_two_bots(
    bots: HouseBots | None, records: list[GameFinished], done: Callable[[], bool]
) -> None:
    """Ann, a random bot of the client's, at a table of three with two
    server bots, starts a game; until `done()`."""
    net = NetServer(Gateway(Lobby(CONFIG)), bots=bots, on_record=records.append)
    with trio.fail_after(GAME_HANG):  # (the real clock's seconds, or the mock clock's)
        async with trio.open_nursery() as nursery:
            await nursery.start(net.run)
            ann = Session(
                memory_connector(net, nursery),
                "Ann",
                behaviour=Behaviour(Bot("random", rng=random.Random(1))),
                backoff=Backoff(first=0.5, most=2),
            )
            await nursery.start(ann.run)
            settings = m.RoomSettings.for_players(3, first_player="host")
            await ann.request(m.CreateRoom(settings=settings))
            for strategy in ("heuristic", "random"):
                await ann.request(m.AddBot(strategy=strategy))
            await ann.request(m.Ready(ready=True))
            await ann.request(m.StartGame())
            await until(done)
            nursery.cancel_scope.cancel()


@pytest.mark.trio
async def test_house_bots_play_a_whole_game_and_forget_its_secrets(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """(On the real clock: the bots think in worker threads, which the mock
    clock does not wait for.)"""
    records: list[GameFinished] = []
    kept = tmp_path / "bots" / "games"
    await play_against_two_bots(
        HouseBots(SecretStore(tmp_path / "bots")),
        records,
        # (kept while it was played; the game over, forgotten)
        lambda: bool(records) and kept.is_dir() and not list(kept.glob("*.secrets")),
    )
    record = records[0].record
    assert verify_record(record).ok
    assert [seat.stand_in for seat in record.seats] == [False, False, False]
    assert "no bot host" not in caplog.text


@pytest.mark.trio
async def test_without_a_bot_host_nobody_plays_a_bot_seat_and_the_log_says_so(
    autojump_clock: trio.abc.Clock, caplog: pytest.LogCaptureFixture
) -> None:
    """The seats are taken, but nobody plays them: the game is cancelled
    before it begins (a seat that nobody plays never commits to its seed)."""
    caplog.set_level(logging.INFO, logger="oriflamme.server")

    def said(text: str) -> int:
        return sum(text in r.getMessage() for r in caplog.records)

    records: list[GameFinished] = []
    await play_against_two_bots(None, records, lambda: said("cancelled before it began") > 0)
    assert said("not started: this server was given no bot host") == 2
    assert records == []

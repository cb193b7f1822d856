"""Complete games over TCP on 127.0.0.1: the trio server, client sessions, bots.

Each test has a deadline (`trio.fail_after`); ports are chosen by the
system (port 0).
"""

from __future__ import annotations

import random
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path

import pytest
import trio

from oriflamme.client.bots import Behaviour, Bot, Seated
from oriflamme.client.session import RequestRefused, Session, open_session, tcp
from oriflamme.launcher import cli
from oriflamme.launcher.house_bots import HouseBots
from oriflamme.protocol import messages as m
from oriflamme.protocol.record import encode_record
from oriflamme.protocol.verify import verify_record
from oriflamme.server.core import GameFinished, Gateway, Lobby, ServerConfig
from oriflamme.server.net import NetServer
from tests.deadlines import GAME_HANG, until

pytestmark = pytest.mark.network

TABLES = [(2, "two-player"), (3, "standard"), (4, "standard"), (5, "standard")]


@asynccontextmanager
async def running_server(
    config: ServerConfig | None = None,
) -> AsyncIterator[tuple[int, list[GameFinished], NetServer]]:
    records: list[GameFinished] = []
    kept: dict[str, bytes] = {}  # served by get_record

    def on_record(finished: GameFinished) -> None:
        records.append(finished)
        kept[finished.record_id] = encode_record(finished.record)

    async def load_record(record_id: str) -> bytes | None:
        return kept.get(record_id)

    server = NetServer(
        Gateway(Lobby(config or ServerConfig())),
        bots=HouseBots(),
        on_record=on_record,
        load_record=load_record,
    )
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    async with trio.open_nursery() as nursery:
        await nursery.start(server.run, listeners)
        yield port, records, server
        nursery.cancel_scope.cancel()


def settings(players: int, variant: str, turn_timer: int | None = None) -> m.RoomSettings:
    return m.RoomSettings(
        players=players,
        variant=variant,
        edition="revised",
        turn_timer=turn_timer,
        first_player="host",
    )


def game_over(session: Session) -> bool:
    game = session.state.game
    return game is not None and game.end is not None


@pytest.mark.trio
@pytest.mark.parametrize(("players", "variant"), TABLES)
async def test_a_complete_game_between_sessions_every_seat_verified(
    players: int, variant: str, tmp_path: Path
) -> None:
    with trio.fail_after(GAME_HANG):
        async with running_server() as (port, records, _):
            rng = random.Random(players)
            sessions = [
                Session(
                    tcp("127.0.0.1", port),
                    f"p{i}",
                    behaviour=Behaviour(
                        Bot(["random", "heuristic"][i % 2], rng=random.Random(rng.random()))
                    ),
                )
                for i in range(players)
            ]
            async with trio.open_nursery() as nursery:
                for s in sessions:
                    await nursery.start(s.run)
                host = sessions[0]
                await host.request(m.CreateRoom(settings=settings(players, variant)))
                room = host.state.room.room
                for s in sessions[1:]:
                    await s.request(m.JoinRoom(room=room))
                for s in sessions:
                    await s.request(m.Ready(ready=True))
                await host.request(m.StartGame())
                for s in sessions:
                    await s.wait_until(partial(game_over, s))
                for s in sessions:
                    assert [v.status for v in s.state.game.check_end()] == ["ok"] * players
                    assert s.state.problems == []
                # Any seat downloads the record, and `oriflamme verify` passes it.
                record_id = host.state.game.end.record_id
                mine = await host.request(m.ListRecords())
                assert isinstance(mine, m.RecordList)
                assert [r.record_id for r in mine.records] == [record_id]
                download = await sessions[-1].request(m.GetRecord(record_id=record_id))
                assert isinstance(download, m.RecordData)
                for s in sessions:
                    s.close()
            assert len(records) == 1 and verify_record(records[0].record).ok
            path = tmp_path / f"{record_id}.oriflamme"
            path.write_bytes(download.data)
            assert download.data == encode_record(records[0].record)
            assert cli.main(["verify", str(path)]) == 0


@pytest.mark.trio
async def test_server_bots_play_over_in_memory_streams() -> None:
    with trio.fail_after(GAME_HANG):
        async with running_server() as (port, records, _):
            async with open_session(
                tcp("127.0.0.1", port), "Ann", behaviour=Behaviour(Bot("random"))
            ) as ann:
                await ann.request(m.CreateRoom(settings=settings(4, "standard")))
                for strategy in ("random", "heuristic", "random"):
                    await ann.request(m.AddBot(strategy=strategy))
                await ann.request(m.Ready(ready=True))
                await ann.request(m.StartGame())
                await ann.wait_until(lambda: game_over(ann))
                assert [s.bot for s in ann.state.room.seats] == [
                    None,
                    "random",
                    "heuristic",
                    "random",
                ]
            record = records[0].record
            assert verify_record(record).ok and [s.bot for s in record.seats] == [
                False,
                True,
                True,
                True,
            ]


@pytest.mark.trio
async def test_a_refused_request_raises_with_the_server_s_error() -> None:
    with trio.fail_after(GAME_HANG):
        async with (
            running_server() as (port, _, _),
            open_session(tcp("127.0.0.1", port), "Ann") as ann,
        ):
            with pytest.raises(RequestRefused) as refused:
                await ann.request(m.JoinRoom(room=99))
            assert refused.value.error.code == "no_such_room"


@pytest.mark.trio
async def test_a_bad_frame_in_a_game_closes_that_connection_and_the_game_goes_on() -> None:
    with trio.fail_after(GAME_HANG):
        async with running_server() as (port, records, _):
            async with open_session(
                tcp("127.0.0.1", port), "Ann", behaviour=Behaviour(Bot("random"))
            ) as ann:
                await ann.request(m.CreateRoom(settings=settings(3, "standard")))
                await ann.request(m.AddBot(strategy="random"))
                intruder = await trio.open_tcp_stream("127.0.0.1", port)
                bo = Session(tcp("127.0.0.1", port), "Bo", behaviour=Behaviour(Bot("random")))
                async with trio.open_nursery() as nursery:
                    await nursery.start(bo.run)
                    await bo.request(m.JoinRoom(room=ann.state.room.room))
                    await bo.request(m.Ready(ready=True))
                    await ann.request(m.Ready(ready=True))
                    await ann.request(m.StartGame())
                    await ann.wait_until(
                        lambda: ann.state.game is not None and ann.state.game.decision is not None
                    )
                    # A stranger sends garbage: its connection alone is closed.
                    await intruder.send_all(b"\x00\x00\x00\x03\xc1\xc1\xc1")
                    reply = await intruder.receive_some(1000)
                    assert b"malformed_frame" in reply
                    assert await intruder.receive_some(1000) == b""
                    await ann.wait_until(lambda: game_over(ann))
                    await bo.wait_until(lambda: game_over(bo))
                    bo.close()
            assert verify_record(records[0].record).ok


class HandsOver(Behaviour):
    """Plays with its bot until round 2, then, at its own turn (every move it
    made settled), hands its seat over to a server bot, and sends nothing more."""

    def __init__(self, bot: Bot) -> None:
        super().__init__(bot)
        self.handed = False

    def messages(self, client: Seated) -> list[m.Message]:
        if self.handed:
            return []
        game = client.state.game
        if (
            game is not None
            and game.state is not None
            and int(game.state.view["round"]) >= 2
            and game.my_turn
            and game.secrets is not None
            and game.secrets.placed_cards()  # (a card placed: the next game's card 0 too)
        ):
            self.handed = True
            secrets = game.secrets
            hidden = [pid for pid in secrets.placed_cards() if pid not in game.openings]
            return [m.HandOver(seed=secrets.seed, openings=tuple(secrets.openings(hidden)))]
        return super().messages(client)


@pytest.mark.trio
async def test_the_bot_a_seat_was_handed_to_plays_the_room_s_next_game_with_new_secrets(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The server bot that took a seat by `hand_over` stays in it: the room's
    next game it plays with secrets of its own, and every seat verifies."""
    with trio.fail_after(GAME_HANG):
        async with running_server() as (port, records, _):
            bo = Session(
                tcp("127.0.0.1", port), "Bo", behaviour=HandsOver(Bot("random", seed="hands over"))
            )
            async with (
                open_session(
                    tcp("127.0.0.1", port), "Ann", behaviour=Behaviour(Bot("random", seed="host"))
                ) as ann,
                trio.open_nursery() as nursery,
            ):
                await nursery.start(bo.run)
                await ann.request(m.CreateRoom(settings=settings(3, "standard")))
                await bo.request(m.JoinRoom(room=ann.state.room.room))  # seat 1
                await ann.request(m.AddBot(strategy="random"))
                await bo.request(m.Ready(ready=True))
                await ann.request(m.Ready(ready=True))
                await ann.request(m.StartGame())
                await ann.wait_until(lambda: game_over(ann))
                first = ann.state.game.game_id
                assert bo.state.room is None  # Bo handed the seat over
                bo.close()
                assert len(records) == 1 and records[0].record.seats[1].handed_to_bot
                assert verify_record(records[0].record).ok
                assert ann.state.room.seats[1].bot == "heuristic"  # the bot stays

                def next_game_over() -> bool:
                    return game_over(ann) and ann.state.game.game_id != first

                def bot_died() -> list[str]:
                    said = [r.getMessage() for r in caplog.records if r.name == "oriflamme.server"]
                    return [x for x in said if re.match(r"bot \d+ stopped", x)]

                await ann.request(m.Ready(ready=True))
                await ann.request(m.StartGame())
                # The next game ends, or is cancelled (a seat's seed never came),
                # or stops for good: a bot died (its connection stays, and is waited for).
                await until(
                    lambda: (
                        next_game_over() or ann.state.room.state == "waiting" or bool(bot_died())
                    )
                )
                assert bot_died() == []
                assert ann.state.room.state == "finished"
                assert [v.status for v in ann.state.game.check_end()] == ["ok"] * 3
                assert ann.state.problems == []
            assert len(records) == 2
            record = records[1].record
            assert record.seats[1].bot and not record.seats[1].handed_to_bot
            assert [v.status for v in record.verdicts] == ["ok"] * 3
            assert verify_record(record).ok

"""Ending a game by vote over TCP on 127.0.0.1: client sessions and the trio
server; the record of the game, downloaded, verifies.

Each test has a deadline (`trio.fail_after`); it waits for the pushes it
means (`Session.wait_until`), never for time to pass.
"""

from __future__ import annotations

import random
from functools import partial
from pathlib import Path

import pytest
import trio

from oriflamme.client.bots import Bot
from oriflamme.client.session import RequestRefused, Session, tcp
from oriflamme.launcher import cli
from oriflamme.protocol import messages as m
from oriflamme.protocol.record import decode_record
from oriflamme.protocol.verify import verify_record
from tests.deadlines import GAME_HANG
from tests.network.test_tcp_games import running_server, settings
from tests.server.test_abort_vote import Held

pytestmark = pytest.mark.network


def game_over(session: Session) -> bool:
    game = session.state.game
    return game is not None and game.end is not None


def round_of(session: Session) -> int:
    game = session.state.game
    return 0 if game is None or game.state is None else int(game.state.view["round"])


@pytest.mark.trio
async def test_the_players_left_end_the_game_by_vote_over_tcp(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with trio.fail_after(GAME_HANG):
        async with running_server() as (port, records, _):
            rng = random.Random(7)
            held = [Held(Bot("random", rng=random.Random(rng.random()))) for _ in range(3)]
            ann, bob, cy = sessions = [
                Session(tcp("127.0.0.1", port), name, behaviour=held[i])
                for i, name in enumerate(("Ann", "Bob", "Cy"))
            ]
            async with trio.open_nursery() as nursery:
                for s in sessions:
                    await nursery.start(s.run)
                await ann.request(m.CreateRoom(settings=settings(3, "standard")))
                room = ann.state.room.room
                for s in (bob, cy):
                    await s.request(m.JoinRoom(room=room))
                for s in sessions:
                    await s.request(m.Ready(ready=True))
                await ann.request(m.StartGame())
                await ann.wait_until(lambda: round_of(ann) >= 2)
                for h in held:
                    h.held = True  # the game waits for its players now
                game_id = ann.state.game.game_id
                with pytest.raises(RequestRefused) as refused:
                    await ann.request(m.VoteAbort(game=game_id))
                assert refused.value.error.code == "wrong_state"  # nobody is gone
                await cy.request(m.LeaveRoom())
                await ann.wait_until(lambda: ann.state.room.abort_votes == ())
                await ann.request(m.VoteAbort(game=game_id))
                await bob.wait_until(lambda: bob.state.room.abort_votes == (0,))
                await bob.request(m.VoteAbort(game=game_id))
                for s in (ann, bob):
                    await s.wait_until(partial(game_over, s))
                end = ann.state.game.end
                assert (end.complete, end.winners) == (False, ())
                assert [v.status for v in end.verification] == ["ok", "ok", "forfeited"]
                assert [v.status for v in ann.state.game.check_end()] == ["ok", "ok"]
                assert ann.state.problems == [] and bob.state.problems == []
                download = await bob.request(m.GetRecord(record_id=end.record_id))
                assert isinstance(download, m.RecordData)
                listed = await ann.request(m.ListRecords())
                assert isinstance(listed, m.RecordList)
                assert [r.valid for r in listed.records] == [False]
                for s in sessions:
                    s.close()
            record = decode_record(download.data)
            assert record == records[0].record
            assert (record.results.complete, record.results.votes) == (False, (0, 1))
            assert verify_record(record).problems == ()
            path = tmp_path / f"{end.record_id}.oriflamme"
            path.write_bytes(download.data)
            assert cli.main(["verify", str(path)]) == 1  # Cy forfeited: it counts for nothing
            report = capsys.readouterr().out
            assert "ended by vote before its end" in report and "problem" not in report

"""Finished games' records through the protocol: `list_records`, `get_record`."""

from __future__ import annotations

import pytest

from oriflamme.launcher.inprocess import InProcess
from oriflamme.protocol import messages as m
from oriflamme.protocol.record import decode_record
from oriflamme.protocol.verify import verify_record
from tests.server.test_games import seat_players


def test_a_player_lists_the_games_it_played_and_downloads_their_records() -> None:
    world = InProcess(seed=7)
    clients = seat_players(world, 3, "standard", bots=1, seed=7)
    world.run(lambda: bool(world.records))
    world.settle()
    record_id = world.records[0].record_id
    for seat, client in enumerate(clients):
        request = client.send(m.ListRecords())
        world.settle()
        listed = client.answer(request)
        assert isinstance(listed, m.RecordList)
        (summary,) = listed.records
        assert (summary.record_id, summary.seat, summary.valid) == (record_id, seat, True)
        assert summary.scores == world.records[0].record.results.scores
    stranger = world.connect("stranger")
    world.settle()
    request = stranger.send(m.ListRecords())
    get = stranger.send(m.GetRecord(record_id=record_id))
    world.settle()
    assert stranger.answer(request) == m.RecordList(records=(), id=request)
    answer = stranger.answer(get)
    assert isinstance(answer, m.RecordData) and answer.record_id == record_id
    assert verify_record(decode_record(answer.data)).ok


@pytest.mark.parametrize("record_id", ["0" * 32, "../../etc/passwd", "ABCDEF" * 5, "x"])
def test_an_unknown_or_odd_record_id_is_no_such_record(record_id: str) -> None:
    world = InProcess()
    client = world.connect("Ann")
    world.settle()
    request = client.send(m.GetRecord(record_id=record_id))
    world.settle()
    answer = client.answer(request)
    assert isinstance(answer, m.Error) and answer.code == "no_such_record" and not answer.fatal

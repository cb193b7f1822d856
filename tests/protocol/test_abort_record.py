"""A game ended by vote: its messages, and its record, which verifies (the log
stops before the game's end, and everything in it checks out), while a cut
record or a forged vote does not."""

from __future__ import annotations

import random
from typing import Any

import pytest

from oriflamme.engine import Rules
from oriflamme.protocol import messages as m
from oriflamme.protocol.errors import RemoteProtocolError
from oriflamme.protocol.record import (
    LEFT,
    STAND_IN,
    Record,
    SeatRecord,
    decode_record,
    encode_record,
)
from oriflamme.protocol.verify import format_verdict, verify_record, verify_record_bytes
from oriflamme.server.core import FixedEntropy, Phase, Referee, Refusal
from tests.protocol.fairness_helpers import FixedSecrets, tamper
from tests.server.local_referee import LocalSeat, phase_of, start, step


def table(seed: int = 0, bots: tuple[int, ...] = ()) -> tuple[Referee, list[LocalSeat]]:
    """Three seats, played by their players (seats `bots` by server bots),
    without a turn timer: the server decides for a seat only when its player
    is gone."""
    rules = Rules(3)
    referee = Referee(
        rules,
        seats=[SeatRecord(f"p{i}", bot=i in bots) for i in range(3)],
        turn_timer=None,
        entropy=FixedEntropy(f"abort {seed}"),
    )
    rng = random.Random(seed)
    seats = [
        LocalSeat(FixedSecrets(rules, referee.game_id, i), random.Random(rng.random()))
        for i in range(3)
    ]
    start(referee, seats)
    return referee, seats


def play_to_round(referee: Referee, seats: list[LocalSeat], gone: set[int], until: int) -> None:
    """Play on until round `until`; the stand-in answers for the seats `gone`."""
    while referee.phase is Phase.PLAYING and referee.view(None)["round"] < until:
        decision = referee.decision
        assert decision is not None
        if decision.seat in gone:
            referee.stand_in(decision.seat)
        else:
            step(referee, seats)


def final_reveals(referee: Referee, seats: list[LocalSeat], gone: set[int]) -> Record:
    for seat in referee.awaited_reveals():
        if seat in gone:
            referee.stand_in(seat)
        else:
            referee.receive(seat, seats[seat].final_reveal(referee.hidden(seat)))
    assert phase_of(referee) is Phase.DONE
    return referee.record()


def aborted(seed: int = 0, *, away: bool = False) -> Record:
    """Seat 2's player leaves (or, `away`, is away past the grace period) in
    round 2; in round 3, seats 0 and 1 end the game by vote."""
    referee, seats = table(seed)
    play_to_round(referee, seats, set(), 2)
    if away:
        referee.mark_seat(2, STAND_IN)
    else:
        referee.mark_seat(2, LEFT)
        referee.forfeit(2, "left the game")
    play_to_round(referee, seats, {2}, 3)
    referee.abort((1, 0))
    assert referee.decision is None and phase_of(referee) is Phase.REVEALING
    referee.mark_seat(2, "back")  # after the vote: not noted
    return final_reveals(referee, seats, {2})


RECORD = aborted()
DATA = encode_record(RECORD)


def problems(data: bytes) -> tuple[str, ...]:
    return verify_record_bytes(data).problems


# ---------------------------------------------------------------- messages


def test_vote_abort_and_abort_votes_go_over_the_wire() -> None:
    vote = m.VoteAbort(game=bytes(range(16)), id=4)
    assert m.to_data(vote) == {"type": "vote_abort", "game": bytes(range(16)), "id": 4}
    assert m.from_data(m.to_data(vote), "client") == vote
    with pytest.raises(RemoteProtocolError, match="vote_abort.game"):
        m.from_data({"type": "vote_abort", "game": bytes(15)}, "client")

    def room(votes: tuple[int, ...] | None) -> m.RoomState:
        return m.RoomState(
            seq=3,
            room=1,
            name="t",
            settings=m.RoomSettings.for_players(3),
            host=1,
            state="playing",
            seats=tuple(m.RoomSeat(seat=i, ready=True, connected=True) for i in range(3)),
            spectators=0,
            abort_votes=votes,
        )

    # Absent: no vote can be held; empty: nobody voted yet.
    for votes, wire in (((0, 2), [0, 2]), ((), []), (None, None)):
        data = m.to_data(room(votes))
        assert data.get("abort_votes") == wire
        assert m.from_data(data, "server") == room(votes)
    with pytest.raises(RemoteProtocolError, match="room_state.abort_votes"):
        m.from_data(m.to_data(room(None)) | {"abort_votes": [5]}, "server")


# ---------------------------------------------------------------- the record


def test_a_game_ended_by_vote_verifies() -> None:
    record = decode_record(DATA)
    assert record == RECORD
    results = record.results
    assert (results.complete, results.winners, results.votes) == (False, (), (0, 1))
    verdict = verify_record(record)
    assert verdict.problems == ()
    assert [v.status for v in verdict.seats] == ["ok", "ok", "forfeited"]
    assert [(c.seat, c.change) for c in record.seat_changes] == [(2, LEFT)]
    report = format_verdict(record, verdict)
    assert "ended by vote before its end" in report and "winners: none" in report


def test_a_game_ended_by_vote_with_a_player_away_verifies() -> None:
    record = aborted(1, away=True)
    assert verify_record(record).problems == ()
    assert record.verdicts[2].reason == "was away at the final reveal"


def test_a_player_back_for_the_final_reveal_makes_a_valid_record_that_counts_for_nothing() -> None:
    referee, seats = table(5)
    play_to_round(referee, seats, set(), 2)
    referee.mark_seat(2, STAND_IN)
    play_to_round(referee, seats, {2}, 3)
    referee.abort((0, 1))
    record = final_reveals(referee, seats, set())  # seat 2 is back in time to reveal
    verdict = verify_record(record)
    assert verdict.ok and not record.results.complete
    assert "ended by vote: it counts for nothing" in format_verdict(record, verdict)


def test_the_referee_ends_only_a_game_in_play() -> None:
    referee, seats = table(2)
    play_to_round(referee, seats, set(), 6)
    while referee.phase is Phase.PLAYING:
        step(referee, seats)
    with pytest.raises(Refusal, match="wrong_state"):
        referee.abort((0,))
    record = final_reveals(referee, seats, set())
    assert record.results.complete and record.results.votes == ()
    assert verify_record(record).ok


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        # A game without a gone player, cut short and called ended by vote.
        (
            lambda p: (
                p["seat_changes"].clear(),
                p["seats"][2].update(left=False),
                p["forfeits"].clear(),
            ),
            "but no seat's player was gone",
        ),
        # A vote that leaves out a player at the table.
        (
            lambda p: p["results"].update(votes=[0]),
            "but the players at the table were seats [0, 1]",
        ),
        # The gone player's vote, counted.
        (
            lambda p: p["results"].update(votes=[0, 1, 2]),
            "but the players at the table were seats [0, 1]",
        ),
        (lambda p: p["results"].pop("votes"), "but the players at the table were seats [0, 1]"),
        # Winners of a game nobody won.
        (lambda p: p["results"].update(winners=[1]), "a game ended by vote has no winners"),
        # Called complete.
        (
            lambda p: p["results"].update(complete=True),
            "the record says the game is complete, but its log stops",
        ),
        # Other scores.
        (lambda p: p["results"]["scores"].__setitem__(0, 40), "the recorded scores"),
    ],
)
def test_a_forged_vote_does_not_verify(change: Any, problem: str) -> None:
    found = problems(tamper(DATA, change))
    assert any(problem in p for p in found), found


def test_a_record_cut_before_the_vote_does_not_verify() -> None:
    """A log cut short (after seat 2 left) no longer gives the recorded events."""
    assert len(RECORD.log) > RECORD.seat_changes[0].log_index + 3
    found = problems(tamper(DATA, lambda p: p.__setitem__("log", p["log"][:-3])))
    assert any("events, the replay" in p for p in found), found


def test_votes_in_a_complete_game_do_not_verify() -> None:
    referee, seats = table(3)
    while referee.phase is Phase.PLAYING:
        step(referee, seats)
    data = encode_record(final_reveals(referee, seats, set()))
    assert problems(data) == ()
    found = problems(tamper(data, lambda p: p["results"].update(votes=[0, 1, 2])))
    assert any("voted to end the game, but it was played to its end" in p for p in found)


def test_server_bots_do_not_vote() -> None:
    """Seat 1 is a server bot's: only seat 0's player votes; a record that
    counts the bot's vote does not verify."""
    referee, seats = table(4, bots=(1,))
    play_to_round(referee, seats, set(), 2)
    referee.mark_seat(2, LEFT)
    referee.forfeit(2, "left the game")
    play_to_round(referee, seats, {2}, 3)
    referee.abort((0,))
    data = encode_record(final_reveals(referee, seats, {2}))
    assert problems(data) == ()
    found = problems(tamper(data, lambda p: p["results"].update(votes=[0, 1])))
    assert any("the players at the table were seats [0]" in p for p in found), found

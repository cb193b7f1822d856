"""The referee as the server's game core: wire messages in, rulings or
refusals out; turns, skipped placements, time-outs and the stand-in,
forfeits, failed openings and hand-overs, the decisions the server makes for
a seat, its randomness, and what the record makes of all of it."""

from __future__ import annotations

import dataclasses
import functools
import random
from collections.abc import Callable, Sequence
from typing import Any

import msgpack
import pytest

from oriflamme.engine import BACKS, CARDS, KEEP, Card, Open, Rules, card
from oriflamme.engine.events import Eliminated, Kept, PlacementSkipped
from oriflamme.protocol import messages as m
from oriflamme.protocol.commitments import (
    SERVER_SEAT,
    Committed,
    Opening,
    new_seed,
    seed_commitment,
)
from oriflamme.protocol.errors import CODES, LocalProtocolError
from oriflamme.protocol.record import (
    BACK,
    FAILED,
    FORFEITED,
    HANDED_TO_BOT,
    LEFT,
    OK,
    STAND_IN,
    Forfeit,
    LogEntry,
    Record,
    RecordError,
    SeatChange,
    SeatVerdict,
    decode_record,
    encode_record,
)
from oriflamme.protocol.verify import (
    decision_counts,
    format_verdict,
    settled_card,
    verify_record,
    verify_record_bytes,
)
from oriflamme.server.core import (
    FixedEntropy,
    Phase,
    Referee,
    Refusal,
    Ruling,
    SystemEntropy,
)
from oriflamme.server.core import entropy as entropy_module
from oriflamme.server.core.referee import GAME_MESSAGES
from tests.protocol.fairness_helpers import FixedSecrets, bot_for, fixed_table, flip, tamper
from tests.server.local_referee import (
    LocalSeat,
    new_local_table,
    phase_of,
    run_local_game,
    start,
)

CONNECTION_AND_LOBBY = {
    "hello", "prove", "rename", "leaderboard", "ping", "sync", "list_rooms", "create_room", "join_room", "spectate",
    "leave_room", "ready", "start_game", "add_bot", "remove_bot", "chat",
    "list_records", "get_record", "vote_abort", "list_games",
}  # fmt: skip


def seeded(
    players: int = 3, seed: int = 1, turn_timer: int | None = 60
) -> tuple[Referee, list[LocalSeat]]:
    """A table whose seeds are committed and whose seats know their deals."""
    referee, seats = new_local_table(players, seed=seed, turn_timer=turn_timer)
    start(referee, seats)
    return referee, seats


def fixed_seeded(players: int = 3, seed: int = 1, **kwargs: Any) -> tuple[Referee, list[LocalSeat]]:
    """`seeded`, with a game that is the same on every run (`fixed_table`)."""
    referee, seats = fixed_table(players, seed=seed, **kwargs)
    start(referee, seats)
    return referee, seats


def drawn(seats: Sequence[LocalSeat], ruling: Ruling) -> None:
    """Tell the seats what they drew."""
    for event in ruling.events:
        if type(event).__name__ == "Drew":
            seats[event.seat].secrets.draw(len(event.cards))


def play_until(referee: Referee, seats: list[LocalSeat], stop: Callable[[Any], bool]) -> None:
    """Play on (the seats' own answers) until the pending decision satisfies
    `stop`. A failed opening does not stop play: the server answered in its place."""
    while referee.decision is not None and not stop(referee.decision):
        seat = seats[referee.decision.seat]
        drawn(seats, referee.receive(seat.seat, seat.answer(referee)))


def final_reveals(referee: Referee, seats: Sequence[LocalSeat]) -> Record:
    """Every awaited seat sends its final reveal; the record."""
    assert referee.phase is Phase.REVEALING
    for seat in referee.awaited_reveals():
        referee.receive(seat, seats[seat].final_reveal(referee.hidden(seat)))
    assert phase_of(referee) is Phase.DONE
    return referee.record()


def finish(referee: Referee, seats: list[LocalSeat]) -> Record:
    """Play to the end (no forfeit stops play), then the final reveals."""
    play_until(referee, seats, lambda d: False)
    return final_reveals(referee, seats)


def round_of(referee: Referee) -> int:
    return referee.view(None)["round"]


def hand_size(referee: Referee, seat: int) -> int:
    return len(referee.view(None)["hands"][seat])


def state(referee: Referee) -> tuple[Any, ...]:
    """Everything a refused input must leave as it was."""
    return (
        referee.phase,
        referee.turn,
        referee.decision,
        tuple(referee.log),
        tuple(referee.events),
        tuple(referee.placements),
        tuple(referee.openings),
        tuple(referee.settled),
        tuple(referee.forfeits),
        tuple(referee.seat_changes),
        tuple(referee.seats),
        tuple(referee.seed_commitments),
        tuple(referee.seeds),
        tuple(referee.final_openings),
        tuple(referee.awaited_reveals()),
        referee.server_seed,
        msgpack.packb(referee.view(None)),
    )


def refused(referee: Referee, code: str, call: Callable[[], object]) -> Refusal:
    """`call` is refused with `code`, and changes nothing."""
    before = state(referee)
    with pytest.raises(Refusal) as caught:
        call()
    assert caught.value.code == code, str(caught.value)
    assert code in CODES
    assert state(referee) == before
    return caught.value


# ---------------------------------------------------------------- the wire mapping


def test_every_client_message_is_the_lobbys_or_the_referees() -> None:
    game = {cls.TYPE for cls in GAME_MESSAGES}
    assert not game & CONNECTION_AND_LOBBY
    assert set(m.CLIENT_MESSAGES) == game | CONNECTION_AND_LOBBY
    assert all(m.CLIENT_MESSAGES[cls.TYPE] is cls for cls in GAME_MESSAGES)


def test_a_message_that_is_not_a_game_message_is_a_bug() -> None:
    referee, _ = seeded()
    with pytest.raises(TypeError, match="'ping' is not a game message"):
        referee.receive(0, m.Ping(id=1))
    with pytest.raises(ValueError, match="no seat 3"):
        referee.receive(3, m.KeepCard(turn=0))


TURNED: dict[type[m.Message], m.Message] = {
    m.Direction: m.Direction(turn=0, direction="left-to-right"),
    m.PlaceCard: m.PlaceCard(turn=0, at="first", family="red", commitment=bytes(32)),
    m.KeepCard: m.KeepCard(turn=0),
    m.RevealCard: m.RevealCard(turn=0, card=card("red", "spy"), nonce=bytes(32)),
    m.Choose: m.Choose(turn=0, target=0),
    m.Move: m.Move(turn=0, index=0),
}


def test_the_decision_messages_are_those_with_a_turn() -> None:
    with_turn = {cls for cls in GAME_MESSAGES if any(f.name == "turn" for f in cls.FIELDS)}
    # (and `hand_over`, whose turn is required only of a seat with a key: it dates it)
    assert with_turn == {*TURNED, m.HandOver}


@pytest.mark.parametrize("cls", TURNED, ids=lambda c: c.TYPE)
def test_a_stale_turn_is_refused_and_changes_nothing(cls: type[m.Message]) -> None:
    referee, seats = seeded()
    play_until(referee, seats, lambda d: d.kind == "reveal")
    d = referee.decision
    assert d is not None
    for turn in (referee.turn - 1, referee.turn + 1):
        message = dataclasses.replace(TURNED[cls], turn=turn)  # type: ignore[type-var]
        refused(referee, "stale_turn", functools.partial(referee.receive, d.seat, message))


def test_refusals_carry_catalog_codes_and_change_nothing() -> None:
    referee, _ = seeded()
    direction = m.Direction(turn=0, direction="left-to-right")
    refused(referee, "wrong_state", lambda: referee.receive(0, m.SeedCommit(commitment=bytes(32))))
    refused(referee, "not_your_turn", lambda: referee.receive(1, direction))
    refused(
        referee, "stale_turn", lambda: referee.receive(0, dataclasses.replace(direction, turn=5))
    )
    refused(referee, "illegal_action", lambda: referee.receive(0, m.KeepCard(turn=0)))
    refused(
        referee,
        "wrong_state",
        lambda: referee.receive(0, m.FinalReveal(seed=bytes(32), openings=())),
    )
    refused(referee, "wrong_state", referee.record)
    refused(referee, "stale_turn", lambda: referee.stand_in(0, turn=1))
    refused(referee, "not_your_turn", lambda: referee.stand_in(1))
    refused(referee, "stale_turn", lambda: referee.time_out(turn=1))
    assert referee.turn == 0 and referee.log == []
    referee.receive(0, direction)
    # Seat 0 plays red: a blue card is not in its hand.
    blue = m.PlaceCard(turn=1, at="first", family="blue", commitment=bytes(32))
    refused(referee, "illegal_action", lambda: referee.receive(0, blue))
    refused(referee, "not_your_turn", lambda: referee.receive(1, dataclasses.replace(blue)))
    refused(referee, "illegal_action", lambda: referee.receive(0, m.KeepCard(turn=1)))
    assert referee.turn == 1 and len(referee.log) == 1 and referee.next_pid == 0


@pytest.mark.parametrize(
    "make",
    [
        lambda: m.RevealCard(turn=0, card=BACKS[0], nonce=bytes(32)),  # a card back opens nothing
        lambda: m.OpenCard(pid=0, card=card("red", "spy"), nonce=bytes(31)),
        lambda: m.PlaceCard(turn=1, at="first", family="red", commitment=bytes(5)),
        lambda: m.PlaceCard(turn=1, at="first", family="purple", commitment=bytes(32)),
        lambda: m.PlaceCard(turn=1, at="middle", family="red", commitment=bytes(32)),
        lambda: m.PlaceCard(turn=1, at=True, family="red", commitment=bytes(32)),
        lambda: m.SeedCommit(commitment=bytes(31)),
    ],
)
def test_malformed_requests_never_reach_the_referee(make: Callable[[], m.Message]) -> None:
    """The messages check their fields when made (or decoded): the referee
    takes only well-formed ones."""
    with pytest.raises(LocalProtocolError):
        make()


def test_a_placement_logs_the_card_back_and_its_commitment() -> None:
    referee, seats = seeded()
    referee.receive(0, m.Direction(turn=0, direction="left-to-right"))
    commitment = bytes(range(32))
    ruling = referee.receive(
        0, m.PlaceCard(turn=1, at="first", family="red", commitment=commitment)
    )
    assert ruling.placements == (Committed(0, 0, 0, commitment, 0),)
    assert ruling.failure is None and ruling.forfeits == () and ruling.openings == ()
    assert referee.log[-1] == LogEntry(0, referee.log[-1].action, 0, commitment)
    assert referee.log[-1].action.card == BACKS[0]
    assert referee.placements == [Committed(0, 0, 0, commitment, 0)]
    assert referee.hidden(0) == [0] and referee.next_pid == 1 and referee.turn == 2


class Absent(LocalSeat):
    """Lets about half of its decisions time out, openings included (so its
    settled cards may clash with its later openings)."""

    def answers(self, decision: Any) -> bool:
        return self.rng.random() < 0.5


def absent_game(stop: Callable[[set[str]], bool], tries: int = 60) -> tuple[Referee, set[str]]:
    """A fixed game with `Absent` seats, played to its end (no final reveal),
    whose kinds of inputs satisfy `stop`: the referee and those kinds."""
    for seed in range(tries):
        referee, seats = fixed_seeded(3, seed=seed, seat_class=Absent)
        kinds: set[str] = set()
        while referee.phase is Phase.PLAYING:
            d = referee.decision
            assert d is not None
            before = referee.turn
            seat = seats[d.seat]
            if seat.answers(d):
                message = seat.answer(referee)
                ruling = referee.receive(d.seat, message)
                kinds.add(message.TYPE if ruling.failure is None else f"failed {message.TYPE}")
            else:
                kinds.add(f"time_out {d.kind}")
                ruling = referee.time_out(turn=before)
            drawn(seats, ruling)
            assert referee.turn == before + 1
        if stop(kinds):
            return referee, kinds
    raise AssertionError(f"no such game in {tries} tries")


def test_turn_counts_every_settled_decision_once() -> None:
    """Answers, skips, defaults and settlements each count one; a reveal with
    its opening one; a failed opening with the server's answer in its place one."""
    wanted = {"reveal", "place", "time_out place", "time_out reveal", "time_out open"}
    # Settled identities clashed with later honest openings, on a reveal and an open.
    referee, _ = absent_game(lambda k: wanted | {"failed reveal", "failed open"} <= k)
    # Equivalently: one per log entry, the opening that follows a reveal excepted.
    log = referee.log
    after_reveal = sum(
        1 for a, b in zip(log, log[1:], strict=False) if type(a.action).__name__ == "Reveal"
    )
    assert after_reveal > 0
    assert referee.turn == len(log) - after_reveal


# ---------------------------------------------------------------- skipped placements


def test_a_placement_that_times_out_is_skipped() -> None:
    referee, seats = seeded()
    play_until(referee, seats, lambda d: d.kind == "place")
    assert referee.turn == 1 and len(referee.log) == 1
    refused(referee, "not_your_turn", lambda: referee.stand_in(1))
    refused(referee, "stale_turn", lambda: referee.time_out(turn=0))
    hand = hand_size(referee, 0)
    ruling = referee.time_out(turn=1)
    assert ruling.events[0] == PlacementSkipped(0) and ruling.placements == ()
    assert referee.log[-1] == LogEntry.skip(0) and referee.log[-1].skipped
    assert referee.turn == 2 and referee.next_pid == 0
    assert hand_size(referee, 0) == hand
    assert referee.decision is not None and referee.decision.seat == 1


class SkipsSomePlacements(LocalSeat):
    """Lets its placements time out in the rounds of `skipped_rounds`."""

    skipped_rounds: set[int] = {2, 4, 5}
    referee: Referee

    def answers(self, decision: Any) -> bool:
        return decision.kind != "place" or round_of(self.referee) not in self.skipped_rounds


class NeverPlaces(SkipsSomePlacements):
    skipped_rounds = set(range(1, 7))


def game_with_skips(
    players: int, seat_class: type[SkipsSomePlacements], seed: int = 3, skipper: int = 1
) -> Record:
    referee, seats = new_local_table(players, seed=seed)
    slow = seat_class(seats[skipper].secrets, random.Random(seed))
    slow.referee = referee
    seats[skipper] = slow
    record = run_local_game(referee, seats)
    placed = [e for e in record.log if e.seat == skipper and e.commitment is not None]
    skips = [e for e in record.log if e.skipped]
    assert skips and all(e.seat == skipper for e in skips)
    # Every skip leaves a card in hand: more cards left than the rules' usual.
    assert hand_size(referee, skipper) == len(skips) + referee.rules.hand_left_at_end
    assert len(placed) + len(skips) == (12 if players == 2 else 6)
    return record


@pytest.mark.parametrize("players", [2, 3, 5])
def test_a_game_with_skipped_placements_verifies(players: int) -> None:
    record = game_with_skips(players, SkipsSomePlacements)
    assert record.results.complete
    assert [v.status for v in record.verdicts] == [OK] * players
    skips = sum(1 for e in record.events if type(e) is PlacementSkipped)
    assert skips == sum(1 for e in record.log if e.skipped) > 0
    verdict = verify_record(record)
    assert verdict.ok, verdict.reasons()
    assert decode_record(encode_record(record)) == record
    assert verify_record_bytes(encode_record(record)).ok


@pytest.mark.parametrize("players", [2, 4])
def test_a_seat_that_never_places_verifies(players: int) -> None:
    """The end-of-game check asks no number of placements: a seat with
    cards left over (here all of them) is fine."""
    record = game_with_skips(players, NeverPlaces, skipper=0)
    assert not any(e.seat == 0 and e.commitment is not None for e in record.log)
    assert record.final_openings[0] == ()
    verdict = verify_record(record)
    assert verdict.ok, verdict.reasons()


SKIP_DATA = encode_record(game_with_skips(3, SkipsSomePlacements))


def plain_log(data: bytes) -> list[dict[str, Any]]:
    return msgpack.unpackb(data, raw=False)["log"]


def skip_entry(seat: int) -> dict[str, Any]:
    return {"seat": seat, "skip": True, "by_server": True}


def test_a_skip_is_logged_as_seat_skip_and_by_server_alone() -> None:
    # (and the server's signature: a skip is the server's decision)
    skips = [e for e in plain_log(SKIP_DATA) if "action" not in e]
    assert skips and all(e.keys() == {*skip_entry(1), "sig"} for e in skips)
    assert all({**e, "sig": None} == {**skip_entry(1), "sig": None} for e in skips)


@pytest.mark.parametrize(
    "entry",
    [
        {"seat": 1, "skip": True, "by_server": True, "action": {"type": "keep"}},
        {"seat": 1, "skip": True, "by_server": True, "pid": 3},
        {"seat": 1, "skip": True, "by_server": True, "commitment": bytes(32)},
        {"seat": 1, "skip": True, "by_server": True, "nonce": bytes(32)},
        {"seat": 1, "skip": True, "by_server": True, "settled": True},
        {"seat": 1, "skip": "yes", "by_server": True},
        {"seat": 1, "skip": None, "by_server": True},
        {"seat": 1, "skip": False, "by_server": True},  # then an action is needed
        {"seat": 7, "skip": True, "by_server": True},
        {"seat": 1, "skip": True},  # a skip is always the server's decision
        {"seat": 1, "skip": True, "by_server": False},
        {"seat": 1, "skip": True, "by_server": 1},
    ],
)
def test_a_malformed_skip_is_refused(entry: dict[str, Any]) -> None:
    i = next(i for i, e in enumerate(plain_log(SKIP_DATA)) if "action" not in e)
    with pytest.raises(RecordError):
        decode_record(tamper(SKIP_DATA, lambda p: p["log"].__setitem__(i, entry)))


def test_a_skip_where_no_placement_was_pending_is_rejected() -> None:
    log = plain_log(SKIP_DATA)
    i = next(i for i, e in enumerate(log) if e.get("action", {}).get("type") == "keep")
    seat = log[i]["seat"]
    verdict = verify_record_bytes(
        tamper(SKIP_DATA, lambda p: p["log"].__setitem__(i, skip_entry(seat)))
    )
    assert not verdict.ok
    assert (
        f"log entry {i}: skips seat {seat}'s placement, but no placement was pending"
        f" (seat {seat} was to decide: reveal)"
    ) in verdict.problems


def test_a_skip_of_another_seats_placement_is_rejected() -> None:
    log = plain_log(SKIP_DATA)
    i = next(i for i, e in enumerate(log) if e.get("action", {}).get("type") == "place")
    seat = log[i]["seat"]
    other = (seat + 1) % 3
    verdict = verify_record_bytes(
        tamper(SKIP_DATA, lambda p: p["log"].__setitem__(i, skip_entry(other)))
    )
    assert (
        f"log entry {i}: skips seat {other}'s placement, but seat {seat} was to place"
        in verdict.problems
    )


def test_a_placement_turned_into_a_skip_is_rejected() -> None:
    # The right seat, a placement pending: the skip replays, and the game diverges.
    log = plain_log(SKIP_DATA)
    i = next(i for i, e in enumerate(log) if e.get("action", {}).get("type") == "place")
    verdict = verify_record_bytes(
        tamper(SKIP_DATA, lambda p: p["log"].__setitem__(i, skip_entry(log[i]["seat"])))
    )
    assert not verdict.ok and verdict.problems


def test_a_removed_skip_is_rejected() -> None:
    i = next(i for i, e in enumerate(plain_log(SKIP_DATA)) if "action" not in e)
    verdict = verify_record_bytes(tamper(SKIP_DATA, lambda p: p["log"].pop(i)))
    assert not verdict.ok and verdict.problems


# ---------------------------------------------------------------- time-outs and the stand-in


def test_a_seeding_time_out_cancels_the_game() -> None:
    referee = Referee(Rules(3), entropy=FixedEntropy("cancel"))
    referee.receive(0, m.SeedCommit(commitment=bytes(32)))
    assert referee.phase is Phase.SEEDING and referee.awaited_seeds() == [1, 2]
    ruling = referee.time_out()
    assert ruling == Ruling(cancelled=True)
    assert phase_of(referee) is Phase.CANCELLED and phase_of(referee) == "cancelled"
    assert referee.server_seed is None  # never published: no game was played
    assert referee.decision is None and referee.awaited_seeds() == []
    assert referee.log == [] and referee.forfeits == []
    refused(referee, "wrong_state", lambda: referee.receive(1, m.SeedCommit(commitment=bytes(32))))
    refused(referee, "wrong_state", referee.time_out)
    refused(referee, "wrong_state", lambda: referee.forfeit(1, "left the game"))
    refused(referee, "wrong_state", lambda: referee.mark_seat(1, LEFT))
    refused(referee, "wrong_state", referee.record)


def test_the_server_seed_waits_for_every_seed_commitment() -> None:
    referee = Referee(Rules(3))
    referee.receive(0, m.SeedCommit(commitment=bytes(32)))
    referee.receive(1, m.SeedCommit(commitment=bytes(32)))
    assert referee.server_seed is None and referee.phase is Phase.SEEDING
    refused(referee, "wrong_state", lambda: referee.receive(1, m.SeedCommit(commitment=bytes(32))))
    refused(referee, "wrong_state", lambda: referee.receive(0, m.KeepCard(turn=0)))
    referee.receive(2, m.SeedCommit(commitment=bytes(32)))
    assert phase_of(referee) is Phase.PLAYING and referee.server_seed is not None
    assert referee.server_seed_commitment == seed_commitment(
        referee.game_id, SERVER_SEAT, referee.server_seed
    )


def test_time_out_plays_the_safe_defaults() -> None:
    referee, seats = seeded(seed=5)
    ruling = referee.time_out()  # a random direction
    assert type(referee.log[-1].action).__name__ == "ChooseDirection"
    assert type(ruling.events[0]).__name__ == "DirectionChosen"
    assert referee.time_out().events[0] == PlacementSkipped(0)
    assert [e.by_server for e in referee.log] == [True, True]
    refused(referee, "stale_turn", lambda: referee.time_out(turn=1))  # settled already
    play_until(referee, seats, lambda d: d.kind == "reveal")
    d = referee.decision
    assert d is not None
    ruling = referee.time_out(turn=referee.turn)
    assert ruling.events[0] == Kept(d.seat, d.pid, ruling.events[0].tokens)  # type: ignore[arg-type]
    assert referee.log[-1] == LogEntry(d.seat, KEEP, by_server=True)
    assert referee.forfeits == [] and ruling.forfeits == ()


def eliminated_game(tries: int = 60, **kwargs: Any) -> tuple[Referee, list[LocalSeat]]:
    """A fixed game played until a face-down card is eliminated (an `open` is due)."""
    for seed in range(tries):
        referee, seats = fixed_seeded(seed=seed, **kwargs)
        play_until(referee, seats, lambda d: d.kind == "open")
        if referee.decision is not None:
            return referee, seats
    raise AssertionError(f"no face-down card eliminated in {tries} games")


@pytest.mark.parametrize("how", ["time_out", "stand_in"])
def test_a_demanded_opening_that_is_not_sent_is_settled(how: str) -> None:
    referee, seats = eliminated_game(turn_timer=None)  # openings have their own timer
    d = referee.decision
    assert d is not None and d.pid is not None
    turn, at = referee.turn, len(referee.log)
    if how == "time_out":
        ruling = referee.time_out()
        reason = f"did not open card {d.pid} in time"
    else:
        referee.mark_seat(d.seat, STAND_IN)
        ruling = referee.stand_in(d.seat)
        reason = f"was away when card {d.pid} had to be opened"
    assert referee.turn == turn + 1
    assert referee.log[at] == LogEntry(
        d.seat, Open(settled_card(d.options)), d.pid, settled=True, by_server=True
    )
    assert ruling.forfeits == (Forfeit(d.seat, reason, at),) and ruling.failure is None
    assert ruling.settled == (d.pid,) and referee.settled == [d.pid]
    eliminated = [e for e in ruling.events if type(e) is Eliminated]
    assert [(e.pid, e.card) for e in eliminated] == [(d.pid, settled_card(d.options))]
    if how == "stand_in":
        referee.mark_seat(d.seat, BACK)
    record = finish(referee, seats)
    verdict = verify_record(record)
    assert verdict.problems == ()
    assert verdict.seats[d.seat] == SeatVerdict(d.seat, FORFEITED, reason)
    assert record.verdicts == verdict.seats


def test_time_out_at_the_end_forfeits_the_silent_seats() -> None:
    referee, seats = seeded(seed=6)
    play_until(referee, seats, lambda d: False)
    assert referee.awaited_reveals() == [0, 1, 2]
    referee.receive(1, seats[1].final_reveal(referee.hidden(1)))
    assert referee.awaited_reveals() == [0, 2]
    ruling = referee.time_out()
    reason = "did not send its final reveal in time"
    at = len(referee.log)
    assert ruling == Ruling(forfeits=(Forfeit(0, reason, at), Forfeit(2, reason, at)))
    assert referee.phase is Phase.DONE and referee.awaited_reveals() == []
    record = referee.record()
    assert record.seeds[0] is None and record.final_openings[2] is None
    assert record.verdicts == (
        SeatVerdict(0, FORFEITED, reason),
        SeatVerdict(1, OK),
        SeatVerdict(2, FORFEITED, reason),
    )
    verdict = verify_record(record)
    assert verdict.problems == () and verdict.seats == record.verdicts


def test_the_stand_in_forfeits_a_final_reveal() -> None:
    referee, seats = seeded(seed=6, turn_timer=None)
    play_until(referee, seats, lambda d: False)
    referee.receive(0, seats[0].final_reveal(referee.hidden(0)))
    refused(referee, "wrong_state", lambda: referee.stand_in(0))  # it has answered
    referee.mark_seat(2, STAND_IN)
    ruling = referee.stand_in(2)
    assert ruling == Ruling(
        forfeits=(Forfeit(2, "was away at the final reveal", len(referee.log)),)
    )
    assert referee.awaited_reveals() == [1]
    record = final_reveals(referee, seats)
    assert record.seats[2].stand_in and record.seat_changes == (
        SeatChange(2, len(record.log), STAND_IN),
    )
    verdict = verify_record(record)
    assert verdict.problems == ()
    assert [v.status for v in verdict.seats] == [OK, OK, FORFEITED]


# ---------------------------------------------------------------- forfeit


def forfeit_position(kind: str) -> tuple[Referee, list[LocalSeat]]:
    """A fixed game, without turn timer, in which `kind` is pending (any
    ability choice for "target")."""
    kinds = {"target": {"eliminate", "steal", "copy", "move_card"}}.get(kind, {kind})
    for seed in range(60):
        referee, seats = fixed_seeded(seed=seed, turn_timer=None)
        play_until(referee, seats, lambda d: d.kind in kinds)
        if referee.decision is not None:
            return referee, seats
    raise AssertionError(f"no {kind} decision in 60 games")


def play_out(referee: Referee, seats: list[LocalSeat], away: set[int]) -> Record:
    """Play to the end; the stand-in plays the seats in `away`."""
    while referee.phase is Phase.PLAYING:
        d = referee.decision
        assert d is not None
        if d.seat in away:
            ruling = referee.stand_in(d.seat)
        else:
            ruling = referee.receive(d.seat, seats[d.seat].answer(referee))
        drawn(seats, ruling)
    for seat in referee.awaited_reveals():
        if seat in away:
            referee.stand_in(seat)
        else:
            referee.receive(seat, seats[seat].final_reveal(referee.hidden(seat)))
    return referee.record()


@pytest.mark.parametrize("kind", ["direction", "place", "reveal", "target", "move_to", "open"])
def test_a_forfeit_settles_the_seats_pending_decision(kind: str) -> None:
    """A seat whose player leaves (as the table does it: marked left, then
    forfeited) leaves nothing pending: the server settles its decision at
    once, logged `by_server`, in a room without turn timer."""
    referee, seats = forfeit_position(kind)
    d = referee.decision
    assert d is not None
    seat, turn, at, events = d.seat, referee.turn, len(referee.log), len(referee.events)
    referee.mark_seat(seat, LEFT)
    ruling = referee.forfeit(seat, "left the game")
    assert ruling.forfeits == (Forfeit(seat, "left the game", at),) and ruling.failure is None
    assert referee.turn == turn + 1, "exactly the pending decision is settled"
    (entry,) = referee.log[at:]
    assert entry.seat == seat and entry.by_server
    if kind == "place":
        assert entry == LogEntry.skip(seat) and ruling.events[0] == PlacementSkipped(seat)
    elif kind == "reveal":
        assert entry == LogEntry(seat, KEEP, by_server=True)
        assert ruling.events[0] == Kept(seat, d.pid, ruling.events[0].tokens)  # type: ignore[arg-type]
    elif kind == "open":
        assert entry.settled and entry.pid == d.pid and ruling.settled == (d.pid,)
    else:
        assert entry.action in d.options
    assert tuple(referee.events[events:]) == ruling.events
    record = play_out(referee, seats, away={seat})
    assert record.seats[seat].left
    verdict = verify_record(record)
    assert verdict.problems == (), verdict.problems
    assert verdict.seats[seat] == SeatVerdict(seat, FORFEITED, "left the game")
    assert all(v.ok for v in verdict.seats if v.seat != seat)


def open_then_own_decision() -> tuple[int, int]:
    """(seed, turn) of a fixed game without turn timer in which, at `turn`, a
    seat must open an eliminated card and, once that card is settled, must
    decide again."""
    for seed in range(60):
        referee, seats = fixed_seeded(seed=seed, turn_timer=None)
        opens = []
        while referee.phase is Phase.PLAYING:
            d = referee.decision
            assert d is not None
            if d.kind == "open":
                opens.append(referee.turn)
            drawn(seats, referee.receive(d.seat, seats[d.seat].answer(referee)))
        for turn in opens:
            referee, seats = fixed_seeded(seed=seed, turn_timer=None)
            play_until(referee, seats, lambda d, r=referee, t=turn: r.turn == t)  # type: ignore[misc]
            seat = referee.decision.seat
            referee.time_out()  # settles the card
            if referee.decision is not None and referee.decision.seat == seat:
                return seed, turn
    raise AssertionError("no such position in 60 games")


def test_a_forfeit_settles_only_the_decision_pending() -> None:
    """The settlement of the seat's pending opening hands it its next
    decision: that one is left to the stand-in (or the timer), as a decision
    that comes after a forfeit always is."""
    seed, turn = open_then_own_decision()
    referee, seats = fixed_seeded(seed=seed, turn_timer=None)
    play_until(referee, seats, lambda d: referee.turn == turn)
    d = referee.decision
    assert d is not None and d.kind == "open"
    at = len(referee.log)
    referee.mark_seat(d.seat, LEFT)
    ruling = referee.forfeit(d.seat, "left the game")
    assert referee.turn == turn + 1 and ruling.settled == (d.pid,)
    assert [e.settled for e in referee.log[at:]] == [True]
    assert referee.decision is not None and referee.decision.seat == d.seat
    ruling = referee.stand_in(d.seat)
    assert referee.turn == turn + 2 and referee.log[-1].by_server and ruling.forfeits == ()
    record = play_out(referee, seats, away={d.seat})
    verdict = verify_record(record)
    assert verdict.problems == () and verdict.seats == record.verdicts
    assert record.verdicts[d.seat] == SeatVerdict(d.seat, FORFEITED, "left the game")


def test_a_forfeit_when_another_seat_decides_plays_nothing() -> None:
    referee, seats = forfeit_position("reveal")
    d = referee.decision
    assert d is not None
    other = (d.seat + 1) % 3
    turn, log = referee.turn, list(referee.log)
    ruling = referee.forfeit(other, "left the game")
    assert ruling == Ruling(forfeits=(Forfeit(other, "left the game", len(log)),))
    assert referee.turn == turn and referee.log == log and referee.decision == d
    # Once only: a second forfeit of that seat records nothing more.
    assert referee.forfeit(other, "left again") == Ruling()
    assert [f.seat for f in referee.forfeits] == [other]


def test_a_forfeit_of_a_seat_that_does_not_exist_changes_nothing() -> None:
    referee, _ = seeded()
    before = state(referee)
    with pytest.raises(ValueError, match="no seat 7"):
        referee.forfeit(7, "no such seat")
    with pytest.raises(ValueError, match="no seat 7"):
        referee.mark_seat(7, LEFT)
    with pytest.raises(ValueError, match="no seat change"):
        referee.mark_seat(0, "vanished")
    assert state(referee) == before


def test_a_forfeit_in_the_revealing_phase_is_for_a_seat_still_awaited() -> None:
    referee, seats = seeded(seed=12)
    play_until(referee, seats, lambda d: False)
    referee.receive(0, seats[0].final_reveal(referee.hidden(0)))
    referee.receive(1, seats[1].final_reveal(referee.hidden(1)))
    assert referee.phase is Phase.REVEALING
    # Seat 0 has answered: leaving now changes nothing of its verdict.
    referee.mark_seat(0, LEFT)
    assert referee.forfeit(0, "left the game") == Ruling()
    referee.forfeit(2, "did not send its final reveal in time")
    assert phase_of(referee) is Phase.DONE
    record = referee.record()
    verdict = verify_record(record)
    assert verdict.problems == ()
    assert verdict.seats == (
        SeatVerdict(0, OK),
        SeatVerdict(1, OK),
        SeatVerdict(2, FORFEITED, "did not send its final reveal in time"),
    )
    assert record.verdicts == verdict.seats and record.seats[0].left


# ---------------------------------------------------------------- the end


class WrongSeed(LocalSeat):
    def final_reveal(self, pids: Any) -> m.FinalReveal:
        return dataclasses.replace(super().final_reveal(pids), seed=new_seed())


def test_the_game_ends_when_every_final_reveal_fails() -> None:
    referee, seats = seeded(4, seed=17)
    seats = [WrongSeed(s.secrets, s.rng) for s in seats]
    play_until(referee, seats, lambda d: False)
    for seat in range(4):
        ruling = referee.receive(seat, seats[seat].final_reveal(referee.hidden(seat)))
        reason = "its seed does not match its seed commitment"
        assert ruling.failure == Forfeit(seat, reason, len(referee.log))
        assert ruling.forfeits == (ruling.failure,)
    assert referee.phase is Phase.DONE and referee.awaited_reveals() == []
    record = referee.record()
    assert all(s is not None for s in record.seeds)
    assert record.verdicts == tuple(SeatVerdict(s, FAILED, reason) for s in range(4))
    verdict = verify_record(decode_record(encode_record(record)))
    assert verdict.problems == () and verdict.seats == record.verdicts


def test_nothing_is_taken_after_a_seats_final_reveal_or_after_the_end() -> None:
    referee, seats = seeded(seed=18)
    play_until(referee, seats, lambda d: False)
    reveal = seats[1].final_reveal(referee.hidden(1))
    referee.receive(1, reveal)
    refused(referee, "wrong_state", lambda: referee.receive(1, reveal))
    lie = dataclasses.replace(reveal, seed=new_seed())
    refused(referee, "wrong_state", lambda: referee.receive(1, lie))
    for seat in (0, 2):
        referee.receive(seat, seats[seat].final_reveal(referee.hidden(seat)))
    assert referee.phase is Phase.DONE
    record = referee.record()
    for seat in range(3):
        refused(referee, "wrong_state", functools.partial(referee.receive, seat, lie))
    refused(referee, "wrong_state", lambda: referee.receive(0, m.KeepCard(turn=referee.turn)))
    refused(referee, "wrong_state", referee.time_out)
    refused(referee, "wrong_state", lambda: referee.stand_in(0))
    refused(referee, "wrong_state", lambda: referee.forfeit(0, "left the game"))
    refused(referee, "wrong_state", lambda: referee.mark_seat(0, LEFT))
    assert referee.record() == record
    assert [v.status for v in record.verdicts] == [OK, OK, OK]


# ---------------------------------------------------------------- hand-over


def test_an_honest_hand_over_lets_a_bot_finish() -> None:
    referee, seats = seeded(2, seed=7, turn_timer=None)
    play_until(referee, seats, lambda d: round_of(referee) == 3)
    old = seats[1]
    message = m.HandOver(
        seed=old.secrets.seed, openings=old.final_reveal(referee.hidden(1)).openings
    )
    at = len(referee.log)
    assert referee.receive(1, message) == Ruling()
    assert referee.seats[1].handed_to_bot
    assert referee.seat_changes == [SeatChange(1, at, HANDED_TO_BOT)]
    refused(referee, "wrong_state", lambda: referee.receive(1, message))
    bot = bot_for(referee, 1, message, random.Random(1))
    assert sorted(bot.secrets.hand) == sorted(old.secrets.hand)
    assert bot.secrets.draw_pile == old.secrets.draw_pile
    seats[1] = bot
    record = finish(referee, seats)
    assert record.seats[1].handed_to_bot
    assert verify_record(record).ok


def test_hand_over_is_for_a_game_being_played() -> None:
    referee = Referee(Rules(3))
    message = m.HandOver(seed=bytes(32), openings=())
    refused(referee, "wrong_state", lambda: referee.receive(0, message))


@pytest.mark.parametrize("lie", ["seed", "opening"])
def test_a_false_hand_over_fails_the_seat_and_play_goes_on(lie: str) -> None:
    referee, seats = seeded(3, seed=8, turn_timer=None)
    play_until(referee, seats, lambda d: round_of(referee) >= 2 and referee.hidden(2) != [])
    liar = seats[2]
    pids = referee.hidden(2)
    assert pids
    reveal = liar.final_reveal(pids)
    seed = new_seed() if lie == "seed" else liar.secrets.seed
    openings = reveal.openings if lie == "seed" else reveal.openings[1:]
    ruling = referee.receive(2, m.HandOver(seed=seed, openings=openings))
    reason = (
        "its seed does not match its seed commitment"
        if lie == "seed"
        else f"did not open card {pids[0]}"
    )
    assert ruling.failure == Forfeit(2, reason, len(referee.log))
    assert ruling.events == () and ruling.forfeits == (ruling.failure,)
    assert referee.phase is Phase.PLAYING and not referee.seats[2].handed_to_bot
    # The player leaves; the server's stand-in plays the seat from now on.
    referee.mark_seat(2, LEFT)
    while referee.phase is Phase.PLAYING:
        d = referee.decision
        assert d is not None
        if d.seat == 2:
            drawn(seats, referee.stand_in(2))
        else:
            drawn(seats, referee.receive(d.seat, seats[d.seat].answer(referee)))
    assert 2 not in referee.awaited_reveals()
    refused(referee, "wrong_state", lambda: referee.receive(2, liar.final_reveal(pids)))
    record = final_reveals(referee, seats)
    assert record.verdicts[2] == SeatVerdict(2, FAILED, reason)
    assert record.seeds[2] == seed and record.final_openings[2] == openings
    verdict = verify_record(record)
    assert verdict.problems == ()
    assert [v.status for v in verdict.seats] == [OK, OK, FAILED]


def test_the_evidence_of_a_false_hand_over_stays() -> None:
    """Its secrets are the seat's final reveal in the record: a later hand-over
    (or final reveal) from that seat is refused, true or not."""
    referee, seats = seeded(3, seed=8, turn_timer=None)
    play_until(referee, seats, lambda d: round_of(referee) >= 2 and referee.hidden(2) != [])
    true = m.HandOver(
        seed=seats[2].secrets.seed, openings=seats[2].final_reveal(referee.hidden(2)).openings
    )
    false = dataclasses.replace(true, seed=new_seed())
    assert referee.receive(2, false).failure is not None
    refused(referee, "wrong_state", lambda: referee.receive(2, true))
    refused(referee, "wrong_state", lambda: referee.receive(2, false))
    assert referee.seeds[2] == false.seed and not referee.seats[2].handed_to_bot


@pytest.mark.parametrize("when", ["at once", "mid-game"])
def test_a_game_whose_every_hand_over_failed_still_ends(when: str) -> None:
    """Every seat's hand-over failed (its secrets are its final reveal): the
    stand-in plays the seats to the end, and with nobody left to reveal the
    game is over, with the verdicts it has."""
    referee, seats = seeded(3, seed=8, turn_timer=None)
    if when == "mid-game":
        play_until(referee, seats, lambda d: round_of(referee) >= 2)
    reason = "its seed does not match its seed commitment"
    for seat in range(3):
        ruling = referee.receive(seat, m.HandOver(seed=new_seed(), openings=()))
        assert ruling.failure is not None and ruling.failure.reason == reason
        referee.mark_seat(seat, LEFT)  # the player leaves: the stand-in plays the seat
    while phase_of(referee) is Phase.PLAYING:
        d = referee.decision
        assert d is not None
        referee.stand_in(d.seat)
    assert phase_of(referee) is Phase.DONE and referee.awaited_reveals() == []
    record = referee.record()
    assert record.verdicts == tuple(SeatVerdict(s, FAILED, reason) for s in range(3))
    verdict = verify_record(decode_record(encode_record(record)))
    assert verdict.problems == () and verdict.seats == record.verdicts


# ---------------------------------------------------------------- failed openings: play goes on


def bad_opening(real: Opening, lie: str) -> Opening:
    """`real` made wrong in one way."""
    if lie == "card":
        return Opening(
            real.pid, next(c for c in CARDS[real.card.family] if c != real.card), real.nonce
        )
    if lie == "nonce":
        return Opening(real.pid, real.card, flip(real.nonce))
    assert lie == "family"
    return Opening(real.pid, Card((real.card.family + 1) % 5, real.card.kind), real.nonce)


def bad_reason(o: Opening, lie: str, family: str) -> str:
    if lie == "family":
        return f"card {o.pid} was placed as a {family} card, but was opened as {o.card}"
    return f"opening of card {o.pid} does not match its commitment"


@pytest.mark.parametrize("lie", ["card", "nonce", "family"])
def test_a_failed_reveal_is_kept_by_the_server_and_play_goes_on(lie: str) -> None:
    referee, seats = fixed_seeded(seed=1, turn_timer=None)
    play_until(referee, seats, lambda d: d.kind == "reveal")
    d = referee.decision
    assert d is not None and d.pid is not None
    seat, turn, at = d.seat, referee.turn, len(referee.log)
    real = seats[seat].secrets.opening(d.pid)
    bad = bad_opening(real, lie)
    reason = bad_reason(bad, lie, ["red", "blue", "green"][seat])
    ruling = referee.receive(seat, m.RevealCard(turn=turn, card=bad.card, nonce=bad.nonce))
    assert ruling.failure == Forfeit(seat, reason, at, bad)
    assert ruling.forfeits == (ruling.failure,) and ruling.openings == ()
    # The server kept the card face down in the seat's place: one decision, settled.
    assert ruling.events[0] == Kept(seat, d.pid, ruling.events[0].tokens)
    assert tuple(referee.events[-len(ruling.events) :]) == ruling.events
    assert referee.phase is Phase.PLAYING and referee.turn == turn + 1
    assert referee.log[at:] == [LogEntry(seat, KEEP, by_server=True)]
    assert referee.forfeits == [Forfeit(seat, reason, at, bad)]
    assert d.pid in referee.hidden(seat) and referee.opened_by(seat) == []
    # The seat plays on (its player is back), and the game reaches its end.
    record = finish(referee, seats)
    assert record.results.complete and record.results.winners
    assert any(e.seat == seat and not e.by_server for e in record.log[at + 1 :])
    assert record.verdicts[seat] == SeatVerdict(seat, FAILED, reason)
    assert [v.status for v in record.verdicts] == [FAILED if s == seat else OK for s in range(3)]
    verdict = verify_record(record)
    assert verdict.problems == () and verdict.seats == record.verdicts
    assert verify_record_bytes(encode_record(record)) == verdict


def test_a_failed_opening_of_an_eliminated_card_is_settled_and_play_goes_on() -> None:
    referee, seats = eliminated_game(turn_timer=None)
    d = referee.decision
    assert d is not None and d.pid is not None
    seat, pid, turn, at = d.seat, d.pid, referee.turn, len(referee.log)
    settled = settled_card(d.options)
    bad = bad_opening(seats[seat].secrets.opening(pid), "card")
    reason = bad_reason(bad, "card", "")
    refused(
        referee,
        "wrong_state",
        lambda: referee.receive(seat, m.OpenCard(pid=pid + 1, card=bad.card, nonce=bad.nonce)),
    )
    refused(
        referee,
        "wrong_state",
        lambda: referee.receive(
            (seat + 1) % 3, m.OpenCard(pid=pid, card=bad.card, nonce=bad.nonce)
        ),
    )
    ruling = referee.receive(seat, m.OpenCard(pid=d.pid, card=bad.card, nonce=bad.nonce))
    assert ruling.failure == Forfeit(seat, reason, at, bad) and ruling.settled == (d.pid,)
    eliminated = [e for e in ruling.events if type(e) is Eliminated]
    assert [(e.pid, e.card) for e in eliminated] == [(d.pid, settled)]
    assert referee.phase is Phase.PLAYING and referee.turn == turn + 1
    assert referee.log[at:] == [LogEntry(seat, Open(settled), d.pid, settled=True, by_server=True)]
    assert referee.forfeits == [Forfeit(seat, reason, at, bad)]
    record = finish(referee, seats)
    assert record.results.complete
    verdict = verify_record(record)
    assert verdict.problems == ()
    assert verdict.seats[seat] == SeatVerdict(seat, FAILED, reason)
    assert all(v.ok for v in verdict.seats if v.seat != seat)


def test_an_open_is_refused_when_a_reveal_is_due() -> None:
    referee, seats = seeded(seed=13)
    play_until(referee, seats, lambda d: d.kind == "reveal")
    d = referee.decision
    assert d is not None and d.pid is not None
    o = seats[d.seat].secrets.opening(d.pid)
    refused(referee, "wrong_state", lambda: referee.receive(d.seat, m.OpenCard(pid=o.pid, card=o.card, nonce=o.nonce)))  # fmt: skip
    assert referee.forfeits == []


class Forger(LocalSeat):
    """Sends a wrong card in every opening it makes during play (its final
    reveal is honest)."""

    def answer(self, referee: Referee) -> m.Message:
        message = super().answer(referee)
        if isinstance(message, m.RevealCard | m.OpenCard):
            o = Opening(referee.decision.pid, message.card, message.nonce)  # type: ignore[arg-type]
            return dataclasses.replace(message, card=bad_opening(o, "card").card)
        return message


def test_every_failed_opening_is_answered_by_the_server_and_never_stops_play() -> None:
    referee, seats = fixed_seeded(3, seed=2, seat_class=Forger, special=0, turn_timer=None)
    failures = []
    while referee.phase is Phase.PLAYING:
        turn = referee.turn
        seat = seats[referee.decision.seat]
        ruling = referee.receive(seat.seat, seat.answer(referee))
        if ruling.failure is not None:
            failures.append(ruling.failure)
        drawn(seats, ruling)
        assert referee.turn == turn + 1
    assert len(failures) >= 3
    # Each failed opening is a forfeit with its evidence, and the server's answer follows it.
    assert referee.forfeits == failures and all(f.seat == 0 and f.opening for f in failures)
    answers = [referee.log[f.log_index] for f in referee.forfeits]
    assert all(a.seat == 0 and a.by_server for a in answers)
    # Failed reveals are kept, failed openings of eliminated cards settled; both happened.
    assert any(a.action == KEEP for a in answers) and any(a.settled for a in answers)
    assert all(a.settled or a.action == KEEP for a in answers)
    record = final_reveals(referee, seats)  # honest at the end
    verdict = verify_record(record)
    assert verdict.problems == ()
    assert [v.status for v in verdict.seats] == [FAILED, OK, OK]
    assert verdict.seats[0].reason == referee.forfeits[0].reason


class ComesBack(LocalSeat):
    """Lets its first demanded opening time out, so the server settles that
    card, then comes back: it plays first, and always reveals, its cards
    whose identities a settlement took (its honest openings then clash)."""

    referee: Referee

    def settled(self) -> list[Card]:
        log = self.referee.log
        return [e.action.card for e in log if e.settled and e.seat == self.seat]

    def answers(self, decision: Any) -> bool:
        return decision.kind != "open" or bool(self.settled())

    def choose_placement(self, options: list[tuple[Card, object]]) -> tuple[Card, object]:
        clashing = [o for o in options if o[0] in self.settled()]
        return super().choose_placement(clashing or options)

    def answer(self, referee: Referee) -> m.Message:
        d = referee.decision
        assert d is not None
        if d.kind == "reveal" and self.secrets.opening(d.pid).card in self.settled():  # type: ignore[arg-type]
            o = self.secrets.opening(d.pid)  # type: ignore[arg-type]
            return m.RevealCard(turn=referee.turn, card=o.card, nonce=o.nonce)
        return super().answer(referee)


def clash_game() -> Record:
    """A game in which seat 1's honest openings clash with settled identities,
    both on a reveal and on an eliminated card."""
    for seed in range(60):
        referee, seats = fixed_table(3, seed=seed, seat_class=ComesBack, special=1)
        seats[1].referee = referee  # type: ignore[attr-defined]
        record = run_local_game(referee, seats)
        answers = [record.log[f.log_index] for f in record.forfeits if f.opening is not None]
        if any(a.settled for a in answers) and any(not a.settled for a in answers):
            return record
    raise AssertionError("no game with both clashes in 60 tries")


CLASH = clash_game()


def test_a_settled_identity_that_clashes_with_a_later_opening_does_not_stop_play() -> None:
    record = CLASH
    assert record.results.complete and record.results.winners
    first, *clashes = record.forfeits
    assert first.seat == 1 and first.opening is None and first.reason.endswith("in time")
    assert clashes and all(f.seat == 1 and f.opening is not None for f in clashes)
    settled = {e.action.card for e in record.log if e.settled}
    for f in clashes:
        assert f.opening is not None and f.opening.card in settled
        assert f.reason == (
            f"{f.opening.card} is accounted for elsewhere; it cannot be card {f.opening.pid}"
        )
        answer = record.log[f.log_index]
        assert answer.seat == 1 and answer.by_server and (answer.settled or answer.action == KEEP)
    # The seat is not at fault: it forfeited (earlier), it did not fail.
    assert record.verdicts == (
        SeatVerdict(0, OK),
        SeatVerdict(1, FORFEITED, first.reason),
        SeatVerdict(2, OK),
    )
    verdict = verify_record(decode_record(encode_record(record)))
    assert verdict.problems == () and verdict.seats == record.verdicts


def test_a_clash_is_no_excuse_for_a_seat_that_had_not_forfeited() -> None:
    """The engine refuses the opening and the commitments accept it: only a
    settlement can cause that, so a seat that had not forfeited is at fault."""
    first = CLASH.forfeits[0]

    def late(p: dict[str, Any]) -> None:
        p["forfeits"].pop(0)  # the time-out that preceded the clashes never happened
        p["verdicts"][1] = {"seat": 1, "status": "failed", "reason": "made up"}

    verdict = verify_record_bytes(tamper(encode_record(CLASH), late))
    settled = next(i for i, e in enumerate(CLASH.log) if e.settled)
    assert settled == first.log_index
    assert (
        f"log entry {settled}: card {CLASH.log[settled].pid} was settled,"
        " but seat 1 did not forfeit before it"
    ) in verdict.problems
    assert verdict.seats[1].status == FAILED
    assert "is accounted for elsewhere" in (verdict.seats[1].reason or "")


# ---------------------------------------------------------------- the server's decisions in the record


def by_server_game(seed: int) -> tuple[Record, list[list[int]]]:
    """A fixed game with `Absent` seats, checking at each decision that what
    the server played for a seat, and only that, is marked `by_server`: the
    record, and per seat [decisions the server made, decisions]."""
    referee, seats = fixed_seeded(3, seed=seed, seat_class=Absent)
    expected = [[0, 0] for _ in range(3)]
    while referee.phase is Phase.PLAYING:
        d = referee.decision
        assert d is not None
        at = len(referee.log)
        by_server = not seats[d.seat].answers(d)
        if by_server:
            ruling = referee.time_out()
        else:
            ruling = referee.receive(d.seat, seats[d.seat].answer(referee))
            by_server = ruling.failure is not None  # the server answered in the seat's place
        drawn(seats, ruling)
        new = referee.log[at:]
        assert new and all(e.by_server == by_server for e in new)
        assert len(new) == 1 or [type(e.action).__name__ for e in new] == ["Reveal", "Open"]
        expected[d.seat][0] += by_server
        expected[d.seat][1] += 1
    return final_reveals(referee, seats), expected


def test_the_servers_decisions_are_marked_by_server() -> None:
    for seed in range(40):
        record, expected = by_server_game(seed)
        kinds = {type(e.action).__name__ for e in record.log if e.by_server}
        assert not kinds & {"Place", "Reveal"}
        if {"NoneType", "Keep", "Open", "Target"} <= kinds:  # skips, keeps, settlements...
            break
    else:
        raise AssertionError("no game with every kind of server decision in 40 tries")
    data = encode_record(record)
    assert decode_record(data) == record
    flagged = [i for i, e in enumerate(plain_log(data)) if e.get("by_server")]
    assert flagged == [i for i, e in enumerate(record.log) if e.by_server]
    assert all(plain_log(data)[i]["by_server"] is True for i in flagged)
    assert decision_counts(record) == [tuple(c) for c in expected]
    verdict = verify_record(record)
    assert verdict.problems == ()
    text = format_verdict(record, verdict)
    for seat, (by_server, total) in enumerate(expected):
        assert (
            f"the server made {by_server} of its {total} decisions" in text.splitlines()[1 + seat]
        )


BY_SERVER_DATA = encode_record(CLASH)


@pytest.mark.parametrize(
    "entry, error",
    [
        (
            {"seat": 1, "action": {"type": "place", "card": ["blue", None], "at": "first"},
             "pid": 0, "commitment": bytes(32), "by_server": True},
            "the server never places a card",
        ),
        ({"seat": 1, "action": {"type": "reveal"}, "by_server": True}, "never reveals"),
        (
            {"seat": 1, "action": {"type": "open", "card": ["blue", "spy"]}, "pid": 3,
             "nonce": bytes(32), "by_server": True},
            "an opening with a nonce is the seat's",
        ),
        (
            {"seat": 1, "action": {"type": "open", "card": ["blue", "spy"]}, "pid": 3,
             "settled": True},
            "a settled opening is the server's",
        ),
        ({"seat": 1, "action": {"type": "keep"}, "by_server": "yes"}, "'by_server' is true or false"),
    ],
)  # fmt: skip
def test_a_misplaced_by_server_flag_is_refused(entry: dict[str, Any], error: str) -> None:
    with pytest.raises(RecordError, match=error):
        decode_record(tamper(BY_SERVER_DATA, lambda p: p["log"].__setitem__(3, entry)))


@pytest.mark.parametrize(
    "change, error",
    [
        (lambda f: f.pop("log_index"), "lacks 'log_index'"),
        (lambda f: f.__setitem__("log_index", -1), "'log_index' is an integer in 0.."),
        (lambda f: f.__setitem__("log_index", 10_000), "'log_index' is an integer in 0.."),
        (lambda f: f.__setitem__("log_index", 0), "forfeits go in the order they happened"),
    ],
)
def test_a_forfeit_out_of_the_log_is_refused(change: Callable[[Any], object], error: str) -> None:
    with pytest.raises(RecordError, match=error):
        decode_record(tamper(BY_SERVER_DATA, lambda p: change(p["forfeits"][1])))


# ---------------------------------------------------------------- seat changes


def test_seat_changes_reach_the_record() -> None:
    referee, seats = new_local_table(3, seed=15, turn_timer=None)
    referee.mark_seat(1, STAND_IN)  # still seeding
    start(referee, seats)
    play_until(referee, seats, lambda d: referee.turn == 4)
    referee.mark_seat(1, BACK)
    referee.mark_seat(1, LEFT)
    referee.mark_seat(2, HANDED_TO_BOT)  # as `hand_over` marks it
    assert referee.seat_changes == [
        SeatChange(1, 0, STAND_IN),
        SeatChange(1, 4, BACK),
        SeatChange(1, 4, LEFT),
        SeatChange(2, 4, HANDED_TO_BOT),
    ]
    record = decode_record(encode_record(finish(referee, seats)))
    # The flags say what ever happened to the seat.
    flags = [(s.left, s.stand_in, s.handed_to_bot) for s in record.seats]
    assert flags == [(False, False, False), (True, True, False), (False, False, True)]
    assert record.seat_changes == tuple(referee.seat_changes)
    assert verify_record(record).ok


# ---------------------------------------------------------------- the server's randomness


def test_by_default_the_referees_randomness_comes_from_secrets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[Any] = []

    def token_bytes(size: int) -> bytes:
        calls.append(size)
        return bytes([len(calls)]) * size

    def choice(options: Any) -> Any:
        calls.append(list(options))
        return options[-1]

    monkeypatch.setattr(entropy_module.secrets, "token_bytes", token_bytes)
    monkeypatch.setattr(entropy_module.secrets, "choice", choice)
    referee = Referee(Rules(3))
    assert type(referee._entropy) is SystemEntropy
    assert calls == [16, 32]  # the game id, then the server seed
    assert referee.game_id == bytes([1]) * 16
    for seat in range(3):
        referee.receive(seat, m.SeedCommit(commitment=bytes(32)))
    assert referee.server_seed == bytes([2]) * 32
    d = referee.decision
    assert d is not None and d.kind == "direction"
    referee.time_out()
    assert calls[2:] == [list(range(len(d.options)))]  # (an index among them)
    assert referee.log[-1].action == d.options[-1]


class LeavesChoicesToTheServer(LocalSeat):
    """Places, reveals and opens its cards, and lets every choice (direction,
    targets, moves) time out."""

    def answers(self, decision: Any) -> bool:
        return decision.kind in ("place", "reveal", "open")


def choices_game(label: str) -> tuple[Record, list[list[Any]]]:
    """A game whose seats let every choice time out, with a
    `FixedEntropy(label)`: the record, and the options of each choice the
    referee made."""
    rules = Rules(3)
    referee = Referee(rules, turn_timer=60, entropy=FixedEntropy(label))
    rng = random.Random(19)
    seats = [
        LeavesChoicesToTheServer(
            FixedSecrets(rules, referee.game_id, i), random.Random(rng.random())
        )
        for i in range(3)
    ]
    start(referee, seats)
    options = []
    while referee.phase is Phase.PLAYING:
        d = referee.decision
        assert d is not None
        if seats[d.seat].answers(d):
            ruling = referee.receive(d.seat, seats[d.seat].answer(referee))
        else:
            options.append(list(d.options))
            ruling = referee.time_out()
        drawn(seats, ruling)
    return final_reveals(referee, seats), options


def test_a_fixed_entropy_makes_the_referees_choices_reproducible() -> None:
    a, options = choices_game("one")
    assert choices_game("one") == (a, options)
    assert len(options) >= 5 and any(len(o) > 1 for o in options)
    # The game id, the server seed, then every choice: one stream.
    entropy = FixedEntropy("one")
    assert (entropy.token_bytes(16), entropy.token_bytes(32)) == (a.game_id, a.server_seed)
    chosen = [e.action for e in a.log if e.by_server]
    assert chosen == [entropy.choice(o) for o in options]
    c, _ = choices_game("two")
    assert (c.game_id, c.server_seed) != (a.game_id, a.server_seed)
    for record in (a, c):
        verdict = verify_record(record)
        assert verdict.problems == () and verdict.seats == record.verdicts


# ---------------------------------------------------------------- many games, random misbehaviour

# Where a seat's player is (the driver's own account, as a table keeps it).
PRESENT, AWAY, GONE, BOT = "present", "away", "gone", "bot"
STATUS_ORDER = {OK: 0, FORFEITED: 1, FAILED: 2}


class Chaos:
    """Drives one fixed game in which each seat may misbehave, drawn from
    `seed`: let decisions and openings time out, forge openings, go away and
    come back (the stand-in plays meanwhile), leave, hand its secrets over
    (true or false ones), stay silent at the end or send a false final
    reveal. It keeps its own account of what each seat's verdict must be
    (`expected`) and of what happened (`seen`), to compare with the record."""

    def __init__(self, seed: int) -> None:
        rng = self.rng = random.Random(seed)
        players = rng.choice([2, 3, 4, 5])
        self.timer = rng.choice([None, 60])
        self.referee, self.seats = fixed_table(players, seed=seed, turn_timer=self.timer)
        traits = ["slow", "forger", "wanders", "leaves", "hands_over", "lies_at_the_end", "silent_at_the_end"]  # fmt: skip
        self.traits = [
            {t for t in traits if rng.random() < 0.2} if rng.random() < 0.75 else set()
            for _ in range(players)
        ]
        self.where = [PRESENT] * players
        self.expected = [OK] * players
        self.seen: set[str] = set()
        self.changes: list[tuple[int, str]] = []

    def blame(self, seat: int, status: str, what: str) -> None:
        self.seen.add(what)
        if STATUS_ORDER[status] > STATUS_ORDER[self.expected[seat]]:
            self.expected[seat] = status

    def mark(self, seat: int, change: str, where: str) -> None:
        self.referee.mark_seat(seat, change)
        self.changes.append((seat, change))
        self.where[seat] = where

    def drawn(self, ruling: Ruling) -> None:
        drawn(self.seats, ruling)

    def seat_event(self, seat: int) -> None:
        """Before one of `seat`'s decisions: maybe its player goes away, comes
        back, leaves or hands the seat over."""
        rng, referee, traits, where = self.rng, self.referee, self.traits[seat], self.where[seat]
        if where == AWAY and rng.random() < 0.2:
            self.mark(seat, BACK, PRESENT)
            self.seen.add("back")
        elif where == PRESENT and "wanders" in traits and rng.random() < 0.05:
            self.mark(seat, STAND_IN, AWAY)
            self.seen.add("away")
        elif where in (PRESENT, AWAY) and "leaves" in traits and rng.random() < 0.02:
            self.mark(seat, LEFT, GONE)  # as the table does: marked, then forfeited
            self.drawn(referee.forfeit(seat, "left the game"))
            self.blame(seat, FORFEITED, "left")
        elif where in (PRESENT, AWAY) and "hands_over" in traits and rng.random() < 0.03:
            secrets = self.seats[seat].secrets
            message = m.HandOver(
                seed=secrets.seed, openings=tuple(secrets.final_openings(referee.hidden(seat)))
            )
            true = rng.random() < 0.5
            if not true:
                message = dataclasses.replace(message, seed=new_seed())
            ruling = referee.receive(seat, message)
            assert ruling.events == ()
            if true:
                assert ruling.failure is None and referee.seats[seat].handed_to_bot
                self.changes.append((seat, HANDED_TO_BOT))
                self.where[seat] = BOT
                self.seats[seat] = bot_for(referee, seat, message, random.Random(rng.random()))
                self.traits[seat] = set()  # the server's bot plays honestly
                self.seen.add("true hand-over")
            else:
                assert ruling.failure is not None
                self.blame(seat, FAILED, "false hand-over")
                self.mark(seat, LEFT, GONE)  # the player leaves either way

    def decide(self) -> None:
        referee, rng = self.referee, self.rng
        d = referee.decision
        assert d is not None
        seat, turn, at = d.seat, referee.turn, len(referee.log)
        self.seat_event(seat)
        if referee.turn != turn:  # the player left: its forfeit played the decision
            return
        traits = self.traits[seat]
        if self.where[seat] in (AWAY, GONE):
            ruling = referee.stand_in(seat)
            if d.kind == "open":
                self.blame(seat, FORFEITED, "stand-in opening")
        elif "slow" in traits and (d.kind == "open" or self.timer) and rng.random() < 0.3:
            ruling = referee.time_out(turn=turn)
            if d.kind == "open":
                self.blame(seat, FORFEITED, "opening timed out")
            else:
                self.seen.add(f"time-out {d.kind}")
        else:
            message = self.seats[seat].answer(referee)
            forged = (
                "forger" in traits
                and isinstance(message, m.RevealCard | m.OpenCard)
                and rng.random() < 0.3
            )
            if forged:
                assert isinstance(message, m.RevealCard | m.OpenCard)
                o = Opening(d.pid, message.card, message.nonce)  # type: ignore[arg-type]
                message = dataclasses.replace(message, card=bad_opening(o, "card").card)
            ruling = referee.receive(seat, message)
            if forged:
                assert ruling.failure is not None and ruling.failure.opening is not None
                self.blame(seat, FAILED, "forged opening")
            elif ruling.failure is not None:
                # An honest opening refused: only a settled identity can clash with it.
                assert (
                    self.expected[seat] != OK
                    and "is accounted for elsewhere" in ruling.failure.reason
                )
                self.seen.add("clash")
        self.drawn(ruling)
        assert referee.turn == turn + 1 and len(referee.log) > at

    def end(self) -> None:
        referee, rng = self.referee, self.rng
        for seat in referee.awaited_reveals():
            traits = self.traits[seat]
            if self.where[seat] in (AWAY, GONE):
                referee.stand_in(seat)
                self.blame(seat, FORFEITED, "stand-in final reveal")
            elif "silent_at_the_end" in traits:
                self.blame(seat, FORFEITED, "silent at the end")
            else:
                message = self.seats[seat].final_reveal(referee.hidden(seat))
                if "lies_at_the_end" in traits:
                    if message.openings and rng.random() < 0.5:
                        o = message.openings[0]
                        lie = (Opening(o.pid, o.card, flip(o.nonce)), *message.openings[1:])
                        message = dataclasses.replace(message, openings=lie)
                    else:
                        message = dataclasses.replace(message, seed=new_seed())
                ruling = referee.receive(seat, message)
                if "lies_at_the_end" in traits:
                    assert ruling.failure is not None
                    self.blame(seat, FAILED, "false final reveal")
        silent = referee.awaited_reveals()
        if silent:
            # A seat forfeits once: its first forfeit stays its reason.
            ruling = referee.time_out()
            assert {f.seat for f in ruling.forfeits} <= set(silent)
        assert referee.phase is Phase.DONE

    def play(self) -> Record:
        start(self.referee, self.seats)
        while self.referee.phase is Phase.PLAYING:
            self.decide()
        self.end()
        return self.referee.record()


@pytest.mark.slow  # (many examples: `make test` runs it, not `make test-fast`)
def test_the_recorded_verdicts_are_the_verifiers_over_many_misbehaving_games() -> None:
    seen: set[str] = set()
    statuses: set[str] = set()
    for seed in range(120):
        chaos = Chaos(seed)
        record = chaos.play()
        verdict = verify_record(decode_record(encode_record(record)))
        assert verdict.problems == (), (seed, verdict.problems)
        assert record.verdicts == verdict.seats, seed
        assert [v.status for v in record.verdicts] == chaos.expected, (seed, record.verdicts)
        assert verdict.ok == (set(chaos.expected) == {OK})
        # The seat flags say what ever happened to each seat.
        for seat, info in enumerate(record.seats):
            changes = {c for s, c in chaos.changes if s == seat}
            assert (info.stand_in, info.left, info.handed_to_bot) == (
                STAND_IN in changes,
                LEFT in changes,
                HANDED_TO_BOT in changes,
            )
        assert [(c.seat, c.change) for c in record.seat_changes] == chaos.changes
        seen |= chaos.seen
        statuses |= set(chaos.expected)
    # Every kind of misbehaviour happened, and every verdict.
    assert statuses == {OK, FAILED, FORFEITED}
    assert seen >= {
        "left", "away", "back", "true hand-over", "false hand-over", "forged opening",
        "opening timed out", "stand-in opening", "stand-in final reveal", "silent at the end",
        "false final reveal", "clash", "time-out place", "time-out reveal",
    }, seen  # fmt: skip

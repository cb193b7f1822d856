"""The referee as the server's game core: wire messages in, turns, error codes,
skipped placements, time-outs and hand-overs, and what the record makes of them."""

from __future__ import annotations

import contextlib
import dataclasses
import doctest
import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack
import pytest
from fairness_helpers import tamper

from oriflamme import protocol
from oriflamme.engine import IllegalAction, Rules
from oriflamme.engine.events import PlacementSkipped
from oriflamme.protocol import messages as m
from oriflamme.protocol.commitments import Opening, new_seed
from oriflamme.protocol.errors import CODES
from oriflamme.protocol.examples import examples
from oriflamme.protocol.localgame import LocalSeat, SeatSecrets, new_local_table, run_local_game
from oriflamme.protocol.record import (
    FAILED,
    FORFEITED,
    OK,
    LogEntry,
    Record,
    RecordError,
    SeatVerdict,
    decode_record,
    encode_record,
)
from oriflamme.protocol.referee import (
    DONE,
    GAME_MESSAGES,
    PLAYING,
    REVEALING,
    NotYourTurn,
    Referee,
    RefereeError,
    SeatForfeited,
    StaleTurn,
    error_code,
)
from oriflamme.protocol.verify import verify_record, verify_record_bytes

CONNECTION_AND_LOBBY = {
    "hello", "ping", "sync", "list_rooms", "create_room", "join_room", "spectate",
    "leave_room", "ready", "start_game", "add_bot", "remove_bot", "chat",
}  # fmt: skip


def seeded(players: int = 3, seed: int = 1) -> tuple[Referee, list[LocalSeat]]:
    """A table whose seeds are committed and whose seats know their deals."""
    referee, seats = new_local_table(players, seed=seed)
    for s in seats:
        referee.receive(s.seat, m.SeedCommit(commitment=s.secrets.seed_commitment))
    for s in seats:
        s.secrets.learn_server_seed(referee.server_seed)
    return referee, seats


def play_until(referee: Referee, seats: list[LocalSeat], stop: Callable[[Any], bool]) -> None:
    """Play on (seats' own answers) until the pending decision satisfies `stop`."""
    while referee.decision is not None and not stop(referee.decision):
        for event in seats[referee.decision.seat].play(referee):
            if type(event).__name__ == "Drew":
                seats[event.seat].secrets.draw(len(event.cards))  # type: ignore[union-attr]


def finish(referee: Referee, seats: list[LocalSeat]) -> Record:
    # A seat that forfeited and plays on may open a card whose identity a
    # settlement used: play stops there (SeatForfeited), and the game is recorded.
    with contextlib.suppress(SeatForfeited):
        play_until(referee, seats, lambda d: False)
    assert referee.phase == REVEALING
    for seat in referee.awaited():
        with contextlib.suppress(SeatForfeited):
            referee.receive(seat, seats[seat].final_reveal(referee.hidden(seat)))
    assert referee.phase == DONE
    return referee.record()


# ---------------------------------------------------------------- the package

PROTOCOL_DIR = Path(__file__).resolve().parents[2] / "protocol"


def test_the_protocol_version_is_defined_once() -> None:
    defining = [
        path.name
        for path in sorted(PROTOCOL_DIR.glob("*.py"))
        if re.search(r"^PROTOCOL_VERSION\b.*=", path.read_text(encoding="utf-8"), re.M)
    ]
    assert defining == ["commitments.py"]
    assert m.SUPPORTED_VERSIONS == (protocol.PROTOCOL_VERSION,)


def test_the_package_docstring_example() -> None:
    assert doctest.testmod(protocol).failed == 0
    assert set(protocol.__all__) <= set(dir(protocol))


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


TURNED = [cls for cls in GAME_MESSAGES if any(f.name == "turn" for f in cls.FIELDS)]


def test_the_decision_messages_are_those_with_a_turn() -> None:
    assert {cls.TYPE for cls in TURNED} == {
        "direction", "place", "keep", "reveal", "choose", "move",
    }  # fmt: skip


@pytest.mark.parametrize("cls", TURNED, ids=lambda c: c.TYPE)
def test_a_stale_turn_is_refused_and_changes_nothing(cls: type[m.Message]) -> None:
    referee, seats = seeded()
    play_until(referee, seats, lambda d: d.kind == "reveal")
    d = referee.decision
    assert d is not None
    before = (referee.turn, len(referee.log), len(referee.events))
    for turn in (referee.turn - 1, referee.turn + 1):
        message = dataclasses.replace(examples()[cls.TYPE], turn=turn)  # type: ignore[type-var]
        with pytest.raises(StaleTurn) as caught:
            referee.receive(d.seat, message)
        assert error_code(caught.value) == "stale_turn"
    assert (referee.turn, len(referee.log), len(referee.events)) == before


def test_turn_counts_every_settled_decision_once() -> None:
    """Answers, skips, defaults and settlements each count one; a reveal with its opening one."""

    class Absent(LocalSeat):
        # Openings are always answered: a settled card could clash with a
        # later reveal and stop play (see the settlement test below).
        def answers(self, decision: Any) -> bool:
            return decision.kind == "open" or self.rng.random() < 0.5

    referee, seats = new_local_table(3, seed=4, seat_class=Absent)
    for s in seats:
        referee.commit_seed(s.seat, s.secrets.seed_commitment)
    for s in seats:
        s.secrets.learn_server_seed(referee.server_seed)
    assert referee.turn == 0
    kinds = set()
    while referee.phase == PLAYING:
        d = referee.decision
        assert d is not None
        before = referee.turn
        seat = seats[d.seat]
        if seat.answers(d):
            message = seat.answer(referee)
            kinds.add(message.TYPE)
            for event in referee.receive(d.seat, message):
                if type(event).__name__ == "Drew":
                    seats[event.seat].secrets.draw(len(event.cards))  # type: ignore[union-attr]
        else:
            kinds.add(f"time_out {d.kind}")
            referee.time_out(turn=before)
        assert referee.turn == before + 1
    assert {"reveal", "place", "time_out place", "time_out reveal"} <= kinds
    # Equivalently: one per log entry, the opening that follows a reveal excepted.
    log = referee.log
    after_reveal = sum(
        1 for a, b in zip(log, log[1:], strict=False) if type(a.action).__name__ == "Reveal"
    )
    assert referee.turn == len(log) - after_reveal


def test_error_codes_are_catalog_codes() -> None:
    referee, _ = seeded()
    cases = {
        "wrong_state": lambda: referee.receive(0, m.SeedCommit(commitment=bytes(32))),
        "not_your_turn": lambda: referee.receive(1, m.Direction(turn=0, direction="left-to-right")),
        "stale_turn": lambda: referee.receive(0, m.Direction(turn=5, direction="left-to-right")),
        "illegal_action": lambda: referee.receive(0, m.Keep(turn=0)),
    }
    for code, request in cases.items():
        with pytest.raises(Exception) as caught:
            request()
        assert error_code(caught.value) == code and code in CODES
    assert error_code(SeatForfeited(0, "forged")) == "bad_opening"
    assert error_code(KeyError("a bug")) == "internal"
    assert referee.turn == 0 and referee.log == []


def test_place_takes_the_family_as_on_the_wire_or_as_a_number() -> None:
    referee, seats = seeded()
    referee.act(0, referee.decision.options[0])  # type: ignore[union-attr]
    with pytest.raises(RefereeError, match="a family is one of"):
        referee.place(0, "first", "purple", bytes(32))
    referee.place(0, "first", "red", bytes(32), turn=1)
    referee.place(1, "first", 1, bytes(32), turn=2)
    assert [e.action.card.family for e in referee.log[1:]] == [0, 1]  # type: ignore[union-attr]


# ---------------------------------------------------------------- skipped placements


def test_skip_placement_is_only_for_the_seat_whose_placement_is_pending() -> None:
    referee = Referee(Rules(3))
    with pytest.raises(RefereeError):
        referee.skip_placement(0)  # still seeding
    referee, seats = seeded()
    with pytest.raises(IllegalAction, match="no placement to skip"):
        referee.skip_placement(0)  # the direction is pending
    play_until(referee, seats, lambda d: d.kind == "place")
    with pytest.raises(NotYourTurn):
        referee.skip_placement(1)
    with pytest.raises(StaleTurn):
        referee.skip_placement(0, turn=0)
    assert referee.turn == 1 and len(referee.log) == 1
    hand = len(referee.game.hands[0])
    events = referee.skip_placement(0, turn=1)
    assert events[0] == PlacementSkipped(0)
    assert referee.log[-1] == LogEntry.skip(0) and referee.log[-1].skipped
    assert referee.turn == 2 and referee.next_pid == 0
    assert len(referee.game.hands[0]) == hand
    assert referee.decision is not None and referee.decision.seat == 1
    play_until(referee, seats, lambda d: d.kind == "reveal")
    with pytest.raises(IllegalAction):
        referee.skip_placement(referee.decision.seat)  # type: ignore[union-attr]


class SkipsSomePlacements(LocalSeat):
    """Lets its placements time out in the rounds of `skipped_rounds`."""

    skipped_rounds: set[int] = {2, 4, 5}
    referee: Referee

    def answers(self, decision: Any) -> bool:
        return decision.kind != "place" or self.referee.game.round not in self.skipped_rounds


class NeverPlaces(SkipsSomePlacements):
    skipped_rounds = set(range(1, 7))


def game_with_skips(
    players: int, seat_class: type[LocalSeat], seed: int = 3, skipper: int = 1
) -> Record:
    referee, seats = new_local_table(players, seed=seed)
    slow = seat_class(seats[skipper].secrets, random.Random(seed))
    slow.referee = referee  # type: ignore[attr-defined]
    seats[skipper] = slow
    record = run_local_game(referee, seats)
    hand = referee.game.hands[skipper]
    placed = [e for e in record.log if e.seat == skipper and e.commitment is not None]
    skips = [e for e in record.log if e.skipped]
    assert skips and all(e.seat == skipper for e in skips)
    # Every skip leaves a card in hand: more cards left than the rules' usual.
    assert len(hand) == len(skips) + referee.rules.hand_left_at_end
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
    return msgpack.unpackb(data, raw=False)["log"]  # type: ignore[no-any-return]


def test_a_skip_is_logged_as_seat_and_skip_alone() -> None:
    skips = [e for e in plain_log(SKIP_DATA) if "action" not in e]
    assert skips and all(e == {"seat": 1, "skip": True} for e in skips)


@pytest.mark.parametrize(
    "entry",
    [
        {"seat": 1, "skip": True, "action": {"type": "keep"}},
        {"seat": 1, "skip": True, "pid": 3},
        {"seat": 1, "skip": True, "commitment": bytes(32)},
        {"seat": 1, "skip": True, "nonce": bytes(32)},
        {"seat": 1, "skip": True, "settled": True},
        {"seat": 1, "skip": "yes"},
        {"seat": 1, "skip": None},
        {"seat": 1, "skip": False},  # then an action is needed
        {"seat": 7, "skip": True},
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
        tamper(SKIP_DATA, lambda p: p["log"].__setitem__(i, {"seat": seat, "skip": True}))
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
        tamper(SKIP_DATA, lambda p: p["log"].__setitem__(i, {"seat": other, "skip": True}))
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
        tamper(SKIP_DATA, lambda p: p["log"].__setitem__(i, {"seat": log[i]["seat"], "skip": True}))
    )
    assert not verdict.ok and verdict.problems


def test_a_removed_skip_is_rejected() -> None:
    i = next(i for i, e in enumerate(plain_log(SKIP_DATA)) if "action" not in e)
    verdict = verify_record_bytes(tamper(SKIP_DATA, lambda p: p["log"].pop(i)))
    assert not verdict.ok and verdict.problems


# ---------------------------------------------------------------- time-outs


def test_time_out_plays_the_safe_defaults() -> None:
    with pytest.raises(RefereeError, match="a seed commitment is missing"):
        Referee(Rules(3)).time_out()
    referee, seats = seeded(seed=5)
    referee.time_out()  # a random direction
    assert type(referee.log[-1].action).__name__ == "ChooseDirection"
    assert referee.time_out()[0] == PlacementSkipped(0)
    with pytest.raises(StaleTurn):
        referee.time_out(turn=1)  # that timer's decision is settled already
    play_until(referee, seats, lambda d: d.kind == "reveal")
    d = referee.decision
    assert d is not None
    events = referee.time_out(turn=referee.turn)
    assert type(events[0]).__name__ == "Kept" and events[0].pid == d.pid  # type: ignore[union-attr]
    assert referee.forfeits == []


def test_a_demanded_opening_that_times_out_is_settled() -> None:
    for seed in range(60):
        referee, seats = seeded(seed=seed)
        play_until(referee, seats, lambda d: d.kind == "open")
        d = referee.decision
        if d is None:
            continue
        turn = referee.turn
        events = referee.time_out()
        assert referee.turn == turn + 1
        assert referee.log[-1].settled and referee.log[-1].pid == d.pid
        assert referee.forfeits[-1].seat == d.seat
        assert referee.forfeits[-1].reason == f"did not open card {d.pid} in time"
        assert any(type(e).__name__ == "Eliminated" for e in events)
        record = finish(referee, seats)
        verdict = verify_record(record)
        assert verdict.problems == ()
        assert verdict.seats[d.seat].status == FORFEITED
        return
    raise AssertionError("no face-down card eliminated in 60 games")


def test_time_out_at_the_end_forfeits_the_silent_seats() -> None:
    referee, seats = seeded(seed=6)
    play_until(referee, seats, lambda d: False)
    referee.receive(1, seats[1].final_reveal(referee.hidden(1)))
    assert referee.time_out() == []
    assert referee.phase == DONE
    record = referee.record()
    assert [v.status for v in record.verdicts] == [FORFEITED, OK, FORFEITED]
    verdict = verify_record(record)
    assert verdict.problems == () and [v.status for v in verdict.seats] == [
        FORFEITED,
        OK,
        FORFEITED,
    ]


# ---------------------------------------------------------------- hand-over


def test_an_honest_hand_over_lets_a_bot_finish() -> None:
    referee, seats = seeded(2, seed=7)
    play_until(referee, seats, lambda d: referee.game.round == 3)
    old = seats[1]
    message = m.HandOver(
        seed=old.secrets.seed, openings=old.final_reveal(referee.hidden(1)).openings
    )
    assert referee.receive(1, message) == []
    assert referee.seats[1].handed_to_bot
    with pytest.raises(RefereeError, match="already handed over"):
        referee.receive(1, message)
    bot = SeatSecrets.resume(
        referee.rules,
        referee.game_id,
        1,
        message.seed,
        referee.server_seed,
        [*referee.openings(1), *(Opening(o.pid, o.card, o.nonce) for o in message.openings)],
        referee.drawn(1),
    )
    seats[1] = LocalSeat(bot, random.Random(1))
    record = finish(referee, seats)
    assert record.seats[1].handed_to_bot
    assert verify_record(record).ok


def test_hand_over_is_for_a_game_being_played() -> None:
    referee = Referee(Rules(3))
    with pytest.raises(RefereeError):
        referee.hand_over(0, bytes(32), [])


@pytest.mark.parametrize("lie", ["seed", "opening"])
def test_a_false_hand_over_fails_the_seat_and_play_goes_on(lie: str) -> None:
    referee, seats = seeded(3, seed=8)
    play_until(referee, seats, lambda d: referee.game.round >= 2 and referee.hidden(2) != [])
    liar = seats[2]
    pids = referee.hidden(2)
    assert pids
    reveal = liar.final_reveal(pids)
    seed = new_seed() if lie == "seed" else liar.secrets.seed
    openings = reveal.openings if lie == "seed" else reveal.openings[1:]
    with pytest.raises(SeatForfeited) as caught:
        referee.receive(2, m.HandOver(seed=seed, openings=openings))
    reason = (
        "its seed does not match its seed commitment"
        if lie == "seed"
        else f"did not open card {pids[0]}"
    )
    assert caught.value.reason == reason and error_code(caught.value) == "bad_opening"
    assert referee.phase == PLAYING and not referee.seats[2].handed_to_bot
    # The server's stand-in plays the seat from now on.

    class StandIn(LocalSeat):
        def answers(self, decision: Any) -> bool:
            return False

    seats[2] = StandIn(liar.secrets, random.Random(2))
    play_until_with_time_outs(referee, seats)
    with pytest.raises(RefereeError, match="already sent"):
        referee.receive(2, liar.final_reveal(referee.hidden(2)))
    record = finish(referee, seats)
    assert record.verdicts[2] == SeatVerdict(2, FAILED, reason)
    verdict = verify_record(record)
    assert verdict.problems == ()
    assert [v.status for v in verdict.seats] == [OK, OK, FAILED]
    assert verdict.seats[2].reason == reason


def play_until_with_time_outs(referee: Referee, seats: list[LocalSeat]) -> None:
    while referee.phase == PLAYING:
        d = referee.decision
        assert d is not None
        seat = seats[d.seat]
        events = seat.play(referee) if seat.answers(d) else referee.time_out()
        for event in events:
            if type(event).__name__ == "Drew":
                seats[event.seat].secrets.draw(len(event.cards))  # type: ignore[union-attr]

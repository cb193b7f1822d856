"""The referee as the server's game core: wire messages in, turns, error codes,
skipped placements, time-outs, failed openings and hand-overs, the decisions
the server makes for a seat, and what the record makes of them."""

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
from fairness_helpers import fixed_table, flip, tamper

from oriflamme import protocol
from oriflamme.engine import CARDS, KEEP, Card, IllegalAction, Open, Rules
from oriflamme.engine.events import Eliminated, Kept, PlacementSkipped
from oriflamme.protocol import messages as m
from oriflamme.protocol.commitments import Opening, new_seed
from oriflamme.protocol.errors import CODES
from oriflamme.protocol.examples import examples
from oriflamme.protocol.localgame import LocalSeat, SeatSecrets, new_local_table, run_local_game
from oriflamme.protocol.record import (
    FAILED,
    FORFEITED,
    OK,
    Forfeit,
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
from oriflamme.protocol.verify import (
    decision_counts,
    format_verdict,
    settled_card,
    verify_record,
    verify_record_bytes,
)

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


def drawn(seats: list[LocalSeat], events: list[Any]) -> None:
    """Tell the seats what they drew."""
    for event in events:
        if type(event).__name__ == "Drew":
            seats[event.seat].secrets.draw(len(event.cards))


def play_until(referee: Referee, seats: list[LocalSeat], stop: Callable[[Any], bool]) -> None:
    """Play on (seats' own answers) until the pending decision satisfies `stop`.
    A failed opening does not stop play: the server answered in its place."""
    while referee.decision is not None and not stop(referee.decision):
        try:
            events = seats[referee.decision.seat].play(referee)
        except SeatForfeited as forfeited:
            events = forfeited.events
        drawn(seats, events)


def finish(referee: Referee, seats: list[LocalSeat]) -> Record:
    """Play to the end (no forfeit stops play), then the final reveals."""
    play_until(referee, seats, lambda d: False)
    assert referee.phase == REVEALING and referee.game.over
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


class Absent(LocalSeat):
    """Lets about half of its decisions time out, openings included (so its
    settled cards may clash with its later openings)."""

    def answers(self, decision: Any) -> bool:
        return self.rng.random() < 0.5


def test_turn_counts_every_settled_decision_once() -> None:
    """Answers, skips, defaults and settlements each count one; a reveal with
    its opening one; a failed opening with the server's answer in its place one."""
    # A game with a time-out on an opening, then clashes on a reveal and an opening.
    referee, seats = fixed_table(3, seed=112, seat_class=Absent)
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
            try:
                events = referee.receive(d.seat, message)
            except SeatForfeited as forfeited:
                kinds.add(f"failed {message.TYPE}")
                events = forfeited.events
            drawn(seats, events)
        else:
            kinds.add(f"time_out {d.kind}")
            referee.time_out(turn=before)
        assert referee.turn == before + 1
    assert {"reveal", "place", "time_out place", "time_out reveal", "time_out open"} <= kinds
    assert {"failed reveal", "failed open"} <= kinds  # settled identities clashed
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


def skip_entry(seat: int) -> dict[str, Any]:
    return {"seat": seat, "skip": True, "by_server": True}


def test_a_skip_is_logged_as_seat_skip_and_by_server_alone() -> None:
    skips = [e for e in plain_log(SKIP_DATA) if "action" not in e]
    assert skips and all(e == skip_entry(1) for e in skips)


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


# ---------------------------------------------------------------- time-outs


def test_time_out_plays_the_safe_defaults() -> None:
    with pytest.raises(RefereeError, match="a seed commitment is missing"):
        Referee(Rules(3)).time_out()
    referee, seats = seeded(seed=5)
    referee.time_out()  # a random direction
    assert type(referee.log[-1].action).__name__ == "ChooseDirection"
    assert referee.time_out()[0] == PlacementSkipped(0)
    assert [e.by_server for e in referee.log] == [True, True]
    with pytest.raises(StaleTurn):
        referee.time_out(turn=1)  # that timer's decision is settled already
    play_until(referee, seats, lambda d: d.kind == "reveal")
    d = referee.decision
    assert d is not None
    events = referee.time_out(turn=referee.turn)
    assert type(events[0]).__name__ == "Kept" and events[0].pid == d.pid  # type: ignore[union-attr]
    assert referee.log[-1] == LogEntry(d.seat, KEEP, by_server=True)
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
        assert referee.log[-1].by_server
        assert referee.forfeits[-1].seat == d.seat
        assert referee.forfeits[-1].log_index == len(referee.log) - 1
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


# ---------------------------------------------------------------- failed openings: play goes on


def fixed_seeded(players: int = 3, seed: int = 1) -> tuple[Referee, list[LocalSeat]]:
    """`seeded`, with a game that is the same on every run (`fixed_table`)."""
    referee, seats = fixed_table(players, seed=seed)
    for s in seats:
        referee.receive(s.seat, m.SeedCommit(commitment=s.secrets.seed_commitment))
    for s in seats:
        s.secrets.learn_server_seed(referee.server_seed)
    return referee, seats


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
    referee, seats = fixed_seeded(seed=1)
    play_until(referee, seats, lambda d: d.kind == "reveal")
    d = referee.decision
    assert d is not None and d.pid is not None
    seat, turn, at = d.seat, referee.turn, len(referee.log)
    real = seats[seat].secrets.opening(d.pid)
    bad = bad_opening(real, lie)
    reason = bad_reason(bad, lie, ["red", "blue", "green"][seat])
    with pytest.raises(SeatForfeited) as caught:
        referee.receive(seat, m.Reveal(turn=turn, card=bad.card, nonce=bad.nonce))
    forfeited = caught.value
    assert error_code(forfeited) == "bad_opening"
    assert (forfeited.seat, forfeited.reason, forfeited.opening) == (seat, reason, bad)
    # The server kept the card face down in the seat's place: one decision, settled.
    assert forfeited.events[0] == Kept(seat, d.pid, forfeited.events[0].tokens)  # type: ignore[union-attr]
    assert referee.events[-len(forfeited.events) :] == forfeited.events
    assert referee.phase == PLAYING and referee.turn == turn + 1
    assert referee.log[at:] == [LogEntry(seat, KEEP, by_server=True)]
    assert referee.forfeits == [Forfeit(seat, reason, at, bad)]
    assert referee.verdict(seat) == SeatVerdict(seat, FAILED, reason)
    assert d.pid in referee.hidden(seat) and referee.openings(seat) == []
    # The seat plays on (its player is back), and the game reaches its end.
    record = finish(referee, seats)
    assert record.results.complete and record.results.winners
    assert any(e.seat == seat and not e.by_server for e in record.log[at + 1 :])
    assert [v.status for v in record.verdicts] == [FAILED if s == seat else OK for s in range(3)]
    verdict = verify_record(record)
    assert verdict.problems == ()
    assert verdict.seats[seat] == SeatVerdict(seat, FAILED, reason)
    assert all(v.ok for v in verdict.seats if v.seat != seat)
    assert verify_record_bytes(encode_record(record)) == verdict


def test_a_failed_opening_of_an_eliminated_card_is_settled_and_play_goes_on() -> None:
    for seed in range(40):
        referee, seats = fixed_seeded(seed=seed)
        play_until(referee, seats, lambda d: d.kind == "open")
        if referee.decision is not None:
            break
    else:
        raise AssertionError("no face-down card eliminated in 40 games")
    d = referee.decision
    assert d is not None and d.pid is not None
    seat, turn, at = d.seat, referee.turn, len(referee.log)
    settled = settled_card(d.options)
    bad = bad_opening(seats[seat].secrets.opening(d.pid), "card")
    reason = bad_reason(bad, "card", "")
    with pytest.raises(SeatForfeited) as caught:
        referee.receive(seat, m.Open(pid=d.pid, card=bad.card, nonce=bad.nonce))
    assert error_code(caught.value) == "bad_opening" and caught.value.opening == bad
    eliminated = [e for e in caught.value.events if type(e) is Eliminated]
    assert [(e.pid, e.card) for e in eliminated] == [(d.pid, settled)]
    assert referee.phase == PLAYING and referee.turn == turn + 1
    assert referee.log[at:] == [LogEntry(seat, Open(settled), d.pid, settled=True, by_server=True)]
    assert referee.forfeits == [Forfeit(seat, reason, at, bad)]
    record = finish(referee, seats)
    assert record.results.complete
    verdict = verify_record(record)
    assert verdict.problems == ()
    assert verdict.seats[seat] == SeatVerdict(seat, FAILED, reason)
    assert all(v.ok for v in verdict.seats if v.seat != seat)


class Forger(LocalSeat):
    """Sends a wrong card in every opening it makes during play (its final
    reveal is honest)."""

    def answer(self, referee: Referee) -> m.Message:
        message = super().answer(referee)
        if isinstance(message, m.Reveal | m.Open):
            o = Opening(referee.decision.pid, message.card, message.nonce)  # type: ignore[union-attr, arg-type]
            return dataclasses.replace(message, card=bad_opening(o, "card").card)  # type: ignore[type-var]
        return message


def test_every_failed_opening_is_answered_by_the_server_and_never_stops_play() -> None:
    referee, seats = fixed_table(3, seed=2, seat_class=Forger, special=0)
    raised = []
    for s in seats:
        referee.commit_seed(s.seat, s.secrets.seed_commitment)
    for s in seats:
        s.secrets.learn_server_seed(referee.server_seed)
    while referee.phase == PLAYING:
        turn = referee.turn
        try:
            drawn(seats, seats[referee.decision.seat].play(referee))  # type: ignore[union-attr]
        except SeatForfeited as forfeited:
            raised.append(forfeited)
            drawn(seats, forfeited.events)
        assert referee.turn == turn + 1
    assert referee.game.over and len(raised) >= 3
    # Each failed opening is a forfeit with its evidence, and the server's answer follows it.
    assert [(f.seat, f.opening) for f in referee.forfeits] == [(0, x.opening) for x in raised]
    answers = [referee.log[f.log_index] for f in referee.forfeits]
    assert all(a.seat == 0 and a.by_server for a in answers)
    # Failed reveals are kept, failed openings of eliminated cards settled; both happened.
    assert any(a.action == KEEP for a in answers) and any(a.settled for a in answers)
    assert all(a.settled or a.action == KEEP for a in answers)
    for s in seats:
        referee.receive(s.seat, s.final_reveal(referee.hidden(s.seat)))  # honest at the end
    record = referee.record()
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
        return [e.action.card for e in log if e.settled and e.seat == self.seat]  # type: ignore[union-attr]

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
            return m.Reveal(turn=referee.turn, card=o.card, nonce=o.nonce)
        return super().answer(referee)


def clash_game() -> Record:
    """A game in which seat 1's honest openings clash with settled identities,
    both on a reveal and on an eliminated card."""
    for seed in range(40):
        referee, seats = fixed_table(3, seed=seed, seat_class=ComesBack, special=1)
        seats[1].referee = referee  # type: ignore[attr-defined]
        record = run_local_game(referee, seats)
        answers = [record.log[f.log_index] for f in record.forfeits if f.opening is not None]
        if any(a.settled for a in answers) and any(not a.settled for a in answers):
            return record
    raise AssertionError("no game with both clashes in 40 tries")


CLASH = clash_game()


def test_a_settled_identity_that_clashes_with_a_later_opening_does_not_stop_play() -> None:
    record = CLASH
    assert record.results.complete and record.results.winners
    first, *clashes = record.forfeits
    assert first.seat == 1 and first.opening is None and first.reason.endswith("in time")
    assert clashes and all(f.seat == 1 and f.opening is not None for f in clashes)
    settled = {e.action.card for e in record.log if e.settled}  # type: ignore[union-attr]
    for f in clashes:
        assert f.opening is not None and f.opening.card in settled
        assert f.reason == (
            f"{f.opening.card} is accounted for elsewhere; it cannot be card {f.opening.pid}"
        )
        answer = record.log[f.log_index]
        assert answer.seat == 1 and answer.by_server and (answer.settled or answer.action == KEEP)
    # The seat is not at fault: it forfeited (earlier), it did not fail.
    assert [v.status for v in record.verdicts] == [OK, FORFEITED, OK]
    assert record.verdicts[1].reason == first.reason
    verdict = verify_record(decode_record(encode_record(record)))
    assert verdict.problems == ()
    assert [v.status for v in verdict.seats] == [OK, FORFEITED, OK]


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


def test_the_servers_decisions_are_marked_by_server() -> None:
    referee, seats = fixed_table(3, seed=112, seat_class=Absent)
    for s in seats:
        referee.commit_seed(s.seat, s.secrets.seed_commitment)
    for s in seats:
        s.secrets.learn_server_seed(referee.server_seed)
    expected = [[0, 0] for _ in range(3)]
    while referee.phase == PLAYING:
        d = referee.decision
        assert d is not None
        at = len(referee.log)
        by_server = not seats[d.seat].answers(d)
        try:
            drawn(seats, referee.time_out() if by_server else seats[d.seat].play(referee))
        except SeatForfeited as forfeited:
            by_server = True  # the server answered in the seat's place
            drawn(seats, forfeited.events)
        new = referee.log[at:]
        assert new and all(e.by_server == by_server for e in new)
        assert len(new) == 1 or [type(e.action).__name__ for e in new] == ["Reveal", "Open"]
        expected[d.seat][0] += by_server
        expected[d.seat][1] += 1
    for s in seats:
        with contextlib.suppress(SeatForfeited):
            referee.receive(s.seat, s.final_reveal(referee.hidden(s.seat)))
    record = referee.record()
    kinds = {type(e.action).__name__ for e in record.log if e.by_server}
    assert {"NoneType", "Keep", "Open", "Target"} <= kinds  # skips, keeps, settlements...
    assert not kinds & {"Place", "Reveal"}
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

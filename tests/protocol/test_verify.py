"""Verification: honest games verify; every alteration and every cheat is caught, with its reason."""

from __future__ import annotations

import functools
import random
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import msgpack
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oriflamme.engine import CARDS, KEEP, Card, card_to_data
from oriflamme.launcher.cli import main
from oriflamme.protocol import identity
from oriflamme.protocol.commitments import (
    Committed,
    Opening,
    card_commitment,
    new_seed,
)
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
    SeatVerdict,
    decode_record,
    encode_record,
)
from oriflamme.protocol.signatures import sign_server_decisions
from oriflamme.protocol.verify import (
    GameVerdict,
    format_verdict,
    verify_record,
    verify_record_bytes,
    verify_seat,
)
from oriflamme.server.core import FixedEntropy, Phase, Referee
from tests.protocol.fairness_helpers import (
    TABLES,
    CheatingSecrets,
    PreferringSeat,
    all_openings,
    fixed_table,
    flip,
    play,
    tamper,
)
from tests.server.local_referee import (
    LocalSeat,
    LocalSecrets,
    finish,
    forge_first_reveal,
    new_local_table,
    phase_of,
    play_local_game,
    run_local_game,
    start,
    step,
)


def _has_everything(record: Record) -> bool:
    """The alteration tests below need a game with each of these (seeds and
    nonces are random, so a game is chosen that has them all)."""
    kinds = {type(e.action).__name__ for e in record.log}
    return (
        {"Target", "Keep", "Open"} <= kinds
        and any(record.final_openings)
        and any(type(e).__name__ == "Scored" for e in record.events)
        and any(getattr(e.action, "at", None) == "last" for e in record.log)
    )


def _honest_game() -> bytes:
    for seed in range(3, 100):
        record = play(4, seed=seed)
        if _has_everything(record):
            return encode_record(record)
    raise AssertionError("no game with every kind of decision in 97 tries")


HONEST = _honest_game()


def verdict_of(data: bytes) -> GameVerdict:
    """The verdict on a record the tests' server wrote, changed as a test
    says: signed again by that server (whose decisions a change of who
    played a seat when may make others), as a server writing it would."""
    record = decode_record(data)
    key = _server_keys().get(record.server_key or b"")
    return verify_record(record if key is None else sign_server_decisions(record, key))


@functools.cache
def _server_keys() -> dict[bytes, Ed25519PrivateKey]:
    """The server keys of the tests' tables (`new_local_table`, `fixed_table`)."""
    keys = (
        identity.private_key(FixedEntropy(f"{label} {seed}").server_key_seed())
        for label in ("local table", "fixed table")
        for seed in range(100)
    )
    return {identity.public_bytes(key): key for key in keys}


def failed(verdict: GameVerdict, seat: int) -> str:
    v = verdict.seats[seat]
    assert v.status == FAILED, str(v)
    assert not verdict.ok
    assert v.reason is not None
    return v.reason


# ---------------------------------------------------------------- honest games


@pytest.mark.parametrize("players, edition", TABLES)
@pytest.mark.parametrize("seed", [1, 2])
def test_honest_games_verify(players: int, edition: str, seed: int) -> None:
    record = play(players, edition=edition, seed=seed)
    assert record.results.complete and record.results.winners
    assert all(v.status == OK for v in record.verdicts)
    verdict = verify_record(record)
    assert verdict.ok, verdict.reasons()
    assert [v.status for v in verdict.seats] == [OK] * players
    # Every placed card was opened, during the game or at its end.
    placed = {e.pid for e in record.log if e.commitment is not None}
    assert {o.pid for _, o in all_openings(record)} == placed


def test_two_player_games_draw_and_play_drawn_cards() -> None:
    # The draw-pile timing check is exercised, not vacuous.
    record = play(2, seed=4)
    drew = [e for e in record.events if type(e).__name__ == "Drew"]
    assert len(drew) == 8
    assert verify_record(record).ok


def test_play_local_game_api() -> None:
    data = play_local_game(5, edition="first", first_player=2, seed=9, names="abcde")
    record = decode_record(data)
    assert [s.name for s in record.seats] == list("abcde")
    assert record.settings.first_player == 2 and record.log[0].seat == 2
    assert verdict_of(data).ok


# ---------------------------------------------------------------- the command line


def test_main_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.record"
    good.write_bytes(HONEST)
    assert main(["verify", str(good)]) == 0
    out = capsys.readouterr().out
    assert "seat 0 (seat 0): ok" in out and "verdict: VALID" in out

    bad = tmp_path / "bad.record"
    bad.write_bytes(tamper(HONEST, lambda p: p["seeds"].__setitem__(1, flip(p["seeds"][1]))))
    assert main(["verify", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "seat 1 (seat 1): FAILED: its seed does not match its seed commitment" in out
    assert "verdict: NOT VALID" in out

    garbage = tmp_path / "garbage.record"
    garbage.write_bytes(b"\x00not a record")
    assert main(["verify", str(garbage)]) == 2
    assert "not a readable game record" in capsys.readouterr().err
    assert main(["verify", str(tmp_path / "missing.record")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_format_verdict_names_every_seat() -> None:
    record = decode_record(HONEST)
    text = format_verdict(record, verify_record(record))
    assert [line.split(" (")[0] for line in text.splitlines()[1:5]] == [
        f"seat {i}" for i in range(4)
    ]


# ---------------------------------------------------------------- one alteration each


def plain_log(data: bytes) -> list[dict[str, Any]]:
    return msgpack.unpackb(data, raw=False)["log"]


def test_an_altered_commitment_is_detected() -> None:
    i, entry = next((i, e) for i, e in enumerate(plain_log(HONEST)) if "commitment" in e)
    data = tamper(
        HONEST, lambda p: p["log"][i].__setitem__("commitment", flip(entry["commitment"]))
    )
    verdict = verdict_of(data)
    assert (
        failed(verdict, entry["seat"])
        == f"opening of card {entry['pid']} does not match its commitment"
    )
    seat = entry["seat"]
    assert (
        f"the record says seat {seat}: ok, but the verifier finds seat {seat}: failed:"
        f" opening of card {entry['pid']} does not match its commitment"
    ) in verdict.problems


def test_every_commitment_and_opening_is_checked() -> None:
    """Flip one byte of each commitment and each nonce in turn: each is caught."""
    log = plain_log(HONEST)
    for i, entry in enumerate(log):
        for name in ("commitment", "nonce"):
            if name in entry:

                def change(p: dict[str, Any], i: int = i, n: str = name) -> None:
                    p["log"][i][n] = flip(p["log"][i][n])

                data = tamper(HONEST, change)
                reason = failed(verdict_of(data), entry["seat"])
                assert reason == f"opening of card {entry['pid']} does not match its commitment"
    finals = msgpack.unpackb(HONEST, raw=False)["final_openings"]
    for seat, openings in enumerate(finals):
        for k, o in enumerate(openings):

            def change_final(p: dict[str, Any], s: int = seat, k: int = k) -> None:
                p["final_openings"][s][k]["nonce"] = flip(p["final_openings"][s][k]["nonce"])

            data = tamper(HONEST, change_final)
            assert (
                failed(verdict_of(data), seat)
                == f"opening of card {o['pid']} does not match its commitment"
            )


def test_an_altered_opening_card_is_detected() -> None:
    i, entry = next(
        (i, e) for i, e in enumerate(plain_log(HONEST)) if e["action"]["type"] == "open"
    )
    family, kind = entry["action"]["card"]
    other = "archer" if kind != "archer" else "lord"
    data = tamper(HONEST, lambda p: p["log"][i]["action"].__setitem__("card", [family, other]))
    verdict = verdict_of(data)
    assert (
        failed(verdict, entry["seat"])
        == f"opening of card {entry['pid']} does not match its commitment"
    )


def test_an_altered_final_opening_card_is_detected() -> None:
    finals = msgpack.unpackb(HONEST, raw=False)["final_openings"]
    seat = next(s for s, f in enumerate(finals) if f)
    o = finals[seat][0]
    family, kind = o["card"]
    other = "archer" if kind != "archer" else "lord"
    data = tamper(
        HONEST, lambda p: p["final_openings"][seat][0].__setitem__("card", [family, other])
    )
    assert (
        failed(verdict_of(data), seat)
        == f"opening of card {o['pid']} does not match its commitment"
    )


def test_a_missing_final_opening_is_detected() -> None:
    finals = msgpack.unpackb(HONEST, raw=False)["final_openings"]
    seat = next(s for s, f in enumerate(finals) if f)
    pid = finals[seat][0]["pid"]
    data = tamper(HONEST, lambda p: p["final_openings"][seat].pop(0))
    assert failed(verdict_of(data), seat) == f"did not open card {pid}"


@pytest.mark.parametrize("field", ["seeds", "seed_commitments"])
def test_an_altered_seed_or_seed_commitment_is_detected(field: str) -> None:
    data = tamper(HONEST, lambda p: p[field].__setitem__(2, flip(p[field][2])))
    verdict = verdict_of(data)
    assert failed(verdict, 2) == "its seed does not match its seed commitment"
    assert [v.status for v in verdict.seats] == [OK, OK, FAILED, OK]


@pytest.mark.parametrize("field", ["server_seed", "server_seed_commitment"])
def test_an_altered_server_seed_is_detected(field: str) -> None:
    data = tamper(HONEST, lambda p: p.__setitem__(field, flip(p[field])))
    verdict = verdict_of(data)
    assert not verdict.ok
    assert "the server seed does not match the server's seed commitment" in verdict.problems
    # The seats are not blamed for a deal the server's seed would spoil.
    assert all(v.ok for v in verdict.seats)


def test_an_altered_event_is_detected() -> None:
    plain = msgpack.unpackb(HONEST, raw=False)
    k = next(i for i, e in enumerate(plain["events"]) if e["type"] == "scored")

    def change(p: dict[str, Any]) -> None:
        p["events"][k]["points"] += 1

    verdict = verdict_of(tamper(HONEST, change))
    assert not verdict.ok
    assert verdict.problems[0].startswith(f"event {k} differs from the replay")


def _bumped(value: object) -> object | None:
    """The value with one integer in it increased by 1, or None if it has none."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value + 1
    if isinstance(value, list) and value and type(value[0]) is int:
        return [value[0] + 1, *value[1:]]
    return None


def test_every_event_is_checked() -> None:
    """Alter one number of each event in turn (cheaply): each is caught by the replay."""
    plain = msgpack.unpackb(HONEST, raw=False)
    for k, event in enumerate(plain["events"]):
        name, new = next(
            (f, _bumped(v)) for f, v in event.items() if f != "type" and _bumped(v) is not None
        )

        def change(p: dict[str, Any], k: int = k, n: str = name, v: object = new) -> None:
            p["events"][k][n] = v

        data = tamper(HONEST, change)
        verdict = verdict_of(data)
        assert any(p.startswith(f"event {k} differs") for p in verdict.problems), (k, event)


def test_a_removed_or_added_event_is_detected() -> None:
    verdict = verdict_of(tamper(HONEST, lambda p: p["events"].pop()))
    assert any("events, the replay" in p for p in verdict.problems)
    extra = {"type": "scored", "seat": 0, "points": 3, "reason": "lord"}
    verdict = verdict_of(tamper(HONEST, lambda p: p["events"].append(extra)))
    assert any("events, the replay" in p for p in verdict.problems)


def test_an_altered_direction_is_detected() -> None:
    def change(p: dict[str, Any]) -> None:
        action = p["log"][0]["action"]
        action["direction"] = (
            "left-to-right" if action["direction"] != "left-to-right" else "right-to-left"
        )

    verdict = verdict_of(tamper(HONEST, change))
    assert verdict.problems and verdict.problems[0].startswith("event 0 differs from the replay")


def test_an_altered_target_is_detected() -> None:
    # Replace a target by another pid: either illegal or the events differ.
    log = plain_log(HONEST)
    i = next(i for i, e in enumerate(log) if e["action"]["type"] == "target")

    def change(p: dict[str, Any]) -> None:
        p["log"][i]["action"]["pid"] += 1

    verdict = verdict_of(tamper(HONEST, change))
    assert not verdict.ok and verdict.problems


def test_an_altered_placement_is_detected() -> None:
    log = plain_log(HONEST)
    i = next(
        i
        for i, e in enumerate(log)
        if e["action"]["type"] == "place" and e["action"]["at"] == "last"
    )
    verdict = verdict_of(tamper(HONEST, lambda p: p["log"][i]["action"].__setitem__("at", "first")))
    assert not verdict.ok
    assert any("differs from the replay" in p for p in verdict.problems)


def test_a_placement_by_the_wrong_seat_is_detected() -> None:
    log = plain_log(HONEST)
    i = next(i for i, e in enumerate(log) if e["action"]["type"] == "place")
    seat = log[i]["seat"]
    verdict = verdict_of(tamper(HONEST, lambda p: p["log"][i].__setitem__("seat", (seat + 1) % 4)))
    assert (
        f"log entry {i}: seat {(seat + 1) % 4} acted, but seat {seat} was to decide (place)"
        in verdict.problems
    )


def test_a_removed_decision_is_detected() -> None:
    log = plain_log(HONEST)
    i = next(i for i, e in enumerate(log) if e["action"]["type"] == "keep")
    verdict = verdict_of(tamper(HONEST, lambda p: p["log"].pop(i)))
    assert not verdict.ok and verdict.problems


def test_a_renumbered_placement_is_detected() -> None:
    log = plain_log(HONEST)
    i = next(i for i, e in enumerate(log) if e["action"]["type"] == "place")
    verdict = verdict_of(tamper(HONEST, lambda p: p["log"][i].__setitem__("pid", 40)))
    assert f"log entry {i}: the placement is numbered 40, not {log[i]['pid']}" in verdict.problems


@pytest.mark.parametrize(
    "path, value, problem",
    [
        ("scores", None, "the recorded scores"),
        ("winners", [3], "the recorded winners"),
        ("complete", False, "stopped early, but its log reaches the end"),
    ],
)
def test_altered_results_are_detected(path: str, value: object, problem: str) -> None:
    def change(p: dict[str, Any]) -> None:
        if path == "scores":
            p["results"]["scores"][0] += 1
        else:
            p["results"][path] = value if p["results"][path] != value else [0]

    verdict = verdict_of(tamper(HONEST, change))
    assert any(problem in p for p in verdict.problems), verdict.problems


def test_a_truncated_log_is_detected() -> None:
    verdict = verdict_of(tamper(HONEST, lambda p: p["log"].pop()))
    assert any(
        "the record says the game is complete, but its log stops" in p for p in verdict.problems
    )


def test_altered_verdicts_are_detected() -> None:
    def change(p: dict[str, Any]) -> None:
        p["verdicts"][1] = {"seat": 1, "status": "failed", "reason": "made up"}

    verdict = verdict_of(tamper(HONEST, change))
    assert (
        "the record says seat 1: failed: made up, but the verifier finds seat 1: ok"
        in verdict.problems
    )
    assert verdict.seats[1] == SeatVerdict(1, OK)


# ---------------------------------------------------------------- dishonest seats


class WrongGameSecrets(LocalSecrets):
    """Commits for another game: the commitment is worthless here."""

    def place(self, pid: int, card: Card) -> bytes:
        super().place(pid, card)
        o = self.placed[pid]
        return card_commitment(bytes(16), self.seat, pid, card, o.nonce)


class WrongSeatSecrets(LocalSecrets):
    def place(self, pid: int, card: Card) -> bytes:
        super().place(pid, card)
        return card_commitment(self.game_id, (self.seat + 1) % 3, pid, card, self.placed[pid].nonce)


class WrongSlotSecrets(LocalSecrets):
    def place(self, pid: int, card: Card) -> bytes:
        super().place(pid, card)
        return card_commitment(self.game_id, self.seat, pid + 1, card, self.placed[pid].nonce)


@pytest.mark.parametrize("secrets_class", [WrongGameSecrets, WrongSeatSecrets, WrongSlotSecrets])
def test_a_commitment_for_another_context_is_detected(secrets_class: type[LocalSecrets]) -> None:
    record = play(3, seed=5, cheater=1, secrets_class=secrets_class)
    verdict = verify_record(record)
    reason = failed(verdict, 1)
    assert reason.startswith("opening of card ") and reason.endswith(
        " does not match its commitment"
    )
    assert record.verdicts[1].status == FAILED  # the referee caught it too
    assert [v.status for v in verdict.seats] == [OK, FAILED, OK]
    assert verdict.problems == ()  # the record itself is consistent


class ForgingSecrets(LocalSecrets):
    """Opens its first card as another card of the family."""

    def opening(self, pid: int) -> Opening:
        o = self.placed[pid]
        if pid != min(self.placed):
            return o
        forged = next(c for c in CARDS[o.card.family] if c != o.card)
        return Opening(pid, forged, o.nonce)

    def final_openings(self, pids: Sequence[int]) -> list[Opening]:
        return [self.opening(pid) for pid in pids]


def test_a_forged_opening_is_detected() -> None:
    record = play(3, seed=6, cheater=0, secrets_class=ForgingSecrets)
    verdict = verify_record(record)
    assert failed(verdict, 0).endswith("does not match its commitment")
    assert verdict.problems == ()


@functools.cache
def forged_reveal() -> tuple[bytes, int, Opening]:
    """A game, in a room without turn timer, whose seat forges the opening of
    the card it reveals first: the server keeps the card face down, and play
    goes on. (record, the seat, the seat's real opening of that card)"""
    referee, seats = fixed_table(3, seed=1, turn_timer=None)
    start(referee, seats)
    ruling, real = forge_first_reveal(referee, seats)
    d = referee.log[-1]  # (the server's keep in the forger's place)
    forged = ruling.failure.opening.card if ruling.failure and ruling.failure.opening else None
    assert ruling.failure is not None and ruling.events and forged is not None
    assert ruling.failure.reason.endswith("does not match its commitment")
    assert referee.phase is Phase.PLAYING
    assert referee.forfeits == [
        Forfeit(
            d.seat,
            ruling.failure.reason,
            len(referee.log) - 1,
            Opening(real.pid, forged, real.nonce),
        )
    ]
    record = finish(referee, seats)
    assert record.results.complete and record.results.winners
    verdict = verify_record(record)
    assert verdict.problems == ()
    assert verdict.seats[d.seat].status == FAILED
    assert all(v.ok for v in verdict.seats if v.seat != d.seat)
    return encode_record(record), d.seat, real


def test_a_forged_reveal_is_evidence_and_play_goes_on() -> None:
    data, forger, real_opening = forged_reveal()
    record = decode_record(data)
    (forfeit,) = record.forfeits
    assert forfeit.opening is not None and forfeit.opening.pid == real_opening.pid
    answer = record.log[forfeit.log_index]  # (signed by the server: its decision)
    assert replace(answer, sig=None) == LogEntry(forger, KEEP, by_server=True)
    assert verify_record(record).seats[forger].reason == (
        f"opening of card {real_opening.pid} does not match its commitment"
    )


def _change_forfeit(name: str, value: object) -> bytes:
    return tamper(forged_reveal()[0], lambda p: p["forfeits"][0].__setitem__(name, value))


def test_a_forfeit_whose_evidence_holds_is_detected() -> None:
    """A server that keeps a card for the seat and blames it with its real opening."""
    data, forger, real_opening = forged_reveal()
    real = {
        "pid": real_opening.pid,
        "card": card_to_data(real_opening.card),
        "nonce": real_opening.nonce,
    }
    verdict = verdict_of(_change_forfeit("opening", real))
    at = decode_record(data).forfeits[0].log_index
    assert (
        f"the record forfeits seat {forger} before log entry {at} for an opening of card"
        f" {real_opening.pid} that holds"
    ) in verdict.problems
    assert verdict.seats[forger].status == FORFEITED


def test_a_forfeit_out_of_its_place_is_detected() -> None:
    _, forger, real_opening = forged_reveal()
    verdict = verdict_of(_change_forfeit("log_index", 0))
    assert (
        f"the record forfeits seat {forger} before log entry 0 for an opening of card"
        f" {real_opening.pid}, but the game was not waiting for that opening"
    ) in verdict.problems


def test_a_failed_opening_needs_the_servers_answer_next() -> None:
    data, forger, real_opening = forged_reveal()
    at = decode_record(data).forfeits[0].log_index
    # The seat's own keep, not the server's: the forfeit did not replace a decision.
    verdict = verdict_of(tamper(data, lambda p: p["log"][at].pop("by_server")))
    assert (
        f"the record forfeits seat {forger} before log entry {at} for an opening of card"
        f" {real_opening.pid}, but the next log entry is not the server's keep of it"
    ) in verdict.problems


class ReusingSecrets(LocalSecrets):
    def new_nonce(self) -> bytes:
        return bytes(range(32))


def test_a_reused_nonce_is_detected() -> None:
    record = play(4, seed=7, cheater=2, secrets_class=ReusingSecrets)
    verdict = verify_record(record)
    reason = failed(verdict, 2)
    assert "reuses the nonce of card" in reason
    assert verdict.problems == ()


class DuplicatingSecrets(CheatingSecrets):
    """Holds one of its cards twice (in place of another) and plays both."""

    def rig(self) -> None:
        self.cards[1] = self.cards[0]
        self.preferred = [self.cards[0]]


def test_a_card_played_twice_is_detected() -> None:
    record = play(3, seed=8, cheater=1, seat_class=PreferringSeat, secrets_class=DuplicatingSecrets)
    verdict = verify_record(record)
    assert ", already played as card " in failed(verdict, 1)
    assert verdict.problems == ()


class SetAsideSecrets(CheatingSecrets):
    """Swaps a set-aside card into its hand and plays it."""

    def rig(self) -> None:
        self.cards[0] = self.set_aside[0]
        self.preferred = [self.set_aside[0]]


@pytest.mark.parametrize("players", [2, 3, 5])
def test_a_set_aside_card_played_is_detected(players: int) -> None:
    record = play(
        players, seed=9, cheater=0, seat_class=PreferringSeat, secrets_class=SetAsideSecrets
    )
    verdict = verify_record(record)
    assert failed(verdict, 0).endswith("was set aside by the deal")
    assert record.verdicts[0].status == FAILED  # the referee's end-of-game check
    assert verdict.problems == ()


class EarlyDrawSecrets(CheatingSecrets):
    """2-player: swaps the last card of its draw pile into its hand and plays it at once."""

    def rig(self) -> None:
        self.cards[0], self.pile[-1] = self.pile[-1], self.cards[0]
        self.preferred = [self.cards[0]]


def test_a_card_played_before_it_was_drawn_is_detected() -> None:
    record = play(2, seed=10, cheater=1, seat_class=PreferringSeat, secrets_class=EarlyDrawSecrets)
    verdict = verify_record(record)
    assert failed(verdict, 1).endswith("was placed before it was drawn from the draw pile")


class LyingSeedSecrets(LocalSecrets):
    """Reveals another seed at the end."""

    def learn_server_seed(self, server_seed: bytes) -> None:
        super().learn_server_seed(server_seed)
        self.seed = new_seed()


def test_a_seed_that_does_not_match_its_commitment_is_detected() -> None:
    record = play(3, seed=11, cheater=2, secrets_class=LyingSeedSecrets)
    verdict = verify_record(record)
    assert failed(verdict, 2) == "its seed does not match its seed commitment"
    assert record.verdicts[2].reason == "its seed does not match its seed commitment"
    assert verdict.problems == ()


def test_a_seat_that_never_reveals_forfeits() -> None:
    referee, seats = new_local_table(3, seed=12)
    start(referee, seats)
    while referee.phase is Phase.PLAYING:
        step(referee, seats)
    for s in seats[:2]:
        referee.receive(s.seat, s.final_reveal(referee.hidden(s.seat)))
    assert referee.phase is Phase.REVEALING
    referee.forfeit(2, "did not send its final reveal in time")
    assert phase_of(referee) is Phase.DONE
    record = referee.record()
    verdict = verify_record(record)
    assert [v.status for v in verdict.seats] == [OK, OK, FORFEITED]
    assert verdict.seats[2].reason == "did not send its final reveal in time"
    assert verdict.problems == () and not verdict.ok


def test_a_seat_without_a_final_reveal_and_no_forfeit_fails() -> None:
    data = tamper(
        HONEST,
        lambda p: (p["seeds"].__setitem__(3, None), p["final_openings"].__setitem__(3, None)),
    )
    verdict = verdict_of(data)
    assert failed(verdict, 3) == "sent no end-of-game seed and openings"


def test_one_answer_of_the_server_replaces_one_failed_opening() -> None:
    data, _, _ = forged_reveal()
    at = decode_record(data).forfeits[0].log_index
    verdict = verdict_of(tamper(data, lambda p: p["forfeits"].append(dict(p["forfeits"][0]))))
    assert (
        f"the record has several forfeits for failed openings before log entry {at},"
        " but the server answers in place of one opening at a time"
    ) in verdict.problems


def test_a_forfeit_claimed_for_a_valid_opening_is_detected() -> None:
    record = decode_record(HONEST)
    seat, o = all_openings(record)[0]
    plain_opening = {"pid": o.pid, "card": card_to_data(o.card), "nonce": o.nonce}
    end = len(record.log)

    def change(p: dict[str, Any]) -> None:
        forfeit = {"seat": seat, "reason": "forged", "log_index": end, "opening": plain_opening}
        p["forfeits"].append(forfeit)
        p["verdicts"][seat] = {"seat": seat, "status": "failed", "reason": "forged"}

    verdict = verdict_of(tamper(HONEST, change))
    assert (
        f"the record forfeits seat {seat} before log entry {end} for an opening of card"
        f" {o.pid}, but the game was not waiting for that opening"
    ) in verdict.problems
    assert verdict.seats[seat].status == FORFEITED


def test_verify_seat_alone() -> None:
    """The end-of-game check of one seat, as the server runs it."""
    record = decode_record(HONEST)
    rules = record.settings.rules
    seat = 1
    referee_view = [e for e in record.log if e.seat == seat and e.commitment is not None]

    placed = [Committed(e.pid, seat, e.action.card.family, e.commitment) for e in referee_view]  # type: ignore[arg-type]
    openings = [o for s, o in all_openings(record) if s == seat]
    args: dict[str, Any] = {
        "seed_commitment": record.seed_commitments[seat],
        "seed": record.seeds[seat],
        "server_seed": record.server_seed,
        "placed": placed,
        "openings": openings,
    }
    assert verify_seat(rules, record.game_id, seat, **args).ok
    assert verify_seat(
        rules, record.game_id, seat, **{**args, "openings": openings[1:]}
    ).reason == (f"did not open card {openings[0].pid}")
    assert not verify_seat(rules, bytes(16), seat, **args).ok  # another game
    assert not verify_seat(rules, record.game_id, 2, **args).ok  # another seat


# ---------------------------------------------------------------- games from the local referee


def test_records_from_the_local_game_keep_the_seats_secrets_random() -> None:
    # The choice seed fixes the referee's entropy (game id, server seed, its
    # choices) and the seats' choices; seeds and nonces come from the OS.
    a = decode_record(play_local_game(3, seed=1))
    b = decode_record(play_local_game(3, seed=1))
    assert (a.game_id, a.server_seed) == (b.game_id, b.server_seed)
    assert a.seeds != b.seeds and a.seed_commitments != b.seed_commitments
    # Without a seed, the referee's entropy is the OS's too.
    c = new_local_table(3)[0]
    d = new_local_table(3)[0]
    assert c.game_id != d.game_id


def test_a_record_with_random_choices_verifies_after_a_round_trip() -> None:
    rng = random.Random(14)
    for _ in range(3):
        players = rng.choice([2, 3, 4, 5])
        data = play_local_game(players, seed=rng.randrange(1000))
        assert verify_record_bytes(encode_record(decode_record(data))).ok


# ---------------------------------------------------------------- settled openings


class SilentOnOpen(LocalSeat):
    """Never answers a demanded opening: the server forfeits the seat when its
    time runs out, and play goes on."""

    def play(self, referee: Referee) -> list[Any]:
        decision = referee.decision
        assert decision is not None
        if decision.kind == "open":
            return list(referee.forfeit(self.seat, "did not open card in time").events)
        return super().play(referee)


def _settled_game() -> Record:
    for seed in range(50):
        record = play(3, seed=seed, cheater=1, seat_class=SilentOnOpen)
        if any(e.settled for e in record.log):
            return record
    raise AssertionError("no elimination of a face-down card of seat 1 in 50 games")


def test_a_forfeited_opening_is_settled_and_play_goes_on() -> None:
    record = _settled_game()
    entry = next(e for e in record.log if e.settled)
    assert entry.seat == 1 and entry.nonce is None
    assert entry.action.card.kind is not None and entry.action.card.kind.label != "ambush"
    assert record.forfeits[0].seat == 1 and record.forfeits[0].opening is None
    verdict = verify_record(record)
    assert verdict.problems == ()
    assert [v.status for v in verdict.seats] == [OK, FORFEITED, OK]
    assert verify_record(decode_record(encode_record(record))) == verdict


def test_a_tampered_settlement_is_detected() -> None:
    data = encode_record(_settled_game())
    i = next(i for i, e in enumerate(plain_log(data)) if e.get("settled"))

    def unforfeit(p: dict[str, Any]) -> None:
        p["forfeits"] = []
        p["verdicts"][1] = {"seat": 1, "status": "ok", "reason": None}

    verdict = verdict_of(tamper(data, unforfeit))
    assert any(f"log entry {i}: card " in p and "did not forfeit" in p for p in verdict.problems)

    # The forfeit must come before the settlement, not after it.
    assert decode_record(data).forfeits[0].log_index == i
    verdict = verdict_of(tamper(data, lambda p: p["forfeits"][0].__setitem__("log_index", i + 1)))
    assert any(
        f"log entry {i}: card " in p and "did not forfeit before it" in p for p in verdict.problems
    )

    # A settlement is the server's decision.
    with pytest.raises(RecordError, match="a settled opening is the server's"):
        decode_record(tamper(data, lambda p: p["log"][i].pop("by_server")))

    def other_card(p: dict[str, Any]) -> None:
        family, kind = p["log"][i]["action"]["card"]
        p["log"][i]["action"]["card"] = [family, "ambush" if kind != "ambush" else "archer"]

    verdict = verdict_of(tamper(data, other_card))
    assert not verdict.ok and verdict.problems


def test_names_and_reasons_cannot_drive_the_terminal() -> None:
    data = tamper(HONEST, lambda p: p["seats"][0].__setitem__("name", "eve\x1b[2J\x07"))
    record = decode_record(data)
    text = format_verdict(record, verify_record(record))
    assert "\x1b" not in text and "\x07" not in text
    assert "eve\\x1b[2J\\x07" in text


ACTIONS = st.one_of(
    st.builds(
        lambda d: {"type": "direction", "direction": d},
        st.sampled_from(["left-to-right", "right-to-left"]),
    ),
    st.builds(
        lambda f, at: {"type": "place", "card": [f, None], "at": at},
        st.sampled_from(["red", "blue", "green", "yellow", "black"]),
        st.one_of(st.sampled_from(["first", "last"]), st.integers(-3, 70)),
    ),
    st.just({"type": "keep"}),
    st.just({"type": "reveal"}),
    st.builds(lambda pid: {"type": "target", "pid": pid}, st.integers(-3, 70)),
    st.builds(lambda i: {"type": "move_to", "index": i}, st.integers(-3, 70)),
    st.builds(
        lambda f, k: {"type": "open", "card": [f, k]},
        st.sampled_from(["red", "blue", "green", "yellow"]),
        st.sampled_from(["archer", "spy", "ambush", "lord"]),
    ),
)


@pytest.mark.slow  # (many examples: `make test` runs it, not `make test-fast`)
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_arbitrary_decisions_give_a_verdict_never_a_crash(data: st.DataObject) -> None:
    log = plain_log(HONEST)
    i = data.draw(st.integers(0, len(log) - 1))
    action = data.draw(ACTIONS)
    seat = data.draw(st.integers(0, 3))

    def change(p: dict[str, Any]) -> None:
        entry = {"seat": seat, "action": action, "pid": data.draw(st.integers(0, 40))}
        entry["commitment" if action["type"] == "place" else "nonce"] = bytes(32)
        p["log"][i] = entry

    try:
        verdict = verdict_of(tamper(HONEST, change))
    except RecordError:
        return
    assert not verdict.ok or action == log[i]["action"]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_records_give_a_verdict_or_record_error(data: st.DataObject) -> None:
    raw = bytearray(HONEST)
    for _ in range(data.draw(st.integers(1, 3))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    try:
        verdict = verdict_of(bytes(raw))
    except RecordError:
        return
    assert isinstance(verdict, GameVerdict)


# ---------------------------------------------------------------- verdicts, seat changes, the turn timer


def test_a_recorded_verdict_must_be_the_verifiers_own() -> None:
    """Status and reason, both: a relabelled or reworded verdict is caught."""
    data, forger, _ = forged_reveal()
    settled = encode_record(_settled_game())
    same = "the same reason"
    cases = [
        (data, forger, FORFEITED, same),  # failed -> forfeited
        (data, forger, FAILED, "did not open card 3 in time"),  # reworded
        (data, forger, OK, None),
        (settled, 1, FAILED, same),  # forfeited -> failed
        (settled, 1, FORFEITED, "left the game"),  # reworded
        (settled, 1, FORFEITED, None),  # no reason
        (HONEST, 0, OK, "all good"),  # ok has no reason
        (HONEST, 0, FORFEITED, "made up"),
    ]
    for base, seat, status, reason in cases:
        truth = decode_record(base).verdicts[seat]
        lie = SeatVerdict(seat, status, truth.reason if reason == same else reason)
        assert lie != truth
        plain_lie = {"seat": seat, "status": lie.status, "reason": lie.reason}

        def lie_about(p: dict[str, Any], s: int = seat, v: object = plain_lie) -> None:
            p["verdicts"][s] = v

        verdict = verdict_of(tamper(base, lie_about))
        assert verdict.problems == (f"the record says {lie}, but the verifier finds {truth}",), (
            lie,
            verdict.problems,
        )
        assert verdict.seats[seat] == truth and not verdict.ok


def _no_timer_game() -> bytes:
    """An honest game without turn timer in which the seats chose a direction,
    kept cards, chose targets and moved a card."""
    for seed in range(100):
        record = run_local_game(*fixed_table(4, seed=seed, turn_timer=None))
        kinds = {type(e.action).__name__ for e in record.log}
        if {"ChooseDirection", "Keep", "Target", "MoveTo"} <= kinds:
            assert verify_record(record).ok
            return encode_record(record)
    raise AssertionError("no such game in 100 tries")


NO_TIMER = _no_timer_game()

SERVER_DECIDED = (
    "log entry {i}: the server decided for seat {seat}, but the room had no turn timer and the"
    " seat's player was not away"
)


def _by_server(data: bytes, kind: str) -> tuple[int, int, bytes]:
    """`data` with its first `kind` decision marked as the server's: (its
    index, its seat, the record)."""
    log = plain_log(data)
    i = next(i for i, e in enumerate(log) if e.get("action", {}).get("type") == kind)
    return i, log[i]["seat"], tamper(data, lambda p: p["log"][i].__setitem__("by_server", True))


def _with_changes(data: bytes, changes: list[tuple[int, int, str]]) -> bytes:
    """`data` with these (seat, log_index, change) seat changes, and the seat
    flags that go with them."""

    def change(p: dict[str, Any]) -> None:
        p["seat_changes"] = [{"seat": s, "log_index": at, "change": c} for s, at, c in changes]
        for s, _, c in changes:
            if c != BACK:
                p["seats"][s][c] = True

    return tamper(data, change)


@pytest.mark.parametrize("kind", ["direction", "keep", "target", "move_to"])
def test_the_server_decides_for_a_seat_only_with_a_turn_timer_or_the_seat_away(kind: str) -> None:
    i, seat, data = _by_server(NO_TIMER, kind)
    problem = SERVER_DECIDED.format(i=i, seat=seat)
    assert verdict_of(data).problems == (problem,)
    # With a turn timer, the decision is a time-out default (on the server's word).
    timed = tamper(data, lambda p: p["settings"].__setitem__("turn_timer", 30))
    assert verdict_of(timed).problems == ()
    # The player away or gone: the stand-in's answer.
    for changes in (
        [(seat, i, STAND_IN)],
        [(seat, 0, STAND_IN), (seat, i, LEFT)],
        [(seat, 0, LEFT)],
        [(seat, 0, STAND_IN), (seat, i, BACK), (seat, i, STAND_IN)],
    ):
        assert verdict_of(_with_changes(data, changes)).problems == (), changes
    # Present again, not yet away, away only for another seat, or played by a bot.
    other = (seat + 1) % 4
    for changes in (
        [(seat, 0, STAND_IN), (seat, i, BACK)],
        [(seat, i + 1, STAND_IN)],
        [(other, 0, STAND_IN)],
        [(seat, 0, HANDED_TO_BOT)],
    ):
        assert verdict_of(_with_changes(data, changes)).problems == (problem,), changes


def test_a_skip_needs_a_turn_timer_or_the_seat_away() -> None:
    data = encode_record(play(3, seed=20, cheater=1, seat_class=NeverPlaces))
    skips = [(i, e["seat"]) for i, e in enumerate(plain_log(data)) if e.get("skip")]
    assert len(skips) == 6 and verdict_of(data).problems == ()
    untimed = tamper(data, lambda p: p["settings"].pop("turn_timer"))
    assert verdict_of(untimed).problems == tuple(
        SERVER_DECIDED.format(i=i, seat=seat) for i, seat in skips
    )
    assert verdict_of(_with_changes(untimed, [(1, 0, LEFT)])).problems == ()


class NeverPlaces(LocalSeat):
    def answers(self, decision: Any) -> bool:
        return decision.kind != "place"


class Slow(LocalSeat):
    """Lets a third of its choices time out (never an opening)."""

    def answers(self, decision: Any) -> bool:
        return decision.kind == "open" or self.rng.random() < 0.67


def test_a_record_that_relied_on_its_turn_timer_needs_it() -> None:
    for seed in range(40):
        record = run_local_game(*fixed_table(4, seed=seed, seat_class=Slow, special=2))
        defaults = [(i, e.seat) for i, e in enumerate(record.log) if e.by_server]
        kinds = {type(record.log[i].action).__name__ for i, _ in defaults}
        if {"NoneType", "Keep", "Target"} <= kinds:
            break
    else:
        raise AssertionError("no game with skips, keeps and targets by the server in 40 tries")
    assert {seat for _, seat in defaults} == {2}
    data = encode_record(record)
    assert verdict_of(data).ok
    untimed = tamper(data, lambda p: p["settings"].pop("turn_timer"))
    verdict = verdict_of(untimed)
    assert verdict.problems == tuple(SERVER_DECIDED.format(i=i, seat=seat) for i, seat in defaults)
    assert all(v.ok for v in verdict.seats)  # the seats are not to blame


def test_the_servers_answers_to_failed_openings_and_settlements_need_no_turn_timer() -> None:
    data, _, _ = forged_reveal()  # a room without turn timer
    assert decode_record(data).settings.turn_timer is None
    assert verdict_of(data).problems == ()
    settled = tamper(encode_record(_settled_game()), lambda p: p["settings"].pop("turn_timer"))
    assert any(e.get("settled") for e in plain_log(settled))
    assert verdict_of(settled).problems == ()


@pytest.mark.parametrize("flag", [STAND_IN, LEFT, HANDED_TO_BOT])
def test_seat_flags_must_agree_with_the_seat_changes(flag: str) -> None:
    record = decode_record(NO_TIMER)
    assert record.seat_changes == () and verdict_of(NO_TIMER).ok
    changed = _with_changes(NO_TIMER, [(1, 0, flag)])
    assert verdict_of(changed).ok
    # A flag without its change, and a change without its flag.
    verdict = verdict_of(tamper(NO_TIMER, lambda p: p["seats"][1].__setitem__(flag, True)))
    assert verdict.problems == (
        f"seat 1 is marked {flag}=True, but its seat changes have no {flag!r}",
    )
    verdict = verdict_of(tamper(changed, lambda p: p["seats"][1].__setitem__(flag, False)))
    assert verdict.problems == (
        f"seat 1 is marked {flag}=False, but its seat changes have {flag!r}",
    )


@pytest.mark.parametrize(
    "changes, bad",
    [
        ([BACK], (0, "back", "its player")),
        ([STAND_IN, STAND_IN], (1, "stand_in", "the stand-in (its player away)")),
        ([STAND_IN, BACK, BACK], (2, "back", "its player")),
        ([LEFT, BACK], (1, "back", "the stand-in (its player gone)")),
        ([LEFT, STAND_IN], (1, "stand_in", "the stand-in (its player gone)")),
        ([LEFT, LEFT], (1, "left", "the stand-in (its player gone)")),
        ([STAND_IN, LEFT, HANDED_TO_BOT], (2, "handed_to_bot", "the stand-in (its player gone)")),
        ([HANDED_TO_BOT, BACK], (1, "back", "a bot")),
        ([HANDED_TO_BOT, LEFT], (1, "left", "a bot")),
        ([HANDED_TO_BOT, HANDED_TO_BOT], (1, "handed_to_bot", "a bot")),
        ([HANDED_TO_BOT, STAND_IN, STAND_IN], (2, "stand_in", "the stand-in (its bot away)")),
    ],
)
def test_impossible_seat_changes_are_detected(
    changes: list[str], bad: tuple[int, str, str]
) -> None:
    at = [5 * k for k in range(len(changes))]
    data = _with_changes(NO_TIMER, [(2, i, c) for i, c in zip(at, changes, strict=True)])
    k, change, where = bad
    assert verdict_of(data).problems == (
        f"seat change before log entry {at[k]}: seat 2 cannot go {change} while played by {where}",
    )


def test_possible_seat_changes_verify() -> None:
    for changes in (
        [STAND_IN, BACK, STAND_IN, BACK],
        [STAND_IN, LEFT],
        [STAND_IN, HANDED_TO_BOT],
        [STAND_IN, BACK, LEFT],
        [HANDED_TO_BOT],
        [HANDED_TO_BOT, STAND_IN, BACK],  # the bot's own connection dropped, and came back
    ):
        data = _with_changes(NO_TIMER, [(0, 3 * k, c) for k, c in enumerate(changes)])
        assert verdict_of(data).ok, changes

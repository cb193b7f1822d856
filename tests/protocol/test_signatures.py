"""Signed decisions: the referee refuses a keyed seat's decision without its
signature, the record keeps every signature, and the verifier refuses a
record in which any decision is not signed by whom it is attributed to."""

from __future__ import annotations

import functools
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from oriflamme.engine import Decision
from oriflamme.launcher.cli import main
from oriflamme.protocol import identity, signatures
from oriflamme.protocol import messages as m
from oriflamme.protocol.record import (
    HAND_OVER,
    HANDED_TO_BOT,
    LEFT,
    Record,
    SeatChange,
    decode_record,
    encode_record,
)
from oriflamme.protocol.signatures import NOBODY, SEAT, SERVER, decisions, with_signatures
from oriflamme.protocol.verify import format_verdict, verify_record, verify_record_bytes
from oriflamme.server.core import FixedEntropy, Phase, Referee, Refusal
from tests.protocol.fairness_helpers import FixedSecrets, bot_for
from tests.server.local_referee import (
    LocalSeat,
    finish,
    forge_first_reveal,
    new_local_table,
    start,
    step,
)

KEYS = [identity.private_key(bytes([seat + 1]) * 32) for seat in range(3)]
OTHER = identity.private_key(bytes([99]) * 32)
# The server keys of the local tables (`new_local_table(seed=...)`), by public key.
SERVER_KEYS = {
    identity.public_bytes(key): key
    for key in (
        identity.private_key(FixedEntropy(f"local table {seed}").server_key_seed())
        for seed in range(10)
    )
}


class Slow(LocalSeat):
    """Lets its time run out now and then: the server decides in its place
    (a keep, a target, a skipped placement, a settled card)."""

    def answers(self, decision: Decision) -> bool:
        return self.rng.random() > 0.2


class NeverOpens(Slow):
    """Never opens an eliminated card: it forfeits, and the server settles it."""

    def answers(self, decision: Decision) -> bool:
        return decision.kind != "open" and super().answers(decision)


def keyed_table(seed: int, keys: list[Ed25519PrivateKey | None]) -> tuple[Referee, list[LocalSeat]]:
    return new_local_table(3, seed=seed, seat_class=Slow, keys=keys, secrets_class=FixedSecrets)


@functools.cache
def keyed_game(seed: int = 2) -> Record:
    """Seats 0 and 1 with keys, seat 2 without; each lets its time run out
    now and then, and seat 2 never opens an eliminated card."""
    referee, seats = keyed_table(seed, [KEYS[0], KEYS[1], None])
    seats[2] = NeverOpens(seats[2].secrets, seats[2].rng)
    return run(referee, seats)


def run(referee: Referee, seats: list[LocalSeat]) -> Record:
    start(referee, seats)
    return finish(referee, seats)


@functools.cache
def forged_reveal_game() -> Record:
    """Seat 0 (with a key) reveals its first card as another: a forfeit with
    the failed opening, and its signature."""
    referee, seats = new_local_table(
        3, seed=1, turn_timer=None, keys=KEYS, secrets_class=FixedSecrets
    )
    start(referee, seats)
    ruling, _ = forge_first_reveal(referee, seats)
    assert ruling.failure is not None
    return finish(referee, seats)


@functools.cache
def hand_over_game(honest: bool) -> Record:
    """Seat 1 (with a key) hands its seat to a bot in round 3: honestly (a
    server bot plays on), or with a wrong seed (its secrets fail their check,
    it leaves, the stand-in plays on)."""
    referee, seats = new_local_table(
        3, seed=7, turn_timer=None, keys=KEYS, secrets_class=FixedSecrets
    )
    start(referee, seats)
    while referee.view(None)["round"] < 3:
        step(referee, seats)
    old = seats[1]
    seed = old.secrets.seed if honest else bytes(32)
    openings = old.final_reveal(referee.hidden(1)).openings
    undated = m.HandOver(seed=seed, openings=openings)
    with pytest.raises(Refusal) as refused:  # (a seat with a key dates its hand-over)
        referee.receive(1, old.signed(undated))
    assert refused.value.code == "invalid_field"
    for turn in (referee.turn - 1, referee.turn + 1):
        with pytest.raises(Refusal) as refused:
            referee.receive(1, old.signed(replace(undated, turn=turn)))
        assert refused.value.code == "stale_turn"
    hand_over = m.HandOver(seed=seed, openings=openings, turn=referee.turn)
    ruling = referee.receive(1, old.signed(hand_over))
    if honest:
        seats[1] = bot_for(referee, 1, hand_over, random.Random(1))  # (a bot: no key)
        return finish(referee, seats)
    assert ruling.failure is not None
    referee.mark_seat(1, LEFT)
    while referee.phase is Phase.PLAYING:
        d = referee.decision
        assert d is not None
        if d.seat == 1:
            ruling = referee.stand_in(1)
        else:
            ruling = referee.receive(d.seat, seats[d.seat].signed(seats[d.seat].answer(referee)))
        for event in ruling.events:
            if type(event).__name__ == "Drew":
                seats[event.seat].secrets.draw(len(event.cards))
    return finish(referee, seats)


def kind(d: signatures.Signed, record: Record) -> str:
    """What a decision is, for the tests: its form's type and who signs it."""
    form_type = d.where.split(", ")[-1].split(" ")[0] if d.place[0] == "log" else d.place[0]
    return f"{d.place[0]}:{form_type}:{d.signer}"


RECORDS: dict[str, Callable[[], Record]] = {
    "keyed game": keyed_game,
    "forged reveal": forged_reveal_game,
    "hand-over": functools.partial(hand_over_game, True),
    "failed hand-over": functools.partial(hand_over_game, False),
}


def every_kind() -> dict[str, tuple[str, int]]:
    """The first decision of each kind, in the records above: kind -> (record, index)."""
    found: dict[str, tuple[str, int]] = {}
    for name, make in RECORDS.items():
        record = make()
        for index, d in enumerate(decisions(record)):
            if d.signer != NOBODY:
                found.setdefault(kind(d, record), (name, index))
    return found


# ---------------------------------------------------------------- whole records


@pytest.mark.parametrize("name", RECORDS)
def test_a_record_with_keys_verifies_with_every_signature_checked(name: str) -> None:
    record = RECORDS[name]()
    verdict = verify_record(record)
    assert verdict.problems == (), verdict.problems
    assert decode_record(encode_record(record)) == record
    signed = decisions(record)
    assert all(d.ok(record) for d in signed)
    assert {d.signer for d in signed} >= {SEAT, SERVER}
    assert all(d.sig is not None for d in signed if d.signer != NOBODY)
    for d in signed:  # each signature is of its own decision and no other
        assert d.signer == NOBODY or sum(e.sig == d.sig for e in signed) == 1


def test_every_kind_of_decision_is_signed_and_tested() -> None:
    kinds = every_kind()
    expected = {
        "seed:seed:seat", "final:final:seat", "final:final:server", "forfeit:forfeit:seat",
        "hand_over:hand_over:seat",
        *(f"log:{t}:seat" for t in ("direction", "place", "keep", "reveal", "choose", "open")),
        *(f"log:{t}:server" for t in ("keep", "choose", "skip", "settle", "place", "reveal")),
    }  # fmt: skip
    assert expected <= set(kinds), sorted(expected - set(kinds))


def test_the_keyed_game_signs_as_the_seats_played() -> None:
    record = keyed_game()
    signers = Counter((d.seat, d.signer) for d in decisions(record))
    assert signers[(0, SEAT)] > 10 and signers[(1, SEAT)] > 10
    assert signers[(2, NOBODY)] > 10 and not signers[(2, SEAT)]
    assert signers[(0, SERVER)] and signers[(2, SERVER)]  # (their time ran out)
    assert record.keys == (identity.public_bytes(KEYS[0]), identity.public_bytes(KEYS[1]), None)
    report = format_verdict(record, verify_record(record))
    assert f"seat 0's key {identity.fingerprint(record.keys[0] or b'')} signs its" in report
    assert "no key for seat(s) 2: their decisions are not signed" in report
    assert "problem:" not in report  # (seat 2 forfeited: it never opened its cards)


@pytest.mark.parametrize("kind_name", sorted(every_kind()))
@pytest.mark.parametrize("forgery", ["unsigned", "re-signed"])
def test_a_decision_not_signed_by_its_signer_makes_the_record_not_valid(
    kind_name: str, forgery: str
) -> None:
    """Each kind of decision in turn: without its signature, or signed by
    another key (a seat's decision by the server's key; the server's by
    another), the record is NOT VALID, and the report names the decision."""
    name, index = every_kind()[kind_name]
    record = RECORDS[name]()
    d = decisions(record)[index]
    assert record.server_key is not None
    server = SERVER_KEYS[record.server_key]
    if forgery == "unsigned":
        sig = None
    else:
        forger = server if d.signer == SEAT else OTHER
        sig = identity.sign(forger, d.data)
    if d.signer == SERVER and forgery == "re-signed":
        # (not the server key of the record: re-signing with it is no forgery)
        assert record.server_key != identity.public_bytes(OTHER)
    data = encode_record(with_signatures(record, {d.place: sig}))
    verdict = verify_record_bytes(data)
    assert not verdict.ok
    whose = f"seat {d.seat}'s key" if d.signer == SEAT else "the server's key"
    assert any(p.startswith(d.where) and whose in p for p in verdict.problems), verdict.problems


def test_oriflamme_verify_names_the_forged_decision(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = keyed_game()
    d = next(d for d in decisions(record) if d.signer == SEAT and "choose" in d.where)
    assert record.server_key is not None
    server_sig = identity.sign(SERVER_KEYS[record.server_key], d.data)
    path = tmp_path / "forged.oriflamme"
    path.write_bytes(encode_record(with_signatures(record, {d.place: server_sig})))
    assert main(["verify", str(path)]) != 0
    out = capsys.readouterr().out
    assert f"problem: {d.where} has a signature that is not seat {d.seat}'s key" in out
    assert "verdict: NOT VALID" in out


def test_a_seats_decision_marked_as_the_servers_is_not_valid() -> None:
    """The server cannot take a player's decision for its own (`by_server`)
    without the record showing it: the seat's signature is not the server's."""
    record = keyed_game()
    i = next(
        i
        for i, e in enumerate(record.log)
        if e.seat == 0 and not e.by_server and type(e.action).__name__ == "Keep"
    )
    log = list(record.log)
    log[i] = replace(log[i], by_server=True)
    verdict = verify_record(replace(record, log=tuple(log)))
    assert any(p.startswith(f"log entry {i} ") for p in verdict.problems), verdict.problems


def test_a_decision_changed_after_it_was_signed_is_not_valid() -> None:
    record = keyed_game()
    i, entry = next(
        (i, e)
        for i, e in enumerate(record.log)
        if e.seat == 1 and not e.by_server and e.commitment is not None
    )
    log = list(record.log)
    log[i] = replace(entry, commitment=bytes(32))
    verdict = verify_record(replace(record, log=tuple(log)))
    assert any(
        p
        == f"log entry {i} (turn {turn}, place by seat 1) has a signature that is not seat 1's key"
        for turn in range(200)
        for p in verdict.problems
    ), verdict.problems


def test_a_record_without_keys_verifies_and_says_so() -> None:
    """A record of a server before signed decisions: no key, no signature."""
    record = keyed_game()
    bare = replace(
        with_signatures(record, {d.place: None for d in decisions(record)}),
        keys=(),
        server_key=None,
    )
    verdict = verify_record(bare)
    assert verdict.problems == ()
    report = format_verdict(bare, verdict)
    assert "no key for seat(s) 0, 1, 2" in report
    assert "none of the server's" in report


# ---------------------------------------------------------------- the referee


def decision_message(referee: Referee, seats: list[LocalSeat]) -> tuple[int, m.Message]:
    d = referee.decision
    assert d is not None
    return d.seat, seats[d.seat].answer(referee)


def test_the_referee_refuses_a_keyed_seats_decision_without_its_signature() -> None:
    referee, seats = new_local_table(3, seed=4, keys=KEYS, secrets_class=FixedSecrets)
    unsigned = m.SeedCommit(commitment=seats[0].secrets.seed_commitment)
    with pytest.raises(Refusal) as refused:
        referee.receive(0, unsigned)
    assert refused.value.code == "bad_decision_signature"
    assert referee.seed_commitments == [None, None, None] and referee.inputs == []
    start(referee, seats)
    for _ in range(5):
        seat, message = decision_message(referee, seats)
        before = (referee.turn, list(referee.log), list(referee.inputs))
        other_seat = signatures.signed(KEYS[seat], referee.game_id, (seat + 1) % 3, message)
        other_game = signatures.signed(KEYS[seat], bytes(16), seat, message)
        other_key = signatures.signed(OTHER, referee.game_id, seat, message)
        for bad in (message, other_seat, other_game, other_key):
            with pytest.raises(Refusal) as refused:
                referee.receive(seat, bad)
            assert refused.value.code == "bad_decision_signature"
            assert (referee.turn, referee.log, referee.inputs) == before
        referee.receive(seat, seats[seat].signed(message))
        assert referee.log[-1].sig is not None or referee.log[-2].sig is not None


def test_a_signature_from_a_seat_without_a_key_is_not_kept() -> None:
    referee, seats = keyed_table(5, [KEYS[0], KEYS[1], None])
    start(referee, seats)
    while referee.decision is not None and referee.decision.seat != 2:
        step(referee, seats)
    seat, message = decision_message(referee, seats)
    referee.receive(seat, signatures.signed(OTHER, referee.game_id, seat, message))
    assert all(e.sig is None for e in referee.log if e.seat == 2)


def test_a_rebuilt_referee_makes_the_same_signed_record() -> None:
    """A server started again rebuilds its games from their inputs, with
    the signatures in them (and checks none again)."""
    referee, seats = keyed_table(6, [KEYS[0], None, KEYS[2]])
    record = run(referee, seats)
    again = Referee.rebuild(
        referee.rules,
        first_player=referee.first_player,
        seats=referee.first_seats,
        turn_timer=referee.turn_timer,
        game_id=referee.game_id,
        server_seed=referee.server_seed or b"",
        inputs=referee.inputs,
        choices=referee.choices,
        entropy=referee._entropy,
        keys=referee.keys,
    )
    assert again.record() == record
    assert verify_record(record).ok


def test_a_hand_over_record_keeps_what_was_handed() -> None:
    honest, failed = hand_over_game(True), hand_over_game(False)
    (change,) = [c for c in honest.seat_changes if c.change == HANDED_TO_BOT]
    assert change.handed is not None and change.handed.sig is not None
    final = failed.final_signatures[1]
    assert final is not None and final.of == HAND_OVER
    # after the hand-over, the bot's decisions for seat 1 are the server's
    after = [d for d in decisions(honest) if d.place[0] == "log" and d.seat == 1]
    assert any(d.signer == SERVER for d in after) and any(d.signer == SEAT for d in after)


# ---------------------------------------------------------------- what the server cannot claim


def signed_again(record: Record) -> Record:
    """`record` with the server's decisions signed again by its key, as a
    server that changed something in it would."""
    assert record.server_key is not None
    return signatures.sign_server_decisions(record, SERVER_KEYS[record.server_key])


def test_a_seat_with_a_key_cannot_be_called_a_bot() -> None:
    """A bot's decisions are the server's: a server calling a player's seat a
    bot's would sign that player's decisions itself."""
    record = keyed_game()
    seats = list(record.seats)
    seats[0] = replace(seats[0], bot=True)
    verdict = verify_record(signed_again(replace(record, seats=tuple(seats))))
    assert "seat 0 has a key, but the record says a bot played it: a bot has no key" in (
        verdict.problems
    )


def test_a_hand_over_of_a_seat_with_a_key_needs_its_signature() -> None:
    """A hand-over the seat never sent (no `handed`), or moved to another
    point of the game, is not the seat's: the decisions after it would be
    the server's."""
    record = hand_over_game(True)
    (index,) = [i for i, c in enumerate(record.seat_changes) if c.change == HANDED_TO_BOT]
    change = record.seat_changes[index]
    for forged in (replace(change, handed=None), replace(change, log_index=0)):
        changes = list(record.seat_changes)
        changes[index] = forged
        verdict = verify_record(signed_again(replace(record, seat_changes=tuple(changes))))
        assert any(
            p.startswith(f"seat 1's hand-over (seat change {index})") for p in verdict.problems
        ), verdict.problems
    # A hand-over made up for a seat with a key that never handed it over.
    record = keyed_game()
    made_up = SeatChange(0, 0, HANDED_TO_BOT)
    seats = list(record.seats)
    seats[0] = replace(seats[0], handed_to_bot=True)
    forged_record = replace(
        record, seat_changes=(made_up, *record.seat_changes), seats=tuple(seats)
    )
    verdict = verify_record(signed_again(forged_record))
    assert any(p.startswith("seat 0's hand-over") for p in verdict.problems), verdict.problems


def test_a_record_with_keys_needs_the_servers_key() -> None:
    record = replace(keyed_game(), server_key=None)
    verdict = verify_record(record)
    assert "the record has the seats' keys, but not the server's" in verdict.problems


def test_a_failed_hand_over_stays_where_it_was_dated() -> None:
    """Its signature gives its turn: its forfeit cannot be moved to another."""
    record = hand_over_game(False)
    assert verify_record(record).problems == ()
    (index,) = [i for i, f in enumerate(record.forfeits) if f.seat == 1 and f.opening is None][:1]
    forfeits = list(record.forfeits)
    forfeits[index] = replace(forfeits[index], log_index=0)
    moved = replace(record, forfeits=tuple(sorted(forfeits, key=lambda f: f.log_index)))
    problems = verify_record(moved).problems
    assert any(p.startswith("seat 1's failed hand-over gives turn") for p in problems), problems

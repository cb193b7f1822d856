"""Signed decisions: what a seat (or the server) signs, and how a record shows it.

How this works
--------------
A player with a key signs every decision it sends in a game: `seed_commit`,
`direction`, `place`, `keep`, `reveal`, `choose`, `move`, `open`,
`final_reveal` and `hand_over` carry `sig`, the key's Ed25519 signature of
`decision_bytes`: a context string, then the msgpack array

    [game id, seat, message type, the message's fields in order...]

of the message as sent, without its `id` and `sig` (`form`). Cards are
`[family, kind]`, openings `[pid, card, nonce]`: arrays all the way down,
so a client in any language makes the same bytes (docs/test-vectors.json,
`decisions`). The game id and the seat bind a signature to one seat of one
game, the `turn` to one point of it (`open`, `seed_commit`, `final_reveal`
and `hand_over` happen once per card or seat).

The server refuses a keyed seat's decision without a good signature and
changes nothing. Decisions the server makes (a time-out's default, the
stand-in's, a skipped placement, a settled card, everything its own bots
decide, and a seat's after it handed the seat to a bot) it signs with its
own key, under the seat they were made for; two of them have no message, so
their forms are the server's own: ``["skip", turn]`` and
``["settle", pid, card]``.

The record keeps every signature where it belongs (a log entry, a forfeit
for a failed opening, a hand-over, a seed commitment, the final secrets)
and each seat's key. `decisions` lists, from the record alone, every
decision with the bytes that were signed and who must have signed them:
the seat's key, the server's, or nobody (a seat without a key). The
server signs its own with `sign_server_decisions`; `oriflamme verify`
checks them all (`signature_problems`), and a decision of a seat with a
key that its key did not sign makes the record NOT VALID.

>>> from oriflamme.protocol import identity
>>> key = identity.private_key(bytes(32))
>>> keep = signed(key, bytes(16), 2, m.KeepCard(turn=7))
>>> signature_ok(identity.public_bytes(key), bytes(16), 2, keep)
True
>>> signature_ok(identity.public_bytes(key), bytes(16), 1, keep)  # another seat's
False
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import msgpack
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from oriflamme.engine import (
    FAMILY_NAMES,
    Card,
    ChooseDirection,
    Keep,
    MoveTo,
    Open,
    Place,
    Reveal,
    Target,
    card_to_data,
)

from . import identity
from . import messages as m
from .commitments import Opening
from .record import FINAL_REVEAL, HAND_OVER, HANDED_TO_BOT, FinalSignature, LogEntry, Record

DECISION_CONTEXT = b"oriflamme decision v1\x00"

# The messages a seat signs.
SIGNED: tuple[type[m.Message], ...] = (
    m.SeedCommit,
    m.Direction,
    m.PlaceCard,
    m.KeepCard,
    m.RevealCard,
    m.Choose,
    m.Move,
    m.OpenCard,
    m.FinalReveal,
    m.HandOver,
)

SKIP = "skip"
SETTLE = "settle"

# Not signed: the request id, the signature itself, and a seed commitment's
# sealed seed (the player's own business: a server that changes it only
# keeps the player from unsealing it, which the player checks).
_UNSIGNED_FIELDS = ("id", "sig", "sealed_seed")


def _plain(value: object) -> object:
    if isinstance(value, Card):
        return card_to_data(value)
    if isinstance(value, Opening):
        return [value.pid, card_to_data(value.card), value.nonce]
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def form(message: m.Message) -> list[object]:
    """What is signed of a decision message: its type, then its fields in
    order, but `id` and `sig`.

    >>> _form(m.Choose, turn=12, target=7, id=3)
    ['choose', 12, 7]
    """
    if type(message) not in SIGNED:
        raise TypeError(f"{message.TYPE!r} is not a signed decision")
    return _form(type(message), **{f: getattr(message, f) for f in _signed_fields(type(message))})


def _signed_fields(cls: type[m.Message]) -> list[str]:
    fields = cls.__dataclass_fields__  # type: ignore[attr-defined]
    return [f for f in fields if f not in _UNSIGNED_FIELDS]


def _form(cls: type[m.Message], **values: object) -> list[object]:
    """The form of a `cls` message with these field values, unchecked: a
    record may hold what no message could (its signature cannot hold then)."""
    return [cls.TYPE, *(_plain(values[f]) for f in _signed_fields(cls))]


def skip_form(turn: int) -> list[object]:
    """The server's skip of a seat's placement at `turn`."""
    return [SKIP, turn]


def settle_form(pid: int, card: Card) -> list[object]:
    """The server's settlement of card `pid` its owner did not open."""
    return [SETTLE, pid, card_to_data(card)]


def decision_bytes(game_id: bytes, seat: int, form: Sequence[object]) -> bytes:
    """The bytes signed for decision `form` of `seat` in game `game_id`."""
    packed: bytes = msgpack.packb([game_id, seat, *form], use_bin_type=True)
    return DECISION_CONTEXT + packed


def signed(key: Ed25519PrivateKey, game_id: bytes, seat: int, message: m.Message) -> m.Message:
    """`message` with `sig`: `key`'s signature of it as `seat`'s decision in `game_id`."""
    sig = identity.sign(key, decision_bytes(game_id, seat, form(message)))
    return replace(message, sig=sig)  # type: ignore[type-var]


def signature_ok(public: bytes, game_id: bytes, seat: int, message: m.Message) -> bool:
    """Whether `message.sig` is `public`'s signature of it as `seat`'s decision."""
    sig = getattr(message, "sig", None)
    return sig is not None and identity.verify(
        public, sig, decision_bytes(game_id, seat, form(message))
    )


# ---------------------------------------------------------------- in a record

SEAT = "seat"  # signed by the seat's key
SERVER = "server"  # signed by the server's key
NOBODY = "nobody"  # a seat without a key: its decisions are not signed


@dataclass(frozen=True, slots=True)
class Signed:
    """One decision of a record: where it is (`where`, for people, and
    `place`, to put a signature there), whose it is (`seat`), who must
    have signed it (`signer`: `SEAT`, `SERVER` or `NOBODY`), the bytes
    signed, and the signature the record holds (None: none)."""

    where: str
    place: tuple[str, int]
    seat: int
    signer: str
    data: bytes
    sig: bytes | None

    def ok(self, record: Record) -> bool:
        """Whether the record holds the signature of its signer (a decision
        of a seat without a key needs none)."""
        if self.signer == NOBODY or (self.signer == SERVER and record.server_key is None):
            return True  # (a record of a server before signed decisions: no server key)
        key = record.keys[self.seat] if self.signer == SEAT else record.server_key
        return (
            key is not None and self.sig is not None and identity.verify(key, self.sig, self.data)
        )


def _turns(log: Sequence[LogEntry]) -> list[int]:
    """The `turn` of each log entry, and then of the end of the log: one per
    decision settled, a reveal and the opening that follows it sharing one
    (as the referee counts). What happened when the log held `i` entries
    happened at turn `_turns(log)[i]`."""
    turns, turn = [], 0
    for entry in log:
        turns.append(turn)
        if not (isinstance(entry.action, Reveal) and not entry.by_server):
            turn += 1
    turns.append(turn)
    return turns


def _entry_form(log: Sequence[LogEntry], i: int, turn: int) -> list[object] | None:
    """The form of log entry `i`'s decision; None for the opening that
    follows a reveal (the reveal's form covers it)."""
    e = log[i]
    action = e.action
    if action is None:
        return skip_form(turn)
    if isinstance(action, Open):
        if e.settled:
            assert e.pid is not None
            return settle_form(e.pid, action.card)
        if i > 0 and isinstance(log[i - 1].action, Reveal) and not log[i - 1].by_server:
            return None
        assert e.pid is not None and e.nonce is not None
        return _form(m.OpenCard, pid=e.pid, card=action.card, nonce=e.nonce)
    if isinstance(action, Reveal):
        opening = log[i + 1] if i + 1 < len(log) else None
        if opening is None or not isinstance(opening.action, Open) or opening.nonce is None:
            return [m.RevealCard.TYPE, turn, None, None]  # (the replay says what is wrong)
        return _form(m.RevealCard, turn=turn, card=opening.action.card, nonce=opening.nonce)
    if isinstance(action, Place):
        assert e.commitment is not None
        family = FAMILY_NAMES[action.card.family]
        return _form(m.PlaceCard, turn=turn, at=action.at, family=family, commitment=e.commitment)
    if isinstance(action, Keep):
        return _form(m.KeepCard, turn=turn)
    if isinstance(action, ChooseDirection):
        return _form(m.Direction, turn=turn, direction=action.direction)
    if isinstance(action, Target):
        return _form(m.Choose, turn=turn, target=action.pid)
    if isinstance(action, MoveTo):
        return _form(m.Move, turn=turn, index=action.index)
    raise ValueError(f"log entry {i}: {type(action).__name__} is no decision")


def decisions(record: Record) -> list[Signed]:
    """Every decision of `record`, with the bytes signed and who signs them
    (see the module docstring)."""
    game = record.game_id
    keys = record.per_seat(record.keys)
    handed_at = {c.seat: c.log_index for c in record.seat_changes if c.change == HANDED_TO_BOT}

    def signer(seat: int, by_server: bool, at: int | None) -> str:
        played_by_server = record.seats[seat].bot or (
            seat in handed_at and at is not None and at >= handed_at[seat]
        )
        if by_server or played_by_server:
            return SERVER
        return SEAT if keys[seat] is not None else NOBODY

    out: list[Signed] = []
    seed_sigs = record.per_seat(record.seed_signatures)
    for seat, commitment in enumerate(record.seed_commitments):
        data = decision_bytes(game, seat, _form(m.SeedCommit, commitment=commitment))
        out.append(
            Signed(
                f"seat {seat}'s seed commitment",
                ("seed", seat),
                seat,
                signer(seat, False, None),
                data,
                seed_sigs[seat],
            )
        )
    turns = _turns(record.log)
    for i, entry in enumerate(record.log):
        entry_form = _entry_form(record.log, i, turns[i])
        if entry_form is None:
            continue
        out.append(
            Signed(
                f"log entry {i} (turn {turns[i]}, {entry_form[0]} by seat {entry.seat})",
                ("log", i),
                entry.seat,
                signer(entry.seat, entry.by_server, i),
                decision_bytes(game, entry.seat, entry_form),
                entry.sig,
            )
        )
    for i, forfeit in enumerate(record.forfeits):
        if forfeit.opening is None:
            continue
        o = forfeit.opening
        answer = record.log[forfeit.log_index] if forfeit.log_index < len(record.log) else None
        if answer is not None and isinstance(answer.action, Keep):  # a failed reveal
            failed = _form(m.RevealCard, turn=turns[forfeit.log_index], card=o.card, nonce=o.nonce)
        else:
            failed = _form(m.OpenCard, pid=o.pid, card=o.card, nonce=o.nonce)
        out.append(
            Signed(
                f"forfeit {i} (seat {forfeit.seat}'s failed {failed[0]} of card {o.pid})",
                ("forfeit", i),
                forfeit.seat,
                signer(forfeit.seat, False, forfeit.log_index),
                decision_bytes(game, forfeit.seat, failed),
                forfeit.sig,
            )
        )
    for i, change in enumerate(record.seat_changes):
        if change.change != HANDED_TO_BOT:
            continue
        h = change.handed
        who = signer(change.seat, False, change.log_index - 1)
        if h is None and who != SEAT:
            continue  # (a seat without a key: its hand-over is not signed)
        # Dated by its turn: a hand-over cannot be moved to another point.
        # (Without `handed`, nothing was kept that it signed: not signed.)
        data = (
            b""
            if h is None
            else decision_bytes(
                game,
                change.seat,
                _form(m.HandOver, seed=h.seed, openings=h.openings, turn=turns[change.log_index]),
            )
        )
        out.append(
            Signed(
                f"seat {change.seat}'s hand-over (seat change {i})",
                ("hand_over", i),
                change.seat,
                who,
                data,
                None if h is None else h.sig,
            )
        )
    finals = record.per_seat(record.final_signatures)
    for seat, (seed, openings) in enumerate(zip(record.seeds, record.final_openings, strict=True)):
        if seed is None or openings is None:
            continue
        final = finals[seat]
        if final is not None and final.of == HAND_OVER:
            sent: type[m.Message] = m.HandOver
            secrets = _form(sent, seed=seed, openings=openings, turn=final.turn)
        else:
            sent = m.FinalReveal
            secrets = _form(sent, seed=seed, openings=openings)
        out.append(
            Signed(
                f"seat {seat}'s {sent.TYPE}",
                ("final", seat),
                seat,
                signer(seat, False, len(record.log)),
                decision_bytes(game, seat, secrets),
                None if final is None else final.sig,
            )
        )
    return out


def signature_problems(record: Record) -> list[str]:
    """Every decision of `record` not signed by whom it is attributed to,
    one line each (see the module docstring); first, a record whose keys
    cannot be so: a seat with a key is a player's, never a bot's (whose
    decisions the server signs), and the server of a record with keys signs
    its own decisions."""
    problems = [
        f"seat {seat} has a key, but the record says a bot played it: a bot has no key"
        for seat, key in enumerate(record.keys)
        if key is not None and record.seats[seat].bot
    ]
    if any(k is not None for k in record.keys) and record.server_key is None:
        problems.append("the record has the seats' keys, but not the server's")
    problems += _undated_hand_overs(record)
    for d in decisions(record):
        if d.ok(record):
            continue
        whose = f"seat {d.seat}'s key" if d.signer == SEAT else "the server's key"
        what = "is not signed" if d.sig is None else "has a signature that is not"
        verb = f"{what} by {whose}" if d.sig is None else f"{what} {whose}"
        problems.append(f"{d.where} {verb}")
    return problems


def _undated_hand_overs(record: Record) -> list[str]:
    """A hand-over that failed its check is the seat's final secrets, signed
    with the turn it gave: its forfeit must be at that turn (a record cannot
    move it elsewhere)."""
    turns = _turns(record.log)
    problems = []
    for seat, final in enumerate(record.final_signatures):
        if final is None or final.of != HAND_OVER:
            continue
        at = [
            f.log_index
            for f in record.forfeits
            if f.seat == seat and f.opening is None and turns[f.log_index] == final.turn
        ]
        if not at:
            problems.append(
                f"seat {seat}'s failed hand-over gives turn {final.turn}, but the record has"
                f" no forfeit of seat {seat} at that turn"
            )
    return problems


def sign_server_decisions(record: Record, key: Ed25519PrivateKey) -> Record:
    """`record` with the server's key and its signature on every decision
    the server made (those `decisions` says the server signs)."""
    record = replace(record, server_key=identity.public_bytes(key))
    return with_signatures(
        record,
        {d.place: identity.sign(key, d.data) for d in decisions(record) if d.signer == SERVER},
    )


def with_signatures(record: Record, sigs: dict[tuple[str, int], bytes | None]) -> Record:
    """`record` with the signatures `sigs` put in their places (`Signed.place`;
    None takes one away)."""
    log: list[LogEntry] = list(record.log)
    forfeits = list(record.forfeits)
    seed_sigs: list[bytes | None] = list(record.per_seat(record.seed_signatures))
    finals: list[FinalSignature | None] = list(record.per_seat(record.final_signatures))
    changes = list(record.seat_changes)
    for (kind, index), sig in sigs.items():
        if kind == "log":
            log[index] = replace(log[index], sig=sig)
        elif kind == "seed":
            seed_sigs[index] = sig
        elif kind == "final":
            previous = finals[index]
            of = FINAL_REVEAL if previous is None else previous.of
            turn = None if previous is None else previous.turn
            finals[index] = None if sig is None else FinalSignature(of, sig, turn)
        elif kind == "forfeit":
            forfeits[index] = replace(forfeits[index], sig=sig)
        else:
            handed = changes[index].handed
            if handed is not None:  # (none: nothing to sign, and the verifier says so)
                changes[index] = replace(changes[index], handed=replace(handed, sig=sig))
    return replace(
        record,
        log=tuple(log),
        forfeits=tuple(forfeits),
        seed_signatures=tuple(seed_sigs),
        final_signatures=tuple(finals),
        seat_changes=tuple(changes),
    )

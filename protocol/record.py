"""The game record: everything needed to verify a finished game offline.

A record is one msgpack map (binary fields as msgpack bin, text as str):
settings and seats, the server's seed commitment and seed, each seat's seed
commitment and seed, the ordered log of public decisions exactly as the
referee applied them to its engine (placements with their commitment,
openings with their card and nonce, skipped placements, and which
decisions the server made for a seat), each seat's end-of-game openings of
its still-hidden cards, the public events, the results, forfeits (each with
its place in the log), the times a seat's player went away, came back, left
or handed the seat to a bot (each with its place in the log), and verdicts.
docs/PROTOCOL.md, "The game record", lists every field.

`decode_record` treats its input as hostile: safe msgpack settings, size
limits, ext types refused, every field checked; anything wrong raises
`RecordError` and nothing else. Whether the record tells the truth is
`verify`'s business, not this module's.

>>> decode_record(b"\\x81\\xa6format\\xa3odt")
Traceback (most recent call last):
...
oriflamme.protocol.record.RecordError: not an Oriflamme game record (format is not 'oriflamme-game-record')
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import msgpack

from oriflamme.engine import (
    FAMILY_NAMES,
    Action,
    Event,
    Open,
    Place,
    Reveal,
    Rules,
    action_from_data,
    action_to_data,
    card_from_data,
    card_to_data,
    event_from_data,
    event_to_data,
)

from .codec import unpack_untrusted
from .commitments import (
    COMMITMENT_SIZE,
    GAME_ID_SIZE,
    NONCE_SIZE,
    PROTOCOL_VERSION,
    SEED_SIZE,
    Opening,
)
from .identity import KEY_SIZE, SIGNATURE_SIZE
from .schema import shown

# The longest turn timer a room may have, in seconds: a week (a game that
# waits for its players for days: docs/PROTOCOL.md, "Timers").
MAX_TURN_TIMER = 7 * 24 * 3600

RECORD_FORMAT = "oriflamme-game-record"
MAX_RECORD_SIZE = 1 << 20
MAX_ITEMS = 20_000  # entries in any one list (log, events); a game has a few hundred
MAX_TEXT = 4096  # characters in a name or a reason

OK = "ok"
FAILED = "failed"
FORFEITED = "forfeited"
STATUSES = (OK, FAILED, FORFEITED)

# What happened to a seat's player during a game (`SeatChange.change`).
STAND_IN = "stand_in"  # away past the grace period: the server's stand-in plays the seat
BACK = "back"  # came back and plays the seat again
LEFT = "left"  # left the game: the stand-in plays the seat to the end
HANDED_TO_BOT = "handed_to_bot"  # handed its secrets to a server bot, which plays to the end
SEAT_CHANGES = (STAND_IN, BACK, LEFT, HANDED_TO_BOT)


class RecordError(ValueError):
    """The bytes are not a well-formed game record (the record's fault)."""


@dataclass(frozen=True, slots=True)
class GameSettings:
    """The table: as `oriflamme.engine.Rules`, plus the first player and the
    room's turn timer (seconds, None: no turn timer). `families[seat]` are
    family numbers here, names in the encoded record."""

    players: int
    variant: str
    edition: str
    families: tuple[tuple[int, ...], ...]
    first_player: int
    turn_timer: int | None = None

    @property
    def rules(self) -> Rules:
        return Rules(self.players, self.variant, self.edition, self.families)


@dataclass(frozen=True, slots=True)
class SeatRecord:
    """Who sat where. `left`: the player left during the game; `stand_in`: the
    server's stand-in played for the seat without its secrets; `handed_to_bot`:
    the player handed its secrets to a server bot, which finished the game."""

    name: str
    bot: bool = False
    left: bool = False
    stand_in: bool = False
    handed_to_bot: bool = False


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One decision as the referee applied it: `seat` and the engine action.

    A placement carries the back of the placed card, its `pid` and its
    `commitment`; an opening (`Open`, after a reveal or an elimination) its
    `pid` and `nonce`, the card being in the action. A *settled* opening has
    no nonce: the seat had forfeited, and the referee chose the identity so
    that play could go on (see `verify.settled_card`). A *skipped* placement
    has no action at all (`LogEntry.skip(seat)`): the referee skipped the
    seat's placement (its time ran out, or the stand-in played the seat).

    `by_server`: the server made this decision for the seat (a time-out
    default, or the stand-in's answer in place of a failed opening): a
    direction, a keep, a target or a move, and every skip and settled
    opening. Never a placement, a reveal or a real opening, which need the
    seat's secrets.

    >>> from oriflamme.engine import KEEP
    >>> LogEntry.skip(2).by_server, LogEntry(2, KEEP).by_server
    (True, False)
    """

    seat: int
    action: Action | None
    pid: int | None = None
    commitment: bytes | None = None
    nonce: bytes | None = None
    settled: bool = False
    by_server: bool = False
    # The signature of the decision (docs/PROTOCOL.md, "Signed decisions"):
    # its seat's key's, or the server's for a decision the server made. The
    # opening that follows a reveal has none: the reveal's covers both.
    sig: bytes | None = None

    @classmethod
    def skip(cls, seat: int) -> LogEntry:
        """The entry for `seat`'s skipped placement (always the server's decision)."""
        return cls(seat, None, by_server=True)

    @property
    def skipped(self) -> bool:
        """A skipped placement (the entry has no action)."""
        return self.action is None


@dataclass(frozen=True, slots=True)
class Forfeit:
    """`seat` forfeited for `reason`, when the log held `log_index` entries
    (so between entries `log_index - 1` and `log_index`; the log's length for
    a forfeit at the end). `opening` is the opening that failed its check,
    when that was the reason, so anyone can re-check it: then the log entry
    at `log_index` is the server's answer in its place (a keep for a reveal,
    a settled opening for an eliminated card)."""

    seat: int
    reason: str
    log_index: int
    opening: Opening | None = None
    sig: bytes | None = None  # the signature of the `reveal` or `open` that failed


@dataclass(frozen=True, slots=True)
class SeatChange:
    """`seat`'s player went away, came back, left, or handed the seat to a bot
    (`change`, one of `SEAT_CHANGES`) when the log held `log_index` entries."""

    seat: int
    log_index: int
    change: str
    # A hand-over (`HANDED_TO_BOT`) keeps what the seat handed, and its
    # signature when the seat had a key: the `hand_over` message it sent.
    handed: Handed | None = None


@dataclass(frozen=True, slots=True)
class Handed:
    """What a seat handed to a server bot (`hand_over`): its seed, the
    openings of its hidden cards, and its signature (None: no key)."""

    seed: bytes
    openings: tuple[Opening, ...]
    sig: bytes | None = None


# What a seat's final secrets (`Record.seeds`, `Record.final_openings`) were
# sent as: a `final_reveal`, or a `hand_over` that failed its check.
FINAL_REVEAL = "final_reveal"
HAND_OVER = "hand_over"


@dataclass(frozen=True, slots=True)
class FinalSignature:
    """The signature of a seat's final secrets, and which message carried them."""

    of: str
    sig: bytes
    turn: int | None = None  # the turn a `hand_over` gave


@dataclass(frozen=True, slots=True)
class SeatVerdict:
    """ok, failed (a check failed: `reason`) or forfeited (`reason`)."""

    seat: int
    status: str
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == OK

    def __str__(self) -> str:
        if self.reason is None:
            return f"seat {self.seat}: {self.status}"
        return f"seat {self.seat}: {self.status}: {self.reason}"


@dataclass(frozen=True, slots=True)
class Results:
    """`complete`: the game reached its end (no forfeit stops play), or else
    its players ended it by vote with a seat's player gone (`votes`: the
    seats that voted, each seat whose player was still at the table).
    `winners` is empty when it did not reach its end."""

    complete: bool
    scores: tuple[int, ...]
    winners: tuple[int, ...]
    votes: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Record:
    game_id: bytes
    settings: GameSettings
    seats: tuple[SeatRecord, ...]
    server_seed_commitment: bytes
    server_seed: bytes
    seed_commitments: tuple[bytes, ...]
    seeds: tuple[bytes | None, ...]
    log: tuple[LogEntry, ...]
    final_openings: tuple[tuple[Opening, ...] | None, ...]
    events: tuple[Event, ...]
    results: Results
    forfeits: tuple[Forfeit, ...]
    verdicts: tuple[SeatVerdict, ...]
    seat_changes: tuple[SeatChange, ...] = ()
    version: int = PROTOCOL_VERSION
    # Signed decisions (docs/PROTOCOL.md, "Signed decisions"): each seat's
    # public key (None: the seat had none), the server's, and the signatures
    # of the seed commitments and of the final secrets, per seat. Empty in a
    # record of a server before signed decisions.
    keys: tuple[bytes | None, ...] = ()
    server_key: bytes | None = None
    seed_signatures: tuple[bytes | None, ...] = ()
    final_signatures: tuple[FinalSignature | None, ...] = ()

    def __post_init__(self) -> None:
        # One form for "none at all": an empty tuple (as a record decodes).
        for name in ("keys", "seed_signatures", "final_signatures"):
            if all(v is None for v in getattr(self, name)):
                object.__setattr__(self, name, ())

    def per_seat(self, values: tuple[T | None, ...]) -> tuple[T | None, ...]:
        """`values` (`keys`, `seed_signatures` or `final_signatures`), one
        per seat: an empty tuple is none for each seat."""
        return values or (None,) * self.settings.players


# ---------------------------------------------------------------- encoding


def _opening_to_data(o: Opening) -> dict[str, Any]:
    return {"pid": o.pid, "card": card_to_data(o.card), "nonce": o.nonce}


def entry_to_data(e: LogEntry) -> dict[str, Any]:
    """A log entry's plain map, as the record gives it (and `game_update`)."""
    if e.action is None:
        skip = {"seat": e.seat, "skip": True, "by_server": True}
        return skip if e.sig is None else skip | {"sig": e.sig}
    data: dict[str, Any] = {"seat": e.seat, "action": action_to_data(e.action)}
    if e.pid is not None:
        data["pid"] = e.pid
    if e.commitment is not None:
        data["commitment"] = e.commitment
    if e.nonce is not None:
        data["nonce"] = e.nonce
    if e.settled:
        data["settled"] = True
    if e.by_server:
        data["by_server"] = True
    if e.sig is not None:
        data["sig"] = e.sig
    return data


def _seat_change_to_data(c: SeatChange) -> dict[str, Any]:
    data: dict[str, Any] = {"seat": c.seat, "log_index": c.log_index, "change": c.change}
    if c.handed is not None:
        data["handed"] = {
            "seed": c.handed.seed,
            "openings": [_opening_to_data(o) for o in c.handed.openings],
        }
        if c.handed.sig is not None:
            data["handed"]["sig"] = c.handed.sig

    return data


def _signatures_to_data(r: Record) -> dict[str, Any]:
    """The record's keys and the signatures kept apart from the log (none
    in a record without keys)."""
    data: dict[str, Any] = {}
    if any(k is not None for k in r.keys):
        data["keys"] = list(r.keys)
    if r.server_key is not None:
        data["server_key"] = r.server_key
    if any(s is not None for s in r.seed_signatures):
        data["seed_signatures"] = list(r.seed_signatures)
    if any(s is not None for s in r.final_signatures):
        data["final_signatures"] = [
            None
            if f is None
            else {"of": f.of, "sig": f.sig} | ({} if f.turn is None else {"turn": f.turn})
            for f in r.final_signatures
        ]
    return data


def record_to_data(r: Record) -> dict[str, Any]:
    """The record as the plain map that is packed."""
    s = r.settings
    return {
        "format": RECORD_FORMAT,
        "version": r.version,
        "game_id": r.game_id,
        "settings": {
            "players": s.players,
            "variant": s.variant,
            "edition": s.edition,
            "families": [[FAMILY_NAMES[f] for f in fams] for fams in s.families],
            "first_player": s.first_player,
        }
        | ({} if s.turn_timer is None else {"turn_timer": s.turn_timer}),
        "seats": [
            {
                "name": seat.name,
                "bot": seat.bot,
                "left": seat.left,
                "stand_in": seat.stand_in,
                "handed_to_bot": seat.handed_to_bot,
            }
            for seat in r.seats
        ],
        "server_seed_commitment": r.server_seed_commitment,
        "server_seed": r.server_seed,
        "seed_commitments": list(r.seed_commitments),
        "seeds": list(r.seeds),
        "log": [entry_to_data(e) for e in r.log],
        "final_openings": [
            None if fo is None else [_opening_to_data(o) for o in fo] for fo in r.final_openings
        ],
        "events": [event_to_data(e) for e in r.events],
        "results": {
            "complete": r.results.complete,
            "scores": list(r.results.scores),
            "winners": list(r.results.winners),
        }
        | ({"votes": list(r.results.votes)} if r.results.votes else {}),
        "forfeits": [
            {"seat": f.seat, "reason": f.reason, "log_index": f.log_index}
            | ({} if f.opening is None else {"opening": _opening_to_data(f.opening)})
            | ({} if f.sig is None else {"sig": f.sig})
            for f in r.forfeits
        ],
        "seat_changes": [_seat_change_to_data(c) for c in r.seat_changes],
        "verdicts": [{"seat": v.seat, "status": v.status, "reason": v.reason} for v in r.verdicts],
    } | _signatures_to_data(r)


def encode_record(record: Record) -> bytes:
    """The record as msgpack bytes."""
    packed: bytes = msgpack.packb(record_to_data(record), use_bin_type=True)
    return packed


# ---------------------------------------------------------------- decoding


def _unpack(data: bytes) -> object:
    if not isinstance(data, bytes | bytearray | memoryview):
        raise RecordError(f"a record is bytes, not {type(data).__name__}")
    if len(data) > MAX_RECORD_SIZE:
        raise RecordError(f"a record is at most {MAX_RECORD_SIZE} bytes, this is {len(data)}")
    try:
        obj = unpack_untrusted(
            data,
            max_str_len=MAX_TEXT,
            max_bin_len=64,
            max_array_len=MAX_ITEMS,
            max_map_len=64,
        )
    except (ValueError, msgpack.UnpackException) as exc:
        raise RecordError(f"not valid msgpack: {exc}") from None
    return obj


class _Reader:
    """Field access on untrusted maps that names the faulty field."""

    def __init__(self, data: object, where: str) -> None:
        if not isinstance(data, dict):
            raise RecordError(f"{where} is a map, not {type(data).__name__}")
        self.data: dict[str, object] = data
        self.where = where

    def _fail(self, name: str, expected: str) -> RecordError:
        value = self.data.get(name)
        return RecordError(f"{self.where}: {name!r} is {expected}, not {shown(value)}")

    def has(self, name: str) -> bool:
        return name in self.data

    def get_raw(self, name: str) -> object:
        if name not in self.data:
            raise RecordError(f"{self.where} lacks {name!r}")
        return self.data[name]

    def get_int(self, name: str, low: int = 0, high: int = 2**32 - 1) -> int:
        value = self.get_raw(name)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise self._fail(name, f"an integer in {low}..{high}")
        return value

    def get_bool(self, name: str, default: bool | None = None) -> bool:
        if default is not None and name not in self.data:
            return default
        value = self.get_raw(name)
        if not isinstance(value, bool):
            raise self._fail(name, "true or false")
        return value

    def get_str(self, name: str) -> str:
        value = self.get_raw(name)
        if not isinstance(value, str):
            raise self._fail(name, "a string")
        return value

    def optional_str(self, name: str) -> str | None:
        if self.data.get(name) is None:
            return None
        return self.get_str(name)

    def get_bin(self, name: str, size: int) -> bytes:
        value = self.get_raw(name)
        if not isinstance(value, bytes) or len(value) != size:
            raise self._fail(name, f"{size} bytes (msgpack bin)")
        return value

    def optional_bin(self, name: str, size: int) -> bytes | None:
        return None if self.data.get(name) is None else self.get_bin(name, size)

    def get_list(self, name: str, length: int | None = None) -> list[object]:
        value = self.get_raw(name)
        if not isinstance(value, list) or (length is not None and len(value) != length):
            raise self._fail(name, "a list" if length is None else f"a list of {length}")
        return value


def _bin(value: object, size: int, where: str) -> bytes:
    if not isinstance(value, bytes) or len(value) != size:
        raise RecordError(f"{where} is {size} bytes (msgpack bin)")
    return value


def _seat_int(value: object, players: int, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < players:
        raise RecordError(f"{where} is a seat 0..{players - 1}, not {shown(value)}")
    return value


T = TypeVar("T")


def _converted(convert: Callable[[Any], T], value: object, where: str) -> T:
    try:
        return convert(value)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise RecordError(f"{where}: {exc}") from None


def _opening(data: object, where: str) -> Opening:
    r = _Reader(data, where)
    card = _converted(card_from_data, r.get_raw("card"), f"{where}, card")
    if card.kind is None:
        raise RecordError(f"{where}: an opening names the card, not a card back")
    return Opening(r.get_int("pid"), card, r.get_bin("nonce", NONCE_SIZE))


# What a skipped placement has none of: it is `{"seat": s, "skip": true, "by_server": true}`.
_NOT_IN_A_SKIP = ("action", "pid", "commitment", "nonce", "settled")


def entry_from_data(data: object, players: int, where: str) -> LogEntry:
    """The log entry of its plain map, each field checked (`RecordError`,
    naming `where`); its seat is one of `players`."""
    r = _Reader(data, where)
    entry = _unsigned_entry(r, players, where)
    sig = r.optional_bin("sig", SIGNATURE_SIZE)
    return entry if sig is None else replace(entry, sig=sig)


def _unsigned_entry(r: _Reader, players: int, where: str) -> LogEntry:
    seat = _seat_int(r.get_raw("seat"), players, f"{where}, seat")
    by_server = r.get_bool("by_server", False)
    if r.get_bool("skip", False):
        extra = [name for name in _NOT_IN_A_SKIP if r.data.get(name) is not None]
        if extra:
            raise RecordError(f"{where}: a skipped placement has no {extra[0]!r}")
        if not by_server:
            raise RecordError(f"{where}: a skipped placement is the server's: 'by_server' is true")
        return LogEntry.skip(seat)
    action = _converted(action_from_data, r.get_raw("action"), f"{where}, action")
    if isinstance(action, Place):
        if action.card.kind is not None:
            raise RecordError(f"{where}: a logged placement shows only the card back")
        if by_server:
            raise RecordError(f"{where}: the server never places a card for a seat")
        return LogEntry(seat, action, r.get_int("pid"), r.get_bin("commitment", COMMITMENT_SIZE))
    if isinstance(action, Open):
        if action.card.kind is None:
            raise RecordError(f"{where}: an opening names the card")
        if r.get_bool("settled", False):
            if not by_server:
                raise RecordError(
                    f"{where}: a settled opening is the server's: 'by_server' is true"
                )
            return LogEntry(seat, action, r.get_int("pid"), settled=True, by_server=True)
        if by_server:
            raise RecordError(f"{where}: an opening with a nonce is the seat's, not the server's")
        return LogEntry(seat, action, r.get_int("pid"), nonce=r.get_bin("nonce", NONCE_SIZE))
    if by_server and isinstance(action, Reveal):
        raise RecordError(f"{where}: the server never reveals a card for a seat")
    return LogEntry(seat, action, by_server=by_server)


def _event(data: object, where: str) -> Event:
    if not isinstance(data, dict):
        raise RecordError(f"{where} is a map")
    return _converted(event_from_data, data, where)


def _ints(values: list[object], where: str, low: int, high: int) -> tuple[int, ...]:
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
            raise RecordError(f"{where} holds integers in {low}..{high}, not {shown(v)}")
        out.append(v)
    return tuple(out)


def _log_index(r: _Reader, entries: int, previous: int, what: str) -> int:
    """A `log_index` of a list that goes in the order things happened."""
    log_index = r.get_int("log_index", 0, entries)
    if log_index < previous:
        raise RecordError(
            f"{r.where}: 'log_index' {log_index} comes before the previous {what}'s"
            f" ({previous}): {what}s go in the order they happened"
        )
    return log_index


def record_from_data(data: object) -> Record:
    """Build a `Record` from its plain map, checking every field (`RecordError`)."""
    top = _Reader(data, "the record")
    if top.data.get("format") != RECORD_FORMAT:
        raise RecordError(f"not an Oriflamme game record (format is not {RECORD_FORMAT!r})")
    version = top.get_int("version")
    if version != PROTOCOL_VERSION:
        raise RecordError(f"record version {version} is not supported (only {PROTOCOL_VERSION})")
    game_id = top.get_bin("game_id", GAME_ID_SIZE)

    s = _Reader(top.get_raw("settings"), "settings")
    players = s.get_int("players", 2, 5)
    families = []
    for fams in s.get_list("families", players):
        if not isinstance(fams, list) or not all(f in FAMILY_NAMES for f in fams):
            raise RecordError(
                f"settings: 'families' lists family names per seat, not {shown(fams)}"
            )
        families.append(tuple(FAMILY_NAMES.index(f) for f in fams))
    settings = GameSettings(
        players,
        s.get_str("variant"),
        s.get_str("edition"),
        tuple(families),
        s.get_int("first_player", 0, players - 1),
        s.get_int("turn_timer", 10, MAX_TURN_TIMER)
        if s.data.get("turn_timer") is not None
        else None,
    )
    try:
        settings.rules  # noqa: B018 -- Rules checks the variant, edition and families
    except ValueError as exc:
        raise RecordError(f"settings: {exc}") from None

    seats = []
    for i, item in enumerate(top.get_list("seats", players)):
        r = _Reader(item, f"seat {i}")
        name = r.get_str("name")
        seats.append(
            SeatRecord(
                name,
                r.get_bool("bot", False),
                r.get_bool("left", False),
                r.get_bool("stand_in", False),
                r.get_bool("handed_to_bot", False),
            )
        )

    seed_commitments = tuple(
        _bin(v, COMMITMENT_SIZE, f"seed commitment of seat {i}")
        for i, v in enumerate(top.get_list("seed_commitments", players))
    )
    seeds = tuple(
        None if v is None else _bin(v, SEED_SIZE, f"seed of seat {i} (or nil)")
        for i, v in enumerate(top.get_list("seeds", players))
    )
    log = tuple(
        entry_from_data(e, players, f"log entry {i}") for i, e in enumerate(top.get_list("log"))
    )
    finals: list[tuple[Opening, ...] | None] = []
    for seat, fo in enumerate(top.get_list("final_openings", players)):
        if fo is None:
            finals.append(None)
            continue
        if not isinstance(fo, list):
            raise RecordError(f"final openings of seat {seat} are a list or nil")
        finals.append(
            tuple(_opening(o, f"final opening {i} of seat {seat}") for i, o in enumerate(fo))
        )
    events = tuple(_event(e, f"event {i}") for i, e in enumerate(top.get_list("events")))

    res = _Reader(top.get_raw("results"), "results")
    results = Results(
        res.get_bool("complete"),
        _ints(res.get_list("scores", players), "results.scores", 0, 10_000),
        _ints(res.get_list("winners"), "results.winners", 0, players - 1),
        _ints(res.get_list("votes"), "results.votes", 0, players - 1) if res.has("votes") else (),
    )

    forfeits: list[Forfeit] = []
    for i, item in enumerate(top.get_list("forfeits")):
        r = _Reader(item, f"forfeit {i}")
        opening = r.get_raw("opening") if r.has("opening") else None
        log_index = _log_index(r, len(log), forfeits[-1].log_index if forfeits else 0, "forfeit")
        forfeits.append(
            Forfeit(
                _seat_int(r.get_raw("seat"), players, f"forfeit {i}, seat"),
                r.get_str("reason"),
                log_index,
                None if opening is None else _opening(opening, f"forfeit {i}, opening"),
                r.optional_bin("sig", SIGNATURE_SIZE),
            )
        )

    seat_changes: list[SeatChange] = []
    # Absent from records of the first drafts of version 1: no seat changed.
    for i, item in enumerate(top.get_list("seat_changes") if top.has("seat_changes") else []):
        r = _Reader(item, f"seat change {i}")
        change = r.get_str("change")
        if change not in SEAT_CHANGES:
            raise RecordError(
                f"seat change {i}: change is one of {SEAT_CHANGES}, not {shown(change)}"
            )
        previous = seat_changes[-1].log_index if seat_changes else 0
        log_index = _log_index(r, len(log), previous, "seat change")
        handed = None
        if r.data.get("handed") is not None:
            if change != HANDED_TO_BOT:
                raise RecordError(f"seat change {i}: only a hand-over has 'handed'")
            handed = _handed(r.get_raw("handed"), f"seat change {i}, handed")
        seat_changes.append(
            SeatChange(
                _seat_int(r.get_raw("seat"), players, f"seat change {i}, seat"),
                log_index,
                change,
                handed,
            )
        )

    verdicts = []
    for i, item in enumerate(top.get_list("verdicts", players)):
        r = _Reader(item, f"verdict {i}")
        if r.get_int("seat") != i:
            raise RecordError(
                f"verdict {i} is about seat {r.get_int('seat')}: verdicts go in seat order"
            )
        status = r.get_str("status")
        if status not in STATUSES:
            raise RecordError(f"verdict {i}: status is one of {STATUSES}, not {shown(status)}")
        verdicts.append(SeatVerdict(i, status, r.optional_str("reason")))

    return Record(
        game_id=game_id,
        settings=settings,
        seats=tuple(seats),
        server_seed_commitment=top.get_bin("server_seed_commitment", COMMITMENT_SIZE),
        server_seed=top.get_bin("server_seed", SEED_SIZE),
        seed_commitments=seed_commitments,
        seeds=seeds,
        log=log,
        final_openings=tuple(finals),
        events=events,
        results=results,
        forfeits=tuple(forfeits),
        verdicts=tuple(verdicts),
        seat_changes=tuple(seat_changes),
        version=version,
        **_signatures(top, players),
    )


def _openings(data: object, where: str) -> tuple[Opening, ...]:
    if not isinstance(data, list):
        raise RecordError(f"{where} are a list")
    return tuple(_opening(o, f"{where}, opening {i}") for i, o in enumerate(data))


def _handed(data: object, where: str) -> Handed:
    r = _Reader(data, where)
    return Handed(
        r.get_bin("seed", SEED_SIZE),
        _openings(r.get_raw("openings"), f"{where}: its openings"),
        r.optional_bin("sig", SIGNATURE_SIZE),
    )


def _signatures(top: _Reader, players: int) -> dict[str, Any]:
    """The record's keys and the signatures kept apart from the log (all
    absent from a record without keys)."""

    def per_seat(name: str, size: int) -> tuple[bytes | None, ...]:
        if top.data.get(name) is None:
            return ()
        return tuple(
            None if v is None else _bin(v, size, f"{name}[{i}] (or nil)")
            for i, v in enumerate(top.get_list(name, players))
        )

    finals: list[FinalSignature | None] = []
    if top.data.get("final_signatures") is not None:
        for i, item in enumerate(top.get_list("final_signatures", players)):
            if item is None:
                finals.append(None)
                continue
            r = _Reader(item, f"final_signatures[{i}]")
            of = r.get_str("of")
            if of not in (FINAL_REVEAL, HAND_OVER):
                raise RecordError(
                    f"final_signatures[{i}]: 'of' is {FINAL_REVEAL!r} or {HAND_OVER!r},"
                    f" not {shown(of)}"
                )
            turn = r.get_int("turn") if r.data.get("turn") is not None else None
            finals.append(FinalSignature(of, r.get_bin("sig", SIGNATURE_SIZE), turn))
    return {
        "keys": per_seat("keys", KEY_SIZE),
        "server_key": top.optional_bin("server_key", KEY_SIZE),
        "seed_signatures": per_seat("seed_signatures", SIGNATURE_SIZE),
        "final_signatures": tuple(finals),
    }


def decode_record(data: bytes) -> Record:
    """Decode and check a record's bytes; raises `RecordError` (only) when malformed."""
    return record_from_data(_unpack(data))

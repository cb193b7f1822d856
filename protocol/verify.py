"""Verification: one seat at the end of a game, and a whole game record offline.

How this works
--------------
`check_seat` is the end-of-game check of one seat, the same for the referee
and for anyone holding the record: the seed opens the seat's seed commitment;
every opening opens its commitment, in its family, for that game, seat and
placement; no card and no nonce is used twice; every placed card is opened;
and, from the deal derived from both seeds, no placed card was set aside and
no card was placed before it was drawn (2-player variant).

`verify_record` replays the record's public decision log through an engine
that knows no hidden identity (`hidden_game`): placements are applied as card
backs, openings with the card they name, skipped placements as skips (only
where that seat's placement was pending). Decisions the server made for a
seat (`by_server`) are replayed like the others. The engine re-checks the
legality of every decision and recomputes every event and the results, which
must equal the recorded ones; then each seat goes through `check_seat`.

Forfeits are replayed at their place in the log (`Forfeit.log_index`): a
settled opening needs its seat to have forfeited before it, and a forfeit
for a failed opening is re-checked where it happened: the game waited for
that seat to open that card, the next entry is the server's answer in its
place (a keep, or the settled opening), and the opening really fails, either
its commitment check (the seat is "failed" with that reason) or the engine
(`opening_refused`: its identity is accounted for elsewhere, which happens
to a seat that came back after a settlement used that identity, and is no
fault of a seat that had forfeited before).

Decisions the server made for a seat without a forfeit to answer (a kept
card, a random direction, target or move, a skipped placement) are the
time-out defaults or the stand-in's: they need a turn timer in the
settings, or the seat's player away at that point of the log (the record's
seat changes), or else the server decided where it had no right to.

A log that stops before the game's end is a cut record, unless the game
was ended by vote (`results.complete` false): where the log stops, a seat's
player is gone (away past the grace period, or left), the seats that voted
(`results.votes`) are exactly those whose own player was still at the
table, and there are no winners; everything in the log checks out as usual.

A problem with the record as a whole (an illegal decision, an event or a
result that the replay does not reproduce, the server's seed, a forfeit
that does not hold, a decision the server could not make, a verdict other
than the verifier's own) makes the game invalid; a seat that fails a check
is "failed" with the reason, one that forfeited without failing a check
"forfeited" with the reason of its first forfeit.

    $ oriflamme verify game.record
    seat 0 (ana): ok
    ...
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from oriflamme.engine import (
    Action,
    Card,
    Event,
    Game,
    IllegalAction,
    Keep,
    Kind,
    Open,
    Place,
    Reveal,
    Rules,
    SeatDeal,
    action_to_data,
    event_to_data,
    hidden_deal,
    mask_event,
    new_game,
)
from oriflamme.engine.events import Drew

from .commitments import (
    SERVER_SEAT,
    CommitmentLedger,
    Committed,
    Opening,
    OpeningError,
    seed_matches,
)
from .deal import derive_deal
from .identity import fingerprint
from .record import (
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
    SeatChange,
    SeatVerdict,
    decode_record,
)
from .signatures import SEAT, SERVER, decisions, signature_problems


def settled_card(options: Sequence[Action]) -> Card:
    """The identity the referee gives an eliminated card whose owner forfeited
    instead of opening it: the first card still possible, in kind order, that
    is not an Ambush (an Ambush only when nothing else is possible), so that
    no Ambush is ever invented against the attacker.

    >>> from oriflamme.engine import card
    >>> settled_card([Open(card("red", "ambush")), Open(card("red", "lord"))])
    Card(family=0, kind=<Kind.LORD: 4>)
    """
    cards = [a.card for a in options if isinstance(a, Open)]
    if not cards:
        raise ValueError("no opening to settle")
    return next((c for c in cards if c.kind != Kind.AMBUSH), cards[0])


def opening_refused(game: Game, card: Card) -> str | None:
    """Why `game`'s engine would refuse `Open(card)` for the card the pending
    decision is about, or None if it would take it; changes nothing.

    For an `open` decision that is the card to open; for a `reveal`, the
    acting card (the referee applies a reveal and its opening together, and
    only when both hold). With an engine that knows no card (`hidden_game`),
    the engine refuses only an identity it has seen elsewhere, such as one a
    settled card took.

    >>> from oriflamme.engine import Rules, card
    >>> game = hidden_game(Rules(3))
    >>> opening_refused(game, card("red", "lord"))
    Traceback (most recent call last):
    ...
    ValueError: no opening is due: seat 0 must decide (direction)
    """
    decision = game.decision
    if decision is None:
        raise ValueError("no opening is due: the game is over")
    if decision.kind not in ("reveal", "open"):
        raise ValueError(f"no opening is due: seat {decision.seat} must decide ({decision.kind})")
    assert decision.pid is not None
    try:
        game.check_opening(decision.pid, card)
    except IllegalAction as exc:
        return str(exc)
    return None


def hidden_game(rules: Rules, first_player: int = 0) -> Game:
    """A new game whose engine knows no card: every hand, set-aside card and
    draw pile is a card back. The referee's engine, and the verifier's."""
    return new_game(
        rules.players,
        variant=rules.variant,
        edition=rules.edition,
        first_player=first_player,
        families=rules.families,
        deal=hidden_deal(rules),
    )


# ---------------------------------------------------------------- one seat


def check_openings(
    game_id: bytes, seat: int, placed: Sequence[Committed], openings: Sequence[Opening]
) -> tuple[str | None, CommitmentLedger]:
    """Check `seat`'s openings, in order, against its placements. Returns the
    first failure (or None) and the ledger of what checked out."""
    ledger = CommitmentLedger(game_id)
    for c in placed:
        ledger.commit(c.seat, c.pid, c.family, c.commitment, c.drawn)
    for o in openings:
        try:
            ledger.open(seat, o.pid, o.card, o.nonce)
        except OpeningError as exc:
            return exc.reason, ledger
    return None, ledger


def check_seat(
    rules: Rules,
    game_id: bytes,
    seat: int,
    *,
    seed_commitment: bytes,
    seed: bytes | None,
    server_seed: bytes,
    placed: Sequence[Committed],
    openings: Sequence[Opening],
    complete: bool = True,
    check_deal: bool = True,
) -> str | None:
    """The end-of-game check of `seat`: None if it holds, else the first failure.

    `placed` is everything the seat placed (in placement order), `openings`
    every opening it made: during the game in order, then at the end.
    `complete=False` skips "every placed card was opened" (a replay that
    stopped early); `check_deal=False` skips the deal (the server seed is
    known to be wrong, so the derived deal would blame the seat unfairly).
    """
    if seed is None:
        return "did not reveal its seed"
    if not seed_matches(seed_commitment, game_id, seat, seed):
        return "its seed does not match its seed commitment"
    reason, ledger = check_openings(game_id, seat, placed, openings)
    if reason is not None:
        return reason
    if complete:
        hidden = ledger.hidden(seat)
        if hidden:
            cards = ", ".join(str(pid) for pid in hidden)
            return f"did not open card{'s' if len(hidden) > 1 else ''} {cards}"
    if not check_deal:
        return None
    return _check_dealt(derive_deal(rules, game_id, seat, seed, server_seed), ledger, seat)


def _check_dealt(deal: SeatDeal, ledger: CommitmentLedger, seat: int) -> str | None:
    set_aside = set(deal.set_aside)
    hand = set(deal.hand)
    pile = list(deal.draw_pile)
    for pid in sorted(ledger.opened):
        card = ledger.opened[pid].card
        if card in set_aside:
            return f"card {pid} ({card}) was set aside by the deal"
        if card in hand:
            continue
        if card in pile:
            if pile.index(card) >= ledger.committed[pid].drawn:
                return f"card {pid} ({card}) was placed before it was drawn from the draw pile"
            continue
        return f"card {pid} ({card}) was not dealt to seat {seat}"
    return None


def verify_seat(
    rules: Rules,
    game_id: bytes,
    seat: int,
    *,
    seed_commitment: bytes,
    seed: bytes | None,
    server_seed: bytes,
    placed: Sequence[Committed],
    openings: Sequence[Opening],
) -> SeatVerdict:
    """`check_seat` as a verdict: ok, or failed with the reason."""
    reason = check_seat(
        rules,
        game_id,
        seat,
        seed_commitment=seed_commitment,
        seed=seed,
        server_seed=server_seed,
        placed=placed,
        openings=openings,
    )
    return SeatVerdict(seat, OK if reason is None else FAILED, reason)


# ---------------------------------------------------------------- a record


@dataclass(frozen=True, slots=True)
class GameVerdict:
    """A verdict per seat, and what is wrong with the record as a whole.
    The game is valid (it counts) only when both are clean."""

    seats: tuple[SeatVerdict, ...]
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems and all(v.ok for v in self.seats)

    def reasons(self) -> list[str]:
        """Every reason the game is not valid, one line each."""
        return list(self.problems) + [str(v) for v in self.seats if not v.ok]


def _describe(action: Action) -> str:
    data = action_to_data(action)
    return " ".join(f"{k}={v}" for k, v in data.items())


def _same(a: Event, b: Event) -> bool:
    # NamedTuples compare as plain tuples: Moved(3, 1) == Uncovered(3, True).
    return type(a) is type(b) and a == b


def verify_record(record: Record, *, signatures: bool = True) -> GameVerdict:
    """Replay and check a decoded record; see the module docstring.
    `signatures`: check every decision's signature too (the server's own
    check of a record it made leaves them out: its referee checked each
    signature as it came, and signed its own decisions)."""
    problems: list[str] = []
    settings = record.settings
    rules = settings.rules
    n = settings.players
    gid = record.game_id

    server_ok = seed_matches(record.server_seed_commitment, gid, SERVER_SEAT, record.server_seed)
    if not server_ok:
        problems.append("the server seed does not match the server's seed commitment")

    game = hidden_game(rules, settings.first_player)
    placed: list[list[Committed]] = [[] for _ in range(n)]
    opened: list[list[Opening]] = [[] for _ in range(n)]
    drawn = [0] * n
    replayed: list[Event] = []
    # Forfeits by their place in the log; the seats that have forfeited so
    # far; the first failed opening of each seat (its reason).
    forfeits_before: dict[int, list[Forfeit]] = {}
    for f in record.forfeits:
        forfeits_before.setdefault(f.log_index, []).append(f)
    forfeited: set[int] = set()
    failures: dict[int, str] = {}
    presence = _Presence(record, problems)
    # Entries that answer a failed opening in its seat's place.
    answers = {f.log_index for f in record.forfeits if f.opening is not None}

    def replay(events: list[Event]) -> None:
        for event in events:
            if type(event) is Drew:
                drawn[event.seat] += len(event.cards)
        replayed.extend(mask_event(e, None) for e in events)

    broken = False
    for i in range(len(record.log) + 1):
        entry = record.log[i] if i < len(record.log) else None
        here = forfeits_before.get(i, [])
        if sum(f.opening is not None for f in here) > 1:
            problems.append(
                f"the record has several forfeits for failed openings before log entry {i},"
                " but the server answers in place of one opening at a time"
            )
        for f in here:
            if f.opening is not None:
                failure, problem = _check_evidence(
                    gid, game, f, entry, placed[f.seat], opened[f.seat], f.seat in forfeited
                )
                if problem is not None:
                    problems.append(problem)
                if failure is not None:
                    failures.setdefault(f.seat, failure)
            forfeited.add(f.seat)
        presence.advance(i)
        if entry is None:
            break
        where = f"log entry {i}"
        if (
            entry.by_server
            and not entry.settled
            and i not in answers
            and settings.turn_timer is None
            and not presence.stood_in(entry.seat)
        ):
            problems.append(
                f"{where}: the server decided for seat {entry.seat}, but the room had no turn"
                " timer and the seat's player was not away"
            )
        decision = game.decision
        if decision is None:
            problems.append(f"{where}: the game was already over")
            broken = True
            break
        if entry.action is None:
            if decision.kind != "place" or decision.seat != entry.seat:
                waiting = (
                    f"seat {decision.seat} was to place"
                    if decision.kind == "place"
                    else f"no placement was pending (seat {decision.seat} was to decide:"
                    f" {decision.kind})"
                )
                problems.append(f"{where}: skips seat {entry.seat}'s placement, but {waiting}")
                broken = True
                break
            replay(game.skip_placement())
            continue
        if entry.seat != decision.seat:
            problems.append(
                f"{where}: seat {entry.seat} acted, but seat {decision.seat} was to decide"
                f" ({decision.kind})"
            )
            broken = True
            break
        action = entry.action
        if isinstance(action, Place) and entry.pid != game.next_pid:
            problems.append(f"{where}: the placement is numbered {entry.pid}, not {game.next_pid}")
            broken = True
            break
        if isinstance(action, Open):
            if decision.kind != "open" or entry.pid != decision.pid:
                asked = "no opening" if decision.kind != "open" else f"card {decision.pid}"
                problems.append(f"{where}: opens card {entry.pid}, but {asked} was asked")
                broken = True
                break
            if entry.settled:
                if entry.seat not in forfeited:
                    problems.append(
                        f"{where}: card {entry.pid} was settled, but seat {entry.seat}"
                        " did not forfeit before it"
                    )
                elif action.card != settled_card(decision.options):
                    problems.append(
                        f"{where}: card {entry.pid} was settled as {action.card},"
                        f" not as {settled_card(decision.options)}"
                    )
            else:
                assert entry.pid is not None and entry.nonce is not None
                opened[entry.seat].append(Opening(entry.pid, action.card, entry.nonce))
        try:
            events = game.apply(action, entry.seat)
        except IllegalAction as exc:
            problems.append(f"{where}: seat {entry.seat}'s {_describe(action)} is illegal: {exc}")
            broken = True
            break
        if isinstance(action, Place):
            assert entry.pid is not None and entry.commitment is not None
            placed[entry.seat].append(
                Committed(
                    entry.pid, entry.seat, action.card.family, entry.commitment, drawn[entry.seat]
                )
            )
        replay(events)

    problems.extend(_compare_events(record.events, replayed, broken))
    if not broken:
        problems.extend(_compare_results(record, game, presence))

    seats = seat_verdicts(
        record, placed, opened, failures, complete=not broken, server_ok=server_ok
    )
    for verdict, recorded in zip(seats, record.verdicts, strict=False):
        if recorded != verdict:
            problems.append(f"the record says {recorded}, but the verifier finds {verdict}")
    if len(record.verdicts) != len(seats):
        problems.append(f"the record has {len(record.verdicts)} verdicts for {n} seats")
    if signatures:
        problems.extend(signature_problems(record))
    return GameVerdict(seats, tuple(problems))


# Where a seat's player is, after each kind of seat change, and which changes
# may follow which: away players come back; a seat left or handed to a bot
# stays so.
# Who plays a seat: its player (present, or away while the stand-in plays),
# the stand-in for good (the player left), or a server bot with the seat's
# secrets (whose own connection may drop too). Each change leads from some
# of these to another; any other change is a problem of the record.
_PRESENT = "its player"
_AWAY = "the stand-in (its player away)"
_GONE = "the stand-in (its player gone)"
_BOT = "a bot"
_BOT_AWAY = "the stand-in (its bot away)"
_AFTER_CHANGE = {
    STAND_IN: {_PRESENT: _AWAY, _BOT: _BOT_AWAY},
    BACK: {_AWAY: _PRESENT, _BOT_AWAY: _BOT},
    LEFT: {_PRESENT: _GONE, _AWAY: _GONE},
    HANDED_TO_BOT: {_PRESENT: _BOT, _AWAY: _BOT},
}


class _Presence:
    """Where each seat's player is as the log is replayed: `advance(i)` applies
    the seat changes recorded before log entry `i`; `stood_in(seat)` says
    whether the server's stand-in plays that seat (its player is away, or
    left). Problems with the changes themselves go to `problems`."""

    def __init__(self, record: Record, problems: list[str]) -> None:
        self.where = [_PRESENT] * record.settings.players  # or a bot: the same here
        self.problems = problems
        self._pending: dict[int, list[SeatChange]] = {}
        for seat_change in record.seat_changes:
            self._pending.setdefault(seat_change.log_index, []).append(seat_change)
        for seat, info in enumerate(record.seats):
            for flag, change in (
                ("stand_in", STAND_IN),
                ("left", LEFT),
                ("handed_to_bot", HANDED_TO_BOT),
            ):
                happened = any(c.seat == seat and c.change == change for c in record.seat_changes)
                if getattr(info, flag) != happened:
                    problems.append(
                        f"seat {seat} is marked {flag}={getattr(info, flag)}, but its seat changes"
                        f" {'have' if happened else 'have no'} {change!r}"
                    )

    def advance(self, index: int) -> None:
        for change in self._pending.get(index, []):
            now = self.where[change.seat]
            after = _AFTER_CHANGE[change.change].get(now)
            if after is None:
                self.problems.append(
                    f"seat change before log entry {index}: seat {change.seat} cannot go"
                    f" {change.change} while played by {now}"
                )
                continue
            self.where[change.seat] = after

    def stood_in(self, seat: int) -> bool:
        return self.where[seat] in (_AWAY, _BOT_AWAY, _GONE)

    def gone(self, seat: int) -> bool:
        """The stand-in plays `seat` for its player (away, or left): not for a bot."""
        return self.where[seat] in (_AWAY, _GONE)

    def at_the_table(self, seat: int) -> bool:
        """`seat`'s own player plays it (a server bot's seat is not a player's)."""
        return self.where[seat] == _PRESENT


def _check_evidence(
    game_id: bytes,
    game: Game,
    forfeit: Forfeit,
    answer: LogEntry | None,
    placed: list[Committed],
    opened: list[Opening],
    forfeited_before: bool,
) -> tuple[str | None, str | None]:
    """A forfeit for a failed opening, replayed where it happened (`game` is
    the replay just before log entry `forfeit.log_index`, `answer` that entry):
    (the seat's failure or None, a problem with the record or None).

    The game must be waiting for that seat to open that card, `answer` must
    be the server's answer in its place, and the opening must fail: its
    commitment check (a failure of the seat), or else the engine (no failure
    if the seat had forfeited before: a settled card took that identity).
    """
    seat = forfeit.seat
    o = forfeit.opening
    assert o is not None
    claim = (
        f"the record forfeits seat {seat} before log entry {forfeit.log_index}"
        f" for an opening of card {o.pid}"
    )
    pending = game.decision
    if (
        pending is None
        or pending.seat != seat
        or pending.kind not in ("reveal", "open")
        or pending.pid != o.pid
    ):
        return None, f"{claim}, but the game was not waiting for that opening"
    if not _answers_in_its_place(answer, seat, pending.kind):
        server_answer = "keep" if pending.kind == "reveal" else "settlement"
        return None, f"{claim}, but the next log entry is not the server's {server_answer} of it"
    reason, _ = check_openings(game_id, seat, placed, [*opened, o])
    if reason is not None:
        return reason, None
    refused = opening_refused(game, o.card)
    if refused is None:
        return None, f"{claim} that holds"
    return (None if forfeited_before else refused), None


def _answers_in_its_place(answer: LogEntry | None, seat: int, kind: str) -> bool:
    """`answer` is the server's answer for `seat` in place of a failed opening:
    a keep for a reveal, a settled opening for an eliminated card."""
    if answer is None or answer.seat != seat or not answer.by_server:
        return False
    if kind == "reveal":
        return isinstance(answer.action, Keep)
    return answer.settled


def seat_verdicts(
    record: Record,
    placed: Sequence[Sequence[Committed]],
    opened: Sequence[Sequence[Opening]],
    failures: dict[int, str],
    *,
    complete: bool = True,
    server_ok: bool = True,
    held: Collection[int] = (),
) -> tuple[SeatVerdict, ...]:
    """Each seat's verdict, from what the replay found: every seat's
    placements and openings during play (`placed`, `opened`, in order), the
    first failed opening of each seat that failed one (`failures`: its
    reason), whether the log was replayed to its end (`complete`) and the
    server's seed checked out (`server_ok`), and the seats whose end-of-game
    check the caller made already and found to hold (`held`: the referee
    checks each final reveal as it comes). The referee gives what it saw as
    it played (it needs no replay); `verify_record` what its replay found.
    A failed opening during play is the reason; else the end-of-game check
    (`check_seat`) of the seat's seed and openings; else the seat's first
    forfeit, if any; else ok."""
    first_forfeit: dict[int, Forfeit] = {}
    for f in record.forfeits:
        first_forfeit.setdefault(f.seat, f)
    verdicts = []
    for seat in range(record.settings.players):
        if seat in failures:
            verdicts.append(SeatVerdict(seat, FAILED, failures[seat]))
        else:
            verdicts.append(
                _seat_verdict(
                    record,
                    record.settings.rules,
                    seat,
                    placed[seat],
                    opened[seat],
                    first_forfeit.get(seat),
                    not complete,
                    server_ok,
                    seat in held,
                )
            )
    return tuple(verdicts)


def _seat_verdict(
    record: Record,
    rules: Rules,
    seat: int,
    placed: Sequence[Committed],
    opened: Sequence[Opening],
    forfeit: Forfeit | None,
    broken: bool,
    server_ok: bool,
    held: bool = False,
) -> SeatVerdict:
    gid = record.game_id
    reason: str | None
    seed = record.seeds[seat]
    final = record.final_openings[seat]
    if seed is None or final is None:
        if forfeit is None:
            reason = "sent no end-of-game seed and openings"
        else:
            reason, _ = check_openings(gid, seat, placed, opened)
    elif held:
        reason = None
    else:
        if broken:
            known = {c.pid for c in placed}
            final = tuple(o for o in final if o.pid in known)
        reason = check_seat(
            rules,
            gid,
            seat,
            seed_commitment=record.seed_commitments[seat],
            seed=seed,
            server_seed=record.server_seed,
            placed=placed,
            openings=[*opened, *final],
            complete=not broken,
            check_deal=server_ok,
        )
    if reason is not None:
        return SeatVerdict(seat, FAILED, reason)
    if forfeit is not None:
        return SeatVerdict(seat, FORFEITED, forfeit.reason)
    return SeatVerdict(seat, OK)


def _compare_events(
    recorded: Sequence[Event], replayed: Sequence[Event], broken: bool
) -> list[str]:
    for k, (a, b) in enumerate(zip(recorded, replayed, strict=False)):
        if not _same(a, b):
            return [
                f"event {k} differs from the replay: the record has {event_to_data(a)},"
                f" the replay {event_to_data(b)}"
            ]
    if not broken and len(recorded) != len(replayed):
        return [f"the record has {len(recorded)} events, the replay {len(replayed)}"]
    return []


def _compare_results(record: Record, game: Game, presence: _Presence) -> list[str]:
    res = record.results
    problems = []
    if tuple(game.scores) != res.scores:
        problems.append(
            f"the recorded scores {list(res.scores)} differ from the replay's {game.scores}"
        )
    if game.over:
        if not res.complete:
            problems.append("the record says the game stopped early, but its log reaches the end")
        if res.votes:
            problems.append(
                f"the record says seats {list(res.votes)} voted to end the game, but it was"
                " played to its end"
            )
        if tuple(game.winners) != res.winners:
            problems.append(
                f"the recorded winners {list(res.winners)} differ from the replay's"
                f" {list(game.winners)}"
            )
        return problems
    # No forfeit stops play (the server decides for a seat that cannot), so
    # a log that stops early is a cut record, unless its players ended the
    # game by vote: a seat's player was gone, and every player still at the
    # table voted.
    decision = game.decision
    assert decision is not None
    owes = f"seat {decision.seat} owes a decision ({decision.kind})"
    if res.complete:
        problems.append(f"the record says the game is complete, but its log stops while {owes}")
        return problems
    return problems + _check_vote(record, presence, owes)


def _check_vote(record: Record, presence: _Presence, owes: str) -> list[str]:
    """A game ended by vote, its log stopping while `owes`: where its log
    stops (its seat changes included), a seat's player is gone (away, or
    left), and the seats that voted are exactly those whose own player is
    at the table (not a server bot's), at least one; there are no winners."""
    res = record.results
    seats = range(record.settings.players)
    gone = [s for s in seats if presence.gone(s) and not record.seats[s].bot]
    present = [s for s in seats if presence.at_the_table(s) and not record.seats[s].bot]
    said = f"the log stops while {owes}, and the record says its players ended the game by vote"
    if not gone:
        return [f"{said}, but no seat's player was gone (play always goes on to the end)"]
    problems = []
    if not present:
        problems.append(f"{said}, but no player was left at the table to vote")
    elif list(res.votes) != present:
        problems.append(
            f"{said} (seats {list(res.votes)}), but the players at the table were seats {present}"
        )
    if res.winners:
        problems.append(
            f"a game ended by vote has no winners, but the record names {list(res.winners)}"
        )
    return problems


def verify_record_bytes(data: bytes) -> GameVerdict:
    """Decode (`RecordError` if malformed) and verify a record."""
    return verify_record(decode_record(data))


# ---------------------------------------------------------------- the report


def _printable(text: str) -> str:
    """Names and reasons come from the record: never let them drive the terminal."""
    return "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in text)


def decision_counts(record: Record) -> list[tuple[int, int]]:
    """Per seat: (how many of its decisions the server made, how many it had).
    A decision is a log entry, counting a reveal and its opening as one, as
    `turn` does: the seat's choices, its openings of eliminated cards, and
    the skips and settlements the server made for it. Choices the engine made
    alone (a single legal option) are not decisions, nor are the final
    reveals."""
    counts = [[0, 0] for _ in range(record.settings.players)]
    previous: LogEntry | None = None
    for entry in record.log:
        if not (
            isinstance(entry.action, Open)
            and previous is not None
            and isinstance(previous.action, Reveal)
        ):
            counts[entry.seat][0] += entry.by_server
            counts[entry.seat][1] += 1
        previous = entry
    return [(by_server, total) for by_server, total in counts]


def _signature_lines(record: Record) -> list[str]:
    """Who signed what (`protocol.signatures`): a line per seat with a key,
    one for the server's decisions, one for the seats without a key."""
    counts = Counter((d.signer, d.seat) for d in decisions(record))
    lines = [
        f"signatures: seat {seat}'s key {fingerprint(key)} signs its"
        f" {counts[(SEAT, seat)]} decisions"
        for seat, key in enumerate(record.keys)
        if key is not None
    ]
    by_server = sum(n for (signer, _), n in counts.items() if signer == SERVER)
    if record.server_key is not None:
        lines.append(
            f"signatures: the server's key {fingerprint(record.server_key)} signs its"
            f" {by_server} decisions"
        )
    elif by_server:
        lines.append(f"signatures: none of the server's {by_server} decisions is signed")
    keyless = [
        s
        for s, key in enumerate(record.per_seat(record.keys))
        if key is None and not record.seats[s].bot
    ]
    if keyless:
        seats = ", ".join(str(s) for s in keyless)
        lines.append(f"signatures: no key for seat(s) {seats}: their decisions are not signed")
    return lines


def format_verdict(record: Record, verdict: GameVerdict) -> str:
    """The human-readable report `oriflamme verify` prints."""
    s = record.settings
    res = record.results
    counts = decision_counts(record)
    lines = [
        f"game {record.game_id.hex()}: {s.variant} game, {s.players} players,"
        f" {s.edition} edition, {sum(total for _, total in counts)} decisions"
        + ("" if res.complete else ", ended by vote before its end"),
    ]
    for v, seat, (by_server, total) in zip(verdict.seats, record.seats, counts, strict=True):
        who = seat.name + (", bot" if seat.bot else "")
        status = v.status.upper() if not v.ok else v.status
        reason = "" if v.reason is None else f": {v.reason}"
        server = f" (the server made {by_server} of its {total} decisions)" if by_server else ""
        lines.append(_printable(f"seat {v.seat} ({who}): {status}{reason}{server}"))
    lines.extend(_signature_lines(record))
    scores = " ".join(str(x) for x in res.scores)
    winners = ", ".join(f"seat {w}" for w in res.winners) or "none"
    lines.append(f"scores: {scores}; winners: {winners}")
    lines.extend(_printable(f"problem: {p}") for p in verdict.problems)
    if verdict.ok and not res.complete:
        lines.append(
            "verdict: VALID (every seat verified, the replay reproduces the record), but the game"
            " was ended by vote: it counts for nothing that ranks players"
        )
    elif verdict.ok:
        lines.append("verdict: VALID (every seat verified, the replay reproduces the record)")
    else:
        lines.append(f"verdict: NOT VALID ({len(verdict.reasons())} reason(s) above)")
    return "\n".join(lines)

"""Protocol version 2: a client keeps its own copy of the public game.

How this works
--------------
In version 2 the server does not push the table's view at every change: it
pushes `game_update`, the game's log entries since the previous one (in the
form the game record gives them: docs/PROTOCOL.md, "The game record"), the
pending decision, and a digest of the events the entries made. A client
replays the entries on its own engine game that knows no hidden card (the
verifier's `hidden_game`, which the server's referee plays on too), so the
same events and the same position come out, and the digest says at once if
they did not. A snapshot is the whole log from the deal (`at` 0): a client
replays it into a new game, with nothing to load.

`PublicGame` is that copy: `apply` replays one entry and gives its events,
checking first that it fits (`ReplayError`, which a client takes as "ask
for a snapshot"). `events_digest` is the digest, the same the server's
journal keeps with each ruling.

>>> from oriflamme.engine import Rules, ChooseDirection
>>> from oriflamme.protocol.record import LogEntry
>>> public = PublicGame(Rules(3))
>>> events = public.apply(LogEntry(0, ChooseDirection("left-to-right")))
>>> public.entries, events_digest(events).hex()[:8], public.game.decision.kind
(1, '...', <Step.PLACE: 'place'>)
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import msgpack

from oriflamme.engine import Event, Game, IllegalAction, Place, Rules, Step, event_to_data

from .messages import DIGEST_SIZE
from .record import LogEntry
from .verify import hidden_game


def events_digest(events: Sequence[Event]) -> bytes:
    """The first 16 bytes of SHA-256 over the msgpack of `events`' data
    (`event_to_data`, a list of maps): what a `game_update`'s entries made,
    and what the server's journal keeps of each ruling.

    >>> events_digest([]).hex()
    '...'
    """
    return data_digest([event_to_data(e) for e in events])


def data_digest(events: list[dict[str, Any]]) -> bytes:
    """`events_digest` of events given as their data (`event_to_data`)."""
    packed = msgpack.packb(events, use_bin_type=True)
    return hashlib.sha256(packed).digest()[:DIGEST_SIZE]


class ReplayError(ValueError):
    """A log entry that does not follow the game as replayed so far."""


class PublicGame:
    """A game as everyone may see it, replayed from its log (see the module
    docstring). `game`: the engine's game, every hidden card a back;
    `entries`: how many log entries it has replayed."""

    __slots__ = ("game", "entries")

    def __init__(self, rules: Rules, first_player: int = 0) -> None:
        self.game: Game = hidden_game(rules, first_player)
        self.entries = 0

    def apply(self, entry: LogEntry) -> list[Event]:
        """Replay `entry`, the game's next: its events. `ReplayError` (and
        nothing changed) if the game could not have logged it now."""
        game = self.game
        seat, step = game.current_seat(), game.step  # (not `decision`: no options needed)
        if seat is None:
            raise ReplayError(f"log entry {self.entries}: the game is over")
        if entry.seat != seat:
            raise ReplayError(
                f"log entry {self.entries}: seat {entry.seat} acted, but seat"
                f" {seat} was to decide ({step})"
            )
        if entry.action is None:
            if step != Step.PLACE:
                raise ReplayError(
                    f"log entry {self.entries}: skips a placement, but the decision is {step}"
                )
            events = game.skip_placement()
        else:
            if isinstance(entry.action, Place) and entry.pid != game.next_pid:
                raise ReplayError(
                    f"log entry {self.entries}: the placement is numbered {entry.pid},"
                    f" not {game.next_pid}"
                )
            try:
                events = game.apply(entry.action, entry.seat)
            except IllegalAction as exc:
                raise ReplayError(f"log entry {self.entries}: {exc}") from None
        self.entries += 1
        return events

"""What the core asks of the shell around it: frames to send, connections to
close, bots to run, records to keep. The core never does any of it itself.

A `Send` or a `Close` names a connection by the id the shell gave it; the
others are for the shell's own tasks. None of them is ever logged with its
secrets: a bot's session token is left out of its repr.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field, fields

from oriflamme.protocol import messages as m
from oriflamme.protocol.commitments import Opening
from oriflamme.protocol.record import Record


@dataclass(frozen=True, slots=True)
class Send:
    """Send `message` on connection `conn`. `frame`: its bytes, made already
    (a push: its session made them, to keep them)."""

    conn: Hashable
    message: m.Message
    frame: bytes | None = None


@dataclass(frozen=True, slots=True)
class Close:
    """Send `error` (fatal) on connection `conn`, then close it."""

    conn: Hashable
    error: m.Error


@dataclass(frozen=True, slots=True)
class HandedSeat:
    """What a bot needs to play a seat handed over to it (`hand_over`): the
    seat's seed and the openings of every card it placed, the server seed,
    and how many cards the seat has drawn (2-player variant), all of game
    `game` (its id) and of no other: the bot stays in the seat for the
    room's next games, and plays them with secrets of its own."""

    seed: bytes = field(repr=False)
    openings: tuple[Opening, ...] = field(repr=False)
    server_seed: bytes
    drawn: int
    game: bytes  # (last: a seat handed before it was kept unpickles without it)

    def __setstate__(self, state: list[object]) -> None:
        """Unpickling (the fields' values, in order). One saved before `game`
        was kept is of no game: no game's secrets are taken from it."""
        values = [*state, b""][: len(fields(self))]
        for f, value in zip(fields(self), values, strict=True):
            object.__setattr__(self, f.name, value)


@dataclass(frozen=True, slots=True)
class StartBot:
    """Run a bot of `strategy` for `player`, seated at `seat` of `room`: it
    connects like any client (in-process) and resumes its session with
    `token`. `handed`: the secrets of a seat handed over mid-game."""

    player: int
    room: int
    seat: int
    strategy: str
    token: bytes = field(repr=False)
    handed: HandedSeat | None = None


@dataclass(frozen=True, slots=True)
class StopBot:
    """The bot of `player` is no longer wanted (removed, or its room closed)."""

    player: int


@dataclass(frozen=True, slots=True)
class GameFinished:
    """A game ended: keep its record under `record_id`. `players`: the player
    id of whoever played each seat (None for a server bot)."""

    room: int
    record_id: str
    record: Record = field(repr=False)
    room_name: str = ""
    players: tuple[int | None, ...] = ()
    # Each seat's player's key as the game began (None: a bot, or no key).
    keys: tuple[bytes | None, ...] = ()


@dataclass(frozen=True, slots=True)
class FetchRecord:
    """Read the record kept as `record_id` and hand it (or None) to
    `Gateway.record_loaded`, which answers request `request_id` of `conn`."""

    conn: Hashable
    request_id: int | None
    record_id: str


@dataclass(frozen=True, slots=True)
class ErrorSent:
    """`error` was sent on `conn`: the shell logs it at debug level, so that a
    client author sees on the server what the client was told."""

    conn: Hashable
    error: m.Error


@dataclass(frozen=True, slots=True)
class Fault:
    """The core failed on an input (a bug): the shell logs it. The request was
    answered with ``internal``."""

    conn: Hashable | None  # None: not a connection's input (a timer)
    what: str


@dataclass(frozen=True, slots=True)
class GameOver:
    """Game `game_id` is over, finished or cancelled before it began: the
    secrets the server's bots kept for its `bot_seats` are of no more use."""

    game_id: bytes
    bot_seats: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class LogLine:
    """Something the server's log tells, one line: a room made, a seat taken
    or left, a game started or cancelled, a new host, a room closed, a
    session begun or resumed, a failed opening. Players are named by number
    and name, never with a token or a card."""

    text: str


Effect = (
    Send
    | Close
    | StartBot
    | StopBot
    | GameFinished
    | GameOver
    | FetchRecord
    | ErrorSent
    | Fault
    | LogLine
)

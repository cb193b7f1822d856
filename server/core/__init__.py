"""oriflamme.server.core: the server without I/O.

Plain synchronous objects, in the manner of h11: input in (bytes or
messages, and the current time), effects out (bytes and messages to send,
connections to close, bots to run, records to keep). No sockets, no clock,
no files, no threads: the trio shell around it (next to this package) only
moves bytes, fires deadlines and writes to disk.

From the inside out: `referee` (one game's rules and commitments), `table`
(one game at a table: timers, the stand-in, each seat's pushes), `room`
(seats, host, ready and start, bots, spectators, chat), `sessions` (tokens,
numbered pushes, resume), `lobby` (every session and room, and the requests
that route between them), `gateway` (each connection's protocol checks in
front of the lobby: bytes in, bytes out).
"""

from .config import ServerConfig
from .effects import (
    Close,
    Effect,
    ErrorSent,
    Fault,
    FetchRecord,
    GameFinished,
    GameOver,
    HandedSeat,
    LogLine,
    Send,
    StartBot,
    StopBot,
)
from .entropy import Entropy, FixedEntropy, SystemEntropy
from .gateway import Gateway
from .lobby import Lobby
from .referee import Phase, Referee, Refusal, Ruling

__all__ = [
    "Close",
    "Effect",
    "Entropy",
    "ErrorSent",
    "Fault",
    "FetchRecord",
    "FixedEntropy",
    "GameFinished",
    "GameOver",
    "Gateway",
    "HandedSeat",
    "Lobby",
    "LogLine",
    "Phase",
    "Referee",
    "Refusal",
    "Ruling",
    "Send",
    "ServerConfig",
    "StartBot",
    "StopBot",
    "SystemEntropy",
]

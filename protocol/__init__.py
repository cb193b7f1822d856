"""oriflamme.protocol: the Oriflamme online protocol, version 1, without I/O.

Plain objects, bytes in and events out, as h11 and wsproto; docs/PROTOCOL.md
is the contract. The wire: `codec` (frames of msgpack), `messages` (every
message, checked), `errors` (the error code catalog), `connection` (one
connection's rules: handshake, request ids, push numbers). The fairness:
`commitments` (card and seed commitments, openings), `deal` (each seat's
shuffle from its seed and the server's), `referee` (a server's game core:
game messages in, engine events out, commitments kept), `record` (the game
record) and `verify` (a seat's end-of-game check, a whole record offline).
`localgame` plays a whole game in-process; `catalog`, `vectors`, `examples`
and `transcript` generate the documents.

>>> from oriflamme.protocol import Referee, messages
>>> from oriflamme.engine import Rules
>>> referee = Referee(Rules(3))
>>> referee.receive(0, messages.SeedCommit(commitment=bytes(32)))
[]
"""

from . import messages
from .codec import DEFAULT_MAX_FRAME, FrameDecoder, encode_frame
from .commitments import (
    PROTOCOL_VERSION,
    Opening,
    card_commitment,
    new_nonce,
    new_seed,
    opening_matches,
    seed_commitment,
    seed_matches,
)
from .connection import CLOSED, NEED_DATA, ClientConnection, ConnectionState, ServerConnection
from .deal import derive_deal
from .errors import CODES, LocalProtocolError, ProtocolError, RemoteProtocolError
from .messages import SUPPORTED_VERSIONS, Message
from .record import Record, RecordError, decode_record, encode_record
from .referee import (
    GAME_MESSAGES,
    NotYourTurn,
    Referee,
    RefereeError,
    SeatForfeited,
    StaleTurn,
    error_code,
)
from .verify import GameVerdict, verify_record, verify_record_bytes

__all__ = [
    "CLOSED",
    "CODES",
    "DEFAULT_MAX_FRAME",
    "GAME_MESSAGES",
    "NEED_DATA",
    "PROTOCOL_VERSION",
    "SUPPORTED_VERSIONS",
    "ClientConnection",
    "ConnectionState",
    "FrameDecoder",
    "GameVerdict",
    "LocalProtocolError",
    "Message",
    "NotYourTurn",
    "Opening",
    "ProtocolError",
    "Record",
    "RecordError",
    "Referee",
    "RefereeError",
    "RemoteProtocolError",
    "SeatForfeited",
    "ServerConnection",
    "StaleTurn",
    "card_commitment",
    "decode_record",
    "derive_deal",
    "encode_frame",
    "encode_record",
    "error_code",
    "messages",
    "new_nonce",
    "new_seed",
    "opening_matches",
    "seed_commitment",
    "seed_matches",
    "verify_record",
    "verify_record_bytes",
]

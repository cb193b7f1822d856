"""oriflamme.protocol: the Oriflamme online protocol, version 1: the wire contract.

Plain objects, bytes in and events out, as h11 and wsproto; docs/PROTOCOL.md
is the contract. Nothing here does I/O, and nothing here is a server or a
client: both are built on it (`oriflamme.server`, `oriflamme.client`).

The wire: `codec` (frames of msgpack, the one strict decoder), `schema`
(wire types and the declarations built on them), `messages` (every message,
checked), `errors` (the error code catalog), `connection` (one connection's
rules: handshake, request ids, push numbers). The fairness: `commitments`
(card and seed commitments, openings), `deal` (each seat's shuffle from its
seed and the server's), `record` (the game record) and `verify` (a seat's
end-of-game check, a whole record offline).

>>> from oriflamme.protocol import ClientConnection, ServerConnection, messages
>>> client, server = ClientConnection(), ServerConnection()
>>> server.receive_data(client.send(messages.Hello(versions=(1,), client="doc", name="Ann")))
>>> server.next_message().name
'Ann'
"""

from . import messages
from .codec import DEFAULT_MAX_FRAME, FrameDecoder, FrameLimits, encode_frame
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
from .verify import GameVerdict, verify_record, verify_record_bytes

__all__ = [
    "CLOSED",
    "CODES",
    "DEFAULT_MAX_FRAME",
    "NEED_DATA",
    "PROTOCOL_VERSION",
    "SUPPORTED_VERSIONS",
    "ClientConnection",
    "ConnectionState",
    "FrameDecoder",
    "FrameLimits",
    "GameVerdict",
    "LocalProtocolError",
    "Message",
    "Opening",
    "ProtocolError",
    "Record",
    "RecordError",
    "RemoteProtocolError",
    "ServerConnection",
    "card_commitment",
    "decode_record",
    "derive_deal",
    "encode_frame",
    "encode_record",
    "messages",
    "new_nonce",
    "new_seed",
    "opening_matches",
    "seed_commitment",
    "seed_matches",
    "verify_record",
    "verify_record_bytes",
]

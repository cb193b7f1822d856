"""The error code catalog and the protocol's exception types.

Every refusal on the wire is an ``error`` message whose ``code`` is one of
`CODES`. Each code says whether the connection survives it and whose fault it
is, seen from the side that sends the error (as in h11): ``"remote"`` means
the peer that receives the error caused it, ``"local"`` that the sender did.

Inside the program the same codes travel as exceptions:

* `RemoteProtocolError`: the peer sent something we refuse (a bad frame, an
  unknown message, a field out of range...). Tell the peer with the
  ``error`` message `messages.error_message` makes of it, then close if
  `fatal`.
* `LocalProtocolError`: our own code tried to build or send something the
  protocol forbids. A bug on our side; nothing was sent.

>>> error = RemoteProtocolError(INVALID_FIELD, "place.at: expected 'first', 'last' or a pid")
>>> error.fatal, CODES[error.code].fault
(False, 'remote')
>>> RemoteProtocolError(FRAME_TOO_LARGE, "frame of 70000 bytes").fatal
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Fault = Literal["local", "remote"]


@dataclass(frozen=True, slots=True)
class ErrorCode:
    """One entry of the catalog: `code` as sent on the wire, when it is sent,
    whether the connection stays open afterwards, and whose fault it is."""

    code: str
    meaning: str
    keeps_open: bool
    fault: Fault

    @property
    def section(self) -> str:
        """The heading of docs/PROTOCOL.md that explains what to do about it."""
        return SECTIONS[self.code]


# Framing and handshake: the connection cannot go on.
MALFORMED_FRAME = "malformed_frame"
FRAME_TOO_LARGE = "frame_too_large"
HANDSHAKE_REQUIRED = "handshake_required"
UNSUPPORTED_VERSION = "unsupported_version"
BAD_TOKEN = "bad_token"
TIMEOUT = "timeout"
SESSION_REPLACED = "session_replaced"
SERVER_BUSY = "server_busy"
SHUTTING_DOWN = "shutting_down"
# A request is refused; the connection goes on.
UNKNOWN_MESSAGE = "unknown_message"
INVALID_FIELD = "invalid_field"
UNEXPECTED_MESSAGE = "unexpected_message"
WRONG_STATE = "wrong_state"
NOT_PERMITTED = "not_permitted"
NO_SUCH_ROOM = "no_such_room"
NO_SUCH_RECORD = "no_such_record"
ROOM_FULL = "room_full"
NOT_YOUR_TURN = "not_your_turn"
STALE_TURN = "stale_turn"
ILLEGAL_ACTION = "illegal_action"
BAD_OPENING = "bad_opening"
RATE_LIMITED = "rate_limited"
TOO_MANY_ROOMS = "too_many_rooms"
INTERNAL = "internal"
KEY_REQUIRED = "key_required"
BAD_SIGNATURE = "bad_signature"
NAME_TAKEN = "name_taken"
BAD_DECISION_SIGNATURE = "bad_decision_signature"

_CATALOG = (
    ErrorCode(
        MALFORMED_FRAME,
        "The bytes are not a valid frame: a payload length of 0, a payload that is not"
        " exactly one msgpack value, a value that is not a map, or one holding anywhere a"
        " map key that is not a string, a key twice in one map, a float, an ext type,"
        " invalid UTF-8, or arrays and maps nested more than 12 deep; or the connection"
        " closed in mid-frame.",
        False,
        "remote",
    ),
    ErrorCode(
        FRAME_TOO_LARGE,
        "A frame's declared payload length exceeds the limit (65536 bytes). Sent as soon"
        " as the 4-byte header arrives, without waiting for the payload.",
        False,
        "remote",
    ),
    ErrorCode(
        HANDSHAKE_REQUIRED,
        "The first message of the connection is not a valid `hello`.",
        False,
        "remote",
    ),
    ErrorCode(
        UNSUPPORTED_VERSION,
        "The `hello` lists no protocol version the server speaks; the error's `versions`"
        " field lists the ones it does.",
        False,
        "remote",
    ),
    ErrorCode(
        BAD_TOKEN,
        "The `hello` carries a session token the server does not know or that expired."
        " Reconnect without a token to start a new session.",
        False,
        "remote",
    ),
    ErrorCode(
        TIMEOUT,
        "A deadline of the connection passed: no `hello` soon enough after connecting,"
        " or nothing received for longer than the idle timeout announced in `welcome`;"
        " or you left unread more than the server keeps for you (sent when the"
        " connection can still take it). Resume with your token.",
        False,
        "remote",
    ),
    ErrorCode(
        SESSION_REPLACED,
        "Another connection resumed this session with its token; this older connection is closed.",
        False,
        "remote",
    ),
    ErrorCode(
        SERVER_BUSY,
        "The server has no room for another connection or session now (it holds as many"
        " sessions as it can, or as many connections from your address as it allows:"
        " close some). Try again later.",
        False,
        "local",
    ),
    ErrorCode(
        SHUTTING_DOWN,
        "The server is shutting down. Sessions survive a restart: reconnect later with your token.",
        False,
        "local",
    ),
    ErrorCode(
        UNKNOWN_MESSAGE,
        "The message's `type` is missing, not a string, or not a message this side"
        " accepts. The message is ignored.",
        True,
        "remote",
    ),
    ErrorCode(
        INVALID_FIELD,
        "A field is missing, has the wrong type, or is out of range (the message names"
        " the field). The request is ignored.",
        True,
        "remote",
    ),
    ErrorCode(
        UNEXPECTED_MESSAGE,
        "The message is valid but not at this point of the connection: a second `hello`,"
        " or a request id that is still waiting for its answer. The request is ignored.",
        True,
        "remote",
    ),
    ErrorCode(
        WRONG_STATE,
        "The request makes no sense in the current state of the session, room or game:"
        " joining while already in a room, leaving when in none, starting a game that is"
        " not ready, a game action when no game runs or in the wrong phase (a second"
        " `seed_commit`, a `final_reveal` before the end...), a vote to end a game in which"
        " no player is gone. Nothing changes.",
        True,
        "remote",
    ),
    ErrorCode(
        NOT_PERMITTED,
        "You may not do this: a host-only request (start, add or remove a bot) from"
        " someone else, a game action from a spectator, or a vote to end a game from"
        " someone not playing their own seat (a spectator, a server bot). Nothing changes.",
        True,
        "remote",
    ),
    ErrorCode(
        NO_SUCH_ROOM,
        "No room has this id (it may have closed).",
        True,
        "remote",
    ),
    ErrorCode(
        NO_SUCH_RECORD,
        "The server keeps no record of that id (`get_record`).",
        True,
        "remote",
    ),
    ErrorCode(
        ROOM_FULL,
        "The room has no free seat (or the seat asked for is taken); or, to `spectate`,"
        " all the spectators it takes.",
        True,
        "remote",
    ),
    ErrorCode(
        NOT_YOUR_TURN,
        "A game action from a seat that does not owe the pending decision. Nothing changes.",
        True,
        "remote",
    ),
    ErrorCode(
        STALE_TURN,
        "The action's `turn` is not the pending decision's: it answers a decision that is"
        " already settled (for instance by the turn timer), or one still to come. Nothing"
        " changes.",
        True,
        "remote",
    ),
    ErrorCode(
        ILLEGAL_ACTION,
        "The rules forbid this action now (the message says why). Nothing changes; the"
        " decision is still pending.",
        True,
        "remote",
    ),
    ErrorCode(
        BAD_OPENING,
        "An opening (in `reveal`, `open`, `final_reveal` or `hand_over`) or a seed fails its"
        " check: it does not match its commitment, gives a card of another family, repeats a"
        " card or a nonce the seat already opened, or (with the seed) shows a card the deal"
        " did not give the seat, or leaves out a hidden card. Unlike every other refusal this"
        " one has an effect: it is evidence against the seat, which forfeits. Play goes on:"
        " the server answers a failed `reveal` or `open` in the seat's place (the card is"
        " kept face down, or an eliminated card is settled) and the next `game_state` shows"
        " it; after a failed `hand_over` the server's stand-in plays the seat. The seat may"
        " still act; its later decisions are checked as usual.",
        True,
        "remote",
    ),
    ErrorCode(
        RATE_LIMITED,
        "Too many requests in too short a time: past the answers you leave unread (no"
        " id), past the chat's pace, or past the rooms and games your address may set"
        " going (with the request's id); a server may also refuse requests past its"
        " message rate (with the request's id: this one does not, it reads no more from"
        " you until the rate allows). The request is ignored; slow down.",
        True,
        "remote",
    ),
    ErrorCode(
        TOO_MANY_ROOMS,
        "The server holds all the rooms it can (`create_room`): join one, or try later.",
        True,
        "local",
    ),
    ErrorCode(
        KEY_REQUIRED,
        "This server admits only players with a key (`hello.key`): it does not allow"
        " anonymous play.",
        False,
        "remote",
    ),
    ErrorCode(
        BAD_SIGNATURE,
        "The signature in `prove` is not the key's over the proof (see Keys and the"
        " handshake); or a message came between `hello` and `prove`. No session was opened.",
        False,
        "remote",
    ),
    ErrorCode(
        NAME_TAKEN,
        "The name belongs to another player's key on this server (`hello.name`, `rename`):"
        " choose another. Fatal in answer to a `hello` (no session was opened), not to"
        " `rename`.",
        True,
        "remote",
    ),
    ErrorCode(
        BAD_DECISION_SIGNATURE,
        "A game decision from a player with a key has no `sig`, or its `sig` is not that"
        " key's signature of the decision (see Signed decisions). Nothing changes: sign"
        " it and send it again.",
        True,
        "remote",
    ),
    ErrorCode(
        INTERNAL,
        "The server failed while handling the request (a bug on its side). The request"
        " had no effect.",
        True,
        "local",
    ),
)

CODES: dict[str, ErrorCode] = {entry.code: entry for entry in _CATALOG}

# Where a client author reads about each refusal (docs/PROTOCOL.md headings).
SECTIONS: dict[str, str] = {
    MALFORMED_FRAME: "Encoding",
    FRAME_TOO_LARGE: "Transport and framing",
    HANDSHAKE_REQUIRED: "Handshake and versions",
    UNSUPPORTED_VERSION: "Handshake and versions",
    BAD_TOKEN: "Sessions and resuming",
    TIMEOUT: "Handshake and versions",
    SESSION_REPLACED: "Sessions and resuming",
    SERVER_BUSY: "Errors",
    SHUTTING_DOWN: "Sessions and resuming",
    UNKNOWN_MESSAGE: "Encoding",
    INVALID_FIELD: "Encoding",
    UNEXPECTED_MESSAGE: "Requests, answers and ids",
    WRONG_STATE: "Errors",
    NOT_PERMITTED: "Errors",
    NO_SUCH_ROOM: "Lobby",
    NO_SUCH_RECORD: "Lobby",
    ROOM_FULL: "Lobby",
    NOT_YOUR_TURN: "Decisions and actions",
    STALE_TURN: "Decisions and actions",
    ILLEGAL_ACTION: "Decisions and actions",
    BAD_OPENING: "Commit-reveal and the fair deal",
    RATE_LIMITED: "Requests, answers and ids",
    TOO_MANY_ROOMS: "Lobby",
    INTERNAL: "Errors",
    KEY_REQUIRED: "Keys and the handshake",
    BAD_SIGNATURE: "Keys and the handshake",
    NAME_TAKEN: "Keys and the handshake",
    BAD_DECISION_SIGNATURE: "Signed decisions",
}


# "add_bot.strategy: ...": the field at fault, of the message whose heading says more.
_FIELD_OF_MESSAGE = re.compile(r"([a-z][a-z_]*)\.[a-z]")


class ProtocolError(Exception):
    """A refusal with a catalog `code`.

    `id` is the id of the request being refused, when it could be read, so the
    error sent back can echo it. `fatal` says whether the connection is over;
    it defaults to the catalog's verdict for the code. `versions` goes with
    ``unsupported_version``: the versions this side speaks.
    """

    def __init__(
        self,
        code: str,
        message: str,
        *,
        id: int | None = None,
        fatal: bool | None = None,
        versions: tuple[int, ...] | None = None,
        section: str | None = None,
    ) -> None:
        entry = CODES.get(code)
        if entry is None:
            raise ValueError(f"{code!r} is not an error code of the catalog")
        super().__init__(message)
        self.code = code
        self.message = message
        self.id = id
        self.fatal = (not entry.keeps_open) if fatal is None else fatal
        self.versions = versions
        # The heading of docs/PROTOCOL.md to read (the message's own, for a bad field).
        if section is None and code == INVALID_FIELD:
            named = _FIELD_OF_MESSAGE.match(message)
            if named is not None:
                section = f"`{named.group(1)}`"
        self.section = section if section is not None else entry.section

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, {self.message!r}, id={self.id!r})"


class LocalProtocolError(ProtocolError):
    """We tried to build or send something the protocol forbids (our bug)."""


class RemoteProtocolError(ProtocolError):
    """The peer sent something the protocol forbids (the peer's fault)."""

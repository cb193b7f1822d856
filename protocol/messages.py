"""Every message of protocol v1, both directions, as small frozen values.

Each class is the single spec of its message: the ``wire(...)`` declarations
give every field's wire name, type, bounds, presence and meaning. From them
`from_data` validates what arrives, the constructors validate what we build,
`to_data` gives the plain data to encode, and `tools/docgen/catalog.py`
generates docs/protocol-v1.json and the tables of docs/PROTOCOL.md.

>>> msg = PlaceCard(turn=4, at="first", family="red", commitment=bytes(32), id=7)
>>> data = to_data(msg)
>>> data["type"], data["at"], data["id"]
('place', 'first', 7)
>>> from_data(data, "client") == msg
True
>>> from_data({"type": "place", "turn": 4, "at": "middle", "family": "red",
...            "commitment": bytes(32), "id": 7}, "client")
Traceback (most recent call last):
...
oriflamme.protocol.errors.RemoteProtocolError: invalid_field: place.at: expected "first", "last" or a pid, got a string

The classes are named after their wire ``type`` (``room_state`` is
`RoomState`), except where the engine has a value of that name: the
messages that carry a decision about a card are `PlaceCard`, `KeepCard`,
`RevealCard` and `OpenCard` (the engine's actions are `Place`, `Keep`,
`Reveal`, `Open`), and the ``decision`` structure is `PendingDecision`.

Unknown fields are ignored (evolution rule); a missing, ill-typed or
out-of-range field raises `RemoteProtocolError` with code ``invalid_field``,
an unknown ``type`` one with code ``unknown_message``; nothing else escapes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, ClassVar, Literal, TypeVar, dataclass_transform

from oriflamme.engine import (
    DIRECTIONS,
    EDITIONS,
    VARIANTS,
    Action,
    Card,
    ChooseDirection,
    Keep,
    MoveTo,
    Target,
)
from oriflamme.engine.game import STEPS

from .commitments import (
    COMMITMENT_SIZE,
    GAME_ID_SIZE,
    MAX_SEATS,
    NONCE_SIZE,
    SEED_SIZE,
    Opening,
)
from .errors import CODES, INVALID_FIELD, UNKNOWN_MESSAGE, ProtocolError, RemoteProtocolError
from .record import (
    MAX_TURN_TIMER,
    STATUSES,
    LogEntry,
    RecordError,
    SeatVerdict,
    entry_from_data,
    entry_to_data,
)
from .schema import (
    U32,
    Bin,
    BinUpTo,
    Bool,
    FieldSpec,
    Int,
    Invalid,
    KnownCard,
    ListOf,
    Name,
    OneOf,
    PassedList,
    PlaceAt,
    PlainMap,
    StructOf,
    StructSpec,
    Text,
    Token,
    UInt,
    ValueStruct,
    WireType,
    WireValue,
    dump_fields,
    family_type,
    load_fields,
    shown,
    wire,
    wire_struct,
)

# The protocol versions this side speaks; a session keeps the one its first
# `welcome` chose. (`PROTOCOL_VERSION`, 1, is the one the commitments and
# the records name: version 2 changes how a game is pushed, not what it is.)
SUPPORTED_VERSIONS: tuple[int, ...] = (1, 2)

Sender = Literal["client", "server"]
Role = Literal["request", "reply", "push"]

TOKEN_SIZE = 32
SERVER_ID_SIZE = 16
KEY_SIZE = 32  # an Ed25519 public key (`protocol.identity`)
HANDSHAKE_NONCE_SIZE = 32
SIGNATURE_SIZE = 64
DIGEST_SIZE = 16  # a `game_update`'s digest of events (`protocol.updates`)
MAX_PLACEMENTS = 64  # a game has at most 30 placements (5 seats x 6 rounds)

# Kinds shared by many fields.
ID = UInt()
SEQ = UInt(1, U32)
SEAT = UInt(0, MAX_SEATS - 1)
PID = UInt()
TURN = UInt()
ROOM = UInt(1, U32)
PLAYER = UInt(1, U32)
MILLIS = UInt()
GAME_ID = Bin(GAME_ID_SIZE)
SEED = Bin(SEED_SIZE)
NONCE = Bin(NONCE_SIZE)
COMMITMENT = Bin(COMMITMENT_SIZE)
SIGNATURE = Bin(SIGNATURE_SIZE)
SIG_DOC = (
    "Your key's signature of this decision (see Signed decisions): required from a"
    " player with a key, absent otherwise."
)
NAME = Name(1, 32)
ROOM_NAME = Name(1, 40)
CHAT_TEXT = Text(1, 500)
RECORD_ID = Text(1, 64)  # this server's are the game id in lowercase hex
# A record fits in one frame: the largest game of this version writes about 30 KB.
RECORD_BYTES = BinUpTo(60_000)
# Eight letters and digits of an alphabet without look-alikes, with an optional
# dash in the middle: "KQ7M-P2XD". Matched without regard to case.
INVITE = Text(8, 9)
SCORE = UInt(0, 65535)
# A rating as people see it: OpenSkill's ordinal (mu - 3 sigma), in hundredths.
RATING = Int(-100_000, 100_000)
# The games a session is seated in at once, at most: the one of its room and
# those whose seats it kept (`leave_room.keep_seat`; a server keeps fewer).
MY_GAMES = 64

ID_DOC = "Request id, any value you choose; echoed in the answer. Ids of requests awaiting their answer must differ."
REPLY_ID_DOC = "The `id` of the request this answers, if it had one."
SEQ_DOC = "Push number: 1, 2, 3... per session, one more with every push (see Pushes and seq)."
GAME_DOC = "The game id (16 bytes): binds every commitment to this game."
TIME_LEFT_DOC = "Milliseconds left to answer, counted from when the server sent this frame."


# ------------------------------------------------------------------ structures


@wire_struct("settings")
class RoomSettings(WireValue):
    """A room's settings, fixed when the room is created."""

    players: int = wire(
        UInt(2, MAX_SEATS),
        "Seats at the table: 2 for the two-player variant, 3-5 for the standard game.",
    )
    variant: str = wire(
        OneOf(*VARIANTS), "Rules variant; `two-player` needs `players` 2, `standard` needs 3-5."
    )
    edition: str = wire(
        OneOf(*EDITIONS),
        "Rules edition (they differ only on an Ambush eliminated by its owner's card).",
    )
    turn_timer: int | None = wire(
        UInt(10, MAX_TURN_TIMER),
        "Seconds each decision may take before the server plays the safe default, up to 7 days (a game that waits for its players: see Timers); absent: no turn timer (the default, for casual rooms).",
        default=None,
    )
    first_player: str = wire(
        OneOf("host", "random"),
        "Who picks the first player: `host` (the host names a seat in `start_game`; the host's own seat if not) or `random` (the server draws one).",
    )

    @classmethod
    def for_players(
        cls,
        players: int,
        *,
        turn_timer: int | None = None,
        edition: str = "revised",
        first_player: str = "host",
    ) -> RoomSettings:
        """The settings of a table of `players` seats, in the one variant
        that seats them.

        >>> RoomSettings.for_players(2).variant, RoomSettings.for_players(4).variant
        ('two-player', 'standard')
        """
        variant = "two-player" if players == 2 else "standard"
        return cls(
            players=players,
            variant=variant,
            edition=edition,
            turn_timer=turn_timer,
            first_player=first_player,
        )

    def validate(self) -> None:
        if self.variant == "two-player" and self.players != 2:
            raise Invalid("the two-player variant seats exactly 2 players", "players")
        if self.variant == "standard" and self.players < 3:
            raise Invalid("the standard game seats 3-5 players", "players")


@wire_struct("room_summary")
class RoomSummary(WireValue):
    """One room in a `room_list`."""

    room: int = wire(ROOM, "Room id.")
    name: str = wire(ROOM_NAME, "Room name.")
    host: str = wire(NAME, "The host's display name.")
    state: str = wire(
        OneOf("waiting", "playing", "finished"),
        "`waiting` for players, `playing` a game, or `finished` (the game is over).",
    )
    settings: RoomSettings = wire(StructOf(RoomSettings), "The room's settings.")
    seated: int = wire(UInt(0, MAX_SEATS), "Seats taken (by players or bots).")
    spectators: int = wire(UInt(), "Spectators watching.")


@wire_struct("record_summary")
class RecordSummary(WireValue):
    """One finished game in a `record_list`."""

    record_id: str = wire(RECORD_ID, "The game's record id, for `get_record`.")
    room: int = wire(ROOM, "The room it was played in.")
    room_name: str = wire(ROOM_NAME, "That room's name.")
    names: tuple[str, ...] = wire(
        ListOf(NAME, 2, MAX_SEATS), "Who sat where: each seat's name, in seat order."
    )
    seat: int = wire(SEAT, "Your seat in it.")
    scores: tuple[int, ...] = wire(ListOf(SCORE, 2, MAX_SEATS), "The scores, in seat order.")
    winners: tuple[int, ...] = wire(ListOf(SEAT, 0, MAX_SEATS), "The winning seats.")
    valid: bool = wire(
        Bool(),
        "true: the game was played to its end and every seat's verdict is `ok` (the game counts).",
    )
    rating: int | None = wire(
        RATING,
        "Your rating after this game, if it was rated (see Ratings); absent: not rated.",
        default=None,
    )


@wire_struct("my_game")
class MyGame(WireValue):
    """One game you are seated in, in a `game_list` (see My games)."""

    room: int = wire(ROOM, "Its room: `join_room` with it takes you back to your seat.")
    name: str = wire(ROOM_NAME, "The room's name.")
    game: bytes = wire(
        GAME_ID,
        "The game's id: a game of yours no longer listed is over (its record id is this id"
        " in hex), or was cancelled before it began.",
    )
    seat: int = wire(SEAT, "Your seat.")
    names: tuple[str, ...] = wire(
        ListOf(NAME, 2, MAX_SEATS), "Who plays each seat, in seat order, as the game began."
    )
    round: int = wire(UInt(1, 6), "The round being played (6 during the final reveal).")
    waiting_for: tuple[int, ...] = wire(
        ListOf(SEAT, 0, MAX_SEATS),
        "The seats the game waits for now (a decision, a seed commitment, an opening, a"
        " final reveal), in seat order: your turn when your seat is among them.",
    )
    here: bool = wire(
        Bool(), "true: the game of the room you are in; false: one whose seat you kept."
    )
    time_left: int | None = wire(
        MILLIS,
        "Milliseconds before the server plays the safe default for the seats it waits for;"
        " absent: no timer runs.",
        default=None,
    )


@wire_struct("rating_entry")
class RatingEntry(WireValue):
    """One player in a `ratings` list."""

    name: str = wire(NAME, "The player's name here.")
    key: bytes = wire(Bin(KEY_SIZE), "The player's public key (see Keys and the handshake).")
    rating: int = wire(RATING, "The rating: OpenSkill's mu - 3 sigma, in hundredths.")
    games: int = wire(UInt(), "The rated games the player has played here.")


@wire_struct("seat")
class RoomSeat(WireValue):
    """One seat of a room in `room_state`."""

    seat: int = wire(SEAT, "Seat number, 0-based; seat order is the order of play.")
    name: str | None = wire(
        NAME, "Display name of whoever sits here; absent when the seat is empty.", default=None
    )
    player: int | None = wire(
        PLAYER, "Player id of the human in this seat; absent when empty or for a bot.", default=None
    )
    bot: str | None = wire(
        Token(),
        "Strategy of the server bot playing this seat (`random`, `heuristic`...), or `stand_in` while a disconnected player's seat is played by the stand-in; absent for a human playing.",
        default=None,
    )
    ready: bool = wire(Bool(), "The seat's player said `ready` (bots are always ready).")
    connected: bool = wire(
        Bool(),
        "Whoever sits here has a live connection (a server bot connects right after it is seated).",
    )
    rating: int | None = wire(
        RATING,
        "The rating of the player with a key who sits here, once rated (see Ratings); absent otherwise.",
        default=None,
    )
    key: bytes | None = wire(
        Bin(KEY_SIZE),
        "The public key of the player who sits here, if they have one (see Keys and the handshake): the name is that key's on this server. Absent: an empty seat, a bot, or a player without a key.",
        default=None,
    )


# What `decision` (version 1) and `pending` (version 2) say alike.
DECIDING_DOC = "The seat that must decide."
DECISION_KIND = OneOf(*(s for s in STEPS if s != "over"))
DECISION_KIND_DOC = "What is decided: the engine's decision kind (see Decisions and actions)."
DECISION_PID_DOC = (
    "The card concerned: the acting card, or the card to open; absent for `direction` and `place`."
)


@wire_struct("decision")
class PendingDecision(WireValue):
    """The decision the game waits for (the engine's `Decision`)."""

    seat: int = wire(SEAT, DECIDING_DOC)
    kind: str = wire(DECISION_KIND, DECISION_KIND_DOC)
    pid: int | None = wire(PID, DECISION_PID_DOC, default=None)
    turn: int = wire(
        TURN,
        "This decision's number: 0 for the first decision of the game, one more after each decision settled, whether its seat answered or the server did (a time-out, a skipped placement, a settled opening, its answer in place of a failed opening); a `reveal` and its opening count as one. Echo it in your action.",
    )
    options: list[dict[str, Any]] = wire(
        PassedList(PlainMap("an engine action", typed=True), 1, 200),
        "Every legal answer, as the engine's action data (`place` options name card backs: any card of that family from your hand).",
    )
    time_left: int | None = wire(
        MILLIS,
        "Milliseconds left to answer, counted from when the server sent this frame; absent when the decision has no timer (a room without a turn timer; an `open` decision always has the reply timer).",
        default=None,
    )


@wire_struct("pending")
class Pending(WireValue):
    """Version 2: the decision the game waits for, without its options: they
    are the legal actions of your copy of the game (see Version 2)."""

    seat: int = wire(SEAT, DECIDING_DOC)
    kind: str = wire(DECISION_KIND, DECISION_KIND_DOC)
    pid: int | None = wire(PID, DECISION_PID_DOC, default=None)
    turn: int = wire(TURN, "This decision's number, as in `decision`: echo it in your action.")
    time_left: int | None = wire(
        MILLIS,
        "Milliseconds left to answer, as in `decision`; absent when the decision has no timer.",
        default=None,
    )


@wire_struct("commitment")
class PlacementCommitment(WireValue):
    """The commitment a seat sent for one placement."""

    pid: int = wire(PID, "The placed card's pid.")
    seat: int = wire(SEAT, "The seat that placed it.")
    commitment: bytes = wire(COMMITMENT, "The card commitment sent with the `place` action.")


OPENING = ValueStruct(
    Opening,
    "opening",
    "The opening of one card commitment: which card placement `pid` was, and its nonce.",
    (
        FieldSpec("pid", PID, "The card's pid.", True),
        FieldSpec("card", KnownCard(), "The card's identity, `[family, kind]`.", True),
        FieldSpec("nonce", NONCE, "The 32-byte nonce used in its commitment.", True),
    ),
)


@wire_struct("seat_seed")
class SeatSeed(WireValue):
    """A seat's client seed, revealed at the end of the game."""

    seat: int = wire(SEAT, "The seat.")
    seed: bytes = wire(SEED, "Its 32-byte client seed.")


VERDICT = ValueStruct(
    SeatVerdict,
    "verdict",
    "The end-of-game verification of one seat, in the same words as the game record and `oriflamme verify`.",
    (
        FieldSpec("seat", SEAT, "The seat.", True),
        FieldSpec(
            "status",
            OneOf(*STATUSES),
            "`ok`: its seed, its deal and every opening check out; `failed`: a check failed (an opening during play, a `hand_over`, or the end-of-game check); `forfeited`: the seat forfeited without failing a check (a demanded opening or the final reveal not sent in time, it left the game...).",
            True,
        ),
        FieldSpec("reason", Text(1, 500), "Why, for `failed` and `forfeited`.", False),
    ),
)


# ------------------------------------------------------------------ messages


class Message(WireValue):
    """Base of every message. `TYPE` is the wire ``type``; `SENDER` who
    sends it; `ROLE` whether it is a request (answered), a reply or a push;
    `REPLY` the type that answers a request (besides ``error``);
    `VERSIONS` the protocol versions that have it."""

    __slots__ = ()
    TYPE: ClassVar[str]
    SENDER: ClassVar[Sender]
    ROLE: ClassVar[Role]
    REPLY: ClassVar[str | None]
    VERSIONS: ClassVar[tuple[int, ...]]


M = TypeVar("M", bound=Message)

CLIENT_MESSAGES: dict[str, type[Message]] = {}
SERVER_MESSAGES: dict[str, type[Message]] = {}


@dataclass_transform(frozen_default=True, kw_only_default=True, field_specifiers=(wire,))
def message(
    type_: str,
    sender: Sender,
    role: Role,
    reply: str | None = None,
    versions: tuple[int, ...] = SUPPORTED_VERSIONS,
) -> Callable[[type[M]], type[M]]:
    """Declare a message class of the protocol `versions` and register it
    under its wire `type_`."""

    def make(cls: type[M]) -> type[M]:
        made = wire_struct(type_)(cls)
        made.TYPE = type_
        made.SENDER = sender
        made.ROLE = role
        made.REPLY = reply
        made.VERSIONS = versions
        registry = CLIENT_MESSAGES if sender == "client" else SERVER_MESSAGES
        assert type_ not in registry, type_
        registry[type_] = made
        return made

    return make


# ---- connection


@message("hello", "client", "request", reply="welcome")
class Hello(Message):
    """The first message of every connection: the versions you speak, who you
    are, and the session token to resume, if any."""

    versions: tuple[int, ...] = wire(
        ListOf(UInt(1, 65535), 1, 16), "Protocol versions the client speaks (this document: 1)."
    )
    client: str = wire(Text(1, 64), "Client software name and version, for logs (`mybot/0.3`).")
    name: str = wire(NAME, "Your display name in rooms and chat (ignored when resuming).")
    token: bytes | None = wire(
        Bin(TOKEN_SIZE),
        "A session token from an earlier `welcome`, to resume that session.",
        default=None,
        secret=True,
    )
    seq: int | None = wire(
        UInt(0, U32),
        "With `token`: the `seq` of the last push you received, so the server can send only what you missed (see Sessions and resuming); absent: send a snapshot.",
        default=None,
    )
    key: bytes | None = wire(
        Bin(KEY_SIZE),
        "Your public key (Ed25519, its 32 raw bytes): you are this key's player here. The server answers `challenge`, and you prove that you hold the key with `prove` (see Keys and the handshake). Absent: you play without a key, where the server allows it.",
        default=None,
    )
    nonce: bytes | None = wire(
        Bin(HANDSHAKE_NONCE_SIZE),
        "With `key`, and only with it: 32 fresh random bytes, which the server signs in `challenge` to prove its own key.",
        default=None,
    )
    id: int | None = wire(ID, ID_DOC, default=None)


@message("challenge", "server", "reply")
class Challenge(Message):
    """The answer to a `hello` with a `key`: the server's key, proved, and
    what to sign to prove yours (see Keys and the handshake)."""

    server_key: bytes = wire(
        Bin(KEY_SIZE),
        "The server's public key (Ed25519, 32 raw bytes): pin it, as `welcome.server_key`.",
    )
    nonce: bytes = wire(Bin(HANDSHAKE_NONCE_SIZE), "32 fresh random bytes of the server's.")
    signature: bytes = wire(
        Bin(SIGNATURE_SIZE),
        "The server's signature, by `server_key`, of its proof: `hello.nonce`, `nonce` and `hello.key` (see Keys and the handshake). Check it before you answer.",
    )
    id: int | None = wire(ID, REPLY_ID_DOC, default=None)


@message("prove", "client", "request", reply="welcome")
class Prove(Message):
    """The answer to `challenge`: your signature of your proof. The server
    checks it, then welcomes you as the player of your key."""

    signature: bytes = wire(
        Bin(SIGNATURE_SIZE),
        "Your signature, by `hello.key`, of your proof: `challenge.server_key`, `challenge.nonce`, `hello.nonce` and `hello.key` (see Keys and the handshake).",
    )
    id: int | None = wire(ID, ID_DOC, default=None)


@message("welcome", "server", "reply")
class Welcome(Message):
    """The server accepts the `hello`: the session is open."""

    version: int = wire(
        UInt(1, 65535), "The protocol version chosen: the highest one both sides speak."
    )
    token: bytes = wire(
        Bin(TOKEN_SIZE),
        "The session's secret token: keep it to resume (`hello.token`). Never show it.",
        secret=True,
    )
    player: int = wire(
        PLAYER, "Your player id (public: it names you in `room_state` and `chat_message`)."
    )
    server: str = wire(Text(1, 64), "Server software name and version, for logs.")
    resumed: bool = wire(
        Bool(),
        "true: the session of `hello.token` goes on, and a snapshot follows; false: a new session.",
    )
    idle_timeout: int = wire(
        UInt(1, 86400),
        "Seconds of silence after which the server closes the connection: send `ping` when idle.",
    )
    server_id: bytes | None = wire(
        Bin(SERVER_ID_SIZE),
        "The server's identity (public), the same whatever address reached it and across its"
        " restarts: key the token you keep by it, not by the address (see Sessions and"
        " resuming). Absent: the server has none.",
        default=None,
    )
    server_key: bytes | None = wire(
        Bin(KEY_SIZE),
        "The server's public key (Ed25519, 32 raw bytes), the same across its restarts: pin it per server, and warn your user if it changes (see Keys and the handshake). Absent: the server has none.",
        default=None,
    )
    name: str | None = wire(
        NAME,
        "The name the others see you by: the one your key holds on this server, which may not be the `hello.name` you sent (see Keys and the handshake). Absent: `hello.name`, as you sent it.",
        default=None,
    )
    id: int | None = wire(ID, REPLY_ID_DOC, default=None)


@message("ping", "client", "request", reply="pong")
class Ping(Message):
    """Keep the connection alive, or measure the round trip."""

    id: int | None = wire(ID, ID_DOC, default=None)


@message("pong", "server", "reply")
class Pong(Message):
    """The answer to `ping`."""

    id: int | None = wire(ID, REPLY_ID_DOC, default=None)


@message("ok", "server", "reply")
class Ok(Message):
    """The request was accepted and done; its effects follow as pushes."""

    id: int | None = wire(ID, REPLY_ID_DOC, default=None)


@message("error", "server", "reply")
class Error(Message):
    """A refusal: the request (or the connection) is refused with a code from
    the error catalog. Also sent unprompted before closing (`timeout`,
    `shutting_down`...)."""

    code: str = wire(Token(40), "The error code (see the error code catalog).")
    message: str = wire(Text(0, 500), "What went wrong, for humans; may change between versions.")
    fatal: bool = wire(Bool(), "true: the server closes the connection after this frame.")
    id: int | None = wire(
        ID, "The `id` of the refused request, when it had a readable one.", default=None
    )
    versions: tuple[int, ...] | None = wire(
        ListOf(UInt(1, 65535), 1, 16),
        "With `unsupported_version`: the versions the server speaks.",
        default=None,
    )


# ---- lobby


@message("list_rooms", "client", "request", reply="room_list")
class ListRooms(Message):
    """Ask for the rooms on the server."""

    id: int | None = wire(ID, ID_DOC, default=None)


@message("room_list", "server", "reply")
class RoomList(Message):
    """The rooms on the server: open ones first, at most 200."""

    rooms: tuple[RoomSummary, ...] = wire(ListOf(StructOf(RoomSummary), 0, 200), "The rooms.")
    id: int | None = wire(ID, REPLY_ID_DOC, default=None)


@message("create_room", "client", "request", reply="ok")
class CreateRoom(Message):
    """Create a room and sit in it as its host (seat 0). A `room_state` push follows the `ok`."""

    settings: RoomSettings = wire(StructOf(RoomSettings), "The table's settings.")
    name: str | None = wire(
        ROOM_NAME, "Room name; the server makes one up from yours if absent.", default=None
    )
    private: bool | None = wire(
        Bool(),
        "true: a private room, left out of `room_list`; others join it with its invite code (`room_state.invite`). Absent: false.",
        default=None,
    )
    id: int | None = wire(ID, ID_DOC, default=None)


def _one_room(room: int | None, invite: str | None) -> None:
    if (room is None) == (invite is None):
        raise Invalid("name the room by exactly one of room and invite", "room")


@message("join_room", "client", "request", reply="ok")
class JoinRoom(Message):
    """Take a free seat in a room that is waiting for players, or go back to the
    seat you kept in its game (see My games), named by its id or its invite code
    (exactly one of the two). A `room_state` push follows the `ok`."""

    room: int | None = wire(ROOM, "The room id (a room of `room_list`).", default=None)
    invite: str | None = wire(
        INVITE, "The room's invite code (for a private room), as its host shared it.", default=None
    )
    seat: int | None = wire(
        SEAT,
        "The seat you want; the lowest free seat if absent (going back: your seat, if given).",
        default=None,
    )
    id: int | None = wire(ID, ID_DOC, default=None)

    def validate(self) -> None:
        _one_room(self.room, self.invite)


@message("spectate", "client", "request", reply="ok")
class Spectate(Message):
    """Watch a room without a seat (not one whose seat you kept), named by its id
    or its invite code (exactly one of the two): `room_state`, then the public
    game pushes if a game runs."""

    room: int | None = wire(ROOM, "The room id.", default=None)
    invite: str | None = wire(INVITE, "The room's invite code.", default=None)
    id: int | None = wire(ID, ID_DOC, default=None)

    def validate(self) -> None:
        _one_room(self.room, self.invite)


@message("leave_room", "client", "request", reply="ok")
class LeaveRoom(Message):
    """Leave your room. Leaving during a game abandons your seat: the stand-in
    plays it (see Abandoned seats); to let a bot finish for you, use `hand_over`;
    to come back to it later, `keep_seat`."""

    keep_seat: bool | None = wire(
        Bool(),
        "true, during a game you play: keep your seat, and go back to the lobby (see My"
        " games); the game goes on as for a player who is away, and `join_room` with"
        " the room takes you back to it. Absent: false.",
        default=None,
    )
    id: int | None = wire(ID, ID_DOC, default=None)


@message("ready", "client", "request", reply="ok")
class Ready(Message):
    """Say you are ready to start (or no longer ready)."""

    ready: bool = wire(Bool(), "true: ready; false: not ready.")
    id: int | None = wire(ID, ID_DOC, default=None)


@message("start_game", "client", "request", reply="ok")
class StartGame(Message):
    """Host only: start the game once every seat is taken and every player is ready."""

    first_player: int | None = wire(
        SEAT,
        "With the `host` first-player policy: the seat that plays first (default: the host's). Refused with `random`.",
        default=None,
    )
    id: int | None = wire(ID, ID_DOC, default=None)


@message("add_bot", "client", "request", reply="ok")
class AddBot(Message):
    """Host only: seat a server bot."""

    strategy: str = wire(
        Token(), "The bot's strategy: `random` or `heuristic` (a server may offer more)."
    )
    seat: int | None = wire(SEAT, "The seat; the lowest free seat if absent.", default=None)
    id: int | None = wire(ID, ID_DOC, default=None)


@message("remove_bot", "client", "request", reply="ok")
class RemoveBot(Message):
    """Host only: remove a bot before the game starts."""

    seat: int = wire(SEAT, "The bot's seat.")
    id: int | None = wire(ID, ID_DOC, default=None)


@message("chat", "client", "request", reply="ok")
class Chat(Message):
    """Say something to everyone in your room (players and spectators); from the lobby (in no room), to every player connected in the lobby. At most 10 lines in any 10 seconds (else `rate_limited`)."""

    text: str = wire(CHAT_TEXT, "The message: one line, no control characters.")
    id: int | None = wire(ID, ID_DOC, default=None)


@message("rename", "client", "request", reply="ok")
class Rename(Message):
    """Change the name the others see you by. With a key, the name becomes your key's on this server, and the one before it is free again (see Keys and the handshake). A name another key holds is refused (`name_taken`); so is a name too long for this server (`invalid_field`). Your room, if any, gets a `room_state`; games already begun keep the names they began with (their records too)."""

    name: str = wire(NAME, "Your new name.")
    id: int | None = wire(ID, ID_DOC, default=None)


@message("leaderboard", "client", "request", reply="ratings")
class Leaderboard(Message):
    """Ask for the highest rated players on this server (see Ratings)."""

    id: int | None = wire(ID, ID_DOC, default=None)


@message("ratings", "server", "reply")
class Ratings(Message):
    """The highest rated players, highest first, at most 100."""

    players: tuple[RatingEntry, ...] = wire(
        ListOf(StructOf(RatingEntry), 0, 100), "The players, highest rated first."
    )
    id: int | None = wire(ID, REPLY_ID_DOC, default=None)


@message("list_games", "client", "request", reply="game_list")
class ListGames(Message):
    """Ask for every unfinished game you are seated in (see My games)."""

    id: int | None = wire(ID, ID_DOC, default=None)


@message("game_list", "server", "reply")
class GameList(Message):
    """Every unfinished game you are seated in: the room's you are in first,
    then those whose seats you kept, in room order."""

    games: tuple[MyGame, ...] = wire(ListOf(StructOf(MyGame), 0, MY_GAMES), "The games.")
    id: int | None = wire(ID, REPLY_ID_DOC, default=None)


@message("games_waiting", "server", "push")
class GamesWaiting(Message):
    """The games whose seats you kept that wait for you now (see My games):
    sent whenever they change."""

    seq: int = wire(SEQ, SEQ_DOC)
    rooms: tuple[int, ...] = wire(
        ListOf(ROOM, 0, MY_GAMES),
        "Their rooms, in room order; empty: none waits for you.",
    )


@message("list_records", "client", "request", reply="record_list")
class ListRecords(Message):
    """Ask for the finished games you played in (a seat of yours), newest first."""

    id: int | None = wire(ID, ID_DOC, default=None)


@message("record_list", "server", "reply")
class RecordList(Message):
    """The finished games you played in, newest first, at most 200."""

    records: tuple[RecordSummary, ...] = wire(ListOf(StructOf(RecordSummary), 0, 200), "The games.")
    id: int | None = wire(ID, REPLY_ID_DOC, default=None)


@message("get_record", "client", "request", reply="record")
class GetRecord(Message):
    """Download the record of a finished game (any game the server keeps, by its id)."""

    record_id: str = wire(
        RECORD_ID,
        "The game's record id (`game_end.record_id`, `record_list`): 32 hex digits, in"
        " either case.",
    )
    id: int | None = wire(ID, ID_DOC, default=None)


@message("record", "server", "reply")
class RecordData(Message):
    """A finished game's record: the bytes of a record file (see The game record)."""

    record_id: str = wire(RECORD_ID, "The game's record id.")
    data: bytes = wire(
        RECORD_BYTES,
        "The record: save these bytes as `<record_id>.oriflamme` and check them with `oriflamme verify`.",
    )
    id: int | None = wire(ID, REPLY_ID_DOC, default=None)


@message("sync", "client", "request", reply="ok")
class Sync(Message):
    """Ask for a fresh snapshot of your room and game (the same pushes as after a resume)."""

    id: int | None = wire(ID, ID_DOC, default=None)


@message("room_state", "server", "push")
class RoomState(Message):
    """Everything about your room; sent when you enter it, whenever it changes,
    and in every snapshot."""

    seq: int = wire(SEQ, SEQ_DOC)
    room: int = wire(ROOM, "Room id.")
    name: str = wire(ROOM_NAME, "Room name.")
    settings: RoomSettings = wire(StructOf(RoomSettings), "The room's settings.")
    host: int = wire(
        PLAYER,
        "The host's player id (during a game that every player left, the last host's, until the game ends and the room closes).",
    )
    state: str = wire(
        OneOf("waiting", "playing", "finished", "closed"),
        "`waiting` for players, `playing` a game, `finished` (the last game is over), or `closed`: the room is gone and you are back in the lobby (its last push).",
    )
    seats: tuple[RoomSeat, ...] = wire(
        ListOf(StructOf(RoomSeat), 2, MAX_SEATS),
        "Every seat, in seat order (`settings.players` of them).",
    )
    spectators: int = wire(UInt(), "Spectators watching.")
    seat: int | None = wire(SEAT, "Your seat; absent when you are a spectator.", default=None)
    invite: str | None = wire(
        INVITE,
        "A private room's invite code, for its members to share (`join_room.invite`); absent for a public room.",
        default=None,
    )
    abort_votes: tuple[int, ...] | None = wire(
        ListOf(SEAT, 0, MAX_SEATS),
        "While a game is played in which a seat's player is gone (it left, or has been away"
        " past the grace period: the stand-in plays it), the seats whose players voted to end"
        " the game (`vote_abort`), in seat order; empty: nobody yet. Absent: no vote can be"
        " held (see Ending a game by vote).",
        default=None,
    )


@message("chat_message", "server", "push")
class ChatMessage(Message):
    """A chat line said in your room or in the lobby (your own included), or a server notice."""

    seq: int = wire(SEQ, SEQ_DOC)
    room: int | None = wire(
        ROOM, "The room it was said in; absent: said in the lobby.", default=None
    )
    name: str = wire(NAME, "The speaker's display name.")
    text: str = wire(CHAT_TEXT, "What was said.")
    player: int | None = wire(
        PLAYER, "The speaker's player id; absent for a notice from the server.", default=None
    )


# ---- game: client actions


@message("seed_commit", "client", "request", reply="ok")
class SeedCommit(Message):
    """Commit to your 32-byte client seed, after `game_started`."""

    commitment: bytes = wire(
        COMMITMENT, "The seed commitment (see Commit-reveal and the fair deal)."
    )
    sealed_seed: bytes | None = wire(
        SEED,
        "Your seed, sealed with your key (see Sealed seeds): the server gives it back to"
        " you in `server_seed`, so that your key alone brings your seat back on another"
        " machine. Optional; only a player with a key can seal.",
        default=None,
    )
    sig: bytes | None = wire(SIGNATURE, SIG_DOC, default=None)
    id: int | None = wire(ID, ID_DOC, default=None)


@message("direction", "client", "request", reply="ok")
class Direction(Message):
    """Decision `direction`: the first player chooses the resolution direction."""

    turn: int = wire(TURN, "The decision's `turn`.")
    direction: str = wire(OneOf(*DIRECTIONS), "Which end of the queue resolves first, as drawn.")
    sig: bytes | None = wire(SIGNATURE, SIG_DOC, default=None)
    id: int | None = wire(ID, ID_DOC, default=None)


@message("place", "client", "request", reply="ok")
class PlaceCard(Message):
    """Decision `place`: place a card from your hand face down, sending only its
    family and a commitment to its identity. The card gets pid `view.next_pid`."""

    turn: int = wire(TURN, "The decision's `turn`.")
    at: str | int = wire(
        PlaceAt(),
        "`first` or `last` end of the queue, or the pid of one of your top cards to cover (round 2 on).",
    )
    family: str = wire(family_type(), "The card's family (public: card backs show it).")
    commitment: bytes = wire(
        COMMITMENT, "The card commitment for this placement (pid `view.next_pid`)."
    )
    sig: bytes | None = wire(SIGNATURE, SIG_DOC, default=None)
    id: int | None = wire(ID, ID_DOC, default=None)


@message("keep", "client", "request", reply="ok")
class KeepCard(Message):
    """Decision `reveal`: keep your face-down card hidden (it gains a token)."""

    turn: int = wire(TURN, "The decision's `turn`.")
    sig: bytes | None = wire(SIGNATURE, SIG_DOC, default=None)
    id: int | None = wire(ID, ID_DOC, default=None)


@message("reveal", "client", "request", reply="ok")
class RevealCard(Message):
    """Decision `reveal`: reveal your face-down card (`decision.pid`) by sending its opening."""

    turn: int = wire(TURN, "The decision's `turn`.")
    card: Card = wire(KnownCard(), "The card's identity.")
    nonce: bytes = wire(NONCE, "The nonce of its commitment.")
    sig: bytes | None = wire(SIGNATURE, SIG_DOC, default=None)
    id: int | None = wire(ID, ID_DOC, default=None)


@message("choose", "client", "request", reply="ok")
class Choose(Message):
    """Decisions `eliminate`, `steal`, `copy` and `move_card`: choose a top card."""

    turn: int = wire(TURN, "The decision's `turn`.")
    target: int = wire(PID, "The pid of the chosen top card (one of the decision's options).")
    sig: bytes | None = wire(SIGNATURE, SIG_DOC, default=None)
    id: int | None = wire(ID, ID_DOC, default=None)


@message("move", "client", "request", reply="ok")
class Move(Message):
    """Decision `move_to`: where the Royal Decree puts the chosen card."""

    turn: int = wire(TURN, "The decision's `turn`.")
    index: int = wire(UInt(0, 255), "The queue index (resolution order) the card ends at.")
    sig: bytes | None = wire(SIGNATURE, SIG_DOC, default=None)
    id: int | None = wire(ID, ID_DOC, default=None)


def decision_message(action: Action, turn: int) -> Direction | KeepCard | Choose | Move:
    """The message that answers decision `turn` with an engine action that
    needs no secret (direction, keep, target, move); the inverse of what the
    referee applies. Placements, reveals and openings carry commitments or
    openings, so the seat that holds the secrets builds those.

    >>> from oriflamme.engine import Target
    >>> decision_message(Target(7), turn=12)
    Choose(turn=12, target=7, sig=None, id=None)
    """
    if isinstance(action, ChooseDirection):
        return Direction(turn=turn, direction=action.direction)
    if isinstance(action, Keep):
        return KeepCard(turn=turn)
    if isinstance(action, Target):
        return Choose(turn=turn, target=action.pid)
    if isinstance(action, MoveTo):
        return Move(turn=turn, index=action.index)
    raise ValueError(f"{type(action).__name__} is answered with its own proof, not a plain choice")


@message("open", "client", "request", reply="ok")
class OpenCard(Message):
    """Answer an `open_request`: the opening of your eliminated face-down card."""

    pid: int = wire(PID, "The card's pid (from `open_request`).")
    card: Card = wire(KnownCard(), "The card's identity.")
    nonce: bytes = wire(NONCE, "The nonce of its commitment.")
    sig: bytes | None = wire(SIGNATURE, SIG_DOC, default=None)
    id: int | None = wire(ID, ID_DOC, default=None)


@message("final_reveal", "client", "request", reply="ok")
class FinalReveal(Message):
    """Answer a `final_reveal_request`: your client seed and the openings of
    every card you placed that is still hidden."""

    seed: bytes = wire(SEED, "Your 32-byte client seed.")
    openings: tuple[Opening, ...] = wire(
        ListOf(OPENING, 0, MAX_PLACEMENTS),
        "One opening per pid of the request's `pids`.",
    )
    sig: bytes | None = wire(SIGNATURE, SIG_DOC, default=None)
    id: int | None = wire(ID, ID_DOC, default=None)


@message("hand_over", "client", "request", reply="ok")
class HandOver(Message):
    """Leave the game and let a server bot finish it for you, with your secrets:
    your client seed (from which the bot derives your hand) and the openings of
    your hidden cards. The game record says so. You leave the room."""

    seed: bytes = wire(SEED, "Your 32-byte client seed.")
    openings: tuple[Opening, ...] = wire(
        ListOf(OPENING, 0, MAX_PLACEMENTS),
        "The openings of all your placed cards that are still hidden.",
    )
    turn: int | None = wire(
        TURN,
        "The pending decision's `turn` (see Signed decisions): required from a player with"
        " a key, whose hand-over it dates (`stale_turn` if play moved on: send it again);"
        " optional otherwise.",
        default=None,
    )
    sig: bytes | None = wire(SIGNATURE, SIG_DOC, default=None)
    id: int | None = wire(ID, ID_DOC, default=None)


@message("vote_abort", "client", "request", reply="ok")
class VoteAbort(Message):
    """Vote to end the game being played, when a seat's player is gone
    (`room_state.abort_votes` is present). Once every player still at the
    table has voted, play stops: the final reveal follows, then `game_end`
    with `complete: false` and no winners (see Ending a game by vote). A
    vote stands until the game ends, or until a gone player comes back."""

    game: bytes = wire(GAME_ID, "The game to end (`game_started.game`).")
    id: int | None = wire(ID, ID_DOC, default=None)


# ---- game: server pushes


@message("game_started", "server", "push")
class GameStarted(Message):
    """A game starts in your room: its id, the table, and the server's seed
    commitment. Seated players answer with `seed_commit`."""

    seq: int = wire(SEQ, SEQ_DOC)
    room: int = wire(ROOM, "Room id.")
    game: bytes = wire(GAME_ID, GAME_DOC)
    settings: RoomSettings = wire(StructOf(RoomSettings), "The game's settings.")
    first_player: int = wire(SEAT, "The seat that plays first (and chooses the direction).")
    families: tuple[tuple[str, ...], ...] = wire(
        ListOf(ListOf(family_type(), 1, 2), 2, MAX_SEATS),
        "Per seat, the families it plays (one each; two each in the two-player variant).",
    )
    server_commitment: bytes = wire(
        COMMITMENT, "The server's commitment to its seed, opened by `server_seed`."
    )
    time_left: int = wire(
        MILLIS,
        "Milliseconds left to send `seed_commit`, counted from when the server sent this frame.",
    )
    seat: int | None = wire(SEAT, "Your seat in this game; absent for spectators.", default=None)


@message("server_seed", "server", "push")
class ServerSeed(Message):
    """Every seat has committed to its seed: the server opens its own. Each
    client can now derive its deal; the game begins with the first `game_state`."""

    seq: int = wire(SEQ, SEQ_DOC)
    game: bytes = wire(GAME_ID, GAME_DOC)
    seed: bytes = wire(SEED, "The server seed; check it against `game_started.server_commitment`.")
    commitments: tuple[bytes, ...] = wire(
        ListOf(COMMITMENT, 2, MAX_SEATS), "Every seat's seed commitment, in seat order."
    )
    sealed_seed: bytes | None = wire(
        SEED,
        "To a seat whose `seed_commit` had one: its `sealed_seed`, as it sent it (see"
        " Sealed seeds). Absent otherwise.",
        default=None,
    )


@message("game_state", "server", "push", versions=(1,))
class GameState(Message):
    """The game as you may see it, after every change: the engine's view, the
    events since the previous `game_state`, and the pending decision."""

    seq: int = wire(SEQ, SEQ_DOC)
    game: bytes = wire(GAME_ID, GAME_DOC)
    view: dict[str, Any] = wire(
        PlainMap("the engine's view for your seat (see Game views)"),
        "The position as you may see it.",
    )
    events: list[dict[str, Any]] = wire(
        PassedList(PlainMap("an engine event", typed=True), 0, 4000),
        "What happened since your previous `game_state`, in order (empty in a snapshot).",
    )
    commitments: tuple[PlacementCommitment, ...] = wire(
        ListOf(StructOf(PlacementCommitment), 0, MAX_PLACEMENTS),
        "The commitments of the placements among `events` (in a snapshot: all so far).",
    )
    openings: tuple[Opening, ...] = wire(
        ListOf(OPENING, 0, MAX_PLACEMENTS),
        "The openings of the cards revealed or eliminated among `events` (in a snapshot: all so far).",
    )
    snapshot: bool = wire(
        Bool(),
        "true: a snapshot (after a resume or `sync`): replace your state; `events` is empty.",
    )
    decision: PendingDecision | None = wire(
        StructOf(PendingDecision),
        "The pending decision; absent once play is over.",
        default=None,
    )
    settled: tuple[int, ...] | None = wire(
        ListOf(PID, 0, MAX_PLACEMENTS),
        "Pids among `events` whose identity the server settled because their owner did not open them (it forfeited, or sent an opening that failed its check; no opening exists; see the sequence). In a snapshot: all so far.",
        default=None,
    )
    past: list[dict[str, Any]] | None = wire(
        PassedList(PlainMap("an engine event", typed=True), 0, 4000),
        "In a snapshot: every event of the game so far, in order, as `events` gave them, for a log of the game (the view and the other fields already include them: apply none of them again). Absent otherwise.",
        default=None,
    )


class LogEntryType(WireType):
    """One entry of a game's log, as the game record gives it (a map: see
    The game record); a `LogEntry` in Python."""

    name = "map"

    def load(self, value: object) -> Any:
        try:
            return entry_from_data(value, MAX_SEATS, "the entry")
        except RecordError as e:
            raise Invalid(str(e)) from None

    def check(self, value: object) -> None:
        if not isinstance(value, LogEntry):
            raise Invalid(f"expected a LogEntry, got {shown(value)}")

    def dump(self, value: Any) -> object:
        return entry_to_data(value)

    def describe(self) -> dict[str, Any]:
        return {"type": "map", "of": "a log entry (see The game record)"}

    def notation(self) -> str:
        return "map: a log entry (see The game record)"


MAX_LOG = 4000  # entries in a game's log: a game has a few hundred


@message("game_update", "server", "push", versions=(2,))
class GameUpdate(Message):
    """Version 2: what happened since your previous `game_update`, as the
    game's log entries, which you replay on your own copy of the game (see
    Version 2), and the pending decision. The same frame, but for `seq`, goes
    to every seat and spectator."""

    seq: int = wire(SEQ, SEQ_DOC)
    game: bytes = wire(GAME_ID, GAME_DOC)
    at: int = wire(
        UInt(0, MAX_LOG),
        "How many entries of the game's log come before `log`'s first: the number you have replayed (0 in a snapshot). Any other number: ask for a snapshot (`sync`).",
    )
    log: tuple[LogEntry, ...] = wire(
        ListOf(LogEntryType(), 0, MAX_LOG),
        "The game's log entries since your previous `game_update`, in order, in the form the game record gives them (in a snapshot: all of them, from the deal).",
    )
    snapshot: bool = wire(
        Bool(),
        "true: a snapshot (at the start, after a resume or `sync`): replay `log` on a new game, in place of what you had.",
    )
    digest: bytes = wire(
        Bin(DIGEST_SIZE),
        "The first 16 bytes of SHA-256 over the msgpack of the events that replaying `log` makes (an array of event maps, as `game_state.events` gives them): if yours differs, ask for a snapshot.",
    )
    decision: Pending | None = wire(
        StructOf(Pending),
        "The pending decision, without its options (your copy of the game has them); absent once play is over (the game ended, or its players ended it by vote).",
        default=None,
    )


@message("open_request", "server", "push")
class OpenRequest(Message):
    """To the owner alone: your face-down card `pid` was eliminated; send its opening (`open`)."""

    seq: int = wire(SEQ, SEQ_DOC)
    game: bytes = wire(GAME_ID, GAME_DOC)
    pid: int = wire(PID, "The eliminated card.")
    time_left: int = wire(MILLIS, TIME_LEFT_DOC)


@message("final_reveal_request", "server", "push")
class FinalRevealRequest(Message):
    """The game is over: send your seed and the openings of your hidden cards (`final_reveal`)."""

    seq: int = wire(SEQ, SEQ_DOC)
    game: bytes = wire(GAME_ID, GAME_DOC)
    pids: tuple[int, ...] = wire(
        ListOf(PID, 0, MAX_PLACEMENTS), "Your cards never opened, whose openings are expected."
    )
    time_left: int = wire(MILLIS, TIME_LEFT_DOC)


@message("game_end", "server", "push")
class GameEnd(Message):
    """The game's result, once every seat has revealed (or its time is up) and
    the server has verified every seat."""

    seq: int = wire(SEQ, SEQ_DOC)
    game: bytes = wire(GAME_ID, GAME_DOC)
    complete: bool = wire(
        Bool(),
        "true: the game was played to its end (no forfeit stops play: the server decides for a seat that cannot); false: its players ended it by vote (`vote_abort`) with a seat's player gone, and `scores` are as they stood, with no winners. A game that is not complete counts for nothing that ranks players.",
    )
    scores: tuple[int, ...] = wire(
        ListOf(SCORE, 2, MAX_SEATS),
        "Scores in seat order, as the rules count them.",
    )
    winners: tuple[int, ...] = wire(
        ListOf(SEAT, 0, MAX_SEATS),
        "The winning seats by the rules (several when tied after the tie-break); none in a game ended by vote.",
    )
    forfeits: tuple[int, ...] = wire(
        ListOf(SEAT, 0, MAX_SEATS),
        "Seats whose verdict is not `ok`. A game with forfeits counts for nothing that ranks players.",
    )
    verification: tuple[SeatVerdict, ...] = wire(
        ListOf(VERDICT, 2, MAX_SEATS), "One verdict per seat, in seat order."
    )
    seeds: tuple[SeatSeed, ...] = wire(
        ListOf(StructOf(SeatSeed), 0, MAX_SEATS), "The client seeds revealed."
    )
    openings: tuple[Opening, ...] = wire(
        ListOf(OPENING, 0, MAX_PLACEMENTS),
        "The openings sent in every `final_reveal`.",
    )
    record_id: str = wire(
        RECORD_ID, "The id under which the server keeps this game's record (`get_record`)."
    )


# ------------------------------------------------------------------ encoding


def _readable_id(data: dict[str, Any]) -> int | None:
    value = data.get("id")
    return value if type(value) is int and 0 <= value <= U32 else None


def from_data(data: dict[str, Any], sender: Sender) -> Message:
    """The message in a decoded frame sent by `sender` ("client" or "server").

    Raises `RemoteProtocolError`: ``unknown_message`` for a missing or unknown
    ``type`` (or one the other side sends), ``invalid_field`` naming the field.
    The error carries the request's ``id`` when it is readable.
    """
    registry = CLIENT_MESSAGES if sender == "client" else SERVER_MESSAGES
    type_ = data.get("type")
    cls = registry.get(type_) if type(type_) is str else None
    if cls is None:
        if type(type_) is str:
            why = f"no {sender} message has the type {shown(type_)}"
        elif type_ is None:
            why = "the map has no 'type': every message names its type (a str)"
        else:
            why = "'type' is not a str: every message names its type (a str)"
        raise RemoteProtocolError(UNKNOWN_MESSAGE, why, id=_readable_id(data))
    try:
        return load_fields(cls, data)
    except Invalid as e:
        raise RemoteProtocolError(
            INVALID_FIELD, f"{type_}.{e}", id=_readable_id(data), section=f"`{type_}`"
        ) from None


def to_data(message: Message) -> dict[str, Any]:
    """Plain data for `message`: ``type`` first, optional fields left out when None."""
    data: dict[str, Any] = {"type": message.TYPE}
    data.update(dump_fields(message))
    return data


_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f]+")


def clean_text(text: str, limit: int) -> str:
    """`text` made fit for a text field: control characters become spaces,
    cut to `limit` characters.

    >>> clean_text("line one\\nline two", 12)
    'line one lin'
    """
    return _UNSAFE.sub(" ", text)[:limit]


def error_message(error: ProtocolError) -> Error:
    """The ``error`` message that tells the peer about `error`.

    >>> from oriflamme.protocol.errors import NO_SUCH_ROOM
    >>> error_message(RemoteProtocolError(NO_SUCH_ROOM, "no room 12", id=3))
    Error(code='no_such_room', message='no room 12 (see docs/PROTOCOL.md, Lobby)', fatal=False, id=3, versions=None)
    """
    pointer = f" (see docs/PROTOCOL.md, {error.section})"
    return Error(
        code=error.code,
        message=clean_text(error.message, 500 - len(pointer)) + pointer,
        fatal=error.fatal,
        id=error.id,
        versions=error.versions,
    )


def message_types(sender: Sender) -> dict[str, type[Message]]:
    """The messages `sender` may send, by wire type."""
    return dict(CLIENT_MESSAGES if sender == "client" else SERVER_MESSAGES)


def _check_error_codes() -> None:
    # Error.code is a free token on the wire (a newer server may add codes);
    # this side only ever sends catalog codes, which are valid tokens.
    for code in CODES:
        Token(40).check(code)


_check_error_codes()

# The structures of one version only (the others are in every version).
STRUCT_VERSIONS: dict[str, tuple[int, ...]] = {"pending": (2,)}

STRUCTS: tuple[StructSpec, ...] = (
    RoomSettings.spec(),
    RoomSummary.spec(),
    RecordSummary.spec(),
    MyGame.spec(),
    RatingEntry.spec(),
    RoomSeat.spec(),
    PendingDecision.spec(),
    Pending.spec(),
    PlacementCommitment.spec(),
    OPENING.spec,
    SeatSeed.spec(),
    VERDICT.spec,
)

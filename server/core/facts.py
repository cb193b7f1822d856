"""The lobby as facts: plain, versioned data a server keeps, and the lobby rebuilt from them.

How this works
--------------
A server keeps its state across a restart, and across an upgrade, as facts:
what happened, in plain data (msgpack of maps, lists, strings, numbers and
bytes) whose layout is documented (docs/STORAGE.md) and versioned
(`FACTS_VERSION`), never a pickle of this version's objects. `facts_of`
takes them from a lobby; `lobby_from` makes the lobby again.

* The lobby: its settings, the next room id, the invite codes, the finished
  games it lists and who played them, the time of its last input, and where
  the server's keyed random stream is (`KeyedEntropy.position`: a count of
  bytes, never the bytes).
* Each session: its player id, name, the SHA-256 digests of its tokens
  (never a token), its room and seat, its connection, when it went away,
  the number of its last push and the newest of them (`FACTS_PUSHES`, as the
  frames they were sent as), and its chat times.
* Each room: its settings, host, seats (who sits, bot, ready, the name of
  a player who left, what a player handed to a bot), spectators and state.
* Each game in a room: its game's log, as the referee noted it
  (`Referee.inputs` and `choices`: the messages it took, the time-outs, the
  stand-in's answers, forfeits, seats marked, the end by vote), and the
  table's timers. The game itself (the engine's state, the commitments, the
  events) is not kept: it is rebuilt by giving its log to a new referee
  (`Referee.rebuild`), so a version whose engine or referee differs in its
  objects still reads it. The server seed is not kept either: it is drawn
  again from the keyed stream at the position it was drawn from.

A game whose log this version cannot replay (`RebuildFailed`: another
engine refuses one of its inputs) is kept out of play, with the reason,
like a game whose journal replay disagrees; the others go on. Its facts
are kept as they were read (`Room.unread_game`), and written again with
the lobby's: nothing stored is dropped, and a version that reads them can
take the game up.

>>> from oriflamme.server.core.entropy import KeyedEntropy
>>> from oriflamme.protocol import messages as m
>>> lobby = Lobby(entropy=KeyedEntropy(bytes(32)))
>>> _ = lobby.hello("c1", m.Hello(versions=(1,), client="doc", name="Ann"), 0.0)
>>> again = lobby_from(decode(encode(facts_of(lobby))), KeyedEntropy(bytes(32)))
>>> [s.name for s in again.sessions]
['Ann']
"""

from __future__ import annotations

import dataclasses
import math
from collections import deque
from collections.abc import Collection, Hashable
from dataclasses import dataclass
from functools import partial
from typing import Any

import msgpack

from oriflamme.engine import Rules, card_from_data, card_to_data
from oriflamme.protocol import messages as m
from oriflamme.protocol.commitments import Opening
from oriflamme.protocol.record import SeatRecord
from oriflamme.protocol.schema import dump_fields, load_fields

from .config import ServerConfig
from .effects import HandedSeat
from .entropy import Entropy, KeyedEntropy
from .journal import JournaledLobby
from .lobby import Lobby
from .ratings import Rating
from .referee import Phase, RebuildFailed, Referee
from .room import Room, Seat, UnbuiltGame
from .sessions import Session, Sessions
from .table import Table

# 2: each input of a game's log is its msgpack (bytes); version 1's
# inputs were arrays, which this version reads too. 3: kept as rows (the
# lobby's, and one each session, room and game: `FactsRows`), each part as
# in version 2; the lobby's part names the order of the sessions and rooms.
FACTS_VERSION = 3
# The newest pushes of each session the facts keep. A client that resumes
# after a restart missed only what was sent as the server went down (a
# few pushes): these give it exactly those; one that missed more gets a
# snapshot, as ever. Every push a session keeps would make the facts some
# 20 times larger (18 KB a seated player), for resumes that never come.
FACTS_PUSHES = 8


class FactsError(Exception):
    """Facts this version cannot read (a clear message for a person)."""


# The tables a store keeps the facts in, besides the lobby's own row (one
# row, its facts without the sessions and rooms): for each, the column
# that is the row's key, and the plain columns beside its facts (`data`)
# that a host reading the database sees (docs/STORAGE.md).
FACT_TABLES: dict[str, tuple[str, tuple[str, ...]]] = {
    "sessions": ("player", ("name",)),
    "rooms": ("room", ("name", "state")),
    "games": ("room", ("game_id",)),
}

Row = tuple[tuple[Any, ...], bytes]  # a row's plain columns, and its facts (msgpack)


@dataclass(frozen=True)
class FactsRows:
    """The facts as a store keeps them: the lobby's part (`lobby`, msgpack of
    its facts without the sessions and rooms, with their order), and a row
    for each session, room and room's game, by key (`FACT_TABLES`). A store
    writes only the rows that changed since it last wrote.

    `gone`: None, and `tables` holds every row (`rows_of`, and a first
    taking); or, by table, the keys of the rows gone since the rows taken
    before, and `tables` holds only the rows that changed since (`take_some`
    after a first taking): the store keeps its others and deletes those."""

    lobby: bytes
    tables: dict[str, dict[int, Row]]
    gone: dict[str, set[int]] | None = None


# ------------------------------------------------------------ taking facts


def facts_of(lobby: Lobby) -> dict[str, Any]:
    """The facts of `lobby` (see the module docstring)."""
    return {
        **_lobby_data(lobby),
        "sessions": [_session_data(s) for s in lobby.sessions.by_player.values()],
        "rooms": [_room_data(room) for room in lobby.rooms.values()],
    }


def _lobby_data(lobby: Lobby, packed_apart: Collection[str] = ()) -> dict[str, Any]:
    """The lobby's own facts: all but its sessions and rooms (`packed_apart`:
    parts left out, None in their place: `_lobby_row` has their bytes)."""
    entropy = lobby._entropy
    return {
        "version": FACTS_VERSION,
        "config": _config_data(lobby.config),
        "entropy": entropy.position if isinstance(entropy, KeyedEntropy) else None,
        "last_time": getattr(lobby, "last_time", 0.0),
        "next_room": lobby._next_room,
        "next_player": lobby.sessions._next_player,
        "invites": dict(lobby._invites),
        "conns": None
        if "conns" in packed_apart
        else [[str(conn), None if s is None else s.player] for conn, s in lobby._conns.items()],
        "finished": [dump_fields(summary) for summary in lobby.finished.values()],
        "played": [
            [player, [[rid, seat] for rid, seat in games]]
            for player, games in lobby._played.items()
        ],
        "away": list(lobby.sessions.away),
        "names": [[key, name] for key, name in lobby.names.by_key.items()],
        "played_by_key": [
            [key, [[rid, seat] for rid, seat in games]]
            for key, games in lobby._played_by_key.items()
        ],
        "ratings": [
            [key, r.mu, r.sigma, r.games, [list(h) for h in lobby.ratings.history.get(key, ())]]
            for key, r in lobby.ratings.by_key.items()
        ],
    }


def _config_data(config: ServerConfig) -> dict[str, Any]:
    return {
        f.name: list(value) if isinstance(value := getattr(config, f.name), tuple) else value
        for f in dataclasses.fields(config)
    }


def _session_data(s: Session) -> dict[str, Any]:
    current, previous = s._digests
    return {
        "player": s.player,
        "name": s.name,
        "bot": s.bot,
        "address": s.address,
        "joined": s.joined,
        "conn": None if s.conn is None else str(s.conn),
        "room": s.room,
        "seat": s.seat,
        "disconnected_at": s.disconnected_at,
        "last_seq": s.last_seq,
        "pushes": None if s.history is None else list(s.history)[-FACTS_PUSHES:],
        "tokens": [current, previous],
        "chat_times": None if s.chat_times is None else list(s.chat_times),
        "key": s.key,
        "waiting": list(s.waiting),
        "version": s.version,
    }


def _room_data(room: Room) -> dict[str, Any]:
    return {
        "id": room.id,
        "name": room.name,
        "settings": dump_fields(room.settings),
        "invite": room.invite,
        "host": room.host,
        "state": room.state,
        "seats": [_seat_data(seat) for seat in room.seats],
        "spectators": [s.player for s in room.spectators],
        "table_players": list(room.table_players),
        "table_keys": list(room.table_keys),
        "finished_by": list(room.finished_by),
        # (a game this version could not rebuild is not suspended in the
        # facts: the version that reads them next may rebuild it)
        "suspended": None if room.unread_game is not None else room.suspended,
        "game": _kept_game(room),
    }


def _kept_game(room: Room) -> dict[str, Any] | None:
    """The facts of `room`'s game: taken from its table, or those it was
    made from if it is not rebuilt yet (`UnbuiltGame`: as they were read,
    with the players gone since noted), or those this version could not
    rebuild."""
    unbuilt = room._unbuilt
    if unbuilt is not None:
        return unbuilt.facts
    table = room._table
    return _game_data(table) if table is not None else room.unread_game


def _seat_data(seat: Seat) -> dict[str, Any]:
    handed = seat.handed
    return {
        "player": None if seat.session is None else seat.session.player,
        "bot": seat.bot,
        "ready": seat.ready,
        "ghost": seat.ghost,
        "handed": None
        if handed is None
        else {
            "seed": handed.seed,
            "openings": [_opening_data(o) for o in handed.openings],
            "server_seed": handed.server_seed,
            "drawn": handed.drawn,
            "game": handed.game,
        },
    }


def _opening_data(opening: Opening) -> dict[str, Any]:
    return {"pid": opening.pid, "card": card_to_data(opening.card), "nonce": opening.nonce}


def _game_data(table: Table) -> dict[str, Any]:
    referee = table.referee
    if not referee.first_seats:
        raise FactsError(
            f"game {referee.game_id.hex()} was begun by an earlier version, which kept no log"
        )
    return {
        "game_id": referee.game_id,
        # Its seats with keys sign their decisions (a game begun by a
        # version before signed decisions has none: it goes on unsigned).
        "signed": True,
        "first_player": referee.first_player,
        "seats": [_seat_record_data(seat) for seat in referee.first_seats],
        "seed_at": referee.seed_at,
        # Only where the seed cannot be drawn again (a server without a key).
        "server_seed": None if referee.seed_at is not None else referee._server_seed,
        # (each input packed already: written as it is)
        "inputs": referee.inputs,
        "choices": referee.choices,
        "digested": [referee.digested, referee.digested_turn],
        "timers": {
            "away_since": list(table._away_since),
            "stood_in": list(table._stood_in),
            "left": list(table._left),
            "deadline": table._deadline,
            "deadline_for": None
            if table._deadline_for is None
            else [str(table._deadline_for[0]), table._deadline_for[1]],
            "asked_open": table._asked_open,
            "asked_final": table._asked_final,
            "pushed_turn": table._pushed_turn,
            "pushed_log": [table._pushed_log, table._pushed_events],
            "votes": sorted(table.votes),
        },
        # What the room shows of the game while it is not rebuilt yet
        # (`UnbuiltGame`), as the table says it (version 3 on).
        "view": {
            "over": table.over,
            "abort_votes": table.abort_votes(),
            "waiting_for": list(table.waiting_for()),
        },
    }


def _seat_record_data(seat: SeatRecord) -> dict[str, Any]:
    return {
        "name": seat.name,
        "bot": seat.bot,
        "left": seat.left,
        "stand_in": seat.stand_in,
        "handed_to_bot": seat.handed_to_bot,
    }


class TakenRows:
    """What the takings made rows of: each session's and room's key
    (`_session_key`, `_room_key`: the values its facts are made of, read
    without making them), and the rooms with a game; and the taking under
    way (`take_some`). Kept by the shell between two takings; a new one (at
    a start) makes every row.

    A taking looks only at the sessions and rooms the lobby names as
    changed since (`Lobby.changes_since`), and makes again the rows of
    those whose key changed: its cost follows what changed, not how many
    sessions and rooms the lobby holds."""

    def __init__(self) -> None:
        self.start_over(set(), set())  # (and its first taking starts over again)

    def start_over(self, players: set[int], room_ids: set[int]) -> None:
        """Forget every row made: a first taking, of `players` and `room_ids`."""
        self.sessions: dict[int, tuple[Any, ...]] = {}
        self.rooms: dict[int, tuple[Any, ...]] = {}
        self.games: set[int] = set()
        self.parts: dict[str, tuple[Hashable, bytes]] = {}  # (`_lobby_row`'s)
        # The taking under way: the sessions and rooms still to look at, and
        # the rows made and the keys gone since the last taking ended.
        self.every = True  # (a first taking: every row, no keys gone)
        self.players = players
        self.room_ids = room_ids
        self.made: dict[str, dict[int, Row]] = {table: {} for table in FACT_TABLES}
        self.gone: dict[str, set[int]] = {table: set() for table in FACT_TABLES}

    def drop(self, table: str, key: int) -> None:
        """The row `key` of `table` went: not written, and deleted."""
        self.made[table].pop(key, None)
        self.gone[table].add(key)

    def drop_game(self, room_id: int) -> None:
        """Room `room_id` has no game (now): its game's row goes, if it had one."""
        if room_id in self.games:
            self.games.discard(room_id)
            self.drop("games", room_id)

    def ended(self) -> tuple[dict[str, dict[int, Row]], dict[str, set[int]] | None]:
        """The taking ended: its rows made and keys gone (`FactsRows`'s),
        and the next one begins."""
        made, gone = self.made, None if self.every else self.gone
        self.every = False
        self.made = {table: {} for table in FACT_TABLES}
        self.gone = {table: set() for table in FACT_TABLES}
        if gone is not None:  # (a row made, then gone, then made again: written, not deleted)
            for table, keys in gone.items():
                keys -= made[table].keys()
        return made, gone


def rows_since(lobby: Lobby, taken: TakenRows) -> FactsRows:
    """The facts of `lobby` as rows, at once (`take_some` with no bound):
    those of the sessions, rooms and games that changed since `taken`
    (which then holds these), and the keys of the rows gone; or every row
    at a first taking (a new `taken`, or another asked the lobby since).
    The same as `rows_of(facts_of(lobby))` in the store that holds the
    rows taken before: tests/server check it after every step of random
    traffic."""
    rows = take_some(lobby, taken, None)
    assert rows is not None  # (with no bound, a taking ends at once)
    return rows


def take_some(lobby: Lobby, taken: TakenRows, most: int | None) -> FactsRows | None:
    """A step of a taking: look at what changed since the last step, make
    rows of the sessions and rooms still to look at, for about `most` units
    of work (None: all; a unit is about what looking at a session costs,
    some 3 us: making its row is 2, looking at a room 2, making its rows
    8), and give the facts (`rows_since`'s) once none is left; or
    None, and the next step goes on.

    The facts are those of the lobby as the last step found it: a row made
    at an earlier step is of a session or room that did not change since
    (one that changed is looked at again). So the core task can spread a
    taking over several batches, each short, rather than stop for all of
    it at once (bench/RESULTS.md)."""
    by_player, by_id = lobby.sessions.by_player, lobby.rooms
    changes = lobby.changes_since(taken)
    if changes is None:  # (a first taking: every one)
        taken.start_over(set(by_player), set(by_id))
    else:
        taken.players |= changes[0]
        taken.room_ids |= changes[1]
    sessions, rooms, games = taken.made["sessions"], taken.made["rooms"], taken.made["games"]
    budget = math.inf if most is None else most
    while budget > 0 and taken.players:
        player = taken.players.pop()
        budget -= 1
        session = by_player.get(player)
        if session is None:
            if taken.sessions.pop(player, None) is not None:
                taken.drop("sessions", player)
            continue
        key = _session_key(session)
        if taken.sessions.get(player) != key:
            taken.sessions[player] = key
            _add_session_row(sessions, _session_data(session))
            budget -= 1
    while budget > 0 and taken.room_ids:
        room_id = taken.room_ids.pop()
        budget -= 2
        room = by_id.get(room_id)
        if room is None:
            if taken.rooms.pop(room_id, None) is not None:
                taken.drop("rooms", room_id)
            taken.drop_game(room_id)
            continue
        key = _room_key(room)
        if taken.rooms.get(room_id) == key:
            continue
        taken.rooms[room_id] = key
        if room._unbuilt is not None or room._table is not None or room.unread_game is not None:
            taken.games.add(room_id)
        else:
            taken.drop_game(room_id)
        _add_room_rows(rooms, games, _room_data(room))
        budget -= 6
    if taken.players or taken.room_ids:
        return None
    made, gone = taken.ended()
    return FactsRows(_lobby_row(lobby, taken.parts), made, gone)


def _lobby_row(lobby: Lobby, parts: dict[str, tuple[Hashable, bytes]]) -> bytes:
    """The lobby's row: its facts and the order of its sessions and rooms,
    as `encode` makes them (`rows_of`'s), with the parts that grow with the
    connections, sessions and rooms packed again only when those came or
    went (`parts`: each one's key and bytes, from the last taking). They
    were most of a taking at 6,000 connections (bench/RESULTS.md)."""
    by_player, by_id = lobby.sessions.by_player, lobby.rooms
    keys: dict[str, Hashable] = {
        "conns": lobby.conns_version,
        # (a session or room is only ever added with the next id: equal
        # counts and next ids, no session or room came or went)
        "session_order": (len(by_player), lobby.sessions._next_player),
        "room_order": (len(by_id), lobby._next_room),
    }
    same = {name for name, key in keys.items() if name in parts and parts[name][0] == key}
    data = {
        **_lobby_data(lobby, same),
        "version": FACTS_VERSION,
        "session_order": None if "session_order" in same else list(by_player),
        "room_order": None if "room_order" in same else list(by_id),
    }
    pack = msgpack.Packer(use_bin_type=True).pack  # (as `encode` packs)
    for name, key in keys.items():
        if name not in same:
            parts[name] = (key, pack(data[name]))
    # A map's msgpack is its header, then each key's and value's, in order.
    packed = [msgpack.Packer().pack_map_header(len(data))]
    for name, value in data.items():
        packed.append(pack(name))
        packed.append(parts[name][1] if name in keys else pack(value))
    return b"".join(packed)


def _add_session_row(sessions: dict[int, Row], data: dict[str, Any]) -> None:
    sessions[data["player"]] = ((data["name"],), encode(data))


def _add_room_rows(rooms: dict[int, Row], games: dict[int, Row], data: dict[str, Any]) -> None:
    """A room's row, and its game's (the room's facts without it), if any."""
    game = data["game"]
    if game is not None:
        games[data["id"]] = ((game.get("game_id"),), encode(game))
    rooms[data["id"]] = ((data["name"], data["state"]), encode({**data, "game": None}))


def _session_key(s: Session) -> tuple[Any, ...]:
    """What `_session_data` is made of, read cheaply: equal keys, equal
    facts. (Every push counts in `last_seq`; dropping the pushes kept
    empties `history`.)"""
    history = s.history
    return (
        s.name,
        s.bot,
        s.address,
        s.joined,
        s.conn,
        s.room,
        s.seat,
        s.disconnected_at,
        s.last_seq,
        None if history is None else (len(history), s._kept_bytes),
        s._digests,
        None if s.chat_times is None else tuple(s.chat_times),
        s.waiting,
        s.version,
    )


def _room_key(room: Room) -> tuple[Any, ...]:
    """What `_room_data` is made of, its game's facts included, read
    cheaply: equal keys, equal facts. (A game's log only grows.)"""
    unbuilt, table = room._unbuilt, room._table
    if unbuilt is not None:
        game: tuple[Any, ...] = (
            "unbuilt",
            id(unbuilt.facts),
            tuple(unbuilt.facts["timers"]["away_since"]),
        )
    elif table is not None:
        referee = table.referee
        game = (
            "table",
            id(table),
            len(referee.inputs),
            len(referee.choices),
            len(referee.seat_changes),
            referee.digested,
            referee.digested_turn,
            tuple(table._away_since),
            tuple(table._stood_in),
            tuple(table._left),
            table._deadline,
            table._deadline_for,
            table._asked_open,
            table._asked_final,
            table._pushed_turn,
            table._pushed_log,
            table._pushed_events,
            table.votes,
        )
    else:
        game = ("unread", id(room.unread_game))
    return (
        room.name,
        room.settings,
        room.invite,
        room.host,
        room.state,
        tuple(
            (
                None if seat.session is None else seat.session.player,
                seat.bot,
                seat.ready,
                seat.ghost,
                seat.handed,
            )
            for seat in room.seats
        ),
        tuple(s.player for s in room.spectators),
        room.table_players,
        room.table_keys,
        room.finished_by,
        room.suspended,
        game,
    )


def rows_of(facts: dict[str, Any]) -> FactsRows:
    """`facts` (`facts_of`'s) as rows."""
    lobby = {name: value for name, value in facts.items() if name not in ("sessions", "rooms")}
    lobby["version"] = FACTS_VERSION
    sessions: dict[int, Row] = {}
    rooms: dict[int, Row] = {}
    games: dict[int, Row] = {}
    for data in facts["sessions"]:
        _add_session_row(sessions, data)
    for data in facts["rooms"]:
        _add_room_rows(rooms, games, data)
    lobby["session_order"] = list(sessions)
    lobby["room_order"] = list(rooms)
    return FactsRows(encode(lobby), {"sessions": sessions, "rooms": rooms, "games": games})


def facts_from_rows(rows: FactsRows) -> dict[str, Any]:
    """The facts that `rows` hold (as `facts_of` gives them); `FactsError`
    if they are not facts this version reads."""
    facts = decode(rows.lobby)
    tables = rows.tables
    try:
        sessions, rooms, games = tables["sessions"], tables["rooms"], tables["games"]
        facts["sessions"] = [_part(sessions[p][1]) for p in facts.pop("session_order")]
        facts["rooms"] = []
        for room_id in facts.pop("room_order"):
            data = _part(rooms[room_id][1])
            game = games.get(room_id)
            data["game"] = None if game is None else _part(game[1])
            facts["rooms"].append(data)
    except KeyError as exc:
        raise FactsError(f"the saved state lacks a row its lobby names: {exc}") from None
    return facts


def _part(data: bytes) -> dict[str, Any]:
    try:
        part = msgpack.unpackb(data, raw=False, strict_map_key=False)
    except Exception as exc:
        raise FactsError(f"a row of the saved state is not facts: {exc}") from None
    if not isinstance(part, dict):
        raise FactsError("a row of the saved state is not facts")
    return part


def encode(facts: dict[str, Any]) -> bytes:
    """The facts as bytes (msgpack)."""
    packed: bytes = msgpack.packb(facts, use_bin_type=True)
    return packed


def decode(data: bytes) -> dict[str, Any]:
    """Facts from `encode`'s bytes; `FactsError` if they are not facts of a
    version this server reads."""
    try:
        # (the server's own file: times are floats, unlike on the wire)
        facts = msgpack.unpackb(data, raw=False, strict_map_key=False)
    except Exception as exc:
        raise FactsError(f"the saved state is not facts: {type(exc).__name__}: {exc}") from None
    if not isinstance(facts, dict) or not isinstance(facts.get("version"), int):
        raise FactsError("the saved state is not facts (no version)")
    if facts["version"] > FACTS_VERSION:
        raise FactsError(
            f"the saved state was written by a newer server (facts version {facts['version']});"
            f" this one reads version {FACTS_VERSION}: upgrade the server"
        )
    return facts


# ------------------------------------------------------------ rebuilding


def config_from(data: dict[str, Any]) -> ServerConfig:
    """The settings kept: a setting this version does not know is left
    aside, and one it has that they lack is its default."""
    names = {f.name: f for f in dataclasses.fields(ServerConfig)}
    values: dict[str, Any] = {
        name: tuple(value) if isinstance(value, list) else value
        for name, value in data.items()
        if name in names
    }
    return ServerConfig(**values)


def lobby_from(
    facts: dict[str, Any],
    entropy: Entropy,
    *,
    broken: list[tuple[int, str]] | None = None,
    lazily: bool = False,
) -> JournaledLobby:
    """The lobby the facts describe, drawing from `entropy` (the server's
    keyed stream, moved to where it was). A game whose log cannot be
    replayed is kept out of play (its room suspended), and named in
    `broken` (room id, reason) if given. `lazily`: each game (of facts
    version 3 on) is rebuilt at its first use, or by `Lobby.build_some`,
    rather than here (`room.UnbuiltGame`); one that cannot be is named in
    the lobby's `build_failures` then."""
    if facts.get("version") not in (1, 2, FACTS_VERSION):
        raise FactsError(f"facts of version {facts.get('version')!r} cannot be read here")
    if isinstance(entropy, KeyedEntropy) and facts["entropy"] is not None:
        entropy.seek(facts["entropy"])
    config = config_from(facts["config"])
    lobby = JournaledLobby(entropy, config)
    lobby.last_time = facts["last_time"]
    lobby._next_room = facts["next_room"]
    lobby._invites = dict(facts["invites"])
    sessions = lobby.sessions
    sessions._next_player = facts["next_player"]
    for key, name in facts.get("names", ()):  # (facts of before keys: none)
        lobby.names.restore(key, name)
    for key, games in facts.get("played_by_key", ()):
        lobby._played_by_key[key] = [(rid, seat) for rid, seat in games]
        for rid, _ in games:
            lobby._listed_by[rid] = lobby._listed_by.get(rid, 0) + 1
    for key, mu, sigma, games, history in facts.get("ratings", ()):
        lobby.ratings.by_key[key] = Rating(mu, sigma, games)
        lobby.ratings.history[key] = [(record_id, shown) for record_id, shown in history]
    for data in facts["sessions"]:
        _add_session(sessions, data, config)
    for key, session in sessions.by_key.items():
        session.rating = lobby.ratings.shown(key)
    for player in facts["away"]:
        sessions.away[player] = sessions.by_player[player]
    by_player = sessions.by_player
    conns: dict[Hashable, Session | None] = {}
    for conn, player in facts["conns"]:
        conns[conn] = None if player is None else by_player[player]
    lobby._conns = conns
    for data in facts["finished"]:
        summary = load_fields(m.RecordSummary, data)
        lobby.finished[summary.record_id] = summary
    for player, games in facts["played"]:
        lobby._played[player] = [(rid, seat) for rid, seat in games]
        for rid, _ in games:
            lobby._listed_by[rid] = lobby._listed_by.get(rid, 0) + 1
    for data in facts["rooms"]:
        room, failure = _room_from(data, lobby, entropy, lazily)
        lobby.rooms[room.id] = room
        if failure is not None:
            room.suspended = failure
            if broken is not None:
                broken.append((room.id, failure))
    lobby._derived_anew()
    return lobby


def _add_session(sessions: Sessions, data: dict[str, Any], config: ServerConfig) -> None:
    session = Session(
        data["player"],
        data["name"],
        history=config.history,
        history_bytes=config.history_bytes,
        bot=data["bot"],
        address=data["address"],
        key=data.get("key"),  # (facts of before keys: none)
        version=data.get("version", 1),  # (facts of before version 2: version 1)
    )
    session.joined = data["joined"]
    session.conn = data["conn"]
    session.room = data["room"]
    session.seat = data["seat"]
    session.disconnected_at = data["disconnected_at"]
    session.last_seq = data["last_seq"]
    session.waiting = tuple(data.get("waiting", ()))  # (facts of before my games: none)
    pushes = data["pushes"]
    if pushes is not None:
        session.history = deque(pushes, maxlen=config.history)
        session._kept_bytes = sum(map(len, session.history))
    if data["chat_times"] is not None:
        session.chat_times = deque(data["chat_times"])
    current, previous = data["tokens"]
    session._digests = (current, previous)
    sessions.by_player[session.player] = session
    sessions.adopt(session)
    sessions.keyed(session)
    for digest in (current, previous):
        if digest is not None:
            sessions._by_digest[digest] = session
    if session.address is not None:
        sessions._by_address.setdefault(session.address, {})[session.player] = session


def _room_from(
    data: dict[str, Any], lobby: Lobby, entropy: Entropy, lazily: bool
) -> tuple[Room, str | None]:
    by_player = lobby.sessions.by_player
    room = Room(
        data["id"],
        data["name"],
        load_fields(m.RoomSettings, data["settings"]),
        config=lobby.config,
        entropy=entropy,
        bot_sessions=lobby._bot_session,
        invite=data["invite"],
    )
    room.host = data["host"]
    room.state = data["state"]
    room.seats = [_seat_from(seat, by_player) for seat in data["seats"]]
    room.spectators = [by_player[p] for p in data["spectators"]]
    room.table_players = tuple(data["table_players"])
    room.table_keys = tuple(data.get("table_keys", (None,) * len(room.table_players)))
    room.finished_by = tuple(data["finished_by"])
    room.suspended = data["suspended"]
    failure = None
    game = data["game"]
    if game is not None and lazily and "view" in game:
        config = room.config  # (the facts' settings: the table is made under them)
        room.keep_unbuilt(
            UnbuiltGame(
                game,
                partial(_table_from, room=room, entropy=entropy, config=config),
                max(config.grace, room.settings.turn_timer or 0),  # (as `Table.grace`)
                lobby.build_failures,
            )
        )
        lobby.unbuilt.append(room.id)
    elif game is not None:
        try:
            room.table = _table_from(data["game"], room, entropy)
        except RebuildFailed as exc:
            failure = f"this server version cannot take its game up again ({exc})"
            room.table = None
            room.unread_game = data["game"]  # (kept as it is: another version may read it)
    return room, failure


def _seat_from(data: dict[str, Any], by_player: dict[int, Session]) -> Seat:
    handed = data["handed"]
    return Seat(
        session=None if data["player"] is None else by_player[data["player"]],
        bot=data["bot"],
        ready=data["ready"],
        ghost=data["ghost"],
        handed=None
        if handed is None
        else HandedSeat(
            seed=handed["seed"],
            openings=tuple(
                Opening(o["pid"], card_from_data(o["card"]), o["nonce"]) for o in handed["openings"]
            ),
            server_seed=handed["server_seed"],
            drawn=handed["drawn"],
            game=handed["game"],
        ),
    )


def _table_from(
    data: dict[str, Any], room: Room, entropy: Entropy, config: ServerConfig | None = None
) -> Table:
    settings = room.settings
    seats = [SeatRecord(**seat) for seat in data["seats"]]
    seed = data["server_seed"]
    if seed is None:
        if not isinstance(entropy, KeyedEntropy):
            raise RebuildFailed("its server seed is drawn from a key this server does not have")
        seed = entropy.bytes_at(data["seed_at"], 32)
    table = Table(
        room=room.id,
        settings=settings,
        seats=seats,
        first_player=data["first_player"],
        config=room.config if config is None else config,
        entropy=entropy,
        referee=Referee.rebuild(
            Rules(settings.players, settings.variant, settings.edition),
            first_player=data["first_player"],
            seats=seats,
            turn_timer=settings.turn_timer,
            game_id=data["game_id"],
            server_seed=seed,
            inputs=data["inputs"],
            choices=data["choices"],
            entropy=entropy,
            keys=(room.table_keys or None) if data.get("signed") else None,
        ),
    )
    referee = table.referee
    referee.seed_at = data["seed_at"]
    referee.digested, referee.digested_turn = data["digested"]
    timers = data["timers"]
    table._away_since = list(timers["away_since"])
    table._stood_in = list(timers["stood_in"])
    table._left = list(timers["left"])
    table._deadline = timers["deadline"]
    waited = timers["deadline_for"]
    table._deadline_for = None if waited is None else (Phase(waited[0]), waited[1])
    table._asked_open = timers["asked_open"]
    table._asked_final = timers["asked_final"]
    table._pushed_turn = timers["pushed_turn"]
    # (facts of before version 2: every change was pushed)
    pushed = timers.get("pushed_log", [len(referee.log), len(referee.events)])
    table._pushed_log, table._pushed_events = pushed
    table.votes = frozenset(timers["votes"])
    if referee.phase is Phase.DONE:
        table.record = referee.record()
    return table

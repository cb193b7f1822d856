"""The lobby's journal: every input that may change it, so replaying them rebuilds it.

How this works
--------------
The lobby is deterministic: given the same inputs, at the same times, and
the same randomness, it comes to the same state and makes the same effects.
So a server keeps its state across a crash by writing down its inputs, not
its state: a `JournaledLobby` notes each input as the lobby takes it
(`take` hands the notes to the shell, which stores them before it sends
anything they caused), and `replay` gives them to a new lobby after a
restart. The randomness is a `KeyedEntropy`, whose bytes come again from the
same key.

Nothing secret is noted: a note holds a client's message, a connection id
and the time (and for a new session, the address it came from: the lobby
counts sessions by address). A `hello` that resumes a session is noted without its token,
as the player id it resumed and whether the token was that session's
current one or the one before (`Lobby.resume`): enough to replay it, and
the new tokens come again from the randomness.

Inputs that change nothing are not noted: `ping`, the room and record
lists, `get_record`, a tick with nothing due. (A new session's `hello` is
noted before it is answered, a refused one too: its replay is refused
alike.)

A replay that disagrees is caught. Each note also keeps a `digest` of the
game decisions its input made: for each game whose referee ruled on it
(a placement, a reveal, an opening, a choice, a time-out, the stand-in),
the game id, the turn the ruling began at, and `protocol.updates.events_digest` of
the events it produced. `replay` makes them again and compares: a game
whose events come out otherwise (another version of the engine) is named
in a `Disagreement` and kept out of play (`Room.suspend`), and the others
go on. A note made before digests were (`digest` None) is replayed
unchecked.

>>> from oriflamme.server.core.entropy import KeyedEntropy
>>> live = JournaledLobby(KeyedEntropy(bytes(32)))
>>> hello = m.Hello(versions=(1,), client="doc", name="Ann")
>>> welcome = live.hello("c1", hello, 0.0)[0].message
>>> rebuilt = Lobby(entropy=KeyedEntropy(bytes(32)))
>>> _ = replay(rebuilt, live.take())
>>> rebuilt.sessions.find(welcome.token).name
'Ann'
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, replace
from typing import Any

import msgpack

from oriflamme.protocol import messages as m
from oriflamme.protocol.codec import unpack_untrusted

from .config import ServerConfig
from .effects import Effect
from .entropy import Entropy, KeyedEntropy
from .lobby import Lobby
from .room import Room
from .sessions import UNCHOSEN

HELLO, RESUME, REQUEST, CLOSED, TICK, RESTARTED = (
    "hello",
    "resume",
    "request",
    "closed",
    "tick",
    "restarted",
)
KINDS = (HELLO, RESUME, REQUEST, CLOSED, TICK, RESTARTED)
# Requests that change nothing in the lobby: not noted.
READ_ONLY = (m.Ping, m.ListRooms, m.ListRecords, m.GetRecord, m.Leaderboard, m.ListGames)


@dataclass(frozen=True, slots=True)
class Entry:
    """One input: its `kind`, connection, time, and `data` (msgpack: the
    message, or for a resume the hello, the player and which token)."""

    kind: str
    conn: str | None
    now: float
    data: bytes | None = None
    # msgpack: [[game id, turn, digest], ...] for each game the input made
    # a decision in (an empty array: none); None in a note made before
    # digests were, which is replayed unchecked.
    digest: bytes | None = None


@dataclass(frozen=True, slots=True)
class Disagreement:
    """A replayed input whose decision in game `game` (of room `room`, None if
    the replay has no such game) came out otherwise than when it was played:
    the decision at `turn`; `entry`, the input."""

    room: int | None
    game: bytes
    turn: int
    entry: Entry

    def describe(self) -> str:
        """For the log: the room, the game, the decision, the input (its kind,
        its message type and connection, never its contents: an opening or
        a handed seat's secrets)."""
        where = "no room" if self.room is None else f"room {self.room}"
        return (
            f"{where}: game {self.game.hex()}: the decision at turn {self.turn}"
            f" ({describe_input(self.entry)}) came out otherwise than when it was played"
        )


def describe_input(entry: Entry) -> str:
    """An input as the log names it, without its contents."""
    what = entry.kind
    if entry.kind == REQUEST and entry.data is not None:
        data = _unpack(entry.data)
        what = f"request {data.get('type')!r}"
        if isinstance(data.get("turn"), int):
            what += f" for turn {data['turn']}"
    if entry.conn is not None:
        what += f" from connection {entry.conn}"
    return f"{what}, at {entry.now:.3f}"


def _pack(value: object) -> bytes:
    packed: bytes = msgpack.packb(value, use_bin_type=True)
    return packed


def _unpack(data: bytes) -> dict[str, object]:
    value = unpack_untrusted(
        data, max_str_len=1 << 16, max_bin_len=1 << 16, max_array_len=1 << 16, max_map_len=1 << 10
    )
    assert isinstance(value, dict)
    return value


def _version(noted: object) -> int:
    """A session's protocol version as a note gives it: one this server
    speaks (a journal of a newer server's would make sessions nobody can
    resume), or a server bot's not chosen yet."""
    if noted != UNCHOSEN and noted not in m.SUPPORTED_VERSIONS:
        raise ValueError(
            f"the journal has a session of protocol version {noted!r}, which this server"
            f" does not speak ({list(m.SUPPORTED_VERSIONS)}): a newer server's journal"
        )
    assert isinstance(noted, int)
    return noted


def _hello_data(hello: m.Hello) -> dict[str, object]:
    data = m.to_data(hello)
    data.pop("token", None)
    data.pop("nonce", None)  # (of the handshake alone: the key it proved is kept)
    return data


class JournaledLobby(Lobby):
    """A lobby that notes its inputs (see the module docstring)."""

    def __init__(self, entropy: Entropy, config: ServerConfig | None = None) -> None:
        super().__init__(config, entropy)
        self._notes: list[Entry] = []
        self.last_time = 0.0  # the time of the last input noted
        # The rooms whose game a replay of the notes since the facts were
        # last taken would rebuild (a request or a resume there, a decision
        # at a tick). The shell takes the facts once they are many
        # (`NetServer`), so that a start after a kill rebuilds few games,
        # and empties it then.
        self.rooms_noted: set[int] = set()

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self.__dict__.setdefault("rooms_noted", set())

    def _note(self, entry: Entry) -> None:
        self._notes.append(entry)
        self.last_time = max(self.last_time, entry.now)

    def _rooms_of(self, conn: Hashable | None = None, player: int | None = None) -> list[Room]:
        """The rooms an input may make decisions in: the room of the session
        of `conn` (or of `player`); every room, for neither."""
        if conn is None and player is None:
            return list(self.rooms.values())
        session = self._conns.get(conn) if player is None else self.sessions.by_player.get(player)
        room = None if session is None or session.room is None else self.rooms.get(session.room)
        return [] if room is None else [room]

    def _digest(self, index: int, rooms: list[Room], after: list[Room]) -> None:
        """Keep with note `index` the digests of the decisions its input made
        in `rooms` (those before it) and `after` (those after it)."""
        decided: list[list[object]] = []
        seen: set[int] = set()
        for room in (*rooms, *after):
            if id(room) in seen or not room.built:  # (a game not rebuilt decided nothing)
                continue
            table = room.table
            if table is None or room.suspended is not None:
                continue
            seen.add(id(room))
            made = table.referee.take_digest()
            if made is not None:
                decided.append([table.referee.game_id, *made])
                self.rooms_noted.add(room.id)
        self._notes[index] = replace(self._notes[index], digest=_pack(decided))

    def rekey(self, key: bytes) -> None:
        """Give the key of its `KeyedEntropy` back, after loading it from a
        snapshot (the key is never pickled)."""
        entropy = self._entropy
        if not isinstance(entropy, KeyedEntropy):
            raise TypeError(f"a lobby with {type(entropy).__name__} has no key")
        entropy.rekey(key)

    def take(self) -> list[Entry]:
        """The notes made since the last call, in order."""
        notes, self._notes = self._notes, []
        return notes

    def hello(
        self,
        conn: Hashable,
        hello: m.Hello,
        now: float,
        *,
        address: str | None = None,
        version: int | None = None,
    ) -> list[Effect]:
        if hello.token is not None or (hello.key is not None and hello.key in self.sessions.by_key):
            # A resume notes itself (`resume`): by a token, or by a key that has a session.
            return super().hello(conn, hello, now, address=address, version=version)
        note: dict[str, object] = {"hello": _hello_data(hello), "address": address}
        self._note(Entry(HELLO, str(conn), now, _pack(note)))
        index = len(self._notes) - 1
        effects = super().hello(conn, hello, now, address=address, version=version)
        # The version chosen, which a replay takes as it was (a server that
        # spoke fewer versions chose then): none for a hello refused.
        session = self._conns.get(conn)
        if session is not None:
            note["version"] = session.version
        # (no game decides anything at a new session's hello)
        self._notes[index] = replace(self._notes[index], data=_pack(note), digest=_pack([]))
        return effects

    def resume(
        self,
        conn: Hashable,
        player: int,
        current_one: bool,
        hello: m.Hello,
        now: float,
        *,
        missed: bool | None = None,
        version: int | None = None,
    ) -> list[Effect]:
        note: dict[str, object] = {
            "hello": _hello_data(hello),
            "player": player,
            "current": current_one,
        }
        self._note(Entry(RESUME, str(conn), now, _pack(note)))
        index, rooms = len(self._notes) - 1, self._rooms_of(player=player)
        effects = super().resume(
            conn, player, current_one, hello, now, missed=missed, version=version
        )
        # (what it sent, the pushes missed or a snapshot, and its version: a
        # replay does the same)
        note["missed"] = self.resumed_with_missed
        note["version"] = self.sessions.by_player[player].version
        self._notes[index] = replace(self._notes[index], data=_pack(note))
        after = self._rooms_of(player=player)
        self._digest(index, rooms, after)
        self.rooms_noted.update(room.id for room in (*rooms, *after))
        return effects

    def request(self, conn: Hashable, message: m.Message, now: float) -> list[Effect]:
        if isinstance(message, READ_ONLY):
            return super().request(conn, message, now)
        self._note(Entry(REQUEST, str(conn), now, _pack(m.to_data(message))))
        index, rooms = len(self._notes) - 1, self._rooms_of(conn)
        effects = super().request(conn, message, now)
        after = self._rooms_of(conn)
        self._digest(index, rooms, after)
        self.rooms_noted.update(room.id for room in (*rooms, *after))
        return effects

    def closed(self, conn: Hashable, now: float) -> list[Effect]:
        self._note(Entry(CLOSED, str(conn), now))
        index, rooms = len(self._notes) - 1, self._rooms_of(conn)
        effects = super().closed(conn, now)
        self._digest(index, rooms, [])
        return effects

    def restarted(self, now: float, skip: int = 0) -> list[Effect]:
        self._note(Entry(RESTARTED, None, now, msgpack.packb(skip) if skip else None))
        index, rooms = len(self._notes) - 1, self._rooms_of()
        effects = super().restarted(now, skip)
        self._digest(index, rooms, [])
        return effects

    def tick(self, now: float) -> list[Effect]:
        due = self.next_deadline()
        if due is None or due > now:
            return super().tick(now)
        self._note(Entry(TICK, None, now))
        index, rooms = len(self._notes) - 1, self._rooms_of()
        effects = super().tick(now)
        self._digest(index, rooms, [])
        return effects


def replay(
    lobby: Lobby, entries: Iterable[Entry], disagreements: list[Disagreement] | None = None
) -> list[Effect]:
    """Give `entries` to `lobby`, in order; the effects they make (the shell
    keeps what still matters: bots to run, records to keep). A
    `JournaledLobby` checks each decision against the digest noted with it
    (the module docstring): a game that comes out otherwise is kept out of
    play, and named in `disagreements` (if given).

    Each note a `JournaledLobby` makes here is the entry again: the shell
    drops them (`take`), as they are stored already."""
    effects: list[Effect] = []
    kept_out: set[bytes] = set()  # the games found to disagree
    journaled = lobby if isinstance(lobby, JournaledLobby) else None
    for entry in entries:
        noted = 0 if journaled is None else len(journaled._notes)
        effects += _apply(lobby, entry)
        if entry.digest is None or journaled is None:
            continue  # (a note made before digests were, or a lobby that makes none)
        made = journaled._notes[-1].digest if len(journaled._notes) > noted else None
        if made == entry.digest:
            continue
        for found in _compare(lobby, entry, made, kept_out):
            kept_out.add(found.game)
            if disagreements is not None:
                disagreements.append(found)
            room = lobby.rooms.get(found.room) if found.room is not None else None
            if room is not None and room.suspended is None:
                why = (
                    f"its decision at turn {found.turn} came out otherwise than when it was played"
                )
                effects += room.suspend(why)
    return effects


def _decisions(digest: bytes | None) -> dict[bytes, tuple[int, bytes]]:
    """The decisions a note's `digest` holds: game id -> (turn, digest)."""
    if not digest:
        return {}
    value = unpack_untrusted(
        digest, max_str_len=0, max_bin_len=64, max_array_len=1 << 16, max_map_len=0
    )
    assert isinstance(value, list)
    found: dict[bytes, tuple[int, bytes]] = {}
    for game, turn, made in value:
        found[bytes(game)] = (int(turn), bytes(made))
    return found


def _compare(
    lobby: Lobby, entry: Entry, made: bytes | None, kept_out: set[bytes]
) -> list[Disagreement]:
    """The games whose decisions `entry` noted (`entry.digest`) and the
    replay made (`made`) differ, those already kept out of play aside."""
    noted, again = _decisions(entry.digest), _decisions(made)
    rooms = {game: room.id for room in lobby.rooms.values() if (game := room.game_id()) is not None}
    return [
        Disagreement(rooms.get(game), game, (noted.get(game) or again[game])[0], entry)
        for game in sorted({*noted, *again})
        if game not in kept_out and noted.get(game) != again.get(game)
    ]


def _apply(lobby: Lobby, entry: Entry) -> list[Effect]:
    """Give one entry to `lobby`."""
    conn, now = entry.conn, entry.now
    if entry.kind == TICK:
        return lobby.tick(now)
    if entry.kind == RESTARTED:
        # (the blocks of the random stream skipped; none in a note made before)
        skip = (
            0
            if entry.data is None
            else unpack_untrusted(
                entry.data, max_str_len=0, max_bin_len=0, max_array_len=0, max_map_len=0
            )
        )
        assert isinstance(skip, int) and skip >= 0
        return lobby.restarted(now, skip)
    if entry.kind == CLOSED:
        return lobby.closed(conn, now)
    if entry.kind == HELLO:
        assert entry.data is not None
        note = _unpack(entry.data)
        address: str | None = None
        # (a note made before version 2: version 1, the only one spoken then)
        version = _version(note.get("version", 1))
        if "hello" in note:  # (a note made before addresses were: the hello alone)
            noted = note["address"]
            assert noted is None or isinstance(noted, str)
            address = noted
            note = note["hello"]  # type: ignore[assignment]
        hello = m.from_data(note, "client")
        assert isinstance(hello, m.Hello)
        return lobby.hello(conn, hello, now, address=address, version=version)
    if entry.kind == RESUME:
        assert entry.data is not None
        note = _unpack(entry.data)
        hello = m.from_data(note["hello"], "client")  # type: ignore[arg-type]
        assert isinstance(hello, m.Hello)
        player, current = note["player"], note["current"]
        assert isinstance(player, int) and isinstance(current, bool)
        missed = note.get("missed")  # (absent from a note made before it was kept)
        assert missed is None or isinstance(missed, bool)
        version = _version(note.get("version", 1))  # (absent: before it was noted)
        return lobby.resume(conn, player, current, hello, now, missed=missed, version=version)
    if entry.kind == REQUEST:
        assert entry.data is not None
        return lobby.request(conn, m.from_data(_unpack(entry.data), "client"), now)
    raise ValueError(f"no journal entry of kind {entry.kind!r}")

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
lists, `get_record`, a `hello` refused, a tick with nothing due.

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
from dataclasses import dataclass

import msgpack

from oriflamme.protocol import messages as m
from oriflamme.protocol.codec import unpack_untrusted

from .config import ServerConfig
from .effects import Effect
from .entropy import Entropy, KeyedEntropy
from .lobby import Lobby

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
READ_ONLY = (m.Ping, m.ListRooms, m.ListRecords, m.GetRecord)


@dataclass(frozen=True, slots=True)
class Entry:
    """One input: its `kind`, connection, time, and `data` (msgpack: the
    message, or for a resume the hello, the player and which token)."""

    kind: str
    conn: str | None
    now: float
    data: bytes | None = None


def _pack(value: object) -> bytes:
    packed: bytes = msgpack.packb(value, use_bin_type=True)
    return packed


def _unpack(data: bytes) -> dict[str, object]:
    value = unpack_untrusted(
        data, max_str_len=1 << 16, max_bin_len=1 << 16, max_array_len=1 << 16, max_map_len=1 << 10
    )
    assert isinstance(value, dict)
    return value


def _hello_data(hello: m.Hello) -> dict[str, object]:
    data = m.to_data(hello)
    data.pop("token", None)
    return data


class JournaledLobby(Lobby):
    """A lobby that notes its inputs (see the module docstring)."""

    def __init__(self, entropy: Entropy, config: ServerConfig | None = None) -> None:
        super().__init__(config, entropy)
        self._notes: list[Entry] = []
        self.last_time = 0.0  # the time of the last input noted

    def _note(self, entry: Entry) -> None:
        self._notes.append(entry)
        self.last_time = max(self.last_time, entry.now)

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
        self, conn: Hashable, hello: m.Hello, now: float, *, address: str | None = None
    ) -> list[Effect]:
        if hello.token is None:
            note = {"hello": _hello_data(hello), "address": address}
            self._note(Entry(HELLO, str(conn), now, _pack(note)))
        # A resume notes itself (`resume`).
        return super().hello(conn, hello, now, address=address)

    def resume(
        self, conn: Hashable, player: int, current_one: bool, hello: m.Hello, now: float
    ) -> list[Effect]:
        note = {"hello": _hello_data(hello), "player": player, "current": current_one}
        self._note(Entry(RESUME, str(conn), now, _pack(note)))
        return super().resume(conn, player, current_one, hello, now)

    def request(self, conn: Hashable, message: m.Message, now: float) -> list[Effect]:
        if not isinstance(message, READ_ONLY):
            self._note(Entry(REQUEST, str(conn), now, _pack(m.to_data(message))))
        return super().request(conn, message, now)

    def closed(self, conn: Hashable, now: float) -> list[Effect]:
        self._note(Entry(CLOSED, str(conn), now))
        return super().closed(conn, now)

    def restarted(self, now: float) -> list[Effect]:
        self._note(Entry(RESTARTED, None, now))
        return super().restarted(now)

    def tick(self, now: float) -> list[Effect]:
        due = self.next_deadline()
        if due is not None and due <= now:
            self._note(Entry(TICK, None, now))
        return super().tick(now)


def replay(lobby: Lobby, entries: Iterable[Entry]) -> list[Effect]:
    """Give `entries` to `lobby`, in order; the effects they make (the shell
    keeps what still matters: bots to run, records to keep)."""
    effects: list[Effect] = []
    for entry in entries:
        conn, now = entry.conn, entry.now
        if entry.kind == TICK:
            effects += lobby.tick(now)
        elif entry.kind == RESTARTED:
            effects += lobby.restarted(now)
        elif entry.kind == CLOSED:
            effects += lobby.closed(conn, now)
        elif entry.kind == HELLO:
            assert entry.data is not None
            note = _unpack(entry.data)
            address: str | None = None
            if "hello" in note:  # (a note made before addresses were: the hello alone)
                noted = note["address"]
                assert noted is None or isinstance(noted, str)
                address = noted
                note = note["hello"]  # type: ignore[assignment]
            hello = m.from_data(note, "client")
            assert isinstance(hello, m.Hello)
            effects += lobby.hello(conn, hello, now, address=address)
        elif entry.kind == RESUME:
            assert entry.data is not None
            note = _unpack(entry.data)
            hello = m.from_data(note["hello"], "client")  # type: ignore[arg-type]
            assert isinstance(hello, m.Hello)
            player, current = note["player"], note["current"]
            assert isinstance(player, int) and isinstance(current, bool)
            effects += lobby.resume(conn, player, current, hello, now)
        elif entry.kind == REQUEST:
            assert entry.data is not None
            effects += lobby.request(conn, m.from_data(_unpack(entry.data), "client"), now)
        else:
            raise ValueError(f"no journal entry of kind {entry.kind!r}")
    return effects

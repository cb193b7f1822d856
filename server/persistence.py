"""The server's state at start: rebuilt from its data directory, or new.

How this works
--------------
The data directory holds `secret.key` (32 random bytes, mode 0600: every
token, seed and invite code the server makes comes from it, through
`KeyedEntropy`, and so does the server's public id, `welcome.server_id`,
the same at every start and never in the journal) and `server.sqlite3`
(the `Store`: the lobby's facts, and the journal of the inputs since). At
start the lobby is rebuilt from its facts (`server.core.facts`: plain,
versioned data; each game from its log), and the journal is replayed on it:
the lobby is as it was at the last input stored. A new data directory gets
a new key and the facts of a new lobby at once, so that there are always
facts, and with them the settings the journal was written under (a replay
under other settings would not come out the same).

The settings are part of the state: a server started again keeps those of
its data directory, and says so when it is given others.

A data directory of an earlier version (schema 3 and before) holds a
pickle of the lobby instead: it is converted at the first start, once (its
pickle loaded, its journal replayed, its facts taken and stored), if no game
is in progress there; a game in progress was begun without a log, and
cannot be taken up from facts, so then the server refuses to start and says
how to finish those games with the earlier version first
(`EarlierGamesInProgress`; deploy/README.md, "Upgrading"). A game over is
left out (its record is kept).

A replay that disagrees: each decision in the journal has the digest of
what it produced; a game whose replay by this version comes out otherwise
is logged (room, game, turn, input) and kept out of play, and the other
games go on; or, with `strict`, the server does not start
(`ReplayDisagreed`, exit status 3).
"""

from __future__ import annotations

import dataclasses
import logging
import pickle
import time
from dataclasses import dataclass
from pathlib import Path

from oriflamme.server.core import Effect, ServerConfig
from oriflamme.server.core.config import LIMITS
from oriflamme.server.core.entropy import KeyedEntropy
from oriflamme.server.core.facts import (
    FactsError,
    FactsRows,
    decode,
    facts_from_rows,
    facts_of,
    lobby_from,
    rows_of,
)
from oriflamme.server.core.journal import Disagreement, Entry, JournaledLobby, replay

from .files import write_private
from .store import SCHEMA_VERSION, SqliteStore, Store, StoreError
from .tuning import collector_paused

log = logging.getLogger("oriflamme.server")

# What the settings given at start replace (the rest is the directory's).
GIVEN_AT_START = (*LIMITS, "strategies")

KEY_FILE = "secret.key"
KEY_CHECK = "key_check"  # (in the store's meta: see `check_key`)
DATABASE_FILE = "server.sqlite3"


@dataclass
class Restored:
    """The lobby as it was, its store, and what replaying the journal did."""

    lobby: JournaledLobby
    store: Store
    replayed: list[Effect]
    entries: int
    new: bool
    disagreements: list[Disagreement] = dataclasses.field(default_factory=list)


class EarlierGamesInProgress(StoreError):
    """The data directory is an earlier version's, with games in progress
    that this version cannot take up (see the module docstring)."""


class ReplayDisagreed(StoreError):
    """The journal's replay by this version disagreed with what a game did,
    and the server was told not to start then (`--strict-replay`)."""


def server_key(path: Path) -> bytes:
    """The server's key, made at the first start."""
    try:
        key = path.read_bytes()
    except FileNotFoundError:
        key = KeyedEntropy.new_key()
        write_private(path, key)
        return key
    except OSError as exc:
        raise StoreError(f"cannot read the server's key {path}: {exc.strerror}") from None
    if len(key) != 32:
        raise StoreError(
            f"the server's key {path} is not 32 bytes: it was damaged. Without it the"
            " games in this data directory cannot be resumed; start with another data"
            " directory."
        )
    return key


def open_store(data_dir: Path, database: str | None = None) -> Store:
    """The store: the data directory's SQLite file, or the PostgreSQL
    database of URL `database` (`server.pg_store`)."""
    if database is None:
        return SqliteStore(data_dir / DATABASE_FILE)
    if not database.startswith(("postgresql://", "postgres://")):
        raise StoreError(
            f"--database {database!r}: a PostgreSQL URL, postgresql://USER@HOST/DATABASE"
            " (its password in PGPASSWORD or ~/.pgpass, not in the URL); leave it out for"
            " the SQLite file in the data directory"
        )
    from .pg_store import PostgresStore  # (psycopg, only for those who use it)

    return PostgresStore(database)


def check_key(store: Store, key: bytes) -> None:
    """Refuse a store written under another key: its games' tokens and seeds
    come from the key, and would come out otherwise. The store keeps a
    number derived from the key (a hash of the server's public id), never
    the key; a store that has none gets this one's."""
    check = int.from_bytes(KeyedEntropy(key).server_id()[:7], "big")
    kept = store.meta(KEY_CHECK)
    if kept is None:
        store.set_meta(KEY_CHECK, check)
    elif kept != check:
        raise StoreError(
            f"the database {store.path} was written by a server with another key than"
            " this data directory's secret.key: give this server the key of the one"
            " that wrote it (copy its secret.key into the data directory), or another"
            " database"
        )


def _replayed(
    lobby: JournaledLobby, entries: list[Entry], disagreements: list[Disagreement] | None = None
) -> list[Effect]:
    """`journal.replay`, its refusal of a journal it cannot read (a newer
    server's) told as a `StoreError`: the server does not start."""
    try:
        return replay(lobby, entries, disagreements)
    except ValueError as exc:
        raise StoreError(f"the journal cannot be replayed: {exc}") from None


def restore(
    data_dir: Path, config: ServerConfig, *, strict: bool = False, database: str | None = None
) -> Restored:
    """The lobby of `data_dir` (see the module docstring), its store there or
    in `database` (a PostgreSQL URL); StoreError with a message for a person
    if it cannot be had; `ReplayDisagreed` if `strict` and the journal's
    replay disagrees with a game (nothing is stored then)."""
    try:
        data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        key = server_key(data_dir / KEY_FILE)
        store = open_store(data_dir, database)
    except OSError as exc:  # read-only, full, not a directory...
        raise StoreError(
            f"cannot use the data directory {data_dir}: {exc.strerror or exc}"
        ) from None
    try:
        snapshot, entries = store.load()
        earlier = isinstance(snapshot, bytes) and is_pickle(snapshot)
        if not earlier:
            check_key(store, key)  # (an earlier version's is not written before it is converted)
        if snapshot is None:
            lobby = JournaledLobby(KeyedEntropy(key), config)
            store.set_schema()
            store.save_facts(_facts(lobby))
            return Restored(lobby, store, [], 0, new=True)
        converted: list[Effect] = []  # (what the earlier journal's replay did)
        if isinstance(snapshot, bytes) and earlier:  # (an earlier version's: converted once)
            snapshot, converted = _convert(store, snapshot, entries, key, data_dir)
            entries = []
        # (facts as one document: schema 4's, written as rows once read)
        as_document = isinstance(snapshot, bytes)
        broken: list[tuple[int, str]] = []
        with collector_paused():
            try:
                facts = (
                    decode(snapshot) if isinstance(snapshot, bytes) else facts_from_rows(snapshot)
                )
                lobby = lobby_from(facts, KeyedEntropy(key), broken=broken, lazily=True)
            except FactsError as exc:
                raise StoreError(f"{exc}; start with another data directory") from None
        if store.found_schema != SCHEMA_VERSION:  # (once read: a refused start changes nothing)
            store.set_schema()
        log_build_failures(broken)
        # The journal's inputs were taken under the snapshot's settings (a
        # name or a chat line within its limits, a bot of its strategies):
        # they are replayed under those, or a replay would refuse what was
        # accepted. The settings given now apply from here on, and a new
        # snapshot says so before any input is taken under them.
        kept = with_limits(lobby.config, lobby.config)  # (defaults for what it predates)
        lobby.config = kept
        disagreements: list[Disagreement] = []
        with collector_paused():
            replayed = converted + _replayed(lobby, entries, disagreements)
        lobby.take()  # the replay noted the journal again: it is stored already
        log_build_failures(lobby.take_build_failures())  # (games the journal rebuilt)
        for found in disagreements:
            log.error(
                "%s: this server version cannot restore the game%s",
                found.describe(),
                "" if strict else "; it is kept out of play, and its players are told",
            )
        if disagreements and strict:
            games = ", ".join(f"{d.game.hex()} (turn {d.turn})" for d in disagreements)
            raise ReplayDisagreed(
                f"the journal's replay by this server version disagrees with {len(disagreements)}"
                f" game(s) in progress: {games}; see the log for each. Started with"
                " --strict-replay, it does not serve: start it without --strict-replay to"
                " serve the other games and keep those out of play, or start the version that"
                ' played them again (deploy/README.md, "Upgrading")'
            )
        lobby.config = with_limits(kept, config)
        for room in lobby.rooms.values():
            room.config = lobby.config
        if lobby.config != config:
            log.warning(
                "this data directory's settings are kept (they are part of its games): %s",
                lobby.config,
            )
        if lobby.config != kept or as_document:
            store.save_facts(_facts(lobby))  # (covers the journal just replayed)
        if as_document:
            log.warning(
                "the facts of %s (schema 4, one document) were written as rows (schema %d)",
                store.path,
                SCHEMA_VERSION,
            )
        return Restored(
            lobby, store, replayed, len(entries), new=False, disagreements=disagreements
        )
    except BaseException:
        store.close()
        raise


def log_build_failures(failures: list[tuple[int, str]]) -> None:
    """Log the games this version could not rebuild from their logs (room
    id, why): each is kept out of play, and the other games go on."""
    for room_id, why in failures:
        log.error("room %d: %s; it is kept out of play, and its players are told", room_id, why)


def with_limits(kept: ServerConfig, given: ServerConfig) -> ServerConfig:
    """The data directory's settings (part of its games), with the abuse
    limits and bot strategies given now: they are part of no game. A
    setting a directory written before it existed lacks is the default
    (the value the server had before it was a setting)."""
    default = ServerConfig()
    values = {
        f.name: getattr(
            given if f.name in GIVEN_AT_START else kept, f.name, getattr(default, f.name)
        )
        for f in dataclasses.fields(ServerConfig)
    }
    return ServerConfig(**values)


def is_pickle(snapshot: bytes) -> bool:
    """Whether a snapshot is an earlier version's pickle (protocol 2 to 5
    opens with PROTO, 0x80, then its number), not facts (msgpack: a map of
    a dozen keys or more, which opens with 0x8c to 0x8f or 0xde)."""
    return len(snapshot) > 1 and snapshot[0] == 0x80 and 2 <= snapshot[1] <= 5


def _facts(lobby: JournaledLobby) -> FactsRows:
    with collector_paused():
        return rows_of(facts_of(lobby))


def _convert(
    store: Store, snapshot: bytes, entries: list[Entry], key: bytes, data_dir: Path
) -> tuple[FactsRows, list[Effect]]:
    """The facts of an earlier version's data directory (its pickle and its
    journal), stored in its place, and the effects of the journal's replay
    (a game it ended whose record is to be kept, say);
    `EarlierGamesInProgress` if a game is in progress there (nothing is
    changed then)."""
    with collector_paused():
        lobby = _unpickle(snapshot)
    lobby.rekey(key)
    lobby.config = with_limits(lobby.config, lobby.config)
    with collector_paused():
        effects = _replayed(lobby, entries)
    lobby.take()
    playing = [
        room
        for room in lobby.rooms.values()
        if room.table is not None and not room.table.over and not room.table.referee.first_seats
    ]
    if playing:
        rooms = ", ".join(f"room {room.id} ({room.name!r})" for room in playing)
        raise EarlierGamesInProgress(
            f"the data directory {data_dir} was written by an earlier version of the server"
            f" (schema {store.found_schema}), and {len(playing)} game(s) begun by it are still"
            f" in progress: {rooms}. This version keeps each game as its log, which that"
            " version did not keep, so it cannot take them up. Start the earlier version on"
            " this directory again, stop it once `oriflamme rooms` shows no game playing,"
            ' and start this one (deploy/README.md, "Upgrading"). Nothing was changed.'
        )
    for room in lobby.rooms.values():
        if room.table is not None and not room.table.referee.first_seats:
            room.table = None  # a game over, begun without a log (its record is kept)
            room.finished_by = ()
    facts = _facts(lobby)
    earlier = store.found_schema
    check_key(store, key)
    store.set_schema()
    store.save_facts(facts)  # (covers the journal just replayed, and drops it)
    log.warning(
        "the data directory %s, of an earlier version (schema %s), was converted at %s",
        data_dir,
        earlier,
        time.strftime("%Y-%m-%d %H:%M:%S"),
    )
    return facts, effects


def _pickled(lobby: JournaledLobby) -> bytes:
    with collector_paused():
        return pickle.dumps(lobby, protocol=pickle.HIGHEST_PROTOCOL)


def _unpickle(snapshot: bytes) -> JournaledLobby:
    try:
        lobby = pickle.loads(snapshot)
    except Exception as exc:
        raise StoreError(
            f"the saved state cannot be read ({type(exc).__name__}: {exc}); it was"
            " written by another version of the server. Start with another data directory."
        ) from None
    if not isinstance(lobby, JournaledLobby):
        raise StoreError("the saved state is not a lobby: start with another data directory")
    return lobby

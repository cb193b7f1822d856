"""A client's secrets on disk: each seat's secrets, and each server's session token.

How this works
--------------
A seat's secrets (its client seed, and the card and nonce behind each of its
commitments) exist nowhere else: the server never learns them. So they are
written to disk before the message that binds them is sent (the seed
commitment, a placement), and a client killed mid-game and started again
with the same directory takes its seat back and can still open its cards.

Every file is written whole and then moved into place (`os.replace`), with
mode 0600 from the start: a crash leaves the old file or the new one, never
a piece of either, and no other user can read them. The directory is the
user's state directory (``$XDG_STATE_HOME/oriflamme``, or
``~/.local/state/oriflamme``) unless told otherwise.

    <dir>/sessions/id-<server id>.session  the session token (and last push seq)
                                           on the server of that id
    <dir>/sessions/<address>.server     the id of the server last reached at an
                                        address (as typed: host:port)
    <dir>/sessions/<address>.session    the token for a server that sends no id
    <dir>/games/<game id>-<seat>.secrets   a seat's `SeatSecrets.to_bytes()`, until
                                           `forget`: its game's record verified, or
                                           the game is no longer ours (`client.session`)

A session is kept by the server's identity (`welcome.server_id`), not by
the address it was reached at: the same server may be reached as
127.0.0.1, by its LAN address or by a name, and all of them must find the
same seat. A client sends its token in `hello`, before it learns the
server's id, so it keeps an index from each address to the id last
learnt there; an address it has never used costs one connection more
(`client.session`).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from oriflamme.engine import Rules

from .seat_secrets import SeatSecrets, SecretsError


def default_state_dir() -> Path:
    """Where a client keeps its state, by the XDG convention."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "oriflamme"


def write_private(path: Path, data: bytes) -> None:
    """Write `data` to `path` atomically, readable by its owner alone.
    (The server has its twin, `oriflamme.server.files.write_private`: the
    two share no module.)"""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def _server_key(server: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", server)[:100] or "server"


FORGOTTEN_KEPT = 1024


class SecretStore:
    """One user's secrets, in one directory; see the module docstring."""

    def __init__(self, directory: Path | str | None = None) -> None:
        self.directory = Path(directory) if directory is not None else default_state_dir()
        self._saved: dict[Path, bytes] = {}
        # Seats of games over, lately: what a session still holds of one is
        # not written back (a bot's message sent as its game was cancelled).
        self._forgotten: dict[Path, None] = {}

    # ------------------------------------------------------------ seats

    def secrets_path(self, game_id: bytes, seat: int) -> Path:
        return self.directory / "games" / f"{game_id.hex()}-{seat}.secrets"

    def load(self, game_id: bytes, seat: int) -> SeatSecrets | None:
        """The stored secrets of `seat` in game `game_id`, if any. A file that
        cannot be read raises `SecretsError` (it is not replaced silently)."""
        path = self.secrets_path(game_id, seat)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        secrets = SeatSecrets.from_bytes(data)
        if (secrets.game_id, secrets.seat) != (game_id, seat):
            raise SecretsError(f"{path} holds the secrets of another game or seat")
        self._saved[path] = data
        return secrets

    def save(self, secrets: SeatSecrets) -> None:
        """Write `secrets` unless they are on disk as they are."""
        path = self.secrets_path(secrets.game_id, secrets.seat)
        if path in self._forgotten:
            return
        data = secrets.to_bytes()
        if self._saved.get(path) != data:
            write_private(path, data)
            self._saved[path] = data

    def forget(self, game_id: bytes, seat: int) -> None:
        """Delete the secrets of a seat whose game is over."""
        path = self.secrets_path(game_id, seat)
        path.unlink(missing_ok=True)
        self._saved.pop(path, None)
        self._forgotten[path] = None
        if len(self._forgotten) > FORGOTTEN_KEPT:
            del self._forgotten[next(iter(self._forgotten))]

    def keep_again(self, game_id: bytes, seat: int) -> None:
        """The game of a seat we forgot is being played again (the server went
        back to an earlier state: a restore): its secrets are written again."""
        self._forgotten.pop(self.secrets_path(game_id, seat), None)

    def make_secrets(self, rules: Rules, game_id: bytes, seat: int) -> SeatSecrets:
        """The secrets of a seat: those stored, or new ones, stored at once."""
        secrets = self.load(game_id, seat)
        if secrets is None:
            secrets = SeatSecrets(rules, game_id, seat)
            self.save(secrets)
        return secrets

    # ------------------------------------------------------------ sessions

    def session_path(self, server: str) -> Path:
        """The file of the session kept for address `server` (a server that
        sends no id)."""
        return self.directory / "sessions" / f"{_server_key(server)}.session"

    def _id_path(self, server_id: bytes) -> Path:
        return self.directory / "sessions" / f"id-{server_id.hex()}.session"

    def _index_path(self, server: str) -> Path:
        return self.directory / "sessions" / f"{_server_key(server)}.server"

    def server_id_at(self, server: str) -> bytes | None:
        """The id of the server last reached at address `server`, if known."""
        try:
            server_id = bytes.fromhex(self._index_path(server).read_text().strip())
        except (FileNotFoundError, ValueError):
            return None
        return server_id or None

    def load_session(
        self, server: str, *, server_id: bytes | None = None
    ) -> tuple[bytes, int | None] | None:
        """The token (and the last push seq) of our session on the server of
        `server_id`; without one, on the server last reached at address
        `server` (or the address's own, for a server that sends no id)."""
        if server_id is None:
            server_id = self.server_id_at(server)
        path = self.session_path(server) if server_id is None else self._id_path(server_id)
        try:
            raw = json.loads(path.read_text())
            return bytes.fromhex(raw["token"]), raw.get("seq")
        except (FileNotFoundError, ValueError, KeyError, TypeError):
            return None

    def save_session(
        self, server: str, token: bytes, seq: int | None, *, server_id: bytes | None = None
    ) -> None:
        """Keep `token` for the server of `server_id` (reached at address
        `server`, which now leads to it); without an id, for the address."""
        data = json.dumps({"token": token.hex(), "seq": seq}).encode()
        if server_id is None:  # (the address no longer leads to a server with an id)
            self._write(self.session_path(server), data)
            self._index_path(server).unlink(missing_ok=True)
            self._saved.pop(self._index_path(server), None)
            return
        self._write(self._id_path(server_id), data)
        self._write(self._index_path(server), server_id.hex().encode())
        # (the address's own file, from before the server had an id, is replaced)
        self.session_path(server).unlink(missing_ok=True)

    def _write(self, path: Path, data: bytes) -> None:
        if self._saved.get(path) != data:
            write_private(path, data)
            self._saved[path] = data

    def forget_session(self, server: str, *, server_id: bytes | None = None) -> None:
        if server_id is None:
            server_id = self.server_id_at(server)
        for path in (self.session_path(server),) + (
            () if server_id is None else (self._id_path(server_id),)
        ):
            path.unlink(missing_ok=True)
            self._saved.pop(path, None)

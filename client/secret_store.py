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

    <dir>/sessions/<server>.session     the session token and last push seq
    <dir>/games/<game id>-<seat>.secrets   a seat's `SeatSecrets.to_bytes()`
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
    """Write `data` to `path` atomically, readable by its owner alone."""
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

    def make_secrets(self, rules: Rules, game_id: bytes, seat: int) -> SeatSecrets:
        """The secrets of a seat: those stored, or new ones, stored at once."""
        secrets = self.load(game_id, seat)
        if secrets is None:
            secrets = SeatSecrets(rules, game_id, seat)
            self.save(secrets)
        return secrets

    # ------------------------------------------------------------ sessions

    def session_path(self, server: str) -> Path:
        return self.directory / "sessions" / f"{_server_key(server)}.session"

    def load_session(self, server: str) -> tuple[bytes, int | None] | None:
        """The token (and the last push seq) of our session on `server`, if kept."""
        try:
            raw = json.loads(self.session_path(server).read_text())
            return bytes.fromhex(raw["token"]), raw.get("seq")
        except (FileNotFoundError, ValueError, KeyError, TypeError):
            return None

    def save_session(self, server: str, token: bytes, seq: int | None) -> None:
        data = json.dumps({"token": token.hex(), "seq": seq}).encode()
        path = self.session_path(server)
        if self._saved.get(path) != data:
            write_private(path, data)
            self._saved[path] = data

    def forget_session(self, server: str) -> None:
        self.session_path(server).unlink(missing_ok=True)
        self._saved.pop(self.session_path(server), None)

"""The player's key on disk, `oriflamme identity` and its export and
import, and the servers' keys pinned on first use (`client.identity`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from oriflamme.client.identity import (
    IdentityError,
    ServerKeys,
    describe,
    export,
    import_key,
    load,
    load_or_make,
)
from oriflamme.launcher import cli
from oriflamme.protocol import identity


def test_a_key_is_made_once_kept_for_its_owner_alone_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "config" / "identity.key"
    assert load(path) is None
    made = load_or_make(path)
    assert path.stat().st_mode & 0o777 == 0o600
    assert identity.public_bytes(load_or_make(path)) == identity.public_bytes(made)
    assert b"PRIVATE KEY" in path.read_bytes()


@pytest.mark.parametrize(
    "content, why", [(b"not a key", "not a key file"), (b"", "not a key file")]
)
def test_a_key_file_that_cannot_be_used_is_an_error_and_is_left_alone(
    tmp_path: Path, content: bytes, why: str
) -> None:
    path = tmp_path / "identity.key"
    path.write_bytes(content)
    with pytest.raises(IdentityError, match=why):
        load_or_make(path)
    assert path.read_bytes() == content  # (never replaced: it may be someone's only copy)


def test_an_export_moves_the_key_under_its_passphrase_only(tmp_path: Path) -> None:
    key = load_or_make(tmp_path / "a" / "identity.key")
    export(key, tmp_path / "moved.pem", "correct horse")
    assert b"ENCRYPTED PRIVATE KEY" in (tmp_path / "moved.pem").read_bytes()
    with pytest.raises(IdentityError, match="passphrase is wrong"):
        import_key(tmp_path / "moved.pem", "wrong horse", tmp_path / "b" / "identity.key")
    assert not (tmp_path / "b" / "identity.key").exists()
    moved = import_key(tmp_path / "moved.pem", "correct horse", tmp_path / "b" / "identity.key")
    assert describe(moved) == describe(key)
    assert describe(load_or_make(tmp_path / "b" / "identity.key")) == describe(key)
    with pytest.raises(IdentityError, match="at least 8"):
        export(key, tmp_path / "short.pem", "short")


def test_a_server_key_is_pinned_at_first_use_and_a_change_is_told(tmp_path: Path) -> None:
    keys = ServerKeys(tmp_path / "known_keys")
    first, other = bytes([1]) * 32, bytes([2]) * 32
    assert keys.check("example.org:7601", first) is None
    assert keys.check("example.org:7601", first) is None
    change = keys.check("example.org:7601", other)
    assert change is not None and change.pinned == first and change.shown == other
    assert identity.fingerprint(other) in change.warning()
    assert len(change.short()) <= 80
    assert keys.check("example.org:7601", other) is not None  # (the pin stays)
    assert keys.check("other.example.org:7601", other) is None  # (per address)


def test_the_identity_command_shows_exports_and_imports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    assert cli.main(["identity"]) == 0
    shown = capsys.readouterr().out
    key = load(tmp_path / "config" / "oriflamme" / "identity.key")
    assert key is not None and describe(key) in shown
    secret = tmp_path / "passphrase"
    secret.write_text("a long passphrase\n")
    exported = tmp_path / "me.pem"
    assert cli.main(["identity", "export", str(exported), "--passphrase-file", str(secret)]) == 0
    capsys.readouterr()
    # Another machine: importing replaces no key without --force.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "elsewhere"))
    assert cli.main(["identity"]) == 0
    args = ["identity", "import", str(exported), "--passphrase-file", str(secret)]
    assert cli.main(args) == 2
    assert "--force" in capsys.readouterr().err
    assert cli.main([*args, "--force"]) == 0
    assert describe(key) in capsys.readouterr().out
    moved = load(tmp_path / "elsewhere" / "oriflamme" / "identity.key")
    assert moved is not None and describe(moved) == describe(key)

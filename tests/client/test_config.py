"""The player's name kept between runs (issue 25, item 6): asked once by
`play` and `join`, kept in the user's config, read back as it was written
(any name the protocol takes), the file's other lines left alone, and a
file that cannot be read taken as no name (asked again), never a crash."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oriflamme.client.config import (
    NAME_LIMIT,
    clean_name,
    default_config_file,
    read_name,
    write_name,
)


def test_the_config_file_is_where_xdg_says(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert default_config_file() == tmp_path / "oriflamme" / "config.toml"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_config_file() == tmp_path / "home" / ".config" / "oriflamme" / "config.toml"


def test_no_file_no_name_then_the_name_written_is_read_back(tmp_path: Path) -> None:
    path = tmp_path / "oriflamme" / "config.toml"
    assert read_name(path) is None
    write_name(path, "Ann")
    assert read_name(path) == "Ann"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # (as the client's other files)
    write_name(path, "Bob")
    assert read_name(path) == "Bob"
    assert path.read_text(encoding="utf-8") == 'name = "Bob"\n'


@given(st.text(min_size=1, max_size=40))
def test_any_name_comes_back_as_written(typed: str) -> None:
    import tempfile

    name = clean_name(typed)
    if not name:
        return
    assert len(name) <= NAME_LIMIT and name.isprintable() and name == name.strip()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "config.toml"
        write_name(path, name)
        assert read_name(path) == name


def test_other_lines_are_kept_and_a_broken_file_is_no_name(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('# mine\ncolour = "never"\nname="Old"\n', encoding="utf-8")
    assert read_name(path) == "Old"
    write_name(path, 'Zoë "the great"')
    assert read_name(path) == 'Zoë "the great"'
    assert "# mine" in path.read_text(encoding="utf-8")
    assert 'colour = "never"' in path.read_text(encoding="utf-8")
    for broken in (b"name = \n", b"\xff\xfe", b"name = 3\n", b'name = "   "\n'):
        path.write_bytes(broken)
        assert read_name(path) is None
    assert read_name(tmp_path) is None  # a directory, not a file

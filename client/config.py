"""The player's settings, kept between runs: the name the others see, and
the language the client speaks.

The file is ``$XDG_CONFIG_HOME/oriflamme/config.toml`` (``~/.config/...``
without it), TOML, written by `oriflamme play` and `oriflamme join` the
first time they ask for a name, and read by every later run; a person
may edit it. Only what this module knows is read; anything else in the
file is left as it is when the name is written again.

    name = "Ann"
    lang = "fr"      # `oriflamme language fr`; without it, the locale says

A file that cannot be read or parsed is not an error: the name is asked
again (and the file written anew only if it can be).
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

from .secret_store import write_private

NAME_LIMIT = 32  # as `hello.name` takes it


def config_dir() -> Path:
    """The player's config folder, by the XDG convention: the settings, the
    key (`client.identity`), the servers trusted (`client.tls`)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "oriflamme"


def default_config_file() -> Path:
    return config_dir() / "config.toml"


def clean_name(typed: str) -> str:
    """A name as the protocol takes it: printable, no space at either end,
    at most 32 characters; "" when nothing is left.

    >>> clean_name("  Ann\\x1b[2J  "), clean_name("\\t")
    ('Ann[2J', '')
    """
    return "".join(c for c in typed if c.isprintable()).strip()[:NAME_LIMIT].strip()


def read_setting(path: Path, key: str) -> str | None:
    """The string kept as `key` in `path`, or None (no file, no such
    setting, not a string, not readable)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    value = data.get(key)
    return value if isinstance(value, str) else None


def read_name(path: Path) -> str | None:
    """The name kept in `path`, or None (no file, no name, not readable)."""
    name = read_setting(path, "name")
    return (clean_name(name) or None) if name is not None else None


def write_setting(path: Path, key: str, value: str | None) -> None:
    """Keep `value` as `key` in `path` (None: forget it), with the file's
    other lines as they were. Raises OSError when it cannot be written."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        lines = []
    kept = [line for line in lines if not line.replace(" ", "").startswith(f"{key}=")]
    # A JSON string is a TOML basic string (the same escapes, \uXXXX too).
    said = [] if value is None else [f"{key} = {json.dumps(value, ensure_ascii=False)}"]
    write_private(path, ("\n".join([*said, *kept]) + "\n").encode("utf-8"))


def write_name(path: Path, name: str) -> None:
    """Keep `name` in `path`, with the file's other lines as they were.
    Raises OSError when it cannot be written."""
    write_setting(path, "name", name)

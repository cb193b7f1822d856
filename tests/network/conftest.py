"""Fixtures the network tests share."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.network.server_process import ServerProcess


@pytest.fixture
def served(tmp_path: Path) -> Iterator[ServerProcess]:
    """An `oriflamme serve` process on a data directory of its own, stopped
    after the test."""
    process = ServerProcess(tmp_path / "data")
    process.start()
    try:
        yield process
    finally:
        process.stop()

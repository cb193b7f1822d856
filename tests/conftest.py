"""What every test gets: the lobby's kept deadlines checked against a scan of
every room, at every call, so that an input that changes a room's deadline
without the lobby looking at that room again fails whichever test makes it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from oriflamme.server.core.lobby import Lobby

_kept_deadline = Lobby.next_deadline


def scanned_deadline(lobby: Lobby) -> float | None:
    """`Lobby.next_deadline` as it was before it kept the rooms' deadlines:
    every room asked."""
    times = [t for r in lobby.rooms.values() if (t := r.next_deadline()) is not None]
    ttl = lobby.config.session_ttl
    times += [
        s.disconnected_at + ttl
        for s in lobby.sessions.away.values()
        if s.disconnected_at is not None and not lobby._held(s)
    ]
    return min(times, default=None)


def _checked_deadline(lobby: Lobby) -> float | None:
    kept = _kept_deadline(lobby)
    scanned = scanned_deadline(lobby)
    assert kept == scanned, f"the lobby kept deadline {kept}, but its rooms say {scanned}"
    return kept


@pytest.fixture(autouse=True)
def _deadlines_checked(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(Lobby, "next_deadline", _checked_deadline)
    yield

"""The replay screen at 80x24: every step of a sample record, nothing cut."""

from __future__ import annotations

from pathlib import Path

from oriflamme.client.replay import replay_steps
from oriflamme.client.tui.replay_screen import DESCRIBED_ROWS, ReplayController
from oriflamme.client.tui.text import cells
from oriflamme.protocol.record import decode_record
from oriflamme.protocol.verify import verify_record

from .helpers import text

SAMPLE = Path(__file__).parents[3] / "docs" / "records" / "honest-3-players.oriflamme"


def test_each_step_is_said_in_full_or_cut_visibly_and_the_scores_never_cut() -> None:
    record = decode_record(SAMPLE.read_bytes())
    steps = replay_steps(record)
    replay = ReplayController(record, steps, verify_record(record), SAMPLE.name)
    longest = 0
    for at in range(len(steps)):
        replay.at = at
        shown = [text(line) for line in replay.lines(80, 24)]
        assert len(shown) == 24 and all(cells(line) == 80 for line in shown), at
        said = " ".join(replay._named(steps[at].description).split())
        flat = " ".join(" ".join(shown).split())
        longest = max(longest, len(said))
        if len(said) < 70 * DESCRIBED_ROWS:  # what fits is said whole
            assert said in flat, (at, said)
        else:
            assert said[:60] in flat and "…" in flat, at
    assert longest > 80  # some steps do need a second line
    flat = " ".join(" ".join(text(line) for line in replay.lines(80, 24)).split())
    for place, seat in enumerate(sorted(range(3), key=lambda s: -record.results.scores[s]), 1):
        assert f"{place}. {replay.names[seat]} {record.results.scores[seat]}" in flat

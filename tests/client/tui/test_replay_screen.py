"""The replay screen at 80x24: every step of a sample record, nothing cut."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from oriflamme.client.replay import replay_steps
from oriflamme.client.tui.replay_screen import DESCRIBED_ROWS, ReplayController
from oriflamme.client.tui.screen import wrap
from oriflamme.client.tui.text import cells
from oriflamme.protocol.record import Record, decode_record
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
        else:  # (said whole when the lines' breaks allow it)
            assert said in flat or (said[:60] in flat and "…" in flat), at
    assert longest > 80  # some steps do need a second line
    flat = " ".join(" ".join(text(line) for line in replay.lines(80, 24)).split())
    for place, seat in enumerate(sorted(range(3), key=lambda s: -record.results.scores[s]), 1):
        assert f"{place}. {replay.names[seat]} {record.results.scores[seat]}" in flat


def _replay(record: Record) -> ReplayController:
    steps = replay_steps(record)
    return ReplayController(record, steps, verify_record(record), SAMPLE.name)


def test_a_description_cut_among_wide_characters_still_shows_its_ellipsis() -> None:
    # East Asian wide characters take two cells each: the line kept is cut by
    # cells, so that what ends it (the "…" saying there is more) is seen.
    record = decode_record(SAMPLE.read_bytes())
    replay = _replay(record)
    # its second line: 3 cells of indent, 43 of wide characters and 35 more
    long = "a" * 70 + " " + "山" * 20 + " " + "b" * 35 + " and more words after that"
    replay.steps[1] = replace(replay.steps[1], description=long)
    replay.at = 1
    assert len(wrap(" " + long, 79, "   ")) > DESCRIBED_ROWS
    shown = [text(line) for line in replay.lines(80, 24)]
    assert all(cells(line) == 80 for line in shown)
    footer = [text(line) for line in replay.scene(80).footer]
    assert footer[DESCRIBED_ROWS].rstrip().endswith("b …")
    assert "山" * 20 in footer[DESCRIBED_ROWS]


def test_the_final_ranking_puts_the_winner_of_a_tie_first_as_the_game_screen_does() -> None:
    record = decode_record(SAMPLE.read_bytes())
    # seats 0 and 1 tie on 9; seat 1 won the tie-break (ruling 17)
    steps = replay_steps(record)
    results = replace(record.results, scores=(9, 9, 5), winners=(1,))
    tied = replace(record, results=results)
    replay = ReplayController(tied, steps, verify_record(record), SAMPLE.name)
    replay.at = len(replay.steps) - 1
    flat = " ".join(" ".join(text(line) for line in replay.lines(80, 24)).split())
    names = replay.names
    assert f"1. {names[1]} 9 (winner)" in flat
    assert f"2. {names[0]} 9 3. {names[2]} 5" in flat

"""The replay model: a finished game's record, step by step, every card shown."""

from __future__ import annotations

import dataclasses
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from oriflamme.client.narrator import EventLog, kind_name
from oriflamme.client.replay import ReplayError, ReplayStep, replay_steps
from oriflamme.engine import Event, from_data, mask_event, to_data
from oriflamme.engine.events import Revealed
from oriflamme.launcher.inprocess import play_recorded_game
from oriflamme.protocol.record import Record, decode_record

RECORDS = Path(__file__).resolve().parents[2] / "docs" / "records"

GAMES = [
    (2, "two-player", "revised", 1),
    (2, "two-player", "first", 2),
    (3, "standard", "revised", 3),
    (3, "standard", "first", 4),
    (4, "standard", "revised", 5),
    (4, "standard", "revised", 6),
    (5, "standard", "revised", 7),
    (5, "standard", "first", 8),
]


@cache
def recorded(players: int, variant: str, edition: str, seed: int) -> Record:
    data = play_recorded_game(
        players,
        variant=variant,
        edition=edition,
        strategies=["heuristic", "random"],
        seed=seed,
    )
    return decode_record(data)


def sample(name: str) -> Record:
    return decode_record((RECORDS / f"{name}.oriflamme").read_bytes())


def masked_events(steps: list[ReplayStep]) -> list[Event]:
    return [mask_event(e, None) for step in steps for e in step.events]


def same_events(a: list[Event], b: tuple[Event, ...] | list[Event]) -> bool:
    # NamedTuples compare as plain tuples: compare the types too.
    return len(a) == len(b) and all(
        type(x) is type(y) and x == y for x, y in zip(a, b, strict=True)
    )


def cards_in_play(position: dict[str, Any]) -> list[list[str | None]]:
    queue = [c["card"] for slot in position["queue"] for c in slot]
    return queue + [c for front in position["fronts"] for c in front]


def check_replay(record: Record, steps: list[ReplayStep]) -> None:
    """What every replay holds: a step per log entry and the deal, the record's
    events and results."""
    assert len(steps) == len(record.log) + 1
    assert steps[0].events == () and steps[0].actor is None
    assert [s.actor for s in steps[1:]] == [e.seat for e in record.log]
    assert same_events(masked_events(steps), record.events)
    final = steps[-1].position
    assert final["step"] == "over" or not record.results.complete  # (ended by vote)
    assert tuple(final["scores"]) == record.results.scores
    assert tuple(final["winners"]) == record.results.winners
    assert all(s.description for s in steps)


@pytest.mark.parametrize(("players", "variant", "edition", "seed"), GAMES)
def test_a_replay_shows_every_card_and_reproduces_the_record(
    players: int, variant: str, edition: str, seed: int
) -> None:
    record = recorded(players, variant, edition, seed)
    steps = replay_steps(record)
    check_replay(record, steps)
    hand_size = 6 if variant == "two-player" else 7
    deal = steps[0].position
    assert deal["step"] == "direction" and deal["queue"] == []
    assert "backs" not in steps[0].description
    for seat in range(players):
        assert len(deal["hands"][seat]) == hand_size
        assert all(kind is not None for _, kind in deal["hands"][seat] + deal["set_aside"][seat])
        assert all(kind is not None for _, kind in deal["draw_piles"][seat])
    for step in steps:
        assert all(kind is not None for _, kind in cards_in_play(step.position))
        for event in step.events:  # placements and draws show the real cards
            cards = [
                *getattr(event, "cards", ()),
                *([event.card] if hasattr(event, "card") else []),
            ]
            assert all(c.kind is not None for c in cards)


@pytest.mark.parametrize(("players", "variant", "edition", "seed"), GAMES[::3])
def test_every_position_is_a_full_information_game(
    players: int, variant: str, edition: str, seed: int
) -> None:
    for step in replay_steps(recorded(players, variant, edition, seed)):
        assert to_data(from_data(step.position)) == step.position


def test_an_opening_the_engine_did_not_need_is_a_step_that_changes_nothing() -> None:
    record = recorded(3, "standard", "revised", 3)
    steps = replay_steps(record)
    openings = [
        i + 1
        for i, e in enumerate(record.log)
        if e.action is not None and e.pid is not None and e.nonce is not None
    ]
    assert openings
    for i in openings:
        assert steps[i].events == ()
        assert steps[i].position == steps[i - 1].position
        assert "opened its eliminated card" in steps[i].description
    reveals = [s for s in steps if s.description.split(" ")[2:3] == ["revealed"]]
    assert reveals and all(any(type(e) is Revealed for e in s.events) for s in reveals)


def test_steps_describe_what_happened_in_plain_words() -> None:
    steps = replay_steps(sample("honest-3-players"))
    assert steps[0].description.startswith("the deal: 3 players, standard game, revised edition")
    assert steps[1].description.startswith("seat 0 chose the direction: ")
    assert steps[2].description == "seat 0 placed red Lord in the empty queue"
    # What a decision caused is the log's (one narrator), not the step's sentence.
    assert not any("is eliminated" in s.description for s in steps)
    log = EventLog(lambda seat: f"seat {seat}")
    for step in steps:
        log.add(step.events)
    assert "── The game is over" in log.lines and any(" eliminated " in x for x in log.lines)


@pytest.mark.parametrize("name", sorted(p.stem for p in RECORDS.glob("*.oriflamme")))
def test_the_sample_records_replay(name: str) -> None:
    record = sample(name)
    check_replay(record, replay_steps(record))


def test_a_seat_that_never_revealed_its_seed_is_replayed_with_backs() -> None:
    record = sample("away-and-left")  # seat 2 left: the stand-in played it to the end
    assert record.seeds[2] is None
    steps = replay_steps(record)
    check_replay(record, steps)
    assert "seat 2's cards are backs until opened (its seed was never revealed)" in (
        steps[0].description
    )
    deal = steps[0].position
    assert all(kind is None for _, kind in deal["hands"][2])
    assert all(kind is not None for _, kind in deal["hands"][0] + deal["hands"][1])
    # The other seats' cards are all shown; seat 2's as soon as the record knows them.
    for step in steps:
        for slot in step.position["queue"]:
            for c in slot:
                assert c["card"][1] is not None or c["owner"] == 2


def test_a_seed_taken_away_from_an_honest_record_only_hides_that_seat() -> None:
    record = recorded(4, "standard", "revised", 5)
    seeds = list(record.seeds)
    seeds[1] = None
    steps = replay_steps(dataclasses.replace(record, seeds=tuple(seeds)))
    check_replay(record, steps)
    assert "seat 1's cards are backs" in steps[0].description
    assert "seat 0's" not in steps[0].description
    hands = steps[0].position["hands"]
    assert all(kind is None for _, kind in hands[1])
    assert all(kind is not None for seat in (0, 2, 3) for _, kind in hands[seat])
    # Every card seat 1 placed was opened at some time: shown from its placement on.
    for step in steps:
        assert all(kind is not None for _, kind in cards_in_play(step.position))


def test_a_settled_card_hides_its_seat_unless_it_was_the_real_one() -> None:
    record = sample("settled-openings")  # seat 2's card 15 was settled
    steps = replay_steps(record)
    check_replay(record, steps)
    assert "seat 2's cards are backs until opened" in steps[0].description
    assert "the server settled seat 2's eliminated card" in " ".join(s.description for s in steps)


def test_a_false_seed_hides_its_seat() -> None:
    record = sample("false-final-reveal")
    steps = replay_steps(record)
    check_replay(record, steps)
    assert "seat 0's cards are backs until opened (its seed does not open its commitment)" in (
        steps[0].description
    )


def test_a_record_whose_log_does_not_replay_is_refused() -> None:
    record = recorded(3, "standard", "revised", 3)
    cut = dataclasses.replace(record, log=record.log[:-5])
    with pytest.raises(ReplayError, match="cannot be replayed"):
        replay_steps(cut)
    wrong = dataclasses.replace(record, events=record.events[:3] + record.events[4:])
    with pytest.raises(ReplayError, match="verify"):
        replay_steps(wrong)


def test_captions_name_places_in_the_queue_not_card_ids() -> None:
    """Issue 25: a caption said "Bob revealed card 15"; a player knows where
    a card is, not its id."""
    steps = replay_steps(sample("honest-3-players"))
    captions = [s.description for s in steps]
    assert not [c for c in captions if re.search(r"\bcard \d", c)]
    reveals = [c for c in captions if " revealed the card at place " in c]
    assert reveals
    for before, caption in zip(steps, captions[1:], strict=False):
        found = re.search(r"revealed the card at place (\d+): (.+?)(;|$)", caption)
        if found:  # that place held the card named when the step began
            place, name = int(found[1]), found[2]
            top = before.position["queue"][place - 1][-1]
            assert name.endswith(kind_name(str(top["card"][1]))), caption

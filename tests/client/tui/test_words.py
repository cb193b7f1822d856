"""The log's words: who did what with which card, one event a line."""

from __future__ import annotations

from oriflamme.client.narrator import EventLog
from oriflamme.engine import event_from_data

NAMES = ["You", "Bo", "Cy"]


def log_of(events: list[dict]) -> list[str]:
    """The log's lines for `events`, written as their data (the wire's form)."""
    log = EventLog(lambda seat: NAMES[seat], me=lambda: 0)
    log.add(event_from_data(e) for e in events)
    return log.lines


def test_a_card_scoring_by_its_own_ability_names_the_card() -> None:
    lines = log_of(
        [
            {
                "type": "placed",
                "seat": 1,
                "pid": 4,
                "card": ["blue", None],
                "at": "last",
                "slot": 0,
            },
            {"type": "revealed", "seat": 1, "pid": 4, "card": ["blue", "heir"], "tokens": 0},
            {"type": "ability_used", "seat": 1, "pid": 4, "ability": "heir", "target": None},
            {"type": "scored", "seat": 1, "points": 2, "reason": "heir"},
        ]
    )
    assert lines[1:] == ["Bo revealed an Heir", "Bo's Heir: +2"]


def test_a_spy_steals_from_you_in_plain_words() -> None:
    lines = log_of(
        [
            {
                "type": "placed",
                "seat": 2,
                "pid": 1,
                "card": ["green", "spy"],
                "at": "first",
                "slot": 0,
            },
            {"type": "ability_used", "seat": 2, "pid": 1, "ability": "spy", "target": 0},
            {"type": "stolen", "seat": 2, "victim": 0, "points": 1},
        ]
    )
    assert lines[-1] == "Cy's Spy stole 1 point from you"


def test_revealing_says_the_influence_on_the_card_not_points_taken() -> None:
    lines = log_of(
        [
            {
                "type": "placed",
                "seat": 0,
                "pid": 0,
                "card": ["red", None],
                "at": "first",
                "slot": 0,
            },
            {"type": "revealed", "seat": 0, "pid": 0, "card": ["red", "ambush"], "tokens": 5},
            {"type": "scored", "seat": 0, "points": 1, "reason": "ambush"},
        ]
    )
    assert lines[1:] == ["You revealed an Ambush (5 ◆ on it)", "  You +1 (Ambush)"]


def test_an_archer_that_shoots_itself_eliminated_itself() -> None:
    """Ruling 7: alone (or last), an Archer may eliminate itself; the log
    does not name the card twice."""
    lines = log_of(
        [
            {
                "type": "placed",
                "seat": 2,
                "pid": 3,
                "card": ["green", None],
                "at": "last",
                "slot": 0,
            },
            {"type": "revealed", "seat": 2, "pid": 3, "card": ["green", "archer"], "tokens": 0},
            {"type": "ability_used", "seat": 2, "pid": 3, "ability": "archer", "target": 3},
            {
                "type": "eliminated",
                "pid": 3,
                "card": ["green", "archer"],
                "owner": 2,
                "by": 3,
                "by_seat": 2,
                "tokens": 0,
            },
            {"type": "scored", "seat": 2, "points": 1, "reason": "eliminate"},
        ]
    )
    assert lines[-2:] == ["Cy's Archer eliminated itself", "  Cy +1 (elimination)"]


def spy_of(seat: int, card: list[str | None]) -> list[dict]:
    """Seat `seat` places `card` (a Spy, seen or not) and its ability acts."""
    return [
        {"type": "placed", "seat": seat, "pid": 1, "card": card, "at": "first", "slot": 0},
        {"type": "ability_used", "seat": seat, "pid": 1, "ability": "spy", "target": 0},
    ]


def test_a_spy_next_to_its_owner_s_cards_alone_steals_nothing_and_says_so() -> None:
    """Issue 25: it said "Your Spy stole 0 from you"."""
    mine = log_of(
        [*spy_of(0, ["red", "spy"]), {"type": "stolen", "seat": 0, "victim": 0, "points": 0}]
    )
    assert mine[-1] == "Your Spy had only your cards next to it: nothing stolen"
    bos = log_of(
        [*spy_of(1, ["blue", "spy"]), {"type": "stolen", "seat": 1, "victim": 1, "points": 0}]
    )
    assert bos[-1] == "Bo's Spy had only Bo's cards next to it: nothing stolen"


def test_a_spy_stealing_from_a_player_with_no_point_says_there_was_none() -> None:
    lines = log_of(
        [*spy_of(2, ["green", "spy"]), {"type": "stolen", "seat": 2, "victim": 0, "points": 0}]
    )
    assert lines[-1] == "Cy's Spy found nothing to steal: you had no point"


def test_a_card_kept_face_down_is_theirs_not_named_twice() -> None:
    """Issue 25: it said "Bot 2 kept Bot 2's Conspiracy face down"."""
    placed = {"type": "placed", "seat": 1, "pid": 2, "at": "first", "slot": 0}
    seen = log_of(
        [
            {**placed, "card": ["blue", "conspiracy"]},  # (a card a replay knows)
            {"type": "kept", "seat": 1, "pid": 2, "tokens": 3},
        ]
    )
    assert seen[-1] == "Bo kept their Conspiracy face down (3 ◆ on it)"
    ours = log_of(
        [
            {**placed, "seat": 0, "card": ["red", "heir"]},
            {"type": "kept", "seat": 0, "pid": 2, "tokens": 1},
        ]
    )
    assert ours[-1] == "You kept your Heir face down (1 ◆ on it)"


def test_a_player_named_you_is_not_narrated_as_us() -> None:
    """The log says "you" for our seat (`me`), not for a name that reads so."""
    log = EventLog(lambda seat: ["Ann", "You"][seat], me=lambda: 0)
    log.add([event_from_data({"type": "stolen", "seat": 0, "victim": 1, "points": 1})])
    log.add([event_from_data({"type": "stolen", "seat": 1, "victim": 0, "points": 1})])
    assert log.lines == ["Ann stole 1 point from You", "You stole 1 point from you"]

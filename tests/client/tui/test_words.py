"""The log's words: who did what with which card, one event a line."""

from __future__ import annotations

from oriflamme.client.tui.words import EventLog

NAMES = ["You", "Bo", "Cy"]


def log_of(events: list[dict]) -> list[str]:
    log = EventLog(lambda seat: NAMES[seat])
    log.add(events)
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
    assert lines[-1] == "Cy's Spy stole 1 from you"


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

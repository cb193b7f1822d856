"""`choices.Chooser`: keys to decisions.

In real games (2 to 5 players) every legal option of every decision of
seat 0 is reachable by its keys, and no key sequence gives anything else;
the keys that pick each option are worked out here from the screen's rules
(numbers are positions in resolution order, the arrows are the ends of the
queue as drawn) and checked against the chooser. Hand-built positions check
what a key that picks nothing says, two-digit positions, and the arrows of
a queue resolved right to left.
"""

from __future__ import annotations

import copy

import pytest

from oriflamme.client.tui.choices import BACKSPACE, ENTER, ESCAPE, LEFT, RIGHT, Chooser
from oriflamme.engine import (
    ChooseDirection,
    Game,
    Keep,
    MoveTo,
    Place,
    Reveal,
    Target,
    card,
)
from tests.engine.builders import position

from .helpers import KEYS, NAMES, chooser_of, keys_for, press_all, reachable, walk

TABLES = [(2, 21), (2, 22), (3, 23), (3, 24), (4, 25), (5, 26), (5, 27)]


def our_decisions(players: int, seed: int) -> list[Game]:
    """Copies of the game at each decision of seat 0 (openings are automatic)."""
    out = []
    for g, _ in walk(players, seed):
        d = g.decision
        if d is not None and d.seat == 0 and d.kind != "open":
            out.append(copy.deepcopy(g))
    return out


DECISIONS = {table: our_decisions(*table) for table in TABLES}


def test_the_real_games_hold_every_kind_of_decision() -> None:
    kinds = {str(g.decision.kind) for games in DECISIONS.values() for g in games}
    assert kinds >= {"direction", "place", "reveal", "eliminate", "steal", "move_card", "move_to"}


# ---------------------------------------------------------------- real games


@pytest.mark.parametrize("table", TABLES)
def test_each_option_is_picked_by_its_keys(table: tuple[int, int]) -> None:
    for g in DECISIONS[table]:
        for action in g.decision.options:
            chooser = chooser_of(g)
            keys = keys_for(chooser, action)
            assert press_all(chooser, keys) == action, (g.decision.kind, keys)


@pytest.mark.parametrize("table", TABLES)
def test_every_option_is_reachable_and_nothing_else(table: tuple[int, int]) -> None:
    for g in DECISIONS[table]:
        found, _ = reachable(chooser_of(g))
        assert found == set(g.decision.options), g.decision.kind


@pytest.mark.parametrize("table", TABLES)
def test_a_key_that_picks_nothing_says_why(table: tuple[int, int]) -> None:
    for g in DECISIONS[table]:
        for key in KEYS:
            chooser = chooser_of(g)
            offers = chooser.offers()
            action = chooser.press(key)
            if action is not None:
                assert action in g.decision.options
                continue
            moved_on = chooser.card is not None or chooser.digits != ""
            if not moved_on and key != BACKSPACE:
                assert chooser.status, (g.decision.kind, key)
                assert chooser.offers() == offers  # nothing changed


@pytest.mark.parametrize("table", TABLES)
def test_the_offers_name_the_queue_positions(table: tuple[int, int]) -> None:
    for g in DECISIONS[table]:
        chooser = chooser_of(g)
        d = g.decision
        keys = [o.key for o in chooser.offers()]
        tops = [slot[-1].pid for slot in g.queue]
        if d.kind in ("eliminate", "steal", "copy", "move_card"):
            assert keys == [str(tops.index(a.pid) + 1) for a in d.options]
            assert chooser.highlighted == {int(k) for k in keys}
        elif d.kind == "move_to":
            assert keys == [str(a.index + 1) for a in d.options]
            assert chooser.highlighted == set()
        elif d.kind == "reveal":
            assert keys == ["r", "k"]
        elif d.kind == "direction":
            assert keys == ["l", "r"]
        else:
            hand = list(dict.fromkeys(a.card for a in d.options))
            assert keys == [str(i + 1) for i in range(len(hand))]
            assert chooser.highlighted == set()


def test_no_key_sequence_raises_in_real_games() -> None:
    problems = []
    for table in TABLES:
        for g in DECISIONS[table]:
            problems += reachable(chooser_of(g))[1]
    assert problems == []


# ---------------------------------------------------------------- hand-built positions

# 13 slots: red is seat 0 (Ann), blue seat 1 (Bo), green seat 2 (Cy).
LONG = [
    "blue lord",
    "green lord",
    "blue spy",
    "green spy",
    "blue heir",
    "green heir",
    "blue archer",
    "green archer",
    "blue ambush",
    "green ambush",
    "blue conspiracy",
    "red soldier up",
    "green conspiracy",
]


def chooser_at(g: Game) -> Chooser:
    chooser = chooser_of(g)
    assert chooser.kind == g.decision.kind
    return chooser


def test_two_digit_positions() -> None:
    queue = [*LONG[:11], "red assassination up", "green conspiracy"]
    g = position(queue, step="eliminate", index=11, ability="assassination")
    pid = [slot[-1].pid for slot in g.queue]
    chooser = chooser_at(g)
    assert [o.key for o in chooser.offers()] == [str(i) for i in range(1, 14)]
    assert chooser.press("1") is None
    assert chooser.status == "1: press Enter to choose 1, or type the next digit"
    assert chooser.press("2") == Target(pid[11])
    chooser = chooser_at(g)
    assert chooser.press("1") is None and chooser.press(ENTER) == Target(pid[0])
    chooser = chooser_at(g)
    assert chooser.press("1") is None and chooser.press("3") == Target(pid[12])
    chooser = chooser_at(g)
    assert chooser.press("9") == Target(pid[8])  # no longer number starts with 9
    chooser = chooser_at(g)
    assert chooser.press("1") is None and chooser.press("4") is None
    assert chooser.status == "There is no card 14 in the queue"
    assert chooser.digits == ""
    assert chooser.press("1") is None and chooser.press(ESCAPE) is None
    assert chooser.digits == "" and chooser.press("3") == Target(pid[2])
    chooser = chooser_at(g)
    chooser.press("1")
    chooser.press(BACKSPACE)
    assert chooser.digits == "" and chooser.press("2") == Target(pid[1])


def test_a_first_digit_waits_for_the_second() -> None:
    queue = [*LONG[:11], "red soldier up", "green conspiracy"]
    g = position(queue, step="eliminate", index=11, ability="soldier")
    chooser = chooser_at(g)
    assert [o.key for o in chooser.offers()] == ["11", "13"]
    assert chooser.press("1") is None and chooser.status == "1…: type the next digit"
    assert chooser.press("3") == Target(g.queue[12][-1].pid)


def test_enter_after_a_first_digit_that_is_no_position() -> None:
    queue = [*LONG[:11], "red soldier up", "green conspiracy"]
    g = position(queue, step="eliminate", index=11, ability="soldier")
    chooser = chooser_at(g)
    assert chooser.press("1") is None
    assert chooser.press(ENTER) is None
    assert chooser.status  # says what to type
    assert chooser.press("1") is None and chooser.press("1") == Target(g.queue[10][-1].pid)


def test_refusals_say_why_in_plain_words() -> None:
    # Round 2, Ann (red) places: slots 1 (hers), 2 (Bo's), 3 (hers, face up).
    g = position(
        ["red spy", "blue lord", "red heir up"],
        round=2,
        hands=[["red archer", "red lord", "red ambush"], ["blue spy"], ["green spy"]],
    )
    chooser = chooser_at(g)
    assert chooser.press("x") is None
    assert chooser.status == "x does nothing now: press one of the keys listed above"
    assert chooser.press("7") is None
    assert chooser.status == "You have no card 7 in hand: press 1-3"
    assert chooser.press(LEFT) is None and "does nothing now" in chooser.status
    assert chooser.press(ESCAPE) is None and chooser.status == "nothing to undo"
    assert chooser.press(ENTER) is None and chooser.status.startswith("Enter does nothing now")
    assert chooser.press("2") is None and chooser.status == ""
    assert chooser.card == card("red", "lord")
    assert chooser.title == "place your Lord: where?"
    assert [o.key for o in chooser.offers()] == [LEFT, RIGHT, "1", "3"]
    assert chooser.highlighted == {1, 3}
    assert chooser.press("2") is None
    assert chooser.status == "Card 2 is not yours: you can cover only your own cards"
    assert chooser.press("5") is None
    assert chooser.status == "There is no card 5 in the queue"
    assert chooser.press("k") is None and "k does nothing now" in chooser.status
    assert chooser.card == card("red", "lord")  # still choosing where
    assert chooser.press(ESCAPE) is None and chooser.card is None  # back to the hand
    assert chooser.title == "place a card"
    assert press_all(chooser, ["3", "3"]) == Place(card("red", "ambush"), g.queue[2][-1].pid)


def test_in_round_1_cards_go_at_either_end() -> None:
    g = position(
        ["red spy", "blue lord"],
        round=1,
        placed=2,
        hands=[["red archer"], ["blue spy"], ["green spy"]],
        first_player=1,
    )
    assert g.decision.seat == 0
    chooser = chooser_at(g)
    assert chooser.press(ENTER) is None  # the only card
    assert [o.key for o in chooser.offers()] == [LEFT, RIGHT]
    assert chooser.press("1") is None
    assert chooser.status == "In round 1 cards go at either end, not on top of others"
    assert chooser.press("2") is None
    assert chooser.status.startswith("Card 2 is not yours")


def test_the_two_player_variant_covers_only_a_card_of_the_same_family() -> None:
    g = position(
        ["red spy", "green lord", "blue heir"],
        players=2,
        variant="two-player",
        round=2,
        hands=[["red archer", "blue lord"], ["green spy"]],
    )
    chooser = chooser_at(g)
    # the hand by family, as drawn: blue, then red
    assert chooser.press("2") is None and chooser.card == card("red", "archer")
    assert [o.key for o in chooser.offers()] == [LEFT, RIGHT, "1"]
    assert chooser.press("3") is None
    assert chooser.status == "Card 3 cannot be covered with your red card"
    chooser.press(ESCAPE)
    assert chooser.press("1") is None and chooser.card == card("blue", "lord")
    assert chooser.press("1") is None
    assert chooser.status == "Card 1 cannot be covered with your blue card"
    assert chooser.press("3") == Place(card("blue", "lord"), g.queue[2][-1].pid)


@pytest.mark.parametrize(
    ("step", "ability", "index", "refused", "words"),
    [
        ("eliminate", "soldier", 2, "1", "Card 1 cannot be eliminated now"),
        ("steal", "spy", 2, "5", "Card 5 cannot be stolen from now"),
        ("copy", "shapeshifter", 2, "1", "Card 1 cannot be copied now"),
        ("move_card", "royal_decree", 2, "3", "Card 3 cannot be chosen now"),
        ("eliminate", "archer", 2, "2", "Card 2 cannot be eliminated now"),
    ],
)
def test_a_card_that_cannot_be_chosen(
    step: str, ability: str, index: int, refused: str, words: str
) -> None:
    queue = ["blue lord", "green spy up", f"red {ability} up", "blue soldier up", "green heir"]
    g = position(queue, step=step, index=index, ability=ability)
    chooser = chooser_at(g)
    targets = [o.key for o in chooser.offers()]
    assert refused not in targets
    assert chooser.press(refused) is None and chooser.status == words
    assert chooser.press("8") is None and chooser.status == "There is no card 8 in the queue"
    assert chooser.press("x") is None and "x does nothing now" in chooser.status
    for key in targets:
        assert chooser_at(g).press(key) == Target(g.queue[int(key) - 1][-1].pid)


def test_move_to_names_the_new_position() -> None:
    queue = ["blue lord", "green spy up", "red royal_decree up", "blue soldier up", "green heir"]
    g = position(queue, step="move_to", index=2, ability="royal_decree", chosen=0)
    chooser = chooser_at(g)
    assert [o.key for o in chooser.offers()] == ["2", "3", "4", "5"]
    # said with the positions shown now, the Lord (1) gone from its place
    assert [o.label for o in chooser.offers()] == [
        "between 2 and 3",
        "between 3 and 4",
        "between 4 and 5",
        "the last end (after 5)",
    ]
    assert chooser.press("1") is None
    assert chooser.status == "The card cannot go to position 1"
    assert chooser.press("4") == MoveTo(3)


def test_reveal_or_keep() -> None:
    g = position(["red heir 2t", "blue lord"], step="reveal", index=0)
    chooser = chooser_at(g)
    assert [o.shown for o in chooser.offers()] == [
        "[r] reveal: gain 4 points (2 ◆ on it, Heir 2: no other Heir face up)",
        "[k] keep it face down (+1 ◆)",
    ]
    assert chooser.press("1") is None and chooser.status
    assert chooser.press("r") == Reveal()
    assert chooser_at(g).press("k") == Keep()
    ambush = chooser_at(position(["red ambush", "blue lord"], step="reveal", index=0))
    assert ambush.offers()[0].label == "reveal: gain 1, then discard it"


@pytest.mark.parametrize(
    ("queue", "index", "said"),
    [
        (["red conspiracy 2t", "blue lord"], 0, "reveal: gain 4 points, then discard it"),
        (["red conspiracy", "blue lord"], 0, "reveal: gain nothing (no ◆ on it), then discard it"),
        (["red ambush 3t"], 0, "reveal: gain 1, then discard it (its 3 ◆ go back)"),
        (["red lord", "blue spy"], 0, "reveal: gain 1 point (Lord 1)"),
        (
            ["red spy", "red lord 1t", "red ambush up"],
            1,
            "reveal: gain 4 points (1 ◆ on it, Lord 3: cards of yours on both sides)",
        ),
        (
            ["blue spy", "red lord", "red ambush"],
            1,
            "reveal: gain 2 points (Lord 2: a card of yours next to it)",
        ),
        (
            ["blue heir up", "red heir 2t"],
            1,
            "reveal: gain 2 points (2 ◆ on it, Heir 0: another Heir is face up)",
        ),
        (["blue heir", "red heir"], 1, "reveal: gain 2 points (Heir 2: no other Heir face up)"),
        (
            ["red archer 1t", "blue lord"],
            0,
            "reveal: gain 1 (the ◆ on it), then eliminate the first or the last card of the queue",
        ),
        (["red soldier", "blue lord"], 0, "reveal, then eliminate a card next to it"),
    ],
)
def test_reveal_says_what_it_gains(queue: list[str], index: int, said: str) -> None:
    """The reveal line gives the points it would gain (rulings 10, 11, 15,
    16): not the card's text."""
    chooser = chooser_at(position(queue, step="reveal", index=index))
    assert chooser.offers()[0].label == said


@pytest.mark.parametrize(
    ("queue", "index", "kind", "ability", "heading"),
    [
        (
            ["blue lord", "red archer up", "blue heir"],
            1,
            "eliminate",
            "archer",
            "Your Archer: eliminate the first or the last card of the queue",
        ),
        (
            ["blue spy up", "red shapeshifter up", "green soldier up"],
            1,
            "eliminate",
            "soldier",
            "Your Shapeshifter, as a Soldier: eliminate a card next to it",
        ),
        (
            ["blue lord up", "red shapeshifter up", "green spy up"],
            1,
            "copy",
            "shapeshifter",
            "Your Shapeshifter: copy a face-up Character next to it",
        ),
        (
            ["blue lord", "red spy up", "green heir"],
            1,
            "steal",
            "spy",
            "Your Spy: steal 1 from the owner of a card next to it",
        ),
        (
            ["blue lord", "red assassination up", "green heir"],
            1,
            "eliminate",
            "assassination",
            "Your Assassination: eliminate any card of the queue",
        ),
        (
            ["blue lord", "red royal_decree up", "green heir"],
            1,
            "move_card",
            "royal_decree",
            "Your Royal Decree: move another card of the queue",
        ),
    ],
)
def test_a_target_choice_names_the_acting_card(
    queue: list[str], index: int, kind: str, ability: str, heading: str
) -> None:
    chooser = chooser_at(position(queue, step=kind, index=index, ability=ability))
    assert chooser.heading == heading
    assert len(f"─ {heading} ─") <= 80


def test_where_a_royal_decree_moves_a_card_names_it() -> None:
    queue = ["blue lord", "green spy up", "red royal_decree up", "blue soldier up", "green heir"]
    g = position(queue, step="move_to", index=2, ability="royal_decree", chosen=1)
    assert chooser_at(g).heading == "Your Royal Decree: where does Cy's Spy go?"


def test_a_spy_says_what_each_card_would_steal() -> None:
    """Two cards of the same owner next to a Spy: both offered, each saying
    what it steals (from the owner's score), and 0 said as 0 (ruling 9)."""
    g = position(
        ["blue lord", "red spy up", "blue heir"],
        step="steal",
        index=1,
        ability="spy",
        scores=[1, 6, 1],
    )
    assert [o.shown for o in chooser_at(g).offers()] == [
        "[1] Bo's face-down card: steal 1 of Bo's 6 points",
        "[3] Bo's face-down card: steal 1 of Bo's 6 points",
    ]
    g = position(
        ["blue lord", "red spy up", "green heir"],
        step="steal",
        index=1,
        ability="spy",
        scores=[1, 0, 1],
    )
    assert [o.label for o in chooser_at(g).offers()] == [
        "Bo's face-down card: nothing to steal, Bo has 0",
        "Cy's face-down card: steal 1 of Cy's 1 point",
    ]


def test_the_direction() -> None:
    g = position([], round=1, direction=None, step="direction")
    chooser = chooser_at(g)
    assert [o.shown for o in chooser.offers()] == ["[l] left to right", "[r] right to left"]
    assert chooser.press("l") == ChooseDirection("left-to-right")
    assert chooser_at(g).press("r") == ChooseDirection("right-to-left")
    other = chooser_at(g)
    assert other.press(LEFT) is None and other.status


def test_the_first_card_goes_in_the_middle_with_enter() -> None:
    g = position(
        [], round=1, hands=[["red archer", "red spy"], ["blue spy"], ["green spy"]], step="place"
    )
    chooser = chooser_at(g)
    assert chooser.press("2") is None
    assert [o.shown for o in chooser.offers()] == ["[Enter] the middle (the queue is empty)"]
    assert chooser.press(LEFT) is None and chooser.status
    assert chooser.press(ENTER) == Place(card("red", "spy"), "first")


@pytest.mark.parametrize("direction", ["left-to-right", "right-to-left"])
def test_the_arrows_are_the_ends_of_the_queue_as_drawn(direction: str) -> None:
    g = position(
        ["red spy", "blue lord"],
        direction=direction,
        hands=[["red archer"], ["blue spy"], ["green spy"]],
    )
    chooser = chooser_at(g)
    chooser.press("1")
    offers = chooser.offers()
    first, last = (LEFT, RIGHT) if direction == "left-to-right" else (RIGHT, LEFT)
    # The left end is shown first, whichever end resolves first.
    assert [o.key for o in offers][:2] == [LEFT, RIGHT]
    labels = {o.key: o.label for o in offers}
    assert labels[first].endswith("(resolves first)")
    assert labels[last].endswith("(resolves last)")
    assert labels[LEFT].startswith("left end") and labels[RIGHT].startswith("right end")
    archer = card("red", "archer")
    assert chooser.press(first) == Place(archer, "first")
    again = chooser_at(g)
    again.press("1")
    assert again.press(last) == Place(archer, "last")


def test_targets_are_described_as_their_owner_sees_them() -> None:
    queue = ["red lord", "blue spy up", "red assassination up", "green heir", "blue soldier"]
    g = position(queue, step="eliminate", index=2, ability="assassination")
    chooser = chooser_at(g)
    labels = {o.key: o.label for o in chooser.offers()}
    assert labels == {
        "1": "your face-down Lord",
        "2": "Bo's Spy",
        "3": "your Assassination",
        "4": "Cy's face-down card",
        "5": "Bo's face-down card",
    }


def test_the_two_player_variant_tells_same_named_cards_apart() -> None:
    g = position(
        [],
        players=2,
        variant="two-player",
        round=1,
        hands=[["red spy", "blue spy", "red lord"], ["green spy"]],
    )
    labels = [o.label for o in chooser_at(g).offers()]
    assert len(set(labels)) == len(labels), labels


def test_names_in_descriptions_come_from_who() -> None:
    g = position(
        ["blue spy up", "red soldier up", "green heir up"],
        step="eliminate",
        index=1,
        ability="soldier",
    )
    chooser = Chooser(
        "eliminate",
        list(g.decision.options),
        chooser_of(g).view,
        seat=0,
        who=lambda s: NAMES[s].upper(),
    )
    assert [o.label for o in chooser.offers()] == ["BO's Spy", "CY's Heir"]

"""Identities unknown to the engine (the server's referee never sees a
face-down card): placing card backs, the `open` step after a reveal and after
an elimination, and openings that cannot be true.

A back is written "red ?" (builders); `C("red ?")` is the back as a `Card`.
"""

from __future__ import annotations

from oriflamme.engine import (
    FIRST,
    KEEP,
    KINDS,
    LAST,
    LEFT_TO_RIGHT,
    REVEAL,
    ChooseDirection,
    Decision,
    Open,
    Place,
    Rules,
    Step,
    Target,
    from_data,
    hidden_deal,
    new_game,
    to_data,
    view,
)
from oriflamme.engine.events import (
    AbilityUsed,
    Discarded,
    Eliminated,
    Kept,
    Placed,
    Revealed,
    Scored,
    Stolen,
)
from tests.engine.builders import C, assert_events, assert_illegal, describe, fronts, position


def opens(family: str, *excluded: str) -> tuple[Open, ...]:
    """Open(card) for every kind of `family` but `excluded`, in Kind order."""
    return tuple(Open(C(f"{family} {k.label}")) for k in KINDS if k.label not in excluded)


def test_a_hidden_deal_places_card_backs() -> None:
    g = new_game(3, deal=hidden_deal(Rules(3)))
    assert [[str(c) for c in set(h)] for h in g.hands] == [["red ?"], ["blue ?"], ["green ?"]]
    assert [len(h) for h in g.hands] == [7, 7, 7]
    g.apply(ChooseDirection(LEFT_TO_RIGHT))
    # Seven backs of one family are one choice.
    assert g.decision == Decision(0, Step.PLACE, (Place(C("red ?"), FIRST),), None)
    assert_illegal(g, Place(C("red lord"), FIRST), "red lord is not in seat 0's hand")
    events = g.apply(Place(C("red ?"), FIRST))
    assert_events(events, [Placed(0, 0, C("red ?"), FIRST, 0)])
    g.apply(Place(C("blue ?"), LAST))
    assert to_data(g)["queue"] == [
        [{"pid": 0, "owner": 0, "card": ["red", None], "face_up": False, "tokens": 0}],
        [{"pid": 1, "owner": 1, "card": ["blue", None], "face_up": False, "tokens": 0}],
    ]
    assert [len(h) for h in g.hands] == [6, 6, 7]


def test_keeping_an_unknown_card_asks_for_no_opening() -> None:
    g = position(["#4 red ?", "#5 blue ?"], step="reveal", index=0)
    assert_events(g.apply(KEEP), [Kept(0, 4, 1)])
    assert g.decision == Decision(1, Step.REVEAL_OR_KEEP, (KEEP, REVEAL), 5)
    assert describe(g) == ["#4 red ? 1t", "#5 blue ?"]


def test_reveal_waits_for_the_owner_to_open_the_card() -> None:
    g = position(["#4 red ? 2t", "#5 blue ?", "#6 green ?"], step="reveal", index=1)
    assert g.apply(REVEAL) == []
    assert g.decision == Decision(1, Step.OPEN, opens("blue"), 5)
    # Nothing happened yet: the card is still face down.
    assert describe(g)[1] == "#5 blue ?"
    assert_illegal(g, Open(C("blue spy")), "not your turn: seat 1 must decide", seat=0)
    events = g.apply(Open(C("blue spy")), seat=1)
    assert_events(events, [Revealed(1, 5, C("blue spy"), 0)])
    # Two adjacent opponents: the Spy's choice follows.
    assert g.decision == Decision(1, Step.STEAL, (Target(4), Target(6)), 5)
    events = g.apply(Target(4))
    assert_events(events, [AbilityUsed(1, 5, "spy", 4), Stolen(1, 0, 1)])
    assert describe(g) == ["#4 red ? 2t", "#5 blue spy up", "#6 green ?"]
    assert g.decision == Decision(2, Step.REVEAL_OR_KEEP, (KEEP, REVEAL), 6)


def test_an_opened_conspiracy_pays_twice_its_tokens() -> None:
    g = position(["#2 green ? 3t"], step="reveal", index=0)
    g.apply(REVEAL)
    events = g.apply(Open(C("green conspiracy")))
    assert_events(
        events[:4],
        [
            Revealed(2, 2, C("green conspiracy"), 3),
            Scored(2, 6, "conspiracy"),
            AbilityUsed(2, 2, "conspiracy", None),
            Discarded(2, C("green conspiracy"), 2, "used", 0),
        ],
    )
    assert g.scores == [1, 1, 7]


def test_an_eliminated_unknown_card_is_opened_by_its_owner() -> None:
    g = position(
        ["#3 red ? 2t", "#4 blue soldier up", "#7 green ?"],
        step="eliminate",
        index=1,
        ability="soldier",
    )
    events = g.apply(Target(3))
    assert_events(events, [AbilityUsed(1, 4, "soldier", 3)])
    # The victim's owner must say what it was.
    assert g.decision == Decision(0, Step.OPEN, opens("red"), 3)
    events = g.apply(Open(C("red heir")), seat=0)
    assert_events(events, [Eliminated(3, C("red heir"), 0, 4, 1, 2), Scored(1, 1, "eliminate")])
    assert fronts(g) == [["red heir"], [], []]
    assert g.scores == [1, 2, 1]
    assert g.decision == Decision(2, Step.REVEAL_OR_KEEP, (KEEP, REVEAL), 7)


def test_an_ambush_opened_on_elimination_pays_four() -> None:
    g = position(["#3 red ? 2t", "#4 blue soldier", "#7 green ?"], step="reveal", index=1)
    g.apply(REVEAL)
    assert g.decision == Decision(1, Step.ELIMINATE, (Target(3), Target(7)), 4)
    assert_events(g.apply(Target(3)), [AbilityUsed(1, 4, "soldier", 3)])
    assert g.decision == Decision(0, Step.OPEN, opens("red"), 3)
    events = g.apply(Open(C("red ambush")))
    assert_events(
        events,
        [
            Eliminated(3, C("red ambush"), 0, 4, 1, 2),
            Scored(1, 1, "eliminate"),
            Scored(0, 4, "ambush"),
            Discarded(4, C("blue soldier"), 1, "ambush", 0),
        ],
    )
    assert g.scores == [5, 2, 1]
    assert fronts(g) == [["red ambush"], ["blue soldier"], []]
    assert describe(g) == ["#7 green ?"]
    assert g.decision == Decision(2, Step.REVEAL_OR_KEEP, (KEEP, REVEAL), 7)


def test_own_ambush_opened_on_elimination_revised_edition() -> None:
    g = position(
        ["#3 red ?", "#4 red archer up", "#5 blue lord"],
        step="eliminate",
        index=1,
        ability="archer",
    )
    g.apply(Target(3))
    events = g.apply(Open(C("red ambush")))
    assert_events(events, [Eliminated(3, C("red ambush"), 0, 4, 0, 0), Scored(0, 1, "eliminate")])
    assert describe(g) == ["#4 red archer up", "#5 blue lord"]
    assert g.scores == [2, 1, 1]


def test_openings_that_cannot_be_true_are_refused() -> None:
    g = position(
        ["red soldier up", "#5 red ? 1t", "blue lord"],
        step="reveal",
        index=1,
        fronts=[["red ambush"], [], []],
        set_aside=[["red conspiracy"], [], []],
        hands=[["red spy"], ["blue spy"], ["green spy"]],
    )
    g.apply(REVEAL)
    # Known elsewhere: in the queue, in front, set aside, in hand.
    assert g.decision == Decision(
        0, Step.OPEN, opens("red", "soldier", "spy", "ambush", "conspiracy"), 5
    )
    assert_illegal(g, Open(C("red soldier")), "red soldier is accounted for elsewhere")
    assert_illegal(g, Open(C("red ambush")), "red ambush is accounted for elsewhere")
    assert_illegal(g, Open(C("red conspiracy")), "red conspiracy is accounted for elsewhere")
    assert_illegal(g, Open(C("red spy")), "red spy is accounted for elsewhere")
    assert_illegal(g, Open(C("blue lord")), "card 5 is a red card")
    assert_illegal(g, Open(C("red ?")), "card 5 is a red card")
    assert_illegal(g, KEEP, "open the card: its identity is needed")
    assert_illegal(g, Target(6), "open the card: its identity is needed")
    assert_illegal(g, Open(C("red lord")), "not your turn", seat=1)


def test_the_open_step_survives_plain_data() -> None:
    g = position(["#3 red ? 2t", "#4 blue soldier", "#7 green ?"], step="reveal", index=1)
    g.apply(REVEAL)
    g.apply(Target(3))
    data = to_data(g)
    assert data["step"] == "open"
    assert data["resolving"]["opening"] == 3 and data["resolving"]["open_for"] == "eliminate"
    h = from_data(data)
    assert h.decision == g.decision
    assert_events(h.apply(Open(C("red lord"))), g.apply(Open(C("red lord"))))
    assert to_data(h) == to_data(g)


def test_a_seats_view_plays_on_with_the_other_identities_unknown() -> None:
    full = position(["red lord 1t", "blue spy", "green heir up"], step="reveal", index=0)
    g = from_data(view(full, 0))
    assert describe(g) == ["#0 red lord 1t", "#1 blue ?", "#2 green heir up"]
    g.apply(REVEAL)  # Red knows its own Lord: no opening needed
    assert g.decision == Decision(1, Step.REVEAL_OR_KEEP, (KEEP, REVEAL), 1)
    g.apply(REVEAL)
    assert g.decision == Decision(1, Step.OPEN, opens("blue"), 1)


def test_an_opening_is_asked_even_with_a_single_possible_identity() -> None:
    # Nine red cards are accounted for: in front, set aside, in hand, in the queue.
    g = position(
        ["red lord up", "#6 red ? 1t", "blue lord"],
        step="reveal",
        index=1,
        fronts=[["red archer", "red soldier", "red spy"], [], []],
        set_aside=[["red heir", "red shapeshifter", "red assassination"], [], []],
        hands=[["red ambush", "red royal_decree"], ["blue spy"], ["green spy"]],
    )
    assert g.apply(REVEAL) == []
    assert g.decision == Decision(0, Step.OPEN, (Open(C("red conspiracy")),), 6)
    events = g.apply(Open(C("red conspiracy")))
    assert events[:2] == [
        Revealed(0, 6, C("red conspiracy"), 1),
        Scored(0, 2, "conspiracy"),
    ]


def test_an_opened_ambush_revealed_by_its_owner_pays_one() -> None:
    g = position(["#2 green ? 3t", "#5 blue ?"], step="reveal", index=0)
    g.apply(REVEAL)
    events = g.apply(Open(C("green ambush")))
    assert_events(
        events,
        [
            Revealed(2, 2, C("green ambush"), 3),
            AbilityUsed(2, 2, "ambush", None),
            Scored(2, 1, "ambush"),
            Discarded(2, C("green ambush"), 2, "used", 0),
        ],
    )
    assert g.scores == [1, 1, 2]
    assert g.decision == Decision(1, Step.REVEAL_OR_KEEP, (KEEP, REVEAL), 5)


def test_an_opening_that_is_not_a_card_is_refused() -> None:
    g = position(["#3 red ?", "#4 blue ?"], step="reveal", index=0)
    g.apply(REVEAL)
    assert_illegal(g, Open("red lord"), "open with a card")  # type: ignore[arg-type]

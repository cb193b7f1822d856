"""The cards that changed since our last decision, marked in the queue
(issue 25, item 2): "After placing the last card of a round, the next
screen was already 'Round 4 · You play first'; only PgUp showed that 'Bot
1's Soldier eliminated your Assassination'."

What is checked: the screen (`Scene.changed`: a ``*`` before the card's
number, ``class:changed``; the ``▶`` of the card being resolved wins; the
queue's title and the help say what ``*`` means; the cards gone since then
on a line under the queue when there is room), the controller's `Changes`
(what each event changes, what our own decisions did left unmarked, a
spectator's marks: the last seat to act), and whole turns on an in-process
table (the marks at our decision, cleared when we answer).
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

from oriflamme.client.tui import app
from oriflamme.client.tui.controller import Answer, Changes
from oriflamme.client.tui.screen import render
from oriflamme.engine import BACKS, Event, Kind
from oriflamme.engine import card as card_of
from oriflamme.engine.events import (
    AbilityUsed,
    Discarded,
    Eliminated,
    Kept,
    Moved,
    Placed,
    Revealed,
    RoundEnded,
    RoundStarted,
    Uncovered,
)
from tests.engine.builders import position

from .helpers import NAMES, Table, press_an_offer, queue_cells, scene_of, screen_text, text

QUEUE = ["red spy", "blue lord up", "green heir", "red soldier up", "blue ambush 2t"]


def pids(g: Any) -> list[int]:
    """The pid of each slot's top card, in resolution order."""
    return [slot[-1].pid for slot in g.queue]


# ---------------------------------------------------------------- the screen


def test_a_changed_card_has_a_star_before_its_number_and_its_style() -> None:
    g = position(QUEUE)
    changed = frozenset({pids(g)[1], pids(g)[4]})
    cells = queue_cells(render(scene_of(g, changed=changed), 100, 30))
    assert [c["mark"] for c in cells] == [" ", "*", " ", " ", "*"]
    assert [("class:changed" in c["style"]) for c in cells] == [False, True, False, False, True]
    unmarked = queue_cells(render(scene_of(g), 100, 30))
    assert [c["mark"] for c in unmarked] == [" "] * 5


def test_the_card_being_resolved_keeps_its_arrow() -> None:
    g = position(QUEUE, step="reveal", index=2)
    changed = frozenset({pids(g)[2], pids(g)[3]})
    cells = queue_cells(render(scene_of(g, changed=changed), 100, 30))
    assert [c["mark"] for c in cells] == [" ", " ", "▶", "*", " "]
    assert "class:changed" in cells[2]["style"]  # (its label still says so)


def test_the_queue_title_and_the_help_say_what_the_star_means() -> None:
    g = position(QUEUE)
    changed = frozenset({pids(g)[1]})
    for width, height in ((80, 24), (120, 40)):
        rule = text(render(scene_of(g, changed=changed), width, height)[1])
        assert "· * new since your turn" in rule
        quiet = text(render(scene_of(g), width, height)[1])
        assert "*" not in quiet
    watched = replace(scene_of(g, changed=changed), seat=None, chooser=None)
    assert "· * new in the last turn" in text(render(watched, 80, 24)[1])
    help_text = screen_text(render(scene_of(g, help=True), 80, 24))
    assert "* new since your turn" in help_text


def test_the_star_stands_out_without_colour() -> None:
    assert "changed" in app.MONO  # monochrome: emphasis, not a colour


def test_the_cards_gone_since_our_turn_under_the_queue_when_there_is_room() -> None:
    g = position(QUEUE)
    gone = ("Bo's Soldier", "your Assassination")
    shown = screen_text(render(scene_of(g, gone=gone), 120, 40))
    assert "  gone since your turn: Bo's Soldier, your Assassination" in shown
    watched = screen_text(render(replace(scene_of(g, gone=gone), seat=None, chooser=None), 120, 40))
    assert "gone in the last turn: Bo's Soldier, your Assassination" in watched


def test_no_line_for_the_cards_gone_when_the_players_need_the_room() -> None:
    families = ("red", "blue", "green", "yellow", "black")
    kinds = ("spy", "lord", "heir", "archer", "soldier", "ambush")  # 30 cards
    g = position([f"{f} {k}" for k in kinds for f in families], players=5, round=6)
    lines = render(scene_of(g, gone=("Bo's Soldier",)), 80, 24)
    shown = screen_text(lines)
    assert "gone since" not in shown
    for name in NAMES[1:5]:
        assert name in shown  # every player's row is still there
    roomy = screen_text(render(scene_of(g, gone=("Bo's Soldier",)), 120, 40))
    assert "gone since your turn: Bo's Soldier" in roomy


# ---------------------------------------------------------------- what changes


def card(pid: int) -> str:
    return f"card {pid}"


def placed(seat: int, pid: int, at: str | int = "last") -> Placed:
    return Placed(seat=seat, pid=pid, card=BACKS[0], at=at, slot=0)


def see_all(changes: Changes, events: list[Event], own: int | None) -> None:
    for event in events:
        changes.see(event, own=own, spectator=own is None)


def test_what_each_event_changes_and_what_our_own_decisions_leave_unmarked() -> None:
    changes = Changes(card)
    see_all(
        changes,
        [
            placed(1, 10),
            placed(0, 11),  # ours: we know it
            placed(2, 12),
            Kept(seat=2, pid=12, tokens=1),
            Revealed(seat=1, pid=13, card=card_of(1, Kind.SOLDIER), tokens=0),
            AbilityUsed(seat=1, pid=13, ability="soldier", target=14),
            Eliminated(pid=14, card=card_of(0, Kind.LORD), owner=0, by=13, by_seat=1, tokens=0),
            Uncovered(pid=15, face_up=False),
            Revealed(seat=0, pid=16, card=card_of(0, Kind.ARCHER), tokens=0),
            AbilityUsed(seat=0, pid=16, ability="archer", target=10),
            # ours too: our Archer did it
            Eliminated(pid=10, card=card_of(1, Kind.HEIR), owner=1, by=16, by_seat=0, tokens=0),
            Revealed(seat=2, pid=17, card=card_of(2, Kind.ROYAL_DECREE), tokens=0),
            AbilityUsed(seat=2, pid=17, ability="royal_decree", target=None),
            Moved(pid=11, to=0),
            Discarded(pid=17, card=card_of(2, Kind.ROYAL_DECREE), owner=2, reason="used", tokens=0),
            placed(1, 18),
            placed(1, 19, at=18),  # covers 18: the mark goes to the top card
        ],
        own=0,
    )
    # 10 was placed by Bo, then eliminated by us: gone, not marked, not said
    assert changes.pids == {12, 13, 15, 11, 19}
    assert changes.gone == ["card 14", "card 17"]
    changes.clear()
    assert changes.pids == set() and changes.gone == []


def test_a_spectator_sees_the_last_seats_doings() -> None:
    changes = Changes(card)
    see_all(changes, [placed(1, 10)], None)
    assert changes.pids == {10}
    see_all(changes, [placed(2, 11)], None)
    assert changes.pids == {11}
    see_all(
        changes,
        [
            RoundEnded(round=1),
            RoundStarted(round=2, first_player=2),
            placed(2, 12),
        ],
        None,
    )
    assert changes.pids == {12}


# ---------------------------------------------------------------- whole turns


def test_our_decision_shows_what_the_others_did_and_answering_clears_it() -> None:
    t = Table(3, label="changed marks")
    t.seat_bots_and_start()
    rng = random.Random(3)
    t.until_ours()
    checked = 0
    for _ in range(30):
        if t.game.end is not None:
            break
        before = len(t.sent)
        while len(t.sent) == before:
            press_an_offer(t.controller, rng)
        answer = t.sent[-1]
        assert isinstance(answer, Answer)
        assert t.controller.scene().changed == frozenset()  # cleared by our answer
        seen = len(t.game.events)
        t.deliver(answer)
        t.until_ours()
        if t.game.end is not None:
            break
        tops = {slot[-1]["pid"] for slot in t.game.view()["queue"]}
        since = t.game.events[seen:]
        others = {e.pid for e in since if type(e) is Placed and e.seat != 0 and e.pid in tops}
        ours = {e.pid for e in since if type(e) is Placed and e.seat == 0}
        changed = t.controller.scene().changed
        assert others <= changed, (others, changed)
        assert changed <= tops
        if not [e for e in since if type(e) in (Moved, Uncovered)]:
            assert not ours & changed
        checked += bool(others)
    assert checked >= 3

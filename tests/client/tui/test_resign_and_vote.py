"""Issue 25, item 4: a way out of a game. [R] resigns (a bot plays our cards
to the end, or we leave and the seat forfeits); [A] votes to end a game in
which a player is gone, and the end of such a game says so.

`GameController` on a real session mirror (`helpers.Table`: an in-process
server, seat 0 a person at the keyboard); the commands it sends are
carried to the server here as the app's program does.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from oriflamme.client.bots import Behaviour, Bot, Seated
from oriflamme.client.replay import replay_steps
from oriflamme.client.state import ClientState
from oriflamme.client.tui.choices import ESCAPE
from oriflamme.client.tui.controller import Command, Request, Resign
from oriflamme.client.tui.lobby import LobbyController
from oriflamme.client.tui.replay_screen import ReplayController
from oriflamme.client.tui.screen import HELP_KEYS, Scene, render
from oriflamme.launcher.inprocess import Client
from oriflamme.protocol import messages as m
from oriflamme.protocol.record import decode_record
from oriflamme.protocol.verify import verify_record

from .helpers import Table, press_an_offer, screen_text


@pytest.fixture
def table() -> Table:
    t = Table(3, label="resign")
    t.seat_bots_and_start()
    t.until_ours()
    return t


def shown(t: Table, width: int = 80, height: int = 24) -> str:
    return screen_text(render(t.controller.scene(), width, height))


# ---------------------------------------------------------------- resigning


def test_r_asks_how_to_resign_and_b_hands_the_seat_to_a_bot(table: Table) -> None:
    c = table.controller
    c.key("R")
    assert table.sent == [] and c.resigning
    screen = shown(table)
    assert "Resign?" in screen
    assert "[b] a bot plays your cards to the end" in screen
    assert "[l] leave: your seat forfeits" in screen and "[Esc] keep playing" in screen
    c.key("b")
    assert table.sent == [Resign(bot=True)] and not c.resigning
    # What the program sends for it: our seed and the openings of our hidden
    # cards, which the server checks, and a bot finishes the game.
    hand_over = table.game.hand_over()
    assert isinstance(hand_over, m.HandOver)
    assert table.ask(hand_over) == m.Ok(id=table.me.endpoint.last_id())
    assert table.me.state.game is None and table.me.state.room is None
    assert (
        c.resigned_from(bot=True) == "You resigned: a bot plays your cards to the end of the game."
    )
    table.world.run(lambda: bool(table.world.records))
    record = table.world.records[0].record
    assert record.seats[0].handed_to_bot and record.verdicts[0].status == "ok"
    assert verify_record(record).ok


def test_r_then_l_leaves_and_the_seat_forfeits(table: Table) -> None:
    c = table.controller
    c.key("R")
    c.key("l")
    assert table.sent == [Resign(bot=False)]
    assert "your seat forfeits" in c.resigned_from(bot=False)
    table.ask(m.LeaveRoom())
    table.world.run(lambda: bool(table.world.records))
    assert table.world.records[0].record.verdicts[0].reason == "left the game"


def test_any_other_key_after_r_keeps_playing(table: Table) -> None:
    c = table.controller
    for key in (ESCAPE, "x", "1"):
        c.key("R")
        c.key(key)
        assert table.sent == [] and not c.resigning
        assert c.scene().status == "Still in the game"
        assert c.chooser is not None and c.chooser.digits == ""  # (the key did nothing else)


def test_r_with_no_game_of_ours_to_leave_says_so() -> None:
    t = Table(3, label="resign over")
    t.seat_bots_and_start()
    t.play_to_end(press_an_offer, seed=4)
    sent = len(t.sent)
    t.controller.key("R")
    assert len(t.sent) == sent and not t.controller.resigning
    assert t.controller.scene().status == "No game of yours to resign from"


def test_no_bot_can_take_a_seat_before_the_cards_are_dealt() -> None:
    t = Table(3, label="resign early")
    t.ask(m.CreateRoom(settings=m.RoomSettings.for_players(3), name="t"))
    for _ in range(2):
        t.ask(m.AddBot(strategy="random"))
    t.ask(m.Ready(ready=True))
    t.me.send(m.StartGame())
    t.world.run(lambda: t.game is not None)  # (our seed commitment is not sent yet)
    t.changed()
    game = t.game
    assert game is not None and game.server_seed is None
    with pytest.raises(ValueError):
        game.hand_over()
    t.controller.key("R")
    t.controller.key("b")
    assert t.sent == []
    assert "not dealt yet" in t.controller.scene().status


def test_the_help_lists_resign_and_the_vote() -> None:
    assert any("R resign" in text and "A vote" in text for _, text in HELP_KEYS)
    help_screen = screen_text(render(Scene(view=None, names=[], help=True), 80, 24))
    assert "R resign · A vote to end the game" in help_screen


# ---------------------------------------------------------------- ending a game by vote


class Held(Behaviour):
    """A person who plays by themselves until `held`, then only what is automatic."""

    def __init__(self, seed: int) -> None:
        super().__init__(Bot("random", rng=random.Random(seed)))
        self.held = False

    def messages(self, client: Seated) -> list[m.Message]:
        game = client.state.game
        if self.held:
            return [] if game is None else game.automatic()
        return super().messages(client)


def people(t: Table) -> tuple[Client, Client, Held]:
    """Seats 1 and 2: people of their own (Bo plays by himself until held);
    the game started, a decision of ours pending."""
    held = Held(3)
    bo = t.world.connect("Bo", behaviour=held)
    cy = t.world.connect("Cy", behaviour=Behaviour(Bot("random", rng=random.Random(4))))
    t.world.settle()
    t.ask(m.CreateRoom(settings=m.RoomSettings.for_players(3), name="vote tests"))
    for other in (bo, cy):
        other.send(m.JoinRoom(room=1))
        other.send(m.Ready(ready=True))
    t.world.settle()
    t.ask(m.Ready(ready=True))
    t.me.send(m.StartGame())
    t.until_ours()
    return bo, cy, held


def test_a_or_the_panel_with_nobody_gone_offers_no_vote() -> None:
    t = Table(3, label="vote none")
    people(t)
    c = t.controller
    assert c.vote_text() == ""
    c.key("A")
    assert t.sent == []
    assert c.scene().status.startswith("Every player is here")


def test_a_player_gone_the_panel_offers_a_and_the_end_says_ended_by_vote() -> None:
    t = Table(3, label="vote")
    bo, cy, held = people(t)
    c = t.controller
    held.held = True
    cy.send(m.LeaveRoom())
    t.world.settle()
    t.changed()
    assert c.vote_text() == (
        "Cy is gone: [A] vote to end the game (all present players must agree)"
    )
    assert "[A] vote to end the game" in shown(t)  # under the players, at 80x24
    c.key("A")
    game_id = t.game.game_id
    assert t.sent == [Request(m.VoteAbort(game=game_id))]
    t.ask(m.VoteAbort(game=game_id))
    t.changed()
    assert c.vote_text() == "You want to end the game: waiting for Bo"
    c.key("A")
    assert len(t.sent) == 1 and "You voted" in c.scene().status
    # Bo's screen would say: "You want..." and ours "Ann...": from his side.
    bo.send(m.VoteAbort(game=game_id))
    t.world.run(lambda: t.game.end is not None)
    t.changed()
    end = t.game.end
    assert end.complete is False and end.winners == ()
    assert c.end is not None and c.end.ended_in is not None
    screen = shown(t, 100, 30)
    assert f"Game ended by vote in round {c.end.ended_in} of 6 · no winner" in screen
    assert "(winner)" not in screen
    assert any("ended by vote" in line for line in c.log.lines)
    assert c.vote_text() == ""


def test_what_others_voted_is_shown_with_the_key_to_agree() -> None:
    t = Table(3, label="vote others")
    bo, cy, held = people(t)
    held.held = True
    cy.send(m.LeaveRoom())
    t.world.settle()
    bo.send(m.VoteAbort(game=t.game.game_id))
    t.world.settle()
    t.changed()
    assert t.controller.vote_text() == "Bo wants to end the game ([A] to agree)"
    assert "Bo wants to end the game ([A] to agree)" in shown(t)


def test_the_replay_of_a_game_ended_by_vote_ends_where_the_vote_did() -> None:
    path = Path(__file__).parents[3] / "docs" / "records" / "ended-by-vote.oriflamme"
    record = decode_record(path.read_bytes())
    steps = replay_steps(record)
    replay = ReplayController(record, steps, verify_record(record), path.name)
    replay.at = len(steps) - 1
    last = screen_text(replay.lines(80, 24))
    assert f"Ended by vote in round {steps[-1].position['round']}: no winner" in last
    assert "(winner)" not in last


def test_the_lobby_lists_a_game_ended_by_vote_as_such() -> None:
    sent: list[Command] = []
    lobby = LobbyController(ClientState(), sent.append, server="here", name="Ann")

    def summary(record_id: str, winners: tuple[int, ...], valid: bool) -> m.RecordSummary:
        return m.RecordSummary(
            record_id=record_id,
            room=1,
            room_name="friday",
            names=("Ann", "Bo", "Cy"),
            seat=0,
            scores=(5, 4, 3),
            winners=winners,
            valid=valid,
        )

    lobby.answered(
        m.ListRecords(),
        m.RecordList(records=(summary("a" * 32, (), False), summary("b" * 32, (0,), False))),
    )
    rows = [line for line in screen_text(lobby.lines(100, 24)).splitlines() if "friday" in line]
    assert "(ended by vote)" in rows[0] and "(won)" not in rows[0]
    assert "(not valid: a seat forfeited)" in rows[1]


def test_a_hand_over_refused_as_stale_is_sent_again_dated_anew() -> None:
    """A player with a key dates its hand-over with the pending turn: if play
    moved on while it was on its way (`stale_turn`), it is sent again (the
    endpoint dates it anew); another refusal is the caller's."""
    import trio

    from oriflamme.client.session import RequestRefused
    from oriflamme.client.tui.driver import _dated_request
    from oriflamme.protocol import messages as m

    class Refusing:
        def __init__(self, codes: list[str]) -> None:
            self.codes, self.sent = codes, 0

        async def request(self, message: m.Message) -> m.Message:
            self.sent += 1
            if self.codes:
                code = self.codes.pop(0)
                raise RequestRefused(m.Error(code=code, message="no", fatal=False))
            return m.Ok()

    twice_stale = Refusing(["stale_turn", "stale_turn"])
    trio.run(_dated_request, twice_stale, m.HandOver(seed=bytes(32), openings=()))  # type: ignore[arg-type]
    assert twice_stale.sent == 3
    for codes in (["stale_turn"] * 3, ["wrong_state"]):
        refusing = Refusing(list(codes))
        try:
            trio.run(_dated_request, refusing, m.HandOver(seed=bytes(32), openings=()))  # type: ignore[arg-type]
        except RequestRefused as exc:
            assert exc.error.code == codes[-1] and refusing.sent == len(codes)
        else:
            raise AssertionError("refused, but not raised")

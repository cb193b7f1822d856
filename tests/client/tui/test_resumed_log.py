"""A game picked up again shows its log from the start (issue 25, item 3):
the snapshot after a resume carries every event so far (`game_state.past`),
and a client starting afresh (the program was quit, the machine restarted)
writes the same lines the player read before, the scores of each round
past, and then goes on; what it never saw is not passed off as new."""

from __future__ import annotations

import random

from oriflamme.client.bots import Behaviour
from oriflamme.client.endpoint import ClientEndpoint
from oriflamme.client.tui.controller import Command, GameController
from oriflamme.launcher.inprocess import Client
from oriflamme.protocol import messages as m

from .helpers import Table, press_an_offer


def _play_into_round(t: Table, round_: int, rng: random.Random) -> None:
    while True:
        t.until_ours()
        if t.game.view()["round"] >= round_:
            return
        before = len(t.sent)
        while len(t.sent) == before:
            press_an_offer(t.controller, rng)
        t.deliver(t.sent[-1])


def _a_fresh_client(t: Table) -> Client:
    """The player's program started again: a new mirror, the session's
    token and the seat's secrets (kept on disk by a real client), no seq."""
    secrets = t.game.secrets
    t.world.disconnect(t.me)
    endpoint = ClientEndpoint(
        "Ann", token=t.me.endpoint.token, make_secrets=lambda rules, game, seat: secrets
    )
    again = t.world.connect("Ann", behaviour=Behaviour(None), endpoint=endpoint)
    t.world.settle()
    return again


def _ignored(command: Command) -> None:
    pass


def _events_said(lines: list[str]) -> list[str]:
    return [line for line in lines if not line.startswith("──")]


def test_a_player_back_in_a_fresh_client_reads_the_game_so_far() -> None:
    t = Table(3, label="resumed log")
    t.seat_bots_and_start()
    _play_into_round(t, 3, random.Random(4))
    said_before = _events_said(t.controller.log.lines)
    history = list(t.controller.score_history)
    assert len(history) == 2 and said_before

    again = _a_fresh_client(t)
    snapshot = again.state.game.state
    assert isinstance(snapshot, m.GameState)
    assert snapshot.snapshot and snapshot.past is not None and not snapshot.events
    fresh = GameController(again.state, _ignored)
    fresh.changed(t.world.now)

    lines = fresh.log.lines
    assert lines[0] == "── Back in the game (3 players): the game so far"
    now = lines.index("── Now")
    assert _events_said(lines[:now]) == said_before
    assert fresh.score_history == history  # [s] shows every round so far
    assert fresh.round_summary is None  # rounds over before we came wait for no key
    assert fresh.chooser is not None  # and the decision waiting is ours to make


def test_a_game_never_played_in_is_new_even_from_a_snapshot() -> None:
    """Quit before placing anything, come back: nothing of ours is in the
    game so far, so it is a new game to the player, not a return."""
    t = Table(2, label="resumed before playing")
    t.ask(m.CreateRoom(settings=m.RoomSettings.for_players(2), name="bot first"))
    t.ask(m.AddBot(strategy="random"))
    t.ask(m.Ready(ready=True))
    t.ask(m.StartGame(first_player=1))
    t.until_ours()
    assert t.game.view()["queue"], "the bot plays first at this table: a card is down"
    again = _a_fresh_client(t)
    fresh = GameController(again.state, _ignored)
    fresh.changed(t.world.now)
    assert fresh.log.lines[0] == "── A new game: 2 players"
    assert "Back in the game" not in " ".join(fresh.log.lines)


def test_a_game_over_is_told_as_over_not_as_one_to_be_back_in() -> None:
    """A client that starts again after the game ended (`oriflamme play`
    run again to play another): the last game is told as over."""
    t = Table(2, label="resumed after the end")
    t.seat_bots_and_start()
    t.play_to_end(press_an_offer)
    again = _a_fresh_client(t)
    fresh = GameController(again.state, _ignored)
    fresh.changed(t.world.now)
    assert fresh.log.lines[0] == "── Your last game (2 players) is over: how it went"
    assert "Back in the game" not in " ".join(fresh.log.lines)
    assert "── Now" not in fresh.log.lines
    assert fresh.end is not None

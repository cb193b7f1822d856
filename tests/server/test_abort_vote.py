"""Ending a game by vote: when a seat's player is gone (left, or away past the
grace period), the players still at the table may end the game; the final
reveal follows, and the record says the game is not complete.

Through the server's core on a virtual clock (`InProcess`): the players
play by themselves until `hold` stops their decisions (they still send what
is automatic: openings, the final reveal), so that a game waits for them
while they vote.
"""

from __future__ import annotations

import random

from oriflamme.client.bots import Behaviour, Bot, Seated
from oriflamme.launcher.inprocess import Client, InProcess
from oriflamme.protocol import messages as m
from oriflamme.protocol.record import LEFT, STAND_IN, decode_record, encode_record
from oriflamme.protocol.verify import verify_record
from oriflamme.server.core.table import Table
from tests.server.scenario import ask, game_round, last_room, new_world, ok, received, refused
from tests.server.test_journal import Journaled

GRACE = 60


class Held(Behaviour):
    """Plays by itself until `held`; then sends only what is automatic."""

    def __init__(self, bot: Bot) -> None:
        super().__init__(bot)
        self.held = False

    def messages(self, client: Seated) -> list[m.Message]:
        game = client.state.game
        if self.held:
            return [] if game is None else game.automatic()
        return super().messages(client)


def table(
    world: InProcess, players: int = 3, *, bots: int = 0, seed: int = 0
) -> tuple[list[Client], list[Held]]:
    """A game under way (round 2) of `players` seats: the clients first, then
    `bots` server bots; every client held (the game waits for them)."""
    rng = random.Random(seed)
    behaviours = [Held(Bot("random", rng=random.Random(rng.random()))) for _ in range(players)]
    clients = [world.connect(f"p{i}", behaviour=behaviours[i]) for i in range(players - bots)]
    world.settle()
    ok(world, clients[0], m.CreateRoom(settings=m.RoomSettings.for_players(players)))
    for c in clients[1:]:
        ok(world, c, m.JoinRoom(room=1))
    for _ in range(bots):
        ok(world, clients[0], m.AddBot(strategy="random"))
    for c in clients:
        ok(world, c, m.Ready(ready=True))
    clients[0].send(m.StartGame())  # (settled, the game would be over)
    world.run(lambda: game_round(clients[0]) >= 2)
    for b in behaviours:
        b.held = True
    world.settle()
    return clients, behaviours


def game_id(client: Client) -> bytes:
    game = client.state.game
    assert game is not None
    return game.game_id


def the_table(world: InProcess) -> Table:
    table = world.gateway.lobby.rooms[1].table
    assert table is not None
    return table


def test_the_players_at_the_table_end_a_game_whose_player_left() -> None:
    world = new_world("abort left", grace=GRACE, versions=(1,))
    clients, _ = table(world, 4)
    ann, bob, cy, dee = clients
    gid = game_id(ann)
    assert last_room(ann).abort_votes is None  # nobody is gone: no vote
    refused(world, ann, m.VoteAbort(game=gid), "wrong_state")
    ok(world, dee, m.LeaveRoom())
    assert last_room(ann).abort_votes == ()
    scores = list(ann.state.game.state.view["scores"])
    ok(world, ann, m.VoteAbort(game=gid))
    assert last_room(bob).abort_votes == (0,)
    ok(world, ann, m.VoteAbort(game=gid))  # again: nothing changes
    assert last_room(bob).abort_votes == (0,)
    ok(world, bob, m.VoteAbort(game=gid))
    assert last_room(cy).abort_votes == (0, 1)
    assert world.records == []  # Cy has not voted: play goes on
    ok(world, cy, m.VoteAbort(game=gid))
    world.settle()
    assert len(world.records) == 1
    end = received(ann, m.GameEnd)[-1]
    assert (end.complete, end.winners, list(end.scores)) == (False, (), scores)
    assert [v.status for v in end.verification] == ["ok", "ok", "ok", "forfeited"]
    record = world.records[0].record
    assert (record.results.complete, record.results.votes) == (False, (0, 1, 2))
    assert verify_record(record).problems == ()
    assert verify_record(decode_record(encode_record(record))).problems == ()
    assert [(c.seat, c.change) for c in record.seat_changes] == [(3, LEFT)]
    # Play stopped with a game_state that has no decision, before the final reveal.
    last_state = received(ann, m.GameState)[-1]
    assert last_state.decision is None and not last_state.view.get("over")
    assert last_room(ann).state == "finished" and last_room(ann).abort_votes is None
    summary = world.gateway.lobby.finished[world.records[0].record_id]
    assert summary.valid is False  # a game ended by vote does not count


def test_a_player_away_past_the_grace_period_is_gone_and_a_vote_may_end_the_game() -> None:
    world = new_world("abort away", grace=GRACE)
    clients, _ = table(world, 3)
    ann, bob, cy = clients
    gid = game_id(ann)
    world.disconnect(cy)
    world.advance(GRACE - 1)
    assert last_room(ann).abort_votes is None  # away, within the grace period
    refused(world, ann, m.VoteAbort(game=gid), "wrong_state")
    world.advance(2)
    assert last_room(ann).seats[2].bot == "stand_in"
    assert last_room(ann).abort_votes == ()
    ok(world, bob, m.VoteAbort(game=gid))
    ok(world, ann, m.VoteAbort(game=gid))
    world.run(lambda: bool(world.records))
    record = world.records[0].record
    assert record.results.votes == (0, 1) and not record.results.complete
    assert [(c.seat, c.change) for c in record.seat_changes] == [(2, STAND_IN)]
    assert record.verdicts[2].status == "forfeited"
    assert record.verdicts[2].reason == "was away at the final reveal"
    assert verify_record(record).problems == ()


def test_a_gone_player_who_comes_back_clears_the_votes() -> None:
    world = new_world("abort back", grace=GRACE)
    clients, _ = table(world, 3)
    ann, bob, cy = clients
    gid = game_id(ann)
    world.disconnect(cy)
    world.advance(GRACE + 1)
    ok(world, ann, m.VoteAbort(game=gid))
    assert last_room(bob).abort_votes == (0,)
    cy = world.reconnect(cy)
    world.settle()
    assert last_room(bob).abort_votes is None  # nobody is gone now
    refused(world, bob, m.VoteAbort(game=gid), "wrong_state")
    world.disconnect(cy)
    world.advance(GRACE + 1)
    assert last_room(bob).abort_votes == ()  # gone again: the old vote is not back
    ok(world, bob, m.VoteAbort(game=gid))
    assert world.records == []


def test_the_last_player_yet_to_vote_who_leaves_ends_the_game() -> None:
    """Ann and Bob voted; Cy, who had not, leaves: everyone at the table has
    voted now, and the game ends."""
    world = new_world("abort last", grace=GRACE)
    clients, _ = table(world, 4)
    ann, bob, cy, dee = clients
    gid = game_id(ann)
    ok(world, dee, m.LeaveRoom())
    ok(world, ann, m.VoteAbort(game=gid))
    ok(world, bob, m.VoteAbort(game=gid))
    ok(world, cy, m.LeaveRoom())
    world.run(lambda: bool(world.records))
    record = world.records[0].record
    assert record.results.votes == (0, 1)
    assert verify_record(record).problems == ()


def test_who_may_not_vote() -> None:
    """A spectator, a server bot's seat, a vote for another game, and a game
    not in play are refused; bots and gone players do not count."""
    world = new_world("abort who", grace=GRACE)
    clients, _ = table(world, 3, bots=1)
    ann, bob = clients
    gid = game_id(ann)
    watcher = world.connect("watcher")
    world.settle()
    ok(world, watcher, m.Spectate(room=1))
    ok(world, bob, m.LeaveRoom())
    refused(world, watcher, m.VoteAbort(game=gid), "not_permitted")
    refused(world, ann, m.VoteAbort(game=bytes(16)), "wrong_state")
    bot = next(iter(world.bots.values()))
    answer = ask(world, bot, m.VoteAbort(game=gid))
    assert isinstance(answer, m.Error) and answer.code == "not_permitted"
    assert last_room(watcher).abort_votes == ()
    # Ann is the only player at the table: her vote ends the game (the bot
    # and Bob, who left, have no say).
    ok(world, ann, m.VoteAbort(game=gid))
    world.run(lambda: bool(world.records))
    record = world.records[0].record
    assert record.results.votes == (0,)
    assert verify_record(record).problems == ()
    refused(world, ann, m.VoteAbort(game=gid), "wrong_state")  # the game is over


def test_a_seat_handed_to_a_bot_is_not_gone_and_has_no_vote() -> None:
    world = new_world("abort handed", grace=GRACE)
    clients, _ = table(world, 3)
    ann, bob, cy = clients
    gid = game_id(ann)
    game = cy.state.game
    hidden = [pid for pid in game.secrets.placed_cards() if pid not in game.openings]
    ok(world, cy, m.HandOver(seed=game.secrets.seed, openings=tuple(game.secrets.openings(hidden))))
    assert last_room(ann).abort_votes is None  # a bot plays Cy's cards properly
    refused(world, ann, m.VoteAbort(game=gid), "wrong_state")
    ok(world, bob, m.LeaveRoom())
    ok(world, ann, m.VoteAbort(game=gid))
    world.run(lambda: bool(world.records))
    record = world.records[0].record
    assert record.results.votes == (0,)
    assert record.verdicts[2].status == "ok"  # the bot revealed Cy's cards
    assert verify_record(record).problems == ()


def test_the_votes_are_kept_in_the_table_and_counted_from_the_seats() -> None:
    world = new_world("abort table", grace=GRACE)
    clients, _ = table(world, 3)
    ann, bob, cy = clients
    ok(world, cy, m.LeaveRoom())
    ok(world, bob, m.VoteAbort(game=game_id(ann)))
    t = the_table(world)
    assert t.votes == {1} and t.abort_votes() == (1,)
    assert [t.gone(s) for s in range(3)] == [False, False, True]
    assert [t.at_the_table(s) for s in range(3)] == [True, True, False]


def test_a_vote_survives_a_server_crash() -> None:
    """The votes are the room's: a server killed and rebuilt from its journal
    has them, and the last vote ends the game as it would have."""
    world = Journaled(seed=5)
    clients, _ = table(world, 3)
    ann, bob, cy = clients
    gid = game_id(ann)
    ok(world, cy, m.LeaveRoom())
    ok(world, ann, m.VoteAbort(game=gid))
    world.crash_and_restore()
    assert the_table(world).votes == {0}
    bob = next(c for c in world.clients.values() if c.endpoint.name == "p1")
    world.settle()
    assert last_room(bob).abort_votes == (0,)
    ok(world, bob, m.VoteAbort(game=gid))
    world.run(lambda: bool(world.records))
    record = world.records[0].record
    assert record.results.votes == (0, 1)
    assert verify_record(record).problems == ()

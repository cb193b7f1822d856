"""A table's timers, its stand-in and its hand-over, through the core on a virtual clock.

Timers: the room's turn timer (off unless set) for decisions; the server's
reply timer, always on, for what a client sends by itself (the seed
commitment, an opening after an elimination, the final reveal); the grace
period before the stand-in plays a disconnected player's seat.
"""

from __future__ import annotations

import random
from functools import partial
from typing import TypeVar

import pytest

from oriflamme.client.bots import Behaviour, Bot, Seated
from oriflamme.launcher.inprocess import Client, InProcess, Stalled
from oriflamme.protocol import messages as m
from oriflamme.protocol.record import BACK, HANDED_TO_BOT, LEFT, STAND_IN
from oriflamme.protocol.verify import verify_record
from oriflamme.server.core import FixedEntropy, ServerConfig
from tools.docgen.sample_records import FalseSeed, NeverOpens, Undecided
from tools.docgen.worked_example import fixed_secrets

CONFIG = ServerConfig(idle_timeout=86400, reply_timer=30, grace=60)


class Silent(Behaviour):
    """Sends nothing at all by itself (not even its seed commitment)."""

    def messages(self, client: Seated) -> list[m.Message]:
        return []


def table(
    behaviours: dict[int, type[Behaviour]] | None = None,
    *,
    players: int = 3,
    turn_timer: int | None = None,
    seed: int = 0,
    names: tuple[str, ...] = (),
) -> tuple[InProcess, list[Client]]:
    """A started game of `players` clients; seat i plays with `behaviours[i]`."""
    behaviours = behaviours or {}
    label = f"table {seed}"
    world = InProcess(
        config=CONFIG, seed=seed, entropy=FixedEntropy(label), make_secrets=fixed_secrets(label)
    )
    rng = random.Random(seed)
    clients = [
        world.connect(
            names[i] if i < len(names) else f"p{i}",
            behaviour=behaviours.get(i, Behaviour)(Bot("random", rng=random.Random(rng.random()))),
        )
        for i in range(players)
    ]
    world.settle()
    clients[0].send(
        m.CreateRoom(settings=m.RoomSettings.for_players(players, turn_timer=turn_timer))
    )
    world.settle()
    for c in clients[1:]:
        c.send(m.JoinRoom(room=1))
    for c in clients:
        c.send(m.Ready(ready=True))
    world.settle()
    clients[0].send(m.StartGame())
    return world, clients


M = TypeVar("M", bound=m.Message)


def pushes(client: Client, kind: type[M]) -> list[M]:
    return [x for x in client.received if isinstance(x, kind)]


def game_pushes(client: Client) -> list[m.GameState | m.GameUpdate]:
    """The pushes of the game's changes, in either protocol version."""
    return [x for x in client.received if isinstance(x, m.GameState | m.GameUpdate)]


def test_without_a_turn_timer_a_silent_player_is_waited_for() -> None:
    world, clients = table({1: Undecided})
    with pytest.raises(Stalled):
        world.run(lambda: bool(world.records), max_seconds=10_000)
    decisions = [s.decision for s in game_pushes(clients[0]) if s.decision is not None]
    assert decisions and all(d.time_left is None for d in decisions)
    assert world.records == []


def test_with_a_turn_timer_the_server_decides_when_time_runs_out() -> None:
    world, clients = table({1: Undecided}, turn_timer=30)
    world.run(lambda: bool(world.records))
    record = world.records[0].record
    assert verify_record(record).ok  # time-outs are not forfeits
    by_server = [e for e in record.log if e.seat == 1 and e.by_server]
    assert by_server and all(e.seat == 1 for e in record.log if e.by_server)
    assert all(not e.by_server for e in record.log if e.seat != 1)
    # Every decision showed its time left; the server waited 30 s for seat 1 each time.
    decisions = [s.decision for s in game_pushes(clients[0]) if s.decision is not None]
    assert all(d.time_left is not None and 0 < d.time_left <= 30_000 for d in decisions)
    assert world.now >= 30 * len(by_server)


def test_a_missing_seed_commitment_cancels_the_game_and_the_room_waits_again() -> None:
    world, clients = table({2: Silent})
    world.settle()
    started = pushes(clients[0], m.GameStarted)[0]
    assert started.time_left == 30_000
    world.advance(29)
    assert clients[0].state.room.state == "playing"
    world.advance(2)
    room = clients[0].state.room
    assert room.state == "waiting"
    assert any("cancelled" in c.text for c in clients[0].state.chat)
    assert world.records == []
    # The room can start again once everyone is ready.
    clients[2].behaviour = Behaviour(Bot("random"))
    for c in clients:
        c.send(m.Ready(ready=True))
    world.settle()
    clients[0].send(m.StartGame())
    world.run(lambda: bool(world.records))
    assert verify_record(world.records[0].record).ok


def test_an_unopened_card_is_settled_after_the_reply_timer() -> None:
    for seed in range(20):
        world, clients = table({2: NeverOpens}, players=4, seed=seed)
        world.run(partial(finished, world))
        record = world.records[0].record
        settled = [e for e in record.log if e.settled]
        if not settled:
            continue  # no card of seat 2 was eliminated face down in this game
        assert all(e.seat == 2 for e in settled)
        assert record.verdicts[2].status == "forfeited"
        assert record.verdicts[2].reason.startswith("did not open card")
        assert verify_record(record).ok is False and verify_record(record).problems == ()
        requests = pushes(clients[2], m.OpenRequest)
        assert requests and all(r.time_left == 30_000 for r in requests)
        return
    pytest.fail("no game eliminated a face-down card of seat 2")


def test_a_final_reveal_that_never_comes_forfeits_after_the_reply_timer() -> None:
    class NoFinalReveal(Behaviour):
        def messages(self, client: Seated) -> list[m.Message]:
            return [x for x in super().messages(client) if not isinstance(x, m.FinalReveal)]

    world, clients = table({1: NoFinalReveal})
    world.run(lambda: bool(pushes(clients[0], m.FinalRevealRequest)))
    start = world.now
    world.run(lambda: bool(world.records))
    assert world.now - start == pytest.approx(30)
    record = world.records[0].record
    assert record.verdicts[1].reason == "did not send its final reveal in time"
    assert [v.status for v in record.verdicts] == ["ok", "forfeited", "ok"]
    assert verify_record(record).problems == ()


def test_a_false_final_reveal_fails_the_seat() -> None:
    world, clients = table({0: FalseSeed})
    world.run(lambda: bool(world.records))
    world.settle()
    record = world.records[0].record
    assert record.verdicts[0].status == "failed"
    assert any(isinstance(e, m.Error) and e.code == "bad_opening" for e in clients[0].errors())
    end = pushes(clients[1], m.GameEnd)[0]
    assert end.forfeits == (0,)


def test_a_player_away_past_the_grace_period_is_stood_in_for_then_takes_the_seat_back() -> None:
    world, clients = table(turn_timer=None)
    world.run(
        lambda: (
            (g := clients[0].state.game) is not None
            and (view := g.view()) is not None
            and view["round"] >= 2
        )
    )
    world.disconnect(clients[1])
    # The others play on until seat 1 must decide; then the clock runs.
    world.run(lambda: clients[0].state.room.seats[1].bot == "stand_in")
    away = [r for r in pushes(clients[0], m.RoomState) if not r.seats[1].connected]
    assert away[0].seats[1].bot is None  # within the grace period
    assert world.now >= 60
    clients[1] = world.reconnect(clients[1])
    world.run(lambda: clients[0].state.room.seats[1].bot is None)
    assert clients[0].state.room.seats[1].connected
    world.run(lambda: bool(world.records))
    record = world.records[0].record
    changes = [(c.seat, c.change) for c in record.seat_changes]
    assert changes == [(1, STAND_IN), (1, BACK)]
    assert record.seats[1].stand_in and verify_record(record).problems == ()
    # Nothing of seat 1's needed its secrets while it was away: it is ok.
    assert [v.status for v in record.verdicts] == ["ok", "ok", "ok"]


def finished(world: InProcess) -> bool:
    """`world`'s game is over (its record is out)."""
    return bool(world.records)


def asked_to_open(client: Client) -> bool:
    game = client.state.game
    decision = None if game is None else game.decision
    return decision is not None and decision.kind == "open" and decision.seat == game.seat


def test_an_opening_owed_by_a_seat_away_waits_for_the_end_of_its_grace() -> None:
    """The reply timer (30 s) is longer for a disconnected seat: its player may
    come back within the grace period (60 s) and open the card (here after
    45 s); one who does not come back has it forfeited by the stand-in."""
    for comes_back in (True, False):
        for seed in range(40):
            world, clients = table({1: NeverOpens}, seed=seed)
            try:
                world.run(partial(asked_to_open, clients[1]), max_seconds=1)
            except Stalled:
                continue
            world.disconnect(clients[1])
            world.advance(45)
            assert world.records == [] and not world.gateway.lobby.rooms[1].table.stood_in(1)
            if comes_back:
                clients[1].behaviour = Behaviour(Bot("random"))
                clients[1] = world.reconnect(clients[1])
            world.run(partial(finished, world))
            record = world.records[0].record
            if comes_back:
                assert record.verdicts[1].status == "ok" and record.seat_changes == ()
            else:
                assert record.verdicts[1].reason.startswith("was away when card")
            break
        else:
            pytest.fail("no game asked seat 1 to open a card")


def test_a_player_who_leaves_is_played_by_the_stand_in_to_the_end() -> None:
    world, clients = table()
    world.run(lambda: len(game_pushes(clients[0])) > 10)
    clients[1].send(m.LeaveRoom())
    world.run(lambda: clients[0].state.room.seats[1].bot == "stand_in")
    seat = clients[0].state.room.seats[1]
    assert (seat.name, seat.player, seat.connected) == ("p1", None, False)
    world.settle()
    assert clients[1].state.room is None
    record = world.records[0].record
    assert [(c.seat, c.change) for c in record.seat_changes] == [(1, LEFT)]
    assert record.verdicts[1].status == "forfeited" and record.verdicts[1].reason == "left the game"
    assert verify_record(record).problems == ()
    # After the game the seat is free again.
    assert clients[0].state.room.state == "finished"
    assert clients[0].state.room.seats[1].name is None


def test_an_honest_hand_over_lets_a_bot_finish_with_the_seat_s_secrets() -> None:
    world, clients = table()
    world.run(lambda: len(game_pushes(clients[0])) > 12)
    game = clients[1].state.game
    secrets = game.secrets
    hidden = [pid for pid in secrets.placed_cards() if pid not in game.openings]
    clients[1].send(m.HandOver(seed=secrets.seed, openings=tuple(secrets.openings(hidden))))
    world.run(lambda: bool(world.records))
    record = world.records[0].record
    assert record.seats[1].handed_to_bot
    assert [(c.seat, c.change) for c in record.seat_changes] == [(1, HANDED_TO_BOT)]
    assert verify_record(record).ok
    assert len(world.bots) == 1  # the bot that took seat 1 over
    # The bot placed cards after the hand-over: it knew the seat's hand.
    handed_at = record.seat_changes[0].log_index
    assert any(e.seat == 1 and e.pid is not None and e.commitment for e in record.log[handed_at:])


def test_a_false_hand_over_fails_the_seat_and_the_stand_in_plays_it() -> None:
    world, clients = table()
    world.run(lambda: len(game_pushes(clients[0])) > 12)
    request = clients[1].send(m.HandOver(seed=bytes(32), openings=()))
    world.settle()
    answer = clients[1].answer(request)
    assert isinstance(answer, m.Error) and answer.code == "bad_opening"
    assert clients[1].state.room is None
    world.run(lambda: bool(world.records))
    record = world.records[0].record
    assert record.verdicts[1].status == "failed"
    assert [(c.seat, c.change) for c in record.seat_changes] == [(1, LEFT)]
    assert verify_record(record).problems == ()


def test_a_game_whose_every_hand_over_failed_ends_and_its_room_closes() -> None:
    """Every player hands over secrets that fail: the stand-in plays every seat
    to the end, and the game ends (nobody is left to reveal), with its record;
    the room, with no player left in it, closes and no longer counts."""
    world, clients = table()
    watcher = world.connect("Wat")
    watcher.send(m.Spectate(room=1))
    world.run(lambda: len(game_pushes(clients[0])) > 12)
    requests = [c.send(m.HandOver(seed=bytes(32), openings=())) for c in clients]
    world.settle()
    for client, request in zip(clients, requests, strict=True):
        answer = client.answer(request)
        assert isinstance(answer, m.Error) and answer.code == "bad_opening"
    assert len(world.records) == 1
    record = world.records[0].record
    reason = "its seed does not match its seed commitment"
    assert [(v.status, v.reason) for v in record.verdicts] == [("failed", reason)] * 3
    assert [(c.seat, c.change) for c in record.seat_changes] == [(0, LEFT), (1, LEFT), (2, LEFT)]
    assert verify_record(record).problems == ()
    assert pushes(watcher, m.GameEnd)
    states = [r.state for r in pushes(watcher, m.RoomState)]
    assert states[-2:] == ["finished", "closed"]
    assert world.gateway.lobby.rooms == {}  # no longer one of the server's max_rooms


def test_the_time_left_counts_down_in_a_snapshot() -> None:
    world, clients = table({1: Undecided}, turn_timer=60)
    world.run(
        lambda: (
            (g := clients[0].state.game) is not None
            and g.decision is not None
            and g.decision.seat == 1
            and g.decision.kind == "place"
        )
    )
    world.advance(20)
    clients[0].send(m.Sync())
    world.settle()
    snapshot = [s for s in game_pushes(clients[0]) if s.snapshot][-1]
    assert snapshot.decision is not None and snapshot.decision.seat == 1
    assert snapshot.decision.time_left is not None
    assert 39_000 <= snapshot.decision.time_left <= 40_000


def test_a_hand_over_by_a_player_with_the_longest_name() -> None:
    """The bot that takes the seat over is named after the player, within the
    32 characters a name may have."""
    world, clients = table(names=("p0", "L" * 32))
    world.run(lambda: len(game_pushes(clients[0])) > 12)
    game = clients[1].state.game
    hidden = [pid for pid in game.secrets.placed_cards() if pid not in game.openings]
    request = clients[1].send(
        m.HandOver(seed=game.secrets.seed, openings=tuple(game.secrets.openings(hidden)))
    )
    world.settle()
    assert isinstance(clients[1].answer(request), m.Ok)
    world.run(lambda: bool(world.records))
    assert world.faults == []
    assert verify_record(world.records[0].record).ok
    names = [s.name for s in clients[0].state.room.seats]
    assert names[1] == "L" * 26 + " (bot)"

"""Sessions and resuming, as docs/PROTOCOL.md "Sessions and resuming" and
"Pushes and seq" describe them, through the server's core.

A resume keeps the player id and rotates the token (the previous one works
until the new one is used); an unknown token is `bad_token`; a connection
still open on the session is closed with `session_replaced`. After the
`welcome` comes a snapshot in a fixed order, or, with `hello.seq`, exactly
the pushes missed while they are still kept. `sync` gives the snapshot at
any time. Push numbers go up by one on every connection, and the session
token appears nowhere but in its own `welcome`.
"""

from __future__ import annotations

import hashlib
import random
import struct
from collections.abc import Callable, Hashable
from typing import Any

import msgpack
import pytest

from oriflamme.client.bots import Bot
from oriflamme.launcher.inprocess import Client, InProcess
from oriflamme.protocol import messages as m
from oriflamme.protocol.record import encode_record
from oriflamme.protocol.verify import verify_record
from oriflamme.server.core import Effect, StartBot
from tools.docgen.sample_records import Undecided

from .scenario import (
    Filtered,
    after,
    ask,
    game_round,
    last_room,
    new_world,
    ok,
    player,
    pushes,
    received,
    refused,
    resume,
    seq_of,
    settings,
    table,
    types,
)


def welcome(client: Client) -> m.Welcome:
    first = client.received[0]
    assert isinstance(first, m.Welcome), first
    return first


def fatal_error(client: Client) -> m.Error:
    errors = [x for x in client.received if isinstance(x, m.Error) and x.fatal]
    assert errors, f"{client.endpoint.name} got no fatal error"
    assert not client.connected  # the server closed the connection
    return errors[-1]


def session(world: InProcess, client: Client) -> Any:
    assert client.state.player is not None
    return world.gateway.lobby.sessions.by_player[client.state.player]


# ------------------------------------------------------------ tokens


def test_a_resume_keeps_the_player_id_and_gives_a_new_token() -> None:
    world = new_world("resume")
    ann = player(world, "Ann")
    first = welcome(ann)
    assert first.resumed is False and len(first.token) == 32
    world.disconnect(ann)

    again = resume(world, ann)

    second = welcome(again)
    assert second.resumed is True
    assert second.player == first.player
    assert second.token != first.token and len(second.token) == 32
    assert second.idle_timeout == first.idle_timeout == 86400


def test_the_old_token_works_until_the_new_one_is_used_then_bad_token() -> None:
    world = new_world("rotation")
    ann = player(world, "Ann")
    t0 = welcome(ann).token
    world.disconnect(ann)
    lost = resume(world, ann, token=t0)  # its welcome (t1) never reached the client, say
    t1 = welcome(lost).token
    world.disconnect(lost)

    again = resume(world, ann, token=t0)  # t1 was never used: t0 still works
    assert welcome(again).resumed and welcome(again).player == welcome(ann).player
    t2 = welcome(again).token
    assert len({t0, t1, t2}) == 3
    world.disconnect(again)
    latest = resume(world, ann, token=t2)  # the new token is used...
    assert welcome(latest).resumed
    world.disconnect(latest)

    stale = resume(world, ann, token=t0)  # ...so the old one is dead

    error = fatal_error(stale)
    assert error.code == "bad_token" and error.id == 1
    assert types(stale.received) == ["error"]
    # The session itself is untouched: the newest token still resumes it.
    t3 = welcome(latest).token
    back = resume(world, ann, token=t3)
    assert welcome(back).resumed and welcome(back).player == welcome(ann).player


def test_once_the_new_token_is_used_the_previous_one_is_bad_token() -> None:
    world = new_world("rotation, simply")
    ann = player(world, "Ann")
    t0 = welcome(ann).token
    world.disconnect(ann)
    first = resume(world, ann, token=t0)
    t1 = welcome(first).token
    world.disconnect(first)
    second = resume(world, ann, token=t1)
    assert welcome(second).resumed
    world.disconnect(second)

    assert fatal_error(resume(world, ann, token=t0)).code == "bad_token"


def test_an_unknown_token_is_refused_with_bad_token_and_a_new_session_works() -> None:
    world = new_world("unknown token")
    ann = player(world, "Ann")
    stranger = resume(world, ann, token=bytes(range(32)))
    error = fatal_error(stranger)
    assert (error.code, error.fatal) == ("bad_token", True)
    assert not any(isinstance(x, m.Welcome) for x in stranger.received)
    assert ann.connected  # nothing happened to Ann's session
    fresh = player(world, "Stranger")
    assert welcome(fresh).resumed is False and welcome(fresh).player != welcome(ann).player


def test_a_connection_still_open_on_the_session_is_closed_with_session_replaced() -> None:
    world = new_world("replaced")
    ann, bob = player(world, "Ann"), player(world, "Bob")
    ok(world, ann, m.CreateRoom(settings=settings(3)))
    ok(world, bob, m.JoinRoom(room=1))
    assert ann.connected

    again = resume(world, ann, seq=ann.endpoint.seq)

    error = fatal_error(ann)
    assert (error.code, error.id) == ("session_replaced", None)
    assert welcome(again).resumed and welcome(again).player == welcome(ann).player
    assert last_room(bob).seats[0].connected  # the seat never showed as away for good
    ok(world, again, m.Chat(text="still here"))
    assert received(bob, m.ChatMessage)[-1].player == welcome(ann).player


def test_a_resume_ignores_the_name_in_hello() -> None:
    world = new_world("names")
    ann = player(world, "Ann")
    ok(world, ann, m.CreateRoom(settings=settings(3)))
    world.disconnect(ann)
    ann.endpoint.name = "Mallory"
    again = resume(world, ann)
    assert last_room(again).seats[0].name == "Ann"


def test_a_disconnected_session_expires_after_the_session_ttl() -> None:
    world = new_world("expiry", session_ttl=600)
    ann, bob = player(world, "Ann"), player(world, "Bob")
    ok(world, ann, m.CreateRoom(settings=settings(3)))
    ok(world, bob, m.JoinRoom(room=1))
    world.disconnect(ann)
    world.advance(599)
    assert last_room(bob).seats[0].name == "Ann"
    held = resume(world, ann)  # within the ttl: back
    assert welcome(held).resumed
    world.disconnect(held)

    world.advance(601)

    state = last_room(bob)
    assert state.seats[0].name is None  # Ann's session left the room...
    assert state.host == welcome(bob).player  # ...passing the host to Bob...
    gone = resume(world, held)
    assert fatal_error(gone).code == "bad_token"  # ...and is forgotten


def test_only_the_disconnected_sessions_are_watched_for_expiry_even_after_a_restore() -> None:
    world = new_world("away", session_ttl=600, lobby_ttl=600)
    ann, bob = player(world, "Ann"), player(world, "Bob")
    sessions = world.gateway.lobby.sessions
    assert sessions.away == {}  # connected sessions cost the timers nothing
    world.disconnect(ann)
    assert list(sessions.away) == [welcome(ann).player]
    assert welcome(bob).player not in sessions.away
    assert world.gateway.lobby.next_deadline() == pytest.approx(world.now + 600)
    # A lobby saved before `away` was kept (a snapshot of an older server)
    # finds its disconnected sessions again.
    state = sessions.__dict__.copy()
    del state["away"]
    restored = object.__new__(type(sessions))
    restored.__setstate__(state)
    assert restored.away.keys() == sessions.away.keys()
    resume(world, ann)
    assert sessions.away == {}


def test_a_seated_player_s_session_lasts_while_the_game_is_played() -> None:
    world = new_world("held session", session_ttl=10, grace=5)
    # Seat 2 never decides: each of its decisions takes the 10-second turn timer.
    clients = table(world, 3, behaviours={2: Undecided(None)}, turn_timer=10)
    world.run(lambda: game_round(clients[0]) >= 2)
    away_since = world.now
    world.disconnect(clients[1])

    world.run(lambda: world.now - away_since > 30)  # the stand-in plays seat 1 meanwhile

    assert last_room(clients[0]).state == "playing" and not world.records
    assert last_room(clients[0]).seats[1].bot == "stand_in"
    again = resume(world, clients[1], seq=clients[1].endpoint.seq)
    assert welcome(again).resumed
    assert last_room(clients[0]).seats[1].bot is None


def test_a_seated_player_away_at_the_end_of_the_game_expires_then() -> None:
    """Held while the game is played, long past the session ttl; when the
    game ends the session is let go (tests/conftest.py checks the lobby's
    next deadline against a scan of every session at each step)."""
    world = new_world("held then let go", session_ttl=2, grace=5)
    clients = table(world, 3)
    world.run(lambda: game_round(clients[0]) >= 2)
    world.disconnect(clients[1])
    lobby = world.gateway.lobby
    world.run(lambda: bool(world.records))  # the stand-in plays seat 1 to the end
    assert world.now > 2  # past the ttl...
    assert welcome(clients[1]).player in lobby.sessions.by_player  # ...held until now

    world.advance(1)

    assert welcome(clients[1]).player not in lobby.sessions.by_player
    assert last_room(clients[0]).seats[1].name is None
    assert welcome(clients[1]).player not in lobby.sessions.away


# ------------------------------------------------------------ the snapshot


def snapshot_after_resume(world: InProcess, client: Client, **options: Any) -> list[m.Message]:
    """Drop `client`'s connection, resume without `seq`: what follows the welcome."""
    world.disconnect(client)
    again = resume(world, client, **options)
    assert welcome(again).resumed
    return again.received[1:]


def test_the_snapshot_of_a_room_without_a_game_is_its_room_state() -> None:
    world = new_world("snapshot room")
    ann, bob = player(world, "Ann"), player(world, "Bob")
    ok(world, ann, m.CreateRoom(settings=settings(3)))
    ok(world, bob, m.JoinRoom(room=1))
    old_seq = ann.endpoint.seq
    assert old_seq is not None

    followed = snapshot_after_resume(world, ann)

    # The snapshot, then the room showing Ann back.
    assert types(followed) == ["room_state", "room_state"]
    snapshot, back = followed
    assert isinstance(snapshot, m.RoomState) and isinstance(back, m.RoomState)
    assert snapshot.seat == 0 and [s.name for s in snapshot.seats] == ["Ann", "Bob", None]
    assert snapshot.seq > old_seq and back.seq == snapshot.seq + 1
    assert snapshot.seats[0].connected and back.seats[0].connected


def test_the_snapshot_in_the_lobby_is_nothing() -> None:
    world = new_world("snapshot lobby")
    ann = player(world, "Ann")
    assert snapshot_after_resume(world, ann) == []


def test_the_snapshot_while_seeds_are_committed_stops_at_game_started() -> None:
    world = new_world("snapshot seeding")
    silent = Filtered(None, lambda message: True)
    clients = table(world, 3, behaviours={0: silent})
    world.settle()  # seats 1 and 2 commit, seat 0 does not; no time passes

    followed = snapshot_after_resume(world, clients[0])

    assert types(followed) == ["room_state", "game_started", "room_state"]
    started = followed[1]
    assert isinstance(started, m.GameStarted)
    assert started.seat == 0 and 0 < started.time_left <= 30_000


def test_after_a_cancelled_game_the_snapshot_is_the_room_alone() -> None:
    world = new_world("cancelled")
    silent = Filtered(None, lambda message: True)  # never commits to a seed
    ann = world.connect("Ann", behaviour=silent)
    world.settle()
    for request in (
        m.CreateRoom(settings=settings(2)),
        m.AddBot(strategy="random"),
        m.Ready(ready=True),
        m.StartGame(),
    ):
        ok(world, ann, request)
    world.advance(31)  # the seeding timer: the game is cancelled before it began
    assert last_room(ann).state == "waiting"
    assert any("cancelled" in c.text for c in received(ann, m.ChatMessage))

    mark = len(ann.received)
    ok(world, ann, m.Sync())
    synced = types(after(ann, mark))
    watcher = player(world, "Wat")
    mark = len(watcher.received)
    ok(world, watcher, m.Spectate(room=1))
    watched = types(after(watcher, mark))
    resumed = types(snapshot_after_resume(world, ann))

    assert (synced, watched, resumed) == (
        ["ok", "room_state"],
        ["ok", "room_state"],
        ["room_state", "room_state"],
    )


def test_the_snapshot_during_play() -> None:
    world = new_world("snapshot play", seed=1, versions=(1,))
    clients = table(world, 3, seed=1)
    world.run(lambda: game_round(clients[0]) >= 2)
    game = clients[1].state.game
    seen_commitments = set(game.commitments)
    seen_openings = set(game.openings)

    followed = snapshot_after_resume(world, clients[1])

    assert types(followed[:5]) == [
        "room_state",
        "game_started",
        "server_seed",
        "game_state",
        "room_state",
    ]
    room, started, seed, state, back = followed[:5]
    assert isinstance(room, m.RoomState) and room.state == "playing" and room.seat == 1
    assert isinstance(started, m.GameStarted) and started.seat == 1
    assert started.game == game.game_id
    assert isinstance(seed, m.ServerSeed) and seed.seed == game.server_seed
    assert isinstance(state, m.GameState) and state.snapshot and state.events == []
    assert state.view["viewer"] == 1 and state.decision is not None
    # Every commitment and opening so far (each opening checked against its commitment).
    assert sorted(c.pid for c in state.commitments) == list(range(state.view["next_pid"]))
    assert seen_commitments <= set(range(state.view["next_pid"]))
    assert {o.pid for o in state.openings} >= seen_openings and state.openings
    assert not game.problems
    assert isinstance(back, m.RoomState) and back.seats[1].connected
    # The seat plays on from the snapshot, to a valid game.
    world.run(lambda: bool(world.records))
    assert verify_record(world.records[0].record).ok


def test_a_spectator_s_snapshot_is_the_public_one() -> None:
    world = new_world("spectator snapshot", seed=9, versions=(1,))
    watcher = player(world, "Wat")
    clients = table(world, 3, seed=9)
    watcher.send(m.Spectate(room=1))
    world.run(lambda: game_round(clients[0]) >= 2)

    followed = snapshot_after_resume(world, watcher)

    assert types(followed[:4]) == ["room_state", "game_started", "server_seed", "game_state"]
    room, started, _, state = followed[:4]
    assert isinstance(room, m.RoomState) and room.seat is None and room.spectators == 1
    assert isinstance(started, m.GameStarted) and started.seat is None
    assert isinstance(state, m.GameState) and state.snapshot and state.view["viewer"] is None
    assert "open_request" not in types(followed) and "final_reveal_request" not in types(followed)


def find_open_request(dropped: int) -> tuple[InProcess, list[Client]]:
    """A 4-seat game stopped when seat `dropped`, which never opens its
    eliminated cards, is asked to open one."""
    for seed in range(30):
        world = new_world(f"open request {seed}", seed=seed, versions=(1,))
        bot = Bot("random", rng=random.Random(seed))
        never_opens = Filtered(bot, lambda x: isinstance(x, m.OpenCard))
        clients = table(world, 4, behaviours={dropped: never_opens}, seed=seed)
        if asked_to_open(world, clients[dropped]):
            return world, clients
    pytest.fail(f"no game asked seat {dropped} to open a card")


def asked_to_open(world: InProcess, client: Client) -> bool:
    """Run until `client` is asked to open a card (True) or the game ends (False)."""
    world.run(lambda: bool(received(client, m.OpenRequest)) or bool(world.records))
    return not world.records


def test_the_snapshot_includes_an_open_request_still_waiting() -> None:
    world, clients = find_open_request(2)
    request = received(clients[2], m.OpenRequest)[-1]

    followed = snapshot_after_resume(world, clients[2])

    assert types(followed[:6]) == [
        "room_state",
        "game_started",
        "server_seed",
        "game_state",
        "open_request",
        "room_state",
    ]
    state, again = followed[3], followed[4]
    assert isinstance(state, m.GameState) and state.decision is not None
    assert (state.decision.kind, state.decision.seat, state.decision.pid) == (
        "open",
        2,
        request.pid,
    )
    assert isinstance(again, m.OpenRequest) and again.pid == request.pid
    assert again.game == request.game and 0 < again.time_left <= 30_000


def test_the_snapshot_includes_a_final_reveal_request_still_waiting() -> None:
    world = new_world("final reveal", seed=4, versions=(1,))
    bot = Bot("random", rng=random.Random(4))
    keeps_secrets = Filtered(bot, lambda x: isinstance(x, m.FinalReveal))
    clients = table(world, 3, behaviours={1: keeps_secrets}, seed=4)
    world.run(lambda: bool(received(clients[1], m.FinalRevealRequest)))
    asked = received(clients[1], m.FinalRevealRequest)[-1]

    followed = snapshot_after_resume(world, clients[1])

    assert types(followed[:6]) == [
        "room_state",
        "game_started",
        "server_seed",
        "game_state",
        "final_reveal_request",
        "room_state",
    ]
    state, again = followed[3], followed[4]
    assert isinstance(state, m.GameState) and state.decision is None
    assert state.view["step"] == "over"
    assert isinstance(again, m.FinalRevealRequest) and again.pids == asked.pids
    assert received(clients[1], m.GameEnd) == []


def test_the_snapshot_of_a_game_over_ends_with_game_end() -> None:
    world = new_world("over", seed=5, versions=(1,))
    clients = table(world, 3, seed=5)
    world.run(lambda: bool(world.records))
    world.settle()
    end = received(clients[0], m.GameEnd)[-1]

    followed = snapshot_after_resume(world, clients[0])

    assert types(followed) == [
        "room_state",
        "game_started",
        "server_seed",
        "game_state",
        "game_end",
        "room_state",
    ]
    assert isinstance(followed[0], m.RoomState) and followed[0].state == "finished"
    again = followed[4]
    assert isinstance(again, m.GameEnd)
    assert (again.game, again.scores, again.winners) == (end.game, end.scores, end.winners)


def test_who_takes_a_seat_after_the_game_gets_the_room_without_that_game() -> None:
    """A finished room shows its last game to the players who played it and to
    spectators; who takes a seat after it ended (a player, by `sync` or a
    resume; a bot, at its start) gets the room alone, as in a room waiting
    for players: that game is not theirs."""
    world = new_world("seated after the game", seed=5, versions=(1,))
    clients = table(world, 3, seed=5)
    world.run(lambda: bool(world.records))
    world.settle()
    ok(world, clients[2], m.LeaveRoom())
    ok(world, clients[1], m.LeaveRoom())
    di = player(world, "Di")
    ok(world, di, m.JoinRoom(room=1, seat=2))
    ok(world, clients[0], m.AddBot(strategy="random", seat=1))  # the host
    world.settle()
    assert last_room(di).state == "finished" and last_room(di).seat == 2
    (bot,) = world.bots.values()

    mark_di = len(di.received)
    ok(world, di, m.Sync())
    synced = after(di, mark_di)
    resumed = snapshot_after_resume(world, di)

    assert types(synced) == ["ok", "room_state"]
    assert types(resumed) == ["room_state", "room_state"]
    assert isinstance(resumed[0], m.RoomState) and resumed[0].state == "finished"
    assert received(bot, m.GameStarted) == [] and received(bot, m.GameEnd) == []
    # Who played the game, and a spectator, still see it.
    played = snapshot_after_resume(world, clients[0])
    assert types(played) == [
        "room_state",
        "game_started",
        "server_seed",
        "game_state",
        "game_end",
        "room_state",
    ]
    assert isinstance(played[1], m.GameStarted) and played[1].seat == 0
    watcher = player(world, "Wat")
    ok(world, watcher, m.Spectate(room=1))
    watched = snapshot_after_resume(world, watcher)
    assert "game_end" in types(watched)
    assert received(watcher, m.GameStarted)[-1].seat is None


def test_who_played_the_game_and_takes_a_seat_again_gets_the_room_alone() -> None:
    """A player who left the seat after the game and takes one again is seated
    after the game ended too."""
    world = new_world("seated again", seed=5)
    clients = table(world, 3, seed=5)
    world.run(lambda: bool(world.records))
    world.settle()
    ok(world, clients[2], m.LeaveRoom())
    ok(world, clients[2], m.JoinRoom(room=1, seat=2))
    mark = len(clients[2].received)
    ok(world, clients[2], m.Sync())
    assert types(after(clients[2], mark)) == ["ok", "room_state"]


# ------------------------------------------------------------ resuming with seq


def test_a_resume_with_seq_gets_exactly_the_pushes_missed() -> None:
    world = new_world("missed")
    ann, bob = player(world, "Ann"), player(world, "Bob")
    ok(world, ann, m.CreateRoom(settings=settings(3)))
    ok(world, bob, m.JoinRoom(room=1))
    last_seen = ann.endpoint.seq
    assert last_seen is not None
    world.disconnect(ann)
    for text in ("one", "two", "three"):
        ok(world, bob, m.Chat(text=text))
    ok(world, bob, m.Ready(ready=True))
    kept = session(world, ann).kept()
    missed = [x for x in kept if x.seq > last_seen]
    assert len(missed) == 5  # Ann away, three lines, Bob ready

    again = resume(world, ann, seq=last_seen)

    followed = again.received[1:]
    assert [m.to_data(x) for x in followed[:5]] == [m.to_data(x) for x in missed]
    assert [seq_of(x) for x in followed[:5]] == list(range(last_seen + 1, last_seen + 6))
    assert [x.text for x in followed[:5] if isinstance(x, m.ChatMessage)] == ["one", "two", "three"]
    assert types(followed) == ["room_state", *["chat_message"] * 3, "room_state", "room_state"]
    back = followed[5]
    assert isinstance(back, m.RoomState) and back.seq == last_seen + 6 and back.seats[0].connected


def test_a_resume_with_the_last_seq_gets_nothing_again() -> None:
    world = new_world("nothing missed")
    ann, bob = player(world, "Ann"), player(world, "Bob")
    ok(world, ann, m.CreateRoom(settings=settings(3)))
    ok(world, bob, m.JoinRoom(room=1))
    again = resume(world, ann, seq=ann.endpoint.seq)  # replaces the open connection: nothing missed
    assert types(again.received) == ["welcome", "room_state"]


@pytest.mark.parametrize("lines", [3, 4])
def test_a_resume_with_seq_gets_a_snapshot_once_the_history_lost_a_missed_push(
    lines: int,
) -> None:
    world = new_world("too late", history=4)  # each session keeps its last 4 pushes
    ann, bob = player(world, "Ann"), player(world, "Bob")
    ok(world, ann, m.CreateRoom(settings=settings(3)))
    ok(world, bob, m.JoinRoom(room=1))
    last_seen = ann.endpoint.seq
    assert last_seen is not None
    world.disconnect(ann)
    for i in range(lines):
        ok(world, bob, m.Chat(text=f"line {i}"))
    missed = 1 + lines  # Ann shown away, then the lines

    again = resume(world, ann, seq=last_seen)

    followed = again.received[1:]
    if missed <= 4:  # all still kept: exactly those
        assert types(followed) == ["room_state", *["chat_message"] * lines, "room_state"]
        assert [seq_of(x) for x in followed] == list(range(last_seen + 1, last_seen + missed + 2))
    else:  # one is lost: the snapshot, then Ann back
        assert types(followed) == ["room_state", "room_state"]
        assert seq_of(followed[0]) == last_seen + missed + 1  # the missed numbers are skipped
        assert not any(isinstance(x, m.ChatMessage) for x in followed)


def test_a_resume_with_a_seq_from_the_future_gets_a_snapshot() -> None:
    world = new_world("future")
    ann = player(world, "Ann")
    ok(world, ann, m.CreateRoom(settings=settings(3)))
    world.disconnect(ann)
    last_seen = ann.endpoint.seq
    assert last_seen is not None
    again = resume(world, ann, seq=last_seen + 50)
    assert types(again.received) == ["welcome", "room_state", "room_state"]


def test_a_seat_resumed_with_seq_mid_game_plays_on_to_a_valid_game() -> None:
    world = new_world("resume mid-game", seed=6, versions=(1,))
    clients = table(world, 3, seed=6)
    world.run(lambda: game_round(clients[0]) >= 2)
    last_seen = clients[1].endpoint.seq
    world.disconnect(clients[1])
    world.settle()  # the others play on until seat 1 must decide
    missed = [x for x in session(world, clients[1]).kept() if x.seq > last_seen]
    assert any(isinstance(x, m.GameState) for x in missed)

    again = world.reconnect(clients[1])
    world.settle()

    followed = again.received[1 : 1 + len(missed)]
    assert [m.to_data(x) for x in followed] == [m.to_data(x) for x in missed]
    assert not any(isinstance(x, m.GameState) and x.snapshot for x in again.received)
    world.run(lambda: bool(world.records))
    world.settle()
    assert verify_record(world.records[0].record).ok
    assert not again.state.problems and not again.errors()


def test_the_time_left_of_a_missed_push_counts_from_when_it_is_sent() -> None:
    world = new_world("stale time_left", seed=10, versions=(1,))
    clients = table(world, 3, turn_timer=60, seed=10)
    world.run(lambda: game_round(clients[0]) >= 2)
    last_seen = clients[1].endpoint.seq
    world.disconnect(clients[1])
    world.settle()  # the others play on until seat 1 must decide: its 60 seconds run
    world.advance(20)  # within the grace period and the turn timer
    assert last_room(clients[0]).seats[1].bot is None
    missed = [x for x in session(world, clients[1]).kept() if x.seq > last_seen]

    again = resume(world, clients[1], seq=last_seen)

    resent = again.received[1 : 1 + len(missed)]
    assert [seq_of(x) for x in resent] == [x.seq for x in missed]
    states = [x for x in resent if isinstance(x, m.GameState)]
    assert states and not any(s.snapshot for s in states)
    decision = states[-1].decision
    assert decision is not None and decision.seat == 1
    assert decision.time_left is not None and decision.time_left <= 40_000


# ------------------------------------------------------------ sync


def test_sync_answers_ok_then_the_snapshot() -> None:
    world = new_world("sync", seed=7, versions=(1,))
    lone = player(world, "Lone")
    refused(world, lone, m.Sync(), "wrong_state")
    clients = table(world, 3, seed=7)
    world.run(lambda: game_round(clients[0]) >= 2)
    mark = len(clients[2].received)

    request = clients[2].send(m.Sync())
    world.run(lambda: clients[2].answer(request) is not None)

    followed = after(clients[2], mark)
    answer = clients[2].answer(request)
    assert answer is not None
    answered = followed.index(answer)  # game pushes may come before
    followed = followed[answered:]
    assert types(followed[:5]) == ["ok", "room_state", "game_started", "server_seed", "game_state"]
    state = followed[4]
    assert isinstance(state, m.GameState) and state.snapshot and state.view["viewer"] == 2
    seqs = [seq_of(x) for x in followed if x.ROLE == "push"]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    world.run(lambda: bool(world.records))
    assert verify_record(world.records[0].record).ok


def test_sync_in_a_room_without_a_game() -> None:
    world = new_world("sync room")
    ann = player(world, "Ann")
    ok(world, ann, m.CreateRoom(settings=settings(3)))
    mark = len(ann.received)
    answer = ask(world, ann, m.Sync())
    assert isinstance(answer, m.Ok)
    assert types(after(ann, mark)) == ["ok", "room_state"]


# ------------------------------------------------------------ seq and secrets


class Recorder:
    """Every frame the server sends, by connection, and every effect the core
    returns (the lobby's and the gateway's)."""

    def __init__(self, world: InProcess) -> None:
        self.frames: dict[Hashable, bytearray] = {}
        self.shell_effects: list[Effect] = []
        self.core_effects: list[Effect] = []
        gateway, lobby = world.gateway, world.gateway.lobby
        data_to_send, take_effects = gateway.data_to_send, gateway.take_effects

        def sent(conn: Hashable) -> bytes:
            data = data_to_send(conn)
            self.frames.setdefault(conn, bytearray()).extend(data)
            return data

        def taken() -> list[Effect]:
            effects = take_effects()
            self.shell_effects.extend(effects)
            return effects

        gateway.data_to_send = sent  # type: ignore[method-assign]
        gateway.take_effects = taken  # type: ignore[method-assign]
        for name in ("hello", "request", "closed", "tick"):
            setattr(lobby, name, self._keep(getattr(lobby, name)))

    def _keep(self, method: Callable[..., list[Effect]]) -> Callable[..., list[Effect]]:
        def kept(*args: Any, **options: Any) -> list[Effect]:
            effects = method(*args, **options)
            self.core_effects.extend(effects)
            return effects

        return kept

    def payloads(self) -> list[tuple[Hashable, dict[str, Any], bytes]]:
        """Every frame sent: its connection, its decoded map, its payload bytes."""
        out = []
        for conn, data in self.frames.items():
            at = 0
            while at < len(data):
                (size,) = struct.unpack_from(">I", data, at)
                payload = bytes(data[at + 4 : at + 4 + size])
                out.append((conn, msgpack.unpackb(payload, raw=False), payload))
                at += 4 + size
        return out


def a_busy_game() -> tuple[InProcess, Recorder, list[Client]]:
    """A game with two players, a server bot and a spectator; seat 1 drops
    and resumes twice (once with seq, once for a snapshot), seat 0 syncs."""
    world = new_world("busy", seed=8)
    recorder = Recorder(world)
    watcher = player(world, "Wat")
    clients = [player(world, name, bot="random", seed=i) for i, name in enumerate(("Ann", "Bob"))]
    ok(world, clients[0], m.CreateRoom(settings=settings(3)))
    ok(world, clients[1], m.JoinRoom(room=1))
    ok(world, clients[0], m.AddBot(strategy="heuristic"))
    ok(world, watcher, m.Spectate(room=1))
    for c in clients:
        ok(world, c, m.Ready(ready=True))
    clients[0].send(m.StartGame())
    world.run(lambda: game_round(clients[0]) >= 2)
    world.disconnect(clients[1])
    world.settle()
    clients[1] = world.reconnect(clients[1])
    world.run(lambda: game_round(clients[0]) >= 4)
    world.disconnect(clients[1])
    clients[1] = resume(world, clients[1])
    clients[0].send(m.Sync())
    world.run(lambda: bool(world.records))
    world.settle()
    return world, recorder, [*clients, watcher]


def test_push_seq_goes_up_by_exactly_one_on_every_connection() -> None:
    world, recorder, _ = a_busy_game()
    by_conn: dict[Hashable, list[int]] = {}
    for conn, data, _ in recorder.payloads():
        if "seq" in data:
            by_conn.setdefault(conn, []).append(data["seq"])
    assert len(by_conn) >= 6  # Ann, Bob three times, the spectator, the bot
    for conn, seqs in by_conn.items():
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), conn
        assert seqs[0] >= 1
    assert verify_record(world.records[0].record).ok


def tokens_of(recorder: Recorder) -> set[bytes]:
    tokens = {data["token"] for _, data, _ in recorder.payloads() if data["type"] == "welcome"}
    tokens |= {e.token for e in recorder.shell_effects if isinstance(e, StartBot)}
    return tokens


def test_no_session_token_appears_in_any_push_record_or_effect_for_the_shell() -> None:
    world, recorder, _ = a_busy_game()
    tokens = tokens_of(recorder)
    assert len(tokens) >= 6  # three connections of Bob's, and a bot's token given twice
    for conn, data, payload in recorder.payloads():
        if data["type"] == "welcome":
            continue
        for token in tokens:
            assert token not in payload, (conn, data["type"])
    record = encode_record(world.records[0].record)
    assert not any(token in record for token in tokens)
    assert recorder.shell_effects
    for effect in recorder.shell_effects:
        shown = repr(effect)
        assert not any(repr(t) in shown or t.hex() in shown for t in tokens), shown
    # The server keeps the digests of the tokens, never the tokens.
    sessions = world.gateway.lobby.sessions
    stored = repr(vars(sessions)) + "".join(
        repr({name: getattr(s, name) for name in s.__slots__}) for s in sessions
    )
    assert not any(repr(t) in stored for t in tokens)
    assert any(hashlib.sha256(t).digest() in sessions._by_digest for t in tokens)


def test_no_session_token_appears_in_the_repr_of_any_effect_of_the_core() -> None:
    _, recorder, _ = a_busy_game()
    tokens = tokens_of(recorder)
    assert recorder.core_effects
    for effect in recorder.core_effects:
        shown = repr(effect)
        assert not any(repr(t) in shown or t.hex() in shown for t in tokens), shown


def test_every_client_of_the_busy_game_saw_a_consistent_game() -> None:
    world, _, clients = a_busy_game()
    for client in clients:
        assert not client.state.problems, client.endpoint.name
        assert received(client, m.GameEnd), client.endpoint.name
    assert [p.TYPE for p in pushes(clients[2]) if p.TYPE == "open_request"] == []
    assert verify_record(world.records[0].record).ok


def test_a_session_pickles_without_a_dict_and_one_saved_with_a_dict_loads() -> None:
    """Sessions have slots, so that a snapshot does not give each a dict for
    good; a lobby saved when they had a dict still loads."""
    import pickle

    from oriflamme.server.core.sessions import Session

    session = Session(7, "Ann", history=4)
    session.last_seq = 3
    assert not hasattr(session, "__dict__")
    again = pickle.loads(pickle.dumps(session))
    assert (again.player, again.name, again.last_seq, again.history) == (7, "Ann", 3, None)
    old = {name: getattr(session, name) for name in Session.__slots__}
    loaded = object.__new__(Session)
    loaded.__setstate__(old)
    assert (loaded.player, loaded.name, loaded.last_seq) == (7, "Ann", 3)


def test_a_session_keeps_the_frames_it_pushed_and_gives_back_equal_messages() -> None:
    """The history holds frames (bytes: nothing for the garbage collector to
    walk); what a resume sends again is decoded from them, equal to what was
    pushed. A lobby saved when sessions kept messages loads as frames."""
    import pickle
    from collections import deque

    from oriflamme.protocol.codec import encode_frame
    from oriflamme.server.core.effects import Send
    from oriflamme.server.core.sessions import Session

    session = Session(7, "Ann", history=4)
    session.conn = "c1"
    lines = [dict(room=1, name="Bo", text=f"line {n}", player=2) for n in range(6)]
    sent = [session.push(m.ChatMessage, **line)[0] for line in lines]
    assert all(isinstance(effect, Send) for effect in sent)
    pushed = [effect.message for effect in sent]
    assert session.history is not None and all(type(f) is bytes for f in session.history)
    assert [effect.frame for effect in sent][-4:] == list(session.history)
    assert session.kept() == pushed[-4:]
    assert session.missed_since(4) == pushed[4:]
    assert session.missed_since(1) is None  # 5 missed, 4 kept
    old = {name: getattr(session, name) for name in Session.__slots__}
    old["history"] = deque(pushed[-4:], maxlen=4)  # as a lobby saved before kept them
    loaded = object.__new__(Session)
    loaded.__setstate__(old)
    assert list(loaded.history or ()) == [encode_frame(m.to_data(p)) for p in pushed[-4:]]
    assert pickle.loads(pickle.dumps(loaded)).kept() == pushed[-4:]


def test_a_push_that_cannot_be_encoded_is_a_fault_and_takes_no_seq() -> None:
    from oriflamme.protocol.codec import DEFAULT_MAX_FRAME
    from oriflamme.protocol.errors import FRAME_TOO_LARGE, LocalProtocolError
    from oriflamme.protocol.fanout import SharedEncoding
    from oriflamme.server.core.effects import Fault, Send
    from oriflamme.server.core.sessions import Session

    class TooLarge(SharedEncoding):
        def frame(self, message: m.Message, max_frame: int = DEFAULT_MAX_FRAME) -> bytes:
            raise LocalProtocolError(FRAME_TOO_LARGE, "a frame of 70000 bytes exceeds 65536")

    session = Session(7, "Ann", history=4)
    session.conn = "c1"
    line = dict(room=1, name="Bo", text="hello", player=2)
    (fault,) = session.push(m.ChatMessage, TooLarge(), **line)
    assert isinstance(fault, Fault) and "exceeds 65536" in fault.what
    assert (session.last_seq, session.history) == (0, None)
    (sent,) = session.push(m.ChatMessage, **line)
    assert isinstance(sent, Send) and seq_of(sent.message) == 1

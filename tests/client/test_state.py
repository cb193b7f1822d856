"""The client's mirror of a room and a game, built only from what the server sends."""

from __future__ import annotations

import dataclasses
import random

import pytest

from oriflamme.client.bots import Behaviour, Bot, Seated
from oriflamme.client.endpoint import ClientEndpoint
from oriflamme.client.seat_secrets import SeatSecrets
from oriflamme.client.state import ClientState
from oriflamme.engine import Place, Rules, card_from_data
from oriflamme.engine.events import RoundEnded
from oriflamme.launcher.inprocess import Client, InProcess
from oriflamme.protocol import messages as m
from oriflamme.protocol.commitments import Opening
from oriflamme.protocol.verify import verify_record


class Manual(Behaviour):
    """Answers only what is automatic; the test makes the decisions."""

    def messages(self, client: Seated) -> list[m.Message]:
        game = client.state.game
        return [] if game is None else game.automatic()


def game_of(
    players: int = 3,
    *,
    manual: int | None = None,
    seed: int = 1,
    versions: tuple[int, ...] = m.SUPPORTED_VERSIONS,
) -> tuple[InProcess, list[Client]]:
    world = InProcess(seed=seed, versions=versions)
    rng = random.Random(seed)
    clients = []
    for i in range(players):
        bot = Bot("random", rng=random.Random(rng.random()))
        clients.append(
            world.connect(f"p{i}", behaviour=Manual(bot) if i == manual else Behaviour(bot))
        )
    world.settle()
    clients[0].send(m.CreateRoom(settings=m.RoomSettings.for_players(players)))
    world.settle()
    for c in clients[1:]:
        c.send(m.JoinRoom(room=1))
    for c in clients:
        c.send(m.Ready(ready=True))
    world.settle()
    clients[0].send(m.StartGame())
    world.settle()
    return world, clients


def decide(world: InProcess, client: Client, kind: str | None = None) -> None:
    """Make the manual client's decisions (randomly) until one of `kind` is pending."""
    rng = random.Random(0)
    for _ in range(500):
        world.settle()
        game = client.state.game
        if game.my_turn and (kind is None or game.decision.kind == kind):
            return
        if game.my_turn:
            client.send(game.answer(rng.choice(game.options())))
    pytest.fail(f"no {kind} decision came")


def test_place_options_are_our_cards_of_each_offered_family_and_place() -> None:
    world, clients = game_of(manual=0)
    host = clients[0]
    decide(world, host, "place")
    game = host.state.game
    offered = {(o["card"][0], o["at"]) for o in game.state.decision.options}
    options = game.options()
    assert options and all(isinstance(o, Place) for o in options)
    assert {(("red", o.at)) for o in options} == offered
    assert {o.card for o in options} == set(game.secrets.hand)


def test_a_placement_commits_then_is_confirmed_by_the_server() -> None:
    world, clients = game_of(manual=0)
    host = clients[0]
    decide(world, host, "place")
    game = host.state.game
    pid = game.state.view["next_pid"]
    action = game.options()[0]
    message = game.answer(action)
    assert isinstance(message, m.PlaceCard) and message.family == "red"
    assert message.commitment == game.secrets.commit_for(pid)
    assert action.card in game.secrets.hand  # pending until the server says so
    host.send(message)
    world.run(lambda: game.secrets.card(pid) is not None)  # the push that shows it placed
    assert action.card not in game.secrets.hand and game.secrets.card(pid) == action.card
    # Our view shows our own face-down card; the others see a back.
    ours = game.view()
    assert ours is not None
    mine = [c for slot in ours["queue"] for c in slot if c["pid"] == pid][0]
    assert card_from_data(mine["card"]) == action.card and not mine["face_up"]
    world.run(lambda: clients[1].state.game.commitments.get(pid) is not None)
    theirs = clients[1].state.game.view()
    assert theirs is not None
    assert [c for slot in theirs["queue"] for c in slot if c["pid"] == pid][0]["card"][1] is None


def test_only_our_options_can_be_answered() -> None:
    world, clients = game_of(manual=0)
    host = clients[0]
    decide(world, host, "place")
    game = host.state.game
    other = clients[1].state.game
    with pytest.raises(ValueError, match="not one of our options"):
        game.answer(Place(game.secrets.set_aside[0], "first"))
    with pytest.raises(ValueError, match="no decision of ours"):
        other.answer(game.options()[0])


def test_automatic_answers_go_once_a_connection() -> None:
    world, clients = game_of(manual=1)
    game = clients[1].state.game
    assert game.server_seed is not None  # the seed commitment went out by itself
    assert game.automatic() == []
    game.reconnected()
    assert game.automatic() == []  # nothing is wanted any more


def test_a_server_seed_that_does_not_open_its_commitment_is_a_problem() -> None:
    world, clients = game_of()
    state = clients[0].state
    seed = next(x for x in clients[0].received if isinstance(x, m.ServerSeed))
    fresh = ClientState()
    started = next(x for x in clients[0].received if isinstance(x, m.GameStarted))
    fresh.receive(started)
    fresh.receive(dataclasses.replace(seed, seed=bytes(32)))
    # (and our fresh seat's secrets are not those the server holds a commitment for)
    assert fresh.problems[0] == "the server's seed does not match the commitment it made"
    assert state.problems == []


def test_an_opening_that_does_not_open_its_commitment_is_a_problem() -> None:
    world, clients = game_of(versions=(1,))
    world.run(lambda: bool(world.records))
    states = [x for x in clients[0].received if isinstance(x, m.GameState) and x.openings]
    fresh = ClientState()
    fresh.receive(next(x for x in clients[0].received if isinstance(x, m.GameStarted)))
    fresh.receive(next(x for x in clients[0].received if isinstance(x, m.ServerSeed)))
    for x in clients[0].received:
        if isinstance(x, m.GameState) and x is not states[0]:
            fresh.receive(x)
        elif x is states[0]:
            o = x.openings[0]
            fresh.receive(dataclasses.replace(x, openings=(Opening(o.pid, o.card, bytes(32)),)))
            break
    assert any("does not match its commitment" in p for p in fresh.problems)


def test_a_restarted_client_picks_its_seat_up_with_its_stored_secrets() -> None:
    """A client process killed mid-game comes back with the same session token
    and the secrets it stored: it takes its seat back and finishes the game."""
    world, clients = game_of(manual=1)
    decide(world, clients[1], "place")
    clients[1].send(clients[1].state.game.answer(clients[1].state.game.options()[0]))
    world.settle()
    stored = clients[1].state.game.secrets.to_bytes()  # what the client wrote to disk
    token = clients[1].endpoint.token
    world.disconnect(clients[1])

    def from_disk(rules: Rules, game_id: bytes, seat: int) -> SeatSecrets:
        secrets = SeatSecrets.from_bytes(stored)
        assert (secrets.game_id, secrets.seat) == (game_id, seat)
        return secrets

    endpoint = ClientEndpoint("p1", token=token, make_secrets=from_disk)
    back = world.connect("p1", behaviour=Behaviour(Bot("random")), endpoint=endpoint)
    world.run(lambda: bool(world.records))
    world.settle()
    record = world.records[0].record
    assert verify_record(record).ok and record.seat_changes == ()
    assert back.state.problems == [] and not back.errors()


def test_a_false_seat_the_server_calls_ok_is_found_at_the_end() -> None:
    world, clients = game_of()
    world.run(lambda: bool(world.records))
    world.settle()
    game = clients[0].state.game
    assert [v.status for v in game.check_end()] == ["ok", "ok", "ok"]
    end = game.end
    assert end is not None
    forged = tuple(dataclasses.replace(s, seed=bytes(32)) if s.seat == 2 else s for s in end.seeds)
    game.end = dataclasses.replace(end, seeds=forged)
    verdicts = game.check_end()
    assert verdicts[2].status == "failed"
    assert clients[0].state.problems == [
        "the server calls seat 2 ok, but its seed does not match its seed commitment"
    ]


def test_a_spectator_has_no_secrets_and_no_options() -> None:
    world, clients = game_of()
    watcher = world.connect("w")
    world.settle()
    watcher.send(m.Spectate(room=1))
    world.settle()
    game = watcher.state.game
    assert game is not None and game.secrets is None and game.seat is None
    assert game.options() == [] and game.automatic() == []
    view = game.view()
    assert view is not None and view["viewer"] is None


@pytest.mark.parametrize(
    "change",
    [
        {"families": (("red", "blue"), ("blue",), ("green",))},  # blue twice
        {"seat": 4},  # a seat the table does not have
    ],
)
def test_a_game_started_that_makes_no_sense_is_a_protocol_error(change: dict) -> None:
    from oriflamme.protocol import ServerConnection
    from oriflamme.protocol.errors import RemoteProtocolError

    world, clients = game_of()
    started = next(x for x in clients[0].received if isinstance(x, m.GameStarted))
    server, endpoint = ServerConnection(), ClientEndpoint("Ann")
    server.receive_data(endpoint.hello())
    server.next_message()
    welcome = m.Welcome(
        version=1, token=bytes(32), player=1, server="x", resumed=False, idle_timeout=60, id=1
    )
    endpoint.receive_data(server.send(welcome))
    forged = dataclasses.replace(started, seq=1, **change)
    with pytest.raises(RemoteProtocolError, match="makes no sense"):
        endpoint.receive_data(server.send(forged))
    assert endpoint.closed
    with pytest.raises(RemoteProtocolError):
        endpoint.receive_data(b"")


class Silent(Behaviour):
    """Never answers anything: not even its seed commitment."""

    def messages(self, client: Seated) -> list[m.Message]:
        return []


def test_a_game_cancelled_before_it_began_is_no_longer_mirrored() -> None:
    world = InProcess(seed=3)
    ann = world.connect("Ann", behaviour=Behaviour(Bot("random", rng=random.Random(1))))
    bob = world.connect("Bob", behaviour=Silent(None))
    world.settle()
    ann.send(m.CreateRoom(settings=m.RoomSettings.for_players(2)))
    world.settle()
    bob.send(m.JoinRoom(room=1))
    for c in (ann, bob):
        c.send(m.Ready(ready=True))
    world.settle()
    ann.send(m.StartGame())
    world.settle()
    assert ann.state.game is not None and ann.state.game.end is None
    world.advance(120)  # past the seeding timer: Bob never committed
    assert ann.state.room is not None and ann.state.room.state == "waiting"
    # The game that never began is gone from the mirror: nothing of it is
    # shown, answered or saved again (its secrets were of no more use).
    assert ann.state.game is None and bob.state.game is None


def test_a_new_session_where_we_had_one_forgets_our_games_elsewhere() -> None:
    """My games: the server no longer knows our session (a restore from
    before it, or it expired): no game of ours waits anywhere now."""
    state = ClientState()
    welcome = m.Welcome(
        version=1, token=bytes(32), player=3, server="doc", resumed=False, idle_timeout=60
    )
    state.receive(welcome)
    state.receive(m.GamesWaiting(seq=1, rooms=(4, 7)))
    assert state.games_waiting == (4, 7)
    state.receive(dataclasses.replace(welcome, player=9))  # (a new session, not resumed)
    assert not state.games_waiting and state.kept == {} and state.my_games is None


def test_a_step_out_asked_again_is_done_only_if_the_server_says_we_are_in_no_room() -> None:
    """A `leave_room` whose answer was lost is sent again after the resume: a
    refusal that we are in no room says the first was done; one that no game
    is played (the game ended meanwhile) does not, for `keep_seat`."""
    from oriflamme.client.session import _Retry

    state = ClientState()
    keep = _Retry(m.LeaveRoom(keep_seat=True), state)
    plain = _Retry(m.LeaveRoom(), state)
    no_room = m.Error(code="wrong_state", message="leave_room: you are in no room", fatal=False)
    no_game = m.Error(
        code="wrong_state",
        message="no game is being played here: leave_room, without keep_seat",
        fatal=False,
    )
    assert keep.refusal_means_done(no_room) and not keep.refusal_means_done(no_game)
    assert plain.refusal_means_done(no_room) and plain.refusal_means_done(no_game)


# ---------------------------------------------------------------- typed where it comes in


def _last_state(client: Client) -> m.GameState:
    return next(x for x in reversed(client.received) if isinstance(x, m.GameState))


def test_a_malformed_event_of_version_1_is_left_out_and_said() -> None:
    world, clients = game_of(versions=(1,))
    world.run(lambda: len(clients[0].state.game.events) > 5)
    game = clients[0].state.game
    assert game is not None and not game.problems
    state = _last_state(clients[0])
    before = list(game.events)
    good = {"type": "round_ended", "round": 1}
    forged = dataclasses.replace(
        state, seq=state.seq, events=[{"type": "placed", "seat": 1}, good]
    )  # (a placement without its card, then a good event)
    game.receive(forged)
    assert game.events == [*before, RoundEnded(round=1)]
    assert game.problems == ["the server sent a malformed event: event 'placed' lacks 'pid'"]


@pytest.mark.parametrize("version", [1, 2])
def test_a_snapshot_tells_the_game_from_its_start(version: int) -> None:
    world, clients = game_of(versions=(version,))
    world.run(lambda: len(clients[0].state.game.events) > 5)
    game = clients[0].state.game
    assert game is not None and not game.told_from_start
    clients[0].send(m.Sync())
    world.settle()
    game = clients[0].state.game
    assert game is not None and game.told_from_start
    assert len(game.events) > 5 and not game.problems

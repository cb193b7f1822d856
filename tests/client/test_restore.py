"""A server restored from a backup (or that lost its last transactions) is
behind what its clients saw, and authoritative: the client's mirror
reconciles with the snapshot it resumes with (docs/CLIENT.md, "Connections
that drop, and bots started again"). A restore is played here by giving a
client's mirror a snapshot taken earlier (`sync`), as a restored server
would send it on resuming."""

from __future__ import annotations

import dataclasses
import random

from oriflamme.client.bots import Behaviour, Bot, Seated
from oriflamme.client.state import WENT_BACK, ClientState
from oriflamme.engine import Place
from oriflamme.launcher.inprocess import Client, InProcess
from oriflamme.protocol import messages as m
from tests.client.test_state import decide, game_of


class Silent(Behaviour):
    """Sends nothing, not even its seed commitment, until told to."""

    def __init__(self) -> None:
        super().__init__(None)
        self.quiet = True

    def messages(self, client: Seated) -> list[m.Message]:
        game = client.state.game
        return [] if self.quiet or game is None else game.automatic()


def snapshot_of(world: InProcess, client: Client) -> list[m.Message]:
    """What `client` resumes with now if the server knew nothing more: the
    pushes of a snapshot (`sync`), as a server restored from a backup taken
    now would send them."""
    before = len(client.received)
    client.send(m.Sync())
    world.settle()
    return [x for x in client.received[before:] if x.ROLE == "push"]


def restore(state: ClientState, snapshot: list[m.Message]) -> None:
    for message in snapshot:
        state.receive(message)


def backup_then_played_to_end() -> tuple[InProcess, list[Client], list[m.Message]]:
    """A game whose backup is taken at our (seat 0's) placement, and which
    our bot then plays to its end: the world, its clients, the backup."""
    world, clients = game_of(manual=0)
    host = clients[0]
    decide(world, host, "place")
    backup = snapshot_of(world, host)
    host.behaviour = Behaviour(Bot("random", rng=random.Random(5)))
    world.run(lambda: bool(world.records))
    world.settle()
    return world, clients, backup


def next_game(world: InProcess, clients: list[Client]) -> None:
    """The next game begins: every seat ready again, the host starts it,
    and its server seed is out."""
    host = clients[0]
    before = host.state.game
    for c in clients:
        c.send(m.Ready(ready=True))
    world.settle()
    host.send(m.StartGame())
    world.run(lambda: host.state.game is not before and host.state.game.server_seed is not None)


def test_a_placement_the_restored_server_never_accepted_is_decided_again() -> None:
    world, clients = game_of(manual=0)
    host = clients[0]
    decide(world, host, "place")
    backup = snapshot_of(world, host)
    game = host.state.game
    pid = game.state.view["next_pid"]
    action = game.options()[0]
    host.send(game.answer(action))
    world.run(lambda: game.secrets.card(pid) is not None)
    assert action.card not in game.secrets.hand

    restore(host.state, backup)  # the server went back to before the placement
    assert host.state.game is game and game.secrets.card(pid) is None
    assert action.card in game.secrets.hand and game.my_turn
    assert host.state.notices == [WENT_BACK]
    # Decided again, for the same pid: no "card N is already placed".
    again = next(a for a in game.options() if isinstance(a, Place) and a.card != action.card)
    message = game.answer(again)
    assert isinstance(message, m.PlaceCard) and message.commitment == game.secrets.commit_for(pid)
    assert host.state.problems == []


def test_placements_the_restored_server_has_are_kept() -> None:
    """A snapshot that is not behind (a plain resume) forgets nothing and
    says nothing."""
    world, clients = game_of(manual=0)
    host = clients[0]
    decide(world, host, "place")
    host.send(host.state.game.answer(host.state.game.options()[0]))
    decide(world, host, "place")
    placed = host.state.game.secrets.placed_cards()
    assert placed
    restore(host.state, snapshot_of(world, host))
    assert host.state.game.secrets.placed_cards() == placed
    assert host.state.notices == [] and host.state.problems == []


def test_a_seed_commitment_the_restored_server_never_got_is_sent_again() -> None:
    world = InProcess(seed=3)
    rng = random.Random(3)
    silent = Silent()
    clients = [
        world.connect(f"p{i}", behaviour=silent if i == 1 else Behaviour(Bot("random", rng=rng)))
        for i in range(3)
    ]
    world.settle()
    clients[0].send(m.CreateRoom(settings=m.RoomSettings.for_players(3)))
    world.settle()
    for c in clients[1:]:
        c.send(m.JoinRoom(room=1))
    for c in clients:
        c.send(m.Ready(ready=True))
    world.settle()
    clients[0].send(m.StartGame())
    world.settle()
    seated = clients[1]
    backup = snapshot_of(world, seated)  # every seat but ours committed
    game = seated.state.game
    assert game is not None and game.server_seed is None
    seat_seed = game.secrets.seed
    commit = game.automatic()
    assert commit == [m.SeedCommit(commitment=game.secrets.seed_commitment)]
    seated.send(commit[0])
    world.run(lambda: game.server_seed is not None)

    game.reconnected()  # (a new connection, to the restored server)
    restore(seated.state, backup)
    assert seated.state.game is game and game.secrets.seed == seat_seed
    assert game.automatic() == commit  # the same commitment, sent again
    assert seated.state.problems == []


def test_a_game_seen_ending_that_the_restored_server_has_in_play_goes_on() -> None:
    world, clients, backup = backup_then_played_to_end()
    host = clients[0]
    game = host.state.game
    end = game.end
    assert end is not None

    restore(host.state, backup)
    assert host.state.game is game and game.end is None and game.seen_end == end
    assert host.state.notices == [WENT_BACK]
    assert game.my_turn and game.options()  # and its bot answers again
    assert host.behaviour.messages(host)


def test_a_game_seen_ending_comes_back_with_its_secrets_after_the_next_began() -> None:
    world, clients, backup = backup_then_played_to_end()
    host = clients[0]
    first = host.state.game
    next_game(world, clients)

    restore(host.state, backup)  # back to the first game, in play
    game = host.state.game
    assert game is first and game.end is None and game.seen_end is not None
    assert host.state.notices == [WENT_BACK] and host.state.problems == []


def test_a_restore_from_before_the_session_gives_a_new_one_in_no_room() -> None:
    world, clients = game_of()
    state = clients[0].state
    assert state.room is not None and state.game is not None
    state.receive(
        m.Welcome(version=1, token=bytes(32), player=99, server="x", resumed=False, idle_timeout=60)
    )
    assert state.player == 99 and state.room is None and state.game is None


def test_a_push_of_another_game_than_ours_asks_for_a_snapshot() -> None:
    """A restored server numbers its pushes again: a resume may get pushes
    that do not follow from ours (a game's push for another game): the
    client asks for a snapshot."""
    world, clients = game_of(versions=(1,))
    world.run(lambda: bool(world.records))
    world.settle()
    pushed = next(x for x in clients[0].received if isinstance(x, m.GameState))
    state = ClientState()
    state.receive(pushed)
    assert state.out_of_step


def test_a_push_of_an_earlier_decision_of_our_game_asks_for_a_snapshot() -> None:
    """A restored server numbers its pushes again: a resume may get, as the
    pushes missed, some of our own game from before what we saw (found by
    the power-cut test with its fsync off: the game then waited for ever).
    Play never goes back: the push is left, and a snapshot asked for."""
    world, clients = game_of(manual=0, versions=(1,))
    host = clients[0]
    rng = random.Random(2)
    pushed = [x for x in host.received if isinstance(x, m.GameState) and x.decision is not None]
    for _ in range(6):  # (our decisions, and the others' after them)
        game = host.state.game
        assert game is not None and game.my_turn
        host.send(game.answer(rng.choice(game.options())))
        world.settle()
    state, game = host.state, host.state.game
    assert game is not None and game.state is not None and game.state.decision is not None
    seen = game.state
    earlier = [x for x in pushed if x.decision.turn < seen.decision.turn]
    state.receive(earlier[-1])  # (again, under a later number)
    assert state.out_of_step and game.state is seen  # (not applied)


def test_a_decision_of_ours_refused_as_not_its_turn_asks_for_a_snapshot() -> None:
    """A server that went back is at an earlier decision than the one we
    answer: `stale_turn` (and it pushes no more, having pushed those
    numbers before): a snapshot settles where the game is."""
    world, clients = game_of(manual=0)
    state = clients[0].state
    game = state.game
    assert game is not None and not state.out_of_step
    assert game.decision is not None
    turn = game.decision.turn
    refused = m.Error(code="stale_turn", message="not at that turn", fatal=False)
    state.answered(m.Direction(turn=turn + 1, direction="left-to-right"), refused)
    assert not state.out_of_step  # (a turn we were not asked: our mistake)
    state.answered(m.Ping(), refused)
    assert not state.out_of_step
    state.answered(m.Direction(turn=turn, direction="left-to-right"), refused)
    assert state.out_of_step


def test_a_game_seen_ending_that_comes_back_has_its_final_reveal_sent_again() -> None:
    """A game seen end that a restore brings back after the next began: what
    was sent for it before (its final reveal, its openings) went to a server
    that no longer has it, and is sent again when asked for. (The new
    connection's `reconnected` is of the game in play then: the next one.)"""
    world, clients, backup = backup_then_played_to_end()
    host = clients[0]
    first = host.state.game
    asked = [
        x for x in host.received if isinstance(x, m.FinalRevealRequest) and x.game == first.game_id
    ]
    assert asked and first.end is not None
    next_game(world, clients)

    host.state.game.reconnected()  # (a new connection, to the restored server)
    restore(host.state, backup)  # back to the first game, in play
    assert host.state.game is first and first.end is None
    # The restored game is played to its end again (our cards it has, hidden).
    hidden = tuple(sorted(p for p in first.secrets.placed_cards() if p not in first.openings))
    first.receive(dataclasses.replace(asked[-1], pids=hidden))
    sent = first.automatic()
    assert [type(x) for x in sent] == [m.FinalReveal]
    assert host.state.problems == []

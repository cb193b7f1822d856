"""Protocol version 2: clients that keep their own game from `game_update`.

Whole games at tables where version 1 and version 2 sessions sit together,
with a spectator of each version: the game a version 2 client replays from
the log must be, push by push, the one version 1's views show; a bot's
position made from the replayed game must be the one made from the view;
every frame of one change is the same but for its `seq`; and a client whose
copy does not follow asks for a snapshot and goes on.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from oriflamme.client.bots import Behaviour, Bot, Seated
from oriflamme.client.endpoint import ClientEndpoint
from oriflamme.client.state import ClientState, GameMirror
from oriflamme.engine import Event, Open, event_to_data, from_data, to_data
from oriflamme.launcher.inprocess import Client, InProcess
from oriflamme.protocol import messages as m
from oriflamme.protocol.errors import UNSUPPORTED_VERSION
from oriflamme.protocol.record import LogEntry
from oriflamme.protocol.updates import events_digest
from oriflamme.protocol.verify import verify_record
from oriflamme.server.core import FixedEntropy, ServerConfig
from tests.client.test_state import decide, game_of
from tests.server.scenario import new_world, ok
from tests.server.test_abort_vote import table as abort_table
from tools.docgen.worked_example import fixed_secrets


class Seen:
    """What a mirror showed after each push of the game: the public view,
    the events so far, the decision, the commitments, openings and settled."""

    def __init__(self) -> None:
        self.steps: list[tuple[Any, ...]] = []

    def note(self, game: GameMirror) -> None:
        state = game.state
        assert state is not None
        view = {k: v for k, v in state.view.items() if k != "viewer"}
        self.steps.append(
            (
                view,
                data_of(game.events),  # (data: two events of one shape but types differ)
                state.decision,  # (version 2's with the options its copy gives)
                sorted(game.commitments),
                sorted(game.openings),
                sorted(game.settled),
            )
        )


def data_of(events: list[Event]) -> list[dict[str, Any]]:
    """Events as data, their type named: typed events are tuples, and two
    of one shape would compare equal whatever their types."""
    return [event_to_data(e) for e in events]


def watched(client: Client, seen: Seen) -> None:
    """Note what `client`'s mirror shows after each push of the game."""
    receive = client.state.receive

    def receive_and_note(message: m.Message) -> None:
        receive(message)
        game = client.state.game
        if isinstance(message, m.GameState | m.GameUpdate) and game is not None:
            seen.note(game)

    client.state.receive = receive_and_note  # type: ignore[method-assign]


def sorted_backs(data: dict[str, Any]) -> dict[str, Any]:
    """A position's data, other seats' hands and set-aside cards in family
    order: a view gives them so (their order would tell which card left), a
    replayed game in the order its backs were played, which tells nothing."""
    for key in ("hands", "set_aside"):
        data[key] = [sorted(cards, key=str) for cards in data[key]]
    return data


class Checking(Behaviour):
    """A bot that checks, at each of its decisions, that the position made
    from its replayed game is the one made from its view."""

    checked = 0

    def messages(self, client: Seated) -> list[m.Message]:
        game = client.state.game
        if self.owed_turn(client) is not None and game is not None and game.public is not None:
            fast = game.engine_game()
            assert sorted_backs(to_data(fast)) == sorted_backs(
                to_data(from_data(game.view() or {}))
            )
            assert set(fast.legal_actions()) == set(game.options())
            Checking.checked += 1
        return super().messages(client)


def play(
    players: int, variant: str, versions: list[tuple[int, ...]], seed: int
) -> tuple[InProcess, list[Client], dict[tuple[int, ...], Client]]:
    """A whole game: seat i offers `versions[i]`; a spectator of each version."""
    label = f"updates {seed}"
    world = InProcess(
        config=ServerConfig(idle_timeout=86400),
        seed=seed,
        entropy=FixedEntropy(label),
        make_secrets=fixed_secrets(label),
    )
    rng = random.Random(seed)
    seats = []
    for i, offered in enumerate(versions):
        endpoint = ClientEndpoint(f"p{i}", make_secrets=fixed_secrets(label), versions=offered)
        bot = Bot("heuristic", rng=random.Random(rng.random()))
        seats.append(world.connect(f"p{i}", behaviour=Checking(bot), endpoint=endpoint))
    world.settle()
    settings = m.RoomSettings.for_players(players, first_player="host")
    settings = replace(settings, variant=variant)
    seats[0].send(m.CreateRoom(settings=settings))
    world.settle()
    for client in seats[1:]:
        client.send(m.JoinRoom(room=1))
    world.settle()
    watchers: dict[tuple[int, ...], Client] = {}
    for offered in ((1,), (2,)):
        endpoint = ClientEndpoint(f"watcher v{offered[0]}", versions=offered)
        watcher = world.connect(f"watcher v{offered[0]}", endpoint=endpoint)
        world.settle()
        watcher.send(m.Spectate(room=1))
        watchers[offered] = watcher
    for client in seats:
        client.send(m.Ready(ready=True))
    world.settle()
    seats[0].send(m.StartGame())
    return world, seats, watchers


@pytest.mark.parametrize(
    ("players", "variant", "seed"),
    [(3, "standard", 1), (2, "two-player", 2), (4, "standard", 3), (5, "standard", 4)],
)
def test_a_version_2_client_replays_the_game_version_1_shows(
    players: int, variant: str, seed: int
) -> None:
    versions: list[tuple[int, ...]] = [(2, 1) if i % 2 == 0 else (1,) for i in range(players)]
    world, seats, watchers = play(players, variant, versions, seed)
    seen = {v: Seen() for v in watchers}
    for offered, watcher in watchers.items():
        watched(watcher, seen[offered])
    before = Checking.checked
    world.run(lambda: bool(world.records))
    world.settle()

    assert [c.endpoint.welcome and c.endpoint.welcome.version for c in seats] == [
        2 if i % 2 == 0 else 1 for i in range(players)
    ]
    assert all(isinstance(x, m.GameUpdate) is False for x in watchers[(1,)].received)
    assert not any(isinstance(x, m.GameState) for x in watchers[(2,)].received)
    # Push by push, the replayed game is the one version 1 shows.
    v1, v2 = seen[(1,)].steps, seen[(2,)].steps
    assert len(v1) == len(v2) > 10
    for i, (one, two) in enumerate(zip(v1, v2, strict=True)):
        assert one == two, f"after push {i}"
    assert Checking.checked > before
    record = world.records[0].record
    assert verify_record(record).ok
    for client in [*seats, *watchers.values()]:
        assert not client.state.problems and not client.errors()
        game = client.state.game
        assert game is not None and game.end is not None
        assert all(v.ok for v in game.check_end())


def test_every_seat_and_spectator_gets_one_frame_of_a_change_but_for_its_seq() -> None:
    world, seats, watchers = play(3, "standard", [(2,), (2,), (2,)], 5)
    world.run(lambda: bool(world.records))
    world.settle()
    audience = [*seats, watchers[(2,)]]
    updates = [[x for x in c.received if isinstance(x, m.GameUpdate)] for c in audience]
    assert len({len(u) for u in updates}) == 1
    for same in zip(*updates, strict=True):
        assert len({repr(replace(u, seq=1)) for u in same}) == 1
    # Nothing hidden: a card is named only by the opening of a card placed.
    for update in updates[0]:
        for entry in update.log:
            named = getattr(entry.action, "card", None)
            if named is not None and named.kind is not None:
                assert isinstance(entry.action, Open) and (entry.nonce or entry.settled)


def test_a_resume_keeps_the_version_its_session_began_with() -> None:
    world, seats, _ = play(3, "standard", [(1,), (2, 1), (2,)], 6)
    world.run(lambda: len(seats[0].state.game.events if seats[0].state.game else []) > 20)
    ann, cy = seats[0], seats[2]
    # Ann's session is version 1: a client that offers 2 and 1 resumes it in 1.
    endpoint = ClientEndpoint("p0", token=ann.endpoint.token, state=ann.state, versions=(2, 1))
    world.disconnect(ann)
    back = world.connect("p0", behaviour=ann.behaviour, endpoint=endpoint)
    world.settle()
    assert isinstance(back.received[0], m.Welcome) and back.received[0].version == 1
    # Cy's is version 2: a client that offers only 1 cannot resume it.
    endpoint = ClientEndpoint("p2", token=cy.endpoint.token, state=ClientState(), versions=(1,))
    refused = world.connect("p2", endpoint=endpoint)
    world.settle()
    (error,) = refused.received
    assert isinstance(error, m.Error) and error.code == UNSUPPORTED_VERSION and error.fatal
    assert error.versions == (2,)
    world.run(lambda: bool(world.records))
    world.settle()
    assert verify_record(world.records[0].record).ok
    assert not back.state.problems and not back.errors()


def _mirror_at(seed: int) -> tuple[GameMirror, list[m.GameUpdate]]:
    """A version 2 seat's mirror mid-game, and the updates it was given."""
    world, seats, _ = play(3, "standard", [(2,), (2,), (2,)], seed)
    world.run(lambda: len(seats[0].state.game.events if seats[0].state.game else []) > 30)
    game = seats[0].state.game
    assert game is not None
    return game, [x for x in seats[0].received if isinstance(x, m.GameUpdate)]


def test_an_update_that_does_not_follow_asks_for_a_snapshot_and_changes_nothing() -> None:
    game, updates = _mirror_at(7)
    last = updates[-1]
    events, entries = data_of(game.events), game.public and game.public.entries
    assert entries
    for stray in (
        replace(last, at=last.at + 1),  # (one missed)
        replace(last, at=entries, log=(LogEntry(9, None),)),  # (no seat 9)
    ):
        game.out_of_step = False
        game.receive(stray)
        assert game.out_of_step and data_of(game.events) == events
    # Its events not those the server made: the copy went wrong; a snapshot mends it.
    game.out_of_step = False
    wrong = replace(updates[1], snapshot=True, at=0, digest=bytes(16))
    game.receive(wrong)
    assert (
        game.public is None and game.state is None and game.decision is None
    )  # (until a snapshot)
    assert game.problems == [
        "the server's game does not replay: the events it made are not those the server made"
    ]


def test_a_snapshot_is_replayed_from_the_deal() -> None:
    game, updates = _mirror_at(8)
    seen = game.state
    assert seen is not None and game.public is not None
    assert not any(u.snapshot for u in updates) and updates[0].at == 0
    log = tuple(e for u in updates for e in u.log)
    digest = events_digest(game.events)
    whole = replace(updates[-1], at=0, snapshot=True, log=log, digest=digest)
    again = GameMirror(game.started, lambda *_: game.secrets, [])  # type: ignore[arg-type]
    again.receive(whole)
    assert not again.problems and again.state is not None
    assert again.state.view == seen.view and data_of(again.events) == data_of(game.events)


@pytest.mark.parametrize("version", [1, 2])
def test_a_server_bot_speaks_the_version_of_its_first_hello(version: int) -> None:
    """A bot's session is opened before its bot connects: its first hello
    chooses its version, as a player's does."""
    world = new_world(f"bots {version}", versions=(version,))
    ann = world.connect("Ann", bot=Bot("random", rng=random.Random(version)))
    world.start_table([ann], m.RoomSettings.for_players(3), bots=2)
    world.run(lambda: bool(world.records))
    bots = [c for c in world.clients.values() if c.bot_player is not None]
    assert len(bots) == 2
    assert all(b.endpoint.welcome and b.endpoint.welcome.version == version for b in bots)
    assert verify_record(world.records[0].record).ok


def test_a_copy_gone_astray_at_our_turn_decides_nothing_until_a_snapshot() -> None:
    world, clients = game_of(manual=0, versions=(2,))
    host = clients[0]
    decide(world, host, "place")
    game = host.state.game
    assert game is not None and game.my_turn and game.public is not None
    last = [x for x in host.received if isinstance(x, m.GameUpdate)][-1]
    stray = replace(last, seq=last.seq + 1, at=game.public.entries, log=(), digest=bytes(16))
    host.state.receive(stray)
    assert host.state.out_of_step and not game.my_turn and game.options() == []
    behaviour = Behaviour(Bot("random", rng=random.Random(1)))
    assert behaviour.messages(host) == [] and host.answered is None
    host.state.out_of_step = False
    host.send(m.Sync())
    world.settle()
    assert game.public is not None and game.my_turn and game.options()
    assert not host.state.problems


def voting(label: str, version: int) -> tuple[InProcess, list[Client], GameMirror]:
    """A 4-seat game under way whose last seat's player left: the table may
    end it by vote."""
    world = new_world(label, grace=60, versions=(version,))
    clients, _ = abort_table(world, 4)
    game = clients[0].state.game
    assert game is not None
    ok(world, clients[3], m.LeaveRoom())
    return world, clients, game


@pytest.mark.parametrize("version", [1, 2])
def test_a_snapshot_of_a_game_ended_by_vote_is_no_going_back(version: int) -> None:
    world, (ann, bob, cy, _), game = voting("ended by vote, then a snapshot", version)
    for client in (ann, bob, cy):
        ok(world, client, m.VoteAbort(game=game.game_id))
    world.settle()
    assert world.records and game.end is not None
    ok(world, ann, m.Sync())
    assert game.end is not None and game.seen_end is None
    assert ann.state.notices == [] and ann.state.problems == []


def test_both_versions_tell_each_change_of_an_input_with_its_own_decision() -> None:
    """Cy leaves (the stand-in plays on: a change) and that completes the
    vote to end the game (another): each push shows its own decision."""
    decisions = {}
    for version in (1, 2):
        world, (ann, bob, cy, _), game = voting("two changes in one input", version)
        for client in (ann, bob):
            ok(world, client, m.VoteAbort(game=game.game_id))
        seen = len(ann.received)
        ok(world, cy, m.LeaveRoom())
        world.settle()
        pushed = [x for x in ann.received[seen:] if isinstance(x, m.GameState | m.GameUpdate)]
        decisions[version] = [
            None if x.decision is None else (x.decision.seat, x.decision.kind, x.decision.turn)
            for x in pushed
        ]
    assert decisions[1] == decisions[2]
    assert len(decisions[1]) == 2 and decisions[1][0] is not None and decisions[1][1] is None

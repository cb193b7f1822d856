"""A room under random traffic: seats, spectators and strangers send anything, time passes.

A hypothesis state machine drives the real core (`Gateway`, `Lobby`, rooms,
tables) through bytes, with five clients: honest moves drawn from a seat's
own options, forged and ill-timed game messages, every lobby and room
request, dropped connections and resumes, and the clock jumping forward so
every timer fires. After every step:

* the core never failed (no `Fault`) and no connection broke the protocol;
* no frame sent to anyone shows a hidden identity;
* a refused request (any error but ``bad_opening``) changed nothing in the
  server and sent nothing to anyone else;
* every finished game's record verifies: no problem with the record, and
  its verdicts are the verifier's own.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from oriflamme.client.bots import Behaviour, Bot, Seated
from oriflamme.engine import CARDS, FAMILY_NAMES
from oriflamme.launcher.inprocess import Client, InProcess
from oriflamme.protocol import messages as m
from oriflamme.protocol.commitments import Opening
from oriflamme.protocol.verify import verify_record
from oriflamme.server.core import FixedEntropy, ServerConfig
from oriflamme.server.core.facts import (
    FactsRows,
    TakenRows,
    _room_data,
    facts_of,
    rows_of,
    take_some,
)
from oriflamme.server.core.lobby import Lobby
from tests.server.scenario import hidden_cards_shown
from tools.docgen.worked_example import fixed_secrets

# Many whole games: `make test-fast` leaves it out.
pytestmark = pytest.mark.slow

NAMES = ("host", "ana", "bo", "watcher", "stranger")
CONFIG = ServerConfig(idle_timeout=86400, reply_timer=30, grace=60, session_ttl=300)

cards = st.builds(lambda f, k: CARDS[f][k], st.integers(0, 4), st.integers(0, 9))
blobs = st.binary(min_size=32, max_size=32)
turns = st.integers(0, 120)
pids = st.integers(0, 40)


def fingerprint(lobby: Lobby) -> Any:
    """Everything a refused request must leave as it was."""
    rooms = []
    for room in lobby.rooms.values():
        table = room.table
        rooms.append(
            (
                room.id,
                room.state,
                room.host,
                room.invite,
                tuple(
                    (s.session.player if s.session else None, s.bot, s.ready, s.ghost)
                    for s in room.seats
                ),
                tuple(s.player for s in room.spectators),
                None
                if table is None
                else (
                    table.phase,
                    table.referee.turn,
                    len(table.referee.log),
                    len(table.referee.forfeits),
                    len(table.referee.seat_changes),
                    tuple(c is not None for c in table.referee.seed_commitments),
                    tuple(table.referee.awaited_reveals()),
                ),
            )
        )
    sessions = tuple(
        (s.player, s.room, s.seat, s.last_seq, tuple(s.kept_seats.items()), s.waiting)
        for s in lobby.sessions
    )
    return tuple(rooms), sessions


class RowsStored:
    """The rows a store holds of the facts taken a step at a time
    (`take_some`): checked against the whole facts at each taking that
    ends. A taking is spread over steps of the traffic (bounds of a unit or
    a few: the rows made at a step before are of what did not change since),
    or ended at once."""

    def __init__(self) -> None:
        self.taken = TakenRows()
        self.stored: dict[str, dict[int, bytes]] = {}

    def take_and_check(self, lobby: Lobby) -> FactsRows:
        since = self.step_and_check(lobby, None)
        assert since is not None
        return since

    def step_and_check(self, lobby: Lobby, most: int | None) -> FactsRows | None:
        since = take_some(lobby, self.taken, most)
        if since is None:  # (the taking goes on at the next step)
            return None
        for table, rows in since.tables.items():
            kept = self.stored.setdefault(table, {})
            if since.gone is None:  # (every row, at a first taking)
                kept.clear()
            else:
                for key in since.gone[table]:
                    kept.pop(key, None)
            kept.update((key, data) for key, (_, data) in rows.items())
        whole = rows_of(facts_of(lobby))
        assert since.lobby == whole.lobby
        for table, rows in whole.tables.items():
            assert self.stored[table] == {key: data for key, (_, data) in rows.items()}, table
        return since


class Manual(Behaviour):
    """A client that plays by itself only while `auto` is on."""

    def __init__(self, bot: Bot) -> None:
        super().__init__(bot)
        self.auto = False

    def messages(self, client: Seated) -> list[m.Message]:
        return super().messages(client) if self.auto else []


class RoomTraffic(RuleBasedStateMachine):
    @initialize(seed=st.integers(0, 2**16))
    def start(self, seed: int) -> None:
        # (every seat's secrets from the seed too: hypothesis replays a run's
        # draws, and the options a hand gives must come out the same)
        self.world = InProcess(
            config=CONFIG,
            entropy=FixedEntropy(f"stateful {seed}"),
            seed=seed,
            make_secrets=fixed_secrets(f"stateful {seed}"),
        )
        self.rng = random.Random(seed)
        self.clients: dict[str, Client] = {}
        for name in NAMES:
            behaviour = Manual(Bot("random", rng=random.Random(self.rng.random())))
            self.clients[name] = self.world.connect(name, behaviour=behaviour)
        self.world.settle()
        self.checked_records = 0
        self.rows = RowsStored()  # (the facts taken a step at a time)
        self.checks = 0

    # ------------------------------------------------------------ sending

    def send(self, name: str, message: m.Message) -> None:
        """Send one request; if it is refused, check that nothing changed."""
        self.world.settle()  # nothing else is on its way
        client = self.clients[name]
        if not client.connected:
            return
        gateway = self.world.gateway
        before = fingerprint(gateway.lobby)
        others = {c: len(link.outbox) for c, link in gateway._links.items() if c != client.conn}
        request = client.send(message)  # the server handles it at once
        after = fingerprint(gateway.lobby)
        grew = [
            c
            for c, size in others.items()
            if c in gateway._links and len(gateway._links[c].outbox) != size
        ]
        self.world.settle()
        answer = client.answer(request)
        if isinstance(answer, m.Error) and answer.code != "bad_opening":
            assert not answer.fatal, answer
            assert after == before, (
                f"{message.TYPE} was refused ({answer.code}) but changed the server"
            )
            assert grew == [], f"{message.TYPE} was refused ({answer.code}) but others were told"

    @rule(
        name=st.sampled_from(NAMES),
        players=st.sampled_from([2, 3]),
        timer=st.sampled_from([None, 10, 30]),
        private=st.booleans(),
    )
    def create_room(self, name: str, players: int, timer: int | None, private: bool) -> None:
        settings_ = m.RoomSettings.for_players(players, turn_timer=timer)
        self.send(name, m.CreateRoom(settings=settings_, private=private))

    @rule(
        name=st.sampled_from(NAMES),
        room=st.integers(1, 4),
        seat=st.none() | st.integers(0, 4),
        by_invite=st.booleans(),
    )
    def join(self, name: str, room: int, seat: int | None, by_invite: bool) -> None:
        invite = self._an_invite() if by_invite else None
        if invite is not None:
            self.send(name, m.JoinRoom(invite=invite, seat=seat))
        else:
            self.send(name, m.JoinRoom(room=room, seat=seat))

    @rule(
        others=st.lists(st.sampled_from(NAMES[1:3]), max_size=2, unique=True),
        players=st.sampled_from([2, 3]),
        timer=st.sampled_from([None, 10]),
        auto=st.booleans(),
    )
    def table_for_the_host(
        self, others: list[str], players: int, timer: int | None, auto: bool
    ) -> None:
        """The host makes a room with some players and bots and starts it; its
        players may play by themselves."""
        for name in ("host", *others):
            behaviour = self.clients[name].behaviour
            assert isinstance(behaviour, Manual)
            behaviour.auto = auto
        settings_ = m.RoomSettings.for_players(players, turn_timer=timer)
        self.send("host", m.CreateRoom(settings=settings_))
        room = self.clients["host"].state.room
        if room is None:
            return
        for name in others[: players - 1]:
            self.send(name, m.JoinRoom(room=room.room))
            self.send(name, m.Ready(ready=True))
        for _ in range(players):
            self.send("host", m.AddBot(strategy="random"))
        self.send("host", m.Ready(ready=True))
        self.send("host", m.StartGame())
        if self.clients["host"].state.game is not None:
            event("a game started")

    @rule(name=st.sampled_from(NAMES))
    def step_out(self, name: str) -> None:
        """Out of the game, the seat kept (My games)."""
        self.send(name, m.LeaveRoom(keep_seat=True))

    @rule(name=st.sampled_from(NAMES), data=st.data())
    def come_back(self, name: str, data: st.DataObject) -> None:
        """Back to a seat kept, if there is one (or a room by chance)."""
        player = self.clients[name].state.player
        session = self.world.gateway.lobby.sessions.by_player.get(player or 0)
        kept = sorted(session.kept_seats) if session is not None else []
        room = data.draw(st.sampled_from(kept)) if kept else data.draw(st.integers(1, 4))
        self.send(name, m.JoinRoom(room=room))

    @rule(name=st.sampled_from(NAMES), room=st.integers(1, 4))
    def spectate(self, name: str, room: int) -> None:
        self.send(name, m.Spectate(room=room))

    @rule(
        name=st.sampled_from(NAMES),
        request=st.sampled_from(
            [
                m.LeaveRoom(),
                m.LeaveRoom(keep_seat=True),
                m.ListGames(),
                m.Ready(ready=True),
                m.Ready(ready=False),
                m.StartGame(),
                m.StartGame(first_player=1),
                m.AddBot(strategy="random"),
                m.AddBot(strategy="heuristic"),
                m.AddBot(strategy="genius"),
                m.RemoveBot(seat=1),
                m.RemoveBot(seat=2),
                m.Chat(text="hi"),
                m.Sync(),
                m.ListRooms(),
                m.Ping(),
            ]
        ),
    )
    def room_request(self, name: str, request: m.Message) -> None:
        self.send(name, request)

    @rule(name=st.sampled_from(NAMES), data=st.data())
    def honest_move(self, name: str, data: st.DataObject) -> None:
        client = self.clients[name]
        game = client.state.game
        if game is None or not client.connected:
            return
        for message in game.automatic():
            self.send(name, message)
        options = game.options()
        if options:
            self.send(name, game.answer(data.draw(st.sampled_from(options))))

    @rule(name=st.sampled_from(NAMES), data=st.data())
    def forged_move(self, name: str, data: st.DataObject) -> None:
        message = data.draw(
            st.one_of(
                st.builds(
                    m.Direction,
                    turn=turns,
                    direction=st.sampled_from(["left-to-right", "right-to-left"]),
                ),
                st.builds(
                    m.PlaceCard,
                    turn=turns,
                    at=st.sampled_from(["first", "last"]) | pids,
                    family=st.sampled_from(FAMILY_NAMES),
                    commitment=blobs,
                ),
                st.builds(m.KeepCard, turn=turns),
                st.builds(m.RevealCard, turn=turns, card=cards, nonce=blobs),
                st.builds(m.Choose, turn=turns, target=pids),
                st.builds(m.Move, turn=turns, index=st.integers(0, 12)),
                st.builds(m.OpenCard, pid=pids, card=cards, nonce=blobs),
                st.builds(m.SeedCommit, commitment=blobs),
                st.builds(
                    m.FinalReveal,
                    seed=blobs,
                    openings=st.lists(st.builds(Opening, pids, cards, blobs), max_size=3).map(
                        tuple
                    ),
                ),
                st.builds(
                    m.HandOver,
                    seed=blobs,
                    openings=st.lists(st.builds(Opening, pids, cards, blobs), max_size=2).map(
                        tuple
                    ),
                ),
            )
        )
        self.send(name, message)

    @rule(name=st.sampled_from(NAMES), on=st.booleans())
    def autoplay(self, name: str, on: bool) -> None:
        behaviour = self.clients[name].behaviour
        assert isinstance(behaviour, Manual)
        behaviour.auto = on
        self.world.settle()

    @rule(seconds=st.sampled_from([1, 10, 31, 61, 400]))
    def time_passes(self, seconds: int) -> None:
        self.before_its_deadline_a_rooms_tick_does_nothing()
        self.world.advance(seconds)

    def before_its_deadline_a_rooms_tick_does_nothing(self) -> None:
        """What lets the lobby tick only the rooms whose deadline came."""
        lobby = self.world.gateway.lobby
        for room in lobby.rooms.values():
            due = room.next_deadline()
            before = (fingerprint(lobby), _room_data(room))
            for now in (self.world.now, *(() if due is None else (due - 0.001,))):
                assert room.tick(now) == []
            assert (fingerprint(lobby), _room_data(room)) == before

    @rule(name=st.sampled_from(NAMES))
    def drop_and_resume(self, name: str) -> None:
        client = self.clients[name]
        if client.connected and client.endpoint.token is not None:
            self.clients[name] = self.world.reconnect(client)
            self.world.settle()

    @precondition(lambda self: any(c.connected for c in self.clients.values()))
    @rule(name=st.sampled_from(NAMES))
    def drop(self, name: str) -> None:
        self.world.disconnect(self.clients[name])

    def _an_invite(self) -> str | None:
        for room in self.world.gateway.lobby.rooms.values():
            if room.invite is not None:
                return room.invite.lower()
        return None

    # ------------------------------------------------------------ invariants

    @invariant()
    def nothing_failed_and_nothing_leaked(self) -> None:
        if not hasattr(self, "world"):
            return
        assert self.world.faults == []
        for client in self.world.clients.values():
            for message in client.received:
                assert hidden_cards_shown(message) == [], message.TYPE
            client.received.clear()

    @invariant()
    def the_seats_kept_are_the_rooms_seats_whose_player_is_elsewhere(self) -> None:
        if not hasattr(self, "world"):
            return
        lobby = self.world.gateway.lobby
        kept = {
            (session.player, room.id, index)
            for room in lobby.rooms.values()
            for index, session in room.kept()
        }
        held = {(s.player, r, seat) for s in lobby.sessions for r, seat in s.kept_seats.items()}
        assert kept == held
        for player, room_id, _ in kept:
            assert lobby.rooms[room_id].state == "playing"
            assert lobby.sessions.by_player[player].room != room_id
        if kept:
            event("a seat kept")

    @invariant()
    def every_finished_game_verifies(self) -> None:
        if not hasattr(self, "world"):
            return
        for finished in self.world.records[self.checked_records :]:
            event("a game finished")
            verdict = verify_record(finished.record)
            assert verdict.problems == (), verdict.problems
            assert verdict.seats == finished.record.verdicts
        self.checked_records = len(self.world.records)

    @invariant()
    def the_rows_that_changed_make_the_whole_facts(self) -> None:
        # A taking makes only the rows of what changed since the one before
        # (the store keeps the others): after any step, what the store then
        # holds is the whole lobby's facts, row for row.
        if not hasattr(self, "world"):
            return
        self.world.settle()
        self.checks += 1
        # (a unit or a few a step, or all at once)
        most = (None, 1, 3, None, 2, 8, 1, 1)[self.checks % 8]
        self.rows.step_and_check(self.world.gateway.lobby, most)


RoomTraffic.TestCase.settings = settings(
    max_examples=40,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestRoomTraffic = RoomTraffic.TestCase

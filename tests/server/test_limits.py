"""What one client can hold of a server, bounded (docs/SERVER.md, "Abuse
limits"), through the server's core.

Sessions are bounded per address and in all; past a bound the session away
longest that no game holds is let go, and a player seated in a game being
played always keeps their place. A session that never sat or watched in a
room expires sooner. A spectator away gets no pushes built or kept and
comes back to a snapshot; a room takes a bounded number of spectators. What
a session keeps is bounded in bytes. The lobby's index of finished games
forgets what no session can list any more. A deadline the gateway gives is
one its `tick` consumes, and a refusal never carries the id of a request
whose answer is still on its way.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from oriflamme.protocol import ClientConnection, FrameDecoder, encode_frame
from oriflamme.protocol import messages as m
from oriflamme.server.core import FixedEntropy, Gateway, Lobby, ServerConfig
from tools.docgen.sample_records import Undecided

from .scenario import (
    after,
    game_round,
    last_room,
    new_world,
    ok,
    player,
    pushes,
    resume,
    settings,
    table,
    types,
)

# ------------------------------------------------------------ helpers


def gateway(**config: Any) -> Gateway:
    options: dict[str, Any] = dict(idle_timeout=86400)
    options.update(config)
    return Gateway(Lobby(ServerConfig(**options), FixedEntropy("limits")))


class Raw:
    """A client on connection `conn` from `address`, checked by a
    `ClientConnection` (ids, seq)."""

    def __init__(
        self,
        gw: Gateway,
        conn: Hashable,
        address: str | None,
        now: float = 0.0,
        token: bytes | None = None,
    ) -> None:
        self.gw, self.conn = gw, conn
        self.client = ClientConnection()
        self.next_id = 1
        gw.open(conn, now, address=address)
        self.answer = self.ask(m.Hello(versions=(1,), client="raw/1", name="Raw", token=token), now)

    def ask(self, message: m.Message, now: float = 0.0) -> m.Message:
        """Send `message`; its answer (whatever came with it is in `seen`)."""
        data = m.to_data(message) | {"id": self.next_id}
        self.next_id += 1
        self.gw.receive_data(self.conn, self.client.send(m.from_data(data, "client")), now)
        self.seen = self.read()
        answers = [x for x in self.seen if x.ROLE == "reply"]
        assert len(answers) == 1, self.seen
        return answers[0]

    def read(self) -> list[m.Message]:
        data = self.gw.data_to_send(self.conn)
        if data:
            self.client.receive_data(data)
        out = []
        while isinstance(message := self.client.next_message(), m.Message):
            out.append(message)
        return out

    @property
    def player(self) -> int:
        assert isinstance(self.answer, m.Welcome), self.answer
        return self.answer.player

    def close(self, now: float) -> None:
        self.gw.closed(self.conn, now)


def busy(answer: m.Message) -> bool:
    return isinstance(answer, m.Error) and answer.code == "server_busy" and answer.fatal


# ------------------------------------------------------------ sessions


def test_sessions_from_one_address_are_bounded_and_the_oldest_away_is_let_go() -> None:
    gw = gateway(sessions_per_address=3)
    sessions = gw.lobby.sessions
    first = [Raw(gw, f"a{i}", "10.0.0.1") for i in range(3)]
    # All three connected: a fourth from that address is refused...
    assert busy(Raw(gw, "a3", "10.0.0.1").answer)
    assert "from your address (3 at most)" in str(Raw(gw, "a4", "10.0.0.1").answer)
    # ...and one from elsewhere is not.
    assert isinstance(Raw(gw, "b0", "10.0.0.2").answer, m.Welcome)
    first[1].close(1.0)
    first[0].close(2.0)  # away: 1 the longest, then 0

    fourth = Raw(gw, "a5", "10.0.0.1", now=3.0)

    assert isinstance(fourth.answer, m.Welcome)
    assert first[1].player not in sessions.by_player  # let go: away longest
    assert {first[0].player, first[2].player} <= sessions.by_player.keys()
    assert len(sessions.from_address("10.0.0.1")) == 3
    # The one let go cannot resume; the other away one can.
    assert Raw(gw, "a6", "10.0.0.1", 4.0, token=first[1].answer.token).answer.code == "bad_token"  # type: ignore[attr-defined]
    back = Raw(gw, "a7", "10.0.0.1", 4.0, token=first[0].answer.token)  # type: ignore[attr-defined]
    assert isinstance(back.answer, m.Welcome) and back.answer.resumed


def test_a_session_seated_in_a_game_being_played_is_never_let_go() -> None:
    world = new_world("held", sessions_per_address=3, max_sessions=3)
    gw = world.gateway
    clients = table(world, 3)
    world.run(lambda: game_round(clients[0]) >= 1)
    for client in clients:
        world.disconnect(client)
    # Full, and every session is held by the game: a newcomer is refused.
    newcomer = Raw(gw, "new", "10.0.0.9", world.now)
    assert busy(newcomer.answer) and "too many sessions" in str(newcomer.answer)
    assert all(c.state.player in gw.lobby.sessions.by_player for c in clients)


def test_a_full_server_lets_go_of_the_session_away_longest_that_no_game_holds() -> None:
    gw = gateway(max_sessions=3)
    ann, bob, cid = (Raw(gw, name, None) for name in ("ann", "bob", "cid"))
    assert isinstance(bob.ask(m.CreateRoom(settings=settings(3))), m.Ok)  # waiting: not held
    bob.close(1.0)
    cid.close(2.0)
    assert busy(Raw(gw, "full", None, 2.5).answer) is False  # bob goes: away longest
    sessions = gw.lobby.sessions
    assert bob.player not in sessions.by_player and cid.player in sessions.by_player
    assert 1 not in gw.lobby.rooms  # bob's room closed with him
    assert busy(Raw(gw, "dee", None, 3.0).answer) is False  # then cid
    assert cid.player not in sessions.by_player and ann.player in sessions.by_player
    assert busy(Raw(gw, "eve", None, 4.0).answer)  # every one left is connected


def test_a_session_that_never_joined_a_room_expires_after_the_lobby_ttl() -> None:
    gw = gateway(session_ttl=600, lobby_ttl=60)
    idle, watcher = Raw(gw, "idle", None), Raw(gw, "host", None)
    assert isinstance(watcher.ask(m.CreateRoom(settings=settings(3))), m.Ok)
    assert isinstance(watcher.ask(m.LeaveRoom()), m.Ok)  # it joined once: it has a past
    idle.close(10.0)
    watcher.close(10.0)
    sessions = gw.lobby.sessions
    assert gw.lobby.next_deadline() == 70.0

    gw.tick(70.0)

    assert idle.player not in sessions.by_player and watcher.player in sessions.by_player
    assert gw.lobby.next_deadline() == 610.0
    gw.tick(610.0)
    assert watcher.player not in sessions.by_player


# ------------------------------------------------------------ spectators


def test_a_spectator_away_gets_no_pushes_built_or_kept_and_comes_back_to_a_snapshot() -> None:
    world = new_world("spectator away", seed=3, versions=(1,))
    # Seat 2 never decides: the game moves at the pace of its turn timer.
    clients = table(world, 3, behaviours={2: Undecided(None)}, turn_timer=10)
    watcher = player(world, "Wat")
    ok(world, watcher, m.Spectate(room=1))
    world.run(lambda: game_round(clients[0]) >= 1)
    session = world.gateway.lobby.sessions.by_player[watcher.state.player]  # type: ignore[index]
    assert session.history  # connected: kept, as for anyone
    seen = watcher.endpoint.seq
    world.disconnect(watcher)
    assert session.history is None  # away without a seat: let go at once
    host_mark = len(clients[0].received)

    world.run(lambda: game_round(clients[0]) >= 3)

    assert session.history is None and session.last_seq > seen  # counted, not kept
    # The players saw no room_state for a spectator's connection.
    assert "room_state" not in types(after(clients[0], host_mark))
    back = resume(world, watcher, seq=seen)
    got = types(pushes(back))
    assert got[:3] == ["room_state", "game_started", "server_seed"]
    state = pushes(back)[3]
    assert isinstance(state, m.GameState) and state.snapshot
    world.run(lambda: game_round(clients[0]) >= 4)
    assert session.history  # connected again: kept again


def test_a_room_takes_so_many_spectators_and_lets_go_of_the_one_away_longest() -> None:
    world = new_world("spectators", spectators_per_room=2)
    host = player(world, "Host")
    ok(world, host, m.CreateRoom(settings=settings(3)))
    first, second, third = (player(world, name) for name in ("S1", "S2", "S3"))
    ok(world, first, m.Spectate(room=1))
    ok(world, second, m.Spectate(room=1))
    refusal = third.answer(third.send(m.Spectate(room=1)))
    world.settle()
    refusal = third.received[-1]
    assert isinstance(refusal, m.Error) and refusal.code == "room_full"
    assert "spectators it takes (2)" in refusal.message
    world.disconnect(first)
    assert last_room(host).spectators == 2

    ok(world, third, m.Spectate(room=1))

    sessions = world.gateway.lobby.sessions
    assert first.state.player not in sessions.by_player  # let go: it cannot resume
    assert last_room(host).spectators == 2


def test_spectators_away_when_their_room_closes_are_let_go() -> None:
    world = new_world("room closes")
    host, away, here = player(world, "Host"), player(world, "Away"), player(world, "Here")
    ok(world, host, m.CreateRoom(settings=settings(3)))
    ok(world, away, m.Spectate(room=1))
    ok(world, here, m.Spectate(room=1))
    world.disconnect(away)

    ok(world, host, m.LeaveRoom())  # the last human: the room closes

    sessions = world.gateway.lobby.sessions
    assert away.state.player not in sessions.by_player
    assert last_room(here).state == "closed" and here.state.player in sessions.by_player


def test_what_a_session_keeps_is_bounded_in_bytes() -> None:
    from oriflamme.server.core.sessions import Session

    session = Session(7, "Ann", history=512, history_bytes=1000)
    session.conn, session.seat = "c1", 0
    for n in range(100):
        session.push(m.ChatMessage, room=1, name="Bo", text=f"line {n} " + "x" * 40, player=2)
    kept = list(session.history or ())
    assert 0 < sum(map(len, kept)) <= 1000 and len(kept) < 100
    assert session.missed_since(100 - len(kept)) is not None  # what is kept is whole
    assert session.missed_since(99 - len(kept)) is None  # before it: a snapshot
    one = Session(8, "Bo", history=512, history_bytes=1)
    one.conn, one.seat = "c2", 0
    one.push(m.ChatMessage, room=1, name="Bo", text="longer than a byte", player=2)
    assert len(one.history or ()) == 1  # the newest is always kept


# ------------------------------------------------------------ indexes


def test_finished_games_are_kept_only_while_a_session_that_played_them_is() -> None:
    world = new_world("index", session_ttl=10)
    clients = table(world, 3)
    world.run(lambda: len(world.records) == 1)
    lobby = world.gateway.lobby
    (record_id,) = lobby.finished
    ok(world, clients[0], m.LeaveRoom())
    for client in clients[:2]:
        world.disconnect(client)
    world.advance(11)
    assert len(lobby.finished) == 1  # the third player may still list it
    assert set(lobby._played) == {clients[2].state.player}
    world.disconnect(clients[2])
    world.advance(11)

    assert lobby._played == {} and lobby.finished == {} and lobby._listed_by == {}


# ------------------------------------------------------------ the gateway


@given(st.floats(min_value=0, max_value=1e9), st.booleans())
@example(4087.9053108263674, False)  # (t + 10) - t < 10: the handshake's
@example(130970.72101629137, True)  # (t + 120) - t < 120: the idle timeout's
def test_a_deadline_the_gateway_gives_is_consumed_by_its_tick(opened: float, hello: bool) -> None:
    """Float rounding must not let `tick(next_deadline())` leave the same
    deadline due (a virtual clock would come back to it for ever)."""
    gw = gateway(idle_timeout=120)
    if hello:
        Raw(gw, "a", None, opened)
    else:
        gw.open("a", opened)
    for _ in range(3):
        deadline = gw.next_deadline()
        assert deadline is not None
        gw.tick(deadline)
        if gw.must_close("a"):
            return
        assert gw.next_deadline() != deadline
    raise AssertionError("the connection's deadline never came")


def test_a_hello_reusing_the_id_of_an_answer_on_its_way_is_refused_without_an_id() -> None:
    gw = gateway()
    Raw(gw, "a", None)
    burst = encode_frame({"type": "ping", "id": 7}) + encode_frame(
        {"type": "hello", "versions": [1], "client": "raw/1", "name": "Raw", "id": 7}
    )
    gw.receive_data("a", burst, 1.0)
    decoder = FrameDecoder()
    decoder.feed(gw.data_to_send("a"))
    pong, refused = decoder.next_frame(), decoder.next_frame()
    assert pong == {"type": "pong", "id": 7}
    assert refused is not None and refused["code"] == "unexpected_message" and "id" not in refused
    assert not gw.must_close("a")
    # The id is free once its answer went out.
    gw.receive_data("a", encode_frame({"type": "ping", "id": 7}), 2.0)
    decoder.feed(gw.data_to_send("a"))
    assert decoder.next_frame() == {"type": "pong", "id": 7}


def test_requests_behind_a_get_record_wait_for_its_answer() -> None:
    """80 `get_record` in one write: one record is read at a time, and the
    connection's next request is taken once its answer is written, so the
    answers go out at the pace the client reads them (the shell reads a
    record only once what waits for the client is small)."""
    from oriflamme.server.core import FetchRecord

    gw = gateway()
    Raw(gw, "a", None)
    record_id = "ab" * 16
    burst = b"".join(
        encode_frame({"type": "get_record", "record_id": record_id, "id": 10 + i})
        for i in range(80)
    )
    gw.receive_data("a", burst, 1.0)
    for i in range(80):
        fetches = [e for e in gw.take_effects() if isinstance(e, FetchRecord)]
        assert [f.request_id for f in fetches] == [10 + i]  # one at a time, in order
        assert not gw.wants_data("a")  # (nor is more read meanwhile)
        gw.record_loaded("a", 10 + i, record_id, b"\x91\x01" * 1000, 1.0 + i)
        decoder = FrameDecoder()
        decoder.feed(gw.data_to_send("a"))
        answer = decoder.next_frame()
        assert answer is not None and (answer["type"], answer["id"]) == ("record", 10 + i)
    assert gw.wants_data("a") and not gw.must_close("a")
    assert gw.take_effects() == []


def test_a_record_larger_than_one_answer_is_refused_and_the_server_goes_on() -> None:
    """A record past `record.data`'s 60,000 bytes (a game with very many
    seat changes) is refused `internal`, said to the operator as a fault,
    and the connection goes on."""
    from oriflamme.server.core import Fault, FetchRecord

    gw = gateway()
    Raw(gw, "a", None)
    record_id = "cd" * 16
    gw.receive_data("a", encode_frame({"type": "get_record", "record_id": record_id, "id": 5}), 1.0)
    assert [e for e in gw.take_effects() if isinstance(e, FetchRecord)]
    gw.record_loaded("a", 5, record_id, bytes(60_001), 1.0)
    decoder = FrameDecoder()
    decoder.feed(gw.data_to_send("a"))
    answer = decoder.next_frame()
    assert answer is not None and (answer["type"], answer["code"], answer["id"]) == (
        "error",
        "internal",
        5,
    )
    assert not answer["fatal"] and not gw.must_close("a")
    assert any(isinstance(e, Fault) and "too large" in e.what for e in gw.take_effects())
    gw.receive_data("a", encode_frame({"type": "ping", "id": 6}), 2.0)
    decoder.feed(gw.data_to_send("a"))
    assert decoder.next_frame() == {"type": "pong", "id": 6}


# ------------------------------------------------------------ admission


def test_new_connections_from_one_address_are_admitted_at_its_rate() -> None:
    from oriflamme.server.core.admission import REFUSAL, Admission

    gate = Admission(rate=2.0, burst=3)
    assert [gate.admit("a", 0.0) for _ in range(4)] == [True, True, True, False]
    assert gate.admit("b", 0.0)  # another address has its own bucket
    assert not gate.admit("a", 0.4) and gate.admit("a", 0.5)  # one token in half a second
    assert gate.take_refused() == {"a": 2} and gate.take_refused() == {}
    decoder = FrameDecoder()
    decoder.feed(REFUSAL)
    refusal = decoder.next_frame()
    assert refusal is not None and (refusal["code"], refusal["fatal"]) == ("server_busy", True)


def test_the_addresses_admission_remembers_are_bounded() -> None:
    from oriflamme.server.core import admission

    gate = admission.Admission(rate=1.0, burst=2)
    for i in range(3 * admission._KEPT):
        assert gate.admit(f"10.{i >> 16}.{(i >> 8) & 255}.{i & 255}", float(i))
    assert len(gate._buckets) <= admission._KEPT  # those full again were forgotten


def test_a_burst_is_taken_a_slice_at_a_time_with_the_others_between() -> None:
    """One connection's burst cannot hold the core: after `SLICE` messages
    the others' inputs come first, and a tick at once takes the next slice."""
    from oriflamme.server.core.gateway import SLICE

    gw = gateway()
    Raw(gw, "flood", None)
    other = Raw(gw, "other", None)
    pings = b"".join(encode_frame({"type": "ping", "id": 1000 + i}) for i in range(5 * SLICE))
    gw.receive_data("flood", pings, 1.0)
    decoder = FrameDecoder()
    decoder.feed(gw.data_to_send("flood"))
    assert [decoder.next_frame() for _ in range(SLICE)][-1] == {"type": "pong", "id": 999 + SLICE}
    assert decoder.next_frame() is None and not gw.wants_data("flood")
    assert gw.next_deadline() == 1.0  # its next turn: at once
    assert isinstance(other.ask(m.Ping(), 1.0), m.Pong)  # served meanwhile
    for turn in range(1, 5):
        gw.tick(1.0)
        decoder.feed(gw.data_to_send("flood"))
        got = []
        while (frame := decoder.next_frame()) is not None:
            got.append(frame["id"])
        assert got == list(range(1000 + turn * SLICE, 1000 + (turn + 1) * SLICE))
    gw.tick(1.0)
    assert gw.wants_data("flood")  # all taken: read again


def test_rooms_and_games_one_address_sets_going_are_bounded_over_its_connections() -> None:
    """Rooms made and games started cost more than a message, of the
    connection's bucket and of its address's budget: many connections of one
    address cannot set games going as fast as the processor goes."""
    gw = gateway(work_burst=50, work_rate=1.0)
    ann, bob = Raw(gw, "ann", "10.0.0.1"), Raw(gw, "bob", "10.0.0.1")
    other = Raw(gw, "cid", "10.0.0.2")
    assert isinstance(ann.ask(m.CreateRoom(settings=settings(3)), 1.0), m.Ok)  # 20
    assert isinstance(ann.ask(m.LeaveRoom(), 1.0), m.Ok)
    assert isinstance(bob.ask(m.CreateRoom(settings=settings(3)), 1.0), m.Ok)  # 40
    refused = ann.ask(m.CreateRoom(settings=settings(3)), 1.0)  # 60: past the 50
    assert isinstance(refused, m.Error) and (refused.code, refused.fatal) == ("rate_limited", False)
    assert refused.id is not None and "too many rooms and games lately" in refused.message
    assert "try again in 10 s" in refused.message  # 10 tokens short, 1 a second
    assert isinstance(other.ask(m.CreateRoom(settings=settings(3)), 1.0), m.Ok)  # its own budget
    assert sorted(gw.lobby.rooms) == [2, 3]  # (ann's first closed when she left)
    assert isinstance(ann.ask(m.CreateRoom(settings=settings(3)), 11.0), m.Ok)

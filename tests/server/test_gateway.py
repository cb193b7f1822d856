"""The gateway, bytes in and bytes out, as docs/PROTOCOL.md "Transport and
framing", "Handshake and versions", "Requests, answers and ids" and
"Errors" describe a server.

Broken frames and handshakes are answered with a fatal error and closed;
anything else wrong is refused and the connection goes on. A connection
that says nothing in time is closed with `timeout`; one that does not read
what it is sent is dropped (its session may resume). A bug in the core
answers its request `internal`, is reported as a `Fault`, and the server
goes on. Time is given explicitly (`now`); nothing sleeps.
"""

from __future__ import annotations

import struct
from collections.abc import Hashable
from typing import Any

import msgpack
import pytest

from oriflamme.protocol import ClientConnection, FrameDecoder, encode_frame
from oriflamme.protocol import messages as m
from oriflamme.server.core import ErrorSent, Fault, FixedEntropy, Gateway, Lobby, ServerConfig
from oriflamme.server.core.config import RANGES

from .scenario import seq_of, settings

MAX_FRAME = 65536


def gateway(**options: Any) -> Gateway:
    config = ServerConfig(idle_timeout=options.pop("idle_timeout", 30))
    return Gateway(Lobby(config, FixedEntropy("gateway")), **options)


def frames(data: bytes) -> list[dict[str, Any]]:
    """The maps in the bytes the server sent (all of them complete)."""
    decoder = FrameDecoder()
    decoder.feed(data)
    out = []
    while (frame := decoder.next_frame()) is not None:
        out.append(frame)
    assert decoder.buffered == 0
    return out


def raw_frame(payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + payload


def hello_frame(**fields: Any) -> bytes:
    data = {"type": "hello", "versions": [1], "client": "raw/1", "name": "Raw", "id": 1}
    data.update(fields)
    return encode_frame(data)


class Peer:
    """A well-behaved client on connection `conn`: its `ClientConnection`
    checks everything the server sends (ids, seq, the handshake)."""

    def __init__(
        self,
        gw: Gateway,
        conn: Hashable,
        name: str = "Ann",
        now: float = 0.0,
        token: bytes | None = None,
    ) -> None:
        self.gw, self.conn = gw, conn
        self.client = ClientConnection()
        self.next_id = 1
        self.last_seq = 0  # of the last push read
        gw.open(conn, now)
        hello = m.Hello(versions=(1,), client="peer/1", name=name, token=token)
        self.welcome = self.ask(hello, now, expect=m.Welcome)

    def send(self, message: m.Message, now: float = 0.0) -> int:
        request_id = self.next_id
        self.next_id += 1
        data = m.to_data(message) | {"id": request_id}
        self.gw.receive_data(self.conn, self.client.send(m.from_data(data, "client")), now)
        return request_id

    def read(self) -> list[m.Message]:
        data = self.gw.data_to_send(self.conn)
        if data:  # (b"" would say the server closed the connection)
            self.client.receive_data(data)
        out = []
        while isinstance(message := self.client.next_message(), m.Message):
            out.append(message)
            self.last_seq = getattr(message, "seq", None) or self.last_seq
        return out

    def ask(self, message: m.Message, now: float = 0.0, *, expect: type = m.Ok) -> Any:
        request_id = self.send(message, now)
        answers = [x for x in self.read() if x.ROLE == "reply"]
        assert answers and getattr(answers[0], "id", None) == request_id, answers
        assert isinstance(answers[0], expect), answers[0]
        return answers[0]


def error_of(data: bytes) -> dict[str, Any]:
    (error,) = frames(data)
    assert error["type"] == "error", error
    return error


# ------------------------------------------------------------ framing


BROKEN = {
    "not msgpack": raw_frame(b"\xc1\xc1\xc1"),
    "not a map": raw_frame(msgpack.packb([1, 2, 3])),
    "trailing bytes": raw_frame(msgpack.packb({"type": "ping", "id": 2}) + b"\x00"),
    "a key that is no string": raw_frame(msgpack.packb({1: "ping"})),
    "a float": raw_frame(msgpack.packb({"type": "ping", "id": 1.5})),
    "an ext type": raw_frame(b"\x82\xa4type\xa4ping\xa2id" + b"\xd4\x05\x01"),
    "invalid utf-8": raw_frame(b"\x81\xa4type\xa2\xff\xfe"),
    "an empty payload": b"\x00\x00\x00\x00",
}


@pytest.mark.parametrize("payload", list(BROKEN.values()), ids=list(BROKEN))
def test_garbage_after_the_welcome_is_malformed_frame_and_closes(payload: bytes) -> None:
    gw = gateway()
    Peer(gw, "a")
    gw.receive_data("a", payload + encode_frame({"type": "ping", "id": 9}), 1.0)

    error = error_of(gw.data_to_send("a"))

    assert (error["code"], error["fatal"]) == ("malformed_frame", True)
    assert "id" not in error
    assert gw.must_close("a")
    gw.receive_data("a", encode_frame({"type": "ping", "id": 10}), 2.0)
    assert gw.data_to_send("a") == b""  # nothing more is read from a broken stream


def test_garbage_before_the_hello_is_a_fatal_framing_error() -> None:
    for garbage, code in (
        (b"\x00\x00\x00\x02\xc1\xc1", "malformed_frame"),
        (b"GET / HTTP/1.1\r\nHost: example\r\n\r\n", "frame_too_large"),  # "GET " is a length
    ):
        gw = gateway()
        gw.open("a", 0.0)
        gw.receive_data("a", garbage + hello_frame(), 0.0)
        error = error_of(gw.data_to_send("a"))
        assert (error["code"], error["fatal"]) == (code, True)
        assert gw.must_close("a")


def test_a_frame_over_64_kib_is_refused_from_its_header_alone() -> None:
    gw = gateway()
    Peer(gw, "a")
    gw.receive_data("a", struct.pack(">I", MAX_FRAME + 1), 1.0)  # no payload sent at all

    error = error_of(gw.data_to_send("a"))

    assert (error["code"], error["fatal"]) == ("frame_too_large", True)
    assert gw.must_close("a")


def padded_ping(size: int, request_id: int) -> bytes:
    """A ping frame whose payload is exactly `size` bytes (an unknown field pads it)."""
    pad = size - len(msgpack.packb({"type": "ping", "id": request_id, "pad": ""}))
    for extra in range(6):
        payload = msgpack.packb({"type": "ping", "id": request_id, "pad": "x" * (pad - extra)})
        if len(payload) == size:
            return raw_frame(payload)
    raise AssertionError("no padding fits")


def test_a_frame_of_exactly_64_kib_is_read_and_one_byte_more_is_refused() -> None:
    gw = gateway()
    Peer(gw, "a")
    gw.receive_data("a", padded_ping(MAX_FRAME, 7), 1.0)
    assert frames(gw.data_to_send("a")) == [{"type": "pong", "id": 7}]

    gw.receive_data("a", padded_ping(MAX_FRAME + 1, 8), 1.0)
    error = error_of(gw.data_to_send("a"))
    assert (error["code"], error["fatal"]) == ("frame_too_large", True)


def test_frames_split_and_merged_anyhow_are_read() -> None:
    gw = gateway()
    gw.open("a", 0.0)
    data = (
        hello_frame()
        + encode_frame({"type": "ping", "id": 2})
        + encode_frame({"type": "list_rooms", "id": 3})
    )
    for i in range(len(data)):
        gw.receive_data("a", data[i : i + 1], 0.0)
    assert [(f["type"], f["id"]) for f in frames(gw.data_to_send("a"))] == [
        ("welcome", 1),
        ("pong", 2),
        ("room_list", 3),
    ]


# ------------------------------------------------------------ handshake


def test_a_first_message_that_is_not_hello_is_handshake_required() -> None:
    for first in ({"type": "ping", "id": 3}, {"type": "dance", "id": 3}):
        gw = gateway()
        gw.open("a", 0.0)
        gw.receive_data("a", encode_frame(first) + hello_frame(), 0.0)

        error = error_of(gw.data_to_send("a"))

        assert (error["code"], error["fatal"], error["id"]) == ("handshake_required", True, 3)
        assert gw.must_close("a")


def test_a_hello_with_a_bad_field_is_a_fatal_invalid_field() -> None:
    gw = gateway()
    gw.open("a", 0.0)
    gw.receive_data("a", hello_frame(versions=[], id=4), 0.0)
    error = error_of(gw.data_to_send("a"))
    assert (error["code"], error["fatal"], error["id"]) == ("invalid_field", True, 4)
    assert "versions" in error["message"]
    assert gw.must_close("a")


def test_an_unsupported_version_is_refused_with_the_versions_the_server_speaks() -> None:
    gw = gateway()
    gw.open("a", 0.0)
    gw.receive_data("a", hello_frame(versions=[3, 4], id=5) + encode_frame({"type": "ping"}), 0.0)

    error = error_of(gw.data_to_send("a"))

    assert (error["code"], error["fatal"], error["id"]) == ("unsupported_version", True, 5)
    assert error["versions"] == [1, 2]
    assert gw.must_close("a")


def test_the_highest_common_version_is_chosen() -> None:
    gw = gateway()
    gw.open("a", 0.0)
    gw.receive_data("a", hello_frame(versions=[3, 1, 2]), 0.0)
    (welcome,) = frames(gw.data_to_send("a"))
    assert (welcome["type"], welcome["version"], welcome["resumed"]) == ("welcome", 2, False)
    assert welcome["idle_timeout"] == 30 and len(welcome["token"]) == 32


def test_requests_right_behind_the_hello_are_handled_after_the_welcome() -> None:
    gw = gateway()
    gw.open("a", 0.0)
    create = m.to_data(m.CreateRoom(settings=settings(3), id=2))
    gw.receive_data(
        "a", hello_frame() + encode_frame(create) + encode_frame({"type": "list_rooms", "id": 3}), 0
    )
    sent = frames(gw.data_to_send("a"))
    assert [f["type"] for f in sent] == ["welcome", "ok", "room_state", "room_list"]
    assert [f.get("id") for f in sent] == [1, 2, None, 3]
    assert [r["room"] for r in sent[3]["rooms"]] == [1]


def test_requests_behind_a_refused_hello_are_dropped_with_the_connection() -> None:
    gw = gateway()
    gw.open("a", 0.0)
    gw.receive_data(
        "a", hello_frame(token=bytes(32)) + encode_frame({"type": "ping", "id": 2}), 0.0
    )
    error = error_of(gw.data_to_send("a"))
    assert (error["code"], error["fatal"], error["id"]) == ("bad_token", True, 1)
    assert gw.must_close("a")


def test_a_second_hello_is_unexpected_and_the_connection_stays_open() -> None:
    gw = gateway()
    peer = Peer(gw, "a")
    gw.receive_data("a", hello_frame(id=40), 1.0)
    error = error_of(gw.data_to_send("a"))
    assert (error["code"], error["fatal"], error["id"]) == ("unexpected_message", False, 40)
    assert not gw.must_close("a")
    peer.next_id = 41
    peer.ask(m.Ping(), expect=m.Pong)


# ------------------------------------------------------------ refusals that keep the connection


def test_unknown_messages_and_bad_fields_are_refused_with_their_id_and_the_connection_stays() -> (
    None
):
    gw = gateway()
    Peer(gw, "a")
    gw.receive_data(
        "a",
        encode_frame({"type": "dance", "id": 11})
        + encode_frame({"id": 12})
        + encode_frame({"type": "chat", "text": "x" * 501, "id": 13})
        + encode_frame({"type": "join_room", "room": "one", "id": 14})
        + encode_frame({"type": "welcome", "id": 15})
        + encode_frame({"type": "ping", "id": 16}),
        1.0,
    )
    sent = frames(gw.data_to_send("a"))
    assert [(f["type"], f.get("code"), f.get("id"), f.get("fatal")) for f in sent] == [
        ("error", "unknown_message", 11, False),
        ("error", "unknown_message", 12, False),
        ("error", "invalid_field", 13, False),
        ("error", "invalid_field", 14, False),
        ("error", "unknown_message", 15, False),
        ("pong", None, 16, None),
    ]
    assert "chat.text" in sent[2]["message"] and "join_room.room" in sent[3]["message"]
    assert not gw.must_close("a")


# ------------------------------------------------------------ timeouts


def test_no_hello_within_the_handshake_timeout_is_timeout() -> None:
    gw = gateway(handshake_timeout=10.0)
    gw.open("a", 100.0)
    gw.receive_data("a", hello_frame()[:7], 101.0)  # a piece of a hello is no hello
    assert gw.next_deadline() == 110.0
    gw.tick(109.9)
    assert gw.data_to_send("a") == b"" and not gw.must_close("a")

    gw.tick(110.0)

    error = error_of(gw.data_to_send("a"))
    assert (error["code"], error["fatal"]) == ("timeout", True)
    assert gw.must_close("a")


def test_nothing_received_for_the_idle_timeout_is_timeout_and_a_ping_keeps_it_alive() -> None:
    gw = gateway(idle_timeout=30)
    peer = Peer(gw, "a", now=0.0)
    assert peer.welcome.idle_timeout == 30
    deadline = gw.next_deadline()
    assert deadline is not None and deadline <= 30.0  # never later than the next thing to do
    gw.tick(29.0)
    assert not gw.must_close("a")
    assert gw.next_deadline() == 30.0  # swept: exact again
    peer.ask(m.Ping(), 29.0, expect=m.Pong)
    gw.tick(30.0)  # the old deadline: nothing to do, the next one found
    assert not gw.must_close("a") and gw.next_deadline() == 59.0
    gw.tick(58.9)
    assert peer.read() == [] and not gw.must_close("a")

    gw.tick(59.0)

    (error,) = peer.read()
    assert isinstance(error, m.Error) and (error.code, error.fatal) == ("timeout", True)
    assert gw.must_close("a")


def test_a_client_trickling_a_frame_it_never_finishes_is_idle_and_timed_out() -> None:
    gw = gateway(idle_timeout=30)
    Peer(gw, "a", now=0.0)
    gw.receive_data("a", struct.pack(">I", 100), 1.0)  # a frame of 100 bytes is coming...
    for second in range(2, 30):  # ...a byte a second: never all of it
        gw.receive_data("a", b"\x00", float(second))
        gw.tick(float(second))
    assert not gw.must_close("a")
    gw.tick(30.0)
    (error,) = frames(gw.data_to_send("a"))[-1:]
    assert (error["code"], error["fatal"]) == ("timeout", True)
    assert gw.must_close("a")


def test_an_idle_timeout_leaves_the_session_to_resume() -> None:
    gw = gateway(idle_timeout=30)
    peer = Peer(gw, "a")
    peer.ask(m.CreateRoom(settings=settings(3)))
    peer.read()
    gw.tick(30.0)
    assert gw.must_close("a")
    gw.closed("a", 30.0)

    gw.open("b", 31.0)
    gw.receive_data("b", hello_frame(token=peer.welcome.token, id=1), 31.0)
    sent = frames(gw.data_to_send("b"))
    assert [f["type"] for f in sent] == ["welcome", "room_state", "room_state"]
    assert sent[0]["resumed"] is True and sent[0]["player"] == peer.welcome.player
    assert sent[1]["room"] == 1 and sent[1]["seat"] == 0


# ------------------------------------------------------------ flow control


def test_the_257th_pending_request_is_rate_limited() -> None:
    gw = gateway()
    Peer(gw, "a")
    data = b"".join(encode_frame({"type": "ping", "id": i}) for i in range(1000, 1257))
    gw.receive_data("a", data, 1.0)  # the client reads none of the answers...
    turns(gw, 1.0)  # ...and the shell takes none between its turns
    sent = frames(gw.data_to_send("a"))
    assert [f["type"] for f in sent[:256]] == ["pong"] * 256
    assert (sent[256]["type"], sent[256].get("code")) == ("error", "rate_limited")
    assert not gw.must_close("a")


def test_an_id_whose_answer_is_not_written_yet_is_pending_and_cannot_be_reused() -> None:
    gw = gateway()
    Peer(gw, "a")
    ping = [encode_frame({"type": "ping", "id": i}) for i in (7, 7, 8, 8)]
    # In one write: the second 7 comes before the answer to the first went out.
    gw.receive_data("a", ping[0] + ping[1] + ping[2], 1.0)
    pong, refused, other = frames(gw.data_to_send("a"))
    assert pong == {"type": "pong", "id": 7} and other == {"type": "pong", "id": 8}
    assert refused["code"] == "unexpected_message" and "id" not in refused
    assert "request id 7 is still awaiting its answer" in refused["message"]
    assert not gw.must_close("a")
    # Once the answers are written, their ids are free again.
    gw.receive_data("a", ping[3], 2.0)
    assert frames(gw.data_to_send("a")) == [{"type": "pong", "id": 8}]


def test_a_client_that_does_not_read_is_dropped_past_max_outbox_and_may_resume() -> None:
    gw = gateway(max_outbox=4096)
    slow, talker = Peer(gw, "slow", "Slow"), Peer(gw, "talker", "Talker")
    slow.ask(m.CreateRoom(settings=settings(3)))
    talker.ask(m.JoinRoom(room=1))
    slow.read()
    read_up_to = slow.last_seq  # the last push the slow client read
    session = gw.lobby.sessions.by_player[slow.welcome.player]

    def waiting() -> int:
        """The bytes the slow client has been sent and has not read."""
        return sum(
            len(encode_frame(m.to_data(x))) for x in session.kept() if seq_of(x) > read_up_to
        )

    dropped_after = None
    for line in range(200):
        talker.ask(m.Chat(text=f"line {line}: " + "blah " * 8), float(line))  # (chat's limit)
        talker.read()
        assert gw.must_close("slow") == (waiting() > 4096), (line, waiting())
        if gw.must_close("slow"):
            dropped_after = line
            break
    assert dropped_after is not None and dropped_after > 10
    assert not gw.must_close("talker")
    # Dropped: what waited is let go, and only a fatal `timeout` goes after it.
    error = error_of(gw.data_to_send("slow"))
    assert (error["code"], error["fatal"]) == ("timeout", True) and "unread" in error["message"]

    gw.closed("slow", 1.0)
    away = [x for x in talker.read() if isinstance(x, m.RoomState)]
    assert away and not away[-1].seats[0].connected
    again = Peer(gw, "slow again", "Slow", 2.0, token=slow.welcome.token)
    assert again.welcome.resumed and again.welcome.player == slow.welcome.player
    back = [x for x in talker.read() if isinstance(x, m.RoomState)]
    assert back and back[-1].seats[0].connected


# ------------------------------------------------------------ faults


def test_a_bug_in_the_core_is_answered_internal_reported_and_the_server_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gw = gateway()
    ann, bob = Peer(gw, "a", "Ann"), Peer(gw, "b", "Bob")
    ann.ask(m.CreateRoom(settings=settings(3)))
    bob.ask(m.JoinRoom(room=1))
    ann.read()
    bob.read()
    gw.take_effects()

    def broken(*args: Any) -> Any:
        raise RuntimeError("a bug in the room list")

    monkeypatch.setattr(gw.lobby, "_room_list", broken)
    failed = ann.ask(m.ListRooms(), 1.0, expect=m.Error)

    assert (failed.code, failed.fatal) == ("internal", False)
    assert "RuntimeError" not in failed.message  # the client is not shown the traceback
    (fault,) = [e for e in gw.take_effects() if isinstance(e, Fault)]
    assert isinstance(fault, Fault) and fault.conn == "a"
    assert "a bug in the room list" in fault.what
    # The same connection and the others go on.
    assert not gw.must_close("a")
    ann.ask(m.Ping(), 2.0, expect=m.Pong)
    bob.ask(m.Chat(text="still there?"), 2.0)
    assert [x.text for x in ann.read() if isinstance(x, m.ChatMessage)] == ["still there?"]
    monkeypatch.undo()
    assert [r.room for r in bob.ask(m.ListRooms(), 3.0, expect=m.RoomList).rooms] == [1]


def test_a_bug_inside_a_room_changes_nothing_for_anyone(monkeypatch: pytest.MonkeyPatch) -> None:
    from oriflamme.server.core.room import Room

    gw = gateway()
    ann, bob = Peer(gw, "a", "Ann"), Peer(gw, "b", "Bob")
    ann.ask(m.CreateRoom(settings=settings(3)))
    bob.ask(m.JoinRoom(room=1))
    ann.read()
    bob.read()
    gw.take_effects()  # (the room's log lines)

    def broken(*args: Any) -> Any:
        raise KeyError("seat")

    monkeypatch.setattr(Room, "_chat", broken)
    failed = bob.ask(m.Chat(text="hello"), 1.0, expect=m.Error)
    assert failed.code == "internal"
    assert ann.read() == [] and bob.read() == []
    assert [type(e) for e in gw.take_effects()] == [ErrorSent, Fault]
    monkeypatch.undo()
    bob.ask(m.Ready(ready=True), 2.0)
    assert [s.ready for s in [x for x in ann.read() if isinstance(x, m.RoomState)][-1].seats] == [
        False,
        True,
        False,
    ]


def test_after_a_bug_in_the_hello_every_later_request_is_answered_or_the_connection_closes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gw = gateway()

    def broken(*args: Any) -> Any:
        raise RuntimeError("a bug in hello")

    monkeypatch.setattr(gw.lobby, "hello", broken)
    gw.open("a", 0.0)
    gw.receive_data("a", hello_frame(id=1) + encode_frame({"type": "ping", "id": 2}), 0.0)
    sent = frames(gw.data_to_send("a"))
    assert (sent[0]["type"], sent[0]["code"], sent[0]["id"]) == ("error", "internal", 1)
    assert any(isinstance(e, Fault) for e in gw.take_effects())
    answered = [f.get("id") for f in sent[1:]]
    assert gw.must_close("a") or answered == [2], sent


def test_a_bug_in_one_room_s_timers_is_reported_and_the_other_rooms_go_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gw = gateway(idle_timeout=3600)
    ann, bob = Peer(gw, "a", "Ann"), Peer(gw, "b", "Bob")
    for peer in (ann, bob):  # a two-seat game each; nobody commits to a seed
        for request in (
            m.CreateRoom(settings=settings(2)),
            m.AddBot(strategy="random"),
            m.Ready(ready=True),
            m.StartGame(),
        ):
            peer.ask(request)
        peer.read()
    gw.take_effects()
    room = gw.lobby.rooms[1]

    def broken(*args: Any) -> Any:
        raise RuntimeError("a bug in room 1's timers")

    monkeypatch.setattr(room, "tick", broken)
    try:
        # Past the seeding timer of both games (30 s, and the grace period of
        # 60 s that the bots, never connected here, get on top of it).
        gw.tick(61.0)
    except RuntimeError:
        raised = True
    else:
        raised = False
    faults = [e for e in gw.take_effects() if isinstance(e, Fault)]
    cancelled = [x for x in bob.read() if isinstance(x, m.RoomState)]
    assert not raised and faults
    assert cancelled and cancelled[-1].state == "waiting"  # room 2's game was cancelled


def test_a_bug_when_a_session_expires_is_reported_and_every_session_away_expires(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from oriflamme.server.core.room import Room

    gw = Gateway(Lobby(ServerConfig(idle_timeout=3600, session_ttl=10), FixedEntropy("expiry")))
    ann, bob, cy = Peer(gw, "a", "Ann"), Peer(gw, "b", "Bob"), Peer(gw, "c", "Cy")
    ann.ask(m.CreateRoom(settings=settings(3)))
    bob.ask(m.CreateRoom(settings=settings(3)))
    cy.ask(m.JoinRoom(room=2))
    gw.closed("a", 1.0)  # Ann and Bob go away at once, each from a room of their own
    gw.closed("b", 1.0)
    gw.take_effects()
    removed: list[int] = []
    real_remove = Room.remove

    def broken_once(room: Room, session: Any, now: float) -> Any:
        if not removed:
            removed.append(session.player)
            raise RuntimeError("a bug in removing a seat")
        removed.append(session.player)
        return real_remove(room, session, now)

    monkeypatch.setattr(Room, "remove", broken_once)

    gw.tick(12.0)  # past both sessions' ttl

    faults = [e for e in gw.take_effects() if isinstance(e, Fault)]
    assert len(faults) == 1 and "a bug in removing a seat" in faults[0].what
    sessions = gw.lobby.sessions
    for peer in (ann, bob):  # both expired, the one whose room failed too
        assert peer.welcome.player not in sessions.by_player
        assert peer.welcome.player not in sessions.away
    assert removed == sorted([ann.welcome.player, bob.welcome.player])
    states = [x for x in cy.read() if isinstance(x, m.RoomState)]
    assert states and states[-1].seats[0].name is None  # Bob left room 2; Cy is its host
    assert states[-1].host == cy.welcome.player
    deadline = gw.lobby.next_deadline()
    assert deadline is None or deadline > 12.0


def test_a_bug_in_the_lobby_when_sessions_expire_leaves_them_to_the_next_tick(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = ServerConfig(idle_timeout=3600, session_ttl=10, lobby_ttl=10)
    gw = Gateway(Lobby(config, FixedEntropy("retry")))
    ann, bob = Peer(gw, "a", "Ann"), Peer(gw, "b", "Bob")
    gw.closed("a", 1.0)
    gw.closed("b", 1.0)
    sessions = gw.lobby.sessions
    real_close = type(sessions).close

    def broken(self: Any, session: Any) -> None:
        raise RuntimeError("a bug in closing a session")

    monkeypatch.setattr(type(sessions), "close", broken)
    gw.tick(12.0)
    assert [e for e in gw.take_effects() if isinstance(e, Fault)]
    assert {ann.welcome.player, bob.welcome.player} <= sessions.away.keys()
    assert gw.lobby.next_deadline() == 11.0  # still due: tried again
    monkeypatch.setattr(type(sessions), "close", real_close)

    gw.tick(13.0)

    assert not {ann.welcome.player, bob.welcome.player} & sessions.by_player.keys()
    assert gw.lobby.next_deadline() is None


# ------------------------------------------------------------ a full server


def test_a_server_with_all_the_sessions_it_can_hold_is_busy_but_resumes() -> None:
    gw = Gateway(Lobby(ServerConfig(max_sessions=1), FixedEntropy("full")))
    ann = Peer(gw, "a")
    gw.open("b", 0.0)
    gw.receive_data("b", hello_frame(id=3), 0.0)
    error = error_of(gw.data_to_send("b"))
    assert (error["code"], error["fatal"], error["id"]) == ("server_busy", True, 3)
    assert gw.must_close("b")
    gw.closed("a", 1.0)
    again = Peer(gw, "c", token=ann.welcome.token)
    assert again.welcome.resumed and again.welcome.player == ann.welcome.player


def test_a_server_with_all_the_rooms_it_can_hold_refuses_create_room() -> None:
    gw = Gateway(Lobby(ServerConfig(max_rooms=1), FixedEntropy("rooms")))
    ann, bob = Peer(gw, "a", "Ann"), Peer(gw, "b", "Bob")
    ann.ask(m.CreateRoom(settings=settings(3)))
    error = bob.ask(m.CreateRoom(settings=settings(3)), expect=m.Error)
    # No room for a room: the connection goes on (fatal false), Bob may join one.
    assert (error.code, error.fatal) == ("too_many_rooms", False)
    assert not gw.must_close("b")
    assert [r.room for r in bob.ask(m.ListRooms(), expect=m.RoomList).rooms] == [1]


# ------------------------------------------------------------ closing


def test_shut_down_tells_every_client_and_closes() -> None:
    gw = gateway()
    Peer(gw, "a")
    gw.open("b", 0.0)  # not welcomed yet
    gw.shut_down()
    for conn in ("a", "b"):
        error = error_of(gw.data_to_send(conn))
        assert (error["code"], error["fatal"]) == ("shutting_down", True)
        assert gw.must_close(conn)


def test_end_of_file_closes_and_the_room_shows_the_player_away() -> None:
    gw = gateway()
    ann, bob = Peer(gw, "a", "Ann"), Peer(gw, "b", "Bob")
    ann.ask(m.CreateRoom(settings=settings(3)))
    bob.ask(m.JoinRoom(room=1))
    ann.read()
    gw.receive_data("b", b"", 1.0)
    assert gw.must_close("b")
    gw.closed("b", 1.0)
    states = [x for x in ann.read() if isinstance(x, m.RoomState)]
    assert states and not states[-1].seats[1].connected and states[-1].seats[1].name == "Bob"


def test_a_bug_when_a_connection_closes_is_reported_and_the_server_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gw = gateway()
    Peer(gw, "a", "Ann")
    bob = Peer(gw, "b", "Bob")

    def broken(*args: Any) -> Any:
        raise RuntimeError("a bug when a connection closes")

    monkeypatch.setattr(gw.lobby, "closed", broken)
    gw.closed("a", 1.0)  # nothing escapes
    assert [e for e in gw.take_effects() if isinstance(e, Fault)]
    monkeypatch.undo()
    assert bob.ask(m.Ping(), expect=m.Pong)


def test_every_error_names_the_section_of_the_protocol_to_read() -> None:
    """A client author's mistake points to where the document explains it:
    the message's own heading for a bad field, else the code's section."""
    gw = gateway()
    ann = Peer(gw, "a", "Ann")
    gw.take_effects()
    gw.receive_data(
        "a",
        encode_frame(
            {
                "type": "place",
                "turn": 0,
                "at": "middle",
                "family": "red",
                "commitment": bytes(32),
                "id": 9,
            }
        ),
        1.0,
    )
    told = error_of(gw.data_to_send("a"))
    assert told["code"] == "invalid_field"
    assert told["message"].startswith("place.at: expected")
    assert told["message"].endswith("(see docs/PROTOCOL.md, `place`)")
    refused = ann.ask(m.JoinRoom(room=77), expect=m.Error)
    assert refused.message == "no room 77 (it may have closed) (see docs/PROTOCOL.md, Lobby)"
    # The server's log gets the same, at debug level.
    sent = [e for e in gw.take_effects() if isinstance(e, ErrorSent)]
    assert [e.error.code for e in sent] == ["invalid_field", "no_such_room"]


# ------------------------------------------------------------ abuse limits


def turns(gw: Gateway, now: float) -> int:
    """Tick while something is due at `now`: a connection whose burst was
    taken `SLICE` messages at a time (the others' inputs between its turns)."""
    count = 0
    while (deadline := gw.next_deadline()) is not None and deadline <= now:
        gw.tick(now)
        count += 1
    return count


def limited_gateway(**limits: Any) -> Gateway:
    return Gateway(Lobby(ServerConfig(**limits), FixedEntropy("limits")))


def test_messages_past_the_rate_wait_unread_and_are_answered_at_the_rate() -> None:
    """A flood costs the server the rate it allows: past the bucket, the
    messages stay unread (the shell stops reading the socket: TCP slows the
    client) and are taken as tokens come back, none refused, in order."""
    gw = limited_gateway(message_rate=10.0, message_burst=20)
    ann = Peer(gw, "ann")  # the hello took one token
    pings = b"".join(encode_frame({"type": "ping", "id": 100 + i}) for i in range(30))
    assert ann.welcome is not None
    gw.receive_data("ann", pings, 0.0)
    turns(gw, 0.0)
    answers = frames(gw.data_to_send("ann"))  # (raw frames: the peer did not send these)
    assert [a["id"] for a in answers] == list(range(100, 119))  # 20 tokens, one the hello's
    assert {a["type"] for a in answers} == {"pong"}
    assert not gw.wants_data("ann") and not gw.must_close("ann")
    assert "ann" in gw.take_dirty()  # (the shell looks at it: stops reading it)
    assert gw.next_deadline() == pytest.approx(0.1)  # a token in a tenth of a second

    gw.tick(0.1)

    assert [a["id"] for a in frames(gw.data_to_send("ann"))] == [119]
    assert not gw.wants_data("ann")
    for _ in range(10):  # one a tenth of a second, as the rate says
        deadline = gw.next_deadline()
        assert deadline is not None
        gw.tick(deadline)
    assert [a["id"] for a in frames(gw.data_to_send("ann"))] == list(range(120, 130))
    assert gw.wants_data("ann")  # all taken: the shell reads it again
    assert "ann" in gw.take_dirty()


def test_a_server_bot_is_not_rate_limited() -> None:
    gw = limited_gateway(message_rate=1.0, message_burst=2)
    gw.open("bot", 0.0, limited=False)
    gw.receive_data("bot", hello_frame(), 0.0)
    gw.receive_data(
        "bot", b"".join(encode_frame({"type": "ping", "id": 10 + i}) for i in range(50)), 0.0
    )
    turns(gw, 0.0)
    replies = [f for f in frames(gw.data_to_send("bot")) if f["type"] in ("pong", "error")]
    assert [f["type"] for f in replies] == ["pong"] * 50


def test_connections_past_the_limit_of_one_address_are_refused_and_counted_again() -> None:
    gw = limited_gateway(connections_per_address=3)
    for i in range(3):
        gw.open(f"a{i}", 0.0, address="10.0.0.1")
        assert not gw.must_close(f"a{i}")
    gw.open("a3", 0.0, address="10.0.0.1")
    error = error_of(gw.data_to_send("a3"))
    assert (error["code"], error["fatal"]) == ("server_busy", True)
    assert "too many connections from your address (3 at most)" in error["message"]
    assert gw.must_close("a3")
    gw.open("b0", 0.0, address="10.0.0.2")  # another address is not affected
    gw.open("c0", 0.0)  # nor a stream without one (an in-process client)
    assert not gw.must_close("b0") and not gw.must_close("c0")
    gw.closed("a3", 0.0)
    gw.closed("a0", 0.0)
    gw.open("a4", 0.0, address="10.0.0.1")  # a slot is free again
    assert not gw.must_close("a4")
    gw.receive_data("a4", hello_frame(), 0.0)
    assert frames(gw.data_to_send("a4"))[0]["type"] == "welcome"


def test_the_limits_must_make_sense() -> None:
    for bad in ({"message_rate": 0}, {"message_burst": 0}, {"connections_per_address": 0}):
        with pytest.raises(ValueError):
            ServerConfig(**bad)  # type: ignore[arg-type]


def test_every_limit_is_checked_against_its_range() -> None:
    for name, (lo, hi) in RANGES.items():
        kind = type(getattr(ServerConfig(), name))
        below: Any = kind(lo) - 1 if kind is int else lo / 2  # (an int or a float field)
        above: Any = kind(hi) + 1 if kind is int else hi * 2
        with pytest.raises(ValueError, match=name):
            ServerConfig(**{name: below})
        with pytest.raises(ValueError, match=name):
            ServerConfig(**{name: above})
        ServerConfig(**{name: kind(lo)})  # the bounds themselves are fine
        ServerConfig(**{name: kind(hi)})


def test_a_smaller_frame_limit_refuses_a_larger_frame_from_its_header() -> None:
    gw = limited_gateway(max_frame=4096)
    ann = Peer(gw, "ann")
    assert ann.welcome is not None
    gw.receive_data("ann", padded_ping(4097, 2)[:4], 0.0)  # the header alone
    error = error_of(gw.data_to_send("ann"))
    assert (error["code"], error["fatal"]) == ("frame_too_large", True)
    assert "exceeds the limit of 4096" in error["message"]
    assert gw.must_close("ann")


def test_a_server_that_allows_less_depth_or_fewer_items_refuses_more() -> None:
    gw = limited_gateway(max_depth=4, max_items=64)
    ann, bob = Peer(gw, "ann"), Peer(gw, "bob")
    assert ann.welcome is not None and bob.welcome is not None
    deep: Any = 1
    for _ in range(4):  # the frame's own map and 4 more levels: 5 deep
        deep = [deep]
    gw.receive_data("ann", encode_frame({"type": "ping", "id": 2, "x": deep}), 0.0)
    error = error_of(gw.data_to_send("ann"))
    assert (error["code"], error["fatal"]) == ("malformed_frame", True)
    assert "nest more than 4 deep" in error["message"]
    gw.receive_data("bob", encode_frame({"type": "ping", "id": 2, "x": list(range(65))}), 0.0)
    error = error_of(gw.data_to_send("bob"))
    assert (error["code"], error["fatal"]) == ("malformed_frame", True)
    # What a client really sends still fits: the deepest (a final reveal)
    # nests 4 deep, which the same gateway reads.
    gw.open("cy", 0.0)
    gw.receive_data("cy", hello_frame(), 0.0)
    four_deep = {"type": "ping", "id": 3, "x": [[[1]]]}
    gw.receive_data("cy", encode_frame(four_deep), 0.0)
    assert [f["type"] for f in frames(gw.data_to_send("cy"))][-1] == "pong"


def test_a_server_may_allow_shorter_names_and_chat_than_the_protocol() -> None:
    gw = limited_gateway(name_length=8, room_name_length=10, chat_length=20)
    gw.open("long", 0.0)
    gw.receive_data("long", hello_frame(name="Bartholomew"), 0.0)
    error = error_of(gw.data_to_send("long"))
    assert (error["code"], error["fatal"]) == ("invalid_field", True)
    assert error["message"].startswith("hello.name: at most 8 characters on this server, not 11")
    assert gw.must_close("long")
    ann = Peer(gw, "ann", name="Annabel")
    room = m.CreateRoom(settings=settings(3), name="The long table")
    refusal = ann.ask(room, expect=m.Error)
    assert refusal.code == "invalid_field"
    assert refusal.message.startswith("create_room.name: at most 10 characters on this server")
    ann.ask(m.Chat(text="x" * 21), expect=m.Error)
    ann.ask(m.Chat(text="x" * 20))
    ann.ask(m.CreateRoom(settings=settings(3)))  # a made-up room name fits the limit
    rooms = list(gw.lobby.rooms.values())
    assert [len(r.name) for r in rooms] == [10]


def test_chat_lines_and_window_are_the_server_s() -> None:
    gw = limited_gateway(chat_lines=2, chat_window=5.0)
    ann = Peer(gw, "ann")
    ann.ask(m.Chat(text="one"))
    ann.ask(m.Chat(text="two"))
    refusal = ann.ask(m.Chat(text="three"), expect=m.Error)
    assert refusal.code == "rate_limited"
    assert refusal.message.startswith("chat: at most 2 lines in 5 seconds")
    ann.ask(m.Chat(text="later"), 5.0)


# ------------------------------------------------------------ the server's log


def test_what_happens_in_a_room_is_told_to_the_log_and_no_token_with_it() -> None:
    from oriflamme.server.core import GameOver, LogLine, StartBot

    gw = gateway(idle_timeout=120)
    ann, bob = Peer(gw, "a", "Ann"), Peer(gw, "b", "Bob")
    ann.ask(m.CreateRoom(settings=settings(3), name="friday"))
    bob.ask(m.JoinRoom(room=1))
    ann.ask(m.AddBot(strategy="random"))
    bob.ask(m.LeaveRoom())
    bob.ask(m.JoinRoom(room=1))
    ann.ask(m.Ready(ready=True))
    bob.ask(m.Ready(ready=True))
    ann.ask(m.StartGame())
    # Nobody commits to a seed (these peers do not play, the bot is not
    # connected): the game is cancelled when the seeding timer runs out.
    gw.tick(61.0)
    ann.ask(m.LeaveRoom(), 62.0)
    bob.ask(m.LeaveRoom(), 63.0)
    effects = gw.take_effects()
    logged = [e.text for e in effects if isinstance(e, LogLine)]
    assert logged[:2] == [
        f"connection a: player {ann.welcome.player} ('Ann'), a new session",
        f"connection b: player {bob.welcome.player} ('Bob'), a new session",
    ]
    lines = logged[2:]
    assert len(lines) == 12, "\n".join(lines)
    made, ann_sat, bob_sat, bot_sat, bob_left, bob_back, started, cancelled = lines[:8]
    assert made.startswith("room 1: made, 'friday', 3 seats")
    assert "'Ann'" in ann_sat and "seat 0" in ann_sat
    assert "'Bob'" in bob_sat and "seat 1" in bob_sat
    assert "random bot" in bot_sat and "seat 2" in bot_sat
    assert "left seat 1" in bob_left and "seat 1" in bob_back
    assert "started" in started
    assert cancelled.endswith(
        "cancelled before it began: a seat did not commit to its seed in time"
    )
    assert [x.split(": ", 1)[1] for x in lines[8:]] == [
        f"player {ann.welcome.player} ('Ann') left seat 0",
        f"player {bob.welcome.player} ('Bob') is the host now",
        f"player {bob.welcome.player} ('Bob') left seat 1",
        "closed: no player is left in it",
    ]
    (over,) = [e for e in effects if isinstance(e, GameOver)]
    assert over.bot_seats == (2,)  # the server forgets that bot's secrets
    tokens = [ann.welcome.token, bob.welcome.token]
    tokens += [e.token for e in effects if isinstance(e, StartBot)]
    for token in tokens:
        assert not any(token.hex() in line or repr(token) in line for line in logged)


def test_a_game_cancelled_because_a_player_left_says_so() -> None:
    from oriflamme.server.core import LogLine

    gw = gateway()
    ann, bob = Peer(gw, "a", "Ann"), Peer(gw, "b", "Bob")
    ann.ask(m.CreateRoom(settings=settings(2)))
    bob.ask(m.JoinRoom(room=1))
    ann.ask(m.Ready(ready=True))
    bob.ask(m.Ready(ready=True))
    ann.ask(m.StartGame())
    bob.read()
    ann.ask(m.LeaveRoom(), 1.0)  # before the seeds are in
    why = "Ann left before every seed was in"
    lines = [e.text for e in gw.take_effects() if isinstance(e, LogLine)]
    assert any(line.endswith(f"cancelled before it began: {why}") for line in lines), lines
    told = [x.text for x in bob.read() if isinstance(x, m.ChatMessage)]
    assert told == [f"The game was cancelled before it began: {why}."]

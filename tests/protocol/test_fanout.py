"""`SharedEncoding`: copies of one push encoded once, each frame byte for
byte the one `encode_frame` makes, and anything not a copy encoded on its
own."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oriflamme.client.bots import Bot
from oriflamme.launcher.inprocess import InProcess
from oriflamme.protocol import fanout
from oriflamme.protocol import messages as m
from oriflamme.protocol.codec import HEADER, decode_payload, encode_frame
from oriflamme.protocol.errors import FRAME_TOO_LARGE, LocalProtocolError
from oriflamme.protocol.fanout import SharedEncoding
from oriflamme.server.core import FixedEntropy
from tools.docgen.worked_example import fixed_secrets


def _game_states() -> list[m.GameState]:
    """The `game_state` pushes one seat got in a whole 3-player game (the same
    game at every run: a failure here can be run again)."""
    world = InProcess(
        seed=5,
        entropy=FixedEntropy("fanout"),
        make_secrets=fixed_secrets("fanout"),
        versions=(1,),  # (a `game_update` is the same for all but its seq: no viewer)
    )
    host = world.connect("host", bot=Bot("random", rng=random.Random(5)))
    settings = m.RoomSettings(players=3, variant="standard", edition="revised", first_player="host")
    host.send(m.CreateRoom(settings=settings))
    for _ in range(2):
        host.send(m.AddBot(strategy="random"))
    host.send(m.Ready(ready=True))
    host.send(m.StartGame())
    world.run(lambda: bool(world.records))
    return [x for x in host.received if isinstance(x, m.GameState)]


GAME_STATES = _game_states()


def _shared_fields(state: m.GameState) -> dict[str, Any]:
    return {s.name: getattr(state, s.name) for s in state.FIELDS if s.name not in ("seq", "view")}


def copies(state: m.GameState, seqs: list[int], viewers: list[int | None]) -> list[m.GameState]:
    """Copies of `state` as a table makes them for its seats: the same
    objects but for `seq` and the view's viewer."""
    fields = _shared_fields(state)
    return [
        m.GameState(seq=seq, view={**state.view, "viewer": viewer}, **fields)
        for seq, viewer in zip(seqs, viewers, strict=True)
    ]


def assert_encoded_alike(frame: bytes, message: m.Message) -> None:
    """`frame` is what `encode_frame` makes of `message` (and so decodes to it)."""
    assert frame == encode_frame(m.to_data(message))
    assert decode_payload(frame[HEADER.size :]) == m.to_data(message)


# Named by place, not number: the ids stay the same whatever the game's length
# (pytest-xdist wants the same ids in every worker, and a change to the bots
# or the deal would change the middle's index).
@pytest.mark.parametrize(
    "index",
    [0, 1, len(GAME_STATES) // 2, len(GAME_STATES) - 1],
    ids=["first", "second", "middle", "last"],
)
def test_every_copy_of_a_game_state_decodes_to_its_own_data(index: int) -> None:
    shared = SharedEncoding()
    pushes = copies(GAME_STATES[index], [1, 300, 70_000, 2**32 - 1], [0, 1, 2, None])
    for push in pushes:
        assert_encoded_alike(shared.frame(push), push)


@given(
    st.lists(
        st.tuples(st.integers(1, 2**32 - 1), st.none() | st.integers(0, 4)), min_size=1, max_size=8
    ),
    st.sampled_from(GAME_STATES),
)
def test_any_seqs_and_viewers(recipients: list[tuple[int, int | None]], state: m.GameState) -> None:
    seqs, viewers = [s for s, _ in recipients], [v for _, v in recipients]
    shared = SharedEncoding()
    for push in copies(state, seqs, viewers):
        assert_encoded_alike(shared.frame(push), push)


@given(
    st.text(min_size=1, max_size=500).map(lambda t: m.clean_text(t, 500)),
    st.integers(1, 10_000),
    st.lists(st.integers(1, 2**31), max_size=6),
)
def test_chat_lines_to_many(text: str, room: int, seqs: list[int]) -> None:
    shared = SharedEncoding()
    for seq in seqs:
        push = m.ChatMessage(seq=seq, room=room, name="Ann", text=text, player=4)
        assert_encoded_alike(shared.frame(push), push)


def test_copies_are_encoded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The point of it: the shared part is made by the first copy alone."""
    made: list[m.Message] = []
    real = fanout.to_data

    def to_data(message: m.Message) -> dict[str, Any]:
        made.append(message)
        return real(message)

    monkeypatch.setattr(fanout, "to_data", to_data)
    shared = SharedEncoding()
    pushes = copies(GAME_STATES[3], [5, 6, 7, 8], [0, 1, 2, None])
    for push in pushes:
        shared.frame(push)
    assert made == pushes[:1]


def _differs_in(state: m.GameState, name: str) -> m.GameState:
    fields = _shared_fields(state)
    view = {**state.view}
    if name == "events":
        fields["events"] = [*state.events, {"type": "round_started", "round": 9}]
    elif name == "view":
        view["round"] = 9
    elif name == "view key":
        view["extra"] = 1
    elif name == "game":
        fields["game"] = bytes(16)
    return m.GameState(seq=state.seq + 1, view=view, **fields)


@pytest.mark.parametrize("name", ["events", "view", "view key", "game"])
def test_a_message_that_is_not_a_copy_is_encoded_on_its_own(name: str) -> None:
    state = GAME_STATES[4]
    shared = SharedEncoding()
    shared.frame(state)
    other = _differs_in(state, name)
    assert_encoded_alike(shared.frame(other), other)


def test_other_kinds_and_replies_are_encoded_on_their_own() -> None:
    shared = SharedEncoding()
    shared.frame(GAME_STATES[0])
    chat = m.ChatMessage(seq=3, name="Bo", text="hi")
    pong = m.Pong(id=4)  # a reply: no seq
    assert_encoded_alike(shared.frame(chat), chat)
    assert_encoded_alike(shared.frame(pong), pong)


def test_a_chat_line_with_other_text_is_not_a_copy() -> None:
    shared = SharedEncoding()
    shared.frame(m.ChatMessage(seq=1, room=2, name="Ann", text="one"))
    other = m.ChatMessage(seq=2, room=2, name="Ann", text="two")
    assert_encoded_alike(shared.frame(other), other)


def test_a_frame_too_large_is_refused_as_encode_frame_refuses_it() -> None:
    state = GAME_STATES[-1]
    limit = len(encode_frame(m.to_data(state))) - 4 - 1
    shared = SharedEncoding()
    with pytest.raises(LocalProtocolError) as caught:
        shared.frame(state, limit)
    assert caught.value.code == FRAME_TOO_LARGE
    with pytest.raises(LocalProtocolError) as again:
        shared.frame(copies(state, [state.seq + 1], [1])[0], limit)
    assert again.value.code == FRAME_TOO_LARGE


def test_data_that_holds_a_marker_s_bytes_is_encoded_copy_by_copy() -> None:
    """A game id that happens to hold the bytes the first copy is cut at:
    no piece is cut, and every frame is still the right one."""
    state = GAME_STATES[2]
    for marked in fanout._MARKED:
        fields = {**_shared_fields(state), "game": (marked + bytes(16))[:16]}
        pushes = [
            m.GameState(seq=seq, view={**state.view, "viewer": seq % 3}, **fields)
            for seq in (4, 5, 6)
        ]
        shared = SharedEncoding()
        for push in pushes:
            assert_encoded_alike(shared.frame(push), push)
        assert shared._pieces is None

"""Helpers for the server's scenario tests (lobby, room, resume).

A scenario is an `InProcess` world: the server's core and real client
endpoints on a virtual clock, with fixed server randomness so that every
run is the same. The helpers send a request and return its answer after
every byte has moved (`ask`, `ok`), and check that a refused request
changes nothing (`refused`): its sender gets only the error, with the
request's id; nobody gets a push; the room (as `sync` shows it) and the
room list (as `list_rooms` shows it) are as they were.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from typing import Any, TypeVar

from oriflamme.client.bots import Behaviour, Bot, Seated
from oriflamme.client.endpoint import ClientEndpoint
from oriflamme.launcher.inprocess import Client, InProcess
from oriflamme.protocol import messages as m
from oriflamme.server.core import FixedEntropy, ServerConfig
from tools.docgen.worked_example import fixed_secrets

M = TypeVar("M", bound=m.Message)


def settings(
    players: int = 3,
    *,
    first_player: str = "host",
    turn_timer: int | None = None,
) -> m.RoomSettings:
    return m.RoomSettings.for_players(players, turn_timer=turn_timer, first_player=first_player)


def new_world(
    label: str = "scenario",
    *,
    seed: int = 0,
    versions: tuple[int, ...] = m.SUPPORTED_VERSIONS,
    **config: Any,
) -> InProcess:
    """A world that comes out the same on every run (the server's randomness,
    the bots' choices and the seats' secrets all come from `label` and
    `seed`), whose clients never idle out (the clock may jump far), and
    offer the protocol `versions` (`(1,)`: a test of version 1's pushes)."""
    options: dict[str, Any] = dict(idle_timeout=86400, reply_timer=30, grace=60)
    options.update(config)
    return InProcess(
        config=ServerConfig(**options),
        entropy=FixedEntropy(label),
        seed=seed,
        make_secrets=fixed_secrets(label),
        versions=versions,
    )


def player(world: InProcess, name: str, *, bot: str | None = None, seed: int = 0) -> Client:
    """A new client, welcomed. With `bot`, it plays its games by itself."""
    brain = None if bot is None else Bot(bot, rng=random.Random(seed))
    client = world.connect(name, bot=brain)
    world.settle()
    assert isinstance(client.received[0], m.Welcome), client.received
    return client


def resume(
    world: InProcess,
    client: Client,
    *,
    seq: int | None = None,
    token: bytes | None = None,
    behaviour: Behaviour | None = None,
) -> Client:
    """A new connection on `client`'s session (its token unless `token`), its
    state and secrets kept, resuming with `seq` (None: ask for a snapshot).
    The old connection is left as it is (see `InProcess.disconnect`)."""
    endpoint = ClientEndpoint(
        client.endpoint.name,
        token=token if token is not None else client.endpoint.token,
        seq=seq,
        state=client.state,
        versions=client.endpoint.versions,
    )
    again = world.connect(
        client.endpoint.name,
        behaviour=behaviour if behaviour is not None else client.behaviour,
        endpoint=endpoint,
    )
    world.settle()
    return again


def ask(world: InProcess, client: Client, message: m.Message) -> m.Message:
    """Send `message`, move every byte, return its answer."""
    request_id = client.send(message)
    world.settle()
    answer = client.answer(request_id)
    assert answer is not None, f"{message.TYPE} got no answer"
    assert getattr(answer, "id", None) == request_id
    return answer


def ok(world: InProcess, client: Client, message: m.Message) -> None:
    answer = ask(world, client, message)
    assert isinstance(answer, m.Ok), answer


def received(client: Client, kind: type[M]) -> list[M]:
    return [x for x in client.received if isinstance(x, kind)]


def last_room(client: Client) -> m.RoomState:
    """The last `room_state` `client` received (a `closed` one included)."""
    states = received(client, m.RoomState)
    assert states, f"{client.endpoint.name} got no room_state"
    return states[-1]


def pushes(client: Client) -> list[m.Message]:
    return [x for x in client.received if x.ROLE == "push"]


def seq_of(push: m.Message) -> int:
    """The `seq` of a push (every push kind has one; `Message` itself has none)."""
    seq = getattr(push, "seq", None)
    assert isinstance(seq, int), push
    return seq


def types(messages: list[m.Message]) -> list[str]:
    return [x.TYPE for x in messages]


def after(client: Client, mark: int) -> list[m.Message]:
    """What `client` received since `len(client.received)` was `mark`."""
    return client.received[mark:]


def unnumbered(state: m.RoomState) -> m.RoomState:
    """A `room_state` without its push number, to compare rooms."""
    return dataclasses.replace(state, seq=1)


def room_list(world: InProcess, observer: Client) -> tuple[m.RoomSummary, ...]:
    answer = ask(world, observer, m.ListRooms())
    assert isinstance(answer, m.RoomList), answer
    return answer.rooms


def synced_room(world: InProcess, client: Client) -> m.RoomState | None:
    """The room as the server shows it to `client` now (`sync`), or None in no room."""
    mark = len(client.received)
    answer = ask(world, client, m.Sync())
    if isinstance(answer, m.Error):
        assert answer.code == "wrong_state", answer
        return None
    states = [x for x in after(client, mark) if isinstance(x, m.RoomState)]
    assert states, "sync sent no room_state"
    return unnumbered(states[0])


def refused(
    world: InProcess,
    client: Client,
    message: m.Message,
    code: str,
    *,
    observer: Client | None = None,
) -> m.Error:
    """`message` from `client` is refused with `code`, carrying its id, and
    changes nothing: no push to anyone, the same room and room list."""
    room_before = synced_room(world, client)
    list_before = None if observer is None else room_list(world, observer)
    marks = {c.conn: len(c.received) for c in world.clients.values()}
    request_id = client.send(message)
    world.settle()
    answer = client.answer(request_id)
    assert isinstance(answer, m.Error), answer
    assert (answer.code, answer.id, answer.fatal) == (code, request_id, False), answer
    for other in world.clients.values():
        new = after(other, marks.get(other.conn, 0))
        assert new == ([answer] if other is client else []), (other.endpoint.name, new)
    assert synced_room(world, client) == room_before
    if observer is not None:
        assert room_list(world, observer) == list_before
    return answer


def until_received(world: InProcess, client: Client, kind: type[m.Message]) -> None:
    """Run the world until `client` has received a `kind`."""
    world.run(lambda: any(isinstance(x, kind) for x in client.received))


def game_round(client: Client) -> int:
    game = client.state.game
    state = None if game is None else game.state
    return 0 if state is None else int(state.view["round"])


def hidden_cards_shown(message: m.Message) -> list[str]:
    """Where `message` shows the identity of a card nobody may see yet: a card
    face down in the queue, in a hand, set aside, in a draw pile, or a card
    placed or drawn (the server knows none of them)."""
    data = m.to_data(message)
    found = []
    view = data.get("view")
    if isinstance(view, dict):
        for slot in view["queue"]:
            for c in slot:
                if not c["face_up"] and c["card"][1] is not None:
                    found.append(f"queue card {c['pid']}")
        for key in ("hands", "set_aside", "draw_piles"):
            for seat, cards in enumerate(view[key]):
                if any(card[1] is not None for card in cards):
                    found.append(f"{key} of seat {seat}")
    for event in data.get("events", []):
        if event["type"] == "placed" and event["card"][1] is not None:
            found.append(f"placed card {event['pid']}")
        if event["type"] == "drew" and any(c[1] is not None for c in event["cards"]):
            found.append(f"cards drawn by seat {event['seat']}")
    return found


class Filtered(Behaviour):
    """Plays with its bot, but never sends the messages `drop` picks."""

    def __init__(self, bot: Bot | None, drop: Callable[[m.Message], bool]) -> None:
        super().__init__(bot)
        self.drop = drop

    def messages(self, client: Seated) -> list[m.Message]:
        return [x for x in super().messages(client) if not self.drop(x)]


def table(
    world: InProcess,
    players: int = 3,
    *,
    behaviours: dict[int, Behaviour] | None = None,
    turn_timer: int | None = None,
    seed: int = 0,
) -> list[Client]:
    """`players` clients seated in a new room (seat i plays with
    `behaviours[i]`, a random bot otherwise), everyone ready, and seat 0's
    `start_game` sent: nothing has moved yet (`world.run` plays on)."""
    behaviours = behaviours or {}
    rng = random.Random(seed)
    clients = []
    for i in range(players):
        behaviour = behaviours.get(i) or Behaviour(Bot("random", rng=random.Random(rng.random())))
        clients.append(world.connect(f"p{i}", behaviour=behaviour))
    world.settle()
    ok(world, clients[0], m.CreateRoom(settings=settings(players, turn_timer=turn_timer)))
    room = last_room(clients[0]).room
    for c in clients[1:]:
        ok(world, c, m.JoinRoom(room=room))
    for c in clients:
        ok(world, c, m.Ready(ready=True))
    clients[0].send(m.StartGame())
    return clients

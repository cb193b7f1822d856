"""A server and its clients in one process: no sockets, no threads, a virtual clock.

How this works
--------------
`InProcess` runs the server's core (`oriflamme.server.core.Gateway`) and
any number of `ClientEndpoint`s, and carries the bytes between them, as the
network would. Time is virtual: when nobody has anything to say, the clock
jumps to the server's next deadline, so a turn timer of a minute costs
nothing. Server bots (`add_bot`) are started as the server asks, as clients
like any other that resume the session the server made for them.

A client may be given a `Bot`: it then plays by itself (its seed
commitment, its decisions, its openings and its final reveal). Tests give
some clients a `Behaviour` of their own to play a slow, absent or dishonest
seat.

This is how `oriflamme selfplay --record` plays a game the way the server
referees it, how the documentation's worked example and sample records are
made, and how the tests play complete games without sockets.

>>> from oriflamme.protocol import messages as m
>>> world = InProcess()
>>> ann = world.connect("Ann", bot=Bot("random"))
>>> world.run(lambda: ann.state.player is not None)
>>> settings = m.RoomSettings(players=3, variant="standard", edition="revised",
...                           first_player="host")
>>> for request in (m.CreateRoom(settings=settings), m.AddBot(strategy="heuristic"),
...                 m.AddBot(strategy="random"), m.Ready(ready=True), m.StartGame()):
...     _ = ann.send(request)
>>> world.run(lambda: bool(world.records))
>>> from oriflamme.protocol.verify import verify_record
>>> verify_record(world.records[0].record).ok
True
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Hashable, Sequence

from oriflamme.client.bots import Behaviour, Bot
from oriflamme.client.endpoint import ClientEndpoint
from oriflamme.client.seat_secrets import SeatSecrets
from oriflamme.client.state import ClientState
from oriflamme.engine import Rules
from oriflamme.protocol import messages as m
from oriflamme.protocol.record import encode_record
from oriflamme.server.core import (
    Effect,
    Entropy,
    Fault,
    FetchRecord,
    GameFinished,
    Gateway,
    HandedSeat,
    Lobby,
    ServerConfig,
    StartBot,
    StopBot,
)


class Stalled(RuntimeError):
    """Nothing can happen any more, and what was waited for did not."""


class Client:
    """One client of an `InProcess` world."""

    def __init__(
        self,
        world: InProcess,
        conn: Hashable,
        endpoint: ClientEndpoint,
        behaviour: Behaviour | None,
    ) -> None:
        self.world = world
        self.conn = conn
        self.endpoint = endpoint
        self.behaviour = behaviour
        self.received: list[m.Message] = []
        self.answered: tuple[bytes, int] | None = None  # (game id, turn)
        self.last_sent = world.now
        self.handed: HandedSeat | None = None
        self.bot_player: int | None = None
        self._outbox = bytearray()

    @property
    def state(self) -> ClientState:
        return self.endpoint.state

    @property
    def connected(self) -> bool:
        return self.conn in self.world.clients

    def send(self, message: m.Message) -> int:
        """Send a request now; its request id (see `answer`)."""
        self._outbox += self.endpoint.request(message)
        self.world._flush(self)
        return self.endpoint.last_id()

    def answer(self, request_id: int) -> m.Message | None:
        return self.endpoint.answers.get(request_id)

    def errors(self) -> list[m.Error]:
        return [a for a in self.endpoint.answers.values() if isinstance(a, m.Error)]

    def _receive(self, data: bytes) -> None:
        self.received.extend(self.endpoint.receive_data(data))
        self._outbox += self.endpoint.take_outgoing()  # (a prove, to a challenge)
        if self.handed is not None:
            self._adopt_handed()
        if self.behaviour is not None:
            for message in self.behaviour.messages(self):
                self._outbox += self.endpoint.request(message)

    def _adopt_handed(self) -> None:
        game = self.state.game
        if game is None or game.seat is None or game.server_seed is None:
            return
        handed = self.handed
        assert handed is not None
        self.handed = None
        self.state.adopt_secrets(
            SeatSecrets.resume(
                game.rules,
                game.game_id,
                game.seat,
                seed=handed.seed,
                server_seed=handed.server_seed,
                openings=handed.openings,
                drawn=handed.drawn,
            )
        )


class InProcess:
    """A server core and its clients; see the module docstring."""

    def __init__(
        self,
        *,
        config: ServerConfig | None = None,
        entropy: Entropy | None = None,
        seed: int | None = None,
        make_secrets: Callable[[Rules, bytes, int], SeatSecrets] | None = None,
        lobby: Lobby | None = None,
        versions: tuple[int, ...] = m.SUPPORTED_VERSIONS,
    ) -> None:
        config = config if config is not None else ServerConfig(idle_timeout=86400)
        self._make_secrets = make_secrets
        self.versions = versions  # the protocol versions its clients offer
        self.gateway = Gateway(lobby if lobby is not None else Lobby(config, entropy))
        self.now = 0.0
        self.clients: dict[Hashable, Client] = {}
        self.records: list[GameFinished] = []
        self.bots: dict[int, Client] = {}
        self.faults: list[str] = []
        self._rng = random.Random(seed)
        self._conns = itertools.count(1)
        # The server bots' secrets, as a server keeps them on its disk: a bot
        # started again after a restart finds its own.
        self._kept_secrets: dict[tuple[bytes, int], SeatSecrets] = {}

    def _bot_secrets(self, rules: Rules, game_id: bytes, seat: int) -> SeatSecrets:
        kept = self._kept_secrets.get((game_id, seat))
        if kept is None:
            make = self._make_secrets or (lambda r, g, s: SeatSecrets(r, g, s))
            kept = self._kept_secrets[(game_id, seat)] = make(rules, game_id, seat)
        return kept

    def connect(
        self,
        name: str,
        *,
        bot: Bot | None = None,
        behaviour: Behaviour | None = None,
        token: bytes | None = None,
        seq: int | None = None,
        endpoint: ClientEndpoint | None = None,
        address: str | None = None,
    ) -> Client:
        """A new client connection (from `address`: None, not counted); it
        says hello at once."""
        conn = f"conn-{next(self._conns)}"
        if endpoint is None:
            endpoint = ClientEndpoint(
                name, token=token, seq=seq, make_secrets=self._make_secrets, versions=self.versions
            )
        if behaviour is None and bot is not None:
            behaviour = Behaviour(bot)
        client = Client(self, conn, endpoint, behaviour)
        self.clients[conn] = client
        self.gateway.open(conn, self.now, address=address)
        client._outbox += endpoint.hello()
        self._flush(client)
        return client

    def start_table(
        self,
        clients: Sequence[Client],
        settings: m.RoomSettings,
        *,
        name: str | None = None,
        private: bool = False,
        bots: int = 0,
    ) -> None:
        """A game at one table: the first of `clients` makes a room and hosts
        it (`private`: joined by its invite code), the others join it, the
        host adds `bots` random server bots, everyone says ready, and the
        host starts the game (once the handshakes are done: a client with a
        key sends nothing before its proof)."""
        self.settle()
        host = clients[0]
        host.send(m.CreateRoom(settings=settings, name=name, private=True if private else None))
        self.settle()
        room = host.state.room
        if room is None:
            raise Stalled(f"{host.endpoint.name}'s room was not made: {host.errors()}")
        for client in clients[1:]:
            client.send(m.JoinRoom(invite=room.invite) if private else m.JoinRoom(room=room.room))
        for _ in range(bots):
            host.send(m.AddBot(strategy="random"))
        for client in clients:
            client.send(m.Ready(ready=True))
        self.settle()
        host.send(m.StartGame())

    def disconnect(self, client: Client) -> None:
        """`client`'s connection drops (the client may `reconnect`)."""
        if self.clients.pop(client.conn, None) is not None:
            self.gateway.closed(client.conn, self.now)
            self._effects()

    def restart(self, lobby: Lobby, replayed: list[Effect], restarted: list[Effect]) -> None:
        """The server starts again with `lobby`, rebuilt from its journal
        (`replayed`: the effects the replay made; `restarted`: what
        `Lobby.restarted` gave): every connection is lost, every client
        connects again, and the server's bots are started anew."""
        old = [c for c in self.clients.values() if c.bot_player is None]
        self.clients.clear()
        self.bots.clear()
        self.gateway = Gateway(lobby)
        for effect in replayed:
            if isinstance(effect, GameFinished) and effect not in self.records:
                self.records.append(effect)
        for effect in restarted:
            if isinstance(effect, StartBot):
                self._start_bot(effect)
        for client in old:
            self.clients[client.conn] = client  # so that `reconnect` drops it first
            self.reconnect(client)

    def reconnect(self, client: Client) -> Client:
        """A new connection for `client`'s session (its token and last seq)."""
        self.disconnect(client)
        endpoint = ClientEndpoint(
            client.endpoint.name,
            token=client.endpoint.token,
            seq=client.endpoint.seq,
            state=client.state,
            key=client.endpoint.key,
            versions=client.endpoint.versions,
        )
        again = self.connect(client.endpoint.name, behaviour=client.behaviour, endpoint=endpoint)
        again.answered = None
        return again

    def _flush(self, client: Client) -> None:
        if client._outbox and client.conn in self.clients:
            data = bytes(client._outbox)
            client._outbox.clear()
            client.last_sent = self.now
            self.gateway.receive_data(client.conn, data, self.now)

    def _tick(self, now: float) -> None:
        """The clock moves to `now`: every client that has been quiet for half
        the idle timeout pings first, as a real client does."""
        half = self.gateway.idle_timeout / 2
        for client in list(self.clients.values()):
            if client.endpoint.welcome is not None and now - client.last_sent >= half:
                client.send(m.Ping())
        self.now = max(self.now, now)
        self.gateway.tick(self.now)

    def step(self) -> bool:
        """Carry every pending byte once; True if anything moved."""
        moved = False
        for conn, client in list(self.clients.items()):
            data = self.gateway.data_to_send(conn)
            if data:
                moved = True
                client._receive(data)
            if self.gateway.must_close(conn):
                self.clients.pop(conn, None)
                self.gateway.closed(conn, self.now)
                client.endpoint.receive_data(b"")
                moved = True
        for client in list(self.clients.values()):
            if client._outbox:
                moved = True
                self._flush(client)
        return self._effects() or moved

    def _effects(self) -> bool:
        effects = self.gateway.take_effects()
        for effect in effects:
            if isinstance(effect, GameFinished):
                self.records.append(effect)
            elif isinstance(effect, StartBot):
                self._start_bot(effect)
            elif isinstance(effect, StopBot):
                stopped = self.bots.pop(effect.player, None)
                if stopped is not None:
                    self.disconnect(stopped)
            elif isinstance(effect, FetchRecord):
                kept = [f.record for f in self.records if f.record_id == effect.record_id]
                data = encode_record(kept[0]) if kept else None
                self.gateway.record_loaded(
                    effect.conn, effect.request_id, effect.record_id, data, self.now
                )
            elif isinstance(effect, Fault):
                self.faults.append(effect.what)
        return bool(effects)

    def _start_bot(self, effect: StartBot) -> None:
        endpoint = ClientEndpoint(
            f"bot {effect.player}",
            token=effect.token,
            make_secrets=self._bot_secrets,
            versions=self.versions,
        )
        bot = self.connect(
            f"bot {effect.player}",
            bot=Bot(effect.strategy, rng=random.Random(self._rng.random())),
            endpoint=endpoint,
        )
        bot.handed = effect.handed
        bot.bot_player = effect.player
        self.bots[effect.player] = bot

    def advance(self, seconds: float) -> None:
        """Let `seconds` of virtual time pass (the server's timers fire)."""
        target = self.now + seconds
        while True:
            deadline = self.gateway.next_deadline()
            if deadline is None or deadline > target:
                break
            self._tick(deadline)
            self.settle()
        self._tick(target)
        self.settle()

    def settle(self) -> None:
        """Carry bytes until nothing moves (no time passes)."""
        for _ in range(1_000_000):
            if not self.step():
                return
        raise Stalled("the clients and the server talk without end")

    def run(self, until: Callable[[], bool], *, max_seconds: float = 1e7) -> None:
        """Carry bytes, and let time pass when nothing moves, until `until()`
        (checked after every exchange, so a run can stop in mid-game)."""
        start = self.now
        for _ in range(10_000_000):
            if until():
                return
            if self.step():
                continue
            deadline = self.gateway.next_deadline()
            if deadline is None or deadline - start > max_seconds:
                raise Stalled(f"nothing more happens, after {self.now - start:g} s")
            self._tick(deadline)
        raise Stalled("the clients and the server talk without end")


def play_recorded_game(
    players: int = 3,
    *,
    variant: str | None = None,
    edition: str = "revised",
    strategies: list[str] | None = None,
    seed: int | None = None,
    entropy: Entropy | None = None,
) -> bytes:
    """One whole game through the server's core, as over the network, and its
    encoded record. Seat 0 is a client that creates the room and plays with
    the first strategy; the other seats are server bots, seat `i` playing
    the `i`-th strategy of the list, in turn. `seed` makes the bots'
    choices reproducible; the server's randomness comes from the OS unless
    `entropy` says otherwise, and the seats' seeds and nonces always do.

    >>> from oriflamme.protocol.verify import verify_record_bytes
    >>> verify_record_bytes(play_recorded_game(2, seed=5)).ok
    True
    """
    strategies = strategies or ["random"]
    variant = variant or ("two-player" if players == 2 else "standard")
    world = InProcess(seed=seed, entropy=entropy)
    rng = random.Random(seed)
    host = world.connect("seat 0", bot=Bot(strategies[0], rng=random.Random(rng.random())))
    settings = m.RoomSettings(
        players=players, variant=variant, edition=edition, first_player="host"
    )
    host.send(m.CreateRoom(settings=settings, name="selfplay"))
    for seat in range(1, players):
        host.send(m.AddBot(strategy=strategies[seat % len(strategies)], seat=seat))
    host.send(m.Ready(ready=True))
    host.send(m.StartGame())
    world.run(lambda: bool(world.records))
    errors = host.errors()
    if errors:
        raise RuntimeError(f"the server refused the game: {errors[0].message}")
    return encode_record(world.records[0].record)

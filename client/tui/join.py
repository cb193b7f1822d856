"""`oriflamme join`: the lobby and the game of a server elsewhere.

With a host, the program connects to it; without one, `choose_server`
lists the servers whose beacon is heard on the local network (see
`oriflamme.client.discovery`) and asks which. Then the terminal shows the
lobby (`client.tui.lobby`): the room list is asked for again every few
seconds while it is shown; a room's state and chat come with the server's
pushes. The seat's secrets and the session token are kept in the state
directory, so a client closed mid-game and started again takes its seat
back.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

import trio
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from oriflamme.protocol import messages as m

from ..bots import Behaviour
from ..i18n import _
from ..identity import ServerKeys
from ..secret_store import SecretStore
from ..session import Backoff, ConnectionLost, RequestRefused, Session, SessionEnded
from ..tls import ADD_TLS, Trust, connector, speaks_tls
from .app import Bridge
from .driver import banner, drive, records_dir

CONNECT_TIMEOUT = 10.0
ROOMS_EVERY = 3.0


class CannotReach(Exception):
    """The server did not answer."""


@dataclass
class JoinOptions:
    host: str
    port: int
    name: str
    state_dir: Path
    found: bool = False  # found on the local network (said in the title)
    trust: Trust | None = None  # TLS
    # The player's key (None: anonymous) and the server keys pinned.
    key: Ed25519PrivateKey | None = None
    server_keys: ServerKeys | None = None
    # The name was given (`--name`): if the key holds another on the server,
    # it takes this one (`rename`).
    rename: bool = False
    # How to name this server and its options again (`again`): the address
    # as typed (or as found on the network), then the options that matter
    # to come back (state directory, TLS); and how the person ran the
    # program (`cli.invoked_as`).
    typed: tuple[str, ...] = ()
    program: tuple[str, ...] = field(default=("oriflamme",))

    def again(self) -> str:
        """The command that brings the player back to their seat (said when
        they quit mid-game): the same server, as they named it, and the same
        state directory (where the session is kept)."""
        return shlex.join([*self.program, "join", *(self.typed or (f"{self.host}:{self.port}",))])


async def join_program(bridge: Bridge, options: JoinOptions) -> None:
    """The trio side of `oriflamme join` (see the module docstring)."""
    commands = bridge.enter_trio()
    where = f"{options.host}:{options.port}"
    session = Session(
        connector(options.host, options.port, options.trust),
        options.name,
        server=where,
        store=SecretStore(options.state_dir),
        behaviour=Behaviour(None),
        backoff=Backoff(first=0.25, most=5.0),
        key=options.key,
        server_keys=options.server_keys,
    )
    screens = bridge.controller
    screens.state = session.state
    screens.lobby.server = where + (" " + _("(found on your network)") if options.found else "")
    session.on_change = lambda: bridge.changed(banner=banner(session))
    screens.banner = _("Connecting to {server}…").format(server=where)
    async with trio.open_nursery() as nursery:
        try:
            with trio.fail_after(CONNECT_TIMEOUT):
                await nursery.start(session.run)
        except trio.TooSlowError:
            said = _(
                "cannot reach {server}: no answer in {seconds} s"
                " (is the server running, and is the address right?)"
            )
            raise CannotReach(said.format(server=where, seconds=f"{CONNECT_TIMEOUT:.0f}")) from None
        except SessionEnded as exc:
            if options.trust is None and speaks_tls(exc):
                raise CannotReach(where + ": " + _(ADD_TLS)) from None
            raise
        screens.lobby.name = session.name  # (the name our key holds here, if it has one)
        if options.rename and session.name != options.name:
            await _take_name(session, options.name, bridge)
        nursery.start_soon(_keep_rooms, session, bridge)
        await drive(session, bridge, commands, records_dir(options.state_dir))
        session.close()
        nursery.cancel_scope.cancel()


async def _take_name(session: Session, name: str, bridge: Bridge) -> None:
    """Our key holds another name here than the one given: take this one
    (it may be another player's: then say so, and keep the one we have)."""
    held = session.name
    try:
        await session.request(m.Rename(name=name))
    except RequestRefused as refused:
        said = _("You are {held} here: {name} is not free ({code})")
        bridge.controller.lobby.status = said.format(held=held, name=name, code=refused.error.code)
        return
    session.name = name
    bridge.controller.lobby.name = name


async def _keep_rooms(session: Session, bridge: Bridge) -> None:
    """The room list, asked for again every few seconds while it is shown;
    and our games, while we keep seats in some (one no longer listed is
    over: `driver` saves its record)."""
    screens = bridge.controller
    while True:
        lobby = screens.lobby
        asked: list[m.Message] = []
        if screens.in_lobby and session.connected and lobby.form is None and lobby.records is None:
            asked.append(m.ListRooms())
        if screens.in_lobby and session.connected and session.state.kept:
            asked.append(m.ListGames())
        for request in asked:
            try:
                answer = await session.request(request, timeout=10)
            except (RequestRefused, ConnectionLost, trio.TooSlowError):
                continue
            screens.answered(request, answer)
            bridge.changed()
        await trio.sleep(ROOMS_EVERY)

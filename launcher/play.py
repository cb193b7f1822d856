"""`oriflamme play`: a game against bots at once, with a server inside the program.

The program starts a server in this process (`oriflamme.server.app.serve`
on 127.0.0.1, a free port, its data in the user's state directory, its bots
the launcher's `house_bots`), seats the player at a new table with N server
bots, and starts the game; the terminal shows it. Everything goes through
the protocol over a real socket, as with a server elsewhere: the player's
seed, hand and face-down cards are kept by this client alone (in the state
directory, mode 0600), and the bots hold their own.

The server's data directory outlives the program: quit in the middle of a
game and run `oriflamme play` again, and the same table comes back where
it was (the session token is kept for the server named ``play``). Asked
for another table (`--bots`, `--level`) while a game is kept, the player
is asked first: resume the kept game, or abandon it for the new one.

What every game screen's program shares (carrying out the keys' commands,
keeping each game's record) is in `driver`: `oriflamme join` uses it too.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

import trio

from oriflamme.client.bots import Behaviour
from oriflamme.client.i18n import N_, _, lookup
from oriflamme.client.secret_store import SecretStore, default_state_dir
from oriflamme.client.session import Backoff, Session, tcp
from oriflamme.client.state import ClientState
from oriflamme.client.tui.app import Bridge
from oriflamme.client.tui.controller import Chose, Command, Question, Quit
from oriflamme.client.tui.driver import banner, drive, ready_and_start, records_dir
from oriflamme.protocol import messages as m

LEVELS = {"easy": "random", "normal": "heuristic", "hard": "ismcts"}
LEVEL_NAMES = {"easy": N_("easy"), "normal": N_("normal"), "hard": N_("hard")}
SERVER_KEY = "play"


@dataclass
class PlayOptions:
    bots: int = 2
    name: str = "You"
    level: str = "normal"
    turn_timer: int | None = None
    state_dir: Path = field(default_factory=default_state_dir)
    # How the person ran the program (`cli.invoked_as`): the command said
    # when they quit must work from where they are.
    program: tuple[str, ...] = ("oriflamme",)

    def again(self) -> str:
        """The command that brings this table back (said when the player
        quits mid-game): the state directory is where the table is kept."""
        command = [*self.program, "play"]
        # (the table asked for: a different one would ask first)
        if self.bots != PlayOptions.bots:
            command += ["--bots", str(self.bots)]
        if self.level != PlayOptions.level:
            command += ["--level", self.level]
        if self.state_dir != default_state_dir():
            command += ["--state-dir", str(self.state_dir)]
        return shlex.join(command)


async def play_program(bridge: Bridge, options: PlayOptions) -> None:
    """The trio side of `oriflamme play` (see the module docstring)."""
    from oriflamme.launcher.house_bots import HouseBots
    from oriflamme.server.app import ServeOptions, serve

    commands = bridge.enter_trio()
    stop = trio.Event()
    server_options = ServeOptions(
        host="127.0.0.1",
        port=0,
        data_dir=options.state_dir / "play-server",
        stop=stop,
        shutdown_grace=2.0,
    )
    async with trio.open_nursery() as nursery:
        bots = HouseBots.of_data_dir(server_options.data_dir)
        port = await nursery.start(serve, server_options, bots)
        session = Session(
            tcp("127.0.0.1", port),
            options.name,
            server=SERVER_KEY,
            store=SecretStore(options.state_dir),
            behaviour=Behaviour(None),
            backoff=Backoff(first=0.1, most=2.0),
        )
        bridge.controller.state = session.state
        session.on_change = lambda: bridge.changed(banner=banner(session))
        bridge.controller.game.title = _("Oriflamme · you against bots")
        await nursery.start(session.run)
        if await seat_at_table(session, options, bridge, commands):
            await drive(session, bridge, commands, records_dir(options.state_dir), start=True)
        session.close()
        stop.set()


async def seat_at_table(
    session: Session,
    options: PlayOptions,
    bridge: Bridge,
    commands: trio.MemoryReceiveChannel[Command],
) -> bool:
    """Sit at a table of 1 + `options.bots` seats with server bots, and start
    the game; False if the player quit instead. A table kept from the last
    run is taken back as it is; if its game is not the one asked for (other
    players, other bots), the player is asked first: resume it, or abandon
    it (the seat forfeits) for a new one."""
    state = session.state
    room = state.room
    players = options.bots + 1
    if room is not None and room.state == "playing":
        kept = kept_game(state)
        if kept is None or kept == (players, LEVELS.get(options.level, options.level)):
            return True
        answer = await ask(bridge, commands, _resume_or_new(state, options, kept))
        if answer != "new":
            return answer == "resume"
        bridge.controller.game.log.note(_("── You abandoned that game: your seat forfeits it"))
    elif room is not None and len(room.seats) == players:
        await ready_and_start(session)
        return True
    if room is not None:
        await session.request(m.LeaveRoom())
    settings = m.RoomSettings.for_players(
        players, turn_timer=options.turn_timer, first_player="random"
    )
    await session.request(
        m.CreateRoom(
            settings=settings,
            name=f"{options.name}'s table"[:40],
        )
    )
    strategy = LEVELS.get(options.level, options.level)
    for __ in range(options.bots):
        await session.request(m.AddBot(strategy=strategy))
    await ready_and_start(session)
    return True


def kept_game(state: ClientState) -> tuple[int, str | None] | None:
    """The game under way at our table: its players and its bots' strategy
    (None: bots of several kinds, or none), or None when there is none."""
    room = state.room
    if room is None or room.state != "playing":
        return None
    bots = {s.bot for s in room.seats if s.bot is not None and s.bot != "stand_in"}
    return len(room.seats), (bots.pop() if len(bots) == 1 else None)


def _resume_or_new(
    state: ClientState, options: PlayOptions, kept: tuple[int, str | None]
) -> Question:
    game = state.game
    view = game.table() if game is not None else None
    level = {strategy: level for level, strategy in LEVELS.items()}.get(kept[1] or "", "")
    kept_game = [_("{count} players").format(count=kept[0])]
    if view is not None:
        kept_game.insert(0, _("round {round}").format(round=view.round))
    if level:
        kept_game.append(_("{level} bots").format(level=lookup(LEVEL_NAMES, level, level)))
    asked = [
        _("{count} players").format(count=options.bots + 1),
        _("{level} bots").format(level=lookup(LEVEL_NAMES, options.level, options.level)),
    ]
    said = _(
        "Resume your game ({kept}) or abandon it (your seat forfeits it)"
        " and start this one ({asked})?"
    )
    return Question(
        _("Your last game is not over"),
        said.format(kept=", ".join(kept_game), asked=", ".join(asked)),
        {"r": ("resume", _("resume it")), "n": ("new", _("abandon it, start a new game"))},
    )


async def ask(
    bridge: Bridge, commands: trio.MemoryReceiveChannel[Command], question: Question
) -> str | None:
    """Ask the player `question` on the game screen; the answer, or None
    if they quit instead."""
    controller = bridge.controller.game
    controller.question = question
    bridge.changed()
    try:
        async for command in commands:
            if isinstance(command, Chose):
                return command.answer
            if isinstance(command, Quit):
                return None
        return None
    finally:
        controller.question = None
        bridge.changed()

"""The house bots: the server's own bots, as `oriflamme serve` and `oriflamme play` run them.

A room asks the server for a bot (`add_bot`, or a player's `hand_over`);
the server's shell asks its `BotHost` to play it (`oriflamme.server.bot_host`).
`HouseBots` is that host: each bot is a client like any other (a `Session`
with a `Bot` behind it), connected to the server over an in-memory stream
the server serves, so it speaks the protocol and sees only its seat.

A bot's seat secrets are written to `secrets` (a `SecretStore`: the server's
data directory's ``bots`` folder) before anything that binds them is sent,
so a bot started again after a restart finds its own and can still open
its cards; without a store (tests) they live in memory alone. The secrets
of a game over are deleted (`game_over`). A seat handed over to a bot in
mid-game is played with the secrets its player handed with it.

While the server serves, searching bots think in worker processes
(`serving`: `oriflamme.client.thinking.search_processes`).
"""

from __future__ import annotations

import logging
import random
from contextlib import AbstractAsyncContextManager
from functools import partial
from pathlib import Path

import trio

from oriflamme.client.bots import Behaviour, Bot
from oriflamme.client.seat_secrets import SeatSecrets
from oriflamme.client.secret_store import SecretStore
from oriflamme.client.session import Backoff, Session
from oriflamme.client.thinking import search_processes
from oriflamme.engine import Rules
from oriflamme.server.bot_host import Connect
from oriflamme.server.core import GameOver, HandedSeat, StartBot

# (the server's log: these are its bots)
log = logging.getLogger("oriflamme.server")

SECRETS_FOLDER = "bots"  # in the server's data directory


class HouseBots:
    """The server's bots, played in its process (an `oriflamme.server.bot_host.BotHost`)."""

    def __init__(self, secrets: SecretStore | None = None) -> None:
        self.secrets = secrets

    @classmethod
    def of_data_dir(cls, data_dir: Path) -> HouseBots:
        """The bots of the server whose data directory is `data_dir`: their
        secrets in its ``bots`` folder (made at the first secret kept)."""
        return cls(SecretStore(data_dir / SECRETS_FOLDER))

    async def play(self, bot: StartBot, connect: Connect) -> None:
        """Play `bot`'s seat over the connections `connect` opens (again
        after a lost one), until cancelled; a failure is logged."""
        session = Session(
            connect,
            f"bot {bot.player}",
            token=bot.token,
            behaviour=Behaviour(Bot(bot.strategy, rng=random.Random())),
            make_secrets=partial(self.seat_secrets, handed=bot.handed),
            store=self.secrets,  # what it commits to is on disk before it is sent
            backoff=Backoff(first=0.5, attempts=None),
        )
        try:
            await session.run()
        except Exception as exc:  # a bot's failure must not take the server down
            log.exception("bot %d stopped: %s", bot.player, exc)

    async def game_over(self, over: GameOver) -> None:
        """The game is over: its bots' secrets are of no more use."""
        store = self.secrets
        if store is None:
            return
        for seat in over.bot_seats:
            await trio.to_thread.run_sync(store.forget, over.game_id, seat)

    def serving(self) -> AbstractAsyncContextManager[None]:
        """While the server serves: searching bots think in worker processes."""
        return search_processes()

    def seat_secrets(
        self, rules: Rules, game_id: bytes, seat: int, *, handed: HandedSeat | None
    ) -> SeatSecrets:
        """A bot's secrets for a seat: kept on disk (a bot started again after
        a restart finds its own), or a handed-over seat's for the game it was
        handed in, or new (the room's next games: the bot stays seated)."""
        store = self.secrets
        kept = None if store is None else store.load(game_id, seat)
        if kept is not None:
            return kept
        secrets = handed_secrets(rules, game_id, seat, handed=handed)
        if store is not None:
            store.save(secrets)
        return secrets


def handed_secrets(
    rules: Rules, game_id: bytes, seat: int, *, handed: HandedSeat | None
) -> SeatSecrets:
    """New secrets for `seat` of game `game_id`: those of the seat handed over
    to a bot, rebuilt from what it handed, if it was handed in that game;
    else secrets of the bot's own (what a player handed is of no other game)."""
    if handed is None or handed.game != game_id:
        return SeatSecrets(rules, game_id, seat)
    return SeatSecrets.resume(
        rules,
        game_id,
        seat,
        seed=handed.seed,
        server_seed=handed.server_seed,
        openings=handed.openings,
        drawn=handed.drawn,
    )

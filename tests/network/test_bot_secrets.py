"""Which secrets a server bot plays a seat with (`NetServer._bot_secrets`):
those it kept for that game (a bot started again after a restart), those a
player handed over with the seat, for the game they were handed for and no
other (the bot stays in the seat for the room's next games), or new ones.

The decision alone: no socket is opened and no server runs.
"""

from __future__ import annotations

from pathlib import Path

from oriflamme.client.seat_secrets import SeatSecrets
from oriflamme.client.secret_store import SecretStore
from oriflamme.engine import Rules
from oriflamme.protocol.commitments import Opening
from oriflamme.server.core import Gateway, HandedSeat, Lobby, ServerConfig
from oriflamme.server.net import NetServer

RULES = Rules(3)
HANDED_GAME = bytes(range(16))
NEXT_GAME = bytes(range(1, 17))
SERVER_SEED = bytes(range(32))
SEAT = 1


def handed_seat() -> HandedSeat:
    """What the player of `SEAT` handed over in `HANDED_GAME`, two cards placed."""
    secrets = SeatSecrets(RULES, HANDED_GAME, SEAT)
    secrets.learn_server_seed(SERVER_SEED)
    for pid, card in enumerate(secrets.hand[:2]):
        secrets.commit(pid, card)
        secrets.confirm(pid)
    return HandedSeat(
        seed=secrets.seed,
        openings=tuple(secrets.openings([0, 1])),
        server_seed=SERVER_SEED,
        drawn=0,
        game=HANDED_GAME,
    )


def server(store: SecretStore | None = None) -> NetServer:
    return NetServer(Gateway(Lobby(ServerConfig())), bot_secrets=store)


def placed(secrets: SeatSecrets) -> list[Opening]:
    return secrets.openings(sorted(secrets.placed_cards()))


def test_the_handed_secrets_are_for_the_game_they_were_handed_for() -> None:
    handed = handed_seat()
    secrets = server()._bot_secrets(RULES, HANDED_GAME, SEAT, handed=handed)
    assert (secrets.game_id, secrets.seat, secrets.seed) == (HANDED_GAME, SEAT, handed.seed)
    assert placed(secrets) == list(handed.openings)


def test_the_next_game_of_the_room_gets_new_secrets() -> None:
    handed = handed_seat()
    secrets = server()._bot_secrets(RULES, NEXT_GAME, SEAT, handed=handed)
    assert (secrets.game_id, secrets.seat) == (NEXT_GAME, SEAT)
    assert secrets.seed != handed.seed
    assert secrets.placed_cards() == {}  # card 0 is free to place again


def test_kept_secrets_come_first_and_the_next_game_s_are_kept_too(tmp_path: Path) -> None:
    store = SecretStore(tmp_path)
    handed = handed_seat()
    first = server(store)._bot_secrets(RULES, HANDED_GAME, SEAT, handed=handed)
    after_restart = server(store)._bot_secrets(RULES, HANDED_GAME, SEAT, handed=None)
    assert after_restart.to_bytes() == first.to_bytes()
    nxt = server(store)._bot_secrets(RULES, NEXT_GAME, SEAT, handed=handed)
    again = server(store)._bot_secrets(RULES, NEXT_GAME, SEAT, handed=handed)
    assert nxt.seed != handed.seed and again.to_bytes() == nxt.to_bytes()


def test_a_handed_seat_saved_before_its_game_was_kept_is_of_no_game() -> None:
    """A `HandedSeat` pickled by a server that did not keep its game: its
    secrets are taken for no game (a bot started again after a restart
    finds its own kept secrets first)."""
    old = HandedSeat.__new__(HandedSeat)
    handed = handed_seat()
    old.__setstate__([handed.seed, handed.openings, handed.server_seed, handed.drawn])
    assert old.game == b""
    secrets = server()._bot_secrets(RULES, HANDED_GAME, SEAT, handed=old)
    assert secrets.seed != handed.seed and secrets.placed_cards() == {}

"""A seat's secrets: its deal, its pending and confirmed commitments, their storage."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oriflamme.client.seat_secrets import SeatSecrets, SecretsError
from oriflamme.engine import Rules
from oriflamme.protocol.commitments import (
    Opening,
    card_commitment,
    opening_matches,
    seed_commitment,
)
from oriflamme.protocol.deal import derive_deal

GAME = bytes(range(16))
SERVER_SEED = bytes(32)


def dealt(players: int = 3, seat: int = 0, variant: str = "standard") -> SeatSecrets:
    secrets = SeatSecrets(Rules(players, variant), GAME, seat, seed=bytes([seat + 1]) * 32)
    secrets.learn_server_seed(SERVER_SEED)
    return secrets


def test_the_deal_is_the_protocol_s() -> None:
    secrets = dealt()
    deal = derive_deal(Rules(3), GAME, 0, secrets.seed, SERVER_SEED)
    assert secrets.hand == list(deal.hand) and secrets.set_aside == list(deal.set_aside)
    assert secrets.seed_commitment == seed_commitment(GAME, 0, secrets.seed)


def test_a_commitment_is_pending_until_confirmed_and_opens_its_card() -> None:
    secrets = dealt()
    card = secrets.hand[2]
    commitment = secrets.commit(5, card)
    assert card in secrets.hand and secrets.card(5) is None  # pending
    secrets.confirm(5)
    assert card not in secrets.hand and secrets.card(5) == card
    o = secrets.opening(5)
    assert opening_matches(commitment, GAME, 0, 5, o.card, o.nonce)
    assert secrets.commit_for(5) == commitment


def test_a_refused_placement_is_made_again_with_a_fresh_nonce() -> None:
    secrets = dealt()
    first = secrets.commit(0, secrets.hand[0])
    again = secrets.commit(0, secrets.hand[1])  # the server refused the first: another card
    assert first != again
    secrets.confirm(0)
    assert secrets.opening(0).card == secrets.placed_cards()[0]
    with pytest.raises(SecretsError, match="already placed"):
        secrets.commit(0, secrets.hand[0])


def test_a_placement_answered_again_finds_the_one_the_server_took() -> None:
    """A resume that answers again a decision the server had taken (its
    answer lost with the connection): the server shows the first
    commitment, and the seat keeps the card it stands for."""
    secrets = dealt()
    first_card, other = secrets.hand[0], secrets.hand[1]
    taken = secrets.commit(4, first_card)
    secrets.commit(4, other)  # (answered again: another card, another nonce)
    assert secrets.take_earlier(4, taken)
    assert secrets.commit_for(4) == taken
    secrets.confirm(4)
    assert secrets.placed_cards() == {4: first_card} and other in secrets.hand
    assert not secrets.take_earlier(4, bytes(32))  # (none of ours: no nonce key to look with)


def test_a_card_not_in_hand_cannot_be_committed() -> None:
    secrets = dealt()
    with pytest.raises(SecretsError, match="not in seat 0's hand"):
        secrets.commit(0, secrets.set_aside[0])
    with pytest.raises(SecretsError):
        secrets.opening(3)  # never placed


def test_nonces_are_fresh_and_from_the_given_source() -> None:
    produced = iter([bytes([i]) * 32 for i in range(10)])
    secrets = SeatSecrets(Rules(3), GAME, 0, seed=bytes(32), nonces=lambda: next(produced))
    secrets.learn_server_seed(SERVER_SEED)
    secrets.commit(0, secrets.hand[0])
    secrets.confirm(0)
    assert secrets.opening(0).nonce == bytes([0]) * 32
    default = dealt()
    default.commit(0, default.hand[0])
    default.commit(1, default.hand[1])
    assert default._committed[0].nonce != default._committed[1].nonce


def test_the_two_player_draw_pile_comes_into_the_hand() -> None:
    secrets = dealt(2, 1, "two-player")
    assert len(secrets.hand) == 6 and len(secrets.draw_pile) == 8
    top = secrets.draw_pile[:2]
    secrets.draw(2)
    assert secrets.hand[-2:] == top and len(secrets.draw_pile) == 6
    with pytest.raises(SecretsError):
        secrets.draw(7)


def test_stored_secrets_come_back_whole() -> None:
    secrets = dealt(2, 0, "two-player")
    secrets.draw(2)
    secrets.commit(0, secrets.hand[0])
    secrets.confirm(0)
    secrets.commit(1, secrets.hand[3])  # pending when the client crashed
    back = SeatSecrets.from_bytes(secrets.to_bytes())
    assert back.hand == secrets.hand and back.drawn == 2 and back.seed == secrets.seed
    assert back.opening(0) == secrets.opening(0)
    assert back.commit_for(1) == secrets.commit_for(1) and back.card(1) is None


@settings(max_examples=150)
@given(st.binary(max_size=300))
def test_unreadable_stored_secrets_raise_only_secrets_error(data: bytes) -> None:
    with contextlib.suppress(SecretsError):
        SeatSecrets.from_bytes(data)


def test_a_seat_is_rebuilt_from_its_seed_and_openings_for_a_bot() -> None:
    secrets = dealt()
    for pid, card in enumerate(secrets.hand[:3]):
        secrets.commit(pid, card)
        secrets.confirm(pid)
    openings = [secrets.opening(pid) for pid in range(3)]
    bot = SeatSecrets.resume(
        Rules(3), GAME, 0, seed=secrets.seed, server_seed=SERVER_SEED, openings=openings
    )
    assert bot.hand == secrets.hand and bot.opening(1) == secrets.opening(1)
    stranger = Opening(9, secrets.set_aside[0], bytes(32))
    with pytest.raises(SecretsError, match="not dealt"):
        SeatSecrets.resume(
            Rules(3), GAME, 0, seed=secrets.seed, server_seed=SERVER_SEED, openings=[stranger]
        )
    assert card_commitment(GAME, 0, 0, openings[0].card, openings[0].nonce) == secrets.commit_for(0)


def test_a_seat_forgotten_is_not_written_back(tmp_path: Path) -> None:
    from oriflamme.client.secret_store import SecretStore

    store = SecretStore(tmp_path)
    secrets = store.make_secrets(Rules(3), GAME, 1)
    path = store.secrets_path(GAME, 1)
    assert path.exists() and path.stat().st_mode & 0o077 == 0
    store.forget(GAME, 1)  # the game is over (finished, or cancelled before it began)
    store.save(secrets)  # a session that still held them, sending one more message
    assert not path.exists()
    other = SeatSecrets(Rules(3), GAME, 2)
    store.save(other)  # another seat is saved as ever
    assert store.load(GAME, 2) is not None

"""Sealed seeds (docs/PROTOCOL.md, "Sealed seeds"): a key seals a seat's
seed; the key alone unseals it, and the seed alone finds the seat's
placements again (nonces derived from it)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from oriflamme.client.seat_secrets import SeatSecrets, derived_nonce
from oriflamme.engine import TWO_PLAYER, Rules, card
from oriflamme.protocol import identity
from oriflamme.protocol import messages as m
from oriflamme.protocol.commitments import card_commitment, seed_commitment

GAME = bytes(range(16))
SERVER_SEED = bytes(range(32, 64))
SEAL = identity.seal_key(identity.private_key(bytes(32)))
NONCE_KEY = identity.nonce_key(SEAL, GAME, 0)


def test_only_the_key_unseals_its_seed() -> None:
    seed = bytes(range(100, 132))
    commitment = seed_commitment(GAME, 1, seed)
    seal = identity.seal_key(identity.private_key(bytes(32)))
    closed = identity.sealed_seed(seal, GAME, 1, commitment, seed)
    assert closed != seed
    assert identity.sealed_seed(seal, GAME, 1, commitment, closed) == seed
    other = identity.seal_key(identity.private_key(bytes([1]) * 32))
    assert identity.sealed_seed(other, GAME, 1, commitment, closed) != seed
    # another seat, game or commitment: another pad
    assert identity.sealed_seed(seal, GAME, 2, commitment, closed) != seed
    assert identity.sealed_seed(seal, bytes(16), 1, commitment, closed) != seed


@pytest.mark.parametrize("rules", [Rules(2, TWO_PLAYER), Rules(3), Rules(5)], ids=str)
def test_the_seed_alone_finds_every_placement_again(rules: Rules) -> None:
    secrets = SeatSecrets(rules, GAME, 0, seed=bytes(range(7, 39)))
    secrets.nonce_key = NONCE_KEY
    secrets.learn_server_seed(SERVER_SEED)
    placed = {}
    for pid in (0, 3, 7):
        chosen = secrets.hand[0]
        placed[pid] = (chosen, secrets.commit(pid, chosen))
        secrets.confirm(pid)
    again = SeatSecrets(rules, GAME, 0, seed=secrets.seed)
    again.learn_server_seed(SERVER_SEED)
    assert not again.recover(0, placed[0][1])  # (without the nonce key: nothing)
    again.nonce_key = NONCE_KEY
    for pid, (chosen, commitment) in placed.items():
        assert again.recover(pid, commitment)
        assert again.opening(pid) == secrets.opening(pid) and again.card(pid) == chosen
    assert again.hand == secrets.hand
    assert not again.recover(9, bytes(32))  # no card of ours under that commitment


def test_a_derived_nonce_depends_on_the_pid_and_the_card() -> None:
    seed = NONCE_KEY  # (the nonce key: never revealed, unlike the seed)
    assert identity.nonce_key(SEAL, GAME, 1) != NONCE_KEY
    red_archer, red_spy = card("red", "archer"), card("red", "spy")
    nonces = {derived_nonce(seed, p, c) for p in (0, 1) for c in (red_archer, red_spy)}
    assert len(nonces) == 4
    commitment = card_commitment(GAME, 0, 0, red_archer, derived_nonce(seed, 0, red_archer))
    assert len(commitment) == 32


def game_started() -> m.GameStarted:
    """Game `GAME` of 3 seats starts: we are seat 0."""
    return m.GameStarted(
        seq=1,
        room=1,
        game=GAME,
        settings=m.RoomSettings.for_players(3),
        first_player=0,
        families=(("red",), ("blue",), ("green",)),
        server_commitment=seed_commitment(GAME, 255, SERVER_SEED),
        time_left=1000,
        seat=0,
    )


def test_a_machine_that_sent_its_own_seed_commitment_unseals_no_other() -> None:
    """A server that shows another seed commitment for our seat, with a
    sealed seed that opens it (one of a game it replays, whose seed it
    knows), is not giving ours back: a client that sent its own keeps it,
    and says the server holds another."""
    from oriflamme.client.state import UNSEALED, GameMirror

    key = identity.private_key(bytes(32))
    seal = identity.seal_key(key)
    started = game_started()
    old_seed = bytes(range(200, 232))
    old = seed_commitment(GAME, 0, old_seed)
    replayed = m.ServerSeed(
        seq=2,
        game=GAME,
        seed=SERVER_SEED,
        commitments=(old, bytes(32), bytes(32)),
        sealed_seed=identity.sealed_seed(seal, GAME, 0, old, old_seed),
    )
    for sent in (True, False):
        problems: list[str] = []
        mirror = GameMirror(started, lambda r, g, s: SeatSecrets(r, g, s), problems, [], seal=seal)
        assert mirror.secrets is not None
        mine = mirror.secrets.seed
        mirror.secrets.seed_sent = sent
        mirror.receive(replayed)
        if sent:
            assert mirror.secrets.seed == mine and UNSEALED not in mirror.notices
            assert problems == ["the server holds another seed commitment for our seat"]
        else:  # (a machine that never had this game's secrets: the key brings them)
            assert mirror.secrets.seed == old_seed and UNSEALED in mirror.notices


def test_a_game_over_shown_without_our_secrets_is_no_problem_of_the_next() -> None:
    """`oriflamme play` again, at the table of a game over: the snapshot
    shows that game, whose secrets were let go once its record was kept.
    Fresh secrets, never sent, are not the seat's: nothing is lost, and no
    problem is said. The same in a game in play is one, said in that game
    alone (a later game's end does not repeat it)."""
    from oriflamme.client.state import GameMirror

    started = game_started()
    theirs = seed_commitment(GAME, 0, bytes(range(200, 232)))
    seed = m.ServerSeed(seq=2, game=GAME, seed=SERVER_SEED, commitments=(theirs, theirs, theirs))
    fresh = lambda r, g, s: SeatSecrets(r, g, s)  # noqa: E731 -- none kept
    everyone: list[str] = []
    over = GameMirror(started, fresh, everyone, [], over=True)
    over.receive(seed)
    assert over.problems == [] and everyone == []
    in_play = GameMirror(started, fresh, everyone, [])
    in_play.receive(seed)
    assert in_play.problems == ["the server holds another seed commitment for our seat"]
    assert everyone == in_play.problems
    later = GameMirror(replace(started, game=bytes(16)), fresh, everyone, [])
    assert later.problems == []

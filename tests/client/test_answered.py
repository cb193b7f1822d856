"""A bot answers each decision once: a decision is its game's id and its turn
(the next game's turns start again from 0)."""

from __future__ import annotations

import random
from types import SimpleNamespace

from oriflamme.client.bots import Behaviour, Bot


def client(game_id: bytes, turn: int, answered: tuple[bytes, int] | None) -> SimpleNamespace:
    decision = SimpleNamespace(turn=turn)
    game = SimpleNamespace(game_id=game_id, my_turn=True, decision=decision)
    return SimpleNamespace(state=SimpleNamespace(game=game), answered=answered)


def test_a_decision_answered_is_not_owed_again() -> None:
    behaviour = Behaviour(Bot("random", rng=random.Random(1)))
    assert behaviour.owed_turn(client(b"game one", 4, (b"game one", 4))) is None
    assert behaviour.owed_turn(client(b"game one", 5, (b"game one", 4))) == 5


def test_the_next_game_s_decision_of_the_same_turn_is_owed() -> None:
    # A game ended (by vote, say) just after this seat answered turn 0; the
    # next one begins with this seat owing its turn 0: it must answer it.
    behaviour = Behaviour(Bot("random", rng=random.Random(1)))
    assert behaviour.owed_turn(client(b"game two", 0, (b"game one", 0))) == 0

"""oriflamme.engine: the complete rules of Oriflamme, pure Python, no I/O.

>>> from oriflamme.engine import new_game, RandomPlayer
>>> game = new_game(4, seed=3)
>>> player = RandomPlayer(seed=3)
>>> while not game.over:
...     _ = game.apply(player.choose(game))
>>> len(game.winners) >= 1
True
"""

from .actions import (
    DIRECTIONS,
    FIRST,
    KEEP,
    LAST,
    LEFT_TO_RIGHT,
    REVEAL,
    RIGHT_TO_LEFT,
    Action,
    ChooseDirection,
    IllegalAction,
    Keep,
    MoveTo,
    Open,
    Place,
    Reveal,
    Target,
    action_from_data,
    action_to_data,
)
from .cards import BACKS, CARDS, FAMILY_NAMES, KINDS, Card, Kind, card, card_from_data, card_to_data
from .events import Event, event_from_data, event_to_data, mask_event
from .game import (
    EDITIONS,
    FIRST_EDITION,
    REVISED,
    ROUNDS,
    STANDARD,
    TWO_PLAYER,
    VARIANTS,
    Cursor,
    Decision,
    Game,
    InPlay,
    Rules,
    SeatDeal,
    Step,
    hidden_deal,
    layout_deal,
    new_game,
    random_deal,
)
from .players import HeuristicPlayer, Player, RandomPlayer
from .positions import PositionError, from_data, to_data, view

__all__ = [
    "BACKS",
    "CARDS",
    "DIRECTIONS",
    "EDITIONS",
    "FAMILY_NAMES",
    "FIRST",
    "FIRST_EDITION",
    "KEEP",
    "KINDS",
    "LAST",
    "LEFT_TO_RIGHT",
    "REVEAL",
    "REVISED",
    "RIGHT_TO_LEFT",
    "ROUNDS",
    "STANDARD",
    "TWO_PLAYER",
    "VARIANTS",
    "Action",
    "Card",
    "ChooseDirection",
    "Cursor",
    "Decision",
    "Event",
    "Game",
    "HeuristicPlayer",
    "IllegalAction",
    "InPlay",
    "Keep",
    "Kind",
    "MoveTo",
    "Open",
    "Place",
    "Player",
    "PositionError",
    "RandomPlayer",
    "Reveal",
    "Rules",
    "SeatDeal",
    "Step",
    "Target",
    "action_from_data",
    "action_to_data",
    "card",
    "card_from_data",
    "card_to_data",
    "event_from_data",
    "event_to_data",
    "from_data",
    "hidden_deal",
    "layout_deal",
    "mask_event",
    "new_game",
    "random_deal",
    "to_data",
    "view",
]

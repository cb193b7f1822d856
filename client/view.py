"""What a seat sees of a game, as typed values: what the screens draw.

A `TableView` is a frozen picture of one position as one seat may see it
(ruling 21): every card it may not know is a back (`Card.kind` None). The
client makes one from its copy of the game (`TableView.of`: version 2, or a
replay's engine) or, in version 1, from the view the server sent
(`TableView.from_data`: the wire's plain data decoded once, here); the
screens, the chooser and the controller read nothing else. Being frozen, a
view can be kept, and changed only by making another
(`dataclasses.replace`: the end's view, every card shown), while the game
it was taken from goes on.

>>> from oriflamme.engine import new_game, view
>>> game = new_game(3, seed=1)
>>> seen = TableView.of(game, 1)
>>> len(seen.scores), seen.round, seen.step
(3, 1, <Step.DIRECTION: 'direction'>)
>>> [card.kind is not None for card in seen.hands[0]][:2], seen.hands[1][0].kind is not None
([False, False], True)
>>> TableView.from_data(view(game, 1)) == seen
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from oriflamme.engine import FAMILY_NAMES, Card, Game, Step, card_from_data, to_data, view

Cards = tuple[Card, ...]


@dataclass(frozen=True, slots=True)
class QueueCard:
    """A card of the Influence Queue: `card` is a back where this seat may
    not know it (face down, and another's)."""

    pid: int
    owner: int
    card: Card
    face_up: bool
    tokens: int

    @property
    def family(self) -> str:
        return FAMILY_NAMES[self.card.family]


@dataclass(frozen=True, slots=True)
class Resolving:
    """The card being resolved: its slot (`index`, in resolution order), the
    ability it applies (a Shapeshifter's copy: the copied one), and the card
    it chose (a Royal Decree's, before it says where)."""

    index: int
    ability: str | None
    chosen: int | None


@dataclass(frozen=True, slots=True)
class TableView:
    """One position as a seat sees it; see the module docstring.
    `families`: each seat's family names (two each in the two-player
    variant); the card tuples are by seat."""

    variant: str
    edition: str
    families: tuple[tuple[str, ...], ...]
    round: int
    first_player: int
    direction: str | None
    scores: tuple[int, ...]
    hands: tuple[Cards, ...]
    set_aside: tuple[Cards, ...]
    draw_piles: tuple[Cards, ...]
    fronts: tuple[Cards, ...]
    queue: tuple[tuple[QueueCard, ...], ...]
    step: Step
    resolving: Resolving | None

    @property
    def two_player(self) -> bool:
        return self.variant == "two-player"

    def family_of(self, seat: int) -> str:
        """`seat`'s (first) family: its colour on the screen."""
        names = self.families[seat] if 0 <= seat < len(self.families) else ()
        return names[0] if names else "none"

    @classmethod
    def of(cls, game: Game, seat: int | None, *, everything: bool = False) -> TableView:
        """`game` as `seat` sees it (None: a spectator), masked as the
        engine masks a view (`engine.view`: what ruling 21 lets a seat
        know); `everything`: every card the game knows shown (a finished
        game's replay)."""
        return cls.from_data(to_data(game) if everything else view(game, seat))

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> TableView:
        """A position as plain data (`engine.positions`: a `game_state`'s
        view in version 1, docs/PROTOCOL.md; a replay's position), decoded; a
        `ValueError` (`KeyError`, `TypeError`) where it is not one."""

        def cards(piles: Any) -> tuple[Cards, ...]:
            return tuple(tuple(card_from_data(c) for c in pile) for pile in piles)

        resolving = data.get("resolving")
        return cls(
            variant=str(data["variant"]),
            edition=str(data["edition"]),
            families=tuple(tuple(str(f) for f in fs) for fs in data["families"]),
            round=int(data["round"]),
            first_player=int(data["first_player"]),
            direction=None if data["direction"] is None else str(data["direction"]),
            scores=tuple(int(s) for s in data["scores"]),
            hands=cards(data["hands"]),
            set_aside=cards(data["set_aside"]),
            draw_piles=cards(data["draw_piles"]),
            fronts=cards(data["fronts"]),
            queue=tuple(
                tuple(
                    QueueCard(
                        int(c["pid"]),
                        int(c["owner"]),
                        card_from_data(c["card"]),
                        bool(c["face_up"]),
                        int(c["tokens"]),
                    )
                    for c in slot
                )
                for slot in data["queue"]
            ),
            step=Step(data["step"]),
            resolving=None
            if resolving is None
            else Resolving(
                int(resolving["index"]),
                None if resolving.get("ability") is None else str(resolving["ability"]),
                None if resolving.get("chosen") is None else int(resolving["chosen"]),
            ),
        )

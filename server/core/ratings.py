"""Each key's rating on this server: OpenSkill's Plackett-Luce model.

How this works
--------------
A game is rated when every seat began it with a player with a key (the
keys the room noted as it began: `GameFinished.keys`), each seat another
key, and the game was played out (not ended by vote): `Ratings.rate`,
from the lobby, as the game's record comes (`Lobby._noted`, so a replay of
the journal rates it again, the same way). A seat that left or that the
stand-in played is rated on its score; a seat whose checks failed ranks
last (the lobby gives it a score below any).
A game with a bot at a seat, a seat handed over to a bot, or a player
without a key, is not rated: a bot's strength is not a person's, and a
fixed rating for it would say less than nothing. The seats' scores are
the game's own (ties tie).

A rating is OpenSkill's mu and sigma (a new key: 25 and 25/3); what people
see is its ordinal, mu - 3 sigma (0 for a new key, rising as games tell
more), in hundredths on the wire (`shown`: floats are not in the
protocol). Each key keeps the ratings after its last `HISTORY` rated
games, with each game's record id.

>>> ratings = Ratings()
>>> ratings.rate("g1", [(b"a", 10), (b"b", 7), (b"c", 7)])
>>> [ratings.get(k).games for k in (b"a", b"b")], ratings.get(b"a").shown > 0
([1, 1], True)
>>> ratings.history[b"a"][0][0]
'g1'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from openskill.models import PlackettLuce

MODEL = PlackettLuce()
HISTORY = 200  # rated games a key's history keeps (its newest)


@dataclass(frozen=True, slots=True)
class Rating:
    mu: float
    sigma: float
    games: int = 0

    @property
    def shown(self) -> int:
        """The ordinal, mu - 3 sigma, in hundredths (what the wire carries)."""
        return round(100 * (self.mu - 3 * self.sigma))


NEW = Rating(MODEL.mu, MODEL.sigma)


class Ratings:
    """The ratings of the keys that played rated games here."""

    def __init__(self) -> None:
        self.by_key: dict[bytes, Rating] = {}
        # key -> [(record id, rating shown after it)], oldest first
        self.history: dict[bytes, list[tuple[str, int]]] = {}

    def get(self, key: bytes) -> Rating:
        return self.by_key.get(key, NEW)

    def shown(self, key: bytes) -> int | None:
        """`key`'s rating as the wire shows it; None if it played no rated game."""
        rating = self.by_key.get(key)
        return None if rating is None else rating.shown

    def rate(self, record_id: str, seats: Sequence[tuple[bytes, int]]) -> None:
        """A rated game (see the module docstring): each seat's key and score."""
        teams = [
            [MODEL.create_rating([r.mu, r.sigma])] for r in map(self.get, (k for k, _ in seats))
        ]
        rated = MODEL.rate(teams, scores=[score for _, score in seats])
        for (key, _), [after] in zip(seats, rated, strict=True):
            rating = Rating(after.mu, after.sigma, self.get(key).games + 1)
            self.by_key[key] = rating
            history = self.history.setdefault(key, [])
            history.append((record_id, rating.shown))
            del history[:-HISTORY]

    def leaders(self, most: int) -> list[tuple[bytes, Rating]]:
        """The `most` highest rated keys, highest first (by the ordinal)."""
        ranked = sorted(self.by_key.items(), key=lambda kv: (-kv[1].shown, -kv[1].games, kv[0]))
        return ranked[:most]

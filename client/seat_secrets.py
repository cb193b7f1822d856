"""A seat's side of commit-reveal: its client seed, its deal, and its nonces.

How this works
--------------
The server never learns a face-down card, so the seat keeps, until the end
of the game: its 32-byte client seed (whose commitment it sent), the deal it
derives from that seed and the server seed, and for every card it commits
to, the card and the nonce of its commitment. From those it answers what
the server asks: the opening of a card it reveals or that was eliminated,
and at the end its seed and the openings of every card still hidden.

A commitment is made for the pid the card will get (`view.next_pid`) before
the `place` request is sent, so it is *pending* until the server's
`placed` event confirms it (`confirm`); a refused placement is simply made
again, for the same pid, with a fresh nonce. The hand is what the deal and
the draws gave, less the confirmed placements. A server restored from a
backup may not have a placement we saw confirmed: `forget_placements`
drops it, and its card is in hand again.

Everything here must survive a crash of the client: `to_bytes` is the whole
state (write it to disk, atomically, before sending the commitment that
binds it), `from_bytes` brings it back.

>>> from oriflamme.engine import Rules
>>> secrets = SeatSecrets(Rules(3), bytes(16), seat=0, seed=bytes(32))
>>> secrets.learn_server_seed(bytes(range(32)))
>>> len(secrets.hand), len(secrets.set_aside)
(7, 3)
>>> card = secrets.hand[0]
>>> commitment = secrets.commit(0, card)
>>> secrets.confirm(0)
>>> card in secrets.hand, secrets.opening(0).card == card
(False, True)
>>> SeatSecrets.from_bytes(secrets.to_bytes()).hand == secrets.hand
True
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import msgpack

from oriflamme.engine import (
    FAMILY_NAMES,
    Card,
    Rules,
    SeatDeal,
    card_from_data,
    card_to_data,
)
from oriflamme.engine.cards import KIND_NAMES
from oriflamme.protocol.codec import unpack_untrusted
from oriflamme.protocol.commitments import (
    Opening,
    card_commitment,
    new_nonce,
    new_seed,
    seed_commitment,
)
from oriflamme.protocol.deal import derive_deal

SECRETS_FORMAT = "oriflamme-seat-secrets"
NONCE_CONTEXT = b"oriflamme nonce v1\x00"


def derived_nonce(key: bytes, pid: int, card: Card) -> bytes:
    """The nonce of `card` placed as `pid`, under a seat's nonce key
    (`identity.nonce_key`): the HMAC-SHA256, keyed by it, of the context, the
    pid (4 bytes, big endian) and the card's names, `family/kind` in ASCII.
    The key is never revealed; another card for the same pid (a placement
    refused, then made with another card) has another nonce."""
    assert card.kind is not None
    name = f"{FAMILY_NAMES[card.family]}/{KIND_NAMES[card.kind]}".encode()
    return hmac.new(key, NONCE_CONTEXT + pid.to_bytes(4, "big") + name, hashlib.sha256).digest()


class SecretsError(ValueError):
    """Stored secrets that cannot be read, or a request the secrets cannot meet."""


@dataclass(slots=True)
class _Committed:
    card: Card
    nonce: bytes
    confirmed: bool = False


class SeatSecrets:
    """Everything one seat keeps to itself; see the module docstring."""

    def __init__(
        self,
        rules: Rules,
        game_id: bytes,
        seat: int,
        *,
        seed: bytes | None = None,
        nonces: Callable[[], bytes] | None = None,
    ) -> None:
        if not 0 <= seat < rules.players:
            raise ValueError(f"no seat {seat} at a {rules.players}-player table")
        self.rules = rules
        self.game_id = game_id
        self.seat = seat
        self.seed = new_seed() if seed is None else seed
        self.seed_commitment = seed_commitment(game_id, seat, self.seed)
        self.server_seed: bytes | None = None
        self.deal: SeatDeal | None = None
        self.drawn = 0
        self._committed: dict[int, _Committed] = {}
        # The commitments made for a pid before its last one, not confirmed
        # (`commit`): the server may have taken one of them all the same.
        self._earlier: dict[int, list[_Committed]] = {}
        self._nonces = nonces
        # The key our nonces derive from (`identity.nonce_key`, from a player's
        # key: `recover` finds our placements again); None: random nonces.
        self.nonce_key: bytes | None = None
        # Our seed commitment was sent: a server that shows another is not
        # giving our seed back (see `client.state`, "sealed seeds").
        self.seed_sent = False

    # ------------------------------------------------------------ the deal

    def learn_server_seed(self, server_seed: bytes) -> None:
        """Derive this seat's deal, now that the server seed is public."""
        self.server_seed = server_seed
        self.deal = derive_deal(self.rules, self.game_id, self.seat, self.seed, server_seed)

    def _dealt(self) -> SeatDeal:
        if self.deal is None:
            raise SecretsError("the deal is not known before the server seed")
        return self.deal

    def draw(self, count: int) -> None:
        """This seat drew `count` cards from the top of its draw pile (2-player)."""
        if self.drawn + count > len(self._dealt().draw_pile):
            raise SecretsError(f"seat {self.seat} cannot draw {count} more cards")
        self.drawn += count

    @property
    def hand(self) -> list[Card]:
        """The cards in hand now: dealt and drawn, less the confirmed placements."""
        deal = self._dealt()
        placed = {c.card for c in self._committed.values() if c.confirmed}
        return [c for c in (*deal.hand, *deal.draw_pile[: self.drawn]) if c not in placed]

    @property
    def set_aside(self) -> list[Card]:
        return list(self._dealt().set_aside)

    @property
    def draw_pile(self) -> list[Card]:
        """The cards still to draw, top first."""
        return list(self._dealt().draw_pile[self.drawn :])

    # ------------------------------------------------------------ commitments

    def _nonce(self, pid: int, card: Card) -> bytes:
        """The nonce of `card` placed as `pid`: the seat's own source of
        nonces if it was given one, else derived from our nonce key (so that
        our key finds our placements again: `recover`), else random."""
        if self._nonces is not None:
            return self._nonces()
        if self.nonce_key is not None:
            return derived_nonce(self.nonce_key, pid, card)
        return new_nonce()

    def commit(self, pid: int, card: Card) -> bytes:
        """Commit to placing `card` as placement `pid`; the commitment to send.
        Pending until `confirm`; a new commitment for the same pid replaces it
        (the placement was refused, or its answer was lost), the one before
        kept aside in case the server took it after all (`take_earlier`)."""
        if card not in self.hand:
            raise SecretsError(f"{card} is not in seat {self.seat}'s hand")
        entry = self._committed.get(pid)
        if entry is not None and entry.confirmed:
            raise SecretsError(f"card {pid} is already placed")
        if entry is not None:
            earlier = self._earlier.setdefault(pid, [])
            earlier[:] = [*earlier[-7:], entry]  # (a few: each is a decision answered again)
        nonce = self._nonce(pid, card)
        self._committed[pid] = _Committed(card, nonce)
        return card_commitment(self.game_id, self.seat, pid, card, nonce)

    def commit_for(self, pid: int) -> bytes:
        """The commitment we made for card `pid` (KeyError if none)."""
        entry = self._committed[pid]
        return card_commitment(self.game_id, self.seat, pid, entry.card, entry.nonce)

    def take_earlier(self, pid: int, commitment: bytes) -> bool:
        """The server holds `commitment` for our card `pid`, not the last we
        made for it: an earlier one it took, whose answer we never saw (a
        decision answered again after a dropped connection). Keep that one,
        pending as it was (or found from our nonce key: `recover`); False if
        none of ours fits."""
        for entry in self._earlier.get(pid, ()):
            if card_commitment(self.game_id, self.seat, pid, entry.card, entry.nonce) == commitment:
                self._committed[pid] = entry
                del self._earlier[pid]
                return True
        return self.recover(pid, commitment)

    def recover(self, pid: int, commitment: bytes) -> bool:
        """Find which of our dealt cards we placed as `pid` under `commitment`,
        from our nonce key, and keep it as placed: our secrets brought back on
        another machine (a sealed seed). False if none fits."""
        if self.nonce_key is None:
            return False
        deal = self._dealt()
        for card in dict.fromkeys((*deal.hand, *deal.draw_pile)):
            nonce = derived_nonce(self.nonce_key, pid, card)
            if card_commitment(self.game_id, self.seat, pid, card, nonce) == commitment:
                self._committed[pid] = _Committed(card, nonce, True)
                return True
        return False

    def confirm(self, pid: int) -> None:
        """The server placed our card `pid` (its `placed` event)."""
        entry = self._committed.get(pid)
        if entry is None:
            raise SecretsError(f"seat {self.seat} made no commitment for card {pid}")
        entry.confirmed = True

    def forget_placements(self, *, keep: set[int]) -> list[int]:
        """Forget every commitment but those for the pids in `keep` (the
        placements of ours a server's snapshot shows): a server restored
        from a backup never accepted the others, so their cards are in hand
        again. The pids forgotten that were confirmed (placed, as we saw)."""
        gone = [pid for pid in self._committed if pid not in keep]
        placed = [pid for pid in gone if self._committed[pid].confirmed]
        for pid in gone:
            del self._committed[pid]
            self._earlier.pop(pid, None)
        return placed

    def card(self, pid: int) -> Card | None:
        """Our card `pid`, if we placed it."""
        entry = self._committed.get(pid)
        return entry.card if entry is not None and entry.confirmed else None

    def placed_cards(self) -> dict[int, Card]:
        """Every card this seat placed, by pid."""
        return {pid: c.card for pid, c in self._committed.items() if c.confirmed}

    def opening(self, pid: int) -> Opening:
        """The opening of our placed card `pid`."""
        entry = self._committed.get(pid)
        if entry is None or not entry.confirmed:
            raise SecretsError(f"card {pid} is not one seat {self.seat} placed")
        return Opening(pid, entry.card, entry.nonce)

    def openings(self, pids: Sequence[int]) -> list[Opening]:
        return [self.opening(pid) for pid in pids]

    # ------------------------------------------------------------ storage

    def to_bytes(self) -> bytes:
        """Everything, as msgpack: write it before sending a commitment."""
        data: dict[str, Any] = {
            "format": SECRETS_FORMAT,
            "players": self.rules.players,
            "variant": self.rules.variant,
            "edition": self.rules.edition,
            "families": [list(f) for f in self.rules.families],
            "game": self.game_id,
            "seat": self.seat,
            "seed": self.seed,
            "server_seed": self.server_seed,
            "drawn": self.drawn,
            "nonce_key": self.nonce_key,
            "seed_sent": self.seed_sent,
            "committed": [
                {
                    "pid": pid,
                    "card": card_to_data(c.card),
                    "nonce": c.nonce,
                    "confirmed": c.confirmed,
                }
                for pid, c in self._committed.items()
            ],
        }
        packed: bytes = msgpack.packb(data, use_bin_type=True)
        return packed

    @classmethod
    def from_bytes(cls, data: bytes) -> SeatSecrets:
        """Secrets written by `to_bytes`. Raises `SecretsError` for anything else."""
        try:
            raw = unpack_untrusted(
                data, max_str_len=64, max_bin_len=64, max_array_len=64, max_map_len=16
            )
            if raw.get("format") != SECRETS_FORMAT:
                raise ValueError("not the secrets of a seat")
            rules = Rules(
                raw["players"],
                raw["variant"],
                raw["edition"],
                tuple(tuple(f) for f in raw["families"]),
            )
            secrets = cls(rules, raw["game"], raw["seat"], seed=raw["seed"])
            secrets.nonce_key = raw.get("nonce_key")
            secrets.seed_sent = bool(raw.get("seed_sent", True))  # (before: assume sent)
            if raw["server_seed"] is not None:
                secrets.learn_server_seed(raw["server_seed"])
                secrets.draw(raw["drawn"])
            for entry in raw["committed"]:
                card = card_from_data(entry["card"])
                secrets._committed[entry["pid"]] = _Committed(
                    card, bytes(entry["nonce"]), bool(entry["confirmed"])
                )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise SecretsError(f"unreadable seat secrets: {exc}") from None
        return secrets

    @classmethod
    def resume(
        cls,
        rules: Rules,
        game_id: bytes,
        seat: int,
        *,
        seed: bytes,
        server_seed: bytes,
        openings: Sequence[Opening],
        drawn: int = 0,
    ) -> SeatSecrets:
        """A seat's secrets rebuilt in the middle of a game from its seed and the
        openings of every card it placed (a server bot taking over the seat
        with `hand_over`). Raises `SecretsError` if they do not fit the deal."""
        secrets = cls(rules, game_id, seat, seed=seed)
        secrets.learn_server_seed(server_seed)
        secrets.draw(drawn)
        dealt = {*secrets._dealt().hand, *secrets._dealt().draw_pile[:drawn]}
        for o in openings:
            if o.card not in dealt:
                raise SecretsError(f"card {o.pid} ({o.card}) was not dealt to seat {seat}")
            secrets._committed[o.pid] = _Committed(o.card, o.nonce, True)
        return secrets

"""A sans-I/O mirror of one session's room and game, built from the server's pushes.

How this works
--------------
`ClientState.receive(message)` takes every message the server sends (pushes
and answers alike) and keeps: the room (`room`), the chat, and the game
being played or just over (`game`, a `GameMirror`). A UI or a bot reads it
and never needs anything else: it is all a seat may know.

The game's pushes differ by protocol version. Version 1's `game_state`
carries the view, which the mirror keeps (`state`). Version 2's
`game_update` carries the game's log entries since the last one, which the
mirror replays on its own copy of the public game (`public`, a
`protocol.updates.PublicGame`), checking the digest of the events they
make; an update that does not follow (`at`), or does not replay, asks for
a snapshot. A bot decides on that copy with its own cards put in
(`with_secrets`), and the screens read a `TableView` of it (`table()`).
`state` gives version 2's change as the `game_state` version 1 would have
sent, made only when asked for.

A seated player's `GameMirror` holds the seat's `SeatSecrets` and overlays
them on the server's views, which show every hidden card as a back (the
server knows none): `view()` shows our own hand, our set-aside cards, our
draw pile and our face-down cards with their identities. `options()` lists
the legal answers to the pending decision as engine actions with our real
cards (a `place` option of the server names a family; we may place any card
of that family from our hand), `answer(action)` builds the message that
sends one (committing to a placed card, opening a revealed one), and
`automatic()` gives the messages a client sends by itself: the seed
commitment, the opening of an eliminated card, the final reveal. Secrets
change when a commitment is made: save `secrets.to_bytes()` before sending.

A server restored from a backup (or that lost its last transactions) is
behind what the client saw, and is authoritative: a snapshot that does not
show a placement our secrets hold as made has it forgotten (the card is in
hand again, and the decision is asked again); a snapshot without the server
seed has our seed commitment sent again (the same seed: it is fixed per
game); a game we saw end that the snapshot shows in play goes on, its end
kept as `seen_end`, and what was sent for it before (openings, final reveal)
is sent again. Each time, `ClientState.notices` says so (`WENT_BACK`).
A push that does not fit the mirror (a game's push for another game than
ours, or a `game_state` that asks an earlier decision than one we saw: a
restored server numbers its pushes again, and a resume may get others
than those it missed), or a decision of ours at the pending turn refused
``stale_turn``, sets `out_of_step`: the client asks for a snapshot
(`sync`). The mirror keeps the last games it saw end (`ENDED_KEPT`), with their
secrets, so that a restore that brings one back finds them.

A game we step out of keeping our seat (`leave_room` with `keep_seat`)
is kept in `kept`, with its secrets, until we come back to it (its
`game_started` again, in the snapshot `join_room` brings), or a `game_list`
no longer lists it (`ended_away`: it ended while we were out). The games that
wait for us elsewhere are in `games_waiting` (the server's push of that
name), and our games as `list_games` last listed them in `my_games`.

The mirror also checks what it can: the server seed against the server's
commitment, every opening against its commitment, and at the end every
seat's seed and deal (`check_end`), so that a player sees for themselves
that the game was fair. What fails goes to `problems`.

>>> state = ClientState()
>>> state.receive(m.Welcome(version=1, token=bytes(32), player=3, server="doc",
...                         resumed=False, idle_timeout=60))
>>> state.player, state.room, state.game
(3, None, None)
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from oriflamme.engine import (
    FAMILY_NAMES,
    Action,
    ChooseDirection,
    Event,
    Game,
    Keep,
    MoveTo,
    Open,
    Place,
    Reveal,
    Rules,
    Step,
    Target,
    action_from_data,
    action_to_data,
    card_to_data,
    event_from_data,
    event_to_data,
    from_data,
)
from oriflamme.engine.actions import At, place
from oriflamme.engine.events import Placed
from oriflamme.engine.positions import view as view_of
from oriflamme.protocol import identity
from oriflamme.protocol import messages as m
from oriflamme.protocol.commitments import (
    SERVER_SEAT,
    Committed,
    Opening,
    opening_matches,
    seed_commitment,
    seed_matches,
)
from oriflamme.protocol.errors import STALE_TURN
from oriflamme.protocol.record import FAILED, OK, SeatVerdict
from oriflamme.protocol.updates import PublicGame, ReplayError, events_digest
from oriflamme.protocol.verify import check_seat

from .i18n import N_, _
from .seat_secrets import SeatSecrets
from .view import TableView

CHAT_KEPT = 200
ENDED_KEPT = 8  # the games seen end, kept for a server that goes back to one
# What the mirror tells the player (in English here: the screen translates them).
WENT_BACK = N_("the server went back to an earlier state (a restore): the game goes on from there")
UNSEALED = N_("your seat's secrets were not on this machine: your key brought them back")


def rules_of(started: m.GameStarted) -> Rules:
    """The engine's rules for the game `started` announces."""
    s = started.settings
    families = tuple(tuple(FAMILY_NAMES.index(f) for f in fams) for fams in started.families)
    return Rules(s.players, s.variant, s.edition, families)


def with_secrets(public: Game, seat: int, secrets: SeatSecrets) -> Game:
    """A copy of `public` (every hidden card a back) with `seat`'s own cards
    known from its `secrets`: the position as the seat sees it, as
    `from_data` makes it of the seat's view, for a fraction of the cost."""
    game = public.copy()
    game.hands[seat] = list(secrets.hand)
    game.set_aside[seat] = list(secrets.set_aside)
    game.draw_piles[seat] = list(secrets.draw_pile)
    for slot in game.queue:
        for c in slot:
            if c.owner == seat and not c.face_up and c.kind is None:
                known = secrets.card(c.pid)
                if known is not None:
                    c.kind = known.kind
    game._legal = None  # (a placement's options name our cards now)
    return game


class _Update:
    """A `game_update` (version 2) and what replaying it made: its events'
    data, its placements' commitments (with the cards their seat had drawn
    then), the openings and the settled pids among its entries."""

    __slots__ = ("message", "events", "commitments", "drawn", "openings", "settled")

    def __init__(self, message: m.GameUpdate) -> None:
        self.message = message
        self.events: list[Event] = []
        self.commitments: list[m.PlacementCommitment] = []
        self.drawn: list[int] = []
        self.openings: list[Opening] = []
        self.settled: list[int] = []

    def game_state(self, public: PublicGame, seat: int | None, past: list[Event]) -> m.GameState:
        """The `game_state` version 1 sends for this change to `seat` (`past`:
        every event of the game so far, for a snapshot's)."""
        message = self.message
        snapshot = message.snapshot
        pending = message.decision
        game = public.game
        decision = (
            None
            if pending is None
            else m.PendingDecision.trusted(
                **{f.name: getattr(pending, f.name) for f in pending.FIELDS},
                options=[action_to_data(a) for a in game.legal_actions()],
            )
        )
        return m.GameState.trusted(
            seq=message.seq,
            game=message.game,
            view={**view_of(game, None), "viewer": seat},
            events=[] if snapshot else [event_to_data(e) for e in self.events],
            commitments=tuple(self.commitments),
            openings=tuple(self.openings),
            snapshot=snapshot,
            decision=decision,
            settled=tuple(self.settled) or None,
            past=[event_to_data(e) for e in past] if snapshot else None,
        )


class GameMirror:
    """One game as this session sees it; see the module docstring."""

    def __init__(
        self,
        started: m.GameStarted,
        make_secrets: Callable[[Rules, bytes, int], SeatSecrets],
        problems: list[str],
        notices: list[str] | None = None,
        *,
        seal: bytes | None = None,
        over: bool = False,
    ) -> None:
        """`problems`: the client's, where this game's are added too (the
        game keeps its own: `problems`); `over`: the game is over already,
        shown in a snapshot (its room says it finished)."""
        self.started = started
        self.over = over
        self.seal = seal
        self.game_id = started.game
        self.rules = rules_of(started)
        self.seat = started.seat
        self.secrets = (
            None if started.seat is None else make_secrets(self.rules, started.game, started.seat)
        )
        if seal is not None and self.secrets is not None and self.secrets.nonce_key is None:
            # A player with a key derives its nonces from it (Sealed seeds).
            self.secrets.nonce_key = identity.nonce_key(seal, started.game, self.secrets.seat)
        self.problems: list[str] = []  # this game's (the end screen says them)
        self._all_problems = problems
        self.notices = notices if notices is not None else []
        self.server_seed: bytes | None = None
        self.seed_commitments: tuple[bytes, ...] = ()
        # Version 1: the last `game_state`. Version 2: the game replayed from
        # its log (`public`), the last `game_update` and what it made; the
        # `game_state` version 1 would have sent is made when asked for
        # (`state`: a client's screens read it; a bot needs none of it).
        self._state: m.GameState | None = None
        self._decision: m.PendingDecision | m.Pending | None = None
        self.public: PublicGame | None = None
        self._update: _Update | None = None
        self.events: list[Event] = []  # the game's so far, as we may see them
        self.commitments: dict[int, m.PlacementCommitment] = {}
        self.openings: dict[int, Opening] = {}
        self.settled: set[int] = set()
        self.open_request: m.OpenRequest | None = None
        self.final_request: m.FinalRevealRequest | None = None
        self.end: m.GameEnd | None = None
        # The end we saw before the server went back to the game in play (a restore).
        self.seen_end: m.GameEnd | None = None
        self._told = False  # this snapshot has said the server went back
        # A push that went back in the game (an earlier decision than one we
        # saw: the server went back, and numbered its pushes again), left
        # unapplied: the client asks for a snapshot (`ClientState.out_of_step`).
        self.out_of_step = False
        self._drawn_at: dict[int, int] = {}  # pid -> cards its owner had drawn when placing it
        self._sent: set[tuple[Any, ...]] = set()

    # ------------------------------------------------------------ input

    def _problem(self, said: str) -> None:
        """Something the server did that does not check out, in this game."""
        self.problems.append(said)
        self._all_problems.append(said)

    def receive(self, message: m.Message) -> None:
        if isinstance(message, m.ServerSeed):
            self._server_seed(message)
        elif isinstance(message, m.GameState):
            self._game_state(message)
        elif isinstance(message, m.GameUpdate):
            self._game_update(message)
        elif isinstance(message, m.OpenRequest):
            self.open_request = message
        elif isinstance(message, m.FinalRevealRequest):
            if self.end is not None:  # a game we saw end waits for our final reveal
                self._went_back()
            self.final_request = message
        elif isinstance(message, m.GameEnd):
            self.end = message
            self.final_request = None

    def restarted(self, started: m.GameStarted) -> None:
        """`game_started` again for this game: a snapshot begins (a resume, a
        `sync`), and replaces what the server had shown. The server seed
        comes again if it was out; if it does not, the server went back to
        before every seat had committed, and `automatic` sends our seed
        commitment again (the same: the seed is fixed per game)."""
        self.started = started
        self.server_seed = None
        self.seed_commitments = ()
        self._state = self._decision = self.public = self._update = None
        self.open_request = None
        self.final_request = None
        self._told = False

    def _went_back(self) -> None:
        """The server is behind what we saw: it is right, and we go on from
        where it is (see the module docstring)."""
        if self.end is not None:
            self.seen_end, self.end = self.end, None
        if not self._told:
            self._told = True
            self.notices.append(WENT_BACK)

    def _reconcile(
        self,
        placed: dict[int, int],
        *,
        over: bool,
        decision: m.PendingDecision | m.Pending | None,
    ) -> None:
        """A snapshot (`placed`: its placements' seats by pid; `over`: its
        game is over; `decision`: its pending one) replaces what we had; one
        behind what we saw has our placements it does not show forgotten
        (the card is in hand again), and a game we saw end goes on (play is
        over when no decision is pending: a game ended by vote too)."""
        self.commitments.clear()
        self.openings.clear()
        self.settled.clear()
        for pid in [pid for pid in self._drawn_at if pid not in placed]:
            del self._drawn_at[pid]
        if self.secrets is not None:
            ours = {pid for pid, seat in placed.items() if seat == self.seat}
            if self.secrets.forget_placements(keep=ours):
                self._went_back()
        if self.end is not None and not over and decision is not None:
            self._went_back()

    def _behind(self, message: m.GameState | m.GameUpdate) -> bool:
        """Whether `message`, not a snapshot, asks an earlier decision than
        one we saw: play only goes forward, unless the server went back."""
        seen, asked = self.decision, message.decision
        return seen is not None and asked is not None and asked.turn < seen.turn

    def _server_seed(self, message: m.ServerSeed) -> None:
        self.server_seed = message.seed
        self.seed_commitments = message.commitments
        if not seed_matches(
            self.started.server_commitment, self.game_id, SERVER_SEAT, message.seed
        ):
            self._problem(_("the server's seed does not match the commitment it made"))
        seat = self.seat
        if (
            self.secrets is not None
            and seat is not None
            and seat < len(message.commitments)
            and message.commitments[seat] != self.secrets.seed_commitment
            and not self._unsealed(message, seat)
            # (a game over before we came, whose secrets we let go once its
            # record was kept: these are not the seat's, and nothing is lost)
            and not (self.over and not self.secrets.seed_sent)
        ):
            # (our secrets of this game were lost: this seat cannot open its cards)
            self._problem(_("the server holds another seed commitment for our seat"))
        if self.secrets is not None and self.secrets.server_seed is None:
            self.secrets.learn_server_seed(message.seed)

    def _unsealed(self, message: m.ServerSeed, seat: int) -> bool:
        """Our secrets of this game are not here (another machine): whether
        our sealed seed, given back, brings them back (docs/PROTOCOL.md,
        "Sealed seeds"). Our placements come back as the game state shows
        their commitments (`SeatSecrets.recover`)."""
        if self.seal is None or message.sealed_seed is None:
            return False
        if self.secrets is not None and self.secrets.seed_sent:
            # We sent our own commitment: a server showing another is not
            # giving ours back (one it replays, of a game whose seed it knows).
            return False
        commitment = message.commitments[seat]
        seed = identity.sealed_seed(self.seal, self.game_id, seat, commitment, message.sealed_seed)
        if seed_commitment(self.game_id, seat, seed) != commitment:
            return False
        self.secrets = SeatSecrets(self.rules, self.game_id, seat, seed=seed)
        self.secrets.nonce_key = identity.nonce_key(self.seal, self.game_id, seat)
        self.secrets.seed_sent = True
        self.notices.append(UNSEALED)
        return True

    def _game_state(self, message: m.GameState) -> None:
        if not message.snapshot and self._behind(message):
            self.out_of_step = True
            return
        if message.snapshot:
            placed = {c.pid: c.seat for c in message.commitments}
            self._reconcile(
                placed, over=message.view.get("step") == "over", decision=message.decision
            )
        self._state, self._decision = message, message.decision
        if message.snapshot and message.past is not None:
            # The game so far: what we had is its start (events are public).
            self.events = self._typed(message.past)
        self.events.extend(self._typed(message.events))
        view = message.view
        piles = view["draw_piles"]
        for c in message.commitments:
            # A snapshot does not say when its cards were placed: lenient then.
            drawn = self._drawn(c.seat, None if message.snapshot else len(piles[c.seat]))
            self._committed(c, drawn)
        for o in message.openings:
            self._opened(o)
        self.settled.update(message.settled or ())
        self._after(message.decision, piles)

    def _typed(self, events: list[Any]) -> list[Event]:
        """Version 1's events, as the engine's: the server's data, decoded
        once here (a malformed one is left out, and said)."""
        typed = []
        for data in events:
            try:
                typed.append(event_from_data(data))
            except ValueError as error:
                self._problem(_("the server sent a malformed event: {why}").format(why=error))
        return typed

    def _game_update(self, message: m.GameUpdate) -> None:
        """Version 2: replay the log entries on our copy of the game (see
        `protocol.updates`); one that does not follow it, or whose events are
        not those the server made (`digest`), asks for a snapshot."""
        public = self.public
        if message.snapshot or (public is None and message.at == 0):  # (or the game's first)
            public = PublicGame(self.rules, self.started.first_player)
        elif public is None or message.at != public.entries:
            self.out_of_step = True
            return
        assert public is not None
        update = _Update(message)
        game = public.game
        try:
            for entry in message.log:
                action = entry.action
                if type(action) is Place:
                    assert entry.pid is not None and entry.commitment is not None
                    seat = entry.seat
                    update.commitments.append(
                        m.PlacementCommitment.trusted(
                            pid=entry.pid, seat=seat, commitment=entry.commitment
                        )
                    )
                    update.drawn.append(self._drawn(seat, len(game.draw_piles[seat])))
                elif type(action) is Open:
                    assert entry.pid is not None
                    if entry.settled:
                        update.settled.append(entry.pid)
                    else:
                        assert entry.nonce is not None
                        update.openings.append(Opening(entry.pid, action.card, entry.nonce))
                update.events.extend(public.apply(entry))
        except ReplayError as error:
            self._astray(message, str(error))
            return
        if events_digest(update.events) != message.digest:
            self._astray(message, "the events it made are not those the server made")
            return
        if message.snapshot:
            self.events = []
            placed = {c.pid: c.seat for c in update.commitments}
            self._reconcile(placed, over=game.over, decision=message.decision)
        self.public, self._update, self._state = public, update, None
        self._decision = message.decision
        self.events.extend(update.events)
        for c, drawn in zip(update.commitments, update.drawn, strict=True):
            self._committed(c, drawn)
        for o in update.openings:
            self._opened(o)
        self.settled.update(update.settled)
        self._after(message.decision, game.draw_piles)

    def _astray(self, message: m.GameUpdate, why: str) -> None:
        """A `game_update` our copy could not follow: a snapshot is asked for
        (our copy is let go: the next update must be one); one that is a
        snapshot already is the server's fault."""
        self.public = self._decision = self._state = None  # (nothing to decide on)
        if message.snapshot:
            self._problem(_("the server's game does not replay: {why}").format(why=why))
        else:
            self.out_of_step = True

    def _committed(self, c: m.PlacementCommitment, drawn: int) -> None:
        """The commitment of a placement, made when its seat had drawn `drawn` cards."""
        self.commitments[c.pid] = c
        self._drawn_at.setdefault(c.pid, drawn)
        if c.seat == self.seat and self.secrets is not None:
            self._confirm(c)

    def _opened(self, o: Opening) -> None:
        self._check_opening(o)
        self.openings[o.pid] = o

    def _after(
        self, decision: m.PendingDecision | m.Pending | None, piles: Sequence[Sequence[Any]]
    ) -> None:
        """What follows each push of the game: how many cards our seat has
        drawn (its draw pile as `piles` show it), and an open request answered."""
        if self.secrets is not None and self.secrets.deal is not None and self.seat is not None:
            self.secrets.drawn = len(self.secrets.deal.draw_pile) - len(piles[self.seat])
        if self.open_request is not None and (
            decision is None or decision.kind != Step.OPEN or decision.pid != self.open_request.pid
        ):
            self.open_request = None

    def _drawn(self, seat: int, pile: int | None) -> int:
        """How many cards `seat` has drawn so far (2-player variant), its
        draw pile holding `pile` cards (None: its whole draw pile)."""
        dealt = 4 * len(self.rules.families[seat]) if self.rules.variant == "two-player" else 0
        return dealt if pile is None else dealt - pile

    def _confirm(self, c: m.PlacementCommitment) -> None:
        assert self.secrets is not None
        try:
            mine = self.secrets.commit_for(c.pid)
        except KeyError:
            if self.secrets.recover(c.pid, c.commitment):  # (secrets brought back: a sealed seed)
                return
            said = _("the server shows card {card} as ours, but we never placed it")
            self._problem(said.format(card=c.pid))
            return
        if mine != c.commitment and not self.secrets.take_earlier(c.pid, c.commitment):
            said = _("the server holds another commitment for our card {card}")
            self._problem(said.format(card=c.pid))
            return
        self.secrets.confirm(c.pid)

    def _check_opening(self, o: Opening) -> None:
        c = self.commitments.get(o.pid)
        if c is None:
            said = _("card {card} was opened, but no commitment was shown for it")
            self._problem(said.format(card=o.pid))
        elif not opening_matches(c.commitment, self.game_id, c.seat, o.pid, o.card, o.nonce):
            said = _("the opening of card {card} does not match its commitment")
            self._problem(said.format(card=o.pid))

    # ------------------------------------------------------------ queries

    @property
    def decision(self) -> m.PendingDecision | m.Pending | None:
        """The pending decision: version 1's with its options, version 2's
        without (`options()` gives them either way)."""
        return self._decision

    @property
    def state(self) -> m.GameState | None:
        """The last `game_state` (version 1), or in version 2 the one version
        1 would have sent: the view, the last update's events... (made when
        first asked for, and kept until the next update)."""
        if self._state is None and self._update is not None and self.public is not None:
            self._state = self._update.game_state(self.public, self.seat, self.events)
        return self._state

    @property
    def told_from_start(self) -> bool:
        """The last push was a snapshot that told the game from its start
        (version 1's with `past`; every one of version 2's: its whole log)."""
        if self._update is not None:
            return self._update.message.snapshot
        state = self._state
        return state is not None and state.snapshot and state.past is not None

    @property
    def next_pid(self) -> int:
        """The pid the next card placed will have."""
        if self.public is not None:
            return self.public.game.next_pid
        assert self._state is not None
        return int(self._state.view["next_pid"])

    @property
    def my_turn(self) -> bool:
        """The pending decision is ours (and not an opening, which is automatic)."""
        d = self.decision
        return d is not None and d.seat == self.seat and d.kind != Step.OPEN

    def view(self) -> dict[str, Any] | None:
        """The latest view, with our own hidden cards shown (see the module docstring)."""
        if self.state is None:
            return None
        view = self.state.view
        secrets = self.secrets
        if secrets is None or secrets.deal is None or self.seat is None:
            return view
        seat = self.seat
        # A new view, sharing what it does not change with the server's.
        view = dict(view)
        for key, cards in (
            ("hands", secrets.hand),
            ("set_aside", secrets.set_aside),
            ("draw_piles", secrets.draw_pile),
        ):
            view[key] = list(view[key])
            view[key][seat] = [card_to_data(c) for c in cards]
        queue = []
        for slot in view["queue"]:
            shown = []
            for c in slot:
                known = secrets.card(c["pid"]) if c["owner"] == seat and not c["face_up"] else None
                shown.append(c if known is None else {**c, "card": card_to_data(known)})
            queue.append(shown)
        view["queue"] = queue
        return view

    def engine_game(self) -> Game:
        """An engine game of the position as we see it, for a bot to think
        with: our cards known, everyone else's hidden ones as backs."""
        public, secrets, seat = self.public, self.secrets, self.seat
        if public is not None and secrets is not None and self._copy_takes_ours():
            assert seat is not None
            return with_secrets(public.game, seat, secrets)
        # (a card of ours the server settled as another than ours: the view
        # shows what cannot be, and the position does not load, as ever)
        view = self.view()
        if view is None:
            raise ValueError("no game position yet")
        return from_data(view)

    def _copy_takes_ours(self) -> bool:
        """Version 2: our own cards can be put in our copy of the game (not
        where our secrets are not here, nor where the server settled a card
        of ours as another: the copy holds what cannot be)."""
        secrets, seat = self.secrets, self.seat
        return (
            secrets is not None
            and secrets.deal is not None
            and not any(
                self.commitments[pid].seat == seat
                for pid in self.settled
                if pid in self.commitments
            )
        )

    def table(self) -> TableView | None:
        """The position as we see it, our hand, set-aside cards and
        face-down cards in the queue shown, as the screens read it
        (`client.view`): from our copy of the game (version 2), else from
        the server's view (decoded here; one that is not a view is the
        server's fault, said, and shows nothing)."""
        public, secrets, seat = self.public, self.secrets, self.seat
        if public is not None and seat is None:
            return TableView.of(public.game, None)
        if (
            public is not None
            and seat is not None
            and secrets is not None
            and self._copy_takes_ours()
        ):
            return TableView.of(with_secrets(public.game, seat, secrets), seat)
        try:
            view = self.view()
            return None if view is None else TableView.from_data(view)
        except (ValueError, KeyError, TypeError, IndexError) as error:
            problem = _("the server's view of the game is not one: {why}").format(why=repr(error))
            if problem not in self.problems:
                self._problem(problem)
            return None

    def options(self) -> list[Action]:
        """Our legal answers to the pending decision, with our real cards."""
        d = self.decision
        if d is None or d.seat != self.seat or d.kind == Step.OPEN:
            return []
        public = self.public
        if isinstance(d, m.Pending):  # (version 2: our copy of the game has them)
            if public is None:
                return []
            actions: Sequence[Action] = public.game.legal_actions()
        else:
            actions = [action_from_data(o) for o in d.options]
        if d.kind != Step.PLACE:
            return list(actions)
        assert self.secrets is not None
        hand = self.secrets.hand
        real: list[Action] = []
        for a in actions:
            assert isinstance(a, Place)
            real.extend(place(c, a.at) for c in hand if c.family == a.card.family)
        return real

    # ------------------------------------------------------------ output

    def answer(self, action: Action) -> m.Message:
        """The message that sends `action` for the pending decision. A placement
        commits to its card now: save the secrets before sending it."""
        d = self.decision
        if d is None or d.seat != self.seat:
            raise ValueError("no decision of ours is pending")
        if action not in self.options():
            raise ValueError(f"{action} is not one of our options")
        assert self.secrets is not None
        if isinstance(action, Place):
            pid = self.next_pid
            commitment = self.secrets.commit(pid, action.card)
            at: At = action.at
            return m.PlaceCard(
                turn=d.turn, at=at, family=FAMILY_NAMES[action.card.family], commitment=commitment
            )
        if isinstance(action, Reveal):
            assert d.pid is not None
            o = self.secrets.opening(d.pid)
            return m.RevealCard(turn=d.turn, card=o.card, nonce=o.nonce)
        assert isinstance(action, ChooseDirection | Keep | Target | MoveTo)
        return m.decision_message(action, d.turn)

    def automatic(self) -> list[m.Message]:
        """What this client sends by itself now, each once per connection: the
        seed commitment, the opening of an eliminated card, the final reveal."""
        secrets = self.secrets
        if secrets is None or self.end is not None:
            return []
        wanted: list[tuple[tuple[Any, ...], m.Message]] = []
        if self.server_seed is None:
            wanted.append((("seed",), m.SeedCommit(commitment=secrets.seed_commitment)))
        d = self.decision
        if d is not None and d.kind == Step.OPEN and d.seat == self.seat and d.pid is not None:
            o = secrets.opening(d.pid)
            wanted.append((("open", d.pid), m.OpenCard(pid=o.pid, card=o.card, nonce=o.nonce)))
        if self.final_request is not None:
            pids = self.final_request.pids
            wanted.append(
                (
                    ("final",),
                    m.FinalReveal(seed=secrets.seed, openings=tuple(secrets.openings(pids))),
                )
            )
        out = []
        for key, message in wanted:
            if key not in self._sent:
                self._sent.add(key)
                out.append(message)
        return out

    def reconnected(self) -> None:
        """A new connection: what was sent on the old one may be lost."""
        self._sent.clear()

    def hand_over(self) -> m.HandOver:
        """The `hand_over` that leaves our seat to a server bot: our seed and
        the openings of every card we placed that is still hidden (a card
        the server settled included: it checks them all, as at the end).
        ValueError before the deal is known: no bot can take the seat then."""
        secrets = self.secrets
        if secrets is None or secrets.deal is None:
            raise ValueError("no seat of ours whose cards are dealt")
        hidden = [pid for pid in sorted(secrets.placed_cards()) if pid not in self.openings]
        return m.HandOver(seed=secrets.seed, openings=tuple(secrets.openings(hidden)))

    # ------------------------------------------------------------ the end

    def check_end(self) -> list[SeatVerdict]:
        """Each seat checked by us, from what the game showed us: its seed
        against its commitment, its openings, and its deal. A seat that
        revealed no seed is not checked (the server's verdict stands)."""
        end = self.end
        if end is None or self.server_seed is None:
            return []
        seeds = {s.seat: s.seed for s in end.seeds}
        openings = {o.pid: o for o in (*self.openings.values(), *end.openings)}
        verdicts = []
        for seat in range(self.rules.players):
            seed = seeds.get(seat)
            if seed is None or seat >= len(self.seed_commitments):
                continue
            placed = [
                Committed(
                    pid,
                    c.seat,
                    FAMILY_NAMES.index(self._family(pid)),
                    c.commitment,
                    self._drawn_at.get(pid, 0),
                )
                for pid, c in sorted(self.commitments.items())
                if c.seat == seat
            ]
            mine = [
                o
                for pid, o in sorted(openings.items())
                if self.commitments.get(pid) and self.commitments[pid].seat == seat
            ]
            reason = check_seat(
                self.rules,
                self.game_id,
                seat,
                seed_commitment=self.seed_commitments[seat],
                seed=seed,
                server_seed=self.server_seed,
                placed=placed,
                openings=mine,
                complete=False,
            )
            verdicts.append(SeatVerdict(seat, OK if reason is None else FAILED, reason))
        server = {v.seat: v for v in end.verification}
        for v in verdicts:
            if not v.ok and server.get(v.seat, v).ok:
                said = _("the server calls seat {seat} ok, but {why}")
                self._problem(said.format(seat=v.seat, why=v.reason))
        return verdicts

    def _family(self, pid: int) -> str:
        """The family of placed card `pid`, from the events or the openings."""
        o = self.openings.get(pid)
        if o is not None:
            return FAMILY_NAMES[o.card.family]
        for e in self.events:
            if type(e) is Placed and e.pid == pid:
                return FAMILY_NAMES[e.card.family]
        view = self.table()
        for slot in () if view is None else view.queue:
            for c in slot:
                if c.pid == pid:
                    return c.family
        raise ValueError(f"the family of card {pid} is unknown")


class ClientState:
    """One session's view of the server; see the module docstring."""

    def __init__(
        self,
        make_secrets: Callable[[Rules, bytes, int], SeatSecrets] | None = None,
    ) -> None:
        self.player: int | None = None
        self.room: m.RoomState | None = None
        self.chat: deque[m.ChatMessage] = deque(maxlen=CHAT_KEPT)
        self.game: GameMirror | None = None
        self.problems: list[str] = []
        # What the client should tell its user: `WENT_BACK` (see the module docstring).
        self.notices: list[str] = []
        # The last games seen end, by id (a restore may bring one back in play).
        self.ended: dict[bytes, GameMirror] = {}
        # The games we stepped out of keeping our seat, by id (see the module
        # docstring); the rooms of those that wait for us; our games, as
        # `list_games` last listed them (None: not asked yet).
        self.kept: dict[bytes, GameMirror] = {}
        # Kept games the server no longer lists (`game_list`): over while we
        # were out, for the client to save the record of, and forget.
        self.ended_away: list[GameMirror] = []
        self.games_waiting: tuple[int, ...] = ()
        self.my_games: tuple[m.MyGame, ...] | None = None
        # A push did not fit the mirror: the client should send `sync`.
        self.out_of_step = False
        self._make_secrets = make_secrets or (
            lambda rules, game, seat: SeatSecrets(rules, game, seat)
        )
        # The seal of the player's key (`identity.seal_key`; None: no key): a
        # game's `server_seed` gives our sealed seed back, which brings our
        # secrets back where they were lost (another machine).
        self.seal: bytes | None = None

    @property
    def seat(self) -> int | None:
        return None if self.room is None else self.room.seat

    def receive(self, message: m.Message) -> None:
        """Take one message from the server (pushes and answers)."""
        if isinstance(message, m.Welcome):
            if not message.resumed and self.player is not None:
                # A new session where we had one (the server no longer knows it:
                # a restore from before it, or it expired): in no room, and
                # no game of ours elsewhere.
                self.room = None
                self._set_game(None)
                self.kept.clear()
                self.games_waiting, self.my_games = (), None
            self.player = message.player
        elif isinstance(message, m.RoomState):
            self.room = None if message.state == "closed" else message
            if self.room is None:
                self._set_game(None)
            elif message.state == "waiting" and self.game is not None and self.game.end is None:
                self.game = None  # cancelled before it began (a seat did not commit in time)
        elif isinstance(message, m.ChatMessage):
            self.chat.append(message)
        elif isinstance(message, m.GamesWaiting):
            self.games_waiting = message.rooms
        elif isinstance(message, m.GameList):
            self.my_games = message.games
            listed = {g.game for g in message.games}
            for game_id in [g for g in self.kept if g not in listed]:
                # Over while we were out (or cancelled before it began): its
                # record, if any, is to be kept and its secrets let go.
                self.ended_away.append(self.kept.pop(game_id))
        elif isinstance(message, m.GameStarted):
            if self.game is not None and self.game.game_id == message.game:
                self.game.restarted(message)
                return
            back = self.kept.pop(message.game, None)
            if back is not None and back.seat == message.seat:
                self._set_game(back)  # (a game we stepped out of: a snapshot)
                back.restarted(message)
                return
            kept = self.ended.pop(message.game, None)
            if kept is not None and kept.seat == message.seat:
                # A game we saw end, in a snapshot: its secrets are the seat's.
                # What we sent for it went to a server that no longer has it
                # (and the new connection's `reconnected` was of the game in
                # play then): its openings and final reveal go again.
                self._set_game(kept)
                kept.reconnected()
                kept.restarted(message)
            else:
                over = self.room is not None and self.room.state == "finished"
                self._set_game(
                    GameMirror(
                        message,
                        self._make_secrets,
                        self.problems,
                        self.notices,
                        seal=self.seal,
                        over=over,
                    )
                )
        elif self.game is not None and getattr(message, "game", None) == self.game.game_id:
            self.game.receive(message)
            if self.game.out_of_step:
                self.game.out_of_step = False
                self.out_of_step = True
        elif getattr(message, "game", None) is not None and message.ROLE == "push":
            # A push of a game we are not in: the server's pushes do not follow
            # from what we saw (restored from a backup, it numbered others as
            # those we had): ask for a snapshot (`sync`).
            self.out_of_step = True

    def answered(self, request: m.Message | None, answer: m.Message) -> None:
        """The answer to one of our requests. Leaving takes us out of the room
        with no push: `leave_room` answered ``ok``, or `hand_over` answered at
        all (``bad_opening`` too: the seat failed, and the stand-in plays it)."""
        ok = isinstance(answer, m.Ok)
        if (
            isinstance(answer, m.Error)
            and answer.code == STALE_TURN
            and self.game is not None
            and self.game.decision is not None
            and self.game.decision.turn == getattr(request, "turn", None)
        ):
            # A decision of ours at the turn our mirror says is pending, which
            # the server is not at: a push may be on its way, or the server
            # went back (its pushes numbered again, the ones after ours never
            # come): a snapshot settles it. (A turn we were not asked is our
            # mistake, not the server's state.)
            self.out_of_step = True
        if (isinstance(request, m.LeaveRoom) and ok) or (
            isinstance(request, m.HandOver)
            and (ok or (isinstance(answer, m.Error) and answer.code == "bad_opening"))
        ):
            game = self.game
            stepped_out = isinstance(request, m.LeaveRoom) and request.keep_seat
            if stepped_out and game is not None and game.seat is not None and game.end is None:
                self.kept[game.game_id] = game  # (to come back to: My games)
                while len(self.kept) > m.MY_GAMES:
                    del self.kept[next(iter(self.kept))]
            self.room = None
            self._set_game(None)

    def _set_game(self, game: GameMirror | None) -> None:
        """Let the game we had go for `game`: one we saw end is kept a while."""
        old = self.game
        if old is not None and old is not game and old.end is not None:
            self.ended[old.game_id] = old
            while len(self.ended) > ENDED_KEPT:
                del self.ended[next(iter(self.ended))]
        self.game = game

    def adopt_secrets(self, secrets: SeatSecrets) -> None:
        """Use secrets kept from before (a client restarted mid-game)."""
        if (
            self.game is None
            or self.game.game_id != secrets.game_id
            or self.game.seat != secrets.seat
        ):
            raise ValueError("these secrets are for another game or seat")
        self.game.secrets = secrets

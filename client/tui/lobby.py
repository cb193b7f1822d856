"""The lobby: the server's rooms, the room you sit in, chat, finished games.

How this works
--------------
`LobbyController` is the lobby screen's state and keys, as `GameController`
is the game's: no I/O. Whatever it asks of the server is a `Request` (a
protocol message) handed to `send`; the app's trio side sends it and gives
the answer back through `answered` (a `room_list`, a `record_list`, or an
error, shown on the status line in the server's words). The room you sit in
and the chat come from the session's mirror (`ClientState`), kept current by
the server's pushes; the room list is asked for again every few seconds
while it is shown.

Keys, each listed on the screen: in the lobby ↑↓ pick a room, [j] join,
[s] spectate, [n] new room (a form: ↑↓ a field, ←→ its value, letters for
the name, Enter creates), [c] join by invite code, [m] my games (the games
whose seats you kept when you stepped out of them, [L] in a game: Enter
takes you back to one), [h] your finished games ([d] downloads the selected
record), [r] refresh, [/] chat. The lobby says when a game of yours waits
for you (the server's `games_waiting`), and rings once for each. In a room: [r]
ready or not, [b]/[e]/[h] add a normal/easy/hard bot (the heuristic, random
moves, the ISMCTS search) and [x] remove the last bot (host), [g] start
(host, everyone ready), [l] leave.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from oriflamme.protocol import messages as m

from ..i18n import N_, NP_, _, elide, lookup, ngettext, pgettext
from ..narrator import YOU, edition_name, variant_name
from ..state import ClientState
from .choices import DOWN, ENTER, ESCAPE, LEFT, QUIT_NOW, RIGHT, UP
from .controller import Command, Download, Quit, Request, refused_text
from .screen import MIN_HEIGHT, MIN_WIDTH, Line, Row, clock, pad, rule, too_small, wrap
from .text import cells, edited, fit, safe, timer_words

# (an hour and more: a game that waits for its players: docs/CLIENT.md)
TIMERS = (None, 30, 60, 120, 300, 3600, 86400, 172800)
# The host's keys that add a bot, and its strategy (the levels of `oriflamme play`).
BOT_KEYS = {"b": "heuristic", "e": "random", "h": "ismcts"}
BOT_LEVELS = {"random": N_("easy bot"), "ismcts": N_("hard bot")}
# A room's state (the protocol's identifiers) and its variant, as said.
ROOM_STATES = {
    "waiting": N_("waiting"),
    "playing": N_("playing"),
    "finished": N_("finished"),
    "closed": N_("closed"),
}


def _variant(variant: str) -> str:
    """A variant in a room's line ("2-player")."""
    return _("2-player") if variant == "two-player" else variant_name(variant)


# The room list's columns: a variant in 9 cells, an edition in 8.
LISTED = {
    # TRANSLATORS: the room list's columns, 9 and 8 letters at most
    "standard": NP_("room list", "standard"),
    "two-player": NP_("room list", "2-player"),
    "revised": NP_("room list", "revised"),
    "first": NP_("room list", "first"),
}


def _listed(name: str) -> str:
    """A variant or an edition as the room list's column says it."""
    return lookup(LISTED, name, name)


@dataclass
class RoomForm:
    """The new-room form: each field's value."""

    name: str
    players: int = 4
    edition: str = "revised"
    turn_timer: int | None = None
    first_player: str = "random"
    private: bool = False
    field: int = 0

    FIELDS = ("name", "players", "edition", "turn timer", "first player", "private")
    # (what each field is called on screen)
    LABELS = (
        N_("name"),
        N_("players"),
        N_("edition"),
        N_("turn timer"),
        N_("first player"),
        N_("private"),
    )

    def move(self, step: int) -> None:
        self.field = (self.field + step) % len(self.FIELDS)

    def change(self, step: int) -> None:
        """The selected field's next (or previous) value."""
        f = self.FIELDS[self.field]
        if f == "players":
            self.players = 2 + (self.players - 2 + step) % 4
        elif f == "edition":
            self.edition = "first" if self.edition == "revised" else "revised"
        elif f == "turn timer":
            self.turn_timer = TIMERS[(TIMERS.index(self.turn_timer) + step) % len(TIMERS)]
        elif f == "first player":
            self.first_player = "host" if self.first_player == "random" else "random"
        elif f == "private":
            self.private = not self.private

    def values(self) -> list[str]:
        if self.players == 2:
            players = _("{count} (two-player variant)")
        else:
            players = _("{count} (standard game)")
        if self.turn_timer is None:
            timer = pgettext("turn timer", "none")
        else:
            timer = _("{time} a decision").format(time=timer_words(self.turn_timer))
        return [
            self.name or _("(the server picks one)"),
            players.format(count=self.players),
            edition_name(self.edition),
            timer,
            _("the host plays first") if self.first_player == "host" else _("random"),
            _("yes: join by invite code") if self.private else _("no: listed"),
        ]

    def message(self) -> m.CreateRoom:
        settings = m.RoomSettings.for_players(
            self.players,
            turn_timer=self.turn_timer,
            edition=self.edition,
            first_player=self.first_player,
        )
        name = self.name.strip()[:40] or None
        return m.CreateRoom(settings=settings, name=name, private=self.private or None)


@dataclass
class LobbyController:
    """The lobby screen's state and keys; see the module docstring."""

    state: ClientState
    send: Callable[[Command], None]
    server: str = ""
    name: str = ""
    rooms: tuple[m.RoomSummary, ...] = ()
    records: tuple[m.RecordSummary, ...] | None = None  # shown when not None
    games: tuple[m.MyGame, ...] | None = None  # my games: shown when not None
    selected: int = 0
    form: RoomForm | None = None
    typing: str | None = None  # what is being typed: "chat" or "invite"
    typed: str = ""
    status: str = ""
    banner: str = ""
    help: bool = False
    chat_seen: list[str] = field(default_factory=list)
    room_names: dict[int, str] = field(default_factory=dict)  # the rooms seen, by id
    rung: tuple[int, ...] = ()  # the games waiting for us when we last rang
    back_to: int | None = None  # the room of a game of ours we asked to go back to
    # The room of the game shown last, and whether it waited for us then; the
    # room of a game we stepped out of while it waited for us (no bell for
    # it), and whether `games_waiting` has named it since (its next wait,
    # once it has waited no more, rings).
    shown_last: tuple[int, bool] | None = None
    quiet: tuple[int, bool] | None = None

    def changed(self) -> bool:
        """The mirror changed: True when a game of ours waits for us that
        did not when we last looked (the app rings). The list of our games,
        if shown, is asked for again when those waiting change; a game we
        went back to that is over by then (its room `finished`: `join_room`
        took a free seat in it) is left at once, saying so."""
        waiting = self.state.games_waiting
        game, room = self.state.game, self.state.room
        if game is not None and room is not None:
            self.shown_last = (room.room, game.my_turn)
        rings = self._rings(waiting)
        if waiting != self.rung and (self.games is not None or self.state.kept):
            # (shown, it is kept current; and a kept game it no longer lists
            # is over: its record is saved, `driver`)
            self.send(Request(m.ListGames()))
        self.rung = waiting
        if self.state.ended_away:
            self.status = _("A game of yours ended while you were out: [h] your finished games")
        if self.back_to is not None and room is not None and room.room == self.back_to:
            self.back_to = None
            if room.state != "playing":
                self.send(Request(m.LeaveRoom()))
                self.status = _("That game is over: it is in your finished games ([h])")
        return rings

    def _rings(self, waiting: tuple[int, ...]) -> bool:
        """Whether `waiting` names a game that did not wait for us when we
        last rang, but the one we just stepped out of at our own turn."""
        new = set(waiting) - set(self.rung)
        if self.quiet is not None:
            room_id, seen = self.quiet
            if room_id in waiting:
                new.discard(room_id)
                self.quiet = (room_id, True)
            elif seen:
                self.quiet = None
        return bool(new)

    # ------------------------------------------------------------ answers

    def answered(self, request: m.Message, answer: m.Message) -> None:
        """The server's answer to one of our `Request`s."""
        if isinstance(answer, m.RoomList):
            self.rooms = answer.rooms
            self.room_names.update((r.room, r.name) for r in answer.rooms)
            self.selected = min(self.selected, max(0, len(self.rooms) - 1))
        elif isinstance(answer, m.RecordList):
            self.records = answer.records
            self.selected = 0
        elif isinstance(answer, m.GameList):
            if self.games is not None:  # (shown: else asked to find the games over)
                self.games = answer.games
                self.selected = min(self.selected, max(0, len(answer.games) - 1))
        elif (
            isinstance(answer, m.Error)
            and isinstance(request, m.StartGame)
            and (unready := self._unready())
        ):
            # in our words: "you", the key
            self.status = _("Not started: {why}").format(why=unready)
        elif isinstance(answer, m.Error):
            self.status = refused_text(answer.code, answer.message)
        elif isinstance(request, m.CreateRoom):
            self.status = _("Room created: add bots or wait for players, then [r] ready")
        elif isinstance(request, m.JoinRoom | m.Spectate):
            self.status = ""
            self.games = None
        elif isinstance(request, m.LeaveRoom) and request.keep_seat:
            self.status = _("Your seat is kept: [m] my games takes you back to it")
            if self.shown_last is not None and self.shown_last[1]:
                self.quiet = (self.shown_last[0], False)  # (we know it waits for us)
        if isinstance(request, m.CreateRoom | m.JoinRoom | m.Spectate | m.LeaveRoom) and isinstance(
            answer, m.Ok
        ):
            # The list changed with us (a room made, a seat taken): it shows so at once.
            self.send(Request(m.ListRooms()))

    # ------------------------------------------------------------ keys

    def key(self, key: str) -> None:
        self.status = ""
        if key == QUIT_NOW:
            self.send(Quit())
            return
        if self.help:
            self.help = False
            return
        if self.typing is not None:
            self._type(key)
            return
        if self.form is not None:
            self._form_key(key)
            return
        if key == "?":
            self.help = True
        elif key == "/":
            self.typing, self.typed = "chat", ""
        elif key == "q":
            self.send(Quit())
        elif self.records is not None:
            self._records_key(key)
        elif self.games is not None:
            self._games_key(key)
        elif self.state.room is not None:
            self._room_key(key)
        else:
            self._lobby_key(key)

    def _lobby_key(self, key: str) -> None:
        room = self.rooms[self.selected] if self.rooms else None
        if key in (UP, DOWN):
            if self.rooms:
                step = -1 if key == UP else 1
                self.selected = max(0, min(len(self.rooms) - 1, self.selected + step))
        elif key in ("j", ENTER) and room is not None:
            self.send(Request(m.JoinRoom(room=room.room)))
            self.status = _('Joining "{room}"…').format(room=safe(room.name))
        elif key == "s" and room is not None:
            self.send(Request(m.Spectate(room=room.room)))
            self.status = _('Watching "{room}"…').format(room=safe(room.name))
        elif key in ("j", "s", ENTER):
            self.status = _("No room to choose: [n] makes one")
        elif key == "n":
            named = elide(_("{player}'s room").format(player=self.name))
            self.form = RoomForm(name=named[:40] if self.name else "")
        elif key == "c":
            self.typing, self.typed = "invite", ""
        elif key == "h":
            self.records = ()
            self.send(Request(m.ListRecords()))
        elif key == "m":
            self.games = ()
            self.send(Request(m.ListGames()))
        elif key == "r":
            self.send(Request(m.ListRooms()))
        else:
            self.status = _("{key} does nothing here: the keys are listed at the bottom").format(
                key=key
            )

    def _room_key(self, key: str) -> None:
        room = self.state.room
        assert room is not None
        me = room.seat
        host = room.host == self.state.player
        seat = room.seats[me] if me is not None else None
        if key == "l":
            self.send(Request(m.LeaveRoom()))
        elif key == "r" and seat is not None:
            self.send(Request(m.Ready(ready=not seat.ready)))
        elif key in ("b", "e", "h", "x", "g") and not host:
            self.status = _("Only the host can do that")
        elif key in BOT_KEYS:
            self.send(Request(m.AddBot(strategy=BOT_KEYS[key])))
        elif key == "x":
            bots = [s.seat for s in room.seats if s.bot is not None]
            if bots:
                self.send(Request(m.RemoveBot(seat=bots[-1])))
            else:
                self.status = _("No bot to remove")
        elif key == "g" and any(s.name is None for s in room.seats):
            self.status = _("Every seat must be taken first: [b] adds a bot")
        elif key == "g" and (unready := self._unready()):
            self.status = unready[0].upper() + unready[1:]
        elif key == "g":
            self.send(Request(m.StartGame()))
        else:
            self.status = _("{key} does nothing here: the keys are listed at the bottom").format(
                key=key
            )

    def _unready(self) -> str:
        """Who is not ready yet, in our words ("you": with the key that says
        you are); empty when everyone is."""
        room = self.state.room
        if room is None:
            return ""
        waiting = [s for s in room.seats if s.name is not None and s.bot is None and not s.ready]
        me = any(s.seat == room.seat for s in waiting)
        others = [safe(s.name or "", 14) for s in waiting if s.seat != room.seat]
        if me and others:
            return _("you are not ready (press r), nor {players}").format(players=", ".join(others))
        if me:
            return _("you are not ready: press r, then g to start")
        if others:
            return _("not everyone is ready: {players} (waiting for them)").format(
                players=", ".join(others)
            )
        return ""

    def _records_key(self, key: str) -> None:
        records = self.records or ()
        if key == ESCAPE or key == "h":
            self.records = None
        elif key in (UP, DOWN) and records:
            step = -1 if key == UP else 1
            self.selected = max(0, min(len(records) - 1, self.selected + step))
        elif key in ("d", ENTER) and records:
            record = records[self.selected]
            self.send(Download(record.record_id))
            self.status = _("Downloading {record}…").format(record=record.record_id)
        else:
            self.status = _(RECORD_KEYS)

    def _games_key(self, key: str) -> None:
        games = self.games or ()
        chosen = games[self.selected] if games else None
        if key in (ESCAPE, "m"):
            self.games = None
        elif key in (UP, DOWN) and games:
            step = -1 if key == UP else 1
            self.selected = max(0, min(len(games) - 1, self.selected + step))
        elif key in ("j", ENTER) and chosen is not None:
            self.send(Request(m.JoinRoom(room=chosen.room)))
            self.back_to = chosen.room
            self.status = _('Back to "{room}"…').format(room=safe(chosen.name))
        elif key == "r":
            self.send(Request(m.ListGames()))
        else:
            self.status = _(GAME_KEYS)

    def _form_key(self, key: str) -> None:
        form = self.form
        assert form is not None
        if key == ESCAPE:
            self.form = None
        elif key == ENTER:
            self.send(Request(form.message()))
            self.form = None
        elif key in (UP, DOWN):
            form.move(-1 if key == UP else 1)
        elif key in (LEFT, RIGHT):
            form.change(-1 if key == LEFT else 1)
        elif form.FIELDS[form.field] == "name":
            form.name = edited(form.name, key, 40)
        elif key == " ":
            form.change(1)

    def _type(self, key: str) -> None:
        if key == ESCAPE:
            self.typing = None
        elif key == ENTER:
            text, what = self.typed.strip(), self.typing
            self.typing = None
            if text and what == "chat":
                self.send(Request(m.Chat(text=text[:500])))
            elif text and what == "invite":
                self.send(Request(m.JoinRoom(invite=text)))
        else:
            self.typed = edited(self.typed, key, 200)

    # ------------------------------------------------------------ drawing

    def lines(self, width: int, height: int) -> list[Line]:
        if width < MIN_WIDTH or height < MIN_HEIGHT:
            return too_small(width, height)
        head = f"Oriflamme · {self.server}"
        if self.name:
            head += " · " + _("you are {name}").format(name=safe(self.name, 32))
        help_key = _("? help")
        title = Row(width).add(fit(head, width - cells(help_key) - 2), "class:title")
        title.to(width - cells(help_key)).add(help_key, "class:title")  # (never under the head)
        lines: list[Line] = [title.line(style="class:title")]
        if self.help:
            lines += [Row(width).add(" " + _(t) if t else "").line() for t in _HELP]
            return pad(lines, width, height)
        if self.form is not None:
            lines += self._form_lines(width)
        elif self.records is not None:
            lines += self._record_lines(width, height - 4)
        elif self.games is not None:
            lines += self._game_lines(width, height - 4)
        else:
            top = max(3, (height - 6) // 2 - 1) if self.state.room is None else 4
            lines += self._room_list(width, top)
            lines += self._room_and_chat(width, height - len(lines) - 3)
        lines = lines[: height - 3]
        while len(lines) < height - 3:
            lines.append(Row(width).line())
        lines.append(rule(width))
        lines.append(self._status_line(width))
        lines.append(self._keys_line(width))
        return lines

    def _room_list(self, width: int, height: int) -> list[Line]:
        out = [rule(width, _("Rooms ({count})").format(count=len(self.rooms)))]
        if not self.rooms:
            out.append(Row(width).add("   " + _("No room yet: [n] makes one.")).line())
            return out
        first = max(0, min(self.selected - height // 2, len(self.rooms) - height))
        for i, r in enumerate(self.rooms[first : first + height], start=first):
            s = r.settings
            if s.turn_timer is None:
                timer = _("no timer")
            else:
                timer = _("timer {time}").format(time=timer_words(s.turn_timer))
            mark = " ▸ " if i == self.selected and self.state.room is None else "   "
            text = (
                f"{fit(safe(r.name), 14)} {r.seated}/{s.players}  {fit(_listed(s.variant), 9)}"
                f" {fit(_listed(s.edition), 8)} {fit(timer, 13)}"
                f" {fit(lookup(ROOM_STATES, r.state, r.state), 8)} "
                + _("host {player}").format(player=safe(r.host, 12))
            )
            style = "class:highlight" if mark.strip() else ""
            out.append(Row(width).add(mark, "class:turn").add(text, style).line())
        return out

    def _room_and_chat(self, width: int, height: int) -> list[Line]:
        left_width = 46
        right_width = width - left_width - 1
        room = self.state.room
        if room is None:
            title = _("Not in a room")
            left = ["   " + part for part in wrap(_(NOT_IN_A_ROOM), left_width - 4)]
            if self.state.games_waiting:
                left = [f"   {self.waiting_text()}: [m]", *left]
        else:
            # (the invite code whole: the name is cut to leave it room)
            title = _('Room "{room}"').format(room=safe(room.name, 14 if room.invite else 20))
            if room.invite:
                title += " · " + _("invite {code}").format(code=room.invite)
            settings = room.settings
            if settings.turn_timer is None:
                timer = _("no timer")
            else:
                timer = timer_words(settings.turn_timer)
            first = _("host first") if settings.first_player == "host" else _("random first")
            said = (
                f"{_variant(settings.variant)}, {edition_name(settings.edition)}, {timer}, {first}"
            )
            left = ["   " + part for part in wrap(said, left_width - 4)]
            for seat in room.seats:
                if seat.name is None:
                    left.append(f"   {seat.seat + 1} " + _("(open seat)"))
                    continue
                who = _(YOU) if seat.seat == room.seat else safe(seat.name, 14)
                if seat.bot:
                    what = [lookup(BOT_LEVELS, seat.bot, _("bot"))]
                else:
                    what = [_("ready") if seat.ready else _("not ready")]
                if seat.player is not None and seat.player == room.host:
                    what.append(_("host"))
                if not seat.connected:
                    what.append(_("away"))
                if seat.rating is not None:  # (a player with a key, rated here: first)
                    what.insert(0, f"{seat.rating / 100:.1f}")
                elif seat.bot is None and seat.key is None and seat.seat != room.seat:
                    what.append(_("no key"))  # (another's name, which anyone could have typed)
                left.append(f"   {seat.seat + 1} {fit(who, 14)} {', '.join(what)}")
            if room.spectators:
                said = ngettext("and {count} watching", "and {count} watching", room.spectators)
                left.append("   " + said.format(count=room.spectators))
            if room.seat is None:
                left.append("   " + _("You are watching this room."))
        chat = self._chat_lines()
        chat = chat[-max(0, height - 1) :] if height > 1 else []
        where = _("Chat · the room") if room is not None else _("Chat · the lobby")
        out = [rule(left_width, title) + [("class:rule", " ")] + rule(right_width, where)]
        for i in range(max(0, height - 1)):
            text = left[i] if i < len(left) else ""
            said = chat[i] if i < len(chat) else ""
            out.append(
                [
                    ("", fit(text, left_width)),
                    ("class:rule", "│"),
                    ("class:chat", fit(said, right_width)),
                ]
            )
        return out

    def _chat_lines(self) -> list[str]:
        """The chat as the panel shows it: what was said where you are (your
        room, or the lobby) as it is; a line said elsewhere (in a room you
        have left, or in the lobby before you joined) marked with where."""
        room = self.state.room
        if room is not None:
            self.room_names[room.room] = room.name
        here = room.room if room is not None else None
        out = []
        for c in self.state.chat:
            said = (
                f"{safe(c.name, 14)}: {safe(c.text)}"
                if c.player is not None
                else f"* {safe(c.text)}"
            )
            if c.room != here:
                if c.room:
                    elsewhere = self.room_names.get(
                        c.room, _("room {number}").format(number=c.room)
                    )
                else:
                    elsewhere = _("lobby")
                said = f"[{safe(elsewhere, 12)}] {said}"
            out.append(" " + said)
        return out

    def _form_lines(self, width: int) -> list[Line]:
        form = self.form
        assert form is not None
        title = _("New room · ↑↓ a field, ←→ its value, Enter creates, Esc cancels")
        out = [rule(width, title)]
        column = max(14, *(cells(_(label)) + 2 for label in form.LABELS))
        for i, (named, value) in enumerate(zip(form.FIELDS, form.values(), strict=True)):
            mark = " ▸ " if i == form.field else "   "
            style = "class:highlight" if i == form.field else ""
            arrows = "  ← →" if named != "name" else "  " + _("(type)")
            out.append(
                Row(width)
                .add(mark, "class:turn")
                .add(fit(_(form.LABELS[i]), column), "class:key")
                .add(value, style)
                .add(arrows if i == form.field else "", "class:dim")
                .line()
            )
        return out

    def _record_lines(self, width: int, height: int) -> list[Line]:
        records = self.records or ()
        out = [rule(width, _("Your finished games ({count})").format(count=len(records)))]
        if not records:
            out.append(Row(width).add("   " + _("None yet (or the list is on its way).")).line())
        you, won = _("you"), " " + _("(won)")
        for i, r in enumerate(records[: max(1, height - 1)]):
            scores = ", ".join(
                f"{you if seat == r.seat else safe(n, 10)} {s}" + (won if seat in r.winners else "")
                for seat, (n, s) in enumerate(zip(r.names, r.scores, strict=False))
            )
            mark = " ▸ " if i == self.selected else "   "
            # (a game played to its end has a winner; one ended by vote has none)
            if r.valid:
                valid = ""
            elif not r.winners:
                valid = "  " + _("(ended by vote)")
            else:
                valid = "  " + _("(not valid: a seat forfeited)")
            out.append(
                Row(width)
                .add(mark, "class:turn")
                .add(f"{fit(safe(r.room_name), 14)} · {scores}{valid}")
                .line()
            )
        return out

    def waiting_text(self) -> str:
        """ "Your turn in 2 games" (empty when none waits for us)."""
        n = len(self.state.games_waiting)
        if not n:
            return ""
        return ngettext("Your turn in {count} game", "Your turn in {count} games", n).format(
            count=n
        )

    def _game_lines(self, width: int, height: int) -> list[Line]:
        games = self.games or ()
        said = _("My games ({count}) · Enter takes you back to one").format(count=len(games))
        out = [rule(width, said)]
        if not games:
            out.append(Row(width).add("   " + _("None (or the list is on its way).")).line())
        first = max(0, min(self.selected - (height - 1) // 2, len(games) - (height - 1)))
        for i, g in enumerate(games[first : first + max(1, height - 1)], start=first):
            if g.seat in g.waiting_for:
                turn, style = _("your turn"), "class:turn"
            elif g.waiting_for:
                names = [safe(g.names[s], 10) for s in g.waiting_for if s < len(g.names)]
                if len(names) > 2:  # (the final reveal: every seat at once)
                    names = [*names[:2], _("{count} more").format(count=len(names) - 2)]
                turn, style = _("waiting for {players}").format(players=", ".join(names)), ""
            else:
                turn, style = _("the server plays"), ""
            left = "" if g.time_left is None else f"  ⏱ {clock(g.time_left // 1000)}"
            where = " " + _("(this room)") if g.here else ""
            mark = " ▸ " if i == self.selected else "   "
            at = _("round {round}").format(round=g.round)
            out.append(
                Row(width)
                .add(mark, "class:turn")
                .add(f"{fit(safe(g.name), 16)} #{g.room}{where} · {at} · ")
                .add(turn, style)
                .add(left, "class:dim")
                .line()
            )
        return out

    def _status_line(self, width: int) -> Line:
        row = Row(width)
        if self.typing is not None:
            label = _("say:") if self.typing == "chat" else _("invite code:")
            return row.add(" " + label + " ", "class:key").add(self.typed + "▏").line()
        if self.banner:
            return row.add(" " + self.banner, "class:banner").line()
        if not self.status and self.state.room is not None and self.state.games_waiting:
            elsewhere = " " + _("{waiting} elsewhere: [l] leave this room, then [m]").format(
                waiting=self.waiting_text()
            )
            return row.add(elsewhere, "class:status").line()
        return row.add(" " + self.status, "class:status").line()

    def _keys_line(self, width: int) -> Line:
        if self.form is not None:
            keys = _("[Enter] create  [Esc] cancel")
        elif self.records is not None:
            keys = _(RECORD_KEYS)
        elif self.games is not None:
            keys = _(GAME_KEYS)
        elif self.state.room is not None:
            room = self.state.room
            if room.seat is None:
                keys = _("[l] leave  [/] chat  [q] quit")
            elif room.host == self.state.player:
                keys = _(
                    "[r] ready  [b/e/h] bot  [x] no bot  [g] start  [l] leave  [/] chat  [q] quit"
                )
            else:
                keys = _("[r] ready  [l] leave  [/] chat  [q] quit")
        else:
            keys = _(
                "[j] join  [s] watch  [n] new  [c] invite  [m] my games  [h] played  [/] chat  [q] quit"
            )
        row = Row(width)
        for part in keys.split("  "):
            key, __, label = part.partition("] ")
            row.add(" " + key + "]", "class:key").add(" " + label)
        return row.line()


RECORD_KEYS = N_("[↑↓] choose  [d] download the record  [Esc] back")
GAME_KEYS = N_("[↑↓] choose  [Enter] back to that game  [r] refresh  [Esc] back")
NOT_IN_A_ROOM = N_(
    "↑↓ choose a room, then [j] join or [s] watch it as a spectator."
    " [n] a new room, [c] a private room's invite code."
)
# TRANSLATORS: the lobby's help, a line each (at most 78 letters); the keys
# (j, s, n, c, m, h, d, r, l, b, e, x, g) stay as they are
_HELP = [
    N_("The lobby lists the server's open rooms; a room seats 2 to 5."),
    "",
    N_("↑ ↓       choose a room          j  join it      s  watch it (spectate)"),
    N_("n         a new room: seats, edition, turn timer, first player, private"),
    N_("c         join a private room by its invite code (its host shares it)"),
    N_("m         my games: those whose seats you kept ([L] in a game); Enter goes back"),
    N_("h         your finished games; d downloads one (oriflamme verify checks it)"),
    N_("/         chat (in a room: with the room; else with the lobby)"),
    "",
    N_("In a room: r ready (or not), l leave. The host: b add a bot (e: an easy one,"),
    N_("h: a hard one that searches), x remove the last bot, g start once everyone"),
    N_("is ready."),
    "",
    N_("Any key closes this help."),
]

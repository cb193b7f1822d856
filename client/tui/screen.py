"""The game screen as lines of styled text, from what the session knows.

How this works
--------------
`render(scene, width, height)` draws one `Scene` (the position as our seat
sees it, the names, the log, the pending decision and our `Chooser`) into
exactly `height` lines of exactly `width` cells, each line a list of
``(style, text)`` fragments as prompt_toolkit's formatted text takes them.
It is a pure function: the tests call it with any position and size, and
the app calls it at every redraw. Styles are class names (``class:owner.red``,
``class:highlight``...); the app's style sheet gives them colours, or none
in monochrome, so meaning never rests on colour alone: every player also
has an initial, your own cards say "You", the card being resolved has a
``▶``, and a card changed since our last decision a ``*`` (`Scene.changed`,
which the controller works out: this module only draws it).

Layout, top to bottom: the title line (room, round, first player, the
clock, help key); the Influence Queue, drawn in the direction chosen (the
numbers are the resolution order and the keys for choosing), in as few rows
as the width allows, folded as one line (`queue_place`); players and
log side by side; your hand; the decision (what you can press), or who is
thinking; the status line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from oriflamme.engine import FAMILY_NAMES, Card

from ..i18n import N_, NP_, _, lookup, ngettext, pgettext
from ..narrator import YOU, card_name, edition_name, family_name, family_short, kind_name, names_and
from ..view import QueueCard, TableView
from .choices import KEY_SYMBOLS, Chooser
from .text import cells, cut, fit
from .words import ABILITIES

Fragment = tuple[str, str]
Line = list[Fragment]

MIN_WIDTH, MIN_HEIGHT = 80, 24
# A card in the queue is a cell: its mark (▶ being resolved, * changed), its
# number, a space, its name (at least MIN_LABEL cells: "(Heir)"), a gap; and
# under them its owner. A cell is at most MAX_CELL wide.
MIN_LABEL, MAX_CELL = 6, 24
# A card's name in a queue cell too narrow for the full name: the first of
# these that fits (docs/CLIENT.md has the table), each language's own,
# separated by "|". The shortest is at most 4 cells: in parentheses, our own
# face-down card's name fits MIN_LABEL (a test checks each catalog).
QUEUE_NAMES = {
    # TRANSLATORS: shorter forms of a card's name for the queue, longest
    # first, separated by |; the last at most 4 letters
    "archer": NP_("queue", "Arch"),
    "soldier": NP_("queue", "Sold"),
    "spy": NP_("queue", "Spy"),
    "heir": NP_("queue", "Heir"),
    "lord": NP_("queue", "Lord"),
    "shapeshifter": NP_("queue", "Shape|Shap"),
    "assassination": NP_("queue", "Assassin|Assa"),
    "royal_decree": NP_("queue", "Decree|Decr"),
    "ambush": NP_("queue", "Amb"),
    "conspiracy": NP_("queue", "Consp|Cons"),
}
CHANGED = "*"  # the mark of a card changed since our last decision
ROUNDS = 6
# A card's name in the lists of cards out: at most 10 cells.
SHORT_NAMES = {
    # TRANSLATORS: a card's name in a list of cards, at most 10 letters
    "archer": NP_("short", "Archer"),
    "soldier": NP_("short", "Soldier"),
    "spy": NP_("short", "Spy"),
    "heir": NP_("short", "Heir"),
    "lord": NP_("short", "Lord"),
    "shapeshifter": NP_("short", "Shapeshift"),
    "assassination": NP_("short", "Assassin"),
    "royal_decree": NP_("short", "Decree"),
    "ambush": NP_("short", "Ambush"),
    "conspiracy": NP_("short", "Conspiracy"),
}
BACK = "▒▒▒▒▒▒▒"
DAY = 86400  # seconds
WARN_AT = 10  # seconds left to a decision of ours: the bell rings, the clock stands out

# What a player is doing while the others wait: "Waiting for Bo {doing}"
WAITING = {
    "direction": N_("to choose the direction"),
    "place": N_("to place a card"),
    "reveal": N_("to reveal or keep a card"),
    "open": N_("to open an eliminated card"),
    "eliminate": N_("to choose a card to eliminate"),
    "steal": N_("to choose whom to steal from"),
    "copy": N_("to choose a card to copy"),
    "move_card": N_("to choose a card to move"),
    "move_to": N_("to choose where the card goes"),
}


@dataclass
class EndSummary:
    """The end of a game, as the screen shows it."""

    scores: Sequence[int]
    winners: Sequence[int]
    verified: str  # one line: the verification result
    saved: str = ""  # where the record was saved, or why not
    keys: str = N_("[a] play again  [q] quit")
    ended_in: int | None = None  # a game its players ended by vote: the round it stopped in


@dataclass
class Scene:
    """Everything the game screen shows; the app fills it from the session."""

    view: TableView | None
    names: Sequence[str]
    seat: int | None = None
    title: str = "Oriflamme"
    log: Sequence[str] = ()
    decision_seat: int | None = None
    decision_kind: str | None = None
    seconds_left: int | None = None
    chooser: Chooser | None = None
    status: str = ""
    banner: str = ""  # the connection, when it is not well
    end: EndSummary | None = None
    chat_input: str | None = None
    help: bool = False
    stand_ins: frozenset[int] = field(default_factory=frozenset)
    reveal_all: bool = False  # a finished game's replay: every card is known
    help_key: str = N_("? help")
    hand_of: int | None = None  # whose hand to show when `seat` is None
    footer: Sequence[Line] = ()  # lines in place of the decision (a replay's)
    hint: bool = True  # the keys that always work, on the status line (not while asked)
    log_end: int | None = None  # the log scrolled back: shown up to this line
    outs: bool = False  # every player's cards out, in full, in place of the game
    # Since our last decision (a spectator's: in the last turn): the cards
    # changed (pids: placed, revealed, Influence gained, moved, uncovered),
    # marked in the queue; and the cards gone from it, by name.
    changed: frozenset[int] = frozenset()
    gone: Sequence[str] = ()
    vote: str = ""  # a vote to end the game: who is gone, who voted (under the players)


class Row:
    """One line being built, cut or padded to `width` cells."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.used = 0
        self.fragments: Line = []

    def add(self, text: str, style: str = "") -> Row:
        room = self.width - self.used
        if room <= 0 or not text:
            return self
        text = cut(text, room)
        self.fragments.append((style, text))
        self.used += cells(text)
        return self

    def to(self, column: int) -> Row:
        return self.add(" " * max(0, column - self.used))

    def line(self, fill: str = " ", style: str = "") -> Line:
        self.add(fill * (self.width - self.used), style)
        return self.fragments


def rule(width: int, title: str = "", style: str = "class:rule") -> Line:
    row = Row(width)
    if title:
        row.add("─ ", style).add(title, style + " class:rule.title").add(" ", style)
    return row.line("─", style)


def who(names: Sequence[str], seat: int | None, me: int | None) -> str:
    if seat is None:
        return "?"
    if seat == me:
        return _(YOU)
    return names[seat] if seat < len(names) else _("seat {number}").format(number=seat + 1)


def initials(names: Sequence[str]) -> list[str]:
    """One letter per seat, distinct, the same on every player's screen (it
    does not depend on who looks): the name's first letter where it is free,
    else its next letter, else a free letter.

    >>> initials(["Ann", "Bot 1", "Bot 2", "Bot 3"])
    ['A', 'B', 'O', 'T']
    """
    taken: set[str] = set()
    out = []
    for name in names:
        # letters only: a digit would read as a queue position
        chars = [c.upper() for c in name if c.isalpha() and c.isascii()]
        wanted = chars + list("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
        mark = next(c for c in wanted if c not in taken)
        taken.add(mark)
        out.append(mark)
    return out


def owner_style(view: TableView | None, seat: int) -> str:
    return f"class:owner.{'none' if view is None else view.family_of(seat)}"


def clock(seconds: int | None) -> str:
    if seconds is None:
        return ""
    seconds = max(0, seconds)
    if seconds >= DAY:  # (a game of days: the hours matter, not the seconds)
        return _("{days}d {hours}h").format(days=seconds // DAY, hours=seconds % DAY // 3600)
    if seconds >= 3600:
        minutes = f"{seconds % 3600 // 60:02d}"
        return _("{hours}h {minutes}m").format(hours=seconds // 3600, minutes=minutes)
    return f"{seconds // 60}:{seconds % 60:02d}"


def render(scene: Scene, width: int, height: int) -> list[Line]:
    """The screen: `height` lines of `width` cells (see the module docstring)."""
    if width < MIN_WIDTH or height < MIN_HEIGHT:
        return too_small(width, height)
    if scene.help:
        edition = "revised" if scene.view is None else scene.view.edition
        return pad(_help(width, edition), width, height)
    view = scene.view
    if scene.outs and view is not None:
        return pad(_outs(scene, view, width), width, height)
    lines: list[Line] = [_title(scene, width)]
    if view is None:
        lines.append(rule(width))
        lines.append(Row(width).add(" " + _("Waiting for the game to begin…")).line())
        lines += _bottom(scene, width)
        return pad(lines, width, height)
    queue = _queue(scene, view, width)
    bottom = _bottom(scene, width)
    hand = _hand(scene, view, width)
    middle = height - len(lines) - len(queue) - len(bottom) - len(hand)
    gone = _gone(scene, width, middle)
    middle -= len(gone)
    lines += queue + gone + _panels(scene, view, width, middle) + hand + bottom
    return pad(lines, width, height)


def pad(lines: list[Line], width: int, height: int) -> list[Line]:
    lines = lines[:height]
    while len(lines) < height:
        lines.append([("", " " * width)])
    return lines


def too_small(width: int, height: int) -> list[Line]:
    text = [
        _("This terminal is {width}x{height}.").format(width=width, height=height),
        _("Oriflamme needs at least {width}x{height}:").format(width=MIN_WIDTH, height=MIN_HEIGHT),
        _("make the window larger."),
        _("(q quits)"),
    ]
    lines = [Row(width).add(t).line() for t in text]
    return pad(lines, width, height)


def _title(scene: Scene, width: int) -> Line:
    view = scene.view
    row = Row(width).add(scene.title, "class:title")
    if view is not None:
        first = who(scene.names, view.first_player, scene.seat)
        said = _(" · round {round} of {rounds} · first: {player}")
        row.add(said.format(round=view.round, rounds=ROUNDS, player=first), "class:title")
    clock_text = "" if scene.seconds_left is None else f"⏱ {clock(scene.seconds_left)}  "
    help_key = _(scene.help_key)
    right = clock_text + help_key
    row.to(width - cells(right))
    # Our own time nearly out: the clock stands out (the app rings once too).
    row.add(clock_text, "class:banner" if hurried(scene) else "class:title")
    row.add(help_key, "class:title")
    return row.line(style="class:title")


def hurried(scene: Scene) -> bool:
    """Our own decision, with `WARN_AT` seconds left or fewer."""
    left = scene.seconds_left
    return scene.chooser is not None and left is not None and left <= WARN_AT


def family_style(card: QueueCard) -> str:
    """The style of a card's family (its colour, whoever sees it)."""
    return f"class:owner.{card.family}"


def _card_text(card: QueueCard, seat: int | None, reveal_all: bool, room: int) -> tuple[str, str]:
    """A card in the queue in at most `room` cells: its label and style.

    >>> from oriflamme.engine import CARDS, Kind
    >>> shapeshifter = QueueCard(0, 1, CARDS[0][Kind.SHAPESHIFTER], True, 0)
    >>> _card_text(shapeshifter, 0, False, 8)
    ('Shape', 'class:card.up')
    >>> _card_text(QueueCard(1, 0, CARDS[0][Kind.CONSPIRACY], False, 0), 0, False, 6)
    ('(Cons)', 'class:card.mine')
    """
    kind = label_of(card.card)
    if kind is None or not (card.face_up or card.owner == seat or reveal_all):
        return BACK[:room], family_style(card) + " class:card.back"
    own = not card.face_up  # face down, and known: ours, or the game is over
    forms = queue_names(kind)
    labels = [f"({form})" if own else form for form in forms]
    label = next((text for text in labels if cells(text) <= room), labels[-1])
    return label, "class:card.mine" if own else "class:card.up"


def queue_names(kind: str) -> list[str]:
    """The forms of a kind's name in the queue, the longest first."""
    name = kind_name(kind)
    shorter = lookup(QUEUE_NAMES, kind, name).split("|")
    return [name, *(form for form in shorter if form != name)]


def _tokens(n: int) -> str:
    return "◆" * n if n <= 3 else f"◆×{n}"


def queue_grid(count: int, width: int) -> tuple[int, int]:
    """The queue's cards a row and the width of a cell, for `count` cards
    in `width` columns: as few rows as cells of at least `MIN_LABEL` allow,
    the cards shared evenly between them, each cell as wide as the row
    leaves (up to `MAX_CELL`). The last cell of a row needs no gap.

    >>> queue_grid(11, 120), queue_grid(11, 80), queue_grid(3, 80)
    ((11, 11), (6, 13), (3, 24))
    """
    digits = len(str(max(count, 1)))
    least = 1 + digits + 1 + MIN_LABEL + 1  # mark, number, space, name, gap
    rows = -(-count // max(1, (width + 1) // least))
    per_row = -(-count // max(rows, 1))
    return per_row, min(MAX_CELL, (width + 1) // max(per_row, 1))


def queue_place(i: int, per_row: int, reverse: bool) -> tuple[int, int]:
    """The row and the column (in cells) of the queue's card `i` (0: the
    first to resolve). The queue is one line folded into rows: the first
    row goes in the direction of resolution, and each next row goes on
    under the end of the one above, back the other way, so that cards next
    to each other in the queue are next to each other on the screen.

    >>> [queue_place(i, 3, False) for i in range(5)]
    [(0, 0), (0, 1), (0, 2), (1, 2), (1, 1)]
    >>> [queue_place(i, 3, True) for i in range(5)]
    [(0, 2), (0, 1), (0, 0), (1, 0), (1, 1)]
    """
    row, along = divmod(i, per_row)
    rightwards = (row % 2 == 0) != reverse
    return row, along if rightwards else per_row - 1 - along


def _queue(scene: Scene, view: TableView, width: int) -> list[Line]:
    """The Influence Queue: its rule, then two lines a row of cards (see
    `queue_grid`, `queue_place`, `_queue_card`)."""
    queue = [slot for slot in view.queue if slot]
    reverse = view.direction == "right-to-left"
    lines = [rule(width, _queue_title(scene, view, width))]
    if not queue:
        said = _("(empty: the first card goes in the middle)")
        lines.append(Row(width).add("   " + said).line())
        return lines
    per_row, cell = queue_grid(len(queue), width)
    rows: dict[int, dict[int, int]] = {}  # row -> column -> card
    for i in range(len(queue)):
        row, column = queue_place(i, per_row, reverse)
        rows.setdefault(row, {})[column] = i
    digits = len(str(len(queue)))
    for row in sorted(rows):
        top, below = Row(width), Row(width)
        for column, i in sorted(rows[row].items()):
            top.to(column * cell)
            below.to(column * cell)
            _queue_card(scene, view, queue[i], i, (top, below), cell, digits)
        lines += [top.line(), below.line()]
    return lines


def _queue_title(scene: Scene, view: TableView, width: int) -> str:
    """The queue's rule: the order of resolution, and what `*` means when a
    card has it (if the rule has room)."""
    direction = view.direction
    if direction is None:
        title = _("Influence Queue · resolution order not chosen yet")
    elif direction == "right-to-left":
        title = _("Influence Queue · 1 resolves first, right to left")
    else:
        title = _("Influence Queue · 1 resolves first, left to right")
    if scene.changed:
        legend = " · " + (
            _("{mark} new in the last turn")
            if scene.seat is None
            else _("{mark} new since your turn")
        ).format(mark=CHANGED)
        if cells(title + legend) + 4 <= width:
            title += legend
    return title


def _queue_card(
    scene: Scene,
    view: TableView,
    slot: Sequence[QueueCard],
    i: int,
    rows: tuple[Row, Row],
    cell: int,
    digits: int,
) -> None:
    """Card `i` of the queue (the top of `slot`) in a cell of `cell` columns:
    on the top row its mark, number and name, on the row below its owner,
    Influence and stack. A name is in full, or a short form (`QUEUE_NAMES`),
    never cut; the cell ends with a gap, so that nothing runs into the next
    card's mark."""
    top_row, below_row = rows
    card = slot[-1]
    resolving = view.resolving is not None and view.resolving.index == i
    changed = card.pid in scene.changed
    chosen = scene.chooser is not None and i + 1 in scene.chooser.highlighted
    number = str(i + 1)
    top_row.add(" " * (digits - len(number)))  # the mark right before the number
    if resolving:  # (the card acting now: the log says what changed it)
        top_row.add("▶", "class:resolving")
    elif changed:
        top_row.add(CHANGED, "class:changed")
    else:
        top_row.add(" ", "class:resolving")
    number_style = "class:highlight" if chosen else "class:number"
    if resolving:
        number_style += " class:resolving"
    top_row.add(number, number_style).add(" ")
    label, style = _card_text(card, scene.seat, scene.reveal_all, cell - digits - 3)
    style += " class:changed" if changed else ""
    top_row.add(label, style + (" class:highlight" if chosen else ""))
    below_row.add("  ")  # (under the number's last digit)
    extra = " ".join(
        part
        for part in (_tokens(card.tokens) if card.tokens else "", f"×{len(slot)}")
        if part and part != "×1"
    )
    room = cell - 3 - (cells(extra) + 1 if extra else 0)
    below_row.add(_owner_tag(scene, view, card, room), family_style(card))
    below_row.add((" " + extra) if extra else "", "class:tokens")


def _owner_tag(scene: Scene, view: TableView, card: QueueCard, room: int) -> str:
    """Who owns a card of the queue, in `room` cells: the letter and the
    name ("You" for ours), or in the 2-player variant the family ("B
    green", "B gre"); where that does not fit, the letter alone (a name cut
    short would say nothing: "Bot…" is Bot 1 or Bot 3).

    >>> from oriflamme.engine import BACKS, new_game
    >>> scene = Scene(view=None, names=["Ann", "Bo", "Tobias"], seat=0)
    >>> view, card = TableView.of(new_game(3, seed=1), 0), QueueCard(0, 2, BACKS[2], False, 0)
    >>> _owner_tag(scene, view, card, 8), _owner_tag(scene, view, card, 7)
    ('T Tobias', 'T')
    """
    owner = card.owner
    letter = initials(scene.names)[owner]
    if view.two_player:  # two families each: say which
        named = [f"{letter} {family_name(card.family)}", f"{letter} {family_short(card.family)}"]
    else:
        named = [f"{letter} {who(scene.names, owner, scene.seat)}"]
    return next((tag for tag in named if cells(tag) <= room), letter)


def _gone(scene: Scene, width: int, middle: int) -> list[Line]:
    """The cards gone from the queue since our last decision (eliminated,
    discarded), on a line under it: only when the players and the log keep
    `middle` lines for their rule, a row a player and two lines more."""
    if not scene.gone or middle - 1 < len(scene.names) + 3:
        return []
    since = _("gone in the last turn:") if scene.seat is None else _("gone since your turn:")
    label = f"  {since} "
    names = _names_in(width - cells(label) - 1, list(scene.gone), ", ")
    return [Row(width).add(label + names, "class:dim").line()]


def _panels(scene: Scene, view: TableView, width: int, height: int) -> list[Line]:
    """Players (left) and the log (right), `height` lines: with one line,
    the players alone (compacted)."""
    if height <= 1:
        return _compact_players(scene, view, width, height)
    left_width, right_width = _panel_widths(width)
    left, complete = _players(scene, view, left_width, height - 1)
    log_lines, log_title = _log(scene.log, right_width, height - 1, scene.log_end)
    if len(scene.names) > height - 1:
        players = _("Players · [o] in full")
    else:
        players = _("Players") if complete else _("Players · [o] every card out")
    out = [rule(left_width, players) + [("class:rule", " ")] + rule(right_width, log_title)]
    for i in range(height - 1):
        row: Line = left[i] if i < len(left) else [("", " " * left_width)]
        right = log_lines[i] if i < len(log_lines) else ""
        out.append(row + [("class:rule", "│")] + [(_log_style(right), fit(right, right_width))])
    return out


def _panel_widths(width: int) -> tuple[int, int]:
    left_width = 46 if width < 100 else width // 2
    return left_width, width - left_width - 1


def _log_style(line: str) -> str:
    if line.startswith("» "):
        return "class:chat"
    if line.startswith("──"):
        return "class:log.round"
    return "class:log"


def wrap(text: str, width: int, indent: str = "") -> list[str]:
    """`text` in lines of at most `width` cells, broken at spaces; a word
    too long for a line (a path) is broken after a ``/``, and only when
    that is not enough anywhere. Lines after the first start with `indent`;
    the first keeps the spaces `text` starts with.

    >>> wrap("saved in /srv/ann/records/game.oriflamme", 20)
    ['saved in /srv/ann/', 'records/', 'game.oriflamme']
    >>> wrap("a very-long-word-without-any-slash here", 12, "  ")
    ['a very-long-', '  word-witho', '  ut-any-sla', '  sh here']
    """
    lead = text[: len(text) - len(text.lstrip(" "))]
    pieces: list[tuple[str, bool]] = []  # (piece, glued to the one before)
    for word in text.split():
        long = cells(word) > width - len(indent)
        parts = re.findall(r"/?[^/]+/?|/+", word) if long else [word]
        pieces += [(part, i > 0) for i, part in enumerate(parts)]
    lines: list[str] = []
    line, fresh = lead, True
    for piece, glued in pieces:
        sep = "" if fresh or glued else " "
        fits_a_line = cells(indent + piece) <= width
        if not fresh and cells(line + sep + piece) > width and fits_a_line:
            lines.append(line)
            line, fresh, sep = indent, True, ""
        while cells(line + sep + piece) > width:  # longer than any line: cut
            head = cut(piece, width - cells(line + sep)) or (piece[:1] if fresh else "")
            if not head:
                lines.append(line)
                line, fresh, sep = indent, True, ""
                continue
            lines.append(line + sep + head)
            line, fresh, sep = indent, True, ""
            piece = piece[len(head) :]
        line += sep + piece
        fresh = False
    if not fresh or not lines:
        lines.append(line)
    return lines


def log_entry_lines(entry: str, width: int) -> list[str]:
    """One line of the log as it is drawn `width` cells wide."""
    indent = "  " if entry.startswith("  ") else ""
    wrapped = wrap(entry, max(10, width - 1), indent + "  ")
    if entry.startswith("» "):
        wrapped = [wrapped[0]] + ["» " + w.strip() for w in wrapped[1:]]
    return [" " + w for w in wrapped]


def _log(
    log: Sequence[str], width: int, height: int, end: int | None = None
) -> tuple[list[str], str]:
    """The lines of the log that fit, the newest at the bottom, and the
    log's title. `end`: the log is scrolled back to show the lines before
    line `end` (at the start of the log, the lines after it fill the rest)."""
    if height <= 0:
        return [], _("Log")
    shown = len(log) if end is None else max(0, min(end, len(log)))
    out: list[str] = []
    for entry in reversed(log[:shown]):
        out[:0] = log_entry_lines(entry, width)
        if len(out) >= height:
            break
    if len(out) < height:  # the start of the log: what follows fills the rest
        for entry in log[shown:]:
            out += log_entry_lines(entry, width)
            shown += 1
            if len(out) >= height:
                break
        out = out[:height]
    else:
        out = out[-height:]
    newer = len(log) - shown
    if newer > 0:
        return out, _("Log · {count} newer: PgDn End").format(count=newer)
    if shown > log_start(log, width, height):  # lines before the first shown
        return out, _("Log · PgUp earlier")
    return out, _("Log")


def log_start(log: Sequence[str], width: int, height: int) -> int:
    """The smallest end the log can be scrolled back to: the first lines
    that fill `height` lines (the length of the log when it all fits)."""
    used = 0
    for i, entry in enumerate(log):
        used += len(log_entry_lines(entry, width))
        if used >= height:
            return i + 1
    return len(log)


def log_box(scene: Scene, width: int, height: int) -> tuple[int, int]:
    """The width and the height of the log on the game screen at this size."""
    view = scene.view
    if width < MIN_WIDTH or height < MIN_HEIGHT or view is None:
        return 0, 0
    middle = (
        height
        - 1
        - len(_queue(scene, view, width))
        - len(_bottom(scene, width))
        - len(_hand(scene, view, width))
    )
    middle -= len(_gone(scene, width, middle))
    return _panel_widths(width)[1], max(middle, 0) - 1


def _players(scene: Scene, view: TableView, width: int, height: int) -> tuple[list[Line], bool]:
    """The players' rows and the cards they have out, in `height` lines; and
    whether every card out is named there. A panel too short for a row a
    player gets them compacted, never dropped."""
    marks = initials(scene.names)
    fronts = view.fronts
    if len(scene.names) > height:  # too short for a row a player: never drop one
        return _compact_players(scene, view, width, height), False
    rows = _player_rows(scene, view, width)
    for part in wrap(scene.vote, width - 2, "  ") if scene.vote else []:
        rows.append(Row(width).add(" " + part, "class:status").line())
    # The cards each player has out (eliminated, discarded) under the rows,
    # yours first: as many as the room allows, more tightly when it is short,
    # and never cut without saying so (`o` shows them all in full).
    me = scene.seat
    order = ([me] if me is not None else []) + [s for s in range(len(fronts)) if s != me]
    entries = [(marks[seat], fronts[seat]) for seat in order if seat < len(fronts) and fronts[seat]]
    texts, complete = out_lines(entries, width - 3, height - len(rows))
    for line in texts:
        rows.append(Row(width).add("   " + line, "class:dim").line())
    return rows, complete


def _player_rows(scene: Scene, view: TableView, width: int) -> list[Line]:
    """A row a player: letter, name, colour, score, and how many cards in
    hand, out, and set aside (or in the draw pile)."""
    marks = initials(scene.names)
    scores, hands, fronts = view.scores, view.hands, view.fronts
    piles, aside = view.draw_piles, view.set_aside
    rows = []
    colours = [_colour(view, seat) for seat in range(len(scene.names))]
    # the colours' column: 7 cells, more where a language's colour is longer
    # and the row has room for it besides the rest (Polish "niebieski")
    rest = 3 + 2 + 8 + 3 + cells(_(" hand {hand} out {out}").format(hand=7, out=9))
    rest += cells(
        _(" pile {count}").format(count=9)
        if view.two_player
        else _(" aside {count}").format(count=3)
    )
    colour_width = max(7, min(max(map(cells, colours), default=0), width - rest))
    for seat, name in enumerate(scene.names):
        row = Row(width)
        turn = scene.decision_seat == seat and scene.end is None
        row.add(" ▸ " if turn else "   ", "class:turn")
        style = owner_style(view, seat)
        shown = _(YOU) if seat == scene.seat else name
        row.add(f"{marks[seat]} ", style + " class:initial").add(fit(shown, 8), style)
        row.add(fit(colours[seat], colour_width), style)
        score = scores[seat] if seat < len(scores) else 0
        row.add(f"{score:>3}", "class:score")
        # TRANSLATORS: a player's row: cards in hand, out (eliminated or
        # discarded), set aside, in the draw pile; "away": a stand-in plays
        counts = _(" hand {hand} out {out}").format(
            hand=len(hands[seat]) if seat < len(hands) else 0,
            out=len(fronts[seat]) if seat < len(fronts) else 0,
        )
        row.add(counts)
        extra = ""
        if view.two_player and seat < len(piles):
            extra = _(" pile {count}").format(count=len(piles[seat]))
        elif seat < len(aside):
            extra = _(" aside {count}").format(count=len(aside[seat]))
        away = seat in scene.stand_ins
        away_text = _(" away")
        if not away or row.used + cells(extra) + cells(away_text) <= width:  # "away" goes before it
            row.add(extra)
        if away:
            row.add(away_text, "class:away")
        rows.append(row.line())
    return rows


def _colour(view: TableView, seat: int) -> str:
    """A seat's colour ("red"), or its two families' ("red+blu")."""
    families = view.families
    ours = families[seat] if seat < len(families) else ()
    if len(ours) > 1:
        return "+".join(family_short(f) for f in ours)
    return "".join(family_name(f) for f in ours)


def _compact_players(scene: Scene, view: TableView, width: int, height: int) -> list[Line]:
    """Every player in less than a line each, when the panel is too short
    for a row a player: as many players a line as it takes, each with fewer
    details (letter, name, score and hand; then a shorter name; then the
    letter and score alone). Details go before any player does, and `o`
    shows them all."""
    marks = initials(scene.names)
    scores, hands = view.scores, view.hands
    n = len(scene.names)
    if height <= 0 or n == 0:
        return []
    per_line = -(-n // height)
    cell = (width - 1) // per_line
    rows = []
    for first in range(0, n, per_line):
        row = Row(width)
        for seat in range(first, min(first + per_line, n)):
            row.to(1 + (seat - first) * cell)
            style = owner_style(view, seat)
            turn = scene.decision_seat == seat and scene.end is None
            row.add("▸" if turn else " ", "class:turn")
            row.add(marks[seat], style + " class:initial")
            details = cell >= 22
            name_room = 7 if details else cell - 8  # "▸Y " + name + score + a gap
            if name_room >= 3:
                shown = _(YOU) if seat == scene.seat else scene.names[seat]
                row.add(" " + fit(shown, name_room), style)
            score = scores[seat] if seat < len(scores) else 0
            row.add(f"{score:>3}" if name_room >= 3 else f" {score}", "class:score")
            if details and seat in scene.stand_ins:
                row.add(_(" away"), "class:away")
            elif details:
                count = len(hands[seat]) if seat < len(hands) else 0
                row.add(_(" hand {hand}").format(hand=count))
        rows.append(row.line())
    return rows


# The names of cards out when room is short: at most 5 cells.
TINY_NAMES = {
    # TRANSLATORS: a card's name in a list of cards, at most 5 letters
    "archer": NP_("tiny", "Arch"),
    "soldier": NP_("tiny", "Sold"),
    "spy": NP_("tiny", "Spy"),
    "heir": NP_("tiny", "Heir"),
    "lord": NP_("tiny", "Lord"),
    "shapeshifter": NP_("tiny", "Shape"),
    "assassination": NP_("tiny", "Assas"),
    "royal_decree": NP_("tiny", "Decr"),
    "ambush": NP_("tiny", "Amb"),
    "conspiracy": NP_("tiny", "Consp"),
}


def label_of(card: Card) -> str | None:
    """A card's kind as plain data (``"royal_decree"``); None for a back."""
    return None if card.kind is None else card.kind.label


def tiny_name(kind: str) -> str:
    """A kind's name in at most 5 cells (``Decr``)."""
    return lookup(TINY_NAMES, kind, "?")


def short_name(kind: str) -> str:
    """A kind's name in at most 10 cells (``Decree``)."""
    return lookup(SHORT_NAMES, kind, "?")


def _tiny(card: Card) -> str:
    kind = label_of(card)
    return tiny_name(kind) if kind else "?"


def _names_in(width: int, names: list[str], sep: str) -> str:
    """`names` joined by `sep` in `width` cells; those that do not fit are
    counted ("+2") rather than dropped."""
    joined = sep.join(names)
    if cells(joined) <= width:
        return joined
    for shown in range(len(names) - 1, -1, -1):
        more = f"+{len(names) - shown}"
        text = sep.join([*names[:shown], more])
        if cells(text) <= width:
            return text
    return cut(f"+{len(names)}", width)


def out_lines(
    entries: Sequence[tuple[str, Sequence[Card]]], width: int, room: int
) -> tuple[list[str], bool]:
    """The lines that name each player's cards out (`entries`: their letter
    and cards) in at most `room` lines of `width` cells, and whether every
    card is named. The tightest form that fits: the names wrapped; one line
    a player, names shortened ("Decr") or counted ("+2"); several players a
    line; and when even that does not fit, the last line says how many
    players are left out and which key shows them all."""
    if not entries:
        return [], True
    if room <= 0:
        return [], False

    def label(mark: str) -> str:
        # TRANSLATORS: "B out: Spy, Lord": player B's cards out of the game
        return _("{mark} out:").format(mark=mark) + " "

    full: list[str] = []
    for mark, cards in entries:
        start = label(mark)
        parts = wrap(", ".join(_short(c) for c in cards), width - cells(start))
        full += [start + parts[0]] + [" " * cells(start) + part for part in parts[1:]]
    if len(full) <= room:
        return full, True
    one = [label(mark) + ", ".join(_short(c) for c in cards) for mark, cards in entries]
    complete = True
    if any(cells(line) > width for line in one):  # the short names for all, alike
        one = []
        for mark, cards in entries:
            start = label(mark)
            names = _names_in(width - cells(start), [_tiny(c) for c in cards], " ")
            complete = complete and "+" not in names
            one.append(start + names)
    if len(one) <= room:
        return one, complete
    # several players a line: "out Y Decr Spy · B Lord"
    out = _("out") + " "
    packed: list[list[str]] = [[]]
    for mark, cards in entries:
        part = f"{mark} " + _names_in(width - cells(out) - 2, [_tiny(c) for c in cards], " ")
        complete = complete and "+" not in part[2:]
        line = packed[-1]
        if line and cells(out + " · ".join([*line, part])) > width:
            packed.append([part])
        else:
            line.append(part)
    texts = [out + " · ".join(line) for line in packed]
    if len(texts) <= room:
        return texts, complete
    left = sum(len(line) for line in packed[room - 1 :])
    hint = ngettext(
        "+{count} more player's cards out: [o] shows all",
        "+{count} more players' cards out: [o] shows all",
        left,
    ).format(count=left)
    return texts[: room - 1] + [cut(hint, width)], False


def _short(card: Card) -> str:
    kind = label_of(card)
    return short_name(kind) if kind else "?"


def _hand(scene: Scene, view: TableView, width: int) -> list[Line]:
    me = scene.seat if scene.seat is not None else scene.hand_of
    if me is None:
        return [rule(width, _("Spectating: every hand is hidden"))]
    hand: Sequence[Card] = view.hands[me] if me < len(view.hands) else ()
    chooser = scene.chooser
    row = Row(width).add(" ")
    picked_card = (
        chooser.card
        if chooser is not None and chooser.kind == "place" and chooser.card is not None
        else None
    )
    families = sorted({c.family for c in hand})
    if len(families) > 1:  # the two-player variant: the cards by family
        hand = sorted(hand, key=lambda c: families.index(c.family))
    family = None
    for card in hand:
        if len(families) > 1 and card.family != family:
            family = card.family
            style = f"class:owner.{FAMILY_NAMES[family]}"
            row.add(f"{family_name(family)}:", style).add(" ")
        picked = picked_card is not None and card == picked_card
        name = card_name(card) or "?"
        row.add(name, "class:hand" + (" class:highlight" if picked else "")).add("  ")
    aside = view.set_aside
    if me == scene.seat:
        whose = _("Your hand")
    else:
        whose = _("{player}'s hand").format(player=who(scene.names, me, None))
    title = whose
    if me < len(aside) and aside[me]:
        title += " · " + set_aside_text(aside[me], width - cells(whose) - 7)
    return [rule(width, title), row.line()]


def set_aside_text(cards: Sequence[Card], width: int) -> str:
    """Your set-aside cards in `width` cells: by family when there are two
    (the two-player variant: "set aside red: Spy, Lord; blue: Heir"), their
    names shortened when they do not fit.

    >>> from oriflamme.engine import CARDS, Kind
    >>> set_aside_text([CARDS[0][Kind.SPY], CARDS[1][Kind.LORD], CARDS[0][Kind.HEIR]], 60)
    'set aside red: Spy, Heir; blue: Lord'
    """
    families = list(dict.fromkeys(c.family for c in cards))
    text = ""
    for names in (card_name, _short, _tiny):
        if len(families) > 1:
            groups = [
                f"{family_name(family)}: "
                + ", ".join(names(c) or "?" for c in cards if c.family == family)
                for family in families
            ]
            text = _("set aside {cards}").format(cards="; ".join(groups))
        else:
            text = _("set aside: {cards}").format(cards=", ".join(names(c) or "?" for c in cards))
        if cells(text) <= width:
            break
    return text


def _bottom(scene: Scene, width: int) -> list[Line]:
    """The decision, the end of the game, or who is thinking; then the status line."""
    lines: list[Line] = []
    names, me = scene.names, scene.seat
    if scene.footer:
        lines += list(scene.footer)
    elif scene.end is not None:
        lines += _end(scene, width)
    elif scene.chooser is not None:
        chooser = scene.chooser
        heading = chooser.heading
        if hurried(scene):
            heading += " · " + _("{seconds} s left!").format(seconds=scene.seconds_left)
        style = "class:banner" if hurried(scene) else "class:rule.turn"
        head, rest = _heading_parts(heading, width)
        lines.append(rule(width, head, style))
        lines += [Row(width).add(" " + part, "class:rule.title").line() for part in rest]
        lines += _offers(chooser, width)
    elif scene.decision_kind is not None:
        thinker = who(names, scene.decision_seat, me)
        doing = lookup(WAITING, scene.decision_kind, "")
        lines.append(rule(width, _("Waiting")))
        if scene.decision_seat == me:  # ours, but not offered: not connected, say
            waiting = _("Your turn {doing}: waiting for the server…")
        else:
            waiting = _("Waiting for {player} {doing}…")
        waiting = " " + waiting.format(player=thinker, doing=doing)
        if scene.seconds_left is not None:
            waiting += "  " + _("({time} left)").format(time=clock(scene.seconds_left))
        lines.append(Row(width).add(waiting).line())
    else:
        lines.append(rule(width))
        lines.append(Row(width).line())
    if scene.chat_input is not None:
        shown = scene.chat_input[-(width - 9) :]  # the end of a long line: where you type
        status = Row(width).add(" " + _("say:") + " ", "class:key").add(shown + "▏")
        lines.append(status.line())
    else:
        lines.append(_status(scene, width))
    return lines


OFFER_ROWS = 5


def _heading_parts(heading: str, width: int) -> tuple[str, list[str]]:
    """A choice's heading too long for its rule (a Shapeshifter's copy in
    French) goes on: the rule says what acts, a line or two under it what
    it asks.

    >>> _heading_parts("Your Archer: eliminate a card", 80)
    ('Your Archer: eliminate a card', [])
    >>> _heading_parts("Your Archer: eliminate a card", 24)
    ('Your Archer', ['eliminate a card'])
    """
    if cells(heading) + 4 <= width or ":" not in heading:
        return heading, []
    head, _colon, rest = heading.partition(":")
    return head.rstrip(), wrap(rest.strip(), width - 2)[:2]


def _offers(chooser: Chooser, width: int) -> list[Line]:
    """The choices with their keys, wrapped over at most `OFFER_ROWS` lines;
    when they are too many for that (an Assassination over a long queue),
    in short: the keys alone (each a card highlighted in the queue), or, for
    where a card goes, the numbers of the cards each place lies between."""
    offers = chooser.offers()
    shown = [offer.shown for offer in offers]
    if chooser.kind == "place" and chooser.card is not None:
        shown.append(_("[Esc] another card"))
    rows = _wrapped_offers(" ", shown, width)
    if len(rows) > OFFER_ROWS:
        if chooser.kind == "move_to":
            short = [f"[{KEY_SYMBOLS.get(o.key, o.key)}] {o.short}" for o in offers]
            heading = " " + _("it goes between the cards:") + " "
            rows = _wrapped_offers(heading, short, width)
        else:
            keys = [text.partition("] ")[0] + "]" for text in shown]
            heading = " " + _("the cards highlighted in the queue:") + " "
            rows = _wrapped_offers(heading, keys, width)
    return rows[:OFFER_ROWS]


def _wrapped_offers(heading: str, shown: list[str], width: int) -> list[Line]:
    rows: list[Line] = []
    row = Row(width).add(heading)
    for text in shown:
        if row.used + cells(text) + 2 > width and row.used > 1:
            rows.append(row.line())
            row = Row(width).add(" ")
        key, __, label = text.partition("] ")
        row.add(key + "]", "class:key")
        if label:
            row.add(" " + label)
        row.add("  ")
    rows.append(row.line())
    return rows


KEYS_HINT = N_("[/] chat  [?] help  [q] quit")


def _status(scene: Scene, width: int) -> Line:
    """The status line: the banner or the status, and the keys that always
    work at its right end when they fit (they stay in view while you wait)."""
    row = Row(width)
    said = scene.banner or scene.status
    hint = _(KEYS_HINT)
    if said:
        row.add(" " + said, "class:banner" if scene.banner else "class:status")
        if scene.end is None and scene.hint and row.used + 3 + cells(hint) <= width:
            row.to(width - cells(hint) - 1).add(hint, "class:dim")
    elif scene.end is not None:
        for part in _(scene.end.keys).split("  "):
            key, __, label = part.partition("] ")
            row.add(" " + key + "]", "class:key").add(" " + label + " ")
    else:
        row.add(" " + hint, "class:dim")
    return row.line()


def _end(scene: Scene, width: int) -> list[Line]:
    end = scene.end
    assert end is not None
    view = scene.view
    heading = _("Game over · round {round} of {rounds}").format(
        round=ROUNDS if view is None else view.round, rounds=ROUNDS
    )
    if end.ended_in is not None:
        heading = _("Game ended by vote in round {round} of {rounds} · no winner").format(
            round=end.ended_in, rounds=ROUNDS
        )
    lines = [rule(width, heading, "class:rule.turn")]
    order, in_queue = end_order(end, view)
    entries = []
    for place, seat in enumerate(order):
        name = who(scene.names, seat, scene.seat)
        won = " " + _("(winner)") if seat in end.winners else ""
        style = owner_style(view, seat) + (" class:winner" if won else "")
        entries.append((f"{place + 1}. {name} {end.scores[seat]}{won}", style))
    lines += placings(entries, width)
    top = max(end.scores, default=0)
    tied = [seat for seat in order if end.scores[seat] == top]
    if len(tied) > 1 and end.ended_in is None:  # ruling 17: the queue breaks it, else a shared win
        counts = ", ".join(f"{who(scene.names, s, scene.seat)} {in_queue[s]}" for s in tied)
        winners = [who(scene.names, s, scene.seat) for s in tied if s in end.winners]
        if len(winners) == 1:
            if scene.seat in end.winners:
                said = _("Tie on {points} points: You win with more cards in the queue ({counts})")
            else:
                said = _(
                    "Tie on {points} points: {player} wins with more cards in the queue ({counts})"
                )
        else:
            said = _(
                "Tie on {points} points and on cards in the queue ({counts}): {players} share the win"
            )
        said = said.format(points=top, counts=counts, player=winners[0], players=names_and(winners))
        for part in wrap(said, width - 1, "  "):
            lines.append(Row(width).add(" " + part, "class:verified").line())
    for part in wrap(end.verified, width - 2, "  ")[:2]:
        lines.append(Row(width).add(" " + part, "class:verified").line())
    lines.append(Row(width).add(" " + end.saved).line())
    return lines


def end_order(end: EndSummary, view: TableView | None) -> tuple[list[int], list[int]]:
    """The seats in their places at a game's end, and each seat's cards in
    the final queue (`view`'s): among equal scores the winners first (ruling
    17's tie-break: the cards in the queue), then the most cards in the queue.

    >>> from dataclasses import replace
    >>> from oriflamme.engine import BACKS, new_game
    >>> card = lambda owner: QueueCard(0, owner, BACKS[owner], False, 0)
    >>> view = replace(TableView.of(new_game(3, seed=1), 0), queue=((card(2),), (card(1), card(2))))
    >>> end_order(EndSummary([5, 9, 9], [2], "", ""), view)
    ([2, 1, 0], [0, 1, 2])
    """
    in_queue = [0] * len(end.scores)
    for slot in () if view is None else view.queue:
        for card in slot:
            if 0 <= card.owner < len(in_queue):
                in_queue[card.owner] += 1
    order = sorted(
        range(len(end.scores)),
        key=lambda s: (
            -end.scores[s],
            s not in end.winners,
            0 if s in end.winners else -in_queue[s],
            s,
        ),
    )
    return order, in_queue


def placings(entries: Sequence[tuple[str, str]], width: int) -> list[Line]:
    """The ranking at a game's end ("1. Ann 9 (winner)", and its style) on
    as many lines as it takes: an entry that does not fit goes on the next
    line, never cut."""
    lines: list[Line] = []
    row = Row(width).add(" ")
    for text, style in entries:
        if row.used > 1 and row.used + cells(text) > width:
            lines.append(row.line())
            row = Row(width).add(" ")
        row.add(text, style).add("   ")
    lines.append(row.line())
    return lines


def _outs(scene: Scene, view: TableView, width: int) -> list[Line]:
    """Every player's cards out (eliminated and discarded), in full; then
    every player's row (as the panel draws it when there is room)."""
    lines = [rule(width, _("Cards out: eliminated and discarded · any key closes this"))]
    marks = initials(scene.names)
    fronts = view.fronts
    longest = min(16, max(cells(who(scene.names, s, scene.seat)) for s in range(len(scene.names))))
    for seat in range(len(scene.names)):
        cards = fronts[seat] if seat < len(fronts) else ()
        names = [
            (card_name(c) or "?") + (f" ({family_name(c.family)})" if view.two_player else "")
            for c in cards
        ] or [_("none")]
        style = owner_style(view, seat)
        label = f" {marks[seat]} {fit(who(scene.names, seat, scene.seat), longest)} "
        for i, part in enumerate(wrap(", ".join(names), width - cells(label) - 1)):
            row = Row(width)
            if i == 0:
                row.add(label, style)
            else:
                row.to(cells(label))
            lines.append(row.add(part).line())
    lines.append(rule(width, _("Players")))
    lines += _player_rows(scene, view, width)
    return lines


HELP_KEYS = [
    ("1-9", N_("a card of your hand, a position or a target (10 and up: two digits)")),
    ("← →", N_("place at the left or right end of the queue")),
    ("l / r", N_("the first player, once: resolve left to right, or right to left")),
    ("r / k", N_("reveal your face-down card, or keep it hidden (+1 ◆)")),
    ("Enter", N_("take the only choice, or the number typed")),
    ("Esc", N_("go back one step (another card to place)")),
    ("PgUp/Dn", N_("scroll the log back and forth (↑ ↓ a line, Home End its ends)")),
    ("o / s", N_("every player in full, with their cards out / the scores of each round")),
    ("/", N_("chat: type a line, Enter sends it, Esc cancels")),
    ("q", N_("quit (asked) · L lobby, seat kept · R resign · A vote to end the game")),
]


def _help(width: int, edition: str = "revised") -> list[Line]:
    title = _("Help · the cards ({edition} edition) · any key closes this")
    title = title.format(edition=edition_name(edition))
    lines = [rule(width, title)]
    column = max(cells(kind_name(kind)) for kind in ABILITIES) + 2
    for kind, ability in ABILITIES.items():
        name = kind_name(kind)
        row = Row(width).add(" " + name, "class:key").to(column).add(pgettext(*ability))
        lines.append(row.line())
    lines.append(rule(width, _("Keys and the board")))
    for key, words in HELP_KEYS:
        key = _("Enter") if key == "Enter" else key
        lines.append(Row(width).add(f" {key:<8}", "class:key").add(_(words)).line())
    for text in (
        _("▶ resolving; {changed} new since your turn; ◆ Influence; ×2 a stack; A-Z players"),
        _("{back} face down; ({heir}) face down, known: yours, or any once the game is over"),
    ):
        said = text.format(changed=CHANGED, back=BACK, heir=kind_name("heir"))
        lines.append(Row(width).add(" " + said).line())
    return lines

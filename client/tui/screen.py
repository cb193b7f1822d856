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
has an initial, your own cards say "You", and the card being resolved has a
``▶``.

Layout, top to bottom: the title line (room, round, first player, the
clock, help key); the Influence Queue, drawn in the direction chosen (the
numbers are the resolution order and the keys for choosing); players and
log side by side; your hand; the decision (what you can press), or who is
thinking; the status line.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from oriflamme.engine import card_to_data

from .choices import Chooser
from .text import cells, cut, fit
from .words import ABILITIES, KIND_NAMES, card_name

Fragment = tuple[str, str]
Line = list[Fragment]

MIN_WIDTH, MIN_HEIGHT = 80, 24
ROUNDS = 6
SHORT_NAMES = {
    "shapeshifter": "Shapeshift",
    "assassination": "Assassin",
    "royal_decree": "Decree",
    "conspiracy": "Conspiracy",
}
BACK = "▒▒▒▒▒▒▒"
WAITING = {
    "direction": "to choose the direction",
    "place": "to place a card",
    "reveal": "to reveal or keep a card",
    "open": "to open an eliminated card",
    "eliminate": "to choose a card to eliminate",
    "steal": "to choose whom to steal from",
    "copy": "to choose a card to copy",
    "move_card": "to choose a card to move",
    "move_to": "to choose where the card goes",
}


@dataclass
class EndSummary:
    """The end of a game, as the screen shows it."""

    scores: Sequence[int]
    winners: Sequence[int]
    verified: str  # one line: the verification result
    saved: str = ""  # where the record was saved, or why not
    keys: str = "[a] play again  [q] quit"


@dataclass
class Scene:
    """Everything the game screen shows; the app fills it from the session."""

    view: dict[str, Any] | None
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
    help_key: str = "? help"
    hand_of: int | None = None  # whose hand to show when `seat` is None
    footer: Sequence[Line] = ()  # lines in place of the decision (a replay's)


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
        return "You"
    return names[seat] if seat < len(names) else f"seat {seat + 1}"


def initials(names: Sequence[str], me: int | None) -> list[str]:
    """One letter per seat, distinct: the name's first letter where it is
    free, else its next letter, else a free letter; ``Y`` is kept for you.

    >>> initials(["Ann", "Bot 1", "Bot 2", "Bot 3"], 0)
    ['Y', 'B', 'O', 'T']
    """
    taken = {"Y"} if me is not None else set()
    out = []
    for seat, name in enumerate(names):
        if seat == me:
            out.append("Y")
            continue
        # letters only: a digit would read as a queue position
        chars = [c.upper() for c in name if c.isalpha() and c.isascii()]
        wanted = chars + list("ABCDEFGHIJKLMNOPQRSTUVWXZ")
        mark = next(c for c in wanted if c not in taken)
        taken.add(mark)
        out.append(mark)
    return out


def owner_style(view: dict[str, Any], seat: int) -> str:
    families = view.get("families") or []
    family = families[seat][0] if seat < len(families) and families[seat] else "none"
    return f"class:owner.{family}"


def clock(seconds: int | None) -> str:
    if seconds is None:
        return ""
    seconds = max(0, seconds)
    return f"{seconds // 60}:{seconds % 60:02d}"


def render(scene: Scene, width: int, height: int) -> list[Line]:
    """The screen: `height` lines of `width` cells (see the module docstring)."""
    if width < MIN_WIDTH or height < MIN_HEIGHT:
        return too_small(width, height)
    if scene.help:
        edition = (scene.view or {}).get("edition", "revised")
        return pad(_help(width, edition), width, height)
    view = scene.view
    lines: list[Line] = [_title(scene, width)]
    if view is None:
        lines.append(rule(width))
        lines.append(Row(width).add(" Waiting for the game to begin…").line())
        lines += _bottom(scene, width)
        return pad(lines, width, height)
    queue = _queue(scene, view, width)
    bottom = _bottom(scene, width)
    hand = _hand(scene, view, width)
    middle = height - len(lines) - len(queue) - len(bottom) - len(hand)
    panels = _panels(scene, view, width, max(middle, 3))
    lines += queue + panels[: max(middle, 0)] + hand + bottom
    return pad(lines, width, height)


def pad(lines: list[Line], width: int, height: int) -> list[Line]:
    lines = lines[:height]
    while len(lines) < height:
        lines.append([("", " " * width)])
    return lines


def too_small(width: int, height: int) -> list[Line]:
    text = [
        f"This terminal is {width}x{height}.",
        f"Oriflamme needs at least {MIN_WIDTH}x{MIN_HEIGHT}:",
        "make the window larger.",
        "(q quits)",
    ]
    lines = [[("", t[:width].ljust(width))] for t in text]
    return pad(lines, width, height)


def _title(scene: Scene, width: int) -> Line:
    view = scene.view
    row = Row(width).add(scene.title, "class:title")
    if view is not None:
        first = who(scene.names, view.get("first_player"), scene.seat)
        row.add(f" · round {view.get('round', 1)} of {ROUNDS} · first: {first}", "class:title")
    right = ""
    if scene.seconds_left is not None:
        right += f"⏱ {clock(scene.seconds_left)}  "
    right += scene.help_key
    row.to(width - len(right))
    row.add(right, "class:title")
    return row.line(style="class:title")


def family_style(card: dict[str, Any]) -> str:
    """The style of a card's family (its colour, whoever sees it)."""
    family = card["card"][0] if card.get("card") else "none"
    return f"class:owner.{family}"


def _card_text(card: dict[str, Any], seat: int | None, reveal_all: bool) -> tuple[str, str]:
    """A card in the queue: its label and style."""
    name = card["card"][1] if card["card"] else None
    short = SHORT_NAMES.get(name, KIND_NAMES.get(name, "")) if name else ""
    if card["face_up"]:
        return short, "class:card.up"
    if (card["owner"] == seat or reveal_all) and short:
        return f"({short})", "class:card.mine"
    return BACK, family_style(card) + " class:card.back"


def _tokens(n: int) -> str:
    return "◆" * n if n <= 3 else f"◆×{n}"


def _queue(scene: Scene, view: dict[str, Any], width: int) -> list[Line]:
    queue = [slot for slot in view.get("queue", []) if slot]
    reverse = view.get("direction") == "right-to-left"
    direction = view.get("direction")
    if direction is None:
        how = "resolution order not chosen yet"
    else:
        how = f"1 resolves first, {'right to left' if reverse else 'left to right'}"
    lines = [rule(width, f"Influence Queue · {how}")]
    if not queue:
        lines.append(Row(width).add("   (empty: the first card goes in the middle)").line())
        return lines
    resolving = (view.get("resolving") or {}).get("index")
    highlighted = scene.chooser.highlighted if scene.chooser is not None else set()
    marks = initials(scene.names, scene.seat)
    cell = 13 if width // 13 >= min(len(queue), 8) or width < 104 else width // 8
    per_row = max(1, (width - 1) // cell)
    order = list(range(len(queue)))
    if reverse:
        order.reverse()
    for start in range(0, len(order), per_row):
        top_row, bottom_row = Row(width).add(" "), Row(width).add(" ")
        for i in order[start : start + per_row]:
            slot = queue[i]
            top = slot[-1]
            label, style = _card_text(top, scene.seat, scene.reveal_all)
            number = i + 1
            chosen = number in highlighted
            mark = "▶" if resolving == i else " "
            num_style = "class:highlight" if chosen else "class:number"
            if resolving == i:
                num_style += " class:resolving"
            top_row.add(mark, "class:resolving").add(f"{number:>2}", num_style).add(" ")
            top_row.add(fit(label, cell - 4), style + (" class:highlight" if chosen else ""))
            owner = top["owner"]
            if view.get("variant") == "two-player":  # two families each: say which
                tag = f"{marks[owner]} {top['card'][0]}"
            else:
                tag = f"{marks[owner]} {'You' if owner == scene.seat else scene.names[owner]}"
            extra = " ".join(
                part
                for part in (_tokens(top["tokens"]) if top["tokens"] else "", f"×{len(slot)}")
                if part and part != "×1"
            )
            room = cell - 3 - len(extra) - (1 if extra else 0)
            bottom_row.add("  ").add(fit(tag, room).rstrip(), family_style(top))
            bottom_row.add((" " + extra) if extra else "", "class:tokens")
            bottom_row.to(top_row.used)
        lines.append(top_row.line())
        lines.append(bottom_row.line())
    return lines


def _panels(scene: Scene, view: dict[str, Any], width: int, height: int) -> list[Line]:
    """Players (left) and the log (right), `height` lines."""
    left_width = 46 if width < 100 else width // 2
    right_width = width - left_width - 1
    left = _players(scene, view, left_width, height - 1)
    log_lines = _log(scene.log, right_width, height - 1)
    out = [rule(left_width, "Players") + [("class:rule", " ")] + rule(right_width, "Log")]
    for i in range(height - 1):
        row: Line = left[i] if i < len(left) else [("", " " * left_width)]
        right = log_lines[i] if i < len(log_lines) else ""
        out.append(row + [("class:rule", "│")] + [(_log_style(right), fit(right, right_width))])
    return out


def _log_style(line: str) -> str:
    if line.startswith("» "):
        return "class:chat"
    if line.startswith("──"):
        return "class:log.round"
    return "class:log"


def _log(log: Sequence[str], width: int, height: int) -> list[str]:
    """The newest lines that fit, wrapped, the newest at the bottom."""
    out: list[str] = []
    for entry in reversed(log):
        indent = "  " if entry.startswith("  ") else ""
        wrapped = textwrap.wrap(
            entry, width=max(10, width - 1), subsequent_indent=indent + "  "
        ) or [""]
        if entry.startswith("» "):
            wrapped = [wrapped[0]] + ["» " + w.strip() for w in wrapped[1:]]
        out[:0] = [" " + w for w in wrapped]
        if len(out) >= height:
            break
    return out[-height:] if height > 0 else []


def _players(scene: Scene, view: dict[str, Any], width: int, height: int = 99) -> list[Line]:
    marks = initials(scene.names, scene.seat)
    scores = view.get("scores", [])
    hands = view.get("hands", [])
    fronts = view.get("fronts", [])
    piles = view.get("draw_piles", [])
    aside = view.get("set_aside", [])
    rows = []
    for seat, name in enumerate(scene.names):
        row = Row(width)
        turn = scene.decision_seat == seat and scene.end is None
        row.add(" ▸ " if turn else "   ", "class:turn")
        style = owner_style(view, seat)
        shown = "You" if seat == scene.seat else name
        row.add(f"{marks[seat]} ", style + " class:initial").add(fit(shown, 8), style)
        families = view.get("families", [])
        fams = families[seat] if seat < len(families) else []
        colour = "+".join(f[:3] for f in fams) if len(fams) > 1 else "".join(fams)
        row.add(fit(colour, 7), style)
        score = scores[seat] if seat < len(scores) else 0
        row.add(f"{score:>3}", "class:score")
        row.add(f" hand {len(hands[seat]) if seat < len(hands) else 0}")
        row.add(f" out {len(fronts[seat]) if seat < len(fronts) else 0}")
        if view.get("variant") == "two-player" and seat < len(piles):
            row.add(f" pile {len(piles[seat])}")
        elif seat < len(aside):
            row.add(f" aside {len(aside[seat])}")
        if seat in scene.stand_ins:
            row.add(" away", "class:away")
        rows.append(row.line())
    # The cards each player has out (eliminated, discarded), as room allows:
    # yours first, wrapped under the rows.
    me = scene.seat
    order = ([me] if me is not None else []) + [s for s in range(len(fronts)) if s != me]
    for seat in order:
        if seat >= len(fronts) or not fronts[seat]:
            continue
        names = ", ".join(_short(c) for c in fronts[seat])
        label = f"{marks[seat]} out: "
        wrapped = textwrap.wrap(names, width=width - 4 - len(label)) or [""]
        for i, part in enumerate(wrapped):
            if len(rows) >= height:
                return rows
            lead = "   " + (label if i == 0 else " " * len(label))
            rows.append(Row(width).add(lead, "class:dim").add(part, "class:dim").line())
    return rows


def _short(card: Any) -> str:
    kind = card[1] if card else None
    return SHORT_NAMES.get(kind, KIND_NAMES.get(kind, "?")) if kind else "?"


def _hand(scene: Scene, view: dict[str, Any], width: int) -> list[Line]:
    me = scene.seat if scene.seat is not None else scene.hand_of
    if me is None:
        return [rule(width, "Spectating: every hand is hidden")]
    hand = view.get("hands", [])[me] if me < len(view.get("hands", [])) else []
    chooser = scene.chooser
    row = Row(width).add(" ")
    names = [card_name(card) or "?" for card in hand]
    picked_card = (
        card_to_data(chooser.card)
        if chooser is not None and chooser.kind == "place" and chooser.card is not None
        else None
    )
    families = sorted({c[0] for c in hand})
    if len(families) > 1:  # the two-player variant: the cards by family
        hand = sorted(hand, key=lambda c: families.index(c[0]))
        names = [card_name(card) or "?" for card in hand]
    family = None
    for card, name in zip(hand, names, strict=True):
        if len(families) > 1 and card[0] != family:
            family = card[0]
            row.add(f"{family}:", family_style({"card": card})).add(" ")
        picked = picked_card is not None and list(card) == list(picked_card)
        row.add(name, "class:hand" + (" class:highlight" if picked else "")).add("  ")
    aside = view.get("set_aside", [])
    extra = ""
    if me < len(aside) and aside[me]:
        extra = "set aside: " + ", ".join(card_name(c) or "?" for c in aside[me])
    whose = "Your hand" if me == scene.seat else f"{who(scene.names, me, None)}'s hand"
    title = whose + (f" · {extra}" if extra else "")
    return [rule(width, title), row.line()]


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
        lines.append(rule(width, f"Your turn: {chooser.title}", "class:rule.turn"))
        lines += _offers(chooser, width)
    elif scene.decision_kind is not None:
        thinker = who(names, scene.decision_seat, me)
        doing = WAITING.get(scene.decision_kind, "")
        lines.append(rule(width, "Waiting"))
        waiting = f" Waiting for {thinker} {doing}…"
        if scene.seconds_left is not None:
            waiting += f"  ({clock(scene.seconds_left)} left)"
        lines.append(Row(width).add(waiting).line())
    else:
        lines.append(rule(width))
        lines.append(Row(width).line())
    if scene.chat_input is not None:
        shown = scene.chat_input[-(width - 9) :]  # the end of a long line: where you type
        status = Row(width).add(" say: ", "class:key").add(shown + "▏")
        lines.append(status.line())
    else:
        lines.append(_status(scene, width))
    return lines


def _offers(chooser: Chooser, width: int) -> list[Line]:
    """The choices with their keys, wrapped over at most 3 lines."""
    rows: list[Line] = []
    row = Row(width).add(" ")
    shown = [offer.shown for offer in chooser.offers()]
    if chooser.kind == "place" and chooser.card is not None:
        shown.append("[Esc] another card")
    for text in shown:
        if row.used + cells(text) + 2 > width and row.used > 1:
            rows.append(row.line())
            row = Row(width).add(" ")
        key, _, label = text.partition("] ")
        row.add(key + "]", "class:key").add(" " + label).add("  ")
    rows.append(row.line())
    return rows[:5]


def _status(scene: Scene, width: int) -> Line:
    row = Row(width)
    if scene.banner:
        row.add(" " + scene.banner, "class:banner")
    elif scene.status:
        row.add(" " + scene.status, "class:status")
    elif scene.end is not None:
        for part in scene.end.keys.split("  "):
            key, _, label = part.partition("] ")
            row.add(" " + key + "]", "class:key").add(" " + label + " ")
    else:
        row.add(" [/] chat  [?] help  [q] quit", "class:dim")
    return row.line()


def _end(scene: Scene, width: int) -> list[Line]:
    end = scene.end
    assert end is not None
    view = scene.view or {}
    lines = [
        rule(width, f"Game over · round {view.get('round', ROUNDS)} of {ROUNDS}", "class:rule.turn")
    ]
    # the winners first among equal scores (the tie-break: cards in the queue)
    order = sorted(range(len(end.scores)), key=lambda s: (-end.scores[s], s not in end.winners, s))
    row = Row(width).add(" ")
    for place, seat in enumerate(order):
        name = who(scene.names, seat, scene.seat)
        won = " (winner)" if seat in end.winners else ""
        style = owner_style(view, seat) + (" class:winner" if won else "")
        row.add(f"{place + 1}. {name} {end.scores[seat]}{won}", style).add("   ")
    lines.append(row.line())
    lines.append(Row(width).add(" " + end.verified, "class:verified").line())
    lines.append(Row(width).add(" " + end.saved).line())
    return lines


HELP_KEYS = [
    ("1-9", "a card of your hand, a position or a target (10 and up: two digits)"),
    ("← →", "place at the left or right end of the queue"),
    ("r / k", "reveal your face-down card, or keep it hidden (+1 ◆)"),
    ("Enter", "take the only choice, or the number typed"),
    ("Esc", "go back one step (another card to place)"),
    ("/", "chat: type a line, Enter sends it, Esc cancels"),
    ("?", "this help; any key closes it"),
    ("q", "quit (your seat is kept for you: come back with the same command)"),
]


def _help(width: int, edition: str = "revised") -> list[Line]:
    lines = [rule(width, f"Help · the cards ({edition} edition) · any key closes this")]
    for kind, text in ABILITIES.items():
        row = Row(width).add(f" {KIND_NAMES[kind]:<14}", "class:key").add(text)
        lines.append(row.line())
    lines.append(rule(width, "Keys"))
    for key, text in HELP_KEYS:
        lines.append(Row(width).add(f" {key:<8}", "class:key").add(text).line())
    lines.append(rule(width, "Reading the board"))
    for text in (
        "Positions are numbered in resolution order. ▶ marks the card being resolved.",
        f"{BACK} is a face-down card; (Heir) is your own face-down card: only you see it.",
        "◆ Influence on a card (◆×5: five); ×2 a stack of two cards. Y is you.",
    ):
        lines.append(Row(width).add(" " + text).line())
    return lines

"""Helpers for the terminal client's tests: positions from real games, the
screen as text, the key sequences that pick an action, and an in-process
table where seat 0 is a person at the keyboard (`Table`).

Everything here is deterministic: engine games are seeded, and a `Table`
runs on fixed server entropy, fixed seat secrets and seeded bots, so a test
that relies on what happens in a game sees the same game on every run.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from oriflamme.client.bots import Behaviour
from oriflamme.client.narrator import EventLog
from oriflamme.client.tui.choices import BACKSPACE, ENTER, ESCAPE, LEFT, RIGHT, Chooser
from oriflamme.client.tui.controller import Answer, Command, GameController
from oriflamme.client.tui.screen import Line, Scene
from oriflamme.client.view import TableView
from oriflamme.engine import (
    FAMILY_NAMES,
    Action,
    Game,
    MoveTo,
    Place,
    RandomPlayer,
    Target,
    mask_event,
    new_game,
)
from oriflamme.launcher.inprocess import Client, InProcess
from oriflamme.protocol import messages as m
from oriflamme.server.core import FixedEntropy
from tools.docgen.worked_example import fixed_secrets

NAMES = ("Ann", "Bo", "Cy", "Di", "Ed")
VARIANTS = {2: "two-player", 3: "standard", 4: "standard", 5: "standard"}
# Every key the chooser could be given: digits, some letters, the named keys.
KEYS = (*"0123456789", *"lrkaqxz", LEFT, RIGHT, ENTER, ESCAPE, BACKSPACE)


# ---------------------------------------------------------------- engine games


def game(players: int, seed: int) -> Game:
    return new_game(players, variant=VARIANTS[players], seed=seed)


def walk(players: int, seed: int, *, seat: int = 0) -> Iterator[tuple[Game, EventLog]]:
    """A random game from start to end: the game at each pending decision
    (then once more, over), with the log as `seat` would read it so far.
    The game is answered after the consumer is done with it."""
    g = game(players, seed)
    player = RandomPlayer(seed=seed)
    log = EventLog(lambda s: "You" if s == seat else NAMES[s], me=lambda: seat)
    while True:
        yield g, log
        if g.over:
            return
        events = g.apply(player.choose(g))
        log.add([mask_event(e, seat) for e in events])


def scene_of(g: Game, log: EventLog | Sequence[str] = (), *, seat: int = 0, **extra: Any) -> Scene:
    """The scene seat `seat` sees at `g`, with its chooser when the decision
    is its own; `log`: an `EventLog`, or its lines."""
    d = g.decision
    v = TableView.of(g, seat)
    chooser = None
    if d is not None and d.seat == seat and d.kind != "open":
        chooser = chooser_of(g, seat)
    fields: dict[str, Any] = {
        "view": v,
        "names": NAMES[: g.n],
        "seat": seat,
        "log": log.lines if isinstance(log, EventLog) else list(log),
        "decision_seat": d.seat if d is not None else None,
        "decision_kind": str(d.kind) if d is not None else None,
        "chooser": chooser,
    }
    fields.update(extra)
    return Scene(**fields)


def chooser_of(g: Game, seat: int = 0) -> Chooser:
    d = g.decision
    assert d is not None and d.seat == seat
    return Chooser(
        str(d.kind),
        list(d.options),
        TableView.of(g, seat),
        seat=seat,
        who=lambda s: "You" if s == seat else NAMES[s],
        pid=d.pid,
    )


# ---------------------------------------------------------------- the screen as text


def text(line: Line) -> str:
    return "".join(t for _, t in line)


def screen_text(lines: Sequence[Line]) -> str:
    return "\n".join(text(line) for line in lines)


def queue_cells(lines: Sequence[Line]) -> list[dict[str, Any]]:
    """The queue's cells as drawn, left to right then top to bottom: each
    one's resolving mark, number (its position), label and label style,
    and the text under it (owner, then Influence and stack size). The queue
    is the rows between its rule and the next rule, two rows a line of cards."""
    texts = [text(line) for line in lines]
    start = next(i for i, t in enumerate(texts) if t.startswith("─ Influence Queue")) + 1
    end = next(i for i in range(start, len(texts)) if texts[i].startswith("─"))
    cells: list[dict[str, Any]] = []
    below: list[str] = []
    for row in range(start, end):
        line = lines[row]
        for i, (style, piece) in enumerate(line):
            if "class:card." in style:
                cells.append(
                    {
                        "mark": line[i - 3][1],
                        "number": int(line[i - 2][1]),
                        "number_style": line[i - 2][0],
                        "label": piece,
                        "style": style,
                    }
                )
            elif style.startswith("class:owner.") and piece.strip():
                following = line[i + 1] if i + 1 < len(line) else ("", "")
                tokens = following[1] if following[0] == "class:tokens" else ""
                below.append(piece + tokens)
    assert len(below) == len(cells), "every card of the queue has its owner's line"
    for cell, under in zip(cells, below, strict=True):
        cell["below"] = under
    return cells


# ---------------------------------------------------------------- keys


def number_keys(n: int, numbers: Sequence[str]) -> list[str]:
    """The keys that type position `n` when `numbers` are on offer: its
    digits, then Enter if a longer number starts with them."""
    typed = str(n)
    longer = [x for x in numbers if x != typed and x.startswith(typed)]
    return [*typed, ENTER] if longer else list(typed)


def keys_for(chooser: Chooser, action: Action) -> list[str]:
    """The key presses that make a fresh `chooser` give `action` (worked
    out from the rules of the screen, not from the chooser's offers)."""
    kind = chooser.kind
    tops = [slot[-1] for slot in chooser.view.queue if slot]
    position = {top.pid: i + 1 for i, top in enumerate(tops)}
    reversed_ = chooser.view.direction == "right-to-left"
    if kind == "direction":
        return ["l" if action.direction == "left-to-right" else "r"]
    if kind == "reveal":
        return ["r" if type(action).__name__ == "Reveal" else "k"]
    if kind == "move_to":
        assert isinstance(action, MoveTo)
        numbers = [str(a.index + 1) for a in chooser.options if isinstance(a, MoveTo)]
        return number_keys(action.index + 1, numbers)
    if kind == "place":
        assert isinstance(action, Place)
        hand: list[Any] = []
        for a in chooser.options:
            if isinstance(a, Place) and a.card not in hand:
                hand.append(a.card)
        hand.sort(key=lambda c: FAMILY_NAMES[c.family])  # two families: one, then the other
        first = number_keys(hand.index(action.card) + 1, [str(i + 1) for i in range(len(hand))])
        if not tops:
            return [*first, ENTER]
        if action.at == "first":
            return [*first, RIGHT if reversed_ else LEFT]
        if action.at == "last":
            return [*first, LEFT if reversed_ else RIGHT]
        covers = [
            str(position[a.at])
            for a in chooser.options
            if isinstance(a, Place) and a.card == action.card and isinstance(a.at, int)
        ]
        return [*first, *number_keys(position[action.at], covers)]
    assert isinstance(action, Target)
    numbers = [str(position[a.pid]) for a in chooser.options if isinstance(a, Target)]
    return number_keys(position[action.pid], numbers)


def press_all(chooser: Chooser, keys: Sequence[str]) -> Action | None:
    """Press `keys` in turn; the action the last one gives (None before)."""
    action = None
    for i, key in enumerate(keys):
        action = chooser.press(key)
        if action is not None:
            assert i == len(keys) - 1, f"{keys[: i + 1]} already gave {action}"
    return action


def reachable(chooser: Chooser, depth: int = 4) -> tuple[set[Action], list[str]]:
    """Every action some sequence of at most `depth` keys (from `KEYS`)
    gives, and the problems met (a key that raised). The chooser's state is
    its picked card and typed digits, so a search over them is complete."""
    found: set[Action] = set()
    problems: list[str] = []
    seen: set[tuple[Any, str]] = set()
    frontier = [chooser]
    for _ in range(depth):
        following = []
        for state in frontier:
            for key in KEYS:
                after = copy.copy(state)
                try:
                    action = after.press(key)
                except Exception as exc:  # noqa: BLE001 -- reported by the test
                    problems.append(f"{key!r} after {state.digits!r}: {exc!r}")
                    continue
                if action is not None:
                    found.add(action)
                    continue
                mark = (after.card, after.digits)
                if mark not in seen:
                    seen.add(mark)
                    following.append(after)
        frontier = following
    return found, problems


# ---------------------------------------------------------------- an in-process table


class Table:
    """Seat 0 is a person (a `GameController` fed with keys, its commands
    recorded in `sent`); the other seats are server bots. `InProcess`
    carries the bytes; the person's client sends only what is automatic
    (seed commitment, openings, final reveal) by itself."""

    def __init__(
        self,
        players: int = 3,
        *,
        label: str = "tui",
        name: str = "Ann",
        strategy: str = "random",
        controller: Callable[..., GameController] = GameController,
        versions: tuple[int, ...] = m.SUPPORTED_VERSIONS,
    ) -> None:
        self.world = InProcess(
            seed=1,
            entropy=FixedEntropy(label),
            make_secrets=fixed_secrets(label),
            versions=versions,
        )
        self.me: Client = self.world.connect(name, behaviour=Behaviour(None))
        self.world.settle()
        self.sent: list[Command] = []
        self.controller = controller(self.me.state, self.sent.append)
        self.players = players
        self.strategy = strategy

    def seat_bots_and_start(self, bots: int | None = None) -> None:
        self.ask(m.CreateRoom(settings=m.RoomSettings.for_players(self.players), name="tui tests"))
        for _ in range(self.players - 1 if bots is None else bots):
            self.ask(m.AddBot(strategy=self.strategy))
        self.start()

    def start(self) -> None:
        self.ask(m.Ready(ready=True))
        self.ask(m.StartGame())
        self.changed()

    def ask(self, message: m.Message) -> m.Message | None:
        """Send `message`, carry every byte, and return its answer."""
        request = self.me.send(message)
        self.world.settle()
        answer = self.me.answer(request)
        assert not isinstance(answer, m.Error), answer
        return answer

    @property
    def game(self) -> Any:
        return self.me.state.game

    def changed(self) -> bool:
        return self.controller.changed(self.world.now)

    def until_ours(self) -> None:
        """Run until a decision of ours is pending or the game is over, and
        tell the controller."""

        def ours() -> bool:
            g = self.me.state.game
            return g is not None and (g.end is not None or g.my_turn)

        self.world.run(ours)
        self.changed()
        if self.controller.round_summary is not None and self.controller.end is None:
            self.controller.key(" ")  # (a round's summary waits for a key: it was read)

    def deliver(self, command: Command) -> None:
        """Carry an `Answer` to the server as the app's program does."""
        assert isinstance(command, Answer)
        g = self.game
        assert g.decision is not None and g.decision.turn == command.turn
        self.me.send(g.answer(command.action))
        self.world.settle()
        self.changed()

    def play_to_end(
        self, choose: Callable[[GameController, random.Random], None], *, seed: int = 0
    ) -> int:
        """Answer every decision of ours with the keys `choose` presses (until
        a command is sent) to the end of the game; how many answers."""
        rng = random.Random(seed)
        for answers in range(200):  # each turn of the loop answers once, or returns
            self.until_ours()
            if self.game.end is not None:
                return answers
            before = len(self.sent)
            for _ in range(10):
                choose(self.controller, rng)
                if len(self.sent) > before:
                    break
            assert len(self.sent) == before + 1, "the keys chose nothing"
            command = self.sent[-1]
            assert isinstance(command, Answer)
            assert command.turn == self.game.decision.turn
            assert command.action in self.game.options()
            self.deliver(command)
        raise AssertionError("the game did not end")


def press_an_offer(controller: GameController, rng: random.Random) -> None:
    """One key a person might press: one of the keys on offer."""
    chooser = controller.chooser
    assert chooser is not None
    controller.key(rng.choice(chooser.offers()).key)

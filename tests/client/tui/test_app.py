"""The prompt_toolkit application (`app.build_application`) with keys from
a pipe: what a terminal's bytes become (arrows, Enter, Esc, Backspace),
a placement made with the keys through the application to the command it
sends, chat and help through the application, Ctrl-C, and what is written
to a terminal in monochrome and in colour.

prompt_toolkit runs on asyncio: each test runs its own event loop with
`asyncio.run`, and everything it awaits has a deadline.
"""

from __future__ import annotations

import asyncio
import io
import random
import re
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import pytest
from prompt_toolkit.application import Application
from prompt_toolkit.data_structures import Size
from prompt_toolkit.input import PipeInput, create_pipe_input
from prompt_toolkit.output import DummyOutput, Output
from prompt_toolkit.output.vt100 import Vt100_Output

from oriflamme.client.tui import app
from oriflamme.client.tui.controller import Answer, Quit, Say
from oriflamme.client.tui.screen import Line, render
from oriflamme.engine import FIRST, LAST, Place
from tests.deadlines import GAME_HANG, HANG

from .helpers import NAMES, Table, press_an_offer, scene_of, walk

RIGHT, LEFT, ENTER, ESCAPE, BACKSPACE, CTRL_C = "\x1b[C", "\x1b[D", "\r", "\x1b", "\x7f", "\x03"


class Keys:
    """A screen that keeps the keys it is given and draws a fixed position."""

    def __init__(self) -> None:
        self.keys: list[str] = []
        self.drawn = 0
        self.scene = scene_of(next(g for g, _ in walk(3, 1) if g.round == 2))

    def key(self, key: str) -> None:
        self.keys.append(key)

    def lines(self, width: int, height: int) -> list[Line]:
        self.drawn += 1
        return render(self.scene, width, height)

    def tick(self, now: float) -> bool:
        return False


async def until(condition: Callable[[], bool], what: str, timeout: float = HANG) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.005)


def run_app(
    screen: Any,
    steps: Callable[[PipeInput, Application[int]], Awaitable[None]],
    *,
    colour: bool = False,
    output: Output | None = None,
    **options: Any,
) -> int | None:
    """Run the application on `screen` while `steps` sends keys; its result."""

    async def main() -> int | None:
        with create_pipe_input() as pipe:
            application = app.build_application(
                screen, colour=colour, input=pipe, output=output or DummyOutput(), **options
            )
            task = asyncio.ensure_future(application.run_async())
            try:
                await until(lambda: application.is_running or task.done(), "the application")
                await steps(pipe, application)
            finally:
                future = application.future
                if future is not None and not future.done():
                    application.exit(result=0)
                result = await asyncio.wait_for(task, HANG)
            return result

    return asyncio.run(asyncio.wait_for(main(), GAME_HANG))  # (steps of HANG)


# ---------------------------------------------------------------- keys


def test_terminal_bytes_become_the_controllers_keys() -> None:
    screen = Keys()
    sent = [
        ("1", "1"),
        (RIGHT, "right"),
        (LEFT, "left"),
        (ENTER, "enter"),
        ("\n", "enter"),
        (ESCAPE, "escape"),  # alone: told from a sequence after `ttimeoutlen`
        (BACKSPACE, "backspace"),
        ("\t", None),  # not a key of the game
        ("é", "é"),
        ("?", "?"),
        ("/", "/"),
        ("q", "q"),
    ]
    wanted = [key for _, key in sent if key is not None]

    async def steps(pipe: PipeInput, application: Application[int]) -> None:
        count = 0
        for data, key in sent:
            pipe.send_text(data)
            if key is not None:
                count += 1

                def pressed(n: int = count) -> bool:
                    return len(screen.keys) >= n

                await until(pressed, f"key {data!r}")

    assert run_app(screen, steps) == 0
    assert screen.keys == wanted
    assert screen.drawn > 0


def test_escape_sequences_read_as_mouse_events_do_no_harm() -> None:
    """A pasted colour code (ESC [ 3 1 m) or a mouse report is read by
    prompt_toolkit as a mouse event, whose own handler fails on it: they
    are dropped, the application goes on, and the keys after them count."""
    screen = Keys()

    async def steps(pipe: PipeInput, application: Application[int]) -> None:
        pipe.send_text("\x1b[31mred\x1b[<0;1Mx\x1b[Mabc")
        await until(lambda: "x" in screen.keys, "the keys after the sequences")
        assert application.is_running

    assert run_app(screen, steps) == 0
    assert screen.keys[:3] == ["r", "e", "d"]


def test_ctrl_c_exits_or_quits_through_the_program() -> None:
    async def interrupt(pipe: PipeInput, application: Application[int]) -> None:
        pipe.send_text(CTRL_C)
        await until(lambda: application.future is not None and application.future.done(), "exit")

    assert run_app(Keys(), interrupt) == 130
    quits: list[str] = []

    async def quit_once(pipe: PipeInput, application: Application[int]) -> None:
        pipe.send_text(CTRL_C)
        await until(lambda: quits == ["quit"], "on_quit")

    assert run_app(Keys(), quit_once, on_quit=lambda: quits.append("quit")) == 0


# ---------------------------------------------------------------- a real game through the app


def at_a_placement_on_a_queue(label: str) -> Table:
    """A table where seat 0 is to place, and the queue is not empty."""
    t = Table(3, label=label)
    t.seat_bots_and_start()
    rng = random.Random(label)
    for _ in range(60):
        t.until_ours()
        g = t.game
        if g.decision.kind == "place" and g.view()["queue"]:
            t.sent.clear()
            return t
        before = len(t.sent)
        while len(t.sent) == before:
            press_an_offer(t.controller, rng)
        t.deliver(t.sent[-1])
    raise AssertionError("no placement on a non-empty queue")


@pytest.mark.parametrize(
    ("label", "direction"), [("app one", "right-to-left"), ("app two", "left-to-right")]
)
def test_a_placement_at_the_right_end_with_the_keys(label: str, direction: str) -> None:
    """1 then Right: the first card of the hand at the right end of the
    queue as drawn (the last to resolve, or the first right to left)."""
    t = at_a_placement_on_a_queue(label)
    g = t.game
    turn = g.decision.turn
    hand = list(dict.fromkeys(a.card for a in g.options() if isinstance(a, Place)))
    assert g.view()["direction"] == direction
    right_end = LAST if direction == "left-to-right" else FIRST

    async def steps(pipe: PipeInput, application: Application[int]) -> None:
        pipe.send_text("1")
        await until(lambda: t.controller.chooser.card is not None, "the card picked")
        pipe.send_text(RIGHT)
        await until(lambda: bool(t.sent), "the answer")

    run_app(t.controller, steps)
    assert t.sent == [Answer(turn, Place(hand[0], right_end))]
    assert t.sent[0].action in g.options()
    t.deliver(t.sent[0])
    assert t.me.errors() == []


def test_escape_goes_back_to_another_card_in_the_app() -> None:
    t = at_a_placement_on_a_queue("app escape")
    g = t.game
    turn = g.decision.turn
    hand = list(dict.fromkeys(a.card for a in g.options() if isinstance(a, Place)))
    assert len(hand) >= 2  # with this table's fixed seeds
    left_end = FIRST if g.view()["direction"] == "left-to-right" else LAST
    chooser = t.controller.chooser

    async def steps(pipe: PipeInput, application: Application[int]) -> None:
        pipe.send_text("1")
        await until(lambda: chooser.card == hand[0], "card 1 picked")
        pipe.send_text(ESCAPE)
        await until(lambda: chooser.card is None, "back to the hand")
        pipe.send_text("2")
        await until(lambda: chooser.card == hand[1], "card 2 picked")
        pipe.send_text(LEFT)
        await until(lambda: bool(t.sent), "the answer")

    run_app(t.controller, steps)
    assert t.sent == [Answer(turn, Place(hand[1], left_end))]


def test_chat_help_and_quit_in_the_app() -> None:
    t = Table(3, label="app chat")
    t.seat_bots_and_start()
    t.until_ours()
    c = t.controller

    async def steps(pipe: PipeInput, application: Application[int]) -> None:
        pipe.send_text("?")
        await until(lambda: c.help, "the help")
        pipe.send_text("z")
        await until(lambda: not c.help, "the help closed")
        pipe.send_text("/")
        await until(lambda: c.chat_input == "", "the chat line")
        pipe.send_text("gg 1")
        await until(lambda: c.chat_input == "gg 1", "the text")
        pipe.send_text(ENTER)
        await until(lambda: bool(t.sent), "the chat command")
        pipe.send_text("/")
        await until(lambda: c.chat_input == "", "the chat line again")
        pipe.send_text("oops")
        await until(lambda: c.chat_input == "oops", "the text again")
        pipe.send_text(ESCAPE)
        await until(lambda: c.chat_input is None, "the chat line cancelled")
        pipe.send_text("q")  # mid-game: it asks first
        await until(lambda: c.status.startswith("Quit?"), "the question")
        pipe.send_text("y")
        await until(lambda: len(t.sent) == 2, "quit")

    run_app(c, steps)
    assert t.sent == [Say("gg 1"), Quit()]


# ---------------------------------------------------------------- what a terminal receives


def terminal_bytes(colour: bool) -> str:
    buffer = io.StringIO()
    output = Vt100_Output(buffer, lambda: Size(rows=24, columns=80), term="xterm-256color")
    screen = Keys()

    async def steps(pipe: PipeInput, application: Application[int]) -> None:
        await until(lambda: screen.drawn > 0 and "Influence" in buffer.getvalue(), "a drawing")

    run_app(screen, steps, colour=colour, output=output)
    return buffer.getvalue()


def sgr_codes(written: str) -> set[str]:
    """Every parameter of the Select Graphic Rendition sequences written."""
    return {p for codes in re.findall(r"\x1b\[([0-9;]*)m", written) for p in codes.split(";")}


def test_monochrome_writes_no_colour_and_colour_does() -> None:
    mono, colour = terminal_bytes(False), terminal_bytes(True)
    for written in (mono, colour):
        assert "Influence Queue" in written
        assert f"{NAMES[1]}" in written
    colours = {str(n) for n in [*range(30, 38), *range(40, 48), *range(90, 98), 38, 48]}
    assert sgr_codes(mono) & colours == set(), sgr_codes(mono)
    assert sgr_codes(mono) & {"1", "7"}  # bold and reverse stay
    assert sgr_codes(colour) & colours


class Ringing(Keys):
    """A screen whose time runs short at its third drawing."""

    def __init__(self) -> None:
        super().__init__()
        self.ticks = 0

    def tick(self, now: float) -> bool:
        self.ticks += 1
        return self.ticks == 3


class Bells(DummyOutput):
    def __init__(self) -> None:
        super().__init__()
        self.rung = 0

    def bell(self) -> None:
        self.rung += 1


def test_the_bell_rings_when_the_screen_says_time_runs_short() -> None:
    """Issue 25: the app asks the screen at every drawing (twice a second at
    least); a screen that says its time runs short gets the bell, once."""
    for bell, rings in ((True, 1), (False, 0)):
        screen, output = Ringing(), Bells()
        run_app(screen, partial(five_drawings, screen), output=output, bell=bell)
        assert output.rung == rings


async def five_drawings(screen: Ringing, pipe: PipeInput, application: Application[int]) -> None:
    while screen.ticks < 5:
        application.invalidate()
        await until(lambda: screen.drawn >= screen.ticks, "a drawing")
        await asyncio.sleep(0.01)


class Written(DummyOutput):
    """An output that keeps what it is asked to write."""

    def __init__(self) -> None:
        super().__init__()
        self.raw: list[str] = []
        self.titles: list[str] = []
        self.flushed = 0

    def set_title(self, title: str) -> None:
        self.titles.append(title)

    def write_raw(self, data: str) -> None:
        self.raw.append(data)

    def flush(self) -> None:
        self.flushed += 1


def test_the_title_is_set_for_the_terminal_and_under_tmux_for_its_window_too() -> None:
    """Issue 25: under tmux the title stayed "Oriflamme" on the player's turn."""
    plain, under_tmux = Written(), Written()
    app.set_title(plain, app.YOUR_TURN, environ={})
    app.set_title(under_tmux, app.YOUR_TURN, environ={"TMUX": "/tmp/tmux-0/default,1,0"})
    assert plain.titles == under_tmux.titles == ["Your turn · Oriflamme"]
    assert plain.raw == [] and under_tmux.raw == ["\x1bkYour turn · Oriflamme\x1b\\"]
    assert plain.flushed and under_tmux.flushed  # at once, not at the next drawing

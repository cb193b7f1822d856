"""The terminal shell: prompt_toolkit on asyncio, with trio as its guest.

How this works
--------------
`run(program, controller)` runs a full-screen prompt_toolkit application
on asyncio, and starts `program` (a trio function: the session, and for
`oriflamme play` an embedded server) with `trio.lowlevel.start_guest_run`,
so both run on one thread: trio's tasks run between asyncio's callbacks,
and read the same objects the screen draws from. Between the two sides:

* trio to the screen: the session calls `Bridge.changed` after every
  change of its mirror; the controller takes it in and the screen redraws;
* the screen to trio: a key that completes a choice gives a `Command`,
  which `Bridge.send` puts on a memory channel through the trio token
  (`run_sync_soon`: thread-safe, never blocks); the program's task that
  reads the channel sends it with the session.

Quitting (q, Ctrl-C, SIGTERM, SIGHUP) exits the application, cancels the
trio program, and waits for it to finish (the embedded server shuts down
cleanly). A failure of the program ends the application with its message
on the terminal, never a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

import trio
from prompt_toolkit.application import Application
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.keys import Keys
from prompt_toolkit.layout import Layout, Window
from prompt_toolkit.layout.controls import FormattedTextControl
from prompt_toolkit.output import ColorDepth, Output
from prompt_toolkit.styles import Style

from ..failures import said
from ..i18n import N_, _
from .choices import (
    BACKSPACE,
    DOWN,
    END,
    ENTER,
    ESCAPE,
    HOME,
    LEFT,
    PAGE_DOWN,
    PAGE_UP,
    QUIT_NOW,
    RIGHT,
    UP,
)
from .controller import Command
from .screen import Line
from .screens import Screens
from .text import ascii_glyphs

log = logging.getLogger("oriflamme.client.tui")

KEY_NAMES: dict[Keys | str, str] = {
    Keys.ControlM: ENTER,
    Keys.ControlJ: ENTER,
    Keys.Escape: ESCAPE,
    Keys.ControlH: BACKSPACE,
    Keys.Backspace: BACKSPACE,
    Keys.Left: LEFT,
    Keys.Right: RIGHT,
    Keys.Up: UP,
    Keys.Down: DOWN,
    Keys.Home: HOME,
    Keys.End: END,
    Keys.PageUp: PAGE_UP,
    Keys.PageDown: PAGE_DOWN,
}


class Screen(Protocol):
    """What the application draws and gives the keys to (`Screens`, or one
    controller alone in tests)."""

    def key(self, key: str) -> None: ...
    def lines(self, width: int, height: int) -> list[Line]: ...
    def tick(self, now: float) -> bool:
        """Time passed; True: ring the bell now (our time is nearly out)."""
        ...


COLOURS = {
    "owner.red": "ansired bold",
    "owner.blue": "ansibrightblue bold",
    "owner.green": "ansigreen bold",
    "owner.yellow": "ansiyellow bold",
    "owner.black": "ansibrightblack bold",
    "card.up": "bold",
    "card.mine": "italic",
    "tokens": "ansiyellow",
    "key": "ansicyan bold",
    "chat": "ansimagenta",
    "banner": "ansiwhite bg:ansired bold",
    "status": "ansiyellow",
    "rule.turn": "ansigreen bold",
    "winner": "bold underline",
    "verified": "ansigreen",
    "dim": "ansibrightblack",
}
# What stays in monochrome: emphasis that needs no colour.
MONO = {
    "title": "reverse",
    "highlight": "reverse",
    "resolving": "bold",
    "turn": "bold",
    "initial": "bold",
    "rule.title": "bold",
    "banner": "reverse bold",
    "winner": "bold underline",
    "key": "bold",
    "card.mine": "italic",
    "changed": "underline",  # (no colour of its own: a card back keeps its family's)
}


# Terminal types that show colour, by their first part (before a "-"): what
# terminals of today call themselves, and the Linux console.
COLOUR_TERMS = frozenset(
    {"xterm", "screen", "tmux", "rxvt", "linux", "ansi", "cygwin", "putty", "konsole"}
    | {"gnome", "vte", "kitty", "alacritty", "foot", "wezterm", "st", "eterm", "mintty"}
    | {"iterm", "iterm2", "contour", "ms"}
)


def colour_wanted(environ: Mapping[str, str] | None = None) -> bool:
    """Colour or not, from the environment; the first rule that applies:

    * NO_COLOR set (https://no-color.org): none;
    * FORCE_COLOR or COLORTERM set: colour;
    * the terminal type (TERM) says monochrome (``dumb``, ``...-mono``,
      ``...-m``): none;
    * TERM says colour: it has ``color`` or ``256`` in it, or its first part
      is a colour terminal's (`COLOUR_TERMS`: xterm, screen, tmux, linux...);
    * no TERM at all (Windows' console has none): colour;
    * anything else (vt100, vt220, a TERM not known here): none."""
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR") or env.get("COLORTERM"):
        return True
    term = env.get("TERM", "").lower()
    if not term:
        return True
    if term == "dumb" or term.endswith(("-mono", "-m")):
        return False
    return "color" in term or "256" in term or term.split("-")[0] in COLOUR_TERMS


# Terminal types that draw no line or arrow glyphs (a real VT100, a serial line).
ASCII_TERMS = ("dumb", "vt")


def ascii_wanted(environ: Mapping[str, str] | None = None, utf8_mode: bool | None = None) -> bool:
    """True: draw the glyphs in ASCII. So where the terminal type (TERM) is
    ``dumb`` or a ``vt...`` one (vt100, vt220...), or where the locale is not
    UTF-8: the first of LC_ALL, LC_CTYPE and LANG that is set (as the C
    library reads them) does not name UTF-8, or none is set (the C locale).

    Python (3.7+) changes a C or POSIX locale into C.UTF-8 as it starts
    (PEP 538: LC_CTYPE=C.UTF-8 in its own environment, and its UTF-8 mode
    on): then, with neither PYTHONUTF8 nor ``-X utf8`` asking for that mode,
    the locale was C, and the drawing is ASCII."""
    env = os.environ if environ is None else environ
    if env.get("TERM", "").startswith(ASCII_TERMS):
        return True
    locale = env.get("LC_ALL") or env.get("LC_CTYPE") or env.get("LANG") or "C"
    if "utf8" not in locale.lower().replace("-", ""):
        return True
    if utf8_mode is None:
        utf8_mode = bool(sys.flags.utf8_mode) and "utf8" not in sys._xoptions
    coerced = not env.get("LC_ALL") and env.get("LC_CTYPE") in ("C.UTF-8", "C.utf8", "UTF-8")
    return bool(utf8_mode) and coerced and not env.get("PYTHONUTF8")


def style(colour: bool) -> Style:
    rules = dict(MONO)
    if colour:
        for name, value in COLOURS.items():
            rules[name] = (rules[name] + " " + value) if name in rules else value
    return Style.from_dict(rules)


def key_name(event: KeyPressEvent) -> str | None:
    """The controller's name for a key press, or None for a key it ignores."""
    key = event.key_sequence[0].key
    if key in KEY_NAMES:
        return KEY_NAMES[key]
    if isinstance(key, str) and len(key) == 1 and key.isprintable():
        return key
    return None


class Bridge:
    """Between the screen (asyncio) and the program (trio); see the module docstring."""

    def __init__(self, controller: Screens, *, bell: bool = True) -> None:
        self.controller = controller
        self.bell = bell
        self.app: Application[int] | None = None
        self.token: trio.lowlevel.TrioToken | None = None
        self.cancel_scope: trio.CancelScope | None = None
        self.commands: trio.MemoryReceiveChannel[Command] | None = None
        self._to_trio: trio.MemorySendChannel[Command] | None = None
        controller.send = self.send

    def enter_trio(self) -> trio.MemoryReceiveChannel[Command]:
        """Called first thing in the trio program: the channel of commands."""
        self.token = trio.lowlevel.current_trio_token()
        send, receive = trio.open_memory_channel[Command](64)
        self._to_trio, self.commands = send, receive
        return receive

    def send(self, command: Command) -> None:
        if self.token is None or self._to_trio is None:
            return
        channel = self._to_trio

        def put() -> None:
            # 64 commands waiting: the program is gone or stuck; this one is dropped
            with contextlib.suppress(
                trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError
            ):
                channel.send_nowait(command)

        with contextlib.suppress(trio.RunFinishedError):
            self.token.run_sync_soon(put)

    def changed(self, *, banner: str | None = None) -> None:
        """The session's mirror (or connection) changed: take it in and redraw."""
        controller = self.controller
        if banner is not None:
            controller.banner = banner
        ours = controller.changed(time.monotonic())
        app = self.app
        if app is None:
            return
        if ours and self.bell:
            app.output.bell()
        if ours:
            set_title(app.output, _(YOUR_TURN))
        elif not controller.my_turn:
            set_title(app.output, TITLE)
        app.invalidate()

    def exit(self, code: int = 0) -> None:
        app = self.app
        if app is not None and app.is_running and app.future is not None and not app.future.done():
            app.exit(result=code)

    def cancel(self) -> None:
        if self.token is not None and self.cancel_scope is not None:
            scope = self.cancel_scope
            with contextlib.suppress(trio.RunFinishedError):
                self.token.run_sync_soon(scope.cancel)


def build_application(
    controller: Screen,
    *,
    colour: bool = True,
    ascii_only: bool = False,
    on_quit: Callable[[], None] | None = None,
    bell: bool = True,
    **app_options: Any,
) -> Application[int]:
    """The full-screen application drawing `controller`'s scene (redrawn
    twice a second: the clock; `bell`: ring when the controller says;
    `ascii_only`: glyphs drawn in ASCII, `text.ascii_glyphs`)."""

    def fragments() -> StyleAndTextTuples:
        if controller.tick(time.monotonic()) and bell:
            app.output.bell()
        size = app.output.get_size()
        out: StyleAndTextTuples = []
        for i, line in enumerate(controller.lines(size.columns, size.rows)):
            if i:
                out.append(("", "\n"))
            out.extend([(kind, ascii_glyphs(part)) for kind, part in line] if ascii_only else line)
        return out

    bindings = KeyBindings()

    @bindings.add(Keys.Any)
    @bindings.add(Keys.ControlM)
    @bindings.add(Keys.ControlJ)
    @bindings.add(Keys.Escape)
    @bindings.add(Keys.ControlH)
    @bindings.add(Keys.Left)
    @bindings.add(Keys.Right)
    @bindings.add(Keys.Up)
    @bindings.add(Keys.Down)
    @bindings.add(Keys.Home)
    @bindings.add(Keys.End)
    @bindings.add(Keys.PageUp)
    @bindings.add(Keys.PageDown)
    def _key(event: KeyPressEvent) -> None:
        name = key_name(event)
        if name is not None:
            controller.key(name)

    # prompt_toolkit reads some escape sequences (a pasted colour code, say)
    # as mouse events, and its own mouse handler fails on them: we take no
    # mouse input, so they are dropped here.
    @bindings.add(Keys.Vt100MouseEvent)
    @bindings.add(Keys.WindowsMouseEvent)
    def _mouse(event: KeyPressEvent) -> None:
        pass

    @bindings.add(Keys.ControlC)
    def _interrupt(event: KeyPressEvent) -> None:
        if on_quit is not None:
            on_quit()
        else:
            event.app.exit(result=130)

    app: Application[int] = Application(
        layout=Layout(Window(FormattedTextControl(fragments, show_cursor=False))),
        key_bindings=bindings,
        full_screen=True,
        style=style(colour),
        color_depth=ColorDepth.DEPTH_4_BIT if colour else ColorDepth.DEPTH_1_BIT,
        refresh_interval=0.5,
        **app_options,
    )
    app.ttimeoutlen = 0.05  # Esc alone answers at once, not after half a second
    return app


TITLE = "Oriflamme"
YOUR_TURN = N_("Your turn · Oriflamme")  # (what matters first: a tab shows the start)


def set_title(output: Output, title: str, environ: Mapping[str, str] = os.environ) -> None:
    """Say `title` in the terminal's title bar (OSC 2, which tmux takes as
    the pane's title) and, under tmux, as its window's name too (the status
    line shows that one), at once."""
    output.set_title(title)
    if environ.get("TMUX"):
        clean = "".join(ch for ch in title if ch.isprintable())
        output.write_raw(f"\x1bk{clean}\x1b\\")
    output.flush()


class ProgramFailed(Exception):
    """The trio program stopped with an error (its message is for a person)."""


def run(
    program: Callable[[Bridge], Awaitable[None]],
    controller: Screens,
    *,
    bell: bool = True,
    colour: bool | None = None,
    ascii_only: bool | None = None,
    **app_options: Any,
) -> int:
    """Run the screen and `program` until the player quits or the program
    ends; the exit status. `ProgramFailed` if the program failed."""
    if ascii_only is None:
        ascii_only = ascii_wanted()
    return asyncio.run(_host(program, controller, bell, colour, ascii_only, app_options))


async def _host(
    program: Callable[[Bridge], Awaitable[None]],
    controller: Screens,
    bell: bool,
    colour: bool | None,
    ascii_only: bool,
    app_options: dict[str, Any],
) -> int:
    loop = asyncio.get_running_loop()
    bridge = Bridge(controller, bell=bell)
    app = build_application(
        controller,
        colour=colour_wanted() if colour is None else colour,
        ascii_only=ascii_only,
        on_quit=lambda: controller.key(QUIT_NOW),
        bell=bell,
        **app_options,
    )
    bridge.app = app
    finished: asyncio.Future[Any] = loop.create_future()

    async def guest() -> None:
        with trio.CancelScope() as bridge.cancel_scope:
            await program(bridge)

    def done(outcome: Any) -> None:
        if not finished.done():
            finished.set_result(outcome)
        bridge.exit()

    trio.lowlevel.start_guest_run(
        guest,
        run_sync_soon_threadsafe=loop.call_soon_threadsafe,
        done_callback=done,
        host_uses_signal_set_wakeup_fd=True,
    )
    for signum in (signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(signum, lambda: bridge.exit(143))
    try:
        code = await app.run_async()
    finally:
        bridge.cancel()
        outcome = await finished
        for signum in (signal.SIGTERM, signal.SIGHUP):
            loop.remove_signal_handler(signum)
    try:
        outcome.unwrap()
    except (trio.Cancelled, KeyboardInterrupt):
        pass
    except BaseException as exc:  # noqa: BLE001 -- said plainly by the command
        log.error("the program stopped", exc_info=exc)
        failed = said(exc, ignoring=(trio.Cancelled,))
        if failed:
            raise ProgramFailed(failed) from None
    return code if code is not None else 0

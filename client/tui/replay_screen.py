"""`oriflamme replay`: a finished game's record, step by step, on the game screen.

`ReplayController` holds the steps of `oriflamme.client.replay` and the
step shown; ← → move one step, PgUp PgDn ten, Home End to the deal and the
end. Every card is shown (the game is over: the record knows them all),
face-down ones in parentheses; the hand shown is that of the seat about to
act. No I/O: the command reads the file and runs the application.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from oriflamme.engine import Step
from oriflamme.protocol.record import Record
from oriflamme.protocol.verify import GameVerdict

from ..i18n import N_, _, elide
from ..narrator import EventLog, seat_pattern
from ..replay import ReplayStep
from .choices import END, HOME, LEFT, PAGE_DOWN, PAGE_UP, QUIT_NOW, RIGHT
from .screen import EndSummary, Line, Row, Scene, end_order, placings, render, rule, wrap
from .text import cut, safe

# Lines for a step's description under the board (at 80x24, room for two).
DESCRIBED_ROWS = 2

KEYS = N_("[← →] a step  [PgUp PgDn] ten  [Home End] the deal, the end  [q] quit")


class ReplayController:
    """See the module docstring."""

    def __init__(
        self, record: Record, steps: list[ReplayStep], verdict: GameVerdict, name: str
    ) -> None:
        self.record = record
        self.steps = steps
        self.verdict = verdict
        self.name = name
        self.at = 0
        self.status = ""
        self.on_quit: Callable[[], None] = lambda: None
        self.names = [safe(s.name, 16) for s in record.seats]

    def key(self, key: str) -> None:
        self.status = ""
        last = len(self.steps) - 1
        moves = {LEFT: -1, RIGHT: 1, PAGE_UP: -10, PAGE_DOWN: 10}
        if key in moves:
            self.at = max(0, min(last, self.at + moves[key]))
        elif key == HOME:
            self.at = 0
        elif key == END:
            self.at = last
        elif key in ("q", QUIT_NOW):
            self.on_quit()
        else:
            said = _("{key} does nothing here: the keys are ← → PgUp PgDn Home End q")
            self.status = said.format(key=key)

    def _named(self, text: str) -> str:
        """A step's description with the players' names for "seat N"."""

        def name(found: re.Match[str]) -> str:
            seat = int(found.group(1))
            return self.names[seat] if seat < len(self.names) else found.group(0)

        return elide(re.sub(seat_pattern(), name, safe(text, 300)))

    def tick(self, now: float) -> bool:
        return False

    def lines(self, width: int, height: int) -> list[Line]:
        return render(self.scene(width), width, height)

    def scene(self, width: int = 80) -> Scene:
        step = self.steps[self.at]
        log = EventLog(lambda seat: self.names[seat] if seat < len(self.names) else "?")
        for earlier in self.steps[: self.at + 1]:
            log.add(earlier.events)
        position = step.view
        decision = position.step
        nxt = self.steps[self.at + 1].actor if self.at + 1 < len(self.steps) else None
        over = self.at == len(self.steps) - 1
        end = None
        if over:
            results = self.record.results
            verified = (
                _("Verified: fair deal, every hidden card opened and checked.")
                if self.verdict.ok
                else _("Verification FAILED: {reasons}").format(
                    reasons="; ".join(self.verdict.reasons())
                )
            )
            end = EndSummary(results.scores, results.winners, verified, "")
        step_of = _("Replay · step {step} of {steps}")
        footer = [rule(width, step_of.format(step=self.at, steps=len(self.steps) - 1))]
        said = wrap(" " + self._named(step.description), width - 1, "   ")
        if len(said) > DESCRIBED_ROWS:  # (the rest is in the log, in full)
            said = [*said[: DESCRIBED_ROWS - 1], cut(said[DESCRIBED_ROWS - 1], width - 3) + " …"]
        footer += [Row(width).add(part).line() for part in said]
        if end is not None:
            ranking, __ = end_order(end, position)
            won = {seat: " " + _("(winner)") for seat in end.winners}
            entries = [
                (f"{place + 1}. {self.names[seat]} {end.scores[seat]}{won.get(seat, '')}", "")
                for place, seat in enumerate(ranking)
            ]
            footer += placings(entries, width)
            if not self.record.results.complete:
                stopped = " " + _("Ended by vote in round {round}: no winner").format(
                    round=position.round
                )
                footer.append(Row(width).add(stopped).line())
            footer.append(Row(width).add(" " + end.verified, "class:verified").line())
        return Scene(
            view=position,
            names=self.names,
            seat=None,
            title=_("Oriflamme · replay · {name}").format(name=safe(self.name, 16)),
            log=log.lines,
            decision_seat=nxt if decision != Step.OVER else None,
            decision_kind=None if decision == Step.OVER else decision.value,
            status=self.status or _(KEYS),
            help_key=N_("q quits"),
            reveal_all=True,
            hand_of=nxt if nxt is not None else step.actor,
            footer=footer,
        )

"""The generated parts of docs/COMMANDS.md: every `oriflamme` subcommand's options.

How this works
--------------
`oriflamme.launcher.cli.build_parser()` is the one source. For the command
and for each subcommand, `blocks()` writes a block (between
``<!-- generated: NAME -->`` and ``<!-- end generated -->``, as in
docs/PROTOCOL.md): for the command, a table of its subcommands and their
help lines; for each subcommand, a synopsis, then a table per group of
arguments, each row an argument's names, its default and its help, as the
parser holds them. The prose around the blocks is written by hand, and a
test fails when a block and the parser disagree (`python -m tools.docgen`
rewrites them).

Why tables from the parser's actions, not the text of ``--help``: argparse's
help text depends on the terminal's width (COLUMNS) and on the Python
version (3.13 writes ``-o, --output FILE`` where 3.11 writes ``-o FILE,
--output FILE``, and 3.14 may colour it), so a block copied from it would
differ from one machine to the next. What the parser holds (option strings,
metavars, choices, defaults, help) is the same everywhere, and a table
shows the defaults, which ``--help`` leaves out.

>>> _, record = subcommands(_build_parser())["record"]
>>> print(synopsis("oriflamme record", record))
oriflamme record HOST[:PORT] ID [-o FILE] [--tls] [--tls-fingerprint SHA256]
                 [--tls-ca FILE]
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Iterable

WIDTH = 78  # the synopses' width, whatever the terminal's
PROG = "oriflamme"


def _build_parser() -> argparse.ArgumentParser:
    from oriflamme.launcher.cli import build_parser

    return build_parser()


def subcommands(parser: argparse.ArgumentParser) -> dict[str, tuple[str, argparse.ArgumentParser]]:
    """Each subcommand of `parser`, in the parser's order: its help line and its parser."""
    out: dict[str, tuple[str, argparse.ArgumentParser]] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                out[name] = (helps.get(name, ""), sub)
    return out


def _shown(action: argparse.Action) -> bool:
    return action.help is not argparse.SUPPRESS and not isinstance(
        action, argparse._HelpAction | argparse._SubParsersAction
    )


def _metavar(action: argparse.Action) -> str:
    """What the argument's value is called, as argparse's help calls it."""
    if action.metavar is not None:
        return str(action.metavar)
    if action.choices is not None:
        return "{" + ",".join(str(c) for c in action.choices) + "}"
    return action.dest if not action.option_strings else action.dest.upper()


def _takes_value(action: argparse.Action) -> bool:
    return action.nargs != 0


def _usage_part(action: argparse.Action) -> str:
    if not action.option_strings:
        name = _metavar(action)
        return f"[{name}]" if action.nargs == "?" else name
    option = min(action.option_strings, key=len)  # `-o` rather than `--output`
    part = f"{option} {_metavar(action)}" if _takes_value(action) else option
    return part if action.required else f"[{part}]"


def synopsis(prog: str, parser: argparse.ArgumentParser) -> str:
    """The command line, wrapped at `WIDTH`: positionals first, then options."""
    actions = [a for a in parser._actions if _shown(a)]
    positionals = [a for a in actions if not a.option_strings]
    optionals = [a for a in actions if a.option_strings]
    parts = [_usage_part(a) for a in positionals + optionals]
    lines = textwrap.wrap(
        " ".join(p.replace(" ", "\0") for p in parts),
        width=WIDTH,
        initial_indent=prog + " ",
        subsequent_indent=" " * (len(prog) + 1),
        break_on_hyphens=False,
    )
    return "\n".join(line.replace("\0", " ") for line in lines)


def _names(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{_metavar(action)}`"
    value = f" {_metavar(action)}" if _takes_value(action) else ""
    return ", ".join(f"`{option}{value}`" for option in action.option_strings)


def _default(action: argparse.Action) -> str:
    default = action.default
    if default is None or default is argparse.SUPPRESS or not _takes_value(action):
        return ""
    return f"`{default}`"


def _help(action: argparse.Action, prog: str) -> str:
    text = action.help or ""
    if "%" in text:  # argparse's own expansion: %(default)s, %(prog)s, ...
        params = dict(vars(action), prog=prog)
        if params.get("choices") is not None:
            params["choices"] = ", ".join(str(c) for c in params["choices"])
        text = text % params
    if action.required and action.option_strings:
        text = f"required; {text}" if text else "required"
    return text


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _table(actions: Iterable[argparse.Action], prog: str) -> str:
    rows = [
        f"| {_cell(_names(a))} | {_cell(_default(a))} | {_cell(_help(a, prog))} |" for a in actions
    ]
    return "\n".join(["| argument | default | what it is |", "| --- | --- | --- |", *rows]) + "\n"


def command_block(prog: str, parser: argparse.ArgumentParser) -> str:
    """A subcommand's block: its synopsis, and a table per group of arguments."""
    out = ["```text\n" + synopsis(prog, parser) + "\n```\n"]
    for group in parser._action_groups:
        actions = [a for a in group._group_actions if _shown(a)]
        if not actions:
            continue
        title = group.title or ""
        if title == "positional arguments":
            title = "arguments"
        elif title in ("options", "optional arguments"):  # 3.10+ / before
            title = "options"
        out.append(f"{title[:1].upper()}{title[1:]}:\n\n{_table(actions, prog)}")
    return "\n".join(out)


def overview_block(parser: argparse.ArgumentParser) -> str:
    """The command's block: every subcommand and its help line."""
    rows = [
        f"| [`{name}`](#oriflamme-{name}) | {_cell(help_line)} |"
        for name, (help_line, _) in subcommands(parser).items()
    ]
    return "\n".join(["| command | what it does |", "| --- | --- |", *rows]) + "\n"


def blocks() -> dict[str, str]:
    """Every generated block of docs/COMMANDS.md, by name."""
    parser = _build_parser()
    out = {"commands": overview_block(parser)}
    for name, (_, sub) in subcommands(parser).items():
        out[f"command:{name}"] = command_block(f"{PROG} {name}", sub)
    return out

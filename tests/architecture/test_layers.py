"""The layers: what each part of the code may import, and no import circles.

Read from the source (every import statement, at any depth of a module,
including those inside functions and ``TYPE_CHECKING`` blocks), and checked
again at run time in a fresh interpreter:

    engine <- protocol <- server.core <- server's trio shell (net, store, app, ...) <-.
                     \\                                                               launcher (cli, play,
                      <- client (secrets, state, bots, endpoint) <- client's shell <-'  house_bots, inprocess)

* engine, protocol, server.core and the client's sans-I/O modules import no
  trio, asyncio, socket, sqlite3, threading, selectors, subprocess,
  prompt_toolkit, and read no clock (time, datetime);
* engine imports nothing of the project; protocol only the engine;
  server.core the engine and protocol; the client's sans-I/O modules the
  engine, protocol and each other;
* client and server are siblings over the protocol: no module of the server
  (its shell included) imports the client, and no module of the client
  imports the server; the launcher is the one package that imports both,
  and no runtime module outside it imports the launcher;
* no runtime module imports the tools (doc generators);
* no circle of imports among the project's modules.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.deadlines import HANG

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = {
    "engine": "oriflamme.engine",
    "protocol": "oriflamme.protocol",
    "server": "oriflamme.server",
    "client": "oriflamme.client",
    "launcher": "oriflamme.launcher",
    "tools": "tools",
}

# No I/O and no clock below the shells.
FORBIDDEN = {
    "trio",
    "asyncio",
    "socket",
    "sqlite3",
    "threading",
    "selectors",
    "subprocess",
    "prompt_toolkit",
    "time",
    "datetime",
    "os",
    "pathlib",
    "io",
    "logging",
    # (gettext reads catalogs from disk, locale the process's settings: the
    # language is chosen and loaded in the shells, client/catalogs.py)
    "gettext",
    "locale",
}
SANS_IO_CLIENT = (
    "oriflamme.client.seat_secrets",
    "oriflamme.client.state",
    "oriflamme.client.bots",
    "oriflamme.client.ismcts",
    "oriflamme.client.endpoint",
    "oriflamme.client.replay",
    "oriflamme.client.narrator",
    "oriflamme.client.view",
    "oriflamme.client.failures",
    "oriflamme.client.i18n",
    # the terminal client's logic: what is drawn and what keys do
    "oriflamme.client.tui.text",
    "oriflamme.client.tui.words",
    "oriflamme.client.tui.choices",
    "oriflamme.client.tui.screen",
    "oriflamme.client.tui.controller",
    "oriflamme.client.tui.lobby",
    "oriflamme.client.tui.replay_screen",
    "oriflamme.client.tui.screens",
)
# What each runtime package must not import, at any depth: client and
# server are siblings over the protocol, and the launcher, which imports
# both, is imported by nothing of the runtime (tools, tests and bench, which
# are not installed, may import it).
LAUNCHER = "oriflamme.launcher"
NOT_IMPORTED = {
    "oriflamme.engine": ("oriflamme.server", "oriflamme.client", LAUNCHER),
    "oriflamme.protocol": ("oriflamme.server", "oriflamme.client", LAUNCHER),
    "oriflamme.server": ("oriflamme.client", LAUNCHER),
    "oriflamme.client": ("oriflamme.server", LAUNCHER),
}

# What each layer may import of the project.
ALLOWED = {
    "oriflamme.engine": ("oriflamme.engine",),
    "oriflamme.protocol": ("oriflamme.engine", "oriflamme.protocol"),
    "oriflamme.server.core": ("oriflamme.engine", "oriflamme.protocol", "oriflamme.server.core"),
    **{
        name: ("oriflamme.engine", "oriflamme.protocol", *SANS_IO_CLIENT) for name in SANS_IO_CLIENT
    },
}


def _modules() -> dict[str, Path]:
    found = {}
    for folder, package in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """Every module `name` imports, absolute, at any depth of its source."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                stem = ".".join([*base, node.module] if node.module else base)
            else:
                stem = node.module or ""
            out.add(stem)
            # `from pkg import mod` imports the module pkg.mod when there is one.
            out.update(f"{stem}.{a.name}" for a in node.names if f"{stem}.{a.name}" in MODULES)
    return out


IMPORTS = {name: _imports(name, path) for name, path in MODULES.items()}


def _layer(name: str) -> str | None:
    for layer in sorted(ALLOWED, key=len, reverse=True):
        if name == layer or name.startswith(layer + "."):
            return layer
    return None


@pytest.mark.parametrize("name", sorted(n for n in MODULES if _layer(n)))
def test_a_layer_imports_only_what_is_below_it(name: str) -> None:
    layer = _layer(name)
    assert layer is not None
    allowed = ALLOWED[layer]
    ours = {i for i in IMPORTS[name] if i.startswith(("oriflamme", "tools"))}
    wrong = sorted(i for i in ours if not any(i == a or i.startswith(a + ".") for a in allowed))
    assert not wrong, f"{name} imports {wrong}: the {layer} layer may import only {allowed}"
    io = sorted(i for i in IMPORTS[name] if i.split(".")[0] in FORBIDDEN)
    assert not io, f"{name} imports {io}: no I/O, threads or clock in the {layer} layer"


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _crossings(imports: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(module, what it imports) for every import `NOT_IMPORTED` forbids."""
    return sorted(
        (name, i)
        for name, imported in imports.items()
        for package, forbidden in NOT_IMPORTED.items()
        if _within(name, package)
        for i in imported
        if any(_within(i, f) for f in forbidden)
    )


def _meeting_points(imports: dict[str, set[str]]) -> list[str]:
    """The modules that import both the client and the server."""
    return sorted(
        name
        for name, imported in imports.items()
        if any(_within(i, "oriflamme.client") for i in imported)
        and any(_within(i, "oriflamme.server") for i in imported)
    )


def test_client_and_server_meet_only_through_the_protocol() -> None:
    """No module of the server (its shell included) imports the client or
    the launcher; no module of the client imports the server or the
    launcher; nor do the engine and the protocol."""
    wrong = _crossings(IMPORTS)
    assert not wrong, (
        "imports across the shells (client and server are siblings over the protocol;"
        f" only the launcher imports both, and nothing of the runtime imports it): {wrong}"
    )


def test_only_the_launcher_imports_both_client_and_server() -> None:
    both = [n for n in _meeting_points(IMPORTS) if not _within(n, "tools")]
    wrong = [n for n in both if not _within(n, LAUNCHER)]
    assert not wrong, f"modules outside the launcher that import client and server: {wrong}"
    assert both, "the launcher imports both (`cli`, `play`): the check reads no import"


def test_no_runtime_module_imports_the_tools() -> None:
    wrong = sorted(
        name
        for name, imports in IMPORTS.items()
        if name.startswith("oriflamme")
        and any(i == "tools" or i.startswith("tools.") for i in imports)
    )
    assert not wrong, f"runtime modules import the doc tools: {wrong}"


def test_no_import_circles() -> None:
    graph = {
        name: {i for i in imports if i in MODULES and i != name}
        for name, imports in IMPORTS.items()
    }
    # A package's __init__ re-exporting its modules is not a circle by itself:
    # a module importing its own package's __init__ counts only through what
    # that __init__ imports, so drop edges from a package to its own children.
    for name in graph:
        graph[name] = {i for i in graph[name] if not i.startswith(name + ".")}
    cycles = _cycles(graph)
    assert not cycles, "import circles: " + "; ".join(" -> ".join(c) for c in cycles)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_checks_see_a_circle_and_a_wrong_import() -> None:
    """The checks above can fail: a made-up circle and a made-up import are caught."""
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]
    assert _layer("oriflamme.protocol.codec") == "oriflamme.protocol"
    assert _layer("oriflamme.server.core.table") == "oriflamme.server.core"
    assert _layer("oriflamme.launcher.cli") is None  # the launcher may import anything
    # A bot brought back into the server's shell, the client reaching for the
    # server or the launcher, and the launcher importing both:
    crossing = {
        "oriflamme.server.net": {"oriflamme.client.bots", "oriflamme.server.core"},
        "oriflamme.server.app": {"oriflamme.launcher.house_bots"},
        "oriflamme.client.session": {"oriflamme.server.core", "oriflamme.protocol"},
        "oriflamme.client.tui.app": {"oriflamme.launcher"},
        "oriflamme.protocol.codec": {"oriflamme.client"},
        "oriflamme.launcher.cli": {"oriflamme.client.bots", "oriflamme.server.app"},
        "oriflamme.clientele": {"oriflamme.server"},  # (not the client: a name alike)
    }
    assert _crossings(crossing) == [
        ("oriflamme.client.session", "oriflamme.server.core"),
        ("oriflamme.client.tui.app", "oriflamme.launcher"),
        ("oriflamme.protocol.codec", "oriflamme.client"),
        ("oriflamme.server.app", "oriflamme.launcher.house_bots"),
        ("oriflamme.server.net", "oriflamme.client.bots"),
    ]
    assert _meeting_points(crossing) == ["oriflamme.launcher.cli", "oriflamme.server.net"]
    fake = ROOT / "tests" / "architecture" / "_fake_module.py"
    fake.write_text("from ..server.core import lobby\nimport socket\n", encoding="utf-8")
    try:
        assert "socket" in _imports("oriflamme.protocol._fake_module", fake)
        assert "oriflamme.server.core" in _imports("oriflamme.protocol._fake_module", fake)
    finally:
        fake.unlink()


@pytest.mark.process
def test_at_run_time_the_sans_io_layers_load_no_io_module() -> None:
    """Importing everything below the shells, in a fresh interpreter, loads
    no I/O or thread module (the stdlib's own `time` and msgpack's `datetime`
    are loaded by the interpreter and msgpack themselves, so the source check
    above covers the clock)."""
    code = (
        "import sys\n"
        "import oriflamme.engine, oriflamme.protocol, oriflamme.server.core\n"
        + "".join(f"import {name}\n" for name in SANS_IO_CLIENT)
        + "bad = sorted(m for m in %r if m in sys.modules)\n"
        "print(','.join(bad))\n"
    ) % sorted(FORBIDDEN - {"time", "datetime", "os", "io", "pathlib"})
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=HANG,
        check=True,
    )
    assert result.stdout.strip() == "", f"loaded at import: {result.stdout.strip()}"


@pytest.mark.process
@pytest.mark.parametrize(
    "side", ["oriflamme.server", "oriflamme.client", "oriflamme.engine", "oriflamme.protocol"]
)
def test_at_run_time_a_side_loads_nothing_it_must_not_import(side: str) -> None:
    """Every module of `side`, imported in a fresh interpreter, loads no
    module of what `NOT_IMPORTED` keeps it from (the server no client
    module, the client no server module, neither the launcher)."""
    names = sorted(n for n in MODULES if _within(n, side))
    code = (
        "import sys\n"
        + "".join(f"import {name}\n" for name in names)
        + "bad = sorted(m for m in sys.modules if any(m == f or m.startswith(f + '.') for f in %r))\n"
        "print(','.join(bad))\n"
    ) % (NOT_IMPORTED[side],)
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=HANG,
        check=True,
    )
    assert result.stdout.strip() == "", f"{side} loaded: {result.stdout.strip()}"


def test_every_package_folder_is_installed() -> None:
    """pyproject.toml lists the packages one by one (the folders map onto the
    `oriflamme` namespace): a folder left out would be missing from a wheel."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    listed = set(config["tool"]["setuptools"]["packages"])
    found = set()
    for folder, package in FOLDERS.items():
        if folder == "tools":
            continue
        for init in (ROOT / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join([package, *parts]))
    assert found <= listed, f"packages missing from pyproject.toml: {sorted(found - listed)}"

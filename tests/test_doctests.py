"""The docstring examples are part of the documentation: run every one of them."""

import doctest
import importlib
import pkgutil

import pytest

import oriflamme.client
import oriflamme.engine
import oriflamme.launcher
import oriflamme.protocol
import oriflamme.server

PACKAGES = (
    oriflamme.engine,
    oriflamme.protocol,
    oriflamme.server,
    oriflamme.client,
    oriflamme.launcher,
)
MODULES = sorted(
    {p.__name__ for p in PACKAGES}
    | {m.name for p in PACKAGES for m in pkgutil.walk_packages(p.__path__, p.__name__ + ".")}
)


# The modules whose examples start a process (a snapshot forks a child).
STARTING_PROCESSES = {"oriflamme.server.snapshots"}


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.process) if n in STARTING_PROCESSES else n for n in MODULES],
)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"

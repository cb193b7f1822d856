"""The docstring examples of the engine are part of its documentation: run them."""

import doctest
import importlib
import pkgutil

import pytest

import oriflamme.engine

MODULES = sorted(
    m.name for m in pkgutil.iter_modules(oriflamme.engine.__path__, "oriflamme.engine.")
) + ["oriflamme.engine"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"

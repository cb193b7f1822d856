"""The fuzz targets under hypothesis: briefly in CI, longer on demand
(``FUZZ_EXAMPLES=5000 python -m pytest tests/fuzz``)."""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oriflamme.protocol import messages as m
from tools.docgen.examples import examples

from .targets import serve

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "40"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))

CLIENT_TYPES = sorted(t for t, msg in examples().items() if msg.SENDER == "client")
VALID = [m.to_data(msg) for msg in examples().values() if msg.SENDER == "client"]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-2, max_value=40),
    st.integers(),
    st.text(max_size=40),
    st.binary(min_size=0, max_size=40),
    st.sampled_from(["first", "last", "red", "blue", "spy", "left-to-right", "heuristic"]),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def hostile_message(draw: st.DrawFn) -> Any:
    """A valid client message with fields replaced or added, a catalog type
    with random fields, or any value at all."""
    kind = draw(st.integers(0, 9))
    if kind < 5:
        message = dict(draw(st.sampled_from(VALID)))
        for _ in range(draw(st.integers(0, 3))):
            key = draw(st.sampled_from([*message, "id", "turn", "room", "seat", "pid", "x"]))
            message[key] = draw(values)
        if draw(st.booleans()):
            message["id"] = draw(st.integers(0, 50))
        return message
    if kind < 9:
        fields = draw(st.dictionaries(st.text(max_size=10), values, max_size=5))
        return {"type": draw(st.sampled_from(CLIENT_TYPES)), **fields}
    return draw(values)


@pytest.mark.slow
@SETTINGS
@given(
    messages=st.lists(hostile_message(), max_size=25),
    cuts=st.lists(st.integers(min_value=0), max_size=6),
    ticks=st.lists(st.floats(0, 100, allow_nan=False), max_size=4),
)
def test_whatever_a_client_sends_the_server_stands_and_the_game_ends(
    messages: list[Any], cuts: list[int], ticks: list[float]
) -> None:
    serve(messages, cuts, ticks=ticks)

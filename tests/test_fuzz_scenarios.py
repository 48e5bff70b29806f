"""Whatever a scenario file contains, loading it fails only with ScenarioError."""

from __future__ import annotations

import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import BASE_SCENARIO
from tcplab.errors import ScenarioError
from tcplab.loader import read_scenario_data
from tcplab.scenario import validate_scenario

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["5Mbit", "1%", "10ms", "1bdp", "server", "client", "r1", "bulk", "bbr", "pfifo", "bfifo"]),
)
keys = st.one_of(
    st.sampled_from(
        [
            "name",
            "duration",
            "hosts",
            "links",
            "flows",
            "rate",
            "delay",
            "loss",
            "queue",
            "limit",
            "from",
            "to",
            "between",
        ]
    ),
    st.text(max_size=6),
    st.integers(),
)
data = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4), max_leaves=20
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(data)
def test_arbitrary_data_only_scenario_errors(value):
    try:
        validate_scenario(value, "fuzz.yaml")
    except ScenarioError as e:
        assert "\n" not in str(e)


PATHS = [
    ("duration",),
    ("sample_interval",),
    ("seed",),
    ("hosts", "server"),
    ("hosts", "server", "sysctl"),
    ("links", 0),
    ("links", 0, "rate"),
    ("links", 0, "loss"),
    ("links", 0, "queue"),
    ("links", 0, "between"),
    ("links", 1, "reverse"),
    ("flows", 0),
    ("flows", 0, "app"),
    ("flows", 0, "tcp"),
    ("flows", 0, "count"),
    ("routers",),
]


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.sampled_from(PATHS), data)
def test_one_bad_field_only_scenario_errors(path, value):
    doc = copy.deepcopy(BASE_SCENARIO)
    node = doc
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    try:
        validate_scenario(doc, "fuzz.yaml")
    except ScenarioError as e:
        assert "\n" not in str(e)
        assert all(err.path or err.file for err in e.errors)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_arbitrary_text_only_scenario_errors(text):
    try:
        validate_scenario(read_scenario_data(text, "fuzz.yaml"), "fuzz.yaml")
    except ScenarioError as e:
        assert "\n" not in str(e)

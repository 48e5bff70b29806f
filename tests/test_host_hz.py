"""A host's ``hz`` (CONFIG_HZ) reaches the engine's node config; bad values are refused."""

from __future__ import annotations

import pytest

import tcplab
from tcplab.errors import ScenarioError

BASE = {
    "name": "hz",
    "duration": "1s",
    "hosts": {"a": {}, "b": {}},
    "links": [{"between": ["a", "b"], "rate": "10Mbit", "delay": "1ms"}],
    "flows": [{"from": "a", "to": "b"}],
}


def test_default_hz_is_debians_250():
    core = tcplab.load_scenario(BASE).to_core()
    assert [n["hz"] for n in core["nodes"]] == [250, 250]


def test_hz_per_host():
    sc = tcplab.load_scenario(BASE, ["hosts.a.hz=1000"])
    assert {n["name"]: n["hz"] for n in sc.to_core()["nodes"]} == {"a": 1000, "b": 250}


@pytest.mark.parametrize("value", [300, 0, "fast", True])
def test_unsupported_hz_is_refused_with_its_path(value):
    data = {**BASE, "hosts": {"a": {"hz": value}, "b": {}}}
    with pytest.raises(ScenarioError) as info:
        tcplab.load_scenario(data)
    assert "hosts.a.hz" in str(info.value)
    assert "100, 250 or 1000" in str(info.value)

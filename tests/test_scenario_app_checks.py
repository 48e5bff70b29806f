"""Checks of application settings found by a new-user review: rates in tc's bytes units,
profile ladder errors, every engine bound mirrored in Python (reported in the user's units at
the YAML path before the engine runs), loss outages, hidden problems."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import tcplab
from tcplab.errors import ScenarioError

BASE: dict[str, Any] = {
    "name": "apps",
    "duration": "10s",
    "hosts": {"c": {}, "s": {}},
    "links": [{"between": ["c", "s"], "rate": "100Mbit", "delay": "5ms"}],
}
HLS = {"hls": {"profiles": [{"name": "HD", "bitrate": "3Mbit"}, {"name": "low", "bitrate": "800kbit"}]}}


def scenario(*flows: dict[str, Any], overrides: list[str] | None = None, **top: Any) -> tcplab.Scenario:
    data = copy.deepcopy(BASE)
    data.update(top)
    data["flows"] = list(flows)
    return tcplab.load_scenario(data, overrides)


def errors_of(*flows: dict[str, Any], **top: Any) -> list[str]:
    """Every error line (path: problem) of a scenario, in order."""
    with pytest.raises(ScenarioError) as info:
        scenario(*flows, **top)
    return [f"{e.path}: {e.problem}" for e in info.value.errors]


def flow(app: Any, **kw: Any) -> dict[str, Any]:
    return {"from": "c", "to": "s", "app": app, **kw}


# -- 1. rates in tc's bytes units --------------------------------------------------------


@pytest.mark.parametrize(
    "app, reader, path",
    [
        ({"hls": {"profiles": [{"name": "HD", "bitrate": "3Mbps"}]}}, None, "flows.0.app.hls.profiles.0.bitrate"),
        ({"hls": {**HLS["hls"], "start_estimate": "1Mbps"}}, None, "flows.0.app.hls.start_estimate"),
        ({"nfs_stream": {"bitrate": "10MBps"}}, None, "flows.0.app.nfs_stream.bitrate"),
        ("bulk", {"rate": "2Mbps"}, "flows.0.reader.rate"),
    ],
)
def test_app_and_reader_rates_in_tc_bytes_units_warn_as_link_rates_do(app, reader, path):
    """tc reads ``3Mbps`` as 3 megabytes per second (24 Mbit/s): every rate of a scenario
    gets the same warning, not only link and qdisc rates."""
    f = flow(app, **({"reader": reader} if reader else {}))
    (w,) = scenario(f).warnings
    assert w.path == path and "tc's units" in w.line()
    bits = copy.deepcopy(f)  # the same value in bits: no warning
    text = repr(bits).replace("Mbps", "Mbit").replace("MBps", "Mbit")
    assert not scenario(eval(text)).warnings



"""A random loss model's activity window (``loss: {random: 1%, start: 60s, end: 30min}``):
parsed into the engine's ``links[].loss_window``, bad values named by their path, and in the
engine no loss outside the window (a netem qdisc added at start and removed at end)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tcplab
from tcplab.errors import ScenarioError


def scenario(loss: Any, duration: str = "10s") -> tcplab.Scenario:
    return tcplab.load_scenario(
        {
            "name": "window",
            "duration": duration,
            "sample_interval": "50ms",
            "hosts": {"c": {}, "s": {}},
            "links": [{"between": ["s", "c"], "rate": "20Mbit", "delay": "5ms", "loss": loss, "reverse": {"loss": 0}}],
            "flows": [{"from": "s", "to": "c", "app": "bulk"}],
        }
    )


def errors_of(loss: Any) -> list[str]:
    with pytest.raises(ScenarioError) as info:
        scenario(loss)
    return [f"{e.path}: {e.problem}" for e in info.value.errors]


def test_a_window_reaches_the_engine_and_defaults_to_the_whole_run():
    c = scenario({"gilbert_elliott": {"p": "1%", "r": "20%"}, "start": "60s", "end": "30min"}).to_core()
    assert c["links"][0]["loss"]["kind"] == "gilbert_elliott"
    assert c["links"][0]["loss_window"] == {"start_ns": 60 * 10**9, "end_ns": 1800 * 10**9}
    open_ended = scenario({"random": "1%", "start": "60s"}).to_core()
    assert open_ended["links"][0]["loss_window"] == {"start_ns": 60 * 10**9, "end_ns": None}
    # no window: the key is left out, so scenarios without one keep their JSON
    assert "loss_window" not in scenario("1%").to_core()["links"][0]


@pytest.mark.parametrize(
    "loss, line",
    [
        ({"random": "1%", "start": "60s", "end": "10s"}, 'links.0.loss.end: "10s" is not after start ("60s")'),
        ({"random": "1%", "start": "soon"}, 'links.0.loss.start: "soon" is not a time'),
        ({"drop": [3], "end": "5s"}, "links.0.loss.end: a window (end) on a drop loss"),
        ({"random": "1%", "end": "540000min"}, 'links.0.loss.end: "540000min" is out of range'),
    ],
)
def test_a_bad_window_names_its_field(loss, line):
    (err,) = errors_of(loss)
    assert err.startswith(line), err


@pytest.mark.engine
def test_random_loss_acts_only_inside_its_window(real_core):
    """With 100 % loss in [3 s, 3.5 s) the flow is undisturbed before 3 s (never out of
    the Open state, as with no loss at all) and has entered Loss by the end of the window."""
    windowed = tcplab.run(scenario({"random": "100%", "start": "3s", "end": "3500ms"}, duration="6s"))
    lossless = tcplab.run(scenario(None, duration="6s"))
    ts = windowed.timeseries
    t_s = np.asarray(ts["t_ns"]) / 1e9
    ca = np.asarray(ts["ca_state"])
    before = t_s < 3.0
    assert (ca[before] == 0).all()
    assert (ca[(t_s >= 3.1) & (t_s < 3.6)] == 4).any()  # TCP_CA_Loss: the RTO fired in the window
    # Up to the window the run is identical to the lossless one (no random draws before it).
    ref = lossless.timeseries
    n = int(before.sum())
    assert np.array_equal(np.asarray(ts["bytes_acked"])[:n], np.asarray(ref["bytes_acked"])[:n])
    # And the loss ended: the flow delivered data after the window.
    acked = np.asarray(ts["bytes_acked"])
    assert acked[-1] > acked[t_s < 4.5][-1]

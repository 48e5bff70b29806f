"""Plots that sampling would mislead (issue 21 item 16): BBR's cwnd over 60 s at 100 ms
(PROBE_BW's cycle changes it at most samples) is drawn as a median with its min..max band
per bin, not a solid band of zig-zags; an rr connection's in flight, whose request cycle is
shorter than two samples, is drawn as points with a note that it aliases."""

from __future__ import annotations

import numpy as np
import pytest

from tcplab.views.plots import cwnd_figure, envelope, flow_figure, is_dense, transaction_cycle_s


def test_envelope_bins_hold_each_samples_extremes():
    t = np.arange(0, 10, 0.1)
    v = np.where(np.arange(len(t)) % 2 == 0, 90.0, 50.0)  # alternates every sample
    assert is_dense(np.tile(v, 3))
    starts, mins, meds, maxs, width = envelope(t, v, (0.0, 10.0), bins=20)
    assert width == pytest.approx(0.5)
    assert np.all(mins == 50.0) and np.all(maxs == 90.0)
    assert not is_dense(np.linspace(0, 100, 600))  # a ramp stays a line


@pytest.fixture(scope="module")
def bbr_lossy():
    from conftest import compiled_engine

    compiled_engine()
    import tcplab

    return tcplab.run("builtin:cubic-vs-bbr-lossy", overrides=["flows.0.cc=bbr"])


@pytest.mark.engine
def test_bbr_cwnd_over_a_minute_is_an_envelope(bbr_lossy):
    r = bbr_lossy
    cwnd = r.timeseries["cwnd"].to_numpy(dtype=np.float64)
    assert len(cwnd) >= 600 and is_dense(cwnd)  # the premise: it zig-zags at most samples
    fig = cwnd_figure(r, {r.config["flows"][0]["name"]: "C0"})
    ax = fig.axes[0]
    bands = ax.collections
    assert bands, "no min..max band"
    lines = [line for line in ax.get_lines() if "median per" in line.get_label()]
    assert len(lines) == 1
    x, y = lines[0].get_data()
    assert len(x) <= 200  # one step per bin, not one vertex per sample
    # the band holds every sample: its bottom reaches the lowest cwnd (PROBE_RTT's 4 packets)
    (band,) = bands
    ys = np.concatenate([p.vertices[:, 1] for p in band.get_paths()])
    assert ys.min() == pytest.approx(cwnd[np.isfinite(cwnd)].min())
    assert ys.max() == pytest.approx(cwnd[np.isfinite(cwnd)].max())


@pytest.mark.engine
def test_rr_in_flight_is_points_with_an_aliasing_note():
    from conftest import compiled_engine

    compiled_engine()
    import tcplab
    from tcplab.results.paths import flow_paths

    r = tcplab.run("builtin:rr", overrides=["duration=5s"])
    name = r.config["flows"][0]["name"]
    cycle = transaction_cycle_s(r, name)
    assert cycle is not None and cycle < 2 * r.sample_interval_s  # 10 ms RTT vs 100 ms samples
    fig, _ = flow_figure(r, 0, name, flow_paths(r.config).get(name))
    window = fig.axes[1]
    (inflight,) = [line for line in window.get_lines() if line.get_label().startswith("in flight")]
    assert inflight.get_linestyle() == "None" and inflight.get_marker() == "."
    assert "alias" in inflight.get_label()
    assert "aliasing" in window.get_title(loc="left")


@pytest.mark.engine
def test_a_bulk_flow_keeps_its_in_flight_line(bbr_lossy):
    from tcplab.results.paths import flow_paths

    name = bbr_lossy.config["flows"][0]["name"]
    assert transaction_cycle_s(bbr_lossy, name) is None
    fig, _ = flow_figure(bbr_lossy, 0, name, flow_paths(bbr_lossy.config).get(name))
    labels = [line.get_label() for line in fig.axes[1].get_lines()]
    assert not any("alias" in label for label in labels)

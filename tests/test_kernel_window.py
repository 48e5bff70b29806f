"""The same window in both worlds (issue 23 item 2): tcplab validate measures each flow from
its own first byte, over a window of the same length in both worlds, and flags a kernel
connection that started late (tcplab.kernel.window). Synthetic results from the engine
double (tests/fake_core.py: one flow delivering at a steady rate), no kernel needed.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

import tcplab
from tcplab.kernel.validate import compare_runs, validate
from tcplab.kernel.window import first_byte_s, flow_windows, late_start_limit_s, window_goodput_bps
from test_validate import EditedCore, row

FLOW = "server-client-0"
DURATION_S = 10.0
RATE_BPS = 4e6  # the steady rate every world below delivers at once it has started


def steady_result(*, late_s: float = 0.0, gap_at_s: tuple[float, ...] = (), kernel: bool = False):
    """builtin:cubic-vs-bbr-lossy (10 s) whose flow delivers RATE_BPS from ``late_s`` on (a
    connection that opened late), its totals consistent with the series; ``gap_at_s``: samples
    whose receiver count is missing (NaN in the frame, as a kernel run's gap)."""

    def edit(raw: dict[str, Any]) -> None:
        ts = raw["timeseries"]
        t_s = np.asarray(ts["t_ns"], dtype=np.float64) / 1e9
        got = np.floor(np.clip(t_s - late_s, 0, None) * RATE_BPS / 8)
        ts["bytes_received"] = got.astype(np.uint64)
        raw["flows"][0]["bytes_received"] = int(got[-1])

    r = tcplab.run("builtin:cubic-vs-bbr-lossy", overrides=[f"duration={DURATION_S:g}s"], core=EditedCore(edit))
    if gap_at_s:
        ts = r.timeseries
        ts["bytes_received"] = ts["bytes_received"].astype(np.float64)
        for t in gap_at_s:
            ts.loc[np.isclose(ts["t_s"], t), "bytes_received"] = np.nan
    if kernel:
        r.summary["kind"] = "kernel"
        r.summary["kernel"] = {"release": "test", "hz": 250, "valid": True, "invalid_reasons": []}
    return r


def test_a_kernel_run_starting_2s_late_gives_the_same_goodput_as_one_on_time():
    sim = steady_result()
    on_time = compare_runs(sim, steady_result(kernel=True))
    late = compare_runs(sim, steady_result(late_s=2.0, kernel=True))
    g_on, g_late = row(on_time, "goodput_bps"), row(late, "goodput_bps")
    assert g_on.kernel == pytest.approx(RATE_BPS, rel=1e-3)
    # the late one delivers at the same rate once it runs: the same goodput (not 20 % low,
    # as bytes / the whole 10 s would say)
    assert g_late.kernel == pytest.approx(g_on.kernel, rel=1e-3)
    assert g_late.verdict == "within" and g_late.relative == pytest.approx(0.0, abs=1e-3)
    # the old measure, for contrast: the late run's lifetime goodput is 20 % below
    late_flows = steady_result(late_s=2.0, kernel=True).flows.set_index("name")
    assert late_flows.loc[FLOW, "goodput_bps"] == pytest.approx(0.8 * RATE_BPS, rel=0.02)


def test_the_window_has_the_same_length_in_both_worlds_from_each_first_byte():
    sim, kern = steady_result(), steady_result(late_s=2.0, kernel=True)
    w = flow_windows(sim, kern)[FLOW]
    (s0, s1), (k0, k1) = w.span_s["sim"], w.span_s["kernel"]
    assert s1 - s0 == pytest.approx(k1 - k0) == pytest.approx(w.length_s)
    # each from its own first byte (the first sample with data) plus the 2 s warm-up
    assert s0 == pytest.approx(first_byte_s(sim, FLOW) + 2.0)
    assert k0 == pytest.approx(first_byte_s(kern, FLOW) + 2.0)
    assert first_byte_s(kern, FLOW) - first_byte_s(sim, FLOW) == pytest.approx(2.0)
    # the late world sets the length: its first byte + warm-up to the end of the run
    assert k1 == pytest.approx(DURATION_S)


def test_a_late_start_is_flagged_and_an_on_time_one_is_not():
    sim = steady_result()
    late = compare_runs(sim, steady_result(late_s=2.0, kernel=True))
    on_time = compare_runs(sim, steady_result(kernel=True))
    assert late.windows[FLOW].late_start and not on_time.windows[FLOW].late_start
    assert any(n.startswith("late start:") and FLOW in n for n in late.notes)
    assert not any(n.startswith("late start:") for n in on_time.notes)
    # the limit: the flow's start + 2 base RTTs + 2 sample intervals (module doc)
    from tcplab.results.paths import flow_paths

    base = flow_paths(sim.config)[FLOW].base_rtt_s
    assert late_start_limit_s(sim.config, FLOW) == pytest.approx(2 * base + 2 * 0.1)


def test_a_missed_kernel_sample_does_not_lower_the_goodput():
    sim = steady_result()
    whole = compare_runs(sim, steady_result(kernel=True))
    gapped_kernel = steady_result(kernel=True, gap_at_s=(4.0, 6.5, 9.0))
    gapped = compare_runs(sim, gapped_kernel)
    assert row(gapped, "goodput_bps").kernel == pytest.approx(row(whole, "goodput_bps").kernel, rel=1e-6)
    # and over a window that ends on a gap the interpolation spans it: still the rate
    assert window_goodput_bps(gapped_kernel, FLOW, (3.0, 7.0)) == pytest.approx(RATE_BPS, rel=1e-3)
    # no per-row goodput is 0 (a gap has none; the next covers it)
    ts = gapped_kernel.timeseries
    rates = ts.loc[(ts["flow_name"] == FLOW) & (ts["t_s"] > 0.15), "goodput_bps"]
    assert not (rates == 0).any()


def test_the_report_states_the_window(tmp_path):
    def runner(sc, options):
        return steady_result(late_s=2.0, kernel=True)

    validate(
        "builtin:cubic-vs-bbr-lossy",
        overrides=[f"duration={DURATION_S:g}s"],
        core=EditedCore(lambda raw: None),
        kernel_runner=runner,
        out=tmp_path / "v",
        plots=False,
    )
    doc = json.loads((tmp_path / "v" / "validation.json").read_text())
    w = doc["windows"][FLOW]
    assert w["late_start"] is True and w["steady"] is True
    assert w["kernel"]["to_s"] - w["kernel"]["from_s"] == pytest.approx(w["sim"]["to_s"] - w["sim"]["from_s"])
    md = (tmp_path / "v" / "report.md").read_text()
    html = (tmp_path / "v" / "report.html").read_text()
    for text in (md, html):
        assert "same window in both worlds" in text and "first byte" in text
        assert "late start:" in text

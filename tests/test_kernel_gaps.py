"""A kernel sampler's miss is a gap, not a zero (issue 23 item 2).

The flow time series of a kernel run takes ``bytes_received`` from the receiver's ss sample
of the same schedule slot (tcplab.kernel.measure). When the receiver has no sample of a slot
(its sampler skipped it, ss failed), the row's receiver columns are unknown: NaN in the
KernelResult's frame, and the next row's goodput is over the time since the last sample with
a value. A sample that started late (up to one interval: the samplers skip later ones)
belongs to the slot it was due in. Built on the recorded 2 s run of tests/test_kernel_measure.py
(flow 0: bulk a -> b, so b's samples carry its bytes_received). No root needed.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from tcplab.engine import parse_output
from tcplab.kernel.measure import RECEIVER_COLUMNS, TIMESERIES_GAPS, build_raw, ss_samples
from tcplab.kernel.result import KernelResult
from tcplab.loader import load_scenario
from tcplab.results.result import interval_rate
from test_kernel_measure import DATA, load_fixture

ENV = {"release": "6.18.44-test", "hz": 1000, "cc_available": ["reno", "bbr", "cubic"], "qdiscs": ["tbf", "pfifo"]}
RECEIVER = ("10.0.0.2:5201", "10.0.0.1:32768")  # flow 0's receiving socket on b


def blocks(text: str) -> list[str]:
    """The samples of an ss-samples file, each ``# t_ns=N`` line with ss's lines."""
    return [b for b in re.split(r"(?m)^(?=# t_ns=)", text) if b]


def received_at(text: str) -> dict[int, int]:
    """slot -> flow 0's bytes_received in b's samples (a 100 ms interval)."""
    out = {}
    for t, socks in ss_samples(text):
        s = next((s for s in socks if (s.local, s.peer) == RECEIVER), None)
        if s is not None:
            out[t // 100_000_000] = int(s.values.get("bytes_received", 0))
    return out


def kernel_result(config, m) -> KernelResult:
    scenario = load_scenario(str(DATA / "scenario.yaml"))
    return KernelResult(
        scenario, config, parse_output(build_raw(config, m)), measurements=m,
        kernel={"env": ENV, "valid": True, "invalid_reasons": []}, views=None,
    )  # fmt: skip


def flow0(r: KernelResult) -> pd.DataFrame:
    ts = r.timeseries
    rows = ts[ts["flow"] == 0].copy()
    rows["slot"] = (rows["t_ns"].to_numpy().astype(np.int64) // 100_000_000).astype(int)
    return rows.set_index("slot")


def test_a_missed_receiver_sample_is_a_gap_not_a_zero():
    config, m = load_fixture()
    recorded = received_at(m.ss_samples["b"])
    parts = blocks(m.ss_samples["b"])
    missed = 3
    m.ss_samples["b"] = "".join(b for b in parts if int(b.split("=", 1)[1].split()[0]) // 100_000_000 != missed)
    raw = build_raw(config, m)
    rows = flow0(kernel_result(config, m))
    # the sender's sample of the slot is there (a row), the receiver's count is unknown
    assert missed in rows.index
    assert np.isnan(rows.loc[missed, "bytes_received"]) and np.isnan(rows.loc[missed, "recv_q_bytes"])
    assert np.isnan(rows.loc[missed, "goodput_bps"])
    assert set(raw[TIMESERIES_GAPS]) == set(RECEIVER_COLUMNS)
    # the other slots keep the receiver's own figure, never a 0 in between
    got = rows["bytes_received"].dropna()
    assert (got > 0).all()
    assert np.all(np.diff(got.to_numpy()) >= 0)
    # the next sample's goodput covers the gap: (B4 - B2) x 8 over the time from slot 2 to 4
    t = rows["t_ns"].astype(np.float64)
    expected = (recorded[4] - recorded[2]) * 8 / ((t.loc[4] - t.loc[2]) / 1e9)
    assert rows.loc[4, "goodput_bps"] == pytest.approx(expected)
    # the mean goodput over the gap is not dragged down by a zero
    span = rows.loc[2:4]
    delivered = (recorded[4] - recorded[2]) * 8 / ((t.loc[4] - t.loc[2]) / 1e9)
    assert span["goodput_bps"].dropna().iloc[-1] == pytest.approx(delivered)


def test_a_receiver_sample_late_by_most_of_an_interval_stays_in_its_slot():
    config, m = load_fixture()
    recorded = received_at(m.ss_samples["b"])
    parts = blocks(m.ss_samples["b"])
    late_slot = 3
    out = []
    for b in parts:
        t = int(b.split("=", 1)[1].split()[0])
        if t // 100_000_000 == late_slot:
            # started 70 ms after it was due (the sampler skips only those over 100 ms late)
            b = b.replace(f"# t_ns={t}", f"# t_ns={late_slot * 100_000_000 + 70_000_000}", 1)
        out.append(b)
    m.ss_samples["b"] = "".join(out)
    rows = flow0(kernel_result(config, m))
    assert rows.loc[late_slot, "bytes_received"] == recorded[late_slot]
    assert rows.loc[late_slot + 1, "bytes_received"] == recorded[late_slot + 1]


def test_interval_rate_spans_a_gap():
    # a counter of 1 MB every 100 ms with a gap: the rate stays 80 Mbit/s, none is 0
    frame = pd.DataFrame(
        {
            "flow": [0] * 5,
            "t_ns": [k * 100_000_000 for k in range(1, 6)],
            "bytes_received": [1e6, 2e6, np.nan, 4e6, 5e6],
        }
    )
    rate = interval_rate(frame, "flow", "bytes_received", 100_000_000)
    assert np.isnan(rate[2])
    assert rate[[0, 1, 3, 4]] == pytest.approx([80e6] * 4)


def test_a_complete_run_has_no_gaps():
    config, m = load_fixture()
    r = kernel_result(config, m)
    rows = flow0(r)
    assert rows["bytes_received"].notna().all()


def test_iperf3_export_reads_past_a_gap(tmp_path):
    import json

    config, m = load_fixture()
    parts = blocks(m.ss_samples["b"])
    # the sample at 1 s, where iperf3's first interval ends
    m.ss_samples["b"] = "".join(b for b in parts if int(b.split("=", 1)[1].split()[0]) // 100_000_000 != 10)
    r = kernel_result(config, m)
    assert np.isnan(flow0(r).loc[10, "bytes_received"])
    r.write(tmp_path / "run", plots=False)
    doc = json.loads((tmp_path / "run" / "iperf3-a-b-0.json").read_text())
    got = [iv["sum"]["bytes"] for iv in doc["intervals"]]
    # a gap read as 0 would make an interval negative; the intervals sum to the total
    assert all(b >= 0 for b in got)
    assert sum(got) == int(r.flows.set_index("name").loc["a-b-0", "bytes_received"])

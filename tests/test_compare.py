"""tcplab.compare: variants run, tabulated and written."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pandas as pd
import pytest

import tcplab
from plotcheck import assert_plot
from tcplab.results import RUN_FILES


@pytest.fixture
def cmp(fake):
    return tcplab.compare(["builtin:cubic-vs-bbr-lossy"], ["flows.0.cc=cubic,bbr", "duration=3s"], core=fake)


def test_table(cmp, fake):
    assert len(fake.calls) == 2
    assert [c["flows"][0]["cc"] for c in fake.calls] == ["cubic", "bbr"]
    table = cmp.table
    assert list(table.columns) == ["cubic", "bbr"]
    assert list(table.index) == [
        "goodput (Mbit/s)",
        "retrans (%)",
        "timeouts",
        "queue drops",
        "loss drops",
        "RTT p50 (ms)",
        "RTT p99 (ms)",
    ]
    flows = cmp.results["bbr"].flows
    assert table.loc["goodput (Mbit/s)", "bbr"] == pytest.approx(flows["goodput_bps"].sum() / 1e6)
    assert table.loc["retrans (%)", "bbr"] == pytest.approx(
        100 * flows["retrans_segs"].sum() / flows["data_segs_out"].sum()
    )
    # the test double's RTT is 2 x the mean one-way link delay: 2 x 100.1 ms / 4 = 50.05 ms
    assert table.loc["RTT p50 (ms)", "cubic"] == pytest.approx(50.05)


def test_multi_flow_rows(fake):
    c = tcplab.compare(
        ["builtin:cubic-vs-bbr-lossy"], ["flows.0.count=2", "flows.0.cc=cubic,bbr", "duration=1s"], core=fake
    )
    # rows named by the flow (the same name in both variants), not by its position
    first, second = c.results["cubic"].flows["name"]
    assert f"{first} goodput (Mbit/s)" in c.table.index and f"{second} RTT p99 (ms)" in c.table.index
    assert not any(str(m).startswith("flow 0 ") for m in c.table.index)
    assert c.table.loc["goodput (Mbit/s)", "cubic"] == pytest.approx(
        c.table.loc[f"{first} goodput (Mbit/s)", "cubic"] + c.table.loc[f"{second} goodput (Mbit/s)", "cubic"]
    )


def test_multi_flow_rows_of_differently_named_flows_are_by_position(fake, tmp_path, write_yaml, base_scenario):
    a = {
        **base_scenario,
        "flows": [{"from": "server", "to": "client", "name": "x"}, {"from": "server", "to": "client"}],
    }
    b = {
        **base_scenario,
        "flows": [{"from": "server", "to": "client", "name": "y"}, {"from": "server", "to": "client"}],
    }
    c = tcplab.compare([str(write_yaml(a, "a.yaml")), str(write_yaml(b, "b.yaml"))], core=fake)
    assert "flow 0 RTT p50 (ms)" in c.table.index  # x vs y: matched by position
    second = c.results[list(c.results)[0]].flows["name"].iloc[1]
    assert f"{second} RTT p50 (ms)" in c.table.index


def test_write(cmp, tmp_path):
    out = cmp.write(tmp_path / "cmp")
    data = json.loads((out / "compare.json").read_text())
    assert [v["label"] for v in data["variants"]] == ["cubic", "bbr"]
    assert data["variants"][1]["overrides"] == ["flows.0.cc=bbr", "duration=3s"]
    assert data["variants"][1]["summary"]["flows"][0]["cc"] == "bbr"
    assert data["table"]["columns"] == ["cubic", "bbr"]
    assert data["table"]["index"][0] == "goodput (Mbit/s)"
    assert len(data["table"]["data"]) == len(data["table"]["index"])
    assert (out / "compare.png").read_bytes().startswith(b"\x89PNG")
    assert_plot(out / "compare.png")
    for label in ("cubic", "bbr"):
        for name in RUN_FILES:
            assert (out / label / name).is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cmp"]


def test_files_as_variants(fake, write_yaml, base_scenario):
    a = write_yaml(base_scenario, "lan.yaml")
    base_scenario["links"][0]["delay"] = "50ms"
    b = write_yaml(base_scenario, "wan.yaml")
    c = tcplab.compare([a, b], core=fake)
    assert list(c.table.columns) == ["lan", "wan"]
    assert [call["links"][0]["delay_ns"] for call in fake.calls] == [5_000_000, 50_000_000]


def test_runs_through_any_map(fake, base_scenario):
    with ThreadPoolExecutor(max_workers=2) as pool:
        c = tcplab.compare([base_scenario], ["flows.0.cc=reno,cubic,bbr"], core=fake, map_fn=pool.map)
    assert list(c.table.columns) == ["reno", "cubic", "bbr"]
    assert [r.flows["cc"].iloc[0] for r in c.results.values()] == ["reno", "cubic", "bbr"]


@pytest.mark.engine
def test_parallel_compare_gives_the_sequential_results(real_core):
    # Each run is deterministic and independent, so two processes must reproduce the
    # sequential comparison exactly (issue 3: compare spreads variants over processes).
    plan = (["builtin:cubic-vs-bbr-lossy"], ["flows.0.cc=cubic,bbr,reno", "duration=3s"])
    seq = tcplab.compare(*plan, jobs=1)
    par = tcplab.compare(*plan, jobs=2)
    pd.testing.assert_frame_equal(seq.table, par.table)
    for label in seq.results:
        pd.testing.assert_frame_equal(seq.results[label].timeseries, par.results[label].timeseries)

"""KernelResult: a kernel run's directory, summary, texts and views, from the recorded
fixture of tests/test_kernel_measure.py (no root needed)."""

from __future__ import annotations

import json

import pytest

import tcplab
from tcplab.engine import parse_output
from tcplab.kernel.measure import build_raw
from tcplab.kernel.result import KernelResult
from tcplab.loader import load_scenario
from tcplab.results.counters import parse_nstat
from tcplab.results.result import RUN_FILES
from tcplab.results.ss_samples import ss_sample_texts
from tcplab.views import write_run_views
from test_kernel_measure import DATA, load_fixture

ENV = {"release": "6.18.44-test", "hz": 1000, "cc_available": ["reno", "bbr", "cubic"], "qdiscs": ["tbf", "pfifo"]}


def make(valid: bool = True, reasons: tuple[str, ...] = (), **kernel: object) -> KernelResult:
    config, m = load_fixture()
    scenario = load_scenario(str(DATA / "scenario.yaml"))
    return KernelResult(
        scenario,
        config,
        parse_output(build_raw(config, m)),
        measurements=m,
        kernel={"env": ENV, "valid": valid, "invalid_reasons": list(reasons), "commands": [["ip", "netns", "add"]]}
        | kernel,
        views=write_run_views,
    )


def test_summary_and_metadata_say_kernel():
    r = make()
    assert r.summary["kind"] == "kernel"
    assert r.summary["kernel"] == {"release": "6.18.44-test", "hz": 1000, "valid": True, "invalid_reasons": []}
    meta = r.metadata()["kernel"]
    # the agents read tcpi_ca_state; BBR's long-term sampling and the cumulative lost: nowhere
    assert meta["cc_available"] == ENV["cc_available"]
    assert meta["unknown_columns"] == ["bbr_lt_use_bw", "bbr_lt_bw_bps", "lost"]


def test_simulation_summary_says_simulation(fake):
    r = tcplab.run("builtin:cubic-vs-bbr-lossy", overrides=["duration=2s"], core=fake)
    assert r.summary["kind"] == "simulation"


def test_flows_frame_reads_the_kernels_numbers():
    r = make()
    f = r.flows.set_index("name")
    config, m = load_fixture()
    # maerts: the data goes b -> a
    assert (f.loc["back", "data_from"], f.loc["back", "data_to"]) == ("b", "a")
    recv = next(e for e in m.agents["b"]["endpoints"] if e["flow"] == 0)["tcp_info"]["bytes_received"]
    assert f.loc["a-b-0", "goodput_bps"] == pytest.approx(recv * 8 / (m.duration_ns / 1e9))
    assert r.apps["rr"].summary["transactions"] > 0


def test_run_directory(tmp_path):
    r = make()
    out = r.write(tmp_path / "run")
    for name in RUN_FILES + ("kernel.json", "ss-samples-a.txt", "ss-samples-b.txt", "plots/flow-0.png"):
        assert (out / name).is_file(), name
    _, m = load_fixture()
    # the kernel's own texts
    assert (out / "tc-qdisc-a.txt").read_text() == m.tc_text["a"]
    assert (out / "ss-tin-b.txt").read_text() == ss_sample_texts(m.ss_samples["b"])[-1][1]
    assert (out / "ss-samples-a.txt").read_text() == m.ss_samples["a"]
    counters = parse_nstat((out / "counters.txt").read_text())
    assert counters["a"]["TcpOutSegs"] == r.host_counters()["a"]["TcpOutSegs"] > 0
    kernel = json.loads((out / "kernel.json").read_text())
    assert kernel["valid"] is True and kernel["env"]["release"] == "6.18.44-test"
    assert kernel["nft"]["tlh3-b"]["0"]["loss"] == r.links.iloc[0]["loss_drops"]
    report = (out / "report.html").read_text()
    assert 'class="notice info"' in report and "measured on Linux" in report
    assert 'Packet accounting:\n<span class="note">not checked</span>' in report
    assert json.loads((out / "summary.json").read_text())["rtt_percentiles"]["method"].startswith("nearest rank")
    # a kernel run's directory is tcplab's: --force may replace it
    r.write(out, overwrite=True)


def test_invalid_run_is_marked_in_report_and_summary(tmp_path):
    r = make(valid=False, reasons=("the machine was busy: other processes used 80 % of a CPU",))
    out = r.write(tmp_path / "run", plots=False)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["kernel"]["valid"] is False
    assert summary["kernel"]["invalid_reasons"] == ["the machine was busy: other processes used 80 % of a CPU"]
    report = (out / "report.html").read_text()
    assert 'class="notice bad"' in report and "INVALID kernel run" in report and "80 % of a CPU" in report


def test_ss_texts_at_a_time():
    r = make()
    _, m = load_fixture()
    blocks = ss_sample_texts(m.ss_samples["a"])
    t, text = blocks[5]
    assert r.ss_texts(t)["a"] == text and r.ss_texts(t + 1)["a"] == text
    assert r.ss_texts(-1) == {}


def test_stuck_episodes_do_not_claim_a_ca_state():
    from tcplab.results.stuck import episode_line

    r = make(unknown_columns=["ca_state", "lost"])  # agents that could not read tcpi_ca_state
    # an episode as tcplab.results.stuck finds it, on the kernel's series (CA state unknown)
    r.stuck.append({"kind": "stuck", "flow": "a-b-0", "start_s": 0.5, "end_s": 1.5, "duration_s": 1.0, "samples": 10,
                    "ca_states": ["Open"], "cc_modes": [], "cwnd_min": 2, "cwnd_median": 2, "ssthresh_min": 2,
                    "ssthresh_median": 2, "goodput_median_bps": 1e5, "bbr_bw_median_bps": None,
                    "fair_share_bps": 4e7})  # fmt: skip
    summary = r._summary()
    assert summary["stuck"][-1]["ca_states"] == [] and "(1.00 s), ?, cwnd" in episode_line(summary["stuck"][-1])

"""What diagnose's findings say (issue 21 item 17): a missing value in words, never "?", and
for a simulated run (a tcplab run directory) what the scenario knows, not advice meant for a
real host ("default_qdisc is unknown", "take two snapshots")."""

from __future__ import annotations

from pathlib import Path

import pytest

import tcplab
from tcplab.diagnose import diagnose_paths
from tcplab.diagnose.rules import run_rules
from tcplab.diagnose.snapshot import load_sources
from tcplab.diagnose.source import Source, text_source

FIX = Path(__file__).parent / "fixtures"


def _all_text(f) -> str:  # noqa: ANN001
    return " ".join([f.title, f.summary, f.mechanism, *f.next_checks])


@pytest.mark.parametrize(
    ("status", "version_words", "device_words"),
    [
        ("BandwidthManager:       EDT with BPF [BBR] [eth0]\n", "Cilium version not in the capture", "eth0"),
        ("BandwidthManager:       EDT with BPF [BBR]\n", "Cilium version not in the capture", "devices not listed"),
        (
            "Cilium:                 Ok   1.15.1 (v1.15.1-a368c8f0)\nBandwidthManager:       EDT with BPF [BBR] [eth0]\n",
            "Cilium 1.15.1",
            "eth0",
        ),
    ],
)
def test_cilium_finding_says_a_missing_version_in_words(status: str, version_words: str, device_words: str) -> None:
    host = load_sources([text_source(status, "cilium.txt"), Source.from_path(FIX / "ss_seed000_collapse.txt")])
    f = next(f for f in run_rules(host, scenarios=False) if f.id == "cilium-bbr-low-rtt")
    assert "?" not in f.summary and version_words in f.summary and device_words in f.summary


def _run(data: dict, tmp_path: Path, name: str, real_core):  # noqa: ANN001
    from tcplab.engine import run_core
    from tcplab.results import Result

    sc = tcplab.load_scenario(data)
    config = sc.to_core()
    return Result(sc, config, run_core(config, core=real_core)).write(tmp_path / name, plots=False)


@pytest.mark.engine
def test_a_simulated_run_is_told_what_its_scenario_knows(real_core, tmp_path: Path) -> None:
    """BBR without fq in a run: the scenario sets the qdisc, so diagnose says which, and how
    to change it in the scenario, never that default_qdisc is unknown."""
    data = {
        "name": "bbr-pfifo",
        "duration": "2s",
        "hosts": {"server": {"sysctl": {"tcp_congestion_control": "bbr"}}, "client": {}},
        "links": [{"between": ["server", "client"], "rate": "100Mbit", "delay": "5ms"}],
        "flows": [{"from": "server", "to": "client"}],
    }
    out = _run(data, tmp_path, "run", real_core)
    host, found = diagnose_paths([out])
    assert host.simulated
    f = next(f for f in found if f.id == "bbr-without-fq")
    text = _all_text(f)
    assert "unknown" not in text and "sysctl -w" not in text
    assert "default_qdisc is not set in the scenario (pfifo_fast, Linux's default)" in f.summary
    assert "server:eth0" in f.summary and "hosts.server.qdisc: fq" in " ".join(f.next_checks)
    data["hosts"]["server"]["sysctl"]["default_qdisc"] = "fq_codel"
    out = _run(data, tmp_path, "codel", real_core)
    f = next(f for f in diagnose_paths([out])[1] if f.id == "bbr-without-fq")
    assert "default_qdisc is fq_codel in the scenario" in f.summary


@pytest.mark.engine
def test_a_simulated_runs_counters_cover_the_whole_run(real_core, tmp_path: Path) -> None:
    """counters.txt of a run counts from its start: one snapshot measures the whole run, so
    no "take two snapshots" and no "since boot"."""
    data = {
        "name": "collapse",
        "duration": "10s",
        "hosts": {"c": {}, "s": {}},
        "links": [{"between": ["c", "s"], "rate": "100Mbit", "delay": "250us", "loss": "20%"}],
        "flows": [{"from": "s", "to": "c", "cc": "cubic"} for _ in range(4)],
    }
    out = _run(data, tmp_path, "run", real_core)
    _host, found = diagnose_paths([out])
    by_id = {f.id: f for f in found}
    assert {"rto-rate", "cwnd-collapse"} <= set(by_id)
    for f in found:
        text = _all_text(f)
        assert "take two" not in text and "since boot" not in text, (f.id, text)
    assert "over the whole run (10 s)" in by_id["rto-rate"].summary
    assert by_id["rto-rate"].severity != "info"  # a measured window, not history since boot


@pytest.mark.engine
def test_a_simulated_runs_qdisc_counts_are_the_runs(real_core, tmp_path: Path) -> None:
    """tc's counters in a run directory start with the run: not "since the qdisc was created"."""
    from tcplab.engine import run_core
    from tcplab.results import Result

    sc = tcplab.load_scenario("builtin:slow-reader", overrides=["duration=6s"])
    config = sc.to_core()
    out = Result(sc, config, run_core(config, core=real_core)).write(tmp_path / "run", plots=False)
    f = next(f for f in diagnose_paths([out])[1] if f.id == "qdisc-drops")
    assert "since the qdisc was created" not in f.summary and "over the whole run (6 s)" in f.summary


def test_a_real_hosts_single_snapshot_still_asks_for_two() -> None:
    _host, found = diagnose_paths([FIX / "nstat_format.txt", FIX / "ss_seed000_collapse.txt"])
    by_id = {f.id: f for f in found}
    assert any("take two" in c for c in by_id["cwnd-collapse"].next_checks)

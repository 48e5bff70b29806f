"""diagnose on what the real tools print (issue 21 item 9): captures of iproute2 6.1's nstat,
ss and tc and of ethtool 6.1 on a real host, unedited (tests/data/real-tools/README.md says
how each was made)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tcplab.cli import app
from tcplab.diagnose import diagnose_paths, tc
from tcplab.diagnose.netstat import parse_nstat_text
from tcplab.diagnose.source import Source

REAL = Path(__file__).resolve().parents[1] / "data" / "real-tools"
runner = CliRunner()


def findings(*names: str):  # noqa: ANN201
    host, found = diagnose_paths([REAL / n for n in names])
    return host, {f.id: f for f in found}


# ---------------------------------------------------------------- CurrEstab


def test_real_nstat_prints_no_curr_estab() -> None:
    """nstat leaves the gauge out (iproute2 misc/nstat.c: useless_number()); /proc/net/snmp has it."""
    c = parse_nstat_text(Source.from_path(REAL / "nstat-az-1.txt"))
    assert "TcpExtTCPTimeouts" in c.values and "TcpCurrEstab" not in c.values
    assert "Tcp: RtoAlgorithm" in (REAL / "proc-net-snmp-1.txt").read_text()


def test_two_real_nstat_snapshots_with_rtos_are_a_finding_without_curr_estab() -> None:
    """+50 TCPTimeouts in 8 s must not read as healthy because nstat has no TcpCurrEstab: the
    finding says the ratio is not available, and what would give it."""
    _host, by_id = findings("nstat-az-0.txt", "nstat-az-1.txt")
    f = by_id["rto-rate"]
    assert f.data["timeouts"] == 50 and f.data["established"] is None and f.data["ratio"] is None
    assert "not available" in f.summary and "/proc/net/snmp" in f.summary
    assert f.severity == "warning"


def test_curr_estab_from_proc_net_snmp() -> None:
    _host, by_id = findings("nstat-az-0.txt", "nstat-az-1.txt", "proc-net-snmp-1.txt")
    f = by_id["rto-rate"]
    # 50 timeouts for 20 established connections: 250 %, far above the 30 % critical line
    assert f.data["established"] == 20 and f.data["ratio"] == pytest.approx(50 / 20)
    assert f.severity == "critical" and f.data["established_from"] == "TcpCurrEstab"


def test_curr_estab_from_the_estab_sockets_of_an_ss_capture() -> None:
    text = (REAL / "ss-tin-1.txt").read_text()
    estab = sum(1 for line in text.splitlines() if line.startswith("ESTAB"))
    _host, by_id = findings("nstat-az-0.txt", "nstat-az-1.txt", "ss-tin-1.txt")
    f = by_id["rto-rate"]
    assert f.data["established"] == estab == 20 and f.severity == "critical"
    assert f.data["established_from"] == "ss" and "ESTAB sockets" in f.summary


# ---------------------------------------------------------------- tc -s -j


def test_tc_json_numbers_are_read_in_their_own_units() -> None:
    """tc -j prints base units: tbf rate in bytes/s, burst in bytes, lat in microseconds."""
    (tbf,) = [q for q in tc.parse_tc_json(Source.from_path(REAL / "tc-s-j-qdisc-tbf.json")) if q.kind == "tbf"]
    assert tbf.params["rate_bps"] == 10_000_000  # tc qdisc ... tbf rate 10mbit
    assert tbf.params["lat_ns"] == 4_000_000_000  # latency 4s
    assert tbf.params["burst_bytes"] == 32767
    (text,) = [q for q in tc.parse_tc_text(Source.from_path(REAL / "tc-s-qdisc-tbf.txt")) if q.kind == "tbf"]
    assert text.params["rate_bps"] == tbf.params["rate_bps"] and text.params["lat_ns"] == tbf.params["lat_ns"]
    assert text.params["burst_bytes"] == 32 * 1024  # the text rounds: "burst 32Kb"


def test_a_4s_tbf_is_found_from_tc_json_as_from_its_text() -> None:
    for name in ("tc-s-j-qdisc-tbf.json", "tc-s-qdisc-tbf.txt"):
        _host, by_id = findings(name)
        f = by_id["tbf-bufferbloat"]
        assert f.data["lat_s"] == pytest.approx(4.0) and f.data["rate_bps"] == 10_000_000, name
        assert f.seed == "002"


def test_a_real_collect_archive_of_a_4s_tbf_is_story_002() -> None:
    """tcplab collect takes tc -s -j and tc -s; diagnose prefers the JSON, which must be read right."""
    _host, by_id = findings("collect-tbf-4s.tar.gz")
    f = by_id["tbf-bufferbloat"]
    assert f.seed == "002" and f.data["device"] == "d0" and f.data["lat_s"] == pytest.approx(4.0)
    assert any(e.file.endswith("tc-qdisc.json") for e in f.evidence)


def test_tc_json_fq_keys_and_units() -> None:
    """q_fq.c: the xstat "throttled" is printed twice (the flows waiting, then the events)."""
    doc = (
        '[{"kind":"fq","handle":"8002:","dev":"eth0","root":true,"options":{"limit":10000,'
        '"flow_limit":100,"quantum":3028,"maxrate":1250000,"refill_delay":40000,"timer_slack":10000,'
        '"horizon":10000000,"horizon_drop":true},"bytes":1,"packets":1,"drops":0,"overlimits":0,'
        '"requeues":0,"backlog":0,"qlen":0,"flows":5,"inactive":3,"throttled":2,"gc":0,"highprio":0,'
        '"throttled":77,"latency":12300,"flows_plimit":4,"horizon_drops":3}]'
    )
    from tcplab.diagnose.source import text_source

    (fq,) = tc.parse_tc_json(text_source(doc, "tc.json"))
    assert fq.xstats["throttled_flows"] == 2 and fq.xstats["throttled"] == 77
    assert fq.params["maxrate_bps"] == 10_000_000 and fq.params["horizon_ns"] == 10_000_000_000
    assert fq.params["refill_delay_ns"] == 40_000_000 and fq.params["timer_slack_ns"] == 10_000
    assert fq.params["quantum_bytes"] == 3028 and fq.xstats["latency"] == 12300  # ns, as the text's 12.3us


# ---------------------------------------------------------------- ethtool -S lo


def test_ethtool_no_stats_available_is_no_nic_statistics_not_an_error() -> None:
    """`ethtool -S lo > f 2>&1`: the loopback device has no statistics; that is not a bad input."""
    r = runner.invoke(app, ["diagnose", str(REAL / "ethtool-S-lo.txt")])
    assert r.exit_code == 0, r.output
    assert "no NIC statistics" in r.output
    host, _ = findings("ethtool-S-lo.txt", "nstat-az-0.txt", "nstat-az-1.txt")
    assert any("no NIC statistics" in n for n in host.notes)


def _fake_ethtool(tmp_path: Path) -> Path:
    """An ethtool that answers -S as ethtool 6.1 does for lo (stderr, exit status 94)."""
    exe = tmp_path / "ethtool"
    exe.write_text('#!/bin/sh\necho "no stats available" >&2\nexit 94\n')
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return exe


def test_collect_records_a_device_without_statistics_as_such(tmp_path: Path) -> None:
    import time

    import tcplab.collect as collect_mod

    exe = _fake_ethtool(tmp_path)
    notes: list[str] = []
    cap = collect_mod._Capture(tmp_path / "cap", timeout_s=5, deadline=time.monotonic() + 60, log=notes.append)
    cap.run("snap-0/ethtool-S-lo.txt", [str(exe), "-S", "lo"], {"snapshot": 0, "device": "lo"})
    (rec,) = cap.commands
    assert "error" not in rec and rec["rc"] == 94
    assert cap.missing == ["ethtool -S lo: no NIC statistics (the device exports none)"]


@pytest.mark.skipif(os.system("command -v ethtool >/dev/null 2>&1") != 0, reason="ethtool is not installed")
def test_real_ethtool_on_lo_through_collect(tmp_path: Path) -> None:
    import time

    import tcplab.collect as collect_mod

    cap = collect_mod._Capture(tmp_path / "cap", timeout_s=5, deadline=time.monotonic() + 60, log=lambda _m: None)
    cap.run("snap-0/ethtool-S-lo.txt", ["ethtool", "-S", "lo"], {"snapshot": 0, "device": "lo"})
    (rec,) = cap.commands
    assert "error" not in rec, json.dumps(rec)
    assert cap.missing == ["ethtool -S lo: no NIC statistics (the device exports none)"]

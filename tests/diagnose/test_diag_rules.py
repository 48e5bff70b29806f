"""Each finding is triggered by a fixture that shows it, and not by one that does not."""

from __future__ import annotations

from pathlib import Path

import pytest

import tcplab
from tcplab.diagnose import diagnose_paths

FIX = Path(__file__).parent / "fixtures"


def run(*names: str):  # noqa: ANN201
    _host, findings = diagnose_paths([FIX / n for n in names])
    return {f.id: f for f in findings}, findings


def test_seed000_cwnd_collapse_and_starved_bbr() -> None:
    by_id, _ = run("ss_seed000_collapse.txt")
    f = by_id["cwnd-collapse"]
    assert f.severity == "critical" and f.seed == "000"
    assert f.data["peer"] == "192.168.1.58" and f.data["collapsed"] == 3 and f.data["connections"] == 4
    assert any("cwnd:2 ssthresh:2" in e.text for e in f.evidence)
    assert {e.line for e in f.evidence} == {2, 3, 4, 5, 8, 9}  # the collapsed sockets, not the healthy one
    s = by_id["bbr-starved"]
    assert s.seed == "000" and s.data["flows"] == 3


def test_healthy_sockets_have_no_findings() -> None:
    by_id, findings = run("ss_healthy_format.txt")
    assert findings == []
    by_id, _ = run("ss_bbr_numeric_format.txt", "ss_nonnumeric_real.txt")
    assert "cwnd-collapse" not in by_id and "bbr-starved" not in by_id


def test_loopback_sockets_are_not_diagnosed_as_a_path() -> None:
    by_id, findings = run("ss_loopback_real.txt")
    # a bw:0 receiver on loopback is no starved flow (no path); but rwnd_limited 35.7 % is the
    # endpoints' window, which loopback has too (issue 7, 3.10)
    assert [f.id for f in findings] == ["rwnd-limited"]


def test_bbr_pinned_at_constant_rate_under_loss() -> None:
    by_id, _ = run("ss_bbr_pinned_0.txt", "ss_bbr_pinned_1.txt")
    assert "pinned" in by_id["bbr-starved"].summary
    by_id, _ = run("ss_bbr_pinned_0.txt", "ss_bbr_probing_1.txt")
    assert "bbr-starved" not in by_id


def test_seed004_timeouts_per_established_from_node_exporter() -> None:
    by_id, _ = run("prom_004_before.txt", "prom_004_after.txt", "ethtool_g_format.txt")
    f = by_id["rto-rate"]
    assert f.severity == "warning" and f.seed == "004"
    assert f.data["ratio"] == pytest.approx(1800 / 20000)
    assert f.data["interval_s"] == pytest.approx(60)
    assert any(e.text.startswith("node_netstat_TcpExt_TCPTimeouts") for e in f.evidence)
    assert any(e.text.startswith("node_netstat_Tcp_CurrEstab") for e in f.evidence)
    nic = by_id["nic-rx-drops"]
    assert nic.severity == "critical" and nic.seed == "004"
    assert "ethtool -G eth0 rx 8192" in " ".join(nic.next_checks)
    assert nic.data["counters"] == {"bw_in_allowance_exceeded": 3e6}
    nc = by_id["not-collected"]
    assert "TcpExtTCPLossProbes" in nc.data["missing"]  # reported as not collected, never as zero


def test_healthy_scrapes() -> None:
    by_id, _ = run("prom_healthy_before.txt", "prom_healthy_after.txt")
    assert "rto-rate" not in by_id and "nic-rx-drops" not in by_id
    assert set(by_id) == {"not-collected"}


def test_order_of_scrapes_comes_from_node_time_seconds() -> None:
    by_id, _ = run("prom_004_after.txt", "prom_004_before.txt")
    assert by_id["rto-rate"].data["timeouts"] == 1800


def test_spurious_rto_and_tlp() -> None:
    by_id, _ = run("nstat_spurious_0.txt", "nstat_spurious_1.txt")
    assert by_id["rto-rate"].data["ratio"] == pytest.approx(100 / 1000)
    assert by_id["spurious-rto"].data["spurious"] == 60
    assert by_id["tail-loss-probes"].data["probes"] == 10000
    by_id, _ = run("nstat_spurious_1.txt", "nstat_spurious_1.txt")
    assert not {"rto-rate", "spurious-rto", "tail-loss-probes"} & set(by_id)


def test_nic_ring_overflow_rising() -> None:
    by_id, _ = run("ethtool_mlx5_0.txt", "ethtool_mlx5_1.txt")
    f = by_id["nic-rx-drops"]
    assert f.severity == "warning" and f.data["counters"] == {"rx_out_of_buffer": 24000}
    assert "ethtool -g" in " ".join(f.next_checks)
    by_id, _ = run("ethtool_mlx5_1.txt", "ethtool_mlx5_1.txt")
    assert "nic-rx-drops" not in by_id
    by_id, _ = run("ethtool_ena_real.txt")
    assert "nic-rx-drops" not in by_id  # all zero


def test_qdisc_findings() -> None:
    by_id, _ = run("tc_fq_format.txt", "tc_fq_1_format.txt")
    assert by_id["fq-horizon-drops"].severity == "warning" and by_id["fq-horizon-drops"].data["device"] == "eth0"
    assert "fq-flow-limit" not in by_id  # flows_plimit did not move
    by_id, _ = run("tc_tbf_real.txt")
    assert by_id["tbf-drops"].severity == "info"  # one snapshot: since creation
    by_id, _ = run("tc_tbf_shaping_format.txt")
    assert "tbf-shaping" in by_id and "tbf-drops" not in by_id
    by_id, _ = run("tc_mq_fq_codel_format.txt")
    assert set(by_id) == {"fq-codel-drops"}  # mq's aggregate is not counted twice
    by_id, _ = run("tc_json_format.json")
    assert {"fq-horizon-drops", "fq-flow-limit", "fq-codel-drops", "tbf-drops"} <= set(by_id)
    assert "qdisc-drops" not in by_id  # the mq aggregate's 9 drops are its children's


def test_window_limited() -> None:
    by_id, _ = run("ss_window_limited_format.txt", "sysctl_bbr.txt")
    assert by_id["rwnd-limited"].data["max_share_pct"] == 60
    assert "tcp_rmem max 6291456" in by_id["rwnd-limited"].summary
    assert by_id["sndbuf-limited"].data["max_share_pct"] == 40
    by_id, _ = run("ss_bbr_numeric_format.txt")  # rwnd_limited 2.3 %: not a finding
    assert "rwnd-limited" not in by_id


def test_config_smells() -> None:
    by_id, _ = run("sysctl_bbr.txt", "tc_mq_fq_codel_format.txt")
    assert by_id["bbr-without-fq"].severity == "info"
    by_id, _ = run("sysctl_bbr.txt", "tc_mq_fq_codel_format.txt", "uname_old.txt")
    assert by_id["bbr-without-fq"].severity == "warning"
    by_id, _ = run("sysctl_bbr.txt", "tc_fq_format.txt")
    assert "bbr-without-fq" not in by_id
    by_id, _ = run("sysctl_cubic_fq.txt", "tc_mq_fq_codel_format.txt")
    assert "bbr-without-fq" not in by_id
    by_id, _ = run("cilium_status_real.txt", "ss_seed000_collapse.txt")
    # info: tcplab's replay of story 000 does not find BBR at fault on sub-ms paths (rules.py)
    assert by_id["cilium-bbr-low-rtt"].severity == "info" and by_id["cilium-bbr-low-rtt"].seed == "000"
    assert "bbr_ssthresh" in by_id["cilium-bbr-low-rtt"].mechanism
    by_id, _ = run("cilium_status_real.txt", "ss_nonnumeric_real.txt")  # 22 ms RTT
    assert by_id["cilium-bbr-low-rtt"].severity == "info"


def test_cpu_steal() -> None:
    by_id, _ = run("proc_stat_format.txt", "proc_stat_steal_1.txt", "sysctl_bbr.txt")
    f = by_id["cpu-steal-bbr"]
    assert f.severity == "warning" and f.seed == "003" and f.data["steal"] == pytest.approx(3000 / 33000)
    by_id, _ = run("proc_stat_format.txt", "proc_stat_steal_1.txt", "sysctl_cubic_fq.txt")
    assert by_id["cpu-steal"].severity == "info"
    by_id, _ = run("proc_stat_format.txt", "sysctl_bbr.txt")  # 0.3 % since boot
    assert "cpu-steal-bbr" not in by_id


@pytest.mark.parametrize(
    "names",
    [
        ("ss_seed000_collapse.txt",),
        ("prom_004_before.txt", "prom_004_after.txt", "ethtool_g_format.txt"),
        ("ss_bbr_pinned_0.txt", "ss_bbr_pinned_1.txt"),
        ("ss_window_limited_format.txt",),
        ("tc_fq_format.txt", "tc_fq_1_format.txt", "tc_tbf_real.txt"),
        ("proc_stat_format.txt", "proc_stat_steal_1.txt", "sysctl_bbr.txt", "tc_mq_fq_codel_format.txt"),
        ("cilium_status_real.txt", "ss_seed000_collapse.txt"),
    ],
)
def test_scenarios_load(names: tuple[str, ...]) -> None:
    _, findings = run(*names)
    made = [f for f in findings if f.scenario is not None]
    assert made
    for f in made:
        sc = tcplab.load_scenario(f.scenario)
        assert len(sc.hosts) == 2 and sc.routers == ["path"]
        assert "Not modelled" in (sc.description or "") or f.id in ("rwnd-limited", "sndbuf-limited")


def test_collapse_scenario_reproduces_the_path() -> None:
    by_id, _ = run("ss_seed000_collapse.txt")
    sc = by_id["cwnd-collapse"].scenario
    core = tcplab.load_scenario(sc)
    assert core.flows[0].count == 4
    assert sc["hosts"]["sender"]["sysctl"]["net.ipv4.tcp_congestion_control"] == "bbr"
    rtt_us = 2 * sum(int(link["delay"].removesuffix("us")) for link in sc["links"])
    assert rtt_us == pytest.approx(412, abs=2)  # median srtt of the collapsed connections, 0.412 ms


def test_mq_children_are_told_apart(tmp_path: Path) -> None:
    def tc(d1: int, d2: int) -> str:
        out = "qdisc mq 0: dev eth0 root\n Sent 1 bytes 1 pkt (dropped 0, overlimits 0 requeues 0)\n"
        for parent, d in ((":1", d1), (":2", d2)):
            out += (
                f"qdisc fq_codel 0: dev eth0 parent {parent} limit 10240p flows 1024\n"
                f" Sent 1000000 bytes 1000 pkt (dropped {d}, overlimits 0 requeues 0)\n backlog 0b 0p requeues 0\n"
            )
        return out

    (tmp_path / "a.txt").write_text(tc(5, 0))
    (tmp_path / "b.txt").write_text(tc(5, 40))
    _host, findings = diagnose_paths([tmp_path / "a.txt", tmp_path / "b.txt"])
    (f,) = [f for f in findings if f.id == "fq-codel-drops"]
    assert f.data["drops"] == 40 and "during the capture" in f.summary


def _one_snapshot(tmp_path: Path, rtx: int, timeouts: int):  # noqa: ANN202
    (tmp_path / "ethtool.txt").write_text("NIC statistics:\n     rx_drops: 500\n     bw_in_allowance_exceeded: 0\n")
    (tmp_path / "nstat.txt").write_text(
        f"#kernel\nTcpOutSegs 10000 0.0\nTcpRetransSegs {rtx} 0.0\nTcpExtTCPTimeouts {timeouts} 0.0\n"
    )
    _host, findings = diagnose_paths([tmp_path / "ethtool.txt", tmp_path / "nstat.txt"])
    return {f.id: f for f in findings}["nic-rx-drops"]


def test_ring_drops_with_retransmissions_are_a_warning_even_in_one_snapshot(tmp_path: Path) -> None:
    # one capture (a run directory): drops since driver load alone are history (info); with
    # the senders' retransmissions and timeouts beside them they are the losses TCP saw
    assert _one_snapshot(tmp_path, 0, 0).severity == "info"
    f = _one_snapshot(tmp_path, 400, 12)
    assert f.severity == "warning" and f.seed == "004"
    assert "400 retransmitted" in f.summary and "12 RTOs" in f.summary


def _steal_run_dir(tmp_path: Path, cc: str) -> Path:
    import json

    run = tmp_path / cc
    run.mkdir()
    (run / ".tcplab-run").write_text(json.dumps({"kind": "run"}))
    (run / "proc-stat-vm.txt").write_text("cpu  0 0 0 350 0 0 0 650 0 0\n")
    (run / "proc-stat-rx.txt").write_text("cpu  0 0 0 1000 0 0 0 0 0 0\n")
    flows = [{"name": "f0", "from": "vm", "to": "rx", "cc": cc}]
    (run / "summary.json").write_text(json.dumps({"flows": flows}))
    return run


def test_a_run_directorys_flows_say_bbr_for_cpu_steal(tmp_path: Path) -> None:
    # a run directory has no ss text: the sender's congestion control comes from summary.json
    _host, findings = diagnose_paths([_steal_run_dir(tmp_path, "bbr")])
    f = {x.id: x for x in findings}["cpu-steal-bbr"]
    assert f.seed == "003" and "65.0 %" in f.summary
    _host, findings = diagnose_paths([_steal_run_dir(tmp_path, "cubic")])
    assert {x.id for x in findings} >= {"cpu-steal"} and "cpu-steal-bbr" not in {x.id for x in findings}


def _tbf(tmp_path: Path, head: str, backlog: str) -> dict:
    p = tmp_path / "tc.txt"
    p.write_text(
        f"qdisc tbf 1: dev eth0 root refcnt 2 rate 10Mbit {head}\n"
        " Sent 17865266 bytes 11801 pkt (dropped 0, overlimits 16950 requeues 0)\n"
        f" backlog {backlog} 606p requeues 0\n"
    )
    _host, findings = diagnose_paths([p])
    return {f.id: f for f in findings}


def test_a_tbf_that_queues_seconds_is_bufferbloat(tmp_path: Path) -> None:
    # story 002: the CNI bandwidth plugin's tbf (containerd's burst of 2^32-1 bits) prints lat 425s
    f = _tbf(tmp_path, "burst 5368708b lat 425s", "917484b")["tbf-bufferbloat"]
    assert f.severity == "warning" and f.seed == "002"
    assert f.data["lat_s"] == pytest.approx(425) and f.data["backlog_s"] == pytest.approx(917484 * 8 / 10e6)
    assert "CNI bandwidth plugin" in f.mechanism
    # a backlog of seconds at the rate is bufferbloat whatever the printed latency: 2 MB at 10 Mbit/s = 1.6 s
    assert "tbf-bufferbloat" in _tbf(tmp_path, "burst 32Kb lat 50ms", "2000000b")
    # a tbf with tc's usual latency only shapes
    by_id = _tbf(tmp_path, "burst 32Kb lat 50ms", "60000b")
    assert "tbf-bufferbloat" not in by_id and by_id["tbf-shaping"].severity == "info"

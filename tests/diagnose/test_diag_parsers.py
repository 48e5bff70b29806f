"""Parsers against fixtures of real and format-exact outputs (provenance in fixtures/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tcplab.diagnose import cilium, ethtool, netstat, procstat, sysctl, tc
from tcplab.diagnose import ss as ss_mod
from tcplab.diagnose.detect import sniff
from tcplab.diagnose.prom import ethtool_name_from_prom, parse_prom
from tcplab.diagnose.source import ParseError, Source, parse_bits_rate, text_source

FIX = Path(__file__).parent / "fixtures"


def src(name: str) -> Source:
    return Source.from_path(FIX / name)


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("ss_nonnumeric_real.txt", "ss"),
        ("ss_bbr_numeric_format.txt", "ss"),
        ("ss_healthy_format.txt", "ss"),
        ("nstat_format.txt", "nstat_text"),
        ("proc_netstat_format.txt", "proc_netstat"),
        ("proc_snmp_real.txt", "proc_netstat"),
        ("ethtool_ena_real.txt", "ethtool_stats"),
        ("ethtool_g_format.txt", "ethtool_rings"),
        ("tc_tbf_real.txt", "tc_text"),
        ("tc_fq_format.txt", "tc_text"),
        ("cilium_status_real.txt", "cilium"),
        ("prom_004_before.txt", "prom"),
        ("tc_json_format.json", "tc_json"),
        ("nstat_json_format.json", "nstat_json"),
        ("sysctl_bbr.txt", "sysctl"),
        ("proc_stat_format.txt", "procstat"),
    ],
)
def test_sniff_by_content(name: str, kind: str) -> None:
    assert sniff(src(name)) == kind
    # the name does not matter
    data = (FIX / name).read_bytes()
    assert sniff(text_source(data, name="renamed.bin")) == kind


@pytest.mark.parametrize(
    ("text", "bps"),
    [
        ("2250000bps", 2.25e6),
        ("2.25Mbps", 2.25e6),
        ("350kbps", 350e3),
        ("1.2Gbps", 1.2e9),
        ("3Tbps", 3e12),
        ("1e+06bps", 1e6),
    ],
)
def test_ss_rates_both_shapes(text: str, bps: float) -> None:
    assert parse_bits_rate(text) == pytest.approx(bps)


def test_ss_without_n_real() -> None:
    (s,) = ss_mod.parse_ss(src("ss_nonnumeric_real.txt"))
    assert s.cc == "cubic" and s.peer == "200.85.64.104:58055"
    assert s.values["rtt"] == pytest.approx(22.05) and s.values["rttvar"] == pytest.approx(2.03)
    assert s.values["send_bps"] == pytest.approx(3.27e6)
    assert s.values["delivery_rate_bps"] == pytest.approx(10.9e6)
    assert s.values["retrans_cur"] == 1 and s.values["retrans_total"] == 30
    assert "app_limited" in s.flags
    assert s.get("lost") == 0  # absent means zero
    assert s.evidence[1].line == 3


def test_ss_bbr_numeric_format() -> None:
    (s,) = ss_mod.parse_ss(src("ss_bbr_numeric_format.txt"))
    assert s.cc == "bbr"
    assert s.bbr == {"bw_bps": 302500000.0, "mrtt": 3.1, "pacing_gain": 1.0, "cwnd_gain": 2.0}
    assert "ssthresh" not in s.values  # initial slow start: ss omits it
    assert s.values["rwnd_limited_ms"] == 120 and s.values["rwnd_limited_pct"] == 2.3
    assert s.values["reordering"] == 5


def test_ss_oneline_and_headerless_and_extras() -> None:
    text = (
        'ESTAB 0 0 [::ffff:10.1.1.1]:22 [::ffff:10.1.1.2]:5000 users:(("sshd",pid=1,fd=3)) uid:0 ino:1 sk:5 <-> '
        "ts sack bbr cwnd:2 ssthresh:2 rtt:0.3/0.1 skmem:(r0,rb131072,t0,tb46080,f0,w0,o0,bl0,d7)\n"
        "tcp   ESTAB 0 0 10.1.1.1:23 10.1.1.2:5001\n\t cubic cwnd:10\n"
    )
    a, b = ss_mod.parse_ss(text_source(text))
    assert a.peer_host == "10.1.1.2" and a.values["cwnd"] == 2 and a.skmem["d"] == 7 and a.cc == "bbr"
    assert b.cc == "cubic" and b.values["cwnd"] == 10


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("\t cubic cwnd:10\n", "info line before any socket"),
        ("ESTAB 0 0 a:1 b:2\n\t cwnd:x\n", "cwnd:'x' is not a count"),
        ("ESTAB 0 0 a:1 b:2\n\t send fast\n", "not a rate"),
        ("hello world\n", "not an ss socket line"),
    ],
)
def test_ss_errors_name_the_line(text: str, needle: str) -> None:
    with pytest.raises(ParseError) as e:
        ss_mod.parse_ss(text_source(text, "x.txt"))
    assert needle in str(e.value) and str(e.value).startswith("x.txt:")


def test_proc_netstat_zips_by_name() -> None:
    c = netstat.parse_proc_netstat(src("proc_snmp_real.txt"))
    assert c.values["TcpCurrEstab"] == 4 and c.values["TcpRetransSegs"] == 227 and c.values["TcpMaxConn"] == -1
    assert c.evidence["TcpCurrEstab"].line == 2
    c2 = netstat.parse_proc_netstat(src("proc_netstat_format.txt"))
    assert c2.values["TcpExtTCPTimeouts"] == 115 and c2.values["TcpExtTcpTimeoutRehash"] == 115


def test_proc_netstat_count_mismatch_and_truncation() -> None:
    with pytest.raises(ParseError, match=r"x:2: Tcp: 2 values for 3 names"):
        netstat.parse_proc_netstat(text_source("Tcp: A B C\nTcp: 1 2\n", "x"))
    with pytest.raises(ParseError, match=r"x:1: Tcp: a header line without its value line"):
        netstat.parse_proc_netstat(text_source("Tcp: A B C\n", "x"))


def test_nstat_text_and_json() -> None:
    c = netstat.parse_nstat_text(src("nstat_format.txt"))
    assert c.values["TcpExtTCPTimeouts"] == 115 and c.evidence["TcpCurrEstab"].line == 12
    j = netstat.parse_nstat_json(src("nstat_json_format.json"))
    assert j.values["TcpExtTCPTimeouts"] == 115


@pytest.mark.parametrize(
    ("name", "driver", "concepts"),
    [
        ("ethtool_ena_real.txt", "ena", {"cloud_bw_policer", "cloud_pps_policer"}),
        ("ethtool_mlx5_format.txt", "mlx5", {"rx_ring_overflow", "port_buffer_drop"}),
        # rx_missed_errors (MPC) is the ring's overflow as Intel drivers count it
        ("ethtool_ixgbe_format.txt", "ixgbe", {"rx_ring_overflow"}),
        ("ethtool_i40e_old_format.txt", "i40e", {"port_buffer_drop"}),
        ("ethtool_i40e_new_format.txt", "i40e", {"port_buffer_drop", "rx_ring_overflow"}),
        ("ethtool_e1000e_format.txt", "e1000e", {"rx_ring_overflow"}),
        ("ethtool_r8152_format.txt", "r8152", {"rx_ring_overflow"}),
        ("ethtool_virtio_format.txt", "virtio_net", {"rx_ring_overflow"}),
        ("ethtool_virtio_real.txt", "virtio_net", {"rx_ring_overflow"}),
    ],
)
def test_ethtool_alias_table(name: str, driver: str, concepts: set[str]) -> None:
    n = ethtool.parse_ethtool_stats(src(name), device="eth0")
    assert n.driver == driver
    assert set(n.concepts()) == concepts


def test_ethtool_names_with_dots_brackets_spaces() -> None:
    n = ethtool.parse_ethtool_stats(
        text_source("NIC statistics:\n     port.rx_dropped: 5\n     [3]: tx_bytes: 7\n     Queue[0] AllocFails: 1\n")
    )
    assert n.values == {"port.rx_dropped": 5, "[3]: tx_bytes": 7, "Queue[0] AllocFails": 1}


def test_ethtool_rings_text_and_json() -> None:
    r = ethtool.parse_ethtool_rings(src("ethtool_g_format.txt"))
    assert (r.device, r.rx, r.rx_max, r.tx, r.tx_max) == ("eth0", 1024, 8192, 1024, 8192)
    j = ethtool.parse_ethtool_rings_json(text_source('[{"ifname": "eth1", "rx-max": 4096, "rx": 512, "tx": 512}]'))
    assert (j.device, j.rx, j.rx_max) == ("eth1", 512, 4096)


def test_prom_ethtool_names_undone() -> None:
    assert ethtool_name_from_prom("node_ethtool_received_out_of_buffer") == "rx_out_of_buffer"
    assert ethtool_name_from_prom("node_ethtool_port_received_dropped") == "port.rx_dropped"
    assert ethtool_name_from_prom("node_ethtool_bw_in_allowance_exceeded") == "bw_in_allowance_exceeded"


def test_prom_scrape() -> None:
    p = parse_prom(src("prom_004_before.txt"))
    assert p.get("node_netstat_TcpExt_TCPTimeouts") == 115
    ev = p.evidence[("node_netstat_TcpExt_TCPTimeouts", ())]
    assert ev.text.startswith("node_netstat_TcpExt_TCPTimeouts") and ev.line > 0
    with pytest.raises(ParseError, match=r"p:2: not Prometheus text"):
        parse_prom(text_source('node_a 1\nnode_b{x="1" 2\n', "p"))


def test_tc_text_kinds() -> None:
    (tbf,) = tc.parse_tc_text(src("tc_tbf_real.txt"))
    assert tbf.kind == "tbf" and tbf.value("drops") == 42 and tbf.value("overlimits") == 150
    assert tbf.options["rate"] == "10Mbit"
    (fq,) = tc.parse_tc_text(src("tc_fq_format.txt"))
    assert fq.dev == "eth0" and fq.parent == "8001:1"
    assert fq.xstats["throttled_flows"] == 2 and fq.xstats["throttled"] == 45123
    assert fq.xstats["flows_plimit"] == 12 and fq.xstats["horizon_drops"] == 3
    assert fq.xstats["latency"] == pytest.approx(12300) and fq.options["horizon"] == "10s"
    mq, fqc, htb = tc.parse_tc_text(src("tc_mq_fq_codel_format.txt"))
    assert mq.is_aggregate and not fqc.is_aggregate and fqc.xstats["new_flow_count"] == 412
    assert htb.kind == "htb" and htb.dev == "eth1"


def test_tc_json() -> None:
    qs = tc.parse_tc_json(src("tc_json_format.json"))
    assert [q.kind for q in qs] == ["mq", "tbf", "htb", "fq", "fq_codel"]
    fq = next(q for q in qs if q.kind == "fq")
    assert fq.value("drops") == 12 and fq.value("horizon_drops") == 3 and fq.dev == "eth0"
    assert qs[0].is_aggregate and qs[1].value("overlimits") == 150 and qs[2].options["default"] == "0x30"


def test_sysctl_uname_procstat_cilium() -> None:
    s = sysctl.parse_sysctl(src("sysctl_bbr.txt"))
    assert s.get("net.ipv4.tcp_congestion_control") == "bbr"
    assert s.triple("net.ipv4.tcp_rmem") == (4096, 131072, 6291456)
    k = sysctl.parse_uname(text_source("6.1.0-18-amd64\n"))
    assert k.version == (6, 1)
    cpu = procstat.parse_proc_stat(src("proc_stat_format.txt"))
    assert cpu.ticks["steal"] > 0 and cpu.ncpu == 2
    c = cilium.parse_cilium(src("cilium_status_real.txt"))
    assert c.bandwidth_manager and c.bm_cc == "bbr" and c.bm_devices == ("eth0",) and c.host_routing == "BPF"
    old = cilium.parse_cilium(text_source("BandwidthManager:       EDT with BPF   [eth0]\n"))
    assert old.bm_cc is None and old.bm_devices == ("eth0",)
    off = cilium.parse_cilium(text_source("BandwidthManager:       Disabled\n"))
    assert not off.bandwidth_manager


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b"", "empty file"),
        (b"\x00\x01\x02binary", "binary data"),
        (b"just some prose\n", "not a recognised capture"),
        (b'{"foo": 1}', "JSON, but not"),
    ],
)
def test_sniff_rejects(data: bytes, needle: str) -> None:
    with pytest.raises(ParseError) as e:
        sniff(text_source(data, "f.txt"))
    assert needle in str(e.value) and str(e.value).startswith("f.txt:1:")


def test_line_too_long_and_bad_utf8() -> None:
    with pytest.raises(ParseError, match="line longer than"):
        ss_mod.parse_ss(text_source("ESTAB 0 0 a:1 b:2 " + "x" * 70000 + "\n"))
    with pytest.raises(ParseError, match=r"x:2: bytes that are not UTF-8"):
        netstat.parse_nstat_text(text_source(b"#kernel\nTcp\xff 1 0.0\n", "x"))


def test_real_loopback_ss_three_shapes_agree() -> None:
    """ss -tinme, ss -tinmO (one line) and ss -tim (scaled rates), iproute2 6.1, same sockets."""
    two = ss_mod.parse_ss(src("ss_loopback_real.txt"))
    one = ss_mod.parse_ss(src("ss_loopback_oneline_real.txt"))
    scaled = ss_mod.parse_ss(src("ss_loopback_noN_real.txt"))
    assert [s.values["cwnd"] for s in two] == [s.values["cwnd"] for s in one] == [s.values["cwnd"] for s in scaled]
    assert two[1].bbr["bw_bps"] == 23483555600 and scaled[1].bbr["bw_bps"] == pytest.approx(23.5e9)
    assert two[0].skmem["d"] == 5 and two[1].values["rwnd_limited_pct"] == 35.7
    assert "ssthresh" not in two[0].values and two[1].values["ssthresh"] == 8


@pytest.mark.parametrize(
    "name",
    # the names tcplab's engine writes for ring overflow per driver
    # (crates/tcplab-core/src/host/nic.rs: Nic::ethtool)
    ["rx_drops", "rx_missed_errors", "rx_out_of_buffer", "rx_queue_0_drops", "rx_queue_3_drops"],
)
def test_the_engines_ring_drop_names_read_as_ring_overflow(name: str) -> None:
    concept = ethtool.concept_of(name)
    assert concept is not None and concept[0] == "rx_ring_overflow"

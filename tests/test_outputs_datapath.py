"""What a run shows of the datapath around TCP: tc/ethtool/proc-stat texts, summary, Parquet,
plots, report and diagnose, for engine output shaped as the binding contract says.

The tool texts are checked line by line against what the real tools' print code gives for
the same numbers (iproute2 tc/tc_qdisc.c print_qdisc(), tc/tc_util.c print_tcstats2_attr(),
tc/q_fifo.c, q_tbf.c, q_fq.c, q_fq_codel.c; lib/json_print_math.c sprint_size(),
lib/json_print.c print_color_rate(), lib/utils.c sprint_time()/sprint_time64(); ethtool.c
dump_stats(); Linux fs/proc/stat.c show_stat()), worked out by hand in the comments.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

import fake_core
import tcplab
from conftest import BASE_SCENARIO
from tcplab.diagnose import diagnose_paths
from tcplab.diagnose.ethtool import parse_ethtool_stats
from tcplab.diagnose.procstat import parse_proc_stat
from tcplab.diagnose.source import text_source
from tcplab.diagnose.tc import parse_tc_text
from tcplab.engine import parse_output
from tcplab.results import Result
from tcplab.results.ethtool import format_ethtool_stats
from tcplab.results.procstat import format_proc_stat
from tcplab.results.tc import format_node, format_qdisc, sprint_rate, sprint_size, sprint_time64_ns, sprint_time_us
from tcplab.views import write_run_views

# ---------------------------------------------------------------- the tools' number formats


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (0, "0b"),
        (1514, "1514b"),  # < 1024 * 2 and 1514 - 1024 >= 16: bytes
        (3028, "3028b"),  # rint(2.957) = 3 -> |3072 - 3028| = 44 >= 16
        (15140, "15140b"),  # rint(14.79) = 15 -> |15360 - 15140| = 220 >= 16
        (32768, "32Kb"),
        (32770, "32Kb"),  # within 16 bytes of 32 Kb
        (67500, "67500b"),
        (32 << 20, "32Mb"),
        ((32 << 20) + 1000, "32Mb"),  # within 1024 bytes of 32 Mb
    ],
)
def test_sprint_size(size, text):
    assert sprint_size(size) == text


@pytest.mark.parametrize(
    ("bits", "text"),
    [
        (10_000_000, "10Mbit"),
        (550_000, "550Kbit"),
        (1_000_000_000, "1Gbit"),
        (1_234_568, "1234Kbit"),  # not a multiple of 1000 and >= 1e6 bit: one division, then stop
        (800, "800bit"),
    ],
)
def test_sprint_rate(bits, text):
    assert sprint_rate(bits // 8) == text


def test_sprint_times():
    # sprint_time: __u32 microseconds, %.3g with s/ms/us
    assert sprint_time_us(40_000) == "40ms"
    assert sprint_time_us(10_000_000) == "10s"
    assert sprint_time_us(400_000) == "400ms"
    assert sprint_time_us(999) == "999us"
    assert sprint_time_us(1_234_567) == "1.23s"
    # sprint_time64: nanoseconds
    assert sprint_time64_ns(10_000) == "10us"
    assert sprint_time64_ns(12_300) == "12.3us"
    assert sprint_time64_ns(512) == "512ns"


# ---------------------------------------------------------------- tc -s qdisc records

STATS = {
    "sent_bytes": 123456789,
    "sent_packets": 98765,
    "drops": 17,
    "overlimits": 0,
    "requeues": 2,
    "backlog_bytes": 0,
    "backlog_packets": 0,
}


def test_fq_codel_record_line_by_line():
    cfg = {
        "kind": "fq_codel",
        "limit_packets": 10240,
        "flows": 1024,
        "target_ns": 5_000_000,
        "interval_ns": 100_000_000,
        "quantum_bytes": 1514,
        "memory_limit_bytes": 32 << 20,
        "drop_batch": 64,
        "ecn": True,
    }
    xstats = {"maxpacket": 1514, "drop_overlimit": 0, "new_flow_count": 412, "ecn_mark": 0, "old_flows_len": 1}
    lines = format_qdisc(cfg, STATS, dev="eth0", handle="0:", xstats=xstats).split("\n")
    assert lines == [
        # print_qdisc: "qdisc %s" " %x:" " " "dev %s " "root " "refcnt %u "; fq_codel_print_opt: each "... "
        "qdisc fq_codel 0: dev eth0 root refcnt 2 limit 10240p flows 1024 quantum 1514 target 5ms "
        "interval 100ms memory_limit 32Mb ecn drop_batch 64 ",
        # print_tcstats2_attr: prefix " ", "Sent %llu bytes", " %u pkt", " (dropped %u", ", overlimits %u",
        # " requeues %u) "
        " Sent 123456789 bytes 98765 pkt (dropped 17, overlimits 0 requeues 2) ",
        # print_nl(), prefix, "backlog %s", " %up", " requeues %u"
        " backlog 0b 0p requeues 2",
        # fq_codel_print_xstats: "  maxpacket %u" " drop_overlimit %u" " new_flow_count %u" " ecn_mark %u",
        # print_nl(), "  new_flows_len %u" " old_flows_len %u"
        "  maxpacket 1514 drop_overlimit 0 new_flow_count 412 ecn_mark 0",
        "  new_flows_len 0 old_flows_len 1",
        "",
    ]


def test_fq_record_line_by_line():
    cfg = {
        "kind": "fq",
        "limit_packets": 10000,
        "flow_limit_packets": 100,
        "buckets": 32768,  # Cilium's 2^15
        "quantum_bytes": 3028,
        "initial_quantum_bytes": 15140,
        "maxrate_bps": None,
        "low_rate_threshold_bps": 550_000,
        "refill_delay_ns": 40_000_000,
        "horizon_ns": 2_000_000_000,
        "horizon_drop": True,
        "pacing": True,
    }
    x = {
        "flows": 112,
        "inactive": 104,
        "throttled_flows": 2,
        "gc": 0,
        "highprio": 0,
        "throttled": 45123,
        "latency": 12_300,
        "flows_plimit": 12,
        "horizon_drops": 3,
    }
    lines = format_qdisc(cfg, STATS, dev="eth0", xstats=x).split("\n")
    assert lines[0] == (
        # fq_print_opt order: limit flow_limit buckets orphan_mask [nopacing] bands/priomap weights quantum
        # initial_quantum [maxrate] low_rate_threshold refill_delay [ce_threshold] timer_slack horizon horizon_drop
        "qdisc fq 1: dev eth0 root refcnt 2 limit 10000p flow_limit 100p buckets 32768 orphan_mask 1023 "
        "bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1 weights 589824 196608 65536 quantum 3028b "
        "initial_quantum 15140b low_rate_threshold 550Kbit refill_delay 40ms timer_slack 10us horizon 2s "
        "horizon_drop "
    )
    # fq_print_xstats: "  flows %u" " (inactive %u" " throttled %u)" " band0_pkts %u" ...; print_nl();
    # "  gc %llu" " highprio %llu" [" retrans"] " throttled %llu" " latency %s" [" ce_mark"] " flows_plimit %llu";
    # print_nl(); " horizon_drops %llu" (one space: the format string begins with one)
    assert lines[3:] == [
        "  flows 112 (inactive 104 throttled 2) band0_pkts 0 band1_pkts 0 band2_pkts 0",
        "  gc 0 highprio 0 throttled 45123 latency 12.3us flows_plimit 12",
        " horizon_drops 3",
        "",
    ]


def test_fq_options_that_change():
    cfg = {"kind": "fq", "maxrate_bps": 80_000_000, "horizon_drop": False, "pacing": False}
    head = format_qdisc(cfg, {}, dev="eth1").split("\n")[0]
    assert " nopacing bands 3 " in head
    assert " maxrate 80Mbit low_rate_threshold 550Kbit " in head
    assert head.endswith(" horizon 10s horizon_cap ")
    # no xstats line 3 when none of its counters is set; horizon_caps prints with two spaces
    assert len(format_qdisc(cfg, {}, dev="eth1").split("\n")) == 6
    assert format_qdisc(cfg, {}, dev="eth1", xstats={"horizon_caps": 5}).split("\n")[5] == "  horizon_caps 5"


def test_tbf_record_and_its_default_child():
    # tc qdisc add dev eth0 root handle 1: tbf rate 10mbit burst 32kb latency 400ms:
    # limit = 400 ms x 1.25 MB/s + 32768 = 532768 B; the bucket is 26214400 ns = 409600 ticks
    cfg = {"kind": "tbf", "rate_bps": 10_000_000, "burst_bytes": 32768, "limit_bytes": 532768}
    config = {"nodes": [{"name": "a"}, {"name": "b"}], "links": [{"from": 0, "to": 1, "queue": cfg}]}
    link = {
        "qdisc": "tbf",
        "sent_bytes": 45678901,
        "sent_packets": 30000,
        "drops": 42,
        "overlimits": 150,
        "requeues": 0,
        "backlog_bytes": 3028,
        "backlog_packets": 2,
        "xstats": {},
        "child": {
            "qdisc": "bfifo",
            "sent_bytes": 45678901,
            "sent_packets": 30000,
            "drops": 42,
            "overlimits": 0,
            "requeues": 0,
            "backlog_bytes": 3028,
            "backlog_packets": 2,
        },
    }
    text = format_node(config, [link], "a", invisible=True)  # `tc -s qdisc show invisible`
    assert text.split("\n") == [
        # tbf_print_opt: "rate %s " "burst %s " "lat %s " (limit only when the latency is negative)
        "qdisc tbf 1: dev eth0 root refcnt 2 rate 10Mbit burst 32Kb lat 400ms ",
        " Sent 45678901 bytes 30000 pkt (dropped 42, overlimits 150 requeues 0) ",
        " backlog 3028b 2p requeues 0",
        # the kernel's child: bfifo of tbf's limit, handle 0:, under class 1:1, refcnt 1 (not printed)
        "qdisc bfifo 0: dev eth0 parent 1:1 limit 532768b",
        " Sent 45678901 bytes 30000 pkt (dropped 42, overlimits 0 requeues 0) ",
        " backlog 3028b 2p requeues 0",
        "",
    ]


def test_tbf_with_peakrate_and_the_cni_bucket():
    # peakrate 20mbit mtu 1514: minburst from the peak bucket's ticks: 1514 B at 2.5 MB/s = 605600 ns =
    # 9462 ticks (ns >> 6, truncated), back to 9462 / 15.625 us x 2.5 MB/s = 1513.92 B, printed as a __u32
    # (tc shows the kernel's truncation)
    cfg = {
        "kind": "tbf",
        "rate_bps": 10_000_000,
        "burst_bytes": 5000,
        "limit_bytes": 67500,
        "peakrate_bps": 20_000_000,
        "mtu_bytes": 1514,
    }
    head = format_qdisc(cfg, {}, dev="eth0").split("\n")[0]
    # latency = max(67500/1.25e6 - 4000 us, 67500/2.5e6 s - 9462 ticks / 15.625) = max(50000, 26394.4) us
    assert head.endswith("rate 10Mbit burst 5000b peakrate 20Mbit minburst 1513b lat 50ms ")
    # CNI bandwidth plugin under containerd at 10 Mbit/s: the bucket is 2^32 - 1 ns of traffic
    # (5368709 B), the limit 536870911 + 31250 B; tc prints the bucket back from its ticks
    cni = {"kind": "tbf", "rate_bps": 10_000_000, "burst_bytes": 5368709, "limit_bytes": 536902161}
    head = format_qdisc(cni, {}, dev="eth0").split("\n")[0]
    ticks = (5368709 * 10**9 // 1_250_000) >> 6  # 67108862
    burst = int(1_250_000 * (ticks / 15.625) / 1e6)  # 5368708 B: not within 1024 B of a whole Mb
    assert f"burst {burst}b " in head
    lat_us = int(1e6 * 536902161 / 1_250_000 - ticks / 15.625)  # 425.2 s
    assert head.endswith(f"lat {'%.3g' % (lat_us / 1e6)}s ")


def test_fifo_records():
    assert format_qdisc({"kind": "pfifo", "limit_packets": 1000}, {}, dev="eth0").split("\n")[0] == (
        "qdisc pfifo 1: dev eth0 root refcnt 2 limit 1000p"  # fifo_print_opt: no trailing space
    )
    assert format_qdisc({"kind": "bfifo", "limit_bytes": 65536}, {}, dev="eth2").split("\n")[0] == (
        "qdisc bfifo 1: dev eth2 root refcnt 2 limit 64Kb"
    )


def test_tc_text_reads_back_in_diagnose():
    cfg = {"kind": "fq"}
    text = format_qdisc(cfg, STATS, dev="eth0", xstats={"flows": 3, "throttled_flows": 1, "throttled": 9})
    (q,) = parse_tc_text(text_source(text))
    assert (q.kind, q.dev, q.parent) == ("fq", "eth0", "root")
    assert q.stats["drops"] == 17 and q.stats["packets"] == 98765 and q.stats["requeues"] == 2
    assert q.xstats["throttled_flows"] == 1 and q.xstats["throttled"] == 9 and q.options["horizon"] == "10s"


# ---------------------------------------------------------------- ethtool -S, /proc/stat


def test_ethtool_text():
    text = format_ethtool_stats({"rx_drops": 42, "bw_in_allowance_exceeded": 7})
    # dump_stats(): "NIC statistics:\n" then "     %.*s: %llu\n" (ETH_GSTRING_LEN = 32)
    assert text == "NIC statistics:\n     rx_drops: 42\n     bw_in_allowance_exceeded: 7\n"
    assert format_ethtool_stats({"x" * 40: 1}) == "NIC statistics:\n     " + "x" * 32 + ": 1\n"
    # softnet_stat's time_squeeze is no ethtool -S counter
    assert format_ethtool_stats({"rx_drops": 1, "time_squeeze": 3}) == "NIC statistics:\n     rx_drops: 1\n"
    nic = parse_ethtool_stats(text_source(text))
    assert nic.values == {"rx_drops": 42, "bw_in_allowance_exceeded": 7}


def test_proc_stat_text():
    # 10.5 s on the CPU and 19.5 s off it: USER_HZ ticks (truncated), idle and steal columns
    text = format_proc_stat(10_509_999_999, 19_500_000_000)
    assert text == "cpu  0 0 0 1050 0 0 0 1950 0 0\ncpu0 0 0 0 1050 0 0 0 1950 0 0\n"
    cpu = parse_proc_stat(text_source(text))
    assert cpu.ticks["steal"] / cpu.total == pytest.approx(1950 / 3000)


# ---------------------------------------------------------------- a run with the components


def _scenario_and_config() -> tuple[Any, dict]:
    sc = tcplab.load_scenario(copy.deepcopy(BASE_SCENARIO))
    config = sc.to_core()
    config["duration_ns"] = 2_000_000_000
    return sc, config


def _datapath_config() -> tuple[Any, dict]:
    """The base scenario with fq on the server's device, tbf at the router towards the
    client, a NIC on the client and 35 % CPU slices on the server (engine JSON as the
    scenario layer will produce it)."""
    sc, config = _scenario_and_config()
    names = [n["name"] for n in config["nodes"]]
    for link in config["links"]:
        src, dst = names[link["from"]], names[link["to"]]
        if (src, dst) == ("server", "r1"):
            link["queue"] = {"kind": "fq", "horizon_ns": 2_000_000_000}
        if (src, dst) == ("r1", "client"):
            link["queue"] = {"kind": "tbf", "rate_bps": 5_000_000, "burst_bytes": 5000, "limit_bytes": 36250}
    for node in config["nodes"]:
        if node["name"] == "client":
            node["nic"] = {"driver": "ena", "rx_ring": 256, "rx_queues": 1}
        if node["name"] == "server":
            node["cpu"] = {"period_ns": 10_000_000, "share": 0.35, "phase_ns": 0}
    return sc, config


def _with_contract(config: dict, raw: dict) -> dict:
    """Fake engine output plus what the binding contract adds for the components."""
    raw = copy.deepcopy(raw)
    names = [n["name"] for n in config["nodes"]]
    for cfg, link in zip(config["links"], raw["links"], strict=True):
        kind = cfg["queue"]["kind"]
        if kind == "fq":
            link["xstats"] = {"flows": 2, "inactive": 1, "throttled_flows": 1, "gc": 0, "highprio": 0,
                              "throttled": 812, "flows_plimit": 0, "horizon_drops": 5}  # fmt: skip
            link["drops"] = 5
        if kind == "tbf":
            link["drops"], link["overlimits"] = 9, 4000
            link["child"] = {k: link[k] for k in ("sent_bytes", "sent_packets", "drops", "backlog_bytes",
                                                  "backlog_packets", "max_backlog_packets")} | {"qdisc": "bfifo", "overlimits": 0,
                                                                         "requeues": 0, "xstats": {}}  # fmt: skip
    series: dict[str, list] = {c: [] for c in ("t_ns", "host", "cpu_on", "rx_ring_used", "rx_dropped",
                                               "allowance_queued")}  # fmt: skip
    t = np.arange(100_000_000, config["duration_ns"] + 1, 100_000_000, dtype=np.uint64)
    for host in raw["hosts"]:
        node = next(n for n in config["nodes"] if n["name"] == host["name"])
        host["nic"], host["cpu"] = None, None
        if node.get("nic"):
            host["nic"] = {"driver": "ena", "rx_ring": 256, "rx_queues": 1,
                           "ethtool": {"rx_drops": 42, "bw_in_allowance_exceeded": 7, "pps_allowance_exceeded": 0}}  # fmt: skip
        if node.get("cpu"):
            host["cpu"] = {"period_ns": 10_000_000, "share": 0.35, "on_ns": 700_000_000, "steal_ns": 1_300_000_000}
        if node.get("nic") or node.get("cpu"):
            n = len(t)
            series["t_ns"].append(t)
            series["host"].append(np.full(n, names.index(host["name"]), dtype=np.uint32))
            series["cpu_on"].append((np.arange(n) % 3 == 0).astype(np.uint8))
            series["rx_ring_used"].append((np.arange(n) * 20 % 257).astype(np.uint32))
            series["rx_dropped"].append(np.minimum(np.arange(n) * 3, 42).astype(np.uint64) if node.get("nic")
                                        else np.zeros(n, dtype=np.uint64))  # fmt: skip
            series["allowance_queued"].append(np.zeros(n, dtype=np.uint32))
    raw["host_series"] = {k: np.concatenate(v) if v else np.array([], dtype=np.uint64) for k, v in series.items()}
    return raw


def _result(config: dict, sc: Any, raw: dict) -> Result:
    return Result(sc, config, parse_output(raw), views=write_run_views)


@pytest.fixture
def datapath_result() -> Result:
    sc, config = _datapath_config()
    raw = _with_contract(config, fake_core.run(json.dumps(config)))
    return _result(config, sc, raw)


def test_summary_has_qdisc_xstats_child_and_host_models(datapath_result):
    s = datapath_result.summary
    fq = next(link for link in s["links"] if link["qdisc"] == "fq")
    assert (fq["node"], fq["dev"]) == ("server", "eth0")
    assert fq["xstats"]["horizon_drops"] == 5 and fq["child"] is None
    tbf = next(link for link in s["links"] if link["qdisc"] == "tbf")
    assert tbf["node"] == "r1" and tbf["overlimits"] == 4000 and tbf["child"]["qdisc"] == "bfifo"
    hosts = {h["name"]: h for h in s["hosts"]}
    assert hosts["client"]["nic"]["ethtool"]["rx_drops"] == 42 and hosts["client"]["cpu"] is None
    assert hosts["server"]["cpu"]["steal_ratio"] == pytest.approx(0.65) and hosts["server"]["nic"] is None
    json.dumps(s, allow_nan=False)  # still plain JSON


def test_host_series_frame(datapath_result):
    hs = datapath_result.host_series
    assert set(hs["host_name"]) == {"server", "client"}
    assert str(hs["rx_dropped"].dtype) == "uint64" and str(hs["cpu_on"].dtype) == "uint8"
    assert np.allclose(hs["t_s"], hs["t_ns"] / 1e9)
    q = datapath_result.queues
    assert set(q[q["qdisc"] == "tbf"]["node"]) == {"r1"}


def test_run_directory_files(datapath_result, tmp_path: Path):
    out = datapath_result.write(tmp_path / "run")
    tc = (out / "tc-qdisc-server.txt").read_text()
    assert tc.startswith("qdisc fq 1: dev eth0 root refcnt 2 limit 10000p ")
    assert " horizon 2s horizon_drop \n" in tc and "\n horizon_drops 5\n" in tc
    router = (out / "tc-qdisc-r1.txt").read_text()
    # `tc -s qdisc show`: tbf's default bfifo child is invisible (issue 21 item 10)
    assert "qdisc tbf 1: dev eth" in router and "parent 1:1" not in router
    assert (out / "ethtool-S-client.txt").read_text().startswith("NIC statistics:\n     rx_drops: 42\n")
    assert (out / "proc-stat-server.txt").read_text().startswith("cpu  0 0 0 70 0 0 0 130 0 0\n")
    assert not (out / "ethtool-S-server.txt").exists() and not (out / "proc-stat-client.txt").exists()
    hosts = pq.read_table(out / "hosts.parquet").to_pandas()
    assert {"t_ns", "host", "host_name", "cpu_on", "rx_ring_used", "rx_dropped", "allowance_queued"} <= set(hosts)
    assert (out / "plots" / "qdisc-backlog.png").is_file() and (out / "plots" / "nic-rings.png").is_file()
    html = (out / "report.html").read_text()
    for text in ("Qdisc statistics", "NIC counters", "CPU time slices", "bw_in_allowance_exceeded", "horizon_drops 5"):
        assert text in html, text
    # a tcplab directory: --force may replace it
    assert datapath_result.write(out, overwrite=True) == out


def test_diagnose_reads_the_run_directory(datapath_result, tmp_path: Path):
    out = datapath_result.write(tmp_path / "run", plots=False)
    host, findings = diagnose_paths([out])
    assert len(host.snapshots) == 1
    by_id = {f.id: f for f in findings}
    assert by_id["nic-rx-drops"].data["device"] == "client:eth0"
    assert by_id["nic-rx-drops"].data["counters"] == {"rx_drops": 42, "bw_in_allowance_exceeded": 7}
    assert by_id["tbf-drops"].data["device"].startswith("r1:eth")
    # tbf's inner bfifo: its drops are tbf's (tbf_enqueue() counts them), reported once
    assert "qdisc-drops" not in by_id
    assert by_id["fq-horizon-drops"].data["device"] == "server:eth0"
    steal = next(f for f in findings if f.id.startswith("cpu-steal"))
    assert steal.data["steal"] == pytest.approx(130 / 200)


# ---------------------------------------------------------------- runs without them


def test_a_run_without_components_has_no_datapath_outputs(fake, tmp_path: Path):
    r = tcplab.run(copy.deepcopy(BASE_SCENARIO), overrides=["duration=2s"], core=fake)
    out = r.write(tmp_path / "run")
    assert not list(out.glob("ethtool-S-*")) and not list(out.glob("proc-stat-*"))
    assert not (out / "hosts.parquet").exists()
    assert sorted(p.name for p in out.glob("tc-qdisc-*.txt")) == ["tc-qdisc-client.txt", "tc-qdisc-r1.txt",
                                                                   "tc-qdisc-server.txt"]  # fmt: skip
    assert not (out / "plots" / "qdisc-backlog.png").exists() and not (out / "plots" / "nic-rings.png").exists()
    html = (out / "report.html").read_text()
    assert "Qdisc statistics" not in html and "NIC counters" not in html and "CPU time slices" not in html


def test_older_engine_output_without_the_contract_keys():
    """Links without xstats, hosts without nic/cpu, no host_series: empty, not an error."""
    sc, config = _datapath_config()
    raw = fake_core.run(json.dumps(config))
    for link in raw["links"]:
        link.pop("xstats", None)
        link.pop("child", None)
    for host in raw["hosts"]:
        host.pop("nic", None)
        host.pop("cpu", None)
    raw.pop("host_series", None)
    r = _result(config, sc, raw)
    assert all(link["xstats"] == {} and link["child"] is None for link in r.summary["links"])
    assert all(h["nic"] is None and h["cpu"] is None for h in r.summary["hosts"])
    assert r.host_series.empty and list(r.host_series.columns)[:6] == [
        "t_ns", "host", "cpu_on", "rx_ring_used", "rx_dropped", "allowance_queued"]  # fmt: skip
    assert r.ethtool_texts() == {} and r.proc_stat_texts() == {}
    # the configured tbf still prints, from the scenario's parameters and the common counters
    assert "qdisc tbf 1:" in r.tc_texts()["r1"]


# ---------------------------------------------------------------- plots' CPU shading, CLI summary


def test_off_cpu_spans_follow_period_share_and_phase():
    from tcplab.views.datapath import off_cpu_spans

    # runs [k*10 ms, k*10 ms + 3.5 ms): off 6.5 ms of every 10 ms
    spans = off_cpu_spans({"period_ns": 10_000_000, "share": 0.35, "phase_ns": 0}, 0.03)
    assert [(round(a, 6), round(w, 6)) for a, w in spans] == [(0.0035, 0.0065), (0.0135, 0.0065), (0.0235, 0.0065)]
    # phase 50 ms: on [50, 150) ms, so off from 0 to 50 ms and from 150 ms on
    spans = off_cpu_spans({"period_ns": 200_000_000, "share": 0.5, "phase_ns": 50_000_000}, 0.3)
    assert [(round(a, 6), round(w, 6)) for a, w in spans] == [(0.0, 0.05), (0.15, 0.1)]
    assert off_cpu_spans({"period_ns": 10_000_000, "share": 1.0}, 1.0) == []


def test_cli_summary_lines(datapath_result, fake):
    from tcplab.commands.summary import _datapath_lines

    lines = _datapath_lines(datapath_result.summary)
    assert "qdisc tbf on r1 eth1 (r1->client): dropped 9, overlimits 4000" in lines
    assert "qdisc fq on server eth0 (server->r1): dropped 5, overlimits 0, horizon_drops 5" in lines
    # the NIC's drop counters by their ethtool names; a zero counter is left out
    assert "nic client eth0 (ena, rx ring 256): rx_drops 42, bw_in_allowance_exceeded 7" in lines
    assert "cpu server: steal 65.0 % (runs 35 % of every 10 ms)" in lines
    plain = tcplab.run(copy.deepcopy(BASE_SCENARIO), overrides=["duration=2s"], core=fake)
    assert _datapath_lines(plain.summary) == []


# ---------------------------------------------------------------- the real engine, today


@pytest.mark.engine
def test_real_run_tc_texts_agree_with_the_summary(real_core, tmp_path: Path):
    """Every link of a real run appears once in its node's tc text, with the summary's counters."""
    r = tcplab.run("builtin:cubic-100mbit-20ms", overrides=["duration=2s"], core=real_core)
    out = r.write(tmp_path / "run", plots=False)
    seen = 0
    for link in r.summary["links"]:
        qdiscs = parse_tc_text(text_source((out / f"tc-qdisc-{link['node']}.txt").read_text()))
        (q,) = [q for q in qdiscs if q.dev == link["dev"]]
        assert q.kind == link["qdisc"]
        assert (q.stats["packets"], q.stats["bytes"], q.stats["drops"]) == (
            link["sent_packets"],
            link["sent_bytes"],
            link["drops"],
        )
        assert q.stats["qlen"] == link["backlog_packets"]
        seen += 1
    assert seen == len(r.config["links"])
    assert any(link["drops"] for link in r.summary["links"])  # the 1-BDP bottleneck queue overflows


def test_compare_table_rows_for_the_components(datapath_result, fake):
    from tcplab.compare import compare_table

    plain = tcplab.run(copy.deepcopy(BASE_SCENARIO), overrides=["duration=2s"], core=fake)
    table = compare_table({"with": datapath_result, "without": plain})
    # the client's cumulative ring drops at the last sample; the server's 65 % steal
    assert table.loc["NIC ring drops", "with"] == 42 and table.loc["NIC ring drops", "without"] == 0
    assert table.loc["CPU steal, host server (%)", "with"] == pytest.approx(65.0)
    assert table.loc["CPU steal, host server (%)", "without"] == 0  # always on its CPU
    # one row per host: a variant that puts the server at 100 % while the client runs at 35 %
    # reads 0 on the server's row and 65 on the client's (not "65, most of any host")
    swapped = copy.copy(datapath_result)
    server_cpu = next(h["cpu"] for h in datapath_result.hosts if h["name"] == "server")
    swapped.hosts = [
        {**h, "cpu": {**server_cpu, "steal_ratio": 0.0 if h["name"] == "server" else 0.65}}
        for h in datapath_result.hosts
    ]
    table = compare_table({"35": datapath_result, "100": swapped})
    assert table.loc["CPU steal, host server (%)", "35"] == pytest.approx(65.0)
    assert table.loc["CPU steal, host server (%)", "100"] == 0
    assert table.loc["CPU steal, host client (%)", "100"] == pytest.approx(65.0)
    assert table.loc["CPU steal, host client (%)", "35"] == 0
    assert "NIC ring drops" not in compare_table({"a": plain, "b": plain}).index


class _ContractCore(fake_core.FakeCore):
    """The engine double, reporting a NIC on the client as the binding contract shapes it."""

    def run(self, config_json, progress=None):  # noqa: ANN001, ANN201
        config = json.loads(config_json)
        for node in config["nodes"]:
            if node["name"] == "client":
                node["nic"] = {"driver": "ena", "rx_ring": 256, "rx_queues": 1}
        return _with_contract(config, super().run(json.dumps(config), progress))


def test_tcplab_run_prints_the_datapath_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, write_yaml):
    from typer.testing import CliRunner

    import tcplab.engine
    from tcplab.cli import app

    monkeypatch.setattr(tcplab.engine, "import_core", lambda: _ContractCore())
    scenario = write_yaml(copy.deepcopy(BASE_SCENARIO))
    out = tmp_path / "run"
    r = CliRunner().invoke(app, ["run", str(scenario), "-o", str(out), "--set", "duration=2s"])
    assert r.exit_code == 0, r.output
    assert "nic client eth0 (ena, rx ring 256): rx_drops 42, bw_in_allowance_exceeded 7" in r.stdout
    assert r.stdout.index("nic client eth0") < r.stdout.index(f"wrote {out}")
    assert (out / "ethtool-S-client.txt").is_file() and (out / "plots" / "nic-rings.png").is_file()


# ---------------------------------------------------------------- Cilium EDT drops (issue 8 review)


def test_cilium_edt_drops_are_shown_apart_from_tc(tmp_path: Path):
    # bpf/lib/edt.h drops a packet 2 s or more ahead before the qdisc: the engine reports it
    # per aggregate (links[i]["edt"]); summary.json, the CLI lines and the report show it
    # under the pod's name, not in tc's dropped.
    from tcplab.commands.summary import _datapath_lines

    sc = tcplab.load_scenario("builtin:bandwidth-manager-pod-limit", ["pods.web.egress_bandwidth=500k"])
    config = sc.to_core()
    raw = fake_core.run(json.dumps(config))
    uplink = next(i for i, link in enumerate(config["links"]) if link.get("edt"))
    raw["links"][uplink]["edt"] = [{"rate_bps": 500_000, "drops": 88, "stamped": 900, "passed": 12}]
    result = _result(config, sc, raw)
    link = result.summary["links"][uplink]
    # (an engine without the ECN what-if reports no ce_marks: read as 0)
    assert link["edt"] == [
        {"pods": ["web"], "rate_bps": 500_000, "drops": 88, "stamped": 900, "passed": 12, "ce_marks": 0}
    ]
    assert all(other["edt"] == [] for i, other in enumerate(result.summary["links"]) if i != uplink)
    assert "edt on worker eth0 (pod web, 500 kbit/s): dropped 88" in _datapath_lines(result.summary)
    out = result.write(tmp_path / "run")
    html = (out / "report.html").read_text()
    assert "edt (Cilium, pod web, 0.500 Mbit/s)" in html and "stamped 900 passed 12" in html
    json.loads((out / "summary.json").read_text())

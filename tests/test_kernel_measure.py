"""Kernel-mode measurements from recorded texts (no root needed).

The fixture tests/data/kernel/pair/ is a real 2 s run (Linux 6.18, tests/kernel_pair.py):
hosts a and b on one veth, a 50 Mbit/s tbf on a's egress, 1 % random loss of a's data
segments (nft in b's input hook, comments "link=0 seen"/"link=0 loss"), flows: 0 bulk
cubic a->b, 1 maerts bbr (b sends to a, unshaped), 2 rr bbr (100 B requests, 16 KiB
responses).
"""

from __future__ import annotations

import json
import struct
import time
from pathlib import Path

import numpy as np
import pytest

from tcplab.columns import QUEUE_DTYPES, TIMESERIES_DTYPES
from tcplab.diagnose.ss import parse_lines
from tcplab.engine import parse_output
from tcplab.kernel import measure
from tcplab.kernel.agent import agent_app, agent_specs, percentile
from tcplab.kernel.measure import INFINITE_SSTHRESH, Measurements, build_raw, ss_samples, validity
from tcplab.kernel.qdisc_netlink import TC_H_ROOT, QdiscCounters
from tcplab.kernel.sampler import QueueSampler, QueueTarget, lateness_summary, queue_rows, queue_targets
from tcplab.kernel.tcpinfo import TCP_INFO_SIZE, parse_tcp_info
from tcplab.loader import load_scenario

DATA = Path(__file__).parent / "data" / "kernel" / "pair"


def load_fixture() -> tuple[dict, Measurements]:
    config = load_scenario(str(DATA / "scenario.yaml")).to_core()
    meta = json.loads((DATA / "meta.json").read_text())
    queue = json.loads((DATA / "queue.json").read_text())
    m = Measurements(
        duration_ns=meta["duration_ns"],
        sample_interval_ns=meta["sample_interval_ns"],
        release=meta["release"],
        agent_exit=meta["agent_exit"],
        queue={k: np.asarray(v, dtype=QUEUE_DTYPES[k]) for k, v in queue["columns"].items()},
        queue_lateness=queue["lateness"],
    )
    for node in ("a", "b"):
        m.agents[node] = json.loads((DATA / f"agent-{node}.json").read_text())
        m.ss_samples[node] = (DATA / f"ss-samples-{node}.txt").read_text()
        m.tc_text[node] = (DATA / f"tc-{node}.txt").read_text()
        m.tc_json[node] = (DATA / f"tc-{node}.json").read_text()
        m.ip_link_json[node] = (DATA / f"ip-link-{node}.json").read_text()
        m.nstat_before[node] = (DATA / f"nstat-before-{node}.txt").read_text()
        m.nstat_after[node] = (DATA / f"nstat-after-{node}.txt").read_text()
    m.nft_json["tlh3-b"] = (DATA / "nft-tlh3-b.json").read_text()
    return config, m


@pytest.fixture
def fixture() -> tuple[dict, Measurements]:
    return load_fixture()


def endpoint(m: Measurements, node: str, flow: int, role: str) -> dict:
    return next(e for e in m.agents[node]["endpoints"] if e["flow"] == flow and e["role"] == role)


# -- struct tcp_info ------------------------------------------------------------------------


def test_tcp_info_layout_is_v612s():
    # include/uapi/linux/tcp.h of v6.12: 8 bytes of u8s, 24 u32 (tcpi_rto .. tcpi_total_retrans),
    # 4 u64 from tcpi_pacing_rate at 104, ..., tcpi_total_rto (u16) at 240, 248 bytes in all.
    assert TCP_INFO_SIZE == 248
    buf = bytearray(TCP_INFO_SIZE)
    buf[6] = (7 << 4) | 9  # snd_wscale 9 (low nibble), rcv_wscale 7
    buf[7] = 0b101  # delivery_rate_app_limited 1, fastopen_client_fail 2
    struct.pack_into("=I", buf, 8 + 4 * 18, 12345)  # tcpi_snd_cwnd: the 19th u32
    struct.pack_into("=I", buf, 8 + 4 * 23, 77)  # tcpi_total_retrans: the 24th
    struct.pack_into("=Q", buf, 128, 10**12)  # tcpi_bytes_received
    struct.pack_into("=Q", buf, 160, 625_000)  # tcpi_delivery_rate
    struct.pack_into("=Q", buf, 200, 3 * 10**9)  # tcpi_bytes_sent
    struct.pack_into("=H", buf, 240, 4)  # tcpi_total_rto
    struct.pack_into("=I", buf, 244, 900)  # tcpi_total_rto_time
    info = parse_tcp_info(bytes(buf))
    assert (info["snd_wscale"], info["rcv_wscale"]) == (9, 7)
    assert (info["delivery_rate_app_limited"], info["fastopen_client_fail"]) == (1, 2)
    assert info["snd_cwnd"] == 12345 and info["total_retrans"] == 77
    assert info["bytes_received"] == 10**12 and info["delivery_rate"] == 625_000
    assert info["bytes_sent"] == 3 * 10**9
    assert (info["total_rto"], info["total_rto_time"]) == (4, 900)


def test_tcp_info_shorter_kernel_struct_gives_its_prefix():
    # before v3.15 tcp_info ended at tcpi_total_retrans (104 bytes): no pacing_rate then
    info = parse_tcp_info(bytes(104))
    assert "total_retrans" in info and "pacing_rate" not in info


def test_recorded_tcp_info_agrees_with_ss_at_the_end(fixture):
    config, m = fixture
    sender = endpoint(m, "a", 0, "client")["tcp_info"]
    receiver = endpoint(m, "b", 0, "server")["tcp_info"]
    # the same connection seen from both ends: what a sent and b got (tcpi_bytes_acked counts
    # the SYN too: net/ipv4/tcp_input.c: tcp_snd_una_update() from the ISN)
    assert sender["bytes_acked"] - 1 <= receiver["bytes_received"] <= sender["bytes_sent"]
    assert sender["snd_mss"] == 1448 and sender["data_segs_out"] >= sender["total_retrans"] > 0


# -- ss samples -------------------------------------------------------------------------------


def test_ss_samples_one_per_recorded_sample(fixture):
    _, m = fixture
    for node in ("a", "b"):
        samples = ss_samples(m.ss_samples[node])
        assert len(samples) == m.agents[node]["ss"]["samples"]
        times = [t for t, _ in samples]
        assert times == sorted(times)


def test_ss_sample_cut_short_is_left_out():
    text = (
        "# t_ns=0\nESTAB 0 0 10.0.0.1:32768 10.0.0.2:5201\n\t cubic rtt:1/0.5 cwnd:10\n"
        "# t_ns=100000000\nESTAB 0 0 10.0.0.1:32768"  # the agent was killed while writing
    )
    samples = ss_samples(text)
    assert [t for t, _ in samples] == [0]


# -- build_raw ----------------------------------------------------------------------------------


def test_build_raw_passes_the_engine_contract(fixture):
    config, m = fixture
    out = parse_output(build_raw(config, m))
    assert list(out.timeseries.columns)[: len(TIMESERIES_DTYPES)] == list(TIMESERIES_DTYPES)
    assert out.version.startswith("linux ")
    assert len(out.flows) == len(config["flows"]) and len(out.links) == len(config["links"])


def test_flow_totals_are_the_sender_and_receiver_tcp_info(fixture):
    config, m = fixture
    flows = build_raw(config, m)["flows"]
    # flow 1 is maerts: the server (on b) sends, the client (on a) receives
    for i, (snd_node, snd_role, rcv_node, rcv_role) in enumerate(
        [("a", "client", "b", "server"), ("b", "server", "a", "client"), ("a", "client", "b", "server")]
    ):
        si = endpoint(m, snd_node, i, snd_role)["tcp_info"]
        ri = endpoint(m, rcv_node, i, rcv_role)["tcp_info"]
        f = flows[i]
        assert f["bytes_sent"] == si["bytes_sent"] and f["retrans_segs"] == si["total_retrans"]
        assert f["data_segs_out"] == si["data_segs_out"] and f["bytes_received"] == ri["bytes_received"]
        assert f["chrono"]["busy_us"] == si["busy_time"] and f["timeouts"] == si["total_rto"]
        assert f["end_ns"] == m.duration_ns  # no byte count: the flow lasts the run
    assert flows[1]["cc"] == "bbr" and flows[0]["cc"] == "cubic"


def test_goodput_within_the_shaper(fixture):
    config, m = fixture
    out = parse_output(build_raw(config, m))
    f = out.flows[0]
    goodput = f["bytes_received"] * 8 / ((f["end_ns"] - f["start_ns"]) / 1e9)
    payload_bps = 50e6 * 1448 / 1514  # tbf counts 1514 B per full frame on a veth
    # tbf's 30 kB bucket lets at most one bucket more through than the rate
    assert 0 < goodput <= payload_bps + 30000 * 8 / 2


def test_rtt_summary_is_over_the_senders_srtt_samples(fixture):
    config, m = fixture
    raw = build_raw(config, m)
    ts = raw["timeseries"]
    mask = ts["flow"] == 0
    srtt = np.sort(ts["srtt_us"][mask])
    rtt = raw["flows"][0]["rtt_us"]
    assert rtt["count"] == mask.sum() and rtt["min"] == srtt[0] and rtt["max"] == srtt[-1]
    assert rtt["p50"] == srtt[int(np.ceil(0.5 * len(srtt))) - 1]


def test_timeseries_from_the_senders_ss(fixture):
    config, m = fixture
    ts = build_raw(config, m)["timeseries"]
    samples = dict(ss_samples(m.ss_samples["b"]))
    # flow 1 (maerts) is sampled from b's socket 10.0.0.2:5201 -> 10.0.0.1:32769
    rows = np.flatnonzero(ts["flow"] == 1)
    assert len(rows) > 0
    k = rows[len(rows) // 2]
    sock = next(s for s in samples[int(ts["t_ns"][k])] if (s.local, s.peer) == ("10.0.0.2:5201", "10.0.0.1:32769"))
    v = sock.values
    assert ts["cwnd"][k] == v["cwnd"] and ts["srtt_us"][k] == round(v["rtt"] * 1000)
    assert ts["bbr_bw_bps"][k] == sock.bbr.get("bw_bps", 0) and ts["pacing_gain"][k] == sock.bbr["pacing_gain"]
    # tcp_packets_in_flight(): packets_out - (sacked_out + lost_out) + retrans_out
    assert ts["inflight"][k] == max(
        0, v.get("unacked", 0) - v.get("sacked", 0) - v.get("lost", 0) + v.get("retrans_cur", 0)
    )
    # bytes received grow (the receiver's ss), bytes acked too
    for flow in (0, 1):
        rows = ts["flow"] == flow
        assert np.all(np.diff(ts["bytes_received"][rows].astype(np.int64)) >= 0)
        assert np.all(np.diff(ts["bytes_acked"][rows].astype(np.int64)) >= 0)


def test_ssthresh_absent_is_infinite():
    text = "# t_ns=0\nESTAB 0 0 10.0.0.1:32768 10.0.0.2:5201\n\t cubic rtt:1.5/0.75 cwnd:10 unacked:3\n"
    config = load_scenario(str(DATA / "scenario.yaml")).to_core()
    m = Measurements(duration_ns=2_000_000_000, sample_interval_ns=100_000_000, ss_samples={"a": text})
    raw = build_raw(config, m)
    ts = raw["timeseries"]
    assert list(ts["ssthresh"]) == [INFINITE_SSTHRESH] and list(ts["srtt_us"]) == [1500]
    assert list(ts["rttvar_us"]) == [750] and list(ts["inflight"]) == [3]
    # no receiver sample: a gap (the contract's integer column holds a placeholder)
    assert list(raw[measure.TIMESERIES_GAPS]["bytes_received"]) == [True]


def test_links_from_tc_nft_and_the_device(fixture):
    config, m = fixture
    links = build_raw(config, m)["links"]
    tc_a = json.loads(m.tc_json["a"])
    tbf = next(q for q in tc_a if q["dev"] == "eth0")
    assert links[0]["qdisc"] == "tbf" and links[0]["sent_packets"] == tbf["packets"]
    assert links[0]["overlimits"] == tbf["overlimits"]
    # the nft loss rule's counter of link 0
    nft = measure.nft_counters(m.nft_json["tlh3-b"])
    assert links[0]["loss_drops"] == nft[0]["loss"] > 0 and nft[0]["seen"] > nft[0]["loss"]
    # b's veth has no qdisc (noqueue): what it sent comes from the device's counters
    dev = next(x for x in json.loads(m.ip_link_json["b"]) if x["ifname"] == "eth0")
    assert links[1]["qdisc"] == "noqueue" and links[1]["sent_packets"] == dev["stats64"]["tx"]["packets"] > 0
    assert links[0]["max_backlog_packets"] == int(m.queue["backlog_packets"][m.queue["link"] == 0].max())


def test_tbf_child_queue_carries_the_roots_peak(fixture):
    """A tbf with a child qdisc (a router's shaper with a pfifo under it): the child's row has
    every field the engine's child rows have, and its peak is the root's sampled peak, since
    tbf_enqueue() (sch_tbf.c) counts in its own backlog what it hands the child."""
    config, m = fixture
    tc = json.loads(m.tc_json["a"])
    tbf = next(q for q in tc if q["dev"] == "eth0")
    kid = {**tbf, "kind": "pfifo", "handle": "10:", "parent": "1:1", "root": False, "options": {"limit": 1000}}
    kid.update(bytes=tbf["bytes"], packets=tbf["packets"], overlimits=0)
    m.tc_json["a"] = json.dumps([*tc, kid])
    out = parse_output(build_raw(config, m))  # the engine's contract: would name a missing field
    child = out.links[0]["child"]
    assert child["qdisc"] == "pfifo" and child["sent_packets"] == tbf["packets"]
    assert child["max_backlog_packets"] == out.links[0]["max_backlog_packets"]


def test_counters_are_nstat_after_minus_before(fixture):
    config, m = fixture
    hosts = {h["name"]: h["counters"] for h in build_raw(config, m)["hosts"]}
    before = measure.parse_nstat(m.nstat_before["a"])["kernel"]
    after = measure.parse_nstat(m.nstat_after["a"])["kernel"]
    assert hosts["a"]["TcpOutSegs"] == after["TcpOutSegs"] - before["TcpOutSegs"] > 0
    assert hosts["a"]["TcpRetransSegs"] >= build_raw(config, m)["flows"][0]["retrans_segs"]
    # nstat leaves the gauge out; the agents read it at the end: the three flows' sockets
    assert "TcpCurrEstab" not in after
    assert hosts["a"]["TcpCurrEstab"] == hosts["b"]["TcpCurrEstab"] == len(config["flows"])


def test_nstat_delta_gauges_and_missing_before():
    before = "#kernel\nTcpOutSegs 10 0.0\nTcpCurrEstab 1 0.0\n"
    after = "#kernel\nTcpOutSegs 25 0.0\nTcpCurrEstab 3 0.0\nTcpExtTCPTimeouts 2 0.0\n"
    assert measure.nstat_delta(before, after) == {"TcpOutSegs": 15, "TcpCurrEstab": 3, "TcpExtTCPTimeouts": 2}
    assert measure.nstat_delta(None, after)["TcpOutSegs"] == 25


def test_rr_app_as_the_simulators(fixture):
    config, m = fixture
    apps = build_raw(config, m)["apps"]
    assert [a["name"] for a in apps] == ["rr"]
    rr = endpoint(m, "a", 2, "client")["rr"]
    lat = sorted(rr["latency_ns"])
    s = apps[0]["summary"]
    assert s["transactions"] == len(lat) > 0 and s["connections"] == 1
    assert s["latency_ms"]["p50"] == lat[int(np.ceil(0.5 * len(lat))) - 1] / 1e6
    assert s["latency_ms"]["max"] == lat[-1] / 1e6
    # transactions per second over the time the connection was open
    open_ns = endpoint(m, "a", 2, "client")["established_ns"]
    assert s["transactions_per_sec"] == pytest.approx(len(lat) / ((m.duration_ns - open_ns) / 1e9))
    table = apps[0]["tables"]["requests"]
    assert len(table["latency_ns"]) == len(lat) and set(table["flow"].tolist()) == {2}


def test_percentile_is_nearest_rank():
    v = list(range(1, 101))
    assert (percentile(v, 0.5), percentile(v, 0.99), percentile(v, 0.999), percentile(v, 0.0)) == (50, 99, 100, 1)
    assert percentile([], 0.5) is None


# -- validity ------------------------------------------------------------------------------------


def test_fixture_is_valid(fixture):
    _, m = fixture
    assert validity(m, ["a", "b"]) == []


def test_late_delay_line_invalidates(fixture):
    _, m = fixture
    tun = {"name": "tab", "lateness_ns": {"p50": 10_000, "p99": 1_500_000, "max": 2_000_000, "count": 100}}
    m.delaylines["tlh3:w0"] = {"version": 1, "tuns": [tun]}
    assert any("delay line tlh3:w0/tab was late" in r for r in validity(m))
    tun["lateness_ns"] = {"p50": 10_000, "p99": 500_000, "max": 25_000_000, "count": 100}
    assert any("max 25.00 ms" in r for r in validity(m))
    tun["lateness_ns"] = {"p50": 10_000, "p99": 900_000, "max": 19_000_000, "count": 100}
    assert validity(m) == []
    m.delaylines["tlh3:w1"] = {"error": "the delay line wrote no stats"}
    assert validity(m) == ["delay line tlh3:w1 reported no stats (the delay line wrote no stats)"]


def test_failed_or_late_agent_invalidates(fixture):
    _, m = fixture
    assert validity(m, ["a", "b", "c"]) == ["agent c failed: it wrote no result"]
    m.agent_exit["a"] = 1
    assert "agent a failed: exit status 1" in validity(m)
    m.agent_exit["a"] = 0
    ss = m.agents["b"]["ss"]
    ss["late_over_half_interval"] = ss["samples"] // 10  # 10 % > 2 %
    assert any(r.startswith("ss sampler of b was late") for r in validity(m))


def test_sampler_lateness_summary():
    s = lateness_summary([0, 10, 60, 20], missed=1, interval_ns=100)
    assert s["late_over_half_interval"] == 2 and s["late_over_half_interval_frac"] == pytest.approx(2 / 5)
    assert s["late_ns"]["max"] == 60


# -- the queue sampler ---------------------------------------------------------------------------


def _counters(qlen: int, backlog: int, drops: int) -> QdiscCounters:
    return QdiscCounters(
        ifindex=2, handle=0x10000, parent=TC_H_ROOT, kind="tbf", qlen=qlen, backlog_bytes=backlog, drops=drops
    )


def test_queue_rows_take_each_targets_root_qdisc():
    roots = {"eth0": _counters(3, 4542, 17), "eth1": _counters(0, 0, 0)}
    rows = queue_rows(roots, [QueueTarget(0, "tlh3-a", "eth0"), QueueTarget(5, "tlh3-a", "eth9")], 7)
    assert rows == [(7, 0, 3, 4542, 17)]  # eth9 does not exist


def test_queue_sampler_opens_one_reader_per_namespace_before_sampling():
    opened, dumps, closed = [], [], []

    class Reader:
        def __init__(self, ns):
            opened.append(ns)
            self.ns = ns

        def root_qdiscs(self):
            dumps.append(self.ns)
            return {"eth0": _counters(1 if self.ns == "tlh3-a" else 2, 1514, 0)}

        def close(self):
            closed.append(self.ns)

    targets = queue_targets({"tlh3-a": [("eth0", 0)], "tlh3-b": [("eth0", 1)]})
    s = QueueSampler(targets, t0_ns=time.monotonic_ns() + 10**12, interval_ns=10, duration_ns=100, reader=Reader)
    s.start()  # the first sample is due in 1000 s: the readers are open, nothing dumped yet
    assert opened == ["tlh3-a", "tlh3-b"] and dumps == []
    s.sample_once(5)
    s.sample_once(15)
    cols = s.stop()
    assert dumps == ["tlh3-a", "tlh3-b"] * 2 and sorted(closed) == ["tlh3-a", "tlh3-b"]
    assert cols["t_ns"].tolist() == [5, 5, 15, 15] and cols["link"].tolist() == [0, 1, 0, 1]
    assert cols["backlog_packets"].tolist() == [1, 2, 1, 2]
    assert {k: v.dtype.name for k, v in cols.items()} == QUEUE_DTYPES


def test_queue_sampler_names_a_namespace_it_cannot_open():
    def reader(ns):
        raise FileNotFoundError(2, "No such file or directory", f"/run/netns/{ns}")

    s = QueueSampler(queue_targets({"tlh3-x": [("eth0", 0)]}), 0, 10, 100, reader=reader)
    s.start()
    s.stop()
    assert len(s.errors) == 1 and "tlh3-x" in s.errors[0] and "No such file" in s.errors[0]


# -- the agent's SPEC ---------------------------------------------------------------------------


def test_agent_apps():
    assert agent_app({"kind": "bulk"}) == {"kind": "bulk"}
    assert agent_app({"kind": "bulk_bytes", "bytes": 5000}) == {"kind": "bulk", "bytes": 5000}
    assert agent_app({"kind": "rr", "request_bytes": 100, "response_bytes": 16384, "think_ns": 0}) == {
        "kind": "rr",
        "request_bytes": 100,
        "response_bytes": 16384,
        "think_ns": 0,
    }
    with pytest.raises(ValueError, match="not hls"):
        agent_app({"kind": "hls"})


def test_agent_specs_put_servers_and_clients_on_their_nodes(tmp_path):
    import kernel_pair

    config = load_scenario(str(DATA / "scenario.yaml")).to_core()
    plan = kernel_pair.PairPlan(config, "tlh3")
    specs = agent_specs(plan, tmp_path, t0_ns=123)
    a, b = specs["a"], specs["b"]
    assert [e["flow"] for e in a["connect"]] == [0, 1, 2] and b["connect"] == [] and a["listen"] == []
    assert [(e["port"], e["peer_port"]) for e in b["listen"]] == [(5201, 32768), (5201, 32769), (8080, 32770)]
    assert [e["data_side"] for e in a["connect"]] == ["client", "server", "client"]
    assert a["addr"] == "10.0.0.1" and b["addr"] == "10.0.0.2" and a["t0_monotonic_ns"] == 123
    assert [e["cc"] for e in b["listen"]] == ["cubic", "bbr", "bbr"]
    assert a["connect"][0]["stop_ns"] is None  # runs to the end


def test_ss_parser_reads_the_agents_lines():
    # one line of the fixture's own ss (iproute2 6.1): SYN-SENT and bbr groups parse
    line = (
        "SYN-SENT 0      1      10.0.0.1:32770 10.0.0.2:8080\n"
        "\t bbr rto:1000 mss:524 pmtu:1500 rcvmss:88 advmss:1460 cwnd:10 segs_out:1 bbr:(bw:0bps,mrtt:0) "
        "app_limited unacked:1 rcv_ssthresh:64240\n"
    )
    socks = parse_lines(enumerate(line.splitlines(), 1), "x")
    assert socks[0].state == "SYN-SENT" and socks[0].cc == "bbr"


# -- flows with a byte count ---------------------------------------------------------------------


def test_plan_takes_bulk_with_bytes_and_the_agent_writes_them(tmp_path):
    from test_kernel_plan import plan_of

    _, plan = plan_of("builtin:cubic-vs-bbr-lossy", ["flows.0.app.bulk.bytes=2MB"])
    specs = agent_specs(plan, tmp_path, t0_ns=0)
    (entry,) = specs["server"]["connect"]
    assert entry["app"] == {"kind": "bulk", "bytes": 2_000_000} and entry["data_side"] == "client"


def test_bytes_flow_ends_when_the_sender_saw_it_acked():
    config = load_scenario(
        {
            "name": "b",
            "duration": "2s",
            "hosts": {"a": {}, "b": {}},
            "links": [{"between": ["a", "b"], "rate": "50Mbit", "delay": "50us"}],
            "flows": [{"from": "a", "to": "b", "app": {"bulk": {"bytes": 100000}}}],
        }
    ).to_core()
    info = {"bytes_sent": 100000, "bytes_acked": 100001, "bytes_received": 100000}
    m = Measurements(duration_ns=2_000_000_000, sample_interval_ns=100_000_000)
    m.agents["a"] = {"endpoints": [{"flow": 0, "role": "client", "done_ns": 3_000_000, "acked_ns": 9_000_000,
                                    "tcp_info": info}]}  # fmt: skip
    m.agents["b"] = {"endpoints": [{"flow": 0, "role": "server", "done_ns": 8_000_000, "tcp_info": info}]}
    (flow,) = build_raw(config, m)["flows"]
    assert (flow["start_ns"], flow["end_ns"]) == (0, 9_000_000)  # as the simulator's done_ns
    del m.agents["a"]["endpoints"][0]["acked_ns"]  # not seen: the receiver's EOF
    assert build_raw(config, m)["flows"][0]["end_ns"] == 8_000_000


# -- CA state and BBR's mode ---------------------------------------------------------------------


def test_ca_state_is_the_senders_tcp_info_at_each_sample(fixture):
    config, m = fixture
    ts = build_raw(config, m)["timeseries"]
    assert measure.unknown_columns(m) == ["bbr_lt_use_bw", "bbr_lt_bw_bps", "lost"]
    # flow 1 (maerts): the sender is b's server socket
    ep = endpoint(m, "b", 1, "server")
    recorded = {
        round(t / m.sample_interval_ns): v for t, v in zip(ep["ca_state"]["t_ns"], ep["ca_state"]["state"], strict=True)
    }
    rows = np.flatnonzero(ts["flow"] == 1)
    assert len(rows) > 0
    for k in rows:
        assert ts["ca_state"][k] == recorded[round(int(ts["t_ns"][k]) / m.sample_interval_ns)]


def test_ca_state_follows_the_samples_slot():
    config = load_scenario(str(DATA / "scenario.yaml")).to_core()
    line = "ESTAB 0 0 10.0.0.1:32768 10.0.0.2:5201\n\t cubic rtt:1/0.5 cwnd:10\n"
    text = "".join(f"# t_ns={t}\n{line}" for t in (2_000_000, 101_000_000, 203_000_000))
    m = Measurements(duration_ns=2_000_000_000, sample_interval_ns=100_000_000, ss_samples={"a": text})
    states = {"t_ns": [1_900_000, 100_900_000, 202_900_000], "state": [0, 3, 4]}  # Open, Recovery, Loss
    m.agents["a"] = {"endpoints": [{"flow": 0, "role": "client", "local": "10.0.0.1:32768", "peer": "10.0.0.2:5201",
                                    "ca_state": states}]}  # fmt: skip
    ts = build_raw(config, m)["timeseries"]
    assert ts["ca_state"].tolist() == [0, 3, 4]


def test_without_ca_samples_the_ca_state_is_unknown(fixture):
    _, m = fixture
    for doc in m.agents.values():
        for ep in doc["endpoints"]:
            del ep["ca_state"]
    assert measure.unknown_columns(m)[0] == "ca_state"


def test_bbr_mode_from_the_gains_bbr_update_gains_sets():
    # Linux v6.12 tcp_bbr.c: high_gain 2885/1000 + 1/256 (739/256), drain 1000/2885 (88/256),
    # as ss prints them with %g
    high, drain = float("%g" % (739 / 256)), float("%g" % (88 / 256))
    assert (high, drain) == (2.88672, 0.34375)
    bw = 1e6
    assert measure.bbr_mode(high, high, bw) == 1  # STARTUP
    assert measure.bbr_mode(drain, high, bw) == 2  # DRAIN
    for gain in (1.25, 0.75, 1.0):  # PROBE_BW's cycle (and 1 with the long-term bw)
        assert measure.bbr_mode(gain, 2.0, bw) == 3
    assert measure.bbr_mode(1.0, 1.0, bw) == 4  # PROBE_RTT
    assert measure.bbr_mode(1.0, 1.0, 0) == 1  # before the first ACK: bbr_init's STARTUP
    assert measure.bbr_mode(1.5, 1.5, bw) == 0  # no mode sets these


def test_bbr_flows_have_a_mode_in_every_sample(fixture):
    config, m = fixture
    raw = build_raw(config, m)
    ts = raw["timeseries"]
    for flow in (1, 2):  # bbr
        modes = ts["cc_mode"][ts["flow"] == flow]
        assert len(modes) > 0 and set(modes.tolist()) <= {1, 2, 3, 4}
    assert set(ts["cc_mode"][ts["flow"] == 0].tolist()) == {0}  # cubic: no mode

"""ECN end to end in the Python front (issue 28): the scenario syntax, what the engine is
given, the tools' texts (tc, ss, pcap), the engine bridge's contract, and kernel mode.

Expected values come from Linux v6.12 and iproute2, never from a previous run:

* net.ipv4.tcp_ecn (0, 1, 2; default 2) is each end's own: the client's decides whether its
  SYN asks for ECN (tcp_output.c tcp_ecn_send_syn(): ``tcp_ecn == 1`` or a cc that needs
  ECN), the server's whether it accepts (tcp_input.c tcp_ecn_create_request(): ``tcp_ecn``
  not 0, or its listener's cc needs ECN); tcp_ecn_fallback is the client's (tcp_ecn_clear_syn()).
* fq_codel marks by default (fq_codel_init(): ``cparams.ecn = true``); fq marks only above
  ``ce_threshold``; fifo and tbf only drop.
* tc prints fq's ``ce_threshold`` after ``refill_delay`` and fq_codel's after ``target``
  (tc/q_fq.c fq_print_opt(), tc/q_fq_codel.c fq_codel_print_opt()); fq_codel dumps its times
  through CoDel's 1024-ns ticks (codel_time_to_us()), fq in whole microseconds.
* ss prints ``ecn``/``ecnseen`` from tcpi_options only with ``-o``/``-e``, after ``ts sack``;
  ``dctcp:(ce_state:%u,alpha:%u,ab_ecn:%u,ab_tot:%u)`` or ``dctcp:fallback_mode`` after
  ``data_segs_out``; ``delivered_ce:%u`` after ``delivered`` (misc/ss.c tcp_stats_print()).
* The pcap's IPv4 TOS holds the ECN field in its low two bits (RFC 3168 section 5), TCP's
  ECE is 0x40 and CWR 0x80 in the flags byte (RFC 3168 section 6.1).

Tests marked ``engine`` run the compiled engine (they need the engine with issue 28's ECN).
"""

from __future__ import annotations

import copy
import importlib
import io
import json
import math
import struct
from typing import Any

import numpy as np
import pandas as pd
import pytest

import fake_core
import tcplab
from conftest import in_ci
from tcplab.engine import ECN_FLAGS, Capture, check_output, parse_output
from tcplab.errors import EngineError, ScenarioError
from tcplab.exports.pcap import pcap_bytes
from tcplab.kernel.env import KernelEnv
from tcplab.kernel.errors import KernelUnsupported
from tcplab.kernel.options import KernelOptions
from tcplab.kernel.plan import make_plan
from tcplab.results import Result
from tcplab.results.result import ECN_COLUMNS
from tcplab.results.ss import SsSocket, format_ss, sockets_at, ss_texts
from tcplab.results.tc import codel_dump_us, format_node, format_qdisc
from test_kernel_plan import env as kernel_plan_env

TCP_ECN_OK, TCP_ECN_SEEN = ECN_FLAGS["TCP_ECN_OK"], ECN_FLAGS["TCP_ECN_SEEN"]


def scenario(**over: Any) -> dict[str, Any]:
    """Two hosts and a router: a 100 Mbit/s access link and a 10 Mbit/s bottleneck."""
    data: dict[str, Any] = {
        "name": "ecn",
        "duration": "1s",
        "hosts": {"client": {}, "server": {}},
        "routers": ["r"],
        "links": [
            {"between": ["client", "r"], "rate": "100Mbit", "delay": "1ms"},
            {"between": ["r", "server"], "rate": "10Mbit", "delay": "4ms"},
        ],
        "flows": [{"from": "client", "to": "server"}],
    }
    data.update(over)
    return data


def core(data: dict[str, Any], sets: tuple[str, ...] = ()) -> dict[str, Any]:
    return tcplab.load_scenario(data, list(sets)).to_core()


def errors_of(data: dict[str, Any]) -> list[str]:
    """The lines ``tcplab check`` would print for a bad scenario (each one line)."""
    with pytest.raises(ScenarioError) as info:
        tcplab.load_scenario(data)
    lines = [str(e) for e in getattr(info.value, "errors", None) or [info.value]]
    assert all("\n" not in line for line in lines)
    return lines


def with_queue(queue: Any, **link: Any) -> dict[str, Any]:
    data = scenario()
    data["links"][1] = {**data["links"][1], "queue": queue, **link}
    return data


# ---------------------------------------------------------------- the scenario: hosts and flows


def test_tcp_ecn_defaults_are_linuxs():
    f = core(scenario())["flows"][0]
    # tcp_sk_init(): tcp_ecn 2 (accept when asked, never ask), tcp_ecn_fallback 1
    assert (f["tcp"]["tcp_ecn"], f["tcp"]["tcp_ecn_fallback"]) == ([2, 2], True)


def test_tcp_ecn_is_taken_from_the_client_and_the_server_by_role():
    data = scenario(
        hosts={
            "client": {"sysctl": {"net.ipv4.tcp_ecn": 1, "tcp_ecn_fallback": 0}},
            "server": {"sysctl": {"tcp_ecn": 0, "tcp_ecn_fallback": "on"}},
        },
        flows=[
            {"from": "client", "to": "server"},  # bulk: the client sends the data
            {"from": "client", "to": "server", "app": "maerts"},  # the server sends it
            {"from": "client", "to": "server", "app": {"bulk": {"bidir": True}}},
            {"from": "server", "to": "client"},  # the roles swapped
        ],
    )
    flows = {f["name"]: f for f in core(data)["flows"]}
    for name in ("client-server-0", "client-server-1", "client-server-2.fwd", "client-server-2.rev"):
        # [client, server] whichever side writes the data; the fallback is the client's
        assert (flows[name]["tcp"]["tcp_ecn"], flows[name]["tcp"]["tcp_ecn_fallback"]) == ([1, 0], False), name
    assert (flows["server-client-3"]["tcp"]["tcp_ecn"], flows["server-client-3"]["tcp"]["tcp_ecn_fallback"]) == (
        [0, 1],
        True,
    )


def test_a_broadcasts_senders_are_each_their_connections_client():
    data = scenario(
        hosts={"a1": {"sysctl": {"tcp_ecn": 1}}, "a2": {"sysctl": {"tcp_ecn": 0}}, "server": {}, "client": {}},
        links=[
            {"between": ["a1", "r"], "rate": "100Mbit"},
            {"between": ["a2", "r"], "rate": "100Mbit"},
            {"between": ["r", "server"], "rate": "100Mbit"},
            {"between": ["client", "r"], "rate": "100Mbit"},
        ],
        flows=[{"from": ["a1", "a2"], "to": "server", "app": {"broadcast": {"connections": 2}}}],
    )
    ecn = {f["name"]: f["tcp"]["tcp_ecn"] for f in core(data)["flows"]}
    assert {n: v for n, v in ecn.items() if ".0." in n} == {"a1-server-0.0.0": [1, 2], "a1-server-0.0.1": [1, 2]}
    assert {n: v for n, v in ecn.items() if ".1." in n} == {"a1-server-0.1.0": [0, 2], "a1-server-0.1.1": [0, 2]}


def test_a_pods_own_sysctl_sets_its_tcp_ecn():
    data = scenario(
        hosts={"node": {}, "server": {"sysctl": {"tcp_ecn": 1}}, "client": {}},
        pods={"web": {"node": "node", "sysctl": {"tcp_ecn": 1}}},
        links=[{"between": ["node", "r"], "rate": "1Gbit"}, {"between": ["r", "server"], "rate": "1Gbit"}],
        flows=[{"from": "web", "to": "server"}],
    )
    assert core(data)["flows"][0]["tcp"]["tcp_ecn"] == [1, 1]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (3, "hosts.client.sysctl.tcp_ecn: 3 is out of range; expected an integer from 0 to 2"),
        (-1, "hosts.client.sysctl.tcp_ecn: -1 is out of range; expected an integer from 0 to 2"),
        ("yes", 'hosts.client.sysctl.tcp_ecn: "yes" is not an integer; expected an integer from 0 to 2'),
    ],
)
def test_a_bad_tcp_ecn_is_one_line(value, message):
    (line,) = errors_of(scenario(hosts={"client": {"sysctl": {"tcp_ecn": value}}, "server": {}}))
    assert message in line


def test_tcp_ecn_in_a_flows_tcp_block_points_to_the_hosts():
    data = scenario(flows=[{"from": "client", "to": "server", "tcp": {"tcp_ecn": 1, "net.ipv4.tcp_ecn_fallback": 0}}])
    ecn, fallback = errors_of(data)
    assert 'flows.0.tcp.tcp_ecn: unknown key "tcp_ecn": a host sysctl' in ecn
    assert ecn.endswith("expected hosts.NAME.sysctl.tcp_ecn on the flow's client or server host")
    assert "flows.0.tcp.net.ipv4.tcp_ecn_fallback" in fallback
    assert fallback.endswith("expected hosts.NAME.sysctl.tcp_ecn_fallback on the flow's client host")


def test_dctcp_is_a_congestion_control_wherever_one_is_named():
    data = scenario(
        hosts={"client": {"sysctl": {"tcp_congestion_control": "DCTCP"}}, "server": {}},
        flows=[{"from": "client", "to": "server"}, {"from": "server", "to": "client", "cc": "dctcp"}],
    )
    f0, f1 = core(data)["flows"]
    # the sender's host default; the receiver's socket runs its own host's
    assert (f0["cc"], f0["receiver_cc"]) == ("dctcp", "cubic")
    assert f1["cc"] == "dctcp" and "receiver_cc" not in f1  # a flow's own cc: both sockets
    assert core(scenario(), ("flows.0.cc=dctcp",))["flows"][0]["cc"] == "dctcp"


def test_dctcp_with_tcp_ecn_zero_is_not_an_error():
    # Linux negotiates ECN for DCTCP whatever tcp_ecn says (TCP_CONG_NEEDS_ECN): the engine
    # follows it; the scenario only carries both
    data = scenario(
        hosts={"client": {"sysctl": {"tcp_ecn": 0}}, "server": {"sysctl": {"tcp_ecn": 0}}},
        flows=[{"from": "client", "to": "server", "cc": "dctcp"}],
    )
    f = core(data)["flows"][0]
    assert (f["cc"], f["tcp"]["tcp_ecn"]) == ("dctcp", [0, 0])


def test_an_unknown_cc_lists_dctcp():
    (line,) = errors_of(scenario(flows=[{"from": "client", "to": "server", "cc": "dctpc"}]))
    assert line.endswith("expected one of: reno, cubic, bbr, dctcp")


# ---------------------------------------------------------------- the scenario: queues and links


def test_fq_codel_marks_by_default_and_takes_ecn_or_noecn():
    queue = lambda q: core(with_queue(q))["links"][2]["queue"]  # noqa: E731 (r -> server)
    # left to the engine's default, which is Linux's: ecn on
    assert queue({"qdisc": "fq_codel"}) == {"kind": "fq_codel"}
    assert queue({"qdisc": "fq_codel", "ecn": True}) == {"kind": "fq_codel", "ecn": True}
    assert queue({"qdisc": "fq_codel", "ecn": "off"}) == {"kind": "fq_codel", "ecn": False}
    assert queue({"qdisc": "fq_codel", "noecn": True}) == {"kind": "fq_codel", "ecn": False}
    (line,) = errors_of(with_queue({"qdisc": "fq_codel", "ecn": True, "noecn": True}))
    assert "links.1.queue.noecn: ecn: true contradicts noecn: true" in line


def test_ce_threshold_on_fq_and_fq_codel_in_ns():
    for kind in ("fq", "fq_codel"):
        q = core(with_queue({"qdisc": kind, "ce_threshold": "1ms"}))["links"][2]["queue"]
        assert q == {"kind": kind, "ce_threshold_ns": 1_000_000}
    host = scenario(hosts={"client": {"qdisc": {"kind": "fq", "ce_threshold": "250us"}}, "server": {}})
    assert core(host)["links"][0]["queue"] == {"kind": "fq", "ce_threshold_ns": 250_000}


@pytest.mark.parametrize(
    ("kind", "value", "problem"),
    [
        ("fq", "0ms", '"0ms" is zero'),
        ("fq_codel", 0, "0 is zero"),
        ("fq", "-1ms", '"-1ms" is negative'),
        ("fq_codel", "soon", '"soon" is not a time'),
        ("fq", "1ms!", '"1ms!" is not a time (unknown unit "ms!")'),
        ("fq", "500ns", '"500ns" is less than 1000 ns (tc passes whole microseconds: it would be 0)'),
        ("fq_codel", "1us", '"1us" is less than 1024 ns (CoDel counts time in 1024-ns ticks)'),
        ("fq", "5000s", '"5000s" is out of range'),
    ],
)
def test_a_bad_ce_threshold_is_one_line(kind, value, problem):
    (line,) = errors_of(with_queue({"qdisc": kind, "ce_threshold": value}))
    assert f"links.1.queue.ce_threshold: {problem}; expected a positive time such as 1ms" in line


@pytest.mark.parametrize(
    ("queue", "why"),
    [
        ({"qdisc": "pfifo", "limit": 100}, "pfifo cannot mark packets (a FIFO only drops)"),
        ({"qdisc": "bfifo", "limit": "100KB"}, "bfifo cannot mark packets (a FIFO only drops)"),
        ({"qdisc": "pfifo_fast"}, "pfifo_fast cannot mark packets (a FIFO only drops)"),
        (
            {"qdisc": "tbf", "rate": "5Mbit", "burst": "32kb", "latency": "50ms"},
            "tbf cannot mark packets (sch_tbf.c only drops)",
        ),
        ({"qdisc": "fq"}, "fq has no ecn switch (it marks only above a ce_threshold)"),
    ],
)
def test_ecn_true_on_a_qdisc_that_cannot_mark_is_one_line(queue, why):
    (line,) = errors_of(with_queue({**queue, "ecn": True}))
    assert f"links.1.queue.ecn: true, but {why}; expected " in line
    # false is what such a qdisc does anyway: accepted, and nothing reaches the engine
    q = core(with_queue({**queue, "ecn": False}))["links"][2]["queue"]
    assert "ecn" not in q


def test_ecn_true_on_a_tbf_child_and_a_hosts_qdisc():
    tbf = {"qdisc": "tbf", "rate": "5Mbit", "burst": "32kb", "latency": "50ms", "child": {"qdisc": "pfifo", "ecn": 1}}
    (line,) = errors_of(with_queue(tbf))
    assert "links.1.queue.child.ecn: true, but pfifo cannot mark packets" in line
    (line,) = errors_of(scenario(hosts={"client": {"qdisc": {"kind": "fq", "ecn": "yes"}}, "server": {}}))
    assert "hosts.client.qdisc.ecn: true, but fq has no ecn switch" in line
    # a marking child of a shaper is fine
    tbf["child"] = {"qdisc": "fq_codel", "ce_threshold": "2ms"}
    assert core(with_queue(tbf))["links"][2]["queue"]["child"] == {"kind": "fq_codel", "ce_threshold_ns": 2_000_000}


def test_bleach_ecn_per_direction():
    data = scenario()
    data["links"][1]["bleach_ecn"] = True
    links = core(data)["links"]
    assert [link.get("bleach_ecn") for link in links] == [None, None, True, True]  # both ways
    data["links"][1]["reverse"] = {"bleach_ecn": False}
    assert [link.get("bleach_ecn") for link in core(data)["links"]] == [None, None, True, None]
    data["links"][1]["bleach_ecn"] = "sometimes"
    (line,) = errors_of(data)
    assert 'links.1.bleach_ecn: "sometimes" is not a boolean' in line


def test_check_shows_marking_queues_and_bleaching_links():
    from typer.testing import CliRunner

    from tcplab.cli import app

    r = CliRunner().invoke(
        app,
        [
            "check",
            "builtin:cubic-100mbit-20ms",
            "--set",
            "links.0.queue={qdisc: fq_codel, ce_threshold: 1ms}",
            "--set",
            "links.0.bleach_ecn=true",
            "--set",
            "flows.0.cc=dctcp",
        ],
    )
    assert r.exit_code == 0, r.output
    assert "fq_codel ce_threshold 1ms, clears the ECN field (bleach_ecn)" in r.stdout
    r = CliRunner().invoke(app, ["check", "builtin:cubic-100mbit-20ms", "--set", "links.0.queue={qdisc: tbf, ecn: 1}"])
    assert r.exit_code == 2
    assert r.stderr.startswith("error: --set: links.0.queue.ecn: true, but tbf cannot mark packets")
    assert r.stderr.count("\n") == 1


# ---------------------------------------------------------------- tc -s qdisc

STATS = {
    "sent_bytes": 1514000,
    "sent_packets": 1000,
    "drops": 3,
    "overlimits": 0,
    "requeues": 0,
    "backlog_bytes": 0,
    "backlog_packets": 0,
}


def test_codel_times_go_through_codels_ticks():
    # tc passes us; fq_codel_change() keeps (us * 1000) >> 10 ticks; fq_codel_dump() sends
    # (ticks << 10) / 1000 us
    for ms in (1, 5, 100):
        us = ms * 1000
        assert codel_dump_us(ms * 1_000_000) == (((us * 1000) >> 10) << 10) // 1000
    assert codel_dump_us(1_000_000) == 999  # 976 ticks of 1.024 us
    assert codel_dump_us(5_000_000) == 4999
    assert codel_dump_us(1_500) == 0  # 1 us: no whole tick


def test_fq_codel_prints_ecn_by_default_its_ce_threshold_and_marks():
    cfg = {"kind": "fq_codel", "ce_threshold_ns": 1_000_000}
    xstats = {"maxpacket": 1514, "drop_overlimit": 0, "new_flow_count": 3, "ecn_mark": 17, "ce_mark": 240}
    head, sent, backlog, x1, x2, end = format_qdisc(cfg, STATS, dev="eth1", xstats=xstats).split("\n")
    # fq_codel_print_opt(): limit, flows, quantum, target, ce_threshold, interval,
    # memory_limit, ecn, drop_batch; a ce_threshold of 1ms is dumped as 999 us
    assert head == (
        "qdisc fq_codel 1: dev eth1 root refcnt 2 limit 10240p flows 1024 quantum 1514 target 5ms "
        "ce_threshold 999us interval 100ms memory_limit 32Mb ecn drop_batch 64 "
    )
    # fq_codel_print_xstats(): "  maxpacket %u drop_overlimit %u new_flow_count %u ecn_mark %u",
    # then " ce_mark %u" when non-zero
    assert x1 == "  maxpacket 1514 drop_overlimit 0 new_flow_count 3 ecn_mark 17 ce_mark 240"
    assert (x2, end) == ("  new_flows_len 0 old_flows_len 0", "")
    noecn = format_qdisc({"kind": "fq_codel", "ecn": False}, STATS, dev="eth1", xstats={"ecn_mark": 0})
    head, *_, x1, _x2, _ = noecn.split("\n")
    assert " ecn " not in head and "ce_threshold" not in head and head.endswith("memory_limit 32Mb drop_batch 64 ")
    assert x1.endswith(" ecn_mark 0")  # ecn_mark always, ce_mark only when non-zero


def test_fq_prints_its_ce_threshold_and_ce_marks():
    cfg = {"kind": "fq", "ce_threshold_ns": 1_000_000}
    xstats = {"flows": 2, "throttled": 10, "ce_mark": 321, "flows_plimit": 4}
    head, _sent, _backlog, x1, x2, _ = format_qdisc(cfg, STATS, dev="eth0", xstats=xstats).split("\n")
    # fq_print_opt(): ... refill_delay, ce_threshold (sprint_time of fq_dump()'s us), timer_slack
    assert "refill_delay 40ms ce_threshold 1ms timer_slack 10us horizon 10s" in head
    # fq_print_xstats(): ... " throttled %llu", [" latency"], " ce_mark %llu" when set, " flows_plimit"
    assert x2 == "  gc 0 highprio 0 throttled 10 ce_mark 321 flows_plimit 4"
    head = format_qdisc({"kind": "fq"}, STATS, dev="eth0", xstats={}).split("\n")[0]
    assert "ce_threshold" not in head  # ~0U us: off, not printed
    assert "refill_delay 40ms timer_slack 10us" in head


def test_a_scenarios_marking_queues_in_its_tc_text():
    data = scenario(
        hosts={"client": {"qdisc": {"kind": "fq", "ce_threshold": "2.5ms"}}, "server": {}},
    )
    data["links"][1]["queue"] = {"qdisc": "fq_codel", "target": "2ms"}
    config = core(data)
    out = [{"qdisc": link["queue"]["kind"], **STATS} for link in config["links"]]
    client = format_node(config, out, "client")
    assert "ce_threshold 2.5ms timer_slack" in client
    router = format_node(config, out, "r")
    assert "target 2ms interval 100ms memory_limit 32Mb ecn drop_batch 64" in router  # 1999 us: %.3g
    assert "ce_threshold" not in router


# ---------------------------------------------------------------- ss


def _dctcp_sender(**info: Any) -> SsSocket:
    base = {
        "rtt_us": 1000,
        "rttvar_us": 100,
        "mss": 1448,
        "cwnd": 20,
        "bytes_acked": 10_000,
        "data_segs_out": 7,
        "delivery_rate_bps": 8_000_000,
        "busy_us": 1_000_000,
        "minrtt_us": 900,
        "ecn_flags": TCP_ECN_OK | TCP_ECN_SEEN,
    }
    base.update(info)
    return SsSocket(node="a", local="10.0.0.1:32768", peer="10.0.0.2:5201", cc="dctcp", info=base)


def test_dctcp_info_and_delivered_ce_in_ss_order():
    sock = _dctcp_sender(dctcp={"ce_state": 1, "alpha": 512, "ab_ecn": 2896, "ab_tot": 14480}, delivered_ce=42)
    words = sock.info_line().split()
    assert words[0] == "dctcp"  # no ts/sack/ecn without -o
    i = words.index("dctcp:(ce_state:1,alpha:512,ab_ecn:2896,ab_tot:14480)")
    assert words[i - 1] == "data_segs_out:7" and words[i + 1] == "send"
    j = words.index("delivered_ce:42")
    assert words[j - 2 : j] == ["delivery_rate", "8000000bps"] and words[j + 1] == "busy:1000ms"
    fallback = _dctcp_sender(dctcp="fallback", ecn_flags=0)
    fallback.cc = "dctcp-reno"
    assert fallback.info_line().startswith("\t dctcp-reno ") and "dctcp:fallback_mode send" in fallback.info_line()


def test_ecn_words_come_with_the_options_after_ts_sack():
    sock = _dctcp_sender()
    assert sock.info_line(options=True).startswith("\t ts sack ecn ecnseen dctcp ")
    assert sock.info_line().startswith("\t dctcp ")
    sock.info["ecn_flags"] = TCP_ECN_OK  # negotiated, no ECT segment received yet
    assert sock.info_line(options=True).startswith("\t ts sack ecn dctcp ")
    sock.info["ecn_flags"] = 0
    assert sock.info_line(options=True).startswith("\t ts sack dctcp ")
    text = format_ss([sock], options=True)
    assert text.splitlines()[2].startswith("\t ts sack dctcp ")


def _ss_config(cc: str, receiver_cc: str | None = None) -> dict[str, Any]:
    flow = {"name": "f0", "src": 0, "dst": 1, "cc": cc, "start_ns": 0, "tcp": {"mss_bytes": 1448}}
    if receiver_cc:
        flow["receiver_cc"] = receiver_cc
    return {"duration_ns": 2_000_000_000, "nodes": [{"name": "a"}, {"name": "b"}], "flows": [flow]}


def _ss_series() -> pd.DataFrame:
    rows = [
        {"t_ns": t, "flow": 0, "cwnd": 10, "ssthresh": 2147483647, "srtt_us": 1000, "rttvar_us": 100}
        for t in (0, 1_000_000_000, 2_000_000_000)
    ]
    return pd.DataFrame(rows)


def _ss_flows(**ecn: Any) -> pd.DataFrame:
    row = {
        "name": "f0",
        "end_s": 2.0,
        "bytes_sent": 1,
        "bytes_retrans": 0,
        "bytes_acked": 1,
        "bytes_received": 1,
        "data_segs_out": 1,
        "retrans_segs": 0,
        **dict.fromkeys(ECN_COLUMNS, math.nan),
    }
    row.update(ecn)
    return pd.DataFrame([row])


def test_sockets_take_their_ecn_state_from_the_flow_totals():
    flows = _ss_flows(
        ecn_flags=TCP_ECN_OK,
        receiver_ecn_flags=TCP_ECN_OK | TCP_ECN_SEEN,
        delivered_ce=55,
        dctcp_ce_state=0,
        dctcp_alpha=300,
        dctcp_ab_ecn=1448,
        dctcp_ab_tot=28960,
    )
    socks = sockets_at(_ss_config("dctcp"), flows, _ss_series())
    (sender,), (receiver,) = socks["a"], socks["b"]
    assert sender.cc == receiver.cc == "dctcp"
    assert "dctcp:(ce_state:0,alpha:300,ab_ecn:1448,ab_tot:28960)" in sender.info_line()
    assert "delivered_ce:55" in sender.info_line()
    assert sender.info_line(options=True).startswith("\t ts sack ecn dctcp ")
    assert receiver.info_line(options=True).startswith("\t ts sack ecn ecnseen dctcp ")
    assert "dctcp:" not in receiver.info_line()  # its own DCTCP state is not known
    # before the end: ECN_OK (settled by the handshake) but not what only the end knows
    (mid,) = sockets_at(_ss_config("dctcp"), flows, _ss_series(), at_ns=1_000_000_000)["b"]
    assert mid.info_line(options=True).startswith("\t ts sack ecn dctcp ")
    (mid,) = sockets_at(_ss_config("dctcp"), flows, _ss_series(), at_ns=1_000_000_000)["a"]
    assert "dctcp:(" not in mid.info_line() and "delivered_ce" not in mid.info_line()
    texts = ss_texts(_ss_config("dctcp"), flows, _ss_series(), options=True)
    assert texts["b"].splitlines()[2].startswith("\t ts sack ecn ecnseen dctcp ")
    assert " ecn" not in ss_texts(_ss_config("dctcp"), flows, _ss_series())["b"]


def test_dctcp_without_ecn_is_dctcp_reno_in_fallback_mode():
    # tcp_dctcp.c dctcp_init(): a connection without TCP_ECN_OK switches to dctcp_reno ("dctcp-reno"),
    # whose get_info() reports dctcp_enabled 0: ss prints dctcp:fallback_mode
    flows = _ss_flows(ecn_flags=0, receiver_ecn_flags=0, delivered_ce=0)
    for at in (None, 1_000_000_000):
        socks = sockets_at(_ss_config("dctcp"), flows, _ss_series(), at_ns=at)
        (sender,), (receiver,) = socks["a"], socks["b"]
        assert sender.cc == receiver.cc == "dctcp-reno"
        assert "dctcp:fallback_mode" in sender.info_line() and "dctcp:fallback_mode" in receiver.info_line()
    # a receiver whose host runs cubic keeps cubic
    (receiver,) = sockets_at(_ss_config("dctcp", "cubic"), flows, _ss_series())["b"]
    assert receiver.cc == "cubic" and "dctcp" not in receiver.info_line()


def test_without_ecn_columns_nothing_is_invented():
    socks = sockets_at(_ss_config("dctcp"), _ss_flows(), _ss_series())
    (sender,) = socks["a"]
    assert sender.cc == "dctcp" and "ecn_flags" not in sender.info
    assert sender.info_line(options=True).startswith("\t ts sack dctcp ")


def test_ss_text_with_ecn_reads_back_through_diagnose():
    from tcplab.diagnose.source import Source
    from tcplab.diagnose.ss import parse_ss

    text = format_ss([_dctcp_sender(dctcp={"ce_state": 0, "alpha": 1024, "ab_ecn": 0, "ab_tot": 0})], options=True)
    (sock,) = parse_ss(Source("ss.txt", lambda: io.BytesIO(text.encode()), len(text), {}))
    assert sock.cc == "dctcp" and sock.values["cwnd"] == 20
    assert {"ts", "sack", "ecn", "ecnseen"} <= sock.flags


# ---------------------------------------------------------------- the engine's output


def _fake(data: dict[str, Any]) -> dict[str, Any]:
    return fake_core.run(json.dumps(tcplab.load_scenario(data).to_core()))


def test_the_bridge_checks_the_flows_ecn_entry():
    raw = _fake(scenario(flows=[{"from": "client", "to": "server", "cc": "dctcp"}]))
    check_output(raw, strict=True)
    assert raw["flows"][0]["ecn"]["dctcp"] == {"ce_state": 0, "alpha": 1024, "ab_ecn": 0, "ab_tot": 0}
    older = copy.deepcopy(raw)
    del older["flows"][0]["ecn"]  # an engine before issue 28, a kernel run: still parses
    parse_output(older)
    for path, value, message in (
        (("sender_flags",), "1", "flows.0.ecn.sender_flags is str '1', expected an integer"),
        (("dctcp", "alpha"), 1.5, "flows.0.ecn.dctcp.alpha is float 1.5, expected an integer"),
        (("delivered_ce",), None, "flows.0.ecn.delivered_ce is NoneType None, expected an integer"),
    ):
        bad = copy.deepcopy(raw)
        entry = bad["flows"][0]["ecn"]
        for key in path[:-1]:
            entry = entry[key]
        entry[path[-1]] = value
        with pytest.raises(EngineError, match=message.replace("(", r"\(").replace(")", r"\)")):
            parse_output(bad)


def test_the_flows_frame_carries_the_ecn_state():
    data = scenario(
        hosts={"client": {"sysctl": {"tcp_ecn": 1}}, "server": {}},
        flows=[{"from": "client", "to": "server"}, {"from": "client", "to": "server", "cc": "dctcp"}],
    )
    sc = tcplab.load_scenario(data)
    config = sc.to_core()
    raw = fake_core.run(json.dumps(config))
    r = Result(sc, config, parse_output(raw))
    rows = r.flows.set_index("name")
    assert list(rows.loc["client-server-0", ["ecn_flags", "receiver_ecn_flags", "delivered_ce"]]) == [1, 9, 0]
    assert math.isnan(rows.loc["client-server-0", "dctcp_alpha"])  # not a DCTCP sender
    assert rows.loc["client-server-1", "dctcp_alpha"] == 1024
    del raw["flows"][0]["ecn"]
    r = Result(sc, config, parse_output(raw))
    assert all(math.isnan(x) for x in r.flows.loc[0, list(ECN_COLUMNS)])


def test_the_run_directorys_ss_texts_carry_the_dctcp_state(tmp_path):
    sc = tcplab.load_scenario(scenario(flows=[{"from": "client", "to": "server", "cc": "dctcp"}]))
    config = sc.to_core()
    r = Result(sc, config, parse_output(fake_core.run(json.dumps(config))))
    r.write(tmp_path / "run", plots=False)
    text = (tmp_path / "run" / "ss-tin-client.txt").read_text()
    assert "\t dctcp " in text and "dctcp:(ce_state:0,alpha:1024,ab_ecn:0,ab_tot:0)" in text
    # read back from the directory (flows.parquet keeps the columns)
    from tcplab.exports.rundir import RunData

    run = RunData.load(tmp_path / "run")
    assert ss_texts(run.config, run.flows, run.timeseries)["client"] == text


# ---------------------------------------------------------------- pcap

dpkt = pytest.importorskip("dpkt") if not in_ci() else importlib.import_module("dpkt")

#: The engine's flag bits as a capture names them (crates: capture.rs FlagBits).
BITS = {"syn": 1, "dsack": 2, "retrans": 4, "fin": 16, "psh": 32, "ece": 64, "cwr": 128}
PCAP_CONFIG = {
    "seed": 1,
    "nodes": [{"name": "a"}, {"name": "b"}],
    "flows": [{"name": "f", "src": 0, "dst": 1, "tcp": {"mss_bytes": 1448}}],
}


def _capture(rows: list[dict[str, Any]]) -> Capture:
    from tcplab.columns import CAPTURE_DTYPES

    cols = {c: np.array([r.get(c, 0) for r in rows], dtype=d) for c, d in CAPTURE_DTYPES.items()}
    return Capture(flow=0, at="sender", node=0, ep=0, truncated=0, packets=pd.DataFrame(cols), flag_bits=BITS)


def _csum(data: bytes) -> int:
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total


def test_pcap_carries_the_ecn_field_and_ece_cwr():
    rows = [
        # the client's ECN-setup SYN (ECE|CWR, not-ECT), the server's SYN-ACK (ECE), then data
        # ECT(0), a CE-marked one, the receiver's ECE echo and the sender's CWR
        {"t_ns": 0, "dir": 0, "flags": BITS["syn"] | BITS["ece"] | BITS["cwr"], "rwnd_bytes": 65535, "ecn": 0},
        {"t_ns": 1000, "dir": 1, "flags": BITS["syn"] | BITS["ece"], "rwnd_bytes": 65535, "ecn": 0},
        {"t_ns": 2000, "dir": 0, "seq": 0, "end_seq": 1448, "rwnd_bytes": 1 << 16, "ecn": 2},
        {"t_ns": 3000, "dir": 0, "seq": 1448, "end_seq": 2896, "rwnd_bytes": 1 << 16, "ecn": 3},
        {"t_ns": 4000, "dir": 1, "ack_seq": 2896, "flags": BITS["ece"], "rwnd_bytes": 1 << 16, "ecn": 0},
        {"t_ns": 5000, "dir": 0, "seq": 2896, "end_seq": 4344, "flags": BITS["cwr"], "rwnd_bytes": 1 << 16, "ecn": 2},
        {"t_ns": 6000, "dir": 0, "seq": 4344, "end_seq": 5792, "rwnd_bytes": 1 << 16, "ecn": 1},
    ]
    reader = dpkt.pcap.Reader(io.BytesIO(pcap_bytes(PCAP_CONFIG, _capture(rows))))
    got = []
    for _ts, buf in reader:
        ip = dpkt.ethernet.Ethernet(buf).data
        assert _csum(bytes(buf[14:34])) == 0xFFFF  # the header checksum covers the TOS
        got.append((ip.tos, ip.data.flags))
    ece, cwr, syn, ack = dpkt.tcp.TH_ECE, dpkt.tcp.TH_CWR, dpkt.tcp.TH_SYN, dpkt.tcp.TH_ACK
    assert (ece, cwr) == (0x40, 0x80)
    assert got == [
        (0, syn | ece | cwr),
        (0, syn | ack | ece),
        (2, ack),  # ECT(0)
        (3, ack),  # CE
        (0, ack | ece),
        (2, ack | cwr),
        (1, ack),  # ECT(1)
    ]


# ---------------------------------------------------------------- kernel mode


def kernel_env(**over: Any) -> KernelEnv:
    """This project's VM: no fq/fq_codel, reno bbr cubic (tests/test_kernel_plan.py's)."""
    return kernel_plan_env(**over)


def plan_of(data: dict[str, Any], **env_over: Any):
    config = core(data)
    return config, make_plan(config, kernel_env(**env_over), KernelOptions(prefix="tecn"))


def test_kernel_mode_sets_each_ends_tcp_ecn_and_the_clients_fallback():
    data = scenario(
        hosts={"client": {"sysctl": {"tcp_ecn": 1, "tcp_ecn_fallback": 0}}, "server": {"sysctl": {"tcp_ecn": 0}}},
        flows=[{"from": "client", "to": "server", "app": "maerts"}],  # the server sends: roles still rule
    )
    _, plan = plan_of(data)
    sysctls = {n.node: n.sysctls for n in plan.nodes}
    assert sysctls["client"]["net.ipv4.tcp_ecn"] == "1" and sysctls["client"]["net.ipv4.tcp_ecn_fallback"] == "0"
    assert sysctls["server"]["net.ipv4.tcp_ecn"] == "0" and "net.ipv4.tcp_ecn_fallback" not in sysctls["server"]
    assert "net.ipv4.tcp_ecn" not in sysctls["r"]
    # the defaults are written too, as the other TCP sysctls are
    _, plan = plan_of(scenario())
    sysctls = {n.node: n.sysctls for n in plan.nodes}
    assert (sysctls["client"]["net.ipv4.tcp_ecn"], sysctls["server"]["net.ipv4.tcp_ecn"]) == ("2", "2")


def test_kernel_mode_refuses_two_tcp_ecn_values_on_one_namespace():
    config = core(scenario(flows=[{"from": "client", "to": "server"}, {"from": "server", "to": "client"}]))
    config["flows"][1]["tcp"]["tcp_ecn"] = [1, 2]  # as no scenario can say: a host has one value
    with pytest.raises(KernelUnsupported, match=r"two values of tcp_ecn on host server"):
        make_plan(config, kernel_env(), KernelOptions(prefix="tecn"))


def test_kernel_mode_refuses_dctcp_where_the_kernel_lacks_it():
    data = scenario(flows=[{"from": "client", "to": "server", "cc": "dctcp"}])
    with pytest.raises(KernelUnsupported) as info:
        plan_of(data)
    assert str(info.value) == (
        "kernel: the congestion control dctcp is not available on this kernel "
        "(flows.0.cc=dctcp; available: reno bbr cubic)"
    )
    _, plan = plan_of(data, cc_available=["reno", "bbr", "cubic", "dctcp"])
    assert plan.flows[0].cc == "dctcp"


def test_kernel_mode_passes_ecn_and_ce_threshold_to_tc():
    fq_codel = ["pfifo", "bfifo", "pfifo_fast", "tbf", "fq", "fq_codel"]
    data = with_queue({"qdisc": "fq_codel", "ce_threshold": "1ms", "noecn": True})
    _, plan = plan_of(data, qdiscs=fq_codel)
    text = " ".join(" ".join(c) for cmds in plan.tc.values() for c in cmds)
    assert "fq_codel ce_threshold 1000us noecn" in text  # tc's own words: us, and the flag
    data = with_queue({"qdisc": "fq", "ce_threshold": "250us"})
    _, plan = plan_of(data, qdiscs=fq_codel)
    assert "fq ce_threshold 250us" in " ".join(" ".join(c) for cmds in plan.tc.values() for c in cmds)
    # where the kernel has no fq_codel (this machine), the plan says so, naming the field
    with pytest.raises(KernelUnsupported, match=r"sch_fq_codel is not available on this kernel"):
        plan_of(with_queue({"qdisc": "fq_codel", "ce_threshold": "1ms"}))


def test_kernel_mode_refuses_an_ecn_bleaching_link():
    data = scenario()
    data["links"][1]["bleach_ecn"] = True
    with pytest.raises(KernelUnsupported, match=r"the link setting bleach_ecn is not supported.*links\.1"):
        plan_of(data)


# ---------------------------------------------------------------- with the engine


def _run(real_core, data: dict[str, Any], capture: dict[str, Any] | None = None):
    return tcplab.run(data, core=real_core, capture=capture)


def _negotiation(client: int, server: int, cc: str = "cubic") -> dict[str, Any]:
    return scenario(
        duration="300ms",
        hosts={"client": {"sysctl": {"tcp_ecn": client}}, "server": {"sysctl": {"tcp_ecn": server}}},
        flows=[{"from": "client", "to": "server", "cc": cc, "app": {"bulk": {"bytes": "200KB"}}}],
    )


@pytest.mark.engine
@pytest.mark.parametrize("client", [0, 1, 2])
@pytest.mark.parametrize("server", [0, 1, 2])
def test_negotiation_matrix(real_core, client, server):
    """ECN is on when the client asks (tcp_ecn 1) and the server accepts (1 or 2)."""
    r = _run(real_core, _negotiation(client, server))
    on = client == 1 and server in (1, 2)
    row = r.flows.iloc[0]
    assert bool(int(row["ecn_flags"]) & TCP_ECN_OK) == on
    assert bool(int(row["receiver_ecn_flags"]) & TCP_ECN_OK) == on
    # the data segments the server received were ECT(0) exactly when ECN is on (nstat's IpExt)
    received = r.host_counters()["server"]
    assert (received.get("IpExtInECT0Pkts", 0) > 0) == on
    assert received.get("IpExtInNoECTPkts", 0) > 0  # the SYN, at least
    assert r.flows.iloc[0]["cc"] == "cubic"


@pytest.mark.engine
def test_dctcp_negotiates_whatever_tcp_ecn_says(real_core):
    r = _run(real_core, _negotiation(0, 0, cc="dctcp"))
    row = r.flows.iloc[0]
    assert row["cc"] == "dctcp" and int(row["ecn_flags"]) & TCP_ECN_OK
    # a DCTCP client towards a server whose host runs cubic with tcp_ecn 0: refused, so the
    # client falls back to dctcp-reno (tcp_dctcp.c dctcp_init())
    data = _negotiation(0, 0)
    data["hosts"]["client"]["sysctl"]["tcp_congestion_control"] = "dctcp"
    data["flows"][0].pop("cc")
    row = _run(real_core, data).flows.iloc[0]
    assert row["cc"] == "dctcp-reno" and not int(row["ecn_flags"]) & TCP_ECN_OK
    assert math.isnan(row["dctcp_alpha"])


@pytest.mark.engine
def test_the_capture_shows_the_handshake_and_ect(real_core):
    r = _run(real_core, _negotiation(1, 2), capture={"flow": 0, "at": "receiver"})
    p, bits = r.capture.packets, r.capture.flag_bits
    syn = p[(p["flags"] & bits["syn"]) != 0]
    request, reply = syn.iloc[0], syn.iloc[1]
    assert request["flags"] & bits["ece"] and request["flags"] & bits["cwr"]  # ECE|CWR on the SYN
    assert reply["flags"] & bits["ece"] and not reply["flags"] & bits["cwr"]  # ECE on the SYN-ACK
    data = p[(p["dir"] == 1) & (p["end_seq"] > p["seq"])]
    assert len(data) and (data["ecn"] == 2).all()  # ECT(0) on every data segment (no queue marks)
    pkts = dpkt.pcap.Reader(io.BytesIO(r.extra_files["client-server-0.pcap"]))
    tos = [dpkt.ethernet.Ethernet(buf).data.tos & 3 for _ts, buf in pkts]
    assert tos.count(2) == len(data)


def _marking(qdisc: dict[str, Any], cc: str = "dctcp", bleach: bool = False) -> dict[str, Any]:
    data = scenario(duration="3s", flows=[{"from": "client", "to": "server", "cc": cc}])
    data["links"][1]["queue"] = qdisc
    if bleach:
        data["links"][0]["bleach_ecn"] = True  # before the marking queue
    return data


@pytest.mark.engine
def test_dctcp_over_a_ce_threshold_marks_and_reports(real_core):
    r = _run(real_core, _marking({"qdisc": "fq_codel", "ce_threshold": "1ms"}))
    link = next(link for link in r.summary["links"] if link["name"] == "r->server")
    marks = link["xstats"]["ecn_mark"] + link["xstats"]["ce_mark"]
    assert link["xstats"]["ce_mark"] > 0
    row = r.flows.iloc[0]
    assert row["cc"] == "dctcp" and row["delivered_ce"] > 0
    assert 0 <= row["dctcp_alpha"] <= 1024 and row["dctcp_ab_ecn"] <= row["dctcp_ab_tot"]
    # every mark reached the server as CE (the marking queue is the last hop, no loss after it)
    assert r.host_counters()["server"]["IpExtInCEPkts"] == marks
    assert r.host_counters()["client"]["TcpExtTCPDeliveredCE"] > 0
    tc = r.tc_texts()["r"]
    assert f"ce_mark {link['xstats']['ce_mark']}" in tc and "ce_threshold 999us" in tc
    ss = r.ss_texts()["client"]
    assert "dctcp:(ce_state:" in ss and f"delivered_ce:{int(row['delivered_ce'])}" in ss


@pytest.mark.engine
def test_a_bleached_path_carries_no_ect_and_dctcp_sees_no_marks(real_core):
    r = _run(real_core, _marking({"qdisc": "fq_codel", "ce_threshold": "1ms"}, bleach=True))
    link = next(link for link in r.summary["links"] if link["name"] == "r->server")
    # the queue after the bleaching link sees not-ECT packets only: it cannot mark them
    assert link["xstats"]["ecn_mark"] == link["xstats"]["ce_mark"] == 0
    assert r.host_counters()["server"].get("IpExtInECT0Pkts", 0) == 0
    assert r.flows.iloc[0]["delivered_ce"] == 0


@pytest.mark.engine
def test_fq_marks_above_its_ce_threshold_for_an_ecn_cubic(real_core):
    data = _marking({"qdisc": "fq", "ce_threshold": "1ms"}, cc="cubic")
    data["hosts"]["client"]["sysctl"] = {"tcp_ecn": 1}
    r = _run(real_core, data)
    link = next(link for link in r.summary["links"] if link["name"] == "r->server")
    assert link["xstats"]["ce_mark"] > 0 and r.host_counters()["server"]["IpExtInCEPkts"] > 0
    assert "ce_threshold 1ms" in r.tc_texts()["r"]


def test_a_fallback_socket_reads_back_as_dctcp_reno():
    from tcplab.diagnose.source import Source
    from tcplab.diagnose.ss import parse_ss

    sock = _dctcp_sender(dctcp="fallback", ecn_flags=0)
    sock.cc = "dctcp-reno"
    text = format_ss([sock], options=True)
    (read,) = parse_ss(Source("ss.txt", lambda: io.BytesIO(text.encode()), len(text), {}))
    assert read.cc == "dctcp-reno" and "ecn" not in read.flags and {"ts", "sack"} <= read.flags

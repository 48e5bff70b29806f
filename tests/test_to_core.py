"""Scenario.to_core() produces exactly the engine contract: keys, types, units."""

from __future__ import annotations

import json

import pytest

import tcplab
from tcplab.loader import builtin_scenarios
from tcplab.scenario import LINUX_CC_DEFAULTS, LINUX_TCP_DEFAULTS
from tcplab.scenario.hosts import ENDPOINT_SYSCTLS

# The engine contract (config JSON accepted by tcplab._core.run).
TOP_KEYS = {"seed", "duration_ns", "sample_interval_ns", "nodes", "links", "flows", "max_memory_bytes"}
NODE_KEYS = {"name", "kind", "hz"}
LINK_KEYS = {"name", "from", "to", "rate_bps", "delay_ns", "overhead_bytes", "loss", "loss_filter", "reorder", "queue"}
FLOW_KEYS = {"name", "src", "dst", "cc", "start_ns", "stop_ns", "app", "tcp", "cc_params"}
#: Flow keys given only when not the engine's default (bulk scenarios keep their JSON).
FLOW_OPTIONAL_KEYS = {"data_side", "reader", "sample", "receiver_cc", "nodelay"}
#: A flow's ``tcp`` and ``cc_params``: the keys and JSON types of the engine's defaults
#: (``tcplab._core.defaults()``, which LINUX_TCP_DEFAULTS and LINUX_CC_DEFAULTS equal:
#: test_defaults.py), not a list copied here.
TCP_KEYS = set(LINUX_TCP_DEFAULTS)
TCP_BOOLS = {key for key, value in LINUX_TCP_DEFAULTS.items() if isinstance(value, bool)}
CC_KEYS = set(LINUX_CC_DEFAULTS)
CC_BOOLS = {key for key, value in LINUX_CC_DEFAULTS.items() if isinstance(value, bool)}


def is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


NODE_OPTIONAL_KEYS = {"forwarding", "cpu", "nic", "gso_skbs", "tso", "gro", "cpu_cost"}
# The engine's timed-qdisc fields (config/mod.rs: TbfConfig, FqConfig, FqCodelConfig).
TIMED_QUEUE_KEYS = {
    "tbf": {"rate_bps", "burst_bytes", "limit_bytes", "peakrate_bps", "mtu_bytes", "child"},
    "fq": {
        "limit_packets",
        "flow_limit_packets",
        "buckets",
        "quantum_bytes",
        "initial_quantum_bytes",
        "maxrate_bps",
        "low_rate_threshold_bps",
        "refill_delay_ns",
        "horizon_ns",
        "horizon_drop",
        "pacing",
        "ce_threshold_ns",
    },
    "fq_codel": {
        "limit_packets",
        "flows",
        "target_ns",
        "interval_ns",
        "quantum_bytes",
        "memory_limit_bytes",
        "drop_batch",
        "ecn",
        "ce_threshold_ns",
    },
}


def check_queue(q: dict) -> None:
    if q["kind"] in TIMED_QUEUE_KEYS:
        assert set(q) - {"kind"} <= TIMED_QUEUE_KEYS[q["kind"]]
        if q["kind"] == "tbf":
            assert TIMED_QUEUE_KEYS["tbf"] == set(q) - {"kind"}
            if q["child"] is not None:
                check_queue(q["child"])
        return
    assert q in (
        {"kind": "pfifo", "limit_packets": q.get("limit_packets")},
        {"kind": "bfifo", "limit_bytes": q.get("limit_bytes")},
    )
    assert is_int(q.get("limit_packets", q.get("limit_bytes"))) and q.get("limit_packets", q.get("limit_bytes")) > 0


def check_contract(core: dict) -> None:
    assert TOP_KEYS <= set(core) <= TOP_KEYS | {"apps"}
    for key in ("seed", "duration_ns", "sample_interval_ns", "max_memory_bytes"):
        assert is_int(core[key]) and core[key] >= 0
    n = len(core["nodes"])
    for node in core["nodes"]:
        # forwarding/cpu/nic appear only when set (scenarios without them keep their JSON)
        assert NODE_KEYS <= set(node) <= NODE_KEYS | NODE_OPTIONAL_KEYS and node["kind"] in ("host", "router")
    for link in core["links"]:
        assert (
            LINK_KEYS <= set(link) <= LINK_KEYS | {"edt", "orphan", "orphan_after_queue", "loss_window", "bleach_ecn"}
        )
        assert link.get("bleach_ecn", True) is True  # only when set
        if "orphan_after_queue" in link:
            # the CNI plugin's tbf holds the pod's skbs with their socket: only on a veth that
            # orphans, and only with a queue of its own to hold them in
            assert link["orphan_after_queue"] is True and link.get("orphan") is True
        if "loss_window" in link:
            w = link["loss_window"]
            assert set(w) == {"start_ns", "end_ns"} and is_int(w["start_ns"])
            assert w["end_ns"] is None or w["end_ns"] > w["start_ns"]
        assert link["name"] == f"{core['nodes'][link['from']]['name']}->{core['nodes'][link['to']]['name']}"
        for key in ("from", "to", "rate_bps", "delay_ns", "overhead_bytes"):
            assert is_int(link[key])
        assert 0 <= link["from"] < n and 0 <= link["to"] < n and link["rate_bps"] > 0
        loss = link["loss"]
        assert loss["kind"] in ("none", "bernoulli", "gilbert_elliott", "drop_list")
        expected = {
            "none": {"kind"},
            "bernoulli": {"kind", "p"},
            "gilbert_elliott": {"kind", "p", "r", "h", "k"},
            "drop_list": {"kind", "data_packets"},
        }
        assert set(loss) == expected[loss["kind"]]
        filt = link["loss_filter"]
        assert set(filt) == {"data_only", "min_ip_bytes"} and isinstance(filt["data_only"], bool)
        assert is_int(filt["min_ip_bytes"])
        assert link["reorder"] is None or set(link["reorder"]) == {"p", "delay_ns"}
        check_queue(link["queue"])
    for flow in core["flows"]:
        assert FLOW_KEYS <= set(flow) <= FLOW_KEYS | FLOW_OPTIONAL_KEYS
        assert flow.get("data_side", "server") == "server" and flow.get("sample", False) is False
        assert flow.get("reader", {"kind": "rate"})["kind"] in ("rate", "bursts")
        assert is_int(flow["src"]) and is_int(flow["dst"]) and core["nodes"][flow["src"]]["kind"] == "host"
        assert flow["cc"] in ("reno", "cubic", "bbr", "dctcp")
        assert is_int(flow["start_ns"]) and (flow["stop_ns"] is None or is_int(flow["stop_ns"]))
        assert flow["app"] in (
            {"kind": "bulk"},
            {"kind": "driven"},
            {"kind": "bulk_bytes", "bytes": flow["app"].get("bytes")},
        )
        assert set(flow["tcp"]) == TCP_KEYS
        for key, value in flow["tcp"].items():
            if key in TCP_BOOLS:
                assert isinstance(value, bool), key
            elif key in ("tcp_rmem", "tcp_wmem"):
                assert isinstance(value, list) and len(value) == 3 and all(is_int(v) for v in value)
            elif key == "tcp_ecn":  # [client, server], each net.ipv4.tcp_ecn (0, 1, 2)
                assert isinstance(value, list) and len(value) == 2 and all(v in (0, 1, 2) and is_int(v) for v in value)
            else:
                assert is_int(value), key
        assert set(flow["cc_params"]) == CC_KEYS
        for key, value in flow["cc_params"].items():
            assert isinstance(value, bool) if key in CC_BOOLS else is_int(value), key
    driven = {i for i, f in enumerate(core["flows"]) if f["app"]["kind"] == "driven"}
    owned = [i for a in core.get("apps", []) for i in a["flows"]]
    assert sorted(owned) == sorted(driven)  # every driven flow belongs to exactly one app
    for app in core.get("apps", []):
        assert set(app) == {"name", "flows", "spec"} and app["flows"] and "kind" in app["spec"]
    json.loads(json.dumps(core, allow_nan=False))  # plain JSON


@pytest.mark.parametrize("name", sorted(builtin_scenarios()))
def test_builtin_scenarios_match_the_contract(name):
    core = tcplab.load_scenario(f"builtin:{name}").to_core()
    check_contract(core)

    # the defaults themselves are held to the engine's in tests/test_defaults.py; tcp_ecn is
    # each end's host sysctl (an ECN what-if sets it on its hosts)
    def but_ecn(tcp: dict) -> dict:
        return {k: v for k, v in tcp.items() if k not in ENDPOINT_SYSCTLS}

    assert but_ecn(core["flows"][0]["tcp"]) == but_ecn(LINUX_TCP_DEFAULTS)


def test_builtins_are_shipped():
    assert {"cubic-vs-bbr-lossy", "cubic-100mbit-20ms"} <= set(builtin_scenarios())


def test_cubic_vs_bbr_lossy_values():
    core = tcplab.load_scenario("cubic-vs-bbr-lossy").to_core()  # bare name works too
    assert core["duration_ns"] == 60 * 10**9 and core["sample_interval_ns"] == 100 * 10**6
    # hosts first, then routers
    assert [n["name"] for n in core["nodes"]] == ["server", "client", "emu"]
    nic, nic_rev, fwd, rev = core["links"]
    assert (nic["name"], nic["rate_bps"], nic["delay_ns"]) == ("server->emu", 1_000_000_000, 50_000)
    assert (fwd["name"], fwd["rate_bps"], fwd["delay_ns"]) == ("emu->client", 5_000_000, 50_000_000)
    assert (rev["name"], rev["rate_bps"], rev["delay_ns"]) == ("client->emu", 5_000_000, 50_000_000)
    assert fwd["loss"] == {"kind": "bernoulli", "p": 0.01}
    assert rev["loss"] == {"kind": "none"} and nic["loss"] == {"kind": "none"}
    # base RTT 2 x (50 us + 50 ms) = 100.1 ms; 5 Mbit/s * 100.1 ms = 62562.5 B = 41.3
    # packets of 1514 B (1500 + 14 overhead) -> 41 (the queue applies to both directions of the entry)
    assert fwd["queue"] == rev["queue"] == {"kind": "pfifo", "limit_packets": 41}
    assert nic["queue"] == {"kind": "pfifo", "limit_packets": 1000}
    (flow,) = core["flows"]
    assert (flow["src"], flow["dst"], flow["cc"], flow["app"]) == (0, 1, "cubic", {"kind": "bulk"})


def test_cubic_100mbit_values():
    core = tcplab.load_scenario("builtin:cubic-100mbit-20ms").to_core()
    assert core["duration_ns"] == 30 * 10**9
    # 100 Mbit/s * 20 ms = 250000 B = 165.1 packets of 1514 B -> 165
    assert [lk["queue"]["limit_packets"] for lk in core["links"]] == [
        1000,
        1000,
        165,
        165,
    ]  # txqueuelen on the access link
    assert core["flows"][0]["cc"] == "cubic"


def test_sysctl_sources_and_flow_overrides():
    sc = tcplab.load_scenario(
        {
            "name": "sources",
            "duration": "1s",
            "hosts": {
                "tx": {
                    "sysctl": {
                        "net.ipv4.tcp_congestion_control": "bbr",
                        "tcp_rmem": "1000 2000 3000",
                        "tcp_wmem": [4096, "64KiB", "8MB"],
                        "tcp_slow_start_after_idle": 0,
                        "tcp_min_rtt_wlen": 10,
                        "tcp_limit_output_bytes": "256KiB",
                    }
                },
                "rx": {"sysctl": {"tcp_rmem": "4096 1MB 16MB", "tcp_wmem": "1 1 1", "tcp_congestion_control": "reno"}},
            },
            "links": [{"between": ["tx", "rx"], "rate": "1Gbit", "delay": "1ms"}],
            "flows": [
                {"from": "tx", "to": "rx"},
                {
                    "from": "tx",
                    "to": "rx",
                    "cc": "cubic",
                    "tcp": {
                        "mss": 8948,
                        "initial_cwnd": 32,
                        "tcp_wmem": "1 2 3",
                        "rto_min": "5ms",
                        "max_pacing_rate": "80Mbit",
                        "fq_pacing": 0,
                    },
                    "cc_params": {"hystart": 0, "beta": 819, "bbr_vm_patch": True},
                },
                {"from": "rx", "to": "tx"},
            ],
        }
    )
    core = sc.to_core()
    check_contract(core)
    f0, f1, f2 = core["flows"]
    # tcp_rmem from the receiver, everything else from the sender
    assert f0["cc"] == "bbr"
    # the receiving host's own default cc for the receiver's socket (it sends ACKs with it)
    assert f0["receiver_cc"] == "reno"
    assert f0["tcp"]["tcp_rmem"] == [4096, 1_000_000, 16_000_000]
    assert f0["tcp"]["tcp_wmem"] == [4096, 65536, 8_000_000]
    assert f0["tcp"]["tcp_slow_start_after_idle"] is False
    assert f0["tcp"]["tcp_min_rtt_wlen_s"] == 10
    assert f0["tcp"]["tcp_limit_output_bytes"] == 262144
    # the per-flow block wins
    assert f1["cc"] == "cubic" and "receiver_cc" not in f1  # a flow's own cc: both sockets
    assert (f1["tcp"]["mss_bytes"], f1["tcp"]["initial_cwnd"], f1["tcp"]["tcp_wmem"]) == (8948, 32, [1, 2, 3])
    assert (f1["tcp"]["rto_min_ms"], f1["tcp"]["max_pacing_rate_bytes_per_sec"], f1["tcp"]["fq_pacing"]) == (
        5,
        10_000_000,
        False,
    )
    assert (
        f1["cc_params"]["hystart"] is False
        and f1["cc_params"]["beta"] == 819
        and f1["cc_params"]["bbr_vm_patch"] is True
    )
    assert f1["cc_params"]["bic_scale"] == 41  # untouched defaults stay explicit
    # the reverse flow: rx sends (reno, its wmem), tx receives (its rmem)
    assert (
        f2["cc"] == "reno"
        and f2["receiver_cc"] == "bbr"
        and f2["tcp"]["tcp_wmem"] == [1, 1, 1]
        and f2["tcp"]["tcp_rmem"] == [1000, 2000, 3000]
    )
    assert (f2["src"], f2["dst"]) == (1, 0)


def test_link_options_map_to_engine_form():
    sc = tcplab.load_scenario(
        {
            "name": "opts",
            "duration": "2s",
            "hosts": {"a": {}, "b": {}},
            "links": [
                {
                    "between": ["a", "b"],
                    "rate": "10Mbit",
                    "delay": "2ms",
                    "overhead": 38,
                    "loss": {"gilbert_elliott": {"p": "1%", "r": "30%"}},
                    "reorder": {"probability": "2%", "delay": "5ms"},
                    "queue": {"qdisc": "bfifo"},
                    "reverse": {
                        "loss": {"drop": [17, 5, 5]},
                        "reorder": {"probability": 0, "delay": "1ms"},
                        "queue": {"limit": "100p"},
                    },
                },
            ],
            "flows": [
                {
                    "from": "a",
                    "to": "b",
                    "app": {"bulk": {"bytes": "10MB"}},
                    "start": "100ms",
                    "stop": "1.5s",
                    "name": "x",
                    "count": 2,
                }
            ],
        }
    )
    core = sc.to_core()
    check_contract(core)
    fwd, rev = core["links"]
    assert fwd["overhead_bytes"] == rev["overhead_bytes"] == 38
    assert fwd["loss"] == {"kind": "gilbert_elliott", "p": 0.01, "r": 0.3, "h": 0.0, "k": 1.0}
    assert rev["loss"] == {"kind": "drop_list", "data_packets": [5, 17]}
    assert fwd["reorder"] == {"p": 0.02, "delay_ns": 5_000_000}
    assert rev["reorder"] is None
    assert fwd["queue"] == {"kind": "bfifo", "limit_bytes": 1_514_000}
    assert rev["queue"] == {"kind": "pfifo", "limit_packets": 100}
    assert [f["name"] for f in core["flows"]] == ["x.0", "x.1"]
    f = core["flows"][0]
    assert (f["app"], f["start_ns"], f["stop_ns"]) == (
        {"kind": "bulk_bytes", "bytes": 10_000_000},
        100_000_000,
        1_500_000_000,
    )


def test_default_queue_and_loss():
    core = tcplab.load_scenario(
        {
            "name": "d",
            "duration": "1s",
            "hosts": {"a": None, "b": None},
            "links": [{"between": ["a", "b"], "rate": "1Mbit"}],
            "flows": [{"from": "a", "to": "b"}],
        }
    ).to_core()
    link = core["links"][0]
    assert link["queue"] == {"kind": "pfifo", "limit_packets": 1000}
    assert link["loss"] == {"kind": "none"} and link["reorder"] is None and link["overhead_bytes"] == 14
    assert link["delay_ns"] == 0
    assert core["seed"] == 1 and core["sample_interval_ns"] == 100_000_000
    assert core["flows"][0]["name"] == "a-b-0"


def test_link_queue_applies_to_both_directions_unless_reverse_sets_one():
    # README: queue: on a links: entry is for a->b and b->a; reverse: {queue: ...} for b->a alone
    core = tcplab.load_scenario("builtin:tbf-shaper-10mbit", ["links.1.reverse={}"]).to_core()
    by_name = {link["name"]: link for link in core["links"]}
    assert by_name["router->receiver"]["queue"]["kind"] == "tbf"
    assert by_name["receiver->router"]["queue"] == by_name["router->receiver"]["queue"]
    # the built-in's comment: its ACK direction has the default pfifo, as a link with no queue:
    core = tcplab.load_scenario("builtin:tbf-shaper-10mbit").to_core()
    by_name = {link["name"]: link for link in core["links"]}
    assert by_name["receiver->router"]["queue"] == by_name["sender->router"]["queue"]
    assert by_name["receiver->router"]["queue"] == {"kind": "pfifo", "limit_packets": 1000}


def test_to_core_json_is_compact_and_equal():
    sc = tcplab.load_scenario("builtin:cubic-vs-bbr-lossy")
    assert json.loads(sc.to_core_json()) == sc.to_core()


# -- a bare number is percent, as netem reads it (issue 7, 3.1) ------------------------------


@pytest.mark.parametrize("bare", [1, 2, 0.5, "2", 40])
def test_bare_percentages_mean_percent_everywhere(base_scenario, bare):
    # iproute2 tc_util.c parse_percent(): "loss 2" is 2%, the same as "loss 2%".
    expected = float(bare) / 100
    base_scenario["links"][0]["loss"] = bare
    base_scenario["links"][1]["loss"] = {"gilbert_elliott": {"p": bare, "r": bare, "h": bare, "k": bare}}
    base_scenario["links"][0]["reorder"] = {"probability": bare, "delay": "1ms"}
    links = tcplab.load_scenario(base_scenario).to_core()["links"]
    assert links[0]["loss"] == {"kind": "bernoulli", "p": pytest.approx(expected)}
    ge = links[2]["loss"]
    assert ge["kind"] == "gilbert_elliott"
    assert [ge[k] for k in "prhk"] == pytest.approx([expected] * 4)
    assert links[0]["reorder"]["p"] == pytest.approx(expected)
    with_sign = dict(base_scenario)
    with_sign["links"] = [dict(link) for link in base_scenario["links"]]
    with_sign["links"][0]["loss"] = f"{bare}%"
    assert tcplab.load_scenario(with_sign).to_core()["links"][0]["loss"] == links[0]["loss"]


def test_nodelay_is_a_socket_option_of_the_flow_not_a_tcp_setting():
    data = {
        "name": "nodelay",
        "duration": "1s",
        "hosts": {"a": {}, "b": {}},
        "links": [{"between": ["a", "b"], "rate": "1Gbit", "delay": "1ms"}],
        "flows": [{"from": "a", "to": "b", "tcp": {"nodelay": True}}, {"from": "b", "to": "a"}],
    }
    core = tcplab.load_scenario(data).to_core()
    check_contract(core)
    f0, f1 = core["flows"]
    assert f0["nodelay"] is True and "nodelay" not in f0["tcp"]
    assert "nodelay" not in f1  # the engine's default (Nagle on) stays out of the JSON

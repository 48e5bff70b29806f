"""The datapath around TCP in scenario files (issue 8): qdiscs at any egress, a host's qdisc and
``default_qdisc``, CPU slices, NIC rings, pods with CNI or Cilium egress limits.

Expected numbers come from the formulas the parsers follow (tc's get_size and q_tbf.c, the CNI
bandwidth plugin's createTBF, the kernel's tbf bucket cap), never from today's output.
"""

from __future__ import annotations

import copy
import hashlib
import json

import pytest
from typer.testing import CliRunner

import tcplab
from conftest import BASE_SCENARIO
from tcplab.cli import app
from tcplab.errors import ScenarioError
from tcplab.loader import builtin_scenarios
from tcplab.scenario.bandwidth import cni_tbf, parse_k8s_bandwidth
from tcplab.scenario.qdiscs import tbf_limit_from_latency
from tcplab.units import parse_tc_size

U32_MAX = 2**32 - 1
TBF = {"qdisc": "tbf", "rate": "10Mbit", "burst": "32kb", "latency": "50ms"}


def scenario(**changes) -> dict:
    data = copy.deepcopy(BASE_SCENARIO)
    data.update(copy.deepcopy(changes))
    return data


def with_queue(queue, reverse=None) -> dict:
    """The base scenario with ``queue`` on links.0 (server -> r1)."""
    data = scenario()
    data["links"][0]["queue"] = queue
    if reverse is not None:
        data["links"][0]["reverse"] = {"queue": reverse}
    return data


def core(data, overrides=()) -> dict:
    return tcplab.load_scenario(data, list(overrides)).to_core()


def link(cfg: dict, name: str) -> dict:
    return next(lk for lk in cfg["links"] if lk["name"] == name)


def node(cfg: dict, name: str) -> dict:
    return next(n for n in cfg["nodes"] if n["name"] == name)


# -- tc's units --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("3028b", 3028),
        ("15140", 15140),
        (15140, 15140),
        ("64kb", 64 * 1024),
        ("64KB", 64 * 1024),  # tc: "kb" in any case is 1024 bytes (get_size64: strcasecmp)
        ("64k", 64 * 1024),
        ("32Mb", 32 * 1024**2),  # tc: Mb = megabytes
        ("32m", 32 * 1024**2),
        ("1gb", 1024**3),
        ("1kbit", 1024 // 8),
        ("1mbit", 1024**2 // 8),
        ("1.5k", 1536),
        ("10.9b", 10),  # truncated, as tc's double -> integer
        ("64KiB", 65536),
    ],
)
def test_tc_sizes_read_as_tc_reads_them(text, expected):
    assert parse_tc_size(text) == expected


# -- tbf ---------------------------------------------------------------------------------


def test_tbf_latency_becomes_tcs_limit():
    q = link(core(with_queue({"qdisc": "tbf", "rate": "10Mbit", "burst": "32kb", "latency": "50ms"})), "server->r1")[
        "queue"
    ]
    # q_tbf.c: limit = rate_Bps * latency + burst = 1.25e6 * 0.05 + 32768
    assert q == {
        "kind": "tbf",
        "rate_bps": 10_000_000,
        "burst_bytes": 32768,
        "limit_bytes": 62500 + 32768,
        "peakrate_bps": None,
        "mtu_bytes": None,
        "child": None,
    }


def test_tbf_latency_with_peakrate_takes_the_smaller_limit():
    # lim = 1.25e6 * 0.05 + 102400 = 164900; lim2 = 1.5e6 * 0.05 + 2000 = 77000
    assert tbf_limit_from_latency(10_000_000, 102400, 50_000_000, 12_000_000, 2000) == 77000
    # lim2 larger: the rate's limit stands
    assert tbf_limit_from_latency(10_000_000, 32768, 50_000_000, 20_000_000, 1514) == 95268
    q = link(
        core(
            with_queue(
                {
                    "qdisc": "tbf",
                    "rate": "10Mbit",
                    "buffer": "100kb",
                    "latency": "50ms",
                    "peakrate": "12Mbit",
                    "minburst": 2000,
                }
            )
        ),
        "server->r1",
    )["queue"]
    assert (q["limit_bytes"], q["peakrate_bps"], q["mtu_bytes"], q["burst_bytes"]) == (77000, 12_000_000, 2000, 102400)


def test_tbf_limit_alias_child_and_mtu_without_peakrate():
    q = link(
        core(
            with_queue(
                {
                    "kind": "tbf",
                    "rate": "5Mbit",
                    "maxburst": "3028b",
                    "limit": "15140",
                    "mtu": "1514b",
                    "child": {"qdisc": "pfifo", "limit": 100},
                }
            )
        ),
        "server->r1",
    )["queue"]
    assert q["burst_bytes"] == 3028 and q["limit_bytes"] == 15140
    assert q["mtu_bytes"] is None  # sch_tbf.c ignores the peak bucket without a peak rate
    assert q["child"] == {"kind": "pfifo", "limit_packets": 100}


def test_tbf_takes_any_child_qdisc():
    q = link(core(with_queue({**TBF, "child": {"qdisc": "fq_codel", "target": "5ms"}})), "server->r1")["queue"]
    assert q["child"] == {"kind": "fq_codel", "target_ns": 5_000_000}


def test_reverse_queue_overrides_b_to_a_only():
    cfg = core(
        with_queue(
            {"qdisc": "fq", "horizon": "2s"}, reverse={"qdisc": "tbf", "rate": "1Mbit", "burst": 3028, "limit": 30000}
        )
    )
    assert link(cfg, "server->r1")["queue"]["kind"] == "fq"
    assert link(cfg, "r1->server")["queue"]["kind"] == "tbf"


# -- fq, fq_codel, pfifo_fast ------------------------------------------------------------------


def test_fq_parameters_in_engine_units():
    q = link(
        core(
            with_queue(
                {
                    "qdisc": "fq",
                    "limit": "2000p",  # as tc prints it
                    "flow_limit": 50,
                    "quantum": "3028b",
                    "initial_quantum": "15140b",
                    "maxrate": "30Mbit",
                    "low_rate_threshold": "550Kbit",
                    "refill_delay": "40ms",
                    "horizon": "2s",
                    "horizon_cap": True,
                    "buckets": 1000,
                    "nopacing": True,
                }
            )
        ),
        "server->r1",
    )["queue"]
    assert q == {
        "kind": "fq",
        "limit_packets": 2000,
        "flow_limit_packets": 50,
        "buckets": 1024,  # tc rounds up to a power of two (fq_log = ilog2)
        "quantum_bytes": 3028,
        "initial_quantum_bytes": 15140,
        "maxrate_bps": 30_000_000,
        "low_rate_threshold_bps": 550_000,
        "refill_delay_ns": 40_000_000,
        "horizon_ns": 2_000_000_000,
        "horizon_drop": False,
        "pacing": False,
    }


def test_fq_flags_and_defaults():
    assert link(core(with_queue("fq")), "server->r1")["queue"] == {"kind": "fq"}  # the engine's v6.12 defaults
    q = link(core(with_queue({"qdisc": "fq", "horizon_drop": True, "pacing": True})), "server->r1")["queue"]
    assert q["horizon_drop"] is True and q["pacing"] is True


def test_fq_codel_parameters_in_engine_units():
    q = link(
        core(
            with_queue(
                {
                    "qdisc": "fq_codel",
                    "limit": 10240,
                    "flows": 1024,
                    "target": "5ms",
                    "interval": "100ms",
                    "quantum": 1514,
                    "memory_limit": "32Mb",
                    "drop_batch": 64,
                    "ecn": False,
                }
            )
        ),
        "server->r1",
    )["queue"]
    assert q == {
        "kind": "fq_codel",
        "limit_packets": 10240,
        "flows": 1024,
        "target_ns": 5_000_000,
        "interval_ns": 100_000_000,
        "quantum_bytes": 1514,
        "memory_limit_bytes": 32 << 20,
        "drop_batch": 64,
        "ecn": False,
    }


def test_pfifo_fast_is_a_pfifo_of_txqueuelen():
    assert link(core(with_queue("pfifo_fast")), "server->r1")["queue"] == {"kind": "pfifo", "limit_packets": 1000}


# -- a host's qdisc and net.core.default_qdisc ---------------------------------------------------


def test_host_qdisc_applies_to_its_egress_links_without_a_queue():
    data = scenario(hosts={"server": {"qdisc": {"kind": "fq", "horizon": "2s"}}, "client": {}})
    data["links"].append({"between": ["server", "client"], "rate": "1Gbit", "queue": {"qdisc": "pfifo", "limit": 10}})
    cfg = core(data)
    assert link(cfg, "server->r1")["queue"] == {"kind": "fq", "horizon_ns": 2_000_000_000}
    assert link(cfg, "server->client")["queue"] == {"kind": "pfifo", "limit_packets": 10}  # its own queue wins
    assert link(cfg, "client->server")["queue"] == {"kind": "pfifo", "limit_packets": 10}  # (both directions)
    assert link(cfg, "r1->server")["queue"] == {"kind": "pfifo", "limit_packets": 1000}  # a router port
    assert link(cfg, "client->r1")["queue"] == {"kind": "pfifo", "limit_packets": 1000}  # another host


def test_default_qdisc_is_below_the_hosts_qdisc():
    data = scenario(
        hosts={
            "server": {"sysctl": {"net.core.default_qdisc": "fq_codel"}},
            "client": {"qdisc": "fq", "sysctl": {"default_qdisc": "fq_codel"}},
        }
    )
    data["links"].append({"between": ["server", "client"], "rate": "1Gbit"})
    cfg = core(data)
    assert link(cfg, "server->r1")["queue"] == {"kind": "fq_codel"}
    assert link(cfg, "server->client")["queue"] == {"kind": "fq_codel"}
    assert link(cfg, "client->server")["queue"] == {"kind": "fq"}
    pf = core(scenario(hosts={"server": {"sysctl": {"default_qdisc": "pfifo_fast"}}, "client": {}}))
    assert link(pf, "server->r1")["queue"] == {"kind": "pfifo", "limit_packets": 1000}


def test_core_sysctls_do_not_leak_into_tcp_settings():
    cfg = core(scenario(hosts={"server": {"sysctl": {"default_qdisc": "fq"}}, "client": {}}))
    assert not {"default_qdisc", "netdev_budget", "netdev_budget_usecs"} & set(cfg["flows"][0]["tcp"])


# -- existing scenarios are unchanged ---------------------------------------------------------------

# sha256 of to_core_json() as computed by the code before issue 8 (main at e50f30a).
BEFORE = {
    "cubic-100mbit-20ms": "beb75cc758d33b6e5c45925e07f3372a05724832a85a6b2624b2db95099a05de",
    "cubic-vs-bbr-lossy": "80064491b19d7b89d62709526f3f5202f44ec5b3cb276d38a9a73343508206d0",
    "base": "0fe0e41cb7d3280fb9ddfdcae4829d3dc44baf5d5b8d97f25b2e65e557b51565",
    # issue 26: the server (bbr) sends to a client whose host keeps cubic: the flows now carry
    # "receiver_cc": "cubic" (each socket runs its own host's cc); nothing else changed
    "varied": "d1173a1a9f134bc7bba47931772dd0d588454a2a0e7db6bba3b1cc3646826711",
}


def _varied() -> dict:
    data = scenario()
    data["hosts"] = {
        "server": {"hz": 1000, "sysctl": {"tcp_wmem": "4096 16384 8MB", "tcp_congestion_control": "bbr"}},
        "client": {},
    }
    data["links"][0].update(
        {
            "queue": {"qdisc": "bfifo", "limit": "0.5bdp"},
            "loss": "1%",
            "reverse": {"rate": "1Mbit", "queue": {"qdisc": "pfifo", "limit": 20}},
        }
    )
    data["links"][1].update({"queue": {"limit": "2bdp"}, "overhead": 38})
    data["flows"] = [{"from": "server", "to": "client", "count": 2}, {"from": "client", "to": "server", "cc": "reno"}]
    return data


#: The node keys of Linux's default offloads, on every host since issue 24 (GSO skbs, TSO, GRO).
OFFLOAD_KEYS = ("gso_skbs", "tso", "gro")
#: The TCP keys of ECN (issue 28), in every flow's ``tcp`` with Linux's defaults.
ECN_TCP_DEFAULTS = {"tcp_ecn": [2, 2], "tcp_ecn_fallback": True}


@pytest.mark.parametrize("name", sorted(BEFORE))
def test_engine_json_of_scenarios_without_new_components_is_byte_identical(name):
    # byte-identical but for the default offloads every host now carries and the default ECN
    # sysctls every flow now carries
    source = {"base": scenario(), "varied": _varied()}.get(name, f"builtin:{name}")
    config = tcplab.load_scenario(source).to_core()
    for n in config["nodes"]:
        if n["kind"] == "host":
            assert all(n.pop(k) is True for k in OFFLOAD_KEYS), n
        assert not set(OFFLOAD_KEYS) & set(n), n
    for f in config["flows"]:
        assert {k: f["tcp"].pop(k) for k in ECN_TCP_DEFAULTS} == ECN_TCP_DEFAULTS, f["name"]
    text = json.dumps(config, separators=(",", ":"))
    assert hashlib.sha256(text.encode()).hexdigest() == BEFORE[name]


# -- CPU and NIC ---------------------------------------------------------------------------------


def test_cpu_share_period_phase():
    cfg = core(scenario(hosts={"server": {"cpu": {"share": "35%", "period": "10ms", "phase": "2ms"}}, "client": {}}))
    assert node(cfg, "server")["cpu"] == {"period_ns": 10_000_000, "share": 0.35, "phase_ns": 2_000_000}
    assert "cpu" not in node(cfg, "client")
    assert node(core(scenario(hosts={"server": {"cpu": {"share": 50}}, "client": {}})), "server")["cpu"] == {
        "period_ns": 10_000_000,
        "share": 0.5,
        "phase_ns": 0,
    }


def test_nic_block_and_core_sysctls():
    hosts = {
        "server": {},
        "client": {
            "nic": {
                "driver": "ixgbe",
                "rx_ring": 8192,
                "rx_queues": 4,
                "rx_cost": "2us",
                "napi_weight": 32,
                "allowance": {"rate": "5Gbit", "burst": "10MB", "pps": 100000, "queue": 512},
            },
            "sysctl": {"net.core.netdev_budget": 600, "net.core.netdev_budget_usecs": 8000},
        },
    }
    nic = node(core(scenario(hosts=hosts)), "client")["nic"]
    assert nic == {
        "driver": "ixgbe",
        "rx_ring": 8192,
        "rx_queues": 4,
        "rx_cost_ns": 2000,
        "napi_weight": 32,
        "netdev_budget": 600,
        "netdev_budget_ns": 8_000_000,
        "irq_delay_ns": 0,
        "allowance": {
            "rate_bps": 5_000_000_000,
            "burst_bytes": 10_000_000,
            "pps": 100000,
            "pps_burst": None,
            "queue_packets": 512,
        },
    }
    hosts["client"]["nic"]["netdev_budget"] = 100  # the nic block wins over the sysctl
    assert node(core(scenario(hosts=hosts)), "client")["nic"]["netdev_budget"] == 100
    default = node(core(scenario(hosts={"server": {}, "client": {"nic": {}}})), "client")["nic"]
    assert (default["driver"], default["rx_ring"], default["netdev_budget"], default["netdev_budget_ns"]) == (
        "ena",
        1024,
        300,
        2_000_000,
    )


# -- Kubernetes bandwidth and the two enforcement modes ---------------------------------------------


@pytest.mark.parametrize(
    "text, bps",
    [("10M", 10**7), ("1G", 10**9), ("500k", 500_000), ("10Mi", 10 * 2**20), ("1e6", 10**6), (100000, 100000)],
)
def test_k8s_quantities_are_bits_per_second(text, bps):
    assert parse_k8s_bandwidth(text) == bps


def test_cni_containerd_tbf_numbers():
    # containerd: burst = MaxUint32 bits = 536870911 bytes; the kernel caps the bucket at
    # (2^32 - 1) ns of traffic: 1.25e6 B/s * 4.294967295 s = 5368709 B (5.4 MB) at 10 Mbit/s.
    t = cni_tbf(10_000_000, "containerd")
    assert t["burst_bytes"] == 1_250_000 * U32_MAX // 10**9 == 5_368_709
    assert t["limit_bytes"] == 1_250_000 * 25 // 1000 + (U32_MAX // 8) == 536_902_161  # ~537 MB
    assert t["rate_bps"] == 10_000_000
    # At 10 Gbit/s the 4.3 s cap is 5.4 GB: the runtime's 536870911 bytes stand.
    fast = cni_tbf(10_000_000_000, "containerd")
    assert fast["burst_bytes"] == U32_MAX // 8
    assert fast["limit_bytes"] == 1_250_000_000 * 25 // 1000 + U32_MAX // 8


def test_cni_crio_limit_wraps():
    # CRI-O: burst = MaxUint32*8 - 1 bits = 4294967294 bytes; limit = rate*25ms + burst in u32:
    # wraps to rate*25ms - 2.
    t = cni_tbf(10_000_000, "crio")
    assert t["limit_bytes"] == 31250 - 2
    assert t["burst_bytes"] == 5_368_709


POD_BASE = {
    "name": "pods",
    "duration": "10s",
    "hosts": {"worker": {"cpu": {"share": "50%"}}, "client": {}},
    "routers": ["sw"],
    "links": [
        {"between": ["worker", "sw"], "rate": "1Gbit", "delay": "1ms"},
        {"between": ["sw", "client"], "rate": "1Gbit", "delay": "1ms"},
    ],
    "flows": [{"from": "web", "to": "client"}],
}


def pods(pod: dict, **extra) -> dict:
    data = copy.deepcopy(POD_BASE)
    data["pods"] = {"web": {"node": "worker", **pod}}
    data.update(extra)
    return data


def test_cni_pod_expands_to_a_host_a_veth_pair_and_tbfs():
    cfg = core(pods({"egress_bandwidth": "10M", "ingress_bandwidth": "20M"}))
    names = [n["name"] for n in cfg["nodes"]]
    assert names == ["worker", "client", "web", "sw"]  # hosts, pods, routers
    assert node(cfg, "worker")["forwarding"] is True
    assert node(cfg, "web") == {
        "name": "web",
        "kind": "host",
        "hz": 250,
        "cpu": node(cfg, "worker")["cpu"],
        **{k: True for k in OFFLOAD_KEYS},  # a pod's veth takes its node's offloads
    }
    egress = link(cfg, "web->worker")
    assert (egress["rate_bps"], egress["delay_ns"], egress["overhead_bytes"]) == (10**15, 0, 14)
    assert egress["queue"] == {"kind": "tbf", **cni_tbf(10_000_000, "containerd")}
    assert link(cfg, "worker->web")["queue"] == {"kind": "tbf", **cni_tbf(20_000_000, "containerd")}
    assert link(cfg, "worker->sw")["queue"] == {"kind": "pfifo", "limit_packets": 1000}
    assert "edt" not in link(cfg, "worker->sw")
    routes = tcplab.load_scenario(pods({"egress_bandwidth": "10M"})).routes()
    assert routes[0]["data"] == ["web->worker", "worker->sw", "sw->client"]


def test_pod_without_limits_has_a_free_veth():
    cfg = core(pods({}))
    for name in ("web->worker", "worker->web"):
        assert link(cfg, name)["queue"] == {"kind": "pfifo", "limit_packets": U32_MAX}


def test_bandwidth_manager_puts_fq_and_edt_on_the_nodes_uplinks():
    data = pods({"egress_bandwidth": "10M", "mode": "bandwidth-manager"}, bandwidth_manager={"bbr": True})
    data["pods"]["api"] = {"node": "worker", "egress_bandwidth": "100M", "mode": "bandwidth-manager", "bbr": False}
    data["flows"].append({"from": "api", "to": "client"})
    cfg = core(data)
    web, api = (cfg["nodes"].index(node(cfg, n)) for n in ("web", "api"))
    uplink = link(cfg, "worker->sw")
    assert uplink["queue"] == {"kind": "fq", "horizon_ns": 2_000_000_000, "horizon_drop": True, "buckets": 32768}
    assert uplink["edt"] == [
        {"nodes": [web], "rate_bps": 10_000_000, "drop_horizon_ns": 2_000_000_000},
        {"nodes": [api], "rate_bps": 100_000_000, "drop_horizon_ns": 2_000_000_000},
    ]
    assert link(cfg, "web->worker")["queue"] == {"kind": "pfifo", "limit_packets": U32_MAX}
    assert "edt" not in link(cfg, "sw->worker")
    assert [f["cc"] for f in cfg["flows"]] == ["bbr", "cubic"]  # bandwidth_manager.bbr; api's own bbr: false


def test_pod_sysctl_is_its_own():
    data = pods({"sysctl": {"tcp_congestion_control": "reno", "tcp_wmem": "4096 16384 1MB"}})
    data["hosts"]["worker"]["sysctl"] = {"tcp_congestion_control": "bbr"}
    flow = core(data)["flows"][0]
    assert flow["cc"] == "reno" and flow["tcp"]["tcp_wmem"] == [4096, 16384, 1_000_000]


# -- overrides reach the new fields ------------------------------------------------------------------


def test_set_reaches_new_fields():
    data = with_queue({"qdisc": "tbf", "rate": "10Mbit", "burst": "32kb", "limit": 100000})
    data["hosts"]["server"] = {"cpu": {"share": "50%"}}
    cfg = core(data, ["links.0.queue.rate=20Mbit", "hosts.server.cpu.share=35%", "hosts.client.nic.rx_ring=8192"])
    assert link(cfg, "server->r1")["queue"]["rate_bps"] == 20_000_000
    assert node(cfg, "server")["cpu"]["share"] == 0.35
    assert node(cfg, "client")["nic"]["rx_ring"] == 8192
    cfg = core(
        pods({"egress_bandwidth": "10M"}), ["pods.web.runtime=crio", "hosts.worker.sysctl.net.core.default_qdisc=fq"]
    )
    assert link(cfg, "web->worker")["queue"]["limit_bytes"] == 31248
    assert link(cfg, "worker->sw")["queue"] == {"kind": "fq"}


# -- bad input: one line naming the path, the value and what was expected ---------------------------


BAD = [
    ("tbf-rate-zero", with_queue({**TBF, "rate": "0Mbit"}), ['links.0.queue.rate: "0Mbit" is zero', "positive rate"]),
    (
        "tbf-burst-below-mtu",
        with_queue({**TBF, "burst": "1000b"}),
        ['links.0.queue.burst: "1000b" is 1000 bytes, smaller than one full frame (1514 bytes)', "at least 1514"],
    ),
    (
        "tbf-limit-below-a-frame",
        with_queue({"qdisc": "tbf", "rate": "10Mbit", "burst": "32kb", "limit": "1000b"}),
        ['links.0.queue.limit: "1000b" is 1000 bytes, smaller than one full frame (1514 bytes)', "at least 1514"],
    ),
    (
        "tbf-limit-and-latency",
        with_queue({**TBF, "limit": 10000}),
        ['links.0.queue.latency: both limit (10000) and latency ("50ms") given', "exactly one of limit"],
    ),
    (
        "tbf-neither-limit-nor-latency",
        with_queue({"qdisc": "tbf", "rate": "10Mbit", "burst": "32kb"}),
        ["links.0.queue.limit: missing", "a limit (bytes) or a latency"],
    ),
    (
        "tbf-peakrate-without-mtu",
        with_queue({**TBF, "peakrate": "20Mbit"}),
        ['links.0.queue.mtu: peakrate "20Mbit" given without mtu', "expected an mtu"],
    ),
    (
        "tbf-peakrate-not-above-rate",
        with_queue({**TBF, "peakrate": "10Mbit", "mtu": 1514}),
        ['links.0.queue.peakrate: "10Mbit" is not above the rate', "peakrate above rate"],
    ),
    (
        "tbf-burst-and-buffer",
        with_queue({**TBF, "buffer": "64kb"}),
        ['links.0.queue.buffer: both burst ("32kb") and buffer ("64kb") given'],
    ),
    (
        "tbf-unknown-parameter",
        with_queue({**TBF, "cburst": "1kb"}),
        ['links.0.queue.cburst: unknown tbf parameter "cburst"', "expected one of: rate, burst"],
    ),
    (
        "tbf-child-bdp",
        with_queue({**TBF, "child": {"qdisc": "pfifo", "limit": "1bdp"}}),
        ['links.0.queue.child.limit: "1bdp" is in BDPs'],
    ),
    (
        "unknown-qdisc",
        with_queue({"qdisc": "cake"}),
        ['links.0.queue.qdisc: unknown qdisc "cake"', "expected one of: pfifo"],
    ),
    (
        "unknown-host-qdisc",
        scenario(hosts={"server": {"qdisc": "fq_pie"}, "client": {}}),
        ['hosts.server.qdisc: unknown qdisc "fq_pie"'],
    ),
    (
        "unknown-default-qdisc",
        scenario(hosts={"server": {"sysctl": {"net.core.default_qdisc": "sfq"}}, "client": {}}),
        ['hosts.server.sysctl.net.core.default_qdisc: unknown qdisc "sfq"', "pfifo_fast"],
    ),
    ("unknown-qdisc-bare", with_queue("sfq"), ['links.0.queue: unknown qdisc "sfq"']),
    (
        "tbf-rate-below-a-byte",
        with_queue({**TBF, "rate": "4bit"}),
        ['links.0.queue.rate: "4bit" is less than one byte per second'],
    ),
    (
        "fq-horizon-above-u32-us",
        with_queue({"qdisc": "fq", "horizon": "5000s"}),
        ['links.0.queue.horizon: "5000s" is out of range', "u32 of microseconds"],
    ),
    (
        "fq-codel-target-below-a-tick",
        with_queue({"qdisc": "fq_codel", "target": "1us"}),
        ['links.0.queue.target: "1us" is out of range (CoDel counts time in 1024-ns ticks)'],
    ),
    (
        "cpu-below-a-ns",
        scenario(hosts={"server": {"cpu": {"share": "0.00001%", "period": "1ms"}}, "client": {}}),
        ["hosts.server.cpu.share: 1e-05% of 1ms is less than 1 ns of CPU per period"],
    ),
    (
        "allowance-pps-burst-alone",
        scenario(
            hosts={"server": {}, "client": {"nic": {"allowance": {"rate": "1Gbit", "burst": "1MB", "pps_burst": 10}}}}
        ),
        ["hosts.client.nic.allowance.pps_burst: pps_burst 10 given without pps"],
    ),
    ("fq-horizon-zero", with_queue({"qdisc": "fq", "horizon": "0s"}), ['links.0.queue.horizon: "0s" is zero']),
    (
        "fq-horizon-contradiction",
        with_queue({"qdisc": "fq", "horizon_drop": True, "horizon_cap": True}),
        ["links.0.queue.horizon_cap: horizon_drop: true contradicts horizon_cap: true"],
    ),
    (
        "fq-buckets",
        with_queue({"qdisc": "fq", "buckets": 1_000_000}),
        ["links.0.queue.buckets: 1000000 is out of range"],
    ),
    ("fq-maxrate-zero", with_queue({"qdisc": "fq", "maxrate": 0}), ["links.0.queue.maxrate: 0 is zero"]),
    (
        "fq-maxrate-above-u32",
        with_queue({"qdisc": "fq", "maxrate": "40Gbit"}),
        ['links.0.queue.maxrate: "40Gbit" is above what fq takes'],
    ),
    (
        "pfifo-ecn",
        with_queue({"qdisc": "pfifo", "limit": 100, "ecn": True}),
        ["links.0.queue.ecn: true, but pfifo cannot mark packets (a FIFO only drops); expected false, or a qdisc"],
    ),
    (
        "fq-ecn",
        with_queue({"qdisc": "fq", "ecn": True}),
        [
            "links.0.queue.ecn: true, but fq has no ecn switch (it marks only above a ce_threshold); expected "
            "ce_threshold: 1ms"
        ],
    ),
    (
        "fq-codel-ce-threshold-zero",
        with_queue({"qdisc": "fq_codel", "ce_threshold": "0ms"}),
        ['links.0.queue.ce_threshold: "0ms" is zero; expected a positive time such as 1ms'],
    ),
    ("fq-codel-flows", with_queue({"qdisc": "fq_codel", "flows": 0}), ["links.0.queue.flows: 0 is out of range"]),
    (
        "cpu-share-zero",
        scenario(hosts={"server": {"cpu": {"share": "0%"}}, "client": {}}),
        ['hosts.server.cpu.share: "0%" is zero', "above 0% and at most 100%"],
    ),
    (
        "cpu-share-above-100",
        scenario(hosts={"server": {"cpu": {"share": "120%"}}, "client": {}}),
        ['hosts.server.cpu.share: "120%" is more than 100%', "above 0% and at most 100%"],
    ),
    (
        "cpu-share-missing",
        scenario(hosts={"server": {"cpu": {"period": "10ms"}}, "client": {}}),
        ["hosts.server.cpu.share: missing"],
    ),
    (
        "cpu-phase",
        scenario(hosts={"server": {"cpu": {"share": "50%", "phase": "10ms"}}, "client": {}}),
        ["hosts.server.cpu.phase: 10ms is not less than the period (10ms)"],
    ),
    (
        "nic-ring-zero",
        scenario(hosts={"server": {}, "client": {"nic": {"rx_ring": 0}}}),
        ["hosts.client.nic.rx_ring: 0 descriptors", "a ring of 1 to"],
    ),
    (
        "nic-driver",
        scenario(hosts={"server": {}, "client": {"nic": {"driver": "e1000"}}}),
        ['hosts.client.nic.driver: unknown driver "e1000"'],
    ),
    (
        "nic-allowance-rate-zero",
        scenario(hosts={"server": {}, "client": {"nic": {"allowance": {"rate": 0, "burst": "1MB"}}}}),
        ["hosts.client.nic.allowance.rate: 0 is zero"],
    ),
    (
        "budget-without-nic",
        scenario(hosts={"server": {"sysctl": {"net.core.netdev_budget": 600}}, "client": {}}),
        ["hosts.server.sysctl.net.core.netdev_budget: net.core.netdev_budget = 600 is set but the host has no nic"],
    ),
    (
        # the key as written (net.core. kept), also when the value is bad
        "core-sysctl-as-written",
        scenario(hosts={"server": {"sysctl": {"net.core.netdev_budget": 0}, "nic": {}}, "client": {}}),
        ["hosts.server.sysctl.net.core.netdev_budget: 0"],
    ),
    (
        "core-sysctl-bare",
        scenario(hosts={"server": {"sysctl": {"netdev_budget": 600}}, "client": {}}),
        ["hosts.server.sysctl.netdev_budget: net.core.netdev_budget = 600 is set but the host has no nic"],
    ),
    (
        "ipv4-sysctl-as-written",
        scenario(hosts={"server": {"sysctl": {"net.ipv4.tcp_frto": 9}}, "client": {}}),
        ["hosts.server.sysctl.net.ipv4.tcp_frto: 9"],
    ),
    ("pod-unknown-node", pods({"node": "wroker"}), ['pods.web.node: unknown node "wroker" (did you mean "worker"?)']),
    ("pod-on-router", pods({"node": "sw"}), ['pods.web.node: "sw" is a router, not a host']),
    (
        "pod-unknown-mode",
        pods({"egress_bandwidth": "10M", "mode": "htb"}),
        ['pods.web.mode: unknown mode "htb"', "cni", "bandwidth-manager"],
    ),
    (
        "pod-device-sysctl",
        pods({"sysctl": {"net.core.default_qdisc": "fq"}}),
        ["pods.web.sysctl.net.core.default_qdisc: net.core.default_qdisc = fq does nothing in a pod"],
    ),
    ("pod-unknown-runtime", pods({"runtime": "docker"}), ['pods.web.runtime: unknown runtime "docker"']),
    (
        "pod-bandwidth-in-bits",
        pods({"egress_bandwidth": "10Mbit"}),
        ['pods.web.egress_bandwidth: "10Mbit" is not a Kubernetes quantity', "write 10M"],
    ),
    (
        "pod-bandwidth-small",
        pods({"egress_bandwidth": "999"}),
        ['pods.web.egress_bandwidth: "999" is unreasonably small'],
    ),
    (
        # containerd's bucket, rate x (2^32 - 1) ns, is 536 bytes at 1 kbit/s: below one frame
        "pod-cni-bucket-below-a-frame",
        pods({"egress_bandwidth": "1k"}),
        ['pods.web.egress_bandwidth: "1k" gives the CNI plugin\'s tbf a bucket of 536 bytes', "at least 3k"],
    ),
    (
        # CRI-O's wrapped limit is rate x 25 ms - 2 bytes: 10k -> 31 - 2 = 29 bytes
        "pod-crio-limit-below-a-frame",
        pods({"ingress_bandwidth": "10k", "runtime": "crio"}),
        ['pods.web.ingress_bandwidth: "10k" gives the CNI plugin\'s tbf a limit of 29 bytes', "486k"],
    ),
    (
        "pod-ingress-with-cilium",
        pods({"ingress_bandwidth": "10M", "mode": "bandwidth-manager"}),
        [
            "pods.web.ingress_bandwidth: 10000000 bit/s given, but Cilium's Bandwidth Manager enforces egress limits only"
        ],
    ),
    (
        "pod-in-a-link",
        pods({}, links=[*POD_BASE["links"], {"between": ["web", "sw"], "rate": "1Gbit"}]),
        ['links.2.between.0: "web" is a pod'],
    ),
    (
        "pod-name-taken",
        pods({}, pods={"client": {"node": "worker"}}),
        ['pods.client: duplicate node name "client" (already a host)'],
    ),
    (
        "cilium-uplink-not-fq",
        pods(
            {"egress_bandwidth": "10M", "mode": "bandwidth-manager"},
            links=[
                {"between": ["worker", "sw"], "rate": "1Gbit", "queue": {"qdisc": "pfifo"}},
                POD_BASE["links"][1],
            ],
        ),
        ["links.0.queue.qdisc: \"pfifo\" on worker's device, where Cilium's Bandwidth Manager installs fq"],
    ),
]


@pytest.mark.parametrize("data, fragments", [pytest.param(d, f, id=i) for i, d, f in BAD])
def test_bad_datapath_input_is_one_line(data, fragments):
    with pytest.raises(ScenarioError) as info:
        tcplab.load_scenario(data)
    line = info.value.errors[0].line() if getattr(info.value, "errors", None) else str(info.value)
    assert "\n" not in line
    for fragment in fragments:
        assert fragment in line, line


# -- built-in scenarios ------------------------------------------------------------------------------


def test_a_builtin_per_component():
    names = builtin_scenarios()
    for word in ("tbf", "fq", "fq-codel", "bandwidth-manager", "cni-bandwidth", "cpu", "nic-ring"):
        assert any(word in name for name in names), word


NEW_BUILTINS = sorted(
    n for n in builtin_scenarios() if any(w in n for w in ("tbf", "fq", "bandwidth", "cpu", "nic-ring"))
)


@pytest.mark.parametrize("name", NEW_BUILTINS)
def test_new_builtins_check_and_describe_themselves(name, patched_core):
    result = CliRunner().invoke(app, ["check", f"builtin:{name}"])
    assert result.exit_code == 0, result.output
    assert builtin_scenarios()[name]  # a description
    sc = tcplab.load_scenario(f"builtin:{name}")
    # the CNI pod limit runs 30 s so that the containerd bucket (5.4 MB at line rate) weighs
    # less in its average goodput (its description says so); the others 10 s at most
    assert sc.duration <= (30 if name == "cni-bandwidth-pod-limit" else 10) * 10**9


def test_builtin_descriptions_put_each_command_on_its_own_line():
    # a command to copy ends its line: no prose joined after "-o DIR"
    for name in builtin_scenarios():
        text = tcplab.load_scenario(f"builtin:{name}").description or ""
        for line in text.splitlines():
            words = line.split()
            if words[:1] == ["tcplab"] and "-o" in words:
                assert words.index("-o") == len(words) - 2, (name, line)


@pytest.mark.slow
def test_cni_builtin_average_includes_the_initial_bucket():
    # containerd's bucket (rate x (2^32 - 1) ns = 5368709 B at 10 Mbit/s) passes at line rate,
    # then tbf holds the flow to rate x 1448/1514: over T seconds the average payload goodput
    # is at most (bucket x 1448/1514 x 8 + rate x 1448/1514 x T) / T, and well above the steady rate
    from tcplab.scenario.bandwidth import cni_tbf

    result = tcplab.run("builtin:cni-bandwidth-pod-limit")
    duration_s = result.duration_s
    bucket_bytes = cni_tbf(10_000_000)["burst_bytes"]
    share = 1448 / 1514
    ceiling = (bucket_bytes * 8 * share + 10e6 * share * duration_s) / duration_s
    goodput = float(result.flows["goodput_bps"].iloc[0])
    assert 10e6 * share * 1.05 < goodput <= ceiling * 1.001, (goodput, ceiling)


def test_builtins_use_the_component_they_are_named_for():
    def kinds(name):
        cfg = core(f"builtin:{name}")
        return {lk["queue"]["kind"] for lk in cfg["links"]}, cfg

    assert "tbf" in kinds("tbf-shaper-10mbit")[0]
    assert "fq" in kinds("fq-maxrate-per-flow")[0]
    assert "fq_codel" in kinds("fq-codel-bottleneck")[0]
    qk, cfg = kinds("bandwidth-manager-pod-limit")
    assert "fq" in qk and any(lk.get("edt") for lk in cfg["links"])
    assert "tbf" in kinds("cni-bandwidth-pod-limit")[0]
    cfg = core("builtin:bbr-vm-cpu-35pct")
    assert all(n["cpu"]["share"] == 0.35 for n in cfg["nodes"] if n["name"].startswith("vm"))
    assert [f["cc_params"]["bbr_vm_patch"] for f in cfg["flows"]] == [False, True]
    assert all(f["cc"] == "bbr" for f in cfg["flows"])
    assert node(core("builtin:nic-ring-fan-in"), "nginx")["nic"]["rx_ring"] == 1024


@pytest.mark.parametrize("name", NEW_BUILTINS)
def test_new_builtins_pass_the_engines_own_checks(name):
    core_module = pytest.importorskip("tcplab._core")
    import json

    assert core_module.validate(json.dumps(core(f"builtin:{name}"))) == []


def test_qdisc_rates_in_bytes_per_second_are_warned_about():
    data = with_queue({"qdisc": "tbf", "rate": "5Mbps", "burst": "32kb", "latency": "50ms"})
    data["hosts"]["client"] = {"qdisc": {"kind": "fq", "maxrate": "1Mbps"}}
    warnings = [str(w) for w in tcplab.load_scenario(data).warnings]
    assert any("links.0.queue.rate" in w and "40 Mbit/s" in w for w in warnings)
    assert any("hosts.client.qdisc.maxrate" in w and "8 Mbit/s" in w for w in warnings)


def test_qdisc_sizes_in_bits_are_warned_about():
    # tc reads 32kbit as 32 x 1024 bits = 4096 bytes (get_size64), not 32 KiB
    data = with_queue({"qdisc": "tbf", "rate": "10Mbit", "burst": "32kbit", "latency": "50ms"})
    sc = tcplab.load_scenario(data)
    assert link(sc.to_core(), "server->r1")["queue"]["burst_bytes"] == 4096
    warnings = [str(w) for w in sc.warnings]
    assert any("links.0.queue.burst" in w and "4096 bytes" in w and "write 32kb" in w for w in warnings), warnings
    data = with_queue({"qdisc": "tbf", "rate": "10Mbit", "burst": "32kb", "latency": "50ms"})
    assert [str(w) for w in tcplab.load_scenario(data).warnings] == []


@pytest.mark.parametrize("share, warned", [(0.35, True), (1, True), ("0.5", True), ("35%", False), (35, False)])
def test_a_cpu_share_that_looks_like_a_fraction_is_warned_about(share, warned):
    # a bare number is percent: 0.35 is 0.35 % of the CPU
    data = scenario(hosts={"server": {"cpu": {"share": share}}, "client": {}})
    sc = tcplab.load_scenario(data)
    warnings = [str(w) for w in sc.warnings if "cpu.share" in str(w)]
    assert bool(warnings) == warned, warnings
    if warned:
        assert "a bare number is percent" in warnings[0] and f"write {float(share) * 100:g}%" in warnings[0]


@pytest.mark.slow
@pytest.mark.parametrize("name", NEW_BUILTINS)
def test_new_builtins_run_on_the_engine(name):
    pytest.importorskip("tcplab._core")
    result = tcplab.run(f"builtin:{name}")
    assert len(result.flows) == len(core(f"builtin:{name}")["flows"])
    assert (result.flows["goodput_bps"] > 0).all()


def test_a_host_qdisc_limit_in_bdps_is_resolved_per_link_and_bounded():
    data = scenario(hosts={"server": {"qdisc": {"qdisc": "pfifo", "limit": "2bdp"}}, "client": {}})
    # 10 Mbit/s x 20 ms (the flow's base RTT) x 2 = 50000 B -> 33 frames of 1514 B
    assert link(core(data), "server->r1")["queue"] == {"kind": "pfifo", "limit_packets": 33}
    data["hosts"]["server"]["qdisc"]["limit"] = "1e12bdp"
    with pytest.raises(ScenarioError) as info:
        tcplab.load_scenario(data)
    assert 'hosts.server.qdisc.limit: "1000000000000bdp" is' in str(info.value)


@pytest.mark.slow
def test_nic_ring_fan_in_overflows_only_in_bursts_and_8192_absorbs_them():
    """Story 004: the ring drops only while a synchronized burst arrives faster than NAPI
    drains it (the drain is far above the mean load), and the story's fix (8192) absorbs it."""
    pytest.importorskip("tcplab._core")
    import importlib.resources

    import yaml

    text = (importlib.resources.files("tcplab") / "scenarios" / "nic-ring-fan-in.yaml").read_text()
    data = yaml.safe_load(text)
    nic = data["hosts"]["nginx"]["nic"]
    drain_pps = 1e9 / 2_000  # rx_cost 2us
    assert nic["rx_cost"] == "2us"
    total_bytes = sum(f["count"] * f["app"]["bulk"]["bytes"] for f in data["flows"])
    mean_pps = total_bytes / 1448 / 1.0  # over the 1 s run
    assert mean_pps < drain_pps / 10 < 25e9 / (1514 * 8)  # mean far below the drain, the burst above it
    out = {}
    for ring in (1024, 8192):
        nic["rx_ring"] = ring
        r = tcplab.run(data)
        host = next(h for h in r.hosts if h["name"] == "nginx")
        out[ring] = (host["nic"]["ethtool"]["rx_drops"], r.flows)
    drops_1024, flows_1024 = out[1024]
    drops_8192, _ = out[8192]
    burst_packets = sum(f["count"] for f in data["flows"] if f["start"] == "0ms") * 10  # IW10 each
    arrival_s = burst_packets * 1514 * 8 / 25e9  # through the 25 Gbit/s switch port
    backlog = burst_packets - arrival_s * drain_pps  # what the ring must hold at the burst's end
    assert 1024 < backlog < 8192
    assert drops_1024 > 0 and drops_8192 == 0
    assert flows_1024["retrans_segs"].sum() > 0 and flows_1024["timeouts"].sum() > 0

"""The kernel-mode plan (tcplab.kernel.plan): pure, so checked without root.

Expected values come from the model in the plan's module doc and ARCH11 (tbf bucket
max(2 x 1514 B, rate x 100 us), stab only when overhead != 14, wire namespaces for delays
>= 500 us or loss, nft threshold p x 1e6, ports 5201/8080 and 32768 + flow index), and from
the scenario's own config (queue limits), never from a previous run's output.
"""

from __future__ import annotations

import subprocess

import pytest

import tcplab
from tcplab.kernel.env import KernelEnv
from tcplab.kernel.errors import KernelUnsupported
from tcplab.kernel.options import KernelOptions
from tcplab.kernel.plan import FRAME_BYTES, WIRE_MIN_DELAY_NS, make_plan

P = "tlh2"


def env(**over) -> KernelEnv:
    """This project's VM: tbf/htb/fifo, no netem/fq/fq_codel; reno bbr cubic."""
    base = dict(
        release="6.18.44-test",
        hz=250,
        hz_source="test",
        cc_available=["reno", "bbr", "cubic"],
        cc_allowed=["reno", "bbr"],
        cubic_params={
            "beta": 717,
            "bic_scale": 41,
            "fast_convergence": 1,
            "hystart": 1,
            "hystart_ack_delta_us": 2000,
            "hystart_detect": 3,
            "hystart_low_window": 16,
            "initial_ssthresh": 0,
            "tcp_friendliness": 1,
        },
        qdiscs=["pfifo", "bfifo", "pfifo_fast", "tbf", "htb", "ingress"],
        qdiscs_source="test",
        tools={t: f"/usr/bin/{t}" for t in ("ip", "tc", "ss", "nstat", "nft", "ethtool", "ping")},
        delayline="/x/tcplab-delayline",
        cpus=2,
        ipv6=True,
    )
    base.update(over)
    return KernelEnv(**base)


def plan_of(name_or_dict, sets=(), **env_over):
    sc = (
        tcplab.load_scenario(name_or_dict, list(sets))
        if isinstance(name_or_dict, str)
        else tcplab.Scenario.model_validate(name_or_dict)
    )
    config = sc.to_core()
    return config, make_plan(config, env(**env_over), KernelOptions(prefix=P))


def texts(plan) -> list[str]:
    return [" ".join(c) for c in plan.commands]


def tc_of(plan, ns, dev) -> list[str]:
    return [" ".join(c) for c in plan.tc[(ns, dev)]]


def burst(rate_bps: int) -> int:
    return max(2 * FRAME_BYTES, rate_bps * 100 // 8_000_000)


def test_lossy_path_namespaces_qdiscs_loss_and_delay():
    config, plan = plan_of("builtin:cubic-vs-bbr-lossy")
    # nodes: server, client (hosts), emu (router); entry 1 (emu<->client) has 50 ms and loss: a wire
    assert plan.namespaces == [f"{P}-server", f"{P}-client", f"{P}-emu", f"{P}:w1"]
    # entry 0 (server<->emu, 50 us, no loss) is a plain veth: no wire namespace
    assert not any(w.entry == 0 for w in plan.wires)
    bottleneck = config["links"][2]  # emu -> client
    assert bottleneck["rate_bps"] == 5_000_000
    limit = bottleneck["queue"]["limit_packets"]
    assert tc_of(plan, f"{P}-emu", "eth1") == [
        f"tc -n {P}-emu qdisc add dev eth1 root handle 1: tbf rate 5000000bit burst {burst(5_000_000)} "
        f"limit {limit * FRAME_BYTES}",
        f"tc -n {P}-emu qdisc add dev eth1 parent 1:1 handle 10: pfifo limit {limit}",
    ]
    # the server's egress to the router keeps its own queue, without a shaper
    assert tc_of(plan, f"{P}-server", "eth0") == [
        f"tc -n {P}-server qdisc add dev eth0 root handle 1: pfifo limit 1000"
    ]
    (wire,) = plan.wires
    assert [(t.name, t.delay_ns, t.link) for t in wire.tuns] == [("tab", 50_000_000, 2), ("tba", 50_000_000, 3)]
    # Both directions are shaped by a tbf (the router's egress; the client's, the ACK route's
    # narrowest link), so the line serialises each at the link's rate before its delay.
    assert [t.spec() for t in wire.tuns] == [
        f"tab:50000000:{bottleneck['rate_bps']}:14",
        f"tba:50000000:{config['links'][3]['rate_bps']}:14",
    ]
    # 1 % loss on emu -> client only (it enters the wire on wa), after the router's queue
    assert "numgen random mod 1000000 < 10000 counter drop" in wire.nft
    assert 'iifname "wa"' in wire.nft and 'iifname "wb"' not in wire.nft
    assert f"ip netns exec {P}:w1 nft -f -" in texts(plan)
    # routes: the server reaches the client via the router's address on their link
    assert f"ip -n {P}-server route add 10.0.0.2/32 via 172.16.0.2 dev eth0 src 10.0.0.1" in texts(plan)
    # the wire forwards a->b through the TUN, then to the client's address on the b side
    tun_cmds = [" ".join(c) for c in wire.tun_commands]
    assert f"ip -n {P}:w1 rule add pref 1000 iif wa lookup 100" in tun_cmds
    assert f"ip -n {P}:w1 route add default dev tab table 100" in tun_cmds
    assert f"ip -n {P}:w1 rule add pref 1001 iif tab lookup 101" in tun_cmds
    assert f"ip -n {P}:w1 route add default via 172.16.0.13 dev wb table 101" in texts(plan)
    # sysctls: router forwards, hosts do not; the data receiver gets tcp_rmem
    sysctl = {c[3]: c for c in plan.commands if c[4:5] == ["sysctl"]}
    assert "net.ipv4.ip_forward=1" in sysctl[f"{P}-emu"]
    assert "net.ipv4.ip_forward=0" in sysctl[f"{P}-server"]
    assert "net.ipv4.tcp_rmem=4096 131072 6291456" in sysctl[f"{P}-client"]
    assert not any(a.startswith("net.ipv4.tcp_rmem") for a in sysctl[f"{P}-server"])
    assert not any("tcp_congestion_control" in a for c in plan.commands for a in c)
    (flow,) = plan.flows
    assert (flow.client_ns, flow.client_addr, flow.client_port) == (f"{P}-server", "10.0.0.1", 32768)
    assert (flow.server_ns, flow.server_addr, flow.server_port) == (f"{P}-client", "10.0.0.2", 5201)
    assert flow.cc == "cubic" and flow.app == {"kind": "bulk"} and flow.stop_ns == config["duration_ns"]
    # tso/gso off on every veth (frames, as on a wire); GRO on the hosts' own devices only
    # (Linux's default, the scenario's here), off on the router's and the wire's
    for v in plan.veths:
        gro = "on" if v.ns in (f"{P}-server", f"{P}-client") else "off"
        assert f"ip netns exec {v.ns} ethtool -K {v.dev} tso off gso off gro {gro}" in texts(plan)


def test_cubic_100mbit_router_shaper_and_one_bdp_queue():
    config, plan = plan_of("builtin:cubic-100mbit-20ms")
    limit = config["links"][2]["queue"]["limit_packets"]
    assert tc_of(plan, f"{P}-router", "eth1")[0].endswith(
        f"tbf rate 100000000bit burst {burst(100_000_000)} limit {limit * FRAME_BYTES}"
    )
    assert tc_of(plan, f"{P}-router", "eth1")[1].endswith(f"pfifo limit {limit}")
    # the 1 Gbit/s ACK path: the bucket is 100 us of the rate, larger than two frames
    assert burst(1_000_000_000) == 12_500
    assert "burst 12500" in tc_of(plan, f"{P}-router", "eth0")[0]
    assert [w.entry for w in plan.wires] == [1] and not plan.wires[0].nft


def test_tbf_shaper_is_nested_under_the_link_rate():
    config, plan = plan_of("builtin:tbf-shaper-10mbit")
    q = config["links"][2]["queue"]
    shaper, child = tc_of(plan, f"{P}-router", "eth1")
    assert "root handle 1: tbf rate 100000000bit" in shaper
    assert child.endswith(
        f"parent 1:1 handle 10: tbf rate 10000000bit burst {q['burst_bytes']} limit {q['limit_bytes']}"
    )
    # reverse: the receiver's own pfifo (reverse.queue) under a 100 Mbit/s shaper: that link is
    # the narrowest of the ACK route (100 Mbit/s, then the sender's 1 Gbit/s link)
    assert tc_of(plan, f"{P}-receiver", "eth0") == [
        f"tc -n {P}-receiver qdisc add dev eth0 root handle 1: tbf rate 100000000bit "
        f"burst {burst(100_000_000)} limit {1000 * FRAME_BYTES}",
        f"tc -n {P}-receiver qdisc add dev eth0 parent 1:1 handle 10: pfifo limit 1000",
    ]
    # the sender's 1 Gbit/s NIC in front of the 100 Mbit/s router link: not shaped
    assert tc_of(plan, f"{P}-sender", "eth0") == [
        f"tc -n {P}-sender qdisc add dev eth0 root handle 1: pfifo limit 1000"
    ]


@pytest.mark.parametrize(
    ("scenario", "message"),
    [
        ("fq-codel-bottleneck", "kernel: sch_fq_codel is not available on this kernel (links.1.queue.qdisc=fq_codel)"),
        ("fq-maxrate-per-flow", "kernel: sch_fq is not available on this kernel (links.0.queue.qdisc=fq)"),
        ("bbr-vm-cpu-35pct", "kernel: a host CPU model is not supported in kernel mode (hosts.vm-stock.cpu=set)"),
        ("hls", "kernel: the application hls is not supported in kernel mode (flows.0.app=hls)"),
        ("nic-ring-fan-in", "kernel: a NIC model (receive ring) is not supported in kernel mode (hosts.nginx.nic=set)"),
        (
            "bandwidth-manager-pod-limit",
            "kernel: pods (a host forwarding for its pods) are not supported in kernel mode (pods.web.node=worker)",
        ),
        (
            "batch_writer",
            "kernel: the application batch_writer is not supported in kernel mode (flows.0.app=batch_writer)",
        ),
    ],
)
def test_unsupported_builtins_fail_before_anything_runs(scenario, message, monkeypatch):
    def no_commands(*a, **k):
        raise AssertionError("make_plan ran a command")

    monkeypatch.setattr(subprocess, "run", no_commands)
    monkeypatch.setattr(subprocess, "Popen", no_commands)
    with pytest.raises(KernelUnsupported) as e:
        plan_of(f"builtin:{scenario}")
    assert str(e.value) == message


def test_fq_codel_is_planned_where_the_kernel_has_it():
    _, plan = plan_of("builtin:fq-codel-bottleneck", qdiscs=["pfifo", "bfifo", "tbf", "fq_codel"])
    assert tc_of(plan, f"{P}-router", "eth1")[1].split("handle 10: ")[1].startswith("fq_codel")


def test_loss_models_other_than_random_are_refused(base_scenario):
    base_scenario["links"][1]["loss"] = {"gilbert_elliott": {"p": "1%", "r": "30%"}}
    with pytest.raises(KernelUnsupported, match=r"gilbert_elliott .*\(links\.1\.loss=gilbert_elliott\)"):
        plan_of(base_scenario)


def test_cubic_module_parameters_must_match_the_module(base_scenario):
    base_scenario["flows"][0]["cc_params"] = {"beta": 800}
    with pytest.raises(KernelUnsupported, match=r"flows\.0\.cc_params\.beta=800"):
        plan_of(base_scenario)
    base_scenario["flows"][0]["cc_params"] = {"beta": 717}
    plan_of(base_scenario)


def test_unavailable_congestion_control(base_scenario):
    base_scenario["flows"][0]["cc"] = "bbr"
    with pytest.raises(KernelUnsupported, match=r"bbr is not available .*flows\.0\.cc=bbr"):
        plan_of(base_scenario, cc_available=["reno", "cubic"])


def test_data_only_loss_spares_pure_acks(base_scenario):
    base_scenario["links"][1]["loss"] = {"random": "2%", "only": "data"}
    _, plan = plan_of(base_scenario)
    (wire,) = [w for w in plan.wires if w.entry == 1]
    # a pure ACK with timestamps and 3 SACK blocks is 80 B of IP: data packets are longer
    assert "ip length >= 81 numgen random mod 1000000 < 20000 counter drop" in wire.nft


def test_short_delay_lossless_link_is_a_plain_veth(base_scenario):
    base_scenario["links"][0]["delay"] = "100us"
    _, plan = plan_of(base_scenario)
    assert WIRE_MIN_DELAY_NS > 100_000
    assert [w.entry for w in plan.wires] == [1]
    assert any("delay 100 us left to the veth" in d for d in plan.departures)
    assert f"ip -n {P}-server link add eth0 mtu 1500 type veth peer name eth0 netns {P}-r1 mtu 1500" in texts(plan)


def test_host_to_host_link_is_shaped_on_the_host():
    config, plan = plan_of("builtin:rr")
    assert tc_of(plan, f"{P}-client", "eth0")[0].endswith(f"tbf rate 1000000000bit burst {burst(10**9)} limit 1514000")
    # rr apps: the driven flows take their application's spec, port 8080, ports 32768 + index
    assert [f.app["kind"] for f in plan.flows] == ["rr"] * len(config["flows"])
    assert [f.client_port for f in plan.flows] == [32768 + i for i in range(len(config["flows"]))]
    assert {f.server_port for f in plan.flows} == {8080}


def test_overhead_other_than_ethernet_adds_a_size_table(base_scenario):
    base_scenario["links"][1]["overhead"] = 38
    _, plan = plan_of(base_scenario)
    assert "stab overhead 24 linklayer ethernet tbf" in tc_of(plan, f"{P}-r1", "eth1")[0]
    assert "stab" not in tc_of(plan, f"{P}-r1", "eth0")[0]


def test_maerts_sender_settings_go_to_the_server(base_scenario):
    base_scenario["flows"][0]["app"] = "maerts"
    base_scenario["flows"][0]["tcp"] = {"initial_cwnd": 20, "tcp_wmem": [4096, 65536, 8388608]}
    _, plan = plan_of(base_scenario)
    (flow,) = plan.flows
    assert flow.data_side == "server"
    sysctl = {c[3]: c for c in plan.commands if c[4:5] == ["sysctl"]}
    assert "net.ipv4.tcp_wmem=4096 65536 8388608" in sysctl[f"{P}-client"]
    assert not any(a.startswith("net.ipv4.tcp_wmem") for a in sysctl[f"{P}-server"])
    # initcwnd as a route attribute on the data sender's route to the receiver
    assert any(
        t.startswith(f"ip -n {P}-client route add 10.0.0.1/32") and t.endswith("initcwnd 20") for t in texts(plan)
    )


def test_plan_is_pure_and_repeatable():
    a = plan_of("builtin:cubic-vs-bbr-lossy")[1].to_dict()
    b = plan_of("builtin:cubic-vs-bbr-lossy")[1].to_dict()
    assert a == b


def test_netem_delays_the_wire_where_the_kernel_has_it():
    config, plan = plan_of("builtin:cubic-vs-bbr-lossy", qdiscs=["pfifo", "bfifo", "tbf", "netem"])
    (wire,) = plan.wires
    assert wire.tuns == [] and wire.tun_commands == []
    fwd = config["links"][2]  # emu -> client: 5 Mbit/s, 50 ms
    in_flight = fwd["rate_bps"] * fwd["delay_ns"] // (8 * 64 * 10**9) + 1  # 64 B packets in 50 ms
    assert f"tc -n {P}:w1 qdisc add dev wb root netem delay 50000us limit {max(1000, in_flight)}" in texts(plan)
    assert f"tc -n {P}:w1 qdisc add dev wa root netem delay 50000us limit {max(1000, in_flight)}" in texts(plan)
    # both directions go straight from one veth to the other; nft still drops after the queue
    assert f"ip -n {P}:w1 rule add pref 1000 iif wa lookup 101" in texts(plan)
    assert f"ip -n {P}:w1 rule add pref 1010 iif wb lookup 103" in texts(plan)
    assert "numgen random" in wire.nft
    # a kernel with netem can still be told to use the delay line
    sc = tcplab.load_scenario("builtin:cubic-vs-bbr-lossy")
    forced = make_plan(sc.to_core(), env(qdiscs=["pfifo", "tbf", "netem"]), KernelOptions(prefix=P, delay="delayline"))
    assert [t.name for t in forced.wires[0].tuns] == ["tab", "tba"]
    with pytest.raises(KernelUnsupported, match="sch_netem is not available"):
        make_plan(sc.to_core(), env(), KernelOptions(prefix=P, delay="netem"))


@pytest.mark.parametrize("prefix", ["", "Tcplab", "a/b", "x" * 17, "-x"])
def test_bad_prefix_is_refused(prefix):
    from tcplab.kernel.errors import KernelError

    sc = tcplab.load_scenario("builtin:cubic-vs-bbr-lossy")
    with pytest.raises(KernelError, match="prefix"):
        make_plan(sc.to_core(), env(), KernelOptions(prefix=prefix))


def test_maerts_server_link_is_the_bottleneck_and_is_shaped():
    """builtin:maerts: the 50 Mbit/s bottleneck is the server's own link (the server sends the
    data): its egress gets the tbf at 50 Mbit/s with the scenario's 1-BDP pfifo as the child,
    as a router's port would; the client's 1 Gbit/s link in front of the router's 50 Mbit/s
    port is faster than every route's bottleneck over it and keeps its plain queue."""
    config, plan = plan_of("builtin:maerts")
    server_link = next(i for i, link in enumerate(config["links"]) if link["name"] == "server->router")
    limit = config["links"][server_link]["queue"]["limit_packets"]
    assert tc_of(plan, f"{P}-server", "eth0") == [
        f"tc -n {P}-server qdisc add dev eth0 root handle 1: tbf rate 50000000bit "
        f"burst {burst(50_000_000)} limit {limit * FRAME_BYTES}",
        f"tc -n {P}-server qdisc add dev eth0 parent 1:1 handle 10: pfifo limit {limit}",
    ]
    assert tc_of(plan, f"{P}-client", "eth0") == [
        f"tc -n {P}-client qdisc add dev eth0 root handle 1: pfifo limit 1000"
    ]
    assert any("client->router: rate 1000 Mbit/s not emulated" in d for d in plan.departures)
    assert not any(d.startswith("server->router: rate") for d in plan.departures)


@pytest.mark.parametrize(
    ("server_rate", "router_rate", "shaped"),
    [
        ("10Mbit", "10Mbit", True),  # equal: the host link is (one of) the narrowest
        ("5Mbit", "10Mbit", True),  # the host link is the bottleneck
        ("1Gbit", "10Mbit", False),  # a fast NIC in front of the router's bottleneck
    ],
)
def test_host_link_shaped_only_when_it_is_a_routes_narrowest(base_scenario, server_rate, router_rate, shaped):
    from tcplab.kernel.plan import shaped_host_links

    base_scenario["links"][0]["rate"] = server_rate
    base_scenario["links"][1]["rate"] = router_rate
    config, plan = plan_of(base_scenario)
    assert (0 in shaped_host_links(config)) is shaped  # server -> r1
    assert ("tbf rate" in tc_of(plan, f"{P}-server", "eth0")[0]) is shaped


def test_host_link_no_flow_crosses_is_not_shaped(base_scenario):
    from tcplab.kernel.plan import shaped_host_links

    # a third host on r1 with a 1 Mbit/s link (narrower than anything) but no flow to or from it
    base_scenario["hosts"]["idle"] = {}
    base_scenario["links"].append({"between": ["idle", "r1"], "rate": "1Mbit", "delay": "5ms"})
    config, plan = plan_of(base_scenario)
    idle = next(i for i, link in enumerate(config["links"]) if link["name"] == "idle->r1")
    assert idle not in shaped_host_links(config)
    assert "tbf" not in tc_of(plan, f"{P}-idle", "eth0")[0]


def test_loss_window_is_refused_by_its_yaml_field(base_scenario):
    """``loss: {random: 1%, start: 60s}``: one line naming the YAML field and its value, not
    the engine's ``loss_window`` dict; a non-Bernoulli model is named before its window."""
    base_scenario["links"][1]["loss"] = {"random": "1%", "start": "60s"}
    with pytest.raises(KernelUnsupported) as e:
        plan_of(base_scenario)
    assert str(e.value) == (
        "kernel: a loss window (loss that starts or ends during the run) is not supported in kernel mode "
        "(links.1.loss.start=60s)"
    )
    base_scenario["links"][1]["loss"] = {"gilbert_elliott": {"p": "1%", "r": "20%"}, "start": "60s"}
    with pytest.raises(KernelUnsupported) as e:
        plan_of(base_scenario)
    assert "the loss model gilbert_elliott" in str(e.value) and "(links.1.loss=gilbert_elliott)" in str(e.value)


def test_slow_readers_reach_the_agent():
    """builtin:slow-reader: the receiving agents read as the engine's readers do (rate, bursts);
    the fast reader's app has no reader."""
    from tcplab.kernel.agent import agent_app

    config, plan = plan_of("builtin:slow-reader")
    apps = [agent_app(dict(f.app)) for f in plan.flows]
    assert apps[0]["reader"] == {"kind": "rate", "rate_bps": config["flows"][0]["reader"]["rate_bps"]}
    assert apps[1]["reader"] == {"kind": "bursts", "interval_ns": 100_000_000, "bytes": 64_000}
    assert "reader" not in apps[2]


def test_slow_reader_of_an_rr_flow_is_refused(base_scenario):
    base_scenario["flows"][0]["app"] = {"rr": {}}
    base_scenario["flows"][0]["reader"] = {"rate": "2Mbit"}
    with pytest.raises(KernelUnsupported) as e:
        plan_of(base_scenario)
    assert str(e.value) == "kernel: a slow reader of an rr flow is not supported in kernel mode (flows.0.reader=rate)"

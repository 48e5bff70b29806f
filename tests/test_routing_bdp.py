"""Routes (BFS in link order) and "bdp" queue limits, against hand-derived values.

A "bdp" packet is a full-size segment as the link counts it: 1500 B IP + 14 B Ethernet
overhead = 1514 B (the same count as the engine's test helpers, crates/tcplab-core/tests/engine/common).
"""

from __future__ import annotations

import pytest

import tcplab
from tcplab.errors import ScenarioError
from tcplab.routing import bfs_route


def link(a, b, rate, delay, **extra):
    return {"between": [a, b], "rate": rate, "delay": delay, **extra}


def dumbbell(queue=None):
    """a1, a2 -> r1 == 10 Mbit/s, 20 ms == r2 -> b1, b2; plus an idle host on r2.

    Nodes: a1=0 a2=1 b1=2 b2=3 idle=4 r1=5 r2=6.
    One-way links: 0 a1->r1, 1 r1->a1, 2 a2->r1, 3 r1->a2, 4 r1->r2, 5 r2->r1,
                   6 r2->b1, 7 b1->r2, 8 r2->b2, 9 b2->r2, 10 r2->idle, 11 idle->r2.
    """
    q = queue or {"qdisc": "pfifo", "limit": "1bdp"}
    return {
        "name": "dumbbell",
        "duration": "10s",
        "hosts": {"a1": {}, "a2": {}, "b1": {}, "b2": {}, "idle": {}},
        "routers": ["r1", "r2"],
        "links": [
            link("a1", "r1", "100Mbit", "1ms", queue=q),
            link("a2", "r1", "100Mbit", "5ms", queue=q),
            link("r1", "r2", "10Mbit", "20ms", queue=q),
            link("r2", "b1", "100Mbit", "1ms", queue=q),
            link("r2", "b2", "100Mbit", "2ms", queue=q),
            link("r2", "idle", "10Mbit", "7ms", queue=q),
        ],
        "flows": [{"from": "a1", "to": "b1"}, {"from": "a2", "to": "b2"}],
    }


def test_dumbbell_routes():
    sc = tcplab.load_scenario(dumbbell())
    core = sc.to_core()
    assert [n["name"] for n in core["nodes"]] == ["a1", "a2", "b1", "b2", "idle", "r1", "r2"]
    assert [n["kind"] for n in core["nodes"]] == ["host"] * 5 + ["router"] * 2
    names = [lk["name"] for lk in core["links"]]
    assert names[:6] == ["a1->r1", "r1->a1", "a2->r1", "r1->a2", "r1->r2", "r2->r1"]
    assert [(lk["from"], lk["to"]) for lk in core["links"][4:6]] == [(5, 6), (6, 5)]
    routes = sc.routes()
    assert routes[0]["data"] == ["a1->r1", "r1->r2", "r2->b1"]
    assert routes[0]["ack"] == ["b1->r2", "r2->r1", "r1->a1"]
    assert routes[1]["data"] == ["a2->r1", "r1->r2", "r2->b2"]
    # round-trip propagation: 2 * (1 + 20 + 1) ms and 2 * (5 + 20 + 2) ms
    assert [r["base_rtt_ns"] for r in routes] == [44_000_000, 54_000_000]


def test_dumbbell_bdp_limits_pfifo():
    limits = [lk["queue"]["limit_packets"] for lk in tcplab.load_scenario(dumbbell()).to_core()["links"]]
    # bottleneck both ways: crossed by both flows -> max RTT 54 ms; 10e6/8 * 0.054 = 67500 B / 1514 -> 44.58 -> 45 pkts
    assert limits[4] == 45 and limits[5] == 45
    # a1 side: only flow 0 (44 ms): 100e6/8 * 0.044 = 550000 B / 1514 -> 363.28 -> 363
    assert limits[0] == 363 and limits[1] == 363
    # a2 side: only flow 1 (54 ms): 675000 B / 1514 -> 445.84 -> 446
    assert limits[2] == 446 and limits[3] == 446
    # b1 (flow 0, 44 ms) and b2 (flow 1, 54 ms) access links
    assert limits[6] == 363 and limits[8] == 446
    # idle link: no flow crosses it -> 2 * 7 ms: 10e6/8 * 0.014 = 17500 B / 1514 -> 11.56 -> 12
    assert limits[10] == 12 and limits[11] == 12


def test_dumbbell_bdp_limits_bfifo_half():
    sc = tcplab.load_scenario(dumbbell({"qdisc": "bfifo", "limit": "0.5bdp"}))
    queues = [lk["queue"] for lk in sc.to_core()["links"]]
    assert queues[4] == {"kind": "bfifo", "limit_bytes": 33750}  # 0.5 * 67500
    assert queues[0] == {"kind": "bfifo", "limit_bytes": 275000}  # 0.5 * 550000


def fan_in():
    """s0..s3 -> r (1 Gbit/s, (i+1) ms) -> d (100 Mbit/s, 10 ms). Nodes s0..s3=0..3, d=4, r=5."""
    return {
        "name": "fan-in",
        "duration": "5s",
        "hosts": {**{f"s{i}": {} for i in range(4)}, "d": {}},
        "routers": ["r"],
        "links": [link(f"s{i}", "r", "1Gbit", f"{i + 1}ms", queue={"limit": "1bdp"}) for i in range(4)]
        + [link("r", "d", "100Mbit", "10ms", queue={"limit": "1bdp"})],
        "flows": [{"from": f"s{i}", "to": "d"} for i in range(4)],
    }


def test_fan_in_routes_and_bdp():
    sc = tcplab.load_scenario(fan_in())
    core = sc.to_core()
    routes = sc.routes()
    for i, r in enumerate(routes):
        assert r["data"] == [f"s{i}->r", "r->d"]
        assert r["ack"] == ["d->r", f"r->s{i}"]
        assert r["base_rtt_ns"] == 2 * (i + 1 + 10) * 1_000_000  # 22, 24, 26, 28 ms
    limits = [lk["queue"]["limit_packets"] for lk in core["links"]]
    # r->d is crossed by all four: max RTT 28 ms -> 100e6/8 * 0.028 = 350000 B / 1514 -> 231.18 -> 231
    assert limits[8] == 231 and limits[9] == 231
    # s_i->r only by flow i: 1e9/8 * RTT_i / 1514
    assert limits[0:8:2] == [1816, 1982, 2147, 2312]  # 2.75e6, 3e6, 3.25e6, 3.5e6 bytes
    assert [f["src"] for f in core["flows"]] == [0, 1, 2, 3]
    assert {f["dst"] for f in core["flows"]} == {4}


def test_bdp_uses_reverse_direction_delay():
    sc = tcplab.load_scenario(
        {
            "name": "asym",
            "duration": "1s",
            "hosts": {"a": {}, "b": {}},
            "links": [
                link("a", "b", "8Mbit", "50ms", queue={"limit": "1bdp"}, reverse={"delay": "10ms", "rate": "1Mbit"})
            ],
            "flows": [{"from": "a", "to": "b"}],
        }
    )
    links = sc.to_core()["links"]
    assert links[1]["delay_ns"] == 10_000_000 and links[1]["rate_bps"] == 1_000_000
    # RTT 60 ms; a->b: 1e6 B/s * 0.06 = 60000 B / 1514 -> 39.6 -> 40 pkts; b->a: 125000 B/s * 0.06 = 7500 -> 4.95 -> 5
    assert [lk["queue"]["limit_packets"] for lk in links] == [40, 5]


def test_bdp_rounds_half_up_and_has_floor():
    base = {
        "name": "r",
        "duration": "1s",
        "hosts": {"a": {}, "b": {}},
        "flows": [{"from": "a", "to": "b"}],
    }
    # 1.8168 Mbit/s * 10 ms RTT = 2271 B = 1.5 packets of 1514 B -> 2
    half = dict(base, links=[link("a", "b", "1816800bit", "5ms", queue={"limit": "1bdp"})])
    assert tcplab.load_scenario(half).to_core()["links"][0]["queue"]["limit_packets"] == 2
    # just below half a packet rounds down: 1.8 Mbit/s * 10 ms = 2250 B = 1.486 packets -> 1
    below = dict(base, links=[link("a", "b", "1.8Mbit", "5ms", queue={"limit": "1bdp"})])
    assert tcplab.load_scenario(below).to_core()["links"][0]["queue"]["limit_packets"] == 1
    # a tiny BDP still gets 1 packet / 1514 bytes
    tiny = dict(base, links=[link("a", "b", "1Mbit", "1us", queue={"limit": "1bdp"})])
    assert tcplab.load_scenario(tiny).to_core()["links"][0]["queue"]["limit_packets"] == 1
    tiny_b = dict(base, links=[link("a", "b", "1Mbit", "1us", queue={"qdisc": "bfifo", "limit": "1bdp"})])
    assert tcplab.load_scenario(tiny_b).to_core()["links"][0]["queue"]["limit_bytes"] == 1514


def test_pfifo_and_bfifo_bdp_hold_the_same_packets():
    # A 1bdp pfifo holds as many full-size packets as a 1bdp bfifo, which counts skb->len
    # (IP length + link overhead) as the engine's queues do; with a non-default overhead too.
    base = {"name": "o", "duration": "1s", "hosts": {"a": {}, "b": {}}, "flows": [{"from": "a", "to": "b"}]}
    for overhead in (14, 0, 38):
        limits = {}
        for qdisc in ("pfifo", "bfifo"):
            lk = link("a", "b", "10Mbit", "20ms", overhead=overhead, queue={"qdisc": qdisc, "limit": "1bdp"})
            limits[qdisc] = tcplab.load_scenario(dict(base, links=[lk])).to_core()["links"][0]["queue"]
        # 10e6/8 * 40 ms = 50000 B
        assert limits["bfifo"]["limit_bytes"] == 50000
        assert limits["pfifo"]["limit_packets"] == round(50000 / (1500 + overhead))


def test_bfs_prefers_earlier_links_among_equal_hops():
    # square: a-b, a-c, b-d, c-d. Nodes a0 b1 c2 d3.
    links = [(0, 1), (1, 0), (0, 2), (2, 0), (1, 3), (3, 1), (2, 3), (3, 2)]
    assert bfs_route(4, links, 0, 3) == [0, 4]  # via b: a->b is listed first
    assert bfs_route(4, links, 3, 0) == [5, 1]  # d's first outgoing link is d->b
    reordered = [(0, 2), (2, 0), (0, 1), (1, 0), (1, 3), (3, 1), (2, 3), (3, 2)]
    assert bfs_route(4, reordered, 0, 3) == [0, 6]  # now via c


def test_bfs_shortest_in_hops_and_parallel_links():
    # a-b twice (parallel), a long detour a-c-d-b
    links = [(0, 2), (2, 0), (2, 3), (3, 2), (3, 1), (1, 3), (0, 1), (1, 0), (0, 1), (1, 0)]
    assert bfs_route(4, links, 0, 1) == [6]  # one hop beats three; first of the parallel pair
    assert bfs_route(4, links, 1, 0) == [7]


def test_bfs_unreachable_and_trivial():
    assert bfs_route(3, [(0, 1), (1, 0)], 0, 2) is None
    assert bfs_route(3, [(0, 1)], 1, 0) is None  # one-way only
    assert bfs_route(2, [], 1, 1) == []


def test_a_flow_through_a_host_is_unroutable():
    # a - b - c with b a host: hosts do not forward (ip_forward = 0), so the scenario is
    # rejected with a message naming the flow; declaring b a router makes it routable.
    spec = {
        "name": "chain",
        "duration": "1s",
        "hosts": {"a": {}, "b": {}, "c": {}},
        "links": [link("a", "b", "1Mbit", "1ms"), link("b", "c", "1Mbit", "1ms")],
        "flows": [{"from": "a", "to": "c"}],
    }
    with pytest.raises(ScenarioError, match=r"flows\.0: no route from"):
        tcplab.load_scenario(spec)
    spec["hosts"] = {"a": {}, "c": {}}
    spec["routers"] = ["b"]
    assert tcplab.load_scenario(spec).routes()[0]["data"] == ["a->b", "b->c"]


def test_hosts_never_forward():
    # h0 - h1 - h2 in a line: Linux hosts run with ip_forward = 0, so no route from h0
    # to h2 through host h1; with h1 a router there is one.
    links = [(0, 1), (1, 0), (1, 2), (2, 1)]
    assert bfs_route(3, links, 0, 2, [False, False, False]) is None
    assert bfs_route(3, links, 0, 2, [False, True, False]) == [0, 2]

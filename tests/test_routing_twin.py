"""The Python routing twin and the engine route every flow the same way.

tcplab.routing.bfs_route is a twin of the engine's crates/tcplab-core/src/net/routing.rs:
the scenario resolves "bdp" limits and refuses unroutable flows with it
(tcplab.scenario.topology), and the run's summary, stuck-flow detection and plots read the
path's payload ceiling and base RTT from it (tcplab.results.paths). Nothing else ties the
two, so this test does, through what the engine already reports: a one-way link's qdisc
counts the packets it sent (tc -s's "Sent ... pkt"). A scenario with one flow of one
connection and no loss, run alone, sends its data on exactly the links of its data route and
its ACKs on those of its ACK route, and nothing elsewhere: each link of the data route sends
the same number of packets (every data segment crosses every link of its route), each link
of the ACK route too, and every other link none.

The topologies are random, in the style of tests/test_fuzz_scenarios.py (its generators
make arbitrary data, which seldom routes anything): hosts and routers with parallel links,
links between hosts (hosts do not forward), and pods, whose node forwards; flows of bulk
(data from the client) and maerts (data from the server), both routed by the rules the
module doc of tcplab.routing states (fewest hops, ties to the earlier link in the file).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from tcplab.engine import run_core
from tcplab.errors import ScenarioError
from tcplab.loader import load_scenario
from tcplab.results.paths import flow_path


@st.composite
def topologies(draw: st.DrawFn) -> dict[str, Any]:
    """A scenario of 2-4 hosts, 1-4 routers and maybe a pod, every host linked to a router,
    plus random extra links (parallel ones included), and no flows yet."""
    hosts = [f"h{i}" for i in range(draw(st.integers(2, 4)))]
    routers = [f"r{i}" for i in range(draw(st.integers(1, 4)))]
    nodes = hosts + routers
    pairs = [(h, draw(st.sampled_from(routers))) for h in hosts]
    extra = st.lists(st.sampled_from(nodes), min_size=2, max_size=2, unique=True).map(tuple)
    pairs += draw(st.lists(extra, max_size=6))
    order = draw(st.permutations(range(len(pairs))))  # the file order breaks ties
    links = [
        {
            "between": list(pairs[k]),
            "rate": f"{draw(st.sampled_from([10, 100, 1000]))}Mbit",
            "delay": f"{draw(st.integers(1, 20))}ms",
        }
        for k in order
    ]
    data: dict[str, Any] = {
        "name": "routing-twin",
        "duration": "2s",
        "hosts": {h: {} for h in hosts},
        "routers": routers,
        "links": links,
        "flows": [],
    }
    if draw(st.booleans()):  # a pod: its node forwards (ip_forward = 1)
        data["pods"] = {"p0": {"node": draw(st.sampled_from(hosts))}}
    return data


def _flows(data: dict[str, Any]) -> st.SearchStrategy[list[dict[str, Any]]]:
    ends = list(data["hosts"]) + list(data.get("pods", {}))
    pair = st.lists(st.sampled_from(ends), min_size=2, max_size=2, unique=True)
    flow = st.tuples(pair, st.sampled_from(["bulk", "maerts"]))
    return st.lists(flow, min_size=1, max_size=3).map(
        lambda fs: [{"from": a, "to": b, "app": {kind: {"bytes": "30KB"}}} for (a, b), kind in fs]
    )


def _sent_packets_by_link(config: dict[str, Any], real_core: Any) -> list[int]:
    return [int(link["sent_packets"]) for link in run_core(config, core=real_core).links]


@pytest.mark.engine
@settings(
    max_examples=100,
    deadline=None,
    # real_core is the compiled module: nothing of it is reset between examples
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture],
)
@given(st.data())
def test_the_twin_routes_each_flow_where_the_engine_sends_it(real_core, data):
    base = data.draw(topologies())
    entries = data.draw(_flows(base))
    routed = 0
    for entry in entries:
        try:
            sc = load_scenario({**base, "flows": [entry]})
        except ScenarioError:
            continue  # unroutable (hosts do not forward): refused before the engine, by the twin
        config = sc.to_core()
        (flow,) = config["flows"]
        path = flow_path(config, flow)
        assert path is not None, f"{flow['name']}: the scenario routed it, results.paths did not"
        # the scenario's twin (topology: "bdp" limits, base RTTs) and the results' agree
        (route,) = sc.routes()
        names = [link["name"] for link in config["links"]]
        assert [names[i] for i in path.data_links] == route["data"]
        assert [names[i] for i in path.ack_links] == route["ack"]
        # and the engine sent the packets on those links, and on no other
        sent = _sent_packets_by_link(config, real_core)
        data_only = set(path.data_links) - set(path.ack_links)
        ack_only = set(path.ack_links) - set(path.data_links)
        used = {i for i, n in enumerate(sent) if n > 0}
        assert used == set(path.data_links) | set(path.ack_links), (names, sent, path)
        assert len({sent[i] for i in data_only}) <= 1, (names, sent, path)
        assert len({sent[i] for i in ack_only}) <= 1, (names, sent, path)
        routed += 1
        event(f"routed over {len(path.data_links)} hops" + (" from a pod" if entry["from"] == "p0" else ""))
    assume(routed > 0)

"""Cross-reference checks of a scenario: node names, link ends, flow endpoints and routes.

Every problem found is reported (not just the first), each with its own field path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tcplab.errors import show_value
from tcplab.routing import bfs_route
from tcplab.scenario.fields import _did_you_mean, _t
from tcplab.scenario.flows import flow_names

if TYPE_CHECKING:
    from tcplab.scenario.model import Scenario


def check_nodes(sc: Scenario, error: Any) -> dict[str, str]:
    """Unique node names, links between two different known nodes. Returns name -> kind."""
    if not sc.hosts:
        error(("hosts",), "no hosts", "at least two hosts such as {server: {}, client: {}}")
    kinds: dict[str, str] = {h: "host" for h in sc.hosts}
    for i, r in enumerate(sc.routers):
        if r in kinds:
            error(
                ("routers", i),
                f"duplicate node name {show_value(r)} (already a {kinds[r]})",
                "node names used once",
                r,
            )
        kinds.setdefault(r, "router")
    known = "one of: " + ", ".join(sorted(kinds))
    for i, link in enumerate(sc.links):
        for j, n in enumerate(link.between):
            if n not in kinds:
                error(
                    ("links", i, "between", j),
                    f"unknown node {show_value(n)}{_did_you_mean(n, list(kinds))}",
                    known,
                    n,
                )
        if link.between[0] == link.between[1]:
            error(
                ("links", i, "between"),
                f"link from {show_value(link.between[0])} to itself",
                "two different node names",
                list(link.between),
            )
    return kinds


def check_flows(sc: Scenario, error: Any, kinds: dict[str, str], topology_ok: bool) -> None:
    """Flows go between two different hosts, in time, with unique names, along a route."""
    if not sc.flows:
        error(("flows",), "no flows", "at least one flow such as {from: server, to: client}")
    hosts = list(sc.hosts)
    host_list = "one of: " + ", ".join(sorted(hosts))
    topo = sc._topology() if topology_ok else None
    names_seen: dict[str, int] = {}
    for i, flow in enumerate(sc.flows):
        endpoints_ok = True
        for key, n in (("from", flow.from_), ("to", flow.to)):
            if n not in kinds:
                error(("flows", i, key), f"unknown host {show_value(n)}{_did_you_mean(n, hosts)}", host_list, n)
                endpoints_ok = False
            elif kinds[n] == "router":
                error(("flows", i, key), f"{show_value(n)} is a router, not a host", host_list, n)
                endpoints_ok = False
        if endpoints_ok and flow.from_ == flow.to:
            error(
                ("flows", i, "to"),
                f"flow from {show_value(flow.to)} to itself",
                "a different host than from",
                flow.to,
            )
            endpoints_ok = False
        if flow.start >= sc.duration:
            error(
                ("flows", i, "start"),
                f"{_t(flow.start)} is not before the end of the run ({_t(sc.duration)})",
                "a start time before the duration",
                flow.start,
            )
        if flow.stop is not None and flow.stop <= flow.start:
            error(
                ("flows", i, "stop"),
                f"{_t(flow.stop)} is not after start ({_t(flow.start)})",
                "a stop time after start",
                flow.stop,
            )
        for name in flow_names(i, flow):
            if name in names_seen:
                error(
                    ("flows", i, "name"),
                    f"duplicate flow name {show_value(name)} (also flows.{names_seen[name]})",
                    "unique flow names",
                    name,
                )
            names_seen.setdefault(name, i)
        if topo is not None and endpoints_ok:
            src, dst = topo.index[flow.from_], topo.index[flow.to]
            a, b = show_value(flow.from_), show_value(flow.to)
            if bfs_route(len(topo.nodes), topo.ends, src, dst, topo.forwards) is None:
                error(("flows", i), f"no route from {a} to {b}", "links that connect the two hosts")
            elif bfs_route(len(topo.nodes), topo.ends, dst, src, topo.forwards) is None:
                error(("flows", i), f"no route back from {b} to {a} for ACKs", "links that connect the two hosts")

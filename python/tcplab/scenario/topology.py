"""The resolved network: nodes, one-way links with queue limits, expanded flows with routes.

"bdp" queue limits are resolved here (see :mod:`tcplab.scenario` for the formula).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from tcplab.routing import bfs_route, route_delay_ns
from tcplab.scenario.flows import flow_names
from tcplab.scenario.hosts import LINUX_TCP_DEFAULTS, Host
from tcplab.scenario.links import LinkOverrides
from tcplab.scenario.queues import NOMINAL_PACKET_BYTES, Queue

if TYPE_CHECKING:
    from tcplab.scenario.model import Scenario


class _Topology:
    """Nodes, one-way links with resolved queue limits, and expanded flows with routes."""

    def __init__(self, sc: Scenario):
        self.nodes = sc.node_names
        self.index = {n: i for i, n in enumerate(self.nodes)}
        # Only routers forward (hosts: net.ipv4.ip_forward = 0), as in the engine.
        routers = set(sc.routers)
        self.forwards = [n in routers for n in self.nodes]
        self.links: list[dict[str, Any]] = []
        specs = []
        for entry in sc.links:
            a, b = entry.between
            rev = entry.reverse or LinkOverrides()
            for src, dst, over in ((a, b, None), (b, a, rev)):
                spec = {
                    "rate": entry.rate,
                    "delay": entry.delay,
                    "loss": entry.loss,
                    "reorder": entry.reorder,
                    "queue": entry.queue,
                    "overhead": entry.overhead,
                }
                if over is not None:
                    for key in spec:
                        if getattr(over, key) is not None:
                            spec[key] = getattr(over, key)
                specs.append(spec)
                reorder = spec["reorder"]
                self.links.append(
                    {
                        "name": f"{src}->{dst}",
                        "from": self.index.get(src, -1),
                        "to": self.index.get(dst, -1),
                        "rate_bps": spec["rate"],
                        "delay_ns": spec["delay"],
                        "overhead_bytes": spec["overhead"],
                        "loss": spec["loss"],
                        "reorder": (
                            {"p": reorder.probability, "delay_ns": reorder.delay}
                            if reorder is not None and reorder.probability > 0
                            else None
                        ),
                    }
                )
        self.ends = [(link["from"], link["to"]) for link in self.links]
        self.flows: list[dict[str, Any]] = []
        if any(a < 0 or b < 0 for a, b in self.ends):
            return  # unknown nodes: reported by the validator, nothing to route
        n = len(self.nodes)
        for i, flow in enumerate(sc.flows):
            if flow.from_ not in self.index or flow.to not in self.index:
                continue
            src, dst = self.index[flow.from_], self.index[flow.to]
            fwd = bfs_route(n, self.ends, src, dst, self.forwards)
            rev = bfs_route(n, self.ends, dst, src, self.forwards)
            if fwd is None or rev is None:
                continue
            delays = [link["delay_ns"] for link in self.links]
            base_rtt = route_delay_ns(fwd, delays) + route_delay_ns(rev, delays)
            sender = sc.hosts.get(flow.from_, Host()).sysctl
            receiver = sc.hosts.get(flow.to, Host()).sysctl
            tcp = dict(LINUX_TCP_DEFAULTS)
            tcp.update(sender.to_core_tcp())
            tcp["tcp_rmem"] = list(receiver.tcp_rmem)
            tcp.update(flow.tcp.overrides())
            for name in flow_names(i, flow):
                self.flows.append(
                    {
                        "name": name,
                        "src": src,
                        "dst": dst,
                        "cc": flow.cc or sender.tcp_congestion_control,
                        "start_ns": flow.start,
                        "stop_ns": flow.stop,
                        "app": flow.app.to_core(),
                        "tcp": dict(tcp),
                        "cc_params": flow.cc_params.to_core(),
                        "fwd": fwd,
                        "rev": rev,
                        "base_rtt_ns": base_rtt,
                    }
                )
        for index, (link, spec) in enumerate(zip(self.links, specs, strict=True)):
            link["queue"] = self._queue(index, link, spec["queue"])

    def base_rtt_ns(self, index: int) -> int:
        """The RTT a "bdp" limit of one-way link ``index`` is computed with (see module doc)."""
        crossing = [f["base_rtt_ns"] for f in self.flows if index in f["fwd"] or index in f["rev"]]
        if crossing:
            return max(crossing)
        return 2 * self.links[index]["delay_ns"]

    def bdp_bytes(self, index: int) -> Fraction:
        """rate_bps / 8 * base_rtt, exactly (a Fraction, so rounding is never off by an ulp)."""
        return Fraction(self.links[index]["rate_bps"] * self.base_rtt_ns(index), 8 * 10**9)

    def _queue(self, index: int, link: dict[str, Any], queue: Queue) -> dict[str, Any]:
        limit = queue.limit_spec()
        if limit.unit == "bdp":
            bdp = self.bdp_bytes(index) * Fraction(limit.value)
            wire_packet_bytes = NOMINAL_PACKET_BYTES + link["overhead_bytes"]  # as the serializer counts
            if queue.qdisc == "pfifo":
                return {"kind": "pfifo", "limit_packets": max(1, _round_half_up(bdp / wire_packet_bytes))}
            return {"kind": "bfifo", "limit_bytes": max(wire_packet_bytes, _round_half_up(bdp))}
        if queue.qdisc == "pfifo":
            return {"kind": "pfifo", "limit_packets": int(limit.value)}
        return {"kind": "bfifo", "limit_bytes": int(limit.value)}


def _round_half_up(x: Fraction) -> int:
    return math.floor(x + Fraction(1, 2))

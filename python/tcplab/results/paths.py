"""What a flow's path allows: its payload ceiling, its base RTT and its bottleneck queue.

Path arithmetic on the engine configuration that ran (``Result.config``, the same as
``scenario.resolved.json``), never on the measurements: summary.json's
``payload_ceiling_bps``, the fair share of :mod:`tcplab.results.stuck`, and the reference
lines the views draw (:mod:`tcplab.views.plots`, report.html) all read it from here.

* **Route**: the one-way links a flow's data crosses, and those its ACKs cross, by the same
  static routing the engine uses (:func:`tcplab.routing.bfs_route`; only routers forward).
  The data goes from the side that sends it: the flow's ``src`` (the client, which connects)
  unless ``data_side`` is ``server`` (maerts, bidir's ``.rev``, hls, nfs_stream), when it
  goes ``dst -> src``.
* **Payload ceiling** (bit/s): the most TCP payload the data route can carry. A link sends
  ``rate_bps`` of wire bytes; a full-sized data segment is ``mss`` payload bytes inside
  ``mss + 52`` IP bytes (20 IP + 20 TCP + 12 timestamp option, as the engine builds it:
  ``TCP_IP_HEADER_BYTES`` in crates/tcplab-core/src/packet.rs) plus the link's framing
  ``overhead_bytes`` (14 for Ethernet). So a link's payload rate is
  ``rate_bps * mss / (mss + 52 + overhead_bytes)`` (1448/1514 of the rate on Ethernet with
  the default MSS), and the route's ceiling is the smallest along it. Every shaper on the
  data route lowers it the same way, as each counts whole frames (no stab): a tbf's
  ``rate_bps`` and ``peakrate_bps`` (and those of a tbf child), an fq's ``maxrate_bps``
  (per flow: sch_fq.c's fq_dequeue() paces each flow to it) and a Cilium EDT aggregate
  (``links[i].edt``) that holds the flow's sending pod (bpf/lib/edt.h: the pod's aggregate,
  so the ceiling of one flow alone). Pods' veths are routed through (a node carrying pods
  forwards). Random loss does not lower it here: it is the rate the bottleneck serves, not
  what survives the loss model.
* **Base RTT** (s): the propagation delays of the data route plus those of the ACK route,
  without serialization or queueing: no RTT sample can be below it.
* **Bottleneck**: the data-route link with the smallest payload rate, its shapers included
  (the first along the route on a tie: it is the one whose queue fills).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tcplab.routing import bfs_route, route_delay_ns

__all__ = ["TCP_IP_HEADER_BYTES", "FlowPath", "flow_path", "flow_paths", "link_payload_bps", "shaped_payload_bps"]

#: IP + TCP + timestamp option bytes of a data segment (crates/tcplab-core/src/packet.rs).
TCP_IP_HEADER_BYTES = 20 + 20 + 12


@dataclass(frozen=True)
class FlowPath:
    """The reference values of one flow's path (see the module doc)."""

    flow: str
    data_links: tuple[int, ...]
    ack_links: tuple[int, ...]
    payload_ceiling_bps: float
    base_rtt_s: float
    bottleneck_link: int


def link_payload_bps(link: Mapping[str, Any], mss_bytes: int) -> float:
    """Payload bit/s of full-sized segments on one link: ``rate * mss / (mss + 52 + overhead)``."""
    wire_bytes = mss_bytes + TCP_IP_HEADER_BYTES + int(link.get("overhead_bytes", 0))
    return float(link["rate_bps"]) * mss_bytes / wire_bytes


def _queue_rates_bps(queue: Mapping[str, Any] | None) -> list[float]:
    """The rates a qdisc (and its child) hold every packet of one flow to: tbf ``rate`` and
    ``peakrate``, fq ``maxrate``."""
    if not queue:
        return []
    kind = queue.get("kind")
    rates: list[float] = []
    if kind == "tbf":
        rates += [float(queue[k]) for k in ("rate_bps", "peakrate_bps") if queue.get(k)]
        rates += _queue_rates_bps(queue.get("child"))
    elif kind == "fq" and queue.get("maxrate_bps"):
        rates.append(float(queue["maxrate_bps"]))
    return rates


def shaped_payload_bps(link: Mapping[str, Any], mss_bytes: int, src_node: int | None = None) -> float:
    """Payload bit/s one flow gets through one link: its line rate, its qdisc's rates (tbf
    rate/peakrate, fq maxrate) and the EDT aggregate holding ``src_node``, the smallest,
    each ``x mss / (mss + 52 + overhead)``."""
    rates = [float(link["rate_bps"]), *_queue_rates_bps(link.get("queue"))]
    for edt in link.get("edt") or []:
        if src_node is not None and src_node in [int(n) for n in edt.get("nodes", [])]:
            rates.append(float(edt["rate_bps"]))
    return link_payload_bps({**link, "rate_bps": min(rates)}, mss_bytes)


def flow_path(config: Mapping[str, Any], flow: Mapping[str, Any]) -> FlowPath | None:
    """The path of one flow of ``config`` (an engine configuration), or None if unrouted."""
    return _Paths(config).of(flow)


def flow_paths(config: Mapping[str, Any]) -> dict[str, FlowPath]:
    """``{flow name: FlowPath}`` for every routed flow of an engine configuration.

    The route search runs once per distinct path (ends, data side, MSS), not once per flow:
    a workload's 10,000 connections between two hosts share one."""
    paths = _Paths(config)
    out = {}
    for flow in config.get("flows", []):
        path = paths.of(flow)
        if path is not None:
            out[path.flow] = path
    return out


class _Paths:
    """The routing facts of one configuration, read once, and the paths found so far."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.nodes = config["nodes"]
        self.links = config["links"]
        self.ends = [(int(link["from"]), int(link["to"])) for link in self.links]
        # Routers forward, and so do hosts that carry pods (`forwarding`, as the engine's sim.rs).
        self.forwards = [n.get("kind", "host") == "router" or bool(n.get("forwarding")) for n in self.nodes]
        self.delays = [int(link["delay_ns"]) for link in self.links]
        self.found: dict[tuple[int, int, int], FlowPath | None] = {}

    def of(self, flow: Mapping[str, Any]) -> FlowPath | None:
        src, dst = int(flow["src"]), int(flow["dst"])
        if str(flow.get("data_side", "client")).lower() == "server":
            # The server sends the data (engine config.rs FlowConfig.data_side): route dst -> src.
            src, dst = dst, src
        mss = int(flow.get("tcp", {}).get("mss_bytes", 1448))
        key = (src, dst, mss)
        if key not in self.found:
            self.found[key] = self._path(src, dst, mss)
        p = self.found[key]
        if p is None:
            return None
        return FlowPath(
            str(flow["name"]), p.data_links, p.ack_links, p.payload_ceiling_bps, p.base_rtt_s, p.bottleneck_link
        )

    def _path(self, src: int, dst: int, mss: int) -> FlowPath | None:
        fwd = bfs_route(len(self.nodes), self.ends, src, dst, self.forwards)
        rev = bfs_route(len(self.nodes), self.ends, dst, src, self.forwards)
        if not fwd or rev is None:
            return None
        rates = [shaped_payload_bps(self.links[i], mss, src) for i in fwd]
        ceiling = min(rates)
        return FlowPath(
            flow="",
            data_links=tuple(fwd),
            ack_links=tuple(rev),
            payload_ceiling_bps=ceiling,
            base_rtt_s=(route_delay_ns(fwd, self.delays) + route_delay_ns(rev, self.delays)) / 1e9,
            bottleneck_link=fwd[rates.index(ceiling)],
        )

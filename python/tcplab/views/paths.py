"""What a flow's path allows: its payload ceiling, its base RTT and its bottleneck queue.

The reference lines of the plots, computed from the engine configuration that ran
(``Result.config``, the same as ``scenario.resolved.json``), never from the measurements:

* **Route**: the one-way links a flow's data crosses, and those its ACKs cross, by the same
  static routing the engine uses (:func:`tcplab.routing.bfs_route`; only routers forward).
* **Payload ceiling** (bit/s): the most TCP payload the data route can carry. A link sends
  ``rate_bps`` of wire bytes; a full-sized data segment is ``mss`` payload bytes inside
  ``mss + 52`` IP bytes (20 IP + 20 TCP + 12 timestamp option, as the engine builds it:
  ``TCP_IP_HEADER_BYTES`` in crates/tcplab-core/src/packet.rs) plus the link's framing
  ``overhead_bytes`` (14 for Ethernet). So a link's payload rate is
  ``rate_bps * mss / (mss + 52 + overhead_bytes)`` (1448/1514 of the rate on Ethernet with
  the default MSS), and the route's ceiling is the smallest along it. Random loss does not
  lower it here: it is the rate the bottleneck serves, not what survives the loss model.
* **Base RTT** (s): the propagation delays of the data route plus those of the ACK route,
  without serialization or queueing: no RTT sample can be below it.
* **Bottleneck**: the data-route link with the smallest payload rate (the first along the
  route on a tie: it is the one whose queue fills).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tcplab.routing import bfs_route, route_delay_ns

__all__ = ["TCP_IP_HEADER_BYTES", "FlowPath", "flow_path", "flow_paths", "link_payload_bps"]

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


def flow_path(config: Mapping[str, Any], flow: Mapping[str, Any]) -> FlowPath | None:
    """The path of one flow of ``config`` (an engine configuration), or None if unrouted."""
    nodes = config["nodes"]
    links = config["links"]
    ends = [(int(link["from"]), int(link["to"])) for link in links]
    forwards = [n.get("kind", "host") == "router" for n in nodes]
    src, dst = int(flow["src"]), int(flow["dst"])
    fwd = bfs_route(len(nodes), ends, src, dst, forwards)
    rev = bfs_route(len(nodes), ends, dst, src, forwards)
    if not fwd or rev is None:
        return None
    mss = int(flow.get("tcp", {}).get("mss_bytes", 1448))
    rates = [link_payload_bps(links[i], mss) for i in fwd]
    ceiling = min(rates)
    delays = [int(link["delay_ns"]) for link in links]
    return FlowPath(
        flow=str(flow["name"]),
        data_links=tuple(fwd),
        ack_links=tuple(rev),
        payload_ceiling_bps=ceiling,
        base_rtt_s=(route_delay_ns(fwd, delays) + route_delay_ns(rev, delays)) / 1e9,
        bottleneck_link=fwd[rates.index(ceiling)],
    )


def flow_paths(config: Mapping[str, Any]) -> dict[str, FlowPath]:
    """``{flow name: FlowPath}`` for every routed flow of an engine configuration."""
    out = {}
    for flow in config.get("flows", []):
        path = flow_path(config, flow)
        if path is not None:
            out[path.flow] = path
    return out

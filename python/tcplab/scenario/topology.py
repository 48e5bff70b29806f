"""The resolved network: nodes, one-way links with queue limits, expanded flows with routes.

"bdp" queue limits are resolved here (see :mod:`tcplab.scenario` for the formula).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from tcplab.routing import bfs_route, route_delay_ns
from tcplab.scenario.bandwidth import CILIUM_FQ, cilium_edt, cni_tbf
from tcplab.scenario.flows import expand_flow, senders_of
from tcplab.scenario.hosts import LINUX_TCP_DEFAULTS
from tcplab.scenario.links import LinkOverrides, LossSpec
from tcplab.scenario.pods import VETH_QUEUE, VETH_RATE_BPS, Pod
from tcplab.scenario.queues import NOMINAL_PACKET_BYTES, QueueSpec

if TYPE_CHECKING:
    from tcplab.scenario.model import Scenario


class _Topology:
    """Nodes, one-way links with resolved queue limits, and expanded flows with routes.

    Links: the scenario's links in file order (entry ``i`` makes links ``2i`` and ``2i+1``),
    then each pod's veth pair (pod -> node, node -> pod), in ``pods:`` order.

    Built in the order the parts depend on each other: the nodes and which of them forward,
    the one-way links (:meth:`_scenario_links`, :meth:`_pod_links`), the flows expanded into
    the engine's flows and apps with their routes (:meth:`_expand_flows`), and last each
    link's qdisc (:meth:`_attach_queues`), since a "bdp" limit needs the RTTs of the flows
    that cross the link.
    """

    def __init__(self, sc: Scenario):
        self.nodes = sc.node_names
        self.index = {n: i for i, n in enumerate(self.nodes)}
        # Routers forward, and so do the nodes that carry pods (ip_forward = 1); other hosts do
        # not (net.ipv4.ip_forward = 0), as in the engine.
        routers = set(sc.routers)
        self.pod_nodes = {pod.node for pod in sc.pods.values()}
        self.forwards = [n in routers or n in self.pod_nodes for n in self.nodes]
        self.links: list[dict[str, Any]] = []
        specs = self._scenario_links(sc)
        self.user_links = len(self.links)
        specs += self._pod_links(sc)
        self.ends = [(link["from"], link["to"]) for link in self.links]
        self.flows: list[dict[str, Any]] = []
        if any(a < 0 or b < 0 for a, b in self.ends):
            return  # unknown nodes: reported by the validator, nothing to route
        self._delays_ns = [link["delay_ns"] for link in self.links]
        self._routes: dict[tuple[int, int], tuple[list[int], list[int], int] | None] = {}
        #: Engine applications: {name, flows (global indices), spec}; and per flows: entry,
        #: the indices of its engine flows (for the checks that speak of the entry).
        self.apps: list[dict[str, Any]] = []
        self.entry_flows: list[list[int]] = []
        self._expand_flows(sc)
        self._attach_queues(sc, specs)

    # -- links ----------------------------------------------------------------------------

    def _one_way_link(self, src: str, dst: str, **fields: Any) -> dict[str, Any]:
        """A one-way link ``src -> dst`` (node indices -1 when unknown: the validator says so)."""
        link = {"name": f"{src}->{dst}", "from": self.index.get(src, -1), "to": self.index.get(dst, -1)}
        link.update(fields)
        self.links.append(link)
        return link

    def _scenario_links(self, sc: Scenario) -> list[dict[str, Any]]:
        """The two one-way links of each ``links:`` entry (``reverse:`` overriding b -> a);
        their specs, for :meth:`_attach_queues`."""
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
                    "bleach_ecn": entry.bleach_ecn,
                }
                if over is not None:
                    for key in spec:
                        if getattr(over, key) is not None:
                            spec[key] = getattr(over, key)
                spec["src"] = src
                spec["dst"] = dst
                specs.append(spec)
                reorder = spec["reorder"]
                self._one_way_link(
                    src,
                    dst,
                    rate_bps=spec["rate"],
                    delay_ns=spec["delay"],
                    overhead_bytes=spec["overhead"],
                    loss=spec["loss"],
                    reorder=(
                        {"p": reorder.probability, "delay_ns": reorder.delay}
                        if reorder is not None and reorder.probability > 0
                        else None
                    ),
                    bleach_ecn=bool(spec["bleach_ecn"]),
                )
        return specs

    def _pod_links(self, sc: Scenario) -> list[dict[str, Any]]:
        """Each pod's veth pair (pod -> node, node -> pod); their specs hold the veth's qdisc."""
        specs = []
        for name, pod in sc.pods.items():
            for src, dst, queue in (
                (name, pod.node, pod_egress_queue(pod)),
                (pod.node, name, pod_ingress_queue(pod)),
            ):
                specs.append({"src": src, "dst": dst, "veth_queue": queue})
                self._one_way_link(
                    src,
                    dst,
                    rate_bps=VETH_RATE_BPS,
                    delay_ns=0,
                    overhead_bytes=14,
                    loss=LossSpec(kind="none"),
                    reorder=None,
                )
        return specs

    # -- flows ----------------------------------------------------------------------------

    def _route(self, src: int, dst: int) -> tuple[list[int], list[int], int] | None:
        """``(fwd, rev, base RTT ns)`` between two nodes (:func:`tcplab.routing.bfs_route`
        both ways; the RTT is the propagation delays of both), or None if either is
        unroutable."""
        if (src, dst) not in self._routes:
            n = len(self.nodes)
            fwd = bfs_route(n, self.ends, src, dst, self.forwards)
            rev = bfs_route(n, self.ends, dst, src, self.forwards)
            self._routes[src, dst] = (
                None
                if fwd is None or rev is None
                else (fwd, rev, route_delay_ns(fwd, self._delays_ns) + route_delay_ns(rev, self._delays_ns))
            )
        return self._routes[src, dst]

    def _expand_flows(self, sc: Scenario) -> None:
        """Each ``flows:`` entry whose ends are known and routed, as its engine flows
        (:func:`~tcplab.scenario.flows.expand_flow`'s connections) and apps. The data's
        sender and receiver: tcp_rmem from the receiving host, every other setting (and the
        default cc) from the sending host (see tcplab.scenario)."""
        tcp_of: dict[tuple[str, str, int], dict[str, Any]] = {}
        cc_of: dict[tuple[str, str, int], str] = {}
        receiver_cc_of: dict[tuple[str, str, int], str] = {}
        cc_params_of: dict[tuple[str, str, int], dict[str, Any]] = {}
        for i, flow in enumerate(sc.flows):
            self.entry_flows.append([])
            senders = senders_of(flow)
            if not senders or any(h not in self.index for h in senders) or flow.to not in self.index:
                continue
            if any(self._route(self.index[h], self.index[flow.to]) is None for h in senders):
                continue
            conns, workloads = expand_flow(i, flow)
            first = len(self.flows)
            for c in conns:
                src, dst = self.index[c.sender], self.index[flow.to]
                fwd, rev, base_rtt = self._route(src, dst)  # type: ignore[misc]
                data_src, data_dst = (c.sender, flow.to) if c.data_side == "client" else (flow.to, c.sender)
                key = (data_src, data_dst, i)
                if key not in tcp_of:
                    tcp = dict(LINUX_TCP_DEFAULTS)
                    tcp.update(sc.sysctl_of(data_src).to_core_tcp())
                    tcp["tcp_rmem"] = list(sc.sysctl_of(data_dst).tcp_rmem)
                    tcp.update(flow.tcp.overrides())
                    # tcp_ecn by role, not by the data's direction (hosts.ENDPOINT_SYSCTLS): the
                    # client's and the server's, and the client's fallback
                    client, server = sc.sysctl_of(c.sender), sc.sysctl_of(flow.to)
                    tcp["tcp_ecn"] = [client.tcp_ecn, server.tcp_ecn]
                    tcp["tcp_ecn_fallback"] = client.tcp_ecn_fallback
                    tcp_of[key] = tcp
                    cc_of[key] = flow.cc or sc.default_cc_of(data_src)
                    # a flow's own cc is set on both its sockets (as iperf3 -C does); without one,
                    # each end runs its host's default, the data receiver too (its requests, ACKs)
                    receiver_cc_of[key] = flow.cc or sc.default_cc_of(data_dst)
                    cc_params_of[key] = flow.cc_params.to_core()
                self.entry_flows[i].append(len(self.flows))
                self.flows.append(
                    {
                        "name": c.name,
                        "src": src,
                        "dst": dst,
                        "cc": cc_of[key],
                        **({"receiver_cc": receiver_cc_of[key]} if receiver_cc_of[key] != cc_of[key] else {}),
                        "start_ns": c.start_ns,
                        "stop_ns": flow.stop,
                        "app": c.app,
                        "tcp": dict(tcp_of[key]),
                        "cc_params": dict(cc_params_of[key]),
                        "data_side": c.data_side,
                        "reader": flow.reader.to_core(),
                        "sample": c.sample,
                        "nodelay": bool(flow.tcp.nodelay),
                        "fwd": fwd,
                        "rev": rev,
                        "base_rtt_ns": base_rtt,
                    }
                )
            for w in workloads:
                self.apps.append(
                    {"name": w.name, "flows": [first + k for k in w.connections], "spec": w.spec, "entry": i}
                )

    # -- queues ---------------------------------------------------------------------------

    def _attach_queues(self, sc: Scenario, specs: list[dict[str, Any]]) -> None:
        """Each link's qdisc: a veth's own (orphaning the skb, unless Cilium's BPF host
        routing keeps it), else :meth:`_queue_spec`'s with "bdp" limits resolved; the EDT
        aggregates of Cilium's Bandwidth Manager on a managed node's uplinks."""
        # Cilium's Bandwidth Manager: per node, the pods it shapes (EDT on the node's uplinks).
        managed: dict[str, list[tuple[int, int]]] = {}
        for name, pod in sc.pods.items():
            if pod.mode == "bandwidth-manager":
                entry = managed.setdefault(pod.node, [])
                if pod.egress_bandwidth is not None:
                    entry.append((self.index[name], pod.egress_bandwidth))
        for index, (link, spec) in enumerate(zip(self.links, specs, strict=True)):
            if "veth_queue" in spec:
                link["queue"] = spec["veth_queue"]
                # The crossing into the other namespace orphans the skb (the node's
                # ip_rcv_core()): the sender's TSQ budget comes back there, not after the
                # node's fq.
                link["orphan"] = True
                pod = sc.pods.get(spec["src"])
                if pod is not None and pod.mode == "bandwidth-manager" and sc.bandwidth_manager.host_routing == "bpf":
                    # Cilium's BPF host routing takes a Bandwidth Manager pod's packets to the
                    # device with skb->sk kept: TSQ counts them until they leave it.
                    link["keeps_sk"] = True
                elif pod is not None and pod.mode == "cni" and pod.egress_bandwidth is not None:
                    # The CNI plugin's egress tbf (on the IFB) queues the pod's own skbs
                    # (act_mirred redirects the skb, not a clone): TSQ counts them until the
                    # tbf releases them to the node's ip_rcv_core(), which orphans them.
                    link["orphan_after_queue"] = True
                continue
            uplink = spec["src"] in managed
            link["queue"] = self._queue(index, link, self._queue_spec(sc, spec, uplink))
            if uplink and managed[spec["src"]]:
                ce = sc.bandwidth_manager.ce_threshold
                link["edt"] = [cilium_edt(pod, rate, ce) for pod, rate in managed[spec["src"]]]

    @staticmethod
    def _queue_spec(sc: Scenario, spec: dict[str, Any], uplink: bool) -> QueueSpec | None:
        """The qdisc of a scenario link: its own ``queue:``; on the uplink of a node under
        Cilium's Bandwidth Manager, Cilium's fq; the sending host's ``qdisc`` or
        ``default_qdisc``; else None (pfifo_fast: pfifo of 1000)."""
        if spec["queue"] is not None:
            return spec["queue"]
        if uplink:
            return QueueSpec(qdisc="fq", params=dict(CILIUM_FQ))
        host = sc.hosts.get(spec["src"])
        return host.egress_queue() if host is not None else None

    def base_rtt_ns(self, index: int) -> int:
        """The RTT a "bdp" limit of one-way link ``index`` is computed with (see module doc)."""
        crossing = [f["base_rtt_ns"] for f in self.flows if index in f["fwd"] or index in f["rev"]]
        if crossing:
            return max(crossing)
        return 2 * self.links[index]["delay_ns"]

    def bdp_bytes(self, index: int) -> Fraction:
        """rate_bps / 8 * base_rtt, exactly (a Fraction, so rounding is never off by an ulp)."""
        return Fraction(self.links[index]["rate_bps"] * self.base_rtt_ns(index), 8 * 10**9)

    def _queue(self, index: int, link: dict[str, Any], queue: QueueSpec | None) -> dict[str, Any]:
        if queue is None:
            queue = QueueSpec()
        if not queue.is_fifo():
            return queue.to_core()
        limit = queue.limit_spec()
        if limit.unit == "bdp":
            bdp = self.bdp_bytes(index) * Fraction(limit.value)
            wire_packet_bytes = NOMINAL_PACKET_BYTES + link["overhead_bytes"]  # as the serializer counts
            if queue.qdisc == "pfifo":
                return {"kind": "pfifo", "limit_packets": max(1, _round_half_up(bdp / wire_packet_bytes))}
            return {"kind": "bfifo", "limit_bytes": max(wire_packet_bytes, _round_half_up(bdp))}
        return queue.to_core()


def pod_egress_queue(pod: Pod) -> dict[str, Any]:
    """The pod -> node veth link's qdisc: the CNI plugin's IFB tbf (the extra hop), else noqueue."""
    if pod.mode == "cni" and pod.egress_bandwidth is not None:
        return {"kind": "tbf", **cni_tbf(pod.egress_bandwidth, pod.runtime)}
    return dict(VETH_QUEUE)


def pod_ingress_queue(pod: Pod) -> dict[str, Any]:
    """The node -> pod veth link's qdisc: the CNI plugin's tbf on the host-side veth, else noqueue."""
    if pod.mode == "cni" and pod.ingress_bandwidth is not None:
        return {"kind": "tbf", **cni_tbf(pod.ingress_bandwidth, pod.runtime)}
    return dict(VETH_QUEUE)


def _round_half_up(x: Fraction) -> int:
    return math.floor(x + Fraction(1, 2))

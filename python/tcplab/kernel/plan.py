"""The kernel-mode topology of a scenario, as data: :func:`make_plan` -> :class:`Plan` (PURE).

``make_plan(config, env, options)`` reads the resolved engine config (``Scenario.to_core()``)
and the probed :class:`~tcplab.kernel.env.KernelEnv` and returns every name, address, route,
sysctl, tc and nft command the :class:`~tcplab.kernel.testbed.Testbed` will run, in order,
without running anything. What the kernel path cannot build raises
:class:`~tcplab.kernel.errors.KernelUnsupported` here, before anything exists.

The model (ARCH11, "The model of a kernel run"):

* Node number ``i`` (hosts, then routers, the engine's order) -> network namespace
  ``{prefix}-{node}`` (:mod:`tcplab.kernel.names`: no node's name meets a wire's); its
  address ``tcplab.results.ss.node_address(i)`` is a /32 on ``lo``
  and every route names it as the source, so sockets of both worlds print the same addresses.
* Link entry ``K`` (one-way links ``2K`` a->b and ``2K+1`` b->a) -> a veth pair. Each node's
  devices are ``eth0``, ``eth1``, ... in link order (:func:`tcplab.results.tc.link_devices`).
  Transfer nets: ``172.16.0.0/12``, 8 addresses per entry: ``+1``/``+2`` a /30 on the a side
  (``+1`` node a, ``+2`` the wire namespace or node b), ``+5``/``+6`` a /30 on the b side
  when there is a wire namespace (``+5`` node b, ``+6`` the wire).
* Wire namespace ``{prefix}:w{K}`` when a direction of entry K has a delay >= 500 us or a
  loss: the two veths end in it (``wa`` towards a, ``wb`` towards b); it forwards by policy
  routing on the input device. Where the kernel has sch_netem (``KernelOptions.delay``
  "auto"), the delay is a ``netem delay`` root qdisc on the wire's egress device (``wb`` for
  a->b); otherwise (this project's VMs) ``wa`` -> TUN ``tab`` (the delay line reads it,
  holds the packet ``delay_ns``, writes it back into ``tab``) -> ``wb``, and ``wb`` ->
  ``tba`` -> ``wa``.
  A direction without delay (< 500 us: left to the veth) goes ``wa`` -> ``wb`` directly.
  Random loss: an nft rule in the forward chain, on packets that came in from the link's
  sender side (``iifname "wa"`` for a->b), i.e. after the sender's queue, as the simulator
  loses packets after the queue: ``numgen random mod 1000000 < p * 1e6 counter drop``;
  the loss filter ``data_only`` adds ``ip length > 80`` (a pure ACK with timestamps and three
  SACK blocks is 20 + 20 + 12 + 28 = 80 bytes: an approximation: a data segment of less than
  29 bytes of payload is spared), ``min_ip_bytes`` adds ``ip length >= N``.
  Each wire packet is forwarded twice (TTL - 2; ``traceroute`` sees the wire as hops).
* Where the delay line's writes are processed (receive packet steering): a write into a TUN
  runs the packet's whole way on in the writer's system call (Linux v6.12
  drivers/net/tun.c: tun_get_user() -> tun_rx_batched() -> netif_receive_skb() under
  local_bh_disable(): the wire's forwarding, the veth's netif_rx(), and the softirq that
  follows: the next node's routing, its shaper, the receiving host's TCP and the ACK it
  sends). On the line's CPU that work delays the line's next packets: at 1 Gbit/s it took
  most of the CPU and the line fell 10 ms behind (issue 23). So the node-side veth of every
  wire with a delay line gets ``rps_cpus`` = every CPU but the line's
  (``/sys/class/net/DEV/queues/rx-0/rps_cpus``; net/core/dev.c: netif_rx_internal() ->
  get_rps_cpu() queues the packet to that CPU's backlog): the line's write ends at the
  veth and the rest runs on the other CPUs. Nothing to steer to on a 1-CPU machine or when
  the line is not pinned to an online CPU; a kernel without CONFIG_RPS has no such file
  and keeps the old way.
* Rate and queue (Linux v6.12 net/sched/sch_tbf.c, iproute2 tc/q_tbf.c): the egress device of
  a link whose sender is a ROUTER, or of a host-to-host link, gets a root ``tbf`` at the link
  rate, bucket ``max(2 x 1514 B, rate x 100 us)`` (a link that serialises one frame at a
  time has no bucket; two frames is the least tbf accepts without starving), with the
  scenario's queue as its child (``pfifo limit N``, ``bfifo limit B``, a nested ``tbf``).
  The bucket lets the first frames of a burst into an idle link cross the veth together,
  where the link would have taken a frame time for each (2.4 ms per frame at 5 Mbit/s, on
  every round trip of a flow of two-segment skbs: docs/kernel-pin.md, departure 4). Where
  the link's direction has a delay line, the line serialises its packets at the link rate
  (``--tun NAME:DELAY:RATE:OVERHEAD``, crates/tcplab-delayline/src/serializer.rs) before
  their delay, so they arrive as from a link of that rate; without a delay line (a delay
  below 500 us) the bucket's frames arrive together.
  tbf counts ``qdisc_pkt_len`` = ``skb->len``, which on a veth includes the 14-byte Ethernet
  header: the simulator's 1514 B per full frame, so ``stab overhead (overhead_bytes - 14)
  linklayer ethernet`` is added only when a link's overhead differs from 14.
  A host's link to a router gets the same shaper (the host's scenario queue as the child,
  TSQ then sees the shaper as it sees a NIC) when it is the narrowest link (rate <= every
  other link's rate) of the data or ACK route of some flow (:func:`shaped_host_links`;
  builtin:maerts: the server's own 50 Mbit/s link). A host link faster than its routes'
  narrowest link keeps the scenario's queue as the root qdisc, without a rate: the veth is
  faster still, the host does not queue there, nor does it in the simulator (documented).
* ECN marking (issue 28) where the kernel lacks sch_fq_codel: a router's link whose queue is
  fq_codel with ``ce_threshold`` becomes the delay line's step marker
  (:func:`line_markers`; crates/tcplab-delayline/src/marker.rs): no tbf on the router's
  egress (a root ``pfifo`` of fq_codel's limit, which never holds a packet: the veth takes
  each at once), and the wire's TUN serialises at the link rate with ``--ce-threshold``:
  the link's queue is the line's, and every ECN-capable packet that waited more than the
  threshold for the wire leaves CE, as a one-flow fq_codel marks it. Only where that is the
  same queue: ``ecn`` on, ``ce_threshold`` at most CoDel's ``target`` (then the control
  law marks nothing the step does not), one flow through the link, a delay line on it;
  anything else is refused with the reason. What differs (fq_codel's limit, CoDel's drops
  of not-ECT packets, the queue not in tc's counters) is a departure of the run and is in
  docs/kernel-pin.md.
* Sysctls per namespace: ``ip_forward`` (routers and wires 1, hosts 0), ``rp_filter`` 0
  (routes need not be symmetric), and per host the flows' ``tcp`` settings: ``tcp_rmem`` on
  the data's receiver, ``tcp_ecn`` on the client and the server (each its own) and
  ``tcp_ecn_fallback`` on the client, every other one on the data's sender (as
  :mod:`tcplab.scenario.topology` resolves them); ``initial_cwnd`` and ``rto_min`` as route
  attributes (``initcwnd``, ``rto_min lock``) when they differ from Linux's defaults
  (TCP_INIT_CWND 10, TCP_RTO_MIN 200 ms); the MSS from the MTU (mss + 52: IPv4 20, TCP 20,
  timestamps 12). Nothing is set in the initial namespace.
* Offloads: ``ethtool -K DEV tso off gso off gro off`` on every veth and TUN, but ``gro on``
  on a host's own device when its scenario has GRO on (``offload: {gro}``, on by default as in
  Linux). ``tso``/``gso`` stay off on a host's device whatever its ``offload:`` says: TCP
  still builds GSO skbs (Linux v6.12 net/core/sock.c: sk_setup_caps() forces NETIF_F_GSO for
  TCP) and the device cuts them in software after the host's qdisc (net/core/dev.c:
  validate_xmit_skb()), which puts on the veth the MSS frames a TSO NIC puts on a wire; with
  tso on, a veth would pass each skb whole into the next namespace, whose queues would then
  count 64 KB skbs no wire carries. What ``tso`` changes in tcplab, the CPU the cutting
  costs, kernel mode does not measure.
* Flows: the client (flow ``src``) connects from ``node_address(src):32768 + i`` to the
  server (flow ``dst``) at ``node_address(dst):PORT`` (5201 bulk/maerts, 8080 rr:
  :data:`tcplab.results.ss.SERVER_PORTS`); ``data_side`` says which side writes.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from tcplab.kernel.delayline import tun_spec
from tcplab.kernel.env import KernelEnv
from tcplab.kernel.errors import KernelError, KernelUnsupported
from tcplab.kernel.names import NAME_MAX, check_prefix, max_node_name, node_ns, wire_ns
from tcplab.kernel.options import KernelOptions
from tcplab.results.ss import CLIENT_PORT_BASE, node_address, server_port
from tcplab.results.tc import link_devices
from tcplab.routing import bfs_route

__all__ = [
    "Plan",
    "NodeNs",
    "VethPair",
    "WireNs",
    "FlowPlan",
    "make_plan",
    "line_markers",
    "shaped_host_links",
    "WIRE_MIN_DELAY_NS",
    "FRAME_BYTES",
    "DATA_ONLY_MIN_IP_BYTES",
]

#: One-way delays below this are left to the veth (a few us): no wire namespace for them.
WIRE_MIN_DELAY_NS = 500_000
#: A full-size frame on the wire: 1500 (IP) + 14 (Ethernet header), what tbf counts on a veth.
FRAME_BYTES = 1514
#: ``data_only`` loss filter: IP packets longer than this carry data (module doc).
DATA_ONLY_MIN_IP_BYTES = 81
#: Linux's TCP_INIT_CWND and TCP_RTO_MIN (include/net/tcp.h).
LINUX_INIT_CWND = 10
LINUX_RTO_MIN_MS = 200
#: IPv4 + TCP + timestamp option: MTU = MSS + 52.
TCP_IP_TS_HEADER_BYTES = 52
DEFAULT_MSS_BYTES = 1448
#: The transfer nets (module doc).
TRANSFER_BASE = ipaddress.IPv4Address("172.16.0.0")
TRANSFER_ADDRS_PER_ENTRY = 8
MAX_LINK_ENTRIES = (1 << 20) // TRANSFER_ADDRS_PER_ENTRY
#: Apps kernel mode runs (k3's agent): bulk (maerts = bulk with data_side server) and rr.
SUPPORTED_APPS = ("bulk", "bulk_bytes", "rr")  # bulk_bytes: a bulk (or maerts) flow with ``bytes:``
#: Flow ``tcp`` keys that are sysctls of the data sender's namespace, and their
#: /proc/sys/net/ipv4 names (tcp_min_rtt_wlen is in seconds in both).
SENDER_SYSCTLS = {
    "tcp_wmem": "tcp_wmem",
    "tcp_slow_start_after_idle": "tcp_slow_start_after_idle",
    "tcp_early_retrans": "tcp_early_retrans",
    "tcp_recovery": "tcp_recovery",
    "tcp_frto": "tcp_frto",
    "tcp_reordering": "tcp_reordering",
    "tcp_max_reordering": "tcp_max_reordering",
    "tcp_min_rtt_wlen_s": "tcp_min_rtt_wlen",
    "tcp_limit_output_bytes": "tcp_limit_output_bytes",
    "tcp_pacing_ss_ratio": "tcp_pacing_ss_ratio",
    "tcp_pacing_ca_ratio": "tcp_pacing_ca_ratio",
    "tcp_moderate_rcvbuf": "tcp_moderate_rcvbuf",
    "tcp_comp_sack_delay_ns": "tcp_comp_sack_delay_ns",
    "tcp_comp_sack_nr": "tcp_comp_sack_nr",
    "tcp_min_tso_segs": "tcp_min_tso_segs",
    "tcp_tso_rtt_log": "tcp_tso_rtt_log",
}
RECEIVER_SYSCTLS = {"tcp_rmem": "tcp_rmem"}
#: Flow ``tcp`` keys that are sysctls by the role of each end (tcplab.scenario.hosts.
#: ENDPOINT_SYSCTLS): ``tcp_ecn`` is ``[client, server]``, one value per namespace;
#: ``tcp_ecn_fallback`` is the client's.
ENDPOINT_SYSCTLS = {"tcp_ecn": "tcp_ecn", "tcp_ecn_fallback": "tcp_ecn_fallback"}
#: ``tcp`` keys handled elsewhere (route attributes, MTU) or checked against a default.
_TCP_OTHER = {"mss_bytes", "initial_cwnd", "rto_min_ms", "fq_pacing", "max_pacing_rate_bytes_per_sec"}
_U64_MAX = (1 << 64) - 1
#: CUBIC's module parameters the engine config carries (name in cc_params = module name).
CUBIC_PARAMS = (
    "hystart",
    "hystart_detect",
    "hystart_low_window",
    "hystart_ack_delta_us",
    "fast_convergence",
    "tcp_friendliness",
    "beta",
    "bic_scale",
    "initial_ssthresh",
)


@dataclass
class NodeNs:
    """One node's namespace: its address (a /32 on lo) and sysctls."""

    node: str
    index: int
    kind: str  # "host" | "router"
    ns: str
    address: str
    sysctls: dict[str, str] = field(default_factory=dict)


@dataclass
class VethPair:
    """A veth: ``dev`` in ``ns`` (address ``addr``, a /30) and ``peer_dev`` in ``peer_ns``."""

    ns: str
    dev: str
    addr: str
    peer_ns: str
    peer_dev: str
    peer_addr: str
    mtu: int
    entry: int


@dataclass
class WireTun:
    """One direction of a wire through the delay line: TUN ``name`` holding ``delay_ns``,
    after serialising each packet at ``rate_bps`` with ``overhead_bytes`` of framing when the
    link's rate is shaped by a tbf (0: not serialised; module doc, "Rate and queue")."""

    name: str
    delay_ns: int
    link: int  # the one-way link index
    rate_bps: int = 0
    overhead_bytes: int = 0
    #: the step marker's threshold (``--ce-threshold``; :func:`line_markers`), 0: none
    ce_threshold_ns: int = 0

    def spec(self) -> str:
        """The delay line's ``--tun`` value (and its ``--ce-threshold`` when it marks)."""
        text = tun_spec(self.name, self.delay_ns, self.rate_bps, self.overhead_bytes)
        return text + (f" --ce-threshold {self.name}:{self.ce_threshold_ns}" if self.ce_threshold_ns else "")


@dataclass
class WireNs:
    """A wire namespace between the two ends of link entry ``entry``."""

    ns: str
    entry: int
    links: tuple[int, int]
    tuns: list[WireTun]
    nft: str | None  # the nft ruleset (loss), or None
    sysctls: dict[str, str] = field(default_factory=dict)
    #: Policy routes run with the other commands (the directions without a TUN, and the
    #: tables the TUNs' output is looked up in).
    routes: list[list[str]] = field(default_factory=list)
    #: netem qdiscs on the wire's egress devices (kernels with sch_netem; then no TUNs).
    netem: list[list[str]] = field(default_factory=list)
    #: Commands run once the delay line's TUNs exist (bring them up, offloads, routes).
    tun_commands: list[list[str]] = field(default_factory=list)
    stats_file: str = ""


@dataclass
class FlowPlan:
    """One flow's two sockets: the server listens, the client connects."""

    index: int
    name: str
    client_node: str
    client_ns: str
    client_addr: str
    client_port: int
    server_node: str
    server_ns: str
    server_addr: str
    server_port: int
    cc: str
    app: dict[str, Any]
    start_ns: int
    stop_ns: int
    data_side: str  # "client" | "server": who writes
    #: The data receiver's cc (its host's tcp_congestion_control): ``cc`` unless it differs.
    receiver_cc: str = ""
    #: TCP_NODELAY on both sockets.
    nodelay: bool = False

    def cc_of(self, role: str) -> str:
        """The cc of the ``client`` or ``server`` socket: the data sender runs ``cc``."""
        sends = (role == "client") == (self.data_side == "client")
        return self.cc if sends or not self.receiver_cc else self.receiver_cc


@dataclass
class Plan:
    """Everything a kernel run creates, in the order the Testbed creates it."""

    prefix: str
    nodes: list[NodeNs]
    veths: list[VethPair]
    wires: list[WireNs]
    flows: list[FlowPlan]
    #: Commands after the namespaces exist, in order: links, addresses, sysctls, offloads,
    #: routes, qdiscs, nft (each an argv list; all ``ip -n``/``tc -n``/``ip netns exec``).
    commands: list[list[str]]
    #: (ns, dev) -> the tc commands that set that device's qdiscs (also inside ``commands``).
    tc: dict[tuple[str, str], list[list[str]]]
    #: ns -> the egress devices with a scenario queue, for the queue sampler: (dev, link index).
    queue_devices: dict[str, list[tuple[str, int]]]
    #: User-visible departures of this run from the simulation, one line each.
    departures: list[str]
    duration_ns: int
    sample_interval_ns: int

    @property
    def namespaces(self) -> list[str]:
        """Every namespace the run creates: nodes first, then wires."""
        return [n.ns for n in self.nodes] + [w.ns for w in self.wires]

    def ns_of(self, node: str) -> str:
        for n in self.nodes:
            if n.node == node:
                return n.ns
        raise KeyError(node)

    @property
    def hosts(self) -> list[NodeNs]:
        return [n for n in self.nodes if n.kind == "host"]

    @property
    def routers(self) -> list[NodeNs]:
        return [n for n in self.nodes if n.kind == "router"]

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["tc"] = {f"{ns} {dev}": cmds for (ns, dev), cmds in self.tc.items()}
        return out


def _unsupported(what: str, path: str, value: Any) -> KernelUnsupported:
    return KernelUnsupported(f"kernel: {what} is not supported in kernel mode ({path}={_show(value)})")


def _unavailable(what: str, path: str, value: Any) -> KernelUnsupported:
    return KernelUnsupported(f"kernel: {what} is not available on this kernel ({path}={_show(value)})")


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return str(value.get("kind", value))
    return str(value)


def _link_path(config: Mapping[str, Any], link: int) -> str:
    """The scenario path of one-way link ``link``: ``links.K`` or ``links.K.reverse``."""
    entry = link // 2
    if link % 2 == 0:
        return f"links.{entry}"
    links = config["links"]
    fwd, rev = links[link - 1], links[link]
    same = all(fwd.get(k) == rev.get(k) for k in ("queue", "loss", "loss_filter", "delay_ns", "rate_bps"))
    return f"links.{entry}" if same else f"links.{entry}.reverse"


def _transfer(entry: int, offset: int) -> str:
    return str(TRANSFER_BASE + entry * TRANSFER_ADDRS_PER_ENTRY + offset)


def _rate(bps: int) -> str:
    return f"{int(bps)}bit"


def _tbf_args(
    rate_bps: int, burst_bytes: int, limit_bytes: int, peak_bps: int | None = None, mtu_bytes: int | None = None
) -> list[str]:
    """iproute2 tc/q_tbf.c arguments: ``tbf rate R burst B limit L [peakrate P mtu M]``."""
    args = ["tbf", "rate", _rate(rate_bps), "burst", str(int(burst_bytes)), "limit", str(int(limit_bytes))]
    if peak_bps:
        args += ["peakrate", _rate(peak_bps), "mtu", str(int(mtu_bytes or FRAME_BYTES))]
    return args


def _ns_arg(v: int) -> str:
    """A time for tc in microseconds (tc's ``us`` suffix)."""
    return f"{int(v) / 1000:g}us"


def _generic_qdisc_args(kind: str, queue: Mapping[str, Any]) -> list[str]:
    """fq/fq_codel and other kinds: the config's keys as tc options (unit suffixes become tc
    units, booleans flags). Only reached on kernels that have them (not this project's VMs)."""
    args = [kind]
    names = {
        "limit_packets": "limit",
        "quantum_bytes": "quantum",
        "initial_quantum_bytes": "initial_quantum",
        "flow_limit_packets": "flow_limit",
        "memory_limit_bytes": "memory_limit",
    }
    for key, value in queue.items():
        if key in ("kind", "child") or value is None:
            continue
        if isinstance(value, bool):
            flag = {
                "horizon_drop": ("horizon_drop", "horizon_cap"),
                "ecn": ("ecn", "noecn"),
                "pacing": ("pacing", "nopacing"),
            }.get(key)
            if flag:
                args.append(flag[0] if value else flag[1])
            continue
        name = names.get(key, key)
        if key.endswith("_bps"):
            args += [name[:-4], _rate(value)]
        elif key.endswith("_ns"):
            args += [name[:-3], _ns_arg(value)]
        elif key.endswith("_bytes") and key not in names:
            args += [name[:-6], str(int(value))]
        else:
            args += [name, str(value)]
    return args


def _queue_args(queue: Mapping[str, Any], env: KernelEnv, path: str) -> list[str]:
    """The tc arguments of a scenario queue (after ``root``/``parent X handle Y``)."""
    kind = queue.get("kind")
    if kind == "pfifo":
        return ["pfifo", "limit", str(int(queue["limit_packets"]))]
    if kind == "bfifo":
        return ["bfifo", "limit", str(int(queue["limit_bytes"]))]
    if kind == "tbf":
        if queue.get("child"):
            raise _unsupported("a tbf with a child queue inside a router's shaper", f"{path}.child", queue["child"])
        if not env.has_qdisc("tbf"):
            raise _unavailable("sch_tbf", f"{path}.qdisc", "tbf")
        return _tbf_args(
            queue["rate_bps"],
            queue["burst_bytes"],
            queue["limit_bytes"],
            queue.get("peakrate_bps"),
            queue.get("mtu_bytes"),
        )
    if kind in ("fq", "fq_codel", "netem", "codel", "sfq", "cake", "pie", "htb"):
        if not env.has_qdisc(kind):
            raise KernelUnsupported(f"kernel: sch_{kind} is not available on this kernel ({path}.qdisc={kind})")
        return _generic_qdisc_args(kind, queue)
    raise _unsupported(f"the queue {kind}", f"{path}.qdisc", kind)


def _check_nodes(config: Mapping[str, Any], env: KernelEnv, departures: list[str]) -> None:
    for node in config["nodes"]:
        name = node["name"]
        where = "hosts" if node.get("kind") == "host" else "routers"
        for key, value in node.items():
            if key not in KNOWN_NODE_KEYS and value not in (None, False, [], {}):
                raise _unsupported(f"the node setting {key}", f"{where}.{name}.{key}", value)
        if node.get("cpu"):
            raise _unsupported("a host CPU model", f"{where}.{name}.cpu", "set")
        if node.get("nic"):
            raise _unsupported("a NIC model (receive ring)", f"{where}.{name}.nic", "set")
        if node.get("forwarding") and node.get("kind") == "host":
            # the pods are the nodes behind the host's pod veths (``orphan`` links from it)
            index = config["nodes"].index(node)
            pods = [
                config["nodes"][int(link["to"])]["name"]
                for link in config["links"]
                if link.get("orphan") and int(link["from"]) == index
            ]
            where_pod = f"pods.{pods[0]}.node={name}" if pods else f"hosts.{name}.forwarding=true"
            raise KernelUnsupported(
                f"kernel: pods (a host forwarding for its pods) are not supported in kernel mode ({where_pod})"
            )
        if node.get("kind") not in ("host", "router"):
            raise _unsupported(f"a node of kind {node.get('kind')}", f"nodes.{name}.kind", node.get("kind"))
        hz = node.get("hz")
        if hz and env.hz and int(hz) != env.hz:
            departures.append(
                f"{name}: the scenario's HZ {hz} differs from the kernel's {env.hz}: "
                "delayed-ACK and RTO timers tick at the kernel's"
            )


def _check_node_names(config: Mapping[str, Any], prefix: str) -> None:
    """A node name kernel mode can name its namespace and files after
    (:func:`tcplab.kernel.names.max_node_name`)."""
    longest = max_node_name(prefix)
    for node in config["nodes"]:
        name = str(node["name"])
        if len(name) > longest:
            where = "hosts" if node.get("kind") == "host" else "routers"
            raise KernelUnsupported(
                f"kernel: {where}.{name}: a name of {len(name)} characters: expected at most {longest} in kernel "
                f"mode (its namespace {node_ns(prefix, 'NAME')} and files are file names, at most {NAME_MAX} bytes)"
            )


#: Engine config keys kernel mode understands; any other key with a value is refused, so a
#: feature added to the simulator later is never silently dropped from a kernel run.
KNOWN_LINK_KEYS = {
    "name",
    "from",
    "to",
    "rate_bps",
    "delay_ns",
    "overhead_bytes",
    "loss",
    "loss_filter",
    "reorder",
    "queue",
    "edt",
    "orphan",
}
KNOWN_NODE_KEYS = {"name", "kind", "hz", "cpu", "nic", "forwarding", "gro", "tso", "gso_skbs"}
KNOWN_FLOW_KEYS = {
    "name",
    "src",
    "dst",
    "cc",
    "receiver_cc",
    "nodelay",
    "start_ns",
    "stop_ns",
    "app",
    "tcp",
    "cc_params",
    "data_side",
    "reader",
    "sample",
}


def _check_links(config: Mapping[str, Any], env: KernelEnv) -> None:
    for i, link in enumerate(config["links"]):
        path = _link_path(config, i)
        loss = link.get("loss") or {"kind": "none"}
        if loss.get("kind") not in ("none", "bernoulli"):
            raise _unsupported(f"the loss model {loss.get('kind')}", f"{path}.loss", loss.get("kind"))
        window = link.get("loss_window")
        if window:
            # the YAML's ``loss: {..., start: T, end: T}``: nft cannot switch a rule on mid-run
            start, end = window.get("start_ns"), window.get("end_ns")
            key, value = ("start", start) if start else ("end", end)
            raise _unsupported(
                "a loss window (loss that starts or ends during the run)",
                f"{path}.loss.{key}",
                f"{int(value or 0) / 1e9:g}s",
            )
        for key, value in link.items():
            if key not in KNOWN_LINK_KEYS and value not in (None, False, [], {}):
                raise _unsupported(f"the link setting {key}", f"{path}.{key}", value)
        if link.get("reorder"):
            raise _unsupported("reordering", f"{path}.reorder", "set")
        if link.get("edt"):
            raise _unsupported("a bandwidth manager (EDT pod rates)", f"{path}.edt", "set")
        if link.get("orphan"):
            raise _unsupported("pod veths (orphaned skbs)", f"{path}.orphan", "true")
        if loss.get("kind") == "bernoulli" and not env.tools.get("nft"):
            raise KernelUnsupported(f"kernel: nft (nftables) is needed for random loss ({path}.loss={loss.get('p')})")


def _app_of(config: Mapping[str, Any], flow_index: int, flow: Mapping[str, Any]) -> dict[str, Any]:
    app = dict(flow.get("app") or {"kind": "bulk"})
    if app.get("kind") == "driven":
        for a in config.get("apps", []):
            if flow_index in a.get("flows", []):
                return dict(a["spec"])
    return app


def _sysctl_value(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (list, tuple)):
        return " ".join(str(int(v)) for v in value)
    return str(int(value))


def _veth_add(ns: str, dev: str, peer_dev: str, peer_ns: str, mtu: int) -> list[str]:
    """``ip -n NS link add DEV mtu M type veth peer name PEER netns PEER_NS mtu M``."""
    return ["ip", "-n", ns, "link", "add", dev, "mtu", str(mtu), "type", "veth"] + [
        "peer",
        "name",
        peer_dev,
        "netns",
        peer_ns,
        "mtu",
        str(mtu),
    ]


def make_plan(config: Mapping[str, Any], env: KernelEnv, options: KernelOptions | None = None) -> Plan:
    """The kernel-mode plan of a resolved scenario config (module doc); pure.

    In order: what kernel mode cannot build is refused (:func:`_check_config`, then each flow
    in :func:`_plan_flows`), the node namespaces get their addresses and sysctls, each link
    entry its veths and, when it delays or loses, a wire namespace (:func:`_plan_links`),
    each one-way link its qdiscs (:func:`_plan_qdiscs`), each node its routes
    (:func:`_plan_routes`); then the commands are put in the order the Testbed runs them."""
    options = options or KernelOptions()
    prefix = check_prefix(options.prefix, "kernel: prefix")
    departures: list[str] = []
    _check_config(config, env, prefix, departures)
    graph = _Graph.of(config)
    planned = _plan_flows(config, env, prefix, graph)
    mtu = planned.mss + TCP_IP_TS_HEADER_BYTES
    if planned.mss != DEFAULT_MSS_BYTES:
        departures.append(f"MTU {mtu} on every device (MSS {planned.mss} + 52)")
    nodes = _node_namespaces(prefix, graph, planned, env)
    markers = line_markers(config, env, options)
    for k, threshold in markers.items():
        departures.append(_marker_departure(config["links"][k], threshold))
    wiring = _plan_links(config, env, options, prefix, nodes, graph, mtu, departures, markers)
    tc, queue_devices, qdisc_cmds = _plan_qdiscs(config, env, options, nodes, graph, departures, markers)
    route_cmds = _plan_routes(nodes, graph, planned.route_attrs, wiring)

    sysctl_cmds: list[list[str]] = []
    for ns, sysctls in [(nd.ns, nd.sysctls) for nd in nodes] + [(w.ns, w.sysctls) for w in wiring.wires]:
        sysctl_cmds.append(["ip", "netns", "exec", ns, "sysctl", "-q", "-w", *[f"{k}={v}" for k, v in sysctls.items()]])
    wire_route_cmds = [cmd for w in wiring.wires for cmd in w.routes]
    qdisc_cmds.extend(cmd for w in wiring.wires for cmd in w.netem)
    # nft reads the wire's ruleset (WireNs.nft) on stdin
    nft_cmds = [["ip", "netns", "exec", w.ns, "nft", "-f", "-"] for w in wiring.wires if w.nft]

    commands = (
        sysctl_cmds
        + wiring.link_cmds
        + wiring.addr_cmds
        + wiring.offload_cmds
        + wiring.rps_cmds
        + route_cmds
        + wire_route_cmds
        + qdisc_cmds
        + nft_cmds
    )
    return Plan(
        prefix=prefix,
        nodes=nodes,
        veths=wiring.veths,
        wires=wiring.wires,
        flows=planned.flows,
        commands=commands,
        tc=tc,
        queue_devices=queue_devices,
        departures=list(dict.fromkeys(departures)),
        duration_ns=int(config["duration_ns"]),
        sample_interval_ns=int(config["sample_interval_ns"]),
    )


def _check_config(config: Mapping[str, Any], env: KernelEnv, prefix: str, departures: list[str]) -> None:
    """The links come in pairs and are not too many; the nodes, their names and the links
    are what kernel mode builds (each refusal a :class:`KernelUnsupported`)."""
    links_cfg = config["links"]
    if len(links_cfg) % 2:
        raise KernelError("kernel: the engine config's links are not in pairs (a tcplab bug)")
    if len(links_cfg) // 2 > MAX_LINK_ENTRIES:
        raise _unsupported(f"more than {MAX_LINK_ENTRIES} links", "links", len(links_cfg) // 2)
    _check_nodes(config, env, departures)
    _check_node_names(config, prefix)
    _check_links(config, env)


@dataclass(frozen=True)
class _Graph:
    """The config's nodes and one-way links as the plan walks them."""

    names: list[str]
    kinds: list[str]
    #: per node: does it forward (a router)
    forwards: list[bool]
    #: per one-way link: (sender node, receiver node)
    ends: list[tuple[int, int]]
    #: per one-way link: (egress node, ethK) (:func:`tcplab.results.tc.link_devices`)
    devices: list[tuple[str, str]]

    @classmethod
    def of(cls, config: Mapping[str, Any]) -> _Graph:
        kinds = [n["kind"] for n in config["nodes"]]
        return cls(
            names=[n["name"] for n in config["nodes"]],
            kinds=kinds,
            forwards=[k == "router" for k in kinds],
            ends=[(int(link["from"]), int(link["to"])) for link in config["links"]],
            devices=link_devices(config),
        )

    @property
    def n_nodes(self) -> int:
        return len(self.names)

    def route(self, src: int, dst: int) -> list[int] | None:
        """The one-way links from ``src`` to ``dst`` (the simulator's routes: tcplab.routing)."""
        return bfs_route(self.n_nodes, self.ends, src, dst, self.forwards)


#: A host's setting and where it came from: name -> (value, the scenario path that set it).
_Settings = dict[str, tuple[Any, str]]


@dataclass
class _PlannedFlows:
    """What the flows ask of the hosts: their sockets, sysctls, route attributes, the MSS."""

    flows: list[FlowPlan] = field(default_factory=list)
    #: node index -> sysctls of the data senders there / of the data receivers there
    sender_sysctls: dict[int, _Settings] = field(default_factory=dict)
    receiver_sysctls: dict[int, _Settings] = field(default_factory=dict)
    #: node index -> the sysctls its flows set by its role, client or server (tcp_ecn)
    endpoint_sysctls: dict[int, _Settings] = field(default_factory=dict)
    #: (from node, to node) -> route attributes (initcwnd, rto_min)
    route_attrs: dict[tuple[int, int], _Settings] = field(default_factory=dict)
    mss: int = DEFAULT_MSS_BYTES


def _merge(table: _Settings, key: str, value: Any, path: str, host: str) -> None:
    """One host setting from two flows must agree (a namespace has one sysctl value)."""
    if key in table and table[key][0] != value:
        raise _unsupported(
            f"two values of {key} on host {host} ({table[key][1]}={_show(table[key][0])})", path, _show(value)
        )
    table.setdefault(key, (value, path))


def _plan_flows(config: Mapping[str, Any], env: KernelEnv, prefix: str, graph: _Graph) -> _PlannedFlows:
    """Every flow's sockets and what it sets on its hosts, each checked before anything else
    is planned: its app, reader, congestion control and TCP settings, its ends and routes."""
    planned = _PlannedFlows()
    mss_values: set[int] = set()
    names, kinds = graph.names, graph.kinds
    duration_ns = int(config["duration_ns"])
    for i, flow in enumerate(config["flows"]):
        fpath = f"flows.{i}"
        app = _flow_app(config, i, flow)
        cc = _flow_cc(flow, env, fpath)
        # the data receiver's own cc (its host's tcp_congestion_control), when it differs
        receiver_cc = _flow_cc({**flow, "cc": flow.get("receiver_cc") or cc}, env, f"{fpath}.receiver_cc")
        tcp = flow.get("tcp") or {}
        _check_pacing(tcp, fpath)
        mss_values.add(int(tcp.get("mss_bytes", DEFAULT_MSS_BYTES)))
        data_side = flow.get("data_side") or "client"
        src, dst = int(flow["src"]), int(flow["dst"])
        data_src, data_dst = (src, dst) if data_side == "client" else (dst, src)
        _flow_host_settings(planned, tcp, fpath, data_src, data_dst, names)
        _flow_endpoint_settings(planned, tcp, fpath, src, dst, names)
        stop = flow.get("stop_ns")
        planned.flows.append(
            FlowPlan(
                index=i,
                name=flow["name"],
                client_node=names[src],
                client_ns=node_ns(prefix, names[src]),
                client_addr=node_address(src),
                client_port=CLIENT_PORT_BASE + i,
                server_node=names[dst],
                server_ns=node_ns(prefix, names[dst]),
                server_addr=node_address(dst),
                server_port=server_port(app.get("kind")),
                cc=cc,
                receiver_cc=receiver_cc,
                nodelay=bool(flow.get("nodelay")),
                app=app,
                start_ns=int(flow.get("start_ns") or 0),
                stop_ns=int(stop) if stop is not None else duration_ns,
                data_side=data_side,
            )
        )
        if kinds[src] != "host" or kinds[dst] != "host":
            raise _unsupported("a flow ending on a router", fpath, f"{names[src]}->{names[dst]}")
        if graph.route(src, dst) is None or graph.route(dst, src) is None:
            raise _unsupported("a flow without a route", fpath, f"{names[src]}->{names[dst]}")
    if len(mss_values) > 1:
        raise _unsupported("flows with different MSS", "flows.*.tcp.mss", sorted(mss_values))
    planned.mss = mss_values.pop() if mss_values else DEFAULT_MSS_BYTES
    return planned


def _flow_app(config: Mapping[str, Any], i: int, flow: Mapping[str, Any]) -> dict[str, Any]:
    """The flow's app as the agents run it (bulk, maerts, rr; a slow reader's pace), after
    refusing a setting, an app or a reader kernel mode does not have."""
    fpath = f"flows.{i}"
    for key, value in flow.items():
        if key not in KNOWN_FLOW_KEYS and value not in (None, False, [], {}):
            raise _unsupported(f"the flow setting {key}", f"{fpath}.{key}", value)
    app = _app_of(config, i, flow)
    kind = app.get("kind")
    if kind not in SUPPORTED_APPS:
        raise _unsupported(f"the application {kind}", f"{fpath}.app", kind)
    reader = dict(flow.get("reader") or {"kind": "immediate"})
    if reader.get("kind") not in ("immediate", "rate", "bursts"):
        raise _unsupported(f"the reader {reader.get('kind')}", f"{fpath}.reader", reader.get("kind"))
    if reader["kind"] != "immediate":
        if kind == "rr":
            raise _unsupported("a slow reader of an rr flow", f"{fpath}.reader", reader["kind"])
        # the agent's receiving side reads as the engine's reader does (tcplab.kernel.agent)
        app["reader"] = reader
    return app


def _flow_cc(flow: Mapping[str, Any], env: KernelEnv, fpath: str) -> str:
    """The flow's congestion control, available on this kernel with the parameters asked
    (tcp_cubic's are global module parameters: they must be the module's)."""
    cc = flow.get("cc") or "cubic"
    if env.cc_available and cc not in env.cc_available:
        raise KernelUnsupported(
            f"kernel: the congestion control {cc} is not available on this kernel "
            f"({fpath}.cc={cc}; available: {' '.join(env.cc_available)})"
        )
    params = flow.get("cc_params") or {}
    if params.get("bbr_vm_patch"):
        raise _unsupported("BBR's VM inflight patch", f"{fpath}.cc_params.bbr_vm_patch", True)
    if cc == "cubic" and env.cubic_params:
        for p in CUBIC_PARAMS:
            if p in params and p in env.cubic_params and int(params[p]) != int(env.cubic_params[p]):
                raise _unsupported(
                    f"tcp_cubic's {p} other than the module's {env.cubic_params[p]} (a global module parameter)",
                    f"{fpath}.cc_params.{p}",
                    params[p],
                )
    return cc


def _check_pacing(tcp: Mapping[str, Any], fpath: str) -> None:
    """fq pacing and SO_MAX_PACING_RATE are not built in kernel mode."""
    if tcp.get("fq_pacing"):
        raise _unsupported("fq pacing", f"{fpath}.tcp.fq_pacing", True)
    mpr = tcp.get("max_pacing_rate_bytes_per_sec")
    if mpr is not None and int(mpr) != _U64_MAX:
        raise _unsupported("SO_MAX_PACING_RATE", f"{fpath}.tcp.max_pacing_rate", mpr)


def _flow_host_settings(
    planned: _PlannedFlows, tcp: Mapping[str, Any], fpath: str, data_src: int, data_dst: int, names: Sequence[str]
) -> None:
    """The flow's ``tcp`` settings on its hosts: sysctls of the data sender's namespace (and
    ``tcp_rmem`` of the receiver's), ``initcwnd``/``rto_min`` on the routes between them."""
    for key, value in tcp.items():
        if key in SENDER_SYSCTLS:
            _merge(
                planned.sender_sysctls.setdefault(data_src, {}),
                SENDER_SYSCTLS[key],
                value,
                f"{fpath}.tcp.{key}",
                names[data_src],
            )
        elif key in RECEIVER_SYSCTLS:
            _merge(
                planned.receiver_sysctls.setdefault(data_dst, {}),
                RECEIVER_SYSCTLS[key],
                value,
                f"{fpath}.tcp.{key}",
                names[data_dst],
            )
        elif key not in _TCP_OTHER and key not in ENDPOINT_SYSCTLS:
            raise _unsupported(f"the TCP setting {key}", f"{fpath}.tcp.{key}", value)
    for a, b in ((data_src, data_dst), (data_dst, data_src)):
        attrs = planned.route_attrs.setdefault((a, b), {})
        icw = int(tcp.get("initial_cwnd", LINUX_INIT_CWND))
        if icw != LINUX_INIT_CWND:
            _merge(attrs, "initcwnd", icw, f"{fpath}.tcp.initial_cwnd", names[a])
        rto = int(tcp.get("rto_min_ms", LINUX_RTO_MIN_MS))
        if rto != LINUX_RTO_MIN_MS:
            _merge(attrs, "rto_min", rto, f"{fpath}.tcp.rto_min", names[a])


def _flow_endpoint_settings(
    planned: _PlannedFlows, tcp: Mapping[str, Any], fpath: str, client: int, server: int, names: Sequence[str]
) -> None:
    """The flow's :data:`ENDPOINT_SYSCTLS` on its hosts by role: ``net.ipv4.tcp_ecn`` of the
    client's namespace (whether its SYN asks for ECN) and of the server's (whether it
    accepts), ``tcp_ecn_fallback`` of the client's. A namespace starts with Linux's defaults
    (2 and 1: tcp_sk_init()); they are written anyway, as the other TCP sysctls are."""
    if "tcp_ecn" in tcp:
        ecn = tcp["tcp_ecn"]
        for node, value in ((client, ecn[0]), (server, ecn[1])):
            table = planned.endpoint_sysctls.setdefault(node, {})
            _merge(table, ENDPOINT_SYSCTLS["tcp_ecn"], int(value), f"{fpath}.tcp.tcp_ecn", names[node])
    if "tcp_ecn_fallback" in tcp:
        table = planned.endpoint_sysctls.setdefault(client, {})
        _merge(
            table,
            ENDPOINT_SYSCTLS["tcp_ecn_fallback"],
            bool(tcp["tcp_ecn_fallback"]),
            f"{fpath}.tcp.tcp_ecn_fallback",
            names[client],
        )


def _node_namespaces(prefix: str, graph: _Graph, planned: _PlannedFlows, env: KernelEnv) -> list[NodeNs]:
    """One namespace per node, with its address and sysctls (forwarding, no rp_filter, no
    IPv6, the flows' TCP sysctls)."""
    nodes = [
        NodeNs(node=name, index=i, kind=graph.kinds[i], ns=node_ns(prefix, name), address=node_address(i))
        for i, name in enumerate(graph.names)
    ]
    for nd in nodes:
        s = nd.sysctls
        s["net.ipv4.ip_forward"] = "1" if nd.kind == "router" else "0"
        s["net.ipv4.conf.all.rp_filter"] = "0"
        s["net.ipv4.conf.default.rp_filter"] = "0"
        s.update(_no_ipv6(env))
        for table in (
            planned.sender_sysctls.get(nd.index, {}),
            planned.receiver_sysctls.get(nd.index, {}),
            planned.endpoint_sysctls.get(nd.index, {}),
        ):
            for key, (value, _path) in table.items():
                s[f"net.ipv4.{key}"] = _sysctl_value(value)
        # No net.ipv4.tcp_congestion_control: outside the initial namespace Linux lets it name
        # only an allowed (non-restricted) algorithm (v6.12 net/ipv4/tcp_cong.c:
        # tcp_set_default_congestion_control() -> -EPERM); the agents set TCP_CONGESTION per
        # socket instead, which root may do for any available algorithm.
    return nodes


@dataclass
class _Wiring:
    """The links as built: veths and wires, and the commands that make them, by kind."""

    veths: list[VethPair] = field(default_factory=list)
    wires: list[WireNs] = field(default_factory=list)
    #: addresses of each one-way link's next hop, seen from its sender: (dev, nexthop)
    hop_of: dict[int, tuple[str, str]] = field(default_factory=dict)
    link_cmds: list[list[str]] = field(default_factory=list)
    addr_cmds: list[list[str]] = field(default_factory=list)
    offload_cmds: list[list[str]] = field(default_factory=list)
    rps_cmds: list[list[str]] = field(default_factory=list)

    def up(self, ns: str, dev: str, addr: str | None, gro: bool = False) -> None:
        """Give ``dev`` its address, bring it up, and turn its offloads off (not ``lo``);
        ``gro``: a host's device with GRO on in its scenario (tso and gso stay off: the
        module doc's "Offloads")."""
        if addr:
            self.addr_cmds.append(["ip", "-n", ns, "addr", "add", addr, "dev", dev])
        self.addr_cmds.append(["ip", "-n", ns, "link", "set", dev, "up"])
        if dev != "lo":
            self.offload_cmds.append(
                [
                    "ip",
                    "netns",
                    "exec",
                    ns,
                    "ethtool",
                    "-K",
                    dev,
                    "tso",
                    "off",
                    "gso",
                    "off",
                    "gro",
                    "on" if gro else "off",
                ]
            )


def _plan_links(
    config: Mapping[str, Any],
    env: KernelEnv,
    options: KernelOptions,
    prefix: str,
    nodes: Sequence[NodeNs],
    graph: _Graph,
    mtu: int,
    departures: list[str],
    markers: Mapping[int, int] | None = None,
) -> _Wiring:
    """Per link entry: a veth between the two nodes, or, when a direction delays (>= 500 us)
    or loses, two veths into a wire namespace that delays (netem or the delay line) and
    drops (nft); ``markers``: the one-way links whose TUN marks CE (:func:`line_markers`)."""
    if options.delay not in ("auto", "netem", "delayline"):
        raise KernelError(f"kernel: delay {options.delay!r}: expected auto, netem or delayline")
    use_netem = options.delay == "netem" or (options.delay == "auto" and env.has_qdisc("netem"))
    if options.delay == "netem" and not env.has_qdisc("netem"):
        raise KernelUnsupported("kernel: sch_netem is not available on this kernel (delay=netem)")
    links_cfg = config["links"]
    shaped_links = _shaped_links(config, graph)
    wiring = _Wiring()
    for entry in range(len(links_cfg) // 2):
        fwd, rev = links_cfg[2 * entry], links_cfg[2 * entry + 1]
        a, b = int(fwd["from"]), int(fwd["to"])
        ns_a, ns_b = nodes[a].ns, nodes[b].ns
        dev_a, dev_b = graph.devices[2 * entry][1], graph.devices[2 * entry + 1][1]
        # a host's own device follows its ``offload: {gro}`` (the engine's ``gro`` key)
        gro_a, gro_b = (bool(config["nodes"][n].get("gro")) for n in (a, b))
        lossy = [
            (link.get("loss") or {}).get("kind") == "bernoulli" and float(link["loss"].get("p", 0)) > 0
            for link in (fwd, rev)
        ]
        delayed = [int(link["delay_ns"]) >= WIRE_MIN_DELAY_NS for link in (fwd, rev)]
        for link in (fwd, rev):
            if 0 < int(link["delay_ns"]) < WIRE_MIN_DELAY_NS:
                departures.append(
                    f"{link['name']}: delay {int(link['delay_ns']) / 1000:g} us left to the veth "
                    f"(below {WIRE_MIN_DELAY_NS // 1000} us, no delay line)"
                )
        a_addr, a_peer = _transfer(entry, 1), _transfer(entry, 2)
        if any(lossy) or any(delayed):
            w = wire_ns(prefix, entry)
            b_addr, b_peer = _transfer(entry, 5), _transfer(entry, 6)
            wiring.link_cmds.append(_veth_add(ns_a, dev_a, "wa", w, mtu))
            wiring.link_cmds.append(_veth_add(ns_b, dev_b, "wb", w, mtu))
            wiring.veths.append(VethPair(ns_a, dev_a, a_addr + "/30", w, "wa", a_peer + "/30", mtu, entry))
            wiring.veths.append(VethPair(ns_b, dev_b, b_addr + "/30", w, "wb", b_peer + "/30", mtu, entry))
            wiring.up(ns_a, dev_a, a_addr + "/30", gro_a)
            wiring.up(w, "wa", a_peer + "/30")
            wiring.up(ns_b, dev_b, b_addr + "/30", gro_b)
            wiring.up(w, "wb", b_peer + "/30")
            wiring.up(w, "lo", None)
            wiring.hop_of[2 * entry] = (dev_a, a_peer)
            wiring.hop_of[2 * entry + 1] = (dev_b, b_peer)
            wire = _wire(
                config, env, w, entry, lossy, delayed, use_netem, mtu, a_addr, b_addr, shaped_links, markers or {}
            )
            wiring.wires.append(wire)
            if wire.tuns:
                mask = rps_mask(env.cpus, options.delayline_cpu)
                if mask:
                    wiring.rps_cmds += [rps_command(ns_a, dev_a, mask), rps_command(ns_b, dev_b, mask)]
        else:
            wiring.link_cmds.append(_veth_add(ns_a, dev_a, dev_b, ns_b, mtu))
            wiring.veths.append(VethPair(ns_a, dev_a, a_addr + "/30", ns_b, dev_b, a_peer + "/30", mtu, entry))
            wiring.up(ns_a, dev_a, a_addr + "/30", gro_a)
            wiring.up(ns_b, dev_b, a_peer + "/30", gro_b)
            wiring.hop_of[2 * entry] = (dev_a, a_peer)
            wiring.hop_of[2 * entry + 1] = (dev_b, a_addr)
    return wiring


def rps_mask(cpus: int, line_cpu: int | None) -> str:
    """The ``rps_cpus`` hex mask of every CPU but the delay line's (module doc), or ``""``
    when there is nothing to steer to (one CPU, or the line not pinned to an online CPU)."""
    if line_cpu is None or not 0 <= line_cpu < cpus or cpus < 2:
        return ""
    return format(((1 << cpus) - 1) & ~(1 << line_cpu), "x")


def rps_command(ns: str, dev: str, mask: str) -> list[str]:
    """Sets ``dev``'s receive packet steering in ``ns`` to ``mask`` (``ip netns exec`` mounts
    the namespace's own /sys); a kernel without CONFIG_RPS has no file, and nothing is set."""
    path = f"/sys/class/net/{dev}/queues/rx-0/rps_cpus"
    return ["ip", "netns", "exec", ns, "sh", "-c", f"[ ! -e {path} ] || echo {mask} > {path}"]


def _wire(
    config: Mapping[str, Any],
    env: KernelEnv,
    w: str,
    entry: int,
    lossy: Sequence[bool],
    delayed: Sequence[bool],
    use_netem: bool,
    mtu: int,
    a_addr: str,
    b_addr: str,
    shaped_links: set[int],
    markers: Mapping[int, int] | None = None,
) -> WireNs:
    """The wire namespace ``w`` of link entry ``entry``: per direction, policy routing on the
    input device, through netem on the egress or the delay line's TUN when it delays; the
    nft ruleset when it loses (module doc)."""
    fwd, rev = config["links"][2 * entry], config["links"][2 * entry + 1]
    tuns: list[WireTun] = []
    tun_cmds: list[list[str]] = []
    netem_cmds: list[list[str]] = []
    rules: list[list[str]] = []
    # direction a->b: in on wa, out on wb towards b (b_addr); b->a: in on wb, out on wa.
    for d, (link_index, link, iif, oif, nexthop, tun) in enumerate(
        (
            (2 * entry, fwd, "wa", "wb", b_addr, "tab"),
            (2 * entry + 1, rev, "wb", "wa", a_addr, "tba"),
        )
    ):
        out_table = str(100 + 2 * d + 1)
        if delayed[d] and use_netem:
            # netem on the wire's egress towards the receiving node (Linux v6.12
            # net/sched/sch_netem.c): its limit holds every packet in flight on the
            # wire, counted at 64 B (an ACK) at the link's rate, at least netem's 1000
            in_flight = int(link["rate_bps"]) * int(link["delay_ns"]) // (8 * 64 * 1_000_000_000) + 1
            netem_cmds.append(
                [
                    "tc",
                    "-n",
                    w,
                    "qdisc",
                    "add",
                    "dev",
                    oif,
                    "root",
                    "netem",
                    "delay",
                    _ns_arg(int(link["delay_ns"])),
                    "limit",
                    str(max(1000, in_flight)),
                ]
            )
            rules.append(["ip", "-n", w, "rule", "add", "pref", str(1000 + 10 * d), "iif", iif, "lookup", out_table])
        elif delayed[d]:
            in_table = str(100 + 2 * d)
            # A shaped link's TUN also serialises at its rate (module doc, "Rate and queue"),
            # and so does a marking one (its queue is the line's: "ECN marking").
            threshold = int((markers or {}).get(link_index, 0))
            rate = int(link["rate_bps"]) if link_index in shaped_links or threshold else 0
            overhead = int(link.get("overhead_bytes", 14)) if rate else 0
            tuns.append(WireTun(tun, int(link["delay_ns"]), link_index, rate, overhead, threshold))
            tun_cmds.append(["ip", "-n", w, "link", "set", tun, "mtu", str(mtu), "up"])
            tun_cmds.append(["ip", "netns", "exec", w, "ethtool", "-K", tun, "tso", "off", "gso", "off", "gro", "off"])
            tun_cmds.append(["ip", "-n", w, "route", "add", "default", "dev", tun, "table", in_table])
            tun_cmds.append(["ip", "-n", w, "rule", "add", "pref", str(1000 + 10 * d), "iif", iif, "lookup", in_table])
            tun_cmds.append(["ip", "-n", w, "rule", "add", "pref", str(1001 + 10 * d), "iif", tun, "lookup", out_table])
        else:
            rules.append(["ip", "-n", w, "rule", "add", "pref", str(1000 + 10 * d), "iif", iif, "lookup", out_table])
        rules.insert(0, ["ip", "-n", w, "route", "add", "default", "via", nexthop, "dev", oif, "table", out_table])
    return WireNs(
        ns=w,
        entry=entry,
        links=(2 * entry, 2 * entry + 1),
        tuns=tuns,
        nft=_nft_ruleset(config, entry, lossy),
        sysctls={
            "net.ipv4.ip_forward": "1",
            "net.ipv4.conf.all.rp_filter": "0",
            "net.ipv4.conf.default.rp_filter": "0",
            **_no_ipv6(env),
        },
        routes=rules,
        netem=netem_cmds,
        tun_commands=tun_cmds,
        stats_file=f"delayline-w{entry}.json",
    )


#: fq_codel's defaults the marker checks against (Linux v6.12 net/sched/sch_fq_codel.c
#: fq_codel_init(): limit 10240 packets; include/net/codel.h codel_params_init(): target 5 ms).
FQ_CODEL_LIMIT_PACKETS = 10240
CODEL_TARGET_NS = 5_000_000
#: CoDel's clock counts 2^10 ns ticks (include/net/codel.h CODEL_SHIFT).
CODEL_SHIFT = 10


def line_markers(config: Mapping[str, Any], env: KernelEnv, options: KernelOptions | None = None) -> dict[int, int]:
    """The one-way links whose fq_codel ``ce_threshold`` the delay line's step marker stands
    in for (module doc, "ECN marking"): link index -> the threshold in ns. Only on a kernel
    without sch_fq_codel (with it, the real fq_codel runs), and only where the marker is
    the same queue; otherwise :class:`KernelUnsupported`, one line naming the reason."""
    if env.has_qdisc("fq_codel"):
        return {}
    options = options or KernelOptions()
    use_netem = options.delay == "netem" or (options.delay == "auto" and env.has_qdisc("netem"))
    graph = _Graph.of(config)
    out: dict[int, int] = {}
    for k, link in enumerate(config["links"]):
        queue = link.get("queue") or {}
        if queue.get("kind") != "fq_codel" or not queue.get("ce_threshold_ns"):
            continue
        threshold = int(queue["ce_threshold_ns"])
        target = int(queue.get("target_ns", CODEL_TARGET_NS))
        path = f"{_link_path(config, k)}.queue"
        why = None
        if not queue.get("ecn", True):
            why = "its ecn is off (CoDel would drop where the line marks)"
        elif threshold >> CODEL_SHIFT >= target >> CODEL_SHIFT:
            # the control law acts from a sojourn of target up (ldelay >= target, in CoDel's
            # ticks), the step above the threshold: below target, every packet the law marks
            # the step has marked
            why = (
                f"its ce_threshold {threshold / 1e6:g} ms is not below its target {target / 1e6:g} ms "
                "(CoDel's control law would mark packets the step does not)"
            )
        elif graph.kinds[graph.ends[k][0]] != "router":
            why = "it leaves a host (the marker replaces a router's shaper only)"
        elif int(link["delay_ns"]) < WIRE_MIN_DELAY_NS or use_netem:
            why = "it has no delay line (a delay of 500 us or more, on a kernel without netem)"
        else:
            crossing = [
                str(f["name"])
                for f in config["flows"]
                for a, b in ((int(f["src"]), int(f["dst"])), (int(f["dst"]), int(f["src"])))
                if k in (graph.route(a, b) or [])
            ]
            if len(crossing) > 1:
                why = f"{len(crossing)} flow directions cross it (fq_codel keeps flows apart; the line is one FIFO)"
        if why:
            raise KernelUnsupported(
                f"kernel: sch_fq_codel is not available on this kernel, and the delay line cannot mark in its "
                f"place on {link['name']}: {why} ({path}.ce_threshold={threshold / 1e6:g}ms)"
            )
        out[k] = threshold
    return out


def _marker_departure(link: Mapping[str, Any], threshold_ns: int) -> str:
    """The run's departure line for a link the delay line marks."""
    queue = link.get("queue") or {}
    limit = int(queue.get("limit_packets", FQ_CODEL_LIMIT_PACKETS))
    return (
        f"{link['name']}: fq_codel ce_threshold {threshold_ns / 1e6:g} ms is the delay line's step marker "
        f"(this kernel lacks sch_fq_codel): one FIFO serialised at the link rate in the wire, CE on every "
        f"ECN-capable packet that waited more than {threshold_ns / 1e6:g} ms for the wire; CoDel's control "
        f"law and fq_codel's limit of {limit} packets are not run, and the queue is not in tc's counters "
        "(docs/kernel-pin.md)"
    )


def _plan_qdiscs(
    config: Mapping[str, Any],
    env: KernelEnv,
    options: KernelOptions,
    nodes: Sequence[NodeNs],
    graph: _Graph,
    departures: list[str],
    markers: Mapping[int, int] | None = None,
) -> tuple[dict[tuple[str, str], list[list[str]]], dict[str, list[tuple[str, int]]], list[list[str]]]:
    """Per one-way link, its sender's egress qdiscs: the tbf shaper at the link rate with the
    scenario's queue as its child, or the queue alone on a host link that is no route's
    narrowest, or, on a link the delay line marks (``markers``), a pfifo that never holds a
    packet (module doc). Returns (ns, dev) -> its commands, ns -> the queue devices, and
    every command in link order."""
    shaped_links = _shaped_links(config, graph)
    tc: dict[tuple[str, str], list[list[str]]] = {}
    queue_devices: dict[str, list[tuple[str, int]]] = {}
    qdisc_cmds: list[list[str]] = []
    for link_index, link in enumerate(config["links"]):
        sender, _receiver = graph.ends[link_index]
        _node_name, dev = graph.devices[link_index]
        ns = nodes[sender].ns
        path = _link_path(config, link_index)
        queue = link.get("queue") or {"kind": "pfifo", "limit_packets": 1000}
        cmds: list[list[str]] = []
        if link_index in (markers or {}):
            # the queue is the delay line's (module doc, "ECN marking"): nothing to shape here
            limit = int(queue.get("limit_packets", FQ_CODEL_LIMIT_PACKETS))
            pfifo = ["pfifo", "limit", str(limit)]
            cmds.append(["tc", "-n", ns, "qdisc", "add", "dev", dev, "root", "handle", "1:", *pfifo])
            tc[(ns, dev)] = cmds
            qdisc_cmds.extend(cmds)
            queue_devices.setdefault(ns, []).append((dev, link_index))
            continue
        child = _queue_args(queue, env, f"{path}.queue")
        shaped = link_index in shaped_links
        overhead = int(link.get("overhead_bytes", 14))
        if shaped:
            if not env.has_qdisc("tbf"):
                raise _unavailable("sch_tbf (the link rate shaper)", f"{path}.rate", link["rate_bps"])
            rate = int(link["rate_bps"])
            burst = max(2 * FRAME_BYTES, rate * options.tbf_burst_us // 8_000_000)
            stab = ["stab", "overhead", str(overhead - 14), "linklayer", "ethernet"] if overhead != 14 else []
            # tbf's own limit only sizes the bfifo it creates; the child below replaces it.
            cmds.append(
                [
                    "tc",
                    "-n",
                    ns,
                    "qdisc",
                    "add",
                    "dev",
                    dev,
                    "root",
                    "handle",
                    "1:",
                    *stab,
                    *_tbf_args(rate, burst, max(_child_limit_bytes(queue), FRAME_BYTES)),
                ]
            )
            cmds.append(["tc", "-n", ns, "qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:", *child])
        else:
            cmds.append(["tc", "-n", ns, "qdisc", "add", "dev", dev, "root", "handle", "1:", *child])
            if overhead != 14:
                departures.append(f"{link['name']}: overhead {overhead} B not applied (host egress, no shaper)")
            departures.append(
                f"{link['name']}: rate {link['rate_bps'] / 1e6:g} Mbit/s not emulated on the host's egress "
                f"(faster than a router link on every route over it: the router's shaper sets the rate)"
            )
        tc[(ns, dev)] = cmds
        qdisc_cmds.extend(cmds)
        queue_devices.setdefault(ns, []).append((dev, link_index))
    return tc, queue_devices, qdisc_cmds


def _plan_routes(
    nodes: Sequence[NodeNs], graph: _Graph, route_attrs: Mapping[tuple[int, int], _Settings], wiring: _Wiring
) -> list[list[str]]:
    """Each node's address on ``lo`` (after the links' addresses) and a /32 route to every
    node it reaches, via its route's first hop, with the flows' route attributes."""
    for nd in nodes:
        wiring.addr_cmds.append(["ip", "-n", nd.ns, "addr", "add", nd.address + "/32", "dev", "lo"])
        wiring.addr_cmds.append(["ip", "-n", nd.ns, "link", "set", "lo", "up"])
    route_cmds: list[list[str]] = []
    for src in range(graph.n_nodes):
        for dst in range(graph.n_nodes):
            if src == dst:
                continue
            route = graph.route(src, dst)
            if not route:
                continue
            dev, nexthop = wiring.hop_of[route[0]]
            cmd = [
                "ip",
                "-n",
                nodes[src].ns,
                "route",
                "add",
                node_address(dst) + "/32",
                "via",
                nexthop,
                "dev",
                dev,
                "src",
                node_address(src),
            ]
            for key, (value, _p) in route_attrs.get((src, dst), {}).items():
                cmd += ["initcwnd", str(value)] if key == "initcwnd" else ["rto_min", "lock", f"{value}ms"]
            route_cmds.append(cmd)
    return route_cmds


def _shaped_links(config: Mapping[str, Any], graph: _Graph) -> set[int]:
    """The one-way links whose rate a tbf on the sender's egress sets (module doc, "Rate and
    queue"): those a router sends on, host-to-host links, and :func:`shaped_host_links`."""
    host_bottlenecks = shaped_host_links(config)
    return {
        k
        for k in range(len(config["links"]))
        if graph.kinds[graph.ends[k][0]] == "router" or graph.kinds[graph.ends[k][1]] == "host" or k in host_bottlenecks
    }


def shaped_host_links(config: Mapping[str, Any]) -> set[int]:
    """The one-way links leaving a HOST for a router that get the tbf shaper: those that are
    the narrowest link (rate <= every other link's rate) of a route some flow uses, its data
    route or its ACK route (:func:`tcplab.routing.bfs_route`, the simulator's routes).

    The simulator serialises a host's egress at its link rate like any link, with the host's
    queue in front (and TSQ on the sender's own qdisc); in kernel mode a veth is far faster
    than that. Where the host link is a flow's bottleneck (builtin:maerts: the server's own
    50 Mbit/s link) it must be shaped, or the flow runs at the next link's rate. A host link
    faster than the route's narrowest router link changes nothing there (its queue stays
    empty in the simulator too) and shaping it would only cost CPU, so it is left alone.
    A host-to-host link (no router) is shaped whatever the rates (make_plan)."""
    nodes = config["nodes"]
    links = config["links"]
    n_nodes = len(nodes)
    ends = [(int(link["from"]), int(link["to"])) for link in links]
    forwards = [n["kind"] == "router" for n in nodes]
    rates = [int(link["rate_bps"]) for link in links]
    shaped: set[int] = set()
    for flow in config["flows"]:
        src, dst = int(flow["src"]), int(flow["dst"])
        for a, b in ((src, dst), (dst, src)):
            route = bfs_route(n_nodes, ends, a, b, forwards) or []
            for k in route:
                if forwards[ends[k][0]]:
                    continue  # a router's egress: always shaped
                if all(rates[k] <= rates[j] for j in route if j != k):
                    shaped.add(k)
    return shaped


def _no_ipv6(env: KernelEnv) -> dict[str, str]:
    """No IPv6 in the run's namespaces: a device coming up would send router solicitations,
    DAD and MLD reports across the emulated links (packets the simulation does not have)."""
    if not env.ipv6:
        return {}
    return {"net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1"}


def _child_limit_bytes(queue: Mapping[str, Any]) -> int:
    if "limit_bytes" in queue:
        return int(queue["limit_bytes"])
    if "limit_packets" in queue:
        return int(queue["limit_packets"]) * FRAME_BYTES
    return 1000 * FRAME_BYTES


def _nft_ruleset(config: Mapping[str, Any], entry: int, lossy: Sequence[bool]) -> str | None:
    """The wire's nft table ``tcplab``: per lossy direction a counter of what came in from the
    sender's side and the random drop (module doc); ``None`` without loss."""
    if not any(lossy):
        return None
    rules = []
    for d, (link_index, iif) in enumerate(((2 * entry, "wa"), (2 * entry + 1, "wb"))):
        if not lossy[d]:
            continue
        link = config["links"][link_index]
        p = float(link["loss"]["p"])
        threshold = round(p * 1_000_000)
        flt = link.get("loss_filter") or {}
        match = ""
        if flt.get("data_only"):
            match += f" ip length >= {DATA_ONLY_MIN_IP_BYTES}"
        if int(flt.get("min_ip_bytes") or 0) > 0:
            match += f" ip length >= {int(flt['min_ip_bytes'])}"
        rules.append(f'    iifname "{iif}"{match} counter comment "link={link_index} seen"')
        rules.append(
            f'    iifname "{iif}"{match} numgen random mod 1000000 < {threshold} counter drop '
            f'comment "link={link_index} loss"'
        )
    body = "\n".join(rules)
    return (
        "table inet tcplab {\n"
        "  chain forward {\n"
        "    type filter hook forward priority 0; policy accept;\n"
        f"{body}\n"
        "  }\n"
        "}\n"
    )

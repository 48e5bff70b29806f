"""What a run will cost in CPU time, estimated before it runs (``limits.cpu_time``).

A run whose cost no user would accept (a year of simulated time, 10^6 connections for an
hour, a kernel run of a year, ``validate --runs 1000000``) is refused up front with its
estimate and how to raise the limit, as ``limits.memory`` refuses what would not fit
(:mod:`tcplab.scenario.limits`). The limit is ``limits.cpu_time`` (default
:data:`DEFAULT_CPU_TIME_NS`, an hour: what a laptop user would wait for).

The model: the engine's cost is its events (one per packet per link it crosses, one per
sender transmit completion, timers, app actions, samples; ``tcplab_core::event``) times
the cost of one event, plus a cost per connection (building and tearing down its two
endpoints, and the front's own work per connection). The events are bounded from the
configuration alone:

- **Packets.** Each connection's data packets over its active time, at most what its app
  writes (:func:`app_demand`: a broadcast's messages, an RR's transactions, at most one per
  round trip, an HLS or NFS stream's bit rate plus the buffer it may fetch ahead, a batch
  writer's batches and retries) and at most what its path carries: bulk data is as fast
  as the slowest link of its path, and the connections sharing a link share its rate
  (each link's demand scaled down to its capacity; :func:`estimate_cost`). Packets are
  full segments (MSS) except an app's small messages, which take a packet each.
- **Events per data packet**: one per link of its path and one per link of the path of
  its ACK (counted as one ACK per data packet, where Linux acknowledges every second
  full segment), the sender's transmit completion (TSQ), one timer (pacing, delayed ACK,
  retransmission) and, per link with a timed qdisc (tbf, fq, fq_codel) one dequeue event,
  per receiving host with a NIC model one NAPI poll, per host with a CPU share below 1
  one deferral. Each app write adds :data:`EVENTS_PER_WRITE` (the app's action, the
  delayed ACK and the retransmission timer its lone segment arms).
- **Per connection**: its handshake and close, as two data packets.
- **Samples**: one event per sample time, and one row per sampled flow and per link.

The events are an upper bound of the engine's, within a small factor where the run uses
what the bound assumes (``tests/test_hostile_limits.py`` derives a factor of 4 and checks
real runs against it): bulk flows at their bottleneck (one ACK counted per data packet
where Linux sends one per two full segments), an app's writes. Runs far below it are those
that cannot use their path (a loss-limited flow, connections collapsing on an overloaded
queue), where the bound stays what the path could carry.

The cost of an event, calibrated by the benchmarks (BENCHMARKS.md, bench/): the bench
scenarios of up to 1,600 connections cost 33-81 ns per event on the project's quiet 2-CPU
VM (52-130 ns under load), so :data:`NS_PER_EVENT` is 100 ns. With many connections an
event's endpoint is rarely in the caches: broadcast10k 0.25 us per event (0.38 loaded),
broadcast40k 0.40 us (0.58 loaded), 10^5 connections 1.2-2.3 us and 2.5 x 10^5 3.5 us
(loaded, set-up included); :func:`ns_per_event` grows as connections^0.7 through 0.4 us at
10,000 and 2 us at 10^5, above each. Per connection :data:`NS_PER_CONNECTION` (the front's
validation and resolution, the engine's set-up and summary: ~90 us measured at 10^5), per
run :data:`NS_PER_RUN`, per time-series row :data:`NS_PER_SAMPLE_ROW`. Against the bench's
CPU times on the quiet VM (BENCHMARKS.md) the estimate is 2.4x (scenario 5, 60 simulated
minutes), 3.2x (3b), 3.7x (broadcast40k) and 4.8x (2a) what the engine took.

Kernel mode runs in real time: a kernel run costs its duration of wall time (plus the
setup and grace around it, :data:`KERNEL_OVERHEAD_NS`); ``tcplab validate --runs N`` costs
N simulations and N kernel runs. Both are checked against the same limit
(:func:`kernel_run_cost_ns`, :func:`validate_cost_ns`), before any namespace exists.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tcplab.routing import bfs_route
from tcplab.units import format_time, plural

if TYPE_CHECKING:
    from tcplab.scenario.model import Scenario

__all__ = [
    "DEFAULT_CPU_TIME_NS",
    "NS_PER_EVENT",
    "NS_PER_EVENT_AT_10K",
    "ns_per_event",
    "NS_PER_CONNECTION",
    "NS_PER_RUN",
    "NS_PER_SAMPLE_ROW",
    "EVENTS_PER_WRITE",
    "KERNEL_OVERHEAD_NS",
    "CostEstimate",
    "estimate_cost",
    "app_demand",
    "AppWork",
    "kernel_run_cost_ns",
    "validate_cost_ns",
    "human_duration",
    "check_cpu_time",
    "check_validate_time",
    "check_kernel_run_time",
    "kernel_run_problem",
    "costed_as_kernel_run",
]

NS_PER_S = 1_000_000_000
#: ``limits.cpu_time``'s default: an hour.
DEFAULT_CPU_TIME_NS = 3600 * NS_PER_S
#: CPU time of one engine event with few connections (module doc: above the bench's 33-130 ns).
NS_PER_EVENT = 100.0
#: With many connections an event's endpoint is rarely in the caches (~4.5 KB each: 10,000
#: of them outgrow a 32 MiB cache): the cost per event grows as a power of the connections,
#: through NS_PER_EVENT_AT_10K at 10,000 and 2 us at 10^5 (module doc).
NS_PER_EVENT_AT_10K = 400.0
NS_PER_EVENT_EXPONENT = 0.7
#: CPU time per connection outside its events: validating and resolving it (the front),
#: building its endpoints and its summary (the engine): ~90 us measured at 10^5 connections.
NS_PER_CONNECTION = 100_000
#: CPU time of a run besides its connections and events: reading the configuration,
#: turning the engine's output into tables (a 1 s run of one flow costs ~0.1 s).
NS_PER_RUN = 100_000_000
#: CPU time per connection an app looks through in an action (AppWork.scans): rr with 100 ms
#: of think time on 10^5 connections cost 673 s of CPU for 4 simulated seconds, 0.9 ns per
#: connection scanned (loaded machine).
NS_PER_SCANNED_CONNECTION = 2
#: CPU time per time-series row (one flow or link at one sample time).
NS_PER_SAMPLE_ROW = 50
#: Events of one app write besides its packets: the app's action, the delayed ACK and the
#: retransmission (or loss probe) timer a lone segment arms.
EVENTS_PER_WRITE = 3
#: Events per data packet besides the links: the sender's transmit completion (TSQ) and one
#: timer (pacing, delayed ACK, retransmission).
EVENTS_PER_PACKET = 2
#: A connection's handshake and close, in data packets (SYN, SYN-ACK and ACK; FINs).
PACKETS_PER_CONNECTION = 2
#: Wall time of a kernel run besides its duration: the agents' start lead and grace, the
#: namespaces' setup and teardown (tcplab.kernel.run: START_LEAD_S 2 s, AGENT_GRACE_S 3 s).
KERNEL_OVERHEAD_NS = 10 * NS_PER_S
#: TCP/IP header bytes of a segment with timestamps (the engine's TCP_IP_HEADER_BYTES).
HEADER_BYTES = 20 + 20 + 12
#: A link's default framing overhead (the Ethernet header, the engine's default overhead).
ETHERNET_BYTES = 14
#: Qdiscs that release packets by a dequeue event (the FIFOs know each departure at enqueue).
TIMED_QDISCS = ("tbf", "fq", "fq_codel")

#: Which world a scenario being validated will run in (``tcplab kernel run`` sets "kernel").
_WORLD: ContextVar[str] = ContextVar("tcplab_cost_world", default="simulation")


@dataclass(frozen=True)
class CostEstimate:
    """A run's estimated cost (an upper bound) and what it is made of."""

    #: engine events, at most
    events: int
    #: data packets (each with its ACK), handshakes included
    packets: int
    #: connections (engine flows)
    connections: int
    #: time-series rows (sampled flows and links at every sample time)
    sample_rows: int
    #: the CPU time of one event at this many connections
    ns_per_event: float
    #: the estimated CPU time, ns
    cpu_ns: int

    def describe(self, duration_ns: int) -> str:
        """``1 connection, about 2.6e11 packets (8256 per simulated second) and 1.6e12
        engine events``: what the estimate counts."""
        rate = self.packets / max(duration_ns / NS_PER_S, 1e-9)
        return (
            f"{plural(self.connections, 'connection')}, about {_count(self.packets)} packets "
            f"({_count(rate)} per simulated second) and {_count(self.events)} engine events"
        )


def _count(x: float) -> str:
    if x < 10_000:
        return f"{x:.0f}"
    return f"{x:.2g}".replace("e+0", "e").replace("e+", "e")


def human_duration(ns: float) -> str:
    """``3.2 h``, ``12 min``, ``45 s``, ``0.3 s``: a cost as a user reads it."""
    s = ns / NS_PER_S
    for unit, size in (("h", 3600), ("min", 60)):
        if s >= 2 * size:
            return f"{s / size:.3g} {unit}" if s < 100 * size else f"{s / size:,.0f} {unit}"
    return f"{s:.0f} s" if s >= 10 else f"{s:.2g} s"


def limit_text(ns: int) -> str:
    """A limit as it is written: ``1h``, ``90min``, ``45s`` (exact when whole)."""
    for unit, size in (("h", 3600 * NS_PER_S), ("min", 60 * NS_PER_S), ("s", NS_PER_S)):
        if ns % size == 0:
            return f"{ns // size}{unit}"
    return f"{ns}ns"


def raise_to(ns: float) -> str:
    """A round limit above ``ns``, to suggest: ``4h``, ``20h``, ``900h``."""
    hours = ns / (3600 * NS_PER_S)
    if hours <= 0:
        return "1h"
    step = 10 ** math.floor(math.log10(hours))
    return f"{math.floor(hours / step + 1) * step:g}h"


# -- the estimate ------------------------------------------------------------------------


def ns_per_event(connections: int) -> float:
    """CPU time of one engine event in a run of ``connections`` connections (module doc)."""
    return max(NS_PER_EVENT, NS_PER_EVENT_AT_10K * (connections / 10_000) ** NS_PER_EVENT_EXPONENT)


def _frame_bits(payload_bytes: float, link: dict[str, Any]) -> float:
    return (payload_bytes + HEADER_BYTES + link.get("overhead_bytes", 14)) * 8


@dataclass(frozen=True)
class AppWork:
    """What an app does on one of its connections over the run, at most (both directions)."""

    #: payload bytes
    bytes: float
    #: data packets
    packets: float
    #: actions: writes, requests, the app's timers
    actions: float
    #: connections the app looks through in all (an rr with think time, a batch writer: each
    #: action scans every connection of the app; app/rr.rs on_timer(), arm_timer();
    #: app/batch_writer.rs dispatch(), on_timer())
    scans: float = 0.0


def app_demand(spec: dict[str, Any], connections: int, start_ns: int, stop_ns: int, mss: int, rtt_ns: int) -> AppWork:
    """What an app does on each of its ``connections`` open from ``start_ns`` to ``stop_ns``
    (scenario time; module doc; the engine's apps are ``crates/tcplab-core/src/app/``)."""
    kind = spec.get("kind")
    active_ns = max(0, stop_ns - start_ns)
    t_s = active_ns / NS_PER_S
    n = max(connections, 1)

    def ns(key: str, default: int = 0) -> int:
        return int(spec.get(key) or default)

    if kind == "broadcast":
        interval = max(ns("interval_ns", NS_PER_S), 1)
        first = ns("first_burst_ns")
        bursts = math.ceil((stop_ns - first) / interval) if stop_ns > first else 0  # first: scenario time
        if spec.get("bursts") is not None:
            bursts = min(bursts, int(spec["bursts"]))
        message = ns("message_bytes")
        return AppWork(bursts * message, bursts * math.ceil(max(message, 1) / mss), bursts)
    if kind == "rr":
        # one transaction per round trip (plus think time) at most, back to back
        period_s = (rtt_ns + ns("think_ns")) / NS_PER_S
        transactions = t_s / period_s if period_s > 0 else t_s * 1e6
        req, resp = ns("request_bytes", 1), ns("response_bytes", 1)
        per = math.ceil(req / mss) + math.ceil(resp / mss)
        scans = 2 * transactions * n if ns("think_ns") else 0.0
        return AppWork(transactions * (req + resp), transactions * per, 2 * transactions, scans)
    if kind == "hls":
        # what it plays, at the top profile, and what hls.js buffers ahead: maxBufferLength,
        # or more while under maxBufferSize, up to maxMaxBufferLength; a request per segment
        # and per playlist; a tick every tick_ns
        rates = [int(p.get("bitrate_bps") or 0) for p in spec.get("profiles") or []] or [0]
        top, lowest = max(rates), min(rates)
        ahead = max(
            top / 8 * ns("max_buffer_ns") / NS_PER_S,
            min(float(ns("max_buffer_size_bytes")), top / 8 * ns("max_max_buffer_ns") / NS_PER_S),
        )
        total = top / 8 * t_s + ahead
        segments = (t_s + ahead * 8 / max(lowest, 1)) / max(ns("segment_ns", NS_PER_S) / NS_PER_S, 1e-3)
        ticks = active_ns / max(ns("tick_ns", 100_000_000), 1)
        return AppWork(total / n, (total / mss + 4 * segments) / n, (2 * segments + ticks) / n)
    if kind == "nfs_stream":
        # the play-out rate plus the buffer read ahead (or the file), in READs of at most
        # rsize and readahead
        total = ns("bitrate_bps") / 8 * (t_s + ns("max_buffer_ns") / NS_PER_S) + ns("rsize_bytes")
        if spec.get("file_bytes") is not None:
            total = min(total, float(spec["file_bytes"]))
        calls = total / max(min(ns("rsize_bytes", 1), ns("readahead_bytes", 1 << 20)), 1)
        return AppWork(total / n, (total / mss + 2 * calls) / n, 2 * calls / n, 2 * calls)
    if kind == "batch_writer":
        # a batch per interval, shared by the queues; each queue retries at most once per
        # timeout plus twice the minimum backoff
        body = ns("body_bytes") + ns("request_header_bytes") + ns("response_bytes")
        batches = t_s / max(ns("interval_ns", NS_PER_S) / NS_PER_S, 1e-3)
        retry_s = (ns("timeout_ns") + 2 * ns("retry_min_ns")) / NS_PER_S
        attempts = batches / n + (t_s / retry_s if retry_s > 0 else batches / n)
        return AppWork(attempts * body, attempts * (2 + body / mss), 2 * attempts, 2 * attempts * n)
    return AppWork(math.inf, math.inf, 0.0)  # unknown app: as fast as the path


class _CostPaths:
    """The engine configuration's network as the estimate reads it: routes (the twin of the
    engine's, :func:`tcplab.routing.bfs_route`), the events a packet adds on each link, what
    each link carries at most, and per path (a flow's ends and which side writes) its data
    links, events per packet (with its ACK), the flow limits on it, its round trip and its
    slowest link."""

    def __init__(self, config: dict[str, Any]):
        self.duration = int(config["duration_ns"])
        self.nodes = config.get("nodes") or []
        self.links = config.get("links") or []
        self.ends = [(int(link["from"]), int(link["to"])) for link in self.links]
        self.forwards = [n.get("kind") == "router" or bool(n.get("forwarding")) for n in self.nodes]
        self._routes: dict[tuple[int, int], list[int]] = {}
        # events each link adds to a packet crossing it: the arrival, a timed qdisc's dequeue,
        # the receiving host's NAPI poll (NIC model) and a deferral off its CPU (CPU model)
        self.per_link = [
            1 + (1 if (link.get("queue") or {}).get("kind") in TIMED_QDISCS else 0) + self.node_extra(int(link["to"]))
            for link in self.links
        ]
        self.capacity = [self._link_capacity(link) for link in self.links]
        self._paths: dict[tuple[int, int, str], tuple[list[int], int, float, int, int]] = {}

    def route(self, a: int, b: int) -> list[int]:
        if (a, b) not in self._routes:
            self._routes[a, b] = bfs_route(len(self.nodes), self.ends, a, b, self.forwards) or []
        return self._routes[a, b]

    def node_extra(self, index: int) -> int:
        """Events a packet adds at a node: a NIC's NAPI poll (and its allowance), a deferral
        off a CPU that is not always on."""
        node = self.nodes[index] if index < len(self.nodes) else {}
        extra = 1 if node.get("nic") else 0
        if (node.get("nic") or {}).get("allowance"):
            extra += 1
        cpu = node.get("cpu")
        if cpu and float(cpu.get("share", 1.0)) < 1.0:
            extra += 1
        cost = node.get("cpu_cost")
        if cost:
            # The CPU cost of packets: a transmit-done event per skb sent, and a NAPI poll
            # (of the ideal NIC) per packet received when the host has no nic.
            extra += (1 if cost.get("tx_skb_ns") else 0) + (0 if node.get("nic") else 1)
        return extra

    def _link_capacity(self, link: dict[str, Any]) -> float:
        """What a link carries at most: its rate, or its tbf's (tc's rate, and its bucket once)."""
        queue = link.get("queue") or {}
        if queue.get("kind") != "tbf" or not queue.get("rate_bps"):
            return float(link["rate_bps"])
        burst_bps = int(queue.get("burst_bytes") or 0) * 8 / max(self.duration / NS_PER_S, 1e-9)
        return min(float(link["rate_bps"]), float(queue["rate_bps"]) + burst_bps)

    def flow_caps(self, data: list[int], sender: int) -> float:
        """A flow's own rate limits on its path: fq's maxrate, a Cilium EDT aggregate's rate."""
        cap = math.inf
        for k in data:
            queue = self.links[k].get("queue") or {}
            if queue.get("kind") == "fq" and queue.get("maxrate_bps"):
                cap = min(cap, float(queue["maxrate_bps"]))
            for agg in self.links[k].get("edt") or []:
                if sender in (agg.get("nodes") or []):
                    cap = min(cap, float(agg["rate_bps"]))
        return cap

    def path(self, src: int, dst: int, side: str) -> tuple[list[int], int, float, int, int]:
        """``(data links, events per packet, rate cap, round trip ns, slowest link)``."""
        key = (src, dst, side)
        if key not in self._paths:
            links, nodes, per_link, capacity = self.links, self.nodes, self.per_link, self.capacity
            fwd, rev = self.route(src, dst), self.route(dst, src)
            data, ack = (fwd, rev) if side == "client" else (rev, fwd)
            sender = int(links[data[0]]["from"]) if data else src
            events = sum(per_link[k] for k in data) + sum(per_link[k] for k in ack) + EVENTS_PER_PACKET
            if sender < len(nodes) and nodes[sender].get("cpu"):
                events += self.node_extra(sender)
            slowest = min((capacity[k] for k in data), default=math.inf)
            rtt = sum(int(links[k]["delay_ns"]) for k in fwd + rev)
            slowest_link = min(data, key=lambda k: capacity[k]) if data else -1
            self._paths[key] = (data, events, min(slowest, self.flow_caps(data, sender)), rtt, slowest_link)
        return self._paths[key]


def _flow_rows(config: dict[str, Any], net: _CostPaths) -> list[tuple]:
    """Per flow: its data links, events per packet, active time, demand (bit/s on the wire of
    its data path; inf: as fast as the path), the share of it its own limits let through, the
    packets and app events it writes at most, its app's scans, the bits of a full frame."""
    duration, links = net.duration, net.links
    app_of: dict[int, dict[str, Any]] = {}
    app_size: dict[int, int] = {}
    for app in config.get("apps") or []:
        for f in app.get("flows") or []:
            app_of[int(f)] = app.get("spec") or {}
            app_size[int(f)] = len(app.get("flows") or [])
    works: dict[tuple, AppWork] = {}
    rows = []
    for i, f in enumerate(config.get("flows") or []):
        side = f.get("data_side", "client")
        data, events, path_cap, rtt, slowest = net.path(int(f["src"]), int(f["dst"]), side)
        start = int(f.get("start_ns") or 0)
        stop = min(int(f["stop_ns"]), duration) if f.get("stop_ns") is not None else duration
        active = max(0, stop - start)
        tcp = f.get("tcp") or {}
        mss = int(tcp.get("mss_bytes") or 1448)
        app = f.get("app") or {"kind": "bulk"}
        t_s = active / NS_PER_S
        if app.get("kind") == "driven" and i in app_of:
            spec = app_of[i]
            # a broadcast's bursts are at fixed times: its connections' starts do not matter
            key = (id(spec), None if spec.get("kind") == "broadcast" else start, stop, mss, rtt)
            if key not in works:
                works[key] = app_demand(spec, app_size.get(i, 1), start, stop, mss, rtt)
            work = works[key]
            total_bytes, packets, extra, scan = work.bytes, work.packets, work.actions * EVENTS_PER_WRITE, work.scans
        elif app.get("kind") == "bulk_bytes":
            total_bytes = float(app.get("bytes") or 0)
            packets, extra, scan = math.ceil(total_bytes / mss), 0.0, 0.0
        else:
            total_bytes, packets, extra, scan = math.inf, math.inf, 0.0, 0.0
        # bits on the wire: an app's small writes are mostly headers
        wire_bits = (total_bytes + packets * (HEADER_BYTES + ETHERNET_BYTES)) * 8
        wanted = wire_bits / t_s if t_s > 0 else 0.0
        pacing = tcp.get("max_pacing_rate_bytes_per_sec", 0) * 8 or math.inf
        demand = min(wanted, path_cap, pacing, (f.get("reader") or {}).get("rate_bps") or math.inf)
        # what the flow's own limits let through of what its app would send
        own = demand / wanted if 0 < wanted < math.inf else 1.0
        frame = _frame_bits(mss, links[slowest]) if slowest >= 0 else (mss + HEADER_BYTES) * 8
        rows.append((data, events, active, demand, own, packets, extra, scan, frame))
    return rows


def estimate_cost(config: dict[str, Any]) -> CostEstimate:
    """An upper bound of the CPU time of simulating the engine ``config``
    (:meth:`~tcplab.scenario.Scenario.to_core`); see the module doc."""
    net = _CostPaths(config)
    duration, links, capacity = net.duration, net.links, net.capacity
    flows = config.get("flows") or []
    rows = _flow_rows(config, net)

    # the connections sharing a link share its rate: each link's demand scaled to its capacity
    load = [0.0] * len(links)
    for data, _e, _a, demand, *_ in rows:
        for k in data:
            load[k] += demand
    scale = [min(1.0, capacity[k] / load[k]) if load[k] > 0 else 1.0 for k in range(len(links))]
    packets_total = 0.0
    events_total = 0.0
    scans = 0.0
    path_scale: dict[int, float] = {}
    for data, events, active, demand, own, packets, extra, scan, frame in rows:
        if id(data) not in path_scale:
            path_scale[id(data)] = min((scale[k] for k in data), default=1.0)
        share = own * path_scale[id(data)]
        bits = demand * path_scale[id(data)] * active / NS_PER_S
        # as fast as the path: full frames at the slowest link; an app's writes: each its own
        n = bits / frame if packets == math.inf else packets * share
        n += PACKETS_PER_CONNECTION
        packets_total += n
        events_total += n * events + extra * share
        scans += scan * share
    samples = duration // int(config.get("sample_interval_ns") or duration or 1) + 2
    sampled = sum(1 for f in flows if f.get("sample", True))
    sample_rows = samples * (sampled + len(links))
    events_total += samples
    connections = len(flows)
    ns_event = ns_per_event(connections)
    cpu = NS_PER_RUN + events_total * ns_event + connections * NS_PER_CONNECTION + sample_rows * NS_PER_SAMPLE_ROW
    cpu += scans * NS_PER_SCANNED_CONNECTION
    return CostEstimate(
        events=int(events_total),
        packets=int(packets_total),
        connections=connections,
        sample_rows=sample_rows,
        ns_per_event=ns_event,
        cpu_ns=int(min(cpu, 2**63 - 1)),
    )


def kernel_run_cost_ns(duration_ns: int) -> int:
    """Wall time of a kernel run: its duration in real time, plus its setup and grace."""
    return int(duration_ns) + KERNEL_OVERHEAD_NS


def validate_cost_ns(simulation_ns: int, duration_ns: int, runs: int) -> int:
    """``tcplab validate --runs N``: N simulations and N kernel runs, one after the other."""
    return int(runs) * (int(simulation_ns) + kernel_run_cost_ns(duration_ns))


# -- the check at validation -------------------------------------------------------------


@contextmanager
def costed_as_kernel_run() -> Iterator[None]:
    """Scenarios validated inside are checked as kernel runs (wall time = duration), not as
    simulations: ``tcplab kernel run`` loads its scenario in this context."""
    token = _WORLD.set("kernel")
    try:
        yield
    finally:
        _WORLD.reset(token)


def check_cpu_time(sc: Scenario, error: Any) -> None:
    """Refuse a run estimated above ``limits.cpu_time``: one error naming the estimate and
    the limit (``error(path, problem, expected, value)``, as :mod:`~tcplab.scenario.limits`)."""
    limit = sc.limits.cpu_time
    if _WORLD.get() == "kernel":
        problem = kernel_run_problem(sc)
        if problem is not None:
            error(("limits", "cpu_time"), *problem, limit)
        return
    est = estimate_cost(sc.to_core())
    if est.cpu_ns > limit:
        error(
            ("limits", "cpu_time"),
            f"{limit_text(limit)} is less than this run's estimated CPU time of {human_duration(est.cpu_ns)} "
            f"({est.describe(sc.duration)})",
            "a shorter duration or fewer connections, or a larger limit such as "
            f"--set limits.cpu_time={raise_to(est.cpu_ns)}",
            limit,
        )


def kernel_run_problem(sc: Scenario) -> tuple[str, str] | None:
    """``(problem, expected)`` when a kernel run of ``sc`` (real time: its duration) would
    take longer than its ``limits.cpu_time``, else None."""
    limit = sc.limits.cpu_time
    cost = kernel_run_cost_ns(sc.duration)
    if cost <= limit:
        return None
    return (
        f"{limit_text(limit)} is less than this kernel run takes: it runs in real time, "
        f"{human_duration(cost)} for a duration of {format_time(sc.duration)}",
        f"a shorter duration, or a larger limit such as --set limits.cpu_time={raise_to(cost)}",
    )


def check_kernel_run_time(sc: Scenario) -> None:
    """Raise a :class:`~tcplab.errors.ScenarioError` (one line) when a kernel run of ``sc``
    would take longer than its ``limits.cpu_time`` (:func:`kernel_run_problem`)."""
    from tcplab.errors import ScenarioError

    problem = kernel_run_problem(sc)
    if problem is not None:
        raise ScenarioError(
            problem[0], file=sc.source or "", path="limits.cpu_time", value=sc.limits.cpu_time, expected=problem[1]
        )


def check_validate_time(sc: Scenario, runs: int) -> None:
    """Raise a :class:`~tcplab.errors.ScenarioError` (one line) when ``tcplab validate
    --runs N`` of ``sc`` would take longer than its ``limits.cpu_time``: N simulations and
    N kernel runs, one after the other (:func:`validate_cost_ns`)."""
    from tcplab.errors import ScenarioError

    limit = sc.limits.cpu_time
    simulation = estimate_cost(sc.to_core()).cpu_ns
    kernel = kernel_run_cost_ns(sc.duration)
    total = validate_cost_ns(simulation, sc.duration, runs)
    if total > limit:
        raise ScenarioError(
            f"{limit_text(limit)} is less than tcplab validate's estimated time of {human_duration(total)} "
            f"({plural(runs, 'run')} of each world: a simulation of about {human_duration(simulation)} of CPU and a "
            f"kernel run of {human_duration(kernel)} in real time)",
            file=sc.source or "",
            path="limits.cpu_time",
            value=limit,
            expected=f"fewer --runs or a shorter duration, or a larger limit such as --set "
            f"limits.cpu_time={raise_to(total)}",
        )

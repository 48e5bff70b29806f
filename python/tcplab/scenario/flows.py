"""Flows: a workload between a client host and a server host, its connections, cc and socket settings.

A ``flows:`` entry is one workload (its ``app:``, :mod:`~tcplab.scenario.apps`) from ``from``
(the client: it connects, and sends the requests) to ``to`` (the server). It expands into
the engine's flows, one per TCP connection (:func:`expand_flow`), and for an application
into one engine app per copy.

Names. The workload's name ``W`` is ``name``, else ``FROM-TO-INDEX`` (FROM: the first sender
of a broadcast). One connection is ``W``; several are ``W.0``, ``W.1``, ...; a broadcast's are
``W.<sender>.<k>`` (sender: its position in ``from``); iperf3 ``--bidir``'s ``W.fwd`` and
``W.rev``. ``count: K`` makes K independent copies, each prefixed ``W.<copy>`` (the copy's
app is named ``W.<copy>``, a single copy's app ``W``).

Start times. Connections start at ``start``, except a broadcast's: its connections' starts
are spread evenly over :data:`BROADCAST_WARMUP_NS` after ``start`` (connection ``j`` of ``n``
at ``start + j * 1s / n``), so that tens of thousands of SYNs do not reach the receiver in
the same microsecond (as websocket clients reconnecting over time, not a synthetic storm);
its first burst (``first_burst``, scenario time) defaults to one second after the warm-up.

Readers. ``reader:`` sets how the application receiving the data reads it (engine
``FlowConfig.reader``): at once (default), ``{rate: 2Mbit}`` (a slow consumer), or
``{every: 100ms, bytes: 64KB}`` (one that wakes up periodically). It slows the side that
receives the data (the other side than :data:`DATA_SIDE`): the server for bulk, rr (reading
requests), batch_writer and broadcast; the client for maerts, hls and nfs_stream; the
receiver of each half of a bidir pair.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from tcplab.errors import UnitError, show_value
from tcplab.scenario.apps import App, AppSpec
from tcplab.scenario.base import _Model
from tcplab.scenario.fields import (
    NAME_PATTERN,
    Bool,
    CcName,
    Int,
    IntSize,
    MemTriple,
    Name,
    NodeName,
    Rate,
    Time,
    _did_you_mean,
    _sub,
    _t,
)
from tcplab.units import parse_rate, parse_size, parse_time

#: A broadcast's connections start over this long after the flow's ``start``.
BROADCAST_WARMUP_NS = 1_000_000_000
#: Its first burst, when not given: this long after the warm-up.
BROADCAST_FIRST_BURST_AFTER_NS = 1_000_000_000

#: Which endpoint writes a workload's data (engine ``FlowConfig.data_side``): the side whose
#: sender the time series and the flow summary report.
DATA_SIDE = {
    "bulk": "client",
    "maerts": "server",
    "rr": "client",
    "hls": "server",
    "nfs_stream": "server",
    "batch_writer": "client",
    "broadcast": "client",
}

READER_EXPECTED = "{rate: 2Mbit} or {every: 100ms, bytes: 64KB} (or immediate)"


class ReaderSpec(BaseModel):
    """A parsed ``reader:``: how the data's receiving application reads."""

    model_config = ConfigDict(frozen=True)
    kind: Literal["immediate", "rate", "bursts"] = "immediate"
    rate_bps: int | None = None
    interval_ns: int | None = None
    bytes: int | None = None

    def to_core(self) -> dict[str, Any]:
        if self.kind == "rate":
            return {"kind": "rate", "rate_bps": self.rate_bps}
        if self.kind == "bursts":
            return {"kind": "bursts", "interval_ns": self.interval_ns, "bytes": self.bytes}
        return {"kind": "immediate"}


def _parse_reader(value: Any) -> ReaderSpec:
    if isinstance(value, ReaderSpec):
        return value
    if value is None or value == "immediate":
        return ReaderSpec()
    if not isinstance(value, dict):
        raise UnitError(f"{show_value(value)} is not a reader", READER_EXPECTED, value)
    allowed = ("rate", "every", "bytes")
    for key in value:
        if key not in allowed:
            raise UnitError(
                f"unknown key {show_value(key)}{_did_you_mean(key, list(allowed))}",
                "one of: rate, or every and bytes",
                key,
                subpath=(str(key),),
            )
    if "rate" in value:
        if len(value) > 1:
            raise UnitError("rate given with every/bytes", READER_EXPECTED, value)
        try:
            rate = parse_rate(value["rate"], allow_zero=False)
        except UnitError as e:
            raise _sub(e, "rate") from None
        if rate < 8:
            raise UnitError(
                f"{rate} bit/s is less than one byte per second",
                "a rate of at least 8bit",
                value["rate"],
                subpath=("rate",),
            )
        return ReaderSpec(kind="rate", rate_bps=rate)
    for key in ("every", "bytes"):
        if key not in value:
            raise UnitError("missing", "every and bytes, such as {every: 100ms, bytes: 64KB}", None, subpath=(key,))
    try:
        every = parse_time(value["every"], allow_zero=False)
    except UnitError as e:
        raise _sub(e, "every") from None
    try:
        size = parse_size(value["bytes"], allow_zero=False)
    except UnitError as e:
        raise _sub(e, "bytes") from None
    return ReaderSpec(kind="bursts", interval_ns=every, bytes=size)


Reader = Annotated[ReaderSpec, BeforeValidator(_parse_reader)]


def _parse_from(value: Any) -> str | tuple[str, ...]:
    """A host name, or (broadcast) a list of sender host names."""
    expected = "a host name, or a list of host names for a broadcast such as [app1, app2]"
    if isinstance(value, str):
        if NAME_PATTERN.match(value):
            return value
        raise UnitError(f"{show_value(value)} is not a valid node name", "letters, digits, '_', '.' or '-'", value)
    if isinstance(value, (list, tuple)):
        if not value:
            raise UnitError("an empty list of senders", expected, value)
        for i, item in enumerate(value):
            if not isinstance(item, str) or not NAME_PATTERN.match(item):
                raise UnitError(f"{show_value(item)} is not a node name", expected, item, subpath=(i,))
            if item in value[:i]:
                # a host is one sender: the same one twice would be two apps' worth of
                # connections from one host, not what a list of senders means
                raise UnitError(
                    f"{show_value(item)} is already sender {list(value).index(item)}",
                    "each sender host once (connections sets the connections per sender)",
                    item,
                    subpath=(i,),
                )
        return tuple(value)
    raise UnitError(f"{show_value(value)} is not a host name", expected, value)


#: Why ``tcp_ecn`` and ``tcp_ecn_fallback`` are not per-flow settings, and where they go.
_HOST_ECN = {
    "tcp_ecn": (
        "a host sysctl that acts by each end's role (the client's asks for ECN, the server's accepts it), "
        "not a per-flow setting",
        "hosts.NAME.sysctl.tcp_ecn on the flow's client or server host",
    ),
    "tcp_ecn_fallback": (
        "a host sysctl of the connecting side, not a per-flow setting",
        "hosts.NAME.sysctl.tcp_ecn_fallback on the flow's client host",
    ),
}


class FlowTcp(_Model):
    """Per-flow TCP overrides: any sysctl (except the cc, see ``cc:``, and ``tcp_ecn`` /
    ``tcp_ecn_fallback``, which act by each end's role: set them on the hosts) plus socket
    settings."""

    _key_prefixes = ("net.ipv4.", "net/ipv4/")
    _misplaced: ClassVar[dict[str, tuple[str, str]]] = _HOST_ECN
    mss: Annotated[int, BeforeValidator(parse_size)] | None = None
    initial_cwnd: Int(1, 65535) | None = None
    rto_min: Time | None = None
    fq_pacing: Bool | None = None
    max_pacing_rate: Rate | None = None
    tcp_rmem: MemTriple | None = None
    tcp_wmem: MemTriple | None = None
    tcp_slow_start_after_idle: Bool | None = None
    tcp_early_retrans: Int(0, 4) | None = None
    tcp_recovery: Int(0, 7) | None = None
    tcp_frto: Int(0, 2) | None = None
    tcp_reordering: Int(1, 300) | None = None
    tcp_max_reordering: Int(1, 1_000_000) | None = None
    tcp_min_rtt_wlen: Int(0, 86400) | None = None
    tcp_limit_output_bytes: IntSize | None = None
    tcp_pacing_ss_ratio: Int(0, 1000) | None = None
    tcp_pacing_ca_ratio: Int(0, 1000) | None = None
    tcp_moderate_rcvbuf: Bool | None = None
    tcp_comp_sack_delay_ns: Int(0) | None = None
    tcp_comp_sack_nr: Int(0, 255) | None = None
    tcp_min_tso_segs: Int(1, 255) | None = None
    tcp_tso_rtt_log: Int(0, 31) | None = None
    #: TCP_NODELAY on the flow's sockets (the application's setsockopt): Nagle's algorithm off.
    nodelay: Bool | None = None

    @field_validator("mss")
    @classmethod
    def _mss_range(cls, v: int | None) -> int | None:
        if v is not None and not 88 <= v <= 65000:
            raise UnitError(f"{v} bytes is out of range", "an MSS from 88 to 65000 bytes such as 1448", v)
        return v

    @field_validator("max_pacing_rate")
    @classmethod
    def _pacing_whole_bytes(cls, v: int | None) -> int | None:
        # SO_MAX_PACING_RATE is in bytes per second: below 8 bit/s it would be 0 (no sending).
        if v is not None and v < 8:
            raise UnitError(f"{v} bit/s is less than one byte per second", "a rate of at least 8bit", v)
        return v

    @field_validator("rto_min")
    @classmethod
    def _rto_whole_ms(cls, v: int | None) -> int | None:
        if v is not None and (v < 1_000_000 or v % 1_000_000):
            raise UnitError(f"{_t(v)} is not a whole number of milliseconds", "a time such as 200ms (at least 1ms)", v)
        return v

    def overrides(self) -> dict[str, Any]:
        """Only the settings given, in the engine's ``tcp`` names."""
        out: dict[str, Any] = {}
        for name in type(self).model_fields:
            value = getattr(self, name)
            if value is None or name == "nodelay":  # a socket option of the flow: FlowConfig.nodelay
                continue
            if name == "mss":
                out["mss_bytes"] = value
            elif name == "rto_min":
                out["rto_min_ms"] = value // 1_000_000
            elif name == "max_pacing_rate":
                out["max_pacing_rate_bytes_per_sec"] = value // 8
            elif name == "tcp_min_rtt_wlen":
                out["tcp_min_rtt_wlen_s"] = value
            else:
                out[name] = list(value) if isinstance(value, tuple) else value
        return out


class CcParams(_Model):
    """Congestion-control module parameters (``/sys/module/tcp_cubic/parameters``, BBR patch)."""

    hystart: Bool = True
    hystart_detect: Int(0, 3) = 3
    hystart_low_window: Int(0, 1_000_000) = 16
    hystart_ack_delta_us: Int(0, 1_000_000) = 2000
    fast_convergence: Bool = True
    tcp_friendliness: Bool = True
    beta: Int(1, 1023) = 717
    bic_scale: Int(1, 1_000_000) = 41
    initial_ssthresh: Int(0, 2**31 - 1) = 0
    bbr_vm_patch: Bool = False

    def to_core(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in type(self).model_fields}


class Flow(_Model):
    """A ``flows:`` entry: one (or ``count``) TCP connections carrying data from -> to."""

    from_: Annotated[str | tuple[str, ...], BeforeValidator(_parse_from)] = Field(
        alias="from", description="the client host's name (a list of senders for a broadcast)"
    )
    to: NodeName = Field(description="the server host's name")
    app: App = AppSpec(kind="bulk")
    reader: Reader = ReaderSpec()
    cc: CcName | None = None
    start: Time = 0
    stop: Time | None = None
    count: Int(1, 100_000) = 1
    name: Name | None = None
    cc_params: CcParams = Field(default_factory=CcParams)
    tcp: FlowTcp = Field(default_factory=FlowTcp)


#: The most engine flows (TCP connections) a scenario may expand to: ten times the stories'
#: 40 000 broadcast connections, already more than the default memory limit lets run; it
#: keeps validation from expanding ``count: 100000`` x ``connections: 1000000``.
MAX_TOTAL_CONNECTIONS = 1_000_000


def connections_of(flow: Any) -> int:
    """How many engine flows ``flow`` expands to (without expanding it)."""
    app: AppSpec = getattr(flow, "app", None) or AppSpec(kind="bulk")
    if app.is_engine_app:
        per_copy = app.connections * (len(senders_of(flow)) if app.kind == "broadcast" else 1)
    else:
        per_copy = 2 if app.bidir else 1
    return (flow.count or 1) * per_copy


def sampled_connections_of(flow: Any) -> int:
    """Those of :func:`connections_of` that keep time series (not a broadcast's)."""
    app: AppSpec = getattr(flow, "app", None) or AppSpec(kind="bulk")
    return 0 if app.kind == "broadcast" else connections_of(flow)


def senders_of(flow: Any) -> list[str]:
    """The client hosts of a flow entry: ``from``, or each host of a broadcast's ``from`` list."""
    src = getattr(flow, "from_", None)
    if src is None:
        return []
    return list(src) if isinstance(src, (list, tuple)) else [src]


@dataclass(frozen=True)
class Connection:
    """One TCP connection of a flow entry: one engine flow."""

    name: str
    sender: str  # the client host (it connects)
    data_side: str  # "client" or "server": whose writer carries the data
    app: dict[str, Any]  # the engine's per-flow app
    start_ns: int
    sample: bool = True


@dataclass(frozen=True)
class Workload:
    """One engine application of a flow entry: its name, its connections (positions in the
    entry's connection list), and its engine spec."""

    name: str
    connections: list[int] = field(default_factory=list)
    spec: dict[str, Any] = field(default_factory=dict)


def workload_name(index: int, flow: Any) -> str:
    """``name``, else ``FROM-TO-INDEX`` (FROM: the first sender)."""
    senders = senders_of(flow)
    return flow.name or f"{senders[0] if senders else None}-{flow.to}-{index}"


def expand_flow(index: int, flow: Any) -> tuple[list[Connection], list[Workload]]:
    """The connections and engine applications of ``flows[index]`` (see the module doc)."""
    app: AppSpec = getattr(flow, "app", None) or AppSpec(kind="bulk")
    base = workload_name(index, flow)
    senders = senders_of(flow) or [str(getattr(flow, "from_", None))]
    start = flow.start or 0
    conns: list[Connection] = []
    apps: list[Workload] = []
    for copy in range(flow.count):
        prefix = base if flow.count == 1 else f"{base}.{copy}"
        first = len(conns)
        if not app.is_engine_app:
            core = app.to_core()
            if app.bidir:
                conns.append(Connection(f"{prefix}.fwd", senders[0], "client", core, start))
                conns.append(Connection(f"{prefix}.rev", senders[0], "server", core, start))
            else:
                conns.append(Connection(prefix, senders[0], DATA_SIDE[app.kind], core, start))
            continue
        side = DATA_SIDE[app.kind]
        if app.kind == "broadcast":
            n = len(senders) * app.connections
            for s, host in enumerate(senders):
                for k in range(app.connections):
                    j = s * app.connections + k
                    at = start + j * BROADCAST_WARMUP_NS // n
                    conns.append(Connection(f"{prefix}.{s}.{k}", host, side, {"kind": "driven"}, at, sample=False))
        elif app.connections == 1:
            conns.append(Connection(prefix, senders[0], side, {"kind": "driven"}, start))
        else:
            for k in range(app.connections):
                conns.append(Connection(f"{prefix}.{k}", senders[0], side, {"kind": "driven"}, start))
        spec = app.spec_to_core(len(senders))
        if app.kind == "broadcast" and "first_burst_ns" not in app.params and "first_burst_ns" in spec:
            spec["first_burst_ns"] = start + BROADCAST_WARMUP_NS + BROADCAST_FIRST_BURST_AFTER_NS
        apps.append(Workload(prefix, list(range(first, len(conns))), spec))
    return conns, apps


def flow_names(index: int, flow: Any) -> list[str]:
    """The engine flow names of ``flows[index]``, one per connection (see the module doc)."""
    return [c.name for c in expand_flow(index, flow)[0]]

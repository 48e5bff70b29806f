"""Scenario files: the user's description of a network, its hosts and its traffic.

The model
---------
A scenario is a YAML mapping (see ``tcplab/scenarios/*.yaml`` for complete examples)::

    name: lossy-long-path
    duration: 60s
    hosts:
      server: {sysctl: {tcp_congestion_control: bbr}}
      client: {}
    routers: [r1]
    links:
      - {between: [server, r1], rate: 5Mbit, delay: 25ms, loss: 1%, queue: {limit: 1bdp}}
      - {between: [r1, client], rate: 100Mbit, delay: 25ms}
    flows:
      - {from: server, to: client, app: bulk}

It is parsed in three steps, each of which can only fail with a
:class:`~tcplab.errors.ScenarioError` naming the field path, the value and what was expected:

1. YAML -> plain dict (duplicate keys are errors), then ``--set PATH=VALUE`` overrides are
   applied to that dict (:mod:`tcplab.overrides`).
2. The dict is validated by the pydantic models below. Unknown keys are errors (typos must
   not be silently ignored), every human unit is parsed by :mod:`tcplab.units`.
3. Cross-references are checked: node names unique, links join two different known nodes,
   flows go from a host to another host that is reachable (:mod:`tcplab.routing`).

Defaults are Linux v6.6's: a host's ``sysctl`` block takes ``net.ipv4.tcp_*`` names (with or
without the ``net.ipv4.`` prefix) and their default values; cc module parameters are those of
``/sys/module/tcp_cubic/parameters``.

Where a flow's TCP settings come from
    ``tcp_rmem`` from the **receiving** host's sysctl (it sizes the receive buffer); every
    other TCP setting from the **sending** host's sysctl; then the flow's own ``tcp:`` block
    overrides either. ``cc`` defaults to the sender's ``tcp_congestion_control``.

Links and queues
    Each ``links:`` entry makes two one-way links, ``a->b`` with the entry's settings and
    ``b->a`` with the same settings except those given under ``reverse:`` (field by field: a
    ``reverse.queue`` replaces the whole queue block). Each one-way link serializes at
    ``rate`` (counting ``overhead`` framing bytes per packet), holds a drop-tail queue, then
    applies loss, reordering and the propagation ``delay``.

    Queue limits may be given in bandwidth-delay products: ``limit: 1bdp``. For a one-way link,
    ``bdp_bytes = rate_bps / 8 * base_rtt`` where ``base_rtt`` is the largest round-trip
    propagation delay (sum of one-way delays along the flow's data route plus its ACK route)
    among the flows whose data or ACK route crosses that link; if no flow crosses it,
    ``base_rtt = 2 * delay`` of the link itself. Then ``pfifo`` gets
    ``max(1, round(k * bdp_bytes / (1500 + overhead)))`` packets and ``bfifo`` gets
    ``max(1500 + overhead, round(k * bdp_bytes))`` bytes for ``limit: kbdp`` (rounding half
    up). ``1500 + overhead`` (1514 by default) is a full-size segment as the link counts it
    (1448 B MSS + 52 B TCP/IP headers with timestamps + Ethernet framing): the serializer
    spends ``rate`` on those bytes, and qdiscs count them (``skb->len``), so a ``1bdp``
    ``pfifo`` holds exactly the packets that fill the path once, and the same as a ``1bdp``
    ``bfifo`` (the engine's test helpers count the same way).
    Defaults: ``pfifo`` with 1000 packets (a device's ``txqueuelen``); ``bfifo`` defaults to
    1 514 000 bytes (``txqueuelen * (1500 + 14)``, as Linux sizes it).

Loss (``netem`` meanings)
    ``loss: 1%`` (or ``0.01``): each packet independently. ``{gilbert_elliott: {p, r, h, k}}``:
    two states; ``p`` = P(good->bad), ``r`` = P(bad->good), ``h`` = P(packet survives | bad),
    ``k`` = P(packet survives | good). netem's command line takes ``p r 1-h 1-k``; tcplab takes
    ``h`` and ``k`` themselves. Defaults as current iproute2: ``r = 1 - p``, ``h = 0%`` (bad
    state loses everything), ``k = 100%``. ``{drop: [5, 17]}`` drops exactly those data packets,
    counted from 0 in the order they enter the link (for tests).

Flows
    ``from`` is the data sender (netperf ``TCP_STREAM``'s sending side). ``count: N`` makes N
    identical flows named ``<name>.0`` ... ``<name>.N-1``. The default name is
    ``<from>-<to>-<index in flows>``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from decimal import Decimal
from fractions import Fraction
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from tcplab.errors import ScenarioError, UnitError, UnitErrors, show_value
from tcplab.routing import bfs_route, route_delay_ns
from tcplab.units import (
    U64_MAX,
    parse_fraction,
    parse_number,
    parse_rate,
    parse_size,
    parse_time,
)

__all__ = [
    "Scenario",
    "CC_NAMES",
    "LINUX_TCP_DEFAULTS",
    "LINUX_CC_DEFAULTS",
    "validate_scenario",
]

CC_NAMES = ("reno", "cubic", "bbr")
NAME_PATTERN = re.compile(r"[A-Za-z0-9_.-]+\Z")
NOMINAL_PACKET_BYTES = 1500  # IP length of a full-size segment; "bdp" limits count it plus the link overhead
DEFAULT_PFIFO_LIMIT = 1000  # txqueuelen
DEFAULT_BFIFO_LIMIT = 1000 * (1500 + 14)  # txqueuelen * psched_mtu()

#: The engine's TCP settings and their Linux v6.6 defaults (the engine applies the same).
LINUX_TCP_DEFAULTS: dict[str, Any] = {
    "mss_bytes": 1448,
    "tcp_rmem": [4096, 131072, 6291456],
    "tcp_wmem": [4096, 16384, 4194304],
    "tcp_slow_start_after_idle": True,
    "tcp_early_retrans": 3,
    "tcp_recovery": 1,
    "tcp_frto": 2,
    "tcp_reordering": 3,
    "tcp_max_reordering": 300,
    "tcp_min_rtt_wlen_s": 300,
    "tcp_limit_output_bytes": 1048576,
    "tcp_pacing_ss_ratio": 200,
    "tcp_pacing_ca_ratio": 120,
    "tcp_moderate_rcvbuf": True,
    "tcp_comp_sack_delay_ns": 1000000,
    "tcp_comp_sack_nr": 44,
    "tcp_min_tso_segs": 2,
    "tcp_tso_rtt_log": 9,
    "initial_cwnd": 10,
    "rto_min_ms": 200,
    "fq_pacing": False,
    "max_pacing_rate_bytes_per_sec": U64_MAX,
}

#: Congestion-control module parameters and their defaults (tcp_cubic.c, v6.6).
LINUX_CC_DEFAULTS: dict[str, Any] = {
    "hystart": True,
    "hystart_detect": 3,
    "hystart_low_window": 16,
    "hystart_ack_delta_us": 2000,
    "fast_convergence": True,
    "tcp_friendliness": True,
    "beta": 717,
    "bic_scale": 41,
    "initial_ssthresh": 0,
    "bbr_vm_patch": False,
}


# --------------------------------------------------------------------------- value parsers
# Each raises UnitError (never anything else); pydantic records the field path.


def _parse_name(what: str):
    def parse(value: Any) -> str:
        if isinstance(value, str) and NAME_PATTERN.match(value):
            return value
        raise UnitError(f"{show_value(value)} is not a valid {what}", "letters, digits, '_', '.' or '-'", value)

    return parse


def _parse_int(lo: int = 0, hi: int = U64_MAX, what: str = "an integer"):
    expected = f"an integer from {lo} to {hi}" if hi < U64_MAX else f"an integer of at least {lo}"

    def parse(value: Any) -> int:
        if isinstance(value, bool) or value is None:
            raise UnitError(f"{show_value(value)} is not {what}", expected, value)
        try:
            number = parse_number(value, what, expected)
        except UnitError:
            raise UnitError(f"{show_value(value)} is not {what}", expected, value) from None
        if number != number.to_integral_value():
            raise UnitError(f"{show_value(value)} is not a whole number", expected, value)
        result = int(number)
        if not lo <= result <= hi:
            raise UnitError(f"{show_value(value)} is out of range", expected, value)
        return result

    return parse


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _parse_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise UnitError(f"{show_value(value)} is not a boolean", "0 or 1 (or true/false)", value)


def _parse_cc(value: Any) -> str:
    if isinstance(value, str) and value.strip().lower() in CC_NAMES:
        return value.strip().lower()
    raise UnitError(f"unknown congestion control {show_value(value)}", "one of: " + ", ".join(CC_NAMES), value)


def _parse_mem_triple(value: Any) -> tuple[int, int, int]:
    expected = 'three sizes "min default max" such as "4096 131072 6291456"'
    if isinstance(value, str):
        items: list[Any] = value.split()
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise UnitError(f"{show_value(value)} is not a size triple", expected, value)
    if len(items) != 3:
        raise UnitError(f"{show_value(value)} has {len(items)} values, not 3", expected, value)
    sizes = []
    for i, item in enumerate(items):
        try:
            sizes.append(parse_size(item))
        except UnitError as e:
            raise UnitError(e.problem, e.expected, item, subpath=(i,) if not isinstance(value, str) else ()) from None
    lo, default, hi = sizes
    if not lo <= default <= hi:
        raise UnitError(f"{show_value(value)} is not ordered min <= default <= max", expected, value)
    return (lo, default, hi)


def _parse_between(value: Any) -> tuple[str, str]:
    expected = "two node names such as [server, r1]"
    if not isinstance(value, (list, tuple)):
        raise UnitError(f"{show_value(value)} is not a list of two nodes", expected, value)
    if len(value) != 2:
        raise UnitError(f"{len(value)} nodes given", expected, value)
    names = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or not NAME_PATTERN.match(item):
            raise UnitError(f"{show_value(item)} is not a node name", expected, item, subpath=(i,))
        names.append(item)
    return (names[0], names[1])


def _sub(e: UnitError, *prefix: Any) -> UnitError:
    return UnitError(e.problem, e.expected, e.value, subpath=tuple(prefix) + e.subpath)


class LossSpec(BaseModel):
    """A parsed ``loss:`` value (engine form)."""

    model_config = ConfigDict(frozen=True)
    kind: Literal["none", "bernoulli", "gilbert_elliott", "drop_list"]
    p: float = 0.0
    r: float = 0.0
    h: float = 0.0
    k: float = 1.0
    data_packets: tuple[int, ...] = ()

    def to_core(self) -> dict[str, Any]:
        if self.kind == "none":
            return {"kind": "none"}
        if self.kind == "bernoulli":
            return {"kind": "bernoulli", "p": self.p}
        if self.kind == "gilbert_elliott":
            return {"kind": "gilbert_elliott", "p": self.p, "r": self.r, "h": self.h, "k": self.k}
        return {"kind": "drop_list", "data_packets": list(self.data_packets)}


LOSS_EXPECTED = "a loss such as 1%, 0.01, {gilbert_elliott: {p: 1%, r: 30%}} or {drop: [5, 17]}"


def _parse_loss(value: Any) -> LossSpec:
    if isinstance(value, LossSpec):
        return value
    if value is None:
        return LossSpec(kind="none")
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        try:
            p = parse_fraction(value)
        except UnitError as e:
            raise UnitError(e.problem, LOSS_EXPECTED if "is not" in e.problem else e.expected, value) from None
        return LossSpec(kind="bernoulli", p=p) if p > 0 else LossSpec(kind="none")
    if not isinstance(value, dict):
        raise UnitError(f"{show_value(value)} is not a loss", LOSS_EXPECTED, value)
    if len(value) != 1 or next(iter(value)) not in ("gilbert_elliott", "drop"):
        bad = [k for k in value if k not in ("gilbert_elliott", "drop")]
        if bad:
            raise UnitError(
                f"unknown loss model {show_value(bad[0])}", "one of: gilbert_elliott, drop", bad[0], subpath=(bad[0],)
            )
        raise UnitError("several loss models given", "exactly one of: gilbert_elliott, drop", value)
    kind, body = next(iter(value.items()))
    if kind == "drop":
        if not isinstance(body, list):
            raise UnitError(
                f"{show_value(body)} is not a list", "packet numbers such as [5, 17]", body, subpath=("drop",)
            )
        parse = _parse_int(0, U64_MAX, "a packet number")
        packets = []
        for i, item in enumerate(body):
            try:
                packets.append(parse(item))
            except UnitError as e:
                raise _sub(e, "drop", i) from None
        return LossSpec(kind="drop_list", data_packets=tuple(sorted(set(packets))))
    # Gilbert-Elliott
    if not isinstance(body, dict):
        raise UnitError(
            f"{show_value(body)} is not a mapping", "{p: 1%, r: 30%, h: 0%, k: 100%}", body, subpath=(kind,)
        )
    for key in body:
        if key not in ("p", "r", "h", "k"):
            raise UnitError(f"unknown key {show_value(key)}", "one of: p, r, h, k", key, subpath=(kind, str(key)))
    if "p" not in body:
        raise UnitError(
            "missing", "p, the probability of moving from the good to the bad state", None, subpath=(kind, "p")
        )
    params = {}
    for key in ("p", "r", "h", "k"):
        if key in body:
            try:
                params[key] = parse_fraction(body[key])
            except UnitError as e:
                raise _sub(e, kind, key) from None
    params.setdefault("r", 1.0 - params["p"])
    params.setdefault("h", 0.0)
    params.setdefault("k", 1.0)
    return LossSpec(kind="gilbert_elliott", **params)


class QueueLimit(BaseModel):
    """A parsed queue ``limit:`` (packets, bytes, or a multiple of the BDP)."""

    model_config = ConfigDict(frozen=True)
    unit: Literal["packets", "bytes", "bdp"]
    value: Decimal  # exact, so "0.1bdp" is a tenth, not 0.1000000000000000055


class AppSpec(BaseModel):
    """A parsed ``app:`` value."""

    model_config = ConfigDict(frozen=True)
    kind: Literal["bulk", "bulk_bytes"]
    bytes: int | None = None

    def to_core(self) -> dict[str, Any]:
        if self.kind == "bulk":
            return {"kind": "bulk"}
        return {"kind": "bulk_bytes", "bytes": self.bytes}


APP_EXPECTED = "bulk or {bulk: {bytes: 10MB}}"


def _parse_app(value: Any) -> AppSpec:
    if isinstance(value, AppSpec):
        return value
    if value is None or value == "bulk":
        return AppSpec(kind="bulk")
    if isinstance(value, str):
        raise UnitError(f"unknown app {show_value(value)}", APP_EXPECTED, value)
    if not isinstance(value, dict) or len(value) != 1:
        raise UnitError(f"{show_value(value)} is not an app", APP_EXPECTED, value)
    kind, body = next(iter(value.items()))
    if kind != "bulk":
        raise UnitError(f"unknown app {show_value(kind)}", APP_EXPECTED, kind, subpath=(str(kind),))
    if body is None or body == {}:
        return AppSpec(kind="bulk")
    if not isinstance(body, dict):
        raise UnitError(f"{show_value(body)} is not a mapping", "{bytes: 10MB}", body, subpath=("bulk",))
    for key in body:
        if key != "bytes":
            raise UnitError(f"unknown key {show_value(key)}", "bytes", key, subpath=("bulk", str(key)))
    try:
        size = parse_size(body["bytes"], allow_zero=False)
    except UnitError as e:
        raise _sub(e, "bulk", "bytes") from None
    return AppSpec(kind="bulk_bytes", bytes=size)


Name = Annotated[str, BeforeValidator(_parse_name("name"))]
NodeName = Annotated[str, BeforeValidator(_parse_name("node name"))]
Rate = Annotated[int, BeforeValidator(parse_rate)]
Time = Annotated[int, BeforeValidator(parse_time)]
PosTime = Annotated[int, BeforeValidator(lambda v: parse_time(v, allow_zero=False))]
Size = Annotated[int, BeforeValidator(parse_size)]
Probability = Annotated[float, BeforeValidator(parse_fraction)]
Bool = Annotated[bool, BeforeValidator(_parse_bool)]
CcName = Annotated[str, BeforeValidator(_parse_cc)]
MemTriple = Annotated[tuple[int, int, int], BeforeValidator(_parse_mem_triple)]
Loss = Annotated[LossSpec, BeforeValidator(_parse_loss)]
App = Annotated[AppSpec, BeforeValidator(_parse_app)]


def Int(lo: int = 0, hi: int = U64_MAX) -> Any:  # noqa: N802 - a type factory
    return Annotated[int, BeforeValidator(_parse_int(lo, hi))]


# --------------------------------------------------------------------------- models


class _Model(BaseModel):
    """Base: a mapping whose keys are checked first, with messages that name the key."""

    model_config = ConfigDict(extra="forbid", populate_by_name=False)
    _key_prefixes: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def _keys(cls) -> list[str]:
        return [f.alias or name for name, f in cls.model_fields.items()]

    @model_validator(mode="before")
    @classmethod
    def _check_keys(cls, data: Any) -> Any:
        if data is None:
            data = {}
        if isinstance(data, BaseModel):
            return data
        allowed = cls._keys()
        if not isinstance(data, dict):
            raise UnitError(f"{show_value(data)} is not a mapping", "a mapping with keys: " + ", ".join(allowed), data)
        if cls._key_prefixes:
            data = {cls._strip_prefix(k, allowed): v for k, v in data.items()}
        for key in data:
            if key not in allowed:
                raise UnitError(
                    f"unknown key {show_value(key)}{_did_you_mean(key, allowed)}",
                    "one of: " + ", ".join(allowed),
                    key,
                    subpath=(str(key),),
                )
        for name, field in cls.model_fields.items():
            key = field.alias or name
            if field.is_required() and key not in data:
                raise UnitError("missing", field.description or "a value", None, subpath=(key,))
        return data

    @classmethod
    def _strip_prefix(cls, key: Any, allowed: list[str]) -> Any:
        if not isinstance(key, str):
            return key
        for prefix in cls._key_prefixes:
            if key.startswith(prefix) and key[len(prefix) :] in allowed:
                return key[len(prefix) :]
        return key


def _did_you_mean(key: Any, allowed: list[str]) -> str:
    import difflib

    if not isinstance(key, str):
        return ""
    close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
    return f' (did you mean "{close[0]}"?)' if close else ""


class Sysctl(_Model):
    """``net.ipv4.tcp_*`` sysctls of a host (Linux v6.6 defaults)."""

    _key_prefixes = ("net.ipv4.", "net/ipv4/")
    tcp_congestion_control: CcName = "cubic"
    tcp_rmem: MemTriple = (4096, 131072, 6291456)
    tcp_wmem: MemTriple = (4096, 16384, 4194304)
    tcp_slow_start_after_idle: Bool = True
    tcp_early_retrans: Int(0, 4) = 3
    tcp_recovery: Int(0, 7) = 1
    tcp_frto: Int(0, 2) = 2
    tcp_reordering: Int(1, 300) = 3
    tcp_max_reordering: Int(1, 1_000_000) = 300
    tcp_min_rtt_wlen: Int(0, 86400) = 300
    tcp_limit_output_bytes: Annotated[int, BeforeValidator(parse_size)] = 1048576
    tcp_pacing_ss_ratio: Int(0, 1000) = 200
    tcp_pacing_ca_ratio: Int(0, 1000) = 120
    tcp_moderate_rcvbuf: Bool = True
    tcp_comp_sack_delay_ns: Int(0) = 1000000
    tcp_comp_sack_nr: Int(0, 255) = 44
    tcp_min_tso_segs: Int(1, 255) = 2
    tcp_tso_rtt_log: Int(0, 31) = 9

    def to_core_tcp(self) -> dict[str, Any]:
        """The sysctls in the engine's ``tcp`` names (``tcp_rmem`` included; the caller picks)."""
        out = {}
        for name in type(self).model_fields:
            if name == "tcp_congestion_control":
                continue
            value = getattr(self, name)
            key = "tcp_min_rtt_wlen_s" if name == "tcp_min_rtt_wlen" else name
            out[key] = list(value) if isinstance(value, tuple) else value
        return out


class FlowTcp(_Model):
    """Per-flow TCP overrides: any sysctl (except the cc, see ``cc:``) plus socket settings."""

    _key_prefixes = ("net.ipv4.", "net/ipv4/")
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
    tcp_limit_output_bytes: Annotated[int, BeforeValidator(parse_size)] | None = None
    tcp_pacing_ss_ratio: Int(0, 1000) | None = None
    tcp_pacing_ca_ratio: Int(0, 1000) | None = None
    tcp_moderate_rcvbuf: Bool | None = None
    tcp_comp_sack_delay_ns: Int(0) | None = None
    tcp_comp_sack_nr: Int(0, 255) | None = None
    tcp_min_tso_segs: Int(1, 255) | None = None
    tcp_tso_rtt_log: Int(0, 31) | None = None

    @field_validator("mss")
    @classmethod
    def _mss_range(cls, v: int | None) -> int | None:
        if v is not None and not 88 <= v <= 65000:
            raise UnitError(f"{v} bytes is out of range", "an MSS from 88 to 65000 bytes such as 1448", v)
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
            if value is None:
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


class Host(_Model):
    """A host: terminates flows; its sysctls set its sockets' defaults."""

    sysctl: Sysctl = Field(default_factory=Sysctl)


class Reorder(_Model):
    """netem-style reordering: with ``probability``, a packet is held ``delay`` longer."""

    probability: Probability = Field(description="a probability such as 1%")
    delay: PosTime = Field(description="the extra delay of a reordered packet, such as 5ms")


class Queue(_Model):
    """The drop-tail queue in front of a one-way link."""

    qdisc: Literal["pfifo", "bfifo"] = "pfifo"
    limit: Any = None

    @field_validator("qdisc", mode="before")
    @classmethod
    def _qdisc(cls, v: Any) -> Any:
        if v not in ("pfifo", "bfifo"):
            raise UnitError(f"unknown qdisc {show_value(v)}", "pfifo (limit in packets) or bfifo (limit in bytes)", v)
        return v

    @field_validator("limit", mode="before")
    @classmethod
    def _limit(cls, v: Any, info: Any) -> QueueLimit | None:
        qdisc = info.data.get("qdisc")
        if qdisc is None:  # the qdisc itself was bad; that error is reported
            return None
        return parse_queue_limit(v, qdisc)

    def limit_spec(self) -> QueueLimit:
        if self.limit is not None:
            return self.limit
        if self.qdisc == "pfifo":
            return QueueLimit(unit="packets", value=Decimal(DEFAULT_PFIFO_LIMIT))
        return QueueLimit(unit="bytes", value=Decimal(DEFAULT_BFIFO_LIMIT))


def parse_queue_limit(value: Any, qdisc: str) -> QueueLimit | None:
    """``100`` / ``"100p"`` (pfifo), ``"150KB"`` (bfifo), ``"1bdp"`` / ``"0.5bdp"`` (both)."""
    if qdisc == "pfifo":
        expected = 'a packet count such as 100 or "100p", or a multiple of the BDP such as "1bdp"'
    else:
        expected = 'a size such as "150KB", or a multiple of the BDP such as "1bdp"'
    if value is None:
        return None
    if isinstance(value, bool):
        raise UnitError(f"{show_value(value)} is not a queue limit", expected, value)
    if isinstance(value, str):
        text = value.strip()
        lowered = text.lower()
        if lowered.endswith("bdp"):
            try:
                k = parse_number(text[:-3].strip() or "1", "a multiple of the BDP", expected)
            except UnitError:
                raise UnitError(f"{show_value(value)} is not a queue limit", expected, value) from None
            if k <= 0:
                raise UnitError(f"{show_value(value)} is not positive", expected, value)
            return QueueLimit(unit="bdp", value=k)
        if qdisc == "pfifo":
            if lowered.endswith("p"):
                text = text[:-1]
            elif re.search(r"[A-Za-z]", text):
                raise UnitError(
                    f"{show_value(value)} is not a packet count (pfifo limits packets; use qdisc: bfifo for bytes)",
                    expected,
                    value,
                )
    if qdisc == "pfifo":
        try:
            n = _parse_int(1, 2**32 - 1, "a packet count")(text if isinstance(value, str) else value)
        except UnitError:
            raise UnitError(f"{show_value(value)} is not a packet count of at least 1", expected, value) from None
        return QueueLimit(unit="packets", value=Decimal(n))
    try:
        size = parse_size(value, allow_zero=False)
    except UnitError as e:
        raise UnitError(e.problem, expected, value) from None
    return QueueLimit(unit="bytes", value=Decimal(size))


class LinkOverrides(_Model):
    """``reverse:`` settings of a link entry's b->a direction (unset fields copy a->b)."""

    rate: Rate | None = None
    delay: Time | None = None
    loss: Loss | None = None
    reorder: Reorder | None = None
    queue: Queue | None = None
    overhead: Int(0, 65535) | None = None


class Link(_Model):
    """A ``links:`` entry: two one-way links between two nodes."""

    between: Annotated[tuple[str, str], BeforeValidator(_parse_between)] = Field(
        description="two node names such as [server, r1]"
    )
    rate: Rate = Field(description="a rate such as 5Mbit, 100Kbit, 1Gbit")
    delay: Time = 0
    loss: Loss = LossSpec(kind="none")
    reorder: Reorder | None = None
    queue: Queue = Field(default_factory=Queue)
    overhead: Int(0, 65535) = 14
    reverse: LinkOverrides | None = None


class Flow(_Model):
    """A ``flows:`` entry: one (or ``count``) TCP connections carrying data from -> to."""

    from_: NodeName = Field(alias="from", description="the sending host's name")
    to: NodeName = Field(description="the receiving host's name")
    app: App = AppSpec(kind="bulk")
    cc: CcName | None = None
    start: Time = 0
    stop: Time | None = None
    count: Int(1, 100_000) = 1
    name: Name | None = None
    cc_params: CcParams = Field(default_factory=CcParams)
    tcp: FlowTcp = Field(default_factory=FlowTcp)


class Scenario(_Model):
    """A validated scenario. Build one with :func:`tcplab.load_scenario`.

    ``to_core()`` gives the engine's fully resolved configuration (times in ns, rates in
    bit/s, sizes in bytes, references as indices, every TCP setting explicit).
    """

    name: Name = Field(description="a scenario name such as lossy-long-path")
    description: str | None = None
    seed: Int(0, U64_MAX) = 1
    duration: PosTime = Field(description="a duration such as 60s")
    sample_interval: PosTime = 100_000_000
    hosts: dict[NodeName, Host] = Field(
        description="a mapping of host names to settings, such as {server: {}, client: {}}"
    )
    routers: list[NodeName] = []
    links: list[Link] = []
    flows: list[Flow] = Field(description="a list of flows such as [{from: server, to: client}]")

    _source: str = PrivateAttr(default="")
    _raw: dict = PrivateAttr(default_factory=dict)

    # -- cross-reference checks -------------------------------------------------------

    @model_validator(mode="after")
    def _check_references(self) -> Scenario:
        """Cross-field checks; every problem found is reported, each with its own path."""
        errors: list[UnitError] = []

        def error(path: tuple, problem: str, expected: str, value: Any = None) -> None:
            errors.append(UnitError(problem, expected, value, subpath=path))

        if self.sample_interval > self.duration:
            error(
                ("sample_interval",),
                f"{_t(self.sample_interval)} is longer than the duration ({_t(self.duration)})",
                "a sample interval no longer than the duration",
                self.sample_interval,
            )
        kinds = self._check_nodes(error)
        topology_ok = not errors
        self._check_flows(error, kinds, topology_ok)
        if len(errors) == 1:
            raise errors[0]
        if errors:
            raise UnitErrors(errors)
        return self

    def _check_nodes(self, error: Any) -> dict[str, str]:
        """Unique node names, links between two different known nodes. Returns name -> kind."""
        if not self.hosts:
            error(("hosts",), "no hosts", "at least two hosts such as {server: {}, client: {}}")
        kinds: dict[str, str] = {h: "host" for h in self.hosts}
        for i, r in enumerate(self.routers):
            if r in kinds:
                error(
                    ("routers", i),
                    f"duplicate node name {show_value(r)} (already a {kinds[r]})",
                    "node names used once",
                    r,
                )
            kinds.setdefault(r, "router")
        known = "one of: " + ", ".join(sorted(kinds))
        for i, link in enumerate(self.links):
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

    def _check_flows(self, error: Any, kinds: dict[str, str], topology_ok: bool) -> None:
        """Flows go between two different hosts, in time, with unique names, along a route."""
        if not self.flows:
            error(("flows",), "no flows", "at least one flow such as {from: server, to: client}")
        hosts = list(self.hosts)
        host_list = "one of: " + ", ".join(sorted(hosts))
        topo = self._topology() if topology_ok else None
        names_seen: dict[str, int] = {}
        for i, flow in enumerate(self.flows):
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
            if flow.start >= self.duration:
                error(
                    ("flows", i, "start"),
                    f"{_t(flow.start)} is not before the end of the run ({_t(self.duration)})",
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
            for name in self._flow_names(i, flow):
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

    @staticmethod
    def _flow_names(index: int, flow: Flow) -> list[str]:
        base = flow.name or f"{flow.from_}-{flow.to}-{index}"
        if flow.count == 1:
            return [base]
        return [f"{base}.{k}" for k in range(flow.count)]

    # -- resolved views ---------------------------------------------------------------

    @property
    def source(self) -> str:
        """Where the scenario came from (a path, ``builtin:NAME`` or ``<dict>``)."""
        return self._source

    @property
    def node_names(self) -> list[str]:
        """Node names by index: hosts in file order, then routers."""
        return list(self.hosts) + list(self.routers)

    def _topology(self) -> _Topology:
        return _Topology(self)

    def routes(self) -> list[dict[str, Any]]:
        """Per expanded flow: its name and the one-way link names of its data and ACK routes."""
        topo = self._topology()
        out = []
        for flow in topo.flows:
            out.append(
                {
                    "flow": flow["name"],
                    "data": [topo.links[i]["name"] for i in flow["fwd"]],
                    "ack": [topo.links[i]["name"] for i in flow["rev"]],
                    "base_rtt_ns": flow["base_rtt_ns"],
                }
            )
        return out

    def to_core(self) -> dict[str, Any]:
        """The engine configuration (``tcplab._core.run``'s JSON), fully resolved."""
        topo = self._topology()
        links = []
        for link in topo.links:
            links.append(
                {
                    "name": link["name"],
                    "from": link["from"],
                    "to": link["to"],
                    "rate_bps": link["rate_bps"],
                    "delay_ns": link["delay_ns"],
                    "overhead_bytes": link["overhead_bytes"],
                    "loss": link["loss"].to_core(),
                    "reorder": link["reorder"],
                    "queue": link["queue"],
                }
            )
        flows = []
        for f in topo.flows:
            flows.append(
                {k: f[k] for k in ("name", "src", "dst", "cc", "start_ns", "stop_ns", "app", "tcp", "cc_params")}
            )
        return {
            "seed": self.seed,
            "duration_ns": self.duration,
            "sample_interval_ns": self.sample_interval,
            "nodes": [{"name": n, "kind": "host" if n in self.hosts else "router"} for n in topo.nodes],
            "links": links,
            "flows": flows,
        }

    def to_core_json(self) -> str:
        import json

        return json.dumps(self.to_core(), separators=(",", ":"))


def _t(ns: int) -> str:
    from tcplab.units import format_time

    return format_time(ns)


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
            for name in Scenario._flow_names(i, flow):
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


# --------------------------------------------------------------------------- entry point


def validate_scenario(data: Mapping[str, Any], file: str = "") -> Scenario:
    """Validate a plain dict (already parsed and overridden) into a :class:`Scenario`."""
    if not isinstance(data, Mapping):
        raise ScenarioError(
            f"the top level is {show_value(data) if not isinstance(data, list) else 'a list'}",
            file=file,
            expected="a mapping with keys such as name, duration, hosts, links, flows",
        )
    try:
        return Scenario.model_validate(dict(data))
    except ValidationError as exc:
        raise _convert(exc, file) from None


def _convert(exc: ValidationError, file: str) -> ScenarioError:
    errors: list[ScenarioError] = []
    for err in exc.errors(include_url=False):
        loc = [p for p in err["loc"] if p != "[key]"]
        cause = (err.get("ctx") or {}).get("error")
        if isinstance(cause, UnitError):
            causes = cause.errors if isinstance(cause, UnitErrors) else [cause]
            for c in causes:
                path = ".".join(str(p) for p in [*loc, *c.subpath])
                errors.append(ScenarioError(c.problem, file=file, path=path, value=c.value, expected=c.expected))
            continue
        path = ".".join(str(p) for p in loc)
        value = err.get("input")
        if err["type"] == "missing":
            errors.append(ScenarioError("missing", file=file, path=path, expected="a value"))
        elif err["type"] == "extra_forbidden":
            errors.append(
                ScenarioError(
                    f"unknown key {show_value(str(loc[-1]))}", file=file, path=path, value=value, expected="a known key"
                )
            )
        elif err["type"] in ("list_type", "dict_type", "tuple_type"):
            kind = {"list_type": "a list", "dict_type": "a mapping", "tuple_type": "a list"}[err["type"]]
            errors.append(
                ScenarioError(f"{show_value(value)} is not {kind}", file=file, path=path, value=value, expected=kind)
            )
        elif err["type"] == "string_type":
            errors.append(
                ScenarioError(
                    f"{show_value(value)} is not text", file=file, path=path, value=value, expected="a string"
                )
            )
        else:
            msg = err["msg"]
            errors.append(ScenarioError(f"{show_value(value)}: {msg}", file=file, path=path, value=value))
    first = errors[0]
    return ScenarioError(
        first.problem, file=first.file, path=first.path, value=first.value, expected=first.expected, errors=errors
    )

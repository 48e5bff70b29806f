"""Links: rate, delay, loss (netem meanings), reordering, queue, framing overhead, ECN bleaching.

Each ``links:`` entry makes two one-way links; ``reverse:`` overrides the b->a direction.
``bleach_ecn: true`` makes the link a middlebox that clears the IP ECN field of every packet
it carries (ECT and CE become not-ECT), as some routers and firewalls do.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from tcplab.errors import UnitError, show_value
from tcplab.literals import Oversized
from tcplab.scenario.base import _Model
from tcplab.scenario.fields import Bool, Int, PosTime, Probability, Rate, Time, _parse_between, _parse_int, _sub
from tcplab.scenario.queues import Queue
from tcplab.units import U64_MAX, parse_percent, parse_size, parse_time


class LossSpec(BaseModel):
    """A parsed ``loss:`` value (engine form)."""

    model_config = ConfigDict(frozen=True)
    kind: Literal["none", "bernoulli", "gilbert_elliott", "drop_list", "outage"]
    p: float = 0.0
    r: float = 0.0
    h: float = 0.0
    k: float = 1.0
    data_packets: tuple[int, ...] = ()
    #: An outage window of scenario time (``{outage: {start: 10s, end: 200s}}``): every
    #: packet leaving the link in [start, end) is lost (netem ``loss 100%`` added at start
    #: and removed at end). One window per link, as the engine's ``LossConfig::Outage``.
    start_ns: int = 0
    end_ns: int = 0
    #: Loss filter (``only: data``, ``min_size``): which packets the random models apply to.
    data_only: bool = False
    min_ip_bytes: int = 0
    #: Activity window of a random model (``{random: 1%, start: 60s, end: 30min}``): the
    #: loss applies to packets leaving the link in [start, end) only, as a netem qdisc
    #: added at start and removed at end (None: never removed). Engine ``LossWindow``.
    window_start_ns: int = 0
    window_end_ns: int | None = None

    def filter_to_core(self) -> dict[str, Any]:
        return {"data_only": self.data_only, "min_ip_bytes": self.min_ip_bytes}

    def window_to_core(self) -> dict[str, Any]:
        return {"start_ns": self.window_start_ns, "end_ns": self.window_end_ns}

    def to_core(self) -> dict[str, Any]:
        if self.kind == "none":
            return {"kind": "none"}
        if self.kind == "bernoulli":
            return {"kind": "bernoulli", "p": self.p}
        if self.kind == "gilbert_elliott":
            return {"kind": "gilbert_elliott", "p": self.p, "r": self.r, "h": self.h, "k": self.k}
        if self.kind == "outage":
            return {"kind": "outage", "start_ns": self.start_ns, "end_ns": self.end_ns}
        return {"kind": "drop_list", "data_packets": list(self.data_packets)}


LOSS_EXPECTED = (
    "a loss such as 1% (a bare number is percent, as netem reads it: 0.5 is 0.5%), "
    "{random: 1%, only: data}, {gilbert_elliott: {p: 1%, r: 30%}}, {drop: [5, 17]} "
    "or {outage: {start: 10s, end: 200s}}; a random model may take start/end "
    "({random: 1%, start: 60s, end: 30min})"
)
LOSS_MODELS = ("random", "gilbert_elliott", "drop", "outage")
OUTAGE_EXPECTED = "one window such as {start: 10s, end: 200s} (every packet lost from start until end)"
#: The engine's bound on scenario times (``MAX_DURATION_NS``: 366 days).
MAX_OUTAGE_NS = 366 * 24 * 3600 * 10**9
LOSS_FILTERS = ("only", "min_size")
#: The activity window of a random model (netem qdisc added at start, removed at end).
LOSS_WINDOW = ("start", "end")


def _parse_loss_filter(value: dict) -> dict[str, Any]:
    """``only: data|all`` and ``min_size: SIZE`` (IP length, as nftables' ``meta length``)."""
    out: dict[str, Any] = {}
    if "only" in value:
        only = value["only"]
        if only not in ("data", "all"):
            raise UnitError(
                f"{show_value(only)} is not a packet class",
                "data (segments carrying payload: never SYNs or pure ACKs) or all",
                only,
                subpath=("only",),
            )
        out["data_only"] = only == "data"
    if "min_size" in value:
        try:
            size = parse_size(value["min_size"])
        except UnitError as e:
            raise _sub(e, "min_size") from None
        if size > 65535:
            raise UnitError(
                f"{size} bytes is larger than any IP packet", "a size of at most 65535B", size, subpath=("min_size",)
            )
        out["min_ip_bytes"] = size
    return out


def _parse_loss_window(value: dict, kind: str) -> dict[str, Any]:
    """``start: TIME`` and ``end: TIME`` next to a random model: when the loss is active."""
    keys = [k for k in LOSS_WINDOW if k in value]
    if not keys:
        return {}
    if kind not in ("random", "gilbert_elliott"):
        raise UnitError(
            f"a window ({keys[0]}) on a {kind} loss",
            "start/end only with random or gilbert_elliott (an outage has its own window)",
            value[keys[0]],
            subpath=(keys[0],),
        )
    times: dict[str, int] = {}
    for key in keys:
        try:
            times[key] = parse_time(value[key])
        except UnitError as e:
            raise _sub(e, key) from None
        if times[key] > MAX_OUTAGE_NS:
            raise UnitError(
                f"{show_value(value[key])} is out of range", "a time of at most 366 days", value[key], subpath=(key,)
            )
    start = times.get("start", 0)
    if "end" in times and times["end"] <= start:
        raise UnitError(
            f"{show_value(value['end'])} is not after start ({show_value(value.get('start', 0))})",
            "an end later than start",
            value["end"],
            subpath=("end",),
        )
    return {"window_start_ns": start, "window_end_ns": times.get("end")}


def _parse_loss(value: Any) -> LossSpec:
    if isinstance(value, LossSpec):
        return value
    if value is None:
        return LossSpec(kind="none")
    if isinstance(value, (str, int, float, Oversized)) and not isinstance(value, bool):
        try:
            p = parse_percent(value)
        except UnitError as e:
            raise UnitError(e.problem, LOSS_EXPECTED if "is not" in e.problem else e.expected, value) from None
        return LossSpec(kind="bernoulli", p=p) if p > 0 else LossSpec(kind="none")
    if not isinstance(value, dict):
        raise UnitError(f"{show_value(value)} is not a loss", LOSS_EXPECTED, value)
    bad = [k for k in value if k not in LOSS_MODELS + LOSS_FILTERS + LOSS_WINDOW]
    if bad:
        raise UnitError(
            f"unknown loss model {show_value(bad[0])}",
            "one of: " + ", ".join(LOSS_MODELS) + " (filters: only, min_size; window: start, end)",
            bad[0],
            subpath=(bad[0],),
        )
    models = [k for k in value if k in LOSS_MODELS]
    if len(models) != 1:
        problem = "several loss models given" if models else "no loss model given"
        raise UnitError(problem, "exactly one of: " + ", ".join(LOSS_MODELS), value)
    filt = _parse_loss_filter(value)
    kind, body = models[0], value[models[0]]
    window = _parse_loss_window(value, kind)
    if kind == "random":
        try:
            p = parse_percent(body)
        except UnitError as e:
            raise UnitError(e.problem, "a probability such as 1%", body, subpath=("random",)) from None
        return LossSpec(kind="bernoulli", p=p, **filt, **window) if p > 0 else LossSpec(kind="none")
    if kind == "outage":
        return _parse_outage(body, filt)
    if kind == "drop" and filt:
        raise UnitError(
            "a drop list takes no filter",
            "{drop: [5, 17]} alone (it counts data packets only)",
            value,
            subpath=(next(k for k in value if k in LOSS_FILTERS),),
        )
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
                params[key] = parse_percent(body[key])
            except UnitError as e:
                raise _sub(e, kind, key) from None
    params.setdefault("r", 1.0 - params["p"])
    params.setdefault("h", 0.0)
    params.setdefault("k", 1.0)
    return LossSpec(kind="gilbert_elliott", **params, **filt, **window)


def _parse_outage(body: Any, filt: dict[str, Any]) -> LossSpec:
    """``{outage: {start: 10s, end: 200s}}``: one window of scenario time, end after start
    (engine ``LossConfig::Outage``, net/loss.rs: judged at the packet's serialization end)."""
    if not isinstance(body, dict):
        raise UnitError(f"{show_value(body)} is not a mapping", OUTAGE_EXPECTED, body, subpath=("outage",))
    for key in body:
        if key not in ("start", "end"):
            raise UnitError(
                f"unknown key {show_value(key)} (one window per link)",
                "start and end",
                key,
                subpath=("outage", str(key)),
            )
    times = {}
    for key in ("start", "end"):
        if key not in body:
            raise UnitError("missing", OUTAGE_EXPECTED, None, subpath=("outage", key))
        try:
            times[key] = parse_time(body[key])
        except UnitError as e:
            raise _sub(e, "outage", key) from None
        if times[key] > MAX_OUTAGE_NS:
            raise UnitError(
                f"{show_value(body[key])} is out of range",
                "a time of at most 366 days",
                body[key],
                subpath=("outage", key),
            )
    if times["end"] <= times["start"]:
        raise UnitError(
            f"{show_value(body['end'])} is not after start ({show_value(body['start'])})",
            "an end later than start",
            body["end"],
            subpath=("outage", "end"),
        )
    return LossSpec(kind="outage", start_ns=times["start"], end_ns=times["end"], **filt)


Loss = Annotated[LossSpec, BeforeValidator(_parse_loss)]


class Reorder(_Model):
    """netem-style reordering: with ``probability``, a packet is held ``delay`` longer."""

    probability: Probability = Field(description="a probability such as 1%")
    delay: PosTime = Field(description="the extra delay of a reordered packet, such as 5ms")


class LinkOverrides(_Model):
    """``reverse:`` settings of a link entry's b->a direction (unset fields copy a->b)."""

    rate: Rate | None = None
    delay: Time | None = None
    loss: Loss | None = None
    reorder: Reorder | None = None
    queue: Queue | None = None
    overhead: Int(0, 65535) | None = None
    bleach_ecn: Bool | None = None


class Link(_Model):
    """A ``links:`` entry: two one-way links between two nodes."""

    between: Annotated[tuple[str, str], BeforeValidator(_parse_between)] = Field(
        description="two node names such as [server, r1]"
    )
    rate: Rate = Field(description="a rate such as 5Mbit, 100Kbit, 1Gbit")
    delay: Time = 0
    loss: Loss = LossSpec(kind="none")
    reorder: Reorder | None = None
    #: None: the sending host's qdisc (``hosts.NAME.qdisc`` / ``default_qdisc``), else pfifo 1000.
    queue: Queue | None = None
    overhead: Int(0, 65535) = 14
    #: An ECN-bleaching middlebox: the link clears the IP ECN field of every packet it carries.
    bleach_ecn: Bool = False
    reverse: LinkOverrides | None = None

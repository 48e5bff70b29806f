"""The qdisc in front of a one-way link: ``pfifo`` / ``bfifo`` and their limits, or a timed qdisc.

FIFO limits are packets (pfifo), bytes (bfifo) or a multiple of the bandwidth-delay product,
resolved per one-way link by :mod:`tcplab.scenario.topology`. ``pfifo_fast`` is a pfifo of
txqueuelen (1000) packets. ``tbf``, ``fq`` and ``fq_codel`` take tc's parameters
(:mod:`tcplab.scenario.qdiscs`).
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict

from tcplab.errors import UnitError, show_value
from tcplab.scenario.fields import U32_MAX, _did_you_mean, _parse_int, _sub
from tcplab.scenario.qdiscs import parse_fq, parse_fq_codel, parse_tbf, refuse_ecn
from tcplab.units import OutOfRange, parse_number, parse_size

NOMINAL_PACKET_BYTES = 1500  # IP length of a full-size segment; "bdp" limits count it plus the link overhead
DEFAULT_PFIFO_LIMIT = 1000  # txqueuelen
DEFAULT_BFIFO_LIMIT = 1000 * (1500 + 14)  # txqueuelen * psched_mtu()


class QueueLimit(BaseModel):
    """A parsed queue ``limit:`` (packets, bytes, or a multiple of the BDP)."""

    model_config = ConfigDict(frozen=True)
    unit: Literal["packets", "bytes", "bdp"]
    value: Decimal  # exact, so "0.1bdp" is a tenth, not 0.1000000000000000055


QDISC_KINDS = ("pfifo", "bfifo", "pfifo_fast", "tbf", "fq", "fq_codel")
QDISC_EXPECTED = (
    "one of: pfifo (limit in packets), bfifo (limit in bytes), pfifo_fast, tbf, fq, fq_codel "
    "(tbf, fq, fq_codel per net/sched/sch_*.c v6.12)"
)
_TIMED = {"tbf": parse_tbf, "fq": parse_fq, "fq_codel": parse_fq_codel}


class QueueSpec(BaseModel):
    """A parsed ``queue:`` (or a host's ``qdisc:``): the qdisc and its parameters.

    ``limit`` is the pfifo/bfifo limit (possibly in BDPs, resolved per link); ``params``
    the engine fields of a tbf/fq/fq_codel; ``child`` a tbf's inner qdisc.
    """

    model_config = ConfigDict(frozen=True)
    qdisc: str = "pfifo"
    limit: QueueLimit | None = None
    params: dict[str, Any] | None = None
    child: QueueSpec | None = None

    def limit_spec(self) -> QueueLimit:
        """The FIFO limit: given, or the default (txqueuelen packets, or as many 1514-byte frames)."""
        if self.limit is not None:
            return self.limit
        if self.qdisc == "bfifo":
            return QueueLimit(unit="bytes", value=Decimal(DEFAULT_BFIFO_LIMIT))
        return QueueLimit(unit="packets", value=Decimal(DEFAULT_PFIFO_LIMIT))

    def is_fifo(self) -> bool:
        return self.qdisc in ("pfifo", "bfifo", "pfifo_fast")

    def to_core(self) -> dict[str, Any]:
        """The engine's ``QueueConfig`` of a qdisc whose limit is not in BDPs."""
        if self.is_fifo():
            limit = self.limit_spec()
            if limit.unit == "packets":
                return {"kind": "pfifo", "limit_packets": int(limit.value)}
            return {"kind": "bfifo", "limit_bytes": int(limit.value)}
        out: dict[str, Any] = {"kind": self.qdisc, **(self.params or {})}
        if self.qdisc == "tbf":
            out["child"] = self.child.to_core() if self.child is not None else None
        return out


def _kind_of(value: dict) -> Any:
    if "qdisc" in value and "kind" in value:
        raise UnitError("both qdisc and kind given", "one of them: the qdisc's name", value["kind"], subpath=("kind",))
    return value.get("qdisc", value.get("kind", "pfifo"))


def parse_queue(value: Any, *, child: bool = False) -> QueueSpec:
    """``{qdisc: KIND, ...parameters}`` (``kind:`` is a synonym of ``qdisc:``) or a bare ``KIND``."""
    if isinstance(value, QueueSpec):
        return value
    if value is None:
        return QueueSpec()
    bare = isinstance(value, str)  # ``qdisc: fq``: an error names the field itself
    if bare:
        value = {"qdisc": value}
    if not isinstance(value, dict):
        raise UnitError(f"{show_value(value)} is not a queue", "a mapping such as {qdisc: pfifo, limit: 1bdp}", value)
    kind = _kind_of(value)
    key = "kind" if "kind" in value else "qdisc"
    allowed = QDISC_KINDS
    if kind not in allowed:
        expected = QDISC_EXPECTED
        raise UnitError(
            f"unknown qdisc {show_value(kind)}{_did_you_mean(kind, list(allowed))}",
            expected,
            kind,
            subpath=() if bare else (key,),
        )
    body = {k: v for k, v in value.items() if k not in ("qdisc", "kind")}
    if kind in ("pfifo", "bfifo", "pfifo_fast"):
        body = refuse_ecn(body, kind)  # ecn: false is what a FIFO does; true is an error
    if kind in ("pfifo", "bfifo"):
        for k in body:
            if k != "limit":
                raise UnitError(f"unknown {kind} parameter {show_value(k)}", "limit", k, subpath=(str(k),))
        try:
            limit = parse_queue_limit(body.get("limit"), kind)
        except UnitError as e:
            raise _sub(e, "limit") from None
        if child and limit is not None and limit.unit == "bdp":
            raise UnitError(
                f"{show_value(body['limit'])} is in BDPs, which a tbf's child does not take",
                "a packet count (pfifo) or a size (bfifo): a tbf's child has no path of its own",
                body["limit"],
                subpath=("limit",),
            )
        return QueueSpec(qdisc=kind, limit=limit)
    if kind == "pfifo_fast":
        # pfifo_fast: three bands by priority; tcplab's TCP segments all map to band 1, so it
        # is one FIFO of txqueuelen (1000) packets (Linux v6.12 net/sched/sch_generic.c).
        for k in body:
            raise UnitError(
                f"unknown pfifo_fast parameter {show_value(k)}",
                "none (pfifo_fast takes no parameters)",
                k,
                subpath=(str(k),),
            )
        return QueueSpec(qdisc="pfifo_fast")
    inner = None
    if kind == "tbf" and "child" in body:
        try:
            inner = parse_queue(body["child"], child=True)
        except UnitError as e:
            raise _sub(e, "child") from None
    params = _TIMED[kind]({k: v for k, v in body.items() if k != "child"} if kind == "tbf" else body)
    return QueueSpec(qdisc=kind, params=params, child=inner)


Queue = Annotated[QueueSpec, BeforeValidator(parse_queue)]


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
        except OutOfRange as e:  # more than tc's u32 limit
            raise OutOfRange(e.problem, f"a packet count from 1 to {2**32 - 1} (tc's u32 limit)", value) from None
        except UnitError:
            raise UnitError(f"{show_value(value)} is not a packet count of at least 1", expected, value) from None
        return QueueLimit(unit="packets", value=Decimal(n))
    try:
        size = parse_size(value, allow_zero=False)
    except UnitError as e:
        raise UnitError(e.problem, expected, value) from None
    if size > U32_MAX:
        raise UnitError(
            f"{show_value(value)} is too large", f"a bfifo limit of at most {U32_MAX} bytes (tc's u32)", value
        )
    return QueueLimit(unit="bytes", value=Decimal(size))

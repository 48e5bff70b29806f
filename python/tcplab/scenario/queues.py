"""The drop-tail queue in front of a one-way link (``pfifo`` / ``bfifo``) and its limit.

Limits are packets (pfifo), bytes (bfifo) or a multiple of the bandwidth-delay product,
resolved per one-way link by :mod:`tcplab.scenario.topology`.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator

from tcplab.errors import UnitError, show_value
from tcplab.scenario.base import _Model
from tcplab.scenario.fields import U32_MAX, _parse_int
from tcplab.units import parse_number, parse_size

NOMINAL_PACKET_BYTES = 1500  # IP length of a full-size segment; "bdp" limits count it plus the link overhead
DEFAULT_PFIFO_LIMIT = 1000  # txqueuelen
DEFAULT_BFIFO_LIMIT = 1000 * (1500 + 14)  # txqueuelen * psched_mtu()


class QueueLimit(BaseModel):
    """A parsed queue ``limit:`` (packets, bytes, or a multiple of the BDP)."""

    model_config = ConfigDict(frozen=True)
    unit: Literal["packets", "bytes", "bdp"]
    value: Decimal  # exact, so "0.1bdp" is a tenth, not 0.1000000000000000055


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
    if size > U32_MAX:
        raise UnitError(
            f"{show_value(value)} is too large", f"a bfifo limit of at most {U32_MAX} bytes (tc's u32)", value
        )
    return QueueLimit(unit="bytes", value=Decimal(size))

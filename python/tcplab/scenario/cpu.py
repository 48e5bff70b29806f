"""A host's CPU time slices: ``hosts.NAME.cpu: {share: 35%, period: 10ms, phase: 0ms}``.

The model (the engine's ``host::cpu``): the host runs for ``share`` of every ``period``,
starting ``phase`` into each period, as a VM's vCPU does when the hypervisor gives it a
fraction of a physical CPU. While it is off the CPU nothing of the host runs (TCP timers,
receive and ACK processing, pacing, its qdisc dequeues, NIC polling); packets already on the
wire keep going. The off time is counted as steal. Without a ``cpu:`` block the host always
runs (and ``share: 100%`` is the same).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, field_validator, model_validator

from tcplab.errors import UnitError, show_value
from tcplab.scenario.base import _Model
from tcplab.scenario.fields import Time, _t
from tcplab.units import parse_percent

DEFAULT_PERIOD_NS = 10_000_000
#: The engine's bound on a period (``MAX_DELAY_NS``: an hour).
MAX_PERIOD_NS = 3600 * 10**9


SHARE_EXPECTED = "a share of the CPU above 0% and at most 100%, such as 35%"


def parse_share(value: Any) -> float:
    """``35%`` (or ``35``: percent, as every percentage in a scenario) -> 0.35, in (0, 1]."""
    try:
        share = parse_percent(value)
    except UnitError as e:
        raise UnitError(e.problem, SHARE_EXPECTED, value) from None
    if share <= 0:
        raise UnitError(f"{show_value(value)} is zero (the host would never run)", SHARE_EXPECTED, value)
    return share


class HostCpu(_Model):
    """``cpu:``: the share of each period the host runs, the period, and where in it the slice starts."""

    share: Annotated[float, BeforeValidator(parse_share)] = Field(
        description="a share of the CPU such as 35% (above 0%, at most 100%)"
    )
    period: Time = DEFAULT_PERIOD_NS
    phase: Time = 0

    @field_validator("period")
    @classmethod
    def _period(cls, v: int) -> int:
        if not 0 < v <= MAX_PERIOD_NS:
            raise UnitError(f"{_t(v)} is out of range", "a period from 1ns to 3600s, such as 10ms", v)
        return v

    @model_validator(mode="after")
    def _phase_within_period(self) -> HostCpu:
        if self.share < 1 and round(self.share * self.period) < 1:
            raise UnitError(
                f"{self.share * 100:g}% of {_t(self.period)} is less than 1 ns of CPU per period",
                "a larger share or a longer period",
                self.share,
                subpath=("share",),
            )
        if self.phase >= self.period:
            raise UnitError(
                f"{_t(self.phase)} is not less than the period ({_t(self.period)})",
                "a phase from 0 to less than the period",
                self.phase,
                subpath=("phase",),
            )
        return self

    def to_core(self) -> dict[str, Any]:
        """The engine's ``CpuConfig``."""
        return {"period_ns": self.period, "share": self.share, "phase_ns": self.phase}

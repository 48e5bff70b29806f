"""A host's CPU: ``hosts.NAME.cpu: {share: 35%, period: 10ms, phase: 0ms, cost: {...}}``.

The model (the engine's ``host::cpu``): the host runs for ``share`` of every ``period``,
starting ``phase`` into each period, as a VM's vCPU does when the hypervisor gives it a
fraction of a physical CPU. While it is off the CPU nothing of the host runs (TCP timers,
receive and ACK processing, pacing, its qdisc dequeues, NIC polling); packets already on the
wire keep going. The off time is counted as steal. Without a ``cpu:`` block the host always
runs (and ``share: 100%`` is the same; a ``cpu:`` with only ``cost`` has the whole CPU).

``cost: {tx_skb: 1us, tx_gso_frame: 0.5us, rx_packet: 0.5us, rx_skb: 0.5us}`` is the CPU
time the host's network stack takes (the engine's ``host::cpu``, "The CPU cost of packets"):
per skb sent (data or ACK; a GSO skb of many segments is one skb), per frame beyond an skb's
first that software GSO cuts (only with ``offload: {tso: off}``: with TSO the NIC cuts them),
per packet received (driver, IP, GRO: the NIC poll's cost) and per skb TCP receives (one per
GRO aggregate, one per packet with GRO off). The work is serialized on the host's one CPU and
waits for its slices, so a host whose stack needs more than its share is capped at
``share / cost``. ``cost: {}`` takes the
defaults above (round figures of ~1 us per packet each way with offloads off; the engine's
module doc cites the measurement); without ``cost`` the stack is free (except a ``nic:``'s
``rx_cost``). ``nic.rx_cost`` and ``cost.rx_packet`` are the same parameter: with a
``cost`` and no ``rx_packet``, a ``nic.rx_cost`` given is used; giving both is refused.
A pod's own stack work is not charged (it would be a second account of its node's CPU).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, field_validator, model_validator

from tcplab.errors import UnitError, show_value
from tcplab.scenario.base import _Model
from tcplab.scenario.fields import Time, _t
from tcplab.units import parse_percent, parse_time

DEFAULT_PERIOD_NS = 10_000_000
#: The engine's bound on a period (``MAX_DELAY_NS``: an hour).
MAX_PERIOD_NS = 3600 * 10**9


#: ``cost:``'s defaults, ns (engine ``host::cpu``).
DEFAULT_TX_SKB_NS = 1_000
#: Per frame software GSO cuts (``skb_segment()`` and the driver's xmit of the frame, without
#: TCP, IP and the qdisc, which the skb paid once): half of ``tx_skb``, a round figure.
DEFAULT_TX_GSO_FRAME_NS = 500
DEFAULT_RX_PACKET_NS = 500
DEFAULT_RX_SKB_NS = 500
#: The engine's bound on each cost: a second.
MAX_COST_NS = 10**9

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


def parse_cost(value: Any) -> int:
    """A per-skb or per-packet CPU time: a duration of 0 to 1 s (``1us``)."""
    try:
        ns = parse_time(value)
    except UnitError as e:
        raise UnitError(e.problem, "a duration >= 0 such as 1us", value) from None
    if ns > MAX_COST_NS:
        raise UnitError(f"{show_value(value)} is longer than a second", "a duration >= 0 such as 1us", value)
    return ns


Cost = Annotated[int, BeforeValidator(parse_cost)]


class CpuCost(_Model):
    """``cost:``: the CPU time of the host's stack per skb sent, packet received, skb TCP receives."""

    tx_skb: Cost = DEFAULT_TX_SKB_NS
    tx_gso_frame: Cost = DEFAULT_TX_GSO_FRAME_NS
    rx_packet: Cost = DEFAULT_RX_PACKET_NS
    rx_skb: Cost = DEFAULT_RX_SKB_NS

    def to_core(self, nic_rx_cost: int | None) -> dict[str, Any]:
        """The engine's ``CpuCostConfig``; ``nic_rx_cost``: a ``nic.rx_cost`` the scenario gave."""
        rx_packet = self.rx_packet
        if "rx_packet" not in self.model_fields_set and nic_rx_cost is not None:
            rx_packet = nic_rx_cost
        return {
            "tx_skb_ns": self.tx_skb,
            "tx_gso_frame_ns": self.tx_gso_frame,
            "rx_packet_ns": rx_packet,
            "rx_skb_ns": self.rx_skb,
        }


class HostCpu(_Model):
    """``cpu:``: the share of each period the host runs, the period, where in it the slice
    starts, and the CPU cost of its packets."""

    share: Annotated[float, BeforeValidator(parse_share)] = Field(
        description="a share of the CPU such as 35% (above 0%, at most 100%)"
    )
    period: Time = DEFAULT_PERIOD_NS
    phase: Time = 0
    cost: CpuCost | None = None

    @model_validator(mode="before")
    @classmethod
    def _cost_alone_is_a_full_share(cls, value: Any) -> Any:
        # ``cpu: {cost: ...}`` alone: the host has its whole CPU (a share is required otherwise).
        if isinstance(value, dict) and "cost" in value and "share" not in value:
            return {**value, "share": "100%"}
        return value

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

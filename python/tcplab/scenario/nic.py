"""A host's NIC receive side: ``hosts.NAME.nic: {rx_ring: 1024, ...}`` (the engine's ``host::nic``).

The model: received packets land in a ring of ``rx_ring`` descriptors per receive queue
(``ethtool -g``: rx), which NAPI polls drain at ``rx_cost`` of CPU per packet, at most
``napi_weight`` packets per poll of a queue and ``netdev_budget`` packets or
``netdev_budget_usecs`` per softirq round (``net.core.netdev_budget``,
``net.core.netdev_budget_usecs``: the host's ``sysctl`` may set these two too; the ``nic:``
block wins). ``rx_cost`` is the host's per-packet receive cost, the parameter
``cpu.cost.rx_packet`` names on a host with a ``cpu: {cost: ...}`` (:mod:`tcplab.scenario.cpu`).
A packet arriving at a full ring is dropped and counted under the driver's ``ethtool -S`` name.
Flows are spread over ``rx_queues`` by hash (RSS). Defaults: ENA's ring of 1024, one queue,
1 us per packet, the kernel's 64 / 300 / 2000 us.

``allowance:`` is a cloud instance's ingress allowance in front of the ring: a token bucket
of ``rate`` and ``burst`` bytes (and optionally ``pps`` / ``pps_burst`` packets); packets
beyond it wait in a queue of ``queue`` packets and are dropped beyond that (ENA counts
them as ``bw_in_allowance_exceeded`` / ``pps_allowance_exceeded``). AWS does not publish
the bucket depths: they are parameters.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, field_validator, model_validator

from tcplab.errors import UnitError, show_value
from tcplab.scenario.base import _Model
from tcplab.scenario.fields import U32_MAX, Int, Rate, _parse_int
from tcplab.units import parse_size, parse_time

NIC_DRIVERS = ("ena", "ixgbe", "mlx5", "virtio")
#: ``ethtool -G`` bounds tcplab accepts (ixgbe and ENA allow up to 8192 and 16384).
MAX_RING = 65536
MAX_RX_QUEUES = 1024
#: The engine's bounds on an allowance (host/allowance.rs: validate()).
MAX_ALLOWANCE_BURST = 1 << 40
MAX_ALLOWANCE_QUEUE = 1 << 20
MAX_DELAY_NS = 3600 * 10**9


def parse_usecs(value: Any) -> int:
    """``netdev_budget_usecs``: a bare number is microseconds (the sysctl's unit), or a time."""
    if isinstance(value, int) and not isinstance(value, bool):
        ns = _parse_int(1, U32_MAX, "a number of microseconds")(value) * 1000
    else:
        ns = parse_time(value, allow_zero=False)
    if ns > MAX_DELAY_NS:
        raise UnitError(f"{show_value(value)} is longer than an hour", "a time budget such as 2000 (us) or 2ms", value)
    return ns


def _parse_allowance_burst(value: Any) -> int:
    size = parse_size(value)
    if not 1514 <= size <= MAX_ALLOWANCE_BURST:
        raise UnitError(
            f"{show_value(value)} is {'smaller than one full frame (1514 bytes)' if size < 1514 else 'too large'}",
            "a burst from 1514B to 1TiB, such as 10MB",
            value,
        )
    return size


class Allowance(_Model):
    """``allowance:``: an instance's ingress allowance (token buckets in bytes and packets)."""

    rate: Rate = Field(description="a rate such as 5Gbit (the instance's inbound bandwidth)")
    burst: Annotated[int, BeforeValidator(_parse_allowance_burst)] = Field(
        description="a bucket size such as 10MB (AWS does not publish it: a parameter)"
    )
    pps: Int(1, 1 << 40) | None = None
    pps_burst: Int(1, 1 << 40) | None = None
    queue: Int(0, MAX_ALLOWANCE_QUEUE) = 1024

    @model_validator(mode="after")
    def _pps_burst_needs_pps(self) -> Allowance:
        if self.pps_burst is not None and self.pps is None:
            raise UnitError(
                f"pps_burst {self.pps_burst} given without pps",
                "pps (the packet rate) with pps_burst",
                self.pps_burst,
                subpath=("pps_burst",),
            )
        return self

    def to_core(self) -> dict[str, Any]:
        """The engine's ``AllowanceConfig``."""
        return {
            "rate_bps": self.rate,
            "burst_bytes": self.burst,
            "pps": self.pps,
            "pps_burst": self.pps_burst,
            "queue_packets": self.queue,
        }


class Nic(_Model):
    """``nic:``: the receive ring, its queues, NAPI's budgets and an optional ingress allowance."""

    driver: Any = "ena"
    rx_ring: Int(1, MAX_RING) = 1024
    rx_queues: Int(1, MAX_RX_QUEUES) = 1
    rx_cost: Any = 1_000
    napi_weight: Int(1, 65536) = 64
    netdev_budget: Int(1, U32_MAX) | None = None
    netdev_budget_usecs: Any = None
    irq_delay: Any = 0
    allowance: Allowance | None = None

    @field_validator("driver", mode="before")
    @classmethod
    def _driver(cls, v: Any) -> str:
        if v not in NIC_DRIVERS:
            raise UnitError(
                f"unknown driver {show_value(v)}",
                "one of: " + ", ".join(NIC_DRIVERS) + " (it names the ethtool -S counters)",
                v,
            )
        return v

    @field_validator("rx_ring", mode="before")
    @classmethod
    def _ring(cls, v: Any) -> Any:
        if v == 0 and not isinstance(v, bool):
            raise UnitError(
                "0 descriptors (the ring could hold no packet)",
                f"a ring of 1 to {MAX_RING} descriptors, such as 1024",
                v,
            )
        return v

    @field_validator("rx_cost", mode="before")
    @classmethod
    def _cost(cls, v: Any) -> int:
        ns = parse_time(v)
        if ns > 10**9:
            raise UnitError(f"{show_value(v)} is longer than a second", "a per-packet cost such as 1us", v)
        return ns

    @field_validator("irq_delay", mode="before")
    @classmethod
    def _delay(cls, v: Any) -> int:
        ns = parse_time(v)
        if ns > MAX_DELAY_NS:
            raise UnitError(f"{show_value(v)} is longer than an hour", "a delay such as 50us", v)
        return ns

    @field_validator("netdev_budget_usecs", mode="before")
    @classmethod
    def _usecs(cls, v: Any) -> int | None:
        return None if v is None else parse_usecs(v)

    def to_core(self, sysctl_budget: int | None = None, sysctl_budget_ns: int | None = None) -> dict[str, Any]:
        """The engine's ``NicConfig``; the host's ``net.core.netdev_budget*`` sysctls fill in
        what the block leaves out."""
        budget = self.netdev_budget if self.netdev_budget is not None else sysctl_budget
        budget_ns = self.netdev_budget_usecs if self.netdev_budget_usecs is not None else sysctl_budget_ns
        return {
            "driver": self.driver,
            "rx_ring": self.rx_ring,
            "rx_queues": self.rx_queues,
            "rx_cost_ns": self.rx_cost,
            "napi_weight": self.napi_weight,
            "netdev_budget": budget if budget is not None else 300,
            "netdev_budget_ns": budget_ns if budget_ns is not None else 2_000_000,
            "irq_delay_ns": self.irq_delay,
            "allowance": self.allowance.to_core() if self.allowance is not None else None,
        }

"""Flows: TCP connections from a sender host to a receiver host, their cc and socket settings."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, field_validator

from tcplab.errors import UnitError
from tcplab.scenario.apps import App, AppSpec
from tcplab.scenario.base import _Model
from tcplab.scenario.fields import Bool, CcName, Int, IntSize, MemTriple, Name, NodeName, Rate, Time, _t
from tcplab.units import parse_size


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
    tcp_limit_output_bytes: IntSize | None = None
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


def flow_names(index: int, flow: Flow) -> list[str]:
    """The expanded names of ``flows[index]``: its name, or ``<name>.0`` ... with ``count``."""
    base = flow.name or f"{flow.from_}-{flow.to}-{index}"
    if flow.count == 1:
        return [base]
    return [f"{base}.{k}" for k in range(flow.count)]

"""Hosts and their ``net.ipv4.tcp_*`` sysctls, with Linux's defaults.

A host terminates flows; its ``sysctl`` block sets its sockets' defaults (``tcp_rmem`` of
the receiver, everything else of the sender; see :mod:`tcplab.scenario`).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from tcplab.errors import UnitError, show_value
from tcplab.scenario.base import _Model
from tcplab.scenario.fields import Bool, CcName, Int, IntSize, MemTriple
from tcplab.units import U64_MAX

#: The engine's TCP settings and their Linux v6.12 defaults (the engine applies the same).
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

#: Congestion-control module parameters and their defaults (tcp_cubic.c, v6.12).
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


class Sysctl(_Model):
    """``net.ipv4.tcp_*`` sysctls of a host (Linux v6.12 defaults)."""

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
    tcp_limit_output_bytes: IntSize = 1048576
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


class Host(_Model):
    """A host: terminates flows; its sysctls set its sockets' defaults.

    ``hz`` is the host kernel's ``CONFIG_HZ``, the tick of its jiffy clocks and timers (RTO,
    loss probe, delayed ACK, CUBIC's clock): 250 as Debian builds its kernels (the default),
    1000 as Fedora and RHEL do, or 100.
    """

    sysctl: Sysctl = Field(default_factory=Sysctl)
    hz: int = 250

    @field_validator("hz", mode="before")
    @classmethod
    def _hz(cls, v: Any) -> Any:
        if isinstance(v, bool) or v not in (100, 250, 1000):
            raise UnitError(f"unsupported CONFIG_HZ {show_value(v)}", "100, 250 or 1000", v)
        return v

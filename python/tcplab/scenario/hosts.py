"""Hosts and their ``net.ipv4.tcp_*`` sysctls, with Linux's defaults.

A host terminates flows; its ``sysctl`` block sets its sockets' defaults (``tcp_rmem`` of
the receiver, everything else of the sender; see :mod:`tcplab.scenario`), except
``tcp_ecn`` and ``tcp_ecn_fallback``, which follow the connection's roles: each end's
``tcp_ecn`` (whether its SYN asks for ECN, whether it accepts a peer's request) and the
connecting side's ``tcp_ecn_fallback`` (:data:`ENDPOINT_SYSCTLS`).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, field_validator, model_validator

from tcplab.errors import UnitError, show_value
from tcplab.scenario.base import _Model
from tcplab.scenario.cpu import HostCpu
from tcplab.scenario.fields import Bool, CcName, Int, IntSize, MemTriple, _t
from tcplab.scenario.nic import Nic, parse_usecs
from tcplab.scenario.offload import Offload
from tcplab.scenario.queues import Queue, QueueSpec, parse_queue
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
    # net.ipv4.tcp_ecn of the flow's [client, server] hosts (2: accept ECN when the peer asks,
    # never ask: net/ipv4/tcp_ipv4.c tcp_sk_init()) and the client's tcp_ecn_fallback
    "tcp_ecn": [2, 2],
    "tcp_ecn_fallback": True,
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


#: Sysctls that a flow takes by the role of each end rather than from its data sender:
#: ``tcp_ecn`` of both ends (the engine's ``tcp.tcp_ecn = [client, server]``: the client's
#: decides whether its SYN asks for ECN, the server's whether it accepts; Linux v6.12
#: net/ipv4/tcp_output.c tcp_ecn_send_syn(), tcp_input.c tcp_ecn_create_request()) and the
#: client's ``tcp_ecn_fallback`` (whether it gives ECN up when its ECN-setup SYN goes
#: unanswered: tcp_ecn_clear_syn()).
ENDPOINT_SYSCTLS = ("tcp_ecn", "tcp_ecn_fallback")
#: ``net.core.*`` sysctls a host's ``sysctl`` block takes (with or without the prefix).
CORE_SYSCTLS = ("default_qdisc", "netdev_budget", "netdev_budget_usecs")
#: ``net.core.default_qdisc`` values tcplab models (the kernel's default is pfifo_fast;
#: systemd-based distributions set fq_codel).
DEFAULT_QDISCS = ("pfifo_fast", "pfifo", "bfifo", "fq", "fq_codel")


def _parse_default_qdisc(value: Any) -> str:
    if value in DEFAULT_QDISCS:
        return value
    raise UnitError(
        f"unknown qdisc {show_value(value)}",
        "one of: " + ", ".join(DEFAULT_QDISCS) + " (qdiscs that need no parameters)",
        value,
    )


class Sysctl(_Model):
    """``net.ipv4.tcp_*`` sysctls of a host (Linux v6.12 defaults), and three ``net.core.*``.

    ``default_qdisc`` (net.core.default_qdisc) is the qdisc of the host's egress links that
    set none (below ``hosts.NAME.qdisc``); ``netdev_budget`` / ``netdev_budget_usecs``
    (net.core.*) feed the host's ``nic:`` model (which must be present).
    """

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
    #: 0: no ECN; 1: ask for it on outgoing connections and accept it on incoming ones; 2 (the
    #: default): accept it when asked (v6.12 sysctl_net_ipv4.c: a u8 from 0 to 2). A flow's
    #: cc that needs ECN (dctcp, TCP_CONG_NEEDS_ECN) asks and accepts whatever it says.
    tcp_ecn: Int(0, 2) = 2
    #: 1: a connection whose ECN-setup SYN was retransmitted stops asking (RFC 3168 6.1.1.1)
    tcp_ecn_fallback: Bool = True
    default_qdisc: Annotated[str, BeforeValidator(_parse_default_qdisc)] | None = None
    netdev_budget: Int(1, 2**31 - 1) | None = None
    netdev_budget_usecs: Annotated[int, BeforeValidator(parse_usecs)] | None = None

    @classmethod
    def _strip_prefix(cls, key: Any, allowed: list[str]) -> Any:
        """``net.core.`` before the core sysctls, ``net.ipv4.`` before the others."""
        if isinstance(key, str):
            for prefix in ("net.core.", "net/core/"):
                if key.startswith(prefix) and key[len(prefix) :] in CORE_SYSCTLS:
                    return key[len(prefix) :]
            if any(key.startswith(p) for p in cls._key_prefixes) and key.split(".")[-1] in CORE_SYSCTLS:
                return key
        return super()._strip_prefix(key, allowed)

    def to_core_tcp(self) -> dict[str, Any]:
        """The sysctls in the engine's ``tcp`` names (``tcp_rmem`` included; the caller picks),
        but :data:`ENDPOINT_SYSCTLS`, which the caller takes from the client and the server."""
        out = {}
        for name in type(self).model_fields:
            if name == "tcp_congestion_control" or name in CORE_SYSCTLS or name in ENDPOINT_SYSCTLS:
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

    ``qdisc`` is the qdisc of the host's devices: every egress link of the host that sets no
    ``queue:`` of its own gets it (``qdisc: fq`` or ``{kind: fq, horizon: 2s}``); below it,
    ``sysctl.default_qdisc``; below that, pfifo_fast (a pfifo of txqueuelen 1000 packets).
    ``cpu`` (:mod:`tcplab.scenario.cpu`) and ``nic`` (:mod:`tcplab.scenario.nic`) add the
    host's CPU time slices and NIC receive side; without them the host always runs and its
    NIC is ideal. ``offload`` (:mod:`tcplab.scenario.offload`) is ``ethtool -K``: ``gro``.
    """

    sysctl: Sysctl = Field(default_factory=Sysctl)
    hz: int = 250
    qdisc: Queue | None = None
    cpu: HostCpu | None = None
    nic: Nic | None = None
    offload: Offload = Field(default_factory=Offload)

    @model_validator(mode="after")
    def _one_rx_packet_cost(self) -> Host:
        cost = self.cpu.cost if self.cpu is not None else None
        both = cost is not None and self.nic is not None
        if both and "rx_packet" in cost.model_fields_set and "rx_cost" in self.nic.model_fields_set:
            raise UnitError(
                f"{_t(cost.rx_packet)} is given and so is nic.rx_cost ({_t(self.nic.rx_cost)}), the same parameter",
                "one of them (nic.rx_cost is cpu.cost.rx_packet's older name)",
                cost.rx_packet,
                subpath=("cpu", "cost", "rx_packet"),
            )
        return self

    def cpu_cost_to_core(self) -> dict[str, Any] | None:
        """The engine's ``cpu_cost``, or None without ``cpu.cost``."""
        if self.cpu is None or self.cpu.cost is None:
            return None
        nic_rx = self.nic.rx_cost if self.nic is not None and "rx_cost" in self.nic.model_fields_set else None
        return self.cpu.cost.to_core(nic_rx)

    @model_validator(mode="after")
    def _budget_needs_nic(self) -> Host:
        for name in ("netdev_budget", "netdev_budget_usecs"):
            value = getattr(self.sysctl, name)
            if value is not None and self.nic is None:
                raise UnitError(
                    f"net.core.{name} = {value} is set but the host has no nic: model (packets go straight to TCP)",
                    "a nic: block on this host, such as nic: {rx_ring: 1024}",
                    value,
                    subpath=("sysctl", name),
                )
        return self

    def egress_queue(self) -> QueueSpec | None:
        """The qdisc of the host's links that set none: ``qdisc``, else ``sysctl.default_qdisc``."""
        if self.qdisc is not None:
            return self.qdisc
        if self.sysctl.default_qdisc is not None:
            return parse_queue(self.sysctl.default_qdisc)
        return None

    def nic_to_core(self) -> dict[str, Any] | None:
        if self.nic is None:
            return None
        return self.nic.to_core(self.sysctl.netdev_budget, self.sysctl.netdev_budget_usecs)

    @field_validator("hz", mode="before")
    @classmethod
    def _hz(cls, v: Any) -> Any:
        if isinstance(v, bool) or v not in (100, 250, 1000):
            raise UnitError(f"unsupported CONFIG_HZ {show_value(v)}", "100, 250 or 1000", v)
        return v

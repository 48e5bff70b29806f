"""Pods: ``pods: {web: {node: worker1, egress_bandwidth: 10M, mode: cni}}``.

A pod is a network namespace on a Kubernetes node (a host of the scenario). In tcplab it
becomes a host of its own (its sockets: flows name it in ``from``/``to`` like any host),
joined to its node by a veth pair, and the node forwards (``ip_forward = 1``), as a node
carries its pods' traffic. The veth costs nothing: its two one-way links run at 1 Pbit/s with
no delay, and the pod side's ``noqueue`` is a pfifo of 2^32 - 1 packets (never full: at
1 Pbit/s it drains at once). Crossing into the node orphans a packet (the node's
``ip_rcv_core()`` on the way to ip_forward): the pod's TCP gets its TSQ budget back there,
so the node's fq never holds the pod's sockets back; only cwnd and the buffers do. Two
exceptions: the CNI plugin's egress tbf sits before that point (the host-side veth's tc
ingress redirects the pod's own skb to the IFB, net/sched/act_mirred.c: tcf_mirred_to_dev()
does not clone at ingress), so TSQ holds a ``cni`` pod's sockets to their budget in the
tbf (``orphan_after_queue``); and ``bandwidth_manager: {host_routing: bpf}`` (Cilium's BPF
host routing, see :class:`BandwidthManager`), where a Bandwidth Manager pod's packets keep
their socket until they leave the node's device. The pod's node must be a host (not a router, not a pod);
links never name a pod (the veth is its only link).

``egress_bandwidth`` / ``ingress_bandwidth`` are the ``kubernetes.io/egress-bandwidth`` /
``ingress-bandwidth`` annotations, in Kubernetes quantities (``10M`` = 10 Mbit/s), and
``mode`` says who enforces them (:mod:`tcplab.scenario.bandwidth` has the arithmetic):

``cni`` (default): the CNI bandwidth plugin. Egress: a tbf on the IFB device, modelled as
    the tbf of the pod -> node veth link (the extra hop); ingress: a tbf on the node -> pod
    veth link. ``runtime`` (``containerd``, default, or ``crio``) fills in the burst.
``bandwidth-manager``: Cilium. Each pod's egress is an EDT aggregate on every egress link of
    its node that leads out of the node (not to its pods), and those links get Cilium's fq
    (horizon 2 s, 2^15 buckets) unless they set a ``queue:`` of their own (which must then be
    fq). ``bbr: true`` (per pod, or ``bandwidth_manager: {bbr: true}`` for all) makes the
    pod's sockets use BBR, as Cilium's ``bandwidthManager.bbr`` does (kernel >= 5.18 keeps
    the EDT timestamp across the namespace). Ingress limits are refused (Cilium enforces
    egress only).

A pod's ``sysctl`` block is its namespace's (``net.ipv4.tcp_*`` are per namespace); its
``hz`` and ``cpu`` are its node's (same kernel, same CPU).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, field_validator, model_validator

from tcplab.errors import UnitError, show_value
from tcplab.scenario.bandwidth import RUNTIMES, cni_tbf, parse_k8s_bandwidth
from tcplab.scenario.base import _Model
from tcplab.scenario.fields import Bool, NodeName, PosTime
from tcplab.scenario.hosts import CORE_SYSCTLS, Sysctl
from tcplab.scenario.qdiscs import PSCHED_MTU_BYTES

POD_MODES = ("cni", "bandwidth-manager")
#: The veth pair's links: no serialization cost, no delay, a pfifo that never fills.
VETH_RATE_BPS = 10**15
VETH_QUEUE = {"kind": "pfifo", "limit_packets": 2**32 - 1}

K8sBandwidth = Annotated[int, BeforeValidator(parse_k8s_bandwidth)]


class Pod(_Model):
    """A ``pods:`` entry."""

    node: NodeName = Field(description="the name of the host (Kubernetes node) the pod runs on")
    egress_bandwidth: K8sBandwidth | None = None
    ingress_bandwidth: K8sBandwidth | None = None
    mode: str = "cni"
    runtime: str = "containerd"
    bbr: Bool | None = None
    sysctl: Sysctl = Field(default_factory=Sysctl)

    @field_validator("mode", mode="before")
    @classmethod
    def _mode(cls, v: Any) -> str:
        if v not in POD_MODES:
            raise UnitError(
                f"unknown mode {show_value(v)}",
                "cni (the CNI bandwidth plugin's tbf) or bandwidth-manager (Cilium's EDT + fq)",
                v,
            )
        return v

    @field_validator("runtime", mode="before")
    @classmethod
    def _runtime(cls, v: Any) -> str:
        if v == "cri-o":
            v = "crio"
        if v not in RUNTIMES:
            raise UnitError(f"unknown runtime {show_value(v)}", "containerd or crio (it fills in the tbf burst)", v)
        return v

    @model_validator(mode="after")
    def _no_device_sysctls(self) -> Pod:
        for name in CORE_SYSCTLS:
            value = getattr(self.sysctl, name)
            if value is not None:
                raise UnitError(
                    f"net.core.{name} = {value} does nothing in a pod: its only device is the veth (noqueue, no NIC)",
                    "net.ipv4.tcp_* sysctls only; set net.core.* on the pod's node",
                    value,
                    subpath=("sysctl", name),
                )
        return self

    @model_validator(mode="after")
    def _ingress_needs_cni(self) -> Pod:
        if self.mode == "bandwidth-manager" and self.ingress_bandwidth is not None:
            raise UnitError(
                f"{self.ingress_bandwidth} bit/s given, but Cilium's Bandwidth Manager enforces egress limits only "
                "(it ignores kubernetes.io/ingress-bandwidth)",
                "no ingress_bandwidth with mode bandwidth-manager, or mode: cni",
                self.ingress_bandwidth,
                subpath=("ingress_bandwidth",),
            )
        return self

    @model_validator(mode="before")
    @classmethod
    def _cni_bucket_holds_a_frame(cls, data: Any) -> Any:
        """The CNI plugin's tbf must pass a full frame: containerd's bucket is at most
        ``rate x (2^32 - 1) ns`` (sch_tbf.c keeps it as a u32 of ns; see
        :mod:`tcplab.scenario.bandwidth`), below one 1514-byte frame under ~2.9 kbit/s, and
        CRI-O's wrapped limit (``rate x 25 ms - 2`` bytes) is below one frame under ~486 kbit/s;
        either way tbf would drop every full-size packet (the engine refuses such a tbf).
        Checked on the values as written (so the error quotes them); malformed ones are left to
        the field validators."""
        if not isinstance(data, dict) or data.get("mode", "cni") != "cni":
            return data
        runtime = "crio" if data.get("runtime") == "cri-o" else data.get("runtime", "containerd")
        if runtime not in RUNTIMES:
            return data
        for field in ("egress_bandwidth", "ingress_bandwidth"):
            raw = data.get(field)
            if raw is None:
                continue
            try:
                bps = parse_k8s_bandwidth(raw)
            except UnitError:
                continue
            tbf = cni_tbf(bps, runtime)
            if tbf["burst_bytes"] < PSCHED_MTU_BYTES:
                raise UnitError(
                    f"{show_value(raw)} gives the CNI plugin's tbf a bucket of {tbf['burst_bytes']} bytes "
                    f"({runtime}'s burst is capped at rate x (2^32 - 1) ns), below one {PSCHED_MTU_BYTES}-byte "
                    "frame: every full-size packet would be dropped",
                    "at least 3k (about 2.9 kbit/s) in mode cni",
                    raw,
                    subpath=(field,),
                )
            if tbf["limit_bytes"] < PSCHED_MTU_BYTES:
                raise UnitError(
                    f"{show_value(raw)} gives the CNI plugin's tbf a limit of {tbf['limit_bytes']} bytes "
                    f"({runtime}: rate x 25 ms + burst, wrapped in u32), below one {PSCHED_MTU_BYTES}-byte "
                    "frame: every full-size packet would be dropped",
                    f"at least 486k in mode cni with runtime {runtime}",
                    raw,
                    subpath=(field,),
                )
        return data

    def uses_bbr(self, manager: BandwidthManager) -> bool:
        """Whether the pod's sockets default to BBR (``bbr:`` here, else the manager's)."""
        if self.bbr is not None:
            return self.bbr
        return self.mode == "bandwidth-manager" and manager.bbr


HOST_ROUTINGS = ("legacy", "bpf")


class BandwidthManager(_Model):
    """``bandwidth_manager:``: Cilium's Bandwidth Manager settings for every pod in that mode.

    ``host_routing`` is Cilium's "Host Routing" (``cilium status``): ``legacy`` (default) sends
    a pod's packets up the node's IP stack, whose ``ip_rcv_core()`` orphans them (Linux v6.12
    net/ipv4/ip_input.c), so the pod's TSQ budget comes back as they enter the node; ``bpf``
    (BPF host routing: kernel >= 5.10 with kube-proxy replacement) redirects them to the
    device with ``bpf_redirect_neigh()``, keeping ``skb->sk``: a packet fq holds on the node's
    device still counts against the pod socket's TSQ budget, the "improves TCP TSQ handling"
    of story 002. Pods in mode ``cni`` are unaffected (their sockets are held through the
    IFB's tbf and released by the node's ``ip_rcv_core()`` after it).

    ``ce_threshold`` (a time, e.g. ``1ms``; off by default) is a what-if, not a Cilium
    setting: the ECN marking cilium/cilium PR #33220 proposed ("bandwidth-manager: introduce
    ecn marking to prevent bufferbloat", 2024, closed without being merged; no Cilium
    release marks): the pod's EDT program marks CE on an ECN-capable packet it stamps more
    than the threshold ahead of now, so ECN senders back off before fq's flow limit or the
    2 s horizon drops. It needs ECN negotiated (``sysctl: {tcp_ecn: 1}`` on the connecting
    hosts, or DCTCP).
    """

    bbr: Bool = False
    host_routing: str = "legacy"
    ce_threshold: PosTime | None = None

    @field_validator("host_routing", mode="before")
    @classmethod
    def _host_routing(cls, v: Any) -> str:
        if v not in HOST_ROUTINGS:
            raise UnitError(
                f"unknown host routing {show_value(v)}",
                "legacy (through the node's IP stack) or bpf (BPF host routing: bpf_redirect_neigh)",
                v,
            )
        return v

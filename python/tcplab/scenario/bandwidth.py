"""Pod bandwidth limits: what Kubernetes, the container runtime, the CNI bandwidth plugin and
Cilium's Bandwidth Manager make of ``kubernetes.io/egress-bandwidth: 10M``.

All the arithmetic of the two modes is here, each step citing the code it follows.

The annotation value (kubelet, pkg/util/bandwidth/utils.go: ExtractPodBandwidthResources())
    A Kubernetes ``resource.Quantity`` in **bits per second**: ``10M`` = 10^7 bit/s, ``1G``,
    ``500k``, ``10Mi`` = 10 * 2^20 bit/s, ``1e6``; ``m`` (milli) is allowed by the quantity
    syntax but rounds up to whole bit/s (``Quantity.Value()``). Kubelet refuses values below
    1k (``< 1kbit``) and above 1P. :func:`parse_k8s_bandwidth`.

``mode: cni``: the CNI bandwidth plugin (containernetworking/plugins plugins/meta/bandwidth,
ifb_creator.go: createTBF(), the tbf path of plugins v1.0-v1.4)
    Egress (from the pod): the host-side veth's ingress is redirected to an IFB device that
    carries a tbf; ingress (to the pod): a tbf on the host-side veth. The runtime fills in
    the burst Kubernetes does not give:

    * containerd (pkg/cri/.../helpers.go: toCNIBandWidth()): ``burst = math.MaxUint32`` bits;
    * CRI-O (server/sandbox_network.go): ``burst = math.MaxUint32*8 - 1`` bits.

    The plugin computes, with ``rate`` and ``burst`` in bytes (integer division by 8):
    ``limit = uint32(rate * 25 ms) + uint32(burst)`` (u32 arithmetic, so it wraps) and a
    bucket ``buffer`` in ticks, passed by netlink without ``TCA_TBF_BURST``; the kernel
    (Linux v6.12 net/sched/sch_tbf.c: tbf_change()) takes it as time,
    ``min(PSCHED_TICKS2NS(buffer), ~0U)`` ns, so the bucket holds at most 2^32 - 1 ns of
    traffic at the rate: ``burst_eff = min(burst, rate * 4.294967295 s)``.

    containerd, 10 Mbit/s: burst 536870911 B, bucket min(536870911, 1.25e6 * 4.295) =
    5368709 B (5.4 MB: the first ~4.3 s after an idle start pass at line rate), limit
    31250 + 536870911 = 536902161 B (537 MB: the shaper practically never drops; the standing
    queue is bounded by the senders' buffers). CRI-O: burst 4294967294 B, the same bucket,
    and the limit wraps: 31250 + 4294967294 - 2^32 = 31248 B (rate * 25 ms - 2 bytes).

    Simplification: the plugin's own µs-to-tick conversion (``time2Tick``) overflows its u32
    for buckets above ~275 s of traffic (rates below ~15.6 Mbit/s with these bursts); tcplab
    assumes the wrapped value still exceeds the kernel's 2^32 - 1 ns cap, as it does at
    10 Mbit/s. The plugin's newer HTB path (``shapedSubnets``) is not modelled.

    tbf counts whole Ethernet frames (``skb->len`` with the 14-byte header, no size table),
    so a bulk TCP flow's payload ceiling is ``rate * 1448 / 1514``.

``mode: bandwidth-manager``: Cilium's Bandwidth Manager (cilium pkg/datapath/linux/bandwidth,
bpf/lib/edt.h)
    Per pod, an EDT aggregate at the node's physical device: each packet is stamped
    ``t_next = t_last + wire_len * 1e9 / rate_Bps``; a packet that would wait 2 s or more is
    dropped before the qdisc (``drop_horizon``); the device's qdisc is mq with an fq per
    queue, set up with ``horizon 2s`` (horizon_drop) and 2^15 buckets. tcplab's devices have
    one queue, so one fq (:data:`CILIUM_FQ`). Ingress limits are not supported by Cilium
    (``kubernetes.io/ingress-bandwidth`` is ignored there): refused.
"""

from __future__ import annotations

import re
from decimal import ROUND_CEILING, Decimal, localcontext
from typing import Any

from tcplab.errors import UnitError, show_value
from tcplab.literals import Oversized
from tcplab.units import OutOfRange

#: math.MaxUint32.
MAX_UINT32 = 2**32 - 1
#: The plugin's fixed queueing latency for the tbf limit (ifb_creator.go: latencyInMillis = 25).
CNI_LATENCY_NS = 25_000_000
#: The burst each runtime passes to the plugin, in bits.
RUNTIME_BURST_BITS = {"containerd": MAX_UINT32, "crio": MAX_UINT32 * 8 - 1}
RUNTIMES = tuple(RUNTIME_BURST_BITS)
#: sch_tbf.c: tbf_change(): the bucket is kept as time, capped at ~0U ns.
TBF_MAX_BUFFER_NS = MAX_UINT32
#: Kubelet's bounds on the annotation (pkg/util/bandwidth/utils.go: minRsrc, maxRsrc).
K8S_MIN_BPS = 1000
K8S_MAX_BPS = 10**15
#: Cilium's fq on the node's device and its EDT drop horizon.
CILIUM_HORIZON_NS = 2_000_000_000
CILIUM_FQ = {"horizon_ns": CILIUM_HORIZON_NS, "horizon_drop": True, "buckets": 1 << 15}

K8S_EXPECTED = "a Kubernetes quantity in bits per second such as 10M, 500k, 1G or 10Mi (at least 1k, at most 1P)"
_QUANTITY = re.compile(
    r"\s*([+]?(?:\d+(?:\.\d*)?|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?)\s*\Z"
)
_SUFFIX = {
    None: Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "E": Decimal(10**18),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}


def parse_k8s_bandwidth(value: Any) -> int:
    """A ``kubernetes.io/{egress,ingress}-bandwidth`` value -> bits per second.

    ``resource.Quantity`` syntax (k8s.io/apimachinery pkg/api/resource/quantity.go): a
    number with an SI suffix (``k M G T P E``, and ``m u n``), a binary one (``Ki Mi Gi ...``)
    or an exponent (``1e6``); ``Value()`` rounds up to an integer. Bounds as kubelet's
    validateBandwidthIsReasonable(): 1k to 1P.
    """
    if isinstance(value, Oversized):
        raise OutOfRange(f"{show_value(value)} is too large", K8S_EXPECTED, value)
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise UnitError(f"{show_value(value)} is not a bandwidth", K8S_EXPECTED, value)
    if isinstance(value, int) and value > K8S_MAX_BPS:  # not str(): past 4300 digits it fails
        raise UnitError(f"{show_value(value)} is unreasonably large (> 1Pbit, as kubelet refuses)", K8S_EXPECTED, value)
    m = _QUANTITY.match(str(value))
    if not m:
        hint = (
            " (Kubernetes units: write 10M for 10 Mbit/s)" if isinstance(value, str) and "bit" in value.lower() else ""
        )
        raise UnitError(f"{show_value(value)} is not a Kubernetes quantity{hint}", K8S_EXPECTED, value)
    number = Decimal(m.group(1))
    exponent = m.group(2)[1:] if m.group(2) else "0"
    # The magnitude first: 10 ** 9999999 is a decimal.Overflow, and far past either bound anyway.
    magnitude = number.adjusted() + (int(exponent) if len(exponent.lstrip("+-0")) <= 6 else int(exponent[:1] + "9" * 7))
    if number != 0 and magnitude > 30:
        bps = K8S_MAX_BPS + 1
    elif number == 0 or magnitude < -30:
        bps = 0
    else:
        factor = Decimal(10) ** int(exponent) if m.group(2) else _SUFFIX[m.group(3)]
        with localcontext() as ctx:
            ctx.prec = 80
            bps = int((number * factor).to_integral_value(rounding=ROUND_CEILING))
    if bps < K8S_MIN_BPS:
        raise UnitError(f"{show_value(value)} is unreasonably small (< 1kbit, as kubelet refuses)", K8S_EXPECTED, value)
    if bps > K8S_MAX_BPS:
        raise UnitError(f"{show_value(value)} is unreasonably large (> 1Pbit, as kubelet refuses)", K8S_EXPECTED, value)
    return bps


def cni_tbf(rate_bps: int, runtime: str = "containerd") -> dict[str, Any]:
    """The tbf the CNI bandwidth plugin installs for an annotation of ``rate_bps`` when the
    runtime fills in the burst (see the module doc); the engine's ``TbfConfig`` fields."""
    burst_bits = RUNTIME_BURST_BITS[runtime]
    rate_bytes = rate_bps // 8  # createTBF(): rateInBytes := rateInBits / 8
    burst_bytes = burst_bits // 8  # burstInBytes := burstInBits / 8
    # limit(): uint32(float64(rate) * latency / 1e6) + buffer, in uint32 arithmetic.
    limit_bytes = (rate_bytes * CNI_LATENCY_NS // 10**9 + (burst_bytes & MAX_UINT32)) & MAX_UINT32
    # The kernel keeps the bucket as at most ~0U ns of traffic at the rate (tbf_change()).
    bucket_bytes = min(burst_bytes, rate_bytes * TBF_MAX_BUFFER_NS // 10**9)
    return {
        "rate_bps": rate_bytes * 8,
        "burst_bytes": bucket_bytes,
        "limit_bytes": limit_bytes,
        "peakrate_bps": None,
        "mtu_bytes": None,
        "child": None,
    }


def cilium_edt(pod_index: int, rate_bps: int, ce_threshold_ns: int | None = None) -> dict[str, Any]:
    """One pod's EDT aggregate on its node's device (bpf/lib/edt.h: edt_sched_departure()),
    with PR #33220's CE marking above ``ce_threshold_ns`` if given (see ``BandwidthManager``)."""
    agg: dict[str, Any] = {"nodes": [pod_index], "rate_bps": rate_bps, "drop_horizon_ns": CILIUM_HORIZON_NS}
    if ce_threshold_ns is not None:
        agg["ce_threshold_ns"] = ce_threshold_ns
    return agg


def cilium_fq() -> dict[str, Any]:
    """The fq Cilium's Bandwidth Manager puts on the node's device (one per tx queue under mq)."""
    return {"kind": "fq", **CILIUM_FQ}

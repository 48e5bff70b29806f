"""Pod egress limits (``kubernetes.io/egress-bandwidth``) in both enforcement modes.

Story 002 (docs/stories.md) measured netperf TCP_STREAM from a pod limited to 10 and to
100 Mbit/s: 9.54 and 94.97 Mbit/s. Both shapers count whole Ethernet frames (IP + 14
bytes: tbf's ``skb->len`` without a stab, Cilium's ``wire_len``), so a bulk stream of
full-size segments carries at most ``rate x 1448 / 1514`` of payload: 9.564 Mbit/s of 10.
Goodput is measured in the steady state (after 5 s): under the CNI plugin with containerd
the bucket holds 2^32 - 1 ns of traffic (5.4 MB at 10 Mbit/s), which passes at line rate
first.
"""

from __future__ import annotations

import pytest

import tcplab

pytestmark = pytest.mark.engine

SCENARIOS = {"cni": "builtin:cni-bandwidth-pod-limit", "bandwidth-manager": "builtin:bandwidth-manager-pod-limit"}
PAYLOAD_SHARE = 1448 / 1514


def steady_goodput_bps(result, after_s: float = 5.0) -> float:
    s = result.timeseries
    s = s[s.t_s >= after_s]
    first, last = s.iloc[0], s.iloc[-1]
    return (last.bytes_received - first.bytes_received) * 8 / (last.t_s - first.t_s)


@pytest.mark.parametrize("mode", sorted(SCENARIOS))
@pytest.mark.parametrize("limit_bps", [10_000_000, 100_000_000])
def test_a_bulk_stream_gets_the_limit_less_header_overhead(mode, limit_bps):
    result = tcplab.run(
        SCENARIOS[mode], overrides=[f"pods.web.egress_bandwidth={limit_bps // 1_000_000}M", "duration=20s"]
    )
    expected = limit_bps * PAYLOAD_SHARE
    got = steady_goodput_bps(result)
    assert abs(got - expected) <= 0.02 * expected, (mode, limit_bps, got, expected)
    assert result.invariant["ok"], result.invariant


def test_the_cni_tbf_queue_is_held_to_the_pods_tsq_budget():
    # The pod's skbs keep their socket through the IFB's tbf (Linux v6.12: skb_scrub_packet()
    # does not orphan, act_mirred redirects the skb itself at the veth's tc ingress, and the
    # node's ip_rcv_core() orphans it only after the IFB), so tcp_small_queue_check() holds
    # the pod's CUBIC socket (not paced: SK_PACING_NONE) to
    # max(2 x skb truesize, sk_pacing_rate >> 10) in the tbf, capped at tcp_limit_output_bytes.
    # At ~10 Mbit/s the pacing term is ~1.2 KB, so the tbf holds about two skbs (at most 2 x
    # 64 KB + overhead: 107 ms at 10 Mbit/s) and never the window: containerd's limit (~537 MB)
    # never drops. The kernel run of this path (docs/kernel-pin.md, "The CNI plugin's tbf
    # holds the pod's TSQ budget") kept 2 skbs, 136 KB, in the tbf with cwnd 379.
    result = tcplab.run(SCENARIOS["cni"], overrides=["duration=20s"])
    flow = result.flows.iloc[0]
    two_skbs_s = 2 * (65536 + 768) * 1514 / 1448 * 8 / 10e6
    # the base RTT of the path is ~1 ms; one frame time at the tbf's rate of slack
    assert flow["rtt_p99_ms"] < (two_skbs_s + 0.002 + 1514 * 8 / 10e6) * 1000, flow["rtt_p99_ms"]
    assert flow["retrans_segs"] == 0
    tbf = result.links[result.links["qdisc"] == "tbf"].iloc[0]
    assert tbf["drops"] == 0
    # After the bucket's line-rate start (the peak then follows the pacing rate of the burst),
    # the steady state: about two skbs, never a window.
    q = result.queues
    steady = q[(q.qdisc == "tbf") & (q.t_s >= 5.0)]
    assert len(steady) and steady.backlog_bytes.max() <= 2 * (65536 + 768) * 1514 / 1448, steady.backlog_bytes.max()

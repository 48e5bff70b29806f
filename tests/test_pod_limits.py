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


def test_the_cni_tbf_queue_is_bounded_only_by_the_socket_buffers():
    # The pod's packets are orphaned crossing the veth (skb_scrub_packet), before the IFB's
    # tbf: TSQ no longer holds the sender back, and containerd's limit (~537 MB) never
    # drops. CUBIC's window then grows to what the receive buffer allows (tcp_rmem max 6 MB,
    # a ~3 MB window), so the queue in the tbf, and the RTT, grow to seconds at 10 Mbit/s
    # (3 MB at 10 Mbit/s = 2.4 s), with no loss at all.
    result = tcplab.run(SCENARIOS["cni"], overrides=["duration=20s"])
    flow = result.flows.iloc[0]
    assert flow["rtt_p99_ms"] > 1000, flow["rtt_p99_ms"]
    assert flow["retrans_segs"] == 0
    tbf = result.links[result.links["qdisc"] == "tbf"].iloc[0]
    assert tbf["drops"] == 0 and tbf["max_backlog_packets"] > 1000

"""Cilium's ECN what-if (``bandwidth_manager.ce_threshold``, cilium/cilium PR #33220, not
merged): the pod's EDT program marks CE on packets it stamps more than the threshold ahead.

The model's expectations, derived, not copied from a run: with marking, every bulk CUBIC
flow is held at the smallest window a CWR leaves (ssthresh at least 2 packets), so the pod's
EDT timeline holds about bulk x 2 frames and the RR's 1-byte response waits that long at the
pod's rate; without marking, each bulk flow may keep fq's flow_limit of 100 packets there,
so the RR waits far longer. Marking needs ECN negotiated: with Linux's default tcp_ecn = 2 on
the client nothing is marked.
"""

from __future__ import annotations

import pytest

import tcplab

BULK = 8
RATE_BPS = 100e6
FRAME_BYTES = 1448 + 52 + 14  # MSS + IP/TCP/timestamps + Ethernet


def run(*sets: str) -> tcplab.Result:
    base = ("duration=4s", f"flows.0.count={BULK}")
    return tcplab.run("builtin:bandwidth-manager-ecn", overrides=[*base, *sets])


def rr_mean_ms(r: tcplab.Result) -> float:
    return float(r.apps["rr"].get("latency_ms", "mean"))


def ce_marks(r: tcplab.Result) -> int:
    return sum(int(e["ce_marks"]) for _, row in r.links.iterrows() for e in (row["edt"] or []))


@pytest.fixture(scope="module")
def marked() -> tcplab.Result:
    return run()


@pytest.fixture(scope="module")
def unmarked() -> tcplab.Result:
    return run("bandwidth_manager.ce_threshold=null")


def test_marking_holds_the_rr_at_the_floor_of_the_bulk_windows(marked: tcplab.Result, unmarked: tcplab.Result):
    floor_ms = BULK * 2 * FRAME_BYTES * 8 / RATE_BPS * 1e3
    assert ce_marks(marked) > 0
    assert ce_marks(unmarked) == 0
    # With marking the RR waits about the floor: at least it (the windows cannot shrink
    # below 2 packets), and well under the unmarked wait.
    assert floor_ms * 0.8 <= rr_mean_ms(marked) <= floor_ms * 2
    assert rr_mean_ms(unmarked) > 5 * rr_mean_ms(marked)


def test_marking_costs_the_bulk_flows_no_goodput(marked: tcplab.Result, unmarked: tcplab.Result):
    def bulk_mbps(r: tcplab.Result) -> float:
        f = r.flows[r.flows["name"].str.startswith("bulk")]
        return float(f["bytes_received"].sum()) * 8 / 4.0 / 1e6

    # The pod's limit is the bottleneck either way: 100 Mbit/s of frames, 1448/1514 payload.
    ceiling = RATE_BPS / 1e6 * 1448 / FRAME_BYTES
    for r in (marked, unmarked):
        assert bulk_mbps(r) > 0.85 * ceiling


def test_without_ecn_negotiated_nothing_is_marked():
    # Linux's default tcp_ecn = 2 on the client: it never asks, so the packets are not-ECT
    # and bpf_skb_ecn_set_ce() leaves them alone.
    r = run("pods.client.sysctl.tcp_ecn=2")
    assert ce_marks(r) == 0
    assert (r.flows["ecn_flags"].fillna(0).astype(int) & 1 == 0).all()


def test_summary_and_report_show_ecn_only_where_it_was_negotiated(marked: tcplab.Result):
    from tcplab.views.report import _flow_rows

    flows = {f["name"]: f for f in marked.summary["flows"]}
    bulk = next(f for name, f in flows.items() if name.startswith("bulk"))
    # Both pods ask (tcp_ecn = 1): the bulk flows negotiated ECN and learnt of marks.
    assert bulk["ecn"]["delivered_ce"] > 0
    assert bulk["ecn"]["dctcp_alpha"] is None  # CUBIC
    rows = {r["name"]: r for r in _flow_rows(marked.summary, marked.config)}
    assert f"(ECN: {bulk['ecn']['delivered_ce']} CE)" in rows[bulk["name"]]["cc"]
    # A run without ECN keeps summary.json's flows as they were.
    plain = run("pods.client.sysctl.tcp_ecn=2")
    assert all("ecn" not in f for f in plain.summary["flows"])


def test_dctcp_incast_keeps_the_queue_at_the_step_where_cubic_fills_it_to_codels_target():
    # builtin:dctcp-incast: 4 x 10 Gbit/s into one 10 Gbit/s port marking above 100 us. DCTCP
    # cuts by alpha/2 once per window: the queue hovers near the 100 us step (a packet is
    # 1.2 us at 10 Gbit/s, so a few windows' growth adds microseconds), no drops, a full link.
    # CUBIC without ECN (tcp_ecn 2) grows until CoDel's 5 ms target drops.
    cubic = [f"flows.{i}.cc=cubic" for i in range(4)]
    dctcp = tcplab.run("builtin:dctcp-incast", overrides=["duration=1s"])
    reno_like = tcplab.run("builtin:dctcp-incast", overrides=["duration=1s", *cubic])
    port = dctcp.links[dctcp.links["name"].str.contains("tor->receiver")].iloc[0]
    assert int(port["drops"]) == 0
    assert int(port["xstats"]["ce_mark"]) > 0
    assert (dctcp.flows["rtt_p99_ms"] < 0.5).all()
    ceiling_mbps = 10_000 * 1448 / 1514
    assert dctcp.flows["goodput_bps"].sum() / 1e6 > 0.95 * ceiling_mbps
    assert (reno_like.flows["rtt_p99_ms"] > 5.0).all()

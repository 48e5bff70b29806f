"""recommend on a case whose answer follows from the model (the real engine): story 001's
lossy path, builtin:cubic-vs-bbr-lossy (5 Mbit/s, 100 ms RTT, random loss on the data
direction, a 1-BDP pfifo), CUBIC against BBR, robust over the loss rate (0.5 % and 1 %)
and two seeds.

Goodput. CUBIC's window is loss-bound: Mathis et al.'s rate MSS/RTT * sqrt(3/2)/sqrt(p) is
1448 B / 102.5 ms * 12.2 = 1.38 Mbit/s at 1 % (1.95 at 0.5 %), a fraction of the path;
BBRv1 does not respond to random loss (tcp_bbr.c: its model is the delivery rate and the
min RTT, and its long-term sampling only engages at a loss rate of 20 %, BBR_LT_LOSS_THRESH
50/256) and paces at the bottleneck's rate: about 4.78 Mbit/s of payload less the loss. So
"maximize goodput" must name BBR in the worst case too (1 %).

Latency. The base RTT is the propagation (2 x 50.05 ms) plus a full-size frame's
serialization at 5 Mbit/s (2.42 ms): ~102.5 ms; the BDP is ~42 packets, the queue one BDP.
CUBIC's loss-bound window (12 packets at 1 %, 17 at 0.5 %) is well under the BDP, so the
queue is empty in steady state and its RTT stays at the base plus about one packet. Its
start is not: HyStart (tcp_cubic.c: hystart_update()) only notices the queue a round after
it builds, so when no random loss ends slow start early the window overshoots to ~2 BDP and
fills the queue for ~1.5 s -- up to ~600 samples, which dominate a short run's p99 (so p99
is not a robust latency measure for CUBIC here) but stay under 10 % of the samples of a
120 s run (~12,000 at ~1.2 Mbit/s): CUBIC's p90 is the steady state, ~base + 1 packet.
BBR's PROBE_BW (tcp_bbr.c: bbr_pacing_gain[]) paces at 5/4 of its bandwidth estimate for one
min RTT every 8, queueing 0.25 BDP (~25.6 ms) that the following 3/4 phase drains: the queue
is spread uniformly over [0, 25.6 ms] for 2 of every 8 rounds, so at least 10 % of BBR's
samples see more than 0.6 x 25.6 = 15.4 ms of queue: its p90 is at least base + 15 ms (more
with any standing queue). A bound half way between the two, ~111 ms, is met by CUBIC in every
run and broken by BBR: "subject to p90 RTT < 111 ms" must flip the answer to CUBIC.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tcplab.cli import app

SCENARIO = "builtin:cubic-vs-bbr-lossy"
CC = "flows.0.cc"
LOSS = "links.1.loss"
DURATION = "120s"  # the startup's samples under 10 % of the run's (module doc)

RATE_BPS = 5e6
PROP_RTT_MS = 2 * (50.0 + 0.05)
FRAME_BYTES = 1514
MSS_BYTES = 1448
BASE_RTT_MS = PROP_RTT_MS + FRAME_BYTES * 8 / RATE_BPS * 1e3  # ~102.5 ms
PROBE_QUEUE_MS = 0.25 * BASE_RTT_MS  # PROBE_BW's 5/4 phase: 0.25 BDP of queue, in time
BBR_P90_MIN_MS = BASE_RTT_MS + 0.6 * PROBE_QUEUE_MS
CUBIC_P90_MS = BASE_RTT_MS + FRAME_BYTES * 8 / RATE_BPS * 1e3
BOUND_MS = round((BBR_P90_MIN_MS + CUBIC_P90_MS) / 2)


def mathis_bps(p: float) -> float:
    return MSS_BYTES * 8 / (BASE_RTT_MS / 1e3) * (1.5**0.5) / p**0.5


@pytest.mark.engine
def test_recommend_bbr_for_goodput_then_cubic_under_a_latency_bound(tmp_path, real_core):
    assert CUBIC_P90_MS < BOUND_MS < BBR_P90_MIN_MS
    out = tmp_path / "rec"
    # the scenario form: recommend runs the sweep (2 settings x 2 losses x 2 seeds) first
    r = CliRunner().invoke(
        app,
        [
            "recommend", SCENARIO, "--set", f"duration={DURATION}",
            "--choose", f"{CC}=cubic,bbr", "--over", f"{LOSS}=0.5%,1%", "--seeds", "2",
            "--maximize", "goodput", "--subject-to", f"p90 RTT < {BOUND_MS} ms", "-o", str(out), "--json",
        ],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    flipped = json.loads(r.output)
    assert flipped["recommendation"] == {CC: "cubic"}
    bbr = next(c for c in flipped["choices"] if c["setting"] == {CC: "bbr"})
    assert not bbr["feasible"] and f"p90 RTT < {BOUND_MS} ms" in bbr["why_not"]
    assert (out / "sweep" / "sweep.parquet").is_file() and (out / "recommend.json").is_file()

    # the same sweep, goodput only (the sweep directory form, nothing rerun): BBR
    r = CliRunner().invoke(
        app,
        ["recommend", str(out / "sweep"), "--choose", CC, "--over", LOSS, "--maximize", "goodput", "--json"],
    )
    assert r.exit_code == 0, r.output
    plain = json.loads(r.output)
    assert plain["recommendation"] == {CC: "bbr"}
    assert plain["runner_up"] == {CC: "cubic"} and plain["margin"] > 0
    # BBR's worst case is at the higher loss, and beyond CUBIC's loss-bound rate there
    assert plain["worst_condition"] == {LOSS: "1%"}
    assert plain["worst"] > 2 * mathis_bps(0.01)
    assert {e["run"] for e in plain["evidence"]}  # the runs behind it are named


# -- story 004: the ring, robust over NAPI's cost per packet -----------------------------------

#: The microburst-ring experiment's quick form: 4 x 2,500 connections, one 1 KB event each per
#: second within 5 ms, into 2 receive queues (tcplab.experiments.microburst_ring.QUICK).
CONNECTIONS = 4 * 2500
WINDOW_US = 5000
RX_QUEUES = 2


def drops_per_burst(rx_ring: int, rx_cost_us: float) -> float:
    """The experiment's model: messages - window / rx_cost - rx_ring x rx_queues, when positive."""
    return max(0.0, CONNECTIONS - WINDOW_US / rx_cost_us - rx_ring * RX_QUEUES)


@pytest.mark.slow
@pytest.mark.engine
def test_ring_recommendation_is_the_ring_that_holds_the_worst_burst(tmp_path, real_core):
    # 4096 descriptors hold a burst at 1 us per packet but not at 3 us; 8192 hold both: robust
    # over rx_cost, recommend must name 8192, and judged at 1 us only the two would tie.
    assert drops_per_burst(4096, 1.0) == 0 and drops_per_burst(4096, 3.0) > 0 and drops_per_burst(8192, 3.0) == 0
    from tcplab.experiments.microburst_ring import QUICK

    scenario = str(
        Path(__file__).resolve().parents[1] / "python/tcplab/experiments/microburst_ring/broadcast-nginx.yaml"
    )
    sets = [a for q in QUICK for a in ("--set", q)]
    args = [
        "recommend", scenario, *sets, "--choose", "hosts.nginx.nic.rx_ring=4096,8192",
        "--over", "hosts.nginx.nic.rx_cost=1us,3us", "--seeds", "1",
        "--objective", "keep TCPTimeouts / CurrEstab < 3 % while minimizing burst completion p99",
        "-o", str(tmp_path / "rec"), "--json",
    ]  # fmt: skip
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["recommendation"] == {"hosts.nginx.nic.rx_ring": "8192"}
    assert data["worst_condition"] == {"hosts.nginx.nic.rx_cost": "3us"}
    # no drop: the burst completes when the ring is drained, messages x rx_cost = 30 ms at 3 us
    assert data["worst"] == pytest.approx(CONNECTIONS * 3.0 / 1000, rel=0.05)
    # 4096 loses events at 3 us: a lost 1 KB event is the connection's only packet in flight,
    # repaired by the tail loss probe at 2 srtt + TCP_RTO_MIN (Linux v6.12
    # net/ipv4/tcp_output.c: tcp_schedule_loss_probe(), packets_out == 1): 200 ms or more
    assert data["margin"] > 200 - CONNECTIONS * 3.0 / 1000

"""Story 001 (cilium-bbr-demo): what the model derives, not the report's text.

The --quick plan (runs of 60 s: a few seconds) is run once per module; assertions come from
Linux's behaviour (the initial window after an idle restart, RFC 6928's 10 packets),
slow-start arithmetic, hls.js's rule against the Mathis bound, and netem's limit. Each
verdict rule is a pure function; a test shows each failing on a real run where the mechanism
says it must (no idle restart, no loss, an HD profile above the path's rate).
"""

from __future__ import annotations

import math

import pytest

from tcplab.experiments import load
from tcplab.experiments.base import SeedCount
from tcplab.experiments.cilium_bbr_demo import (
    CCS,
    NETEM_LIMIT_PKTS,
    NO_SSAI,
    SEEDS,
    SEGMENTS,
    bandwidth_verdict,
    bbr_hd_verdict,
    cubic_low_verdict,
    latency_verdict,
    mathis_bps,
    slow_start_rounds,
    weaker,
)
from tcplab.runner import run

pytestmark = pytest.mark.engine

EXP = load("cilium-bbr-demo")
MAIN = ("a-cubic", "a-bbr", NO_SSAI, "b-cubic", "b-bbr", "b-cubic-loss2", "b-bbr-loss2")
IW = 10  # RFC 6928, Linux TCP_INIT_CWND
RTT_MS = 100.0
MSS = 1448
HD_BPS, LOW_BPS = 3e6, 800e3


@pytest.fixture(scope="module")
def results():
    pytest.importorskip("tcplab._core")
    return {r.label: run(EXP.scenario_path(r.scenario), overrides=r.overrides_for(True)) for r in EXP.runs(quick=True)}


@pytest.fixture(scope="module")
def claims(results):
    return {c.claim.id: c for c in EXP.evaluate(results, quick=True)}


def _b(cc, **sets):
    """A 60 s case-B run of ``cc`` with ``links.1.loss`` etc. overridden (a real short run)."""
    return run(EXP.scenario_path("case-b-lossy.yaml"), overrides=[f"flows.0.cc={cc}", "duration=60s", *sets.values()])


def test_plan_quick_is_a_subset_and_full_has_the_sweep():
    quick = {r.label for r in EXP.runs(quick=True)}
    full = {r.label for r in EXP.runs(quick=False)}
    assert set(MAIN) <= quick < full
    assert all(f"b-{cc}-loss0.5" in full and f"b-{cc}-loss0.5" not in quick for cc in CCS)
    # the choices the verdicts hinge on run in both modes: both segment lengths, every seed
    for seg in SEGMENTS:
        assert {f"a-{cc}{seg}" for cc in CCS} <= quick
        for seed in SEEDS:
            assert {f"b-{cc}{seg}" + (f"-seed{seed}" if seed != 1 else "") for cc in CCS} <= quick
    EXP.plan(quick=False)  # every run's overrides validate


def test_claims_in_file_order(claims):
    assert list(claims) == list(EXP.judged_claims)
    assert EXP.out_of_scope_claims
    for c in claims.values():
        assert c.modes, c.claim.id


def test_case_b_queue_is_netems_default_limit():
    sc = EXP.plan(quick=True)
    b = next(s for r, s in sc if r.label == "b-cubic")
    assert "1000" in str(b.links[1].queue)


def test_case_a_cubic_restarts_from_the_initial_window_after_idle(results, claims):
    d = claims["a-latency-5x"].data
    # Linux restarts cwnd to the initial window after an idle period > RTO (tcp_cwnd_restart);
    # BBR (own cong_control) keeps its window.
    assert d["cubic_steady_cwnd_pkts"] == IW
    assert d["bbr_steady_cwnd_pkts"] > 100
    for what, at in d["by_segment"].items():
        # slow start from IW: a segment of N packets needs len(rounds) flights, each after the
        # previous one's ACKs (a conservative bound: the flights' ACK clocking overlaps a little)
        rounds = len(slow_start_rounds(at["segment_pkts"], IW))
        assert at["cubic_steady_ms"] >= RTT_MS * (rounds - 1), what
        assert at["bbr_steady_ms"] < at["cubic_steady_ms"] / 2, what
    # a shorter segment needs fewer rounds after the restart, so the ratio is smaller at 2 s
    four, two = (d["by_segment"][SEGMENTS[k][0]] for k in ("", "-seg2"))
    assert len(slow_start_rounds(two["segment_pkts"], IW)) < len(slow_start_rounds(four["segment_pkts"], IW))
    assert two["ratio"] < four["ratio"]
    # Without the restart CUBIC's latency falls to BBR's neighbourhood: the gap is the restart.
    assert d["cubic_no_ssai_steady_ms"] < d["cubic_steady_ms"] / 2
    # While the buffer fills (no idle gap) CUBIC is not slower than BBR by the same factor.
    assert d["cubic_filling_ms"] < 2 * d["bbr_filling_ms"]


def test_latency_rule_fails_without_the_idle_restart(claims):
    """A real run where the claim must fail: with tcp_slow_start_after_idle=0 CUBIC keeps its
    window across the idle gaps, as BBR does, so the ratio is about 1."""
    d = claims["a-latency-5x"].data
    assert latency_verdict(d["cubic_no_ssai_steady_ms"] / d["bbr_steady_ms"]) == "not reproduced"
    assert claims["a-latency-5x"].verdict == weaker(*(v["verdict"] for v in d["by_segment"].values()))


def test_netem_limit_arithmetic(claims):
    """netem's limit counts the packets in its delay line: a round trip's worth above 1000 is
    cut there. BBR (cwnd above the segment) sends a segment in one round; CUBIC after the
    restart in doubling rounds from IW, each well under the segment."""
    assert slow_start_rounds(1036, IW) == [10, 20, 40, 80, 160, 320, 406]
    assert slow_start_rounds(518, 2000) == [518]
    for at in claims["a-latency-5x"].data["by_segment"].values():
        assert at["largest_round_pkts"]["bbr"] == math.ceil(at["segment_pkts"])
        assert at["largest_round_pkts"]["cubic"] < NETEM_LIMIT_PKTS


def _time_on(res, profile):
    return next(iter(res.apps.values())).get("time_on_profile_s", profile, default=0.0)


def test_case_b_cubic_is_bound_by_mathis_and_bbr_is_not(claims, results):
    d = claims["b-bandwidth"].data
    # a Reno-friendly loss-based CC cannot average far above 1.22 MSS / (RTT sqrt(p))
    assert d["cubic_goodput_bps"] <= 1.5 * d["mathis_bps"]
    assert d["bbr_goodput_bps"] > 2 * d["mathis_bps"]
    assert d["bbr_goodput_bps"] <= d["ceiling_bps"] * 1.01
    assert math.isclose(mathis_bps(1448, 0.1, 0.01), 1.22 * 1448 * 8 / 0.01)
    # the profile each CC can sustain follows: HD's bitrate is above CUBIC's Mathis bound at 1 %
    # and below BBR's goodput, so CUBIC spends longer on low and BBR longer on HD
    assert mathis_bps(MSS, RTT_MS / 1e3, 0.01) < HD_BPS < d["bbr_goodput_bps"]
    assert _time_on(results["b-cubic"], "low") > _time_on(results["b-cubic"], "HD")
    assert _time_on(results["b-bbr"], "HD") > _time_on(results["b-cubic"], "HD")


def test_case_b_rules_fail_without_loss():
    """A real run where the CUBIC and bandwidth claims must fail: without loss the Mathis bound
    is gone, CUBIC fills the 5 Mbit/s path as BBR does, and sustains HD (3 Mbit/s)."""
    cubic, bbr = _b("cubic", loss="links.1.loss=0%"), _b("bbr", loss="links.1.loss=0%")
    c_bps = float(cubic.flows.iloc[0]["goodput_bps"])
    b_bps = float(bbr.flows.iloc[0]["goodput_bps"])
    assert bandwidth_verdict(b_bps / c_bps) == "not reproduced"
    total = sum(_time_on(cubic, p) or 0.0 for p in ("HD", "low"))
    share_low = (_time_on(cubic, "low") or 0.0) / total
    assert cubic_low_verdict(share_low, math.nan, SeedCount(0, 1)) == "not reproduced"


def test_bbr_hd_rule_fails_when_hd_is_above_the_path():
    """A real run where BBR cannot hold HD: an HD profile of 6 Mbit/s on the 5 Mbit/s path
    (payload ceiling about 4.8 Mbit/s) cannot be sustained by any CC."""
    bbr = _b("bbr", hd="flows.0.app.hls.profiles.0.bitrate=6Mbit")
    total = sum(_time_on(bbr, p) or 0.0 for p in ("HD", "low"))
    share_hd = (_time_on(bbr, "HD") or 0.0) / total
    stalls = SeedCount.of([float(next(iter(bbr.apps.values())).get("stalls", default=0) or 0) > 0])
    assert bbr_hd_verdict(share_hd, stalls) != "reproduced"


def test_rules_read_seed_counts_and_thresholds():
    assert cubic_low_verdict(0.9, 2.0, SeedCount(2, 4)) == "reproduced"  # stalls on half the seeds
    assert cubic_low_verdict(0.9, 2.0, SeedCount(1, 4)) == "partly"  # a rare stall is not 'barely'
    assert cubic_low_verdict(0.9, 1.1, SeedCount(0, 4)) == "reproduced"
    assert cubic_low_verdict(0.3, 1.1, SeedCount(4, 4)) == "not reproduced"
    assert bbr_hd_verdict(1.0, SeedCount(1, 4)) == "reproduced"
    assert bbr_hd_verdict(1.0, SeedCount(2, 4)) == "partly"
    assert latency_verdict(5.0) == "reproduced" and latency_verdict(2.0) == "partly"
    assert weaker("reproduced", "partly") == "partly"
    assert weaker("reproduced", "not reproduced", "partly") == "not reproduced"


def test_verdicts_follow_the_rules(claims):
    for c in claims.values():
        assert c.reason.startswith(c.verdict)
    low = claims["b-cubic-low"].data["by_segment"]
    assert claims["b-cubic-low"].verdict == weaker(*(v["cubic_verdict"] for v in low.values()))
    assert claims["b-bbr-hd"].verdict == weaker(*(v["bbr_verdict"] for v in low.values()))
    bw = claims["b-bandwidth"].data["by_segment"]
    assert claims["b-bandwidth"].verdict == weaker(*(bandwidth_verdict(v["ratio"]) for v in bw.values()))


def test_more_loss_thins_cubics_margin_on_low_but_not_bbrs_hd(claims):
    sweep = claims["b-cubic-low"].data["sweep"]
    main, lossy = sweep["1 % loss (main)"], sweep["2 % loss"]
    # the Mathis bound falls as 1/sqrt(p): CUBIC fetches low more slowly at 2 % than at 1 %
    assert lossy["cubic_low_margin"] < main["cubic_low_margin"]
    assert lossy["bbr_share_hd"] >= 0.9

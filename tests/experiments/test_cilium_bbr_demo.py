"""Story 001 (cilium-bbr-demo): what the model derives, not the report's text.

The --quick plan (seven runs of 60 s: ~3 s) is run
once per module; assertions come from Linux's behaviour (the initial window after an idle
restart, RFC 6928's 10 packets), slow-start arithmetic and the Mathis bound.
"""

from __future__ import annotations

import math

import pytest

from tcplab.experiments import load
from tcplab.experiments.cilium_bbr_demo import CCS, NO_SSAI, mathis_bps
from tcplab.runner import run

EXP = load("cilium-bbr-demo")
MAIN = ("a-cubic", "a-bbr", NO_SSAI, "b-cubic", "b-bbr", "b-cubic-loss2", "b-bbr-loss2")


@pytest.fixture(scope="module")
def results():
    out = {}
    for r in EXP.runs(quick=True):
        if r.label in MAIN:
            out[r.label] = run(EXP.scenario_path(r.scenario), overrides=r.overrides_for(True))
    return out


@pytest.fixture(scope="module")
def claims(results):
    return {c.claim.id: c for c in EXP.evaluate(results, quick=True)}


def test_plan_quick_is_a_subset_and_full_has_the_sweep():
    quick = {r.label for r in EXP.runs(quick=True)}
    full = {r.label for r in EXP.runs(quick=False)}
    assert set(MAIN) <= quick < full
    assert all(f"b-{cc}-loss0.5" in full and f"b-{cc}-loss0.5" not in quick for cc in CCS)
    EXP.plan(quick=False)  # every run's overrides validate


def test_claims_in_file_order(claims):
    assert list(claims) == list(EXP.claims)


def test_case_a_cubic_restarts_from_the_initial_window_after_idle(results, claims):
    d = claims["a-latency-5x"].data
    # Linux restarts cwnd to the initial window (10, RFC 6928) after an idle period > RTO
    # (tcp_cwnd_restart); BBR (own cong_control) keeps its window.
    assert d["cubic_steady_cwnd_pkts"] == 10
    assert d["bbr_steady_cwnd_pkts"] > 100
    # Slow start from 10 packets: a segment of N packets needs ceil(log2(N/10 + 1)) rounds of
    # one 100 ms RTT each (plus the request's RTT, not counted here).
    seg = next(iter(results["a-cubic"].apps.values())).table("segments")
    pkts = float(seg["bytes"].median()) / 1448
    rounds = math.ceil(math.log2(pkts / 10 + 1))
    assert d["cubic_steady_ms"] >= 100 * rounds
    assert d["bbr_steady_ms"] < d["cubic_steady_ms"] / 2
    # Without the restart CUBIC's latency falls to BBR's neighbourhood: the gap is the restart.
    assert d["cubic_no_ssai_steady_ms"] < d["cubic_steady_ms"] / 2
    # While the buffer fills (no idle gap) CUBIC is not slower than BBR by the same factor.
    assert d["cubic_filling_ms"] < 2 * d["bbr_filling_ms"]


def _time_on(res, profile):
    return next(iter(res.apps.values())).get("time_on_profile_s", profile, default=0.0)


def test_case_b_cubic_falls_to_low_and_bbr_holds_hd(claims, results):
    low = claims["b-cubic-low"].data
    hd = claims["b-bbr-hd"].data
    assert low["share_low"] > 0.5
    assert _time_on(results["b-bbr"], "HD") > _time_on(results["b-cubic"], "HD")
    assert hd["share_hd"] >= 0.9 and hd["stalls"] == 0


def test_case_b_cubic_is_bound_by_mathis_and_bbr_is_not(claims, results):
    d = claims["b-bandwidth"].data
    # a Reno-friendly loss-based CC cannot average far above 1.22 MSS / (RTT sqrt(p))
    assert d["cubic_goodput_bps"] <= 1.5 * d["mathis_bps"]
    assert d["bbr_goodput_bps"] > 2 * d["mathis_bps"]
    assert d["bbr_goodput_bps"] <= d["ceiling_bps"] * 1.01
    assert math.isclose(mathis_bps(1448, 0.1, 0.01), 1.22 * 1448 * 8 / 0.01)


def test_verdicts_follow_the_rules(claims):
    for c in claims.values():
        assert c.verdict in ("reproduced", "partly", "not reproduced")
        assert c.reason.startswith(c.verdict)
    r = claims["a-latency-5x"].data["ratio"]
    expected = "reproduced" if 3.75 <= r <= 6.25 else "partly" if r >= 1.5 else "not reproduced"
    assert claims["a-latency-5x"].verdict == expected


def test_more_loss_thins_cubics_margin_on_low_but_not_bbrs_hd(claims):
    sweep = claims["b-cubic-low"].data["sweep"]
    main, lossy = sweep["1 % loss (main)"], sweep["2 % loss"]
    # the Mathis bound falls as 1/sqrt(p): CUBIC fetches low more slowly at 2 % than at 1 %
    assert lossy["cubic_low_margin"] < main["cubic_low_margin"]
    assert lossy["bbr_share_hd"] >= 0.9


def test_cubic_low_verdict_follows_its_rule(claims):
    c = claims["b-cubic-low"]
    falls = c.data["share_low"] > 0.5
    barely = c.data["stalls"] > 0 or c.data["low_margin"] < 1.25
    assert c.verdict == ("reproduced" if falls and barely else "partly" if falls else "not reproduced")

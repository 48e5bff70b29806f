"""cluster-bbr-timeouts (story 000): the mechanisms the report explains, and rules that can fail.

Fast tests run reduced scenarios of the experiment's own files and assert what the model
derives (whose socket ``ss`` on marin shows, what stops delivery during a stall, what BBR does
with ssthresh and pacing); the rule tests show each verdict rule giving ``reproduced`` under
one condition and not under another. The whole experiment in quick mode is ``slow``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tcplab
from tcplab.experiments import load
from tcplab.experiments.base import SeedCount
from tcplab.experiments.cluster_bbr_timeouts import LOSS_START_S, STUCK_BPS, analysis, plan, rules
from tcplab.experiments.cluster_bbr_timeouts.readings import mechanism as _mechanism
from tcplab.experiments.cluster_bbr_timeouts.sweep import STUCK_POINTS

EXP = load("cluster-bbr-timeouts")
DIR = EXP.directory
BURSTS_FROM_0 = plan.STATIONARY["bursts"]
RANDOM_FROM_0 = plan.STATIONARY["random"]


def _nfs(*sets: str):
    return tcplab.run(tcplab.load_scenario(DIR / "plex-nfs.yaml", list(sets)))


# -- the plan ----------------------------------------------------------------------------------
def test_plans_validate_and_quick_is_a_subset():
    quick = [r.label for r, _ in EXP.plan(True)]
    full = [r.label for r, _ in EXP.plan(False)]
    assert set(quick) < set(full)
    for mode, labels in ((True, quick), (False, full)):
        for loss in plan.LOSSES:
            for s in plan.seeds(mode):
                for cc in ("cubic", "bbr"):
                    assert plan.nfs_label(cc, loss, s) in labels and plan.rw_label(cc, loss, s) in labels
                assert plan.check_label(loss, s) in labels
    # every condition of the search runs with both cc in full mode, and in pairs in quick mode
    assert {p.label for p in STUCK_POINTS} <= set(full)
    for p in STUCK_POINTS:
        if p.label in quick:
            twin = p.label[: -len("-cubic")] if p.cc == "cubic" else f"{p.label}-cubic"
            assert twin in quick


def test_the_variable_is_marins_cc_and_nezuko_sends_the_data():
    """The Talos sysctl is marin's: the NFS client's sockets run it; nezuko (the NAS, the data's
    sender) keeps Linux's default CUBIC whatever marin runs."""
    for r, sc in EXP.plan(True):
        if r.scenario != "plex-nfs.yaml":
            continue
        marin_cc = next(o.split("=", 1)[1] for o in r.overrides_for(True) if o.startswith(plan.MARIN_CC))
        for f in sc.to_core()["flows"]:
            assert f["data_side"] == "server" and f["cc"] == "cubic", r.label
            assert f.get("receiver_cc", f["cc"]) == marin_cc, r.label


def test_every_loss_starts_after_the_buffer_can_fill_and_the_story_loss_is_first():
    assert list(plan.LOSSES) == list(rules.ORDER)
    for r, sc in EXP.plan(True):
        if r.scenario == "plex-nfs.yaml" and r.label.startswith("nfs-") and "-measured-" not in r.label:
            link = sc.to_core()["links"][2]
            assert link["loss_window"]["start_ns"] == LOSS_START_S * 10**9, r.label


def test_every_claim_is_judged_or_out_of_scope_with_a_reason():
    judged = list(EXP.judged_claims)
    assert judged and all(c.out_of_scope.strip() for c in EXP.out_of_scope_claims)
    assert {"cwnd-collapse", "write-timeouts", "short-window", "fq-required", "stuck-persists"} <= set(judged)


# -- mechanisms ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def random_loss_runs():
    # 40 s of independent 4.76 % loss (both ways) from the first packet, each cc on marin
    return {cc: _nfs(f"{plan.MARIN_CC}={cc}", RANDOM_FROM_0, "duration=40s") for cc in ("cubic", "bbr")}


def test_ss_on_marin_shows_the_clients_own_sockets(random_loss_runs):
    """The receiver_* columns are marin's sockets: they retransmit their own READ calls, and
    with CUBIC repeated losses take ssthresh to its floor of 2 (tcp_cubic.c:
    cubictcp_recalc_ssthresh(): max(cwnd * 0.7, 2))."""
    r = random_loss_runs["cubic"]
    marin = analysis.receiver_collapse(r)
    assert marin["retrans_segs"] > 0
    assert marin["ssthresh_min"] == 2 and marin["max_at_once"] >= 2
    # ss on marin prints exactly those values for marin's sockets
    from tcplab.results.ss import sockets_at

    t_ns = int(r.timeseries["t_ns"].iloc[-1])
    socks = sockets_at(r.config, r.flows, r.timeseries, at_ns=t_ns)["marin"]
    last = r.timeseries[r.timeseries["t_ns"] == t_ns]
    assert sorted(s.info["cwnd"] for s in socks) == sorted(int(x) for x in last["receiver_cwnd"])
    assert all(s.cc == "cubic" for s in socks)


def test_bbr_on_marin_never_takes_ssthresh_to_2(random_loss_runs):
    """tcp_bbr.c: bbr_ssthresh() returns snd_ssthresh unchanged on loss; only the end of STARTUP
    sets it (bbr_check_drain()): BBR's sockets never show ssthresh:2 however much they lose."""
    ts = random_loss_runs["bbr"].timeseries
    assert int(ts["receiver_retrans_segs"].max()) > 0
    assert int(ts[ts["t_s"] > 1.0]["receiver_ssthresh"].min()) > 2


def test_a_stall_under_the_bursts_is_the_data_senders_rto_backoff():
    """Under packet-counted bursts the data's sender (nezuko) spends most of the stall in RTO
    recovery with its timer backed off: a window of 2 packets alone would still deliver
    2 x 1448 B / 0.4 ms = 58 Mbit/s per connection, more than the stream's 20 Mbit/s share."""
    r = _nfs(f"{plan.MARIN_CC}=cubic", plan.LOSSES["bursts"], "duration=150s")
    st = analysis.first_stall(r, LOSS_START_S)
    assert st["stalled"]
    assert st["sender_loss_fraction"] >= 0.5
    assert st["sender_backoff_max"] >= 3  # an RTO of 1.6 s or more: delivery stops for seconds


def test_a_stall_under_independent_loss_is_a_shortfall_not_a_backoff():
    """Independent 4.76 % loss (both ways) rarely takes a retransmission twice in a row
    (0.0476^2 = 0.2 %), so the timer seldom backs off far; the stream stalls when its
    connections, cut by losses and 200 ms RTOs, deliver less than the player plays."""
    r = _nfs(f"{plan.MARIN_CC}=cubic", plan.LOSSES["random"], "duration=10min")
    st = analysis.first_stall(r, LOSS_START_S)
    rate = analysis.delivered_rate(r, LOSS_START_S)
    if st["stalled"]:
        assert st["sender_backoff_max"] <= 3 and st["sender_loss_fraction"] < 0.3
        assert rate < 80e6
    else:
        assert rate >= 0.95 * 80e6


def test_marins_cc_leaves_the_stream_to_nezuko():
    """marin's cc governs only its READ calls (a few hundred bytes, four in flight): the
    stream, sent by nezuko, fares alike with either cc on marin."""
    p = {
        cc: analysis.player(_nfs(f"{plan.MARIN_CC}={cc}", plan.LOSSES["bursts"], "duration=150s"))
        for cc in ("cubic", "bbr")
    }
    assert p["cubic"]["stalls"] == p["bbr"]["stalls"]
    assert abs(p["cubic"]["played_s"] - p["bbr"]["played_s"]) <= 0.1 * max(p["cubic"]["played_s"], 1.0)


def test_the_fq_points_run_the_qdisc_they_name_on_the_senders_device():
    """The "fq required" comparison is fq against fq_codel on sakura's device; a pod in the
    Bandwidth Manager would put fq there whatever default_qdisc says (both points fq)."""
    for qdisc, point in plan.FQ.items():
        config = tcplab.load_scenario(DIR / "bbr-stuck-search.yaml", list(point.overrides)).to_core()
        names = [n["name"] for n in config["nodes"]]
        (out,) = [link for link in config["links"] if link["name"] == "sakura->switch"]
        assert out["queue"]["kind"] == qdisc and not out.get("edt")
        assert names[config["flows"][0]["src"]] == "sakura" and config["flows"][0]["cc"] == "bbr"


def test_bbr_without_fq_is_paced_by_tcp_itself():
    """tcp_output.c: tcp_needs_internal_pacing(): without fq, BBR's pacing falls back to TCP's
    own hrtimer, so BBR through a 100 Mbit/s port with fq_codel keeps the rate and loses nothing."""
    d = {}
    for q in ("fq", "fq_codel"):
        sets = [o for o in plan.FQ[q].overrides if not o.startswith("duration")] + ["duration=5s"]
        d[q] = analysis.clean_path(tcplab.run(tcplab.load_scenario(DIR / "bbr-stuck-search.yaml", sets)))
    assert d["fq_codel"]["retrans_segs"] == 0
    assert d["fq_codel"]["goodput_bps"] >= 0.9 * d["fq"]["goodput_bps"]


def test_bbr_lt_columns_follow_bbr_bw():
    # 30 % random loss makes the long-term sampler lock in (>= 20 % lost in two intervals of
    # similar rate); while lt_use_bw is set, bbr_bw() is lt_bw (tcp_bbr.c: bbr_bw()).
    r = tcplab.run(tcplab.load_scenario(DIR / "bbr-stuck-search.yaml", ["links.1.loss=30%", "duration=10s"]))
    ts = r.timeseries
    on = ts["bbr_lt_use_bw"].to_numpy() > 0
    assert on.any()
    assert np.array_equal(ts["bbr_bw_bps"].to_numpy()[on], ts["bbr_lt_bw_bps"].to_numpy()[on])
    assert (ts["bbr_lt_bw_bps"].to_numpy()[on] > 0).all()


def test_mechanism_rule():
    base = {"cc": "bbr", "lt_use_fraction": 0.0, "loss_state_fraction": 0.0, "bbr_bw_median_bps": 50e6}
    assert _mechanism({**base, "min_bps": 2 * STUCK_BPS}) == "not stuck"
    assert _mechanism({**base, "min_bps": 1e5, "loss_state_fraction": 0.5}) == "RTO backoff"
    assert _mechanism({**base, "min_bps": 1e5}) == "loss recovery"
    assert _mechanism({**base, "min_bps": 1e5, "bbr_bw_median_bps": 1.5e5}) == "bw estimate"
    assert _mechanism({**base, "min_bps": 1e5, "bbr_bw_median_bps": 1.5e5, "lt_use_fraction": 1.0}) == "lt_bw"


# -- the rules can fail ------------------------------------------------------------------------
def _sc(k: int, n: int = 3) -> SeedCount:
    return SeedCount(k, n)


def test_ladder_gives_each_verdict():
    none, all3 = _sc(0), _sc(3)
    assert rules.ladder({"measured": all3, "random": none, "bursts": none}, "x")[0] == "reproduced"
    assert rules.ladder({"measured": none, "random": none, "bursts": _sc(2)}, "x")[0] == "partly"
    # the story's measured loss and no hypothesis holding: fails
    assert rules.ladder({"measured": _sc(1), "random": _sc(1), "bursts": none}, "x")[0] == "not reproduced"


def test_ladder_fails_under_the_storys_measured_loss():
    """A real condition: the story's measured loss (0.001 %), 3 minutes: no collapse, no stall."""
    r = _nfs(f"{plan.MARIN_CC}=cubic", "duration=3min")
    counts = {"measured": SeedCount.of([analysis.receiver_collapse(r)["max_at_once"] >= 2])}
    assert rules.ladder(counts, "collapse")[0] == "not reproduced"


def test_stuck_rule_needs_bbr_alone_to_stall():
    assert rules.stuck({"policer": {"bbr": 1e5, "cubic": 9e6}}, STUCK_BPS)[0] == "reproduced"
    # both held as low: the condition, not BBR
    assert rules.stuck({"30 % loss": {"bbr": 2e4, "cubic": 3e4}}, STUCK_BPS)[0] == "not reproduced"
    assert rules.stuck({"clean": {"bbr": 9e7, "cubic": 9e7}}, STUCK_BPS)[0] == "not reproduced"


def test_recovery_rule():
    limit = 100e6
    assert rules.stuck_persists(1e6, 9e7, limit)[0] == "reproduced"
    assert rules.stuck_persists(1e6, 1e6, limit)[0] == "partly"
    assert rules.stuck_persists(5e7, 9e7, limit)[0] == "not reproduced"


def test_fix_rule():
    fails = {"measured": (True, False), "random": (False, False), "bursts": (True, True)}
    assert rules.fix(fails, fails)[0] == "reproduced"
    alike = {"measured": (False, False), "random": (False, False), "bursts": (True, True)}
    assert rules.fix(alike, alike)[0] == "not reproduced"
    assert rules.fix({**alike, "bursts": (True, False)}, alike)[0] == "partly"


def test_short_window_rule_needs_a_build_up_for_reproduced():
    c = {"measured": _sc(3), "random": _sc(0), "bursts": _sc(0)}
    assert rules.short_window(c, {"measured": (0.0, 0.5), "random": (0, 0), "bursts": (0, 0)})[0] == "reproduced"
    # the same per-minute rate before and after: luck of a short window, no build-up
    assert rules.short_window(c, {"measured": (0.5, 0.5), "random": (0, 0), "bursts": (0, 0)})[0] == "partly"
    # failures that show in the first 2 minutes: a 2-minute check would have seen them
    first = {"measured": _sc(0), "random": _sc(0), "bursts": _sc(0)}
    assert rules.short_window(first, {"measured": (0, 0), "random": (0, 0), "bursts": (0.6, 0.3)})[0] == (
        "not reproduced"
    )


def test_buffers_and_masking_rules():
    base = {"collapse": _sc(3), "stall": _sc(3)}
    assert rules.buffers16(base, {"collapse": _sc(1), "stall": _sc(2)})[0] == "partly"
    assert rules.buffers16(base, {"collapse": _sc(3), "stall": _sc(1)})[0] == "not reproduced"
    assert rules.buffers16(base, {"collapse": _sc(0), "stall": _sc(3)})[0] == "not reproduced"
    masked = {"measured": (False, False), "random": (True, False), "bursts": (True, False)}
    same = {"measured": (False, False), "random": (False, False), "bursts": (True, True)}
    assert rules.masking(masked, same, 2.0)[0] == "reproduced"
    assert rules.masking(masked, same, 1.0)[0] == "partly"
    assert rules.masking({k: (False, False) for k in masked}, same, 1.0)[0] == "not reproduced"


def test_clean_path_rules():
    assert rules.spurious({"retrans_segs": 5}, {"retrans_segs": 0})[0] == "reproduced"
    assert rules.spurious({"retrans_segs": 0}, {"retrans_segs": 600})[0] == "not reproduced"
    assert rules.estimate(300e6, 100e6)[0] == "reproduced"
    assert rules.estimate(110e6, 100e6)[0] == "not reproduced"
    assert rules.convergence(0.01, 0.05, 0.01)[0] == "reproduced"
    assert rules.convergence(0.02, 0.02, 0.01)[0] == "not reproduced"
    good = {"goodput_bps": 95e6, "retrans_segs": 0}
    assert rules.fq_required(good, {"goodput_bps": 50e6, "retrans_segs": 0})[0] == "reproduced"
    assert rules.fq_required(good, good)[0] == "not reproduced"
    assert rules.sufficient(_sc(6, 6))[0] == "reproduced"
    assert rules.sufficient(_sc(1, 6))[0] == "not reproduced"


@pytest.mark.slow
def test_experiment_quick(tmp_path: Path):
    """The quick form end to end: every judged claim in file order with its modes sentence,
    the figures, the out-of-scope list, diagnose agreeing on the runs' own texts."""
    import json

    from tcplab.experiments.reproduce import reproduce

    (o,) = reproduce(["cluster-bbr-timeouts"], tmp_path / "out", quick=True)
    assert o.error is None, o.error
    assert [c.claim.id for c in o.claims] == list(EXP.judged_claims)
    assert all(c.modes for c in o.claims)
    record = json.loads((tmp_path / "out" / "cluster-bbr-timeouts" / "claims.json").read_text())
    assert [c["id"] for c in record["out_of_scope"]] == [c.id for c in EXP.out_of_scope_claims]
    for name in ("collapse.png", "stuck-search.png", "bbr-trace.png", "writes.png"):
        assert (tmp_path / "out" / "cluster-bbr-timeouts" / "plots" / name).stat().st_size > 0
    assert all(x.agree for x in o.crosschecks), [(x.check.run, x.found) for x in o.crosschecks]

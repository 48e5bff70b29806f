"""The microburst-ring experiment (story 004): what the model derives, not the report's text.

The fast tests run the experiment's own scenario file at a small scale (4 x 1,000
connections, the burst in 2 ms: 2 M packets/s, as in the experiment, into one queue) and
check it against the model's arithmetic: a burst arriving faster than NAPI drains loses
``messages - window / rx_cost - descriptors``; a ring holding that excess loses nothing; a
drain cost below ``window / (messages - descriptors)`` loses nothing either; a lost
one-segment message is never a fast retransmit unless the connection's next event comes
before its tail loss probe; an RTO needs a loss while a probe is still outstanding; two
nodes at the same per-node write rate stay within the drain; an allowance at the port's
rate never counts. Each verdict rule is then applied to the numbers of a run where the
claim's condition is absent, and must not say "reproduced". The slow test runs the whole
``--quick`` plan through ``tcplab reproduce``'s machinery and checks the mechanisms the
report explains.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tcplab.experiments import load
from tcplab.experiments.base import SeedCount
from tcplab.experiments.microburst_ring import (
    MESSAGES_PER_NODE_NS,
    SCENARIO,
    STORY_INTERVAL,
    drain_threshold_ns,
    factor,
    fast_share,
    figures,
    issue_shown,
    node_overrides,
    run_metrics,
    verdict_allowance,
    verdict_below_capacity,
    verdict_cubic,
    verdict_fast_retrans,
    verdict_improvement,
    verdict_little_change,
    verdict_retrans_and_timeouts,
    verdict_ring_fix,
    verdict_threshold,
    verdict_two_node,
    verdict_worse,
)
from tcplab.units import parse_time

SMALL = (
    "duration=4s",  # bursts at 2 s and 3 s
    "flows.0.app.broadcast.connections=1000",
    "flows.0.app.broadcast.window=2ms",
    "hosts.nginx.nic.rx_queues=1",
    "sample_interval=1ms",
)
#: Linux's TCP_RTO_MIN: a tail loss probe with one segment out waits 2 x SRTT + this.
TCP_RTO_MIN_NS = 200_000_000


def _run(*extra: str):
    from tcplab.runner import run

    e = load("microburst-ring")
    return run(e.scenario_path(SCENARIO), overrides=[*SMALL, *extra])


@pytest.fixture(scope="module")
def small_runs():
    pytest.importorskip("tcplab._core")
    per_node = 1000 * MESSAGES_PER_NODE_NS // 1000  # the small runs' 2 ms for 1,000 per node
    assert per_node == 2000  # (the fixture's window is the experiment's per-node rate)
    return {
        "ring-1024": _run("hosts.nginx.nic.rx_ring=1024"),
        "ring-8192": _run("hosts.nginx.nic.rx_ring=8192"),
        # the story's load: an event every 100 ms, bursts at 2.0 .. 2.5 s
        "story-load": _run(f"flows.0.app.broadcast.interval={STORY_INTERVAL}", "duration=2.6s"),
        # the same 4,000 connections from two nodes at the same per-node write rate
        "nodes-2": _run(*node_overrides(2, 4000)),
    }


def test_a_burst_faster_than_napi_loses_its_excess_over_the_ring(small_runs):
    res = small_runs["ring-1024"]
    m = run_metrics(res)
    assert m["burst_pps"] > m["drain_pps"]  # the premise: 2 M packets/s against 1 M
    assert m["avg_in_bps"] < 4e9 / 10  # far below the link (the story: < 4 of 25 Gbit/s)
    expected = m["packets_per_burst"] - m["window_ms"] * 1e6 / m["rx_cost_ns"] - m["ring_total"]
    got = figures.burst_trace(res)["drops"]
    # arrivals are random in the window, not evenly spread: allow 10 %
    assert expected > 0
    assert abs(got - expected) <= 0.1 * expected, (got, expected)
    # the drops are the ring's and only the ring's: nginx's ethtool rx_drops, no allowance
    assert m["allowance_exceeded"] == 0 and m["ring_drops"] > 0
    # and they happen because the model's cost is above the drain threshold
    assert m["rx_cost_ns"] > drain_threshold_ns(m["packets_per_burst"], m["window_ms"] * 1e6, m["ring_total"])


def test_the_larger_ring_holds_the_burst(small_runs):
    a, b = run_metrics(small_runs["ring-1024"]), run_metrics(small_runs["ring-8192"])
    # the excess (messages - window x drain) fits 8192 descriptors: nothing is lost
    assert a["expected_excess"] < b["ring_total"]
    assert drain_threshold_ns(b["packets_per_burst"], b["window_ms"] * 1e6, b["ring_total"]) == float("inf")
    assert b["ring_drops"] == 0 and b["retrans_segs"] == 0 and b["tcp_timeouts"] == 0
    assert a["retrans_segs"] >= 100 and a["tcp_timeouts"] > 0


def test_a_lost_one_segment_event_is_never_a_fast_retransmit(small_runs):
    m = run_metrics(small_runs["ring-1024"])
    assert m["fast_retrans"] == 0
    # every retransmission is a tail loss probe or an RTO, and each repairs one drop
    assert m["loss_probes"] + m["tcp_timeouts"] == m["retrans_segs"] == m["ring_drops"]


def test_at_the_story_load_the_next_event_comes_before_the_probe(small_runs):
    m = run_metrics(small_runs["story-load"])
    srtt_bound_ns = 1_000_000  # a few 10 us hops: 2 x SRTT is far under a millisecond
    assert parse_time(STORY_INTERVAL) < TCP_RTO_MIN_NS + srtt_bound_ns  # the premise
    assert m["ring_drops"] > 0
    # a lost event's connection sends its next event before the probe: nginx's SACK of it
    # lets RACK mark the lost one, a fast retransmit; only the losses of the last burst (no
    # next event within the run) and second losses of a connection are left to probes
    assert m["fast_retrans"] > m["loss_probes"] > 0


def test_two_nodes_at_the_same_per_node_rate_stay_within_the_drain(small_runs):
    two, four = run_metrics(small_runs["nodes-2"]), run_metrics(small_runs["ring-1024"])
    assert two["curr_estab"] == four["curr_estab"]  # the same users
    assert two["burst_pps"] == pytest.approx(four["burst_pps"] / 2)
    assert two["burst_pps"] <= two["drain_pps"]
    # nothing beyond the drain to hold: random bunching stays far within the descriptors
    assert two["ring_drops"] == 0 and two["retrans_segs"] == 0
    assert not issue_shown(two) and issue_shown(four)


def test_a_run_with_no_burst_complete_has_no_completion_percentile(small_runs, monkeypatch):
    # At the story's load a run can end with every burst missing a message (its
    # completion_ms has count 0 and no percentiles): the figures say NaN, not a crash (the
    # full replay's story-load-1024 after RACK's reordering timer stopped being re-armed).
    app = small_runs["ring-1024"].apps["events"]
    none = {"count": 0, **dict.fromkeys(("p50", "p90", "p99", "p99.9", "max", "mean"))}
    monkeypatch.setitem(app.summary, "completion_ms", none)
    m = run_metrics(small_runs["ring-1024"])
    assert m["completion_p99_ms"] != m["completion_p99_ms"]  # NaN


def test_each_rule_fails_where_its_condition_is_absent(small_runs):
    a = run_metrics(small_runs["ring-1024"])  # drops, RTOs, no fast retransmit
    b = run_metrics(small_runs["ring-8192"])  # no drop at all
    s = run_metrics(small_runs["story-load"])
    two = run_metrics(small_runs["nodes-2"])
    no = "reproduced"
    # no drops: nothing below capacity, no correlation, no alert, nothing CUBIC failed at
    assert verdict_below_capacity(b["load_bps"], b["link_bps"], b["ring_drops"]) != no
    # drops at a load above the story's 4 Gbit/s are not the claim either
    assert verdict_below_capacity(5e9, a["link_bps"], a["ring_drops"]) != no
    assert verdict_retrans_and_timeouts(b, b) != no
    assert verdict_threshold({1024: b["timeouts_per_estab_s"], 8192: b["timeouts_per_estab_s"]}) != no
    assert verdict_cubic(a, b) != no  # a "CUBIC" run as clean as ring 8192 helped
    # the story's counter: no allowance count and no drop
    assert verdict_allowance(b["allowance_exceeded"], b["ring_drops"]) == "not reproduced"
    assert verdict_allowance(a["allowance_exceeded"], a["ring_drops"]) != no  # drops in the ring only
    # one event a second: no fast retransmit in any condition
    assert verdict_fast_retrans(fast_share(a), [fast_share(b)]) == "not reproduced"
    assert fast_share(s) > fast_share(a)
    # the ring against itself: no factor; a change that removes every drop is not "little"
    assert verdict_ring_fix([factor(a["retrans_segs"], a["retrans_segs"])]) == "not reproduced"
    assert verdict_improvement(a, a) == "not reproduced"
    assert verdict_little_change(a, b) == "not reproduced"
    assert verdict_little_change(b, b) == "not reproduced"  # nothing to change
    # "worse": the same run is not worse; the ring-1024 run is worse than the clean 8192 one
    assert verdict_worse(a, a) == "not reproduced"
    assert verdict_worse(b, a) == no
    # two nodes that show the four's issue; four nodes without it
    assert verdict_two_node(issue_shown(a), SeedCount.of([issue_shown(a)] * 3)) != no
    assert verdict_two_node(issue_shown(two), SeedCount.of([issue_shown(two)] * 3)) != no


def test_the_allowance_counts_only_a_burst_above_its_rate():
    pytest.importorskip("tcplab._core")
    allowance = "hosts.nginx.nic.allowance={rate: 25Gbit, burst: 64KB, queue: 1024}"
    # the experiment's port (25 Gbit/s) never delivers faster than a 25 Gbit/s bucket refills
    at_port = run_metrics(_run(allowance, "duration=2.5s"))
    assert at_port["allowance_exceeded"] == 0 and at_port["ring_drops"] > 0
    # a 100 Gbit/s port and the burst in 0.5 ms: 4,000 frames at more than 25 Gbit/s
    fast = (*(f"links.{i}.rate=100Gbit" for i in range(5)), "flows.0.app.broadcast.window=500us")
    m = run_metrics(_run(allowance, "duration=2.5s", *fast))
    assert m["burst_pps"] * m["frame_bytes"] * 8 > 25e9  # the premise
    assert m["allowance_exceeded"] > 0
    assert verdict_allowance(m["allowance_exceeded"], m["ring_drops"]) != "not reproduced"


def test_rtos_need_a_loss_while_a_probe_is_outstanding(small_runs):
    res = small_runs["ring-1024"]
    bursts = res.apps["events"].table("bursts")
    assert int(bursts["tcp_timeouts"].iloc[0]) == 0  # the first burst: probes repair all
    conns, with_earlier = figures.rto_connections(res)
    assert conns > 0 and with_earlier == conns
    # about p^2 x connections in the second burst (p: the share of a burst lost)
    m = run_metrics(res)
    p, n = m["loss_per_burst"], m["curr_estab"]
    assert 0.5 * p * p * n <= bursts["tcp_timeouts"].iloc[1] <= 1.5 * p * p * n


def test_diagnose_names_the_ring_on_its_own_texts(small_runs, tmp_path: Path):
    from tcplab.experiments.base import Crosscheck
    from tcplab.experiments.reproduce import crosscheck_run

    for label in ("ring-1024", "ring-8192"):
        small_runs[label].write(tmp_path / label, plots=False)
    e = load("microburst-ring")
    for check in e.crosschecks(quick=True):
        got = crosscheck_run(tmp_path / check.run, check)
        assert got.agree, (check, got.found)
    assert crosscheck_run(tmp_path / "ring-1024", Crosscheck("ring-1024", expect=("nic-rx-drops",))).agree


def test_plans_and_quick_keeps_the_mechanism():
    from tcplab.loader import load_scenario

    e = load("microburst-ring")
    quick = {r.label: r for r in e.runs(True)}
    full = {r.label: r for r in e.runs(False)}
    assert {"ring-1024", "ring-8192", "cubic", "story-load-1024", "nodes-2", "allowance", "nodelay"} <= set(quick)
    assert set(quick) < set(full)  # the sweeps (cost, nodes, load) are full mode only
    assert e.out_of_scope_claims == [] and len(e.judged_claims) == len(e.claims)
    # quick keeps the burst's rate (packets per second) and the descriptors per message
    # (validating every full run costs about a second each: the slow test plans them all)

    def spec(r, mode):
        cfg = load_scenario(e.scenario_path(r.scenario), r.overrides_for(mode)).to_core()
        nic = next(n for n in cfg["nodes"] if n["name"] == "nginx")["nic"]
        return cfg["apps"][0]["spec"], nic

    def ratios(r, mode):
        app, nic = spec(r, mode)
        msgs = app["senders"] * app["connections_per_sender"]
        return msgs / app["window_ns"], nic["rx_ring"] * nic["rx_queues"] / msgs

    q1024 = spec(quick["ring-1024"], True)[0]
    assert ratios(quick["ring-1024"], True) == pytest.approx(ratios(full["ring-1024"], False))
    # two nodes: the same users, each node at the main runs' per-node write rate
    app, _ = spec(quick["nodes-2"], True)
    assert app["senders"] == 2 and app["senders"] * app["connections_per_sender"] == 4 * q1024["connections_per_sender"]
    assert app["window_ns"] / app["connections_per_sender"] == MESSAGES_PER_NODE_NS
    assert q1024["window_ns"] / q1024["connections_per_sender"] == MESSAGES_PER_NODE_NS
    # the story's load: the interval is the story's in both modes, below the probe's timeout
    app, _ = spec(quick["story-load-1024"], True)
    assert app["interval_ns"] == parse_time(STORY_INTERVAL) < TCP_RTO_MIN_NS
    assert f"flows.0.app.broadcast.interval={STORY_INTERVAL}" in full["story-load-1024"].overrides_for(False)


@pytest.mark.slow
def test_quick_plan_mechanisms(tmp_path: Path):
    pytest.importorskip("tcplab._core")
    from tcplab.experiments.reproduce import run_experiments

    load("microburst-ring").plan(False)  # every full-mode run validates
    (o,) = run_experiments(["microburst-ring"], quick=True, out_dir=tmp_path)
    assert o.error is None, o.error
    v = {c.claim.id: c for c in o.claims}
    assert [c.claim.id for c in o.claims] == list(o.experiment.judged_claims)
    assert all(c.modes for c in o.claims)
    # the ring overflows with 1024 descriptors and not with 8192, at both loads
    fix = v["ring-8192-fix"].data
    for lo, hi in (("ring_1024", "ring_8192"), ("story_load_1024", "story_load_8192")):
        assert fix[lo]["ring_drops"] > 0 == fix[hi]["ring_drops"] == fix[hi]["retrans_segs"]
    # one event a second: each retransmission repairs one ring drop (a probe or an RTO)
    r = fix["ring_1024"]
    assert r["retrans_segs"] == r["ring_drops"] == r["loss_probes"] + r["tcp_timeouts"]
    ratios = {int(k): x for k, x in v["timeouts-threshold"].data["ratio_per_s"].items()}
    rings = sorted(ratios)  # more descriptors never mean more timeouts
    assert all(ratios[x] >= ratios[y] for x, y in zip(rings, rings[1:], strict=False))
    fast = v["fast-retransmissions"].data
    assert fast["ring_1024"]["fast_retrans"] == 0 < fast["story_load_1024"]["fast_retrans"]
    # the story's counter: the allowance at the port's rate counts nothing, the ring drops
    allow = v["allowance-counter"].data
    assert allow["allowance_exceeded"] == 0 < allow["ring_drops"]
    assert allow["burst_pps"] * allow["frame_bytes"] * 8 < allow["link_bps"]
    # two nodes within the drain, four beyond it
    two = v["two-node-cluster"].data
    assert all(r["burst_pps"] <= 1e9 / 1000 for r in two["two_nodes_runs"])
    assert all(r["ring_drops"] == 0 for r in two["two_nodes_runs"]) and two["four_nodes"]["ring_drops"] > 0
    # CUBIC and the socket buffers change nothing a one-segment message meets
    for cid, base, other in (("cubic-no-help", "bbr", "cubic"), ("socket-buffers", "default", "tuned")):
        d = v[cid].data
        assert d[other]["ring_drops"] == pytest.approx(d[base]["ring_drops"], rel=0.1), cid
    big = v["bigger-instance"].data
    assert 0 < big["m6in_8xlarge"]["ring_drops"] < big["m6in_4xlarge"]["ring_drops"]
    assert all(x.agree for x in o.crosschecks), [(x.check, x.found) for x in o.crosschecks]
    for ex in o.explanations:
        assert ex.figure and (tmp_path / "microburst-ring" / "plots" / ex.figure).stat().st_size > 0


def test_nodelay_changes_nothing_when_each_event_is_one_write():
    """Nagle holds a small segment only while an earlier small one is unacknowledged
    (tcp_output.c: tcp_nagle_check()); the broadcast writes one event per connection per burst,
    bursts a second apart: TCP_NODELAY sends the same packets, so the ring drops the same."""
    pytest.importorskip("tcplab._core")
    base = run_metrics(_run())
    nodelay = run_metrics(_run("flows.0.tcp.nodelay=true"))
    for key in ("ring_drops", "retrans_segs", "tcp_timeouts"):
        assert nodelay[key] == base[key], key

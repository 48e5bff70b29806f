"""The microburst-ring experiment (story 004): what the model derives, not the report's text.

The fast tests run the experiment's own scenario file at a small scale (4 x 1,000
connections, the burst in 2 ms: 2 M packets/s, as in the experiment, into one queue) and
check it against the model's arithmetic: a burst arriving faster than NAPI drains loses
``messages - window / rx_cost - descriptors``; a ring holding that excess loses nothing; a
lost one-segment message is never a fast retransmit; an RTO needs a loss while a tail loss
probe is still outstanding. The slow test runs the whole ``--quick`` plan through
``tcplab reproduce``'s machinery and checks the verdicts' facts.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tcplab.experiments import load
from tcplab.experiments.microburst_ring import SCENARIO, figures, run_metrics

SMALL = (
    "duration=4s",  # bursts at 2 s and 3 s
    "flows.0.app.broadcast.connections=1000",
    "flows.0.app.broadcast.window=2ms",
    "hosts.nginx.nic.rx_queues=1",
    "sample_interval=1ms",
)


@pytest.fixture(scope="module")
def small_runs():
    pytest.importorskip("tcplab._core")
    from tcplab.runner import run

    e = load("microburst-ring")
    path = e.scenario_path(SCENARIO)
    out = {}
    for label, extra in (
        ("ring-1024", ("hosts.nginx.nic.rx_ring=1024",)),
        ("ring-8192", ("hosts.nginx.nic.rx_ring=8192",)),
    ):
        out[label] = run(path, overrides=[*SMALL, *extra])
    return out


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


def test_the_larger_ring_holds_the_burst(small_runs):
    a, b = run_metrics(small_runs["ring-1024"]), run_metrics(small_runs["ring-8192"])
    # the excess (messages - window x drain) fits 8192 descriptors: nothing is lost
    assert a["expected_excess"] < b["ring_total"]
    assert b["ring_drops"] == 0 and b["retrans_segs"] == 0 and b["tcp_timeouts"] == 0
    # "a couple of orders of magnitude": with no drop left, at least 100 fewer
    assert a["retrans_segs"] >= 100 and a["tcp_timeouts"] > 0


def test_a_lost_one_segment_event_is_never_a_fast_retransmit(small_runs):
    m = run_metrics(small_runs["ring-1024"])
    assert m["fast_retrans"] == 0
    # every retransmission is a tail loss probe or an RTO, and each repairs one drop
    assert m["loss_probes"] + m["tcp_timeouts"] == m["retrans_segs"] == m["ring_drops"]


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

    for label, res in small_runs.items():
        res.write(tmp_path / label, plots=False)
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
    assert {"ring-1024", "ring-8192", "cubic", "msg-4kb-1024"} <= set(quick)
    assert set(quick) < set(full)  # the NAPI-cost sweep is full mode only
    assert len(e.claims) == 6
    # quick keeps the burst's rate (packets per second) and the descriptors per message
    # (validating every full run costs about a second each: the slow test plans them all)
    r = quick["ring-1024"]

    def ratios(overrides):
        cfg = load_scenario(e.scenario_path(r.scenario), overrides).to_core()
        app = cfg["apps"][0]["spec"]
        nic = next(n for n in cfg["nodes"] if n["name"] == "nginx")["nic"]
        msgs = app["senders"] * app["connections_per_sender"]
        return msgs / app["window_ns"], nic["rx_ring"] * nic["rx_queues"] / msgs

    assert ratios(r.overrides_for(True)) == pytest.approx(ratios(full["ring-1024"].overrides_for(False)))


@pytest.mark.slow
def test_quick_plan_verdicts(tmp_path: Path):
    pytest.importorskip("tcplab._core")
    from tcplab.experiments.reproduce import run_experiments

    load("microburst-ring").plan(False)  # every full-mode run validates
    (o,) = run_experiments(["microburst-ring"], quick=True, out_dir=tmp_path)
    assert o.error is None, o.error
    v = {c.claim.id: c for c in o.claims}
    assert [c.claim.id for c in o.claims] == list(o.experiment.claims)
    a, b = v["ring-8192-fix"].data["ring_1024"], v["ring-8192-fix"].data["ring_8192"]
    assert a["retrans_segs"] >= 50 * max(b["retrans_segs"], 1)
    assert v["ring-8192-fix"].verdict == "reproduced"
    ratios = {int(k): x for k, x in v["timeouts-threshold"].data["ratio_per_s"].items()}
    assert ratios[1024] > 0.03 > ratios[8192]
    # more descriptors never mean more timeouts
    rings = sorted(ratios)
    assert all(ratios[x] >= ratios[y] for x, y in zip(rings, rings[1:], strict=False))
    fast = v["fast-retransmissions"].data
    assert fast["ring_1024"]["fast_retrans"] == 0 < fast["msg_4kb_1024"]["fast_retrans"]
    # CUBIC changes nothing a one-segment message meets
    cubic = v["cubic-no-help"].data
    assert cubic["cubic"]["ring_drops"] == pytest.approx(cubic["bbr"]["ring_drops"], rel=0.1)
    assert all(x.agree for x in o.crosschecks), [(x.check, x.found) for x in o.crosschecks]
    for ex in o.explanations:
        assert ex.figure and (tmp_path / "microburst-ring" / "plots" / ex.figure).stat().st_size > 0

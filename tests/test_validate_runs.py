"""tcplab validate --runs N without a kernel: the aggregation (mean, sd, min, max), the verdict
rule (within / outside / inconclusive (spread) / n/a; tcplab.kernel.repeat), the exclusion of
invalid or failed kernel runs, the directory layout and the command. The kernel run with
--runs 2 is in test_kernel_validate.py."""

from __future__ import annotations

import json
import math
import re

import pytest

import fake_core
from tcplab.kernel.repeat import INCONCLUSIVE, compare_repeated, judge_repeated, spread
from tcplab.kernel.tolerances import Tolerances
from tcplab.kernel.validate import ValidateError, validate
from test_validate import KERNEL_BYTES, invoke, make_result, row, seed_standin

MBIT = 1e6
#: make_result's run is 10 s: bytes for a goodput of x Mbit/s
BYTES_PER_MBIT = 10 * MBIT / 8


def goodput_results(mbits, **kw):
    return [make_result(bytes_received=int(x * BYTES_PER_MBIT), **kw) for x in mbits]


# -- the aggregation --------------------------------------------------------------------


def test_spread_mean_sample_sd_min_max():
    s = spread([4.0, None, 6.0, 5.0])
    assert s.values == (4.0, None, 6.0, 5.0) and s.n == 3
    # sample standard deviation: sqrt(((4-5)^2 + (6-5)^2 + 0) / (3 - 1)) = 1
    assert s.mean == pytest.approx(5.0) and s.sd == pytest.approx(1.0)
    assert (s.min, s.max) == (4.0, 6.0)
    one = spread([3.0])
    assert one.mean == 3.0 and one.sd is None and one.n == 1
    none = spread([None, float("nan")])
    assert none.n == 0 and none.mean is None and none.sd is None and none.min is None


# -- the verdict rule -------------------------------------------------------------------


def judge(sim_mbit, kern_mbit, tol=None):
    s = spread([None if x is None else x * MBIT for x in sim_mbit])
    k = spread([None if x is None else x * MBIT for x in kern_mbit])
    return judge_repeated("goodput_bps", "f", "flow", s, k, tol or Tolerances())


def test_within_when_the_means_agree_whatever_the_spread():
    # +6 % of the kernel's mean: within the 10 %, however wide the runs spread
    r = judge([5.2, 5.3, 5.4], [4.9, 5.0, 5.1])
    assert r.verdict == "within" and r.relative == pytest.approx(0.06)
    assert judge([3.3, 7.3], [2.0, 8.0]).verdict == "within"  # means 5.3 and 5.0


def test_outside_when_the_difference_exceeds_two_standard_errors():
    # means 6.0 and 5.0 (+20 %, outside 10 %); sd 0.1 each, n 3: se = sqrt(0.01/3 + 0.01/3)
    r = judge([5.9, 6.0, 6.1], [4.9, 5.0, 5.1])
    se = math.sqrt(0.01 / 3 + 0.01 / 3) * MBIT
    assert r.se_difference == pytest.approx(se)
    assert r.verdict == "outside" and r.difference == pytest.approx(1.0 * MBIT)
    assert "exceeds 2 x its standard error" in r.reason
    assert r.sim_stats["values"] == pytest.approx([5.9e6, 6.0e6, 6.1e6]) and r.kernel_stats["n"] == 3
    assert r.sim_stats["min"] == pytest.approx(5.9e6) and r.sim_stats["max"] == pytest.approx(6.1e6)


def test_inconclusive_when_the_spread_explains_the_difference():
    # the same means (+20 %) but the simulation's runs spread over 4-8 Mbit/s: sd 2,
    # se = sqrt(4/3 + 0.01/3) = 1.156 Mbit/s, 2 se = 2.31 > 1.0
    r = judge([4.0, 8.0, 6.0], [4.9, 5.0, 5.1])
    assert r.verdict == INCONCLUSIVE and "cannot tell" in r.reason
    assert 2 * r.se_difference > abs(r.difference)


def test_the_bound_is_two_standard_errors():
    # n = 2 each, kernel (5 - d, 5 + d), sim (6 - d, 6 + d): sd = d sqrt 2, se = sqrt(2 d^2 / 2 x 2)
    # = d sqrt 2; the difference 1.0 is outside iff 1.0 > 2 sqrt 2 d, i.e. d < 0.3536
    assert judge([6 - 0.35, 6 + 0.35], [5 - 0.35, 5 + 0.35]).verdict == "outside"
    assert judge([6 - 0.36, 6 + 0.36], [5 - 0.36, 5 + 0.36]).verdict == INCONCLUSIVE


def test_identical_runs_that_differ_are_outside():
    # deterministic worlds: no spread (se 0), a difference beyond tolerance is outside
    r = judge([6.0, 6.0], [5.0, 5.0])
    assert r.se_difference == 0 and r.verdict == "outside"


def test_one_value_in_a_world_is_inconclusive_and_none_is_na():
    r = judge([6.0, None], [4.9, 5.1])
    assert r.verdict == INCONCLUSIVE and "1 run with a value" in r.reason and r.se_difference is None
    assert judge([None, None], [5.0, 5.1]).verdict == "n/a"


def test_absolute_tolerances_still_apply_to_the_means():
    # retransmissions: 0.5 pp absolute or 50 % relative, on the means
    s, k = spread([1.0, 1.2]), spread([0.7, 0.9])  # means 1.1 and 0.8: +0.3 pp
    assert judge_repeated("retrans_pct", "f", "flow", s, k, Tolerances()).verdict == "within"


# -- compare_repeated: whole results ----------------------------------------------------


def test_compare_repeated_goodput_outside_and_stats():
    sims = goodput_results([5.0, 5.2, 4.8])
    kerns = goodput_results([6.0, 6.1, 5.9])
    v = compare_repeated(sims, kerns)
    g = row(v, "goodput_bps")
    assert g.sim == pytest.approx(5.0e6) and g.kernel == pytest.approx(6.0e6)
    assert g.kernel_stats["values"] == pytest.approx([6.0e6, 6.1e6, 5.9e6])
    assert g.sim_stats["sd"] == pytest.approx(0.2e6)
    assert g.verdict == "outside"
    assert v.runs == 3 and v.valid and v.valid_kernel_runs == [1, 2, 3] and not v.excluded
    assert v.verdict_line().endswith("inconclusive (spread) (3 runs each)")
    doc = v.to_json()
    assert doc["repeat"]["runs"] == 3 and "2 x the standard error" in doc["repeat"]["rule"]
    assert doc["metrics"][0]["kernel_stats"]["n"] == 3


def test_invalid_kernel_run_is_excluded_and_named():
    bad = {"release": "6.18", "hz": 250, "valid": False, "invalid_reasons": ["steal 12 % > 5 %"]}
    sims = goodput_results([5.0, 5.1, 4.9])
    kerns = [
        make_result(bytes_received=int(5.0 * BYTES_PER_MBIT)),
        make_result(bytes_received=int(9.0 * BYTES_PER_MBIT), summary_kernel=bad),
        make_result(bytes_received=int(5.2 * BYTES_PER_MBIT)),
    ]
    v = compare_repeated(sims, kerns)
    assert v.valid and v.valid_kernel_runs == [1, 3]
    assert v.excluded == ["kernel run-2: INVALID: steal 12 % > 5 %"]
    assert any("kernel run-2" in n for n in v.notes)
    g = row(v, "goodput_bps")
    # run 2's 9 Mbit/s is not in the kernel's statistics
    assert g.kernel_stats["n"] == 2 and g.kernel == pytest.approx(5.1e6) and g.verdict == "within"
    # the values stay aligned with the run numbers
    assert g.kernel_stats["values"][0] == pytest.approx(5.0e6) and g.kernel_stats["values"][1] is None


def test_fewer_than_two_valid_kernel_runs_gives_no_verdicts():
    bad = {"release": "6.18", "valid": False, "invalid_reasons": ["delay line late"]}
    sims = goodput_results([5.0, 5.1, 4.9])
    kerns = [
        make_result(bytes_received=KERNEL_BYTES),
        make_result(bytes_received=KERNEL_BYTES, summary_kernel=bad),
        None,
    ]
    v = compare_repeated(sims, kerns, failures={2: "agent died"})
    assert not v.valid
    assert v.excluded == ["kernel run-2: INVALID: delay line late", "kernel run-3: failed: agent died"]
    assert v.verdict_line().startswith("INVALID: 1 of 3 kernel runs valid, at least 2 needed")
    assert all(r.verdict == "n/a" for r in v.rows)
    # for reference: the figures of both runs that produced a result, the invalid one too
    assert row(v, "goodput_bps").kernel_stats["n"] == 2


# -- validate(runs=N): the directory ----------------------------------------------------


def test_validate_runs_directory_and_seeds(tmp_path):
    out = tmp_path / "v"
    v = validate(
        "builtin:cubic-vs-bbr-lossy",
        overrides=["duration=3s"],
        seed=7,
        out=out,
        kernel_runner=seed_standin,
        core=fake_core.FakeCore(),
        runs=3,
    )
    assert v.seeds == [7, 8, 9] and v.title == "cubic-vs-bbr-lossy [duration=3s]"
    for k, seed in enumerate(v.seeds, start=1):
        meta = json.loads((out / "sim" / f"run-{k}" / "metadata.json").read_text())
        assert meta["overrides"] == ["duration=3s", f"seed={seed}"]
        assert (out / "kernel" / f"run-{k}" / "summary.json").is_file()
    assert not (out / "sim" / "summary.json").exists()
    doc = json.loads((out / "validation.json").read_text())
    assert doc["repeat"]["seeds"] == [7, 8, 9]
    assert doc["repeat"]["sim"] == ["sim/run-1", "sim/run-2", "sim/run-3"]
    assert doc["repeat"]["kernel"] == ["kernel/run-1", "kernel/run-2", "kernel/run-3"]
    assert all(len(m["sim_stats"]["values"]) == 3 for m in doc["metrics"])
    md = (out / "report.md").read_text()
    assert "| simulator mean ± sd | kernel mean ± sd | simulator runs | kernel runs |" in md
    assert "verdict rule: within:" in md and "[kernel/run-3/](kernel/run-3/report.html)" in md
    html = (out / "report.html").read_text()
    assert 'href="kernel/run-2/report.html"' in html and "simulator runs" in html


def test_single_run_has_no_repeat_block(tmp_path):
    v = validate(
        "builtin:cubic-vs-bbr-lossy",
        overrides=["duration=2s"],
        kernel_runner=seed_standin,
        core=fake_core.FakeCore(),
    )
    assert v.runs == 1 and "repeat" not in v.to_json()
    assert all(r.sim_stats is None for r in v.rows)
    assert "inconclusive" not in v.verdict_line()


def test_a_failed_kernel_run_is_excluded_not_fatal(tmp_path):
    calls = []

    def flaky(sc, options, progress=False):
        calls.append(1)
        if len(calls) == 2:
            raise ValidateError("agent died")
        return seed_standin(sc, options)

    out = tmp_path / "v"
    v = validate(
        "builtin:cubic-vs-bbr-lossy",
        overrides=["duration=2s"],
        out=out,
        kernel_runner=flaky,
        core=fake_core.FakeCore(),
        runs=3,
        plots=False,
    )
    assert v.valid and v.excluded == ["kernel run-2: failed: agent died"] and v.valid_kernel_runs == [1, 3]
    assert (out / "kernel" / "run-1").is_dir() and not (out / "kernel" / "run-2").exists()


# -- the command ------------------------------------------------------------------------


@pytest.fixture
def as_root(monkeypatch):
    import os

    import tcplab.kernel.validate as kv

    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(kv, "preflight", lambda sc, options: None)
    return kv


def test_cli_runs_prints_means(tmp_path, monkeypatch, patched_core, as_root):
    monkeypatch.setattr(as_root, "_default_kernel_runner", seed_standin)
    out = tmp_path / "v"
    r = invoke("validate", "builtin:cubic-vs-bbr-lossy", "-o", out, "--set", "duration=2s", "--no-plots", "--runs", "2")
    assert r.exit_code == 0, r.output
    assert "(2 runs each: mean ± sd)" in r.stdout and "±" in r.stdout
    assert re.search(r"\d+ metrics: .* \d+ inconclusive \(spread\) \(2 runs each\)", r.stdout)
    assert (out / "sim" / "run-2" / "summary.json").is_file()


def test_cli_runs_too_few_valid_exit_1(tmp_path, monkeypatch, patched_core, as_root):
    def second_invalid(sc, options, progress=False):
        r = seed_standin(sc, options)
        second_invalid.n += 1
        if second_invalid.n in (2, 3):  # kernel run 2 and its retry (an invalid run is retried once)
            r.summary["kernel"] = {"release": "6.18", "valid": False, "invalid_reasons": ["busy"]}
        return r

    second_invalid.n = 0
    monkeypatch.setattr(as_root, "_default_kernel_runner", second_invalid)
    out = tmp_path / "v"
    r = invoke("validate", "builtin:cubic-vs-bbr-lossy", "-o", out, "--set", "duration=2s", "--no-plots", "--runs", "2")
    assert r.exit_code == 1
    assert r.stderr.strip().splitlines()[-1] == (
        "INVALID: 1 of 2 kernel runs valid, at least 2 needed for a verdict (kernel run-2: INVALID: busy)"
    )
    assert "excluded: kernel run-2: INVALID: busy" in r.stdout
    assert (out / "report.html").is_file()


def test_cli_runs_zero_is_a_usage_error(tmp_path):
    r = invoke("validate", "builtin:cubic-vs-bbr-lossy", "-o", tmp_path / "v", "--runs", "0")
    assert r.exit_code == 2 and "--runs" in r.output
    assert not (tmp_path / "v").exists()

"""``tcplab validate --runs N``: repeated runs of both worlds and verdicts that respect the
spread between runs.

The model. On a lossy path one run is one draw: where the first random losses fall decides
much of a CUBIC run, in the simulator (its loss model's seed) as on the kernel (nft's
``numgen random``). ``--runs N`` runs the simulation N times with the seeds ``seed ..
seed+N-1`` and the kernel N times (sequentially; the kernel's losses differ from run to run by
themselves), and compares, per metric, the two samples of N values.

Per metric and world: the runs' values (a run without a value for the metric, e.g. too few
srtt samples, is left out of that metric), their count n, mean, sample standard deviation
(``sd``, n - 1 in the denominator), min and max (:class:`Spread`).

The verdict rule (:func:`judge_repeated`), with ``d = mean_sim - mean_kernel`` and
``se = sqrt(sd_sim^2 / n_sim + sd_kernel^2 / n_kernel)``, the standard error of the difference
of the two means (Welch's, unequal variances):

``within``
    the means agree within the metric's tolerance (:mod:`tcplab.kernel.tolerances`, the same
    test as a single run: relative to the kernel's mean, or absolute where the metric has an
    absolute allowance).
``outside``
    the means do not agree within tolerance AND ``|d| > 2 se``: the difference is larger than
    the runs' spread explains (about a 95 % two-sided test of "the means are equal" under a
    normal approximation). Two identical deterministic samples (``se`` = 0) that differ are
    outside.
``inconclusive (spread)``
    the means do not agree within tolerance but ``|d| <= 2 se`` (or a world has fewer than 2
    runs with a value, so no spread is known): more runs are needed to tell.
``n/a``
    a world has no run with a value for the metric.

The factor 2 is the usual normal-approximation 95 % bound, not tuned to this project's data.
With few runs it is lenient (Student's t at 95 % is 4.3 for 2 degrees of freedom, 2.78 for
4): an ``outside`` from N = 2 or 3 runs is a strong hint, not proof; more runs narrow it.

An invalid kernel run is run once more before it is counted out
(:func:`tcplab.kernel.validate.validate`, :attr:`Validation.retried`). Invalid kernel runs
(the machine was busy, the delay line late; ``summary.kernel.valid`` false; with how busy
the machine was, :mod:`tcplab.kernel.busy`) and failed ones are excluded and named
(:attr:`Validation.excluded`); their place in
the runs' values is empty (``values`` stay aligned with the run numbers). Fewer than 2 valid
kernel runs of N >= 2 give no verdicts (the validation is invalid, exit 1); the kernel's
figures then cover every run that produced a result, invalid ones included, for reference.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from tcplab.kernel.busy import busy_text
from tcplab.kernel.tolerances import Tolerances
from tcplab.kernel.verdicts import (
    EXACT_METRICS,
    MetricRow,
    Validation,
    compare_runs,
    finite_value,
    judge,
    kernel_validity,
    machine_busy,
    metric_text,
)

if TYPE_CHECKING:
    from tcplab.results import Result

__all__ = ["Spread", "spread", "judge_repeated", "compare_repeated", "SPREAD_FACTOR", "INCONCLUSIVE", "RULE"]

#: ``outside`` needs ``|mean difference| > SPREAD_FACTOR x`` its standard error.
SPREAD_FACTOR = 2.0
#: The verdict when the tolerance does not hold but the spread cannot tell.
INCONCLUSIVE = "inconclusive (spread)"
#: The rule in one line (reports, validation.json).
RULE = (
    "within: |mean_sim - mean_kernel| within the tolerance; else outside when it also exceeds "
    "2 x the standard error of the difference of means (sqrt(sd_sim^2/n_sim + sd_kernel^2/n_kernel)), "
    "else inconclusive (spread)"
)


@dataclass(frozen=True)
class Spread:
    """One metric's values over the runs of one world."""

    #: per run, in run order; None: that run has no value for the metric
    values: tuple[float | None, ...]
    n: int  #: runs with a value
    mean: float | None
    sd: float | None  #: sample standard deviation (n - 1); None when n < 2
    min: float | None
    max: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "mean": self.mean,
            "sd": self.sd,
            "min": self.min,
            "max": self.max,
            "values": list(self.values),
        }


def spread(values: Sequence[float | None]) -> Spread:
    """Mean, sample standard deviation, min and max of the values that are not None."""
    vals = tuple(None if v is None or not math.isfinite(float(v)) else float(v) for v in values)
    have = [v for v in vals if v is not None]
    n = len(have)
    if n == 0:
        return Spread(vals, 0, None, None, None, None)
    mean = math.fsum(have) / n
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in have) / (n - 1)) if n >= 2 else None
    return Spread(vals, n, mean, sd, min(have), max(have))


def standard_error(sim: Spread, kern: Spread) -> float | None:
    """Standard error of ``mean_sim - mean_kernel`` (Welch); None when a world has n < 2."""
    if sim.sd is None or kern.sd is None:
        return None
    return math.sqrt(sim.sd**2 / sim.n + kern.sd**2 / kern.n)


def judge_repeated(
    metric: str, subject: str, kind: str, sim: Spread, kern: Spread, tol: Tolerances, missing: str = ""
) -> MetricRow:
    """One row from the two worlds' spreads (the rule in the module doc). ``sim``/``kernel``
    of the row are the means; ``difference``/``relative`` are of the means."""
    base = judge(metric, subject, kind, sim.mean, kern.mean, tol, missing)
    stats = {"sim_stats": sim.to_json(), "kernel_stats": kern.to_json()}
    se = standard_error(sim, kern)
    if base.verdict == "n/a":
        return replace(base, **stats, se_difference=se)
    if base.reason.startswith("sim and kernel both "):
        reason = "sim and kernel means both " + base.reason[len("sim and kernel both ") :]
    else:
        reason = base.reason.replace("sim ", "sim mean ", 1).replace("the kernel's ", "the kernel's mean ", 1)
    counts = f"n={sim.n} and {kern.n} runs"
    if base.verdict == "within":
        return replace(base, reason=f"{reason}; {counts}", **stats, se_difference=se)
    diff = abs(base.difference or 0.0)
    if se is None:
        few = "the simulation" if sim.sd is None else "the kernel"
        why = f"{few} has {min(sim.n, kern.n)} run with a value: no spread to judge the difference by"
        return replace(base, verdict=INCONCLUSIVE, reason=f"{reason}; {why}", **stats, se_difference=se)
    bound = SPREAD_FACTOR * se
    if metric in EXACT_METRICS:  # a code, not a quantity: the spread says whether the runs differ
        amount = f"{bound:.2f}"
    else:
        amount = metric_text(metric, bound) if metric != "retrans_pct" else f"{bound:.2f} pp"
    if diff > bound:
        why = f"the difference also exceeds 2 x its standard error ({amount}; {counts}): outside"
        return replace(base, reason=f"{reason}; {why}", **stats, se_difference=se)
    why = f"but within 2 x its standard error ({amount}; {counts}): the runs' spread cannot tell"
    return replace(base, verdict=INCONCLUSIVE, reason=f"{reason}; {why}", **stats, se_difference=se)


def _values(rows: Sequence[MetricRow], world: str) -> dict[tuple[str, str], float | None]:
    return {(r.metric, r.subject): getattr(r, world) for r in rows}


def compare_repeated(
    sims: Sequence[Result],
    kerns: Sequence[Result | None],
    tolerances: Tolerances | None = None,
    failures: Mapping[int, str] | None = None,
) -> Validation:
    """The verdict table of N simulations against N kernel runs of the same scenario (pure).

    ``kerns[i]`` is kernel run i+1's result, None when it failed (``failures[i]``: why).
    Invalid and failed kernel runs are excluded and named; fewer than 2 valid kernel runs
    (of N >= 2) give a validation without verdicts (``valid`` false). The simulations all
    count (a simulation cannot be invalid). Needs at least one simulation and one kernel
    result."""
    tol = tolerances if tolerances is not None else Tolerances()
    failures = dict(failures or {})
    runs = max(len(sims), len(kerns))
    valid_k: list[tuple[int, Result]] = []
    excluded: list[str] = []
    busy_runs: list[dict[str, Any]] = []
    for i, k in enumerate(kerns):
        if k is None:
            excluded.append(f"kernel run-{i + 1}: failed: {failures.get(i, 'no result')}")
            continue
        ok, reasons = kernel_validity(k)
        if ok:
            valid_k.append((i, k))
        else:
            busy = machine_busy(k)
            how = f" (how busy: {busy_text(busy)})" if busy else ""
            excluded.append(f"kernel run-{i + 1}: INVALID: {'; '.join(reasons)}{how}")
            busy_runs.append(busy)
    present = [k for k in kerns if k is not None]
    if not sims or not present:
        raise ValueError("compare_repeated needs at least one simulation and one kernel result")
    ref = valid_k[0][1] if valid_k else present[0]
    base = compare_runs(sims[0], ref, tol)
    sim_values = [_values(compare_runs(s, ref, tol).rows, "sim") for s in sims]
    enough = len(valid_k) >= 2 or runs < 2
    # aligned with the run numbers (an excluded run: no values); with too few valid runs
    # the invalid ones are shown for reference (no verdicts are given then)
    counted = {i for i, _ in valid_k} if enough else {i for i, k in enumerate(kerns) if k is not None}
    kern_values = [
        _values(compare_runs(sims[0], k, tol).rows, "kernel") if k is not None and i in counted else {}
        for i, k in enumerate(kerns)
    ]
    rows: list[MetricRow] = []
    for r in base.rows:
        key = (r.metric, r.subject)
        s = spread([v.get(key) for v in sim_values])
        k = spread([v.get(key) for v in kern_values])
        missing = r.reason if r.verdict == "n/a" and (s.n == 0 or k.n == 0) else ""
        rows.append(judge_repeated(r.metric, r.subject, r.kind, s, k, tol, missing))
    invalid_reasons: list[str] = []
    if not enough:
        invalid_reasons = [
            f"{len(valid_k)} of {runs} kernel runs valid, at least 2 needed for a verdict"
            + (f" ({'; '.join(excluded)})" if excluded else "")
        ]
        why = "no verdict: fewer than 2 valid kernel runs (the kernel's figures cover the invalid ones, for reference)"
        rows = [replace(r, verdict="n/a", reason=why) for r in rows]
    path = []
    for entry in base.path:
        link = entry["link"]
        out: dict[str, Any] = {"link": link}
        for key in ("sent_packets", "drops", "loss_drops"):
            out[key] = {
                "sim": _mean([_link_value(s, link, key) for s in sims]),
                "kernel": _mean(
                    [_link_value(k, link, key) for i, k in enumerate(kerns) if k is not None and i in counted]
                ),
            }
        path.append(out)
    # the excluded runs: named once (in the INVALID line when there are too few valid ones)
    notes = list(base.notes) + ([f"excluded: {e}" for e in excluded] if enough else [])
    v = replace(
        base,
        rows=rows,
        valid=enough,
        invalid_reasons=invalid_reasons,
        path=path,
        notes=notes,
        runs=runs,
        excluded=excluded,
        valid_kernel_runs=[i + 1 for i, _ in valid_k],
        repeat_rule=RULE,
        # too few valid runs because the machine was busy: how busy (the first such run)
        busy=next((b for b in busy_runs if b), {}) if not enough else {},
    )
    return v


def _link_value(result: Result, link: str, key: str) -> float | None:
    for row in result.links.to_dict("records"):
        if str(row["name"]) == link:
            return finite_value(row.get(key))
    return None


def _mean(values: Sequence[float | None]) -> float | None:
    return spread(values).mean

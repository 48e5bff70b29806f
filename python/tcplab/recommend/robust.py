"""Robust selection: the setting that is best in its worst condition.

The model. A sweep table's swept parameters split into

* **choices**: the ``--choose`` parameters, the settings the user controls (a *setting* is
  one combination of their values, ``flows.0.cc=bbr, hosts.nginx.nic.rx_ring=8192``);
* **conditions**: every other swept parameter (``--over`` names the ones the user cares
  about; the others are conditions too) and the seeds.

The rule (stated in every output as :data:`RULE`):

1. each run (point, seed) gives one value of every metric (:mod:`tcplab.recommend.metrics`);
2. for each setting and each condition (a combination of the other parameters' values),
   the **objective is the mean over seeds**, and **each constraint must hold in every seed's
   run** (a run that failed, or has no value for a constrained metric, breaks it);
3. a setting's **score is its worst condition** (the lowest mean when maximizing, the
   highest when minimizing); a condition with a missing objective value is the worst;
4. settings that break a constraint somewhere are **infeasible** and ranked after every
   feasible one (among themselves: fewest breaking runs first, then by score);
5. among feasible settings: best score first; **ties** (equal worst cases, compared
   exactly) are broken by the mean over all conditions, then by the order of the sweep
   (the setting whose first point comes first) and the output says which rule decided;
6. the **recommendation** is the first feasible setting; the **runner-up** is the next in
   the ranking (feasible or not, which is said); the **margin** is how much better the
   recommendation's worst case is than the runner-up's (positive = better, in the
   objective's unit and relative to the runner-up); each constraint's **slack** is the
   distance to its bound at the recommendation's tightest run;
7. the **evidence** is the runs (keys) of the recommendation's worst condition, of its
   tightest run for each constraint, and of the runner-up's worst condition.

With no feasible setting there is no recommendation (the ranking still says how close each
came). The table SCHEMA this reads is ARCH12's (``sweep.parquet``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tcplab.errors import ScenarioError, show_value
from tcplab.recommend.metrics import RUN_KEYS
from tcplab.recommend.objective import Constraint, Objective

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "RULE",
    "Run",
    "ConstraintCheck",
    "Choice",
    "Selection",
    "parameter_columns",
    "select",
]

RULE = (
    "each setting is scored by its worst condition: per condition the objective is the mean over "
    "seeds, and every constraint must hold in every seed's run; settings that break a constraint "
    "anywhere rank after those that do not"
)

#: Columns before the swept parameters in the table (ARCH12 SCHEMA), and the first after.
_LEADING = ("point", "seed", "run", "status", "error")
_FIRST_AFTER = "flow_index"


def parameter_columns(table: pd.DataFrame) -> list[str]:
    """The swept parameters' columns (dotted paths), in the table's order: the columns
    between ``error`` and ``flow_index``, without the numeric ``PATH#value`` companions."""
    cols = list(table.columns)
    try:
        start = cols.index("error") + 1
        end = cols.index(_FIRST_AFTER)
    except ValueError:
        raise ScenarioError(
            "the table does not have the sweep table's columns (point, seed, run, status, error, ..., flow_index)",
            file="sweep",
            expected="a sweep.parquet written by tcplab sweep",
        ) from None
    return [c for c in cols[start:end] if "#" not in c]


@dataclass(frozen=True)
class Run:
    """One run of the evidence: its point, seed, key and the value that matters."""

    point: int
    seed: int
    key: str
    value: float
    status: str = "ok"
    error: str | None = None


@dataclass
class ConstraintCheck:
    """A constraint over one setting: the tightest run (least slack) and every break."""

    constraint: Constraint
    worst_value: float = math.nan
    worst_condition: dict[str, str] = field(default_factory=dict)
    worst_run: Run | None = None
    broken_runs: list[Run] = field(default_factory=list)
    broken_conditions: list[dict[str, str]] = field(default_factory=list)

    @property
    def holds(self) -> bool:
        return not self.broken_runs

    @property
    def slack(self) -> float:
        return self.constraint.slack(self.worst_value)


@dataclass
class ConditionResult:
    """One setting in one condition: the objective's seed mean and spread, and its runs."""

    condition: dict[str, str]
    mean: float
    lo: float
    hi: float
    runs: list[Run]


@dataclass
class Choice:
    """One setting and how it fared."""

    setting: dict[str, str]
    order: int  # the first point of this setting in the sweep: sweep order
    conditions: list[ConditionResult]
    worst: float
    worst_condition: dict[str, str]
    mean: float
    checks: list[ConstraintCheck]
    failed_runs: list[Run]
    rank: int = 0

    @property
    def feasible(self) -> bool:
        return not self.failed_runs and all(c.holds for c in self.checks) and not math.isnan(self.worst)

    @property
    def broken_count(self) -> int:
        return len(self.failed_runs) + sum(len(c.broken_runs) for c in self.checks)

    def worst_runs(self) -> list[Run]:
        for cond in self.conditions:
            if cond.condition == self.worst_condition:
                return cond.runs
        return []


@dataclass
class Selection:
    """The ranking and its conclusion (module doc)."""

    objective: Objective
    choose: list[str]
    over: list[str]
    conditions_params: list[str]
    seeds: list[int]
    choices: list[Choice]  # ranked
    recommended: Choice | None
    runner_up: Choice | None
    margin: float  # positive = the recommendation is better in the worst case
    margin_relative: float
    tie_note: str | None
    notes: list[str]
    #: feasible settings with exactly the recommendation's worst case and mean (a tie the
    #: sweep's order broke), in rank order
    ties: list[Choice] = field(default_factory=list)
    #: the first setting ranked after the recommendation that does not tie with it
    next_best: Choice | None = None
    #: one row per run: point, seed, run, status, error, the parameters, ``objective`` and
    #: ``constraint 1``, ``constraint 2``, ... (each metric's per-run value, native unit)
    per_run: Any = None


# -- the selection ---------------------------------------------------------------------------


def _labels(frame: pd.DataFrame, params: Sequence[str]) -> list[tuple[str, ...]]:
    return [tuple("" if v is None else str(v) for v in row) for row in frame[list(params)].itertuples(index=False)]


def _restrict(table: pd.DataFrame, restrict: Mapping[str, Sequence[str]], option: Mapping[str, str]) -> pd.DataFrame:
    for path, values in restrict.items():
        if not values:
            continue
        have = set(table[path].dropna().astype(str))
        for v in values:
            if v not in have:
                raise ScenarioError(
                    f"{show_value(v)} is not a value of {path} in this sweep",
                    file=option.get(path, "--choose"),
                    path=path,
                    expected="one of " + ", ".join(sorted(have)),
                )
        table = table[table[path].astype(str).isin([str(v) for v in values])]
    return table


def select(
    table: pd.DataFrame,
    objective: Objective,
    choose: Sequence[str],
    over: Sequence[str] = (),
    restrict: Mapping[str, Sequence[str]] | None = None,
) -> Selection:
    """Rank the settings of ``choose`` in ``table`` under ``objective`` (module doc).

    ``restrict`` limits parameters to some of their values (``{"hosts.nginx.nic.rx_ring":
    ["1024", "8192"]}``)."""
    import pandas as pd

    params = parameter_columns(table)
    options = {p: "--choose" for p in choose} | {p: "--over" for p in over}
    for opt, paths in (("--choose", choose), ("--over", over)):
        for p in paths:
            if p not in params:
                raise ScenarioError(
                    f"{show_value(p)} is not a swept parameter of this sweep",
                    file=opt,
                    expected="one of " + (", ".join(params) if params else "(none: the sweep varied only seeds)"),
                )
    if not choose:
        raise ScenarioError("no setting to choose", file="--choose", expected="--choose PATH, a swept parameter")
    for opt, paths in (("--choose", choose), ("--over", over)):
        twice = sorted({p for p in paths if list(paths).count(p) > 1})
        if twice:
            raise ScenarioError(f"{show_value(twice[0])} is given twice", file=opt, expected="each parameter once")
    both = [p for p in choose if p in over]
    if both:
        raise ScenarioError(
            f"{show_value(both[0])} is both chosen and a condition",
            file="--over",
            expected="a parameter in one of them",
        )
    table = _restrict(table, restrict or {}, options)
    if table.empty:
        raise ScenarioError("no runs left", file="--choose", expected="values present in the sweep")
    cond_params = [p for p in params if p not in choose]
    notes = []
    extra = [p for p in cond_params if p not in over]
    if over and extra:
        notes.append("also conditions (swept, not chosen): " + ", ".join(extra))

    # one row per run: labels, key, status, error, every metric
    metrics = [objective.metric, *(c.metric for c in objective.constraints)]
    first = table.groupby(list(RUN_KEYS), sort=True).first()
    runs = first[["run", "status", "error", *params]].copy()
    ok_rows = table[table["status"] == "ok"]
    for i, m in enumerate(metrics):
        runs[f"__m{i}"] = m.values(ok_rows).reindex(runs.index) if not ok_rows.empty else math.nan
    runs = runs.reset_index()
    seeds = sorted(int(s) for s in runs["seed"].unique())

    choices: list[Choice] = []
    runs["__choice"] = _labels(runs, choose)
    runs["__cond"] = _labels(runs, cond_params) if cond_params else [()] * len(runs)
    for choice_key, crows in runs.groupby("__choice", sort=False):
        setting = dict(zip(choose, choice_key, strict=True))
        order = int(crows["point"].min())
        conditions: list[ConditionResult] = []
        failed: list[Run] = []
        checks = [ConstraintCheck(c) for c in objective.constraints]
        for cond_key, rows in crows.groupby("__cond", sort=False):
            condition = dict(zip(cond_params, cond_key, strict=True))
            rows = rows.sort_values("seed")
            obj_runs = []
            for r in rows.to_dict("records"):
                run = Run(
                    int(r["point"]),
                    int(r["seed"]),
                    str(r["run"]),
                    float(r["__m0"]),
                    str(r["status"]),
                    None if pd.isna(r["error"]) else str(r["error"]),
                )
                obj_runs.append(run)
                if run.status != "ok":
                    failed.append(run)
                    continue
                for i, check in enumerate(checks, start=1):
                    v = float(r[f"__m{i}"])
                    c = check.constraint
                    crun = Run(run.point, run.seed, run.key, v)
                    if check.worst_run is None or c.worse(v, check.worst_value):
                        check.worst_value, check.worst_condition, check.worst_run = v, condition, crun
                    if not c.holds(v):
                        check.broken_runs.append(crun)
                        if condition not in check.broken_conditions:
                            check.broken_conditions.append(condition)
            values = [r.value for r in obj_runs if r.status == "ok"]
            if len(values) < len(obj_runs) or not values or any(math.isnan(v) for v in values):
                mean = math.nan
            else:
                mean = sum(values) / len(values)
            lo = min(values) if values else math.nan
            hi = max(values) if values else math.nan
            conditions.append(ConditionResult(condition, mean, lo, hi, obj_runs))
        worst_cond = conditions[0]
        for cond in conditions[1:]:
            if objective.worse(cond.mean, worst_cond.mean):
                worst_cond = cond
        finite = [c.mean for c in conditions if not math.isnan(c.mean)]
        overall = sum(finite) / len(finite) if len(finite) == len(conditions) else math.nan
        choices.append(
            Choice(setting, order, conditions, worst_cond.mean, worst_cond.condition, overall, checks, failed)
        )
    n_conds = {len(c.conditions) for c in choices}
    if len(n_conds) > 1:
        notes.append("settings were not all run in the same conditions: each is judged on its own")

    ranked, tie_note = _rank(objective, choices)
    for i, c in enumerate(ranked, start=1):
        c.rank = i
    recommended = ranked[0] if ranked and ranked[0].feasible else None
    runner_up = next_best = None
    ties: list[Choice] = []
    margin = margin_rel = math.nan
    if recommended is not None and len(ranked) > 1:
        runner_up = ranked[1]
        margin = objective.gap(recommended.worst, runner_up.worst)
        if not math.isnan(margin) and runner_up.worst != 0:
            margin_rel = margin / abs(runner_up.worst)
        for c in ranked[1:]:
            if c.feasible and c.worst == recommended.worst and c.mean == recommended.mean:
                ties.append(c)
            else:
                next_best = c
                break
    return Selection(
        objective=objective,
        choose=list(choose),
        over=list(over) or list(cond_params),
        conditions_params=cond_params,
        seeds=seeds,
        choices=ranked,
        recommended=recommended,
        runner_up=runner_up,
        margin=margin,
        margin_relative=margin_rel,
        tie_note=tie_note if recommended is not None else None,
        notes=notes,
        ties=ties,
        next_best=next_best,
        per_run=runs.drop(columns=["__choice", "__cond"]).rename(
            columns={f"__m{i}": ("objective" if i == 0 else f"constraint {i}") for i in range(len(metrics))}
        ),
    )


def _score_key(objective: Objective, value: float) -> float:
    """Smaller is better; NaN last."""
    if math.isnan(value):
        return math.inf
    return -value if objective.maximize else value


def _rank(objective: Objective, choices: list[Choice]) -> tuple[list[Choice], str | None]:
    def key(c: Choice) -> tuple:
        feasible = c.feasible
        return (
            0 if feasible else 1,
            0 if feasible else c.broken_count,
            _score_key(objective, c.worst),
            _score_key(objective, c.mean),
            c.order,
        )

    ranked = sorted(choices, key=key)
    note = None
    if len(ranked) > 1 and ranked[0].feasible and ranked[1].feasible:
        a, b = ranked[0], ranked[1]
        if a.worst == b.worst:
            name = objective.metric.name
            if a.mean != b.mean and not (math.isnan(a.mean) or math.isnan(b.mean)):
                note = (
                    f"tie on the worst case ({objective.metric.fmt(a.worst)} {name}): broken by the mean over "
                    f"conditions ({objective.metric.fmt(a.mean)} against {objective.metric.fmt(b.mean)})"
                )
            else:
                tied = [
                    describe(c.setting) for c in ranked[1:] if c.feasible and c.worst == a.worst and c.mean == a.mean
                ]
                note = (
                    f"tie on the worst case ({objective.metric.fmt(a.worst)} {name}) and on the mean with "
                    f"{'; '.join(tied)}: broken by the sweep's order (the setting swept first)"
                )
    return ranked, note


def describe(setting: Mapping[str, Any]) -> str:
    """``flows.0.cc=bbr, hosts.nginx.nic.rx_ring=8192``; ``(any)`` for an empty mapping."""
    return ", ".join(f"{k}={v}" for k, v in setting.items()) or "(any)"

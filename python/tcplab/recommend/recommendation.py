"""A recommendation as people read it: the sentence, the table of settings, the evidence.

The model: :class:`Recommendation` wraps a :class:`~tcplab.recommend.robust.Selection`
(the ranking) with where its runs live (the sweep directory: ``runs/KEY/`` when the sweep
kept them) and renders it:

* :attr:`Recommendation.sentence`: one paragraph (the setting, its worst case and where,
  the margin over the runner-up, each constraint's slack, or "no setting meets ...");
* :attr:`Recommendation.table`: one row per setting, ranked (worst case, the condition
  where it happens, mean, feasible, why not);
* :meth:`Recommendation.to_json`: ``recommend.json`` (everything above, numbers in the
  table's native units: bit/s, ms, fractions);
* :meth:`Recommendation.write`: ``recommend.json``, ``plots/recommend.png``, ``report.html``
  (:mod:`tcplab.views.recommend`).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tcplab.recommend.robust import RULE, Choice, ConstraintCheck, Run, Selection, describe
from tcplab.units import percent_text

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Recommendation", "RECOMMEND_ENTRIES", "EXIT_NO_FEASIBLE"]

#: Top-level entries of a recommend directory, besides ``sweep/`` (the scenario form's sweep).
RECOMMEND_ENTRIES = frozenset({".tcplab-run", "recommend.json", "report.html", "plots"})

#: ``tcplab recommend`` exit code when no setting meets the constraints (the output is written).
EXIT_NO_FEASIBLE = 4


def _num(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def _cond_text(cond: dict[str, str]) -> str:
    return describe(cond) if cond else "every run"


@dataclass
class Recommendation:
    """The outcome of :func:`tcplab.recommend` (module doc)."""

    selection: Selection
    sweep_dir: Path | None = None
    table_frame: Any = field(default=None, repr=False)  # the sweep table (for the plot)

    # -- what it says ---------------------------------------------------------------------
    @property
    def objective(self):  # noqa: ANN201
        return self.selection.objective

    @property
    def setting(self) -> dict[str, str] | None:
        """The recommended setting (parameter -> value label), or None when none is feasible."""
        rec = self.selection.recommended
        return dict(rec.setting) if rec else None

    @property
    def feasible(self) -> bool:
        return self.selection.recommended is not None

    @property
    def rule(self) -> str:
        """The ranking rule in one line (:data:`~tcplab.recommend.robust.RULE`)."""
        return RULE

    @staticmethod
    def describe(setting: Mapping[str, Any]) -> str:
        """A setting or a condition as the page and the sentence name it
        (:func:`~tcplab.recommend.robust.describe`: ``flows.0.cc=bbr, ...``)."""
        return describe(setting)

    def run_dir(self, key: str) -> str | None:
        if self.sweep_dir is None:
            return None
        d = Path(self.sweep_dir) / "runs" / key
        return str(d) if d.is_dir() else None

    def why_not(self, choice: Choice) -> str:
        """Why a setting is not feasible ("" when it is)."""
        if choice.failed_runs:
            r = choice.failed_runs[0]
            more = f" (and {len(choice.failed_runs) - 1} more)" if len(choice.failed_runs) > 1 else ""
            return f"run failed at point {r.point}, seed {r.seed}: {r.error or 'no error recorded'}{more}"
        for check in choice.checks:
            if not check.holds:
                return self._broken_text(check, choice)
        if math.isnan(choice.worst):
            return f"no value of {self.objective.metric.name} in some condition"
        return ""

    def _broken_text(self, check: ConstraintCheck, choice: Choice | None = None) -> str:
        c = check.constraint
        n = len(check.broken_runs)
        value = c.metric.fmt(check.worst_value) if not math.isnan(check.worst_value) else "no value"
        where = _cond_text(check.worst_condition)
        seed = f", seed {check.worst_run.seed}" if check.worst_run else ""
        total = sum(len(cond.runs) for cond in choice.conditions) if choice is not None else 0
        of = f" of {total}" if total >= n > 0 else ""
        return f"breaks {c.label}: {value} at {where}{seed} (in {n}{of} run{'s' if (total or n) != 1 else ''})"

    @property
    def sentence(self) -> str:
        s = self.selection
        obj = s.objective
        m = obj.metric
        over = ", ".join(s.over) if s.over else "seeds only"
        seeds = len(s.seeds)
        if s.recommended is None:
            cons = " and ".join(c.label for c in obj.constraints) or "the objective"
            best = s.choices[0] if s.choices else None
            text = f"No setting meets {cons} in every condition ({over}; {seeds} seed{'s' * (seeds != 1)})."
            if best is not None:
                # why_not is a clause ("breaks ...") or a noun phrase ("run failed ...",
                # "no value of ..."): a colon reads right after either
                text += f" Closest: {describe(best.setting)}: {self.why_not(best)}."
            return text
        rec = s.recommended
        text = (
            f"Recommend {describe(rec.setting)}: worst-case {m.name} {m.fmt(rec.worst)} "
            f"(at {_cond_text(rec.worst_condition)}, mean of {seeds} seed{'s' * (seeds != 1)})"
        )
        n_all = len(s.choices)
        n_ok = sum(1 for c in s.choices if c.feasible)
        if obj.constraints:
            cons = " and ".join(c.label for c in obj.constraints)
            text += (
                f", the best of the {n_ok} setting{'s' * (n_ok != 1)} (of {n_all}) that meet {cons} in every run"
                if n_ok > 1
                else f", the only one of {n_all} setting{'s' * (n_all != 1)} that meets {cons} in every run"
            )
        else:
            text += f", the best of {n_all} settings" if n_all > 1 else ", the only setting swept"
        text += f" over {over}."
        if s.ties and s.next_best is not None:
            nb = s.next_best
            state = "" if nb.feasible else f" (infeasible: {self.why_not(nb)})"
            gap = obj.gap(rec.worst, nb.worst)
            text += (
                f" Margin over the next setting that does not tie, {describe(nb.setting)}{state}: "
                f"{m.fmt(gap, signed=True)} in the worst case ({m.fmt(nb.worst)} at {_cond_text(nb.worst_condition)})."
            )
        elif s.runner_up is not None and not s.ties:
            ru = s.runner_up
            state = "" if ru.feasible else f" (infeasible: {self.why_not(ru)})"
            rel = f", {percent_text(100 * s.margin_relative, signed=True)}" if not math.isnan(s.margin_relative) else ""
            text += (
                f" Margin over the runner-up {describe(ru.setting)}{state}: "
                f"{m.fmt(s.margin, signed=True)}{rel} in the worst case "
                f"({m.fmt(ru.worst)} at {_cond_text(ru.worst_condition)})."
            )
        for check in rec.checks:
            c = check.constraint
            text += (
                f" Slack on {c.label}: {c.metric.fmt(check.slack)} "
                f"(tightest {c.metric.fmt(check.worst_value)} at {_cond_text(check.worst_condition)}"
                + (f", seed {check.worst_run.seed}" if check.worst_run else "")
                + ")."
            )
        if s.tie_note:
            text += f" Note: {s.tie_note}."
        if obj.implied:
            text += f" (No goal given: {obj.sense} {m.name}, the first constraint's metric.)"
        return text

    @property
    def evidence(self) -> list[dict[str, Any]]:
        """The runs behind the sentence: ``role``, setting, condition, point, seed, key,
        value, run dir (when the sweep kept it)."""
        s = self.selection
        out: list[dict[str, Any]] = []

        def add(role: str, choice: Choice, cond: dict[str, str], runs: list[Run], metric_name: str) -> None:
            for r in runs:
                out.append(
                    {
                        "role": role,
                        "setting": dict(choice.setting),
                        "condition": dict(cond),
                        "point": r.point,
                        "seed": r.seed,
                        "run": r.key,
                        "metric": metric_name,
                        "value": _num(r.value),
                        "status": r.status,
                        "run_dir": self.run_dir(r.key),
                    }
                )

        m = s.objective.metric.name
        if s.recommended is not None:
            rec = s.recommended
            add("recommended, worst condition", rec, rec.worst_condition, rec.worst_runs(), m)
            for check in rec.checks:
                if check.worst_run is not None:
                    add(
                        f"recommended, tightest for {check.constraint.label}",
                        rec,
                        check.worst_condition,
                        [check.worst_run],
                        check.constraint.metric.name,
                    )
        others = [("runner-up", s.runner_up)] if s.runner_up is not None else []
        if s.ties and s.next_best is not None:
            others.append(("next setting that does not tie", s.next_best))
        for role, ru in others:
            add(f"{role}, worst condition", ru, ru.worst_condition, ru.worst_runs(), m)
            for check in ru.checks:
                if not check.holds and check.worst_run is not None:
                    add(
                        f"{role}, breaks {check.constraint.label}",
                        ru,
                        check.worst_condition,
                        [check.worst_run],
                        check.constraint.metric.name,
                    )
        return out

    @property
    def table(self) -> pd.DataFrame:
        """One row per setting, ranked; the objective in its display unit."""
        import pandas as pd

        s = self.selection
        m = s.objective.metric
        unit = f" ({m.display_unit})" if m.display_unit else ""
        rows = []
        for c in s.choices:
            row: dict[str, Any] = {"rank": c.rank}
            row.update(c.setting)
            row[f"worst {m.name}{unit}"] = m.display(c.worst) if not math.isnan(c.worst) else math.nan
            row["at"] = _cond_text(c.worst_condition)
            row[f"mean {m.name}{unit}"] = m.display(c.mean) if not math.isnan(c.mean) else math.nan
            row["feasible"] = c.feasible
            row["why not"] = self.why_not(c)
            rows.append(row)
        return pd.DataFrame(rows)

    # -- files ----------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        s = self.selection
        obj = s.objective

        def metric(mm) -> dict[str, Any]:  # noqa: ANN001
            return {"text": mm.text, "name": mm.name, "unit": mm.unit, "source": mm.source, "columns": list(mm.columns)}

        def choice(c: Choice) -> dict[str, Any]:
            return {
                "rank": c.rank,
                "setting": dict(c.setting),
                "feasible": c.feasible,
                "worst": _num(c.worst),
                "worst_condition": dict(c.worst_condition),
                "mean": _num(c.mean),
                "why_not": self.why_not(c) or None,
                "conditions": [
                    {
                        "condition": dict(k.condition),
                        "mean": _num(k.mean),
                        "min": _num(k.lo),
                        "max": _num(k.hi),
                        "runs": [
                            {"point": r.point, "seed": r.seed, "run": r.key, "value": _num(r.value), "status": r.status}
                            for r in k.runs
                        ],
                    }
                    for k in c.conditions
                ],
                "constraints": [
                    {
                        "constraint": ch.constraint.label,
                        "holds": ch.holds,
                        "tightest": _num(ch.worst_value),
                        "tightest_condition": dict(ch.worst_condition),
                        "tightest_seed": ch.worst_run.seed if ch.worst_run else None,
                        "slack": _num(ch.slack),
                        "broken_runs": len(ch.broken_runs),
                    }
                    for ch in c.checks
                ],
            }

        rec = s.recommended
        return {
            "objective": {
                "text": obj.text,
                "sense": obj.sense,
                "metric": metric(obj.metric),
                "implied": obj.implied,
                "constraints": [
                    {"text": c.text, "label": c.label, "op": c.op, "bound": c.bound, "metric": metric(c.metric)}
                    for c in obj.constraints
                ],
            },
            "rule": RULE,
            "choose": s.choose,
            "over": s.over,
            "conditions": s.conditions_params,
            "seeds": s.seeds,
            "sweep": str(self.sweep_dir) if self.sweep_dir else None,
            "recommendation": dict(rec.setting) if rec else None,
            "feasible": rec is not None,
            "worst": _num(rec.worst) if rec else None,
            "worst_condition": dict(rec.worst_condition) if rec else None,
            "runner_up": dict(s.runner_up.setting) if s.runner_up else None,
            "margin": _num(s.margin),
            "margin_relative": _num(s.margin_relative),
            "tie": s.tie_note,
            "ties": [dict(c.setting) for c in s.ties],
            "next_best": dict(s.next_best.setting) if s.next_best else None,
            "notes": s.notes,
            "sentence": self.sentence,
            "evidence": self.evidence,
            "choices": [choice(c) for c in s.choices],
        }

    def write(self, directory: str | os.PathLike[str], *, plots: bool = True) -> Path:
        """Write ``recommend.json``, ``plots/recommend.png`` and ``report.html`` into
        ``directory`` (created, or a recommend directory whose files are replaced: they are
        a function of the sweep and the objective). Each is written to a temporary file and
        renamed into place, recommend.json last; a directory created here is removed again
        if writing fails."""
        from tcplab.views.recommend import recommend_plots, write_recommend_report

        target, created = prepare_recommend_dir(Path(directory))
        tmp = Path(tempfile.mkdtemp(prefix=".recommend.", suffix=".tmp", dir=target))
        try:
            figures = recommend_plots(self) if plots else []
            (tmp / "plots").mkdir()
            for p in figures:
                (tmp / "plots" / p.filename).write_bytes(p.png)
            write_recommend_report(self, figures, tmp / "report.html")
            (tmp / "recommend.json").write_text(json.dumps(self.to_json(), indent=2) + "\n", encoding="utf-8")
            old = target / "plots"
            if old.exists():
                aside = Path(tempfile.mkdtemp(prefix=".plots.", suffix=".old", dir=target))
                os.replace(old, aside / "plots")
                shutil.rmtree(aside, ignore_errors=True)
            os.replace(tmp / "plots", target / "plots")
            os.replace(tmp / "report.html", target / "report.html")
            os.replace(tmp / "recommend.json", target / "recommend.json")
        except BaseException as e:
            shutil.rmtree(tmp, ignore_errors=True)
            if created:
                shutil.rmtree(target, ignore_errors=True)
            if isinstance(e, OSError):  # a full disk: name the file, not the temporary one
                from tcplab.output_files import output_error
                from tcplab.results.rundir import in_target

                raise output_error(e, in_target(e, tmp, target)) from e
            raise
        shutil.rmtree(tmp, ignore_errors=True)
        return target


def prepare_recommend_dir(target: Path) -> tuple[Path, bool]:
    """Create ``target`` and mark it (kind ``recommend``), or accept it when it already is
    a recommend directory or is empty; anything else is a one-line ScenarioError. Returns
    the resolved path and whether it was created here."""
    from tcplab.errors import ScenarioError
    from tcplab.results.rundir import MARKER, check_output_writable, write_marker

    check_output_writable(target)
    if target.is_symlink():
        raise ScenarioError("is a symbolic link", file=str(target), expected="a path for a new output directory")
    resolved = target.resolve()
    cwd = Path.cwd().resolve()
    if resolved == cwd or resolved in cwd.parents:
        raise ScenarioError(
            "is the current directory or one of its parents",
            file=str(target),
            expected="a new directory for the output, such as out/recommend",
        )
    created = not resolved.exists()
    if not created:
        if not resolved.is_dir():
            raise ScenarioError("exists and is not a directory", file=str(target), expected="a directory path")
        if any(resolved.iterdir()):
            try:
                kind = json.loads((resolved / MARKER).read_text(encoding="utf-8")).get("kind")
            except (OSError, ValueError, AttributeError):
                kind = None
            if kind != "recommend":
                raise ScenarioError(
                    "output directory exists and is not a tcplab recommend directory",
                    file=str(target),
                    expected="a new or empty directory, or one tcplab recommend wrote (its files are replaced)",
                )
            return resolved, False
    resolved.mkdir(parents=True, exist_ok=True)
    write_marker(resolved, "recommend")
    return resolved, created

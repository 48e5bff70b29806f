"""``tcplab recommend``: the setting that meets an objective robustly, from a sweep.

The model: a sweep (``tcplab sweep``, its table ``sweep.parquet``) ran a scenario over
parameters and seeds. The user says which parameters are theirs to set (``choose``), which
uncertain conditions the setting must hold up in (``over``; every other swept parameter
and the seeds are conditions too), and what they want, in their words
(:mod:`~tcplab.recommend.objective`: "maximize goodput subject to p99 RTT < 50 ms", "keep
TCPTimeouts / CurrEstab < 3 % while minimizing burst completion p99"; metrics resolved by
:mod:`~tcplab.recommend.metrics`). :mod:`~tcplab.recommend.robust` scores every setting by
its worst condition (objective: seed mean; constraints: every seed's run) and ranks the
feasible ones first; :class:`~tcplab.recommend.recommendation.Recommendation` says it (the
setting, its worst case and where, the margin over the runner-up, each constraint's slack,
the runs that support it) and writes ``recommend.json``, ``plots/recommend.png`` and
``report.html``.

    >>> import tcplab
    >>> rec = tcplab.recommend("sweeps/lossy", choose=["flows.0.cc"], over=["links.1.loss"],
    ...                        maximize="goodput", subject_to=["p99 RTT < 175 ms"])  # doctest: +SKIP
    >>> rec.setting, rec.sentence                                             # doctest: +SKIP

Given a scenario instead of a sweep, ``choose`` and ``over`` carry their values
(``{"flows.0.cc": ["cubic", "bbr"]}``, ``{"links.1.loss": "0%..1%"}`` for a random range
with ``n`` points) and the sweep runs first, into ``out/sweep`` (resumable).

No feasible setting is not an error: the Recommendation says so (``setting`` is None) and
the CLI exits with :data:`~tcplab.recommend.recommendation.EXIT_NO_FEASIBLE` (4) after
writing its output, so that scripts can tell "no answer" from an answer.

Floor 6 (the commands' packages): may import :mod:`tcplab.sweep` (the scenario form runs a
sweep; :func:`tcplab.sweep.load_sweep` reads one), runner and compare, views (the page and
the plot, :mod:`tcplab.views.recommend`, read a :class:`Recommendation` as data and import
nothing of this package), results, the scenario and the leaves; never another command
package nor the commands. A submodule never imports this ``__init__``.
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tcplab.errors import ScenarioError, show_value
from tcplab.recommend.objective import Constraint, Objective, build_objective
from tcplab.recommend.recommendation import EXIT_NO_FEASIBLE, Recommendation
from tcplab.recommend.robust import RULE, Selection, select

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "recommend",
    "recommend_table",
    "Recommendation",
    "Objective",
    "Constraint",
    "Selection",
    "RULE",
    "EXIT_NO_FEASIBLE",
    "parse_choice",
    "load_table",
    "is_sweep_dir",
]

ParamSpec = Sequence[str] | Mapping[str, Any] | None


def parse_choice(text: str, option: str) -> tuple[str, list[str] | None, str | None]:
    """``PATH`` or ``PATH=v1,v2`` (``--set`` alternatives) or ``PATH=lo..hi`` (a random
    range): (path, labels or None, range text or None)."""
    from tcplab.overrides import split_top_level

    path, eq, values = text.partition("=")
    path = path.strip()
    if not path or any(c.isspace() for c in path):
        raise ScenarioError(
            f"{show_value(text)} names no parameter",
            file=option,
            expected="PATH or PATH=V1,V2 such as flows.0.cc=cubic,bbr",
        )
    if not eq:
        return path, None, None
    if ".." in values and "," not in values:
        return path, None, values.strip()
    labels = [v.strip() for v in split_top_level(values)]
    if not labels or any(v == "" for v in labels):
        raise ScenarioError(
            f"{show_value(text)} has an empty value", file=option, expected="PATH=V1,V2 such as flows.0.cc=cubic,bbr"
        )
    return path, labels, None


def _specs(spec: ParamSpec, option: str) -> list[tuple[str, list[str] | None, str | None]]:
    if spec is None:
        return []
    if isinstance(spec, str):
        spec = [spec]
    if isinstance(spec, Mapping):
        out = []
        for path, values in spec.items():
            if values is None:
                out.append((path, None, None))
            elif isinstance(values, str) and ".." in values:
                out.append((path, None, values))
            elif isinstance(values, str):
                out.append((path, [values], None))
            else:
                out.append((path, [str(v) for v in values], None))
        return out
    return [parse_choice(s, option) for s in spec]


def load_table(directory: str | os.PathLike[str]) -> pd.DataFrame:
    """A sweep directory's table (``sweep.parquet``, through :func:`tcplab.sweep.load_sweep`),
    with a one-line error when it is not a complete sweep."""
    d = Path(directory)
    if not d.is_dir():
        raise ScenarioError(
            "is not a directory", file=str(d),
            expected="a directory written by tcplab sweep (or a scenario with --choose PATH=V1,V2)",
        )  # fmt: skip
    from tcplab.sweep import load_sweep

    return load_sweep(d).table


def recommend_table(
    table: pd.DataFrame,
    *,
    choose: ParamSpec,
    over: ParamSpec = None,
    maximize: str | None = None,
    minimize: str | None = None,
    subject_to: Sequence[str] = (),
    objective: str | None = None,
    sweep_dir: str | os.PathLike[str] | None = None,
) -> Recommendation:
    """The recommendation from a sweep table (ARCH12 SCHEMA) already in memory."""
    chosen = _specs(choose, "--choose")
    overs = _specs(over, "--over")
    for path, _, rng in chosen + overs:
        if rng is not None:
            raise ScenarioError(
                f"{path}={rng}: a range only makes sense when recommend runs the sweep",
                file="--over",
                expected="PATH or PATH=V1,V2 with a sweep directory",
            )
    obj = build_objective(
        list(table.columns), maximize=maximize, minimize=minimize, subject_to=subject_to, objective=objective
    )
    restrict = {p: v for p, v, _ in chosen + overs if v}
    selection = select(table, obj, [p for p, _, _ in chosen], [p for p, _, _ in overs], restrict)
    return Recommendation(selection, Path(sweep_dir) if sweep_dir else None, table)


def is_sweep_dir(source: Any) -> bool:
    """Whether ``source`` names a sweep directory (``sweep.parquet`` or ``sweep.json`` in it)."""
    return (
        isinstance(source, (str, os.PathLike))
        and Path(source).is_dir()
        and ((Path(source) / "sweep.parquet").exists() or (Path(source) / "sweep.json").exists())
    )


def recommend(
    source: Any,
    *,
    choose: ParamSpec,
    over: ParamSpec = None,
    maximize: str | None = None,
    minimize: str | None = None,
    subject_to: Sequence[str] = (),
    objective: str | None = None,
    seeds: int | None = None,
    seed: int | None = None,
    n: int | None = None,
    overrides: Sequence[str] | None = None,
    out: str | os.PathLike[str] | None = None,
    jobs: int | None = None,
    dask: str | None = None,
    force: bool = False,
    quiet: bool = True,
    keep_runs: bool = False,
) -> Recommendation:
    """Recommend a setting (module doc).

    ``source``: a sweep directory, a ``SweepResult`` (``.table``, ``.dir``), a DataFrame of
    the sweep table, or a scenario (file, ``builtin:NAME``, :class:`~tcplab.Scenario`); with a
    scenario, ``choose`` and ``over`` give values and the sweep runs first (into
    ``out/sweep`` when ``out`` is given; ``seeds`` seeds per point, ``n`` random points)."""
    import pandas as pd

    kw = dict(maximize=maximize, minimize=minimize, subject_to=subject_to, objective=objective)
    if isinstance(source, pd.DataFrame):
        rec = recommend_table(source, choose=choose, over=over, **kw)
    elif hasattr(source, "table") and not isinstance(source, (str, os.PathLike)):
        rec = recommend_table(source.table, choose=choose, over=over, sweep_dir=getattr(source, "dir", None), **kw)
    elif is_sweep_dir(source):
        rec = recommend_table(load_table(source), choose=choose, over=over, sweep_dir=source, **kw)
    else:
        from tcplab.recommend.objective import check_grammar
        from tcplab.recommend.scenario import sweep_for_recommend

        check_grammar(**kw)  # before anything runs
        result = sweep_for_recommend(
            source,
            choose=_specs(choose, "--choose"),
            over=_specs(over, "--over"),
            seeds=seeds,
            seed=seed,
            n=n,
            overrides=overrides,
            out=out,
            jobs=jobs,
            dask=dask,
            force=force,
            quiet=quiet,
            keep_runs=keep_runs,
        )
        rec = recommend_table(
            result.table,
            choose=[p for p, _, _ in _specs(choose, "--choose")],
            over=[p for p, _, _ in _specs(over, "--over")],
            sweep_dir=getattr(result, "dir", None),
            **kw,
        )
    if out is not None:
        rec.write(out)
    return rec


class _CallableModule(types.ModuleType):
    """``tcplab.recommend(...)`` calls :func:`recommend`: the package and the function share a
    name (as ``tcplab.sweep``), and importing a submodule binds ``tcplab.recommend`` to the
    package, so the package itself is callable."""

    def __call__(self, *args: Any, **kwargs: Any) -> Recommendation:
        return recommend(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

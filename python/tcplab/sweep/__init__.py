"""Sweeps: one scenario over a grid (or a random sample) of settings x seeds, as one table.

The model: a sweep is a *plan* and a directory.

* The plan (:func:`plan_sweep`): the scenario, its base ``--set`` overrides, the swept
  parameters and their points (:mod:`tcplab.sweep.space`: ``--grid PATH=v1,v2``,
  ``--random PATH=lo..hi -n N``), and the seeds ``BASE .. BASE+K-1`` (``--seeds K``; BASE is
  ``--seed`` or the scenario's seed). Every point x seed is validated before anything runs
  and gets its run key (:mod:`tcplab.sweep.keys`: a hash of the resolved configuration and
  the engine version); points that resolve to one configuration share a run.
* Running it (:func:`run_sweep`): each distinct key not done yet goes to an executor
  (:mod:`tcplab.sweep.executors`: a local process pool by default, or a Dask cluster,
  :mod:`tcplab.sweep.dask`), which returns the run's rows (:mod:`tcplab.sweep.rows`); they
  are written to ``OUT/rows/KEY.parquet`` as each run ends, failures to
  ``OUT/failed/KEY.json`` (a failed run never aborts the sweep). At the end the tidy table
  ``OUT/sweep.parquet`` (one row per run and flow, SCHEMA in ARCH12 and
  :mod:`tcplab.sweep.rows`) and the views (:mod:`tcplab.views.sweep`: plots, report.html)
  are written. Rerunning the same sweep into the same directory resumes it
  (:mod:`tcplab.sweep.store`).

The table is identical whichever executor ran it and in whatever order the runs ended: runs
are deterministic, rows are computed the same way everywhere, and the table is sorted by
(point, seed, flow_index).

Python API::

    res = tcplab.sweep("builtin:cubic-vs-bbr-lossy", grid={"flows.0.cc": ["cubic", "bbr"]},
                       seeds=3, overrides=["duration=10s"], out="runs/sweep")
    res.table            # pandas DataFrame
    res.failures         # {key: {"key", "point", "seed", "overrides", "error"}}
    tcplab.load_sweep("runs/sweep").table

(``tcplab.sweep`` is this package; calling it calls :func:`sweep`.)

Floor 6 (the commands' packages): may import runner and compare, views (the sweep's
views, :mod:`tcplab.views.sweep`, take its table and plan as data and import nothing of
this package), exports, results, the engine, the scenario and the leaves; never another
command package (:mod:`tcplab.recommend` imports this one) nor the commands. A submodule
imports the submodule that defines a name (:mod:`~tcplab.sweep.errors`, ...), never this
``__init__``. :mod:`~tcplab.sweep.bar` is the progress a sweep shows (``tcplab sweep``,
and recommend's sweep).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tcplab.errors import ScenarioError
from tcplab.literals import json_loads
from tcplab.sweep.errors import SweepError
from tcplab.sweep.keys import engine_version, run_key
from tcplab.sweep.space import Parameter, Point, plan_points

if TYPE_CHECKING:
    import pandas as pd

    from tcplab.scenario import Scenario
    from tcplab.sweep.executors import Executor, PointJob, PointOutcome

__all__ = [
    "SweepPlan",
    "SweepResult",
    "plan_sweep",
    "run_sweep",
    "load_sweep",
    "sweep",
    "SweepError",
    "INT64_MAX",
    "MAX_RUNS",
]

INT64_MAX = 2**63 - 1
#: Runs (points x seeds) one sweep may hold: every one is validated and keyed before the
#: first runs (about 1 ms each), and sweep.json lists them all; beyond this, split the
#: sweep or sample the space (--random ... -n N).
MAX_RUNS = 100_000


@dataclass
class Entry:
    """One point x seed of the plan and its run key."""

    point: Point
    seed: int
    key: str


@dataclass
class SweepPlan:
    """A validated sweep, nothing run yet (module doc)."""

    source: str
    scenario_name: str
    base_overrides: list[str]
    parameters: list[Parameter]
    points: list[Point]
    seeds: list[int]
    sample_seed: int
    engine: str
    entries: list[Entry]
    #: key -> (first entry with it, its validated scenario)
    scenarios: dict[str, tuple[Entry, Scenario]] = field(default_factory=dict)
    core: Any = None

    @property
    def keys(self) -> list[str]:
        """Distinct run keys, in plan order."""
        return list(self.scenarios)

    def overrides_of(self, entry: Entry) -> list[str]:
        return [*self.base_overrides, *entry.point.texts(self.parameters), f"seed={entry.seed}"]

    def to_json(self, *, status: str, done: int = 0, failed: int = 0) -> dict[str, Any]:
        from tcplab.version import __version__

        by_point: dict[int, dict[str, Any]] = {}
        for e in self.entries:
            p = by_point.setdefault(
                e.point.index,
                {
                    "point": e.point.index,
                    "values": dict(zip([p.path for p in self.parameters], e.point.labels, strict=True)),
                    "keys": [],
                },
            )
            p["keys"].append(e.key)
        return {
            "scenario": {"source": self.source, "name": self.scenario_name},
            "base_overrides": list(self.base_overrides),
            "parameters": [p.to_json() for p in self.parameters],
            "seeds": list(self.seeds),
            "sample_seed": self.sample_seed,
            "versions": {"engine": self.engine, "tcplab": __version__},
            "points": list(by_point.values()),
            "runs": len(self.scenarios),
            "status": status,
            "counts": {"runs": len(self.scenarios), "done": done, "failed": failed},
        }


def _relabel(error: ScenarioError, parameters: Sequence[Parameter]) -> ScenarioError:
    """Errors in a swept value name ``--grid``/``--random`` instead of ``--set``."""
    for e in error.errors:
        for p in parameters:
            if e.file == "--set" and (e.path == p.path or e.path.startswith(p.path + ".")):
                e.file = "--grid" if p.kind == "grid" else "--random"
    if error.errors:
        error.file = error.errors[0].file
    error.args = (error.line(),)
    return error


def _at_point(error: ScenarioError, point: Point, parameters: Sequence[Parameter]) -> ScenarioError:
    """A run refused for its cost (``limits.cpu_time``, a field no parameter sets) names the
    point it is for: ``--grid duration=31536000s: limits.cpu_time: ...`` (each point is
    checked: one may cost hours where the others cost seconds)."""
    option = "--grid" if any(p.kind == "grid" for p in parameters) else "--random"
    for e in error.errors:
        if e.path == "limits.cpu_time" and e.file not in ("--grid", "--random"):
            e.file = " ".join([option, *point.texts(parameters)])
            e.lineno = None
    if error.errors:
        error.file, error.lineno = error.errors[0].file, error.errors[0].lineno
    error.args = (error.line(),)
    return error


def plan_sweep(
    scenario: str | Path | Mapping[str, Any] | Scenario,
    grid: Iterable[str] | Mapping[str, Sequence[Any]] | None = None,
    random: Iterable[str] | None = None,
    n: int | None = None,
    *,
    seeds: int = 3,
    seed: int | None = None,
    overrides: Iterable[str] | Mapping[str, Any] | None = None,
    sample_seed: int = 0,
    core: Any = None,
) -> SweepPlan:
    """Validate every point x seed and key it; nothing runs, nothing is written.

    Raises:
        ScenarioError: a bad ``--grid``/``--random``/``--set``, or a point that does not
            validate (one line naming the override).
    """
    from tcplab.loader import scenario_data, validate_with_overrides
    from tcplab.overrides import Override, parse_overrides

    if isinstance(grid, str):
        grid = [grid]
    if isinstance(random, str):
        random = [random]
    if grid is not None and not isinstance(grid, (Mapping, Iterable)):
        raise ScenarioError(
            f"{grid!r} is not a grid", file="--grid", expected='{"PATH": [V1, V2]} or ["PATH=V1,V2", ...]'
        )
    if random is not None and not isinstance(random, Iterable):
        raise ScenarioError(f"{random!r} is not a list of ranges", file="--random", expected='["PATH=LO..HI", ...]')
    if not isinstance(seeds, int) or isinstance(seeds, bool) or seeds < 1:
        raise ScenarioError(f"{seeds!r} seeds", file="--seeds", expected="a number of seeds of 1 or more")
    for option, value, low in (("--seed", seed, 0), ("-n", n, 1), ("--sample-seed", sample_seed, 0)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < low):
            raise ScenarioError(f"{value!r}", file=option, expected=f"an integer of {low} or more")
    if sample_seed > INT64_MAX:
        raise ScenarioError(f"{sample_seed}", file="--sample-seed", expected=f"an integer from 0 to {INT64_MAX}")
    base = parse_overrides(overrides)
    for ov in base:
        if ov.varies:
            raise ScenarioError(
                f"{len(ov.values)} values given ({', '.join(ov.labels)})",
                file="--set",
                path=ov.dotted,
                expected="one value (sweep several with --grid PATH=V1,V2)",
            )
    parameters, points = plan_points(
        grid,
        random,
        n,
        sample_seed=sample_seed,
        base_paths=[ov.dotted for ov in base] + ["seed"],
        seeds=seeds,
        max_runs=MAX_RUNS,
    )
    label, data = scenario_data(scenario)
    if seed is None:
        try:
            first = validate_with_overrides(data, [*base, *points[0].overrides(parameters)], label)
        except ScenarioError as e:
            raise _at_point(_relabel(e, parameters), points[0], parameters) from None
        seed = int(first.seed)
    if seed < 0 or seed + seeds - 1 > INT64_MAX:
        raise ScenarioError(
            f"seeds {seed} to {seed + seeds - 1}", file="--seed", expected=f"seeds from 0 to {INT64_MAX} in a sweep"
        )
    seed_list = list(range(seed, seed + seeds))
    engine = engine_version(core)
    entries: list[Entry] = []
    scenarios: dict[str, tuple[Entry, Scenario]] = {}
    name = ""
    for point in points:
        point_ovs = point.overrides(parameters)
        for s in seed_list:
            seed_ov = Override(text=f"seed={s}", path=("seed",), values=(s,), labels=(str(s),))
            try:
                sc = validate_with_overrides(data, [*base, *point_ovs, seed_ov], label)
            except ScenarioError as e:
                raise _at_point(_relabel(e, parameters), point, parameters) from None
            name = name or sc.name
            key = run_key(sc.to_core(), engine)
            entry = Entry(point=point, seed=s, key=key)
            entries.append(entry)
            if key not in scenarios:
                scenarios[key] = (entry, sc)
    return SweepPlan(
        source=label,
        scenario_name=name,
        base_overrides=[f"{ov.dotted}={ov.labels[0]}" for ov in base],
        parameters=parameters,
        points=points,
        seeds=seed_list,
        sample_seed=sample_seed,
        engine=engine,
        entries=entries,
        scenarios=scenarios,
        core=core,
    )


def _check_resume(stored: dict[str, Any], plan: SweepPlan, directory: Path) -> None:
    """Refuse to resume into a sweep of another scenario, base overrides or engine."""
    problems = []
    old_sc = stored.get("scenario") or {}
    if old_sc.get("source") != plan.source or old_sc.get("name") != plan.scenario_name:
        problems.append(f"scenario {old_sc.get('source')} ({old_sc.get('name')}), not {plan.source}")
    if list(stored.get("base_overrides") or []) != plan.base_overrides:
        old = ", ".join(stored.get("base_overrides") or []) or "none"
        problems.append(f"base overrides {old}, not {', '.join(plan.base_overrides) or 'none'}")
    old_engine = (stored.get("versions") or {}).get("engine")
    if old_engine != plan.engine:
        problems.append(f"engine {old_engine}, not {plan.engine}")
    if problems:
        raise SweepError(
            f"holds a sweep made with {problems[0]}",
            file=str(directory),
            expected="the same scenario, --set values and engine to resume (or --force to start over, or another -o)",
        )


@dataclass
class Progress:
    """What a progress callback gets after each run: counts so far and the outcome."""

    done: int
    failed: int
    total: int
    skipped: int
    outcome: PointOutcome | None
    elapsed_s: float


def _make_executor(jobs: int | None, dask: str | None) -> Executor:
    if dask is not None:
        from tcplab.sweep.dask import DaskExecutor

        return DaskExecutor(dask)
    from tcplab.sweep.executors import LocalExecutor

    return LocalExecutor(jobs)


def run_sweep(
    plan: SweepPlan,
    out: str | Path,
    *,
    jobs: int | None = None,
    dask: str | None = None,
    executor: Executor | None = None,
    keep_runs: bool = False,
    force: bool = False,
    plots: bool = True,
    progress: Callable[[Progress], None] | None = None,
    command: list[str] | None = None,
) -> SweepResult:
    """Run a planned sweep into ``out`` (resuming it when ``out`` holds this sweep) and
    return its result. ``progress(Progress)`` is called once before the first run and after
    each. KeyboardInterrupt (SIGINT, SIGTERM) leaves sweep.json "interrupted" and the rows
    done so far, and propagates."""
    from tcplab.sweep.executors import PointJob
    from tcplab.sweep.store import SweepStore

    if jobs is not None and dask is not None:
        raise SweepError("--jobs and --dask given together", file="--dask", expected="one executor, not both")
    if jobs is not None and (not isinstance(jobs, int) or isinstance(jobs, bool) or not 1 <= jobs <= 1024):
        raise SweepError(f"{jobs!r}", file="--jobs", expected="a number of processes, an integer from 1 to 1024")
    if dask is not None and not isinstance(dask, str):
        raise SweepError(
            f"{dask!r} is not an address", file="--dask", expected="a scheduler address such as tcp://HOST:8786"
        )
    store = SweepStore(out)
    stored = store.check(force=force)
    if stored is not None:
        _check_resume(stored, plan, store.dir)
    if executor is None:
        executor = _make_executor(jobs, dask)  # a Dask cluster is checked before anything is written
    if plots:
        from tcplab.sweep.executors import LocalExecutor

        if isinstance(executor, LocalExecutor) and executor.when_started is None:
            # the parent waits while the first batches run: it imports matplotlib then, not
            # after the last run, when the figures are drawn
            executor.when_started = _warm_views
    try:
        store.start(plan.to_json(status="running"), fresh=force)
        keep_dir = str(store.dir.resolve() / "runs") if keep_runs else None
        if keep_dir is not None:
            Path(keep_dir).mkdir(exist_ok=True)
        todo: list[PointJob] = []
        for key, (entry, sc) in plan.scenarios.items():
            if store.done(key):
                damage = store.damaged_rows(key)
                if damage is None:
                    continue
                print(f"warning: {store.rows_path(key)} is damaged ({damage}); running it again", file=sys.stderr)
                store.rows_path(key).unlink()
            todo.append(
                PointJob(
                    key=key,
                    scenario=sc,
                    engine=plan.engine,
                    overrides=plan.overrides_of(entry),
                    keep_dir=keep_dir,
                    core=plan.core,
                    command=command,
                )
            )
        total = len(plan.scenarios)
        skipped = total - len(todo)
        done, failed = skipped, 0
        fresh: dict[str, Any] = {}  # rows of the runs of this invocation: not read back
        started = time.perf_counter()
        if progress is not None:
            progress(Progress(done, failed, total, skipped, None, 0.0))
        try:
            for i, outcome in executor.map_unordered(todo, _run_point_fn()) if todo else iter(()):
                job = todo[i]
                entry = plan.scenarios[job.key][0]
                if outcome.ok:
                    fresh[job.key] = store.write_rows(job.key, outcome.rows or [])
                else:
                    failed += 1
                    store.write_failure(
                        job.key,
                        {
                            "key": job.key,
                            "point": entry.point.index,
                            "seed": entry.seed,
                            "overrides": plan.overrides_of(entry),
                            "error": outcome.error,
                        },
                    )
                done += 1
                if progress is not None:
                    progress(Progress(done, failed, total, skipped, outcome, time.perf_counter() - started))
        except BaseException:
            store.mark_unfinished(plan.to_json(status="interrupted", done=done - failed, failed=failed))
            raise
        result = _collect(plan, store, fresh)
        try:
            store.write_table(result._arrow)
            result.dir = store.dir
            if plots:
                from tcplab.views.sweep import write_sweep_views

                write_sweep_views(result.table, result.plan, result.failures, store.dir, _local_jobs(executor))
            store.write_plan(result.plan)  # "complete" last: only a finished sweep says so
        except BaseException:
            store.mark_unfinished(plan.to_json(status="interrupted", done=done - failed, failed=failed))
            raise
        return result
    finally:
        executor.close()
        store.close()


def _warm_views() -> None:
    """Import what drawing the sweep's figures needs (~0.2 s, matplotlib)."""
    import matplotlib.backends.backend_agg  # noqa: F401
    import matplotlib.figure  # noqa: F401

    import tcplab.views.sweep  # noqa: F401


def _local_jobs(executor: Any = None) -> int:
    """Processes this machine may draw the figures in: the local pool's ``jobs``; for Dask
    (the runs were elsewhere) or no executor, this machine's cores."""
    from tcplab.sweep.executors import LocalExecutor, default_jobs

    return executor.jobs if isinstance(executor, LocalExecutor) else default_jobs()


def _run_point_fn() -> Callable[[PointJob], PointOutcome]:
    from tcplab.sweep.executors import run_point

    return run_point


def _collect(plan: SweepPlan, store: Any, fresh: Mapping[str, Any] | None = None) -> SweepResult:
    """Every run's rows (``fresh`` ones as they are, the others read back) or failure, and
    the table."""
    from tcplab.sweep.rows import build_table, read_run_rows

    run_rows: dict[str, Any] = {}
    failures: dict[str, dict[str, Any]] = {}
    for key in plan.scenarios:
        if fresh and key in fresh:
            run_rows[key] = fresh[key]
        elif store.done(key):
            run_rows[key] = read_run_rows(store.rows_path(key))
        else:
            failures[key] = store.failure(key) or {"key": key, "error": "no result"}
    entries = [
        (e.point, e.seed, e.key, None if e.key in run_rows else str(failures[e.key].get("error") or "no result"))
        for e in plan.entries
    ]
    arrow = build_table(plan.parameters, entries, run_rows)
    summary = plan.to_json(status="complete", done=len(run_rows), failed=len(failures))
    return SweepResult(summary, arrow, failures, run_rows=run_rows)


class SweepResult:
    """A sweep's table and what made it.

    Attributes:
        table: the tidy table (pandas DataFrame, SCHEMA in ARCH12).
        failures: run key -> failure record (``key``, ``point``, ``seed``, ``overrides``,
            ``error``).
        plan: the content of sweep.json (scenario, parameters, seeds, points, versions).
        dir: the sweep directory (None for a sweep run without ``out`` and not written).
    """

    def __init__(
        self,
        plan: dict[str, Any],
        arrow: Any,
        failures: Mapping[str, dict[str, Any]] | None = None,
        *,
        run_rows: Mapping[str, Any] | None = None,
        directory: Path | None = None,
    ):
        self.plan = plan
        self._arrow = arrow
        self.failures = dict(failures or {})
        self._run_rows = dict(run_rows or {})
        self.dir = directory
        self._table: pd.DataFrame | None = None

    @property
    def table(self) -> pd.DataFrame:
        if self._table is None:
            self._table = self._arrow.to_pandas()
        return self._table

    @property
    def parameters(self) -> list[str]:
        """The swept parameters' paths (table columns), in plan order."""
        return [p["path"] for p in self.plan.get("parameters", [])]

    @property
    def ok(self) -> bool:
        return not self.failures

    def write(self, directory: str | Path, *, force: bool = False, plots: bool = True) -> Path:
        """Write this result as a sweep directory (sweep.json, rows, failures, the table,
        the views); a sweep run with ``out`` is already written (``.dir``)."""
        from tcplab.sweep.rows import write_run_rows
        from tcplab.sweep.store import SweepStore

        store = SweepStore(directory)
        store.check(force=True) if force else _check_new(store)
        try:
            store.start(dict(self.plan, status="running"), fresh=force)
            for key, rows in self._run_rows.items():
                write_run_rows(rows.to_pylist(), store.rows_path(key))
            for key, record in self.failures.items():
                store.write_failure(key, record)
            try:
                store.write_table(self._arrow)
                self.dir = store.dir
                if plots:
                    from tcplab.views.sweep import write_sweep_views

                    write_sweep_views(self.table, self.plan, self.failures, store.dir, _local_jobs())
                store.write_plan(dict(self.plan, status="complete"))  # last (see run_sweep)
            except BaseException:
                store.mark_unfinished(dict(self.plan, status="interrupted"))
                raise
        finally:
            store.close()
        return store.dir

    def __repr__(self) -> str:
        sc = (self.plan.get("scenario") or {}).get("name")
        runs, rows = self.plan.get("runs"), self._arrow.num_rows
        return f"<SweepResult {sc!r} runs={runs} rows={rows} failed={len(self.failures)}>"


def _check_new(store: Any) -> None:
    if store.check() is not None:
        raise SweepError(
            "already holds a sweep", file=str(store.dir), expected="a new or empty directory (or force=True)"
        )


def load_sweep(directory: str | Path) -> SweepResult:
    """A sweep directory's table and plan (one-line error if it is not a complete sweep)."""
    import pyarrow.parquet as pq

    from tcplab.sweep.store import SweepStore, marker_kind

    store = SweepStore(directory)
    if not store.dir.is_dir() or marker_kind(store.dir) != "sweep":
        raise SweepError("is not a sweep directory written by tcplab", file=str(directory), expected="a sweep's -o DIR")
    try:
        plan = store.read_plan()
    except (OSError, ValueError) as e:
        raise SweepError(f"cannot read sweep.json ({e})", file=str(directory), expected="a sweep directory") from None
    if plan.get("status") != "complete":
        raise SweepError(
            f"the sweep is {plan.get('status')} (sweep.json), not complete",
            file=str(directory),
            expected="a complete sweep: rerun its tcplab sweep command to resume it",
        )
    if not store.table_path.is_file():
        raise SweepError(
            "sweep.parquet is missing",
            file=str(directory),
            expected="a complete sweep: rerun its tcplab sweep command to write the table again",
        )
    try:
        table = pq.read_table(store.table_path)
    except (OSError, ValueError) as e:  # ArrowInvalid is a ValueError
        raise SweepError(
            f"sweep.parquet cannot be read ({' '.join(str(e).split())})",
            file=str(directory),
            expected="a complete sweep: rerun its tcplab sweep command to write the table again",
        ) from None
    failures = {}
    failed_dir = store.dir / "failed"
    if failed_dir.is_dir():
        for f in sorted(failed_dir.glob("*.json")):
            try:
                failures[f.stem] = json_loads(f.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                failures[f.stem] = {"key": f.stem, "error": "unreadable failure record"}
    return SweepResult(plan, table, failures, directory=store.dir)


def sweep(
    scenario: str | Path | Mapping[str, Any] | Scenario,
    grid: Iterable[str] | Mapping[str, Sequence[Any]] | None = None,
    random: Iterable[str] | None = None,
    n: int | None = None,
    seeds: int = 3,
    out: str | Path | None = None,
    jobs: int | None = None,
    dask: str | None = None,
    overrides: Iterable[str] | Mapping[str, Any] | None = None,
    *,
    seed: int | None = None,
    sample_seed: int = 0,
    keep_runs: bool = False,
    force: bool = False,
    plots: bool | None = None,
    core: Any = None,
) -> SweepResult:
    """Plan, validate and run a sweep; return its :class:`SweepResult`.

    ``grid``: ``{"flows.0.cc": ["cubic", "bbr"]}`` or ``["flows.0.cc=cubic,bbr"]``;
    ``random``: ``["links.1.loss=0%..1%"]`` with ``n`` points; ``seeds``: K seeds from
    ``seed`` (default: the scenario's); ``overrides``: base ``--set`` values. With ``out``
    the sweep directory is written there (and resumed if it holds this sweep); without,
    the runs go through a temporary directory and only the result is kept (``.write(DIR)``
    saves it). ``jobs``: local processes (default: one per core); ``dask``: a scheduler
    address instead. ``core``: an engine double (tests; local executor only).
    """
    plan = plan_sweep(
        scenario, grid, random, n, seeds=seeds, seed=seed, overrides=overrides, sample_seed=sample_seed, core=core
    )
    if out is not None:
        return run_sweep(
            plan, out, jobs=jobs, dask=dask, keep_runs=keep_runs, force=force, plots=True if plots is None else plots
        )
    tmp = Path(tempfile.mkdtemp(prefix="tcplab-sweep-"))
    try:
        result = run_sweep(plan, tmp / "sweep", jobs=jobs, dask=dask, plots=bool(plots))
        result.dir = None
        return result
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class _CallableModule(types.ModuleType):
    """``tcplab.sweep(...)`` calls :func:`sweep`: the package and the function share a name."""

    def __call__(self, *args: Any, **kwargs: Any) -> SweepResult:
        return sweep(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

"""Where a sweep's runs execute: the Executor protocol, one run's job, the local pool.

The model: a sweep hands an executor a list of :class:`PointJob` (one per distinct run key)
and the top-level function :func:`run_point`; the executor yields ``(job_index,
PointOutcome)`` in completion order (``map_unordered``). A job is small (the validated
scenario, a few strings); an outcome carries the run's rows (:mod:`tcplab.sweep.rows`, a
list of dicts: a few KB), never a :class:`~tcplab.results.Result` (megabytes of time series
that the sweep does not need). The parent writes each outcome's rows as it arrives.

* :class:`LocalExecutor` (the default, ``--jobs N``, N = cores by default): forked worker
  processes, at most N at a time (:mod:`tcplab.procpool`, shared with ``tcplab compare``:
  die-with-parent, SIGINT/SIGTERM handled by the parent). Fork keeps a worker's start to a
  few milliseconds: the parent imports the engine, pandas and pyarrow once
  (:func:`warm_imports`) and every child inherits them. A fresh child still pays for the
  memory it touches first (copy-on-write and first-touch page faults: ~3,500 for a short
  run), and for its exit: with a process per run the pool cost 22-27 ms of CPU per run more
  than one process, with batches 6-7 ms (bench/sweep_speed.py). So a worker runs a short
  batch of runs in a row (:func:`batch_sizes`: at most :data:`MAX_BATCH`, shrinking
  to single runs at the end so the workers finish together). A worker that dies fails only
  its run: the runs of a batch whose worker died are run again one per process.
* :class:`tcplab.sweep.dask.DaskExecutor` (``--dask ADDRESS``): an existing Dask
  distributed cluster.

:func:`run_point` never raises: an engine error, an exception, a run directory that cannot
be written all become the outcome's ``error`` (one line). A worker that dies is the
executor's to report, as an outcome with an error. Without ``--keep-runs`` a worker does not
build the run's time-series frames (:func:`rows_result`): the rows do not use them.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from tcplab.scenario import Scenario

__all__ = [
    "PointJob",
    "PointOutcome",
    "run_point",
    "Executor",
    "LocalExecutor",
    "warm_imports",
    "default_jobs",
    "batch_sizes",
    "MAX_BATCH",
]


@dataclass
class PointJob:
    """One run of a sweep: the validated scenario (seed and overrides applied), its key, the
    engine version the key was made with, and where to keep its run directory (None: not
    kept). ``core`` is an engine double (tests; the local executor only)."""

    key: str
    scenario: Scenario
    engine: str
    overrides: list[str] = field(default_factory=list)
    keep_dir: str | None = None
    core: Any = None
    command: list[str] | None = None


@dataclass
class PointOutcome:
    """What came back: the rows (None when the run failed) or a one-line error, the
    engine's warnings, and the worker's wall time for the run."""

    key: str
    rows: list[dict[str, Any]] | None = None
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None and self.rows is not None


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def rows_result(scenario: Scenario, core: Any = None) -> Any:
    """Simulate ``scenario`` and return a :class:`~tcplab.results.Result` complete for the
    table's rows (summary, links, hosts, counters, apps, the hosts' series) but with empty
    per-flow and per-queue time series: the rows never read them, and turning them into
    frames (and finding stuck episodes in them) is a third of a short run's Python work in
    each worker. Engine errors name the scenario's YAML paths, as :func:`tcplab.run`'s."""
    from dataclasses import replace

    from tcplab.engine import run_core
    from tcplab.errors import EngineError
    from tcplab.results import Result

    config = scenario.to_core()
    started = time.perf_counter()
    try:
        output = run_core(config, core=core)
    except EngineError as e:
        from tcplab.scenario.checks import engine_message

        raise type(e)(engine_message(scenario, str(e))) from e
    output = replace(output, timeseries=output.timeseries.iloc[:0], queues=output.queues.iloc[:0])
    return Result(scenario, config, output, wall_time_s=time.perf_counter() - started)


def run_point(job: PointJob) -> PointOutcome:
    """Run one job in this process and return its rows or its error (never raises an
    Exception; a top-level function so that process pools and Dask can pickle it)."""
    from tcplab.errors import EngineError
    from tcplab.runner import run
    from tcplab.sweep.rows import rows_from_result

    started = time.perf_counter()
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if job.keep_dir is None:
                result = rows_result(job.scenario, job.core)
            else:
                result = run(job.scenario, core=job.core, applied_overrides=job.overrides, command=job.command)
        if result.engine_version != job.engine:
            return PointOutcome(
                job.key,
                error=f"engine version {result.engine_version} on this worker, the sweep's runs are keyed "
                f"for engine {job.engine}",
            )
        rows = rows_from_result(result)
        if job.keep_dir is not None:
            result.write(os.path.join(job.keep_dir, job.key), overwrite=True, plots=False)
        error = None
    except EngineError as e:
        rows, error = None, _one_line(f"engine: {e}")
    except Exception as e:  # noqa: BLE001 - any failure is this run's, reported in one line
        rows, error = None, _one_line(f"{type(e).__name__}: {e}")
    texts = list(dict.fromkeys(_one_line(str(w.message)) for w in caught))
    return PointOutcome(job.key, rows=rows, error=error, warnings=texts, wall_s=time.perf_counter() - started)


class Executor(Protocol):
    """Runs jobs; yields ``(job_index, outcome)`` as each completes, in any order."""

    def map_unordered(
        self, jobs: Sequence[PointJob], fn: Callable[[PointJob], PointOutcome]
    ) -> Iterator[tuple[int, PointOutcome]]: ...

    def close(self) -> None: ...


def default_jobs() -> int:
    """Worker processes of the local pool: one per core."""
    return max(1, os.cpu_count() or 1)


def warm_imports(core: Any = None) -> None:
    """Import, once in the parent, everything a run needs (the engine, pandas, pyarrow, the
    results and views modules), so that forked workers inherit them instead of importing
    them per run."""
    import pyarrow.parquet  # noqa: F401

    import tcplab.results  # noqa: F401
    import tcplab.results.paths  # noqa: F401
    import tcplab.runner  # noqa: F401
    import tcplab.sweep.rows  # noqa: F401
    import tcplab.views  # noqa: F401

    if core is None:
        from tcplab.engine import import_core

        import_core()


#: Runs a local worker process runs in a row, at most. A batch's rows reach the parent (and
#: rows/KEY.parquet) when the batch ends, so an interrupted sweep loses at most this many
#: finished runs per worker (resume reruns them); small enough for that, large enough that
#: the cost of a fresh process falls on a few runs instead of one.
MAX_BATCH = 4


def batch_sizes(n_runs: int, workers: int, max_batch: int = MAX_BATCH) -> list[int]:
    """Sizes of the consecutive batches that cover ``n_runs`` runs
    (:func:`tcplab.procpool.guided_batches`)."""
    from tcplab.procpool import guided_batches

    return guided_batches(n_runs, workers, max_batch)


def _run_batch(batch: tuple[Callable[[PointJob], PointOutcome], list[PointJob]]) -> list[PointOutcome]:
    """Body of a worker process: the batch's runs in a row (a top-level function: picklable)."""
    fn, jobs = batch
    return [fn(job) for job in jobs]


class LocalExecutor:
    """Forked worker processes on this machine, ``jobs`` at a time, each running a short batch
    of runs (module doc)."""

    def __init__(self, jobs: int | None = None):
        self.jobs = default_jobs() if jobs is None else max(1, int(jobs))
        #: called once in the parent when the first workers run (procpool's ``when_started``)
        self.when_started: Callable[[], None] | None = None

    def map_unordered(
        self, jobs: Sequence[PointJob], fn: Callable[[PointJob], PointOutcome] = run_point
    ) -> Iterator[tuple[int, PointOutcome]]:
        from tcplab.procpool import WorkerFailure, map_in_processes

        warm_imports(jobs[0].core if jobs else None)
        batches: list[list[int]] = []
        for size in batch_sizes(len(jobs), self.jobs):
            first = batches[-1][-1] + 1 if batches else 0
            batches.append(list(range(first, first + size)))
        work = [(fn, [jobs[i] for i in batch]) for batch in batches]
        rerun: list[int] = []
        for b, outcomes in map_in_processes(
            work,
            _run_batch,
            self.jobs,
            name=lambda b: f"tcplab-sweep-{jobs[batches[b][0]].key}",
            when_started=self.when_started,
        ):
            if isinstance(outcomes, WorkerFailure):
                if len(batches[b]) > 1:  # which run killed it? each again in a process of its own
                    rerun.extend(batches[b])
                    continue
                outcomes = [PointOutcome(jobs[batches[b][0]].key, error=outcomes.reason)]
            yield from zip(batches[b], outcomes, strict=True)
        if rerun:
            for r, outcome in map_in_processes(
                [jobs[i] for i in rerun], fn, self.jobs, name=lambda r: f"tcplab-sweep-{jobs[rerun[r]].key}"
            ):
                if isinstance(outcome, WorkerFailure):
                    outcome = PointOutcome(jobs[rerun[r]].key, error=outcome.reason)
                yield rerun[r], outcome

    def close(self) -> None:
        pass

    def describe(self) -> str:
        return f"{self.jobs} local process{'es' if self.jobs != 1 else ''}"

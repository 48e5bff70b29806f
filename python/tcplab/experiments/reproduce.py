"""``tcplab reproduce``: plan every experiment's runs, simulate them in parallel, judge the claims.

The flow: each named experiment is *planned* (every run's scenario read, overridden and
validated: a mistake stops everything before a packet is simulated); all runs of all the
experiments go into one pool of worker processes (``jobs``, default one per core; the same
workers as ``tcplab compare``, so a run that dies fails only itself), each of which also
writes its run's directory (``NAME/runs/LABEL/``, a normal run directory with its tool
texts), so these are written in parallel as the simulations are; then, per experiment,
:meth:`Experiment.evaluate` judges the claims, :meth:`Experiment.explain` draws the
mechanism, and ``tcplab diagnose`` reads each cross-checked run's own tool texts.

:class:`Outcome` holds all of that for one experiment; :func:`reproduce` does it all inside
the output directory being written (atomically) and has :mod:`tcplab.views.reproduce` write
each experiment's report and the index.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tcplab.experiments.base import ClaimResult, Crosscheck, Experiment, Explanation, Run
from tcplab.experiments.catalog import load

if TYPE_CHECKING:
    from tcplab.compare import VariantFailure
    from tcplab.engine import Core
    from tcplab.results import Result

__all__ = ["Outcome", "CrosscheckResult", "run_experiments", "crosscheck_run", "reproduce"]

#: ``progress(done, total, label, failure)``: a run finished (``failure`` None, or why it failed).
ProgressFn = Callable[[int, int, str, "str | None"], None]


@dataclass
class CrosscheckResult:
    """What ``tcplab diagnose`` said about one run's tool texts, against what was expected."""

    check: Crosscheck
    found: list[str]  # finding ids, in diagnose's order
    summaries: list[str]  # one line per finding (id: summary)
    agree: bool
    note: str = ""
    #: expected findings diagnose did not name (with rule "any" the check can agree anyway)
    missing: list[str] = field(default_factory=list)
    #: with ``check.at_s``: the capture diagnosed (``OUT/NAME/captures/LABEL-at-<t>s/``: the
    #: run's texts with ``ss -tin`` as at that moment, tcplab.results.capture)
    capture: Path | None = None


@dataclass
class Outcome:
    """One experiment after its runs: results, claims judged, mechanism, cross-checks."""

    experiment: Experiment
    quick: bool
    runs: list[Run]
    results: dict[str, Result]
    failures: dict[str, str]
    claims: list[ClaimResult] = field(default_factory=list)
    explanations: list[Explanation] = field(default_factory=list)
    crosschecks: list[CrosscheckResult] = field(default_factory=list)
    wall_time_s: float = 0.0
    error: str | None = None  # evaluate/explain failed (e.g. a run failed): said in the report

    def counts(self) -> dict[str, int]:
        from tcplab.experiments.base import VERDICTS

        return {v: sum(1 for c in self.claims if c.verdict == v) for v in VERDICTS}


def _label(experiment: str, run: str) -> str:
    return f"{experiment}/{run}"


def crosscheck_run(
    run_dir: Path, check: Crosscheck, result: Result | None = None, captures_dir: Path | None = None
) -> CrosscheckResult:
    """``tcplab diagnose RUN_DIR`` (the run's nstat/ss/tc/ethtool/proc-stat texts) vs ``check``.
    With ``check.at_s`` (and the run's ``result``), diagnose reads a capture written to
    ``captures_dir/LABEL-at-<t>s/`` instead: the same texts with ``ss -tin`` as at that time."""
    from tcplab.diagnose import ParseError, diagnose_paths

    target, capture = run_dir, None
    if check.at_s is not None:
        if result is None or captures_dir is None:
            return CrosscheckResult(
                check,
                [],
                [],
                False,
                note="at_s needs the run's result and a captures directory",
                missing=list(check.expect),
            )
        from tcplab.results.capture import capture_name, write_capture

        capture = target = write_capture(result, Path(captures_dir) / capture_name(check.run, check.at_s), check.at_s)
    try:
        _host, findings = diagnose_paths([target])
    except ParseError as e:  # the run's own texts must parse: say so rather than crash
        return CrosscheckResult(
            check,
            [],
            [],
            False,
            note=f"diagnose could not read the run's texts: {e}",
            capture=capture,
            missing=list(check.expect),
        )
    ids = [f.id for f in findings]
    summaries = [f"{f.id}: {f.summary}" for f in findings]
    missing = [e for e in check.expect if e not in ids]
    expected = not missing if check.rule == "all" else (not check.expect or len(missing) < len(check.expect))
    ok = expected and not any(a in ids for a in check.absent)
    return CrosscheckResult(check, ids, summaries, ok, capture=capture, missing=missing)


def _run_and_write(item: tuple[Any, Path | None]) -> Result | VariantFailure | _WriteFailed:
    """One planned run (a :data:`tcplab.compare.Job`) and, with a directory, its run directory
    written there: in the worker process that ran it, so that the runs' directories are
    written in parallel, as the simulations are, not one by one after them all."""
    from tcplab.compare import run_variant_or_failure
    from tcplab.results import Result

    job, directory = item
    outcome = run_variant_or_failure(job)
    if directory is not None and isinstance(outcome, Result):
        try:
            outcome.write(directory, overwrite=True, plots=False)
        except OSError as e:  # a full disk stops the replay (the parent raises it), not one run
            return _WriteFailed(e)
    return outcome


#: Runs one worker process makes in a row, at most (:func:`tcplab.procpool.guided_batches`:
#: batches shrink to single runs at the end). A process costs its fork, the copy-on-write
#: faults of the parent's heap and its exit; a batch pays them once for up to this many
#: runs. Small: a batch returns its Results together, so a worker holds them all until then.
RUNS_PER_PROCESS = 3


def _run_and_write_batch(items: list[tuple[Any, Path | None]]) -> list[Result | VariantFailure | _WriteFailed]:
    """Body of a worker process: a batch of :func:`_run_and_write` in a row."""
    return [_run_and_write(item) for item in items]


@dataclass(frozen=True)
class _WriteFailed:
    """A run's directory could not be written (:func:`_run_and_write`): the parent raises ``error``."""

    error: OSError


def run_experiments(
    names: Sequence[str],
    *,
    quick: bool = False,
    jobs: int | None = None,
    out_dir: Path | None = None,
    core: Core | None = None,
    progress: Any = None,
) -> list[Outcome]:
    """Plan, run, judge. With ``out_dir``, every run's directory is written under
    ``out_dir/NAME/runs/LABEL`` and the cross-checks read them (without it, cross-checks are
    skipped: diagnose reads files). ``progress(done, total, label, failure)`` is called as each
    run finishes (``label`` is ``NAME/RUN``; ``failure`` None, or why the run failed), in
    parallel mode too."""
    from tcplab.compare import VariantFailure, default_jobs
    from tcplab.procpool import WorkerFailure, guided_batches, map_in_processes

    experiments = [load(n) for n in names]
    plans = [(e, e.plan(quick)) for e in experiments]  # validate everything first
    work = []
    for e, planned in plans:
        for r, sc in planned:
            job = (sc, _label(e.name, r.label), core, False, r.overrides_for(quick), None)
            work.append((job, Path(out_dir) / e.name / "runs" / r.label if out_dir is not None else None))
    if out_dir is not None:  # made here: two workers must not race to create them
        for e, _ in plans:
            (Path(out_dir) / e.name / "runs").mkdir(parents=True, exist_ok=True)
    n_jobs = jobs if jobs is not None else default_jobs(len(work))
    started = time.perf_counter()
    finished = 0

    def done(label: str, outcome: Result | VariantFailure) -> None:
        nonlocal finished
        finished += 1
        if progress is not None:
            failed = outcome.reason if isinstance(outcome, VariantFailure) else None
            progress(finished, len(work), label, failed)

    outcomes: dict[str, Result | VariantFailure] = {}
    if n_jobs > 1 and core is None:
        # Batches of consecutive runs per process; a batch whose process dies is run again
        # one run per process, so that the run that killed it fails alone.
        batches: list[list[int]] = []
        for size in guided_batches(len(work), n_jobs, RUNS_PER_PROCESS):
            first = batches[-1][-1] + 1 if batches else 0
            batches.append(list(range(first, first + size)))

        def take(i: int, outcome: Any) -> None:
            label = work[i][0][1]
            if isinstance(outcome, _WriteFailed):
                raise outcome.error
            outcomes[label] = VariantFailure(label, outcome.reason) if isinstance(outcome, WorkerFailure) else outcome
            done(label, outcomes[label])

        labelled = lambda b: f"tcplab-{work[batches[b][0]][0][1]}"  # noqa: E731 - the process's name in ps
        items = [[work[i] for i in batch] for batch in batches]
        rerun: list[int] = []
        for b, batch_outcome in map_in_processes(items, _run_and_write_batch, n_jobs, name=labelled):
            if isinstance(batch_outcome, WorkerFailure) and len(batches[b]) > 1:
                rerun.extend(batches[b])
                continue
            got = [batch_outcome] if isinstance(batch_outcome, WorkerFailure) else batch_outcome
            for i, outcome in zip(batches[b], got, strict=True):
                take(i, outcome)
        alone = lambda r: f"tcplab-{work[rerun[r]][0][1]}"  # noqa: E731
        for r, outcome in map_in_processes([work[i] for i in rerun], _run_and_write, n_jobs, name=alone):
            take(rerun[r], outcome)
    else:
        for item in work:
            label = item[0][1]
            outcome = _run_and_write(item)
            if isinstance(outcome, _WriteFailed):
                raise outcome.error
            outcomes[label] = outcome
            done(label, outcome)
    elapsed = time.perf_counter() - started
    result: list[Outcome] = []
    for e, planned in plans:
        runs = [r for r, _ in planned]
        got = {r.label: outcomes[_label(e.name, r.label)] for r in runs}
        oc = Outcome(
            experiment=e,
            quick=quick,
            runs=runs,
            results={k: v for k, v in got.items() if not isinstance(v, VariantFailure)},
            failures={k: v.reason for k, v in got.items() if isinstance(v, VariantFailure)},
            wall_time_s=elapsed,
        )
        exp_dir = None
        if out_dir is not None:
            exp_dir = Path(out_dir) / e.name
            (exp_dir / "plots").mkdir(parents=True, exist_ok=True)  # the runs are written already
        if oc.failures:
            oc.error = "; ".join(f"run {k} failed: {v}" for k, v in oc.failures.items())
        else:
            try:
                oc.claims = e.evaluate(oc.results, quick)
                oc.explanations = e.explain(oc.results, quick, (exp_dir or Path(".")) / "plots") if exp_dir else []
            except Exception as ex:  # noqa: BLE001 - one experiment's bug must not hide the others
                import traceback

                oc.error = f"{type(ex).__name__}: {ex}\n{traceback.format_exc()}"
            if exp_dir is not None:
                for check in e.crosschecks(quick):
                    if check.run in oc.results:
                        oc.crosschecks.append(
                            crosscheck_run(
                                exp_dir / "runs" / check.run, check, oc.results[check.run], exp_dir / "captures"
                            )
                        )
        result.append(oc)
    return result


def reproduce(
    names: Sequence[str],
    out_dir: Path,
    *,
    quick: bool = False,
    jobs: int | None = None,
    overwrite: bool = False,
    progress: ProgressFn | None = None,
    core: Any = None,
) -> list[Outcome]:
    """Run ``names`` and write ``out_dir`` (reports, index, run directories) atomically.

    Planning errors (a bad scenario, an unknown name) raise before anything is simulated and
    leave nothing behind; a run that fails is an :class:`Outcome` error stated in its report.
    """
    from tcplab.results.rundir import check_output_dir, write_dir_atomically, write_marker
    from tcplab.views.reproduce import write_reports

    for n in names:  # an unknown name is a user error before the directory is touched
        load(n)
    check_output_dir(Path(out_dir), overwrite=overwrite)
    outcomes: list[Outcome] = []

    def fill(tmp: Path) -> None:
        started = time.perf_counter()
        write_marker(tmp, "reproduce")
        outcomes.extend(run_experiments(names, quick=quick, jobs=jobs, out_dir=tmp, core=core, progress=progress))
        write_reports(outcomes, tmp, quick=quick, elapsed_s=time.perf_counter() - started)

    write_dir_atomically(out_dir, fill, overwrite=overwrite)
    return outcomes

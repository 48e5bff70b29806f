"""``tcplab sweep``: a scenario over a grid (or a random sample) of settings x seeds, into
one table (:mod:`tcplab.sweep`).

    tcplab sweep SCENARIO --grid PATH=v1,v2,... [--grid ...] [--random PATH=lo..hi]... [-n N]
                 [--seeds K] [--seed BASE] [--sample-seed S] [--set PATH=VALUE]... -o DIR
                 [--jobs N | --dask ADDRESS] [--keep-runs] [--no-plots] [--quiet] [--force]

Exit codes: 0 every run ran; 3 some runs failed (recorded in the table and failed/KEY.json,
the rest written); 2 a mistake in the command line, the scenario or an override (nothing run,
nothing written), a directory that holds another sweep, a Dask cluster that cannot be used;
1 the engine is not installed; 130/143 interrupted (SIGINT/SIGTERM): the runs done are kept
and sweep.json says "interrupted"; the same command resumes.

Output: a rich progress bar on a terminal (runs done/total, failed, ETA); otherwise one line
per finished run on stderr, as ``tcplab reproduce`` prints them (``[k/N] POINT,seed=S done (T s)``
or ``[k/N] ...: FAILED: why``, :class:`tcplab.sweep.bar.SweepBar`), then the final lines (and
``error: run KEY ...`` per failure); ``--quiet``: nothing but errors.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from tcplab.commands.common import ScenarioArg, SetOpt, guard, int_option, invocation, jobs_opt, stdout_console, warn

__all__ = ["register", "sweep_cmd", "EXIT_RUNS_FAILED"]

#: Exit code when some runs of the sweep failed (the table is written).
EXIT_RUNS_FAILED = 3

OutputOpt = Annotated[
    Path,
    typer.Option("--output", "-o", metavar="DIR", help="Sweep directory (rerun the same command into it to resume)."),
]
GridOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--grid",
        metavar="PATH=V1,V2,...",
        help="Values of a field, as --set alternatives (flows.0.cc=cubic,bbr). Several: the cartesian product.",
    ),
]
RandomOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--random",
        metavar="PATH=LO..HI",
        help="A range to sample uniformly (links.1.loss=0%..1%, one unit on both ends); needs -n.",
    ),
]
PointsOpt = Annotated[
    str | None,
    typer.Option(
        "-n",
        metavar="N",
        callback=int_option("n", 1, 1_000_000, "a number of points to draw"),
        help="Points to draw from the --random ranges (jointly).",
    ),
]
SeedsOpt = Annotated[
    str,
    typer.Option(
        "--seeds",
        metavar="K",
        callback=int_option("seeds", 1, 100_000, "a number of seeds"),
        help="Seeds per point: BASE, BASE+1, ..., BASE+K-1 (default 3).",
    ),
]
BaseSeedOpt = Annotated[
    str | None,
    typer.Option(
        "--seed",
        metavar="BASE",
        callback=int_option("seed", 0, 2**63 - 1, "a base seed"),
        help="The first seed (default: the scenario's seed).",
    ),
]
SampleSeedOpt = Annotated[
    str,
    typer.Option(
        "--sample-seed",
        metavar="S",
        callback=int_option("sample-seed", 0, 2**63 - 1, "a seed"),
        help="Seed of the --random draw (default 0; recorded in sweep.json).",
    ),
]
DaskOpt = Annotated[
    str | None,
    typer.Option(
        "--dask",
        metavar="ADDRESS",
        help="Run on an existing Dask cluster: its scheduler address (tcp://HOST:8786).",
    ),
]
KeepRunsOpt = Annotated[
    bool,
    typer.Option(
        "--keep-runs",
        help="Also keep each run's directory in DIR/runs/KEY/ (without PNG plots; large; runs "
        "already done in DIR are not rerun for it).",
    ),
]
NoPlotsOpt = Annotated[bool, typer.Option("--no-plots", help="Skip the sweep's plots and report.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar and no summary.")]
ForceOpt = Annotated[
    bool,
    typer.Option("--force", "-f", help="Start over in DIR if it holds a sweep (never replaces other files)."),
]


@guard
def sweep_cmd(
    scenario: ScenarioArg,
    output: OutputOpt,
    grid: GridOpt = None,
    random_: RandomOpt = None,
    n: PointsOpt = None,
    seeds: SeedsOpt = "3",
    seed: BaseSeedOpt = None,
    sample_seed: SampleSeedOpt = "0",
    set_: SetOpt = None,
    jobs: jobs_opt("Local processes (default: one per core).") = None,
    dask: DaskOpt = None,
    keep_runs: KeepRunsOpt = False,
    no_plots: NoPlotsOpt = False,
    quiet: QuietOpt = False,
    force: ForceOpt = False,
) -> None:
    """Run a scenario over a grid (or a random sample) of settings x seeds into one table.

    Writes DIR/sweep.parquet (one row per run and flow: the parameters, the flows' and
    runs' metrics, nstat counters, app metrics), DIR/plots/, DIR/report.html, and
    DIR/rows/KEY.parquet per run as it ends. A failed run is recorded (exit 3), never
    aborts the sweep. Interrupted (Ctrl-C), the same command resumes: runs are keyed
    by their resolved scenario and the engine version, and done ones are skipped.

    Example: tcplab sweep builtin:cubic-vs-bbr-lossy --grid flows.0.cc=cubic,bbr
    --grid links.1.loss=0%,1% --seeds 3 --set duration=20s -o out/sweep
    """
    from tcplab.sweep import plan_sweep

    if jobs is not None and dask is not None:
        typer.echo("error: --jobs and --dask: give one executor, not both", err=True)
        raise typer.Exit(2)
    plan = plan_sweep(
        scenario,
        grid or [],
        random_ or [],
        int(n) if n is not None else None,
        seeds=int(seeds),
        seed=int(seed) if seed is not None else None,
        overrides=set_ or [],
        sample_seed=int(sample_seed),
    )
    warn([sc for _, sc in plan.scenarios.values()][:1])
    result, bar = _run(
        plan,
        output,
        jobs=int(jobs) if jobs is not None else None,
        dask=dask,
        keep_runs=keep_runs,
        force=force,
        plots=not no_plots,
        quiet=quiet,
    )
    for w in bar.warnings:
        typer.echo(f"warning: {w}", err=True)
    _report(plan, result, output, bar.skipped, quiet)


def _run(plan: Any, output: Path, *, quiet: bool, **options: Any) -> tuple[Any, Any]:
    """Run the planned sweep with its progress bar: (its result, the bar). Interrupted, the
    runs done are kept: one line says how many and that the same command resumes."""
    from tcplab.signals import Terminated, exit_code_for
    from tcplab.sweep import run_sweep
    from tcplab.sweep.bar import SweepBar

    bar = SweepBar(enabled=not quiet, plan=plan)
    try:
        result = run_sweep(plan, output, progress=bar, command=invocation(), **options)
    except KeyboardInterrupt as e:
        bar.close()
        what = "terminated" if isinstance(e, Terminated) else "interrupted"
        kept = Path(output) / "rows"
        n_kept = len(list(kept.glob("*.parquet"))) if kept.is_dir() else 0
        typer.echo(
            f"error: {what}; {n_kept} of {len(plan.scenarios)} runs kept in {output} (the same command resumes)",
            err=True,
        )
        raise typer.Exit(exit_code_for(e)) from None
    finally:
        bar.close()
    return result, bar


def _report(plan: Any, result: Any, output: Path, skipped: int, quiet: bool) -> None:
    """The closing lines: runs ok and failed, the table written; one ``error:`` line per
    failed run and exit 3 when there is one."""
    total = len(plan.scenarios)
    failed = len(result.failures)
    if not quiet:
        console = stdout_console()
        points = len(plan.points)
        before = f" ({skipped} done before)" if skipped else ""
        console.print(
            f"sweep {plan.scenario_name}: {points} point{'s' if points != 1 else ''} x {len(plan.seeds)} "
            f"seed{'s' if len(plan.seeds) != 1 else ''} = {total} run{'s' if total != 1 else ''}{before}, "
            f"{total - failed} ok, {failed} failed",
            markup=False,
        )
        console.print(f"wrote {Path(output) / 'sweep.parquet'} ({len(result.table)} rows)", markup=False)
    for key, record in result.failures.items():
        overrides = ", ".join(record.get("overrides") or [])
        typer.echo(f"error: run {key} ({overrides}): {record.get('error')}", err=True)
    if failed:
        typer.echo(f"error: {failed} of {total} runs failed; the table records them", err=True)
        raise typer.Exit(EXIT_RUNS_FAILED)


def register(app: typer.Typer) -> None:
    """Add ``tcplab sweep`` to the root app."""
    app.command("sweep", short_help="Run a scenario over a grid of settings x seeds.")(sweep_cmd)

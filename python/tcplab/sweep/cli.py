"""``tcplab sweep``: the command (registered on the root app by :func:`register`).

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
or ``[k/N] ...: FAILED: why``, :class:`tcplab.progress.RunLines`), then the final lines (and
``error: run KEY ...`` per failure); ``--quiet``: nothing but errors.
"""

# No `from __future__ import annotations`: typer reads the command's annotations at run
# time, and the option types below are built inside register() from tcplab.cli's helpers.
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

__all__ = ["register", "EXIT_RUNS_FAILED"]

#: Exit code when some runs of the sweep failed (the table is written).
EXIT_RUNS_FAILED = 3


class _Bar:
    """runs done/total, failed, ETA: a rich bar on a terminal; otherwise one line per finished
    run (named by its point and seed in ``plan``), unless ``enabled`` is False (--quiet)."""

    def __init__(self, enabled: bool, plan: Any = None):
        from tcplab.progress import RunLines

        self.enabled = enabled and sys.stderr.isatty()
        self.plan = plan
        #: off a terminal: reproduce's lines (failures are listed at the end, as before)
        off_terminal = enabled and not self.enabled
        self.lines = RunLines(0, what="writing the table", bar=False, tty=False) if off_terminal else None
        self.bar: Any = None
        self.task: Any = None
        self.warnings: dict[str, None] = {}
        #: runs found done (a resumed sweep)
        self.skipped = 0

    def __call__(self, p: Any) -> None:
        self.skipped = p.skipped
        if p.outcome is not None:
            for w in p.outcome.warnings:
                self.warnings.setdefault(w)
            if self.lines is not None:
                self.lines(p.done, p.total, self.label_of(p.outcome.key), None if p.outcome.ok else p.outcome.error)
        if not self.enabled:
            return
        if self.bar is None:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self.bar = Progress(
                TextColumn("[bold]sweep"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("runs"),
                TextColumn("{task.fields[failed]} failed"),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            self.bar.start()
            # ETA from the runs of this invocation only (skipped ones are done already)
            self.task = self.bar.add_task("", total=p.total - p.skipped, failed=0)
        self.bar.update(self.task, completed=p.done - p.skipped, failed=p.failed)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None

    def label_of(self, key: str) -> str:
        """A run as its line names it: its point's values and seed (``flows.0.cc=bbr,seed=2``)."""
        if self.plan is None or key not in self.plan.scenarios:
            return key
        entry = self.plan.scenarios[key][0]
        return ",".join([*entry.point.texts(self.plan.parameters), f"seed={entry.seed}"])


def register(app: typer.Typer) -> None:
    """Add ``tcplab sweep`` to the root app."""
    from tcplab.cli import SetOpt, _guard, _int_option, _jobs_opt, _warn

    @app.command("sweep")
    @_guard
    def sweep_cmd(
        scenario: Annotated[
            str, typer.Argument(metavar="SCENARIO", help="A YAML file, builtin:NAME or a built-in NAME.")
        ],
        output: Annotated[
            Path,
            typer.Option(
                "--output", "-o", metavar="DIR", help="Sweep directory (rerun the same command into it to resume)."
            ),
        ],
        grid: Annotated[
            list[str] | None,
            typer.Option(
                "--grid",
                metavar="PATH=V1,V2,...",
                help="Values of a field, as --set alternatives (flows.0.cc=cubic,bbr). Several: the cartesian product.",
            ),
        ] = None,
        random_: Annotated[
            list[str] | None,
            typer.Option(
                "--random",
                metavar="PATH=LO..HI",
                help="A range to sample uniformly (links.1.loss=0%..1%, one unit on both ends); needs -n.",
            ),
        ] = None,
        n: Annotated[
            str | None,
            typer.Option(
                "-n",
                metavar="N",
                callback=_int_option("n", 1, 1_000_000, "a number of points to draw"),
                help="Points to draw from the --random ranges (jointly).",
            ),
        ] = None,
        seeds: Annotated[
            str,
            typer.Option(
                "--seeds",
                metavar="K",
                callback=_int_option("seeds", 1, 100_000, "a number of seeds"),
                help="Seeds per point: BASE, BASE+1, ..., BASE+K-1 (default 3).",
            ),
        ] = "3",
        seed: Annotated[
            str | None,
            typer.Option(
                "--seed",
                metavar="BASE",
                callback=_int_option("seed", 0, 2**63 - 1, "a base seed"),
                help="The first seed (default: the scenario's seed).",
            ),
        ] = None,
        sample_seed: Annotated[
            str,
            typer.Option(
                "--sample-seed",
                metavar="S",
                callback=_int_option("sample-seed", 0, 2**63 - 1, "a seed"),
                help="Seed of the --random draw (default 0; recorded in sweep.json).",
            ),
        ] = "0",
        set_: SetOpt = None,
        jobs: _jobs_opt("Local processes (default: one per core).") = None,
        dask: Annotated[
            str | None,
            typer.Option(
                "--dask",
                metavar="ADDRESS",
                help="Run on an existing Dask cluster: its scheduler address (tcp://HOST:8786).",
            ),
        ] = None,
        keep_runs: Annotated[
            bool,
            typer.Option(
                "--keep-runs",
                help="Also keep each run's directory in DIR/runs/KEY/ (without PNG plots; large; runs "
                "already done in DIR are not rerun for it).",
            ),
        ] = False,
        no_plots: Annotated[bool, typer.Option("--no-plots", help="Skip the sweep's plots and report.")] = False,
        quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar and no summary.")] = False,
        force: Annotated[
            bool,
            typer.Option("--force", "-f", help="Start over in DIR if it holds a sweep (never replaces other files)."),
        ] = False,
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
        from tcplab.cli import _INVOCATION, _console
        from tcplab.signals import Terminated, exit_code_for
        from tcplab.sweep import plan_sweep, run_sweep

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
        _warn([sc for _, sc in plan.scenarios.values()][:1])
        bar = _Bar(enabled=not quiet, plan=plan)
        try:
            result = run_sweep(
                plan,
                output,
                jobs=int(jobs) if jobs is not None else None,
                dask=dask,
                keep_runs=keep_runs,
                force=force,
                plots=not no_plots,
                progress=bar,
                command=_INVOCATION,
            )
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
        for w in bar.warnings:
            typer.echo(f"warning: {w}", err=True)
        total = len(plan.scenarios)
        failed = len(result.failures)
        if not quiet:
            console = _console()
            points = len(plan.points)
            before = f" ({bar.skipped} done before)" if bar.skipped else ""
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

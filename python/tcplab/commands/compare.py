"""``tcplab compare SCENARIO...``: several scenarios, or one with ``--set PATH=A,B``
alternatives, run side by side into one comparison directory.

    tcplab compare SCENARIO [SCENARIO...] [-o DIR] [--set PATH=V1,V2]... [--seed N] [-j N]

Each variant runs in its own worker process (:func:`tcplab.compare.run_variants`): one the
engine rejects, or whose worker dies, fails alone; the others are written, the failed ones
marked FAILED in the table and compare.json, and the exit code is
:data:`EXIT_VARIANTS_FAILED`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tcplab.commands.common import (
    ForceOpt,
    NoPlotsOpt,
    QuietOpt,
    SeedOpt,
    SetOpt,
    fmt,
    guard,
    invocation,
    jobs_opt,
    stdout_console,
    warn,
)

__all__ = ["register", "compare", "EXIT_VARIANTS_FAILED"]

#: ``tcplab compare`` exit code when at least one variant failed (the others were written).
EXIT_VARIANTS_FAILED = 3


@guard
def compare(
    scenarios: Annotated[list[str], typer.Argument(metavar="SCENARIO...", help="One or more scenarios.")],
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", metavar="DIR", help="Comparison directory (default: runs/compare-NAME)."),
    ] = None,
    set_: SetOpt = None,
    seed: SeedOpt = None,
    quiet: QuietOpt = False,
    force: ForceOpt = False,
    no_plots: NoPlotsOpt = False,
    jobs: jobs_opt("Processes to run variants in (default: one per core, at most one per variant).") = None,
) -> None:
    """Run several scenarios, or one with --set PATH=A,B alternatives, side by side.

    Each variant runs on its own: if some fail (the engine rejects one, its worker dies),
    the others are still written, the failed ones are marked FAILED in the table and in
    compare.json, one `error: variant LABEL: ...` line each goes to stderr, and the exit
    code is 3.
    """
    from tcplab.compare import default_jobs, plan_variants, run_variants
    from tcplab.results import check_output_dir

    variants = plan_variants(scenarios, set_ or [], seed=seed)
    warn([v.scenario for v in variants])
    out_dir = output if output is not None else Path("runs") / f"compare-{variants[0].scenario.name}"
    check_output_dir(out_dir, overwrite=force)
    n_jobs = int(jobs) if jobs is not None else default_jobs(len(variants))
    if n_jobs > 1 and len(variants) > 1 and not quiet:
        stdout_console().print(f"running {len(variants)} variants in {min(n_jobs, len(variants))} processes")
    # Each variant in its own worker process: one that the engine rejects or whose worker
    # dies fails alone; the others are written. Off a terminal, one line per finished
    # variant (as reproduce); on one, each variant's bar of simulated time when they run one
    # at a time, else a bar of variants.
    from tcplab.progress import RunLines

    one_at_a_time = min(n_jobs, len(variants)) == 1
    lines = RunLines(len(variants), title="compare", what="writing the comparison", quiet=quiet, bar=not one_at_a_time)
    try:
        cmp = run_variants(
            variants,
            progress=not quiet,
            jobs=n_jobs,
            isolate=True,
            command=invocation(),
            on_done=lambda done, label, failure: lines(done, len(variants), label, failure),
        )
    finally:
        lines.close()
    if cmp.results:
        cmp.write(out_dir, overwrite=force, plots=not no_plots)
    if not quiet:
        from rich import box
        from rich.table import Table

        table = Table(title="tcplab compare", title_justify="left", box=box.SIMPLE_HEAD)
        table.add_column("metric")
        for v in variants:
            table.add_column(v.label, justify="right")
        if cmp.failures:
            table.add_row("status", *["FAILED" if v.label in cmp.failures else "ok" for v in variants])
        for metric, row in cmp.table.iterrows():
            counts = ("timeouts", "queue drops", "loss drops")
            values = [x for x in row.tolist() if x == x]
            # counts (an app's stalls, timeouts) without decimals; rates and times with them
            whole = "(" not in str(metric) and all(float(x).is_integer() for x in values)
            digits = 0 if metric in counts or whole else (3 if "goodput" in str(metric) else 2)
            table.add_row(str(metric), *[fmt(x, 1.0, digits) for x in row.tolist()])
        console = stdout_console()
        console.print(table)
        if cmp.results:
            console.print(f"wrote {out_dir}", markup=False)
    for failure in cmp.failures.values():
        typer.echo(f"error: variant {failure.label}: {failure.reason}", err=True)
    if cmp.failures:
        ran = f"{len(cmp.results)} of {len(variants)} variants ran"
        typer.echo(
            f"error: {ran}; {'results written to ' + str(out_dir) if cmp.results else 'nothing written'}", err=True
        )
        raise typer.Exit(EXIT_VARIANTS_FAILED)


def register(app: typer.Typer) -> None:
    """Add ``tcplab compare`` to the root app."""
    app.command(short_help="Run scenarios, or --set alternatives, side by side.")(compare)

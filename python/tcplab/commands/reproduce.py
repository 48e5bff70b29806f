"""``tcplab reproduce NAME... | --all``: replay the stories. Each experiment's runs are
simulated (all of them in one pool of processes), its claims judged and its report written
(:func:`tcplab.experiments.reproduce.reproduce`); then one line per claim and the totals.

    tcplab reproduce NAME... | --all [--quick] [-o DIR] [--jobs N] [--force] [--quiet]

Exit 0 the experiments ran (whatever their verdicts), 1 a run or an experiment failed
(stated in its report and the index), 2 an unknown name, no name and no ``--all``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tcplab.commands.common import ForceOpt, QuietOpt, fail, guard, jobs_opt, stdout_console
from tcplab.commands.experiments import experiment_named

__all__ = ["register", "reproduce"]


@guard
def reproduce(
    names: Annotated[
        list[str] | None,
        typer.Argument(metavar="NAME", help="Experiments to run (tcplab experiments lists them)."),
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Run the five experiments.")] = False,
    quick: Annotated[
        bool, typer.Option("--quick", help="Shorter runs and fewer sweep points (under a minute for --all on 2 cores).")
    ] = False,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", metavar="DIR", help="Output directory (default: reproduce/, or reproduce-quick/)."
        ),
    ] = None,
    jobs: jobs_opt("Processes to run the simulations in (default: one per core).") = None,
    force: ForceOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Replay the stories: run each experiment's scenarios, judge its claims, write the reports.

    Writes DIR/NAME/report.html (and report.md, claims.json, plots/, runs/RUN/) per experiment
    and DIR/index.html + DIR/index.md. Exit 0 when the experiments ran, whatever the verdicts;
    1 when a run or an experiment failed (said in its report); 2 for a bad name or no name.
    """
    from tcplab.experiments.catalog import NAMES
    from tcplab.experiments.reproduce import reproduce as run_reproduce
    from tcplab.views.reproduce import default_output

    chosen = list(names or [])
    if all_ and chosen:
        fail("NAME and --all: give experiment names or --all, not both", 2)
    if not all_ and not chosen:
        fail("no experiment named; expected NAME... or --all (experiments: " + ", ".join(NAMES) + ")", 2)
    if all_:
        chosen = list(NAMES)
    unknown = [n for n in chosen if n not in NAMES]
    if unknown:
        fail(f"NAME: no experiment named {unknown[0]!r}; expected one of {', '.join(NAMES)}", 2)
    chosen = list(dict.fromkeys(chosen))
    experiments = [experiment_named(n) for n in chosen]
    out_dir = output if output is not None else default_output(quick)
    total = sum(len(e.runs(quick)) for e in experiments)
    from tcplab.progress import RunLines

    progress = RunLines(total, title="reproduce", what="judging the claims and writing the reports", quiet=quiet)
    try:
        outcomes = run_reproduce(
            chosen,
            out_dir,
            quick=quick,
            jobs=int(jobs) if jobs is not None else None,
            overwrite=force,
            progress=progress,
        )
    finally:
        progress.close()
    failed = [oc for oc in outcomes if oc.error]
    if not quiet:
        _print_outcomes(outcomes, quick, out_dir)
    for oc in failed:
        first = str(oc.error).strip().splitlines()[0] if oc.error else ""
        typer.echo(f"error: experiment {oc.experiment.name}: {first} (see its report)", err=True)
    if failed:
        raise typer.Exit(1)


def _print_outcomes(outcomes: list, quick: bool, out_dir: Path) -> None:
    """The table of the experiments' verdicts, each claim's line, the totals and the index."""
    from rich import box
    from rich.table import Table

    from tcplab.views.reproduce import totals_line

    table = Table(title=f"tcplab reproduce ({'quick' if quick else 'full'})", title_justify="left", box=box.SIMPLE_HEAD)
    for col in ("experiment", "reproduced", "partly", "not reproduced", "cross-checks", "status"):
        table.add_column(col, justify="left" if col in ("experiment", "status") else "right")
    totals = {"reproduced": 0, "partly": 0, "not reproduced": 0}
    for oc in outcomes:
        c = oc.counts()
        for k in totals:
            totals[k] += c[k]
        agree = sum(1 for x in oc.crosschecks if x.agree)
        table.add_row(
            oc.experiment.name,
            str(c["reproduced"]),
            str(c["partly"]),
            str(c["not reproduced"]),
            f"{agree}/{len(oc.crosschecks)}",
            "FAILED" if oc.error else "ok",
        )
    console = stdout_console()
    console.print(table)
    for oc in outcomes:
        for cr in oc.claims:
            console.print(f"  {oc.experiment.name} / {cr.claim.id}: {cr.verdict}: {cr.figure}", markup=False)
    console.print(totals_line({**totals, "claims": sum(totals.values())}), markup=False)
    console.print(f"index: {Path(out_dir) / 'index.html'} (and index.md)", markup=False)


def register(app: typer.Typer) -> None:
    """Add ``tcplab reproduce`` to the root app."""
    app.command(short_help="Replay the five stories and judge their claims.")(reproduce)

"""``tcplab validate SCENARIO``: the scenario in the simulator and on this machine's kernel,
side by side, with a verdict per metric (root).

    tcplab validate SCENARIO [-o DIR] [--set PATH=VALUE]... [--seed N] [--tolerance K=V,...]
                    [--runs N] [--prefix P] [--allow-busy] [--timeout T]

Everything that can be checked is checked before anything runs (the scenario, the
tolerances, ``--timeout``, root, the output directory, what kernel mode can build:
:func:`tcplab.kernel.validate.preflight`); then :func:`tcplab.kernel.validate.validate`
runs both worlds and writes the validation directory, and the verdict table is printed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tcplab.commands.common import (
    ForceOpt,
    NoPlotsOpt,
    QuietOpt,
    ScenarioArg,
    SeedOpt,
    SetOpt,
    fail,
    guard,
    int_option,
    invocation,
    stdout_console,
    warn,
)
from tcplab.commands.kernel import kernel_prefix

__all__ = ["register", "validate", "MAX_VALIDATE_RUNS", "VALIDATE_NEEDS_ROOT"]

#: The most runs of each world ``validate --runs`` takes: one after the other, each at least the
#: scenario's duration on the kernel side (the seeds' list is made up front, so 10^16 runs was a
#: MemoryError before anything ran).
MAX_VALIDATE_RUNS = 10_000
#: ``tcplab validate`` and the kernel run: not root.
VALIDATE_NEEDS_ROOT = "tcplab validate: needs root (network namespaces, tc, nft): run it with sudo"


@guard
def validate(
    scenario: ScenarioArg,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", metavar="DIR", help="Validation directory (default: runs/validate-NAME)."),
    ] = None,
    set_: SetOpt = None,
    seed: SeedOpt = None,
    tolerance: Annotated[
        list[str] | None,
        typer.Option(
            "--tolerance",
            metavar="KEY=VALUE,...",
            help="Tolerances: goodput=10%,rtt_p50=15%,rtt_p99=25%,retrans=0.5pp/50%,drops=10/50%, and with ECN "
            "in play ect=10/10%,ce=10/50% (the defaults). A value replaces that metric's tolerance. Repeatable.",
        ),
    ] = None,
    force: ForceOpt = False,
    prefix: Annotated[
        str,
        typer.Option(
            "--prefix", metavar="P", help="Names of the kernel run's network namespaces: P-NODE (1 to 16 of a-z, 0-9)."
        ),
    ] = "tcplab",
    allow_busy: Annotated[
        bool,
        typer.Option("--allow-busy", help="Record the quiet check but do not mark the kernel run invalid on it."),
    ] = False,
    timeout: Annotated[
        str | None,
        typer.Option("--timeout", metavar="TIME", help="Bound of the kernel run (default: duration + 60s)."),
    ] = None,
    runs: Annotated[
        str,
        typer.Option(
            "--runs",
            metavar="N",
            callback=int_option("runs", 1, MAX_VALIDATE_RUNS, "a number of runs"),
            help="Run each world N times (simulation seeds seed..seed+N-1; N kernel runs one after the other) "
            "and judge the means against the runs' spread.",
        ),
    ] = "1",
    quiet: QuietOpt = False,
    no_plots: NoPlotsOpt = False,
) -> None:
    """Run a scenario in the simulator and on this machine's kernel, side by side (root).

    Writes DIR/report.html (verdict table and overlays), report.md, validation.json, and
    both run directories DIR/sim and DIR/kernel. Exit 0 when both ran (whatever the
    verdicts), 1 when a run failed or the kernel run is invalid, 2 a mistake in the
    scenario, a tolerance or the command line, not root, or what this machine lacks for
    kernel mode (one error line each, before anything runs). A kernel run invalid because
    the machine was busy says how busy and how to rerun. With --runs N > 1 the run
    directories are DIR/sim/run-K and DIR/kernel/run-K; an invalid kernel run is run once
    more, one invalid twice or failed is excluded and named, and fewer than 2 valid ones give
    no verdicts (exit 1).
    """
    import os

    from tcplab.kernel.tolerances import parse_tolerances
    from tcplab.kernel.validate import validate as run_validation
    from tcplab.loader import load_scenario
    from tcplab.results import check_output_dir

    prefix = kernel_prefix(prefix)
    sc = load_scenario(scenario, set_ or [], seed=seed)
    from tcplab.scenario.cost import check_validate_time

    check_validate_time(sc, runs)  # runs x (simulation + kernel run) within limits.cpu_time
    warn([sc])
    tol = parse_tolerances(tolerance or [])
    timeout_ns = None
    if timeout is not None:
        from tcplab.units import parse_time

        try:
            timeout_ns = parse_time(timeout, allow_zero=False)
        except ValueError as e:
            fail(f"--timeout: {e}", 2)
    if os.geteuid() != 0:
        fail(VALIDATE_NEEDS_ROOT, 2)
    out_dir = output if output is not None else Path("runs") / f"validate-{sc.name}"
    check_output_dir(out_dir, overwrite=force)
    from tcplab.kernel.validate import kernel_options, preflight

    options = kernel_options(prefix=prefix, allow_busy=allow_busy, timeout_ns=timeout_ns)
    from tcplab.kernel.validate import ValidateError

    try:
        preflight(sc, options)
        v = run_validation(
            sc,
            tolerances=tol,
            options=options,
            out=out_dir,
            overwrite=force,
            command=invocation(),
            applied_overrides=_override_texts(set_, seed),
            plots=not no_plots,
            progress=not quiet,
            say=None if quiet else (lambda text: typer.echo(text, err=True)),
            runs=int(runs),
        )
    except ValidateError as e:
        fail(str(e), 1)
    if not quiet:
        _print_validation(v, out_dir)
    if not v.valid:  # as tcplab kernel run says it: on stderr, after writing the directory
        typer.echo(v.verdict_line(), err=True)
        if v.busy:  # invalid for the machine's load, not a failure: how busy, how to rerun
            typer.echo(f"how busy: {v.busy_line()}", err=True)
            typer.echo(v.rerun_hint(), err=True)
        raise typer.Exit(1)


def _override_texts(set_: list[str] | None, seed: int | None) -> list[str]:
    from tcplab.runner import override_texts

    return override_texts(set_ or [], seed)


def _print_validation(v, out_dir: Path) -> None:  # noqa: ANN001
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from tcplab.views.validate import table_rows

    console = stdout_console()
    kernel = v.kernel.get("release") or "stand-in"
    title = f"{v.title}: simulator vs kernel {kernel}"
    if v.runs > 1:
        title += f" ({v.runs} runs each: mean ± sd)"
    table = Table(title=Text(title), title_justify="left", box=box.SIMPLE_HEAD)
    for col, justify in (
        ("flow / link", "left"),
        ("metric", "left"),
        ("simulator", "right"),
        ("kernel", "right"),
        ("difference", "right"),
        ("tolerance", "left"),
        ("verdict", "left"),
    ):
        table.add_column(col, justify=justify, no_wrap=col in ("flow / link", "metric"))
    style = {"within": "green", "outside": "bold red", "n/a": "dim", "inconclusive (spread)": "yellow"}
    for r in table_rows(v):
        table.add_row(
            *[Text(r[k]) for k in ("subject", "metric", "sim", "kernel", "difference", "tolerance")],
            Text(r["verdict"], style=style.get(r["verdict"], "")),
        )
    console.print(table)
    for line in v.retried:
        console.print(Text(f"retried: {line}"))
    for line in v.excluded:
        console.print(Text(f"excluded: {line}"))
    for note in v.notes:
        if not note.startswith("excluded: "):  # named just above
            console.print(Text(f"note: {note}"))
    if v.valid:
        console.print(Text(v.verdict_line()))
    console.print(f"wrote {out_dir} (report.html)", markup=False)


def register(app: typer.Typer) -> None:
    """Add ``tcplab validate`` to the root app."""
    app.command(short_help="Run a scenario simulated and on this kernel (root).")(validate)

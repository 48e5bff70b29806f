"""``tcplab run SCENARIO``: simulate one scenario and write its run directory.

    tcplab run SCENARIO [-o DIR] [--set PATH=VALUE]... [--seed N] [--quiet] [--force]
               [--no-plots] [--pcap FLOW [--pcap-at sender|receiver]]

The scenario is loaded and validated (a mistake: one ``error:`` line each, exit 2, nothing
run), the output directory checked, the simulation run (:func:`tcplab.runner.run`, a
progress bar on a terminal), the run directory written (``Result.write``) and its summary
printed (:mod:`tcplab.commands.summary`). ``--pcap FLOW`` also captures the flow's packets
into ``DIR/FLOW.pcap``.
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
    invocation,
    warn,
)
from tcplab.commands.summary import print_run_summary

__all__ = ["register", "run"]


@guard
def run(
    scenario: ScenarioArg,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", metavar="DIR", help="Run directory (default: runs/NAME, NAME from the scenario)."
        ),
    ] = None,
    set_: SetOpt = None,
    seed: SeedOpt = None,
    quiet: QuietOpt = False,
    force: ForceOpt = False,
    no_plots: NoPlotsOpt = False,
    pcap: Annotated[
        str | None,
        typer.Option(
            "--pcap",
            metavar="FLOW",
            help="Also write FLOW.pcap in the run directory: the flow's packets as tcpdump -s 128 on its "
            "sender records them (headers, real TCP options). FLOW: a flow name or index.",
        ),
    ] = None,
    pcap_at: Annotated[
        str | None,
        typer.Option("--pcap-at", metavar="SIDE", help="Where --pcap captures: sender (default) or receiver."),
    ] = None,
) -> None:
    """Simulate one scenario and write its run directory."""
    from tcplab.loader import load_scenario
    from tcplab.results.rundir import check_output_dir

    sc = load_scenario(scenario, set_ or [], seed=seed)
    warn([sc])
    capture = None
    if pcap_at is not None and pcap is None:
        fail(f"--pcap-at: {pcap_at!r} given without --pcap; expected --pcap FLOW with it", 2)
    if pcap is not None:
        from tcplab.exports.pcap import capture_config

        capture = {"flow": pcap, "at": pcap_at or "sender"}
        capture_config(sc.to_core(), **capture)  # an unknown flow or side: exit 2 before running
    out_dir = output if output is not None else Path("runs") / sc.name
    check_output_dir(out_dir, overwrite=force)
    # the simulation's stack (NumPy, pandas, the engine) loads once the input is known good:
    # a refused scenario or output directory costs the CLI's start only
    import warnings

    from tcplab.errors import EngineWarning
    from tcplab.progress import SimProgress
    from tcplab.runner import override_texts
    from tcplab.runner import run as run_scenario

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", EngineWarning)
        with SimProgress(sc.name, enabled=None if not quiet else False) as progress:
            result = run_scenario(
                sc,
                progress=progress,
                applied_overrides=override_texts(set_ or [], seed),
                command=invocation(),
                capture=capture,
            )
    for w in caught:
        if issubclass(w.category, EngineWarning):
            typer.echo(f"warning: {w.message}", err=True)
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    result.write(out_dir, overwrite=force, plots=not no_plots)
    pcap_line = None
    if result.capture is not None:
        from tcplab.commands.export import capture_summary
        from tcplab.exports.pcap import pcap_name

        line, warning = capture_summary(
            out_dir / pcap_name(result.config, result.capture.flow),
            len(result.capture.packets),
            result.capture.truncated,
        )
        if warning:
            typer.echo(f"warning: {warning}", err=True)
        pcap_line = line
    if not quiet:
        print_run_summary(result, out_dir)
        if pcap_line:
            typer.echo(pcap_line)


def register(app: typer.Typer) -> None:
    """Add ``tcplab run`` to the root app."""
    app.command(short_help="Simulate one scenario and write its run directory.")(run)

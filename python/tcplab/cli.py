"""The ``tcplab`` command.

    tcplab run SCENARIO [-o DIR] [--set PATH=VALUE]... [--seed N] [--quiet] [--force]
               [--pcap FLOW [--pcap-at sender|receiver]]
    tcplab compare SCENARIO [SCENARIO...] [-o DIR] [--set PATH=V1,V2]... [--seed N]
    tcplab sweep SCENARIO --grid PATH=V1,V2 [--random PATH=LO..HI -n N] [--seeds K] -o DIR [--jobs N | --dask ADDR]
    tcplab recommend SWEEP_DIR|SCENARIO --choose PATH[=V1,V2]... [--over PATH[=V1,V2|=LO..HI]]...
                     (--maximize M | --minimize M) [--subject-to C]... [-o DIR] [--json]
    tcplab check SCENARIO [--set PATH=VALUE]... [--json]
    tcplab validate SCENARIO [-o DIR] [--set PATH=VALUE]... [--tolerance K=V,...] [--runs N] [--prefix P] [--allow-busy]
    tcplab scenarios
    tcplab collect [-o FILE.tar.gz] [--interval 10s] [--count 2] [--force]
    tcplab diagnose PATH... [--json|--markdown] [--scenario-dir DIR [--force]] [--fail-on warning|critical]
    tcplab reproduce NAME... | --all [--quick] [-o DIR] [--jobs N] [--force]
    tcplab experiments [path NAME]
    tcplab kernel run SCENARIO [-o DIR] [--set ...] [--seed N] [--force] [--timeout T] [--prefix P] [--allow-busy]
    tcplab kernel cleanup [--prefix P] | tcplab kernel info [--json]
    tcplab export flent RUN [-o FILE] [--force]
    tcplab export iperf3 RUN [--flow F] [--interval 1s] [-o PATH] [--force]
    tcplab export pcap RUN --flow FLOW [--at sender|receiver] [-o FILE] [--max-packets N] [--force]
    tcplab ss RUN [--at T] [FLOW]
    tcplab packetdrill SCRIPT|DIR... [--tolerance-usecs N] [--report DIR] [--junit FILE] [--kernel]

SCENARIO is a YAML file, ``builtin:NAME`` or a bare built-in NAME (``tcplab scenarios``).

Exit codes: 0 success; 2 a mistake in the scenario, an override or the command line (one
``error: ...`` line per problem on stderr, nothing run, no output directory); 1 the engine
failed (``error: engine: ...``) or is not installed, or writing the output failed (a full
disk: ``error: PATH: No space left on device``, nothing half-written left); 3 ``compare``:
some variants failed (the others are written, the failed ones are marked in the table and
compare.json); 130
interrupted (SIGINT), 143 terminated (SIGTERM), in both cases after removing partial output
and stopping worker processes (see :mod:`tcplab.signals`). ``sweep``: 3 some runs failed (recorded
in the table and failed/KEY.json, the rest written); 130/143 keep the runs done (the same
command resumes). ``recommend``: 4 no setting meets the constraints (the ranking is still
printed and written); its scenario form's sweep keeps the runs done when interrupted (the
same command resumes). ``diagnose``: 0 it ran, 2 unusable
input (``error: FILE:LINE: ...``), 1 a finding at or above ``--fail-on`` exists.
``reproduce``: 0 the experiments ran (whatever their verdicts), 1 a run or an experiment
failed (stated in its report and the index), 2 an unknown name, no name and no ``--all``, or
a scenario of an experiment that does not validate (nothing run, nothing written).
``kernel run``: 0 a valid run; 1 the run failed (``error: kernel: ...``, nothing written) or is
INVALID (``INVALID: reasons`` on stderr, the directory written and marked); 2 not root (``tcplab
kernel: needs root ...``), a scenario mistake, or something kernel mode cannot build
(``error: kernel: sch_fq is not available on this kernel (links.1.queue.qdisc=fq)``), nothing
created; 130/143 interrupted, after removing its namespaces and processes.
``validate``: 0 both runs ran (whatever the verdicts), 1 a run failed or the kernel run is
invalid (``INVALID: reasons``; the directory is still written), 2 a mistake in the scenario,
a ``--tolerance`` or the command line, not root, or a scenario kernel mode cannot build.
``export``, ``ss``: 0 written (printed), 2 RUN is not a run directory, an unknown flow, a
time outside the run, an ``-o`` that exists (without ``--force``) or is not a regular file
(one ``error:`` line naming it, nothing written). Output paths (every ``-o``, ``--scenario-dir``)
are checked before anything runs: too long for Linux (PATH_MAX, NAME_MAX) is exit 2.
``export pcap``: 0 written; 2 RUN is not a simulation run directory, an unknown flow, or RUN
was made by another engine version (one ``error:`` line, nothing written); 1 the engine
failed or its rerun of RUN differs from RUN.

Command-line mistakes (a bad ``--seed``, ``-j 0``, an unknown option) are reported in the same
one-line ``error: OPTION: ...; expected ...`` form as scenario errors, never as a usage panel.

This module only assembles the app: the root group (:class:`~tcplab.commands.common.OneLineErrors`,
the ``--version`` option, the epilog) and the commands, each of which registers itself from
its module in :mod:`tcplab.commands` (in the order ``tcplab --help`` lists them). It is the
top of the Python front's floors (floor 7, with :mod:`tcplab.commands`): it may import
everything below, and nothing imports it but the ``tcplab`` entry point (``tcplab.cli:main``).
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from tcplab.commands import (
    check,
    collect,
    compare,
    diagnose,
    experiments,
    export,
    kernel,
    packetdrill,
    recommend,
    reproduce,
    run,
    scenarios,
    ss,
    sweep,
    validate,
)
from tcplab.commands.common import OneLineErrors, group_settings

__all__ = ["app", "main"]


def _show_version(value: bool) -> None:
    if not value:
        return
    import platform

    from tcplab.engine import import_core
    from tcplab.version import __version__

    try:
        engine = f"engine {import_core().__version__}"
    except ImportError:
        engine = "engine not built"
    typer.echo(f"tcplab {__version__} ({engine}, Python {platform.python_version()})")
    raise typer.Exit(0)


app = typer.Typer(
    cls=OneLineErrors,
    name="tcplab",
    help="A lab for TCP congestion control: simulate a scenario with Linux-like TCP, CUBIC and BBR.",
    epilog=(
        "Example: tcplab compare builtin:cubic-vs-bbr-lossy --set flows.0.cc=cubic,bbr -o out/  "
        "(story 001, BBR vs CUBIC video demo: 100 ms RTT, 5 Mbit/s, 1% loss). "
        "The five stories tcplab is built around: docs/stories.md; replay them all with "
        "tcplab reproduce --all --quick -o out/reproduce (what make reproduce runs; index in "
        "out/reproduce/index.html).\n\n"
        "Exit codes: 0 success; 1 the engine failed, or writing the output failed (a full "
        "disk); 2 a mistake in the scenario, an override or the command line (one `error:` "
        "line each); 3 compare: some variants failed (the others "
        "are written), sweep: some runs failed (the table records them); 130 interrupted (Ctrl-C), "
        "143 terminated (SIGTERM), after removing "
        "partial output and stopping workers."
    ),
    no_args_is_help=True,
    **group_settings(),
)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", is_eager=True, callback=_show_version, help="Show tcplab's version and exit."),
    ] = False,
) -> None:
    pass


# Each command registers itself, in this order: ``tcplab --help`` lists the commands in it,
# then the groups (kernel, export) in theirs.
COMMANDS = (run, compare, validate, check, scenarios, collect, diagnose, reproduce, experiments, kernel, sweep)
COMMANDS += (export, ss, recommend, packetdrill)
for _module in COMMANDS:
    _module.register(app)


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except BrokenPipeError:  # `tcplab scenarios | head`
        sys.stderr.close()
        sys.exit(1)

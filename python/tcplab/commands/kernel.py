"""``tcplab kernel run|cleanup|info``: a scenario on the running Linux kernel's TCP, in
network namespaces (root; :mod:`tcplab.kernel`).

    tcplab kernel run SCENARIO [-o DIR] [--set ...] [--seed N] [--force] [--timeout T]
                      [--prefix P] [--allow-busy]
    tcplab kernel cleanup [--prefix P]
    tcplab kernel info [--json]

``kernel run``: 0 a valid run; 1 the run failed (``error: kernel: ...``, nothing written) or
is INVALID (``INVALID: reasons`` on stderr, the directory written and marked); 2 not root, a
scenario mistake, or something kernel mode cannot build (nothing created); 130/143
interrupted, after removing its namespaces and processes. :func:`kernel_prefix` is the one
check of ``--prefix`` (``tcplab validate`` takes it too).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Annotated

import typer
from typer.core import TyperGroup

from tcplab.commands.common import (
    ForceOpt,
    NoPlotsOpt,
    QuietOpt,
    ScenarioArg,
    SeedOpt,
    SetOpt,
    fail,
    group_settings,
    guard,
    invocation,
    warn,
)
from tcplab.commands.summary import print_run_summary
from tcplab.units import plural

__all__ = ["register", "kernel_app", "kernel_prefix", "PrefixOpt"]

kernel_app = typer.Typer(
    cls=TyperGroup,
    help=("Run a scenario on the running Linux kernel's TCP, in network namespaces (needs root): run, cleanup, info."),
    no_args_is_help=True,
    **group_settings(),
)

PrefixOpt = Annotated[
    str,
    typer.Option(
        "--prefix",
        metavar="P",
        help="Namespace prefix, 1 to 16 of a-z and 0-9: the run's namespaces are P-NODE and P:wK (default tcplab).",
    ),
]


def kernel_prefix(prefix: str) -> str:
    """--prefix of validate, kernel run and kernel cleanup: one check (tcplab.kernel.names), exit 2."""
    from tcplab.kernel.errors import KernelUsageError
    from tcplab.kernel.names import check_prefix

    try:
        return check_prefix(prefix)
    except KernelUsageError as e:
        fail(str(e), 2)


def _kernel_root() -> None:
    import os

    from tcplab.kernel.env import NEEDS_ROOT

    if os.geteuid() != 0:
        typer.echo(NEEDS_ROOT, err=True)
        raise typer.Exit(2)


def _kernel_guard(fn):  # noqa: ANN001, ANN202 - decorator
    """guard plus kernel mode's errors: unsupported (exit 2, nothing created), failed (1)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        from tcplab.kernel.env import NEEDS_ROOT
        from tcplab.kernel.errors import KernelError, KernelUnsupported, KernelUsageError
        from tcplab.kernel.needs import MachineLacks

        try:
            return fn(*args, **kwargs)
        except MachineLacks as e:  # every missing thing, one error line each
            for line in e.lines:
                typer.echo(f"error: {line}", err=True)
            raise typer.Exit(2) from None
        except (KernelUnsupported, KernelUsageError) as e:
            fail(str(e), 2)
        except KernelError as e:
            if str(e) == NEEDS_ROOT:
                typer.echo(NEEDS_ROOT, err=True)
                raise typer.Exit(2) from None
            fail(str(e), 1)

    return guard(wrapper)


@kernel_app.command("run", short_help="Run one scenario on this kernel; write its run directory.")
@_kernel_guard
def kernel_run_cmd(
    scenario: ScenarioArg,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", metavar="DIR", help="Run directory (default: runs/NAME-kernel)."),
    ] = None,
    set_: SetOpt = None,
    seed: SeedOpt = None,
    force: ForceOpt = False,
    timeout: Annotated[
        str | None,
        typer.Option(
            "--timeout",
            metavar="TIME",
            help="Bound on the whole run, such as 120s (default: the duration + 60 s); past it "
            "everything is stopped and removed.",
        ),
    ] = None,
    prefix: PrefixOpt = "tcplab",
    allow_busy: Annotated[
        bool,
        typer.Option(
            "--allow-busy",
            help="Record the quiet check but do not mark the run invalid when the machine is busy (development).",
        ),
    ] = False,
    quiet: QuietOpt = False,
    no_plots: NoPlotsOpt = False,
) -> None:
    """Run one scenario on the running kernel (namespaces, veths, tbf, nft, the delay line) and
    write a run directory like tcplab run's. Exit 1 and `INVALID: ...` when the run cannot be
    trusted (busy machine, late delay line or sampler, failed agent); the directory is written."""
    _kernel_root()
    from tcplab.kernel.options import KernelOptions
    from tcplab.kernel.run import kernel_run
    from tcplab.loader import load_scenario
    from tcplab.results import check_output_dir

    prefix = kernel_prefix(prefix)
    timeout_s = None
    if timeout is not None:
        from tcplab.errors import UnitError
        from tcplab.units import parse_time

        try:
            timeout_s = parse_time(timeout, allow_zero=False) / 1e9
        except UnitError as e:
            fail(f"--timeout: {e}", 2)
    from tcplab.scenario.cost import costed_as_kernel_run

    with costed_as_kernel_run():  # limits.cpu_time bounds its wall time: the duration
        sc = load_scenario(scenario, set_ or [], seed=seed)
    warn([sc])
    out_dir = output if output is not None else Path("runs") / f"{sc.name}-kernel"
    check_output_dir(out_dir, overwrite=force)
    options = KernelOptions(prefix=prefix, timeout_s=timeout_s, allow_busy=allow_busy)
    result = kernel_run(sc, options=options, progress=not quiet, command=invocation())
    result.write(out_dir, overwrite=force, plots=not no_plots)
    if not quiet:
        env = result.kernel.get("env", {})
        typer.echo(
            f"kernel: Linux {env.get('release', '?')}, HZ {env.get('hz') or '?'}; "
            f"namespaces {prefix}-*, removed; departures from the simulated path: "
            f"{len(result.kernel.get('departures', []))} (kernel.json)"
        )
        print_run_summary(result, out_dir)
    if not result.kernel.get("valid", True):
        typer.echo("INVALID: " + "; ".join(result.kernel.get("invalid_reasons", [])), err=True)
        if result.kernel.get("machine_reasons"):  # the machine's load: how busy, how to rerun
            from tcplab.kernel.busy import busy_figures, busy_text, rerun_hint

            figures = busy_figures(result.kernel, out_dir)
            typer.echo(f"how busy: {busy_text(figures)}", err=True)
            typer.echo(rerun_hint(invocation(), figures), err=True)
        raise typer.Exit(1)


@kernel_app.command("cleanup", short_help="Remove the namespaces and work directories of PREFIX.")
@_kernel_guard
def kernel_cleanup_cmd(prefix: PrefixOpt = "tcplab") -> None:
    """Remove every namespace named PREFIX-* and the processes inside it, and the work
    directories $TMPDIR/PREFIX-kernel-* (after a killed run)."""
    _kernel_root()
    from tcplab.kernel.testbed import cleanup, cleanup_workdirs

    removed = cleanup(kernel_prefix(prefix))
    typer.echo(f"removed {plural(len(removed), 'namespace')}" + (": " + " ".join(removed) if removed else ""))
    dirs = cleanup_workdirs(kernel_prefix(prefix))
    if dirs:
        typer.echo(f"removed {plural(len(dirs), 'work directory', 'work directories')}: " + " ".join(dirs))


@kernel_app.command("info", short_help="What this kernel offers kernel mode (HZ, cc, qdiscs).")
@_kernel_guard
def kernel_info_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="The probe as JSON.")] = False,
) -> None:
    """What this kernel offers kernel mode: release, HZ, congestion controls, qdiscs, tools,
    and what kernel mode needs of this machine, each ok, MISSING or a note."""
    from dataclasses import asdict

    from tcplab.kernel.env import format_env, probe
    from tcplab.kernel.needs import format_needs, machine_needs

    env = probe()
    needs = machine_needs(env)
    if as_json:
        typer.echo(json.dumps({**env.to_dict(), "needs": [asdict(n) for n in needs]}, indent=2))
    else:
        typer.echo(format_env(env), nl=False)
        typer.echo("needs (kernel mode, on this machine):")
        typer.echo(format_needs(needs), nl=False)


def register(app: typer.Typer) -> None:
    """Add the ``tcplab kernel`` group to the root app."""
    app.add_typer(kernel_app, name="kernel", short_help="Run a scenario on this Linux kernel's TCP (root).")

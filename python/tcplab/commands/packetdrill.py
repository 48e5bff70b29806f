"""``tcplab packetdrill SCRIPT|DIR... [--tolerance-usecs N] [--report DIR] [--junit FILE]
[--kernel]``: packetdrill's TCP tests against tcplab's TCP (:mod:`tcplab.packetdrill.run`),
or with ``--kernel`` on this machine's kernel (:mod:`tcplab.packetdrill.kernel`, root).

One line per script, ``pass|fail|skip  PATH  [message]`` (the kernel's statuses add
``timeout`` and ``error``), then ``N scripts: P pass, F fail, S skip``. Exit 0 when no
script failed, 1 when one did; 2 for a path that does not exist or holds no ``*.pkt``
(one ``error:`` line, nothing run).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Annotated

import typer

from tcplab.commands.common import fail, guard, int_option

__all__ = ["register", "packetdrill_cmd"]


@guard
def packetdrill_cmd(
    paths: Annotated[list[str], typer.Argument(metavar="SCRIPT|DIR...", help="Scripts (*.pkt) or folders of them.")],
    tolerance_usecs: Annotated[
        str | None,
        typer.Option(
            "--tolerance-usecs",
            metavar="N",
            callback=int_option("tolerance-usecs", 1, 10_000_000, "a tolerance in microseconds"),
            help="packetdrill's --tolerance_usecs (default 4000; a script's own option wins).",
        ),
    ] = None,
    report: Annotated[
        str | None,
        typer.Option("--report", metavar="DIR", help="Write one text file per script and summary.json here."),
    ] = None,
    junit: Annotated[str | None, typer.Option("--junit", metavar="FILE", help="Write JUnit XML here.")] = None,
    kernel: Annotated[
        bool, typer.Option("--kernel", help="Run the scripts on this machine's kernel instead (needs root).")
    ] = False,
) -> None:
    """Run packetdrill scripts against tcplab's TCP (or the kernel's, with --kernel)."""
    from tcplab.packetdrill.corpus import common_base, find_scripts, format_line, totals_line, write_junit, write_report
    from tcplab.packetdrill.run import ScriptResult

    for p in paths:
        if not Path(p).exists():
            fail(f"{p}: no such file or directory", 2)
    scripts = find_scripts(paths)
    if not scripts:
        fail(f"{' '.join(paths)}: no packetdrill scripts (*.pkt) found", 2)
    base = common_base([str(s) for s in scripts])

    def show(r: ScriptResult) -> None:
        rel = r.path
        if base is not None:
            with contextlib.suppress(ValueError):
                rel = Path(r.path).resolve().relative_to(base).as_posix()
        typer.echo(format_line(r.status, rel, r.message))

    tol = int(tolerance_usecs) if tolerance_usecs is not None else None
    if kernel:
        results = _kernel_results(scripts, tol, show)
    else:
        from tcplab.packetdrill.corpus import run_many

        results = run_many(scripts, tolerance_usecs=tol, on_result=show)
    typer.echo(totals_line([r.status for r in results]))
    if report:
        write_report(report, results)
    if junit:
        write_junit(junit, [_as_junit(r) for r in results])
    if any(r.status not in ("pass", "skip") for r in results):
        raise typer.Exit(1)


def _kernel_results(scripts: list[Path], tolerance_usecs: int | None, show) -> list:  # noqa: ANN001
    """The kernel's runs as :class:`ScriptResult` (statuses pass, fail, timeout, error)."""
    from tcplab.packetdrill.kernel import PacketdrillBuildError, build_packetdrill, find_source, run_corpus
    from tcplab.packetdrill.run import ScriptResult

    source = find_source(scripts[0])
    if source is None:
        fail(f"{scripts[0]}: no packetdrill source found above it to build packetdrill from", 2)
    try:
        binary = build_packetdrill(source)
    except PacketdrillBuildError as e:
        fail(f"kernel: {e}", 1)
    results: list[ScriptResult] = []
    extra = [f"--tolerance_usecs={tolerance_usecs}"] if tolerance_usecs is not None else []
    from tcplab.packetdrill.kernel import run_script as kernel_run

    for s in scripts:
        k = kernel_run(binary, s, extra_args=extra) if extra else run_corpus(binary, [s])[0]
        r = ScriptResult(k.script, k.status, k.first_error, k.seconds, k.output_tail)
        show(r)
        results.append(r)
    return results


def _as_junit(r):  # noqa: ANN001, ANN202
    """A kernel's timeout or error is a JUnit failure."""
    if r.status in ("timeout", "error"):
        from dataclasses import replace

        return replace(r, status="fail", message=f"{r.status}: {r.message}")
    return r


def register(app: typer.Typer) -> None:
    """Add ``tcplab packetdrill`` to the root app."""
    app.command("packetdrill", short_help="Run packetdrill scripts against tcplab's TCP (or the kernel's).")(
        packetdrill_cmd
    )

"""``tcplab collect``: this host's TCP, qdisc and NIC counters, read-only, in a ``.tar.gz``
that ``tcplab diagnose`` reads (:mod:`tcplab.collect` runs the tools and writes it).

    tcplab collect [-o FILE.tar.gz] [--interval 10s] [--count 2] [--timeout 10s] [--force]
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tcplab.commands.common import QuietOpt, fail, guard, int_option

__all__ = ["register", "collect"]


@guard
def collect(
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            help="Archive to write; a directory: the default name in it (default: tcplab-collect-HOST-TIME.tar.gz).",
        ),
    ] = None,
    interval: Annotated[str, typer.Option("--interval", help="Time between snapshots, e.g. 10s or 500ms.")] = "10s",
    count: Annotated[
        str,
        typer.Option(
            "--count",
            metavar="N",
            callback=int_option("count", 1, 1000, "a number of snapshots"),
            help="Number of snapshots (2+ gives rates).",
        ),
    ] = "2",
    timeout: Annotated[str, typer.Option("--timeout", help="Timeout of each command, e.g. 10s.")] = "10s",
    quiet: QuietOpt = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force", "-f", help="Replace an existing file (never a link, directory, device, FIFO or socket)."
        ),
    ] = False,
) -> None:
    """Capture this host's TCP, qdisc and NIC counters, read-only, into a .tar.gz for `tcplab diagnose`."""
    from tcplab.collect import collect as run_collect
    from tcplab.errors import UnitError
    from tcplab.units import parse_time

    try:
        interval_s = parse_time(interval) / 1e9
        timeout_s = parse_time(timeout, allow_zero=False) / 1e9
    except UnitError as e:
        fail(f"--interval/--timeout: {e}", 2)
    log = (lambda _m: None) if quiet else (lambda m: typer.echo(m, err=True))
    res = run_collect(output, interval_s=interval_s, count=int(count), timeout_s=timeout_s, log=log, overwrite=force)
    if not quiet:
        typer.echo(f"wrote {res.path} ({res.snapshots} snapshots, {res.files} files, {len(res.missing)} notes)")


def register(app: typer.Typer) -> None:
    """Add ``tcplab collect`` to the root app."""
    app.command(short_help="Capture this host's TCP, qdisc and NIC counters.")(collect)

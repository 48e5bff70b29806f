"""``tcplab ss RUN [--at T] [FLOW]``: a run's sockets as ``ss -tin`` showed them at time T
(:mod:`tcplab.exports.ss_at`): a ``# NODE`` line before each node's sockets when there are
several; ss's header alone when no socket was established then. Exit 2 when RUN is not a run
directory, the flow is unknown or T is outside the run."""

from __future__ import annotations

from typing import Annotated

import typer

from tcplab.commands.common import guard
from tcplab.commands.export import RunArg

__all__ = ["register", "ss_cmd"]


@guard
def ss_cmd(
    run_dir: RunArg,
    flow: Annotated[
        str | None, typer.Argument(metavar="FLOW", help="Only this flow's two sockets (its name or index).")
    ] = None,
    at: Annotated[
        str | None,
        typer.Option("--at", metavar="T", help="The moment from the run's start: 12.3s, 500ms (default: the end)."),
    ] = None,
) -> None:
    """Print the run's sockets as ss -tin showed them at time T (a # NODE line before each node)."""
    from tcplab.exports.rundir import RunData
    from tcplab.exports.ss_at import parse_at, ss_at_text

    run = RunData.load(run_dir)
    at_ns = parse_at(run, at) if at is not None else run.duration_ns
    text = ss_at_text(run, at_ns, flow)
    if not text:  # no socket established then: ss prints its header alone
        from tcplab.results.ss import format_ss

        text = format_ss([])
    typer.echo(text, nl=False)


def register(app: typer.Typer) -> None:
    """Add ``tcplab ss`` to the root app."""
    app.command("ss", short_help="Print a run's sockets as ss -tin showed them at T.")(ss_cmd)

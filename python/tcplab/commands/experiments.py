"""``tcplab experiments [path NAME]``: the experiments ``tcplab reproduce`` runs (one per
story, :mod:`tcplab.experiments`), as a table, or one's directory; and how the commands
find an experiment by name (:func:`experiment_named`)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from tcplab.commands.common import fail, guard, stdout_console

__all__ = ["register", "experiments", "installed_experiment", "experiment_named"]


def installed_experiment(name: str) -> Any:
    """The experiment ``name``, or None if its package is not in this tcplab."""
    from tcplab.experiments.catalog import load

    try:
        return load(name)
    except ModuleNotFoundError as e:
        if not (e.name or "").startswith("tcplab.experiments"):
            raise
        return None


def experiment_named(name: str) -> Any:
    """The experiment ``name`` (a one-line user error, exit 2, if unknown or not installed)."""
    from tcplab.experiments.catalog import NAMES

    e = installed_experiment(name)
    if e is None:
        fail(
            f"experiment {name!r} is not installed in this tcplab (its package is missing); known: " + ", ".join(NAMES),
            2,
        )
    return e


@guard
def experiments(
    args: Annotated[
        list[str] | None,
        typer.Argument(metavar="[path NAME]", help="`path NAME`: print the experiment's directory."),
    ] = None,
) -> None:
    """List the experiments of tcplab reproduce, or print one's directory (`experiments path NAME`)."""
    from tcplab.experiments.catalog import NAMES

    args = list(args or [])
    if args:
        if args[0] != "path" or len(args) != 2:
            fail(f"experiments {' '.join(args)}: expected no argument, or `path NAME`", 2)
        name = args[1]
        if name not in NAMES:
            fail(f"NAME: no experiment named {name!r}; expected one of {', '.join(NAMES)}", 2)
        typer.echo(str(experiment_named(name).directory))
        return
    from tcplab.views.reproduce import story_info

    console = stdout_console()
    from rich import box
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD)
    for col in ("experiment", "story", "title", "claims", "runs quick/full"):
        table.add_column(col, justify="right" if col in ("claims", "runs quick/full") else "left")
    for name in NAMES:
        e = installed_experiment(name)
        if e is None:
            table.add_row(name, "-", "(not installed)", "-", "-")
            continue
        table.add_row(
            name,
            story_info(e.story)["heading"],
            e.title,
            str(len(e.claims)),
            f"{len(e.runs(True))}/{len(e.runs(False))}",
        )
    console.print(table)
    console.print("Run one: tcplab reproduce NAME [--quick]; all: tcplab reproduce --all --quick", markup=False)


def register(app: typer.Typer) -> None:
    """Add ``tcplab experiments`` to the root app."""
    app.command(short_help="List the experiments of reproduce, or one's path.")(experiments)

"""``tcplab scenarios [NAME]``: the built-in scenarios, one line each, or one's full
description (:mod:`tcplab.loader` finds them in ``tcplab/scenarios/``)."""

from __future__ import annotations

from typing import Annotated

import typer

from tcplab.commands.common import fail

__all__ = ["register", "scenarios"]


def scenarios(
    name: Annotated[
        str | None,
        typer.Argument(metavar="[NAME]", help="A built-in's name (or builtin:NAME): print its full description."),
    ] = None,
) -> None:
    """List the built-in scenarios, or print one's full description."""
    import yaml

    from tcplab.loader import BUILTIN_PREFIX, builtin_scenarios, resolve_reference

    names = builtin_scenarios()
    if name is None:
        for builtin, desc in names.items():
            typer.echo(f"{builtin:<28} {desc}")
        return
    bare = name[len(BUILTIN_PREFIX) :] if name.startswith(BUILTIN_PREFIX) else name
    if bare not in names:
        fail(f"unknown built-in scenario {bare!r}; expected one of: {', '.join(names)}", 2)
    _, text = resolve_reference(f"{BUILTIN_PREFIX}{bare}")
    data = yaml.safe_load(text) or {}
    typer.echo(f"{bare}\n")
    typer.echo(str(data.get("description") or "").rstrip())
    typer.echo(f"\nRun it: tcplab run builtin:{bare} -o out/{bare} (tcplab check builtin:{bare} shows what it sets up)")


def register(app: typer.Typer) -> None:
    """Add ``tcplab scenarios`` to the root app."""
    app.command(short_help="List the built-in scenarios, or describe one.")(scenarios)

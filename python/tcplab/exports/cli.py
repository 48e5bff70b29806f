"""The ``tcplab export`` group (minimal: H-exports' module replaces this one when it lands).

``register(app)`` adds ``tcplab export`` to the root ``tcplab`` app (:mod:`tcplab.cli` calls it
once); ``export_app`` is the group, and ``tcplab export pcap`` is added to it by
``tcplab.exports.pcap_cli.register(export_app)``.
"""

from __future__ import annotations

import typer
from typer.core import TyperGroup

__all__ = ["register", "export_app"]

export_app = typer.Typer(
    cls=TyperGroup,
    help="Write a run in other tools' formats: a flow's packets as a pcap file.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def register(app: typer.Typer) -> None:
    """Add ``tcplab export ...`` to the root app."""
    app.add_typer(export_app, name="export")
    from tcplab.exports.pcap_cli import register as _register_pcap

    _register_pcap(export_app)

"""What every ``tcplab`` command shares: one-line errors, the option types, the console.

The model. A command is a function that typer calls with the parsed options; what goes
wrong is said in one line and an exit code, never a traceback or a usage panel:

* :class:`OneLineErrors` is the root group's class: a command-line mistake (an unknown
  option, a bad ``--seed``) prints ``error: OPTION: ...; expected ...`` and exits 2; Ctrl-C
  and SIGTERM exit 130 and 143 (:mod:`tcplab.signals`). It records the command line of this
  invocation (:func:`invocation`), which run directories keep in ``metadata.json``.
* :func:`guard` wraps a command: tcplab's exceptions become one line and an exit code
  (a scenario mistake 2, the engine 1, an interruption 130/143, a failed write 1).
* :func:`fail`, :func:`user_error` and :func:`warn` print those lines.
* :func:`int_option` parses an integer option with a range (the one-line form again), and
  :data:`SetOpt`, :data:`SeedOpt`, :data:`QuietOpt`, :data:`ForceOpt`, :data:`NoPlotsOpt`,
  :func:`jobs_opt` are the options several commands take, with one help text each.
* :func:`stdout_console` is stdout as rich prints it: whole lines when piped.

This module imports only the leaves (errors, literals, signals, units) and typer: every
command module imports it, and ``tcplab --help`` loads them all.
"""

from __future__ import annotations

import functools
import sys
from typing import Annotated, Any, NoReturn

import typer
from typer.core import TyperGroup

from tcplab.errors import EngineError, ScenarioError, show_value
from tcplab.literals import Oversized, abbreviate_digits, read_int
from tcplab.signals import Terminated, exit_code_for, sigterm_as_interrupt, terminated_seen
from tcplab.units import U64_MAX

try:  # typer >= 0.2x carries its own copy of click
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover - older typer on click
    from click import exceptions as click_errors

__all__ = [
    "ScenarioArg",
    "OneLineErrors",
    "invocation",
    "usage_line",
    "int_option",
    "SetOpt",
    "SeedOpt",
    "QuietOpt",
    "ForceOpt",
    "NoPlotsOpt",
    "jobs_opt",
    "fail",
    "user_error",
    "warn",
    "guard",
    "stdout_console",
    "fmt",
    "group_settings",
]


def group_settings() -> dict[str, Any]:
    """What the root app and each command group (kernel, export) share: ``-h`` as
    ``--help``, no shell completion, no rich markup or tracebacks (errors are one line)."""
    return {
        "add_completion": False,
        "pretty_exceptions_enable": False,
        "rich_markup_mode": None,
        "context_settings": {"help_option_names": ["-h", "--help"]},
    }


def usage_line(e: Any) -> str:
    """One line for a command-line mistake: ``OPTION: what is wrong; expected ...``."""
    message = e.format_message().strip().rstrip(".")
    param = getattr(e, "param", None)
    if (
        isinstance(e, click_errors.BadParameter)
        and param is not None
        and not isinstance(e, click_errors.MissingParameter)
    ):
        # the long name (--seeds), else the short one (-n): a TyperOption has no
        # human_readable_name, so a short-only option must not fall back on it
        names = list(getattr(param, "opts", None) or [])
        opts = [o for o in names if o.startswith("--")] or names or [getattr(param, "name", None) or "option"]
        message = f"{opts[0]}: {e.message.strip().rstrip('.')}"
        if "expected" not in message:
            message += "; expected a value as `--help` describes"
        return message
    message = message[:1].lower() + message[1:]
    ctx = getattr(e, "ctx", None)
    where = ctx.command_path if ctx is not None else "tcplab"
    return f"{message}; see '{where} --help'"


#: The command line of this invocation, recorded in run directories (metadata.json).
_invocation: list[str] | None = None


def invocation() -> list[str] | None:
    """The command line of this invocation (``["tcplab", "run", ...]``), as the root group
    received it; None outside one (a command function called directly)."""
    return _invocation


class OneLineErrors(TyperGroup):
    """Typer's group, but command-line mistakes print one ``error:`` line (exit 2), and
    SIGTERM is handled like Ctrl-C (see :mod:`tcplab.signals`)."""

    def main(
        self,
        args: Any = None,
        prog_name: Any = None,
        complete_var: Any = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:  # noqa: E501
        global _invocation
        _invocation = ["tcplab", *(sys.argv[1:] if args is None else [str(a) for a in args])]
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            with sigterm_as_interrupt():
                rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except KeyboardInterrupt as e:  # a signal outside a command's own handling
            typer.echo("error: interrupted", err=True)
            sys.exit(exit_code_for(e))
        except click_errors.ClickException as e:
            no_args_help = getattr(click_errors, "NoArgsIsHelpError", None)
            if no_args_help is not None and isinstance(e, no_args_help):
                e.show()  # `tcplab` alone: the help text
                sys.exit(2)
            if isinstance(e, click_errors.UsageError):
                typer.echo(f"error: {usage_line(e)}", err=True)
                sys.exit(2)
            typer.echo(f"error: {e.format_message()}", err=True)
            sys.exit(e.exit_code)
        except typer.Abort as e:
            cause = e.__cause__ or e.__context__
            if isinstance(cause, KeyboardInterrupt):  # click's own handling of Ctrl-C
                typer.echo("error: terminated" if isinstance(cause, Terminated) else "error: interrupted", err=True)
                sys.exit(exit_code_for(cause))
            typer.echo("error: aborted", err=True)
            sys.exit(1)
        if rv == exit_code_for(KeyboardInterrupt()) and terminated_seen():
            # typer turned the SIGTERM of a command without its own handling into 130
            typer.echo("error: terminated", err=True)
            sys.exit(exit_code_for(Terminated()))
        sys.exit(rv if isinstance(rv, int) else 0)


def int_option(name: str, lo: int, hi: int, what: str):  # noqa: ANN201 - a typer callback
    """Parse an integer option ourselves, so a bad value gets the one-line error form."""

    def parse(value: str | None) -> int | None:
        if value is None:
            return None
        expected = f"expected {what}, an integer from {lo} to {hi}"
        number = read_int(value)
        if number is None:
            shown = abbreviate_digits(value)
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            raise typer.BadParameter(f"{shown!r} is not an integer; {expected}")
        if isinstance(number, Oversized) or not lo <= number <= hi:
            raise typer.BadParameter(f"{show_value(number)} is out of range; {expected}")
        return number

    parse.__name__ = f"parse_{name}"
    return parse


ScenarioArg = Annotated[str, typer.Argument(metavar="SCENARIO", help="A YAML file, builtin:NAME or a built-in NAME.")]
SetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        metavar="PATH=VALUE",
        help="Override a scenario field before validation, e.g. links.0.loss=0.1% or flows.0.cc=bbr. Repeatable.",
    ),
]
SeedOpt = Annotated[
    str | None,
    typer.Option(
        "--seed",
        metavar="N",
        callback=int_option("seed", 0, U64_MAX, "a seed"),
        help="Replace the scenario's seed (0 to 2^64-1).",
    ),
]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar and no summary on stdout.")]
ForceOpt = Annotated[
    bool,
    typer.Option(
        "--force", "-f", help="Replace the output directory if it exists and tcplab wrote it (never other files)."
    ),
]
NoPlotsOpt = Annotated[bool, typer.Option("--no-plots", help="Skip the PNG plots (faster).")]


def jobs_opt(help_text: str) -> Any:  # noqa: ANN401 - a typer Annotated type
    """``--jobs/-j N``: processes to run simulations in (1..1024)."""
    return Annotated[
        str | None,
        typer.Option(
            "--jobs",
            "-j",
            metavar="N",
            callback=int_option("jobs", 1, 1024, "a number of processes"),
            help=help_text,
        ),
    ]


def fail(message: str, code: int) -> NoReturn:
    """``error: MESSAGE`` on stderr, exit ``code``."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def user_error(e: ScenarioError) -> NoReturn:
    """A scenario or input mistake: one ``error:`` line per problem (at most 20), exit 2."""
    for err in e.errors[:20]:
        typer.echo(f"error: {err.line()}", err=True)
    if len(e.errors) > 20:
        typer.echo(f"error: ... and {len(e.errors) - 20} more", err=True)
    raise typer.Exit(2)


def warn(scenarios: list) -> None:
    """Print each scenario's warnings (valid values that probably mean something else), once."""
    seen: set[str] = set()
    for sc in scenarios:
        for w in sc.warnings:
            if w.line() not in seen:
                seen.add(w.line())
                typer.echo(f"warning: {w.line()}", err=True)


def guard(fn):  # noqa: ANN001, ANN201 - decorator
    """Map tcplab's exceptions to one-line messages and exit codes."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        try:
            return fn(*args, **kwargs)
        except ScenarioError as e:
            user_error(e)
        except EngineError as e:
            fail(f"engine: {e}", 1)
        except ImportError as e:
            if "tcplab._core" in str(e):
                fail(str(e), 1)
            raise
        except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM (tcplab.signals.Terminated)
            what = "terminated" if isinstance(e, Terminated) else "interrupted"
            typer.echo(f"error: {what}; no output written", err=True)
            raise typer.Exit(exit_code_for(e)) from None
        except OSError as e:  # writing the output: permissions, disk full
            where = f"{e.filename}: " if e.filename else ""
            fail(f"{where}{e.strerror or e}", 1)

    return wrapper


def stdout_console():  # noqa: ANN201
    """stdout console. Piped or redirected, lines are never wrapped or cut at 80 columns:
    each line stays whole for grep and for scripts."""
    from rich.console import Console

    if sys.stdout.isatty():
        return Console(highlight=False)
    return Console(highlight=False, soft_wrap=True, width=10_000)


def fmt(value: float | None, scale: float = 1.0, digits: int = 2) -> str:
    """A number of a table cell: ``value x scale`` with ``digits`` decimals, ``-`` for none or NaN."""
    if value is None or value != value:  # None or NaN
        return "-"
    return f"{value * scale:.{digits}f}"

"""``tcplab diagnose PATH...``: read a host's captured counters and say which known
pathology it is in (:mod:`tcplab.diagnose`), for a terminal, a machine (``--json``) or a
ticket (``--markdown``).

    tcplab diagnose PATH... [--json|--markdown|--quiet] [--scenario-dir DIR [--force]]
                    [--fail-on warning|critical]

Exit 0 it ran, 2 unusable input (``error: FILE:LINE: ...``), 1 a finding at or above
``--fail-on`` exists. ``--scenario-dir`` writes a tcplab scenario per finding that
reproduces the observed path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tcplab.commands.common import fail, stdout_console, user_error
from tcplab.errors import ScenarioError
from tcplab.signals import Terminated, exit_code_for

__all__ = ["register", "diagnose"]


def _check_scenario_dir(scenario_dir: Path) -> None:
    """``diagnose --scenario-dir DIR``, before anything is read: a path Linux takes (with
    room for the file names in it), and a directory or nothing."""
    from tcplab.output_files import NAME_MAX_BYTES, check_path_length, shown_path

    try:
        check_path_length(scenario_dir, option="--scenario-dir", reserve_bytes=1 + NAME_MAX_BYTES)
    except ScenarioError as e:
        user_error(e)
    if scenario_dir.exists() and not scenario_dir.is_dir():
        what = f"{shown_path(scenario_dir)!r} is not a directory"
        fail(f"--scenario-dir: {what}; expected a directory for the scenarios", 2)


def diagnose(
    paths: Annotated[list[Path], typer.Argument(metavar="PATH...", help="Collect archives, directories or files.")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable report on stdout.")] = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="Markdown report on stdout (for tickets).")] = False,
    scenario_dir: Annotated[
        Path | None, typer.Option("--scenario-dir", help="Write a tcplab scenario per finding into DIR.")
    ] = None,
    fail_on: Annotated[
        str | None,
        typer.Option("--fail-on", metavar="warning|critical", help="Exit 1 if a finding this severe exists."),
    ] = None,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet",
            "-q",
            help="Print nothing on stdout (errors still go to stderr); the exit status says it: 0 no finding at or "
            "above --fail-on, 1 there is one, 2 unusable input. Implies --fail-on warning unless given.",
        ),
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force", "-f", help="--scenario-dir: replace existing files (never a link, directory, device, FIFO...)."
        ),
    ] = False,
) -> None:
    """Read a host's captured counters and say which known pathology it is in."""
    from tcplab.diagnose import ParseError, diagnose_paths
    from tcplab.diagnose.report import print_terminal, to_json, to_markdown
    from tcplab.diagnose.rules import severity_at_least

    if fail_on is not None and fail_on not in ("info", "warning", "critical"):
        fail(f"--fail-on: {fail_on!r} is not a severity; expected warning or critical", 2)
    if as_json and markdown:
        fail("--json and --markdown: choose one", 2)
    if quiet and (as_json or markdown):
        fail(f"--quiet and {'--json' if as_json else '--markdown'}: choose one", 2)
    if quiet and fail_on is None:
        fail_on = "warning"  # as grep -q: the status is the answer
    if scenario_dir is not None:
        _check_scenario_dir(scenario_dir)
    try:
        host, findings = diagnose_paths(paths)
    except ParseError as e:
        fail(str(e), 2)
    except MemoryError:
        fail(f"{paths[0]}: input too large to analyse", 2)
    except KeyboardInterrupt as e:  # Ctrl-C 130, SIGTERM 143 (tcplab.signals)
        fail("terminated" if isinstance(e, Terminated) else "interrupted", exit_code_for(e))
    except OSError as e:
        fail(f"{e.filename or paths[0]}: {e.strerror or e}", 2)
    files = _write_scenarios(findings, scenario_dir, force) if scenario_dir is not None else {}
    if quiet:
        pass
    elif as_json:
        typer.echo(to_json(host, findings, files))
    elif markdown:
        typer.echo(to_markdown(host, findings, files))
    else:
        print_terminal(host, findings, files, console=stdout_console())
    if fail_on is not None and any(severity_at_least(f.severity, fail_on) for f in findings):
        raise typer.Exit(1)


def _write_scenarios(findings: list, scenario_dir: Path, force: bool) -> dict[int, str]:
    """``--scenario-dir DIR``: one scenario file per finding that has one
    (``DIR/NAME.yaml``, ``NAME-2.yaml`` when two share a name); every file may be written, or
    none is. Returns finding index -> the file written."""
    from tcplab.diagnose.scenarios import scenario_yaml
    from tcplab.output_files import check_output_file, write_file_atomically

    files: dict[int, str] = {}
    texts: dict[int, tuple[Path, str]] = {}
    for i, f in enumerate(findings):
        if f.scenario is None:
            continue
        p = scenario_dir / f"{f.scenario['name']}.yaml"
        n = 2
        while any(p == q for q, _ in texts.values()):
            p = scenario_dir / f"{f.scenario['name']}-{n}.yaml"
            n += 1
        texts[i] = (p, scenario_yaml(f.scenario))
    try:
        for p, _ in texts.values():  # every file may be written, or none is
            check_output_file(p, overwrite=force, option="--scenario-dir")
        scenario_dir.mkdir(parents=True, exist_ok=True)
        for i, (p, text) in texts.items():
            write_file_atomically(p, text, overwrite=force, make_parents=True, option="--scenario-dir")
            files[i] = str(p)
    except ScenarioError as e:
        user_error(e)
    except OSError as e:
        fail(f"{e.filename or scenario_dir}: {e.strerror or e}", 1)
    return files


def register(app: typer.Typer) -> None:
    """Add ``tcplab diagnose`` to the root app."""
    app.command(short_help="Say which known pathology captured counters show.")(diagnose)

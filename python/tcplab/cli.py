"""The ``tcplab`` command.

    tcplab run SCENARIO [-o DIR] [--set PATH=VALUE]... [--seed N] [--quiet] [--force]
    tcplab compare SCENARIO [SCENARIO...] [-o DIR] [--set PATH=V1,V2]... [--seed N]
    tcplab check SCENARIO [--set PATH=VALUE]... [--json]
    tcplab scenarios
    tcplab collect [-o FILE.tar.gz] [--interval 10s] [--count 2]
    tcplab diagnose PATH... [--json|--markdown] [--scenario-dir DIR] [--fail-on warning|critical]

SCENARIO is a YAML file, ``builtin:NAME`` or a bare built-in NAME (``tcplab scenarios``).

Exit codes: 0 success; 2 a mistake in the scenario, an override or the command line (one
``error: ...`` line per problem on stderr, nothing run, no output directory); 1 the engine
failed (``error: engine: ...``) or is not installed; 130 interrupted. ``diagnose``: 0 it ran,
2 unusable input (``error: FILE:LINE: ...``), 1 a finding at or above ``--fail-on`` exists.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from tcplab.errors import EngineError, ScenarioError

__all__ = ["app", "main"]

app = typer.Typer(
    name="tcplab",
    help="A lab for TCP congestion control: simulate a scenario with Linux-like TCP, CUBIC and BBR.",
    epilog=(
        "Example: tcplab compare builtin:cubic-vs-bbr-lossy --set flows.0.cc=cubic,bbr -o out/  "
        "(seed 001: 100 ms RTT, 5 Mbit/s, 1% loss; CUBIC against BBR)"
    ),
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

SetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        metavar="PATH=VALUE",
        help="Override a scenario field before validation, e.g. links.0.loss=0.1% or flows.0.cc=bbr. Repeatable.",
    ),
]
SeedOpt = Annotated[int | None, typer.Option("--seed", min=0, help="Replace the scenario's seed.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar and no summary on stdout.")]
ForceOpt = Annotated[bool, typer.Option("--force", "-f", help="Replace the output directory if it exists.")]
NoPlotsOpt = Annotated[bool, typer.Option("--no-plots", help="Skip the PNG plots (faster).")]


def _fail(message: str, code: int) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def _user_error(e: ScenarioError) -> NoReturn:
    for err in e.errors[:20]:
        typer.echo(f"error: {err.line()}", err=True)
    if len(e.errors) > 20:
        typer.echo(f"error: ... and {len(e.errors) - 20} more", err=True)
    raise typer.Exit(2)


def _guard(fn):  # noqa: ANN001, ANN202 - decorator
    """Map tcplab's exceptions to one-line messages and exit codes."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        try:
            return fn(*args, **kwargs)
        except ScenarioError as e:
            _user_error(e)
        except EngineError as e:
            _fail(f"engine: {e}", 1)
        except ImportError as e:
            if "tcplab._core" in str(e):
                _fail(str(e), 1)
            raise
        except KeyboardInterrupt:
            typer.echo("error: interrupted; no output written", err=True)
            raise typer.Exit(130) from None
        except OSError as e:  # writing the output: permissions, disk full
            where = f"{e.filename}: " if e.filename else ""
            _fail(f"{where}{e.strerror or e}", 1)

    return wrapper


def _console():  # noqa: ANN202
    from rich.console import Console

    return Console(highlight=False)


def _fmt(value: float | None, scale: float = 1.0, digits: int = 2) -> str:
    if value is None or value != value:  # None or NaN
        return "-"
    return f"{value * scale:.{digits}f}"


def _print_run_summary(result, out_dir: Path) -> None:  # noqa: ANN001
    from rich import box
    from rich.table import Table

    console = _console()
    s = result.summary
    table = Table(
        title=f"{s['scenario']} (seed {s['seed']}, {s['duration_s']:g} s)", title_justify="left", box=box.SIMPLE_HEAD
    )
    table.add_column("flow", no_wrap=True)
    table.add_column("cc")
    for col in ("goodput Mbit/s", "retrans %", "RTOs", "RTT p50 ms", "RTT p99 ms"):
        table.add_column(col, justify="right")
    for f in s["flows"]:
        table.add_row(
            f["name"],
            f["cc"],
            _fmt(f["goodput_bps"], 1e-6, 3),
            _fmt(f["retrans_ratio"], 100.0),
            str(f["timeouts"]),
            _fmt(f["rtt_p50_ms"], 1, 1),
            _fmt(f["rtt_p99_ms"], 1, 1),
        )
    console.print(table)
    drops = [f"{link['name']} {link['drops']}" for link in s["links"] if link.get("drops")]
    if drops:
        console.print("queue drops: " + ", ".join(drops))
    inv = s["invariant"]
    if not inv.get("ok", True):
        console.print(f"[bold red]packet accounting failed:[/] {inv.get('message', '')}")
    console.print(f"wrote {out_dir}")


@app.command()
@_guard
def run(
    scenario: Annotated[str, typer.Argument(metavar="SCENARIO", help="A YAML file, builtin:NAME or a built-in NAME.")],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Run directory (default: runs/NAME, NAME from the scenario).")
    ] = None,
    set_: SetOpt = None,
    seed: SeedOpt = None,
    quiet: QuietOpt = False,
    force: ForceOpt = False,
    no_plots: NoPlotsOpt = False,
) -> None:
    """Simulate one scenario and write its run directory."""
    from tcplab.loader import load_scenario
    from tcplab.progress import SimProgress
    from tcplab.results import check_output_dir
    from tcplab.runner import run as run_scenario

    sc = load_scenario(scenario, set_ or [], seed=seed)
    out_dir = output if output is not None else Path("runs") / sc.name
    check_output_dir(out_dir, overwrite=force)
    with SimProgress(sc.name, enabled=None if not quiet else False) as progress:
        result = run_scenario(sc, progress=progress)
    result.write(out_dir, overwrite=force, plots=not no_plots)
    if not quiet:
        _print_run_summary(result, out_dir)


@app.command()
@_guard
def compare(
    scenarios: Annotated[list[str], typer.Argument(metavar="SCENARIO...", help="One or more scenarios.")],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Comparison directory (default: runs/compare-NAME).")
    ] = None,
    set_: SetOpt = None,
    seed: SeedOpt = None,
    quiet: QuietOpt = False,
    force: ForceOpt = False,
    no_plots: NoPlotsOpt = False,
    jobs: Annotated[
        int | None,
        typer.Option(
            "--jobs", "-j", min=1, help="Processes to run variants in (default: one per core, at most one per variant)."
        ),
    ] = None,
) -> None:
    """Run several scenarios, or one with --set PATH=A,B alternatives, side by side."""
    from tcplab.compare import default_jobs, plan_variants, run_variants
    from tcplab.results import check_output_dir

    variants = plan_variants(scenarios, set_ or [], seed=seed)
    out_dir = output if output is not None else Path("runs") / f"compare-{variants[0].scenario.name}"
    check_output_dir(out_dir, overwrite=force)
    n_jobs = jobs if jobs is not None else default_jobs(len(variants))
    if n_jobs > 1 and len(variants) > 1 and not quiet:
        _console().print(f"running {len(variants)} variants in {min(n_jobs, len(variants))} processes")
    cmp = run_variants(variants, progress=not quiet, jobs=n_jobs)
    cmp.write(out_dir, overwrite=force, plots=not no_plots)
    if not quiet:
        from rich import box
        from rich.table import Table

        table = Table(title="tcplab compare", title_justify="left", box=box.SIMPLE_HEAD)
        table.add_column("metric")
        for v in variants:
            table.add_column(v.label, justify="right")
        for metric, row in cmp.table.iterrows():
            digits = 0 if metric in ("timeouts", "queue drops", "loss drops") else (3 if "goodput" in str(metric) else 2)
            table.add_row(str(metric), *[_fmt(x, 1.0, digits) for x in row.tolist()])
        console = _console()
        console.print(table)
        console.print(f"wrote {out_dir}")


@app.command()
@_guard
def check(
    scenario: Annotated[str, typer.Argument(metavar="SCENARIO")],
    set_: SetOpt = None,
    seed: SeedOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the resolved engine configuration as JSON.")] = False,
) -> None:
    """Validate a scenario and show how it resolves (routes, queue limits); runs nothing."""
    from tcplab.loader import load_scenario
    from tcplab.units import format_size, format_time, human_rate

    sc = load_scenario(scenario, set_ or [], seed=seed)
    core = sc.to_core()
    if as_json:
        typer.echo(json.dumps(core, indent=2))
        return
    console = _console()
    console.print(
        f"{sc.name}: ok ({len(core['nodes'])} nodes, {len(core['links'])} one-way links, {len(core['flows'])} flows)"
    )
    for link in core["links"]:
        q = link["queue"]
        limit = f"{q['limit_packets']}p" if q["kind"] == "pfifo" else format_size(q["limit_bytes"])
        loss = link["loss"]
        loss_text = {"none": "no loss", "bernoulli": f"loss {loss.get('p', 0) * 100:g}%"}.get(
            loss["kind"], loss["kind"]
        )
        console.print(
            f"  link {link['name']}: {human_rate(link['rate_bps'])}, delay {format_time(link['delay_ns'])}, "
            f"{loss_text}, {q['kind']} limit {limit}",
            markup=False,
        )
    for route in sc.routes():
        console.print(
            f"  flow {route['flow']}: data {' '.join(route['data'])}; acks {' '.join(route['ack'])}; "
            f"base RTT {format_time(route['base_rtt_ns'])}",
            markup=False,
        )


@app.command()
def scenarios() -> None:
    """List the built-in scenarios."""
    from tcplab.loader import builtin_scenarios

    for name, desc in builtin_scenarios().items():
        typer.echo(f"{name:<28} {desc}")


@app.command()
@_guard
def collect(
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Archive to write (default: tcplab-collect-HOST-TIME.tar.gz).")
    ] = None,
    interval: Annotated[str, typer.Option("--interval", help="Time between snapshots, e.g. 10s or 500ms.")] = "10s",
    count: Annotated[int, typer.Option("--count", min=1, max=1000, help="Number of snapshots (2+ gives rates).")] = 2,
    timeout: Annotated[str, typer.Option("--timeout", help="Timeout of each command, e.g. 10s.")] = "10s",
    quiet: QuietOpt = False,
) -> None:
    """Capture this host's TCP, qdisc and NIC counters, read-only, into a .tar.gz for `tcplab diagnose`."""
    from tcplab.collect import collect as run_collect
    from tcplab.errors import UnitError
    from tcplab.units import parse_time

    try:
        interval_s = parse_time(interval) / 1e9
        timeout_s = parse_time(timeout, allow_zero=False) / 1e9
    except UnitError as e:
        _fail(f"--interval/--timeout: {e}", 2)
    log = (lambda _m: None) if quiet else (lambda m: typer.echo(m, err=True))
    res = run_collect(output, interval_s=interval_s, count=count, timeout_s=timeout_s, log=log)
    if not quiet:
        typer.echo(f"wrote {res.path} ({res.snapshots} snapshots, {res.files} files, {len(res.missing)} notes)")


@app.command()
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
) -> None:
    """Read a host's captured counters and say which known pathology it is in."""
    from tcplab.diagnose import ParseError, diagnose_paths
    from tcplab.diagnose.report import print_terminal, to_json, to_markdown
    from tcplab.diagnose.rules import severity_at_least

    if fail_on is not None and fail_on not in ("info", "warning", "critical"):
        _fail(f"--fail-on: {fail_on!r} is not a severity; expected warning or critical", 2)
    if as_json and markdown:
        _fail("--json and --markdown: choose one", 2)
    try:
        host, findings = diagnose_paths(paths)
    except ParseError as e:
        _fail(str(e), 2)
    except MemoryError:
        _fail(f"{paths[0]}: input too large to analyse", 2)
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    except OSError as e:
        _fail(f"{e.filename or paths[0]}: {e.strerror or e}", 2)
    files: dict[int, str] = {}
    if scenario_dir is not None:
        from tcplab.diagnose.scenarios import scenario_yaml

        try:
            scenario_dir.mkdir(parents=True, exist_ok=True)
            for i, f in enumerate(findings):
                if f.scenario is None:
                    continue
                p = scenario_dir / f"{f.scenario['name']}.yaml"
                n = 2
                while str(p) in files.values():
                    p = scenario_dir / f"{f.scenario['name']}-{n}.yaml"
                    n += 1
                p.write_text(scenario_yaml(f.scenario))
                files[i] = str(p)
        except OSError as e:
            _fail(f"{e.filename or scenario_dir}: {e.strerror or e}", 1)
    if as_json:
        typer.echo(to_json(host, findings, files))
    elif markdown:
        typer.echo(to_markdown(host, findings, files))
    else:
        print_terminal(host, findings, files)
    if fail_on is not None and any(severity_at_least(f.severity, fail_on) for f in findings):
        raise typer.Exit(1)


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except BrokenPipeError:  # `tcplab scenarios | head`
        sys.stderr.close()
        sys.exit(1)

"""The ``tcplab`` command.

    tcplab run SCENARIO [-o DIR] [--set PATH=VALUE]... [--seed N] [--quiet] [--force]
               [--pcap FLOW [--pcap-at sender|receiver]]
    tcplab compare SCENARIO [SCENARIO...] [-o DIR] [--set PATH=V1,V2]... [--seed N]
    tcplab sweep SCENARIO --grid PATH=V1,V2 [--random PATH=LO..HI -n N] [--seeds K] -o DIR [--jobs N | --dask ADDR]
    tcplab recommend SWEEP_DIR|SCENARIO --choose PATH[=V1,V2]... [--over PATH[=V1,V2|=LO..HI]]...
                     (--maximize M | --minimize M) [--subject-to C]... [-o DIR] [--json]
    tcplab check SCENARIO [--set PATH=VALUE]... [--json]
    tcplab validate SCENARIO [-o DIR] [--set PATH=VALUE]... [--tolerance K=V,...] [--runs N] [--prefix P] [--allow-busy]
    tcplab scenarios
    tcplab collect [-o FILE.tar.gz] [--interval 10s] [--count 2] [--force]
    tcplab diagnose PATH... [--json|--markdown] [--scenario-dir DIR [--force]] [--fail-on warning|critical]
    tcplab reproduce NAME... | --all [--quick] [-o DIR] [--jobs N] [--force]
    tcplab experiments [path NAME]
    tcplab kernel run SCENARIO [-o DIR] [--set ...] [--seed N] [--force] [--timeout T] [--prefix P] [--allow-busy]
    tcplab kernel cleanup [--prefix P] | tcplab kernel info [--json]
    tcplab export flent RUN [-o FILE] [--force]
    tcplab export iperf3 RUN [--flow F] [--interval 1s] [-o PATH] [--force]
    tcplab export pcap RUN --flow FLOW [--at sender|receiver] [-o FILE] [--max-packets N] [--force]
    tcplab ss RUN [--at T] [FLOW]

SCENARIO is a YAML file, ``builtin:NAME`` or a bare built-in NAME (``tcplab scenarios``).

Exit codes: 0 success; 2 a mistake in the scenario, an override or the command line (one
``error: ...`` line per problem on stderr, nothing run, no output directory); 1 the engine
failed (``error: engine: ...``) or is not installed, or writing the output failed (a full
disk: ``error: PATH: No space left on device``, nothing half-written left); 3 ``compare``:
some variants failed (the others are written, the failed ones are marked in the table and
compare.json); 130
interrupted (SIGINT), 143 terminated (SIGTERM), in both cases after removing partial output
and stopping worker processes (see :mod:`tcplab.signals`). ``sweep``: 3 some runs failed (recorded
in the table and failed/KEY.json, the rest written); 130/143 keep the runs done (the same
command resumes). ``recommend``: 4 no setting meets the constraints (the ranking is still
printed and written); its scenario form's sweep keeps the runs done when interrupted (the
same command resumes). ``diagnose``: 0 it ran, 2 unusable
input (``error: FILE:LINE: ...``), 1 a finding at or above ``--fail-on`` exists.
``reproduce``: 0 the experiments ran (whatever their verdicts), 1 a run or an experiment
failed (stated in its report and the index), 2 an unknown name, no name and no ``--all``, or
a scenario of an experiment that does not validate (nothing run, nothing written).
``kernel run``: 0 a valid run; 1 the run failed (``error: kernel: ...``, nothing written) or is
INVALID (``INVALID: reasons`` on stderr, the directory written and marked); 2 not root (``tcplab
kernel: needs root ...``), a scenario mistake, or something kernel mode cannot build
(``error: kernel: sch_fq is not available on this kernel (links.1.queue.qdisc=fq)``), nothing
created; 130/143 interrupted, after removing its namespaces and processes.
``validate``: 0 both runs ran (whatever the verdicts), 1 a run failed or the kernel run is
invalid (``INVALID: reasons``; the directory is still written), 2 a mistake in the scenario,
a ``--tolerance`` or the command line, not root, or a scenario kernel mode cannot build.
``export``, ``ss``: 0 written (printed), 2 RUN is not a run directory, an unknown flow, a
time outside the run, an ``-o`` that exists (without ``--force``) or is not a regular file
(one ``error:`` line naming it, nothing written). Output paths (every ``-o``, ``--scenario-dir``)
are checked before anything runs: too long for Linux (PATH_MAX, NAME_MAX) is exit 2.
``export pcap``: 0 written; 2 RUN is not a simulation run directory, an unknown flow, or RUN
was made by another engine version (one ``error:`` line, nothing written); 1 the engine
failed or its rerun of RUN differs from RUN.

Command-line mistakes (a bad ``--seed``, ``-j 0``, an unknown option) are reported in the same
one-line ``error: OPTION: ...; expected ...`` form as scenario errors, never as a usage panel.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from typer.core import TyperGroup

from tcplab.errors import EngineError, ScenarioError, show_value
from tcplab.literals import Oversized, abbreviate_digits, read_int
from tcplab.signals import Terminated, exit_code_for, sigterm_as_interrupt, terminated_seen
from tcplab.units import plural

try:  # typer >= 0.2x carries its own copy of click
    from typer._click import exceptions as _click_errors
except ImportError:  # pragma: no cover - older typer on click
    from click import exceptions as _click_errors

__all__ = ["app", "main", "EXIT_VARIANTS_FAILED"]

#: ``tcplab compare`` exit code when at least one variant failed (the others were written).
EXIT_VARIANTS_FAILED = 3

U64_MAX = 2**64 - 1


def _usage_line(e: Any) -> str:
    """One line for a command-line mistake: ``OPTION: what is wrong; expected ...``."""
    message = e.format_message().strip().rstrip(".")
    param = getattr(e, "param", None)
    if (
        isinstance(e, _click_errors.BadParameter)
        and param is not None
        and not isinstance(e, _click_errors.MissingParameter)
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
_INVOCATION: list[str] | None = None


class _OneLineErrors(TyperGroup):
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
        global _INVOCATION
        _INVOCATION = ["tcplab", *(sys.argv[1:] if args is None else [str(a) for a in args])]
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            with sigterm_as_interrupt():
                rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except KeyboardInterrupt as e:  # a signal outside a command's own handling
            typer.echo("error: interrupted", err=True)
            sys.exit(exit_code_for(e))
        except _click_errors.ClickException as e:
            no_args_help = getattr(_click_errors, "NoArgsIsHelpError", None)
            if no_args_help is not None and isinstance(e, no_args_help):
                e.show()  # `tcplab` alone: the help text
                sys.exit(2)
            if isinstance(e, _click_errors.UsageError):
                typer.echo(f"error: {_usage_line(e)}", err=True)
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


#: The most runs of each world ``validate --runs`` takes: one after the other, each at least the
#: scenario's duration on the kernel side (the seeds' list is made up front, so 10^16 runs was a
#: MemoryError before anything ran).
MAX_VALIDATE_RUNS = 10_000


def _int_option(name: str, lo: int, hi: int, what: str):  # noqa: ANN202 - a typer callback
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


def _show_version(value: bool) -> None:
    if not value:
        return
    import platform

    from tcplab.version import __version__

    try:
        from tcplab import _core

        engine = f"engine {_core.__version__}"
    except ImportError:
        engine = "engine not built"
    typer.echo(f"tcplab {__version__} ({engine}, Python {platform.python_version()})")
    raise typer.Exit(0)


app = typer.Typer(
    cls=_OneLineErrors,
    name="tcplab",
    help="A lab for TCP congestion control: simulate a scenario with Linux-like TCP, CUBIC and BBR.",
    epilog=(
        "Example: tcplab compare builtin:cubic-vs-bbr-lossy --set flows.0.cc=cubic,bbr -o out/  "
        "(story 001, BBR vs CUBIC video demo: 100 ms RTT, 5 Mbit/s, 1% loss). "
        "The five stories tcplab is built around: docs/stories.md; replay them all with "
        "tcplab reproduce --all --quick -o out/reproduce (what make reproduce runs; index in "
        "out/reproduce/index.html).\n\n"
        "Exit codes: 0 success; 1 the engine failed, or writing the output failed (a full "
        "disk); 2 a mistake in the scenario, an override or the command line (one `error:` "
        "line each); 3 compare: some variants failed (the others "
        "are written), sweep: some runs failed (the table records them); 130 interrupted (Ctrl-C), "
        "143 terminated (SIGTERM), after removing "
        "partial output and stopping workers."
    ),
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", is_eager=True, callback=_show_version, help="Show tcplab's version and exit."),
    ] = False,
) -> None:
    pass


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
        callback=_int_option("seed", 0, U64_MAX, "a seed"),
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


def _jobs_opt(help_text: str) -> Any:  # noqa: ANN401 - a typer Annotated type
    """``--jobs/-j N``: processes to run simulations in (1..1024)."""
    return Annotated[
        str | None,
        typer.Option(
            "--jobs",
            "-j",
            metavar="N",
            callback=_int_option("jobs", 1, 1024, "a number of processes"),
            help=help_text,
        ),
    ]


def _fail(message: str, code: int) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def _user_error(e: ScenarioError) -> NoReturn:
    for err in e.errors[:20]:
        typer.echo(f"error: {err.line()}", err=True)
    if len(e.errors) > 20:
        typer.echo(f"error: ... and {len(e.errors) - 20} more", err=True)
    raise typer.Exit(2)


def _warn(scenarios: list) -> None:
    """Print each scenario's warnings (valid values that probably mean something else), once."""
    seen: set[str] = set()
    for sc in scenarios:
        for w in sc.warnings:
            if w.line() not in seen:
                seen.add(w.line())
                typer.echo(f"warning: {w.line()}", err=True)


def _engine_check(core: dict, sc: Any = None) -> None:
    """The engine's own verdict on a resolved scenario, when the engine is built: what it
    would refuse is an error now (exit 2), what it would warn about a warning (with the
    scenario's YAML paths for the engine's app and flow paths when ``sc`` is given)."""
    try:
        from tcplab.engine import import_core

        validate = getattr(import_core(), "validate", None)
    except ImportError:
        return
    if validate is None:
        return
    try:
        for text in validate(json.dumps(core)):
            typer.echo(f"warning: {text}", err=True)
    except ValueError as e:
        text = str(e)
        if sc is not None:
            from tcplab.scenario.checks import engine_message

            text = engine_message(sc, text)
        _fail(f"engine: {text}", 2)


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
        except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM (tcplab.signals.Terminated)
            what = "terminated" if isinstance(e, Terminated) else "interrupted"
            typer.echo(f"error: {what}; no output written", err=True)
            raise typer.Exit(exit_code_for(e)) from None
        except OSError as e:  # writing the output: permissions, disk full
            where = f"{e.filename}: " if e.filename else ""
            _fail(f"{where}{e.strerror or e}", 1)

    return wrapper


def _console():  # noqa: ANN202
    """stdout console. Piped or redirected, lines are never wrapped or cut at 80 columns:
    each line stays whole for grep and for scripts."""
    from rich.console import Console

    if sys.stdout.isatty():
        return Console(highlight=False)
    return Console(highlight=False, soft_wrap=True, width=10_000)


def _rate_mbit(bps: float) -> str:
    """Rates in ``check`` output: always Mbit/s (``1000 Mbit/s``, ``0.064 Mbit/s``)."""
    return f"{bps / 1e6:.6g} Mbit/s"


def _time_ms(ns: int) -> str:
    """Times in ``check`` output: always ms, exact to the nanosecond (``0.05 ms``, ``100.1 ms``)."""
    text = f"{int(ns) / 1e6:.6f}".rstrip("0").rstrip(".")
    return f"{text} ms"


def _fmt(value: float | None, scale: float = 1.0, digits: int = 2) -> str:
    if value is None or value != value:  # None or NaN
        return "-"
    return f"{value * scale:.{digits}f}"


_TIMED_QDISCS = ("tbf", "fq", "fq_codel")


def _rate_text(bps: float) -> str:
    """A rate as tc prints one: ``500 kbit/s``, ``10 Mbit/s``, ``1 Gbit/s`` (3 significant digits)."""
    for unit, scale in (("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
        if bps >= scale:
            return f"{bps / scale:.3g} {unit}"
    return f"{bps:.3g} bit/s"


def _datapath_lines(summary: dict) -> list[str]:
    """One line per timed qdisc (tc's dropped/overlimits and the drop-like xstats), per NIC
    (its nonzero drop counters, by their ethtool -S names) and per CPU model (steal)."""
    from tcplab.diagnose.ethtool import concept_of

    lines = []
    for link in summary.get("links", []):
        if link.get("qdisc") not in _TIMED_QDISCS:
            continue
        text = (
            f"qdisc {link['qdisc']} on {link.get('node', '?')} {link.get('dev', '?')} ({link['name']}): "
            f"dropped {link.get('drops') or 0}, overlimits {link.get('overlimits') or 0}"
        )
        extra = [
            f"{k} {v}"
            for k, v in (link.get("xstats") or {}).items()
            if v and k in ("flows_plimit", "horizon_drops", "horizon_caps", "drop_overlimit", "ecn_mark")
        ]
        lines.append(text + (", " + ", ".join(extra) if extra else ""))
    for link in summary.get("links", []):
        # Cilium's EDT drops (bpf/lib/edt.h: 2 s or more ahead) happen before the qdisc: not
        # in tc's counters (bpftool / cilium monitor show them on a real node).
        for edt in link.get("edt") or []:
            lines.append(
                f"edt on {link.get('node', '?')} {link.get('dev', '?')} (pod {', '.join(edt.get('pods') or ['?'])}, "
                f"{_rate_text(edt.get('rate_bps') or 0)}): dropped {edt.get('drops') or 0}"
            )
    for host in summary.get("hosts", []):
        nic = host.get("nic")
        if nic:
            counters = nic.get("ethtool") or {}
            drops = [f"{k} {v}" for k, v in counters.items() if v and concept_of(k)]
            lines.append(
                f"nic {host['name']} eth0 ({nic.get('driver', '?')}, rx ring {nic.get('rx_ring', '?')}): "
                + (", ".join(drops) if drops else "no ring drops")
            )
        cpu = host.get("cpu")
        if cpu:
            lines.append(
                f"cpu {host['name']}: steal {100 * (cpu.get('steal_ratio') or 0.0):.1f} % "
                f"(runs {100 * (cpu.get('share') or 0.0):g} % of every {(cpu.get('period_ns') or 0) / 1e6:g} ms)"
            )
    return lines


def _app_lines(result) -> list[str]:  # noqa: ANN001
    """One line per application (workload) with its headline metrics:
    ``app NAME (KIND): metric value, ...`` (tcplab.results.apps.headline)."""
    from tcplab.results.apps import headline_text

    return [f"app {headline_text(app)}" for app in getattr(result, "apps", {}).values()]


def _joined(value: Any) -> str:
    return ",".join(value) if isinstance(value, list) else str(value)


def _ends(f: dict) -> str:
    """A summary flow's client -> server (``from -> to``)."""
    return f"{_joined(f.get('from'))} -> {_joined(f.get('to'))}"


def _data_dir(f: dict) -> str:
    """A summary flow's data direction, ``data_from -> data_to`` (the sender whose goodput,
    cwnd and RTT the row shows: the server for maerts, bidir's .rev, hls, nfs_stream)."""
    if f.get("data_from") is None:
        return _ends(f)
    return f"{_joined(f['data_from'])} -> {_joined(f.get('data_to'))}"


#: rwnd/sndbuf-limited share (percent of busy time) from which the CLI shows the column.
LIMITED_SHOWN_PCT = 1.0


def _show_limited(flows: list[dict], config: dict) -> bool:
    """Show the ``rwnd-lim %`` column (ss's rwnd_limited:Xms(Y%)) when a flow has a reader
    that is not immediate (a slow reader: ``reader:`` in the scenario) or any flow was
    receive-window- or send-buffer-limited for at least LIMITED_SHOWN_PCT % of its busy time."""
    if any((f.get("reader") or {}).get("kind", "immediate") != "immediate" for f in config.get("flows", [])):
        return True
    for f in flows:
        busy = f.get("busy_ms") or 0.0
        if (f.get("rwnd_limited_pct") or 0.0) >= LIMITED_SHOWN_PCT:
            return True
        if busy > 0 and 100.0 * (f.get("sndbuf_limited_ms") or 0.0) / busy >= LIMITED_SHOWN_PCT:
            return True
    return False


def _print_run_summary(result, out_dir: Path) -> None:  # noqa: ANN001
    from rich import box
    from rich.table import Table
    from rich.text import Text

    console = _console()
    s = result.summary
    table = Table(
        title=Text(f"{s['title']} (seed {s['seed']}, {s['duration_s']:g} s)"),  # Text: "[a=b]" is not markup
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    flows = s["flows"]  # an app's many connections are already one row (summary.json)
    show_data = any(_data_dir(f) != _ends(f) for f in flows)
    show_limited = _show_limited(flows, getattr(result, "config", {}) or {})
    table.add_column("flow", no_wrap=True)
    if show_data:
        table.add_column("data")
    table.add_column("cc")
    cols = ["goodput Mbit/s", "retrans %", "RTOs", "RTT p50 ms", "RTT p99 ms"]
    if show_limited:
        cols.append("rwnd-lim %")
    for col in cols:
        table.add_column(col, justify="right")
    for f in flows:
        n = f.get("connections")
        cells = [Text(f"{f['name']} ({n} connections)" if n else f["name"])]
        if show_data:
            cells.append(Text(_data_dir(f)))
        cc = f["cc"]
        cells += [
            Text(",".join(cc) if isinstance(cc, list) else cc),
            _fmt(f["goodput_bps"], 1e-6, 3),
            _fmt(f["retrans_ratio"], 100.0),
            str(f["timeouts"]),
            _fmt(f["rtt_p50_ms"], 1, 1) if not n else "-",
            _fmt(f["rtt_p99_ms"], 1, 1) if not n else "-",
        ]
        if show_limited:
            cells.append(_fmt(f.get("rwnd_limited_pct"), 1, 1))
        table.add_row(*cells)
    console.print(table)
    drops = [f"{link['name']} {link['drops']}" for link in s["links"] if link.get("drops")]
    if drops:
        console.print("queue drops: " + ", ".join(drops))
    for line in _datapath_lines(s):
        console.print(Text(line))
    for line in _app_lines(result):
        console.print(Text(line))
    # cwnd-collapse / stuck episodes (tcplab.results.stuck): nothing when none
    from tcplab.results.stuck import episode_line

    for ep in s.get("stuck") or []:
        console.print(Text("warning: " + episode_line(ep)))
    inv = s["invariant"]
    rtt = inv.get("rtt_floor") or {}
    if not inv.get("ok", True):
        if rtt.get("ok", True) is False:
            console.print(f"[bold red]RTT check failed:[/] {rtt.get('message', '')}")
        if not inv.get("accounting_ok", rtt.get("ok", True) is False):
            console.print(f"[bold red]packet accounting failed:[/] {inv.get('message', '')}")
    console.print(f"wrote {out_dir}")


@app.command()
@_guard
def run(
    scenario: Annotated[str, typer.Argument(metavar="SCENARIO", help="A YAML file, builtin:NAME or a built-in NAME.")],
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", metavar="DIR", help="Run directory (default: runs/NAME, NAME from the scenario)."
        ),
    ] = None,
    set_: SetOpt = None,
    seed: SeedOpt = None,
    quiet: QuietOpt = False,
    force: ForceOpt = False,
    no_plots: NoPlotsOpt = False,
    pcap: Annotated[
        str | None,
        typer.Option(
            "--pcap",
            metavar="FLOW",
            help="Also write FLOW.pcap in the run directory: the flow's packets as tcpdump -s 128 on its "
            "sender records them (headers, real TCP options). FLOW: a flow name or index.",
        ),
    ] = None,
    pcap_at: Annotated[
        str | None,
        typer.Option("--pcap-at", metavar="SIDE", help="Where --pcap captures: sender (default) or receiver."),
    ] = None,
) -> None:
    """Simulate one scenario and write its run directory."""
    from tcplab.loader import load_scenario
    from tcplab.progress import SimProgress
    from tcplab.results import check_output_dir
    from tcplab.runner import override_texts
    from tcplab.runner import run as run_scenario

    sc = load_scenario(scenario, set_ or [], seed=seed)
    _warn([sc])
    capture = None
    if pcap_at is not None and pcap is None:
        _fail(f"--pcap-at: {pcap_at!r} given without --pcap; expected --pcap FLOW with it", 2)
    if pcap is not None:
        from tcplab.exports.pcap import capture_config

        capture = {"flow": pcap, "at": pcap_at or "sender"}
        capture_config(sc.to_core(), **capture)  # an unknown flow or side: exit 2 before running
    out_dir = output if output is not None else Path("runs") / sc.name
    check_output_dir(out_dir, overwrite=force)
    import warnings

    from tcplab.errors import EngineWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", EngineWarning)
        with SimProgress(sc.name, enabled=None if not quiet else False) as progress:
            result = run_scenario(
                sc,
                progress=progress,
                applied_overrides=override_texts(set_ or [], seed),
                command=_INVOCATION,
                capture=capture,
            )
    for w in caught:
        if issubclass(w.category, EngineWarning):
            typer.echo(f"warning: {w.message}", err=True)
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    result.write(out_dir, overwrite=force, plots=not no_plots)
    pcap_line = None
    if result.capture is not None:
        from tcplab.exports.pcap import pcap_name
        from tcplab.exports.pcap_cli import capture_summary

        line, warning = capture_summary(
            out_dir / pcap_name(result.config, result.capture.flow),
            len(result.capture.packets),
            result.capture.truncated,
        )
        if warning:
            typer.echo(f"warning: {warning}", err=True)
        pcap_line = line
    if not quiet:
        _print_run_summary(result, out_dir)
        if pcap_line:
            typer.echo(pcap_line)


@app.command()
@_guard
def compare(
    scenarios: Annotated[list[str], typer.Argument(metavar="SCENARIO...", help="One or more scenarios.")],
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", metavar="DIR", help="Comparison directory (default: runs/compare-NAME)."),
    ] = None,
    set_: SetOpt = None,
    seed: SeedOpt = None,
    quiet: QuietOpt = False,
    force: ForceOpt = False,
    no_plots: NoPlotsOpt = False,
    jobs: _jobs_opt("Processes to run variants in (default: one per core, at most one per variant).") = None,
) -> None:
    """Run several scenarios, or one with --set PATH=A,B alternatives, side by side.

    Each variant runs on its own: if some fail (the engine rejects one, its worker dies),
    the others are still written, the failed ones are marked FAILED in the table and in
    compare.json, one `error: variant LABEL: ...` line each goes to stderr, and the exit
    code is 3.
    """
    from tcplab.compare import default_jobs, plan_variants, run_variants
    from tcplab.results import check_output_dir

    variants = plan_variants(scenarios, set_ or [], seed=seed)
    _warn([v.scenario for v in variants])
    out_dir = output if output is not None else Path("runs") / f"compare-{variants[0].scenario.name}"
    check_output_dir(out_dir, overwrite=force)
    n_jobs = int(jobs) if jobs is not None else default_jobs(len(variants))
    if n_jobs > 1 and len(variants) > 1 and not quiet:
        _console().print(f"running {len(variants)} variants in {min(n_jobs, len(variants))} processes")
    # Each variant in its own worker process: one that the engine rejects or whose worker
    # dies fails alone; the others are written. Off a terminal, one line per finished
    # variant (as reproduce); on one, each variant's bar of simulated time when they run one
    # at a time, else a bar of variants.
    from tcplab.progress import RunLines

    one_at_a_time = min(n_jobs, len(variants)) == 1
    lines = RunLines(len(variants), title="compare", what="writing the comparison", quiet=quiet, bar=not one_at_a_time)
    try:
        cmp = run_variants(
            variants,
            progress=not quiet,
            jobs=n_jobs,
            isolate=True,
            command=_INVOCATION,
            on_done=lambda done, label, failure: lines(done, len(variants), label, failure),
        )
    finally:
        lines.close()
    if cmp.results:
        cmp.write(out_dir, overwrite=force, plots=not no_plots)
    if not quiet:
        from rich import box
        from rich.table import Table

        table = Table(title="tcplab compare", title_justify="left", box=box.SIMPLE_HEAD)
        table.add_column("metric")
        for v in variants:
            table.add_column(v.label, justify="right")
        if cmp.failures:
            table.add_row("status", *["FAILED" if v.label in cmp.failures else "ok" for v in variants])
        for metric, row in cmp.table.iterrows():
            counts = ("timeouts", "queue drops", "loss drops")
            values = [x for x in row.tolist() if x == x]
            # counts (an app's stalls, timeouts) without decimals; rates and times with them
            whole = "(" not in str(metric) and all(float(x).is_integer() for x in values)
            digits = 0 if metric in counts or whole else (3 if "goodput" in str(metric) else 2)
            table.add_row(str(metric), *[_fmt(x, 1.0, digits) for x in row.tolist()])
        console = _console()
        console.print(table)
        if cmp.results:
            console.print(f"wrote {out_dir}", markup=False)
    for failure in cmp.failures.values():
        typer.echo(f"error: variant {failure.label}: {failure.reason}", err=True)
    if cmp.failures:
        ran = f"{len(cmp.results)} of {len(variants)} variants ran"
        typer.echo(
            f"error: {ran}; {'results written to ' + str(out_dir) if cmp.results else 'nothing written'}", err=True
        )
        raise typer.Exit(EXIT_VARIANTS_FAILED)


#: ``tcplab validate`` and the kernel run: not root.
VALIDATE_NEEDS_ROOT = "tcplab validate: needs root (network namespaces, tc, nft): run it with sudo"


@app.command()
@_guard
def validate(
    scenario: Annotated[str, typer.Argument(metavar="SCENARIO", help="A YAML file, builtin:NAME or a built-in NAME.")],
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", metavar="DIR", help="Validation directory (default: runs/validate-NAME)."),
    ] = None,
    set_: SetOpt = None,
    seed: SeedOpt = None,
    tolerance: Annotated[
        list[str] | None,
        typer.Option(
            "--tolerance",
            metavar="KEY=VALUE,...",
            help="Tolerances: goodput=10%,rtt_p50=15%,rtt_p99=25%,retrans=0.5pp/50%,drops=10/50% (the defaults). "
            "A value replaces that metric's tolerance. Repeatable.",
        ),
    ] = None,
    force: ForceOpt = False,
    prefix: Annotated[
        str,
        typer.Option(
            "--prefix", metavar="P", help="Names of the kernel run's network namespaces: P-NODE (1 to 16 of a-z, 0-9)."
        ),
    ] = "tcplab",
    allow_busy: Annotated[
        bool,
        typer.Option("--allow-busy", help="Record the quiet check but do not mark the kernel run invalid on it."),
    ] = False,
    timeout: Annotated[
        str | None,
        typer.Option("--timeout", metavar="TIME", help="Bound of the kernel run (default: duration + 60s)."),
    ] = None,
    runs: Annotated[
        str,
        typer.Option(
            "--runs",
            metavar="N",
            callback=_int_option("runs", 1, MAX_VALIDATE_RUNS, "a number of runs"),
            help="Run each world N times (simulation seeds seed..seed+N-1; N kernel runs one after the other) "
            "and judge the means against the runs' spread.",
        ),
    ] = "1",
    quiet: QuietOpt = False,
    no_plots: NoPlotsOpt = False,
) -> None:
    """Run a scenario in the simulator and on this machine's kernel, side by side (root).

    Writes DIR/report.html (verdict table and overlays), report.md, validation.json, and
    both run directories DIR/sim and DIR/kernel. Exit 0 when both ran (whatever the
    verdicts), 1 when a run failed or the kernel run is invalid, 2 a mistake in the
    scenario, a tolerance or the command line, or not root. With --runs N > 1 the run
    directories are DIR/sim/run-K and DIR/kernel/run-K; an invalid or failed kernel run is
    excluded and named, and fewer than 2 valid ones give no verdicts (exit 1).
    """
    import os

    from tcplab.kernel.tolerances import parse_tolerances
    from tcplab.kernel.validate import validate as run_validation
    from tcplab.loader import load_scenario
    from tcplab.results import check_output_dir

    prefix = _kernel_prefix(prefix)
    sc = load_scenario(scenario, set_ or [], seed=seed)
    from tcplab.scenario.cost import check_validate_time

    check_validate_time(sc, runs)  # runs x (simulation + kernel run) within limits.cpu_time
    _warn([sc])
    tol = parse_tolerances(tolerance or [])
    timeout_ns = None
    if timeout is not None:
        from tcplab.units import parse_time

        try:
            timeout_ns = parse_time(timeout, allow_zero=False)
        except ValueError as e:
            _fail(f"--timeout: {e}", 2)
    if os.geteuid() != 0:
        _fail(VALIDATE_NEEDS_ROOT, 2)
    out_dir = output if output is not None else Path("runs") / f"validate-{sc.name}"
    check_output_dir(out_dir, overwrite=force)
    from tcplab.kernel.validate import kernel_options, preflight

    options = kernel_options(prefix=prefix, allow_busy=allow_busy, timeout_ns=timeout_ns)
    from tcplab.kernel.validate import ValidateError

    try:
        preflight(sc, options)
        v = run_validation(
            sc,
            tolerances=tol,
            options=options,
            out=out_dir,
            overwrite=force,
            command=_INVOCATION,
            applied_overrides=_override_texts(set_, seed),
            plots=not no_plots,
            progress=not quiet,
            say=None if quiet else (lambda text: typer.echo(text, err=True)),
            runs=int(runs),
        )
    except ValidateError as e:
        _fail(str(e), 1)
    if not quiet:
        _print_validation(v, out_dir)
    if not v.valid:  # as tcplab kernel run says it: on stderr, after writing the directory
        typer.echo(v.verdict_line(), err=True)
        raise typer.Exit(1)


def _override_texts(set_: list[str] | None, seed: int | None) -> list[str]:
    from tcplab.runner import override_texts

    return override_texts(set_ or [], seed)


def _print_validation(v, out_dir: Path) -> None:  # noqa: ANN001
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from tcplab.views.validate import table_rows

    console = _console()
    kernel = v.kernel.get("release") or "stand-in"
    title = f"{v.title}: simulator vs kernel {kernel}"
    if v.runs > 1:
        title += f" ({v.runs} runs each: mean ± sd)"
    table = Table(title=Text(title), title_justify="left", box=box.SIMPLE_HEAD)
    for col, justify in (
        ("flow / link", "left"),
        ("metric", "left"),
        ("simulator", "right"),
        ("kernel", "right"),
        ("difference", "right"),
        ("tolerance", "left"),
        ("verdict", "left"),
    ):
        table.add_column(col, justify=justify, no_wrap=col in ("flow / link", "metric"))
    style = {"within": "green", "outside": "bold red", "n/a": "dim", "inconclusive (spread)": "yellow"}
    for r in table_rows(v):
        table.add_row(
            *[Text(r[k]) for k in ("subject", "metric", "sim", "kernel", "difference", "tolerance")],
            Text(r["verdict"], style=style.get(r["verdict"], "")),
        )
    console.print(table)
    for line in v.excluded:
        console.print(Text(f"excluded: {line}"))
    if v.valid:
        console.print(Text(v.verdict_line()))
    console.print(f"wrote {out_dir} (report.html)", markup=False)


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
    from tcplab.scenario.pods import VETH_RATE_BPS
    from tcplab.scenario.qdiscs import describe as describe_qdisc

    sc = load_scenario(scenario, set_ or [], seed=seed)
    _warn([sc])
    core = sc.to_core()
    _engine_check(core, sc)
    if as_json:
        typer.echo(json.dumps(core, indent=2))
        return
    console = _console()
    console.print(
        f"{sc.name}: ok ({plural(len(core['nodes']), 'node')}, {plural(len(core['links']), 'one-way link')}, "
        f"{plural(len(core['flows']), 'flow')})",
        markup=False,
    )
    # One unit per quantity: rates in Mbit/s, times in ms, queue limits in packets or bytes.
    for link in core["links"]:
        qdisc = describe_qdisc(link["queue"])
        rate = "veth (1 Pbit/s)" if link["rate_bps"] == VETH_RATE_BPS else _rate_mbit(link["rate_bps"])
        for edt in link.get("edt") or []:
            pods = ", ".join(core["nodes"][i]["name"] for i in edt["nodes"])
            qdisc += f", EDT {pods} at {_rate_mbit(edt['rate_bps'])}"
        loss = link["loss"]
        loss_text = {"none": "no loss", "bernoulli": f"loss {loss.get('p', 0) * 100:g}%"}.get(
            loss["kind"], loss["kind"]
        )
        if loss["kind"] == "outage":
            from tcplab.units import format_time as _fmt_time

            loss_text = f"outage from {_fmt_time(loss['start_ns'])} to {_fmt_time(loss['end_ns'])} (all lost)"
        window = link.get("loss_window") or {}
        if loss["kind"] in ("bernoulli", "gilbert_elliott") and (window.get("start_ns") or window.get("end_ns")):
            from tcplab.units import format_time as _fmt_time

            loss_text += f" from {_fmt_time(window.get('start_ns') or 0)}"
            if window.get("end_ns") is not None:
                loss_text += f" to {_fmt_time(window['end_ns'])}"
        filt = link.get("loss_filter") or {}
        if loss["kind"] != "none" and filt.get("data_only"):
            loss_text += " (data segments only)"
        if loss["kind"] != "none" and filt.get("min_ip_bytes"):
            loss_text += f" (packets of at least {filt['min_ip_bytes']} bytes)"
        console.print(
            f"  link {link['name']}: {rate}, delay {_time_ms(link['delay_ns'])}, {loss_text}, {qdisc}",
            markup=False,
        )
    for node in core["nodes"]:
        extras = []
        if node.get("forwarding"):
            extras.append("forwards (carries pods)")
        if node.get("cpu"):
            cpu = node["cpu"]
            extras.append(f"cpu {cpu['share'] * 100:g}% of every {_time_ms(cpu['period_ns'])}")
        if node.get("nic"):
            nic = node["nic"]
            extras.append(f"nic {nic['driver']} rx_ring {nic['rx_ring']} x {plural(nic['rx_queues'], 'queue')}")
        if extras:
            console.print(f"  host {node['name']}: {'; '.join(extras)}", markup=False)
    # A workload of many connections (a broadcast's thousands) shows its first few routes.
    shown_per_app = 4
    hidden: dict[int, tuple[str, int]] = {}
    for a in core.get("apps", []):
        for k in a["flows"][shown_per_app:]:
            hidden[k] = (a["name"], len(a["flows"]) - shown_per_app)
    for index, route in enumerate(sc.routes()):
        if index in hidden:
            name, more = hidden[index]
            if index - 1 not in hidden:
                console.print(f"  ... {more} more connections of app {name}", markup=False)
            continue
        reader = _reader_text((core["flows"][index] if index < len(core["flows"]) else {}).get("reader"))
        console.print(
            f"  flow {route['flow']}: data {' '.join(route['data'])}; acks {' '.join(route['ack'])}; "
            f"base RTT {_time_ms(route['base_rtt_ns'])}{reader}",
            markup=False,
        )
    for a in core.get("apps", []):
        n = len(a["flows"])
        console.print(
            f"  app {a['name']}: {a['spec']['kind']} over {n} connection{'s' if n != 1 else ''}", markup=False
        )


def _reader_text(reader: dict | None) -> str:
    """``; reader: 2 Mbit/s`` for a flow whose receiving application reads slowly, else ''."""
    from tcplab.units import format_size, format_time

    if not reader or reader.get("kind") == "immediate":
        return ""
    if reader["kind"] == "rate":
        return f"; reader: at most {_rate_mbit(reader['rate_bps'])}"
    return f"; reader: {format_size(reader['bytes'])} every {format_time(reader['interval_ns'])}"


@app.command()
def scenarios(
    name: Annotated[
        str | None,
        typer.Argument(metavar="[NAME]", help="A built-in's name (or builtin:NAME): print its full description."),
    ] = None,
) -> None:
    """List the built-in scenarios, or print one's full description."""
    import yaml

    from tcplab.loader import BUILTIN_PREFIX, builtin_scenarios
    from tcplab.loader import builtin_dir as _builtin_dir

    names = builtin_scenarios()
    if name is None:
        for builtin, desc in names.items():
            typer.echo(f"{builtin:<28} {desc}")
        return
    bare = name[len(BUILTIN_PREFIX) :] if name.startswith(BUILTIN_PREFIX) else name
    if bare not in names:
        _fail(f"unknown built-in scenario {bare!r}; expected one of: {', '.join(names)}", 2)
    data = yaml.safe_load((_builtin_dir() / f"{bare}.yaml").read_text(encoding="utf-8")) or {}
    typer.echo(f"{bare}\n")
    typer.echo(str(data.get("description") or "").rstrip())
    typer.echo(f"\nRun it: tcplab run builtin:{bare} -o out/{bare} (tcplab check builtin:{bare} shows what it sets up)")


@app.command()
@_guard
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
            callback=_int_option("count", 1, 1000, "a number of snapshots"),
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
        _fail(f"--interval/--timeout: {e}", 2)
    log = (lambda _m: None) if quiet else (lambda m: typer.echo(m, err=True))
    res = run_collect(output, interval_s=interval_s, count=int(count), timeout_s=timeout_s, log=log, overwrite=force)
    if not quiet:
        typer.echo(f"wrote {res.path} ({res.snapshots} snapshots, {res.files} files, {len(res.missing)} notes)")


def _check_scenario_dir(scenario_dir: Path) -> None:
    """``diagnose --scenario-dir DIR``, before anything is read: a path Linux takes (with
    room for the file names in it), and a directory or nothing."""
    from tcplab.output_files import NAME_MAX_BYTES, check_path_length, shown_path

    try:
        check_path_length(scenario_dir, option="--scenario-dir", reserve_bytes=1 + NAME_MAX_BYTES)
    except ScenarioError as e:
        _user_error(e)
    if scenario_dir.exists() and not scenario_dir.is_dir():
        what = f"{shown_path(scenario_dir)!r} is not a directory"
        _fail(f"--scenario-dir: {what}; expected a directory for the scenarios", 2)


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
        _fail(f"--fail-on: {fail_on!r} is not a severity; expected warning or critical", 2)
    if as_json and markdown:
        _fail("--json and --markdown: choose one", 2)
    if quiet and (as_json or markdown):
        _fail(f"--quiet and {'--json' if as_json else '--markdown'}: choose one", 2)
    if quiet and fail_on is None:
        fail_on = "warning"  # as grep -q: the status is the answer
    if scenario_dir is not None:
        _check_scenario_dir(scenario_dir)
    try:
        host, findings = diagnose_paths(paths)
    except ParseError as e:
        _fail(str(e), 2)
    except MemoryError:
        _fail(f"{paths[0]}: input too large to analyse", 2)
    except KeyboardInterrupt as e:  # Ctrl-C 130, SIGTERM 143 (tcplab.signals)
        _fail("terminated" if isinstance(e, Terminated) else "interrupted", exit_code_for(e))
    except OSError as e:
        _fail(f"{e.filename or paths[0]}: {e.strerror or e}", 2)
    files: dict[int, str] = {}
    if scenario_dir is not None:
        from tcplab.diagnose.scenarios import scenario_yaml
        from tcplab.output_files import check_output_file, write_file_atomically

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
            _user_error(e)
        except OSError as e:
            _fail(f"{e.filename or scenario_dir}: {e.strerror or e}", 1)
    if quiet:
        pass
    elif as_json:
        typer.echo(to_json(host, findings, files))
    elif markdown:
        typer.echo(to_markdown(host, findings, files))
    else:
        print_terminal(host, findings, files, console=_console())
    if fail_on is not None and any(severity_at_least(f.severity, fail_on) for f in findings):
        raise typer.Exit(1)


def _installed_experiment(name: str) -> Any:
    """The experiment ``name``, or None if its package is not in this tcplab."""
    from tcplab.experiments import load

    try:
        return load(name)
    except ModuleNotFoundError as e:
        if not (e.name or "").startswith("tcplab.experiments"):
            raise
        return None


def _experiment(name: str) -> Any:
    """The experiment ``name`` (a one-line user error, exit 2, if unknown or not installed)."""
    from tcplab.experiments import NAMES

    e = _installed_experiment(name)
    if e is None:
        _fail(
            f"experiment {name!r} is not installed in this tcplab (its package is missing); known: " + ", ".join(NAMES),
            2,
        )
    return e


@app.command()
@_guard
def reproduce(
    names: Annotated[
        list[str] | None,
        typer.Argument(metavar="NAME", help="Experiments to run (tcplab experiments lists them)."),
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Run the five experiments.")] = False,
    quick: Annotated[
        bool, typer.Option("--quick", help="Shorter runs and fewer sweep points (under 2 minutes for --all).")
    ] = False,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", metavar="DIR", help="Output directory (default: reproduce/, or reproduce-quick/)."
        ),
    ] = None,
    jobs: _jobs_opt("Processes to run the simulations in (default: one per core).") = None,
    force: ForceOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Replay the stories: run each experiment's scenarios, judge its claims, write the reports.

    Writes DIR/NAME/report.html (and report.md, claims.json, plots/, runs/RUN/) per experiment
    and DIR/index.html + DIR/index.md. Exit 0 when the experiments ran, whatever the verdicts;
    1 when a run or an experiment failed (said in its report); 2 for a bad name or no name.
    """
    from tcplab.experiments import NAMES
    from tcplab.views.reproduce import default_output, totals_line
    from tcplab.views.reproduce import reproduce as run_reproduce

    chosen = list(names or [])
    if all_ and chosen:
        _fail("NAME and --all: give experiment names or --all, not both", 2)
    if not all_ and not chosen:
        _fail("no experiment named; expected NAME... or --all (experiments: " + ", ".join(NAMES) + ")", 2)
    if all_:
        chosen = list(NAMES)
    unknown = [n for n in chosen if n not in NAMES]
    if unknown:
        _fail(f"NAME: no experiment named {unknown[0]!r}; expected one of {', '.join(NAMES)}", 2)
    chosen = list(dict.fromkeys(chosen))
    experiments = [_experiment(n) for n in chosen]
    out_dir = output if output is not None else default_output(quick)
    total = sum(len(e.runs(quick)) for e in experiments)
    from tcplab.progress import RunLines

    progress = RunLines(total, title="reproduce", what="judging the claims and writing the reports", quiet=quiet)
    try:
        outcomes = run_reproduce(
            chosen,
            out_dir,
            quick=quick,
            jobs=int(jobs) if jobs is not None else None,
            overwrite=force,
            progress=progress,
        )
    finally:
        progress.close()
    failed = [oc for oc in outcomes if oc.error]
    if not quiet:
        from rich import box
        from rich.table import Table

        table = Table(
            title=f"tcplab reproduce ({'quick' if quick else 'full'})", title_justify="left", box=box.SIMPLE_HEAD
        )
        for col in ("experiment", "reproduced", "partly", "not reproduced", "cross-checks", "status"):
            table.add_column(col, justify="left" if col in ("experiment", "status") else "right")
        totals = {"reproduced": 0, "partly": 0, "not reproduced": 0}
        for oc in outcomes:
            c = oc.counts()
            for k in totals:
                totals[k] += c[k]
            agree = sum(1 for x in oc.crosschecks if x.agree)
            table.add_row(
                oc.experiment.name,
                str(c["reproduced"]),
                str(c["partly"]),
                str(c["not reproduced"]),
                f"{agree}/{len(oc.crosschecks)}",
                "FAILED" if oc.error else "ok",
            )
        console = _console()
        console.print(table)
        for oc in outcomes:
            for cr in oc.claims:
                console.print(f"  {oc.experiment.name} / {cr.claim.id}: {cr.verdict}: {cr.figure}", markup=False)
        console.print(totals_line({**totals, "claims": sum(totals.values())}), markup=False)
        console.print(f"index: {Path(out_dir) / 'index.html'} (and index.md)", markup=False)
    for oc in failed:
        first = str(oc.error).strip().splitlines()[0] if oc.error else ""
        typer.echo(f"error: experiment {oc.experiment.name}: {first} (see its report)", err=True)
    if failed:
        raise typer.Exit(1)


@app.command()
@_guard
def experiments(
    args: Annotated[
        list[str] | None,
        typer.Argument(metavar="[path NAME]", help="`path NAME`: print the experiment's directory."),
    ] = None,
) -> None:
    """List the experiments of tcplab reproduce, or print one's directory (`experiments path NAME`)."""
    from tcplab.experiments import NAMES

    args = list(args or [])
    if args:
        if args[0] != "path" or len(args) != 2:
            _fail(f"experiments {' '.join(args)}: expected no argument, or `path NAME`", 2)
        name = args[1]
        if name not in NAMES:
            _fail(f"NAME: no experiment named {name!r}; expected one of {', '.join(NAMES)}", 2)
        typer.echo(str(_experiment(name).directory))
        return
    from tcplab.views.reproduce import _story_info

    console = _console()
    from rich import box
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD)
    for col in ("experiment", "story", "title", "claims", "runs quick/full"):
        table.add_column(col, justify="right" if col in ("claims", "runs quick/full") else "left")
    for name in NAMES:
        e = _installed_experiment(name)
        if e is None:
            table.add_row(name, "-", "(not installed)", "-", "-")
            continue
        table.add_row(
            name,
            _story_info(e.story)["heading"],
            e.title,
            str(len(e.claims)),
            f"{len(e.runs(True))}/{len(e.runs(False))}",
        )
    console.print(table)
    console.print("Run one: tcplab reproduce NAME [--quick]; all: tcplab reproduce --all --quick", markup=False)


# -- tcplab kernel: the scenario on the running kernel (python/tcplab/kernel) -----------------

kernel_app = typer.Typer(
    cls=TyperGroup,
    help=("Run a scenario on the running Linux kernel's TCP, in network namespaces (needs root): run, cleanup, info."),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(kernel_app, name="kernel")

PrefixOpt = Annotated[
    str,
    typer.Option(
        "--prefix",
        metavar="P",
        help="Namespace prefix, 1 to 16 of a-z and 0-9: the run's namespaces are P-NODE and P:wK (default tcplab).",
    ),
]


def _kernel_prefix(prefix: str) -> str:
    """--prefix of validate, kernel run and kernel cleanup: one check (tcplab.kernel.names), exit 2."""
    from tcplab.kernel.errors import KernelUsageError
    from tcplab.kernel.names import check_prefix

    try:
        return check_prefix(prefix)
    except KernelUsageError as e:
        _fail(str(e), 2)


def _kernel_root() -> None:
    import os

    from tcplab.kernel.env import NEEDS_ROOT

    if os.geteuid() != 0:
        typer.echo(NEEDS_ROOT, err=True)
        raise typer.Exit(2)


def _kernel_guard(fn):  # noqa: ANN001, ANN202 - decorator
    """_guard plus kernel mode's errors: unsupported (exit 2, nothing created), failed (1)."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        from tcplab.kernel.env import NEEDS_ROOT
        from tcplab.kernel.errors import KernelError, KernelUnsupported, KernelUsageError

        try:
            return fn(*args, **kwargs)
        except (KernelUnsupported, KernelUsageError) as e:
            _fail(str(e), 2)
        except KernelError as e:
            if str(e) == NEEDS_ROOT:
                typer.echo(NEEDS_ROOT, err=True)
                raise typer.Exit(2) from None
            _fail(str(e), 1)

    return _guard(wrapper)


@kernel_app.command("run")
@_kernel_guard
def kernel_run_cmd(
    scenario: Annotated[str, typer.Argument(metavar="SCENARIO", help="A YAML file, builtin:NAME or a built-in NAME.")],
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

    prefix = _kernel_prefix(prefix)
    timeout_s = None
    if timeout is not None:
        from tcplab.errors import UnitError
        from tcplab.units import parse_time

        try:
            timeout_s = parse_time(timeout, allow_zero=False) / 1e9
        except UnitError as e:
            _fail(f"--timeout: {e}", 2)
    from tcplab.scenario.cost import costed_as_kernel_run

    with costed_as_kernel_run():  # limits.cpu_time bounds its wall time: the duration
        sc = load_scenario(scenario, set_ or [], seed=seed)
    _warn([sc])
    out_dir = output if output is not None else Path("runs") / f"{sc.name}-kernel"
    check_output_dir(out_dir, overwrite=force)
    options = KernelOptions(prefix=prefix, timeout_s=timeout_s, allow_busy=allow_busy)
    result = kernel_run(sc, options=options, progress=not quiet, command=_INVOCATION)
    result.write(out_dir, overwrite=force, plots=not no_plots)
    if not quiet:
        env = result.kernel.get("env", {})
        typer.echo(
            f"kernel: Linux {env.get('release', '?')}, HZ {env.get('hz') or '?'}; "
            f"namespaces {prefix}-*, removed; departures from the simulated path: "
            f"{len(result.kernel.get('departures', []))} (kernel.json)"
        )
        _print_run_summary(result, out_dir)
    if not result.kernel.get("valid", True):
        typer.echo("INVALID: " + "; ".join(result.kernel.get("invalid_reasons", [])), err=True)
        raise typer.Exit(1)


@kernel_app.command("cleanup")
@_kernel_guard
def kernel_cleanup_cmd(prefix: PrefixOpt = "tcplab") -> None:
    """Remove every namespace named PREFIX-* and the processes inside it, and the work
    directories $TMPDIR/PREFIX-kernel-* (after a killed run)."""
    _kernel_root()
    from tcplab.kernel.testbed import cleanup, cleanup_workdirs

    removed = cleanup(_kernel_prefix(prefix))
    typer.echo(f"removed {plural(len(removed), 'namespace')}" + (": " + " ".join(removed) if removed else ""))
    dirs = cleanup_workdirs(_kernel_prefix(prefix))
    if dirs:
        typer.echo(f"removed {plural(len(dirs), 'work directory', 'work directories')}: " + " ".join(dirs))


@kernel_app.command("info")
@_kernel_guard
def kernel_info_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="The probe as JSON.")] = False,
) -> None:
    """What this kernel offers kernel mode: release, HZ, congestion controls, qdiscs, tools."""
    from tcplab.kernel.env import format_env, probe

    env = probe()
    if as_json:
        typer.echo(json.dumps(env.to_dict(), indent=2))
    else:
        typer.echo(format_env(env), nl=False)


# -- commands living in their own modules (one line each) -----------------------------------
from tcplab.sweep.cli import register as _reg_sweep  # noqa: E402 - commands of their own modules

_reg_sweep(app)
from tcplab.exports.cli import register as _reg_exports  # noqa: E402

_reg_exports(app)

from tcplab.recommend.cli import register as _reg_recommend  # noqa: E402 - a command of its own module

_reg_recommend(app)


#: Each command's line in ``tcplab --help`` (and ``tcplab kernel|export --help``): whole
#: sentences that fit one line at 80 columns, where click would cut the docstring's first
#: sentence at "...". ``tcplab COMMAND --help`` shows the full text.
SHORT_HELP = {
    "run": "Simulate one scenario and write its run directory.",
    "compare": "Run scenarios, or --set alternatives, side by side.",
    "validate": "Run a scenario simulated and on this kernel (root).",
    "check": "Validate a scenario and show how it resolves.",
    "scenarios": "List the built-in scenarios, or describe one.",
    "collect": "Capture this host's TCP, qdisc and NIC counters.",
    "diagnose": "Say which known pathology captured counters show.",
    "reproduce": "Replay the five stories and judge their claims.",
    "experiments": "List the experiments of reproduce, or one's path.",
    "sweep": "Run a scenario over a grid of settings x seeds.",
    "ss": "Print a run's sockets as ss -tin showed them at T.",
    "recommend": "Recommend the setting that meets an objective.",
    "kernel": "Run a scenario on this Linux kernel's TCP (root).",
    "export": "Write a run for flent, iperf3 or Wireshark (pcap).",
    "kernel run": "Run one scenario on this kernel; write its run directory.",
    "kernel cleanup": "Remove the namespaces and work directories of PREFIX.",
    "kernel info": "What this kernel offers kernel mode (HZ, cc, qdiscs).",
    "export flent": "Write the run as a flent data file (flent -i FILE).",
    "export iperf3": "Write iperf3 -J JSON of the run's bulk and maerts flows.",
    "export pcap": "Write a flow's packets as a pcap file (headers only).",
}


def _set_short_help(typer_app: typer.Typer, prefix: str = "") -> None:
    """Give every registered command and group its :data:`SHORT_HELP` line."""
    for info in typer_app.registered_commands:
        name = info.name or (info.callback.__name__.replace("_", "-") if info.callback else "")
        text = SHORT_HELP.get(f"{prefix}{name}")
        if text:
            info.short_help = text
    for group in typer_app.registered_groups:
        text = SHORT_HELP.get(f"{prefix}{group.name}")
        if text:
            group.short_help = text
        if group.typer_instance is not None:
            _set_short_help(group.typer_instance, f"{prefix}{group.name} ")


_set_short_help(app)


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except BrokenPipeError:  # `tcplab scenarios | head`
        sys.stderr.close()
        sys.exit(1)

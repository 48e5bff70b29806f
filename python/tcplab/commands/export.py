"""``tcplab export flent|iperf3|pcap RUN ...``: a run in other tools' formats (:mod:`tcplab.exports`).

    tcplab export flent RUN [-o FILE] [--force]
    tcplab export iperf3 RUN [--flow F] [--interval 1s] [-o PATH] [--force]
    tcplab export pcap RUN --flow FLOW [--at sender|receiver] [-o FILE] [--max-packets N] [--force]

RUN is a run directory of ``tcplab run`` (or ``tcplab kernel run``; ``export pcap``: of
``tcplab run``). Files are written atomically (a temporary sibling renamed into place,
:mod:`tcplab.output_files`), with the user's umask. An existing file is replaced only with
``--force``; a link, a directory, a device, a FIFO or a socket never is. Mistakes (not a run
directory, an unknown flow, an output path that may not be written) are one ``error:`` line
and exit 2, checked before anything is written; an OS error while writing (a full disk) is
one line naming the file, exit 1.

``export pcap`` reruns the run directory's ``scenario.resolved.json`` with the flow's
packets captured (:mod:`tcplab.exports.capture`: the same engine version is required, and
the rerun must reproduce the directory) and writes them as a pcap file
(:mod:`tcplab.exports.pcap`), by default ``RUN/FLOW.pcap``: exit 2 also for a run of another
engine version, 1 the engine failed or the rerun differs from the directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from typer.core import TyperGroup

from tcplab.commands.common import group_settings, guard, int_option

__all__ = ["register", "export_app", "capture_summary", "RunArg"]

export_app = typer.Typer(
    cls=TyperGroup,
    help=(
        "Write a run in other tools' formats: flent's data file (flent -i FILE), iperf3 -J JSON per bulk flow, "
        "a flow's packets as pcap."
    ),
    no_args_is_help=True,
    **group_settings(),
)

RunArg = Annotated[Path, typer.Argument(metavar="RUN", help="A run directory (tcplab run or tcplab kernel run).")]
ForceOpt = Annotated[
    bool,
    typer.Option("--force", "-f", help="Replace an existing file (never a link, directory, device, FIFO or socket)."),
]


def _output_path(output: str | Path | None, default_dir: Path, name: str) -> Path:
    """Where ``-o`` says to write ``name``: the default directory when absent, inside it
    when ``-o`` is an existing directory (as cp does), else the file itself."""
    from tcplab.output_files import is_directory

    if output is None:
        return default_dir / name
    path = Path(output)
    return path / name if is_directory(path) else path


def _check_output(path: Path, force: bool) -> None:
    """Before anything is written: may ``path`` be written (``tcplab.output_files``)?"""
    from tcplab.output_files import check_output_file

    check_output_file(path, overwrite=force, option="--output")


def _write_atomically(path: Path, data: bytes, force: bool) -> None:
    """Write ``data`` whole (missing directories are made); what may not be replaced is
    one line naming ``--output`` (exit 2), an OS error one line naming the file (exit 1)."""
    from tcplab.output_files import write_file_atomically

    write_file_atomically(path, data, overwrite=force, make_parents=True, option="--output")


def _interval_s(text: str) -> float:
    from tcplab.errors import ScenarioError, UnitError
    from tcplab.units import parse_time

    try:
        ns = parse_time(text, allow_zero=False)
    except UnitError as e:
        raise ScenarioError(e.problem, path="--interval", value=text, expected=e.expected) from None
    from tcplab.exports.iperf3 import MAX_INTERVAL_S, MIN_INTERVAL_S

    if not MIN_INTERVAL_S <= ns / 1e9 <= MAX_INTERVAL_S:
        raise ScenarioError(
            f"{text!r} is outside iperf3 -i's range",
            path="--interval",
            value=text,
            expected=f"a time from {MIN_INTERVAL_S:g}s to {MAX_INTERVAL_S:g}s such as 1s or 500ms",
        )
    return ns / 1e9


def capture_summary(path: Path, packets: int, truncated: int) -> tuple[str, str | None]:
    """The line ``wrote PATH (N packets)`` and, when some were left out, a warning line."""
    line = f"wrote {path} ({packets} packets)"
    if not truncated:
        return line, None
    return line, (
        f"{path.name}: kept the first {packets} packets; {truncated} more were not captured "
        "(raise the limit: tcplab export pcap RUN --flow FLOW --max-packets N)"
    )


@export_app.command("flent", short_help="Write the run as a flent data file (flent -i FILE).")
@guard
def export_flent(
    run_dir: RunArg,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            help="Where to write it; a directory: FILE/run.flent.gz in it (default: RUN/run.flent.gz).",
        ),
    ] = None,
    force: ForceOpt = False,
) -> None:
    """Write the run as a flent data file: open it with flent -i FILE -p totals (or flent --gui FILE)."""
    from tcplab.exports.flent import FLENT_FILE, flent_bytes
    from tcplab.exports.rundir import RunData

    path = _output_path(output, run_dir, FLENT_FILE)
    _check_output(path, force)
    run = RunData.load(run_dir)
    _write_atomically(path, flent_bytes(run), force)
    typer.echo(f"wrote {path}")


@export_app.command("iperf3", short_help="Write iperf3 -J JSON of the run's bulk and maerts flows.")
@guard
def export_iperf3(
    run_dir: RunArg,
    flow: Annotated[
        str | None,
        typer.Option(
            "--flow", metavar="F", help="Only this flow, by name or index (default: every bulk and maerts flow)."
        ),
    ] = None,
    interval: Annotated[
        str | None,
        typer.Option(
            "--interval",
            "-i",
            metavar="T",
            help="Reporting interval, as iperf3 -i: a multiple of the run's sample interval (default 1s).",
        ),
    ] = None,
    output: Annotated[
        str | None,
        typer.Option(
            "--output",
            "-o",
            metavar="PATH",
            help="With --flow: the file ('-' prints it; a directory: the file in it); without: the directory "
            "(default: RUN), or '-' to print the flow of a run that has one.",
        ),
    ] = None,
    force: ForceOpt = False,
) -> None:
    """Write iperf3 -J JSON (iperf3-FLOW.json) for the run's bulk and maerts flows."""
    from tcplab.errors import ScenarioError
    from tcplab.exports.iperf3 import iperf3_file_name, iperf3_flows, iperf3_text
    from tcplab.exports.rundir import RunData

    seconds = None if interval is None else _interval_s(interval)
    run = RunData.load(run_dir)
    if flow is not None:
        flow = run.flow_name(flow)  # a name, or an index as export pcap takes it
        text = iperf3_text(run, flow, interval_s=seconds)
        if output == "-":
            typer.echo(text, nl=False)
            return
        path = _output_path(output, run_dir, iperf3_file_name(flow))
        _check_output(path, force)
        _write_atomically(path, text.encode("utf-8"), force)
        typer.echo(f"wrote {path}")
        return
    flows = iperf3_flows(run)
    if not flows:
        raise ScenarioError(
            "the run has no sampled bulk or maerts flow",
            file=str(run_dir),
            expected="a run with a bulk or maerts flow (iperf3 files are for bulk transfers)",
        )
    if output == "-":  # stdout holds one flow: the run's only one, else name it
        if len(flows) == 1:
            typer.echo(iperf3_text(run, flows[0], interval_s=seconds), nl=False)
            return
        names = ", ".join(f.name for f in flows)
        raise ScenarioError(
            "'-' prints one flow",
            path="--output",
            value=output,
            expected=f"--flow F with -o - (the run's flows: {names}), or a directory",
        )
    directory = Path(output) if output is not None else run_dir
    names = [iperf3_file_name(f.name) for f in flows]
    for name in names:  # every file may be written, or none is
        _check_output(directory / name, force)
    texts = {name: iperf3_text(run, f, interval_s=seconds) for name, f in zip(names, flows, strict=True)}
    for name, text in texts.items():
        _write_atomically(directory / name, text.encode("utf-8"), force)
        typer.echo(f"wrote {directory / name}")


@export_app.command("pcap", short_help="Write a flow's packets as a pcap file (headers only).")
@guard
def export_pcap_cmd(
    run_dir: Annotated[Path, typer.Argument(metavar="RUN", help="A run directory of tcplab run.")],
    flow: Annotated[
        str, typer.Option("--flow", metavar="FLOW", help="The flow: its name (as in summary.json) or index.")
    ],
    at: Annotated[
        str,
        typer.Option("--at", metavar="SIDE", help="Capture on the flow's data sender (default) or receiver."),
    ] = "sender",
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", metavar="FILE", help="Where to write it (default: RUN/FLOW.pcap)."),
    ] = None,
    max_packets: Annotated[
        str | None,
        typer.Option(
            "--max-packets",
            metavar="N",
            callback=int_option("max_packets", 1, 100_000_000, "a number of packets"),
            help="Keep at most the first N packets (default 1000000).",
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force", "-f", help="Replace an existing file (never a link, directory, device, FIFO or socket)."
        ),
    ] = False,
) -> None:
    """Write a flow's packets as a pcap file (headers only, real TCP options), by rerunning RUN.

    What tcpdump -s 128 on the flow's sender (or receiver) would have written: SYN
    options, timestamps, SACK blocks, windows, IP IDs as Linux sets them. Opens in
    Wireshark, tshark and tcptrace. Needs the engine version that made RUN.
    """
    from tcplab.exports.capture import export_pcap
    from tcplab.progress import SimProgress

    with SimProgress(f"pcap {flow}") as progress:
        path, capture = export_pcap(
            run_dir,
            flow,
            at,
            output,
            max_packets=max_packets,  # type: ignore[arg-type]
            progress=progress,
            overwrite=force,
        )
    line, warning = capture_summary(path, len(capture.packets), capture.truncated)
    if warning:
        typer.echo(f"warning: {warning}", err=True)
    typer.echo(line)


def register(app: typer.Typer) -> None:
    """Add the ``tcplab export`` group to the root app."""
    app.add_typer(export_app, name="export", short_help="Write a run for flent, iperf3 or Wireshark (pcap).")

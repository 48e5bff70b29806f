"""``tcplab export pcap RUN --flow FLOW [--at sender|receiver] [-o FILE] [--max-packets N]``.

``register(export_app)`` adds the command to the ``tcplab export`` group
(:mod:`tcplab.exports.cli`). It reruns the run directory's ``scenario.resolved.json`` with the
flow's packets captured (:mod:`tcplab.exports.capture`: the same engine version is required,
and the rerun must reproduce the directory) and writes them as a pcap file
(:mod:`tcplab.exports.pcap`), by default ``RUN/FLOW.pcap``. An existing file there is
replaced only with ``--force``, a link, directory, device, FIFO or socket never (checked
before the rerun). Exit codes: 0 written; 2 RUN is not a simulation run directory, an
unknown flow, another engine version, an output path that may not be written (one
``error:`` line, nothing written); 1 the engine failed, the rerun differs from the
directory, or writing failed (a full disk: one line naming the file).
"""

# No `from __future__ import annotations`: typer evaluates the command's annotations, which
# use the root CLI's option helpers, imported inside register().
from pathlib import Path
from typing import Annotated

import typer

__all__ = ["register", "capture_summary"]


def capture_summary(path: Path, packets: int, truncated: int) -> tuple[str, str | None]:
    """The line ``wrote PATH (N packets)`` and, when some were left out, a warning line."""
    line = f"wrote {path} ({packets} packets)"
    if not truncated:
        return line, None
    return line, (
        f"{path.name}: kept the first {packets} packets; {truncated} more were not captured "
        "(raise the limit: tcplab export pcap RUN --flow FLOW --max-packets N)"
    )


def register(export_app: typer.Typer) -> None:
    """Add ``tcplab export pcap`` to the ``tcplab export`` group."""
    from tcplab.cli import _guard, _int_option

    @export_app.command("pcap")
    @_guard
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
                callback=_int_option("max_packets", 1, 100_000_000, "a number of packets"),
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

"""A run in the formats of the tools people already use.

* :mod:`tcplab.exports.rundir`: :class:`RunData`, a run directory read back (simulation or
  kernel run), or the data of a Result being written;
* :mod:`tcplab.exports.flent`: ``run.flent.gz``, flent's data file (``flent -i``, ``--gui``);
* :mod:`tcplab.exports.iperf3`: ``iperf3-FLOW.json``, iperf3 ``-J`` output per bulk flow;
* :mod:`tcplab.exports.ss_at`: ``tcplab ss RUN --at T [FLOW]``, ``ss -tin`` at a moment;
* :mod:`tcplab.exports.pcap`: a flow's packets as a pcap file (``FLOW.pcap``, ``tcplab run
  --pcap FLOW``), from the engine's capture; :mod:`tcplab.exports.capture` reruns a run
  directory with the capture on.

The commands (``tcplab export flent|iperf3|pcap``, ``tcplab ss``) are
:mod:`tcplab.commands.export` and :mod:`tcplab.commands.ss`.

Every simulation run directory gets ``run.flent.gz`` and one ``iperf3-FLOW.json`` per
sampled bulk/maerts flow (:func:`write_exports`, called by ``Result.write``); ``tcplab export
flent|iperf3 RUN`` writes them for an existing directory (older runs, kernel runs).

This package's ``__init__`` imports nothing heavy (the CLI loads it at start); the names
below are loaded on first use.

Floor 4 (DESIGN.md's "Layout"): exports import results and the floors below (scenario,
engine, the leaves), never views (the other package of their floor), runner, compare, the
commands' packages or the commands; results never import exports (:func:`write_exports` is
the export writer :func:`tcplab.run` hands to each Result). Its CLI modules (``cli``,
``pcap_cli``) are the commands' (floor 7) and move with them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["RunData", "load_run", "write_exports", "flent_data", "iperf3_json", "ss_at_text"]

_LAZY = {
    "RunData": ("tcplab.exports.rundir", "RunData"),
    "load_run": ("tcplab.exports.rundir", "load_run"),
    "flent_data": ("tcplab.exports.flent", "flent_data"),
    "iperf3_json": ("tcplab.exports.iperf3", "iperf3_json"),
    "ss_at_text": ("tcplab.exports.ss_at", "ss_at_text"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'tcplab.exports' has no attribute {name!r}")


def write_exports(result: Any, directory: Path) -> list[str]:
    """Write ``run.flent.gz`` and the ``iperf3-FLOW.json`` files of ``result`` (a
    :class:`~tcplab.results.Result`) into the run directory being filled; the names written."""
    from tcplab.exports.flent import FLENT_FILE, flent_bytes
    from tcplab.exports.iperf3 import iperf3_file_name, iperf3_flows, iperf3_text
    from tcplab.exports.rundir import RunData

    run = RunData.from_result(result)
    (directory / FLENT_FILE).write_bytes(flent_bytes(run))
    names = [FLENT_FILE]
    for flow in iperf3_flows(run):
        name = iperf3_file_name(flow.name)
        (directory / name).write_text(iperf3_text(run, flow), encoding="utf-8")
        names.append(name)
    return names

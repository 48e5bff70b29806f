"""A flow's packets from an existing run directory: the run again, with the capture on.

The model: the engine is deterministic and the capture observes without changing the run
(tcplab_core::capture), so rerunning a run directory's ``scenario.resolved.json`` (the exact
engine configuration) with ``capture`` added gives the packets of the run that made the
directory, provided the engine is the same version as the one that made it (``summary.json``'s
``engine_version``): a different engine may simulate differently, and then the packets would
be another run's. :func:`capture_run` refuses that (one line naming both versions), and after
the rerun checks that it reproduced the directory (each flow's bytes received, segments sent
and retransmitted as ``summary.json`` has them); a rerun that does not is an error, and
nothing is written. :func:`export_pcap` writes the pcap (:mod:`tcplab.exports.pcap`).

Only simulation runs qualify: a kernel run (``tcplab kernel run``) was made by the real
kernel, whose packets tcpdump would have had to record at the time.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tcplab.errors import EngineError, ScenarioError
from tcplab.literals import json_loads

if TYPE_CHECKING:
    from tcplab.engine import Capture, Core

__all__ = ["capture_run", "export_pcap", "load_run_config"]

#: The per-flow totals the rerun must reproduce (summary.json flow keys, engine flow keys).
_CHECKED = (("bytes_received", "bytes_received"), ("data_segs_out", "data_segs_out"), ("retrans_segs", "retrans_segs"))


def _refuse(run_dir: Path, problem: str, expected: str) -> ScenarioError:
    return ScenarioError(problem, file=str(run_dir), expected=expected)


def load_run_config(run_dir: str | os.PathLike[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(scenario.resolved.json, summary.json)`` of a simulation run directory, or a
    one-line :class:`ScenarioError` saying why ``run_dir`` is not one."""
    d = Path(run_dir)
    if not d.is_dir():
        raise _refuse(d, "not a directory", "a run directory of tcplab run")
    files = {}
    for name in ("scenario.resolved.json", "summary.json"):
        try:
            files[name] = json_loads((d / name).read_text(encoding="utf-8"), finite=True)
        except FileNotFoundError:
            raise _refuse(d, f"not a tcplab run directory (no {name})", "a run directory of tcplab run") from None
        except (OSError, ValueError) as e:
            raise _refuse(d, f"{name} is unreadable ({e})", "a run directory of tcplab run") from None
        if not isinstance(files[name], dict):
            raise _refuse(
                d, f"{name} is a JSON {type(files[name]).__name__}, not an object", "a run directory of tcplab run"
            )
    summary = files["summary.json"]
    if summary.get("kind", "simulation") != "simulation":
        raise _refuse(
            d,
            f"a {summary.get('kind')} run: its packets were not simulated, so there is nothing to capture",
            "a simulation run directory (tcplab run); capture a kernel run's packets with tcpdump while it runs",
        )
    return files["scenario.resolved.json"], summary


def capture_run(
    run_dir: str | os.PathLike[str],
    flow: str | int,
    at: str = "sender",
    *,
    max_packets: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    core: Core | None = None,
) -> tuple[dict[str, Any], Capture]:
    """Rerun ``run_dir`` with ``flow``'s packets captured at ``at``: ``(config, capture)``.

    Raises:
        ScenarioError: not a simulation run directory, an unknown flow, another engine
            version than the one that made it.
        EngineError: the engine failed, or the rerun did not reproduce the run directory.
    """
    from tcplab.engine import import_core, run_core
    from tcplab.exports.pcap import capture_config

    d = Path(run_dir)
    config, summary = load_run_config(d)
    engine = core if core is not None else import_core()
    made_by = str(summary.get("engine_version", ""))
    here = str(getattr(engine, "__version__", ""))
    if made_by != here:
        raise _refuse(
            d,
            f"made by engine {made_by or 'unknown'}, this is engine {here or 'unknown'}: "
            "the rerun might not be the same run",
            f"tcplab with engine {made_by} (or run the scenario again with tcplab run --pcap)",
        )
    spec = capture_config(config, flow, at, max_packets, option="--flow", at_option="--at")
    try:
        output = run_core({**config, "capture": spec}, progress=progress, core=engine)
    except EngineError as e:
        # The engine's own bound on the capture's memory (max_memory_bytes): a usage mistake.
        prefix = "capture.max_packets: "
        if str(e).startswith(prefix):
            raise ScenarioError(str(e)[len(prefix) :], file="--max-packets", value=max_packets) from None
        if "engine config:" in str(e):  # the engine refused the file's configuration: damaged
            detail = str(e).split("engine config:", 1)[1].strip()
            raise _refuse(
                d,
                f"scenario.resolved.json is not a configuration the engine takes ({detail})",
                "a run directory of tcplab run, unmodified",
            ) from None
        raise
    if output.capture is None:
        raise EngineError("engine output: no capture although the configuration asked for one")
    _check_same_run(d, summary, output.flows)
    return config, output.capture


def _check_same_run(run_dir: Path, summary: dict[str, Any], engine_flows: list[dict[str, Any]]) -> None:
    """The rerun's per-flow totals are the directory's (flows summary.json lists by name)."""
    rerun = {str(f.get("name")): f for f in engine_flows}
    for row in summary.get("flows") or []:
        f = rerun.get(str(row.get("name")))
        if f is None:  # an app's aggregate row (> 16 connections): no engine flow of that name
            continue
        for key, engine_key in _CHECKED:
            if row.get(key) is not None and int(row[key]) != int(f.get(engine_key, -1)):
                raise EngineError(
                    f"the rerun of {run_dir} differs from it: flow {row['name']} {key} "
                    f"{f.get(engine_key)}, the directory says {row[key]}; nothing written"
                )


def export_pcap(
    run_dir: str | os.PathLike[str],
    flow: str | int,
    at: str = "sender",
    output: str | os.PathLike[str] | None = None,
    *,
    max_packets: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    core: Core | None = None,
    overwrite: bool = False,
) -> tuple[Path, Capture]:
    """Write ``flow``'s pcap for ``run_dir`` to ``output`` (default ``RUN/FLOW.pcap``; a
    directory: ``FLOW.pcap`` in it). Returns the path written and the capture. The path is
    checked before the rerun (:func:`tcplab.output_files.check_output_file`): an existing
    file is replaced only with ``overwrite``, anything but a regular file never."""
    from tcplab.exports.pcap import capture_config, pcap_name, write_pcap
    from tcplab.output_files import check_output_file, is_directory

    config, _ = load_run_config(run_dir)
    name = pcap_name(config, capture_config(config, flow, at, max_packets, option="--flow", at_option="--at")["flow"])
    target = Path(run_dir) / name if output is None else Path(output)
    if is_directory(target):
        target = target / name
    check_output_file(target, overwrite=overwrite, option="--output")
    if not target.parent.is_dir():
        raise ScenarioError(
            f"{target.parent} is not a directory", file="--output", expected="a file in an existing directory"
        )
    config, capture = capture_run(run_dir, flow, at, max_packets=max_packets, progress=progress, core=core)
    return write_pcap(target, config, capture, overwrite=overwrite), capture

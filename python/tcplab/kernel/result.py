"""A kernel run as a :class:`~tcplab.results.Result`: the same run directory as ``tcplab run``.

The model: :func:`tcplab.kernel.measure.build_raw` shapes what the kernel measured like the
simulator's output, so the flows, links, counters and time series are the same DataFrames
with the same columns, and every view (plots, report.html, ``tcplab compare``-style tables,
``tcplab validate``) reads a kernel run as it reads a simulation. What differs:

* the tool texts are the kernel's own: ``tc-qdisc-NODE.txt`` is ``tc -s qdisc show`` as
  the kernel printed it in the node's namespace, ``ss-tin-NODE.txt`` the agent's last ``ss
  -tinH`` sample of the node (``ss_texts(at_ns)``: the last sample at or before ``at_ns``),
  ``counters.txt`` the ``nstat -asz`` counters of each node, after minus before the run;
  ``ss-samples-NODE.txt`` keeps every ss sample (``# t_ns=N`` then ss's lines);
* ``kernel.json``: the kernel (:class:`tcplab.kernel.env.KernelEnv`: release, HZ, congestion
  controls and qdiscs available), the quiet check, validity (``valid``, ``invalid_reasons``,
  and ``machine_reasons``: those the machine's load caused),
  the delay lines' stats, the nft loss counters per link, the samplers' lateness, the
  agents' exit and errors, the commands the testbed ran, the time-series columns no kernel
  interface gives (``unknown_columns``: BBR's long-term sampling, the cumulative lost);
* ``delayline.json`` (runs with a delay line): each line's own lateness distribution per
  TUN (p50, p90, p99, max, packets later than 1 ms), packets, bytes, drops and deepest
  queue, against the validity limits (:func:`tcplab.kernel.delayline.lateness_report`);
* summary.json has ``"kind": "kernel"`` and ``"kernel": {release, hz, valid,
  invalid_reasons}`` (a simulation's says ``"kind": "simulation"``); metadata.json has
  ``"kernel"`` (release, HZ, congestion controls, qdiscs, unknown columns, validity);
* :attr:`notice`: one line for the top of report.html, shown in a red box when the run is
  invalid (the numbers are there, and not to be trusted).

Nothing in a kernel run is deterministic: the same scenario gives different numbers each
time (the reason ``tcplab validate`` judges with tolerances).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tcplab.engine import EngineOutput
from tcplab.exports import write_exports
from tcplab.kernel.delayline import REPORT_FILE, lateness_line, lateness_report
from tcplab.kernel.measure import LIMITS, TIMESERIES_GAPS, Measurements, nft_counters, unknown_columns
from tcplab.results.counters import format_nstat
from tcplab.results.result import ExportWriter, Result, ViewWriter, interval_rate
from tcplab.results.ss_samples import ss_sample_texts
from tcplab.scenario import Scenario

__all__ = ["KernelResult", "KERNEL_FILES"]

#: Files a kernel run directory has besides :data:`tcplab.results.result.RUN_FILES`.
KERNEL_FILES = ("kernel.json", "delayline.json")


class KernelResult(Result):
    """One kernel run (module doc).

    Args beyond :class:`~tcplab.results.Result`'s:
        measurements: what :func:`tcplab.kernel.measure.collect` gathered.
        kernel: kernel.json's content, at least ``env`` (KernelEnv.to_dict(): ``release``,
            ``hz``, ``cc_available``, ``qdiscs``, ...), ``valid`` and ``invalid_reasons``;
            optionally ``quiet``, ``commands``, ``plan``, ``departures``, ... (kept as given).
        exports: the export writer (default :func:`tcplab.exports.write_exports`: a kernel
            run directory has run.flent.gz and iperf3-FLOW.json as a simulation's has).
    """

    def __init__(
        self,
        scenario: Scenario,
        config: dict[str, Any],
        output: EngineOutput,
        *,
        measurements: Measurements,
        kernel: Mapping[str, Any],
        wall_time_s: float | None = None,
        views: ViewWriter | None = None,
        exports: ExportWriter | None = write_exports,
        overrides: Sequence[str] = (),
        command: Sequence[str] | None = None,
    ):
        self.measurements = measurements
        env = dict(kernel.get("env") or {})
        self.kernel: dict[str, Any] = dict(kernel)
        self.kernel.setdefault("unknown_columns", unknown_columns(measurements))
        self.kernel["valid"] = bool(kernel.get("valid", True))
        reasons = list(kernel.get("invalid_reasons", []))
        self.kernel["invalid_reasons"] = [str(r) for r in reasons]
        # those the machine's load caused (tcplab.kernel.measure.Reason), unless given
        self.kernel.setdefault("machine_reasons", [str(r) for r in reasons if getattr(r, "machine", False)])
        self.kernel.setdefault("release", env.get("release") or measurements.release)
        self.kernel.setdefault("hz", env.get("hz"))
        self.kernel.setdefault("delaylines", measurements.delaylines)
        self.kernel.setdefault(
            "nft", {ns: nft_counters(text) for ns, text in measurements.nft_json.items() if text.strip()}
        )
        self.kernel.setdefault("queue_sampler", measurements.queue_lateness)
        self.kernel.setdefault(
            "agents",
            {
                node: {
                    "exit": measurements.agent_exit.get(node),
                    "stopped_by": doc.get("stopped_by"),
                    "errors": doc.get("errors", []),
                    "ss": doc.get("ss"),
                    "cc_set": {str(e["flow"]) + "." + e["role"]: e.get("cc_set") for e in doc.get("endpoints", [])},
                }
                for node, doc in measurements.agents.items()
            },
        )
        self.kernel.setdefault("collect_errors", list(measurements.errors))
        super().__init__(
            scenario,
            config,
            output,
            wall_time_s=wall_time_s,
            views=views,
            exports=exports,
            overrides=overrides,
            command=command,
        )

    def _timeseries_frame(self, out: EngineOutput) -> pd.DataFrame:
        """The simulator's frame, with the receiver's columns NaN where the receiver's ss
        sample of the slot is missing (build_raw's ``timeseries_gaps``: a sampler miss is a
        gap, not a 0), and the per-row goodput over the time since the last sample that has a
        value (:func:`tcplab.results.result.interval_rate`)."""
        ts = super()._timeseries_frame(out)
        gaps = (out.raw or {}).get(TIMESERIES_GAPS) or {}
        changed = False
        for column, mask in gaps.items():
            mask = np.asarray(mask, dtype=bool)
            if column in ts and len(mask) == len(ts) and mask.any():
                ts[column] = ts[column].astype(np.float64).where(~mask)
                changed = True
        if changed:
            ts["goodput_bps"] = interval_rate(ts, "flow", "bytes_received", self.config["sample_interval_ns"])
        return ts

    @property  # type: ignore[override]
    def unknown_columns(self) -> tuple[str, ...]:
        """The time-series columns ss does not show (0 in the series; views skip them)."""
        return tuple(self.kernel["unknown_columns"])

    # -- validity ---------------------------------------------------------------------

    @property
    def valid(self) -> bool:
        return bool(self.kernel["valid"])

    @property
    def invalid_reasons(self) -> list[str]:
        return list(self.kernel["invalid_reasons"])

    @property
    def machine_reasons(self) -> list[str]:
        """Those of :attr:`invalid_reasons` the machine's load caused (a busy machine, a delay
        line or sampler late): the same run may be valid on a quieter machine."""
        return list(self.kernel.get("machine_reasons", []))

    @property
    def notice(self) -> dict[str, str]:
        """The report's first line about this run: ``{"level": "bad"|"info", "text"}``."""
        release = self.kernel.get("release") or "?"
        report = self.delayline_report()
        lateness = f" ({lateness_line(report)})" if report else ""
        if not self.valid:
            return {
                "level": "bad",
                "text": f"INVALID kernel run (Linux {release}): " + "; ".join(self.invalid_reasons) + lateness,
            }
        return {
            "level": "info",
            "text": f"Measured on the Linux kernel {release} in network namespaces (tcplab kernel run), "
            "not simulated; columns the kernel does not report are 0: "
            + ", ".join(self.kernel["unknown_columns"])
            + lateness,
        }

    # -- summary and metadata -----------------------------------------------------------

    def _summary(self) -> dict[str, Any]:
        # the stuck/collapse episodes' CC state comes from columns ss does not show: not known
        # (empty: tcplab.results.stuck.episode_line prints "?"), not "Open"
        unknown = set(self.unknown_columns)
        for ep in self.stuck:
            if "ca_state" in unknown:
                ep["ca_states"] = []
            if "cc_mode" in unknown:
                ep["cc_modes"] = []
        summary = super()._summary()
        summary["kind"] = "kernel"
        summary["kernel"] = {
            "release": self.kernel.get("release"),
            "hz": self.kernel.get("hz"),
            "valid": self.valid,
            "invalid_reasons": self.invalid_reasons,
        }
        return summary

    def _rtt_percentiles(self) -> dict[str, Any]:
        return {
            "method": "nearest rank over the data sender's srtt as ss printed it every sample interval (rtt:X)",
            "relative_error": 0.0,
        }

    def metadata(self) -> dict[str, Any]:
        meta = super().metadata()
        env = self.kernel.get("env") or {}
        meta["kernel"] = {
            "release": self.kernel.get("release"),
            "hz": self.kernel.get("hz"),
            "cc_available": env.get("cc_available"),
            "qdiscs": env.get("qdiscs"),
            "unknown_columns": list(self.kernel["unknown_columns"]),
            "valid": self.valid,
            "invalid_reasons": self.invalid_reasons,
        }
        return meta

    # -- the kernel's own texts ---------------------------------------------------------

    def nstat_text(self) -> str:
        """counters.txt: per node, ``nstat -asz`` after minus before (gauges: after)."""
        return format_nstat(self._host_counters, self.duration_s)

    def tc_texts(self) -> dict[str, str]:
        """``{node: tc -s qdisc show}`` as the kernel printed it after the run."""
        return {node: text for node, text in self.measurements.tc_text.items() if text}

    def ss_texts(self, at_ns: int | None = None) -> dict[str, str]:
        """``{node: ss -tin text}``: each node's last ss sample at or before ``at_ns``
        (None: its last sample)."""
        out = {}
        for node, text in self.measurements.ss_samples.items():
            chosen = None
            for t, block in ss_sample_texts(text):
                if at_ns is None or t <= at_ns:
                    chosen = block
            if chosen:
                out[node] = chosen
        return out

    def ethtool_texts(self) -> dict[str, str]:
        return {}

    def proc_stat_texts(self) -> dict[str, str]:
        return {}

    def stats_files(self, at_ns: int | None = None) -> dict[str, str]:
        files = {f"tc-qdisc-{node}.txt": text for node, text in self.tc_texts().items()}
        files.update({f"ss-tin-{node}.txt": text for node, text in self.ss_texts(at_ns).items()})
        return files

    def kernel_json(self) -> dict[str, Any]:
        return self.kernel

    def __repr__(self) -> str:
        state = "valid" if self.valid else "INVALID"
        return (
            f"<KernelResult {self.scenario.name!r} linux {self.kernel.get('release')} {state} flows={len(self.flows)}>"
        )

    def delayline_report(self) -> dict[str, Any] | None:
        """``delayline.json``'s content (:func:`tcplab.kernel.delayline.lateness_report`), or
        None for a run without delay lines."""
        if not self.measurements.delaylines:
            return None
        names = [str(link.get("name", i)) for i, link in enumerate(self.config.get("links", []))]
        link_names = {
            str(w["ns"]): {
                str(t["name"]): names[int(t["link"])] for t in w.get("tuns", []) if int(t["link"]) < len(names)
            }
            for w in (self.kernel.get("plan") or {}).get("wires", [])
        }
        limits = {"p99": LIMITS["delayline_late_p99_ns"], "max": LIMITS["delayline_late_max_ns"]}
        return lateness_report(self.measurements.delaylines, limits_ns=limits, link_names=link_names)

    def _write_files(self, out: Path, *, plots: bool) -> None:
        (out / "kernel.json").write_text(
            json.dumps(self.kernel, indent=2, default=_json_default) + "\n", encoding="utf-8"
        )
        report = self.delayline_report()
        if report is not None:
            (out / REPORT_FILE).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        for node, text in self.measurements.ss_samples.items():
            (out / f"ss-samples-{node}.txt").write_text(text, encoding="utf-8")
        super()._write_files(out, plots=plots)


def _json_default(x: Any) -> Any:
    if hasattr(x, "to_dict"):
        return x.to_dict()
    if hasattr(x, "tolist"):
        return x.tolist()
    if isinstance(x, (set, frozenset, tuple)):
        return list(x)
    if isinstance(x, Path):
        return str(x)
    return str(x)

"""A kernel run invalid because the machine was busy: how busy, and how to run it again.

The model. A kernel run is INVALID for the machine's load (the reasons
:class:`tcplab.kernel.measure.Reason` marks ``machine``, kept in kernel.json's
``machine_reasons``) when the quiet check before it failed (other processes' CPU time, the
hypervisor's steal: :func:`tcplab.kernel.env.quiet_check`) or the emulation fell behind
during it (a delay line or a sampler late: the scheduler did not run them in time). Such a
run is not a failure of tcplab or of the scenario: the same run may be valid on a quieter
machine. So it says how busy the machine was and how to run it again:

* :func:`busy_figures`, from the kernel run's record (kernel.json): the quiet check's load
  average (1, 5, 15 min), the CPU time other processes used (in CPUs and as a share of the
  machine's) and the steal; the delay lines' lateness (the worst p50/p99/max over their
  TUNs, and a ``delayline.json`` of the run directory when the delay line writes one); the
  samplers' share of samples more than half an interval late;
* :func:`busy_text`: those figures on one line, each beside its limit;
* :func:`rerun_hint`: the same command again on a quieter machine (load average under 1, as
  this project's figures are measured), and what ``--allow-busy`` does: it records the quiet
  check without invalidating on it, so it helps when the quiet check is the only reason; a
  delay line or sampler that was late still invalidates (the lateness is in the run's own
  timing, which the comparison would be built on).
"""

from __future__ import annotations

import contextlib
import json
import shlex
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["busy_figures", "busy_text", "rerun_hint", "delayline_file_lateness", "QUIET_LOAD"]

#: The load average under which this project reports timing figures (README, kernel mode).
QUIET_LOAD = 1.0


def _lateness_in(doc: Any) -> list[dict[str, float]]:
    """Every ``{p50?, p99, max}`` mapping of nanoseconds in a JSON document (a delay line's
    stats, whatever its nesting)."""
    found: list[dict[str, float]] = []
    if isinstance(doc, Mapping):
        if "p99" in doc and "max" in doc:
            with contextlib.suppress(TypeError, ValueError):
                found.append({k: float(doc[k]) for k in ("p50", "p99", "max") if doc.get(k) is not None})
        else:
            for value in doc.values():
                found.extend(_lateness_in(value))
    elif isinstance(doc, list):
        for value in doc:
            found.extend(_lateness_in(value))
    return found


def delayline_file_lateness(run_dir: str | Path | None) -> list[dict[str, float]]:
    """The lateness figures (ns) of ``RUN_DIR/delayline.json`` when the run directory has one
    (the delay line's own distribution); [] when it has none or it cannot be read."""
    if run_dir is None:
        return []
    path = Path(run_dir) / "delayline.json"
    try:
        return _lateness_in(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return []


def _worst(entries: Iterable[Mapping[str, float]]) -> dict[str, float] | None:
    entries = list(entries)
    if not entries:
        return None
    return {k: max(e.get(k, 0.0) for e in entries) for k in ("p50", "p99", "max")}


def _late_frac(summary: Any) -> float | None:
    if not isinstance(summary, Mapping):
        return None
    if summary.get("late_over_half_interval_frac") is not None:
        return float(summary["late_over_half_interval_frac"])
    due = int(summary.get("samples", 0) or 0) + int(summary.get("missed", 0) or 0)
    return int(summary.get("late_over_half_interval", 0) or 0) / due if due else None


def busy_figures(record: Mapping[str, Any] | None, run_dir: str | Path | None = None) -> dict[str, Any]:
    """How busy the machine was for one kernel run (module doc), from its kernel.json
    (``record``) and, when given, its run directory's delayline.json. Keys present only when
    known: ``load_average`` [1, 5, 15 min], ``cpus``, ``busy_cpu`` (CPUs other processes used
    over the quiet check), ``busy_pct`` (of the machine), ``steal_pct``, ``quiet_ok``,
    ``allow_busy``, ``delay_line_late_ms`` {p50, p99, max}, ``sampler_late_pct`` (the worst
    sampler's share of late samples), ``machine_reasons``."""
    record = record or {}
    out: dict[str, Any] = {}
    quiet = record.get("quiet")
    if isinstance(quiet, Mapping):
        if quiet.get("loadavg") is not None:
            out["load_average"] = [float(x) for x in quiet["loadavg"]]
        cpus = quiet.get("cpus") or (record.get("env") or {}).get("cpus")
        if cpus:
            out["cpus"] = int(cpus)
        if quiet.get("busy_cpu_frac") is not None:
            out["busy_cpu"] = float(quiet["busy_cpu_frac"])
            if cpus:
                out["busy_pct"] = 100.0 * float(quiet["busy_cpu_frac"]) / int(cpus)
        if quiet.get("steal_frac") is not None:
            out["steal_pct"] = 100.0 * float(quiet["steal_frac"])
        out["quiet_ok"] = bool(quiet.get("ok", True))
        out["quiet_seconds"] = quiet.get("seconds")
        out["allow_busy"] = bool(quiet.get("allow_busy", False))
    late = [
        t.get("lateness_ns") or {}
        for stats in (record.get("delaylines") or {}).values()
        if isinstance(stats, Mapping)
        for t in stats.get("tuns") or []
        if isinstance(t, Mapping)
    ]
    late = [{k: float(v[k]) for k in ("p50", "p99", "max") if v.get(k) is not None} for v in late if v]
    late += _lateness_in(record.get("delayline"))
    late += delayline_file_lateness(run_dir)
    worst = _worst(late)
    if worst is not None:
        out["delay_line_late_ms"] = {k: v / 1e6 for k, v in worst.items()}
    fracs = [_late_frac((a or {}).get("ss")) for a in (record.get("agents") or {}).values() if isinstance(a, Mapping)]
    fracs.append(_late_frac(record.get("queue_sampler")))
    fracs = [f for f in fracs if f is not None]
    if fracs:
        out["sampler_late_pct"] = 100.0 * max(fracs)
    out["machine_reasons"] = [str(r) for r in record.get("machine_reasons") or []]
    return out


def busy_text(fig: Mapping[str, Any]) -> str:
    """The figures on one line: ``load average 2.21 1.60 1.59 (2 CPUs); other processes used
    0.83 CPU over 1 s (41 % of the machine; at most 0.25 CPU allowed), steal 0.0 %; delay line late p50
    0.04 ms, p99 12.31 ms, max 50.12 ms (limits: p99 1 ms, max 20 ms); samplers late 3.1 %
    of samples (limit 2 %)``."""
    from tcplab.kernel.env import MAX_BUSY_CPU
    from tcplab.kernel.measure import LIMITS

    parts = []
    if fig.get("load_average"):
        la = " ".join(f"{x:.2f}" for x in fig["load_average"])
        parts.append(f"load average {la}" + (f" ({fig['cpus']} CPUs)" if fig.get("cpus") else ""))
    if fig.get("busy_cpu") is not None:
        share = f"{fig['busy_pct']:.0f} % of the machine; " if fig.get("busy_pct") is not None else ""
        over = f" over {fig['quiet_seconds']:g} s" if fig.get("quiet_seconds") else ""
        text = f"other processes used {fig['busy_cpu']:.2f} CPU{over} ({share}at most {MAX_BUSY_CPU:g} CPU allowed)"
        if fig.get("steal_pct") is not None:
            text += f", steal {fig['steal_pct']:.1f} %"
        parts.append(text)
    late = fig.get("delay_line_late_ms")
    if late:
        vals = ", ".join(f"{k} {late[k]:.2f} ms" for k in ("p50", "p99", "max") if k in late)
        limits = f"p99 {LIMITS['delayline_late_p99_ns'] / 1e6:g} ms, max {LIMITS['delayline_late_max_ns'] / 1e6:g} ms"
        parts.append(f"delay line late {vals} (limits: {limits})")
    if fig.get("sampler_late_pct") is not None:
        parts.append(
            f"samplers late {fig['sampler_late_pct']:.1f} % of samples (limit {100 * LIMITS['sampler_late_frac']:g} %)"
        )
    return "; ".join(parts) if parts else "no figures recorded"


def rerun_hint(command: Sequence[str] | None, fig: Mapping[str, Any]) -> str:
    """How to run it again (module doc): the same command when the machine is quiet, and
    ``--allow-busy`` where it would help."""
    argv = list(command) if command else ["tcplab", "validate", "SCENARIO", "..."]
    shown = shlex.join(argv)
    text = f"rerun when the machine is quiet (load average under {QUIET_LOAD:g}, nothing else running): {shown}"
    reasons = [str(r) for r in fig.get("machine_reasons") or []]
    quiet_failed = fig.get("quiet_ok") is False and not fig.get("allow_busy")
    others = [r for r in reasons if not r.startswith("the machine was busy before the run")]
    if quiet_failed and "--allow-busy" not in argv:
        text += (
            "; or add --allow-busy to keep a run the quiet check alone would invalidate (the check is recorded, "
            "not enforced; the figures may be noisier)"
        )
        if others:
            text += ", though here the run itself fell behind too, which --allow-busy does not excuse"
    elif others:
        text += " (--allow-busy would not help: the run itself fell behind, not only the check before it)"
    return text

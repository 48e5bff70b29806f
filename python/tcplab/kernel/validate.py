"""``tcplab validate``: the same scenario in the simulator and on the running kernel, and a
verdict per metric on whether the simulator is within tolerance of the kernel.

The model. :func:`validate` runs the simulation (:func:`tcplab.run`) first, then the kernel
run (:func:`tcplab.kernel.kernel_run`: network namespaces, the kernel's own TCP; after the
simulation, so the machine is quiet while the kernel's traffic runs), and compares them with
:func:`compare_runs`, a pure function of the two :class:`~tcplab.results.Result` objects
(a kernel run's :class:`KernelResult` is one). The kernel is the reference.

Metrics (``metric`` keys of :class:`MetricRow`), each with the simulator's value, the
kernel's, the difference, the tolerance (:mod:`tcplab.kernel.tolerances`) and a verdict
``within`` / ``outside`` / ``n/a`` with a one-line reason:

``goodput_bps`` (per flow)
    bytes received by the application x 8 / the flow's lifetime (``Result.flows``), the
    receiver-side throughput netperf reports.
``rtt_p50_ms``, ``rtt_p99_ms`` (per flow)
    percentiles of the smoothed RTT (``srtt_us``, what ``ss -ti`` prints as ``rtt:``) over
    the samples of the *steady part* of the flow, the same window in both worlds: from
    ``start + max(2 s, 20 % of the run)`` to the flow's end. Both worlds are compared on the
    same statistic from the same sampling (every ``sample_interval``), not on the
    simulator's per-ACK RTT histogram, which the kernel does not expose. Percentiles are
    NumPy's linear interpolation between samples; fewer than :data:`MIN_RTT_SAMPLES`
    non-zero samples give ``n/a``.
``retrans_pct`` (per flow)
    retransmitted segments / data segments sent, in percent (tcp_info's
    ``tcpi_total_retrans / tcpi_data_segs_out``; the simulator counts the same).
``queue_drops`` (per one-way link)
    packets the link's egress qdisc dropped (``tc -s qdisc``'s ``dropped`` of the root
    qdisc; a tbf counts its child's drops too, Linux v6.12 net/sched/sch_tbf.c:
    tbf_enqueue()). Random loss (nft on the kernel's wire, the simulator's loss model) is not
    a queue drop and is not compared.

A kernel run marked invalid (``summary["kernel"]["valid"]`` false: the machine was busy, the
delay line late, an agent failed; see ARCH11) gets no verdicts: every row is ``n/a`` with the
reason, :attr:`Validation.valid` is false and ``tcplab validate`` exits 1.
"""

from __future__ import annotations

import math
import os
import platform
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tcplab.kernel.tolerances import Tolerances

if TYPE_CHECKING:
    from tcplab.results import Result
    from tcplab.scenario import Scenario

__all__ = [
    "MetricRow",
    "Validation",
    "compare_runs",
    "validate",
    "steady_window",
    "kernel_validity",
    "MIN_RTT_SAMPLES",
    "STEADY_MIN_S",
    "STEADY_FRACTION",
    "VERDICTS",
    "ValidateError",
    "kernel_options",
    "preflight",
]

#: The steady part of a flow starts this long after its start, at least ...
STEADY_MIN_S = 2.0
#: ... or this share of the run, whichever is later (slow start and BBR's STARTUP are over).
STEADY_FRACTION = 0.20
#: Fewer non-zero srtt samples than this in the steady part: no RTT verdict.
MIN_RTT_SAMPLES = 10
#: The verdicts a metric can get.
VERDICTS = ("within", "outside", "inconclusive (spread)", "n/a")

#: metric key -> (what people read, tolerance key)
METRICS: dict[str, tuple[str, str]] = {
    "goodput_bps": ("goodput", "goodput"),
    "rtt_p50_ms": ("srtt p50", "rtt_p50"),
    "rtt_p99_ms": ("srtt p99", "rtt_p99"),
    "retrans_pct": ("retransmissions", "retrans"),
    "queue_drops": ("queue drops", "drops"),
}


@dataclass(frozen=True)
class MetricRow:
    """One compared metric of one flow or link."""

    metric: str  #: a key of :data:`METRICS`
    subject: str  #: the flow's or the link's name
    kind: str  #: "flow" or "link"
    sim: float | None
    kernel: float | None
    #: sim - kernel, in the metric's unit (Mbit/s are bit/s here; pp for retrans_pct)
    difference: float | None
    #: (sim - kernel) / kernel, None when the kernel's value is 0 or missing
    relative: float | None
    tolerance: str
    verdict: str
    reason: str
    #: ``--runs N`` > 1 only (:mod:`tcplab.kernel.repeat`): each world's runs (values, n,
    #: mean, sd, min, max); ``sim``/``kernel`` above are then the means
    sim_stats: dict[str, Any] | None = None
    kernel_stats: dict[str, Any] | None = None
    #: standard error of the difference of the means (None: a world has fewer than 2 values)
    se_difference: float | None = None

    @property
    def label(self) -> str:
        return METRICS[self.metric][0]


@dataclass
class Validation:
    """The comparison of one scenario's simulation with its kernel run."""

    scenario: str
    title: str
    rows: list[MetricRow]
    tolerances: Tolerances
    #: False: the kernel run was invalid or failed; no verdicts (every row n/a)
    valid: bool = True
    invalid_reasons: list[str] = field(default_factory=list)
    #: per flow name: (from_s, to_s) of the steady part the RTT percentiles cover
    steady: dict[str, tuple[float, float]] = field(default_factory=dict)
    #: the kernel run's identity: release, hz (from its summary's "kernel"), kind
    kernel: dict[str, Any] = field(default_factory=dict)
    #: the machine: hostname, cpus, cpu model, python
    machine: dict[str, Any] = field(default_factory=dict)
    #: when the validation ran (UTC, ISO 8601); set by :func:`validate`
    when: str | None = None
    #: run directories relative to the validation directory (None: not written)
    sim_dir: str | None = "sim"
    kernel_dir: str | None = "kernel"
    command: list[str] | None = None
    #: things a reader should know before trusting the verdicts (one line each): the
    #: kernel's quiet check failed but was allowed, HZ differs between the worlds, ...
    notes: list[str] = field(default_factory=list)
    #: per one-way link, what each world's path did (not judged): packets sent by the link's
    #: egress qdisc, its queue drops and the random-loss drops after it (nft in the kernel)
    path: list[dict[str, Any]] = field(default_factory=list)
    #: ``--runs N``: runs per world (1: a single pair, today's comparison)
    runs: int = 1
    #: the simulations' seeds, in run order
    seeds: list[int] = field(default_factory=list)
    #: kernel runs left out of the statistics, one line each (``kernel run-2: INVALID: ...``)
    excluded: list[str] = field(default_factory=list)
    #: the kernel runs (1-based) the statistics cover
    valid_kernel_runs: list[int] = field(default_factory=list)
    #: with runs > 1: every run directory, relative to the validation directory
    sim_dirs: list[str] = field(default_factory=list)
    kernel_dirs: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """How many metrics got each verdict."""
        out = dict.fromkeys(VERDICTS, 0)
        for r in self.rows:
            out[r.verdict] += 1
        return out

    def verdict_line(self) -> str:
        """``7 metrics: 5 within tolerance, 1 outside, 1 n/a`` (or the invalid reason)."""
        if not self.valid:
            return "INVALID: " + "; ".join(self.invalid_reasons or ["the kernel run is invalid"])
        c = self.counts()
        line = f"{len(self.rows)} metrics: {c['within']} within tolerance, {c['outside']} outside, {c['n/a']} n/a"
        if self.runs > 1 or c["inconclusive (spread)"]:
            line += f", {c['inconclusive (spread)']} inconclusive (spread)"
        if self.runs > 1:
            line += f" ({self.runs} runs each)"
        return line

    def to_json(self) -> dict[str, Any]:
        """validation.json."""
        return _clean(
            {
                "scenario": self.scenario,
                "title": self.title,
                "when": self.when,
                "valid": self.valid,
                "invalid_reasons": list(self.invalid_reasons),
                "verdict": self.verdict_line(),
                "counts": self.counts(),
                "kernel": self.kernel,
                "machine": self.machine,
                "tolerances": self.tolerances.to_json(),
                "tolerance_spec": self.tolerances.spec(),
                "steady": {k: {"from_s": a, "to_s": b} for k, (a, b) in self.steady.items()},
                "runs": {"sim": self.sim_dir, "kernel": self.kernel_dir},
                "command": self.command,
                "metrics": [asdict(r) for r in self.rows],
                "path": self.path,
                "notes": list(self.notes),
                **({"repeat": self._repeat_json()} if self.runs > 1 else {}),
            }
        )

    def _repeat_json(self) -> dict[str, Any]:
        from tcplab.kernel.repeat import RULE

        return {
            "runs": self.runs,
            "seeds": list(self.seeds),
            "valid_kernel_runs": list(self.valid_kernel_runs),
            "excluded": list(self.excluded),
            "sim": list(self.sim_dirs),
            "kernel": list(self.kernel_dirs),
            "rule": RULE,
        }


def _clean(x: Any) -> Any:
    if isinstance(x, Mapping):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        x = float(x)
        return x if math.isfinite(x) else None
    return x


# -- the pure core ----------------------------------------------------------------------


def kernel_validity(kern: Result) -> tuple[bool, list[str]]:
    """(valid, reasons) from a kernel run's summary (``"kernel": {"valid", "invalid_reasons"}``);
    a result without that block (a simulation standing in for the kernel) is valid."""
    info = (kern.summary or {}).get("kernel")
    if not isinstance(info, Mapping):
        return True, []
    valid = bool(info.get("valid", True))
    reasons = [str(r) for r in info.get("invalid_reasons") or []]
    if not valid and not reasons:
        reasons = ["the kernel run is marked invalid"]
    return valid, reasons


def steady_window(result: Result, flow: str) -> tuple[float, float] | None:
    """The steady part of ``flow`` in seconds since the run's start: from its start plus
    max(:data:`STEADY_MIN_S`, :data:`STEADY_FRACTION` x the run) to its end; None when the
    flow is unknown or the window is empty."""
    cfg = next((f for f in result.config.get("flows", []) if str(f["name"]) == flow), None)
    if cfg is None:
        return None
    duration_s = result.config["duration_ns"] / 1e9
    start_s = int(cfg.get("start_ns") or 0) / 1e9
    stop_ns = cfg.get("stop_ns")
    end_s = min(duration_s, int(stop_ns) / 1e9) if stop_ns else duration_s
    begin_s = start_s + max(STEADY_MIN_S, STEADY_FRACTION * duration_s)
    return (begin_s, end_s) if end_s > begin_s else None


def _srtt_ms(result: Result, flow: str, window: tuple[float, float]) -> np.ndarray:
    """The flow's non-zero srtt samples (ms) inside the window (0 = no RTT sample yet)."""
    ts = result.timeseries
    if ts is None or ts.empty or "srtt_us" in _unknown_columns(result):
        return np.array([], dtype=np.float64)
    rows = ts[ts["flow_name"] == flow]
    t = rows["t_s"].to_numpy(dtype=np.float64)
    srtt = rows["srtt_us"].to_numpy(dtype=np.float64)
    keep = (t >= window[0] - 1e-9) & (t <= window[1] + 1e-9) & (srtt > 0)
    return srtt[keep] / 1000.0


def _unknown_columns(result: Result) -> set[str]:
    """Time-series columns a kernel run could not measure (ss does not show them)."""
    cols: set[str] = set()
    for source in (getattr(result, "unknown_columns", None), (result.summary or {}).get("kernel")):
        if isinstance(source, Mapping):
            source = source.get("unknown_columns")
        if isinstance(source, (list, tuple, set, frozenset)):
            cols.update(str(c) for c in source)
    return cols


def _value(x: Any) -> float | None:
    if x is None:
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _fmt(metric: str, v: float) -> str:
    from tcplab.views.report import sig

    if metric == "goodput_bps":
        return f"{sig(v / 1e6)} Mbit/s"
    if metric in ("rtt_p50_ms", "rtt_p99_ms"):
        return f"{v:.1f} ms"
    if metric == "retrans_pct":
        return f"{v:.2f} %"
    return f"{v:.0f} packets"


def _judge(
    metric: str, subject: str, kind: str, sim: float | None, kern: float | None, tol: Tolerances, missing: str = ""
) -> MetricRow:
    """One row: the difference and the verdict (within when any of the metric's tolerances holds)."""
    key = METRICS[metric][1]
    text = tol.text(key)
    if sim is None or kern is None:
        which = "the simulation" if sim is None else "the kernel run"
        if sim is None and kern is None:
            which = "either run"
        reason = missing or f"no value in {which}"
        return MetricRow(metric, subject, kind, sim, kern, None, None, text, "n/a", reason)
    diff = sim - kern
    rel = diff / kern if kern != 0 else None
    absolute = {"retrans": tol.retrans_pp, "drops": tol.drops_packets}.get(key)
    relative = getattr(tol, f"{key}_rel")
    eps = 1e-9
    ok_abs = absolute is not None and abs(diff) <= absolute + eps
    if relative is not None:
        ok_rel = (rel is not None and abs(rel) <= relative + eps) or (rel is None and diff == 0)
    else:
        ok_rel = False
    if absolute is None and relative is None:
        return MetricRow(metric, subject, kind, sim, kern, diff, rel, text, "n/a", "no tolerance set for this metric")
    verdict = "within" if ok_abs or ok_rel else "outside"
    if diff == 0:
        reason = f"sim and kernel both {_fmt(metric, sim)} (tolerance {text})"
        return MetricRow(metric, subject, kind, sim, kern, diff, rel, text, verdict, reason)
    else:
        amount = _fmt(metric, abs(diff)) if metric != "retrans_pct" else f"{abs(diff):.2f} pp"
        if rel is not None and metric != "goodput_bps":
            amount += f" ({abs(rel) * 100:.1f} %)"
        elif rel is not None:
            amount = f"{abs(rel) * 100:.1f} %"
        how = f"{amount} {'above' if diff > 0 else 'below'}"
    reason = f"sim {_fmt(metric, sim)} is {how} the kernel's {_fmt(metric, kern)} (tolerance {text})"
    return MetricRow(metric, subject, kind, sim, kern, diff, rel, text, verdict, reason)


def compare_runs(sim: Result, kern: Result, tolerances: Tolerances | None = None) -> Validation:
    """The verdict table of a simulation against a kernel run of the same scenario (pure:
    reads the two results, writes nothing). Flows and links are matched by name, in the
    simulation's order."""
    tol = tolerances if tolerances is not None else Tolerances()
    valid, reasons = kernel_validity(kern)
    rows: list[MetricRow] = []
    steady: dict[str, tuple[float, float]] = {}
    kflows = {str(r["name"]): r for r in kern.flows.to_dict("records")}
    for f in sim.flows.to_dict("records"):
        name = str(f["name"])
        k = kflows.get(name)
        gone = "" if k is not None else "the kernel run has no such flow"

        def kv(key: str, k: dict[str, Any] | None = k) -> float | None:
            return _value(k[key]) if k is not None else None

        rows.append(_judge("goodput_bps", name, "flow", _value(f["goodput_bps"]), kv("goodput_bps"), tol, gone))
        window = steady_window(sim, name)
        if window is not None:
            steady[name] = window
        for metric, q in (("rtt_p50_ms", 50.0), ("rtt_p99_ms", 99.0)):
            if window is None:
                rows.append(_judge(metric, name, "flow", None, None, tol, "the run is too short for a steady part"))
                continue
            s_samples = _srtt_ms(sim, name, window)
            k_samples = _srtt_ms(kern, name, window) if k is not None else np.array([])
            few = [
                f"{what} has {len(x)} srtt samples in {window[0]:g}-{window[1]:g} s (fewer than {MIN_RTT_SAMPLES})"
                for what, x in (("the simulation", s_samples), ("the kernel run", k_samples))
                if len(x) < MIN_RTT_SAMPLES
            ]
            sv = float(np.percentile(s_samples, q)) if len(s_samples) >= MIN_RTT_SAMPLES else None
            kv2 = float(np.percentile(k_samples, q)) if len(k_samples) >= MIN_RTT_SAMPLES else None
            rows.append(_judge(metric, name, "flow", sv, kv2, tol, gone or "; ".join(few)))
        sr = _value(f["retrans_ratio"])
        kr = kv("retrans_ratio")
        rows.append(
            _judge(
                "retrans_pct",
                name,
                "flow",
                None if sr is None else sr * 100.0,
                None if kr is None else kr * 100.0,
                tol,
                gone,
            )
        )
    klinks = {str(r["name"]): r for r in kern.links.to_dict("records")}
    for link in sim.links.to_dict("records"):
        name = str(link["name"])
        k = klinks.get(name)
        rows.append(
            _judge(
                "queue_drops",
                name,
                "link",
                _value(link.get("drops")),
                _value(k.get("drops")) if k is not None else None,
                tol,
                "" if k is not None else "the kernel run has no such link",
            )
        )
    if not valid:  # the reasons are stated once (Validation.invalid_reasons), not per row
        rows = [
            MetricRow(
                r.metric,
                r.subject,
                r.kind,
                r.sim,
                r.kernel,
                r.difference,
                r.relative,
                r.tolerance,
                "n/a",
                "no verdict: the kernel run is invalid",
            )
            for r in rows
        ]
    path = []
    for link in sim.links.to_dict("records"):
        k = klinks.get(str(link["name"])) or {}
        entry: dict[str, Any] = {"link": str(link["name"])}
        for key in ("sent_packets", "drops", "loss_drops"):
            entry[key] = {"sim": _value(link.get(key)), "kernel": _value(k.get(key))}
        path.append(entry)
    info = (kern.summary or {}).get("kernel")
    kernel = dict(info) if isinstance(info, Mapping) else {}
    kernel.setdefault("kind", (kern.summary or {}).get("kind", "kernel" if info else "stand-in"))
    record = getattr(kern, "kernel", None)  # a KernelResult's kernel.json
    if isinstance(record, Mapping):
        for key in ("departures", "quiet"):
            if record.get(key) is not None:
                kernel[key] = record[key]
    notes = _notes(sim, kernel)
    return Validation(
        scenario=sim.scenario.name,
        title=sim.title,
        rows=rows,
        tolerances=tol,
        valid=valid,
        invalid_reasons=reasons,
        steady=steady,
        kernel=kernel,
        path=path,
        notes=notes,
    )


def _notes(sim: Result, kernel: Mapping[str, Any]) -> list[str]:
    """What the reader should know before trusting the verdicts."""
    notes = []
    quiet = kernel.get("quiet")
    if isinstance(quiet, Mapping) and quiet.get("ok") is False:
        notes.append(
            f"the machine was not quiet before the kernel run ({quiet.get('reason', 'busy')}); "
            "allowed with --allow-busy: the kernel's figures may be noisy"
        )
    hz = kernel.get("hz")
    if hz:
        differ = sorted(
            str(n["name"])
            for n in sim.config.get("nodes", [])
            if n.get("kind", "host") == "host" and n.get("hz") not in (None, hz)
        )
        if differ:
            notes.append(
                f"the simulated hosts {', '.join(differ)} run at another HZ than this kernel's {hz} "
                f"(set hosts.NAME.hz={hz} to compare like with like: HZ sets CUBIC's clock and the timers)"
            )
    return notes


# -- running both -----------------------------------------------------------------------

#: ``runner(scenario, options) -> Result``: a kernel run of the (override-applied) scenario.
KernelRunner = Callable[["Scenario", Any], "Result"]


def machine_info() -> dict[str, Any]:
    """The machine the validation ran on (for the report's header)."""
    model = None
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "hostname": platform.node(),
        "system": f"{platform.system()} {platform.release()}",
        "cpus": os.cpu_count(),
        "cpu_model": model,
        "python": platform.python_version(),
    }


class ValidateError(RuntimeError):
    """The kernel run failed (not a verdict: nothing to compare); one line, exit 1."""


def kernel_options(*, prefix: str = "tcplab", allow_busy: bool = False, timeout_ns: int | None = None, **extra: Any):  # noqa: ANN201
    """The kernel run's options (:class:`tcplab.kernel.KernelOptions` when kernel mode is
    installed; its fields are matched by name, so ``timeout_ns``/``timeout_s`` both work)."""
    values: dict[str, Any] = {"prefix": prefix, "allow_busy": allow_busy, "timeout_ns": timeout_ns, **extra}
    try:
        from tcplab.kernel import KernelOptions  # type: ignore[attr-defined]
    except ImportError:
        from types import SimpleNamespace

        return SimpleNamespace(**values)
    import dataclasses

    if dataclasses.is_dataclass(KernelOptions):
        names = {f.name for f in dataclasses.fields(KernelOptions)}
        if "timeout_s" in names and timeout_ns is not None:
            values["timeout_s"] = timeout_ns / 1e9
        return KernelOptions(**{k: v for k, v in values.items() if k in names and v is not None})
    return KernelOptions(**{k: v for k, v in values.items() if v is not None})


def _kernel_errors() -> tuple[type[BaseException], type[BaseException]]:
    """(KernelError, KernelUnsupported), or two classes nothing raises without kernel mode."""
    try:
        from tcplab.kernel.errors import KernelError, KernelUnsupported  # type: ignore[import-not-found]
    except ImportError:

        class _Never(Exception):
            pass

        return _Never, _Never
    return KernelError, KernelUnsupported


def preflight(sc: Scenario, options: Any) -> None:
    """What the kernel path cannot build, as a user error before anything runs (the
    simulation takes a while; a scenario the kernel cannot run should not wait for it).
    Kernel mode's own plan (:func:`tcplab.kernel.plan.make_plan`) decides; without it,
    nothing is checked here."""
    from tcplab.errors import ScenarioError

    try:
        from tcplab.kernel.env import probe  # type: ignore[import-not-found]
        from tcplab.kernel.plan import make_plan  # type: ignore[import-not-found]
    except ImportError:
        return
    failed, unsupported = _kernel_errors()
    try:
        plan = make_plan(sc.to_core(), probe(getattr(options, "prefix", "tcplab")), options)
    except unsupported as e:
        from tcplab.scenario.checks import engine_message

        raise ScenarioError(engine_message(sc, str(e))) from e
    # another run with this prefix (or a killed one's leftovers): refuse before simulating
    try:
        from tcplab.kernel.testbed import check_free  # type: ignore[import-not-found]
    except ImportError:
        return
    try:
        check_free(plan)
    except failed as e:
        raise ValidateError(str(e)) from e


def _default_kernel_runner(sc: Scenario, options: Any, progress: bool = True) -> Result:
    try:
        from tcplab.kernel import kernel_run  # type: ignore[attr-defined]
    except ImportError as e:
        raise ValidateError(f"kernel mode is not available in this tcplab ({e})") from e
    import inspect

    params = inspect.signature(kernel_run).parameters
    kwargs: dict[str, Any] = {"options": options}
    if "progress" in params:  # a progress bar on a terminal, as the simulation's
        kwargs["progress"] = progress
    return kernel_run(sc, **kwargs)


def _same_provenance(kern: Result, sim: Result) -> None:
    """The kernel run was handed the scenario with the overrides already applied: record the
    overrides it ran with (its title, summary and metadata) as the simulation's."""
    if getattr(kern, "overrides", None) or not sim.overrides:
        return
    kern.overrides = list(sim.overrides)
    if isinstance(getattr(kern, "summary", None), dict):
        kern.summary["title"] = kern.title
        kern.summary["description"] = kern.description
        kern.summary["overrides"] = list(kern.overrides)


def validate(
    scenario: str | Path | Mapping[str, Any] | Scenario,
    *,
    overrides: Iterable[str] | None = None,
    seed: int | None = None,
    tolerances: Tolerances | None = None,
    options: Any = None,
    out: str | Path | None = None,
    overwrite: bool = False,
    kernel_runner: KernelRunner | None = None,
    command: Sequence[str] | None = None,
    applied_overrides: Sequence[str] | None = None,
    core: Any = None,
    plots: bool = True,
    progress: bool = False,
    say: Callable[[str], None] | None = None,
    runs: int = 1,
) -> Validation:
    """Run ``scenario`` in the simulator and on the kernel, compare them and (with ``out``)
    write the validation directory atomically: ``OUT/sim/`` and ``OUT/kernel/`` (run
    directories), ``OUT/report.html``, ``OUT/report.md``, ``OUT/validation.json`` and
    ``OUT/plots/`` (:mod:`tcplab.views.validate`).

    ``options`` go to the kernel run unchanged (:func:`kernel_options`: prefix, allow_busy,
    timeout); ``kernel_runner`` replaces :func:`tcplab.kernel.kernel_run` (tests; a
    stand-in). ``progress``: the simulation's progress bar (on a terminal); ``say``: where
    one-line status messages go (the CLI: stderr). A scenario mistake raises before anything runs, and so does an output
    directory that cannot be written; a kernel run that fails raises :class:`ValidateError`
    (nothing written). An INVALID kernel run is written and compared without verdicts.

    ``runs`` N > 1 (:mod:`tcplab.kernel.repeat`): N simulations with the seeds seed ..
    seed+N-1 and N kernel runs, one after the other, written to ``OUT/sim/run-K`` and
    ``OUT/kernel/run-K``; verdicts from the means and the spread. A kernel run that fails or
    is invalid is excluded and named; with fewer than 2 valid ones there are no verdicts.
    """
    from tcplab.loader import load_scenario
    from tcplab.results.rundir import check_output_dir
    from tcplab.runner import override_texts
    from tcplab.runner import run as run_sim
    from tcplab.scenario import Scenario as _Scenario

    texts = [*(applied_overrides or []), *override_texts(list(overrides or []), seed)]
    if isinstance(scenario, _Scenario) and overrides is None and seed is None:
        sc = scenario
    else:
        sc = load_scenario(scenario, list(overrides or []), seed=seed)
    if out is not None:
        check_output_dir(Path(out), overwrite=overwrite)
    note = say or (lambda text: None)
    if runs < 1:
        raise ValueError(f"runs must be at least 1, got {runs}")
    from tcplab.scenario.cost import check_validate_time

    check_validate_time(sc, runs)  # runs x (simulation + kernel run) within limits.cpu_time
    if runs > 1:
        return _validate_repeated(
            sc, texts, runs, tolerances, options, out, overwrite, kernel_runner, command, core, plots, progress, note
        )
    note(f"simulating {sc.name} ({sc.to_core()['duration_ns'] / 1e9:g} s)")
    sim = run_sim(sc, applied_overrides=texts, command=command, core=core, progress=progress)
    failed, _ = _kernel_errors()
    note("running it on the kernel (network namespaces; the same duration of traffic)")
    try:
        if kernel_runner is not None:
            kern = kernel_runner(sc, options)
        else:
            kern = _default_kernel_runner(sc, options, progress=progress)
    except failed as e:
        raise ValidateError(f"kernel run failed: {e}") from e
    _same_provenance(kern, sim)
    v = compare_runs(sim, kern, tolerances)
    v.when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    v.machine = machine_info()
    v.command = list(command) if command is not None else None
    if out is not None:
        from tcplab.views.validate import write_validation

        write_validation(v, sim, kern, Path(out), overwrite=overwrite, plots=plots)
    return v


def _validate_repeated(
    sc: Scenario,
    texts: list[str],
    runs: int,
    tolerances: Tolerances | None,
    options: Any,
    out: str | Path | None,
    overwrite: bool,
    kernel_runner: KernelRunner | None,
    command: Sequence[str] | None,
    core: Any,
    plots: bool,
    progress: bool,
    note: Callable[[str], None],
) -> Validation:
    """``validate(runs=N)``, N > 1: N simulations (seeds seed .. seed+N-1), then N kernel runs
    one after the other (the machine quiet for each), then :func:`compare_repeated`."""
    from tcplab.kernel.repeat import compare_repeated
    from tcplab.runner import run as run_sim

    seed0 = int(sc.seed)
    seeds = [seed0 + k for k in range(runs)]
    base_texts = [t for t in texts if not t.startswith("seed=")]
    duration_s = sc.to_core()["duration_ns"] / 1e9
    sims = []
    for k, seed in enumerate(seeds):
        note(f"simulating {sc.name} ({duration_s:g} s), run {k + 1} of {runs} (seed {seed})")
        sims.append(run_sim(sc, seed=seed, applied_overrides=base_texts, command=command, core=core, progress=progress))
    failed, _ = _kernel_errors()
    kerns: list[Result | None] = []
    failures: dict[int, str] = {}
    for k in range(runs):
        note(f"running it on the kernel, run {k + 1} of {runs} (network namespaces; the same duration of traffic)")
        try:
            if kernel_runner is not None:
                kern = kernel_runner(sc, options)
            else:
                kern = _default_kernel_runner(sc, options, progress=progress)
        except (failed, ValidateError) as e:
            note(f"kernel run {k + 1} failed: {e}")
            kerns.append(None)
            failures[k] = str(e)
            continue
        from types import SimpleNamespace

        # the kernel ran the same overrides; the simulations' seed=S is theirs, not its
        _same_provenance(kern, SimpleNamespace(overrides=list(base_texts)))  # type: ignore[arg-type]
        kerns.append(kern)
    if all(k is None for k in kerns):
        raise ValidateError(f"kernel run failed: all {runs} runs failed ({failures[0]})")
    v = compare_repeated(sims, kerns, tolerances, failures)
    v.seeds = seeds
    # what ran: the overrides without run 1's seed (the seeds are listed apart)
    v.title = f"{sc.name} [{', '.join(base_texts)}]" if base_texts else sc.name
    v.when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    v.machine = machine_info()
    v.command = list(command) if command is not None else None
    if out is not None:
        from tcplab.views.validate import write_validation

        write_validation(v, sims, kerns, Path(out), overwrite=overwrite, plots=plots)
    return v

"""Side-by-side runs: several scenarios, or one scenario with ``--set`` alternatives.

The model: a comparison is a list of *variants*, each a fully validated scenario with a
label. Variants come from

* several scenario files (labelled by file stem or built-in name), and/or
* ``--set PATH=V1,V2,...`` overrides with alternatives (labelled by the chosen values);
  several such overrides give the cartesian product, in the order given.

Every variant is validated before any is run, so a typo in the last one costs nothing. Runs
are independent; they go through ``map`` (sequential by default), so an
``concurrent.futures.Executor``'s ``map`` can be passed to run them in parallel.

Each variant succeeds or fails on its own. A variant the engine rejects becomes a
:class:`VariantFailure` (its column in the table is empty, compare.json says why) and the
others are still tabulated and written. With ``jobs > 1`` (or ``isolate=True``) every variant
runs in its own worker process, at most ``jobs`` at a time; a worker that dies (killed by a
signal, ``os._exit``, an abort in native code) fails only its own variant. On SIGINT/SIGTERM
(:mod:`tcplab.signals`) the workers are terminated and waited for before the exception
propagates, so none outlives the comparison.

The table has one row per metric and one column per variant: total goodput (Mbit/s),
retransmitted segments (% of segments sent), RTOs, queue drops (tail drops in queues),
loss drops (packets the links' loss models dropped), and RTT p50/p99 (ms) per
flow (flows matched by position, rows named ``NAME RTT p50 (ms)`` when the flow has one name
in every variant, else ``flow K ...``; the connections of an app with more than 16, a broadcast's,
get no rows of their own). Each application's headline metrics follow, one row each, named
``APP: metric (unit)`` and matched by app name (:func:`tcplab.results.apps.headline`). When
a variant has a host with a NIC model, a row of NIC ring drops (summed over hosts); with a
CPU model, a CPU steal row per host that has one.

Floor 5 (DESIGN.md's "Layout"): imports :mod:`tcplab.runner` (each variant is one run) and the
floors below it, never the commands' packages or the commands.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import re
import sys
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tcplab.errors import EngineError, ScenarioError
from tcplab.loader import scenario_data, validate_with_overrides
from tcplab.overrides import Override, expand_variants, parse_overrides
from tcplab.scenario import Scenario

if TYPE_CHECKING:  # pandas, NumPy and pyarrow load on first use: `import tcplab` stays quick
    import pandas as pd

    from tcplab.engine import Core
    from tcplab.results import Result

__all__ = [
    "Variant",
    "VariantFailure",
    "CompareResult",
    "plan_variants",
    "run_variants",
    "compare",
    "compare_table",
    "default_jobs",
    "run_in_processes",
    "run_variant_or_failure",
]


@dataclass
class Variant:
    """One column of a comparison."""

    label: str
    scenario: Scenario
    source: str
    values: list[str] = field(default_factory=list)
    overrides: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class VariantFailure:
    """A variant that produced no result, and why (one line)."""

    label: str
    reason: str


def _stem(label: str) -> str:
    if label.startswith("builtin:"):
        return label[len("builtin:") :]
    name = Path(label).name
    for ext in (".yaml", ".yml"):
        if name.endswith(ext):
            return name[: -len(ext)]
    return name or "scenario"


def _safe(label: str) -> str:
    text = label.replace("%", "pct").replace("/", "_")
    text = re.sub(r"[^A-Za-z0-9_.+=-]+", "_", text).strip("._")
    return text or "variant"


def plan_variants(
    sources: Iterable[str | Path | Mapping[str, Any] | Scenario],
    overrides: Iterable[str | Override] | Mapping[str, Any] | None = None,
    *,
    seed: int | None = None,
    labels: Iterable[str] | None = None,
) -> list[Variant]:
    """Validate every variant (sources x alternatives) and label it; nothing runs."""
    sources = list(sources)
    if not sources:
        raise ScenarioError("no scenarios given", expected="one or more scenario files or built-in names")
    ovs = parse_overrides(overrides)
    if seed is not None:
        ovs.append(Override(text=f"seed={seed}", path=("seed",), values=(seed,), labels=(str(seed),)))
    combos = expand_variants(ovs)
    loaded = [scenario_data(s) for s in sources]
    variants: list[Variant] = []
    for source_label, data in loaded:
        for choice, varied in combos:
            scenario = validate_with_overrides(data, ovs, source_label, choice)
            parts = ([_stem(source_label)] if len(sources) > 1 or not varied else []) + varied
            chosen = [f"{ov.dotted}={ov.labels[c]}" for ov, c in zip(ovs, choice, strict=True)]
            variants.append(
                Variant(label="_".join(parts), scenario=scenario, source=source_label, values=varied, overrides=chosen)
            )
    if labels is not None:
        given = list(labels)
        if len(given) != len(variants):
            raise ScenarioError(
                f"{len(given)} labels for {len(variants)} variants", file="--label", expected="one label per variant"
            )
        for v, name in zip(variants, given, strict=True):
            v.label = name
    # Labels name the variants' run directories inside the comparison's: unique, and none
    # may be a file the comparison itself writes (compare.json, report.html, ...).
    from tcplab.results.rundir import COMPARE_ENTRIES

    used: set[str] = set(COMPARE_ENTRIES)
    for v in variants:
        base = _safe(v.label)
        label, n = base, 1
        while label in used:
            n += 1
            label = f"{base}-{n}"
        used.add(label)
        v.label = label
    if len(variants) < 2:
        raise ScenarioError(
            "only one variant to compare",
            expected="two or more scenarios, or a --set with comma-separated values such as flows.0.cc=cubic,bbr",
        )
    return variants


def compare_table(results: Mapping[str, Result]) -> pd.DataFrame:
    """Metrics (rows) x variants (columns)."""
    import pandas as pd

    from tcplab.results.apps import collapsed_flows, headline

    rows: dict[str, dict[str, float]] = {}
    max_flows = max((len(r.flows) - len(collapsed_flows(getattr(r, "apps", {}))) for r in results.values()), default=0)

    def put(metric: str, label: str, value: float) -> None:
        rows.setdefault(metric, {})[label] = value

    # an app's thousands of connections (a broadcast) get no row each: its headline rows below
    listed_of = {
        label: (
            r.flows[~r.flows["name"].isin(list(collapsed_flows(getattr(r, "apps", {}))))] if len(r.flows) else r.flows
        )
        for label, r in results.items()
    }
    # rows named by the flow (``NAME goodput``) when the k-th flow has one name in every
    # variant (the usual case: variants of one scenario), else by position (``flow k``)
    prefixes = []
    for k in range(max_flows):
        names = {str(listed.iloc[k]["name"]) for listed in listed_of.values() if k < len(listed)}
        prefixes.append(f"{names.pop()} " if len(names) == 1 else f"flow {k} ")
    for label, r in results.items():
        f = r.flows
        segs = f["data_segs_out"].sum()
        put("goodput (Mbit/s)", label, float(f["goodput_bps"].sum()) / 1e6)
        put("retrans (%)", label, 100.0 * float(f["retrans_segs"].sum()) / segs if segs else 0.0)
        put("timeouts", label, float(f["timeouts"].sum()))
        put("queue drops", label, float(r.links["drops"].sum()) if len(r.links) else 0.0)
        put("loss drops", label, float(r.links["loss_drops"].sum()) if len(r.links) else 0.0)
        listed = listed_of[label]
        for k in range(max_flows):
            prefix = "" if max_flows == 1 else prefixes[k]
            if k < len(listed):
                row = listed.iloc[k]
                if max_flows > 1:
                    put(f"{prefix}goodput (Mbit/s)", label, float(row["goodput_bps"]) / 1e6)
                put(f"{prefix}RTT p50 (ms)", label, float(row["rtt_p50_ms"]))
                put(f"{prefix}RTT p99 (ms)", label, float(row["rtt_p99_ms"]))
        # each application's headline numbers (rr transactions/s, stalls, timeouts, ...),
        # matched by app name across variants
        for app in getattr(r, "apps", {}).values():
            for h in headline(app):
                if not isinstance(h.value, str):
                    put(f"{app.name}: {h.metric}", label, float("nan") if h.value is None else float(h.value))
    # the datapath around TCP: rows only when some variant has the component
    if any(h["nic"] is not None for r in results.values() for h in r.hosts):
        for label, r in results.items():
            put("NIC ring drops", label, _ring_drops(r))
    # One row per host that has a CPU model in some variant, so a variant that changes one
    # host's share is read on that host's row (a host always on its CPU has no steal: 0).
    cpu_hosts = list(dict.fromkeys(h["name"] for r in results.values() for h in r.hosts if h["cpu"] is not None))
    for name in cpu_hosts:
        for label, r in results.items():
            host = next((h for h in r.hosts if h["name"] == name), None)
            if host is not None:
                steal = host["cpu"]["steal_ratio"] if host["cpu"] is not None else 0.0
                put(f"CPU steal, host {name} (%)", label, 100.0 * steal)
    table = pd.DataFrame(rows).T
    table = table.reindex(columns=list(results))
    table.index.name = "metric"
    return table


def _ring_drops(r: Result) -> float:
    """Receive-ring drops over the run, summed over hosts (the last cumulative sample)."""
    hs = r.host_series
    if hs.empty:
        return 0.0
    last = hs.sort_values("t_ns").groupby("host")["rx_dropped"].last()
    return float(last.sum())


class CompareResult:
    """The runs of a comparison, their table and a writer for the comparison directory.

    ``results`` holds the variants that ran; ``failures`` those that did not (label ->
    :class:`VariantFailure`). The table has a column for every variant, in plan order; a
    failed variant's column is empty (NaN).
    """

    def __init__(
        self,
        variants: list[Variant],
        results: dict[str, Result],
        failures: Mapping[str, VariantFailure] | None = None,
    ):
        self.variants = variants
        self.results = results
        self.failures = dict(failures or {})
        table = compare_table(results)
        self.table = table.reindex(columns=[v.label for v in variants])

    @property
    def ok(self) -> bool:
        """True when every variant ran."""
        return not self.failures

    def to_json(self) -> dict[str, Any]:
        def clean(x: Any) -> Any:
            return None if isinstance(x, float) and not math.isfinite(x) else x

        split = self.table.to_dict(orient="split")
        variants = []
        for v in self.variants:
            failure = self.failures.get(v.label)
            variants.append(
                {
                    "label": v.label,
                    "source": v.source,
                    "values": v.values,
                    "overrides": v.overrides,
                    "status": "failed" if failure else "ok",
                    "error": failure.reason if failure else None,
                    "dir": None if failure else v.label,
                    "summary": None if failure else self.results[v.label].summary,
                }
            )
        return {
            "variants": variants,
            "table": {
                "index": list(split["index"]),
                "columns": list(split["columns"]),
                "data": [[clean(x) for x in row] for row in split["data"]],
            },
        }

    def write(self, directory: str | Path, *, overwrite: bool = False, plots: bool = True) -> Path:
        """DIR/report.html, DIR/compare.json, DIR/compare.png and one run directory per
        variant that ran, atomically. Failed variants get no directory; compare.json and the
        report say why they failed."""
        from tcplab.results.rundir import write_dir_atomically, write_marker

        if not self.results:
            raise ValueError("no variant ran; there is nothing to write")

        def fill(tmp: Path) -> None:
            write_marker(tmp, "compare")
            for v in self.variants:
                if v.label not in self.results:
                    continue
                sub = tmp / v.label
                sub.mkdir()
                self.results[v.label].write_files(sub, plots=plots)
            (tmp / "compare.json").write_text(
                json.dumps(self.to_json(), indent=2, allow_nan=False) + "\n", encoding="utf-8"
            )
            from tcplab.views.report import write_compare_report

            first = next(iter(self.results.values()))
            description = first.scenario.description or ""
            if self.failures:
                failed = "; ".join(f"{f.label}: {f.reason}" for f in self.failures.values())
                description = f"{description} Failed variants (no results): {failed}".strip()
            write_compare_report(
                tmp,
                self.results,
                self.table,
                [v.label for v in self.variants if v.label in self.results],
                f"{first.scenario.name}: {' vs '.join(v.label for v in self.variants)}",
                description,
                plots=plots,
            )

        return write_dir_atomically(directory, fill, overwrite=overwrite)


#: What a worker needs to run one variant: scenario, label, engine (None: the compiled
#: one), whether to draw a progress bar, the variant's overrides and the command line (for
#: provenance).
Job = tuple[Scenario, str, "Core | None", "bool | None", list[str], "list[str] | None"]


def _run_variant(job: Job) -> Result:
    """One variant (a top-level function so a process pool can pickle it)."""
    from tcplab.progress import SimProgress
    from tcplab.runner import run

    scenario, label, core, progress, overrides, command = job
    with SimProgress(label, enabled=None if progress else False) as reporter:
        return run(scenario, core=core, progress=reporter, applied_overrides=overrides, command=command)


def run_variant_or_failure(job: Job) -> Result | VariantFailure:
    """:func:`_run_variant`, with an engine error turned into this variant's failure."""
    try:
        return _run_variant(job)
    except EngineError as e:
        return VariantFailure(job[1], f"engine: {e}")


def default_jobs(n_variants: int) -> int:
    """Processes to use for ``n_variants`` runs: one per variant, at most one per core."""
    return max(1, min(n_variants, os.cpu_count() or 1))


def run_in_processes(
    work: list[Job], jobs: int, on_done: Callable[[str, Result | VariantFailure], None] | None = None
) -> dict[str, Result | VariantFailure]:
    """Each job in its own worker process, at most ``jobs`` at a time; results in job order.
    ``on_done(label, outcome)`` is called in the parent as each job finishes (progress).
    The process machinery (fork, die-with-parent, signals, a dead worker failing only its
    job) is :mod:`tcplab.procpool`'s, shared with ``tcplab sweep``."""
    from tcplab.procpool import WorkerFailure, map_in_processes

    outcomes: dict[str, Result | VariantFailure] = {}
    for i, outcome in map_in_processes(work, run_variant_or_failure, jobs, name=lambda i: f"tcplab-{work[i][1]}"):
        label = work[i][1]
        if isinstance(outcome, WorkerFailure):
            outcome = VariantFailure(label, outcome.reason)
        outcomes[label] = outcome
        if on_done is not None:
            on_done(label, outcome)
    return {job[1]: outcomes[job[1]] for job in work}


def run_variants(
    variants: list[Variant],
    *,
    core: Core | None = None,
    progress: bool = False,
    map_fn: Callable[..., Iterable[Result]] | None = None,
    jobs: int = 1,
    isolate: bool = False,
    command: list[str] | None = None,
    on_done: Callable[[int, str, str | None], None] | None = None,
) -> CompareResult:
    """Run planned variants (see :func:`plan_variants`) and tabulate them.

    With ``jobs > 1`` the variants run in that many worker processes at a time (each
    simulation is single-threaded and independent; results are identical to a sequential
    run, since every run is deterministic). ``isolate=True`` uses worker processes even for
    ``jobs == 1``, so that a worker dying fails only its variant (the CLI does this).
    Progress bars are shown only when one variant runs at a time.

    A variant that fails (an engine error, a worker that dies) is reported in
    ``.failures``; the others are in ``.results``. ``command`` (the command line) is recorded
    in each variant's metadata.json. ``on_done(done, label, failure)`` is called as each
    variant finishes (``done`` counts the finished ones; ``failure`` is None or the one-line
    reason): the CLI's progress lines.
    """
    labels = [v.label for v in variants]
    finished = 0

    def report(label: str, outcome: Result | VariantFailure) -> None:
        nonlocal finished
        finished += 1
        if on_done is not None:
            on_done(finished, label, outcome.reason if isinstance(outcome, VariantFailure) else None)

    use_processes = map_fn is None and (isolate or (jobs > 1 and len(variants) > 1))
    if use_processes and core is not None and "fork" not in multiprocessing.get_all_start_methods():
        use_processes = False  # an engine module passed in does not cross a spawn
    if use_processes:
        n = max(1, min(jobs, len(variants)))
        work = [(v.scenario, v.label, core, progress and n == 1, v.overrides, command) for v in variants]
        outcomes = run_in_processes(work, n, report)
    else:
        work = [(v.scenario, v.label, core, progress, v.overrides, command) for v in variants]
        outcomes = {}
        for label, outcome in zip(labels, (map_fn or map)(run_variant_or_failure, work), strict=True):
            outcomes[label] = outcome
            report(label, outcome)
    results = {label: o for label, o in outcomes.items() if not isinstance(o, VariantFailure)}
    failures = {label: o for label, o in outcomes.items() if isinstance(o, VariantFailure)}
    return CompareResult(variants, results, failures)


def compare(
    sources: Iterable[str | Path | Mapping[str, Any] | Scenario],
    overrides: Iterable[str | Override] | Mapping[str, Any] | None = None,
    *,
    seed: int | None = None,
    labels: Iterable[str] | None = None,
    progress: bool = False,
    core: Core | None = None,
    map_fn: Callable[..., Iterable[Result]] | None = None,
    jobs: int = 1,
) -> CompareResult:
    """Plan, validate and run every variant, and tabulate them (``.table``).

    ``jobs`` > 1 runs the variants in that many processes (``core`` must then be ``None``:
    modules do not cross processes); ``map_fn`` overrides how jobs are run (e.g. a Dask
    client's map).
    """
    variants = plan_variants(sources, overrides, seed=seed, labels=labels)
    return run_variants(variants, core=core, progress=progress, map_fn=map_fn, jobs=jobs)


class _CallableModule(types.ModuleType):
    """``tcplab.compare(...)`` calls :func:`compare`: the module and the function share a name
    (as ``tcplab.sweep``), and importing this module binds ``tcplab.compare`` to it, so the
    module itself is callable."""

    def __call__(self, *args: Any, **kwargs: Any) -> CompareResult:
        return compare(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

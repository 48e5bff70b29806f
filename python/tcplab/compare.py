"""Side-by-side runs: several scenarios, or one scenario with ``--set`` alternatives.

The model: a comparison is a list of *variants*, each a fully validated scenario with a
label. Variants come from

* several scenario files (labelled by file stem or built-in name), and/or
* ``--set PATH=V1,V2,...`` overrides with alternatives (labelled by the chosen values);
  several such overrides give the cartesian product, in the order given.

Every variant is validated before any is run, so a typo in the last one costs nothing. Runs
are independent; they go through ``map`` (sequential by default), so an
``concurrent.futures.Executor``'s ``map`` can be passed to run them in parallel.

The table has one row per metric and one column per variant: total goodput (Mbit/s),
retransmitted segments (% of segments sent), RTOs, queue drops (tail drops in queues),
loss drops (packets the links' loss models dropped), and RTT p50/p99 (ms) per
flow (flows matched by position).
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import re
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tcplab.errors import ScenarioError
from tcplab.loader import scenario_data, validate_with_overrides
from tcplab.overrides import Override, expand_variants, parse_overrides
from tcplab.scenario import Scenario

if TYPE_CHECKING:  # pandas, NumPy and pyarrow load on first use: `import tcplab` stays quick
    import pandas as pd

    from tcplab.engine import Core
    from tcplab.results import Result

__all__ = ["Variant", "CompareResult", "plan_variants", "run_variants", "compare", "compare_table"]


@dataclass
class Variant:
    """One column of a comparison."""

    label: str
    scenario: Scenario
    source: str
    values: list[str] = field(default_factory=list)
    overrides: list[str] = field(default_factory=list)


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
    seen: dict[str, int] = {}
    for v in variants:
        base = _safe(v.label)
        n = seen.get(base, 0) + 1
        seen[base] = n
        v.label = base if n == 1 else f"{base}-{n}"
    if len(variants) < 2:
        raise ScenarioError(
            "only one variant to compare",
            expected="two or more scenarios, or a --set with comma-separated values such as flows.0.cc=cubic,bbr",
        )
    return variants


def compare_table(results: Mapping[str, Result]) -> pd.DataFrame:
    """Metrics (rows) x variants (columns)."""
    import pandas as pd

    rows: dict[str, dict[str, float]] = {}
    max_flows = max((len(r.flows) for r in results.values()), default=0)

    def put(metric: str, label: str, value: float) -> None:
        rows.setdefault(metric, {})[label] = value

    for label, r in results.items():
        f = r.flows
        segs = f["data_segs_out"].sum()
        put("goodput (Mbit/s)", label, float(f["goodput_bps"].sum()) / 1e6)
        put("retrans (%)", label, 100.0 * float(f["retrans_segs"].sum()) / segs if segs else 0.0)
        put("timeouts", label, float(f["timeouts"].sum()))
        put("queue drops", label, float(r.links["drops"].sum()) if len(r.links) else 0.0)
        put("loss drops", label, float(r.links["loss_drops"].sum()) if len(r.links) else 0.0)
        for k in range(max_flows):
            prefix = "" if max_flows == 1 else f"flow {k} "
            if k < len(f):
                row = f.iloc[k]
                if max_flows > 1:
                    put(f"{prefix}goodput (Mbit/s)", label, float(row["goodput_bps"]) / 1e6)
                put(f"{prefix}RTT p50 (ms)", label, float(row["rtt_p50_ms"]))
                put(f"{prefix}RTT p99 (ms)", label, float(row["rtt_p99_ms"]))
    table = pd.DataFrame(rows).T
    table = table.reindex(columns=list(results))
    table.index.name = "metric"
    return table


class CompareResult:
    """The runs of a comparison, their table and a writer for the comparison directory."""

    def __init__(self, variants: list[Variant], results: dict[str, Result]):
        self.variants = variants
        self.results = results
        self.table = compare_table(results)

    def to_json(self) -> dict[str, Any]:
        def clean(x: Any) -> Any:
            return None if isinstance(x, float) and not math.isfinite(x) else x

        split = self.table.to_dict(orient="split")
        return {
            "variants": [
                {
                    "label": v.label,
                    "source": v.source,
                    "values": v.values,
                    "overrides": v.overrides,
                    "dir": v.label,
                    "summary": self.results[v.label].summary,
                }
                for v in self.variants
            ],
            "table": {
                "index": list(split["index"]),
                "columns": list(split["columns"]),
                "data": [[clean(x) for x in row] for row in split["data"]],
            },
        }

    def write(self, directory: str | Path, *, overwrite: bool = False, plots: bool = True) -> Path:
        """DIR/report.html, DIR/compare.json, DIR/compare.png and one run directory per variant, atomically."""
        from tcplab.results.rundir import write_dir_atomically

        def fill(tmp: Path) -> None:
            for v in self.variants:
                sub = tmp / v.label
                sub.mkdir()
                self.results[v.label]._write_files(sub, plots=plots)
            (tmp / "compare.json").write_text(
                json.dumps(self.to_json(), indent=2, allow_nan=False) + "\n", encoding="utf-8"
            )
            from tcplab.views.report import write_compare_report

            first = next(iter(self.results.values()))
            write_compare_report(
                tmp,
                self.results,
                self.table,
                [v.label for v in self.variants],
                f"{first.scenario.name}: {' vs '.join(self.results)}",
                first.scenario.description or "",
                plots=plots,
            )

        return write_dir_atomically(directory, fill, overwrite=overwrite)


def _run_variant(job: tuple[Scenario, str, Core | None, bool | None]) -> Result:
    """One variant (a top-level function so a process pool can pickle it)."""
    from tcplab.progress import SimProgress
    from tcplab.runner import run

    scenario, label, core, progress = job
    with SimProgress(label, enabled=None if progress else False) as reporter:
        return run(scenario, core=core, progress=reporter)


def default_jobs(n_variants: int) -> int:
    """Processes to use for ``n_variants`` runs: one per variant, at most one per core."""
    return max(1, min(n_variants, os.cpu_count() or 1))


def run_variants(
    variants: list[Variant],
    *,
    core: Core | None = None,
    progress: bool = False,
    map_fn: Callable[..., Iterable[Result]] | None = None,
    jobs: int = 1,
) -> CompareResult:
    """Run planned variants (see :func:`plan_variants`) and tabulate them.

    With ``jobs > 1`` the variants run in a pool of that many processes (each simulation
    is single-threaded and independent; results are identical to a sequential run, since
    every run is deterministic). Progress bars are shown only for sequential runs.
    """
    labels = [v.label for v in variants]
    if map_fn is None and jobs > 1 and len(variants) > 1 and core is None:
        work = [(v.scenario, v.label, None, False) for v in variants]
        # fork where the platform has it: workers inherit the imported modules (no
        # re-import of pandas/matplotlib per worker) and callers need no `__main__` guard;
        # no threads are running here. Elsewhere, spawn.
        methods = multiprocessing.get_all_start_methods()
        ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
        with ProcessPoolExecutor(max_workers=min(jobs, len(variants)), mp_context=ctx) as pool:
            results = dict(zip(labels, pool.map(_run_variant, work), strict=True))
    else:
        work = [(v.scenario, v.label, core, progress) for v in variants]
        results = dict(zip(labels, (map_fn or map)(_run_variant, work), strict=True))
    return CompareResult(variants, results)


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

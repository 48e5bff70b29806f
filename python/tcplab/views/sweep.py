"""A sweep's views: plots that fit a sweep, and one self-contained report.html.

The model: the views read only the sweep's table (:mod:`tcplab.sweep.rows`), plan (the
content of sweep.json) and failure records, as data, so ``tcplab.load_sweep(DIR)`` can
redraw them; this module imports nothing of :mod:`tcplab.sweep` (the sweep calls it). Each
run (point x seed) is reduced to four numbers (:func:`run_metrics`):

* goodput (Mbit/s): ``run.goodput_bps``, the sum over the run's flows;
* p99 RTT (ms): ``run.rtt_p99_ms``, the largest flow p99;
* retransmissions (%): retransmitted over sent data segments, summed over the run's flows
  (as ``TcpRetransSegs / TcpOutSegs`` reads on a host);
* RTOs: ``nstat.TcpExtTCPTimeouts`` summed over hosts (the flows' ``timeouts`` when the
  counter is absent).

Then, over the seeds of each point: the mean (the line, the heatmap cell), and the range
min..max (the band), with every seed's run drawn as a dot, so the spread is visible:

* one parameter: ``plots/metrics.png``, each metric against the parameter (its number,
  ``PATH#value``, when its values are numbers with one unit; else its labels in plan order);
* two grid parameters: ``plots/heatmap-METRIC.png`` per metric (seed means; rows the first
  parameter, columns the second) and ``plots/metrics.png``, each metric against the second
  parameter, one line per value of the first;
* two parameters of which one is sampled (``--random``: no grid to fill), or three and
  more: ``plots/PATH.png`` per parameter, each metric against it (mean, band over seeds and
  the other parameters); with two numeric parameters also ``plots/scatter-METRIC.png``,
  the points coloured by the metric's seed mean;
* no parameter (a sweep of seeds): ``plots/seeds.png``, each metric per seed.

Failed runs are left out of the plots and listed in the report. The report is a jinja2
template with autoescape, as the other views' pages: the scenario's path, overrides,
parameter values and failure messages are the user's text. Figures use matplotlib's
object API on the Agg canvas and are saved without a software stamp (same data, same bytes).

Drawing: a sweep of two grid parameters has five figures, ~0.1 s of CPU each, drawn after
the last run, when the sweep's own worker processes have ended and the cores are idle.
With ``jobs`` > 1 they are drawn in that many forked processes (:mod:`tcplab.procpool`),
balanced by their number of axes; the PNG bytes are the same whichever process draws them.
A process that fails has its figures drawn again in the caller, so an error in a figure
surfaces as it would in one process.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["write_sweep_views", "sweep_plots", "run_metrics", "METRICS", "SweepPlot"]

#: (column of :func:`run_metrics`, axis label, file stem)
METRICS = (
    ("goodput_mbps", "goodput (Mbit/s)", "goodput"),
    ("rtt_p99_ms", "p99 RTT (ms)", "rtt-p99"),
    ("retrans_pct", "retransmissions (%)", "retrans"),
    ("rtos", "RTOs (TcpExtTCPTimeouts)", "rtos"),
)
_SAVE = {"dpi": 100, "metadata": {"Software": None}}


@dataclass(frozen=True)
class _FigureSpec:
    """A figure to draw: ``draw(*args)`` returns its PNG bytes; ``axes`` weighs its cost."""

    name: str
    caption: str
    draw: Any
    args: tuple[Any, ...]
    axes: int

    def render(self) -> SweepPlot:
        return SweepPlot(self.name, self.caption, self.draw(*self.args))


def _render_group(specs: Sequence[_FigureSpec]) -> list[bytes]:
    """Body of a drawing process: the PNG bytes of each figure of ``specs``, in order."""
    return [spec.render().png for spec in specs]


def _groups(specs: Sequence[_FigureSpec], n: int) -> list[list[int]]:
    """``specs``' indices split into ``n`` groups of about equal cost (the most axes first,
    each to the group with the fewest so far; ties by index: deterministic)."""
    groups: list[list[int]] = [[] for _ in range(n)]
    load = [0] * n
    for i in sorted(range(len(specs)), key=lambda i: (-specs[i].axes, i)):
        g = min(range(n), key=lambda g: (load[g], g))
        groups[g].append(i)
        load[g] += specs[i].axes
    return [sorted(g) for g in groups if g]


def _render(specs: Sequence[_FigureSpec], jobs: int) -> list[SweepPlot]:
    """Every figure of ``specs``, in order: in up to ``jobs`` forked processes (module doc)."""
    jobs = min(max(1, int(jobs)), len(specs))
    if jobs <= 1:
        return [spec.render() for spec in specs]
    # imported here, once: the drawing processes inherit matplotlib instead of each importing it
    import matplotlib.backends.backend_agg  # noqa: F401
    import matplotlib.figure  # noqa: F401

    from tcplab.procpool import WorkerFailure, map_in_processes

    groups = _groups(specs, jobs)
    pngs: dict[int, bytes] = {}
    for g, outcome in map_in_processes(
        [[specs[i] for i in group] for group in groups], _render_group, len(groups), name=lambda g: "tcplab-sweep-plots"
    ):
        if isinstance(outcome, WorkerFailure):  # draw them here: a figure's error surfaces as it is
            outcome = _render_group([specs[i] for i in groups[g]])
        pngs.update(zip(groups[g], outcome, strict=True))
    return [SweepPlot(spec.name, spec.caption, pngs[i]) for i, spec in enumerate(specs)]


@dataclass
class SweepPlot:
    """One figure: its file name under plots/, caption and PNG bytes."""

    name: str
    caption: str
    png: bytes


def run_metrics(table: pd.DataFrame, parameters: Sequence[str]) -> pd.DataFrame:
    """One row per completed run (point, seed): the parameters and the four metrics."""
    import numpy as np
    import pandas as pd

    ok = table[table["status"] == "ok"]
    if ok.empty:
        return pd.DataFrame(columns=["point", "seed", *parameters, *(m for m, _, _ in METRICS)])
    value_cols = [f"{p}#value" for p in parameters if f"{p}#value" in table.columns]
    keys = ["point", "seed"]
    first = ok.groupby(keys, sort=True)[[*parameters, *value_cols, "run.goodput_bps", "run.rtt_p99_ms"]].first()
    sums = ok.groupby(keys, sort=True)[["retrans_segs", "data_segs_out", "timeouts"]].sum(min_count=1)
    out = first.join(sums)
    out["goodput_mbps"] = out["run.goodput_bps"] / 1e6
    out["rtt_p99_ms"] = out["run.rtt_p99_ms"]
    with np.errstate(divide="ignore", invalid="ignore"):
        out["retrans_pct"] = np.where(
            out["data_segs_out"] > 0, 100.0 * out["retrans_segs"] / out["data_segs_out"], np.nan
        )
    if "nstat.TcpExtTCPTimeouts" in ok.columns:
        out["rtos"] = ok.groupby(keys, sort=True)["nstat.TcpExtTCPTimeouts"].first()
    else:
        out["rtos"] = out["timeouts"]
    return out.reset_index()


def _figure(rows: int, cols: int, width: float = 11.0, height: float = 3.6) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height * rows), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, squeeze=False)
    return fig, axes


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", **_SAVE)
    return buf.getvalue()


def _x_of(runs: pd.DataFrame, path: str, labels: Sequence[str]) -> tuple[dict[str, float], bool]:
    """Position of each label on x: its number (``PATH#value``) or its rank in plan order."""
    col = f"{path}#value"
    if col in runs.columns:
        pairs = runs[[path, col]].drop_duplicates()
        return dict(zip(pairs[path], pairs[col].astype(float), strict=True)), True
    return {label: float(i) for i, label in enumerate(labels)}, False


def _line_band(ax: Any, runs: pd.DataFrame, path: str, x_of: dict[str, float], metric: str, **style: Any) -> None:
    """Seed mean as a line, min..max as a band, each run as a dot, against ``path``."""
    import numpy as np

    per_x: dict[float, list[float]] = {}
    for label, value in zip(runs[path], runs[metric], strict=True):
        if value == value:  # not NaN
            per_x.setdefault(x_of[label], []).append(float(value))
    if not per_x:
        return
    xs = np.array(sorted(per_x))
    mean = np.array([np.mean(per_x[x]) for x in xs])
    lo = np.array([min(per_x[x]) for x in xs])
    hi = np.array([max(per_x[x]) for x in xs])
    (line,) = ax.plot(xs, mean, marker="o", markersize=4, **style)
    ax.fill_between(xs, lo, hi, alpha=0.2, color=line.get_color(), linewidth=0)
    dots_x = [x for x in xs for _ in per_x[x]]
    dots_y = [v for x in xs for v in per_x[x]]
    ax.plot(dots_x, dots_y, linestyle="none", marker=".", markersize=3, color=line.get_color(), alpha=0.6)


def _labels_axis(ax: Any, path: str, x_of: dict[str, float], numeric: bool, unit: str) -> None:
    if numeric:
        ax.set_xlabel(f"{path} ({unit})" if unit else path)
    else:
        ticks = sorted(x_of.items(), key=lambda kv: kv[1])
        ax.set_xticks([x for _, x in ticks], [label for label, _ in ticks], rotation=30 if len(ticks) > 6 else 0)
        ax.set_xlabel(path)


def _unit(labels: Sequence[str]) -> str:
    from tcplab.literals import number_and_unit

    parsed = number_and_unit(labels[0]) if labels else None
    return parsed[1] if parsed else ""


def _metric_grid(
    runs: pd.DataFrame,
    path: str,
    labels: Sequence[str],
    title: str,
    group: str | None = None,
    group_labels: Sequence[str] = (),
) -> bytes:
    return _png(metric_grid_figure(runs, path, labels, title, group, group_labels))


def metric_grid_figure(
    runs: pd.DataFrame,
    path: str,
    labels: Sequence[str],
    title: str,
    group: str | None = None,
    group_labels: Sequence[str] = (),
) -> Any:
    """Each metric against ``path``; one line per value of ``group`` (in its plan order's
    colour, :mod:`tcplab.views.colors`, as recommend draws the same setting)."""
    from tcplab.views.colors import variant_colors

    colors = variant_colors((g,) for g in group_labels)
    fig, axes = _figure(2, 2, height=3.4)
    x_of, numeric = _x_of(runs, path, labels)
    unit = _unit(labels)
    for ax, (metric, ylabel, _) in zip(axes.flat, METRICS, strict=True):
        if group is None:
            _line_band(ax, runs, path, x_of, metric)
        else:
            for g in group_labels:
                _line_band(ax, runs[runs[group] == g], path, x_of, metric, label=f"{group}={g}", color=colors[(g,)])
        _labels_axis(ax, path, x_of, numeric, unit)
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        ax.set_ylim(bottom=0)
    if group is not None:
        axes[0][0].legend(fontsize="small", loc="best")
    fig.suptitle(title)
    return fig


def _heatmap(
    runs: pd.DataFrame,
    rows_p: str,
    rows_l: Sequence[str],
    cols_p: str,
    cols_l: Sequence[str],
    metric: str,
    label: str,
    title: str,
) -> bytes:
    import numpy as np

    means = runs.groupby([rows_p, cols_p])[metric].mean()
    grid = np.full((len(rows_l), len(cols_l)), np.nan)
    for i, r in enumerate(rows_l):
        for j, c in enumerate(cols_l):
            if (r, c) in means.index:
                grid[i, j] = means.loc[(r, c)]
    width = min(14.0, 3.0 + 0.9 * len(cols_l))
    height = min(10.0, 1.8 + 0.5 * len(rows_l))
    fig, axes = _figure(1, 1, width=width, height=height)
    ax = axes[0][0]
    finite = grid[np.isfinite(grid)]
    # every cell equal (no RTOs anywhere): a scale from 0, not matplotlib's v-0.1..v+0.1
    # around it, which shows negative counts
    flat = finite.size and finite.min() == finite.max()
    scale = {"vmin": min(0.0, finite.min()), "vmax": max(1.0, 2 * finite.max())} if flat else {}
    image = ax.imshow(np.ma.masked_invalid(grid), aspect="auto", cmap="viridis", origin="lower", **scale)
    ax.set_xticks(range(len(cols_l)), list(cols_l), rotation=30 if len(cols_l) > 6 else 0)
    ax.set_yticks(range(len(rows_l)), list(rows_l))
    ax.set_xlabel(cols_p)
    ax.set_ylabel(rows_p)
    fig.colorbar(image, ax=ax, label="mean over seeds")  # the title names the metric: a short label fits
    if len(rows_l) * len(cols_l) <= 100 and finite.size:
        for i in range(len(rows_l)):
            for j in range(len(cols_l)):
                v = grid[i, j]
                if math.isfinite(v):
                    ax.text(
                        j,
                        i,
                        _sig3(v),
                        ha="center",
                        va="center",
                        fontsize="small",
                        color="white" if image.norm(v) < 0.5 else "black",  # viridis: dark below half
                    )
    ax.set_title(title)
    return _png(fig)


def _scatter(runs: pd.DataFrame, a: str, b: str, metric: str, label: str, title: str) -> bytes:
    """The sampled points at (b, a), coloured by the metric's mean over seeds."""
    means = runs.groupby("point").agg(x=(f"{b}#value", "first"), y=(f"{a}#value", "first"), v=(metric, "mean"))
    fig, axes = _figure(1, 1, width=8.0, height=5.5)
    ax = axes[0][0]
    points = ax.scatter(means["x"], means["y"], c=means["v"], cmap="viridis", s=60, edgecolors="black", linewidths=0.5)
    fig.colorbar(points, ax=ax, label=f"{label}, mean over seeds")
    ax.set_xlabel(f"{b} ({_unit(list(runs[b]))})" if _unit(list(runs[b])) else b)
    ax.set_ylabel(f"{a} ({_unit(list(runs[a]))})" if _unit(list(runs[a])) else a)
    ax.grid(True, alpha=0.3)
    ax.set_title(title)
    return _png(fig)


def _sig3(x: float) -> str:
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    digits = max(0, 2 - int(math.floor(math.log10(abs(x)))))
    return f"{x:.{digits}f}"


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("._") or "parameter"


def sweep_plots(table: pd.DataFrame, plan: dict[str, Any], jobs: int = 1) -> list[SweepPlot]:
    """The sweep's figures (module doc), drawn in up to ``jobs`` processes; none when no
    run completed."""
    return _render(_figure_specs(table, plan), jobs)


def _figure_specs(table: pd.DataFrame, plan: dict[str, Any]) -> list[_FigureSpec]:
    """What :func:`sweep_plots` draws, not yet drawn."""
    params = plan.get("parameters") or []
    paths = [p["path"] for p in params]
    runs = run_metrics(table, paths)
    if runs.empty:
        return []
    name = (plan.get("scenario") or {}).get("name") or "sweep"
    seeds = len(plan.get("seeds") or [])
    band = f"line: mean over {seeds} seed{'s' if seeds != 1 else ''}; band: min..max; dots: runs"
    labels = {p["path"]: list(dict.fromkeys(p["values"])) for p in params}
    plots: list[_FigureSpec] = []
    if not paths:
        runs = runs.assign(seed_label=runs["seed"].astype(str))
        args = (runs, "seed_label", list(dict.fromkeys(runs["seed_label"])), f"{name}: per seed")
        plots.append(_FigureSpec("seeds.png", "each metric per seed", _metric_grid, args, 4))
    elif len(paths) == 1:
        p = paths[0]
        args = (runs, p, labels[p], f"{name}: metrics against {p} ({band})")
        plots.append(_FigureSpec("metrics.png", f"each metric against {p}; {band}", _metric_grid, args, 4))
    elif len(paths) == 2 and all(p["kind"] == "grid" for p in params):
        a, b = paths
        for metric, label, stem in METRICS:
            args = (runs, a, labels[a], b, labels[b], metric, label, f"{name}: {label}")
            caption = f"{label}: mean over seeds, {a} x {b}"
            plots.append(_FigureSpec(f"heatmap-{stem}.png", caption, _heatmap, args, 2))
        args = (runs, b, labels[b], f"{name}: metrics against {b}, one line per {a} ({band})", a, labels[a])
        caption = f"each metric against {b}, one line per {a}; {band}"
        plots.append(_FigureSpec("metrics.png", caption, _metric_grid, args, 4))
    else:
        # sampled points (no grid to fill a heatmap) or three parameters and more: each
        # metric against each parameter, and for two numeric ones a scatter of the points
        numeric = [p for p in paths if f"{p}#value" in runs.columns]
        if len(paths) == 2 and len(numeric) == 2:
            a, b = paths
            for metric, label, stem in METRICS:
                args = (runs, a, b, metric, label, f"{name}: {label} (mean over {seeds} seeds)")
                caption = f"{label}: mean over seeds at each point, {a} x {b}"
                plots.append(_FigureSpec(f"scatter-{stem}.png", caption, _scatter, args, 2))
        for p in paths:
            title = f"{name}: metrics against {p} (mean and min..max over seeds and the other parameters)"
            args = (runs, p, labels[p], title)
            caption = f"each metric against {p}, over the other parameters"
            plots.append(_FigureSpec(f"{_safe(p)}.png", caption, _metric_grid, args, 4))
    return plots


_STYLE = (
    "body{font-family:sans-serif;max-width:1200px;margin:1em auto;padding:0 1em}"
    "table{border-collapse:collapse;margin:0.5em 0}td,th{border:1px solid #ccc;padding:2px 8px;"
    "text-align:right}th{background:#f3f3f3}td.l,th.l{text-align:left}img{max-width:100%}"
    ".failed{color:#b00}"
)

#: The report page. Every value is escaped by jinja2's autoescape, as in the other views:
#: scenario paths, overrides, parameter values and failure messages are the user's text.
_TEMPLATE = """<!doctype html><html><head><meta charset='utf-8'>
<title>tcplab sweep: {{ name }}</title>
<style>{{ style }}</style></head><body>
<h1>tcplab sweep: {{ name }}</h1>
<p>Scenario {{ source }}; base overrides: {{ base_overrides }}; seeds {{ seeds }}; engine {{ engine }}. \
{{ counts.runs }} runs: {{ counts.done }} ok, {{ counts.failed }} failed.</p>
<h2>Parameters</h2><table><tr><th class='l'>path</th><th class='l'>kind</th><th class='l'>values</th></tr>
{% for p in parameters %}
<tr><td class='l'>{{ p.path }}</td><td class='l'>{{ p.kind }}</td><td class='l'>{{ p.labels }}</td></tr>
{% endfor %}
</table>
<h2>Points (mean over the seeds that ran)</h2><table><tr><th>point</th>
{% for path in paths %}
<th class='l'>{{ path }}</th>
{% endfor %}
{% for label in metric_labels %}
<th>{{ label }}</th>
{% endfor %}
<th>runs ok</th></tr>
{% for row in points %}
<tr><td>{{ row.point }}</td>{% for v in row.labels %}<td class='l'>{{ v }}</td>{% endfor %}\
{% for v in row.metrics %}<td>{{ v }}</td>{% endfor %}\
<td{% if row.short %} class='failed'{% endif %}>{{ row.ok }}/{{ row.total }}</td></tr>
{% endfor %}
</table>
{% if failures %}
<h2 class='failed'>Failed runs</h2><table><tr><th class='l'>run</th><th class='l'>overrides</th>\
<th class='l'>error</th></tr>
{% for f in failures %}
<tr><td class='l'>{{ f.key }}</td><td class='l'>{{ f.overrides }}</td><td class='l'>{{ f.error }}</td></tr>
{% endfor %}
</table>
{% endif %}
<h2>Plots</h2>
{% for f in figures %}
<figure><img src='{{ f.uri }}' alt='{{ f.caption }}'><figcaption>{{ f.caption }}</figcaption></figure>
{% else %}
<p>No run completed: nothing to plot.</p>
{% endfor %}
<p>The table: sweep.parquet (one row per run and flow); <code>tcplab.load_sweep(DIR).table</code> reads it.</p>\
</body></html>
"""


def _points(table: pd.DataFrame, paths: Sequence[str]) -> list[dict[str, Any]]:
    """One row per point: its labels, each metric's mean over the seeds that ran, runs ok."""
    runs = run_metrics(table, paths)
    rows = []
    for point, group in table.groupby("point", sort=True):
        first = group.iloc[0]
        mine = runs[runs["point"] == point]
        ok = int(group.drop_duplicates(["seed"])["status"].eq("ok").sum())
        total = int(group["seed"].nunique())
        means = [float(mine[metric].mean()) if len(mine) else float("nan") for metric, _, _ in METRICS]
        rows.append(
            {
                "point": int(point),
                "labels": [str(first[p]) for p in paths],
                "metrics": [_sig3(v) if math.isfinite(v) else "-" for v in means],
                "ok": ok,
                "total": total,
                "short": ok < total,
            }
        )
    return rows


def _report(
    table: pd.DataFrame, plan: dict[str, Any], failures: Mapping[str, dict[str, Any]], plots: Sequence[SweepPlot]
) -> str:
    """report.html: the plan, the parameters, a row per point, the failed runs and the plots."""
    import jinja2

    from tcplab.views.report import data_uri

    params = plan.get("parameters") or []
    paths = [p["path"] for p in params]
    sc = plan.get("scenario") or {}
    counts = plan.get("counts") or {}
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    return env.from_string(_TEMPLATE).render(
        style=_STYLE,
        name=str(sc.get("name")),
        source=str(sc.get("source")),
        base_overrides=", ".join(plan.get("base_overrides") or []) or "none",
        seeds=str(plan.get("seeds")),
        engine=str((plan.get("versions") or {}).get("engine")),
        counts={k: counts.get(k, "?") for k in ("runs", "done", "failed")},
        parameters=[
            {
                "path": p["path"],
                "kind": p["kind"] + (f" {p['range'][0]}..{p['range'][1]}" if p.get("range") else ""),
                "labels": ", ".join(dict.fromkeys(p["values"])),
            }
            for p in params
        ],
        paths=paths,
        metric_labels=[label for _, label, _ in METRICS],
        points=_points(table, paths),
        failures=[
            {"key": key, "overrides": ", ".join(rec.get("overrides") or []), "error": str(rec.get("error"))}
            for key, rec in sorted(failures.items())
        ],
        figures=[{"uri": data_uri(p.png), "caption": p.caption} for p in plots],
    )


def write_sweep_views(
    table: pd.DataFrame,
    plan: dict[str, Any],
    failures: Mapping[str, dict[str, Any]],
    out: Path,
    jobs: int = 1,
) -> list[Path]:
    """``out/plots/*.png`` and ``out/report.html`` of a sweep's ``table``, ``plan`` (sweep.json)
    and ``failures`` (run key -> failure record) (each file written whole, then renamed, with
    the user's umask: tcplab.output_files); the figures drawn in up to ``jobs`` processes."""
    from tcplab.output_files import write_file_atomically

    plots = sweep_plots(table, plan, jobs)
    plot_dir = out / "plots"
    plot_dir.mkdir(exist_ok=True)
    written = []
    for p in plots:
        written.append(write_file_atomically(plot_dir / p.name, p.png, overwrite=True, durable=False))
    write_file_atomically(out / "report.html", _report(table, plan, failures, plots), overwrite=True)
    return written

"""The plot and the page of a recommendation (``tcplab recommend``).

The model: ``plots/recommend.png`` shows the robustness rule at work. Its first panel is
the objective against the first condition parameter (``--over``; numeric when every value
is a number with one unit, else the values in sweep order), one line per setting: at each
x, the seed mean of the setting's worst condition among the other condition parameters at
that x (so each line's lowest point, when maximizing, is the setting's score), with a band
from the lowest to the highest seed there. The recommended setting is drawn thick, the
infeasible ones dashed. Each constraint gets a panel of its own metric drawn the same way
but with the **worst seed** (a constraint must hold in every seed's run), and its bound as
a horizontal dashed line. With no condition parameter (only seeds), x is the setting.

``report.html``: the objective, the rule, the recommendation sentence, the ranked table of
settings, the evidence runs (with their run directories when the sweep kept them) and the
plot, in one self-contained page (as :mod:`tcplab.views.report`).

The views read a :class:`~tcplab.recommend.recommendation.Recommendation` as data (its
selection, table, sentence, evidence, rule and the way it names a setting); this module
imports nothing of :mod:`tcplab.recommend` when it runs (the recommendation calls it).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2

from tcplab.views.drawing import Plot
from tcplab.views.drawing import figure as _figure
from tcplab.views.drawing import legend_outside as _legend
from tcplab.views.drawing import png_bytes as _png

if TYPE_CHECKING:
    from tcplab.recommend.recommendation import Recommendation

__all__ = ["recommend_plots", "render_recommend_report", "write_recommend_report", "PLOT_FILE"]

PLOT_FILE = "recommend.png"

_NUMBER_UNIT = re.compile(r"\A\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*([A-Za-z%/µμ]*)\s*\Z")


def _numeric_axis(labels: list[str]) -> tuple[dict[str, float], str] | None:
    """label -> number when every label is a number with the same unit (or none)."""
    values, units = {}, set()
    for label in labels:
        m = _NUMBER_UNIT.match(label)
        if not m:
            return None
        values[label] = float(m.group(1))
        units.add(m.group(2))
    return (values, units.pop()) if len(units) == 1 else None


def _setting_label(setting: dict[str, str], choose: list[str]) -> str:
    if len(choose) == 1:
        return str(setting[choose[0]])
    return ", ".join(f"{p.split('.')[-1]}={setting[p]}" for p in choose)


def recommend_plots(rec: Recommendation) -> list[Plot]:
    """The plots (see the module doc). A setting whose metric has no value anywhere (every
    run failed, 0/0 ratios) is drawn as nothing, without numpy's empty-slice warnings."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Mean of empty slice", RuntimeWarning)
        warnings.filterwarnings("ignore", "All-NaN (slice|axis) encountered", RuntimeWarning)
        return _recommend_plots(rec)


def _recommend_plots(rec: Recommendation) -> list[Plot]:
    """``recommend.png`` (module doc)."""
    drawn = recommend_figure(rec)
    if drawn is None:
        return []
    fig, caption = drawn
    return [Plot(PLOT_FILE, caption, _png(fig))]


def recommend_figure(rec: Recommendation) -> tuple[Any, str] | None:
    """The figure of ``recommend.png`` and its caption (None: no run to draw)."""
    import numpy as np

    s = rec.selection
    frame = s.per_run
    if frame is None or frame.empty:
        return None
    obj = s.objective
    constraints = list(obj.constraints)
    panels = [("objective", obj.metric, None, "mean")] + [
        (f"constraint {i}", c.metric, c, "worst") for i, c in enumerate(constraints, start=1)
    ]
    # a constraint on the objective's own metric is drawn on the objective panel
    same = [p for p in panels[1:] if p[1].source == obj.metric.source]
    panels = [panels[0]] + [p for p in panels[1:] if p not in same]
    bounds_on_objective = [p[2] for p in same]

    x_param = s.over[0] if s.over and s.over[0] in frame.columns and s.over[0] in s.conditions_params else None
    others = [p for p in s.conditions_params if p != x_param]
    fig = _figure(height=3.2 * len(panels), width=10.0)
    axes = fig.subplots(len(panels), 1, squeeze=False)[:, 0]
    # one colour per setting, by its place in the sweep's plan (not its rank): the sweep's
    # figures draw the same setting in the same colour (tcplab.views.colors)
    from tcplab.views.colors import variant_colors

    def key(choice: Any) -> tuple[str, ...]:
        return tuple(str(choice.setting[p]) for p in s.choose)

    palette = variant_colors(key(c) for c in sorted(s.choices, key=lambda c: c.order))
    colors = [palette[key(c)] for c in s.choices]
    rec_setting = s.recommended.setting if s.recommended else None

    if x_param is not None:
        order = list(dict.fromkeys(frame.sort_values("point")[x_param].astype(str)))
        numeric = _numeric_axis(order)
        if numeric:
            xpos, unit = numeric
            xlabel = f"{x_param} ({unit})" if unit else x_param
        else:
            xpos, xlabel = {v: float(i) for i, v in enumerate(order)}, x_param
    else:
        order, xlabel = [], "setting"
        xpos = {}

    for ax, (column, metric, constraint, how) in zip(axes, panels, strict=True):
        # which way is worse on this panel: up when minimizing, or for an upper bound
        worse_high = (not obj.maximize) if column == "objective" else constraint.op in ("<", "<=", "==")
        for idx, choice in enumerate(s.choices):
            mask = np.ones(len(frame), dtype=bool)
            for p, v in choice.setting.items():
                mask &= frame[p].astype(str).to_numpy() == v
            rows = frame[mask & (frame["status"] == "ok").to_numpy()]
            if rows.empty:
                continue
            label = _setting_label(choice.setting, s.choose)
            if not choice.feasible:
                label += " (infeasible)"
            is_rec = rec_setting is not None and choice.setting == rec_setting
            style = {
                "color": colors[idx],
                "linewidth": 2.6 if is_rec else 1.3,
                "linestyle": "-" if choice.feasible else "--",
                "marker": "o",
                "markersize": 4,
                "zorder": 3 if is_rec else 2,  # on top of a setting that ties with it
            }
            if x_param is None:
                vals = metric.display(rows[column].to_numpy(dtype=float))
                centre = (
                    float(np.nanmean(vals))
                    if how == "mean"
                    else (float(np.nanmax(vals)) if worse_high else float(np.nanmin(vals)))
                )
                ax.errorbar(
                    [idx],
                    [centre],
                    yerr=[[centre - np.nanmin(vals)], [np.nanmax(vals) - centre]],
                    fmt="o",
                    color=colors[idx],
                    label=label,
                    capsize=4,
                )
                continue
            xs, ys, lo, hi = [], [], [], []
            for xv in order:
                at = rows[rows[x_param].astype(str) == xv]
                if at.empty:
                    continue
                best = None
                groups = at.groupby(others, sort=False) if others else [((), at)]
                for _, g in groups:
                    vals = metric.display(g[column].to_numpy(dtype=float))
                    if how == "mean":
                        centre = float(np.mean(vals))
                    else:
                        centre = float(np.max(vals)) if worse_high else float(np.min(vals))
                    cand = (centre, float(np.min(vals)), float(np.max(vals)))
                    if best is None or (centre > best[0] if worse_high else centre < best[0]):
                        best = cand
                xs.append(xpos[xv])
                ys.append(best[0])
                lo.append(best[1])
                hi.append(best[2])
            ax.plot(xs, ys, label=label, **style)
            ax.fill_between(xs, lo, hi, color=colors[idx], alpha=0.15, linewidth=0)
        bounds = bounds_on_objective if column == "objective" else [constraint]
        for b in bounds:
            ax.axhline(
                metric.display(b.bound), color="#a01010", linestyle=":", linewidth=1.4, label=f"bound: {b.label}"
            )
        unit = f" ({metric.display_unit})" if metric.display_unit else ""
        worst_of = f", worst over {', '.join(others)}" if others and x_param is not None else ""
        title = (
            f"{obj.sense} {metric.name}: mean over seeds{worst_of} (band: lowest to highest seed)"
            if column == "objective"
            else f"constraint {constraint.label}: worst seed{worst_of} (band: seeds)"
        )
        ax.set_title(title, loc="left", fontsize="medium")
        ax.set_ylabel(f"{metric.name}{unit}")
        ax.set_xlabel(xlabel)
        ax.grid(True, alpha=0.3)
        if x_param is None:
            ax.set_xticks(range(len(s.choices)))
            ax.set_xticklabels([_setting_label(c.setting, s.choose) for c in s.choices], rotation=20)
        elif not _numeric_axis(order):
            ax.set_xticks([xpos[v] for v in order])
            ax.set_xticklabels(order)
        _legend(ax)
    caption = (
        f"{obj.sense} {obj.metric.name} over {', '.join(s.over) or 'seeds'}: one line per setting "
        "(thick: recommended; dashed: infeasible); constraints below with their bounds."
    )
    return fig, caption


_TEMPLATE = """<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>tcplab recommend: {{ objective }}</title>
<style>{{ style }}</style></head>
<body>
<h1>Recommendation</h1>
<p><b>Objective:</b> {{ objective }}</p>
<p class="note"><b>Rule:</b> {{ rule }}.</p>
{% for m in metrics %}<p class="note">{{ m.name }}: {{ m.source }}</p>
{% endfor %}
<p class="notice{% if not feasible %} bad{% endif %}">{{ sentence }}</p>
{% for n in notes %}<p class="note">{{ n }}</p>
{% endfor %}
<h2>Settings, ranked</h2>
<table>
<tr>{% for h in header %}<th class="l">{{ h }}</th>{% endfor %}</tr>
{% for row in rows %}<tr>{% for c in row %}<td class="l">{{ c }}</td>{% endfor %}</tr>
{% endfor %}
</table>
<h2>Evidence</h2>
<table>
<tr><th class="l">role</th><th class="l">setting</th><th class="l">condition</th><th>seed</th>
<th class="l">run</th><th class="l">metric</th><th>value</th><th class="l">run directory</th></tr>
{% for e in evidence %}<tr><td class="l">{{ e.role }}</td><td class="l">{{ e.setting }}</td>
<td class="l">{{ e.condition }}</td><td>{{ e.seed }}</td><td class="l">{{ e.run }}</td>
<td class="l">{{ e.metric }}</td><td>{{ e.value }}</td><td class="l">{{ e.run_dir }}</td></tr>
{% endfor %}
</table>
{% for f in figures %}<figure><img src="{{ f.uri }}" alt="{{ f.caption }}">
<figcaption>{{ f.caption }}</figcaption></figure>
{% endfor %}
{% if sweep %}<p class="note">Sweep: {{ sweep }}</p>{% endif %}
</body></html>
"""


def _cell(v: Any) -> str:
    if isinstance(v, float):
        return "-" if math.isnan(v) else f"{v:.4g}"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return str(v)


def render_recommend_report(rec: Recommendation, figures: list[Plot]) -> str:
    from tcplab.views.report import _STYLE, data_uri, scrolling

    describe = rec.describe

    s = rec.selection
    table = rec.table
    metrics = [s.objective.metric] + [c.metric for c in s.objective.constraints]
    seen, uniq = set(), []
    for m in metrics:
        if m.name not in seen:
            seen.add(m.name)
            uniq.append(m)
    evidence = []
    for e in rec.evidence:
        metric = next((m for m in uniq if m.name == e["metric"]), s.objective.metric)
        evidence.append(
            {
                "role": e["role"],
                "setting": describe(e["setting"]),
                "condition": describe(e["condition"]) if e["condition"] else "-",
                "seed": e["seed"],
                "run": e["run"],
                "metric": e["metric"],
                "value": metric.fmt(e["value"]),
                "run_dir": e["run_dir"] or "(not kept: --keep-runs)",
            }
        )
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    return env.from_string(scrolling(_TEMPLATE)).render(
        style=_STYLE,
        objective=s.objective.text,
        rule=rec.rule,
        metrics=[{"name": m.name, "source": m.source} for m in uniq],
        sentence=rec.sentence,
        feasible=rec.feasible,
        notes=s.notes,
        header=list(table.columns),
        rows=[[_cell(v) for v in row] for row in table.itertuples(index=False)],
        evidence=evidence,
        figures=[{"uri": data_uri(p.png), "caption": p.caption} for p in figures],
        sweep=str(rec.sweep_dir) if rec.sweep_dir else "",
    )


def write_recommend_report(rec: Recommendation, figures: list[Plot], path: Path) -> Path:
    path.write_text(render_recommend_report(rec, figures), encoding="utf-8")
    return path

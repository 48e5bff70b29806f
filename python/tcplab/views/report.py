"""report.html: one page per run with the summary tables and the plots.

The model: the page is generated from :attr:`Result.summary` and the run's plots with a
jinja2 template (autoescaping on: scenario names and descriptions are user text). Plots are
linked by relative path (``plots/goodput.png``), so the run directory can be moved or
served as it is. No JavaScript, no external resources.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2

if TYPE_CHECKING:
    from tcplab.results import Result

__all__ = ["render_report", "write_report", "render_compare_report"]

_TEMPLATE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>tcplab: {{ s.title }}</title>
<style>
 body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1000px; color: #222; }
 table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
 th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: right; }
 th { background: #f3f3f3; } td.l, th.l { text-align: left; }
 .ok { color: #186a18; } .bad { color: #a01010; font-weight: bold; }
 pre { background: #f6f6f6; padding: 0.6em; white-space: pre-wrap; }
 img { max-width: 100%; }
</style>
</head>
<body>
<h1>{{ s.title }}</h1>
{% if s.description %}<pre>{{ s.description }}</pre>{% endif %}
<p>seed {{ s.seed }} &middot; {{ "%g"|format(s.duration_s) }} s simulated,
 sampled every {{ "%g"|format(s.sample_interval_s * 1000) }} ms
 &middot; tcplab {{ s.tcplab_version }} (engine {{ s.engine_version }})
 &middot; {{ s.events }} events, {{ s.packets }} packets
 &middot; <a href="scenario.yaml">scenario as run</a> &middot; <a href="scenario.resolved.json">engine configuration</a>
 &middot; <a href="metadata.json">provenance</a> &middot; <a href="counters.txt">counters</a></p>

<h2>Flows</h2>
<table>
<tr><th class="l">flow</th><th class="l">from &rarr; to</th><th class="l">cc</th>
<th>goodput (Mbit/s)</th><th>retrans (%)</th>
<th>timeouts</th><th>RTT p50 (ms)</th><th>RTT p90 (ms)</th><th>RTT p99 (ms)</th></tr>
{% for f in s.flows %}
<tr><td class="l">{{ f.name }}</td><td class="l">{{ f["from"] }} &rarr; {{ f.to }}</td>
<td class="l">{{ f.cc }}</td>
<td>{{ num(f.goodput_bps, 1e-6, 3) }}</td><td>{{ num(f.retrans_ratio, 100, 2) }}</td><td>{{ f.timeouts }}</td>
<td>{{ num(f.rtt_p50_ms) }}</td><td>{{ num(f.rtt_p90_ms) }}</td><td>{{ num(f.rtt_p99_ms) }}</td></tr>
{% endfor %}
</table>

<h2>Links</h2>
<table>
<tr><th class="l">link</th><th class="l">qdisc</th><th>sent (pkts)</th><th>queue drops</th><th>loss drops</th>
<th>max backlog (pkts)</th></tr>
{% for l in s.links %}
<tr><td class="l">{{ l.name }}</td><td class="l">{{ l.qdisc }}</td><td>{{ l.sent_packets }}</td><td>{{ l.drops }}</td>
<td>{{ l.loss_drops }}</td><td>{{ l.max_backlog_packets }}</td></tr>
{% endfor %}
</table>

<p>Packet accounting:
{% if s.invariant.ok %}<span class="ok">ok</span>{% else %}<span class="bad">FAILED</span>{% endif %}
{% if s.invariant.message %} &mdash; {{ s.invariant.message }}{% endif %}</p>

{% if plots %}
<h2>Plots</h2>
{% for p in plots %}<p><img src="plots/{{ p }}" alt="{{ p }}"></p>
{% endfor %}
{% endif %}
</body>
</html>
"""


_COMPARE_TEMPLATE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>tcplab compare: {{ title }}</title>
<style>
 body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1000px; color: #222; }
 table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
 th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: right; }
 th { background: #f3f3f3; } td.l, th.l { text-align: left; }
 pre { background: #f6f6f6; padding: 0.6em; white-space: pre-wrap; }
 img { max-width: 100%; }
</style>
</head>
<body>
<h1>{{ title }}</h1>
{% if description %}<pre>{{ description }}</pre>{% endif %}
<table>
<tr><th class="l">metric</th>{% for c in columns %}<th>{{ c }}</th>{% endfor %}</tr>
{% for row in rows %}
<tr><td class="l">{{ row.metric }}</td>{% for v in row["values"] %}<td>{{ v }}</td>{% endfor %}</tr>
{% endfor %}
</table>
<p>Runs: {% for v in variants %}<a href="{{ v }}/report.html">{{ v }}</a>
{%- if not loop.last %} &middot; {% endif %}{% endfor %}
&middot; <a href="compare.json">compare.json</a></p>
{% if plot %}<p><img src="compare.png" alt="goodput, cwnd and RTT of each variant"></p>{% endif %}
</body>
</html>
"""


def render_compare_report(title: str, description: str, table: Any, variants: list[str], plot: bool) -> str:
    """The HTML text of a comparison: the metric table, links to each run, the plot."""
    rows = []
    for metric, values in table.iterrows():
        cells = []
        for v in values:
            cells.append(
                "-"
                if v is None or (isinstance(v, float) and v != v)
                else (f"{v:g}" if isinstance(v, float) else str(v))
            )
        rows.append({"metric": metric, "values": cells})
    return _ENV.from_string(_COMPARE_TEMPLATE).render(
        title=title, description=description, columns=list(table.columns), rows=rows, variants=variants, plot=plot
    )


def _num(value: Any, scale: float = 1.0, digits: int = 1) -> str:
    if value is None:
        return "-"
    return f"{value * scale:.{digits}f}"


_ENV = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
_ENV.globals["num"] = _num


def render_report(summary: dict[str, Any], plots: list[str]) -> str:
    """The HTML text for a run summary and the plot file names under ``plots/``."""
    return _ENV.from_string(_TEMPLATE).render(s=summary, plots=plots)


def write_report(result: Result, path: Path, *, plots: bool = True) -> Path:
    from tcplab.views.plots import RUN_PLOTS

    path.write_text(render_report(result.summary, list(RUN_PLOTS) if plots else []), encoding="utf-8")
    return path

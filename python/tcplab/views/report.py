"""report.html: one self-contained page per run (and per comparison).

The model: the page is generated from :attr:`Result.summary`, the run's configuration and
its rendered plots with a jinja2 template (autoescaping on: scenario names and descriptions
are user text). It is ONE file: plots are embedded as base64 PNG (``data:`` URIs), the
resolved scenario and the counters are inlined in collapsible blocks, and there is no
JavaScript, no stylesheet or font from elsewhere and no ``src=`` to another file, so the
page still works when attached to a ticket or mailed. (The same PNGs are also written to
``plots/`` for people who want the files.)

Numbers are rounded for reading, not for computing (``summary.json`` keeps full precision):
rates to 3 significant figures (:func:`~tcplab.views.drawing.sig`, re-exported here),
percentages to 2 decimals, milliseconds to 1 decimal, counts as integers.
"""

from __future__ import annotations

import base64
import functools
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2

from tcplab.results.ethtool import NOT_ETHTOOL
from tcplab.views.drawing import Plot, sig

if TYPE_CHECKING:
    from tcplab.results import Result

__all__ = [
    "sig",
    "format_metric",
    "render_report",
    "app_sections",
    "write_report",
    "render_compare_report",
    "write_compare_report",
    "data_uri",
    "scrolling",
]

_STYLE = """
 body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; padding: 0 1em; }
 table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
 /* every table sits in a box of the page's width: it wraps its cells to fit, and what still
    does not fit scrolls inside the box; the page never runs off the right */
 div.scroll { overflow-x: auto; max-width: 100%; margin: 1em 0; }
 div.scroll > table { margin: 0; }
 td.l.wrap { white-space: normal; min-width: 4em; }
 table.flows { font-size: 0.82em; } table.flows th, table.flows td { padding: 0.3em 0.4em; }
 th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: right; }
 th { background: #f3f3f3; } td.l, th.l { text-align: left; } td.l { white-space: nowrap; }
 .ok { color: #186a18; } .bad { color: #a01010; font-weight: bold; }
 pre { background: #f6f6f6; padding: 0.6em; white-space: pre-wrap; font-size: 0.85em; }
 figure { margin: 1.5em 0; } figcaption { color: #555; font-size: 0.9em; }
 img { max-width: 100%; height: auto; }
 .note { color: #555; font-size: 0.9em; }
 td.x { text-align: left; white-space: normal; max-width: 28em; font-size: 0.9em; }
 .notice { border: 1px solid #bbb; background: #f6f6f6; padding: 0.6em 1em; }
 .notice.bad { border: 2px solid #a01010; background: #fde8e8; color: #a01010; font-weight: bold; }
"""

_TEMPLATE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>tcplab: {{ s.title }}</title>
<style>{{ style }}</style>
</head>
<body>
<h1>{{ s.title }}</h1>
{% if notice %}<p class="notice {{ notice.level }}">{{ notice.text }}</p>{% endif %}
{% if s.description %}<pre>{{ s.description }}</pre>{% endif %}
<p>seed {{ s.seed }} &middot; {{ "%g"|format(s.duration_s) }} s {% if s.kind == "kernel" %}measured on Linux
 {{ s.kernel.release }}{% else %}simulated{% endif %},
 sampled every {{ "%g"|format(s.sample_interval_s * 1000) }} ms
 &middot; tcplab {{ s.tcplab_version }} (engine {{ s.engine_version }})
 &middot; {{ s.events }} events, {{ s.packets }} packets</p>

<h2>Flows</h2>
<div class="scroll"><table class="flows">
<tr><th class="l">flow</th><th class="l">from &rarr; to</th><th class="l">data</th><th class="l">cc</th>
<th>goodput (Mbit/s)</th><th>payload ceiling (Mbit/s)</th><th>of ceiling (%)</th><th>retrans (%)</th>
<th>timeouts</th><th>base RTT (ms)</th><th>RTT p50 (ms)</th><th>RTT p90 (ms)</th><th>RTT p99 (ms)</th>
<th>rwnd-limited (ms)</th><th>rwnd-limited (%)</th><th>sndbuf-limited (ms)</th></tr>
{% for f in flows %}
<tr><td class="l">{{ f.name }}</td><td class="l wrap">{{ f["from"] }} &rarr; {{ f.to }}</td>
<td class="l wrap">{{ f.data }}</td><td class="l">{{ f.cc }}</td>
<td>{{ f.goodput }}</td><td>{{ f.ceiling }}</td><td>{{ f.of_ceiling }}</td><td>{{ f.retrans }}</td>
<td>{{ f.timeouts }}</td>
<td>{{ f.base_rtt }}</td><td>{{ f.p50 }}</td><td>{{ f.p90 }}</td><td>{{ f.p99 }}</td>
<td>{{ f.rwnd_ms }}</td><td>{{ f.rwnd_pct }}</td><td>{{ f.sndbuf_ms }}</td></tr>
{% endfor %}
</table>
<p class="note">Data: the direction of the flow's data (the sender whose goodput, cwnd and RTT the row and
the plots show): the server for maerts, bidir's <code>.rev</code>, hls and nfs_stream. rwnd-limited /
sndbuf-limited: the sender's time blocked by the peer's receive window / its own send buffer
(<code>ss -i</code>'s <code>rwnd_limited:Xms(Y%)</code>, Y of its busy time): a slow reader's signature.</p>
<p class="note">Payload ceiling: the smallest rate on the flow's data route (each link's rate, a tbf's rate
and peakrate, an fq's maxrate per flow, a pod's EDT limit), &times; MSS / (MSS + 52 B
TCP/IP headers + link framing), i.e. 1448/1514 of the rate on Ethernet. Base RTT: the propagation
delays of the data and ACK routes (no serialization, no queueing).</p>
{% if stuck %}
<h2>Stuck and collapsed flows</h2>
<table>
<tr><th class="l">kind</th><th class="l">flow</th><th>start (s)</th><th>end (s)</th><th>duration (s)</th>
<th class="l">CA states</th><th class="l">CC modes</th><th>cwnd min / median</th><th>ssthresh median</th>
<th>goodput median</th><th>fair share</th><th>BBR bw median</th></tr>
{% for e in stuck %}
<tr><td class="l">{{ e.kind }}</td><td class="l">{{ e.flow }}</td><td>{{ e.start }}</td><td>{{ e.end }}</td>
<td>{{ e.duration }}</td><td class="l">{{ e.states }}</td><td class="l">{{ e.modes }}</td><td>{{ e.cwnd }}</td>
<td>{{ e.ssthresh }}</td><td>{{ e.goodput }}</td><td>{{ e.fair }}</td><td>{{ e.bbr }}</td></tr>
{% endfor %}
</table>
<p class="note">cwnd-collapse: cwnd &le; 2 and ssthresh &le; 2 packets (<code>ss -i</code>'s
<code>cwnd:2 ssthresh:2</code>) for at least 1 s. stuck: a bulk flow with data waiting whose goodput (a 1 s average)
stayed below 10&nbsp;% of its fair share (its path's payload ceiling / the flows active on its
bottleneck) for at least 5 s. <code>tcplab diagnose</code> names the same states from a host's
<code>ss -tin</code>.</p>
{% endif %}

<h2>Links</h2>
<table>
<tr><th class="l">link</th><th class="l">device</th><th class="l">qdisc</th><th>sent (pkts)</th><th>queue drops</th>
<th>loss drops</th><th>max backlog (pkts)</th></tr>
{% for l in s.links %}
<tr><td class="l">{{ l.name }}</td><td class="l">{{ l.node }} {{ l.dev }}</td><td class="l">{{ l.qdisc }}</td>
<td>{{ l.sent_packets }}</td><td>{{ l.drops }}</td>
<td>{{ l.loss_drops }}</td><td>{{ l.max_backlog_packets }}</td></tr>
{% endfor %}
</table>
<p class="note">Device: the link's egress as the run directory's <code>tc-qdisc-NODE.txt</code> names it
(a node's links are eth0, eth1, ... in scenario order).</p>
{% if qdiscs %}
<h2>Qdisc statistics</h2>
<p class="note">As <code>tc -s qdisc</code> names them: Sent bytes/pkt, dropped, overlimits (tbf: had to wait
for tokens), requeues, backlog at the end, and the qdisc's own counters (xstats). An <code>edt</code> row is a pod's
Cilium Bandwidth Manager limit, applied before the qdisc: its drops (packets 2 s or more ahead) are not in
tc's counters; on a node, <code>bpftool</code> / <code>cilium monitor</code> show them.</p>
<table>
<tr><th class="l">device</th><th class="l">qdisc</th><th>Sent (bytes)</th><th>Sent (pkt)</th><th>dropped</th>
<th>overlimits</th><th>requeues</th><th>backlog (b)</th><th>backlog (p)</th><th class="l">xstats</th></tr>
{% for q in qdiscs %}
<tr><td class="l">{{ q.device }}</td><td class="l">{{ q.kind }}</td><td>{{ q.sent_bytes }}</td>
<td>{{ q.sent_packets }}</td><td>{{ q.drops }}</td><td>{{ q.overlimits }}</td><td>{{ q.requeues }}</td>
<td>{{ q.backlog_bytes }}</td><td>{{ q.backlog_packets }}</td><td class="x">{{ q.xstats }}</td></tr>
{% endfor %}
</table>
{% endif %}
{% if nics %}
<h2>NIC counters</h2>
<p class="note">As <code>ethtool -S eth0</code> prints them on each host with a NIC model
(<code>ethtool-S-HOST.txt</code>).</p>
<table>
<tr><th class="l">host</th><th class="l">driver</th><th>rx ring</th><th>rx queues</th><th class="l">counter</th>
<th>value</th></tr>
{% for n in nics %}
{% for name, value in n.counters %}
<tr>{% if loop.first %}<td class="l" rowspan="{{ n.counters|length }}">{{ n.host }}</td>
<td class="l" rowspan="{{ n.counters|length }}">{{ n.driver }}</td>
<td rowspan="{{ n.counters|length }}">{{ n.rx_ring }}</td><td rowspan="{{ n.counters|length }}">{{ n.rx_queues }}</td>
{% endif %}<td class="l">{{ name }}</td><td>{{ value }}</td></tr>
{% endfor %}
{% endfor %}
</table>
{% endif %}
{% if cpus %}
<h2>CPU time slices</h2>
<table>
<tr><th class="l">host</th><th>period (ms)</th><th>share (%)</th><th>on CPU (s)</th><th>steal (s)</th>
<th>steal (%)</th></tr>
{% for c in cpus %}
<tr><td class="l">{{ c.host }}</td><td>{{ c.period }}</td><td>{{ c.share }}</td><td>{{ c.on }}</td>
<td>{{ c.steal }}</td><td>{{ c.steal_pct }}</td></tr>
{% endfor %}
</table>
<p class="note">Steal: the time the host was off its CPU, as a guest's <code>/proc/stat</code> counts it
(<code>proc-stat-HOST.txt</code>).</p>
{% endif %}

{% if apps %}
<h2>Applications</h2>
<p class="note">What each workload's users watch (summary.json <code>apps</code>; one row per request, segment,
burst or sample in <code>app_TABLE.parquet</code>, with an <code>app</code> column naming the workload).</p>
{% for a in apps %}
<h3>{{ a.name }} <span class="note">({{ a.kind }}{% if a.flows %}; connections {{ a.flows }}{% endif %})</span></h3>
{% if a.headline %}
<table>
<tr>{% for metric, _ in a.headline %}<th>{{ metric }}</th>{% endfor %}</tr>
<tr>{% for _, value in a.headline %}<td>{{ value }}</td>{% endfor %}</tr>
</table>
{% endif %}
<details{% if not a.headline %} open{% endif %}><summary>summary ({{ a.summary|length }} values)</summary>
<table>
{% for key, value in a.summary %}<tr><td class="l">{{ key }}</td><td class="x">{{ value }}</td></tr>
{% endfor %}
</table></details>
{% for t in a.tables %}
<p class="note"><code>{{ t.file }}</code>: {{ t.rows }} rows of {{ a.name }} ({{ t.columns }})</p>
{% if t.preview %}
<table>
<tr>{% for c in t.preview.columns %}<th>{{ c }}</th>{% endfor %}</tr>
{% for row in t.preview.rows %}<tr>{% for v in row %}<td>{{ v }}</td>{% endfor %}</tr>
{% endfor %}
</table>
{% endif %}
{% endfor %}
{% for p in a.figures %}
<figure><img src="{{ p.uri }}" alt="{{ p.caption }}"><figcaption>{{ p.caption }}</figcaption></figure>
{% endfor %}
{% endfor %}
{% endif %}

<p>Packet accounting:
{% if s.kind == "kernel" %}<span class="note">not checked</span>
{%- elif s.invariant.ok %}<span class="ok">ok</span>{% else %}<span class="bad">FAILED</span>{% endif %}
{% if s.invariant.message %} &mdash; {{ s.invariant.message }}{% endif %}</p>

{% if plots %}
<h2>Plots</h2>
<p class="note">Shading: CA state Recovery (orange) and Loss (red) on the cwnd panels; BBR's STARTUP
(green), DRAIN (cyan) and PROBE_RTT (purple) on the rate panels. A state holds from one sample to
the next, so an episode shorter than the sample interval may not show; retransmission marks are
the samples where the flow's retransmitted-segment count grew, RTO marks the samples where it
entered Loss (only the retransmission timer enters Loss).</p>
{% for p in plots %}
<figure><img src="{{ p.uri }}" alt="{{ p.caption }}"><figcaption>{{ p.caption }}</figcaption></figure>
{% endfor %}
{% endif %}

<h2>Inputs and counters</h2>
{% if scenario_yaml %}<details><summary>scenario as run (every override applied; <code>scenario.yaml</code>)</summary>
<pre>{{ scenario_yaml }}</pre></details>{% endif %}
{% if config_json %}<details><summary>engine configuration (<code>scenario.resolved.json</code>)</summary>
<pre>{{ config_json }}</pre></details>
{% elif config_note %}<p class="note">{{ config_note }}</p>{% endif %}
<details><summary>nstat counters (<code>counters.txt</code>)</summary>
<pre>{{ counters }}</pre></details>
{% for name, text in tool_texts %}
<details><summary><code>{{ name }}</code></summary>
<pre>{{ text }}</pre></details>
{% endfor %}
</body>
</html>
"""


def scrolling(template: str) -> str:
    """``template`` with each ``<table>`` in a ``div.scroll`` box (see the style)."""
    return template.replace("<table>", '<div class="scroll"><table>').replace("</table>", "</table></div>")


_TEMPLATE = scrolling(_TEMPLATE)

_COMPARE_TEMPLATE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>tcplab compare: {{ title }}</title>
<style>{{ style }}</style>
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
<p class="note">queue drops: tail drops in queues; loss drops: packets the links' loss models
dropped (random loss). Payload ceiling and base RTT: of the first flow's route (see each run's report).</p>
<p>Run directories (each with its own report.html): {% for v in variants %}<code>{{ v }}/</code>
{%- if not loop.last %} &middot; {% endif %}{% endfor %} &middot; <code>compare.json</code></p>
{% for p in plots %}
<figure><img src="{{ p.uri }}" alt="{{ p.caption }}"><figcaption>{{ p.caption }}</figcaption></figure>
{% endfor %}
</body>
</html>
"""


_COMPARE_TEMPLATE = scrolling(_COMPARE_TEMPLATE)


def _fixed(x: Any, scale: float = 1.0, decimals: int = 1) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return f"{x * scale:.{decimals}f}"


def format_metric(metric: str, value: Any) -> str:
    """A compare-table cell: rates (``Mbit/s``) to 3 significant figures, ``(%)`` to 2
    decimals, ``(ms)`` to 1 decimal, counts as integers."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    if "Mbit/s" in metric:
        return sig(float(value), 3)
    if "(%)" in metric:
        return _fixed(float(value), 1.0, 2)
    if "(ms)" in metric:
        return _fixed(float(value), 1.0, 1)
    if float(value).is_integer():
        return str(int(value))
    return sig(float(value), 3)


def data_uri(png: bytes) -> str:
    """``data:image/png;base64,...``: the image inside the page."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


_ENV = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
#: each template compiled once per process, not once per page (a quick replay writes ~150)
_template = functools.cache(_ENV.from_string)


def _figures(plots: Sequence[Plot]) -> list[dict[str, str]]:
    return [{"uri": data_uri(p.png), "caption": p.caption} for p in plots]


def _flow_rows(
    summary: Mapping[str, Any], config: Mapping[str, Any] | None, collapsed: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    """One row per flow; the flows of an app in ``collapsed`` (flow -> app: a broadcast's
    thousands of connections) as one row of totals per app."""
    from tcplab.results.paths import flow_paths

    paths = flow_paths(config) if config else {}
    rows = []
    collapsed = collapsed or {}
    grouped: dict[str, list[Mapping[str, Any]]] = {}
    for f in summary["flows"]:
        if f["name"] in collapsed:
            grouped.setdefault(collapsed[f["name"]], []).append(f)
    for f in summary["flows"]:
        if f.get("connections"):  # summary.json's one row for an app's many connections
            rows.append(_aggregate_flow_row(f))
            continue
        app = collapsed.get(f["name"])
        if app is not None:
            if app in grouped:
                rows.append(_app_flow_row(app, grouped.pop(app)))
            continue
        p = paths.get(f["name"])
        goodput = f.get("goodput_bps")
        ceiling = p.payload_ceiling_bps if p else None
        rows.append(
            {
                "name": f["name"],
                "from": f["from"],
                "to": f["to"],
                "cc": f["cc"] + _ecn_note(f.get("ecn")),
                "goodput": sig(goodput / 1e6) if goodput is not None else "-",
                "ceiling": sig(ceiling / 1e6) if ceiling else "-",
                "of_ceiling": _fixed(goodput / ceiling, 100, 2) if ceiling and goodput is not None else "-",
                "retrans": _fixed(f.get("retrans_ratio"), 100, 2),
                "timeouts": f.get("timeouts", "-"),
                "base_rtt": _fixed(p.base_rtt_s, 1e3, 1) if p else "-",
                "p50": _fixed(f.get("rtt_p50_ms")),
                "p90": _fixed(f.get("rtt_p90_ms")),
                "p99": _fixed(f.get("rtt_p99_ms")),
                **_limited_cells(f),
            }
        )
    return rows


def _ecn_note(ecn: Mapping[str, Any] | None) -> str:
    """`` (ECN: 12 CE)``, with DCTCP's alpha, after the cc of a flow that negotiated ECN."""
    if not ecn:
        return ""
    alpha = ecn.get("dctcp_alpha")
    alpha_text = f", alpha {alpha}/1024" if alpha is not None else ""
    return f" (ECN: {ecn['delivered_ce']} CE{alpha_text})"


def _joined(value: Any) -> str:
    return ", ".join(str(v) for v in value) if isinstance(value, list) else str(value)


def _limited_cells(f: Mapping[str, Any]) -> dict[str, Any]:
    """The data direction and ss's rwnd_limited / sndbuf_limited cells of a summary flow."""
    data = f"{_joined(f['data_from'])} \u2192 {_joined(f['data_to'])}" if f.get("data_from") is not None else "-"
    return {
        "data": data,
        "rwnd_ms": _fixed(f.get("rwnd_limited_ms"), 1, 0),
        "rwnd_pct": _fixed(f.get("rwnd_limited_pct"), 1, 1),
        "sndbuf_ms": _fixed(f.get("sndbuf_limited_ms"), 1, 0),
    }


def _aggregate_flow_row(f: Mapping[str, Any]) -> dict[str, Any]:
    """summary.json's aggregate row of an app's many connections (totals, no RTT)."""
    goodput = f.get("goodput_bps")
    return {
        "name": f"{f['name']} ({f['connections']} connections)",
        "from": _joined(f["from"]),
        "to": _joined(f["to"]),
        "cc": _joined(f["cc"]),
        "goodput": sig(goodput / 1e6) if goodput is not None else "-",
        "ceiling": "-",
        "of_ceiling": "-",
        "retrans": _fixed(f.get("retrans_ratio"), 100, 2),
        "timeouts": f.get("timeouts", "-"),
        "base_rtt": "-",
        "p50": "-",
        "p90": "-",
        "p99": "-",
        **_limited_cells(f),
    }


def _app_flow_row(app: str, members: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The totals of an app's many connections: goodput summed, retransmissions over
    segments sent, RTOs summed (no per-connection RTT)."""
    segs = sum(m.get("data_segs_out") or 0 for m in members)
    retrans = sum(m.get("retrans_segs") or 0 for m in members)
    goodput = sum(m.get("goodput_bps") or 0.0 for m in members)
    return {
        "name": f"{app} ({len(members)} connections)",
        "from": ", ".join(dict.fromkeys(str(m["from"]) for m in members)),
        "to": ", ".join(dict.fromkeys(str(m["to"]) for m in members)),
        "cc": ", ".join(dict.fromkeys(str(m["cc"]) for m in members)),
        "goodput": sig(goodput / 1e6),
        "ceiling": "-",
        "of_ceiling": "-",
        "retrans": _fixed(retrans / segs if segs else 0.0, 100, 2),
        "timeouts": sum(m.get("timeouts") or 0 for m in members),
        "base_rtt": "-",
        "p50": "-",
        "p90": "-",
        "p99": "-",
        **_limited_cells({}),
    }


_TIMED = ("tbf", "fq", "fq_codel")


def _qdisc_rows(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Qdiscs worth their own table: the timed ones (and their children), any with xstats."""
    rows = []
    for link in summary.get("links", []):
        entries = [(link, str(link.get("qdisc")), "")]
        if isinstance(link.get("child"), Mapping):
            entries.append((link["child"], str(link["child"].get("qdisc", "?")), " (tbf child)"))
        for entry, kind, suffix in entries:
            xstats = entry.get("xstats") or {}
            if kind not in _TIMED and not xstats and not suffix:
                continue
            row = {k: entry.get(k, "-") if entry.get(k) is not None else "-" for k in _QDISC_STATS}
            row["device"] = f"{link.get('node', '?')} {link.get('dev', '?')}"
            row["kind"] = kind + suffix
            row["xstats"] = " ".join(f"{k} {v}" for k, v in xstats.items()) or "-"
            rows.append(row)
        # Cilium's EDT aggregates run before the qdisc (bpf/lib/edt.h): their drops are not tc's.
        for edt in link.get("edt") or []:
            row = dict.fromkeys(_QDISC_STATS, "-")
            row["device"] = f"{link.get('node', '?')} {link.get('dev', '?')}"
            pods = ", ".join(edt.get("pods") or ["?"])
            row["kind"] = f"edt (Cilium, pod {pods}, {sig(edt.get('rate_bps', 0) / 1e6)} Mbit/s)"
            row["drops"] = edt.get("drops", 0)
            row["xstats"] = f"stamped {edt.get('stamped', 0)} passed {edt.get('passed', 0)}"
            rows.append(row)
    return rows


_QDISC_STATS = ("sent_bytes", "sent_packets", "drops", "overlimits", "requeues", "backlog_bytes", "backlog_packets")


def _nic_rows(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for h in summary.get("hosts", []):
        nic = h.get("nic")
        if not nic:
            continue
        counters = [
            (f"{k} (softnet_stat)" if k in NOT_ETHTOOL else k, v) for k, v in (nic.get("ethtool") or {}).items()
        ] or [("(none reported)", "-")]
        rows.append(
            {
                "host": h["name"],
                "driver": nic.get("driver", "?"),
                "rx_ring": nic.get("rx_ring", "-"),
                "rx_queues": nic.get("rx_queues", "-"),
                "counters": counters,
            }
        )
    return rows


def _cpu_rows(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for h in summary.get("hosts", []):
        cpu = h.get("cpu")
        if not cpu:
            continue
        rows.append(
            {
                "host": h["name"],
                "period": _fixed(cpu.get("period_ns"), 1e-6, 1),
                "share": _fixed(cpu.get("share"), 100, 1),
                "on": _fixed(cpu.get("on_ns"), 1e-9, 3),
                "steal": _fixed(cpu.get("steal_ns"), 1e-9, 3),
                "steal_pct": _fixed(cpu.get("steal_ratio"), 100, 1),
            }
        )
    return rows


#: Rows of a table shown in the report for an app kind without a figure.
PREVIEW_ROWS = 10


def _cell(value: Any) -> str:
    """A summary or table value for reading: floats to 4 significant figures, maps and lists
    inline."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return sig(value, 4) if math.isfinite(value) else "-"
    if isinstance(value, Mapping):
        return ", ".join(f"{k} {_cell(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(_cell(v) for v in value)
    if hasattr(value, "item"):  # a NumPy scalar
        return _cell(value.item())
    return str(value)


def _flatten(summary: Mapping[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """``latency_ms.p99``-style keys (one level of maps; lists and deeper maps inline)."""
    rows = []
    for key, value in summary.items():
        if isinstance(value, Mapping) and not prefix and value and len(value) <= 20:
            rows.extend(_flatten(value, f"{key}."))
        else:
            rows.append((f"{prefix}{key}", _cell(value)))
    return rows


def app_sections(result: Result, plots: Sequence[Plot] = ()) -> list[dict[str, Any]]:
    """The report's section of each app: headline metrics, the whole summary, its tables
    (a preview of the first rows for a kind without a figure) and its figure."""
    from tcplab.results.apps import headline
    from tcplab.views.apps import app_plot_files

    files = app_plot_files(result)
    by_file = {p.filename: p for p in plots}
    sections = []
    for name, app in result.apps.items():
        figure = by_file.get(files.get(name, ""))
        tables = []
        for tname, frame in app.tables.items():
            preview = None
            if figure is None and len(frame):
                head = frame.head(PREVIEW_ROWS)
                preview = {
                    "columns": [str(c) for c in head.columns],
                    "rows": [[_cell(v) for v in row] for row in head.itertuples(index=False)],
                }
            tables.append(
                {
                    "file": f"app_{tname}.parquet",
                    "rows": len(frame),
                    "columns": ", ".join(str(c) for c in frame.columns),
                    "preview": preview,
                }
            )
        sections.append(
            {
                "name": name,
                "kind": app.kind,
                "flows": ", ".join(app.flows[:8]) + (f", ... ({len(app.flows)} in all)" if len(app.flows) > 8 else ""),
                "headline": [(h.label, h.text()[len(h.label) + 1 :]) for h in headline(app)],
                "summary": _flatten(app.summary),
                "tables": tables,
                "figures": _figures([figure] if figure is not None else []),
            }
        )
    return sections


def _stuck_rows(summary: Mapping[str, Any]) -> list[dict[str, str]]:
    """The report's rows of summary.json's ``stuck`` episodes (tcplab.results.stuck)."""
    from tcplab.results.stuck import format_rate

    rows = []
    for e in summary.get("stuck") or []:
        ssth = e.get("ssthresh_median")
        rows.append(
            {
                "kind": e["kind"],
                "flow": e["flow"],
                "start": f"{e['start_s']:.2f}",
                "end": f"{e['end_s']:.2f}",
                "duration": f"{e['duration_s']:.2f}",
                "states": ", ".join(e.get("ca_states") or []),
                "modes": ", ".join(e.get("cc_modes") or []),
                "cwnd": f"{e['cwnd_min']} / {e['cwnd_median']:g}",
                "ssthresh": "infinite" if ssth is None or ssth >= 2147483647 else f"{ssth:g}",
                "goodput": format_rate(e.get("goodput_median_bps")),
                "fair": format_rate(e.get("fair_share_bps")) if e.get("fair_share_bps") is not None else "",
                "bbr": format_rate(e.get("bbr_bw_median_bps")) if e.get("bbr_bw_median_bps") is not None else "",
            }
        )
    return rows


def render_report(
    summary: Mapping[str, Any],
    plots: Sequence[Plot] = (),
    *,
    config: Mapping[str, Any] | None = None,
    counters: str = "",
    scenario_yaml: str = "",
    tool_texts: Mapping[str, str] | None = None,
    apps: Sequence[Mapping[str, Any]] = (),
    collapsed: Mapping[str, str] | None = None,
    notice: Mapping[str, str] | None = None,
) -> str:
    """The HTML text of one run: its summary, the path's limits, the qdisc, NIC and CPU
    tables of the components it has, a section per application (``apps``, from
    :func:`app_sections`), the plots inline, and the tool texts of its run directory
    (``tool_texts``: file name -> text) in collapsible blocks. Flows in ``collapsed``
    (flow name -> app name) are one row per app. ``notice`` (``{"level": "bad"|"info",
    "text"}``, a result's ``notice``: a kernel run's) is a box under the title, red when bad."""
    return _template(_TEMPLATE).render(
        s=summary,
        notice=notice,
        apps=list(apps),
        qdiscs=_qdisc_rows(summary),
        nics=_nic_rows(summary),
        cpus=_cpu_rows(summary),
        tool_texts=sorted((tool_texts or {}).items()),
        flows=_flow_rows(summary, config, collapsed),
        stuck=_stuck_rows(summary),
        plots=_figures(plots),
        style=_STYLE,
        **_config_text(config),
        counters=counters,
        scenario_yaml=scenario_yaml,
    )


#: The largest engine configuration (JSON characters) the report embeds; a larger one (a
#: broadcast of 10,000 connections per sender: tens of MB) is left to scenario.resolved.json.
REPORT_MAX_CONFIG_CHARS = 200_000


def _config_text(config: Mapping[str, Any] | None) -> dict[str, str]:
    """The report's engine configuration: its JSON, or a note pointing to the run directory's
    scenario.resolved.json when it is larger than REPORT_MAX_CONFIG_CHARS.

    The size is first measured compact, with json's C encoder: an indented text is never
    shorter, and the indenting encoder is pure Python (a 40 MB configuration took seconds
    only to be dropped)."""
    if not config:
        return {"config_json": "", "config_note": ""}
    compact = json.dumps(config, separators=(",", ":"))
    text = json.dumps(config, indent=1) if len(compact) <= REPORT_MAX_CONFIG_CHARS else compact
    if len(text) <= REPORT_MAX_CONFIG_CHARS:
        return {"config_json": text, "config_note": ""}
    note = (
        f"Engine configuration: {len(text) / 1e6:.1f} MB, not embedded here; it is the run "
        "directory's scenario.resolved.json (the scenario as run is above)."
    )
    return {"config_json": "", "config_note": note}


def write_report(result: Result, path: Path, plots: Sequence[Plot] = ()) -> Path:
    """Write one run's self-contained report.html."""
    scenario_yaml = result.scenario_yaml()
    from tcplab.results.apps import collapsed_flows
    from tcplab.views.apps import app_plot_files

    sections = app_sections(result, plots)
    in_sections = set(app_plot_files(result).values())  # drawn in their app's section
    text = render_report(
        result.summary,
        [p for p in plots if p.filename not in in_sections],
        apps=sections,
        collapsed=collapsed_flows(result.apps),
        config=result.config,
        counters=result.nstat_text(),
        scenario_yaml=scenario_yaml,
        tool_texts=result.stats_files(),
        notice=getattr(result, "notice", None),
    )
    path.write_text(text, encoding="utf-8")
    return path


def _path_rows(results: Mapping[str, Result], columns: Sequence[str]) -> list[tuple[str, list[str]]]:
    """The first flow's payload ceiling and base RTT of each column ("-" for a variant that
    did not run)."""
    from tcplab.results.paths import flow_paths

    ceiling, base = [], []
    for label in columns:
        r = results.get(label)
        first = None
        if r is not None and r.config["flows"]:
            first = flow_paths(r.config).get(r.config["flows"][0]["name"])
        ceiling.append(sig(first.payload_ceiling_bps / 1e6) if first else "-")
        base.append(_fixed(first.base_rtt_s, 1e3, 1) if first else "-")
    return [("payload ceiling (Mbit/s)", ceiling), ("base RTT (ms)", base)]


def render_compare_report(
    title: str,
    description: str,
    table: Any,
    variants: list[str],
    plots: Sequence[Plot] = (),
    results: Mapping[str, Result] | None = None,
) -> str:
    """The HTML text of a comparison: the metric table (rounded), the path's limits of each
    variant, and the plots inline."""
    rows = []
    for metric, values in table.iterrows():
        rows.append({"metric": metric, "values": [format_metric(str(metric), v) for v in values]})
    if results:
        for metric, cells in _path_rows(results, [str(c) for c in table.columns]):
            rows.append({"metric": metric, "values": cells})
    return _template(_COMPARE_TEMPLATE).render(
        title=title,
        description=description,
        columns=list(table.columns),
        rows=rows,
        variants=variants,
        plots=_figures(plots),
        style=_STYLE,
    )


def write_compare_report(
    directory: Path,
    results: Mapping[str, Result],
    table: Any,
    variants: list[str],
    title: str,
    description: str,
    *,
    plots: bool = True,
    per_variant: int = 2,
) -> Path:
    """DIR/compare.png (if ``plots``) and DIR/report.html with compare.png, each app's
    latency CDFs of the variants overlaid (:func:`tcplab.views.apps.compare_app_plots`,
    inline only) and the first ``per_variant`` flow figures of each variant (read from
    ``DIR/<variant>/plots``, written by the run views) inline."""
    from tcplab.views.plots import compare_plot

    figures: list[Plot] = []
    if plots:
        from tcplab.views.apps import compare_app_plots

        cmp = compare_plot(results)
        (directory / "compare.png").write_bytes(cmp.png)
        figures.append(cmp)
        # the apps' own answer (which variant serves requests faster): latency CDFs overlaid
        figures.extend(compare_app_plots(results))
        for label in variants:
            for number in range(per_variant):
                png = directory / label / "plots" / f"flow-{number}.png"
                if png.is_file():
                    flow = results[label].config["flows"][number]
                    figures.append(
                        Plot(
                            png.name,
                            f"{label}: mechanism of flow {number} ({flow['name']}, {flow['cc']})",
                            png.read_bytes(),
                        )
                    )
    path = directory / "report.html"
    path.write_text(render_compare_report(title, description, table, variants, figures, results), encoding="utf-8")
    return path

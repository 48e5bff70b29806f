"""``tcplab validate``'s output: the simulator beside the kernel, written atomically.

The model. :func:`write_validation` writes the validation directory through
:func:`tcplab.results.rundir.write_dir_atomically` (marker kind ``validate``; ``--force``
replaces only a directory ``tcplab validate`` wrote)::

    OUT/report.html      self-contained (plots as data: URIs, no script, nothing from elsewhere):
                         the header (scenario, kernel release and HZ, machine, when), the
                         verdict line, how each flow was measured (the same window in both
                         worlds, from each one's first byte: tcplab.kernel.window), the verdict
                         table (per flow: goodput and srtt p50/p99 in that window,
                         retransmissions, and with ECN the sockets' ss -tio words; per link:
                         queue drops, and CE marks where a queue marks; per receiving host
                         of an ECN flow: ECT(0) and CE packets in; each with both values, the
                         difference, the tolerance, the verdict and its reason), the overlays,
                         and links to both run directories
    OUT/report.md        the same in Markdown, figures as links to plots/
    OUT/validation.json  the machine-readable record (:meth:`Validation.to_json`)
    OUT/plots/           flow-N-overlay.png: per flow (at most MAX_FLOW_FIGURES), simulator and
                         kernel on the same axes over time: cwnd, srtt, delivery rate and goodput
                         (1 s average), the steady part's start marked; queues-overlay.png: the
                         backlog of the flows' bottleneck queues and of every queue that dropped
    OUT/sim/             the simulation's run directory (its own report.html)
    OUT/kernel/          the kernel run's run directory (its own report.html, kernel.json)

Colours: the simulator is blue (C0), the kernel orange (C1), everywhere. A time-series column
the kernel could not measure (``kernel.unknown_columns``: ss does not print it) is drawn for
the simulator only, and the caption says so.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
import numpy as np

from tcplab.views.drawing import Plot
from tcplab.views.drawing import figure as _figure
from tcplab.views.drawing import legend_outside as _legend
from tcplab.views.drawing import png_bytes as _png
from tcplab.views.drawing import style_axes as _style
from tcplab.views.drawing import trailing_mean as _smooth
from tcplab.views.plots import MAX_FLOW_FIGURES, _flow_order, _rows, _rtt_ms, bottleneck_queues
from tcplab.views.report import _STYLE, data_uri, sig

if TYPE_CHECKING:
    from tcplab.kernel.verdicts import MetricRow, Validation
    from tcplab.results import Result

__all__ = [
    "write_validation",
    "validation_plots",
    "validation_markdown",
    "validation_html",
    "ecn_state_words",
    "VALIDATE_FILES",
]

#: Files of a validation directory besides plots/, sim/ and kernel/.
VALIDATE_FILES = ("report.html", "report.md", "validation.json")

SIM_COLOR = "C0"
KERNEL_COLOR = "C1"
#: Queue panels drawn at most.
MAX_QUEUE_PANELS = 4


def write_validation(
    v: Validation,
    sim: Result | Sequence[Result],
    kern: Result | None | Sequence[Result | None],
    out: Path,
    *,
    overwrite: bool = False,
    plots: bool = True,
) -> Path:
    """Write the validation directory (module doc) atomically; returns its path. With lists
    (``--runs N`` > 1) every run goes to ``sim/run-K`` and ``kernel/run-K`` (a failed kernel
    run, None, has no directory)."""
    from tcplab.results.rundir import write_dir_atomically, write_marker

    sims = list(sim) if isinstance(sim, Sequence) else [sim]
    kerns = list(kern) if isinstance(kern, Sequence) else [kern]
    repeated = isinstance(sim, Sequence)

    def fill(tmp: Path) -> None:
        write_marker(tmp, "validate")
        if not repeated:
            (tmp / "sim").mkdir()
            sims[0]._write_files(tmp / "sim", plots=plots)
            v.sim_dir = "sim"
            if kerns[0] is not None:
                (tmp / "kernel").mkdir()
                kerns[0]._write_files(tmp / "kernel", plots=plots)
                v.kernel_dir = "kernel"
            else:
                v.kernel_dir = None
        else:
            v.sim_dirs, v.kernel_dirs = [], []
            for k, r in enumerate(sims):
                (tmp / "sim" / f"run-{k + 1}").mkdir(parents=True)
                r._write_files(tmp / "sim" / f"run-{k + 1}", plots=plots)
                v.sim_dirs.append(f"sim/run-{k + 1}")
            for k, r in enumerate(kerns):
                if r is None:
                    continue
                (tmp / "kernel" / f"run-{k + 1}").mkdir(parents=True)
                r._write_files(tmp / "kernel" / f"run-{k + 1}", plots=plots)
                v.kernel_dirs.append(f"kernel/run-{k + 1}")
            v.sim_dir = v.sim_dirs[0]
            first = v.valid_kernel_runs[0] if v.valid_kernel_runs else None
            v.kernel_dir = f"kernel/run-{first}" if first else (v.kernel_dirs[0] if v.kernel_dirs else None)
        drawn = [kerns[i - 1] for i in v.valid_kernel_runs] if repeated else kerns
        drawn = [k for k in drawn if k is not None] or [k for k in kerns if k is not None]
        rendered = validation_plots(sims, drawn, v.steady, getattr(v, "windows", None)) if drawn else []
        if rendered:
            (tmp / "plots").mkdir()
            for p in rendered:
                (tmp / "plots" / p.filename).write_bytes(p.png)
        (tmp / "validation.json").write_text(
            json.dumps(v.to_json(), indent=2, allow_nan=False) + "\n", encoding="utf-8"
        )
        (tmp / "report.md").write_text(validation_markdown(v, rendered), encoding="utf-8")
        (tmp / "report.html").write_text(validation_html(v, rendered), encoding="utf-8")

    return write_dir_atomically(out, fill, overwrite=overwrite)


# -- plots ------------------------------------------------------------------------------


def _unknown(result: Result) -> set[str]:
    """The time-series columns a run could not measure (a kernel run's ss does not show
    them): its ``unknown_columns``, or its summary's ``kernel.unknown_columns`` (a kernel run
    directory read back)."""
    cols: set[str] = set()
    for source in (getattr(result, "unknown_columns", None), (result.summary or {}).get("kernel")):
        if isinstance(source, Mapping):
            source = source.get("unknown_columns")
        if isinstance(source, (list, tuple, set, frozenset)):
            cols.update(str(c) for c in source)
    return cols


def _runs_lines(results: Sequence[Result]) -> list[tuple[Result, float, float, bool]]:
    """(result, linewidth, alpha, labelled) per run: the first run as a full line, the
    others (``--runs N``) as thin, lighter lines of the same colour."""
    return [(r, 1.1 if i == 0 else 0.6, 1.0 if i == 0 else 0.45, i == 0) for i, r in enumerate(results)]


def _overlay_plot(
    sims: Sequence[Result],
    kerns: Sequence[Result],
    number: int,
    name: str,
    window: tuple[float, float] | None,
    kernel_from: float | None = None,
) -> Plot:
    unknown = set().union(*(_unknown(k) for k in kerns))
    fig = _figure(height=11.0)
    axes = fig.subplots(4, 1, sharex=True)
    panels = [
        ("cwnd", "cwnd (packets)", "congestion window", lambda r: r["cwnd"].to_numpy(dtype=np.float64)),
        ("srtt_us", "srtt (ms)", "smoothed RTT (ss rtt:)", lambda r: _rtt_ms(r, "srtt_us")),
        (
            "delivery_rate_bps",
            "Mbit/s",
            "delivery rate (ss delivery_rate)",
            lambda r: r["delivery_rate_bps"].to_numpy(dtype=np.float64) / 1e6,
        ),
        (
            "goodput_bps",
            "Mbit/s (1 s avg)",
            "goodput (bytes received)",
            lambda r: _smooth(r["t_s"].to_numpy(), r["goodput_bps"].to_numpy(dtype=np.float64)) / 1e6,
        ),
    ]
    skipped = []
    end = max(r.duration_s for r in [*sims, *kerns])
    for ax, (column, ylabel, title, values) in zip(axes, panels, strict=True):
        for label, results, color in (("simulator", sims, SIM_COLOR), ("kernel", kerns, KERNEL_COLOR)):
            if results is kerns and column in unknown:
                skipped.append(column)
                continue
            for result, width, alpha, first in _runs_lines(results):
                rows = _rows(result, name)
                if rows.empty:
                    continue
                ax.plot(
                    rows["t_s"].to_numpy(),
                    values(rows),
                    color=color,
                    linewidth=width,
                    alpha=alpha,
                    label=label if first else None,
                )
        if window is not None:
            ax.axvline(window[0], color="0.4", linestyle=":", linewidth=1.0, label="steady part from")
        if kernel_from is not None and (window is None or abs(kernel_from - window[0]) > 1e-6):
            ax.axvline(kernel_from, color=KERNEL_COLOR, linestyle=":", linewidth=1.0, label="kernel's steady part from")
        _style(ax, ylabel, title if ax is not axes[0] else f"flow {number}: {name} - {title}", xlabel="", xmax=end)
        _legend(ax)
    axes[-1].set_xlabel("Time (s)")
    caption = (
        f"Flow {number} ({name}): simulator (blue) and kernel (orange) over time: cwnd, smoothed RTT, "
        "delivery rate and goodput (1 s average); the dotted line is where the window the goodput and the RTT "
        "percentiles cover starts (an orange one: the kernel's, when its first byte came later)"
    )
    if len(sims) > 1 or len(kerns) > 1:
        caption += f"; {len(sims)} simulated and {len(kerns)} kernel runs, the first of each drawn thicker"
    if skipped:
        caption += f"; the kernel's {', '.join(sorted(set(skipped)))} could not be measured (not drawn)"
    return Plot(f"flow-{number}-overlay.png", caption, _png(fig))


def _queue_links(sim: Result, kerns: Sequence[Result]) -> list[int]:
    links = list(bottleneck_queues(sim))
    for result in (sim, *kerns):
        for i, d in enumerate(result.links["drops"].to_numpy() if "drops" in result.links else []):
            if d and d > 0 and i not in links:
                links.append(i)
    return links[:MAX_QUEUE_PANELS]


def _queue_plot(sims: Sequence[Result], kerns: Sequence[Result]) -> Plot | None:
    sim = sims[0]
    links = _queue_links(sim, kerns)
    if not links:
        return None
    fig = _figure(height=2.8 * len(links) + 0.6)
    axes = fig.subplots(len(links), 1, sharex=True, squeeze=False)[:, 0]
    end = max(r.duration_s for r in [*sims, *kerns])
    names = [str(link["name"]) for link in sim.config["links"]]
    for ax, index in zip(axes, links, strict=True):
        for label, results, color in (("simulator", sims, SIM_COLOR), ("kernel", kerns, KERNEL_COLOR)):
            for result, width, alpha, first in _runs_lines(results):
                q = result.queues
                rows = q[q["link"] == index].sort_values("t_ns")
                if rows.empty:
                    continue
                ax.step(
                    rows["t_s"].to_numpy(),
                    rows["backlog_packets"].to_numpy(dtype=np.float64),
                    where="post",
                    color=color,
                    linewidth=width * 0.9,
                    alpha=alpha,
                    label=label if first else None,
                )
        _style(
            ax, "backlog (packets)", f"queue of {names[index] if index < len(names) else index}", xlabel="", xmax=end
        )
        _legend(ax)
    axes[-1].set_xlabel("Time (s)")
    caption = (
        "Queue backlog (packets) of the flows' bottleneck links and of every link that dropped: "
        "simulator (blue) and kernel (orange; tc -s qdisc backlog of the link's egress root qdisc)"
    )
    if len(sims) > 1 or len(kerns) > 1:
        caption += f"; {len(sims)} simulated and {len(kerns)} kernel runs, the first of each drawn thicker"
    return Plot("queues-overlay.png", caption, _png(fig))


def validation_plots(
    sim: Result | Sequence[Result],
    kern: Result | Sequence[Result],
    steady: Mapping[str, tuple[float, float]] | None = None,
    windows: Mapping[str, Any] | None = None,
) -> list[Plot]:
    """The overlays: one per flow (scenario order, at most MAX_FLOW_FIGURES), then the queues.
    Lists (``--runs N``): every run, the first of each world drawn thicker. ``steady``: per
    flow, the steady part the RTT percentiles cover (:attr:`Validation.steady`: its start
    is marked)."""
    steady = steady or {}
    sims = list(sim) if isinstance(sim, Sequence) else [sim]
    kerns = list(kern) if isinstance(kern, Sequence) else [kern]
    out = []
    present = set().union(*(set(r.timeseries["flow_name"]) for r in [*sims, *kerns]))
    for number, name in enumerate(_flow_order(sims[0])[:MAX_FLOW_FIGURES]):
        if name in present:
            w = (windows or {}).get(name)
            kernel_from = w.span_s["kernel"][0] if w is not None and w.steady else None
            out.append(_overlay_plot(sims, kerns, number, name, steady.get(name), kernel_from))
    q = _queue_plot(sims, kerns)
    if q is not None:
        out.append(q)
    return out


# -- tables -----------------------------------------------------------------------------


def _cell(metric: str, value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    if metric == "goodput_bps":
        return f"{sig(value / 1e6)} Mbit/s"
    if metric.startswith("rtt_"):
        return f"{value:.1f} ms"
    if metric == "retrans_pct":
        return f"{value:.2f} %"
    if metric == "ecn_state":
        return ecn_state_words(value)
    return f"{value:.0f}"


#: ``ecn_state``'s code (tcplab.kernel.verdicts.ECN_STATE_BITS; a view may not import the
#: kernel package): bit -> (socket, ss word).
_ECN_STATE_BITS = {1: ("sender", "ecn"), 2: ("sender", "ecnseen"), 4: ("receiver", "ecn"), 8: ("receiver", "ecnseen")}


def ecn_state_words(code: float) -> str:
    """``ecn / ecn ecnseen``: what ss -tio prints of ECN on the data sender's socket, then on
    the receiver's (``-``: nothing); a mean over runs that differ as a number."""
    if not float(code).is_integer() or not 0 <= code < 16:
        return f"{code:.2f} (runs differ)"
    words: dict[str, list[str]] = {"sender": [], "receiver": []}
    for bit, (sock, word) in _ECN_STATE_BITS.items():
        if int(code) & bit:
            words[sock].append(word)
    return " / ".join(" ".join(words[sock]) or "-" for sock in ("sender", "receiver"))


def _difference(r: MetricRow) -> str:
    if r.difference is None:
        return "-"
    if r.metric == "ecn_state":  # a code: equal or not
        return "equal" if r.difference == 0 else "differs"
    if r.metric == "goodput_bps":
        d = f"{r.difference / 1e6:+.3g} Mbit/s"
    elif r.metric.startswith("rtt_"):
        d = f"{r.difference:+.1f} ms"
    elif r.metric == "retrans_pct":
        d = f"{r.difference:+.2f} pp"
    else:
        d = f"{r.difference:+.0f}"
    if r.relative is not None:
        d += f" ({r.relative * 100:+.1f} %)"
    return d


def _stats_cell(metric: str, mean: float | None, stats: dict | None) -> str:
    """``4.58 ± 0.12 Mbit/s`` (mean ± sd over the runs) or, for one run, the value."""
    if stats is None or mean is None or stats.get("sd") is None or metric == "ecn_state":
        return _cell(metric, mean)  # (a code: the words, or "runs differ", not a spread)
    text = _cell(metric, mean)
    sd = _cell(metric, stats["sd"])
    number, _, unit = text.partition(" ")
    sd_number = sd.partition(" ")[0]
    return f"{number} ± {sd_number}" + (f" {unit}" if unit else "")


def _runs_cell(metric: str, stats: dict | None) -> str:
    """The runs' values in run order (``-``: that run has none), unit once at the end."""
    if stats is None:
        return "-"
    cells = [_cell(metric, x) for x in stats.get("values") or []]
    if metric == "ecn_state":
        return ", ".join(cells)
    units = {c.partition(" ")[2] for c in cells if c != "-"}
    if len(units) == 1 and (unit := next(iter(units))):
        return ", ".join(c.partition(" ")[0] for c in cells) + f" {unit}"
    return ", ".join(cells)


def table_rows(v: Validation) -> list[dict[str, str]]:
    """The verdict table as text cells (the CLI, the report and report.md print these);
    with ``--runs N`` the simulator/kernel cells are mean ± sd and ``sim_runs`` /
    ``kernel_runs`` list the runs' values."""
    return [
        {
            "subject": r.subject,
            "kind": r.kind,
            "metric": r.label,
            "sim": _stats_cell(r.metric, r.sim, r.sim_stats),
            "kernel": _stats_cell(r.metric, r.kernel, r.kernel_stats),
            "sim_runs": _runs_cell(r.metric, r.sim_stats),
            "kernel_runs": _runs_cell(r.metric, r.kernel_stats),
            "difference": _difference(r),
            "tolerance": r.tolerance,
            "verdict": r.verdict,
            "reason": r.reason,
        }
        for r in v.rows
    ]


def _pair(pair: dict[str, float | None]) -> str:
    def one(x: float | None) -> str:
        return "-" if x is None else f"{x:.0f}"

    return f"{one(pair.get('sim'))} / {one(pair.get('kernel'))}"


def path_rows(v: Validation) -> list[dict[str, str]]:
    """The "what the path did" table: per link, simulator / kernel counts."""
    return [
        {
            "link": p["link"],
            "sent": _pair(p["sent_packets"]),
            "drops": _pair(p["drops"]),
            "loss": _pair(p["loss_drops"]),
        }
        for p in v.path
    ]


def _header(v: Validation) -> dict[str, str]:
    from tcplab.version import __version__

    k = v.kernel
    release = k.get("release") or ("(a simulation standing in for the kernel)" if k.get("kind") != "kernel" else "?")
    hz = k.get("hz")
    m = v.machine
    machine = ", ".join(
        str(x)
        for x in (
            m.get("hostname"),
            m.get("system"),
            f"{m['cpus']} CPUs" if m.get("cpus") else None,
            m.get("cpu_model"),
        )
        if x
    )
    return {
        "scenario": v.title,
        "kernel": f"Linux {release}" + (f", HZ={hz}" if hz else "") if k.get("release") else release,
        "machine": machine or "-",
        "when": v.when or "-",
        "tcplab": __version__,
        "tolerances": v.tolerances.spec(),
    }


def _steady_text(v: Validation) -> str:
    """How the goodput and the srtt percentiles were measured: the window of each flow, in
    both worlds (:mod:`tcplab.kernel.window`)."""
    windows = getattr(v, "windows", None) or {}
    if not windows:
        if not v.steady:
            return "no flow had a steady part (the run is too short)"
        spans = ", ".join(f"{n} {a:g}-{b:g} s" for n, (a, b) in v.steady.items())
        return f"srtt percentiles over the steady part: {spans}"
    steady = [w for w in windows.values() if w.steady]
    head = (
        "goodput and srtt percentiles over the same window in both worlds: from each world's own first byte "
        "(the first sample with data received) plus a warm-up of max(2 s, 20 % of the run), the same length in both"
    )
    if not steady:
        head = (
            "goodput from each world's own first byte over the same length in both (the run is too short for a "
            "warm-up of max(2 s, 20 % of the run): no srtt percentiles)"
        )
    lengths = {f"{w.length_s:.2f}" for w in windows.values()}
    spans = "; ".join(w.text() for w in windows.values())
    length = f"{next(iter(lengths))} s" if len(lengths) == 1 else "per flow"
    return f"{head} ({length}): {spans}"


def _busy_lines(v: Validation) -> list[str]:
    """An invalid run the machine's load caused: how busy, how to rerun; the retried runs."""
    out = []
    busy = v.busy_line() if hasattr(v, "busy_line") else None
    if busy:
        out.append(f"how busy: {busy}")
        out.append(f"{v.rerun_hint()}")
    out.extend(f"retried: {line}" for line in getattr(v, "retried", []) or [])
    return out


def _runs_lines_text(v: Validation) -> list[str]:
    """With ``--runs N``: how many runs, the seeds, the rule, the kernel runs counted."""
    if v.runs <= 1:
        return []

    seeds = ", ".join(str(x) for x in v.seeds) if v.seeds else "-"
    counted = ", ".join(f"run-{i}" for i in v.valid_kernel_runs) or "none"
    return [
        f"runs: {v.runs} of each world; simulation seeds {seeds}; kernel runs counted: {counted}",
        f"verdict rule: {v.repeat_rule}",
    ]


def _md_cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def validation_markdown(v: Validation, plots: Sequence[Plot] = ()) -> str:
    """report.md."""
    h = _header(v)
    lines = [
        f"# tcplab validate: {h['scenario']}",
        "",
        f"- kernel: {h['kernel']}",
        f"- machine: {h['machine']}",
        f"- when: {h['when']} (tcplab {h['tcplab']})",
        f"- tolerances: `{h['tolerances']}`",
        f"- {_steady_text(v)}",
        *[f"- {line}" for line in _runs_lines_text(v)],
        *[f"- note: {n}" for n in v.notes],
        "",
        f"**{v.verdict_line()}**",
        *([""] + [f"- {line}" for line in _busy_lines(v)] if _busy_lines(v) else []),
        "",
    ]
    keys = ["subject", "metric", "sim", "kernel", "difference", "tolerance", "verdict", "reason"]
    if v.runs > 1:
        keys[4:4] = ["sim_runs", "kernel_runs"]
        lines += [
            "| flow / link | metric | simulator mean ± sd | kernel mean ± sd | simulator runs | kernel runs "
            "| difference of means | tolerance | verdict | reason |",
            "|---|---|--:|--:|--:|--:|--:|---|---|---|",
        ]
    else:
        lines += [
            "| flow / link | metric | simulator | kernel | difference | tolerance | verdict | reason |",
            "|---|---|--:|--:|--:|---|---|---|",
        ]
    for r in table_rows(v):
        lines.append("| " + " | ".join(_md_cell(r[k]) for k in keys) + " |")
    lines.append("")
    if v.path:
        lines += [
            "What the path did (simulator / kernel, not judged"
            + ("; means over the runs counted):" if v.runs > 1 else "):"),
            "",
            "| link | sent packets | queue drops | loss drops |",
            "|---|--:|--:|--:|",
        ]
        lines += [f"| {_md_cell(r['link'])} | {r['sent']} | {r['drops']} | {r['loss']} |" for r in path_rows(v)]
        lines.append("")
    for p in plots:
        lines += [f"![{_md_cell(p.caption)}](plots/{p.filename})", "", f"*{p.caption}*", ""]
    departures = [str(d) for d in v.kernel.get("departures") or []]
    if departures:
        lines += ["## Where the kernel's path departs from the simulated one", ""]
        lines += [f"- {_md_cell(d)}" for d in departures]
        lines.append("")
    lines.append("## Run directories")
    lines.append("")
    if v.runs > 1:
        lines += [f"- simulation: [{d}/]({d}/report.html)" for d in v.sim_dirs]
        lines += [f"- kernel: [{d}/]({d}/report.html)" for d in v.kernel_dirs]
    elif v.sim_dir:
        lines.append(f"- simulation: [{v.sim_dir}/]({v.sim_dir}/report.html)")
    if v.kernel_dir and v.runs == 1:
        lines.append(f"- kernel: [{v.kernel_dir}/]({v.kernel_dir}/report.html)")
    lines.append("")
    return "\n".join(lines)


_ENV = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
#: each template compiled once per process, not once per page (a quick replay writes ~150)
_template = functools.cache(_ENV.from_string)

_TEMPLATE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>tcplab validate: {{ h.scenario }}</title>
<style>{{ style }}
 td.within { color: #186a18; font-weight: bold; } td.outside { color: #a01010; font-weight: bold; }
 td.na { color: #777; } td.inconclusive { color: #8a6d00; font-weight: bold; }
 p.invalid { color: #a01010; font-weight: bold; font-size: 1.1em; }
 table.v td { white-space: nowrap; } table.v td.x { white-space: normal; min-width: 24em; }
</style>
</head>
<body>
<h1>tcplab validate: {{ h.scenario }}</h1>
<p>The same scenario in tcplab's simulator and on this machine's Linux kernel (network
namespaces, the kernel's own TCP), and whether each metric of the simulator is within
tolerance of the kernel's.</p>
<table>
<tr><th class="l">kernel</th><td class="l">{{ h.kernel }}</td></tr>
<tr><th class="l">machine</th><td class="l">{{ h.machine }}</td></tr>
<tr><th class="l">when</th><td class="l">{{ h.when }} (tcplab {{ h.tcplab }})</td></tr>
<tr><th class="l">tolerances</th><td class="l"><code>{{ h.tolerances }}</code></td></tr>
{% for line in runs_text %}
<tr><th class="l">{{ "runs" if loop.first else "verdict rule" }}</th>
<td class="l">{{ line.split(": ", 1)[1] }}</td></tr>
{% endfor %}
</table>
{% if not valid %}
<p class="invalid">{{ verdict }}</p>
<p class="note">The kernel run is marked invalid: no verdicts are given (its figures are shown for reference only).</p>
{% else %}
<p><b>{{ verdict }}</b></p>
{% endif %}
{% for line in busy %}<p class="note">{{ line }}</p>
{% endfor %}
{% for n in notes %}<p class="note"><b>Note:</b> {{ n }}.</p>
{% endfor %}
<p class="note">{{ steady }}. Differences are simulator minus kernel; relative ones are of the kernel's value.</p>
<table class="v">
{% if repeated %}
<tr><th class="l">flow / link</th><th class="l">metric</th><th>simulator mean ± sd</th><th>kernel mean ± sd</th>
<th>simulator runs</th><th>kernel runs</th><th>difference of means</th>
<th class="l">tolerance</th><th class="l">verdict</th><th class="l">reason</th></tr>
{% else %}
<tr><th class="l">flow / link</th><th class="l">metric</th><th>simulator</th><th>kernel</th><th>difference</th>
<th class="l">tolerance</th><th class="l">verdict</th><th class="l">reason</th></tr>
{% endif %}
{% for r in rows %}
<tr><td class="l">{{ r.subject }}</td><td class="l">{{ r.metric }}</td><td>{{ r.sim }}</td><td>{{ r.kernel }}</td>
{% if repeated %}<td>{{ r.sim_runs }}</td><td>{{ r.kernel_runs }}</td>{% endif %}
<td>{{ r.difference }}</td><td class="l">{{ r.tolerance }}</td>
<td class="l {{ 'na' if r.verdict == 'n/a' else r.verdict.split(' ')[0] }}">{{ r.verdict }}</td>
<td class="x">{{ r.reason }}</td></tr>
{% endfor %}
</table>
{% if path %}
<h2>What the path did</h2>
<p class="note">Per one-way link, simulator / kernel, not judged: packets its egress qdisc sent, its queue
drops, and the random-loss drops after the queue (the loss model; nft on the kernel's wire). The same loss
rate drops about the same share of the packets in both worlds.
{% if repeated %}Means over the runs counted.{% endif %}</p>
<table class="v">
<tr><th class="l">link</th><th>sent packets</th><th>queue drops</th><th>loss drops</th></tr>
{% for p in path %}
<tr><td class="l">{{ p.link }}</td><td>{{ p.sent }}</td><td>{{ p.drops }}</td><td>{{ p.loss }}</td></tr>
{% endfor %}
</table>
{% endif %}
{% if departures %}
<h2>Where the kernel's path departs from the simulated one</h2>
<p class="note">As kernel mode built it (kernel/kernel.json <code>departures</code>;
docs/kernel-pin.md, Kernel mode).</p>
<ul>
{% for d in departures %}<li>{{ d }}</li>
{% endfor %}
</ul>
{% endif %}
<h2>Run directories</h2>
<ul>
{% if repeated %}
{% for d in sim_dirs %}<li>simulation: <a href="{{ d }}/report.html">{{ d }}/report.html</a></li>
{% endfor %}
{% for d in kernel_dirs %}<li>kernel: <a href="{{ d }}/report.html">{{ d }}/report.html</a></li>
{% endfor %}
{% else %}
{% if sim_dir %}<li>simulation: <a href="{{ sim_dir }}/report.html">{{ sim_dir }}/report.html</a></li>{% endif %}
{% if kernel_dir %}<li>kernel: <a href="{{ kernel_dir }}/report.html">{{ kernel_dir }}/report.html</a></li>{% endif %}
{% endif %}
</ul>
<h2>Over time</h2>
{% for p in figures %}
<figure><img src="{{ p.uri }}" alt="{{ p.caption }}"><figcaption>{{ p.caption }}</figcaption></figure>
{% endfor %}
</body>
</html>
"""


def validation_html(v: Validation, plots: Sequence[Plot] = ()) -> str:
    """report.html (self-contained)."""
    return _template(_TEMPLATE).render(
        h=_header(v),
        style=_STYLE,
        valid=v.valid,
        verdict=v.verdict_line(),
        steady=_steady_text(v),
        rows=table_rows(v),
        sim_dir=v.sim_dir,
        kernel_dir=v.kernel_dir,
        repeated=v.runs > 1,
        runs_text=_runs_lines_text(v),
        sim_dirs=v.sim_dirs,
        kernel_dirs=v.kernel_dirs,
        path=path_rows(v),
        notes=v.notes,
        busy=_busy_lines(v),
        departures=[str(d) for d in v.kernel.get("departures") or []],
        figures=[{"uri": data_uri(p.png), "caption": p.caption} for p in plots],
    )

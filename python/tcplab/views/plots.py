"""Static plots of a run, in the shapes flent users know (``tcp_cwnd``, ``tcp_rtt``, totals),
with the path's limits drawn in, so a plot shows the mechanism and not only the result.

The model: one PNG per view, time in seconds on x, one colour per flow labelled
``name (cc)``, the unit on the y axis, legends outside the axes (they never cover data):

* ``goodput.png``: goodput (Mbit/s) from ``bytes_received`` deltas, averaged over 1 s
  (in-order delivery arrives in bursts when a loss is repaired, so per-sample goodput is
  spiky; the raw per-sample values stay in ``timeseries.parquet``); with several flows,
  also their total. A dashed line is the route's **payload ceiling**
  (:mod:`tcplab.results.paths`: the bottleneck rate x 1448/1514 on Ethernet).
* ``cwnd.png``: ``cwnd`` in packets (as Linux and ``ss`` report it, not bytes), and
  ``ssthresh`` dotted where it is set (not the initial "infinite" 0x7fffffff). A trace that
  reverses direction at most samples (BBR's cwnd over a minute at 100 ms) would draw as a
  solid band: it is drawn as its median per bin with the min..max band shaded
  (:func:`trace`), here, in compare.png and in each flow's figure (whose zoom shows every
  sample).
* ``rtt.png``: smoothed RTT ``srtt_us`` in ms (what ``ss`` prints as ``rtt:``), and the
  route's **base RTT** (propagation only) dashed.
* ``queues.png``: backlog (packets) and tail drops per sample interval of each bottleneck
  queue (the slowest link of a flow's data route) and of any queue that dropped or held
  more than one packet; the pfifo limit dashed.
* ``qdisc-backlog.png``, ``nic-rings.png``: only in runs with a tbf/fq/fq_codel qdisc or a
  NIC model (:mod:`tcplab.views.datapath`).
* ``app-NAME.png``: one per application (workload) of a plotted kind: buffers, stalls,
  profiles, latency CDFs, timeouts, burst completion (:mod:`tcplab.views.apps`).
* ``flow-N.png`` (flow N, in scenario order, at most :data:`MAX_FLOW_FIGURES`): the
  mechanism of one flow: a strip of its CA state and BBR mode with retransmission and RTO
  marks (:mod:`tcplab.views.episodes`), cwnd/ssthresh/inflight with Recovery and Loss
  shaded, pacing and delivery rate (and BBR's bandwidth estimate) with BBR's mode shaded
  and the payload ceiling, RTT with the base RTT, and a zoomed cwnd panel around the
  first loss (every sample marked, so the sampling resolution shows). On a connection
  whose app makes a request faster than every two samples (an rr transaction every 51 ms,
  sampled every 100 ms) in flight is drawn as points, and the panel says the cycle aliases
  (:func:`transaction_cycle_s`): the engine samples, it does not keep per-interval extremes.

Figures are drawn with the helpers of :mod:`tcplab.views.drawing` (matplotlib's object API
on the Agg canvas, no pyplot state, no display needed; saved without a software/date stamp
so the same data gives the same bytes).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tcplab.results.paths import FlowPath, flow_paths
from tcplab.views.apps import app_plots
from tcplab.views.datapath import datapath_plots
from tcplab.views.drawing import Plot, figure, integer_ticks, legend_outside, png_bytes, sig, style_axes, trailing_mean
from tcplab.views.episodes import entries, first_loss_s, retransmission_marks, state_spans, zoom_window

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from tcplab.results import Result

__all__ = [
    "Plot",
    "RUN_PLOTS",
    "MAX_FLOW_FIGURES",
    "run_plots",
    "write_run_plots",
    "compare_plot",
    "plot_compare",
    "bottleneck_queues",
    "cwnd_figure",
    "flow_figure",
    "trace",
    "is_dense",
    "envelope",
    "transaction_cycle_s",
]

#: The overview files of every run (the per-flow ``flow-N.png`` come after them).
RUN_PLOTS = ("goodput.png", "cwnd.png", "rtt.png", "queues.png")

#: Per-flow mechanism figures drawn at most (the first flows in scenario order).
MAX_FLOW_FIGURES = 8

#: Linux's TCP_INFINITE_SSTHRESH (include/net/tcp.h): ssthresh not set yet.
INFINITE_SSTHRESH = 0x7FFFFFFF

#: Colours of the state strip and shading (CA state as ``ss``/``tcp_ca_state`` names them;
#: BBR modes as tcp_bbr.c names them). Open and PROBE_BW are the steady states: unshaded.
CA_COLORS = {"Disorder": "#f2d16b", "CWR": "#b39ddb", "Recovery": "#f39c34", "Loss": "#d62728"}
MODE_COLORS = {"STARTUP": "#2ca02c", "DRAIN": "#17becf", "PROBE_BW": "#d9d9d9", "PROBE_RTT": "#9467bd"}
_SHADED_CA = ("Recovery", "Loss")
_SHADED_MODES = ("STARTUP", "DRAIN", "PROBE_RTT")
_RETRANS_COLOR = "#333333"  # dark: apart from the orange of Recovery
_RTO_COLOR = "#b00020"


# -- helpers -----------------------------------------------------------------------------


def _flow_order(result: Result) -> list[str]:
    return [f["name"] for f in result.config["flows"]]


def _flow_cc(result: Result) -> dict[str, str]:
    return {f["name"]: f["cc"] for f in result.config["flows"]}


def _flow_label(result: Result, name: str) -> str:
    cc = _flow_cc(result).get(name, "")
    return f"{name} ({cc})" if cc else name


#: Per result: each flow's time-series rows and its (start_s, end_s), split once (a
#: per-flow boolean mask over the whole table is quadratic: 40,000 broadcast connections
#: took minutes).
_ROWS_CACHE: weakref.WeakKeyDictionary[
    Result, tuple[dict[str, pd.DataFrame], dict[str, tuple[float, float]], pd.DataFrame]
] = weakref.WeakKeyDictionary()


def _split(result: Result) -> tuple[dict[str, pd.DataFrame], dict[str, tuple[float, float]], pd.DataFrame]:
    """Each flow's rows, each flow's (start_s, end_s), and the one empty frame of the flows
    never sampled (a broadcast's 40,000 connections: an empty slice each was seconds)."""
    cached = _ROWS_CACHE.get(result)
    if cached is None:
        ts = result.timeseries
        by_flow = {str(k): g for k, g in ts.groupby("flow_name", sort=False, observed=True)}
        fl = result.flows
        spans = {
            str(n): (float(a), float(b))
            for n, a, b in zip(fl["name"].to_numpy(), fl["start_s"].to_numpy(), fl["end_s"].to_numpy(), strict=True)
        }
        cached = (by_flow, spans, ts.iloc[0:0])
        _ROWS_CACHE[result] = cached
    return cached


def _rows(result: Result, name: str) -> pd.DataFrame:
    """The flow's samples within its lifetime (from its start to one sample past its end):
    the engine samples a flow that has not started yet (cwnd 10, BBR in STARTUP), which
    is not what it did. Flows without samples (a broadcast's connections) give no rows."""
    by_flow, spans, empty = _split(result)
    rows = by_flow.get(name)
    if rows is None:
        return empty
    span = spans.get(name)
    if span is None:
        return rows
    start, end = span
    t = rows["t_s"].to_numpy()
    return rows[(t >= start) & (t <= end + result.sample_interval_s)]


def _mbps(bps: float) -> str:
    return f"{sig(bps / 1e6, 3)} Mbit/s"


def _reference_lines(
    ax: Any, per_flow: Mapping[str, float], flows: list[str], colors: Mapping[str, str], label: Callable[[float], str]
) -> None:
    """Dashed reference line(s), such as a payload ceiling or a base RTT: one per distinct
    value, in the flow's colour when flows differ, grey when they share it. ``per_flow``
    holds each flow's value in plot units; ``label`` names a value."""
    values: dict[float, list[str]] = {}
    for name in flows:
        if name in per_flow:
            values.setdefault(round(per_flow[name], 9), []).append(name)
    for y, names in values.items():
        color = "0.35" if len(values) == 1 else colors.get(names[0], "0.35")
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        who = "" if len(values) == 1 else f" ({shown})"
        ax.axhline(y, color=color, linestyle="--", linewidth=1.0, label=f"{label(y)}{who}")


def _ceiling_lines(ax: Any, paths: Mapping[str, FlowPath], flows: list[str], colors: Mapping[str, str]) -> None:
    """Dashed payload-ceiling line(s), in Mbit/s."""
    mbps = {n: p.payload_ceiling_bps / 1e6 for n, p in paths.items()}
    _reference_lines(ax, mbps, flows, colors, lambda y: f"payload ceiling {_mbps(y * 1e6)}")


def _base_rtt_lines(ax: Any, paths: Mapping[str, FlowPath], flows: list[str], colors: Mapping[str, str]) -> None:
    """Dashed base-RTT line(s), in ms."""
    ms = {n: p.base_rtt_s * 1e3 for n, p in paths.items()}
    _reference_lines(ax, ms, flows, colors, lambda y: f"base RTT {y:.1f} ms")


def _ssthresh(rows: pd.DataFrame) -> np.ndarray:
    v = rows["ssthresh"].to_numpy(dtype=np.float64)
    return np.where(v >= INFINITE_SSTHRESH, np.nan, v)


def _rtt_ms(rows: pd.DataFrame, column: str) -> np.ndarray:
    v = rows[column].to_numpy(dtype=np.float64) / 1e3
    return np.where(v > 0, v, np.nan)


#: A trace of more samples than this whose direction reverses at more than
#: :data:`ENVELOPE_REVERSALS` of its samples (BBR's cwnd, cycling every few RTTs, sampled
#: every 100 ms for a minute: 600 samples, 70 % reversals) draws as a solid band: it is drawn
#: as its min..max per bin (shaded) and the bin's median (the line) instead.
ENVELOPE_MIN_SAMPLES = 200
ENVELOPE_REVERSALS = 0.25
#: Bins across the plotted span of an enveloped trace.
ENVELOPE_BINS = 120


def is_dense(v: np.ndarray) -> bool:
    """True when ``v`` would draw as a solid band (see :data:`ENVELOPE_MIN_SAMPLES`)."""
    finite = v[np.isfinite(v)]
    if len(finite) <= ENVELOPE_MIN_SAMPLES:
        return False
    steps = np.sign(np.diff(finite))
    steps = steps[steps != 0]
    if len(steps) < 2:
        return False
    return float((steps[1:] != steps[:-1]).mean()) > ENVELOPE_REVERSALS


def envelope(t: np.ndarray, v: np.ndarray, span: tuple[float, float], bins: int = ENVELOPE_BINS):
    """Per bin of ``span``: (bin starts, min, median, max) of the samples in it (NaN where
    a bin has none); the bin width is ``(span[1] - span[0]) / bins``."""
    lo_t, hi_t = span
    width = (hi_t - lo_t) / bins if hi_t > lo_t else 1.0
    idx = np.clip(((t - lo_t) // width).astype(np.int64), 0, bins - 1)
    starts = lo_t + width * np.arange(bins)
    mins = np.full(bins, np.nan)
    meds = np.full(bins, np.nan)
    maxs = np.full(bins, np.nan)
    ok = np.isfinite(v)
    for b in np.unique(idx[ok]):
        vals = v[ok & (idx == b)]
        mins[b], meds[b], maxs[b] = vals.min(), np.median(vals), vals.max()
    return starts, mins, meds, maxs, width


def trace(
    ax: Any, t: np.ndarray, v: np.ndarray, span: tuple[float, float], *, label: str, color: str, **style: Any
) -> bool:
    """``v`` against ``t``: a line, or, when it is dense (:func:`is_dense`), its min..max per
    bin shaded and the bin's median as the line (the label says so). True if enveloped."""
    if not is_dense(v):
        ax.plot(t, v, label=label, color=color, **style)
        return False
    starts, mins, meds, maxs, width = envelope(t, v, span)
    edges = np.append(starts, starts[-1] + width)
    ax.fill_between(edges, np.append(mins, mins[-1]), np.append(maxs, maxs[-1]), step="post", color=color,
                    alpha=0.25, linewidth=0)  # fmt: skip
    line_style = {k: v for k, v in style.items() if k not in ("marker", "markersize")}
    ax.step(edges, np.append(meds, meds[-1]), where="post", color=color,
            label=f"{label}: median per {width:.2g} s, band min..max", **line_style)  # fmt: skip
    return True


# -- the overview plots ------------------------------------------------------------------


def _goodput_plot(result: Result, paths: Mapping[str, FlowPath], colors: Mapping[str, str]) -> Plot:
    ts = result.timeseries
    fig = figure()
    ax = fig.add_subplot()
    flows = _flow_order(result)
    for name in flows:
        rows = _rows(result, name)
        if rows.empty:
            continue
        t = rows["t_s"].to_numpy()
        v = trailing_mean(t, rows["goodput_bps"].to_numpy(dtype=np.float64))
        ax.plot(t, v / 1e6, label=_flow_label(result, name), color=colors[name], linewidth=1.2)
    if ts["flow_name"].nunique() > 1:
        total = ts.groupby("t_s", sort=True)["goodput_bps"].sum(min_count=1)
        tt = total.index.to_numpy()
        total_bps = trailing_mean(tt, total.to_numpy(dtype=np.float64))
        ax.plot(tt, total_bps / 1e6, label="total", color="black", linewidth=1.0)
    _ceiling_lines(ax, paths, flows, colors)
    style_axes(ax, "Goodput (Mbit/s, 1 s average)", f"TCP goodput - {result.title}", xmax=result.duration_s)
    legend_outside(ax)
    return Plot(
        "goodput.png",
        "Goodput of each flow (1 s average) and the route's payload ceiling. In-order delivery comes in "
        "bursts when a repaired loss releases the data held behind it, so a 1 s average can pass the "
        "ceiling for a moment",
        png_bytes(fig),
    )


def _cwnd_plot(result: Result, colors: Mapping[str, str]) -> Plot:
    return Plot(
        "cwnd.png",
        "Congestion window and ssthresh of each flow, in packets (a cwnd that changes direction at most "
        "samples, as BBR's does, is drawn as its median and min..max band per bin: each flow's mechanism "
        "figure zooms into it)",
        png_bytes(cwnd_figure(result, colors)),
    )


def cwnd_figure(result: Result, colors: Mapping[str, str]) -> Figure:
    """``cwnd.png``'s figure: each flow's cwnd (enveloped when dense, :func:`trace`) and
    ssthresh."""
    fig = figure()
    ax = fig.add_subplot()
    any_ssthresh = False
    for name in _flow_order(result):
        rows = _rows(result, name)
        if rows.empty:
            continue
        t = rows["t_s"].to_numpy()
        cwnd = rows["cwnd"].to_numpy(dtype=np.float64)
        trace(ax, t, cwnd, (0.0, result.duration_s), label=_flow_label(result, name), color=colors[name], lw=1.2)
        ss = _ssthresh(rows)
        if np.isfinite(ss).any():
            any_ssthresh = True
            ax.plot(t, ss, color=colors[name], linestyle=":", linewidth=1.0)
    if any_ssthresh:
        ax.plot([], [], color="0.3", linestyle=":", label="ssthresh (dotted)")
    style_axes(ax, "cwnd (packets)", f"TCP congestion window - {result.title}", xmax=result.duration_s)
    legend_outside(ax)
    return fig


def _rtt_plot(result: Result, paths: Mapping[str, FlowPath], colors: Mapping[str, str]) -> Plot:
    fig = figure()
    ax = fig.add_subplot()
    flows = _flow_order(result)
    for name in flows:
        rows = _rows(result, name)
        if rows.empty:
            continue
        ax.plot(rows["t_s"].to_numpy(), _rtt_ms(rows, "srtt_us"), label=_flow_label(result, name), color=colors[name])
    _base_rtt_lines(ax, paths, flows, colors)
    style_axes(ax, "Smoothed RTT (ms)", f"TCP RTT - {result.title}", xmax=result.duration_s)
    legend_outside(ax)
    return Plot("rtt.png", "Smoothed RTT of each flow and the route's base (propagation) RTT", png_bytes(fig))


def _limit_packets(link: Mapping[str, Any]) -> float | None:
    """The queue limit in packets (bfifo: in full-sized 1514-byte frames), if it has one."""
    queue = link.get("queue") or {}
    if queue.get("limit_packets"):
        return float(queue["limit_packets"])
    if queue.get("limit_bytes"):
        return float(queue["limit_bytes"]) / 1514.0
    return None


def bottleneck_queues(result: Result, paths: Mapping[str, FlowPath] | None = None, limit: int = 6) -> list[int]:
    """Link indices whose queue is worth a plot: every flow's bottleneck, then any queue
    that dropped or filled to a tenth of its limit (at least 2 packets); in link order, at
    most ``limit``."""
    paths = flow_paths(result.config) if paths is None else paths
    chosen = {p.bottleneck_link for p in paths.values()}
    links = result.config["links"]
    names = [link["name"] for link in links]
    for row in result.links.to_dict("records"):
        if row["name"] not in names:
            continue
        index = names.index(row["name"])
        cap = _limit_packets(links[index]) or 0.0
        busy = (row.get("drops") or 0) > 0 or (row.get("max_backlog_packets") or 0) >= max(2.0, cap / 10.0)
        if busy:
            chosen.add(index)
    return sorted(chosen)[:limit]


def _queue_plot(result: Result, paths: Mapping[str, FlowPath]) -> Plot:
    qs = result.queues
    links = result.config["links"]
    fig = figure(height=5.5)
    backlog, drops = fig.subplots(2, 1, sharex=True, height_ratios=[3, 2])
    limits = []
    top = 1.0
    total_drops = 0
    for k, index in enumerate(bottleneck_queues(result, paths)):
        link = links[index]
        rows = qs[qs["link"] == index].sort_values("t_ns")
        color = f"C{k % 10}"
        label = f"{link['name']} ({link['queue']['kind']})"
        t = rows["t_s"].to_numpy()
        b = rows["backlog_packets"].to_numpy(dtype=np.float64)
        backlog.step(t, b, where="post", color=color, label=label)
        top = max(top, float(b.max()) if len(b) else 0.0)
        cap = _limit_packets(link)
        if cap:
            limits.append((cap, color, link["name"], float(b.max()) if len(b) else 0.0))
        d = rows["drops"].to_numpy(dtype=np.float64)
        per_sample = np.diff(d, prepend=0.0)
        total_drops += int(d[-1]) if len(d) else 0
        drops.step(
            t, per_sample, where="post", color=color, label=f"{link['name']} (total {int(d[-1]) if len(d) else 0})"
        )
    # a limit sets the scale only when its queue came near it: a 1000-packet host queue
    # that held 2 packets would flatten the bottleneck's trace
    for cap, _color, _name, peak in limits:
        if peak >= cap / 4.0:
            top = max(top, cap)
    for cap, color, name, _peak in limits:
        unit = "pkts" if float(cap).is_integer() else "full-size pkts"
        where = "" if cap <= top else " (off scale)"
        backlog.axhline(cap, color=color, linestyle="--", linewidth=0.9, label=f"{name} limit {cap:g} {unit}{where}")
    style_axes(backlog, "Backlog (packets)", f"Bottleneck queues - {result.title}", xlabel="", xmax=result.duration_s)
    backlog.set_ylim(0, top * 1.1)
    style_axes(drops, f"Tail drops per {result.sample_interval_s * 1e3:g} ms", xmax=result.duration_s)
    integer_ticks(drops.yaxis)
    if total_drops == 0:
        drops.set_ylim(0, 1)
        drops.text(0.5, 0.5, "no tail drops", transform=drops.transAxes, ha="center", va="center", color="0.4")
    legend_outside(backlog)
    legend_outside(drops)
    return Plot(
        "queues.png",
        "Backlog and tail drops of each bottleneck queue (random-loss drops are counted in the Links table)",
        png_bytes(fig),
    )


# -- the mechanism of one flow -----------------------------------------------------------


def transaction_cycle_s(result: Result, name: str) -> float | None:
    """The median time between the requests an app makes on connection ``name`` (an rr
    transaction, an NFS read, a batch write: the app's ``requests`` table), or None when
    the flow carries no such app. In flight rises and falls once per request, so a cycle
    shorter than two sample intervals cannot be seen in the samples (it aliases: a 51 ms
    cycle sampled every 100 ms reads as a slow on/off)."""
    for app in getattr(result, "apps", {}).values():
        if name not in app.flows:
            continue
        req = app.tables.get("requests")
        if req is None or "flow_name" not in req.columns or "start_s" not in req.columns:
            continue
        starts = np.sort(req.loc[req["flow_name"] == name, "start_s"].to_numpy(dtype=np.float64))
        if len(starts) >= 3:
            return float(np.median(np.diff(starts)))
    return None


def _shade(ax: Any, spans: list[Any], colors: Mapping[str, str], alpha: float) -> None:
    for s in spans:
        if s.label in colors:
            ax.axvspan(s.start_s, s.end_s, color=colors[s.label], alpha=alpha, linewidth=0)


def _strip(
    ax: Any, rows_spans: list[tuple[str, list[Any] | None, Mapping[str, str]]], retrans: Any, rtos: np.ndarray
) -> None:
    """The state strip: one row per state kind, plus a row of retransmission/RTO marks."""
    n = len(rows_spans) + 1
    labels = []
    for r, (title, spans, colors) in enumerate(rows_spans):
        y = n - 1 - r
        labels.append((y + 0.5, title))
        if spans is None:  # a column the run could not record (a kernel run's CA state: ss does not show it)
            ax.text(0.5, y + 0.5, "not recorded (ss does not show it)", transform=ax.get_yaxis_transform(),
                    ha="center", va="center", fontsize="small", color="0.4")  # fmt: skip
            continue
        bars = [(s.start_s, s.end_s - s.start_s) for s in spans if s.label in colors]
        cols = [colors[s.label] for s in spans if s.label in colors]
        if bars:
            ax.broken_barh(bars, (y + 0.1, 0.8), facecolors=cols, linewidth=0)
        elif spans:
            steady = ", ".join(dict.fromkeys(s.label for s in spans if s.label))
            ax.text(
                0.5,
                y + 0.5,
                f"{steady} throughout",
                transform=ax.get_yaxis_transform(),
                ha="center",
                va="center",
                fontsize="small",
                color="0.4",
            )
    times, segs = retrans
    if len(times):
        ax.vlines(times, 0.15, 0.85, color=_RETRANS_COLOR, linewidth=1.0)
    if len(rtos):
        ax.plot(rtos, np.full(len(rtos), 0.5), linestyle="none", marker="v", color=_RTO_COLOR, markersize=6)
    labels.append((0.5, "retrans / RTO"))
    ax.set_ylim(0, n)
    ax.set_yticks([y for y, _ in labels], [t for _, t in labels], fontsize="small")
    ax.tick_params(axis="y", length=0)
    ax.grid(True, axis="x", alpha=0.3)


def _flow_plot(result: Result, number: int, name: str, path: FlowPath | None) -> Plot:
    fig, caption = flow_figure(result, number, name, path)
    return Plot(f"flow-{number}.png", caption, png_bytes(fig))


@dataclass(frozen=True)
class _FlowMarks:
    """One flow's samples within its lifetime and the marks its figure draws on them."""

    t: np.ndarray  # sample times, s
    ca: np.ndarray  # CA state names
    cwnd: np.ndarray  # packets
    ssthresh: np.ndarray  # packets (NaN where not set)
    inflight: np.ndarray  # packets
    ca_known: bool  # False for a kernel run's series (ss does not show the CA state)
    ca_spans: list[Any]
    mode_spans: list[Any]
    has_modes: bool
    retrans: tuple[np.ndarray, np.ndarray]  # (times, segments retransmitted since the last sample)
    rtos: np.ndarray  # times the flow entered Loss
    cycle_s: float | None  # its app's request cycle (transaction_cycle_s)
    aliased: bool  # a cycle shorter than two samples: in flight is drawn as points
    span: tuple[float, float]  # the run, s
    interval_s: float  # the sample interval


def _flow_marks(result: Result, name: str, rows: pd.DataFrame) -> _FlowMarks:
    interval = result.sample_interval_s
    t = rows["t_s"].to_numpy(dtype=np.float64)
    ca = rows["ca_state_name"].to_numpy().astype(str)
    modes = rows["cc_mode_name"].to_numpy().astype(str)
    has_modes = bool((modes != "").any())
    # a kernel run's series has no CA state (ss does not show it): say so, mark no RTO
    ca_known = "ca_state" not in getattr(result, "unknown_columns", ())
    # a request/response cycle shorter than two samples aliases in the in-flight trace: draw
    # the samples as points (nothing between them is known) and say so on the panel
    cycle = transaction_cycle_s(result, name)
    return _FlowMarks(
        t=t,
        ca=ca,
        cwnd=rows["cwnd"].to_numpy(dtype=np.float64),
        ssthresh=_ssthresh(rows),
        inflight=rows["inflight"].to_numpy(dtype=np.float64),
        ca_known=ca_known,
        ca_spans=state_spans(t, ca, interval) if ca_known else [],
        mode_spans=state_spans(t, modes, interval) if has_modes else [],
        has_modes=has_modes,
        retrans=retransmission_marks(t, rows["retrans_segs"].to_numpy()),
        rtos=entries(t, ca, "Loss") if ca_known else np.array([], dtype=np.float64),
        cycle_s=cycle,
        aliased=cycle is not None and cycle < 2.0 * interval,
        span=(0.0, result.duration_s),
        interval_s=interval,
    )


def flow_figure(result: Result, number: int, name: str, path: FlowPath | None) -> tuple[Figure, str]:
    """The mechanism figure of flow ``number`` (``flow-N.png``, module doc) and its caption."""
    rows = _rows(result, name).sort_values("t_ns")
    cc = _flow_cc(result).get(name, "")
    m = _flow_marks(result, name, rows)

    fig = figure(height=13.0)
    grid = fig.add_gridspec(5, 1, height_ratios=[0.8 if m.has_modes else 0.55, 3, 2.4, 2.4, 3])
    strip = fig.add_subplot(grid[0])
    win = fig.add_subplot(grid[1], sharex=strip)
    rate = fig.add_subplot(grid[2], sharex=strip)
    rtt = fig.add_subplot(grid[3], sharex=strip)
    zoom = fig.add_subplot(grid[4])

    _strip_panel(strip, result, number, name, cc, m)
    _window_panel(win, m, mark_samples=False)
    style_axes(win, "packets", xlabel="", xmax=result.duration_s)
    win.tick_params(labelbottom=False)
    legend_outside(win)
    _rate_panel(rate, result, rows, cc, path, m)
    _rtt_panel(rtt, result, rows, path)
    _zoom_panel(zoom, result, name, rows, path, m)
    return fig, (
        f"Mechanism of flow {number}, {_flow_label(result, name)}: CA state and BBR mode, cwnd, rates, "
        f"RTT and a zoom (one point per sample: a smaller sample_interval gives a finer trace)"
    )


def _strip_panel(ax: Any, result: Result, number: int, name: str, cc: str, m: _FlowMarks) -> None:
    """The state strip (CA state, BBR mode, retransmissions and RTOs), titled, with its legend."""
    strip_rows = [("CA state", m.ca_spans if m.ca_known else None, CA_COLORS)]
    if m.has_modes:
        strip_rows.append(("BBR mode" if cc == "bbr" else "cc mode", m.mode_spans, MODE_COLORS))
    _strip(ax, strip_rows, m.retrans, m.rtos)
    ax.set_title(f"Flow {number}: {_flow_label(result, name)} - {result.title}", loc="left", fontsize="medium")
    ax.tick_params(labelbottom=False)
    present = {s.label for s in m.ca_spans} | {s.label for s in m.mode_spans}
    from matplotlib.patches import Patch

    handles = [Patch(color=c, label=k) for k, c in {**CA_COLORS, **MODE_COLORS}.items() if k in present]
    handles.append(Patch(color=_RETRANS_COLOR, label=f"retransmitted ({int(m.retrans[1].sum())} segs)"))
    if m.ca_known:
        handles.append(Patch(color=_RTO_COLOR, label=f"RTO: entered Loss ({len(m.rtos)})"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="x-small", borderaxespad=0)


def _window_panel(ax: Any, m: _FlowMarks, mark_samples: bool) -> None:
    """cwnd, ssthresh and in flight, Recovery and Loss shaded, RTOs marked: over the run
    (median and band where dense) or, ``mark_samples``, every sample marked (the zoom)."""
    t, cwnd, interval, cycle = m.t, m.cwnd, m.interval_s, m.cycle_s
    _shade(ax, m.ca_spans, {k: CA_COLORS[k] for k in _SHADED_CA}, 0.18)
    marker = {"marker": "o", "markersize": 2.5} if mark_samples else {}
    # cwnd on top: a cwnd-limited flow has in flight = cwnd, and cwnd is the trace to read
    if mark_samples:
        ax.plot(t, cwnd, color="C0", linewidth=1.2, label="cwnd", zorder=3, **marker)
    else:
        trace(ax, t, cwnd, m.span, label="cwnd", color="C0", linewidth=1.2, zorder=3)
    if np.isfinite(m.ssthresh).any():
        ax.plot(t, m.ssthresh, color="C3", linestyle=":", linewidth=1.2, label="ssthresh", zorder=2.5)
    if m.aliased:
        ax.plot(t, m.inflight, linestyle="none", marker=".", markersize=3, color="C2", zorder=2,
                label=f"in flight (samples only: the {cycle * 1e3:.3g} ms request cycle aliases)")  # fmt: skip
        if not mark_samples:  # said once, above the panel (the zoom's title says it short)
            import textwrap

            note = (
                f"In flight is sampled every {interval * 1e3:g} ms; this connection makes a request every "
                f"{cycle * 1e3:.3g} ms, faster than half the sampling: the points cannot show the cycle (any "
                "on/off pattern in them is aliasing). The app's latency figure shows each request."
            )
            ax.set_title(textwrap.fill(note, 120), loc="left", fontsize="small", color="0.25")
    elif mark_samples:
        ax.plot(t, m.inflight, color="C2", linewidth=1.6, alpha=0.6, label="in flight", zorder=2)
    else:
        trace(ax, t, m.inflight, m.span, label="in flight", color="C2", linewidth=1.6, alpha=0.6, zorder=2)
    for x in m.rtos:
        ax.axvline(x, color=_RTO_COLOR, linestyle="--", linewidth=0.9)
    if mark_samples and len(m.retrans[0]):
        at = np.isin(t, m.retrans[0])
        ax.plot(
            t[at],
            cwnd[at],
            linestyle="none",
            marker="x",
            color=_RETRANS_COLOR,
            label="retransmitted since last sample",
            zorder=4,
        )
    if any(sp.label in _SHADED_CA for sp in m.ca_spans):
        ax.plot([], [], color=_CA_PATCH, linewidth=6, alpha=0.5, label="Recovery / Loss (shaded)")


def _rate_panel(ax: Any, result: Result, rows: pd.DataFrame, cc: str, path: FlowPath | None, m: _FlowMarks) -> None:
    """Pacing and delivery rate (and BBR's bandwidth estimate), BBR's modes shaded, the
    payload ceiling dashed."""
    t = m.t
    _shade(ax, m.mode_spans, {k: MODE_COLORS[k] for k in _SHADED_MODES}, 0.22)
    pacing = rows["pacing_rate_bps"].to_numpy(dtype=np.float64) / 1e6
    delivery = rows["delivery_rate_bps"].to_numpy(dtype=np.float64) / 1e6
    ax.plot(t, np.where(pacing > 0, pacing, np.nan), color="C1", linewidth=1.0, label="pacing rate")
    ax.plot(t, np.where(delivery > 0, delivery, np.nan), color="C0", linewidth=1.0, label="delivery rate")
    if cc == "bbr":
        bw = rows["bbr_bw_bps"].to_numpy(dtype=np.float64) / 1e6
        ax.plot(t, np.where(bw > 0, bw, np.nan), color="C4", linewidth=1.2, label="BBR bw estimate")
    if path is not None:
        ceiling = path.payload_ceiling_bps / 1e6
        ax.axhline(
            ceiling,
            color="0.35",
            linestyle="--",
            linewidth=1.0,
            label=f"payload ceiling {_mbps(path.payload_ceiling_bps)}",
        )
    style_axes(ax, "Mbit/s", xlabel="", xmax=result.duration_s)
    if path is not None:
        # the first RTTs of slow start pace at 2x a tiny srtt: keep the steady state readable
        ax.set_ylim(0, min(ax.get_ylim()[1], 3.0 * path.payload_ceiling_bps / 1e6))
    ax.tick_params(labelbottom=False)
    legend_outside(ax)


def _rtt_panel(ax: Any, result: Result, rows: pd.DataFrame, path: FlowPath | None) -> None:
    """srtt and min RTT, the route's base RTT dashed."""
    t = rows["t_s"].to_numpy(dtype=np.float64)
    ax.plot(t, _rtt_ms(rows, "srtt_us"), color="C0", linewidth=1.2, label="srtt")
    ax.plot(t, _rtt_ms(rows, "min_rtt_us"), color="C2", linewidth=1.0, label="min RTT")
    if path is not None:
        ax.axhline(
            path.base_rtt_s * 1e3,
            color="0.35",
            linestyle="--",
            linewidth=1.0,
            label=f"base RTT {path.base_rtt_s * 1e3:.1f} ms",
        )
    style_axes(ax, "RTT (ms)", xmax=result.duration_s)
    legend_outside(ax)


def _zoom_panel(ax: Any, result: Result, name: str, rows: pd.DataFrame, path: FlowPath | None, m: _FlowMarks) -> None:
    """The window panel again, every sample marked, around the first loss (or the first
    seconds, or the whole flow when it is short)."""
    t, interval = m.t, m.interval_s
    flows = result.flows.set_index("name")
    start = float(flows["start_s"].get(name, 0.0)) if name in flows.index else 0.0
    end = float(flows["end_s"].get(name, result.duration_s)) if name in flows.index else result.duration_s
    loss = first_loss_s(t, rows["retrans_segs"].to_numpy(), m.ca)
    window = zoom_window(start, end, interval, path.base_rtt_s if path else 0.0, loss)
    if window is None:
        window = (start, max(end, start + interval))
        what = "the whole flow"
    else:
        what = "around the first loss" if loss is not None else "the first seconds (no loss)"
    _window_panel(ax, m, mark_samples=True)
    inside = (t >= window[0]) & (t <= window[1])
    top = np.nanmax(np.concatenate([m.cwnd[inside], m.ssthresh[inside], m.inflight[inside], [1.0]]))
    ax.set_xlim(*window)
    ax.set_ylim(0, top * 1.1)
    ax.set_title(
        f"Zoom: cwnd {window[0]:.2f}-{window[1]:.2f} s, {what}; one point per {interval * 1e3:g} ms sample"
        + ("; in flight aliases (see above)" if m.aliased else ""),
        loc="left",
        fontsize="medium",
    )
    ax.set_xlabel("Time (s)")
    ax.set_ylabel("packets")
    ax.grid(True, alpha=0.3)
    legend_outside(ax)


_CA_PATCH = CA_COLORS["Recovery"]


def run_plots(result: Result) -> list[Plot]:
    """Every figure of a run, rendered (overview first, then one per flow)."""
    paths = flow_paths(result.config)
    flows = _flow_order(result)
    colors = {name: f"C{i % 10}" for i, name in enumerate(flows)}
    plots = [
        _goodput_plot(result, paths, colors),
        _cwnd_plot(result, colors),
        _rtt_plot(result, paths, colors),
        _queue_plot(result, paths),
        *datapath_plots(result),
        *app_plots(result),
    ]
    present = set(result.timeseries["flow_name"])
    for number, name in enumerate(flows[:MAX_FLOW_FIGURES]):
        if name in present:
            plots.append(_flow_plot(result, number, name, paths.get(name)))
    return plots


def write_plots(plots: list[Plot], directory: Path) -> list[Path]:
    """Write rendered plots into ``directory``; returns their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    out = []
    for plot in plots:
        path = directory / plot.filename
        path.write_bytes(plot.png)
        out.append(path)
    return out


def write_run_plots(result: Result, directory: Path) -> list[Path]:
    """Render and write every figure of one run (see the module doc); returns their paths."""
    return write_plots(run_plots(result), directory)


# -- comparisons -------------------------------------------------------------------------


def compare_plot(results: Mapping[str, Result]) -> Plot:
    """compare.png: goodput (1 s average) with the payload ceiling, cwnd, smoothed RTT with
    the base RTT, and the backlog of each variant's bottleneck queue; one colour per
    variant, several flows of one variant in one colour with different line styles."""
    fig = figure(height=12.0)
    good, win, rtt, queue = fig.subplots(4, 1, sharex=True)
    styles = ["-", "--", ":", "-."]
    ceilings: dict[float, list[str]] = {}
    bases: dict[float, list[str]] = {}
    colors = {}
    for i, (label, result) in enumerate(results.items()):
        color = colors[label] = f"C{i % 10}"
        paths = flow_paths(result.config)
        flows = _flow_order(result)
        for k, name in enumerate(flows):
            rows = _rows(result, name)
            if rows.empty:
                continue
            line_label = label if len(flows) == 1 else f"{label}: {name}"
            t = rows["t_s"].to_numpy()
            style = {"color": color, "linestyle": styles[k % 4], "label": line_label, "linewidth": 1.1}
            good.plot(t, trailing_mean(t, rows["goodput_bps"].to_numpy(dtype=np.float64)) / 1e6, **style)
            end = max(r.duration_s for r in results.values())
            trace(win, t, rows["cwnd"].to_numpy(dtype=np.float64), (0.0, end), **style)
            rtt.plot(t, _rtt_ms(rows, "srtt_us"), **style)
        for p in paths.values():
            ceilings.setdefault(round(p.payload_ceiling_bps, 3), []).append(label)
            bases.setdefault(round(p.base_rtt_s, 9), []).append(label)
        queues = sorted({p.bottleneck_link for p in paths.values()})[:2]
        for k, index in enumerate(queues):
            rows = result.queues[result.queues["link"] == index].sort_values("t_ns")
            name = result.config["links"][index]["name"]
            queue.step(
                rows["t_s"].to_numpy(),
                rows["backlog_packets"].to_numpy(dtype=np.float64),
                where="post",
                color=color,
                linestyle=styles[k % 4],
                linewidth=1.0,
                label=f"{label}: {name}",
            )
    for bps, labels in ceilings.items():
        one = len(ceilings) == 1
        good.axhline(
            bps / 1e6,
            color="0.35" if one else colors[labels[0]],
            linestyle="--",
            linewidth=1.0,
            label=f"payload ceiling {_mbps(bps)}" + ("" if one else f" ({', '.join(dict.fromkeys(labels))})"),
        )
    for s, labels in bases.items():
        one = len(bases) == 1
        rtt.axhline(
            s * 1e3,
            color="0.35" if one else colors[labels[0]],
            linestyle="--",
            linewidth=1.0,
            label=f"base RTT {s * 1e3:.1f} ms" + ("" if one else f" ({', '.join(dict.fromkeys(labels))})"),
        )
    names = ", ".join(results)
    end = max(r.duration_s for r in results.values())
    style_axes(good, "Goodput (Mbit/s, 1 s avg)", f"TCP goodput - {names}", xlabel="", xmax=end)
    style_axes(win, "cwnd (packets)", "TCP congestion window", xlabel="", xmax=end)
    style_axes(rtt, "Smoothed RTT (ms)", "TCP RTT", xlabel="", xmax=end)
    style_axes(queue, "Backlog (packets)", "Bottleneck queue backlog", xmax=end)
    for ax in (good, win, rtt, queue):
        legend_outside(ax)
    return Plot(
        "compare.png",
        "Goodput (1 s average; it can pass the payload ceiling for a moment when a repaired loss "
        "releases held data), cwnd, RTT and bottleneck backlog of each variant",
        png_bytes(fig),
    )


def plot_compare(results: Mapping[str, Result], path: Path) -> Path:
    """Write :func:`compare_plot` to ``path``."""
    path.write_bytes(compare_plot(results).png)
    return path

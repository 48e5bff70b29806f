"""Plots and report sections of the applications: what each app's users watch.

The model: one figure per app, ``plots/app-NAME.png`` (:func:`app_plot_files`), drawn from
the app's tables (:class:`tcplab.results.AppResult`; times in seconds on x) and, for NFS,
from the flow time series of its connections:

* ``hls``: the playback **buffer** (s) over time with the startup phase shaded grey and
  every stall (playback had started, the buffer ran dry) shaded red; the **profile** chosen
  for each segment (its bitrate, the ladder's names on the axis) with the client's bandwidth
  estimate; each **segment's latency** (request to last byte) against the segment duration
  (dashed): above it, fetching a segment takes longer than playing one and the buffer drains.
* ``nfs_stream``: the player's **buffer** over time (startup and stalls shaded as for HLS);
  **cwnd and ssthresh of each connection** (packets, from ``timeseries.parquet``: the
  server's socket, which sends the data; a log scale when they span decades, so a
  ``cwnd:2`` collapse beside healthy connections is readable); each connection's **share of
  the bytes** read, against the even share 1/nconnect.
* ``rr``: the **latency CDF** (ms) of every transaction (and of each connection when there
  are at most :data:`MAX_CDF_LINES`), p50 and p99 marked; latency over time.
* ``batch_writer``: the **latency CDF** of the requests that completed and, when some
  batch needed a retry, of each batch from its first attempt (timeouts and backoff
  included: what the story's 65.92 s was); **timeouts and
  retries over time** (a timeout counted when it fired, a retry when it was sent); the
  **pending queue** (batches waiting) over time with the queue's limit dashed when it came
  near it.
* in a comparison (:func:`compare_app_plots`): per app, the **latency CDF of every variant
  overlaid** (flent's ``ping_cdf`` for request/response: the metric that answers "which
  variant answers faster"): rr transactions, NFS reads, batch writes that completed, HLS
  segments, broadcast bursts' completion; p50 and p99 of each variant in the legend.
* ``broadcast``: each burst's **completion time** (ms, from the burst's start to the last
  byte read; bursts still incomplete at the end marked); **rate(TCPTimeouts) / CurrEstab**
  (%/s, as a Prometheus ``rate()`` gives it: :func:`tcplab.results.apps.timeout_rate`)
  against the 3 %/s alert line of story 004's team: per burst interval when the ``bursts``
  table has the senders' RTOs of each (``tcp_timeouts``: ``rate(TCPTimeouts[interval])``),
  with the rate over all the bursts dotted; else that rate and the retransmission rate as
  bars.

A kind this module does not know gets no figure; its report section shows its summary and
the first rows of each table. Missing tables or columns leave the panel with a note ("no
segments"), never an error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from tcplab.results.apps import TIMEOUT_RATE_NAME, TIMEOUT_RATIO_ALERT, AppResult
from tcplab.views.drawing import Plot, figure, integer_ticks, legend_outside, png_bytes, style_axes

if TYPE_CHECKING:
    from tcplab.results import Result

__all__ = [
    "app_plots",
    "app_plot_files",
    "compare_app_plots",
    "compare_app_figure",
    "compared_apps",
    "stall_spans",
    "MAX_CDF_LINES",
    "PLOTTED_KINDS",
]

#: Per-connection CDF lines drawn at most (beyond, only the aggregate).
MAX_CDF_LINES = 8
#: Connections whose cwnd is drawn at most (NFS allows 16).
MAX_CONN_LINES = 16
#: Points per scatter at most (every k-th row beyond; the CDFs use every row's quantile).
MAX_POINTS = 20_000
#: Kinds with a figure.
PLOTTED_KINDS = ("rr", "hls", "nfs_stream", "batch_writer", "broadcast")

_STALL = "#d62728"
_STARTUP = "0.8"
#: Linux's TCP_INFINITE_SSTHRESH: ssthresh not set yet.
_INFINITE_SSTHRESH = 0x7FFFFFFF


def app_plot_files(result: Result) -> dict[str, str]:
    """``{app name: "app-NAME.png"}`` for apps of a plotted kind (names made file-safe and
    unique)."""
    files: dict[str, str] = {}
    used: set[str] = set()
    for name, app in result.apps.items():
        if app.kind not in PLOTTED_KINDS:
            continue
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._")[:80] or "app"
        candidate, k = f"app-{stem}.png", 1
        while candidate in used:
            k += 1
            candidate = f"app-{stem}-{k}.png"
        used.add(candidate)
        files[name] = candidate
    return files


def app_plots(result: Result) -> list[Plot]:
    """One figure per app of a plotted kind, in the configuration's order."""
    drawers = {
        "rr": _rr,
        "hls": _hls,
        "nfs_stream": _nfs,
        "batch_writer": _batch,
        "broadcast": _broadcast,
    }
    plots = []
    for name, filename in app_plot_files(result).items():
        app = result.apps[name]
        fig, caption = drawers[app.kind](result, app)
        plots.append(Plot(filename, f"{name} ({app.kind}): {caption}", png_bytes(fig)))
    return plots


# -- helpers -----------------------------------------------------------------------------


def _col(frame: pd.DataFrame, name: str, dtype: Any = np.float64) -> np.ndarray | None:
    """A column as an array, or None if the table lacks it."""
    if frame is None or name not in frame.columns:
        return None
    return frame[name].to_numpy(dtype=dtype)


def _note(ax: Any, text: str) -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", color="0.4")


def _count_axis(ax: Any) -> None:
    """A y axis of counts: integer ticks from 0 (at least 0..1, so that an axis of zeros
    does not fall back to fractional ticks)."""
    ax.set_ylim(0, max(ax.get_ylim()[1], 1.0))
    integer_ticks(ax.yaxis, min_n_ticks=1)


def _plural(n: Any, word: str) -> str:
    """``1 switch``, ``2 switches``, ``0 stalls``: a count and its noun."""
    from tcplab.units import plural

    return plural(n, word)


def stall_spans(
    t_s: np.ndarray, playing: np.ndarray, interval_s: float
) -> tuple[tuple[float, float] | None, list[tuple[float, float]]]:
    """``(startup, stalls)`` from a player's samples: the span before playback first
    started (None if it started at the first sample; to the end if never), and each later
    run of samples not playing. A sample's state holds until the next sample."""
    t = np.asarray(t_s, dtype=np.float64)
    p = np.asarray(playing).astype(bool)
    if len(t) == 0:
        return None, []
    ends = np.append(t[1:], t[-1] + interval_s)
    if not p.any():
        return (0.0, float(ends[-1])), []
    first = int(np.argmax(p))
    startup = (0.0, float(t[first])) if first > 0 or t[0] > interval_s else None
    stalls: list[tuple[float, float]] = []
    i = first
    n = len(t)
    while i < n:
        if not p[i]:
            j = i
            while j < n and not p[j]:
                j += 1
            stalls.append((float(t[i]), float(ends[j - 1])))
            i = j
        else:
            i += 1
    return startup, stalls


def _buffer_panel(ax: Any, result: Result, app: AppResult, title: str) -> None:
    """Buffer (s) over time, startup grey, stalls red (both from the ``series`` table)."""
    series = app.tables.get("series", pd.DataFrame())
    t = _col(series, "t_s")
    buffer = _col(series, "buffer_ns")
    if t is None or buffer is None or len(t) == 0:
        _note(ax, "no buffer samples (series table)")
        style_axes(ax, "Buffer (s)", title, xlabel="", xmax=result.duration_s)
        return
    playing = _col(series, "playing", bool)
    ax.step(t, buffer / 1e9, where="post", color="C0", linewidth=1.3, label="buffer")
    if playing is not None:
        startup, stalls = stall_spans(t, playing, result.sample_interval_s)
        if startup is not None:
            ax.axvspan(*startup, color=_STARTUP, alpha=0.5, linewidth=0)
        for lo, hi in stalls:
            ax.axvspan(lo, hi, color=_STALL, alpha=0.25, linewidth=0)
        stall_s = app.get("stall_s")
        count = app.get("stalls")
        text = f"stalls: {count if count is not None else len(stalls)}"
        if isinstance(stall_s, (int, float)):
            text += f", {stall_s:.2f} s"
        ax.plot([], [], color=_STALL, alpha=0.35, linewidth=8, label=text)
        if startup is not None:
            # the app's own figure (from its connection, exact), not the samples' resolution
            delay = app.get("startup_delay_s")
            delay = delay if isinstance(delay, (int, float)) else startup[1] - startup[0]
            ax.plot([], [], color=_STARTUP, alpha=0.7, linewidth=8, label=f"startup {delay:.2f} s")
    startup_ns = app.spec.get("startup_buffer_ns")
    if isinstance(startup_ns, (int, float)) and startup_ns > 0:
        ax.axhline(
            startup_ns / 1e9, color="0.35", linestyle=":", linewidth=1.0, label=f"startup buffer {startup_ns / 1e9:g} s"
        )
    style_axes(ax, "Buffer (s)", title, xlabel="", xmax=result.duration_s)
    legend_outside(ax)


def _cdf(ax: Any, values_ms: np.ndarray, label: str, color: str, linewidth: float = 1.4) -> None:
    v = np.sort(values_ms[np.isfinite(values_ms)])
    if len(v) == 0:
        return
    if len(v) > 4000:  # the quantiles, not every row: the same curve, a smaller file
        q = np.linspace(0.0, 1.0, 4001)
        x = np.quantile(v, q, method="inverted_cdf")
        y = q
    else:
        x = v
        y = np.arange(1, len(v) + 1) / len(v)
    ax.step(x, y, where="post", color=color, linewidth=linewidth, label=label)


def _percentile_marks(ax: Any, app: AppResult, key: str) -> None:
    for q, style in (("p50", ":"), ("p99", "--")):
        value = app.get(key, q)
        if isinstance(value, (int, float)):
            ax.axvline(value, color="0.3", linestyle=style, linewidth=1.0, label=f"{q} {value:.3g} ms")


def _cdf_style(ax: Any, title: str, values_ms: np.ndarray) -> None:
    ax.set_xlabel("Latency (ms)")
    ax.set_ylabel("Fraction of requests")
    ax.set_title(title, loc="left", fontsize="medium")
    ax.set_ylim(0, 1.02)
    finite = values_ms[np.isfinite(values_ms)]
    if len(finite) and finite.max() > 0 and finite.max() / max(finite.min(), 1e-9) > 100:
        ax.set_xscale("log")  # latencies spanning decades (a few timeouts among fast requests)
    else:
        ax.set_xlim(left=0)
    ax.grid(True, alpha=0.3)


def _num_or_none(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def _thin(n: int) -> slice:
    return slice(None, None, max(1, -(-n // MAX_POINTS)))


def _figure(panels: int, height_per: float = 3.0) -> Any:
    return figure(height=max(3.5, panels * height_per))


# -- per kind ----------------------------------------------------------------------------


def _rr(result: Result, app: AppResult) -> tuple[Any, str]:
    fig = _figure(2, 3.4)
    cdf_ax, time_ax = fig.subplots(2, 1)
    req = app.tables.get("requests", pd.DataFrame())
    latency = _col(req, "latency_ms")
    if latency is None or len(latency) == 0:
        _note(cdf_ax, "no completed transactions")
        _note(time_ax, "no completed transactions")
        latency = np.array([], dtype=np.float64)
    else:
        names = req["flow_name"].to_numpy().astype(str) if "flow_name" in req.columns else None
        conns = list(dict.fromkeys(names)) if names is not None else []
        if 1 < len(conns) <= MAX_CDF_LINES:
            for k, conn in enumerate(conns):
                _cdf(cdf_ax, latency[names == conn], conn, f"C{(k + 1) % 10}", 0.9)
        _cdf(cdf_ax, latency, f"all ({len(latency)} transactions)", "C0", 1.8)
        _percentile_marks(cdf_ax, app, "latency_ms")
        start = _col(req, "start_s")
        if start is not None:
            cut = _thin(len(start))
            time_ax.plot(
                start[cut], latency[cut], linestyle="none", marker=".", markersize=2, color="C0", label="transaction"
            )
    tps = app.get("transactions_per_sec")
    title = f"{app.name}: request/response latency" + (
        f" ({tps:.1f} transactions/s)" if isinstance(tps, (int, float)) else ""
    )
    _cdf_style(cdf_ax, title, latency)
    legend_outside(cdf_ax)
    style_axes(
        time_ax, "Latency (ms)", "Latency of each transaction, by when its request was written", xmax=result.duration_s
    )
    legend_outside(time_ax)
    return fig, "latency CDF (p50 and p99 marked) and the latency of each transaction over time"


def _hls(result: Result, app: AppResult) -> tuple[Any, str]:
    fig = _figure(3, 3.0)
    buf_ax, prof_ax, lat_ax = fig.subplots(3, 1, sharex=True)
    _buffer_panel(buf_ax, result, app, f"{app.name}: playback buffer (HLS)")
    seg = app.tables.get("segments", pd.DataFrame())
    t = _col(seg, "request_s")
    bitrate = _col(seg, "bitrate_bps")
    ladder = _ladder(app, seg)
    if t is None or bitrate is None or len(t) == 0:
        _note(prof_ax, "no segments")
        _note(lat_ax, "no segments")
    else:
        # held from each request until the next; the last until its last byte arrived
        seg_latency = _col(seg, "latency_ms")
        end = float(t[-1] + seg_latency[-1] / 1e3) if seg_latency is not None else float(t[-1])
        prof_ax.step(
            np.append(t, end),
            np.append(bitrate, bitrate[-1]) / 1e6,
            where="post",
            color="C1",
            linewidth=1.6,
            label="profile of the segment",
        )
        estimate = _col(seg, "estimate_bps")
        if estimate is not None:
            prof_ax.plot(
                t,
                estimate / 1e6,
                color="C2",
                linestyle=":",
                linewidth=1.2,
                marker=".",
                markersize=3,
                label="bandwidth estimate",
            )
        if ladder:
            prof_ax.set_yticks([b / 1e6 for _, b in ladder], [f"{n} {b / 1e6:.3g}" for n, b in ladder])
        latency = _col(seg, "latency_ms")
        if latency is not None:
            names = seg["profile"].to_numpy().astype(str) if "profile" in seg.columns else np.full(len(t), "?")
            for k, profile in enumerate(dict.fromkeys(names)):
                at = names == profile
                lat_ax.plot(
                    t[at],
                    latency[at] / 1e3,
                    linestyle="none",
                    marker="o",
                    markersize=3.5,
                    color=f"C{(k + 3) % 10}",
                    label=profile,
                )
    switches = app.get("switches")
    prof_title = "Profile of each segment (by request time)" + (
        f", {_plural(switches, 'switch')}" if switches is not None else ""
    )
    style_axes(prof_ax, "Bitrate (Mbit/s)", prof_title, xlabel="", xmax=result.duration_s)
    legend_outside(prof_ax)
    segment_ns = app.spec.get("segment_ns")
    if isinstance(segment_ns, (int, float)) and segment_ns > 0:
        lat_ax.axhline(
            segment_ns / 1e9,
            color="0.35",
            linestyle="--",
            linewidth=1.0,
            label=f"segment duration {segment_ns / 1e9:g} s",
        )
    style_axes(lat_ax, "Latency (s)", "Segment latency: request to last byte", xmax=result.duration_s)
    legend_outside(lat_ax)
    return fig, (
        "playback buffer with startup (grey) and stalls (red), the profile of each segment with the client's "
        "bandwidth estimate, and each segment's request-to-last-byte latency against the segment duration"
    )


def _ladder(app: AppResult, seg: pd.DataFrame) -> list[tuple[str, float]]:
    """(name, bitrate_bps) of the profiles, from the spec, else from the segments."""
    profiles = app.spec.get("profiles")
    out: dict[str, float] = {}
    if isinstance(profiles, list):
        for p in profiles:
            if isinstance(p, Mapping) and "name" in p and isinstance(p.get("bitrate_bps"), (int, float)):
                out[str(p["name"])] = float(p["bitrate_bps"])
    if not out and "profile" in seg.columns and "bitrate_bps" in seg.columns:
        for name, b in zip(seg["profile"].astype(str), seg["bitrate_bps"], strict=True):
            out.setdefault(name, float(b))
    return sorted(out.items(), key=lambda x: x[1])


def _nfs(result: Result, app: AppResult) -> tuple[Any, str]:
    fig = _figure(3, 3.2)
    grid = fig.add_gridspec(3, 1, height_ratios=[3, 3, 2.2])
    buf_ax = fig.add_subplot(grid[0])
    cwnd_ax = fig.add_subplot(grid[1], sharex=buf_ax)
    share_ax = fig.add_subplot(grid[2])
    _buffer_panel(buf_ax, result, app, f"{app.name}: player buffer (NFS read over {len(app.flows) or '?'} connections)")
    _cwnd_panel(cwnd_ax, result, app.flows)
    shares = app.get("share_of_bytes")
    if isinstance(shares, list) and shares:
        values = np.array([float(s) if isinstance(s, (int, float)) else np.nan for s in shares]) * 100
        labels = [app.flows[k] if k < len(app.flows) else str(k) for k in range(len(values))]
        share_ax.bar(np.arange(len(values)), values, color=[f"C{k % 10}" for k in range(len(values))])
        share_ax.set_xticks(np.arange(len(values)), labels, fontsize="small", rotation=30 if len(values) > 6 else 0)
        share_ax.axhline(
            100 / len(values),
            color="0.35",
            linestyle="--",
            linewidth=1.0,
            label=f"even share {100 / len(values):.3g} %",
        )
        share_ax.set_ylim(0, max(float(np.nanmax(values)) if np.isfinite(values).any() else 0, 100 / len(values)) * 1.2)
        legend_outside(share_ax)
    else:
        _note(share_ax, "no per-connection shares (share_of_bytes)")
    share_ax.set_ylabel("Bytes (%)")
    share_ax.set_title("Share of the bytes read, per connection", loc="left", fontsize="medium")
    share_ax.grid(True, axis="y", alpha=0.3)
    return fig, (
        "player buffer with startup (grey) and stalls (red), cwnd (solid) and ssthresh (dotted) of each connection's "
        "server socket in packets, and each connection's share of the bytes read against the even share"
    )


def _cwnd_panel(ax: Any, result: Result, flows: Sequence[str]) -> None:
    ts = result.timeseries
    drawn = 0
    low, high = np.inf, 0.0
    for k, name in enumerate(flows[:MAX_CONN_LINES]):
        rows = ts[ts["flow_name"] == name].sort_values("t_ns")
        if rows.empty:
            continue
        t = rows["t_s"].to_numpy()
        cwnd = rows["cwnd"].to_numpy(dtype=np.float64)
        ss = rows["ssthresh"].to_numpy(dtype=np.float64)
        ss = np.where(ss >= _INFINITE_SSTHRESH, np.nan, ss)
        color = f"C{k % 10}"
        ax.plot(t, cwnd, color=color, linewidth=1.2, label=f"{name} cwnd")
        if np.isfinite(ss).any():
            ax.plot(t, ss, color=color, linestyle=":", linewidth=1.0)
        low = min(low, float(np.nanmin(cwnd)) if len(cwnd) else low)
        high = max(high, float(np.nanmax(np.concatenate([cwnd, ss[np.isfinite(ss)]]))) if len(cwnd) else high)
        drawn += 1
    if drawn:
        ax.plot([], [], color="0.3", linestyle=":", label="ssthresh (dotted)")
    else:
        _note(ax, "no time series for the connections")
    style_axes(ax, "packets", "cwnd and ssthresh of each connection (server side)", xlabel="", xmax=result.duration_s)
    if drawn and high / max(low, 1.0) > 50:
        ax.set_yscale("log")
        ax.set_ylim(1, high * 1.5)
    else:
        _count_axis(ax)  # packets
    legend_outside(ax)


def _batch(result: Result, app: AppResult) -> tuple[Any, str]:
    fig = _figure(3, 3.0)
    cdf_ax, events_ax, queue_ax = fig.subplots(3, 1)
    req = app.tables.get("requests", pd.DataFrame())
    latency = _col(req, "latency_ms")
    outcome = req["outcome"].to_numpy().astype(str) if "outcome" in req.columns else None
    if latency is None or len(latency) == 0:
        _note(cdf_ax, "no requests")
        ok = np.array([], dtype=np.float64)
    else:
        ok = latency[outcome == "ok"] if outcome is not None else latency
        _cdf(cdf_ax, ok, f"per request that completed ({len(ok)})", "C0", 1.8)
        per_batch = _batch_latency_ms(req)
        if per_batch is not None and len(per_batch) and per_batch.max() > ok.max(initial=0.0):
            # what the sender waited: from a batch's first attempt, timeouts and backoff included
            _cdf(cdf_ax, per_batch, f"per batch, from its first attempt ({len(per_batch)})", "C1", 1.4)
            ok = np.concatenate([ok, per_batch])
        _percentile_marks(cdf_ax, app, "latency_ms")
        timeouts = int((outcome == "timeout").sum()) if outcome is not None else 0
        if timeouts:
            cdf_ax.plot([], [], " ", label=f"+ {timeouts} timed out (not in the CDF)")
        if not np.isfinite(ok).any():
            _note(cdf_ax, "no request completed")
    _cdf_style(cdf_ax, f"{app.name}: batch write latency", ok)
    legend_outside(cdf_ax)
    # timeouts (when they fired) and retries (when sent), per bin
    start = _col(req, "start_s")
    attempt = _col(req, "attempt")
    if start is not None and latency is not None and len(start):
        width = max(1.0, result.duration_s / 100.0)
        edges = np.arange(0.0, result.duration_s + width, width)
        fired = start + latency / 1e3
        if outcome is not None:
            counts, _ = np.histogram(fired[outcome == "timeout"], bins=edges)
            events_ax.step(edges[:-1], counts, where="post", color=_STALL, label=f"timeouts ({int(counts.sum())})")
        if attempt is not None and len(attempt):
            # a retry is any attempt after a batch's first (attempts count from 1 or from 0)
            counts, _ = np.histogram(start[attempt > attempt.min()], bins=edges)
            events_ax.step(
                edges[:-1], counts, where="post", color="C1", linestyle="--", label=f"retries ({int(counts.sum())})"
            )
        per = f"per {width:g} s"
    else:
        _note(events_ax, "no requests")
        per = ""
    style_axes(
        events_ax,
        f"Requests {per}".strip(),
        "Timeouts (when they fired) and retries (when sent)",
        xlabel="",
        xmax=result.duration_s,
    )
    _count_axis(events_ax)
    legend_outside(events_ax)
    series = app.tables.get("series", pd.DataFrame())
    t = _col(series, "t_s")
    pending = _col(series, "pending")
    if t is not None and pending is not None and len(t):
        queue_ax.step(t, pending, where="post", color="C4", label="pending batches")
        limit = app.spec.get("max_pending")
        if limit == 0:  # max_pending 0: no limit (vmagent's default)
            queue_ax.plot([], [], " ", label="queue unbounded")
        elif isinstance(limit, (int, float)) and len(pending) and pending.max() >= limit / 4:
            queue_ax.axhline(limit, color="0.35", linestyle="--", linewidth=1.0, label=f"queue limit {limit:g}")
        dropped = app.get("dropped")
        if dropped:
            queue_ax.plot([], [], " ", label=f"{dropped} dropped")
    else:
        _note(queue_ax, "no queue samples (series table)")
    style_axes(queue_ax, "Batches", "Pending queue", xmax=result.duration_s)
    _count_axis(queue_ax)
    legend_outside(queue_ax)
    return fig, (
        "latency CDF of the requests that completed (and of each batch from its first attempt), timeouts and "
        "retries over time, and the queue of pending batches"
    )


def _batch_latency_ms(req: pd.DataFrame) -> np.ndarray | None:
    """Per batch that succeeded: from its first attempt's start to its successful
    attempt's end, in ms (None without the batch, start, latency and outcome columns)."""
    if not {"batch", "start_ns", "latency_ns", "outcome"} <= set(req.columns) or req.empty:
        return None
    first = req.groupby("batch")["start_ns"].min()
    ok = req[req["outcome"].astype(str) == "ok"]
    if ok.empty:
        return np.array([], dtype=np.float64)
    end = (ok["start_ns"].astype(np.float64) + ok["latency_ns"].astype(np.float64)).groupby(ok["batch"]).max()
    return ((end - first.reindex(end.index).astype(np.float64)) / 1e6).to_numpy()


def _broadcast(result: Result, app: AppResult) -> tuple[Any, str]:
    fig = _figure(2, 3.4)
    burst_ax, ratio_ax = fig.subplots(2, 1)
    bursts = app.tables.get("bursts", pd.DataFrame())
    start = _col(bursts, "start_s")
    completion = _col(bursts, "completion_ms")
    if start is None or completion is None or len(start) == 0:
        _note(burst_ax, "no bursts")
    else:
        complete = _col(bursts, "complete", bool)
        done = complete if complete is not None else np.ones(len(start), dtype=bool)
        # an incomplete burst's time is only "until the end of the run": a mark, not the line
        burst_ax.plot(
            start[done], completion[done], color="C0", marker="o", markersize=3, linewidth=1.0, label="burst completion"
        )
        if complete is not None and not complete.all():
            burst_ax.plot(
                start[~complete],
                completion[~complete],
                linestyle="none",
                marker="x",
                markersize=7,
                color=_STALL,
                label=f"incomplete at the end of the run ({int((~complete).sum())})",
            )
        p99 = app.get("completion_ms", "p99")
        if isinstance(p99, (int, float)):
            burst_ax.axhline(p99, color="0.3", linestyle=":", linewidth=1.0, label=f"p99 {p99:.3g} ms")
    window = app.spec.get("window_ns")
    if isinstance(window, (int, float)) and window > 0:
        burst_ax.axhline(
            window / 1e6, color="0.35", linestyle="--", linewidth=1.0, label=f"burst window {window / 1e6:g} ms"
        )
    style_axes(
        burst_ax,
        "Completion (ms)",
        f"{app.name}: time from each burst's start to its last byte delivered",
        xmax=result.duration_s,
    )
    legend_outside(burst_ax)
    alert = 100 * TIMEOUT_RATIO_ALERT
    per_burst = _col(bursts, "tcp_timeouts")
    estab = _num_or_none(app.get("curr_estab"))
    interval_ns = _num_or_none(app.spec.get("interval_ns"))
    window_s = _num_or_none(app.get("timeouts_rate_window_s"))
    if start is not None and per_burst is not None and len(start) and estab and interval_ns:
        # the senders' RTOs from each burst's start to the next, per second, over the
        # established connections: rate(TCPTimeouts[interval]) / CurrEstab, one interval per
        # burst, as the story's dashboard showed it
        interval_s = interval_ns / 1e9
        ratio_ax.step(
            start,
            100 * per_burst / interval_s / estab,
            where="post",
            color="C3",
            linewidth=1.3,
            label=f"per burst interval (rate over {interval_s:g} s)",
        )
        total = app.get("timeouts_rate_per_estab")
        if isinstance(total, (int, float)):
            over = f" {window_s:.3g} s" if window_s else ""
            ratio_ax.axhline(
                100 * total,
                color="C3",
                linestyle=":",
                linewidth=1.0,
                label=f"over the bursts' {over.strip() or 'span'}: {100 * total:.3g} %/s",
            )
        ratio_ax.axhline(alert, color="0.2", linestyle="--", linewidth=1.0, label=f"alert {alert:g} %/s (story 004)")
        style_axes(
            ratio_ax,
            f"{TIMEOUT_RATE_NAME} (%/s)",
            f"Senders' {TIMEOUT_RATE_NAME} ({int(estab)} connections)",
            xmax=result.duration_s,
        )
        ratio_ax.set_ylim(0, max(ratio_ax.get_ylim()[1], alert * 1.5))
    else:
        ratio = app.get("timeouts_rate_per_estab")
        retrans = app.get("retrans_rate")
        labels = [f"{TIMEOUT_RATE_NAME} (%/s)", "retransmitted segments (%)"]
        values = [100 * v if isinstance(v, (int, float)) else np.nan for v in (ratio, retrans)]
        colors = [_STALL if v > alert else "C0" for v in values]
        ratio_ax.barh([1, 0], values, color=colors, height=0.5)
        ratio_ax.set_yticks([1, 0], labels)
        for y, v, unit in zip([1, 0], values, ["%/s", "%"], strict=True):
            ratio_ax.text(v if np.isfinite(v) else 0, y, f"  {v:.3g} {unit}" if np.isfinite(v) else "  -", va="center")
        ratio_ax.axvline(alert, color="0.2", linestyle="--", linewidth=1.0, label=f"alert {alert:g} %/s (story 004)")
        top = max([alert] + [v for v in values if np.isfinite(v)])
        ratio_ax.set_xlim(0, top * 1.3)
        ratio_ax.set_xlabel("%/s (over the bursts' span) and % (of segments sent)")
        estab_n, tcp_timeouts = app.get("curr_estab"), app.get("tcp_timeouts")
        span = f" over {window_s:.3g} s" if window_s else ""
        ratio_ax.set_title(
            f"TCPTimeouts {tcp_timeouts if tcp_timeouts is not None else '-'}{span} / CurrEstab "
            f"{estab_n if estab_n is not None else '-'}, and the retransmission rate",
            loc="left",
            fontsize="medium",
        )
        ratio_ax.grid(True, axis="x", alpha=0.3)
    legend_outside(ratio_ax)
    return fig, (
        "completion time of each burst (to the last byte delivered) against the burst window, and "
        f"{TIMEOUT_RATE_NAME} (per second, as Prometheus' rate() gives it) with the retransmission rate against "
        f"the {alert:g} %/s alert line of story 004"
    )


# -- comparisons -------------------------------------------------------------------------

#: Per kind: (table, latency column, what one row is, the figure's title) of the per-item
#: latency whose CDFs a comparison overlays.
COMPARE_LATENCY = {
    "rr": ("requests", "latency_ms", "transactions", "request/response latency"),
    "nfs_stream": ("requests", "latency_ms", "reads", "NFS read latency"),
    "batch_writer": ("requests", "latency_ms", "requests that completed", "batch write latency"),
    "hls": ("segments", "latency_ms", "segments", "segment latency (request to last byte)"),
    "broadcast": ("bursts", "completion_ms", "bursts", "burst completion (start to last byte read)"),
}


def _compare_latency(app: AppResult) -> np.ndarray | None:
    """The per-item latencies (ms) a comparison overlays for ``app``, or None."""
    spec = COMPARE_LATENCY.get(app.kind)
    if spec is None:
        return None
    table, column, _, _ = spec
    frame = app.tables.get(table)
    values = _col(frame, column)
    if values is None:
        return None
    if app.kind == "batch_writer" and "outcome" in frame.columns:
        values = values[(frame["outcome"].astype(str) == "ok").to_numpy()]
    if app.kind == "broadcast" and "complete" in frame.columns:
        values = values[frame["complete"].to_numpy().astype(bool)]
    return values[np.isfinite(values)]


def compare_app_plots(results: Mapping[str, Result]) -> list[Plot]:
    """One figure per app of a latency kind (:data:`COMPARE_LATENCY`) found in the
    variants (matched by app name): its latency CDF in each variant, overlaid
    (:func:`compare_app_figure`)."""
    plots = []
    for name, kind in compared_apps(results).items():
        fig, caption = compare_app_figure(results, name, kind)
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "app"
        plots.append(Plot(f"compare-app-{stem}.png", caption, png_bytes(fig)))
    return plots


def compared_apps(results: Mapping[str, Result]) -> dict[str, str]:
    """``{app name: kind}`` of the apps of a latency kind in any variant, in order."""
    names: dict[str, str] = {}
    for r in results.values():
        for name, app in getattr(r, "apps", {}).items():
            if app.kind in COMPARE_LATENCY:
                names.setdefault(name, app.kind)
    return names


def compare_app_figure(results: Mapping[str, Result], name: str, kind: str) -> tuple[Any, str]:
    """The CDF of app ``name``'s per-item latency in each variant, one colour per variant
    (:mod:`tcplab.views.colors`), each variant's p50 and p99 in the legend; and a caption."""
    from tcplab.views.colors import variant_colors

    colors = variant_colors(results)
    _, _, items, what = COMPARE_LATENCY[kind]
    fig = _figure(1, 4.2)
    ax = fig.add_subplot()
    every: list[np.ndarray] = []
    for label, r in results.items():
        app = getattr(r, "apps", {}).get(name)
        values = _compare_latency(app) if app is not None and app.kind == kind else None
        if values is None or len(values) == 0:
            ax.plot([], [], color=colors[label], label=f"{label}: no {items}")
            continue
        every.append(values)
        p50, p99 = np.quantile(values, [0.5, 0.99], method="inverted_cdf")
        _cdf(ax, values, f"{label}: p50 {p50:.3g} ms, p99 {p99:.3g} ms ({len(values)} {items})", colors[label])
    _cdf_style(
        ax,
        f"{name} ({kind}): {what}, CDF of each variant",
        np.concatenate(every) if every else np.array([], dtype=np.float64),
    )
    if not every:
        _note(ax, f"no {items} in any variant")
    ax.set_ylabel(f"Fraction of {items}")
    legend_outside(ax)
    caption = (
        f"{name} ({kind}): {what}: the CDF of each variant overlaid (as flent's ping_cdf), p50 and p99 in the legend"
    )
    return fig, caption

"""Static plots of a run, in the shapes flent users know (``tcp_cwnd``, ``tcp_rtt``, totals).

The model: one PNG per metric, time in seconds on x, one line per flow labelled
``name (cc)``, the unit on the y axis, a title ``<metric> - <scenario>``:

* ``goodput.png``: goodput (Mbit/s) from ``bytes_received`` deltas, averaged over 1 s
  (in-order delivery arrives in bursts when a loss is repaired, so per-sample goodput is
  spiky; the raw per-sample values stay in ``timeseries.parquet``); with several flows,
  also their total.
* ``cwnd.png``: ``cwnd`` in packets (as Linux and ``ss`` report it, not bytes).
* ``rtt.png``: smoothed RTT ``srtt_us`` in ms (what ``ss`` prints as ``rtt:``).

Figures are drawn with matplotlib's object API on the Agg canvas (no pyplot state, no
display needed), and saved without a software/date stamp so the same data gives the same
bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

if TYPE_CHECKING:
    from tcplab.results import Result

__all__ = ["write_run_plots", "plot_compare", "RUN_PLOTS"]

#: file name -> (column, scale, y label, title prefix)
RUN_PLOTS: dict[str, tuple[str, float, str, str]] = {
    "goodput.png": ("goodput_bps", 1e-6, "Goodput (Mbits/s, 1 s average)", "TCP goodput"),
    "cwnd.png": ("cwnd", 1.0, "cwnd (packets)", "TCP congestion window"),
    "rtt.png": ("srtt_us", 1e-3, "Smoothed RTT (ms)", "TCP RTT"),
}

_SAVE = {"dpi": 100, "metadata": {"Software": None}}

#: Averaging window of goodput plots, seconds.
GOODPUT_WINDOW_S = 1.0


def _smooth(t: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Trailing mean of ``v`` over GOODPUT_WINDOW_S (NaN samples ignored)."""
    if len(t) < 2:
        return v
    step = float(np.median(np.diff(t)))
    n = max(1, int(round(GOODPUT_WINDOW_S / step))) if step > 0 else 1
    if n == 1:
        return v
    valid = ~np.isnan(v)
    filled = np.where(valid, v, 0.0)
    csum = np.cumsum(np.concatenate(([0.0], filled)))
    ccnt = np.cumsum(np.concatenate(([0], valid.astype(np.int64))))
    idx = np.arange(1, len(v) + 1)
    lo = np.maximum(0, idx - n)
    cnt = ccnt[idx] - ccnt[lo]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(cnt > 0, (csum[idx] - csum[lo]) / cnt, np.nan)


def _figure(height: float = 4.0) -> Figure:
    fig = Figure(figsize=(9, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _style(ax: Any, ylabel: str, title: str) -> None:
    ax.set_xlabel("Time (s)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    top = ax.get_ylim()[1]
    ax.set_ylim(0, top * 1.05 if top > 0 else 1.0)  # headroom: a flat line is not hidden by the frame
    ax.set_xlim(left=0)


def _flow_label(result: Result, name: str) -> str:
    cc = result.flows.set_index("name")["cc"].get(name, "") if len(result.flows) else ""
    return f"{name} ({cc})" if cc else name


def write_run_plots(result: Result, directory: Path) -> list[Path]:
    """Write goodput.png, cwnd.png and rtt.png for one run; returns their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    ts = result.timeseries
    paths = []
    for filename, (column, scale, ylabel, title) in RUN_PLOTS.items():
        fig = _figure()
        ax = fig.add_subplot()
        for name in _flow_order(result):
            rows = ts[ts["flow_name"] == name]
            if rows.empty:
                continue
            t = rows["t_s"].to_numpy()
            v = rows[column].to_numpy(dtype=np.float64)
            if column == "goodput_bps":
                v = _smooth(t, v)
            ax.plot(t, v * scale, label=_flow_label(result, name), linewidth=1.2)
        if column == "goodput_bps" and ts["flow_name"].nunique() > 1:
            total = ts.groupby("t_s", sort=True)["goodput_bps"].sum(min_count=1)
            tt = total.index.to_numpy()
            ax.plot(
                tt,
                _smooth(tt, total.to_numpy(dtype=np.float64)) * scale,
                label="total",
                color="black",
                linewidth=1.0,
                linestyle="--",
            )
        _style(ax, ylabel, f"{title} - {result.scenario.name}")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="best", fontsize="small")
        path = directory / filename
        fig.savefig(path, **_SAVE)
        paths.append(path)
    return paths


def _flow_order(result: Result) -> list[str]:
    return [f["name"] for f in result.config["flows"]]


def plot_compare(results: Mapping[str, Result], path: Path) -> Path:
    """compare.png: goodput (1 s average), cwnd and smoothed RTT over time, one colour
    per variant.

    Several flows of one variant share its colour and differ in line style.
    """
    fig = _figure(height=9.5)
    top, bottom, rtt = fig.subplots(3, 1, sharex=True)
    styles = ["-", "--", ":", "-."]
    colors = [f"C{i % 10}" for i in range(len(results))]
    for color, (label, result) in zip(colors, results.items(), strict=True):
        ts = result.timeseries
        for k, name in enumerate(_flow_order(result)):
            rows = ts[ts["flow_name"] == name]
            if rows.empty:
                continue
            line_label = label if len(result.config["flows"]) == 1 else f"{label}: {name}"
            t = rows["t_s"].to_numpy()
            top.plot(
                t,
                _smooth(t, rows["goodput_bps"].to_numpy(dtype=np.float64)) / 1e6,
                color=color,
                linestyle=styles[k % 4],
                label=line_label,
                linewidth=1.1,
            )
            bottom.plot(
                t,
                rows["cwnd"].to_numpy(dtype=np.float64),
                color=color,
                linestyle=styles[k % 4],
                label=line_label,
                linewidth=1.1,
            )
            srtt = rows["srtt_us"].to_numpy(dtype=np.float64) / 1e3
            rtt.plot(
                t,
                np.where(srtt > 0, srtt, np.nan),
                color=color,
                linestyle=styles[k % 4],
                label=line_label,
                linewidth=1.1,
            )
    names = ", ".join(results)
    _style(top, "Goodput (Mbits/s, 1 s avg)", f"TCP goodput - {names}")
    _style(bottom, "cwnd (packets)", "TCP congestion window")
    _style(rtt, "Smoothed RTT (ms)", "TCP RTT")
    top.set_xlabel("")
    bottom.set_xlabel("")
    for ax in (top, bottom, rtt):
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="best", fontsize="small")
    fig.savefig(path, **_SAVE)
    return path

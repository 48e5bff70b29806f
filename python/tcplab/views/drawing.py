"""The drawing helpers every figure of tcplab shares: one look, one way to a PNG.

The model: a figure is drawn with matplotlib's object API on the Agg canvas (no pyplot
state, no display needed) and saved without a software/date stamp (:data:`SAVE`), so the
same data gives the same bytes. Every figure has time in seconds on x from 0, the unit on
the y axis from 0 with 5 % headroom (a flat line is not hidden by the frame), a light grid,
and its legend outside the axes to the right (it never covers data; a long one is cut to
:data:`MAX_LEGEND_ENTRIES`). Goodput curves are trailing means over
:data:`GOODPUT_WINDOW_S` (in-order delivery arrives in bursts when a loss is repaired).
Numbers in labels and pages are rounded by :func:`sig` (3 significant figures, plain
notation), the report's rounding.

The run's views (:mod:`tcplab.views.plots`, :mod:`~tcplab.views.apps`,
:mod:`~tcplab.views.datapath`), the other views of this package and the experiments'
figures (:mod:`tcplab.experiments`) import these names; this module imports no other module
of tcplab (a leaf of the views floor).
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # matplotlib loads with the first figure: a run without plots never needs it
    from matplotlib.figure import Figure

__all__ = [
    "Plot",
    "SAVE",
    "GOODPUT_WINDOW_S",
    "MAX_LEGEND_ENTRIES",
    "figure",
    "png_bytes",
    "style_axes",
    "legend_outside",
    "integer_ticks",
    "trailing_mean",
    "sig",
]

#: ``Figure.savefig`` options of every PNG: 100 dpi, no software stamp (same data, same bytes).
SAVE = {"dpi": 100, "metadata": {"Software": None}}

#: Averaging window of goodput curves, seconds.
GOODPUT_WINDOW_S = 1.0

#: Legend entries shown at most; beyond, the first ones and a "... and N more" line (a
#: workload's many connections would make the legend taller than the figure).
MAX_LEGEND_ENTRIES = 14


@dataclass(frozen=True)
class Plot:
    """One rendered figure: its file name under ``plots/``, a caption and the PNG bytes."""

    filename: str
    caption: str
    png: bytes


def figure(height: float = 4.0, width: float = 10.0) -> Figure:
    """A new figure of ``width`` x ``height`` inches, constrained layout, on the Agg canvas."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def png_bytes(fig: Figure) -> bytes:
    """The figure as PNG bytes (:data:`SAVE`)."""
    # savefig lays a constrained figure out twice (a draw without rendering, then the
    # rendering draw, which lays out again): lay it out once here and freeze it
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    engine = fig.get_layout_engine()
    if isinstance(engine, ConstrainedLayoutEngine):
        engine.execute(fig)
        fig.set_layout_engine("none")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", **SAVE)
    return buf.getvalue()


def style_axes(
    ax: Any, ylabel: str, title: str | None = None, *, xlabel: str = "Time (s)", xmax: float | None = None
) -> None:
    """Labels, a left-aligned title, a light grid, y from 0 with 5 % headroom, x from 0 (to
    ``xmax`` when given)."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, loc="left", fontsize="medium")
    ax.grid(True, alpha=0.3)
    top = ax.get_ylim()[1]
    ax.set_ylim(0, top * 1.05 if top > 0 else 1.0)  # headroom: a flat line is not hidden by the frame
    if xmax:
        ax.set_xlim(0, xmax)
    else:
        ax.set_xlim(left=0)


def legend_outside(ax: Any, **kw: Any) -> None:
    """Legend to the right of the axes: it never covers the data."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return
    if len(handles) > MAX_LEGEND_ENTRIES and "handles" not in kw:
        from matplotlib.patches import Patch

        keep = MAX_LEGEND_ENTRIES - 1
        more = Patch(color="none", label=f"... and {len(handles) - keep} more")
        kw = {**kw, "handles": [*handles[:keep], more], "labels": [*labels[:keep], more.get_label()]}
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", borderaxespad=0.0, **kw)


def integer_ticks(axis: Any, **kw: Any) -> None:
    """Ticks at whole numbers only on ``axis`` (counts: drops, segments, connections)."""
    from matplotlib.ticker import MaxNLocator

    axis.set_major_locator(MaxNLocator(integer=True, **kw))


def trailing_mean(t: np.ndarray, v: np.ndarray) -> np.ndarray:
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


def sig(x: float, digits: int = 3) -> str:
    """``x`` to ``digits`` significant figures, in plain notation (``95.342 -> "95.3"``,
    ``4.585 -> "4.58"`` or ``"4.59"`` by binary rounding, ``1234.5 -> "1230"``)."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    if x == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(x)))
    decimals = digits - 1 - magnitude
    value = round(x, decimals)
    if value != 0 and math.floor(math.log10(abs(value))) > magnitude:  # 9.996 -> 10.0 -> "10"
        decimals -= 1
        value = round(x, decimals)
    return f"{value:.{max(0, decimals)}f}"

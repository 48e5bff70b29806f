"""The microburst-ring experiment's figures and the trace readings they show.

Three figures, drawn as ``tcplab.views.plots`` draws a run's (matplotlib's object API on
the Agg canvas, no date stamp, so the same runs give the same bytes):

* ``ring-occupancy.png``: nginx's rings (``rx_ring_used``, packets, summed over the RSS
  queues, as ``host_series`` samples it) and the drops per sample through the first burst,
  ring 1024 against ring 8192, the descriptors in all dashed;
* ``bursts.png``: retransmitted segments and RTOs (TCPTimeouts) per burst, both rings;
* ``ring-sweep.png``: retransmission rate and rate(TCPTimeouts) / CurrEstab (per second)
  against the ring size, the story's 3 %/s alert dashed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tcplab.views.drawing import figure as _figure
from tcplab.views.drawing import legend_outside as _legend
from tcplab.views.drawing import png_bytes as _png

if TYPE_CHECKING:
    import pandas as pd

    from tcplab.results import Result

NGINX = "nginx"
APP = "events"
#: Drops within this long after a burst's start belong to the burst itself (its tail loss
#: probes come about 200 ms later).
BURST_SPAN_NS = 100_000_000


def _nginx_series(res: Result) -> pd.DataFrame:
    hs = res.host_series
    s = hs[hs["host_name"] == NGINX].sort_values("t_ns")
    # signed: times before a burst's start give negative offsets, not a wrapped u64
    return s.assign(t_ns=s["t_ns"].astype(np.int64))


def _first_burst_ns(res: Result) -> int:
    b = res.apps[APP].table("bursts")
    return int(b["start_ns"].iloc[0])


def burst_trace(res: Result) -> dict[str, Any]:
    """The first burst as the samples show it: when the first drop fell, how full the rings
    were in that sample, how many packets the burst lost."""
    s = _nginx_series(res)
    start = _first_burst_ns(res)
    t = s["t_ns"].to_numpy()
    dropped = s["rx_dropped"].to_numpy().astype(np.int64)
    used = s["rx_ring_used"].to_numpy().astype(np.int64)
    before = dropped[t <= start][-1] if np.any(t <= start) else 0
    span = (t > start) & (t <= start + BURST_SPAN_NS)
    grew = np.nonzero(span & (dropped > before))[0]
    if len(grew) == 0:
        return {"start_s": start / 1e9, "first_drop_ms": float("nan"), "used_at_first_drop": 0, "drops": 0}
    i = int(grew[0])
    after = dropped[span][-1]
    return {
        "start_s": start / 1e9,
        "first_drop_ms": (t[i] - start) / 1e6,
        "used_at_first_drop": int(used[i]),
        "drops": int(after - before),
    }


def peak_used(res: Result) -> int:
    s = _nginx_series(res)
    return int(s["rx_ring_used"].max()) if len(s) else 0


def first_completion_ms(res: Result) -> float:
    b = res.apps[APP].table("bursts")
    return float(b["completion_ms"].iloc[0])


def rto_connections(res: Result) -> tuple[int, int]:
    """Connections that had an RTO, and how many of them retransmitted more segments than
    they had RTOs (a tail loss probe before)."""
    f = res.flows
    f = f[f["app"] == APP] if "app" in f.columns else f
    rto = f[f["timeouts"] > 0]
    return int(len(rto)), int((rto["retrans_segs"] > rto["timeouts"]).sum())


def _ring_total(res: Result) -> int:
    nic = next(n for n in res.config["nodes"] if n["name"] == NGINX)["nic"]
    return int(nic["rx_ring"]) * int(nic["rx_queues"])


def ring_plot(small: Result, large: Result, path: Path) -> None:
    fig = _figure(height=5.5)
    ax, axd = fig.subplots(2, 1, sharex=True)
    start = _first_burst_ns(small)
    window_ns = int(small.apps[APP].spec["window_ns"])
    lo, hi = start - 2_000_000, start + window_ns + 10_000_000
    for res, color in ((small, "#d62728"), (large, "#1f77b4")):
        s = _nginx_series(res)
        s = s[(s["t_ns"] >= lo) & (s["t_ns"] <= hi)]
        x = (s["t_ns"].to_numpy() - start) / 1e6
        ring = next(n for n in res.config["nodes"] if n["name"] == NGINX)["nic"]["rx_ring"]
        ax.step(x, s["rx_ring_used"], where="post", color=color, label=f"rx ring {ring}: packets held")
        ax.axhline(_ring_total(res), color=color, ls="--", lw=1, label=f"rx ring {ring}: descriptors in all")
        drops = np.diff(
            s["rx_dropped"].to_numpy().astype(np.int64), prepend=int(s["rx_dropped"].iloc[0]) if len(s) else 0
        )
        axd.step(x, drops, where="post", color=color, label=f"rx ring {ring}: rx_drops per sample")
    ax.axvspan(0, window_ns / 1e6, color="#f2d16b", alpha=0.25, label="burst window")
    axd.axvspan(0, window_ns / 1e6, color="#f2d16b", alpha=0.25)
    ax.set_ylabel("Packets in nginx's rings")
    ax.set_title(
        "First burst: nginx's receive rings (host_series rx_ring_used) and drops", loc="left", fontsize="medium"
    )
    axd.set_ylabel("Drops per sample")
    axd.set_xlabel("Time since the burst started (ms)")
    for a in (ax, axd):
        a.grid(True, alpha=0.3)
        a.set_ylim(bottom=0)
    _legend(ax)
    _legend(axd)
    path.write_bytes(_png(fig))


def burst_plot(small: Result, large: Result, path: Path) -> None:
    fig = _figure(height=4.5)
    ax = fig.subplots()
    width = 0.2
    bursts: list[int] = []
    for k, (res, color) in enumerate(((small, "#d62728"), (large, "#1f77b4"))):
        b = res.apps[APP].table("bursts")
        ring = next(n for n in res.config["nodes"] if n["name"] == NGINX)["nic"]["rx_ring"]
        x = b["burst"].to_numpy().astype(float)
        bursts = sorted(set(bursts) | set(int(v) for v in x))
        rt, rto = b["retrans_segs"], b["tcp_timeouts"]
        ax.bar(
            x + (2 * k - 1.5) * width,
            rt,
            width,
            color=color,
            alpha=0.5,
            label=f"rx ring {ring}: retransmitted segments ({int(rt.sum()):,} in all)",
        )
        ax.bar(
            x + (2 * k - 0.5) * width,
            rto,
            width,
            color=color,
            label=f"rx ring {ring}: RTOs, TCPTimeouts ({int(rto.sum()):,} in all)",
        )
    ax.set_xticks(bursts)
    ax.set_xlabel("Burst (one a second)")
    ax.set_ylabel("Segments / RTOs per burst")
    ax.set_title("Per burst: retransmissions and RTOs on the four senders", loc="left", fontsize="medium")
    ax.grid(True, alpha=0.3, axis="y")
    _legend(ax)
    path.write_bytes(_png(fig))


def sweep_plot(sweep: Mapping[int, Mapping[str, Any]], threshold: float, path: Path) -> None:
    fig = _figure(height=4.5)
    ax = fig.subplots()
    rings = sorted(sweep)
    ax.plot(
        rings,
        [100 * sweep[r]["retrans_rate"] for r in rings],
        "o-",
        color="#333333",
        label="retransmitted segments (%)",
    )
    ax.plot(
        rings,
        [100 * sweep[r]["timeouts_per_estab_s"] for r in rings],
        "s-",
        color="#b00020",
        label="rate(TCPTimeouts) / CurrEstab (%/s)",
    )
    ax.axhline(100 * threshold, color="#b00020", ls="--", lw=1, label="the story's alert: 3 %/s")
    ax.set_xscale("log", base=2)
    ax.set_xticks(rings, [str(r) for r in rings])
    ax.set_xlabel("nginx's rx ring (descriptors per queue, ethtool -g)")
    ax.set_ylabel("Percent")
    ax.set_title("Against the ring size", loc="left", fontsize="medium")
    ax.grid(True, alpha=0.3)
    ax.set_ylim(bottom=0)
    _legend(ax)
    path.write_bytes(_png(fig))

"""The mechanism of story 000 as the runs' own traces show it, with its figures.

Four figures, drawn with the run views' helpers (:mod:`tcplab.views.drawing`: Agg canvas,
same style):

* ``collapse.png`` -- under the bursts (seed 1, CUBIC on marin): marin's four sockets' cwnd
  and ssthresh as ``ss`` on marin shows them, nezuko's connections' RTO backoff (the data's
  sender), and the player's buffer under the bursts and under independent loss of the same
  mean;
* ``stuck-search.png`` -- the lowest 10-second goodput of each condition of the search, BBR
  and CUBIC side by side, on a log axis with the story's 100 kbit/s;
* ``bbr-trace.png`` -- the slowest BBR run of the search over time: goodput, BBR's bandwidth
  estimate, the long-term (policer) rate lt_bw while in use, and the time in RTO recovery;
* ``writes.png`` -- each remote-write attempt's latency under the bursts (seed 1), BBR and
  CUBIC (timeouts at 120 s).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tcplab.experiments.base import Explanation
from tcplab.views.drawing import figure as _figure
from tcplab.views.drawing import legend_outside as _legend
from tcplab.views.drawing import png_bytes as _png
from tcplab.views.drawing import style_axes as _style

if TYPE_CHECKING:
    from tcplab.experiments.cluster_bbr_timeouts import ClusterBbrTimeouts
    from tcplab.results import Result

__all__ = ["explanations"]

_CC_COLORS = {"cubic": "tab:orange", "bbr": "tab:blue"}


def _write(fig: Any, plots_dir: Path, name: str) -> str:
    plots_dir.mkdir(parents=True, exist_ok=True)
    (plots_dir / name).write_bytes(_png(fig))
    return name


def _fmt_rate(bps: float | None) -> str:
    if bps is None:
        return "-"
    return f"{bps / 1e3:.3g} kbit/s" if bps < 1e6 else f"{bps / 1e6:.3g} Mbit/s"


def _collapse_figure(results: Mapping[str, Result], loss_start_s: float, plots_dir: Path) -> str:
    from tcplab.experiments.cluster_bbr_timeouts.plan import nfs_label

    fig = _figure(height=9.0)
    axes = fig.subplots(3, 1, sharex=True)
    r = results[nfs_label("cubic", "bursts", 1)]
    ts = r.timeseries
    ax = axes[0]
    for i, name in enumerate(sorted(ts["flow_name"].unique())):
        rows = ts[ts["flow_name"] == name]
        ax.plot(rows["t_s"], rows["receiver_cwnd"], lw=0.8, label=f"{name} cwnd", color=f"C{i}")
        ss = rows["receiver_ssthresh"].to_numpy().astype(np.float64)
        ss[ss >= 2**31 - 1] = np.nan
        ax.plot(rows["t_s"], ss, lw=0.8, ls="--", color=f"C{i}", label=f"{name} ssthresh")
    ax.set_yscale("symlog", linthresh=4)
    ax.axhline(2, color="black", lw=0.6, ls=":")
    _style(ax, "packets", "ss on marin (the NFS client, CUBIC): its sockets' cwnd and ssthresh, bursts (dotted: 2)")
    _legend(ax)
    ax = axes[1]
    for i, name in enumerate(sorted(ts["flow_name"].unique())):
        rows = ts[ts["flow_name"] == name]
        ax.plot(rows["t_s"], rows["backoff"], lw=0.9, color=f"C{i}", label=name)
    _style(ax, "RTO doublings", "nezuko (the data's sender, CUBIC): RTO backoff of each connection")
    _legend(ax)
    ax = axes[2]
    for loss, color in (("bursts", "tab:red"), ("random", "tab:green"), ("measured", "tab:grey")):
        series = results[nfs_label("cubic", loss, 1)].apps["plex"].tables.get("series")
        if series is not None and len(series):
            t = series["t_ns"] / 1e9
            ax.plot(t, series["buffer_ns"] / 1e9, color=color, label=loss)
            stalled = (series["playing"].to_numpy() == 0) & (t.to_numpy() > loss_start_s)
            ax.fill_between(t, 0, 31, where=stalled, color=color, alpha=0.15, step="post", lw=0)
    for a in axes:
        a.axvline(loss_start_s, color="tab:red", lw=0.9, ls="--")
    _style(ax, "player buffer (s)", "The player's buffer per loss (shaded: stalled; dashed line: the loss begins)")
    _legend(ax)
    return _write(fig, plots_dir, "collapse.png")


def _stuck_figure(points: Mapping[str, dict[str, Any]], plots_dir: Path) -> str:
    fig = _figure(height=5.5)
    ax = fig.subplots()
    conds = list(dict.fromkeys(v["condition"] for v in points.values()))
    y = np.arange(len(conds))
    for k, cc in enumerate(("bbr", "cubic")):
        vals = []
        for c in conds:
            v = next((p for p in points.values() if p["condition"] == c and p["cc"] == cc), None)
            vals.append(max(1e3, (v or {}).get("min_bps") or 0))
        ax.barh(y + (k - 0.5) * 0.4, vals, height=0.4, color=_CC_COLORS[cc], label=cc.upper())
    ax.set_yticks(y, conds, fontsize="small")
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.axvline(100e3, color="black", ls="--", lw=0.8, label="story: ~100 kbit/s")
    ax.set_xlabel("lowest goodput over 10 s (bit/s, log; 1 kbit/s = none)")
    ax.set_title(
        "The search: a bulk flow from a 100 Mbit/s Bandwidth-Manager pod, one condition each",
        loc="left",
        fontsize="medium",
    )
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    return _write(fig, plots_dir, "stuck-search.png")


def _bbr_trace_figure(runs: list[tuple[Result, str, str]], plots_dir: Path) -> dict[str, Any]:
    """Per run (result, label, condition): goodput, BBR's estimate and lt_bw while in use;
    below it, the time in RTO recovery and with lt_use_bw set."""
    fig = _figure(height=4.5 * len(runs))
    axes = fig.subplots(2 * len(runs), 1, height_ratios=[3, 1] * len(runs))
    stats: dict[str, Any] = {}
    for n, (result, label, condition) in enumerate(runs):
        ax, ax2 = axes[2 * n], axes[2 * n + 1]
        ts = result.timeseries
        rows = ts[ts["flow_name"] == "bulk"]
        t = rows["t_s"].to_numpy()
        ax.plot(t, rows["goodput_bps"].to_numpy(dtype=np.float64) / 1e6, label="goodput", color="black", lw=0.8)
        ax.plot(t, rows["bbr_bw_bps"].to_numpy(dtype=np.float64) / 1e6, label="BBR bw estimate", color="tab:blue")
        lt = rows["bbr_lt_bw_bps"].to_numpy(dtype=np.float64) / 1e6
        on = rows["bbr_lt_use_bw"].to_numpy() > 0
        ax.plot(t, np.where(on, lt, np.nan), label="lt_bw (in use)", color="tab:purple", lw=2.5)
        _style(ax, "Mbit/s", f"BBR, {condition} ({label})")
        _legend(ax)
        loss = (rows["ca_state_name"] == "Loss").to_numpy().astype(float)
        ax2.fill_between(t, 0, loss, step="post", color="tab:red", alpha=0.5, label="Loss (RTO recovery)")
        ax2.fill_between(t, 0, on.astype(float) * 0.5, step="post", color="tab:purple", alpha=0.5, label="lt_use_bw")
        _style(ax2, "state")
        ax2.set_yticks([])
        _legend(ax2)
        stats[label] = {
            "loss_fraction": float(loss.mean()) if len(loss) else 0.0,
            "lt_fraction": float(on.mean()) if len(on) else 0.0,
            "bw_median_bps": float(np.median(rows["bbr_bw_bps"])) if len(rows) else 0.0,
        }
    return {"figure": _write(fig, plots_dir, "bbr-trace.png"), "stats": stats}


def _writes_figure(results: Mapping[str, Result], check_s: float, loss_start_s: float, plots_dir: Path) -> str:
    from tcplab.experiments.cluster_bbr_timeouts.plan import rw_label

    fig = _figure(height=4.5)
    ax = fig.subplots()
    for cc in ("bbr", "cubic"):
        req = results[rw_label(cc, "bursts", 1)].apps["vmagent"].tables.get("requests")
        if req is None or not len(req):
            continue
        start = req["start_ns"].to_numpy() / 1e9 / 60
        lat = req["latency_ns"].to_numpy() / 1e9
        to = (req["outcome"] == "timeout").to_numpy()
        ax.scatter(
            start[~to], np.maximum(lat[~to], 1e-4), s=4, color=_CC_COLORS[cc], label=f"{cc.upper()} ok", alpha=0.6
        )
        ax.scatter(start[to], lat[to], s=40, marker="x", color=_CC_COLORS[cc], label=f"{cc.upper()} timeout")
    ax.set_yscale("log")
    ax.axvline(check_s / 60, color="black", ls="--", lw=0.8, label="2 minutes")
    ax.axvline(loss_start_s / 60, color="tab:red", ls="--", lw=0.8, label="loss begins")
    ax.set_xlabel("attempt start (min)")
    ax.set_ylabel("attempt latency (s, log)")
    ax.set_title("vmagent -> vmsingle remote writes under the bursts: each attempt", loc="left", fontsize="medium")
    ax.grid(True, alpha=0.3)
    _legend(ax)
    return _write(fig, plots_dir, "writes.png")


def explanations(
    exp: ClusterBbrTimeouts, results: Mapping[str, Result], quick: bool, plots_dir: Path
) -> list[Explanation]:
    import tcplab.experiments.cluster_bbr_timeouts.analysis as analysis
    from tcplab.experiments.cluster_bbr_timeouts.plan import nfs_label, rw_label, seeds
    from tcplab.experiments.cluster_bbr_timeouts.readings import CHECK_S, LOSS_START_S, mechanism, stall_mechanism
    from tcplab.experiments.cluster_bbr_timeouts.sweep import STUCK_POINTS

    out: list[Explanation] = []
    # 1. who sends what; the stall
    rb = results[nfs_label("cubic", "bursts", 1)]
    marin = analysis.receiver_collapse(rb)
    st = analysis.first_stall(rb, LOSS_START_S)
    rnd = [analysis.receiver_collapse(results[nfs_label("cubic", "random", s)]) for s in seeds(quick)]
    text = (
        "The data flows nezuko -> marin and nezuko's TCP sends it; marin sends the READ calls and the ACKs. "
        "`ss` on marin shows marin's sockets: under the bursts up to "
        f"{marin['max_at_once']} of them were at cwnd<=2 ssthresh<=2 at once (marin retransmitted "
        f"{marin['retrans_segs']} calls): what the story saw. "
    )
    if st.get("stalled"):
        text += (
            f"The player stalled at {st['start_s']:.4g} s for {st['length_s']:.3g} s. During that stall nezuko's "
            f"connections were in RTO recovery {100 * st['sender_loss_fraction']:.3g} % of the time, with a backoff "
            f"of up to {st['sender_backoff_max']} doublings, and their lowest ssthresh was "
            f"{st['sender_ssthresh_min']}. "
        )
    text += (
        stall_mechanism(exp._stream(results, quick))
        + " Under independent loss marin's sockets collapsed as far (up to "
        f"{max(x['max_at_once'] for x in rnd)} at once over {len(rnd)} seeds): cwnd:2 ssthresh:2 on marin is a "
        "sign of loss, not the stall's cause."
    )
    out.append(
        Explanation(
            "Who sends what, and what stalls the player", text, _collapse_figure(results, LOSS_START_S, plots_dir)
        )
    )
    # 2. the search
    points = {}
    for p in STUCK_POINTS:
        if p.label in results:
            d = {"condition": p.condition, "cc": p.cc, **analysis.slowest_window(results[p.label], "bulk")}
            d["mechanism"] = mechanism(d)
            points[p.label] = d
    bbr_points = {k: v for k, v in points.items() if v["cc"] == "bbr" and v["min_bps"] is not None}
    slow = min(bbr_points, key=lambda k: bbr_points[k]["min_bps"])
    sp = bbr_points[slow]
    twin = points.get(f"{slow}-cubic")
    out.append(
        Explanation(
            "Where BBR stalls, CUBIC stalls as low: the retransmission timer holds both",
            f"The slowest BBR condition was {sp['condition']}: {_fmt_rate(sp['min_bps'])} over its worst 10 s "
            f"(from {sp['at_s']:.3g} s), with {100 * sp['loss_state_fraction']:.3g} % of that window in the Loss "
            f"state (RTO recovery) and BBR's estimate never below {_fmt_rate(sp['bbr_bw_min_bps'])}"
            + (f"; CUBIC under the same condition: {_fmt_rate(twin['min_bps'])}" if twin else "")
            + ". Per condition: "
            + "; ".join(
                f"{v['condition']} ({v['cc'].upper()}): {_fmt_rate(v['min_bps'])} ({v['mechanism']})"
                for v in points.values()
            )
            + ".",
            _stuck_figure(points, plots_dir),
        )
    )
    tr = _bbr_trace_figure([(results[slow], slow, sp["condition"])], plots_dir)
    out.append(
        Explanation(
            "BBR's long-term (policer) sampling over time",
            " ".join(
                f"In {k}, BBR's bandwidth estimate had a median of {_fmt_rate(v['bw_median_bps'])} while the flow "
                f"spent {100 * v['loss_fraction']:.3g} % of the run in RTO recovery and "
                f"{100 * v['lt_fraction']:.3g} % with lt_use_bw set."
                for k, v in tr["stats"].items()
            )
            + " The long-term sampler (tcp_bbr.c bbr_lt_bw_sampling()) only locks in after two consecutive "
            "lossy intervals (>= 20 % lost) with delivery rates within 1/8 or 4 kbit/s of each other, and "
            "locks onto the rate the path delivered then: near 100 kbit/s only if the path delivered that "
            "little while losing 20 % or more, i.e. a policer at that rate, not a healthy gigabit LAN.",
            tr["figure"],
        )
    )
    # 3. the writes
    wb = analysis.writes(results[rw_label("bbr", "bursts", 1)], window_s=CHECK_S)
    wc = analysis.writes(results[rw_label("cubic", "bursts", 1)], window_s=CHECK_S)
    minutes = results[rw_label("bbr", "bursts", 1)].duration_s / 60
    out.append(
        Explanation(
            "Write timeouts: a connection held in RTO recovery, the same with CUBIC",
            f"Under the bursts, over {minutes:.3g} minutes (seed 1), BBR's writer had {wb['timeouts']} timeouts "
            f"and CUBIC's {wc['timeouts']}; {100 * (wb['sent_fraction'] or 0):.3g} % and "
            f"{100 * (wc['sent_fraction'] or 0):.3g} % of the batches were sent. The writer's connection spent "
            f"{100 * wb['loss_state_fraction']:.3g} % (BBR) and {100 * wc['loss_state_fraction']:.3g} % (CUBIC) "
            f"of the run in RTO recovery, up to {wb['longest_loss_state_s']:.4g} s and "
            f"{wc['longest_loss_state_s']:.4g} s at a stretch: a batch behind a backed-off RTO waits until the "
            "timer fires again. No attempt can time out before 120 s, so a 2-minute check sees none.",
            _writes_figure(results, CHECK_S, LOSS_START_S, plots_dir),
        )
    )
    return out

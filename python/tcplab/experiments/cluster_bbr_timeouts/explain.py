"""The mechanism of story 000 as the runs' own traces show it, with its figures.

Four figures, drawn with the run views' helpers (:mod:`tcplab.views.plots`: Agg canvas,
same style):

* ``collapse.png`` -- the NFS connections' cwnd and ssthresh under bursty loss, CUBIC and
  BBR, and the player's buffer below them;
* ``stuck-search.png`` -- the lowest 10-second goodput of each condition of the search,
  on a log axis with the story's 100 kbit/s, coloured by what held the flow down;
* ``bbr-trace.png`` -- the slowest BBR run of the search over time: goodput, BBR's
  bandwidth estimate, the long-term (policer) rate lt_bw while in use, and the time spent
  in RTO recovery (ca_state Loss);
* ``writes.png`` -- each remote-write attempt's latency over the run (timeouts at 120 s),
  with the 2-minute check marked.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tcplab.experiments.base import Explanation
from tcplab.units import plural
from tcplab.views.drawing import figure as _figure
from tcplab.views.drawing import legend_outside as _legend
from tcplab.views.drawing import png_bytes as _png
from tcplab.views.drawing import style_axes as _style

if TYPE_CHECKING:
    from tcplab.experiments.cluster_bbr_timeouts import ClusterBbrTimeouts
    from tcplab.results import Result

__all__ = ["explanations"]

_CC_COLORS = {"cubic": "tab:orange", "bbr": "tab:blue"}
_MECH_COLORS = {
    "RTO backoff": "tab:red",
    "loss recovery": "tab:orange",
    "lt_bw": "tab:purple",
    "bw estimate": "tab:brown",
    "not stuck": "tab:green",
}


def _write(fig: Any, plots_dir: Path, name: str) -> str:
    plots_dir.mkdir(parents=True, exist_ok=True)
    (plots_dir / name).write_bytes(_png(fig))
    return name


def _played(p: dict[str, Any]) -> str:
    return "never started" if not p["started"] else f"played {100 * p['played_fraction']:.3g} % of the time"


def _fmt_rate(bps: float | None) -> str:
    if bps is None:
        return "-"
    return f"{bps / 1e3:.3g} kbit/s" if bps < 1e6 else f"{bps / 1e6:.3g} Mbit/s"


def _collapse_figure(results: Mapping[str, Result], loss_start_s: float, plots_dir: Path) -> str:
    fig = _figure(height=8.0)
    axes = fig.subplots(3, 1, sharex=True)
    for ax, cc in zip(axes[:2], ("cubic", "bbr"), strict=True):
        r = results[f"nfs-{cc}"]
        ts = r.timeseries
        for i, name in enumerate(sorted(ts["flow_name"].unique())):
            rows = ts[ts["flow_name"] == name]
            ax.plot(rows["t_s"], rows["cwnd"], lw=0.8, label=f"{name} cwnd", color=f"C{i}")
            ss = rows["ssthresh"].to_numpy().astype(np.float64)
            ss[ss >= 2**31 - 1] = np.nan
            ax.plot(rows["t_s"], ss, lw=0.8, ls="--", color=f"C{i}", label=f"{name} ssthresh")
        ax.set_yscale("symlog", linthresh=4)
        ax.axhline(2, color="black", lw=0.6, ls=":")
        ax.set_ylabel("packets")
        ax.set_title(
            f"NFS server -> Plex node, {cc.upper()}: cwnd and ssthresh (dotted line: 2)", loc="left", fontsize="medium"
        )
        ax.grid(True, alpha=0.3)
        _legend(ax)
    ax = axes[2]
    for cc in ("cubic", "bbr"):
        series = results[f"nfs-{cc}"].apps["plex"].tables.get("series")
        if series is not None and len(series):
            t = series["t_ns"] / 1e9
            ax.plot(t, series["buffer_ns"] / 1e9, color=_CC_COLORS[cc], label=cc.upper())
            stalled = (series["playing"].to_numpy() == 0) & (t.to_numpy() > loss_start_s)
            ax.fill_between(t, 0, 31, where=stalled, color=_CC_COLORS[cc], alpha=0.15, step="post", lw=0)
    for a in axes:
        a.axvline(loss_start_s, color="tab:red", lw=0.9, ls="--")
    ax.annotate(
        "loss begins",
        (loss_start_s, 31),
        xytext=(4, -10),
        textcoords="offset points",
        color="tab:red",
        fontsize="small",
    )
    _style(ax, "player buffer (s)", "The player's buffer (30 s at most; shaded: stalled)")
    _legend(ax)
    return _write(fig, plots_dir, "collapse.png")


def _stuck_figure(points: Mapping[str, dict[str, Any]], plots_dir: Path) -> str:
    fig = _figure(height=4.8)
    ax = fig.subplots()
    labels = [v["condition"] for v in points.values()]
    vals = [max(1e3, v["min_bps"] or 0) for v in points.values()]
    colors = [_MECH_COLORS.get(v["mechanism"], "grey") for v in points.values()]
    y = np.arange(len(labels))
    ax.barh(y, vals, color=colors)
    ax.set_yticks(y, labels, fontsize="small")
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
    from matplotlib.patches import Patch

    handles = [Patch(color=c, label=m) for m, c in _MECH_COLORS.items()]
    handles.append(ax.get_legend_handles_labels()[0][0])
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
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


def _writes_figure(
    results: Mapping[str, Result], check_s: float, loss_start_s: float, episode_end_s: float, plots_dir: Path
) -> str:
    fig = _figure(height=4.5)
    ax = fig.subplots()
    for cc in ("bbr", "cubic"):
        req = results[f"rw-{cc}"].apps["vmagent"].tables.get("requests")
        if req is None or not len(req):
            continue
        start = req["start_ns"].to_numpy() / 1e9 / 60
        lat = req["latency_ns"].to_numpy() / 1e9
        to = (req["outcome"] == "timeout").to_numpy()
        ax.scatter(
            start[~to], np.maximum(lat[~to], 1e-4), s=4, color=_CC_COLORS[cc], label=f"{cc.upper()} ok", alpha=0.6
        )
        ax.scatter(start[to], lat[to], s=40, marker="x", color=_CC_COLORS[cc], label=f"{cc.upper()} timeout")
        ep = results.get(f"rw-{cc}-episode")
        ereq = ep.apps["vmagent"].tables.get("requests") if ep is not None else None
        if ereq is not None and len(ereq):
            eto = (ereq["outcome"] == "timeout").to_numpy()
            ax.scatter(
                ereq["start_ns"].to_numpy()[eto] / 1e9 / 60,
                ereq["latency_ns"].to_numpy()[eto] / 1e9 * 1.15,
                s=30,
                marker="v",
                color=_CC_COLORS[cc],
                label=f"{cc.upper()} timeout, loss ending at {episode_end_s / 60:.3g} min",
            )
    ax.set_yscale("log")
    ax.axvline(check_s / 60, color="black", ls="--", lw=0.8, label="the 2-minute check")
    ax.axvline(loss_start_s / 60, color="tab:red", ls="--", lw=0.8, label="loss begins")
    ax.axvline(episode_end_s / 60, color="tab:red", ls=":", lw=0.8, label="end of the loss episode")
    ax.set_xlabel("attempt start (min)")
    ax.set_ylabel("attempt latency (s, log)")
    ax.set_title("vmagent -> vmsingle remote writes: each attempt", loc="left", fontsize="medium")
    ax.grid(True, alpha=0.3)
    _legend(ax)
    return _write(fig, plots_dir, "writes.png")


def explanations(
    exp: ClusterBbrTimeouts, results: Mapping[str, Result], quick: bool, plots_dir: Path
) -> list[Explanation]:
    import tcplab.experiments.cluster_bbr_timeouts.analysis as analysis
    from tcplab.experiments.cluster_bbr_timeouts.readings import EPISODE_END_S, LOSS_START_S, episode_text, mechanism
    from tcplab.experiments.cluster_bbr_timeouts.sweep import STUCK_POINTS

    out: list[Explanation] = []
    # 1. the collapse
    c = analysis.collapse(results["nfs-cubic"])
    b = analysis.collapse(results["nfs-bbr"])
    pc = analysis.player(results["nfs-cubic"])
    pb = analysis.player(results["nfs-bbr"])
    ec = analysis.buffer_after(results["nfs-cubic"], LOSS_START_S)
    eb = analysis.buffer_after(results["nfs-bbr"], LOSS_START_S)
    worst = max(c["collapsed_s"].items(), key=lambda kv: kv[1]) if c["collapsed_s"] else ("-", 0.0)
    out.append(
        Explanation(
            "cwnd:2 ssthresh:2 is CUBIC's answer to bursts of loss",
            f"Under the same bursty loss, CUBIC's NFS connections spent up to {worst[1]:.3g} s ({worst[0]}) at "
            f"cwnd <= 2 with ssthresh <= 2, up to {c['max_at_once']} of them at once (ssthresh fell to "
            f"{c['ssthresh_min']}); each burst costs a multiplicative decrease and a burst that takes the "
            "retransmissions too costs an RTO (cwnd 1), so ssthresh ratchets down to its floor of 2 and "
            "cwnd grows back one packet per RTT from there. BBR's lowest ssthresh was "
            f"{b['ssthresh_min']} packets (set once, when STARTUP ended: tcp_bbr.c bbr_check_drain()) and "
            f"its cwnd fell to {b['cwnd_min']} only during RTOs. The player: CUBIC "
            f"{_played(pc)}, "
            f"READ p99 {pc['read_p99_ms'] or 0:.3g} ms; BBR played {100 * pb['played_fraction']:.3g} % "
            f"({plural(pb['stalls'], 'stall')}), READ p99 {pb['read_p99_ms'] or 0:.3g} ms. The loss begins at "
            f"{LOSS_START_S:.0f} s, once the buffer is full: CUBIC {episode_text(ec)}; BBR {episode_text(eb)}. "
            "With no delivery the buffer drains 1 s per second of playback, so a full 30 s buffer is the "
            "time CUBIC's collapsed connections have before the first stall; once stalled, the player "
            "waits for its readahead to refill (READs of 1 MiB over connections at cwnd 1-2 with RTOs).",
            _collapse_figure(results, LOSS_START_S, plots_dir),
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
    out.append(
        Explanation(
            "Where BBR stalls, the retransmission timer holds it, not its model",
            f"The slowest BBR condition was {sp['condition']}: {_fmt_rate(sp['min_bps'])} over its worst 10 s "
            f"(from {sp['at_s']:.3g} s), with {100 * sp['loss_state_fraction']:.3g} % of that window in the Loss "
            f"state (RTO recovery) and BBR's estimate never below {_fmt_rate(sp['bbr_bw_min_bps'])}. "
            + "Per condition: "
            + "; ".join(f"{v['condition']}: {_fmt_rate(v['min_bps'])} ({v['mechanism']})" for v in points.values())
            + ".",
            _stuck_figure(points, plots_dir),
        )
    )
    most_lt = max(bbr_points, key=lambda k: bbr_points[k]["lt_use_fraction_run"])
    shown = [slow] + ([most_lt] if most_lt != slow and bbr_points[most_lt]["lt_use_fraction_run"] > 0 else [])
    tr = _bbr_trace_figure([(results[k], k, bbr_points[k]["condition"]) for k in shown], plots_dir)
    lt_runs = {k: v for k, v in bbr_points.items() if v["lt_use_fraction_run"] > 0}
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
            "lossy intervals (>= 20 % lost) with delivery rates within 1/8 or 4 kbit/s of each other; "
            + (
                "it did in "
                + ", ".join(
                    f"{v['condition']} ({100 * v['lt_use_fraction_run']:.3g} % of the run, lt_bw "
                    f">= {_fmt_rate(v['lt_bw_min_bps'])})"
                    for v in lt_runs.values()
                )
                if lt_runs
                else "no condition of the search made it lock in"
            )
            + ". It locks onto the rate the path delivered during those intervals: near 100 kbit/s only if "
            "the path delivered that little while losing 20 % or more, i.e. a policer at that rate, not a "
            "healthy gigabit LAN.",
            tr["figure"],
        )
    )
    # 3. the writes
    wb = analysis.writes(results["rw-bbr"], window_s=exp_check_s(exp))
    wc = analysis.writes(results["rw-cubic"], window_s=exp_check_s(exp))
    minutes = results["rw-bbr"].duration_s / 60
    out.append(
        Explanation(
            "Write timeouts: a connection held in RTO recovery, the same with CUBIC",
            f"Over {minutes:.3g} minutes BBR's writer had {wb['timeouts']} timeouts "
            f"({wb['first_window']['timeouts']} in the first 2 minutes) and CUBIC's {wc['timeouts']} "
            f"({wc['first_window']['timeouts']}); {100 * (wb['sent_fraction'] or 0):.3g} % and "
            f"{100 * (wc['sent_fraction'] or 0):.3g} % of the batches were sent, the pending queue reached "
            f"{wb['max_pending']} and {wc['max_pending']} batches. The writer's connection spent "
            f"{100 * wb['loss_state_fraction']:.3g} % (BBR) and {100 * wc['loss_state_fraction']:.3g} % (CUBIC) "
            f"of the run in RTO recovery, up to {wb['longest_loss_state_s']:.4g} s and "
            f"{wc['longest_loss_state_s']:.4g} s at a stretch: one request at a time, a 54766-byte batch behind "
            "a backed-off RTO waits until the RTO fires again. No attempt can time out before 120 s, so a "
            "2-minute check sees none (both modes run the hour of writes). The triangles: the same bursts "
            f"ending at {EPISODE_END_S / 60:.3g} min; attempts started after the end that timed out: "
            + ", ".join(
                f"{cc.upper()} {analysis.after_loss(results[f'rw-{cc}-episode'], EPISODE_END_S)['started_after']}"
                for cc in ("bbr", "cubic")
            )
            + ".",
            _writes_figure(results, exp_check_s(exp), LOSS_START_S, EPISODE_END_S, plots_dir),
        )
    )
    return out


def exp_check_s(exp: ClusterBbrTimeouts) -> float:
    from tcplab.experiments.cluster_bbr_timeouts.readings import CHECK_S

    return CHECK_S

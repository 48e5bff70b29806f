"""Story 001's mechanism figures and the paragraphs that read them, from the runs' own traces.

* ``case-a-latency.png``: each segment's latency (request to last byte) and the sender's
  cwnd when it was requested, CUBIC vs BBR on the 100 ms path: the buffer-filling burst,
  then one request per segment with the connection idle in between, where CUBIC's cwnd is
  back at the initial window (Linux v6.12 net/ipv4/tcp_output.c: tcp_cwnd_restart(), called
  from include/net/tcp.h: tcp_slow_start_after_idle_check(), which skips CCs that have their
  own cong_control, such as BBR).
* ``case-b-player.png``: the player's buffer and bandwidth estimate over time, with the
  thresholds of hls.js's up- and down-switch, on the lossy 5 Mbit/s path.
* ``case-b-transport.png``: CUBIC's cwnd and ssthresh sawtooth under 1 % random loss, and the
  delivery rate of both against the payload ceiling, BBR's bandwidth estimate (bbr_bw) and
  the Mathis bound of a loss-based CC.
* ``sweep.png``: case A's latency ratio and case B's time on each profile at every point of
  the sweep of conditions the story leaves open.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tcplab.experiments.base import Explanation
from tcplab.units import plural
from tcplab.views.drawing import figure as _figure
from tcplab.views.drawing import legend_outside as _legend
from tcplab.views.drawing import png_bytes as _png
from tcplab.views.drawing import style_axes as _style
from tcplab.views.drawing import trailing_mean as _smooth

if TYPE_CHECKING:
    from tcplab.results import Result

COLORS = {"cubic": "#1f77b4", "bbr": "#d62728"}


def _f(x: float, unit: str = "") -> str:
    from tcplab.views.drawing import sig

    return f"{sig(x, 3)}{(' ' + unit) if unit else ''}"


def _hls(res: Result) -> Any:
    return next(a for a in res.apps.values() if a.kind == "hls")


def _flow_rows(res: Result) -> Any:
    ts = res.timeseries
    return ts[ts["flow_name"] == "video"]


def case_a_figure(results: Mapping[str, Result], plots_dir: Path, steady: Callable, filling: Callable) -> Explanation:
    fig = _figure(height=6.0)
    ax1, ax2 = fig.subplots(2, 1, sharex=True)
    for cc in ("cubic", "bbr"):
        seg = _hls(results[f"a-{cc}"]).table("segments")
        ax1.plot(seg["request_s"], seg["latency_ms"], "o-", ms=3, color=COLORS[cc], label=cc.upper())
        ax2.plot(seg["request_s"], seg["cwnd_pkts"], "o-", ms=3, color=COLORS[cc], label=cc.upper())
    ax2.set_yscale("log")
    _style(ax1, "Segment latency (ms)", "Case A, 100 ms: each segment's request-to-last-byte time", xlabel="")
    ax2.set_xlabel("Segment requested at (s)")
    ax2.set_ylabel("cwnd at request (packets, log)")
    ax2.grid(True, alpha=0.3)
    _legend(ax1)
    _legend(ax2)
    name = "case-a-latency.png"
    (plots_dir / name).write_bytes(_png(fig))
    c, b = results["a-cubic"], results["a-bbr"]
    cs, bs = steady(c), steady(b)
    full_at = float(cs["request_s"].min()) if len(cs) else math.nan
    seg_bytes = float(cs["bytes"].median()) if len(cs) else math.nan
    mss = 1448.0
    iw = float(cs["cwnd_pkts"].median()) if len(cs) else math.nan
    rounds = math.ceil(math.log2(seg_bytes / mss / iw + 1)) if iw and iw > 0 and not math.isnan(seg_bytes) else math.nan
    text = (
        f"The player fills its buffer with back-to-back requests until {_f(full_at, 's')}; then it "
        f"asks for one segment of {_f(seg_bytes / 1e6, 'MB')} every segment duration and the "
        f"connection sits idle in between, longer than the RTO. From then on CUBIC's cwnd at each "
        f"request is {_f(iw)} packets (median): Linux restarts the window after an idle period "
        f"longer than the RTO (tcp_cwnd_restart(), `tcp_slow_start_after_idle=1`), so each segment "
        f"needs about {rounds} rounds of slow start at 100 ms each, and CUBIC's median latency is "
        f"{_f(float(cs['latency_ms'].median()), 'ms')}. BBR has its own cong_control and Linux "
        f"skips the restart for it: its cwnd stays at {_f(float(bs['cwnd_pkts'].median()))} packets "
        f"and it paces the segment at its bandwidth model's rate, {_f(float(bs['latency_ms'].median()), 'ms')} "
        f"per segment, one RTT for the request plus the delivery. During the buffer-filling burst, "
        f"with no idle gap, CUBIC's window stays open and the two are close "
        f"({_f(float(filling(c)['latency_ms'].median()), 'ms')} vs "
        f"{_f(float(filling(b)['latency_ms'].median()), 'ms')})."
    )
    nossai = results.get("a-cubic-no-ssai")
    if nossai is not None and len(steady(nossai)):
        text += (
            f" The mechanism check: with `tcp_slow_start_after_idle=0` CUBIC keeps its window over the "
            f"idle gaps and its steady-state latency falls to {_f(float(steady(nossai)['latency_ms'].median()), 'ms')}."
        )
    return Explanation("Case A: CUBIC restarts slow start after every idle gap, BBR does not", text, name)


def case_b_player_figure(results: Mapping[str, Result], plots_dir: Path, shares: Callable) -> Explanation:
    fig = _figure(height=6.0)
    ax1, ax2 = fig.subplots(2, 1, sharex=True)
    profiles: dict[str, float] = {}
    for cc in ("cubic", "bbr"):
        app = _hls(results[f"b-{cc}"])
        s = app.table("series")
        ax1.plot(s["t_s"], s["buffer_ms"] / 1e3, color=COLORS[cc], label=f"{cc.upper()} buffer")
        ax2.plot(s["t_s"], s["estimate_bps"] / 1e6, color=COLORS[cc], label=f"{cc.upper()} estimate")
        for p in app.spec.get("profiles", []) if isinstance(app.spec, dict) else []:
            if isinstance(p, dict) and "name" in p:
                bps = p.get("bitrate_bps", p.get("bitrate"))
                if isinstance(bps, (int, float)):
                    profiles[str(p["name"])] = float(bps)
        seg = app.table("segments")
        hd = seg["profile"] == "HD"
        ax1.scatter(seg.loc[hd, "request_s"], np.zeros(int(hd.sum())) - 1, marker="|", color=COLORS[cc], s=40)
    for name, bps in profiles.items():
        ax2.axhline(bps / 1e6, color="0.4", ls="--", lw=1, label=f"{name} {_f(bps / 1e6, 'Mbit/s')}")
    _style(ax1, "Player buffer (s)", "Case B, 100 ms, 5 Mbit/s, 1 % loss: the player", xlabel="")
    _style(ax2, "Bandwidth estimate (Mbit/s)")
    _legend(ax1)
    _legend(ax2)
    name = "case-b-player.png"
    (plots_dir / name).write_bytes(_png(fig))
    c, b = results["b-cubic"], results["b-bbr"]
    cseg, bseg = _hls(c).table("segments"), _hls(b).table("segments")
    first_low = cseg.loc[cseg["profile"] == "low", "request_s"]
    cs, bs = shares(c), shares(b)
    text = (
        f"Both players start on HD, the first listed profile. CUBIC's first HD segments take "
        f"{_f(float(cseg.loc[cseg['profile'] == 'HD', 'latency_ms'].median()) / 1e3, 's')} each "
        f"(median) for 4 s of video, the player's estimate falls below what HD needs and it "
        f"switches to low at {_f(float(first_low.min()) if len(first_low) else math.nan, 's')}; "
        f"its estimate then stays near {_f(float(_hls(c).table('series')['estimate_bps'].iloc[-1]) / 1e6, 'Mbit/s')}, "
        f"too low for the up-switch (the estimate x 0.7 must exceed HD's bitrate), and it plays "
        f"{_f(100 * cs.get('share_low', 0.0), '%')} of the time on low. BBR's segments take "
        f"{_f(float(bseg['latency_ms'].median()) / 1e3, 's')} (median), its estimate stays near "
        f"{_f(float(_hls(b).table('series')['estimate_bps'].iloc[-1]) / 1e6, 'Mbit/s')}, its buffer "
        f"grows on HD, and it plays {_f(100 * bs.get('share_HD', 0.0), '%')} of the time on HD."
    )
    return Explanation("Case B: the player's buffer and estimate", text, name)


def case_b_transport_figure(
    results: Mapping[str, Result], plots_dir: Path, mathis: Callable, mss_of: Callable, rtt_of: Callable
) -> Explanation:
    from tcplab.results.paths import flow_paths

    c, b = results["b-cubic"], results["b-bbr"]
    cr, br = _flow_rows(c), _flow_rows(b)
    ceiling = flow_paths(b.config)["video"].payload_ceiling_bps
    p = float(c.flows.loc[c.flows["name"] == "video", "retrans_ratio"].iloc[0] or 0.0)
    rtt_s = rtt_of(c)
    bound = mathis(mss_of(c), rtt_s, p)
    fig = _figure(height=6.0)
    ax1, ax2 = fig.subplots(2, 1, sharex=True)
    ss = cr["ssthresh"].where(cr["ssthresh"] < 0x7FFFFFFF)
    ax1.plot(cr["t_s"], cr["cwnd"], color=COLORS["cubic"], label="CUBIC cwnd")
    ax1.plot(cr["t_s"], ss, color=COLORS["cubic"], ls=":", label="CUBIC ssthresh")
    ax1.plot(br["t_s"], br["cwnd"], color=COLORS["bbr"], alpha=0.6, label="BBR cwnd")
    bdp_pkts = ceiling * rtt_s / 8 / mss_of(c)
    ax1.axhline(bdp_pkts, color="0.4", ls="--", lw=1, label=f"BDP {_f(bdp_pkts)} packets")
    _style(ax1, "cwnd (packets)", "Case B: the senders", xlabel="")
    t_c, t_b = cr["t_s"].to_numpy(), br["t_s"].to_numpy()
    ax2.plot(
        t_c,
        _smooth(t_c, cr["goodput_bps"].to_numpy(dtype=float)) / 1e6,
        color=COLORS["cubic"],
        label="CUBIC goodput (1 s)",
    )
    ax2.plot(
        t_b, _smooth(t_b, br["goodput_bps"].to_numpy(dtype=float)) / 1e6, color=COLORS["bbr"], label="BBR goodput (1 s)"
    )
    ax2.plot(t_b, br["bbr_bw_bps"] / 1e6, color=COLORS["bbr"], ls=":", label="BBR bw estimate")
    ax2.axhline(ceiling / 1e6, color="0.35", ls="--", lw=1, label=f"payload ceiling {_f(ceiling / 1e6, 'Mbit/s')}")
    if math.isfinite(bound):
        ax2.axhline(
            bound / 1e6, color=COLORS["cubic"], ls="--", lw=1, label=f"Mathis bound {_f(bound / 1e6, 'Mbit/s')}"
        )
    _style(ax2, "Rate (Mbit/s)")
    _legend(ax1)
    _legend(ax2)
    name = "case-b-transport.png"
    (plots_dir / name).write_bytes(_png(fig))
    busy = cr[cr["inflight"] > 0]
    bw = br.loc[br["bbr_bw_bps"] > 0, "bbr_bw_bps"]
    c_good = float(c.flows.loc[c.flows["name"] == "video", "goodput_bps"].iloc[0])
    b_p = float(b.flows.loc[b.flows["name"] == "video", "retrans_ratio"].iloc[0] or 0.0)
    text = (
        f"CUBIC loses {_f(100 * p, '%')} of its segments at random, and each loss cuts its window "
        f"(x0.7, then Reno-friendly growth of about one packet per RTT): its cwnd has a median of "
        f"{_f(float(busy['cwnd'].median()) if len(busy) else math.nan)} packets while sending, against a "
        f"path BDP of {_f(bdp_pkts)} packets, and its goodput is {_f(c_good / 1e6, 'Mbit/s')}, at the "
        f"Mathis bound 1.22 x MSS / (RTT x sqrt(p)) = {_f(bound / 1e6, 'Mbit/s')} for RTT "
        f"{_f(rtt_s * 1e3, 'ms')} and p = {_f(100 * p, '%')}: a loss-based CC cannot go faster on "
        f"this path, whatever the link's rate. BBR loses as much ({_f(100 * b_p, '%')} retransmitted) "
        f"but does not treat an isolated loss as congestion: its bandwidth estimate, the maximum "
        f"delivery rate over 10 round trips, has a median of "
        f"{_f(float(bw.median()) / 1e6 if len(bw) else math.nan, 'Mbit/s')} against the "
        f"{_f(ceiling / 1e6, 'Mbit/s')} payload ceiling, and it paces at that rate with about "
        f"two BDPs in flight."
    )
    return Explanation("Case B: CUBIC at the Mathis bound, BBR at the bottleneck rate", text, name)


def sweep_figure(latency_data: dict[str, Any], b_sweep: dict[str, dict[str, float]], plots_dir: Path) -> Explanation:
    """Does the conclusion hinge on what the story left open? Case A's latency ratio and case
    B's time on each profile at every sweep point."""
    fig = _figure(height=4.5)
    ax1, ax2 = fig.subplots(1, 2, width_ratios=[1, 2])
    a_points = {"main (1 Gbit/s, 4 s)": latency_data["ratio"], **latency_data.get("sweep_ratio", {})}
    no_ssai = latency_data.get("cubic_no_ssai_steady_ms")
    if no_ssai is not None and math.isfinite(no_ssai):
        a_points["CUBIC, ssai=0"] = no_ssai / latency_data["bbr_steady_ms"]
    names = list(a_points)
    ax1.barh(range(len(names)), [a_points[n] for n in names], color="0.55")
    ax1.set_yticks(range(len(names)), names, fontsize="small")
    ax1.invert_yaxis()
    ax1.axvline(5.0, color="k", ls="--", lw=1, label="the story: about 5x")
    ax1.set_xlabel("CUBIC / BBR steady-state segment latency")
    ax1.set_title("Case A", loc="left", fontsize="medium")
    ax1.grid(True, axis="x", alpha=0.3)
    ax1.legend(loc="lower right", fontsize="small")
    labels = list(b_sweep)
    y = np.arange(len(labels))
    ax2.barh(
        y - 0.2, [100 * b_sweep[k]["cubic_share_low"] for k in labels], 0.4, color=COLORS["cubic"], label="CUBIC on low"
    )
    ax2.barh(y + 0.2, [100 * b_sweep[k]["bbr_share_hd"] for k in labels], 0.4, color=COLORS["bbr"], label="BBR on HD")
    for i, k in enumerate(labels):
        m = b_sweep[k]["cubic_low_margin"]
        stalls = int(b_sweep[k]["cubic_stalls"])
        note = f"low at {_f(m)}x" + (f", {plural(stalls, 'stall')}" if stalls else "")
        ax2.text(2, i - 0.2, note, va="center", fontsize="x-small", color="white")
    ax2.set_yticks(y, labels, fontsize="small")
    ax2.invert_yaxis()
    ax2.set_xlim(0, 100)
    ax2.set_xlabel("Share of played time (%)")
    ax2.set_title("Case B", loc="left", fontsize="medium")
    ax2.grid(True, axis="x", alpha=0.3)
    _legend(ax2)
    name = "sweep.png"
    (plots_dir / name).write_bytes(_png(fig))
    a_sweep = {k: v for k, v in a_points.items() if k != "CUBIC, ssai=0"}
    lo, hi = min(a_sweep.values()), max(a_sweep.values())
    contrast = all(v["cubic_share_low"] > 0.5 and v["bbr_share_hd"] >= 0.9 for v in b_sweep.values())
    text = (
        "Case A's ratio at each point of the sweep: "
        + ", ".join(f"{k} {_f(v)}x" for k, v in a_points.items())
        + (
            f". Across the sweep BBR's steady-state segments are {_f(lo)}x to {_f(hi)}x faster"
            if len(a_sweep) > 1
            else " (the link-rate sweep runs in full mode only)"
        )
        + ": the ratio grows with the slow-start rounds a segment needs after the restart (more bytes per "
        "segment, more rounds) and with how fast BBR delivers it (the path's rate); with the "
        "restart turned off the gap is gone. Case B at each point: "
        + "; ".join(
            f"{k}: CUBIC {_f(100 * v['cubic_share_low'], '%')} on low (low at {_f(v['cubic_low_margin'])}x), "
            f"BBR {_f(100 * v['bbr_share_hd'], '%')} on HD"
            for k, v in b_sweep.items()
        )
        + ". Whether CUBIC only 'barely' holds low depends on the low profile's bitrate against "
        "CUBIC's Mathis bound (which falls as 1/sqrt(loss)); "
        + (
            "that CUBIC falls to low while BBR holds HD holds at every point."
            if contrast
            else "the contrast of CUBIC on low and BBR on HD does not hold at every point (see above)."
        )
    )
    return Explanation("The sweep: what the conclusion does and does not hinge on", text, name)

"""The mechanism of ``bbr-vm-contention`` from its own runs' traces, with its figures.

* ``throughput-vs-share.png``: steady goodput against CPU share, one panel per path, three
  curves (BBR, BBR + patch, CUBIC), the story's 10 Mbit/s cap and the payload ceiling dashed.
* ``trace-35.png``: the two 1 ms-sampled runs at 35 % share (``trace-bbr``, ``trace-patch``):
  BBR's bandwidth estimate, pacing rate and delivery-rate samples, the pacing gain, and the
  bytes in flight against the target inflight (BDP at the estimate, ``bbr_bw x min_rtt``).
* ``slices-35.png``: 50 ms of each trace with the vCPU's slices shaded (from the host's CPU
  model: ``cpu_on`` in ``hosts.parquet``, sampled every 1 ms, aliases 3.5 ms slices): data is
  acknowledged and sent only inside the slices.

Every number in the texts is computed here from the runs (``Result.timeseries`` and
``Result.host_series``), not taken from the story.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tcplab.experiments.base import Explanation
from tcplab.views.drawing import SAVE as _SAVE
from tcplab.views.drawing import figure as _figure
from tcplab.views.drawing import legend_outside as _legend
from tcplab.views.drawing import style_axes as _style

if TYPE_CHECKING:
    import pandas as pd

    from tcplab.experiments.bbr_vm_contention import BbrVmContention
    from tcplab.results import Result

MSS_BYTES = 1448  # the payload per segment on tcplab's Ethernet paths (1500 MTU, timestamps)
CURVE_COLORS = {"bbr": "#d62728", "patch": "#1f77b4", "cubic": "#2ca02c"}
ZOOM_S = 0.05


def _save(fig: Any, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", **_SAVE)


def _rows(result: Result) -> pd.DataFrame:
    ts = result.timeseries
    return ts[ts["flow_name"] == "bulk"].sort_values("t_ns").reset_index(drop=True)


def _cpu(result: Result) -> pd.DataFrame:
    hs = result.host_series
    return hs[hs["host_name"] == "vm"].sort_values("t_ns").reset_index(drop=True)


def _pct(fraction: float) -> str:
    return f"{100 * fraction:.3g} %"


def _vm_cpu(res: Result) -> dict[str, Any]:
    """The sender's CPU model as the engine ran it (period_ns, share, phase_ns)."""
    return next(n for n in res.config["nodes"] if n["name"] == "vm")["cpu"]


def _mbps(bps: float) -> str:
    return f"{bps / 1e6:.3g} Mbit/s"


def _bdp_pkts(rows: pd.DataFrame, gain: float = 1.0) -> np.ndarray:
    """BBR's BDP at its estimate in packets, rounded up (Linux v6.12 net/ipv4/tcp_bbr.c:
    bbr_bdp(): bw x min_rtt x gain)."""
    bw = rows["bbr_bw_bps"].to_numpy(dtype=np.float64)
    rtt_s = rows["min_rtt_us"].to_numpy(dtype=np.float64) / 1e6
    return np.ceil(bw * rtt_s * gain / 8 / MSS_BYTES)


def _target_pkts(rows: pd.DataFrame, gain: float = 1.0) -> np.ndarray:
    """``bbr_inflight(bw, gain)`` in packets, what the patch compares inflight with (and, at
    gain 1.25, what ends PROBE_BW's probing phase): the BDP plus bbr_quantization_budget()'s
    three TSO bursts, rounded up to even (Linux v6.12 net/ipv4/tcp_bbr.c: bbr_inflight(),
    bbr_quantization_budget(), bbr_tso_segs_goal(): pacing rate >> sk_pacing_shift (10) bytes
    per burst, at least bbr_min_tso_segs() = 2 segments above 1.2 Mbit/s). Simplified: the
    extra 2 packets of PROBE_BW's first phase are left out (the trace has no cycle index)."""
    pacing_bytes_s = rows["pacing_rate_bps"].to_numpy(dtype=np.float64) / 8
    min_segs = np.where(rows["pacing_rate_bps"].to_numpy(dtype=np.float64) < 1_200_000, 1, 2)
    segs = np.minimum(np.maximum(np.floor(np.floor(pacing_bytes_s / 1024) / MSS_BYTES), min_segs), 127)
    cwnd = _bdp_pkts(rows, gain) + 3 * segs
    return cwnd + (cwnd % 2)


def _slices(ax: Any, res: Result, t0_s: float, span_s: float, scale: float, offset_s: float) -> None:
    """Shade the vCPU's slices in ``[t0, t0 + span]`` from the host's CPU model (the 1 ms
    samples of cpu_on would alias the 10 ms period); x in (t - offset) x scale."""
    cpu = _vm_cpu(res)
    period_s, on_s, phase_s = cpu["period_ns"] / 1e9, cpu["share"] * cpu["period_ns"] / 1e9, cpu["phase_ns"] / 1e9
    k = int(np.floor((t0_s - phase_s) / period_s))
    first = True
    while phase_s + k * period_s < t0_s + span_s:
        a = max(t0_s, phase_s + k * period_s)
        b = min(t0_s + span_s, phase_s + k * period_s + on_s)
        if b > a:
            ax.axvspan(
                (a - offset_s) * scale,
                (b - offset_s) * scale,
                color="#2ca02c",
                alpha=0.15,
                label="vCPU on (slice)" if first else None,
            )
            first = False
        k += 1


# -- figure 1 ---------------------------------------------------------------------------------


def _curves_figure(exp: BbrVmContention, results: Mapping[str, Result], quick: bool, path: Path) -> dict:
    from tcplab.experiments.bbr_vm_contention.readings import CC_LABELS, PATHS, STORY_CAP_BPS

    curves = exp.curves(results, quick)
    panels = [p for p in PATHS if p in curves]
    fig = _figure(height=4.0, width=4.2 * len(panels) + 2.0)
    axes = fig.subplots(1, len(panels), sharey=True, squeeze=False)[0]
    for ax, p in zip(axes, panels, strict=True):
        ceiling = None
        for cc, pts in curves[p].items():
            shares = sorted(pts)
            ax.plot(
                shares,
                [pts[s] / 1e6 for s in shares],
                marker="o",
                color=CURVE_COLORS[cc],
                label=CC_LABELS[cc],
            )
            if 100 in pts:
                ceiling = max(ceiling or 0.0, pts[100])
        ax.axhline(STORY_CAP_BPS / 1e6, color="0.35", linestyle="--", linewidth=1.0, label="story's cap, 10 Mbit/s")
        if ceiling:
            ax.axhline(ceiling / 1e6, color="0.6", linestyle=":", linewidth=1.0, label="goodput at 100 % share")
        ax.set_yscale("log")
        ax.set_xlabel("CPU share of every 10 ms (%)")
        ax.set_title(PATHS[p][1], loc="left", fontsize="medium")
        ax.grid(True, which="both", alpha=0.3)
        ax.set_xlim(105, 15)  # as the story reads: from the whole CPU down to 20 %
    axes[0].set_ylabel("Steady goodput, 2nd half of the run (Mbit/s, log)")
    _legend(axes[-1])
    _save(fig, path)
    return curves


# -- figure 2 ---------------------------------------------------------------------------------


def _trace_figure(bbr: Result, patch: Result, path: Path) -> None:
    fig = _figure(height=7.5, width=12.0)
    axes = fig.subplots(3, 2, sharex=True)
    for col, (name, res) in enumerate((("BBR", bbr), ("BBR + patch", patch))):
        rows = _rows(res)
        t = rows["t_s"].to_numpy()
        ax = axes[0][col]
        ax.plot(t, rows["pacing_rate_bps"] / 1e6, color="#ff7f0e", linewidth=0.8, label="pacing rate")
        ax.plot(t, rows["delivery_rate_bps"] / 1e6, color="#7f7f7f", linewidth=0.6, label="delivery-rate sample")
        ax.plot(t, rows["bbr_bw_bps"] / 1e6, color="#1f77b4", linewidth=1.4, label="BBR bw estimate")
        ax.set_yscale("symlog", linthresh=1.0)
        _style(ax, "Mbit/s (symlog)", f"{name} at 35 % share: rates", xlabel="")
        ax = axes[1][col]
        ax.plot(t, rows["pacing_gain"], color="#9467bd", linewidth=1.0, label="pacing gain")
        modes = rows["cc_mode_name"].to_numpy()
        for m, color in (("STARTUP", "#2ca02c"), ("DRAIN", "#17becf"), ("PROBE_RTT", "#8c564b")):
            on = modes == m
            if on.any():
                ax.fill_between(t, 0, 3.2, where=on, color=color, alpha=0.2, step="post", label=m)
        _style(ax, "pacing gain", "pacing gain (PROBE_BW unshaded)", xlabel="")
        ax = axes[2][col]
        ax.plot(t, rows["inflight"], color="#d62728", linewidth=0.8, label="inflight (packets)")
        ax.plot(t, _target_pkts(rows), color="#1f77b4", linewidth=1.2, label="bbr_inflight(bw, 1): patch's target")
        ax.plot(
            t,
            _target_pkts(rows, 1.25),
            color="#1f77b4",
            linestyle="--",
            linewidth=1.0,
            label="bbr_inflight(bw, 1.25): ends probing",
        )
        ax.set_yscale("symlog", linthresh=10.0)
        _style(ax, "packets (symlog)", "inflight vs BBR's target")
    for r in range(3):
        _legend(axes[r][1])
    _save(fig, path)


# -- figure 3 ---------------------------------------------------------------------------------


def _slices_figure(bbr: Result, patch: Result, t0_s: float, path: Path) -> None:
    fig = _figure(height=5.0, width=12.0)
    axes = fig.subplots(2, 2, sharex=True)
    for col, (name, res) in enumerate((("BBR", bbr), ("BBR + patch", patch))):
        rows = _rows(res)
        win = (rows["t_s"] >= t0_s) & (rows["t_s"] <= t0_s + ZOOM_S)
        r = rows[win]
        t_ms = (r["t_s"].to_numpy() - t0_s) * 1e3
        acked = r["bytes_acked"].to_numpy(dtype=np.float64)
        acked_pkts = np.diff(acked, prepend=acked[0]) / MSS_BYTES
        for ax in (axes[0][col], axes[1][col]):
            _slices(ax, res, t0_s, ZOOM_S, 1e3, t0_s)
        # a sample at t counts what was acknowledged in (t - interval, t]: bar to its left
        step_ms = res.sample_interval_s * 1e3
        axes[0][col].bar(
            t_ms,
            acked_pkts,
            width=-0.9 * step_ms,
            align="edge",
            color="#1f77b4",
            label=f"packets acked per {step_ms:g} ms",
        )
        _style(axes[0][col], "packets", f"{name} at 35 %: {ZOOM_S * 1e3:.0f} ms from t = {t0_s:g} s", xlabel="")
        axes[1][col].step(t_ms, r["inflight"], where="post", color="#d62728", label="inflight (packets)")
        axes[1][col].step(t_ms, _target_pkts(r), where="post", color="#1f77b4", label="bbr_inflight(bw, 1)")
        _style(axes[1][col], "packets", None, xlabel=f"time from {t0_s:g} s (ms)")
    _legend(axes[0][1])
    _legend(axes[1][1])
    _save(fig, path)


# -- numbers for the texts ------------------------------------------------------------------


def trace_numbers(res: Result) -> dict[str, Any]:
    """What the 1 ms trace of one 35 % run says (used by the texts and the tests)."""
    rows = _rows(res)
    t = rows["t_s"].to_numpy()
    bw = rows["bbr_bw_bps"].to_numpy(dtype=np.float64)
    modes = rows["cc_mode_name"].to_numpy()
    startup_end = float(t[np.argmax(modes != "STARTUP")]) if (modes != "STARTUP").any() else float(t[-1])
    second = t >= res.duration_s / 2
    gain = rows["pacing_gain"].to_numpy(dtype=np.float64)
    target = _target_pkts(rows)
    inflight = rows["inflight"].to_numpy(dtype=np.float64)
    acked = rows["bytes_acked"].to_numpy(dtype=np.float64)
    d_acked = np.diff(acked, prepend=acked[0])
    periods = (t[second][-1] - t[second][0]) / 0.010 if second.sum() > 1 else 1.0
    return {
        "peak_bw_bps": float(bw.max()),
        "startup_end_s": startup_end,
        "bw_end_bps": float(bw[-1]),
        # when the estimate first came within 10 % of where it ends
        "settle_s": float(t[np.argmax((t > startup_end) & (bw <= 1.1 * bw[-1]))]),
        "pacing_end_bps": float(rows["pacing_rate_bps"].to_numpy()[-1]),
        "delivery_median_bps": float(np.median(rows["delivery_rate_bps"].to_numpy()[second])),
        "share_gain_above_1": float(np.mean(gain[second] > 1.01)),
        "share_gain_high": float(np.mean(gain[second] > 2.0)),
        "share_gain_125": float(np.mean(np.abs(gain[second] - 1.25) < 0.01)),
        "inflight_median_pkts": float(np.median(inflight[second])),
        "target_median_pkts": float(np.median(target[second])),
        "share_below_target": float(np.mean(inflight[second] < target[second])),
        "probe_target_median_pkts": float(np.median(_target_pkts(rows, 1.25)[second])),
        "bdp_median_pkts": float(np.median(_bdp_pkts(rows)[second])),
        "burst_gap_ms": float(2 * MSS_BYTES * 8 / rows["pacing_rate_bps"].to_numpy()[-1] * 1e3),
        "slice_ms": float(_vm_cpu(res)["share"] * _vm_cpu(res)["period_ns"] / 1e6),
        "pkts_per_period": float(d_acked[second].sum() / MSS_BYTES / periods),
        # the configured off time (the 1 ms samples of cpu_on alias the 10 ms slices)
        "steal": 1.0 - float(_vm_cpu(res)["share"]),
    }


def explanations(
    exp: BbrVmContention, results: Mapping[str, Result], quick: bool, plots_dir: Path
) -> list[Explanation]:
    from tcplab.experiments.bbr_vm_contention.readings import PATHS, threshold

    out: list[Explanation] = []
    curves = _curves_figure(exp, results, quick, plots_dir / "throughput-vs-share.png")
    parts = []
    for p, per_cc in curves.items():
        bits = []
        for cc, name in (("bbr", "BBR"), ("patch", "patched BBR"), ("cubic", "CUBIC")):
            pts = per_cc.get(cc, {})
            if 100 in pts and len(pts) > 2:
                thr = threshold(sorted(pts), pts)
                lo = min(pts)
                bits.append(f"{name} holds 90 % down to {thr} % and has {_mbps(pts[lo])} at {lo} %")
        if bits:
            parts.append(f"On the {PATHS[p][1]} path " + "; ".join(bits) + ".")
    out.append(
        Explanation(
            title="Throughput against CPU share",
            text=(
                "Steady goodput (second half of each run) against the VM's CPU share. "
                + " ".join(parts)
                + " Unpatched BBR does not lose throughput in proportion to the share: it falls off a cliff "
                "to a floor that is the same on every path rate, while the patched sender and CUBIC lose "
                "throughput gradually, if at all, down to lower shares."
            ),
            figure="throughput-vs-share.png",
        )
    )
    if "trace-bbr" in results and "trace-patch" in results:
        b = trace_numbers(results["trace-bbr"])
        pt = trace_numbers(results["trace-patch"])
        _trace_figure(results["trace-bbr"], results["trace-patch"], plots_dir / "trace-35.png")
        out.append(
            Explanation(
                title="At 35 %: BBR's estimate drains away; the patch holds it",
                text=(
                    f"The vCPU is off {_pct(b['steal'])} of the time. In the unpatched run STARTUP, pacing at "
                    f"2.89 x its estimate (2.89 x {_pct(1 - b['steal'])} = {2.885 * (1 - b['steal']):.3g} of the "
                    "time-averaged rate it needs), measures up to "
                    f"{_mbps(b['peak_bw_bps'])} and ends at {b['startup_end_s']:.3g} s. In PROBE_BW the gain is "
                    "around 1: pacing spreads BBR's target over the whole round trip, but only the slices send, "
                    "so each round delivers less than the estimate and the max filter's new samples are lower. "
                    f"By {b['settle_s']:.3g} s the estimate is down to {_mbps(b['bw_end_bps'])} (pacing "
                    f"{_mbps(b['pacing_end_bps'])}, delivery-rate samples median {_mbps(b['delivery_median_bps'])}). "
                    f"In the second half the pacing gain is 1.25 in {_pct(b['share_gain_125'])} of the samples: "
                    "PROBE_BW's probing phase only ends once inflight reaches bbr_inflight(bw, 1.25) "
                    "(Linux v6.12 net/ipv4/tcp_bbr.c: bbr_is_next_cycle_phase()), which the descheduled sender "
                    f"never does: inflight median {b['inflight_median_pkts']:.3g} packets against "
                    f"bbr_inflight(bw, 1.25) = {b['probe_target_median_pkts']:.3g} (a BDP of "
                    f"{b['bdp_median_pkts']:.3g} packets plus three minimum TSO bursts); probing at 1.25 x a rate "
                    "it cannot send at finds nothing "
                    "more, and BBR concludes it has the full bandwidth. "
                    f"With the patch, whose target is bbr_inflight(bw, 1) (median {pt['target_median_pkts']:.3g} "
                    f"packets, its TSO bursts sized by the high pacing rate), inflight (median "
                    f"{pt['inflight_median_pkts']:.3g}) is below it in {_pct(pt['share_below_target'])} of the samples "
                    f"and the pacing gain is STARTUP's 2.89 in {_pct(pt['share_gain_high'])} of them: "
                    "paced at almost three times its estimate, the sender puts a round's worth of data out in "
                    f"the slices it gets, and the estimate stays at {_mbps(pt['bw_end_bps'])}."
                ),
                figure="trace-35.png",
            )
        )
        t0 = round(results["trace-bbr"].duration_s * 0.75, 3)
        _slices_figure(results["trace-bbr"], results["trace-patch"], t0, plots_dir / "slices-35.png")
        out.append(
            Explanation(
                title="Inside the 10 ms periods: only the slices send",
                text=(
                    f"{ZOOM_S * 1e3:.0f} ms of both traces with the vCPU's slices shaded. ACKs that arrive "
                    "while the VM is off wait in its NIC ring and are processed when the next slice starts, and "
                    "nothing is paced out meanwhile. The unpatched sender moves "
                    f"{b['pkts_per_period']:.3g} packets "
                    f"per 10 ms period ({_mbps(b['pkts_per_period'] * MSS_BYTES * 8 / 0.010)}): at its pacing "
                    f"rate a minimum two-segment burst leaves every {b['burst_gap_ms']:.3g} ms, against a "
                    f"{b['slice_ms']:.3g} ms slice, so each slice sends a couple of bursts and the delivery "
                    "rate those bursts measure is where the estimate settles. The patched "
                    f"sender moves {pt['pkts_per_period']:.3g} packets per period. The floor's value follows "
                    "from the slice length and the burst size, not from the path rate, which is why "
                    "the cap is bandwidth-independent."
                ),
                figure="slices-35.png",
            )
        )
    return out

"""The bandwidth-manager experiment's figures and the paragraphs that read them.

Every number in the texts comes from the runs' own traces: the flows' goodput series, the
shaper's backlog (``result.queues``) turned into delay at the pod's rate, the TCP_RR's
``requests`` table, and the qdisc and EDT counters in ``result.links``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tcplab.experiments.base import Explanation
from tcplab.views.drawing import figure as _figure
from tcplab.views.drawing import legend_outside as _legend
from tcplab.views.drawing import png_bytes as _png
from tcplab.views.drawing import style_axes as _style

if TYPE_CHECKING:
    from tcplab.results import Result

BPF_COLOR = "#2ca02c"
COLORS = {"bandwidth-manager": "#1f77b4", "cni": "#d62728", "bpf": BPF_COLOR}
NAMES = {
    "bandwidth-manager": "EDT + fq (Bandwidth Manager)",
    "cni": "tbf via IFB (CNI plugin)",
    "bpf": "EDT + fq, BPF host routing",
}
#: Cilium's EDT drop horizon (bpf/lib/edt.h, set from the agent: 2 s).
EDT_HORIZON_MS = 2000.0


def _sig3(x: float) -> str:
    from tcplab.views.report import sig

    return sig(x, 3)


def _write(fig: Any, plots_dir: Path, name: str) -> str:
    (plots_dir / name).write_bytes(_png(fig))
    return name


def _first_queue_s(result: Result) -> float:
    """When the shaper's queue first held more than a few packets (a tbf's bucket ran dry)."""
    from tcplab.experiments.bandwidth_manager.readings import queue_delay_ms

    t, delay_ms = queue_delay_ms(result)
    queued = delay_ms > 5.0
    return float(t[np.argmax(queued)]) if queued.any() else float("nan")


def _tbf_bucket_bytes(result: Result) -> int:
    """The tbf's bucket as the run configured it (containerd's burst, capped by the kernel)."""
    return next(int(link["queue"]["burst_bytes"]) for link in result.config["links"] if link["queue"]["kind"] == "tbf")


def throughput_figure(results: Mapping[str, Result], plots_dir: Path) -> Explanation:
    from tcplab.experiments.bandwidth_manager.readings import MAERTS_RUNS, ceiling_mbps, netperf_mbps, steady_mbps

    fig = _figure(height=4.2)
    axes = fig.subplots(1, 2)
    lines = []
    for ax, limit in zip(axes, (10, 100), strict=True):
        for label, (mode, lim) in MAERTS_RUNS.items():
            if lim != limit:
                continue
            r = results[label]
            ts = r.timeseries[r.timeseries["flow_name"] == "maerts"]
            ax.plot(ts["t_s"], ts["bytes_received"] / 1e6, color=COLORS[mode], label=NAMES[mode])
        ceiling = ceiling_mbps(results[f"bwm-{limit}m"])
        ax.plot([0, 10], [0, ceiling * 10 / 8], color="grey", ls="--", lw=1, label="the limit's payload ceiling")
        _style(ax, "Payload received (MB)", f"netperf TCP_MAERTS, limit {limit} Mbit/s", xmax=10)
        bwm, cni = results[f"bwm-{limit}m"], results[f"cni-{limit}m"]
        lines.append(
            f"At {limit} Mbit/s the Bandwidth Manager gives netperf {_sig3(netperf_mbps(bwm))} Mbit/s, "
            f"on the ceiling of {_sig3(ceiling)} Mbit/s from the start. The CNI plugin's tbf starts "
            f"with a full bucket of {_sig3(_tbf_bucket_bytes(cni) / 1e6)} MB (containerd's burst, capped "
            f"at 2^32-1 ns of the rate) that the fresh pod's CUBIC spends at line rate; its queue first "
            f"holds 5 ms of traffic at {_sig3(_first_queue_s(cni))} s, after which it passes "
            f"{_sig3(steady_mbps(cni, 5.0))} Mbit/s (5-10 s): netperf's 10 s average is "
            f"{_sig3(netperf_mbps(cni))} Mbit/s."
        )
    _legend(axes[1])
    text = (
        " ".join(lines) + " Both enforcers count whole frames (IP + 14 bytes of Ethernet), so a bulk flow's payload "
        "tops out at rate x 1408/1474 with GKE's MTU of 1460; the story's 9.54 and 94.97 Mbit/s sit "
        "just under that ceiling."
    )
    return Explanation("Throughput: the limit less the headers", text, _write(fig, plots_dir, "throughput.png"))


def latency_figure(results: Mapping[str, Result], plots_dir: Path) -> Explanation:
    from tcplab.experiments.bandwidth_manager.readings import DEFAULT_BULK, DEFAULT_LIMIT, queue_delay_ms, rr_label

    fig = _figure(height=4.2)
    ax = fig.add_subplot(1, 1, 1)
    parts = []
    for mode, pod_mode in (("tbf", "cni"), ("edt", "bandwidth-manager"), ("bpf", "bpf")):
        r = results[rr_label(mode, DEFAULT_LIMIT, DEFAULT_BULK)]
        t, delay_ms = queue_delay_ms(r)
        name = "EDT + fq, legacy host routing" if mode == "edt" else NAMES[pod_mode]
        ax.plot(t, delay_ms, color=COLORS[pod_mode], lw=1, label=f"{name}: backlog / rate")
        req = r.apps["rr"].table("requests")
        ax.scatter(
            req["start_s"],
            req["latency_ms"],
            s=8,
            color=COLORS[pod_mode],
            marker="o",
            alpha=0.6,
            label="TCP_RR latency",
        )
        after = t >= 2.0
        med_q = float(np.median(delay_ms[after])) if after.any() else float("nan")
        max_q = float(np.max(delay_ms[after])) if after.any() else float("nan")
        lat = r.apps["rr"].get("latency_ms")
        links = r.links
        if mode == "tbf":
            row = links[links["qdisc"] == "tbf"].iloc[0]
            parts.append(
                f"Through the CNI plugin's tbf the queue at the pod's hop holds a median {_sig3(med_q)} ms "
                f"of traffic (backlog / 100 Mbit/s, up to {_sig3(max_q)} ms) once the bulk flows run; tbf "
                f"dropped {int(row['drops'])} packets. The pod's packets keep their socket through the "
                f"IFB's tbf, so TSQ (tcp_small_queue_check(): two skbs or about 1 ms at the flow's pacing "
                f"rate, the larger) bounds what each bulk flow keeps there, not CUBIC's window. The RR's "
                f"1-byte response waits at the back of it: p50 "
                f"{_sig3(lat['p50'])} ms, p99 {_sig3(lat['p99'])} ms."
            )
        elif mode == "bpf":
            row = next(rw for _, rw in links.iterrows() if rw["edt"])
            parts.append(
                f"With BPF host routing the pod's packets keep their socket until they leave the node, so "
                f"TSQ holds each bulk flow back while fq holds its packets: fq holds a median "
                f"{_sig3(med_q)} ms of departure times (up to {_sig3(max_q)} ms), "
                f"{int(row['xstats'].get('flows_plimit', 0))} flows_plimit drops, and the RR waits p50 "
                f"{_sig3(lat['p50'])} ms, p99 {_sig3(lat['p99'])} ms. At this 1 ms RTT TSQ's budget is two "
                "TSO skbs, which tcp_tso_autosize() makes large for low-RTT flows (tcp_tso_rtt_log), so "
                "each flow still keeps tens of packets there."
            )
        else:
            row = next(rw for _, rw in links.iterrows() if rw["edt"])
            plimit = int(row["xstats"].get("flows_plimit", 0))
            edt_drops = sum(int(e["drops"]) for e in row["edt"])
            parts.append(
                "With EDT + fq and Cilium's legacy host routing the backlog sits in the node's fq: a median "
                f"{_sig3(med_q)} ms of departure "
                f"times handed out ahead (up to {_sig3(max_q)} ms, far from Cilium's {EDT_HORIZON_MS / 1e3:g} s "
                f"drop horizon: {edt_drops} EDT drops). It is bounded because fq keeps at most 100 packets "
                f"per flow: {plimit} packets were dropped there (flows_plimit), and each drop makes a bulk "
                f"CUBIC flow back off. The EDT aggregate is one timeline for the whole pod, so the RR's "
                f"response is stamped behind those bulk packets and waits as long: p50 {_sig3(lat['p50'])} ms, "
                f"p99 {_sig3(lat['p99'])} ms."
            )
    ax.axvline(2.0, color="grey", ls=":", lw=1)
    _style(
        ax, "Delay (ms)", f"{DEFAULT_BULK} bulk flows + TCP_RR from one pod limited to {DEFAULT_LIMIT} Mbit/s", xmax=10
    )
    _legend(ax)
    text = (
        " ".join(parts) + " The RR's latency follows each shaper's queue delay, sample for sample: the p99 ratio is "
        "the ratio of the queues."
    )
    return Explanation("Where the response waits", text, _write(fig, plots_dir, "latency.png"))


def sweep_figure(results: Mapping[str, Result], sweep: Sequence[Mapping[str, Any]], plots_dir: Path) -> Explanation:
    """The load sweep: the RR's p99 per enforcer (left) and the ratio TBF / EDT per EDT
    datapath (right), against the number of bulk flows, one line per limit, with the story's
    4x and the rule's threshold drawn."""
    from tcplab.experiments.bandwidth_manager.readings import CLAIMED_RATIO, RATIO_AT_LEAST

    fig = _figure(height=4.4)
    ax, rx = fig.subplots(1, 2)
    limits = sorted({int(s["limit_mbps"]) for s in sweep}, reverse=True)
    styles = {100: "-", 10: "--"}
    series = (
        ("p99_tbf_ms", COLORS["cni"], NAMES["cni"]),
        ("p99_edt_ms", COLORS["bandwidth-manager"], "EDT + fq, legacy host routing"),
        ("p99_bpf_ms", BPF_COLOR, "EDT + fq, BPF host routing"),
    )
    ratio_series = (
        ("ratio_edt", COLORS["bandwidth-manager"], "TBF / EDT (legacy host routing)"),
        ("ratio_bpf", BPF_COLOR, "TBF / EDT (BPF host routing)"),
    )
    ticks = sorted({s["bulk_flows"] for s in sweep})
    for limit in limits:
        pts = [s for s in sweep if s["limit_mbps"] == limit]
        n = [s["bulk_flows"] for s in pts]
        for key, color, name in series:
            ax.plot(
                n,
                [s[key] for s in pts],
                styles.get(limit, "-"),
                marker="o",
                color=color,
                label=f"{name}, {limit} Mbit/s",
            )
        for key, color, name in ratio_series:
            rx.plot(
                n,
                [s[key] for s in pts],
                styles.get(limit, "-"),
                marker="o",
                color=color,
                label=f"{name}, {limit} Mbit/s",
            )
    rx.axhline(CLAIMED_RATIO, color="black", lw=1, ls="-", label=f"the story's {CLAIMED_RATIO:g}x")
    rx.axhline(RATIO_AT_LEAST, color="grey", lw=1, ls=":", label=f"the rule's {RATIO_AT_LEAST:g}x")
    rx.axhline(1.0, color="grey", lw=0.8, ls="-", alpha=0.5)
    for a_, ylabel, title in (
        (ax, "TCP_RR p99 latency (ms)", "p99 per enforcer"),
        (rx, "p99 ratio, TBF / EDT (x lower with EDT)", "the ratio the story gives as 4x"),
    ):
        a_.set_xscale("log", base=2)
        a_.set_xticks(ticks)
        a_.set_xticklabels([str(x) for x in ticks])
        a_.set_yscale("log")
        a_.set_xlabel("Bulk flows beside the TCP_RR")
        a_.set_ylabel(ylabel)
        a_.set_title(title, loc="left", fontsize="medium")
        a_.grid(True, alpha=0.3, which="both")
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FuncFormatter, NullFormatter

    rx.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}x"))
    rx.yaxis.set_minor_formatter(NullFormatter())
    handles = [Line2D([], [], color=color, marker="o", label=name) for _key, color, name in series]
    handles += [Line2D([], [], color="black", ls=styles.get(lim, "-"), label=f"{lim} Mbit/s") for lim in limits]
    ax.legend(handles=handles, fontsize="x-small", loc="upper left")
    _legend(rx)

    def curve(mode: str, limit: int) -> str:
        pts = [s for s in sweep if s["limit_mbps"] == limit]
        r = [s[f"ratio_{mode}"] for s in pts]
        trend = "rises" if r[-1] > r[0] * 1.1 else "falls" if r[-1] < r[0] / 1.1 else "stays about level"
        over = [str(s["bulk_flows"]) for s in pts if s[f"ratio_{mode}"] >= RATIO_AT_LEAST]
        return (
            f"at {limit} Mbit/s "
            + ", ".join(f"{s['bulk_flows']}: {_sig3(s[f'ratio_{mode}'])}x" for s in pts)
            + f" (it {trend} with the load; {RATIO_AT_LEAST:g}x or more at "
            + (", ".join(over) + " bulk flows" if over else "no load of the sweep")
            + ")"
        )

    reversed_ = [s for s in sweep if s["ratio_edt"] < 1.0]
    text = (
        "The right panel is the ratio of p99s (TBF / EDT) as a function of the load, one line per limit "
        f"(solid 100 Mbit/s, dashed 10 Mbit/s), against the story's {CLAIMED_RATIO:g}x and the rule's "
        f"{RATIO_AT_LEAST:g}x. Legacy host routing: {'; '.join(curve('edt', lim) for lim in limits)}. BPF "
        f"host routing: {'; '.join(curve('bpf', lim) for lim in limits)}. With legacy host routing EDT's p99 "
        "grows with the number of bulk flows (each may keep 100 skbs in fq, all on the pod's one EDT "
        "timeline); tbf's grows with it too, but TSQ bounds what each flow keeps in the tbf (two skbs or "
        "about 1 ms at its pacing rate)"
        + (
            "; with "
            + ", ".join(f"{s['bulk_flows']} bulk flows at {s['limit_mbps']} Mbit/s" for s in reversed_)
            + " EDT's p99 is the higher (a ratio below 1)."
            if reversed_
            else "."
        )
        + " With BPF host routing TSQ bounds each bulk flow in fq as it does in the tbf, so the two "
        "waits grow together and the ratio stays within a small factor of 1."
    )
    return Explanation("How the ratio depends on the load", text, _write(fig, plots_dir, "sweep.png"))


#: cilium/cilium PR #33220's own measurement (128 bulk flows in a pod limited to 100 Mbit/s,
#: netperf TCP_RR average): without and with its 1 ms ECN marking.
PR_33220_RR_MS = {"off": 2247.3, "on": 3.1}
PR_33220_BULK = 128


def _bulk_mbps(result: Result) -> float:
    """The bulk flows' payload received over the run, summed, in 10^6 bit/s."""
    flows = result.flows
    bulk = flows[flows["name"].str.startswith("bulk")]
    return float(bulk["bytes_received"].sum()) * 8 / float(result.summary["duration_s"]) / 1e6


def _ce_marks(result: Result) -> int:
    return sum(int(e.get("ce_marks", 0)) for _, row in result.links.iterrows() for e in (row["edt"] or []))


def ecn_figure(results: Mapping[str, Result], bulks: Sequence[int], plots_dir: Path) -> Explanation:
    """The ECN what-if: the RR's latency and the bulk goodput with and without PR #33220's
    marking, per number of bulk flows, beside the PR's own figures."""
    from tcplab.experiments.bandwidth_manager.readings import ECN_THRESHOLD, ecn_label

    fig = _figure(height=4.0)
    ax_rr = fig.add_subplot(1, 2, 1)
    ax_bulk = fig.add_subplot(1, 2, 2)
    width = 0.38
    rows = []
    for k, bulk in enumerate(bulks):
        for marking, dx, color in ((False, -width / 2, COLORS["cni"]), (True, width / 2, COLORS["bandwidth-manager"])):
            r = results[ecn_label(marking, bulk)]
            lat = r.apps["rr"].get("latency_ms")
            mbps = _bulk_mbps(r)
            name = f"marking at {ECN_THRESHOLD}" if marking else "no marking"
            ax_rr.bar(k + dx, lat["mean"], width, color=color, label=name if k == 0 else None)
            ax_rr.plot([k + dx], [lat["p99"]], marker="_", color="black", ms=14)
            ax_bulk.bar(k + dx, mbps, width, color=color, label=name if k == 0 else None)
            rows.append((bulk, marking, float(lat["mean"]), float(lat["p99"]), mbps, _ce_marks(r), r))
    _style(ax_rr, "TCP_RR latency, ms (bar: mean, tick: p99)", xlabel="")
    _style(ax_bulk, "bulk goodput, Mbit/s (all flows)", xlabel="")
    for ax in (ax_rr, ax_bulk):
        ax.set_xticks(range(len(bulks)), [f"{b} bulk flows" for b in bulks])
        ax.set_xlim(-0.6, len(bulks) - 0.4)
    ax_rr.set_yscale("log")
    ax_rr.set_ylim(1.0, 10 ** np.ceil(np.log10(max(max(x[3] for x in rows), PR_33220_RR_MS["off"]) * 1.5)))
    if PR_33220_BULK in bulks:
        k = list(bulks).index(PR_33220_BULK)
        for key, dx in (("off", -width / 2), ("on", width / 2)):
            ax_rr.plot(
                [k + dx],
                [PR_33220_RR_MS[key]],
                marker="*",
                color="black",
                ms=10,
                ls="none",
                label="PR #33220 (mean)" if key == "off" else None,
            )
    _legend(ax_rr)
    fig.suptitle("ECN what-if: CE marking in Cilium's EDT program (PR #33220, not merged)")

    def floor_ms(bulk: int) -> float:
        # CUBIC's ssthresh and the end of CWR keep cwnd at 2 or more: each flow keeps at
        # least 2 full frames (1408 + 66 bytes on this path) queued at the pod's 100 Mbit/s.
        return bulk * 2 * 1474 * 8 / 100e6 * 1e3

    parts = []
    for bulk in bulks:
        off = next(x for x in rows if x[0] == bulk and not x[1])
        on = next(x for x in rows if x[0] == bulk and x[1])
        parts.append(
            f"With {bulk} bulk flows the RR's response waits a mean {_sig3(off[2])} ms (p99 {_sig3(off[3])} ms) "
            f"without marking and {_sig3(on[2])} ms (p99 {_sig3(on[3])} ms) with it; the bulk flows carry "
            f"{_sig3(off[4])} and {_sig3(on[4])} Mbit/s, and the EDT program marked {on[5]} packets CE. "
            f"With marking every bulk flow sits at the smallest window CUBIC keeps after a CWR (2 packets), "
            f"so the pod's timeline still holds {bulk} x 2 frames, {_sig3(floor_ms(bulk))} ms at 100 Mbit/s: "
            "the RR waits that floor, not the threshold."
        )
    pr = ""
    if PR_33220_BULK in bulks:
        on = next(x for x in rows if x[0] == PR_33220_BULK and x[1])
        off = next(x for x in rows if x[0] == PR_33220_BULK and not x[1])
        pr = (
            f" PR #33220 measured TCP_RR means of {PR_33220_RR_MS['off']:g} ms without and {PR_33220_RR_MS['on']:g} ms "
            f"with its marking at {PR_33220_BULK} bulk flows ({_sig3(PR_33220_RR_MS['off'] / PR_33220_RR_MS['on'])}x "
            f"lower); tcplab gives {_sig3(off[2])} and {_sig3(on[2])} ms ({_sig3(off[2] / on[2])}x lower). The "
            "direction reproduces, the size does not: the PR's 3.1 ms is below the "
            f"{_sig3(floor_ms(PR_33220_BULK))} ms that {PR_33220_BULK} windows of 2 full frames take, so its "
            "bulk flows cannot all have been sending full-size segments at once (the PR does not give its netperf "
            "options), and tcplab does not reproduce that figure."
        )
    text = (
        "The what-if adds ECN marking to the pod's EDT aggregate (bandwidth_manager.ce_threshold = 1 ms: a packet "
        "stamped more than 1 ms ahead is marked CE), the change cilium/cilium PR #33220 proposed and no Cilium "
        "release shipped; both pods ask for ECN (net.ipv4.tcp_ecn = 1). fq's own ce_threshold would not do "
        "this: it measures lateness after the stamp, and the wait the stamp imposes does not count. "
        + " ".join(parts)
        + pr
    )
    return Explanation("ECN what-if: marking in the EDT program", text, _write(fig, plots_dir, "ecn.png"))

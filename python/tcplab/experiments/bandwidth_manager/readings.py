"""What story 002's claims (the package) and its figures (:mod:`.figures`) both read: the
runs' names and the chosen load, and the numbers taken from a run (netperf's figure, the
payload ceiling, the steady goodput, the shaper's queue as delay, the RR's latency).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from tcplab.results import Result

__all__ = [
    "MAERTS_RUNS",
    "DEFAULT_LIMIT",
    "DEFAULT_BULK",
    "CLAIMED_RATIO",
    "RATIO_AT_LEAST",
    "rr_label",
    "netperf_mbps",
    "ceiling_mbps",
    "steady_mbps",
    "queue_delay_ms",
    "rr_p99_ms",
    "rr_p50_ms",
    "drop_counts",
]

#: The throughput runs: label -> (mode, limit in Mbit/s).
MAERTS_RUNS = {
    "bwm-10m": ("bandwidth-manager", 10),
    "bwm-100m": ("bandwidth-manager", 100),
    "cni-10m": ("cni", 10),
    "cni-100m": ("cni", 100),
}
#: "a 4x reduction": a ratio of p99s of at least this counts as about 4x (the story gives a
#: single figure from an unknown load; a quarter below it is still the same conclusion).
CLAIMED_RATIO = 4.0
RATIO_AT_LEAST = 3.0
#: The chosen load the claim's headline figure is taken at.
DEFAULT_LIMIT, DEFAULT_BULK = 100, 4


#: The ECN what-if (cilium/cilium PR #33220, not merged: ``bandwidth_manager.ce_threshold``):
#: bulk flows beside the RR at the 100 Mbit/s limit, each with and without marking at 1 ms;
#: both pods ask for ECN (net.ipv4.tcp_ecn = 1), so marking is the only difference.
ECN_BULK_QUICK = (128,)
ECN_BULK_FULL = (16, 128)
ECN_THRESHOLD = "1ms"
ECN_SETS = ("pods.web.sysctl.tcp_ecn=1", "pods.client.sysctl.tcp_ecn=1")


def ecn_label(marking: bool, bulk: int) -> str:
    """``ecn-on-n128``: the ECN what-if run with (on) or without (off) marking."""
    return f"ecn-{'on' if marking else 'off'}-n{bulk}"


def rr_label(mode: str, limit_mbps: int, bulk: int) -> str:
    """``rr-edt-100m-n4``: the latency run of ``mode`` (edt/tbf), limit and bulk flows."""
    return f"rr-{mode}-{limit_mbps}m-n{bulk}"


def _flow_row(result: Result, name: str) -> Mapping[str, Any]:
    rows = result.flows[result.flows["name"] == name]
    if rows.empty:
        raise KeyError(f"run has no flow {name!r}")
    return rows.iloc[0]


def netperf_mbps(result: Result) -> float:
    """netperf's figure: payload received over the test's elapsed time, in 10^6 bit/s."""
    row = _flow_row(result, "maerts")
    elapsed_s = float(row["end_s"]) - float(row["start_s"])
    return float(row["bytes_received"]) * 8 / elapsed_s / 1e6


def ceiling_mbps(result: Result) -> float:
    """The payload ceiling under the limit: rate x MSS / frame (the limit counts frames)."""
    row = next(f for f in result.summary["flows"] if f["name"] == "maerts")
    return float(row["payload_ceiling_bps"]) / 1e6


def steady_mbps(result: Result, from_s: float) -> float:
    """The maerts flow's goodput from ``from_s`` to the end (after a tbf bucket drained)."""
    ts = result.timeseries
    rows = ts[ts["flow_name"] == "maerts"]
    t = rows["t_s"].to_numpy()
    got = rows["bytes_received"].to_numpy().astype(np.float64)
    i = int(np.searchsorted(t, from_s))
    if i >= len(t) - 1:
        return float("nan")
    return (got[-1] - got[i]) * 8 / (t[-1] - t[i]) / 1e6


def _shaper_link(result: Result) -> tuple[str, str, float]:
    """The link whose queue limits the pod: (link name, qdisc, the pod's rate in bit/s).
    The CNI plugin's tbf (on the pod -> node hop), else the node's fq with the EDT aggregate."""
    links = result.links
    for _, row in links.iterrows():
        if row["qdisc"] == "tbf":
            rate = next(float(p.egress_bandwidth) for p in result.scenario.pods.values() if p.egress_bandwidth)
            return str(row["name"]), "tbf", rate
    for _, row in links.iterrows():
        if row["edt"]:
            return str(row["name"]), str(row["qdisc"]), float(row["edt"][0]["rate_bps"])
    raise KeyError("run has neither a tbf nor an EDT aggregate")


def queue_delay_ms(result: Result) -> tuple[np.ndarray, np.ndarray]:
    """The shaper's queue as delay: backlog x 8 / the pod's rate, per sample (t_s, ms). For
    tbf that is the wait of a packet entering now; for fq behind an EDT aggregate it is the
    span of departure times already handed out (the pod's packets are the only ones there)."""
    name, _qdisc, rate_bps = _shaper_link(result)
    q = result.queues[result.queues["link_name"] == name]
    return q["t_s"].to_numpy(), q["backlog_bytes"].to_numpy().astype(np.float64) * 8 / rate_bps * 1e3


def rr_p99_ms(result: Result) -> float:
    return float(result.apps["rr"].get("latency_ms", "p99"))


def rr_p50_ms(result: Result) -> float:
    return float(result.apps["rr"].get("latency_ms", "p50"))


def drop_counts(result: Result) -> dict[str, int]:
    """The packets the run dropped anywhere on its paths, and where: ``total`` (every qdisc's
    drops, which include a tbf's child's as tc -s counts them, plus the EDT aggregates'
    horizon drops and link losses),
    ``flows_plimit`` (fq's per-flow limit, sch_fq.c fq_enqueue()), ``horizon`` (fq's and the
    EDT aggregate's horizon drops) and ``tbf`` (the CNI plugin's tbf and its bfifo)."""
    links = result.links
    counts = {"total": 0, "flows_plimit": 0, "horizon": 0, "tbf": 0}
    for _, row in links.iterrows():
        drops = int(row["drops"]) + int(row["loss_drops"])
        xstats = row["xstats"] if isinstance(row["xstats"], dict) else {}
        edt = row["edt"] if isinstance(row["edt"], list) else []
        edt_drops = sum(int(e["drops"]) for e in edt)
        counts["total"] += drops + edt_drops
        counts["flows_plimit"] += int(xstats.get("flows_plimit", 0))
        counts["horizon"] += int(xstats.get("horizon_drops", 0)) + edt_drops
        if row["qdisc"] == "tbf":
            counts["tbf"] += drops
    return counts

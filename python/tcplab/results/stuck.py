"""Stuck and collapsed flows: the intervals a flow made (almost) no progress, and its
congestion-control state during them.

Two kinds of episode, found per flow in a run's time series (``Result.timeseries``); the
names are also the findings ``tcplab diagnose`` gives from a real host's ``ss -tin``
(:mod:`tcplab.diagnose.rules`), so the replay and the diagnoser speak the same words:

* ``cwnd-collapse``: ``cwnd <= 2`` and ``ssthresh <= 2`` (packets, as ``ss`` prints
  ``cwnd:2 ssthresh:2``) on every sample for at least ``collapse_min_s`` (default 1 s).
  Linux never sets ssthresh below 2 (Linux v6.12 net/ipv4/tcp_cubic.c: cubictcp_recalc_ssthresh()
  and net/ipv4/tcp_cong.c: tcp_reno_ssthresh() floor it at 2), and after an RTO cwnd is 1
  (net/ipv4/tcp_input.c: tcp_enter_loss()), so one loss episode at a small window passes
  through ``cwnd <= 2, ssthresh <= 2`` briefly: one RTO (TCP_RTO_MIN = 200 ms) and a few
  RTTs of growth. Staying there for 1 s, five minimum RTOs, means the window keeps being cut
  before it can grow: the state story 000 saw on three of four NFS connections. (On paths
  whose RTT is several hundred ms, raise ``collapse_min_s``: growing from 2 to 3 packets in
  congestion avoidance takes about two RTTs.)
* ``stuck``: goodput, averaged over the last ``window_s`` (default 1 s, at least one sample
  interval), below ``stuck_fraction`` (default 10 %) of the flow's fair share for at least
  ``stuck_min_s`` (default 5 s). The average matters at fine sample intervals: a shaped or
  paced flow's deliveries come in bursts, and a 20 ms sample may hold no arrival at all while
  the flow runs at its full share. The fair share at a sample is the payload ceiling of the
  flow's path (:func:`tcplab.results.paths.flow_path`: its bottleneck's rate and shapers in
  payload bit/s) divided by the number of flows active at that sample whose data route
  crosses the same bottleneck link. 10 % of a fair share is far below what any working CC
  keeps a flow with data waiting at (CUBIC's multiplicative decrease leaves 70 %, Reno's 50 %,
  BBR's PROBE_RTT lasts 200 ms per 10 s), and 5 s is longer than slow start on any path the
  scenarios build and than an RTO backoff sequence of a few lost retransmissions
  (0.2 + 0.4 + 0.8 + 1.6 s = 3 s), so a healthy flow never qualifies; BBRv1 pinned near
  100 kbit/s on a 100 Mbit/s path, or a path down for seconds, does.

  Only flows with data waiting are judged: engine bulk flows (``app: bulk``, or
  ``bulk_bytes`` until all its bytes have arrived) that read with the ``immediate`` reader,
  between their start and stop. Flows driven by an application (rr, hls, nfs_stream,
  batch_writer, broadcast) send what the application asks for, often far below a fair share
  (an idle rr connection is not stuck), and a flow read by a slow reader is held by the
  receiver's window, not by the network: both are left out, a conservative rule that never
  flags an app-limited flow.

Each sample stands for the interval ``(t - sample_interval, t]`` (goodput is the bytes
received in that interval), so an episode of samples ``t_a .. t_b`` spans
``start_s = t_a - sample_interval`` to ``end_s = t_b``. Short interruptions do not split an
episode: two runs of qualifying samples separated by at most ``merge_gap_s`` (default
0.5 s) are one episode (a single retransmission getting through in a stuck period).

Each episode (a dict, JSON-ready, as summary.json's ``stuck`` list holds them): ``kind``,
``flow``, ``start_s``, ``end_s``, ``duration_s``, ``samples``, and the CC state during it:
``ca_states`` and ``cc_modes`` (the names seen, most frequent first), ``cwnd_min``,
``cwnd_median``, ``ssthresh_min``, ``ssthresh_median`` (packets; 2147483647 = infinite, as
``ss`` omits it), ``goodput_median_bps``, ``bbr_bw_median_bps`` (None for non-BBR flows) and,
for ``stuck``, ``fair_share_bps`` (the median fair share over the episode).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from tcplab.results.paths import flow_path

__all__ = [
    "COLLAPSE",
    "STUCK",
    "DEFAULT_COLLAPSE_MIN_S",
    "DEFAULT_STUCK_FRACTION",
    "DEFAULT_STUCK_MIN_S",
    "DEFAULT_MERGE_GAP_S",
    "DEFAULT_STUCK_WINDOW_S",
    "find_episodes",
    "episode_line",
    "format_rate",
]

#: The episode kinds (also diagnose's finding names).
COLLAPSE = "cwnd-collapse"
STUCK = "stuck"

DEFAULT_COLLAPSE_MIN_S = 1.0
DEFAULT_STUCK_FRACTION = 0.10
DEFAULT_STUCK_MIN_S = 5.0
DEFAULT_MERGE_GAP_S = 0.5
#: Goodput for the stuck test is averaged over this window (at least one sample interval).
DEFAULT_STUCK_WINDOW_S = 1.0
#: cwnd and ssthresh at or below this many packets is a collapse (Linux's ssthresh floor).
COLLAPSE_PACKETS = 2


def find_episodes(
    timeseries: pd.DataFrame,
    config: Mapping[str, Any],
    *,
    collapse_min_s: float = DEFAULT_COLLAPSE_MIN_S,
    stuck_fraction: float = DEFAULT_STUCK_FRACTION,
    stuck_min_s: float = DEFAULT_STUCK_MIN_S,
    merge_gap_s: float = DEFAULT_MERGE_GAP_S,
    window_s: float = DEFAULT_STUCK_WINDOW_S,
) -> list[dict[str, Any]]:
    """Every ``cwnd-collapse`` and ``stuck`` episode of a run (see the module doc), ordered
    by start time, then flow, then kind. ``timeseries`` is ``Result.timeseries`` (columns
    t_s, flow_name, cwnd, ssthresh, goodput_bps, ca_state_name, cc_mode_name, bbr_bw_bps,
    bytes_received), ``config`` the engine configuration that ran (``Result.config``)."""
    if timeseries is None or len(timeseries) == 0:
        return []
    dt_s = float(config.get("sample_interval_ns", 0)) / 1e9
    flows = {str(f["name"]): f for f in config.get("flows", [])}
    rows_of = _flow_rows(timeseries)
    active = _flow_window_mask(timeseries, flows, rows_of)
    fair = _fair_share_bps(timeseries, config, flows, rows_of, active)
    eligible = _data_waiting(timeseries, flows, rows_of, active)
    episodes: list[dict[str, Any]] = []
    for name, rows in timeseries.groupby("flow_name", sort=False):
        rows = rows.sort_values("t_s")
        t = rows["t_s"].to_numpy(dtype=np.float64)
        cwnd = rows["cwnd"].to_numpy(dtype=np.int64)
        ssthresh = rows["ssthresh"].to_numpy(dtype=np.int64)
        collapsed = (cwnd <= COLLAPSE_PACKETS) & (ssthresh <= COLLAPSE_PACKETS)
        for a, b in _runs(t, collapsed, dt_s, merge_gap_s=0.0, min_s=collapse_min_s):
            episodes.append(_episode(COLLAPSE, str(name), rows.iloc[a : b + 1], t, a, b, dt_s))
        share = fair.loc[rows.index].to_numpy(dtype=np.float64)
        ok = eligible.loc[rows.index].to_numpy(dtype=bool) & np.isfinite(share) & (share > 0)
        sample_bps = rows["goodput_bps"].to_numpy(dtype=np.float64)
        limit = stuck_fraction * np.where(np.isfinite(share), share, 0.0)
        low = ok & (_window_goodput_bps(t, sample_bps, dt_s, window_s) < limit)
        sample_low = ok & (sample_bps < limit)
        for a, b in _runs(t, low, dt_s, merge_gap_s=merge_gap_s, min_s=0.0, allowed=ok):
            # The window average lags: the episode really starts at the first of the low
            # samples just before (within one window) and ends at its last low sample.
            first = a
            while a > 0 and sample_low[a - 1] and t[a - 1] > t[first] - max(window_s, dt_s) - 1e-9:
                a -= 1
            while b > a and not sample_low[b]:
                b -= 1
            if t[b] - t[a] + dt_s < stuck_min_s - 1e-9:
                continue
            ep = _episode(STUCK, str(name), rows.iloc[a : b + 1], t, a, b, dt_s)
            ep["fair_share_bps"] = _num(np.median(share[a : b + 1]))
            episodes.append(ep)
    episodes.sort(key=lambda e: (e["start_s"], e["flow"], e["kind"]))
    return episodes


def episode_line(ep: Mapping[str, Any]) -> str:
    """One line for the CLI and the report: what, which flow, when, and the CC state."""
    states = "/".join(ep["ca_states"]) or "?"
    modes = f" {'/'.join(ep['cc_modes'])}" if ep["cc_modes"] else ""
    ssth = ep["ssthresh_median"]
    ssth_text = "inf" if ssth is None or ssth >= 2147483647 else f"{ssth:g}"
    text = (
        f"{ep['kind']}: flow {ep['flow']} {ep['start_s']:.2f}-{ep['end_s']:.2f} s "
        f"({ep['duration_s']:.2f} s), {states}{modes}, cwnd min {ep['cwnd_min']} median "
        f"{ep['cwnd_median']:g}, ssthresh {ssth_text}, goodput median {format_rate(ep['goodput_median_bps'])}"
    )
    if ep.get("fair_share_bps") is not None:
        text += f" of a {format_rate(ep['fair_share_bps'])} fair share"
    if ep.get("bbr_bw_median_bps") is not None:
        text += f", bbr bw {format_rate(ep['bbr_bw_median_bps'])}"
    return text


# -- helpers --------------------------------------------------------------------------------


def format_rate(bps: float | None) -> str:
    if bps is None:
        return "?"
    for unit, scale in (("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
        if abs(bps) >= scale:
            return f"{bps / scale:.3g} {unit}"
    return f"{bps:.3g} bit/s"


def _num(x: Any) -> float | None:
    x = float(x)
    return x if np.isfinite(x) else None


def _runs(
    t: np.ndarray,
    flag: np.ndarray,
    dt_s: float,
    *,
    merge_gap_s: float,
    min_s: float,
    allowed: np.ndarray | None = None,
) -> list[tuple[int, int]]:
    """Index ranges ``[a, b]`` of consecutive flagged samples, joined across gaps of at most
    ``merge_gap_s`` (of allowed samples), kept when ``t[b] - t[a] + dt_s >= min_s``."""
    runs: list[list[int]] = []
    idx = np.flatnonzero(flag)
    for i in idx:
        i = int(i)
        if runs:
            prev = runs[-1][1]
            contiguous = i == prev + 1
            bridged = (
                merge_gap_s > 0
                and t[i] - t[prev] - dt_s <= merge_gap_s + 1e-9
                and (allowed is None or bool(allowed[prev : i + 1].all()))
            )
            if contiguous or bridged:
                runs[-1][1] = i
                continue
        runs.append([i, i])
    return [(a, b) for a, b in runs if t[b] - t[a] + dt_s >= min_s - 1e-9]


def _window_goodput_bps(t: np.ndarray, goodput_bps: np.ndarray, dt_s: float, window_s: float) -> np.ndarray:
    """Per sample, the flow's goodput averaged over the last ``max(window_s, dt_s)`` seconds
    (``(t - W, t]``; shorter at the flow's first samples). Delivery is bursty at fine sample
    intervals (a shaper's or fq's release, delayed ACKs, a 20 ms sample holding no arrival), so
    a single sample's goodput of 0 says nothing; a 1 s average below 10 % of the fair share does."""
    if len(t) == 0:
        return goodput_bps
    w = max(window_s, dt_s)
    cum_bits = np.concatenate([[0.0], np.cumsum(goodput_bps * dt_s)])
    starts = np.concatenate([[t[0] - dt_s], t])  # cum_bits[k] is the total at starts[k]
    j = np.searchsorted(starts, t - w - 1e-9, side="left")
    span = t - starts[j]
    bits = cum_bits[1:] - cum_bits[j]
    return np.where(span > 0, bits / np.where(span > 0, span, 1.0), goodput_bps)


def _names_by_count(values: pd.Series) -> list[str]:
    counts = values.astype(str)
    counts = counts[counts != ""].value_counts(sort=False)
    # most frequent first, ties by name: deterministic
    return [str(k) for k, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


def _episode(kind: str, flow: str, rows: pd.DataFrame, t: np.ndarray, a: int, b: int, dt_s: float) -> dict[str, Any]:
    start_s = max(0.0, float(t[a]) - dt_s)
    end_s = float(t[b])
    cwnd = rows["cwnd"].to_numpy(dtype=np.int64)
    ssthresh = rows["ssthresh"].to_numpy(dtype=np.int64)
    bbr = rows["bbr_bw_bps"].to_numpy(dtype=np.float64) if "bbr_bw_bps" in rows else np.array([])
    modes = _names_by_count(rows["cc_mode_name"]) if "cc_mode_name" in rows else []
    is_bbr = bool(len(bbr)) and bool((bbr > 0).any())
    return {
        "kind": kind,
        "flow": flow,
        "start_s": round(start_s, 9),
        "end_s": round(end_s, 9),
        "duration_s": round(end_s - start_s, 9),
        "samples": len(rows),
        "ca_states": _names_by_count(rows["ca_state_name"]) if "ca_state_name" in rows else [],
        "cc_modes": modes,
        "cwnd_min": int(cwnd.min()),
        "cwnd_median": float(np.median(cwnd)),
        "ssthresh_min": int(ssthresh.min()),
        "ssthresh_median": float(np.median(ssthresh)),
        "goodput_median_bps": _num(np.median(rows["goodput_bps"].to_numpy(dtype=np.float64))),
        "bbr_bw_median_bps": _num(np.median(bbr)) if is_bbr else None,
    }


def _flow_rows(ts: pd.DataFrame) -> dict[str, np.ndarray]:
    """``{flow name: positional row indices}`` (one pass over the frame, not one per flow)."""
    return {str(k): np.asarray(v) for k, v in ts.groupby("flow_name", sort=False).indices.items()}


def _flow_window_mask(
    ts: pd.DataFrame, flows: Mapping[str, Mapping[str, Any]], rows: Mapping[str, np.ndarray]
) -> np.ndarray:
    """Per row, whether its flow is between its start and stop (and, for ``bulk_bytes``,
    has not received all its bytes yet)."""
    t_ns = ts["t_s"].to_numpy(dtype=np.float64) * 1e9
    active = np.zeros(len(ts), dtype=bool)
    received = ts["bytes_received"].to_numpy(dtype=np.float64) if "bytes_received" in ts else None
    for name, idx in rows.items():
        f = flows.get(name)
        if f is None:
            continue
        start = float(f.get("start_ns") or 0)
        stop = f.get("stop_ns")
        tt = t_ns[idx]
        on = (tt > start) & (tt <= (float(stop) if stop is not None else np.inf))
        app = f.get("app") or {"kind": "bulk"}
        if app.get("kind") == "bulk_bytes" and received is not None:
            # the previous sample's total: the sample in which the last bytes arrive still counts
            got = received[idx]
            prev = np.concatenate([[0.0], got[:-1]])
            on &= prev < float(app.get("bytes", 0))
        active[idx] = on
    return active


def _data_waiting(
    ts: pd.DataFrame, flows: Mapping[str, Mapping[str, Any]], rows: Mapping[str, np.ndarray], active: np.ndarray
) -> pd.Series:
    """Rows whose flow has data waiting (a bulk flow read by the immediate reader, active)."""
    out = np.zeros(len(ts), dtype=bool)
    for name, idx in rows.items():
        f = flows.get(name)
        if (
            f is not None
            and (f.get("app") or {"kind": "bulk"}).get("kind") in ("bulk", "bulk_bytes")
            and (f.get("reader") or {"kind": "immediate"}).get("kind") == "immediate"
        ):
            out[idx] = active[idx]
    return pd.Series(out, index=ts.index)


def _fair_share_bps(
    ts: pd.DataFrame,
    config: Mapping[str, Any],
    flows: Mapping[str, Mapping[str, Any]],
    rows: Mapping[str, np.ndarray],
    active: np.ndarray,
) -> pd.Series:
    """Per row: the flow's path payload ceiling / the flows active on its bottleneck link at
    that sample (NaN when unrouted). Only sampled flows count (the engine samples every flow
    but a broadcast's)."""
    paths = {name: flow_path(config, flows[name]) for name in rows if name in flows}
    t = ts["t_s"].to_numpy(dtype=np.float64)
    # number of active flows crossing each link, per sample time
    crossing: dict[int, pd.Series] = {}
    for name, path in paths.items():
        if path is None:
            continue
        idx = rows[name]
        counts = pd.Series(t[idx[active[idx]]]).value_counts()
        for link in path.data_links:
            prev = crossing.get(link)
            crossing[link] = counts if prev is None else prev.add(counts, fill_value=0)
    out = np.full(len(ts), np.nan)
    for name, path in paths.items():
        if path is None:
            continue
        idx = rows[name]
        per_t = crossing.get(path.bottleneck_link, pd.Series(dtype=float))
        n = pd.Series(t[idx]).map(per_t).fillna(0).clip(lower=1).to_numpy(dtype=np.float64)
        out[idx] = path.payload_ceiling_bps / n
    return pd.Series(out, index=ts.index)

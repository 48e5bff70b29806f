"""The numbers story 000's claims rest on, measured from a run's own traces.

Each function reads one :class:`~tcplab.results.Result` and returns plain numbers (JSON-able):

* :func:`collapse` -- ``ss``'s ``cwnd:2 ssthresh:2``: per connection, the time spent with
  ``cwnd <= 2`` and ``ssthresh <= 2`` (the same test as results/stuck.py's cwnd-collapse
  and diagnose's rule), and the first moment at least two connections to the NFS server
  were collapsed at once (what the story's ``ss`` showed: three of four);
* :func:`player` -- the media player: startup, stalls, the buffer's minimum and its fall
  (the story: "27.9s -> 228ms over 20 seconds");
* :func:`buffer_after` -- the player from the moment the loss begins: its buffer then, its
  minimum after, the time to the first stall and each stall's length (the story: a healthy
  player whose buffer collapsed, then 30-second stalls);
* :func:`writes` -- vmagent's remote writes: timeouts (120 s), retries, backoff, and the same
  for the first ``window_s`` seconds only (the 2-minute check of the story's lesson);
* :func:`receiver_collapse` -- the same for the data *receiver*'s sockets (``ss`` on the NFS
  client marin: the ``receiver_*`` columns);
* :func:`first_stall` -- the first stall after a moment and what the traces show during it
  (the data sender's time in RTO recovery, its backoff, both sides' ssthresh);
* :func:`stall_windows`, :func:`connection_shares` -- the player and the connections' shares
  in the first 2 minutes and after (the story's 2-minute check);
* :func:`window_rate`, :func:`back_to`, :func:`convergence`, :func:`clean_path` -- a bulk
  flow's goodput over a window, its recovery after loss, when it first reaches a rate, and
  its congestion events and BBR estimate on a clean path;
* :func:`slowest_window` -- a bulk flow's lowest goodput over any window of ``window_s``
  (stuck near 100 kbit/s?), and the congestion-control state over that window: BBR's
  mode, its bandwidth estimate, the long-term (policer) estimate ``lt_bw`` and whether it
  was in use (``lt_use_bw``), TCP's ca_state (``Loss``: RTO recovery).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

    from tcplab.results import Result

__all__ = [
    "collapse",
    "player",
    "buffer_after",
    "writes",
    "slowest_window",
    "COLLAPSE_PACKETS",
]

#: ``cwnd:2 ssthresh:2``: both at most this many packets (results/stuck.py's threshold).
COLLAPSE_PACKETS = 2


def _collapsed(ts: pd.DataFrame) -> np.ndarray:
    return (ts["cwnd"].to_numpy() <= COLLAPSE_PACKETS) & (ts["ssthresh"].to_numpy() <= COLLAPSE_PACKETS)


def collapse(result: Result, flows: list[str] | None = None) -> dict[str, Any]:
    """Time collapsed per connection; the most connections collapsed at one sample and when
    two or more first were (``first_multi_s``, None if never); ssthresh's lowest value."""
    ts = result.timeseries
    if flows is not None:
        ts = ts[ts["flow_name"].isin(flows)]
    dt = result.sample_interval_s
    mask = _collapsed(ts)
    per_flow = {
        str(name): round(float(mask[(ts["flow_name"] == name).to_numpy()].sum() * dt), 3)
        for name in sorted(ts["flow_name"].unique())
    }
    at_once = ts.assign(c=mask).groupby("t_ns")["c"].sum()
    multi = at_once[at_once >= 2]
    return {
        "collapsed_s": per_flow,
        "connections_collapsed": sum(1 for v in per_flow.values() if v > 0),
        "max_at_once": int(at_once.max()) if len(at_once) else 0,
        "first_multi_s": round(float(multi.index[0]) / 1e9, 3) if len(multi) else None,
        "multi_s": round(float(len(multi) * dt), 3),
        "ssthresh_min": int(ts["ssthresh"].min()) if len(ts) else None,
        "cwnd_min": int(ts["cwnd"].min()) if len(ts) else None,
    }


def player(result: Result, app: str = "plex") -> dict[str, Any]:
    """The nfs_stream player: startup, stalls, buffer minimum after startup, and the largest
    fall of the buffer within 20 s (from its level to its level 20 s later)."""
    a = result.apps[app]
    s = a.summary
    series = a.tables.get("series")
    drop = None
    if series is not None and len(series):
        t = series["t_ns"].to_numpy().astype(np.float64) / 1e9
        b = series["buffer_ns"].to_numpy().astype(np.float64) / 1e9
        j = np.searchsorted(t, t + 20.0)
        ok = j < len(t)
        if ok.any():
            falls = b[ok] - b[j[ok]]
            k = int(np.argmax(falls))
            drop = {
                "from_s": round(float(b[ok][k]), 3),
                "to_s": round(float(b[j[ok]][k]), 3),
                "at_s": round(float(t[ok][k]), 1),
            }
    startup = s.get("startup_delay_s")
    started = startup is not None and s.get("played_s", 0) and s.get("played_s", 0) > 0
    played = float(s.get("played_s") or 0.0)
    return {
        "started": bool(started),
        "startup_delay_s": startup,
        "stalls": int(s.get("stalls") or 0),
        "stall_s": float(s.get("stall_s") or 0.0),
        "min_buffer_s": s.get("min_buffer_s"),
        "played_s": round(played, 2),
        "played_fraction": round(played / result.duration_s, 4),
        "read_p99_ms": (s.get("latency_ms") or {}).get("p99"),
        "largest_20s_fall": drop,
    }


def buffer_after(result: Result, start_s: float, app: str = "plex") -> dict[str, Any]:
    """The player from ``start_s`` (when the loss begins) on, from its own series: the buffer
    at ``start_s``, its minimum after, when it first stalled (``playing`` 0 after playback had
    started) and how long after ``start_s``, each stall's length (a stall still running at the
    end counts up to the end), and the buffer 20 s after ``start_s``."""
    series = result.apps[app].tables.get("series")
    out: dict[str, Any] = {"start_s": start_s}
    if series is None or not len(series):
        return {**out, "buffer_at_start_s": None}
    t = series["t_ns"].to_numpy().astype(np.float64) / 1e9
    b = series["buffer_ns"].to_numpy().astype(np.float64) / 1e9
    playing = series["playing"].to_numpy() > 0
    i0 = int(np.searchsorted(t, start_s))
    if i0 >= len(t):
        return {**out, "buffer_at_start_s": None}
    started_before = bool(playing[:i0].any())
    after_t, after_b, after_p = t[i0:], b[i0:], playing[i0:]
    stalls: list[float] = []
    first_stall = None
    k = 0
    while k < len(after_p):
        if not after_p[k] and (started_before or after_p[:k].any()):
            j = k
            while j < len(after_p) and not after_p[j]:
                j += 1
            end = after_t[j] if j < len(after_t) else result.duration_s
            stalls.append(round(float(end - after_t[k]), 2))
            if first_stall is None:
                first_stall = float(after_t[k])
            k = j
        else:
            k += 1
    i20 = int(np.searchsorted(t, start_s + 20.0))
    return {
        **out,
        "playing_at_start": bool(playing[i0]),
        "buffer_at_start_s": round(float(b[i0]), 3),
        "buffer_20s_later_s": round(float(b[i20]), 3) if i20 < len(b) else None,
        "min_buffer_after_s": round(float(after_b.min()), 3),
        "first_stall_s": round(first_stall, 2) if first_stall is not None else None,
        "to_first_stall_s": round(first_stall - start_s, 2) if first_stall is not None else None,
        "stalls_s": stalls,
    }


def writes(result: Result, app: str = "vmagent", window_s: float = 120.0) -> dict[str, Any]:
    """vmagent's remote writes over the whole run and over the first ``window_s`` seconds
    (attempts that *ended* by then: a check made at ``window_s`` sees only those)."""
    a = result.apps[app]
    s = a.summary
    req = a.tables.get("requests")

    def part(rows: pd.DataFrame | None) -> dict[str, Any]:
        if rows is None or not len(rows):
            return {"attempts": 0, "timeouts": 0, "ok": 0, "ok_p99_ms": None, "ok_max_ms": None}
        ok = rows[rows["outcome"] == "ok"]
        lat = ok["latency_ns"].to_numpy().astype(np.float64) / 1e6
        return {
            "attempts": int(len(rows)),
            "timeouts": int((rows["outcome"] == "timeout").sum()),
            "ok": int(len(ok)),
            "ok_p99_ms": round(float(np.percentile(lat, 99)), 3) if len(lat) else None,
            "ok_max_ms": round(float(lat.max()), 3) if len(lat) else None,
        }

    first = None
    if req is not None:
        end_s = (req["start_ns"].to_numpy() + req["latency_ns"].to_numpy()).astype(np.float64) / 1e9
        first = req[end_s <= window_s]
    # The longest stretch the writer's connection spent in the Loss state (RTO recovery).
    ts = result.timeseries
    rows = ts[ts["flow_name"].isin(a.flows)] if a.flows else ts
    in_loss = (rows["ca_state_name"] == "Loss").to_numpy()
    longest = run = 0
    for v in in_loss:
        run = run + 1 if v else 0
        longest = max(longest, run)
    first_timeout_s = None
    if req is not None and len(req):
        to = req[req["outcome"] == "timeout"]
        if len(to):
            first_timeout_s = round(float(to["start_ns"].min()) / 1e9, 3)
    batches = int(s.get("batches") or 0)
    produced_first = min(batches, int(window_s / max(1e-9, (a.spec.get("interval_ns") or 1e9) / 1e9)))
    return {
        "batches": batches,
        "sent": int(s.get("sent") or 0),
        "sent_fraction": round((s.get("sent") or 0) / batches, 4) if batches else None,
        "timeouts": int(s.get("timeouts") or 0),
        "retries": int(s.get("retries") or 0),
        "max_backoff_s": s.get("max_backoff_s"),
        "max_pending": s.get("max_pending"),
        "first_timeout_start_s": first_timeout_s,
        "longest_loss_state_s": round(longest * result.sample_interval_s, 3),
        "loss_state_fraction": round(float(in_loss.mean()), 4) if len(in_loss) else 0.0,
        "whole": part(req),
        "first_window": {**part(first), "window_s": window_s, "produced": produced_first},
    }


def slowest_window(result: Result, flow: str, window_s: float = 10.0, skip_s: float = 2.0) -> dict[str, Any]:
    """The lowest goodput of ``flow`` over any ``window_s`` (after ``skip_s`` of start-up),
    and what its congestion control was doing then."""
    ts = result.timeseries
    rows = ts[ts["flow_name"] == flow]
    t = rows["t_s"].to_numpy()
    acked = rows["bytes_received"].to_numpy().astype(np.float64)
    j = np.searchsorted(t, t + window_s)
    ok = (j < len(t)) & (t >= skip_s)
    out: dict[str, Any] = {"window_s": window_s}
    if not ok.any():
        return {**out, "min_bps": None}
    rate = (acked[j[ok]] - acked[ok]) * 8 / window_s
    k = int(np.argmin(rate))
    i0 = int(np.flatnonzero(ok)[k])
    w = rows.iloc[i0 : int(j[i0]) + 1]
    lt_on = w["bbr_lt_use_bw"].to_numpy() > 0 if "bbr_lt_use_bw" in w else np.zeros(len(w), bool)
    lt_bw = rows["bbr_lt_bw_bps"].to_numpy() if "bbr_lt_bw_bps" in rows else np.zeros(len(rows))
    nonzero_lt = lt_bw[lt_bw > 0]
    ca = w["ca_state_name"].value_counts(normalize=True)
    return {
        **out,
        "min_bps": round(float(rate[k]), 1),
        "mean_bps": round(float((acked[-1] - acked[0]) * 8 / max(1e-9, t[-1] - t[0])), 1) if len(t) > 1 else None,
        "at_s": round(float(t[i0]), 2),
        "loss_state_fraction": round(float(ca.get("Loss", 0.0)), 3),
        "ca_states": {str(k2): round(float(v), 3) for k2, v in ca.items()},
        "bbr_bw_min_bps": int(w["bbr_bw_bps"].min()),
        "bbr_bw_median_bps": float(np.median(w["bbr_bw_bps"].to_numpy())),
        "lt_use_fraction": round(float(lt_on.mean()), 3) if len(w) else 0.0,
        "lt_use_fraction_run": round(float((rows["bbr_lt_use_bw"].to_numpy() > 0).mean()), 3)
        if "bbr_lt_use_bw" in rows
        else 0.0,
        "lt_bw_min_bps": int(nonzero_lt.min()) if len(nonzero_lt) else None,
        "retrans_segs": int(rows["retrans_segs"].max()),
    }


def receiver_collapse(result: Result) -> dict[str, Any]:
    """:func:`collapse` of the data *receiver*'s sockets (the NFS client's, as ``ss`` on marin
    shows them: the ``receiver_*`` columns): their cwnd moves only with the loss of their own
    calls and their own RTOs. Also the lowest cwnd and ssthresh they reached."""
    ts = result.timeseries
    mask = (ts["receiver_cwnd"].to_numpy() <= COLLAPSE_PACKETS) & (
        ts["receiver_ssthresh"].to_numpy() <= COLLAPSE_PACKETS
    )
    at_once = ts.assign(c=mask).groupby("t_ns")["c"].sum()
    multi = at_once[at_once >= 2]
    return {
        "max_at_once": int(at_once.max()) if len(at_once) else 0,
        "first_multi_s": round(float(multi.index[0]) / 1e9, 3) if len(multi) else None,
        "connections": int(ts["flow_name"].nunique()),
        "ssthresh_min": int(ts["receiver_ssthresh"].min()) if len(ts) else None,
        "cwnd_min": int(ts["receiver_cwnd"].min()) if len(ts) else None,
        "retrans_segs": int(ts.groupby("flow_name")["receiver_retrans_segs"].max().sum()) if len(ts) else 0,
    }


def first_stall(result: Result, after_s: float, app: str = "plex") -> dict[str, Any]:
    """The first stall that began at or after ``after_s`` (None: no stall), and what the
    traces show during it: the share of the data sender's (nezuko's) connection-samples in
    RTO recovery (ca_state Loss), their largest backoff, the lowest ssthresh of the sender's
    connections and of the receiver's (marin's) ones, how many of marin's were at cwnd <= 2
    and ssthresh <= 2, the spread of marin's cwnd at the stall's start (what ``ss`` there
    shows), and the data delivered before it (the story: "failed after 763MB transferred")."""
    e = buffer_after(result, after_s, app)
    if e.get("first_stall_s") is None:
        return {"stalled": False}
    t0 = float(e["first_stall_s"])
    t1 = t0 + float(e["stalls_s"][0])
    ts = result.timeseries
    t = ts["t_s"].to_numpy()
    during = ts[(t >= t0) & (t <= t1)]
    at = ts[t >= t0]
    at = at[at["t_ns"] == at["t_ns"].min()] if len(at) else at
    rc = (during["receiver_cwnd"].to_numpy() <= COLLAPSE_PACKETS) & (
        during["receiver_ssthresh"].to_numpy() <= COLLAPSE_PACKETS
    )
    before = ts[t <= t0]
    delivered = float(before.groupby("flow_name")["bytes_received"].max().sum()) if len(before) else 0.0
    return {
        "stalled": True,
        "start_s": round(t0, 2),
        "length_s": round(t1 - t0, 2),
        "sender_loss_fraction": round(float((during["ca_state_name"] == "Loss").mean()), 3) if len(during) else 0.0,
        "sender_backoff_max": int(during["backoff"].max()) if len(during) else 0,
        "sender_ssthresh_min": int(during["ssthresh"].min()) if len(during) else None,
        "receiver_ssthresh_min": int(during["receiver_ssthresh"].min()) if len(during) else None,
        "receiver_collapsed_max": int(during.assign(c=rc).groupby("t_ns")["c"].sum().max()) if len(during) else 0,
        "receiver_cwnd_at_start": [int(x) for x in sorted(at["receiver_cwnd"].to_numpy())],
        "delivered_before_bytes": delivered,
    }


def stall_windows(result: Result, check_s: float, app: str = "plex") -> dict[str, Any]:
    """The player over the first ``check_s`` and after it: stalls that began in each part,
    the lowest buffer once playing, and the stall hazard (stalls per minute of the part)."""
    series = result.apps[app].tables.get("series")
    if series is None or not len(series):
        return {"started": False}
    t = series["t_ns"].to_numpy().astype(np.float64) / 1e9
    playing = series["playing"].to_numpy() > 0
    b = series["buffer_ns"].to_numpy().astype(np.float64) / 1e9
    if not playing.any():
        return {"started": False}
    i0 = int(np.argmax(playing))
    starts = [t[k] for k in range(i0 + 1, len(t)) if playing[k - 1] and not playing[k]]
    early = [x for x in starts if x < check_s]
    late = [x for x in starts if x >= check_s]
    first = (t >= t[i0]) & (t < check_s)
    end_s = result.duration_s
    return {
        "started": True,
        "stalls_first": len(early),
        "stalls_after": len(late),
        "min_buffer_first_s": round(float(b[first].min()), 3) if first.any() else None,
        "first_stall_s": round(float(starts[0]), 2) if starts else None,
        "hazard_first_per_min": round(len(early) / max(1e-9, (check_s - t[i0]) / 60), 4),
        "hazard_after_per_min": round(len(late) / max(1e-9, (end_s - check_s) / 60), 4),
        "minutes_after": round((end_s - check_s) / 60, 2),
    }


def connection_shares(result: Result, check_s: float) -> dict[str, Any]:
    """Each connection's share of the bytes over the first ``check_s`` and over the run: the
    largest over the smallest share (1.0: even; the story: "even initial distribution")."""
    ts = result.timeseries
    t = ts["t_s"].to_numpy()

    def spread(rows: pd.DataFrame) -> float | None:
        per = rows.groupby("flow_name")["bytes_received"].max().to_numpy().astype(np.float64)
        return round(float(per.max() / per.min()), 3) if len(per) and per.min() > 0 else None

    return {"first": spread(ts[t <= check_s]), "whole": spread(ts)}


def _delivered(result: Result, flow: str) -> tuple[Any, np.ndarray, np.ndarray]:
    """``flow``'s samples, their times (s) and its bytes received at each: what every
    windowed rate below reads."""
    ts = result.timeseries
    rows = ts[ts["flow_name"] == flow]
    return rows, rows["t_s"].to_numpy(), rows["bytes_received"].to_numpy().astype(np.float64)


def window_rate(result: Result, flow: str, t0_s: float, t1_s: float) -> float | None:
    """Goodput of ``flow`` (bit/s) between ``t0_s`` and ``t1_s`` from its delivered bytes."""
    rows, t, got = _delivered(result, flow)
    i, j = int(np.searchsorted(t, t0_s)), int(np.searchsorted(t, t1_s)) - 1
    if i >= len(t) or j <= i:
        return None
    return round(float((got[j] - got[i]) * 8 / (t[j] - t[i])), 1)


def convergence(result: Result, flow: str, target_bps: float, fraction: float = 0.9) -> dict[str, Any]:
    """When ``flow``'s goodput between two samples first reached ``fraction`` of ``target_bps``
    (``None``: never), with the sampling interval that bounds its resolution."""
    rows, t, got = _delivered(result, flow)
    rate = np.diff(got) * 8 / np.maximum(np.diff(t), 1e-12)
    hit = np.flatnonzero(rate >= fraction * target_bps)
    return {
        "reach_s": round(float(t[hit[0] + 1]), 4) if len(hit) else None,
        "resolution_s": result.sample_interval_s,
        "target_bps": target_bps,
        "fraction": fraction,
    }


def clean_path(result: Result, flow: str = "bulk", skip_s: float = 1.0) -> dict[str, Any]:
    """A flow on a clean path: its retransmissions (congestion events that cost a packet), the
    share of samples out of the Open state, its goodput, and BBR's bandwidth estimate after
    ``skip_s`` (median and largest)."""
    rows, t, got = _delivered(result, flow)
    late = rows[rows["t_s"] >= skip_s]
    bw = late["bbr_bw_bps"].to_numpy().astype(np.float64)
    return {
        "retrans_segs": int(rows["retrans_segs"].max()) if len(rows) else 0,
        "not_open_fraction": round(float((rows["ca_state_name"] != "Open").mean()), 4) if len(rows) else 0.0,
        "goodput_bps": round(float((got[-1] - got[0]) * 8 / max(1e-9, t[-1] - t[0])), 1) if len(t) > 1 else None,
        "bbr_bw_median_bps": float(np.median(bw)) if len(bw) and bw.max() > 0 else None,
        "bbr_bw_max_bps": float(bw.max()) if len(bw) and bw.max() > 0 else None,
        "srtt_p50_us": float(np.median(rows["srtt_us"])) if len(rows) else None,
    }


def back_to(result: Result, flow: str, after_s: float, rate_bps: float, window_s: float = 1.0) -> float | None:
    """Seconds after ``after_s`` until ``flow`` first delivered ``rate_bps`` over ``window_s``
    (None: never within the run)."""
    rows, t, got = _delivered(result, flow)
    j = np.searchsorted(t, t + window_s)
    ok = (j < len(t)) & (t >= after_s)
    if not ok.any():
        return None
    idx = np.flatnonzero(ok)
    rate = (got[j[idx]] - got[idx]) * 8 / window_s
    hit = np.flatnonzero(rate >= rate_bps)
    return round(float(t[idx[hit[0]]] - after_s), 2) if len(hit) else None


def delivered_rate(result: Result, after_s: float) -> float | None:
    """The stream's goodput over all its connections from ``after_s`` to the end (bit/s)."""
    ts = result.timeseries
    t = ts["t_s"].to_numpy()
    at = ts[t >= after_s]
    if not len(at) or result.duration_s <= after_s:
        return None
    first = at[at["t_ns"] == at["t_ns"].min()]["bytes_received"].sum()
    last = at[at["t_ns"] == at["t_ns"].max()]["bytes_received"].sum()
    span = (at["t_ns"].max() - at["t_ns"].min()) / 1e9
    return round(float((last - first) * 8 / span), 1) if span > 0 else None

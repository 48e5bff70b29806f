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
* :func:`after_loss` -- the writes once an episode of loss has ended: do timeouts persist?
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
    "after_loss",
    "player_windows",
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


def player_windows(result: Result, app: str = "plex", window_s: float = 120.0) -> dict[str, Any]:
    """The player over the first ``window_s`` and over the whole run, from its own series:
    the lowest buffer once playback started, and the time it was not playing after it had
    started (stalls)."""
    series = result.apps[app].tables.get("series")

    def part(rows: pd.DataFrame) -> dict[str, Any]:
        playing = rows["playing"].to_numpy() > 0
        if not playing.any():
            return {"started": False, "min_buffer_s": None, "stalled_fraction": None}
        after = rows.iloc[int(np.argmax(playing)) :]
        return {
            "started": True,
            "min_buffer_s": round(float(after["buffer_ns"].min()) / 1e9, 3),
            "stalled_fraction": round(float((after["playing"].to_numpy() == 0).mean()), 4),
        }

    if series is None or not len(series):
        return {"first": None, "whole": None, "window_s": window_s}
    first = series[series["t_ns"] <= window_s * 1e9]
    return {"first": part(first), "whole": part(series), "window_s": window_s}


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


def after_loss(result: Result, end_s: float, app: str = "vmagent") -> dict[str, Any]:
    """The writes once the loss has ended at ``end_s``: attempts that started after it and
    timed out, attempts still running at ``end_s`` that timed out, and when the first
    attempt succeeded after ``end_s`` (seconds after it)."""
    req = result.apps[app].tables.get("requests")
    if req is None or not len(req):
        return {"started_after": 0, "running_at_end": 0, "first_ok_after_s": None}
    start = req["start_ns"].to_numpy().astype(np.float64) / 1e9
    done = start + req["latency_ns"].to_numpy().astype(np.float64) / 1e9
    timeout = (req["outcome"] == "timeout").to_numpy()
    ok = (req["outcome"] == "ok").to_numpy() & (done >= end_s)
    return {
        "started_after": int((timeout & (start >= end_s)).sum()),
        "running_at_end": int((timeout & (start < end_s) & (done >= end_s)).sum()),
        "first_ok_after_s": round(float(done[ok].min() - end_s), 3) if ok.any() else None,
    }

"""The numbers story 000's claims rest on, measured from a run's own traces.

Each function reads one :class:`~tcplab.results.Result` and returns plain numbers (JSON-able):

* :func:`collapse` -- ``ss``'s ``cwnd:2 ssthresh:2``: per connection, the time spent with
  ``cwnd <= 2`` and ``ssthresh <= 2`` (the same test as results/stuck.py's cwnd-collapse
  and diagnose's rule), and the first moment at least two connections to the NFS server
  were collapsed at once (what the story's ``ss`` showed: three of four);
* :func:`player` -- the media player: startup, stalls, the buffer's minimum and its fall
  (the story: "27.9s -> 228ms over 20 seconds");
* :func:`writes` -- vmagent's remote writes: timeouts (120 s), retries, backoff, and the same
  for the first ``window_s`` seconds only (the 2-minute check of the story's lesson);
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

__all__ = ["collapse", "player", "player_windows", "writes", "slowest_window", "COLLAPSE_PACKETS"]

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

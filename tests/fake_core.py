"""A test double for ``tcplab._core``: structurally valid output, synthetic numbers.

It follows the engine contract (the keys, column names, dtypes and units of what
``tcplab._core.run`` returns, declared once in :data:`tcplab.engine.OUTPUT_SCHEMA`; its parts
that are only zeros are built from that schema) so the Python side can be tested without the
Rust engine. tests/test_engine_schema.py holds it to the whole schema, and
tests/test_defaults.py to the real engine's shape. The
numbers are NOT a simulation: every flow gets 80% of the slowest link's rate, a sawtooth
cwnd, a constant RTT of twice the summed link delay, and a fixed 1% retransmission share.
Deterministic: the same config gives the same output.

Use it by passing ``core=FakeCore()`` (or this module) to ``tcplab.run`` /
``tcplab.engine.run_core``; it is never used by the package itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np

from tcplab.columns import HOST_DTYPES, TIMESERIES_DTYPES
from tcplab.engine import INVARIANT, QDISC_STATS

MSS = 1448
CA_STATES = ["Open", "Disorder", "CWR", "Recovery", "Loss"]


def run(config_json: str, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Module-level entry point with the engine's signature."""
    return FakeCore().run(config_json, progress)


def defaults() -> dict[str, Any]:
    """The engine's ``defaults()``: here Python's own copy (the real one is tested against it)."""
    from tcplab.scenario import DEFAULT_PFIFO_LIMIT, LINUX_CC_DEFAULTS, LINUX_TCP_DEFAULTS

    out: dict[str, Any] = {
        "tcp": dict(LINUX_TCP_DEFAULTS),
        "cc_params": dict(LINUX_CC_DEFAULTS),
        "queue": {"kind": "pfifo", "limit_packets": DEFAULT_PFIFO_LIMIT},
        "overhead_bytes": 14,
        "sample_interval_ns": 100_000_000,
    }
    try:  # the applications' defaults: Python's copy (tcplab.scenario.apps), once it has one
        from tcplab.scenario.apps import APP_DEFAULTS  # type: ignore[attr-defined]
    except ImportError:
        APP_DEFAULTS = None
    if APP_DEFAULTS is not None:
        out["apps"] = json.loads(json.dumps(APP_DEFAULTS))
    return out


class FakeCore:
    """``run(config_json, progress)`` like the engine; ``fail`` makes it raise instead."""

    def __init__(self, fail: BaseException | None = None):
        self.fail = fail
        self.calls: list[dict[str, Any]] = []
        self.progress_calls: list[tuple[int, int]] = []

    def run(self, config_json: str, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
        config = json.loads(config_json)
        self.calls.append(config)
        if self.fail is not None:
            raise self.fail
        duration = config["duration_ns"]
        if progress is not None:
            for k in range(1, 5):
                now = duration * k // 4
                self.progress_calls.append((now, duration))
                progress(now, duration)
        return _output(config)

    def defaults(self) -> dict[str, Any]:
        return defaults()


def _child(q: dict[str, Any]) -> dict[str, Any] | None:
    """A tbf's inner qdisc as the engine reports it (bfifo of tbf's limit by default)."""
    if q["kind"] != "tbf":
        return None
    child = q.get("child") or {"kind": "bfifo"}
    return {"qdisc": child["kind"], **dict.fromkeys(QDISC_STATS, 0), "xstats": {}}


def _ecn(flow: dict[str, Any]) -> dict[str, Any]:
    """The flow's ECN state as the engine reports it: negotiated when the client asks
    (tcp_ecn 1) and the server accepts (1 or 2), or the cc needs ECN (dctcp); no CE marks."""
    client, server = (flow.get("tcp") or {}).get("tcp_ecn", [2, 2])
    ok = flow["cc"] == "dctcp" or (client == 1 and server > 0)
    # TCP_ECN_OK on both; the data receiver has seen ECT data (TCP_ECN_SEEN)
    dctcp = {"ce_state": 0, "alpha": 1024, "ab_ecn": 0, "ab_tot": 0} if flow["cc"] == "dctcp" and ok else None
    return {"sender_flags": int(ok), "receiver_flags": 9 if ok else 0, "delivered_ce": 0, "dctcp": dctcp}


def _output(config: dict[str, Any]) -> dict[str, Any]:
    duration = config["duration_ns"]
    interval = config.get("sample_interval_ns", 100_000_000)
    links = config["links"]
    nodes = config["nodes"]
    flows = config["flows"]
    bottleneck = min((link["rate_bps"] for link in links), default=1_000_000)
    rtt_us = max(1, 2 * sum(link["delay_ns"] for link in links) // max(1, len(links)) // 1000)
    n_flows = max(1, len(flows))
    share_bps = 0.8 * bottleneck / n_flows

    t = np.arange(interval, duration + 1, interval, dtype=np.uint64)
    columns: dict[str, list[np.ndarray]] = {}

    sampled = True

    def add(name: str, values: np.ndarray) -> None:
        if sampled:
            columns.setdefault(name, []).append(values)

    flow_out = []
    for i, f in enumerate(flows):
        sampled = f.get("sample", True)  # the engine keeps no time series of unsampled flows
        start = f.get("start_ns", 0)
        stop = f.get("stop_ns") or duration
        active = np.clip((t.astype(np.float64) - start) / 1e9, 0, (stop - start) / 1e9)
        received = np.floor(active * share_bps / 8).astype(np.uint64)
        cwnd = (10 + (np.arange(len(t)) * (i + 3)) % 40).astype(np.uint32)
        n = len(t)
        add("t_ns", t)
        add("flow", np.full(n, i, dtype=np.uint32))
        add("cwnd", cwnd)
        add("ssthresh", np.full(n, 2147483647, dtype=np.uint32))
        add("srtt_us", np.full(n, rtt_us, dtype=np.uint32))
        add("rttvar_us", np.full(n, rtt_us // 4, dtype=np.uint32))
        add("min_rtt_us", np.full(n, rtt_us, dtype=np.uint32))
        add("pacing_rate_bps", np.full(n, int(share_bps * 1.2), dtype=np.uint64))
        add("delivery_rate_bps", np.full(n, int(share_bps), dtype=np.uint64))
        add("inflight", (cwnd // 2).astype(np.uint32))
        add("bytes_acked", received)
        add("bytes_received", received)
        add("retrans_segs", (received // MSS // 100).astype(np.uint64))
        add("lost", (received // MSS // 100).astype(np.uint64))
        add("ca_state", (np.arange(n) % 5 == 4).astype(np.uint8) * 3)
        add("cc_mode", (np.full(n, 3, dtype=np.uint8) if f["cc"] == "bbr" else np.zeros(n, dtype=np.uint8)))
        add("bbr_bw_bps", np.full(n, int(share_bps) if f["cc"] == "bbr" else 0, dtype=np.uint64))
        add("bbr_lt_use_bw", np.zeros(n, dtype=np.uint8))
        add("bbr_lt_bw_bps", np.zeros(n, dtype=np.uint64))
        add("pacing_gain", np.full(n, 1.0))
        add("cwnd_gain", np.full(n, 2.0))
        add("snd_wnd_bytes", np.full(n, 3 << 20, dtype=np.uint32))
        add("rto_us", np.full(n, 200_000 + rtt_us, dtype=np.uint32))
        add("backoff", np.zeros(n, dtype=np.uint8))
        add("bytes_sent", received + (received // MSS // 100) * MSS)
        add("bytes_retrans", (received // MSS // 100) * MSS)
        add("data_segs_out", (received // MSS + 1).astype(np.uint32))
        add("busy_us", (active * 1e6).astype(np.uint64))
        add("rwnd_limited_us", np.zeros(n, dtype=np.uint64))
        add("sndbuf_limited_us", np.zeros(n, dtype=np.uint64))
        add("send_q_bytes", np.full(n, 4 << 20, dtype=np.uint32))
        add("recv_q_bytes", np.zeros(n, dtype=np.uint32))
        add("receiver_cwnd", np.full(n, 10, dtype=np.uint32))
        add("receiver_ssthresh", np.full(n, 0x7FFFFFFF, dtype=np.uint32))
        add("receiver_ca_state", np.zeros(n, dtype=np.uint8))
        add("receiver_srtt_us", np.full(n, rtt_us, dtype=np.uint32))
        add("receiver_rto_us", np.full(n, 200_000 + rtt_us, dtype=np.uint32))
        add("receiver_backoff", np.zeros(n, dtype=np.uint8))
        add("receiver_retrans_segs", np.zeros(n, dtype=np.uint64))
        total = int(received[-1]) if n else 0
        segs = total // MSS + 1
        retrans = segs // 100
        timeouts = i % 2
        flow_out.append(
            {
                "name": f["name"],
                "src": f["src"],
                "dst": f["dst"],
                "cc": f["cc"],
                "start_ns": start,
                "end_ns": stop,
                "bytes_sent": total + retrans * MSS,
                "bytes_retrans": retrans * MSS,
                "bytes_acked": total,
                "bytes_received": total,
                "data_segs_out": segs,
                "retrans_segs": retrans,
                "timeouts": timeouts,
                "rtt_us": {
                    "count": segs,
                    "min": rtt_us,
                    "mean": rtt_us + 1,
                    "p50": rtt_us,
                    "p90": rtt_us + 2,
                    "p99": rtt_us + 5,
                    "max": rtt_us + 9,
                    "relative_error": 1 / 128,
                },
                # busy for the flow's lifetime, a quarter of it window-limited
                "chrono": {
                    "busy_us": (stop - start) // 1000,
                    "rwnd_limited_us": (stop - start) // 4000,
                    "sndbuf_limited_us": 0,
                },
                "ecn": _ecn(f),
                "counters": {
                    "TcpOutSegs": segs,
                    "TcpRetransSegs": retrans,
                    "TcpExtTCPTimeouts": timeouts,
                    "TcpExtTCPSackRecovery": retrans // 2,
                },
            }
        )
    hosts = []
    for index, node in enumerate(nodes):
        if node.get("kind", "host") != "host":
            continue
        sums: dict[str, int] = {
            "TcpOutSegs": 0,
            "TcpRetransSegs": 0,
            "TcpExtTCPTimeouts": 0,
            "TcpExtTCPSackRecovery": 0,
        }
        for f, fo in zip(flows, flow_out, strict=True):
            if f["src"] == index:
                for k, v in fo["counters"].items():
                    sums[k] += v
        hosts.append({"name": node["name"], "counters": sums, "nic": None, "cpu": None})

    link_out = []
    q_t, q_link, q_pk, q_b, q_d = [], [], [], [], []
    for li, link in enumerate(links):
        q = link["queue"]
        limit = q.get("limit_packets", q.get("limit_bytes", 1500) // 1500)
        drops = (li + 1) * 3 if li % 2 == 0 else 0
        link_out.append(
            {
                "name": link["name"],
                "from": link["from"],
                "to": link["to"],
                "qdisc": q["kind"],
                "sent_bytes": 1000 * (li + 1),
                "sent_packets": 10 * (li + 1),
                "drops": drops,
                "overlimits": 0,
                "requeues": 0,
                "backlog_bytes": 0,
                "backlog_packets": 0,
                "max_backlog_packets": min(limit, 5),
                "loss_drops": li,
                "reorder_events": 0,
                "xstats": {},
                "child": _child(q),
                "edt": [
                    {"rate_bps": e["rate_bps"], "drops": 0, "stamped": 0, "passed": 0, "ce_marks": 0}
                    for e in link.get("edt", [])
                ],
            }
        )
        n = len(t)
        q_t.append(t)
        q_link.append(np.full(n, li, dtype=np.uint32))
        q_pk.append((np.arange(n) % 5).astype(np.uint32))
        q_b.append((np.arange(n) % 5 * 1514).astype(np.uint64))
        q_d.append(np.minimum(np.arange(n), drops).astype(np.uint64))

    def cat(parts: list[np.ndarray], dtype: str) -> np.ndarray:
        return np.concatenate(parts).astype(dtype) if parts else np.array([], dtype=dtype)

    timeseries = {name: np.concatenate(parts) for name, parts in columns.items()}
    if not timeseries:  # no flow sampled (a broadcast's only): empty columns, typed
        timeseries = {name: np.array([], dtype=dtype) for name, dtype in TIMESERIES_DTYPES.items()}
    queue_ts = {
        "t_ns": cat(q_t, "uint64"),
        "link": cat(q_link, "uint32"),
        "backlog_packets": cat(q_pk, "uint32"),
        "backlog_bytes": cat(q_b, "uint64"),
        "drops": cat(q_d, "uint64"),
    }
    sent = sum(fo["data_segs_out"] for fo in flow_out)
    return {
        "version": "0.1.0-fake",
        "events": 1000 * len(t),
        "packets": 2 * sent,
        "host_packets": sent,
        "flows": flow_out,
        "hosts": hosts,
        "links": link_out,
        "invariant": {
            "ok": True,
            "accounting_ok": True,
            "data_packets_sent": sent,
            "data_packets_received": sent,
            "dropped": dict.fromkeys(INVARIANT["dropped"].spec, 0),
            "in_flight": 0,
            "message": "",
            "rtt_floor": {"ok": True, "message": ""},
        },
        "warnings": [],
        "timeseries": timeseries,
        "queue_timeseries": queue_ts,
        # hosts with a CPU or NIC model only: none in the fake's scenarios
        "host_series": {name: np.array([], dtype=dtype) for name, dtype in HOST_DTYPES.items()},
        "names": {"ca_state": CA_STATES, "cc_mode": {"bbr": ["", "STARTUP", "DRAIN", "PROBE_BW", "PROBE_RTT"]}},
        "apps": _apps(config, rtt_us, share_bps, flow_out),
        # no packet capture: the fake has no packets (a run asking for one fails in the runner)
        "capture": None,
    }


# -- applications ----------------------------------------------------------------------------
# One fake per app kind of ARCH9.md, with the summary keys and table columns the engine
# reports. The numbers follow the same crude model as above (each connection gets
# ``share_bps``; every RTT is ``rtt_ns``), stepped at the sample interval: shapes, not a
# simulation.

MAX_FAKE_ROWS = 2000


def _latency_ms(values_ns: Any) -> dict[str, Any]:
    """stats.rs latency_summary_ms: nearest-rank percentiles in ms (None without samples)."""
    v = np.sort(np.asarray(values_ns, dtype=np.uint64))
    n = len(v)

    def pct(q: float) -> float | None:
        if n == 0:
            return None
        rank = min(max(int(np.ceil(q * n)), 1), n)
        return float(v[rank - 1]) / 1e6

    return {
        "count": n,
        "p50": pct(0.5),
        "p90": pct(0.9),
        "p99": pct(0.99),
        "p99.9": pct(0.999),
        "max": float(v[-1]) / 1e6 if n else None,
        "mean": float(v.astype(np.float64).mean()) / 1e6 if n else None,
    }


def _fake_rr(name: str, flows: list[int], spec: dict, duration: int, rtt_ns: int, share_bps: float) -> dict:
    req, resp = spec.get("request_bytes", 1), spec.get("response_bytes", 1)
    base = rtt_ns + int((req + resp + 2 * 66) * 8 / share_bps * 1e9)
    f_col, s_col, l_col = [], [], []
    tps = 0.0
    for flow in flows:
        n = max(1, min(MAX_FAKE_ROWS, duration // max(1, base)))
        lat = base + (np.arange(n) % 7) * (rtt_ns // 50)
        start = np.arange(n, dtype=np.uint64) * np.uint64(duration // n)
        f_col.append(np.full(n, flow, dtype=np.uint32))
        s_col.append(start)
        l_col.append(lat.astype(np.uint64))
        tps += n / (duration / 1e9)
    latency = np.concatenate(l_col)
    return {
        "name": name,
        "kind": "rr",
        "summary": {
            "transactions": int(len(latency)),
            "transactions_per_sec": tps,
            "connections": len(flows),
            "request_bytes": req,
            "response_bytes": resp,
            "latency_ms": _latency_ms(latency),
        },
        "tables": {
            "requests": {
                "flow": np.concatenate(f_col),
                "start_ns": np.concatenate(s_col),
                "latency_ns": latency,
            }
        },
    }


def _fake_hls(
    name: str, flows: list[int], spec: dict, duration: int, interval: int, rtt_ns: int, share_bps: float
) -> dict:
    profiles = sorted(
        spec.get("profiles") or [{"name": "HD", "bitrate_bps": 3_000_000}, {"name": "low", "bitrate_bps": 800_000}],
        key=lambda p: p["bitrate_bps"],
    )
    segment = spec.get("segment_ns", 4_000_000_000)
    startup = spec.get("startup_buffer_ns", segment)
    max_buffer = spec.get("max_buffer_ns", 30_000_000_000)
    estimate = float(spec.get("start_estimate_bps", 500_000))
    seg_rows: dict[str, list] = {
        k: []
        for k in ("index", "profile", "bitrate_bps", "bytes", "request_ns", "latency_ns", "estimate_bps", "buffer_ns")
    }
    series: dict[str, list] = {"t_ns": [], "buffer_ns": [], "playing": [], "profile": []}
    buffer = 0
    playing = started = False
    startup_delay = None
    stalls = stall_ns = switches = 0
    on_profile = {p["name"]: 0.0 for p in profiles}
    fetch = None  # (profile, bytes left, request time, bytes)
    current = profiles[0]
    t = 0
    while t < duration:
        if fetch is None and buffer + segment <= max_buffer:
            fitting = [p for p in profiles if p["bitrate_bps"] <= 0.7 * estimate] or profiles[:1]
            choice = fitting[-1]
            if choice is not current and seg_rows["index"]:
                switches += 1
            current = choice
            size = current["bitrate_bps"] * segment // 8_000_000_000
            fetch = [current, float(size), t, size]
        if fetch is not None:
            fetch[1] -= share_bps * interval / 8e9
            if fetch[1] <= 0:
                latency = t + interval - fetch[2] + rtt_ns
                estimate = 0.5 * estimate + 0.5 * fetch[3] * 8 / (latency / 1e9)
                buffer += segment
                for k, v in zip(
                    seg_rows,
                    (
                        len(seg_rows["index"]),
                        fetch[0]["name"],
                        fetch[0]["bitrate_bps"],
                        fetch[3],
                        fetch[2],
                        latency,
                        int(estimate),
                        buffer,
                    ),
                    strict=True,
                ):
                    seg_rows[k].append(v)
                on_profile[fetch[0]["name"]] += segment / 1e9
                fetch = None
        if playing:
            buffer -= interval
            if buffer <= 0:
                buffer, playing = 0, False
                stalls += 1
        elif buffer >= startup:
            playing = True
            if not started:
                started, startup_delay = True, (t + interval) / 1e9
        elif started:
            stall_ns += interval
        t += interval
        series["t_ns"].append(t)
        series["buffer_ns"].append(buffer)
        series["playing"].append(playing)
        series["profile"].append(current["name"])
    return {
        "name": name,
        "kind": "hls",
        "summary": {
            "startup_delay_s": startup_delay,
            "stalls": stalls,
            "stall_s": stall_ns / 1e9,
            "switches": switches,
            "time_on_profile_s": on_profile,
            "segments": len(seg_rows["index"]),
            "profile_names": [p["name"] for p in profiles],
            "latency_ms": _latency_ms(seg_rows["latency_ns"]),
        },
        "tables": {
            "segments": {
                "index": np.array(seg_rows["index"], dtype=np.uint64),
                "profile": list(seg_rows["profile"]),
                "bitrate_bps": np.array(seg_rows["bitrate_bps"], dtype=np.uint64),
                "bytes": np.array(seg_rows["bytes"], dtype=np.uint64),
                "request_ns": np.array(seg_rows["request_ns"], dtype=np.uint64),
                "latency_ns": np.array(seg_rows["latency_ns"], dtype=np.uint64),
                "estimate_bps": np.array(seg_rows["estimate_bps"], dtype=np.uint64),
                "buffer_ns": np.array(seg_rows["buffer_ns"], dtype=np.uint64),
            },
            "series": {
                "t_ns": np.array(series["t_ns"], dtype=np.uint64),
                "buffer_ns": np.array(series["buffer_ns"], dtype=np.uint64),
                "playing": np.array(series["playing"], dtype=bool),
                "profile": list(series["profile"]),
            },
        },
    }


def _fake_nfs(
    name: str, flows: list[int], spec: dict, duration: int, interval: int, rtt_ns: int, share_bps: float
) -> dict:
    rsize = spec.get("rsize_bytes", 1 << 20)
    readahead = spec.get("readahead_bytes", 16 << 20)
    bitrate = spec.get("bitrate_bps", 80_000_000)
    startup = spec.get("startup_buffer_ns", 2_000_000_000)
    max_buffer = spec.get("max_buffer_ns", 10_000_000_000)
    n = len(flows)
    read_bps = share_bps * n
    series: dict[str, list] = {"t_ns": [], "buffer_ns": [], "playing": [], "inflight_bytes": []}
    buffer = 0.0
    playing = started = False
    startup_delay = None
    stalls = stall_ns = 0
    t = 0
    while t < duration:
        if buffer < max_buffer:
            buffer = min(float(max_buffer), buffer + read_bps * interval / bitrate)
        if playing:
            buffer -= interval
            if buffer <= 0:
                buffer, playing = 0.0, False
                stalls += 1
        elif buffer >= startup:
            playing = True
            if not started:
                started, startup_delay = True, (t + interval) / 1e9
        elif started:
            stall_ns += interval
        t += interval
        series["t_ns"].append(t)
        series["buffer_ns"].append(int(buffer))
        series["playing"].append(playing)
        series["inflight_bytes"].append(readahead if buffer < max_buffer else 0)
    reads = max(1, min(MAX_FAKE_ROWS, int(read_bps * duration / 8e9 / rsize)))
    k = np.arange(reads)
    latency = (rtt_ns + rsize * 8 / share_bps * 1e9 + (k % 5) * (rtt_ns // 20)).astype(np.uint64)
    flow_col = np.array(flows, dtype=np.uint32)[k % n]
    per_conn = np.bincount(k % n, minlength=n) * rsize
    return {
        "name": name,
        "kind": "nfs_stream",
        "summary": {
            "startup_delay_s": startup_delay,
            "stalls": stalls,
            "stall_s": stall_ns / 1e9,
            "reads": reads,
            "bytes_read": int(per_conn.sum()),
            "share_of_bytes": [float(b) / float(per_conn.sum()) for b in per_conn],
            "min_buffer_s": min(series["buffer_ns"][int(np.argmax(series["playing"])) :]) / 1e9
            if any(series["playing"])
            else None,
            "latency_ms": _latency_ms(latency),
        },
        "tables": {
            "requests": {
                "flow": flow_col,
                "offset_bytes": (k * rsize).astype(np.uint64),
                "bytes": np.full(reads, rsize, dtype=np.uint64),
                "start_ns": (k * (duration // reads)).astype(np.uint64),
                "latency_ns": latency,
            },
            "series": {
                "t_ns": np.array(series["t_ns"], dtype=np.uint64),
                "buffer_ns": np.array(series["buffer_ns"], dtype=np.uint64),
                "playing": np.array(series["playing"], dtype=bool),
                "inflight_bytes": np.array(series["inflight_bytes"], dtype=np.uint64),
            },
        },
    }


def _fake_batch(
    name: str, flows: list[int], spec: dict, duration: int, interval: int, rtt_ns: int, share_bps: float
) -> dict:
    every = spec.get("interval_ns", 1_000_000_000)
    timeout = spec.get("timeout_ns", 60_000_000_000)
    retry = spec.get("retry_min_ns", 1_000_000_000)
    body = spec.get("body_bytes", 54_766)
    batches = max(1, min(MAX_FAKE_ROWS, duration // every))
    ok_latency = int(2 * rtt_ns + body * 8 / share_bps * 1e9)
    rows: dict[str, list] = {k: [] for k in ("flow", "batch", "attempt", "start_ns", "latency_ns", "outcome")}
    timeouts = 0
    for b in range(batches):
        start = b * every
        attempts = [("timeout", timeout)] if b % 50 == 7 and start + timeout + retry < duration else []
        attempts.append(("ok", ok_latency + (b % 3) * (rtt_ns // 10)))
        for a, (outcome, latency) in enumerate(attempts, start=1):  # attempts count from 1
            rows["flow"].append(flows[b % len(flows)])
            rows["batch"].append(b)
            rows["attempt"].append(a)
            rows["start_ns"].append(start)
            rows["latency_ns"].append(latency)
            rows["outcome"].append(outcome)
            timeouts += outcome == "timeout"
            start += latency + retry
    t = np.arange(interval, duration + 1, interval, dtype=np.uint64)
    pending = np.zeros(len(t), dtype=np.uint64)
    for s, lat, outcome in zip(rows["start_ns"], rows["latency_ns"], rows["outcome"], strict=True):
        if outcome == "timeout":
            pending[(t >= s) & (t < s + lat)] += np.uint64(lat // every)
    ok = [lat for lat, o in zip(rows["latency_ns"], rows["outcome"], strict=True) if o == "ok"]
    return {
        "name": name,
        "kind": "batch_writer",
        "summary": {
            "batches": batches,
            "sent": batches,
            "timeouts": timeouts,
            "retries": timeouts,
            "dropped": 0,
            "max_pending": int(pending.max()) if len(pending) else 0,
            "latency_ms": _latency_ms(ok),
        },
        "tables": {
            "requests": {
                "flow": np.array(rows["flow"], dtype=np.uint32),
                "batch": np.array(rows["batch"], dtype=np.uint64),
                "attempt": np.array(rows["attempt"], dtype=np.uint32),
                "start_ns": np.array(rows["start_ns"], dtype=np.uint64),
                "latency_ns": np.array(rows["latency_ns"], dtype=np.uint64),
                "outcome": list(rows["outcome"]),
            },
            "series": {"t_ns": t, "pending": pending},
        },
    }


def _fake_broadcast(name: str, flows: list[int], spec: dict, duration: int, rtt_ns: int, flow_out: list[dict]) -> dict:
    message = spec.get("message_bytes", 1000)
    window = spec.get("window_ns", 10_000_000)
    every = spec.get("interval_ns", 1_000_000_000)
    first = spec.get("first_burst_ns", 2_000_000_000)
    starts = np.arange(first, max(first, duration - window - rtt_ns), every, dtype=np.uint64)[:MAX_FAKE_ROWS]
    if spec.get("bursts") is not None:
        starts = starts[: spec["bursts"]]
    n = len(starts)
    completion = (window + rtt_ns + (np.arange(n) % 4) * (rtt_ns // 4)).astype(np.uint64)
    mine = [flow_out[f] for f in flows if f < len(flow_out)]
    retrans = sum(f["retrans_segs"] for f in mine)
    segs = sum(f["data_segs_out"] for f in mine)
    timeouts = sum(f["timeouts"] for f in mine)
    per_burst_timeouts = np.zeros(n, dtype=np.uint64)
    per_burst_retrans = np.zeros(n, dtype=np.uint64)
    if n:
        per_burst_timeouts[np.arange(timeouts) % n] += np.uint64(1)
        per_burst_retrans[np.arange(retrans) % n] += np.uint64(1)
    return {
        "name": name,
        "kind": "broadcast",
        "summary": {
            "bursts": n,
            "messages": n * len(flows),
            "bytes_delivered": n * len(flows) * message,
            "completion_ms": _latency_ms(completion),
            "retrans_segs": retrans,
            "data_segs_out": segs,
            "retrans_rate": retrans / segs if segs else 0.0,
            "tcp_timeouts": timeouts,
            "curr_estab": len(flows),
            "timeouts_per_estab": timeouts / len(flows) if flows else 0.0,
        },
        "tables": {
            "bursts": {
                "burst": np.arange(n, dtype=np.uint32),
                "start_ns": starts,
                "completion_ns": completion,
                "complete": np.ones(n, dtype=bool),
                "bytes": np.full(n, len(flows) * message, dtype=np.uint64),
                "messages": np.full(n, len(flows), dtype=np.uint32),
                "retrans_segs": per_burst_retrans,
                "tcp_timeouts": per_burst_timeouts,
            }
        },
    }


def _apps(config: dict[str, Any], rtt_us: int, share_bps: float, flow_out: list[dict]) -> list[dict[str, Any]]:
    duration = config["duration_ns"]
    interval = config.get("sample_interval_ns", 100_000_000)
    rtt_ns = rtt_us * 1000
    out = []
    for app in config.get("apps") or []:
        spec, flows, name = app["spec"], list(app["flows"]), app["name"]
        kind = spec["kind"]
        if kind == "rr":
            out.append(_fake_rr(name, flows, spec, duration, rtt_ns, share_bps))
        elif kind == "hls":
            out.append(_fake_hls(name, flows, spec, duration, interval, rtt_ns, share_bps))
        elif kind == "nfs_stream":
            out.append(_fake_nfs(name, flows, spec, duration, interval, rtt_ns, share_bps))
        elif kind == "batch_writer":
            out.append(_fake_batch(name, flows, spec, duration, interval, rtt_ns, share_bps))
        elif kind == "broadcast":
            out.append(_fake_broadcast(name, flows, spec, duration, rtt_ns, flow_out))
        else:
            raise ValueError(f"apps: unknown kind {kind!r}")
    return out

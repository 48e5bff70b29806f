"""A test double for ``tcplab._core``: structurally valid output, synthetic numbers.

It follows the engine contract (the keys, column names, dtypes and units of what
``tcplab._core.run`` returns) so the Python side can be tested without the Rust engine. The
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

MSS = 1448
CA_STATES = ["Open", "Disorder", "CWR", "Recovery", "Loss"]


def run(config_json: str, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Module-level entry point with the engine's signature."""
    return FakeCore().run(config_json, progress)


def defaults() -> dict[str, Any]:
    """The engine's ``defaults()``: here Python's own copy (the real one is tested against it)."""
    from tcplab.scenario import DEFAULT_PFIFO_LIMIT, LINUX_CC_DEFAULTS, LINUX_TCP_DEFAULTS

    return {
        "tcp": dict(LINUX_TCP_DEFAULTS),
        "cc_params": dict(LINUX_CC_DEFAULTS),
        "queue": {"kind": "pfifo", "limit_packets": DEFAULT_PFIFO_LIMIT},
        "overhead_bytes": 14,
        "sample_interval_ns": 100_000_000,
    }


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
    return {
        "qdisc": child["kind"],
        "sent_bytes": 0,
        "sent_packets": 0,
        "drops": 0,
        "overlimits": 0,
        "requeues": 0,
        "backlog_bytes": 0,
        "backlog_packets": 0,
        "max_backlog_packets": 0,
        "xstats": {},
    }


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

    def add(name: str, values: np.ndarray) -> None:
        columns.setdefault(name, []).append(values)

    flow_out = []
    for i, f in enumerate(flows):
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
        add("pacing_gain", np.full(n, 1.0))
        add("cwnd_gain", np.full(n, 2.0))
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
                    {"rate_bps": e["rate_bps"], "drops": 0, "stamped": 0, "passed": 0}
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
    if not timeseries:
        timeseries = {name: np.array([], dtype=np.uint64) for name in ("t_ns", "flow")}
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
            "dropped": {"queue": 0, "loss": 0, "drop_list": 0, "no_route": 0, "nic": 0},
            "in_flight": 0,
            "message": "",
            "rtt_floor": {"ok": True, "message": ""},
        },
        "warnings": [],
        "timeseries": timeseries,
        "queue_timeseries": queue_ts,
        # hosts with a CPU or NIC model only: none in the fake's scenarios
        "host_series": {
            "t_ns": np.array([], dtype="uint64"),
            "host": np.array([], dtype="uint32"),
            "cpu_on": np.array([], dtype="uint8"),
            "rx_ring_used": np.array([], dtype="uint32"),
            "rx_dropped": np.array([], dtype="uint64"),
            "allowance_queued": np.array([], dtype="uint32"),
        },
        "names": {"ca_state": CA_STATES, "cc_mode": {"bbr": ["", "STARTUP", "DRAIN", "PROBE_BW", "PROBE_RTT"]}},
    }

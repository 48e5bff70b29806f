"""The window ``tcplab validate`` measures a flow over: from its first byte, the same length
in both worlds.

The model. A kernel run's connection opens when its traffic agent connects, and on a busy
machine that can be seconds after the run's start (the agents are Python processes started
just before t0); the simulator's opens at the flow's start. Bytes received divided by the
whole run then understate the late world's goodput by the share it missed, and percentiles
from a fixed time since the run's start take in its slow start. So each world is measured
from its own first byte, over a window of the same length:

* **first byte** (``first_byte_s``): the time of the flow's first time-series sample at
  which the receiver has data (``bytes_received`` > 0), by the same rule in both worlds
  (resolution: one ``sample_interval``; the byte arrived in the interval before);
* **warm-up** (``warmup_s``): max(:data:`STEADY_MIN_S`, :data:`STEADY_FRACTION` x the run's
  duration) after the first byte: slow start and BBR's STARTUP are over;
* **end** of each world: the flow's end (its stop, or all of a byte count acknowledged:
  ``Result.flows``' ``end_s``) or the world's last sample with a receiver count, the earlier;
* **length** (``length_s``): the shorter of the two worlds' ``end - first byte - warm-up``,
  so the window is ``[first byte + warm-up, first byte + warm-up + length]`` in each world,
  the same length in both (``steady``). When that is empty (a short run, a transfer done in
  its slow start), the window is ``[first byte, first byte + length]`` with the length the
  shorter of the two ``end - first byte`` (``steady`` false: the RTT percentiles are n/a);
* **goodput over a window** (:func:`window_goodput_bps`): ``(B(to) - B(from)) x 8 /
  (to - from)``, B the cumulative ``bytes_received`` interpolated linearly between the
  samples that have a value (a kernel sampler's gap is NaN, never a 0).

**Late start** (:func:`late_start_limit_s`): the kernel's first byte is late when it comes
after ``start + 2 x base RTT + 2 x sample_interval``: the handshake (SYN and SYN-ACK, one base
RTT) and the first data segment's way to the receiver (half a base RTT from a client that
sends; a server that sends starts after the handshake's last ACK, one more half) take at most
2 base RTTs (the path's propagation delays, :func:`tcplab.results.paths.flow_path`); the
sample that shows the byte comes up to one interval after it, and a kernel sample starts up to
one interval late (later ones are skipped). The window above already measures a late world
fairly; the flag says the machine was slow to start the traffic.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from tcplab.results import Result

__all__ = [
    "FlowWindow",
    "STEADY_MIN_S",
    "STEADY_FRACTION",
    "first_byte_s",
    "received_series",
    "flow_windows",
    "window_goodput_bps",
    "late_start_limit_s",
    "warmup_s",
]

#: The steady part of a flow starts this long after its first byte, at least ...
STEADY_MIN_S = 2.0
#: ... or this share of the run, whichever is later (slow start and BBR's STARTUP are over).
STEADY_FRACTION = 0.20


@dataclass(frozen=True)
class FlowWindow:
    """One flow's window in both worlds (seconds since each run's start)."""

    flow: str
    #: per world ("sim", "kernel"): the first byte's sample time
    first_byte_s: dict[str, float]
    #: per world: (from_s, to_s), the same length in both
    span_s: dict[str, tuple[float, float]]
    warmup_s: float
    length_s: float
    #: the window starts after the warm-up (False: from the first byte; no RTT percentiles)
    steady: bool
    #: the kernel's first byte came after this (``late_start_limit_s``); None: path unknown
    late_limit_s: float | None = None
    #: the kernel's connection established (its agent's record), when known
    kernel_opened_s: float | None = None

    @property
    def late_start(self) -> bool:
        k = self.first_byte_s.get("kernel")
        return self.late_limit_s is not None and k is not None and k > self.late_limit_s + 1e-9

    def to_json(self) -> dict[str, Any]:
        return {
            "first_byte_s": dict(self.first_byte_s),
            "sim": {"from_s": self.span_s["sim"][0], "to_s": self.span_s["sim"][1]},
            "kernel": {"from_s": self.span_s["kernel"][0], "to_s": self.span_s["kernel"][1]},
            "warmup_s": self.warmup_s if self.steady else 0.0,
            "length_s": self.length_s,
            "steady": self.steady,
            "late_start": self.late_start,
            "late_start_limit_s": self.late_limit_s,
            "kernel_opened_s": self.kernel_opened_s,
        }

    def text(self) -> str:
        """``a-b-0: sim 2.2-9.9 s, kernel 4.5-12.2 s (first bytes 0.2 s, 2.5 s)``."""
        s, k = self.span_s["sim"], self.span_s["kernel"]
        return (
            f"{self.flow}: sim {s[0]:.2f}-{s[1]:.2f} s, kernel {k[0]:.2f}-{k[1]:.2f} s "
            f"(first bytes at {self.first_byte_s['sim']:.2f} s and {self.first_byte_s['kernel']:.2f} s)"
        )


def warmup_s(result: Result) -> float:
    """max(:data:`STEADY_MIN_S`, :data:`STEADY_FRACTION` x the run's duration)."""
    return max(STEADY_MIN_S, STEADY_FRACTION * result.config["duration_ns"] / 1e9)


def received_series(result: Result, flow: str) -> tuple[np.ndarray, np.ndarray]:
    """(t_s, bytes_received) of the flow's samples that have a receiver count, in time order."""
    ts = result.timeseries
    if ts is None or ts.empty or "bytes_received" not in ts:
        return np.array([]), np.array([])
    rows = ts[ts["flow_name"] == flow]
    t = rows["t_s"].to_numpy(dtype=np.float64)
    b = rows["bytes_received"].to_numpy(dtype=np.float64)
    have = np.isfinite(b) & np.isfinite(t)
    order = np.argsort(t[have], kind="stable")
    return t[have][order], b[have][order]


def first_byte_s(result: Result, flow: str) -> float | None:
    """The first sample time at which the flow's receiver has data (module doc)."""
    t, b = received_series(result, flow)
    got = np.flatnonzero(b > 0)
    return float(t[got[0]]) if len(got) else None


def window_goodput_bps(result: Result, flow: str, span_s: tuple[float, float]) -> float | None:
    """Goodput over ``span_s``: bytes received in it (interpolated between samples) x 8 / its
    length; None when the series does not cover it."""
    t, b = received_series(result, flow)
    a, z = span_s
    if len(t) < 2 or z <= a or a < t[0] - 1e-9 or z > t[-1] + 1e-9:
        return None
    got = float(np.interp(z, t, b) - np.interp(a, t, b))
    return got * 8.0 / (z - a)


def late_start_limit_s(config: Mapping[str, Any], flow: str) -> float | None:
    """When the flow's first byte should have come by (module doc); None: no route."""
    from tcplab.results.paths import flow_path

    cfg = next((f for f in config.get("flows", []) if str(f["name"]) == flow), None)
    if cfg is None:
        return None
    path = flow_path(config, cfg)
    if path is None:
        return None
    start_s = int(cfg.get("start_ns") or 0) / 1e9
    return start_s + 2.0 * path.base_rtt_s + 2.0 * int(config["sample_interval_ns"]) / 1e9


def _end_s(result: Result, flow: str) -> float | None:
    """The flow's end in this world: its end_s, or its last sample with a receiver count."""
    t, _ = received_series(result, flow)
    if not len(t):
        return None
    end = float(t[-1])
    flows = result.flows
    if flows is not None and not flows.empty and "end_s" in flows:
        rows = flows[flows["name"] == flow]
        if len(rows):
            end = min(end, float(rows["end_s"].iloc[0]))
    return end


def _opened_s(kern: Result, flow: str) -> float | None:
    """The kernel connection's establishment from its agent's record (client side)."""
    m = getattr(kern, "measurements", None)
    agents = getattr(m, "agents", None)
    if not isinstance(agents, Mapping):
        return None
    names = [str(f["name"]) for f in kern.config.get("flows", [])]
    if flow not in names:
        return None
    index = names.index(flow)
    for doc in agents.values():
        for ep in doc.get("endpoints", []):
            if int(ep.get("flow", -1)) == index and ep.get("role") == "client" and ep.get("established_ns") is not None:
                return int(ep["established_ns"]) / 1e9
    return None


def flow_windows(sim: Result, kern: Result) -> dict[str, FlowWindow]:
    """Per flow both worlds have data for: its window (module doc)."""
    out: dict[str, FlowWindow] = {}
    warm = warmup_s(sim)
    for cfg in sim.config.get("flows", []):
        name = str(cfg["name"])
        first = {"sim": first_byte_s(sim, name), "kernel": first_byte_s(kern, name)}
        ends = {"sim": _end_s(sim, name), "kernel": _end_s(kern, name)}
        if any(v is None for v in (*first.values(), *ends.values())):
            continue
        room = {w: ends[w] - first[w] for w in first}  # type: ignore[operator]
        length = min(room.values()) - warm
        steady = length > 0
        if not steady:
            length = min(room.values())
        if length <= 0:
            continue
        lead = warm if steady else 0.0
        span = {w: (first[w] + lead, first[w] + lead + length) for w in first}  # type: ignore[operator]
        out[name] = FlowWindow(
            flow=name,
            first_byte_s=first,  # type: ignore[arg-type]
            span_s=span,
            warmup_s=warm,
            length_s=length,
            steady=steady,
            late_limit_s=late_start_limit_s(kern.config, name),
            kernel_opened_s=_opened_s(kern, name),
        )
    return out

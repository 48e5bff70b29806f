"""Options of a kernel-mode run (what ``tcplab kernel run`` takes besides the scenario)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["KernelOptions"]


@dataclass(frozen=True)
class KernelOptions:
    """How a kernel run is built and bounded.

    ``prefix``: every namespace is ``{prefix}-{node}`` or ``{prefix}-w{K}``; tests use their own.
    ``timeout_s``: the whole run (setup, traffic, collection) is killed and cleaned past it;
    ``None`` = duration + 60 s. ``allow_busy``: record the quiet check, do not invalidate on
    it (development on a shared machine). ``delayline_cpu``/``agent_cpu``: where the delay
    lines and the traffic run (apart, so the emulated path does not wait for the senders).
    ``tbf_burst_us``: the router shapers' bucket, in microseconds of the link rate (at least
    two full frames). ``quiet_seconds``: the quiet check's window. ``delayline_rt_priority``:
    the delay lines run SCHED_FIFO at this priority (0: normal scheduling), so a busy
    machine does not stall the emulated path.
    """

    prefix: str = "tcplab"
    timeout_s: float | None = None
    allow_busy: bool = False
    delayline_cpu: int = 1
    agent_cpu: int = 0
    tbf_burst_us: int = 100
    quiet_seconds: float = 1.0
    delayline_rt_priority: int = 10

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

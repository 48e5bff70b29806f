"""Options of a kernel-mode run (what ``tcplab kernel run`` takes besides the scenario)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["KernelOptions"]


@dataclass(frozen=True)
class KernelOptions:
    """How a kernel run is built and bounded.

    ``prefix``: 1 to 16 of a-z and 0-9; every namespace is ``{prefix}-{node}`` or
    ``{prefix}:w{K}`` (:mod:`tcplab.kernel.names`); tests use their own.
    ``timeout_s``: the whole run (setup, traffic, collection) is killed and cleaned past it;
    ``None`` = duration + 60 s. ``allow_busy``: record the quiet check, do not invalidate on
    it (development on a shared machine). ``delayline_cpu``/``agent_cpu``: where the delay
    lines and the traffic run (apart, so the emulated path does not wait for the senders).
    ``tbf_burst_us``: the router shapers' bucket, in microseconds of the link rate (at least
    two full frames). ``quiet_seconds``: the quiet check's window. ``delay``: how a wire
    delays: ``"auto"`` netem where the kernel has it, else tcplab's delay line;
    ``"delayline"`` always the delay line; ``"netem"`` netem or refuse.
    """

    prefix: str = "tcplab"
    timeout_s: float | None = None
    allow_busy: bool = False
    delayline_cpu: int = 1
    agent_cpu: int = 0
    tbf_burst_us: int = 100
    quiet_seconds: float = 1.0
    delay: str = "auto"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

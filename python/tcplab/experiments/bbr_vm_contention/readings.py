"""What story 003's claims (the package) and its figures (:mod:`.figures`) both use: the
senders and paths the runs vary, the story's cap, and the threshold share below which a
sender's goodput counts as degraded.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "CCS",
    "CC_LABELS",
    "CC_OVERRIDES",
    "PATHS",
    "DEGRADED_FRACTION",
    "DEGRADED_PCT",
    "STORY_CAP_BPS",
    "threshold",
]

CCS = ("bbr", "patch", "cubic")
CC_LABELS = {"bbr": "BBR", "patch": "BBR + inflight-deficit patch", "cubic": "CUBIC"}
CC_OVERRIDES = {
    "bbr": ("flows.0.cc=bbr",),
    "patch": ("flows.0.cc=bbr", "flows.0.cc_params.bbr_vm_patch=true"),
    "cubic": ("flows.0.cc=cubic", "hosts.vm.sysctl.tcp_congestion_control=cubic"),
}
#: Path variants: label suffix -> (overrides, text).
PATHS = {
    "100m": ((), "100 Mbit/s, 20 ms RTT"),
    "1g": (("links.0.rate=1Gbit",), "1 Gbit/s, 20 ms RTT"),
    "rtt80": (("links.0.delay=40ms",), "100 Mbit/s, 80 ms RTT"),
    # the other reading of "10ms periodic timeslices" (full mode): 10 ms slices, every
    # 10 ms / share (the runs add the period; see the package's READINGS)
    "100m-slice": ((), "100 Mbit/s, 20 ms RTT, 10 ms slices"),
    "1g-slice": (("links.0.rate=1Gbit",), "1 Gbit/s, 20 ms RTT, 10 ms slices"),
}

#: A share at which the steady goodput is below this fraction of the same sender's goodput
#: at 100 % counts as degraded.
DEGRADED_FRACTION = 0.90
DEGRADED_PCT = round(DEGRADED_FRACTION * 100)
#: "capped at 10 Mbps": the published cap.
STORY_CAP_BPS = 10e6


def threshold(shares: list[int], bps: Mapping[int, float]) -> int | None:
    """The lowest share s such that every share >= s keeps DEGRADED_FRACTION of the 100 %
    goodput (None: not even the highest swept share below 100 % does)."""
    full = bps[100]
    ok = None
    for s in sorted(shares, reverse=True):
        if bps[s] >= DEGRADED_FRACTION * full:
            ok = s
        else:
            break
    return ok

"""What story 000's claims (the package) and its figures (:mod:`.explain`) both use: the
story's times and thresholds, and the words for what a run's numbers
(:mod:`.analysis`) show: the mechanism of a stuck window.
"""

from __future__ import annotations

from typing import Any

__all__ = ["LOSS_START_S", "CHECK_S", "STUCK_BPS", "mechanism"]

#: When the loss begins (scenario time): once the player's 30 s buffer has filled (it fills in
#: well under 60 s at 1 Gbit/s), as the story's healthy player whose buffer then collapsed.
LOSS_START_S = 60.0
#: The story's lesson: a check after 2 minutes.
CHECK_S = 120.0
#: "Stuck": a 10-second window below 1 % of the 100 Mbit/s the pod may use (the story: ~100 kbit/s).
STUCK_BPS = 1_000_000


def mechanism(d: dict[str, Any]) -> str:
    """What held the flow down in its slowest window, from the trace. ``not stuck``: at least
    1 Mbit/s. BBR's own model (``lt_bw`` when the long-term rate was in use for most of the
    window, else ``bw estimate``) when its estimate was within 2x of the goodput: BBR paces at
    its estimate, so an estimate that low is what limits it. Otherwise the estimate was high
    and the losses held the flow: ``RTO backoff`` when it spent >= 20 % of the window in the
    Loss state (RTO recovery), else ``loss recovery`` (fast retransmits, cwnd)."""
    if d.get("min_bps") is None:
        return "-"
    if d["min_bps"] >= STUCK_BPS:
        return "not stuck"
    if d["cc"] == "bbr" and d["bbr_bw_median_bps"] <= 2 * max(d["min_bps"], 1.0):
        return "lt_bw" if d["lt_use_fraction"] >= 0.5 else "bw estimate"
    if d["loss_state_fraction"] >= 0.2:
        return "RTO backoff"
    return "loss recovery"

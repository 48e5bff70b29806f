"""What story 000's claims (the package) and its figures (:mod:`.explain`) both use: the
story's times and thresholds, and the words for what a run's numbers
(:mod:`.analysis`) show: a player's episode of loss, the mechanism of a stuck window.
"""

from __future__ import annotations

from typing import Any

__all__ = ["LOSS_START_S", "EPISODE_END_S", "CHECK_S", "STUCK_BPS", "episode_text", "mechanism"]

#: When the loss begins (scenario time): once the player's 30 s buffer has filled (it fills in
#: well under 60 s at 1 Gbit/s), as the story's healthy player whose buffer then collapsed.
LOSS_START_S = 60.0
#: An episode of loss that ends: the same bursts from 60 s to 10 min, then a clean port.
EPISODE_END_S = 600.0
#: The story's lesson: a check after 2 minutes.
CHECK_S = 120.0
#: "Stuck": a 10-second window below 1 % of the 100 Mbit/s the pod may use (the story: ~100 kbit/s).
STUCK_BPS = 1_000_000


def episode_text(e: dict[str, Any]) -> str:
    """The player from the loss's start: buffer then, minimum after, the first stall."""
    if e.get("buffer_at_start_s") is None:
        return "run ended before the loss"
    if not e.get("playing_at_start"):
        return f"not playing when the loss began (buffer {e['buffer_at_start_s']:.3g} s)"
    text = f"buffer {e['buffer_at_start_s']:.3g} s at the loss's start, min {e['min_buffer_after_s']:.3g} s after"
    if e["first_stall_s"] is None:
        return text + ", no stall"
    n = len(e["stalls_s"])
    return (
        text + f", first stall {e['to_first_stall_s']:.3g} s after the start, {n} stall{'s' if n != 1 else ''} "
        f"(longest {max(e['stalls_s']):.3g} s)"
    )


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

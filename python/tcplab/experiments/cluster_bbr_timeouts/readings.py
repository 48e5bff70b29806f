"""What story 000's claims (the package) and its figures (:mod:`.explain`) both use: the
story's times and thresholds, and the words for what a run's numbers
(:mod:`.analysis`) show: the mechanism of a stuck window, of the player's stalls.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["LOSS_START_S", "CHECK_S", "STUCK_BPS", "mechanism", "stall_mechanism"]

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


def stall_mechanism(stream: Mapping[str, Any]) -> str:
    """What the traces show of the stalls under each hypothesis (marin CUBIC, every seed):
    their lengths, the stream's delivery during the loss, and during the first stall the
    data sender's (nezuko's) share of time in RTO recovery and its largest backoff."""
    out = []
    for loss, name in (("bursts", "Under the bursts"), ("random", "Under independent loss")):
        rows = stream[loss]["cubic"]
        lengths = sorted(v for x in rows for v in x["episode"].get("stalls_s", []))
        firsts = [x["stall"] for x in rows if x["stall"]["stalled"]]
        rates = [x["rate_bps"] for x in rows if x["rate_bps"] is not None]
        if not lengths:
            out.append(f"{name} the player never stalled.")
            continue
        text = (
            f"{name}: {len(lengths)} stalls of {lengths[0]:.3g}-{lengths[-1]:.3g} s over {len(rows)} seeds; the stream "
            f"delivered {min(rates) / 1e6:.3g}-{max(rates) / 1e6:.3g} Mbit/s during the loss (it plays 80)"
        )
        if firsts:
            lf = [f["sender_loss_fraction"] for f in firsts]
            bo = max(f["sender_backoff_max"] for f in firsts)
            text += (
                f"; during the first stalls nezuko's connections were {100 * min(lf):.3g}-{100 * max(lf):.3g} % "
                f"of the time in RTO recovery, their timer backed off up to {bo} times"
            )
            if bo >= 4 and min(lf) >= 0.3:
                text += (
                    " (an RTO of 3.2 s or more): the bursts are counted in packets, so a connection that sends one "
                    "retransmission per RTO stays in one burst while its timer doubles, and delivery stops"
                )
            else:
                text += (
                    ": no long backoff; the loss costs each connection window cuts and 200 ms RTOs often enough "
                    "that the stream delivers less than the player plays, and the buffer runs dry, refills, runs dry"
                )
        out.append(text + ".")
    out.append(
        "Either way ssthresh on nezuko's connections reached 2 as well, but a window of 2 packets at 0.4 ms "
        "carries 58 Mbit/s per connection: the window alone does not stall the stream."
    )
    return " ".join(out)

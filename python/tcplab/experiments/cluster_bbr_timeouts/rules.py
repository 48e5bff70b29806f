"""Story 000's verdict rules: each a pure function of the numbers it reads.

Every rule can fail: tests/experiments/test_cluster_bbr_timeouts.py applies each to a model
condition under which it does not give ``reproduced``. A rule returns ``(verdict, why)``,
``why`` a sentence stating the rule and what decided it.

The loss ladder. The story measured "<0.001%" loss and names no other; tcplab adds two
hypotheses (:data:`~.plan.LOSSES`). A claim about what happened is **reproduced** when it
holds under the story's measured loss, **partly** when it holds only under a hypothesis of
tcplab's (named in the reason), **not reproduced** when it holds under none. An event
"holds" under a condition when at least half the seeds show it (:class:`SeedCount`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tcplab.experiments.base import SeedCount, Verdict

__all__ = [
    "ORDER",
    "ladder",
    "stuck",
    "stuck_persists",
    "fix",
    "short_window",
    "buffers16",
    "masking",
    "spurious",
    "estimate",
    "convergence",
    "fq_required",
    "sufficient",
    "BBR_SPECIFIC_RATIO",
]

#: The losses, the story's own first (plan.LOSSES' keys).
ORDER = ("measured", "random", "bursts")
_HYPOTHESIS = {"random": "independent 4.76 % loss", "bursts": "bursts of loss"}
#: A BBR stuck "despite adequate bandwidth": CUBIC at least this many times faster there.
BBR_SPECIFIC_RATIO = 10.0


def _counts_text(counts: Mapping[str, SeedCount]) -> str:
    return "; ".join(f"{loss}: {counts[loss].text}" for loss in ORDER if loss in counts)


def ladder(counts: Mapping[str, SeedCount], what: str) -> tuple[Verdict, str]:
    """The loss ladder (module doc) over ``{loss: SeedCount}`` of the event ``what``."""
    text = f"{what}: {_counts_text(counts)}"
    if "measured" in counts and counts["measured"].holds:
        return "reproduced", f"reproduced under the story's measured loss ({text})"
    hyp = [loss for loss in ORDER[1:] if loss in counts and counts[loss].holds]
    if hyp:
        return "partly", (
            "partly: not under the story's measured loss, only under tcplab's hypothesis of "
            + " and of ".join(_HYPOTHESIS[h] for h in hyp)
            + f" ({text})"
        )
    return "not reproduced", f"not reproduced: under no loss of the experiment ({text})"


def stuck(points: Mapping[str, Mapping[str, Any]], stuck_bps: float) -> tuple[Verdict, str, list[str], list[str]]:
    """BBR stuck near 100 kbit/s "despite adequate bandwidth": reproduced if under some
    condition BBR's lowest 10-s goodput is under ``stuck_bps`` while CUBIC's under the same
    condition is at least :data:`BBR_SPECIFIC_RATIO` times higher (and not stuck itself);
    not reproduced if wherever BBR is stuck CUBIC is held as low (the condition, not BBR) or
    BBR is never stuck. ``points``: condition -> {"bbr": min_bps, "cubic": min_bps}.
    Returns the verdict, the reason, the BBR-specific conditions and the shared ones."""
    own, shared = [], []
    for cond, p in points.items():
        b, c = p.get("bbr"), p.get("cubic")
        if b is None or b >= stuck_bps:
            continue
        if c is not None and c >= stuck_bps and c >= BBR_SPECIFIC_RATIO * max(b, 1.0):
            own.append(cond)
        else:
            shared.append(cond)
    rule = (
        f"(the rule: BBR under {stuck_bps / 1e6:.3g} Mbit/s for 10 s where CUBIC, same condition, is not stuck "
        f"and at least {BBR_SPECIFIC_RATIO:.0f}x faster)"
    )
    if own:
        return "reproduced", f"reproduced: BBR alone was stuck under {', '.join(own)} {rule}", own, shared
    if shared:
        return (
            "not reproduced",
            "not reproduced: BBR fell under the threshold only where CUBIC was held as low "
            f"({', '.join(shared)}): the condition holds any TCP down, not a BBR state {rule}",
            own,
            shared,
        )
    return "not reproduced", f"not reproduced: no condition held BBR under the threshold {rule}", own, shared


def stuck_persists(bbr_after_bps: float | None, cubic_after_bps: float | None, limit_bps: float) -> tuple[Verdict, str]:
    """ "Once stuck, remains degraded despite network recovery" / "CUBIC recovers": BBR's
    goodput over the 10 s after the loss ended under 10 % of the path's ``limit_bps``
    (degraded), CUBIC's at least 50 % (recovered). Both: reproduced; BBR degraded and CUBIC
    too (the aftermath holds any TCP): partly; BBR not degraded: not reproduced, the claim
    being BBR's."""
    degraded = bbr_after_bps is not None and bbr_after_bps < 0.1 * limit_bps
    recovered = cubic_after_bps is not None and cubic_after_bps >= 0.5 * limit_bps
    rule = "(the rule: after the loss ends, BBR under 10 % of the limit and CUBIC at 50 % or more, over 10 s)"
    if degraded and recovered:
        return "reproduced", f"reproduced: BBR stayed degraded while CUBIC recovered {rule}"
    if degraded:
        return "partly", f"partly: BBR stayed degraded, but CUBIC did not recover either {rule}"
    return "not reproduced", f"not reproduced: BBR did not stay degraded once the loss ended {rule}"


def fix(stream: Mapping[str, tuple[bool, bool]], writes: Mapping[str, tuple[bool, bool]]) -> tuple[Verdict, str]:
    """CUBIC as the fix: per loss, ``(bbr fails, cubic fails)`` (each: the failure holds over
    the seeds) for the stream and for the writes. CUBIC is better where BBR fails and CUBIC
    does not. Reproduced: better on both under the measured loss; partly: better on both
    under a hypothesis only, or on one of the two anywhere; not reproduced: nowhere."""

    def better(d: Mapping[str, tuple[bool, bool]], loss: str) -> bool:
        return loss in d and d[loss][0] and not d[loss][1]

    both = [loss for loss in ORDER if better(stream, loss) and better(writes, loss)]
    one = [loss for loss in ORDER if better(stream, loss) or better(writes, loss)]
    rule = "(the rule: CUBIC better where BBR fails and CUBIC does not, on the stream and on the writes)"
    if "measured" in both:
        return "reproduced", f"reproduced under the story's measured loss {rule}"
    if both or one:
        return "partly", f"partly: CUBIC better on both only under {both} / on one under {one} {rule}"
    return "not reproduced", f"not reproduced: under no loss does CUBIC do better than BBR {rule}"


def short_window(counts: Mapping[str, SeedCount], hazards: Mapping[str, tuple[float, float]]) -> tuple[Verdict, str]:
    """ "Perfect metrics for 2 minutes" then "long-term degradation", "because" the failure
    "requires sustained load to trigger": per loss (from the first packet: nothing changes
    during the run), ``counts`` the seeds healthy in the first 2 minutes and failing after;
    ``hazards`` (stalls per minute in the first 2 minutes, after). A build-up: the hazard
    after at least twice the hazard before, and above 0. Reproduced: both under the measured
    loss; partly: healthy-then-failing holds under some loss without the build-up or under a
    hypothesis only; not reproduced: healthy-then-failing holds nowhere."""
    build = {loss: h[1] > 0 and h[1] >= 2 * h[0] for loss, h in hazards.items()}
    text = (
        _counts_text(counts)
        + "; stalls per minute, first 2 min / after: "
        + "; ".join(f"{loss}: {hazards[loss][0]:.3g} / {hazards[loss][1]:.3g}" for loss in ORDER if loss in hazards)
    )
    holds = [loss for loss in ORDER if loss in counts and counts[loss].holds]
    if "measured" in holds and build.get("measured"):
        return "reproduced", f"reproduced under the story's measured loss ({text})"
    if holds:
        grows = [loss for loss in holds if build.get(loss)]
        return "partly", (
            f"partly: healthy for 2 minutes and failing later under {', '.join(holds)}"
            + (
                f", with a hazard that grows ({', '.join(grows)})"
                if grows
                else ", but at the same rate per minute from the start: a 2-minute check misses events "
                "that come every few minutes, no state builds up under sustained load"
            )
            + f" ({text})"
        )
    return "not reproduced", f"not reproduced: no loss gave 2 healthy minutes then a failure ({text})"


def buffers16(base: Mapping[str, SeedCount], big: Mapping[str, SeedCount]) -> tuple[Verdict, str]:
    """Fix attempt 1, "recurred with identical symptoms" and "CUBIC still collapsed cwnd to 2":
    with 16 MB buffers under the bursts the player's failure holds as it does with the
    initial 7.5 MB (``stall``), and marin's sockets still reach cwnd:2 ssthresh:2 in some seed
    (``collapse`` seen). Only the bursts are run, a hypothesis: partly at best."""
    text = "; ".join(f"{k}: 7.5 MB {base[k].text}, 16 MB {big[k].text}" for k in ("stall", "collapse"))
    if big["stall"].holds and base["stall"].holds and big["collapse"].seen:
        return "partly", f"partly: the same failure with 16 MB, and the collapse, under tcplab's bursts only ({text})"
    if not big["stall"].holds:
        return "not reproduced", f"not reproduced: the failure did not recur with 16 MB ({text})"
    return "not reproduced", f"not reproduced: no collapse with 16 MB, or no failure to compare with ({text})"


def masking(
    collapse: Mapping[str, tuple[bool, bool]], stall: Mapping[str, tuple[bool, bool]], spread16: float | None
) -> tuple[Verdict, str]:
    """Fix attempt 2's "why it failed": BBR "masked" the cwnd collapse (per loss, marin's
    ``(cubic collapses, bbr collapses)``: CUBIC's sockets collapse, BBR's not, while the
    stream's ``(cubic stalls, bbr stalls)`` is the same: the symptom hidden, the failure
    kept) and nconnect=16's "request distribution imbalance" (``spread16``: the largest over
    the smallest connection's bytes, over 1.5). Both: reproduced; one: partly; none: not."""
    masked = [
        loss
        for loss in ORDER
        if loss in collapse and collapse[loss][0] and not collapse[loss][1] and stall[loss][0] == stall[loss][1]
    ]
    imbalance = spread16 is not None and spread16 > 1.5
    spread = "-" if spread16 is None else f"{spread16:.3g}"
    text = f"masked under: {', '.join(masked) or 'none'}; nconnect 16's largest/smallest connection share {spread}"
    if masked and imbalance:
        return "reproduced", f"reproduced ({text})"
    if masked or imbalance:
        return "partly", f"partly ({text})"
    return "not reproduced", f"not reproduced ({text})"


def spurious(bbr: Mapping[str, Any], cubic: Mapping[str, Any]) -> tuple[Verdict, str]:
    """ "Aggressive probing triggers spurious congestion events": on a clean path, BBR's
    retransmissions (a congestion event that costs a packet). Reproduced: BBR has some and
    more than CUBIC; partly: some, but no more than CUBIC's; not reproduced: none."""
    b, c = int(bbr["retrans_segs"]), int(cubic["retrans_segs"])
    text = f"retransmissions on the clean path: BBR {b}, CUBIC {c}"
    if b > 0 and b > c:
        return "reproduced", f"reproduced ({text})"
    if b > 0:
        return "partly", f"partly: BBR has congestion events, but no more than CUBIC ({text})"
    return "not reproduced", f"not reproduced: BBR's probing caused no congestion event ({text})"


def estimate(bw_median_bps: float | None, limit_bps: float) -> tuple[Verdict, str]:
    """ "misinterprets low-latency as infinite bandwidth": BBR's bandwidth estimate on a clean
    sub-millisecond path over 2x the real limit: reproduced; over 1.25x: partly; else not."""
    if bw_median_bps is None:
        return "not reproduced", "not reproduced: no BBR estimate"
    r = bw_median_bps / limit_bps
    text = f"BBR's median estimate {bw_median_bps / 1e6:.4g} Mbit/s = {r:.3g}x the {limit_bps / 1e6:.3g} Mbit/s limit"
    if r > 2.0:
        return "reproduced", f"reproduced ({text})"
    if r > 1.25:
        return "partly", f"partly ({text})"
    return "not reproduced", f"not reproduced: the estimate is the real limit ({text})"


def convergence(cubic_s: float | None, bbr_s: float | None, resolution_s: float) -> tuple[Verdict, str]:
    """ "Faster convergence to optimal window size": CUBIC reaches 90 % of the limit more than
    one sample (``resolution_s``) before BBR: reproduced; otherwise not reproduced."""
    text = f"time to 90 % of the limit: CUBIC {cubic_s} s, BBR {bbr_s} s (samples every {resolution_s:.3g} s)"
    if cubic_s is not None and (bbr_s is None or cubic_s + resolution_s < bbr_s):
        return "reproduced", f"reproduced ({text})"
    return "not reproduced", f"not reproduced: CUBIC is not faster ({text})"


def fq_required(with_fq: Mapping[str, Any], without: Mapping[str, Any]) -> tuple[Verdict, str]:
    """ "Fair queueing required for BBR": BBR without fq clearly worse (goodput under 90 % of
    BBR's with fq, or more than twice its retransmissions plus 10): reproduced; else not."""
    g1, g0 = with_fq["goodput_bps"] or 0.0, without["goodput_bps"] or 0.0
    r1, r0 = int(with_fq["retrans_segs"]), int(without["retrans_segs"])
    text = (
        f"BBR with fq {g1 / 1e6:.4g} Mbit/s, {r1} retransmissions; with fq_codel {g0 / 1e6:.4g} Mbit/s, "
        f"{r0} retransmissions"
    )
    if g0 < 0.9 * g1 or r0 > 2 * r1 + 10:
        return "reproduced", f"reproduced: BBR does worse without fq ({text})"
    return "not reproduced", f"not reproduced: BBR does as well without fq ({text})"


def sufficient(healthy: SeedCount) -> tuple[Verdict, str]:
    """ "1500 MTU with 1MB TCP windows provides sufficient throughput" (offloads off, the story's
    measured loss): the player healthy in every seed: reproduced; in at least half: partly."""
    if healthy.n and healthy.k == healthy.n:
        return "reproduced", f"reproduced: the player healthy in {healthy.text}"
    if healthy.holds:
        return "partly", f"partly: the player healthy in {healthy.text} only"
    return "not reproduced", f"not reproduced: the player healthy in {healthy.text}"

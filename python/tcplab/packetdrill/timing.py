"""When a packetdrill event is due, and whether what happened was on time.

The rules are packetdrill's own (``gtests/net/packetdrill/run.c``), restated for a run in
simulated time, where "live" time is the engine's clock since the script's start:

* **Resolving a time** (``adjust_relative_event_times()``): an absolute time stands as
  written. A relative one (``+0.1``, a relative range ``+.1~+.2``, or ``*``) counts from an
  *offset*: the script time of the previous event when both it and this event are inbound
  packets (consecutive injected packets keep their spacing, whatever the processing took:
  ``is_event_start_time_anchored()``), and otherwise the live time now, i.e. when the previous
  event actually finished (an outbound packet counts from when it was seen, a blocking call
  from when it returned). A relative blocking system call's end moves by the same offset.
* **Checking a time** (``verify_time()``): ``*`` always passes. Otherwise the tolerance is
  ``tolerance_usecs`` (default 4 ms) or, when larger, ``tolerance_percent`` (default 12.5 %)
  of the script time since the previous event's script time; an event passes if its live
  time is within the tolerance of its script time, or of its range's ends. The message of a
  miss is packetdrill's (``timing error: expected outbound packet at 0.300906 sec but
  happened at 0.343793 sec; tolerance 0.004000 sec``), so the two tools' failures read alike.

Times are integer microseconds from the script's start, as packetdrill keeps them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tcplab.packetdrill.script import DEFAULT_TOLERANCE_PERCENT, DEFAULT_TOLERANCE_USECS, EventTime

TimeKind = Literal["absolute", "relative", "any", "range"]


@dataclass(frozen=True, slots=True)
class ResolvedTime:
    """An event's script time once its relative parts are anchored: ``time_us`` (and
    ``end_us`` for a range), the ``offset_us`` they were counted from (0 for absolute
    times), a blocking call's ``blocking_end_us``; ``kind`` as written."""

    kind: TimeKind
    time_us: int
    end_us: int | None
    offset_us: int
    blocking_end_us: int | None


def resolve(
    time: EventTime,
    *,
    inbound_packet: bool,
    previous: ResolvedTime | None,
    previous_inbound_packet: bool,
    now_us: int,
) -> ResolvedTime:
    """The script time of an event written as ``time`` (module doc), given the previous
    event's resolved time and whether each is an inbound packet, and the live time now."""
    start = time.start_us or 0
    if time.kind == "absolute" or (time.kind == "range" and not time.end_relative):
        return ResolvedTime(time.kind, start, time.end_us, 0, time.blocking_end_us)
    # is_event_start_time_anchored(): both inbound packets -> the previous script time.
    anchored = previous is not None and previous_inbound_packet and inbound_packet
    offset = previous.time_us if anchored and previous is not None else now_us
    end = time.end_us + offset if time.kind == "range" and time.end_us is not None else time.end_us
    blocking_end = time.blocking_end_us
    if blocking_end is not None and time.kind == "relative":
        blocking_end += offset
    return ResolvedTime(time.kind, start + offset, end, offset, blocking_end)


def tolerance_us(
    script_us: int,
    last_event_us: int | None,
    tolerance_usecs: int = DEFAULT_TOLERANCE_USECS,
    tolerance_percent: float = DEFAULT_TOLERANCE_PERCENT,
) -> int:
    """``verify_time()``'s tolerance: the larger of ``tolerance_usecs`` and
    ``tolerance_percent`` of the script time since the previous event (none before the
    first); C's conversion of the percentage to ``long`` truncates toward zero."""
    tol = tolerance_usecs
    if last_event_us is not None:
        dynamic = int(tolerance_percent / 100.0 * (script_us - last_event_us))
        tol = max(tol, dynamic)
    return tol


def verify_time(
    when: ResolvedTime,
    live_us: int,
    last_event_us: int | None,
    description: str,
    tolerance_usecs: int = DEFAULT_TOLERANCE_USECS,
    tolerance_percent: float = DEFAULT_TOLERANCE_PERCENT,
) -> str | None:
    """None when ``description`` (``outbound packet``, ``system call start``...) happening at
    ``live_us`` is on time for ``when``; else packetdrill's message of the miss."""
    if when.kind == "any":
        return None
    tol = tolerance_us(when.time_us, last_event_us, tolerance_usecs, tolerance_percent)
    if when.kind == "range" and when.end_us is not None:
        if when.time_us - tol <= live_us <= when.end_us + tol:
            return None
        if when.offset_us == 0:
            return (
                f"timing error: expected {description} in time range "
                f"{_secs(when.time_us)}~{_secs(when.end_us)} sec but happened at {_secs(live_us)} sec"
            )
        o = when.offset_us
        return (
            f"timing error: expected {description} in relative time range "
            f"+{_secs(when.time_us - o)}~+{_secs(when.end_us - o)} sec but happened at "
            f"{_signed_secs(live_us - o)} sec"
        )
    if when.time_us - tol <= live_us <= when.time_us + tol:
        return None
    return (
        f"timing error: expected {description} at {_secs(when.time_us)} sec but happened at "
        f"{_secs(live_us)} sec; tolerance {_secs(tol)} sec"
    )


def _secs(us: int) -> str:
    """``%.6f`` of microseconds in seconds, exact (no binary rounding on the way)."""
    sign = "-" if us < 0 else ""
    us = abs(us)
    return f"{sign}{us // 1_000_000}.{us % 1_000_000:06d}"


def _signed_secs(us: int) -> str:
    """``%+.6f``."""
    return _secs(us) if us < 0 else "+" + _secs(us)

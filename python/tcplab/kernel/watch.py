"""Whether a kernel run was carried out whole: its namespaces and processes stayed to the
end, and its samples reach it.

A run can be broken under it: ``tcplab kernel cleanup --prefix P`` of the same prefix (it
kills what runs in the namespaces and deletes them), an ``ip netns del``, a kill of an agent
or of the delay line. What is left is not a run of the scenario: samples that stop at the
break while the run says the full duration. :func:`tcplab.kernel.run.kernel_run` checks, and
on any of these raises :class:`~tcplab.kernel.errors.KernelRunBroken` (one line; the CLI
exits 1 and writes nothing):

* during the traffic, at each wake-up of its wait (:func:`during`): every namespace the
  testbed made is there and is the same namespace (:meth:`tcplab.kernel.testbed.Testbed.lost`:
  the inode of ``/var/run/netns/NAME``, recorded at creation: a cleanup and then another run
  of the prefix make new namespaces of the same names), every delay line runs, every agent
  runs (they end by themselves only at the end), the queue sampler's thread runs;
* after the traffic, on what was collected (:func:`after`, pure): no agent was stopped by a
  signal before the end (its JSON's ``stopped_by``), and each sampler went through its
  schedule (``t0 + k * interval`` up to the duration: samples taken plus missed) to the end,
  less the last one (cut when the agent writes its JSON at the deadline).

A busy machine does not break a run: samples late or missed are counted (they make it
INVALID, :func:`tcplab.kernel.measure.validity`), not lost.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterable, Mapping
from typing import Any

from tcplab.kernel.errors import KernelRunBroken

__all__ = ["during", "after", "broken", "exit_text", "SETTLE_S"]

#: After a first problem, how long the run waits before it looks again and fails: a cleanup
#: stops the processes in a namespace (up to 3 s: SIGTERM, then SIGKILL) before deleting it.
SETTLE_S = 1.0


def exit_text(code: int | None) -> str:
    """A process's end as a reader wants it: ``killed by SIGTERM`` or ``exit status 1``."""
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def during(testbed: Any, agents: Mapping[str, Any], sampler: Any, end_ns: int) -> list[str]:
    """What is gone from a run whose traffic ends at ``end_ns`` (CLOCK_MONOTONIC), now:
    the testbed's namespaces and delay lines (``testbed.lost()``), ``agents`` (``{node:
    Popen}``) that ended, the queue ``sampler``'s thread (None: not checked)."""
    problems = list(testbed.lost())
    for node, proc in agents.items():
        code = proc.poll()
        # read the clock after poll(): an agent seen ended before this instant ended early
        if code is not None and time.monotonic_ns() < end_ns:
            problems.append(f"the traffic agent of {node} ended ({exit_text(code)})")
    sampler_ended = sampler is not None and getattr(sampler, "targets", None) and not sampler.running
    if sampler_ended and time.monotonic_ns() < end_ns:
        problems.append("the queue sampler ended")
    return problems


def _due(duration_ns: int, interval_ns: int) -> int:
    """Samples a sampler's schedule has over the run: at 0, interval, ... up to the duration."""
    return int(duration_ns) // int(interval_ns) + 1 if interval_ns > 0 else 0


def _stop_s(summary: Mapping[str, Any], interval_ns: int) -> float:
    reached = int(summary.get("samples", 0)) + int(summary.get("missed", 0))
    return max(0, reached - 1) * interval_ns / 1e9


def after(m: Any, expected_agents: Iterable[str] = ()) -> list[str]:
    """What the collected measurements ``m`` (:class:`tcplab.kernel.measure.Measurements`)
    say was cut short (module doc); empty for a whole run."""
    problems: list[str] = []
    duration_ns, interval_ns = int(m.duration_ns), int(m.sample_interval_ns)
    due = _due(duration_ns, interval_ns)
    for node in sorted(set(expected_agents) | set(m.agents)):
        doc = m.agents.get(node)
        if doc is None:
            continue  # no result: the run is INVALID (measure.validity names it)
        ended_ns = int(doc.get("ended_ns") or 0)
        if doc.get("stopped_by") == "signal" and ended_ns < duration_ns:
            problems.append(f"the traffic agent of {node} was stopped by a signal at {ended_ns / 1e9:.1f} s")
            continue
        ss = doc.get("ss") or {}
        reached = int(ss.get("samples", 0)) + int(ss.get("missed", 0))
        if ss and reached < due - 1:
            problems.append(f"the ss samples of {node} stop at {_stop_s(ss, interval_ns):.1f} s")
    q = m.queue_lateness
    if q and "samples" in q:
        reached = int(q.get("samples", 0)) + int(q.get("missed", 0))
        if reached < due - 1:
            problems.append(f"the queue samples stop at {_stop_s(q, interval_ns):.1f} s")
    return problems


def broken(problems: Iterable[str], at_ns: int, duration_ns: int, prefix: str) -> KernelRunBroken:
    """The one line a broken run fails with: when (ns since t0), what, and the likely cause."""
    at_s = min(max(0, int(at_ns)), int(duration_ns)) / 1e9
    what = "; ".join(problems)
    return KernelRunBroken(
        f"kernel: the run was broken under it at {at_s:.1f} s of {int(duration_ns) / 1e9:g} s: {what} "
        f"(removed or killed from outside: tcplab kernel cleanup --prefix {prefix} during the run?); "
        "nothing written"
    )

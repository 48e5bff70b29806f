"""The queue sampler of a kernel run: ``tc -s -j qdisc show`` per namespace, every interval.

The model: the simulator samples every link's egress queue each ``sample_interval`` (backlog
in packets and bytes, cumulative drops: :data:`tcplab.columns.QUEUE_DTYPES`). A kernel run
reads the same from the root qdisc of each link's egress device: a thread in the parent
runs ``tc -n NS -s -j qdisc show`` once per namespace at ``t0 + k * interval`` (k = 0, 1, ...
up to the duration; an absolute schedule: a late sample does not delay the next, one more
than an interval late is skipped and counted as missed) and takes, per target device, the
root qdisc's ``qlen`` (packets), ``backlog`` (bytes) and ``drops`` (iproute2 tc/tc_qdisc.c
prints ``struct gnet_stats_queue``: a root tbf counts its child's packets in its own qlen
and backlog, and a child's drops in its own, Linux v6.12 net/sched/sch_tbf.c:
tbf_enqueue()). Row time ``t_ns`` is when the ``tc`` call started, ns since t0.

The parsing is pure (:func:`queue_rows`, on the text tc printed, through
:func:`tcplab.diagnose.tc.parse_tc_json`); the thread only runs commands.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from tcplab.columns import QUEUE_DTYPES
from tcplab.diagnose.source import ParseError, text_source
from tcplab.diagnose.tc import parse_tc_json

__all__ = ["QueueTarget", "QueueSampler", "queue_rows", "queue_targets", "lateness_summary"]


@dataclass(frozen=True)
class QueueTarget:
    """One one-way link's egress: the link's index in the engine config, its namespace and
    device."""

    link: int
    netns: str
    dev: str


def queue_targets(queue_devices: Mapping[str, Iterable[tuple[str, int]]]) -> list[QueueTarget]:
    """Targets from the plan's ``queue_devices`` (``{ns: [(dev, link index)]}``), link order."""
    out = [QueueTarget(int(link), str(ns), str(dev)) for ns, devs in queue_devices.items() for dev, link in devs]
    return sorted(out, key=lambda t: t.link)


def queue_rows(text: str, targets: Iterable[QueueTarget], t_ns: int) -> list[tuple[int, int, int, int, int]]:
    """``(t_ns, link, backlog_packets, backlog_bytes, drops)`` per target whose device has a
    root qdisc in one namespace's ``tc -s -j qdisc show`` output (module doc)."""
    qdiscs = parse_tc_json(text_source(text, "tc -s -j qdisc show"))
    roots = {q.dev: q for q in qdiscs if q.parent == "root"}
    rows = []
    for t in targets:
        q = roots.get(t.dev)
        if q is None:
            continue
        rows.append(
            (
                int(t_ns),
                t.link,
                int(q.stats.get("qlen", 0)),
                int(q.stats.get("backlog", 0)),
                int(q.stats.get("drops", 0)),
            )
        )
    return rows


def lateness_summary(late_ns: list[int], missed: int, interval_ns: int) -> dict[str, Any]:
    """How late a sampler's samples started: p50/p99/max, the number later than half an
    interval (missed ones included) and its share of all due samples."""
    late = sorted(late_ns)
    due = len(late) + missed
    over = sum(1 for x in late if x > interval_ns // 2) + missed

    def pct(q: float) -> int | None:
        if not late:
            return None
        rank = int(-(-q * len(late) // 1))
        return late[min(max(rank, 1), len(late)) - 1]

    return {
        "interval_ns": interval_ns,
        "samples": len(late),
        "missed": missed,
        "late_over_half_interval": over,
        "late_over_half_interval_frac": over / due if due else 0.0,
        "late_ns": {"p50": pct(0.5), "p99": pct(0.99), "max": late[-1] if late else None},
    }


Runner = Callable[[list[str]], str]


def _run_tc(argv: list[str]) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=5, check=False)
    if done.returncode != 0:
        raise OSError(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr.strip()[:200]}")
    return done.stdout


class QueueSampler:
    """A thread sampling the targets' root qdiscs every ``interval_ns`` from ``t0_ns``
    (CLOCK_MONOTONIC) to ``t0_ns + duration_ns`` (module doc). ``start()``, then ``stop()``
    returns the QUEUE_DTYPES columns; ``errors`` and :meth:`lateness` say how it went."""

    def __init__(
        self,
        targets: Iterable[QueueTarget],
        t0_ns: int,
        interval_ns: int,
        duration_ns: int,
        *,
        runner: Runner = _run_tc,
        clock: Callable[[], int] = time.monotonic_ns,
    ):
        self.targets = list(targets)
        self.t0_ns = int(t0_ns)
        self.interval_ns = int(interval_ns)
        self.duration_ns = int(duration_ns)
        self._runner = runner
        self._clock = clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.rows: list[tuple[int, int, int, int, int]] = []
        self.late_ns: list[int] = []
        self.missed = 0
        self.errors: list[str] = []
        self._by_ns: dict[str, list[QueueTarget]] = {}
        for t in self.targets:
            self._by_ns.setdefault(t.netns, []).append(t)

    def start(self) -> QueueSampler:
        if self.targets:
            self._thread = threading.Thread(target=self._loop, name="queue-sampler", daemon=True)
            self._thread.start()
        return self

    @property
    def running(self) -> bool:
        """The sampling thread runs (it ends after the sample due at the duration)."""
        return self._thread is not None and self._thread.is_alive()

    def sample_once(self, t_ns: int) -> None:
        """One sample of every namespace, its rows stamped ``t_ns``."""
        for ns, targets in self._by_ns.items():
            try:
                text = self._runner(["tc", "-n", ns, "-s", "-j", "qdisc", "show"])
                self.rows.extend(queue_rows(text, targets, t_ns))
            except (OSError, subprocess.SubprocessError, ParseError) as e:
                if len(self.errors) < 20:
                    self.errors.append(str(e))

    def _loop(self) -> None:
        k = 0
        while k * self.interval_ns <= self.duration_ns:
            due = k * self.interval_ns
            now = self._clock() - self.t0_ns
            if now < due and self._stop.wait((due - now) / 1e9):
                return
            late = self._clock() - self.t0_ns - due
            if late > self.interval_ns:
                self.missed += 1
                k += 1
                continue
            self.sample_once(self._clock() - self.t0_ns)
            self.late_ns.append(max(0, late))
            k += 1

    def stop(self, timeout_s: float = 5.0) -> dict[str, np.ndarray]:
        """Stop the thread (after its current sample) and return the columns."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=timeout_s)
        return self.columns()

    def columns(self) -> dict[str, np.ndarray]:
        rows = sorted(self.rows, key=lambda r: (r[0], r[1]))
        names = list(QUEUE_DTYPES)
        return {name: np.array([r[i] for r in rows], dtype=QUEUE_DTYPES[name]) for i, name in enumerate(names)}

    def lateness(self) -> dict[str, Any]:
        out = lateness_summary(self.late_ns, self.missed, self.interval_ns)
        out["errors"] = list(self.errors)
        return out

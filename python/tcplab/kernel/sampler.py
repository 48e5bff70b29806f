"""The queue sampler of a kernel run: each namespace's root qdiscs over netlink, every interval.

The model: the simulator samples every link's egress queue each ``sample_interval`` (backlog
in packets and bytes, cumulative drops: :data:`tcplab.columns.QUEUE_DTYPES`). A kernel run
reads the same from the root qdisc of each link's egress device: a thread in the parent
dumps each namespace's qdiscs (``RTM_GETQDISC``, what ``tc -n NS -s qdisc show`` asks for,
:mod:`tcplab.kernel.qdisc_netlink`) over a netlink socket opened in that namespace before
the run, at ``t0 + k * interval`` (k = 0, 1, ... up to the duration; an absolute schedule: a
late sample does not delay the next, one more than an interval late is skipped and counted
as missed) and takes, per target device, the root qdisc's ``qlen`` (packets), ``backlog``
(bytes) and ``drops`` (``struct gnet_stats_queue``, as tc prints them: a root tbf counts its
child's packets in its own qlen and backlog, and a child's drops in its own, Linux v6.12
net/sched/sch_tbf.c: tbf_enqueue()). Row time ``t_ns`` is when the sample (the first
namespace's dump) started, ns since t0. Running ``tc`` itself every sample spawned a process per namespace per sample,
and that stalled the traffic's ACKs on a 2-CPU machine (docs/kernel-pin.md, departure 3).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from tcplab.columns import QUEUE_DTYPES
from tcplab.kernel.qdisc_netlink import NetlinkQdiscReader, QdiscCounters

__all__ = ["QueueTarget", "QueueSampler", "QdiscReader", "queue_rows", "queue_targets", "lateness_summary"]


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


def queue_rows(
    roots: Mapping[str, QdiscCounters], targets: Iterable[QueueTarget], t_ns: int
) -> list[tuple[int, int, int, int, int]]:
    """``(t_ns, link, backlog_packets, backlog_bytes, drops)`` per target whose device has a
    root qdisc in one namespace's dump (``{device: counters}``, module doc)."""
    rows = []
    for t in targets:
        q = roots.get(t.dev)
        if q is not None:
            rows.append((int(t_ns), t.link, q.qlen, q.backlog_bytes, q.drops))
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


class QdiscReader(Protocol):
    """What the sampler needs of a namespace's reader (:class:`NetlinkQdiscReader`)."""

    def root_qdiscs(self) -> Mapping[str, QdiscCounters]: ...

    def close(self) -> None: ...


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
        reader: Callable[[str], QdiscReader] = NetlinkQdiscReader,
        clock: Callable[[], int] = time.monotonic_ns,
    ):
        self.targets = list(targets)
        self.t0_ns = int(t0_ns)
        self.interval_ns = int(interval_ns)
        self.duration_ns = int(duration_ns)
        self._open_reader = reader
        self._readers: dict[str, QdiscReader] = {}
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
        """Open a reader per namespace (now, before the traffic), then start sampling."""
        for ns in self._by_ns:
            try:
                self._readers[ns] = self._open_reader(ns)
            except OSError as e:
                self.errors.append(f"qdiscs of {ns}: {e}")
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
            reader = self._readers.get(ns)
            if reader is None:
                continue
            try:
                self.rows.extend(queue_rows(reader.root_qdiscs(), targets, t_ns))
            except (OSError, ValueError) as e:
                if len(self.errors) < 20:
                    self.errors.append(f"qdiscs of {ns}: {e}")

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
        for reader in self._readers.values():
            reader.close()
        self._readers.clear()
        return self.columns()

    def columns(self) -> dict[str, np.ndarray]:
        rows = sorted(self.rows, key=lambda r: (r[0], r[1]))
        names = list(QUEUE_DTYPES)
        return {name: np.array([r[i] for r in rows], dtype=QUEUE_DTYPES[name]) for i, name in enumerate(names)}

    def lateness(self) -> dict[str, Any]:
        out = lateness_summary(self.late_ns, self.missed, self.interval_ns)
        out["errors"] = list(self.errors)
        return out

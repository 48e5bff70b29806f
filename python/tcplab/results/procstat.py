"""A host's CPU time as the ``cpu`` lines of ``/proc/stat``, for hosts with a CPU model.

The model: a host with a CPU model runs in periodic time slices (a vCPU that the hypervisor
deschedules); the time it is off the CPU is what a guest's kernel reports as *steal*
(``/proc/stat``'s 8th column). tcplab does not model how busy the host is while it runs, so
its on-CPU time is reported as idle. ``proc-stat-HOST.txt`` holds the aggregate and the one
CPU's line as Linux v6.12 ``fs/proc/stat.c: show_stat()`` prints them: ``cpu`` followed by
two spaces, ``cpu0`` by one, then ``user nice system idle iowait irq softirq steal guest
guest_nice`` in USER_HZ ticks (100 per second, ``nsec_to_clock_t()``, truncating)::

    cpu  0 0 0 1050 0 0 0 1950 0 0
    cpu0 0 0 0 1050 0 0 0 1950 0 0

The other lines of /proc/stat (``intr``, ``ctxt``, ``btime``, ...) are not written.
"""

from __future__ import annotations

__all__ = ["format_proc_stat", "USER_HZ"]

#: Linux's USER_HZ: the unit of /proc/stat.
USER_HZ = 100


def _ticks(ns: int) -> int:
    return int(ns) * USER_HZ // 1_000_000_000


def format_proc_stat(on_ns: int, steal_ns: int) -> str:
    """The ``cpu``/``cpu0`` lines for a host that ran ``on_ns`` and was descheduled ``steal_ns``."""
    fields = [0, 0, 0, _ticks(on_ns), 0, 0, 0, _ticks(steal_ns), 0, 0]
    values = " ".join(str(v) for v in fields)
    return f"cpu  {values}\ncpu0 {values}\n"

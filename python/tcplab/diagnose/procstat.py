"""CPU time from ``/proc/stat``: user, system, idle, ..., and **steal**.

The model: the ``cpu`` line sums all CPUs' time in USER_HZ ticks, in the order
``user nice system idle iowait irq softirq steal guest guest_nice`` (fs/proc/stat.c; older
kernels print fewer columns: missing columns are zero). ``guest``/``guest_nice`` are
already counted in ``user``/``nice``, so the total excludes them. Steal is time a virtual
CPU was runnable but the hypervisor ran something else: the VM's time slices of seed 003.
One snapshot gives the share since boot; two give the share over the capture.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tcplab.diagnose.source import Evidence, ParseError, Source, iter_lines

__all__ = ["CpuTimes", "parse_proc_stat", "FIELDS"]

FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest", "guest_nice")


@dataclass
class CpuTimes:
    ticks: dict[str, float] = field(default_factory=dict)
    ncpu: int = 0
    evidence: Evidence | None = None

    @property
    def total(self) -> float:
        return sum(v for k, v in self.ticks.items() if k not in ("guest", "guest_nice"))


def parse_proc_stat(src: Source) -> CpuTimes:
    out = CpuTimes()
    for lineno, text in iter_lines(src):
        parts = text.split()
        if not parts:
            continue
        if parts[0] == "cpu":
            vals = parts[1:]
            if not vals or len(vals) > len(FIELDS) or not all(v.isdigit() and len(v) < 25 for v in vals):
                raise ParseError(src.name, lineno, "/proc/stat: the 'cpu' line needs up to 10 tick counts")
            out.ticks = {k: float(v) for k, v in zip(FIELDS, vals, strict=False)}
            out.evidence = Evidence(src.name, lineno, text)
        elif parts[0].startswith("cpu") and parts[0][3:].isdigit():
            out.ncpu += 1
    if out.evidence is None:
        raise ParseError(src.name, 1, "/proc/stat without a 'cpu' line")
    return out

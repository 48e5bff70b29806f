"""What a sweep shows while it runs: runs done/total, failed, ETA.

On a terminal, a rich bar on stderr (the ETA from the runs of this invocation only: a
resumed sweep's runs found done are not counted); off a terminal, one line per finished
run, as ``tcplab reproduce`` prints them (``[k/N] POINT,seed=S done (T s)`` or
``[k/N] ...: FAILED: why``, :class:`tcplab.progress.RunLines`); with ``enabled`` False
(``--quiet``), nothing. It is the ``progress`` callback of :func:`tcplab.sweep.run_sweep`
for ``tcplab sweep`` and for the sweep ``tcplab recommend`` runs from a scenario; the
runs' warnings are gathered (once each) for the command to print at the end.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["SweepBar"]


class SweepBar:
    """runs done/total, failed, ETA: a rich bar on a terminal; otherwise one line per finished
    run (named by its point and seed in ``plan``), unless ``enabled`` is False (--quiet)."""

    def __init__(self, enabled: bool, plan: Any = None):
        from tcplab.progress import RunLines

        self.enabled = enabled and sys.stderr.isatty()
        self.plan = plan
        #: off a terminal: reproduce's lines (failures are listed at the end, as before)
        off_terminal = enabled and not self.enabled
        self.lines = RunLines(0, what="writing the table", bar=False, tty=False) if off_terminal else None
        self.bar: Any = None
        self.task: Any = None
        self.warnings: dict[str, None] = {}
        #: runs found done (a resumed sweep)
        self.skipped = 0

    def __call__(self, p: Any) -> None:
        self.skipped = p.skipped
        if p.outcome is not None:
            for w in p.outcome.warnings:
                self.warnings.setdefault(w)
            if self.lines is not None:
                self.lines(p.done, p.total, self.label_of(p.outcome.key), None if p.outcome.ok else p.outcome.error)
        if not self.enabled:
            return
        if self.bar is None:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self.bar = Progress(
                TextColumn("[bold]sweep"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("runs"),
                TextColumn("{task.fields[failed]} failed"),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            self.bar.start()
            # ETA from the runs of this invocation only (skipped ones are done already)
            self.task = self.bar.add_task("", total=p.total - p.skipped, failed=0)
        self.bar.update(self.task, completed=p.done - p.skipped, failed=p.failed)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None

    def label_of(self, key: str) -> str:
        """A run as its line names it: its point's values and seed (``flows.0.cc=bbr,seed=2``)."""
        if self.plan is None or key not in self.plan.scenarios:
            return key
        entry = self.plan.scenarios[key][0]
        return ",".join([*entry.point.texts(self.plan.parameters), f"seed={entry.seed}"])

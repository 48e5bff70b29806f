"""A progress bar of simulated time, shown only for runs long enough to need one.

The model: the engine calls ``progress(sim_now_ns, duration_ns)`` every so often while it
simulates. :class:`SimProgress` is such a callable: it stays silent for the first
``delay_s`` (1 s) of wall time, so quick runs print nothing extra, and then draws a rich bar
of simulated seconds on stderr. It never draws when output is not a terminal.
"""

from __future__ import annotations

import sys
import time
from typing import Any

__all__ = ["SimProgress"]


class SimProgress:
    """Callable ``(sim_now_ns, duration_ns)``; use as a context manager to close the bar."""

    def __init__(
        self,
        label: str,
        *,
        delay_s: float = 1.0,
        enabled: bool | None = None,
        console: Any = None,
        unit: str = "s simulated",
    ):
        if enabled is None:
            enabled = sys.stdout.isatty() and sys.stderr.isatty()
        self.label = label
        #: What the seconds count: simulated time, or a kernel run's seconds of traffic.
        self.unit = unit
        self.enabled = enabled
        self.delay_s = delay_s
        self._console = console
        self._t0 = time.monotonic()
        self._progress: Any = None
        self._task: Any = None

    def __call__(self, sim_now_ns: int, duration_ns: int) -> None:
        if not self.enabled:
            return
        total = max(duration_ns, 1) / 1e9
        if self._progress is None:
            if time.monotonic() - self._t0 < self.delay_s:
                return
            self._start(total)
        self._progress.update(self._task, completed=min(sim_now_ns / 1e9, total), total=total)

    def _start(self, total_s: float) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        console = self._console or Console(stderr=True)
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TextColumn("{task.completed:>7.1f}/{task.total:.1f} " + self.unit),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=True,
        )
        self._progress.start()
        self._task = self._progress.add_task(self.label, total=total_s)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def __enter__(self) -> SimProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

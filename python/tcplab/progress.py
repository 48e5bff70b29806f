"""A progress bar of simulated time, shown only for runs long enough to need one.

The model: the engine calls ``progress(sim_now_ns, duration_ns)`` every so often while it
simulates. :class:`SimProgress` is such a callable: it stays silent for the first
``delay_s`` (1 s) of wall time, so quick runs print nothing extra, and then draws a rich bar
of simulated seconds on stderr. It never draws when output is not a terminal.

:class:`RunLines` is the progress of a batch of runs (reproduce, compare, sweep): a bar of runs
on a terminal, one line per finished run elsewhere (a pipe, a CI log).
"""

from __future__ import annotations

import sys
import time
from typing import Any

__all__ = ["SimProgress", "RunLines"]


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


class RunLines:
    """Progress of a batch of runs (``tcplab reproduce``, ``compare``, ``sweep``): called
    ``(done, total, label, failure=None)`` as each run finishes.

    Off a terminal (a pipe, a CI log) one line per finished run on stderr,
    ``[k/N] LABEL done (T s)`` (T: wall seconds since the batch started) or
    ``[k/N] LABEL: FAILED: why``, and ``all N runs done; WHAT`` after the last, so a log
    never sits silent for the length of the batch. On a terminal a rich bar of runs instead
    (``bar=False``: nothing, for a command that draws its own); failures still get their
    line. ``quiet``: only the failures' lines.
    """

    def __init__(
        self,
        total: int,
        *,
        title: str = "runs",
        what: str = "writing the results",
        quiet: bool = False,
        bar: bool = True,
        stream: Any = None,
        tty: bool | None = None,
    ):
        self.total = total
        self.what = what
        self.quiet = quiet
        self.stream = stream
        self.tty = (sys.stderr.isatty() and sys.stdout.isatty()) if tty is None else tty
        self.started = time.perf_counter()
        self.bar: Any = None
        self.task: Any = None
        if not quiet and self.tty and bar:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(
                TextColumn(f"[bold]{title}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("runs"),
                TimeElapsedColumn(),
                TextColumn("{task.description}"),
                console=Console(stderr=True),
                transient=True,
            )
            self.bar.start()
            self.task = self.bar.add_task("", total=total)

    def _say(self, line: str) -> None:
        if self.bar is not None:
            self.bar.console.print(line, markup=False, highlight=False)
            return
        stream = self.stream if self.stream is not None else sys.stderr
        print(line, file=stream, flush=True)

    def __call__(self, done: int, total: int, label: str, failure: str | None = None) -> None:
        if failure is not None:
            self._say(f"[{done}/{total}] {label}: FAILED: {failure}")
        elif not self.quiet and not self.tty:
            self._say(f"[{done}/{total}] {label} done ({time.perf_counter() - self.started:.0f} s)")
        last = done == total
        if self.bar is not None:
            self.bar.update(self.task, completed=done, description=self.what if last else label)
        elif last and not self.quiet and not self.tty:
            self._say(f"all {total} run{'s' if total != 1 else ''} done; {self.what}")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None

    def __enter__(self) -> RunLines:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

"""One forked worker process per job, a few at a time: what ``compare``, ``reproduce`` and
``sweep`` run simulations in.

The model: each job runs ``fn(job)`` in its own child process (fork where the platform has
it, so the child inherits the imported modules and starts in a few milliseconds; spawn
elsewhere), at most ``jobs`` children at a time. Outcomes come back through a pipe as the
children finish, in completion order: :func:`map_in_processes` yields ``(index, outcome)``.

Isolation: a job whose function raises, whose result cannot be pickled, or whose process
dies (killed by a signal, ``os._exit``, an abort in native code) yields a
:class:`WorkerFailure` with a one-line reason; the other jobs are unaffected.

Signals (:mod:`tcplab.signals`): children ignore SIGINT (Ctrl-C in a terminal reaches the
whole process group; the parent decides) and take SIGTERM's default action; the parent
forks with both signals blocked, so none lands in an after-fork hook. On Linux each child
asks the kernel to SIGKILL it when the parent dies (``PR_SET_PDEATHSIG``), even by SIGKILL.
When the parent stops iterating (an exception, KeyboardInterrupt, SIGTERM as
:class:`~tcplab.signals.Terminated`, or the generator being closed), every running child is
terminated and reaped before the exception propagates: none outlives the caller.

Floor 0 (a leaf, DESIGN.md's "Layout"): imports only :mod:`tcplab.signals`.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import wait as wait_for_any
from typing import Any

from tcplab.signals import raise_if_terminated, signals_blocked

__all__ = [
    "WorkerFailure",
    "map_in_processes",
    "guided_batches",
    "die_with_parent",
    "death_reason",
    "stop_process",
]


@dataclass(frozen=True)
class WorkerFailure:
    """A job that produced no outcome, and why (one line)."""

    reason: str


def guided_batches(n_jobs: int, workers: int, max_batch: int) -> list[int]:
    """Sizes of consecutive batches that cover ``n_jobs`` jobs, for callers that run several
    jobs in one process: guided self-scheduling, each batch a ``1 / (3 x workers)`` share of
    the jobs not yet handed out, between 1 and ``max_batch``: few processes while there is
    much to do, single jobs at the end so that no worker is left with a long batch while the
    others idle."""
    sizes: list[int] = []
    left = n_jobs
    while left > 0:
        size = max(1, min(max_batch, -(-left // (3 * max(1, workers)))))
        sizes.append(size)
        left -= size
    return sizes


def die_with_parent(parent_pid: int) -> None:
    """Linux: have the kernel SIGKILL this worker if the parent process dies (even by
    SIGKILL, when no cleanup of ours can run). Best effort; elsewhere a no-op."""
    try:
        import ctypes

        pr_set_pdeathsig = 1  # <linux/prctl.h>
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)


def _worker_main(conn: Any, fn: Callable[[Any], Any], job: Any, parent_pid: int) -> None:
    """Body of a worker process: run ``fn(job)``, send back its outcome or a WorkerFailure."""
    # The parent decides when workers stop: Ctrl-C in a terminal reaches the whole process
    # group, and the parent then terminates its workers (SIGTERM, default action).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})  # blocked by the parent's fork
    die_with_parent(parent_pid)
    # What the worker inherited (the parent's modules, and in a replay every result so far)
    # is the parent's to keep: out of the collector's sight, so that the worker's own
    # collections walk only the objects it makes (a full collection walked them all)
    gc.freeze()
    try:
        outcome = fn(job)
    except Exception as e:  # noqa: BLE001 - any failure is this job's, reported in one line
        outcome = WorkerFailure(" ".join(f"{type(e).__name__}: {e}".splitlines()))
    try:
        conn.send(outcome)
    except Exception as e:  # noqa: BLE001 - e.g. a result that cannot be pickled
        conn.send(WorkerFailure(f"result could not be sent back: {type(e).__name__}: {e}"))
    conn.close()


def death_reason(exitcode: int | None) -> str:
    """Why a worker that sent nothing ended: the signal that killed it, or its exit status."""
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"worker process was killed by {name}"
    return f"worker process exited with status {exitcode} without a result"


def stop_process(process: Any) -> None:
    """Terminate a worker and reap it (SIGKILL if it ignores SIGTERM for 5 s)."""
    if process.is_alive():
        process.terminate()
        process.join(5)
        if process.is_alive():
            process.kill()
    process.join()


def _context() -> Any:
    # fork where the platform has it: workers inherit the imported modules (no re-import of
    # pandas/the engine per worker) and callers need no `__main__` guard. Elsewhere, spawn.
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def map_in_processes(
    work: Sequence[Any],
    fn: Callable[[Any], Any],
    jobs: int,
    *,
    name: Callable[[int], str] | None = None,
    when_started: Callable[[], None] | None = None,
) -> Iterator[tuple[int, Any]]:
    """``fn(work[i])`` for each i, each in its own worker process, at most ``jobs`` at a
    time; yields ``(i, outcome)`` as each finishes (outcome: ``fn``'s return value or a
    :class:`WorkerFailure`). ``fn`` must be a top-level function (picklable under spawn).
    ``name(i)`` names the process (``ps``). ``when_started()`` is called once, in this
    process, when the first workers are running: work the caller needs later (an import)
    done while they run instead of after; the processes forked after it inherit what it did."""
    ctx = _context()
    pending = deque(range(len(work)))
    running: dict[int, tuple[Any, Any]] = {}
    # Workers that sent their outcome and are exiting: reaped as they go, without holding a
    # slot (a worker's exit, unmapping a large inherited address space, takes milliseconds
    # that the next job need not wait for).
    exiting: list[Any] = []
    jobs = max(1, int(jobs))
    try:
        while pending or running:
            while pending and len(running) < jobs:
                i = pending.popleft()
                receiver, sender = ctx.Pipe(duplex=False)
                process = ctx.Process(
                    target=_worker_main,
                    args=(sender, fn, work[i], os.getpid()),
                    name=name(i) if name is not None else f"tcplab-worker-{i}",
                    daemon=True,
                )
                with signals_blocked():  # a signal during fork must not land in an after-fork hook
                    process.start()
                sender.close()
                running[i] = (process, receiver)
            if when_started is not None:
                started, when_started = when_started, None
                started()
            waitables = [x for process, conn in running.values() for x in (conn, process.sentinel)]
            ready = wait_for_any(waitables, timeout=1.0)
            raise_if_terminated()
            exiting = [p for p in exiting if p.exitcode is None]  # reaps those that ended
            for i, (process, conn) in list(running.items()):
                if conn not in ready and process.sentinel not in ready:
                    continue
                outcome: Any = None
                received = False
                try:
                    if conn.poll():
                        outcome = conn.recv()
                        received = True
                except (EOFError, OSError):
                    received = False
                except Exception as e:  # noqa: BLE001 - a result that does not unpickle
                    outcome = WorkerFailure(f"result could not be read: {type(e).__name__}: {e}")
                    received = True
                if not received and process.is_alive():
                    continue  # woke for the pipe, nothing complete yet
                conn.close()
                del running[i]
                if received:
                    exiting.append(process)
                else:
                    process.join()
                yield i, (outcome if received else WorkerFailure(death_reason(process.exitcode)))
    finally:
        for process, conn in running.values():
            stop_process(process)
            conn.close()
        for process in exiting:
            process.join(5)
            if process.exitcode is None:
                stop_process(process)

"""SIGTERM handled like SIGINT: clean up, then exit with the signal's conventional code.

The model: Python turns SIGINT into :class:`KeyboardInterrupt`, and every cleanup path in
tcplab (the atomic run-directory writer removing its temporary directory, ``compare``
stopping its worker processes) already runs on it. SIGTERM, what ``kill``, ``timeout``,
systemd and CI runners send, would by default end the process at once, leaving workers
orphaned (parent 1) and a hidden ``.NAME.XXXX.tmp/`` behind. :func:`sigterm_as_interrupt`
installs a handler that raises :class:`Terminated`, a ``KeyboardInterrupt`` subclass, so
the same cleanup runs for both signals.

Exit codes follow the shell convention 128 + signal number: 130 after SIGINT, 143 after
SIGTERM. A caller (a shell, ``timeout``, a CI step) then sees the same status it would see had
the process been killed by that signal, and can tell "stopped by the user" (130) from "stopped
by a supervisor" (143), while tcplab still gets to clean up first.

The engine returns to its binding every 1024 events, and the binding checks for a pending
signal (``py.check_signals()``, which runs these handlers) every 5 ms of wall time: a
simulation of any length stops within milliseconds of Ctrl-C or SIGTERM, in the process that
runs it (``tcplab run``, ``reproduce -j 1``, ``validate``'s simulation). Forked workers
(:mod:`tcplab.procpool`) take SIGTERM's default action and end at once.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = [
    "Terminated",
    "sigterm_as_interrupt",
    "exit_code_for",
    "raise_if_terminated",
    "signals_blocked",
    "terminated_seen",
]

#: Set by the handler: a SIGTERM whose exception Python swallowed (it can land in a callback
#: whose exceptions are "ignored", such as the logging module's after-fork hook) is not lost;
#: loops that wait call :func:`raise_if_terminated`.
_received = False


class Terminated(KeyboardInterrupt):
    """Raised in the main thread when the process receives SIGTERM."""

    signum = signal.SIGTERM


def _raise_terminated(signum: int, frame: FrameType | None) -> None:  # noqa: ARG001 - signal handler signature
    global _received
    _received = True
    raise Terminated()


def terminated_seen() -> bool:
    """True once SIGTERM has arrived while :func:`sigterm_as_interrupt` was active."""
    return _received


def raise_if_terminated() -> None:
    """Raise :class:`Terminated` if SIGTERM arrived but its exception was swallowed."""
    if _received:
        raise Terminated()


@contextmanager
def signals_blocked() -> Iterator[None]:
    """Hold SIGINT and SIGTERM pending (not lost) while the body runs, e.g. around a fork,
    whose after-fork hooks swallow exceptions; they are delivered when the body ends. A forked
    child inherits the blocked mask and unblocks it itself once its handlers are set."""
    mask = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, mask)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While active (main thread only), SIGTERM raises :class:`Terminated`."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    global _received
    _received = False
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def exit_code_for(exc: KeyboardInterrupt) -> int:
    """128 + the signal number: 143 for SIGTERM, 130 for SIGINT (Ctrl-C)."""
    if isinstance(exc, Terminated):
        return 128 + int(signal.SIGTERM)
    return 128 + int(signal.SIGINT)

"""The processes a kernel run starts (delay lines, agents, the testbed's commands): each in
its own process group, SIGTERMed by the kernel if the run dies, and stopped in order.

The model. A child is started in its own session (so a terminal's Ctrl-C reaches only the
parent, which stops its children in order) with ``prctl(PR_SET_PDEATHSIG, SIGTERM)`` made
between fork and exec (:func:`pdeathsig_preexec`; kept across ``ip netns exec``'s execve):
if the run is killed outright (SIGKILL), its children stop by themselves and only its
namespaces remain, which ``tcplab kernel cleanup`` removes. Stopping is SIGTERM, up to
:data:`KILL_GRACE_S` to exit, then SIGKILL (:func:`kill_group` for a group leader,
:func:`kill_pids` for processes found in a namespace).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from typing import Any

__all__ = ["pdeathsig_preexec", "spawn", "alive", "kill_group", "kill_pids", "KILL_GRACE_S"]

#: How long a stopped process has between SIGTERM and SIGKILL.
KILL_GRACE_S = 3.0
_PR_SET_PDEATHSIG = 1


def pdeathsig_preexec() -> Any:
    """A ``preexec_fn`` that asks the kernel to SIGTERM the child when this process dies
    (``prctl(PR_SET_PDEATHSIG)``; kept across ``ip netns exec``'s execve), or None where
    libc cannot be loaded. libc is loaded here, in the parent: the child, between fork and
    exec, only makes the call. Every process a run starts (delay lines, agents, the
    testbed's) uses it, so a SIGKILLed run leaves only its namespaces behind, which
    ``tcplab kernel cleanup`` removes."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    sig = int(signal.SIGTERM)

    def child() -> None:
        prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0)

    return child


def spawn(argv: Sequence[str], **kwargs: Any) -> subprocess.Popen:
    """Start a child in its own process group, SIGTERMed if this process dies."""
    return subprocess.Popen(list(argv), start_new_session=True, preexec_fn=pdeathsig_preexec(), **kwargs)  # noqa: PLW1509


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie child of ours counts as gone once reaped
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:
        return True


def kill_group(pid: int, grace_s: float = KILL_GRACE_S) -> None:
    """SIGTERM the process group of ``pid`` (a leader started by :func:`spawn`), then SIGKILL."""
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 1.0)):
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            # not a group leader (started by someone else's Popen): the process alone
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not alive(pid):
                return
            time.sleep(0.02)


def kill_pids(pids: Sequence[int], grace_s: float = KILL_GRACE_S) -> None:
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 1.0)):
        live = [p for p in pids if alive(p)]
        if not live:
            return
        for p in live:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and any(alive(p) for p in live):
            time.sleep(0.02)

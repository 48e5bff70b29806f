"""Errors of kernel mode (``tcplab kernel run``, ``tcplab validate``).

:class:`KernelError`: the kernel path failed (a command failed, a tool or the delay line is
missing, a name it would create exists, not root); the CLI prints it as one line and exits 1
(2 for "needs root"). :class:`KernelUnsupported`: the scenario asks for something the kernel
path cannot build on this machine (sch_fq absent, a CPU model, an HLS application, ...);
raised by :func:`tcplab.kernel.plan.make_plan` before anything is created, its message names
the field path and the value. :class:`KernelUsageError`: an option of kernel mode itself is
wrong (the namespace prefix): exit 2, as for any usage error, before anything runs.
:class:`KernelRunBroken`: the run's namespaces or processes went away under it
(:mod:`tcplab.kernel.watch`): exit 1, nothing written.
"""

from __future__ import annotations

__all__ = ["KernelError", "KernelUnsupported", "KernelUsageError", "KernelRunBroken"]


class KernelError(RuntimeError):
    """A kernel-mode run could not be set up or carried out (one line, no traceback)."""


class KernelUnsupported(KernelError):
    """The scenario needs something kernel mode cannot build here; nothing was created."""


class KernelUsageError(KernelError):
    """An option of kernel mode is wrong (``--prefix``); one line, exit 2, nothing created."""


class KernelRunBroken(KernelError):
    """The run's namespaces or processes went away under it (a cleanup of its prefix, a kill):
    what it measured is not a run of the scenario; nothing is written."""

"""Errors of kernel mode (``tcplab kernel run``, ``tcplab validate``).

:class:`KernelError`: something on the machine failed or is missing (not root, a tool or
the delay line binary absent, a namespace that cannot be created, a process that died).
:class:`KernelUnsupported`: the scenario asks for something the kernel path cannot build
(raised before anything is created). Both are ``RuntimeError``s like
:class:`tcplab.errors.EngineError`; the CLI reports them on one line with exit code 1.
"""

from __future__ import annotations

__all__ = ["KernelError", "KernelUnsupported"]


class KernelError(RuntimeError):
    """A kernel-mode run could not be set up or carried out; the message is one line."""


class KernelUnsupported(KernelError):
    """The scenario needs something kernel mode cannot do (the message names the field)."""

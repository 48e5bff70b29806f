"""Kernel mode: run a scenario on the running Linux kernel's TCP, in network namespaces.

    >>> from tcplab.kernel import kernel_run, KernelOptions        # doctest: +SKIP
    >>> result = kernel_run("builtin:cubic-vs-bbr-lossy", options=KernelOptions(prefix="tl"))  # doctest: +SKIP

Modules: :mod:`~tcplab.kernel.env` (what the kernel offers, the quiet check),
:mod:`~tcplab.kernel.plan` (the topology as data, pure), :mod:`~tcplab.kernel.testbed`
(namespaces, links, qdiscs, nft, delay lines: up and down), :mod:`~tcplab.kernel.run`
(:func:`kernel_run`: the whole run, bounded in time), :mod:`~tcplab.kernel.delayline`,
:mod:`~tcplab.kernel.agent`, :mod:`~tcplab.kernel.measure`, :mod:`~tcplab.kernel.result`.
Everything is imported on first use: ``import tcplab`` stays light.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "kernel_run",
    "KernelResult",
    "KernelOptions",
    "KernelError",
    "KernelUnsupported",
    "KernelEnv",
    "probe",
    "make_plan",
    "Plan",
    "Testbed",
    "cleanup",
]

_LAZY = {
    "kernel_run": ("tcplab.kernel.run", "kernel_run"),
    "KernelResult": ("tcplab.kernel.result", "KernelResult"),
    "KernelOptions": ("tcplab.kernel.options", "KernelOptions"),
    "KernelError": ("tcplab.kernel.errors", "KernelError"),
    "KernelUnsupported": ("tcplab.kernel.errors", "KernelUnsupported"),
    "KernelEnv": ("tcplab.kernel.env", "KernelEnv"),
    "probe": ("tcplab.kernel.env", "probe"),
    "make_plan": ("tcplab.kernel.plan", "make_plan"),
    "Plan": ("tcplab.kernel.plan", "Plan"),
    "Testbed": ("tcplab.kernel.testbed", "Testbed"),
    "cleanup": ("tcplab.kernel.testbed", "cleanup"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tcplab.kernel' has no attribute {name!r}")

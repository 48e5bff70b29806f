"""Kernel mode: run a scenario on the running Linux kernel's TCP, in network namespaces.

    >>> from tcplab.kernel import kernel_run, KernelOptions        # doctest: +SKIP
    >>> result = kernel_run("builtin:cubic-vs-bbr-lossy", options=KernelOptions(prefix="tl"))  # doctest: +SKIP

Modules: :mod:`~tcplab.kernel.env` (what the kernel offers, the quiet check),
:mod:`~tcplab.kernel.plan` (the topology as data, pure), :mod:`~tcplab.kernel.testbed`
(namespaces, links, qdiscs, nft, delay lines: up and down), :mod:`~tcplab.kernel.run`
(:func:`kernel_run`: the whole run, bounded in time), :mod:`~tcplab.kernel.delayline`,
:mod:`~tcplab.kernel.agent`, :mod:`~tcplab.kernel.processes` (the run's children),
:mod:`~tcplab.kernel.measure`, :mod:`~tcplab.kernel.result`; ``tcplab validate``:
:mod:`~tcplab.kernel.verdicts` (the comparison, pure), :mod:`~tcplab.kernel.repeat`
(``--runs N``), :mod:`~tcplab.kernel.validate` (both worlds run and written),
:mod:`~tcplab.kernel.tolerances`. Everything is imported on first use: ``import tcplab``
stays light.

Floor 6 (the commands' packages): may import runner and compare, views (the validation's
views, :mod:`tcplab.views.validate`, read a :class:`~tcplab.kernel.verdicts.Validation` as
data and import nothing of this package), results, the engine, the scenario and the
leaves; today also :mod:`tcplab.diagnose`'s parsers of ss, tc and nstat texts
(:mod:`~tcplab.kernel.measure`, :mod:`~tcplab.kernel.sampler`), an import inside floor 6
that ARCH22's table does not list yet. Never the commands; a submodule never imports this
``__init__``.
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

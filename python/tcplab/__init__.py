"""tcplab: a lab for TCP congestion control.

Describe a network, its hosts and its traffic in a scenario file; tcplab simulates it with a
deterministic packet-level engine whose TCP, CUBIC and BBR follow Linux, and returns what
happened per flow and over time, in the names ``ss``, ``nstat`` and ``tc -s`` use.

    >>> import tcplab
    >>> sc = tcplab.load_scenario("builtin:cubic-vs-bbr-lossy", ["flows.0.cc=bbr"])
    >>> result = tcplab.run(sc)                      # doctest: +SKIP
    >>> result.flows[["name", "cc", "goodput_bps"]]  # doctest: +SKIP
    >>> result.write("runs/bbr")                     # doctest: +SKIP
    >>> cmp = tcplab.compare(["builtin:cubic-vs-bbr-lossy"], ["flows.0.cc=cubic,bbr"])  # doctest: +SKIP
    >>> cmp.table                                    # doctest: +SKIP
    >>> sw = tcplab.sweep("cubic-vs-bbr-lossy", grid={"flows.0.cc": ["cubic", "bbr"]})  # doctest: +SKIP
    >>> sw.table                                     # doctest: +SKIP
    >>> rec = tcplab.recommend("runs/sweep", choose=["flows.0.cc"], maximize="goodput",
    ...                        subject_to=["p99 RTT < 175 ms"])  # doctest: +SKIP
    >>> rec.sentence                                 # doctest: +SKIP

Modules: :mod:`~tcplab.units` (human units), :mod:`~tcplab.scenario` (the schema),
:mod:`~tcplab.loader` and :mod:`~tcplab.overrides` (reading, ``--set``), :mod:`~tcplab.routing`,
:mod:`~tcplab.engine` (the bridge to ``tcplab._core``), :mod:`~tcplab.results`,
:mod:`~tcplab.views` (plots, report), :mod:`~tcplab.compare`, :mod:`~tcplab.sweep`, :mod:`~tcplab.recommend`,
:mod:`~tcplab.cli`.

This module is the Python API's facade, above every floor of the package (DESIGN.md's
"Layout"): it imports nothing when it is imported, and loads each name of ``__all__`` from
the module that defines it on first use (PEP 562). No module of tcplab imports it.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

__all__ = [
    "__version__",
    "load_scenario",
    "run",
    "compare",
    "Scenario",
    "Result",
    "CompareResult",
    "sweep",
    "load_sweep",
    "SweepResult",
    "recommend",
    "ScenarioError",
    "EngineError",
]

# The facade imports nothing when it is imported (PEP 562): `import tcplab` is quick, and no
# module of tcplab imports it, so it sits above every floor without a loop. Each name is
# imported on first use from the module that defines it.
_LAZY = {
    "__version__": ("tcplab.version", "__version__"),
    "load_scenario": ("tcplab.loader", "load_scenario"),
    "run": ("tcplab.runner", "run"),
    "Scenario": ("tcplab.scenario", "Scenario"),
    "Result": ("tcplab.results", "Result"),
    "CompareResult": ("tcplab.compare", "CompareResult"),
    "load_sweep": ("tcplab.sweep", "load_sweep"),
    "SweepResult": ("tcplab.sweep", "SweepResult"),
    "ScenarioError": ("tcplab.errors", "ScenarioError"),
    "EngineError": ("tcplab.errors", "EngineError"),
}

# Modules that share their name with the function they hold: tcplab.compare(...) is
# tcplab.compare.compare(...), tcplab.sweep(...) tcplab.sweep.sweep(...). Each module is
# callable, and tcplab.NAME is the module itself: importing a module binds tcplab.NAME to it,
# so the attribute and the module must be one object whichever comes first.
_CALLABLE_MODULES = ("compare", "sweep", "recommend")


def __getattr__(name: str) -> Any:
    if name in _CALLABLE_MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _LAZY:
        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        # a submodule, as `import tcplab; tcplab.scenario.Scenario` found it when the
        # facade imported its modules eagerly
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

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
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

from tcplab.compare import compare
from tcplab.errors import EngineError, ScenarioError
from tcplab.loader import load_scenario
from tcplab.runner import run
from tcplab.scenario import Scenario

if TYPE_CHECKING:
    from tcplab.compare import CompareResult
    from tcplab.results import Result

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

# Result pulls in pandas/pyarrow; it is imported on first use so that `import tcplab` (and
# `tcplab scenarios`) stays quick. (run and compare import them when called.)
_LAZY = {
    "Result": ("tcplab.results", "Result"),
    "CompareResult": ("tcplab.compare", "CompareResult"),
    "load_sweep": ("tcplab.sweep", "load_sweep"),
    "SweepResult": ("tcplab.sweep", "SweepResult"),
}


def __getattr__(name: str) -> Any:
    if name in ("sweep", "recommend"):
        # the packages tcplab.sweep and tcplab.recommend, callable: tcplab.sweep(...) is
        # tcplab.sweep.sweep(...) (importing one binds tcplab.NAME to the module, so the two
        # must be one object)
        import importlib

        return importlib.import_module(f"tcplab.{name}")
    return _lazy(name)


def _lazy(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tcplab' has no attribute {name!r}")

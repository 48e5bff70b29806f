"""Results: what a run produced (:class:`Result`), its run directory and its counters.

Data flows one way (DESIGN.md): scenario -> simulation -> results -> views. This package
never imports :mod:`tcplab.views` or :mod:`tcplab.exports`; a :class:`Result` made by
:func:`tcplab.run` carries the view writer (plots, report.html) and the export writer
(run.flent.gz, iperf3-FLOW.json) that ``Result.write`` calls.

Modules: :mod:`~tcplab.results.result` (the :class:`Result` DataFrames and summary),
:mod:`~tcplab.results.rundir` (writing a run directory atomically),
:mod:`~tcplab.results.counters` (nstat text), :mod:`~tcplab.results.apps` (the
applications' summaries, tables and headline metrics), and the other tools' texts a run directory
holds: :mod:`~tcplab.results.tc` (``tc -s qdisc``), :mod:`~tcplab.results.ethtool`
(``ethtool -S``), :mod:`~tcplab.results.procstat` (``/proc/stat``'s cpu lines),
:mod:`~tcplab.results.ss` and :mod:`~tcplab.results.ss_samples` (``ss -tin``, a kernel run's
samples), :mod:`~tcplab.results.paths` (what a flow's path allows: payload ceiling, base RTT).

Floor 3 (DESIGN.md's "Layout"): this package imports the floors below it (the leaves,
:mod:`tcplab.scenario`, :mod:`tcplab.engine`), never views, exports, runner or compare, nor
anything above them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tcplab.results.apps import AppResult, Headline, headline, headline_text
    from tcplab.results.result import (
        RUN_FILES,
        SUMMARY_FLOW_KEYS,
        SUMMARY_HOST_KEYS,
        SUMMARY_LINK_KEYS,
        ExportWriter,
        Result,
        ViewWriter,
        _interval_rate,
    )
    from tcplab.results.rundir import check_output_dir, write_dir_atomically

#: name -> the module that defines it. Imported on first use (PEP 562), so that
#: ``tcplab.results.rundir`` (checking an output directory before a run) does not load
#: pandas with this package (issue 27: a refused ``-o`` costs the CLI's start, not a run's).
_LAZY = {
    "AppResult": "tcplab.results.apps",
    "Headline": "tcplab.results.apps",
    "headline": "tcplab.results.apps",
    "headline_text": "tcplab.results.apps",
    "Result": "tcplab.results.result",
    "RUN_FILES": "tcplab.results.result",
    "SUMMARY_FLOW_KEYS": "tcplab.results.result",
    "SUMMARY_HOST_KEYS": "tcplab.results.result",
    "SUMMARY_LINK_KEYS": "tcplab.results.result",
    "ViewWriter": "tcplab.results.result",
    "ExportWriter": "tcplab.results.result",
    "_interval_rate": "tcplab.results.result",
    "check_output_dir": "tcplab.results.rundir",
    "write_dir_atomically": "tcplab.results.rundir",
}

__all__ = [
    "AppResult",
    "Headline",
    "headline",
    "headline_text",
    "Result",
    "RUN_FILES",
    "SUMMARY_FLOW_KEYS",
    "SUMMARY_HOST_KEYS",
    "SUMMARY_LINK_KEYS",
    "ViewWriter",
    "ExportWriter",
    "check_output_dir",
    "write_dir_atomically",
    "_interval_rate",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))

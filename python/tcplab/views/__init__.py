"""Views of results: static plots (:mod:`~tcplab.views.plots`) and report.html
(:mod:`~tcplab.views.report`), with the path's limits they draw (:mod:`~tcplab.results.paths`)
and the episodes they mark (:mod:`~tcplab.views.episodes`), all drawn with the one public
drawing module, :mod:`~tcplab.views.drawing`.

Floor 4 (DESIGN.md's "Layout"): views import results and the floors below (scenario, engine,
the leaves), never exports (the other package of their floor), runner, compare, the
commands' packages or the commands. Views import results, never the reverse:
:func:`write_run_views` is the writer :func:`tcplab.run` hands to each
:class:`~tcplab.results.Result`, so that ``Result.write`` produces the plots and the report
without the results package knowing about them. matplotlib and jinja2 load on first use.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tcplab.results import Result

__all__ = ["write_run_views"]


def write_run_views(result: Result, out: Path, *, plots: bool = True) -> None:
    """Write ``plots/*.png`` (unless ``plots`` is false) and a self-contained
    ``report.html`` (the same plots inline) into ``out``."""
    from tcplab.views.report import write_report

    rendered = []
    if plots:
        from tcplab.views.plots import run_plots, write_plots

        rendered = run_plots(result)
        write_plots(rendered, out / "plots")
    write_report(result, out / "report.html", rendered)

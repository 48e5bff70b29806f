"""A sweep's views (plots, report.html): written by :func:`write_sweep_views`.

Not drawn yet in this commit: the table (sweep.parquet) is the sweep's result; the plots
(metric against one parameter with a band over seeds, a heatmap for two) follow.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["write_sweep_views"]


def write_sweep_views(result: Any, out: Path) -> None:  # noqa: ARG001 - filled in by the next commit
    """Write the sweep's plots and report into ``out`` (nothing yet)."""

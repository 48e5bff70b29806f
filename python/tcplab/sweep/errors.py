"""The error of a sweep that cannot go on: a one-line :class:`~tcplab.errors.ScenarioError`
(exit 2) naming the option or the directory at fault."""

from __future__ import annotations

from tcplab.errors import ScenarioError

__all__ = ["SweepError"]


class SweepError(ScenarioError):
    """A sweep that cannot go on (a directory or plan mismatch, a Dask cluster problem)."""

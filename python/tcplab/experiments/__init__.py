"""The five stories of ``../shared/seeds`` as ready experiments (``tcplab reproduce``).

Each experiment is a package here (see :mod:`tcplab.experiments.base`): scenario files, the
story's claims (``claims.yaml``) and the code that sets tcplab's result beside each claim.
Names use hyphens on the command line and underscores as package names; the list, the seed
stories and :func:`load` are in :mod:`~tcplab.experiments.catalog`.
:mod:`~tcplab.experiments.reproduce` plans and runs them, judges the claims, cross-checks
runs with ``tcplab diagnose`` and writes the reports (:mod:`tcplab.views.reproduce`).

Floor 6 (the commands' packages): may import :mod:`tcplab.diagnose` (the reports'
cross-checks), runner and compare, views, results, the engine, the scenario and the
leaves; never another command package nor the commands. A submodule imports the submodule
that defines a name, never this ``__init__`` (the experiments read
:data:`~tcplab.experiments.catalog.STORIES` from the catalog).
"""

from __future__ import annotations

from tcplab.experiments.catalog import NAMES, STORIES, directory, load, load_all

__all__ = ["NAMES", "STORIES", "load", "load_all", "directory"]

"""The experiments ``tcplab reproduce`` knows: their names, seed stories and packages.

Each experiment is a package of :mod:`tcplab.experiments` (hyphens on the command line,
underscores as package names) whose ``EXPERIMENT`` is an
:class:`~tcplab.experiments.base.Experiment`; :func:`load` imports it by name. The commands
read :data:`NAMES` from here when they run (tests replace it with their own list).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING

from tcplab.errors import ScenarioError

if TYPE_CHECKING:
    from tcplab.experiments.base import Experiment

__all__ = ["NAMES", "STORIES", "load", "load_all", "directory"]

#: The experiments in the order ``--all`` runs and the index lists them: their stories' order
#: (story 000 to story 004, as docs/stories.md numbers them).
NAMES: tuple[str, ...] = (
    "cluster-bbr-timeouts",
    "cilium-bbr-demo",
    "bandwidth-manager",
    "bbr-vm-contention",
    "microburst-ring",
)
#: Each experiment's seed story (file name in ../shared/seeds, as docs/stories.md names them).
STORIES: dict[str, str] = {
    "cilium-bbr-demo": "001_269cff1e2f044d91.txt",
    "bandwidth-manager": "002_d8d5eabee45f1b78.txt",
    "bbr-vm-contention": "003_5b3ee3091019a47d.txt",
    "microburst-ring": "004_1d56a092f5578518.txt",
    "cluster-bbr-timeouts": "000_1ac6b37f8cbb72d4.txt",
}


def directory(name: str) -> Path:
    """The experiment's directory (scenario files and claims.yaml)."""
    return Path(__file__).parent / name.replace("-", "_")


def load(name: str) -> Experiment:
    """The experiment named ``name`` (one of :data:`NAMES`)."""
    if name not in NAMES:
        raise ScenarioError(
            f"no experiment named {name!r}", path="NAME", value=name, expected="one of " + ", ".join(NAMES)
        )
    module = importlib.import_module(f"tcplab.experiments.{name.replace('-', '_')}")
    return module.EXPERIMENT


def load_all() -> list[Experiment]:
    return [load(n) for n in NAMES]

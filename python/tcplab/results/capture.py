"""A capture of a run as at a moment: the tool texts an operator would have taken then.

The model: ``tcplab diagnose`` reads a run directory's tool texts, which are as at the end of
the run. An incident is usually looked at while it happens: someone runs ``ss -tin`` at a
moment t. :func:`write_capture` writes a directory holding the run's texts with ``ss -tin``
as at t (:mod:`tcplab.results.ss`, the flows' last samples at or before t); the other texts
(``counters.txt``, ``tc-qdisc-NODE.txt``, ``ethtool-S-HOST.txt``, ``proc-stat-HOST.txt``)
are the end-of-run counters, since the engine reports those only at the end, and
``README.txt`` says so. ``summary.json`` is copied for what diagnose reads of it (each
node's congestion control). The directory is marked as a capture (``.tcplab-run`` with kind
``capture``): diagnose reads it as it reads a run directory (nodes apart), and ``--force``
never replaces it (it is not a run directory).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from tcplab.results.rundir import MARKER

if TYPE_CHECKING:
    from tcplab.results.result import Result

__all__ = ["write_capture", "capture_name", "CAPTURE_KIND"]

#: The marker's kind for a capture directory.
CAPTURE_KIND = "capture"


def capture_name(label: str, at_s: float) -> str:
    """``LABEL-at-<t>s`` (t with up to 6 significant digits: ``bbr-at-30s``, ``x-at-1.5s``)."""
    return f"{label}-at-{at_s:g}s"


def _is_capture(directory: Path) -> bool:
    try:
        return json.loads((directory / MARKER).read_text(encoding="utf-8")).get("kind") == CAPTURE_KIND
    except (OSError, ValueError, AttributeError):
        return False


def write_capture(result: Result, directory: Path, at_s: float) -> Path:
    """Write ``directory`` (replacing an earlier capture there, nothing else): ``result``'s
    tool texts with ``ss -tin`` as at ``at_s`` seconds into the run. Returns its path."""
    from tcplab.version import __version__

    directory = Path(directory)
    if directory.exists():
        if not _is_capture(directory):
            raise FileExistsError(f"{directory} exists and is not a tcplab capture; not replacing it")
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    at_ns = int(round(at_s * 1e9))
    (directory / MARKER).write_text(
        json.dumps({"tcplab": __version__, "kind": CAPTURE_KIND, "at_s": at_s}) + "\n", encoding="utf-8"
    )
    (directory / "counters.txt").write_text(result.nstat_text(), encoding="utf-8")
    for name, text in result.stats_files(at_ns=at_ns).items():
        (directory / name).write_text(text, encoding="utf-8")
    (directory / "summary.json").write_text(
        json.dumps(result.summary, indent=2, allow_nan=False) + "\n", encoding="utf-8"
    )
    (directory / "README.txt").write_text(
        f"A capture of the run '{result.title}' as an operator would have taken it {at_s:g} s into the run:\n"
        f"ss-tin-NODE.txt: `ss -tin` as at t = {at_s:g} s (each flow's last sample at or before then).\n"
        "counters.txt, tc-qdisc-NODE.txt, ethtool-S-HOST.txt, proc-stat-HOST.txt: as at the end of the run\n"
        "(the engine reports those counters only at the end). summary.json: the run's summary.\n"
        f"Read it with: tcplab diagnose {directory.name}\n",
        encoding="utf-8",
    )
    return directory

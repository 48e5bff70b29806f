"""The run directory: written atomically, never half-written, never over someone else's files.

``write_dir_atomically(DIR, fill)`` lets ``fill`` write into a temporary sibling of DIR and
renames it into place at the end; on any failure (or SIGINT/SIGTERM, see
:mod:`tcplab.signals`) nothing is left behind (not even the parents it created).

What may be replaced (``--force``, ``overwrite=True``): only a directory that tcplab itself
wrote. Every run, comparison and reproduce directory carries a marker file, ``.tcplab-run`` (JSON:
``{"tcplab": VERSION, "kind": "run" | "compare" | "reproduce" | "validate" | "sweep"}``), and
holds only the files tcplab writes there. :func:`check_output_dir` refuses, with a one-line error and before anything is
simulated:

* the current directory, any of its parents, and the filesystem root (``-o .``, ``-o ..``,
  a scenario named ``..`` under ``runs/``), overwrite or not;
* a symbolic link, or anything that is not a directory;
* with ``overwrite``: a non-empty directory without the marker, or with an entry tcplab
  does not write there (a file the user added). Run directories written before the marker
  existed are recognised by their exact file set (summary.json with ``tcplab_version``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from tcplab.errors import ScenarioError
from tcplab.literals import json_loads
from tcplab.output_files import (
    DIRECTORY_RESERVE_BYTES,
    check_path_length,
    new_dir_mode,
    output_error,
    write_file_atomically,
)

__all__ = [
    "write_dir_atomically",
    "check_output_dir",
    "write_marker",
    "in_target",
    "foreign_entry",
    "MARKER",
    "RUN_ENTRIES",
    "RUN_ENTRY_PATTERN",
    "COMPARE_ENTRIES",
    "REPRODUCE_ENTRIES",
    "VALIDATE_ENTRIES",
    "SWEEP_ENTRIES",
    "SWEEP_DIRS",
]

#: The file that marks a directory as written by tcplab.
MARKER = ".tcplab-run"

#: Top-level entries tcplab writes in a run directory (``plots`` is a directory of images).
RUN_ENTRIES = frozenset(
    {
        MARKER,
        "summary.json",
        "metadata.json",
        "scenario.yaml",
        "scenario.resolved.json",
        "flows.parquet",
        "timeseries.parquet",
        "queues.parquet",
        "hosts.parquet",
        "counters.txt",
        "plots",
        "report.html",
        "kernel.json",  # a kernel run's (tcplab.kernel.result)
        "delayline.json",  # a kernel run's delay lines' own lateness (tcplab.kernel.delayline)
        "run.flent.gz",  # flent's data file (tcplab.exports.flent)
    }
)
#: Per-node tool texts in a run directory (``tc-qdisc-NODE.txt``, ``ethtool-S-HOST.txt``,
#: ``ethtool-k-HOST.txt``,
#: ``proc-stat-HOST.txt``, ``ss-tin-NODE.txt``, ``cilium-status-NODE.txt``; node names are
#: ``[A-Za-z0-9_.-]+``) and the applications' tables (``app_TABLE.parquet``, engine table names
#: are ``[a-z0-9_]+``); a kernel run's ``ss-samples-NODE.txt`` (every ss sample of the node);
#: ``iperf3-FLOW.json`` per bulk flow (tcplab.exports.iperf3: names reduced to ``[A-Za-z0-9_.-]``);
#: ``FLOW.pcap``, a flow's packet capture (``tcplab run --pcap FLOW``, flow names ``[A-Za-z0-9_.-]+``).
RUN_ENTRY_PATTERN = re.compile(
    r"(?:(?:tc-qdisc|ethtool-S|ethtool-k|proc-stat|ss-tin|ss-samples|cilium-status)-[A-Za-z0-9_.-]+\.txt"
    r"|app_[a-z0-9_]+\.parquet|iperf3-[A-Za-z0-9_.-]+\.json|[A-Za-z0-9_.-]+\.pcap)\Z"
)
#: Top-level files tcplab writes in a comparison directory, besides one run directory per variant.
COMPARE_ENTRIES = frozenset({MARKER, "compare.json", "compare.png", "report.html"})
#: Top-level files of a ``tcplab reproduce`` directory, besides one directory per experiment
#: (named ``[a-z0-9-]+``) holding :data:`EXPERIMENT_ENTRIES`, ``plots/``, ``runs/RUN/`` (run directories)
#: and ``captures/LABEL-at-<t>s/`` (a run's texts with ss as at t, :data:`CAPTURE_ENTRIES`).
REPRODUCE_ENTRIES = frozenset({MARKER, "index.html", "index.md", "index.json"})
#: Top-level files of a ``tcplab validate`` directory, besides ``plots/`` and the run directories
#: ``sim/`` and ``kernel/`` (:mod:`tcplab.views.validate`).
VALIDATE_ENTRIES = frozenset({MARKER, "report.html", "report.md", "validation.json"})
_VALIDATE_RUNS = ("sim", "kernel")
#: Top-level files of a ``tcplab sweep`` directory (:mod:`tcplab.sweep.store`), and its
#: subdirectories: ``rows/KEY.parquet``, ``failed/KEY.json``, ``runs/KEY/`` (run directories,
#: ``--keep-runs``), ``plots/``.
#: ".tcplab-sweep.lock": held (flock) by the process writing the sweep (tcplab.sweep.store)
SWEEP_ENTRIES = frozenset({MARKER, "sweep.json", "sweep.parquet", "report.html", ".tcplab-sweep.lock"})
SWEEP_DIRS = frozenset({"rows", "failed", "runs", "plots"})
EXPERIMENT_ENTRIES = frozenset({"report.html", "report.md", "claims.json"})
_EXPERIMENT_NAME = re.compile(r"[a-z0-9][a-z0-9-]*\Z")
_PLOT_SUFFIXES = (".png", ".svg", ".html", ".json")


def write_marker(directory: Path, kind: str) -> None:
    """Mark ``directory`` (being filled) as a tcplab ``kind`` ("run", "compare" or "reproduce") directory."""
    from tcplab.version import __version__

    # whole or absent (a full disk must not leave an empty marker that blocks a resume)
    text = json.dumps({"tcplab": __version__, "kind": kind}) + "\n"
    write_file_atomically(directory / MARKER, text, overwrite=True, durable=False)


def write_dir_atomically(
    directory: str | os.PathLike[str], fill: Callable[[Path], None], *, overwrite: bool = False
) -> Path:
    """Create ``directory`` by letting ``fill`` write into a temporary sibling, then
    renaming it into place; on any failure nothing is left behind (not even parents we
    created). An existing non-empty ``directory`` is an error unless ``overwrite``, and even
    then only a directory tcplab wrote is replaced (see the module doc). An OS error while
    writing (a full disk) is raised naming the file of ``directory`` being written, not the
    temporary one (which is gone by then)."""
    target = check_output_dir(Path(directory), overwrite=overwrite)
    created = _make_parents(target.parent)
    tmp = None
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
        fill(tmp)
        check_output_dir(target, overwrite=overwrite)  # again: the simulation took a while
        _replace_dir(tmp, target)
    except BaseException as e:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        for d in reversed(created):
            try:
                d.rmdir()
            except OSError:
                break
        if isinstance(e, OSError):
            given = Path(directory)  # named as the user gave it
            raise output_error(e, in_target(e, tmp, given), note=" (nothing written)") from e
        raise
    return target


def in_target(error: OSError, tmp: Path | None, target: Path) -> Path:
    """The path ``error`` is about, as it would have been in ``target``: a file of the
    temporary directory ``tmp`` by its final name, anything else as ``target`` itself."""
    if error.filename and tmp is not None:
        try:
            return target / Path(os.fsdecode(error.filename)).relative_to(tmp)
        except (ValueError, TypeError):
            pass
    return target


def _refuse(target: Path, problem: str, expected: str) -> None:
    raise ScenarioError(problem, file=str(target), expected=expected)


def check_output_dir(target: Path, *, overwrite: bool = False) -> Path:
    """The absolute, normalised output path, or a user error (a :class:`ScenarioError`, one
    line) if writing there could destroy something tcplab did not write (module doc)."""
    given = Path(target)
    check_output_writable(given)
    if given.is_symlink():
        _refuse(given, "is a symbolic link", "a path for a new output directory (not a link)")
    resolved = given.resolve()  # `.`, `..` and links in the parents made explicit
    cwd = Path.cwd().resolve()
    if resolved == cwd or resolved in cwd.parents or resolved.parent == resolved:
        what = "the current directory" if resolved == cwd else "a parent of the current directory"
        if resolved.parent == resolved:
            what = "the filesystem root"
        _refuse(given, f"is {what}", "a new directory for the output, such as runs/NAME")
    if not resolved.exists():
        return resolved
    if not resolved.is_dir():
        _refuse(given, "exists and is not a directory", "a path for a new output directory")
    entries = sorted(p.name for p in resolved.iterdir())
    if not entries:
        return resolved
    if not overwrite:
        _refuse(
            given,
            "output directory exists and is not empty",
            "a new or empty directory (or --force to replace it)",
        )
    foreign = foreign_entry(resolved)
    if foreign is not None:
        _refuse(
            given,
            f"--force refused: {foreign}",
            "a new directory, or one written by tcplab run/compare/reproduce/validate/sweep (only those are replaced)",
        )
    return resolved


def _kind(directory: Path) -> str | None:
    """ "run", "compare" or "reproduce" if tcplab wrote ``directory``, else None."""
    marker = directory / MARKER
    if marker.is_file() and not marker.is_symlink():
        try:
            kind = json_loads(marker.read_text(encoding="utf-8")).get("kind")
        except (OSError, ValueError, AttributeError):
            return None
        return kind if kind in ("run", "compare", "reproduce", "validate", "sweep") else None
    # written before the marker existed: recognised by its summary's schema key
    summary = directory / "summary.json"
    try:
        if summary.is_file() and "tcplab_version" in json_loads(summary.read_text(encoding="utf-8")):
            return "run"
        if (directory / "compare.json").is_file() and "variants" in json_loads(
            (directory / "compare.json").read_text(encoding="utf-8")
        ):
            return "compare"
    except (OSError, ValueError, TypeError):
        return None
    return None


def foreign_entry(directory: Path) -> str | None:
    """Why ``directory`` is not entirely tcplab's (a short phrase), or None if it is."""
    kind = _kind(directory)
    if kind is None:
        return f"not a directory written by tcplab (no {MARKER} marker)"
    for entry in sorted(directory.iterdir(), key=lambda p: p.name):
        if entry.is_symlink():
            return f"it contains a link tcplab did not write: {entry.name}"
        if kind == "run":
            if entry.name not in RUN_ENTRIES and not (RUN_ENTRY_PATTERN.match(entry.name) and entry.is_file()):
                return f"it contains {entry.name}, which tcplab did not write"
            if entry.name == "plots":
                if not entry.is_dir():
                    return "plots is not a directory"
                for p in entry.iterdir():
                    if p.is_symlink() or not p.is_file() or p.suffix not in _PLOT_SUFFIXES:
                        return f"it contains plots/{p.name}, which tcplab did not write"
        elif kind == "reproduce":
            problem = _foreign_reproduce_entry(entry)
            if problem is not None:
                return problem
        elif kind == "validate":
            problem = _foreign_validate_entry(entry)
            if problem is not None:
                return problem
        elif kind == "sweep":
            problem = _foreign_sweep_entry(entry)
            if problem is not None:
                return problem
        else:
            if entry.name in COMPARE_ENTRIES and entry.is_file():
                continue
            if entry.is_dir() and _kind(entry) == "run":
                inner = foreign_entry(entry)
                if inner is not None:
                    return f"{entry.name}: {inner}"
                continue
            return f"it contains {entry.name}, which tcplab did not write"
    return None


def _foreign_validate_entry(entry: Path) -> str | None:
    """Why a top-level ``entry`` of a validate directory is not tcplab's, or None."""
    if entry.name in VALIDATE_ENTRIES:
        return None if entry.is_file() else f"{entry.name} is not a file"
    if entry.name == "plots":
        return _foreign_plots(entry, "plots")
    if entry.name in _VALIDATE_RUNS:
        if not entry.is_dir() or _kind(entry) != "run":
            return f"it contains {entry.name}, which is not a tcplab run directory"
        inner = foreign_entry(entry)
        return None if inner is None else f"{entry.name}: {inner}"
    return f"it contains {entry.name}, which tcplab did not write"


def _foreign_sweep_entry(entry: Path) -> str | None:
    """Why a top-level ``entry`` of a sweep directory is not tcplab's, or None."""
    if entry.name in SWEEP_ENTRIES:
        return None if entry.is_file() else f"{entry.name} is not a file"
    if entry.name.startswith(".") and entry.name.endswith(".tmp") and entry.is_file():
        return None  # a write interrupted before its rename
    if entry.name == "plots":
        return _foreign_plots(entry, "plots")
    if entry.name in ("rows", "failed") and entry.is_dir():
        suffix = ".parquet" if entry.name == "rows" else ".json"
        for f in entry.iterdir():
            if f.is_symlink() or not f.is_file() or not (f.name.endswith(suffix) or f.name.endswith(".tmp")):
                return f"it contains {entry.name}/{f.name}, which tcplab did not write"
        return None
    if entry.name == "runs" and entry.is_dir():
        for run in sorted(entry.iterdir(), key=lambda p: p.name):
            if run.name.startswith(".") and (run.name.endswith(".tmp") or run.name.endswith(".old")):
                continue
            if run.is_symlink() or not run.is_dir() or _kind(run) != "run":
                return f"it contains runs/{run.name}, which is not a tcplab run directory"
            problem = foreign_entry(run)
            if problem is not None:
                return f"runs/{run.name}: {problem}"
        return None
    return f"it contains {entry.name}, which tcplab did not write"


def _foreign_plots(plots: Path, where: str) -> str | None:
    if not plots.is_dir():
        return f"{where} is not a directory"
    for p in plots.iterdir():
        if p.is_symlink() or not p.is_file() or p.suffix not in _PLOT_SUFFIXES:
            return f"it contains {where}/{p.name}, which tcplab did not write"
    return None


def _foreign_reproduce_entry(entry: Path) -> str | None:
    """Why a top-level ``entry`` of a reproduce directory is not tcplab's, or None."""
    if entry.name in REPRODUCE_ENTRIES:
        return None if entry.is_file() else f"{entry.name} is not a file"
    if not (entry.is_dir() and _EXPERIMENT_NAME.match(entry.name)):
        return f"it contains {entry.name}, which tcplab did not write"
    for inner in sorted(entry.iterdir(), key=lambda p: p.name):
        where = f"{entry.name}/{inner.name}"
        if inner.is_symlink():
            return f"it contains a link tcplab did not write: {where}"
        if inner.name in EXPERIMENT_ENTRIES and inner.is_file():
            continue
        if inner.name == "plots":
            problem = _foreign_plots(inner, where)
            if problem is not None:
                return problem
            continue
        if inner.name == "captures" and inner.is_dir():
            problem = _foreign_captures(inner, where)
            if problem is not None:
                return problem
            continue
        if inner.name == "runs" and inner.is_dir():
            for run in sorted(inner.iterdir(), key=lambda p: p.name):
                run_where = f"{where}/{run.name}"
                if run.is_symlink() or not run.is_dir() or _kind(run) != "run":
                    return f"it contains {run_where}, which is not a tcplab run directory"
                problem = foreign_entry(run)
                if problem is not None:
                    return f"{run_where}: {problem}"
            continue
        return f"it contains {where}, which tcplab did not write"
    return None


#: Files of a capture directory (tcplab.results.capture: a run's texts with ss as at a moment),
#: besides the tool texts of :data:`RUN_ENTRY_PATTERN`.
CAPTURE_ENTRIES = frozenset({MARKER, "counters.txt", "summary.json", "README.txt"})


def _foreign_captures(captures: Path, where: str) -> str | None:
    """Why ``NAME/captures`` of a reproduce directory is not tcplab's, or None: it holds
    only capture directories (marker kind ``capture``) of tcplab's files."""
    for cap in sorted(captures.iterdir(), key=lambda p: p.name):
        cap_where = f"{where}/{cap.name}"
        if cap.is_symlink() or not cap.is_dir() or _marker_kind(cap) != "capture":
            return f"it contains {cap_where}, which is not a tcplab capture"
        for f in sorted(cap.iterdir(), key=lambda p: p.name):
            ok = f.name in CAPTURE_ENTRIES or RUN_ENTRY_PATTERN.match(f.name)
            if f.is_symlink() or not f.is_file() or not ok:
                return f"it contains {cap_where}/{f.name}, which tcplab did not write"
    return None


def _marker_kind(directory: Path) -> str | None:
    try:
        return json_loads((directory / MARKER).read_text(encoding="utf-8")).get("kind")
    except (OSError, ValueError, AttributeError):
        return None


#: The longest file name (NAME_MAX on Linux); the temporary sibling ``.NAME.XXXXXXXX.tmp``
#: that a run directory is written into must fit too.
NAME_MAX_BYTES = 255
_TMP_EXTRA_BYTES = len(".") + len(".") + 8 + len(".tmp")


def check_output_writable(target: Path) -> None:
    """A user error if ``target`` could not be created: a path or a name too long for Linux
    (PATH_MAX, NAME_MAX, with room for the temporary sibling and the files inside), a
    parent that is a file, or a directory we may not write."""
    check_path_length(target, reserve_bytes=DIRECTORY_RESERVE_BYTES)
    target = target.absolute()
    name_bytes = len(os.fsencode(target.name))
    if name_bytes + _TMP_EXTRA_BYTES > NAME_MAX_BYTES:
        raise ScenarioError(
            f"the directory name is {name_bytes} bytes long",
            file=str(target),
            expected=f"a name of at most {NAME_MAX_BYTES - _TMP_EXTRA_BYTES} bytes",
        )
    ancestor = target.parent
    while not ancestor.exists():
        if len(os.fsencode(ancestor.name)) > NAME_MAX_BYTES:
            raise ScenarioError(
                f"{ancestor.name[:40]}... is longer than {NAME_MAX_BYTES} bytes",
                file=str(target),
                expected="an output path whose every component is a valid file name",
            )
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise ScenarioError(
            f"{ancestor} is not a directory", file=str(target), expected="an output path under a directory"
        )
    try:  # a real probe (permissions, ACLs, a read-only file system), removed at once
        Path(tempfile.mkdtemp(prefix=".tcplab-probe.", dir=ancestor)).rmdir()
    except OSError as e:
        raise ScenarioError(
            f"cannot create it in {ancestor} ({e.strerror or e})",
            file=str(target),
            expected="an output directory in a writable place (-o)",
        ) from None


def _make_parents(parent: Path) -> list[Path]:
    missing = []
    p = parent.resolve() if not parent.exists() else parent
    while not p.exists():
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        d.mkdir()
    return list(reversed(missing))


def _replace_dir(tmp: Path, target: Path) -> None:
    if target.exists():
        trash = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
        trash.rmdir()
        target.rename(trash)
        try:
            tmp.rename(target)
        except BaseException:
            trash.rename(target)
            raise
        shutil.rmtree(trash, ignore_errors=True)
    else:
        tmp.rename(target)
    target.chmod(new_dir_mode())  # mkdtemp made it 0700

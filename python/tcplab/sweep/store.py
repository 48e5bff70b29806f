"""A sweep's output directory: the plan, each run's rows as it ends, failures, the table.

Layout (ARCH12)::

    OUT/.tcplab-run          marker, kind "sweep"
    OUT/sweep.json           the plan (scenario, base overrides, parameters, seeds,
                             sample_seed, versions, points with their keys), status
                             "running" | "complete" | "interrupted", counts (done, failed)
    OUT/rows/KEY.parquet     one completed run's rows (written as the run ends: tmp + rename)
    OUT/failed/KEY.json      a failed run: {"key", "point", "seed", "overrides", "error"}
    OUT/runs/KEY/            the run directory, only with --keep-runs
    OUT/sweep.parquet        the table, written atomically at the end
    OUT/plots/*.png, OUT/report.html   the views (tcplab.views.sweep)

Unlike a run directory, a sweep directory is filled in place, run by run: that is what makes
it resumable. What keeps it consistent: every file appears whole (a temporary sibling renamed
into place), ``rows/KEY.parquet`` exists only for a run that completed, the table and the
views are (re)written only at the end, and ``sweep.parquet`` is removed when a (resumed)
sweep starts, so a table is never older than the rows beside it.

Resume: the same command with the same ``-o DIR`` finds the marker and sweep.json, refuses
(one line, exit 2) when the scenario, the base overrides or the engine version differ from
the stored plan (``--force`` starts over), and otherwise skips every key whose rows exist and
reruns the failed ones. Parameters and seeds may differ (an extended grid): runs are keyed by
their configuration, so whatever is already done is reused and nothing stale can be.

``--force`` replaces only a directory tcplab marked as a sweep (or an empty one).

One writer at a time: :meth:`SweepStore.start` takes an exclusive ``flock`` on
``OUT/.tcplab-sweep.lock`` (its content: the writer's pid) before it changes anything, and
holds it until :meth:`SweepStore.close`; a second sweep (or ``--force``) into the same
directory meanwhile is refused in one line naming the pid, and nothing of the first is
touched. The kernel releases the lock when the writer exits, however it ends, so a stale
lock file never blocks a resume.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tcplab.errors import ScenarioError
from tcplab.literals import json_loads
from tcplab.output_files import output_error, write_file_atomically
from tcplab.results.rundir import MARKER, SWEEP_DIRS, SWEEP_ENTRIES, check_output_writable, write_marker
from tcplab.results.rundir import foreign_entry as _foreign_tcplab_entry

__all__ = ["SweepStore", "SWEEP_ENTRIES", "SWEEP_DIRS", "PLAN_FILE", "TABLE_FILE"]

PLAN_FILE = "sweep.json"
TABLE_FILE = "sweep.parquet"
LOCK_FILE = ".tcplab-sweep.lock"


def _atomic_write(path: Path, write: Callable[[str], object]) -> None:
    """A file of the sweep directory, whole, with the user's umask (tcplab.output_files)."""
    write_file_atomically(path, write, overwrite=True)


def write_text_atomically(path: Path, text: str) -> None:
    write_file_atomically(path, text, overwrite=True)


def _nothing_yet(entry: Path) -> bool:
    """An entry of a sweep that stopped before writing anything: its lock, empty rows/ and failed/."""
    if entry.name == LOCK_FILE and entry.is_file() and not entry.is_symlink():
        return True
    return entry.name in ("rows", "failed") and entry.is_dir() and not entry.is_symlink() and not any(entry.iterdir())


def marker_kind(directory: Path) -> str | None:
    try:
        return json_loads((directory / MARKER).read_text(encoding="utf-8")).get("kind")
    except (OSError, ValueError, AttributeError):
        return None


class SweepStore:
    """The files of one sweep directory (module doc)."""

    def __init__(self, directory: str | os.PathLike[str]):
        self.dir = Path(directory)
        self._lock_fd: int | None = None

    # -- paths ----------------------------------------------------------------------------
    @property
    def plan_path(self) -> Path:
        return self.dir / PLAN_FILE

    @property
    def table_path(self) -> Path:
        return self.dir / TABLE_FILE

    def rows_path(self, key: str) -> Path:
        return self.dir / "rows" / f"{key}.parquet"

    def failed_path(self, key: str) -> Path:
        return self.dir / "failed" / f"{key}.json"

    def run_dir(self, key: str) -> Path:
        return self.dir / "runs" / key

    # -- opening ----------------------------------------------------------------------------
    def check(self, *, force: bool = False) -> dict[str, Any] | None:
        """Before anything runs: may we write here? Returns the stored plan when this is a
        sweep directory to resume (None for a new or empty directory, or with ``force``)."""
        given = self.dir
        check_output_writable(given)
        if given.is_symlink():
            raise ScenarioError("is a symbolic link", file=str(given), expected="a path for a sweep directory")
        resolved = given.resolve()
        cwd = Path.cwd().resolve()
        if resolved == cwd or resolved in cwd.parents or resolved.parent == resolved:
            raise ScenarioError(
                "is the current directory or one of its parents",
                file=str(given),
                expected="a new directory for the sweep, such as runs/sweep-NAME",
            )
        if not resolved.exists():
            return None
        if not resolved.is_dir():
            raise ScenarioError("exists and is not a directory", file=str(given), expected="a sweep directory")
        if all(_nothing_yet(entry) for entry in resolved.iterdir()):
            return None  # empty, or a sweep that ended before writing anything but its lock
        if marker_kind(resolved) != "sweep":
            raise ScenarioError(
                "exists and is not a sweep directory written by tcplab",
                file=str(given),
                expected="a new or empty directory, or a sweep's directory to resume",
            )
        foreign = _foreign_tcplab_entry(resolved)
        if foreign is not None:
            raise ScenarioError(
                f"{'--force refused' if force else 'cannot resume'}: {foreign}",
                file=str(given),
                expected="a sweep directory holding only what tcplab wrote",
            )
        if force:
            return None
        try:
            plan = self.read_plan()
        except (OSError, ValueError) as e:
            raise ScenarioError(
                f"cannot read {PLAN_FILE} ({e})", file=str(given), expected="a sweep directory (or --force)"
            ) from None
        return plan

    def lock(self) -> None:
        """Take the directory's writer lock (module doc), creating the directory; a one-line
        error when another process holds it."""
        import fcntl

        if self._lock_fd is not None:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        path = self.dir / LOCK_FILE
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)  # & ~umask, as any new file
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
            os.close(fd)
            raise ScenarioError(
                f"another tcplab sweep (pid {holder}) is writing this directory",
                file=str(self.dir),
                expected="another -o, or this one once that sweep has ended (then the same command resumes it)",
            ) from None
        self._lock_fd = fd
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        except OSError as e:  # a full disk: name the file
            raise output_error(e, path) from e

    def close(self) -> None:
        """Release the writer lock (the lock file stays: it is part of the directory)."""
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def start(self, plan: dict[str, Any], *, fresh: bool) -> None:
        """Take the writer lock, create (or with ``fresh`` empty) the directory, mark it,
        write the plan; the old table and views go (they are rewritten at the end). A
        directory this creates is removed again if starting fails (a full disk): an
        unmarked directory left behind would block the next attempt."""
        created = not self.dir.exists()
        try:
            self._start(plan, fresh=fresh)
        except BaseException:
            if created and self.dir.is_dir():
                shutil.rmtree(self.dir, ignore_errors=True)
                self.close()
            raise

    def _start(self, plan: dict[str, Any], *, fresh: bool) -> None:
        self.lock()
        if fresh and self.dir.exists():
            for entry in self.dir.iterdir():
                if entry.name == LOCK_FILE:
                    continue
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
        self.dir.mkdir(parents=True, exist_ok=True)
        for sub in ("rows", "failed"):
            (self.dir / sub).mkdir(exist_ok=True)
        for stale in (self.table_path, self.dir / "report.html"):
            stale.unlink(missing_ok=True)
        shutil.rmtree(self.dir / "plots", ignore_errors=True)
        for entry in self.dir.iterdir():
            if entry.name.startswith(".") and entry.name.endswith(".tmp"):
                entry.unlink(missing_ok=True)
        if not (self.dir / MARKER).exists():
            write_marker(self.dir, "sweep")
        self.write_plan(plan)

    def write_plan(self, plan: dict[str, Any]) -> None:
        write_text_atomically(self.plan_path, json.dumps(plan, indent=2, allow_nan=False) + "\n")

    def mark_unfinished(self, plan: dict[str, Any]) -> None:
        """After a failure (a full disk, a signal): remove the table and the views, which
        would look like a finished sweep's, and record ``plan`` (status "interrupted") if
        the disk takes it; the rows stay, and the same command resumes."""
        for path in (self.table_path, self.dir / "report.html"):
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)
        shutil.rmtree(self.dir / "plots", ignore_errors=True)
        # if the disk refuses it, sweep.json still says "running": not complete either
        with contextlib.suppress(OSError):
            self.write_plan(plan)

    def read_plan(self) -> dict[str, Any]:
        """sweep.json; ValueError when it is not JSON, not an object, or a key of the plan has
        the wrong type."""
        plan = json_loads(self.plan_path.read_text(encoding="utf-8"), finite=True)
        if not isinstance(plan, dict):
            raise ValueError(f"a JSON {type(plan).__name__}, not the plan's object")
        for name, kind, what in (
            ("scenario", dict, "an object"),
            ("base_overrides", list, "a list"),
            ("versions", dict, "an object"),
            ("status", str, "a string"),
        ):
            if not isinstance(plan.get(name, kind()), kind):  # absent: resume refuses it later
                raise ValueError(f"{name!r} is not {what}")
        return plan

    # -- runs -----------------------------------------------------------------------------
    def done(self, key: str) -> bool:
        return self.rows_path(key).is_file()

    def damaged_rows(self, key: str) -> str | None:
        """Why ``rows/KEY.parquet`` cannot be read back (None when it can). Rows are written
        whole (tmp + rename), so this is damage from outside (a truncated copy, a full disk
        on another tool's copy): the run is redone rather than the sweep failing."""
        import pyarrow.parquet as pq

        from tcplab.sweep.rows import FLOW_IDENTITY, FLOW_METRICS, RUN_METRICS

        try:
            meta = pq.read_metadata(self.rows_path(key))
            names = set(meta.schema.to_arrow_schema().names)
        except (OSError, ValueError) as e:  # ArrowInvalid is a ValueError
            return " ".join(str(e).split())
        missing = [c for c in ("flow_index", *FLOW_IDENTITY, *FLOW_METRICS, *RUN_METRICS) if c not in names]
        if missing and meta.num_rows > 0:  # valid Parquet, but not a run's rows (another table copied in)
            return f"not a run's rows: no column {missing[0]}"
        return None

    def write_rows(self, key: str, rows: list[dict[str, Any]]) -> Any:
        """Write a run's rows; returns them as the Arrow table written."""
        from tcplab.sweep.rows import write_run_rows

        table = write_run_rows(rows, self.rows_path(key))
        self.failed_path(key).unlink(missing_ok=True)
        return table

    def write_failure(self, key: str, record: dict[str, Any]) -> None:
        write_text_atomically(self.failed_path(key), json.dumps(record, indent=2) + "\n")

    def failure(self, key: str) -> dict[str, Any] | None:
        try:
            return json_loads(self.failed_path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    # -- the table ------------------------------------------------------------------------
    def write_table(self, table: Any) -> None:
        """sweep.parquet, atomically; no pandas metadata (the bytes depend only on the data)."""
        import pyarrow.parquet as pq

        table = table.replace_schema_metadata(None)
        _atomic_write(self.table_path, lambda tmp: pq.write_table(table, tmp, compression="zstd"))

"""The run directory: written atomically, never half-written, never over a non-empty directory.

``write_dir_atomically(DIR, fill)`` lets ``fill`` write into a temporary sibling of DIR and
renames it into place at the end; on any failure nothing is left behind (not even the
parents it created).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from tcplab.errors import ScenarioError

__all__ = ["write_dir_atomically", "check_output_dir"]


def write_dir_atomically(
    directory: str | os.PathLike[str], fill: Callable[[Path], None], *, overwrite: bool = False
) -> Path:
    """Create ``directory`` by letting ``fill`` write into a temporary sibling, then
    renaming it into place; on any failure nothing is left behind (not even parents we
    created). An existing non-empty ``directory`` is an error unless ``overwrite``."""
    target = Path(directory).absolute()
    check_output_dir(target, overwrite=overwrite)
    created = _make_parents(target.parent)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        fill(tmp)
        _replace_dir(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        for d in reversed(created):
            try:
                d.rmdir()
            except OSError:
                break
        raise
    return target


def check_output_dir(target: Path, *, overwrite: bool = False) -> None:
    """A user error if ``target`` exists and is not an empty directory (unless overwrite)."""
    if target.exists():
        if not target.is_dir():
            raise ScenarioError(
                "exists and is not a directory", file=str(target), expected="a path for a new output directory"
            )
        if any(target.iterdir()) and not overwrite:
            raise ScenarioError(
                "output directory exists and is not empty",
                file=str(target),
                expected="a new or empty directory (or --force to replace it)",
            )


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
    umask = os.umask(0)
    os.umask(umask)
    target.chmod(0o777 & ~umask)  # mkdtemp made it 0700

"""Output files: written whole, with the user's umask, never over what tcplab may not replace.

The model. An output file appears whole or not at all. :func:`write_file_atomically`
writes it into a temporary sibling (``.NAME.XXXXXXXX.tmp`` in the same directory, so that
the last step is one ``rename``), flushes it to the disk (``fsync``: a crash after the
rename leaves the old file or the new one, never an empty one), gives it the mode every
tool gives a new file, ``0666 & ~umask`` (0644 under umask 022, 0600 under 077:
``mkstemp``'s own 0600 is for secrets, and a pcap or a table is not one), and renames it
into place. On any failure, Ctrl-C and SIGTERM included (:mod:`tcplab.signals`), the
temporary file is removed, and an OS error (a full disk, a read-only file system) is
re-raised naming the output path, not the temporary one.

What may be replaced: tcplab's rule for run directories (:mod:`tcplab.results.rundir`)
applied to files. :func:`check_output_file` (up front, before anything runs) and the writer
(again, at the rename) allow

* a path that does not exist: it is created. Without ``overwrite`` the file is linked into
  place (``link`` fails when the name exists), so a file that appeared meanwhile is not
  replaced either;
* an existing regular file only with ``overwrite`` (the CLI's ``--force``);
* never a symbolic link (its target might be anything), a directory, a device, a FIFO or a
  socket, ``--force`` or not: renaming over ``/dev/null`` as root replaces the device node.

Paths: Linux refuses a path of PATH_MAX (4096) bytes or more and a name longer than
NAME_MAX (255 bytes) with ``ENAMETOOLONG``; :func:`check_path_length` says so up front, as
a usage error (one line, exit 2), for the output itself and, with ``reserve_bytes``, for
what tcplab writes inside an output directory.

A leaf module (floor 0): it imports only :mod:`tcplab.errors`.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from tcplab.errors import ScenarioError

__all__ = [
    "PATH_MAX_BYTES",
    "NAME_MAX_BYTES",
    "DIRECTORY_RESERVE_BYTES",
    "current_umask",
    "new_file_mode",
    "new_dir_mode",
    "shown_path",
    "is_directory",
    "check_path_length",
    "check_output_file",
    "write_file_atomically",
    "output_error",
]

#: Linux's PATH_MAX: the longest path a system call takes is PATH_MAX - 1 bytes (+ NUL).
PATH_MAX_BYTES = 4096
#: Linux's NAME_MAX: the longest name of one directory entry, in bytes.
NAME_MAX_BYTES = 255
#: Room an output directory's path leaves below PATH_MAX for what tcplab writes inside it
#: (``runs/KEY/plots/NAME.png`` in a sweep, ``EXP/captures/LABEL/FILE`` in reproduce).
DIRECTORY_RESERVE_BYTES = 1024

#: The temporary sibling's name: ``.`` + the name (cut to fit NAME_MAX) + ``.XXXXXXXX.tmp``.
_TMP_SUFFIX = ".tmp"
_TMP_EXTRA_BYTES = len(".") + len(".") + 8 + len(_TMP_SUFFIX)


def current_umask() -> int:
    """The process's umask, read without changing it (``/proc/self/status``, Linux 4.7+);
    elsewhere set and restored at once, as every Python program must."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def new_file_mode() -> int:
    """The mode ``open(..., "w")`` gives a new file: ``0666 & ~umask``."""
    return 0o666 & ~current_umask()


def new_dir_mode() -> int:
    """The mode ``mkdir`` gives a new directory: ``0777 & ~umask``."""
    return 0o777 & ~current_umask()


def shown_path(path: str | os.PathLike[str], limit: int = 120) -> str:
    """``path`` for a one-line message: a path too long to read is cut in its middle."""
    text = os.fspath(path)
    if len(text) <= limit:
        return text
    return f"{text[: limit // 2]}...{text[-(limit // 2 - 3) :]}"


def is_directory(path: str | os.PathLike[str]) -> bool:
    """``Path.is_dir()`` that answers False for a path too long to look up (ENAMETOOLONG),
    where pathlib raises: the caller's check of the path then says what is wrong."""
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _bytes(text: str) -> int:
    return len(os.fsencode(text))


def check_path_length(
    path: str | os.PathLike[str], *, option: str = "", reserve_bytes: int = 0, reserved_for: str = "the files inside it"
) -> Path:
    """The absolute ``path``, or a one-line :class:`ScenarioError` if Linux would refuse it
    as too long, or the longer paths written for it (``reserve_bytes`` more, for
    ``reserved_for``). No file system call but ``getcwd``: a too-long path must not reach
    one (``Path.exists`` raises on it)."""
    absolute = Path(os.path.abspath(path))
    where = {"path": option} if option else {"file": shown_path(absolute)}
    subject = f"{shown_path(path)!r}: " if option else ""
    for part in absolute.parts:
        if _bytes(part) > NAME_MAX_BYTES:
            raise ScenarioError(
                f"{subject}the name {shown_path(part, 40)!r} is {_bytes(part)} bytes long",
                **where,
                expected=f"an output path whose every name is at most {NAME_MAX_BYTES} bytes (Linux NAME_MAX)",
            )
    limit = PATH_MAX_BYTES - 1 - reserve_bytes
    length = _bytes(str(absolute))
    if length > limit:
        room = f", less {reserve_bytes} bytes for {reserved_for}" if reserve_bytes else ""
        raise ScenarioError(
            f"{subject}the path is {length} bytes long (as an absolute path)",
            **where,
            expected=f"a path of at most {limit} bytes (Linux PATH_MAX is {PATH_MAX_BYTES}{room})",
        )
    return absolute


def _tmp_prefix(name: str) -> str:
    """``.NAME.`` for the temporary sibling, NAME cut so the whole name fits NAME_MAX."""
    raw = os.fsencode(name)[: NAME_MAX_BYTES - _TMP_EXTRA_BYTES]
    return "." + os.fsdecode(raw) + "."


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _refuse(path: Path, option: str, problem: str, expected: str) -> ScenarioError:
    if option:
        return ScenarioError(f"{shown_path(path)!r} {problem}", path=option, value=str(path), expected=expected)
    return ScenarioError(problem, file=shown_path(path), expected=expected)


def _check_existing(path: Path, *, overwrite: bool, option: str) -> None:
    """Refuse what is at ``path`` unless it is nothing, or (``overwrite``) a regular file."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):  # nothing there (a file above: the caller says so)
        return
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(
            path,
            option,
            f"is {_kind(st.st_mode)}",
            "a path for a new file (tcplab never replaces a link, directory, device, FIFO or socket, "
            "even with --force)",
        )
    if not overwrite:
        raise _refuse(path, option, "exists", "a new file (or --force to replace it)")


def check_output_file(path: str | os.PathLike[str], *, overwrite: bool = False, option: str = "--output") -> Path:
    """Before anything runs: may tcplab write the file ``path``? Returns it (as given) or
    raises a one-line :class:`ScenarioError` (module doc): too long a path, something at
    ``path`` tcplab may not replace, a parent that is a file, or a place where no file can
    be created (read-only, no permission: probed with a temporary file, removed at once)."""
    target = Path(path)
    name = os.path.basename(os.path.abspath(target))
    tmp_extra = max(0, _bytes(_tmp_prefix(name)) + 8 + len(_TMP_SUFFIX) - _bytes(name))
    absolute = check_path_length(
        target, option=option, reserve_bytes=tmp_extra, reserved_for="the temporary file written first"
    )
    _check_existing(target, overwrite=overwrite, option=option)
    ancestor = absolute.parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise _refuse(
            target,
            option,
            f"cannot be created: {str(ancestor)!r} is not a directory",
            "a file in a directory (missing directories are made)",
        )
    try:
        fd, probe = tempfile.mkstemp(prefix=".tcplab-probe.", dir=ancestor)
    except OSError as e:
        raise _refuse(
            target, option, f"cannot be created in {str(ancestor)!r} ({e.strerror or e})", "a writable place"
        ) from None
    os.close(fd)
    os.unlink(probe)
    return target


def output_error(error: OSError, path: str | os.PathLike[str], *, note: str = "") -> OSError:
    """``error`` (ENOSPC, EROFS, EIO...) as an OSError naming ``path``: the CLI prints
    ``error: PATH: No space left on device``. PyArrow's errors carry the errno only in
    their text (``[errno 28] ...``); it is recovered from there."""
    code = error.errno
    if code is None:
        m = re.search(r"\[errno (\d+)\]", str(error), re.IGNORECASE)
        code = int(m.group(1)) if m else None
    cause = error.strerror or (os.strerror(code) if code else " ".join(str(error).split()))
    if note and cause.endswith(note):  # raised again by an enclosing atomic write: said once
        note = ""
    return OSError(code, cause + note, str(path))


def _make_parents(parent: Path) -> list[Path]:
    """Create the missing directories above a file; the ones created, deepest first."""
    missing = []
    p = parent
    while not p.exists():
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        d.mkdir()
    return missing


def _link_into_place(tmp: str, target: Path, option: str) -> None:
    """Give ``tmp`` the name ``target`` only if that name is free (``link`` does not replace);
    where hard links are not supported, a last check then ``rename``."""
    try:
        os.link(tmp, target)
    except FileExistsError:
        _check_existing(target, overwrite=False, option=option)
        raise  # unreachable: _check_existing raised
    except OSError as e:
        if e.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK, errno.ENOSYS, errno.EXDEV):
            raise
        _check_existing(target, overwrite=False, option=option)
        os.replace(tmp, target)
        return
    os.unlink(tmp)


def write_file_atomically(
    path: str | os.PathLike[str],
    content: bytes | str | Callable[[str], object],
    *,
    overwrite: bool = False,
    durable: bool = True,
    make_parents: bool = False,
    option: str = "",
) -> Path:
    """Write ``content`` to ``path`` whole (module doc) and return ``path``.

    ``content``: the bytes (a str is written as UTF-8), or a function that writes the file
    whose name it is given (``pyarrow.parquet.write_table``). ``overwrite``: an existing
    regular file may be replaced (never anything else). ``durable``: fsync before the
    rename (off for files a later run recreates when damaged). ``make_parents``: create
    missing directories (removed again on failure). ``option``: the command-line option
    that named the path, for refusals.

    Raises:
        ScenarioError: something at ``path`` that may not be replaced (one line).
        OSError: writing failed; ``filename`` is ``path`` (see :func:`output_error`).
    """
    target = Path(path)
    _check_existing(target, overwrite=overwrite, option=option)
    created = _make_parents(target.parent) if make_parents else []
    tmp, fd = "", -1
    try:
        fd, tmp = tempfile.mkstemp(prefix=_tmp_prefix(target.name), suffix=_TMP_SUFFIX, dir=target.parent)
        if callable(content):
            os.close(fd)
            fd = -1
            content(tmp)
            fd = os.open(tmp, os.O_RDONLY | os.O_CLOEXEC)
        else:
            data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        os.fchmod(fd, new_file_mode())
        if durable:
            os.fsync(fd)
        fd, closing = -1, fd
        os.close(closing)
        if overwrite:
            _check_existing(target, overwrite=True, option=option)  # still nothing, or a regular file
            os.replace(tmp, target)
        else:
            _link_into_place(tmp, target, option)
        tmp = ""
    except BaseException as e:
        if fd >= 0:
            os.close(fd)
        if tmp:
            Path(tmp).unlink(missing_ok=True)
        for d in created:
            try:
                d.rmdir()
            except OSError:
                break
        if isinstance(e, OSError):
            raise output_error(e, target) from e
        raise
    return target

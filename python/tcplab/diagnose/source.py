"""Input files as the diagnoser reads them: bounded, line by line, with addresses.

The model: every input is a *source* (a path, or a member of a collect archive) read as a
stream of numbered lines. Nothing is read whole: a line longer than :data:`MAX_LINE` is an
error (no tool we parse prints one), a file with a NUL byte or undecodable bytes in its
first kilobytes is "binary", and JSON inputs (``tc -j``, ``nstat -j``, ``ethtool --json``)
are the one exception, read whole up to :data:`MAX_JSON` bytes.

Every problem with an input is a :class:`ParseError` carrying ``file`` and ``line``; its
``str()`` is the one-line ``FILE:LINE: problem`` the CLI prints after ``error: ``. Parsers
raise nothing else for any text (the property tests check this).

:class:`Evidence` is the address of a fact: file, line number and the line's text, so a
finding can quote exactly what it rests on.

Also here: the value parsers shared by ss and tc (rates, sizes, times as those tools print
them; note ss's ``Mbps`` means mega*bits*, unlike tc's command line).
"""

from __future__ import annotations

import io
import json
import os
import re
import stat
import tarfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

__all__ = [
    "ParseError",
    "Evidence",
    "Source",
    "MAX_LINE",
    "MAX_JSON",
    "MAX_INPUT",
    "check_regular_file",
    "iter_lines",
    "text_source",
    "load_json",
    "load_json_pairs",
    "JsonPairs",
    "parse_bits_rate",
    "parse_tc_size",
    "parse_tc_time_ns",
    "parse_int",
]

READ_ERRORS = (OSError, EOFError, zlib.error, tarfile.TarError)
MAX_LINE = 64 * 1024  # bytes; the longest real line is an ss info line (< 2 kB)
MAX_JSON = 64 * 1024 * 1024  # bytes; tc -j on a host with thousands of qdiscs stays far below
MAX_INPUT = 256 * 1024 * 1024  # bytes read from one input at most: an endless stream is not a capture


class ParseError(Exception):
    """An input the diagnoser cannot use, as one ``FILE:LINE: problem`` line."""

    def __init__(self, file: str, line: int, problem: str):
        self.file = str(file)
        self.line = int(line)
        self.problem = " ".join(str(problem).splitlines())
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.problem}"


@dataclass(frozen=True)
class Evidence:
    """One input line a finding rests on."""

    file: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.text.strip()}"

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "text": self.text.strip()}


class Source:
    """A named byte stream opened on demand (a file, an archive member, or text in memory)."""

    def __init__(self, name: str, opener, size: int | None = None, hint: dict | None = None):  # noqa: ANN001
        self.name = name
        self._opener = opener  # () -> binary file object
        self.size = size
        self.hint = dict(hint or {})  # from a collect manifest: snapshot, device, command

    def open(self) -> IO[bytes]:
        return self._opener()

    def head(self, n: int = 65536) -> bytes:
        try:
            with self.open() as f:
                return f.read(n)
        except READ_ERRORS as e:
            raise ParseError(self.name, 0, f"cannot read: {_reason(e)}") from None

    @classmethod
    def from_path(cls, path: Path, name: str | None = None, hint: dict | None = None) -> Source:
        p = Path(path)
        try:
            size = p.stat().st_size
        except OSError:
            size = None
        return cls(name or str(path), lambda: open(p, "rb"), size, hint)

    def __repr__(self) -> str:
        return f"Source({self.name!r})"


_FILE_TYPES = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def check_regular_file(path: Path) -> os.stat_result:
    """``os.stat`` of ``path`` (following symlinks); :class:`ParseError` unless a regular file.

    Checked before opening: ``open()`` on a FIFO blocks until a writer appears, and a device
    such as ``/dev/zero`` never ends.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ParseError(str(path), 0, "no such file or directory") from None
    except OSError as e:
        raise ParseError(str(path), 0, e.strerror or str(e)) from None
    if not stat.S_ISREG(st.st_mode):
        what = next((name for test, name in _FILE_TYPES if test(st.st_mode)), "a special file")
        raise ParseError(str(path), 0, f"{what}, not a regular file; save the tool's output to a file first")
    return st


def text_source(text: str | bytes, name: str = "<text>", hint: dict | None = None) -> Source:
    data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else bytes(text)
    return Source(name, lambda: io.BytesIO(data), len(data), hint)


def _check_binary(name: str, chunk: bytes) -> None:
    if b"\x00" in chunk:
        raise ParseError(name, 1, "binary data (NUL bytes), not the text output of a tool")


def _reason(e: BaseException) -> str:
    if isinstance(e, OSError) and e.strerror:
        return e.strerror
    return f"truncated or corrupt ({type(e).__name__}: {e})"


def iter_lines(src: Source) -> Iterator[tuple[int, str]]:
    """Numbered lines (1-based, without the newline); bounded memory per line."""
    lineno = 0
    try:
        yield from _iter_lines(src)
    except READ_ERRORS as e:
        raise ParseError(src.name, lineno, f"cannot read: {_reason(e)}") from None


def _iter_lines(src: Source) -> Iterator[tuple[int, str]]:
    with src.open() as f:
        first = True
        lineno = 0
        total = 0
        while True:
            raw = f.readline(MAX_LINE + 1)
            if not raw:
                return
            lineno += 1
            total += len(raw)
            if total > MAX_INPUT:
                # the size in stat() can be 0 or wrong (/proc files): the bytes actually read bound it
                raise ParseError(src.name, lineno, f"more than {MAX_INPUT // 2**20} MB; not a tool's text output")
            if len(raw) > MAX_LINE and not raw.endswith(b"\n"):
                raise ParseError(src.name, lineno, f"line longer than {MAX_LINE} bytes; not a tool's text output")
            if first:
                _check_binary(src.name, raw)
                first = False
            elif b"\x00" in raw:
                raise ParseError(src.name, lineno, "binary data (NUL byte) in a text file")
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise ParseError(src.name, lineno, "bytes that are not UTF-8 text") from None
            yield lineno, text.rstrip("\r\n")


def load_json(src: Source) -> Any:
    """A whole JSON document, size-capped; errors carry the line of the problem."""
    return _load_json(src, None)


class JsonPairs(list):
    """A JSON object as its ``(key, value)`` pairs in the file's order, duplicate keys kept
    (``tc -j`` prints fq's ``throttled`` twice; a dict would keep only the last)."""


def load_json_pairs(src: Source) -> Any:
    """As :func:`load_json`, with every object a :class:`JsonPairs`."""
    return _load_json(src, JsonPairs)


def _load_json(src: Source, pairs_hook: type | None) -> Any:
    try:
        with src.open() as f:
            data = f.read(MAX_JSON + 1)
    except READ_ERRORS as e:
        raise ParseError(src.name, 0, f"cannot read: {_reason(e)}") from None
    if len(data) > MAX_JSON:
        raise ParseError(src.name, 0, f"JSON larger than {MAX_JSON // (1024 * 1024)} MB; refusing to load it")
    _check_binary(src.name, data[:65536])
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ParseError(src.name, 1, "bytes that are not UTF-8 text") from None
    try:
        return json.loads(text, object_pairs_hook=pairs_hook, parse_int=_json_int)
    except _HugeNumber as e:
        raise ParseError(src.name, 0, f"a number of {e.digits} digits: not a counter (at most 30 digits)") from None
    except json.JSONDecodeError as e:
        raise ParseError(src.name, e.lineno, f"invalid JSON: {e.msg} (column {e.colno})") from None
    except RecursionError:
        raise ParseError(src.name, 1, "JSON nested too deeply") from None


class _HugeNumber(ValueError):
    def __init__(self, digits: int):
        super().__init__(digits)
        self.digits = digits


def _json_int(text: str) -> int:
    """JSON integers as counters: a 64-bit counter has 20 digits; int() of more than 4300
    fails with a ValueError that names no file."""
    digits = len(text.lstrip("-"))
    if digits > 30:
        raise _HugeNumber(digits)
    return int(text)


_INT = re.compile(r"-?\d+\Z")


def parse_int(text: str, file: str, line: int, what: str) -> int:
    t = text.strip()
    if not _INT.match(t) or len(t) > 40:
        raise ParseError(file, line, f"{what}: {t[:40]!r} is not an integer")
    return int(t)


_RATE = re.compile(r"(\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)([kKMGT]?)bps\Z")
_RATE_SCALE = {"": 1, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def parse_bits_rate(text: str) -> float | None:
    """An ss rate: ``2250000bps`` (with -n) or ``2.25Mbps``/``350kbps`` (bits/s); None if not one."""
    m = _RATE.match(text.strip())
    if not m:
        return None
    return float(m.group(1)) * _RATE_SCALE[m.group(2)]


_TC_NUM = re.compile(r"(\d+(?:\.\d+)?)([A-Za-zµ]*)\Z")
_TC_SIZE = {"": 1, "b": 1, "k": 1024, "kb": 1024, "m": 1024**2, "mb": 1024**2, "g": 1024**3, "gb": 1024**3}
_TC_RATE = {"bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12, "bps": 8, "kbps": 8e3, "mbps": 8e6}
_TC_TIME = {"ns": 1, "us": 1e3, "µs": 1e3, "usec": 1e3, "ms": 1e6, "msec": 1e6, "s": 1e9, "sec": 1e9}


def parse_tc_size(text: str) -> float | None:
    """tc's printed sizes: ``1514b``, ``32Kb``, ``32Mb`` (bytes, 1024-based), ``10000p`` -> None."""
    m = _TC_NUM.match(text)
    if not m:
        return None
    unit = m.group(2).lower()
    if unit in _TC_SIZE:
        return float(m.group(1)) * _TC_SIZE[unit]
    return None


def parse_tc_rate(text: str) -> float | None:
    m = _TC_NUM.match(text)
    if not m:
        return None
    unit = m.group(2).lower()
    return float(m.group(1)) * _TC_RATE[unit] if unit in _TC_RATE else None


def parse_tc_time_ns(text: str) -> float | None:
    m = _TC_NUM.match(text)
    if not m:
        return None
    unit = m.group(2).lower() if m.group(2) != "µs" else "µs"
    return float(m.group(1)) * _TC_TIME[unit] if unit in _TC_TIME else None

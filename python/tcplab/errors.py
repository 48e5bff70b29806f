"""Errors a user can fix, and the one-line form they are reported in.

The model: a scenario is wrong in one place at a time, and the place has an address.
Every user-facing error names the file, the field path inside it (dotted, list indices as
numbers: ``links.0.rate``), what is wrong with the value, and what would have been
accepted::

    s.yaml:12: links.0.rate: "5Mbt" is not a rate; expected a number with a unit such as 5Mbit

(``:12`` is the line in the YAML file where that field is written, when it came from a file;
a value given with ``--set`` is reported as ``--set: PATH: ...``). Every problem found is
reported, one line each, in file order.

The CLI prefixes ``error: `` and exits with code 2. Nothing is run and no output directory
is left behind when a :class:`ScenarioError` is raised.

:class:`UnitError` is what the unit parsers raise; it is a ``ValueError`` (so pydantic
validators can raise it) that carries the same ``problem``/``expected`` pair, and the
scenario loader turns it into a :class:`ScenarioError` once the field path is known.

:class:`EngineError` is for failures inside the simulator (``tcplab._core``): they are bugs
or limits of tcplab, not of the scenario, and the CLI reports them with exit code 1.
"""

from __future__ import annotations

from typing import Any

from tcplab.literals import Oversized, abbreviate_digits, int_text

__all__ = [
    "ScenarioError",
    "ScenarioWarning",
    "UnitError",
    "UnitErrors",
    "EngineError",
    "EngineMemoryError",
    "EngineWarning",
    "show_value",
]


def show_value(value: Any) -> str:
    """How a bad value is quoted in a message: strings in double quotes, the rest as YAML-ish.

    A number of more than 30 digits (in an int, an :class:`~tcplab.literals.Oversized` or a
    run of digits in a string) is shown as its first 20 digits, ``…`` and its count of digits.
    """
    if isinstance(value, Oversized):
        return value.shown()
    if isinstance(value, str):
        value = abbreviate_digits(value)
        text = value if len(value) <= 60 else value[:57] + "..."
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if value is None:
        return "null (empty)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, int):
        return int_text(value)
    return repr(value)


class UnitError(ValueError):
    """A value that could not be parsed; the field path is added by the caller."""

    def __init__(self, problem: str, expected: str = "", value: Any = None, subpath: tuple = ()):
        super().__init__(f"{problem}; expected {expected}" if expected else problem)
        self.problem = problem
        self.expected = expected
        self.value = value
        #: Path below the field being validated (e.g. ``("gilbert_elliott", "p")`` for a loss).
        self.subpath = tuple(subpath)


class UnitErrors(UnitError):
    """Several independent problems found by one check (each a :class:`UnitError`)."""

    def __init__(self, errors: list[UnitError]):
        super().__init__(errors[0].problem, errors[0].expected, errors[0].value, errors[0].subpath)
        self.errors = errors


class ScenarioError(Exception):
    """A mistake in a scenario (file, dict or ``--set`` override), as one line.

    Attributes:
        file: where the scenario came from (a path, ``--set``, ``<dict>``), or ``""``.
        lineno: the 1-based line in ``file`` where ``path`` is written, or ``None``.
        path: dotted field path (``flows.1.to``), or ``""`` for file-level problems.
        value: the offending value (``None`` when not applicable).
        problem: what is wrong, usually quoting the value.
        expected: what would have been accepted.
        errors: all errors found (this one first); the CLI prints one line each.
    """

    def __init__(
        self,
        problem: str,
        *,
        file: str = "",
        path: str = "",
        value: Any = None,
        expected: str = "",
        errors: list[ScenarioError] | None = None,
        lineno: int | None = None,
    ):
        self.problem = problem
        self.file = str(file) if file else ""
        self.lineno = lineno
        self.path = path
        self.value = value
        self.expected = expected
        self.errors = errors if errors else [self]
        super().__init__(self.line())

    def line(self) -> str:
        """The message without the ``error: `` prefix, on one line."""
        where = f"{self.file}:{self.lineno}" if self.file and self.lineno else self.file
        parts = [p for p in (where, abbreviate_digits(self.path)) if p]  # links.<5000 digits>.rate
        text = self.problem + (f"; expected {self.expected}" if self.expected else "")
        line = ": ".join(parts + [text])
        return " ".join(line.splitlines())

    def __str__(self) -> str:
        return self.line()

    def with_file(self, file: str) -> ScenarioError:
        """The same error(s), attributed to ``file`` where no file was named yet."""
        for e in self.errors:
            if not e.file:
                e.file = str(file)
        if not self.file:
            self.file = str(file)
        self.args = (self.line(),)
        return self


class ScenarioWarning:
    """A valid scenario value that probably does not mean what was intended (one line).

    Same address as a :class:`ScenarioError` (``file:LINE: path: message``); the CLI prints
    each as ``warning: ...`` and runs anyway. :attr:`tcplab.scenario.Scenario.warnings` holds them.
    """

    def __init__(self, message: str, *, file: str = "", path: str = "", lineno: int | None = None):
        self.message = message
        self.file = str(file) if file else ""
        self.path = path
        self.lineno = lineno

    def line(self) -> str:
        """The message without the ``warning: `` prefix, on one line."""
        where = f"{self.file}:{self.lineno}" if self.file and self.lineno else self.file
        return " ".join(": ".join([p for p in (where, self.path) if p] + [self.message]).splitlines())

    def __str__(self) -> str:
        return self.line()

    def __repr__(self) -> str:
        return f"ScenarioWarning({self.line()!r})"


class EngineError(RuntimeError):
    """The simulator failed (a tcplab bug or limit, not a scenario mistake)."""


class EngineMemoryError(EngineError, MemoryError):
    """The simulator ran out of memory (an allocation failed); the message says where."""


class EngineWarning(UserWarning):
    """A setting the engine accepts but that defeats the run; the message names the field."""

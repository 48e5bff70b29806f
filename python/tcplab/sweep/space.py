"""The parameter space of a sweep: ``--grid`` and ``--random`` -> parameters and points.

The model: a sweep varies scenario fields given by dotted paths, as ``--set`` names them
(:mod:`tcplab.overrides`).

* ``--grid PATH=v1,v2,...``: the values exactly as ``--set`` alternatives (commas at the top
  level separate them; each is read as YAML; the label is the text as written, ``0.5%``).
  Several ``--grid`` give the cartesian product, in the order given (the first varies
  slowest).
* ``--random PATH=lo..hi``: ``-n N`` values drawn uniformly between ``lo`` and ``hi``
  (both written with the same unit: ``0%..1%``, ``10Mbit..100Mbit``, ``20ms..200ms``,
  ``1024..8192``) by ``random.Random(sample_seed)``. Several ``--random`` are drawn jointly:
  N points in all, each drawing one value per parameter, parameters in the order given.
  Each value is written with lo's unit and 4 significant digits (``0.3721%``,
  ``57.31Mbit``); when both ends are plain integers without a unit (a ring size, a queue
  limit in packets) the draw is an integer (``random.randint``), so integer fields stay
  integers. A sample of the same ranges with the same ``sample_seed`` is always the same.
* grid x random: every grid combination with every random draw (grid outer).
* No ``--grid`` and no ``--random``: one point, the scenario as it is (a sweep of seeds).

A *point* is one combination: its index in plan order and one label (and YAML value) per
parameter. Seeds are not parameters; :mod:`tcplab.sweep` crosses points with seeds.

Mistakes (no ``=``, an empty value, a path given twice, units that differ, ``lo > hi``,
``--random`` without ``-n``) are :class:`~tcplab.errors.ScenarioError` one-liners naming
``--grid`` or ``--random``, before anything runs.
"""

from __future__ import annotations

import itertools
import math
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tcplab.errors import ScenarioError, show_value
from tcplab.literals import NUMBER_UNIT, load_yaml_scalar, number_and_unit, value_text
from tcplab.overrides import Override, parse_override

__all__ = [
    "Parameter",
    "Point",
    "parse_grid",
    "parse_random",
    "plan_points",
    "number_and_unit",
    "numeric_values",
    "format_sample",
    "GRID_EXPECTED",
    "RANDOM_EXPECTED",
]

GRID_EXPECTED = "PATH=V1,V2,... such as flows.0.cc=cubic,bbr or links.1.loss=0%,0.5%,1%"
RANDOM_EXPECTED = "PATH=LO..HI with one unit on both ends, such as links.1.loss=0%..1% or links.1.rate=10Mbit..100Mbit"

_PLAIN_INT = re.compile(r"\s*[+-]?\d+\s*\Z")
#: Significant digits of a drawn value.
SAMPLE_DIGITS = 4


@dataclass(frozen=True)
class Parameter:
    """One swept field: its dotted path, how it is varied, its labels and values.

    For a grid parameter ``labels``/``values`` are its alternatives; for a random one, the
    drawn values, one per sample (in draw order). ``low``/``high`` keep a range as written.
    """

    path: str
    kind: str  # "grid" | "random"
    labels: tuple[str, ...]
    values: tuple[Any, ...]
    low: str | None = None
    high: str | None = None

    @property
    def parts(self) -> tuple[str, ...]:
        return parse_override(f"{self.path}=x").path

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "kind": self.kind, "values": list(self.labels)}
        if self.kind == "random":
            out["range"] = [self.low, self.high]
        return out


@dataclass(frozen=True)
class Point:
    """One combination of parameter values: ``index`` in plan order, one label and YAML
    value per parameter (in the parameters' order)."""

    index: int
    labels: tuple[str, ...]
    values: tuple[Any, ...]

    def overrides(self, parameters: Sequence[Parameter]) -> list[Override]:
        """The point as single-valued overrides, applied after the base ``--set`` ones."""
        return [
            Override(text=f"{p.path}={label}", path=p.parts, values=(value,), labels=(label,))
            for p, label, value in zip(parameters, self.labels, self.values, strict=True)
        ]

    def texts(self, parameters: Sequence[Parameter]) -> list[str]:
        """``["PATH=LABEL", ...]``, for provenance and failure records."""
        return [f"{p.path}={label}" for p, label in zip(parameters, self.labels, strict=True)]


def _error(option: str, problem: str, expected: str, path: str = "") -> ScenarioError:
    return ScenarioError(problem, file=option, path=path, expected=expected)


def _split_path(text: str, option: str, expected: str) -> tuple[str, str]:
    if "=" not in text:
        raise _error(option, f'{show_value(text)} has no "="', expected)
    path, value = text.split("=", 1)
    path = path.strip()
    if not path or any(p.strip() == "" for p in path.split(".")):
        raise _error(option, f"{show_value(path)} is not a field path", expected, path)
    return ".".join(p.strip() for p in path.split(".")), value


def parse_grid(text: str) -> Parameter:
    """``"flows.0.cc=cubic,bbr"`` -> a grid Parameter (values read as ``--set`` reads them)."""
    path, _ = _split_path(text, "--grid", GRID_EXPECTED)
    try:
        ov = parse_override(text)
    except ScenarioError as e:
        for err in e.errors:
            err.file = "--grid"
        e.file = "--grid"
        e.args = (e.line(),)
        raise
    labels = ov.labels
    if any(label == "" for label in labels):
        raise _error("--grid", f"an empty value in {show_value(text.split('=', 1)[1])}", GRID_EXPECTED, path)
    dupes = sorted({label for label in labels if labels.count(label) > 1})
    if dupes:
        raise _error("--grid", f"{show_value(dupes[0])} is given twice", "each value once", path)
    return Parameter(path=path, kind="grid", labels=tuple(labels), values=tuple(ov.values))


@dataclass(frozen=True)
class _Range:
    path: str
    low: float
    high: float
    unit: str
    integer: bool
    low_text: str
    high_text: str


def parse_random(text: str) -> _Range:
    """``"links.1.loss=0%..1%"`` -> a range to draw from (see the module doc)."""
    path, value = _split_path(text, "--random", RANDOM_EXPECTED)
    if ".." not in value:
        raise _error("--random", f"{show_value(value)} is not a range LO..HI", RANDOM_EXPECTED, path)
    if "..." in value or value.count("..") > 1:  # 0%...1% is 0%..0.1% or 0%..1%? refuse to guess
        raise _error("--random", f"{show_value(value)} is ambiguous (more than one ..)", RANDOM_EXPECTED, path)
    lo_text, hi_text = (v.strip() for v in value.split("..", 1))
    ends = []
    for end in (lo_text, hi_text):
        parsed = number_and_unit(end)
        if parsed is None and NUMBER_UNIT.match(end):  # a number, but float() overflows
            raise _error("--random", f"{show_value(end)} is too large", RANDOM_EXPECTED, path)
        if parsed is None:
            raise _error("--random", f"{show_value(end)} is not a number with an optional unit", RANDOM_EXPECTED, path)
        ends.append(parsed)
    (lo, lo_unit, _), (hi, hi_unit, _) = ends
    if lo_unit != hi_unit:
        raise _error(
            "--random",
            f"the ends {show_value(lo_text)} and {show_value(hi_text)} have different units",
            "both ends with the same unit, such as 10Mbit..100Mbit",
            path,
        )
    if lo > hi:
        raise _error("--random", f"{show_value(lo_text)} is more than {show_value(hi_text)}", "LO <= HI", path)
    integer = lo_unit == "" and bool(_PLAIN_INT.match(lo_text)) and bool(_PLAIN_INT.match(hi_text))
    return _Range(path, lo, hi, lo_unit, integer, lo_text, hi_text)


def format_sample(x: float, unit: str, digits: int = SAMPLE_DIGITS) -> str:
    """A drawn number with ``digits`` significant digits, no exponent, then the unit."""
    if x == 0:
        return f"0{unit}"
    exponent = math.floor(math.log10(abs(x)))
    decimals = max(0, digits - 1 - exponent)
    text = f"{x:.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return f"{text}{unit}"


def _draw(ranges: Sequence[_Range], n: int, sample_seed: int) -> list[Parameter]:
    rng = random.Random(sample_seed)
    labels: list[list[str]] = [[] for _ in ranges]
    for _ in range(n):
        for k, r in enumerate(ranges):
            if r.integer:
                labels[k].append(str(rng.randint(int(r.low), int(r.high))))
            else:
                labels[k].append(format_sample(r.low + (r.high - r.low) * rng.random(), r.unit))
    return [
        Parameter(
            path=r.path,
            kind="random",
            labels=tuple(ls),
            values=tuple(load_yaml_scalar(label) for label in ls),
            low=r.low_text,
            high=r.high_text,
        )
        for r, ls in zip(ranges, labels, strict=True)
    ]


def plan_points(
    grid: Iterable[str] | Mapping[str, Sequence[Any]] | None = None,
    random_ranges: Iterable[str] | None = None,
    n: int | None = None,
    *,
    sample_seed: int = 0,
    base_paths: Iterable[str] = (),
    seeds: int = 1,
    max_runs: int | None = None,
) -> tuple[list[Parameter], list[Point]]:
    """Parameters (grid ones first, in the order given, then random ones) and points.

    ``max_runs``: refuse (one line, before drawing or combining anything) a space whose
    points x ``seeds`` are more runs."""
    params: list[Parameter] = []
    if isinstance(grid, Mapping):
        for path, values in grid.items():
            if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
                values = [values]
            if not values:
                raise _error("--grid", "no values", GRID_EXPECTED, str(path))
            labels = tuple(value_text(v) for v in values)
            dupes = sorted({label for label in labels if labels.count(label) > 1})
            if dupes:
                raise _error("--grid", f"{show_value(dupes[0])} is given twice", "each value once", str(path))
            params.append(Parameter(path=str(path), kind="grid", labels=labels, values=tuple(values)))
    else:
        params.extend(parse_grid(g) for g in (grid or []))
    ranges = [parse_random(r) for r in (random_ranges or [])]
    if ranges and n is None:
        raise _error("-n", "--random needs the number of points to draw", "-n N, such as -n 20")
    if n is not None and not ranges:
        raise _error("-n", f"{n} points to draw but no --random range", "-n only with --random PATH=LO..HI")
    if n is not None and n < 1:
        raise _error("-n", f"{n} points", "a number of points of 1 or more")
    if max_runs is not None:
        # before anything is drawn or combined: 10^6 points would take minutes and
        # gigabytes to validate only to be refused
        grid_count = math.prod(len(p.labels) for p in params)
        count = grid_count * (n if ranges else 1)
        if count * seeds > max_runs:
            option = "--seeds" if count <= max_runs else ("--grid" if grid_count > 1 else "-n")
            s_ = "s" if seeds != 1 else ""
            raise _error(
                option,
                f"{count} point{'s' if count != 1 else ''} x {seeds} seed{s_} = {count * seeds} runs",
                f"at most {max_runs} runs in one sweep (split it, fewer seeds, or sample the space "
                "with --random PATH=LO..HI -n N)",
            )
    drawn = _draw(ranges, n, sample_seed) if ranges else []
    seen: set[str] = set(base_paths)
    for p in [*params, *drawn]:
        if p.path == "seed":
            option = "--grid" if p.kind == "grid" else "--random"
            raise _error(
                option, "seeds are not a parameter", "--seeds K (and --seed BASE) for seeds BASE..BASE+K-1", "seed"
            )
        if p.path in seen:
            option = "--grid" if p.kind == "grid" else "--random"
            raise _error(option, "this path is given twice (with --set, --grid or --random)", "each path once", p.path)
        seen.add(p.path)
    grid_params = [p for p in params]
    points: list[Point] = []
    combos = list(itertools.product(*[range(len(p.labels)) for p in grid_params]))
    samples = list(range(n)) if drawn else [None]
    for combo in combos:
        for s in samples:
            labels = [p.labels[c] for p, c in zip(grid_params, combo, strict=True)]
            values = [p.values[c] for p, c in zip(grid_params, combo, strict=True)]
            if s is not None:
                labels += [p.labels[s] for p in drawn]
                values += [p.values[s] for p in drawn]
            points.append(Point(index=len(points), labels=tuple(labels), values=tuple(values)))
    return [*grid_params, *drawn], points


def numeric_values(labels: Sequence[str]) -> list[float] | None:
    """The numbers of a parameter's labels for the ``PATH#value`` column, when every label
    is a number with the same unit (or none): ``["0%", "0.5%"]`` -> ``[0.0, 0.5]``."""
    parsed = [number_and_unit(label) for label in labels]
    if not parsed or any(p is None for p in parsed):
        return None
    units = {p[1] for p in parsed if p is not None}
    if len(units) != 1:
        return None
    return [p[0] for p in parsed if p is not None]

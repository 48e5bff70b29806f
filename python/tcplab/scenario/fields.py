"""Field parsers of the scenario schema: names, integers, booleans, cc names, sysctl triples.

Each parser takes a raw YAML value and returns the engine's value, or raises
:class:`~tcplab.errors.UnitError` (never anything else); pydantic records the field path.
Units themselves (times, rates, sizes, fractions) are parsed by :mod:`tcplab.units`; the
``Annotated`` types at the end bind both to pydantic fields.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BeforeValidator

from tcplab.errors import UnitError, show_value
from tcplab.units import U64_MAX, OutOfRange, parse_number, parse_percent, parse_rate, parse_size, parse_time

#: The congestion controls the engine has (``tcp_congestion_ops`` names; DCTCP: tcp_dctcp.c).
CC_NAMES = ("reno", "cubic", "bbr", "dctcp")
NAME_PATTERN = re.compile(r"[A-Za-z0-9_.-]+\Z")
#: A scenario name becomes a directory (``runs/NAME``): at most this many characters, so that
#: it and tcplab's temporary sibling ``.NAME.XXXXXXXX.tmp`` fit a file name (NAME_MAX 255).
MAX_SCENARIO_NAME = 100
#: Largest values the engine keeps in 32 bits (a pfifo/bfifo limit, as tc's u32 ``limit``).
U32_MAX = 2**32 - 1
#: Largest int sysctl (``tcp_rmem``, ``tcp_wmem``, ``tcp_limit_output_bytes`` are C ints).
INT_MAX = 2**31 - 1


def _parse_name(what: str):
    def parse(value: Any) -> str:
        if isinstance(value, str) and NAME_PATTERN.match(value):
            return value
        raise UnitError(f"{show_value(value)} is not a valid {what}", "letters, digits, '_', '.' or '-'", value)

    return parse


def _parse_scenario_name(value: Any) -> str:
    """A scenario name: also a safe single path component, since it names the run directory."""
    name = _parse_name("name")(value)
    expected = (
        f"a name of letters, digits, '_', '.' or '-', not starting with '.', at most {MAX_SCENARIO_NAME} characters"
    )
    if name.startswith("."):
        # ".", ".." would name the parent of runs/ (or runs/ itself); ".x" a hidden directory,
        # the form of tcplab's own temporary directories.
        raise UnitError(f"{show_value(name)} starts with '.' (it names the run directory)", expected, value)
    if len(name) > MAX_SCENARIO_NAME:
        raise UnitError(f"{show_value(name)} is {len(name)} characters long", expected, value)
    return name


def _parse_int(lo: int = 0, hi: int = U64_MAX, what: str = "an integer"):
    expected = f"an integer from {lo} to {hi}" if hi < U64_MAX else f"an integer of at least {lo}"

    def parse(value: Any) -> int:
        if isinstance(value, bool) or value is None:
            raise UnitError(f"{show_value(value)} is not {what}", expected, value)
        try:
            number = parse_number(value, what, expected)
        except OutOfRange as e:  # a number, too large for any field (1e999, 5000 digits)
            raise OutOfRange(e.problem, expected, value) from None
        except UnitError:
            raise UnitError(f"{show_value(value)} is not {what}", expected, value) from None
        if number != number.to_integral_value():
            raise UnitError(f"{show_value(value)} is not a whole number", expected, value)
        result = int(number)
        if result > hi:
            raise OutOfRange(f"{show_value(value)} is out of range", expected, value)
        if result < lo:
            raise UnitError(f"{show_value(value)} is out of range", expected, value)
        return result

    return parse


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _parse_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise UnitError(f"{show_value(value)} is not a boolean", "0 or 1 (or true/false)", value)


def _parse_cc(value: Any) -> str:
    if isinstance(value, str) and value.strip().lower() in CC_NAMES:
        return value.strip().lower()
    raise UnitError(f"unknown congestion control {show_value(value)}", "one of: " + ", ".join(CC_NAMES), value)


def _parse_mem_triple(value: Any) -> tuple[int, int, int]:
    expected = 'three sizes "min default max" such as "4096 131072 6291456"'
    if isinstance(value, str):
        items: list[Any] = value.split()
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise UnitError(f"{show_value(value)} is not a size triple", expected, value)
    if len(items) != 3:
        raise UnitError(f"{show_value(value)} has {len(items)} values, not 3", expected, value)
    sizes = []
    for i, item in enumerate(items):
        try:
            sizes.append(parse_size(item))
        except UnitError as e:
            raise UnitError(e.problem, e.expected, item, subpath=(i,) if not isinstance(value, str) else ()) from None
    for i, size in enumerate(sizes):
        # Linux v6.12 net/ipv4/sysctl_net_ipv4.c: tcp_rmem/tcp_wmem are ints with extra1 = SYSCTL_ONE.
        if not 1 <= size <= INT_MAX:
            raise UnitError(
                f"{show_value(items[i])} is out of range",
                f"each size from 1 to {INT_MAX} bytes (a C int, as the sysctl)",
                items[i],
                subpath=(i,) if not isinstance(value, str) else (),
            )
    lo, default, hi = sizes
    if not lo <= default <= hi:
        raise UnitError(f"{show_value(value)} is not ordered min <= default <= max", expected, value)
    return (lo, default, hi)


def _parse_size_range(lo: int, hi: int, what: str):
    """A size from ``lo`` to ``hi`` bytes (what the engine keeps for the field)."""

    def parse(value: Any) -> int:
        size = parse_size(value)
        if not lo <= size <= hi:
            raise UnitError(f"{show_value(value)} is out of range", f"{what} from {lo} to {hi} bytes", value)
        return size

    return parse


def _parse_between(value: Any) -> tuple[str, str]:
    expected = "two node names such as [server, r1]"
    if not isinstance(value, (list, tuple)):
        raise UnitError(f"{show_value(value)} is not a list of two nodes", expected, value)
    if len(value) != 2:
        raise UnitError(f"{len(value)} nodes given", expected, value)
    names = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or not NAME_PATTERN.match(item):
            raise UnitError(f"{show_value(item)} is not a node name", expected, item, subpath=(i,))
        names.append(item)
    return (names[0], names[1])


def _sub(e: UnitError, *prefix: Any) -> UnitError:
    return UnitError(e.problem, e.expected, e.value, subpath=tuple(prefix) + e.subpath)


Name = Annotated[str, BeforeValidator(_parse_name("name"))]
ScenarioName = Annotated[str, BeforeValidator(_parse_scenario_name)]
IntSize = Annotated[int, BeforeValidator(_parse_size_range(1, INT_MAX, "a size"))]
NodeName = Annotated[str, BeforeValidator(_parse_name("node name"))]
Rate = Annotated[int, BeforeValidator(parse_rate)]
Time = Annotated[int, BeforeValidator(parse_time)]
PosTime = Annotated[int, BeforeValidator(lambda v: parse_time(v, allow_zero=False))]
Size = Annotated[int, BeforeValidator(parse_size)]
Probability = Annotated[float, BeforeValidator(parse_percent)]
Bool = Annotated[bool, BeforeValidator(_parse_bool)]
CcName = Annotated[str, BeforeValidator(_parse_cc)]
MemTriple = Annotated[tuple[int, int, int], BeforeValidator(_parse_mem_triple)]


def Int(lo: int = 0, hi: int = U64_MAX) -> Any:  # noqa: N802 - a type factory
    return Annotated[int, BeforeValidator(_parse_int(lo, hi))]


def _did_you_mean(key: Any, allowed: list[str]) -> str:
    import difflib

    if not isinstance(key, str):
        return ""
    close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
    return f' (did you mean "{close[0]}"?)' if close else ""


def _t(ns: int) -> str:
    from tcplab.units import format_time

    return format_time(ns)

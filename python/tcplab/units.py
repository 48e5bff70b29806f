"""Human units in scenario files, parsed into the engine's integer units.

The model: a scenario says ``rate: 5Mbit``, ``delay: 50ms``, ``limit: 150KB``, ``loss: 1%``
the way ``tc`` and ``netem`` do; the engine takes integers with the unit in the name
(``rate_bps``, ``delay_ns``, ``limit_bytes``) and probabilities as fractions. Parsing is exact
(decimal arithmetic, rounded half-up to the nearest integer unit), so ``1.5ms`` is exactly
1500000 ns and ``format_*`` values parse back to the same integer.

Rates (bits per second; unit names are case-insensitive, as in tc(8))
    ``bit``  ``kbit`` ``mbit`` ``gbit`` ``tbit``   powers of 1000 bits/s (``5Mbit`` = 5 000 000)
    ``kibit`` ``mibit`` ``gibit`` ``tibit``        powers of 1024 bits/s
    ``bit/s`` ``kbit/s`` ... ``gbit/s``            same as without ``/s``
    ``bps`` ``kbps`` ``mbps`` ``gbps`` ``tbps``    **bytes** per second, powers of 1000, exactly as
                                                   tc reads them (``1Mbps`` = 8 000 000 bit/s)
    ``kibps`` ``mibps`` ``gibps`` ``tibps``        bytes per second, powers of 1024
    a bare number                                  bits per second (as tc)

Sizes (bytes; case-sensitive, because the same letters mean different things)
    ``B`` or a bare number                         bytes
    ``KB`` ``kB`` ``MB`` ``GB`` ``TB``             SI: powers of 1000 bytes (``150KB`` = 150 000)
    ``KiB`` ``MiB`` ``GiB`` ``TiB``                IEC: powers of 1024 bytes
    ``k`` ``kb`` ``Kb`` ``m`` ``mb`` ``Mb`` ``g`` ``gb`` ``Gb``
                                                   tc's forms: **bytes**, powers of 1024, as
                                                   ``get_size()`` in iproute2 reads them
                                                   (``64Kb`` = 65 536 bytes, not kilobits).
    Note: tc also reads ``KB`` as 1024; tcplab reads ``KB`` as 1000 (SI). Write ``KiB`` or
    ``kb`` when you mean tc's value.

Times (nanoseconds; case-insensitive)
    ``ns`` ``nsec``; ``us`` ``usec`` ``µs``; ``ms`` ``msec``; ``s`` ``sec`` ``secs``; ``min``;
    ``h`` ``hour`` (tc has no hours; a run's length and ``limits.cpu_time`` use them).
    A bare number is rejected (tc would read it as microseconds), except ``0``.

Percentages (probabilities: loss, Gilbert-Elliott p/r/h/k, reorder probability)
    ``1%`` = 0.01, and a **bare number is percent too**: ``1`` = ``1%`` = 0.01, ``0.5`` = 0.5%,
    as netem reads them (iproute2 tc/tc_util.c: parse_percent() divides the number by 100 and
    accepts an optional ``%``). From 0% to 100%.

Every parser raises :class:`~tcplab.errors.UnitError` (a ``ValueError``) and nothing else;
:class:`OutOfRange`, a UnitError, for a number whose magnitude no field takes (``1e999Mbit``,
a literal of more than 100 digits: :class:`tcplab.literals.Oversized`).
"""

from __future__ import annotations

import decimal
import math
import re
from decimal import Decimal
from typing import Any

from tcplab.errors import UnitError, show_value
from tcplab.literals import Oversized

__all__ = [
    "plural",
    "percent_text",
    "U64_MAX",
    "OutOfRange",
    "RATE_EXPECTED",
    "TIME_EXPECTED",
    "SIZE_EXPECTED",
    "FRACTION_EXPECTED",
    "parse_rate",
    "parse_time",
    "parse_size",
    "parse_percent",
    "parse_number",
    "parse_tc_size",
    "TC_SIZE_EXPECTED",
    "format_rate",
    "format_time",
    "format_size",
    "format_percent",
    "human_rate",
    "rate_unit_warning",
]

U64_MAX = 2**64 - 1

RATE_EXPECTED = "a number with a unit such as 5Mbit, 100Kbit, 1Gbit"
TIME_EXPECTED = "a number with a unit such as 50ms, 250us, 1.5s"
SIZE_EXPECTED = "a size such as 1500B, 150KB, 64KiB, 4MB"
FRACTION_EXPECTED = "a percentage from 0% to 100% such as 1% or 0.5 (a bare number is percent, as in netem)"

_RATE_UNITS: dict[str, int] = {"": 1}
for _prefix, _si, _iec in (("k", 10**3, 2**10), ("m", 10**6, 2**20), ("g", 10**9, 2**30), ("t", 10**12, 2**40)):
    _RATE_UNITS[f"{_prefix}bit"] = _si
    _RATE_UNITS[f"{_prefix}bit/s"] = _si
    _RATE_UNITS[f"{_prefix}ibit"] = _iec
    _RATE_UNITS[f"{_prefix}bps"] = 8 * _si
    _RATE_UNITS[f"{_prefix}ibps"] = 8 * _iec
_RATE_UNITS["bit"] = 1
_RATE_UNITS["bit/s"] = 1
_RATE_UNITS["bps"] = 8

_SIZE_UNITS: dict[str, int] = {"": 1, "B": 1, "b": 1}
for _p, _exp in (("K", 1), ("M", 2), ("G", 3), ("T", 4)):
    _SIZE_UNITS[f"{_p}B"] = 1000**_exp
    _SIZE_UNITS[f"{_p}iB"] = 1024**_exp
for _p, _exp in (("k", 1), ("m", 2), ("g", 3)):
    for _form in (_p, _p.upper(), f"{_p}b", f"{_p.upper()}b"):
        _SIZE_UNITS[_form] = 1024**_exp
_SIZE_UNITS["kB"] = 1000  # SI lower-case k

_TIME_UNITS: dict[str, int] = {
    "ns": 1,
    "nsec": 1,
    "nsecs": 1,
    "us": 10**3,
    "usec": 10**3,
    "usecs": 10**3,
    "µs": 10**3,
    "μs": 10**3,
    "ms": 10**6,
    "msec": 10**6,
    "msecs": 10**6,
    "s": 10**9,
    "sec": 10**9,
    "secs": 10**9,
    "min": 60 * 10**9,
    "mins": 60 * 10**9,
    "h": 3600 * 10**9,
    "hour": 3600 * 10**9,
    "hours": 3600 * 10**9,
}

_NUMBER = re.compile(r"\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*(.*?)\s*\Z", re.DOTALL)
# Exponents beyond this are surely a typo and would only make the arithmetic slow.
_MAX_ADJUSTED_EXPONENT = 40


class OutOfRange(UnitError):
    """A number too large (or too small) for any field: its magnitude, not its form, is wrong."""


def _to_decimal(text: str) -> Decimal | None:
    try:
        with decimal.localcontext() as ctx:
            ctx.prec = 60
            d = Decimal(text)
            if not d.is_finite() or abs(d.adjusted()) > _MAX_ADJUSTED_EXPONENT:
                return None
            return d
    except (decimal.DecimalException, ValueError):
        return None


def _split(value: Any, kind: str, expected: str) -> tuple[Decimal, str]:
    """Split ``value`` into (number, unit text). Numbers from YAML have unit ``""``."""
    if isinstance(value, Oversized):  # a literal of more than 100 digits (tcplab.literals)
        raise OutOfRange(f"{show_value(value)} is too large", expected, value)
    if isinstance(value, bool) or value is None or not isinstance(value, (str, int, float)):
        raise UnitError(f"{show_value(value)} is not {kind}", expected, value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise UnitError(f"{show_value(value)} is not {kind}", expected, value)
        number = _to_decimal(repr(value))
        if number is None:
            raise OutOfRange(f"{show_value(value)} is out of range", expected, value)
        return number, ""
    if isinstance(value, int):
        if abs(value) > 10**30:
            raise OutOfRange(f"{show_value(value)} is out of range", expected, value)
        return Decimal(value), ""
    m = _NUMBER.match(value)
    if not m:
        raise UnitError(f"{show_value(value)} is not {kind}", expected, value)
    number = _to_decimal(m.group(1))
    if number is None:
        raise OutOfRange(f"{show_value(value)} is out of range", expected, value)
    return number, m.group(2)


def _scaled(number: Decimal, factor: int, value: Any, expected: str) -> int:
    with decimal.localcontext() as ctx:
        ctx.prec = 80
        scaled = (number * factor).quantize(Decimal(1), rounding=decimal.ROUND_HALF_UP)
    result = int(scaled)
    if result > U64_MAX:
        raise OutOfRange(f"{show_value(value)} is too large", expected, value)
    return result


def parse_number(value: Any, kind: str = "a number", expected: str = "a number such as 1.5") -> Decimal:
    """A plain number (int, float or numeric string) as an exact Decimal."""
    number, unit = _split(value, kind, expected)
    if unit:
        raise UnitError(f"{show_value(value)} is not {kind}", expected, value)
    return number


def parse_rate(value: Any, *, allow_zero: bool = False) -> int:
    """A rate in bits per second (``"5Mbit"`` -> 5000000). Zero only with ``allow_zero``."""
    number, unit = _split(value, "a rate", RATE_EXPECTED)
    factor = _RATE_UNITS.get(unit.lower())
    if factor is None:
        raise UnitError(f"{show_value(value)} is not a rate (unknown unit {show_value(unit)})", RATE_EXPECTED, value)
    if number < 0:
        raise UnitError(f"{show_value(value)} is negative", "a positive rate such as 5Mbit", value)
    bps = _scaled(number, factor, value, RATE_EXPECTED)
    if bps == 0 and not allow_zero:
        raise UnitError(f"{show_value(value)} is zero", "a positive rate such as 5Mbit", value)
    return bps


def parse_time(value: Any, *, allow_zero: bool = True) -> int:
    """A time in nanoseconds (``"1.5ms"`` -> 1500000). A bare number must be 0."""
    number, unit = _split(value, "a time", TIME_EXPECTED)
    if unit == "" and number != 0:
        raise UnitError(f"{show_value(value)} has no unit", TIME_EXPECTED, value)
    factor = 1 if unit == "" else _TIME_UNITS.get(unit if unit in ("µs", "μs") else unit.lower())
    if factor is None:
        raise UnitError(f"{show_value(value)} is not a time (unknown unit {show_value(unit)})", TIME_EXPECTED, value)
    if number < 0:
        raise UnitError(f"{show_value(value)} is negative", "a time of 0 or more such as 50ms", value)
    ns = _scaled(number, factor, value, TIME_EXPECTED)
    if ns == 0 and not allow_zero:
        raise UnitError(f"{show_value(value)} is zero", "a positive time such as 50ms", value)
    return ns


def parse_size(value: Any, *, allow_zero: bool = True) -> int:
    """A size in bytes (``"150KB"`` -> 150000, ``"64KiB"`` -> 65536, ``"64kb"`` -> 65536)."""
    number, unit = _split(value, "a size", SIZE_EXPECTED)
    factor = _SIZE_UNITS.get(unit)
    if factor is None:
        hint = ""
        if unit.lower().endswith("bit"):
            hint = " (sizes are in bytes)"
        raise UnitError(
            f"{show_value(value)} is not a size (unknown unit {show_value(unit)}){hint}", SIZE_EXPECTED, value
        )
    if number < 0:
        raise UnitError(f"{show_value(value)} is negative", "a size of 0 or more such as 150KB", value)
    size = _scaled(number, factor, value, SIZE_EXPECTED)
    if size == 0 and not allow_zero:
        raise UnitError(f"{show_value(value)} is zero", "a positive size such as 150KB", value)
    return size


#: tc's size suffixes, as iproute2 lib/utils_math.c get_size64() reads them (case-insensitive):
#: ``b`` bytes; ``k``/``kb`` 1024 bytes, ``m``/``mb`` 1024^2, ``g``/``gb`` 1024^3 (bytes, not
#: bits: ``32Mb`` is 32 MiB); ``kbit`` 1024/8 bytes, ``mbit`` 1024^2/8, ``gbit`` 1024^3/8.
_TC_SIZE_UNITS: dict[str, Decimal] = {
    "": Decimal(1),
    "b": Decimal(1),
    "k": Decimal(1024),
    "kb": Decimal(1024),
    "m": Decimal(1024**2),
    "mb": Decimal(1024**2),
    "g": Decimal(1024**3),
    "gb": Decimal(1024**3),
    "kbit": Decimal(1024) / 8,
    "mbit": Decimal(1024**2) / 8,
    "gbit": Decimal(1024**3) / 8,
}
#: IEC forms, not in tc but unambiguous (same values as tc's ``kb``, ``mb``, ``gb``).
_TC_SIZE_IEC = {"KiB": Decimal(1024), "MiB": Decimal(1024**2), "GiB": Decimal(1024**3)}
TC_SIZE_EXPECTED = (
    'a size as tc reads it, such as 1514, "3028b", "64kb", "32Mb" (b = bytes, k/kb = 1024 bytes, m/mb = MiB)'
)


def parse_tc_size(value: Any, *, allow_zero: bool = False) -> int:
    """A qdisc parameter size in bytes, read exactly as ``tc`` reads it.

    iproute2 lib/utils_math.c: get_size64(): a number, then an optional suffix compared
    case-insensitively: ``b``; ``k``/``kb``, ``m``/``mb``, ``g``/``gb`` (powers of 1024
    **bytes**: ``32Mb`` = 33554432, ``64KB`` = 65536, unlike tcplab's SI ``KB`` elsewhere);
    ``kbit``/``mbit``/``gbit`` (powers of 1024 bits, in bytes). The result is truncated to
    whole bytes, as tc's conversion of its double does. ``KiB``/``MiB``/``GiB`` are accepted
    too. tc's ``SIZE/CELL`` form is not (tcplab has no rate tables).
    """
    number, unit = _split(value, "a size", TC_SIZE_EXPECTED)
    factor = _TC_SIZE_IEC.get(unit) or _TC_SIZE_UNITS.get(unit.lower())
    if factor is None:
        raise UnitError(f"{show_value(value)} is not a size (unknown unit {show_value(unit)})", TC_SIZE_EXPECTED, value)
    if number < 0:
        raise UnitError(f"{show_value(value)} is negative", TC_SIZE_EXPECTED, value)
    with decimal.localcontext() as ctx:
        ctx.prec = 80
        size = int((number * factor).to_integral_value(rounding=decimal.ROUND_FLOOR))
    if size > U64_MAX:
        raise OutOfRange(f"{show_value(value)} is too large", TC_SIZE_EXPECTED, value)
    if size == 0 and not allow_zero:
        raise UnitError(f"{show_value(value)} is zero", "a positive size such as 3028b", value)
    return size


def parse_percent(value: Any) -> float:
    """A percentage as a probability: ``"1%"`` -> 0.01, and a bare ``1`` -> 0.01 too (netem).

    iproute2 tc/tc_util.c: parse_percent() reads ``strtod(str) / 100`` and accepts nothing
    after the number but ``%``; so ``loss 1`` and ``loss 1%`` are both 1%. Must lie in
    [0%, 100%] (the probability netem stores as a u32 fraction of 2^32-1).
    """
    number, unit = _split(value, "a percentage", FRACTION_EXPECTED)
    if unit not in ("", "%"):
        raise UnitError(f"{show_value(value)} is not a percentage", FRACTION_EXPECTED, value)
    if number < 0:
        raise UnitError(f"{show_value(value)} is negative", "a percentage from 0% to 100%", value)
    if number > 100:
        raise UnitError(f"{show_value(value)} is more than 100%", "a percentage from 0% to 100%", value)
    return float(number / 100)


def _format_int(value: int, units: list[tuple[str, int]]) -> str:
    for name, factor in units:
        if value != 0 and value % factor == 0:
            return f"{value // factor}{name}"
    return f"{value}{units[-1][0]}"


def format_rate(bps: int) -> str:
    """``5000000`` -> ``"5Mbit"``; exact, so ``parse_rate(format_rate(x)) == x``."""
    return _format_int(int(bps), [("Tbit", 10**12), ("Gbit", 10**9), ("Mbit", 10**6), ("Kbit", 10**3), ("bit", 1)])


def format_time(ns: int) -> str:
    """``1500000`` -> ``"1500us"``; exact, so ``parse_time(format_time(x)) == x``."""
    return _format_int(int(ns), [("s", 10**9), ("ms", 10**6), ("us", 10**3), ("ns", 1)])


def format_size(size: int) -> str:
    """``150000`` -> ``"150KB"``, ``65536`` -> ``"64KiB"``; exact."""
    return _format_int(
        int(size),
        [("GiB", 2**30), ("GB", 10**9), ("MiB", 2**20), ("MB", 10**6), ("KiB", 2**10), ("KB", 10**3), ("B", 1)],
    )


def format_percent(p: float) -> str:
    """``0.01`` -> ``"1%"`` (shortest form)."""
    text = f"{p * 100:.10g}"
    return f"{text}%"


def human_rate(bps: float) -> str:
    """For display: ``4823000`` -> ``"4.82 Mbit/s"``."""
    for name, factor in (("Gbit/s", 1e9), ("Mbit/s", 1e6), ("Kbit/s", 1e3)):
        if abs(bps) >= factor:
            return f"{bps / factor:.3g} {name}"
    return f"{bps:.3g} bit/s"


_BYTE_RATE_PREFIXES = {
    "": ("bytes", "bit"),
    "k": ("kilobytes", "Kbit"),
    "m": ("megabytes", "Mbit"),
    "g": ("gigabytes", "Gbit"),
    "t": ("terabytes", "Tbit"),
    "ki": ("kibibytes", "Kibit"),
    "mi": ("mebibytes", "Mibit"),
    "gi": ("gibibytes", "Gibit"),
    "ti": ("tebibytes", "Tibit"),
}


def rate_unit_warning(value: Any) -> str | None:
    """A warning for a rate written in tc's **bytes** per second (``5Mbps``), else None.

    tc(8) reads ``bps`` as bytes per second, so ``5Mbps`` is 40 Mbit/s; people usually mean
    megabits. The value is valid (tcplab reads it as tc does); the warning says what it means.
    """
    if not isinstance(value, str):
        return None
    m = _NUMBER.match(value)
    if not m:
        return None
    unit = m.group(2).lower()
    if not unit.endswith("bps") or unit[:-3] not in _BYTE_RATE_PREFIXES:
        return None
    try:
        bps = parse_rate(value)
    except UnitError:
        return None
    name, bit_unit = _BYTE_RATE_PREFIXES[unit[:-3]]
    number = m.group(1)
    return (
        f"{show_value(value)} is {number} {name} per second in tc's units ({human_rate(bps)}); "
        f"write {number}{bit_unit} for {name.replace('bytes', 'bits')}"
    )


# -- words for counts and percentages in output ----------------------------------------------


def plural(n: int | float, word: str, words: str | None = None) -> str:
    """A count and its noun, as people write them: ``1 flow``, ``0 stalls``, ``2 switches``
    (``words``: an irregular plural)."""
    count = int(n) if float(n).is_integer() else n
    if count == 1:
        return f"{count} {word}"
    if words is None:
        words = f"{word}es" if word.endswith(("s", "sh", "ch", "x")) else f"{word}s"
    return f"{count} {words}"


def percent_text(value_pct: float, *, signed: bool = False) -> str:
    """A percentage for reading: 3 significant figures below 1000 % (``12.3 %``,
    ``-0.512 %``), whole numbers with thousands separators above (``+1,840 %``, never
    ``+1.84e+03 %``)."""
    sign = "+" if signed else ""
    if value_pct != value_pct:  # NaN
        return "- %"
    if abs(value_pct) >= 999.5:  # would round to 1000 or more: e notation in .3g
        return f"{value_pct:{sign},.0f} %"
    text = f"{value_pct:{sign}.3g}"
    if "e" in text:  # below 0.0001 %: plain decimals, 3 significant figures
        decimals = 2 - math.floor(math.log10(abs(value_pct)))
        text = f"{value_pct:{sign}.{decimals}f}"
    return f"{text} %"

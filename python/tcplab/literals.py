"""Numbers as written: reading integer and float literals (YAML, JSON, the command line) with
a bound, and how a huge one is shown.

The model: no tcplab field takes a number of more than 20 digits (the widest is a u64 seed),
but text can hold any number. Reading one must not fail in ways that name no field:

* CPython refuses to turn a decimal string of more than ``sys.get_int_max_str_digits()``
  (4300) digits into an int, or an int that large back into a string: a ``ValueError``
  raised wherever the number is read or shown, as a traceback.
* YAML's ``0x``/``0o``/``0b`` and sexagesimal (``1:30:00``) integers have no such limit,
  so they make ints whose ``str()`` then fails, and a float literal such as ``1.0e+999``
  overflows to ``inf`` silently (JSON's ``1e999`` too).

So a number literal of more than :data:`MAX_DIGITS` digits (or a float literal that
overflows) is never converted: it is kept as an :class:`Oversized`, which holds its text.
Every field parser refuses one as too large, naming the field, and
:func:`tcplab.errors.show_value` shows it abbreviated:
``12345678901234567890… (5000 digits)``. Within the bound, numbers are read as YAML and JSON
read them, and each field checks its own range.

:class:`BoundedSafeLoader` is PyYAML's SafeLoader with these int and float constructors (and
nothing else changed); :func:`load_yaml_scalar` reads one ``--set`` value with it;
:func:`json_loads` reads a JSON document with the same bound; :func:`read_int` reads an
integer option of the command line.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import yaml

__all__ = [
    "MAX_DIGITS",
    "SHOWN_DIGITS",
    "Oversized",
    "JsonNumberError",
    "BoundedSafeLoader",
    "load_yaml_scalar",
    "json_loads",
    "read_int",
    "abbreviate_digits",
    "int_text",
    "value_text",
    "NUMBER_UNIT",
    "number_and_unit",
]

#: The most digits a number literal may have to be read as a number: far beyond every field
#: (a u64 has 20 digits, so the field itself says "out of range" for 21 to 100 digits) and
#: far below CPython's int max_str_digits (4300), so every number tcplab keeps can be shown.
MAX_DIGITS = 100
#: A number of more digits than this is shown as its first :data:`SHOWN_DIGITS` digits,
#: ``…`` and the count.
ABBREVIATE_ABOVE = 30
SHOWN_DIGITS = 20

_DIGIT_RUN = re.compile(r"[0-9]{%d,}" % (ABBREVIATE_ABOVE + 1))


def abbreviate_digits(text: str) -> str:
    """Every run of more than 30 ASCII digits in ``text`` as its first 20 digits, ``…`` and
    the count: ``"9" * 5000 + "Mbit"`` -> ``"99999999999999999999… (5000 digits)Mbit"``."""
    return _DIGIT_RUN.sub(lambda m: f"{m.group()[:SHOWN_DIGITS]}… ({len(m.group())} digits)", text)


def int_text(value: int) -> str:
    """An int as text, abbreviated past 30 digits; never fails (``str()`` does past 4300)."""
    magnitude = -value if value < 0 else value
    sign = "-" if value < 0 else ""
    if magnitude < 10**ABBREVIATE_ABOVE:
        return str(value)
    # The number of decimal digits, from the bit length (within one), then exact.
    digits = max(1, int(magnitude.bit_length() * math.log10(2)))
    while magnitude >= 10**digits:
        digits += 1
    while digits > 1 and magnitude < 10 ** (digits - 1):
        digits -= 1
    head = magnitude // 10 ** (digits - SHOWN_DIGITS)
    return f"{sign}{head}… ({digits} digits)"


def value_text(value: Any) -> str:
    """``str(value)``, except that an int past 30 digits is abbreviated (``str()`` of one past
    4300 digits fails): the label of a value given from Python, not from text."""
    return int_text(value) if isinstance(value, int) and not isinstance(value, bool) else str(value)


class Oversized:
    """A number literal too large for any field, kept as the text it was written as.

    Field parsers refuse it ("too large"); it is never converted to an int or a float.
    """

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text

    def shown(self) -> str:
        """``12345678901234567890… (5000 digits)``; other forms by their first characters."""
        text = self.text.strip()
        if re.fullmatch(r"[+-]?[0-9_]+", text):
            digits = text.lstrip("+-").replace("_", "")
            return f"{text[: len(text) - len(text.lstrip('+-'))]}{digits[:SHOWN_DIGITS]}… ({len(digits)} digits)"
        shown = abbreviate_digits(text)
        if len(shown) > 60:
            shown = f"{shown[:SHOWN_DIGITS]}… ({len(text)} characters)"
        return shown

    def __repr__(self) -> str:
        return self.shown()

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Oversized) and other.text == self.text

    def __hash__(self) -> int:
        return hash(("Oversized", self.text))

    def __copy__(self) -> Oversized:
        return self

    def __deepcopy__(self, memo: dict) -> Oversized:
        return self

    def __reduce__(self) -> tuple:
        return (Oversized, (self.text,))


class JsonNumberError(ValueError):
    """A JSON number that cannot be read (:func:`json_loads`): too large, or not finite where
    finite numbers were asked for. ``path`` is its place in the document (dotted, such as
    ``flows.0.bytes_acked``); the message shows the number abbreviated."""

    def __init__(self, path: str, number: Oversized | float):
        where = f"{path}: " if path else ""
        if isinstance(number, Oversized):
            text = f"{number.shown()} is too large; expected a number of at most {MAX_DIGITS} digits"
        else:
            text = f"{'NaN' if math.isnan(number) else 'Infinity' if number > 0 else '-Infinity'} is not finite"
            text += "; expected a finite number"
        super().__init__(where + text)
        self.path = path
        self.number = number


def _significant(digits: str) -> int:
    """How many digits of ``digits`` (ASCII, underscores already removed) count."""
    return len(digits.lstrip("0"))


def _yaml_int(text: str) -> int | Oversized:
    """A YAML 1.1 int literal (as PyYAML's construct_yaml_int reads it), bounded."""
    value = text.replace("_", "")
    body = value[1:] if value[:1] in ("+", "-") else value
    sign = -1 if value.startswith("-") else 1
    if body == "0":
        return 0
    if body.startswith(("0b", "0x")):
        base = 2 if body[1] == "b" else 16
        digits = body[2:]
    elif body.startswith("0o"):
        base, digits = 8, body[2:]
    elif body.startswith("0") and ":" not in body:
        base, digits = 8, body[1:]
    elif ":" in body:  # sexagesimal: 1:30:00 is 5400; every part below 60 but the first
        if len(body) > 3 * MAX_DIGITS:
            return Oversized(text)
        parts = [int(part) for part in body.split(":")]
        number = 0
        for part in parts:
            number = number * 60 + part
        return Oversized(text) if number >= 10**MAX_DIGITS else sign * number
    else:
        base, digits = 10, body
    # 10^100 needs 333 binary, 111 octal, 84 hex digits: read a few more and compare.
    if _significant(digits) > {2: 340, 8: 115, 10: MAX_DIGITS, 16: 85}[base]:
        return Oversized(text)
    number = int(digits, base)
    return Oversized(text) if number >= 10**MAX_DIGITS else sign * number


def _finite_or_oversized(number: float, text: str) -> float | Oversized:
    """A float literal that overflowed to infinity (``1.0e+999``) is too large, not ``inf``."""
    return Oversized(text) if math.isinf(number) else number


class BoundedSafeLoader(yaml.SafeLoader):
    """PyYAML's SafeLoader whose ints and floats are bounded (see the module doc): a literal of
    more than :data:`MAX_DIGITS` digits, or a float that overflows, is an :class:`Oversized`.
    ``.inf`` and ``.nan`` written as such stay floats (each field says whether it takes them)."""

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int | Oversized:
        text = str(self.construct_scalar(node))
        try:
            return _yaml_int(text)
        except ValueError:  # an explicit !!int tag on text that is no integer
            raise yaml.constructor.ConstructorError(
                None, None, f"{abbreviate_digits(text)[:60]!r} is not an integer", node.start_mark
            ) from None

    def construct_yaml_float(self, node: yaml.ScalarNode) -> float | Oversized:
        text = str(self.construct_scalar(node))
        word = text.replace("_", "").lower().lstrip("+-")
        if word in (".inf", ".nan"):
            return super().construct_yaml_float(node)
        if len(text) > 3 * MAX_DIGITS and ":" in text:
            return Oversized(text)
        try:
            number = super().construct_yaml_float(node)
        except ValueError:  # an explicit !!float tag on text that is no number
            raise yaml.constructor.ConstructorError(
                None, None, f"{abbreviate_digits(text)[:60]!r} is not a number", node.start_mark
            ) from None
        return _finite_or_oversized(number, text)


BoundedSafeLoader.add_constructor("tag:yaml.org,2002:int", BoundedSafeLoader.construct_yaml_int)
BoundedSafeLoader.add_constructor("tag:yaml.org,2002:float", BoundedSafeLoader.construct_yaml_float)


def load_yaml_scalar(text: str) -> Any:
    """One YAML value (a scalar or a flow collection, as ``--set`` takes), numbers bounded."""
    return yaml.load(text, Loader=BoundedSafeLoader)  # noqa: S506 - a SafeLoader subclass


def _json_int(text: str) -> int | Oversized:
    if _significant(text.lstrip("-")) > MAX_DIGITS:
        return Oversized(text)
    return int(text)


def _json_float(text: str) -> float | Oversized:
    mantissa = re.split(r"[eE]", text, maxsplit=1)[0]
    if _significant(mantissa.lstrip("-").replace(".", "")) > 4 * MAX_DIGITS:  # float() is linear, but bound it
        return Oversized(text)
    return _finite_or_oversized(float(text), text)


def _first_bad_number(data: Any, finite: bool) -> tuple[str, Oversized | float] | None:
    """The dotted path and value of the first Oversized (or, with ``finite``, non-finite
    float) in ``data``, in document order; None when there is none."""
    stack: list[tuple[tuple[str, ...], Any]] = [((), data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, Oversized) or (finite and isinstance(value, float) and not math.isfinite(value)):
            return ".".join(path), value
        if isinstance(value, dict):
            stack.extend(((*path, str(k)), v) for k, v in reversed(list(value.items())))
        elif isinstance(value, list):
            stack.extend(((*path, str(i)), v) for i, v in reversed(list(enumerate(value))))
    return None


def json_loads(text: str | bytes, *, finite: bool = False) -> Any:
    """``json.loads`` with numbers bounded: an int of more than :data:`MAX_DIGITS` digits, or
    a float that overflows (``1e999``), raises :class:`JsonNumberError` (a ``ValueError``,
    as every other malformed JSON does) naming where it is, instead of CPython's
    int-conversion ``ValueError`` or a silent ``inf``. ``NaN``/``Infinity`` written as such
    are read as Python reads them, or refused the same way with ``finite`` (for files tcplab
    writes with ``allow_nan=False``)."""
    data = json.loads(text, parse_int=_json_int, parse_float=_json_float)
    found = _first_bad_number(data, finite)
    if found is not None:
        raise JsonNumberError(*found)
    return data


_ASCII_INT = re.compile(r"\s*[+-]?[0-9]+\s*\Z")


def read_int(text: str) -> int | Oversized | None:
    """A command-line integer (ASCII digits, optional sign): an int, an :class:`Oversized`
    past :data:`MAX_DIGITS` digits, or None when the text is not an integer."""
    if not _ASCII_INT.match(text):
        return None
    body = text.strip()
    if _significant(body.lstrip("+-")) > MAX_DIGITS:
        return Oversized(body)
    return int(body, 10)


#: A label that is one number and an optional unit (``0.5%``, ``10Mbit``, ``8192``).
NUMBER_UNIT = re.compile(r"\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*([A-Za-z%µμ/]*)\s*\Z")


def number_and_unit(label: str) -> tuple[float, str, str] | None:
    """``"0.5%"`` -> ``(0.5, "%", "0.5")``; None when the label is not one number with an
    optional unit (or its number is not finite as a float)."""
    m = NUMBER_UNIT.match(str(label))
    if not m:
        return None
    try:
        number = float(m.group(1))
    except ValueError:
        return None
    if not math.isfinite(number):
        return None
    return number, m.group(2), m.group(1)

"""How far the simulator may be from the kernel and still count as agreeing: the tolerances
of ``tcplab validate`` and the ``--tolerance`` syntax.

The model. Each compared metric has a tolerance; a metric is *within* when the simulator's
value is within it of the kernel's (the kernel is the reference: relative differences are
``(sim - kernel) / kernel``):

==========  ==================================================  ========================
key         metric                                              default
==========  ==================================================  ========================
goodput     per flow goodput (bytes received x 8 / lifetime)    10 % relative
rtt_p50     per flow median smoothed RTT, steady part           15 % relative
rtt_p99     per flow 99th percentile smoothed RTT, steady part  25 % relative
retrans     per flow retransmitted / sent segments              0.5 percentage points
                                                                or 50 % relative
drops       per link queue drops (tc -s ``dropped``)            10 packets or 50 % relative
ect         per host ECT(0) packets received (nstat              10 packets or 10 % relative
            ``IpExtInECT0Pkts``; ECN flows only)
ce          per host CE packets received (``IpExtInCEPkts``)     10 packets or 50 % relative
            and per link CE marks (tc ``ce_mark``)
==========  ==================================================  ========================

``ect`` counts the data segments an ECN flow delivered (Linux marks new data ECT(0) and
nothing else), so its relative part is goodput's 10 %; the absolute part is the drops'
10 packets. ``ce`` counts marks, which fall where a window's packets cross a threshold:
chance, as where a queue overflows, so it has the drops' tolerance. A flow's ECN state
(``ss -tio``'s ``ecn``/``ecnseen``) has no tolerance: the two worlds must be equal
(:mod:`tcplab.kernel.verdicts`).

A metric with two tolerances (retrans, drops, ect, ce) is within when *either* holds: a
retransmission ratio of 0.1 % against 0.3 % is close in absolute terms though three times
as large, 20 % vs 26 % close in relative terms; a queue that dropped 3 packets against 9
agrees. Small counts are dominated by chance.

``--tolerance goodput=5%,rtt_p99=30%,retrans=0.2pp,drops=20`` sets some of them. A value
replaces that metric's whole tolerance: ``retrans=0.2pp`` means 0.2 percentage points and no
relative allowance; give both with ``/``: ``retrans=0.2pp/30%``, ``drops=5/20%``. Units:
``%`` relative (goodput, rtt_p50, rtt_p99, retrans, drops, ect, ce), ``pp`` percentage
points (retrans), a plain number or ``pkts`` packets (drops, ect, ce). A mistake is one line naming the item:
``--tolerance: rtt_p50: "10" has no unit; expected a percentage such as 15%``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, fields, replace
from typing import Any

from tcplab.errors import ScenarioError, show_value

__all__ = ["Tolerances", "parse_tolerances", "TOLERANCE_KEYS"]

#: The keys ``--tolerance`` accepts, in table order.
TOLERANCE_KEYS = ("goodput", "rtt_p50", "rtt_p99", "retrans", "drops", "ect", "ce")


@dataclass(frozen=True)
class Tolerances:
    """The allowed differences (None: that form of tolerance is not used).

    Relative ones are fractions (0.10 = 10 %), ``retrans_pp`` is in percentage points,
    ``drops_packets`` in packets."""

    goodput_rel: float | None = 0.10
    rtt_p50_rel: float | None = 0.15
    rtt_p99_rel: float | None = 0.25
    retrans_pp: float | None = 0.5
    retrans_rel: float | None = 0.50
    drops_packets: float | None = 10.0
    drops_rel: float | None = 0.50
    ect_packets: float | None = 10.0
    ect_rel: float | None = 0.10
    ce_packets: float | None = 10.0
    ce_rel: float | None = 0.50

    def text(self, key: str) -> str:
        """The tolerance of ``key`` for people: ``±10 %``, ``±0.5 pp or ±50 %``."""
        parts = []
        for name in (f"{key}_pp", f"{key}_packets", f"{key}_rel"):
            value = getattr(self, name, None)
            if value is None:
                continue
            if name.endswith("_pp"):
                parts.append(f"±{_num(value)} pp")
            elif name.endswith("_packets"):
                parts.append(f"±{_num(value)} packets")
            else:
                parts.append(f"±{_num(value * 100)} %")
        return " or ".join(parts) if parts else "none"

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def spec(self) -> str:
        """The ``--tolerance`` text that gives these tolerances."""
        items = []
        for key in TOLERANCE_KEYS:
            parts = []
            for name in (f"{key}_pp", f"{key}_packets", f"{key}_rel"):
                value = getattr(self, name, None)
                if value is None:
                    continue
                unit = "pp" if name.endswith("_pp") else ("" if name.endswith("_packets") else "%")
                parts.append(f"{_num(value * 100 if unit == '%' else value)}{unit}")
            items.append(f"{key}={'/'.join(parts) if parts else 'none'}")
        return ",".join(items)


def _num(x: float) -> str:
    return f"{x:.6g}"


#: What each key accepts: unit -> field name.
_UNITS: dict[str, dict[str, str]] = {
    "goodput": {"%": "goodput_rel"},
    "rtt_p50": {"%": "rtt_p50_rel"},
    "rtt_p99": {"%": "rtt_p99_rel"},
    "retrans": {"pp": "retrans_pp", "%": "retrans_rel"},
    "drops": {"": "drops_packets", "pkts": "drops_packets", "packets": "drops_packets", "%": "drops_rel"},
    "ect": {"": "ect_packets", "pkts": "ect_packets", "packets": "ect_packets", "%": "ect_rel"},
    "ce": {"": "ce_packets", "pkts": "ce_packets", "packets": "ce_packets", "%": "ce_rel"},
}
_EXPECTED = {
    "goodput": "a percentage such as 10%",
    "rtt_p50": "a percentage such as 15%",
    "rtt_p99": "a percentage such as 25%",
    "retrans": "percentage points and/or a percentage such as 0.5pp, 50% or 0.5pp/50%",
    "drops": "packets and/or a percentage such as 10, 50% or 10/50%",
    "ect": "packets and/or a percentage such as 10, 10% or 10/10%",
    "ce": "packets and/or a percentage such as 10, 50% or 10/50%",
}
_PART = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([a-z%]*)\s*\Z")


def _error(key: str, value: str, problem: str) -> ScenarioError:
    shown = show_value(value)
    return ScenarioError(
        f"{shown} {problem}",
        file="--tolerance",
        path=key,
        value=value,
        expected=_EXPECTED.get(key, ""),
    )


def parse_tolerances(specs: str | list[str] | tuple[str, ...] | None, base: Tolerances | None = None) -> Tolerances:
    """``["goodput=5%,rtt_p50=10%", "drops=20"]`` (or one string) -> :class:`Tolerances`,
    starting from ``base`` (the defaults). Raises a :class:`ScenarioError` (one line per bad
    item, all of them) naming the item."""
    tol = base if base is not None else Tolerances()
    if specs is None:
        return tol
    texts = [specs] if isinstance(specs, str) else list(specs)
    errors: list[ScenarioError] = []
    seen: set[str] = set()
    for text in texts:
        for item in str(text).split(","):
            item = item.strip()
            if not item:
                errors.append(
                    ScenarioError(
                        f'"{text}" has an empty item',
                        file="--tolerance",
                        value=text,
                        expected="KEY=VALUE items separated by commas, such as goodput=5%,rtt_p50=10%",
                    )
                )
                continue
            if "=" not in item:
                e = ScenarioError(
                    f'"{item}" is not KEY=VALUE',
                    file="--tolerance",
                    value=item,
                    expected=f"KEY=VALUE with KEY one of {', '.join(TOLERANCE_KEYS)}, such as goodput=5%",
                )
                errors.append(e)
                continue
            key, _, value = (s.strip() for s in item.partition("="))
            key = key.lower()
            if key not in _UNITS:
                errors.append(
                    ScenarioError(
                        f'"{key}" is not a tolerance',
                        file="--tolerance",
                        value=key,
                        expected=f"one of {', '.join(TOLERANCE_KEYS)}",
                    )
                )
                continue
            if key in seen:
                errors.append(_error(key, value, "is given twice"))
                continue
            seen.add(key)
            try:
                tol = _apply(tol, key, value)
            except ScenarioError as e:
                errors.append(e)
    if errors:
        first = errors[0]
        raise ScenarioError(
            first.problem,
            file=first.file,
            path=first.path,
            value=first.value,
            expected=first.expected,
            errors=errors,
        )
    return tol


def _apply(tol: Tolerances, key: str, value: str) -> Tolerances:
    units = _UNITS[key]
    # the value replaces the whole tolerance of the metric: every form off, then the given ones
    cleared = {name: None for name in set(units.values())}
    given: dict[str, float] = {}
    if value.lower() == "none":
        return replace(tol, **cleared)
    parts = value.split("/")
    if len(parts) > 2:
        raise _error(key, value, "has more than two parts")
    for part in parts:
        m = _PART.match(part.lower())
        if not m:
            raise _error(key, value, "is not a number with a unit")
        number, unit = float(m.group(1)), m.group(2)
        if unit not in units:
            problem = "has no unit" if unit == "" else f"has the unit {unit!r}, which {key} does not take"
            raise _error(key, value, problem)
        if not math.isfinite(number):  # the syntax has no inf or exponent: digits beyond float's range
            raise _error(key, value, "is too large")
        name = units[unit]
        if name in given:
            raise _error(key, value, "gives the same kind of tolerance twice")
        given[name] = number / 100.0 if unit == "%" else number
    return replace(tol, **{**cleared, **given})

"""Objectives and constraints as users state them.

The model: an objective is one metric to maximize or minimize and any number of
constraints, each a metric compared with a bound. Three ways to say it:

* options: ``--maximize goodput --subject-to "p99 RTT < 50 ms" --subject-to "no HLS stalls"``;
* one sentence: ``maximize goodput subject to p99 RTT < 50 ms and no HLS stalls``, or
  ``keep TCPTimeouts / CurrEstab < 3 % while minimizing burst completion p99``;
* constraints only: ``keep TCPTimeouts / CurrEstab < 3 %``: then the first constraint's
  metric is the objective, minimized for ``<``/``<=``/``==``/``no``, maximized for
  ``>``/``>=`` (the setting furthest inside the bound), and the output says so.

Grammar (case-insensitive; ``maximise``/``max``, ``minimise``/``min`` also accepted)::

    objective   := GOAL [LINK constraints] | "keep" constraints [("while"|"and") GOALING]
    GOAL        := ("maximize" | "minimize") METRIC
    GOALING     := ("maximizing" | "minimizing") METRIC
    LINK        := "subject to" | "s.t." | "such that" | "with" | "while" | "where"
    constraints := constraint (("and" | ",") constraint)*
    constraint  := "no" METRIC                       (METRIC == 0)
                 | METRIC OP BOUND                   OP: < <= > >= == = != (also ≤ ≥)
                 | METRIC WORD BOUND                 WORD: below, under, less than, at most,
                                                     above, over, more than, at least

METRIC is resolved by :mod:`tcplab.recommend.metrics`; BOUND carries a unit
(``50 ms``, ``10 Mbit/s``, ``3 %``; :meth:`Metric.threshold`).
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from tcplab.errors import ScenarioError
from tcplab.literals import abbreviate_digits
from tcplab.recommend.metrics import BASE_COLUMNS, Metric, UnknownMetric, metric_error, resolve_metric

__all__ = ["Constraint", "Objective", "parse_objective", "parse_constraint", "build_objective", "check_grammar"]

_OPS = {
    "<": lambda v, b: v < b,
    "<=": lambda v, b: v <= b,
    ">": lambda v, b: v > b,
    ">=": lambda v, b: v >= b,
    "==": lambda v, b: v == b,
    "!=": lambda v, b: v != b,
}
_OP_WORDS = [
    ("less than or equal to", "<="),
    ("greater than or equal to", ">="),
    ("less than", "<"),
    ("more than", ">"),
    ("greater than", ">"),
    ("at most", "<="),
    ("at least", ">="),
    ("below", "<"),
    ("under", "<"),
    ("above", ">"),
    ("over", ">"),
]
_OP_RE = re.compile(r"(<=|>=|==|!=|≤|≥|<|>|=)")
_MAX = ("maximize", "maximise", "max")
_MIN = ("minimize", "minimise", "min")

CONSTRAINT_EXPECTED = "a constraint such as 'p99 RTT < 50 ms', 'TCPTimeouts / CurrEstab < 3 %' or 'no HLS stalls'"
OBJECTIVE_EXPECTED = (
    "an objective such as 'maximize goodput subject to p99 RTT < 50 ms' or "
    "'keep TCPTimeouts / CurrEstab < 3 % while minimizing burst completion p99'"
)


@dataclass(frozen=True)
class Constraint:
    """``metric op bound``; ``text`` as written."""

    text: str
    metric: Metric
    op: str
    bound: float

    def holds(self, value: float) -> bool:
        """A run without a value for the metric (NaN) does not meet the constraint."""
        if value is None or math.isnan(value):
            return False
        return bool(_OPS[self.op](value, self.bound))

    def slack(self, value: float) -> float:
        """How far inside the bound ``value`` is (negative: outside), in the metric's unit."""
        if value is None or math.isnan(value):
            return math.nan
        if self.op in ("<", "<="):
            return self.bound - value
        if self.op in (">", ">="):
            return value - self.bound
        if self.op == "==":
            return -abs(value - self.bound)
        return abs(value - self.bound)

    def worse(self, a: float, b: float) -> bool:
        """Is ``a`` closer to breaking the constraint than ``b`` (NaN worst of all)?"""
        if math.isnan(a):
            return not math.isnan(b)
        if math.isnan(b):
            return False
        return self.slack(a) < self.slack(b)

    @property
    def label(self) -> str:
        if self.op == "==" and self.bound == 0:
            return f"no {self.metric.name}"
        return f"{self.metric.name} {self.op} {self.metric.fmt(self.bound)}"


@dataclass(frozen=True)
class Objective:
    """What to optimise: ``sense`` is ``"maximize"`` or ``"minimize"``.

    ``implied`` is True when no goal was given and the first constraint's metric is used
    (module doc)."""

    sense: str
    metric: Metric
    constraints: tuple[Constraint, ...] = ()
    implied: bool = False

    @property
    def maximize(self) -> bool:
        return self.sense == "maximize"

    def worse(self, a: float, b: float) -> bool:
        """Is objective value ``a`` worse than ``b``? A missing value (NaN) is the worst."""
        if math.isnan(a):
            return not math.isnan(b)
        if math.isnan(b):
            return False
        return a < b if self.maximize else a > b

    def gap(self, a: float, b: float) -> float:
        """How much better ``a`` is than ``b`` (positive = better), in the metric's unit."""
        if math.isnan(a) or math.isnan(b):
            return math.nan
        return a - b if self.maximize else b - a

    @property
    def text(self) -> str:
        head = f"{self.sense} {self.metric.name}"
        if self.constraints:
            head += " subject to " + " and ".join(c.label for c in self.constraints)
        return head


# -- parsing -----------------------------------------------------------------------------


def parse_constraint(
    text: str, columns: Sequence[str], option: str = "--subject-to", whole: str | None = None
) -> Constraint:
    """One constraint (module doc)."""
    whole = text if whole is None else whole
    body = text.strip()
    m = re.match(r"(?i)\A(?:no|zero)\s+(.+)\Z", body)
    if m:
        metric = resolve_metric(m.group(1), columns, option, whole)
        return Constraint(body, metric, "==", 0.0)
    op_match = _OP_RE.search(body)
    if op_match:
        left, op, right = body[: op_match.start()], op_match.group(1), body[op_match.end() :]
        op = {"≤": "<=", "≥": ">=", "=": "=="}.get(op, op)
    else:
        lowered = body.lower()
        for words, sym in _OP_WORDS:
            hit = re.search(rf"\s{re.escape(words)}\s", lowered)
            if hit:
                left, op, right = body[: hit.start()], sym, body[hit.end() :]
                break
        else:
            raise metric_error(
                option, whole, "has no comparison (<, <=, >, >=, ==, below, at most, ...)", CONSTRAINT_EXPECTED
            )
    if not left.strip():
        raise metric_error(option, whole, "names no metric before the comparison", CONSTRAINT_EXPECTED)
    if not right.strip():
        raise metric_error(option, whole, f"has no bound after {op!r}", CONSTRAINT_EXPECTED)
    metric = resolve_metric(left, columns, option, whole)
    bound = metric.threshold(right, option, whole)
    return Constraint(body, metric, op, bound)


def _split_and(text: str) -> list[str]:
    parts = re.split(r"(?i)\s+and\s+|\s*,\s*|\s*;\s*", text)
    return [p for p in parts if p.strip()]


def _goal(text: str, columns: Sequence[str], option: str, whole: str, *, ing: bool) -> tuple[str, Metric]:
    words = text.strip().split(None, 1)
    verb = words[0].lower() if words else ""
    stem = verb[:-3] + "e" if ing and verb.endswith("ing") else verb
    if stem in _MAX:
        sense = "maximize"
    elif stem in _MIN:
        sense = "minimize"
    else:
        shown = abbreviate_digits(text.strip())[:60]
        raise metric_error(option, whole, f"{shown!r} does not start with maximize or minimize", OBJECTIVE_EXPECTED)
    if len(words) < 2:
        raise metric_error(option, whole, f"{verb!r} names no metric", OBJECTIVE_EXPECTED)
    return sense, resolve_metric(words[1], columns, option, whole)


def _implied(constraints: Sequence[Constraint]) -> Objective:
    first = constraints[0]
    sense = "maximize" if first.op in (">", ">=") else "minimize"
    return Objective(sense, first.metric, tuple(constraints), implied=True)


_LINK = re.compile(r"(?i)\s+(?:subject\s+to|s\.t\.|such\s+that|with|while|where)\s+")


def parse_objective(text: str, columns: Sequence[str], option: str = "--objective") -> Objective:
    """One sentence (module doc)."""
    body = " ".join(text.split())
    if not body:
        raise metric_error(option, text, "is empty", OBJECTIVE_EXPECTED)
    lowered = body.lower()
    if lowered.startswith("keep "):
        rest = body[5:]
        goal = re.search(r"(?i)\s+(?:while|and)\s+((?:maximi[sz]|minimi[sz])ing\s+.+)\Z", rest)
        cons_text = rest[: goal.start()] if goal else rest
        constraints = [parse_constraint(c, columns, option, text) for c in _split_and(cons_text)]
        if not constraints:
            raise metric_error(option, text, "keeps nothing", OBJECTIVE_EXPECTED)
        if goal:
            sense, metric = _goal(goal.group(1), columns, option, text, ing=True)
            return Objective(sense, metric, tuple(constraints))
        return _implied(constraints)
    link = _LINK.search(body)
    goal_text = body[: link.start()] if link else body
    sense, metric = _goal(goal_text, columns, option, text, ing=False)
    constraints = []
    if link:
        constraints = [parse_constraint(c, columns, option, text) for c in _split_and(body[link.end() :])]
        if not constraints:
            raise metric_error(option, text, "has no constraint after its link word", OBJECTIVE_EXPECTED)
    return Objective(sense, metric, tuple(constraints))


#: Constraints one objective may have: each is a pass over the sweep's runs (a pandas column
#: per constraint); thousands made recommend run for minutes. Far more than anyone states.
MAX_CONSTRAINTS = 50


def _check_count(objective: Objective, option: str) -> Objective:
    n = len(objective.constraints)
    if n > MAX_CONSTRAINTS:
        raise ScenarioError(f"{n} constraints", file=option, expected=f"at most {MAX_CONSTRAINTS} constraints")
    return objective


def build_objective(
    columns: Sequence[str],
    *,
    maximize: str | None = None,
    minimize: str | None = None,
    subject_to: Sequence[str] = (),
    objective: str | None = None,
) -> Objective:
    """The objective from the options (``--maximize``/``--minimize``/``--subject-to``) or
    from one ``--objective`` sentence; exactly one of the three forms; at most
    ``MAX_CONSTRAINTS`` constraints."""
    return _check_count(
        _build_objective(columns, maximize=maximize, minimize=minimize, subject_to=subject_to, objective=objective),
        "--objective" if objective is not None else "--subject-to",
    )


def _build_objective(
    columns: Sequence[str],
    *,
    maximize: str | None = None,
    minimize: str | None = None,
    subject_to: Sequence[str] = (),
    objective: str | None = None,
) -> Objective:
    """The objective from the options (``--maximize``/``--minimize``/``--subject-to``) or
    from one ``--objective`` sentence; exactly one of the three forms."""
    if objective is not None:
        if maximize is not None or minimize is not None or subject_to:
            raise ScenarioError(
                "--objective cannot be combined with --maximize, --minimize or --subject-to",
                file="--objective",
                expected="either one --objective sentence or the separate options",
            )
        return parse_objective(objective, columns)
    if maximize is not None and minimize is not None:
        raise ScenarioError(
            "--maximize and --minimize given together", file="--maximize", expected="one metric to optimise"
        )
    constraints = [parse_constraint(c, columns, "--subject-to") for c in subject_to]
    if maximize is not None:
        return Objective("maximize", resolve_metric(maximize, columns, "--maximize"), tuple(constraints))
    if minimize is not None:
        return Objective("minimize", resolve_metric(minimize, columns, "--minimize"), tuple(constraints))
    if constraints:
        return _implied(constraints)
    raise ScenarioError(
        "no objective", file="--maximize", expected="--maximize METRIC, --minimize METRIC, --subject-to or --objective"
    )


def check_grammar(
    *,
    maximize: str | None = None,
    minimize: str | None = None,
    subject_to: Sequence[str] = (),
    objective: str | None = None,
) -> None:
    """Check an objective before a sweep runs (the scenario form): its grammar, and the
    metrics and bounds that the table's fixed columns (ARCH12 SCHEMA) already decide; a
    metric that may only exist once the sweep has run (an app's, an nstat counter's) is
    checked then."""
    with contextlib.suppress(UnknownMetric):
        build_objective(BASE_COLUMNS, maximize=maximize, minimize=minimize, subject_to=subject_to, objective=objective)

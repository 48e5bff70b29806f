"""The tests themselves: none asserts what cannot fail, none times the machine (issue 22).

Read from the sources with :mod:`ast`:

* an ``assert`` that cannot fail: on a true constant, on a non-empty tuple (``assert (x,
  "why")`` is always true), or comparing an expression with itself (``==``, ``is``, ``<=``,
  ``>=``);
* an ``assert`` that reads the wall clock (``time.time``, ``monotonic``, ``perf_counter``,
  ``process_time``, their ``_ns`` forms), directly or through a name the same function set
  from one: how fast a machine runs is not what the code does (say what it must not do
  instead: draw, build, wait for a timeout).
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
CLOCKS = {f"{name}{ns}" for name in ("time", "monotonic", "perf_counter", "process_time") for ns in ("", "_ns")}


def _clock_value(node: ast.AST, clocked: set[str]) -> bool:
    """A wall-clock reading, or arithmetic on one (a clock passed to a function is not)."""
    if isinstance(node, ast.Call):
        f = node.func
        return (
            isinstance(f, ast.Attribute) and f.attr in CLOCKS and isinstance(f.value, ast.Name) and f.value.id == "time"
        )
    if isinstance(node, ast.Name):
        return node.id in clocked
    if isinstance(node, ast.BinOp):
        return _clock_value(node.left, clocked) or _clock_value(node.right, clocked)
    if isinstance(node, ast.UnaryOp):
        return _clock_value(node.operand, clocked)
    return False


def _bounds_clock(test: ast.AST, clocked: set[str]) -> bool:
    if isinstance(test, ast.BoolOp):
        return any(_bounds_clock(v, clocked) for v in test.values)
    if isinstance(test, ast.UnaryOp):
        return _bounds_clock(test.operand, clocked)
    if isinstance(test, ast.Compare):
        return any(_clock_value(x, clocked) for x in [test.left, *test.comparators])
    return False


def _clocked_names(function: ast.AST) -> set[str]:
    """Names a function sets from the wall clock (or arithmetic on such names), to a fixed point."""
    names: set[str] = set()
    assigns = [n for n in ast.walk(function) if isinstance(n, (ast.Assign, ast.AnnAssign))]
    while True:
        before = len(names)
        for a in assigns:
            if a.value is not None and _clock_value(a.value, names):
                targets = a.targets if isinstance(a, ast.Assign) else [a.target]
                names |= {t.id for t in targets if isinstance(t, ast.Name)}
        if len(names) == before:
            return names


def problems(source: str, filename: str) -> list[str]:
    tree = ast.parse(source, filename)
    out = []
    scopes = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    clocked = {}
    for f in scopes:
        names = _clocked_names(f)
        clocked.update({id(a): names for a in ast.walk(f) if isinstance(a, ast.Assert)})
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assert):
            continue
        t = node.test
        where = f"{filename}:{node.lineno}"
        if isinstance(t, ast.Constant) and t.value:
            out.append(f"{where}: asserts a true constant")
        elif isinstance(t, ast.Tuple) and t.elts:
            out.append(f"{where}: asserts a tuple (always true; assert X, MESSAGE was meant)")
        elif (
            isinstance(t, ast.Compare)
            and len(t.ops) == 1
            and isinstance(t.ops[0], (ast.Eq, ast.Is, ast.LtE, ast.GtE))
            and ast.dump(t.left) == ast.dump(t.comparators[0])
        ):
            out.append(f"{where}: compares {ast.unparse(t.left)} with itself")
        elif _bounds_clock(t, clocked.get(id(node), set())):
            out.append(f"{where}: bounds the wall clock ({ast.unparse(t)[:60]})")
    return out


def test_no_test_asserts_what_cannot_fail_or_times_the_machine():
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        found += problems(path.read_text(encoding="utf-8"), str(path.relative_to(TESTS.parent)))
    assert found == []


def test_each_kind_is_caught():
    source = """
import time
def test_a(x):
    assert True
    assert (x == 1, "x is one")
    assert x == x
    t0 = time.perf_counter()
    work()
    assert time.perf_counter() - t0 < 5
    elapsed = time.monotonic_ns() - t0
    seconds = elapsed / 1e9
    assert seconds < 5
    assert x == 1, "fine"
    assert x.time_ns < 5  # a field of the code under test, not the clock
    doc = run_until(time.monotonic_ns() + 10**9)  # a deadline handed to the code
    assert doc["ended_ns"] < doc["duration_ns"]
    assert watch(time.monotonic_ns()) == []
"""
    assert [p.split(": ", 1)[1].split(" (")[0] for p in problems(source, "t.py")] == [
        "asserts a true constant",
        "asserts a tuple",
        "compares x with itself",
        "bounds the wall clock",
        "bounds the wall clock",
    ]

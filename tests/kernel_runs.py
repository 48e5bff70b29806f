"""The kernel tests' one rule for a kernel run that is INVALID (tests/test_kernel_retry.py
pins it without namespaces).

A kernel run says why it cannot be trusted (``invalid_reasons``) and which of those reasons
the machine's load caused (``machine_reasons``: the quiet check before the run, a delay line
or a sampler late; :class:`tcplab.kernel.measure.Reason`). On a busy machine (``make test``
as root beside a compiler or other tests) a run can be INVALID for those alone: its numbers
then say nothing about tcplab, and a test asserting on them can neither pass nor fail.

:func:`valid_run` runs it; a run INVALID only for the machine's reasons is run once more, and
when that one is too, the test is skipped with both runs' reasons (the measured lateness and
load). A run INVALID for any other reason (an agent that failed, a delay line without stats)
fails the test at once: that is tcplab's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import pytest

__all__ = ["valid_run", "RETRIES"]

#: Runs after the first when the machine made a run INVALID.
RETRIES = 1

R = TypeVar("R")


def valid_run(run: Callable[[], R], what: str) -> R:
    """``run()`` (a kernel run: ``valid``, ``invalid_reasons``, ``machine_reasons``) until it
    is valid, at most 1 + RETRIES times while only the machine makes it INVALID (module doc);
    ``what`` names the run in the skip or failure."""
    machine_only: list[str] = []
    for _ in range(1 + RETRIES):
        result: Any = run()
        if result.valid:
            return result
        ours = [r for r in result.invalid_reasons if r not in set(result.machine_reasons)]
        if ours:
            pytest.fail(f"{what}: INVALID: " + "; ".join(ours))
        machine_only.append("; ".join(result.invalid_reasons))
    runs = "; ".join(f"run {k + 1}: {text}" for k, text in enumerate(machine_only))
    times = "twice" if len(machine_only) == 2 else f"{len(machine_only)} times"
    pytest.skip(f"{what}: INVALID {times} because of the machine ({runs})")

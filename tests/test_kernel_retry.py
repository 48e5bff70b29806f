"""The kernel tests' one rule for INVALID runs (tests/kernel_runs.py), pinned without
namespaces: a run the machine made INVALID (the quiet check, a late delay line or sampler) is
retried once, then the test is skipped with the reasons; INVALID for any other reason fails.

And where the rule's input comes from: which of a run's invalid reasons the machine caused
(tcplab.kernel.measure.Reason), recorded in kernel.json's ``machine_reasons``.
"""

from __future__ import annotations

import copy
from types import SimpleNamespace

import pytest

from kernel_runs import valid_run
from tcplab.kernel.measure import validity
from test_kernel_measure import load_fixture

LATE = "delay line tlh3:w1/tab was late: p99 3.20 ms, max 25.00 ms (limits 1 ms, 20 ms)"
BUSY = "the machine was busy before the run: other processes used 1.20 CPU over 1 s (at most 0.25 allowed)"
AGENT = "agent client failed: exit status 1"


def fake(*reasons: str, machine: tuple[str, ...] = ()) -> SimpleNamespace:
    """A run result as the helper reads it: valid, invalid_reasons, machine_reasons."""
    return SimpleNamespace(valid=not reasons, invalid_reasons=list(reasons), machine_reasons=list(machine))


class Runs:
    """Returns the given results one per call, and counts the calls."""

    def __init__(self, *results: SimpleNamespace):
        self.results = list(results)
        self.calls = 0

    def __call__(self) -> SimpleNamespace:
        self.calls += 1
        return self.results.pop(0)


def test_a_valid_run_is_returned_at_once():
    ok = fake()
    runs = Runs(ok)
    assert valid_run(runs, "cubic") is ok
    assert runs.calls == 1


def test_a_run_the_machine_made_invalid_is_retried_once():
    ok = fake()
    runs = Runs(fake(LATE, machine=(LATE,)), ok)
    assert valid_run(runs, "cubic") is ok
    assert runs.calls == 2


def test_invalid_twice_because_of_the_machine_is_a_skip_with_the_reasons():
    runs = Runs(fake(LATE, machine=(LATE,)), fake(BUSY, LATE, machine=(BUSY, LATE)))
    with pytest.raises(pytest.skip.Exception) as e:
        valid_run(runs, "cubic at 0% loss")
    assert runs.calls == 2  # once, then retried once: not more
    assert str(e.value) == (
        f"cubic at 0% loss: INVALID twice because of the machine (run 1: {LATE}; run 2: {BUSY}; {LATE})"
    )


@pytest.mark.parametrize(
    "results",
    [
        (fake(AGENT),),  # at once: no retry for tcplab's own failures
        (fake(AGENT, LATE, machine=(LATE,)),),  # a machine reason beside it does not excuse it
        (fake(LATE, machine=(LATE,)), fake(AGENT)),  # the retry fails for another reason
    ],
)
def test_invalid_for_another_reason_fails(results):
    runs = Runs(*results)
    with pytest.raises(pytest.fail.Exception) as e:
        valid_run(runs, "bbr")
    assert str(e.value) == f"bbr: INVALID: {AGENT}"
    assert runs.calls == len(results)


# -- the classification the helper reads ------------------------------------------------------


def test_lateness_is_the_machines_and_a_failed_agent_is_not():
    _, m = load_fixture()
    m.delaylines["tlh3:w1"] = {"version": 1, "tuns": [{"name": "tab", "lateness_ns": {"p99": 3_200_000, "max": 0}}]}
    m.agent_exit = dict(m.agent_exit, a=1)
    m.queue_lateness = dict(m.queue_lateness, late_over_half_interval_frac=0.5)
    m.agents["b"] = copy.deepcopy(m.agents["b"])
    m.agents["b"]["ss"]["late_over_half_interval"] = 20
    reasons = validity(m, ["a", "b"])
    assert {str(r): r.machine for r in reasons} == {
        "delay line tlh3:w1/tab was late: p99 3.20 ms, max 0.00 ms (limits 1 ms, 20 ms)": True,
        "agent a failed: exit status 1": False,
        "ss sampler of b was late by more than half an interval 95.2 % of the time": True,
        "queue sampler was late by more than half an interval 50.0 % of the time": True,
    }
    m.delaylines["tlh3:w1"] = {"error": "the delay line wrote no stats"}
    assert [r.machine for r in validity(m, ["a", "b"]) if r.startswith("delay line")] == [False]


def test_kernel_json_records_the_machines_reasons(tmp_path):
    import json

    from tcplab.kernel.measure import Reason
    from test_kernel_result import make

    r = make(valid=False, reasons=(Reason(BUSY, machine=True), Reason(AGENT)))
    assert r.invalid_reasons == [BUSY, AGENT] and r.machine_reasons == [BUSY]
    r.write(tmp_path / "run", plots=False)
    kernel = json.loads((tmp_path / "run" / "kernel.json").read_text())
    assert kernel["machine_reasons"] == [BUSY]

"""tcplab.procpool: each job's outcome in its own forked process, and ``when_started``,
the caller's work done while the first workers run."""

from __future__ import annotations

import os
import time
from pathlib import Path

from tcplab.procpool import WorkerFailure, map_in_processes

#: set by the caller's ``when_started``; a worker forked after it sees it (fork copies memory)
MARK: list[str] = []


def _wait_for_file(path: str) -> str:
    """A job that runs until the parent creates ``path`` (at most 10 s)."""
    deadline = time.monotonic() + 10
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            return "timed out"
        time.sleep(0.005)
    return "saw it"


def _square(x: int) -> int:
    return x * x


def _marks(_: object) -> list[str]:
    return list(MARK)


def _fail(x: int) -> int:
    raise ValueError(f"job {x} fails")


def test_every_job_has_its_outcome_and_a_failing_job_only_its_own():
    out = dict(map_in_processes([1, 2, 3, 4], _square, 2))
    assert out == {0: 1, 1: 4, 2: 9, 3: 16}
    ((i, failure),) = list(map_in_processes([7], _fail, 2))
    assert i == 0 and isinstance(failure, WorkerFailure) and "job 7 fails" in failure.reason


def test_when_started_runs_once_while_the_first_workers_run(tmp_path):
    """The job waits for a file only the caller's when_started creates: it completes only if
    when_started ran while the worker was alive, before any outcome was awaited."""
    flag = tmp_path / "started"
    calls: list[float] = []

    def started() -> None:
        calls.append(time.monotonic())
        Path(flag).touch()

    out = list(map_in_processes([str(flag), str(flag), str(flag)], _wait_for_file, 2, when_started=started))
    assert sorted(o for _, o in out) == ["saw it"] * 3
    assert len(calls) == 1


def test_workers_forked_after_when_started_inherit_what_it_did():
    MARK.clear()

    def started() -> None:
        MARK.append("warm")

    try:
        out = dict(map_in_processes([0, 1, 2], _marks, 1, when_started=started))
    finally:
        MARK.clear()
    assert out[0] == []  # forked before the caller's work
    assert out[1] == ["warm"] and out[2] == ["warm"]

"""The local pool runs short batches of runs per worker process (tcplab.sweep.executors).

Why: a freshly forked worker pays for the memory it touches first (copy-on-write and
first-touch page faults) and for its exit: with one process per run the pool cost 22-27 ms of
CPU per run more than one process, with batches 6-7 ms (bench/sweep_speed.py). What must still hold: every
run's outcome comes back once, the table is what one process gives, and a worker that dies
fails only its own run.

The engine double (tests/fake_core.py) logs each run's key and the worker's pid to a file:
the runs happen in forked workers whose memory the test cannot see.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tcplab.sweep import plan_sweep, run_sweep
from tcplab.sweep.executors import MAX_BATCH, LocalExecutor, batch_sizes, run_point
from tcplab.sweep.keys import run_key

LOSSY = "builtin:cubic-vs-bbr-lossy"


class PidLoggingCore:
    """The engine double; each run appends ``KEY PID`` to ``log``."""

    __version__ = "0.1.0-fake"

    def __init__(self, log: Path):
        import fake_core

        self.inner = fake_core.FakeCore()
        self.log = log

    def run(self, config_json, progress=None):
        with open(self.log, "a", encoding="utf-8") as f:
            f.write(f"{run_key(json.loads(config_json), self.__version__)} {os.getpid()}\n")
        return self.inner.run(config_json, progress)


def logged(log: Path) -> list[tuple[str, int]]:
    return [(k, int(p)) for k, p in (line.split() for line in log.read_text().splitlines())]


@pytest.mark.parametrize("n_runs", [0, 1, 2, 5, 12, 40, 41, 100, 1000])
@pytest.mark.parametrize("workers", [1, 2, 3, 8])
def test_batch_sizes_cover_every_run_once_and_end_with_single_runs(n_runs, workers):
    sizes = batch_sizes(n_runs, workers)
    assert sum(sizes) == n_runs
    assert all(1 <= s <= MAX_BATCH for s in sizes)
    assert sizes == sorted(sizes, reverse=True)  # batches shrink: the last ones are the shortest
    # while the last runs are handed out, every worker gets a single run: none is left with a
    # batch while the others idle
    assert sizes[len(sizes) - min(workers, n_runs) :] == [1] * min(workers, n_runs)


def test_batch_sizes_use_fewer_processes_than_runs_when_there_are_many():
    assert len(batch_sizes(40, 2)) < 40 / 2
    assert max(batch_sizes(40, 2)) == MAX_BATCH


def test_a_worker_runs_several_runs_and_the_table_is_one_processes(tmp_path):
    core = PidLoggingCore(tmp_path / "runs.log")
    plan = plan_sweep(
        LOSSY, ["flows.0.cc=cubic,bbr", "links.1.loss=0%,1%"], seeds=5, overrides=["duration=2s"], core=core
    )
    pooled = run_sweep(plan, tmp_path / "pool", jobs=2, plots=False)
    runs = logged(core.log)
    assert sorted(k for k, _ in runs) == sorted(plan.scenarios)  # each run once
    workers = {pid for _, pid in runs}
    assert os.getpid() not in workers
    assert len(workers) == len(batch_sizes(20, 2)) < 20

    class InProcess(LocalExecutor):
        def map_unordered(self, jobs, fn=run_point):
            for i, job in enumerate(jobs):
                yield i, fn(job)

    core.log.unlink()
    alone = run_sweep(plan, tmp_path / "one", executor=InProcess(1), plots=False)
    assert {pid for _, pid in logged(core.log)} == {os.getpid()}
    assert pooled.table.equals(alone.table)
    assert (tmp_path / "pool" / "sweep.parquet").read_bytes() == (tmp_path / "one" / "sweep.parquet").read_bytes()


def _dies_on_one(job):
    """run_point, except that the worker dies (as by a crash in native code) on one run."""
    if "flows.0.cc=bbr" in job.overrides and "links.1.loss=1%" in job.overrides and job.scenario.seed == 2:
        os._exit(7)
    return run_point(job)


def test_a_worker_that_dies_inside_a_batch_fails_only_its_run(tmp_path):
    core = PidLoggingCore(tmp_path / "runs.log")
    plan = plan_sweep(
        LOSSY, ["flows.0.cc=cubic,bbr", "links.1.loss=0%,1%"], seeds=5, overrides=["duration=2s"], core=core
    )
    assert max(batch_sizes(len(plan.scenarios), 2)) > 1  # the dying run shares a batch

    class Dying(LocalExecutor):
        def map_unordered(self, jobs, fn):
            return super().map_unordered(jobs, _dies_on_one)

    res = run_sweep(plan, tmp_path / "out", executor=Dying(2), plots=False)
    failed = res.table[res.table["status"] == "failed"]
    assert len(res.table) == 20
    assert list(zip(failed["flows.0.cc"], failed["links.1.loss"], failed["seed"], strict=True)) == [("bbr", "1%", 2)]
    assert failed["error"].iloc[0] == "worker process exited with status 7 without a result"
    assert (res.table.loc[res.table["status"] == "ok", "flow_index"] == 0).all()

#!/usr/bin/env python3
"""Speed of `tcplab sweep`'s local pool: the speed-up over one process, and the per-run overhead.

    .venv/bin/python bench/sweep.py [--duration 30s] [--rounds 3] [--jobs 2]

The sweep: builtin:cubic-100mbit-20ms (one bulk flow, 100 Mbit/s, 20 ms RTT) with --set
duration=D, --grid flows.0.cc=cubic,bbr --grid links.1.loss=0%,0.01%,0.1%,1% and 5 seeds:
40 short runs (30 s of simulated time: ~0.1 s of engine time each on this machine).

* **one process**: the 40 runs one after another in this process (tcplab.sweep.executors.run_point,
  no fork, no files): what a loop over tcplab.run would cost.
* **pool -j 1** / **pool -j N**: `tcplab.sweep(..., jobs=J, out=DIR)` (fork per run, rows written
  to DIR/rows/KEY.parquet as each run ends, the table at the end; no plots).
* speed-up = one process / pool -j N; the fork path's overhead per run = (pool -j 1 - one
  process) / 40.
* Per-run overhead, measured on its own: fork + start + exit + sending 1 row back
  (procpool.map_in_processes of a job that does nothing, one at a time); the worker's rows
  (rows_from_result); the parent's write of rows/KEY.parquet (pyarrow); the table at the end
  (build_table, per run).

Rounds interleave the three ways; each keeps its fastest round (the runs are deterministic,
so the minimum filters out other processes' interference). The 1-minute load average is
printed with each round: judge a speed-up only from a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

import tcplab  # noqa: E402
from tcplab.sweep import plan_sweep  # noqa: E402

GRID = ["flows.0.cc=cubic,bbr", "links.1.loss=0%,0.01%,0.1%,1%"]
SCENARIO = "builtin:cubic-100mbit-20ms"


def _noop(job):  # noqa: ANN001, ANN202 - a job that does nothing but send back one row
    return [{"flow_index": 0, "goodput_bps": 1.0}]


def _cpu() -> tuple[float, float]:
    """(this process's CPU seconds, its reaped children's)."""
    t = os.times()
    return t.user + t.system, t.children_user + t.children_system


def one_process(plan) -> tuple[float, float, float]:  # noqa: ANN001
    """(wall s, this process's CPU s, children's CPU s)."""
    from tcplab.sweep.executors import PointJob, run_point

    c0, k0 = _cpu()
    started = time.perf_counter()
    for key, (entry, sc) in plan.scenarios.items():
        outcome = run_point(PointJob(key=key, scenario=sc, engine=plan.engine, overrides=plan.overrides_of(entry)))
        assert outcome.ok, outcome.error
    c1, k1 = _cpu()
    return time.perf_counter() - started, c1 - c0, k1 - k0


def pool(args, jobs: int) -> tuple[float, float, float]:  # noqa: ANN001
    """(wall s, the parent's CPU s, the workers' CPU s): plan, runs, rows, table."""
    tmp = Path(tempfile.mkdtemp(prefix="tcplab-bench-sweep-"))
    try:
        c0, k0 = _cpu()
        started = time.perf_counter()
        res = tcplab.sweep(
            SCENARIO, GRID, seeds=5, overrides=[f"duration={args.duration}"], out=tmp / "sw", jobs=jobs, plots=False
        )
        elapsed = time.perf_counter() - started
        c1, k1 = _cpu()
        assert res.ok and len(res.table) == 40
        return elapsed, c1 - c0, k1 - k0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def overheads(plan, n: int = 40) -> dict[str, float]:  # noqa: ANN001
    """Per-run costs, in ms, each measured on its own."""
    from tcplab.procpool import map_in_processes
    from tcplab.runner import run
    from tcplab.sweep.executors import warm_imports
    from tcplab.sweep.rows import build_table, read_run_rows, rows_from_result, write_run_rows

    warm_imports()
    out: dict[str, float] = {}
    started = time.perf_counter()
    for _ in map_in_processes(list(range(n)), _noop, 1):
        pass
    out["fork + start + exit + IPC (ms)"] = 1e3 * (time.perf_counter() - started) / n
    key, (entry, sc) = next(iter(plan.scenarios.items()))
    result = run(sc)
    out["engine, first run (ms)"] = 1e3 * result.wall_time_s
    started = time.perf_counter()
    for _ in range(n):
        result = run(sc)
    out["tcplab.run: engine + Result (ms)"] = 1e3 * (time.perf_counter() - started) / n
    started = time.perf_counter()
    for _ in range(n):
        rows = rows_from_result(result)
    out["rows_from_result (ms)"] = 1e3 * (time.perf_counter() - started) / n
    tmp = Path(tempfile.mkdtemp(prefix="tcplab-bench-rows-"))
    try:
        started = time.perf_counter()
        for i in range(n):
            write_run_rows(rows, tmp / f"{i}.parquet")
        out["parent: write rows/KEY.parquet (ms)"] = 1e3 * (time.perf_counter() - started) / n
        tables = {str(i): read_run_rows(tmp / f"{i}.parquet") for i in range(n)}
        entries = [(e.point, e.seed, str(i), None) for i, e in enumerate(plan.entries[:n])]
        started = time.perf_counter()
        build_table(plan.parameters, entries, tables)
        out["parent: build the table, per run (ms)"] = 1e3 * (time.perf_counter() - started) / n
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", default="30s", help="simulated duration of each run (default 30s)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = ap.parse_args()
    plan = plan_sweep(SCENARIO, GRID, seeds=5, overrides=[f"duration={args.duration}"])
    assert len(plan.scenarios) == 40
    print(f"40 runs: {SCENARIO} duration={args.duration}, {' '.join('--grid ' + g for g in GRID)}, 5 seeds")
    for name, value in overheads(plan).items():
        print(f"  {name:42s} {value:8.2f}")
    times: dict[str, list[tuple[float, float, float]]] = {
        "one process": [],
        "pool -j 1": [],
        f"pool -j {args.jobs}": [],
    }
    for r in range(args.rounds):
        load = os.getloadavg()[0]
        times["one process"].append(one_process(plan))
        times["pool -j 1"].append(pool(args, 1))
        times[f"pool -j {args.jobs}"].append(pool(args, args.jobs))
        print(f"round {r + 1} (load {load:.2f}): " + ", ".join(f"{k} {v[-1][0]:.2f} s" for k, v in times.items()))
    best = {k: min(v) for k, v in times.items()}
    base = best["one process"][0]
    print("fastest round of each (wall; CPU of the parent + its workers):")
    for k, (wall, parent, workers) in best.items():
        print(
            f"  {k:14s} {wall:7.2f} s  ({base / wall:.2f}x one process; median "
            f"{statistics.median(t[0] for t in times[k]):.2f} s)  CPU {parent:.2f} + {workers:.2f} s"
        )
    cpu_one = min(t[1] for t in times["one process"])
    cpu_pool = min(t[1] + t[2] for t in times["pool -j 1"])
    parent = min(t[1] for t in times["pool -j 1"])
    print(
        f"fork-path overhead per run, wall: {1e3 * (best['pool -j 1'][0] - base) / 40:.1f} ms; "
        f"CPU: {1e3 * (cpu_pool - cpu_one) / 40:.1f} ms (of which the parent's serial work "
        f"{1e3 * parent / 40:.1f} ms per run, plan and table included)"
    )


if __name__ == "__main__":
    main()

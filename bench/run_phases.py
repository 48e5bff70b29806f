#!/usr/bin/env python3
"""Where a replay's run spends its CPU, in one process: the engine, the Result, the run directory.

    .venv/bin/python bench/run_phases.py              # every 4th run of each quick plan
    .venv/bin/python bench/run_phases.py --every 1    # all 147
    PYTHONPATH=/tmp/before/python .venv/bin/python bench/run_phases.py   # another checkout

Each planned run of ``tcplab reproduce --all --quick`` (every ``--every``-th) is simulated and
written in this process, with ``time.process_time()`` around each phase: the engine
(``to_core`` and ``run_core``: JSON in, columns out), the Result (frames, summary, episodes),
and writing the run directory (``Result.write(plots=False)``, as reproduce's workers do), of
which the exports (flent, iperf3) and the views (report.html) are shown apart. Then
``write_report`` alone, best of 3, on four runs of different sizes (its tool texts already
made, as the writer makes them before the report). What a replay adds around the runs
(worker processes, the plan, the verdicts, the figures) is not here: BENCHMARKS.md measures
the whole command with bench/front_ab.py.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import tcplab
from tcplab.engine import run_core
from tcplab.experiments.catalog import load
from tcplab.exports import write_exports
from tcplab.results import Result
from tcplab.views import write_run_views
from tcplab.views.report import write_report

EXPERIMENTS = ("cluster-bbr-timeouts", "cilium-bbr-demo", "bandwidth-manager", "bbr-vm-contention", "microburst-ring")
#: runs of different sizes for the report's own time: 10,000 connections, 16 flows, one NFS stream
REPORT_RUNS = {
    "microburst-ring": ["ring-1024"],
    "bandwidth-manager": ["rr-edt-100m-n16", "bwm-100m"],
    "cluster-bbr-timeouts": ["nfs-bbr-bursts-s1"],
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--every", type=int, default=4, help="every N-th run of each plan (default 4)")
    args = ap.parse_args()
    total = dict.fromkeys(("engine", "result", "write", "exports", "views"), 0.0)
    runs = 0
    for name in EXPERIMENTS:
        for _run, sc in load(name).plan(True)[:: max(1, args.every)]:
            t0 = time.process_time()
            config = sc.to_core()
            output = run_core(config)
            t1 = time.process_time()
            result = Result(sc, config, output)
            t2 = time.process_time()
            spent = {"exports": 0.0, "views": 0.0}

            def timed(part: str, fn, *a, spent=spent, **k) -> None:
                start = time.process_time()
                fn(*a, **k)
                spent[part] += time.process_time() - start

            result.exports = lambda r, out, timed=timed: timed("exports", write_exports, r, out)
            result.views = lambda r, out, plots, timed=timed: timed("views", write_run_views, r, out, plots=plots)
            with tempfile.TemporaryDirectory() as tmp:
                result.write(Path(tmp) / "run", plots=False)
            t3 = time.process_time()
            total["engine"] += t1 - t0
            total["result"] += t2 - t1
            total["write"] += t3 - t2
            total["exports"] += spent["exports"]
            total["views"] += spent["views"]
            runs += 1
    whole = total["engine"] + total["result"] + total["write"]
    print(f"{runs} runs, CPU s: " + ", ".join(f"{k} {v:.2f}" for k, v in total.items()))
    print(f"engine share of these phases: {100 * total['engine'] / whole:.0f} %")
    for name, labels in REPORT_RUNS.items():
        for run, sc in load(name).plan(True):
            if run.label not in labels:
                continue
            result = tcplab.run(sc)
            result.stats_files()  # made before the report, as Result.write does
            with tempfile.TemporaryDirectory() as tmp:
                page = Path(tmp) / "report.html"
                best = min(_cpu(lambda result=result, page=page: write_report(result, page, ())) for _ in range(3))
            print(f"report.html of {name}/{run.label}: {1e3 * best:.0f} ms CPU")
    return 0


def _cpu(fn) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


if __name__ == "__main__":
    raise SystemExit(main())

#!/usr/bin/env python3
"""How fast `tcplab sweep` runs a sweep of short runs: one process against the local pool,
and where each run's time goes.

    python bench/sweep_speed.py                 # every case, ~5 minutes (make bench-sweep)
    python bench/sweep_speed.py --only short --repeat 5 --jobs 2 [--duration 20s] [--dask]

Three sweeps of 40 runs each: 8 points (--grid flows.0.cc=cubic,bbr x a second parameter with
4 values) x --seeds 5:

* short: builtin:cubic-100mbit-20ms at 1 Gbit/s (--set links.1.rate=1Gbit), 10 simulated
  seconds, x links.1.delay=1ms,2ms,5ms,10ms: about 0.15 s of simulation per run.
* medium: the same at 40 simulated seconds: about 0.6 s per run.
* tiny: builtin:cubic-vs-bbr-lossy (5 Mbit/s, 100 ms RTT), 20 simulated seconds, x
  links.1.loss=0.5%,1%,2%,4%: about 10 ms per run, so the fixed costs show (imports, the
  table, the plots and report.html) and the speed-up is bounded by them.

What is measured (wall seconds, each the fastest of --repeat, every command in a fresh
process, so interpreter start and imports count once in each):

* one process: the whole sweep in one Python process, no worker processes: each run planned,
  simulated and tabulated in turn (``--inner serial``: the same plan and per-run function as
  the pool, called in-process).
* pool: ``tcplab sweep ... --jobs N`` (N = --jobs, default the machine's cores) and
  ``--jobs 1`` (the pool's machinery without its parallelism): speed-up = one process / pool
  (the issue's target: >= 1.8x on 2 cores); the pool's cost per run =
  (pool --jobs 1 - one process) / runs.
* the split of one run's time, from an instrumented pool (``--inner split``: the sweep's
  own functions wrapped with timers; every run, mean and max): process start (the parent's
  fork call until the worker runs the job), the run itself (the worker's simulation and its
  rows), IPC (the worker's return until the parent holds the outcome: pickling, the pipe,
  the parent's wake-up), writing rows (the parent's rows/KEY.parquet). The issue's target:
  overhead (start + IPC + writing) under 0.2 s per run.

Judge the figures on a quiet machine: each measurement records the CPU seconds other
processes took meanwhile (/proc/stat's busy time less the command's own), which should be
near 0. Writes target/bench/sweep-speed.json and target/bench/sweep-speed.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "target" / "bench"
SEEDS = 5
#: name -> (scenario, --set overrides, --grid parameters, what it is); 8 points x 5 seeds each
CASES = {
    "short": (
        "builtin:cubic-100mbit-20ms",
        ["links.1.rate=1Gbit", "duration=10s"],
        ["flows.0.cc=cubic,bbr", "links.1.delay=1ms,2ms,5ms,10ms"],
        "one bulk flow, 1 Gbit/s, 10 simulated s",
    ),
    "medium": (
        "builtin:cubic-100mbit-20ms",
        ["links.1.rate=1Gbit", "duration=40s"],
        ["flows.0.cc=cubic,bbr", "links.1.delay=1ms,2ms,5ms,10ms"],
        "one bulk flow, 1 Gbit/s, 40 simulated s",
    ),
    "tiny": (
        "builtin:cubic-vs-bbr-lossy",
        ["duration=20s"],
        ["flows.0.cc=cubic,bbr", "links.1.loss=0.5%,1%,2%,4%"],
        "one bulk flow, 5 Mbit/s, 100 ms RTT, 20 simulated s",
    ),
}


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def tcplab_exe() -> str:
    here = Path(sys.executable).parent / "tcplab"
    return str(here) if here.exists() else (shutil.which("tcplab") or "tcplab")


def sweep_args(case: str, duration: str | None) -> list[str]:
    """`tcplab sweep` arguments of a case (without -o and --jobs)."""
    scenario, sets, grid, _ = CASES[case]
    args = [scenario]
    for g in grid:
        args += ["--grid", g]
    for s in sets:
        if duration is not None and s.startswith("duration="):
            s = f"duration={duration}"
        args += ["--set", s]
    return [*args, "--seeds", str(SEEDS), "--quiet", "--force"]


def n_runs(case: str) -> int:
    n = SEEDS
    for g in CASES[case][2]:
        n *= len(g.partition("=")[2].split(","))
    return n


def busy_cpu_s() -> float:
    """CPU seconds the whole machine has spent busy (every CPU, /proc/stat: all but idle and iowait)."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except OSError:
        return float("nan")
    return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def timed(cmd: list[str]) -> tuple[float, float, float]:
    """Wall seconds of a command (a fresh process), its CPU seconds (user + system of the
    process and every worker it waited for, from wait4), and the CPU seconds other processes
    on the machine took meanwhile (interference: near 0 on a quiet machine)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        busy0 = busy_cpu_s()
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        others = busy_cpu_s() - busy0 - (usage.ru_utime + usage.ru_stime)
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped: keep Popen from waiting again
        if proc.returncode != 0:
            err.seek(0)
            text = err.read().decode(errors="replace").strip()[-500:]
            raise SystemExit(f"error: {' '.join(cmd)} exited {proc.returncode}: {text}")
    return wall, usage.ru_utime + usage.ru_stime, max(0.0, others)


# ---- inner modes (run in a fresh process by the outer harness): `tcplab sweep` itself, in
# this process, with the sweep's own functions patched (serial) or wrapped with timers (split)


def _cli_sweep(argv: list[str]) -> None:
    """`tcplab sweep ARGV` in this process."""
    from tcplab import cli

    sys.argv = ["tcplab", "sweep", *argv]
    try:
        cli.main()
    except SystemExit as e:
        if e.code not in (0, None):
            raise SystemExit(f"error: tcplab sweep exited {e.code}") from None


def inner_serial(argv: list[str]) -> dict:
    """The sweep in this process, no worker process: the local executor's map replaced by a
    loop calling the per-run function in turn (plan, rows, table and views as usual)."""
    from tcplab.sweep import executors, store

    run_s: list[float] = []
    phase: list[float] = []  # the first run's start, the last rows written

    def in_process(self, jobs, fn=executors.run_point):
        executors.warm_imports(jobs[0].core if jobs else None)
        for i, job in enumerate(jobs):
            t0 = time.monotonic()
            phase[:1] = phase[:1] or [t0]
            outcome = fn(job)
            run_s.append(time.monotonic() - t0)
            yield i, outcome

    original_write = store.SweepStore.write_rows

    def write_rows(self, key, rows):
        written = original_write(self, key, rows)
        phase[1:] = [time.monotonic()]
        return written

    executors.LocalExecutor.map_unordered = in_process
    store.SweepStore.write_rows = write_rows
    t0 = time.perf_counter()
    _cli_sweep([*argv, "--jobs", "1"])  # one process: the figures too are drawn in this one
    return {"wall_s": time.perf_counter() - t0, "run_s": run_s, "runs_phase_s": phase[1] - phase[0]}


def inner_split(argv: list[str]) -> dict:
    """The pool as `tcplab sweep` runs it, with timers (time.monotonic(): one clock for every
    process on Linux) around: each worker process's start (the parent's Process.start()
    call) and exit (the parent's join()), the per-run function in the worker, the parent's
    receipt of each outcome, and the parent's write of each run's rows. A worker may run
    several runs in a row (a batch): its start, IPC and exit are shared by them."""
    import multiprocessing.process

    from tcplab.sweep import executors, store

    t_begin = time.monotonic()
    started: dict[int, float] = {}  # worker pid -> the parent's start() call
    joined: dict[int, float] = {}  # worker pid -> seconds in the parent's join() (the worker's exit)
    received: dict[str, float] = {}  # run key -> the parent holds its outcome
    writes: dict[str, tuple[float, float]] = {}  # run key -> write_rows start, end
    in_worker: dict[str, tuple[float, float, int]] = {}  # run key -> the per-run function's start, end, pid

    original_start = multiprocessing.process.BaseProcess.start
    original_join = multiprocessing.process.BaseProcess.join

    def start(self):
        t0 = time.monotonic()
        original_start(self)
        started[self.pid] = t0

    def join(self, timeout=None):
        t0 = time.monotonic()
        original_join(self, timeout)
        joined[self.pid] = joined.get(self.pid, 0.0) + time.monotonic() - t0

    multiprocessing.process.BaseProcess.start = start
    multiprocessing.process.BaseProcess.join = join

    original_run_point = executors.run_point

    def timed_run_point(job):
        t0 = time.monotonic()
        outcome = original_run_point(job)
        outcome.bench_times = (t0, time.monotonic(), os.getpid())  # travels back with the outcome
        return outcome

    # the sweep looks the per-run function up in executors when it starts the pool
    executors.run_point = timed_run_point
    original_map = executors.LocalExecutor.map_unordered

    def map_unordered(self, jobs, fn=timed_run_point):
        fn = timed_run_point if fn is original_run_point else fn
        for i, outcome in original_map(self, jobs, fn):
            received[outcome.key] = time.monotonic()
            if hasattr(outcome, "bench_times"):
                in_worker[outcome.key] = outcome.bench_times
            yield i, outcome

    executors.LocalExecutor.map_unordered = map_unordered
    original_write = store.SweepStore.write_rows

    def write_rows(self, key, rows):
        t0 = time.monotonic()
        written = original_write(self, key, rows)
        writes[key] = (t0, time.monotonic())
        return written

    store.SweepStore.write_rows = write_rows
    _cli_sweep(argv)
    t_end = time.monotonic()

    runs = [
        {"key": k, "pid": pid, "start": w0, "end": w1, "run_s": w1 - w0, "write_rows_s": writes[k][1] - writes[k][0]}
        for k, (w0, w1, pid) in in_worker.items()
        if k in writes
    ]
    processes = []
    for pid in sorted({r["pid"] for r in runs}, key=lambda p: started.get(p, 0.0)):
        mine = sorted((r for r in runs if r["pid"] == pid), key=lambda r: r["start"])
        last = mine[-1]
        processes.append(
            {
                "pid": pid,
                "runs": len(mine),
                "started": started[pid],
                "process_start_s": mine[0]["start"] - started[pid],
                "ipc_s": received[last["key"]] - last["end"] - joined.get(pid, 0.0),
                "exit_s": joined.get(pid, 0.0),
                "last_write_end": max(writes[r["key"]][1] for r in mine),
            }
        )
    # the parent's own time from a worker's rows written to the next worker's start
    # (meaningful with one job at a time: progress, bookkeeping, the pool's loop)
    for prev, nxt in zip(processes, processes[1:], strict=False):
        prev["parent_until_next_start_s"] = nxt["started"] - prev["last_write_end"]
    first_start = min(started.values()) if started else t_end
    last_write = max(w[1] for w in writes.values()) if writes else t_begin
    return {
        "wall_s": t_end - t_begin,
        "before_first_run_s": first_start - t_begin,
        "after_last_run_s": t_end - last_write,
        "runs_phase_s": last_write - first_start,
        "runs": runs,
        "processes": processes,
    }


def _stats(values: list[float]) -> dict:
    return {"mean_ms": 1e3 * statistics.fmean(values), "max_ms": 1e3 * max(values)} if values else {}


def split_summary(split: dict) -> dict:
    """Per run (mean over runs; max over runs or processes), from an instrumented pool
    (``inner_split``): a worker's start, IPC and exit are divided among the runs it ran."""
    runs, procs = split["runs"], split["processes"]
    n = len(runs)
    out: dict = {"runs": n, "processes": len(procs)}
    for part in ("process_start_s", "ipc_s", "exit_s"):
        values = [p[part] for p in procs]
        out[part.removesuffix("_s")] = {"mean_ms": 1e3 * sum(values) / n, "max_ms": 1e3 * max(values)}
    out["write_rows"] = _stats([r["write_rows_s"] for r in runs])
    out["run"] = _stats([r["run_s"] for r in runs])
    out["overhead"] = {
        "mean_ms": sum(out[p]["mean_ms"] for p in ("process_start", "ipc", "exit", "write_rows")),
        "max_ms": max(p["process_start_s"] + p["ipc_s"] + p["exit_s"] for p in procs) * 1e3
        + out["write_rows"]["max_ms"],
    }
    out["parent_until_next_start"] = _stats(
        [p["parent_until_next_start_s"] for p in procs if "parent_until_next_start_s" in p]
    )
    out.update(
        runs_phase_s=split["runs_phase_s"],
        wall_s=split["wall_s"],
        before_first_run_s=split["before_first_run_s"],
        after_last_run_s=split["after_last_run_s"],
    )
    return out


@contextlib.contextmanager
def dask_cluster(workers: int, tmp: Path) -> Iterator[str]:
    """A Dask cluster as a user starts one (``dask scheduler``; ``dask worker --nworkers N
    --nthreads 1``, separate processes on this machine); yields the scheduler's address once
    ``workers`` workers have joined. Its processes are stopped on the way out."""
    dask = str(Path(sys.executable).with_name("dask"))
    info = tmp / "dask-scheduler.json"
    info.unlink(missing_ok=True)
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    procs = [
        subprocess.Popen(
            [dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file", str(info)],
            **quiet,
        )
    ]
    try:
        deadline = time.monotonic() + 60
        while not info.is_file() and time.monotonic() < deadline:
            time.sleep(0.1)
        address = json.loads(info.read_text())["address"]
        procs.append(
            subprocess.Popen(
                [dask, "worker", address, "--nworkers", str(workers), "--nthreads", "1", "--no-dashboard"], **quiet
            )
        )
        from distributed import Client

        with Client(address, timeout=60) as client:
            client.wait_for_workers(workers, timeout=120)
        yield address
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in reversed(procs):
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def measure_case(case: str, args: argparse.Namespace, tmp: Path, dask_address: str | None = None) -> dict:
    runs = n_runs(case)
    scenario, sets, grid, what = CASES[case]
    sweep = sweep_args(case, args.duration)
    me = [sys.executable, str(Path(__file__).resolve())]
    fig: dict = {"case": case, "what": what, "runs": runs, "command": ["tcplab", "sweep", *sweep, "-o", "OUT"]}
    out = str(tmp / case)
    # interleaved rounds: a change in the machine's load falls on every form alike
    serial_result = tmp / "serial.json"
    forms = {
        "one_process": [*me, "--inner", "serial", "--result", str(serial_result), "--", *sweep, "-o", out],
        "pool_1": [tcplab_exe(), "sweep", *sweep, "-o", out, "--jobs", "1"],
        f"pool_{args.jobs}": [tcplab_exe(), "sweep", *sweep, "-o", out, "--jobs", str(args.jobs)],
    }
    if dask_address is not None:
        forms[f"dask_{args.jobs}"] = [tcplab_exe(), "sweep", *sweep, "-o", out, "--dask", dask_address]
    walls: dict[str, list[float]] = {k: [] for k in forms}
    cpus: dict[str, list[float]] = {k: [] for k in forms}
    others: dict[str, list[float]] = {k: [] for k in forms}
    loads: dict[str, list[float]] = {k: [] for k in forms}
    for _ in range(args.repeat):
        for form, cmd in forms.items():
            loads[form].append(round(os.getloadavg()[0], 2))
            wall, cpu, other = timed(cmd)
            walls[form].append(wall)
            cpus[form].append(cpu)
            others[form].append(other)
            say(f"{case} {form}: {wall:.2f} s, CPU {cpu:.2f} s, others' CPU {other:.2f} s (load {loads[form][-1]})")
    for form in forms:
        best = min(range(len(walls[form])), key=walls[form].__getitem__)
        fig[form] = {
            "wall_s": walls[form][best],
            "others_cpu_s": others[form][best],  # during the fastest round
            "cpu_s": min(cpus[form]),
            "walls_s": walls[form],
            "cpus_s": cpus[form],
            "others_cpu_s_each": others[form],
            "load1": loads[form],
        }
    serial = json.loads(serial_result.read_text())  # the last round's
    fig["one_process"]["run"] = _stats(serial["run_s"])
    fig["one_process"]["runs_phase_s"] = serial["runs_phase_s"]
    one, pool1, pooln = (fig[f]["wall_s"] for f in list(forms)[:3])
    fig["speedup"] = one / pooln
    if dask_address is not None:
        # the workers are other processes: their CPU shows as others' CPU, not the command's
        fig["dask_speedup"] = one / fig[f"dask_{args.jobs}"]["wall_s"]
    fig["pool_cost_per_run_s"] = (pool1 - one) / runs
    # the same from CPU time, which other processes on the machine do not inflate
    fig["pool_cpu_per_run_s"] = (fig["pool_1"]["cpu_s"] - fig["one_process"]["cpu_s"]) / runs
    for jobs in sorted({1, args.jobs}):
        result = tmp / "split.json"
        _, _, other = timed(
            [*me, "--inner", "split", "--result", str(result), "--", *sweep, "-o", out, "--jobs", str(jobs)]
        )
        fig[f"split_{jobs}"] = split_summary(json.loads(result.read_text())) | {"others_cpu_s": other}
    # the same ratio over the runs alone (the first run's start to the last rows written):
    # without the fixed costs both forms pay (interpreter, imports, plan, table, plots)
    fig["runs_phase_speedup"] = fig["one_process"]["runs_phase_s"] / fig[f"split_{args.jobs}"]["runs_phase_s"]
    return fig


def markdown(figures: dict) -> str:
    jobs = figures["jobs"]
    lines = [
        f"tcplab sweep, {SEEDS} seeds x 8 points = 40 runs per case; wall s = fastest of {figures['repeat']}"
        f" (fresh process each, imports included); others' CPU s = CPU seconds other processes on the"
        f" machine took during each fastest round (one process, -j 1, -j N): near 0 on a quiet machine.",
        "",
        f"| case | runs | one process s | pool -j 1 s | pool -j {jobs} s | speed-up | pool cost per run (ms)"
        " | CPU s: one process, -j 1, -j N | pool CPU per run (ms) | others' CPU s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in figures["cases"]:
        load = ", ".join(f"{c[f]['others_cpu_s']:.2f}" for f in ("one_process", "pool_1", f"pool_{jobs}"))
        lines.append(
            f"| {c['case']}: {c['what']} | {c['runs']} | {c['one_process']['wall_s']:.2f} | {c['pool_1']['wall_s']:.2f}"
            f" | {c[f'pool_{jobs}']['wall_s']:.2f} | {c['speedup']:.2f}x"
            f" | {1e3 * c['pool_cost_per_run_s']:.1f}"
            f" | {c['one_process']['cpu_s']:.2f}, {c['pool_1']['cpu_s']:.2f}, {c[f'pool_{jobs}']['cpu_s']:.2f}"
            f" | {1e3 * c['pool_cpu_per_run_s']:.1f} | {load} |"
        )
    lines.append("")
    for c in figures["cases"]:
        if "dask_speedup" in c:
            d = c[f"dask_{jobs}"]
            lines.append(
                f"- {c['case']} on a local Dask cluster of {jobs} worker processes (`dask scheduler`, `dask worker"
                f" --nworkers {jobs} --nthreads 1`, started once before the rounds): {d['wall_s']:.2f} s,"
                f" {c['dask_speedup']:.2f}x one process (the workers' CPU counts as others' CPU:"
                f" {d['others_cpu_s']:.2f} s)"
            )
    for c in figures["cases"]:
        lines.append(
            f"- {c['case']}: the runs alone (first run's start to last rows written): one process"
            f" {c['one_process']['runs_phase_s']:.2f} s, pool -j {jobs} {c[f'split_{jobs}']['runs_phase_s']:.2f} s:"
            f" {c['runs_phase_speedup']:.2f}x (one round each; the pool's with others' CPU"
            f" {c[f'split_{jobs}']['others_cpu_s']:.2f} s)"
        )
    lines += [
        "",
        "Per run, from the instrumented pool, ms: mean per run / max (a worker process's start, IPC and exit"
        " are shared by the runs it ran, and their max is per process); overhead = process start + IPC + worker"
        " exit + writing rows; parent = the parent's time from a worker's rows written to the next worker's start;"
        " the run itself = the per-run function (simulation, Result, rows) in the worker:",
        "",
        "| case | jobs | runs / processes | process start | IPC | worker exit | writing rows | overhead"
        " | the run itself | parent | before the first run s | after the last s | others' CPU s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in figures["cases"]:
        r = c["one_process"]["run"]
        lines.append(
            f"| {c['case']} | one process | {c['runs']} / 1 | | | | | | {r['mean_ms']:.1f} / {r['max_ms']:.1f}"
            " | | | | |"
        )
    for c in figures["cases"]:
        for jobs_ in sorted({1, jobs}):
            s = c[f"split_{jobs_}"]

            def cell(part: str, s: dict = s) -> str:
                return f"{s[part]['mean_ms']:.1f} / {s[part]['max_ms']:.1f}" if s[part] else "-"

            parent = cell("parent_until_next_start") if jobs_ == 1 else "-"
            lines.append(
                f"| {c['case']} | {jobs_} | {s['runs']} / {s['processes']} | {cell('process_start')} | {cell('ipc')}"
                f" | {cell('exit')}"
                f" | {cell('write_rows')} | {cell('overhead')} | {cell('run')} | {parent}"
                f" | {s['before_first_run_s']:.2f} | {s['after_last_run_s']:.2f} | {s['others_cpu_s']:.2f} |"
            )
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", help="simulated time of each run (default: each case's own)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="the pool's processes (default: cores)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds of each measurement; the fastest counts")
    ap.add_argument("--only", choices=sorted(CASES), help="one case")
    ap.add_argument(
        "--dask",
        action="store_true",
        help="also run each sweep on a local Dask cluster of --jobs worker processes (dask scheduler + dask worker)",
    )
    ap.add_argument(
        "--out", default=str(OUT / "sweep-speed"), help="OUT.json and OUT.md (default target/bench/sweep-speed)"
    )
    ap.add_argument("--inner", choices=["serial", "split"], help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    ap.add_argument("sweep", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.inner:
        result = (inner_serial if args.inner == "serial" else inner_split)(args.sweep)
        Path(args.result).write_text(json.dumps(result))
        return 0

    figures: dict = {
        "jobs": args.jobs,
        "repeat": args.repeat,
        "seeds": SEEDS,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "cases": [],
    }
    with tempfile.TemporaryDirectory(prefix="tcplab-sweep-bench-") as tmp, contextlib.ExitStack() as stack:
        address = stack.enter_context(dask_cluster(args.jobs, Path(tmp))) if args.dask else None
        figures["dask"] = address is not None
        for case in [args.only] if args.only else list(CASES):
            figures["cases"].append(measure_case(case, args, Path(tmp), address))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(figures, indent=2) + "\n")
    text = markdown(figures)
    out.with_suffix(".md").write_text(text)
    print(text)
    print(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Before/after speed of tcplab builds on a shared machine: interleaved rounds, minimum CPU time.

    git worktree add /tmp/before 26706ca && (cd /tmp/before && cargo build --release -p tcplab-bench)
    cargo build --release -p tcplab-bench
    python3 bench/ab.py --rounds 5 \\
        before=/tmp/before/target/release/tcplab-bench:1,2a,2b,3a,3b,4 \\
        after=target/release/tcplab-bench:1,2a,2b,3a,3b,4

Each LABEL=BINARY:IDS runs `BINARY --scenario ID --json --repeat 1` once per round, the builds
taking turns scenario by scenario, so that a change in the machine's load falls on both alike.
Per build and scenario it keeps the smallest wall time (the bench's own) and the smallest CPU
time of the process (user + system from wait4: what the run cost, without the time other
processes held the core), with the 1-minute load average when each ran. It checks that every
build computed the same result (goodput, packets, events) as the first build for the same
scenario: a change that should not alter results must not. JSON of every run goes to --out.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

RESULT_KEYS = ("goodput_bps", "host_packets", "link_packets", "events", "flows_done")


def run_once(exe: str, sid: str) -> tuple[dict, float]:
    """One run of one scenario; returns (the bench's JSON line, the process's CPU seconds)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([exe, "--scenario", sid, "--json", "--repeat", "1"], stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped: keep Popen from waiting again
        out.seek(0)
        err.seek(0)
        text, errtext = out.read().decode(), err.read().decode()
    if proc.returncode != 0:
        raise SystemExit(f"error: {exe} --scenario {sid} exited {proc.returncode}: {errtext.strip()[-300:]}")
    return json.loads(text.strip().splitlines()[-1]), usage.ru_utime + usage.ru_stime


def parse_spec(spec: str) -> tuple[str, str, list[str]]:
    label, sep, rest = spec.partition("=")
    exe, sep2, ids = rest.rpartition(":")
    if not sep or not sep2 or not label or not exe or not ids:
        raise SystemExit(f"error: {spec!r}: expected LABEL=BINARY:ID[,ID...]")
    if not os.access(exe, os.X_OK):
        raise SystemExit(f"error: {spec!r}: {exe} is not an executable")
    return label, exe, [i for i in ids.split(",") if i]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("builds", nargs="+", metavar="LABEL=BINARY:IDS", help="a build and the scenarios to run on it")
    ap.add_argument("--rounds", type=int, default=5, help="runs per build and scenario (default 5)")
    ap.add_argument("--out", default="target/bench/ab.json", help="JSON of every run")
    args = ap.parse_args()
    builds = [parse_spec(s) for s in args.builds]

    runs: dict[tuple[str, str], list[dict]] = {}
    for _ in range(args.rounds):
        ids = list(dict.fromkeys(i for _, _, b_ids in builds for i in b_ids))
        for sid in ids:
            for label, exe, b_ids in builds:
                if sid not in b_ids:
                    continue
                load = os.getloadavg()[0]
                j, cpu = run_once(exe, sid)
                j.update(proc_cpu_s=cpu, load1=round(load, 2), utc=time.strftime("%H:%M:%S", time.gmtime()))
                runs.setdefault((label, sid), []).append(j)
                print(
                    f"{j['utc']} {label:>10} {sid:<4} wall {j['wall_s']:.3f} cpu {cpu:.3f} load {load:.2f}",
                    file=sys.stderr,
                )

    first: dict[str, tuple[str, dict]] = {}
    print(f"{'build':<12} {'id':<4} {'min wall s':>10} {'min cpu s':>10} {'Mpkt/cpu s':>11} {'load':>6}  same result")
    for (label, sid), rs in runs.items():
        best_wall = min(r["wall_s"] for r in rs)
        best = min(rs, key=lambda r: r["proc_cpu_s"])
        result = {k: best[k] for k in RESULT_KEYS}
        ref = first.setdefault(sid, (label, result))
        same = "yes" if ref[1] == result else f"NO (vs {ref[0]}: {ref[1]} / {result})"
        rate = best["host_packets"] / best["proc_cpu_s"] / 1e6
        cpu, load = best["proc_cpu_s"], best["load1"]
        print(f"{label:<12} {sid:<4} {best_wall:>10.3f} {cpu:>10.3f} {rate:>11.2f} {load:>6.2f}  {same}")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump([{"build": k[0], "id": k[1], "runs": v} for k, v in runs.items()], f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""tcplab's benchmark command: the engine on the issue-3 and issue-8 scenarios, ns-3 on
the ones it has a peer for (1-4; tbf 6a/6b and fq_codel 9), and the speed-up of running
comparison variants in 2 processes.

    python bench/run.py                # everything (ns-3 at 1 Gbit/s takes several minutes)
    python bench/run.py --quick        # shortened scenarios, 3 ns-3 pairs each (~10 minutes)
    python bench/run.py --no-ns3       # tcplab only
    python bench/run.py --repeat 5     # best of 5 tcplab runs per scenario (default 3)
    python bench/run.py --pairs 5      # 5 interleaved tcplab/ns-3 pairs per ns-3 scenario
    python bench/run.py --only 6a,6b,9 # these scenarios only

What is measured, per scenario: wall seconds (tcplab: fastest of --repeat runs, each run
is deterministic), simulated packets per wall second (packets the hosts sent, each counted
once), simulated seconds per wall second, peak resident memory of the process that ran it,
and the goodput each simulator computed.

The tcplab/ns-3 ratios come from interleaved pairs, never from runs made apart: for each
of --pairs rounds, every scenario with an ns-3 peer runs tcplab once
(`tcplab-bench --scenario ID --json --repeat 1`, which reports the wall and CPU seconds of
its run) and then ns-3 on the same scenario (wall and CPU seconds of its process, from
wait4), so the two sides of a pair ran at the same machine load; a pair's ratios are ns-3
CPU / tcplab CPU and ns-3 wall / tcplab wall. The table prints the median over the pairs
with its min-max (the rounds spread each scenario's pairs over the whole run, so a change
in load shows as spread rather than as a skewed ratio). CPU ratios are the steadier ones on
a shared machine. A ratio counts only where both computed a comparable result (goodputs
within 10%); where they differ the row says so.

--pairs defaults to 3 with --quick and to 1 for the full bench: the full ns-3 runs take
minutes each (20 simulated seconds at 1 Gbit/s: 2 to 10 minutes; one pass over the peers
is about 20 minutes), so one pair keeps `make bench` near half an hour while still
measuring both sides of each ratio at the same load; ask for more (--pairs 3) to see the
spread.

ns-3 comes from PyPI's `ns3` package (3.44, which ships headers and shared libraries);
bench/ns3/dumbbell.cc is compiled against it with g++. Where ns-3 cannot be installed or
built, its columns say why and the rest still runs. Results, with every pair's figures,
are also written as JSON to target/bench/latest.json.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "target" / "bench"
NS3_PIN = "ns3==3.44.post0"
NS3_LIBS = [
    "applications",
    "internet",
    "point-to-point",
    "traffic-control",
    "network",
    "stats",
    "bridge",
    "core",
]

# id -> (ns-3 arguments of the full scenario, of the --quick one): the scenarios with an
# ns-3 peer. The tbf and fq_codel ones mirror bench/src/main.rs (tbf: rate 100 Mbit/s,
# burst 32 KB, limit 250,000 bytes on the 1 Gbit/s bottleneck port; fq_codel with Linux's
# defaults).
_TBF = ["--cc=cubic", "--flows=1", "--rate=1Gbps", "--rtt=20", "--qdisc=tbf", "--tbfRate=100Mbps"]
_TBF += ["--tbfBurst=32768", "--tbfLimit=250000"]


def _durations(args: list[str], full_s: int, quick_s: int) -> tuple[list[str], list[str]]:
    return [*args, f"--duration={full_s}"], [*args, f"--duration={quick_s}"]


def _short_flows(n: int, spread_s: int, duration_s: int) -> list[str]:
    """Scenario 4 (bench/src/main.rs `short_flows`): n CUBIC flows of 100 KB from one
    sender host, flow i starting at spread * i / n, into one receiver."""
    flows = [f"--flows={n}", "--senders=1", "--flowBytes=100000", f"--spread={spread_s}"]
    return ["--cc=cubic", *flows, "--rate=1Gbps", "--rtt=20", f"--duration={duration_s}"]


NS3_SCENARIOS = {
    "1": _durations(["--cc=cubic", "--flows=1", "--rate=100Mbps", "--rtt=20"], 60, 6),
    "2a": _durations(["--cc=cubic", "--flows=1", "--rate=1Gbps", "--rtt=20"], 20, 3),
    "2b": _durations(["--cc=bbr", "--flows=1", "--rate=1Gbps", "--rtt=20"], 20, 3),
    "3a": _durations(["--cc=cubic", "--flows=10", "--rate=1Gbps", "--rtt=20"], 20, 3),
    "3b": _durations(["--cc=bbr", "--flows=10", "--rate=1Gbps", "--rtt=20"], 20, 3),
    "4": (_short_flows(1000, 10, 12), _short_flows(100, 1, 3)),
    "6a": _durations([*_TBF, "--tbfChild=fifo"], 60, 6),
    "6b": _durations([*_TBF, "--tbfChild=fq_codel"], 60, 6),
    "9": _durations(["--cc=cubic", "--flows=10", "--rate=1Gbps", "--rtt=20", "--qdisc=fq_codel"], 20, 3),
}
# Why the other scenarios have no ns-3 column (the table shows "-").
NO_NS3 = {
    "3c": "ns-3 has no host CPU model",
    "5": "not run (60 simulated minutes)",
    "7a": "same as 3b",
    "7b": "ns-3 has no sch_fq with EDT timestamps",
    "8a": "not run (fan-in: its peer is 8b)",
    "8b": "ns-3 has no NIC receive ring / NAPI model",
    "nic": "ns-3 has no NIC receive ring / NAPI model",
    "cpu": "ns-3 has no host CPU model",
}
TCPLAB_SCENARIOS = ["1", "2a", "2b", "3a", "3b", "3c", "4", "5", "6a", "6b", "7a", "7b", "8a", "8b", "9", "nic", "cpu"]


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run_measured(cmd: list[str], timeout: float) -> tuple[str, float]:
    """Run ``cmd``; return (stdout, wall seconds). (tcplab-bench reports its own peak
    memory, VmHWM, in its JSON.)"""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise RuntimeError(f"{cmd[0]}: no result within {timeout:.0f} s") from None
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {err.strip()[-400:]}")
    return out, wall


def run_with_rusage(cmd: list[str], timeout: float) -> tuple[str, float, int, float]:
    """Run ``cmd``; return (stdout, wall seconds, the child's own peak RSS and CPU seconds
    (user + system) from wait4)."""
    import tempfile

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid != 0:
                break
            if time.perf_counter() - t0 > timeout:
                proc.kill()
                os.wait4(proc.pid, 0)
                raise RuntimeError(f"{cmd[0]}: no result within {timeout:.0f} s")
            time.sleep(0.01)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped: keep Popen from waiting again
        out.seek(0)
        err.seek(0)
        text, errtext = out.read().decode(), err.read().decode()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {errtext.strip()[-400:]}")
    return text, wall, usage.ru_maxrss * 1024, usage.ru_utime + usage.ru_stime


def build_tcplab_bench() -> Path:
    say("building tcplab-bench (cargo build --release -p tcplab-bench)")
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "tcplab-bench"], cwd=ROOT, check=True)
    return ROOT / "target" / "release" / "tcplab-bench"


def _ns3_package_dir() -> Path | None:
    """The installed `ns3` distribution's package directory, if it has the C++ SDK.

    Looked up by distribution, not by import: `python bench/run.py` puts bench/ on
    sys.path, where the bench/ns3 directory would pass for a namespace package `ns3`."""
    importlib.invalidate_caches()
    try:
        dist = importlib.metadata.distribution("ns3")
    except importlib.metadata.PackageNotFoundError:
        return None
    d = Path(str(dist.locate_file("ns3")))
    if (d / "include" / "ns3" / "tcp-bbr.h").is_file() and (d / "lib64").is_dir():
        return d
    return None


def find_or_install_ns3() -> tuple[Path | None, str]:
    """The ns3 package's directory (with include/ and lib64/), or None and why not."""
    d = _ns3_package_dir()
    if d is not None:
        return d, ""
    say(f"installing ns-3 from PyPI ({NS3_PIN}, ~70 MB)")
    r = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", NS3_PIN],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    if r.returncode != 0:
        return None, f"pip install {NS3_PIN} failed: {r.stderr.strip().splitlines()[-1:]}"
    d = _ns3_package_dir()
    if d is None:
        return None, "the installed ns3 package has no C++ headers/libraries (need PyPI ns3 >= 3.44)"
    return d, ""


def build_ns3_program(ns3: Path) -> tuple[Path | None, str]:
    src = ROOT / "bench" / "ns3" / "dumbbell.cc"
    if shutil.which("g++") is None:
        return None, "g++ not found"
    digest = hashlib.sha256(src.read_bytes() + str(ns3).encode()).hexdigest()[:12]
    exe = OUT / f"ns3-dumbbell-{digest}"
    if exe.exists():
        return exe, ""
    OUT.mkdir(parents=True, exist_ok=True)
    libs = [f"-lns3.44-{lib}" for lib in NS3_LIBS]
    cmd = ["g++", "-O2", "-std=c++20", "-o", str(exe), str(src), f"-I{ns3 / 'include'}", f"-L{ns3 / 'lib64'}"]
    cmd += [f"-Wl,-rpath,{ns3 / 'lib64'}", *libs]
    say("compiling bench/ns3/dumbbell.cc against ns-3 3.44")
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None, f"g++ failed: {r.stderr.strip()[-300:]}"
    return exe, ""


def parallel_speedup(quick: bool) -> dict:
    """Wall time of `tcplab compare` with 4 variants in 1 process vs 2 processes."""
    tcplab = shutil.which("tcplab") or str(Path(sys.executable).parent / "tcplab")
    if not Path(tcplab).exists() and shutil.which("tcplab") is None:
        return {"skipped": "the tcplab command is not installed (make setup)"}
    duration = "20s" if quick else "120s"
    base = [tcplab, "compare", "builtin:cubic-100mbit-20ms", "--set", "flows.0.cc=cubic,bbr,reno,cubic"]
    base += ["--set", f"duration={duration}", "-q", "--no-plots", "--force"]
    walls = {}
    for jobs in (1, 2):
        out = OUT / f"compare-j{jobs}"
        t0 = time.perf_counter()
        subprocess.run([*base, "-j", str(jobs), "-o", str(out)], check=True, capture_output=True)
        walls[jobs] = time.perf_counter() - t0
    return {"variants": 4, "duration": duration, "wall_1": walls[1], "wall_2": walls[2], "speedup": walls[1] / walls[2]}


def _secs(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def _spread(values: list[float]) -> dict | None:
    """Median, min and max of a pair ratio (None if no pair gave one)."""
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def _ratio_text(r: dict | None) -> str:
    """`212 (198-231)`; one pair: `212`."""
    if r is None:
        return "-"
    if r["min"] == r["max"]:
        return f"{r['median']:.0f}"
    return f"{r['median']:.0f} ({r['min']:.0f}-{r['max']:.0f})"


def tcplab_command(bench: Path, sid: str, repeat: int, args: argparse.Namespace) -> list[str]:
    cmd = [str(bench), "--scenario", sid, "--json", "--repeat", str(repeat)]
    if args.offload:
        cmd += ["--offload", args.offload]
    if args.quick:
        cmd.append("--quick")
    return cmd


def run_tcplab(bench: Path, sid: str, repeat: int, args: argparse.Namespace) -> dict:
    out, _ = run_measured(tcplab_command(bench, sid, repeat, args), timeout=900)
    return json.loads(out.strip().splitlines()[-1])


def run_ns3(exe: Path, sid: str, quick: bool) -> dict:
    full, short = NS3_SCENARIOS[sid]
    out, wall, rss, cpu = run_with_rusage([str(exe), *(short if quick else full)], timeout=3600)
    n = json.loads(out.strip().splitlines()[-1])
    n.update(wall_s=wall, peak_rss_bytes=rss, cpu_s=cpu)
    return n


def comparable(gt: float, gn: float) -> bool:
    """Both goodputs within 10% of the larger."""
    return abs(gt - gn) <= 0.10 * max(gt, gn)


def measure_pairs(bench: Path, exe: Path, sids: list[str], pairs: int, args: argparse.Namespace) -> dict:
    """Interleaved pairs: `pairs` rounds; in each, every scenario runs tcplab once and then
    ns-3 once, so both sides of a ratio ran at the same machine load. Returns, per
    scenario, the list of pairs (or an error that stopped its pairs)."""
    result: dict[str, dict] = {sid: {"pairs": []} for sid in sids}
    for k in range(pairs):
        for sid in sids:
            if "error" in result[sid]:
                continue
            say(f"pair {k + 1}/{pairs} {sid}: tcplab, then ns-3 ...")
            try:
                t = run_tcplab(bench, sid, 1, args)
                n = run_ns3(exe, sid, args.quick)
            except (RuntimeError, json.JSONDecodeError, IndexError) as e:
                result[sid]["error"] = str(e)
                continue
            ok = comparable(t["goodput_bps"], n["goodput_bps"])
            cpu_ratio = n["cpu_s"] / t["cpu_s"] if t.get("cpu_s") else None
            pair = {
                "load_1min": os.getloadavg()[0],
                "tcplab": {k2: t.get(k2) for k2 in ("wall_s", "cpu_s", "goodput_bps", "flows_done")},
                "ns3": n,
                "comparable": ok,
                "speed_ratio": n["wall_s"] / t["wall_s"],
                "cpu_ratio": cpu_ratio,
            }
            result[sid]["pairs"].append(pair)
            cpu_txt = f"{cpu_ratio:.0f}" if cpu_ratio else "-"
            say(f"  tcplab {t['cpu_s']:.3f} s CPU, ns-3 {n['cpu_s']:.2f} s CPU: cpu x {cpu_txt}")
    return result


def summarize_pairs(p: dict) -> dict:
    """The ns-3 row of a scenario from its pairs: ns-3's figures (median wall and CPU, the
    last run's output) and the ratios' median and min-max over the comparable pairs."""
    pairs = p["pairs"]
    if not pairs:
        return {"error": p.get("error", "no pair ran")}
    n = dict(pairs[-1]["ns3"])
    n["wall_s"] = statistics.median(q["ns3"]["wall_s"] for q in pairs)
    n["cpu_s"] = statistics.median(q["ns3"]["cpu_s"] for q in pairs)
    n["peak_rss_bytes"] = max(q["ns3"]["peak_rss_bytes"] for q in pairs)
    ok = all(q["comparable"] for q in pairs)
    n["comparable"] = ok
    n["pairs"] = len(pairs)
    speed = _spread([q["speed_ratio"] for q in pairs]) if ok else None
    cpu = _spread([q["cpu_ratio"] for q in pairs if q["cpu_ratio"]]) if ok else None
    n["speed"], n["cpu"] = speed, cpu
    n["speed_ratio"] = speed["median"] if speed else None
    n["cpu_ratio"] = cpu["median"] if cpu else None
    if "error" in p:
        n["error_after_pairs"] = p["error"]
    return n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="shortened scenarios")
    ap.add_argument("--repeat", type=int, default=3, help="tcplab runs per scenario; the fastest counts")
    ap.add_argument(
        "--pairs",
        type=int,
        metavar="P",
        help="interleaved tcplab/ns-3 pairs per scenario with an ns-3 peer (default 3 with --quick, 1 without)",
    )
    ap.add_argument("--no-ns3", action="store_true", help="skip ns-3")
    ap.add_argument("--no-parallel", action="store_true", help="skip the 2-process compare measurement")
    ap.add_argument("--only", metavar="IDS", help="comma-separated scenario ids (default: all)")
    ap.add_argument(
        "--offload",
        metavar="LIST",
        default="tso,gro",
        help="tso,gro (default: Linux's and tcplab's), tso, gro, none (GSO skbs cut in software, no GRO) "
        "or mss (one-MSS skbs, no GRO: the engine before issue 24)",
    )
    args = ap.parse_args()
    pairs = args.pairs if args.pairs is not None else (3 if args.quick else 1)
    if pairs < 1:
        ap.error("--pairs: at least 1")
    ids = TCPLAB_SCENARIOS
    if args.only:
        ids = [i.strip() for i in args.only.split(",") if i.strip()]
        unknown = [i for i in ids if i not in TCPLAB_SCENARIOS]
        if unknown:
            ap.error(f"--only: unknown scenario {', '.join(unknown)}; expected ids among {', '.join(TCPLAB_SCENARIOS)}")

    OUT.mkdir(parents=True, exist_ok=True)
    bench = build_tcplab_bench()
    rows: dict[str, dict] = {}
    for sid in ids:
        r = run_tcplab(bench, sid, args.repeat, args)
        rows[sid] = {"tcplab": r}
        say(f"tcplab {sid}: {r['wall_s']:.2f} s")

    ns3_note = ""
    ns3_exe = None
    if args.no_ns3:
        ns3_note = "skipped (--no-ns3)"
    else:
        ns3_dir, why = find_or_install_ns3()
        if ns3_dir is None:
            ns3_note = f"skipped: {why}"
        else:
            ns3_exe, why = build_ns3_program(ns3_dir)
            if ns3_exe is None:
                ns3_note = f"skipped: {why}"
    load_before = os.getloadavg()
    if ns3_exe is not None:
        peers = [sid for sid in ids if sid in NS3_SCENARIOS]
        measured = measure_pairs(bench, ns3_exe, peers, pairs, args)
        for sid in peers:
            rows[sid]["ns3"] = summarize_pairs(measured[sid])
            rows[sid]["pairs"] = measured[sid]["pairs"]
    load_after = os.getloadavg()

    par = {} if args.no_parallel else parallel_speedup(args.quick)

    # ---- report
    hdr = (
        f"{'id':<3} {'scenario':<48} {'wall s':>7} {'cpu s':>6} {'Mpkt/s':>7} {'sim/wall':>9}"
        f" {'peak MB':>8} {'goodput':>8}"
        f" | {'ns-3 s':>8} {'cpu s':>7} {'ns-3 MB':>8} {'goodput':>8} {'speed x':>15} {'cpu x':>15} {'pairs':>5}"
    )
    print(hdr)
    print("-" * len(hdr))
    for sid in ids:
        t = rows[sid]["tcplab"]
        line = (
            f"{sid:<3} {t['name']:<48} {t['wall_s']:>7.2f} {_secs(t.get('cpu_s')):>6}"
            f" {t['host_packets'] / t['wall_s'] / 1e6:>7.2f}"
            f" {t['sim_s'] / t['wall_s']:>9.1f} {t['peak_rss_bytes'] / 1e6:>8.1f} {t['goodput_bps'] / 1e6:>8.1f}"
        )
        n = rows[sid].get("ns3")
        if n is None:
            line += f" | {'-':>8} {'-':>7} {'-':>8} {'-':>8} {'-':>15} {'-':>15} {'-':>5}"
        elif "error" in n:
            line += f" | ns-3 failed: {n['error'][:60]}"
        else:
            if n["comparable"]:
                shown = f"{_ratio_text(n['speed']):>15} {_ratio_text(n['cpu']):>15}"
            else:
                shown = f"{'n/c':>15} {'n/c':>15}"
            line += f" | {n['wall_s']:>8.1f} {n['cpu_s']:>7.1f} {n['peak_rss_bytes'] / 1e6:>8.1f}"
            line += f" {n['goodput_bps'] / 1e6:>8.1f} {shown} {n['pairs']:>5}"
        print(line)
    print()
    print("Mpkt/s: packets sent by hosts (data + ACKs, each once) per wall second. goodput in Mbit/s.")
    print(
        "wall s, cpu s: tcplab's fastest of --repeat runs; cpu s is below wall s when other processes share the cores."
    )
    print(
        "speed x, cpu x: ns-3 / tcplab wall (CPU) seconds, median (min-max) over interleaved pairs, each pair one\n"
        "tcplab run then one ns-3 run of the same scenario (ns-3 s, cpu s: medians of its runs; ns-3 CPU = user +\n"
        "system of its process); n/c = goodputs differ by more than 10% (not comparable). cpu x is the steadier\n"
        "on a loaded machine."
        + (
            f" Load average (1, 5, 15 min) before the pairs {_load(load_before)}, after {_load(load_after)}."
            if ns3_exe
            else ""
        )
    )
    for sid in ids:
        n = rows[sid].get("ns3") or {}
        if "flows_done" in n and "fct_mean_s" in n:
            t = rows[sid]["tcplab"]
            print(
                f"{sid}: flows done by the end tcplab {t['flows_done']}/{t['flows']} (last byte acknowledged), "
                f"ns-3 {n['flows_done']}/{n['flows']} (last byte at the sink; ns-3 start -> last byte: "
                f"mean {n['fct_mean_s'] * 1e3:.1f} ms, max {n['fct_max_s'] * 1e3:.1f} ms)."
            )
        if n.get("error_after_pairs"):
            print(f"{sid}: ns-3 failed after {n['pairs']} pair(s): {n['error_after_pairs'][:200]}")
    missing = [sid for sid in ids if "ns3" not in rows[sid] and sid in NO_NS3]
    if missing and ns3_exe is not None:
        print("no ns-3 column (-): " + "; ".join(f"{sid}: {NO_NS3[sid]}" for sid in missing) + ".")
    if ns3_note:
        print(f"ns-3: {ns3_note}")
    else:
        print(
            "ns-3 3.44 set to Linux's values where it allows: MinRto 200 ms, DelAckTimeout 40 ms, initial cwnd 10,\n"
            "SACK + timestamps, buffers 4 MB/6 MB, pacing for BBR only. Not removable: no RACK-TLP, no receive-window\n"
            "autotuning, no quick-ACK mode at a connection's start, 2-byte PPP framing (tcplab counts 14-byte\n"
            "Ethernet headers), ns-3's own HyStart thresholds."
        )
    if par.get("speedup"):
        print(
            f"tcplab compare, {par['variants']} variants of {par['duration']}: 1 process {par['wall_1']:.2f} s, "
            f"2 processes {par['wall_2']:.2f} s, speed-up {par['speedup']:.2f}x"
        )
    elif par:
        print(f"parallel compare: {par.get('skipped')}")
    machine = {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "load_before_pairs": list(load_before),
        "load_after_pairs": list(load_after),
    }
    name = "latest.json" if args.offload == "tso,gro" else f"latest-{args.offload.replace(',', '-')}.json"
    doc = {"quick": args.quick, "offload": args.offload, "pairs": pairs, "machine": machine, "rows": rows}
    doc["parallel"] = par
    (OUT / name).write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {OUT / name}")
    return 0


def _load(avg: tuple[float, float, float]) -> str:
    return " ".join(f"{x:.1f}" for x in avg)


if __name__ == "__main__":
    sys.exit(main())

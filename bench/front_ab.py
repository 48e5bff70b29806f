#!/usr/bin/env python3
"""Whole-process cost of tcplab commands, two checkouts of the Python front in interleaved pairs.

    git worktree add /tmp/before 8eb5b5e
    cp python/tcplab/_core.abi3.so /tmp/before/python/tcplab/    # the same engine on both sides
    .venv/bin/python bench/front_ab.py /tmp/before/python python --pairs 5
    .venv/bin/python bench/front_ab.py /tmp/before/python python --only story004 --pairs 3

Each case is one command line as a user types it (``tcplab --version``, a 0.1 s run with and
without plots, story 004 at full scale, a quick replay of the five stories), run in a fresh
process with ``PYTHONPATH`` set to one checkout's ``python/`` directory and this
interpreter (so the same installed pandas, matplotlib and engine build serve both). The two
checkouts take turns case by case, pair after pair, so that a change in the machine's load
falls on both alike. Per case and side it prints the wall seconds and the CPU seconds of
the whole process tree (user + system from ``wait4``, which counts the worker processes a
command reaped), min and max over the pairs, and the peak resident memory (``ru_maxrss``).
Both checkouts are byte-compiled first and run with their .pyc files, as an installed
tcplab runs (PYTHONDONTWRITEBYTECODE is dropped from the commands' environment).

Byte-identity: every file of the two sides' output directories is compared by sha256
(gzip files by their content); the files that name the run's own making (metadata.json:
versions, git commit) are skipped, and report.html, whose notes may word a size differently,
is listed separately. The command exits 1 if any other file differs.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STORY_004 = ROOT / "python/tcplab/experiments/microburst_ring/broadcast-nginx.yaml"

#: name -> (arguments after ``tcplab``, writes an output directory)
CASES: dict[str, tuple[list[str], bool]] = {
    "version": (["--version"], False),
    "run-no-plots": (["run", "builtin:cubic-vs-bbr-lossy", "--set", "duration=0.1s", "--no-plots"], True),
    "run-plots": (["run", "builtin:cubic-vs-bbr-lossy", "--set", "duration=0.1s"], True),
    "story004": (["run", str(STORY_004), "--set", "duration=60s"], True),
    "reproduce-quick": (["reproduce", "--all", "--quick"], True),
}
DEFAULT = ["version", "run-no-plots", "run-plots"]
#: files that say how the run was made, not what it computed
SKIPPED = {"metadata.json"}
#: files compared but reported apart: prose whose wording may change
PROSE = {"report.html", "index.html", "index.md"}


def run_once(pythonpath: Path, args: list[str], out: Path | None) -> tuple[float, float, int]:
    """(wall s, CPU s of the process tree, peak RSS bytes) of one command."""
    cmd = [sys.executable, "-c", "import sys; from tcplab.cli import main; sys.exit(main())", *args]
    if out is not None:
        cmd += ["-o", str(out), "--force"]
    env = {**os.environ, "PYTHONPATH": str(pythonpath.resolve())}
    # as an installed tcplab runs: from its compiled .pyc files (main() compiles both sides
    # first, as pip does on install), whatever this shell's PYTHONDONTWRITEBYTECODE says
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryFile() as log:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tempfile.gettempdir())
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            log.seek(0)
            tail = log.read().decode(errors="replace").strip()[-400:]
            raise SystemExit(f"error: {' '.join(args)} with {pythonpath} exited {proc.returncode}: {tail}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


def file_digest(path: Path, same: dict[bytes, bytes] | None = None) -> str:
    """sha256 of a file (of its content, for gzip), with ``same``'s keys read as its values."""
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    for old, new in (same or {}).items():
        data = data.replace(old, new)
    return hashlib.sha256(data).hexdigest()[:16]


def _engine_version(run_dir: Path) -> bytes | None:
    meta = next(iter(sorted(run_dir.rglob("metadata.json"))), None)
    if meta is None:
        return None
    return json.loads(meta.read_text()).get("versions", {}).get("engine", "").encode() or None


def compare_dirs(a: Path, b: Path) -> tuple[int, list[str], list[str]]:
    """(files compared, files that differ, prose files that differ). The engine's version
    string (it names the build: summary.json, the flent and iperf3 files quote it) is read as
    the same on both sides when the two checkouts carry different builds."""
    va, vb = _engine_version(a), _engine_version(b)
    same = {va: vb} if va and vb and va != vb else {}
    names = sorted(
        {p.relative_to(a) for p in a.rglob("*") if p.is_file()}
        | {p.relative_to(b) for p in b.rglob("*") if p.is_file()}
    )
    differ, prose = [], []
    compared = 0
    for name in names:
        if name.name in SKIPPED:
            continue
        pa, pb = a / name, b / name
        compared += 1
        if not pa.is_file() or not pb.is_file() or file_digest(pa, same) != file_digest(pb):
            (prose if name.name in PROSE else differ).append(str(name))
    return compared, differ, prose


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before", type=Path, help="the python/ directory of the checkout before")
    ap.add_argument("after", type=Path, help="the python/ directory of the checkout after")
    ap.add_argument("--pairs", type=int, default=5, help="interleaved pairs per case (default 5)")
    ap.add_argument("--only", help=f"comma-separated cases among {', '.join(CASES)} (default {','.join(DEFAULT)})")
    args = ap.parse_args()
    names = [n.strip() for n in (args.only.split(",") if args.only else DEFAULT) if n.strip()]
    unknown = [n for n in names if n not in CASES]
    if unknown:
        ap.error(f"--only: unknown case {', '.join(unknown)}; expected among {', '.join(CASES)}")
    for side in (args.before, args.after):
        if not (side / "tcplab" / "cli.py").is_file():
            ap.error(f"{side}: not a tcplab python/ directory (no tcplab/cli.py)")
    for side in (args.before, args.after):
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(side / "tcplab")], check=True)
    work = Path(tempfile.mkdtemp(prefix="tcplab-front-ab-"))
    failed = False
    try:
        print(f"{'case':<16} {'side':<7} {'wall s min-max':>16} {'CPU s min-max':>16} {'peak MB':>8}")
        for name in names:
            cmd, writes = CASES[name]
            got: dict[str, list[tuple[float, float, int]]] = {"before": [], "after": []}
            outs = {side: work / name / side if writes else None for side in got}
            for _ in range(args.pairs):
                for side, path in (("before", args.before), ("after", args.after)):
                    got[side].append(run_once(path, cmd, outs[side]))
            for side, rows in got.items():
                walls, cpus, rss = [r[0] for r in rows], [r[1] for r in rows], max(r[2] for r in rows)
                print(
                    f"{name:<16} {side:<7} {min(walls):>7.3f}-{max(walls):<8.3f} {min(cpus):>7.3f}-{max(cpus):<8.3f}"
                    f" {rss / 1e6:>8.0f}"
                )
            if writes:
                compared, differ, prose = compare_dirs(outs["before"], outs["after"])
                same = "identical" if not differ else f"DIFFER: {', '.join(differ[:8])}"
                print(
                    f"{'':<16} outputs: {compared} files compared, {same}"
                    + (f"; prose differs: {', '.join(prose[:4])}" if prose else "")
                )
                failed = failed or bool(differ)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""tcplab sweep interrupted by a real signal, then resumed by the same command.

The tcplab process here uses the engine double (tests/fake_core.py): in mode "stall" the
bbr runs stall (each writes a marker with its pid first) while the cubic runs end at once;
in mode "fast" every run ends at once and each engine call is logged, so the resumed sweep's
work can be counted. Every wait is bounded.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wrapped_tcplab import alive, finish, start, wait_for

WRAPPER = r"""
import json, os, sys, time
sys.path.insert(0, os.environ["TESTS_DIR"])
import fake_core
import tcplab.engine

marker_dir = os.environ["MARKER_DIR"]
mode = os.environ["TCPLAB_TEST_MODE"]

class Core(fake_core.FakeCore):
    __version__ = "0.1.0-fake"

    def run(self, config_json, progress=None):
        cc = json.loads(config_json)["flows"][0]["cc"]
        with open(os.path.join(marker_dir, "calls.log"), "a") as f:
            f.write(cc + "\n")
        if mode == "stall" and cc == "bbr":
            # written whole, then renamed: the test reads the pid as soon as the name appears
            tmp = os.path.join(marker_dir, f".tmp-{os.getpid()}")
            with open(tmp, "w") as f:
                f.write(str(os.getpid()))
            os.replace(tmp, os.path.join(marker_dir, f"worker-{os.getpid()}"))
            time.sleep(60)
        return super().run(config_json, progress)

tcplab.engine.import_core = lambda: Core()
from tcplab.cli import main
main()
"""

ARGS = [
    "sweep",
    "builtin:cubic-vs-bbr-lossy",
    "--grid",
    "flows.0.cc=cubic,bbr",
    "--seeds",
    "2",
    "--set",
    "duration=2s",
    "-j",
    "2",
    "-o",
    "sw",
    "--no-plots",
]


def _start(tmp_path: Path, mode: str) -> subprocess.Popen:
    return start(tmp_path, WRAPPER, mode, ARGS)[0]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize(
    ("signum", "code", "word"), [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")]
)
def test_signal_keeps_finished_runs_and_the_same_command_resumes(tmp_path, signum, code, word):
    proc = _start(tmp_path, "stall")
    markers, rows = tmp_path / "markers", tmp_path / "sw" / "rows"
    # both cubic runs done (their rows written), both bbr runs stalled in their workers
    wait_for(
        lambda: len(list(markers.glob("worker-*"))) == 2 and rows.is_dir() and len(list(rows.glob("*.parquet"))) == 2,
        60,
        proc,
        "the sweep",
    )
    workers = [int(p.read_text()) for p in markers.glob("worker-*")]
    kept = {p.name: p.stat().st_mtime_ns for p in rows.glob("*.parquet")}
    proc.send_signal(signum)
    rc, err = finish(proc)
    assert rc == code, err
    assert err.strip().splitlines()[-1] == f"error: {word}; 2 of 4 runs kept in sw (the same command resumes)"
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(pid) for pid in workers), "a worker outlived tcplab sweep"
    state = json.loads((tmp_path / "sw" / "sweep.json").read_text())
    assert state["status"] == "interrupted"
    assert not (tmp_path / "sw" / "sweep.parquet").exists()
    # the same command, now with an engine that does not stall: only the two bbr runs run
    (markers / "calls.log").unlink()
    again = _start(tmp_path, "fast")
    out, err = again.communicate(timeout=60)
    assert again.returncode == 0, err
    assert (markers / "calls.log").read_text().split() == ["bbr", "bbr"]
    assert {p.name: p.stat().st_mtime_ns for p in rows.glob("*.parquet") if p.name in kept} == kept
    assert json.loads((tmp_path / "sw" / "sweep.json").read_text())["status"] == "complete"
    assert "2 done before" in out

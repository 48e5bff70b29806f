"""tcplab sweep interrupted by a real signal, then resumed by the same command.

The tcplab process here uses the engine double (tests/fake_core.py): in mode "stall" the
bbr runs stall (each writes a marker with its pid first) while the cubic runs end at once;
in mode "fast" every run ends at once and each engine call is logged, so the resumed sweep's
work can be counted. Every wait is bounded.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent

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
            with open(os.path.join(marker_dir, f"worker-{os.getpid()}"), "w") as f:
                f.write(str(os.getpid()))
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
    markers = tmp_path / "markers"
    markers.mkdir(exist_ok=True)
    script = tmp_path / "tcplab_wrapped.py"
    script.write_text(WRAPPER)
    env = dict(os.environ)
    env.update(
        TESTS_DIR=str(TESTS),
        MARKER_DIR=str(markers),
        TCPLAB_TEST_MODE=mode,
        PYTHONPATH=str(ROOT / "python") + os.pathsep + env.get("PYTHONPATH", ""),
    )
    return subprocess.Popen(
        [sys.executable, str(script), *ARGS],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _wait_for(predicate, timeout_s: float, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        if proc.poll() is not None:
            pytest.fail(f"tcplab exited early (rc {proc.returncode}): {proc.stderr.read()}")
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    pytest.fail("timed out waiting for the sweep to reach the point to signal")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize(
    ("signum", "code", "word"), [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")]
)
def test_signal_keeps_finished_runs_and_the_same_command_resumes(tmp_path, signum, code, word):
    proc = _start(tmp_path, "stall")
    markers, rows = tmp_path / "markers", tmp_path / "sw" / "rows"
    # both cubic runs done (their rows written), both bbr runs stalled in their workers
    _wait_for(
        lambda: len(list(markers.glob("worker-*"))) == 2 and rows.is_dir() and len(list(rows.glob("*.parquet"))) == 2,
        60,
        proc,
    )
    workers = [int(p.read_text()) for p in markers.glob("worker-*")]
    kept = {p.name: p.stat().st_mtime_ns for p in rows.glob("*.parquet")}
    proc.send_signal(signum)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("tcplab sweep did not exit within 30 s of the signal")
    assert proc.returncode == code, err
    assert err.strip().splitlines()[-1] == f"error: {word}; 2 of 4 runs kept in sw (the same command resumes)"
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in workers), "a worker outlived tcplab sweep"
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

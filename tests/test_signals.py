"""SIGTERM is handled like SIGINT (issue 7, 2.5), with real processes and real signals.

Before: SIGTERM to ``tcplab compare -j 2`` left its workers running with parent 1, and SIGTERM
while a run directory was being written left a hidden ``.NAME.XXXX.tmp/`` behind. Now the
workers are stopped, partial output removed, and the exit code is 143 (128 + SIGTERM).

The tcplab processes here use the engine double (tests/fake_core.py), slowed down so the
signal arrives at a known moment; every wait is bounded.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wrapped_tcplab import ROOT, alive, finish, start, wait_for

# A `tcplab` whose engine is the double; TCPLAB_TEST_MODE picks where it stalls, and it
# writes a marker file (its pid) when it gets there.
WRAPPER = r"""
import os, sys, time
sys.path.insert(0, os.environ["TESTS_DIR"])
import fake_core
import tcplab.engine

marker_dir = os.environ["MARKER_DIR"]
mode = os.environ["TCPLAB_TEST_MODE"]

def mark(kind):
    with open(os.path.join(marker_dir, f"{kind}-{os.getpid()}"), "w") as f:
        f.write(str(os.getpid()))

class SlowCore(fake_core.FakeCore):
    def run(self, config_json, progress=None):
        if mode == "simulate":
            mark("worker")
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                time.sleep(0.05)
        return super().run(config_json, progress)

tcplab.engine.import_core = lambda: SlowCore()

if mode == "write":
    import tcplab.results as results
    original = results.Result._write_files
    def slow_write(self, out, *, plots):
        original(self, out, plots=plots)
        mark("writing")
        time.sleep(60)
    results.Result._write_files = slow_write

from tcplab.cli import main
main()
"""


def _start(tmp_path: Path, mode: str, args: list[str]) -> tuple[subprocess.Popen, Path]:
    return start(tmp_path, WRAPPER, mode, args)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_sigterm_to_compare_stops_its_workers(tmp_path):
    proc, markers = _start(
        tmp_path,
        "simulate",
        ["compare", "builtin:cubic-vs-bbr-lossy", "--set", "flows.0.cc=cubic,bbr", "-j", "2", "-o", "cmp", "-q"],
    )
    wait_for(lambda: len(list(markers.glob("worker-*"))) == 2, 60, proc, "tcplab")
    workers = [int(p.read_text()) for p in markers.glob("worker-*")]
    assert all(alive(pid) for pid in workers)
    proc.send_signal(signal.SIGTERM)
    rc, err = finish(proc)
    assert rc == 143, err
    assert err.strip().splitlines()[-1] == "error: terminated; no output written"
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(pid) for pid in workers), "a worker outlived tcplab compare"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["markers", "tcplab_wrapped.py"]


def test_sigterm_while_writing_leaves_no_temp_dir(tmp_path):
    proc, markers = _start(
        tmp_path, "write", ["run", "builtin:cubic-vs-bbr-lossy", "--set", "duration=1s", "-o", "out/lossy", "-q"]
    )
    wait_for(lambda: any(markers.glob("writing-*")), 60, proc, "tcplab")
    assert [p.name for p in (tmp_path / "out").iterdir()][0].endswith(".tmp")  # mid-write
    proc.send_signal(signal.SIGTERM)
    rc, err = finish(proc)
    assert rc == 143, err
    assert err.strip().splitlines()[-1] == "error: terminated; no output written"
    # Neither the run directory, nor its hidden temporary, nor the parent we created.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["markers", "tcplab_wrapped.py"]


def test_sigint_still_exits_130(tmp_path):
    proc, markers = _start(
        tmp_path, "write", ["run", "builtin:cubic-vs-bbr-lossy", "--set", "duration=1s", "-o", "out/lossy", "-q"]
    )
    wait_for(lambda: any(markers.glob("writing-*")), 60, proc, "tcplab")
    proc.send_signal(signal.SIGINT)
    rc, err = finish(proc)
    assert rc == 130, err
    assert err.strip().splitlines()[-1] == "error: interrupted; no output written"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["markers", "tcplab_wrapped.py"]


SIGTERM_IN_SCENARIOS = """
import os, signal, sys, time
import tcplab.loader as loader
def listing():
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(5)
    return {}
loader.builtin_scenarios = listing
sys.argv = ["tcplab", "scenarios"]
from tcplab.cli import main
main()
"""


def test_sigterm_in_a_command_without_its_own_handling_exits_143(tmp_path):
    # typer turns a KeyboardInterrupt inside a command into exit 130 itself; a SIGTERM
    # (Terminated) must still be reported as one: 143 and "error: terminated".
    script = tmp_path / "sigterm_scenarios.py"
    script.write_text(SIGTERM_IN_SCENARIOS)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 143, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "error: terminated"

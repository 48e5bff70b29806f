"""A real `tcplab` process whose engine is a test double, for tests that send it real signals.

``start(tmp_path, wrapper, mode, args)`` writes ``wrapper`` (a Python script that installs
the double, then calls ``tcplab.cli.main``) and runs it with ``args`` in its own session (a
signal to the test's process group must not reach it, and vice versa). The script finds
tests/ in ``TESTS_DIR``, writes its markers into ``MARKER_DIR`` (``tmp_path/markers``) and
reads what to do from ``TCPLAB_TEST_MODE``. Every wait is bounded.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


def start(tmp_path: Path, wrapper: str, mode: str, args: list[str]) -> tuple[subprocess.Popen, Path]:
    """The wrapped tcplab running ``args`` in ``tmp_path``; returns it and its marker directory."""
    markers = tmp_path / "markers"
    markers.mkdir(exist_ok=True)
    script = tmp_path / "tcplab_wrapped.py"
    script.write_text(wrapper)
    env = dict(os.environ)
    env.update(
        TESTS_DIR=str(TESTS),
        MARKER_DIR=str(markers),
        TCPLAB_TEST_MODE=mode,
        PYTHONPATH=str(ROOT / "python") + os.pathsep + env.get("PYTHONPATH", ""),
    )
    proc = subprocess.Popen(
        [sys.executable, str(script), *args],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    return proc, markers


def wait_for(predicate: Callable[[], bool], timeout_s: float, proc: subprocess.Popen, what: str) -> None:
    """Until ``predicate()``; fails (and kills the process group) if tcplab exits first or
    ``timeout_s`` passes."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        if proc.poll() is not None:
            pytest.fail(f"tcplab exited early (rc {proc.returncode}): {proc.stderr.read()}")
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()  # reaped: no "still running" warning on top of the failure
    pytest.fail(f"timed out waiting for {what} to reach the point to signal")


def finish(proc: subprocess.Popen, timeout_s: float = 30) -> tuple[int, str]:
    """Its exit code and stderr once it exits; fails if it has not within ``timeout_s``."""
    try:
        _, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"tcplab did not exit within {timeout_s:g} s of the signal")
    return proc.returncode, err


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"

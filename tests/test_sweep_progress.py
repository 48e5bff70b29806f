"""tcplab sweep's progress bar: on a terminal, runs done/total, failed and an ETA on stderr;
off a terminal, nothing (scripts and CI logs get no escape codes)."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys

import pytest


def _sweep(tmp_path, stderr_tty: bool) -> tuple[int, str]:
    code = "import sys; from tcplab.cli import main; sys.argv = ['tcplab', *sys.argv[1:]]; main()"
    args = [sys.executable, "-c", code, "sweep", "builtin:cubic-vs-bbr-lossy"]
    args += ["--grid", "flows.0.cc=cubic,bbr", "--seeds", "2", "--set", "duration=3s", "-o", str(tmp_path / "out")]
    env = dict(os.environ, COLUMNS="100", TERM="xterm")
    if not stderr_tty:
        done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
        return done.returncode, done.stderr
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=follower, env=env)
        os.close(follower)
        chunks = []
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:  # EIO: the child closed its end
                break
            if not data:
                break
            chunks.append(data)
        rc = proc.wait(timeout=120)
    finally:
        os.close(leader)
    return rc, b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.engine
def test_on_a_terminal_the_bar_counts_runs_and_failures(tmp_path, real_core):
    rc, err = _sweep(tmp_path, stderr_tty=True)
    assert rc == 0, err
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", err)  # the terminal's control sequences
    assert "sweep" in text
    assert re.search(r"\b4/4 runs\b", text), text[-400:]
    assert re.search(r"\b0 failed\b", text)


@pytest.mark.engine
def test_off_a_terminal_no_bar_and_no_escape_codes(tmp_path, real_core):
    rc, err = _sweep(tmp_path, stderr_tty=False)
    assert rc == 0, err
    assert "\x1b[" not in err
    assert not re.search(r"\b\d+/4 runs\b", err), err

"""The delay line inside the compiled module (issue 23 item 3): ``tcplab._core.delayline_main``
run as ``python -m tcplab.kernel.delayline_main``, what kernel mode starts when no
``target/release/tcplab-delayline`` of a source checkout exists (a plain ``pip install``).

It must behave as the standalone binary (crates/tcplab-delayline/src/args.rs: ``--help``
prints the usage and exits 0; a bad option is one line on stderr and exit 1); the kernel
tests of tests/test_kernel_delayline.py run it on real TUNs through DelayLine, and
.ci/pip-install-check runs a whole ``tcplab validate`` from a non-editable install.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import compiled_engine, in_ci
from tcplab.kernel import delayline as dl

pytestmark = pytest.mark.engine


def _module() -> list[str]:
    core = compiled_engine()
    if not callable(getattr(core, "delayline_main", None)):
        message = "this build of tcplab._core predates delayline_main (rebuild: make setup)"
        if in_ci():
            pytest.fail(message)
        pytest.skip(message)
    return [sys.executable, "-m", dl.MODULE]


def test_help_and_bad_options_behave_as_the_binary():
    cmd = _module()
    r = subprocess.run([*cmd, "--help"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and r.stdout.startswith("usage: tcplab-delayline --tun NAME:DELAY_NS")
    r = subprocess.run([*cmd, "--tun", "t:1ms"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and r.stdout == ""
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith('tcplab-delayline: --tun "t:1ms": "1ms" is not a delay') and line.endswith("(see --help)")


def test_the_package_runs_its_own_line_without_a_checkout_binary(monkeypatch, tmp_path):
    cmd = _module()
    monkeypatch.delenv("TCPLAB_DELAYLINE", raising=False)
    monkeypatch.setattr(dl, "_repo_binary", lambda: tmp_path / "no-binary")
    assert dl.delayline_argv() == cmd
    line = dl.DelayLine("t:w0", [("tab", 1000)], cpu=1, stats_path=tmp_path / "s.json")
    assert line.command()[: 4 + len(cmd)] == ["ip", "netns", "exec", "t:w0", *cmd]
    # an explicit binary still wins
    fake = tmp_path / "line"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("TCPLAB_DELAYLINE", str(fake))
    assert dl.delayline_argv() == [str(fake)]

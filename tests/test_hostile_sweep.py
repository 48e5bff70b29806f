"""Hostile input to ``tcplab sweep`` and ``tcplab.load_sweep``: every mistake is one
``error:`` line naming the option or file, exit 2, no traceback, nothing half-written.

Most cases run through typer's CliRunner (in process, quick); the ones that need a real
process (signals, Dask's client, a run of the engine) use subprocess with a 1 s scenario.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tcplab.cli import app

SCENARIO = """\
name: t
duration: 1s
hosts: {server: {}, client: {}}
routers: [r1]
links:
  - {between: [server, r1], rate: 10Mbit, delay: 5ms}
  - {between: [r1, client], rate: 10Mbit, delay: 5ms}
flows:
  - {from: server, to: client}
"""


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO, encoding="utf-8")
    return path


def _cli(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def assert_one_line_error(result, *needles: str, code: int = 2) -> str:
    """exit ``code``, no exception escaped, exactly one non-empty ``error:`` line holding
    every needle."""
    out = result.output if hasattr(result, "output") else (result.stdout or "") + (result.stderr or "")
    exit_code = result.exit_code if hasattr(result, "exit_code") else result.returncode
    assert "Traceback" not in out, out
    if hasattr(result, "exception") and result.exception is not None:
        assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert exit_code == code, out
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), out
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


# -- options that are numbers -----------------------------------------------------------
@pytest.mark.parametrize("n", ["-1", "0", "2.5", "abc", "99999999999999999999"])
def test_bad_n_is_one_line_naming_n(tmp_path, scenario, n):
    out = tmp_path / "o"
    r = _cli("sweep", scenario, "--random", "links.0.loss=0%..1%", "-n", n, "-o", out, "-q")
    assert_one_line_error(r, "-n: ", n)
    assert not out.exists()

"""Progress off a terminal (issue 21 item 18): `tcplab compare` and `tcplab sweep`, piped as
in a CI log, print one line per finished run on stderr, in `tcplab reproduce`'s format
(`[k/N] LABEL done (T s)`, `[k/N] LABEL: FAILED: why`), then one line when all are done;
`--quiet` prints none of them. (On a terminal they keep their bars.)"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys

import pytest

from tcplab.progress import RunLines

_CLI = "import sys; from tcplab.cli import main; sys.argv = ['tcplab', *sys.argv[1:]]; main()"
_DONE = re.compile(r"^\[(\d+)/(\d+)\] (\S+) done \((\d+) s\)$")


def _piped(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, COLUMNS="100")
    return subprocess.run(
        [sys.executable, "-c", _CLI, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def _done_lines(stderr: str) -> list[tuple[int, int, str]]:
    out = []
    for line in stderr.splitlines():
        m = _DONE.match(line)
        if m:
            out.append((int(m.group(1)), int(m.group(2)), m.group(3)))
    return out


def test_the_lines_are_reproduces_format():
    stream = io.StringIO()
    lines = RunLines(3, what="writing the table", stream=stream, tty=False)
    lines(1, 3, "a")
    lines(2, 3, "b", "engine: boom")
    lines(3, 3, "c")
    lines.close()
    text = stream.getvalue().splitlines()
    assert re.fullmatch(r"\[1/3\] a done \(\d+ s\)", text[0])
    assert text[1] == "[2/3] b: FAILED: engine: boom"
    assert re.fullmatch(r"\[3/3\] c done \(\d+ s\)", text[2])
    assert text[3] == "all 3 runs done; writing the table"


def test_quiet_prints_only_failures():
    stream = io.StringIO()
    lines = RunLines(2, what="x", quiet=True, stream=stream, tty=False)
    lines(1, 2, "a")
    lines(2, 2, "b", "boom")
    assert stream.getvalue().splitlines() == ["[2/2] b: FAILED: boom"]


@pytest.mark.engine
def test_compare_piped_prints_a_line_per_variant(tmp_path, real_core):
    p = _piped(
        "compare",
        "builtin:cubic-vs-bbr-lossy",
        "--set",
        "flows.0.cc=cubic,bbr",
        "--set",
        "duration=2s",
        "--no-plots",
        "-o",
        str(tmp_path / "cmp"),
    )
    assert p.returncode == 0, p.stderr
    done = _done_lines(p.stderr)
    assert sorted(k for k, _, _ in done) == [1, 2]
    assert {n for _, n, _ in done} == {2}
    assert sorted(label for _, _, label in done) == ["bbr", "cubic"]
    assert "all 2 runs done" in p.stderr
    assert "\x1b[" not in p.stderr


@pytest.mark.engine
def test_compare_quiet_prints_no_progress(tmp_path, real_core):
    p = _piped(
        "compare",
        "builtin:cubic-vs-bbr-lossy",
        "--set",
        "flows.0.cc=cubic,bbr",
        "--set",
        "duration=2s",
        "--no-plots",
        "--quiet",
        "-o",
        str(tmp_path / "cmp"),
    )
    assert p.returncode == 0, p.stderr
    assert _done_lines(p.stderr) == []


@pytest.mark.engine
def test_sweep_piped_prints_a_line_per_run(tmp_path, real_core):
    p = _piped(
        "sweep",
        "builtin:cubic-vs-bbr-lossy",
        "--grid",
        "flows.0.cc=cubic,bbr",
        "--seeds",
        "2",
        "--set",
        "duration=2s",
        "--no-plots",
        "-o",
        str(tmp_path / "sw"),
    )
    assert p.returncode == 0, p.stderr
    done = _done_lines(p.stderr)
    assert sorted(k for k, _, _ in done) == [1, 2, 3, 4]
    assert {n for _, n, _ in done} == {4}
    assert len({label for _, _, label in done}) == 4  # each run named once
    assert "all 4 runs done" in p.stderr
    assert "\x1b[" not in p.stderr

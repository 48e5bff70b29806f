"""tcplab validate on the real kernel: the matrix of the issue (CUBIC and BBR, without and
with 1 % loss, at 5 and 100 Mbit/s, at 0 and 100 ms RTT) on tests/data/validate-path.yaml.

Each case runs the simulation and the kernel (15 s of traffic each) and checks the promise
of the report: it exists and states, per metric, a verdict with its reason. Whether the
verdicts are "within" is the finding, not the test: bench/validate_matrix.py prints the table
the issue's closing note gives. Marked ``kernel`` (root, network namespaces, the delay line)
and ``slow`` (about 16 x 30 s), except one short end-to-end case of the command that the default
run keeps (about 10 s). Namespaces use the prefix ``tlh5``.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tcplab.kernel.names import is_ours
from tcplab.kernel.validate import VERDICTS, kernel_options, validate

pytestmark = [pytest.mark.kernel]

SCENARIO = Path(__file__).parent / "data" / "validate-path.yaml"
PREFIX = "tlh5"
#: the --runs test's own prefix (its kernel runs never meet the other tests' namespaces)
RUNS_PREFIX = "tlf4"
FRAME_BYTES = 1514


def queue_packets(rate_bps: int, rtt_ms: int) -> int:
    """A 1-BDP pfifo, never fewer than 100 packets (validate-path.yaml's description)."""
    return max(100, math.ceil(rate_bps * rtt_ms / 1000 / 8 / FRAME_BYTES))


def case_overrides(cc: str, rate_mbit: int, rtt_ms: int, loss_pct: int) -> list[str]:
    return [
        f"flows.0.cc={cc}",
        f"links.1.rate={rate_mbit}Mbit",
        f"links.1.delay={rtt_ms // 2}ms",
        f"links.1.loss={loss_pct}%",
        f"links.1.queue.limit={queue_packets(rate_mbit * 10**6, rtt_ms)}",
    ]


CASES = [(cc, rate, rtt, loss) for cc in ("cubic", "bbr") for loss in (0, 1) for rate in (5, 100) for rtt in (0, 100)]


def _skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespaces, tc, nft)"
    try:
        from tcplab.kernel import kernel_run  # noqa: F401
        from tcplab.kernel.delayline import find_delayline
    except ImportError as e:
        return f"kernel mode is not installed in this tcplab ({e})"
    try:
        find_delayline()
    except Exception as e:  # KernelError: not built
        return str(e)
    if shutil.which("ip") is None:
        return "iproute2 (ip) is not installed"
    probe = f"{PREFIX}-probe"
    done = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return f"cannot create a network namespace: {done.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True, check=False)
    return None


@pytest.fixture(scope="module")
def kernel_ready() -> None:
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)


@pytest.mark.slow
@pytest.mark.parametrize(("cc", "rate_mbit", "rtt_ms", "loss_pct"), CASES)
def test_validate_matrix(kernel_ready, tmp_path, cc, rate_mbit, rtt_ms, loss_pct):
    out = tmp_path / "v"
    v = validate(
        SCENARIO,
        overrides=case_overrides(cc, rate_mbit, rtt_ms, loss_pct),
        options=kernel_options(prefix=PREFIX, allow_busy=True),
        out=out,
    )
    # a verdict per metric: four per flow, one per one-way link
    assert [(r.metric, r.subject) for r in v.rows][:4] == [
        ("goodput_bps", "server-client-0"),
        ("rtt_p50_ms", "server-client-0"),
        ("rtt_p99_ms", "server-client-0"),
        ("retrans_pct", "server-client-0"),
    ]
    assert len(v.rows) == 4 + 4
    assert all(r.verdict in VERDICTS and r.reason for r in v.rows)
    # the kernel ran its traffic: a goodput, and the sim's run as well
    assert v.rows[0].kernel and v.rows[0].kernel > 0 and v.rows[0].sim and v.rows[0].sim > 0
    doc = json.loads((out / "validation.json").read_text())
    assert doc["kernel"]["release"] == os.uname().release
    html = (out / "report.html").read_text()
    for r in v.rows:
        assert f">{r.verdict}<" in html
    for run in ("sim", "kernel"):
        assert (out / run / "report.html").is_file()
    # nothing of ours is left
    left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False).stdout
    assert not [line for line in left.splitlines() if is_ours(PREFIX, line.split()[0])]


def test_validate_command_end_to_end(kernel_ready, tmp_path):
    # the command as a user runs it, on a short BBR run: the table, the files, exit 0 or 1
    # (1 only when the busy shared machine made the kernel run INVALID: said on stderr)
    from typer.testing import CliRunner

    from tcplab.cli import app

    out = tmp_path / "v"
    sets = [*case_overrides("bbr", 5, 100, 0), "duration=4s"]
    args = ["validate", str(SCENARIO), "-o", str(out), "--prefix", PREFIX, "--allow-busy", "--no-plots", "-q"]
    for s in sets:
        args += ["--set", s]
    r = CliRunner().invoke(app, args)
    assert r.exit_code in (0, 1), r.output
    doc = json.loads((out / "validation.json").read_text())
    assert (r.exit_code == 1) == (not doc["valid"])
    if not doc["valid"]:
        # kernel/busy.py: the INVALID line, how busy the machine was, then how to rerun
        lines = r.stderr.strip().splitlines()
        assert any(line.startswith("INVALID: ") for line in lines), r.stderr
        assert lines[-1].startswith("rerun "), r.stderr
    assert len(doc["metrics"]) == 8 and all(m["verdict"] in VERDICTS for m in doc["metrics"])
    assert doc["metrics"][0]["kernel"] > 0
    for f in ("report.html", "report.md", "sim/summary.json", "kernel/summary.json", "kernel/kernel.json"):
        assert (out / f).is_file(), f
    left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False).stdout
    assert not [line for line in left.splitlines() if is_ours(PREFIX, line.split()[0])]


def test_validate_runs_two_end_to_end(kernel_ready, tmp_path):
    # --runs 2 on a short lossy CUBIC run: two simulations (seeds S, S+1), two kernel runs one
    # after the other, each its own run directory; per metric both worlds' runs, mean and sd,
    # and a verdict of the repeated rule (or none, exit 1, when a busy machine made a kernel
    # run invalid: then it is excluded and named)
    from typer.testing import CliRunner

    from tcplab.cli import app

    out = tmp_path / "v"
    sets = [*case_overrides("cubic", 5, 20, 1), "duration=3s"]
    args = ["validate", str(SCENARIO), "-o", str(out), "--prefix", RUNS_PREFIX, "--allow-busy", "--no-plots", "-q"]
    args += ["--runs", "2", "--seed", "5"]
    for s in sets:
        args += ["--set", s]
    r = CliRunner().invoke(app, args)
    assert r.exit_code in (0, 1), r.output
    doc = json.loads((out / "validation.json").read_text())
    assert (r.exit_code == 1) == (not doc["valid"])
    assert doc["repeat"]["runs"] == 2 and doc["repeat"]["seeds"] == [5, 6]
    for k in (1, 2):
        assert (out / "sim" / f"run-{k}" / "summary.json").is_file()
        assert json.loads((out / "kernel" / f"run-{k}" / "summary.json").read_text())["kind"] == "kernel"
    excluded = doc["repeat"]["excluded"]
    assert len(doc["repeat"]["valid_kernel_runs"]) + len(excluded) == 2
    goodput = doc["metrics"][0]
    assert goodput["metric"] == "goodput_bps" and goodput["sim_stats"]["n"] == 2
    # the valid runs; with fewer than 2 valid ones every run that produced a result (reference)
    counted = doc["repeat"]["valid_kernel_runs"] if doc["valid"] else doc["repeat"]["kernel"]
    assert goodput["kernel_stats"]["n"] == len(counted)
    assert all(m["verdict"] in VERDICTS for m in doc["metrics"])
    if doc["valid"]:
        assert all(v > 0 for v in goodput["kernel_stats"]["values"])
        assert goodput["kernel"] == pytest.approx(sum(goodput["kernel_stats"]["values"]) / 2)
    left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False).stdout
    assert not [line for line in left.splitlines() if is_ours(RUNS_PREFIX, line.split()[0])]

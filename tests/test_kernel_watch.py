"""A kernel run broken under it fails as such (tcplab.kernel.watch): its namespaces deleted
(``tcplab kernel cleanup`` of the same prefix during the run), an agent or the delay line
killed, samples that stop before the end. It exits 1 with one line and writes nothing: before,
it wrote a complete-looking, valid run directory whose samples stopped at the cleanup while
summary.json said the full duration.

The rules on recorded measurements and a testbed whose namespaces are faked run anywhere;
the runs broken for real are marked ``kernel`` (root, namespaces, the delay line, nft).
"""

from __future__ import annotations

import copy
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tcplab.kernel import watch
from tcplab.kernel.testbed import Testbed
from test_kernel_measure import load_fixture

#: The CLI, as the installed ``tcplab`` script runs it.
TCPLAB = [sys.executable, "-c", "from tcplab.cli import main; main()"]


# -- after the traffic: what the agents and the sampler recorded ----------------------------


def test_a_whole_run_is_not_broken():
    _, m = load_fixture()
    assert watch.after(m, ["a", "b"]) == []


def test_an_agent_stopped_by_a_signal_before_the_end_breaks_the_run():
    # what `tcplab kernel cleanup` does to an agent: SIGTERM, and it writes what it has
    _, m = load_fixture()
    m.agents["b"] = copy.deepcopy(m.agents["b"])
    m.agents["b"]["stopped_by"] = "signal"
    m.agents["b"]["ended_ns"] = 1_200_000_000
    assert watch.after(m, ["a", "b"]) == ["the traffic agent of b was stopped by a signal at 1.2 s"]


def test_samples_that_stop_early_break_the_run():
    # 2 s at 100 ms: 21 samples due (0 .. 2 s); the last may be cut by the agent's end
    _, m = load_fixture()
    m.agents["a"] = copy.deepcopy(m.agents["a"])
    m.agents["a"]["ss"].update(samples=19, missed=1)
    assert watch.after(m, ["a", "b"]) == []
    m.agents["a"]["ss"].update(samples=12, missed=1)
    assert watch.after(m, ["a", "b"]) == ["the ss samples of a stop at 1.2 s"]
    _, m = load_fixture()
    m.queue_lateness = dict(m.queue_lateness, samples=7, missed=0)
    assert watch.after(m, ["a", "b"]) == ["the queue samples stop at 0.6 s"]


# -- during the traffic: the testbed's namespaces and processes -------------------------------


class _Plan:
    prefix = "tlk6"
    namespaces = ["tlk6-a", "tlk6-b", "tlk6:w0"]
    wires: list = []
    commands: list = []


def _faked_testbed(monkeypatch, tmp_path, ids: dict[str, int | None]) -> Testbed:
    """A testbed whose namespaces were made (ids recorded) without running anything."""
    import tcplab.kernel.testbed as tb

    monkeypatch.setattr(tb, "netns_id", lambda ns: ids.get(ns))
    bed = Testbed(_Plan(), tmp_path)
    bed.created = list(_Plan.namespaces)
    bed.ns_ids = {ns: ids[ns] for ns in bed.created}
    bed.is_up = True
    return bed


def test_a_deleted_or_replaced_namespace_is_lost_and_never_deleted_by_down(monkeypatch, tmp_path):
    import tcplab.kernel.testbed as tb

    ids = {"tlk6-a": 4026532001, "tlk6-b": 4026532002, "tlk6:w0": 4026532003}
    bed = _faked_testbed(monkeypatch, tmp_path, ids)
    assert bed.lost() == []
    ids["tlk6-a"] = None  # deleted (ip netns del: the name is gone)
    ids["tlk6:w0"] = 4026532999  # deleted, and made again by someone else (another run)
    assert bed.lost() == ["netns tlk6-a is gone", "netns tlk6:w0 is another namespace now"]
    removed = []
    monkeypatch.setattr(tb, "_remove_netns", lambda ns: removed.append(ns))
    assert bed.down() == []
    assert removed == ["tlk6-b"]  # never the other run's tlk6:w0


def test_during_names_an_agent_that_ended_before_the_end(monkeypatch, tmp_path):
    ids = {"tlk6-a": 1, "tlk6-b": 2, "tlk6:w0": 3}
    bed = _faked_testbed(monkeypatch, tmp_path, ids)
    done = subprocess.Popen([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"])
    done.wait()
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        end_ns = time.monotonic_ns() + 60 * 10**9
        assert watch.during(bed, {"a": running}, None, end_ns) == []
        assert watch.during(bed, {"a": running, "b": done}, None, end_ns) == [
            "the traffic agent of b ended (killed by SIGKILL)"
        ]
        # at the end the agents end by themselves: not a problem then
        assert watch.during(bed, {"b": done}, None, time.monotonic_ns()) == []
    finally:
        running.kill()
        running.wait()


def test_broken_is_one_line_naming_the_time_and_the_fix():
    problems = ["netns tlk6-a is gone", "the traffic agent of b ended (killed by SIGTERM)"]
    e = watch.broken(problems, 6_240_000_000, 30_000_000_000, "tlk6")
    assert str(e) == (
        "kernel: the run was broken under it at 6.2 s of 30 s: netns tlk6-a is gone; the traffic agent of b "
        "ended (killed by SIGTERM) (removed or killed from outside: tcplab kernel cleanup --prefix tlk6 "
        "during the run?); nothing written"
    )
    assert "\n" not in str(e)


# -- for real ---------------------------------------------------------------------------------


def _reason() -> str | None:
    if os.geteuid() != 0:
        return "kernel tests need root (network namespaces)"
    from tcplab.kernel.env import probe

    env = probe("tlk6")
    if not env.delayline:
        return "the delay line tcplab-delayline is not built (cargo build --release -p tcplab-delayline)"
    if not env.tools.get("nft"):
        return "nft (nftables) is not installed: builtin:cubic-vs-bbr-lossy's loss needs it"
    return None


@pytest.fixture
def prefix():
    from tcplab.kernel.testbed import cleanup

    reason = _reason()
    if reason:
        pytest.skip(reason)
    cleanup("tlk6")
    yield "tlk6"
    cleanup("tlk6")


def _ours(prefix: str) -> dict[str, list[int]]:
    from tcplab.kernel.names import is_ours
    from tcplab.kernel.testbed import list_netns, netns_pids

    return {ns: netns_pids(ns) for ns in list_netns() if is_ours(prefix, ns)}


def _start_run(prefix: str, out: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [
            *TCPLAB,
            *("kernel", "run", "builtin:cubic-vs-bbr-lossy", "--set", "duration=30s", "--prefix", prefix),
            *("--allow-busy", "-q", "--no-plots", "-o", str(out)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _traffic_running(prefix: str, proc: subprocess.Popen) -> dict[str, list[int]]:
    """Wait until both hosts run their agent and the wire its delay line; the PIDs by namespace."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the run ended early: {proc.returncode} {proc.stderr.read()}")
        pids = _ours(prefix)
        if pids.get(f"{prefix}-server") and pids.get(f"{prefix}-client") and pids.get(f"{prefix}:w1"):
            time.sleep(2.0)  # into the traffic (t0 is ~3 s after the agents start)
            return _ours(prefix)
        time.sleep(0.1)
    pytest.fail("the run's agents did not start")


def _fails_as_broken(proc: subprocess.Popen, out: Path, prefix: str, what: str) -> str:
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: kernel: the run was broken under it at "), err
    assert what in lines[0] and lines[0].endswith("; nothing written"), err
    assert not out.exists()
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # no half-written directory
    assert _ours(prefix) == {}
    return lines[0]


@pytest.mark.kernel
def test_cleanup_of_the_same_prefix_during_a_run_fails_the_run(prefix, tmp_path):
    out = tmp_path / "run"
    proc = _start_run(prefix, out)
    try:
        _traffic_running(prefix, proc)
        cmd = [*TCPLAB, "kernel", "cleanup", "--prefix", prefix]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        _fails_as_broken(proc, out, prefix, f"netns {prefix}-")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.kernel
@pytest.mark.parametrize(("victim", "sig"), [("server", signal.SIGKILL), ("w1", signal.SIGTERM)])
def test_an_agent_or_the_delay_line_killed_during_a_run_fails_the_run(prefix, tmp_path, victim, sig):
    out = tmp_path / "run"
    proc = _start_run(prefix, out)
    try:
        pids = _traffic_running(prefix, proc)
        ns = f"{prefix}:w1" if victim == "w1" else f"{prefix}-{victim}"
        for pid in pids[ns]:
            os.kill(pid, sig)
        what = "the delay line in" if victim == "w1" else "the traffic agent of server"
        _fails_as_broken(proc, out, prefix, what)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

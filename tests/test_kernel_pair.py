"""The agent, samplers and measurements end to end on the running kernel: two network
namespaces joined by a veth (tests/kernel_pair.py), a tbf on the sender's egress as the
bottleneck. Needs root; skipped with the reason otherwise. A run the busy machine makes INVALID
is retried once, then skipped (tests/kernel_runs.py)."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import time

import pytest

import kernel_pair
from kernel_runs import valid_run
from tcplab.engine import parse_output
from tcplab.kernel import measure
from tcplab.kernel.agent import start_agents, stop_agents
from tcplab.kernel.result import KernelResult
from tcplab.kernel.sampler import QueueSampler, queue_targets
from tcplab.loader import load_scenario

PREFIX = "tlh3"
RATE_BPS = 50_000_000


def _skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    for tool in ("ip", "tc", "ss", "nstat", "ethtool"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    probe = f"{PREFIX}-probe"
    done = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return f"ip netns add failed: {done.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True, check=False)
    return None


pytestmark = [pytest.mark.kernel]


@pytest.fixture
def pair():
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    p = kernel_pair.Pair(PREFIX, rate=f"{RATE_BPS // 1_000_000}mbit").up()
    try:
        yield p
    finally:
        p.down()
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False).stdout
    assert not {p.a, p.b} & {line.split()[0] for line in listed.splitlines() if line.strip()}


def run_pair(scenario: dict, workdir) -> KernelResult:
    sc = load_scenario(scenario)
    config = sc.to_core()
    plan = kernel_pair.PairPlan(config, PREFIX)
    before = measure.nstat_snapshot(plan)
    t0 = time.monotonic_ns() + 1_500_000_000
    procs = start_agents(plan, config, workdir, t0)
    sampler = QueueSampler(queue_targets(plan.queue_devices), t0, plan.sample_interval_ns, plan.duration_ns).start()
    codes = stop_agents(procs, timeout_s=(t0 + plan.duration_ns - time.monotonic_ns()) / 1e9 + 5)
    queue = sampler.stop()
    m = measure.collect(
        plan,
        workdir,
        release=platform.release(),
        nstat_before=before,
        queue=queue,
        queue_lateness=sampler.lateness(),
        agent_exit=dict(zip(["b", "a"], codes, strict=True)),
    )
    reasons = measure.validity(m, ["a", "b"])
    return KernelResult(
        sc,
        config,
        parse_output(measure.build_raw(config, m)),
        measurements=m,
        kernel={"env": {"release": platform.release()}, "valid": not reasons, "invalid_reasons": reasons},
    )


def test_bulk_cubic_fills_the_bottleneck(pair, tmp_path):
    scenario = {
        "name": "pair-bulk",
        "duration": "5s",
        "sample_interval": "100ms",
        "hosts": {"a": {}, "b": {}},
        "links": [{"between": ["a", "b"], "rate": "50Mbit", "delay": "50us"}],
        "flows": [{"from": "a", "to": "b", "app": "bulk", "cc": "cubic"}],
    }
    runs: list = []

    def one_run() -> KernelResult:  # each in a work directory of its own (ss samples are appended)
        work = tmp_path / f"run-{len(runs) + 1}"
        work.mkdir()
        runs.append(work)
        return run_pair(scenario, work)

    r = valid_run(one_run, "pair-bulk")
    assert r.kernel["agents"]["a"]["errors"] == [] and r.kernel["agents"]["b"]["errors"] == []
    flow = r.flows.iloc[0]
    assert flow["cc"] == "cubic"
    # the tbf passes RATE_BPS of frames; 1448 of every 1514 bytes are payload (a veth's skb->len
    # includes the Ethernet header). CUBIC keeps the 300 kB tbf queue busy: >= 95 % of it.
    payload_bps = RATE_BPS * 1448 / 1514
    assert 0.95 * payload_bps <= flow["goodput_bps"] <= payload_bps * 1.02, flow["goodput_bps"]
    ts = r.timeseries[r.timeseries["flow"] == 0]
    assert len(ts) >= 45  # one per 100 ms over 5 s, a few may be skipped on a busy machine
    steady = ts[ts["t_s"] >= 1.0]
    assert (steady["cwnd"] > 10).all() and (steady["srtt_us"] > 0).all()
    assert (steady["delivery_rate_bps"] > 0).all() and (steady["pacing_rate_bps"] > 0).all()
    # the delivery rate is what the bottleneck lets through (+-25 % between 100 ms samples)
    assert steady["delivery_rate_bps"].median() == pytest.approx(RATE_BPS * 1448 / 1514, rel=0.25)
    # the tbf's queue (300 kB limit) holds packets while CUBIC fills it
    q = r.queues[r.queues["link"] == 0]
    assert len(q) > 0 and q["backlog_packets"].max() > 0

"""The kernel probe and the quiet check (tcplab.kernel.env), without root."""

from __future__ import annotations

import gzip
import os

import pytest

from tcplab.kernel import env as kenv


def _stat_line(user, nice, system, idle, iowait=0, irq=0, softirq=0, steal=0) -> str:
    return f"cpu  {user} {nice} {system} {idle} {iowait} {irq} {softirq} {steal} 0 0\ncpu0 1 2 3 4\n"


def test_quiet_check_counts_other_processes_in_cpus(monkeypatch):
    hz = os.sysconf("SC_CLK_TCK")
    # over 1 s: 0.5 CPU of user+system time (hz/2 ticks), no steal -> busy 0.5 CPU > 0.25
    stats = iter([_stat_line(100, 0, 100, 1000), _stat_line(100 + hz // 4, 0, 100 + hz // 4, 1000 + 3 * hz // 2)])
    clock = iter([10.0, 11.0])
    monkeypatch.setattr(kenv, "_read", lambda path: next(stats))
    monkeypatch.setattr(kenv.time, "sleep", lambda s: None)
    monkeypatch.setattr(kenv.time, "monotonic", lambda: next(clock))
    q = kenv.quiet_check(1.0)
    assert q.busy_cpu_frac == pytest.approx(2 * (hz // 4) / hz)
    assert not q.ok and "0.50 CPU" in q.reason


def test_quiet_check_steal_above_five_percent(monkeypatch):
    hz = os.sysconf("SC_CLK_TCK")
    # 2 CPUs for 1 s = 2 hz ticks: 10 % of them stolen, nothing busy
    stats = iter([_stat_line(0, 0, 0, 0), _stat_line(0, 0, 0, 2 * hz - hz // 5, steal=hz // 5)])
    clock = iter([0.0, 1.0])
    monkeypatch.setattr(kenv, "_read", lambda path: next(stats))
    monkeypatch.setattr(kenv.time, "sleep", lambda s: None)
    monkeypatch.setattr(kenv.time, "monotonic", lambda: next(clock))
    q = kenv.quiet_check(1.0)
    assert q.busy_cpu_frac == 0
    assert q.steal_frac == pytest.approx((hz // 5) / (2 * hz), abs=1e-4)
    assert not q.ok and q.reason.startswith("CPU steal")


def test_probe_reads_the_kernel_config():
    try:
        with gzip.open("/proc/config.gz", "rt") as f:
            config = f.read()
    except OSError:
        pytest.skip("no /proc/config.gz on this machine")
    env = kenv.probe()
    assert env.release == os.uname().release
    hz = [line.split("=")[1] for line in config.splitlines() if line.startswith("CONFIG_HZ=")]
    assert env.hz == int(hz[0])
    for kind, symbol in kenv.QDISC_CONFIG.items():
        if f"# {symbol} is not set" in config:
            assert kind not in env.qdiscs
        if f"{symbol}=y" in config:
            assert kind in env.qdiscs
    assert {"pfifo", "bfifo", "pfifo_fast"} <= set(env.qdiscs)
    text = kenv.format_env(env)
    assert f"kernel: {env.release}" in text and f"HZ: {env.hz}" in text


def test_require_root(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(kenv.KernelError, match="needs root"):
        kenv.require_root()


@pytest.mark.kernel
def test_qdisc_probe_in_a_scratch_namespace_agrees_with_the_config(monkeypatch):
    if os.geteuid() != 0:
        pytest.skip("the qdisc probe needs root (a scratch network namespace)")
    configured = kenv.probe("tlh2")
    if not configured.qdiscs_source.startswith("/"):
        pytest.skip("no kernel config to compare the probe with")
    monkeypatch.setattr(kenv, "_kernel_config", lambda release: ({}, ""))
    probed = kenv.probe("tlh2")
    assert probed.qdiscs_source.startswith("probe")
    assert set(probed.qdiscs) == set(configured.qdiscs)
    from tcplab.kernel.testbed import list_netns

    assert not [ns for ns in list_netns() if ns.startswith("tlh2:probe")]  # tcplab.kernel.names.probe_ns

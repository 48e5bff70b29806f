"""Invalid is not failed (issue 23 item 4): a kernel run invalid because the machine was busy
says how busy (the quiet check's figures, the delay line's lateness) and how to rerun, and
``--runs N`` runs an invalid kernel run once more before counting it out. Stand-ins for the
kernel (a simulation with a kernel record), no kernel needed (tcplab.kernel.busy).
"""

from __future__ import annotations

import json
import os

import pytest

import fake_core
import tcplab
from tcplab.kernel import env as kenv
from tcplab.kernel.busy import busy_figures, busy_text, delayline_file_lateness, rerun_hint
from tcplab.kernel.validate import compare_runs, validate
from test_validate import invoke, seed_standin

QUIET_REASON = "the machine was busy before the run: other processes used 0.83 CPU over 1 s (at most 0.25 allowed)"
DELAY_REASON = "delay line tcplab-w0/t0 was late: p99 12.30 ms, max 50.00 ms (limits 1 ms, 20 ms)"


def record(*, quiet_ok: bool = False, late_p99_ns: int = 12_300_000, reasons: tuple[str, ...] = ()) -> dict:
    """A kernel.json as tcplab.kernel.run writes it, for a run on a busy machine."""
    return {
        "quiet": {
            "seconds": 1.0,
            "busy_cpu_frac": 0.83,
            "steal_frac": 0.002,
            "ok": quiet_ok,
            "reason": "" if quiet_ok else QUIET_REASON,
            "loadavg": [2.21, 1.6, 1.59],
            "cpus": 2,
            "allow_busy": False,
        },
        "delaylines": {
            "tcplab-w0": {
                "tuns": [{"name": "t0", "lateness_ns": {"p50": 40_000, "p99": late_p99_ns, "max": 50_000_000}}]
            }
        },
        "agents": {"client": {"ss": {"samples": 100, "missed": 1, "late_over_half_interval": 3}}},
        "machine_reasons": list(reasons),
        "invalid_reasons": list(reasons),
        "valid": not reasons,
    }


def busy_standin(sc, options, progress=False, *, reasons=(QUIET_REASON, DELAY_REASON), quiet_ok=False):
    r = seed_standin(sc, options)
    r.summary["kind"] = "kernel"
    r.summary["kernel"] = {"release": "6.18", "valid": not reasons, "invalid_reasons": list(reasons)}
    r.kernel = record(quiet_ok=quiet_ok, reasons=tuple(reasons))  # what KernelResult carries
    return r


def test_busy_figures_from_the_kernel_record():
    fig = busy_figures(record(reasons=(QUIET_REASON,)))
    assert fig["load_average"] == [2.21, 1.6, 1.59] and fig["cpus"] == 2
    # busy_cpu is in CPUs: 0.83 of 2 CPUs is 41.5 % of the machine
    assert fig["busy_cpu"] == pytest.approx(0.83) and fig["busy_pct"] == pytest.approx(41.5)
    assert fig["delay_line_late_ms"] == pytest.approx({"p50": 0.04, "p99": 12.3, "max": 50.0})
    # the ss sampler: 3 of 101 due samples late (the missed one among them)
    assert fig["sampler_late_pct"] == pytest.approx(100 * 3 / 101)
    text = busy_text(fig)
    for part in ("load average 2.21 1.60 1.59 (2 CPUs)", "0.83 CPU over 1 s", "42 % of the machine",
                 "p99 12.30 ms", "max 50.00 ms", "limits: p99 1 ms, max 20 ms"):  # fmt: skip
        assert part in text, (part, text)


def test_delayline_json_is_read_when_present(tmp_path):
    assert delayline_file_lateness(tmp_path) == []
    (tmp_path / "delayline.json").write_text(json.dumps({"tuns": [{"late_ns": {"p50": 1, "p99": 70e6, "max": 90e6}}]}))
    assert delayline_file_lateness(tmp_path) == [{"p50": 1.0, "p99": 70e6, "max": 90e6}]
    fig = busy_figures(record(reasons=(DELAY_REASON,)), tmp_path)
    assert fig["delay_line_late_ms"]["max"] == pytest.approx(90.0)


def test_rerun_hint_names_the_command_and_what_allow_busy_does():
    cmd = ["tcplab", "validate", "my path.yaml", "--runs", "3"]
    quiet_only = rerun_hint(cmd, busy_figures(record(reasons=(QUIET_REASON,))))
    assert "tcplab validate 'my path.yaml' --runs 3" in quiet_only
    assert "load average under 1" in quiet_only
    assert "add --allow-busy" in quiet_only and "does not excuse" not in quiet_only
    both = rerun_hint(cmd, busy_figures(record(reasons=(QUIET_REASON, DELAY_REASON))))
    assert "add --allow-busy" in both and "does not excuse" in both
    # the quiet check passed, the delay line fell behind: --allow-busy would not help
    late_only = rerun_hint(cmd, busy_figures(record(quiet_ok=True, reasons=(DELAY_REASON,))))
    assert "add --allow-busy" not in late_only and "--allow-busy would not help" in late_only
    # already given: not suggested again
    assert "add --allow-busy" not in rerun_hint([*cmd, "--allow-busy"], busy_figures(record(reasons=(QUIET_REASON,))))


def test_an_invalid_run_for_the_machine_says_how_busy_and_how_to_rerun(tmp_path):
    out = tmp_path / "v"
    v = validate(
        "builtin:cubic-vs-bbr-lossy",
        overrides=["duration=3s"],
        out=out,
        kernel_runner=busy_standin,
        core=fake_core.FakeCore(),
        plots=False,
        command=["tcplab", "validate", "builtin:cubic-vs-bbr-lossy", "--set", "duration=3s"],
    )
    assert not v.valid and v.busy["load_average"] == [2.21, 1.6, 1.59]
    doc = json.loads((out / "validation.json").read_text())
    assert doc["busy"]["busy_cpu"] == pytest.approx(0.83)
    assert "load average 2.21" in doc["busy_text"]
    assert doc["rerun"].startswith("rerun when the machine is quiet")
    assert "tcplab validate builtin:cubic-vs-bbr-lossy --set duration=3s" in doc["rerun"]
    for name in ("report.md", "report.html"):
        text = (out / name).read_text()
        assert "how busy: load average 2.21" in text and "--allow-busy" in text, name


def test_an_invalid_run_for_another_reason_has_no_busy_figures():
    sim = tcplab.run("builtin:cubic-vs-bbr-lossy", overrides=["duration=3s"], core=fake_core.FakeCore())
    kern = busy_standin(sim.scenario, None, reasons=())
    kern.summary["kernel"] = {"release": "6.18", "valid": False, "invalid_reasons": ["agent b failed: exit status 1"]}
    kern.kernel["machine_reasons"] = []
    v = compare_runs(sim, kern)
    assert not v.valid and v.busy == {} and v.rerun_hint() is None


def test_cli_prints_how_busy_and_the_rerun_hint(tmp_path, monkeypatch, patched_core):
    import os

    import tcplab.kernel.validate as kv

    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(kv, "preflight", lambda sc, options: None)
    monkeypatch.setattr(kv, "_default_kernel_runner", busy_standin)
    out = tmp_path / "v"
    r = invoke("validate", "builtin:cubic-vs-bbr-lossy", "-o", out, "--set", "duration=3s", "--no-plots")
    assert r.exit_code == 1  # invalid stays exit 1, as `tcplab validate --help` says
    err = r.stderr.strip().splitlines()
    assert err[-3].startswith("INVALID: the machine was busy before the run")
    assert err[-2].startswith("how busy: load average 2.21 1.60 1.59 (2 CPUs)")
    assert err[-1].startswith("rerun when the machine is quiet") and "--allow-busy" in err[-1]


def test_runs_retries_an_invalid_kernel_run_once(tmp_path):
    calls = []

    def second_invalid_once(sc, options, progress=False):
        calls.append(1)
        if len(calls) == 2:  # kernel run 2's first attempt
            return busy_standin(sc, options)
        return seed_standin(sc, options)

    out = tmp_path / "v"
    v = validate(
        "builtin:cubic-vs-bbr-lossy",
        overrides=["duration=3s"],
        out=out,
        kernel_runner=second_invalid_once,
        core=fake_core.FakeCore(),
        plots=False,
        runs=3,
    )
    assert len(calls) == 4  # 3 runs and one retry
    assert v.valid and v.excluded == [] and v.valid_kernel_runs == [1, 2, 3]
    assert len(v.retried) == 1 and v.retried[0].startswith("kernel run-2: retried once")
    assert "the first attempt was INVALID: the machine was busy" in v.retried[0] and v.retried[0].endswith("valid")
    doc = json.loads((out / "validation.json").read_text())
    assert doc["repeat"]["retried"] == v.retried
    assert "retried: kernel run-2" in (out / "report.md").read_text()


def test_runs_counts_out_a_run_invalid_twice_with_its_figures(tmp_path):
    calls = []

    def second_invalid_twice(sc, options, progress=False):
        calls.append(1)
        if len(calls) in (2, 3):  # kernel run 2 and its retry
            return busy_standin(sc, options)
        return seed_standin(sc, options)

    v = validate(
        "builtin:cubic-vs-bbr-lossy",
        overrides=["duration=3s"],
        kernel_runner=second_invalid_twice,
        core=fake_core.FakeCore(),
        runs=3,
    )
    assert len(calls) == 4 and v.valid_kernel_runs == [1, 3]
    assert "INVALID again" in v.retried[0]
    assert len(v.excluded) == 1 and v.excluded[0].startswith("kernel run-2: INVALID: the machine was busy")
    assert "(how busy: load average 2.21" in v.excluded[0]


def test_quiet_check_records_the_load_average(monkeypatch):
    hz = os.sysconf("SC_CLK_TCK")
    lines = iter(["cpu 100 0 100 1000 0 0 0 0 0 0\n", f"cpu {100 + hz} 0 100 {1000 + hz} 0 0 0 0 0 0\n"])
    clock = iter([0.0, 1.0])
    monkeypatch.setattr(kenv, "_read", lambda path: next(lines))
    monkeypatch.setattr(kenv.time, "sleep", lambda s: None)
    monkeypatch.setattr(kenv.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(kenv.os, "getloadavg", lambda: (2.214, 1.6, 1.59))
    q = kenv.quiet_check(1.0)
    assert q.loadavg == (2.21, 1.6, 1.59) and q.cpus == os.cpu_count()
    # busy: the reason carries the load average beside the CPU figure
    assert not q.ok and "1.00 CPU" in q.reason and "load average 2.21 1.60 1.59" in q.reason

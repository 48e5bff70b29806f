"""compare: each variant succeeds or fails on its own (issue 7, 2.3).

Before: one variant that the engine rejected, or whose worker process died, made the whole
comparison fail with a ``BrokenProcessPool`` traceback and nothing written.
"""

from __future__ import annotations

import json
import os
import signal

import pytest
from typer.testing import CliRunner

import fake_core
import tcplab
from tcplab.cli import app
from tcplab.commands.compare import EXIT_VARIANTS_FAILED


class PickyCore(fake_core.FakeCore):
    """The engine double, but it misbehaves for the congestion controls named in ``bad``."""

    def __init__(self, bad: dict[str, str]):
        super().__init__()
        self.bad = bad

    def run(self, config_json, progress=None):
        cc = json.loads(config_json)["flows"][0]["cc"]
        action = self.bad.get(cc)
        if action == "reject":
            raise ValueError("flows[0]: refused by the test engine")
        if action == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if action == "exit":
            os._exit(7)
        return super().run(config_json, progress)


@pytest.fixture
def picky(monkeypatch):
    def install(bad):
        import tcplab.engine

        core = PickyCore(bad)
        monkeypatch.setattr(tcplab.engine, "import_core", lambda: core)
        return core

    return install


@pytest.mark.parametrize(
    ("action", "jobs", "reason"),
    [
        ("reject", "2", "engine: flows[0]: refused by the test engine"),
        ("reject", "1", "engine: flows[0]: refused by the test engine"),
        ("kill", "2", "worker process was killed by SIGKILL"),
        ("exit", "1", "worker process exited with status 7 without a result"),
    ],
)
def test_cli_writes_the_good_variants_and_reports_the_bad(tmp_path, picky, action, jobs, reason):
    picky({"bbr": action})
    out = tmp_path / "cmp"
    r = CliRunner().invoke(
        app,
        ["compare", "builtin:cubic-vs-bbr-lossy", "--set", "flows.0.cc=cubic,bbr,reno", "--set", "duration=2s"]
        + ["-o", str(out), "-j", jobs, "--no-plots"],
    )
    assert r.exit_code == EXIT_VARIANTS_FAILED, r.output
    assert "Traceback" not in r.output and "BrokenProcessPool" not in r.output
    # (off a terminal the progress lines come first: tests/test_progress_lines.py)
    assert [line for line in r.stderr.splitlines() if not line.startswith(("[", "all 3 runs"))] == [
        f"error: variant bbr: {reason}",
        f"error: 2 of 3 variants ran; results written to {out}",
    ]
    status = next(line for line in r.stdout.splitlines() if line.strip().startswith("status"))
    assert status.split() == ["status", "ok", "FAILED", "ok"]
    assert sorted(p.name for p in out.iterdir()) == [".tcplab-run", "compare.json", "cubic", "reno", "report.html"]
    assert (out / "cubic" / "summary.json").is_file() and (out / "reno" / "summary.json").is_file()
    doc = json.loads((out / "compare.json").read_text())
    by_label = {v["label"]: v for v in doc["variants"]}
    assert by_label["bbr"]["status"] == "failed" and by_label["bbr"]["error"] == reason
    assert by_label["bbr"]["dir"] is None and by_label["bbr"]["summary"] is None
    assert by_label["cubic"]["status"] == "ok" and by_label["cubic"]["summary"]["flows"][0]["cc"] == "cubic"
    goodput = doc["table"]["data"][doc["table"]["index"].index("goodput (Mbit/s)")]
    assert doc["table"]["columns"] == ["cubic", "bbr", "reno"]
    assert goodput[1] is None and goodput[0] > 0 and goodput[2] > 0


def test_cli_all_variants_failed_writes_nothing(tmp_path, picky):
    picky({"cubic": "reject", "bbr": "exit"})
    out = tmp_path / "cmp"
    r = CliRunner().invoke(
        app, ["compare", "builtin:cubic-vs-bbr-lossy", "--set", "flows.0.cc=cubic,bbr", "-o", str(out), "-q"]
    )
    assert r.exit_code == EXIT_VARIANTS_FAILED
    assert r.stderr.splitlines()[-1] == "error: 0 of 2 variants ran; nothing written"
    assert not out.exists()


def test_library_sequential_failure_is_per_variant(base_scenario):
    core = PickyCore({"bbr": "reject"})
    c = tcplab.compare([base_scenario], ["flows.0.cc=cubic,bbr"], core=core)
    assert list(c.results) == ["cubic"]
    assert c.failures["bbr"].reason == "engine: flows[0]: refused by the test engine"
    assert not c.ok
    assert list(c.table.columns) == ["cubic", "bbr"]
    assert c.table["bbr"].isna().all() and c.table["cubic"].notna().all()


def test_library_parallel_worker_death_is_per_variant(base_scenario):
    core = PickyCore({"bbr": "kill"})
    c = tcplab.compare([base_scenario], ["flows.0.cc=cubic,bbr,reno"], core=core, jobs=2)
    assert sorted(c.results) == ["cubic", "reno"]
    assert c.failures["bbr"].reason == "worker process was killed by SIGKILL"

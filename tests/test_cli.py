"""The tcplab command, with the engine double in place of tcplab._core."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import fake_core
from tcplab.cli import app
from tcplab.results import RUN_FILES


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_run_builtin(tmp_path, patched_core):
    out = tmp_path / "runs" / "lossy"
    r = invoke("run", "builtin:cubic-vs-bbr-lossy", "-o", out, "--set", "duration=2s")
    assert r.exit_code == 0, r.output
    assert "server-client-0" in r.stdout and "cubic" in r.stdout and f"wrote {out}" in r.stdout
    assert r.stderr == ""
    for name in RUN_FILES:
        assert (out / name).is_file()
    assert patched_core.calls[0]["duration_ns"] == 2 * 10**9


def test_run_bare_builtin_name_seed_and_sets(tmp_path, patched_core):
    out = tmp_path / "o"
    r = invoke(
        "run",
        "cubic-vs-bbr-lossy",
        "-o",
        out,
        "--seed",
        5,
        "--set",
        "flows.0.cc=bbr",
        "--set",
        "links.0.loss=0.5%",
        "--quiet",
    )
    assert r.exit_code == 0, r.output
    assert r.stdout == ""
    resolved = json.loads((out / "scenario.resolved.json").read_text())
    assert resolved["seed"] == 5
    assert resolved["flows"][0]["cc"] == "bbr"
    assert resolved["links"][0]["loss"] == {"kind": "bernoulli", "p": 0.005}


def test_run_file(tmp_path, patched_core, write_yaml, base_scenario):
    path = write_yaml(base_scenario)
    r = invoke("run", path, "-o", tmp_path / "o", "--no-plots")
    assert r.exit_code == 0, r.output
    assert not (tmp_path / "o" / "plots").exists()


def test_run_default_output_dir(tmp_path, patched_core, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = invoke("run", "builtin:cubic-vs-bbr-lossy", "--set", "duration=1s", "-q")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "runs" / "cubic-vs-bbr-lossy" / "summary.json").is_file()


def test_existing_output_dir_needs_force(tmp_path, patched_core):
    out = tmp_path / "o"
    out.mkdir()
    (out / "old.txt").write_text("x")
    r = invoke("run", "builtin:cubic-vs-bbr-lossy", "-o", out, "--set", "duration=1s")
    assert r.exit_code == 2
    assert (
        r.stderr.strip()
        == f"error: {out}: output directory exists and is not empty; expected a new or empty directory (or --force to replace it)"
    )
    assert patched_core.calls == []  # refused before simulating
    r = invoke("run", "builtin:cubic-vs-bbr-lossy", "-o", out, "--set", "duration=1s", "--force", "-q")
    assert r.exit_code == 0
    assert not (out / "old.txt").exists()


def test_set_errors_exit_2(tmp_path, patched_core):
    r = invoke("run", "builtin:cubic-vs-bbr-lossy", "-o", tmp_path / "o", "--set", "links.3.loss=1%")
    assert r.exit_code == 2
    assert (
        r.stderr.strip()
        == "error: --set: links.3.loss: no element 3 (links has 2 elements); expected an index from 0 to 1"
    )
    r = invoke("run", "builtin:cubic-vs-bbr-lossy", "-o", tmp_path / "o", "--set", "flows.0.cc=cubic,bbr")
    assert r.exit_code == 2
    assert "use" not in r.stderr or "tcplab compare" in r.stderr
    assert "2 values given (cubic, bbr)" in r.stderr
    assert not (tmp_path / "o").exists()


def test_several_errors_one_line_each(tmp_path, patched_core, write_yaml, base_scenario):
    base_scenario["flows"] = [{"from": "server", "to": "clinet"}, {"from": "r1", "to": "client"}]
    r = invoke("run", write_yaml(base_scenario), "-o", tmp_path / "o")
    assert r.exit_code == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("error: ") for line in lines)
    assert "flows.0.to" in lines[0] and "flows.1.from" in lines[1]


@pytest.mark.parametrize(
    ("exc", "message"),
    [
        (RuntimeError("tcp: sequence space wrapped"), "error: engine: tcp: sequence space wrapped"),
        (
            ValueError("engine config: flows.0.src: out of range"),
            "error: engine: engine config: flows.0.src: out of range",
        ),
    ],
)
def test_engine_failure_exit_1(tmp_path, monkeypatch, exc, message):
    import tcplab.engine

    monkeypatch.setattr(tcplab.engine, "import_core", lambda: fake_core.FakeCore(fail=exc))
    r = invoke("run", "builtin:cubic-vs-bbr-lossy", "-o", tmp_path / "o")
    assert r.exit_code == 1
    assert r.stderr.strip() == message
    assert "Traceback" not in r.output
    assert list(tmp_path.iterdir()) == []


def test_interrupt_exit_130(tmp_path, monkeypatch):
    import tcplab.engine

    monkeypatch.setattr(tcplab.engine, "import_core", lambda: fake_core.FakeCore(fail=KeyboardInterrupt()))
    r = invoke("run", "builtin:cubic-vs-bbr-lossy", "-o", tmp_path / "o")
    assert r.exit_code == 130
    assert "interrupted" in r.stderr
    assert list(tmp_path.iterdir()) == []


def test_missing_engine_exit_1(tmp_path, monkeypatch):
    import sys

    import tcplab

    monkeypatch.setitem(sys.modules, "tcplab._core", None)
    monkeypatch.delattr(tcplab, "_core", raising=False)
    r = invoke("run", "builtin:cubic-vs-bbr-lossy", "-o", tmp_path / "o")
    assert r.exit_code == 1
    assert r.stderr.startswith("error: tcplab's simulation engine")
    assert "pip install ." in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_compare_values(tmp_path, patched_core):
    out = tmp_path / "cmp"
    r = invoke(
        "compare", "builtin:cubic-vs-bbr-lossy", "--set", "flows.0.cc=cubic,bbr", "--set", "duration=2s", "-o", out
    )
    assert r.exit_code == 0, r.output
    assert "goodput (Mbit/s)" in r.stdout and "cubic" in r.stdout and "bbr" in r.stdout
    assert (out / "compare.json").is_file() and (out / "compare.png").is_file()
    assert (out / "cubic" / "summary.json").is_file() and (out / "bbr" / "summary.json").is_file()


def test_compare_files(tmp_path, patched_core, write_yaml, base_scenario):
    a = write_yaml(base_scenario, "a.yaml")
    b = write_yaml(base_scenario, "b.yaml")
    r = invoke("compare", a, b, "-o", tmp_path / "cmp", "-q")
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in (tmp_path / "cmp").iterdir()) == [
        "a",
        "b",
        "compare.json",
        "compare.png",
        "report.html",
    ]


def test_compare_needs_two_variants(tmp_path, patched_core):
    r = invoke("compare", "builtin:cubic-vs-bbr-lossy", "-o", tmp_path / "cmp")
    assert r.exit_code == 2
    assert r.stderr.startswith("error: only one variant to compare; expected two or more scenarios")
    assert not (tmp_path / "cmp").exists()


def test_compare_bad_variant_runs_nothing(tmp_path, patched_core):
    r = invoke("compare", "builtin:cubic-vs-bbr-lossy", "--set", "flows.0.cc=cubic,vegas", "-o", tmp_path / "cmp")
    assert r.exit_code == 2
    assert 'unknown congestion control "vegas"' in r.stderr
    assert patched_core.calls == []


def test_scenarios_lists_builtins():
    r = invoke("scenarios")
    assert r.exit_code == 0
    names = [line.split()[0] for line in r.stdout.splitlines()]
    assert {"cubic-vs-bbr-lossy", "cubic-100mbit-20ms"} <= set(names)


def test_check_shows_resolution():
    r = invoke("check", "builtin:cubic-vs-bbr-lossy")
    assert r.exit_code == 0, r.output
    assert "pfifo limit 41p" in r.stdout and "base RTT 100100us" in r.stdout  # 62562.5 B / 1514 B
    r = invoke("check", "builtin:cubic-vs-bbr-lossy", "--json", "--set", "flows.0.cc=bbr")
    assert json.loads(r.stdout)["flows"][0]["cc"] == "bbr"


def test_check_reports_errors():
    r = invoke("check", "builtin:cubic-vs-bbr-lossy", "--set", "links.0.rate=5Mbt")
    assert r.exit_code == 2
    assert r.stderr.strip() == (
        'error: --set: links.0.rate: "5Mbt" is not a rate (unknown unit "Mbt"); '
        "expected a number with a unit such as 5Mbit, 100Kbit, 1Gbit"
    )


def test_help_and_no_args():
    assert invoke("--help").exit_code == 0
    r = invoke("run", "--help")
    assert r.exit_code == 0 and "--set" in r.stdout
    # no command is a usage error (no_args_is_help): the help, and exit 2 as for any usage error
    r = invoke()
    assert r.exit_code == 2 and "Usage" in r.output and "compare" in r.output


def test_console_script_entry_point():
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = {"PYTHONPATH": str(root / "python"), "PATH": "/usr/bin:/bin"}
    p = subprocess.run(
        [sys.executable, "-c", "from tcplab.cli import main; main()", "check", "builtin:nope"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert p.returncode == 2
    assert p.stderr.startswith('error: builtin:nope: unknown built-in scenario "nope"')
    assert "Traceback" not in p.stderr


def test_unwritable_output_exit_1(tmp_path, patched_core):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = invoke("run", "builtin:cubic-vs-bbr-lossy", "-o", blocker / "sub" / "run", "--set", "duration=1s")
    assert r.exit_code == 1
    assert r.stderr.startswith("error: ") and len(r.stderr.strip().splitlines()) == 1
    assert "Traceback" not in r.output

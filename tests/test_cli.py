"""The tcplab command, with the engine double in place of tcplab._core."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

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
    # --force replaces only what tcplab wrote (issue 7, 2.1): a user's directory stays.
    r = invoke("run", "builtin:cubic-vs-bbr-lossy", "-o", out, "--set", "duration=1s", "--force", "-q")
    assert r.exit_code == 2
    assert (out / "old.txt").read_text() == "x"
    # A run directory tcplab wrote is replaced.
    (out / "old.txt").unlink()
    assert invoke("run", "builtin:cubic-vs-bbr-lossy", "-o", out, "--set", "duration=1s", "-q").exit_code == 0
    r = invoke("run", "builtin:cubic-vs-bbr-lossy", "-o", out, "--set", "duration=2s", "--force", "-q")
    assert r.exit_code == 0, r.output
    assert json.loads((out / "summary.json").read_text())["duration_s"] == 2


def test_set_errors_exit_2(tmp_path, patched_core):
    r = invoke("run", "builtin:cubic-vs-bbr-lossy", "-o", tmp_path / "o", "--set", "links.3.loss=1%")
    assert r.exit_code == 2
    assert (
        r.stderr.strip()
        == "error: --set: links.3.loss: no element 3 (links has 2 elements); expected an index from 0 to 1"
    )
    # several values for one run: one line naming them, and the command that runs one variant each
    r = invoke("run", "builtin:cubic-vs-bbr-lossy", "-o", tmp_path / "o", "--set", "flows.0.cc=cubic,bbr")
    assert r.exit_code == 2
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("error: --set: flows.0.cc: 2 values given (cubic, bbr); expected one value")
    assert "tcplab compare" in line
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
        ".tcplab-run",
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


def test_scenarios_name_prints_the_full_description():
    # the built-in's whole description, including the suggested compare command at its end
    import yaml

    from tcplab.loader import builtin_dir as _builtin_dir

    text = (_builtin_dir() / "fq-maxrate-per-flow.yaml").read_text(encoding="utf-8")
    description = yaml.safe_load(text)["description"].rstrip()
    for arg in ("fq-maxrate-per-flow", "builtin:fq-maxrate-per-flow"):
        r = invoke("scenarios", arg)
        assert r.exit_code == 0, r.output
        assert description in r.stdout
        assert "tcplab compare builtin:fq-maxrate-per-flow" in r.stdout
    r = invoke("scenarios", "no-such-thing")
    assert r.exit_code == 2
    assert "unknown built-in scenario 'no-such-thing'" in r.stderr


def test_check_shows_resolution():
    r = invoke("check", "builtin:cubic-vs-bbr-lossy")
    assert r.exit_code == 0, r.output
    # One unit per quantity (issue 7, 3.9): the built-in's 5Mbit link, 50ms each way plus
    # 2 x 50us on the access link = 100.1 ms, and a 41-packet pfifo (62562.5 B / 1514 B).
    assert "link emu->client: 5 Mbit/s, delay 50 ms, loss 1%, pfifo limit 41 packets" in r.stdout
    assert "link server->emu: 1000 Mbit/s, delay 0.05 ms" in r.stdout
    assert "base RTT 100.1 ms" in r.stdout
    assert "us," not in r.stdout and "Gbit" not in r.stdout
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
    r = invoke("--help")
    assert r.exit_code == 0
    text = " ".join(r.stdout.split())  # as wrapped for the terminal
    assert "3 compare: some variants failed" in text and "143 terminated (SIGTERM)" in text
    r = invoke("run", "--help")
    assert r.exit_code == 0 and "--set" in r.stdout
    r = invoke()  # no_args_is_help: the help text, and 2 (no command was given)
    assert r.exit_code == 2 and "Commands:" in r.output


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


def test_unwritable_output_exit_2_before_running(tmp_path, patched_core):
    # An output path that cannot be created is a user error found before simulating (issue 7, 2.8).
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = invoke("run", "builtin:cubic-vs-bbr-lossy", "-o", blocker / "sub" / "run", "--set", "duration=1s")
    assert r.exit_code == 2
    assert r.stderr.startswith("error: ") and len(r.stderr.strip().splitlines()) == 1
    assert "Traceback" not in r.output
    assert patched_core.calls == []


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["run", "builtin:cubic-vs-bbr-lossy", "--seed", "-1"],
            "error: --seed: -1 is out of range; expected a seed, an integer from 0 to 18446744073709551615",
        ),
        (
            ["run", "builtin:cubic-vs-bbr-lossy", "--seed", "1e3"],
            "error: --seed: '1e3' is not an integer; expected a seed, an integer from 0 to 18446744073709551615",
        ),
        (
            ["compare", "a", "b", "-j", "0"],
            "error: --jobs: 0 is out of range; expected a number of processes, an integer from 1 to 1024",
        ),
        (
            ["collect", "--count", "0"],
            "error: --count: 0 is out of range; expected a number of snapshots, an integer from 1 to 1000",
        ),
        (["run"], "error: missing argument 'SCENARIO'; see 'tcplab run --help'"),
        (["frob"], "error: no such command 'frob'; see 'tcplab --help'"),
    ],
)
def test_bad_command_line_is_one_error_line(args, line, patched_core):
    # Issue 7, 2.6: typer's boxed usage panel became the one-line `error:` form, exit 2.
    r = CliRunner().invoke(app, args, prog_name="tcplab")
    assert r.exit_code == 2
    assert r.stderr == line + "\n"
    assert r.stdout == ""
    assert patched_core.calls == []


def test_seed_upper_bound_is_accepted(tmp_path, patched_core):
    r = invoke("run", "builtin:cubic-vs-bbr-lossy", "--seed", 2**64 - 1, "-o", tmp_path / "o", "-q", "--no-plots")
    assert r.exit_code == 0, r.output
    assert patched_core.calls[0]["seed"] == 2**64 - 1


def test_version():
    from tcplab import __version__

    r = invoke("--version")
    assert r.exit_code == 0
    assert r.stdout.startswith(f"tcplab {__version__} (engine ")


@pytest.mark.parametrize("command", ["run", "compare", "check", "collect", "diagnose"])
def test_help_shows_flags_without_a_type_placeholder(command):
    # Issue 7, 3.9: flags were listed as `--quiet -q <bool>`; a flag takes no value.
    r = invoke(command, "--help")
    assert r.exit_code == 0
    assert "<bool>" not in r.stdout and "BOOLEAN" not in r.stdout
    assert "╭" not in r.stdout  # plain text, readable when piped


def test_check_lines_are_not_cut_when_piped(write_yaml, base_scenario):
    # Issue 7, 3.9: piped output was wrapped at 80 columns. A long flow name makes the
    # route line far longer than 80 characters; it must stay one line.
    base_scenario["flows"][0]["name"] = "a-flow-with-a-rather-long-name-" + "x" * 60
    r = invoke("check", write_yaml(base_scenario))
    assert r.exit_code == 0, r.output
    route = [line for line in r.stdout.splitlines() if line.startswith("  flow ")]
    assert len(route) == 1 and len(route[0]) > 120 and route[0].endswith("base RTT 20 ms")


def test_output_into_a_closed_pipe_is_no_traceback():
    # `tcplab diagnose FILE | head -1`: the reader goes away mid-output. A tool used in pipes
    # stops quietly (rich turns EPIPE into exit 1); a second exception while matching it must
    # not turn that into a traceback.
    import subprocess

    fixture = Path(__file__).parent / "diagnose" / "fixtures" / "ss_seed000_collapse.txt"
    proc = subprocess.run(
        f"{sys.executable} -c 'from tcplab.cli import main; main()' diagnose {fixture} | head -c 1 >/dev/null",
        shell=True,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "python")},
    )
    assert "Traceback" not in proc.stderr, proc.stderr


def _modules_after(code: str, modules: tuple[str, ...]) -> list[str]:
    """The last line ``code`` prints, then which of ``modules`` a fresh interpreter holds after it."""
    import subprocess

    probe = f"{code}\nimport sys\nprint(sorted(m for m in {modules!r} if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "python")},
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()


def test_loading_and_validating_a_scenario_does_not_load_pandas():
    # `tcplab check`, `--help` and diagnose stay quick: the table libraries load on first
    # use (a run), not when a scenario is validated (its memory estimate needs only the
    # column widths, tcplab.columns).
    lines = _modules_after(
        "import tcplab; tcplab.load_scenario('builtin:cubic-vs-bbr-lossy')", ("pandas", "pyarrow", "matplotlib")
    )
    assert lines == ["[]"]


def test_version_loads_neither_numpy_nor_pandas():
    # `tcplab --version` names the engine's version through tcplab.engine (the one module that
    # may import the compiled engine); the table libraries load with the first run (issue 27).
    code = "import sys\nfrom tcplab.cli import main\nsys.argv = ['tcplab', '--version']\ntry:\n    main()\nexcept SystemExit:\n    pass"
    lines = _modules_after(code, ("numpy", "pandas", "pyarrow", "matplotlib", "pydantic"))
    assert lines[0].startswith("tcplab ") and lines[-1] == "[]", lines


def test_a_refused_output_directory_is_refused_before_the_table_libraries_load(tmp_path):
    # The run's stack (NumPy, pandas, the engine) loads once the input is known good: a
    # mistake in -o is reported at the CLI's start-up cost, not a run's (issue 27).
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine\n")
    code = (
        "import sys\nfrom tcplab.cli import main\n"
        f"sys.argv = ['tcplab', 'run', 'builtin:cubic-vs-bbr-lossy', '-o', {str(taken)!r}]\n"
        "try:\n    main()\nexcept SystemExit as e:\n    print('exit', e.code)"
    )
    lines = _modules_after(code, ("numpy", "pandas", "pyarrow", "tcplab._core"))
    assert lines[-2:] == ["exit 2", "[]"], lines
    assert (taken / "notes.txt").read_text() == "mine\n"

"""A run directory says what ran: the effective scenario, the overrides, the command line and
the versions; titles and descriptions name the overrides (issue 7, 3.5).

Before: the overrides were nowhere in the run directory, the BBR variant's report still said
its congestion control was cubic (the built-in's description), and `tcplab run builtin:X --set
flows.0.cc=bbr` printed the bare base name above a bbr row.
"""

from __future__ import annotations

import json
import platform
import re

from typer.testing import CliRunner

import tcplab
from tcplab.cli import app
from tcplab.loader import load_scenario


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_run_records_what_ran(tmp_path, patched_core):
    out = tmp_path / "o"
    args = ["run", "builtin:cubic-vs-bbr-lossy", "--set", "flows.0.cc=bbr", "--set", "duration=2s"]
    args += ["--seed", "5", "-o", str(out), "--no-plots"]
    r = invoke(*args)
    assert r.exit_code == 0, r.output
    title = "cubic-vs-bbr-lossy [flows.0.cc=bbr, duration=2s, seed=5]"
    assert r.stdout.splitlines()[0].strip().startswith(f"{title} (seed 5, 2 s)")

    # the effective scenario, reloaded on its own, is exactly the configuration that ran
    resolved = json.loads((out / "scenario.resolved.json").read_text())
    again = load_scenario(out / "scenario.yaml").to_core()
    assert again == resolved
    assert again["flows"][0]["cc"] == "bbr" and again["seed"] == 5

    meta = json.loads((out / "metadata.json").read_text())
    assert meta["overrides"] == ["flows.0.cc=bbr", "duration=2s", "seed=5"]
    assert meta["command"] == ["tcplab", *args]
    assert meta["title"] == title
    versions = meta["versions"]
    assert versions["tcplab"] == tcplab.__version__
    assert versions["python"] == platform.python_version()
    assert versions["engine"] == json.loads((out / "summary.json").read_text())["engine_version"]
    assert versions["tcplab_git_commit"] is None or re.fullmatch(r"[0-9a-f]{40}", versions["tcplab_git_commit"])

    summary = json.loads((out / "summary.json").read_text())
    assert summary["title"] == title and summary["overrides"] == meta["overrides"]
    assert summary["description"].endswith(
        "This run was made with flows.0.cc=bbr, duration=2s, seed=5; "
        "where the description above says otherwise, these values are what ran."
    )
    html = (out / "report.html").read_text()
    assert f"<h1>{title}</h1>" in html
    assert "This run was made with flows.0.cc=bbr" in html


def test_run_without_overrides_keeps_the_plain_name(tmp_path, patched_core):
    out = tmp_path / "o"
    assert invoke("run", "builtin:cubic-vs-bbr-lossy", "-o", out, "-q", "--no-plots").exit_code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["title"] == "cubic-vs-bbr-lossy" and summary["overrides"] == []
    assert "This run was made with" not in summary["description"]
    assert load_scenario(out / "scenario.yaml").to_core() == json.loads((out / "scenario.resolved.json").read_text())


def test_each_compare_variant_says_what_it_ran(tmp_path, patched_core):
    out = tmp_path / "cmp"
    r = invoke(
        "compare", "builtin:cubic-vs-bbr-lossy", "--set", "flows.0.cc=cubic,bbr", "--set", "duration=2s",
        "-o", out, "-q", "--no-plots", "-j", "2",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    for cc in ("cubic", "bbr"):
        run_dir = out / cc
        meta = json.loads((run_dir / "metadata.json").read_text())
        assert meta["overrides"] == [f"flows.0.cc={cc}", "duration=2s"]
        assert meta["command"][:2] == ["tcplab", "compare"]
        assert load_scenario(run_dir / "scenario.yaml").to_core()["flows"][0]["cc"] == cc
        html = (run_dir / "report.html").read_text()
        assert f"<h1>cubic-vs-bbr-lossy [flows.0.cc={cc}, duration=2s]</h1>" in html
        assert f"This run was made with flows.0.cc={cc}, duration=2s" in html


def test_api_run_records_its_overrides(fake):
    result = tcplab.run("builtin:cubic-vs-bbr-lossy", overrides=["flows.0.cc=reno"], seed=3, core=fake)
    assert result.overrides == ["flows.0.cc=reno", "seed=3"]
    assert result.title == "cubic-vs-bbr-lossy [flows.0.cc=reno, seed=3]"
    assert result.metadata()["command"] is None


def test_engine_version_names_the_release_and_the_sources(real_core):
    """The engine version is the crate's release plus a digest of the engine sources (build.rs),
    so runs keyed by it (sweeps) change key when the engine changes between releases."""
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    release = tomllib.loads((root / "Cargo.toml").read_text())["workspace"]["package"]["version"]
    assert re.fullmatch(re.escape(release) + r"\+[0-9a-f]{12}", real_core.__version__), real_core.__version__

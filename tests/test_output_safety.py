"""--force replaces only what tcplab wrote; `-o` never points at the working directory or
above it (issue 7, 2.1).

Before: ``tcplab run s.yaml -o . --force`` replaced the current directory (an unrelated source
file in it was deleted), and ``-o runs/..`` (what a scenario named ``..`` gave) with
``--force`` emptied ``runs/``. Each test below first builds what a user would have there.
"""

from __future__ import annotations

import json
import os

import pytest
from typer.testing import CliRunner

from tcplab.cli import app
from tcplab.results.rundir import MARKER

RUN = ["run", "builtin:cubic-vs-bbr-lossy", "--set", "duration=1s", "-q", "--no-plots"]
COMPARE = ["compare", "builtin:cubic-vs-bbr-lossy", "--set", "flows.0.cc=cubic,bbr", "--set", "duration=1s"]
COMPARE += ["-q", "--no-plots", "-j", "1"]


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A project directory with a source file and an earlier run, as the current directory."""
    project = tmp_path / "project"
    (project / "runs" / "earlier").mkdir(parents=True)
    (project / "model.py").write_text("print('mine')\n")
    monkeypatch.chdir(project)
    return project


def _snapshot(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _one_error_line(r, *fragments):
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    for f in fragments:
        assert f in lines[0]


@pytest.mark.parametrize("command", [RUN, COMPARE])
@pytest.mark.parametrize("force", [True, False])
def test_current_directory_is_never_the_output(workdir, patched_core, command, force):
    before = _snapshot(workdir.parent)
    r = invoke(*command, "-o", ".", *(["--force"] if force else []))
    _one_error_line(r, "is the current directory")
    assert _snapshot(workdir.parent) == before
    assert (workdir / "model.py").read_text() == "print('mine')\n"
    assert patched_core.calls == []  # refused before simulating


@pytest.mark.parametrize("output", ["..", "runs/..", "runs/../..", "/"])
def test_a_parent_of_the_current_directory_is_never_the_output(workdir, patched_core, output):
    before = _snapshot(workdir.parent)
    r = invoke(*RUN, "-o", output, "--force")
    _one_error_line(r)
    assert "parent of the current directory" in r.stderr or "current directory" in r.stderr or "root" in r.stderr
    assert _snapshot(workdir.parent) == before


def test_empty_current_directory_is_not_replaced_either(tmp_path, monkeypatch, patched_core):
    # renaming a new directory over an empty working directory would leave the shell in a
    # deleted directory
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    _one_error_line(invoke(*RUN, "-o", "."), "is the current directory")
    assert empty.is_dir() and list(empty.iterdir()) == []


def test_force_refuses_a_directory_tcplab_did_not_write(workdir, patched_core):
    notes = workdir / "notes"
    notes.mkdir()
    (notes / "todo.txt").write_text("keep me")
    r = invoke(*RUN, "-o", "notes", "--force")
    _one_error_line(r, "notes: --force refused: not a directory written by tcplab", f"no {MARKER} marker")
    assert (notes / "todo.txt").read_text() == "keep me"
    assert patched_core.calls == []


def test_force_refuses_a_run_directory_with_a_users_file_in_it(workdir, patched_core):
    assert invoke(*RUN, "-o", "runs/x").exit_code == 0
    (workdir / "runs" / "x" / "analysis.ipynb").write_text("{}")
    r = invoke(*RUN, "-o", "runs/x", "--force")
    _one_error_line(r, "it contains analysis.ipynb, which tcplab did not write")
    assert (workdir / "runs" / "x" / "analysis.ipynb").exists()


def test_force_refuses_a_marker_in_a_foreign_directory_structure(workdir, patched_core):
    # a marker alone does not make a home directory replaceable
    (workdir / MARKER).write_text(json.dumps({"tcplab": "0", "kind": "run"}))
    other = workdir / "data"
    other.mkdir()
    (other / MARKER).write_text(json.dumps({"tcplab": "0", "kind": "run"}))
    (other / "raw.csv").write_text("1,2\n")
    _one_error_line(invoke(*RUN, "-o", "data", "--force"), "raw.csv")
    assert (other / "raw.csv").exists()


def test_force_replaces_tcplab_run_and_compare_directories(workdir, patched_core):
    assert invoke(*RUN, "-o", "runs/x").exit_code == 0
    assert json.loads((workdir / "runs" / "x" / MARKER).read_text())["kind"] == "run"
    r = invoke(*RUN, "-o", "runs/x", "--force", "--seed", "7")
    assert r.exit_code == 0, r.output
    assert json.loads((workdir / "runs" / "x" / "summary.json").read_text())["seed"] == 7
    assert invoke(*COMPARE, "-o", "cmp").exit_code == 0
    assert json.loads((workdir / "cmp" / MARKER).read_text())["kind"] == "compare"
    r = invoke(*COMPARE, "-o", "cmp", "--force")
    assert r.exit_code == 0, r.output
    # a run directory is not a comparison and is not swapped for one silently... but both are
    # tcplab's, so replacing one by the other is allowed:
    assert invoke(*RUN, "-o", "cmp", "--force").exit_code == 0
    assert (workdir / "model.py").exists() and (workdir / "runs" / "earlier").is_dir()


def test_force_refuses_a_symlink(workdir, patched_core):
    assert invoke(*RUN, "-o", "runs/real").exit_code == 0
    os.symlink(workdir / "runs" / "real", workdir / "link")
    _one_error_line(invoke(*RUN, "-o", "link", "--force"), "is a symbolic link")
    assert (workdir / "runs" / "real" / "summary.json").is_file()


def test_run_directory_written_before_the_marker_is_recognised(workdir, patched_core):
    assert invoke(*RUN, "-o", "runs/old").exit_code == 0
    old = workdir / "runs" / "old"
    for name in (MARKER, "metadata.json", "scenario.yaml"):  # what an older tcplab wrote
        (old / name).unlink()
    assert invoke(*RUN, "-o", "runs/old", "--force").exit_code == 0
    assert (old / MARKER).is_file()


def test_api_write_is_guarded_too(workdir, fake):
    import tcplab
    from tcplab.errors import ScenarioError

    result = tcplab.run("builtin:cubic-vs-bbr-lossy", overrides=["duration=1s"], core=fake)
    with pytest.raises(ScenarioError, match="current directory"):
        result.write(".", overwrite=True)
    with pytest.raises(ScenarioError, match="parent of the current directory"):
        result.write("runs/../..", overwrite=True)
    assert (workdir / "model.py").exists()


def test_a_scenario_named_dot_cannot_replace_runs(workdir, patched_core):
    # `runs/.` is what a scenario named "." gave as its default output directory: it is
    # runs/ itself, which holds other runs and is not a run directory.
    (workdir / "runs" / "earlier" / "summary.json").write_text("{}")
    before = _snapshot(workdir)
    _one_error_line(invoke(*RUN, "-o", "runs/.", "--force"), "not a directory written by tcplab")
    assert _snapshot(workdir) == before

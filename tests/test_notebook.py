"""The notebooks in docs/notebooks/ run top to bottom and are stored without outputs.

Each notebook is executed with nbclient in the kernel named ``python3`` from the environment
running the tests (``make setup``'s ``.venv``: ipykernel's own kernel spec, which starts
``sys.executable``), in a temporary working directory. A failing cell fails the test with the
cell and its traceback (nbclient's CellExecutionError). Also checked: the kernel imported the
tcplab being tested (not another install), every cell that draws a figure shows one, and no
cell writes to stderr (a warning in a notebook is a bug in the docs), and the kernel's state
after the last cell is what the notebook's text promises (``STATE_PROBES``: the runs and the
sweep's points x seeds).

nbclient, nbformat and ipykernel come with the ``test`` extra; without them (a bare install)
the execution test is skipped with the reason, and with ``CI=true`` it fails instead.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

from conftest import in_ci

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "docs" / "notebooks").glob("*.ipynb"))
STRIP = "python3 docs/notebooks/strip_outputs.py docs/notebooks/*.ipynb"
#: seconds one cell may take (the notebooks are meant to run in well under a minute in all)
CELL_TIMEOUT_S = 120

#: notebook -> (an expression evaluated in the kernel after the last cell, what it must give):
#: what each notebook promises in its text
STATE_PROBES = {
    # two runs (CUBIC, BBR) of one flow; a sweep of 2 values x 2 seeds, every run ok, one flow each
    "tcplab-python.ipynb": (
        '{"runs": sorted(runs), "flows": len(flows), "sweep_rows": len(table), '
        '"sweep_ok": int((table["status"] == "ok").sum()), "cc": sorted(table["flows.0.cc"].unique()), '
        '"seeds": sorted(int(s) for s in table["seed"].unique())}',
        {"runs": ["bbr", "cubic"], "flows": 2, "sweep_rows": 4, "sweep_ok": 4, "cc": ["bbr", "cubic"], "seeds": [1, 2]},
    ),
}

sys.path.insert(0, str(ROOT / "docs" / "notebooks"))
import strip_outputs  # noqa: E402


def _need(module: str):
    try:
        return importlib.import_module(module)
    except ImportError as e:
        message = f"{module} is not installed (pip install -e '.[test]'): {e}"
        if in_ci():
            pytest.fail(f"CI=true but {message}")
        pytest.skip(message)


def test_the_python_notebook_is_there():
    assert ROOT / "docs" / "notebooks" / "tcplab-python.ipynb" in NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_stored_without_outputs(path: Path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    dirty = [
        i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code" and (c["outputs"] or c["execution_count"])
    ]
    assert not dirty, f"{path.name}: cells {dirty} have outputs; strip them: {STRIP}"
    assert strip_outputs.text_of(strip_outputs.stripped(json.loads(path.read_text(encoding="utf-8")))) == (
        path.read_text(encoding="utf-8")
    ), f"{path.name}: not in stripped form; run {STRIP}"


def test_strip_outputs_clears_what_a_run_leaves(tmp_path: Path):
    run = {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": 3,
                "id": "a",
                "metadata": {"execution": {"iopub.status.busy": "2026-11-24T10:00:00Z"}, "tags": ["keep"]},
                "outputs": [{"output_type": "stream", "name": "stdout", "text": ["x\n"]}],
                "source": ["print('x')"],
            },
            {"cell_type": "markdown", "id": "b", "metadata": {}, "source": ["# t"]},
        ],
        "metadata": {"kernelspec": {"name": "python3"}, "widgets": {"state": {}}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = tmp_path / "n.ipynb"
    path.write_text(json.dumps(run), encoding="utf-8")
    assert strip_outputs.main(["--check", str(path)]) == 1
    assert json.loads(path.read_text(encoding="utf-8")) == run  # --check writes nothing
    assert strip_outputs.main([str(path)]) == 0
    nb = json.loads(path.read_text(encoding="utf-8"))
    code = nb["cells"][0]
    assert code["outputs"] == [] and code["execution_count"] is None
    assert code["metadata"] == {"tags": ["keep"]} and code["source"] == ["print('x')"]
    assert "widgets" not in nb["metadata"] and nb["cells"][1] == run["cells"][1]
    assert strip_outputs.main(["--check", str(path)]) == 0


def _outputs(cell) -> list:
    return cell.get("outputs", []) if cell.cell_type == "code" else []


@pytest.mark.engine
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path: Path, real_core, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    nbclient = _need("nbclient")
    nbformat = _need("nbformat")
    _need("ipykernel")
    import tcplab

    # jupyter_core warns (DeprecationWarning, an error under this suite's filterwarnings)
    # until the platform's standard directories are chosen explicitly
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    nb = nbformat.read(path, as_version=4)
    n_cells = len(nb.cells)
    probe = "import sys, tcplab\nprint(sys.prefix)\nprint(tcplab.__file__)"
    if path.name in STATE_PROBES:
        probe += f"\nimport json\nprint(json.dumps({STATE_PROBES[path.name][0]}))"
    nb.cells.append(nbformat.v4.new_code_cell(probe))
    client = nbclient.NotebookClient(
        nb, kernel_name="python3", timeout=CELL_TIMEOUT_S, resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()

    prefix, module = "".join(o["text"] for o in nb.cells[-1].outputs).split()[:2]
    assert prefix == sys.prefix, "the kernel python3 is not this environment's"
    assert Path(module) == Path(tcplab.__file__), "the kernel imported another tcplab"
    cells = nb.cells[:n_cells]
    assert all(c.execution_count for c in cells if c.cell_type == "code")
    stderr = [(i, o["text"]) for i, c in enumerate(cells) for o in _outputs(c) if o.get("name") == "stderr"]
    assert not stderr, f"cells wrote to stderr (warnings?): {stderr}"
    for i, c in enumerate(cells):
        if "plt.subplots" in "".join(c.source):
            assert any("image/png" in o.get("data", {}) for o in _outputs(c)), f"cell {i} draws no figure"
    if path.name in STATE_PROBES:
        state = json.loads("".join(o["text"] for o in nb.cells[-1].outputs).splitlines()[2])
        assert state == STATE_PROBES[path.name][1]

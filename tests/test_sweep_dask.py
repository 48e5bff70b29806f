"""tcplab sweep on a Dask cluster: a distributed.LocalCluster (2 worker processes, one thread
each) started once for the module, against the local pool on the same sweep.
"""

from __future__ import annotations

import sys

import pandas as pd
import pytest
from typer.testing import CliRunner

from tcplab.cli import app
from tcplab.errors import ScenarioError
from tcplab.sweep import load_sweep, plan_sweep, run_sweep
from tcplab.sweep.executors import run_point

distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed (pip install '.[sweep]')")

LOSSY = "builtin:cubic-vs-bbr-lossy"
GRID = ["flows.0.cc=cubic,bbr", "links.1.loss=0.5%,1%"]


@pytest.fixture(scope="module")
def cluster():
    # LocalCluster logs and warns from its own threads; none of it is ours to fail on
    with _quiet():
        cl = distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
        )
    try:
        yield cl.scheduler_address
    finally:
        with _quiet():
            cl.close()


class _quiet:
    def __enter__(self):
        import warnings

        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *exc):
        self._w.__exit__(*exc)


@pytest.mark.engine
def test_dask_and_local_pool_give_identical_tables(tmp_path, cluster, real_core):
    plan = plan_sweep(LOSSY, GRID, seeds=3, overrides=["duration=2s"])
    with _quiet():
        on_dask = run_sweep(plan, tmp_path / "dask", dask=cluster, plots=False)
    local = run_sweep(plan, tmp_path / "local", jobs=2, plots=False)
    assert len(local.table) == 2 * 2 * 3 and set(local.table["status"]) == {"ok"}
    pd.testing.assert_frame_equal(on_dask.table, local.table)
    assert (tmp_path / "dask" / "sweep.parquet").read_bytes() == (tmp_path / "local" / "sweep.parquet").read_bytes()


@pytest.mark.engine
def test_cli_dask_sweep(tmp_path, cluster, real_core):
    out = tmp_path / "sw"
    with _quiet():
        r = CliRunner().invoke(
            app,
            [
                "sweep",
                LOSSY,
                "--grid",
                "flows.0.cc=cubic,bbr",
                "--seeds",
                "2",
                "--set",
                "duration=1s",
                "-o",
                str(out),
                "--dask",
                cluster,
                "--no-plots",
            ],
        )
    assert r.exit_code == 0, r.output
    assert "4 ok, 0 failed" in r.output
    assert list(load_sweep(out).table["cc"]) == ["cubic", "cubic", "bbr", "bbr"]


def _fails_for_bbr(job):
    """A task that raises on the worker for the bbr runs (pickled by value: the workers do
    not import the tests)."""
    if "flows.0.cc=bbr" in job.overrides:
        raise RuntimeError("injected failure on the worker")
    return run_point(job)


@pytest.mark.engine
def test_a_task_error_on_dask_fails_only_its_run(tmp_path, cluster, real_core):
    import cloudpickle

    from tcplab.sweep.dask import DaskExecutor

    cloudpickle.register_pickle_by_value(sys.modules[__name__])

    class Failing(DaskExecutor):
        def map_unordered(self, jobs, fn):
            return super().map_unordered(jobs, _fails_for_bbr)

    try:
        plan = plan_sweep(LOSSY, ["flows.0.cc=cubic,bbr"], seeds=2, overrides=["duration=1s"])
        with _quiet():
            res = run_sweep(plan, tmp_path / "out", executor=Failing(cluster), plots=False)
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    t = res.table
    assert list(t["status"]) == ["ok", "ok", "failed", "failed"]
    assert t["error"].iloc[2] == "dask: RuntimeError: injected failure on the worker"


@pytest.mark.engine
def test_workers_with_another_engine_are_refused(tmp_path, cluster, real_core, monkeypatch):
    import tcplab.sweep.keys

    plan = plan_sweep(LOSSY, ["flows.0.cc=cubic,bbr"], seeds=1, overrides=["duration=1s"])
    monkeypatch.setattr(tcplab.sweep.keys, "engine_version", lambda core=None: "9.9.9")
    with pytest.raises(ScenarioError) as err, _quiet():
        run_sweep(plan, tmp_path / "out", dask=cluster, plots=False)
    assert str(err.value).startswith("--dask: worker ")
    assert "engine " in str(err.value) and "this tcplab engine 9.9.9" in str(err.value)
    assert not (tmp_path / "out").exists()


def test_an_unreachable_scheduler_is_a_one_line_error(tmp_path):
    from tcplab.sweep.dask import DaskExecutor

    with pytest.raises(ScenarioError) as err, _quiet():
        DaskExecutor("tcp://127.0.0.1:9", timeout_s=1)
    assert str(err.value).startswith("--dask: nothing listens at tcp://127.0.0.1:9")
    assert "\n" not in str(err.value)


@pytest.mark.engine
def test_a_worker_address_is_not_a_scheduler(tmp_path, cluster):
    """A worker answers Dask's handshake too: its identity says what it is (tests/
    test_hostile_sweep.py has the addresses where nothing Dask answers)."""
    from tcplab.sweep.dask import DaskExecutor

    with _quiet(), distributed.Client(cluster) as client:
        worker = sorted(client.scheduler_info()["workers"])[0]
    with pytest.raises(ScenarioError) as err, _quiet():
        DaskExecutor(worker, timeout_s=5)
    assert str(err.value).startswith(f"--dask: {worker} answers but is not a Dask scheduler (Worker)")
    assert "\n" not in str(err.value)


@pytest.mark.engine
def test_recommend_scenario_form_on_dask_names_the_same_setting_as_locally(tmp_path, cluster, real_core):
    """`tcplab recommend SCENARIO ... --dask ADDRESS` runs its sweep on the cluster: the same
    recommendation and sweep table as with the local pool (BBR over CUBIC for goodput on the
    lossy 100 ms path, the issue's model case)."""
    import json

    args = [
        "recommend",
        LOSSY,
        "--set",
        "duration=20s",
        "--choose",
        "flows.0.cc=cubic,bbr",
        "--over",
        "links.1.loss=1%",
        "--seeds",
        "1",
        "--maximize",
        "goodput",
        "--json",
    ]
    with _quiet():
        on_dask = CliRunner().invoke(app, [*args, "-o", str(tmp_path / "dask"), "--dask", cluster])
    local = CliRunner().invoke(app, [*args, "-o", str(tmp_path / "local"), "--jobs", "2"])
    assert on_dask.exit_code == 0 and local.exit_code == 0, (on_dask.output, local.output)
    rec_dask = json.loads((tmp_path / "dask" / "recommend.json").read_text())
    rec_local = json.loads((tmp_path / "local" / "recommend.json").read_text())
    assert rec_dask["recommendation"] == rec_local["recommendation"] == {"flows.0.cc": "bbr"}
    a = (tmp_path / "dask" / "sweep" / "sweep.parquet").read_bytes()
    assert a == (tmp_path / "local" / "sweep" / "sweep.parquet").read_bytes()

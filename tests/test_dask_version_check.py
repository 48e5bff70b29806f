"""``tcplab sweep --dask``: the workers' version check runs off their event loop and still
refuses a worker whose tcplab or engine differs.

Before: ``client.run(worker_versions)``; distributed unpickles the function (by reference:
``import tcplab.sweep.dask``) and calls it (the engine's version) on the worker's event loop,
which answered nobody meanwhile (7.7 s seen; distributed logs "Event loop was unresponsive").

Where an import runs is observed, not timed: a finder first on the worker's ``sys.meta_path``
records each tcplab module imported and whether an event loop was running in the importing
thread (the loop's own thread is the only one with a running loop). It is installed with the
builtins ``exec``/``eval`` through ``client.run``, so the test itself imports nothing of
tcplab on the worker.
"""

from __future__ import annotations

import pytest

from tcplab.errors import ScenarioError

distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed (pip install '.[sweep]')")

_RECORD_TCPLAB_IMPORTS = """
import asyncio, sys

sys.tcplab_imports = []

class _Watch:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.split(".")[0] == "tcplab":
            try:
                on_loop = asyncio.get_running_loop() is not None
            except RuntimeError:
                on_loop = False
            sys.tcplab_imports.append((name, on_loop))
        return None  # the next finder imports it

sys.meta_path.insert(0, _Watch)
"""


class _quiet:
    """LocalCluster warns and logs from its own threads; none of it is ours to fail on."""

    def __enter__(self):
        import warnings

        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *exc):
        self._w.__exit__(*exc)


@pytest.fixture
def fresh_worker():
    """A LocalCluster of one new worker process (tcplab not imported there yet) and a client."""
    with _quiet():
        cluster = distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
        )
        client = distributed.Client(cluster, set_as_default=False)
    try:
        yield cluster.scheduler_address, client
    finally:
        with _quiet():
            client.close()
            cluster.close()


def _on_worker(client, expression: str):
    (value,) = client.run(eval, expression).values()
    return value


@pytest.mark.engine
def test_the_version_check_imports_tcplab_off_the_workers_event_loop(fresh_worker, real_core):
    from tcplab.sweep.dask import DaskExecutor

    address, client = fresh_worker
    assert _on_worker(client, "'tcplab' in __import__('sys').modules") is False
    client.run(exec, _RECORD_TCPLAB_IMPORTS, {})
    with _quiet():
        executor = DaskExecutor(address, timeout_s=60)
    executor.close()
    assert executor.workers == 1
    imports = _on_worker(client, "list(__import__('sys').tcplab_imports)")
    assert ("tcplab.sweep.dask", False) in imports, imports  # the check ran on the worker, in a thread
    on_loop = [name for name, loop in imports if loop]
    assert on_loop == [], f"imported on the worker's event loop: {on_loop}"


@pytest.mark.engine
@pytest.mark.parametrize(
    "patch, what",
    [
        ("import tcplab.version as v; v.__version__ = '0.0.0+other'", "tcplab 0.0.0+other"),
        ("import tcplab.sweep.keys as k; k.engine_version = lambda core=None: '9.9.9'", "engine 9.9.9"),
    ],
    ids=["tcplab", "engine"],
)
def test_a_worker_of_another_version_is_still_refused(fresh_worker, real_core, patch, what):
    from tcplab import __version__
    from tcplab.sweep.dask import DaskExecutor
    from tcplab.sweep.keys import engine_version

    address, client = fresh_worker
    client.run(exec, patch, {})
    with pytest.raises(ScenarioError) as err, _quiet():
        DaskExecutor(address, timeout_s=60)
    (worker,) = client.scheduler_info()["workers"]
    ours = f"tcplab {__version__}" if what.startswith("tcplab") else f"engine {engine_version()}"
    assert str(err.value).startswith(f"--dask: worker {worker} runs {what}, this tcplab {ours}"), str(err.value)

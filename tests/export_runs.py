"""Small real runs shared by the export tests (tests/test_export_*.py), each simulated once
per test module: two bulk flows (CUBIC and BBR) over a 10 Mbit/s, 20 ms RTT bottleneck, and
the built-in maerts scenario (a maerts flow and a bidir pair: both directions)."""

from __future__ import annotations

import importlib
import shutil

import pytest

from conftest import compiled_engine, in_ci

TWO_BULK = {
    "name": "two-bulk",
    "seed": 3,
    "duration": "4s",
    "sample_interval": "100ms",
    "hosts": {"server": {}, "client": {}},
    "routers": ["r1"],
    "links": [
        {"between": ["client", "r1"], "rate": "100Mbit", "delay": "1ms"},
        {
            "between": ["r1", "server"],
            "rate": "10Mbit",
            "delay": "9ms",
            "queue": {"qdisc": "pfifo", "limit": "1bdp"},
        },
    ],
    "flows": [
        {"name": "a", "from": "client", "to": "server", "cc": "cubic"},
        {"name": "b", "from": "client", "to": "server", "cc": "bbr"},
    ],
}


def engine():
    """tcplab._core, skipped when it is not built (a failure with CI=true)."""
    return compiled_engine()


def tool(name: str) -> str:
    """The path of a Debian tool, skipped when absent (a failure with CI=true: .ci/run installs it)."""
    path = shutil.which(name)
    if path is None:
        if in_ci():
            pytest.fail(f"CI=true but {name} is not installed (.ci/run installs it)")
        pytest.skip(f"{name} is not installed (apt-get install {name}; .ci/run does as root)")
    return path


def flent_module():
    """flent (the test extra pins it), skipped when absent (a failure with CI=true)."""
    try:
        return importlib.import_module("flent.resultset")
    except ImportError as e:
        if in_ci():
            pytest.fail(f"CI=true but flent is not installed (pip install -e '.[test]'): {e}")
        pytest.skip(f"flent is not installed: {e}")


def run_dir(tmp_path_factory, scenario, name: str, overrides=()):
    """Simulate ``scenario`` and write its run directory; (Result, directory)."""
    import tcplab

    core = engine()
    result = tcplab.run(scenario, overrides=list(overrides), core=core)
    out = result.write(tmp_path_factory.mktemp(name) / "run", plots=False)
    return result, out

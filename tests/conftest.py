"""Shared fixtures: the fake engine, the real engine (skipped when not built), scenario files.

In CI (``CI=true`` in the environment, as CI services set it and ``.ci/run`` does) a missing
compiled engine is a failure, not a skip: the engine tests must run there.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parent))  # for `import fake_core`

import fake_core  # noqa: E402

BASE_SCENARIO = {
    "name": "t",
    "duration": "10s",
    "hosts": {"server": {}, "client": {}},
    "routers": ["r1"],
    "links": [
        {"between": ["server", "r1"], "rate": "10Mbit", "delay": "5ms"},
        {"between": ["r1", "client"], "rate": "10Mbit", "delay": "5ms"},
    ],
    "flows": [{"from": "server", "to": "client"}],
}


@pytest.fixture
def base_scenario() -> dict:
    """A small valid scenario as plain data (a fresh copy per test)."""
    import copy

    return copy.deepcopy(BASE_SCENARIO)


@pytest.fixture
def write_yaml(tmp_path: Path):
    """write_yaml(data_or_text, name="s.yaml") -> Path of a scenario file in tmp_path."""

    def write(data: dict | str, name: str = "s.yaml") -> Path:
        path = tmp_path / name
        path.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        return path

    return write


@pytest.fixture
def fake() -> fake_core.FakeCore:
    """A fresh engine double (records its calls)."""
    return fake_core.FakeCore()


@pytest.fixture
def patched_core(monkeypatch: pytest.MonkeyPatch, fake: fake_core.FakeCore) -> fake_core.FakeCore:
    """Make code that imports the engine (the CLI, tcplab.run without core=) get the double."""
    import tcplab.engine

    monkeypatch.setattr(tcplab.engine, "import_core", lambda: fake)
    return fake


def in_ci() -> bool:
    """True when running under CI (``CI`` set to anything but empty/0/false)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def compiled_engine():
    """The compiled engine, tcplab._core; the calling test (or fixture) is skipped when it is
    not built, and fails in CI."""
    try:
        return importlib.import_module("tcplab._core")
    except ImportError as e:
        message = f"tcplab._core is not built (run `make setup`): {e}"
        if in_ci():
            pytest.fail(f"CI=true but the engine does not import: {message}")
        pytest.skip(message)


@pytest.fixture
def real_core():
    """The compiled engine; skipped when tcplab._core is not built, a failure in CI."""
    return compiled_engine()

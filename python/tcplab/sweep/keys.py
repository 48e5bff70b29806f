"""Run keys: the identity of one simulation, for resuming a sweep and sharing runs.

The model: a run is a function of its engine configuration (``Scenario.to_core()``, exactly
what ``scenario.resolved.json`` holds: every default resolved, the seed included) and of the
engine that runs it. Its key is::

    sha256(json.dumps(config, sort_keys=True, separators=(",", ":")) + "\\n" + engine_version)

in hex, first 16 characters (64 bits: a collision among a sweep's runs is out of reach).
The same configuration always has the same key, whatever overrides produced it, so two grid
points that resolve to the same configuration share one run; any change of configuration or
engine version gives another key, so a resumed sweep never reuses a stale run. The engine
version is the release plus a digest of the engine's sources (crates/tcplab-py/build.rs:
``0.1.0+3f9a0c21d4e7``), so a fix between releases changes it too.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["run_key", "canonical_config", "engine_version", "KEY_CHARS"]

#: Hex characters kept of the SHA-256.
KEY_CHARS = 16


def canonical_config(config: dict[str, Any]) -> str:
    """The configuration as canonical JSON (sorted keys, no spaces)."""
    return json.dumps(config, sort_keys=True, separators=(",", ":"), allow_nan=False)


def run_key(config: dict[str, Any], engine: str) -> str:
    """The run key of ``config`` under engine version ``engine`` (module doc)."""
    text = canonical_config(config) + "\n" + engine
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:KEY_CHARS]


def engine_version(core: Any = None) -> str:
    """The engine's version: ``core.__version__`` (the compiled ``tcplab._core`` by default;
    an engine double without one is ``"test"``)."""
    if core is None:
        from tcplab.engine import import_core

        core = import_core()
    return str(getattr(core, "__version__", None) or "test")

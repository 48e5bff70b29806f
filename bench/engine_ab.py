"""A/B of two builds of the engine on one experiment run: engine CPU time and a digest of
every output array, so a speed change shows it leaves the results byte-identical.

    # the build before, in a worktree with its own target directory (never under the checkout)
    git worktree add /tmp/before HEAD~1
    (cd /tmp/before && CARGO_TARGET_DIR=/tmp/target-before \\
        cargo build --release -p tcplab-py --features pyo3/extension-module)
    .venv/bin/python bench/engine_ab.py /tmp/target-before/release/lib_core.so \\
        python/tcplab/_core.abi3.so microburst-ring full:ring-1024

It prints, per build and in interleaved pairs (``--pairs``), the engine's CPU seconds
(``time.process_time()`` around ``_core.run()``) and the sha256 of its output without the
version string (which names the build).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.machinery
import importlib.util
import json
import time
from typing import Any

import numpy as np


def load_core(path: str) -> Any:
    loader = importlib.machinery.ExtensionFileLoader("_core", path)
    spec = importlib.util.spec_from_loader("_core", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def digest(raw: Any) -> str:
    h = hashlib.sha256()

    def walk(x: Any) -> None:
        if isinstance(x, dict):
            for k in sorted(x):
                h.update(str(k).encode())
                walk(x[k])
        elif isinstance(x, (list, tuple)):
            for v in x:
                walk(v)
        elif isinstance(x, np.ndarray):
            h.update(x.tobytes())
        else:
            h.update(repr(x).encode())

    walk(raw)
    return h.hexdigest()[:16]


def _without(obj: Any, key: str) -> Any:
    """``obj`` (a JSON tree) without ``key`` anywhere in it."""
    if isinstance(obj, dict):
        return {k: _without(v, key) for k, v in obj.items() if k != key}
    if isinstance(obj, list):
        return [_without(v, key) for v in obj]
    return obj


def config_for(core: Any, config: dict[str, Any]) -> str:
    """The run's engine config as ``core`` accepts it: a field an older build does not know
    (a feature added since, at its default) is dropped, and said so on stderr."""
    import re
    import sys

    for _ in range(20):
        text = json.dumps(config, separators=(",", ":"))
        try:
            core.validate(text) if hasattr(core, "validate") else None
            return text
        except ValueError as e:
            m = re.search(r"unknown field `([^`]+)`", str(e))
            if not m:
                raise
            print(f"note: dropping field {m.group(1)!r} this build does not know", file=sys.stderr)
            config = _without(config, m.group(1))
    raise SystemExit("too many unknown fields")


def main() -> None:
    import tcplab
    from tcplab.experiments import load

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("before", help="the engine build before (a lib_core.so)")
    p.add_argument("after", help="the engine build after")
    p.add_argument("experiment", help="an experiment name (tcplab experiments)")
    p.add_argument("run", help="MODE:LABEL, MODE quick or full, LABEL one of the experiment's runs")
    p.add_argument("--pairs", type=int, default=2)
    a = p.parse_args()
    mode, label = a.run.split(":", 1)
    e = load(a.experiment)
    run = {r.label: r for r in e.runs(mode == "quick")}[label]
    sc = tcplab.load_scenario(e.scenario_path(run.scenario), run.overrides_for(mode == "quick"))
    cores = {"before": load_core(a.before), "after": load_core(a.after)}
    configs = {name: config_for(core, sc.to_core()) for name, core in cores.items()}
    for _ in range(a.pairs):
        for name, core in cores.items():
            t0 = time.process_time()
            raw = core.run(configs[name], None)
            cpu = time.process_time() - t0
            raw.pop("version", None)
            print(f"{name:6s} {a.experiment}/{a.run}: engine CPU {cpu:.2f} s, output {digest(raw)}")


if __name__ == "__main__":
    main()

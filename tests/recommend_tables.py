"""Small sweep tables in ARCH12's SCHEMA for the recommend tests, whose answers are obvious.

``sweep_table(params, seeds, fn)``: the cartesian product of ``params`` (in order) x seeds;
``fn(values, seed)`` gives a run's flows: a dict (one flow) or a list of dicts (several), or
``None`` for a failed run. A flow dict holds flow columns (``goodput_bps``, ``rtt_p99_ms``,
...) and run-level ones (``nstat.X``, ``app.A.K``, ``run.X``); ``run.goodput_bps`` and
``run.rtt_p99_ms`` default to the sum / max over the flows, as the sweep computes them.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from tcplab.sweep.rows import FLOW_IDENTITY
from tcplab.sweep.rows import FLOW_METRICS as FLOW_COLS
from tcplab.sweep.rows import RUN_METRICS as RUN_COLS

_NUM = re.compile(r"\A([0-9.]+)\s*([A-Za-z%]*)\Z")


def sweep_table(
    params: Mapping[str, Sequence[str]],
    seeds: Sequence[int],
    fn: Callable[[dict[str, str], int], Any],
) -> pd.DataFrame:
    names = list(params)
    numeric = [
        p
        for p in names
        if all(_NUM.match(v) for v in params[p]) and len({_NUM.match(v).group(2) for v in params[p]}) == 1
    ]
    rows: list[dict[str, Any]] = []
    extra: set[str] = set()
    for point, combo in enumerate(itertools.product(*(params[p] for p in names))):
        values = dict(zip(names, combo, strict=True))
        for seed in seeds:
            key = f"k{point:03d}s{seed}"
            base: dict[str, Any] = {"point": point, "seed": seed, "run": key}
            out = fn(dict(values), seed)
            if out is None:
                row = {**base, "status": "failed", "error": "engine: boom", **values, "flow_index": -1, "flow": None}
                for p in numeric:
                    row[f"{p}#value"] = float(_NUM.match(values[p]).group(1))
                rows.append(row)
                continue
            flows = [out] if isinstance(out, Mapping) else list(out)
            run_level: dict[str, Any] = {}
            for f in flows:
                run_level.update({k: v for k, v in f.items() if k.startswith(("run.", "nstat.", "app."))})
            run_level.setdefault("run.goodput_bps", sum(f.get("goodput_bps", math.nan) for f in flows))
            run_level.setdefault("run.rtt_p99_ms", max(f.get("rtt_p99_ms", math.nan) for f in flows))
            for i, f in enumerate(flows):
                row = {**base, "status": "ok", "error": None, **values}
                for p in numeric:
                    row[f"{p}#value"] = float(_NUM.match(values[p]).group(1))
                row.update(
                    {
                        "flow_index": i,
                        "flow": f.get("flow", f"f{i}"),
                        "from": "a",
                        "to": "b",
                        "cc": f.get("cc", "cubic"),
                        "app": f.get("app", "bulk"),
                    }
                )
                for c in FLOW_COLS:
                    row[c] = float(f.get(c, math.nan))
                for c in RUN_COLS:
                    row[c] = float(run_level.get(c, math.nan))
                for k, v in run_level.items():
                    if k.startswith(("nstat.", "app.")):
                        row[k] = float(v)
                        extra.add(k)
                rows.append(row)
    head = ["point", "seed", "run", "status", "error", *names]
    head += [f"{p}#value" for p in numeric]
    cols = head + ["flow_index", *FLOW_IDENTITY, *FLOW_COLS, *RUN_COLS]
    cols += sorted(c for c in extra if c.startswith("nstat.")) + sorted(c for c in extra if c.startswith("app."))
    frame = pd.DataFrame(rows)
    for c in cols:
        if c not in frame.columns:
            frame[c] = math.nan
    frame = frame[cols]
    frame["error"] = frame["error"].astype("string")
    for p in names:
        frame[p] = frame[p].astype("string")
    return frame.reset_index(drop=True)

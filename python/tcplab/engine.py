"""The bridge to the simulator: JSON in, columns out.

The model: the Rust engine (``tcplab._core``) takes the resolved scenario as JSON
(:meth:`tcplab.scenario.Scenario.to_core`) and returns a plain dict: per-flow, per-host and
per-link totals, an invariant check (every data packet delivered, dropped with a reason, or
still in flight), and column stores of NumPy arrays, one row per (sample time, flow), per
(sample time, link) and, when the engine reports it (``host_series``), per (sample time, host
with a CPU or NIC model). This module calls it and turns the columns into pandas DataFrames
with the documented dtypes; nothing here interprets the numbers (see :mod:`tcplab.results`).

The engine releases the GIL while simulating and calls ``progress(sim_now_ns, duration_ns)``
from time to time. Its ``ValueError`` (a configuration it refuses, naming the JSON field) and
``RuntimeError`` (an internal failure) become :class:`~tcplab.errors.EngineError`, its
``MemoryError`` (an allocation that failed; the engine never aborts on one)
:class:`~tcplab.errors.EngineMemoryError`; ``KeyboardInterrupt`` passes. Settings the engine
accepts but that defeat the run (a receive buffer too small for one segment) come back as
``warnings`` and are issued as :class:`~tcplab.errors.EngineWarning` (the CLI prints them).

Applications (``apps``, optional: engines before issue 9 do not report it): one entry per app
instance of the configuration, ``{"name", "kind", "summary": {...}, "tables": {TABLE: {COLUMN:
ndarray | list[str]}}}``. Each table becomes a DataFrame (string columns as Python ``str``);
summaries stay the nested dicts the engine gives (:mod:`tcplab.results.apps` reads them).

Packet capture (``capture``, optional: None unless the config asks for one): one flow's
packets at one of its hosts, ``{"flow", "at", "node", "ep", "truncated", "flag_bits",
"columns"}``; the columns are checked against :data:`tcplab.columns.CAPTURE_DTYPES` and
become :class:`Capture` (``EngineOutput.capture``). :mod:`tcplab.exports.pcap` writes them as
a pcap file.

The engine's ``invariant`` holds two end-of-run checks: packet conservation (``ok``,
``message``, the counts) and, under ``rtt_floor``, that no RTT sample fell below its path's
propagation round trip; ``ok`` is false when either fails.

Tests pass their own ``core`` (an object with a ``run(config_json, progress)`` function); the
package itself only ever uses the compiled module.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import pandas as pd

from tcplab.columns import CAPTURE_DTYPES, HOST_DTYPES, QUEUE_DTYPES, TIMESERIES_DTYPES
from tcplab.errors import EngineError, EngineMemoryError, EngineWarning

__all__ = [
    "Capture",
    "Core",
    "EngineOutput",
    "import_core",
    "run_core",
    "TIMESERIES_DTYPES",
    "QUEUE_DTYPES",
    "HOST_DTYPES",
    "CAPTURE_DTYPES",
]

ProgressFn = Callable[[int, int], None]

_TOP_KEYS = (
    "version",
    "events",
    "packets",
    "flows",
    "hosts",
    "links",
    "invariant",
    "timeseries",
    "queue_timeseries",
    "names",
)


class Core(Protocol):
    """What the engine module provides."""

    def run(self, config_json: str, progress: ProgressFn | None, /) -> dict: ...


@dataclass
class Capture:
    """One flow's packets as tcpdump on one of its hosts saw them (module doc)."""

    #: flow index in the engine config, and the capture side: "sender" or "receiver"
    flow: int
    at: str
    #: the capture host (node index) and its endpoint (even: the flow's client)
    node: int
    ep: int
    #: packets seen but not kept (beyond ``max_packets``)
    truncated: int
    #: one row per packet in time order (:data:`tcplab.columns.CAPTURE_DTYPES`)
    packets: pd.DataFrame
    #: the engine's flag bits by name: ``syn``, ``dsack``, ``retrans``, ``fin``
    flag_bits: dict[str, int]


@dataclass
class EngineOutput:
    """The engine's answer, with the column stores as DataFrames."""

    raw: dict[str, Any]
    timeseries: pd.DataFrame
    queues: pd.DataFrame
    #: per (sample, host with a CPU or NIC model); empty when the engine reports none
    host_series: pd.DataFrame = field(default_factory=lambda: _empty(HOST_DTYPES))
    version: str = ""
    events: int = 0
    packets: int = 0
    flows: list[dict[str, Any]] = field(default_factory=list)
    hosts: list[dict[str, Any]] = field(default_factory=list)
    links: list[dict[str, Any]] = field(default_factory=list)
    invariant: dict[str, Any] = field(default_factory=dict)
    names: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    #: per app instance: ``{"name", "kind", "summary": dict, "tables": {name: DataFrame}}``
    apps: list[dict[str, Any]] = field(default_factory=list)
    #: the packet capture, when the config asked for one
    capture: Capture | None = None


def import_core() -> Core:
    """The compiled engine, or an ImportError that says how to build it."""
    try:
        from tcplab import _core  # type: ignore[attr-defined]
    except ImportError as e:
        raise ImportError(
            "tcplab's simulation engine (the compiled module tcplab._core) is not installed. "
            "Install tcplab from its source tree with `pip install .`, or for development run "
            f"`maturin develop --release` there. ({e})"
        ) from e
    return _core  # type: ignore[return-value]


def run_core(config: dict[str, Any], *, progress: ProgressFn | None = None, core: Core | None = None) -> EngineOutput:
    """Run one simulation of the resolved ``config`` and return its output."""
    engine = core if core is not None else import_core()
    try:
        raw = engine.run(json.dumps(config, separators=(",", ":"), allow_nan=False), progress)
    except MemoryError as e:
        raise EngineMemoryError(" ".join(str(e).splitlines()) or "out of memory") from e
    except (ValueError, RuntimeError) as e:
        raise EngineError(" ".join(str(e).splitlines()) or e.__class__.__name__) from e
    output = parse_output(raw)
    for text in output.warnings:
        warnings.warn(text, EngineWarning, stacklevel=2)
    return output


def _columns(store: Any, dtypes: dict[str, str], what: str) -> pd.DataFrame:
    if not isinstance(store, dict):
        raise EngineError(f"engine output: {what} is not a mapping of columns")
    missing = [c for c in dtypes if c not in store]
    if missing:
        raise EngineError(f"engine output: {what} lacks column(s) {', '.join(missing)}")
    columns: dict[str, np.ndarray] = {}
    for name, array in store.items():
        dtype = dtypes.get(name)
        try:
            columns[name] = np.asarray(array, dtype=dtype) if dtype else np.asarray(array)
        except (TypeError, ValueError, OverflowError) as e:
            raise EngineError(f"engine output: {what}.{name}: {e}") from e
    return _frame(columns, what)


def _frame(columns: dict[str, np.ndarray], what: str) -> pd.DataFrame:
    """Columns as a DataFrame, checked: each one-dimensional, all of one length."""
    length = None
    for name, values in columns.items():
        if values.ndim != 1:
            raise EngineError(f"engine output: {what}.{name} is not one-dimensional")
        if length is None:
            length = len(values)
        elif len(values) != length:
            raise EngineError(f"engine output: {what}.{name} has {len(values)} rows, the columns before it {length}")
    return pd.DataFrame(columns, copy=False)


def _empty(dtypes: dict[str, str]) -> pd.DataFrame:
    return pd.DataFrame({c: np.array([], dtype=d) for c, d in dtypes.items()})


def parse_output(raw: Any) -> EngineOutput:
    """Check the engine's dict against the contract and convert its column stores."""
    if not isinstance(raw, dict):
        raise EngineError(f"engine output: expected a dict, got {type(raw).__name__}")
    missing = [k for k in _TOP_KEYS if k not in raw]
    if missing:
        raise EngineError(f"engine output: missing key(s) {', '.join(missing)}")
    return EngineOutput(
        raw=raw,
        timeseries=_columns(raw["timeseries"], TIMESERIES_DTYPES, "timeseries"),
        queues=_columns(raw["queue_timeseries"], QUEUE_DTYPES, "queue_timeseries"),
        # optional: engines before the host CPU/NIC models do not report it
        host_series=_columns(raw["host_series"], HOST_DTYPES, "host_series")
        if raw.get("host_series") is not None
        else _empty(HOST_DTYPES),
        version=str(raw["version"]),
        events=int(raw["events"]),
        packets=int(raw["packets"]),
        flows=list(raw["flows"]),
        hosts=list(raw["hosts"]),
        links=list(raw["links"]),
        invariant=dict(raw["invariant"]),
        names=dict(raw["names"]),
        warnings=[str(w) for w in raw.get("warnings", [])],
        apps=_apps(raw.get("apps")),
        capture=_capture(raw.get("capture")),
    )


_CAPTURE_KEYS = ("flow", "at", "node", "ep", "truncated", "flag_bits", "columns")
_FLAG_NAMES = ("syn", "dsack", "retrans", "fin")


def _capture(raw: Any) -> Capture | None:
    """The ``capture`` entry, checked: its keys, its columns and dtypes, its flag names."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise EngineError("engine output: capture is not a mapping")
    missing = [k for k in _CAPTURE_KEYS if k not in raw]
    if missing:
        raise EngineError(f"engine output: capture lacks {', '.join(missing)}")
    if raw["at"] not in ("sender", "receiver"):
        raise EngineError(f"engine output: capture.at is {raw['at']!r}, expected sender or receiver")
    bits = raw["flag_bits"]
    if not isinstance(bits, dict) or any(name not in bits for name in _FLAG_NAMES):
        raise EngineError(f"engine output: capture.flag_bits lacks one of {', '.join(_FLAG_NAMES)}")
    packets = _columns(raw["columns"], CAPTURE_DTYPES, "capture.columns")
    if (packets["dir"] > 1).any() or (packets["num_sacks"] > 3).any():
        raise EngineError("engine output: capture.columns: dir above 1 or num_sacks above 3")
    return Capture(
        flow=int(raw["flow"]),
        at=str(raw["at"]),
        node=int(raw["node"]),
        ep=int(raw["ep"]),
        truncated=int(raw["truncated"]),
        packets=packets,
        flag_bits={k: int(bits[k]) for k in _FLAG_NAMES},
    )


def _app_table(store: Any, what: str) -> pd.DataFrame:
    """One app table: numeric columns as the engine typed them, string columns as ``str``
    (an empty string column keeps object dtype, not NumPy's float of ``[]``)."""
    if not isinstance(store, dict):
        raise EngineError(f"engine output: {what} is not a mapping of columns")
    columns: dict[str, np.ndarray] = {}
    for name, array in store.items():
        if isinstance(array, (list, tuple)):
            values = np.empty(len(array), dtype=object)
            values[:] = [str(v) for v in array]
        else:
            values = np.asarray(array)
        columns[str(name)] = values
    return _frame(columns, what)


def _apps(raw: Any) -> list[dict[str, Any]]:
    """The ``apps`` list, checked: each a name, a kind, a summary mapping, tables of columns."""
    if raw is None:
        return []
    if not isinstance(raw, (list, tuple)):
        raise EngineError("engine output: apps is not a list")
    apps = []
    for i, app in enumerate(raw):
        if not isinstance(app, dict) or "name" not in app or "kind" not in app:
            raise EngineError(f"engine output: apps.{i} lacks a name or a kind")
        summary = app.get("summary") or {}
        tables = app.get("tables") or {}
        if not isinstance(summary, dict):
            raise EngineError(f"engine output: apps.{i}.summary is not a mapping")
        if not isinstance(tables, dict):
            raise EngineError(f"engine output: apps.{i}.tables is not a mapping")
        apps.append(
            {
                "name": str(app["name"]),
                "kind": str(app["kind"]),
                "summary": dict(summary),
                "tables": {str(t): _app_table(cols, f"apps.{i}.tables.{t}") for t, cols in tables.items()},
            }
        )
    return apps

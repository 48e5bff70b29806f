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

The contract is declared once, in :data:`OUTPUT_SCHEMA`: every key of the engine's dict,
its type, and which keys a producer may leave out (the engines before a feature, the kernel
runs' engine-shaped output in :mod:`tcplab.kernel.measure`). :func:`parse_output` checks
every output against it; the test double (``tests/fake_core.py``) and the real engine are
tested to give all of it. The engine derives the dict from its own output types (serde in
``crates/tcplab-py``), so a field added there reaches ``EngineOutput.raw`` and the lists of
dicts here with nothing else to edit; the schema names what the front relies on.

Tests pass their own ``core`` (an object with a ``run(config_json, progress)`` function); the
package itself only ever uses the compiled module.
"""

from __future__ import annotations

import json
import numbers
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from tcplab.columns import CAPTURE_DTYPES, HOST_DTYPES, QUEUE_DTYPES, TIMESERIES_DTYPES
from tcplab.errors import EngineError, EngineMemoryError, EngineWarning

if TYPE_CHECKING:  # NumPy and pandas load with the first run, not with ``tcplab --version``
    import numpy as np
    import pandas as pd

__all__ = [
    "Capture",
    "Core",
    "EngineOutput",
    "OUTPUT_SCHEMA",
    "check_output",
    "import_core",
    "run_core",
    "TIMESERIES_DTYPES",
    "QUEUE_DTYPES",
    "HOST_DTYPES",
    "CAPTURE_DTYPES",
]

ProgressFn = Callable[[int, int], None]

# -- the contract ---------------------------------------------------------------------------
# A spec is a type (``int``: an integer, not a bool; ``float``: any real number; ``bool``,
# ``str``), a dict (a mapping with these keys), or one of the classes below.


@dataclass(frozen=True)
class Opt:
    """A key a producer may leave out (an engine from before the feature, a kernel run)."""

    spec: Any


@dataclass(frozen=True)
class Null:
    """A value that may be None."""

    spec: Any


@dataclass(frozen=True)
class ListOf:
    """A list whose elements all follow ``spec`` (they are one Rust type: the first
    :data:`CHECKED_ELEMENTS` are checked, not all 40 000 connections of story 004)."""

    spec: Any


@dataclass(frozen=True)
class MapOf:
    """A mapping of names (counters as nstat, ethtool or tc print them) to ``spec``;
    ``names``: ones it must have."""

    spec: Any
    names: tuple[str, ...] = ()


@dataclass(frozen=True)
class OneOf:
    """One of a few strings."""

    values: tuple[str, ...]


@dataclass(frozen=True)
class Columns:
    """A column store: name -> one-dimensional array (a list of ``str`` for text), each of
    the same length; ``dtypes`` the columns it must have (checked by :func:`_columns`)."""

    dtypes: Mapping[str, str] | None = None


#: Elements of a list, and entries of a mapping, whose types are checked.
CHECKED_ELEMENTS = 8

#: ``tc -s qdisc``'s counters of a qdisc (crates: net/qdisc ``QdiscStats``).
QDISC_STATS: dict[str, Any] = {
    "sent_bytes": int,
    "sent_packets": int,
    "drops": int,
    "overlimits": int,
    "requeues": int,
    "backlog_bytes": int,
    "backlog_packets": int,
    "max_backlog_packets": int,
}
#: A flow's RTT samples, us; percentiles are low edges of log-linear histogram buckets.
RTT_SUMMARY: dict[str, Any] = {
    "count": int,
    "min": int,
    "mean": float,
    "p50": int,
    "p90": int,
    "p99": int,
    "max": int,
    "relative_error": Opt(float),
}
#: ss -i's busy / rwnd_limited / sndbuf_limited, us (tcp_info's chronographs).
CHRONO: dict[str, Any] = {"busy_us": int, "rwnd_limited_us": int, "sndbuf_limited_us": int}
#: A flow's ECN state at the end (crates: tcp/ecn): ``tp->ecn_flags`` of the data sender's and
#: the data receiver's sockets (:data:`ECN_FLAGS`), the sender's ``tcp_info.tcpi_delivered_ce``
#: (packets), and a DCTCP sender's ``struct tcp_dctcp_info`` (null for other ccs).
DCTCP_INFO: dict[str, Any] = {"ce_state": int, "alpha": int, "ab_ecn": int, "ab_tot": int}
ECN: dict[str, Any] = {"sender_flags": int, "receiver_flags": int, "delivered_ce": int, "dctcp": Null(DCTCP_INFO)}
#: Linux's ``tp->ecn_flags`` bits (include/net/tcp.h, v6.12).
ECN_FLAGS = {"TCP_ECN_OK": 1, "TCP_ECN_QUEUE_CWR": 2, "TCP_ECN_DEMAND_CWR": 4, "TCP_ECN_SEEN": 8}
FLOW: dict[str, Any] = {
    "name": str,
    "src": int,
    "dst": int,
    "cc": str,
    "start_ns": int,
    "end_ns": int,
    "bytes_sent": int,
    "bytes_retrans": int,
    "bytes_acked": int,
    "bytes_received": int,
    "data_segs_out": int,
    "retrans_segs": int,
    "timeouts": int,
    "rtt_us": RTT_SUMMARY,
    "chrono": Opt(CHRONO),
    "ecn": Opt(ECN),
    "counters": MapOf(int),
}
HOST: dict[str, Any] = {
    "name": str,
    "counters": MapOf(int),
    "nic": Opt(Null({"driver": str, "rx_ring": int, "rx_queues": int, "ethtool": MapOf(int)})),
    "cpu": Opt(Null({"period_ns": int, "share": float, "steal_ns": int, "on_ns": int})),
}
LINK: dict[str, Any] = {
    "name": str,
    "from": int,
    "to": int,
    "qdisc": str,
    **QDISC_STATS,
    "loss_drops": Opt(int),
    "reorder_events": Opt(int),
    "xstats": Opt(MapOf(int)),
    "child": Opt(Null({"qdisc": str, **QDISC_STATS, "xstats": MapOf(int)})),
    "edt": Opt(ListOf({"rate_bps": int, "drops": int, "stamped": int, "passed": int})),
}
INVARIANT: dict[str, Any] = {
    "ok": bool,
    "accounting_ok": Opt(bool),
    "data_packets_sent": Opt(int),
    "data_packets_received": Opt(int),
    "dropped": Opt({"queue": int, "loss": int, "drop_list": int, "no_route": int, "nic": int}),
    "in_flight": Opt(int),
    "message": str,
    "rtt_floor": Opt({"ok": bool, "message": str}),
}
APP: dict[str, Any] = {
    "name": str,
    "kind": str,
    "summary": Opt(Null(MapOf(object))),
    "tables": Opt(Null(MapOf(Columns()))),
}
#: The flag bits a capture reports, by name (crates: capture.rs ``FlagBits``): ``ece`` and
#: ``cwr`` are the TCP header's ECN-Echo and Congestion Window Reduced bits.
FLAG_NAMES = ("syn", "dsack", "retrans", "fin", "psh", "ece", "cwr")
CAPTURE: dict[str, Any] = {
    "flow": int,
    "at": OneOf(("sender", "receiver")),
    "node": int,
    "ep": int,
    "truncated": int,
    "flag_bits": MapOf(int, FLAG_NAMES),
    "columns": Columns(CAPTURE_DTYPES),
}
#: The engine's output, ``tcplab._core.run()``'s dict: the one place Python declares it.
OUTPUT_SCHEMA: dict[str, Any] = {
    "version": str,
    "events": int,
    "packets": int,
    "host_packets": Opt(int),
    "flows": ListOf(FLOW),
    "hosts": ListOf(HOST),
    "links": ListOf(LINK),
    "invariant": INVARIANT,
    "timeseries": Columns(TIMESERIES_DTYPES),
    "queue_timeseries": Columns(QUEUE_DTYPES),
    "host_series": Opt(Null(Columns(HOST_DTYPES))),
    "names": {"ca_state": ListOf(str), "cc_mode": MapOf(ListOf(str))},
    "warnings": Opt(ListOf(str)),
    "apps": Opt(Null(ListOf(APP))),
    "capture": Opt(Null(CAPTURE)),
}


def _fail(path: str, problem: str) -> EngineError:
    return EngineError(f"engine output: {path}{' ' if path else ''}{problem}")


def _type_ok(value: Any, spec: type) -> bool:
    if spec is int:
        return isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if spec is float:
        return isinstance(value, numbers.Real) and not isinstance(value, bool)
    if spec is object:
        return True
    return isinstance(value, spec)


_TYPE_NAMES = {int: "an integer", float: "a number", bool: "a bool", str: "a string"}


def _check(value: Any, spec: Any, path: str, strict: bool) -> None:
    if isinstance(spec, Opt):
        spec = spec.spec
    if isinstance(spec, Null):
        if value is None:
            return
        spec = spec.spec
    if isinstance(spec, dict):
        if not isinstance(value, Mapping):
            raise _fail(path, "is not a mapping")
        missing = [k for k, s in spec.items() if k not in value and (strict or not isinstance(s, Opt))]
        if missing:
            raise _fail(path, f"lacks {', '.join(missing)}" if path else f"missing key(s) {', '.join(missing)}")
        for key, sub in spec.items():
            if key in value:
                _check(value[key], sub, f"{path}.{key}" if path else key, strict)
    elif isinstance(spec, ListOf):
        if not isinstance(value, (list, tuple)):
            raise _fail(path, "is not a list")
        for i, item in enumerate(value[:CHECKED_ELEMENTS]):
            _check(item, spec.spec, f"{path}.{i}", strict)
    elif isinstance(spec, MapOf):
        if not isinstance(value, Mapping):
            raise _fail(path, "is not a mapping")
        if any(name not in value for name in spec.names):
            raise _fail(path, f"lacks one of {', '.join(spec.names)}")
        for i, (key, item) in enumerate(value.items()):
            if i >= CHECKED_ELEMENTS and key not in spec.names:
                break
            _check(item, spec.spec, f"{path}.{key}", strict)
    elif isinstance(spec, OneOf):
        if value not in spec.values:
            raise _fail(path, f"is {value!r}, expected {' or '.join(spec.values)}")
    elif isinstance(spec, Columns):
        if not isinstance(value, Mapping):
            raise _fail(path, "is not a mapping of columns")
    elif not _type_ok(value, spec):
        raise _fail(path, f"is {type(value).__name__} {value!r:.40}, expected {_TYPE_NAMES.get(spec, spec.__name__)}")


def check_output(raw: Any, *, strict: bool = False) -> None:
    """Check ``raw`` against :data:`OUTPUT_SCHEMA` (keys and types; the column stores'
    columns when they become frames); :class:`~tcplab.errors.EngineError` names the first
    problem by its path. ``strict``: the optional keys too (what today's engine gives)."""
    if not isinstance(raw, Mapping):
        raise EngineError(f"engine output: expected a dict, got {type(raw).__name__}")
    _check(raw, OUTPUT_SCHEMA, "", strict)


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
    #: the engine's flag bits by name (:data:`FLAG_NAMES`: ``syn``, ``dsack``, ``retrans``,
    #: ``fin``, ``psh``, ``ece``, ``cwr``)
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
    import numpy as np

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
    import pandas as pd

    return pd.DataFrame(columns, copy=False)


def _empty(dtypes: dict[str, str]) -> pd.DataFrame:
    import numpy as np
    import pandas as pd

    return pd.DataFrame({c: np.array([], dtype=d) for c, d in dtypes.items()})


def parse_output(raw: Any) -> EngineOutput:
    """Check the engine's dict against the contract and convert its column stores."""
    check_output(raw)
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


def _capture(raw: Any) -> Capture | None:
    """The ``capture`` entry, checked (:data:`CAPTURE`): its keys, its columns and dtypes,
    its flag names."""
    if raw is None:
        return None
    _check(raw, CAPTURE, "capture", strict=False)
    bits = raw["flag_bits"]
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
        flag_bits={k: int(bits[k]) for k in FLAG_NAMES},
    )


def _app_table(store: Any, what: str) -> pd.DataFrame:
    """One app table: numeric columns as the engine typed them, string columns as ``str``
    (an empty string column keeps object dtype, not NumPy's float of ``[]``)."""
    if not isinstance(store, dict):
        raise EngineError(f"engine output: {what} is not a mapping of columns")
    import numpy as np

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
    """The ``apps`` list (checked by :data:`APP`: a name, a kind, a summary mapping, tables
    of columns), each table a DataFrame."""
    if raw is None:
        return []
    apps = []
    for i, app in enumerate(raw):
        _check(app, APP, f"apps.{i}", strict=False)  # beyond the first CHECKED_ELEMENTS too
        summary = app.get("summary") or {}
        tables = app.get("tables") or {}
        apps.append(
            {
                "name": str(app["name"]),
                "kind": str(app["kind"]),
                "summary": dict(summary),
                "tables": {str(t): _app_table(cols, f"apps.{i}.tables.{t}") for t, cols in tables.items()},
            }
        )
    return apps

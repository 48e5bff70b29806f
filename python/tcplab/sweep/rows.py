"""One run's rows of the sweep table, and the table itself (ARCH12 "The table").

The model: a sweep's table (``sweep.parquet``) is tidy: one row per (run, flow), where a
flow is a row of the run's summary.json ``flows`` (an app with more than 16 connections is
ONE aggregate row, named by the app). A run's rows carry

* the flow's identity: ``flow_index`` (its position in summary.json's flows), ``flow``,
  ``from``, ``to``, ``cc``, ``app`` (lists joined with ","; ``app`` null for a flow of no app);
* the flow's summary numbers (:data:`FLOW_METRICS`: goodput_bps, bytes_received, ...,
  payload_ceiling_bps; NaN when null);
* the run's totals, repeated on each of its rows: ``run.goodput_bps`` (sum over its flows),
  ``run.queue_drops`` and ``run.loss_drops`` (summed over links, as tc -s and the loss models
  count them), ``run.nic_ring_drops`` (receive-ring drops summed over hosts with a NIC model,
  NaN when none), ``run.cpu_steal_pct`` (the largest steal share of a host with a CPU model,
  NaN when none), ``run.rtt_p99_ms`` (the largest flow p99);
* ``nstat.NAME``: every nstat counter summed over the run's hosts (``nstat.TcpExtTCPTimeouts``);
* ``app.APP.KEY[.SUB]``: every numeric leaf of summary.json's ``apps`` (booleans as 0/1), NaN
  when null.

A worker computes these rows (:func:`rows_from_result`) and sends them back as a list of
dicts; the parent writes them as ``rows/KEY.parquet`` (:func:`write_run_rows`, pyarrow
directly: no pandas per run). They do not depend on which point asked for the run (two
points resolving to one configuration share it), so the identity columns (``point``,
``seed``, ``run``, ``status``, ``error``, the parameters) are added when the table is built
(:func:`build_table`), once, at the end.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tcplab.output_files import write_file_atomically

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from tcplab.results import Result
    from tcplab.sweep.space import Parameter, Point

__all__ = [
    "rows_from_result",
    "write_run_rows",
    "read_run_rows",
    "build_table",
    "table_to_arrow",
    "FLOW_METRICS",
    "RUN_METRICS",
    "FLOW_IDENTITY",
    "STRING_COLUMNS",
]

FLOW_IDENTITY = ("flow", "from", "to", "cc", "app")
FLOW_METRICS = (
    "goodput_bps",
    "bytes_received",
    "data_segs_out",
    "retrans_segs",
    "retrans_ratio",
    "timeouts",
    "rtt_p50_ms",
    "rtt_p90_ms",
    "rtt_p99_ms",
    "rwnd_limited_pct",
    "payload_ceiling_bps",
)
RUN_METRICS = (
    "run.goodput_bps",
    "run.queue_drops",
    "run.loss_drops",
    "run.nic_ring_drops",
    "run.cpu_steal_pct",
    "run.rtt_p99_ms",
)
#: Columns of type string in a run's rows (the others are int64 ``flow_index`` or float64).
STRING_COLUMNS = frozenset(FLOW_IDENTITY)
NAN = float("nan")


def _num(x: Any) -> float:
    if x is None or isinstance(x, str):
        return NAN
    try:
        value = float(x)
    except (TypeError, ValueError):
        return NAN
    return value if math.isfinite(value) else NAN


def _joined(x: Any) -> str | None:
    if x is None:
        return None
    if isinstance(x, (list, tuple)):
        return ",".join(str(v) for v in x)
    return str(x)


def _leaves(prefix: str, value: Any, out: dict[str, float]) -> None:
    """Every numeric (or null) leaf under ``prefix``, dotted; strings and lists skipped."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            _leaves(f"{prefix}.{k}", v, out)
    elif value is None:
        out[prefix] = NAN
    elif isinstance(value, (bool, int, float)):
        out[prefix] = _num(value)


def _ring_drops(result: Result) -> float:
    """Receive-ring drops over the run, summed over hosts with a NIC model (the last
    cumulative sample of each), NaN when no host has one."""
    if not any(h["nic"] is not None for h in result.hosts):
        return NAN
    hs = result.host_series
    if hs.empty:
        return 0.0
    last = hs.sort_values("t_ns", kind="stable").groupby("host")["rx_dropped"].last()
    return float(last.sum())


def rows_from_result(
    result: Result, point: Point | None = None, seed: int | None = None, key: str | None = None
) -> list[dict[str, Any]]:
    """The run's rows (module doc), one per summary.json flow. With ``point``/``seed``/``key``
    the identity columns ``point``, ``seed``, ``run``, ``status``, ``error`` come first
    (the sweep itself adds them when building the table instead)."""
    summary = result.summary
    app_of = dict(zip(result.flows["name"].astype(str), result.flows["app"], strict=False))
    flows = summary.get("flows") or []
    totals: dict[str, float] = {}
    goodputs = [_num(f.get("goodput_bps")) for f in flows]
    totals["run.goodput_bps"] = float(sum(g for g in goodputs if not math.isnan(g)))
    links = summary.get("links") or []
    for column, field in (("run.queue_drops", "drops"), ("run.loss_drops", "loss_drops")):
        totals[column] = float(sum(_num(link.get(field)) for link in links if link.get(field) is not None))
    totals["run.nic_ring_drops"] = _ring_drops(result)
    steals = [100.0 * float(h["cpu"]["steal_ratio"]) for h in result.hosts if h["cpu"] is not None]
    totals["run.cpu_steal_pct"] = max(steals) if steals else NAN
    p99s = [v for f in flows if not math.isnan(v := _num(f.get("rtt_p99_ms")))]
    totals["run.rtt_p99_ms"] = max(p99s) if p99s else NAN
    nstat: dict[str, float] = {}
    for counters in result.host_counters().values():
        for name, value in counters.items():
            nstat[f"nstat.{name}"] = nstat.get(f"nstat.{name}", 0.0) + float(value)
    apps: dict[str, float] = {}
    for name, app in (summary.get("apps") or {}).items():
        _leaves(f"app.{name}", {k: v for k, v in app.items() if k != "kind"}, apps)
    extra = {**{k: nstat[k] for k in sorted(nstat)}, **{k: apps[k] for k in sorted(apps)}}
    rows = []
    for index, f in enumerate(flows):
        row: dict[str, Any] = {}
        if point is not None or seed is not None or key is not None:
            row.update(
                {
                    "point": None if point is None else point.index,
                    "seed": seed,
                    "run": key,
                    "status": "ok",
                    "error": None,
                }
            )
        name = f.get("name")
        row["flow_index"] = index
        row["flow"] = None if name is None else str(name)
        row["from"] = _joined(f.get("from"))
        row["to"] = _joined(f.get("to"))
        row["cc"] = _joined(f.get("cc"))
        app = f.get("app", app_of.get(str(name)))
        row["app"] = None if app is None or (isinstance(app, float) and math.isnan(app)) else str(app)
        for metric in FLOW_METRICS:
            row[metric] = _num(f.get(metric))
        row.update(totals)
        row.update(extra)
        rows.append(row)
    return rows


def _run_schema(rows: Sequence[Mapping[str, Any]]) -> pa.Schema:
    import pyarrow as pa

    names = list(rows[0]) if rows else ["flow_index", *FLOW_IDENTITY, *FLOW_METRICS, *RUN_METRICS]
    fields = []
    for name in names:
        if name in STRING_COLUMNS:
            fields.append(pa.field(name, pa.string()))
        elif name == "flow_index":
            fields.append(pa.field(name, pa.int64()))
        else:
            fields.append(pa.field(name, pa.float64()))
    return pa.schema(fields)


def write_run_rows(rows: Sequence[Mapping[str, Any]], path: Path) -> pa.Table:
    """``rows/KEY.parquet``, atomically (a temporary file renamed into place); returns the
    rows as the Arrow table written. Uncompressed, without statistics: a few KB that the
    parent writes once per run, where every millisecond is serial work."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = _run_schema(rows)
    columns = {f.name: [r.get(f.name) for r in rows] for f in schema}
    table = pa.Table.from_pydict(columns, schema=schema)
    # not fsynced: a run's rows are redone on resume when damaged (SweepStore.damaged_rows)
    write_file_atomically(
        path,
        lambda tmp: pq.write_table(table, tmp, compression="none", write_statistics=False),
        overwrite=True,
        durable=False,
    )
    return table


def read_run_rows(path: Path) -> pa.Table:
    import pyarrow.parquet as pq

    return pq.read_table(path)


def build_table(
    parameters: Sequence[Parameter],
    entries: Sequence[tuple[Point, int, str, str | None]],
    run_rows: Mapping[str, pa.Table],
) -> pa.Table:
    """The sweep table (SCHEMA, ARCH12) as an Arrow table.

    ``entries``: ``(point, seed, key, error)`` per point x seed in plan order (``error`` None
    for a run that completed, whose rows are ``run_rows[key]``; else its one-line error).
    """
    import pyarrow as pa

    from tcplab.sweep.space import numeric_values

    numeric = {}
    for p in parameters:
        values = numeric_values(p.labels)
        if values is not None:
            numeric[p.path] = dict(zip(p.labels, values, strict=True))
    # column set: the union over runs, in SCHEMA order
    run_columns: list[str] = []
    seen: set[str] = set()
    extra: set[str] = set()
    for table in run_rows.values():
        for name in table.column_names:
            if name in seen:
                continue
            seen.add(name)
            if name.startswith(("nstat.", "app.")):
                extra.add(name)
            else:
                run_columns.append(name)
    base = ["flow_index", *FLOW_IDENTITY, *FLOW_METRICS, *RUN_METRICS]
    fixed = base + [c for c in run_columns if c not in base]
    body = fixed + sorted(c for c in extra if c.startswith("nstat.")) + sorted(c for c in extra if c.startswith("app."))
    param_cols = [p.path for p in parameters]
    value_cols = [f"{p.path}#value" for p in parameters if p.path in numeric]
    head = ["point", "seed", "run", "status", "error", *param_cols, *value_cols]

    columns: dict[str, list[Any]] = {c: [] for c in head + body}
    # per key: its rows as Python lists, once
    cache: dict[str, tuple[int, dict[str, list[Any]]]] = {}
    for point, seed, key, error in entries:
        if error is None and key in run_rows:
            if key not in cache:
                t = run_rows[key]
                cache[key] = (t.num_rows, {c: t.column(c).to_pylist() for c in t.column_names})
            n, cols = cache[key]
            status, err = "ok", None
        else:
            n, cols = 1, {"flow_index": [-1]}
            status, err = "failed", error or "no result"
        if n == 0:
            continue
        columns["point"].extend([point.index] * n)
        columns["seed"].extend([seed] * n)
        columns["run"].extend([key] * n)
        columns["status"].extend([status] * n)
        columns["error"].extend([err] * n)
        for p, label in zip(parameters, point.labels, strict=True):
            columns[p.path].extend([label] * n)
            if p.path in numeric:
                columns[f"{p.path}#value"].extend([numeric[p.path][label]] * n)
        for c in body:
            values = cols.get(c)
            if values is None:
                columns[c].extend([None if c in STRING_COLUMNS else NAN] * n)
            else:
                columns[c].extend(values)
    fields = []
    for c in head + body:
        if c in ("point", "seed", "flow_index"):
            t = pa.int64()
        elif c in ("run", "status", "error", *STRING_COLUMNS, *param_cols):
            t = pa.string()
        else:
            t = pa.float64()
        fields.append(pa.field(c, t))
    schema = pa.schema(fields)
    # NaN for missing numbers (not null), as the SCHEMA says
    arrays = []
    for f in schema:
        values = columns[f.name]
        if pa.types.is_floating(f.type):
            values = [NAN if v is None else v for v in values]
        arrays.append(pa.array(values, type=f.type))
    table = pa.Table.from_arrays(arrays, schema=schema)
    order = sorted(
        range(table.num_rows),
        key=lambda i: (columns["point"][i], columns["seed"][i], columns["flow_index"][i]),
    )
    return table.take(pa.array(order, type=pa.int64()))


def table_to_arrow(frame: pd.DataFrame) -> pa.Table:
    """A table DataFrame back to Arrow with the SCHEMA's types (for writing it again)."""
    import pyarrow as pa

    table = pa.Table.from_pandas(frame, preserve_index=False)
    return table.replace_schema_metadata(None)

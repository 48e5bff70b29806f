"""Applications' results: what each app of a run reported, as its users read it.

The model: the engine reports, per app instance of the scenario (a workload: ``rr``,
``hls``, ``nfs_stream``, ``batch_writer``, ``broadcast``, ...), a ``summary`` (named values:
transactions per second, stalls, timeouts, latency percentiles in ms, ...) and ``tables``
(one row per request, segment, burst or sample time; ARCH9.md lists the keys and columns of
each kind). :func:`app_results` turns them into :class:`AppResult` objects:

* table columns as the engine gives them (times in scenario ns: ``*_ns``; ``flow`` the
  global flow index), plus convenience columns: ``flow_name`` (the engine flow's name, as
  in ``timeseries.parquet``), ``t_s`` and every other instant (``start_ns``, ``request_ns``,
  ``end_ns``, ``*_at_ns``) in seconds (``start_s``), and every other ``*_ns`` column, a
  duration (``latency_ns``, ``buffer_ns``, ``completion_ns``), in milliseconds
  (``latency_ms``);
* the summary JSON-safe (NaN and infinities become null), under the app's name in
  summary.json: ``"apps": {NAME: {"kind": KIND, ...summary}}``;
* each table name across apps is one Parquet file, ``app_<table>.parquet``, whose first
  column ``app`` names the app of each row (:func:`write_app_tables`);
* :func:`headline` picks the few numbers a user of each kind looks at first (netperf's
  transactions per second and latency percentiles, a player's stalls and startup delay,
  vmagent's timeouts and retries, the rate(TCPTimeouts) / CurrEstab ratio a team alerted on,
  :func:`timeout_rate`);
  the CLI prints them, ``tcplab compare`` tabulates them, the report heads each app's
  section with them.

Unknown kinds (an engine newer than this module) keep their summary and tables; their
headline is empty. Missing optional keys or columns give ``None`` (printed ``-``), never an
error.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "AppResult",
    "Headline",
    "app_results",
    "app_summaries",
    "app_table_frames",
    "write_app_tables",
    "headline",
    "headline_text",
    "APP_TABLE_FILE",
    "MAX_LISTED_CONNECTIONS",
    "collapsed_flows",
    "TIMEOUT_RATIO_ALERT",
    "TIMEOUT_RATE_NAME",
    "timeout_rate",
]

#: ``app_<table>.parquet``: the file of one table name (engine table names are ``[a-z0-9_]+``).
APP_TABLE_FILE = re.compile(r"app_[a-z0-9_]+\.parquet\Z")
_TABLE_NAME = re.compile(r"[a-z0-9_]+\Z")

#: rate(TCPTimeouts) / CurrEstab above which the Mattermost team of story 004 was alerted
#: (3 %, per second: their Grafana panel, Prometheus metrics).
TIMEOUT_RATIO_ALERT = 0.03

#: The name of story 004's alert ratio wherever tcplab shows it (reports, runs tables,
#: ``tcplab run``/``compare``, ``recommend``, the microburst-ring experiment): one
#: definition, :func:`timeout_rate`.
TIMEOUT_RATE_NAME = "rate(TCPTimeouts) / CurrEstab"

#: ``*_ns`` columns that are instants (scenario time), shown in seconds; other ``*_ns``
#: columns are durations, shown in milliseconds.
_INSTANT = re.compile(r"(?:\At|start|request|end|_at|sent|done)_ns\Z")


@dataclass
class AppResult:
    """One app instance's results.

    Attributes:
        name: the workload's name (summary.json key).
        kind: ``rr``, ``hls``, ``nfs_stream``, ``batch_writer``, ``broadcast`` (or newer).
        summary: the engine's summary, JSON-safe (nested dicts and lists kept).
        tables: table name -> DataFrame (engine columns + ``flow_name``, ``t_s``, ``*_s``,
            ``*_ms``; see the module doc).
        flows: the engine flow names of the app's connections, in the app's order.
        spec: the app's engine configuration (``{"kind": ..., engine fields}``).
    """

    name: str
    kind: str
    summary: dict[str, Any]
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    flows: list[str] = field(default_factory=list)
    spec: dict[str, Any] = field(default_factory=dict)

    def table(self, name: str) -> pd.DataFrame:
        """A table by name; KeyError naming the app's tables when it has none of that name
        (``tables.get(name)`` for an optional one)."""
        if name not in self.tables:
            known = ", ".join(sorted(self.tables)) or "none"
            raise KeyError(f"app {self.name!r} ({self.kind}) has no table {name!r}; its tables: {known}")
        return self.tables[name]

    def get(self, *path: Any, default: Any = None) -> Any:
        """A summary value by key path (``get("latency_ms", "p99")``), else ``default``.

        Like ``dict.get``, a last argument that is not a string is the default
        (``get("stalls", 0)``); pass ``default=`` for a string default."""
        if path and not isinstance(path[-1], str):
            *keys, default = path
            path = tuple(keys)
        value: Any = self.summary
        for key in path:
            if not isinstance(value, Mapping) or key not in value:
                return default
            value = value[key]
        return value

    def __repr__(self) -> str:
        return f"<AppResult {self.name!r} kind={self.kind} tables={sorted(self.tables)}>"


def json_safe(x: Any) -> Any:
    """NumPy scalars as Python numbers, NaN/inf as None, through dicts and lists."""
    if isinstance(x, Mapping):
        return {str(k): json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, np.ndarray)):
        return [json_safe(v) for v in x]
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, (float, np.floating)):
        x = float(x)
        return x if math.isfinite(x) else None
    return x


def _is_numeric(s: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype)


def _with_convenience(frame: pd.DataFrame, flow_names: Sequence[str]) -> pd.DataFrame:
    """Engine columns + flow_name after ``flow``, instants in s and durations in ms."""
    out = frame.copy()
    if "flow" in out.columns and "flow_name" not in out.columns:
        idx = out["flow"].to_numpy().astype(np.int64)
        table = np.array(list(flow_names) + ["?"], dtype=object)
        safe = np.where((idx >= 0) & (idx < len(flow_names)), idx, len(flow_names))
        names = table[safe] if len(idx) else np.array([], dtype=object)
        out.insert(list(out.columns).index("flow") + 1, "flow_name", names)
    for column in list(frame.columns):
        if not column.endswith("_ns") or not _is_numeric(frame[column]):
            continue
        base = column[: -len("_ns")]
        values = frame[column].to_numpy().astype(np.float64)
        if _INSTANT.search(column):
            if f"{base}_s" not in out.columns:
                out[f"{base}_s"] = values / 1e9
        elif f"{base}_ms" not in out.columns:
            out[f"{base}_ms"] = values / 1e6
    return out


def app_results(apps_out: Sequence[Mapping[str, Any]], config: Mapping[str, Any]) -> dict[str, AppResult]:
    """The engine's ``apps`` (:attr:`tcplab.engine.EngineOutput.apps`) by app name, with the
    app's flows and spec from ``config["apps"]`` (matched by name, else by position)."""
    flow_names = [str(f["name"]) for f in config.get("flows", [])]
    cfg_apps = list(config.get("apps") or [])
    by_name = {str(a.get("name")): a for a in cfg_apps if isinstance(a, Mapping)}
    results: dict[str, AppResult] = {}
    for i, app in enumerate(apps_out):
        name = str(app["name"])
        cfg = by_name.get(name) or (cfg_apps[i] if i < len(cfg_apps) else {})
        flows = [flow_names[k] if 0 <= int(k) < len(flow_names) else "?" for k in cfg.get("flows", [])]
        unique = name
        n = 1
        while unique in results:  # never expected (names are unique), never lost either
            n += 1
            unique = f"{name}#{n}"
        tables = {}
        for tname, frame in (app.get("tables") or {}).items():
            if not isinstance(frame, pd.DataFrame):
                frame = pd.DataFrame(dict(frame))
            tables[str(tname)] = _with_convenience(frame, flow_names)
        summary = json_safe(dict(app.get("summary") or {}))
        spec = dict(cfg.get("spec") or {})
        if str(app["kind"]) == "broadcast":
            summary = _with_timeout_rate(summary, tables.get("bursts"), spec, config.get("duration_ns"))
        results[unique] = AppResult(
            name=unique,
            kind=str(app["kind"]),
            summary=summary,
            tables=tables,
            flows=flows,
            spec=spec,
        )
    return results


def timeout_rate(
    summary: Mapping[str, Any], bursts: pd.DataFrame | None, spec: Mapping[str, Any], duration_ns: Any
) -> tuple[float | None, float | None]:
    """Story 004's alert ratio as Prometheus gives it: ``rate(TCPTimeouts[W]) / CurrEstab``,
    the senders' RTOs per second over the window W, over their established connections
    (a fraction per second; 3 %/s was the team's alert). W is the span of the bursts, from
    the first burst's start to the end of the last burst's interval (or of the run, if it
    ends first); the RTOs are those counted in it (the ``bursts`` table's ``tcp_timeouts``,
    else the whole run's). Returns ``(ratio_per_s, window_s)``, ``(None, None)`` when
    there is no window or no established connection."""
    estab = _num(summary.get("curr_estab"))
    interval = _num(spec.get("interval_ns"))
    starts = None
    if bursts is not None and "start_ns" in bursts.columns and len(bursts):
        starts = bursts["start_ns"].to_numpy(dtype=np.float64)
    if not estab or starts is None or interval is None:
        return None, None
    end = starts[-1] + interval
    duration = _num(duration_ns)
    if duration is not None:
        end = min(end, duration)
    window_s = (end - starts[0]) / 1e9
    if window_s <= 0:
        return None, None
    if "tcp_timeouts" in bursts.columns:
        increase = float(bursts["tcp_timeouts"].to_numpy(dtype=np.float64).sum())
    else:
        increase = _num(summary.get("tcp_timeouts")) or 0.0
    return float(increase / window_s / estab), float(window_s)


def _with_timeout_rate(
    summary: dict[str, Any], bursts: pd.DataFrame | None, spec: Mapping[str, Any], duration_ns: Any
) -> dict[str, Any]:
    """A broadcast's summary with the one alert ratio (:func:`timeout_rate`):
    ``timeouts_rate_per_estab`` (per second) and ``timeouts_rate_window_s``, in place of the
    engine's whole-run TCPTimeouts / CurrEstab (``timeouts_per_estab``), which is not the
    story's ratio (it grows with the run's length) and is dropped so that no report shows a
    second definition."""
    ratio, window = timeout_rate(summary, bursts, spec, duration_ns)
    out = {k: v for k, v in summary.items() if k != "timeouts_per_estab"}
    out["timeouts_rate_per_estab"] = ratio
    out["timeouts_rate_window_s"] = window
    return out


#: An app with more connections than this (a broadcast's thousands) is one row, not one per
#: connection, in the CLI's and the report's flow tables and in ``tcplab compare``.
MAX_LISTED_CONNECTIONS = 16


def collapsed_flows(apps: Mapping[str, AppResult], limit: int = MAX_LISTED_CONNECTIONS) -> dict[str, str]:
    """``{flow name: app name}`` for the flows of apps with more than ``limit`` connections."""
    return {flow: name for name, app in apps.items() if len(app.flows) > limit for flow in app.flows}


def app_summaries(apps: Mapping[str, AppResult]) -> dict[str, dict[str, Any]]:
    """summary.json's ``"apps"``: ``{NAME: {"kind": KIND, ...summary}}``."""
    out = {}
    for name, app in apps.items():
        entry: dict[str, Any] = {"kind": app.kind}
        entry.update({k: v for k, v in app.summary.items() if k != "kind"})
        out[name] = entry
    return out


def _nullable(frame: pd.DataFrame) -> pd.DataFrame:
    """Columns in pandas' nullable dtypes, so that tables of several apps with different
    columns concatenate without turning booleans or integers into floats or objects."""
    out = {}
    for column in frame.columns:
        s = frame[column]
        if pd.api.types.is_bool_dtype(s.dtype):
            s = s.astype("boolean")
        elif pd.api.types.is_integer_dtype(s.dtype) and isinstance(s.dtype, np.dtype):
            s = s.astype(str(s.dtype).replace("u", "U").replace("i", "I"))
        elif pd.api.types.is_object_dtype(s.dtype) or pd.api.types.is_string_dtype(s.dtype):
            s = s.astype("string")
        out[column] = s
    return pd.DataFrame(out)


def app_table_frames(apps: Mapping[str, AppResult]) -> dict[str, pd.DataFrame]:
    """Each table name across apps as one frame with an ``app`` (name) and ``kind`` column
    first, in the order apps and tables first appear. Table names that are not
    ``[a-z0-9_]+`` (never produced by the engine) are skipped: they name files."""
    parts: dict[str, list[pd.DataFrame]] = {}
    for name, app in apps.items():
        for tname, frame in app.tables.items():
            if not _TABLE_NAME.match(tname):
                continue
            f = _nullable(frame)
            f.insert(0, "kind", pd.array([app.kind] * len(f), dtype="string"))
            f.insert(0, "app", pd.array([name] * len(f), dtype="string"))
            parts.setdefault(tname, []).append(f)
    return {t: pd.concat(fs, ignore_index=True) if len(fs) > 1 else fs[0] for t, fs in parts.items()}


def write_app_tables(apps: Mapping[str, AppResult], out: Path, write: Any) -> list[str]:
    """Write ``app_<table>.parquet`` into ``out`` with ``write(frame, path)``; the file names."""
    names = []
    for tname, frame in app_table_frames(apps).items():
        filename = f"app_{tname}.parquet"
        write(frame, out / filename)
        names.append(filename)
    return names


# -- headline metrics --------------------------------------------------------------------


@dataclass(frozen=True)
class Headline:
    """One headline metric: a label, a value (a number, a text, or None: not reported) and
    its unit (``ms``, ``s``, ``%``, ``/s``, or empty for counts)."""

    label: str
    value: float | str | None
    unit: str = ""

    @property
    def metric(self) -> str:
        """The label with its unit, as a table row names it: ``latency p99 (ms)``."""
        return f"{self.label} ({self.unit})" if self.unit else self.label

    def text(self) -> str:
        """``latency p99 12.3 ms``; ``-`` for a value not reported."""
        return f"{self.label} {_value_text(self.value, self.unit)}"


def _value_text(value: float | str | None, unit: str) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    if unit in ("", "/s") and float(value).is_integer():
        text = str(int(value))
    elif unit == "/s":
        text = f"{value:.1f}"
    elif unit == "%":
        text = f"{value:.2f}"
    elif unit == "%/s":  # a rate: 3 significant figures, plain digits (1,840 %/s, not 1.84e+03)
        from tcplab.units import percent_text

        text = percent_text(value).removesuffix(" %")
    elif unit in ("ms", "s"):
        text = f"{value:.3g}" if abs(value) < 10 else f"{value:.1f}"
    else:
        text = f"{value:.3g}"
    if unit == "/s":
        return f"{text}/s"
    return f"{text} {unit}" if unit else text


def _num(x: Any) -> float | None:
    if isinstance(x, bool) or x is None:
        return None if x is None else float(x)
    if isinstance(x, (int, float, np.integer, np.floating)):
        x = float(x)
        return x if math.isfinite(x) else None
    return None


def _buffer_min_s(app: AppResult) -> float | None:
    """The lowest playback buffer once playback started (``series``: buffer_ns, playing):
    how close the player came to a stall. The app's own ``min_buffer_s`` wins (it sees
    every change, not only the samples)."""
    for key in ("min_buffer_s", "buffer_min_s"):
        given = _num(app.get(key))
        if given is not None:
            return given
    series = app.tables.get("series", pd.DataFrame())
    if series.empty or "buffer_ns" not in series.columns:
        return None
    buffer = series["buffer_ns"].to_numpy(dtype=np.float64)
    if "playing" in series.columns:
        playing = series["playing"].to_numpy().astype(bool)
        if not playing.any():
            return None
        buffer = buffer[int(np.argmax(playing)) :]
    return float(buffer.min()) / 1e9 if len(buffer) else None


def _share_text(shares: Any) -> str | None:
    if not isinstance(shares, list) or not shares:
        return None
    values = [_num(s) for s in shares]
    return "/".join("-" if v is None else f"{100 * v:.0f}" for v in values) + " %"


def headline(app: AppResult) -> list[Headline]:
    """The headline metrics of one app (module doc); empty for an unknown kind."""
    g = app.get
    kind = app.kind
    if kind == "rr":
        return [
            Headline("transactions", _num(g("transactions_per_sec")), "/s"),
            Headline("latency p50", _num(g("latency_ms", "p50")), "ms"),
            Headline("latency p99", _num(g("latency_ms", "p99")), "ms"),
        ]
    if kind == "hls":
        on = g("time_on_profile_s")
        items = [
            Headline(f"on {profile}", _num(seconds), "s")
            for profile, seconds in (on.items() if isinstance(on, Mapping) else [])
        ]
        return items + [
            Headline("switches", _num(g("switches"))),
            Headline("stalls", _num(g("stalls"))),
            Headline("stalled", _num(g("stall_s")), "s"),
            Headline("startup", _num(g("startup_delay_s")), "s"),
        ]
    if kind == "nfs_stream":
        return [
            Headline("stalls", _num(g("stalls"))),
            Headline("stalled", _num(g("stall_s")), "s"),
            Headline("buffer min", _buffer_min_s(app), "s"),
            Headline("share per connection", _share_text(g("share_of_bytes"))),
            Headline("read p99", _num(g("latency_ms", "p99")), "ms"),
        ]
    if kind == "batch_writer":
        return [
            Headline("timeouts", _num(g("timeouts"))),
            Headline("retries", _num(g("retries"))),
            Headline("dropped", _num(g("dropped"))),
            Headline("latency p99", _num(g("latency_ms", "p99")), "ms"),
        ]
    if kind == "broadcast":
        ratio = _num(g("timeouts_rate_per_estab"))
        return [
            Headline("burst completion p99", _num(g("completion_ms", "p99")), "ms"),
            Headline("TCPTimeouts", _num(g("tcp_timeouts"))),
            Headline("CurrEstab", _num(g("curr_estab"))),
            Headline(TIMEOUT_RATE_NAME, None if ratio is None else 100 * ratio, "%/s"),
            Headline("rate window", _num(g("timeouts_rate_window_s")), "s"),
        ]
    return []


def headline_text(app: AppResult) -> str:
    """One line: ``NAME (KIND): metric value, metric value, ...``."""
    items = headline(app)
    body = ", ".join(h.text() for h in items) if items else "(no headline metrics for this kind)"
    return f"{app.name} ({app.kind}): {body}"

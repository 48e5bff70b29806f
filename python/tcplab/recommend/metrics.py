"""Metrics in the words users say them, resolved to columns of a sweep table.

The model: a sweep table (``sweep.parquet``, ARCH12 "The table") has one row per (run,
flow); a run is identified by ``(point, seed)`` (two points resolving to the same
scenario share a run key, but each keeps its rows). A :class:`Metric` turns the table into
one number per run, from its rows:

* **run-level columns** (``run.*``, ``nstat.*``, ``app.*``: the same in every row of a run)
  are read from the run's first row;
* **flow columns** (``goodput_bps``, ``retrans_segs``, ``rtt_p99_ms``, ...) are aggregated
  over the run's flows: totals (bytes, segments, goodput, timeouts) are summed; RTTs and
  limited-time shares take the worst flow (max); ``retrans_ratio`` is recomputed from the
  sums (``retrans_segs / data_segs_out``, the share over all sent segments).

What a user may write (case and spacing do not matter):

========================================  =========================================================
``goodput``, ``throughput``               ``run.goodput_bps`` (sum over flows), shown in Mbit/s
``p99 RTT``, ``RTT p99``, ``RTT``         ``run.rtt_p99_ms`` (worst flow's p99), ms
``p50 RTT``, ``p90 RTT`` (and reversed)   max over flows of ``rtt_p50_ms`` / ``rtt_p90_ms``, ms
``retransmissions``                       sum over flows of ``retrans_segs`` (segments)
``retransmission rate``/``retrans ratio`` sum ``retrans_segs`` / sum ``data_segs_out``, %
``timeouts``, ``RTOs``                    sum over flows of ``timeouts`` (TcpExtTCPTimeouts of the senders)
``queue drops``, ``loss drops``           ``run.queue_drops``, ``run.loss_drops``
``ring drops``, ``NIC drops``             ``run.nic_ring_drops`` (ethtool's ring-drop counters)
``CPU steal``                             ``run.cpu_steal_pct``, %
``rwnd limited``                          max over flows of ``rwnd_limited_pct``, %
an nstat name, with or without prefix     ``nstat.TcpExtTCPTimeouts`` for ``TCPTimeouts``,
                                          ``nstat.TcpCurrEstab`` for ``CurrEstab`` (summed over hosts)
``A / B``                                 per run, A divided by B (each resolved as above); a
                                          ratio of two like quantities is a fraction, shown in %
``TCPTimeouts / CurrEstab``               story 004's alert ratio, named
                                          ``rate(TCPTimeouts) / CurrEstab``: a broadcast app's
                                          ``timeouts_rate_per_estab``, its senders' TCPTimeouts
                                          per second over the bursts' span over their
                                          established connections, as Prometheus'
                                          ``rate(TCPTimeouts[W]) / CurrEstab`` gives it (the
                                          worst app; thresholds in %/s or %). Without a
                                          broadcast app, the plain ratio of the nstat counters
                                          (``A / B`` below: whole run, both ends in CurrEstab)
app metrics: ``[APP or KIND] KEY words``  ``app.APP.KEY[.SUB]`` by its words without units:
                                          ``HLS stalls`` (sum of ``app.*.stalls`` over hls
                                          apps), ``burst completion p99`` (worst broadcast
                                          app's ``completion_ms.p99``), ``video stall``...;
                                          counts are summed over apps, times, percentiles
                                          and ratios take the worst (max) app
any column name                           itself (``run.goodput_bps``, ``app.events.bursts``)
========================================  =========================================================

An app's kind is not a numeric column, so it is recognised by the keys only that kind
reports (ARCH9's summary keys): ``hls`` has ``time_on_profile_s``/``switches``,
``broadcast`` ``timeouts_rate_per_estab``, ``nfs_stream`` ``bytes_read``, ``rr``
``transactions_per_sec``, ``batch_writer`` ``max_pending``.

Thresholds carry units as users write them (:meth:`Metric.threshold`): ``50 ms`` or
``0.05 s`` for a time, ``10 Mbit/s`` for a rate, ``3 %`` for a fraction (0.03) or a
percentage metric (3), ``64 KB`` for bytes; a bare number is taken as-is for counts,
fractions (``0.03``) and percentages, and refused for metrics with a unit (``50`` for an
RTT: 50 what?).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tcplab.errors import ScenarioError, UnitError, show_value
from tcplab.sweep.rows import FLOW_IDENTITY, FLOW_METRICS, RUN_METRICS
from tcplab.units import parse_rate, parse_size, parse_time

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["BASE_COLUMNS", "Metric", "resolve_metric", "run_index", "RUN_KEYS", "metric_error", "UnknownMetric"]

#: The columns every sweep table has (ARCH12 SCHEMA), whatever the scenario: enough to check
#: an objective's grammar before the sweep runs.
BASE_COLUMNS = ("point", "seed", "run", "status", "error", "flow_index", *FLOW_IDENTITY, *FLOW_METRICS, *RUN_METRICS)

#: Columns that identify one run of a sweep table (the run key may repeat across points).
RUN_KEYS = ("point", "seed")

#: Units a metric can have (native values in the table): ``bps``, ``ms``, ``s``, ``bytes``,
#: ``fraction`` (0..1, shown in %), ``pct`` (already percent), ``count``, ``ratio`` (unitless).
UNITS = ("bps", "ms", "s", "bytes", "fraction", "fraction_per_s", "pct", "count", "ratio")

#: Flow columns and how a run aggregates them over its flows.
FLOW_AGG = {
    "goodput_bps": ("sum", "bps"),
    "bytes_received": ("sum", "bytes"),
    "data_segs_out": ("sum", "count"),
    "retrans_segs": ("sum", "count"),
    "timeouts": ("sum", "count"),
    "rtt_p50_ms": ("max", "ms"),
    "rtt_p90_ms": ("max", "ms"),
    "rtt_p99_ms": ("max", "ms"),
    "rwnd_limited_pct": ("max", "pct"),
    "payload_ceiling_bps": ("max", "bps"),
}

#: Keys only one app kind reports (ARCH9's summary keys): how a kind is recognised.
KIND_SIGNATURE = {
    "hls": ("time_on_profile_s", "switches"),
    "broadcast": ("timeouts_rate_per_estab",),
    "nfs_stream": ("bytes_read",),
    "rr": ("transactions_per_sec",),
    "batch_writer": ("max_pending",),
}
#: Words that name a kind in a metric phrase.
KIND_WORDS = {
    "hls": "hls",
    "video": "hls",
    "broadcast": "broadcast",
    "burst": "broadcast",
    "bursts": "broadcast",
    "nfs": "nfs_stream",
    "nfs_stream": "nfs_stream",
    "rr": "rr",
    "batch": "batch_writer",
    "batch_writer": "batch_writer",
    "writer": "batch_writer",
}
#: Word forms folded to the key's word (``stall`` -> ``stalls``).
_WORD_FORMS = {"stall": "stalls", "timeout": "timeouts", "retry": "retries", "switch": "switches", "burst": "bursts"}
#: Unit words dropped from app keys when matching (``completion_ms.p99`` -> completion p99).
_UNIT_WORDS = {"ms", "s", "bps", "bytes", "ns"}

_NSTAT_PREFIXES = ("", "TcpExt", "Tcp", "IpExt", "Ip", "Udp")

RATE_HINT = "a rate such as 10 Mbit/s"
TIME_HINT = "a time such as 50 ms"


class UnknownMetric(ScenarioError):
    """A phrase that names no metric of the table (the scenario form checks it only once
    the sweep has run: app metrics exist only then)."""


def metric_error(option: str, text: str, problem: str, expected: str) -> ScenarioError:
    """The one-line error: ``OPTION: "TEXT": problem; expected ...``."""
    return ScenarioError(f"{show_value(text)}: {problem}", file=option, expected=expected)


def _norm(text: str) -> str:
    return " ".join(text.strip().lower().replace("_", " ").split())


@dataclass(frozen=True)
class Metric:
    """A per-run quantity.

    Attributes:
        text: as the user wrote it.
        name: how output names it (``goodput``, ``p99 RTT``, ``TCPTimeouts / CurrEstab``).
        unit: one of :data:`UNITS` (the table's native unit of the values).
        source: which columns and how (``run.goodput_bps: sum over the run's flows``).
        columns: the table columns it reads.
    """

    text: str
    name: str
    unit: str
    source: str
    columns: tuple[str, ...]
    compute: Callable[[pd.DataFrame], pd.Series] = field(repr=False, compare=False)

    def values(self, table: pd.DataFrame) -> pd.Series:
        """One float per run, indexed by (point, seed); NaN where the run has no value."""
        return self.compute(table).astype("float64")

    # -- display -----------------------------------------------------------------------
    @property
    def display_unit(self) -> str:
        units = {"bps": "Mbit/s", "ms": "ms", "s": "s", "bytes": "bytes", "fraction": "%", "fraction_per_s": "%/s"}
        return {**units, "pct": "%"}.get(self.unit, "")

    def display(self, value: float) -> float:
        """The value in :attr:`display_unit`."""
        if self.unit == "bps":
            return value / 1e6
        if self.unit in ("fraction", "fraction_per_s"):
            return value * 100.0
        return value

    def fmt(self, value: float | None, *, signed: bool = False) -> str:
        """``4.58 Mbit/s``, ``201.7 ms``, ``3.1 %``, ``1495``; ``-`` for no value."""
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return "-"
        v = self.display(float(value))
        unit = self.display_unit
        if self.unit in ("count",) and float(v).is_integer():
            text = f"{v:+.0f}" if signed else f"{v:.0f}"
        else:
            text = f"{v:+.4g}" if signed else f"{v:.4g}"
            if "e" in text:  # 10,000 and more: whole numbers, never 1.234e+04
                text = f"{v:+,.0f}" if signed else f"{v:,.0f}"
        return f"{text} {unit}".rstrip()

    # -- thresholds ----------------------------------------------------------------------
    def threshold(self, text: str, option: str, whole: str) -> float:
        """A bound written with units (module doc) in the metric's native unit."""
        raw = text.strip()
        squeezed = re.sub(r"\s+", "", raw)
        m = re.fullmatch(r"([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)(.*)", squeezed)
        if not m:
            raise metric_error(option, whole, f"{show_value(raw)} is not a number", self._expected())
        number, unit = float(m.group(1)), m.group(2)
        try:
            if unit == "":
                if self.unit in ("fraction", "fraction_per_s") and abs(number) > 1:
                    raise metric_error(
                        option, whole, f"{show_value(raw)} is more than 1 for a fraction ({self.name})",
                        "a percentage with its sign such as 3 % (or a fraction such as 0.03)",
                    )  # fmt: skip
                if self.unit in ("count", "ratio", "fraction", "fraction_per_s", "pct"):
                    return number
                raise metric_error(
                    option, whole, f"{show_value(raw)} has no unit ({self.name} is {self._what()})", self._expected()
                )
            if unit == "%" or (unit == "%/s" and self.unit == "fraction_per_s"):
                if self.unit in ("fraction", "fraction_per_s"):
                    return number / 100.0
                if self.unit == "pct":
                    return number
                raise metric_error(
                    option,
                    whole,
                    f"{show_value(raw)} is a percentage but {self.name} is {self._what()}",
                    self._expected(),
                )
            if self.unit == "bps":
                return float(parse_rate(squeezed, allow_zero=True))
            if self.unit in ("ms", "s"):
                ns = parse_time(squeezed)
                return ns / 1e6 if self.unit == "ms" else ns / 1e9
            if self.unit == "bytes":
                return float(parse_size(squeezed))
        except UnitError as e:
            raise metric_error(option, whole, e.problem, self._expected()) from None
        raise metric_error(
            option, whole, f"{show_value(raw)} has a unit but {self.name} is {self._what()}", self._expected()
        )

    def _what(self) -> str:
        return {
            "bps": "a rate",
            "ms": "a time",
            "s": "a time",
            "bytes": "a size",
            "fraction": "a fraction",
            "fraction_per_s": "a fraction per second",
            "pct": "a percentage",
            "count": "a count",
            "ratio": "a ratio",
        }[self.unit]

    def _expected(self) -> str:
        return {
            "bps": RATE_HINT,
            "ms": TIME_HINT,
            "s": TIME_HINT,
            "bytes": "a size such as 64 KB",
            "fraction": "a percentage such as 3 % (or a fraction such as 0.03)",
            "fraction_per_s": "a percentage per second such as 3 %/s (or 3 %, or a fraction such as 0.03)",
            "pct": "a percentage such as 3 %",
            "count": "a number such as 0 or 10",
            "ratio": "a number such as 0.5",
        }[self.unit]


# -- per-run helpers ---------------------------------------------------------------------


def run_index(table: pd.DataFrame) -> pd.MultiIndex:
    """The runs of a table, (point, seed), sorted."""
    import pandas as pd

    keys = table[list(RUN_KEYS)].drop_duplicates().sort_values(list(RUN_KEYS))
    return pd.MultiIndex.from_frame(keys)


def _first(column: str) -> Callable[[pd.DataFrame], pd.Series]:
    def compute(table: pd.DataFrame) -> pd.Series:
        return table.groupby(list(RUN_KEYS), sort=True)[column].first()

    return compute


def _flow_agg(column: str, how: str) -> Callable[[pd.DataFrame], pd.Series]:
    def compute(table: pd.DataFrame) -> pd.Series:
        flows = table[table["flow_index"] >= 0] if "flow_index" in table.columns else table
        g = flows.groupby(list(RUN_KEYS), sort=True)[column]
        out = g.sum(min_count=1) if how == "sum" else g.max()
        return out.reindex(run_index(table))

    return compute


def _retrans_ratio(table: pd.DataFrame) -> pd.Series:
    num = _flow_agg("retrans_segs", "sum")(table)
    den = _flow_agg("data_segs_out", "sum")(table)
    return num / den.where(den > 0)


def _combine(columns: Sequence[str], how: str) -> Callable[[pd.DataFrame], pd.Series]:
    def compute(table: pd.DataFrame) -> pd.Series:
        first = table.groupby(list(RUN_KEYS), sort=True)[list(columns)].first()
        return first.sum(axis=1, min_count=1) if how == "sum" else first.max(axis=1)

    return compute


def _ratio(a: Metric, b: Metric) -> Callable[[pd.DataFrame], pd.Series]:
    def compute(table: pd.DataFrame) -> pd.Series:
        den = b.values(table)
        return a.values(table) / den.where(den != 0)

    return compute


# -- resolution ----------------------------------------------------------------------------


def _column_metric(text: str, name: str, column: str, table_cols: Sequence[str]) -> Metric:
    if column in FLOW_AGG:
        how, unit = FLOW_AGG[column]
        if column == "goodput_bps":
            unit = "bps"
        return Metric(text, name, unit, f"{column}: {how} over the run's flows", (column,), _flow_agg(column, how))
    if column == "retrans_ratio":
        return Metric(
            text,
            name,
            "fraction",
            "sum of retrans_segs / sum of data_segs_out over the run's flows",
            ("retrans_segs", "data_segs_out"),
            _retrans_ratio,
        )
    return Metric(text, name, _unit_of(column), column, (column,), _first(column))


def _unit_of(column: str) -> str:
    """A column's unit from its name: the innermost part with a unit suffix decides
    (``completion_ms.p99`` is ms, ``time_on_profile_s.HD`` s); ``*_per_sec`` is a plain
    rate (``ratio``); ``*ratio``/``*rate``/``*_per_*``/``share*`` are fractions."""
    parts = column.split(".")
    for part in reversed(parts[1:] or parts):
        if part.endswith("_bps"):
            return "bps"
        if part.endswith("_pct"):
            return "pct"
        if part.endswith("_ms"):
            return "ms"
        if part.endswith("_s") and not part.endswith("_per_s"):
            return "s"
        if (part.endswith("_bytes") or part.startswith("bytes_")) and not part.startswith("share"):
            return "bytes"
        if part.endswith(("_per_sec", "_per_s")):
            return "ratio"
        if re.search(r"(ratio|rate|_per_|share)", part):
            return "fraction"
    return "count"


def _app_columns(table_cols: Sequence[str]) -> dict[str, dict[str, str]]:
    """app name -> {key path (after the app name): column}."""
    apps: dict[str, dict[str, str]] = {}
    for col in table_cols:
        if not col.startswith("app.") or col.count(".") < 2:
            continue
        # ``count: K`` copies are named ``W.<copy>`` (ARCH9): a numeric second part belongs
        # to the app's name, not its key.
        parts = col[len("app.") :].split(".")
        cut = 2 if len(parts) > 2 and parts[1].isdigit() else 1
        app, key = ".".join(parts[:cut]), ".".join(parts[cut:])
        apps.setdefault(app, {})[key] = col
    return apps


def app_kinds(table_cols: Sequence[str]) -> dict[str, str | None]:
    """app name -> kind recognised by its keys (module doc), None when unknown."""
    kinds: dict[str, str | None] = {}
    for app, keys in _app_columns(table_cols).items():
        roots = {k.split(".")[0] for k in keys}
        kinds[app] = next((kind for kind, sig in KIND_SIGNATURE.items() if roots & set(sig)), None)
    return kinds


def _key_words(key: str) -> frozenset[str]:
    words = [w for w in re.split(r"[._\s]+", key.lower()) if w and w not in _UNIT_WORDS]
    return frozenset(_WORD_FORMS.get(w, w) for w in words)


def _app_metric(text: str, table_cols: Sequence[str]) -> Metric | None:
    words = [w for w in re.split(r"[\s_]+", text.strip().lower()) if w]
    if not words:
        return None
    apps = _app_columns(table_cols)
    if not apps:
        return None
    kinds = app_kinds(table_cols)
    selected = list(apps)
    qualifier = ""
    lowered = {a.lower(): a for a in apps}
    if words[0] in lowered and len(words) > 1:
        selected, qualifier = [lowered[words[0]]], f"app {lowered[words[0]]}"
        words = words[1:]
    elif words[0] in KIND_WORDS and len(words) > 1:
        kind = KIND_WORDS[words[0]]
        selected = [a for a in apps if kinds.get(a) == kind]
        qualifier = f"{kind} apps"
        if not selected:
            return None
        words = words[1:]
    want = frozenset(_WORD_FORMS.get(w, w) for w in words if w not in _UNIT_WORDS)
    found = [(k, apps[a][k]) for a in selected for k in sorted(apps[a]) if _key_words(k) == want]
    if not found:
        return None
    key, cols = found[0][0], [c for _, c in found]
    unit = _unit_of(cols[0])
    how = "sum" if unit == "count" and not re.search(r"p\d|max|mean|min", key) else "max"
    over = qualifier or ("every app" if len(cols) > 1 else "")
    source = cols[0] if len(cols) == 1 else f"{how} of {', '.join(cols)}"
    if over and len(cols) > 1:
        source += f" ({over})"
    return Metric(
        text, text.strip(), unit, source, tuple(cols), _combine(cols, how) if len(cols) > 1 else _first(cols[0])
    )


_RTT = re.compile(r"\A(?:rtt (p\d+)|(p\d+) rtt|rtt)\Z")


def _alias(norm: str, text: str, table_cols: Sequence[str]) -> Metric | None:
    cols = set(table_cols)
    m = _RTT.match(norm)
    if m:
        pct = m.group(1) or m.group(2) or "p99"
        name = f"{pct} RTT"
        if pct == "p99" and "run.rtt_p99_ms" in cols:
            return Metric(
                text,
                name,
                "ms",
                "run.rtt_p99_ms: the worst flow's p99 RTT",
                ("run.rtt_p99_ms",),
                _first("run.rtt_p99_ms"),
            )
        column = f"rtt_{pct}_ms"
        if column not in cols:
            return None
        return Metric(text, name, "ms", f"{column}: max over the run's flows", (column,), _flow_agg(column, "max"))
    if norm in ("goodput", "throughput", "total goodput", "goodput total"):
        if "run.goodput_bps" in cols:
            return Metric(
                text,
                "goodput",
                "bps",
                "run.goodput_bps: sum over the run's flows",
                ("run.goodput_bps",),
                _first("run.goodput_bps"),
            )
        return _column_metric(text, "goodput", "goodput_bps", table_cols)
    if norm in ("retransmissions", "retransmits", "retrans", "retransmitted segments", "retrans segs"):
        return _column_metric(text, "retransmissions", "retrans_segs", table_cols)
    if norm in ("retransmission rate", "retransmission ratio", "retrans ratio", "retrans rate", "retrans %"):
        return _column_metric(text, "retransmission rate", "retrans_ratio", table_cols)
    if norm in ("timeouts", "rtos", "rto", "tcp timeouts"):
        return _column_metric(text, "timeouts", "timeouts", table_cols)
    named = {
        "queue drops": "run.queue_drops",
        "loss drops": "run.loss_drops",
        "ring drops": "run.nic_ring_drops",
        "nic drops": "run.nic_ring_drops",
        "nic ring drops": "run.nic_ring_drops",
        "rx drops": "run.nic_ring_drops",
        "cpu steal": "run.cpu_steal_pct",
        "steal": "run.cpu_steal_pct",
    }
    if norm in named and named[norm] in cols:
        return Metric(text, norm, _unit_of(named[norm]), named[norm], (named[norm],), _first(named[norm]))
    if norm in ("rwnd limited", "rwnd limited pct", "rwnd-limited"):
        return _column_metric(text, "rwnd limited", "rwnd_limited_pct", table_cols)
    return None


def _nstat(text: str, table_cols: Sequence[str]) -> Metric | None:
    word = text.strip()
    if not re.fullmatch(r"[A-Za-z0-9]+", word):
        return None
    lowered = {c.lower(): c for c in table_cols if c.startswith("nstat.")}
    for prefix in _NSTAT_PREFIXES:
        col = lowered.get(f"nstat.{prefix}{word}".lower())
        if col:
            return Metric(
                text, col[len("nstat.") :], "count", f"{col}: summed over the run's hosts", (col,), _first(col)
            )
    return None


def _story_ratio(text: str, table_cols: Sequence[str]) -> Metric | None:
    """``TCPTimeouts / CurrEstab``: story 004's alert ratio, a broadcast app's
    ``rate(TCPTimeouts) / CurrEstab`` (per second, :func:`tcplab.results.apps.timeout_rate`)
    when the table has one (module doc)."""
    from tcplab.results.apps import TIMEOUT_RATE_NAME

    cols = [c for c in table_cols if c.startswith("app.") and c.endswith(".timeouts_rate_per_estab")]
    if not cols:
        return None
    how = "max"
    source = (cols[0] if len(cols) == 1 else f"max of {', '.join(cols)}") + (
        f": the broadcast app's senders' {TIMEOUT_RATE_NAME}, per second over the bursts' span "
        "(story 004's alert ratio)"
    )
    compute = _first(cols[0]) if len(cols) == 1 else _combine(cols, how)
    return Metric(text, TIMEOUT_RATE_NAME, "fraction_per_s", source, tuple(cols), compute)


def _single(text: str, table_cols: Sequence[str]) -> Metric | None:
    if text.strip() in table_cols:
        col = text.strip()
        if col in FLOW_AGG or col == "retrans_ratio":
            return _column_metric(text, col, col, table_cols)
        return Metric(text, col, _unit_of(col), col, (col,), _first(col))
    return _alias(_norm(text), text, table_cols) or _nstat(text, table_cols) or _app_metric(text, table_cols)


def resolve_metric(
    text: str, table_cols: Sequence[str], option: str = "--maximize", whole: str | None = None
) -> Metric:
    """The metric a phrase names in a table with these columns (module doc), or a
    ScenarioError naming the option and what would be accepted."""
    whole = text if whole is None else whole
    if not text.strip():
        raise metric_error(option, whole, "names no metric", "a metric such as goodput, p99 RTT or TCPTimeouts")
    found = _single(text, table_cols)
    if found is not None:
        return found
    if "/" in text:
        left, _, right = text.partition("/")
        if _norm(left).replace(" ", "") in ("tcptimeouts", "tcpexttcptimeouts") and _norm(right).replace(" ", "") in (
            "currestab",
            "tcpcurrestab",
        ):
            story = _story_ratio(text, table_cols)
            if story is not None:
                return story
        a = resolve_metric(left, table_cols, option, whole)
        b = resolve_metric(right, table_cols, option, whole)
        same = a.unit == b.unit or {a.unit, b.unit} <= {"count"}
        unit = "fraction" if same and a.unit not in ("fraction", "pct") else "ratio"
        return Metric(
            text,
            f"{a.name} / {b.name}",
            unit,
            f"({a.source}) / ({b.source}), per run",
            a.columns + b.columns,
            _ratio(a, b),
        )
    raise UnknownMetric(
        f"{show_value(whole)}: {show_value(text.strip())} is not a metric of this sweep",
        file=option,
        expected="goodput, p99 RTT, retransmissions, timeouts, ring drops, an nstat name (TCPTimeouts), "
        "an app metric (HLS stalls, burst completion p99), a ratio (TCPTimeouts / CurrEstab) or a column of "
        "the table",
    )

"""A run directory read back: what the exports (flent, iperf3, ss at a time) need of a run.

The model: ``tcplab run`` (a simulation) and ``tcplab kernel run`` (the real kernel) write
the same files (:mod:`tcplab.results.result`): ``scenario.resolved.json`` (the engine
configuration: nodes, flows with their MSS and congestion control, duration, sample
interval), ``summary.json`` (title, seed, versions, per-flow totals), ``flows.parquet`` (one
row per connection: bytes, retransmissions, start and end) and ``timeseries.parquet`` (one
row per sample and sampled flow: cwnd, srtt, rates, cumulative bytes). A kernel run adds
``kernel.json`` and ``ss-samples-NODE.txt`` (every ``ss -tin`` sample the agent took, read
in-process and printed as ss prints them, :mod:`tcplab.kernel.ss_line`; each after a
``# t_ns=N`` line). :class:`RunData` holds exactly these, whether read from a
directory (:meth:`RunData.load`) or taken from a :class:`~tcplab.results.Result` that is
being written (:meth:`RunData.from_result`), so one exporter serves both.

A directory that is not a tcplab run (no ``summary.json``, a comparison or reproduce
directory, a file missing or unreadable) is a :class:`~tcplab.errors.ScenarioError` with one
line naming the directory and what was expected.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tcplab.errors import ScenarioError
from tcplab.literals import json_loads, value_text
from tcplab.scenario.limits import MAX_DURATION_NS

__all__ = ["RunData", "load_run"]

#: The files every run directory has and the exports read.
REQUIRED_FILES = ("summary.json", "scenario.resolved.json", "flows.parquet", "timeseries.parquet")


@dataclass
class RunData:
    """One run's data (module doc).

    Attributes:
        kind: ``"simulation"`` or ``"kernel"`` (summary.json's ``kind``).
        config: the engine configuration (scenario.resolved.json).
        summary: summary.json's content.
        flows: flows.parquet (one row per connection, :attr:`tcplab.results.Result.flows`).
        timeseries: timeseries.parquet (:attr:`tcplab.results.Result.timeseries`).
        ss_samples: a kernel run's ``{node: ss-samples text}`` (empty for a simulation).
        directory: where it was read from (None when taken from a Result).
    """

    kind: str
    config: dict[str, Any]
    summary: dict[str, Any]
    flows: pd.DataFrame
    timeseries: pd.DataFrame
    ss_samples: dict[str, str] = field(default_factory=dict)
    directory: Path | None = None
    _totals: dict[str, dict[str, Any]] | None = field(default=None, init=False, repr=False, compare=False)
    _series_rows: dict[int, Any] | None = field(default=None, init=False, repr=False, compare=False)
    _columns: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    # -- construction ---------------------------------------------------------------

    @classmethod
    def from_result(cls, result: Any) -> RunData:
        """The data of a :class:`~tcplab.results.Result` (simulation or kernel run)."""
        measurements = getattr(result, "measurements", None)
        samples = dict(getattr(measurements, "ss_samples", {}) or {}) if measurements is not None else {}
        return cls(
            kind=str(result.summary.get("kind", "simulation")),
            config=result.config,
            summary=result.summary,
            flows=result.flows,
            timeseries=result.timeseries,
            ss_samples=samples,
        )

    @classmethod
    def load(cls, directory: str | Path) -> RunData:
        """Read a run directory written by ``tcplab run`` or ``tcplab kernel run``."""
        d = Path(directory)
        if not d.exists():
            _not_a_run(d, "does not exist")
        if not d.is_dir():
            _not_a_run(d, "is not a directory")
        if not (d / "summary.json").is_file():
            kind = _marker_kind(d)
            if kind in ("compare", "reproduce", "validate", "sweep"):
                _not_a_run(d, f"is a tcplab {kind} directory, not one run")
            _not_a_run(d, "has no summary.json")
        for name in REQUIRED_FILES:
            if not (d / name).is_file():
                _not_a_run(d, f"has no {name}")
        summary = _read_json(d / "summary.json")
        config = _read_json(d / "scenario.resolved.json")
        if not isinstance(summary, dict) or "tcplab_version" not in summary:
            _not_a_run(d, "summary.json is not a tcplab summary (no tcplab_version)")
        if not isinstance(config, dict) or "duration_ns" not in config or "flows" not in config:
            _not_a_run(d, "scenario.resolved.json is not an engine configuration")
        _check_times(d, config)
        flows = _read_parquet(d / "flows.parquet")
        timeseries = _read_parquet(d / "timeseries.parquet")
        samples = {}
        for p in sorted(d.glob("ss-samples-*.txt")):
            samples[p.name[len("ss-samples-") : -len(".txt")]] = p.read_text(encoding="utf-8")
        return cls(
            kind=str(summary.get("kind", "simulation")),
            config=config,
            summary=summary,
            flows=flows,
            timeseries=timeseries,
            ss_samples=samples,
            directory=d,
        )

    # -- what the exports ask ---------------------------------------------------------

    @property
    def duration_ns(self) -> int:
        return int(self.config["duration_ns"])

    @property
    def sample_interval_ns(self) -> int:
        return int(self.config["sample_interval_ns"])

    @property
    def nodes(self) -> list[str]:
        return [str(n["name"]) for n in self.config.get("nodes", [])]

    @property
    def title(self) -> str:
        return str(self.summary.get("title") or self.summary.get("scenario") or "tcplab run")

    def flow_index(self, name: str) -> int | None:
        """The configuration index of the flow named ``name`` (None if there is none)."""
        for i, f in enumerate(self.config.get("flows", [])):
            if str(f.get("name")) == name:
                return i
        return None

    def flow_name(self, flow: str) -> str:
        """A flow as the user names it (its name, or its 0-based index as ``tcplab export
        pcap --flow`` takes it) -> its name; unchanged when it is neither (the caller says
        it is unknown). A name wins over an index (a flow may be named "1")."""
        text = str(flow).strip()
        if self.flow_index(text) is not None:
            return text
        flows = self.config.get("flows", [])
        if text.isascii() and text.isdigit() and len(text) < 19 and int(text) < len(flows):  # not "²", not 5000 digits
            return str(flows[int(text)].get("name"))
        return str(flow)

    def flow_totals(self, name: str) -> dict[str, Any]:
        """flows.parquet's row of flow ``name`` as a dict (empty if absent)."""
        if self._totals is None:
            totals: dict[str, dict[str, Any]] = {}
            for row in self.flows.to_dict("records"):
                totals.setdefault(str(row["name"]), row)  # the first row of a name, as before
            self._totals = totals
        return self._totals.get(name, {})

    def flow_series(self, index: int) -> pd.DataFrame:
        """The time-series rows of flow number ``index``, in time order (the series is
        split by flow once: a fan-in's hundreds of flows do not rescan millions of rows)."""
        ts = self.timeseries
        if ts.empty:
            return ts
        rows = self._rows_of(index)
        return ts.iloc[rows] if rows is not None else ts.iloc[0:0]

    def flow_columns(self, index: int, names: tuple[str, ...]) -> dict[str, np.ndarray]:
        """Flow ``index``'s time-series columns ``names`` (those the series has) as arrays, in
        time order; cheaper than :meth:`flow_series` for hundreds of flows."""
        ts = self.timeseries
        rows = self._rows_of(index) if not ts.empty else None
        out = {}
        for name in names:
            if name not in ts.columns:
                continue
            if name not in self._columns:
                self._columns[name] = ts[name].to_numpy()
            col = self._columns[name]
            out[name] = col[rows] if rows is not None else col[:0]
        return out

    def _rows_of(self, index: int) -> np.ndarray | None:
        ts = self.timeseries
        if self._series_rows is None:
            flow = ts["flow"].to_numpy().astype(np.int64)
            order = np.lexsort((ts["t_ns"].to_numpy(), flow))
            sorted_flows = flow[order]
            keys, starts = np.unique(sorted_flows, return_index=True)
            ends = list(starts[1:]) + [len(order)]
            self._series_rows = {int(k): order[a:b] for k, a, b in zip(keys, starts, ends, strict=True)}
        return self._series_rows.get(int(index))


def load_run(directory: str | Path) -> RunData:
    """:meth:`RunData.load`."""
    return RunData.load(directory)


def _not_a_run(d: Path, problem: str) -> None:
    raise ScenarioError(
        problem,
        file=str(d),
        expected="a run directory written by tcplab run or tcplab kernel run (summary.json, flows.parquet, ...)",
    )


def _check_times(d: Path, config: dict) -> None:
    """The two numbers every export builds its time axis from, in the engine's own bounds
    (a year at most; a sample interval within the run): a damaged or hand-edited
    ``scenario.resolved.json`` (``duration_ns: 1e300``, ``-5``, ``1.5``) is refused here rather
    than written out as nonsense or failing deep inside an export."""
    for key, hi in (("duration_ns", MAX_DURATION_NS), ("sample_interval_ns", config.get("duration_ns"))):
        value = config.get(key)
        ok = isinstance(value, int) and not isinstance(value, bool) and isinstance(hi, int) and 1 <= value <= hi
        if not ok:
            raise ScenarioError(
                f"scenario.resolved.json: {key}: {value_text(value)} is not a time in ns from 1 to "
                f"{hi if isinstance(hi, int) and not isinstance(hi, bool) else 'the duration'}",
                file=str(d),
                expected="a run directory written by tcplab",
            )


def _marker_kind(d: Path) -> str | None:
    try:
        return json_loads((d / ".tcplab-run").read_text(encoding="utf-8")).get("kind")
    except (OSError, ValueError, AttributeError):
        return None


def _read_json(path: Path) -> Any:
    try:
        return json_loads(path.read_text(encoding="utf-8"), finite=True)
    except (OSError, ValueError) as e:
        raise ScenarioError(
            f"{path.name} cannot be read ({e})".replace("\n", " "),
            file=str(path.parent),
            expected="a run directory written by tcplab",
        ) from None


def _read_parquet(path: Path) -> pd.DataFrame:
    try:
        return pd.read_parquet(path)
    except Exception as e:  # pyarrow raises several types for a damaged file
        raise ScenarioError(
            f"{path.name} cannot be read ({type(e).__name__}: {e})".replace("\n", " ")[:300],
            file=str(path.parent),
            expected="a run directory written by tcplab",
        ) from None

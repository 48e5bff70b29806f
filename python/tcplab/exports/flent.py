"""A run as a flent data file (``run.flent.gz``), so flent's plots and GUI open it.

The format is flent's own (flent 2.3.0 ``flent/resultset.py``, ``FILEFORMAT_VERSION`` 4): a
gzipped JSON object ``{"version": 4, "metadata": {...}, "x_values": [...], "results":
{SERIES: [...]}, "raw_values": {SERIES: [{"t": ..., "val": ..., ...}]}}``, one value per
series per x value (``null`` where the series has none), ``x_values`` in seconds from the
start at the step size, with sorted keys as flent writes them (compact: no indentation).
``flent.resultset.load(FILE)`` reads it, and ``flent -i run.flent.gz -p totals -o x.png``
draws it with the test's plots.

Time: the run as flent would have run it. A flent test of ``-l LENGTH`` runs for
``TOTAL_LENGTH = LENGTH + 2 * DELAY`` (flent/tests/netperf_definitions.inc; ``-d/--delay``
defaults to 5 s): its ping from the start to the end, its netperf streams from ``DELAY``
for ``LENGTH`` seconds, so the link is idle for ``DELAY`` seconds at each end. flent's CDF
and box plots cut ``--delay`` seconds off each end of the data (``'cutoff': (DELAY,
-DELAY)``, counted from ``TOTAL_LENGTH`` at the end), which leaves the loaded part. The
file has that shape for flent's default 5 s (:data:`DELAY_S`): ``LENGTH`` is the run's
duration, ``TOTAL_LENGTH`` = ``LENGTH + 10``, the run's time 0 is at x = 5 s (a raw
value's ``t``, seconds since ``T0``, is the simulated time + 5 s), and ``x_values`` run from
0 to ``TOTAL_LENGTH`` with every series ``null`` in the two idle periods (tcplab has no
flow, hence no RTT, to report then). ``TCPLAB.start_x`` says where the run starts. flent's
plots at their defaults then keep every sample of the run (also with a smaller ``--delay``;
flent does not record the delay a file was made with).

Which flent test: the one whose series are the run's flows in the directions they send
data, named as flent names them (a test's plots list every series its definition has, with
or without data, so the test must have no series the run lacks).

* every exported flow sends from its client (bulk: netperf TCP_STREAM): ``tcp_nup`` with
  ``upload_streams`` = N, series ``TCP upload::1`` .. ``TCP upload::N`` (flows in scenario
  order), and flent's computed ``TCP upload sum``/``avg``/``fairness``;
* every exported flow sends from its server (maerts, hls, nfs_stream: TCP_MAERTS):
  ``tcp_ndown``, ``TCP download::K`` and ``TCP download sum``/``avg``/``fairness``;
* both directions, every flow half of an iperf3 ``--bidir`` pair (``NAME.fwd`` from the
  client, ``NAME.rev`` from the server): ``rrul_var``, whose streams are exactly such pairs
  (rrul_var.conf defines a ``TCP upload::LABEL`` and a ``TCP download::LABEL`` for each
  label), with ``bidir_streams`` = the pairs and ``labels`` = their names (a comma, which
  would split the list, becomes ``_``); ``Ping (ms)::UDP LABEL`` is the pair's own mean
  srtt (rrul_var's per-stream latency; not UDP); plus ``TCP upload sum``/``avg``, ``TCP
  download sum``/``avg``, ``TCP totals`` and ``Ping (ms) avg`` (over every ``Ping (ms)::``
  series, as rrul_var computes it);
* both directions otherwise (a maerts next to a bulk flow, a lone half of a pair):
  ``rrul_be_nflows`` with ``upload_streams`` = N and ``download_streams`` = M, series ``TCP
  upload BE::1..N`` and ``TCP download BE::1..M`` (each direction's flows in scenario
  order), ``TCP upload``/``download`` ``sum``/``avg``, ``TCP totals``, ``Ping (ms) ICMP``
  and ``Ping (ms) UDP BE`` (both the flows' mean srtt: tcplab sends no probe, and every
  flow is best effort) and their ``Ping (ms) avg``. rrul_var is not used here: a flow
  would be a label, and flent would list it in the other direction's plots too.

Series values: a flow's series is its goodput in Mbit/s at each sample (the time series'
``goodput_bps``: bytes delivered to the receiving application since the previous sample), as
netperf's interim results are; ``null`` before the flow starts and after it closes (its
application finished). The x values are the sample grid (``DELAY + k * sample_interval``); a
kernel run's samples, taken near the grid times, each go to the nearest slot (raw values keep
the real times). The RTT series (``Ping (ms) ICMP``, in rrul_var ``Ping (ms)::ICMP``) is not
an ICMP ping (tcplab sends none): it is the mean over the flows that have an RTT sample of
their smoothed RTT (``srtt``, ms) at that moment, the RTT a ping along the same queues would
see plus what delayed ACKs add. Each flow's raw values carry what flent's ss sampler records
(``tcp_cwnd`` packets, ``tcp_rtt``/``tcp_rtt_var`` ms, ``tcp_pacing_rate`` and
``tcp_delivery_rate`` Mbit/s, for BBR ``tcp_bbr_bw``, ``tcp_bbr_mrtt``,
``tcp_bbr_pacing_gain``, ``tcp_bbr_cwnd_gain``), so the ``tcp_cwnd``, ``tcp_rtt`` and
``tcp_pacing`` plots work too. Flows of an application with more than 16 connections are
not sampled and not shown (:mod:`tcplab.exports.flows`).

Determinism: no wall-clock time inside. ``TIME`` and ``T0`` (flent's test start) are the
Unix epoch, ``1970-01-01T00:00:00.000000Z``, 5 s before the simulation's time 0; flent
shows the date 1970-01-01 for every tcplab run. The gzip header has no name and mtime 0.
The same run gives the same bytes.

Metadata: ``NAME`` (the test), ``TITLE`` (the run's title: scenario and overrides), ``NOTE``
(what made it), ``HOST``/``HOSTS`` (the flows' servers, the netserver flent tests against,
addressed as ss.py numbers nodes), ``LOCAL_HOST`` (the first flow's client node, where flent
would run), ``LENGTH`` (the run's duration, s) and ``TOTAL_LENGTH`` (above), ``STEP_SIZE``
(the sample interval, s), ``TEST_PARAMETERS`` (flent's ``--test-parameter`` strings, with
``cc_algos``), ``IP_VERSION`` 4, ``FLENT_VERSION`` saying tcplab wrote it, and
``SERIES_META`` per series (``UNITS``, ``MEAN_VALUE``, and for a flow ``CONG_CONTROL``,
``TCP_MSS``, ``BYTES_SENT``, ``BYTES_RECVD``, ``TCP_RETRANSMIT`` as netperf's runner records
them, ``FLOW`` its tcplab name); ``TCPLAB`` holds tcplab's provenance (versions, scenario,
seed, overrides, the flows, ``start_x``).
"""

from __future__ import annotations

import fnmatch
import gzip
import io
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tcplab.exports.flows import ExportFlow, export_flows
from tcplab.exports.rundir import RunData

__all__ = ["flent_data", "flent_bytes", "write_flent", "FLENT_FILE", "FILEFORMAT_VERSION", "EPOCH", "DELAY_S"]

#: The file name in a run directory.
FLENT_FILE = "run.flent.gz"
#: flent/resultset.py's FILEFORMAT_VERSION (flent 2.3.0).
FILEFORMAT_VERSION = 4
#: TIME and T0, flent's test start: DELAY_S before the simulation's time 0 (module doc: no
#: wall-clock time in the file).
EPOCH = "1970-01-01T00:00:00.000000Z"
#: flent's ``-d/--delay`` default (flent/settings.py), the idle time before and after a
#: test's load: the run starts at x = DELAY_S and TOTAL_LENGTH = LENGTH + 2 * DELAY_S.
DELAY_S = 5
_U64_MAX = (1 << 64) - 1


def _num(x: float) -> float | int:
    """A duration as flent writes ``-l``: an int when whole."""
    return int(x) if float(x).is_integer() else float(x)


def _slots(t_ns: np.ndarray, step_ns: int) -> np.ndarray:
    """The sample-grid slot of each time (nearest multiple of the step)."""
    return np.rint(np.asarray(t_ns, dtype=np.float64) / step_ns).astype(np.int64)


@dataclass(frozen=True)
class _Layout:
    """Which flent test shows the flows, and how (module doc): ``series`` maps a flow's
    index to its series name; ``pings`` lists the latency series, each the mean srtt of the
    flows it names (by index; ``None``: every flow); ``computed`` flent's computed series
    (name, how, members, units); ``params`` the test parameters (``--test-parameter``)."""

    test: str
    series: dict[int, str]
    pings: list[tuple[str, tuple[int, ...] | None]]
    computed: list[tuple[str, str, list[str], str]]
    params: dict[str, str]


def _layout(flows: list[ExportFlow]) -> _Layout:
    """The test whose series are exactly the flows in the directions they send (module doc)."""
    ups = [f for f in flows if f.upload]
    downs = [f for f in flows if not f.upload]
    if not downs:  # tcp_nup.conf: TCP upload::1..N
        series = {f.index: f"TCP upload::{k}" for k, f in enumerate(ups, 1)}
        return _Layout(
            "tcp_nup",
            series,
            [("Ping (ms) ICMP", None)],
            _per_direction(series, "upload", "TCP upload::*", fairness=True),
            {"cc_algos": ",".join(f.cc for f in ups), "upload_streams": str(len(ups))},
        )
    if not ups:  # tcp_ndown.conf: TCP download::1..N
        series = {f.index: f"TCP download::{k}" for k, f in enumerate(downs, 1)}
        return _Layout(
            "tcp_ndown",
            series,
            [("Ping (ms) ICMP", None)],
            _per_direction(series, "download", "TCP download::*", fairness=True),
            {"cc_algos": ",".join(f.cc for f in downs), "download_streams": str(len(downs))},
        )
    pairs = _bidir_pairs(flows)
    if pairs is not None:  # rrul_var.conf: a label is one stream up and one down
        labels = _labels([name for name, _, _ in pairs])
        series = {}
        pings: list[tuple[str, tuple[int, ...] | None]] = [("Ping (ms)::ICMP", None)]
        for label, (_, fwd, rev) in zip(labels, pairs, strict=True):
            series[fwd.index] = f"TCP upload::{label}"
            series[rev.index] = f"TCP download::{label}"
            pings.append((f"Ping (ms)::UDP {label}", (fwd.index, rev.index)))
        computed = [
            *_per_direction(series, "upload", "TCP upload::*"),
            *_per_direction(series, "download", "TCP download::*"),
            ("TCP totals", "sum", list(series.values()), "Mbits/s"),
            ("Ping (ms) avg", "average", [name for name, _ in pings], "ms"),
        ]
        params = {
            "cc_algos": ",".join(fwd.cc for _, fwd, _ in pairs),
            "bidir_streams": str(len(pairs)),
            "labels": ",".join(labels),
        }
        return _Layout("rrul_var", series, pings, computed, params)
    # rrul_be_nflows.conf: N uploads and M downloads, numbered per direction
    series = {f.index: f"TCP upload BE::{k}" for k, f in enumerate(ups, 1)}
    series.update({f.index: f"TCP download BE::{k}" for k, f in enumerate(downs, 1)})
    pings = [("Ping (ms) ICMP", None), ("Ping (ms) UDP BE", None)]
    computed = [
        *_per_direction(series, "upload", "TCP upload BE::*"),
        *_per_direction(series, "download", "TCP download BE::*"),
        ("TCP totals", "sum", list(series.values()), "Mbits/s"),
        ("Ping (ms) avg", "average", [name for name, _ in pings], "ms"),
    ]
    params = {
        "cc_algos": ",".join(f.cc for f in (*ups, *downs)),
        "upload_streams": str(len(ups)),
        "download_streams": str(len(downs)),
    }
    return _Layout("rrul_be_nflows", series, pings, computed, params)


def _per_direction(
    series: dict[int, str], direction: str, pattern: str, fairness: bool = False
) -> list[tuple[str, str, list[str], str]]:
    """flent's ``TCP upload avg``/``sum`` (and ``fairness``) over the series matching
    ``pattern`` (a glob of the test's definition)."""
    members = [s for s in series.values() if fnmatch.fnmatchcase(s, pattern)]
    out = [
        (f"TCP {direction} avg", "average", members, "Mbits/s"),
        (f"TCP {direction} sum", "sum", members, "Mbits/s"),
    ]
    if fairness:
        out.append((f"TCP {direction} fairness", "fairness", members, "Idx"))
    return out


def _bidir_pairs(flows: list[ExportFlow]) -> list[tuple[str, ExportFlow, ExportFlow]] | None:
    """``(NAME, NAME.fwd, NAME.rev)`` for every bidir pair (an upload ``NAME.fwd`` and a
    download ``NAME.rev`` between the same client and server), in the order of the ``.fwd``
    flows; None unless every flow is half of such a pair."""
    by_name = {f.name: f for f in flows}
    pairs = []
    for fwd in flows:
        if not (fwd.upload and fwd.name.endswith(".fwd")):
            continue
        name = fwd.name[: -len(".fwd")]
        rev = by_name.get(f"{name}.rev")
        if (
            rev is not None
            and not rev.upload
            and (rev.sender_node, rev.receiver_node) == (fwd.receiver_node, fwd.sender_node)
        ):
            pairs.append((name, fwd, rev))
    return pairs if 2 * len(pairs) == len(flows) else None


def _labels(names: list[str]) -> list[str]:
    """rrul_var's stream labels: the names without the commas that separate them in ``-t
    labels=...``, unique (flent refuses a duplicate label)."""
    out: list[str] = []
    for name in names:
        label = name.replace(",", "_") or "flow"
        base, k = label, 2
        while label in out:
            label = f"{base}_{k}"
            k += 1
        out.append(label)
    return out


def _mbit(bps: float) -> float:
    return float(bps) / 1e6


def _jain(values: list[float]) -> float | None:
    """flent's FairnessRunner: Jain's index (sum x)^2 / (n sum x^2)."""
    squares = math.fsum(v * v for v in values)
    return math.fsum(values) ** 2 / (len(values) * squares) if values and squares else None


def _computed(how: str, members: list[str], results: dict[str, list], n: int) -> list:
    """A computed series as flent's ComputingRunner makes it: per x, over the members'
    non-null values (null when there are none)."""
    columns = [results[m] for m in members if m in results]
    out: list[Any] = []
    for i in range(n):
        values = [c[i] for c in columns if c[i] is not None]
        if not values:
            out.append(None)
        elif how == "sum":
            out.append(math.fsum(values))
        elif how == "average":
            out.append(math.fsum(values) / len(values))
        else:
            out.append(_jain(values))
    return out


def _mean(values: list) -> float | None:
    vals = [v for v in values if v is not None]
    return math.fsum(vals) / len(vals) if vals else None


def _grid(run: RunData, step_ns: int) -> tuple[int, int]:
    """The x grid's first and last slot: slot k is simulated time ``k * step`` (x = that +
    the delay), from x = 0 (the idle time before the run) to x = TOTAL_LENGTH (after it),
    and every sample's slot in between."""
    delay_ns = DELAY_S * 1_000_000_000
    ts = run.timeseries
    last = (run.duration_ns + delay_ns) // step_ns
    if not ts.empty:
        last = max(last, int(_slots(ts["t_ns"].to_numpy(), step_ns).max()))
    return -(delay_ns // step_ns), int(last)


def flent_data(run: RunData) -> dict[str, Any]:
    """The flent data object of ``run`` (module doc), before JSON and gzip."""
    flows = export_flows(run)
    layout = _layout(flows)
    delay_ns = DELAY_S * 1_000_000_000
    # x values on the sample grid, shifted by flent's delay (a kernel run's samples are
    # taken near, not at, the grid times: each goes to its nearest slot, the last sample of
    # a flow in a slot wins)
    step_ns = max(1, run.sample_interval_ns)
    first, last = _grid(run, step_ns)
    x_values = [(k * step_ns + delay_ns) / 1e9 for k in range(first, last + 1)]
    n = len(x_values)
    results: dict[str, list] = {}
    raw: dict[str, list] = {}
    meta: dict[str, dict] = {}
    latest_x = 0.0  # the latest x of a value (flent's end cutoff must keep it)
    srtt_at: dict[int, list[Any]] = {}  # flow index -> its srtt (ms) per x
    for f in flows:
        series = layout.series[f.index]
        values: list[Any] = [None] * n
        raws: list[dict[str, Any]] = []
        rtts: list[Any] = [None] * n
        closed_after = f.end_s if f.end_s < run.duration_ns / 1e9 else math.inf
        cols = run.flow_columns(f.index, ("t_ns", "goodput_bps", *_RAW_COLUMNS))
        t_col = cols["t_ns"].astype(np.int64) if "t_ns" in cols else np.zeros(0, dtype=np.int64)
        slot_col = _slots(t_col, step_ns)
        goodput = cols["goodput_bps"].astype(np.float64) if "goodput_bps" in cols else None
        srtt = cols["srtt_us"].astype(np.int64) if "srtt_us" in cols else np.zeros(len(t_col), dtype=np.int64)
        # Python lists, read element by element below: indexing a NumPy array makes a NumPy
        # scalar per value (the same numbers, several times slower)
        t_list, slot_list, srtt_list = t_col.tolist(), slot_col.tolist(), srtt.tolist()
        goodput_list = goodput.tolist() if goodput is not None else None
        ss_raw = _ss_raw({name: cols[name].tolist() for name in _RAW_COLUMNS if name in cols}, len(t_list), f.cc)
        for j in range(len(t_list)):
            t_ns = t_list[j]
            t_s = t_ns / 1e9
            if t_s < f.start_s or t_s > closed_after:
                continue
            k = slot_list[j] - first
            gp = goodput_list[j] if goodput_list is not None else float("nan")
            val = _mbit(gp) if math.isfinite(gp) else None
            values[k] = val
            entry: dict[str, Any] = {"t": (t_ns + delay_ns) / 1e9, "val": val}
            latest_x = max(latest_x, entry["t"], x_values[k])
            if srtt_list[j] > 0:  # ESTAB, as ss would list it
                entry.update(ss_raw(j))
                rtts[k] = srtt_list[j] / 1000.0
            raws.append(entry)
        results[series] = values
        raw[series] = raws
        srtt_at[f.index] = rtts
        total = run.flow_totals(f.name)
        meta[series] = {
            "UNITS": "Mbits/s",
            "MEAN_VALUE": _finite(_mbit(total.get("goodput_bps", float("nan")))) if total else _mean(values),
            "CONG_CONTROL": f.cc,
            "TCP_MSS": f.mss,
            "BYTES_SENT": int(total.get("bytes_sent", 0)) if total else None,
            "BYTES_RECVD": int(total.get("bytes_received", 0)) if total else None,
            "TCP_RETRANSMIT": int(total.get("retrans_segs", 0)) if total else None,
            "FLOW": f.name,
        }
    names = {f.index: f.name for f in flows}
    for ping, members in layout.pings:
        columns = [srtt_at[i] for i in (members if members is not None else names)]
        values = [_mean([c[k] for c in columns]) for k in range(n)]
        results[ping] = values
        raw[ping] = [{"t": x_values[k], "val": v} for k, v in enumerate(values) if v is not None]
        what = "the flows" if members is None else "flows " + ", ".join(names[i] for i in members)
        meta[ping] = {"UNITS": "ms", "MEAN_VALUE": _mean(values), "SOURCE": f"mean srtt of {what} (no probe sent)"}
    for name, how, members, units in layout.computed:
        results[name] = _computed(how, members, results, n)
        meta[name] = {"UNITS": units, "MEAN_VALUE": _mean(results[name]), "COMPUTED_LATE": False}
    # flent runs on the client and tests against a netserver (HOST): each flow's client and
    # server, whichever of them sends the data
    servers = list(dict.fromkeys(f.receiver_addr if f.upload else f.sender_addr for f in flows)) or ["10.0.0.1"]
    client = (flows[0].sender_node if flows[0].upload else flows[0].receiver_node) if flows else None
    length = _num(run.duration_ns / 1e9)
    metadata = {
        "NAME": layout.test,
        "TITLE": run.title,
        "NOTE": _note(run),
        "TIME": EPOCH,
        "T0": EPOCH,
        "HOST": servers[0],
        "HOSTS": servers,
        "LOCAL_HOST": client or (run.nodes[0] if run.nodes else "tcplab"),
        "LENGTH": length,
        "TOTAL_LENGTH": _total_length(length, latest_x),
        "STEP_SIZE": _num(run.sample_interval_ns / 1e9),
        "TEST_PARAMETERS": layout.params,
        "FLENT_VERSION": f"tcplab {run.summary.get('tcplab_version', '?')} (flent 2.3.0 data format)",
        "IP_VERSION": 4,
        "BATCH_NAME": None,
        "BATCH_TIME": None,
        "BATCH_TITLE": None,
        "BATCH_UUID": None,
        "DATA_FILENAME": FLENT_FILE,
        "HTTP_GETTER_DNS": None,
        "HTTP_GETTER_URLLIST": None,
        "HTTP_GETTER_WORKERS": None,
        "SERIES_META": meta,
        "TCPLAB": {
            "kind": run.kind,
            "scenario": run.summary.get("scenario"),
            "seed": run.summary.get("seed"),
            "overrides": list(run.summary.get("overrides") or []),
            "tcplab_version": run.summary.get("tcplab_version"),
            "engine_version": run.summary.get("engine_version"),
            "flows": [f.name for f in flows],
            "start_x": DELAY_S,
        },
    }
    return {
        "metadata": metadata,
        "version": FILEFORMAT_VERSION,
        "x_values": x_values,
        "results": results,
        "raw_values": raw,
    }


def _total_length(length: float | int, latest_x: float) -> float | int:
    """flent's TOTAL_LENGTH, ``LENGTH + 2 * DELAY`` (netperf_definitions.inc), at least the
    delay past the latest x (a kernel run's last sample a little after the grid), so that
    flent's ``--delay`` cutoff, ``TOTAL_LENGTH - DELAY`` computed in floats, keeps it."""
    total = length + 2 * DELAY_S
    while total - DELAY_S < latest_x:
        total = max(math.nextafter(float(total), math.inf), latest_x + DELAY_S)
    return total


#: Time-series columns the raw values read.
_RAW_COLUMNS = (
    "cwnd",
    "srtt_us",
    "rttvar_us",
    "pacing_rate_bps",
    "delivery_rate_bps",
    "bbr_bw_bps",
    "bbr_min_rtt_us",
    "min_rtt_us",
    "pacing_gain",
    "cwnd_gain",
)


def _ss_raw(cols: dict[str, list], n: int, cc: str) -> Callable[[int], dict[str, Any]]:
    """What flent's SsRunner parses out of ``ss -t -i`` for sample ``j`` (its units: ms,
    Mbit/s), as a function of ``j`` over one flow's columns (``n`` samples; a column the
    run lacks reads 0). Made once per flow: the samples of a long run are ~10^5."""
    zeros = [0] * n

    def col(name: str) -> list:
        return cols.get(name, zeros)

    cwnd, srtt, rttvar = col("cwnd"), col("srtt_us"), col("rttvar_us")
    pacing_rate, delivery_rate = col("pacing_rate_bps"), col("delivery_rate_bps")
    bbr = cc == "bbr"
    bbr_bw, pacing_gain, cwnd_gain = col("bbr_bw_bps"), col("pacing_gain"), col("cwnd_gain")
    bbr_min_rtt = cols["bbr_min_rtt_us"] if "bbr_min_rtt_us" in cols else col("min_rtt_us")
    unlimited = _U64_MAX - 7

    def raw(j: int) -> dict[str, Any]:
        out: dict[str, Any] = {
            "tcp_cwnd": float(cwnd[j]),
            "tcp_rtt": int(srtt[j]) / 1000.0,
            "tcp_rtt_var": int(rttvar[j]) / 1000.0,
        }
        pacing = int(pacing_rate[j])
        if 0 < pacing < unlimited:  # ~0 is "unlimited": ss prints none
            out["tcp_pacing_rate"] = _mbit(pacing)
        delivery = int(delivery_rate[j])
        if delivery > 0:
            out["tcp_delivery_rate"] = _mbit(delivery)
        if bbr:
            out["tcp_bbr_bw"] = _mbit(int(bbr_bw[j]))
            mrtt = int(bbr_min_rtt[j])
            if mrtt != 0xFFFFFFFF:
                out["tcp_bbr_mrtt"] = mrtt / 1000.0
            out["tcp_bbr_pacing_gain"] = float(pacing_gain[j])
            out["tcp_bbr_cwnd_gain"] = float(cwnd_gain[j])
        return out

    return raw


def _finite(x: Any) -> Any:
    return x if isinstance(x, (int, float)) and math.isfinite(x) else None


def _note(run: RunData) -> str:
    what = "tcplab simulation" if run.kind == "simulation" else f"tcplab {run.kind} run"
    seed, engine = run.summary.get("seed"), run.summary.get("engine_version", "?")
    return f"{what} of {run.summary.get('scenario', '?')} (seed {seed}, engine {engine})"


def flent_bytes(run: RunData) -> bytes:
    """``run.flent.gz``'s bytes: flent's JSON with sorted keys, gzipped without a name or
    time in the header (deterministic). Compact, not flent's ``indent=2``: the same JSON for
    every reader, and Python's C encoder writes it several times faster (a fan-in's
    hundreds of flows)."""
    text = json.dumps(flent_data(run), sort_keys=True, allow_nan=False, separators=(",", ":"))
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=6) as gz:
        gz.write(text.encode("utf-8"))
    return buf.getvalue()


def write_flent(run: RunData, path: str | Path, *, overwrite: bool = False) -> Path:
    """Write ``run``'s flent data file to ``path``, whole, with the user's umask (an existing
    file only with ``overwrite``; :func:`tcplab.output_files.write_file_atomically`)."""
    from tcplab.output_files import write_file_atomically

    return write_file_atomically(path, flent_bytes(run), overwrite=overwrite)

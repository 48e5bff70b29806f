"""What a run produced, as DataFrames, and the run directory it is saved as.

The model: one simulation gives per-flow totals (one row per flow), per-link queue totals,
per-host nstat counters, an invariant check, and two time series sampled every
``sample_interval``: per flow (cwnd, srtt, delivered bytes, cc state, ...) and per link
(backlog, cumulative drops). :class:`Result` holds them as pandas DataFrames and derives the
numbers people compare:

* ``goodput_bps = bytes_received * 8 / (end - start)``: bytes delivered in order to the
  receiving application over the flow's lifetime, as netperf's receiver-side throughput.
* ``retrans_ratio = retrans_segs / data_segs_out`` (both count segments; Linux's
  ``data_segs_out`` includes retransmissions, so this is the share of sent segments that
  were retransmissions, like ``TcpRetransSegs / TcpOutSegs``).
* RTT percentiles (ms) over the sender's RTT samples, from a log-linear histogram: each
  reported percentile is the low edge of its bucket, at most ``relative_error`` (1/128,
  0.78 %) below the exact value and exact below 256 us (``summary.json``:
  ``rtt_percentiles``).
* In the time series, ``goodput_bps`` of a row is the bytes delivered since the previous
  sample of the same flow, times 8, over the time between them (the first sample of a flow
  counts from one ``sample_interval`` before it; a kernel run's sample whose receiver count
  is missing, NaN, has none, and the next is over the time since the last one with a value).

A run directory (``Result.write(DIR)``) holds::

    summary.json              scenario, seed, versions, per-flow and per-link totals (tc -s
                              counters, qdisc xstats, tbf child), per-host NIC and CPU, invariant;
                              an app with more than 16 connections (a broadcast's thousands) is
                              one aggregate flow row (``connections``, ``per_connection``);
                              ``stuck``: the cwnd-collapse and stuck episodes
                              (tcplab.results.stuck), an empty list when none
    flows.parquet             per flow (every connection): the ``Result.flows`` frame (name, from,
                              to, data_from, data_to, app, cc, goodput, RTT, rwnd_limited, ...,
                              the ECN flags and a DCTCP sender's state: ECN_COLUMNS)
    scenario.resolved.json    the exact engine configuration (rerun it to reproduce)
    timeseries.parquet        per (sample, flow): engine columns + flow_name, t_s, goodput_bps,
                              ca_state_name, cc_mode_name
    queues.parquet            per (sample, link): engine columns + link_name, node, dev, qdisc, t_s
    hosts.parquet             per (sample, host with a CPU or NIC model): engine columns +
                              host_name, t_s (only when the run has such a host)
    app_TABLE.parquet         per application table name (requests, segments, bursts, series,
                              ...): the rows of every app with that table, ``app`` and ``kind``
                              columns first (:mod:`tcplab.results.apps`; only when the run has apps)
    counters.txt              nstat text, one block per host
    tc-qdisc-NODE.txt         per node: its qdiscs as `tc -s qdisc show` prints them
                              (devices eth0, eth1, ... = the node's links in scenario order)
    ethtool-S-HOST.txt        per host with a NIC model: `ethtool -S eth0` text
    ethtool-k-HOST.txt        per host: its offloads as `ethtool -k eth0` prints them (GRO from
                              the scenario's `offload:`; TSO/GSO `off [fixed]`)
    proc-stat-HOST.txt        per host with a CPU model: /proc/stat's cpu lines (steal)
    ss-tin-NODE.txt           per node with a sampled flow's socket: `ss -tin` at the end of the
                              run (tcplab.results.ss: addresses 10.0.X.Y by node, fields tcplab
                              does not know omitted; apps of > 16 connections left out)
    cilium-status-NODE.txt    per node with Bandwidth-Manager pods: `cilium status`'s BandwidthManager
                              and Routing lines (:mod:`tcplab.results.cilium`)
    run.flent.gz              flent's data file of the run (`flent -i run.flent.gz -p totals`):
                              per-flow goodput, srtt as the ping series, tcp_info raw values
                              (:mod:`tcplab.exports.flent`)
    iperf3-FLOW.json          per sampled bulk/maerts flow: what `iperf3 -c -J` (`-R` when the
                              server sends) prints on its client (:mod:`tcplab.exports.iperf3`)
                              (these two: written by the export writer the Result carries,
                              tcplab.exports.write_exports, via tcplab.run)
    FLOW.pcap                 only when the run captured a flow (``tcplab run --pcap FLOW``):
                              its packets as tcpdump on its sender (or receiver) records them,
                              headers only (:mod:`tcplab.exports.pcap`)
    plots/goodput.png, cwnd.png, rtt.png, queues.png, flow-N.png, } written by the view writer
          qdisc-backlog.png, nic-rings.png (when present)
    report.html               one self-contained page: tables, plots inline } the Result carries
                                                                  (tcplab.views, via tcplab.run)
    scenario.yaml             the effective scenario: the source YAML with every override applied
    metadata.json             provenance: overrides, command line, tcplab/engine/Python versions,
                              tcplab's git commit when run from a checkout
    .tcplab-run               marks the directory as tcplab's (``--force`` replaces only those)

Everything in it except metadata.json is a function of the scenario and seed (no wall-clock
times, no absolute paths), so the same run gives the same files; metadata.json records how
and with what the run was made, which differs between machines and invocations.

Provenance: ``overrides`` (``["flows.0.cc=bbr", "seed=5"]``) are the ``--set`` and ``--seed``
values the run was made with. The summary's ``title`` is the scenario name followed by them
(``cubic-vs-bbr-lossy [flows.0.cc=bbr]``) and its ``description`` ends with a line naming them,
so that a scenario description written for the base values never passes for what ran.
"""

from __future__ import annotations

import json
import math
import os
import platform
import subprocess
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tcplab.columns import HOST_DTYPES
from tcplab.engine import EngineOutput
from tcplab.results.apps import AppResult, app_results, app_summaries, collapsed_flows, write_app_tables
from tcplab.results.cilium import cilium_status_texts
from tcplab.results.counters import format_nstat
from tcplab.results.ethtool import format_ethtool_features, format_ethtool_stats
from tcplab.results.paths import flow_paths
from tcplab.results.procstat import format_proc_stat
from tcplab.results.rundir import write_dir_atomically, write_marker
from tcplab.results.ss import ss_texts as _ss_texts
from tcplab.results.stuck import find_episodes
from tcplab.results.tc import STAT_KEYS, format_node, link_devices
from tcplab.scenario import Scenario

__all__ = [
    "Result",
    "RUN_FILES",
    "SUMMARY_FLOW_KEYS",
    "SUMMARY_LINK_KEYS",
    "SUMMARY_HOST_KEYS",
    "ViewWriter",
    "ExportWriter",
    "interval_rate",
]

#: Files (relative to the run directory) that ``Result.write`` produces.
RUN_FILES = (
    ".tcplab-run",
    "scenario.yaml",
    "metadata.json",
    "summary.json",
    "scenario.resolved.json",
    "flows.parquet",
    "timeseries.parquet",
    "queues.parquet",
    "counters.txt",
    "run.flent.gz",
    "plots/goodput.png",
    "plots/cwnd.png",
    "plots/rtt.png",
    "plots/queues.png",
    "report.html",
)

#: Writes the views of a run (plots, report.html) into a run directory being filled:
#: ``views(result, directory, plots=...)``. Results never import views (data flows one way,
#: DESIGN.md); the runner passes :func:`tcplab.views.write_run_views`.
ViewWriter = Callable[..., None]

#: Writes a run's files in other tools' formats (run.flent.gz, iperf3-FLOW.json) into a run
#: directory being filled: ``exports(result, directory)``. Results never import exports
#: either; the runner passes :func:`tcplab.exports.write_exports`.
ExportWriter = Callable[..., object]

SUMMARY_FLOW_KEYS = (
    "name",
    "from",
    "to",
    "cc",
    "start_s",
    "end_s",
    "goodput_bps",
    "bytes_received",
    "data_segs_out",
    "retrans_segs",
    "retrans_ratio",
    "timeouts",
    "rtt_samples",
    "rtt_p50_ms",
    "rtt_p90_ms",
    "rtt_p99_ms",
    # ss -i's chronographs (tcp_info tcpi_busy_time, tcpi_rwnd_limited, tcpi_sndbuf_limited):
    # a slow reader's headline is rwnd_limited_pct (ss's rwnd_limited:Xms(Y%))
    "busy_ms",
    "rwnd_limited_ms",
    "rwnd_limited_pct",
    "sndbuf_limited_ms",
    # the direction of the data (the sender whose goodput, cwnd and RTT these are)
    "data_from",
    "data_to",
)
#: An application with more than this many connections (a broadcast's thousands) gets one
#: aggregate row in summary.json's ``flows`` (``"connections": N``, ``"per_connection":
#: "flows.parquet"``); its connections' own rows are in flows.parquet (column ``app``).
SUMMARY_MAX_APP_CONNECTIONS = 16
SUMMARY_LINK_KEYS = (
    "name",
    "from",
    "to",
    "node",
    "dev",
    "qdisc",
    "sent_packets",
    "sent_bytes",
    "drops",
    "loss_drops",
    "overlimits",
    "requeues",
    "backlog_bytes",
    "backlog_packets",
    "max_backlog_packets",
    "reorder_events",
    "xstats",
    "child",
    "edt",
)
#: Per host in summary.json: its NIC (``driver``, ``rx_ring``, ``rx_queues``, ``ethtool``
#: counters by their ethtool -S names) and CPU model (``period_ns``, ``share``, ``on_ns``,
#: ``steal_ns``, ``steal_ratio``; with ``cpu.cost`` also ``busy_ns``, the stack's CPU time,
#: and ``busy_ratio`` = busy_ns / on_ns), each null when the host has none.
SUMMARY_HOST_KEYS = ("name", "nic", "cpu")


def _version() -> str:
    from tcplab.version import __version__

    return __version__


def _node_name(value: Any, nodes: list[str]) -> str:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and 0 <= int(value) < len(nodes):
        return nodes[int(value)]
    return str(value)


def _finite(x: Any) -> Any:
    """JSON-safe: NaN/inf become null, NumPy scalars become Python numbers."""
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        x = float(x)
        return x if math.isfinite(x) else None
    return x


class Result:
    """One run: DataFrames for flows, links, counters and time series, plus a summary.

    Attributes:
        scenario: the validated :class:`~tcplab.scenario.Scenario`.
        config: the engine configuration that was run (``scenario.to_core()``).
        flows: one row per flow (goodput_bps, retrans_ratio, rtt_p50_ms, ...).
        links: one row per one-way link (qdisc counters as ``tc -s`` names them; ``node`` and
            ``dev`` name its egress device; ``xstats`` the qdisc's own counters, ``child``
            tbf's inner qdisc, as dicts).
        timeseries: one row per (sample, flow), see the module doc.
        queues: one row per (sample, link), with the link's node, device and qdisc kind.
        host_series: one row per (sample, host with a CPU or NIC model): cpu_on,
            rx_ring_used, rx_dropped (cumulative), allowance_queued, host_name, t_s.
        hosts: per host, its ``nic`` and ``cpu`` dicts (None when it has no such model).
        apps: app name -> :class:`~tcplab.results.apps.AppResult` (kind, summary, tables as
            DataFrames), in the configuration's order; empty for a run without apps.
        counters: host, counter, value (nstat names).
        flow_counters: flow, counter, value.
        invariant: the engine's packet accounting check.
        summary: the content of summary.json.
    """

    #: Time-series columns this run could not record (0 in the series; views and validate
    #: skip them): none for a simulation; a kernel run's ss does not show the CA state, ...
    unknown_columns: tuple[str, ...] = ()

    def __init__(
        self,
        scenario: Scenario,
        config: dict[str, Any],
        output: EngineOutput,
        *,
        wall_time_s: float | None = None,
        views: ViewWriter | None = None,
        exports: ExportWriter | None = None,
        overrides: Sequence[str] = (),
        command: Sequence[str] | None = None,
    ):
        self.scenario = scenario
        self.views = views
        self.exports = exports
        #: the ``--set``/``--seed`` overrides this run was made with, as ``PATH=VALUE`` text
        self.overrides = [str(o) for o in overrides]
        #: the command line that made it (``["tcplab", "run", ...]``), when run from the CLI
        self.command = list(command) if command is not None else None
        self.config = config
        self.engine_version = output.version
        self.events = output.events
        self.packets = output.packets
        self.wall_time_s = wall_time_s
        self.invariant = dict(output.invariant)
        self.names = output.names
        self.duration_s = config["duration_ns"] / 1e9
        self.sample_interval_s = config["sample_interval_ns"] / 1e9
        self._nodes = [n["name"] for n in config["nodes"]]
        # Kept from the engine's per-flow records: only the RTT histograms' stated resolution
        # (the records themselves are ~1 KB a flow: 50 MB for a 40k-connection broadcast).
        self._rtt_relative_errors = {
            float(r["relative_error"]) for f in output.flows for r in [f.get("rtt_us") or {}] if "relative_error" in r
        }
        self.flows = self._flows_frame(output)
        self.links = self._links_frame(output)
        self.counters = pd.DataFrame(
            [(h["name"], k, int(v)) for h in output.hosts for k, v in h.get("counters", {}).items()],
            columns=["host", "counter", "value"],
        )
        # Long format with categorical names: a 40k-connection broadcast has ~1.6 M rows, whose
        # repeated name strings as Python objects cost ~80 MB; as categories a few MB.
        self.flow_counters = _flow_counters(output.flows)
        self._host_counters = {h["name"]: {k: int(v) for k, v in h.get("counters", {}).items()} for h in output.hosts}
        self.hosts = self._hosts_list(output)
        self.timeseries = self._timeseries_frame(output)
        self.queues = self._queues_frame(output)
        self.host_series = self._host_series_frame(output)
        self.apps: dict[str, AppResult] = app_results(getattr(output, "apps", None) or [], config)
        #: cwnd-collapse and stuck episodes (:func:`tcplab.results.stuck.find_episodes`, defaults)
        self.stuck = find_episodes(self.timeseries, config)
        self.summary = self._summary()
        #: the packet capture the run was asked for (``tcplab.run(..., capture=...)``), or None
        self.capture = getattr(output, "capture", None)
        #: more files for the run directory, by name (``FLOW.pcap`` of a capture; written
        #: by :meth:`write`, names matching results.rundir.RUN_ENTRY_PATTERN)
        self.extra_files: dict[str, bytes] = {}
        # the end-of-run tool texts, made once: the run writer and its report both show them
        self._end_stats_files: dict[str, str] | None = None

    # -- derived tables ---------------------------------------------------------------

    def _flows_frame(self, out: EngineOutput) -> pd.DataFrame:
        data_side = {str(f["name"]): str(f.get("data_side", "client")) for f in self.config.get("flows", [])}
        app_of = {str(k): str(a["name"]) for a in self.config.get("apps", []) for k in _app_flow_names(a, self.config)}
        nan = float("nan")
        no_ecn = (nan,) * len(ECN_COLUMNS)
        nodes = self._nodes
        # One tuple per flow in FLOW_COLUMNS' order (pandas infers each column's dtype as it
        # does from dicts; a dict per row was half of a 10,000-connection run's Result).
        rows = []
        for f in out.flows:
            start, end = int(f["start_ns"]), int(f["end_ns"])
            lifetime_s = (end - start) / 1e9
            rtt = f.get("rtt_us") or {}
            samples = int(rtt.get("count", 0))
            if samples > 0:
                rtt_ms = tuple(float(v) / 1000.0 if (v := rtt.get(k)) is not None else nan for k in _RTT_KEYS)
            else:
                rtt_ms = (nan,) * len(_RTT_KEYS)
            segs = int(f["data_segs_out"])
            retrans_segs = int(f["retrans_segs"])
            received = int(f["bytes_received"])
            # ss -i's busy / rwnd_limited:Xms(Y%) / sndbuf_limited (tcp_info chronographs);
            # NaN from engines that did not report them.
            chrono = f.get("chrono")
            if chrono:
                busy_ms = int(chrono["busy_us"]) / 1000.0
                rwnd_ms = int(chrono["rwnd_limited_us"]) / 1000.0
                sndbuf_ms = int(chrono["sndbuf_limited_us"]) / 1000.0
                rwnd_pct = 100.0 * rwnd_ms / busy_ms if busy_ms > 0 else 0.0
            else:
                busy_ms = rwnd_ms = sndbuf_ms = rwnd_pct = nan
            ecn = f.get("ecn")
            src, dst = _node_name(f["src"], nodes), _node_name(f["dst"], nodes)
            # The side that writes the data (engine FlowConfig.data_side; "server" for maerts,
            # bidir's .rev, hls, nfs_stream): goodput, cwnd and the RTT are that sender's.
            name = f["name"]
            server_sends = data_side.get(str(name)) == "server"
            rows.append(
                (
                    name,
                    src,
                    dst,
                    dst if server_sends else src,
                    src if server_sends else dst,
                    app_of.get(str(name)),
                    f["cc"],
                    start / 1e9,
                    end / 1e9,
                    lifetime_s,
                    int(f["bytes_sent"]),
                    int(f["bytes_retrans"]),
                    int(f["bytes_acked"]),
                    received,
                    received * 8 / lifetime_s if lifetime_s > 0 else nan,
                    segs,
                    retrans_segs,
                    retrans_segs / segs if segs > 0 else 0.0,
                    int(f["timeouts"]),
                    samples,
                    *rtt_ms,
                    busy_ms,
                    rwnd_ms,
                    rwnd_pct,
                    sndbuf_ms,
                    *(_ecn_values(ecn) if isinstance(ecn, dict) else no_ecn),
                )
            )
        return pd.DataFrame(rows, columns=list(FLOW_COLUMNS))

    def _links_frame(self, out: EngineOutput) -> pd.DataFrame:
        rows = []
        devices = link_devices(self.config)
        for i, link in enumerate(out.links):
            row = dict(link)
            row["from"] = _node_name(link.get("from"), self._nodes)
            row["to"] = _node_name(link.get("to"), self._nodes)
            row["node"], row["dev"] = devices[i] if i < len(devices) else (row["from"], "?")
            row["xstats"] = {str(k): int(v) for k, v in (link.get("xstats") or {}).items()}
            child = link.get("child")
            row["child"] = _child(child) if isinstance(child, dict) else None
            row["edt"] = self._edt(i, link.get("edt"))
            rows.append(row)
        columns = [
            "name",
            "from",
            "to",
            "node",
            "dev",
            "qdisc",
            "sent_bytes",
            "sent_packets",
            "drops",
            "overlimits",
            "requeues",
            "backlog_bytes",
            "backlog_packets",
            "max_backlog_packets",
            "loss_drops",
            "reorder_events",
            "xstats",
            "child",
            "edt",
        ]
        frame = pd.DataFrame(rows)
        for c in columns:
            if c not in frame.columns:
                frame[c] = pd.Series(dtype="int64")
        return frame[columns + [c for c in frame.columns if c not in columns]]

    def _edt(self, link_index: int, edt_out: Any) -> list[dict[str, Any]]:
        """A link's Cilium EDT aggregates (bpf/lib/edt.h), one per pod limit: ``pods`` (names),
        ``rate_bps``, ``drops`` (packets 2 s or more ahead, dropped before the qdisc: not in
        tc's counters), ``stamped``, ``passed`` and ``ce_marks`` (the what-if marking of
        ``bandwidth_manager.ce_threshold``)."""
        if not isinstance(edt_out, list):
            return []
        cfg_links = self.config.get("links", [])
        cfg = cfg_links[link_index].get("edt") or [] if link_index < len(cfg_links) else []
        rows = []
        for j, e in enumerate(edt_out):
            nodes = cfg[j].get("nodes", []) if j < len(cfg) else []
            rows.append(
                {
                    "pods": [_node_name(n, self._nodes) for n in nodes],
                    "rate_bps": int(e.get("rate_bps", 0) or 0),
                    "drops": int(e.get("drops", 0) or 0),
                    "stamped": int(e.get("stamped", 0) or 0),
                    "passed": int(e.get("passed", 0) or 0),
                    "ce_marks": int(e.get("ce_marks", 0) or 0),
                }
            )
        return rows

    def _timeseries_frame(self, out: EngineOutput) -> pd.DataFrame:
        ts = out.timeseries.copy()
        flow_names = [f["name"] for f in self.config["flows"]]
        flow_cc = [f["cc"] for f in self.config["flows"]]
        idx = ts["flow"].to_numpy().astype(np.int64)
        ts["flow_name"] = _lookup(flow_names, idx, "?")
        ts["t_s"] = ts["t_ns"].to_numpy().astype(np.float64) / 1e9
        ts["goodput_bps"] = _interval_rate(ts, "flow", "bytes_received", self.config["sample_interval_ns"])
        ca_names = list(self.names.get("ca_state", []))
        ts["ca_state_name"] = _lookup(ca_names, ts["ca_state"].to_numpy().astype(np.int64), "?")
        modes = self.names.get("cc_mode", {}) or {}
        mode_col = ts["cc_mode"].to_numpy().astype(np.int64)
        cc_of_row = _lookup(flow_cc, idx, "")
        names = np.full(len(ts), "", dtype=object)
        for cc, labels in modes.items():
            mask = cc_of_row == cc
            if mask.any():
                names[mask] = _lookup(list(labels), mode_col[mask], "?")
        ts["cc_mode_name"] = names.astype(str) if len(ts) else np.array([], dtype=str)
        return ts

    def _queues_frame(self, out: EngineOutput) -> pd.DataFrame:
        qs = out.queues.copy()
        link_names = [link["name"] for link in self.config["links"]]
        idx = qs["link"].to_numpy().astype(np.int64)
        qs["link_name"] = _lookup(link_names, idx, "?")
        devices = link_devices(self.config)
        qs["node"] = _lookup([d[0] for d in devices], idx, "?")
        qs["dev"] = _lookup([d[1] for d in devices], idx, "?")
        kinds = [str((link.get("queue") or {}).get("kind", "?")) for link in self.config["links"]]
        qs["qdisc"] = _lookup(kinds, idx, "?")
        qs["t_s"] = qs["t_ns"].to_numpy().astype(np.float64) / 1e9
        return qs

    def _host_series_frame(self, out: EngineOutput) -> pd.DataFrame:
        """``out.host_series`` (``host`` is the node's index in the engine config) + names."""
        hs = getattr(out, "host_series", None)
        if hs is None:
            hs = pd.DataFrame({c: np.array([], dtype=d) for c, d in HOST_DTYPES.items()})
        hs = hs.copy()
        hs["host_name"] = _lookup(self._nodes, hs["host"].to_numpy().astype(np.int64), "?")
        hs["t_s"] = hs["t_ns"].to_numpy().astype(np.float64) / 1e9
        return hs

    def _hosts_list(self, out: EngineOutput) -> list[dict[str, Any]]:
        """Per engine host: name, ``nic`` and ``cpu`` (None when absent: older engines, hosts
        without the model), with plain-int counters and the CPU's steal ratio."""
        hosts = []
        for h in out.hosts:
            nic = h.get("nic")
            cpu = h.get("cpu")
            if isinstance(nic, dict):
                nic = {
                    "driver": str(nic.get("driver", "?")),
                    "rx_ring": _int_or_none(nic.get("rx_ring")),
                    "rx_queues": _int_or_none(nic.get("rx_queues")),
                    "ethtool": {str(k): int(v) for k, v in (nic.get("ethtool") or {}).items()},
                }
            else:
                nic = None
            if isinstance(cpu, dict):
                cpu_in = cpu
                on_ns = int(cpu.get("on_ns", 0) or 0)
                steal_ns = int(cpu.get("steal_ns", 0) or 0)
                total = on_ns + steal_ns
                cpu = {
                    "period_ns": _int_or_none(cpu.get("period_ns")),
                    "share": _finite(cpu.get("share")),
                    "on_ns": on_ns,
                    "steal_ns": steal_ns,
                    "steal_ratio": steal_ns / total if total > 0 else 0.0,
                }
                if cpu_in.get("busy_ns") is not None:
                    # cpu.cost: the stack's CPU time and its share of the time the host ran.
                    busy_ns = int(cpu_in["busy_ns"])
                    cpu["busy_ns"] = busy_ns
                    cpu["busy_ratio"] = busy_ns / on_ns if on_ns > 0 else 0.0
            else:
                cpu = None
            hosts.append({"name": str(h.get("name", "?")), "nic": nic, "cpu": cpu})
        return hosts

    def _summary(self) -> dict[str, Any]:
        paths = flow_paths(self.config)
        folded = collapsed_flows(self.apps, SUMMARY_MAX_APP_CONNECTIONS)
        # An app's 10,000 connections are one row, summed from the columns: only the other
        # flows become records (a record per connection cost more than the simulation)
        app_of = [folded.get(str(n)) for n in self.flows["name"].tolist()]
        members: dict[str, list[int]] = {}
        for i, app in enumerate(app_of):
            if app is not None:
                members.setdefault(app, []).append(i)
        shown = [i for i, app in enumerate(app_of) if app is None]
        records = iter(self.flows.iloc[shown].to_dict("records") if members else self.flows.to_dict("records"))
        columns = _Columns(self.flows)
        flows = []
        for app in app_of:
            if app is not None:
                if app in members:  # at the app's first connection: one row for all of them
                    flows.append(_aggregate_flow(app, columns.rows(members.pop(app))))
                continue
            row = next(records)
            flow = {k: _finite(row[k]) for k in SUMMARY_FLOW_KEYS}
            # What the route allows (tcplab.results.paths): the smallest of its link rates and
            # shapers (tbf, fq maxrate, EDT), x mss / (mss + 52 + framing); None if unrouted.
            path = paths.get(str(row["name"]))
            flow["payload_ceiling_bps"] = path.payload_ceiling_bps if path else None
            ecn = _summary_ecn(row)
            if ecn is not None:
                flow["ecn"] = ecn
            flows.append(flow)
        links = []
        for row in self.links.to_dict("records"):
            links.append({k: _json_value(row.get(k)) for k in SUMMARY_LINK_KEYS})
        return {
            # what made these numbers: the simulator (a kernel run, tcplab.kernel.result, says "kernel")
            "kind": "simulation",
            "scenario": self.scenario.name,
            "title": self.title,
            "description": self.description,
            "overrides": list(self.overrides),
            "source": self.scenario.source,
            "seed": self.config["seed"],
            "tcplab_version": _version(),
            "engine_version": self.engine_version,
            "duration_s": self.duration_s,
            "sample_interval_s": self.sample_interval_s,
            "events": self.events,
            "packets": self.packets,
            "rtt_percentiles": self._rtt_percentiles(),
            "flows": flows,
            "links": links,
            "hosts": [{k: h[k] for k in SUMMARY_HOST_KEYS} for h in self.hosts],
            "invariant": {k: _finite(v) if not isinstance(v, dict) else v for k, v in self.invariant.items()},
            # per application (workload) name: its kind and what it reported (results/apps.py)
            "apps": app_summaries(self.apps),
            # cwnd-collapse and stuck episodes per flow, with the CC state during them
            # (tcplab.results.stuck; an empty list when none)
            "stuck": self.stuck,
        }

    def _rtt_percentiles(self) -> dict[str, Any]:
        """How the RTT percentiles were computed, with the engine's stated resolution."""
        errors = self._rtt_relative_errors
        return {
            "method": "low edge of log-linear histogram buckets (exact below 256 us)",
            "relative_error": max(errors) if errors else None,
        }

    # -- provenance -------------------------------------------------------------------

    @property
    def title(self) -> str:
        """What ran: the scenario name and the overrides, ``NAME [a=1, b=2]``."""
        name = self.scenario.name
        return f"{name} [{', '.join(self.overrides)}]" if self.overrides else name

    @property
    def description(self) -> str:
        """The scenario's description, and a last line naming the overrides that changed it."""
        text = (self.scenario.description or "").rstrip()
        if not self.overrides:
            return text
        note = (
            f"This run was made with {', '.join(self.overrides)}; "
            "where the description above says otherwise, these values are what ran."
        )
        return f"{text}\n\n{note}" if text else note

    def scenario_yaml(self) -> str:
        """scenario.yaml: the effective scenario (the source with every override applied)."""
        import yaml

        raw = getattr(self.scenario, "_raw", None) or self.scenario.model_dump(mode="json", by_alias=True)
        raw = json.loads(json.dumps(raw, default=str))  # plain data only
        header = f"# The scenario as run: {self.scenario.source or '<scenario>'}"
        if self.overrides:
            header += f" with {', '.join(self.overrides)}"
        return header + "\n" + yaml.safe_dump(raw, sort_keys=False, allow_unicode=True)

    def metadata(self) -> dict[str, Any]:
        """metadata.json: how and with what this run was made."""
        return {
            # what made these numbers: the simulator (a kernel run, tcplab.kernel.result, says "kernel")
            "kind": "simulation",
            "scenario": self.scenario.name,
            "title": self.title,
            "source": self.scenario.source,
            "seed": self.config["seed"],
            "overrides": list(self.overrides),
            "command": self.command,
            "versions": {
                "tcplab": _version(),
                "engine": self.engine_version,
                "python": platform.python_version(),
                "tcplab_git_commit": _git_commit(),
            },
        }

    # -- views ------------------------------------------------------------------------

    def host_counters(self) -> dict[str, dict[str, int]]:
        """``{host: {nstat name: value}}``."""
        return {h: dict(c) for h, c in self._host_counters.items()}

    def nstat_text(self) -> str:
        """counters.txt content."""
        return format_nstat(self._host_counters, self.duration_s)

    def tc_texts(self) -> dict[str, str]:
        """``{node: tc -s qdisc text}`` for every node with a link (see :mod:`tcplab.results.tc`)."""
        links_out = self.links.to_dict("records")
        nodes = []
        for node, _dev in link_devices(self.config):
            if node not in nodes:
                nodes.append(node)
        return {node: format_node(self.config, links_out, node) for node in nodes}

    def ethtool_texts(self) -> dict[str, str]:
        """``{host: ethtool -S text}`` for hosts with a NIC model."""
        return {h["name"]: format_ethtool_stats(h["nic"]["ethtool"]) for h in self.hosts if h["nic"] is not None}

    def ethtool_features_texts(self) -> dict[str, str]:
        """``{host: ethtool -k text}`` for every host and pod: its offloads (a pod's are its node's)."""
        return {
            n["name"]: format_ethtool_features(self.scenario.offload_of(n["name"]))
            for n in self.config["nodes"]
            if n.get("kind") == "host"
        }

    def proc_stat_texts(self) -> dict[str, str]:
        """``{host: /proc/stat cpu lines}`` for hosts with a CPU model."""
        return {
            h["name"]: format_proc_stat(h["cpu"]["on_ns"], h["cpu"]["steal_ns"])
            for h in self.hosts
            if h["cpu"] is not None
        }

    def ss_texts(self, at_ns: int | None = None) -> dict[str, str]:
        """``{node: ss -tin text}`` for every node with a sampled flow's socket, as at
        ``at_ns`` (ns since the run's start; None = the end of the run), see
        :mod:`tcplab.results.ss`."""
        return _ss_texts(self.config, self.flows, self.timeseries, at_ns)

    def stats_files(self, at_ns: int | None = None) -> dict[str, str]:
        """The tool-format texts of the run directory, by file name (``at_ns``: ss as at that
        time; the other texts are end-of-run counters)."""
        if at_ns is None:
            if self._end_stats_files is None:
                self._end_stats_files = self._stats_files(None)
            return dict(self._end_stats_files)
        return self._stats_files(at_ns)

    def _stats_files(self, at_ns: int | None) -> dict[str, str]:
        files = {f"tc-qdisc-{node}.txt": text for node, text in self.tc_texts().items()}
        files.update({f"ss-tin-{node}.txt": text for node, text in self.ss_texts(at_ns).items()})
        files.update({f"ethtool-S-{host}.txt": text for host, text in self.ethtool_texts().items()})
        files.update({f"ethtool-k-{host}.txt": text for host, text in self.ethtool_features_texts().items()})
        files.update({f"proc-stat-{host}.txt": text for host, text in self.proc_stat_texts().items()})
        files.update({f"cilium-status-{node}.txt": text for node, text in cilium_status_texts(self.scenario).items()})
        return files

    @property
    def has_host_models(self) -> bool:
        """Whether some host has a NIC or CPU model (or the engine sampled one)."""
        return any(h["nic"] is not None or h["cpu"] is not None for h in self.hosts) or len(self.host_series) > 0

    def __repr__(self) -> str:
        return f"<Result {self.scenario.name!r} seed={self.config['seed']} flows={len(self.flows)}>"

    # -- the run directory ------------------------------------------------------------

    def write(self, directory: str | os.PathLike[str], *, overwrite: bool = False, plots: bool = True) -> Path:
        """Write the run directory (see the module doc) atomically and return its path.

        Files are written into a temporary directory next to ``directory`` and renamed into
        place at the end, so a failure leaves no partial output. An existing non-empty
        ``directory`` is an error unless ``overwrite``.
        """
        return write_dir_atomically(directory, lambda tmp: self._write_files(tmp, plots=plots), overwrite=overwrite)

    def write_files(self, directory: Path, *, plots: bool = True) -> None:
        """Write the run directory's files into ``directory``, an empty directory that a
        caller fills and renames into place itself (a comparison's variant directories);
        :meth:`write` is the atomic whole."""
        self._write_files(directory, plots=plots)

    def _write_files(self, out: Path, *, plots: bool) -> None:
        write_marker(out, "run")
        (out / "scenario.yaml").write_text(self.scenario_yaml(), encoding="utf-8")
        (out / "metadata.json").write_text(json.dumps(self.metadata(), indent=2) + "\n", encoding="utf-8")
        (out / "summary.json").write_text(json.dumps(self.summary, indent=2, allow_nan=False) + "\n", encoding="utf-8")
        (out / "scenario.resolved.json").write_text(_config_json(self.config), encoding="utf-8")
        _write_parquet(self.flows, out / "flows.parquet")
        _write_parquet(self.timeseries, out / "timeseries.parquet")
        _write_parquet(self.queues, out / "queues.parquet")
        if self.has_host_models:
            _write_parquet(self.host_series, out / "hosts.parquet")
        write_app_tables(self.apps, out, _write_parquet)
        (out / "counters.txt").write_text(self.nstat_text(), encoding="utf-8")
        for name, text in self.stats_files().items():
            (out / name).write_text(text, encoding="utf-8")
        for name, data in self.extra_files.items():
            (out / name).write_bytes(data)
        if self.exports is not None:
            self.exports(self, out)
        if self.views is not None:
            self.views(self, out, plots=plots)


def _app_flow_names(app: dict[str, Any], config: dict[str, Any]) -> list[str]:
    """The engine flow names of one engine app config (its ``flows`` are flow indices)."""
    flows = config.get("flows", [])
    return [str(flows[int(i)]["name"]) for i in app.get("flows", []) if 0 <= int(i) < len(flows)]


#: flows.parquet's ECN columns (engine ``flows[i]["ecn"]``; NaN from a producer without it, an
#: older engine or a kernel run): the data sender's and receiver's ``tp->ecn_flags``
#: (TCP_ECN_OK 1, TCP_ECN_QUEUE_CWR 2, TCP_ECN_DEMAND_CWR 4, TCP_ECN_SEEN 8), the sender's
#: ``tcpi_delivered_ce``, and a DCTCP sender's ``tcp_dctcp_info`` (NaN for other ccs).
ECN_COLUMNS = (
    "ecn_flags",
    "receiver_ecn_flags",
    "delivered_ce",
    "dctcp_ce_state",
    "dctcp_alpha",
    "dctcp_ab_ecn",
    "dctcp_ab_tot",
)

#: Result.flows' columns, in order
FLOW_COLUMNS = (
    "name",
    "from",
    "to",
    "data_from",
    "data_to",
    "app",
    "cc",
    "start_s",
    "end_s",
    "duration_s",
    "bytes_sent",
    "bytes_retrans",
    "bytes_acked",
    "bytes_received",
    "goodput_bps",
    "data_segs_out",
    "retrans_segs",
    "retrans_ratio",
    "timeouts",
    "rtt_samples",
    "rtt_min_ms",
    "rtt_mean_ms",
    "rtt_p50_ms",
    "rtt_p90_ms",
    "rtt_p99_ms",
    "rtt_max_ms",
    "busy_ms",
    "rwnd_limited_ms",
    "rwnd_limited_pct",
    "sndbuf_limited_ms",
    *ECN_COLUMNS,
)
#: the engine's RTT summary keys behind rtt_*_ms, in FLOW_COLUMNS' order
_RTT_KEYS = ("min", "mean", "p50", "p90", "p99", "max")


def _summary_ecn(row: Mapping[str, Any]) -> dict[str, Any] | None:
    """summary.json's ``ecn`` of a flow that negotiated ECN (its data sender has TCP_ECN_OK):
    the CE-marked packets its sender learnt of (``tcpi_delivered_ce``) and DCTCP's alpha
    (1/1024) when it runs DCTCP; None otherwise, so flows without ECN keep their keys."""
    flags = row.get("ecn_flags")
    if flags is None or flags != flags or not int(flags) & 1:
        return None
    alpha = row.get("dctcp_alpha")
    return {
        "delivered_ce": int(row["delivered_ce"]),
        "dctcp_alpha": int(alpha) if alpha is not None and alpha == alpha else None,
    }


def _ecn_values(ecn: dict[str, Any]) -> tuple[float, ...]:
    """A flow's :data:`ECN_COLUMNS` values from the engine's ``ecn`` entry (NaN where absent)."""
    nan = float("nan")
    dctcp = ecn.get("dctcp") or {}
    return (
        int(ecn["sender_flags"]),
        int(ecn["receiver_flags"]),
        int(ecn["delivered_ce"]),
        *(int(dctcp[k]) if k in dctcp else nan for k in ("ce_state", "alpha", "ab_ecn", "ab_tot")),
    )


def _flow_counters(flows: list[dict[str, Any]]) -> pd.DataFrame:
    """``Result.flow_counters``: flow, counter, value (long format), the names categorical,
    built a column at a time (a tuple per row was most of a broadcast's Result)."""
    names: list[str] = []
    keys: list[str] = []
    values: list[int] = []
    for f in flows:
        counters = f.get("counters", {})
        names.extend([f["name"]] * len(counters))
        keys.extend(counters)
        # the engine's counters are Python ints (u64); NumPy converts them in C, int() per
        # value was a third of this function
        values.extend(counters.values())
    try:
        column = np.asarray(values, dtype=np.int64)
    except (TypeError, ValueError):  # not the engine's ints (a kernel run's parsed values)
        column = np.asarray([int(v) for v in values], dtype=np.int64)
    frame = pd.DataFrame({"flow": names, "counter": keys, "value": column})
    return frame.astype({"flow": "category", "counter": "category"})


class _Columns:
    """A frame's columns as Python lists, each made on first use, and rows of them."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self.frame = frame
        self.lists: dict[str, list[Any]] = {}

    def rows(self, positions: list[int]) -> _Rows:
        return _Rows(self, positions)

    def column(self, key: str) -> list[Any]:
        if key not in self.lists:
            self.lists[key] = self.frame[key].tolist()  # the Python values to_dict("records") gives
        return self.lists[key]


class _Rows:
    """Some rows of a frame, read a column at a time (:func:`_aggregate_flow`)."""

    def __init__(self, columns: _Columns, positions: list[int]) -> None:
        self.columns = columns
        self.positions = positions

    def __len__(self) -> int:
        return len(self.positions)

    def values(self, key: str) -> list[Any]:
        column = self.columns.column(key)
        return [column[i] for i in self.positions]


def _aggregate_flow(app: str, rows: _Rows) -> dict[str, Any]:
    """summary.json's one row for an app's many connections: totals (goodput, bytes,
    segments, retransmissions, RTOs, chronograph times summed; ratios of the sums), no RTT
    percentiles (per connection in flows.parquet, rows whose ``app`` is ``app``)."""

    def total(key: str) -> float:
        # the column's Python values (tolist()): NaN and None skipped, as _finite() would
        isfinite = math.isfinite
        return float(sum(x for x in rows.values(key) if x is not None and (type(x) is int or isfinite(x))))

    def one_or_list(key: str) -> str | list[str]:
        values = list(dict.fromkeys(str(x) for x in rows.values(key)))
        return values[0] if len(values) == 1 else values

    segs, busy = int(total("data_segs_out")), total("busy_ms")
    return {
        "name": app,
        "app": app,
        "connections": len(rows),
        "per_connection": "flows.parquet",
        "from": one_or_list("from"),
        "to": one_or_list("to"),
        "cc": one_or_list("cc"),
        "start_s": min(float(x) for x in rows.values("start_s")),
        "end_s": max(float(x) for x in rows.values("end_s")),
        "goodput_bps": total("goodput_bps"),
        "bytes_received": int(total("bytes_received")),
        "data_segs_out": segs,
        "retrans_segs": int(total("retrans_segs")),
        "retrans_ratio": total("retrans_segs") / segs if segs > 0 else 0.0,
        "timeouts": int(total("timeouts")),
        "rtt_samples": int(total("rtt_samples")),
        "rtt_p50_ms": None,
        "rtt_p90_ms": None,
        "rtt_p99_ms": None,
        "busy_ms": busy,
        "rwnd_limited_ms": total("rwnd_limited_ms"),
        "rwnd_limited_pct": 100.0 * total("rwnd_limited_ms") / busy if busy > 0 else 0.0,
        "sndbuf_limited_ms": total("sndbuf_limited_ms"),
        "data_from": one_or_list("data_from"),
        "data_to": one_or_list("data_to"),
        "payload_ceiling_bps": None,
    }


#: Above this many flows the resolved configuration is written without indentation: a 40k-connection
#: broadcast's indented config is ~57 MB (1.4 KB per flow), compact ~36 MB, the same JSON.
COMPACT_CONFIG_FLOWS = 1000


def _config_json(config: dict[str, Any]) -> str:
    """scenario.resolved.json's text: indented for people, compact for configs of thousands of flows."""
    if len(config.get("flows") or ()) > COMPACT_CONFIG_FLOWS:
        return json.dumps(config, separators=(",", ":")) + "\n"
    return json.dumps(config, indent=2) + "\n"


@cache
def _git_commit() -> str | None:
    """The commit of tcplab's source checkout, or None (installed from a wheel, no git)."""
    here = Path(__file__).resolve().parent
    try:
        done = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    sha = done.stdout.strip()
    return sha if done.returncode == 0 and len(sha) == 40 else None


def _int_or_none(x: Any) -> int | None:
    return None if x is None else int(x)


def _child(child: dict[str, Any]) -> dict[str, Any]:
    """A tbf child's stats from the engine: its kind, the common counters, its xstats."""
    out: dict[str, Any] = {"qdisc": str(child.get("qdisc", "?"))}
    for k in STAT_KEYS:
        if k in child:
            out[k] = int(child[k])
    for k, v in child.items():
        if k not in out and k != "xstats" and isinstance(v, (int, np.integer)) and not isinstance(v, bool):
            out[k] = int(v)
    out["xstats"] = {str(k): int(v) for k, v in (child.get("xstats") or {}).items()}
    return out


def _json_value(x: Any) -> Any:
    """:func:`_finite`, through dicts (xstats, child)."""
    if isinstance(x, dict):
        return {str(k): _json_value(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_json_value(v) for v in x]
    if x is None:
        return None
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return _finite(x)


def _lookup(names: list[str], index: np.ndarray, missing: str) -> np.ndarray:
    table = np.array(list(names) + [missing], dtype=object)
    safe = np.where((index >= 0) & (index < len(names)), index, len(names))
    return table[safe].astype(str) if len(index) else np.array([], dtype=str)


def interval_rate(frame: pd.DataFrame, key: str, counter: str, interval_ns: int) -> np.ndarray:
    """Per-row rate in bit/s of a cumulative byte counter, within each ``key`` group. A row
    whose counter is NaN (a kernel sampler's gap) has no rate, and the next row's rate is over
    the time since the last row that has a value (a gap is not a zero)."""
    if frame.empty:
        return np.array([], dtype=np.float64)
    order = np.lexsort((frame["t_ns"].to_numpy(), frame[key].to_numpy()))
    keys = frame[key].to_numpy()[order]
    t = frame["t_ns"].to_numpy().astype(np.float64)[order]
    c = frame[counter].to_numpy().astype(np.float64)[order]
    have = np.isfinite(c)
    keys, t_have, c_have = keys[have], t[have], c[have]
    first = np.ones(len(keys), dtype=bool)
    first[1:] = keys[1:] != keys[:-1]
    dc = np.where(first, c_have, c_have - np.roll(c_have, 1))
    dt = np.where(first, float(interval_ns), t_have - np.roll(t_have, 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        rate_have = np.where(dt > 0, dc * 8.0 / (dt / 1e9), np.nan)
    rate = np.full(len(order), np.nan)
    rate[have] = rate_have
    out = np.empty(len(order), dtype=np.float64)
    out[order] = rate
    return out


_interval_rate = interval_rate


def _write_parquet(frame: pd.DataFrame, path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame, preserve_index=False)
    # No pandas metadata blob: it would make the file depend on the pandas version.
    table = table.replace_schema_metadata(None)
    pq.write_table(table, path, compression="zstd")

"""What a kernel run measured, and the engine-shaped output built from it.

The model: a kernel run leaves texts the kernel's own tools printed -- per host the traffic
agent's JSON (final ``struct tcp_info`` of every socket, rr transactions) and its ``ss -tinH``
samples (``# t_ns=N`` then ss's lines, every sample interval: read in-process and printed as ss
prints them, :mod:`tcplab.kernel.ss_line`), per node ``tc -s qdisc show``
(text and ``-j``), ``ip -s -j link show`` and ``nstat -asz`` before and after the traffic, per
wire namespace ``nft -j list ruleset`` (the loss rules' counters) and the delay lines' stats,
and the parent's queue samples. :func:`collect` gathers them into :class:`Measurements` (the
only function here that runs commands); :func:`build_raw` turns them into the dict the
simulator returns, so :func:`tcplab.engine.parse_output` and :class:`tcplab.results.Result`
read a kernel run as they read a simulation:

* ``flows``: per flow, the data sender's socket (``data_side``: the client for bulk and rr, the
  server for maerts) and the receiver's: ``bytes_sent``/``bytes_retrans``/``bytes_acked``/
  ``data_segs_out``/``retrans_segs`` (tcpi_total_retrans) from the sender's final TCP_INFO,
  ``bytes_received`` from the receiver's; ``timeouts`` = the sender's ``tcpi_total_rto``
  (Linux >= 6.7; 0 before); ``chrono`` = tcpi_busy_time/rwnd_limited/sndbuf_limited;
  ``ecn``: each socket's ECN state as ``tcpi_options`` shows it (:func:`ecn_flags`:
  TCPI_OPT_ECN -> ``TCP_ECN_OK``, TCPI_OPT_ECN_SEEN -> ``TCP_ECN_SEEN``; ``tp->ecn_flags``'
  other bits, QUEUE_CWR and DEMAND_CWR, are in no interface and read 0) and the sender's
  ``tcpi_delivered_ce``; ``dctcp`` null (``struct tcp_dctcp_info`` is not read: no DCTCP on
  the kernels kernel mode has run on);
  ``start_ns`` the configured start, ``end_ns`` for a flow with a byte count that finished
  when the sender saw all of it acknowledged (the simulator's ``done_ns``), else the end of
  the run;
  ``rtt_us`` summarises the sender's sampled srtt (ss ``rtt:X``), not every ACK's RTT sample
  as the simulator's histogram does: both worlds are compared on srtt (``relative_error`` 0:
  the values are exact, the sample set is different);
* ``timeseries``: one row per (sender's ss sample, flow): ``cwnd``, ``ssthresh`` (ss prints it
  only below 0xFFFF; absent -> 2147483647, Linux's TCP_INFINITE_SSTHRESH), ``srtt_us``/
  ``rttvar_us`` (``rtt:X/Y``), ``min_rtt_us`` (``minrtt``), ``pacing_rate_bps``,
  ``delivery_rate_bps``, ``inflight`` = unacked - sacked - lost + retrans (Linux v6.12
  include/net/tcp.h: tcp_packets_in_flight(), from ss's ``unacked``, ``sacked``, ``lost`` and
  ``retrans:C/T``), ``bytes_acked``, ``bytes_received`` and ``recv_q_bytes`` (the receiver's ss
  sample of the same schedule slot, slot k = floor(t / interval); where the receiver has no
  sample of the slot, a gap: build_raw's ``timeseries_gaps`` marks the row and the
  :class:`~tcplab.kernel.result.KernelResult` makes them NaN, never a 0 that would read
  as nothing received), ``retrans_segs`` (``retrans:C/T``'s T), BBR's ``bw``, ``pacing_gain`` and
  ``cwnd_gain`` (``bbr:(...)``), ``snd_wnd_bytes`` (``snd_wnd:``, printed by iproute2 6.x on
  Linux 6.2 and later; 0 when absent); ``ca_state``: ss does not print it, the agent reads
  ``tcpi_ca_state`` from the sender's TCP_INFO as each ss sample starts; ``cc_mode`` (BBR's
  mode, in no kernel interface) follows from the two gains ss prints, each mode setting its
  own pair (Linux v6.12 net/ipv4/tcp_bbr.c: bbr_update_gains(): STARTUP high_gain/high_gain,
  DRAIN drain_gain/high_gain, PROBE_BW cycle gain/2, PROBE_RTT 1/1). BBR's long-term
  sampling and tcp_sock's cumulative ``lost`` are in no interface: ``bbr_lt_use_bw``,
  ``bbr_lt_bw_bps`` and ``lost`` are 0 and listed in :func:`unknown_columns` (with
  ``ca_state`` when the agents did not read it; the run's metadata says so, views and
  validate skip them). ``t_ns`` is when the sender's ss started (ns since t0); the
  receiver's sample of the same slot started within a few ms of it;
* ``links``: per one-way link, the root qdisc of its egress device in ``tc -s -j``
  (a link the delay line marks, :func:`tcplab.kernel.plan.line_markers`: the line's TUN is
  its queue, its drops are added and its CE marks are the link's xstats ``ce_mark``)
  (``bytes``, ``packets``, ``drops``, ``overlimits``, ``requeues``, ``backlog``, ``qlen``) and
  its child (a tbf's); a device whose root is ``noqueue`` (a veth's default) takes
  ``sent_bytes``/``sent_packets`` from the device's tx counters. ``loss_drops``: the nft loss
  rule's counter (comment ``link=I loss``); ``max_backlog_packets``: the most the queue
  sampler saw;
* ``hosts``: ``nstat -asz`` after minus before, per node; nstat leaves out the gauge
  ``TcpCurrEstab`` (iproute2 misc/nstat.c: useless_numbers), the agent reads it from
  /proc/net/snmp at the end of the run, before closing its sockets; ``queue_timeseries``:
  the queue sampler's rows; ``apps``: the rr apps' summary and ``requests`` table as the
  simulator's rr app reports them (crates/tcplab-core/src/app/rr.rs); ``invariant``: not
  checked (a real network has no packet ledger); ``packets``: the packets sent on all links;
  ``version``: ``linux RELEASE``.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tcplab.columns import QUEUE_DTYPES, TIMESERIES_DTYPES
from tcplab.diagnose.netstat import GAUGES
from tcplab.diagnose.source import ParseError, text_source
from tcplab.diagnose.ss import Socket, parse_lines
from tcplab.diagnose.tc import Qdisc, parse_tc_json
from tcplab.kernel.names import node_of_agent_file
from tcplab.results.counters import parse_nstat
from tcplab.results.ss_samples import T_LINE, flow_sockets

__all__ = [
    "Measurements",
    "collect",
    "nstat_snapshot",
    "build_raw",
    "validity",
    "Reason",
    "ss_samples",
    "flow_sockets",
    "nft_counters",
    "nstat_delta",
    "UNKNOWN_COLUMNS",
    "RECEIVER_COLUMNS",
    "TIMESERIES_GAPS",
    "unknown_columns",
    "bbr_mode",
    "ecn_flags",
    "INFINITE_SSTHRESH",
    "CA_STATE_NAMES",
    "CC_MODE_NAMES",
    "LIMITS",
]

#: Time-series columns ss cannot give (module doc): 0 in a kernel run's series.
UNKNOWN_COLUMNS = ("bbr_lt_use_bw", "bbr_lt_bw_bps", "lost")
#: Time-series columns read from the receiver's ss sample of the slot: where that sample is
#: missing (its sampler skipped the slot, ss failed), they are a gap, never 0.
RECEIVER_COLUMNS = (
    "bytes_received",
    "recv_q_bytes",
    "receiver_cwnd",
    "receiver_ssthresh",
    "receiver_ca_state",
    "receiver_srtt_us",
    "receiver_rto_us",
    "receiver_backoff",
    "receiver_retrans_segs",
)
#: build_raw's key (beside the engine contract's) of ``{column: per-row bool}``: the gaps.
TIMESERIES_GAPS = "timeseries_gaps"
#: BBR's gains as ss prints them (x 256 in the kernel: BBR_UNIT): high_gain = 2885/1000 + 1/256
#: (739), drain_gain = 1000/2885 (88), the PROBE_BW cwnd gain 2 (512), PROBE_RTT's 1 (256).
#: Linux v6.12 net/ipv4/tcp_bbr.c: bbr_high_gain, bbr_drain_gain, bbr_cwnd_gain, bbr_update_gains().
BBR_HIGH_GAIN = 739 / 256
BBR_DRAIN_GAIN = 88 / 256
BBR_CWND_GAIN = 2.0
#: Linux's TCP_INFINITE_SSTHRESH (include/net/tcp.h): ssthresh before the first loss.
INFINITE_SSTHRESH = 0x7FFFFFFF
#: The engine's names (tcplab._core's ``names``): Linux's tcp_ca_state, BBR's modes.
CA_STATE_NAMES = ["Open", "Disorder", "CWR", "Recovery", "Loss"]
CC_MODE_NAMES = {"bbr": ["", "STARTUP", "DRAIN", "PROBE_BW", "PROBE_RTT"]}
#: Validity limits (ARCH11): a delay line's lateness, a sampler's share of late samples.
LIMITS = {
    "delayline_late_p99_ns": 1_000_000,
    "delayline_late_max_ns": 20_000_000,
    "sampler_late_frac": 0.02,
}
_LINK_COMMENT = re.compile(r"link=(\d+)\s+(\w+)")


@dataclass
class Measurements:
    """Everything a kernel run recorded (module doc), by node name (wires by namespace)."""

    duration_ns: int
    sample_interval_ns: int
    release: str = ""
    agents: dict[str, dict[str, Any]] = field(default_factory=dict)
    agent_exit: dict[str, int | None] = field(default_factory=dict)
    ss_samples: dict[str, str] = field(default_factory=dict)
    queue: dict[str, np.ndarray] | None = None
    queue_lateness: dict[str, Any] | None = None
    nstat_before: dict[str, str] = field(default_factory=dict)
    nstat_after: dict[str, str] = field(default_factory=dict)
    tc_text: dict[str, str] = field(default_factory=dict)
    tc_json: dict[str, str] = field(default_factory=dict)
    ip_link_json: dict[str, str] = field(default_factory=dict)
    nft_json: dict[str, str] = field(default_factory=dict)
    delaylines: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: ``"WIRE_NS/TUN"`` -> the one-way link whose queue that TUN's step marker is
    #: (tcplab.kernel.plan.line_markers): its drops and CE marks are the link's
    line_markers: dict[str, int] = field(default_factory=dict)
    #: the marking lines' counters at the end of the traffic (SIGUSR1, with the other
    #: counters; :meth:`tcplab.kernel.delayline.DelayLine.request_snapshot`), by wire ns
    delaylines_at_end: dict[str, dict[str, Any]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


# -- collecting (runs commands) -----------------------------------------------------------

Runner = Callable[[list[str]], str]


def _run(argv: list[str]) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=20, check=False)
    if done.returncode != 0:
        raise OSError(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr.strip()[:300]}")
    return done.stdout


def _nstat_argv(ns: str) -> list[str]:
    # -a absolute values, -s do not update nstat's history file (shared by every netns in
    # /tmp), -z zeros too: two snapshots are subtracted here, not by nstat.
    return ["ip", "netns", "exec", ns, "nstat", "-asz"]


def nstat_snapshot(plan: Any, runner: Runner = _run) -> dict[str, str]:
    """``nstat -asz`` of every node's namespace, by node name (before the traffic)."""
    return {n.node: runner(_nstat_argv(n.ns)) for n in plan.nodes}


def collect(
    plan: Any,
    workdir: str | Path,
    *,
    release: str = "",
    nstat_before: Mapping[str, str] | None = None,
    queue: Mapping[str, np.ndarray] | None = None,
    queue_lateness: Mapping[str, Any] | None = None,
    delaylines: Mapping[str, Mapping[str, Any]] | None = None,
    agent_exit: Mapping[str, int | None] | None = None,
    runner: Runner = _run,
    delaylines_at_end: Mapping[str, Mapping[str, Any]] | None = None,
) -> Measurements:
    """Read the agents' files in ``workdir`` and the kernel's counters in every namespace of
    ``plan`` (its ``nodes``: node, ns; ``wires``: ns, nft) after the traffic. A command that
    fails is recorded in ``errors`` (the run is then reported with what there is)."""
    work = Path(workdir)
    m = Measurements(
        duration_ns=int(plan.duration_ns),
        sample_interval_ns=int(plan.sample_interval_ns),
        release=release,
        nstat_before=dict(nstat_before or {}),
        queue=dict(queue) if queue is not None else None,
        queue_lateness=dict(queue_lateness) if queue_lateness is not None else None,
        delaylines={k: dict(v) for k, v in (delaylines or {}).items()},
        delaylines_at_end={k: dict(v) for k, v in (delaylines_at_end or {}).items()},
        agent_exit=dict(agent_exit or {}),
        line_markers={
            f"{w.ns}/{t.name}": int(t.link)
            for w in getattr(plan, "wires", [])
            for t in getattr(w, "tuns", [])
            if getattr(t, "ce_threshold_ns", 0)
        },
    )

    def attempt(store: dict[str, str], key: str, argv: list[str]) -> None:
        try:
            store[key] = runner(argv)
        except (OSError, subprocess.SubprocessError) as e:
            m.errors.append(str(e))

    for n in plan.nodes:
        attempt(m.tc_text, n.node, ["tc", "-n", n.ns, "-s", "qdisc", "show"])
        attempt(m.tc_json, n.node, ["tc", "-n", n.ns, "-s", "-j", "qdisc", "show"])
        attempt(m.ip_link_json, n.node, ["ip", "-n", n.ns, "-s", "-j", "link", "show"])
        attempt(m.nstat_after, n.node, _nstat_argv(n.ns))
    for w in getattr(plan, "wires", []):
        if getattr(w, "nft", None):
            attempt(m.nft_json, w.ns, ["ip", "netns", "exec", w.ns, "nft", "-j", "list", "ruleset"])
    for path in sorted(work.glob("agent-*.json")):
        node = node_of_agent_file(path.name)
        if node is None:
            continue
        try:
            m.agents[node] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            m.errors.append(f"{path.name}: {e}")
    for path in sorted(work.glob("ss-samples-*.txt")):
        m.ss_samples[path.name[len("ss-samples-") : -len(".txt")]] = path.read_text(encoding="utf-8", errors="replace")
    return m


# -- pure parsing ------------------------------------------------------------------------


def ss_samples(text: str, name: str = "ss-samples") -> list[tuple[int, list[Socket]]]:
    """The samples of one ``ss-samples-NODE.txt``: ``[(t_ns, sockets)]`` in file order. A
    sample ss could not print whole (the agent killed mid-write) is left out."""
    out: list[tuple[int, list[Socket]]] = []
    t: int | None = None
    block: list[tuple[int, str]] = []

    def flush() -> None:
        if t is None:
            return
        with contextlib.suppress(ParseError):
            out.append((t, parse_lines(block, name)))

    for lineno, line in enumerate(text.splitlines(), 1):
        m = T_LINE.match(line)
        if m:
            flush()
            t, block = int(m.group(1)), []
        else:
            block.append((lineno, line))
    flush()
    return out


def bbr_mode(pacing_gain: float, cwnd_gain: float, bw_bps: float) -> int:
    """BBR's mode (the engine's cc_mode index: 1 STARTUP, 2 DRAIN, 3 PROBE_BW, 4 PROBE_RTT; 0
    when the gains match none) from what ss prints in ``bbr:(bw:..,pacing_gain:..,
    cwnd_gain:..)`` (5 significant digits): each mode sets its own pair of gains in Linux
    v6.12 net/ipv4/tcp_bbr.c: bbr_update_gains(), run on every ACK (bbr_main()). Before the
    first ACK of data the gains are not set yet and there is no bandwidth sample (``bw:0``):
    bbr_init() has left the mode at STARTUP (bbr_reset_startup_mode()); PROBE_RTT comes
    only after 10 s of a connection's data (bbr_min_rtt_win_sec), never without a sample."""

    def near(x: float, y: float) -> bool:
        return abs(x - y) < 1e-3

    if bw_bps <= 0:
        return 1
    if near(cwnd_gain, BBR_HIGH_GAIN):
        if near(pacing_gain, BBR_HIGH_GAIN):
            return 1
        if near(pacing_gain, BBR_DRAIN_GAIN):
            return 2
        return 0
    if near(cwnd_gain, BBR_CWND_GAIN):
        return 3
    if near(cwnd_gain, 1.0) and near(pacing_gain, 1.0):
        return 4
    return 0


def unknown_columns(m: Measurements) -> list[str]:
    """The time-series columns this run could not record (module doc)."""
    has_ca = any((ep.get("ca_state") or {}).get("t_ns") for doc in m.agents.values() for ep in doc.get("endpoints", []))
    return ([] if has_ca else ["ca_state"]) + list(UNKNOWN_COLUMNS)


def _ca_states(agents: Mapping[str, Mapping[str, Any]], interval_ns: int) -> dict[tuple[str, str], dict[int, int]]:
    """(local, peer) of each endpoint socket -> {slot: tcpi_ca_state}."""
    out: dict[tuple[str, str], dict[int, int]] = {}
    for doc in agents.values():
        for ep in doc.get("endpoints", []):
            ca = ep.get("ca_state") or {}
            out[(str(ep.get("local")), str(ep.get("peer")))] = {
                _slot(int(t), interval_ns): int(v)
                for t, v in zip(ca.get("t_ns", []), ca.get("state", []), strict=False)
            }
    return out


def _slot(t_ns: int, interval_ns: int) -> int:
    """The schedule slot k of a sample that started at ``t_ns``: a sampler starts sample k at
    ``k x interval`` or later and skips it when it is more than one interval late
    (:mod:`tcplab.kernel.agent`'s ss loop), so k = floor(t / interval). Rounding would put a
    sample more than half an interval late into the next slot, where the next sample
    replaced it: a slot without the receiver's sample."""
    return int(t_ns) // int(interval_ns) if interval_ns > 0 else 0


def _timeseries(
    config: Mapping[str, Any],
    samples: Mapping[str, list[tuple[int, list[Socket]]]],
    interval_ns: int,
    ca_states: Mapping[tuple[str, str], Mapping[int, int]] | None = None,
) -> tuple[dict[str, np.ndarray], dict[int, list[int]], np.ndarray]:
    """The flow time series from the ss samples (module doc), each flow's srtt samples, and
    per row whether the receiver's sample of the slot is missing (:data:`RECEIVER_COLUMNS`
    are then a gap, not a measurement)."""
    ca_states = ca_states or {}
    # (node, slot) -> {(local, peer): socket}
    index: dict[tuple[str, int], dict[tuple[str, str], Socket]] = {}
    times: dict[str, list[tuple[int, int]]] = {}
    for node, node_samples in samples.items():
        for t, socks in node_samples:
            slot = _slot(t, interval_ns)
            index[(node, slot)] = {(s.local, s.peer): s for s in socks}
            times.setdefault(node, []).append((slot, t))
    cols: dict[str, list[Any]] = {c: [] for c in TIMESERIES_DTYPES}
    srtt: dict[int, list[int]] = {}
    rows: list[tuple[int, int, dict[str, Any], bool]] = []
    for fs in flow_sockets(config):
        for slot, t in times.get(fs.sender_node, []):
            s = index[(fs.sender_node, slot)].get((fs.sender, fs.receiver))
            if s is None or s.state in ("SYN-SENT", "SYN-RECV") or "rtt" not in s.values:
                continue
            r = index.get((fs.receiver_node, slot), {}).get((fs.receiver, fs.sender))
            v = s.values
            srtt_us = int(round(float(v["rtt"]) * 1000))
            srtt.setdefault(fs.flow, []).append(srtt_us)
            inflight = int(v.get("unacked", 0)) - int(v.get("sacked", 0)) - int(v.get("lost", 0))
            inflight += int(v.get("retrans_cur", 0))
            row = {
                "t_ns": max(0, t),
                "flow": fs.flow,
                "cwnd": int(v.get("cwnd", 0)),
                "ssthresh": int(v["ssthresh"]) if "ssthresh" in v else INFINITE_SSTHRESH,
                "srtt_us": srtt_us,
                "rttvar_us": int(round(float(v.get("rttvar", 0)) * 1000)),
                "min_rtt_us": int(round(float(v.get("minrtt", 0)) * 1000)),
                "pacing_rate_bps": int(v.get("pacing_rate_bps", 0)),
                "delivery_rate_bps": int(v.get("delivery_rate_bps", 0)),
                "inflight": max(0, inflight),
                "bytes_acked": int(v.get("bytes_acked", 0)),
                "bytes_received": int(r.values.get("bytes_received", 0)) if r is not None else 0,
                "retrans_segs": int(v.get("retrans_total", 0)),
                "lost": 0,
                "ca_state": ca_states.get((fs.sender, fs.receiver), {}).get(slot, 0),
                "cc_mode": bbr_mode(
                    s.bbr.get("pacing_gain", 0.0), s.bbr.get("cwnd_gain", 0.0), s.bbr.get("bw_bps", 0.0)
                )
                if s.cc == "bbr"
                else 0,
                "bbr_bw_bps": int(s.bbr.get("bw_bps", 0)),
                "bbr_lt_use_bw": 0,
                "bbr_lt_bw_bps": 0,
                "pacing_gain": float(s.bbr.get("pacing_gain", 0.0)),
                "cwnd_gain": float(s.bbr.get("cwnd_gain", 0.0)),
                "snd_wnd_bytes": int(v.get("snd_wnd", 0)),
                # what ss printed of the rest (ms -> us; absent is zero, as ss prints them)
                "rto_us": int(round(float(v.get("rto", 0)) * 1000)),
                "backoff": int(v.get("backoff", 0)),
                "bytes_sent": int(v.get("bytes_sent", 0)),
                "bytes_retrans": int(v.get("bytes_retrans", 0)),
                "data_segs_out": int(v.get("data_segs_out", 0)),
                "busy_us": int(round(float(v.get("busy_ms", 0)) * 1000)),
                "rwnd_limited_us": int(round(float(v.get("rwnd_limited_ms", 0)) * 1000)),
                "sndbuf_limited_us": int(round(float(v.get("sndbuf_limited_ms", 0)) * 1000)),
                "send_q_bytes": s.send_q,
                "recv_q_bytes": r.recv_q if r is not None else 0,
                # the receiver's own socket as its host's ss printed it
                **_receiver_columns(r),
            }
            rows.append((slot, fs.flow, row, r is None))
    rows.sort(key=lambda x: (x[0], x[1]))
    for _, _, row, _ in rows:
        for c in cols:
            cols[c].append(row[c])
    gaps = np.array([missing for *_, missing in rows], dtype=bool)
    return {c: np.array(cols[c], dtype=TIMESERIES_DTYPES[c]) for c in cols}, srtt, gaps


def _receiver_columns(r: Socket | None) -> dict[str, Any]:
    """The ``receiver_*`` columns from the receiver's ss line (0 when it is missing: a gap,
    :data:`RECEIVER_COLUMNS`). ss shows no ca_state: Open (0) unless ``retrans:C/`` has a
    retransmission outstanding, then Loss (4) when ``backoff:`` is printed, else Recovery (3)."""
    if r is None:
        return {c: 0 for c in RECEIVER_COLUMNS if c.startswith("receiver_")}
    v = r.values
    ca = 0
    if int(v.get("retrans_cur", 0)):
        ca = 4 if int(v.get("backoff", 0)) else 3
    return {
        "receiver_cwnd": int(v.get("cwnd", 0)),
        "receiver_ssthresh": int(v["ssthresh"]) if "ssthresh" in v else INFINITE_SSTHRESH,
        "receiver_ca_state": ca,
        "receiver_srtt_us": int(round(float(v.get("rtt", 0)) * 1000)),
        "receiver_rto_us": int(round(float(v.get("rto", 0)) * 1000)),
        "receiver_backoff": int(v.get("backoff", 0)),
        "receiver_retrans_segs": int(v.get("retrans_total", 0)),
    }


def _rtt_summary(values_us: list[int]) -> dict[str, Any]:
    from tcplab.kernel.agent import percentile

    v = sorted(values_us)
    if not v:
        return {"count": 0, "min": None, "mean": None, "p50": None, "p90": None, "p99": None, "max": None,
                "relative_error": 0.0}  # fmt: skip
    return {
        "count": len(v),
        "min": v[0],
        "mean": sum(v) / len(v),
        "p50": percentile(v, 0.5),
        "p90": percentile(v, 0.9),
        "p99": percentile(v, 0.99),
        "max": v[-1],
        "relative_error": 0.0,
    }


def _endpoints(agents: Mapping[str, Mapping[str, Any]]) -> dict[tuple[int, str], dict[str, Any]]:
    """(flow, role) -> the agent's endpoint record, with ``node``."""
    out: dict[tuple[int, str], dict[str, Any]] = {}
    for node, doc in agents.items():
        for ep in doc.get("endpoints", []):
            out[(int(ep["flow"]), str(ep["role"]))] = dict(ep, node=node)
    return out


def _flows(config: Mapping[str, Any], m: Measurements, srtt: Mapping[int, list[int]]) -> list[dict[str, Any]]:
    eps = _endpoints(m.agents)
    out = []
    for i, f in enumerate(config["flows"]):
        server_sends = f.get("data_side", "client") == "server"
        snd = eps.get((i, "server" if server_sends else "client"), {})
        rcv = eps.get((i, "client" if server_sends else "server"), {})
        si = snd.get("tcp_info") or {}
        ri = rcv.get("tcp_info") or {}
        start = int(f.get("start_ns") or 0)
        app = f.get("app") or {}
        end = m.duration_ns
        if app.get("bytes") is not None:
            # the simulator's end: all data acknowledged at the sender (check_app_done());
            # an agent before acked_ns: the receiver's EOF
            done = snd.get("acked_ns") if snd.get("acked_ns") is not None else rcv.get("done_ns")
            if done is not None:
                end = min(end, int(done))
        out.append(
            {
                "name": f["name"],
                "src": int(f["src"]),
                "dst": int(f["dst"]),
                "cc": str(snd.get("cc_set") or f.get("cc", "")),
                "start_ns": start,
                "end_ns": max(start, end),
                "bytes_sent": int(si.get("bytes_sent", 0)),
                "bytes_retrans": int(si.get("bytes_retrans", 0)),
                "bytes_acked": int(si.get("bytes_acked", 0)),
                "bytes_received": int(ri.get("bytes_received", 0)),
                "data_segs_out": int(si.get("data_segs_out", 0)),
                "retrans_segs": int(si.get("total_retrans", 0)),
                "timeouts": int(si.get("total_rto", 0)),
                "rtt_us": _rtt_summary(srtt.get(i, [])),
                "chrono": {
                    "busy_us": int(si.get("busy_time", 0)),
                    "rwnd_limited_us": int(si.get("rwnd_limited", 0)),
                    "sndbuf_limited_us": int(si.get("sndbuf_limited", 0)),
                },
                **_ecn(si, ri),
                "counters": {},
            }
        )
    return out


#: ``tcpi_options`` bits (include/uapi/linux/tcp.h, v6.12): TCPI_OPT_ECN (the socket's
#: ``TCP_ECN_OK``, tcp_get_info()) and TCPI_OPT_ECN_SEEN (``TCP_ECN_SEEN``).
TCPI_OPT_ECN = 8
TCPI_OPT_ECN_SEEN = 16
#: ``tp->ecn_flags`` bits (include/net/tcp.h, v6.12; tcplab.engine.ECN_FLAGS) tcp_info shows.
TCP_ECN_OK = 1
TCP_ECN_SEEN = 8


def ecn_flags(tcp_info: Mapping[str, Any]) -> int | None:
    """The part of a socket's ``tp->ecn_flags`` that its ``tcpi_options`` shows (module doc),
    None without ``options``."""
    if "options" not in tcp_info:
        return None
    options = int(tcp_info["options"])
    return (TCP_ECN_OK if options & TCPI_OPT_ECN else 0) | (TCP_ECN_SEEN if options & TCPI_OPT_ECN_SEEN else 0)


def _ecn(si: Mapping[str, Any], ri: Mapping[str, Any]) -> dict[str, Any]:
    """A flow's ``ecn`` entry (the engine's ``flows[i]["ecn"]``; module doc) from the two
    sockets' final TCP_INFO; none when either was not read."""
    sender, receiver = ecn_flags(si), ecn_flags(ri)
    if sender is None or receiver is None:
        return {}
    delivered_ce = int(si.get("delivered_ce", 0))
    return {"ecn": {"sender_flags": sender, "receiver_flags": receiver, "delivered_ce": delivered_ce, "dctcp": None}}


def nstat_delta(before: str | None, after: str | None) -> dict[str, int]:
    """``nstat -asz`` after minus before (gauges: the value after), by nstat name."""
    a = next(iter(parse_nstat(after).values()), {}) if after else {}
    b = next(iter(parse_nstat(before).values()), {}) if before else {}
    return {k: (v if k in GAUGES else v - b.get(k, 0)) for k, v in a.items()}


def nft_counters(text: str) -> dict[int, dict[str, int]]:
    """``{link index: {"seen": packets, "loss": packets}}`` from ``nft -j list ruleset``: the
    counters of rules whose comment is ``link=I seen`` / ``link=I loss`` (tcplab.kernel.plan's
    loss rules)."""
    doc = json.loads(text) if text.strip() else {}
    out: dict[int, dict[str, int]] = {}
    for item in doc.get("nftables", []) if isinstance(doc, dict) else []:
        rule = item.get("rule") if isinstance(item, dict) else None
        if not isinstance(rule, dict):
            continue
        m = _LINK_COMMENT.search(str(rule.get("comment", "")))
        if not m:
            continue
        packets = 0
        for expr in rule.get("expr", []):
            if isinstance(expr, dict) and isinstance(expr.get("counter"), dict):
                packets = int(expr["counter"].get("packets", 0))
        out.setdefault(int(m.group(1)), {})[m.group(2)] = packets
    return out


def _tx_counters(ip_link_json: str | None) -> dict[str, tuple[int, int]]:
    """dev -> (tx bytes, tx packets) from ``ip -s -j link show``."""
    if not ip_link_json:
        return {}
    out = {}
    for link in json.loads(ip_link_json):
        tx = ((link.get("stats64") or link.get("stats") or {}).get("tx")) or {}
        out[str(link.get("ifname"))] = (int(tx.get("bytes", 0)), int(tx.get("packets", 0)))
    return out


def _qstats(q: Qdisc) -> dict[str, int]:
    s = q.stats
    return {
        "sent_bytes": int(s.get("bytes", 0)),
        "sent_packets": int(s.get("packets", 0)),
        "drops": int(s.get("drops", 0)),
        "overlimits": int(s.get("overlimits", 0)),
        "requeues": int(s.get("requeues", 0)),
        "backlog_bytes": int(s.get("backlog", 0)),
        "backlog_packets": int(s.get("qlen", 0)),
    }


def _links(config: Mapping[str, Any], m: Measurements) -> list[dict[str, Any]]:
    from tcplab.results.tc import link_devices

    qdiscs = {node: parse_tc_json(text_source(text, f"tc-{node}.json")) for node, text in m.tc_json.items()}
    tx = {node: _tx_counters(text) for node, text in m.ip_link_json.items()}
    loss: dict[int, int] = {}
    for text in m.nft_json.values():
        for link, counts in nft_counters(text).items():
            loss[link] = loss.get(link, 0) + counts.get("loss", 0)
    max_backlog: dict[int, int] = {}
    if m.queue is not None and len(m.queue.get("link", [])):
        for link, backlog in zip(m.queue["link"].tolist(), m.queue["backlog_packets"].tolist(), strict=True):
            max_backlog[link] = max(max_backlog.get(link, 0), backlog)
    out = []
    for i, (link, (node, dev)) in enumerate(zip(config["links"], link_devices(config), strict=True)):
        on_dev = [q for q in qdiscs.get(node, []) if q.dev == dev]
        root = next((q for q in on_dev if q.parent == "root"), None)
        row: dict[str, Any] = {
            "name": link["name"],
            "from": int(link["from"]),
            "to": int(link["to"]),
            "qdisc": root.kind if root else "?",
        }
        stats = _qstats(root) if root else dict.fromkeys(
            ("sent_bytes", "sent_packets", "drops", "overlimits", "requeues", "backlog_bytes", "backlog_packets"), 0
        )  # fmt: skip
        if root is None or root.kind == "noqueue":
            sent = tx.get(node, {}).get(dev)
            if sent:
                stats["sent_bytes"], stats["sent_packets"] = sent
        row.update(stats)
        row["max_backlog_packets"] = max(max_backlog.get(i, 0), stats["backlog_packets"])
        row["loss_drops"] = loss.get(i, 0)
        row["reorder_events"] = 0
        # the kind's own counters as tc printed them (fq_codel's ecn_mark/ce_mark, fq's ...)
        row["xstats"] = {k: int(v) for k, v in root.xstats.items()} if root is not None else {}
        child = None
        if root is not None and root.kind == "tbf":
            major = root.handle.rstrip(":")
            kid = next((q for q in on_dev if q.parent.split(":")[0] == major and q is not root), None)
            if kid is not None:
                kid_stats = _qstats(kid)
                # sch_tbf.c tbf_enqueue() counts in its own backlog what it hands its child
                # (qdisc_qstats_backlog_inc after the child's enqueue), so the root's sampled
                # backlog is the child's: the child's peak is the same peak.
                kid_peak = max(row["max_backlog_packets"], kid_stats["backlog_packets"])
                kid_x = {k: int(v) for k, v in kid.xstats.items()}
                child = {"qdisc": kid.kind, **kid_stats, "max_backlog_packets": kid_peak, "xstats": kid_x}
        row["child"] = child
        row["edt"] = []
        out.append(row)
    _marker_links(out, m)
    return out


def _marker_links(links: list[dict[str, Any]], m: Measurements) -> None:
    """A link the delay line marks (``m.line_markers``): its queue is the line's TUN, so the
    TUN's drops are the link's queue drops and its CE marks the link's ``ce_mark`` (xstats,
    as fq_codel's ``tc -s`` counts them), at the end of the traffic as the other counters
    (``delaylines_at_end``; without that snapshot, when the line stopped, some time later)."""
    for key, link in m.line_markers.items():
        ns, _, name = key.partition("/")
        stats = m.delaylines_at_end.get(ns) or m.delaylines.get(ns) or {}
        tun = next((t for t in stats.get("tuns", []) if t.get("name") == name), None)
        if tun is None or not 0 <= link < len(links):
            continue
        links[link]["drops"] = int(links[link]["drops"]) + int(tun.get("drops", 0))
        links[link]["xstats"] = {**links[link]["xstats"], "ce_mark": int(tun.get("ce_marks", 0))}


def _rr_apps(config: Mapping[str, Any], m: Measurements) -> list[dict[str, Any]]:
    """The rr apps' summary and ``requests`` table, as crates/tcplab-core/src/app/rr.rs:
    finish() reports them (transactions per second per connection over the time it was open,
    summed; latency percentiles by nearest rank, in ms)."""
    from tcplab.kernel.agent import percentile

    eps = _endpoints(m.agents)
    apps = []
    for app in config.get("apps") or []:
        spec = app.get("spec") or {}
        if spec.get("kind") != "rr":
            continue
        flows_, starts, lats = [], [], []
        tps = 0.0
        for i in [int(x) for x in app.get("flows", [])]:
            ep = eps.get((i, "client"), {})
            rr = ep.get("rr") or {}
            done = list(zip(rr.get("start_ns", []), rr.get("latency_ns", []), strict=False))
            for s, lat in done:
                flows_.append(i)
                starts.append(max(0, int(s)))
                lats.append(int(lat))
            open_ns = ep.get("established_ns")
            stop = config["flows"][i].get("stop_ns")
            end = m.duration_ns if stop is None else min(m.duration_ns, int(stop))
            if open_ns is not None and end > int(open_ns):
                tps += len(done) / ((end - int(open_ns)) / 1e9)
        order = sorted(range(len(lats)), key=lambda k: (starts[k], flows_[k]))
        v = sorted(lats)

        def ms(x: int | None) -> float | None:
            return None if x is None else x / 1e6

        apps.append(
            {
                "name": str(app["name"]),
                "kind": "rr",
                "summary": {
                    "transactions": len(v),
                    "transactions_per_sec": tps,
                    "connections": len(app.get("flows", [])),
                    "request_bytes": int(spec.get("request_bytes", 1)),
                    "response_bytes": int(spec.get("response_bytes", 1)),
                    "latency_ms": {
                        "count": len(v),
                        "p50": ms(percentile(v, 0.5)),
                        "p90": ms(percentile(v, 0.9)),
                        "p99": ms(percentile(v, 0.99)),
                        "p99.9": ms(percentile(v, 0.999)),
                        "max": ms(v[-1] if v else None),
                        "mean": sum(v) / len(v) / 1e6 if v else None,
                    },
                },
                "tables": {
                    "requests": {
                        "flow": np.array([flows_[k] for k in order], dtype="uint32"),
                        "start_ns": np.array([starts[k] for k in order], dtype="uint64"),
                        "latency_ns": np.array([lats[k] for k in order], dtype="uint64"),
                    }
                },
            }
        )
    return apps


def _queue_columns(m: Measurements) -> dict[str, np.ndarray]:
    q = m.queue or {}
    return {c: np.asarray(q.get(c, []), dtype=d) for c, d in QUEUE_DTYPES.items()}


def build_raw(config: Mapping[str, Any], m: Measurements) -> dict[str, Any]:
    """The engine-shaped output of a kernel run (module doc); passes
    :func:`tcplab.engine.parse_output`. Pure: reads only ``config`` and ``m``."""
    samples = {node: ss_samples(text, f"ss-samples-{node}.txt") for node, text in m.ss_samples.items()}
    series, srtt, gaps = _timeseries(config, samples, m.sample_interval_ns, _ca_states(m.agents, m.sample_interval_ns))
    links = _links(config, m)
    hosts = []
    for n in config["nodes"]:
        name = str(n["name"])
        counters = nstat_delta(m.nstat_before.get(name), m.nstat_after.get(name))
        # nstat leaves the gauge out; the agent read it at the end, before closing its sockets
        estab = (m.agents.get(name) or {}).get("curr_estab")
        if "TcpCurrEstab" not in counters and (estab is not None or name in m.agents):
            counters["TcpCurrEstab"] = int(estab or 0)
        hosts.append({"name": name, "counters": counters, "nic": None, "cpu": None})
    return {
        "version": f"linux {m.release}".strip(),
        "events": 0,
        "packets": sum(int(link["sent_packets"]) for link in links),
        "flows": _flows(config, m, srtt),
        "hosts": hosts,
        "links": links,
        "invariant": {"ok": True, "message": "kernel run: packet conservation is not checked"},
        "timeseries": series,
        # not in the engine contract (its columns are integers): the rows whose receiver
        # columns are gaps (tcplab.kernel.result.KernelResult makes them NaN)
        TIMESERIES_GAPS: {c: gaps for c in RECEIVER_COLUMNS},
        "queue_timeseries": _queue_columns(m),
        "names": {"ca_state": list(CA_STATE_NAMES), "cc_mode": {k: list(v) for k, v in CC_MODE_NAMES.items()}},
        "warnings": [],
        "apps": _rr_apps(config, m),
    }


# -- validity ------------------------------------------------------------------------------


def _late_frac(summary: Mapping[str, Any]) -> float:
    if "late_over_half_interval_frac" in summary:
        return float(summary["late_over_half_interval_frac"])
    due = int(summary.get("samples", 0)) + int(summary.get("missed", 0))
    return int(summary.get("late_over_half_interval", 0)) / due if due else 0.0


class Reason(str):
    """One reason a kernel run is INVALID, its text; ``machine``: the machine's load caused it
    (the quiet check before the run, a delay line or a sampler late: the scheduler did not
    run them in time), so the same run may be valid on a quieter machine; not for a failure
    of tcplab's own (an agent that failed, a delay line without stats). A ``str``: whoever
    reads ``invalid_reasons`` reads text as before."""

    machine: bool

    def __new__(cls, text: str, machine: bool = False) -> Reason:
        reason = super().__new__(cls, text)
        reason.machine = machine
        return reason


def validity(m: Measurements, expected_agents: Iterable[str] = ()) -> list[Reason]:
    """Why the measurements cannot be trusted (ARCH11's rules), one line each; empty when
    they can: a delay line late by more than 1 ms at p99 or 20 ms at most, a sampler (an
    agent's ss, the queue sampler) late by more than half an interval more than 2 % of the
    time (these three the machine's, :class:`Reason`), an agent that failed (no JSON, errors,
    a non-zero exit). The quiet check before the run is the caller's (tcplab.kernel.env)."""
    reasons: list[Reason] = []
    for ns, stats in sorted(m.delaylines.items()):
        if "tuns" not in stats:
            reasons.append(Reason(f"delay line {ns} reported no stats ({stats.get('error', 'none written')})"))
            continue
        for tun in stats.get("tuns", []):
            late = tun.get("lateness_ns") or {}
            p99, mx = int(late.get("p99") or 0), int(late.get("max") or 0)
            if p99 > LIMITS["delayline_late_p99_ns"] or mx > LIMITS["delayline_late_max_ns"]:
                text = (
                    f"delay line {ns}/{tun.get('name', '?')} was late: p99 {p99 / 1e6:.2f} ms, max {mx / 1e6:.2f} ms "
                    f"(limits 1 ms, 20 ms)"
                )
                reasons.append(Reason(text, machine=True))
    for node in sorted(set(expected_agents) | set(m.agents)):
        doc = m.agents.get(node)
        code = m.agent_exit.get(node)
        if doc is None:
            reasons.append(Reason(f"agent {node} failed: it wrote no result"))
            continue
        if code not in (None, 0):
            reasons.append(Reason(f"agent {node} failed: exit status {code}"))
        for err in doc.get("errors", [])[:3]:
            reasons.append(Reason(f"agent {node} failed: {err}"))
        ss = doc.get("ss") or {}
        frac = _late_frac(ss)
        if frac > LIMITS["sampler_late_frac"]:
            text = f"ss sampler of {node} was late by more than half an interval {100 * frac:.1f} % of the time"
            reasons.append(Reason(text, machine=True))
    if m.queue_lateness:
        frac = _late_frac(m.queue_lateness)
        if frac > LIMITS["sampler_late_frac"]:
            text = f"queue sampler was late by more than half an interval {100 * frac:.1f} % of the time"
            reasons.append(Reason(text, machine=True))
    return reasons

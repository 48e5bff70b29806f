"""A bulk flow as the JSON ``iperf3 -c SERVER -J`` prints, for scripts written against iperf3.

iperf3 runs on the client and connects to the server (port 5201): a flow its client sends
(bulk, bidir's ``.fwd``) is ``iperf3 -c SERVER -J``, one its server sends (maerts, bidir's
``.rev``) is ``iperf3 -c SERVER -R -J`` (reverse: the server sends, the client receives).
The file is what the client prints in each case (iperf 3.12; tests/data holds real captures
of both, and of ``--bidir``, whose reverse stream has the ``-R`` shape):

* the shape of both: ``start`` (connected, version, system_info, timestamp, connecting_to,
  cookie, tcp_mss_default, target_bitrate, sock_bufsize, sndbuf_actual, rcvbuf_actual,
  test_start), ``intervals`` (per interval: the stream and their ``sum``), ``end`` (the
  stream's sender and receiver totals; sum_sent, sum_received, cpu_utilization_percent,
  sender_tcp_congestion, receiver_tcp_congestion), ``title`` and ``extra_data``.
  ``connected`` is the client's socket as the client sees it: ``local`` the client's
  address and ephemeral port, ``remote`` the server's 5201 (ports are ss.py's), and
  ``connecting_to`` the server;
* the client sends (``test_start.reverse`` 0): every ``sender`` key is true; an interval's
  stream has the sender's tcp_info (retransmits, snd_cwnd, snd_wnd, rtt, rttvar, pmtu) and
  the end's sender total max_snd_cwnd, max_snd_wnd, max_rtt, min_rtt, mean_rtt;
* the server sends (``-R``, ``test_start.reverse`` 1): every ``sender`` key is false (the
  client's stream receives); an interval's stream and sum have the bytes received only (no
  retransmits, no tcp_info: the receiving client has no sender's tcp_info to read), and the
  end's sender total has the server's bytes and retransmits (the server sends its totals to
  the client) with max_snd_cwnd, max_snd_wnd, max_rtt, min_rtt and mean_rtt 0, as iperf3
  writes them (the sender's cwnd and RTT are in run.flent.gz and the time series).

Units are iperf3's: seconds from the test's start, bytes, bit/s, ``rtt``/``rttvar`` in
microseconds (tcp_info's tcpi_rtt/tcpi_rttvar), ``snd_cwnd`` in bytes (tcpi_snd_cwnd x
tcpi_snd_mss), ``pmtu`` bytes. One file per bulk or maerts flow (``iperf3-FLOW.json`` in
the run directory). Flows of applications with more than 16 connections are not sampled and
get no file.

Where the numbers come from, and where they depart from iperf3:

* Interval boundaries every ``interval_s`` from the flow's start to its end (the last one
  may be shorter). A boundary's values are those of the last time-series sample at or before
  it, so the interval must be a whole number of the run's ``sample_interval`` (else the
  intervals would alternate between holding no sample and two: 0 bit/s, then double); one
  that is not is refused. The default is iperf3's 1 s (``-i``), or the multiple of the
  sample interval nearest to it when 1 s is not one. The flow's end uses its totals.
* ``bytes`` of an interval: the bytes delivered to the receiving application in it (the
  time series' cumulative ``bytes_received``), so the intervals sum to the flow's
  ``bytes_received``. iperf3's sender counts the bytes its application wrote into the
  socket instead (running ahead of the receiver by up to the send buffer); tcplab does not
  sample the writer, so both views use the delivered bytes except the end's sender total.
  (With ``-R`` the client's intervals count the bytes it received: exactly these.)
* ``end.streams[].sender.bytes`` and ``sum_sent.bytes``: the bytes the sender transmitted
  once (``bytes_sent - bytes_retrans``, tcp_info's bytes_sent without retransmissions);
  ``receiver.bytes``/``sum_received.bytes``: ``bytes_received``.
* ``retransmits`` (the client sends): segments retransmitted in the interval
  (tcpi_total_retrans differences, as iperf3 computes them); the end's total (either way) is
  the flow's ``retrans_segs``.
* (the client sends) ``snd_cwnd``, ``rtt``, ``rttvar`` at the interval's end; ``max_snd_cwnd``, ``max_rtt``,
  ``min_rtt`` and ``mean_rtt`` (integer mean) over the intervals, as iperf3 keeps them.
* (the client sends) ``snd_wnd``: the peer's advertised window (bytes, tcp_info's tcpi_snd_wnd, the time
  series' ``snd_wnd_bytes``) at the interval's end; ``max_snd_wnd`` its largest value, as
  iperf3 keeps it. A run directory from before that column existed gives -1 in every
  interval (what iperf3's get_snd_wnd() writes when it cannot read tcpi_snd_wnd) and a
  ``max_snd_wnd`` of 0, iperf3's starting value.
* ``cpu_utilization_percent``: all six values 0.0; the simulator does not measure the CPU
  an endpoint would spend (the keys stay, as iperf3 always writes them).
* ``system_info`` is the empty string (no uname to report); ``version`` is ``iperf 3.12``
  (the format followed); ``timestamp`` is the Unix epoch (the simulation's time 0: no
  wall-clock time in a run directory); ``cookie`` is 36 characters of iperf3's alphabet
  derived from the run and the flow (iperf3 draws it at random); ``socket`` is 5, the first
  data socket iperf3 opens. ``title`` (iperf3's ``-T``) names the run and the flow and
  ``extra_data`` (iperf3's ``--extra-data``) carries tcplab's provenance.
* ``sndbuf_actual``/``rcvbuf_actual``: tcp_wmem[1] and tcp_rmem[1], what SO_SNDBUF and
  SO_RCVBUF read on a socket without ``-w``; ``blksize`` iperf3's TCP default, 131072.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from typing import Any

import numpy as np

from tcplab.errors import ScenarioError
from tcplab.exports.flows import IPERF3_KINDS, ExportFlow, export_flows
from tcplab.exports.rundir import RunData
from tcplab.literals import abbreviate_digits

__all__ = ["iperf3_json", "iperf3_flows", "iperf3_text", "iperf3_file_name", "DEFAULT_INTERVAL_S", "IPERF3_VERSION"]

#: iperf3's default reporting interval (``-i 1``).
DEFAULT_INTERVAL_S = 1.0
#: The reporting intervals iperf3 accepts: iperf3 src/iperf.h MIN_INTERVAL 0.1 and
#: MAX_INTERVAL 60.0 (iperf_parse_arguments refuses others with IEINTERVAL). Below 0.1 s a
#: long run would also mean millions of interval objects (1 ns over 1 s: 10^9, out of memory).
MIN_INTERVAL_S = 0.1
MAX_INTERVAL_S = 60.0
#: The iperf3 release whose -J shape the files follow.
IPERF3_VERSION = "iperf 3.12"
#: iperf3's default TCP block size (128 KiB).
_BLKSIZE = 131072
#: IPv4 (20) + TCP (20) + timestamps (12): tcplab's framing, mss + this = the path MTU.
_HEADER_BYTES = 52
_SOCKET = 5


def iperf3_file_name(flow_name: str) -> str:
    """``iperf3-FLOW.json``; characters outside ``[A-Za-z0-9_.-]`` become ``_``."""
    safe = "".join(c if (c.isascii() and c.isalnum()) or c in "_.-" else "_" for c in flow_name)
    return f"iperf3-{safe}.json"


def iperf3_flows(run: RunData) -> list[ExportFlow]:
    """The flows that get an iperf3 file: sampled bulk and maerts flows (module doc)."""
    return [f for f in export_flows(run) if f.kind in IPERF3_KINDS]


def _cookie(run: RunData, flow: ExportFlow) -> str:
    """36 characters of iperf3's cookie alphabet (a-z, 2-7), derived from the run and flow."""
    key = json.dumps([run.summary.get("scenario"), run.summary.get("seed"), run.summary.get("overrides"), flow.name])
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return base64.b32encode(digest).decode("ascii").lower()[:36]


def _at(times_ns: np.ndarray, values: np.ndarray, t_ns: int) -> int:
    """The value of the last sample at or before ``t_ns`` (0 before the first)."""
    k = int(np.searchsorted(times_ns, t_ns, side="right")) - 1
    return int(values[k]) if k >= 0 else 0


def _interval(start: float, end: float, nbytes: int, **extra: Any) -> dict[str, Any]:
    seconds = end - start
    return {
        "start": start,
        "end": end,
        "seconds": seconds,
        "bytes": int(nbytes),
        "bits_per_second": nbytes * 8 / seconds if seconds > 0 else 0.0,
        **extra,
    }


def _step_ns(run: RunData, interval_s: float | None) -> int:
    """The reporting interval in ns: ``interval_s`` if it is a whole number of sample
    intervals, iperf3's 1 s (or the nearest multiple of the sample interval) when None."""
    from tcplab.units import format_time

    try:
        sample_ns = int(run.sample_interval_ns)
    except (KeyError, TypeError, ValueError):
        sample_ns = 0
    if interval_s is None:
        default_ns = int(DEFAULT_INTERVAL_S * 1e9)
        return max(1, round(default_ns / sample_ns)) * sample_ns if sample_ns > 0 else default_ns
    if not (
        isinstance(interval_s, (int, float))
        and math.isfinite(interval_s)
        and MIN_INTERVAL_S <= interval_s <= MAX_INTERVAL_S
    ):
        raise ScenarioError(
            f"{interval_s!r} s is not an interval iperf3 reports at",
            path="--interval",
            expected=f"a time from {MIN_INTERVAL_S:g}s to {MAX_INTERVAL_S:g}s (iperf3 -i's range) such as 1s or 500ms",
        )
    step_ns = max(1, int(round(interval_s * 1e9)))
    if sample_ns > 0 and step_ns % sample_ns:
        sample = format_time(sample_ns)
        near = format_time(max(1, round(step_ns / sample_ns)) * sample_ns)
        raise ScenarioError(
            f"{format_time(step_ns)} is not a whole number of the run's sample interval, {sample}",
            path="--interval",
            value=interval_s,
            expected=f"a multiple of {sample}, such as {near}",
        )
    return step_ns


def iperf3_json(run: RunData, flow: str | ExportFlow, *, interval_s: float | None = None) -> dict[str, Any]:
    """The iperf3 -J object of one bulk/maerts flow of ``run`` (module doc); ``interval_s``
    None: iperf3's 1 s, as a whole number of the run's sample interval."""
    step_ns = _step_ns(run, interval_s)
    f = flow if isinstance(flow, ExportFlow) else _flow_named(run, flow)
    total = run.flow_totals(f.name)
    names = ("bytes_received", "retrans_segs", "cwnd", "srtt_us", "rttvar_us", "snd_wnd_bytes")
    raw = run.flow_columns(f.index, ("t_ns", *names))
    has_snd_wnd = "snd_wnd_bytes" in raw
    t_ns = raw["t_ns"].astype(np.int64) if "t_ns" in raw else np.zeros(0, dtype=np.int64)
    # per column its samples with a value: a kernel sampler's gap (NaN) is left out, not read as 0
    cols: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for c in names:
        values = raw[c].astype(np.float64) if c in raw else np.zeros(len(t_ns))
        have = np.isfinite(values)
        cols[c] = (t_ns[have], values[have].astype(np.int64))
    start_ns = int(round(f.start_s * 1e9))
    end_ns = int(round(f.end_s * 1e9))
    bounds = list(range(start_ns, end_ns, step_ns)) + [end_ns]
    if len(bounds) >= 2 and bounds[-1] == bounds[-2]:
        bounds.pop()
    received_end = int(total.get("bytes_received", _at(*cols["bytes_received"], end_ns)))
    retrans_end = int(total.get("retrans_segs", _at(*cols["retrans_segs"], end_ns)))

    def cum(name: str, b: int, end_value: int) -> int:
        return end_value if b >= end_ns else _at(*cols[name], b)

    # iperf3 runs on the client: a flow its client sends is `iperf3 -c SERVER`, the client
    # the data sender; one its server sends is `iperf3 -c SERVER -R`, the client the receiver
    reverse = not f.upload
    is_sender = not reverse
    intervals = []
    cwnds: list[int] = []
    rtts: list[int] = []
    snd_wnds: list[int] = []
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        nbytes = cum("bytes_received", b, received_end) - cum("bytes_received", a, received_end)
        retrans = cum("retrans_segs", b, retrans_end) - cum("retrans_segs", a, retrans_end)
        snd_cwnd = _at(*cols["cwnd"], b) * f.mss
        rtt = _at(*cols["srtt_us"], b)
        rttvar = _at(*cols["rttvar_us"], b)
        snd_wnd = _at(*cols["snd_wnd_bytes"], b) if has_snd_wnd else -1
        snd_wnds.append(snd_wnd)
        cwnds.append(snd_cwnd)
        rtts.append(rtt)
        start, end = (a - start_ns) / 1e9, (b - start_ns) / 1e9
        if reverse:  # the receiving client's interval: bytes only, no tcp_info of a sender
            stream = {"socket": _SOCKET, **_interval(start, end, nbytes, omitted=False, sender=False)}
            summed = _interval(start, end, nbytes, omitted=False, sender=False)
        else:
            tcp_info = {
                "retransmits": int(retrans),
                "snd_cwnd": int(snd_cwnd),
                "snd_wnd": int(snd_wnd),
                "rtt": int(rtt),
                "rttvar": int(rttvar),
                "pmtu": f.mss + _HEADER_BYTES,
            }
            stream = {"socket": _SOCKET, **_interval(start, end, nbytes, **tcp_info, omitted=False, sender=True)}
            summed = _interval(start, end, nbytes, retransmits=int(retrans), omitted=False, sender=True)
        intervals.append({"streams": [stream], "sum": summed})

    seconds = (end_ns - start_ns) / 1e9
    sent_once = int(total.get("bytes_sent", received_end)) - int(total.get("bytes_retrans", 0))
    measured = [r for r in rtts if r > 0]
    if reverse:  # the server's totals reach the client; its tcp_info does not (iperf3 writes 0)
        sender_info = {"max_snd_cwnd": 0, "max_snd_wnd": 0, "max_rtt": 0, "min_rtt": 0, "mean_rtt": 0}
    else:
        sender_info = {
            "max_snd_cwnd": max(cwnds, default=0),
            "max_snd_wnd": max([0, *snd_wnds]),
            "max_rtt": max(measured, default=0),
            "min_rtt": min(measured, default=0),
            "mean_rtt": int(sum(measured) / len(measured)) if measured else 0,
        }
    sender = {
        "socket": _SOCKET,
        **_interval(0, seconds, sent_once, retransmits=retrans_end),
        **sender_info,
        "sender": is_sender,
    }
    receiver = {"socket": _SOCKET, **_interval(0, seconds, received_end), "sender": is_sender}
    duration = int(round(seconds))
    tcp = f.tcp
    client_host, client_port = (f.sender_addr, f.sender_port) if is_sender else (f.receiver_addr, f.receiver_port)
    server_host, server_port = (f.receiver_addr, f.receiver_port) if is_sender else (f.sender_addr, f.sender_port)
    out = {
        "start": {
            "connected": [
                {
                    "socket": _SOCKET,
                    "local_host": client_host,
                    "local_port": client_port,
                    "remote_host": server_host,
                    "remote_port": server_port,
                }
            ],
            "version": IPERF3_VERSION,
            "system_info": "",
            "timestamp": {"time": "Thu, 01 Jan 1970 00:00:00 GMT", "timesecs": 0},
            "connecting_to": {"host": server_host, "port": server_port},
            "cookie": _cookie(run, f),
            "tcp_mss_default": f.mss,
            "target_bitrate": 0,
            "sock_bufsize": 0,
            "sndbuf_actual": int((tcp.get("tcp_wmem") or [4096, 16384])[1]),
            "rcvbuf_actual": int((tcp.get("tcp_rmem") or [4096, 131072])[1]),
            "test_start": {
                "protocol": "TCP",
                "num_streams": 1,
                "blksize": _BLKSIZE,
                "omit": 0,
                "duration": duration,
                "bytes": 0,
                "blocks": 0,
                "reverse": int(reverse),
                "tos": 0,
                "target_bitrate": 0,
            },
        },
        "intervals": intervals,
        "end": {
            "streams": [{"sender": sender, "receiver": receiver}],
            "sum_sent": {**_interval(0, seconds, sent_once, retransmits=retrans_end), "sender": is_sender},
            "sum_received": {**_interval(0, seconds, received_end), "sender": is_sender},
            "cpu_utilization_percent": {
                "host_total": 0.0,
                "host_user": 0.0,
                "host_system": 0.0,
                "remote_total": 0.0,
                "remote_user": 0.0,
                "remote_system": 0.0,
            },
            "sender_tcp_congestion": f.cc,
            "receiver_tcp_congestion": f.cc,
        },
        "title": f"{run.title}: {f.name}",
        "extra_data": (
            f"tcplab {run.summary.get('tcplab_version', '?')} {run.kind}, engine "
            f"{run.summary.get('engine_version', '?')}, seed {run.summary.get('seed')}, flow {f.name} "
            f"({f.sender_node} -> {f.receiver_node})"
        ),
    }
    return out


def _cjson_numbers(x: Any) -> Any:
    """Numbers as iperf3's cJSON prints them: a double with an integral value is printed as
    an integer (``"start": 0``, ``"end": 5``), other doubles keep their fraction."""
    if isinstance(x, dict):
        return {k: _cjson_numbers(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_cjson_numbers(v) for v in x]
    if isinstance(x, float) and x.is_integer() and abs(x) < 2**53:
        return int(x)
    return x


def iperf3_text(run: RunData, flow: str | ExportFlow, *, interval_s: float | None = None) -> str:
    """The file's text: the object with cJSON's number forms, indented (iperf3 indents with
    tabs, tcplab with 2 spaces: the same JSON)."""
    obj = _cjson_numbers(iperf3_json(run, flow, interval_s=interval_s))
    return json.dumps(obj, indent=2, allow_nan=False) + "\n"


def _flow_named(run: RunData, name: str) -> ExportFlow:
    name = run.flow_name(name)  # an index names the flow too
    flows = iperf3_flows(run)
    for f in flows:
        if f.name == name:
            return f
    names = ", ".join(f.name for f in flows) or "none in this run"
    if run.flow_index(name) is not None:
        problem = f"flow {name!r} is not a sampled bulk or maerts flow"
    else:
        problem = f"no flow named {abbreviate_digits(name)[:60]!r}"
    raise ScenarioError(problem, path="--flow", value=name, expected=f"a flow name or index: {names}")

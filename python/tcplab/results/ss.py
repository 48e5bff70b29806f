"""TCP sockets as ``ss -tin`` prints them, one text per node, at the end of a run or at a time t.

The model: every flow is a TCP connection between two sockets, the *client* on the flow's
``from`` node and the *server* on its ``to`` node; one of them writes the data (the flow's
``data_from``) and the engine samples that sender's ``tcp_sock`` into the time series
(cwnd, ssthresh, srtt/rttvar, min RTT, RTO and its backoff, pacing and delivery rates, bytes
sent, retransmitted and acked, data segments out, total retransmissions, the
``busy``/``rwnd_limited``/``sndbuf_limited`` chronographs, BBR's bw and gains, the peer's
window, the Send-Q) and of the receiver its bytes received and its Recv-Q.
``ss-tin-NODE.txt`` in the run directory holds what ``ss -tin`` (``-t`` TCP, ``-i`` tcp_info,
``-n`` numeric: raw ports, rates in bit/s) would print on that node, in iproute2's format
(``misc/ss.c``: ``inet_stats_print()`` for the state line, ``tcp_show_info()`` to read
``struct tcp_info`` as Linux v6.12 ``net/ipv4/tcp.c: tcp_get_info()`` fills it,
``tcp_stats_print()`` for the info line, in its order, each field only when ss would print
it; checked against iproute2 6.1's own output in tests/data/real-tools)::

    State Recv-Q Send-Q Local Address:Port Peer Address:Port Process
    ESTAB 0      4194304     10.0.0.1:32768     10.0.0.2:5201
    \t cubic wscale:7,7 rto:224 rtt:20.512/0.204 mss:1448 pmtu:1500 advmss:1448 cwnd:86 ...

Values at time t are those of the flow's last sample at or before t (the default t is the
end of the run; then the flow's totals, which the engine counts to the end, replace the
sampled counters: bytes_sent, bytes_retrans, bytes_acked, data_segs_out and the
chronographs). A time series written before the engine sampled the queues, the RTO and those
counters (an older run directory) prints without them: Recv-Q/Send-Q 0, no ``rto``.

Choices where tcplab must choose, and what it leaves out:

* Addresses: node number i (its place in the scenario's node list) is ``10.0.X.Y`` with
  ``X = i // 254``, ``Y = i % 254 + 1``; the client's port is ephemeral, ``32768 + flow
  index`` (the start of Linux's ``ip_local_port_range``), the server's port is its
  application's: 5201 bulk/maerts (iperf3), 2049 nfs_stream (NFS), 443 hls and broadcast
  (HTTPS, websockets behind nginx), 8080 rr, 9090 batch_writer (a remote-write receiver).
* Both sockets of a flow run the flow's congestion control (the engine's socket pair), so
  both print its name.
* Options: every tcplab connection negotiates timestamps, SACK and window scaling, as two
  Linux ends with default sysctls do (:mod:`tcplab.results.tcp_options`; the pcap export's
  SYNs carry them). ``ss -tin`` prints ``wscale:S,R`` (the peer's scale, then ours: both the
  flow's, from its ``tcp_rmem``); ``ts sack`` only with ``-o`` or ``-e`` (``show_options``),
  so not here, and so do ``ecn`` (tcpi_options' TCPI_OPT_ECN: the socket's ``TCP_ECN_OK``,
  ECN negotiated) and ``ecnseen`` (TCPI_OPT_ECN_SEEN: ``TCP_ECN_SEEN``, it has received an
  ECT or CE segment) after them: ``options=True`` gives what ``ss -tino`` prints there
  (:func:`format_ss`), without ``-o``'s ``timer:(...)``, which the engine does not sample.
  ``ecn`` is settled by the handshake; ``ecnseen`` is known at the end of the run only.
* ECN and DCTCP (the run's flow totals, engine ``flows[i]["ecn"]``): the data sender's
  ``delivered_ce`` (tcpi_delivered_ce, after ``delivery_rate`` as ss prints it) and a DCTCP
  sender's ``dctcp:(ce_state:C,alpha:A,ab_ecn:E,ab_tot:T)`` (INET_DIAG_DCTCPINFO, after
  ``data_segs_out``), both at the end of the run only. A DCTCP socket whose connection did
  not negotiate ECN runs Linux's ``dctcp-reno`` (tcp_dctcp.c: dctcp_init() switches to it):
  its cc prints as ``dctcp-reno`` and its info as ``dctcp:fallback_mode``, at any time. The
  receiving socket's own DCTCP state is not known: left out.
* The state line: the data sender's Send-Q is ``write_seq - snd_una`` (written, not yet
  acknowledged), the receiver's Recv-Q ``rcv_nxt - copied_seq`` (arrived, not yet read by the
  application: a slow reader's backlog); the other two are 0 (the receiver writes nothing, the
  sender reads nothing).
* Sockets listed: the flows the engine samples (every flow except those of an application
  with more than 16 connections, the broadcast's thousands: their sockets are left out, as
  if ss had been given a filter that excludes them), started at or before t; a flow whose
  application finished before t (its data all acknowledged, ``end_s`` < t) has closed and is
  left out too. A flow without a sample at or before t, or whose sender has no RTT sample
  yet (the handshake in flight: not yet ESTAB), is left out.
* Fields tcplab does not know are omitted, never invented: ``ato``, ``rcvmss`` (Linux
  estimates it from the segment sizes received, which are not sampled),
  ``lastsnd``/``lastrcv``/``lastack``, ``unacked``, ``lost`` (tcp_info's current lost_out;
  the engine samples the cumulative count), ``delivered``, ``app_limited``,
  ``segs_out``/``segs_in``, ``rcv_space``, ``rcv_ssthresh``, ``notsent``, the receiving
  socket's ``rto``, ``rtt`` and ``snd_wnd`` and ``skmem`` (no ``-m``). The sending socket's
  ``snd_wnd`` (tcpi_snd_wnd, the receiver's advertised window; iproute2 prints it last, after
  ``minrtt``) comes from the time series. ``retrans:C/T`` prints C (segments retransmitted
  and not yet acknowledged) as 0: the engine samples only T. The receiving socket prints what
  the engine knows of it: its congestion control, window scale, MSS and ``bytes_received``.
* ``pmtu`` is ``mss + 52`` (20 bytes IPv4, 20 TCP, 12 of timestamps: tcplab's framing);
  ``advmss`` is the flow's MSS (both ends use the same).
* ``rto`` is tcpi_rto / 1000 (``%g`` ms), left out at 3 s (the pre-RFC 6298 initial value
  ss skips); ``backoff`` only when non-zero.
* BBR's ``mrtt`` is BBR's own windowed minimum (10 s) in Linux; the time series carries
  TCP's (``tcp_min_rtt``, 300 s), which tcplab prints for both ``mrtt`` and ``minrtt``
  unless the series has a ``bbr_min_rtt_us`` column. ``send`` is ss's own
  ``cwnd * mss * 8 / srtt``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from tcplab.results.tcp_options import window_scale

__all__ = [
    "SsSocket",
    "format_ss",
    "sprint_bw",
    "node_address",
    "server_port",
    "sockets_at",
    "ss_texts",
    "CLIENT_PORT_BASE",
    "CLIENT_PORT_SPAN",
    "app_kinds",
    "SERVER_PORTS",
    "MAX_SAMPLED_APP_CONNECTIONS",
]

#: The first ephemeral port (Linux's default ``ip_local_port_range``: 32768 60999).
CLIENT_PORT_BASE = 32768
#: The ports of that range: flow ``i``'s client port is ``CLIENT_PORT_BASE + i % CLIENT_PORT_SPAN``.
CLIENT_PORT_SPAN = 60999 - 32768 + 1
#: The server's port by application kind (bulk and maerts are iperf3-like).
SERVER_PORTS = {
    "bulk": 5201,
    "maerts": 5201,
    "nfs_stream": 2049,
    "hls": 443,
    "broadcast": 443,
    "rr": 8080,
    "batch_writer": 9090,
}
#: An application with more connections than this is not sampled (summary.json folds it
#: into one row, tcplab.results.result.SUMMARY_MAX_APP_CONNECTIONS): its sockets are left out.
MAX_SAMPLED_APP_CONNECTIONS = 16
#: ss prints ssthresh only below this (``tcp_show_info()``: ``tcpi_snd_ssthresh < 0xFFFF``).
_SSTHRESH_SHOWN_BELOW = 0xFFFF
#: IPv4 (20) + TCP (20) + timestamp option (12): the MSS + this is the path MTU.
_HEADER_BYTES = 52
#: tcpi_rto that ss does not print (``tcp_show_info()``: the old 3 s TCP_TIMEOUT_INIT).
_RTO_NOT_SHOWN_US = 3_000_000
_U64_MAX = (1 << 64) - 1
#: ``tp->ecn_flags`` bits ss reads through tcpi_options (include/net/tcp.h, v6.12).
TCP_ECN_OK = 1
TCP_ECN_SEEN = 8


def sprint_bw(bps: float) -> str:
    """iproute2 ``misc/ss.c: sprint_bw()`` with ``-n`` (numeric): ``%.0f``."""
    return "%.0f" % bps


def _g(x: float) -> str:
    """C's ``%g``."""
    return "%g" % x


def node_address(index: int) -> str:
    """The IPv4 address of node number ``index``: ``10.0.X.Y`` (module doc)."""
    return f"10.0.{index // 254}.{index % 254 + 1}"


def server_port(app_kind: str | None) -> int:
    """The server's port for an application kind (module doc); 5201 when unknown."""
    return SERVER_PORTS.get(app_kind or "bulk", 5201)


@dataclass
class SsSocket:
    """One socket's state line and tcp_info (times in us as tcp_info keeps them, printed in
    ms; packets, bytes, bit/s). ``None``, 0 or a missing key: ss does not print it."""

    node: str
    local: str
    peer: str
    state: str = "ESTAB"
    recv_q: int = 0
    send_q: int = 0
    cc: str | None = None
    info: dict[str, Any] = field(default_factory=dict)

    def info_line(self, options: bool = False) -> str:
        """The info line as ``tcp_stats_print()`` writes it (``\\t`` then `` field`` each);
        ``options``: with what ``-o``/``-e`` adds there (``ts sack``, ``ecn``, ``ecnseen``)."""
        i = self.info
        out: list[str] = []
        if options:  # tcpi_options, read only with show_options
            out += ["ts", "sack"]
            flags = i.get("ecn_flags")
            if flags is not None and int(flags) & TCP_ECN_OK:
                out.append("ecn")
            if flags is not None and i.get("ecn_seen_known", True) and int(flags) & TCP_ECN_SEEN:
                out.append("ecnseen")
        if self.cc:
            out.append(self.cc)
        if i.get("wscale"):  # TCPI_OPT_WSCALE: tcpi_snd_wscale, tcpi_rcv_wscale
            snd, rcv = i["wscale"]
            out.append(f"wscale:{int(snd)},{int(rcv)}")
        rto_us = int(i.get("rto_us") or 0)
        if rto_us and rto_us != _RTO_NOT_SHOWN_US:  # tcpi_rto / 1000
            out.append(f"rto:{_g(rto_us / 1000)}")
        if i.get("backoff"):
            out.append(f"backoff:{int(i['backoff'])}")
        srtt_us = int(i.get("rtt_us") or 0)
        if srtt_us:  # tcpi_rtt / 1000, tcpi_rttvar / 1000 (us -> ms, as doubles)
            out.append(f"rtt:{_g(srtt_us / 1000)}/{_g(int(i.get('rttvar_us') or 0) / 1000)}")
        for key in ("mss", "pmtu", "rcvmss", "advmss", "cwnd"):
            if i.get(key):
                out.append(f"{key}:{int(i[key])}")
        ssthresh = i.get("ssthresh")
        if ssthresh is not None and 0 < ssthresh < _SSTHRESH_SHOWN_BELOW:
            out.append(f"ssthresh:{int(ssthresh)}")
        for key in ("bytes_sent", "bytes_retrans", "bytes_acked", "bytes_received", "data_segs_out"):
            if i.get(key):
                out.append(f"{key}:{int(i[key])}")
        dctcp = i.get("dctcp")
        if dctcp == "fallback":
            out.append("dctcp:fallback_mode")
        elif dctcp is not None:
            out.append(
                "dctcp:(ce_state:%u,alpha:%u,ab_ecn:%u,ab_tot:%u)"
                % (int(dctcp["ce_state"]), int(dctcp["alpha"]), int(dctcp["ab_ecn"]), int(dctcp["ab_tot"]))
            )
        bbr = i.get("bbr")
        if bbr is not None:
            text = f"bbr:(bw:{sprint_bw(bbr['bw_bps'])}bps,mrtt:{_g(int(bbr['mrtt_us']) / 1000)}"
            if bbr.get("pacing_gain"):
                text += f",pacing_gain:{_g(bbr['pacing_gain'])}"
            if bbr.get("cwnd_gain"):
                text += f",cwnd_gain:{_g(bbr['cwnd_gain'])}"
            out.append(text + ")")
        # ss's own estimate (tcp_show_info()): tcpi_snd_cwnd * tcpi_snd_mss * 8000000 / tcpi_rtt
        if srtt_us and i.get("mss") and i.get("cwnd"):
            out.append(f"send {sprint_bw(int(i['cwnd']) * int(i['mss']) * 8000000.0 / srtt_us)}bps")
        if i.get("pacing_rate_bps"):
            text = f"pacing_rate {sprint_bw(i['pacing_rate_bps'])}bps"
            if i.get("max_pacing_rate_bps"):
                text += f"/{sprint_bw(i['max_pacing_rate_bps'])}bps"
            out.append(text)
        if i.get("delivery_rate_bps"):
            out.append(f"delivery_rate {sprint_bw(i['delivery_rate_bps'])}bps")
        if i.get("delivered_ce"):  # after delivered, which tcplab does not sample
            out.append(f"delivered_ce:{int(i['delivered_ce'])}")
        busy_us = i.get("busy_us")
        if busy_us:
            # ss: "busy:%llums", then each limit "...:%llums(%.1f%%)" when non-zero
            out.append(f"busy:{int(busy_us) // 1000}ms")
            for key in ("rwnd_limited", "sndbuf_limited"):
                v = i.get(f"{key}_us")
                if v:
                    out.append(f"{key}:{int(v) // 1000}ms({100.0 * v / busy_us:.1f}%)")
        if i.get("retrans_total"):
            out.append(f"retrans:0/{int(i['retrans_total'])}")
        if i.get("minrtt_us"):
            out.append(f"minrtt:{_g(int(i['minrtt_us']) / 1000)}")
        if i.get("snd_wnd"):  # iproute2 6.x: after minrtt (and rcv_ooopack, not sampled)
            out.append(f"snd_wnd:{int(i['snd_wnd'])}")
        return "\t " + " ".join(out)


def _split(addr: str) -> tuple[str, str]:
    host, _, port = addr.rpartition(":")
    return host, port


def format_ss(sockets: list[SsSocket], options: bool = False) -> str:
    """The ``ss -tin`` text of ``sockets``: the header, then per socket its state line and
    info line. Columns are padded as ss pads them (addresses right-aligned up to the ``:``,
    ports left-aligned, one space between columns). ``options``: the info lines as ``ss
    -tino`` prints them (``ts sack`` and the ECN words first; module doc)."""
    rows = [(s.state, str(s.recv_q), str(s.send_q), *_split(s.local), *_split(s.peer)) for s in sockets]
    head = ("State", "Recv-Q", "Send-Q", "Local Address", "Port", "Peer Address", "Port")
    widths = [max(len(r[k]) for r in [head, *rows]) for k in range(7)]

    def line(r: tuple[str, ...]) -> str:
        return (
            f"{r[0]:<{widths[0]}} {r[1]:<{widths[1]}} {r[2]:<{widths[2]}} "
            f"{r[3]:>{widths[3]}}:{r[4]:<{widths[4]}} {r[5]:>{widths[5]}}:{r[6]:<{widths[6]}}"
        )

    # the header's last Port is not padded before Process (iproute2 6.1's own output)
    lines = [line(head).rstrip() + " Process"]
    for s, r in zip(sockets, rows, strict=True):
        lines.append(line(r).rstrip())
        lines.append(s.info_line(options))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- from a run


def app_kinds(config: Mapping[str, Any]) -> tuple[dict[int, str], set[int]]:
    """Flow index -> its application's kind, and the flows of apps too large to sample."""
    kind: dict[int, str] = {}
    folded: set[int] = set()
    for app in config.get("apps", []) or []:
        flows = [int(i) for i in app.get("flows", [])]
        k = str((app.get("spec") or {}).get("kind", "bulk"))
        for i in flows:
            kind[i] = k
        if len(flows) > MAX_SAMPLED_APP_CONNECTIONS:
            folded.update(flows)
    for i, f in enumerate(config.get("flows", [])):
        if i not in kind:
            kind[i] = "maerts" if f.get("data_side") == "server" else "bulk"
    return kind, folded


def _last_rows(timeseries: pd.DataFrame, at_ns: int | None) -> dict[int, dict[str, Any]]:
    """Flow index -> its last time-series row at or before ``at_ns`` (all rows if None)."""
    if timeseries.empty:
        return {}
    t = timeseries["t_ns"].to_numpy()
    mask = np.ones(len(t), dtype=bool) if at_ns is None else t <= np.uint64(at_ns)
    sub = timeseries.loc[mask]
    if sub.empty:
        return {}
    # rows are in time order; the last row of each flow is its latest sample
    last = sub.drop_duplicates(subset="flow", keep="last")
    return {int(r["flow"]): r for r in last.to_dict("records")}


def sockets_at(
    config: Mapping[str, Any],
    flows: pd.DataFrame,
    timeseries: pd.DataFrame,
    at_ns: int | None = None,
    flow: str | None = None,
) -> dict[str, list[SsSocket]]:
    """``{node: [sockets]}`` at ``at_ns`` (ns since the run's start; None = its end), from
    the run's engine config, ``Result.flows`` and ``Result.timeseries`` (module doc);
    ``flow``: only that flow's two sockets (the flow's name as in the configuration)."""
    nodes = [str(n["name"]) for n in config.get("nodes", [])]
    duration_ns = int(config["duration_ns"])
    t_ns = duration_ns if at_ns is None else int(at_ns)
    at_end = at_ns is None or t_ns >= duration_ns
    kinds, folded = app_kinds(config)
    rows = _last_rows(timeseries, None if at_end else t_ns)
    # the totals of the flows shown only: a workload's 10,000 unsampled connections have rows too
    shown = {str(f["name"]) for i, f in enumerate(config.get("flows", [])) if i in rows and i not in folded}
    shown_rows = flows[flows["name"].isin(shown)] if not flows.empty else flows
    totals = {str(r["name"]): r for r in shown_rows.to_dict("records")} if not shown_rows.empty else {}
    out: dict[str, list[SsSocket]] = {}
    for i, f in enumerate(config.get("flows", [])):
        if i in folded or not f.get("sample", True) or i not in rows:
            continue
        if flow is not None and str(f["name"]) != flow:
            continue
        start_ns = int(f.get("start_ns", 0) or 0)
        total = totals.get(str(f["name"]), {})
        end_ns = int(round(float(total.get("end_s", duration_ns / 1e9)) * 1e9))
        if start_ns > t_ns or (end_ns < duration_ns and end_ns < t_ns):
            continue
        src, dst = int(f["src"]), int(f["dst"])
        if not (0 <= src < len(nodes) and 0 <= dst < len(nodes)):
            continue
        client = f"{node_address(src)}:{CLIENT_PORT_BASE + i % CLIENT_PORT_SPAN}"
        server = f"{node_address(dst)}:{server_port(kinds.get(i))}"
        server_sends = f.get("data_side", "client") == "server"
        sender_node, receiver_node = (dst, src) if server_sends else (src, dst)
        sender_addr, receiver_addr = (server, client) if server_sends else (client, server)
        cc = str(f.get("cc", "")) or None
        receiver_cc = str(f.get("receiver_cc") or "") or cc
        tcp = f.get("tcp") or {}
        mss = int(tcp.get("mss_bytes", 1448))
        row = rows[i]
        if int(row.get("srtt_us", 0)) == 0:
            continue  # no RTT sample yet: the handshake is still in flight (not ESTAB)
        wscale = window_scale(tcp)
        info = _sender_info(row, mss, cc, tcp)
        info["wscale"] = (wscale, wscale)
        if at_end and total:
            info.update(_totals_info(total))
        recv_info: dict[str, Any] = {"wscale": (wscale, wscale), "mss": mss, "advmss": mss}
        recv_info.update(_receiver_info(row))
        sender_flags, receiver_flags = _flag(total, "ecn_flags"), _flag(total, "receiver_ecn_flags")
        cc = _ecn_info(info, cc, sender_flags, total, at_end, sender=True)
        receiver_cc = _ecn_info(recv_info, receiver_cc, receiver_flags, total, at_end, sender=False)
        received = int(total["bytes_received"]) if at_end and total else int(row.get("bytes_received", 0))
        recv_info["bytes_received"] = received
        out.setdefault(nodes[sender_node], []).append(
            SsSocket(
                node=nodes[sender_node],
                local=sender_addr,
                peer=receiver_addr,
                send_q=_count(row, "send_q_bytes"),
                cc=cc,
                info=info,
            )
        )
        out.setdefault(nodes[receiver_node], []).append(
            SsSocket(
                node=nodes[receiver_node],
                local=receiver_addr,
                peer=sender_addr,
                recv_q=_count(row, "recv_q_bytes"),
                cc=receiver_cc,
                info=recv_info,
            )
        )
    return out


def _flag(total: Mapping[str, Any], key: str) -> int | None:
    """An ECN flags column of the flow's totals, None when unknown (NaN, or no such column)."""
    v = total.get(key)
    return int(v) if v is not None and np.isfinite(v) else None


def _ecn_info(
    info: dict[str, Any], cc: str | None, flags: int | None, total: Mapping[str, Any], at_end: bool, *, sender: bool
) -> str | None:
    """Put one socket's ECN state into ``info`` (module doc: ``ecn_flags`` for ``-o``'s words,
    the sender's ``delivered_ce`` and DCTCP info at the end) and return its cc's name as ss
    prints it: ``dctcp-reno`` for a DCTCP socket without ECN."""
    if flags is None:
        return cc
    info["ecn_flags"] = flags
    info["ecn_seen_known"] = at_end  # TCP_ECN_SEEN is set by the first ECT segment: the end's
    fallback = cc == "dctcp" and not flags & TCP_ECN_OK
    if fallback:
        info["dctcp"] = "fallback"
    if sender and at_end:
        delivered_ce = total.get("delivered_ce")
        if delivered_ce is not None and np.isfinite(delivered_ce):
            info["delivered_ce"] = int(delivered_ce)
        if cc == "dctcp" and not fallback:
            values = {k: total.get(f"dctcp_{k}") for k in ("ce_state", "alpha", "ab_ecn", "ab_tot")}
            if all(v is not None and np.isfinite(v) for v in values.values()):
                info["dctcp"] = {k: int(v) for k, v in values.items() if v is not None}
    return "dctcp-reno" if fallback else cc


def _receiver_info(row: Mapping[str, Any]) -> dict[str, Any]:
    """The data receiver's own sending state, as ss prints it on the receiver's host (the
    ``receiver_*`` columns; older series lack them: left out): rto, backoff, rtt, cwnd,
    ssthresh, retrans. Its cwnd moves only with what it sends (requests, ACKs)."""
    if "receiver_cwnd" not in row or not np.isfinite(row["receiver_cwnd"]):
        return {}
    info: dict[str, Any] = {"cwnd": int(row["receiver_cwnd"]), "ssthresh": int(row["receiver_ssthresh"])}
    for key, col in (
        ("rtt_us", "receiver_srtt_us"),
        ("rto_us", "receiver_rto_us"),
        ("backoff", "receiver_backoff"),
        ("retrans_total", "receiver_retrans_segs"),
    ):
        v = row.get(col)
        if v is not None and np.isfinite(v):
            info[key] = int(v)
    return info


def _sender_info(row: Mapping[str, Any], mss: int, cc: str | None, tcp: Mapping[str, Any]) -> dict[str, Any]:
    srtt_us = int(row.get("srtt_us", 0))
    cwnd = int(row.get("cwnd", 0))
    min_rtt_us = int(row.get("min_rtt_us", 0))
    info: dict[str, Any] = {
        "rtt_us": srtt_us,
        "rttvar_us": int(row.get("rttvar_us", 0)),
        "mss": mss,
        "pmtu": mss + _HEADER_BYTES,
        "advmss": mss,
        "cwnd": cwnd,
        "ssthresh": int(row.get("ssthresh", 0)),
        "bytes_acked": int(row.get("bytes_acked", 0)),
        "retrans_total": int(row.get("retrans_segs", 0)),
        "minrtt_us": min_rtt_us if min_rtt_us != 0xFFFFFFFF else 0,
        "delivery_rate_bps": int(row.get("delivery_rate_bps", 0)),
        "snd_wnd": int(row.get("snd_wnd_bytes", 0)),
    }
    pacing = int(row.get("pacing_rate_bps", 0))
    if pacing and pacing < _U64_MAX - 7:  # ~0 (unlimited) is not printed
        info["pacing_rate_bps"] = pacing
        max_rate = int(tcp.get("max_pacing_rate_bytes_per_sec", _U64_MAX))
        if max_rate and max_rate != _U64_MAX:
            info["max_pacing_rate_bps"] = max_rate * 8
    # tcp_info's counters and chronographs as sampled (older series lack them: left out)
    for key in (
        "rto_us",
        "backoff",
        "bytes_sent",
        "bytes_retrans",
        "data_segs_out",
        "busy_us",
        "rwnd_limited_us",
        "sndbuf_limited_us",
    ):
        if key in row:
            info[key] = int(row[key])
    if cc == "bbr":
        bbr_rtt_us = int(row["bbr_min_rtt_us"]) if "bbr_min_rtt_us" in row else min_rtt_us
        info["bbr"] = {
            "bw_bps": int(row.get("bbr_bw_bps", 0)),
            "mrtt_us": bbr_rtt_us if bbr_rtt_us != 0xFFFFFFFF else 0,
            "pacing_gain": float(row.get("pacing_gain", 0.0)),
            "cwnd_gain": float(row.get("cwnd_gain", 0.0)),
        }
    return info


def _count(row: Mapping[str, Any], key: str) -> int:
    """A sampled count, 0 when the series lacks the column (an older run directory)."""
    v = row.get(key)
    return int(v) if v is not None and np.isfinite(v) else 0


def _totals_info(total: Mapping[str, Any]) -> dict[str, Any]:
    """What the flow's end-of-run totals add (and make exact) at the end of the run."""
    out: dict[str, Any] = {
        "bytes_sent": int(total["bytes_sent"]),
        "bytes_retrans": int(total["bytes_retrans"]),
        "bytes_acked": int(total["bytes_acked"]),
        "data_segs_out": int(total["data_segs_out"]),
        "retrans_total": int(total["retrans_segs"]),
    }
    busy_ms = total.get("busy_ms")
    if busy_ms is not None and np.isfinite(busy_ms):
        # the engine reports microseconds; the flows frame keeps them as ms (exact: us / 1000)
        out["busy_us"] = int(round(float(busy_ms) * 1000))
        for key in ("rwnd_limited", "sndbuf_limited"):
            v = total.get(f"{key}_ms")
            if v is not None and np.isfinite(v):
                out[f"{key}_us"] = int(round(float(v) * 1000))
    return out


def ss_texts(
    config: Mapping[str, Any],
    flows: pd.DataFrame,
    timeseries: pd.DataFrame,
    at_ns: int | None = None,
    flow: str | None = None,
    options: bool = False,
) -> dict[str, str]:
    """``{node: ss -tin text}`` for every node with a socket at ``at_ns`` (None = the end);
    ``flow``: only the nodes of that flow's two sockets, and only those sockets; ``options``:
    as ``ss -tino`` (``ts sack ecn ecnseen``; :func:`format_ss`)."""
    return {
        node: format_ss(socks, options) for node, socks in sockets_at(config, flows, timeseries, at_ns, flow).items()
    }

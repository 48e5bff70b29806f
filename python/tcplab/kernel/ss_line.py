"""One socket as ``ss -tinH`` prints it, read in-process instead of by running ``ss``.

Why: the traffic agents sample their sockets every ``sample_interval``. Running ``ss`` (and
``tc``) that often spawns processes on the CPU the traffic runs on, and that shows on the
wire: on this machine's 2-CPU VM, a kernel run of BBR over a 100 Mbit/s pfifo at ~0 ms RTT
sampled with ``ss``/``tc`` every 100 ms had its ACKs stall 3-15 ms at every sample (a
capture at the sender: 346 gaps over 2 ms in 13 s, all within 25 ms of a sample; with no
process spawned during the run, 6), which BBR's ACK-aggregation estimate
(Linux v6.12 net/ipv4/tcp_bbr.c: bbr_update_ack_aggregation()) turns into a cwnd 2-3 times
its target and a queue that overflows (docs/kernel-pin.md, departure 3). Reading the same
values with ``getsockopt``/``ioctl`` costs microseconds and no process.

The model: ``ss -tin`` gets, per socket, ``struct tcp_info`` (INET_DIAG_INFO, filled by
Linux v6.12 net/ipv4/tcp.c: tcp_get_info()), the congestion control's name (INET_DIAG_CONG)
and its info (INET_DIAG_BBRINFO: ``struct tcp_bbr_info``, tcp_bbr.c: bbr_get_info()), and
the queues (``idiag_rqueue``/``idiag_wqueue``, net/ipv4/tcp_diag.c: tcp_diag_get_info()).
The socket's owner reads the same: ``TCP_INFO``, ``TCP_CONGESTION`` and ``TCP_CC_INFO``
(do_tcp_getsockopt(), the same fill functions), ``SIOCINQ`` (tcp_ioctl(): ``rcv_nxt -
copied_seq``, one less after a FIN, where ss's Recv-Q is not) and ``SIOCOUTQ``
(``write_seq - snd_una``, ss's Send-Q). :func:`format_socket` prints them as iproute2's
misc/ss.c does with ``-tinH`` (``inet_stats_print()``'s state line, ``tcp_show_info()``
then ``tcp_stats_print()``: each field only when ss prints it, in its order, ``%g`` for the
times in ms, rates in bit/s with ``-n``); ``ts``/``sack``/``ecn`` come only with ``-o``/``-e``,
so not here. tests/test_kernel_ss_line.py holds it against ``ss`` itself on a live socket.

No tcplab imports beyond :mod:`tcplab.kernel.tcpinfo`: the agent loads it inside a network
namespace and must start fast.
"""

from __future__ import annotations

import fcntl
import socket
import struct
from typing import Any

from tcplab.kernel.tcpinfo import TCP_INFO_SIZE, parse_tcp_info

__all__ = ["SsSample", "TCP_STATE_NAMES", "read_socket", "format_socket", "format_bbr"]

#: ss's names of the TCP states (include/net/tcp_states.h order; misc/ss.c: sstate_name).
TCP_STATE_NAMES = {
    1: "ESTAB",
    2: "SYN-SENT",
    3: "SYN-RECV",
    4: "FIN-WAIT-1",
    5: "FIN-WAIT-2",
    6: "TIME-WAIT",
    7: "UNCONN",
    8: "CLOSE-WAIT",
    9: "LAST-ACK",
    10: "LISTEN",
    11: "CLOSING",
}
#: The states ``ss state connected`` lists: all but LISTEN and CLOSE (misc/ss.c SS_CONN).
_CONNECTED = frozenset({1, 2, 3, 4, 5, 6, 8, 9, 11})

TCP_CC_INFO = 26  # include/uapi/linux/tcp.h
_SIOCINQ = 0x541B  # FIONREAD
_SIOCOUTQ = 0x5411  # TIOCOUTQ
#: ``struct tcp_bbr_info``: bbr_bw_lo, bbr_bw_hi (bytes/s), bbr_min_rtt (us), pacing and
#: cwnd gains (<< 8).
_BBR_INFO = struct.Struct("=5I")
_U64_MAX = (1 << 64) - 1
#: tcp_info's rto before the first RTT sample: ss leaves it out (misc/ss.c tcp_show_info()).
_RTO_NOT_SHOWN_US = 3_000_000


SsSample = dict[str, Any]


def read_socket(sock: socket.socket, local: str, peer: str) -> SsSample | None:
    """What ``ss -tin`` would read of ``sock`` now, or None when ``ss state connected`` would
    not list it (closed, listening) or the socket is gone."""
    try:
        info = parse_tcp_info(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_SIZE + 64))
        if info.get("state") not in _CONNECTED:
            return None
        cc = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).split(b"\0", 1)[0].decode()
        raw_cc = sock.getsockopt(socket.IPPROTO_TCP, TCP_CC_INFO, 64)
        buf = bytearray(4)
        fcntl.ioctl(sock.fileno(), _SIOCINQ, buf, True)
        recv_q = struct.unpack("=i", buf)[0]
        fcntl.ioctl(sock.fileno(), _SIOCOUTQ, buf, True)
        send_q = struct.unpack("=i", buf)[0]
    except OSError:
        return None
    bbr = _BBR_INFO.unpack_from(raw_cc) if cc == "bbr" and len(raw_cc) >= _BBR_INFO.size else None
    return {
        "local": local,
        "peer": peer,
        "info": info,
        "cc": cc,
        "bbr": bbr,
        "recv_q": max(0, recv_q),
        "send_q": max(0, send_q),
    }


def _g(x: float) -> str:
    """C's ``%g``."""
    return "%g" % x


def _bw(bps: float) -> str:
    """misc/ss.c sprint_bw() with ``-n``: ``%.0f``."""
    return "%.0f" % bps


def format_bbr(bbr: tuple[int, int, int, int, int]) -> str:
    """``bbr:(bw:..bps,mrtt:..,pacing_gain:..,cwnd_gain:..)`` from ``struct tcp_bbr_info``."""
    bw_lo, bw_hi, min_rtt_us, pacing_gain, cwnd_gain = bbr
    text = f"bbr:(bw:{_bw(((bw_hi << 32) | bw_lo) * 8.0)}bps,mrtt:{_g(min_rtt_us / 1000.0)}"
    if pacing_gain:
        text += f",pacing_gain:{_g(pacing_gain / 256.0)}"
    if cwnd_gain:
        text += f",cwnd_gain:{_g(cwnd_gain / 256.0)}"
    return text + ")"


def format_socket(s: SsSample) -> str:
    """The two lines ``ss -tinH`` prints for one socket (module doc), without a final newline."""
    i = s["info"]
    state = TCP_STATE_NAMES.get(int(i.get("state", 0)), "UNKNOWN")
    head = f"{state:<5} {s['recv_q']:<6} {s['send_q']:<6} {s['local']} {s['peer']}"
    out: list[str] = []
    if s.get("cc"):
        out.append(s["cc"])
    if i.get("options", 0) & 4:  # TCPI_OPT_WSCALE
        out.append(f"wscale:{i.get('snd_wscale', 0)},{i.get('rcv_wscale', 0)}")
    if i.get("rto") and i["rto"] != _RTO_NOT_SHOWN_US:
        out.append(f"rto:{_g(i['rto'] / 1000.0)}")
    if i.get("backoff"):
        out.append(f"backoff:{i['backoff']}")
    if i.get("rtt"):
        out.append(f"rtt:{_g(i['rtt'] / 1000.0)}/{_g(i.get('rttvar', 0) / 1000.0)}")
    if i.get("ato"):
        out.append(f"ato:{_g(i['ato'] / 1000.0)}")
    for key, name in (("snd_mss", "mss"), ("pmtu", "pmtu"), ("rcv_mss", "rcvmss"), ("advmss", "advmss")):
        if i.get(key):
            out.append(f"{name}:{i[key]}")
    if i.get("snd_cwnd"):
        out.append(f"cwnd:{i['snd_cwnd']}")
    if i.get("snd_ssthresh") and i["snd_ssthresh"] < 0xFFFF:
        out.append(f"ssthresh:{i['snd_ssthresh']}")
    for key in (
        "bytes_sent",
        "bytes_retrans",
        "bytes_acked",
        "bytes_received",
        "segs_out",
        "segs_in",
        "data_segs_out",
        "data_segs_in",
    ):
        if i.get(key):
            out.append(f"{key}:{i[key]}")
    if s.get("bbr") is not None:
        out.append(format_bbr(s["bbr"]))
    if i.get("rtt") and i.get("snd_mss") and i.get("snd_cwnd"):
        out.append(f"send {_bw(i['snd_cwnd'] * i['snd_mss'] * 8000000.0 / i['rtt'])}bps")
    for key, name in (("last_data_sent", "lastsnd"), ("last_data_recv", "lastrcv"), ("last_ack_recv", "lastack")):
        if i.get(key):
            out.append(f"{name}:{i[key]}")
    pacing = i.get("pacing_rate", _U64_MAX)
    if pacing and pacing != _U64_MAX:
        text = f"pacing_rate {_bw(pacing * 8.0)}bps"
        top = i.get("max_pacing_rate", _U64_MAX)
        if top and top != _U64_MAX:
            text += f"/{_bw(top * 8.0)}bps"
        out.append(text)
    if i.get("delivery_rate"):
        out.append(f"delivery_rate {_bw(i['delivery_rate'] * 8.0)}bps")
    if i.get("delivered"):
        out.append(f"delivered:{i['delivered']}")
    if i.get("delivered_ce"):
        out.append(f"delivered_ce:{i['delivered_ce']}")
    if i.get("delivery_rate_app_limited"):
        out.append("app_limited")
    busy = i.get("busy_time", 0)
    if busy:
        out.append(f"busy:{busy // 1000}ms")
        for key in ("rwnd_limited", "sndbuf_limited"):
            if i.get(key):
                out.append(f"{key}:{i[key] // 1000}ms({100.0 * i[key] / busy:.1f}%)")
    if i.get("unacked"):
        out.append(f"unacked:{i['unacked']}")
    if i.get("retrans") or i.get("total_retrans"):
        out.append(f"retrans:{i.get('retrans', 0)}/{i.get('total_retrans', 0)}")
    if i.get("lost"):
        out.append(f"lost:{i['lost']}")
    if i.get("sacked"):
        out.append(f"sacked:{i['sacked']}")
    if i.get("dsack_dups"):
        out.append(f"dsack_dups:{i['dsack_dups']}")
    if i.get("fackets"):
        out.append(f"fackets:{i['fackets']}")
    if "reordering" in i and i["reordering"] != 3:
        out.append(f"reordering:{i['reordering']}")
    if i.get("reord_seen"):
        out.append(f"reord_seen:{i['reord_seen']}")
    if i.get("rcv_rtt"):
        out.append(f"rcv_rtt:{_g(i['rcv_rtt'] / 1000.0)}")
    if i.get("rcv_space"):
        out.append(f"rcv_space:{i['rcv_space']}")
    if i.get("rcv_ssthresh"):
        out.append(f"rcv_ssthresh:{i['rcv_ssthresh']}")
    if i.get("notsent_bytes"):
        out.append(f"notsent:{i['notsent_bytes']}")
    if i.get("min_rtt"):
        out.append(f"minrtt:{_g(i['min_rtt'] / 1000.0)}")
    if i.get("rcv_ooopack"):
        out.append(f"rcv_ooopack:{i['rcv_ooopack']}")
    if i.get("snd_wnd"):
        out.append(f"snd_wnd:{i['snd_wnd']}")
    return head + "\n\t " + " ".join(out)

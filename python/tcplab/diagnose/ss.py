"""``ss -tin`` (with any of ``-e -m -p -o -n -O -H``): one record per TCP socket.

The model (iproute2 ``misc/ss.c``): a socket is a *state line* (``[Netid] State Recv-Q Send-Q
Local Peer [extras]``) followed, in the default two-line form, by an *info line* that begins
with whitespace; with ``-O``/``--oneline`` the info tokens follow on the state line itself.
A header line (``State ...`` or ``Netid ...``) may be present or not (``-H``).

Info tokens are ``key:value``, ``key value`` (``send``, ``pacing_rate``, ``delivery_rate``),
parenthesised groups (``bbr:(...)``, ``skmem:(...)``, ``timer:(...)``) and bare words
(options, the congestion control name, ``app_limited``). ss prints almost every field only
when it is non-zero or not the default, so **absent means zero/default**: no ``ssthresh``
means initial slow start (ssthresh >= 0xFFFF), no ``reordering`` means 3, no ``rto`` means
the 3 s initial value. Rates come as raw ``2250000bps`` (``-n``, iproute2 >= 5.2) or scaled
``2.25Mbps``/``350kbps``/``1.2Gbps`` -- both are bits per second; BBR gains print as floats
(raw/256).

Units kept as ss prints them: times in ms, ``cwnd``/``ssthresh``/``unacked`` in packets,
bytes in bytes, rates in bits/s (``*_bps``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tcplab.diagnose.source import Evidence, ParseError, Source, iter_lines, parse_bits_rate

__all__ = ["Socket", "parse_ss", "peer_host", "STATES", "CC_NAMES"]

STATES = frozenset(
    [
        "ESTAB",
        "SYN-SENT",
        "SYN-RECV",
        "FIN-WAIT-1",
        "FIN-WAIT-2",
        "TIME-WAIT",
        "UNCONN",
        "CLOSE-WAIT",
        "LAST-ACK",
        "LISTEN",
        "CLOSING",
        "CLOSED",
        "UNKNOWN",
        "NEW-SYN-REC",
    ]
)
NETIDS = frozenset(
    [
        "tcp",
        "tcp6",
        "mptcp",
        "u_str",
        "u_dgr",
        "u_seq",
        "udp",
        "raw",
        "p_raw",
        "p_dgr",
        "nl",
        "v_str",
        "v_dgr",
        "xdp",
        "sctp",
        "dccp",
        "tipc",
    ]
)
CC_NAMES = frozenset(
    [
        "reno",
        "cubic",
        "bbr",
        "bbr2",
        "bbr3",
        "dctcp",
        "dctcp-reno",  # a DCTCP socket without ECN (tcp_dctcp.c: dctcp_reno's name)
        "htcp",
        "vegas",
        "westwood",
        "bic",
        "illinois",
        "hybla",
        "scalable",
        "yeah",
        "lp",
        "veno",
        "nv",
        "cdg",
        "highspeed",
        "prague",
    ]
)
FLAGS = frozenset(["ts", "sack", "ecn", "ecnseen", "fastopen", "usec_ts", "app_limited", "cwnd_limited"])
_INT_KEYS = frozenset(
    [
        "cwnd",
        "ssthresh",
        "mss",
        "pmtu",
        "rcvmss",
        "advmss",
        "bytes_sent",
        "bytes_retrans",
        "bytes_acked",
        "bytes_received",
        "segs_out",
        "segs_in",
        "data_segs_out",
        "data_segs_in",
        "lastsnd",
        "lastrcv",
        "lastack",
        "delivered",
        "delivered_ce",
        "unacked",
        "lost",
        "sacked",
        "dsack_dups",
        "fackets",
        "reordering",
        "reord_seen",
        "rcv_space",
        "rcv_ssthresh",
        "notsent",
        "rcv_ooopack",
        "snd_wnd",
        "rcv_wnd",
        "rehash",
        "backoff",
        "retrans_cur",
        "retrans_total",
    ]
)
_FLOAT_KEYS = frozenset(["rto", "ato", "rtt", "rttvar", "rcv_rtt", "minrtt"])
_RATE_KEYS = ("send", "pacing_rate", "delivery_rate")
_LIMITED = re.compile(r"(\d+(?:\.\d+)?)ms(?:\((\d+(?:\.\d+)?)%\))?\Z")
_NUM = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\Z")


@dataclass
class Socket:
    """One TCP socket as ss printed it (see the module docstring for units)."""

    state: str
    local: str
    peer: str
    recv_q: int
    send_q: int
    cc: str | None = None
    flags: set[str] = field(default_factory=set)
    values: dict[str, float] = field(default_factory=dict)  # cwnd, rtt, bytes_sent, send_bps, ...
    bbr: dict[str, float] = field(default_factory=dict)  # bw_bps, mrtt, pacing_gain, cwnd_gain
    skmem: dict[str, int] = field(default_factory=dict)
    evidence: list[Evidence] = field(default_factory=list)

    @property
    def peer_host(self) -> str:
        return peer_host(self.peer)

    def get(self, key: str, default: float | None = 0.0) -> float | None:
        """A value, with ss's 'absent means zero' rule (``default`` otherwise)."""
        return self.values.get(key, default)

    @property
    def key(self) -> tuple[str, str]:
        return (self.local, self.peer)

    def as_dict(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "local": self.local,
            "peer": self.peer,
            "cc": self.cc,
            "values": dict(self.values),
            "bbr": dict(self.bbr),
        }


def peer_host(addr: str) -> str:
    """``[::ffff:10.0.0.2]:2049`` -> ``10.0.0.2``; ``10.0.0.2%eth0:22`` -> ``10.0.0.2``."""
    host = addr.rsplit(":", 1)[0] if ":" in addr else addr
    host = host.strip("[]")
    if host.startswith("::ffff:") and "." in host:
        host = host[7:]
    return host.split("%", 1)[0]


def _split_group(body: str) -> list[str]:
    return [p for p in body.split(",") if p]


def _apply_tokens(sock: Socket, tokens: list[str], file: str, lineno: int) -> None:
    i = 0
    n = len(tokens)
    while i < n:
        tok = tokens[i]
        i += 1
        if tok in _RATE_KEYS:
            if i >= n:
                raise ParseError(file, lineno, f"ss: {tok!r} without a rate")
            raw = tokens[i]
            i += 1
            main, _, mx = raw.partition("/")
            rate = parse_bits_rate(main)
            if rate is None:
                raise ParseError(file, lineno, f"ss: {tok} {raw[:40]!r} is not a rate such as 2.25Mbps or 2250000bps")
            sock.values[f"{tok}_bps"] = rate
            if mx:
                mrate = parse_bits_rate(mx)
                if mrate is not None:
                    sock.values[f"max_{tok}_bps"] = mrate
            continue
        if tok in FLAGS:
            sock.flags.add(tok)
            continue
        if tok in CC_NAMES:
            sock.cc = tok
            continue
        key, sep, val = tok.partition(":")
        if not sep:
            continue  # a bare word we do not know (new option flags, process text): opaque
        if val.startswith("(") and val.endswith(")"):
            inner = val[1:-1]
            if key in ("bbr", "bbr2", "bbr3"):
                sock.cc = sock.cc or key
                for part in _split_group(inner):
                    k, _, v = part.partition(":")
                    if k in ("bw", "bw_lo", "bw_hi", "inflight_lo", "inflight_hi"):
                        rate = parse_bits_rate(v)
                        if rate is None and _NUM.match(v):
                            rate = float(v)
                        if rate is None:
                            raise ParseError(file, lineno, f"ss: bbr {k}:{v[:40]!r} is not a rate")
                        sock.bbr[f"{k}_bps" if k.startswith("bw") else k] = rate
                    elif _NUM.match(v):
                        sock.bbr[k] = float(v)
            elif key == "skmem":
                for part in _split_group(inner):
                    m = re.match(r"([a-z]+)(\d{1,30})\Z", part)
                    if m:
                        sock.skmem[m.group(1)] = int(m.group(2))
            continue
        if key == "rtt":
            a, _, b = val.partition("/")
            if not _NUM.match(a) or (b and not _NUM.match(b)):
                raise ParseError(file, lineno, f"ss: rtt:{val[:40]!r} is not srtt/rttvar in ms")
            sock.values["rtt"] = float(a)
            if b:
                sock.values["rttvar"] = float(b)
            continue
        if key == "retrans":
            a, _, b = val.partition("/")
            if not _count_text(a) or (b and not _count_text(b)):
                raise ParseError(file, lineno, f"ss: retrans:{val[:40]!r} is not current/total")
            sock.values["retrans_cur"] = int(a)
            if b:
                sock.values["retrans_total"] = int(b)
            continue
        if key in ("busy", "rwnd_limited", "sndbuf_limited"):
            m = _LIMITED.match(val)
            if not m:
                raise ParseError(file, lineno, f"ss: {key}:{val[:40]!r} is not a time such as 120ms(2.3%)")
            sock.values[f"{key}_ms"] = float(m.group(1))
            if m.group(2) is not None:
                sock.values[f"{key}_pct"] = float(m.group(2))
            continue
        if key in _INT_KEYS:
            if not _count_text(val):
                raise ParseError(file, lineno, f"ss: {key}:{val[:40]!r} is not a count")
            sock.values[key] = int(val)
            continue
        if key in _FLOAT_KEYS:
            if not _NUM.match(val):
                raise ParseError(file, lineno, f"ss: {key}:{val[:40]!r} is not a number of ms")
            sock.values[key] = float(val)
            continue
        # wscale:7,7 uid:0 ino:.. sk:.. cgroup:.. users:((..)) and fields of future ss: opaque


def _count_text(text: str) -> bool:
    """ASCII digits of a count (at most 30: a 64-bit counter has 20; int() of more than
    4300 digits fails)."""
    return text.isascii() and text.isdigit() and len(text) <= 30


def _state_line(tokens: list[str], file: str, lineno: int) -> tuple[Socket, list[str]]:
    if tokens[0] in NETIDS:
        tokens = tokens[1:]
    if len(tokens) < 5 or tokens[0] not in STATES:
        raise ParseError(file, lineno, "not an ss socket line (expected State Recv-Q Send-Q Local Peer)")
    if not _count_text(tokens[1]) or not _count_text(tokens[2]):
        raise ParseError(file, lineno, f"ss: Recv-Q/Send-Q {tokens[1][:20]!r} {tokens[2][:20]!r} are not counts")
    sock = Socket(state=tokens[0], recv_q=int(tokens[1]), send_q=int(tokens[2]), local=tokens[3], peer=tokens[4])
    return sock, tokens[5:]


def parse_lines(lines: Iterable[tuple[int, str]], file: str) -> list[Socket]:
    sockets: list[Socket] = []
    current: Socket | None = None
    for lineno, text in lines:
        if not text.strip():
            continue
        tokens = text.split()
        if text[0] in " \t":
            if current is None:
                raise ParseError(file, lineno, "ss: an info line before any socket line")
            current.evidence.append(Evidence(file, lineno, text))
            _apply_tokens(current, tokens, file, lineno)
            continue
        if tokens[0] in ("State", "Netid") and len(tokens) > 2 and "Recv-Q" in tokens:
            continue
        sock, rest = _state_line(tokens, file, lineno)
        sock.evidence.append(Evidence(file, lineno, text))
        _apply_tokens(sock, rest, file, lineno)
        sockets.append(sock)
        current = sock
    return sockets


def parse_ss(src: Source) -> list[Socket]:
    """All sockets in an ``ss -t[inmeo]`` output; raises :class:`ParseError` on anything else."""
    return parse_lines(iter_lines(src), src.name)

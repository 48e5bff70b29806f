"""What an input file is, decided by its content (never by its name).

The model: every tool we read has a recognisable first meaningful line (``NIC statistics:``,
``#kernel``, ``qdisc ``, ``TcpExt:``, ``Ring parameters for``, a ``# HELP`` line...) or, for
JSON, recognisable keys. :func:`sniff` looks at the first 64 kB only, so it is cheap on a
100 MB file; the parser then reads the whole stream and reports the first bad line.

Kinds: ``archive`` (gzip/tar), ``ss``, ``proc_netstat``, ``nstat_text``, ``nstat_json``,
``ethtool_stats``, ``ethtool_rings``, ``ethtool_rings_json``, ``ethtool_driver``,
``tc_text``, ``tc_json``, ``prom``, ``sysctl``, ``procstat``, ``cilium``, ``uname``.
"""

from __future__ import annotations

import re

from tcplab.diagnose.source import ParseError, Source

__all__ = ["sniff", "KINDS"]

KINDS = [
    "archive",
    "ss",
    "proc_netstat",
    "nstat_text",
    "nstat_json",
    "ethtool_stats",
    "ethtool_rings",
    "ethtool_rings_json",
    "ethtool_driver",
    "tc_text",
    "tc_json",
    "prom",
    "sysctl",
    "procstat",
    "cilium",
    "uname",
]

_SS_STATE = re.compile(
    r"(?:(?:tcp6?|mptcp)\s+)?(?:ESTAB|SYN-SENT|SYN-RECV|FIN-WAIT-1|FIN-WAIT-2|TIME-WAIT|CLOSE-WAIT|LAST-ACK|LISTEN|"
    r"CLOSING|UNCONN|CLOSED|UNKNOWN)\s+\d+\s+\d+\s"
)
_PROM = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*(?:\{.*\})?\s+[-+0-9.eEInfNa]+(?:\s+-?\d+)?\s*\Z")
_NSTAT = re.compile(r"[A-Z][A-Za-z0-9]+\s+\d+\s+\d+(?:\.\d+)?\s*\Z")
_PROC = re.compile(r"(?:Ip|IpExt|Icmp|IcmpMsg|Tcp|TcpExt|Udp|UdpLite|MPTcpExt|TcpExtMPTcp):\s")
_SYSCTL = re.compile(r"(?:net|kernel|vm|fs|user|dev|abi|debug|crypto|sunrpc)[./][A-Za-z0-9_./\-]+\s*=")
_RELEASE = re.compile(r"\d+\.\d+(?:\.\d+)?[-+~.\w]*\Z")


def sniff(src: Source) -> str:
    """The kind of ``src``; raises :class:`ParseError` for empty, binary or unrecognised input."""
    head = src.head(65536)
    if head[:2] == b"\x1f\x8b" or (len(head) > 262 and head[257:262] == b"ustar"):
        return "archive"
    if not head.strip():
        raise ParseError(src.name, 1, "empty file")
    if b"\x00" in head:
        raise ParseError(src.name, 1, "binary data (NUL bytes), not the text output of a tool")
    text = head.decode("utf-8", "replace")
    stripped = text.lstrip()
    if not stripped:
        raise ParseError(src.name, 1, "empty file (only whitespace)")
    if stripped[0] in "[{":
        window = stripped[:4096]
        if stripped[0] == "{" and re.search(r'"kernel"\s*:\s*\{', window):
            return "nstat_json"  # nstat -j: {"kernel": {...}}
        if stripped[0] == "[" and re.search(r'"kind"\s*:\s*"', window):
            return "tc_json"  # tc -j qdisc: a list of qdisc objects
        if '"rx-max"' in window or '"rx"' in window:
            return "ethtool_rings_json"
        raise ParseError(src.name, 1, "JSON, but not tc -j, nstat -j or ethtool --json -g output")
    lines = [ln for ln in text.splitlines()[:200] if ln.strip()]
    if len(head) == 65536 and len(lines) > 1:
        lines = lines[:-1]  # the last line may be cut at the window's edge
    if any(ln.startswith("BandwidthManager:") or ln.startswith("Bandwidth Manager:") for ln in lines):
        return "cilium"
    first = lines[0].strip()
    if first.startswith("#kernel"):
        return "nstat_text"
    if first.startswith("# host ") and any(ln.strip().startswith("#kernel") for ln in lines[1:3]):
        return "nstat_text"  # tcplab's counters.txt: a `# host NAME` line before each nstat block
    if first.startswith("# HELP") or first.startswith("# TYPE"):
        return "prom"
    if first.startswith("NIC statistics") or first == "no stats available":
        return "ethtool_stats"  # the second: ethtool -S DEV 2>&1 of a device without statistics
    if first.startswith("Ring parameters for") or first.startswith("Pre-set maximums"):
        return "ethtool_rings"
    if first.startswith("driver:"):
        return "ethtool_driver"
    if lines[0].startswith("qdisc "):
        return "tc_text"
    if _PROC.match(first):
        return "proc_netstat"
    if first.startswith("cpu ") and first[4:].split() and all(p.isdigit() for p in first[4:].split()):
        return "procstat"
    if (first.split()[:1] in (["State"], ["Netid"]) and "Recv-Q" in first) or _SS_STATE.match(first):
        return "ss"
    if _SYSCTL.match(first):
        return "sysctl"
    if _NSTAT.match(first):
        return "nstat_text"
    if _PROM.match(first) and first.startswith("node_"):
        return "prom"
    if len(lines) == 1 and _RELEASE.match(first):
        return "uname"
    raise ParseError(
        src.name,
        1,
        "not a recognised capture (ss -tin, nstat, /proc/net/netstat|snmp, /proc/stat, ethtool -S|-g|-i, "
        "tc -s qdisc, sysctl, uname -r, cilium status, node_exporter text, or a tcplab collect archive)",
    )

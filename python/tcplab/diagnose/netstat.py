"""Kernel SNMP/netstat counters: ``/proc/net/netstat``, ``/proc/net/snmp``, ``nstat`` text and JSON.

The model: the kernel exports named counters in sections (``Tcp``, ``TcpExt``, ``IpExt``,
...). ``/proc/net/{netstat,snmp}`` print each section as two lines starting with the same
``Prefix:`` -- names, then values -- and the list grows every few kernel releases, so names
are **zipped with values by prefix, never indexed by position**, and a count mismatch is an
error (as node_exporter's ``parseNetStats``). ``nstat`` prints ``#kernel`` then one counter
per line (``TcpExtTCPTimeouts  115  0.0``: name = prefix + field, absolute value with
``-a``, then a rate); ``nstat -j`` prints ``{"kernel": {name: value}}``.

All three become one :class:`Counters`: nstat names (``TcpExtTCPTimeouts``,
``TcpCurrEstab``) to values, each with the line it came from. ``TcpCurrEstab`` is a gauge;
everything else is a cumulative counter. ``Tcp: MaxConn`` is signed (``-1``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tcplab.diagnose.source import Evidence, ParseError, Source, iter_lines, load_json

__all__ = ["Counters", "parse_proc_netstat", "parse_nstat_text", "parse_nstat_json", "GAUGES"]

GAUGES = frozenset({"TcpCurrEstab", "TcpMaxConn", "TcpRtoMin", "TcpRtoMax", "TcpRtoAlgorithm", "IpForwarding"})
_PREFIX = re.compile(r"([A-Za-z][A-Za-z0-9]*):(.*)\Z")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
_VALUE = re.compile(r"-?\d{1,30}\Z")  # a 64-bit counter has 20 digits; more is not a counter


@dataclass
class Counters:
    """Counter name (nstat spelling) -> value, and the input line of each."""

    values: dict[str, float] = field(default_factory=dict)
    evidence: dict[str, Evidence] = field(default_factory=dict)
    #: Names this source would carry if the kernel had them; None = every kernel counter
    #: (proc files and nstat -az); node_exporter gives the subset its filter keeps.
    collected: set[str] | None = None
    kind: str = "proc"
    #: The host section this came from (tcplab's per-host counters.txt), else None.
    host: str | None = None
    #: The host sections summed into these values (several data senders of a fan-in).
    hosts: list[str] = field(default_factory=list)
    #: What the reader should know about the choice of section, for the report's notes.
    note: str | None = None

    def has(self, name: str) -> bool:
        return name in self.values

    def merge(self, other: Counters) -> None:
        self.values.update(other.values)
        self.evidence.update(other.evidence)
        if other.collected is not None:
            self.collected = (self.collected or set()) | other.collected


def parse_proc_netstat(src: Source) -> Counters:
    """``/proc/net/netstat`` or ``/proc/net/snmp`` (or both concatenated)."""
    out = Counters(kind="proc")
    pending: tuple[str, list[str], int] | None = None
    for lineno, text in iter_lines(src):
        if not text.strip():
            continue
        m = _PREFIX.match(text)
        if not m:
            raise ParseError(src.name, lineno, "not a /proc/net/netstat or snmp line (expected 'Prefix: ...')")
        prefix, rest = m.group(1), m.group(2).split()
        if pending is None or pending[0] != prefix:
            if pending is not None:
                raise ParseError(src.name, pending[2], f"{pending[0]}: a header line without its value line")
            bad = [n for n in rest if not _NAME.match(n)]
            if bad:
                raise ParseError(src.name, lineno, f"{prefix}: {bad[0][:40]!r} is not a counter name")
            pending = (prefix, rest, lineno)
            continue
        names = pending[1]
        if len(names) != len(rest):
            raise ParseError(
                src.name, lineno, f"{prefix}: {len(rest)} values for {len(names)} names (line {pending[2]})"
            )
        for name, value in zip(names, rest, strict=True):
            if not _VALUE.match(value):
                raise ParseError(src.name, lineno, f"{prefix}{name}: {value[:40]!r} is not an integer")
            key = prefix + name
            out.values[key] = int(value)
            out.evidence[key] = Evidence(src.name, lineno, f"{prefix}: {name} {value} (header line {pending[2]})")
        pending = None
    if pending is not None:
        raise ParseError(src.name, pending[2], f"{pending[0]}: a header line without its value line (truncated?)")
    return out


def parse_nstat_text(src: Source) -> Counters:
    """``nstat -a[z]`` text: ``#kernel`` then ``Name value rate`` lines.

    tcplab's own ``counters.txt`` (:mod:`tcplab.counters`) has one such block per simulated
    host, each after a ``# host NAME`` line. The diagnoser reads one host at a time, so it
    takes the data senders (hosts that sent more segments than they received), whose
    retransmissions and timeouts the rules look at: one sender's section as it is, several
    senders (a fan-in) summed; without any, the section with the most ``TcpOutSegs`` (the
    first on a tie). It says which in :attr:`Counters.note`.
    """
    sections: dict[str, Counters] = {}
    current = Counters(kind="nstat")
    name: str | None = None
    for lineno, text in iter_lines(src):
        t = text.strip()
        if t.startswith("# host "):
            name = t[len("# host ") :].strip() or "?"
            current = sections.setdefault(name, Counters(kind="nstat"))
            continue
        if not t or t.startswith("#"):
            continue
        parts = t.split()
        if len(parts) not in (2, 3) or not _NAME.match(parts[0]) or not _VALUE.match(parts[1]):
            raise ParseError(src.name, lineno, "not an nstat line (expected 'Name value [rate]')")
        current.values[parts[0]] = int(parts[1])
        current.evidence[parts[0]] = Evidence(src.name, lineno, text)
    if not sections:
        return current
    names = list(sections)
    # a data sender transmits more segments than it receives (its peer ACKs at most every
    # other segment, fewer with GRO); a receiver of a fan-in sends more segments in all than
    # any one sender, so "the most TcpOutSegs" would pick it. Read every sender together.
    senders = [
        n
        for n in names
        if "TcpInSegs" in sections[n].values
        and sections[n].values.get("TcpOutSegs", 0) > sections[n].values["TcpInSegs"]
    ]
    if len(senders) > 1:
        out = Counters(kind="nstat")
        largest: dict[str, float] = {}
        for n in senders:
            for key, value in sections[n].values.items():
                out.values[key] = out.values.get(key, 0) + value
                if key not in largest or value > largest[key]:  # evidence: the sender with the most
                    largest[key] = value
                    out.evidence[key] = sections[n].evidence[key]
        others = [n for n in names if n not in senders]
        out.note = (
            f"{src.name}: counters of {len(names)} hosts; diagnosing the {len(senders)} data senders together "
            f"(more TcpOutSegs than TcpInSegs: {', '.join(senders)}; counters summed)"
            + (f", not {', '.join(others)}" if others else "")
        )
        out.host = "+".join(senders)
        out.hosts = senders
        return out
    pool = senders or names
    chosen = max(pool, key=lambda n: (sections[n].values.get("TcpOutSegs", 0), -names.index(n)))
    out = sections[chosen]
    if len(names) > 1:
        others = ", ".join(n for n in names if n != chosen)
        out.note = (
            f"{src.name}: counters of {len(names)} hosts; diagnosing host '{chosen}' (the most TcpOutSegs: the data "
            f"sender), not {others}"
        )
    out.host = chosen
    out.hosts = [chosen]
    return out


def parse_nstat_json(src: Source) -> Counters:
    """``nstat -j``: ``{"kernel": {"TcpExtTCPTimeouts": 115, ...}}``."""
    doc = load_json(src)
    if not isinstance(doc, dict) or not isinstance(doc.get("kernel"), dict):
        raise ParseError(src.name, 1, 'nstat JSON without a "kernel" object')
    out = Counters(kind="nstat")
    for name, value in doc["kernel"].items():
        if not isinstance(name, str) or isinstance(value, bool) or not isinstance(value, int | float):
            raise ParseError(src.name, 1, f"nstat JSON: {str(name)[:40]!r} has a value that is not a number")
        out.values[name] = value
        out.evidence[name] = Evidence(src.name, 1, f'"{name}": {value}')
    return out

"""SNMP/MIB counters in the text form ``nstat`` prints, so simulated and real hosts diff.

The model: each host has one set of counters named as ``nstat`` names them (prefix + field:
``TcpRetransSegs``, ``TcpExtTCPTimeouts``), the sum over its sockets. ``nstat -a`` prints a
``#kernel`` line and then one ``%-32s%-16llu%6.1f`` line per counter: name, absolute value,
and a rate (here: value / simulated duration in seconds). tcplab writes one such block per
host, each preceded by a ``# host NAME`` comment line::

    # host server
    #kernel
    TcpOutSegs                      43116              718.6
    TcpRetransSegs                  431                  7.2

Real ``nstat -az`` output (a single ``#kernel`` block, no ``# host`` line) parses too; its
counters are attributed to the host name ``kernel``.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["format_nstat", "parse_nstat"]


def format_nstat(hosts: Mapping[str, Mapping[str, int]], duration_s: float) -> str:
    """``{host: {counter: value}}`` as nstat text, one ``#kernel`` block per host."""
    lines = []
    for host, counters in hosts.items():
        lines.append(f"# host {host}")
        lines.append("#kernel")
        for name, value in counters.items():
            rate = value / duration_s if duration_s > 0 else 0.0
            lines.append("%-32s%-16d%6.1f" % (name, int(value), rate))
    return "\n".join(lines) + "\n"


def parse_nstat(text: str) -> dict[str, dict[str, int]]:
    """Parse nstat text (tcplab's per-host form or plain ``nstat -a``) into counters."""
    out: dict[str, dict[str, int]] = {}
    host = "kernel"
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("# host "):
            host = stripped[len("# host ") :].strip()
            out.setdefault(host, {})
            continue
        if stripped.startswith("#"):
            continue
        fields = stripped.split()
        if len(fields) < 2:
            raise ValueError(f"line {number}: expected 'NAME VALUE [RATE]', got {line!r}")
        try:
            value = int(fields[1])
        except ValueError:
            raise ValueError(f"line {number}: {fields[1]!r} is not an integer counter value") from None
        out.setdefault(host, {})[fields[0]] = value
    return out

"""Kernel settings: ``sysctl`` output (``name = value``) and ``uname -r``.

The model: a sysctl file is lines ``net.ipv4.tcp_congestion_control = bbr`` (``sysctl -a``
or ``sysctl NAME...``; ``sysctl -n`` alone loses the names and cannot be used). Values are
kept as text; :func:`triple` reads ``tcp_rmem``-style ``min default max`` lines. Names may be
written with ``/`` (``net/ipv4/tcp_rmem``) as in ``/proc/sys``; they are normalised to dots.

The kernel release (``uname -r``, e.g. ``6.1.0-18-amd64``) decides some advice: before
4.13 BBR needed the ``fq`` qdisc for pacing; since then TCP paces internally when fq is absent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tcplab.diagnose.source import Evidence, ParseError, Source, iter_lines

__all__ = ["Sysctls", "parse_sysctl", "parse_uname", "Kernel", "RELEVANT"]

RELEVANT = (
    "net.ipv4.tcp_congestion_control",
    "net.core.default_qdisc",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.core.rmem_max",
    "net.core.wmem_max",
    "net.ipv4.tcp_slow_start_after_idle",
    "net.ipv4.tcp_mtu_probing",
    "net.ipv4.tcp_available_congestion_control",
)
_LINE = re.compile(r"([A-Za-z0-9_.\-/]+)\s*=\s*(.*)\Z")
_RELEASE = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?([-+~.\w]*)\Z")


@dataclass
class Sysctls:
    values: dict[str, str] = field(default_factory=dict)
    evidence: dict[str, Evidence] = field(default_factory=dict)

    def get(self, name: str) -> str | None:
        return self.values.get(name)

    def triple(self, name: str) -> tuple[int, int, int] | None:
        v = self.values.get(name)
        if v is None:
            return None
        parts = v.split()
        if len(parts) != 3 or not all(p.isascii() and p.isdigit() and len(p) <= 30 for p in parts):
            return None
        return int(parts[0]), int(parts[1]), int(parts[2])

    def integer(self, name: str) -> int | None:
        v = self.values.get(name)
        digits = v.strip().lstrip("-") if v is not None else ""
        return int(v) if digits.isascii() and digits.isdigit() and len(digits) <= 30 else None


@dataclass
class Kernel:
    release: str
    version: tuple[int, int]
    evidence: Evidence


def parse_sysctl(src: Source) -> Sysctls:
    out = Sysctls()
    for lineno, text in iter_lines(src):
        t = text.strip()
        if not t or t.startswith("#"):
            continue
        if t.startswith("sysctl: "):  # "sysctl: permission denied on key ..." -- recorded, not fatal
            continue
        m = _LINE.match(t)
        if not m:
            raise ParseError(src.name, lineno, "not a sysctl line (expected 'name = value')")
        name = m.group(1).replace("/", ".")
        out.values[name] = " ".join(m.group(2).split())
        out.evidence[name] = Evidence(src.name, lineno, text)
    return out


def parse_uname(src: Source) -> Kernel:
    for lineno, text in iter_lines(src):
        t = text.strip()
        if not t:
            continue
        m = _RELEASE.match(t)
        if not m:
            raise ParseError(src.name, lineno, "not a kernel release (expected uname -r output such as 6.1.0-18-amd64)")
        return Kernel(t, (int(m.group(1)), int(m.group(2))), Evidence(src.name, lineno, text))
    raise ParseError(src.name, 1, "empty uname -r output")

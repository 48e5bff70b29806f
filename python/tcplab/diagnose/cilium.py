"""``cilium status`` (or ``cilium-dbg status``): the Bandwidth Manager line and its neighbours.

The model (cilium ``pkg/client/client.go``, ``FormatStatusResponse``, through a tabwriter,
so spacing varies): ``Label:<spaces>value`` lines. tcplab reads

* ``BandwidthManager: EDT with BPF [BBR] [eth0]`` (CC in the first bracket since Cilium 1.12;
  older releases print only the devices; ``Disabled`` when off);
* ``Routing: Network: Tunnel [vxlan]  Host: BPF`` (host routing BPF or Legacy);
* the ``Cilium:`` line's version (``Ok 1.15.1 (v1.15.1-...)``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tcplab.diagnose.source import Evidence, ParseError, Source, iter_lines

__all__ = ["CiliumStatus", "parse_cilium"]


@dataclass
class CiliumStatus:
    bandwidth_manager: bool = False
    bm_cc: str | None = None
    bm_devices: tuple[str, ...] = ()
    host_routing: str | None = None
    version: str | None = None
    evidence: Evidence | None = None


def parse_cilium(src: Source) -> CiliumStatus:
    out = CiliumStatus()
    seen = False
    for lineno, text in iter_lines(src):
        label, sep, value = text.strip().partition(":")
        if not sep:
            continue
        label = label.strip().replace(" ", "")
        value = value.strip()
        if label == "BandwidthManager":
            seen = True
            out.evidence = Evidence(src.name, lineno, text)
            if value.lower().startswith("disabled"):
                continue
            out.bandwidth_manager = True
            brackets = re.findall(r"\[([^\]]*)\]", value)
            if len(brackets) >= 2:
                out.bm_cc = brackets[0].strip().lower() or None
                out.bm_devices = tuple(d.strip() for d in brackets[1].split(",") if d.strip())
            elif len(brackets) == 1:
                inner = brackets[0].strip()
                if inner.upper() in ("BBR", "CUBIC"):
                    out.bm_cc = inner.lower()
                else:
                    out.bm_devices = tuple(d.strip() for d in inner.split(",") if d.strip())
        elif label == "Routing":
            m = re.search(r"Host:\s*(\w+)", value)
            out.host_routing = m.group(1) if m else None
        elif label == "Cilium":
            m = re.search(r"(\d+\.\d+\.\d+\S*)", value)
            out.version = m.group(1) if m else None
    if not seen:
        raise ParseError(src.name, 1, "cilium status output without a 'BandwidthManager:' line")
    return out

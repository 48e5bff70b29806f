"""Prometheus node_exporter text scrapes (``curl -s host:9100/metrics``).

The model: a scrape is samples ``name{label="v"} value`` with ``# HELP``/``# TYPE`` lines,
parsed by ``prometheus_client.parser`` (the reference parser); a wrapper around its line
iterator keeps each sample's line number for evidence and names the line of a syntax error.

What node_exporter exports, and how tcplab reads it back into the kernel's vocabulary:

* ``node_netstat_<Prefix>_<Field>`` -> the nstat name ``<Prefix><Field>``. All are
  ``untyped``; ``Tcp_CurrEstab`` is a gauge, the rest counters. node_exporter's default
  ``--collector.netstat.fields`` keeps only a few TCP counters (``TCPTimeouts``,
  ``TCPSynRetrans``, ``TCPOFOQueue``, ``TCPRcvQDrop``, ``Listen*``, ``Syncookies*``; ``Tcp_*``
  segments and ``CurrEstab``): **a counter missing from a scrape is "not collected", never
  zero** -- :attr:`PromScrape.netstat_collected` lists what was there.
* ``node_ethtool_<name>{device=}`` (collector off by default) with ``rx``->``received``,
  ``tx``->``transmitted`` and non-alphanumerics -> ``_``: mapped back to the driver's name
  (``received_out_of_buffer`` -> ``rx_out_of_buffer``, ``port_received_dropped`` ->
  ``port.rx_dropped``).
* ``node_qdisc_{bytes,packets,drops,overlimits,requeues}_total{device,kind}`` (off by default).
* ``node_cpu_seconds_total{cpu,mode}``: CPU time per mode, ``steal`` included.
* ``node_time_seconds``: the scrape's wall-clock time, so two scrapes give rates.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field

from tcplab.diagnose.source import Evidence, ParseError, Source, iter_lines

__all__ = ["PromScrape", "parse_prom", "ethtool_name_from_prom"]


@dataclass
class PromScrape:
    file: str
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], float] = field(default_factory=dict)
    evidence: dict[tuple[str, tuple[tuple[str, str], ...]], Evidence] = field(default_factory=dict)

    def get(self, name: str, **labels: str) -> float | None:
        return self.samples.get((name, tuple(sorted(labels.items()))))

    def series(self, name: str) -> list[tuple[dict[str, str], float, Evidence]]:
        return [(dict(lbl), v, self.evidence[(n, lbl)]) for (n, lbl), v in self.samples.items() if n == name]

    def names_with_prefix(self, prefix: str) -> set[str]:
        return {n for (n, _lbl) in self.samples if n.startswith(prefix)}

    @property
    def time(self) -> float | None:
        return self.get("node_time_seconds")


def ethtool_name_from_prom(metric: str) -> str:
    """``node_ethtool_received_out_of_buffer`` -> ``rx_out_of_buffer`` (node_exporter's renaming undone)."""
    name = metric.removeprefix("node_ethtool_")
    parts = ["rx" if p == "received" else "tx" if p == "transmitted" else p for p in name.split("_")]
    out = "_".join(parts)
    if out.startswith("port_"):
        out = "port." + out[5:]
    return out


#: node_exporter's families of kernel counters (/proc/net/netstat, /proc/net/snmp, ethtool -S,
#: /proc/net/dev): each sample is a finite count.
_COUNTER_PREFIXES = ("node_netstat_", "node_network_", "node_ethtool_")


class _Lines:
    """Feeds prometheus_client line by line, remembering where each sample came from."""

    def __init__(self, src: Source):
        self.src = src
        self.lineno = 0
        self.where: dict[str, list[tuple[int, str]]] = {}

    def __iter__(self) -> Iterator[str]:
        for lineno, text in iter_lines(self.src):
            self.lineno = lineno
            t = text.strip()
            if t and not t.startswith("#"):
                self.where.setdefault(t.split("{", 1)[0].split(" ", 1)[0], []).append((lineno, text))
            yield text + "\n"


def parse_prom(src: Source) -> PromScrape:
    from prometheus_client.parser import text_fd_to_metric_families

    lines = _Lines(src)
    out = PromScrape(file=src.name)
    try:
        for family in text_fd_to_metric_families(iter(lines)):
            for s in family.samples:
                key = (s.name, tuple(sorted((str(k), str(v)) for k, v in s.labels.items())))
                value = float(s.value)
                if not math.isfinite(value) and s.name.startswith(_COUNTER_PREFIXES):
                    # a counter of the kernel is a finite number (a u64; 1e5000 reads as inf)
                    line = lines.where.get(s.name, [(lines.lineno, "")])[-1][0]
                    raise ParseError(src.name, line, f"{s.name}: {value} is not a counter value (a finite number)")
                out.samples[key] = value
    except ParseError:
        raise
    except Exception as e:  # noqa: BLE001 - the reference parser raises ValueError, IndexError, ...
        raise ParseError(src.name, lines.lineno, f"not Prometheus text exposition ({type(e).__name__}: {e})") from None
    if not out.samples:
        raise ParseError(src.name, lines.lineno, "a Prometheus scrape without samples")
    # evidence: match each sample to its line (same name and label text)
    for (name, lbl), _v in out.samples.items():
        cands = lines.where.get(name, [])
        hit = cands[0] if len(cands) == 1 else None
        if hit is None:
            for lineno, text in cands:
                if all(f'{k}="{v}"' in text for k, v in lbl):
                    hit = (lineno, text)
                    break
        if hit is None:
            hit = (0, f"{name}{dict(lbl) if lbl else ''}")
        out.evidence[(name, lbl)] = Evidence(src.name, hit[0], hit[1])
    return out

"""NIC counters and rings: ``ethtool -S DEV``, ``ethtool -g DEV`` (text or ``--json``), ``ethtool -i DEV``.

The model: each driver names its drop counters its own way; tcplab maps them onto five
concepts (the alias table :data:`ALIASES`, from the drivers' ``*_ethtool.c`` string tables):

``rx_ring_overflow``
    the receive ring had no free descriptor: the host did not refill it fast enough
    (softirq/CPU starved, or a burst longer than the ring). mlx5 ``rx_out_of_buffer``,
    ixgbe/e1000e/igb ``rx_no_buffer_count``, r8152 ``rx_missed``, virtio ``rx_queue_N_drops``
    (and their sum ``rx_drops``), ENA's ``rx_drops``, and ixgbe/i40e/e1000e
    ``rx_missed_errors`` (the MPC register: the on-chip packet buffer overflowed because the
    ring had no free descriptor to DMA into; an Intel NIC's packet buffer only backs up when
    the host does not refill the ring, so this is the ring's overflow as the driver sees it,
    and it is the name tcplab's engine writes for an ixgbe ring, crates/tcplab-core/src/host/nic.rs).
``rx_fifo_overflow``
    the netdev's generic ``rx_fifo_errors`` (drivers fold different causes into it).
``port_buffer_drop``
    dropped at the port for lack of port buffer (incast): mlx5 ``rx_discards_phy``,
    ``rx_prioN_discards``, ``dev_out_of_buffer``; i40e ``port.rx_dropped`` (old name) and
    ``port.rx_discards`` (new name).
``cloud_bw_policer`` / ``cloud_pps_policer``
    AWS ENA allowances: packets queued or dropped because the instance exceeded its bandwidth
    or packet-rate allowance (``bw_in_allowance_exceeded``, ``bw_out_allowance_exceeded``,
    ``pps_allowance_exceeded``).

Unknown names are kept as opaque counters. ``ethtool -S`` text is ``NIC statistics:`` then
``     name: value``; names may contain dots, brackets and spaces, so the split is on the
*last* ``": "``. ``ethtool -g`` text has a "Pre-set maximums" and a "Current hardware
settings" section of ``Label:\\tvalue`` lines (``n/a`` allowed); ``ethtool --json -g`` gives
``rx-max``/``rx`` keys. ``ethtool -S`` does not name its device: the device comes from the
collect manifest, the file name, or ``-g``/``-i`` output collected next to it.

A device whose driver exports no statistics (the loopback device, most virtual ones) makes
``ethtool -S`` print ``no stats available`` on stderr and exit non-zero (ethtool 6.1 on
``lo``: status 94; tests/data/real-tools/ethtool-S-lo.txt): that output, saved with
``2>&1``, reads as a device without NIC statistics (:data:`NO_STATS`), not as a bad input.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tcplab.diagnose.source import Evidence, ParseError, Source, iter_lines, load_json

__all__ = [
    "NicStats",
    "Rings",
    "DriverInfo",
    "ALIASES",
    "CONCEPTS",
    "concept_of",
    "parse_ethtool_stats",
    "parse_ethtool_rings",
    "parse_ethtool_rings_json",
    "parse_ethtool_driver",
    "NO_STATS",
]

#: What ethtool prints (on stderr) for a device without statistics (ethtool.c: do_gnicstats()).
NO_STATS = "no stats available"

CONCEPTS = ("rx_ring_overflow", "rx_fifo_overflow", "port_buffer_drop", "cloud_bw_policer", "cloud_pps_policer")

#: exact counter name -> (concept, drivers that print it)
ALIASES: dict[str, tuple[str, str]] = {
    "rx_out_of_buffer": ("rx_ring_overflow", "mlx5"),
    "rx_no_buffer_count": ("rx_ring_overflow", "ixgbe, e1000e, igb"),
    "rx_missed": ("rx_ring_overflow", "r8152"),
    "alloc_rx_buff_failed": ("rx_ring_overflow", "e1000e"),
    "rx_drops": ("rx_ring_overflow", "virtio_net (sum over queues), ena (ena_stats_global_strings)"),
    # MPC: the packet buffer overflowed because the ring had no descriptor (module docs)
    "rx_missed_errors": ("rx_ring_overflow", "ixgbe, i40e, e1000e"),
    "rx_fifo_errors": ("rx_fifo_overflow", "netdev stats"),
    "rx_discards_phy": ("port_buffer_drop", "mlx5"),
    "dev_out_of_buffer": ("port_buffer_drop", "mlx5"),
    "rx_buffer_full": ("port_buffer_drop", "mlx5"),
    "port.rx_dropped": ("port_buffer_drop", "i40e (old name)"),
    "port.rx_discards": ("port_buffer_drop", "i40e (new name)"),
    "bw_in_allowance_exceeded": ("cloud_bw_policer", "ena"),
    "bw_out_allowance_exceeded": ("cloud_bw_policer", "ena"),
    "pps_allowance_exceeded": ("cloud_pps_policer", "ena"),
}
#: pattern aliases (per-queue or per-priority counters)
PATTERNS: list[tuple[re.Pattern[str], str, str]] = [
    (re.compile(r"rx_prio\d+_discards\Z"), "port_buffer_drop", "mlx5"),
    (re.compile(r"rx_queue_\d+_drops\Z"), "rx_ring_overflow", "virtio_net"),
]


def concept_of(name: str) -> tuple[str, str] | None:
    """(concept, drivers) for a counter name, or None when it is opaque."""
    hit = ALIASES.get(name)
    if hit:
        return hit
    for pat, concept, drivers in PATTERNS:
        if pat.match(name):
            return concept, drivers
    return None


def _guess_driver(names: set[str]) -> str | None:
    if "bw_in_allowance_exceeded" in names or "pps_allowance_exceeded" in names:
        return "ena"
    if "rx_out_of_buffer" in names or "rx_discards_phy" in names:
        return "mlx5"
    if any(n.startswith("port.") for n in names):
        return "i40e"
    if "rx_queue_0_kicks" in names or "rx_queue_0_xdp_drops" in names or "rx_xdp_redirects" in names:
        return "virtio_net"
    if {"tx_single_collisions", "rx_missed", "align_errors"} <= names:
        return "r8152"
    if "rx_no_buffer_count" in names and "fdir_match" in names:
        return "ixgbe"
    if "rx_no_buffer_count" in names:
        return "e1000e"
    return None


@dataclass
class NicStats:
    device: str | None
    values: dict[str, float] = field(default_factory=dict)
    evidence: dict[str, Evidence] = field(default_factory=dict)
    driver: str | None = None  # from ethtool -i, else guessed from the names
    #: For the report's notes: the device has no statistics at all (:data:`NO_STATS`).
    note: str | None = None

    def concepts(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for name in self.values:
            c = concept_of(name)
            if c:
                out.setdefault(c[0], []).append(name)
        return out


@dataclass
class Rings:
    device: str | None
    rx: int | None = None
    rx_max: int | None = None
    tx: int | None = None
    tx_max: int | None = None
    evidence: list[Evidence] = field(default_factory=list)


@dataclass
class DriverInfo:
    driver: str
    evidence: Evidence


def parse_ethtool_stats(src: Source, device: str | None = None) -> NicStats:
    out = NicStats(device=device)
    seen_header = False
    for lineno, text in iter_lines(src):
        t = text.strip()
        if not t:
            continue
        if t.startswith("NIC statistics") or t.startswith("# ethtool") or t.startswith("$ ethtool"):
            seen_header = seen_header or t.startswith("NIC statistics")
            continue
        if t == NO_STATS and not out.values:
            dev = f"device {device}" if device and device != "?" else "the device"
            out.note = f"{src.name}: no NIC statistics ({dev} exports none: ethtool -S printed '{NO_STATS}')"
            seen_header = True
            continue
        name, sep, value = t.rpartition(": ")
        if not sep and t.endswith(":"):
            raise ParseError(src.name, lineno, f"ethtool -S: {t[:40]!r} has no value")
        if not sep:
            name, sep, value = t.rpartition(":")
        if not sep or not name:
            raise ParseError(src.name, lineno, "not an ethtool -S line (expected 'name: value')")
        value = value.strip()
        if not re.fullmatch(r"-?\d+", value) or len(value) > 30:
            raise ParseError(src.name, lineno, f"ethtool -S: {name[:40]}: {value[:40]!r} is not a count")
        out.values[name] = int(value)
        out.evidence[name] = Evidence(src.name, lineno, text)
    if not seen_header and not out.values:
        raise ParseError(src.name, 1, "empty ethtool -S output")
    out.driver = _guess_driver(set(out.values))
    return out


_RING_LABELS = {"RX": "rx", "TX": "tx"}


def parse_ethtool_rings(src: Source) -> Rings:
    """``ethtool -g DEV`` text."""
    out = Rings(device=None)
    section: str | None = None
    for lineno, text in iter_lines(src):
        t = text.strip()
        if not t:
            continue
        m = re.match(r"Ring parameters for (\S+?):?\Z", t)
        if m:
            out.device = m.group(1)
            continue
        low = t.lower()
        if low.startswith("pre-set maximums"):
            section = "max"
            continue
        if low.startswith("current hardware settings"):
            section = "cur"
            continue
        label, sep, value = t.partition(":")
        if not sep:
            raise ParseError(src.name, lineno, "not an ethtool -g line (expected 'Label: value')")
        key = _RING_LABELS.get(label.strip())
        if key is None:
            continue  # RX Mini, RX Jumbo, RX Buf Len, CQE Size, TX Push, ... and future lines
        value = value.strip()
        if value == "n/a":
            continue
        if not value.isdigit() or len(value) > 12:
            raise ParseError(src.name, lineno, f"ethtool -g: {label.strip()}: {value[:40]!r} is not a ring size")
        if section is None:
            raise ParseError(src.name, lineno, "ethtool -g: a ring size before 'Pre-set maximums' or 'Current'")
        setattr(out, f"{key}_max" if section == "max" else key, int(value))
        out.evidence.append(Evidence(src.name, lineno, ("max " if section == "max" else "current ") + t))
    if out.rx is None and out.rx_max is None:
        raise ParseError(src.name, 1, "ethtool -g output without RX ring sizes (truncated?)")
    return out


def parse_ethtool_rings_json(src: Source) -> Rings:
    """``ethtool --json -g DEV``: ``[{"ifname": "eth0", "rx-max": 4096, "rx": 1024, ...}]``."""
    doc = load_json(src)
    if isinstance(doc, list) and doc:
        doc = doc[0]
    if not isinstance(doc, dict) or not ("rx" in doc or "rx-max" in doc):
        raise ParseError(src.name, 1, 'ethtool --json -g output without "rx"/"rx-max"')
    out = Rings(device=str(doc.get("ifname")) if doc.get("ifname") else None)
    for key, attr in (("rx", "rx"), ("rx-max", "rx_max"), ("tx", "tx"), ("tx-max", "tx_max")):
        v = doc.get(key)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int):
            raise ParseError(src.name, 1, f"ethtool --json -g: {key} {str(v)[:40]!r} is not a ring size")
        setattr(out, attr, v)
        out.evidence.append(Evidence(src.name, 1, f'"{key}": {v}'))
    return out


def parse_ethtool_driver(src: Source) -> DriverInfo:
    """``ethtool -i DEV``: the ``driver:`` line."""
    for lineno, text in iter_lines(src):
        if text.startswith("driver:"):
            return DriverInfo(text.split(":", 1)[1].strip(), Evidence(src.name, lineno, text))
    raise ParseError(src.name, 1, "ethtool -i output without a 'driver:' line")

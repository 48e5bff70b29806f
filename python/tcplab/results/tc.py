"""Qdisc statistics as ``tc -s qdisc show`` prints them, one text per node.

The model: every one-way link's egress has a qdisc; a node's links are its devices. tcplab
names them as a host names its interfaces, ``eth0``, ``eth1``, ... in the order the node's
outgoing links appear in the scenario (``summary.json`` records the mapping in each link's
``node`` and ``dev``). ``tc-qdisc-NODE.txt`` in the run directory holds what ``tc -s qdisc
show`` would print on that node after ``tc qdisc replace dev ethN root handle 1: KIND ...``, one record per qdisc,
exactly in iproute2's format (``tc/tc_qdisc.c: print_qdisc()``, ``tc/tc_util.c:
print_tcstats2_attr()``, the kinds' ``print_opt``/``print_xstats`` in ``tc/q_fifo.c``,
``q_tbf.c``, ``q_fq.c``, ``q_fq_codel.c``; sizes, rates and times as ``lib/json_print_math.c:
sprint_size()``, ``lib/json_print.c: print_color_rate()`` and ``lib/utils.c: sprint_time()``
/ ``sprint_time64()`` format them), trailing spaces included (the head and ``Sent`` lines end
with one, not shown here)::

    qdisc tbf 1: dev eth0 root refcnt 2 rate 10Mbit burst 5000b lat 50ms
     Sent 1514000 bytes 1000 pkt (dropped 3, overlimits 812 requeues 0)
     backlog 0b 0p requeues 0

Choices where Linux leaves one open:

* Root qdiscs have handle ``1:`` and ``refcnt 2`` (a single-queue device: the device and its
  queue hold it). tbf's inner qdisc hangs under class ``1:1``. The kernel's default child (a
  bfifo of tbf's ``limit``, ``sch_tbf.c: tbf_change()`` -> ``fifo_create_dflt()``) has handle
  ``0:`` and is *invisible* (``qdisc_hash_add(child, true)``): ``tc -s qdisc show`` omits it,
  as the file does; ``tc -s qdisc show invisible`` prints it (:func:`format_node` with
  ``invisible=True``)::

    qdisc bfifo 0: dev eth0 parent 1:1 limit 67500b
     Sent 1514000 bytes 1000 pkt (dropped 3, overlimits 0 requeues 0)
     backlog 0b 0p requeues 0

  Its drops are the tbf's own again (``tbf_enqueue()`` counts a child's refusal), so the
  default listing's drops add up once, as on a real host (tests/data/real-tools has both
  listings of a real tbf). A child the scenario configures (handle ``10:``) is visible, as one
  added with ``tc qdisc add ... parent 1:1`` is.
* Options are printed as Linux v6.12 dumps them with the scenario's values: fq prints its
  ``bands 3 priomap ... weights ...`` defaults (``sch_fq.c``, since v6.7) and
  ``orphan_mask 1023 timer_slack 10us``, which tcplab does not model; no rate estimator
  line (the kernel dumps one only for a qdisc created with ``est``).
* fq's ``flows``/``inactive``/``throttled`` gauges, ``latency`` and fq_codel's ``maxpacket``,
  ``new_flows_len``/``old_flows_len`` come from the engine's xstats when it reports them;
  an xstat the engine does not report prints as 0 (tc prints these unconditionally).
* ECN: fq prints ``ce_threshold T`` (after ``refill_delay``) when one is set and its
  ``ce_mark`` count when non-zero; fq_codel prints ``ecn`` when marking is on (its default:
  fq_codel_init() sets ``cparams.ecn``; ``noecn`` prints nothing), ``ce_threshold T``
  (after ``target``) when set, ``ecn_mark`` always and ``ce_mark`` when non-zero. fq_codel's
  times are what the kernel dumps: it keeps them in CoDel's 1024-ns ticks (``(us * 1000) >>
  10``) and dumps ``codel_time_to_us()`` of that, so a ``ce_threshold`` of 1ms prints as
  ``999us`` (:func:`codel_dump_us`).

Formatting is kept apart from collecting (:func:`format_qdisc` takes plain numbers) so
tests can compare lines with what the iproute2 print code gives for the same numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "format_qdisc",
    "format_node",
    "link_devices",
    "sprint_size",
    "sprint_rate",
    "sprint_time_us",
    "sprint_time64_ns",
    "codel_dump_us",
    "STAT_KEYS",
]

#: Keys of the common statistics (``struct gnet_stats_basic`` + ``gnet_stats_queue``),
#: as the engine names them in ``links[i]`` and ``links[i]["child"]``.
STAT_KEYS = ("sent_bytes", "sent_packets", "drops", "overlimits", "requeues", "backlog_bytes", "backlog_packets")

# Linux v6.12 include/net/pkt_sched.h: PSCHED_SHIFT 6 (a psched tick is 64 ns); iproute2
# tc/tc_core.c: tc_core_init() reads t2us=1000, us2t=64 from /proc/net/psched, so
# tick_in_usec = 1000 / 64.
_TICK_IN_USEC = 1000.0 / 64.0
_TIME_UNITS_PER_SEC = 1_000_000.0


def _c_g(value: float, precision: int | None = None) -> str:
    """C's ``%g`` / ``%.Ng`` (Python's ``%`` operator follows C here)."""
    return ("%g" % value) if precision is None else ("%.*g" % (precision, value))


def sprint_size(size_bytes: float) -> str:
    """iproute2 lib/json_print_math.c: sprint_size(), for a __u32 size (``1514b``, ``32Kb``)."""
    sz = int(size_bytes) & 0xFFFFFFFF  # the callers pass __u32 (a double truncates)
    kilo, mega = 1024, 1024 * 1024
    if sz >= mega and abs(mega * round_half_even(sz / mega) - sz) < 1024:
        return _c_g(round_half_even(sz / mega)) + "Mb"
    if sz >= kilo and abs(kilo * round_half_even(sz / kilo) - sz) < 16:
        return _c_g(round_half_even(sz / kilo)) + "Kb"
    return f"{sz}b"


def round_half_even(x: float) -> float:
    """C's ``rint()`` in the default rounding mode (to nearest, ties to even)."""
    return float(round(x))


def sprint_rate(rate_bytes_per_s: int) -> str:
    """iproute2 lib/json_print.c: print_color_rate() (SI units, as tc prints without -iec)."""
    rate = int(rate_bytes_per_s) << 3  # bytes/s -> bit/s
    units = ("", "K", "M", "G", "T")
    kilo = 1000
    i = 0
    while i < len(units) - 1:
        if rate < kilo:
            break
        if rate % kilo != 0 and rate < 1000 * kilo:
            break
        rate //= kilo
        i += 1
    return "%.0f%sbit" % (float(rate), units[i])


def sprint_time_us(time_us: float) -> str:
    """iproute2 lib/utils.c: sprint_time() for a __u32 time in microseconds."""
    t = int(time_us) & 0xFFFFFFFF
    if t >= _TIME_UNITS_PER_SEC:
        return _c_g(t / _TIME_UNITS_PER_SEC, 3) + "s"
    if t >= _TIME_UNITS_PER_SEC / 1000:
        return _c_g(t / (_TIME_UNITS_PER_SEC / 1000), 3) + "ms"
    return f"{t}us"


def sprint_time64_ns(time_ns: int) -> str:
    """iproute2 lib/utils.c: sprint_time64() for a time in nanoseconds."""
    t = int(time_ns)
    if t >= 1_000_000_000:
        return _c_g(t / 1e9, 3) + "s"
    if t >= 1_000_000:
        return _c_g(t / 1e6, 3) + "ms"
    if t >= 1_000:
        return _c_g(t / 1e3, 3) + "us"
    return f"{t}ns"


# ---------------------------------------------------------------- options (print_opt)


def _fifo_opts(kind: str, cfg: Mapping[str, Any]) -> str:
    # tc/q_fifo.c: fifo_print_opt(): "limit %up" / "limit %s" (no trailing space)
    if kind == "bfifo":
        return "limit " + sprint_size(int(cfg.get("limit_bytes", 0)))
    return "limit %up" % int(cfg.get("limit_packets", 0))


def _tbf_ticks(rate_bytes: int, size_bytes: int) -> int:
    """The bucket as tbf_dump() reports it: Linux v6.12 net/sched/sch_tbf.c keeps it in ns
    (``psched_l2t_ns()``, capped at a u32 when tc gave it as time) and dumps
    ``PSCHED_NS2TICKS()`` (ns >> 6)."""
    if rate_bytes <= 0:
        return 0
    ns = min(size_bytes * 1_000_000_000 // rate_bytes, 0xFFFFFFFF)
    return ns >> 6


def _tbf_opts(cfg: Mapping[str, Any]) -> str:
    # tc/q_tbf.c: tbf_print_opt(); burst/minburst from tc_calc_xmitsize(rate, ticks), the
    # latency from limit, rate and the bucket's ticks.
    rate = int(cfg.get("rate_bps", 0)) // 8
    out = "rate %s " % sprint_rate(rate)
    buffer_ticks = _tbf_ticks(rate, int(cfg.get("burst_bytes", 0)))
    buffer = rate * (buffer_ticks / _TICK_IN_USEC) / _TIME_UNITS_PER_SEC
    out += "burst %s " % sprint_size(buffer)
    limit = int(cfg.get("limit_bytes", 0))
    latency = (_TIME_UNITS_PER_SEC * (limit / rate) - buffer_ticks / _TICK_IN_USEC) if rate else -1.0
    prate = int(cfg.get("peakrate_bps") or 0) // 8
    if prate:
        out += "peakrate %s " % sprint_rate(prate)
        mtu_ticks = _tbf_ticks(prate, int(cfg.get("mtu_bytes") or 0))
        if mtu_ticks:
            mtu = prate * (mtu_ticks / _TICK_IN_USEC) / _TIME_UNITS_PER_SEC
            out += "minburst %s " % sprint_size(mtu)
        lat2 = _TIME_UNITS_PER_SEC * (limit / prate) - mtu_ticks / _TICK_IN_USEC
        latency = max(latency, lat2)
    if latency >= 0.0:
        out += "lat %s " % sprint_time_us(latency)
    else:
        out += "limit %s " % sprint_size(limit)
    return out


#: Linux v6.12 net/sched/sch_fq.c: sch_default_prio2band and the default band weights.
_FQ_PRIOMAP = (1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1)
_FQ_WEIGHTS = (589824, 196608, 65536)
_FQ_ORPHAN_MASK = 1023
_FQ_TIMER_SLACK_NS = 10_000


def _fq_opts(cfg: Mapping[str, Any]) -> str:
    # tc/q_fq.c: fq_print_opt(), in its order, with what v6.12 fq_dump() sends
    out = "limit %up " % int(cfg.get("limit_packets", 10_000))
    out += "flow_limit %up " % int(cfg.get("flow_limit_packets", 100))
    out += "buckets %u " % int(cfg.get("buckets", 1024))
    out += "orphan_mask %u " % _FQ_ORPHAN_MASK
    if not cfg.get("pacing", True):
        out += "nopacing "
    out += "bands 3 priomap " + "".join(f"{p} " for p in _FQ_PRIOMAP)
    out += "weights " + "".join(f"{w} " for w in _FQ_WEIGHTS)
    out += "quantum %s " % sprint_size(int(cfg.get("quantum_bytes", 3028)))
    out += "initial_quantum %s " % sprint_size(int(cfg.get("initial_quantum_bytes", 15140)))
    maxrate = cfg.get("maxrate_bps")
    if maxrate is not None and int(maxrate) // 8 < 0xFFFFFFFF:  # ~0U = unlimited, not printed
        out += "maxrate %s " % sprint_rate(int(maxrate) // 8)
    low = int(cfg.get("low_rate_threshold_bps", 550_000)) // 8
    if low:
        out += "low_rate_threshold %s " % sprint_rate(low)
    out += "refill_delay %s " % sprint_time_us(int(cfg.get("refill_delay_ns", 40_000_000)) // 1000)
    ce_threshold = cfg.get("ce_threshold_ns")
    if ce_threshold is not None:  # fq_dump() sends ~0U us when off, which tc does not print
        out += "ce_threshold %s " % sprint_time_us(int(ce_threshold) // 1000)
    out += "timer_slack %s " % sprint_time64_ns(_FQ_TIMER_SLACK_NS)
    out += "horizon %s " % sprint_time_us(int(cfg.get("horizon_ns", 10_000_000_000)) // 1000)
    out += "horizon_drop " if cfg.get("horizon_drop", True) else "horizon_cap "
    return out


#: include/net/codel.h: CODEL_SHIFT (CoDel's clock is ns >> 10).
_CODEL_SHIFT = 10


def codel_dump_us(time_ns: int) -> int:
    """A CoDel time as fq_codel dumps it: tc passes whole microseconds, fq_codel_change()
    keeps ``(us * NSEC_PER_USEC) >> CODEL_SHIFT`` ticks, fq_codel_dump() sends
    ``codel_time_to_us()``: ``(ticks << CODEL_SHIFT) / NSEC_PER_USEC`` (v6.12 codel.h)."""
    ticks = (int(time_ns) // 1000 * 1000) >> _CODEL_SHIFT
    return (ticks << _CODEL_SHIFT) // 1000


def _fq_codel_opts(cfg: Mapping[str, Any]) -> str:
    # tc/q_fq_codel.c: fq_codel_print_opt(), with what v6.12 fq_codel_dump() sends
    out = "limit %up " % int(cfg.get("limit_packets", 10_240))
    out += "flows %u " % int(cfg.get("flows", 1024))
    out += "quantum %u " % int(cfg.get("quantum_bytes", 1514))
    out += "target %s " % sprint_time_us(codel_dump_us(int(cfg.get("target_ns", 5_000_000))))
    ce_threshold = cfg.get("ce_threshold_ns")
    if ce_threshold is not None:  # dumped only when set (CODEL_DISABLED_THRESHOLD: not)
        out += "ce_threshold %s " % sprint_time_us(codel_dump_us(int(ce_threshold)))
    out += "interval %s " % sprint_time_us(codel_dump_us(int(cfg.get("interval_ns", 100_000_000))))
    out += "memory_limit %s " % sprint_size(int(cfg.get("memory_limit_bytes", 32 << 20)))
    if cfg.get("ecn", True):  # fq_codel_init(): cparams.ecn = true
        out += "ecn "
    drop_batch = int(cfg.get("drop_batch", 64))
    if drop_batch:
        out += "drop_batch %u " % drop_batch
    return out


def _options(cfg: Mapping[str, Any]) -> str:
    kind = str(cfg.get("kind", "pfifo"))
    if kind in ("pfifo", "bfifo"):
        return _fifo_opts(kind, cfg)
    if kind == "tbf":
        return _tbf_opts(cfg)
    if kind == "fq":
        return _fq_opts(cfg)
    if kind == "fq_codel":
        return _fq_codel_opts(cfg)
    return ""


# ---------------------------------------------------------------- xstats (print_xstats)


def _fq_xstats(x: Mapping[str, int]) -> list[str]:
    # tc/q_fq.c: fq_print_xstats() (iproute2 6.x: band counts, optional fields only when set)
    g = lambda name: int(x.get(name, 0))  # noqa: E731
    line1 = "  flows %u (inactive %u throttled %u)" % (g("flows"), g("inactive"), g("throttled_flows"))
    line1 += " band0_pkts %u band1_pkts %u band2_pkts %u" % (g("band0_pkts"), g("band1_pkts"), g("band2_pkts"))
    if g("next_packet_delay"):
        line1 += " next_packet_delay %s" % sprint_time64_ns(g("next_packet_delay"))
    line2 = "  gc %u highprio %u" % (g("gc"), g("highprio"))
    if g("fastpath"):
        line2 += " fastpath %u" % g("fastpath")
    if g("retrans"):
        line2 += " retrans %u" % g("retrans")
    line2 += " throttled %u" % g("throttled")
    if g("latency"):
        line2 += " latency %s" % sprint_time64_ns(g("latency"))
    if g("ce_mark"):
        line2 += " ce_mark %u" % g("ce_mark")
    if g("flows_plimit"):
        line2 += " flows_plimit %u" % g("flows_plimit")
    lines = [line1, line2]
    if any(g(k) for k in ("pkts_too_long", "alloc_errors", "horizon_drops", "horizon_caps")) or any(
        g(f"band{b}_drops") for b in range(3)
    ):
        line3 = ""
        if g("pkts_too_long"):
            line3 += " pkts_too_long %u" % g("pkts_too_long")
        if g("alloc_errors"):
            line3 += " alloc_errors %u" % g("alloc_errors")
        if g("horizon_drops"):
            line3 += " horizon_drops %u" % g("horizon_drops")
        if g("horizon_caps"):
            line3 += "  horizon_caps %u" % g("horizon_caps")  # two spaces: as iproute2 prints it
        for b in range(3):
            if g(f"band{b}_drops"):
                line3 += " band%d_drops %u" % (b, g(f"band{b}_drops"))
        lines.append(line3)
    return lines


def _fq_codel_xstats(x: Mapping[str, int]) -> list[str]:
    # tc/q_fq_codel.c: fq_codel_print_xstats(), TCA_FQ_CODEL_XSTATS_QDISC
    g = lambda name: int(x.get(name, 0))  # noqa: E731
    line1 = "  maxpacket %u drop_overlimit %u new_flow_count %u ecn_mark %u" % (
        g("maxpacket"),
        g("drop_overlimit"),
        g("new_flow_count"),
        g("ecn_mark"),
    )
    if g("ce_mark"):
        line1 += " ce_mark %u" % g("ce_mark")
    if g("memory_used"):
        line1 += " memory_used %u" % g("memory_used")
    if g("drop_overmemory"):
        line1 += " drop_overmemory %u" % g("drop_overmemory")
    line2 = "  new_flows_len %u old_flows_len %u" % (g("new_flows_len"), g("old_flows_len"))
    return [line1, line2]


def _xstats_lines(kind: str, xstats: Mapping[str, int] | None) -> list[str]:
    if kind == "fq":
        return _fq_xstats(xstats or {})
    if kind == "fq_codel":
        return _fq_codel_xstats(xstats or {})
    return []  # fifo and tbf have no xstats (tbf dumps none; print_xstats is NULL)


# ---------------------------------------------------------------- records


def format_qdisc(
    cfg: Mapping[str, Any],
    stats: Mapping[str, int],
    *,
    dev: str,
    handle: str = "1:",
    parent: str | None = None,
    xstats: Mapping[str, int] | None = None,
) -> str:
    """One ``tc -s qdisc`` record (with its final newline) for a qdisc of config ``cfg``
    (the engine's queue JSON: ``kind`` and its parameters) and statistics ``stats``
    (:data:`STAT_KEYS`). ``parent`` None is the root (``root refcnt 2``), else a class id
    such as ``1:1`` (a child: refcnt 1, which tc does not print)."""
    kind = str(cfg.get("kind", "pfifo"))
    # tc/tc_qdisc.c: print_qdisc()
    head = f"qdisc {kind} {handle} dev {dev} "
    head += "root refcnt 2 " if parent is None else f"parent {parent} "
    head += _options(cfg)
    s = {k: int(stats.get(k, 0) or 0) for k in STAT_KEYS}
    # tc/tc_util.c: print_tcstats2_attr() with prefix " "
    sent = " Sent %u bytes %u pkt (dropped %u, overlimits %u requeues %u) " % (
        s["sent_bytes"],
        s["sent_packets"],
        s["drops"],
        s["overlimits"],
        s["requeues"],
    )
    backlog = " backlog %s %up requeues %u" % (sprint_size(s["backlog_bytes"]), s["backlog_packets"], s["requeues"])
    lines = [head, sent, backlog, *_xstats_lines(kind, xstats)]
    return "\n".join(lines) + "\n"


def link_devices(config: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(node name, device)`` of each link's egress, in link order: a node's outgoing
    links are ``eth0``, ``eth1``, ... in the order the scenario lists them."""
    nodes = [n["name"] for n in config.get("nodes", [])]
    count: dict[int, int] = {}
    out = []
    for link in config.get("links", []):
        src = int(link["from"])
        k = count.get(src, 0)
        count[src] = k + 1
        out.append((nodes[src] if 0 <= src < len(nodes) else str(src), f"eth{k}"))
    return out


def _stats_of(entry: Mapping[str, Any]) -> dict[str, int]:
    return {k: int(entry.get(k, 0) or 0) for k in STAT_KEYS}


def format_node(
    config: Mapping[str, Any], links_out: Sequence[Mapping[str, Any]], node: str, *, invisible: bool = False
) -> str:
    """The ``tc -s qdisc show`` text of ``node``: every qdisc on its devices, but tbf's
    default child, which only ``tc -s qdisc show invisible`` (``invisible=True``) lists."""
    parts = []
    devices = link_devices(config)
    for link_cfg, out, (owner, dev) in zip(config.get("links", []), links_out, devices, strict=False):
        if owner != node:
            continue
        qcfg = dict(link_cfg.get("queue") or {"kind": str(out.get("qdisc", "pfifo"))})
        parts.append(format_qdisc(qcfg, _stats_of(out), dev=dev, handle="1:", xstats=out.get("xstats") or {}))
        if qcfg.get("kind") == "tbf":
            child_out = out.get("child")
            child_cfg = qcfg.get("child")
            if child_cfg is None:  # the kernel's default: a bfifo of tbf's limit, handle 0:
                if not invisible:
                    continue  # invisible (module doc)
                ccfg: dict[str, Any] = {"kind": "bfifo", "limit_bytes": int(qcfg.get("limit_bytes", 0))}
                handle = "0:"
            else:
                ccfg = dict(child_cfg)
                handle = "10:"
            if isinstance(child_out, Mapping):
                ccfg["kind"] = str(child_out.get("qdisc", ccfg["kind"]))
                parts.append(
                    format_qdisc(
                        ccfg, _stats_of(child_out), dev=dev, handle=handle, parent="1:1", xstats=child_out.get("xstats")
                    )
                )
    return "".join(parts)

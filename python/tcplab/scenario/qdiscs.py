"""The parameters of the timed qdiscs (``tbf``, ``fq``, ``fq_codel``) as tc takes them.

A ``queue:`` block (or a host's ``qdisc:``) names its qdisc with ``qdisc:`` (or ``kind:``)
and gives the parameters ``tc qdisc add ... KIND ...`` takes, with tc's names and units;
this module turns them into the engine's ``TbfConfig`` / ``FqConfig`` / ``FqCodelConfig``
(``crates/tcplab-core/src/config/mod.rs``). Unknown parameters are errors; parameters left out
get the kernel's defaults (the engine's ``Default`` impls, Linux v6.12).

Units are tc's (iproute2): rates as ``get_rate64()`` reads them (``10Mbit``; ``bps`` is
bytes per second), sizes as ``get_size64()`` reads them (:func:`tcplab.units.parse_tc_size`:
``b`` = bytes, ``kb``/``k`` = 1024 bytes, ``mb``/``m`` = MiB: ``32Mb`` is 32 MiB), times
with a unit (``5ms``, ``10s``).

tbf (iproute2 tc/q_tbf.c: tbf_parse_opt(); Linux v6.12 net/sched/sch_tbf.c: tbf_change())
    ``rate`` and ``burst`` (aliases ``buffer``, ``maxburst``) are required; exactly one of
    ``limit`` (bytes) or ``latency`` (tc: "Either limit or latency are required", "Double
    limit/latency spec"). tc turns ``latency`` into a limit:
    ``limit = rate_Bps * latency + burst``, and with ``peakrate``
    ``min(that, peakrate_Bps * latency + mtu)``, truncated to whole bytes.
    ``peakrate`` needs ``mtu`` (alias ``minburst``) and must exceed ``rate`` (the kernel
    refuses ``peakrate <= rate``). A ``burst`` (or ``mtu``) below one full frame
    (:data:`PSCHED_MTU_BYTES`, 1514) is refused: sch_tbf.c drops every packet longer than
    the bucket (``max_size``), so nothing full-size would ever pass (the kernel only
    warns); so is a ``limit`` below one full frame (tbf's child bfifo would drop every
    full-size packet). ``mtu`` without ``peakrate`` is ignored, as the kernel ignores it.
    ``child:`` is the inner qdisc (any of them, as ``tc qdisc add ... parent 1:1``; a FIFO's
    limit in packets or bytes, not BDPs); without it the kernel's default: a bfifo of
    ``limit`` bytes.

fq (iproute2 tc/q_fq.c; Linux v6.12 net/sched/sch_fq.c: fq_change())
    ``limit`` and ``flow_limit`` (packets), ``quantum``, ``initial_quantum`` (bytes),
    ``maxrate``, ``low_rate_threshold`` (rates), ``refill_delay``, ``horizon`` (times),
    ``horizon_drop: true|false`` or ``horizon_cap: true`` (tc's flags), ``buckets`` (rounded
    up to a power of two as tc does, 2 to 2^18), ``pacing: true|false`` or
    ``nopacing: true``, ``ce_threshold`` (a time: fq marks an ECN-capable packet CE when it
    leaves more than this after it was due, v6.12 fq_dequeue(); off by default). fq marks
    nothing otherwise: ``ecn: true`` is refused (it has no such parameter).

fq_codel (iproute2 tc/q_fq_codel.c; Linux v6.12 net/sched/sch_fq_codel.c: fq_codel_change())
    ``limit`` (packets), ``flows`` (1 to 65536, the kernel's bound), ``target``,
    ``interval`` (times, from 1024 ns: CoDel's clock tick), ``quantum`` (up to 1 MiB; the
    kernel raises one below 256 B to 256), ``memory_limit`` (bytes, at most
    2^31 as the kernel caps it), ``drop_batch``, ``ecn: true|false`` or ``noecn: true``
    (CoDel marks ECN-capable packets CE instead of dropping them; on by default, as
    fq_codel_init() sets ``cparams.ecn``), ``ce_threshold`` (a time: mark every ECN-capable
    packet whose sojourn exceeds it, the shallow step DCTCP wants; off by default).

Only fq_codel and fq mark; ``ecn: true`` on pfifo, bfifo, pfifo_fast, tbf or fq is refused
(they only drop; ``ecn: false`` is what they do and is accepted). A ``ce_threshold`` is a
positive time of at most 2^32 - 2 microseconds (tc passes microseconds in a u32, ~0
meaning off).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tcplab.errors import UnitError, show_value
from tcplab.scenario.fields import U32_MAX, _did_you_mean, _parse_bool, _parse_int, _sub
from tcplab.units import parse_rate, parse_tc_size, parse_time

#: psched_mtu() of an Ethernet device with MTU 1500: 1500 + the 14-byte header. The longest
#: frame a qdisc sees; a tbf bucket smaller than this passes no full-size packet.
PSCHED_MTU_BYTES = 1514

TBF_KEYS = ("rate", "burst", "buffer", "maxburst", "limit", "latency", "peakrate", "mtu", "minburst", "child")
FQ_KEYS = (
    "limit",
    "flow_limit",
    "quantum",
    "initial_quantum",
    "maxrate",
    "low_rate_threshold",
    "refill_delay",
    "horizon",
    "horizon_drop",
    "horizon_cap",
    "buckets",
    "pacing",
    "nopacing",
    "ce_threshold",
)
FQ_CODEL_KEYS = (
    "limit",
    "flows",
    "target",
    "interval",
    "quantum",
    "memory_limit",
    "drop_batch",
    "ecn",
    "noecn",
    "ce_threshold",
)

#: fq's bucket-count bound: Linux v6.12 sch_fq.c: fq_change() accepts fq_log 1..ilog2(256 * 1024).
FQ_MAX_BUCKETS_LOG = 18
#: sch_fq.c: fq_change(): ``quantum`` must be in (0, 2^20].
FQ_MAX_QUANTUM = 1 << 20
#: sch_fq_codel.c: fq_codel_init() refuses more than 65536 flows; fq_codel_change() refuses a
#: quantum above 2^20 and raises one below 256 to 256.
FQ_CODEL_MAX_FLOWS = 65536
#: include/net/codel.h: CoDel's clock is ns >> 10 (CODEL_SHIFT).
CODEL_TICK_NS = 1024
#: sch_fq_codel.c: fq_codel_change(): ``memory_limit`` is capped at 2^31 bytes.
FQ_CODEL_MAX_MEMORY = 1 << 31

EXPECTED_TBF = "rate, burst and limit (or latency), such as {qdisc: tbf, rate: 10Mbit, burst: 32kb, latency: 50ms}"


def _check_keys(body: dict, allowed: tuple[str, ...], kind: str) -> None:
    for key in body:
        if key not in allowed:
            raise UnitError(
                f"unknown {kind} parameter {show_value(key)}{_did_you_mean(key, list(allowed))}",
                f"one of: {', '.join(allowed)}",
                key,
                subpath=(str(key),),
            )


def _get(body: dict, key: str, parse: Callable[[Any], Any]) -> Any:
    """``parse(body[key])`` with the error placed at ``key``; None when absent."""
    if key not in body:
        return None
    try:
        return parse(body[key])
    except UnitError as e:
        raise _sub(e, key) from None


def _one_of(body: dict, keys: tuple[str, ...]) -> str | None:
    """The one of ``keys`` given (tc refuses a "Double ... spec"), or None."""
    given = [k for k in keys if k in body]
    if len(given) > 1:
        raise UnitError(
            f"both {given[0]} ({show_value(body[given[0]])}) and {given[1]} ({show_value(body[given[1]])}) given "
            "(they are the same parameter)",
            f"one of: {', '.join(keys)}",
            body[given[1]],
            subpath=(given[1],),
        )
    return given[0] if given else None


def _frame_size(what: str) -> Callable[[Any], int]:
    def parse(value: Any) -> int:
        size = parse_tc_size(value)
        if size < PSCHED_MTU_BYTES:
            raise UnitError(
                f"{show_value(value)} is {size} bytes, smaller than one full frame ({PSCHED_MTU_BYTES} bytes): "
                "tbf would drop every full-size packet",
                f"a {what} of at least {PSCHED_MTU_BYTES} bytes (1514b), such as 32kb",
                value,
            )
        if size > U32_MAX:
            raise UnitError(f"{show_value(value)} is too large", f"a {what} of at most {U32_MAX} bytes", value)
        return size

    return parse


def _bytes_rate(what: str) -> Callable[[Any], int]:
    """A rate tc passes in bytes per second: at least 8 bit/s (below, it is a rate of 0)."""

    def parse(value: Any) -> int:
        bps = parse_rate(value)
        if bps < 8:
            raise UnitError(
                f"{show_value(value)} is less than one byte per second",
                f"a {what} of at least 8bit (tc counts bytes per second)",
                value,
            )
        return bps

    return parse


#: Times tc passes as a u32 of microseconds (fq's horizon and refill_delay, fq_codel's
#: target and interval).
MAX_U32_US_NS = U32_MAX * 1000


def _u32_us_time(lo_ns: int = 1, why: str = "") -> Callable[[Any], int]:
    def parse(value: Any) -> int:
        ns = parse_time(value, allow_zero=lo_ns == 0)
        if not lo_ns <= ns <= MAX_U32_US_NS:
            raise UnitError(
                f"{show_value(value)} is out of range{why}",
                f"a time from {lo_ns} ns to {U32_MAX}us (tc passes a u32 of microseconds)",
                value,
            )
        return ns

    return parse


#: The largest ``ce_threshold`` tc passes: a u32 of microseconds, ~0U meaning "off" (iproute2
#: tc/q_fq.c and q_fq_codel.c send it only when it is not ~0U).
MAX_CE_THRESHOLD_NS = (U32_MAX - 1) * 1000


def _ce_threshold(lo_ns: int, why: str) -> Callable[[Any], int]:
    """``ce_threshold``: a positive time, at least ``lo_ns`` (``why``: the reason), at most
    :data:`MAX_CE_THRESHOLD_NS`."""
    expected = (
        f"a positive time such as 1ms, from {lo_ns} ns to {U32_MAX - 1}us "
        "(CE marks above this sojourn; tc passes a u32 of microseconds)"
    )

    def parse(value: Any) -> int:
        try:
            ns = parse_time(value, allow_zero=False)
        except UnitError as e:
            raise UnitError(e.problem, expected, value) from None
        if ns < lo_ns:
            raise UnitError(f"{show_value(value)} is less than {lo_ns} ns ({why})", expected, value)
        if ns > MAX_CE_THRESHOLD_NS:
            raise UnitError(f"{show_value(value)} is out of range", expected, value)
        return ns

    return parse


#: What a qdisc that cannot mark says to ``ecn: true`` (module doc).
_NO_MARKING = {
    "pfifo": "pfifo cannot mark packets (a FIFO only drops)",
    "bfifo": "bfifo cannot mark packets (a FIFO only drops)",
    "pfifo_fast": "pfifo_fast cannot mark packets (a FIFO only drops)",
    "tbf": "tbf cannot mark packets (sch_tbf.c only drops)",
    "fq": "fq has no ecn switch (it marks only above a ce_threshold)",
}
_MARKS = "false, or a qdisc that marks: fq_codel (ecn, on by default; or ce_threshold), fq with ce_threshold"
_MARKING_EXPECTED = {
    "fq": "ce_threshold: 1ms (or another positive time) to mark, or ecn: false",
}


def refuse_ecn(body: dict, kind: str) -> dict:
    """``body`` without an ``ecn: false`` (what a qdisc that cannot mark does anyway);
    ``ecn: true`` on such a qdisc (:data:`_NO_MARKING`) is an error at ``ecn``."""
    if "ecn" not in body:
        return body
    if _get(body, "ecn", _parse_bool):
        raise UnitError(
            f"true, but {_NO_MARKING[kind]}",
            _MARKING_EXPECTED.get(kind, _MARKS),
            body["ecn"],
            subpath=("ecn",),
        )
    return {k: v for k, v in body.items() if k != "ecn"}


def _u32_size(what: str, lo: int = 1, hi: int = U32_MAX) -> Callable[[Any], int]:
    def parse(value: Any) -> int:
        size = parse_tc_size(value, allow_zero=lo == 0)
        if not lo <= size <= hi:
            raise UnitError(f"{show_value(value)} is out of range", f"{what} from {lo} to {hi} bytes", value)
        return size

    return parse


def _tbf_limit(value: Any) -> int:
    """tbf's ``limit``: the bytes its child bfifo holds. Every packet goes through the child
    (Linux v6.12 sch_tbf.c: tbf_enqueue() -> qdisc_enqueue(); sch_fifo.c: bfifo_enqueue()
    drops when backlog + len > limit), so a limit below one full frame drops every
    full-size packet: refused, as a burst that small is."""
    size = parse_tc_size(value)
    if size < PSCHED_MTU_BYTES:
        raise UnitError(
            f"{show_value(value)} is {size} bytes, smaller than one full frame ({PSCHED_MTU_BYTES} bytes): "
            "tbf's queue (a bfifo of limit bytes) would drop every full-size packet",
            f"a limit of at least {PSCHED_MTU_BYTES} bytes (1514b), such as 100kb, or a latency such as 50ms",
            value,
        )
    if size > U32_MAX:
        raise UnitError(f"{show_value(value)} is too large", f"a limit of at most {U32_MAX} bytes", value)
    return size


def _packets(value: Any) -> int:
    """A packet count, also as tc prints it (``10000p``)."""
    if isinstance(value, str) and value.strip().endswith("p"):
        value = value.strip()[:-1]
    return _parse_int(1, U32_MAX, "a packet count")(value)


def parse_tbf(body: dict) -> dict[str, Any]:
    """A tbf's parameters (without ``child``) -> the engine's ``TbfConfig`` fields."""
    body = refuse_ecn(body, "tbf")
    _check_keys(body, TBF_KEYS, "tbf")
    rate_bps = _get(body, "rate", _bytes_rate("rate"))
    if rate_bps is None:
        raise UnitError("missing", "a rate such as 10Mbit (tc: rate and burst are required)", None, subpath=("rate",))
    burst_key = _one_of(body, ("burst", "buffer", "maxburst"))
    if burst_key is None:
        raise UnitError(
            "missing", "a bucket size such as 32kb (tc: rate and burst are required)", None, subpath=("burst",)
        )
    burst_bytes = _get(body, burst_key, _frame_size("burst"))
    peakrate_bps = _get(body, "peakrate", _bytes_rate("peakrate"))
    mtu_key = _one_of(body, ("mtu", "minburst"))
    mtu_bytes = _get(body, mtu_key, _frame_size("mtu")) if mtu_key else None
    if peakrate_bps is not None:
        if mtu_bytes is None:
            raise UnitError(
                f"peakrate {show_value(body['peakrate'])} given without mtu",
                'an mtu (the peak bucket, such as "1514b"), as tc requires with peakrate',
                body["peakrate"],
                subpath=("mtu",),
            )
        if peakrate_bps // 8 <= rate_bps // 8:  # compared in bytes/s, as the kernel holds them
            # Linux v6.12 sch_tbf.c: tbf_change(): "peakrate ... is lower than or equals to rate".
            raise UnitError(
                f"{show_value(body['peakrate'])} is not above the rate ({show_value(body['rate'])})",
                "a peakrate above rate (the kernel refuses peakrate <= rate)",
                body["peakrate"],
                subpath=("peakrate",),
            )
    else:
        mtu_bytes = None  # the kernel ignores the peak bucket without a peak rate
    if "limit" in body and "latency" in body:
        raise UnitError(
            f"both limit ({show_value(body['limit'])}) and latency ({show_value(body['latency'])}) given",
            "exactly one of limit (bytes) or latency (a time), as tc requires",
            body["latency"],
            subpath=("latency",),
        )
    if "limit" in body:
        limit_bytes = _get(body, "limit", _tbf_limit)
    elif "latency" in body:
        latency_ns = _get(body, "latency", parse_time)
        limit_bytes = tbf_limit_from_latency(rate_bps, burst_bytes, latency_ns, peakrate_bps, mtu_bytes)
        if limit_bytes > U32_MAX:
            raise UnitError(
                f"{show_value(body['latency'])} makes a limit of {limit_bytes} bytes, more than tc's u32 limit",
                "a shorter latency",
                body["latency"],
                subpath=("latency",),
            )
    else:
        raise UnitError(
            "missing", "a limit (bytes) or a latency (a time such as 50ms), as tc requires", None, subpath=("limit",)
        )
    return {
        "rate_bps": rate_bps,
        "burst_bytes": burst_bytes,
        "limit_bytes": limit_bytes,
        "peakrate_bps": peakrate_bps,
        "mtu_bytes": mtu_bytes,
    }


def tbf_limit_from_latency(
    rate_bps: int, burst_bytes: int, latency_ns: int, peakrate_bps: int | None = None, mtu_bytes: int | None = None
) -> int:
    """tc's conversion of ``latency`` to tbf's byte ``limit`` (iproute2 tc/q_tbf.c: tbf_parse_opt()).

    ``limit = rate * latency + burst`` with the rate in bytes per second; with a peak rate,
    the smaller of that and ``peakrate * latency + mtu``. tc computes it in a double and
    stores it in a u32 (truncation); here exactly, then truncated.
    """
    from fractions import Fraction

    lim = Fraction(rate_bps, 8) * Fraction(latency_ns, 10**9) + burst_bytes
    if peakrate_bps is not None and mtu_bytes is not None:
        lim = min(lim, Fraction(peakrate_bps, 8) * Fraction(latency_ns, 10**9) + mtu_bytes)
    return int(lim)  # truncation toward zero, as C's double -> u32


def _flag(body: dict, on: str, off: str, default: bool) -> bool:
    """tc's paired flags (``pacing``/``nopacing``, ``horizon_drop``/``horizon_cap``): ``on: bool``
    and/or ``off: true``; contradictory values are an error."""
    value = default
    if on in body:
        value = _get(body, on, _parse_bool)
    if off in body:
        off_value = _get(body, off, _parse_bool)
        if on in body and off_value == value:
            raise UnitError(
                f"{on}: {str(value).lower()} contradicts {off}: {str(off_value).lower()}",
                f"one of {on}: true or {off}: true",
                body[off],
                subpath=(off,),
            )
        value = not off_value
    return value


def parse_fq_buckets(value: Any) -> int:
    """``buckets N``: tc sends ``fq_log = ilog2(N)`` rounded up (iproute2 tc/q_fq.c: ilog2()),
    so the table has the next power of two; the kernel accepts 2^1 to 2^18."""
    n = _parse_int(1, U32_MAX, "a bucket count")(value)
    log = max(0, (n - 1).bit_length())
    if not 1 <= log <= FQ_MAX_BUCKETS_LOG:
        raise UnitError(
            f"{show_value(value)} is out of range",
            f"a bucket count from 2 to {1 << FQ_MAX_BUCKETS_LOG} (rounded up to a power of two, as tc does)",
            value,
        )
    return 1 << log


#: fq's per-flow rates are u32 bytes per second in netlink (TCA_FQ_FLOW_MAX_RATE,
#: TCA_FQ_LOW_RATE_THRESHOLD; ~0U means unlimited): at most (2^32 - 2) * 8 bit/s.
FQ_MAX_RATE_BPS = (U32_MAX - 1) * 8


def _fq_rate(value: Any) -> int:
    bps = _bytes_rate("rate")(value)
    if bps > FQ_MAX_RATE_BPS:
        raise UnitError(
            f"{show_value(value)} is above what fq takes (a u32 of bytes per second)",
            f"a rate of at most {FQ_MAX_RATE_BPS} bit/s (34.4 Gbit/s)",
            value,
        )
    return bps


def parse_fq(body: dict) -> dict[str, Any]:
    """fq's parameters -> the engine's ``FqConfig`` fields (only those given; the engine
    fills in the v6.12 defaults)."""
    body = refuse_ecn(body, "fq")
    _check_keys(body, FQ_KEYS, "fq")
    out: dict[str, Any] = {}
    for key, field, parse in (
        ("limit", "limit_packets", _packets),
        ("flow_limit", "flow_limit_packets", _packets),
        ("buckets", "buckets", parse_fq_buckets),
        ("quantum", "quantum_bytes", _u32_size("a quantum", 1, FQ_MAX_QUANTUM)),
        ("initial_quantum", "initial_quantum_bytes", _u32_size("an initial quantum", 0, 2**31 - 1)),
        ("maxrate", "maxrate_bps", _fq_rate),
        ("low_rate_threshold", "low_rate_threshold_bps", _fq_rate),
        ("refill_delay", "refill_delay_ns", _u32_us_time(0)),
        ("horizon", "horizon_ns", _u32_us_time(1)),
        # below 1 us tc's microseconds are 0
        ("ce_threshold", "ce_threshold_ns", _ce_threshold(1000, "tc passes whole microseconds: it would be 0")),
    ):
        value = _get(body, key, parse)
        if value is not None:
            out[field] = value
    if "horizon_drop" in body or "horizon_cap" in body:
        out["horizon_drop"] = _flag(body, "horizon_drop", "horizon_cap", True)
    if "pacing" in body or "nopacing" in body:
        out["pacing"] = _flag(body, "pacing", "nopacing", True)
    return out


def parse_fq_codel(body: dict) -> dict[str, Any]:
    """fq_codel's parameters -> the engine's ``FqCodelConfig`` fields (only those given)."""
    _check_keys(body, FQ_CODEL_KEYS, "fq_codel")
    out: dict[str, Any] = {}
    for key, field, parse in (
        ("limit", "limit_packets", _packets),
        ("flows", "flows", _parse_int(1, FQ_CODEL_MAX_FLOWS, "a flow count")),
        ("target", "target_ns", _u32_us_time(CODEL_TICK_NS, " (CoDel counts time in 1024-ns ticks)")),
        ("interval", "interval_ns", _u32_us_time(CODEL_TICK_NS, " (CoDel counts time in 1024-ns ticks)")),
        ("quantum", "quantum_bytes", _u32_size("a quantum", 1, 1 << 20)),
        ("memory_limit", "memory_limit_bytes", _u32_size("a memory limit", 1, FQ_CODEL_MAX_MEMORY)),
        ("drop_batch", "drop_batch", _parse_int(1, U32_MAX, "a packet count")),
        ("ce_threshold", "ce_threshold_ns", _ce_threshold(CODEL_TICK_NS, "CoDel counts time in 1024-ns ticks")),
    ):
        value = _get(body, key, parse)
        if value is not None:
            out[field] = value
    if "ecn" in body or "noecn" in body:
        out["ecn"] = _flag(body, "ecn", "noecn", True)
    return out


def describe(queue: dict[str, Any]) -> str:
    """One line for ``tcplab check``: an engine ``QueueConfig`` in tc's words (what was given;
    fq and fq_codel leave the rest at the kernel's defaults)."""
    from tcplab.units import format_rate, format_time

    kind = queue["kind"]
    if kind == "pfifo":
        return f"pfifo limit {queue['limit_packets']} packets"
    if kind == "bfifo":
        return f"bfifo limit {queue['limit_bytes']} bytes"
    parts = [kind]
    for key, value in queue.items():
        if key in ("kind", "child") or value is None:
            continue
        name, _, unit = key.rpartition("_")
        if unit == "bps":
            text = format_rate(value)
        elif unit == "ns":
            text = format_time(value)
        elif unit == "bytes":
            text = f"{value}b"
        elif unit == "packets":
            text = f"{value}p"
        else:
            name, text = key, str(value).lower()
        parts.append(f"{name} {text}")
    if queue.get("child"):
        parts.append(f"(child {describe(queue['child'])})")
    return " ".join(parts)

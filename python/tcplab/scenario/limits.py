"""What the engine can represent and what a run may hold, checked before anything runs.

The model: the engine keeps time as 64-bit nanoseconds and grows its time series as the run
goes. Values it cannot represent (a delay of 18446744073 s) or runs that would outgrow the
machine (``sample_interval: 1ns`` over 2 s keeps two billion samples) are refused here,
with the YAML path of the field to change, so that ``tcplab check`` catches them. The
engine checks the same bounds again (``sim::validate``, ``crates/tcplab-core/src/sim/validate.rs``) for callers
of ``tcplab._core`` that bypass this front.

Bounds (the engine's constants of the same names):

- ``duration``, a flow's ``stop``: at most a year (``MAX_DURATION_NS``);
- a link's ``delay``, a reordering ``delay``, ``tcp_comp_sack_delay_ns``: at most an hour
  (``MAX_DELAY_NS``);
- a link's ``rate``: at most 1 Pbit/s (``MAX_RATE_BPS``);
- ``rto_min``: at most ``TCP_RTO_MAX`` (120 s);
- memory: the time series hold ``duration / sample_interval + 2`` rows per flow and per
  link (the engine's ``memory::sample_rows``), each row as wide as the columns of
  :data:`tcplab.columns.TIMESERIES_DTYPES` / :data:`~tcplab.columns.QUEUE_DTYPES` (a
  broadcast's connections keep no rows: 40 000 of them cost only their sockets). The total
  must stay under ``limits.memory`` (default 4 GiB), which the user may raise. The engine
  adds its endpoints and the packets its links can hold to this estimate and refuses, at
  the start of the run, what is over the same limit.

Also refused: ``tcp.fq_pacing: true``. Linux leaves pacing to fq (SK_PACING_FQ) when fq is
the qdisc of the sender's device; in a scenario that is ``hosts.NAME.qdisc: fq`` (or
``default_qdisc``), not a per-flow switch that could disagree with the qdisc.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tcplab.columns import QUEUE_DTYPES, TIMESERIES_DTYPES, row_bytes
from tcplab.units import plural

if TYPE_CHECKING:
    from tcplab.scenario.model import Scenario

__all__ = [
    "MAX_DURATION_NS",
    "MAX_DELAY_NS",
    "MAX_RATE_BPS",
    "RTO_MAX_NS",
    "DEFAULT_MEMORY_BYTES",
    "FLOW_ROW_BYTES",
    "QUEUE_ROW_BYTES",
    "sample_rows",
    "series_bytes",
    "check_limits",
]

NS_PER_S = 1_000_000_000
MAX_DURATION_NS = 366 * 24 * 3600 * NS_PER_S
MAX_DELAY_NS = 3600 * NS_PER_S
MAX_RATE_BPS = 10**15
RTO_MAX_NS = 120 * NS_PER_S
DEFAULT_MEMORY_BYTES = 4 << 30

#: Bytes of one row of the per-flow / per-link time series, from their column dtypes.
FLOW_ROW_BYTES = row_bytes(TIMESERIES_DTYPES)
QUEUE_ROW_BYTES = row_bytes(QUEUE_DTYPES)

ErrorFn = Callable[..., None]


def sample_rows(duration_ns: int, sample_interval_ns: int) -> int:
    """Sample times the engine reserves: t = 0, every interval to the end, one spare."""
    return duration_ns // sample_interval_ns + 2 if sample_interval_ns > 0 else 0


def series_bytes(rows: int, flows: int, links: int) -> int:
    """Bytes of time series for ``rows`` sample times of ``flows`` flows and ``links`` one-way links."""
    return rows * (flows * FLOW_ROW_BYTES + links * QUEUE_ROW_BYTES)


def human_bytes(n: int) -> str:
    """``2.9 GB`` (decimal: the figure is an estimate); limits print in the unit they were given."""
    value = float(n)
    for unit in ("B", "kB", "MB", "GB", "TB", "PB"):
        if value < 1000 or unit == "PB":
            return f"{n} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{n} B"  # pragma: no cover


def _limit(n: int) -> str:
    """A limit as it was probably written: ``4 GiB`` when a whole number of GiB."""
    return f"{n >> 30} GiB" if n >= 1 << 30 and n % (1 << 30) == 0 else human_bytes(n)


def _time(ns: int) -> str:
    from tcplab.units import format_time

    return format_time(ns)


def check_limits(sc: Scenario, error: ErrorFn, flow_count: int) -> None:
    """Report every value out of the engine's range, and a run over its memory limit.

    ``error(path, problem, expected, value)`` records one problem; ``flow_count`` is the
    number of engine flows with time series: every connection after ``count:`` and app
    expansion, except a broadcast's (``sample: false``, as the engine's estimate counts).
    """
    if sc.duration > MAX_DURATION_NS:
        error(
            ("duration",),
            f"{_time(sc.duration)} is longer than a year",
            "a duration of at most 31622400s (366 days)",
            sc.duration,
        )
    for i, link in enumerate(sc.links):
        sides: list[tuple[tuple, Any]] = [((), link)]
        if link.reverse is not None:
            sides.append((("reverse",), link.reverse))
        for sub, side in sides:
            if side.delay is not None and side.delay > MAX_DELAY_NS:
                error(
                    ("links", i, *sub, "delay"),
                    f"{_time(side.delay)} is longer than an hour",
                    "a delay of at most 3600s",
                    side.delay,
                )
            if side.rate is not None and side.rate > MAX_RATE_BPS:
                error(
                    ("links", i, *sub, "rate"),
                    f"{side.rate} bit/s is above 1 Pbit/s",
                    "a rate of at most 1000Tbit",
                    side.rate,
                )
            if side.reorder is not None and side.reorder.delay > MAX_DELAY_NS:
                error(
                    ("links", i, *sub, "reorder", "delay"),
                    f"{_time(side.reorder.delay)} is longer than an hour",
                    "a delay of at most 3600s",
                    side.reorder.delay,
                )
    for name, host in sc.hosts.items():
        if host.sysctl.tcp_comp_sack_delay_ns > MAX_DELAY_NS:
            error(
                ("hosts", name, "sysctl", "tcp_comp_sack_delay_ns"),
                f"{host.sysctl.tcp_comp_sack_delay_ns} ns is longer than an hour",
                "at most 3600000000000",
                host.sysctl.tcp_comp_sack_delay_ns,
            )
    for i, flow in enumerate(sc.flows):
        if flow.stop is not None and flow.stop > MAX_DURATION_NS:
            error(
                ("flows", i, "stop"),
                f"{_time(flow.stop)} is later than a year",
                "a time of at most 31622400s (366 days)",
                flow.stop,
            )
        tcp = flow.tcp
        if tcp.rto_min is not None and tcp.rto_min > RTO_MAX_NS:
            error(
                ("flows", i, "tcp", "rto_min"),
                f"{_time(tcp.rto_min)} is above TCP_RTO_MAX (120s)",
                "an rto_min from 1ms to 120s",
                tcp.rto_min,
            )
        if tcp.tcp_comp_sack_delay_ns is not None and tcp.tcp_comp_sack_delay_ns > MAX_DELAY_NS:
            error(
                ("flows", i, "tcp", "tcp_comp_sack_delay_ns"),
                f"{tcp.tcp_comp_sack_delay_ns} ns is longer than an hour",
                "at most 3600000000000",
                tcp.tcp_comp_sack_delay_ns,
            )
        if tcp.fq_pacing:
            error(
                ("flows", i, "tcp", "fq_pacing"),
                "true is not a per-flow setting: a socket leaves pacing to fq when fq is the qdisc of its "
                "host's device (SK_PACING_FQ), not by a per-flow switch",
                "false; to pace with fq, give the sending host qdisc: fq",
                True,
            )
    links = 2 * len(sc.links) + 2 * len(sc.pods)
    rows = sample_rows(sc.duration, sc.sample_interval)
    need = series_bytes(rows, flow_count, links)
    limit = sc.limits.memory
    if need > limit:
        error(
            ("sample_interval",),
            f"{_time(sc.sample_interval)} over a {_time(sc.duration)} run keeps {rows} samples of "
            f"{plural(flow_count, 'flow')} and {plural(links, 'one-way link')}, about {human_bytes(need)}, "
            f"above the memory limit of {_limit(limit)} (limits.memory)",
            "a longer sample_interval, a shorter duration, or a larger limits.memory such as 16GiB",
            sc.sample_interval,
        )

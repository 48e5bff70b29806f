"""The bounds of every application field, as the engine's ``validate()`` checks them.

Python checks each ``app:`` field against the same bounds as the engine
(``crates/tcplab-core/src/app/{rr,hls,nfs,batch_writer,broadcast}.rs``: ``validate()``), so
that a scenario Python accepts is never refused by the engine, and a mistake is reported in
the user's units at its YAML path (``file:LINE`` or ``--set:``) before anything runs. The
engine states the same bounds as data (``tcplab._core.bounds()``, from
``crates/tcplab-core/src/app/bounds.rs``, whose tests hold them to ``validate()``);
``tests/test_app_bounds.py`` compares these tables with it both ways (every engine bound is
here with the same limits, and every bound here is the engine's), and
``tests/test_scenario_app_checks.py`` feeds the edge values Python accepts to the engine's
validate.

A bound is a number or the name of another field of the same app (``retry_max`` at least
``retry_min``, broadcast ``window`` at most ``interval``, hls ``startup_buffer`` at most
``max_buffer``); such a pair is reported at the key the user wrote (at the first of the two
when both are written, at the written one when the other is the default).
"""

from __future__ import annotations

from typing import Any

from tcplab.errors import UnitError, show_value
from tcplab.units import format_rate, format_size, format_time

#: The engine's ``MAX_DELAY_NS`` (one hour) and ``MAX_DURATION_NS`` (366 days).
HOUR_NS = 3600 * 10**9
MAX_DURATION_NS = 366 * 24 * HOUR_NS
MS_NS = 10**6
#: nfs.rs: ``PAGE_BYTES`` (READ sizes are whole pages) and ``NFS_MAX_FILE_IO_SIZE``.
PAGE_BYTES = 4096
NFS_MAX_FILE_IO_SIZE = 1 << 20
#: hls.rs: a profile's bitrate from 1 kbit/s to 1 Tbit/s.
PROFILE_BITRATE_BPS = (1_000, 10**12)

Bound = int | float | str | None
#: kind -> engine field -> (low, high): inclusive bounds; ``None`` is unbounded; a str is
#: another field of the app.
RANGES: dict[str, dict[str, tuple[Bound, Bound]]] = {
    "rr": {"request_bytes": (1, 1 << 40), "response_bytes": (1, 1 << 40), "think_ns": (0, HOUR_NS)},
    "hls": {
        "segment_ns": (MS_NS, HOUR_NS),
        "segments": (1, None),
        "playlist_bytes": (1, 1 << 30),
        "request_bytes": (1, 1 << 20),
        "response_header_bytes": (0, 1 << 20),
        "start_estimate_bps": (1, 10**12),
        "fast_half_life_ns": (0, HOUR_NS),
        "slow_half_life_ns": (0, HOUR_NS),
        "bw_factor": (0.0, 100.0),
        "bw_up_factor": (0.0, 100.0),
        "max_starvation_delay_ns": (0, HOUR_NS),
        "max_max_buffer_ns": (MS_NS, 24 * HOUR_NS),
        "max_buffer_ns": (MS_NS, "max_max_buffer_ns"),
        "max_buffer_size_bytes": (0, 1 << 40),
        "startup_buffer_ns": (0, "max_buffer_ns"),
        "tick_ns": (MS_NS, 10 * 10**9),
    },
    "nfs_stream": {
        "rsize_bytes": (PAGE_BYTES, NFS_MAX_FILE_IO_SIZE),
        # at most 1 GiB: the window's READs are issued at once (nfs.rs: validate()).
        "readahead_bytes": (PAGE_BYTES, 1 << 30),
        "bitrate_bps": (1, 10**12),
        "file_bytes": (1, 1 << 50),
        "max_buffer_ns": (1, HOUR_NS),
        "startup_buffer_ns": (1, "max_buffer_ns"),
        "call_bytes": (1, 1 << 20),
        "reply_header_bytes": (0, 1 << 20),
        "service_ns": (0, HOUR_NS),
    },
    "batch_writer": {
        "body_bytes": (1, 1 << 40),
        "request_header_bytes": (0, 1 << 40),
        "response_bytes": (1, 1 << 40),
        # at least 1 ms: each batch is a timer event and a queue entry (batch_writer.rs).
        "interval_ns": (MS_NS, HOUR_NS),
        "timeout_ns": (1, HOUR_NS),
        "retry_min_ns": (1, HOUR_NS),
        "retry_max_ns": ("retry_min_ns", HOUR_NS),
        "jitter_max_ns": (0, HOUR_NS),
        "jitter": (0.0, 1.0),
    },
    "broadcast": {
        "message_bytes": (1, 1 << 40),
        "interval_ns": (MS_NS, HOUR_NS),
        "window_ns": (0, "interval_ns"),
        "first_burst_ns": (0, MAX_DURATION_NS),
        "bursts": (1, None),
    },
}
#: Fields whose low bound is exclusive (hls's ``bw_factor`` is in (0, 100]).
EXCLUSIVE_LOW = {"bw_factor", "bw_up_factor"}
#: Fractions (``10%`` or 0.1).
FRACTIONS = {"jitter"}
#: Sizes that must be whole pages (nfs.rs: READs of whole pages).
PAGE_MULTIPLES = {"rsize_bytes", "readahead_bytes"}
#: Fields taking one of a few names (serde enum variants, snake_case).
CHOICES: dict[str, dict[str, tuple[str, ...]]] = {"batch_writer": {"overflow": ("drop_oldest", "drop_newest")}}


def _key(field: str) -> str:
    for suffix in ("_ns", "_bps", "_bytes"):
        if field.endswith(suffix):
            return field[: -len(suffix)]
    return field


def show(field: str, value: Any) -> str:
    """``value`` of engine field ``field`` in the user's units (``1ms``, ``1Kbit``, ``4KiB``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if field.endswith("_ns"):
        return format_time(int(value))
    if field.endswith("_bps"):
        return format_rate(int(value))
    if field.endswith("_bytes"):
        if value >= 1 << 40 and value % (1 << 40) == 0:
            return f"{value >> 40}TiB"
        return format_size(int(value))
    return f"{value:g}"


def expected(field: str, lo: Bound, hi: Bound, values: dict[str, Any] | None = None) -> str:
    """What ``field`` takes, in the user's units; a bound naming another field says its value."""

    def bound(b: Bound) -> str:
        if isinstance(b, str):
            now = f" ({show(b, values[b])})" if values and b in values else ""
            return f"{_key(b)}{now}"
        return show(field, b)

    what = {"_ns": "a time", "_bps": "a rate", "_bytes": "a size"}.get(
        next((s for s in ("_ns", "_bps", "_bytes") if field.endswith(s)), ""), "a number"
    )
    if field in PAGE_MULTIPLES:
        what = f"a multiple of {PAGE_BYTES} bytes"
    if field in FRACTIONS:
        return f"a fraction from {bound(lo)} to {bound(hi)} (0% to 100%)"
    if hi is None:
        return f"{what} of at least {bound(lo)}"
    if field in EXCLUSIVE_LOW:
        return f"{what} above {bound(lo)}, at most {bound(hi)}"
    return f"{what} from {bound(lo)} to {bound(hi)}"


def field_expected(kind: str, field: str) -> str | None:
    """The expected text of a field with a range (for parse errors: a negative ``rsize``)."""
    lo, hi = RANGES.get(kind, {}).get(field, (None, None))
    if lo is None and hi is None:
        return None
    return expected(field, lo, hi, None)


def profile_bitrate_expected() -> str:
    return expected("bitrate_bps", *PROFILE_BITRATE_BPS)


def check_profile_bitrate(raw: Any, bps: int) -> None:
    lo, hi = PROFILE_BITRATE_BPS
    if not lo <= bps <= hi:
        raise UnitError(f"{show_value(raw)} is out of range", profile_bitrate_expected(), raw)


def check_bounds(
    kind: str, body: dict[str, Any], params: dict[str, Any], defaults: dict[str, Any], failed: set[str]
) -> list[UnitError]:
    """Every bound the engine checks, on the fields as the run uses them (given or default).

    ``body`` is the ``app:`` mapping as written (keys without suffix), ``params`` the parsed
    fields, ``failed`` the keys whose value did not parse (checks involving them are skipped:
    their own error is reported). Errors have the subpath of the key (``(key,)``).
    """
    values = {**defaults, **params}
    written = {f for f in params}
    errors: list[UnitError] = []

    def error(field: str, problem: str, want: str) -> None:
        key = _key(field)
        errors.append(UnitError(problem, want, body.get(key), subpath=(key,)))

    for field, (lo, hi) in RANGES.get(kind, {}).items():
        value = values.get(field)
        if value is None or _key(field) in failed:
            continue
        others = [b for b in (lo, hi) if isinstance(b, str)]
        if any(_key(o) in failed for o in others):
            continue
        low = values.get(lo) if isinstance(lo, str) else lo
        high = values.get(hi) if isinstance(hi, str) else hi
        below = low is not None and (value <= low if field in EXCLUSIVE_LOW else value < low)
        above = high is not None and value > high
        if field in PAGE_MULTIPLES and value % PAGE_BYTES:
            error(
                field,
                f"{show_value(body.get(_key(field), show(field, value)))} is not whole pages",
                expected(field, lo, hi),
            )
            continue
        if not (below or above):
            continue
        other = lo if below and isinstance(lo, str) else hi if above and isinstance(hi, str) else None
        if other is not None and field not in written and other in written:
            # the default of `field` against the user's `other`: report at what was written
            rel = "longer" if below else "shorter"
            if not (field.endswith("_ns") and other.endswith("_ns")):
                rel = "more" if below else "less"
            error(
                other,
                f"{show(other, values[other])} is {rel} than {_key(field)} ({show(field, value)}, its default)",
                f"{'at most' if below else 'at least'} {_key(field)} ({show(field, value)}), or set {_key(field)} too",
            )
            continue
        raw = body.get(_key(field), show(field, value))
        if other is not None:
            rel = ("shorter" if below else "longer") if field.endswith("_ns") else ("less" if below else "more")
            problem = f"{show_value(raw)} is {rel} than {_key(other)} ({show(other, values[other])})"
        else:
            problem = f"{show_value(raw)} is out of range"
        error(field, problem, expected(field, lo, hi, values))
    for field, choices in CHOICES.get(kind, {}).items():
        value = values.get(field)
        if field not in failed and value is not None and value not in choices:
            error(field, f"unknown {field} {show_value(value)}", "one of: " + ", ".join(choices))
    if kind == "hls" and values.get("start_profile") is not None and "profiles" not in failed:
        names = [p.get("name") for p in values.get("profiles") or []]
        start = values["start_profile"]
        if start not in names:
            error(
                "start_profile",
                f"{show_value(start)} is not a profile",
                "one of the profiles' names: " + ", ".join(str(n) for n in names) if names else "a profile's name",
            )
    return errors

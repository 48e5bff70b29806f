"""Applications: what runs over a flow's connections (the ``app:`` of a ``flows:`` entry).

The workloads
-------------
``bulk`` (the default)
    netperf TCP_STREAM: the client (``from``) always has data for the server (``to``);
    ``{bulk: {bytes: 10MB}}`` writes that many bytes then closes; ``{bulk: {bidir: true}}``
    is iperf3 ``--bidir``: two connections, ``NAME.fwd`` (client -> server) and ``NAME.rev``
    (server -> client).
``maerts``
    netperf TCP_MAERTS: the server sends to the client (``{maerts: {bytes: 10MB}}`` too).
``rr``, ``hls``, ``nfs_stream``, ``batch_writer``, ``broadcast``
    Applications of the engine (``crates/tcplab-core/src/app/``): netperf TCP_RR, an HLS
    server and hls.js-like player, an NFS client reading a media file over ``nconnect``
    connections, vmagent-like remote writes, websocket-like broadcast bursts.

Keys of an engine application
-----------------------------
A key is the engine's field name without its unit suffix, and its value is parsed by that
suffix: ``segment`` sets ``segment_ns`` (a time such as ``4s``), ``bitrate`` sets
``bitrate_bps`` (a rate such as ``3Mbit``), ``rsize`` sets ``rsize_bytes`` (a size such as
``1MiB``). Fields without a suffix are parsed by the type of their default: integers,
booleans, fractions (``jitter: 10%`` or ``0.1``); an optional field (default ``null``)
takes ``null``, a number, or a name (hls ``start_profile: HD``). The
fields and their defaults are the engine's (``tcplab._core.defaults()["apps"]``), as
:data:`APP_DEFAULTS` copies them (held equal to the engine's by ``tests/test_defaults.py``),
so a field added to an engine app is a scenario key once it is in that copy, with no other
Python edit.

Special keys: the number of connections (``parallel`` for rr, ``nconnect`` for nfs_stream,
1 to 16 as Linux's NFS client allows, ``queues`` for batch_writer, ``connections`` per sender
for broadcast; see :data:`CONNECTION_KEYS`), hls's ``profiles`` (a list of ``{name,
bitrate}``), and broadcast's ``senders`` / ``connections_per_sender``, which come from the
flow's ``from`` list and ``connections`` (see :data:`DERIVED_FIELDS`).
"""

from __future__ import annotations

import copy
import functools
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict

from tcplab.errors import UnitError, UnitErrors, show_value
from tcplab.scenario.app_bounds import check_bounds, check_profile_bitrate, field_expected, profile_bitrate_expected
from tcplab.scenario.fields import NAME_PATTERN, _did_you_mean, _parse_bool, _parse_int, _sub
from tcplab.units import parse_number, parse_rate, parse_size, parse_time

#: The applications of the engine (``AppSpec`` kinds, ``crates/tcplab-core/src/app/mod.rs``).
APP_KINDS = ("rr", "hls", "nfs_stream", "batch_writer", "broadcast")
#: Every ``app:`` workload a scenario may name.
WORKLOADS = ("bulk", "maerts", *APP_KINDS)

#: Python's copy of the engine's application defaults (``tcplab._core.defaults()["apps"]``,
#: each config's ``Default``: the real software's defaults); tests hold it equal to the
#: engine's.
APP_DEFAULTS: dict[str, dict[str, Any]] = {
    "rr": {"request_bytes": 1, "response_bytes": 1, "think_ns": 0},
    "hls": {
        "profiles": [],
        "segment_ns": 2_000_000_000,
        "segments": None,
        "playlist_bytes": 1_000,
        "request_bytes": 300,
        "response_header_bytes": 300,
        "start_profile": None,
        "start_estimate_bps": 500_000,
        "fast_half_life_ns": 3_000_000_000,
        "slow_half_life_ns": 9_000_000_000,
        "bw_factor": 0.95,
        "bw_up_factor": 0.7,
        "max_starvation_delay_ns": 4_000_000_000,
        "startup_buffer_ns": 0,
        "max_buffer_ns": 30_000_000_000,
        "max_buffer_size_bytes": 60_000_000,
        "max_max_buffer_ns": 600_000_000_000,
        "tick_ns": 100_000_000,
    },
    "nfs_stream": {
        "rsize_bytes": 1 << 20,
        "readahead_bytes": 128 << 10,
        "bitrate_bps": 80_000_000,
        "file_bytes": None,
        "startup_buffer_ns": 2_000_000_000,
        "max_buffer_ns": 30_000_000_000,
        "call_bytes": 200,
        "reply_header_bytes": 120,
        "service_ns": 0,
    },
    "batch_writer": {
        "body_bytes": 54_766,
        "request_header_bytes": 250,
        "response_bytes": 150,
        "interval_ns": 1_000_000_000,
        "timeout_ns": 60_000_000_000,
        "retry_min_ns": 1_000_000_000,
        "retry_max_ns": 60_000_000_000,
        "jitter": 0.1,
        "jitter_max_ns": 10_000_000_000,
        "max_pending": 0,
        "overflow": "drop_oldest",
    },
    "broadcast": {
        "senders": 1,
        "connections_per_sender": 1,
        "message_bytes": 1_000,
        "window_ns": 10_000_000,
        "interval_ns": 1_000_000_000,
        "first_burst_ns": 2_000_000_000,
        "bursts": None,
    },
}

#: Most connections one workload may open (per sender for broadcast): far above the
#: stories' 10 000 per sender, far below what would only exhaust memory.
MAX_CONNECTIONS = 1_000_000
#: The key that sets an application's number of connections, and its range. Linux v6.12
#: fs/nfs/fs_context.c: nfs_fs_parse_param(): ``nconnect`` from 1 to NFS_MAX_CONNECTIONS (16).
CONNECTION_KEYS: dict[str, tuple[str, int, int]] = {
    "rr": ("parallel", 1, MAX_CONNECTIONS),
    "nfs_stream": ("nconnect", 1, 16),
    "batch_writer": ("queues", 1, MAX_CONNECTIONS),
    "broadcast": ("connections", 1, MAX_CONNECTIONS),
}
#: Engine fields that Python fills in from other keys (never written in ``app:``).
DERIVED_FIELDS: dict[str, dict[str, str]] = {
    "broadcast": {
        "senders": "the number of hosts in the flow's from list",
        "connections_per_sender": "connections",
    },
}
#: Fields that must not be zero (a segment of 0 s plays nothing); others may be 0 (a think
#: time, a header size). The engine checks its own bounds again.
POSITIVE_FIELDS = {
    "request_bytes",
    "response_bytes",
    "segment_ns",
    "rsize_bytes",
    "readahead_bytes",
    "bitrate_bps",
    "body_bytes",
    "interval_ns",
    "timeout_ns",
    "message_bytes",
    "max_buffer_ns",
    "start_estimate_bps",
    "segments",
    "bursts",
    "file_bytes",
}
#: Unit suffixes of engine field names, and what a value of each is.
UNIT_SUFFIXES = {"_ns": "time", "_bps": "rate", "_bytes": "size"}
#: The keys of one hls profile (``app/hls.rs``: ``Profile``).
PROFILE_KEYS = {"name": "name", "bitrate": "bitrate_bps"}

APP_EXPECTED = (
    "bulk, maerts, or a mapping such as {bulk: {bytes: 10MB}}, {rr: {request: 1B}}, {hls: {profiles: [...]}}, "
    "{nfs_stream: {nconnect: 4}}, {batch_writer: {body: 54766B}} or {broadcast: {connections: 100}}"
)
#: The most a ``bulk_bytes`` app may write (the engine's bound: sequence arithmetic stays far
#: from u64 overflow).
MAX_APP_BYTES = 1 << 60


@functools.cache
def engine_app_defaults() -> dict[str, dict[str, Any]]:
    """The engine's application defaults, as ``tcplab._core.defaults()["apps"]`` gives them:
    :data:`APP_DEFAULTS` (held equal to the engine's by ``tests/test_defaults.py``; the schema
    sits below the engine's bridge and does not import the engine), in the engine's order,
    kinds and fields by name (the order of an app spec's keys in the configuration)."""
    return {kind: copy.deepcopy(dict(sorted(APP_DEFAULTS[kind].items()))) for kind in sorted(APP_DEFAULTS)}


def _unit_of(field: str) -> str | None:
    return next((unit for suffix, unit in UNIT_SUFFIXES.items() if field.endswith(suffix)), None)


def _key_of(field: str) -> str:
    """The scenario key of an engine field: its name without the unit suffix."""
    for suffix in UNIT_SUFFIXES:
        if field.endswith(suffix):
            return field[: -len(suffix)]
    return field


def app_keys(kind: str) -> dict[str, str]:
    """Scenario key -> engine field for ``kind`` (connection keys map to themselves)."""
    derived = DERIVED_FIELDS.get(kind, {})
    keys = {_key_of(f): f for f in engine_app_defaults().get(kind, {}) if f not in derived}
    if kind in CONNECTION_KEYS:
        keys[CONNECTION_KEYS[kind][0]] = CONNECTION_KEYS[kind][0]
    return keys


class AppSpec(BaseModel):
    """A parsed ``app:`` value.

    ``kind`` is ``bulk`` (``bytes`` None: always data), ``maerts`` (bulk from the server) or
    an engine application; ``connections`` its connections (per sender for broadcast),
    ``params`` the engine fields the scenario sets (engine names, engine units).
    """

    model_config = ConfigDict(frozen=True)
    kind: Literal["bulk", "maerts", "rr", "hls", "nfs_stream", "batch_writer", "broadcast"]
    bytes: int | None = None
    bidir: bool = False
    connections: int = 1
    params: dict[str, Any] = {}

    @property
    def is_engine_app(self) -> bool:
        return self.kind in APP_KINDS

    def to_core(self) -> dict[str, Any]:
        """The engine's per-flow ``app``: bulk (optionally of ``bytes``), or driven by an app."""
        if self.is_engine_app:
            return {"kind": "driven"}
        if self.bytes is None:
            return {"kind": "bulk"}
        return {"kind": "bulk_bytes", "bytes": self.bytes}

    def spec_to_core(self, senders: int = 1) -> dict[str, Any]:
        """The engine's ``AppSpec``: every field of the engine's config, defaults filled in."""
        spec: dict[str, Any] = {"kind": self.kind}
        spec.update(engine_app_defaults().get(self.kind, {}))
        spec.update(self.params)
        if self.kind == "broadcast":
            spec["senders"] = senders
            spec["connections_per_sender"] = self.connections
        return spec

    def value(self, field: str) -> Any:
        """An engine field as the run uses it (given, else the engine's default)."""
        if field in self.params:
            return self.params[field]
        return engine_app_defaults().get(self.kind, {}).get(field)


# -- parsing ----------------------------------------------------------------------------


def _parse_fraction(value: Any) -> float:
    """A fraction: ``0.1`` or ``10%``."""
    expected = "a fraction such as 0.1 or 10%"
    if isinstance(value, bool) or value is None:
        raise UnitError(f"{show_value(value)} is not a fraction", expected, value)
    text = value.strip() if isinstance(value, str) else value
    percent = isinstance(text, str) and text.endswith("%")
    number = parse_number(text[:-1] if percent else text, "a fraction", expected)
    if percent:
        number = number / Decimal(100)
    if number < 0:
        raise UnitError(f"{show_value(value)} is negative", expected, value)
    return float(number)


def _to_int(text: str) -> int | None:
    try:
        return int(parse_number(text))
    except UnitError:
        return None


def _parse_field(field: str, default: Any, value: Any, expected: str | None = None) -> Any:
    """One engine field's value, parsed by the field's unit suffix or its default's type;
    ``expected`` (the field's range, :mod:`~tcplab.scenario.app_bounds`) replaces the
    parser's own "expected" (``rsize: -1MiB`` expects a multiple of 4096 bytes from 4KiB)."""
    try:
        return _parse_field_as_typed(field, default, value)
    except UnitError as e:
        if expected is None:
            raise
        raise UnitError(e.problem, expected, e.value, subpath=e.subpath) from None


def _parse_field_as_typed(field: str, default: Any, value: Any) -> Any:
    unit = _unit_of(field)
    positive = field in POSITIVE_FIELDS
    if value is None and default is None:
        return None  # an optional field left to its meaning of "none" (as long as the run)
    if unit == "time":
        return parse_time(value, allow_zero=not positive)
    if unit == "rate":
        return parse_rate(value, allow_zero=not positive)
    if unit == "size":
        return parse_size(value, allow_zero=not positive)
    if isinstance(default, bool):
        return _parse_bool(value)
    if isinstance(default, float):
        return _parse_fraction(value)
    if isinstance(default, str):
        if not isinstance(value, str):
            raise UnitError(f"{show_value(value)} is not text", "a string", value)
        return value
    if default is None and isinstance(value, str) and _to_int(value) is None:
        return value  # an optional name (hls start_profile: HD): the engine checks it
    if isinstance(default, int) or default is None:
        return _parse_int(1 if positive else 0)(value)
    return value  # lists and mappings without a rule here: the engine checks them


def _parse_profiles(value: Any) -> list[dict[str, Any]]:
    """hls's ladder: a list of ``{name, bitrate}``; every problem of every entry is reported
    (as :class:`UnitErrors`), each at its own path."""
    expected = "a list of profiles such as [{name: HD, bitrate: 3Mbit}, {name: low, bitrate: 800kbit}]"
    if not isinstance(value, list):
        raise UnitError(f"{show_value(value)} is not a list of profiles", expected, value)
    if not value:
        raise UnitError("an empty profile ladder", expected, value)
    out = []
    errors: list[UnitError] = []
    seen: dict[str, int] = {}
    for i, entry in enumerate(value):
        if not isinstance(entry, dict):
            errors.append(
                UnitError(
                    f"{show_value(entry)} is not a profile",
                    "a mapping such as {name: HD, bitrate: 3Mbit}",
                    entry,
                    subpath=(i,),
                )
            )
            continue
        for key in entry:
            if key not in PROFILE_KEYS:
                errors.append(
                    UnitError(
                        f"unknown key {show_value(key)}{_did_you_mean(key, list(PROFILE_KEYS))}",
                        "one of: " + ", ".join(PROFILE_KEYS),
                        key,
                        subpath=(i, str(key)),
                    )
                )
        for key in PROFILE_KEYS:
            if key not in entry:
                errors.append(
                    UnitError(
                        "missing", "a name and a bitrate such as {name: HD, bitrate: 3Mbit}", None, subpath=(i, key)
                    )
                )
        name = entry.get("name")
        if "name" in entry and (not isinstance(name, str) or not NAME_PATTERN.match(name)):
            errors.append(
                UnitError(
                    f"{show_value(name)} is not a valid profile name",
                    "letters, digits, '_', '.' or '-'",
                    name,
                    subpath=(i, "name"),
                )
            )
        elif isinstance(name, str) and name in seen:
            errors.append(
                UnitError(
                    f"duplicate profile name {show_value(name)} (also profiles.{seen[name]})",
                    "unique profile names",
                    name,
                    subpath=(i, "name"),
                )
            )
        elif isinstance(name, str):
            seen[name] = i
        bitrate = None
        if "bitrate" in entry:
            try:
                bitrate = parse_rate(entry["bitrate"], allow_zero=False)
                check_profile_bitrate(entry["bitrate"], bitrate)
            except UnitError as e:
                errors.append(UnitError(e.problem, profile_bitrate_expected(), e.value, subpath=(i, "bitrate")))
        out.append({"name": name, "bitrate_bps": bitrate})
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise UnitErrors(errors)
    return out


def _parse_engine_app(kind: str, body: Any) -> AppSpec:
    if body is None:
        body = {}
    if not isinstance(body, dict):
        raise UnitError(
            f"{show_value(body)} is not a mapping", f"the {kind} settings as a mapping, or {{}}", body, subpath=(kind,)
        )
    keys = app_keys(kind)
    defaults = engine_app_defaults().get(kind, {})
    connections = 1
    params: dict[str, Any] = {}
    errors: list[UnitError] = []
    for key, value in body.items():
        at = (kind, str(key))
        if kind in DERIVED_FIELDS and key in DERIVED_FIELDS[kind]:
            errors.append(
                UnitError(
                    f"{show_value(key)} is not set here", f"it comes from {DERIVED_FIELDS[kind][key]}", key, subpath=at
                )
            )
            continue
        if key not in keys:
            errors.append(
                UnitError(
                    f"unknown key {show_value(key)}{_did_you_mean(key, list(keys))}",
                    "one of: " + ", ".join(sorted(keys)),
                    key,
                    subpath=at,
                )
            )
            continue
        field = keys[key]
        try:
            if kind in CONNECTION_KEYS and key == CONNECTION_KEYS[kind][0]:
                _, lo, hi = CONNECTION_KEYS[kind]
                connections = _parse_int(lo, hi)(value)
            elif field == "profiles":
                params[field] = _parse_profiles(value)
            else:
                params[field] = _parse_field(field, defaults.get(field), value, field_expected(kind, field))
        except UnitErrors as e:
            errors.extend(_sub(one, *at) for one in e.errors)
        except UnitError as e:
            errors.append(_sub(e, *at))
    failed = {str(e.subpath[1]) for e in errors if len(e.subpath) > 1}
    errors.extend(_sub(e, kind) for e in check_bounds(kind, body, params, defaults, failed))
    # No ladder written at all (a ladder written but wrong has its own error above).
    if kind == "hls" and "profiles" not in body and not defaults.get("profiles"):
        errors.append(
            UnitError(
                "no profiles",
                "a ladder such as profiles: [{name: HD, bitrate: 3Mbit}, {name: low, bitrate: 800kbit}]",
                None,
                subpath=(kind, "profiles"),
            )
        )
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise UnitErrors(errors)
    return AppSpec(kind=kind, connections=connections, params=params)  # type: ignore[arg-type]


def _parse_bulk(kind: str, body: Any) -> AppSpec:
    allowed = ("bytes", "bidir") if kind == "bulk" else ("bytes",)
    example = "{bytes: 10MB, bidir: true}" if kind == "bulk" else "{bytes: 10MB}"
    if body is None or body == {}:
        return AppSpec(kind=kind)  # type: ignore[arg-type]
    if not isinstance(body, dict):
        raise UnitError(f"{show_value(body)} is not a mapping", example, body, subpath=(kind,))
    for key in body:
        if key not in allowed:
            raise UnitError(
                f"unknown key {show_value(key)}{_did_you_mean(key, list(allowed))}",
                "one of: " + ", ".join(allowed),
                key,
                subpath=(kind, str(key)),
            )
    size = None
    if "bytes" in body:
        try:
            size = parse_size(body["bytes"], allow_zero=False)
        except UnitError as e:
            raise _sub(e, kind, "bytes") from None
        if size > MAX_APP_BYTES:
            raise UnitError(
                f"{show_value(body['bytes'])} is too large",
                "at most 1EiB (2^60 bytes)",
                body["bytes"],
                subpath=(kind, "bytes"),
            )
    bidir = False
    if "bidir" in body:
        try:
            bidir = _parse_bool(body["bidir"])
        except UnitError as e:
            raise _sub(e, kind, "bidir") from None
    return AppSpec(kind=kind, bytes=size, bidir=bidir)  # type: ignore[arg-type]


def _parse_app(value: Any) -> AppSpec:
    if isinstance(value, AppSpec):
        return value
    if value is None:
        return AppSpec(kind="bulk")
    if isinstance(value, str):
        if value in ("bulk", "maerts"):
            return AppSpec(kind=value)  # type: ignore[arg-type]
        if value in APP_KINDS:
            return _parse_engine_app(value, {})
        raise UnitError(f"unknown app {show_value(value)}{_did_you_mean(value, list(WORKLOADS))}", APP_EXPECTED, value)
    if not isinstance(value, dict) or len(value) != 1:
        raise UnitError(f"{show_value(value)} is not an app", "one workload: " + APP_EXPECTED, value)
    kind, body = next(iter(value.items()))
    if kind in ("bulk", "maerts"):
        return _parse_bulk(kind, body)
    if kind in APP_KINDS:
        return _parse_engine_app(kind, body)
    raise UnitError(
        f"unknown app {show_value(kind)}{_did_you_mean(kind, list(WORKLOADS))}",
        "one of: " + ", ".join(WORKLOADS),
        kind,
        subpath=(str(kind),),
    )


App = Annotated[AppSpec, BeforeValidator(_parse_app)]

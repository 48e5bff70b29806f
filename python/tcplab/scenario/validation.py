"""The entry point: a plain dict -> a :class:`Scenario`, or a :class:`ScenarioError`.

pydantic's errors are converted into ScenarioErrors naming the field path, the value and
what was expected; every problem found is kept (not just the first), each with the line of
its field in the file when a line map is given (:func:`tcplab.loader.node_lines`), in file
order.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from tcplab.errors import ScenarioError, ScenarioWarning, UnitError, UnitErrors, show_value
from tcplab.scenario.apps import APP_KINDS, app_keys
from tcplab.scenario.base import UnknownKey
from tcplab.scenario.checks import check_flows, check_nodes, partial_view
from tcplab.scenario.model import Scenario
from tcplab.units import parse_tc_size, rate_unit_warning


def validate_scenario(
    data: Mapping[str, Any], file: str = "", *, lines: Mapping[tuple[str, ...], int] | None = None
) -> Scenario:
    """Validate a plain dict (already parsed and overridden) into a :class:`Scenario`.

    ``lines`` maps field paths to their line in ``file`` (errors then say ``file:LINE``).
    """
    if not isinstance(data, Mapping):
        raise ScenarioError(
            f"the top level is {show_value(data) if not isinstance(data, list) else 'a list'}",
            file=file,
            expected="a mapping with keys such as name, duration, hosts, links, flows",
        )
    try:
        scenario = Scenario.model_validate(dict(data))
    except ValidationError as exc:
        raise _convert(exc, file, lines or {}, data) from None
    except RecursionError:  # data nested absurdly deep (the loader refuses it earlier, with the limit)
        raise ScenarioError(
            "nested too deeply to validate", file=file, expected="a scenario nested a few levels deep"
        ) from None
    scenario._warnings = collect_warnings(data, file, lines or {})
    for path, message in scenario._app_warnings:
        dotted = ".".join(str(p) for p in path)
        scenario._warnings.append(ScenarioWarning(message, file=file, path=dotted, lineno=line_of(dotted, lines or {})))
    return scenario


#: Rate parameters of qdiscs (tbf, fq) and of a NIC's allowance, read in tc's units.
QDISC_RATE_KEYS = ("rate", "peakrate", "maxrate", "low_rate_threshold")


def _rate_fields(data: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(dotted path, raw value) of every rate in the scenario data."""
    out: list[tuple[str, Any]] = []

    def qdisc_rates(path: str, queue: Any) -> None:
        if isinstance(queue, Mapping):
            for key in QDISC_RATE_KEYS:
                if key in queue:
                    out.append((f"{path}.{key}", queue[key]))

    links = data.get("links")
    for i, link in enumerate(links if isinstance(links, list) else []):
        if isinstance(link, Mapping):
            out.append((f"links.{i}.rate", link.get("rate")))
            qdisc_rates(f"links.{i}.queue", link.get("queue"))
            reverse = link.get("reverse")
            if isinstance(reverse, Mapping):
                out.append((f"links.{i}.reverse.rate", reverse.get("rate")))
                qdisc_rates(f"links.{i}.reverse.queue", reverse.get("queue"))
    hosts = data.get("hosts")
    for name, host in hosts.items() if isinstance(hosts, Mapping) else []:
        if isinstance(host, Mapping):
            qdisc_rates(f"hosts.{name}.qdisc", host.get("qdisc"))
            nic = host.get("nic")
            if isinstance(nic, Mapping):
                qdisc_rates(f"hosts.{name}.nic.allowance", nic.get("allowance"))
    flows = data.get("flows")
    for i, flow in enumerate(flows if isinstance(flows, list) else []):
        if not isinstance(flow, Mapping):
            continue
        tcp = flow.get("tcp")
        if isinstance(tcp, Mapping):
            out.append((f"flows.{i}.tcp.max_pacing_rate", tcp.get("max_pacing_rate")))
        reader = flow.get("reader")
        if isinstance(reader, Mapping) and "rate" in reader:
            out.append((f"flows.{i}.reader.rate", reader["rate"]))
        out.extend(_app_rate_fields(f"flows.{i}.app", flow.get("app")))
    return out


def _app_rate_fields(path: str, app: Any) -> list[tuple[str, Any]]:
    """(dotted path, raw value) of an ``app:``'s rates: every key of an engine field ending in
    ``_bps`` (hls ``start_estimate``, nfs_stream ``bitrate``) and each hls profile's bitrate."""
    if not isinstance(app, Mapping) or len(app) != 1:
        return []
    kind, body = next(iter(app.items()))
    if kind not in APP_KINDS or not isinstance(body, Mapping):
        return []
    keys = app_keys(kind)
    out = [
        (f"{path}.{kind}.{key}", value)
        for key, value in body.items()
        if isinstance(key, str) and keys.get(key, "").endswith("_bps")
    ]
    profiles = body.get("profiles") if kind == "hls" else None
    for j, profile in enumerate(profiles if isinstance(profiles, list) else []):
        if isinstance(profile, Mapping) and "bitrate" in profile:
            out.append((f"{path}.{kind}.profiles.{j}.bitrate", profile["bitrate"]))
    return out


#: Size parameters of qdiscs, read as tc reads sizes (``kbit`` is 1024 bits, in bytes).
QDISC_SIZE_KEYS = (
    "burst",
    "buffer",
    "maxburst",
    "mtu",
    "minburst",
    "limit",
    "quantum",
    "initial_quantum",
    "memory_limit",
)
_BIT_SIZE = re.compile(r"\s*([0-9.]+(?:[eE][+-]?\d+)?)\s*([kmg])bit\s*\Z", re.IGNORECASE)


def _size_fields(data: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(dotted path, raw value) of every qdisc size parameter (tbf child included)."""
    out: list[tuple[str, Any]] = []

    def sizes(path: str, queue: Any) -> None:
        if isinstance(queue, Mapping):
            out.extend((f"{path}.{key}", queue[key]) for key in QDISC_SIZE_KEYS if key in queue)
            sizes(f"{path}.child", queue.get("child"))

    links = data.get("links")
    for i, link in enumerate(links if isinstance(links, list) else []):
        if isinstance(link, Mapping):
            sizes(f"links.{i}.queue", link.get("queue"))
            reverse = link.get("reverse")
            if isinstance(reverse, Mapping):
                sizes(f"links.{i}.reverse.queue", reverse.get("queue"))
    hosts = data.get("hosts")
    for name, host in hosts.items() if isinstance(hosts, Mapping) else []:
        if isinstance(host, Mapping):
            sizes(f"hosts.{name}.qdisc", host.get("qdisc"))
    return out


def size_unit_warning(value: Any) -> str | None:
    """A note for a qdisc size written in bits (``32kbit``): tc reads it as 32 x 1024 bits =
    4096 bytes (iproute2 get_size64()), where ``32kb`` would be 32 KiB; valid, but likely a slip."""
    m = _BIT_SIZE.match(value) if isinstance(value, str) else None
    if not m:
        return None
    try:
        size = parse_tc_size(value)
    except UnitError:
        return None
    number, prefix = m.group(1), m.group(2).lower()
    return (
        f"{show_value(value)} is {number} {prefix}bit = {size} bytes in tc's units (a {prefix}bit is "
        f"1024{'^2' if prefix == 'm' else '^3' if prefix == 'g' else ''} bits); write {number}{prefix}b "
        f"for {number} {prefix.upper()}iB"
    )


def _share_fields(data: Mapping[str, Any]) -> list[tuple[str, Any]]:
    hosts = data.get("hosts")
    out = []
    for name, host in hosts.items() if isinstance(hosts, Mapping) else []:
        cpu = host.get("cpu") if isinstance(host, Mapping) else None
        if isinstance(cpu, Mapping) and "share" in cpu:
            out.append((f"hosts.{name}.cpu.share", cpu["share"]))
    return out


def share_fraction_warning(value: Any) -> str | None:
    """A CPU share written as a bare number of at most 1 (``0.35``): a bare number is percent,
    so that is 0.35 % of the CPU; the writer likely meant a fraction (35 %)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        number = float(value)
    except ValueError:  # "35%" and the like: a unit was written
        return None
    if not 0 < number <= 1:
        return None
    return (
        f"{show_value(value)} is {number:g} % of the CPU (a bare number is percent); "
        f"write {number * 100:g}% for {number * 100:g} %"
    )


def collect_warnings(data: Mapping[str, Any], file: str, lines: Mapping[tuple[str, ...], int]) -> list[ScenarioWarning]:
    """Valid values that probably mean something else than intended: rates in tc's bytes/s
    (links, qdiscs, pacing, apps, readers), qdisc sizes in bits, a CPU share that looks like a fraction."""
    warnings = []
    checks = [
        (_rate_fields, rate_unit_warning),
        (_size_fields, size_unit_warning),
        (_share_fields, share_fraction_warning),
    ]
    for fields, warning in checks:
        for path, value in fields(data):
            message = warning(value)
            if message:
                warnings.append(ScenarioWarning(message, file=file, path=path, lineno=line_of(path, lines)))
    return warnings


def line_of(path: str, lines: Mapping[tuple[str, ...], int]) -> int | None:
    """The line of field ``path`` (dotted), or of its nearest ancestor written in the file."""
    parts = tuple(path.split(".")) if path else ()
    while parts:
        if parts in lines:
            return lines[parts]
        parts = parts[:-1]
    return None


def _reference_errors(data: Mapping[str, Any], file: str, known: list[ScenarioError]) -> list[ScenarioError]:
    """Cross-reference problems among the fields that parse (see checks.partial_view), except
    at paths where a problem is already reported."""
    view = partial_view(data)
    if view is None:
        return []
    found: list[ScenarioError] = []

    def error(path: tuple, problem: str, expected: str, value: Any = None) -> None:
        found.append(
            ScenarioError(problem, file=file, path=".".join(str(p) for p in path), value=value, expected=expected)
        )

    try:
        check_flows(view, error, check_nodes(view, error), topology_ok=False)
    except (AttributeError, KeyError, TypeError, IndexError):  # a shape the view did not foresee
        return []
    taken = [e.path for e in known]

    def overlaps(path: str) -> bool:
        return any(path == t or path.startswith(t + ".") or t.startswith(path + ".") for t in taken)

    return [e for e in found if not overlaps(e.path)]


#: Prefixes a sysctl key may be written with; the models strip them (hosts.Sysctl).
_KEY_PREFIXES = ("net.core.", "net/core/", "net.ipv4.", "net/ipv4/")


def _as_written(path: str, data: Mapping[str, Any] | None) -> tuple[str, ...]:
    """``path`` with each key as the user wrote it: a model strips ``net.core.`` /
    ``net.ipv4.`` from sysctl keys, so an error at ``hosts.b.sysctl.netdev_budget`` is
    reported at ``hosts.b.sysctl.net.core.netdev_budget`` when that is what ``data`` holds."""
    if not path:
        return ()
    if data is None:
        return tuple(path.split("."))
    out: list[str] = []
    node: Any = data
    for seg in path.split("."):
        written = seg
        if isinstance(node, Mapping):
            if seg not in node:
                written = next((p + seg for p in _KEY_PREFIXES if p + seg in node), seg)
            node = node.get(written)
        elif isinstance(node, list) and seg.isascii() and seg.isdigit() and len(seg) < 20 and int(seg) < len(node):
            node = node[int(seg)]
        else:
            node = None
        out.append(written)
    return tuple(out)


def _convert(
    exc: ValidationError, file: str, lines: Mapping[tuple[str, ...], int], data: Mapping[str, Any] | None = None
) -> ScenarioError:
    errors: list[ScenarioError] = []
    for err in exc.errors(include_url=False):
        loc = [p for p in err["loc"] if p != "[key]"]
        cause = (err.get("ctx") or {}).get("error")
        if isinstance(cause, UnitError):
            causes = cause.errors if isinstance(cause, UnitErrors) else [cause]
            for c in causes:
                path = ".".join(str(p) for p in [*loc, *c.subpath])
                errors.append(ScenarioError(c.problem, file=file, path=path, value=c.value, expected=c.expected))
            continue
        path = ".".join(str(p) for p in loc)
        value = err.get("input")
        if err["type"] == "missing":
            errors.append(ScenarioError("missing", file=file, path=path, expected="a value"))
        elif err["type"] == "extra_forbidden" and isinstance(value, UnknownKey):
            errors.append(ScenarioError(value.problem, file=file, path=path, value=value.key, expected=value.expected))
        elif err["type"] == "extra_forbidden":
            errors.append(
                ScenarioError(
                    f"unknown key {show_value(str(loc[-1]))}", file=file, path=path, value=value, expected="a known key"
                )
            )
        elif err["type"] in ("list_type", "dict_type", "tuple_type"):
            kind = {"list_type": "a list", "dict_type": "a mapping", "tuple_type": "a list"}[err["type"]]
            errors.append(
                ScenarioError(f"{show_value(value)} is not {kind}", file=file, path=path, value=value, expected=kind)
            )
        elif err["type"] == "string_type":
            errors.append(
                ScenarioError(
                    f"{show_value(value)} is not text", file=file, path=path, value=value, expected="a string"
                )
            )
        else:
            msg = err["msg"]
            errors.append(ScenarioError(f"{show_value(value)}: {msg}", file=file, path=path, value=value))
    if data is not None:
        errors.extend(_reference_errors(data, file, errors))
    for e in errors:
        parts = _as_written(e.path, data)
        e.path = ".".join(parts)
        e.lineno = next((lines[parts[:n]] for n in range(len(parts), 0, -1) if parts[:n] in lines), None)
        e.args = (e.line(),)
    # File order (errors without a line last, in pydantic's field order).
    errors.sort(key=lambda e: (e.lineno is None, e.lineno or 0))
    first = errors[0]
    return ScenarioError(
        first.problem,
        file=first.file,
        path=first.path,
        value=first.value,
        expected=first.expected,
        errors=errors,
        lineno=first.lineno,
    )

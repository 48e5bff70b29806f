"""Queueing disciplines: ``tc -s qdisc`` text and ``tc -s -j qdisc`` JSON.

The model (iproute2 ``tc/tc_util.c``, ``q_tbf.c``, ``q_fq.c``, ``q_fq_codel.c``, ``q_htb.c``):
a record starts with a line ``qdisc KIND HANDLE: [dev DEV] root|parent P [refcnt N]
OPTIONS``, followed by the common statistics::

     Sent <bytes> bytes <pkts> pkt (dropped <n>, overlimits <n> requeues <n>)
     backlog <size>b <n>p requeues <n>

and the kind's extended statistics (xstats) on further indented lines as ``name value``
pairs (fq: ``flows``, ``inactive``, ``throttled`` -- flows now waiting, stored here as
``throttled_flows`` --, ``gc``, ``highprio``, ``throttled`` -- cumulative throttle events --,
``latency``, ``flows_plimit``, ``horizon_drops``...; fq_codel: ``maxpacket``,
``drop_overlimit``, ``new_flow_count``, ``ecn_mark``...). The JSON form carries the same
names as keys. Values with units (``12.3us``, ``1514b``, ``10Mbit``) are kept as text in
``options`` and converted to numbers in ``xstats`` where they have a unit we know.

``mq`` (and ``mqprio``) show the *sum* of their children's statistics: rules must not count
both, so :attr:`Qdisc.is_aggregate` marks them. For ``tbf``, ``overlimits`` counts packets
that had to wait for tokens (shaping, no loss) and ``dropped`` counts queue overflow.

Units. The text prints options scaled for people (``rate 10Mbit``, ``burst 32Kb``, ``lat 4s``);
``tc -j`` prints the same names as bare numbers in the kernel's base units, which differ by
option (iproute2 ``tc_print_rate()``: bytes per second; ``print_size()``: bytes;
``print_time()``: microseconds, tc's time unit; ``sprint_time64()`` and fq's xstats:
nanoseconds): tbf ``rate 1250000`` is 10 Mbit/s and ``lat 4000000`` is 4 s. Both forms become
:attr:`Qdisc.params`, named with their unit (``rate_bps`` in bits per second, ``burst_bytes``,
``lat_ns``), by the table :data:`OPTION_UNITS`; :attr:`Qdisc.options` keeps what was printed.
The common statistics and the xstats are already in base units in both forms (bytes, packets,
nanoseconds: the text's ``latency 12.3us`` is read as 12300 ns, the JSON's ``latency 12300``).
fq prints the xstat ``throttled`` twice (the flows waiting now, then the throttle events); the
first is kept as ``throttled_flows`` in both forms.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from tcplab.diagnose.source import (
    Evidence,
    JsonPairs,
    ParseError,
    Source,
    iter_lines,
    load_json_pairs,
    parse_tc_rate,
    parse_tc_size,
    parse_tc_time_ns,
)

__all__ = ["Qdisc", "parse_tc_text", "parse_tc_json", "AGGREGATES", "OPTION_UNITS"]

AGGREGATES = frozenset({"mq", "mqprio", "multiq"})
_SENT = re.compile(
    r"Sent (\d{1,30}) bytes (\d{1,30}) pkts? "
    r"\(dropped (\d{1,30}), overlimits (\d{1,30}) requeues (\d{1,30})\)"
)
_BACKLOG = re.compile(r"backlog (\S+) (\d{1,30})p requeues (\d{1,30})")
_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")
_VALUE = re.compile(r"-?\d+(?:\.\d+)?[A-Za-zµ]*\Z")

#: Options with a unit, by qdisc kind: the kind of quantity and, for ``tc -j``, the base unit
#: its bare number is in (iproute2 ``tc/q_tbf.c: tbf_print_opt()``, ``q_fq.c: fq_print_opt()``,
#: ``q_fq_codel.c: fq_codel_print_opt()``, ``q_fifo.c``, ``q_htb.c``, ``q_netem.c``).
#: ``rate``: bytes/s in JSON, ``10Mbit`` in text -> ``NAME_bps`` (bits/s); ``size``: bytes ->
#: ``NAME_bytes``; ``time_us``/``time_ns``: micro-/nanoseconds in JSON -> ``NAME_ns``.
OPTION_UNITS: dict[str, dict[str, str]] = {
    "tbf": {
        "rate": "rate",
        "peakrate": "rate",
        "burst": "size",
        "minburst": "size",
        "mtu": "size",
        "limit": "size",
        "lat": "time_us",
    },
    "fq": {
        "quantum": "size",
        "initial_quantum": "size",
        "maxrate": "rate",
        "defrate": "rate",
        "low_rate_threshold": "rate",
        "refill_delay": "time_us",
        "ce_threshold": "time_us",
        "timer_slack": "time_ns",
        "horizon": "time_us",
        "offload_horizon": "time_us",
    },
    "fq_codel": {"memory_limit": "size", "target": "time_us", "interval": "time_us", "ce_threshold": "time_us"},
    "codel": {"target": "time_us", "interval": "time_us", "ce_threshold": "time_us"},
    "bfifo": {"limit": "size"},
    "htb": {},
}
_PARAM_SUFFIX = {"rate": "_bps", "size": "_bytes", "time_us": "_ns", "time_ns": "_ns"}
#: A bare number of tc -j in the base unit -> the param's unit (bits/s, bytes, ns).
_JSON_SCALE = {"rate": 8.0, "size": 1.0, "time_us": 1000.0, "time_ns": 1.0}


@dataclass
class Qdisc:
    kind: str
    handle: str
    dev: str | None
    parent: str  # "root" or the parent handle
    options: dict[str, str] = field(default_factory=dict)
    #: Options with a unit, in base units named by it (``rate_bps``, ``burst_bytes``,
    #: ``lat_ns``): the same numbers from the text and from tc -j (module doc).
    params: dict[str, float] = field(default_factory=dict)
    stats: dict[str, float] = field(default_factory=dict)  # bytes packets drops overlimits requeues backlog qlen
    xstats: dict[str, float] = field(default_factory=dict)
    evidence: list[Evidence] = field(default_factory=list)

    @property
    def key(self) -> tuple[str | None, str, str, str]:
        # mq children all print handle "0:"; the parent (":1", ":2", ...) tells them apart
        return (self.dev, self.handle, self.kind, self.parent)

    @property
    def is_aggregate(self) -> bool:
        return self.kind in AGGREGATES

    def value(self, name: str) -> float:
        """A statistic or xstat; absent means zero (tc prints several xstats only when non-zero)."""
        if name in self.stats:
            return self.stats[name]
        return self.xstats.get(name, 0.0)

    def label(self) -> str:
        return f"{self.kind} {self.handle} dev {self.dev or '?'} {self.parent}"


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        pass
    for conv in (parse_tc_time_ns, parse_tc_size):
        v = conv(text)
        if v is not None:
            return v
    return None


def _text_param(unit: str, text: str) -> float | None:
    """A printed option value (``10Mbit``, ``32Kb``, ``4s``, ``12.3us``) in its param's unit."""
    if unit == "rate":
        return parse_tc_rate(text)
    if unit == "size":
        return parse_tc_size(text.split("/")[0])  # tc -d prints burst as SIZE/CELL
    return parse_tc_time_ns(text)


def _set_params(q: Qdisc, values: dict[str, Any], printed: bool) -> None:
    """:attr:`Qdisc.params` from option values: printed text (``printed``) or tc -j numbers."""
    for name, unit in OPTION_UNITS.get(q.kind, {}).items():
        v = values.get(name)
        if v is None or isinstance(v, bool):
            continue
        if printed or isinstance(v, str):
            num = _text_param(unit, str(v))
        elif isinstance(v, int | float):
            num = float(v) * _JSON_SCALE[unit]
        else:
            num = None
        if num is not None:
            q.params[name + _PARAM_SUFFIX[unit]] = num


def _head(tokens: list[str], file: str, lineno: int) -> Qdisc:
    if len(tokens) < 3:
        raise ParseError(file, lineno, "tc: a 'qdisc' line without kind and handle")
    q = Qdisc(kind=tokens[1], handle=tokens[2], dev=None, parent="?")
    i = 3
    while i < len(tokens):
        t = tokens[i]
        if t == "dev" and i + 1 < len(tokens):
            q.dev = tokens[i + 1]
            i += 2
        elif t == "root":
            q.parent = "root"
            i += 1
        elif t == "parent" and i + 1 < len(tokens):
            q.parent = tokens[i + 1]
            i += 2
        elif t == "refcnt" and i + 1 < len(tokens):
            i += 2
        else:
            break
    opts = tokens[i:]
    j = 0
    while j < len(opts):
        if j + 1 < len(opts) and _NAME.match(opts[j]) and _VALUE.match(opts[j + 1]):
            q.options[opts[j]] = opts[j + 1]
            j += 2
        else:
            q.options.setdefault(opts[j], "")  # a bare flag such as ecn, nopacing
            j += 1
    _set_params(q, q.options, printed=True)
    return q


def _xstats(q: Qdisc, text: str) -> None:
    tokens = text.replace("(", " ").replace(")", " ").replace(",", " ").split()
    prev = None
    i = 0
    while i + 1 < len(tokens):
        name, value = tokens[i], tokens[i + 1]
        if _NAME.match(name) and _VALUE.match(value):
            v = _number(value)
            if v is not None:
                key = name
                if name == "throttled" and prev == "inactive":
                    key = "throttled_flows"  # fq: "flows N (inactive N throttled N)"
                q.xstats[key] = v
                prev = name
                i += 2
                continue
        i += 1


def parse_tc_text(src: Source) -> list[Qdisc]:
    out: list[Qdisc] = []
    cur: Qdisc | None = None
    for lineno, text in iter_lines(src):
        t = text.strip()
        if not t:
            continue
        if text.startswith("qdisc "):
            cur = _head(text.split(), src.name, lineno)
            cur.evidence.append(Evidence(src.name, lineno, text))
            out.append(cur)
            continue
        if cur is None:
            raise ParseError(src.name, lineno, "not tc -s qdisc output (expected a line starting 'qdisc ')")
        m = _SENT.search(t)
        if m:
            for k, v in zip(("bytes", "packets", "drops", "overlimits", "requeues"), m.groups(), strict=True):
                cur.stats[k] = int(v)
            cur.evidence.append(Evidence(src.name, lineno, text))
            continue
        m = _BACKLOG.match(t)
        if m:
            size = parse_tc_size(m.group(1))
            cur.stats["backlog"] = size if size is not None else 0.0
            cur.stats["qlen"] = int(m.group(2))
            continue
        if t.startswith("Sent "):
            raise ParseError(src.name, lineno, "tc: a malformed 'Sent ... bytes ... pkt (dropped ...)' line")
        if t.startswith("rate ") and "pps" in t:
            continue  # rate estimator line
        _xstats(cur, t)
        cur.evidence.append(Evidence(src.name, lineno, text))
    return out


_STAT_KEYS = ("bytes", "packets", "drops", "overlimits", "requeues", "backlog", "qlen")


def parse_tc_json(src: Source) -> list[Qdisc]:
    """``tc -s -j qdisc``: a list of objects with the text's names as keys, numbers in base
    units (module doc). Read with the keys' order kept, for fq's two ``throttled``."""
    doc = load_json_pairs(src)
    if not isinstance(doc, list):
        raise ParseError(src.name, 1, "tc -j output is a JSON list of qdiscs")
    out: list[Qdisc] = []
    for idx, pairs in enumerate(doc):
        item = dict(pairs) if isinstance(pairs, JsonPairs) else None
        if item is None or not isinstance(item.get("kind"), str):
            raise ParseError(src.name, 1, f"tc -j: item {idx} is not a qdisc object with a 'kind'")
        q = Qdisc(
            kind=item["kind"],
            handle=str(item.get("handle", "?")),
            dev=str(item["dev"]) if item.get("dev") is not None else None,
            parent="root" if item.get("root") else str(item.get("parent", "?")),
        )
        opts = item.get("options")
        if isinstance(opts, JsonPairs):
            opt_values = dict(opts)
            q.options = {str(k): _optstr(v) for k, v in opt_values.items()}
            _set_params(q, opt_values, printed=False)
        prev = None
        for k, v in pairs:
            if isinstance(v, bool) or not isinstance(v, int | float):
                prev = k
                continue
            if k in _STAT_KEYS:
                q.stats[k] = v
            elif k == "throttled" and prev == "inactive":
                q.xstats["throttled_flows"] = v  # fq: flows (inactive N throttled N), as the text
            elif k not in ("refcnt",):
                q.xstats[k] = v
            prev = k
        q.evidence.append(Evidence(src.name, 1, f"qdisc {q.kind} {q.handle} dev {q.dev} (item {idx})"))
        out.append(q)
    return out


def _optstr(v: Any) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, list):  # an object (JsonPairs) or a list: no one value to show
        return ""
    return str(v)

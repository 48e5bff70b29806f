"""Cross-reference checks of a scenario: node names, link ends, flow endpoints and routes.

Every problem found is reported (not just the first), each with its own field path.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from tcplab.errors import UnitError, show_value
from tcplab.routing import bfs_route
from tcplab.scenario.apps import APP_KINDS, AppSpec, _parse_app
from tcplab.scenario.fields import U32_MAX, _did_you_mean, _parse_between, _parse_int, _parse_name, _t
from tcplab.scenario.flows import MAX_TOTAL_CONNECTIONS, _parse_from, connections_of, expand_flow, senders_of
from tcplab.units import format_size, parse_time

if TYPE_CHECKING:
    from tcplab.scenario.model import Scenario


def check_nodes(sc: Scenario, error: Any) -> dict[str, str]:
    """Unique node names, links between two different known nodes. Returns name -> kind."""
    if not sc.hosts:
        error(("hosts",), "no hosts", "at least two hosts such as {server: {}, client: {}}")
    kinds: dict[str, str] = {h: "host" for h in sc.hosts}
    for i, r in enumerate(sc.routers):
        if r is None:  # (a partial view: this entry did not parse)
            continue
        if r in kinds:
            error(
                ("routers", i),
                f"duplicate node name {show_value(r)} (already a {kinds[r]})",
                "node names used once",
                r,
            )
        kinds.setdefault(r, "router")
    for name in getattr(sc, "pods", None) or {}:
        if name in kinds:
            error(
                ("pods", name),
                f"duplicate node name {show_value(name)} (already a {kinds[name]})",
                "node names used once",
                name,
            )
        kinds.setdefault(name, "pod")
    known = "one of: " + ", ".join(sorted(n for n, k in kinds.items() if k != "pod"))
    for i, link in enumerate(sc.links):
        if link.between is None:
            continue
        for j, n in enumerate(link.between):
            if kinds.get(n) == "pod":
                error(
                    ("links", i, "between", j),
                    f"{show_value(n)} is a pod: its only link is the veth to its node, made for it",
                    "a host or router; link the pod's node instead",
                    n,
                )
            elif n not in kinds:
                error(
                    ("links", i, "between", j),
                    f"unknown node {show_value(n)}{_did_you_mean(n, list(kinds))}",
                    known,
                    n,
                )
        if link.between[0] == link.between[1]:
            error(
                ("links", i, "between"),
                f"link from {show_value(link.between[0])} to itself",
                "two different node names",
                list(link.between),
            )
    return kinds


def check_pods(sc: Scenario, error: Any, kinds: dict[str, str]) -> None:
    """A pod runs on a host (its node); under Cilium's Bandwidth Manager, a queue given on
    the node's uplink must be the fq Cilium installs."""
    hosts = [n for n, k in kinds.items() if k == "host"]
    managed = set()
    for name, pod in sc.pods.items():
        if pod.node not in kinds:
            error(
                ("pods", name, "node"),
                f"unknown node {show_value(pod.node)}{_did_you_mean(pod.node, hosts)}",
                "the name of a host: one of: " + ", ".join(sorted(hosts)),
                pod.node,
            )
        elif kinds[pod.node] != "host":
            error(
                ("pods", name, "node"),
                f"{show_value(pod.node)} is a {kinds[pod.node]}, not a host",
                "the name of a host (a Kubernetes node): one of: " + ", ".join(sorted(hosts)),
                pod.node,
            )
        elif pod.mode == "bandwidth-manager":
            managed.add(pod.node)
    for i, link in enumerate(sc.links):
        if link.between is None:
            continue
        for side, src in ((None, link.between[0]), ("reverse", link.between[1])):
            if src not in managed:
                continue
            over = link.reverse.queue if side and link.reverse is not None else None
            queue = over if over is not None else link.queue
            if queue is not None and queue.qdisc != "fq":
                path = ("links", i, *((side,) if over is not None else ()), "queue", "qdisc")
                error(
                    path,
                    f"{show_value(queue.qdisc)} on {src}'s device, where Cilium's Bandwidth Manager installs fq",
                    "no queue (Cilium's fq: horizon 2s, 2^15 buckets) or an fq",
                    queue.qdisc,
                )


def check_connections(sc: Scenario, error: Any) -> bool:
    """The flows expand to at most MAX_TOTAL_CONNECTIONS engine flows (checked before
    anything expands them). False, with the entry that goes over named, if not."""
    total = 0
    for i, flow in enumerate(sc.flows):
        n = connections_of(flow)
        total += n
        if total > MAX_TOTAL_CONNECTIONS:
            error(
                ("flows", i, "count"),
                f"flows.{i} brings the connections to {total} (count {flow.count} x {n // flow.count} per copy)",
                f"at most {MAX_TOTAL_CONNECTIONS} connections in a scenario",
                flow.count,
            )
            return False
    return True


def check_flows(sc: Scenario, error: Any, kinds: dict[str, str], topology_ok: bool) -> None:
    """Flows go between two different hosts, in time, with unique names, along a route."""
    if not sc.flows:
        error(("flows",), "no flows", "at least one flow such as {from: server, to: client}")
    hosts = list(sc.hosts) + list(getattr(sc, "pods", None) or [])
    host_list = "one of: " + ", ".join(sorted(hosts))
    if sum(connections_of(f) for f in sc.flows if f.count is not None) > MAX_TOTAL_CONNECTIONS:
        return  # reported by check_connections; expanding them is what would not end
    topo = sc._topology() if topology_ok else None
    names_seen: dict[tuple[str, str], int] = {}
    for i, flow in enumerate(sc.flows):
        senders = senders_of(flow)
        many = isinstance(flow.from_, (list, tuple))
        app = getattr(flow, "app", None)
        endpoints_ok = bool(senders) and flow.to is not None
        if many and app is not None and app.kind != "broadcast":
            error(
                ("flows", i, "from"),
                f"a list of senders for app {app.kind}",
                "one host name (a list only for a broadcast: its senders)",
                list(flow.from_),
            )
            endpoints_ok = False
        ends = [(("from", s) if many else ("from",), n) for s, n in enumerate(senders)]
        for key, n in [*ends, (("to",), flow.to)]:
            if n is None:
                continue
            if n not in kinds:
                error(("flows", i, *key), f"unknown host {show_value(n)}{_did_you_mean(n, hosts)}", host_list, n)
                endpoints_ok = False
            elif kinds[n] == "router":
                error(("flows", i, *key), f"{show_value(n)} is a router, not a host", host_list, n)
                endpoints_ok = False
        if endpoints_ok and flow.to in senders:
            error(
                ("flows", i, "to"),
                f"flow from {show_value(flow.to)} to itself",
                "a different host than from",
                flow.to,
            )
            endpoints_ok = False
        if flow.start is None or sc.duration is None or flow.count is None:
            continue  # (a partial view: the rest needs fields that did not parse)
        if flow.start >= sc.duration:
            error(
                ("flows", i, "start"),
                f"{_t(flow.start)} is not before the end of the run ({_t(sc.duration)})",
                "a start time before the duration",
                flow.start,
            )
        if flow.stop is not None and flow.stop <= flow.start:
            error(
                ("flows", i, "stop"),
                f"{_t(flow.stop)} is not after start ({_t(flow.start)})",
                "a stop time after start",
                flow.stop,
            )
        conns, workloads = expand_flow(i, flow)
        for what, name in [("flow", c.name) for c in conns] + [("app", w.name) for w in workloads]:
            if (what, name) in names_seen:
                error(
                    ("flows", i, "name"),
                    f"duplicate {what} name {show_value(name)} (also flows.{names_seen[what, name]})",
                    f"unique {what} names",
                    name,
                )
                break  # one report per entry (a broadcast has thousands of names)
            names_seen.setdefault((what, name), i)
        if topo is not None and endpoints_ok:
            for sender in dict.fromkeys(senders):
                src, dst = topo.index[sender], topo.index[flow.to]
                a, b = show_value(sender), show_value(flow.to)
                if bfs_route(len(topo.nodes), topo.ends, src, dst, topo.forwards) is None:
                    error(("flows", i), f"no route from {a} to {b}", "links that connect the two hosts")
                elif bfs_route(len(topo.nodes), topo.ends, dst, src, topo.forwards) is None:
                    error(("flows", i), f"no route back from {b} to {a} for ACKs", "links that connect the two hosts")


def check_queue_limits(sc: Scenario, error: Any) -> None:
    """Queue limits as resolved ("bdp" multiples included) fit the engine's u32, as tc's ``limit``.

    A limit of ``1e9bdp`` is valid YAML and a valid number, but resolves to more packets or
    bytes than a pfifo/bfifo can hold (tc: ``struct tc_fifo_qopt { __u32 limit; }``); it is
    reported here, at the queue's own path, instead of by the engine after loading.
    """
    topo = sc._topology()
    reported: set[tuple] = set()
    for j, link in enumerate(topo.links):
        queue = link.get("queue")
        if queue is None:
            continue
        limit = queue.get("limit_packets", queue.get("limit_bytes", 0))
        if limit <= U32_MAX:
            continue
        entry = sc.links[j // 2]
        reverse_queue = j % 2 == 1 and entry.reverse is not None and entry.reverse.queue is not None
        own = entry.reverse.queue if reverse_queue else entry.queue
        if own is not None:
            path = ("links", j // 2, *(("reverse",) if reverse_queue else ()), "queue", "limit")
        else:  # the sending host's qdisc (or default_qdisc, which takes no bdp limit)
            sender = entry.between[j % 2]
            own = sc.hosts[sender].egress_queue()
            path = ("hosts", sender, "qdisc", "limit")
        if path in reported:
            continue
        reported.add(path)
        unit = "packets" if "limit_packets" in queue else "bytes"
        spec = own.limit_spec()
        shown = f"{spec.value.normalize():f}" + ("bdp" if spec.unit == "bdp" else "")
        error(
            path,
            f"{show_value(shown)} is {limit} {unit} on {link['name']}, more than a queue limit holds",
            f"a limit of at most {U32_MAX} {unit} (tc's u32 limit), such as 1bdp",
            shown,
        )


def partial_view(data: Mapping[str, Any]) -> SimpleNamespace | None:
    """The names, times and counts of raw scenario data that parse, for :func:`check_nodes`
    and :func:`check_flows` when other fields do not (so a bad rate does not hide a flow to
    an unknown host). Entries that do not parse are None and are skipped; routes and queue
    limits are not checked (they need every link). None if the hosts themselves do not parse.
    """
    hosts = data.get("hosts")
    if not isinstance(hosts, Mapping) or not all(_ok(_NODE, h) is not None for h in hosts):
        return None

    def field(entry: Any, key: str, parse: Any, default: Any = None) -> Any:
        if not isinstance(entry, Mapping):
            return None
        return _ok(parse, entry[key]) if key in entry else default

    routers = data.get("routers", [])
    links = data.get("links", [])
    flows = data.get("flows", [])
    pods = data.get("pods")
    return SimpleNamespace(
        hosts=list(hosts),
        pods=[p for p in pods if _ok(_NODE, p) is not None] if isinstance(pods, Mapping) else [],
        routers=[_ok(_NODE, r) for r in routers] if isinstance(routers, list) else [],
        links=[SimpleNamespace(between=field(e, "between", _parse_between)) for e in links]
        if isinstance(links, list)
        else [],
        flows=[
            SimpleNamespace(
                from_=field(e, "from", _parse_from),
                app=field(e, "app", _parse_app_kind, AppSpec(kind="bulk")),
                to=field(e, "to", _NODE),
                start=field(e, "start", parse_time, 0),
                stop=field(e, "stop", parse_time, None),
                count=field(e, "count", _parse_int(1, 100_000), 1),
                name=field(e, "name", _parse_name("name")),
            )
            for e in flows
        ]
        if isinstance(flows, list)
        else [],
        duration=_ok(lambda v: parse_time(v, allow_zero=False), data.get("duration")),
    )


_NODE = _parse_name("node name")


def _parse_app_kind(value: Any) -> AppSpec:
    """The app, or when its settings do not parse (their errors are reported), the app of
    that kind with its defaults: a bad setting must not hide a problem elsewhere in the
    flow (``from: [a, c]`` for an rr with a typo in its settings)."""
    try:
        return _parse_app(value)
    except UnitError:
        kind = (
            value
            if isinstance(value, str)
            else next(iter(value))
            if isinstance(value, Mapping) and len(value) == 1
            else None
        )
        if kind in ("bulk", "maerts"):
            return AppSpec(kind=kind)
        if kind in APP_KINDS:
            return AppSpec(kind=kind)
        raise


def _ok(parse: Any, value: Any) -> Any:
    try:
        return parse(value)
    except (UnitError, TypeError, ValueError):
        return None


def app_warnings(sc: Scenario) -> list[tuple[tuple, str]]:
    """(path, message) of application settings that are valid but probably not meant:

    - a timeout (any ``*timeout*`` time of an app, e.g. batch_writer's ``timeout``) shorter
      than one base RTT of the path (the propagation delay there and back): every request
      would time out before its response could arrive;
    - a broadcast whose first burst comes before its last connection has started (the
      connections start over the warm-up; see :mod:`tcplab.scenario.flows`);
    - an nfs_stream readahead smaller than the rsize written (or an rsize above the
      readahead written): each READ is then the readahead's size, not rsize.
    """
    from tcplab.scenario.flows import BROADCAST_WARMUP_NS

    out: list[tuple[tuple, str]] = []
    topo = sc._topology()
    for app in topo.apps:
        i = app["entry"]
        spec = app["spec"]
        kind = spec["kind"]
        rtt = max((topo.flows[f]["base_rtt_ns"] for f in app["flows"]), default=0)
        for field, value in spec.items():
            if "timeout" in field and field.endswith("_ns") and isinstance(value, int) and value < rtt:
                out.append(
                    (
                        ("flows", i, "app", kind, field[:-3]),
                        f"{_t(value)} is shorter than one base RTT of the path ({_t(rtt)}): "
                        "every request times out before its response can arrive",
                    )
                )
        readahead, rsize = spec.get("readahead_bytes"), spec.get("rsize_bytes")
        written = sc.flows[i].app.params
        if (
            kind == "nfs_stream"
            and isinstance(readahead, int)
            and isinstance(rsize, int)
            and readahead < rsize
            and {"readahead_bytes", "rsize_bytes"} & set(written)  # both defaults: Linux's own
        ):
            # nfs.rs: a READ asks for min(rsize, what the readahead window still wants)
            key = "readahead" if "readahead_bytes" in written else "rsize"
            out.append(
                (
                    ("flows", i, "app", kind, key),
                    f"readahead {format_size(readahead)} is smaller than rsize {format_size(rsize)}: each READ "
                    f"asks for at most {format_size(readahead)} (the readahead window), not rsize",
                )
            )
        first = spec.get("first_burst_ns")
        if kind == "broadcast" and isinstance(first, int):
            last_start = max(topo.flows[f]["start_ns"] for f in app["flows"])
            if first <= last_start:
                out.append(
                    (
                        ("flows", i, "app", kind, "first_burst"),
                        f"{_t(first)} is not after the last connection's start ({_t(last_start)}; they start over "
                        f"{_t(BROADCAST_WARMUP_NS)} from start): the first burst finds some not connected",
                    )
                )
    # one report per entry and field (count: copies share their settings)
    return list(dict.fromkeys(out))


_ENGINE_PATH = re.compile(r"\bapps\.(\d+)\.spec\.(\w+)|\bflows\.(\d+)\.")


def engine_message(sc: Scenario, text: str) -> str:
    """An engine message with its config paths as the scenario's YAML paths:
    ``apps.2.spec.segment_ns`` -> ``flows.4.app.hls.segment``, ``flows.17.reader`` (an
    engine flow) -> ``flows.3.reader`` (its entry). Unknown paths are left as they are."""
    topo = sc._topology()
    entry_of = {f: i for i, flows in enumerate(topo.entry_flows) for f in flows}

    def path(m: re.Match) -> str:
        return app_path(m) if m.group(1) is not None else flow_path(m)

    def app_path(m: re.Match) -> str:
        index = int(m.group(1))
        if index >= len(topo.apps):
            return m.group(0)
        app = topo.apps[index]
        field = m.group(2)
        key = field
        for suffix in ("_ns", "_bps", "_bytes"):
            if field.endswith(suffix):
                key = field[: -len(suffix)]
        return f"flows.{app['entry']}.app.{app['spec']['kind']}.{key}"

    def flow_path(m: re.Match) -> str:
        index = int(m.group(3))
        return f"flows.{entry_of[index]}." if index in entry_of else m.group(0)

    return _ENGINE_PATH.sub(path, text)

"""A host as the diagnoser sees it: static facts plus one or more timed snapshots.

The model: inputs (files, directories, ``tcplab collect`` archives) are sniffed by content
(:mod:`tcplab.diagnose.detect`) and parsed. Facts that do not change during a capture
(sysctls, kernel release, rings, drivers, cilium status) go to the :class:`Host`; counters
that do (ss sockets, SNMP counters, NIC stats, qdisc stats, CPU ticks) go to a
:class:`Snapshot`. Which snapshot a file belongs to: the collect manifest says so; otherwise
files of the same kind are taken in order (node_exporter scrapes by their
``node_time_seconds``, others in the order given), the first to snapshot 0, the next to 1.
``ethtool -S`` does not print its device: loose files (no manifest) are taken as successive
snapshots of one unnamed device ``?``, which borrows its name and rings from a lone ``ethtool
-g`` output. Several sources of one kind in a snapshot are resolved by preference: ``nstat``/proc over
node_exporter for counters, ``tc -j`` over ``tc`` text.

A tcplab run directory (it holds the ``.tcplab-run`` marker) is one snapshot of several
simulated nodes: only its tool texts are read (``counters.txt``, ``tc-qdisc-NODE.txt``,
``ethtool-S-HOST.txt``, ``proc-stat-HOST.txt``, ``ss-tin-NODE.txt``, ``cilium-status-NODE.txt``, see
:mod:`tcplab.results.result`; the nodes' ss listings are one snapshot of all their sockets,
told apart by their addresses). Each
node's devices are named ``NODE:ethN`` so that the nodes' qdiscs and NICs stay apart (and a
finding names the node), and of several hosts' ``/proc/stat`` the one with the most steal
is diagnosed (as ``counters.txt`` gives the data sender's counters), with a note.

Two snapshots make rates: :meth:`Host.delta` is ``last - first`` of a counter (None when a
snapshot lacks it); :attr:`Host.interval_s` is the time between them when known. With one
snapshot, cumulative values since boot are all there is, and findings say so.

"Not collected" is kept apart from zero: a node_exporter scrape carries only the counters its
``--collector.netstat.fields`` filter keeps, and :meth:`Host.counter_status` tells which.
"""

from __future__ import annotations

import json
import math
import re
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import tcplab.diagnose.cilium as cilium_mod
import tcplab.diagnose.ethtool as ethtool
import tcplab.diagnose.netstat as netstat
import tcplab.diagnose.procstat as procstat
import tcplab.diagnose.ss as ss_mod
import tcplab.diagnose.sysctl as sysctl
import tcplab.diagnose.tc as tc
from tcplab.diagnose.detect import sniff
from tcplab.diagnose.prom import PromScrape, ethtool_name_from_prom, parse_prom
from tcplab.diagnose.source import READ_ERRORS, Evidence, ParseError, Source, check_regular_file
from tcplab.units import plural

__all__ = ["Snapshot", "Host", "load_host", "load_sources", "expand_inputs", "validate_manifest", "MAX_MEMBER"]

MAX_MEMBER = 256 * 1024 * 1024  # an archive member larger than this is not a capture


@dataclass
class Snapshot:
    index: int
    time: float | None = None
    sockets: list[ss_mod.Socket] | None = None
    counters: netstat.Counters | None = None
    nics: dict[str, ethtool.NicStats] = field(default_factory=dict)
    qdiscs: list[tc.Qdisc] | None = None
    cpu: procstat.CpuTimes | None = None
    sources: list[str] = field(default_factory=list)


@dataclass
class Host:
    snapshots: list[Snapshot] = field(default_factory=list)
    sysctls: sysctl.Sysctls = field(default_factory=sysctl.Sysctls)
    kernel: sysctl.Kernel | None = None
    rings: dict[str, ethtool.Rings] = field(default_factory=dict)
    drivers: dict[str, ethtool.DriverInfo] = field(default_factory=dict)
    cilium: cilium_mod.CiliumStatus | None = None
    notes: list[str] = field(default_factory=list)
    inputs: list[tuple[str, str]] = field(default_factory=list)  # (name, kind)
    #: A tcplab run directory's congestion control per sending node (summary.json flows'
    #: ``from`` -> ``cc``): what ``ss -ti`` would show on a real host, which a run lacks.
    run_flow_cc: dict[str, set[str]] = field(default_factory=dict)
    #: The node whose /proc/stat is diagnosed, when a run directory gives several.
    cpu_node: str | None = None
    #: The inputs are a tcplab run directory's (or capture's) own texts, not a real host's.
    #: Its counters start with the run, so one snapshot of them measures the whole run (a
    #: real host's count since a boot months ago says little about today).
    simulated: bool = False
    #: The simulated run's duration (summary.json), when known.
    run_duration_s: float | None = None
    #: A simulated run's hosts: the ``net.core.default_qdisc`` its scenario gives each (None:
    #: not set, so Linux's pfifo_fast), and the qdisc ``hosts.NAME.qdisc`` sets (None: none).
    run_default_qdisc: dict[str, str | None] = field(default_factory=dict)
    run_host_qdisc: dict[str, str | None] = field(default_factory=dict)

    def cumulative_window(self, since: str = "since boot") -> str:
        """What one snapshot's cumulative counters cover: ``since`` on a real host (boot, the
        qdisc's creation, the driver's load), the whole run for a simulated one."""
        if self.simulated:
            return "over the whole run" + (f" ({self.run_duration_s:g} s)" if self.run_duration_s else "")
        return since

    @property
    def first(self) -> Snapshot | None:
        return self.snapshots[0] if self.snapshots else None

    @property
    def last(self) -> Snapshot | None:
        return self.snapshots[-1] if self.snapshots else None

    @property
    def interval_s(self) -> float | None:
        if len(self.snapshots) < 2:
            return None
        a, b = self.snapshots[0].time, self.snapshots[-1].time
        return b - a if a is not None and b is not None and b > a else None

    def counter_snaps(self) -> list[Snapshot]:
        return [s for s in self.snapshots if s.counters is not None]

    def counter(self, name: str) -> float | None:
        snaps = self.counter_snaps()
        return snaps[-1].counters.values.get(name) if snaps else None

    def counter_status(self, name: str) -> str:
        """``present``, ``not collected`` (filtered out by the exporter) or ``absent`` (no such counter)."""
        snaps = self.counter_snaps()
        if not snaps:
            return "not collected"
        c = snaps[-1].counters
        if name in c.values:
            return "present"
        return "not collected" if c.collected is not None else "absent"

    def delta(self, name: str) -> float | None:
        snaps = self.counter_snaps()
        if len(snaps) < 2:
            return None
        a = snaps[0].counters.values.get(name)
        b = snaps[-1].counters.values.get(name)
        return None if a is None or b is None else b - a

    def counter_evidence(self, name: str) -> list[Evidence]:
        out = []
        snaps = self.counter_snaps()
        for s in (snaps[:1] + snaps[-1:]) if len(snaps) > 1 else snaps:
            ev = s.counters.evidence.get(name)
            if ev:
                out.append(ev)
        return out

    def cc_default(self) -> str | None:
        return self.sysctls.get("net.ipv4.tcp_congestion_control")


# ---------------------------------------------------------------- reading inputs


def _json_type(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return "a number"
    return {dict: "an object", list: "a list", str: "a string"}.get(type(value), type(value).__name__)


def _shown(value: object) -> str:
    return json.dumps(value)[:40] if not isinstance(value, dict | list) else _json_type(value)


#: What a file entry of the manifest may hold, with what each must be (only the keys the loader uses).
_HINT_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "snapshot": ((int,), "a snapshot index (integer >= 0)"),
    "time": ((int, float), "a UNIX time in seconds"),
    "device": ((str,), "an interface name"),
    "command": ((str,), "the command line"),
    "static": ((bool,), "true or false"),
}


def validate_manifest(doc: object, where: str) -> tuple[dict[str, dict], list[str]]:
    """A collect ``manifest.json`` -> (file hints by member name, notes of what was missing).

    Only the fields the loader uses are checked (others are for people and later versions);
    a wrong type is a :class:`ParseError` naming the field path, the value and what was
    expected, since an archive whose manifest lies about its members cannot be trusted to
    say which snapshot a file belongs to.
    """
    if not isinstance(doc, dict):
        raise ParseError(where, 0, f"expected a JSON object, got {_json_type(doc)}")
    files = doc.get("files", {})
    if files is None:
        files = {}
    if not isinstance(files, dict):
        raise ParseError(where, 0, f"files: expected an object of file -> hints, got {_json_type(files)}")
    out: dict[str, dict] = {}
    for name, hint in files.items():
        if not isinstance(hint, dict):
            raise ParseError(where, 0, f"files[{_shown(name)}]: expected an object of hints, got {_json_type(hint)}")
        for key, (types, expected) in _HINT_TYPES.items():
            if key not in hint or hint[key] is None:
                continue
            v = hint[key]
            ok = isinstance(v, types) and (key == "static" or not isinstance(v, bool))
            if ok and key == "snapshot":
                ok = 0 <= v < 1 << 20
            if ok and key == "time":
                ok = math.isfinite(v)
            if not ok:
                raise ParseError(where, 0, f"files[{_shown(name)}].{key}: {_shown(v)} is not {expected}")
        out[name] = dict(hint)
    missing = doc.get("missing", [])
    if missing is None:
        missing = []
    if not isinstance(missing, list):
        raise ParseError(where, 0, f"missing: expected a list of notes, got {_json_type(missing)}")
    notes = [m if isinstance(m, str) else json.dumps(m) for m in missing]
    return out, notes


def _archive_sources(path: Path) -> list[Source]:
    out: list[Source] = []
    try:
        tf = tarfile.open(path, "r:*")  # noqa: SIM115 - stays open while its members are read
    except (tarfile.TarError, OSError, EOFError) as e:
        raise ParseError(str(path), 0, f"not a readable tar.gz archive ({e})") from None
    files: dict[str, dict] = {}
    missing: list[str] = []
    try:
        every = tf.getmembers()
    except (tarfile.TarError, OSError, EOFError) as e:
        raise ParseError(str(path), 0, f"truncated or corrupt archive ({e})") from None
    members = [m for m in every if m.isfile()]
    for m in every:
        if not (m.isfile() or m.isdir() or m.issym() or m.islnk()):
            # FIFOs and devices in a tar are entries, not data: there is nothing to read
            missing.append(f"skipped {path}:{m.name}: not a regular file")
    for m in members:
        if m.name.endswith("manifest.json") and m.size < 4 * 1024 * 1024:
            where = f"{path}:{m.name}"
            try:
                f = tf.extractfile(m)
                doc = json.loads(f.read().decode("utf-8")) if f else {}
            except (ValueError, UnicodeDecodeError, RecursionError):
                raise ParseError(where, 1, "manifest.json is not valid JSON") from None
            except READ_ERRORS as e:
                raise ParseError(where, 0, f"truncated or corrupt archive ({e})") from None
            files, notes = validate_manifest(doc, where)
            missing.extend(notes)
    for m in members:
        if m.name.endswith("manifest.json"):
            continue
        if m.size == 0:
            continue  # a command that printed nothing; the manifest says why
        if m.size > MAX_MEMBER:
            raise ParseError(f"{path}:{m.name}", 0, f"archive member larger than {MAX_MEMBER // 2**20} MB")
        hint = files.get(m.name) or files.get(m.name.removeprefix("./")) or {}

        def opener(member=m):  # noqa: ANN001, ANN202
            f = tf.extractfile(member)
            if f is None:
                raise ParseError(f"{path}:{member.name}", 0, "cannot read archive member")
            return f

        hint = dict(hint)
        hint.setdefault("optional", True)
        out.append(Source(f"{path}:{m.name}", opener, m.size, hint))
    for note in missing:
        out.append(_note(note))
    return out


def _note(text: str) -> Source:
    return Source("__note__", lambda: None, 0, {"note": text})


#: A run directory's tool texts: file name -> (kind of file, node).
_RUN_TEXT = re.compile(r"(tc-qdisc|ethtool-S|proc-stat|ss-tin)-([A-Za-z0-9_.-]+)\.txt\Z")


#: ``cilium status`` of a run's node (tcplab.results.cilium).
_RUN_CILIUM = re.compile(r"cilium-status-[A-Za-z0-9_.-]+\.txt\Z")


def _is_run_dir(path: Path) -> bool:
    marker = path / ".tcplab-run"
    try:
        # "capture": a run's texts with ss as at a moment (tcplab.results.capture)
        return marker.is_file() and json.loads(marker.read_text(encoding="utf-8")).get("kind") in ("run", "capture")
    except (OSError, ValueError, AttributeError):
        return False


def _run_dir_sources(path: Path) -> list[Source]:
    """The tool texts of a tcplab run directory, with the node each belongs to as hints."""
    out: list[Source] = []
    for child in sorted(p for p in path.iterdir() if p.is_file() and not p.is_symlink()):
        if child.name == "counters.txt":
            out.append(Source.from_path(child, hint={"snapshot": 0, "optional": True}))
            continue
        if _RUN_CILIUM.match(child.name):  # cilium status of a node with Bandwidth-Manager pods
            out.append(Source.from_path(child, hint={"snapshot": 0, "optional": True}))
            continue
        m = _RUN_TEXT.match(child.name)
        if not m:
            continue  # summary, Parquet, plots, report: not tool output
        what, node = m.groups()
        hint: dict = {"snapshot": 0, "optional": True, "run_node": node}
        if what == "ethtool-S":
            hint["device"] = f"{node}:eth0"
        out.append(Source.from_path(child, hint=hint))
    return out


def expand_inputs(paths: Iterable[str | Path]) -> list[Source]:
    """Files, directories (recursively, sorted) and archives -> sources.

    Only regular files are opened: a FIFO, socket or device named on the command line is an
    error, one found in a directory is skipped with a note (``open()`` on a FIFO waits for a
    writer forever; ``/dev/zero`` never ends).
    """
    out: list[Source] = []
    for p in paths:
        path = Path(p)
        if path.is_dir() and _is_run_dir(path):
            out.extend(_run_dir_sources(path))
            continue
        if path.is_dir():
            for child in sorted(x for x in path.rglob("*") if not x.is_dir()):
                try:
                    st = check_regular_file(child)
                except ParseError as e:
                    out.append(_note(f"skipped {e}"))
                    continue
                if st.st_size > MAX_MEMBER:
                    out.append(_note(f"skipped {child}: larger than {MAX_MEMBER // 2**20} MB; not a capture"))
                    continue
                for src in expand_inputs([child]):
                    src.hint.setdefault("optional", True)  # found by listing, not named: skip if unknown
                    out.append(src)
            continue
        st = check_regular_file(path)
        if st.st_size > MAX_MEMBER:
            raise ParseError(str(path), 0, f"larger than {MAX_MEMBER // 2**20} MB; not a capture")
        src = Source.from_path(path)
        try:
            head = src.head(512)
        except OSError as e:
            raise ParseError(str(path), 0, e.strerror or str(e)) from None
        if head[:2] == b"\x1f\x8b" or (len(head) > 262 and head[257:262] == b"ustar"):
            out.extend(_archive_sources(path))
        elif path.name == "manifest.json":
            continue
        else:
            out.append(src)
    return out


def _parse(src: Source, kind: str):  # noqa: ANN202
    device = src.hint.get("device")
    if kind == "ss":
        return ss_mod.parse_ss(src)
    if kind == "proc_netstat":
        return netstat.parse_proc_netstat(src)
    if kind == "nstat_text":
        return netstat.parse_nstat_text(src)
    if kind == "nstat_json":
        return netstat.parse_nstat_json(src)
    if kind == "ethtool_stats":
        return ethtool.parse_ethtool_stats(src, device=device or "?")
    if kind == "ethtool_rings":
        r = ethtool.parse_ethtool_rings(src)
        r.device = r.device or device
        return r
    if kind == "ethtool_rings_json":
        r = ethtool.parse_ethtool_rings_json(src)
        r.device = r.device or device
        return r
    if kind == "ethtool_driver":
        return ethtool.parse_ethtool_driver(src)
    if kind == "tc_text":
        return tc.parse_tc_text(src)
    if kind == "tc_json":
        return tc.parse_tc_json(src)
    if kind == "prom":
        return parse_prom(src)
    if kind == "sysctl":
        return sysctl.parse_sysctl(src)
    if kind == "procstat":
        return procstat.parse_proc_stat(src)
    if kind == "cilium":
        return cilium_mod.parse_cilium(src)
    if kind == "uname":
        return sysctl.parse_uname(src)
    raise ParseError(src.name, 0, f"no parser for {kind}")


def _prom_to_parts(scrape: PromScrape) -> dict:
    """node_exporter samples -> the same objects the tools' parsers give."""
    parts: dict = {}
    ctr = netstat.Counters(kind="prom", collected=set())
    for (name, lbl), v in scrape.samples.items():
        if name.startswith("node_netstat_") and not lbl:
            rest = name[len("node_netstat_") :]
            prefix, _, fld = rest.partition("_")
            key = prefix + fld
            ctr.values[key] = v
            ctr.evidence[key] = scrape.evidence[(name, lbl)]
            ctr.collected.add(key)
    if ctr.values:
        parts["counters"] = ctr
    nics: dict[str, ethtool.NicStats] = {}
    for (name, lbl), v in scrape.samples.items():
        if name.startswith("node_ethtool_") and name != "node_ethtool_info":
            labels = dict(lbl)
            dev = labels.get("device", "?")
            nic = nics.setdefault(dev, ethtool.NicStats(device=dev))
            key = ethtool_name_from_prom(name)
            nic.values[key] = v
            nic.evidence[key] = scrape.evidence[(name, lbl)]
        if name == "node_ethtool_info":
            labels = dict(lbl)
            nics.setdefault(
                labels.get("device", "?"), ethtool.NicStats(device=labels.get("device"))
            ).driver = labels.get("driver")
    if nics:
        parts["nics"] = nics
    qd: dict[tuple[str, str], tc.Qdisc] = {}
    for (name, lbl), v in scrape.samples.items():
        if name.startswith("node_qdisc_"):
            labels = dict(lbl)
            q = qd.setdefault(
                (labels.get("device", "?"), labels.get("kind", "?")),
                tc.Qdisc(kind=labels.get("kind", "?"), handle="?", dev=labels.get("device"), parent="?"),
            )
            stat = name[len("node_qdisc_") :].removesuffix("_total")
            stat = {"current_queue_length": "qlen"}.get(stat, stat)
            q.stats[stat] = q.stats.get(stat, 0.0) + v  # several children of one kind on a device: summed
            q.evidence.append(scrape.evidence[(name, lbl)])
    if qd:
        parts["qdiscs"] = list(qd.values())
    steal = [(lbl, v) for (lbl, v, _e) in scrape.series("node_cpu_seconds_total")]
    if steal:
        cpu = procstat.CpuTimes()
        cpus = set()
        for lbl, v in steal:
            cpu.ticks[lbl.get("mode", "?")] = cpu.ticks.get(lbl.get("mode", "?"), 0.0) + v
            cpus.add(lbl.get("cpu"))
        cpu.ncpu = len(cpus)
        evs = [e for (lbl, _v, e) in scrape.series("node_cpu_seconds_total") if lbl.get("mode") == "steal"]
        cpu.evidence = evs[0] if evs else None
        parts["cpu"] = cpu
    return parts


def _steal_share(cpu: procstat.CpuTimes) -> float:
    return cpu.ticks.get("steal", 0.0) / cpu.total if cpu.total else 0.0


def _keys(obj) -> set:  # noqa: ANN001
    return {x.key for x in obj} if isinstance(obj, list) else set()


def _group_disjoint(items: list) -> list:
    """ss or tc files that show different sockets/qdiscs (other devices, other filters) are one
    snapshot, not successive ones: a file starts a new snapshot only when it overlaps the current."""
    out: list = []
    keys: set = set()
    for sort_key, src, (obj, t) in items:
        k = _keys(obj)
        if out and not (k & keys) and t is None:
            _sk, _src, (prev, pt) = out[-1]
            out[-1] = (_sk, _src, (prev + obj, pt))
            keys |= k
            continue
        out.append((sort_key, src, (list(obj), t)))
        keys = set(k)
    return out


def _skip_reason(problem: str) -> str:
    if problem.startswith("binary data"):
        return "binary file (not the text output of a tool)"
    return problem.split(" (")[0]


def _read_run_summary(path: Path, host: Host) -> None:
    """From a run directory's summary.json: the run's duration (every run directory and
    capture is simulated, with or without it) and the congestion control of each node's flows."""
    host.simulated = True
    try:
        summary = json.loads((path / "summary.json").read_text(encoding="utf-8"))
        flows = summary.get("flows")
    except (OSError, ValueError, AttributeError):
        return
    duration = summary.get("duration_s")
    if isinstance(duration, int | float) and not isinstance(duration, bool) and math.isfinite(duration):
        host.run_duration_s = float(duration)
    _read_run_scenario(path, host)
    for f in flows if isinstance(flows, list) else []:
        if isinstance(f, dict) and isinstance(f.get("from"), str) and isinstance(f.get("cc"), str):
            host.run_flow_cc.setdefault(f["from"], set()).add(f["cc"])


def _read_run_scenario(path: Path, host: Host) -> None:
    """Each host's qdisc settings from the run's ``scenario.yaml`` (the scenario as run): what
    a real host's ``sysctl net.core.default_qdisc`` would say. Nothing when it cannot be read."""
    from tcplab.errors import ScenarioError
    from tcplab.loader import load_scenario

    try:
        sc = load_scenario(path / "scenario.yaml")
    except (ScenarioError, OSError, ValueError):
        return
    for name, h in sc.hosts.items():
        host.run_default_qdisc[name] = h.sysctl.default_qdisc
        host.run_host_qdisc[name] = h.qdisc.qdisc if h.qdisc is not None else None


def load_host(paths: Iterable[str | Path]) -> Host:
    """Read every input; raises :class:`ParseError` for the first unusable one."""
    paths = list(paths)
    sources = expand_inputs(paths)
    where = ", ".join(str(p) for p in paths) or "<no input>"
    if not any(s.name != "__note__" for s in sources):
        raise ParseError(where, 0, "no input files" + (f" ({sources[0].hint['note']})" if sources else ""))
    host = load_sources(sources)
    for p in paths:
        if Path(p).is_dir() and _is_run_dir(Path(p)):
            _read_run_summary(Path(p), host)
    if not host.inputs:
        skipped = sum(1 for n in host.notes if n.startswith("skipped "))
        raise ParseError(
            where,
            0,
            f"no recognised capture ({plural(skipped, 'file')} skipped; first note: {host.notes[0]})"
            if host.notes
            else "no recognised capture",
        )
    return host


def load_sources(sources: list[Source]) -> Host:
    """Sniff, parse and combine already opened sources (see :func:`load_host`)."""
    host = Host()
    first_error: ParseError | None = None
    seqs: dict[tuple, list[tuple[tuple, Source, object]]] = {}
    run_cpus: list[tuple[str, Source, procstat.CpuTimes]] = []  # (node, source, ticks) of a run directory
    order = 0
    for src in sources:
        if src.name == "__note__":
            host.notes.append(src.hint["note"])
            continue
        try:
            kind = sniff(src)
        except ParseError as e:
            if src.hint.get("optional"):
                # found in a directory or archive: a run directory's PNG and Parquet files, a
                # README, an unrelated JSON are skipped with a note, not an error
                host.notes.append(f"skipped {src.name}: {_skip_reason(e.problem)}")
                continue
            raise
        if kind == "archive":
            raise ParseError(src.name, 0, "an archive inside an archive is not supported")
        try:
            obj = _parse(src, kind)
        except ParseError as e:
            if not src.hint.get("optional"):
                raise
            # one bad member of an archive or directory costs that input, not the diagnosis
            host.notes.append(f"could not read {e}")
            first_error = first_error or e
            continue
        host.inputs.append((src.name, kind))
        order += 1
        node = src.hint.get("run_node")
        if node is not None and kind == "tc_text":
            for q in obj:
                q.dev = f"{node}:{q.dev or '?'}"  # one run directory, several nodes' eth0
        if node is not None and kind == "procstat":
            run_cpus.append((str(node), src, obj))
            continue
        if getattr(obj, "note", None):
            host.notes.append(obj.note)
        if kind == "sysctl":
            host.sysctls.values.update(obj.values)
            host.sysctls.evidence.update(obj.evidence)
            continue
        if kind == "uname":
            host.kernel = obj
            continue
        if kind in ("ethtool_rings", "ethtool_rings_json"):
            host.rings[obj.device or "?"] = obj
            continue
        if kind == "ethtool_driver":
            host.drivers[src.hint.get("device") or "?"] = obj
            continue
        if kind == "cilium":
            host.cilium = obj
            continue
        if kind == "proc_netstat":
            ext = any(k.startswith(("TcpExt", "IpExt", "MPTcpExt")) for k in obj.values)
            seq = ("counters-proc", "netstat" if ext else "snmp")
        elif kind in ("nstat_text", "nstat_json"):
            seq = ("counters-nstat",)
        elif kind == "ethtool_stats":
            seq = ("nic", obj.device)
        elif kind == "tc_json":
            seq = ("tc-json",)
        elif kind == "tc_text":
            seq = ("tc-text",)
        else:
            seq = (kind,)
        snap_hint = src.hint.get("snapshot")
        t = src.hint.get("time")
        if kind == "prom":
            t = obj.time if obj.time is not None else t
        sort_key = (snap_hint if isinstance(snap_hint, int) else 1 << 30, t if isinstance(t, int | float) else 0, order)
        seqs.setdefault(seq, []).append((sort_key, src, (obj, t)))
    if run_cpus:
        node, src, cpu = max(run_cpus, key=lambda it: (_steal_share(it[2]), -run_cpus.index(it)))
        seqs.setdefault(("procstat",), []).append(((0, 0, order), src, (cpu, None)))
        host.cpu_node = node
        if len(run_cpus) > 1:
            others = ", ".join(n for n, _s, _c in run_cpus if n != node)
            host.notes.append(
                f"CPU time of {len(run_cpus)} hosts; diagnosing host '{node}' (the most steal), not {others}"
            )
    for seq in list(seqs):
        if seq[0] in ("ss", "tc-text", "tc-json"):
            seqs[seq] = _group_disjoint(sorted(seqs[seq], key=lambda it: it[0]))
    if not host.inputs and first_error is not None:
        raise first_error
    n = max((len(v) for v in seqs.values()), default=0)
    host.snapshots = [Snapshot(index=i) for i in range(n)]
    # proc netstat and snmp are two files per snapshot: separate sequences, merged here
    for seq, items in sorted(seqs.items(), key=lambda kv: str(kv[0])):
        items.sort(key=lambda it: it[0])
        offset = n - len(items)  # a shorter sequence (e.g. one sysctl-like extra) aligns to the end
        for j, (_k, src, (obj, t)) in enumerate(items):
            snap = host.snapshots[j + offset]
            snap.sources.append(src.name)
            if t is not None and snap.time is None:
                snap.time = float(t)
            if seq[0] in ("counters-proc", "counters-nstat"):
                if snap.counters is None or snap.counters.kind == "prom":
                    snap.counters = netstat.Counters(kind=obj.kind)
                snap.counters.merge(obj)
            elif seq[0] == "ss":
                snap.sockets = (snap.sockets or []) + obj
            elif seq[0] == "nic":
                snap.nics[obj.device or "?"] = obj
            elif seq[0] in ("tc-json", "tc-text"):
                if seq[0] == "tc-json" or snap.qdiscs is None:
                    snap.qdiscs = obj
            elif seq[0] == "procstat":
                snap.cpu = obj
            elif seq[0] == "prom":
                parts = _prom_to_parts(obj)
                if "counters" in parts and snap.counters is None:
                    snap.counters = parts["counters"]
                for dev, nic in parts.get("nics", {}).items():
                    snap.nics.setdefault(dev, nic)
                if "qdiscs" in parts and snap.qdiscs is None:
                    snap.qdiscs = parts["qdiscs"]
                if "cpu" in parts and snap.cpu is None:
                    snap.cpu = parts["cpu"]
    for dev, drv in host.drivers.items():
        for s in host.snapshots:
            if dev in s.nics:
                s.nics[dev].driver = drv.driver
    return host

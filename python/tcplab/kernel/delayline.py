"""tcplab's delay line: the one-way delay of a kernel-mode wire on kernels without sch_netem.

The model (ARCH11.md, "Delay and loss"): a one-way link with a delay gets a WIRE namespace
between its two nodes. The two veths of the link end in it, and the wire forwards between
them through two TUN devices, one per direction, owned by the ``tcplab-delayline`` process
(crates/tcplab-delayline). A packet the kernel routes into a TUN is read by the line, held
for the direction's ``delay_ns`` and written back into the same TUN; the kernel then routes
it out of the other veth. The routing is by input interface (policy routing)::

    node A  --veth-->  [wire ns]  ip rule iif A-side -> table T_ab: default dev tun_ab
                                  line: read tun_ab, hold delay_ab, write tun_ab
                                  main table: B's addresses via the B-side veth  --> node B

and the mirror image for B -> A. :func:`wire_commands` returns those commands (pure), for
the Testbed and for tests.

:class:`DelayLine` runs one line process in a namespace::

    line = DelayLine("tcplab-w1", [("tab", 50_000_000), ("tba", 50_000_000)], cpu=1,
                     stats_path=work / "delayline-w1.json")
    line.start()      # returns once the TUNs exist (the line printed `ready`)
    ...               # configure the TUNs (wire_commands), run traffic
    stats = line.stop()

On SIGUSR1 (:meth:`DelayLine.request_snapshot`) a line writes the counters of that moment
to ``STATS_PATH.snapshot``: kernel mode reads a marking line's there at the end of the
traffic, with every other counter.

The stats (:func:`read_stats`) are the line's own measurements per TUN: ``packets`` and
``bytes`` forwarded, ``drops`` (over the queue limit, failed writes, or dropped by the
kernel because the line read too slowly), ``queue_max_packets``, ``ce_marks`` (a marking
TUN's CE marks; absent from a line older than issue 28), and ``lateness_ns``
{p50, p99, max, count}: write time minus due time, i.e. the delay the line added beyond
``delay_ns`` after reading the packet. The line writes them every second and on SIGTERM,
so a line killed with SIGKILL still leaves its last complete stats.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tcplab.kernel.errors import KernelError

__all__ = [
    "BINARY_NAME",
    "MODULE",
    "DelayLine",
    "delayline_argv",
    "find_delayline",
    "lateness_line",
    "lateness_report",
    "REPORT_FILE",
    "parse_stats",
    "read_stats",
    "wire_commands",
]

BINARY_NAME = "tcplab-delayline"
ENV_BINARY = "TCPLAB_DELAYLINE"
READY_TIMEOUT_S = 5.0
#: The line writes its counters to ``STATS_PATH + SNAPSHOT_SUFFIX`` on SIGUSR1
#: (crates/tcplab-delayline/src/line.rs).
SNAPSHOT_SUFFIX = ".snapshot"
STOP_TIMEOUT_S = 3.0
# The longest interface name Linux accepts (IFNAMSIZ 16 minus the NUL).
MAX_IFNAME_BYTES = 15

#: The delay line as a module of the installed package (tcplab._core.delayline_main).
MODULE = "tcplab.kernel.delayline_main"

NOT_BUILT = (
    f"the delay line {BINARY_NAME} is not available: the compiled module tcplab._core has none "
    f"(reinstall tcplab: `pip install .` in its source tree) and no {BINARY_NAME} binary was found "
    f"(`cargo build --release -p {BINARY_NAME}`, as make setup does)"
)


def _repo_binary() -> Path:
    # python/tcplab/kernel/delayline.py -> the repository root is three levels above python/.
    return Path(__file__).resolve().parents[3] / "target" / "release" / BINARY_NAME


def packaged() -> bool:
    """Whether the installed compiled module carries the delay line (``delayline_main``)."""
    try:
        from tcplab import _core  # type: ignore[attr-defined]
    except ImportError:
        return False
    return callable(getattr(_core, "delayline_main", None))


def delayline_argv() -> list[str]:
    """The command that runs the delay line (its options follow): ``$TCPLAB_DELAYLINE``,
    else the source tree's ``target/release/tcplab-delayline`` (a development checkout,
    where ``cargo build -p tcplab-delayline`` is the quick rebuild), else the installed
    package's own ``python -m tcplab.kernel.delayline_main`` (what ``pip install`` gives),
    else ``tcplab-delayline`` on ``PATH``; KernelError (:data:`NOT_BUILT`) when none is."""
    env = os.environ.get(ENV_BINARY, "").strip()
    repo = _repo_binary()
    if env or (repo.is_file() and os.access(repo, os.X_OK)):
        return [str(find_delayline())]
    if packaged():
        return [sys.executable, "-m", MODULE]
    return [str(find_delayline())]


def find_delayline() -> Path:
    """The standalone ``tcplab-delayline`` binary: ``$TCPLAB_DELAYLINE``, else the
    repository's ``target/release/``, else ``PATH``; KernelError when none exists (the
    installed package's module is :func:`delayline_argv`'s)."""
    env = os.environ.get(ENV_BINARY, "").strip()
    if env:
        path = Path(env)
        if path.is_file() and os.access(path, os.X_OK):
            return path
        raise KernelError(f"${ENV_BINARY}={env}: not an executable file; expected the path of {BINARY_NAME}")
    repo = _repo_binary()
    if repo.is_file() and os.access(repo, os.X_OK):
        return repo
    found = shutil.which(BINARY_NAME)
    if found:
        return Path(found)
    raise KernelError(NOT_BUILT)


# ----------------------------------------------------------------------------- stats


_TUN_INT_KEYS = ("delay_ns", "packets", "bytes", "drops", "queue_max_packets")
_LATENESS_KEYS = ("p50", "p99", "max", "count")


def parse_stats(text: str, source: str = "delay line stats") -> dict[str, Any]:
    """The stats JSON of a line, checked against the contract (ARCH11.md); KernelError
    naming ``source`` and the first problem otherwise."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise KernelError(f"{source}: not JSON ({e})") from None

    def bad(where: str, what: str) -> KernelError:
        return KernelError(f"{source}: {where}: {what}")

    if not isinstance(data, dict) or data.get("version") != 1:
        raise bad("version", f"{data.get('version') if isinstance(data, dict) else data!r} is not 1")
    tuns = data.get("tuns")
    if not isinstance(tuns, list):
        raise bad("tuns", "missing or not a list")
    for i, tun in enumerate(tuns):
        if not isinstance(tun, dict) or not isinstance(tun.get("name"), str):
            raise bad(f"tuns.{i}.name", "missing or not a string")
        for key in _TUN_INT_KEYS:
            if not isinstance(tun.get(key), int) or tun[key] < 0:
                raise bad(f"tuns.{i}.{key}", f"{tun.get(key)!r} is not a count >= 0")
        if "ce_marks" in tun and (not isinstance(tun["ce_marks"], int) or tun["ce_marks"] < 0):
            raise bad(f"tuns.{i}.ce_marks", f"{tun['ce_marks']!r} is not a count >= 0")
        lateness = tun.get("lateness_ns")
        if not isinstance(lateness, dict):
            raise bad(f"tuns.{i}.lateness_ns", "missing or not an object")
        for key in _LATENESS_KEYS:
            if not isinstance(lateness.get(key), int) or lateness[key] < 0:
                raise bad(f"tuns.{i}.lateness_ns.{key}", f"{lateness.get(key)!r} is not a count >= 0")
    if "cpu" not in data or not (data["cpu"] is None or isinstance(data["cpu"], int)):
        raise bad("cpu", f"{data.get('cpu')!r} is not a CPU number or null")
    return data


def read_stats(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The stats file a line wrote (see :func:`parse_stats`)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise KernelError(f"cannot read the delay line stats {path}: {e.strerror or e}") from None
    return parse_stats(text, str(path))


#: The run directory's file of the delay lines' own measurements (:func:`lateness_report`).
REPORT_FILE = "delayline.json"


def lateness_report(
    delaylines: Mapping[str, Mapping[str, Any]],
    *,
    limits_ns: Mapping[str, int],
    link_names: Mapping[str, Mapping[str, str]] | None = None,
) -> dict[str, Any]:
    """The run directory's ``delayline.json`` (pure): per TUN of every line (``delaylines``:
    wire namespace -> the stats it wrote), the link it delays (``link_names``: namespace ->
    TUN -> link name), its delay, packets and bytes forwarded, drops, the deepest queue
    (packets, bytes), its CE marks and the lateness distribution (write time minus due
    time: p50, p90, p99, max, count, over_1ms; ``null`` where an older line did not record
    it), and whether it is within ``limits_ns`` (``p99``, ``max``: kernel mode's validity
    limits).
    A line that wrote no stats is listed with its error."""
    rows: list[dict[str, Any]] = []
    for ns, stats in sorted(delaylines.items()):
        if "tuns" not in stats:
            rows.append({"netns": ns, "error": str(stats.get("error", "no stats written"))})
            continue
        for tun in stats["tuns"]:
            late = dict(tun.get("lateness_ns") or {})
            p99, mx = int(late.get("p99") or 0), int(late.get("max") or 0)
            rows.append(
                {
                    "netns": ns,
                    "tun": tun.get("name"),
                    "link": (link_names or {}).get(ns, {}).get(str(tun.get("name"))),
                    "cpu": stats.get("cpu"),
                    "delay_ns": tun.get("delay_ns"),
                    "packets": tun.get("packets"),
                    "bytes": tun.get("bytes"),
                    "drops": tun.get("drops"),
                    "queue_max_packets": tun.get("queue_max_packets"),
                    "queue_max_bytes": tun.get("queue_max_bytes"),
                    "ce_marks": tun.get("ce_marks"),
                    "lateness_ns": {k: late.get(k) for k in ("p50", "p90", "p99", "max", "count", "over_1ms")},
                    "within_limits": p99 <= limits_ns["p99"] and mx <= limits_ns["max"],
                }
            )
    return {
        "version": 1,
        "lateness": "write time minus due time of each packet the line forwarded, in ns",
        "limits_ns": dict(limits_ns),
        "tuns": rows,
    }


def lateness_line(report: Mapping[str, Any]) -> str:
    """One sentence of :func:`lateness_report` for a report's first lines: per TUN, the
    link and its lateness p50/p99/max in ms, e.g. ``delay line lateness (its own, delayline.json):
    server->emu p50 0.05 / p99 0.16 / max 2.81 ms; emu->server ...``; "" without TUNs."""
    parts = []
    for row in report.get("tuns", []):
        if "error" in row:
            parts.append(f"{row['netns']}: {row['error']}")
            continue
        late = row["lateness_ns"]
        ms = " / ".join(f"{k} {(late.get(k) or 0) / 1e6:.2f}" for k in ("p50", "p99", "max"))
        parts.append(f"{row.get('link') or row['netns'] + '/' + str(row['tun'])} {ms} ms")
    return f"delay line lateness (its own, {REPORT_FILE}): " + "; ".join(parts) if parts else ""


# ----------------------------------------------------------------------------- wire set-up


def wire_commands(
    netns: str,
    dev_a: str,
    dev_b: str,
    tun_ab: str,
    tun_ba: str,
    *,
    table_ab: int = 100,
    table_ba: int = 101,
) -> list[list[str]]:
    """The commands that make the wire namespace ``netns`` forward through its delay line,
    run after the line printed ``ready`` (its TUNs exist). ``dev_a``/``dev_b``: the
    wire's veth ends towards node A and node B, already up with the wire's addresses and
    the main table's routes to each side; ``tun_ab`` carries A -> B, ``tun_ba`` B -> A.

    - forwarding on, reverse-path filtering off (a packet written into ``tun_ab`` comes
      from A's address on an interface that is not the route back to A), IPv6 off on the
      TUNs (no router solicitations through the line);
    - the TUNs up (they need no address: the routes name the device);
    - ``ip rule iif dev_a lookup table_ab`` -> ``default dev tun_ab`` (and the mirror): what
      arrives from A goes into the A -> B line; what the line writes back arrives with
      ``iif tun_ab`` and matches no rule but main, which routes it to B.
    """
    ip = ["ip", "-n", netns]
    sysctl = ["ip", "netns", "exec", netns, "sysctl", "-q", "-w"]
    return [
        [
            *sysctl,
            "net.ipv4.ip_forward=1",
            "net.ipv4.conf.all.rp_filter=0",
            "net.ipv4.conf.default.rp_filter=0",
            f"net.ipv4.conf.{tun_ab}.rp_filter=0",
            f"net.ipv4.conf.{tun_ba}.rp_filter=0",
            f"net.ipv6.conf.{tun_ab}.disable_ipv6=1",
            f"net.ipv6.conf.{tun_ba}.disable_ipv6=1",
        ],
        [*ip, "link", "set", tun_ab, "up"],
        [*ip, "link", "set", tun_ba, "up"],
        [*ip, "rule", "add", "iif", dev_a, "lookup", str(table_ab), "pref", str(table_ab)],
        [*ip, "route", "add", "default", "dev", tun_ab, "table", str(table_ab)],
        [*ip, "rule", "add", "iif", dev_b, "lookup", str(table_ba), "pref", str(table_ba)],
        [*ip, "route", "add", "default", "dev", tun_ba, "table", str(table_ba)],
    ]


# ----------------------------------------------------------------------------- the process


def tun_spec(name: str, delay_ns: int, rate_bps: int = 0, overhead_bytes: int = 0) -> str:
    """The line's ``--tun`` value: ``NAME:DELAY_NS``, or ``NAME:DELAY_NS:RATE_BPS:OVERHEAD``
    for a TUN that also serialises at a link's rate (rate 0: none)."""
    return f"{name}:{delay_ns}" + (f":{rate_bps}:{overhead_bytes}" if rate_bps else "")


class DelayLine:
    """One ``tcplab-delayline`` process in network namespace ``netns``.

    ``tuns``: (name, delay_ns) per direction, or (name, delay_ns, rate_bps, overhead_bytes)
    for a direction that also serialises its packets at a link's rate (the binary's
    ``--tun NAME:DELAY:RATE:OVERHEAD``; rate 0: none); ``ce_thresholds``: TUN name -> ns,
    the step marker of a serialising TUN (``--ce-threshold NAME:NS``: CE on every
    ECN-capable packet that waited longer for the wire; :func:`tcplab.kernel.plan.line_markers`);
    ``cpu``: the CPU it pins itself to (None:
    not pinned); ``stats_path``: where it writes its stats JSON. The process runs as
    ``ip netns exec NETNS tcplab-delayline ...`` or ``ip netns exec NETNS PYTHON -m
    tcplab.kernel.delayline_main ...`` (:func:`delayline_argv`; ip execs it, so :attr:`pid`
    is the line's own) in a process group of its own, so a Ctrl-C at the terminal reaches the
    orchestrator, which stops the line by PID. ``queue_limit_packets`` and ``rt_priority``
    (SCHED_FIFO priority, the binary's default 1; 0 = normal scheduling) are passed on
    when given.
    """

    def __init__(
        self,
        netns: str,
        tuns: Sequence[tuple[str, int] | tuple[str, int, int, int]],
        cpu: int | None,
        stats_path: str | os.PathLike[str],
        *,
        binary: str | os.PathLike[str] | None = None,
        queue_limit_packets: int | None = None,
        rt_priority: int | None = None,
        ce_thresholds: Mapping[str, int] | None = None,
    ) -> None:
        if not tuns:
            raise KernelError(f"delay line in {netns}: no TUN devices given")
        specs = [(t[0], t[1], *(t[2:4] if len(t) == 4 else (0, 0))) for t in tuns]
        names = [name for name, *_ in specs]
        for name, delay_ns, rate_bps, overhead in specs:
            if not name or len(name.encode()) > MAX_IFNAME_BYTES or not name.isascii() or "/" in name or ":" in name:
                raise KernelError(f"delay line in {netns}: {name!r} is not a usable TUN name (1 to 15 ASCII chars)")
            if not isinstance(delay_ns, int) or delay_ns < 0:
                raise KernelError(f"delay line in {netns}: TUN {name}: delay {delay_ns!r} is not a whole ns count >= 0")
            if not isinstance(rate_bps, int) or rate_bps < 0:
                raise KernelError(
                    f"delay line in {netns}: TUN {name}: rate {rate_bps!r} is not a whole bit/s count >= 0"
                )
            if not isinstance(overhead, int) or not 0 <= overhead <= 1000:
                raise KernelError(f"delay line in {netns}: TUN {name}: overhead {overhead!r} is not 0 to 1000 bytes")
        if len(set(names)) != len(names):
            raise KernelError(f"delay line in {netns}: TUN names repeat: {names}")
        rates = {name: rate_bps for name, _delay, rate_bps, _overhead in specs}
        for name, ns in (ce_thresholds or {}).items():
            if not rates.get(name):
                raise KernelError(f"delay line in {netns}: CE threshold on TUN {name}, which does not serialise")
            if not isinstance(ns, int) or ns < 1:
                raise KernelError(f"delay line in {netns}: TUN {name}: CE threshold {ns!r} is not whole ns >= 1")
        self.ce_thresholds = {name: int(ns) for name, ns in (ce_thresholds or {}).items()}
        self.netns = netns
        self.tuns = [
            (name, int(delay_ns), int(rate_bps), int(overhead)) for name, delay_ns, rate_bps, overhead in specs
        ]
        self.cpu = cpu
        self.stats_path = Path(stats_path)
        self.binary = Path(binary) if binary is not None else None
        self.queue_limit_packets = queue_limit_packets
        self.rt_priority = rt_priority
        self._proc: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        """The command line (``ip netns exec NETNS LINE --tun ... --stats ...``; LINE is
        ``binary`` when given, else :func:`delayline_argv`)."""
        line = [str(self.binary)] if self.binary is not None else delayline_argv()
        cmd = ["ip", "netns", "exec", self.netns, *line]
        for tun in self.tuns:
            cmd += ["--tun", tun_spec(*tun)]
        if self.cpu is not None:
            cmd += ["--cpu", str(self.cpu)]
        cmd += ["--stats", str(self.stats_path)]
        if self.queue_limit_packets is not None:
            cmd += ["--queue-limit", str(self.queue_limit_packets)]
        if self.rt_priority is not None:
            cmd += ["--rt-priority", str(self.rt_priority)]
        for name, ns in self.ce_thresholds.items():
            cmd += ["--ce-threshold", f"{name}:{ns}"]
        return cmd

    @property
    def pid(self) -> int | None:
        """The line's PID once started (None before)."""
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def returncode(self) -> int | None:
        """The line's exit status once it ended (negative: the signal that killed it)."""
        return self._proc.poll() if self._proc is not None else None

    def start(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Starts the line and waits until it prints ``ready`` (its TUNs exist); KernelError
        with the line's stderr if it exits or stays silent for ``timeout_s``."""
        if self._proc is not None:
            raise KernelError(f"delay line in {self.netns}: already started (pid {self._proc.pid})")
        from tcplab.kernel.processes import pdeathsig_preexec

        cmd = self.command()
        try:
            self._proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                process_group=0,
                preexec_fn=pdeathsig_preexec(),  # noqa: PLW1509 - SIGTERMed if the run is SIGKILLed
            )
        except OSError as e:
            raise KernelError(f"delay line in {self.netns}: cannot start {cmd[0]}: {e.strerror or e}") from None
        try:
            self._wait_ready(timeout_s)
        except BaseException:
            self._abort()
            self._close_pipes()
            raise

    def _wait_ready(self, timeout_s: float) -> None:
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        deadline = time.monotonic() + timeout_s
        line = b""
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            readable, _, _ = select.select([proc.stdout], [], [], max(left, 0.0))
            if not readable:
                self._abort()
                raise KernelError(
                    f"delay line in {self.netns}: no `ready` within {timeout_s:g} s{self._stderr_suffix()}"
                )
            chunk = os.read(proc.stdout.fileno(), 64)
            if not chunk:  # EOF: the line exited
                proc.wait(timeout=STOP_TIMEOUT_S)
                raise KernelError(
                    f"delay line in {self.netns} exited with code {proc.returncode} before it was ready"
                    f"{self._stderr_suffix()}"
                )
            line += chunk
        if line.strip() != b"ready":
            self._abort()
            raise KernelError(f"delay line in {self.netns}: expected `ready`, got {line.strip()[:80]!r}")

    def _stderr_suffix(self) -> str:
        """``: <the line's stderr>`` when the process has exited (one line), else ``""``."""
        proc = self._proc
        if proc is None or proc.stderr is None or proc.poll() is None:
            return ""
        text = proc.stderr.read().decode(errors="replace").strip()
        return f": {' / '.join(text.splitlines())}" if text else ""

    def _abort(self) -> None:
        """Kills a line that failed to start (SIGKILL to its process group) and reaps it."""
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=STOP_TIMEOUT_S)

    def kill(self) -> None:
        """SIGKILL (the line cannot write its final stats; its TUNs vanish with it)."""
        self._abort()
        self._close_pipes()

    @property
    def snapshot_path(self) -> Path:
        """Where the line writes its counters on SIGUSR1 (:meth:`request_snapshot`)."""
        return self.stats_path.with_name(self.stats_path.name + SNAPSHOT_SUFFIX)

    def request_snapshot(self) -> bool:
        """SIGUSR1: the line writes its counters of this moment to :attr:`snapshot_path`
        (kernel mode's end of the traffic, when every other counter is read; a line built
        before issue 28 would die of it: only lines that mark are asked, see
        :meth:`tcplab.kernel.testbed.Testbed.request_delayline_snapshots`). False when the
        line is not running."""
        if not self.running or self.pid is None:
            return False
        with contextlib.suppress(ProcessLookupError):
            self.snapshot_path.unlink(missing_ok=True)
            os.kill(self.pid, signal.SIGUSR1)
            return True
        return False

    def read_snapshot(self, timeout_s: float = 1.0) -> dict[str, Any] | None:
        """The counters the line wrote on :meth:`request_snapshot` (waiting up to
        ``timeout_s`` for the file), or None when it wrote none."""
        deadline = time.monotonic() + timeout_s
        while True:
            if self.snapshot_path.exists():
                with contextlib.suppress(KernelError):
                    return read_stats(self.snapshot_path)
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.01)

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> dict[str, Any]:
        """SIGTERM, wait up to ``timeout_s`` (then SIGKILL), and return the stats the line
        wrote (after that SIGKILL: its last periodic stats). KernelError when there are
        none, or when the line had failed (exited non-zero or was killed by someone else)."""
        proc = self._proc
        if proc is None:
            raise KernelError(f"delay line in {self.netns}: stop() before start()")
        escalated = False
        if proc.poll() is None:
            try:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self._abort()
                escalated = True
        code = proc.returncode
        stderr = self._stderr_suffix() if proc.stderr is not None else ""
        self._close_pipes()
        # The line exits 0 on SIGTERM; anything else (a crash, an error, a SIGKILL from
        # someone else) is a failure of the run. After our own SIGKILL (it did not stop in
        # time) the last periodic stats are returned.
        if code != 0 and not escalated:
            how = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with code {code}"
            raise KernelError(f"delay line in {self.netns} {how}{stderr}")
        return read_stats(self.stats_path)

    def _close_pipes(self) -> None:
        proc = self._proc
        if proc is None:
            return
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None and not pipe.closed:
                pipe.close()

    def __enter__(self) -> DelayLine:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.running:
            self.stop()
        else:
            self._close_pipes()

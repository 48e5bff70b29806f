"""The kernel-mode testbed: create a :class:`~tcplab.kernel.plan.Plan`'s namespaces, links,
routes, qdiscs, nft tables and delay lines, and remove them again.

``Testbed(plan, workdir)``:

* :meth:`Testbed.up` refuses first when any namespace of the plan exists (another run, or a
  crashed one: ``tcplab kernel cleanup --prefix P`` removes it), then creates the namespaces,
  runs the plan's commands in order, starts one delay line per wire namespace that has TUNs
  (:class:`tcplab.kernel.delayline.DelayLine`, pinned to ``delayline_cpu``, SCHED_FIFO: a
  busy machine otherwise preempts it for tens of milliseconds), waits for its
  ``ready`` and configures its TUNs. Every command run is recorded (:attr:`Testbed.log`, for
  kernel.json) with its exit status, and every process started is registered by PID.
* :meth:`Testbed.down` stops the delay lines (their stats are kept in
  :attr:`Testbed.delayline_stats`), kills the process groups it started, kills whatever still
  runs inside a namespace it created (``ip netns pids``), and deletes those namespaces (which
  removes their veths, TUNs, qdiscs and nft tables with them). Idempotent; it never touches
  a name it did not create, nor one deleted under it and made again by someone else (each
  namespace's identity, :func:`netns_id`, is recorded when it is created). A context
  manager calls it on any exit.
* :meth:`Testbed.lost`: what went away while it was up (a namespace, a delay line), for
  :mod:`tcplab.kernel.watch`.

Children are started in their own process group (so a terminal's Ctrl-C reaches only the
parent, which stops them in order) with ``PR_SET_PDEATHSIG`` = SIGTERM
(:mod:`tcplab.kernel.processes`): if the parent is killed outright (SIGKILL), they stop by
themselves; the namespaces then remain until ``tcplab kernel cleanup`` (:func:`cleanup`),
and the next run refuses until then.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tcplab.kernel.errors import KernelError
from tcplab.kernel.names import check_prefix, is_ours
from tcplab.kernel.plan import Plan
from tcplab.kernel.processes import alive, kill_group, kill_pids, spawn

__all__ = ["Testbed", "check_free", "cleanup", "list_netns", "netns_id", "netns_pids", "spawn", "kill_group"]

#: How long a command may take (ip/tc/nft/ethtool answer in milliseconds).
COMMAND_TIMEOUT_S = 20.0


def list_netns() -> list[str]:
    """The named network namespaces (``ip netns list``: ``NAME [(id: N)]`` per line)."""
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
    return [line.split()[0] for line in out.stdout.splitlines() if line.strip()]


#: Where ``ip netns`` keeps the namespaces' names (iproute2's NETNS_RUN_DIR): each a bind
#: mount of the namespace, whose inode is the namespace's (``/proc/PID/ns/net``).
NETNS_RUN_DIR = Path("/var/run/netns")


def netns_id(ns: str) -> int | None:
    """The identity of namespace ``ns`` (its inode, as ``ip netns identify`` compares them),
    or None when no namespace has that name."""
    try:
        return os.stat(NETNS_RUN_DIR / ns).st_ino
    except (FileNotFoundError, NotADirectoryError):
        return None


def netns_pids(ns: str) -> list[int]:
    """The PIDs of the processes inside namespace ``ns`` (``ip netns pids``)."""
    out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
    return [int(p) for p in out.stdout.split() if p.isdigit()]


def _remove_netns(ns: str) -> str | None:
    """Kill what runs in ``ns``, delete it; the error text, or None."""
    pids = netns_pids(ns)
    if pids:
        kill_pids(pids)
    r = subprocess.run(["ip", "netns", "del", ns], capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
    if r.returncode != 0 and ns in list_netns():
        return r.stderr.strip() or f"ip netns del {ns} failed"
    return None


def check_free(plan: Plan) -> None:
    """Raise :class:`KernelError` when a namespace ``plan`` would create exists."""
    existing = set(list_netns())
    for ns in plan.namespaces:
        if ns in existing:
            pids = netns_pids(ns)
            if pids:
                raise KernelError(
                    f"kernel: netns {ns} exists and pid {pids[0]} ({_comm(pids[0])}) runs in it: another run "
                    f"with the prefix {plan.prefix} is going on (wait for it, or give this one --prefix P)"
                )
            raise KernelError(
                f"kernel: netns {ns} exists with nothing running in it (left by a killed run: "
                f"tcplab kernel cleanup --prefix {plan.prefix})"
            )


def _comm(pid: int) -> str:
    """A process's command line for a message (``cmdline``, at most 60 characters)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            text = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"
    return text if len(text) <= 60 else text[:57] + "..."


def cleanup(prefix: str = "tcplab") -> list[str]:
    """``tcplab kernel cleanup``: remove every namespace of ``prefix`` (``{prefix}-*`` and
    ``{prefix}:*``, :func:`tcplab.kernel.names.is_ours`) and the processes inside it. Returns
    the names removed."""
    check_prefix(prefix, "kernel: prefix")
    removed = []
    errors = []
    for ns in list_netns():
        if is_ours(prefix, ns):
            err = _remove_netns(ns)
            if err:
                errors.append(f"{ns}: {err}")
            else:
                removed.append(ns)
    if errors:
        raise KernelError("kernel: cleanup failed: " + "; ".join(errors))
    return removed


def cleanup_workdirs(prefix: str = "tcplab") -> list[str]:
    """``tcplab kernel cleanup``, after :func:`cleanup`: remove the work directories
    ``$TMPDIR/{prefix}-kernel-*`` runs of this prefix left behind (a run removes its own at the
    end; a SIGKILLed one cannot). Returns the paths removed."""
    import shutil
    import tempfile

    check_prefix(prefix, "kernel: prefix")
    removed = []
    for path in sorted(Path(tempfile.gettempdir()).glob(f"{prefix}-kernel-*")):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
            if not path.exists():
                removed.append(str(path))
    return removed


class Testbed:
    """Build and tear down one plan's topology (module doc)."""

    __test__ = False  # not a pytest test class despite the name

    def __init__(self, plan: Plan, workdir: str | Path, *, delayline_cpu: int = 1):
        self.plan = plan
        self.workdir = Path(workdir)
        self.delayline_cpu = delayline_cpu
        #: Every command run: {"cmd": shell-quoted text, "rc": exit status, "t_ns": monotonic}.
        self.log: list[dict[str, Any]] = []
        #: Namespaces this testbed created (and only those are deleted), and their identity
        #: (:func:`netns_id`) when created: one deleted and made again by someone else is not ours.
        self.created: list[str] = []
        self.ns_ids: dict[str, int | None] = {}
        #: Delay lines found ended when stopped (killed from outside), one line each.
        self.ended_early: list[str] = []
        #: PIDs of the processes this testbed (or its owner, :meth:`register`) started.
        self.pids: list[int] = []
        self._procs: list[subprocess.Popen] = []
        self.delaylines: dict[str, Any] = {}
        #: the lines :meth:`stop_delaylines` stopped, by wire ns (their snapshot files stay)
        self._stopped_lines: dict[str, Any] = {}
        #: wire ns -> the delay line's stats JSON (after :meth:`down`).
        self.delayline_stats: dict[str, dict[str, Any]] = {}
        self.is_up = False
        self._down = False

    # -- commands --------------------------------------------------------------------------------
    def run(
        self, argv: Sequence[str], *, check: bool = True, input_text: str | None = None
    ) -> subprocess.CompletedProcess:
        """Run one command, record it; a failure raises :class:`KernelError` naming it."""
        text = shlex.join(argv)
        try:
            r = subprocess.run(list(argv), capture_output=True, text=True, input=input_text, timeout=COMMAND_TIMEOUT_S)
        except FileNotFoundError as e:
            self.log.append({"cmd": text, "rc": 127, "t_ns": time.monotonic_ns()})
            raise KernelError(f"kernel: {argv[0]} is not installed ({text})") from e
        except subprocess.TimeoutExpired as e:
            self.log.append({"cmd": text, "rc": -1, "t_ns": time.monotonic_ns()})
            raise KernelError(f"kernel: `{text}` did not finish in {COMMAND_TIMEOUT_S:g} s") from e
        self.log.append({"cmd": text, "rc": r.returncode, "t_ns": time.monotonic_ns()})
        if check and r.returncode != 0:
            err = " ".join((r.stderr or r.stdout).split())
            raise KernelError(f"kernel: `{' '.join(text.split())}` failed: {err}")
        return r

    def spawn(self, argv: Sequence[str], **kwargs: Any) -> subprocess.Popen:
        """Start a registered child (own process group, dies with this process)."""
        p = spawn(argv, **kwargs)
        self.log.append({"cmd": shlex.join(argv), "rc": None, "pid": p.pid, "t_ns": time.monotonic_ns()})
        self.register(p)
        return p

    def register(self, proc: subprocess.Popen | int) -> None:
        """Kill this process (group) in :meth:`down`."""
        if isinstance(proc, int):
            self.pids.append(proc)
        else:
            self._procs.append(proc)
            self.pids.append(proc.pid)

    # -- up ---------------------------------------------------------------------------------------
    def check_free(self) -> None:
        """Refuse when a namespace the plan would create exists."""
        check_free(self.plan)

    def up(self) -> None:
        """Create everything (module doc); on failure, remove what was created and raise."""
        if self.is_up or self._down:
            raise KernelError("kernel: a testbed comes up once")
        self.check_free()
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            for ns in self.plan.namespaces:
                r = self.run(["ip", "netns", "add", ns], check=False)
                if r.returncode != 0:
                    raise KernelError(
                        f"kernel: netns {ns} could not be created ({' '.join(r.stderr.split())}); "
                        f"if it exists: tcplab kernel cleanup --prefix {self.plan.prefix}"
                    )
                self.created.append(ns)
                self.ns_ids[ns] = netns_id(ns)
            nft_of = {w.ns: w.nft for w in self.plan.wires}
            for cmd in self.plan.commands:
                if cmd[:3] == ["ip", "netns", "exec"] and cmd[4:] == ["nft", "-f", "-"]:
                    self.run(cmd, input_text=nft_of[cmd[3]])
                else:
                    self.run(cmd)
            self._start_delaylines()
            self.is_up = True
        except BaseException:
            self.down()
            raise

    def _start_delaylines(self) -> None:
        wires = [w for w in self.plan.wires if w.tuns]
        if not wires:
            return
        from tcplab.kernel.delayline import DelayLine

        for w in wires:
            stats = self.workdir / w.stats_file
            line = DelayLine(
                w.ns,
                [(t.name, t.delay_ns, t.rate_bps, t.overhead_bytes) for t in w.tuns],
                self.delayline_cpu,
                stats,
                ce_thresholds={t.name: t.ce_threshold_ns for t in w.tuns if getattr(t, "ce_threshold_ns", 0)},
            )
            self.delaylines[w.ns] = line
            line.start()
            pid = getattr(line, "pid", None)
            if pid:
                self.log.append(
                    {
                        "cmd": f"delay line in {w.ns}: " + " ".join(t.spec() for t in w.tuns),
                        "rc": None,
                        "pid": pid,
                        "t_ns": time.monotonic_ns(),
                    }
                )
                self.pids.append(int(pid))
            for cmd in w.tun_commands:
                self.run(cmd)

    # -- while up ---------------------------------------------------------------------------------
    def lost(self) -> list[str]:
        """What went away under the testbed, one line each (:mod:`tcplab.kernel.watch`): a
        namespace deleted, or deleted and made again by someone else (another identity), a
        delay line that ended."""
        from tcplab.kernel.watch import exit_text

        problems: list[str] = []
        for ns in self.created:
            now = netns_id(ns)
            if now is None:
                problems.append(f"netns {ns} is gone")
            elif self.ns_ids.get(ns) not in (None, now):
                problems.append(f"netns {ns} is another namespace now")
        for ns, line in self.delaylines.items():
            if not line.running:
                problems.append(f"the delay line in {ns} ended ({exit_text(line.returncode)})")
        return problems + self.ended_early

    # -- down -------------------------------------------------------------------------------------
    def request_delayline_snapshots(self) -> list[str]:
        """SIGUSR1 to every running delay line with a step marker (a TUN with
        ``ce_threshold_ns``): each writes the counters of this moment (the end of the
        traffic, when kernel mode reads every other counter); the namespaces asked. Lines
        without a marker are not asked (a line built before issue 28 dies of SIGUSR1)."""
        marking = {w.ns for w in self.plan.wires if any(getattr(t, "ce_threshold_ns", 0) for t in w.tuns)}
        return [ns for ns, line in self.delaylines.items() if ns in marking and line.request_snapshot()]

    def delayline_snapshots(self, asked: list[str]) -> dict[str, dict[str, Any]]:
        """The counters the lines in ``asked`` wrote on :meth:`request_delayline_snapshots`
        (a line that wrote none is left out)."""
        out = {}
        for ns in asked:
            line = self.delaylines.get(ns) or self._stopped_lines.get(ns)
            snap = line.read_snapshot() if line is not None else None
            if snap is not None:
                out[ns] = snap
        return out

    def stop_delaylines(self) -> dict[str, dict[str, Any]]:
        """Stop the delay lines (SIGTERM: each writes its stats) and keep their stats; a line
        that had ended already is noted in :attr:`ended_early`."""
        from tcplab.kernel.watch import exit_text

        for ns, line in list(self.delaylines.items()):
            if not line.running:
                self.ended_early.append(f"the delay line in {ns} ended ({exit_text(line.returncode)})")
            try:
                self.delayline_stats[ns] = line.stop() or {}
            except Exception as e:  # noqa: BLE001 - a stats failure must not stop the cleanup
                self.delayline_stats[ns] = {"error": str(e)}
            self._stopped_lines[ns] = line
            del self.delaylines[ns]
        return self.delayline_stats

    def down(self) -> list[str]:
        """Remove everything this testbed created (module doc); the problems met, if any."""
        problems: list[str] = []
        try:
            self.stop_delaylines()
        except BaseException as e:  # noqa: BLE001
            problems.append(f"delay lines: {e}")
        for proc in self._procs:
            if proc.poll() is None:
                kill_group(proc.pid)
            try:
                proc.wait(timeout=1)
            except subprocess.TimeoutExpired:
                problems.append(f"process {proc.pid} did not exit")
            for pipe in (proc.stdin, proc.stdout, proc.stderr):
                if pipe is not None and not pipe.closed:
                    pipe.close()
        known = {p.pid for p in self._procs}
        for pid in self.pids:
            if pid not in known and alive(pid):
                kill_group(pid)
                if alive(pid):
                    kill_pids([pid])
        for ns in reversed(self.created):
            now = netns_id(ns)
            if now is None or self.ns_ids.get(ns) not in (None, now):
                # deleted under the run already, or made again by someone else: not ours to delete
                note = f"# netns {ns}: gone or not ours, left alone"
                self.log.append({"cmd": note, "rc": None, "t_ns": time.monotonic_ns()})
                continue
            err = _remove_netns(ns)
            if err:
                problems.append(f"{ns}: {err}")
            else:
                self.log.append({"cmd": f"ip netns del {ns}", "rc": 0, "t_ns": time.monotonic_ns()})
        self.created = [ns for ns in self.created if ns in set(list_netns())] if problems else []
        self.is_up = False
        self._down = True
        return problems

    def __enter__(self) -> Testbed:
        self.up()
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()

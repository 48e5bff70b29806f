"""``tcplab collect``: a read-only capture of a Linux host's TCP, qdisc and NIC state.

The model: a capture is ``count`` snapshots ``interval`` apart of the things that change
(``ss -tinme``, ``nstat -asz``, ``/proc/net/netstat``, ``/proc/net/snmp``, ``tc -s -j qdisc``
and ``tc -s qdisc``, ``ethtool -S DEV``, ``/proc/stat``) plus, once, the things that do not
(the relevant sysctls read from ``/proc/sys``, ``uname -r``, ``ethtool -g DEV``, ``ethtool -i
DEV`` for each physical interface, ``cilium status`` where present). Everything goes into a
``.tar.gz`` with a ``manifest.json`` saying which snapshot and device each file belongs to,
when it was taken, which command made it, and what could not be read and why.

Guarantees:

* **read-only**: only commands that show state are run; ``nstat`` gets ``-s`` so it does not
  even update its history file; sysctls are read from files, never written.
* **bounded**: every subprocess has a timeout (``--timeout``, 10 s by default), output goes
  straight to a file, and the whole run stops starting new commands past a deadline of
  ``(count - 1) * interval + 120 s``.
* **forgiving**: a missing tool, a permission error or a timeout is recorded in the manifest
  (and printed), never fatal. Works without root: what needed root is listed. A tool that
  answers "nothing to show" with a non-zero status is not an error: ``ethtool -S lo`` prints
  ``no stats available`` and exits 94 (ethtool 6.1), which is noted as "no NIC statistics"
  (:data:`NO_DATA`).
* **safe output**: the archive's path is checked before anything is captured (an existing
  file is replaced only with ``overwrite``/``--force``; a link, directory, device, FIFO or
  socket never; ``-o DIR`` puts the default name in DIR), and it is written whole, with the
  user's umask (:mod:`tcplab.output_files`); a full disk leaves nothing behind.

Floor 6 (a command's package): imports the leaves, and today
:data:`tcplab.diagnose.sysctl.RELEVANT` (the sysctls diagnose reads), an import inside floor 6
that ARCH22's table does not list yet; never the commands.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tcplab.diagnose.sysctl import RELEVANT

__all__ = ["collect", "CollectResult", "physical_interfaces"]

DEADLINE_SLACK_S = 120.0
#: (tool, option) -> (what it prints on stderr when the device has nothing to show, what that
#: means): a normal answer, recorded as a note, not as the command's error.
NO_DATA = {("ethtool", "-S"): ("no stats available", "no NIC statistics (the device exports none)")}
SYSCTL_EXTRA = ("net.core.netdev_max_backlog", "net.ipv4.tcp_mem", "net.ipv4.tcp_notsent_lowat")


@dataclass
class CollectResult:
    path: Path
    snapshots: int
    files: int
    missing: list[str] = field(default_factory=list)


def physical_interfaces(sys_net: Path = Path("/sys/class/net")) -> tuple[list[str], bool]:
    """(interfaces, physical?) -- those with a ``device`` link; else every non-loopback one."""
    try:
        names = sorted(p.name for p in sys_net.iterdir())
    except OSError:
        return [], False
    phys = [n for n in names if (sys_net / n / "device").exists()]
    if phys:
        return phys, True
    return [n for n in names if n != "lo"], False


class _Capture:
    def __init__(self, root: Path, timeout_s: float, deadline: float, log):  # noqa: ANN001
        self.root = root
        self.timeout_s = timeout_s
        self.deadline = deadline
        self.files: dict[str, dict] = {}
        self.commands: list[dict] = []
        self.missing: list[str] = []
        self.log = log
        self._absent: set[str] = set()

    def _note(self, text: str) -> None:
        if text not in self.missing:
            self.missing.append(text)
            self.log(f"note: {text}")

    def run(self, name: str, argv: list[str], hint: dict) -> None:
        tool = argv[0]
        if tool in self._absent:
            return
        if shutil.which(tool) is None:
            self._absent.add(tool)
            self._note(f"{tool}: not installed; {' '.join(argv)} and similar were skipped")
            return
        if time.monotonic() > self.deadline:
            self._note(f"{' '.join(argv)}: skipped, past the capture's deadline")
            return
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        t0 = time.monotonic()
        rec = {"file": name, "argv": argv}
        try:
            with open(path, "wb") as out:
                proc = subprocess.run(
                    argv,
                    stdout=out,
                    stderr=subprocess.PIPE,
                    stdin=subprocess.DEVNULL,
                    timeout=self.timeout_s,
                    env={**os.environ, "LC_ALL": "C"},
                    check=False,
                )
            rec["rc"] = proc.returncode
            err = proc.stderr.decode("utf-8", "replace").strip()[:500]
            no_data = NO_DATA.get((Path(tool).name, argv[1] if len(argv) > 1 else ""))
            if proc.returncode != 0 and no_data is not None and err == no_data[0]:
                rec["note"] = no_data[1]
                self._note(f"{Path(tool).name} {' '.join(argv[1:])}: {no_data[1]}")
            elif proc.returncode != 0:
                rec["error"] = err or f"exit status {proc.returncode}"
                self._note(f"{' '.join(argv)}: {rec['error'].splitlines()[0] if rec['error'] else 'failed'}")
        except subprocess.TimeoutExpired:
            rec["error"] = f"timed out after {self.timeout_s:g} s"
            self._note(f"{' '.join(argv)}: {rec['error']}")
        except OSError as e:
            rec["error"] = e.strerror or str(e)
            self._note(f"{' '.join(argv)}: {rec['error']}")
        rec["seconds"] = round(time.monotonic() - t0, 3)
        self.commands.append(rec)
        if "error" in rec and path.exists() and path.stat().st_size == 0:
            path.unlink()
            return
        self.files[name] = {**hint, "command": " ".join(argv)}

    def copy(self, name: str, src: str, hint: dict) -> None:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with open(src, "rb") as f, open(path, "wb") as out:
                shutil.copyfileobj(f, out)
        except OSError as e:
            self._note(f"{src}: {e.strerror or e}")
            return
        self.files[name] = {**hint, "command": f"cat {src}"}

    def write(self, name: str, text: str, hint: dict) -> None:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        self.files[name] = hint


def _read_sysctls(cap: _Capture) -> str:
    lines = []
    for name in RELEVANT + SYSCTL_EXTRA:
        p = Path("/proc/sys") / name.replace(".", "/")
        try:
            value = " ".join(p.read_text().split())
        except OSError as e:
            cap._note(f"sysctl {name}: {e.strerror or e}")
            continue
        lines.append(f"{name} = {value}")
    return "\n".join(lines) + "\n"


def collect(
    output: Path | None = None,
    interval_s: float = 10.0,
    count: int = 2,
    timeout_s: float = 10.0,
    log=print,  # noqa: ANN001
    *,
    overwrite: bool = False,
) -> CollectResult:
    """Capture this host; returns where the archive went and what could not be read."""
    from tcplab.output_files import check_output_file, is_directory, write_file_atomically

    if count < 1:
        raise ValueError("count must be at least 1")
    host = socket.gethostname() or "host"
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    default_name = f"tcplab-collect-{host}-{stamp}.tar.gz"
    output = Path(output) if output else Path(default_name)
    if is_directory(output):
        output = output / default_name
    check_output_file(output, overwrite=overwrite, option="--output")
    deadline = time.monotonic() + (count - 1) * interval_s + DEADLINE_SLACK_S
    with tempfile.TemporaryDirectory(prefix="tcplab-collect-") as tmp:
        root = Path(tmp)
        cap = _Capture(root, timeout_s, deadline, log)
        if os.geteuid() != 0:
            cap._note(
                "not root: ss shows no process names of other users' sockets; some ethtool -S and cilium "
                "calls may be refused (each failure is listed here)"
            )
        ifaces, physical = physical_interfaces()
        if not physical:
            cap._note(f"no physical interface found; ethtool runs on {', '.join(ifaces) or 'none'}")
        # static facts
        cap.write("static/sysctl.txt", _read_sysctls(cap), {"static": True})
        cap.write("static/uname.txt", os.uname().release + "\n", {"static": True})
        for dev in ifaces:
            cap.run(f"static/ethtool-g-{dev}.txt", ["ethtool", "-g", dev], {"device": dev, "static": True})
            cap.run(f"static/ethtool-i-{dev}.txt", ["ethtool", "-i", dev], {"device": dev, "static": True})
        if shutil.which("cilium-dbg"):
            cap.run("static/cilium-status.txt", ["cilium-dbg", "status"], {"static": True})
        elif shutil.which("cilium"):
            cap.run("static/cilium-status.txt", ["cilium", "status"], {"static": True})
        snapshots = []
        for i in range(count):
            if i:
                time.sleep(max(0.0, min(interval_s, deadline - time.monotonic())))
            t = time.time()
            snapshots.append({"index": i, "time": t})
            hint = {"snapshot": i, "time": t}
            d = f"snap-{i}"
            cap.copy(f"{d}/proc-net-netstat.txt", "/proc/net/netstat", hint)
            cap.copy(f"{d}/proc-net-snmp.txt", "/proc/net/snmp", hint)
            cap.copy(f"{d}/proc-stat.txt", "/proc/stat", hint)
            cap.run(f"{d}/ss.txt", ["ss", "-tinme"], hint)
            cap.run(f"{d}/nstat.txt", ["nstat", "-asz"], hint)
            cap.run(f"{d}/tc-qdisc.json", ["tc", "-s", "-j", "qdisc", "show"], hint)
            cap.run(f"{d}/tc-qdisc.txt", ["tc", "-s", "qdisc", "show"], hint)
            for dev in ifaces:
                cap.run(f"{d}/ethtool-S-{dev}.txt", ["ethtool", "-S", dev], {**hint, "device": dev})
        manifest = {
            "schema": "tcplab-collect/1",
            "host": host,
            "kernel": os.uname().release,
            "root": os.geteuid() == 0,
            "interval_s": interval_s,
            "snapshots": snapshots,
            "interfaces": ifaces,
            "files": cap.files,
            "commands": cap.commands,
            "missing": cap.missing,
        }
        (root / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
        write_file_atomically(output, _archive(root), overwrite=overwrite, make_parents=True, option="--output")
    return CollectResult(path=output, snapshots=count, files=len(cap.files), missing=cap.missing)


def _archive(root: Path) -> Callable[[str], None]:
    """A writer of ``root``'s files as a .tar.gz (for :func:`write_file_atomically`)."""

    def write(path: str) -> None:
        with tarfile.open(path, "w:gz") as tf:
            for p in sorted(root.rglob("*")):
                if p.is_file():
                    tf.add(p, arcname=str(p.relative_to(root)))

    return write

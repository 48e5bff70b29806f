"""What the running kernel offers a kernel-mode run: :func:`probe` -> :class:`KernelEnv`.

The probe reads, without changing anything:

* the release (``uname -r``) and the CPU count;
* ``HZ`` (the jiffy rate: delayed-ACK and RTO timers tick at it): ``CONFIG_HZ`` from
  ``/proc/config.gz`` (or ``/boot/config-RELEASE``); ``None`` when neither is readable
  (``getconf CLK_TCK`` is USER_HZ, always 100, not the kernel's HZ, so it is not used);
* the congestion controls: ``/proc/sys/net/ipv4/tcp_available_congestion_control`` (what a
  socket can ask for with ``TCP_CONGESTION`` when it has CAP_NET_ADMIN, which a root run has)
  and ``tcp_allowed_congestion_control`` (what an unprivileged socket may use);
* CUBIC's module parameters (``/sys/module/tcp_cubic/parameters``): global, so a scenario
  asking for other values cannot be run (:mod:`tcplab.kernel.plan` refuses it);
* the qdiscs: ``CONFIG_NET_SCH_*`` from the kernel config (``=y``, or ``=m`` with the module
  present under ``/lib/modules/RELEASE`` or already loaded); without a readable config, a
  probe in a scratch network namespace (``tc qdisc add dev lo root KIND``), removed at once;
  ``pfifo``, ``bfifo`` and ``pfifo_fast`` are always there (net/sched/sch_fifo.c and
  sch_generic.c are built with CONFIG_NET_SCHED);
* the tools kernel mode runs (``ip``, ``tc``, ``ss``, ``nstat``, ``nft``, ``ethtool``,
  ``ping``) and the delay line ``tcplab-delayline``.

:func:`quiet_check` measures how busy the machine is over a second (``/proc/stat`` deltas):
a VM whose CPUs are saturated stalls the emulated path (the delay line and the agents) for
tens of milliseconds, so a run on a busy machine is marked invalid rather than reported.
"""

from __future__ import annotations

import gzip
import os
import platform
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tcplab.kernel.errors import KernelError

__all__ = [
    "KernelEnv",
    "QuietReport",
    "probe",
    "require_root",
    "quiet_check",
    "load_average",
    "format_env",
    "NEEDS_ROOT",
]

#: The one line ``tcplab kernel`` prints (exit 2) when not run as root.
NEEDS_ROOT = "tcplab kernel: needs root (network namespaces, tc, nft): run it with sudo"

#: qdisc kind -> the kernel config symbol that builds it (net/sched/Kconfig).
QDISC_CONFIG = {
    "tbf": "CONFIG_NET_SCH_TBF",
    "htb": "CONFIG_NET_SCH_HTB",
    "netem": "CONFIG_NET_SCH_NETEM",
    "fq": "CONFIG_NET_SCH_FQ",
    "fq_codel": "CONFIG_NET_SCH_FQ_CODEL",
    "codel": "CONFIG_NET_SCH_CODEL",
    "sfq": "CONFIG_NET_SCH_SFQ",
    "prio": "CONFIG_NET_SCH_PRIO",
    "cake": "CONFIG_NET_SCH_CAKE",
    "pie": "CONFIG_NET_SCH_PIE",
    "ingress": "CONFIG_NET_SCH_INGRESS",
}
#: Always present with CONFIG_NET_SCHED (net/sched/sch_fifo.c, net/sched/sch_generic.c).
ALWAYS_QDISCS = ("pfifo", "bfifo", "pfifo_fast")
#: Tools kernel mode runs (iproute2, nftables, ethtool, iputils-ping).
TOOLS = ("ip", "tc", "ss", "nstat", "nft", "ethtool", "ping")
#: Over the quiet check's window: other processes may use at most this many CPUs' worth of
#: time, and steal (the hypervisor running someone else) at most this fraction.
MAX_BUSY_CPU = 0.25
MAX_STEAL_FRAC = 0.05


@dataclass
class KernelEnv:
    """The running kernel as kernel mode sees it (recorded in kernel.json)."""

    release: str
    hz: int | None
    hz_source: str
    cc_available: list[str]
    cc_allowed: list[str]
    cubic_params: dict[str, int]
    qdiscs: list[str]
    qdiscs_source: str
    tools: dict[str, str | None]
    delayline: str | None
    cpus: int
    #: IPv6 is built in (/proc/sys/net/ipv6): the run's namespaces disable it, so no
    #: router solicitation, DAD or MLD packet crosses the emulated links.
    ipv6: bool = True
    notes: list[str] = field(default_factory=list)

    def has_qdisc(self, kind: str) -> bool:
        return kind in self.qdiscs

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class QuietReport:
    """How busy the machine was over ``seconds`` before the run (from /proc/stat)."""

    seconds: float
    busy_cpu_frac: float
    steal_frac: float
    ok: bool
    reason: str
    #: /proc/loadavg's 1, 5 and 15 minute load averages at the check (None: unreadable);
    #: recorded for the reader (a run invalid because the machine was busy says how busy)
    loadavg: tuple[float, float, float] | None = None
    #: the CPUs the machine has (busy_cpu_frac is in CPUs)
    cpus: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _read(path: str | Path) -> str | None:
    try:
        return Path(path).read_text()
    except OSError:
        return None


def _kernel_config(release: str) -> tuple[dict[str, str], str]:
    """``CONFIG_X -> value`` from /proc/config.gz or /boot/config-RELEASE; ({}, "") if none."""
    text = None
    source = ""
    try:
        with gzip.open("/proc/config.gz", "rt") as f:
            text = f.read()
        source = "/proc/config.gz"
    except OSError:
        text = _read(f"/boot/config-{release}")
        source = f"/boot/config-{release}" if text is not None else ""
    out: dict[str, str] = {}
    for line in (text or "").splitlines():
        if line.startswith("CONFIG_") and "=" in line:
            key, _, value = line.partition("=")
            out[key] = value.strip().strip('"')
    return out, source


def _module_present(release: str, name: str) -> bool:
    """A module is loaded, or its file is in /lib/modules/RELEASE/kernel/net/sched/."""
    if Path(f"/sys/module/{name}").exists():
        return True
    base = Path(f"/lib/modules/{release}/kernel/net/sched")
    return any(base.glob(f"{name}.ko*")) if base.is_dir() else False


def _words(path: str) -> list[str]:
    return (_read(path) or "").split()


def _cubic_params() -> dict[str, int]:
    out: dict[str, int] = {}
    base = Path("/sys/module/tcp_cubic/parameters")
    if base.is_dir():
        for p in sorted(base.iterdir()):
            text = _read(p)
            if text is None:
                continue
            text = text.strip()
            if text in ("Y", "N"):
                out[p.name] = int(text == "Y")
            else:
                try:
                    out[p.name] = int(text)
                except ValueError:
                    continue
    return out


def _probe_qdiscs_in_netns(prefix: str) -> list[str]:
    """Add each qdisc kind on ``lo`` of a scratch netns; the kinds tc accepts are present."""
    from tcplab.kernel.names import probe_ns

    ns = probe_ns(prefix, os.getpid())
    found: list[str] = []
    if subprocess.run(["ip", "netns", "add", ns], capture_output=True).returncode != 0:
        return found
    try:
        for kind in QDISC_CONFIG:
            if kind == "ingress":
                args = ["tc", "-n", ns, "qdisc", "add", "dev", "lo", "ingress"]
            elif kind == "tbf":
                args = [
                    "tc",
                    "-n",
                    ns,
                    "qdisc",
                    "add",
                    "dev",
                    "lo",
                    "root",
                    "tbf",
                    "rate",
                    "1mbit",
                    "burst",
                    "10k",
                    "limit",
                    "10k",
                ]
            elif kind == "htb":
                args = ["tc", "-n", ns, "qdisc", "add", "dev", "lo", "root", "htb"]
            else:
                args = ["tc", "-n", ns, "qdisc", "add", "dev", "lo", "root", kind]
            if subprocess.run(args, capture_output=True).returncode == 0:
                found.append(kind)
                subprocess.run(
                    ["tc", "-n", ns, "qdisc", "del", "dev", "lo", "ingress" if kind == "ingress" else "root"],
                    capture_output=True,
                )
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    return found


def _delayline_path() -> str | None:
    """The command that runs the delay line (tcplab.kernel.delayline.delayline_argv), or None."""
    import shlex

    from tcplab.kernel.delayline import delayline_argv

    try:
        return shlex.join(delayline_argv())
    except KernelError:
        return None


def probe(prefix: str = "tcplab") -> KernelEnv:
    """Read the running kernel's release, HZ, congestion controls, qdiscs, tools, CPUs."""
    release = platform.release()
    config, config_source = _kernel_config(release)
    notes: list[str] = []
    hz: int | None = None
    hz_source = "unknown"
    if "CONFIG_HZ" in config:
        try:
            hz = int(config["CONFIG_HZ"])
            hz_source = config_source
        except ValueError:
            pass
    if hz is None:
        notes.append("HZ unknown: no readable kernel config (/proc/config.gz, /boot/config-RELEASE)")
    if config:
        qdiscs = list(ALWAYS_QDISCS)
        for kind, symbol in QDISC_CONFIG.items():
            value = config.get(symbol)
            if value == "y" or (value == "m" and _module_present(release, f"sch_{kind}")):
                qdiscs.append(kind)
        qdiscs_source = config_source
    elif os.geteuid() == 0 and shutil.which("tc") and shutil.which("ip"):
        qdiscs = list(ALWAYS_QDISCS) + _probe_qdiscs_in_netns(prefix)
        qdiscs_source = "probe (tc qdisc add in a scratch netns)"
    else:
        qdiscs = list(ALWAYS_QDISCS)
        qdiscs_source = "unknown (no kernel config, not root)"
    return KernelEnv(
        release=release,
        hz=hz,
        hz_source=hz_source,
        cc_available=_words("/proc/sys/net/ipv4/tcp_available_congestion_control"),
        cc_allowed=_words("/proc/sys/net/ipv4/tcp_allowed_congestion_control"),
        cubic_params=_cubic_params(),
        qdiscs=qdiscs,
        qdiscs_source=qdiscs_source,
        tools={t: shutil.which(t) for t in TOOLS},
        delayline=_delayline_path(),
        cpus=os.cpu_count() or 1,
        ipv6=Path("/proc/sys/net/ipv6").is_dir(),
        notes=notes,
    )


def require_root() -> None:
    """Raise :class:`KernelError` with :data:`NEEDS_ROOT` unless running as root."""
    if os.geteuid() != 0:
        raise KernelError(NEEDS_ROOT)


def _cpu_times() -> tuple[int, int, int]:
    """(busy, steal, total) jiffies summed over all CPUs (the ``cpu`` line of /proc/stat:
    user nice system idle iowait irq softirq steal guest guest_nice; guest time is already
    counted in user)."""
    line = (_read("/proc/stat") or "cpu 0 0 0 0").splitlines()[0].split()
    v = [int(x) for x in line[1:]] + [0] * 10
    user, nice, system, idle, iowait, irq, softirq, steal = v[:8]
    busy = user + nice + system + irq + softirq
    total = busy + idle + iowait + steal
    return busy, steal, total


def load_average() -> tuple[float, float, float] | None:
    """The 1, 5 and 15 minute load averages (/proc/loadavg), None when unreadable."""
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return None
    return round(one, 2), round(five, 2), round(fifteen, 2)


def quiet_check(seconds: float = 1.0) -> QuietReport:
    """How much CPU other processes used over ``seconds`` (this process sleeps meanwhile).

    ``busy_cpu_frac`` is in CPUs (0.5 = half of one CPU); ``steal_frac`` is the fraction of
    all CPU time the hypervisor gave to others. Not ok when busy > 0.25 CPU or steal > 5 %.
    """
    busy0, steal0, total0 = _cpu_times()
    t0 = time.monotonic()
    time.sleep(seconds)
    busy1, steal1, total1 = _cpu_times()
    elapsed = max(time.monotonic() - t0, 1e-9)
    ticks = os.sysconf("SC_CLK_TCK")  # /proc/stat counts in USER_HZ
    busy_cpu = (busy1 - busy0) / ticks / elapsed
    total = max(total1 - total0, 1)
    steal_frac = (steal1 - steal0) / total
    reasons = []
    if busy_cpu > MAX_BUSY_CPU:
        reasons.append(f"other processes used {busy_cpu:.2f} CPU over {seconds:g} s (at most {MAX_BUSY_CPU} allowed)")
    if steal_frac > MAX_STEAL_FRAC:
        reasons.append(f"CPU steal {steal_frac:.1%} over {seconds:g} s (at most {MAX_STEAL_FRAC:.0%} allowed)")
    load = load_average()
    if reasons and load is not None:
        reasons.append(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count() or 1} CPUs")
    return QuietReport(
        seconds=seconds,
        busy_cpu_frac=round(busy_cpu, 4),
        steal_frac=round(steal_frac, 4),
        ok=not reasons,
        reason="; ".join(reasons),
        loadavg=load,
        cpus=os.cpu_count() or 1,
    )


#: The qdiscs that mark ECN in tcplab's scenarios (issue 28), with what marks: fq_codel's
#: ``ecn`` (on by default) and ``ce_threshold``, fq's ``ce_threshold``. tbf and the FIFOs only
#: drop. (sch_red, sch_pie, sch_codel and sch_cake mark too; tcplab's scenarios have none.)
MARKING_QDISCS = {"fq_codel": "ecn, ce_threshold", "fq": "ce_threshold"}


def ecn_line(env: KernelEnv) -> str:
    """``tcplab kernel info``'s ECN line: RFC 3168 in TCP is in every kernel (net.ipv4.tcp_ecn
    per namespace); which marking qdiscs and whether DCTCP (tcp_dctcp,
    CONFIG_TCP_CONG_DCTCP) this kernel has."""
    marking = ", ".join(
        f"{kind} ({what}) {'yes' if env.has_qdisc(kind) else 'MISSING'}" for kind, what in MARKING_QDISCS.items()
    )
    dctcp = "yes" if "dctcp" in env.cc_available else "MISSING (CONFIG_TCP_CONG_DCTCP)"
    return f"ECN: tcp_ecn per namespace; marking qdiscs: {marking}; dctcp: {dctcp}"


def format_env(env: KernelEnv) -> str:
    """The text ``tcplab kernel info`` prints."""
    lines = [
        f"kernel: {env.release}",
        f"HZ: {env.hz if env.hz is not None else 'unknown'} ({env.hz_source})",
        f"cpus: {env.cpus}",
        f"congestion controls available: {' '.join(env.cc_available) or '-'}",
        f"congestion controls allowed (unprivileged): {' '.join(env.cc_allowed) or '-'}",
        f"qdiscs: {' '.join(env.qdiscs)} ({env.qdiscs_source})",
        "qdiscs missing: " + (" ".join(k for k in QDISC_CONFIG if k not in env.qdiscs) or "none"),
        ecn_line(env),
    ]
    if env.cubic_params:
        lines.append("tcp_cubic parameters: " + " ".join(f"{k}={v}" for k, v in env.cubic_params.items()))
    for tool, path in env.tools.items():
        lines.append(f"tool {tool}: {path or 'MISSING'}")
    missing = "MISSING (pip install . in tcplab's source tree, or cargo build --release -p tcplab-delayline)"
    lines.append(f"delay line: {env.delayline or missing}")
    lines.extend(f"note: {n}" for n in env.notes)
    return "\n".join(lines) + "\n"

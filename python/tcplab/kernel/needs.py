"""What kernel mode needs of the machine, checked at the start: one line per thing missing.

The model. A kernel run (:mod:`tcplab.kernel.run`) builds the scenario's path out of network
namespaces and runs the kernel's own TCP in them, so the machine needs:

* **root** (namespaces, tc, nft and TUN devices need CAP_NET_ADMIN);
* **network namespaces** (CONFIG_NET_NS: ``/proc/self/ns/net``);
* **the tools**: ``ip``, ``tc``, ``ss``, ``nstat`` (iproute2), ``ethtool``
  (:data:`tcplab.kernel.run.REQUIRED_TOOLS`), and ``nft`` (nftables, with ``numgen``) for a
  link with random loss;
* **the qdiscs its links use**: ``tbf`` shapes every link's rate; a link's queue asks for
  its own kind (``fq``, ``fq_codel``, ...; ``pfifo``/``bfifo`` are always there). Which ones
  this kernel has: :func:`tcplab.kernel.env.probe` (the kernel config, or a probe in a
  scratch namespace). An fq_codel that marks by ``ce_threshold`` is a note, not a need: the
  delay line's step marker stands in for it where the plan finds it the same queue
  (:func:`tcplab.kernel.plan.line_markers`, which refuses the others with the reason);
* **one-way delay**: ``sch_netem`` when the kernel has it, otherwise tcplab's own delay line
  (the ``tcplab-delayline`` binary, forwarding between two TUN devices: ``/dev/net/tun``);
* two CPUs or more (the delay line runs on a CPU apart from the traffic): a note, not a
  refusal, as a 1-CPU machine runs, late.

:func:`machine_needs` lists every need with whether this machine meets it (``tcplab kernel
info`` prints them); :func:`missing` gives the lines of those a run cannot do without, and
:func:`check_needs` raises them all at once (:class:`MachineLacks`, one line each), before
anything is built, rather than the first one the run trips over.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tcplab.kernel.env import QDISC_CONFIG
from tcplab.kernel.errors import KernelError, KernelUnsupported

__all__ = ["Need", "MachineLacks", "machine_needs", "missing", "check_needs", "needed_qdiscs", "format_needs"]

#: The tools every kernel run runs (iproute2, ethtool); nft only with loss.
TOOLS = ("ip", "tc", "ss", "nstat", "ethtool")
#: Where a Debian machine gets each tool.
PACKAGES = {
    "ip": "iproute2",
    "tc": "iproute2",
    "ss": "iproute2",
    "nstat": "iproute2",
    "ethtool": "ethtool",
    "nft": "nftables",
}
#: Qdiscs every kernel has with CONFIG_NET_SCHED (tcplab.kernel.env.ALWAYS_QDISCS).
ALWAYS = ("pfifo", "bfifo", "pfifo_fast")


@dataclass(frozen=True)
class Need:
    """One thing kernel mode needs, and whether this machine has it."""

    what: str
    ok: bool
    #: what is there (ok) or what is missing and how to get it
    detail: str
    #: False: the run goes on without it (a note), True: the run cannot
    required: bool = True

    def line(self) -> str:
        state = "ok" if self.ok else ("MISSING" if self.required else "note")
        return f"{self.what}: {state}: {self.detail}"


class MachineLacks(KernelUnsupported):
    """This machine lacks what the run needs (kernel mode cannot build it here: exit 2,
    nothing created); ``lines``: one per missing thing."""

    def __init__(self, lines: list[str]):
        self.lines = list(lines)
        super().__init__("\n".join(self.lines))


def needed_qdiscs(config: Mapping[str, Any] | None) -> dict[str, str]:
    """qdisc kind -> the first scenario path that needs it (``links.K.queue`` or
    ``links.K.reverse.queue``: the engine's one-way link I is the scenario's entry I // 2),
    ``tbf`` for the links' rates; the kinds every kernel has left out."""
    from tcplab.kernel.plan import _link_path

    out: dict[str, str] = {}
    links = (config or {}).get("links") or []
    if links:
        out["tbf"] = "links.*.rate (the rate shaper)"
    for i, link in enumerate(links):
        kind = (link.get("queue") or {}).get("kind")
        if kind in QDISC_CONFIG and kind not in ALWAYS:
            where = _link_path(config, i) if config and len(links) > i else f"links.{i}"
            out.setdefault(str(kind), f"{where}.queue")
    return out


def _all_mark(config: Mapping[str, Any]) -> bool:
    """Every fq_codel queue of ``config`` marks by ``ce_threshold`` (what the delay line can
    stand in for: :func:`tcplab.kernel.plan.line_markers`)."""
    queues = [link.get("queue") or {} for link in config.get("links") or []]
    return all(q.get("ce_threshold_ns") for q in queues if q.get("kind") == "fq_codel")


def _has_loss(config: Mapping[str, Any]) -> bool:
    """A link with random loss (the plan's nft rules; tcplab.kernel.plan)."""
    return any(
        (link.get("loss") or {}).get("kind") == "bernoulli" and float((link.get("loss") or {}).get("p", 0)) > 0
        for link in config.get("links") or []
    )


def _has_delay(config: Mapping[str, Any]) -> bool:
    """A link delayed on a wire (netem or the delay line; tcplab.kernel.plan)."""
    from tcplab.kernel.plan import WIRE_MIN_DELAY_NS

    return any(int(link.get("delay_ns", 0)) >= WIRE_MIN_DELAY_NS for link in config.get("links") or [])


def _delayline_detail(env: Any) -> str:
    if env.delayline:
        return env.delayline
    try:
        from tcplab.kernel.delayline import find_delayline

        find_delayline()
    except KernelError as e:
        return str(e)
    return "not found"


def machine_needs(env: Any, config: Mapping[str, Any] | None = None, *, euid: int | None = None) -> list[Need]:
    """Every need (module doc) with whether ``env`` (:class:`tcplab.kernel.env.KernelEnv`)
    meets it; with ``config`` (an engine configuration), the qdiscs and nft that scenario
    needs, else those every run needs."""
    euid = os.geteuid() if euid is None else euid
    needs = [
        Need("root", euid == 0, "running as root" if euid == 0 else "run it with sudo"),
        Need(
            "network namespaces",
            Path("/proc/self/ns/net").exists(),
            "/proc/self/ns/net" if Path("/proc/self/ns/net").exists() else "the kernel lacks CONFIG_NET_NS",
        ),
    ]
    tools = list(TOOLS) + (["nft"] if config is None or _has_loss(config) else [])
    for tool in tools:
        path = env.tools.get(tool)
        why = " (random loss)" if tool == "nft" else ""
        needs.append(
            Need(
                f"tool {tool}{why}",
                bool(path),
                path or f"not found (Debian: apt-get install {PACKAGES.get(tool, tool)})",
            )
        )
    for kind, where in needed_qdiscs(config if config is not None else {"links": [{}]}).items():
        have = env.has_qdisc(kind)
        symbol = f"CONFIG_NET_SCH_{kind.upper()}"
        if not have and kind == "fq_codel" and config is not None and _all_mark(config):
            # the delay line's step marker stands in for it where the plan finds it the same
            # queue (tcplab.kernel.plan.line_markers, which refuses it elsewhere, one line)
            detail = f"this kernel lacks sch_{kind} ({symbol}): {where}'s ce_threshold is the delay line's marker"
            needs.append(Need(f"qdisc {kind}", False, detail, required=False))
            continue
        needs.append(
            Need(
                f"qdisc {kind}",
                have,
                f"in this kernel ({env.qdiscs_source})"
                if have
                else f"this kernel lacks sch_{kind} ({symbol}): {where}",
            )
        )
    if env.has_qdisc("netem"):
        needs.append(Need("one-way delay", True, "sch_netem"))
    elif config is not None and not _has_delay(config):
        needs.append(Need("one-way delay", True, "none on a wire in this scenario (no netem, no delay line needed)"))
    else:
        tun = Path("/dev/net/tun").exists()
        needs.append(
            Need(
                "qdisc netem",
                False,
                "this kernel lacks sch_netem (CONFIG_NET_SCH_NETEM): one-way delays use tcplab's delay line",
                required=False,
            )
        )
        needs.append(Need("delay line tcplab-delayline", bool(env.delayline), _delayline_detail(env)))
        needs.append(Need("TUN devices", tun, "/dev/net/tun" if tun else "no /dev/net/tun (CONFIG_TUN)"))
    cpus = int(getattr(env, "cpus", 1) or 1)
    needs.append(
        Need(
            "CPUs",
            cpus >= 2,
            f"{cpus}" if cpus >= 2 else f"{cpus}: the delay line shares it with the traffic (runs may be invalid)",
            required=False,
        )
    )
    return needs


def missing(env: Any, config: Mapping[str, Any] | None = None, *, euid: int | None = None) -> list[str]:
    """``kernel: missing: WHAT: DETAIL``, one line per required need not met."""
    return [
        f"kernel: missing: {n.what}: {n.detail}"
        for n in machine_needs(env, config, euid=euid)
        if n.required and not n.ok
    ]


def check_needs(env: Any, config: Mapping[str, Any] | None = None, *, euid: int | None = None) -> None:
    """Raise :class:`MachineLacks` with every missing line (module doc); nothing when none."""
    lines = missing(env, config, euid=euid)
    if lines:
        raise MachineLacks(lines)


def format_needs(needs: list[Need]) -> str:
    """The lines ``tcplab kernel info`` prints under ``needs:``."""
    return "".join(f"  {n.line()}\n" for n in needs)

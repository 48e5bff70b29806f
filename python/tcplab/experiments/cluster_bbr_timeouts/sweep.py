"""The search for a BBR stuck near 100 kbit/s: one condition per run of bbr-stuck-search.yaml.

Each :class:`StuckPoint` is a ``--set`` on the bulk flow's path or host: random loss (netem
``loss``), bursty loss (Gilbert-Elliott), reordering (netem ``reorder``), the node's CPU share
in 10 ms slices (a busy VM or a throttled node), a policer on the switch (a tbf with a burst
and a limit of 16 kB: what exceeds the rate is dropped, as a policer does) and a low EDT
rate of the Bandwidth Manager. Every condition runs with BBR and with CUBIC (the pods'
``bandwidth_manager.bbr``): a flow stuck under a condition that holds CUBIC down as low is
held by the loss, not by BBR. The pod may use 100 Mbit/s everywhere else. The story's two
remaining knobs are not swept: the EDT drop horizon is Cilium's fixed 2 s (a flow paced by
BBR never queues 2 s in fq), and sub-millisecond RTTs are the topology's own.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["StuckPoint", "STUCK_POINTS"]


@dataclass(frozen=True)
class StuckPoint:
    label: str
    condition: str
    overrides: tuple[str, ...]
    quick: bool = False
    cc: str = "bbr"


_CUBIC = "bandwidth_manager.bbr=false"

#: (label, condition, overrides, in quick mode): each condition runs with BBR and with CUBIC,
#: so that a BBR stuck low can be told from a loss that holds any TCP down.
_CONDITIONS: tuple[tuple[str, str, tuple[str, ...], bool], ...] = (
    ("clean", "no impairment", ("links.1.loss=0%",), True),
    ("loss1", "1 % random loss", ("links.1.loss=1%",), False),
    ("loss10", "10 % random loss", ("links.1.loss=10%",), False),
    ("loss30", "30 % random loss", ("links.1.loss=30%",), True),
    ("ge05", "bursty loss 2.4 % (GE p 0.5 %)", ("links.1.loss={gilbert_elliott: {p: 0.5%, r: 20%}}",), True),
    ("ge2", "bursty loss 9 % (GE p 2 %)", ("links.1.loss={gilbert_elliott: {p: 2%, r: 20%}}",), False),
    ("reorder", "10 % reordered by 1 ms", ("links.1.reorder={probability: 10%, delay: 1ms}",), False),
    ("cpu35", "node CPU 35 % (10 ms slices)", ("hosts.sakura.cpu={share: 35%, period: 10ms}",), False),
    ("cpu20", "node CPU 20 % (10 ms slices)", ("hosts.sakura.cpu={share: 20%, period: 10ms}",), True),
    ("policer", "10 Mbit/s policer", ("links.1.queue={qdisc: tbf, rate: 10Mbit, burst: 16kb, limit: 16kb}",), False),
    ("edt10", "EDT limit 10 Mbit/s", ("pods.sender.egress_bandwidth=10M",), False),
)

STUCK_POINTS: tuple[StuckPoint, ...] = tuple(
    StuckPoint(
        f"stuck-{key}" + ("" if cc == "bbr" else "-cubic"),
        condition,
        overrides if cc == "bbr" else (*overrides, _CUBIC),
        quick=quick,
        cc=cc,
    )
    for key, condition, overrides, quick in _CONDITIONS
    for cc in ("bbr", "cubic")
)

"""The search for a BBR stuck near 100 kbit/s: one condition per run of bbr-stuck-search.yaml.

Each :class:`StuckPoint` is a ``--set`` on the bulk flow's path or host: random loss (netem
``loss``), bursty loss (Gilbert-Elliott), reordering (netem ``reorder``), the node's CPU share
in 10 ms slices (a busy VM or a throttled node), a policer on the switch (a tbf with a burst
and a limit of 16 kB: what exceeds the rate is dropped, as a policer does) and a low EDT
rate of the Bandwidth Manager. The pod may use 100 Mbit/s everywhere else. The story's two
remaining knobs are not swept: the EDT drop horizon is Cilium's fixed 2 s (a flow paced by
BBR never queues 2 s in fq), and sub-millisecond RTTs are the topology's own. CUBIC runs at
the two conditions where BBR stalls hardest, to tell BBR's model from TCP's retransmission
timeout.
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
_GE05 = "links.1.loss={gilbert_elliott: {p: 0.5%, r: 20%}}"

STUCK_POINTS: tuple[StuckPoint, ...] = (
    StuckPoint("stuck-clean", "no impairment", ("links.1.loss=0%",), quick=True),
    StuckPoint("stuck-loss1", "1 % random loss", ("links.1.loss=1%",)),
    StuckPoint("stuck-loss10", "10 % random loss", ("links.1.loss=10%",)),
    StuckPoint("stuck-loss30", "30 % random loss", ("links.1.loss=30%",), quick=True),
    StuckPoint("stuck-ge05", "bursty loss 2.4 % (GE p 0.5 %)", (_GE05,), quick=True),
    StuckPoint("stuck-ge2", "bursty loss 9 % (GE p 2 %)", ("links.1.loss={gilbert_elliott: {p: 2%, r: 20%}}",)),
    StuckPoint("stuck-reorder", "10 % reordered by 1 ms", ("links.1.reorder={probability: 10%, delay: 1ms}",)),
    StuckPoint("stuck-cpu35", "node CPU 35 % (10 ms slices)", ("hosts.sakura.cpu={share: 35%, period: 10ms}",)),
    StuckPoint("stuck-cpu20", "node CPU 20 % (10 ms slices)", ("hosts.sakura.cpu={share: 20%, period: 10ms}",)),
    StuckPoint(
        "stuck-policer",
        "10 Mbit/s policer",
        ("links.1.queue={qdisc: tbf, rate: 10Mbit, burst: 16kb, limit: 16kb}",),
    ),
    StuckPoint("stuck-edt10", "EDT limit 10 Mbit/s", ("pods.sender.egress_bandwidth=10M",)),
    StuckPoint("stuck-ge05-cubic", "bursty loss 2.4 % (GE p 0.5 %), CUBIC", (_GE05, _CUBIC), quick=True, cc="cubic"),
    StuckPoint("stuck-loss30-cubic", "30 % random loss, CUBIC", ("links.1.loss=30%", _CUBIC), cc="cubic"),
)

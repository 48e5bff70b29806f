"""Story 000's runs: which scenario file, which loss, which congestion control, which seeds.

The variable is where the story put it. The Talos sysctls that turned BBR on and off
(``net.ipv4.tcp_congestion_control``, ``net.core.default_qdisc: fq``) were the Kubernetes
nodes', so the stream's runs switch **marin**'s (the Plex node, the NFS client); the NAS
nezuko, outside the Talos config, keeps Linux's default CUBIC and sends the data. The
Bandwidth Manager's ``bbr: true`` set the pods' cc, so the remote writes switch
``bandwidth_manager.bbr`` (vmagent's pod sends the batches).

The loss. The story measured "<0.001%": every claim is judged first under that loss
(``measured``: 0.001 %, each packet independently, both ways on the switch port), then under
two hypotheses of tcplab's, the story naming no cause: ``random`` (4.76 % independently from
60 s) and ``bursts`` (a Gilbert-Elliott port from 60 s: 1 % of packets start a burst that
loses 5 on average, the same 4.76 % mean, counted in packets as netem's). The loss starts at
60 s, once the player's buffer has filled (the story's player was healthy, then collapsed).

Seeds. Stalls, collapses and timeouts are rare events: each (loss, cc) point runs on
``SEEDS`` seeds (3 in quick mode, 5 in full) and a claim reads "k of n seeds"
(:class:`~tcplab.experiments.base.SeedCount`), in both modes. Quick mode runs the stream
3 minutes (2 minutes of loss), full mode 10 (9 of loss) plus one hour per cc under the
bursts; the remote writes run 20 minutes (quick) or the hour (full).
"""

from __future__ import annotations

from dataclasses import dataclass

from tcplab.experiments.base import Run
from tcplab.experiments.cluster_bbr_timeouts.sweep import STUCK_POINTS

__all__ = [
    "LOSSES",
    "LOSS_TEXT",
    "MARIN_CC",
    "BBR_POD",
    "seeds",
    "nfs_label",
    "check_label",
    "sweep_label",
    "BURST_SWEEP_P",
    "buf16_label",
    "rw_label",
    "RECOVER",
    "CLEAN",
    "FQ",
    "runs",
    "Point",
]

#: The stream's variable: the Plex node's (NFS client's) default congestion control.
MARIN_CC = "hosts.marin.sysctl.net.ipv4.tcp_congestion_control"
#: The writes' variable: the Bandwidth Manager's BBR for the pods.
BBR_POD = "bandwidth_manager.bbr"
#: The loss of each condition on the switch port (links.1), both ways.
LOSSES: dict[str, str] = {
    "measured": "links.1.loss=0.001%",
    "random": "links.1.loss={random: 4.76%, start: 60s}",
    "bursts": "links.1.loss={gilbert_elliott: {p: 1%, r: 20%}, start: 60s}",
}
#: The same losses from the first packet (the 2-minute check's runs: nothing changes over the run).
STATIONARY: dict[str, str] = {
    "measured": "links.1.loss=0.001%",
    "random": "links.1.loss=4.76%",
    "bursts": "links.1.loss={gilbert_elliott: {p: 1%, r: 20%}}",
}
LOSS_TEXT: dict[str, str] = {
    "measured": "the story's measured loss (0.001 %)",
    "random": "independent loss of 4.76 % from 60 s (hypothesis)",
    "bursts": "bursts, 4.76 % in bursts of 5 packets from 60 s (hypothesis)",
}
#: Fix attempt 2 (the 2-minute check's configuration): BBR, 64 MB buffers, nconnect 16.
ATTEMPT2 = (
    f"{MARIN_CC}=bbr",
    "hosts.marin.sysctl.net.ipv4.tcp_rmem=4096 262144 67108864",
    "hosts.marin.sysctl.net.ipv4.tcp_wmem=4096 65536 67108864",
    "flows.0.app.nfs_stream.nconnect=16",
)
#: Fix attempt 1: 16 MB buffers (the cc of the time: CUBIC).
ATTEMPT1 = (
    f"{MARIN_CC}=cubic",
    "hosts.marin.sysctl.net.ipv4.tcp_rmem=4096 262144 16777216",
    "hosts.marin.sysctl.net.ipv4.tcp_wmem=4096 65536 16777216",
)


#: The bursts' hypothesis swept in full mode: Gilbert-Elliott p (r stays 20 %: bursts of 5
#: packets on average), i.e. 0.5 %, 2.4 % and 9.1 % of packets lost, beside the 1 % (4.76 %).
BURST_SWEEP_P = ("0.1%", "0.5%", "2%")


def _bursts(p: str) -> str:
    return f"links.1.loss={{gilbert_elliott: {{p: {p}, r: 20%}}, start: 60s}}"


def sweep_label(p: str, seed: int) -> str:
    return f"nfs-cubic-bursts-p{p.rstrip('%')}-s{seed}"


def seeds(quick: bool) -> range:
    return range(1, 4) if quick else range(1, 6)


def nfs_label(cc: str, loss: str, seed: int) -> str:
    return f"nfs-{cc}-{loss}-s{seed}"


def check_label(loss: str, seed: int) -> str:
    return f"check-{loss}-s{seed}"


def buf16_label(seed: int) -> str:
    return f"buf16-bursts-s{seed}"


def rw_label(cc: str, loss: str, seed: int) -> str:
    return f"rw-{cc}-{loss}-s{seed}"


@dataclass(frozen=True)
class Point:
    """A bulk flow of bbr-stuck-search.yaml outside the stuck search: label, overrides, cc."""

    label: str
    overrides: tuple[str, ...]
    cc: str


_CUBIC_POD = f"{BBR_POD}=false"
#: "Once stuck, remains degraded despite network recovery": 30 % loss from 2 s to 12 s, then none.
RECOVER = {
    cc: Point(
        f"recover-{cc}",
        ("links.1.loss={random: 30%, start: 2s, end: 12s}", "duration=30s", *(() if cc == "bbr" else (_CUBIC_POD,))),
        cc,
    )
    for cc in ("bbr", "cubic")
}
#: A clean path sampled every 10 ms: convergence, the estimate, probing's congestion events.
CLEAN = {
    cc: Point(
        f"clean-{cc}",
        ("links.1.loss=0%", "duration=10s", "sample_interval=10ms", *(() if cc == "bbr" else (_CUBIC_POD,))),
        cc,
    )
    for cc in ("bbr", "cubic")
}
#: "fq required for BBR": a BBR bulk flow between the nodes themselves (no pod, no EDT) through
#: a 100 Mbit/s port, the nodes' default qdisc fq or fq_codel. The scenario's pod leaves the
#: Bandwidth Manager (mode cni): the manager installs fq on the node's device whatever
#: default_qdisc says (tcplab.scenario.bandwidth), which made both points run fq.
FQ = {
    qdisc: Point(
        f"fq-{qdisc}",
        (
            "pods.sender.mode=cni",
            f"hosts.sakura.sysctl.net.core.default_qdisc={qdisc}",
            "hosts.sakura.sysctl.net.ipv4.tcp_congestion_control=bbr",
            "links.1.rate=100Mbit",
            "flows.0.from=sakura",
            "duration=20s",
        ),
        "bbr",
    )
    for qdisc in ("fq", "fq_codel")
}


def runs(quick: bool) -> list[Run]:
    out: list[Run] = []
    nfs_time = ("duration=3min", "sample_interval=100ms") if quick else ("duration=10min", "sample_interval=100ms")
    for loss, loss_set in LOSSES.items():
        for cc in ("cubic", "bbr"):
            for s in seeds(quick):
                out.append(
                    Run(
                        nfs_label(cc, loss, s),
                        "plex-nfs.yaml",
                        overrides=(f"{MARIN_CC}={cc}", loss_set, f"seed={s}", *nfs_time),
                        group=f"Plex over NFS: {LOSS_TEXT[loss]}",
                    )
                )
    if not quick:  # the bursts' hypothesis swept: 1 % of packets starting a burst, then these
        for p in BURST_SWEEP_P:
            for s in seeds(quick):
                out.append(
                    Run(
                        sweep_label(p, s),
                        "plex-nfs.yaml",
                        overrides=(f"{MARIN_CC}=cubic", _bursts(p), f"seed={s}", *nfs_time),
                        quick=False,
                        group="Plex over NFS: the bursts' rate swept (hypothesis)",
                    )
                )
    if not quick:  # the hour the story's fix was verified over, one seed
        for cc in ("cubic", "bbr"):
            out.append(
                Run(
                    f"nfs-{cc}-bursts-hour",
                    "plex-nfs.yaml",
                    overrides=(f"{MARIN_CC}={cc}", LOSSES["bursts"], "duration=60min", "sample_interval=1s"),
                    quick=False,
                    group="Plex over NFS: the hour",
                )
            )
    check_time = ("duration=6min",) if quick else ("duration=20min", "sample_interval=200ms")
    for loss, loss_set in STATIONARY.items():
        for s in seeds(quick):
            out.append(
                Run(
                    check_label(loss, s),
                    "plex-nfs.yaml",
                    overrides=(*ATTEMPT2, loss_set, f"seed={s}", *check_time),
                    group="Fix attempt 2 (BBR, 64 MB, nconnect 16), loss from the start",
                )
            )
    for s in seeds(quick):
        out.append(
            Run(
                buf16_label(s),
                "plex-nfs.yaml",
                overrides=(*ATTEMPT1, LOSSES["bursts"], f"seed={s}", *nfs_time),
                group="Fix attempt 1 (16 MB buffers)",
            )
        )
    rw_time = ("duration=20min", "sample_interval=1s") if quick else ("duration=60min", "sample_interval=1s")
    for loss, loss_set in LOSSES.items():
        for cc, bbr in (("cubic", "false"), ("bbr", "true")):
            for s in seeds(quick):
                out.append(
                    Run(
                        rw_label(cc, loss, s),
                        "remote-write.yaml",
                        overrides=(f"{BBR_POD}={bbr}", loss_set, f"seed={s}", *rw_time),
                        group=f"remote writes: {LOSS_TEXT[loss]}",
                    )
                )
    for point in STUCK_POINTS:
        out.append(
            Run(
                point.label, "bbr-stuck-search.yaml", overrides=point.overrides, quick=point.quick, group="stuck search"
            )
        )
    for group, points in (("recovery", RECOVER), ("clean path", CLEAN), ("fq or not", FQ)):
        for p in points.values():
            out.append(Run(p.label, "bbr-stuck-search.yaml", overrides=p.overrides, group=group))
    return [r for r in out if r.quick or not quick]

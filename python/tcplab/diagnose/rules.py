"""Findings: which known pathology a host's counters show.

The model: each rule reads a :class:`~tcplab.diagnose.snapshot.Host` and returns zero or more
:class:`Finding` s. A finding has a severity (``info`` < ``warning`` < ``critical``), the
input lines it rests on, the mechanism in two sentences, what to check next, and the seed
story it matches. Rules prefer *changes* between the first and last snapshot (what is
happening now) and fall back to values since boot, saying so and lowering the severity,
since a counter that rose last month is not today's problem.

Rules and their thresholds (constants below, with the reason for each):

* ``cwnd-collapse``: >= 2 connections to one peer with ``cwnd <= 2`` and ``ssthresh <= 2``
  (seed 000: three of four NFS connections at ``cwnd:2 ssthresh:2``).
* ``bbr-starved``: a BBR flow below 10 % of the rate of the best other flow to the same
  peer, or (two ss snapshots) pinned at the same ``bbr:(bw:...)`` with ``pacing_gain:1``
  while retransmitting -- what BBR's long-term ("lt_bw") policer model looks like (story 000).
* ``rto-rate``: TCPTimeouts per established connection over the capture above 3 % (seed
  004's alert threshold); the established connections are ``TcpCurrEstab`` (``/proc/net/snmp``,
  not printed by ``nstat``) or the ESTAB sockets of an ``ss`` capture, and without either the
  finding says the ratio is not available rather than calling rising timeouts healthy;
  ``spurious-rto`` and ``tail-loss-probes`` from their counters. One snapshot of a real host
  counts since boot (severity info); one of a simulated run counts the whole run.
* ``nic-rx-drops``: NIC drop counters (concepts of :mod:`.ethtool`) rising, or in one capture
  beside retransmissions/timeouts, with the rx ring size and its maximum (seed 004:
  ``ethtool -G DEV rx 8192``).
* ``qdisc-drops``: tbf drops vs overlimits, fq ``horizon_drops``/``flows_plimit``, fq_codel drops;
  ``tbf-bufferbloat``: a tbf whose ``lat`` or backlog holds more than 1 s at its rate (seed 002:
  the CNI bandwidth plugin's tbf).
* ``rwnd-limited`` / ``sndbuf-limited``: ss ``*_limited`` >= 25 % of ``busy`` time (loopback
  sockets included: the limit is the endpoints'); when the receiving socket is in the capture
  too with unread data (Recv-Q > 0 in every snapshot), it says "receiver application reading slowly".
* ``slow-reader``: an established socket whose Recv-Q (unread data) holds >= 25 % of its
  receive buffer (``skmem rb``), or >= 1 MiB without ``-m``, and whose sender is not in the capture.
* ``bbr-without-fq``, ``cilium-bbr-low-rtt`` (seed 000), ``cpu-steal-bbr`` (seed 003; in a run
  directory the senders' congestion control comes from summary.json).
* ``not-collected``: counters a node_exporter scrape does not carry (default filters).
* ``loss-bound-cc``: a loss-based CC (CUBIC, Reno, ...) retransmitting >= 0.2 % of its
  segments with no standing queue (``rtt`` within 25 % of ``minrtt``) and a cwnd-allowed rate
  (ss ``send``) within 1.5x of the Mathis bound 1.22 x MSS / (RTT x sqrt(p)): random loss, not
  congestion, sets its rate (seed 001).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tcplab.diagnose.ethtool import concept_of
from tcplab.diagnose.snapshot import Host
from tcplab.diagnose.source import Evidence
from tcplab.diagnose.ss import Socket
from tcplab.units import plural

__all__ = ["Finding", "SEVERITIES", "run_rules", "RULES", "severity_at_least"]

SEVERITIES = ("info", "warning", "critical")
#: The stories a finding can match, by number; told in docs/stories.md.
SEEDS = {
    "000": "story 000 (cluster BBR timeouts, docs/stories.md): Cilium BBR + Bandwidth Manager, NFS connections "
    "at cwnd:2 ssthresh:2, BBR stuck at ~100 Kbit/s, fixed by CUBIC",
    "001": "story 001 (Cilium's BBR demo, docs/stories.md): on 100 ms with 1 % random loss CUBIC could not hold "
    "an HD video that BBR held",
    "002": "story 002 (Bandwidth Manager: EDT and fq instead of TBF, docs/stories.md)",
    "003": "story 003 (BBR in VMs under CPU contention, docs/stories.md): BBR underestimates the bandwidth",
    "004": "story 004 (timeouts from microbursts, docs/stories.md): NIC drops; rx ring 1024 -> 8192 fixed it",
}
COLLAPSE_CWND = 2  # tcp_bbr/tcp_cubic floor: ssthresh never goes below 2 (tcp_reno_ssthresh)
STARVED_FRACTION = 0.10  # a flow at < 10 % of its siblings' median is not a fairness wobble
RTO_RATIO_WARN = 0.03  # seed 004's threshold: timeouts / established connections
RTO_RATIO_CRIT = 0.30
LIMITED_SHARE = 25.0  # % of busy time limited by rwnd or sndbuf
SLOW_READ_SHARE = 0.25  # Recv-Q / receive buffer: a reader a quarter buffer behind shrank the window as much
SLOW_READ_BYTES = 1 << 20  # Recv-Q without skmem (ss without -m): 1 MiB unread is far beyond a reader keeping up
STEAL_WARN = 0.05  # 5 % CPU steal: BBR's bandwidth samples start to be cut by descheduling
STEAL_CRIT = 0.20
SUB_MS_RTT = 1.0  # ms


@dataclass
class Finding:
    id: str
    title: str
    severity: str
    summary: str
    mechanism: str
    next_checks: list[str]
    evidence: list[Evidence]
    seed: str | None = None
    data: dict[str, Any] = field(default_factory=dict)
    scenario: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "severity": self.severity,
            "summary": self.summary,
            "mechanism": self.mechanism,
            "next_checks": list(self.next_checks),
            "evidence": [e.as_dict() for e in self.evidence],
            "seed": self.seed,
            "seed_story": SEEDS.get(self.seed) if self.seed else None,
            "data": self.data,
            "scenario": self.scenario,
        }


def severity_at_least(sev: str, floor: str) -> bool:
    return SEVERITIES.index(sev) >= SEVERITIES.index(floor)


def _estab(host: Host) -> list[Socket]:
    snap = next((s for s in reversed(host.snapshots) if s.sockets is not None), None)
    return [s for s in (snap.sockets or [])] if snap else []


def _is_loopback(host_addr: str) -> bool:
    return host_addr.startswith("127.") or host_addr in ("::1", "localhost")


def _estab_only(host: Host) -> list[Socket]:
    """Established sockets to other hosts: loopback traffic crosses no NIC, qdisc or path."""
    return [s for s in _estab(host) if s.state == "ESTAB" and not _is_loopback(s.peer_host)]


def _by_peer(socks: list[Socket]) -> dict[str, list[Socket]]:
    out: dict[str, list[Socket]] = {}
    for s in socks:
        out.setdefault(s.peer_host, []).append(s)
    return out


def _rate(s: Socket) -> float | None:
    if "bw_bps" in s.bbr:
        return s.bbr["bw_bps"]
    return s.values.get("delivery_rate_bps")


def _ev(socks: list[Socket], limit: int = 8) -> list[Evidence]:
    out: list[Evidence] = []
    for s in socks[:limit]:
        out.extend(s.evidence)
    return out


def _median_rtt(socks: list[Socket]) -> float | None:
    rtts = [s.values["rtt"] for s in socks if "rtt" in s.values]
    return statistics.median(rtts) if rtts else None


def _fmt_rate(bps: float) -> str:
    for unit, f in (("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
        if bps >= f:
            return f"{bps / f:.3g} {unit}"
    return f"{bps:.3g} bit/s"


def _bbr_in_use(host: Host) -> bool:
    return (
        host.cc_default() == "bbr"
        or any(s.cc in ("bbr", "bbr2", "bbr3") for s in _estab_only(host))
        or bool(host.cilium and host.cilium.bm_cc == "bbr")
    )


# ---------------------------------------------------------------- rules


def rule_cwnd_collapse(host: Host) -> list[Finding]:
    out = []
    for peer, socks in _by_peer(_estab_only(host)).items():
        bad = [
            s
            for s in socks
            if "cwnd" in s.values
            and "ssthresh" in s.values
            and s.values["cwnd"] <= COLLAPSE_CWND
            and s.values["ssthresh"] <= COLLAPSE_CWND
        ]
        if not bad:
            continue
        n, total = len(bad), len(socks)
        sev = "critical" if n >= 3 and 2 * n >= total else "warning" if n >= 2 else "info"
        ccs = sorted({s.cc or "?" for s in bad})
        out.append(
            Finding(
                # the same name as the run detector's episode kind (tcplab.results.stuck.COLLAPSE,
                # the same cwnd <= 2 and ssthresh <= 2): the replay and the diagnoser agree
                id="cwnd-collapse",
                title=f"cwnd collapse on connections to {peer}",
                severity=sev,
                summary=f"{n} of {total} connections to {peer} at cwnd <= 2 and ssthresh <= 2 ({', '.join(ccs)})",
                mechanism=(
                    "Repeated loss recovery and retransmission timeouts have cut ssthresh to its floor of 2 "
                    "segments, so each connection sends 2 packets per round trip and grows by one segment per "
                    "round trip. Several connections to one peer collapsing together points at something shared "
                    "on that path (a policer, a lossy or overrun hop, a receiver dropping bursts), not the application."
                ),
                next_checks=[
                    f"watch them: `ss -tin dst {peer}` every second (cwnd, ssthresh, retrans, lost)"
                    if not host.simulated
                    else f"watch them through the run: `tcplab ss RUN --at T` (cwnd, ssthresh, retrans to {peer})",
                    "take two `nstat -az` snapshots: TcpExtTCPTimeouts, TCPLossProbes, TCPSackRecovery rising?"
                    if not host.simulated
                    else "the run's counters.txt (the whole run): TcpExtTCPTimeouts, TCPLossProbes, TCPSackRecovery",
                    f"on {peer}: `ethtool -S DEV` drop counters and `tc -s qdisc`; on this host `tc -s qdisc`",
                    "compare CUBIC against BBR on this path (story 000 found CUBIC fixed it)",
                ],
                evidence=_ev(bad),
                seed="000",
                data={
                    "peer": peer,
                    "collapsed": n,
                    "connections": total,
                    "cc": ccs[0] if len(ccs) == 1 else ccs,
                    "rtt_ms": _median_rtt(bad),
                    "retrans_ratio": _retrans_ratio_ss(socks),
                },
            )
        )
    return out


def _retrans_ratio_ss(socks: list[Socket]) -> float | None:
    sent = sum(s.values.get("bytes_sent", 0) for s in socks)
    rtx = sum(s.values.get("bytes_retrans", 0) for s in socks)
    return rtx / sent if sent else None


def rule_bbr_starved(host: Host) -> list[Finding]:
    out = []
    socks = _estab_only(host)
    for peer, group in _by_peer(socks).items():
        # a candidate must be sending and not held back by its application
        bbr = [
            s
            for s in group
            if s.cc in ("bbr", "bbr2", "bbr3")
            and _rate(s) is not None
            and s.values.get("bytes_sent", 0) > 0
            and "app_limited" not in s.flags
        ]
        starved = []
        ref = None
        for s in bbr:
            others = [_rate(o) for o in group if o is not s and _rate(o)]
            if not others:
                continue
            best = max(others)
            if best > 0 and _rate(s) < STARVED_FRACTION * best:
                starved.append(s)
                ref = best
        pinned = _pinned_bbr(host, peer)
        if not starved and not pinned:
            continue
        flagged = starved + [s for s in pinned if s not in starved]
        rates = sorted(_rate(s) for s in flagged)
        parts = []
        if starved:
            parts.append(
                f"{plural(len(starved), 'BBR flow')} to {peer} at {_fmt_rate(rates[0])} "
                f"while another gets {_fmt_rate(ref)}"
            )
        if pinned:
            parts.append(
                f"{plural(len(pinned), 'BBR flow')} pinned at a constant bw with pacing_gain 1 while retransmitting"
            )
        out.append(
            Finding(
                id="bbr-starved",
                title=f"BBR flows starved or pinned at a low rate to {peer}",
                severity="warning",
                summary="; ".join(parts),
                mechanism=(
                    "BBR paces at its bandwidth estimate; when loss is high during sampling it may decide a policer "
                    "is present and hold a long-term estimate (lt_bw) with pacing gain 1 for 48 round trips at a "
                    "time, and a low estimate feeds itself because a flow paced slowly only measures slow delivery. "
                    "Siblings to the same peer doing far better rule out the path's capacity as the limit."
                ),
                next_checks=[
                    f"`ss -tin dst {peer}` a few times: does bbr:(bw:...) stay exactly the same with pacing_gain:1?",
                    "nstat TcpRetransSegs / TcpOutSegs and TCPLossProbes over the same interval",
                    "look for a policer on the path (cloud allowance counters, tbf drops, switch policers)",
                    "try CUBIC for this traffic (story 000's fix) or reduce loss on the path",
                ],
                evidence=_ev(flagged),
                seed="000",
                data={
                    "peer": peer,
                    "flows": len(flagged),
                    "connections": len(group),
                    "rate_bps": rates[0],
                    "reference_bps": ref,
                    "cc": "bbr",
                    "rtt_ms": _median_rtt(group),
                    "retrans_ratio": _retrans_ratio_ss(group),
                },
            )
        )
    return out


def _pinned_bbr(host: Host, peer: str) -> list[Socket]:
    snaps = [s for s in host.snapshots if s.sockets]
    if len(snaps) < 2:
        return []
    first = {s.key: s for s in snaps[0].sockets if s.peer_host == peer}
    out = []
    for s in snaps[-1].sockets:
        a = first.get(s.key)
        if a is None or s.peer_host != peer or "bw_bps" not in s.bbr or "bw_bps" not in a.bbr:
            continue
        same = abs(s.bbr["bw_bps"] - a.bbr["bw_bps"]) <= 1e-3 * max(a.bbr["bw_bps"], 1.0)
        gain1 = s.bbr.get("pacing_gain") == 1.0 and a.bbr.get("pacing_gain") == 1.0
        lossy = s.values.get("retrans_total", 0) > a.values.get("retrans_total", 0) or s.values.get(
            "bytes_retrans", 0
        ) > a.values.get("bytes_retrans", 0)
        if same and gain1 and lossy:
            out.append(s)
    return out


def _retrans_ratio_counters(host: Host) -> float | None:
    d_r, d_o = host.delta("TcpRetransSegs"), host.delta("TcpOutSegs")
    if d_r is not None and d_o:
        return d_r / d_o
    r, o = host.counter("TcpRetransSegs"), host.counter("TcpOutSegs")
    return r / o if r is not None and o else None


def _established(host: Host) -> tuple[float | None, str | None, list[Evidence]]:
    """Connections established now, where that came from, and its evidence.

    The gauge ``TcpCurrEstab`` (``/proc/net/snmp``'s ``Tcp: ... CurrEstab``, node_exporter's
    ``node_netstat_Tcp_CurrEstab``, tcplab's counters.txt) when an input has it; real ``nstat``
    never prints it (iproute2 misc/nstat.c: ``useless_number()`` drops it, with the other
    gauges), so two ``nstat -az`` snapshots alone lack it. Else the ESTAB sockets of the last
    ``ss`` capture, loopback ones too, as CurrEstab counts them (a filtered ``ss`` counts
    fewer). Else (None, None, [])."""
    if host.counter("TcpCurrEstab") is not None:
        return host.counter("TcpCurrEstab"), "TcpCurrEstab", host.counter_evidence("TcpCurrEstab")
    snap = next((s for s in reversed(host.snapshots) if s.sockets is not None), None)
    if snap is None:
        return None, None, []
    estab = [s for s in snap.sockets or [] if s.state == "ESTAB"]
    return float(len(estab)), "ss", [e for s in estab[:1] for e in s.evidence[:1]]


#: What a finding says when no input gives the established connections.
NO_ESTABLISHED = (
    "per established connection: not available (nstat does not print the gauge TcpCurrEstab: "
    "add /proc/net/snmp or an `ss -tan` taken at the same time)"
)


def _counted(host: Host, name: str) -> float | None:
    """A counter's rise between the first and last snapshot; with one snapshot, its
    cumulative value (since boot, or over a simulated run)."""
    return host.delta(name) if len(host.counter_snaps()) > 1 else host.counter(name)


def rule_rto(host: Host) -> list[Finding]:
    out: list[Finding] = []
    if host.counter_status("TcpExtTCPTimeouts") != "present":
        return out
    estab, estab_from, estab_ev = _established(host)
    d_to = host.delta("TcpExtTCPTimeouts")
    # one snapshot of a real host counts since boot; of a simulated run, the whole run
    since_boot = d_to is None and not host.simulated
    timeouts = _counted(host, "TcpExtTCPTimeouts")
    ev = host.counter_evidence("TcpExtTCPTimeouts") + estab_ev
    rtx = _retrans_ratio_counters(host)
    if d_to is not None:
        window = f"over {host.interval_s:.0f} s" if host.interval_s else "between the snapshots"
    else:
        window = host.cumulative_window("since boot (one snapshot)")
    estab_text = (
        ""
        if estab_from == "TcpCurrEstab"
        else " (the ESTAB sockets in the ss capture; nstat does not print TcpCurrEstab)"
    )
    ratio = timeouts / estab if estab and timeouts is not None else None
    sev = None
    if ratio is not None and ratio > RTO_RATIO_WARN:
        sev = "info" if since_boot else "critical" if ratio > RTO_RATIO_CRIT else "warning"
        summary = (
            f"TCPTimeouts is {timeouts:.0f} since boot with {estab:.0f} established connections now{estab_text} "
            "(one snapshot: take two to measure the current rate)"
            if since_boot
            else f"TCPTimeouts rose by {timeouts:.0f} {window} with {estab:.0f} established connections"
            f"{estab_text}: {100 * ratio:.1f} % (threshold {100 * RTO_RATIO_WARN:.0f} %)"
        )
    elif ratio is None and timeouts and not since_boot:
        # timeouts measured over an interval, nothing to divide them by: say so, never "healthy"
        sev = "warning"
        summary = f"TCPTimeouts rose by {timeouts:.0f} {window}; {NO_ESTABLISHED}"
    elif ratio is None and timeouts:
        host.notes.append(f"TCPTimeouts is {timeouts:.0f} since boot; {NO_ESTABLISHED}")
    if sev is not None:
        out.append(
            Finding(
                id="rto-rate",
                title="retransmission timeouts above 3 % of established connections"
                if ratio is not None
                else "retransmission timeouts (established connections not captured)",
                severity=sev,
                summary=summary + (f"; retransmitted {100 * rtx:.2f} % of segments" if rtx is not None else ""),
                mechanism=(
                    "An RTO fires when no ACK arrives for a whole retransmission timeout (at least 200 ms), "
                    "which happens when a burst loses a window's tail or the retransmission itself, so fast "
                    "recovery and tail loss probes could not repair it. Many RTOs on a healthy-looking network "
                    "usually mean short bursts of drops somewhere: a NIC ring or allowance, a shallow switch "
                    "buffer, a policer."
                ),
                next_checks=[
                    "`ethtool -S DEV` on both ends (rx_missed_errors, rx_no_buffer_count, rx_out_of_buffer, "
                    "bw_in_allowance_exceeded) -- story 004 found the receiver's NIC",
                    "`ethtool -g DEV`: is the rx ring below its maximum?",
                    "`tc -s qdisc` drops; `nstat -az` TCPLossProbes, TCPSpuriousRTOs over the same interval",
                ],
                evidence=ev,
                seed="004",
                data={
                    "timeouts": timeouts,
                    "established": estab,
                    "established_from": estab_from,
                    "ratio": ratio,
                    "since_boot": since_boot,
                    "retrans_ratio": rtx,
                    "interval_s": host.interval_s,
                    "rtt_ms": _median_rtt(_estab_only(host)),
                    "cc": host.cc_default(),
                },
            )
        )
    d_sp = _counted(host, "TcpExtTCPSpuriousRTOs")
    if d_sp and timeouts and d_sp / timeouts >= 0.2:
        out.append(
            Finding(
                id="spurious-rto",
                title="many RTOs were spurious",
                severity="info" if since_boot else "warning",
                summary=f"TCPSpuriousRTOs {d_sp:.0f} of TCPTimeouts {timeouts:.0f} ({100 * d_sp / timeouts:.0f} %)",
                mechanism=(
                    "F-RTO found that the original segment had arrived after all: the timeout fired because the ACK "
                    "was late, not lost. Delay spikes (a stalled receiver, CPU starvation, deep queues that fill "
                    "suddenly, Wi-Fi) make RTT estimates miss."
                ),
                next_checks=[
                    "ss rtt/rttvar and minrtt of the affected flows; CPU steal and softirq time on both ends",
                    "TcpExtTCPSpuriousRtxHostQueues (retransmitted while still queued on this host)",
                ],
                evidence=host.counter_evidence("TcpExtTCPSpuriousRTOs") + host.counter_evidence("TcpExtTCPTimeouts"),
                data={"spurious": d_sp, "timeouts": timeouts},
            )
        )
    tlp = _counted(host, "TcpExtTCPLossProbes")
    outsegs = _counted(host, "TcpOutSegs")
    if tlp and outsegs and tlp / outsegs > 0.001:
        rec = _counted(host, "TcpExtTCPLossProbeRecovery")
        out.append(
            Finding(
                id="tail-loss-probes",
                title="frequent tail loss probes",
                severity="info",
                summary=f"TCPLossProbes {tlp:.0f} per {outsegs:.0f} segments sent ({100 * tlp / outsegs:.2f} %)"
                + (f"; {rec:.0f} recovered a real loss" if rec is not None else ""),
                mechanism=(
                    "A tail loss probe retransmits the last segment after about two RTTs without ACKs, to turn a "
                    "would-be RTO into fast recovery. Many probes with few recoveries mean ACKs are delayed; many "
                    "recoveries mean the ends of bursts are being lost."
                ),
                next_checks=["compare with TCPTimeouts and TCPSackRecovery over the same interval"],
                evidence=host.counter_evidence("TcpExtTCPLossProbes"),
                data={"probes": tlp, "recovered": rec, "out_segs": outsegs},
            )
        )
    return out


_CONCEPT_TEXT = {
    "rx_ring_overflow": "receive ring ran out of descriptors",
    "rx_fifo_overflow": "NIC receive FIFO overflowed",
    "port_buffer_drop": "port buffer overflow",
    "cloud_bw_policer": "cloud bandwidth allowance exceeded",
    "cloud_pps_policer": "cloud packet-rate allowance exceeded",
}


def rule_nic_drops(host: Host) -> list[Finding]:
    out = []
    last = host.last
    if last is None:
        return out
    first = host.first if len(host.snapshots) > 1 else None
    for dev, nic in sorted(last.nics.items()):
        rings = host.rings.get(dev)
        if rings is None and dev == "?" and len(host.rings) == 1:
            rings = next(iter(host.rings.values()))  # a lone ethtool -g names the unnamed ethtool -S
        shown = rings.device if dev == "?" and rings is not None and rings.device else dev
        prev = first.nics.get(dev) if first is not None and first is not last else None
        hits: dict[str, float] = {}
        names: list[str] = []
        amounts: dict[str, float] = {}
        for name, v in nic.values.items():
            c = concept_of(name)
            if not c:
                continue
            d = v - prev.values[name] if prev is not None and name in prev.values else None
            amount = d if prev is not None else v
            if amount and amount > 0:
                hits[c[0]] = hits.get(c[0], 0.0) + amount
                names.append(name)
                amounts[name] = amount
        if not hits:
            continue
        rising = prev is not None or host.simulated  # a run's NIC counters start with the run
        dev = shown
        ring_small = rings is not None and rings.rx is not None and rings.rx_max is not None and rings.rx < rings.rx_max
        # drops since driver load alone are history; with the senders' retransmissions or
        # timeouts in the same capture (a run directory's counters.txt) they are the cause at hand
        rtx, tos = host.counter("TcpRetransSegs") or 0, host.counter("TcpExtTCPTimeouts") or 0
        with_losses = rtx > 0 or tos > 0
        sev = ("critical" if ring_small else "warning") if rising or with_losses else "info"
        concept_list = ", ".join(f"{_CONCEPT_TEXT[c]} ({v:.0f})" for c, v in hits.items())
        checks = []
        if ring_small:
            checks.append(
                f"raise the rx ring to its maximum: `ethtool -G {dev} rx {rings.rx_max}` (now {rings.rx}; "
                "story 004's fix was 1024 -> 8192)"
            )
        elif rings is None:
            checks.append(f"`ethtool -g {dev}`: current rx ring size against its maximum")
        if "cloud_bw_policer" in hits or "cloud_pps_policer" in hits:
            checks.append(
                "the instance exceeds its allowance in microbursts even if the average is low: a larger instance "
                "type or smoothing the senders' bursts; enable node_exporter's ethtool collector to graph it"
            )
        if "rx_ring_overflow" in hits:
            checks.append("softirq time per CPU (`mpstat -P ALL 1`, /proc/softirqs) and IRQ/RPS spreading")
        checks.append("TcpExtTCPTimeouts and TcpRetransSegs over the same interval on the senders")
        ev = [nic.evidence[n] for n in names if n in nic.evidence]
        if prev is not None:
            ev = [prev.evidence[n] for n in names if n in prev.evidence] + ev
        if rings is not None:
            ev += rings.evidence[:4]
        out.append(
            Finding(
                id="nic-rx-drops",
                title=f"receive-side drops on {dev}"
                + (
                    " (rising)"
                    if prev is not None
                    else " (during the run)"
                    if host.simulated
                    else " (since driver load)"
                ),
                severity=sev,
                summary=f"{dev}: {concept_list}"
                + (f"; rx ring {rings.rx} of max {rings.rx_max}" if rings else "")
                + (f"; with {rtx:.0f} retransmitted segments and {tos:.0f} RTOs" if with_losses else ""),
                mechanism=(
                    "Packets arriving in a burst faster than the host drains them (or than the cloud allowance "
                    "admits) are dropped before TCP sees them; a microburst of a few milliseconds is invisible in "
                    "per-second averages. The senders see the losses as retransmissions and, when a whole tail is "
                    "lost, as RTOs."
                ),
                next_checks=checks,
                evidence=ev,
                seed="004" if {"cloud_bw_policer", "rx_ring_overflow", "rx_fifo_overflow"} & set(hits) else None,
                data={
                    "device": dev,
                    "driver": nic.driver,
                    "counters": amounts,
                    "rising": rising,
                    "ring_rx": rings.rx if rings else None,
                    "ring_rx_max": rings.rx_max if rings else None,
                    "retrans_ratio": _retrans_ratio_counters(host),
                    "rtt_ms": _median_rtt(_estab_only(host)),
                    "cc": host.cc_default(),
                },
            )
        )
    return out


#: a shaper whose queue holds more than this many seconds of traffic at its rate is bufferbloat
TBF_DEEP_S = 1.0


def _tbf_queue_s(q) -> tuple[float, float | None, float | None, float]:  # noqa: ANN001
    """(the longest of lat and backlog in seconds at the rate, lat s, backlog s, rate bit/s) of
    a tbf, from its options in base units (:attr:`tcplab.diagnose.tc.Qdisc.params`: the same
    from ``tc -s qdisc`` and ``tc -s -j qdisc``)."""
    rate_bps = q.params.get("rate_bps", 0.0)
    lat_ns = q.params.get("lat_ns")
    lat_s = lat_ns / 1e9 if lat_ns is not None else None
    if lat_s is None and rate_bps > 0 and q.params.get("limit_bytes") is not None:
        lat_s = q.params["limit_bytes"] * 8 / rate_bps  # tc prints limit when lat is not given
    backlog_s = q.stats["backlog"] * 8 / rate_bps if rate_bps > 0 and "backlog" in q.stats else None
    return max(lat_s or 0.0, backlog_s or 0.0), lat_s, backlog_s, rate_bps


def rule_qdisc(host: Host) -> list[Finding]:
    """Drops and shaping of each egress qdisc (during the capture, or since the qdisc was
    created): tbf's drops, its deep queue or its shaping; fq's horizon and per-flow-limit
    drops; fq_codel's drops; any other qdisc's drops."""
    out = []
    snaps = [s for s in host.snapshots if s.qdiscs is not None]
    if not snaps:
        return out
    last = snaps[-1]
    prev = {q.key: q for q in snaps[0].qdiscs} if len(snaps) > 1 else {}
    # a qdisc under a tbf class (tbf's inner queue): tbf counts its drops as its own
    # (Linux v6.12 net/sched/sch_tbf.c: tbf_enqueue()), so they are reported once, on the tbf
    shapers = {(q.dev, q.handle.split(":")[0]) for q in last.qdiscs if q.kind == "tbf"}
    for q in last.qdiscs:
        if q.is_aggregate or q.dev == "lo":
            continue
        under_tbf = q.parent != "root" and (q.dev, q.parent.split(":")[0]) in shapers
        if under_tbf and q.kind not in ("tbf", "fq", "fq_codel"):
            continue
        seen = _QdiscSeen.of(host, q, prev.get(q.key))
        for findings in (_tbf_findings, _fq_findings, _fq_codel_findings, _other_qdisc_findings):
            out += findings(seen)
    return out


@dataclass(frozen=True)
class _QdiscSeen:
    """One qdisc as :func:`rule_qdisc` reads it: its counters' growth over the capture (or
    since it was created), the words for that window, and what its findings carry."""

    q: Any
    p: Any  # the qdisc in the first snapshot, or None
    window: str
    #: one snapshot of a real host: counts since the qdisc's creation, history (info); a
    #: simulated run's qdiscs were created with the run, so its counts are the run's
    measured: bool
    ev: list[Evidence]

    @classmethod
    def of(cls, host: Host, q: Any, p: Any) -> _QdiscSeen:
        window = "during the capture" if p is not None else host.cumulative_window("since the qdisc was created")
        ev = q.evidence + (p.evidence if p is not None else [])
        return cls(q, p, window, p is not None or host.simulated, ev)

    def d(self, name: str) -> float:
        """How much counter ``name`` grew (since the qdisc's creation with one snapshot)."""
        return self.q.value(name) - (self.p.value(name) if self.p is not None else 0.0)

    def cap(self, sev: str) -> str:
        """``sev`` when measured over the capture (or a simulated run), else ``info``."""
        return sev if self.measured else "info"

    @property
    def base(self) -> dict[str, Any]:
        """What each finding of the qdisc carries: which qdisc, its drops and packets."""
        q = self.q
        return {
            "device": q.dev,
            "kind": q.kind,
            "handle": q.handle,
            "drops": self.d("drops"),
            "packets": self.d("packets"),
        }


def _tbf_findings(seen: _QdiscSeen) -> list[Finding]:
    q, window, ev, base, cap = seen.q, seen.window, seen.ev, seen.base, seen.cap
    drops, over = seen.d("drops"), seen.d("overlimits")
    out: list[Finding] = []
    if q.kind == "tbf" and drops > 0:
        out.append(
            _qf(
                "tbf-drops",
                cap("warning"),
                f"tbf on {q.dev or '?'} dropped {drops:.0f} packets {window} (overlimits {over:.0f})",
                "A token bucket shaper queues packets that exceed its rate and drops them when its small "
                "queue (limit or latency) is full; TCP sees those drops as congestion and backs off. "
                "Overlimits without drops would only mean shaping (added delay).",
                [
                    "compare the tbf rate with the traffic's peak; raise `burst`/`latency` or move to "
                    "fq with EDT pacing (story 002: Cilium's Bandwidth Manager)"
                ],
                ev,
                "002",
                base,
            )
        )
    elif q.kind == "tbf" and _tbf_queue_s(q)[0] > TBF_DEEP_S:
        hold_s, lat_s, backlog_s, rate_bps = _tbf_queue_s(q)
        out.append(
            _qf(
                "tbf-bufferbloat",
                "warning",
                f"tbf on {q.dev or '?'} can queue {hold_s:.3g} s of traffic at its rate {_fmt_rate(rate_bps)}"
                + (f" (lat {lat_s:.3g} s)" if lat_s is not None else "")
                + (f"; backlog {backlog_s:.2f} s of it" if backlog_s is not None else "")
                + f"; {over:.0f} packets shaped, {drops:.0f} dropped {window}",
                "A shaper whose queue holds seconds of traffic never drops, so loss-based TCP (CUBIC) never "
                "backs off: it fills the queue until its send buffer is exhausted, and every flow through "
                "the shaper waits behind that standing queue (RTTs of seconds: bufferbloat). The CNI "
                "bandwidth plugin installs exactly such a tbf when Kubernetes gives only a rate: containerd "
                "passes a burst of 2^32-1 bits, so the plugin's limit (rate x 25 ms + burst) is about 537 MB "
                "and tc prints a latency of hundreds of seconds.",
                [
                    "the RTT of flows through this device (`ss -ti`: rtt in seconds is this queue)",
                    "set a small queue (tc's `latency 50ms` or `limit`), or shape with EDT and fq instead "
                    "(story 002: Cilium's Bandwidth Manager keeps the queue at the sender's socket)",
                ],
                ev,
                "002",
                base | {"hold_s": hold_s, "lat_s": lat_s, "backlog_s": backlog_s, "rate_bps": rate_bps},
            )
        )
    elif q.kind == "tbf" and over > 0:
        out.append(
            _qf(
                "tbf-shaping",
                "info",
                f"tbf on {q.dev or '?'} shaped {over:.0f} packets {window} without dropping",
                "Packets waited for tokens: the shaper is active and adds queueing delay but "
                "no loss. Latency-sensitive flows behind it see that delay.",
                ["check the tbf `lat` and the RTT of flows through it"],
                ev,
                "002",
                base,
            )
        )
    return out


def _fq_findings(seen: _QdiscSeen) -> list[Finding]:
    q, window, ev, base, cap, d = seen.q, seen.window, seen.ev, seen.base, seen.cap, seen.d
    out: list[Finding] = []
    if q.kind == "fq":
        hd, pl = d("horizon_drops"), d("flows_plimit")
        if hd > 0:
            out.append(
                _qf(
                    "fq-horizon-drops",
                    cap("warning"),
                    f"fq on {q.dev or '?'}: {hd:.0f} horizon_drops {window}",
                    "fq drops packets whose EDT timestamp lies beyond its horizon (10 s by default): a "
                    "rate limiter stamping departure times far in the future for a flow sending faster "
                    "than its rate. TCP sees these drops as loss.",
                    [
                        "the pod's egress-bandwidth annotation against the application's send rate",
                        "fq `horizon` and whether `horizon_drop` or `horizon_cap` is set",
                    ],
                    ev,
                    "002",
                    base,
                )
            )
        if pl > 0:
            out.append(
                _qf(
                    "fq-flow-limit",
                    cap("warning"),
                    f"fq on {q.dev or '?'}: {pl:.0f} drops at the per-flow limit (flows_plimit) {window}",
                    "fq caps each flow's queue (flow_limit, 100 packets by default); a flow bursting more "
                    "than that into the qdisc loses the excess. Large TSO bursts or an unpaced sender do "
                    "this.",
                    ["raise `flow_limit`, or check that the sender paces (BBR, or SO_MAX_PACING_RATE)"],
                    ev,
                    None,
                    base,
                )
            )
    return out


def _fq_codel_findings(seen: _QdiscSeen) -> list[Finding]:
    q, window, ev, base, cap, d = seen.q, seen.window, seen.ev, seen.base, seen.cap, seen.d
    drops, pkts = d("drops"), d("packets")
    out: list[Finding] = []
    if q.kind == "fq_codel" and drops > 0:
        frac = drops / pkts if pkts else 0.0
        out.append(
            _qf(
                "fq-codel-drops",
                cap("warning" if frac > 0.01 else "info"),
                f"fq_codel on {q.dev or '?'} dropped {drops:.0f} of {pkts:.0f} packets {window} "
                f"({100 * frac:.2f} %; drop_overlimit {d('drop_overlimit'):.0f})",
                "CoDel drops (or ECN-marks) when a queue's sojourn time stays above target (5 ms) for an "
                "interval, on purpose, to keep latency low; drop_overlimit counts drops because the whole "
                "qdisc was full. Drops here mean this host's egress is the bottleneck.",
                ["is the link saturated (`ip -s link`)? enable ECN if peers support it"],
                ev,
                None,
                base,
            )
        )
    return out


def _other_qdisc_findings(seen: _QdiscSeen) -> list[Finding]:
    q, window, ev, base = seen.q, seen.window, seen.ev, seen.base
    drops = seen.d("drops")
    out: list[Finding] = []
    if q.kind not in ("tbf", "fq", "fq_codel") and drops > 0:
        out.append(
            _qf(
                "qdisc-drops",
                "info",
                f"{q.kind} on {q.dev or '?'} dropped {drops:.0f} packets {window}",
                "The qdisc's queue overflowed: this host's egress was the bottleneck for a moment. With a "
                "FIFO the drops come in bursts and can cost RTOs.",
                ["egress utilisation and txqueuelen; consider fq or fq_codel"],
                ev,
                None,
                base,
            )
        )
    return out


def _qf(fid, sev, summary, mech, checks, ev, seed, data) -> Finding:  # noqa: ANN001
    return Finding(
        id=fid,
        title=summary.split(": ")[0] if ": " in summary else summary,  # a device may be NODE:ethN
        severity=sev,
        summary=summary,
        mechanism=mech,
        next_checks=checks,
        evidence=ev,
        seed=seed,
        data=data,
    )


def _estab_with_loopback(host: Host) -> list[Socket]:
    """Established sockets including loopback ones: a window or buffer limit is a property of
    the two endpoints, not of the path, so a local sender and reader show it as well."""
    return [s for s in _estab(host) if s.state == "ESTAB"]


def _recv_buffer(s: Socket) -> int | None:
    """The socket's receive buffer in bytes: ``skmem:(rb...)`` (sk_rcvbuf, ``ss -m``)."""
    rb = s.skmem.get("rb")
    return rb if rb and rb > 0 else None


def _unread(host: Host) -> dict[tuple[str, str], tuple[Socket, float | None]]:
    """Receiving sockets with unread data: (local, peer) -> (socket, Recv-Q / rb).

    ss's Recv-Q of an established socket is the data that arrived and that the application
    has not read yet (``rcv_nxt - copied_seq``, iproute2 ``misc/ss.c``; Linux v6.12
    net/ipv4/tcp_diag.c: tcp_diag_get_info()). It occupies the receive buffer, so the window
    the socket advertises shrinks by it (Linux v6.12 net/ipv4/tcp_output.c:
    __tcp_select_window() works from tcp_space(), the buffer minus what is queued). With
    several snapshots the queue must be non-empty in each one that shows the socket: a reader
    that caught up in between is not behind. A reader that keeps up has an empty queue at
    almost every instant, since it is woken for every arrival.
    """
    out: dict[tuple[str, str], tuple[Socket, float | None]] = {}
    earlier = [sn.sockets for sn in host.snapshots[:-1] if sn.sockets is not None]
    for s in _estab_with_loopback(host):
        if s.recv_q <= 0:
            continue
        if any(o.key == s.key and o.recv_q == 0 for socks in earlier for o in socks):
            continue
        rb = _recv_buffer(s)
        out[s.key] = (s, s.recv_q / rb if rb else None)
    return out


def _slow_alone(s: Socket, share: float | None) -> bool:
    """A receiving socket whose sender is not in the capture: read slowly when its unread data
    holds at least :data:`SLOW_READ_SHARE` of its buffer (:data:`SLOW_READ_BYTES` without
    ``-m``). Lower than that, one snapshot cannot tell a slow reader from a busy moment: the
    queue of a slow reader saw-tooths, since the receiver reopens the window only once it can
    grow it substantially (Linux v6.12 net/ipv4/tcp.c: __tcp_cleanup_rbuf())."""
    if share is not None:
        return share >= SLOW_READ_SHARE
    return s.recv_q >= SLOW_READ_BYTES


def _reader_text(s: Socket, share: float | None) -> str:
    buf = f" = {100 * share:.0f} % of its {_recv_buffer(s)}-byte receive buffer" if share is not None else ""
    return f"Recv-Q {s.recv_q} bytes unread at {s.local}{buf}"


SLOW_READ_MECHANISM = (
    "Data the application has not read yet sits in the receive queue (ss's Recv-Q) and takes "
    "receive-buffer space, so the window the receiver advertises shrinks to what is left; the "
    "sender then waits for the reader, whatever the network can carry (ss counts that time as "
    "rwnd_limited). A bigger tcp_rmem only delays the stall: the reader is the bottleneck."
)
SLOW_READ_CHECKS = [
    "the receiving application: is its read loop blocked or slow (CPU, disk, a lock, a small read "
    "size)? e.g. `strace -f -e trace=read,recvfrom,recvmsg -p PID`, `top -H -p PID`",
    "whether it sets SO_RCVBUF (which also turns receive-buffer autotuning off)",
]


def rule_window_limited(host: Host) -> list[Finding]:
    out = []
    estab = _estab_with_loopback(host)
    socks = [s for s in estab if s.values.get("busy_ms", 0) > 0]
    # a sender held by the window whose reader is in the capture with unread data in every
    # snapshot: the reader is what holds it (with a reader that keeps up, Recv-Q stays ~0)
    readers = _unread(host)
    explained: set[tuple[str, str]] = set()
    for kind, sysctl_name, fix in (
        (
            "rwnd_limited",
            "net.ipv4.tcp_rmem",
            "raise the receiver's tcp_rmem max (and net.core.rmem_max if the "
            "application sets SO_RCVBUF, which also turns autotuning off)",
        ),
        (
            "sndbuf_limited",
            "net.ipv4.tcp_wmem",
            "raise this host's tcp_wmem max (and net.core.wmem_max if the application sets SO_SNDBUF)",
        ),
    ):
        flagged = []
        for s in socks:
            share = s.values.get(f"{kind}_pct")
            if share is None and f"{kind}_ms" in s.values:
                share = 100.0 * s.values[f"{kind}_ms"] / s.values["busy_ms"]
            if share is not None and share >= LIMITED_SHARE:
                flagged.append((s, share))
        if not flagged:
            continue
        # the receiving ends of flagged senders, when they are in this capture too (a local reader)
        their_readers = (
            [readers[(s.peer, s.local)] for s, _ in flagged if (s.peer, s.local) in readers]
            if kind == "rwnd_limited"
            else []
        )
        explained |= {r.key for r, _ in their_readers}
        triple = host.sysctls.triple(sysctl_name)
        bdp = [s.values.get("delivery_rate_bps", 0) / 8 * s.values.get("rtt", 0) / 1000 for s, _ in flagged]
        worst = max(share for _s, share in flagged)
        what = "receive window" if kind == "rwnd_limited" else "send buffer"
        summary = (
            f"{plural(len(flagged), 'connection')} limited by the {what} for up to {worst:.0f} % of their busy time"
        )
        if their_readers:
            r, rshare = max(their_readers, key=lambda it: it[0].recv_q)
            summary += f": receiver application reading slowly ({_reader_text(r, rshare)})"
        if triple:
            summary += f"; {sysctl_name.split('.')[-1]} max {triple[2]} bytes"
        if bdp and max(bdp) > 0:
            summary += f"; bandwidth-delay product at the delivered rate about {max(bdp):.0f} bytes"
        mechanism = (
            f"The kernel's busy-time accounting says these connections had data to send but were held by the "
            f"{what}, not by cwnd: the network could carry more. A window below the bandwidth-delay product "
            "caps throughput at window / RTT whatever the congestion control does."
        )
        checks = [fix, "the application's own buffer settings (setsockopt) and read/write pattern"]
        if their_readers:
            mechanism += " Here the receiving socket is in the capture with unread data: " + SLOW_READ_MECHANISM
            checks = SLOW_READ_CHECKS + [fix]
        out.append(
            Finding(
                id=kind.replace("_", "-"),
                title=f"flows limited by the {what}" + (": receiver reading slowly" if their_readers else ""),
                severity="warning",
                summary=summary,
                mechanism=mechanism,
                next_checks=checks,
                evidence=_ev([s for s, _ in flagged])
                + _ev([r for r, _ in their_readers])
                + ([host.sysctls.evidence[sysctl_name]] if sysctl_name in host.sysctls.evidence else []),
                data={
                    "kind": kind,
                    "connections": len(flagged),
                    "max_share_pct": worst,
                    "sysctl": triple,
                    "bdp_bytes_estimate": max(bdp) if bdp else None,
                    "rtt_ms": _median_rtt([s for s, _ in flagged]),
                    "rate_bps": max((_rate(s) or 0) for s, _ in flagged) or None,
                    "cc": flagged[0][0].cc,
                    "slow_reader": bool(their_readers),
                    "recv_q_bytes": max((r.recv_q for r, _ in their_readers), default=None),
                },
            )
        )
    rest = [(s, share) for key, (s, share) in readers.items() if key not in explained and _slow_alone(s, share)]
    if rest:
        worst_s, worst_share = max(rest, key=lambda it: it[0].recv_q)
        out.append(
            Finding(
                id="slow-reader",
                title="receiver application reading slowly",
                severity="warning",
                summary=f"{plural(len(rest), 'receiving connection')} with unread data: "
                f"receiver application reading slowly ({_reader_text(worst_s, worst_share)})",
                mechanism=SLOW_READ_MECHANISM,
                next_checks=SLOW_READ_CHECKS
                + ["on the sending host, `ss -tin` shows the time it was held as rwnd_limited:Xms(Y%)"],
                evidence=_ev([s for s, _ in sorted(rest, key=lambda it: -it[0].recv_q)]),
                data={
                    "connections": len(rest),
                    "recv_q_bytes": worst_s.recv_q,
                    "recv_buffer_share": worst_share,
                    "rtt_ms": _median_rtt([s for s, _ in rest]),
                    "cc": worst_s.cc,
                },
            )
        )
    return out


def _run_qdisc_words(host: Host, qsnap) -> tuple[str, list[str]]:  # noqa: ANN001
    """For a simulated run, what its scenario gives each BBR-sending host: the root qdiscs of
    its devices (its tc texts), its ``net.core.default_qdisc`` (scenario.yaml), and where the
    scenario changes them. A real host's advice (``sysctl -w``) does not apply to a run."""
    bbr_ccs = {"bbr", "bbr2", "bbr3"}
    senders = sorted(n for n, ccs in host.run_flow_cc.items() if ccs & bbr_ccs)
    parts: list[str] = []
    checks: list[str] = []
    for n in senders:
        devs = [q for q in (qsnap.qdiscs if qsnap else []) if (q.dev or "").startswith(f"{n}:") and q.parent == "root"]
        text = f"{n}: " + (", ".join(f"{q.dev} has {q.kind}" for q in devs) or "no device in the tc texts")
        if n in host.run_default_qdisc:
            d = host.run_default_qdisc[n]
            text += (
                f", default_qdisc is {d} in the scenario"
                if d
                else ", default_qdisc is not set in the scenario (pfifo_fast, Linux's default)"
            )
            if host.run_host_qdisc.get(n):
                text += f", hosts.{n}.qdisc is {host.run_host_qdisc[n]}"
        parts.append(text)
        checks.append(
            f"give the sender fq in the scenario: `hosts.{n}.qdisc: fq` (or `sysctl: {{default_qdisc: fq}}`), "
            "or Cilium's Bandwidth Manager (EDT with fq)"
        )
    return "; ".join(parts) or "the BBR senders are not named in summary.json", checks or [
        "give the BBR senders fq in the scenario (`hosts.NAME.qdisc: fq`)"
    ]


def rule_config(host: Host) -> list[Finding]:
    out = []
    bbr = _bbr_in_use(host)
    socks = _estab_only(host)
    # BBR without fq / EDT
    if bbr:
        qsnap = next((s for s in reversed(host.snapshots) if s.qdiscs is not None), None)
        fq_seen = qsnap is not None and any(q.kind == "fq" and q.dev != "lo" for q in qsnap.qdiscs)
        default_fq = host.sysctls.get("net.core.default_qdisc") == "fq"
        cilium_edt = bool(host.cilium and host.cilium.bandwidth_manager)
        known = qsnap is not None or "net.core.default_qdisc" in host.sysctls.values
        if known and not (fq_seen or default_fq or cilium_edt):
            old = host.kernel is not None and host.kernel.version < (4, 13)
            ev = []
            if "net.ipv4.tcp_congestion_control" in host.sysctls.evidence:
                ev.append(host.sysctls.evidence["net.ipv4.tcp_congestion_control"])
            if "net.core.default_qdisc" in host.sysctls.evidence:
                ev.append(host.sysctls.evidence["net.core.default_qdisc"])
            if qsnap is not None:
                ev.extend(q.evidence[0] for q in qsnap.qdiscs[:4] if q.evidence)
            run_words, run_checks = _run_qdisc_words(host, qsnap) if host.simulated else ("", [])
            out.append(
                Finding(
                    id="bbr-without-fq",
                    title="BBR without the fq qdisc",
                    severity="warning" if old else "info",
                    summary=(
                        "BBR is in use, "
                        + ("no egress device has fq" if qsnap is not None else "no tc capture to check the devices")
                        + (
                            f" ({run_words})"
                            if host.simulated
                            else " and default_qdisc is "
                            + (host.sysctls.get("net.core.default_qdisc") or "not in the capture")
                        )
                        + (
                            f" (kernel {host.kernel.release} < 4.13: BBR is not paced at all)"
                            if old
                            else " (TCP's internal pacing is used)"
                        )
                    ),
                    mechanism=(
                        "BBR relies on pacing to send at its bandwidth estimate; before Linux 4.13 only the fq qdisc "
                        "paced, and since then TCP falls back to an hrtimer per socket, which works but costs CPU and "
                        "is less precise at high rates. Unpaced or coarsely paced BBR bursts into shallow buffers."
                    ),
                    next_checks=run_checks
                    if host.simulated
                    else [
                        "`sysctl -w net.core.default_qdisc=fq` and re-create the root qdisc (`tc qdisc replace "
                        "dev DEV root fq`), or use EDT (Cilium Bandwidth Manager)"
                    ],
                    evidence=ev,
                    data={"kernel": host.kernel.release if host.kernel else None},
                )
            )
    # Cilium Bandwidth Manager with BBR on sub-ms paths
    c = host.cilium
    if c is not None and c.bandwidth_manager and c.bm_cc == "bbr":
        rtt = _median_rtt(socks)
        sub_ms = rtt is not None and rtt < SUB_MS_RTT
        out.append(
            Finding(
                id="cilium-bbr-low-rtt",
                title="Cilium Bandwidth Manager with BBR" + (" on sub-millisecond paths" if sub_ms else ""),
                # info, not warning: tcplab's replay of story 000 (cluster-bbr-timeouts) finds BBR
                # neither stuck low nor worse than CUBIC on such paths (see the mechanism)
                severity="info",
                summary="BandwidthManager enforces BBR ("
                + (f"Cilium {c.version}" if c.version else "Cilium version not in the capture")
                + (f", devices {', '.join(c.bm_devices)}" if c.bm_devices else ", devices not listed")
                + ")"
                + (
                    f"; median srtt of {len(socks)} connections {rtt:.3f} ms"
                    if rtt is not None
                    else "; no ss capture to check the RTTs"
                ),
                mechanism=(
                    "`bbr: true` sets BBR for the pods' sockets only; the node's own (an NFS mount's) keep the "
                    "node's net.ipv4.tcp_congestion_control, and for NFS reads the data's sender is the server. "
                    "Story 000 blamed BBR for NFS stalls and 120 s write timeouts on such a cluster; tcplab's replay "
                    "(tcplab reproduce cluster-bbr-timeouts) does not find BBR at fault: its bandwidth estimate "
                    "tracks the pod's rate at sub-millisecond RTTs, its long-term (policer) rate does not pin it "
                    "low, and the long stalls come from retransmission timeouts backing off during bursts of loss, "
                    "which hold CUBIC as long. `cwnd:2 ssthresh:2` is a loss-based cc's signature: BBR never lowers "
                    "ssthresh on loss (tcp_bbr.c: bbr_ssthresh())."
                ),
                next_checks=[
                    "find the loss first: `nstat -az TcpExtTCPTimeouts TcpRetransSegs` and `ethtool -S DEV` "
                    "(rx_missed_errors, rx_crc_errors) on both ends; switching cc does not remove it",
                    "`ss -tin` on the side that sends the data (for NFS reads, the server): `backoff:` and `rto:` "
                    "show a connection waiting out its RTO",
                    "replay it: `tcplab reproduce cluster-bbr-timeouts` runs the story with BBR and CUBIC under the "
                    "same losses",
                ],
                evidence=[c.evidence] + _ev(socks[:2], 2) if c.evidence else _ev(socks[:2], 2),
                seed="000",
                data={"rtt_ms": rtt, "cc": "bbr", "connections": len(socks), "version": c.version},
            )
        )
    # CPU steal
    cpus = [s.cpu for s in host.snapshots if s.cpu is not None]
    if host.cpu_node is not None and "bbr" in host.run_flow_cc.get(host.cpu_node, set()):
        bbr = True  # a run directory: the diagnosed node sends with BBR (summary.json)
    elif host.cpu_node is None and len(host.run_flow_cc) and any("bbr" in c for c in host.run_flow_cc.values()):
        bbr = True  # one node's /proc/stat and BBR senders in the run
    if cpus:
        a, b = cpus[0], cpus[-1]
        if len(cpus) > 1 and b.total > a.total:
            steal = (b.ticks.get("steal", 0) - a.ticks.get("steal", 0)) / (b.total - a.total)
            window = "during the capture"
        else:
            steal = b.ticks.get("steal", 0) / b.total if b.total else 0.0
            window = host.cumulative_window("since boot")
        if steal >= STEAL_WARN:
            sev = ("critical" if steal >= STEAL_CRIT else "warning") if bbr else "info"
            if window == "since boot" and sev != "info":
                sev = "warning"
            out.append(
                Finding(
                    id="cpu-steal-bbr" if bbr else "cpu-steal",
                    title="CPU steal" + (" on a host sending with BBR" if bbr else ""),
                    severity=sev,
                    summary=f"{100 * steal:.1f} % of CPU time stolen by the hypervisor {window}",
                    mechanism=(
                        "A vCPU descheduled for a time slice stops sending and acknowledging, so BBR's delivery-rate "
                        "samples cover idle gaps and its bandwidth estimate drops; paced at that estimate, the flow "
                        "never offers enough load to measure more. Seed 003's kernel patch keeps a high pacing gain "
                        "while real inflight is below target."
                        if bbr
                        else "A vCPU descheduled by the hypervisor delays timers, ACK processing and transmission, "
                        "which "
                        "shows up as RTT spikes and spurious timeouts."
                    ),
                    next_checks=[
                        "`mpstat 1` / `vmstat 1` steal column over time; the instance's CPU credits or "
                        "noisy neighbours",
                        "compare BBR with CUBIC on this host",
                    ],
                    evidence=[x.evidence for x in (a, b) if x.evidence]
                    if len(cpus) > 1
                    else [b.evidence]
                    if b.evidence
                    else [],
                    seed="003" if bbr else None,
                    data={
                        "steal": steal,
                        "cc": "bbr" if bbr else host.cc_default(),
                        "rtt_ms": _median_rtt(socks),
                        "window": window,
                    },
                )
            )
    return out


_WANTED = (
    "TcpExtTCPLossProbes",
    "TcpExtTCPSpuriousRTOs",
    "TcpExtTCPSackRecovery",
    "TcpExtTCPFastRetrans",
    "TcpExtTCPBacklogDrop",
    "TcpExtTCPTimeouts",
    "TcpRetransSegs",
    "TcpCurrEstab",
)


def rule_not_collected(host: Host) -> list[Finding]:
    snaps = host.counter_snaps()
    if not snaps or snaps[-1].counters.kind != "prom":
        return []
    missing = [n for n in _WANTED if host.counter_status(n) == "not collected"]
    no_ethtool = not any(s.nics for s in host.snapshots)
    if not missing and not no_ethtool:
        return []
    parts = []
    if missing:
        parts.append("not collected (not zero): " + ", ".join(missing))
    if no_ethtool:
        parts.append("no NIC counters (node_exporter's ethtool collector is off by default)")
    return [
        Finding(
            id="not-collected",
            title="counters the scrape does not carry",
            severity="info",
            summary="; ".join(parts),
            mechanism=(
                "node_exporter's default --collector.netstat.fields keeps only a few TCP counters, and its ethtool and "
                "qdisc collectors are disabled by default. Absent counters are unknown, so tcplab draws no conclusion "
                "from them."
            ),
            next_checks=[
                "run node_exporter with --collector.netstat.fields='^(.*)$' (or add TCPLossProbes|TCPSpuriousRTOs|"
                "TCPSackRecovery|TCPFastRetrans|TCPBacklogDrop to the regex) and --collector.ethtool --collector.qdisc",
                "or run `tcplab collect` on the host",
            ],
            evidence=[],
            data={"missing": missing, "ethtool": not no_ethtool},
        )
    ]


RULES: list[Callable[[Host], list[Finding]]] = [
    rule_cwnd_collapse,
    rule_bbr_starved,
    rule_rto,
    rule_nic_drops,
    rule_qdisc,
    rule_window_limited,
    rule_config,
    rule_not_collected,
]


def run_rules(host: Host, scenarios: bool = True) -> list[Finding]:
    findings: list[Finding] = []
    for rule in RULES:
        findings.extend(rule(host))
    if scenarios:
        from tcplab.diagnose.scenarios import scenario_for

        for f in findings:
            f.scenario = scenario_for(f, host)
    findings.sort(key=lambda f: -SEVERITIES.index(f.severity))
    return findings


# ---------------------------------------------------------------- loss-bound-cc (seed 001)

#: Congestion controls that cut their window on every loss (Linux's tcp_*.c loss-based modules).
LOSS_BASED_CCS = frozenset(
    ["cubic", "reno", "bic", "htcp", "highspeed", "hybla", "illinois", "scalable", "veno", "westwood", "yeah", "lp"]
)
LOSS_BOUND_MIN_P = 0.002  # 0.2 % of segments retransmitted: below it the bound is far above any path here
LOSS_BOUND_QUEUE = 1.25  # srtt / minrtt: above it a standing queue says the loss may be congestion
LOSS_BOUND_NEAR = 1.5  # send rate within 1.5x of the bound: the loss, not the path, sets the rate
LOSS_BOUND_MIN_SEGS = 500  # data segments sent: enough for a loss rate to mean something


def mathis_bound_bps(mss_bytes: float, rtt_s: float, p: float) -> float:
    """Mathis et al. (1997): a Reno-like CC averages at most 1.22 x MSS / (RTT x sqrt(p)).
    CUBIC's TCP-friendly region (Linux v6.12 net/ipv4/tcp_cubic.c: bictcp_update()) keeps it
    at least at this rate, and at small windows it runs there."""
    return 1.22 * mss_bytes * 8 / (rtt_s * p**0.5)


def _loss_p(s: Socket) -> float | None:
    """Retransmitted share of the socket's data segments (``retrans:a/TOTAL`` over
    ``data_segs_out``), else of its bytes (``bytes_retrans`` over ``bytes_sent``), else
    ``retrans`` total over acked segments plus retransmissions (ss of older kernels)."""
    segs = s.values.get("data_segs_out", 0)
    if segs >= LOSS_BOUND_MIN_SEGS and "retrans_total" in s.values:
        return s.values["retrans_total"] / segs
    mss = s.values.get("mss", 1448)
    sent = s.values.get("bytes_sent", 0)
    if sent >= LOSS_BOUND_MIN_SEGS * mss:
        return s.values.get("bytes_retrans", 0) / sent
    # ss from kernels before 4.19 (no bytes_sent/data_segs_out): acked segments + retransmissions
    acked = s.values.get("bytes_acked", 0)
    if "retrans_total" in s.values and acked >= LOSS_BOUND_MIN_SEGS * mss:
        return s.values["retrans_total"] / (acked / mss + s.values["retrans_total"])
    return None


def rule_loss_bound_cc(host: Host) -> list[Finding]:
    """A loss-based CC held at the Mathis bound by loss that is not congestion (seed 001).

    What ``ss -tin`` on the sender shows: the CC name, ``retrans:cur/total`` against
    ``data_segs_out`` (the loss rate p), ``rtt`` close to ``minrtt`` (no queue built up, so the
    losses are not a full bottleneck queue's), and ``send`` (cwnd x MSS / srtt, the rate the
    window allows) near 1.22 x MSS / (RTT x sqrt(p)). BBR is not bound this way."""
    out: list[Finding] = []
    for peer, socks in _by_peer(_estab_only(host)).items():
        bound: list[tuple[Socket, float, float]] = []
        for s in socks:
            if (s.cc or "") not in LOSS_BASED_CCS:
                continue
            p = _loss_p(s)
            rtt, minrtt, send = s.values.get("rtt"), s.values.get("minrtt"), s.values.get("send_bps")
            if p is None or p < LOSS_BOUND_MIN_P or not rtt or not minrtt or not send:
                continue
            if rtt > LOSS_BOUND_QUEUE * minrtt:
                continue
            limit = mathis_bound_bps(s.values.get("mss", 1448), rtt / 1e3, p)
            if send <= LOSS_BOUND_NEAR * limit:
                bound.append((s, p, limit))
        if not bound:
            continue
        ps = sorted(p for _, p, _ in bound)
        p_med = statistics.median(ps)
        limits = sorted(b for _, _, b in bound)
        ccs = sorted({s.cc or "?" for s, _, _ in bound})
        nstat_p = _retrans_ratio_counters(host)
        out.append(
            Finding(
                id="loss-bound-cc",
                title=f"random loss bounds {', '.join(ccs)} to {peer}",
                severity="warning" if p_med >= 0.01 else "info",
                summary=(
                    f"{len(bound)} of {len(socks)} {', '.join(ccs)} "
                    f"{'connection' if len(socks) == 1 else 'connections'} to {peer} retransmit "
                    f"{100 * p_med:.2g} % of segments with rtt near minrtt (no queue) and send at the Mathis "
                    f"bound, about {_fmt_rate(statistics.median(limits))}"
                ),
                mechanism=(
                    "A loss-based congestion control cuts its window on every loss, so with a loss rate p it "
                    "averages at most 1.22 x MSS / (RTT x sqrt(p)) whatever the link's capacity. The RTT staying "
                    "at its minimum says the losses do not come from a full queue: the path drops at random "
                    "(radio, a faulty hop, a policer), and the window, not the bandwidth, sets the rate."
                ),
                next_checks=[
                    "nstat TcpRetransSegs / TcpOutSegs over an interval: the same loss rate host-wide?",
                    "`tc -s qdisc` here and `ethtool -S DEV` on both ends: local drops, or on the path?",
                    f"`mtr -rwc 500 {peer}` or ping -c 1000: which hop loses packets",
                    "if the loss cannot be removed, BBR (with fq) does not treat isolated loss as congestion "
                    "(story 001: BBR held an HD video CUBIC could not)",
                ],
                evidence=_ev([s for s, _, _ in bound]),
                seed="001",
                data={
                    "peer": peer,
                    "connections": len(socks),
                    "bound": len(bound),
                    "cc": ccs[0] if len(ccs) == 1 else ccs,
                    "loss_ratio": p_med,
                    "retrans_ratio": p_med,  # the loss tcplab diagnose's generated scenario uses
                    "mathis_bps": statistics.median(limits),
                    "rtt_ms": _median_rtt([s for s, _, _ in bound]),
                    "nstat_retrans_ratio": nstat_p,
                },
            )
        )
    return out


RULES.append(rule_loss_bound_cc)

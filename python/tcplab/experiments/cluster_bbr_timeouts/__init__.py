"""cluster-bbr-timeouts: story 000, a homelab cluster where BBR was blamed for NFS and write timeouts.

The story. A Kubernetes cluster (Talos, Cilium with the Bandwidth Manager) on a gigabit LAN
with sub-millisecond RTTs. Plex on node marin streams a 4K file (about 80 Mbit/s) read over
NFS (nconnect 4, later 16) from the NAS nezuko; its buffer collapsed and ``ss`` showed the
NFS connections at ``cwnd:2 ssthresh:2``. vmagent's remote writes (54766-byte batches) to
vmsingle timed out after 120 s. The team blamed a "BBR stuck-state bug" (throughput stuck
near 100 kbit/s), noticed that a 2-minute check had looked healthy while the problem came
back later, and resolved it with CUBIC under the Bandwidth Manager.

The model. Three scenario files: ``plex-nfs.yaml`` (the NFS server's TCP sends the READ
replies, so its cc is the one that matters; the player plays from a 30 s buffer),
``remote-write.yaml`` (vmagent and vmsingle as pods under the Bandwidth Manager, BBR or
CUBIC through ``bandwidth_manager.bbr``) and ``bbr-stuck-search.yaml`` (one bulk flow from
a 100 Mbit/s Bandwidth-Manager pod, the testbed of the search for a stuck BBR).

Where the story is silent. It measured "<0.001%" loss, yet ``cwnd:2 ssthresh:2`` needs
repeated loss (each loss episode halves ssthresh at most, Linux v6.12
net/ipv4/tcp_cubic.c: cubictcp_recalc_ssthresh(), floored at 2). tcplab therefore puts
bursty loss on the switch port towards the receiving node (Gilbert-Elliott, 1 % of packets
start a burst that loses 5 packets on average: 4.8 % lost), the same for every run, and
sweeps its rate. The loss begins at 60 s (the scenario's ``loss: {..., start: 60s}``, a
netem qdisc added then), once the player's buffer has filled: the story's player was
healthy and then collapsed. The bursts are counted in packets, as netem's; a connection
that sends one retransmission per backed-off RTO stays in one burst for minutes, which is
what makes the write timeouts under them: the remote-write variants (an episode of loss that
ends, independent loss of the same mean, an outage) separate that from the symptom.
BBR's ssthresh is not a loss response at all: bbr_ssthresh() returns it unchanged and
only bbr_check_drain() sets it, to the estimated BDP, when STARTUP ends (Linux v6.12
net/ipv4/tcp_bbr.c), so ``ssthresh:2`` is the signature of a loss-based cc, which the
story's first incident ran (CUBIC, before BBR was enabled).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tcplab.experiments.base import ClaimResult, Crosscheck, Experiment, Explanation, Run
from tcplab.experiments.catalog import STORIES
from tcplab.experiments.cluster_bbr_timeouts import analysis
from tcplab.experiments.cluster_bbr_timeouts.readings import (
    CHECK_S,
    EPISODE_END_S,
    LOSS_START_S,
    STUCK_BPS,
    episode_text,
    mechanism,
)
from tcplab.experiments.cluster_bbr_timeouts.sweep import STUCK_POINTS
from tcplab.units import plural

if TYPE_CHECKING:
    from tcplab.results import Result

__all__ = ["ClusterBbrTimeouts", "EXPERIMENT"]

#: The NFS server's congestion control (it sends the data: the READ replies).
NFS_CC = "hosts.nezuko.sysctl.net.ipv4.tcp_congestion_control"
#: The loss of the files, restated for the variants: Gilbert-Elliott p 1 %, r 20 %, from 60 s.
BURSTY = "{gilbert_elliott: {p: 1%, r: 20%}, start: 60s"
EPISODE = f"links.1.loss={BURSTY}, end: 10min}}"
#: The same mean loss as the bursts (p / (p + r) = 4.76 %), each packet independently, from 60 s.
RANDOM = "links.1.loss={random: 4.76%, start: 60s}"
#: A buffer at least this full when the loss begins counts as "healthy, then the loss came"
#: (two thirds of the player's 30 s; the story's buffer read 27.9 s).
FULL_BUFFER_S = 20.0
#: Loss rates of the full mode's sweep (Gilbert-Elliott p; r stays 20 %).
NFS_SWEEP_P = ("0.1%", "0.5%", "2%")
#: The outage of the remote-write variant: 3 minutes from t = 5 min.
OUTAGE = "links.1.loss={outage: {start: 5min, end: 8min}}"
#: Linux v6.12 net/ipv4/tcp_timer.c: tcp_write_timeout(): with tcp_retries2 = 15 and an RTO of
#: TCP_RTO_MIN (200 ms) doubling to TCP_RTO_MAX (120 s), a connection is aborted after
#: 0.2 x (2^10 - 1) + 6 x 120 = 924.6 s without an ACK (retransmits_timed_out()).
RETRIES2_TIMEOUT_S = 924.6
#: The story's stuck rate, for the figure.
STORY_STUCK_BPS = 100_000


def _loss(p: str) -> str:
    return f"links.1.loss={{gilbert_elliott: {{p: {p}, r: 20%}}, start: 60s}}"


def _mbps(bps: float | None) -> str:
    if bps is None:
        return "-"
    if bps < 1e6:
        return f"{bps / 1e3:.3g} kbit/s"
    return f"{bps / 1e6:.3g} Mbit/s"


class ClusterBbrTimeouts(Experiment):
    name = "cluster-bbr-timeouts"
    story = STORIES["cluster-bbr-timeouts"]
    title = "BBR blamed for NFS stalls and 120 s write timeouts in a sub-millisecond cluster"
    setup = (
        "A gigabit switch joins the NFS server (nezuko), the Plex node (marin) and two more "
        "nodes (sakura, nami), 0.4 ms RTT. **Plex** reads a 4K file (80 Mbit/s) over NFS "
        "with nconnect 4 (16 in full mode), READs of 1 MiB, into a 30 s player buffer; the "
        "NFS server's TCP sends the data, with CUBIC or BBR and fq. **vmagent** (a pod on "
        "sakura) posts a 54766-byte batch every second to **vmsingle** (a pod on nami), 120 s "
        "timeout, backoff to 1 min; both pods run under Cilium's Bandwidth Manager, with BBR "
        "or CUBIC. The story measured under 0.001 % loss, which cannot give `cwnd:2 "
        "ssthresh:2`; tcplab makes the switch port towards the receiving node lose packets "
        "in bursts (Gilbert-Elliott p = 1 %, r = 20 %: 4.8 % lost, 5 at a time) from t = 60 s, "
        "once the player's buffer is full (a netem qdisc added then), and, in full mode, sweeps "
        "p from 0.1 % to 2 %. The stream runs 60 simulated minutes in full mode (3 min in quick "
        "mode); the remote writes run the hour in both modes, and, to tell the symptom from the "
        "loss model (bursts counted in packets), also with the bursts ending at 10 min, with "
        "independent loss of the same mean, and with a 3-minute outage of the port. The search for a BBR "
        "stuck near 100 kbit/s runs a bulk flow from a 100 Mbit/s Bandwidth-Manager pod under "
        "one condition at a time (random and bursty loss, reordering, CPU share, a policer, a low EDT rate)."
    )

    def __init__(self, directory: Path):
        super().__init__(directory)
        #: Set by evaluate(): a moment when >= 2 NFS connections were collapsed (ss then).
        self._collapse_at_s: float | None = None

    # -- runs ------------------------------------------------------------------------------
    def runs(self, quick: bool) -> list[Run]:
        runs: list[Run] = []
        for cc in ("cubic", "bbr"):
            runs.append(
                Run(
                    f"nfs-{cc}",
                    "plex-nfs.yaml",
                    overrides=(f"{NFS_CC}={cc}", "duration=60min", "sample_interval=1s"),
                    quick_overrides=("duration=3min", "sample_interval=100ms"),
                    group="Plex over NFS",
                )
            )
        for cc in ("cubic", "bbr"):
            for p in NFS_SWEEP_P:
                runs.append(
                    Run(
                        f"nfs-{cc}-p{p.rstrip('%')}",
                        "plex-nfs.yaml",
                        overrides=(f"{NFS_CC}={cc}", _loss(p), "duration=3min"),
                        quick=False,
                        group="Plex over NFS: burst rate",
                    )
                )
            runs.append(
                Run(
                    f"nfs16-{cc}",
                    "plex-nfs.yaml",
                    overrides=(f"{NFS_CC}={cc}", "flows.0.app.nfs_stream.nconnect=16", "duration=3min"),
                    quick=False,
                    group="Plex over NFS: nconnect 16",
                )
            )
        # The remote writes cost little (one 54766-byte batch a second): every mode runs the
        # hour, so quick and full judge the writes on the same runs.
        hour = ("duration=60min", "sample_interval=1s")
        # (label suffix, extra overrides, group): the hour under bursts from 60 s; the bursts
        # from 60 s to 10 min only (do the timeouts persist once the loss ends?); the same mean
        # loss (4.76 %) on each packet independently (do the timeouts need bursts?); a 3-minute
        # outage of the switch port (a link flap, a Cilium restart) and no other loss.
        variants = (
            ("", hour, "remote write"),
            ("-episode", (EPISODE, *hour), "remote write: an episode of loss"),
            ("-random", (RANDOM, *hour), "remote write: random loss"),
            ("-outage", (OUTAGE, "duration=10min"), "remote write: an outage"),
        )
        for suffix, extra, group in variants:
            for cc, bbr in (("cubic", "false"), ("bbr", "true")):
                overrides = (f"bandwidth_manager.bbr={bbr}", *extra)
                runs.append(Run(f"rw-{cc}{suffix}", "remote-write.yaml", overrides=overrides, group=group))
        for point in STUCK_POINTS:
            runs.append(
                Run(
                    point.label,
                    "bbr-stuck-search.yaml",
                    overrides=point.overrides,
                    quick=point.quick,
                    group="stuck search",
                )
            )
        return [r for r in runs if r.quick or not quick]

    # -- claims ----------------------------------------------------------------------------
    def evaluate(self, results: Mapping[str, Result], quick: bool) -> list[ClaimResult]:
        return [
            self._cwnd_collapse(results, quick),
            self._stuck(results, quick),
            self._write_timeouts(results),
            self._short_window(results, quick),
            self._cubic_fix(results),
        ]

    def _nfs(self, results: Mapping[str, Result], label: str) -> dict[str, Any]:
        r = results[label]
        return {
            "collapse": analysis.collapse(r),
            "player": analysis.player(r),
            "buffer_after": analysis.buffer_after(r, LOSS_START_S),
        }

    @staticmethod
    def _suffers(player: dict[str, Any]) -> bool:
        """The player failed the story's way: never started, stalled, its buffer fell
        under 1 s, or it played less than 90 % of the run."""
        mb = player["min_buffer_s"]
        return (
            not player["started"]
            or player["stalls"] > 0
            or (mb is not None and mb < 1.0)
            or player["played_fraction"] < 0.9
        )

    @staticmethod
    def _player_text(p: dict[str, Any]) -> str:
        if not p["started"]:
            return "playback never started"
        mb = p["min_buffer_s"]
        stalls = plural(p["stalls"], "stall")
        return f"played {100 * p['played_fraction']:.3g} % of the run, {stalls} ({p['stall_s']:.3g} s)" + (
            f", buffer min {mb:.3g} s" if mb is not None else ""
        )

    def _cwnd_collapse(self, results: Mapping[str, Result], quick: bool) -> ClaimResult:
        claim = self.claim("cwnd-collapse")
        runs = {cc: self._nfs(results, f"nfs-{cc}") for cc in ("cubic", "bbr")}
        sweep = {}
        for label in results:
            if label.startswith("nfs-") and "-p" in label or label.startswith("nfs16-"):
                sweep[label] = self._nfs(results, label)
        for d in runs.values():
            d["episode"] = d["buffer_after"]
        hit = [cc for cc, d in runs.items() if d["collapse"]["max_at_once"] >= 2]
        # Healthy when the loss came (playing, buffer >= 20 s), then stalled or under 1 s.
        fell = [cc for cc in hit if _full_then_fell(runs[cc]["buffer_after"])]
        c, b = runs["cubic"], runs["bbr"]
        self._collapse_at_s = c["collapse"]["first_multi_s"] or b["collapse"]["first_multi_s"]
        figure = (
            f"loss from {LOSS_START_S:.0f} s; CUBIC: {c['collapse']['max_at_once']} of 4 connections at "
            f"cwnd<=2 ssthresh<=2 at once (ssthresh min {c['collapse']['ssthresh_min']}), "
            f"{episode_text(c['buffer_after'])}; BBR: {b['collapse']['max_at_once']} at once (ssthresh min "
            f"{b['collapse']['ssthresh_min']}), {episode_text(b['buffer_after'])}"
        )
        sweep_text = "; ".join(
            f"{k}: {v['collapse']['max_at_once']} collapsed at once, {episode_text(v['buffer_after'])}"
            for k, v in sorted(sweep.items())
        )
        rule = (
            "(the rule: >= 2 connections at cwnd<=2 ssthresh<=2 at one sample, and a player that was "
            f"playing with >= {FULL_BUFFER_S:.0f} s of buffer when the loss began, then stalled or fell "
            "under 1 s). "
        )
        if fell:
            verdict = "reproduced"
            reason = (
                f"reproduced with {', '.join(x.upper() for x in fell)}: a healthy player, then the loss, then "
                "two or more NFS connections at cwnd<=2 ssthresh<=2 and the buffer run down to a stall " + rule
            )
        elif hit:
            verdict = "partly"
            reason = "partly: the connections collapsed but the player did not fall from a full buffer " + rule
        else:
            verdict = "not reproduced"
            reason = "not reproduced: no two connections were at cwnd<=2 ssthresh<=2 at once under this loss " + rule
        ce = c["buffer_after"]
        reason += (
            "In the model it is CUBIC's signature, not BBR's: each burst of loss cuts CUBIC's ssthresh "
            "(x0.7, floor 2) and RTOs during a burst put cwnd to 1, whereas BBR leaves ssthresh where "
            "STARTUP set it (tcp_bbr.c: bbr_ssthresh() keeps it) and paces at its bandwidth estimate "
            "through the loss. The story saw cwnd:2 ssthresh:2 in its first incident, with CUBIC, which "
            "agrees; its later claim that BBR 'masked' the collapse is what BBR does by design. The "
            "story's <0.001 % loss cannot take ssthresh to 2 (each loss episode cuts it once). "
        )
        low = {k: v for k, v in sweep.items() if k.endswith("-p0.1")}
        if low:
            held = [k for k, v in low.items() if not _full_then_fell(v["buffer_after"])]
            reason += (
                f"With bursts 10x rarer (p 0.1 %), the player held with {', '.join(sorted(held)) or 'neither cc'}. "
            )
        if ce.get("buffer_at_start_s") is not None:
            reason += (
                f"The fall, CUBIC: {ce['buffer_at_start_s']:.3g} s of buffer at {LOSS_START_S:.0f} s, "
                f"{_num(ce.get('buffer_20s_later_s'))} s 20 s later (story: 27.9 s -> 228 ms over 20 s); a "
                "player drains at most 1 s of buffer per second of playback, so no delivery at all takes 20 s "
                "off in 20 s, and the story's 27.7 s in 20 s is faster than playback can consume (its buffer "
                "figure must count something else, or over longer than it says); "
                + (
                    f"first stall {ce['to_first_stall_s']:.3g} s after the loss began, stalls of "
                    + ", ".join(f"{x:.3g}" for x in ce["stalls_s"][:6])
                    + " s (story: 30-second stalls)"
                    if ce.get("first_stall_s") is not None
                    else "no stall"
                )
                + ". Nothing was tuned to these figures: the loss's start only waits for the buffer to fill. "
            )
        if sweep_text:
            reason += f" Sweep (3 min each, loss from {LOSS_START_S:.0f} s): {sweep_text}."
        return ClaimResult(
            claim, figure, verdict, reason, {"runs": runs, "sweep": sweep, "collapsed_with": hit, "fell_with": fell}
        )

    def _stuck(self, results: Mapping[str, Result], quick: bool) -> ClaimResult:
        claim = self.claim("bbr-stuck-100k")
        points: dict[str, dict[str, Any]] = {}
        for point in STUCK_POINTS:
            if point.label in results:
                points[point.label] = {
                    "condition": point.condition,
                    "cc": point.cc,
                    **analysis.slowest_window(results[point.label], "bulk"),
                }
        for d in points.values():
            d["mechanism"] = mechanism(d)
        bbr = {k: v for k, v in points.items() if v["cc"] == "bbr" and v["min_bps"] is not None}
        lowest = min(bbr, key=lambda k: bbr[k]["min_bps"])
        stuck = {k: v for k, v in bbr.items() if v["min_bps"] < STUCK_BPS}
        bbr_own = {k: v for k, v in stuck.items() if v["mechanism"] in ("lt_bw", "bw estimate")}
        cubic_stuck = {
            k: v
            for k, v in points.items()
            if v["cc"] == "cubic" and v["min_bps"] is not None and v["min_bps"] < STUCK_BPS
        }
        lt_rates = [v["lt_bw_min_bps"] for v in bbr.values() if v.get("lt_bw_min_bps")]
        lt_text = ", ".join(
            f"{v['condition']} ({100 * v['lt_use_fraction_run']:.3g} % of the run, "
            f"lt_bw >= {_mbps(v['lt_bw_min_bps'])})"
            for v in bbr.values()
            if v.get("lt_use_fraction_run")
        )
        low = bbr[lowest]
        figure = (
            f"lowest 10 s goodput {_mbps(low['min_bps'])} ({low['condition']}; {low['mechanism']}); "
            f"{len(stuck)} of {len(bbr)} BBR conditions under 1 Mbit/s; "
            f"lowest lt_bw {_mbps(min(lt_rates) if lt_rates else None)}"
        )
        listing = "; ".join(f"{v['condition']}: {_mbps(v['min_bps'])} ({v['mechanism']})" for v in points.values())
        if bbr_own:
            verdict = "reproduced"
            reason = (
                "reproduced: BBR's own model held it under 1 Mbit/s for 10 s where CUBIC was not stuck: "
                + ", ".join(f"{v['condition']} ({v['mechanism']})" for v in bbr_own.values())
                + ". "
            )
        elif stuck:
            verdict = "partly"
            cubic_text = "; ".join(
                f"{v['condition']}: {_mbps(v['min_bps'])} ({v['mechanism']})" for v in cubic_stuck.values()
            )
            reason = (
                "partly: BBR does fall below 1 Mbit/s for 10 s ("
                + ", ".join(f"{v['condition']}: {_mbps(v['min_bps'])}, {v['mechanism']}" for v in stuck.values())
                + "), but not by its own model: in those windows its bandwidth estimate stayed above twice "
                "the goodput (lowest median "
                + _mbps(min(v["bbr_bw_median_bps"] for v in stuck.values()))
                + "), so the losses held the flow: retransmissions lost again and the RTO doubling "
                "(tcp_timer.c: tcp_retransmit_timer()), which CUBIC meets too"
                + (f" ({cubic_text})" if cubic_text else "")
                + ". The long-term (policer) estimate lt_bw "
                + (
                    f"locked in only at the path's real rate or under heavy loss: {lt_text}"
                    if lt_text
                    else "never locked in"
                )
                + "; no condition gave a BBR whose own estimate was stuck near 100 kbit/s. "
            )
        else:
            verdict = "not reproduced"
            reason = (
                "not reproduced: no condition took BBR under 1 Mbit/s for 10 s; "
                f"the lowest was {_mbps(low['min_bps'])} "
                f"({low['condition']}). "
            )
        reason += f"Each condition's lowest 10-s goodput: {listing}."
        if quick:
            reason += " (Quick mode searches 4 conditions; the full mode 12.)"
        return ClaimResult(claim, figure, verdict, reason, {"points": points, "lowest": lowest, "stuck": sorted(stuck)})

    def _write_timeouts(self, results: Mapping[str, Result]) -> ClaimResult:
        claim = self.claim("write-timeouts")
        w: dict[str, Any] = {cc: analysis.writes(results[f"rw-{cc}"]) for cc in ("bbr", "cubic")}
        b, c = w["bbr"], w["cubic"]
        ep = {
            cc: {
                **analysis.writes(results[f"rw-{cc}-episode"]),
                "after_end": analysis.after_loss(results[f"rw-{cc}-episode"], EPISODE_END_S),
            }
            for cc in ("bbr", "cubic")
        }
        rnd = {cc: analysis.writes(results[f"rw-{cc}-random"]) for cc in ("bbr", "cubic")}
        out = {cc: analysis.writes(results[f"rw-{cc}-outage"]) for cc in ("bbr", "cubic")}
        w.update(episode=ep, random=rnd, outage=out)
        figure = (
            f"bursty loss from 1 min: BBR {b['timeouts']} timeouts in {b['batches']} batches "
            f"({100 * (b['sent_fraction'] or 0):.3g} % sent), CUBIC {c['timeouts']}; the same bursts until "
            f"10 min only: BBR {ep['bbr']['timeouts']}, CUBIC {ep['cubic']['timeouts']}, none started after the "
            f"loss ended: {'yes' if all(d['after_end']['started_after'] == 0 for d in ep.values()) else 'no'}; "
            f"independent loss of the same mean: BBR {rnd['bbr']['timeouts']}, CUBIC {rnd['cubic']['timeouts']}; "
            f"3-min outage: BBR {out['bbr']['timeouts']}, CUBIC {out['cubic']['timeouts']}"
        )
        # Which losses stop delivery for minutes by themselves, not through the packet-counted
        # bursts (a retransmission per RTO that stays inside one burst): the outage (a time
        # window) and the independent loss.
        time_based = out["bbr"]["timeouts"] + rnd["bbr"]["timeouts"]
        bursty = b["timeouts"] + ep["bbr"]["timeouts"]
        rule = (
            "(the rule: reproduced if BBR's writes time out under a loss that is not counted in packets "
            "(the 3-minute outage, or independent loss of the bursts' mean rate); partly if only under the "
            "Gilbert-Elliott bursts; the same runs in quick and full mode). "
        )
        if time_based > 0:
            verdict = "reproduced"
            reason = (
                "reproduced: remote writes hit the 120 s timeout with BBR under the Bandwidth Manager when "
                f"the port stops delivering for minutes (3-minute outage: {out['bbr']['timeouts']}; "
                f"independent loss: {rnd['bbr']['timeouts']}) "
                + rule
                + "The story reports no outage and measured under 0.001 % loss, which gives none: the symptom "
                "is reproduced, its cause in the story is not known. "
            )
        elif bursty > 0:
            verdict = "partly"
            reason = (
                f"partly: BBR's writes time out under the bursty loss ({b['timeouts']} in the hour) but not "
                "under a loss counted in time " + rule
            )
        else:
            verdict = "not reproduced"
            reason = "not reproduced: no write timed out with BBR under any loss of the experiment " + rule
        reason += (
            "What comes from the loss model: tcplab's bursts, like netem's Gilbert-Elliott model, last a "
            "number of packets, not a time, so a connection that sends one retransmission per RTO (200 ms "
            "doubling to TCP_RTO_MAX, 120 s) stays inside one burst for minutes: under the bursts the "
            f"writer's connection spent up to {b['longest_loss_state_s']:.4g} s at a stretch in RTO recovery "
            f"({100 * b['loss_state_fraction']:.3g} % of the hour)"
            + (
                f", longer than tcp_retries2's {RETRIES2_TIMEOUT_S:.4g} s after which Linux aborts the "
                "connection (tcp_timer.c: tcp_write_timeout(); tcplab does not, docs/kernel-pin.md)"
                if b["longest_loss_state_s"] > RETRIES2_TIMEOUT_S
                else ""
            )
            + f". With the same mean loss, each packet independently, BBR had {rnd['bbr']['timeouts']} timeouts "
            f"and CUBIC {rnd['cubic']['timeouts']} (longest RTO recovery {rnd['bbr']['longest_loss_state_s']:.3g} s): "
            "the timeouts under the bursts are that property of the model, which a port losing in bursts of "
            "time (a faulty cable: milliseconds) would not have for a flow sending one packet a second. "
            f"When the bursts end at 10 min (an episode of loss), BBR had {ep['bbr']['timeouts']} and CUBIC "
            f"{ep['cubic']['timeouts']} timeouts, "
            + "; ".join(
                f"{cc.upper()}: {d['after_end']['started_after']} attempts timing out that started after the end, "
                f"first write ok {_num(d['after_end']['first_ok_after_s'])} s after it, "
                f"{100 * (d['sent_fraction'] or 0):.3g} % of the batches sent"
                for cc, d in ep.items()
            )
            + ": the timeouts do not persist once the loss stops (the connection waits at most one backed-off "
            "RTO, <= 120 s). A time-based way to the same symptom is an outage of minutes (a link or "
            f"Cilium restart): 3 minutes gave BBR {out['bbr']['timeouts']} and CUBIC {out['cubic']['timeouts']}. "
            "vmagent redials after each timeout; tcplab keeps the connection. "
            f"CUBIC under the same bursts: {c['timeouts']} timeouts"
            + (", so the timeouts come from the loss, not from BBR" if c["timeouts"] >= b["timeouts"] else "")
            + f". The backoff reached {b['max_backoff_s'] or 0:.3g} s (story: up to 65.92 s, vmagent's 1 min "
            "retry_max plus jitter)."
        )
        return ClaimResult(claim, figure, verdict, reason, w)

    def _short_window(self, results: Mapping[str, Result], quick: bool) -> ClaimResult:
        claim = self.claim("short-window")
        w = {cc: analysis.writes(results[f"rw-{cc}"], window_s=CHECK_S) for cc in ("bbr", "cubic")}
        b = w["bbr"]
        first, whole = b["first_window"], b["whole"]
        minutes = results["rw-bbr"].duration_s / 60
        figure = (
            f"BBR, first 2 min: {first['timeouts']} timeouts, {first['ok']} writes ok; whole {minutes:.3g} min: "
            f"{whole['timeouts']} timeouts, {100 * (b['sent_fraction'] or 0):.3g} % of batches sent"
        )
        stream = {cc: analysis.player_windows(results[f"nfs-{cc}"], window_s=CHECK_S) for cc in ("bbr", "cubic")}
        w["stream"] = stream
        healthy_first = first["timeouts"] == 0
        failed_later = whole["timeouts"] > 0
        if healthy_first and failed_later:
            verdict = "reproduced"
            reason = (
                "reproduced (quick and full mode run the same hour of writes): the 2-minute "
                f"check saw no timeout while the {minutes:.3g}-minute run had {whole['timeouts']} (the rule: none "
                "among the attempts ended by 2 min, at least one over the run). The mechanism is simpler than "
                "the story's 'stuck state that needs sustained load': a 120 s timeout cannot fire before "
                "t = 120 s, so a 2-minute check cannot see one at all, whenever the trouble starts (here the "
                f"first attempt that timed out started at {b['first_timeout_start_s'] or 0:.4g} s and ended "
                "after the check); the same holds for CUBIC "
                f"({w['cubic']['first_window']['timeouts']} in 2 min, {w['cubic']['whole']['timeouts']} in all). "
                "The timeouts over the hour come from the loss going on (bursts counted in packets, see "
                "write-timeouts): with the loss ending at 10 min, "
                + ", ".join(
                    f"{cc.upper()} had {analysis.writes(results[f'rw-{cc}-episode'])['timeouts']}"
                    for cc in ("bbr", "cubic")
                )
                + ", none started after the end."
            )
        else:
            verdict = "not reproduced"
            reason = (
                "not reproduced: "
                + (
                    "the first 2 minutes already showed failures"
                    if not healthy_first
                    else "the whole run had no timeout"
                )
                + f" (first 2 min: {first['timeouts']} timeouts; whole: {whole['timeouts']})."
            )
        reason += " The stream, " + "; ".join(
            f"{cc.upper()}: first 2 min {_window_text(v['first'])}, whole run {_window_text(v['whole'])}"
            for cc, v in stream.items()
        )
        changed = [cc for cc, v in stream.items() if _healthy(v["first"]) and not _healthy(v["whole"])]
        reason += (
            ": with " + ", ".join(x.upper() for x in changed) + " the stream too looked healthy at 2 minutes only."
            if changed
            else ": the stream's health does not change with the window (nothing in the model builds up over "
            "the hour: BBR's estimates are windowed, max bw over 10 rounds, min_rtt over 10 s)."
        )
        return ClaimResult(claim, figure, verdict, reason, w)

    def _cubic_fix(self, results: Mapping[str, Result]) -> ClaimResult:
        claim = self.claim("cubic-fix")
        nfs = {cc: self._nfs(results, f"nfs-{cc}") for cc in ("cubic", "bbr")}
        rw = {cc: analysis.writes(results[f"rw-{cc}"]) for cc in ("cubic", "bbr")}
        c_p, b_p = nfs["cubic"]["player"], nfs["bbr"]["player"]
        nfs_better = (not self._suffers(c_p)) and self._suffers(b_p)
        nfs_worse = self._suffers(c_p) and not self._suffers(b_p)
        # A clear difference: at most half as many timeouts (or none where BBR had some).
        tc, tb = rw["cubic"]["timeouts"], rw["bbr"]["timeouts"]
        rw_better = tc * 2 <= tb and tb > 0
        rw_worse = tb * 2 <= tc and tc > 0
        figure = (
            f"NFS stream: CUBIC {self._player_text(c_p)}, BBR {self._player_text(b_p)}; "
            f"write timeouts: CUBIC {tc}, BBR {tb} (batches sent {100 * (rw['cubic']['sent_fraction'] or 0):.3g} % "
            f"vs {100 * (rw['bbr']['sent_fraction'] or 0):.3g} %)"
        )
        wins = int(nfs_better) + int(rw_better)
        if wins == 2:
            verdict = "reproduced"
        elif wins == 1:
            verdict = "partly"
        else:
            verdict = "not reproduced"
        reason = (
            f"{verdict}: the rule: CUBIC must do better than BBR on the NFS stream (the player healthy with "
            "CUBIC, failing with BBR) and on the writes (at most half BBR's timeouts). "
            + (
                "On the stream CUBIC does worse: under bursty loss its connections collapse to cwnd:2 "
                "ssthresh:2 while BBR keeps its rate. "
                if nfs_worse
                else ("On the stream CUBIC does better. " if nfs_better else "On the stream the two do alike. ")
            )
            + (
                "On the writes CUBIC had clearly fewer timeouts. "
                if rw_better
                else (
                    "On the writes CUBIC had clearly more timeouts. "
                    if rw_worse
                    else f"On the writes the two had about as many timeouts ({tc} vs {tb}). "
                )
            )
            + "In tcplab the loss, not the cc, makes the timeouts; the story's fix coincided with restarts "
            "(Cilium was reinstalled, the NFS mount remade) that tcplab does not model, and its verification "
            "did not measure the loss."
        )
        return ClaimResult(claim, figure, verdict, reason, {"nfs": nfs, "writes": rw})

    # -- explanation -------------------------------------------------------------------------
    def explain(self, results: Mapping[str, Result], quick: bool, plots_dir: Path) -> list[Explanation]:
        from tcplab.experiments.cluster_bbr_timeouts import explain

        return explain.explanations(self, results, quick, plots_dir)

    # -- diagnose cross-checks -----------------------------------------------------------------
    def crosschecks(self, quick: bool) -> list[Crosscheck]:
        return [
            Crosscheck(
                "nfs-cubic",
                expect=("cwnd-collapse",),
                why="ss on the Plex node during the collapse shows >= 2 NFS connections at cwnd:2 ssthresh:2",
                at_s=self._collapse_at_s,
            ),
            Crosscheck(
                "nfs-bbr",
                absent=("cwnd-collapse",),
                why="BBR keeps ssthresh at the BDP it set after STARTUP: no cwnd:2 ssthresh:2",
            ),
            Crosscheck(
                "rw-bbr",
                expect=("cilium-bbr-low-rtt",),
                why="cilium status on the nodes: the Bandwidth Manager enforces BBR on a sub-millisecond cluster",
            ),
            Crosscheck(
                "rw-cubic",
                absent=("cilium-bbr-low-rtt",),
                why="the story's resolution: the Bandwidth Manager with CUBIC",
            ),
            Crosscheck(
                "rw-bbr",
                expect=("rto-rate", "tail-loss-probes", "spurious-rto"),
                rule="any",  # the timeouts, the probes that precede them, or their being spurious
                why="the write timeouts come from RTOs: nstat's TCPTimeouts against the segments sent",
            ),
        ]


def _healthy(p: dict[str, Any] | None) -> bool:
    """Playing, never under 1 s of buffer, stalled under 1 % of the time."""
    return bool(p and p["started"] and p["min_buffer_s"] >= 1.0 and p["stalled_fraction"] < 0.01)


def _window_text(p: dict[str, Any] | None) -> str:
    if not p or not p["started"]:
        return "never played"
    return f"buffer min {p['min_buffer_s']:.3g} s, stalled {100 * p['stalled_fraction']:.3g} % of the time"


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3g}"


def _full_then_fell(e: dict[str, Any]) -> bool:
    """Playing with a buffer of at least FULL_BUFFER_S when the loss began, then a stall or
    a buffer under 1 s."""
    if e.get("buffer_at_start_s") is None or not e.get("playing_at_start"):
        return False
    full = e["buffer_at_start_s"] >= FULL_BUFFER_S
    return full and (e["first_stall_s"] is not None or e["min_buffer_after_s"] < 1.0)


EXPERIMENT = ClusterBbrTimeouts(Path(__file__).parent)

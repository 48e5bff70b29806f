//! tbf (Linux v6.12 net/sched/sch_tbf.c) under TCP: a bulk flow through a 10 Mbit/s tbf on
//! a faster link. Expectations come from the model, not from today's output:
//!
//! - goodput = rate × 1448 / 1514: tbf counts whole Ethernet frames (`skb->len`, 1500 B of
//!   IP + 14 B header) and a full segment carries 1448 B of payload (timestamps on);
//! - queueing delay in tbf <= limit / rate, with tc's `limit = rate × latency + burst`
//!   (iproute2 tc/q_tbf.c): `latency + burst / rate` (tc's latency assumes a full bucket);
//! - `overlimits` count waits for tokens, `dropped` only packets refused by the child.

use crate::common;

use common::*;
use tcplab_core::config::*;
use tcplab_core::sim::{SimOutput, Simulator};

const MBIT: u64 = 1_000_000;
const SEC: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;
/// A full frame as tbf counts it: 1500 B of IP + 14 B of Ethernet header.
const FRAME_BYTES: u64 = 1514;
/// The link rate under the shaper: ten times the tbf rate.
const LINE_BPS: u64 = 100 * MBIT;
const TBF_BPS: u64 = 10 * MBIT;
const ONE_WAY_NS: u64 = 10 * MS;

/// tc's `limit` for a `latency` (iproute2 tc/q_tbf.c tbf_parse_opt(): rate in bytes/s,
/// latency in microseconds): `rate × latency + burst`.
fn limit_for_latency(rate_bps: u64, latency_ns: u64, burst_bytes: u64) -> u64 {
    ((rate_bps / 8) as f64 * (latency_ns / 1_000) as f64 / 1e6 + burst_bytes as f64) as u64
}

fn tbf(rate_bps: u64, burst_bytes: u64, limit_bytes: u64) -> QueueConfig {
    QueueConfig::Tbf(TbfConfig {
        rate_bps,
        burst_bytes,
        limit_bytes,
        peakrate_bps: None,
        mtu_bytes: None,
        child: None,
    })
}

fn run(cc: CcKind, queue: QueueConfig, duration_ns: u64, sample_interval_ns: u64) -> SimOutput {
    let mut cfg = dumbbell(1, cc, LINE_BPS, ONE_WAY_NS, queue, duration_ns);
    cfg.sample_interval_ns = sample_interval_ns;
    let out = Simulator::new(cfg).unwrap().run();
    assert!(out.invariant.ok, "{}", out.invariant.message);
    out
}

/// The payload ceiling of a shaper that counts whole frames.
fn payload_ceiling_bps(rate_bps: u64) -> f64 {
    rate_bps as f64 * MSS as f64 / FRAME_BYTES as f64
}

fn bulk_goodput_matches_the_rate(cc: CcKind) {
    let burst = 10 * FRAME_BYTES;
    let limit = limit_for_latency(TBF_BPS, 50 * MS, burst);
    let out = run(cc, tbf(TBF_BPS, burst, limit), 30 * SEC, 100 * MS);
    let goodput_bps = out.flows[0].bytes_received as f64 * 8.0 / 30.0;
    let want = payload_ceiling_bps(TBF_BPS);
    let err = (goodput_bps - want).abs() / want;
    assert!(err <= 0.02, "{cc:?}: goodput {goodput_bps:.0} bit/s, expected {want:.0} (rate x 1448/1514) within 2 %: off by {:.2} %", err * 100.0);
    let q = &out.links[bottleneck(1)];
    assert_eq!(q.qdisc, "tbf");
    assert!(q.stats.overlimits > 0);
    // The child is the kernel's default: a bfifo of `limit` bytes, counting the same drops.
    let tcplab_core::net::qdisc::ChildStats {
        qdisc: kind,
        stats: child,
        ..
    } = q.child.as_ref().expect("tbf reports its child");
    assert_eq!(*kind, "bfifo");
    assert_eq!(child.drops, q.stats.drops);
    assert_eq!(child.sent_packets, q.stats.sent_packets);
}

#[test]
fn a_cubic_bulk_flow_gets_the_tbf_rate_less_header_overhead() {
    bulk_goodput_matches_the_rate(CcKind::Cubic);
}

#[test]
fn a_bbr_bulk_flow_gets_the_tbf_rate_less_header_overhead() {
    bulk_goodput_matches_the_rate(CcKind::Bbr);
}

#[test]
fn queueing_delay_stays_within_latency_plus_one_bucket() {
    // A one-MTU bucket makes the kernel's bound, latency + burst / rate, latency + one
    // frame time; the bulk flow fills the child to its limit (it drops).
    let burst = FRAME_BYTES;
    let latency_ns = 40 * MS;
    let limit = limit_for_latency(TBF_BPS, latency_ns, burst);
    let out = run(CcKind::Cubic, tbf(TBF_BPS, burst, limit), 10 * SEC, MS);
    let link = bottleneck(1) as u32;
    let q = &out.links[link as usize];
    assert!(q.stats.drops > 0, "the flow fills the tbf");
    let frame_ns = FRAME_BYTES * 8 * SEC / TBF_BPS;
    let bound_ns = latency_ns + burst * 8 * SEC / TBF_BPS;
    // The backlog sampled every millisecond (a frame takes 1.2 ms at 10 Mbit/s): its time
    // to drain at `rate`.
    let max_backlog = (0..out.queues.t_ns.len())
        .filter(|&i| out.queues.link[i] == link)
        .map(|i| out.queues.backlog_bytes[i])
        .max()
        .unwrap();
    let drain_ns = max_backlog * 8 * SEC / TBF_BPS;
    assert!(
        drain_ns <= latency_ns + frame_ns,
        "backlog {max_backlog} B takes {drain_ns} ns at rate > latency + one frame"
    );
    assert!(
        drain_ns + 2 * frame_ns >= latency_ns,
        "the queue reached its limit: {max_backlog} B ({drain_ns} ns)"
    );
    // What the sender sees: RTT samples above the path's base RTT are time queued, nearly
    // all of it in tbf (the other queues never build): at most the bound, plus the
    // receiver's ACK every second segment (one frame time at rate) and a frame at line rate.
    let rtt = &out.flows[0].rtt;
    let queued_ns = (rtt.max_us - rtt.min_us) * 1_000;
    let slack_ns = 2 * frame_ns;
    assert!(queued_ns <= bound_ns + slack_ns, "max RTT {} us - min {} us = {queued_ns} ns > latency + burst/rate {bound_ns} ns + {slack_ns}", rtt.max_us, rtt.min_us);
    assert!(
        queued_ns + 2 * frame_ns >= latency_ns,
        "queued {queued_ns} ns: the bound is reached"
    );
}

#[test]
fn without_a_limit_the_queue_grows_past_latency() {
    // The control for the test above: the same flow, a limit far beyond rate x latency.
    let out = run(
        CcKind::Cubic,
        tbf(TBF_BPS, FRAME_BYTES, 1 << 30),
        10 * SEC,
        100 * MS,
    );
    let rtt = &out.flows[0].rtt;
    assert!(
        (rtt.max_us - rtt.min_us) * 1_000 > 100 * MS,
        "max RTT {} us",
        rtt.max_us
    );
}

#[test]
fn overlimits_without_drops_under_a_large_limit_and_drops_under_a_small_one() {
    // Large: the flow is held by its windows, never by the child's room.
    let out = run(
        CcKind::Cubic,
        tbf(TBF_BPS, 10 * FRAME_BYTES, 64 << 20),
        5 * SEC,
        100 * MS,
    );
    let q = &out.links[bottleneck(1)];
    assert_eq!(q.stats.drops, 0);
    assert!(q.stats.overlimits > 0);
    assert_eq!(out.flows[0].retrans_segs, 0);
    // Small: five frames of room.
    let out = run(
        CcKind::Cubic,
        tbf(TBF_BPS, 10 * FRAME_BYTES, 5 * FRAME_BYTES),
        5 * SEC,
        100 * MS,
    );
    let q = &out.links[bottleneck(1)];
    assert!(q.stats.drops > 0);
    assert!(q.stats.overlimits > 0);
    assert!(out.flows[0].retrans_segs > 0, "the sender sees the drops");
    assert!(q.stats.max_backlog_packets <= 5);
}

#[test]
fn a_burst_after_idle_leaves_at_line_rate() {
    // Before the flow starts the bucket is full: the first `burst` bytes go out at line
    // rate, the rest at `rate`. Once both flows keep the tbf busy, a 64-frame bucket has
    // let exactly 63 frames more through than a 1-frame bucket.
    let small = run(
        CcKind::Cubic,
        tbf(TBF_BPS, FRAME_BYTES, 1 << 24),
        3 * SEC,
        100 * MS,
    );
    let big = run(
        CcKind::Cubic,
        tbf(TBF_BPS, 64 * FRAME_BYTES, 1 << 24),
        3 * SEC,
        100 * MS,
    );
    let gain = big.flows[0].bytes_received as i64 - small.flows[0].bytes_received as i64;
    let bucket_payload = (63 * MSS) as i64;
    assert!(
        (gain - bucket_payload).abs() <= 2 * MSS as i64,
        "gain {gain} B, expected the bucket's extra {bucket_payload} B of payload"
    );
}

#[test]
fn a_tbf_over_a_pfifo_child_counts_packets() {
    let q = QueueConfig::Tbf(TbfConfig {
        rate_bps: TBF_BPS,
        burst_bytes: 10 * FRAME_BYTES,
        limit_bytes: 1,
        peakrate_bps: None,
        mtu_bytes: None,
        child: Some(Box::new(QueueConfig::Pfifo { limit_packets: 8 })),
    });
    let out = run(CcKind::Cubic, q, 5 * SEC, 100 * MS);
    let l = &out.links[bottleneck(1)];
    let tcplab_core::net::qdisc::ChildStats {
        qdisc: kind,
        stats: child,
        ..
    } = l.child.as_ref().unwrap();
    assert_eq!(*kind, "pfifo");
    assert!(
        child.max_backlog_packets == 8 && l.stats.drops > 0,
        "the child's own limit applies (tbf's limit does not)"
    );
    let goodput_bps = out.flows[0].bytes_received as f64 * 8.0 / 5.0;
    assert!(goodput_bps <= payload_ceiling_bps(TBF_BPS) * 1.01);
}

#[test]
fn a_tbf_over_fq_codel_keeps_the_rate_and_codel_keeps_the_delay() {
    // The usual shaper setup: CoDel in the child holds the standing queue near `target`
    // (5 ms), where a bfifo of the same size would fill. tbf takes the child's head through
    // qdisc_peek_dequeued(), so CoDel's drops happen at tbf's pace and count in both.
    let q = QueueConfig::Tbf(TbfConfig {
        rate_bps: TBF_BPS,
        burst_bytes: 10 * FRAME_BYTES,
        limit_bytes: 1 << 24,
        peakrate_bps: None,
        mtu_bytes: None,
        child: Some(Box::new(QueueConfig::FqCodel(FqCodelConfig::default()))),
    });
    let out = run(CcKind::Cubic, q, 20 * SEC, 100 * MS);
    let l = &out.links[bottleneck(1)];
    let tcplab_core::net::qdisc::ChildStats {
        qdisc: kind,
        stats: child,
        ..
    } = l.child.as_ref().unwrap();
    assert_eq!(*kind, "fq_codel");
    assert!(child.drops > 0, "CoDel drops");
    assert_eq!(
        l.stats.drops, child.drops,
        "the child's drops reach tbf (qdisc_tree_reduce_backlog)"
    );
    let goodput_bps = out.flows[0].bytes_received as f64 * 8.0 / 20.0;
    let want = payload_ceiling_bps(TBF_BPS);
    assert!(
        (goodput_bps - want).abs() / want <= 0.03,
        "goodput {goodput_bps:.0} bit/s, ceiling {want:.0}"
    );
    let rtt = &out.flows[0].rtt;
    let target_us = FqCodelConfig::default().target_ns / 1_000;
    assert!(
        rtt.p50_us - rtt.min_us <= 4 * target_us,
        "median queueing {} us, CoDel target {target_us} us",
        rtt.p50_us - rtt.min_us
    );
}

/// A pod behind the CNI bandwidth plugin: its veth into a forwarding node, whose egress is
/// the plugin's tbf on the IFB with containerd's numbers at 10 Mbit/s (bucket 5368709 B, the
/// kernel's cap of 2^32 - 1 ns of traffic; limit 536902161 B), then a sub-millisecond path
/// over a 10 Gbit/s access link (RTT 400 us).
fn cni_pod(orphan_after_queue: bool) -> SimConfig {
    let mut node = NodeConfig::new("node", NodeKind::Host);
    node.forwarding = true;
    let fifo = || QueueConfig::Pfifo {
        limit_packets: 1000,
    };
    let veth_bps = 1_000_000_000_000_000; // the frontend's veth: 1 Pbit/s, no delay
    let mut veth = link(
        "pod->node",
        0,
        1,
        veth_bps,
        0,
        tbf(TBF_BPS, 5_368_709, 536_902_161),
    );
    veth.orphan = true;
    veth.orphan_after_queue = orphan_after_queue;
    let mut back = link("node->pod", 1, 0, veth_bps, 0, fifo());
    back.orphan = true;
    SimConfig {
        seed: 1,
        duration_ns: 4 * SEC,
        sample_interval_ns: 10 * MS,
        nodes: vec![
            NodeConfig::new("pod", NodeKind::Host),
            node,
            NodeConfig::new("dst", NodeKind::Host),
        ],
        links: vec![
            veth,
            link("node->dst", 1, 2, 10_000 * MBIT, 200_000, fifo()),
            link("dst->node", 2, 1, 10_000 * MBIT, 200_000, fifo()),
            back,
        ],
        flows: vec![FlowConfig::new("f", 0, 2, CcKind::Bbr)],
        apps: Vec::new(),
        max_memory_bytes: DEFAULT_MAX_MEMORY_BYTES,
        capture: None,
    }
}

#[test]
fn the_cni_plugins_tbf_holds_a_bbr_pod_to_its_tsq_budget_and_bbr_leaves_drain() {
    // The CNI plugin's egress tbf sits on an IFB that the host-side veth's tc ingress
    // redirects to, and the skbs it queues are still the pod socket's own (Linux v6.12:
    // skb_scrub_packet() keeps skb->sk, act_mirred's tcf_mirred_to_dev() redirects the skb
    // itself at ingress; ip_rcv_core() orphans it only after the IFB): so
    // tcp_small_queue_check() holds the pod's bytes in the tbf to
    // limit = sk_pacing_rate >> sk_pacing_shift (BBR paces, so no tcp_limit_output_bytes cap).
    // The bucket (5.4 MB) lets STARTUP measure the 10 Gbit/s access link; after it, in DRAIN
    // (pacing gain 1/2.885), that budget is bw x 0.34 ms, below the BDP bw x 0.4 ms that
    // bbr_check_drain() waits for inflight to reach (tcp_bbr.c), so BBR reaches PROBE_BW as
    // soon as the tbf has sent what STARTUP's larger budget left in it. Orphaned at the veth
    // instead, the pod keeps a full cwnd (2.885 BDP, bbr_high_gain in DRAIN) in the tbf, and
    // DRAIN never ends while the 10-round bandwidth filter still holds the burst's rate.
    const DRAIN: u8 = 2;
    const PROBE_BW: u8 = 3;
    let run = |after_queue: bool| {
        let out = Simulator::new(cni_pod(after_queue)).unwrap().run();
        assert!(out.invariant.ok, "{}", out.invariant.message);
        out
    };
    let out = run(true);
    let s = &out.series;
    let drain_at = (0..s.len())
        .find(|&i| s.cc_mode[i] == DRAIN)
        .expect("BBR leaves STARTUP");
    // STARTUP's budget, the most the pod may have had below it: its pacing rate is at most
    // bbr_high_gain (2885/1000) x the bandwidth estimate (bbr_set_pacing_rate()), shifted by
    // sk_pacing_shift (10), plus one 64 KB skb.
    let max_skb = 65_536 + tcplab_core::packet::SKB_TRUESIZE_OVERHEAD as u64;
    let max_bw = *s.bbr_bw_bps.iter().max().unwrap();
    let startup_budget: u64 = (max_bw * 2885 / 1000 / 8 >> 10) + max_skb;
    // Frames in the tbf (1514 B per 1448 B of payload) drain at the tbf's rate.
    let drain_ns = startup_budget * FRAME_BYTES / MSS * 8 * SEC / TBF_BPS;
    let probe_bw_at = (drain_at..s.len())
        .find(|&i| s.cc_mode[i] == PROBE_BW)
        .unwrap_or_else(|| {
            panic!(
                "BBR never left DRAIN (entered at {} ms)",
                s.t_ns[drain_at] / MS
            )
        });
    assert!(
        s.t_ns[probe_bw_at] <= s.t_ns[drain_at] + drain_ns + 20 * MS,
        "DRAIN from {} ms to {} ms: longer than the tbf takes to send STARTUP's TSQ budget ({} B, {} ms)",
        s.t_ns[drain_at] / MS,
        s.t_ns[probe_bw_at] / MS,
        startup_budget,
        drain_ns / MS
    );
    // In PROBE_BW the tbf holds at most the TSQ limit at the sample's pacing rate (or the
    // highest one in the last 100 ms: a budget drains at 10 Mbit/s) plus one skb, never the
    // cwnd (2 x BDP + quantization budget).
    let tbf_backlog: Vec<u64> = (0..out.queues.t_ns.len())
        .filter(|&i| out.queues.link[i] == 0)
        .map(|i| out.queues.backlog_bytes[i])
        .collect();
    assert_eq!(tbf_backlog.len(), s.len());
    for i in probe_bw_at..s.len() {
        if s.cc_mode[i] != PROBE_BW {
            continue;
        }
        let recent = (i.saturating_sub(10)..=i)
            .map(|j| s.pacing_rate_bps[j])
            .max()
            .unwrap();
        let limit = ((recent / 8 >> 10) + max_skb) * FRAME_BYTES / MSS;
        assert!(
            tbf_backlog[i] <= limit,
            "at {} ms the tbf holds {} B > TSQ limit {} B (pacing {} bit/s)",
            s.t_ns[i] / MS,
            tbf_backlog[i],
            limit,
            recent
        );
    }
    // Orphaned at the veth (the model before): stuck in DRAIN with the tbf holding a cwnd.
    let orphaned = run(false);
    let o = &orphaned.series;
    assert!(o.cc_mode.iter().any(|&m| m == DRAIN));
    assert!(
        !o.cc_mode.iter().any(|&m| m == PROBE_BW),
        "orphaned at the veth, BBR's inflight is its cwnd, above the BDP: DRAIN cannot end"
    );
}

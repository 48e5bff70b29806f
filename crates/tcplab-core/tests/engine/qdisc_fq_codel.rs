//! fq_codel (Linux v6.12 net/sched/sch_fq_codel.c, include/net/codel_impl.h): the CoDel
//! control law, the one-MTU and below-target floors, the overflow drop from the fattest
//! bucket, and what it does to TCP end to end. Expected values are derived in the comments
//! from the kernel's algorithm, never copied from a run.

use crate::common;
use common::*;
use tcplab_core::config::*;
use tcplab_core::net::qdisc::fq_codel::{truesize_bytes, validate, FqCodel};
use tcplab_core::net::qdisc::{Dequeue, TimedQdisc};
use tcplab_core::packet::Packet;
use tcplab_core::sim::{SimOutput, Simulator};

const S: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;
/// The engine's clock starts at 1 s (time.rs BOOT_NS); start the unit scenarios there too.
const T0: u64 = S;
/// CoDel's clock tick (CODEL_SHIFT = 10).
const TICK_NS: u64 = 1024;
const FRAME: u32 = 1514;

/// A data packet sent by endpoint `sender_ep` (its receiver is `sender_ep ^ 1`).
fn pkt(sender_ep: u32, seq: u64) -> Packet {
    Packet {
        dst_ep: sender_ep ^ 1,
        ip_bytes: FRAME - 14,
        seq,
        end_seq: seq + 1448,
        ..Default::default()
    }
}

/// Two sender endpoints that hash to different buckets of `q`.
fn two_buckets(q: &FqCodel) -> (u32, u32) {
    let a = 0;
    let b = (1..1000)
        .map(|e| 2 * e)
        .find(|&e| q.bucket_of(&pkt(e, 0)) != q.bucket_of(&pkt(a, 0)))
        .unwrap();
    (a, b)
}

/// Drive one flow through a standing queue: `prefill` packets that arrived one per
/// `period_ns` before T0 (so the head has waited `prefill` periods at T0), then every
/// `period_ns` one packet in and one dequeue, for `steps` steps. Returns the times of the
/// CoDel drops.
fn standing_queue(q: &mut FqCodel, prefill: u64, period_ns: u64, steps: u64) -> Vec<u64> {
    let mut dropped = Vec::new();
    let mut drops = Vec::new();
    let mut seq = 0;
    for i in 0..prefill {
        assert!(q.enqueue(
            pkt(0, seq),
            FRAME,
            T0 - (prefill - i) * period_ns,
            &mut dropped
        ));
        seq += 1448;
    }
    for k in 0..steps {
        let now = T0 + k * period_ns;
        assert!(q.enqueue(pkt(0, seq), FRAME, now, &mut dropped));
        seq += 1448;
        assert!(
            matches!(q.dequeue(now, &mut dropped), Dequeue::Packet(..)),
            "a standing queue always has a packet"
        );
        for _ in dropped.drain(..) {
            drops.push(now);
        }
    }
    drops
}

#[test]
fn standing_queue_above_target_drops_at_the_control_law_spacing() {
    // codel_impl.h: the first dequeue with sojourn >= target sets first_above_time =
    // now + interval; the first dequeue strictly after it drops (count = 1, rec_inv_sqrt =
    // 0xffff, so drop_next = now + interval * 0xffff/2^16). Each later drop is due at
    // drop_next, which then advances by interval * r_count, r being the Newton iterate
    // r_n = r_(n-1)/2 * (3 - n r_(n-1)^2) from r_1 = 1 (codel_Newton_step()), which tends to
    // 1/sqrt(n). Drops happen at the first dequeue at or after their due time: within one
    // dequeue period (1 ms here), plus the 1024-ns clock's truncation.
    let cfg = FqCodelConfig::default();
    let interval = cfg.interval_ns as f64;
    let period = MS;
    let mut q = FqCodel::new(&cfg);
    // 400 packets ahead at one per ms: the sojourn stays ~400 ms >> target throughout.
    let drops = standing_queue(&mut q, 400, period, 1500);
    assert!(
        drops.len() >= 15,
        "only {} drops in 1.5 s of a standing queue",
        drops.len()
    );

    let slack = (period + 4 * TICK_NS) as f64;
    let first = drops[0] as f64;
    let first_expected = (T0 + cfg.interval_ns) as f64;
    assert!(
        first > first_expected && first <= first_expected + slack,
        "first drop at {first} ns, expected just after {first_expected}"
    );

    // Scheduled times from the first drop: S_2 = S_1 + interval * r_1, S_(n+1) = S_n + interval * r_n.
    let mut due = first + interval * (0xffff as f64 / 65536.0);
    let mut r = 0xffff as f64 / 65536.0;
    for (i, &t) in drops.iter().enumerate().skip(1).take(15) {
        let n = (i + 1) as f64; // count after this drop
        let t = t as f64;
        // Truncations (1024-ns clock, Q0.16 factor) accumulate at most a few ticks per drop.
        let tol = (n + 2.0) * 2.0 * TICK_NS as f64;
        assert!(
            t >= due - tol && t <= due + slack + tol,
            "drop {} at {t} ns, due at {due:.0} ns",
            i + 1
        );
        r = r / 2.0 * (3.0 - n * r * r);
        let spacing = interval * r;
        // Against the exact law interval/sqrt(count): the Newton iterate is within 30 % at
        // count 2 (0.5 vs 0.707) and within 3 % from count 6 on.
        let exact = interval / n.sqrt();
        let err = (spacing - exact).abs() / exact;
        assert!(
            err < if n >= 6.0 { 0.03 } else { 0.30 },
            "count {n}: spacing {spacing:.0} vs interval/sqrt(count) {exact:.0}"
        );
        due += spacing;
    }
    // The drops counted: `dropped` in tc, and CoDel's count matches the number of drops.
    assert_eq!(q.stats().drops, drops.len() as u64);
    let bucket = q.bucket_of(&pkt(0, 0));
    assert!(q.codel_vars(bucket).dropping);
    assert_eq!(q.codel_vars(bucket).count, drops.len() as u32);
}

#[test]
fn a_queue_below_target_never_drops() {
    // Three packets ahead at one per ms: every sojourn is ~3 ms < target (5 ms), so
    // codel_should_drop() resets first_above_time on every dequeue and nothing is dropped.
    let mut q = FqCodel::new(&FqCodelConfig::default());
    let drops = standing_queue(&mut q, 3, MS, 20_000);
    assert!(drops.is_empty(), "{} drops below target", drops.len());
    assert_eq!(q.stats().drops, 0);
    let bucket = q.bucket_of(&pkt(0, 0));
    assert_eq!(q.codel_vars(bucket).first_above_time, 0);
    // The same queue with 10 packets ahead (10 ms > target) does drop: the test can fail.
    let mut q = FqCodel::new(&FqCodelConfig::default());
    assert!(!standing_queue(&mut q, 10, MS, 20_000).is_empty());
}

#[test]
fn a_late_packet_alone_in_the_queue_is_not_dropped() {
    // codel_should_drop(): no drop while the qdisc holds at most one MTU after the dequeue,
    // however long the packet waited. One packet every 20 ms, each dequeued 10 ms after it
    // arrived (sojourn 10 ms > target): the backlog after each dequeue is 0.
    let mut q = FqCodel::new(&FqCodelConfig::default());
    let mut dropped = Vec::new();
    for k in 0..2_000u64 {
        let t = T0 + k * 20 * MS;
        assert!(q.enqueue(pkt(0, k * 1448), FRAME, t, &mut dropped));
        assert!(matches!(
            q.dequeue(t + 10 * MS, &mut dropped),
            Dequeue::Packet(..)
        ));
        assert!(matches!(
            q.dequeue(t + 10 * MS, &mut dropped),
            Dequeue::Empty
        ));
    }
    assert!(dropped.is_empty());
    assert_eq!(q.stats().drops, 0);
}

#[test]
fn overlimit_drops_half_the_fattest_flow_and_spares_a_thin_one() {
    // fq_codel_drop(): the bucket with the most bytes loses packets from its head until at
    // least half its bytes (threshold = backlog >> 1) are gone or drop_batch packets were
    // dropped. limit 100: a thin flow of 2 packets, a fat flow of 98, then a 99th fat packet
    // makes 101 > 100. Fat backlog 99 frames, threshold 99*1514 >> 1 = 74943 bytes: the
    // smallest m with m * 1514 >= 74943 is 50 (49 * 1514 = 74186).
    for drop_batch in [64u32, 8] {
        let cfg = FqCodelConfig {
            limit_packets: 100,
            drop_batch,
            ..Default::default()
        };
        let mut q = FqCodel::new(&cfg);
        let (thin, fat) = two_buckets(&q);
        let mut dropped = Vec::new();
        for k in 0..2 {
            assert!(q.enqueue(pkt(thin, k * 1448), FRAME, T0, &mut dropped));
        }
        for k in 0..98 {
            assert!(q.enqueue(pkt(fat, k * 1448), FRAME, T0, &mut dropped));
        }
        assert!(dropped.is_empty());
        assert!(
            q.enqueue(pkt(fat, 98 * 1448), FRAME, T0, &mut dropped),
            "the new packet is the fat flow's tail: it stays"
        );
        let threshold = (99 * FRAME) >> 1;
        let half = (1..).find(|m| m * FRAME >= threshold).unwrap();
        let expect = half.min(drop_batch);
        assert_eq!(dropped.len() as u32, expect, "drop_batch {drop_batch}");
        // From the head of the fat flow, in order; the thin flow kept both packets.
        for (i, p) in dropped.iter().enumerate() {
            assert_eq!(p.dst_ep ^ 1, fat);
            assert_eq!(p.seq, i as u64 * 1448);
        }
        assert_eq!(q.bucket_len(q.bucket_of(&pkt(thin, 0))), 2);
        let x: std::collections::HashMap<_, _> = q.xstats().into_iter().collect();
        assert_eq!(x["drop_overlimit"], expect as u64);
        assert_eq!(x["drop_overmemory"], 0);
        assert_eq!(q.stats().drops, expect as u64);
        assert_eq!(q.stats().backlog_packets, 101 - expect);
        // CoDel's count of the fat bucket grew by the number dropped ("signal strength").
        assert_eq!(q.codel_vars(q.bucket_of(&pkt(fat, 0))).count, expect);
    }
}

#[test]
fn overlimit_drop_of_the_new_packet_itself_is_reported_to_the_sender() {
    // limit 1: a pure ACK (66 bytes) queued, then a full frame from another socket: the
    // fattest bucket is the new packet's and holds only it, so fq_codel_drop() takes it.
    // Enqueue answers false (the sender's NET_XMIT_DROP path) and the packet is not in the
    // `dropped` buffer (the caller accounts for it, as for any enqueue drop).
    let mut q = FqCodel::new(&FqCodelConfig {
        limit_packets: 1,
        ..Default::default()
    });
    let (a, b) = two_buckets(&q);
    let mut dropped = Vec::new();
    let ack = Packet {
        dst_ep: a ^ 1,
        ip_bytes: 52,
        ..Default::default()
    };
    assert!(q.enqueue(ack, 66, T0, &mut dropped));
    assert!(!q.enqueue(pkt(b, 0), FRAME, T0, &mut dropped));
    assert!(dropped.is_empty());
    assert_eq!(q.stats().drops, 1);
    assert_eq!(q.stats().backlog_packets, 1);
    assert_eq!(q.stats().backlog_bytes, 66);
}

#[test]
fn memory_limit_counts_truesize_and_drop_overmemory() {
    // memory_limit of exactly ten full frames' truesize: the 11th frame is over memory
    // (not over the packet limit) and triggers fq_codel_drop() on the one bucket: half of
    // 11 frames' bytes is 5.5 frames, so 6 go; all are counted in drop_overlimit and in
    // drop_overmemory.
    let ts = truesize_bytes(FRAME) as u64;
    let mut q = FqCodel::new(&FqCodelConfig {
        memory_limit_bytes: 10 * ts,
        ..Default::default()
    });
    let mut dropped = Vec::new();
    for k in 0..10 {
        assert!(q.enqueue(pkt(0, k * 1448), FRAME, T0, &mut dropped));
    }
    assert!(dropped.is_empty());
    let x: std::collections::HashMap<_, _> = q.xstats().into_iter().collect();
    assert_eq!(x["memory_used"], 10 * ts);
    assert!(q.enqueue(pkt(0, 10 * 1448), FRAME, T0, &mut dropped));
    assert_eq!(dropped.len(), 6);
    let x: std::collections::HashMap<_, _> = q.xstats().into_iter().collect();
    assert_eq!(x["drop_overlimit"], 6);
    assert_eq!(x["drop_overmemory"], 6);
    assert_eq!(x["memory_used"], 5 * ts);
}

#[test]
fn new_flows_are_served_first_then_round_robin_by_quantum() {
    // fq_codel_dequeue(): a bucket that becomes active joins new_flows with one quantum of
    // deficit and is served before old flows. Flow A has 6 packets queued and has been
    // served once (so it is an old flow with its deficit spent); flow B then arrives and
    // must be served next, after which they alternate one 1514-byte quantum each.
    let mut q = FqCodel::new(&FqCodelConfig::default());
    let (a, b) = two_buckets(&q);
    let mut dropped = Vec::new();
    for k in 0..6 {
        q.enqueue(pkt(a, k * 1448), FRAME, T0, &mut dropped);
    }
    let who = |d: Dequeue| match d {
        Dequeue::Packet(p, _) => p.dst_ep ^ 1,
        other => panic!("{other:?}"),
    };
    assert_eq!(who(q.dequeue(T0, &mut dropped)), a);
    for k in 0..3 {
        q.enqueue(pkt(b, k * 1448), FRAME, T0, &mut dropped);
    }
    let x: std::collections::HashMap<_, _> = q.xstats().into_iter().collect();
    assert_eq!(
        (x["new_flows_len"], x["old_flows_len"], x["new_flow_count"]),
        (2, 0, 2)
    );
    let order: Vec<u32> = (0..8).map(|_| who(q.dequeue(T0, &mut dropped))).collect();
    assert_eq!(order, vec![b, a, b, a, b, a, a, a]);
    assert!(matches!(q.dequeue(T0, &mut dropped), Dequeue::Empty));
    let x: std::collections::HashMap<_, _> = q.xstats().into_iter().collect();
    assert_eq!((x["new_flows_len"], x["old_flows_len"]), (0, 0));
}

#[test]
fn colliding_flows_share_one_bucket() {
    // With flows = 1 every socket hashes to bucket 0: one FIFO and one CoDel state, so the
    // order of service is arrival order (no round robin between them).
    let mut q = FqCodel::new(&FqCodelConfig {
        flows: 1,
        ..Default::default()
    });
    let mut dropped = Vec::new();
    for (k, ep) in [0u32, 2, 0, 2, 2, 0].into_iter().enumerate() {
        q.enqueue(pkt(ep, k as u64), FRAME, T0, &mut dropped);
    }
    let order: Vec<u64> = (0..6)
        .map(|_| match q.dequeue(T0, &mut dropped) {
            Dequeue::Packet(p, _) => p.seq,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(order, vec![0, 1, 2, 3, 4, 5]);
}

#[test]
fn validate_names_the_field_value_and_expectation() {
    let ok = FqCodelConfig::default();
    assert!(validate(&ok, "links.3.queue").is_ok());
    let cases: Vec<(FqCodelConfig, &str)> = vec![
        (
            FqCodelConfig {
                limit_packets: 0,
                ..ok.clone()
            },
            "links.3.queue.limit_packets: 0",
        ),
        (
            FqCodelConfig {
                flows: 0,
                ..ok.clone()
            },
            "links.3.queue.flows: 0",
        ),
        (
            FqCodelConfig {
                flows: 65_537,
                ..ok.clone()
            },
            "links.3.queue.flows: 65537",
        ),
        (
            FqCodelConfig {
                quantum_bytes: 0,
                ..ok.clone()
            },
            "links.3.queue.quantum_bytes: 0",
        ),
        (
            FqCodelConfig {
                target_ns: 0,
                ..ok.clone()
            },
            "links.3.queue.target_ns: 0",
        ),
        (
            FqCodelConfig {
                interval_ns: 0,
                ..ok.clone()
            },
            "links.3.queue.interval_ns: 0",
        ),
        (
            FqCodelConfig {
                memory_limit_bytes: 0,
                ..ok.clone()
            },
            "links.3.queue.memory_limit_bytes: 0",
        ),
        (
            FqCodelConfig {
                ce_threshold_ns: Some(0),
                ..ok.clone()
            },
            "links.3.queue.ce_threshold_ns: 0",
        ),
    ];
    for (cfg, prefix) in cases {
        let e = validate(&cfg, "links.3.queue").unwrap_err();
        assert!(e.starts_with(prefix), "{e}");
        assert!(e.contains("expected") || e.contains("outside"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }
    assert!(validate(
        &FqCodelConfig {
            flows: 65_536,
            ..ok
        },
        "q"
    )
    .is_ok());
}

// ---- End to end ----

fn run(cfg: SimConfig) -> SimOutput {
    let out = Simulator::new(cfg).expect("valid config").run();
    assert!(out.invariant.ok, "{}", out.invariant.message);
    out
}

fn goodput_bps(out: &SimOutput, flow: usize) -> f64 {
    let f = &out.flows[flow];
    f.bytes_received as f64 * 8.0 / ((f.end_ns - f.start_ns) as f64 / 1e9)
}

const RATE: u64 = 10_000_000;

#[test]
fn cubic_over_fq_codel_keeps_the_queueing_delay_near_target() {
    // One CUBIC bulk flow, 10 Mbit/s bottleneck, 20 ms base RTT, 30 s. With fq_codel the
    // standing queue is held near target (5 ms): the median RTT stays within base RTT +
    // 4 x target, while a big pfifo lets CUBIC fill it (the median RTT is far above). The
    // link stays busy with fq_codel (CoDel keeps about target of queue, > 0).
    let base_rtt_us = 20_000.0;
    let target_us = FqCodelConfig::default().target_ns as f64 / 1e3;
    let fqc = run(dumbbell(
        1,
        CcKind::Cubic,
        RATE,
        10 * MS,
        QueueConfig::FqCodel(FqCodelConfig::default()),
        30 * S,
    ));
    let fifo = run(dumbbell(
        1,
        CcKind::Cubic,
        RATE,
        10 * MS,
        QueueConfig::Pfifo {
            limit_packets: 10_000,
        },
        30 * S,
    ));
    let p50_fqc = fqc.flows[0].rtt.p50_us as f64;
    let p50_fifo = fifo.flows[0].rtt.p50_us as f64;
    eprintln!(
        "RTT p50: fq_codel {p50_fqc} us ({} CoDel drops, {:.2} Mbit/s), pfifo 10000 {p50_fifo} us; min RTT {} us",
        fqc.links[bottleneck(1)].stats.drops,
        goodput_bps(&fqc, 0) / 1e6,
        fqc.flows[0].rtt.min_us
    );
    assert!(
        p50_fqc <= base_rtt_us + 4.0 * target_us,
        "fq_codel: RTT p50 {p50_fqc} us vs base {base_rtt_us} + 4 x {target_us}"
    );
    assert!(
        p50_fifo > base_rtt_us + 10.0 * target_us,
        "pfifo: RTT p50 {p50_fifo} us (expected a standing queue)"
    );
    let link = &fqc.links[bottleneck(1)];
    assert!(link.stats.drops > 0, "CoDel never dropped");
    let util = goodput_bps(&fqc, 0) / (RATE as f64 * 1448.0 / 1514.0);
    assert!(util > 0.90, "fq_codel utilization {util:.3}");
}

#[test]
fn flows_with_different_rtts_share_more_evenly_than_with_pfifo() {
    // DRR serves each backlogged bucket one quantum per round, whatever its RTT; a FIFO
    // shares by arrival, which favours the short-RTT flow (it grows its window faster).
    // Flow 0: 10 ms base RTT; flow 1: 100 ms (45 ms more each way on its access links).
    // The pfifo holds one BDP of the long path. Compare Jain's fairness index.
    let mk = |q: QueueConfig| {
        let mut cfg = dumbbell(2, CcKind::Cubic, RATE, 4 * MS, q, 60 * S);
        cfg.links[2].delay_ns = 45 * MS; // s1 -> r1
        cfg.links[3].delay_ns = 45 * MS; // r1 -> s1
        run(cfg)
    };
    let jain = |o: &SimOutput| {
        let x = [goodput_bps(o, 0), goodput_bps(o, 1)];
        (x[0] + x[1]).powi(2) / (2.0 * (x[0] * x[0] + x[1] * x[1]))
    };
    let fqc = mk(QueueConfig::FqCodel(FqCodelConfig::default()));
    let fifo = mk(QueueConfig::Pfifo {
        limit_packets: bdp_packets(RATE, 100 * MS),
    });
    let (jf, jp) = (jain(&fqc), jain(&fifo));
    eprintln!(
        "10 ms / 100 ms RTT flows: fq_codel {:.2} / {:.2} Mbit/s (Jain {jf:.3}), pfifo 1 BDP {:.2} / {:.2} Mbit/s (Jain {jp:.3})",
        goodput_bps(&fqc, 0) / 1e6,
        goodput_bps(&fqc, 1) / 1e6,
        goodput_bps(&fifo, 0) / 1e6,
        goodput_bps(&fifo, 1) / 1e6
    );
    assert!(jf > jp, "Jain index fq_codel {jf:.3} vs pfifo {jp:.3}");
    assert!(
        jf > 0.95,
        "fq_codel Jain index {jf:.3} ({:.2} vs {:.2} Mbit/s)",
        goodput_bps(&fqc, 0) / 1e6,
        goodput_bps(&fqc, 1) / 1e6
    );
}

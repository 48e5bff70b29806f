//! GRO on the receiving host (`host::gro`, `NodeConfig::gro`): the segments of one flow
//! that one NAPI poll takes become one packet for TCP, which ACKs it once; an aggregate
//! stays below `gro_max_size` (64 KB) and never outlives its poll; with no poll longer than
//! an instant (no NIC model, rated links) nothing merges and the run is today's.
use crate::common;

use common::*;
use tcplab_core::capture::{CaptureAt, CaptureConfig, CaptureOutput, DIR_IN, DIR_OUT};
use tcplab_core::config::*;
use tcplab_core::mib::Mib;
use tcplab_core::packet::TCP_IP_HEADER_BYTES;
use tcplab_core::sim::{SimOutput, Simulator};

const MS: u64 = 1_000_000;
/// A full frame at 1 Gbit/s: 1514 B x 8 ns.
const FRAME_NS: u64 = 12_112;

/// One CUBIC sender, a 1 Gbit/s bottleneck, 100 ms RTT; the run ends before a second
/// window arrives. The receiver (node 1) has a NIC whose interrupt fires `irq_ns` after a
/// packet finds its ring empty (interrupt moderation), GRO as `gro`, and a capture.
fn one_window(iw: u32, irq_ns: u64, gro: bool) -> SimConfig {
    let mut cfg = dumbbell(
        1,
        CcKind::Cubic,
        1_000_000_000,
        49 * MS,
        QueueConfig::Pfifo {
            limit_packets: 10_000,
        },
        180 * MS,
    );
    cfg.flows[0].tcp.initial_cwnd = iw;
    cfg.nodes[1].nic = Some(NicConfig {
        rx_ring: 4096,
        rx_cost_ns: 1_000,
        irq_delay_ns: irq_ns,
        ..NicConfig::default()
    });
    cfg.nodes[1].gro = gro;
    cfg.capture = Some(CaptureConfig {
        flow: 0,
        at: CaptureAt::Receiver,
        max_packets: 100_000,
    });
    cfg
}

fn run(cfg: SimConfig) -> SimOutput {
    let out = Simulator::new(cfg).unwrap().run();
    assert!(out.invariant.ok, "{}", out.invariant.message);
    out
}

/// The receiver's data packets (segments each) and its pure ACKs after the handshake.
fn received_and_acks(c: &CaptureOutput) -> (Vec<u64>, usize) {
    let mut segs = Vec::new();
    let mut acks = 0;
    for i in 0..c.t_ns.len() {
        let len = c.end_seq[i] - c.seq[i];
        if c.dir[i] == DIR_IN && len > 0 {
            segs.push(len.div_ceil(MSS));
        } else if c.dir[i] == DIR_OUT && len == 0 && !segs.is_empty() {
            acks += 1;
        }
    }
    (segs, acks)
}

#[test]
fn one_poll_of_one_flow_is_one_aggregate_and_one_ack() {
    // IW10 at 1 Gbit/s arrives in 10 x 12.1 us = 121 us, inside the 500 us before the
    // interrupt: one poll takes all ten.
    assert!(10 * FRAME_NS < 500_000);
    let off = run(one_window(10, 500_000, false));
    let on = run(one_window(10, 500_000, true));
    let (segs_off, acks_off) = received_and_acks(off.capture.as_ref().unwrap());
    let (segs_on, acks_on) = received_and_acks(on.capture.as_ref().unwrap());
    // Without GRO TCP sees ten segments and, in the quick-ACK mode of a connection's first
    // data (tcp_event_data_recv() -> tcp_incr_quickack()), ACKs each.
    assert_eq!(segs_off, vec![1; 10]);
    assert_eq!(acks_off, 10);
    // With GRO: one skb of ten segments (IP length 52 + 10 x 1448), one ACK.
    assert_eq!(segs_on, vec![10]);
    assert_eq!(acks_on, 1);
    let c = on.capture.as_ref().unwrap();
    let i = (0..c.t_ns.len())
        .find(|&i| c.dir[i] == DIR_IN && c.end_seq[i] > c.seq[i])
        .unwrap();
    assert_eq!(c.ip_bytes[i], TCP_IP_HEADER_BYTES + 10 * MSS as u32);
    // TcpInSegs counts skbs (tcp_v4_rcv()): SYN + one aggregate, against SYN + 10.
    let insegs = |o: &SimOutput| o.hosts[1].counters.get(Mib::TcpInSegs);
    assert_eq!((insegs(&off), insegs(&on)), (11, 2));
    // The same bytes arrived.
    assert_eq!(off.flows[0].bytes_received, on.flows[0].bytes_received);
}

#[test]
fn an_aggregate_stops_below_gro_max_size() {
    // A bulk flow at 1 Gbit/s into a receiver whose interrupt comes 1 ms after the ring
    // goes non-empty: a poll takes ~80 frames of the flow once its window is open (the
    // first flight is 45 segments: the SYN-ACK's unscaled 64 KB window). skb_gro_receive()
    // refuses a segment that would bring the IP length to 65536: 52 + 45 x 1448 = 65212 <
    // 65536 <= 65212 + 1448, so an aggregate holds at most 45 segments, and holds 45 when
    // a poll has more of the flow.
    assert!(TCP_IP_HEADER_BYTES as u64 + 45 * MSS < 65_536);
    assert!(TCP_IP_HEADER_BYTES as u64 + 46 * MSS >= 65_536);
    let mut cfg = one_window(10, MS, true);
    cfg.duration_ns = 1_000 * MS;
    let on = run(cfg);
    let c = on.capture.as_ref().unwrap();
    let (segs, _) = received_and_acks(c);
    assert_eq!(segs.iter().max(), Some(&45));
    assert!(segs.iter().filter(|&&n| n == 45).count() > 10);
    for i in 0..c.t_ns.len() {
        assert!(c.ip_bytes[i] < 65_536, "{} bytes", c.ip_bytes[i]);
    }
}

#[test]
fn an_aggregate_does_not_outlive_its_poll() {
    // An aggregate is flushed when its poll completes (the ring is empty), even if more
    // of its flow arrives a moment later: that starts the next aggregate. Two flows from
    // two senders into one receiver, 1 ms apart, each checked alone.
    let mut cfg = dumbbell(
        2,
        CcKind::Cubic,
        1_000_000_000,
        49 * MS,
        QueueConfig::Pfifo {
            limit_packets: 10_000,
        },
        180 * MS,
    );
    cfg.flows[1].start_ns = MS;
    cfg.nodes[2].nic = Some(NicConfig {
        rx_ring: 4096,
        rx_cost_ns: 1_000,
        irq_delay_ns: 80_000,
        ..NicConfig::default()
    });
    cfg.nodes[2].gro = true;
    for f in 0..2 {
        let mut c = cfg.clone();
        c.capture = Some(CaptureConfig {
            flow: f,
            at: CaptureAt::Receiver,
            max_packets: 100_000,
        });
        let out = run(c);
        let (segs, _) = received_and_acks(out.capture.as_ref().unwrap());
        // IW10 of 12.1 us frames (frame k arrives at k x 12.1 us) straddles the 80 us
        // interrupt delay: at 80 us the ring holds frames 0..6; the poll, 1 us each,
        // runs to 87 us, and frame 7 (84.8 us) joins it before the ring empties; it
        // completes at 88 us and flushes. Frames 8 and 9 (96.9, 109.0 us) make the next
        // poll, at 96.9 + 80 us.
        assert!(6 * FRAME_NS < 80_000 && 7 * FRAME_NS > 80_000 && 7 * FRAME_NS < 87_000);
        assert!(8 * FRAME_NS > 88_000);
        assert_eq!(segs, vec![8, 2], "flow {f}");
    }
}

#[test]
fn without_a_poll_longer_than_an_instant_nothing_merges() {
    // No NIC model: the receiver processes packets as they arrive, one softirq run per
    // instant. A rated bottleneck spaces every segment, so GRO merges nothing and the run
    // is the one without GRO, counter for counter.
    let base = dumbbell(
        1,
        CcKind::Cubic,
        100_000_000,
        10 * MS,
        QueueConfig::Pfifo { limit_packets: 100 },
        2_000 * MS,
    );
    let mut gro = base.clone();
    gro.nodes[1].gro = true;
    let (a, b) = (run(base), run(gro));
    assert_eq!(format!("{:?}", a.flows), format!("{:?}", b.flows));
    assert_eq!(
        format!("{:?}", a.hosts[1].counters),
        format!("{:?}", b.hosts[1].counters)
    );
}

#[test]
fn gro_keeps_every_packet_accounted_for_under_loss() {
    // Random loss on the bottleneck: holes flush aggregates (a segment after a gap starts
    // a new one), retransmissions fill them; every data packet sent is received, dropped
    // or in flight at the end (the invariant, checked by `run`), and the receiver gets
    // the same stream with and without GRO.
    let mut cfg = one_window(10, 200_000, true);
    cfg.duration_ns = 3_000 * MS;
    cfg.capture = None;
    cfg.links[bottleneck(1)].loss = LossConfig::Bernoulli { p: 0.01 };
    let on = run(cfg.clone());
    cfg.nodes[1].gro = false;
    let off = run(cfg);
    assert!(on.flows[0].retrans_segs > 0);
    assert!(on.flows[0].bytes_received > 100_000);
    // Fewer ACKs with GRO: the sender's InSegs (one per ACK) per byte acknowledged.
    let per_mb = |o: &SimOutput| {
        o.hosts[0].counters.get(Mib::TcpInSegs) as f64 / (o.flows[0].bytes_acked as f64 / 1e6)
    };
    assert!(
        per_mb(&on) < per_mb(&off),
        "{} {}",
        per_mb(&on),
        per_mb(&off)
    );
}

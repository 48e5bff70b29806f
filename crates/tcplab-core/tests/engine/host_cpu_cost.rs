//! The CPU cost of packets (`host::cpu`, `NodeConfig::cpu_cost`): a host's stack work is
//! serialized on its one CPU account, so a host whose cost exceeds its share is capped at
//! `share / cost` skbs (sender) or packets (receiver) per second; at 100 % share a host
//! far from CPU-bound is unchanged but for the microseconds its packets take; a TSO skb
//! costs one skb.
use crate::common;

use common::*;
use tcplab_core::config::*;
use tcplab_core::sim::{SimOutput, Simulator};

const MS: u64 = 1_000_000;
const US: u64 = 1_000;
const MSS: f64 = 1448.0;

fn run(cfg: SimConfig) -> SimOutput {
    let out = Simulator::new(cfg).unwrap().run();
    assert!(out.invariant.ok, "{}", out.invariant.message);
    out
}

fn cost(tx_skb_ns: u64, rx_packet_ns: u64, rx_skb_ns: u64) -> Option<CpuCostConfig> {
    Some(CpuCostConfig {
        tx_skb_ns,
        rx_packet_ns,
        rx_skb_ns,
        tx_gso_frame_ns: 0,
    })
}

fn share(share: f64, period_ns: u64) -> Option<CpuConfig> {
    Some(CpuConfig {
        period_ns,
        share,
        phase_ns: 0,
    })
}

/// Goodput of flow 0 over the run, bit/s.
fn goodput_bps(out: &SimOutput, duration_ns: u64) -> f64 {
    out.flows[0].bytes_received as f64 * 8.0 / (duration_ns as f64 / 1e9)
}

/// One CUBIC bulk flow a -> b, 1 Gbit/s, 1 ms each way, a pfifo that never drops.
fn bulk(duration_ns: u64) -> SimConfig {
    let mut cfg = two_hosts(1_000_000_000, MS, 100_000, duration_ns);
    cfg.flows.push(FlowConfig::new("f", 0, 1, CcKind::Cubic));
    cfg
}

#[test]
fn at_a_full_share_a_host_far_from_cpu_bound_moves_only_by_its_microseconds() {
    // 100 Mbit/s: a frame every 121 us, each costing the default ~1 us at each end, so
    // the CPU is idle > 98 % of the time and no work ever waits for other work. The model
    // then adds per round trip: data tx_skb (1) + receive (0.5 + 0.5) + ACK tx_skb (1) +
    // ACK receive (0.5 + 0.5) = 4 us; goodput is the bottleneck's either way. The
    // bottleneck's queue holds 1000 packets, which BBR's STARTUP does not overflow: with
    // 100 it lost ~800 packets, and the costs' microseconds, moving which, moved its mean
    // RTT by more than the model adds (-5 us). CUBIC's slow start overflows either; its
    // few losses come at the same packets.
    let d = 3_000_000_000;
    for cc in [CcKind::Cubic, CcKind::Bbr] {
        let base = dumbbell(
            1,
            cc,
            100_000_000,
            10 * MS,
            QueueConfig::Pfifo {
                limit_packets: 1000,
            },
            d,
        );
        let mut costed = base.clone();
        for n in [0, 1] {
            costed.nodes[n].cpu = share(1.0, 10 * MS);
            costed.nodes[n].cpu_cost = cost(US, US / 2, US / 2);
        }
        let a = run(base);
        let b = run(costed);
        if cc == CcKind::Bbr {
            assert_eq!(a.flows[0].retrans_segs, 0, "BBR overflowed the queue");
        }
        let (ga, gb) = (goodput_bps(&a, d), goodput_bps(&b, d));
        assert!((gb - ga).abs() / ga < 0.01, "{cc:?}: {ga} vs {gb}");
        // RTT: the mean moves by at most the model's 4 us (the bottleneck's queue, which
        // makes the rest, is the same), and by something (the costs are there).
        let (ea, eb) = (a.flows[0].rtt.mean_us, b.flows[0].rtt.mean_us);
        assert!(
            eb > ea && eb <= ea + 4.5,
            "{cc:?}: mean RTT {ea} -> {eb} us"
        );
        // The minimum (kept at the histogram's resolution) does not fall.
        assert!(b.flows[0].rtt.min_us >= a.flows[0].rtt.min_us, "{cc:?}");
        // The stack used ~1-2 % of each host's CPU: far from bound.
        for h in [0, 1] {
            let c = b.hosts[h].cpu.as_ref().unwrap();
            let busy = c.busy_share.unwrap();
            assert!(busy > 0.0 && busy < 0.05, "{cc:?} host {h}: {c:?}");
        }
        // No host with a cost reports a busy time it does not have.
        assert!(a.hosts[0].cpu.is_none());
    }
}

#[test]
fn a_cost_of_zero_changes_nothing() {
    // A `cost` of zeros at a full share: every packet goes through the account at no
    // cost; the run is byte-identical to one without (same events order, same times).
    let d = 1_000_000_000;
    let base = bulk(d);
    let mut zero = base.clone();
    zero.nodes[0].cpu_cost = cost(0, 0, 0);
    zero.nodes[1].cpu_cost = cost(0, 0, 0);
    let (a, b) = (run(base), run(zero));
    assert_eq!(format!("{:?}", a.flows), format!("{:?}", b.flows));
    assert_eq!(format!("{:?}", a.links), format!("{:?}", b.links));
}

#[test]
fn a_sender_whose_skb_cost_exceeds_its_share_is_capped_at_share_over_cost() {
    // 50 % of a 1 ms period, 20 us per skb sent, receive free: at most
    // 0.5 / 20 us = 25,000 skbs/s of one MSS each (tso off) = 289.6 Mbit/s, far below the
    // 1 Gbit/s link. Upper bound: every skb that left took 20 us of the host's on time.
    // Lower bound: once cwnd covers the capped rate's BDP (a few ms of slow start) TSQ
    // keeps at least two skbs queued on the CPU, so it is never idle while on; the
    // run's first RTTs and the CPU work still queued at the end cost < 5 %.
    let d = 2_000_000_000;
    let mut cfg = bulk(d);
    cfg.nodes[0].cpu = share(0.5, MS);
    cfg.nodes[0].cpu_cost = cost(20 * US, 0, 0);
    let out = run(cfg);
    let cap = 0.5 / 20e-6 * MSS * 8.0;
    let g = goodput_bps(&out, d);
    assert!(g <= cap * 1.001, "{g} above the cap {cap}");
    assert!(g >= cap * 0.95, "{g} well below the cap {cap}");
    // Skbs that left the host: no more than its on time allows.
    let c = out.hosts[0].cpu.as_ref().unwrap();
    assert!(out.links[0].stats.sent_packets <= c.on_ns / (20 * US) + 1);
    assert!(c.busy_share.unwrap() > 0.95, "{c:?}");
}

#[test]
fn sockets_of_one_capped_host_share_its_cpu_in_turn() {
    // Two flows from the capped sender of the test above: together still at most
    // 0.5 / 20 us skbs/s; the CPU serves waiting sockets in turn, so each gets about half
    // (within 10 %: the two start together and see the same path).
    let d = 2_000_000_000;
    let mut cfg = bulk(d);
    cfg.flows.push(FlowConfig::new("g", 0, 1, CcKind::Cubic));
    cfg.nodes[0].cpu = share(0.5, MS);
    cfg.nodes[0].cpu_cost = cost(20 * US, 0, 0);
    let out = run(cfg);
    let cap = 0.5 / 20e-6 * MSS * 8.0;
    let g: Vec<f64> = out
        .flows
        .iter()
        .map(|f| f.bytes_received as f64 * 8.0 / (d as f64 / 1e9))
        .collect();
    let total = g[0] + g[1];
    assert!(
        total <= cap * 1.001 && total >= cap * 0.95,
        "{g:?} vs {cap}"
    );
    assert!((g[0] - g[1]).abs() < 0.1 * total, "{g:?}");
}

#[test]
fn a_receiver_whose_packet_cost_exceeds_its_cpu_drains_at_its_rate_and_its_ring_drops() {
    // The receiver: a NIC ring of 256, 20 us per packet (rx_packet 15 + rx_skb 5: GRO off,
    // each packet is TCP's skb), its ACKs free: it drains at most 1 / 20 us = 50,000
    // packets/s = 579 Mbit/s of payload from a 1 Gbit/s link, so the ring overflows and
    // drops (CUBIC's losses). Upper bound: each delivered packet took 20 us of CPU.
    // Lower bound: the ring (256 packets = 5.1 ms of drain) exceeds the path's BDP at the
    // drain rate (2 ms: 100 packets), so after each loss CUBIC's cwnd (0.7 x) still keeps
    // the ring from running dry: > 85 % of the cap.
    let d = 3_000_000_000;
    let mut cfg = bulk(d);
    cfg.nodes[1].nic = Some(NicConfig {
        rx_ring: 256,
        ..NicConfig::default()
    });
    cfg.nodes[1].cpu_cost = cost(0, 15 * US, 5 * US);
    let out = run(cfg);
    let cap = 1.0 / 20e-6 * MSS * 8.0;
    let g = goodput_bps(&out, d);
    assert!(g <= cap * 1.001, "{g} above the cap {cap}");
    assert!(g >= cap * 0.85, "{g} well below the cap {cap}");
    let nic = out.hosts[1].nic.as_ref().unwrap();
    let drops = nic.ethtool.iter().find(|(n, _)| n == "rx_drops").unwrap().1;
    assert!(drops > 0, "{:?}", nic.ethtool);
    assert!(out.invariant.data.dropped.nic > 0);
    assert!(out.flows[0].retrans_segs > 0);
    // The same receiver with the old NIC model's 1 us per packet keeps up with the link.
    let mut fast = bulk(d);
    fast.nodes[1].nic = Some(NicConfig {
        rx_ring: 256,
        ..NicConfig::default()
    });
    assert!(goodput_bps(&run(fast), d) > 0.9e9);
}

#[test]
fn a_tso_skb_costs_one_skb_so_a_tso_sender_gets_more_from_the_same_cpu() {
    // The capped sender above with tso on: each skb carries at least tcp_min_tso_segs = 2
    // segments whenever the cwnd allows (tcp_tso_autosize()), so the same CPU sends at
    // least twice the segments; the 1 Gbit/s link is not reached at 2 x 289.6 Mbit/s.
    let d = 2_000_000_000;
    let mut off = bulk(d);
    off.nodes[0].cpu = share(0.5, MS);
    off.nodes[0].cpu_cost = cost(20 * US, 0, 0);
    let mut on = off.clone();
    on.nodes[0].gso_skbs = true;
    on.nodes[0].tso = true;
    let (a, b) = (run(off), run(on));
    let (ga, gb) = (goodput_bps(&a, d), goodput_bps(&b, d));
    assert!(gb > 1.8 * ga, "tso off {ga}, on {gb}");
    // Still capped by skbs: no more skbs left the host than its on time allows.
    let c = b.hosts[0].cpu.as_ref().unwrap();
    assert!(b.links[0].stats.sent_skbs <= c.on_ns / (20 * US) + 1);
}

#[test]
fn with_gro_a_receiver_pays_its_skb_cost_per_aggregate() {
    // rx_packet 2 us, rx_skb 18 us: GRO off, 20 us per packet caps the receiver at
    // 579 Mbit/s as above; with GRO on (and TSO at the sender, so packets arrive back to
    // back and coalesce), aggregates of several packets share one rx_skb and it drains
    // far faster.
    let d = 2_000_000_000;
    let mut off = bulk(d);
    off.nodes[0].gso_skbs = true;
    off.nodes[0].tso = true;
    off.nodes[1].nic = Some(NicConfig {
        rx_ring: 256,
        ..NicConfig::default()
    });
    off.nodes[1].cpu_cost = cost(0, 2 * US, 18 * US);
    let mut on = off.clone();
    on.nodes[1].gro = true;
    let (a, b) = (run(off), run(on));
    let cap = 1.0 / 20e-6 * MSS * 8.0;
    let (ga, gb) = (goodput_bps(&a, d), goodput_bps(&b, d));
    assert!(ga <= cap * 1.001, "gro off {ga} above {cap}");
    assert!(gb > 1.3 * ga, "gro off {ga}, on {gb}");
}

#[test]
fn bad_costs_are_refused_by_field() {
    let mut cfg = bulk(1_000_000_000);
    cfg.nodes[0].cpu_cost = cost(2_000_000_000, 0, 0);
    let e = Simulator::new(cfg).err().unwrap();
    assert_eq!(
        e,
        "nodes.0.cpu_cost.tx_skb_ns: 2000000000 is outside [0, 1000000000] ns"
    );
}

#[test]
fn software_gso_pays_per_frame_so_tso_off_is_capped_like_one_mss_skbs() {
    // The same 50 % CPU and 20 us per skb as above, and 20 us per frame software GSO cuts:
    // with tso off every frame costs 20 us again, so GSO skbs get no more from the CPU
    // than one-MSS skbs (the cap share / cost x MSS); with tso on the NIC cuts for free.
    let d = 2_000_000_000;
    let mut sw = bulk(d);
    sw.nodes[0].cpu = share(0.5, MS);
    sw.nodes[0].cpu_cost = Some(CpuCostConfig {
        tx_gso_frame_ns: 20 * US,
        ..cost(20 * US, 0, 0).unwrap()
    });
    sw.nodes[0].gso_skbs = true;
    let mut hw = sw.clone();
    hw.nodes[0].tso = true;
    let (a, b) = (run(sw), run(hw));
    let cap = 0.5 / 20e-6 * MSS * 8.0;
    let (ga, gb) = (goodput_bps(&a, d), goodput_bps(&b, d));
    assert!(
        ga <= cap * 1.01,
        "software GSO {ga} above the per-frame cap {cap}"
    );
    assert!(gb > 1.8 * ga, "software GSO {ga}, TSO {gb}");
}

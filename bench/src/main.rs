//! `cargo run --release -p tcplab-bench [-- --quick]`
//!
//! Runs fixed scenarios and prints, for each: wall seconds, simulated packets (packets
//! serialized on any link, data and ACKs) per wall second, simulated seconds per wall
//! second, and the goodput the run computed (so a fast but wrong run is visible). The
//! machine and the figures go into BENCHMARKS.md by hand; benchmarks are not tests.

use std::time::Instant;

use tcplab_core::config::*;
use tcplab_core::sim::Simulator;

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

/// n senders -> r1 -> r2 -> receiver; bottleneck r1->r2 at `rate_bps` with a 1-BDP pfifo;
/// access links 10x faster. RTT = 2 * (delay_ns + 2 us).
fn dumbbell(n: usize, cc: CcKind, rate_bps: u64, rtt_ns: u64, duration_ns: u64) -> SimConfig {
    let mut nodes: Vec<NodeConfig> = (0..n).map(|i| NodeConfig { name: format!("s{i}"), kind: NodeKind::Host }).collect();
    nodes.push(NodeConfig { name: "dst".into(), kind: NodeKind::Host });
    nodes.push(NodeConfig { name: "r1".into(), kind: NodeKind::Router });
    nodes.push(NodeConfig { name: "r2".into(), kind: NodeKind::Router });
    let (dst, r1, r2) = (n as u32, n as u32 + 1, n as u32 + 2);
    let bdp_pkts = ((rate_bps as f64 / 8.0 * rtt_ns as f64 / 1e9) / 1514.0).round() as u32;
    let big = QueueConfig::Pfifo { limit_packets: 100_000 };
    let mut links = Vec::new();
    let mut add = |a: u32, b: u32, rate: u64, delay: u64, queue: QueueConfig| {
        links.push(LinkConfig { name: format!("{a}->{b}"), from: a, to: b, rate_bps: rate, delay_ns: delay, overhead_bytes: 14, loss: LossConfig::None, reorder: None, queue });
    };
    for i in 0..n as u32 {
        add(i, r1, rate_bps * 10, 1_000, big.clone());
        add(r1, i, rate_bps * 10, 1_000, big.clone());
    }
    let d = rtt_ns / 2 - 2_000;
    add(r1, r2, rate_bps, d, QueueConfig::Pfifo { limit_packets: bdp_pkts.max(1) });
    add(r2, r1, rate_bps, d, big.clone());
    add(r2, dst, rate_bps * 10, 1_000, big.clone());
    add(dst, r2, rate_bps * 10, 1_000, big);
    let flows = (0..n as u32)
        .map(|i| FlowConfig { name: format!("f{i}"), src: i, dst, cc, start_ns: 0, stop_ns: None, app: AppConfig::Bulk, tcp: TcpConfig::default(), cc_params: CcParams::default() })
        .collect();
    SimConfig { seed: 1, duration_ns, sample_interval_ns: 100 * MS, nodes, links, flows }
}

struct Row {
    name: String,
    wall_s: f64,
    packets: u64,
    sim_s: f64,
    goodput_mbps: f64,
}

fn bench(name: &str, cfg: SimConfig) -> Row {
    let sim_s = cfg.duration_ns as f64 / 1e9;
    let t0 = Instant::now();
    let out = Simulator::new(cfg).expect("valid").run();
    let wall_s = t0.elapsed().as_secs_f64();
    assert!(out.invariant.ok, "{}", out.invariant.message);
    let goodput: f64 = out.flows.iter().map(|f| f.bytes_received as f64 * 8.0 / sim_s).sum();
    Row { name: name.to_string(), wall_s, packets: out.packets, sim_s, goodput_mbps: goodput / 1e6 }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let dur = if quick { 3 * S } else { 30 * S };
    let gbit = 1_000_000_000;
    let cases = [
        ("1 CUBIC flow, 1 Gbit/s, 20 ms RTT", dumbbell(1, CcKind::Cubic, gbit, 20 * MS, dur)),
        ("1 BBR flow, 1 Gbit/s, 20 ms RTT", dumbbell(1, CcKind::Bbr, gbit, 20 * MS, dur)),
        ("10 CUBIC flows, 1 Gbit/s, 20 ms RTT", dumbbell(10, CcKind::Cubic, gbit, 20 * MS, dur)),
        ("10 BBR flows, 1 Gbit/s, 20 ms RTT", dumbbell(10, CcKind::Bbr, gbit, 20 * MS, dur)),
    ];
    println!("{:<38} {:>8} {:>12} {:>14} {:>12} {:>12}", "scenario", "wall s", "packets", "Mpkt/wall s", "sim s/wall s", "goodput Mb/s");
    for (name, cfg) in cases {
        let r = bench(name, cfg);
        println!(
            "{:<38} {:>8.2} {:>12} {:>14.2} {:>12.1} {:>12.1}",
            r.name,
            r.wall_s,
            r.packets,
            r.packets as f64 / r.wall_s / 1e6,
            r.sim_s / r.wall_s,
            r.goodput_mbps
        );
    }
}

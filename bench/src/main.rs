//! The tcplab speed benchmark.
//!
//! ```text
//! cargo run --release -p tcplab-bench                  # all scenarios, a table
//! cargo run --release -p tcplab-bench -- --quick       # shortened durations
//! cargo run --release -p tcplab-bench -- --repeat 5    # best of 5 runs each (default 3)
//! cargo run --release -p tcplab-bench -- --scenario 2a --json   # one scenario, one JSON line
//! ```
//!
//! Scenarios (issue 3; "n flows" means n senders -> r1 -> r2 -> one receiver, bottleneck
//! r1 -> r2 with a 1-BDP pfifo, access links 10x faster):
//! - `1`: one CUBIC flow, 100 Mbit/s, 20 ms RTT, 60 s;
//! - `2a`/`2b`: one CUBIC / one BBR flow, 1 Gbit/s, 20 ms RTT, 20 s;
//! - `3a`/`3b`: ten CUBIC / ten BBR flows, 1 Gbit/s, 20 ms RTT, 20 s;
//! - `4`: 1000 CUBIC flows of 100 KB each, starting evenly over 10 s, 1 Gbit/s, 20 ms RTT;
//! - `5`: four CUBIC flows, 100 Mbit/s, 0.5 ms RTT, 0.1% random loss, 60 simulated minutes
//!   (the shape of the cluster in seed 000);
//! - `nic`: scenario 3a with the receiver behind an ENA-like NIC model (issue 8);
//! - `cpu`: scenario 2b with the sender at 35 % of 10 ms CPU slices (issue 8).
//!
//! For each: wall seconds (fastest of `--repeat` runs; the runs are deterministic, so the
//! minimum filters out interference), packets the hosts sent per wall second (each packet
//! once: the headline), link transmissions per wall second, events per wall second,
//! simulated seconds per wall second, peak resident memory of the process (`VmHWM`; run one
//! scenario per process with `--scenario` to attribute it), and the goodput the run
//! computed. Benchmarks are not tests; figures go into BENCHMARKS.md with the machine.

use std::time::Instant;

use tcplab_core::config::*;
use tcplab_core::sim::Simulator;

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;
const MBIT: u64 = 1_000_000;
const GBIT: u64 = 1_000_000_000;

/// n senders -> r1 -> r2 -> receiver.
fn dumbbell(n: usize, cc: CcKind, rate_bps: u64, rtt_ns: u64, duration_ns: u64) -> SimConfig {
    let mut nodes: Vec<NodeConfig> = (0..n).map(|i| NodeConfig::new(format!("s{i}"), NodeKind::Host)).collect();
    nodes.push(NodeConfig::new("dst", NodeKind::Host));
    nodes.push(NodeConfig::new("r1", NodeKind::Router));
    nodes.push(NodeConfig::new("r2", NodeKind::Router));
    let (dst, r1, r2) = (n as u32, n as u32 + 1, n as u32 + 2);
    let bdp_pkts = ((rate_bps as f64 / 8.0 * rtt_ns as f64 / 1e9) / 1514.0).round() as u32;
    let big = QueueConfig::Pfifo { limit_packets: 100_000 };
    let mut links = Vec::new();
    let mut add = |a: u32, b: u32, rate: u64, delay: u64, queue: QueueConfig| {
        links.push(LinkConfig { name: format!("{a}->{b}"), from: a, to: b, rate_bps: rate, delay_ns: delay, overhead_bytes: 14, loss: LossConfig::None, loss_filter: LossFilter::default(), reorder: None, queue, edt: Vec::new(), orphan: false });
    };
    // Access links: 10x the bottleneck, 1 us each way; the bottleneck carries the rest of
    // the RTT.
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
    SimConfig { seed: 1, duration_ns, sample_interval_ns: 100 * MS, nodes, links, flows, max_memory_bytes: DEFAULT_MAX_MEMORY_BYTES }
}

/// Scenario 4: `n` short flows of `bytes` each from one sender host, starting evenly over
/// `spread_ns`.
fn short_flows(n: usize, bytes: u64, spread_ns: u64, duration_ns: u64) -> SimConfig {
    let mut cfg = dumbbell(1, CcKind::Cubic, GBIT, 20 * MS, duration_ns);
    let template = cfg.flows[0].clone();
    cfg.flows = (0..n)
        .map(|i| FlowConfig {
            name: format!("f{i}"),
            start_ns: spread_ns * i as u64 / n as u64,
            app: AppConfig::BulkBytes { bytes },
            ..template.clone()
        })
        .collect();
    cfg
}

/// Scenario 5: seed 000's cluster shape.
fn cluster(duration_ns: u64) -> SimConfig {
    // 0.5 ms RTT: the bottleneck's one-way delay is 250 us - 2 us; random loss on the
    // data direction of the bottleneck (link 2n = r1 -> r2).
    let mut cfg = dumbbell(4, CcKind::Cubic, 100 * MBIT, 500_000, duration_ns);
    cfg.links[2 * 4].loss = LossConfig::Bernoulli { p: 0.001 };
    cfg.sample_interval_ns = S;
    cfg
}

/// Scenario `nic`: scenario 3a with the receiver behind an ENA-like NIC (1024 descriptors,
/// NAPI at 1 us per packet): every packet to the receiver takes the NIC model's path.
fn nic_fan_in(duration_ns: u64) -> SimConfig {
    let mut cfg = dumbbell(10, CcKind::Cubic, GBIT, 20 * MS, duration_ns);
    cfg.nodes[10].nic = Some(NicConfig::default());
    cfg
}

/// Scenario `cpu`: scenario 2b with the sender in a VM that has 35 % of every 10 ms.
fn vm_sender(duration_ns: u64) -> SimConfig {
    let mut cfg = dumbbell(1, CcKind::Bbr, GBIT, 20 * MS, duration_ns);
    cfg.nodes[0].cpu = Some(CpuConfig { period_ns: 10 * MS, share: 0.35, phase_ns: 0 });
    cfg
}

fn scenarios(quick: bool) -> Vec<(&'static str, &'static str, SimConfig)> {
    let q = |full: u64, short: u64| if quick { short } else { full };
    vec![
        ("1", "1 CUBIC flow, 100 Mbit/s, 20 ms, 60 s", dumbbell(1, CcKind::Cubic, 100 * MBIT, 20 * MS, q(60, 6) * S)),
        ("2a", "1 CUBIC flow, 1 Gbit/s, 20 ms, 20 s", dumbbell(1, CcKind::Cubic, GBIT, 20 * MS, q(20, 3) * S)),
        ("2b", "1 BBR flow, 1 Gbit/s, 20 ms, 20 s", dumbbell(1, CcKind::Bbr, GBIT, 20 * MS, q(20, 3) * S)),
        ("3a", "10 CUBIC flows, 1 Gbit/s, 20 ms, 20 s", dumbbell(10, CcKind::Cubic, GBIT, 20 * MS, q(20, 3) * S)),
        ("3b", "10 BBR flows, 1 Gbit/s, 20 ms, 20 s", dumbbell(10, CcKind::Bbr, GBIT, 20 * MS, q(20, 3) * S)),
        ("4", "1000 x 100 KB CUBIC flows over 10 s, 1 Gbit/s", short_flows(if quick { 100 } else { 1000 }, 100_000, q(10, 1) * S, q(12, 3) * S)),
        ("5", "4 CUBIC, 100 Mbit/s, 0.5 ms, 0.1% loss, 60 min", cluster(q(3600, 60) * S)),
        ("nic", "10 CUBIC -> NIC ring 1024 (ENA), 1 Gbit/s, 20 ms, 20 s", nic_fan_in(q(20, 3) * S)),
        ("cpu", "1 BBR flow, sender at 35 % of 10 ms, 1 Gbit/s, 20 ms", vm_sender(q(20, 3) * S)),
    ]
}

struct Row {
    wall_s: f64,
    host_packets: u64,
    link_packets: u64,
    events: u64,
    sim_s: f64,
    goodput_bps: f64,
    flows_done: usize,
}

fn bench(cfg: &SimConfig, repeat: usize) -> Row {
    let sim_s = cfg.duration_ns as f64 / 1e9;
    let mut wall_s = f64::INFINITY;
    let mut last = None;
    for _ in 0..repeat.max(1) {
        let t0 = Instant::now();
        let out = Simulator::new(cfg.clone()).expect("valid").run();
        wall_s = wall_s.min(t0.elapsed().as_secs_f64());
        last = Some(out);
    }
    let out = last.unwrap();
    assert!(out.invariant.ok, "{}", out.invariant.message);
    let goodput_bps: f64 = out.flows.iter().map(|f| f.bytes_received as f64 * 8.0).sum::<f64>() / sim_s;
    let flows_done = out.flows.iter().filter(|f| f.end_ns < cfg.duration_ns).count();
    Row { wall_s, host_packets: out.host_packets, link_packets: out.packets, events: out.events, sim_s, goodput_bps, flows_done }
}

/// Peak resident set size of this process, bytes (Linux `VmHWM`).
fn peak_rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).map(|l| l.to_string()))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()))
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| args.iter().any(|a| a == name);
    let value = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let quick = flag("--quick");
    let repeat = value("--repeat").map(|v| v.parse::<usize>().expect("--repeat takes a whole number")).unwrap_or(3);
    let only = value("--scenario");
    let json = flag("--json");
    let all = scenarios(quick);
    if let Some(id) = &only {
        if !all.iter().any(|(i, _, _)| i == id) {
            eprintln!("error: --scenario {id}: unknown; expected one of {}", all.iter().map(|s| s.0).collect::<Vec<_>>().join(", "));
            std::process::exit(2);
        }
    }
    if !json {
        println!(
            "{:<3} {:<46} {:>7} {:>11} {:>10} {:>9} {:>8} {:>10} {:>8} {:>11}",
            "id", "scenario", "wall s", "host pkts", "Mpkt/s", "link M/s", "Mev/s", "sim s/wall", "peak MB", "goodput Mb/s"
        );
    }
    for (id, name, cfg) in all {
        if only.as_deref().is_some_and(|o| o != id) {
            continue;
        }
        let r = bench(&cfg, repeat);
        let rss = peak_rss_bytes();
        if json {
            println!(
                "{{\"id\":\"{id}\",\"name\":\"{name}\",\"wall_s\":{:.6},\"host_packets\":{},\"link_packets\":{},\"events\":{},\"sim_s\":{},\"goodput_bps\":{:.1},\"peak_rss_bytes\":{rss},\"flows\":{},\"flows_done\":{}}}",
                r.wall_s, r.host_packets, r.link_packets, r.events, r.sim_s, r.goodput_bps, cfg.flows.len(), r.flows_done
            );
        } else {
            println!(
                "{:<3} {:<46} {:>7.2} {:>11} {:>10.2} {:>9.2} {:>8.2} {:>10.1} {:>8.1} {:>11.1}",
                id,
                name,
                r.wall_s,
                r.host_packets,
                r.host_packets as f64 / r.wall_s / 1e6,
                r.link_packets as f64 / r.wall_s / 1e6,
                r.events as f64 / r.wall_s / 1e6,
                r.sim_s / r.wall_s,
                rss as f64 / 1e6,
                r.goodput_bps / 1e6
            );
        }
    }
}

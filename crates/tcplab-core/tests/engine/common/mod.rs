//! Scenario builders shared by the integration tests.
#![allow(dead_code)]

use tcplab_core::config::*;

pub const MSS: u64 = 1448;

/// A one-way link with the given queue and the defaults of `LinkConfig::new` (Ethernet
/// framing, no loss, no reordering, no shaper).
pub fn link(
    name: &str,
    from: u32,
    to: u32,
    rate_bps: u64,
    delay_ns: u64,
    queue: QueueConfig,
) -> LinkConfig {
    LinkConfig {
        queue,
        ..LinkConfig::new(name, from, to, rate_bps, delay_ns)
    }
}

/// A dumbbell: `n` sender hosts -> router r1 -> router r2 -> one receiver host.
/// Access links are 10x the bottleneck rate with 1 ms delay... set to zero-cost here:
/// the bottleneck r1->r2 has `rate_bps` and `one_way_delay_ns`, access links are 100x
/// faster with 1 us delay so the path RTT is ~2 x one_way_delay.
pub fn dumbbell(
    n: usize,
    cc: CcKind,
    rate_bps: u64,
    one_way_delay_ns: u64,
    queue: QueueConfig,
    duration_ns: u64,
) -> SimConfig {
    let mut nodes = Vec::new();
    for i in 0..n {
        nodes.push(NodeConfig::new(format!("s{i}"), NodeKind::Host));
    }
    nodes.push(NodeConfig::new("dst", NodeKind::Host));
    nodes.push(NodeConfig::new("r1", NodeKind::Router));
    nodes.push(NodeConfig::new("r2", NodeKind::Router));
    let dst = n as u32;
    let r1 = n as u32 + 1;
    let r2 = n as u32 + 2;
    let fast = rate_bps * 100;
    let mut links = Vec::new();
    let mut add = |a: u32, b: u32, rate: u64, delay: u64, q: QueueConfig, loss: LossConfig| {
        links.push(LinkConfig {
            loss,
            ..link(&format!("{a}->{b}"), a, b, rate, delay, q)
        });
    };
    let big = QueueConfig::Pfifo {
        limit_packets: 100_000,
    };
    for i in 0..n as u32 {
        add(i, r1, fast, 1_000, big.clone(), LossConfig::None);
        add(r1, i, fast, 1_000, big.clone(), LossConfig::None);
    }
    add(r1, r2, rate_bps, one_way_delay_ns, queue, LossConfig::None);
    add(
        r2,
        r1,
        rate_bps,
        one_way_delay_ns,
        big.clone(),
        LossConfig::None,
    );
    add(r2, dst, fast, 1_000, big.clone(), LossConfig::None);
    add(dst, r2, fast, 1_000, big, LossConfig::None);
    let flows = (0..n as u32)
        .map(|i| FlowConfig::new(format!("f{i}"), i, dst, cc))
        .collect();
    SimConfig {
        seed: 1,
        duration_ns,
        sample_interval_ns: 100_000_000,
        nodes,
        links,
        flows,
        apps: Vec::new(),
        max_memory_bytes: DEFAULT_MAX_MEMORY_BYTES,
        capture: None,
    }
}

/// Index of the bottleneck link r1->r2 in a `dumbbell(n, ...)`.
pub fn bottleneck(n: usize) -> usize {
    2 * n
}

/// BDP in packets for a rate and RTT: full-size frames as the link counts them, 1500 B IP
/// plus 14 B Ethernet = 1514 B. Python's `limit: 1bdp` counts the same way
/// (python/tcplab/scenario/topology.py `_queue`, tests/test_routing_bdp.py).
pub fn bdp_packets(rate_bps: u64, rtt_ns: u64) -> u32 {
    ((rate_bps as f64 / 8.0 * rtt_ns as f64 / 1e9) / 1514.0).round() as u32
}

/// A flow driven by an app (`AppConfig::Driven`) from client `src` to server `dst`.
pub fn driven_flow(
    name: &str,
    src: u32,
    dst: u32,
    cc: CcKind,
    data_side: tcplab_core::app::Side,
) -> FlowConfig {
    FlowConfig {
        app: AppConfig::Driven,
        data_side,
        ..FlowConfig::new(name, src, dst, cc)
    }
}

/// Two hosts `a` (0) and `b` (1) joined by one link each way: `rate_bps`, `one_way_delay_ns`,
/// a pfifo of `limit_packets`. No flows.
pub fn two_hosts(
    rate_bps: u64,
    one_way_delay_ns: u64,
    limit_packets: u32,
    duration_ns: u64,
) -> SimConfig {
    let nodes = vec![
        NodeConfig::new("a", NodeKind::Host),
        NodeConfig::new("b", NodeKind::Host),
    ];
    let q = QueueConfig::Pfifo { limit_packets };
    let links = vec![
        link("a->b", 0, 1, rate_bps, one_way_delay_ns, q.clone()),
        link("b->a", 1, 0, rate_bps, one_way_delay_ns, q),
    ];
    SimConfig {
        seed: 1,
        duration_ns,
        sample_interval_ns: 100_000_000,
        nodes,
        links,
        flows: Vec::new(),
        apps: Vec::new(),
        max_memory_bytes: DEFAULT_MAX_MEMORY_BYTES,
        capture: None,
    }
}

//! The tcplab speed benchmark.
//!
//! ```text
//! cargo run --release -p tcplab-bench                  # all scenarios, a table
//! cargo run --release -p tcplab-bench -- --quick       # shortened durations
//! cargo run --release -p tcplab-bench -- --repeat 5    # best of 5 runs each (default 3)
//! cargo run --release -p tcplab-bench -- --scenario 2a --json   # one scenario, one JSON line
//! cargo run --release -p tcplab-bench -- --scenario 6a --verbose # + qdisc, NIC, CPU counters (stderr)
//! cargo run --release -p tcplab-bench -- --offload mss # one-MSS skbs, no GRO (before issue 24)
//! ```
//!
//! Scenarios (issue 3; "n flows" means n senders -> r1 -> r2 -> one receiver, bottleneck
//! r1 -> r2 with a 1-BDP pfifo, access links 10x faster):
//! - `1`: one CUBIC flow, 100 Mbit/s, 20 ms RTT, 60 s;
//! - `2a`/`2b`: one CUBIC / one BBR flow, 1 Gbit/s, 20 ms RTT, 20 s;
//! - `3a`/`3b`: ten CUBIC / ten BBR flows, 1 Gbit/s, 20 ms RTT, 20 s;
//! - `4`: 1000 CUBIC flows of 100 KB each, starting evenly over 10 s, 1 Gbit/s, 20 ms RTT;
//! - `5`: four CUBIC flows, 100 Mbit/s, 0.5 ms RTT, 0.1% random loss, 60 simulated minutes
//!   (the shape of the cluster in seed 000).
//!
//! Issue 8 (the datapath around TCP), each beside the issue-3 scenario it extends:
//! - `3c`: `3a` with a CPU model at 100 % share (10 ms period) on every sender: it must cost
//!   nothing measurable against `3a`, and give the same packets;
//! - `6a`: one CUBIC flow through a tbf (rate 100 Mbit/s, burst 32 KB, limit 1 BDP at the
//!   shaped rate = 250 KB, a bfifo child of `limit` as the kernel installs it) on the
//!   1 Gbit/s bottleneck port, 20 ms RTT, 60 s; `6b`: the same with an fq_codel child;
//! - `7a` / `7b`: ten BBR flows, 1 Gbit/s, 20 ms, 20 s, paced by TCP (`7a` = `3b`) / with fq
//!   on each sender's egress (the sockets leave pacing to fq, SK_PACING_FQ);
//! - `8a` / `8b`: fan-in: 16 senders (10 Gbit/s each) -> one switch -> one receiver
//!   (25 Gbit/s), 10 us per hop; every 20 ms each sender starts a 1 MB CUBIC transfer
//!   (100 rounds, 2.1 s): with an ideal NIC (`8a`) / with an ENA-like receive ring of 1024
//!   descriptors on the receiver (`8b`). A round's 16 MB arrives at 25 Gbit/s, about twice
//!   what NAPI drains at the default 1 us per packet, so the ring fills during a burst; the
//!   mean load (6.4 Gbit/s) lets it drain between rounds;
//! - `9`: ten CUBIC flows, 1 Gbit/s, 20 ms, 20 s, fq_codel (Linux defaults) at the bottleneck;
//! - `nic`: scenario 3a with the receiver behind an ENA-like NIC model;
//! - `cpu`: scenario 2b with the sender at 35 % of 10 ms CPU slices.
//!
//! Issue 9 (applications), story 004 at scale:
//! - `broadcast40k`: 4 app nodes x 10,000 websocket connections (CUBIC, no per-flow time
//!   series) into one nginx host at 25 Gbit/s behind an ENA-like ring (1024 descriptors x 4
//!   queues, 0.6 us per packet); from t = 2 s, every second, a 1 KB message on every
//!   connection within 20 ms; 60 s. The peak (2 Mpps) outruns NAPI (1.7 Mpps): the rings
//!   overflow at the end of each burst, as in the story;
//! - `broadcast10k`: the same with 4 x 2,500 connections (no ring overflow);
//! - `idle40k` / `idle10k`: the connections of `broadcast40k` / `broadcast10k` opened and
//!   left idle, 5 s: (peak RSS of idle40k - idle10k) / 30,000 is the memory of one idle
//!   connection (run each in its own process).
//!
//! For each: wall seconds (fastest of `--repeat` runs; the runs are deterministic, so the
//! minimum filters out interference), packets the hosts sent per wall second (each packet
//! once: the headline), link transmissions per wall second, events per wall second,
//! simulated seconds per wall second, peak resident memory of the process (`VmHWM`; run one
//! scenario per process with `--scenario` to attribute it), and the goodput the run
//! computed. The JSON line also has `cpu_s`: the on-CPU seconds of the run thread (fastest
//! repeat, from `/proc/thread-self/schedstat`), which on a loaded machine is a steadier
//! measure than wall time. Benchmarks are not tests; figures go into BENCHMARKS.md with the
//! machine.

use std::time::Instant;

use tcplab_core::config::*;
use tcplab_core::sim::Simulator;

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;
const MBIT: u64 = 1_000_000;
const GBIT: u64 = 1_000_000_000;

/// n senders -> r1 -> r2 -> receiver.
fn dumbbell(n: usize, cc: CcKind, rate_bps: u64, rtt_ns: u64, duration_ns: u64) -> SimConfig {
    let mut nodes: Vec<NodeConfig> = (0..n)
        .map(|i| NodeConfig::new(format!("s{i}"), NodeKind::Host))
        .collect();
    nodes.push(NodeConfig::new("dst", NodeKind::Host));
    nodes.push(NodeConfig::new("r1", NodeKind::Router));
    nodes.push(NodeConfig::new("r2", NodeKind::Router));
    let (dst, r1, r2) = (n as u32, n as u32 + 1, n as u32 + 2);
    let bdp_pkts = ((rate_bps as f64 / 8.0 * rtt_ns as f64 / 1e9) / 1514.0).round() as u32;
    let big = QueueConfig::Pfifo {
        limit_packets: 100_000,
    };
    let mut links = Vec::new();
    let mut add = |a: u32, b: u32, rate: u64, delay: u64, queue: QueueConfig| {
        links.push(LinkConfig {
            queue,
            ..LinkConfig::new(format!("{a}->{b}"), a, b, rate, delay)
        });
    };
    // Access links: 10x the bottleneck, 1 us each way; the bottleneck carries the rest of
    // the RTT.
    for i in 0..n as u32 {
        add(i, r1, rate_bps * 10, 1_000, big.clone());
        add(r1, i, rate_bps * 10, 1_000, big.clone());
    }
    let d = rtt_ns / 2 - 2_000;
    add(
        r1,
        r2,
        rate_bps,
        d,
        QueueConfig::Pfifo {
            limit_packets: bdp_pkts.max(1),
        },
    );
    add(r2, r1, rate_bps, d, big.clone());
    add(r2, dst, rate_bps * 10, 1_000, big.clone());
    add(dst, r2, rate_bps * 10, 1_000, big);
    let flows = (0..n as u32)
        .map(|i| FlowConfig::new(format!("f{i}"), i, dst, cc))
        .collect();
    SimConfig {
        seed: 1,
        duration_ns,
        sample_interval_ns: 100 * MS,
        nodes,
        links,
        flows,
        apps: Vec::new(),
        max_memory_bytes: DEFAULT_MAX_MEMORY_BYTES,
        capture: None,
    }
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

/// The bottleneck port (r1 -> r2) of a [`dumbbell`] with `n` senders.
fn bottleneck(cfg: &mut SimConfig, n: usize) -> &mut LinkConfig {
    &mut cfg.links[2 * n]
}

/// Scenario 3c: 3a with every sender on a CPU model at 100 % share.
fn cpu_full_share(duration_ns: u64) -> SimConfig {
    let mut cfg = dumbbell(10, CcKind::Cubic, GBIT, 20 * MS, duration_ns);
    for node in cfg.nodes.iter_mut().take(10) {
        node.cpu = Some(CpuConfig {
            period_ns: 10 * MS,
            share: 1.0,
            phase_ns: 0,
        });
    }
    cfg
}

/// Scenarios 6a/6b: one CUBIC flow through a 100 Mbit/s tbf on the 1 Gbit/s bottleneck port.
fn tbf_shaped(child: Option<QueueConfig>, duration_ns: u64) -> SimConfig {
    let mut cfg = dumbbell(1, CcKind::Cubic, GBIT, 20 * MS, duration_ns);
    let rate_bps = 100 * MBIT;
    // `tc qdisc add dev X root tbf rate 100mbit burst 32kb limit 250000`: tc's "kb" is
    // 1024 bytes; the limit is one BDP at the shaped rate (100 Mbit/s x 20 ms).
    bottleneck(&mut cfg, 1).queue = QueueConfig::Tbf(TbfConfig {
        rate_bps,
        burst_bytes: 32 * 1024,
        limit_bytes: rate_bps / 8 * 20 / 1000,
        peakrate_bps: None,
        mtu_bytes: None,
        child: child.map(Box::new),
    });
    cfg
}

/// Scenario 7b: 3b with fq (v6.12 defaults) on each sender's egress link.
fn bbr_fq(duration_ns: u64) -> SimConfig {
    let n = 10;
    let mut cfg = dumbbell(n, CcKind::Bbr, GBIT, 20 * MS, duration_ns);
    // dumbbell() adds sender i's egress link (i -> r1) as link 2i.
    for i in 0..n {
        assert_eq!(cfg.links[2 * i].from, i as u32);
        cfg.links[2 * i].queue = QueueConfig::Fq(FqConfig::default());
    }
    cfg
}

/// Scenario 9: 3a with fq_codel (Linux defaults) at the bottleneck port.
fn fq_codel_bottleneck(duration_ns: u64) -> SimConfig {
    let mut cfg = dumbbell(10, CcKind::Cubic, GBIT, 20 * MS, duration_ns);
    bottleneck(&mut cfg, 10).queue = QueueConfig::FqCodel(FqCodelConfig::default());
    cfg
}

/// Scenarios 8a/8b: fan-in. `n` senders -> sw -> one receiver; every `every_ns` each sender
/// starts a CUBIC transfer of `bytes` (`rounds` rounds); the receiver has `nic`.
fn fan_in(
    n: usize,
    rounds: u64,
    bytes: u64,
    every_ns: u64,
    nic: Option<NicConfig>,
    duration_ns: u64,
) -> SimConfig {
    let mut nodes: Vec<NodeConfig> = (0..n)
        .map(|i| NodeConfig::new(format!("s{i}"), NodeKind::Host))
        .collect();
    let mut rx = NodeConfig::new("dst", NodeKind::Host);
    rx.nic = nic;
    nodes.push(rx);
    nodes.push(NodeConfig::new("sw", NodeKind::Router));
    let (dst, sw) = (n as u32, n as u32 + 1);
    let big = QueueConfig::Pfifo {
        limit_packets: 100_000,
    };
    let mut links = Vec::new();
    let mut add = |a: u32, b: u32, rate: u64, queue: QueueConfig| {
        links.push(LinkConfig {
            queue,
            ..LinkConfig::new(format!("{a}->{b}"), a, b, rate, 10_000)
        });
    };
    for i in 0..n as u32 {
        add(i, sw, 10 * GBIT, big.clone());
        add(sw, i, 10 * GBIT, big.clone());
    }
    // The switch port into the receiver: 25 Gbit/s, 1000 packets of buffer.
    add(
        sw,
        dst,
        25 * GBIT,
        QueueConfig::Pfifo {
            limit_packets: 1000,
        },
    );
    add(dst, sw, 25 * GBIT, big);
    let flows = (0..rounds)
        .flat_map(|r| (0..n as u32).map(move |i| (r, i)))
        .map(|(r, i)| FlowConfig {
            start_ns: every_ns * r,
            app: AppConfig::BulkBytes { bytes },
            ..FlowConfig::new(format!("r{r}s{i}"), i, dst, CcKind::Cubic)
        })
        .collect();
    SimConfig {
        seed: 1,
        duration_ns,
        sample_interval_ns: 100 * MS,
        nodes,
        links,
        flows,
        apps: Vec::new(),
        max_memory_bytes: DEFAULT_MAX_MEMORY_BYTES,
        capture: None,
    }
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
    cfg.nodes[0].cpu = Some(CpuConfig {
        period_ns: 10 * MS,
        share: 0.35,
        phase_ns: 0,
    });
    cfg
}

/// Scenarios `broadcast40k` / `idle*` (issue 9, story 004): websocket broadcasts at scale.
/// `senders` app nodes (25 Gbit/s each) -> one switch -> one nginx receiver at 25 Gbit/s
/// with an ENA-like NIC (1024 descriptors, 4 RSS queues, NAPI at 0.6 us per packet), 10 us
/// per hop. Each sender holds `per_sender` long-lived connections (CUBIC, `sample: false`),
/// opened evenly over the first second. With `bursts`, from t = 2 s on, every second each
/// sender writes a 1 KB message to each of its connections within a 20 ms window (1 KB x
/// 40,000 in 20 ms: 17 Gbit/s at the peak, 0.3 Gbit/s on average); without, the
/// connections stay idle after their handshake (memory per idle connection).
fn broadcast(senders: u32, per_sender: u32, bursts: bool, duration_ns: u64) -> SimConfig {
    use tcplab_core::app::broadcast::BroadcastConfig;
    use tcplab_core::app::{AppInstanceConfig, AppSpec, Side};
    let m = senders;
    let mut nodes: Vec<NodeConfig> = (0..m)
        .map(|i| NodeConfig::new(format!("app{i}"), NodeKind::Host))
        .collect();
    let mut rx = NodeConfig::new("nginx", NodeKind::Host);
    rx.nic = Some(NicConfig {
        rx_ring: 1024,
        rx_queues: 4,
        rx_cost_ns: 600,
        ..NicConfig::default()
    });
    nodes.push(rx);
    nodes.push(NodeConfig::new("sw", NodeKind::Router));
    let (dst, sw) = (m, m + 1);
    let big = QueueConfig::Pfifo {
        limit_packets: 100_000,
    };
    let mut links = Vec::new();
    let mut add = |a: u32, b: u32, queue: QueueConfig| {
        links.push(LinkConfig {
            queue,
            ..LinkConfig::new(format!("{a}->{b}"), a, b, 25 * GBIT, 10_000)
        });
    };
    for i in 0..m {
        add(i, sw, big.clone());
        add(sw, i, big.clone());
    }
    add(
        sw,
        dst,
        QueueConfig::Pfifo {
            limit_packets: 10_000,
        },
    );
    add(dst, sw, big);
    let n = m * per_sender;
    let flows = (0..n)
        .map(|k| FlowConfig {
            start_ns: S * k as u64 / n as u64,
            app: AppConfig::Driven,
            data_side: Side::Client,
            sample: false,
            ..FlowConfig::new(
                format!("bc.{}.{}", k / per_sender, k % per_sender),
                k / per_sender,
                dst,
                CcKind::Cubic,
            )
        })
        .collect();
    let spec = BroadcastConfig {
        senders: m,
        connections_per_sender: per_sender,
        message_bytes: 1_000,
        window_ns: 20 * MS,
        interval_ns: S,
        first_burst_ns: if bursts { 2 * S } else { duration_ns + S },
        bursts: None,
    };
    let apps = vec![AppInstanceConfig {
        name: "bc".into(),
        flows: (0..n).collect(),
        spec: AppSpec::Broadcast(spec),
    }];
    SimConfig {
        seed: 1,
        duration_ns,
        sample_interval_ns: 100 * MS,
        nodes,
        links,
        flows,
        apps,
        max_memory_bytes: DEFAULT_MAX_MEMORY_BYTES,
        capture: None,
    }
}

/// The scenarios, each built only when it runs (broadcast40k's 40,000 flow configurations
/// would otherwise cost every run, and its peak RSS would count every other scenario).
type Build = Box<dyn Fn() -> SimConfig>;

fn scenarios(quick: bool) -> Vec<(&'static str, &'static str, Build)> {
    let q = move |full: u64, short: u64| if quick { short } else { full };
    vec![
        (
            "1",
            "1 CUBIC flow, 100 Mbit/s, 20 ms, 60 s",
            Box::new(move || dumbbell(1, CcKind::Cubic, 100 * MBIT, 20 * MS, q(60, 6) * S)),
        ),
        (
            "2a",
            "1 CUBIC flow, 1 Gbit/s, 20 ms, 20 s",
            Box::new(move || dumbbell(1, CcKind::Cubic, GBIT, 20 * MS, q(20, 3) * S)),
        ),
        (
            "2b",
            "1 BBR flow, 1 Gbit/s, 20 ms, 20 s",
            Box::new(move || dumbbell(1, CcKind::Bbr, GBIT, 20 * MS, q(20, 3) * S)),
        ),
        (
            "3a",
            "10 CUBIC flows, 1 Gbit/s, 20 ms, 20 s",
            Box::new(move || dumbbell(10, CcKind::Cubic, GBIT, 20 * MS, q(20, 3) * S)),
        ),
        (
            "3b",
            "10 BBR flows, 1 Gbit/s, 20 ms, 20 s",
            Box::new(move || dumbbell(10, CcKind::Bbr, GBIT, 20 * MS, q(20, 3) * S)),
        ),
        (
            "4",
            "1000 x 100 KB CUBIC flows over 10 s, 1 Gbit/s",
            Box::new(move || {
                short_flows(
                    if quick { 100 } else { 1000 },
                    100_000,
                    q(10, 1) * S,
                    q(12, 3) * S,
                )
            }),
        ),
        (
            "5",
            "4 CUBIC, 100 Mbit/s, 0.5 ms, 0.1% loss, 60 min",
            Box::new(move || cluster(q(3600, 60) * S)),
        ),
        (
            "3c",
            "3a + CPU model at 100% share on each sender",
            Box::new(move || cpu_full_share(q(20, 3) * S)),
        ),
        (
            "6a",
            "1 CUBIC, tbf 100 Mbit/s on 1 Gbit/s, 20 ms, 60 s",
            Box::new(move || tbf_shaped(None, q(60, 6) * S)),
        ),
        (
            "6b",
            "6a with an fq_codel child under tbf",
            Box::new(move || {
                tbf_shaped(
                    Some(QueueConfig::FqCodel(FqCodelConfig::default())),
                    q(60, 6) * S,
                )
            }),
        ),
        (
            "7a",
            "10 BBR flows, 1 Gbit/s, 20 ms, 20 s, TCP pacing",
            Box::new(move || dumbbell(10, CcKind::Bbr, GBIT, 20 * MS, q(20, 3) * S)),
        ),
        (
            "7b",
            "10 BBR flows, 1 Gbit/s, 20 ms, 20 s, fq pacing",
            Box::new(move || bbr_fq(q(20, 3) * S)),
        ),
        (
            "8a",
            "fan-in 16->1 at 25G, 100 x 16 x 1 MB, ideal NIC",
            Box::new(move || fan_in(16, q(100, 10), 1_000_000, 20 * MS, None, q(2100, 210) * MS)),
        ),
        (
            "8b",
            "8a with an ENA rx ring of 1024 on the receiver",
            Box::new(move || {
                fan_in(
                    16,
                    q(100, 10),
                    1_000_000,
                    20 * MS,
                    Some(NicConfig {
                        rx_ring: 1024,
                        ..NicConfig::default()
                    }),
                    q(2100, 210) * MS,
                )
            }),
        ),
        (
            "9",
            "10 CUBIC, 1 Gbit/s, 20 ms, 20 s, fq_codel",
            Box::new(move || fq_codel_bottleneck(q(20, 3) * S)),
        ),
        (
            "nic",
            "3a into an ENA NIC ring of 1024 on the receiver",
            Box::new(move || nic_fan_in(q(20, 3) * S)),
        ),
        (
            "cpu",
            "2b with the sender at 35 % of 10 ms CPU slices",
            Box::new(move || vm_sender(q(20, 3) * S)),
        ),
        (
            "broadcast40k",
            "4 x 10k websocket conns -> 25G nginx, 1 KB bursts, 60 s",
            Box::new(move || broadcast(4, q(10_000, 2_500) as u32, true, q(60, 6) * S)),
        ),
        (
            "broadcast10k",
            "broadcast40k with 4 x 2500 connections",
            Box::new(move || broadcast(4, q(2_500, 625) as u32, true, q(60, 6) * S)),
        ),
        (
            "idle40k",
            "broadcast40k's 40k connections, idle after the handshake, 5 s",
            Box::new(move || broadcast(4, q(10_000, 2_500) as u32, false, 5 * S)),
        ),
        (
            "idle10k",
            "idle40k with 4 x 2500 connections",
            Box::new(move || broadcast(4, q(2_500, 625) as u32, false, 5 * S)),
        ),
    ]
}

struct Row {
    wall_s: f64,
    /// On-CPU seconds of the fastest-on-CPU repeat (NaN where /proc has no schedstat): on a
    /// shared machine, wall time includes the time other processes held the core; this
    /// does not (it still includes their cache pollution).
    cpu_s: f64,
    host_packets: u64,
    link_packets: u64,
    events: u64,
    sim_s: f64,
    goodput_bps: f64,
    flows_done: usize,
}

fn bench(cfg: &SimConfig, repeat: usize, verbose: bool) -> Row {
    let sim_s = cfg.duration_ns as f64 / 1e9;
    let mut wall_s = f64::INFINITY;
    let mut cpu_s = f64::INFINITY;
    let mut last = None;
    for _ in 0..repeat.max(1) {
        let c0 = thread_cpu_ns();
        let t0 = Instant::now();
        let out = Simulator::new(cfg.clone()).expect("valid").run();
        wall_s = wall_s.min(t0.elapsed().as_secs_f64());
        cpu_s = match (c0, thread_cpu_ns()) {
            (Some(a), Some(b)) => cpu_s.min(b.saturating_sub(a) as f64 / 1e9),
            _ => f64::NAN,
        };
        last = Some(out);
    }
    let out = last.unwrap();
    assert!(out.invariant.ok, "{}", out.invariant.message);
    if verbose {
        // What each non-FIFO qdisc did (to check that a scenario exercises its model).
        for l in out
            .links
            .iter()
            .filter(|l| !matches!(l.qdisc, "pfifo" | "bfifo") || l.stats.drops > 0)
        {
            let s = &l.stats;
            eprintln!(
                "link {} ({}): sent {} pkt, dropped {}, overlimits {}, max backlog {} pkt, xstats {:?}",
                l.name, l.qdisc, s.sent_packets, s.drops, s.overlimits, s.max_backlog_packets, l.xstats
            );
        }
        for h in &out.hosts {
            if let Some(nic) = &h.nic {
                let nonzero: Vec<_> = nic.ethtool.iter().filter(|(_, v)| *v != 0).collect();
                eprintln!(
                    "host {} nic ({}, rx_ring {}): {:?}",
                    h.name, nic.driver, nic.rx_ring, nonzero
                );
            }
            if let Some(cpu) = &h.cpu {
                eprintln!("host {} cpu: {:?}", h.name, cpu);
            }
        }
        // Each app's scalar summary (the tables stay out).
        for a in &out.apps {
            let scalars: Vec<String> = a
                .summary
                .iter()
                .filter_map(|(k, v)| match v {
                    tcplab_core::app::Value::U64(x) => Some(format!("{k}={x}")),
                    tcplab_core::app::Value::F64(x) => Some(format!("{k}={x:.4}")),
                    tcplab_core::app::Value::Map(m) => Some(
                        m.iter()
                            .filter(|(q, _)| matches!(q.as_str(), "p50" | "p99" | "max"))
                            .filter_map(|(q, p)| p.as_f64().map(|p| format!("{k}.{q}={p:.3}")))
                            .collect::<Vec<_>>()
                            .join(" "),
                    ),
                    _ => None,
                })
                .collect();
            eprintln!("app {} ({}): {}", a.name, a.kind, scalars.join(" "));
        }
    }
    let goodput_bps: f64 = out
        .flows
        .iter()
        .map(|f| f.bytes_received as f64 * 8.0)
        .sum::<f64>()
        / sim_s;
    let flows_done = out
        .flows
        .iter()
        .filter(|f| f.end_ns < cfg.duration_ns)
        .count();
    Row {
        wall_s,
        cpu_s,
        host_packets: out.host_packets,
        link_packets: out.packets,
        events: out.events,
        sim_s,
        goodput_bps,
        flows_done,
    }
}

/// Time this thread has spent on a CPU, ns (Linux `/proc/thread-self/schedstat`, first field:
/// `sum_exec_runtime`); `None` where the file is missing.
fn thread_cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Peak resident set size of this process, bytes (Linux `VmHWM`).
fn peak_rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .map(|l| l.to_string())
        })
        .and_then(|l| {
            l.split_whitespace()
                .nth(1)
                .and_then(|v| v.parse::<u64>().ok())
        })
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| args.iter().any(|a| a == name);
    let value = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let quick = flag("--quick");
    let repeat = value("--repeat")
        .map(|v| v.parse::<usize>().expect("--repeat takes a whole number"))
        .unwrap_or(3);
    let only = value("--scenario");
    let json = flag("--json");
    let verbose = flag("--verbose");
    // `--offload tso,gro` (the default, Linux's and the Python front's): every host's TCP
    // builds GSO skbs (`gso_skbs`), the NIC cuts them (`tso`) and GRO merges at the receiver;
    // `--offload gro` / `none`: software GSO / also no GRO; `--offload mss` is the engine's
    // one-MSS skbs without GRO (no kernel's configuration: for comparing with before issue 24).
    let offload = value("--offload").unwrap_or_else(|| "tso,gro".to_string());
    let (mss, tso, gro) = (
        offload == "mss",
        offload.split(',').any(|o| o == "tso"),
        offload.split(',').any(|o| o == "gro"),
    );
    if let Some(bad) = offload
        .split(',')
        .find(|o| !["tso", "gro", "none", "mss"].contains(o))
    {
        eprintln!(
            "error: --offload {offload}: {bad} is unknown; expected tso,gro (default), tso, gro, none or mss"
        );
        std::process::exit(2);
    }
    let all = scenarios(quick);
    if let Some(id) = &only {
        if !all.iter().any(|(i, _, _)| i == id) {
            eprintln!(
                "error: --scenario {id}: unknown; expected one of {}",
                all.iter().map(|s| s.0).collect::<Vec<_>>().join(", ")
            );
            std::process::exit(2);
        }
    }
    if !json {
        println!(
            "{:<3} {:<48} {:>7} {:>11} {:>10} {:>9} {:>8} {:>10} {:>8} {:>11}",
            "id",
            "scenario",
            "wall s",
            "host pkts",
            "Mpkt/s",
            "link M/s",
            "Mev/s",
            "sim s/wall",
            "peak MB",
            "goodput Mb/s"
        );
    }
    for (id, name, build) in all {
        if only.as_deref().is_some_and(|o| o != id) {
            continue;
        }
        let mut cfg = build();
        for n in cfg.nodes.iter_mut() {
            n.gso_skbs |= !mss;
            n.tso |= tso;
            n.gro |= gro;
        }
        let r = bench(&cfg, repeat, verbose);
        let rss = peak_rss_bytes();
        if json {
            println!(
                "{{\"id\":\"{id}\",\"name\":\"{name}\",\"wall_s\":{:.6},\"cpu_s\":{},\"host_packets\":{},\"link_packets\":{},\"events\":{},\"sim_s\":{},\"goodput_bps\":{:.1},\"peak_rss_bytes\":{rss},\"flows\":{},\"flows_done\":{}}}",
                r.wall_s,
                if r.cpu_s.is_finite() { format!("{:.6}", r.cpu_s) } else { "null".into() },
                r.host_packets, r.link_packets, r.events, r.sim_s, r.goodput_bps, cfg.flows.len(), r.flows_done
            );
        } else {
            println!(
                "{:<3} {:<48} {:>7.2} {:>11} {:>10.2} {:>9.2} {:>8.2} {:>10.1} {:>8.1} {:>11.1}",
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
